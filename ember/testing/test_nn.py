"""The neural-network primitives on the device under test: im2col (`F.unfold`), col2im
(`F.fold`) and constant padding (`F.pad`), and the convolution and pooling built on them,
against NumPy loops."""

from __future__ import annotations

import numpy as np
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
    dt = data.draw(st.sampled_from(S.ALL_DTYPES), label="dtype")
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
