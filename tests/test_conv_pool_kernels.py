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


# -- the CPU's compiled CNN passes (ember/backends/cpu/numba_conv.py via compiled.py) ----

def _compiled():
    """compiled.py with numba_conv loaded, or a skip where numba is off or missing."""
    pytest.importorskip("ember.backends.cpu.numba_kernels", reason="numba is not installed")
    from ember.backends.cpu import compiled
    if compiled.conv_kernels() is None:
        pytest.skip(f"numba kernels off: {compiled.unavailable}")
    return compiled


@pytest.fixture(params=["serial", "parallel"])
def loops(request, monkeypatch):
    """Runs a test through numba_conv's serial loops, then through its prange twins."""
    compiled = _compiled()
    monkeypatch.setattr(compiled, "_CONV_PARALLEL", 1 << 40 if request.param == "serial" else 0)
    return compiled


def _spy(monkeypatch, compiled):
    """The numba_conv loops called, by name, while the test runs."""
    called = []
    module = compiled.conv_kernels()
    for name in dir(module):
        if name.endswith(("_serial", "_parallel", "_batch_last")):
            original = getattr(module, name)
            monkeypatch.setattr(module, name, lambda *a, _f=original, _n=name: (
                called.append(_n), _f(*a))[1])
    return called


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_relu_and_its_backward_match_torch(loops, dtype, monkeypatch):
    """NaN and -0.0 kept (x < 0 ? 0 : x), and y <= 0 ? 0 : g exact for inf and NaN
    gradients (a product with a mask would give inf * 0 = NaN)."""
    called = _spy(monkeypatch, loops)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 8, 15, 17)).astype(dtype)
    x.flat[:4] = [np.nan, -0.0, 0.0, -np.inf]
    g = rng.standard_normal(x.shape).astype(dtype)
    g.flat[4:8] = [np.inf, -np.inf, np.nan, np.inf]
    x.flat[5] = -1.0  # an infinite gradient at a zeroed element
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ey, ty = F.relu(ex), torch.relu(tx)
    np.testing.assert_array_equal(ey.detach().numpy(), ty.detach().numpy())
    np.testing.assert_array_equal(np.signbit(ey.detach().numpy()),
                                  np.signbit(ty.detach().numpy()))
    ey.backward(ember.tensor(g))
    ty.backward(torch.tensor(g))
    np.testing.assert_array_equal(ex.grad.numpy(), tx.grad.numpy())
    kind = "serial" if loops._CONV_PARALLEL else "parallel"
    assert {f"relu_{kind}", f"relu_backward_{kind}"} <= set(called)


def test_compiled_relu_in_place_and_into_out(loops):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((64, 100)).astype(np.float32)
    want = np.maximum(x, 0)
    e = ember.tensor(x.copy())
    assert e.relu_() is e
    np.testing.assert_array_equal(e.numpy(), want)
    t = ember.tensor(x)[:, ::2]  # a strided view
    np.testing.assert_array_equal(F.relu(t).numpy(), want[:, ::2])
    np.testing.assert_array_equal(F.relu(t.t()).numpy(), want[:, ::2].T)


# (input shape, kernel, stride, padding, dilation, ceil_mode): 2x2 tiles (the CNN's),
# tiles with a floor-cropped row and column, 3x3 tiles, overlapping windows, padding,
# dilation, ceil_mode, and 1-d pools
POOLS = [
    ((4, 16, 26, 26), 2, 2, 0, 1, False),
    ((4, 16, 11, 11), 2, 2, 0, 1, False),
    ((4, 8, 20, 21), 3, 3, 0, 1, False),
    ((4, 8, 17, 15), 3, 2, 0, 1, False),
    ((4, 8, 17, 15), 3, 2, 1, 1, False),
    ((4, 8, 17, 15), (3, 2), (2, 1), (1, 0), (2, 1), False),
    ((4, 8, 17, 15), 2, 2, 1, 1, True),
    ((4, 8, 17, 14), 3, 2, 0, 1, True),
    ((8, 16, 41), 2, 2, 0, 1, False),
    ((8, 16, 40), 3, 2, 1, 2, True),
]


def _pool(n, *args, **kwargs):
    return (F.max_pool1d if n == 1 else F.max_pool2d)(*args, **kwargs), \
        (torch.nn.functional.max_pool1d if n == 1 else torch.nn.functional.max_pool2d)


