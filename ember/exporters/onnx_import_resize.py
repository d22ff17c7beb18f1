"""ONNX import converters: `Resize` and `Upsample`.

Resizing is separable: each resized axis maps every output index to a source coordinate
(by `coordinate_transformation_mode`) and takes a weighted sum of its neighbours (1 for
nearest, 2 for linear, 4 for cubic). The index and weight tables are small and computed
on the host, as onnx's reference implementation does; the data moves with one
`index_select` and a weighted sum per axis, so the op is differentiable and runs on every
device.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import ember
from ember.exporters.onnx_import_context import ImportContext
from ember.exporters.onnx_registry import importer


def _nearest(mode: str) -> Any:
    def coeffs(ratio: float, scale: float) -> np.ndarray:
        if float(ratio).is_integer():
            return np.array([0.0, 1.0])
        lower = {"round_prefer_floor": ratio <= 0.5, "round_prefer_ceil": ratio < 0.5,
                 "floor": True, "ceil": False}[mode]
        return np.array([float(lower), float(not lower)])
    return coeffs


def _linear(ratio: float, scale: float) -> np.ndarray:
    return np.array([1 - ratio, ratio])


def _linear_antialias(ratio: float, scale: float) -> np.ndarray:
    scale = min(scale, 1.0)
    start = int(np.floor(-1 / scale) + 1)
    args = (np.arange(start, start + 2 - 2 * start) - ratio) * scale
    c = np.clip(1 - np.abs(args), 0, 1)
    return c / c.sum()


def _cubic(a: float, antialias: bool) -> Any:
    def kernel(x: float) -> float:
        x = abs(x)
        if x <= 1:
            return (a + 2) * x ** 3 - (a + 3) * x ** 2 + 1
        if x < 2:
            return a * x ** 3 - 5 * a * x ** 2 + 8 * a * x - 4 * a
        return 0.0

    def coeffs(ratio: float, scale: float) -> np.ndarray:
        if not antialias:
            return np.array([kernel(ratio + 1), kernel(ratio), kernel(1 - ratio),
                             kernel(2 - ratio)])
        scale = min(scale, 1.0)
        start = int(np.floor(-2 / scale) + 1)
        c = np.array([kernel(scale * (i - ratio)) for i in range(start, 2 - start)])
        return c / c.sum()
    return coeffs


def _source(mode: str, y: np.ndarray, scale: float, size_in: int, size_out: int,
            roi: tuple[float, float] | None) -> tuple[np.ndarray, np.ndarray | None]:
    """Output indices -> source coordinates, and where tf_crop_and_resize extrapolates."""
    width = scale * size_in
    if mode == "align_corners":
        return (np.zeros(size_out) if width == 1 else y * (size_in - 1) / (width - 1)), None
    if mode == "asymmetric":
        return y / scale, None
    if mode == "tf_crop_and_resize":
        lo, hi = roi
        x = (np.full(size_out, (hi - lo) * (size_in - 1) / 2) if width == 1
             else y * (hi - lo) * (size_in - 1) / (width - 1)) + lo * (size_in - 1)
        return x, (x < 0) | (x > size_in - 1)
    if mode == "pytorch_half_pixel":
        return (np.full(size_out, -0.5) if width == 1 else (y + 0.5) / scale - 0.5), None
    if mode == "half_pixel":
        return (y + 0.5) / scale - 0.5, None
    if mode == "half_pixel_symmetric":
        offset = size_in / 2 * (1 - size_out / width)
        return offset + (y + 0.5) / scale - 0.5, None
    raise ValueError(f"Resize: unknown coordinate_transformation_mode {mode!r}")


def _resize_axis(x: Any, axis: int, scale: float, size_out: int, coeffs_of: Any,
                 mode: str, roi: tuple[float, float] | None, exclude_outside: bool,
                 extrapolation: float) -> Any:
    size_in = x.shape[axis]
    if size_out == 0:
        shape = list(x.shape)
        shape[axis] = 0
        return ember.zeros(shape, dtype=x.dtype, device=x.device)
    src, outside = _source(mode, np.arange(size_out, dtype=np.float64), scale, size_in,
                           size_out, roi)
    base = np.floor(src).astype(np.int64)
    ratios = np.where(src == base, 1.0, src - base)
    coeffs = np.stack([np.asarray(coeffs_of(float(r), scale), np.float64) for r in ratios])
    n = coeffs.shape[1]
    pad = int(np.ceil(n / 2))
    padded = src + pad
    p = np.floor(padded).astype(np.int64)
    frac = padded - p
    if n % 2 == 0:
        offset = np.where(frac == 0, -(n // 2), -(n // 2) + 1)
    else:
        offset = np.where(frac <= 0.5, -((n - 1) // 2), -((n - 1) // 2) + 1)
    idx = (p + offset)[:, None] + np.arange(n)[None, :] - pad
    if exclude_outside:
        coeffs = np.where((idx < 0) | (idx >= size_in), 0.0, coeffs)
        total = coeffs.sum(axis=-1, keepdims=True)
        coeffs = coeffs / np.where(total == 0, 1.0, total)
    idx = np.clip(idx, 0, size_in - 1)
    work = x if x.dtype in (ember.float32, ember.float64) else x.to(ember.float32)
    taken = ember.index_select(work, axis, ember.tensor(idx.reshape(-1).tolist(),
                                                        dtype=ember.int64, device=x.device))
    shape = list(work.shape)
    taken = taken.reshape(shape[:axis] + [size_out, n] + shape[axis + 1:])
    w = ember.tensor(coeffs.tolist(), dtype=work.dtype, device=x.device).reshape(
        [size_out, n] + [1] * (x.ndim - axis - 1))
    out = (taken * w).sum(dim=axis + 1)
    if outside is not None and outside.any():
        mask = ember.tensor(outside.tolist(), device=x.device).reshape(
            [size_out] + [1] * (x.ndim - axis - 1))
        out = ember.where(mask, ember.full((), extrapolation, dtype=out.dtype,
                                           device=x.device), out)
    return out


def _resize(ctx: ImportContext, x: Any, roi: list[float] | None, scales: list[float] | None,
            sizes: list[int] | None, default_mode: str, nearest_default: str) -> Any:
    r = x.ndim
    axes = [a % r for a in (ctx.attr("axes") or range(r))]
    full_scales = [1.0] * r
    full_sizes = list(x.shape)
    if scales:
        for a, s in zip(axes, scales):
            full_scales[a] = float(s)
        full_sizes = [int(s * d) for s, d in zip(full_scales, x.shape)]
    elif sizes:
        for a, s in zip(axes, sizes):
            full_sizes[a] = int(s)
        full_scales = [s / d if d else 1.0 for s, d in zip(full_sizes, x.shape)]
        policy = ctx.attr("keep_aspect_ratio_policy", "stretch")
        if policy != "stretch":
            pick = min if policy == "not_larger" else max
            scale = pick(full_scales[a] for a in axes)
            full_scales = [scale if i in axes else 1.0 for i in range(r)]
            full_sizes = [int(scale * x.shape[i] + 0.5) if i in axes else x.shape[i]
                          for i in range(r)]
    else:
        raise ctx.fail("needs scales or sizes")
    full_roi = None
    if roi:
        full_roi = [0.0] * r + [1.0] * r
        if len(roi) == 2 * r:
            full_roi = list(roi)
        else:
            for i, a in enumerate(axes):
                full_roi[a], full_roi[r + a] = roi[i], roi[len(axes) + i]
    mode = ctx.attr("mode", default_mode)
    antialias = bool(ctx.attr("antialias", 0))
    if mode == "nearest":
        coeffs_of = _nearest(ctx.attr("nearest_mode", nearest_default))
    elif mode == "linear":
        coeffs_of = _linear_antialias if antialias else _linear
    elif mode == "cubic":
        coeffs_of = _cubic(ctx.attr("cubic_coeff_a", -0.75), antialias)
    else:
        raise ctx.fail(f"unknown mode {mode!r}")
    transform = ctx.attr("coordinate_transformation_mode",
                         "half_pixel" if ctx.opset >= 11 else "asymmetric")
    dtype = x.dtype
    y = x
    for a in axes:
        lo_hi = (full_roi[a], full_roi[a + r]) if full_roi else None
        if math.isclose(full_scales[a], 1.0) and full_sizes[a] == y.shape[a] and (
                lo_hi is None or (math.isclose(lo_hi[0], 0) and math.isclose(lo_hi[1], 1))):
            continue
        y = _resize_axis(y, a, full_scales[a], full_sizes[a], coeffs_of, transform, lo_hi,
                         bool(ctx.attr("exclude_outside", 0)),
                         ctx.attr("extrapolation_value", 0.0))
    if y.dtype != dtype:
        y = y.round().clamp(*_limits(dtype)).to(dtype) if not dtype.is_floating_point \
            else y.to(dtype)
    return y


def _limits(dtype: Any) -> tuple[int, int]:
    info = np.iinfo(dtype.name)
    return int(info.min), int(info.max)


@importer("Resize", since=10)
def _resize_10(ctx: ImportContext, x: Any, scales: Any) -> Any:
    return _resize(ctx, x, None, _floats(scales), None, "nearest", "floor")


@importer("Resize", since=11)
def _resize_11(ctx: ImportContext, x: Any, roi: Any = None, scales: Any = None,
               sizes: Any = None) -> Any:
    return _resize(ctx, x, _floats(roi), _floats(scales), ctx.ints(sizes)
                   if sizes is not None and sizes.numel() else None, "nearest",
                   "round_prefer_floor")


@importer("Upsample", since=7)
def _upsample_attr(ctx: ImportContext, x: Any) -> Any:
    return _resize(ctx, x, None, ctx.attr("scales"), None, "nearest", "floor")


@importer("Upsample", since=9)
def _upsample(ctx: ImportContext, x: Any, scales: Any) -> Any:
    return _resize(ctx, x, None, _floats(scales), None, "nearest", "floor")


def _floats(t: Any) -> list[float] | None:
    if t is None or t.numel() == 0:
        return None
    return [float(v) for v in t.reshape(-1).tolist()]
