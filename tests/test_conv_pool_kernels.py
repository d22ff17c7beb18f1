"""The shared conv and max-pool kernels' fast paths (ember/backends/xp/conv.py, pooling.py)
against PyTorch: each column order of the convolution, and the pooling's paths, values
and gradients, through the public API (so the declarations and autograd run them as a
training step does)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.backends.xp.conv import layout

torch = pytest.importorskip("torch")

# (input shape, weight shape, stride, padding, dilation): 1-d, 2-d and 3-d, each column
# layout of conv.py, padding, strides, dilation, a 1x1 kernel
CONVS = [
    ((4, 1, 10, 10), (8, 1, 3, 3), 1, 0, 1),            # per sample (a first layer)
    ((3, 2, 9, 8), (4, 2, 3, 3), 2, 1, 2),              # per sample, strided, dilated
    ((4, 6, 9, 9), (3, 6, 3, 3), 1, 1, 1),              # batch last, padded
    ((16, 16, 12, 12), (8, 16, 3, 3), 1, 1, 1),         # large enough for BLAS transposes
    ((3, 5, 11, 10), (4, 5, 3, 2), (2, 1), (1, 0), (1, 2)),
    ((1, 8, 7, 7), (2, 8, 3, 3), 1, 1, 1),              # one sample: batch first
    ((2, 8, 7, 7), (40, 8, 3, 3), (2, 1), 1, 1),        # batch first
    ((5, 16, 6, 6), (4, 16, 1, 1), 1, 0, 1),            # 1x1
    ((2, 4, 12), (2, 4, 3), 2, 1, 2),
    ((2, 3, 5, 6, 7), (2, 3, 2, 3, 2), (1, 2, 1), (0, 1, 1), (1, 1, 2)),
]


@pytest.mark.parametrize("x_shape, w_shape, stride, padding, dilation", CONVS)
def test_conv_matches_torch_in_each_column_order(x_shape, w_shape, stride, padding,
                                                 dilation):
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(x_shape, np.float32), rng.standard_normal(w_shape, np.float32)
    b = rng.standard_normal(w_shape[0], np.float32)
    conv = {3: "conv1d", 4: "conv2d", 5: "conv3d"}[len(x_shape)]
    ex, ew, eb = (ember.tensor(a, requires_grad=True) for a in (x, w, b))
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    ey = getattr(F, conv)(ex, ew, eb, stride, padding, dilation)
    ty = getattr(torch.nn.functional, conv)(tx, tw, tb, stride, padding, dilation)
    assert ey.is_contiguous() and tuple(ey.shape) == tuple(ty.shape)
    np.testing.assert_allclose(ey.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
    g = rng.standard_normal(tuple(ty.shape), np.float32)
    ey.backward(ember.tensor(g))
    ty.backward(torch.tensor(g))
    for ours, theirs in ((ex, tx), (ew, tw), (eb, tb)):
        assert ours.grad.is_contiguous()
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-4,
                                   atol=1e-4)


@pytest.mark.parametrize("bias, frozen", [(False, None), (True, "weight"), (True, "bias")])
def test_per_sample_conv_without_bias_or_with_a_frozen_operand(bias, frozen):
    """The per-sample layout carries the bias as a row of ones in its columns (and its
    gradient as a column of the weight's): without a bias, or with only one of weight
    and bias requiring grad, every gradient is still torch's."""
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((3, 2, 7, 6), np.float32), rng.standard_normal((5, 2, 3, 3),
                                                                               np.float32)
    b = rng.standard_normal(5, np.float32) if bias else None
    assert layout(x.shape, w.shape) == "per sample"
    ours = [ember.tensor(a, requires_grad=name != frozen) if a is not None else None
            for name, a in (("x", x), ("weight", w), ("bias", b))]
    theirs = [torch.tensor(a, requires_grad=name != frozen) if a is not None else None
              for name, a in (("x", x), ("weight", w), ("bias", b))]
    ey, ty = F.conv2d(*ours, padding=1), torch.nn.functional.conv2d(*theirs, padding=1)
    np.testing.assert_allclose(ey.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
    g = rng.standard_normal(tuple(ty.shape), np.float32)
    ey.backward(ember.tensor(g))
    ty.backward(torch.tensor(g))
    for e, t in zip(ours, theirs):
        if t is None or not t.requires_grad:
            assert e is None or e.grad is None
            continue
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_every_column_layout_is_covered():
    assert {layout(x, w) for x, w, *_ in CONVS} == {"batch last", "per sample", "batch first"}


@pytest.mark.parametrize("shape, kernel, stride", [
    ((2, 3, 8, 8), 2, None),      # tiles covering the input
    ((2, 3, 9, 7), 2, None),      # tiles with a floor-cropped edge
    ((2, 3, 9, 9), 3, None),
    ((2, 2, 7, 7), 3, 2),         # overlapping windows
])
def test_max_pool_gradient_goes_to_the_first_maximum_as_torch(shape, kernel, stride):
    """Ties (relu's zeros: every window of a negative region), and a gradient holding inf
    and NaN, which must reach only the chosen elements (inf * 0 would spread NaN)."""
    rng = np.random.default_rng(1)
    x = np.maximum(rng.standard_normal(shape, np.float32), 0)
    x[0, 0, :2, :4] = 1.5  # a tie of positive values
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ey, ty = F.max_pool2d(ex, kernel, stride), torch.nn.functional.max_pool2d(tx, kernel, stride)
    np.testing.assert_array_equal(ey.detach().numpy(), ty.detach().numpy())
    for special in (None, np.inf, np.nan):
        g = rng.standard_normal(tuple(ty.shape), np.float32)
        if special is not None:
            g[0, 1, 0, 0] = special
        ex.grad = tx.grad = None
        F.max_pool2d(ex, kernel, stride).backward(ember.tensor(g))
        torch.nn.functional.max_pool2d(tx, kernel, stride).backward(torch.tensor(g))
        # (overlapping windows sum two gradients into one element, in either order)
        np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-6, atol=0)