def _special_windows(x):
    """NaNs at each position of some windows (one, two, all), -inf windows, ties."""
    flat = x.reshape(-1, *x.shape[2:])
    if x.ndim == 4:
        flat[0, 0, :2], flat[0, 1, :2] = np.nan, [np.nan, 1.0]  # NaN in each slot, 2 NaNs
        flat[1, 0:2, 2:4] = -np.inf
        flat[2, 0:2, 0:2], flat[2, 3, 3] = np.nan, np.nan
        flat[3, :4, :4] = 0.5  # ties
        flat[4, 1, 1] = np.nan
    else:
        flat[0, :3] = np.nan
        flat[1, 2:6] = -np.inf
        flat[2, :4] = 0.5
        flat[3, 1] = np.nan


@pytest.mark.parametrize("shape, kernel, stride, padding, dilation, ceil_mode", POOLS)
def test_compiled_max_pool_matches_torch(loops, shape, kernel, stride, padding, dilation,
                                         ceil_mode, monkeypatch):
    """Values, indices and gradients as PyTorch's CPU kernel, whose window picks its first
    maximum or its last NaN; inf and NaN gradients reach only the picked elements."""
    called = _spy(monkeypatch, loops)
    rng = np.random.default_rng(2)
    x = rng.standard_normal(shape).astype(np.float32)
    _special_windows(x)
    n = len(shape) - 2
    args = (kernel, stride, padding, dilation, ceil_mode)
    for return_indices in (False, True):
        ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        (ey, tf) = _pool(n, ex, *args, return_indices=return_indices)
        ty = tf(tx, *args, return_indices=return_indices)
        if return_indices:
            (ey, ei), (ty, ti) = ey, ty
            np.testing.assert_array_equal(ei.numpy(), ti.numpy())
        np.testing.assert_array_equal(ey.detach().numpy(), ty.detach().numpy())
        g = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
        g.reshape(-1)[[5, 9]] = [np.inf, np.nan]
        ey.backward(ember.tensor(g))
        ty.backward(torch.tensor(g))
        np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-6, atol=0)
    assert any(name.startswith("max_pool_backward") or name.startswith("max_pool_2x2_back")
               for name in called) and any(name.startswith("max_pool") for name in called)


def test_compiled_max_pool_float64_and_the_2x2_fast_paths(loops, monkeypatch):
    called = _spy(monkeypatch, loops)
    rng = np.random.default_rng(3)
    for dtype in (np.float32, np.float64):
        x = rng.standard_normal((4, 16, 13, 13)).astype(dtype)
        _special_windows(x)
        ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        ey, ty = F.max_pool2d(ex, 2), torch.nn.functional.max_pool2d(tx, 2)
        np.testing.assert_array_equal(ey.detach().numpy(), ty.detach().numpy())
        g = rng.standard_normal(tuple(ty.shape)).astype(dtype)
        ey.backward(ember.tensor(g))
        ty.backward(torch.tensor(g))
        np.testing.assert_array_equal(ex.grad.numpy(), tx.grad.numpy())
    kind = "serial" if loops._CONV_PARALLEL else "parallel"
    # float32 and float64 values: the 2x2 loop; the backward: 2x2 from the values for
    # float32, the general loop for float64
    assert called.count(f"max_pool_2x2_{kind}") == 2
    assert called.count(f"max_pool_2x2_backward_{kind}") == 1
    assert called.count(f"max_pool_backward_{kind}") == 1


