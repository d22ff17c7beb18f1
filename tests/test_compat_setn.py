"""What the programs of set N (NeRF, SIREN, PixelCNN, MAE, CLIP, MoCo/BYOL, DINO, a diffusion
UNet) needed of ember, checked against PyTorch: values, gradients, node names, errors."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _pair(a, requires_grad=False):
    """The same values as an ember tensor and a torch tensor."""
    a = np.asarray(a, dtype=np.float32)
    return (ember.tensor(a, requires_grad=requires_grad),
            torch.tensor(a, requires_grad=requires_grad))


@pytest.mark.parametrize("act", ["relu", "leaky_relu", "hardtanh", "relu6"])
def test_a_piecewise_linear_gradient_stays_connected_to_the_input(act):
    """SIREN's Laplacian of a ReLU net: the gradient taken with create_graph=True reads the
    input (its own gradient zeros), so a second grad gives zeros, not an unused-tensor error."""
    x = [[0.5, -1.0, 2.0], [1.5, -0.2, 7.0]]
    got = []
    for lib, fn, t in ((ember, getattr(F, act), _pair(x, True)[0]),
                       (torch, getattr(TF, act), _pair(x, True)[1])):
        g, = lib.autograd.grad(fn(t * 2.0).sum(), t, create_graph=True)
        gg, = lib.autograd.grad((g * g).sum(), t)
        got.append((g.detach().numpy(), g.grad_fn.name(), gg.numpy()))
    np.testing.assert_allclose(got[0][0], got[1][0])
    np.testing.assert_array_equal(got[0][2], got[1][2])
    if act != "relu":  # (relu's first gradient is then multiplied by 2: MulBackward0)
        assert got[0][1] == got[1][1]


def test_relu_double_backward_names_and_passes_the_output_gradient():
    (e, t) = _pair([3.0, -1.0, 0.0], True)
    ge, = ember.autograd.grad(ember.relu(e), e, ember.ones(3), create_graph=True)
    gt, = torch.autograd.grad(torch.relu(t), t, torch.ones(3), create_graph=True)
    assert ge.grad_fn.name() == gt.grad_fn.name() == "ThresholdBackwardBackward0"
    np.testing.assert_array_equal(ge.detach().numpy(), gt.detach().numpy())
