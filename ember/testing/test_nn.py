"""The neural-network primitives on the device under test: im2col (`F.unfold`), col2im
(`F.fold`) and constant padding (`F.pad`), and the convolution and pooling built on them,
against NumPy loops."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ember
from ember.testing import support as S
from ember.testing.opinfo import nnf


def _windows(x: np.ndarray, k: tuple, d: tuple, p: tuple, s: tuple) -> np.ndarray:
    """(N, C, H, W) -> (N, C * kh * kw, L): PyTorch's unfold, by loops."""
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    oh = (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    out = np.zeros((n, c, k[0], k[1], oh, ow), dtype=x.dtype)
    for i in range(k[0]):
        for j in range(k[1]):
            out[:, :, i, j] = xp[:, :, i * d[0]: i * d[0] + s[0] * (oh - 1) + 1: s[0],
                                 j * d[1]: j * d[1] + s[1] * (ow - 1) + 1: s[1]]
    return out.reshape(n, c * k[0] * k[1], oh * ow)


@st.composite
def _geometry(draw: st.DrawFn) -> tuple:
    k = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    d = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    p = (draw(st.integers(0, 1)), draw(st.integers(0, 1)))
    s = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    h = draw(st.integers(max(1, d[0] * (k[0] - 1) + 1 - 2 * p[0]), 6))
    w = draw(st.integers(max(1, d[1] * (k[1] - 1) + 1 - 2 * p[1]), 6))
    return k, d, p, s, (draw(st.integers(1, 2)), draw(st.integers(1, 3)), h, w)


@S.prop()
@given(data=st.data())
def test_unfold_fold(device: ember.device, data: st.DataObject) -> None:
    k, d, p, s, shape = data.draw(_geometry(), label="kernel, dilation, padding, stride, x")
    dt = data.draw(st.sampled_from([ember.float32, ember.float64]), label="dtype")
    arr = data.draw(S.arrays(dt, shape), label="x")
    x = S.on(device, arr, dt)
    F = nnf(ember)
    cols = F.unfold(x, k, dilation=d, padding=p, stride=s)
    ref = _windows(arr, k, d, p, s)
    S.assert_matches(cols, ref, device, dtype=dt, what="unfold (im2col)")
    # fold is unfold's adjoint: <unfold(x), y> == <x, fold(y)>
    y = data.draw(S.arrays(dt, ref.shape), label="y")
    folded = F.fold(S.on(device, y, dt), shape[2:], k, dilation=d, padding=p, stride=s)
    assert folded.shape == shape and folded.device == device
    lhs = float((ref.astype(np.float64) * y).sum())
    rhs = float((arr.astype(np.float64) * S.host(folded).astype(np.float64)).sum())
    np.testing.assert_allclose(lhs, rhs, rtol=1e-4, atol=1e-4, err_msg="fold (col2im)")


@S.prop()
@given(data=st.data())
def test_constant_pad(device: ember.device, data: st.DataObject) -> None:
    dt = data.draw(S.dtypes(device, S.ALL_DTYPES), label="dtype")
    arr = data.draw(S.arrays(dt, data.draw(S.shapes(min_dims=1))), label="x")
    n = data.draw(st.integers(1, arr.ndim), label="padded dims")
    pad = []
    for i in range(n):
        size = arr.shape[arr.ndim - 1 - i]
        pad += [data.draw(st.integers(-(size // 2), 2)), data.draw(st.integers(-(size // 2),
                                                                               2))]
    value = data.draw(st.sampled_from([0, 1, 3]), label="value")
    x = S.on(device, arr, dt)
    out = nnf(ember).pad(x, tuple(pad), value=value)
    # NumPy: crop the negative amounts, pad the positive ones
    key = [slice(None)] * arr.ndim
    widths = [(0, 0)] * arr.ndim
    for i in range(n):
        dim = arr.ndim - 1 - i
        a, b = pad[2 * i], pad[2 * i + 1]
        key[dim] = slice(-a if a < 0 else 0, arr.shape[dim] + b if b < 0 else None)
        widths[dim] = (max(a, 0), max(b, 0))
    ref = np.pad(arr[tuple(key)], widths, constant_values=np.asarray(value).astype(arr.dtype))
    S.assert_matches(out, ref, device, dtype=dt, what=f"pad({pad}, value={value})")


def test_conv2d_and_pooling_values(device: ember.device) -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 6, 5))
    w = rng.standard_normal((4, 3, 3, 2))
    b = rng.standard_normal(4)
    F = nnf(ember)
    out = F.conv2d(S.on(device, x), S.on(device, w), S.on(device, b), stride=(2, 1),
                   padding=(1, 0), dilation=(1, 2))
    cols = _windows(x, (3, 2), (1, 2), (1, 0), (2, 1))  # (N, C*K, L)
    ref = np.einsum("ok,nkl->nol", w.reshape(4, -1), cols) + b[None, :, None]
    S.assert_matches(out, ref.reshape(out.shape), device, what="conv2d")
    pooled = F.max_pool2d(S.on(device, x), 2)
    ref_max = x[:, :, :6, :4].reshape(2, 3, 3, 2, 2, 2).max(axis=(3, 5))
    S.assert_matches(pooled, ref_max, device, what="max_pool2d")
    avg = F.avg_pool2d(S.on(device, x), (3, 1))
    ref_avg = x[:, :, :6].reshape(2, 3, 2, 3, 5).mean(axis=3)
    S.assert_matches(avg, ref_avg, device, what="avg_pool2d")
    ln = F.layer_norm(S.on(device, x), (5,))
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    S.assert_matches(ln, (x - mu) / np.sqrt(var + 1e-5), device, what="layer_norm",
                     rtol=1e-9, atol=1e-9)