def test_compiled_max_pool_after_an_in_place_change_of_its_output(loops):
    """relu_ on the pooled values: the backward reads recomputed indices, not the
    changed values."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 16, 12, 12)).astype(np.float32)
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ey, ty = F.max_pool2d(ex, 2).relu_(), torch.nn.functional.max_pool2d(tx, 2).relu_()
    g = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
    ey.backward(ember.tensor(g))
    ty.backward(torch.tensor(g))
    np.testing.assert_array_equal(ex.grad.numpy(), tx.grad.numpy())


def test_numpy_keeps_what_the_compiled_kernels_do_not_take(monkeypatch):
    """3-d pools, small arrays and float16 run NumPy's kernels, with torch's results."""
    compiled = _compiled()
    called = _spy(monkeypatch, compiled)
    rng = np.random.default_rng(5)
    x3 = rng.standard_normal((2, 4, 8, 8, 8)).astype(np.float32)
    ey = F.max_pool3d(ember.tensor(x3), 2)
    np.testing.assert_array_equal(
        ey.numpy(), torch.nn.functional.max_pool3d(torch.tensor(x3), 2).numpy())
    small = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    np.testing.assert_array_equal(F.max_pool2d(ember.tensor(small), 2).numpy(),
                                  torch.nn.functional.max_pool2d(torch.tensor(small), 2))
    half = rng.standard_normal((4, 16, 16, 16)).astype(np.float16)
    np.testing.assert_array_equal(F.relu(ember.tensor(half)).numpy(), np.maximum(half, 0))
    assert called == []


_NUMPY_ONLY = """
import numpy as np, ember, ember.nn.functional as F
from ember.backends.cpu import compiled
x = np.load({path!r})
e = ember.tensor(x, requires_grad=True)
y = F.max_pool2d(F.relu(e), 2)
y.backward(ember.ones_like(y))
np.save({out!r}, np.stack([e.grad.numpy(), F.relu(e).detach().numpy()]))
assert compiled.conv_kernels() is None and "EMBER_NUMBA=0" in compiled.unavailable
"""


def test_ember_numba_0_runs_numpy_with_the_same_results(tmp_path):
    """EMBER_NUMBA=0: NumPy's kernels (numba never loads), equal to the compiled ones on
    data without NaN windows."""
    import subprocess
    import sys
    compiled = _compiled()
    rng = np.random.default_rng(6)
    x = rng.standard_normal((4, 16, 26, 26)).astype(np.float32)
    path, out = str(tmp_path / "x.npy"), str(tmp_path / "out.npy")
    np.save(path, x)
    env = {**__import__("os").environ, "EMBER_NUMBA": "0"}
    subprocess.run([sys.executable, "-c", _NUMPY_ONLY.format(path=path, out=out)], env=env,
                   check=True, timeout=120)
    e = ember.tensor(x, requires_grad=True)
    y = F.max_pool2d(F.relu(e), 2)
    y.backward(ember.ones_like(y))
    assert compiled.conv_kernels() is not None
    want = np.load(out)
    np.testing.assert_array_equal(e.grad.numpy(), want[0])
    np.testing.assert_array_equal(F.relu(e).detach().numpy(), want[1])


def test_conv_runs_the_batch_in_chunks_and_keeps_only_its_input():
    """The CPU cuts a convolution's batch into chunks of at most 2 MiB of columns (the
    benchmark CNN's second layer into 5), summing the weight and bias gradients over the
    chunks, and its workspace for backward is the input itself, not the columns."""
    from ember.backends.cpu.kernels import KERNELS
    rng = np.random.default_rng(7)
    x = rng.standard_normal((37, 32, 13, 13)).astype(np.float32)
    w = rng.standard_normal((64, 32, 3, 3)).astype(np.float32) * 0.1
    b = rng.standard_normal(64).astype(np.float32)
    _, workspace = KERNELS["conv"](x, w, b, (1, 1), (1, 1), (1, 1))
    assert workspace is x
    ours = [ember.tensor(a, requires_grad=True) for a in (x, w, b)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    ey, ty = F.conv2d(*ours, padding=1), torch.nn.functional.conv2d(*theirs, padding=1)
    np.testing.assert_allclose(ey.detach().numpy(), ty.detach().numpy(), rtol=1e-4, atol=1e-4)
    g = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
    ey.backward(ember.tensor(g))
    ty.backward(torch.tensor(g))
    for e, t in zip(ours, theirs):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("kernel, stride, padding", [(2, 2, 0), (3, 2, 1), (2, 1, 0)])
def test_numpy_max_pool_picks_a_windows_last_nan_as_torch(kernel, stride, padding):
    """Small tensors run NumPy's kernel, whose argmax finds a window's first NaN; PyTorch's
    CPU kernel takes the last: indices and gradients follow PyTorch."""
    x = np.arange(36, dtype=np.float32).reshape(1, 1, 6, 6)
    x[0, 0, 0, :2] = x[0, 0, 1, 0] = x[0, 0, 3, 3] = x[0, 0, 4, 4] = np.nan
    for return_indices in (False, True):
        ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        ey = F.max_pool2d(ex, kernel, stride, padding, return_indices=return_indices)
        ty = torch.nn.functional.max_pool2d(tx, kernel, stride, padding,
                                            return_indices=return_indices)
        if return_indices:
            (ey, ei), (ty, ti) = ey, ty
            np.testing.assert_array_equal(ei.numpy(), ti.numpy())
        np.testing.assert_array_equal(ey.detach().numpy(), ty.detach().numpy())
        ey.backward(ember.ones_like(ey))
        ty.backward(torch.ones_like(ty))
        np.testing.assert_array_equal(ex.grad.numpy(), tx.grad.numpy())


def _numpy_conv_kernels(budget=None):
    """The shared conv kernels without the CPU's compiled column hooks (NumPy's copies)."""
    from ember.backends.cpu import blas
    from ember.backends.cpu.kernels import _matmul
    from ember.backends.xp import conv
    from ember.backends.xp.lib import ArrayLib, Hooks
    return conv.kernels(ArrayLib(np, Hooks(matmul=_matmul, transpose=blas.transpose,
                                           conv_columns_bytes=budget)))


# (input, weight, stride, padding, dilation) in the batch-last layout (C*K >= 2 * O)
BATCH_LAST = [
    ((6, 8, 13, 13), (4, 8, 3, 3), (1, 1), (0, 0), (1, 1)),
    ((5, 8, 12, 11), (4, 8, 3, 3), (2, 1), (1, 2), (1, 1)),
    ((3, 9, 10, 12), (5, 9, 3, 2), (1, 2), (2, 1), (2, 2)),
    ((1, 16, 9, 9), (4, 16, 3, 3), (1, 1), (1, 1), (1, 1)),   # one sample: batch first
    ((7, 8, 6, 5), (4, 8, 5, 4), (3, 3), (4, 3), (1, 2)),     # padding past the kernel
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("x_shape, w_shape, stride, padding, dilation", BATCH_LAST)
def test_compiled_batch_last_columns_equal_numpys(monkeypatch, dtype, x_shape, w_shape,
                                                  stride, padding, dilation):
    """The compiled im2col/col2im of the batch-last layout (numba_conv) give NumPy's
    columns and input gradient exactly (the same values, the same order of sums), with
    NaN and infinities passed through, in float32 and float64."""
    from ember.backends.cpu.kernels import KERNELS
    compiled = _compiled()
    called = _spy(monkeypatch, compiled)
    monkeypatch.setattr(compiled, "_CONV_FIRST_USE", 1)
    rng = np.random.default_rng(8)
    x = rng.standard_normal(x_shape).astype(dtype)
    x.flat[::37] = np.nan
    x.flat[5::41] = np.inf
    w = rng.standard_normal(w_shape).astype(dtype)
    b = rng.standard_normal(w_shape[0]).astype(dtype)
    numpy_kernels = _numpy_conv_kernels()
    ours, _ = KERNELS["conv"](x, w, b, stride, padding, dilation)
    want, _ = numpy_kernels["conv"](x, w, b, stride, padding, dilation)
    np.testing.assert_array_equal(ours, want)
    g = rng.standard_normal(want.shape).astype(dtype)
    g.flat[::29] = -np.inf
    got = KERNELS["conv_backward"](g, x.shape, w, x, stride, padding, dilation)
    expected = numpy_kernels["conv_backward"](g, x.shape, w, x, stride, padding, dilation)
    for a, e in zip(got, expected):
        np.testing.assert_array_equal(a, e)
    batch_last = layout(x_shape, w_shape) == "batch last"
    assert ({"im2col_batch_last", "col2im_batch_last"} <= set(called)) == batch_last


def test_compiled_batch_last_columns_in_chunks_match_torch(monkeypatch):
    """The benchmark CNN's second layer, in the CPU's 2 MiB chunks, through the compiled
    columns: torch's values and gradients."""
    compiled = _compiled()
    called = _spy(monkeypatch, compiled)
    rng = np.random.default_rng(9)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in
              ((64, 32, 13, 13), (64, 32, 3, 3), (64,))]
    ours = [ember.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    ey, ty = F.conv2d(*ours), torch.nn.functional.conv2d(*theirs)
    np.testing.assert_allclose(ey.detach().numpy(), ty.detach().numpy(), rtol=1e-4, atol=1e-4)
    ey.sum().backward()
    ty.sum().backward()
    for e, t in zip(ours, theirs):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-3, atol=1e-2)
    assert called.count("im2col_batch_last") == 2 * 5  # forward and weight gradient
    assert called.count("col2im_batch_last") == 5
