"""ONNX import converters: DFT and STFT. ONNX holds complex numbers as a trailing axis of
2 (real, imaginary); a transform along an axis is a product with cosine and sine
matrices built on the host, so it runs with ember's matmul on every device and is
differentiable."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import ember
from ember.exporters.onnx_import_context import ImportContext
from ember.exporters.onnx_registry import importer


def _fit(x: Any, n: int) -> Any:
    """`x` cut or zero-padded along its last axis to length n."""
    have = x.shape[-1]
    if have >= n:
        return x.narrow(-1, 0, n)
    pad = ember.zeros(list(x.shape[:-1]) + [n - have], dtype=x.dtype, device=x.device)
    return ember.cat([x, pad], -1)


def _matrices(n_in: int, n_out: int, length: int, dtype: Any, device: Any) -> tuple:
    t = np.arange(n_in).reshape(-1, 1)
    k = np.arange(n_out).reshape(1, -1)
    angle = 2 * math.pi * ((t * k) % length) / length
    cos = ember.tensor(np.cos(angle).tolist(), dtype=dtype, device=device)
    sin = ember.tensor(np.sin(angle).tolist(), dtype=dtype, device=device)
    return cos, sin


def dft(x: Any, axis: int, length: int | None, inverse: bool, onesided: bool) -> Any:
    """ONNX's DFT of `x` (..., 1 or 2) along `axis` (not the trailing complex axis)."""
    real = x.select(-1, 0).movedim(axis, -1)
    imag = x.select(-1, 1).movedim(axis, -1) if x.shape[-1] == 2 else None
    if length is None:
        length = 2 * (real.shape[-1] - 1) if inverse and onesided else real.shape[-1]
    work = ember.float64  # sums of sines: float32 leaves errors of 1e-6 where 0 is due
    real = real.to(work)
    imag = imag.to(work) if imag is not None else None
    if inverse and onesided:  # rebuild the full spectrum from its Hermitian half
        half = real.shape[-1]
        mirror = list(range(length - half, 0, -1))
        mirror = [m for m in mirror if 0 < m < half]
        idx = ember.tensor(mirror, dtype=ember.int64, device=x.device)
        real = ember.cat([real, ember.index_select(real, -1, idx)], -1) if mirror else real
        if imag is not None:
            imag = ember.cat([imag, -ember.index_select(imag, -1, idx)], -1) \
                if mirror else imag
    real = _fit(real, length)
    imag = _fit(imag, length) if imag is not None else None
    n_out = length // 2 + 1 if onesided and not inverse else length
    cos, sin = _matrices(length, n_out, length, work, x.device)
    if inverse:
        out_re = ember.matmul(real, cos) - (ember.matmul(imag, sin) if imag is not None
                                            else 0)
        out_im = ember.matmul(real, sin) + (ember.matmul(imag, cos) if imag is not None
                                            else 0)
        out_re, out_im = out_re / length, out_im / length
        parts = [out_re] if onesided else [out_re, out_im]
    else:
        out_re = ember.matmul(real, cos) + (ember.matmul(imag, sin) if imag is not None
                                            else 0)
        out_im = -ember.matmul(real, sin) + (ember.matmul(imag, cos) if imag is not None
                                             else 0)
        parts = [out_re, out_im]
    y = ember.stack([p.movedim(-1, axis) for p in parts], -1)
    return y.to(x.dtype)


@importer("DFT", since=17)
def _dft_17(ctx: ImportContext, x: Any, length: Any = None) -> Any:
    axis = ctx.attr("axis", 1) % x.ndim
    return dft(x, axis, int(ctx.scalar(length)) if length is not None else None,
               bool(ctx.attr("inverse", 0)), bool(ctx.attr("onesided", 0)))


@importer("DFT", since=20)
def _dft_20(ctx: ImportContext, x: Any, length: Any = None, axis: Any = None) -> Any:
    ax = int(ctx.scalar(axis, -2)) % x.ndim
    return dft(x, ax, int(ctx.scalar(length)) if length is not None and length.numel()
               else None, bool(ctx.attr("inverse", 0)), bool(ctx.attr("onesided", 0)))


@importer("STFT", since=17)
def _stft(ctx: ImportContext, signal: Any, step: Any, window: Any = None,
          frame_length: Any = None) -> Any:
    hop = int(ctx.scalar(step))
    n = int(ctx.scalar(frame_length)) if frame_length is not None else window.shape[0]
    frames = 1 + (signal.shape[1] - n) // hop
    pieces = [signal.narrow(1, f * hop, n) for f in range(frames)]  # (batch, n, c) each
    stacked = ember.stack(pieces, 1)  # (batch, frames, n, c)
    if window is not None:
        stacked = stacked * window.to(stacked.dtype).reshape(1, 1, -1, 1)
    return dft(stacked, 2, n, False, bool(ctx.attr("onesided", 1)))


@importer("MelWeightMatrix", since=17)
def _mel_weight_matrix(ctx: ImportContext, bins: Any, length: Any, rate: Any, low: Any,
                       high: Any) -> Any:
    """The (dft_length // 2 + 1, num_mel_bins) triangular filter bank of onnx's reference:
    a constant of its inputs, built on the host."""
    from ember.exporters.onnx_import_context import ember_dtype

    n_mel, n_fft, sr = int(ctx.scalar(bins)), int(ctx.scalar(length)), ctx.scalar(rate)
    lo, hi = float(ctx.scalar(low)), float(ctx.scalar(high))
    edges = np.arange(n_mel + 2)
    mel_lo = 2595 * np.log1p(lo / 700) / np.log(10)
    mel_hi = 2595 * np.log1p(hi / 700) / np.log(10)
    edges = edges * ((mel_hi - mel_lo) / edges.shape[0]) + mel_lo
    edges = 700 * np.expm1(edges / 2595 * np.log(10))
    edges = (((n_fft + 1) * edges) // sr).astype(int)
    out = np.zeros((n_fft // 2 + 1, n_mel))
    for i in range(n_mel):
        left, center, right = edges[i], edges[i + 1], edges[i + 2]
        if center == left:
            out[center, i] = 1
        else:
            for j in range(left, center + 1):
                out[j, i] = (j - left) / (center - left)
        for j in range(center, right):
            out[j, i] = (right - j) / (right - center)
    dtype = ember_dtype(ctx.attr("output_datatype", 1), "MelWeightMatrix's output_datatype")
    return ctx.tensor(out, dtype=dtype)