def test_1d_convolution_and_pooling_values(device: ember.device) -> None:
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 3, 7))
    w, b = rng.standard_normal((4, 3, 3)), rng.standard_normal(4)
    xe = S.on(device, x)
    F = nnf(ember)
    # the 1-D ops are the 2-D ones on a height-1 image
    cols = _windows(x[:, :, None], (1, 3), (1, 1), (0, 1), (1, 2))  # (N, C*K, L)
    ref = np.einsum("ok,nkl->nol", w.reshape(4, -1), cols) + b[None, :, None]
    S.assert_matches(F.conv1d(xe, S.on(device, w), S.on(device, b), stride=2, padding=1), ref,
                     device, what="conv1d")
    windows = _windows(x[:, :, None], (1, 3), (1, 1), (0, 0), (1, 2)).reshape(2, 3, 3, -1)
    S.assert_matches(F.max_pool1d(xe, 3, 2), windows.max(axis=2), device, what="max_pool1d")
    S.assert_matches(F.avg_pool1d(xe, 2), x[..., :6].reshape(2, 3, 3, 2).mean(-1), device,
                     what="avg_pool1d")
    # adaptive windows: [floor(i * L / O), ceil((i + 1) * L / O)), overlapping when uneven
    ref_ad = np.stack([x[..., (i * 7) // 3: -(-((i + 1) * 7) // 3)].mean(-1)
                       for i in range(3)], -1)
    S.assert_matches(ember.adaptive_avg_pool1d(xe, 3), ref_ad, device,
                     what="adaptive_avg_pool1d")
    img = rng.standard_normal((1, 2, 5, 4))
    rows = [(i * 5) // 2 for i in range(3)], [-(-((i + 1) * 5) // 2) for i in range(2)]
    ref_2d = np.array([[[img[0, c, rows[0][i]:rows[1][i], 2 * j:2 * j + 2].mean()
                         for j in range(2)] for i in range(2)] for c in range(2)])[None]
    S.assert_matches(F.adaptive_avg_pool2d(S.on(device, img), (2, 2)), ref_2d, device,
                     what="adaptive_avg_pool2d")


def test_max_pool_indices(device: ember.device) -> None:
    # distinct values: the argmax of each window is unambiguous
    x = np.random.default_rng(9).permutation(2 * 3 * 5 * 4).reshape(2, 3, 5, 4) / 10.0
    values, indices = nnf(ember).max_pool2d(S.on(device, x), 2, 1, return_indices=True)
    windows = _windows(x, (2, 2), (1, 1), (0, 0), (1, 1)).reshape(2, 3, 4, 4, 3)
    S.assert_matches(values, windows.max(axis=2), device, what="values")
    # PyTorch's indices: flat positions in each (H, W) plane
    ref = np.zeros((2, 3, 4, 3), np.int64)
    for i in range(4):
        for j in range(3):
            patch = x[:, :, i:i + 2, j:j + 2].reshape(2, 3, 4)
            k = patch.argmax(-1)
            ref[:, :, i, j] = (i + k // 2) * 4 + (j + k % 2)
    S.assert_matches(indices, ref, device, dtype=ember.int64, what="indices")
    v1, i1 = ember.max_pool1d(S.on(device, x[0, :, 0]), 2, return_indices=True)  # unbatched
    ref1 = x[0, :, 0, :].reshape(3, 2, 2).argmax(-1) + np.array([0, 2])
    S.assert_matches(v1, x[0, :, 0, :].reshape(3, 2, 2).max(-1), device, what="1-D values")
    S.assert_matches(i1, ref1, device, dtype=ember.int64, what="1-D indices")


def test_conv_transpose2d_is_the_adjoint_of_conv2d(device: ember.device) -> None:
    rng = np.random.default_rng(10)
    x, w = rng.standard_normal((2, 3, 8, 6)), rng.standard_normal((4, 3, 3, 2))
    F = nnf(ember)
    y = F.conv2d(S.on(device, x), S.on(device, w), stride=2, padding=1)
    g = rng.standard_normal(tuple(y.shape))
    back = F.conv_transpose2d(S.on(device, g), S.on(device, w), stride=2, padding=1,
                              output_padding=(1, 0))  # the row stride 2 skipped
    assert tuple(back.shape) == x.shape
    # <conv2d(x), g> == <x, conv_transpose2d(g)>
    np.testing.assert_allclose(float((S.host(y) * g).sum()), float((x * S.host(back)).sum()),
                               rtol=1e-9)


def test_linear_and_cross_entropy_values(device: ember.device) -> None:
    rng = np.random.default_rng(11)
    x, w, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((5, 4)), rng.standard_normal(5)
    F = nnf(ember)
    S.assert_matches(F.linear(S.on(device, x), S.on(device, w), S.on(device, b)),
                     x @ w.T + b, device, what="linear")
    S.assert_matches(F.linear(S.on(device, x), S.on(device, w[0])), x @ w[0], device,
                     what="linear, 1-D weight")
    logits, target = rng.standard_normal((5, 4)), np.array([3, -100, 0, 3, 1])
    shifted = logits - logits.max(1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
    valid = target != -100
    losses = np.where(valid, -logp[np.arange(5), np.where(valid, target, 0)], 0.0)
    for reduction, ref in (("none", losses), ("sum", losses.sum()),
                           ("mean", losses.sum() / valid.sum())):
        out = F.cross_entropy(S.on(device, logits), S.on(device, target), reduction=reduction)
        S.assert_matches(out, ref, device, what=f"cross_entropy({reduction})")


def _sigmoid(v: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-v))


def test_lstm_cell_ops(device: ember.device) -> None:
    """The LSTM step ops nn.LSTM runs per time step (gate order i, f, g, o)."""
    from ember.core.opdef import OPS

    rng = np.random.default_rng(12)
    xg, hg, cx = rng.standard_normal((3, 8)), rng.standard_normal((3, 8)), rng.standard_normal(
        (3, 2))
    hy, cy, workspace = OPS["_fused_lstm_cell"].public(S.on(device, xg), S.on(device, hg),
                                                       S.on(device, cx))
    i, f, g, o = np.split(xg + hg, 4, axis=1)
    i, f, g, o = _sigmoid(i), _sigmoid(f), np.tanh(g), _sigmoid(o)
    ref_cy = f * cx + i * g
    S.assert_matches(cy, ref_cy, device, what="cy")
    S.assert_matches(hy, o * np.tanh(ref_cy), device, what="hy")
    # the activated gates: what the step's backward (decomposed, or a kernel) reads
    S.assert_matches(workspace, np.concatenate([i, f, g, o], 1), device, what="workspace")
    grad_hy, grad_cy = rng.standard_normal((3, 2)), rng.standard_normal((3, 2))
    backward = OPS["_fused_lstm_cell_backward"].public
    tc = np.tanh(ref_cy)
    for gcy in (grad_cy, None):
        gc = grad_hy * o * (1 - tc * tc) + (0.0 if gcy is None else gcy)
        ref_gates = np.concatenate([gc * g * i * (1 - i), gc * cx * f * (1 - f),
                                    gc * i * (1 - g * g), grad_hy * tc * o * (1 - o)], 1)
        d_gates, d_cx = backward(S.on(device, grad_hy),
                                 None if gcy is None else S.on(device, gcy), S.on(device, cx),
                                 cy, workspace)
        what = "grad_cy " + ("None" if gcy is None else "given")
        S.assert_matches(d_gates, ref_gates, device, what=f"gate gradients, {what}")
        S.assert_matches(d_cx, gc * f, device, what=f"cx gradient, {what}")


# -- what this module checks (ember.testing.test_coverage reads it) ---------------------

# (`convolution` and `max_pool_with_indices` are conv2d's and max pooling's fused paths:
# they run where the backend has the `conv` / `max_pool` kernels)
COVERS = {"im2col", "col2im", "constant_pad", "constant_pad_nd", "conv1d", "conv2d",
          "_fused_convolution", "conv_transpose2d", "max_pool1d", "max_pool2d",
          "max_pool_with_indices", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d",
          "adaptive_avg_pool2d", "layer_norm", "linear", "cross_entropy", "_fused_lstm_cell",
          "_fused_lstm_cell_backward"}
"""The declared ops whose values this module's tests check."""


def test_stft_is_the_dft_of_each_windowed_frame(device: ember.device) -> None:
    rng = np.random.default_rng(0)
    sig = rng.standard_normal(40)
    window = np.hanning(10)
    with pytest.warns(UserWarning, match="return_complex=False is deprecated"):
        out = ember.stft(S.on(device, sig, ember.float64), 16, hop_length=5, win_length=10,
                         window=S.on(device, window, ember.float64), return_complex=False)
    padded = np.pad(sig, 8, mode="reflect")
    full = np.pad(window, 3)
    frames = np.stack([padded[i:i + 16] * full for i in range(0, len(padded) - 15, 5)])
    spectrum = np.fft.rfft(frames, axis=1).T  # (freq, frames)
    S.assert_matches(out, np.stack([spectrum.real, spectrum.imag], -1), device,
                     dtype=ember.float64)
    with pytest.raises(RuntimeError, match="requires the return_complex parameter"):
        ember.stft(S.on(device, sig, ember.float64), 16)
    if S.holds(device, ember.complex128):  # the complex form: the same spectrum
        out = ember.stft(S.on(device, sig, ember.float64), 16, hop_length=5, win_length=10,
                         window=S.on(device, window, ember.float64), return_complex=True)
        S.assert_matches(out, spectrum, device, dtype=ember.complex128)
    else:  # a backend without complex dtypes refuses the complex form, naming the dtype
        with pytest.raises(RuntimeError, match="complex128"):
            ember.stft(S.on(device, sig, ember.float64), 16, return_complex=True)


def test_istft_and_native_norm_refuse_what_pytorch_refuses(device: ember.device) -> None:
    x = S.on(device, np.ones((9, 4, 2), dtype=np.float32))
    with pytest.raises(RuntimeError, match="istft requires a complex-valued input tensor"):
        ember.istft(x, 16)
    with pytest.raises(NotImplementedError, match="native_norm"):
        ember.native_norm(x)


COVERS |= {"stft", "istft", "native_norm"}

