"""ONNX import converters: linear quantization (QuantizeLinear, DequantizeLinear,
DynamicQuantizeLinear) for the integer types ember has (int8, uint8, int16, int32).

Scales apply per tensor, per axis (a 1-D scale along `axis`) or per block (`block_size`
elements of `axis` share one scale); rounding is half to even and results saturate, as
ONNX specifies.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import ember
from ember.exporters.onnx_import_cast import NARROW_FLOATS, NARROW_INTS, round_to_float
from ember.exporters.onnx_import_context import ImportContext, ember_dtype, held_numpy
from ember.exporters.onnx_import_nn import _conv as float_conv
from ember.exporters.onnx_registry import importer


def _along(ctx: ImportContext, x: Any, param: Any) -> Any:
    """`param` (scale or zero point) shaped to broadcast against `x`."""
    if param.ndim == 0 or param.numel() == 1 and x.ndim and param.ndim <= 1 \
            and not ctx.attr("block_size", 0):
        return param.reshape(())
    axis = ctx.attr("axis", 1) % x.ndim
    block = ctx.attr("block_size", 0)
    if block:  # repeat each entry block times along axis
        expanded = param.unsqueeze(axis + 1)
        shape = list(expanded.shape)
        shape[axis + 1] = block
        merged = list(param.shape)
        merged[axis] *= block
        return ember.broadcast_to(expanded, shape).reshape(merged).narrow(
            axis, 0, x.shape[axis])
    shape = [1] * x.ndim
    shape[axis] = -1
    return param.reshape(shape)


def _limits(dtype: Any) -> tuple[int, int]:
    info = np.iinfo(dtype.name)
    return int(info.min), int(info.max)


@importer("QuantizeLinear", since=10)
def _quantize(ctx: ImportContext, x: Any, scale: Any, zero: Any = None) -> Any:
    # the target: the zero point's declared type (it may be one ember holds in a wider
    # type, e.g. int4 in int8), else output_dtype, else uint8
    target = ctx.input_type(2) if zero is not None else None
    if target is None:
        target = ctx.attr("output_dtype") or _UINT8
    work = ember.float32 if x.dtype != ember.float64 else ember.float64
    q = x.to(work) / _along(ctx, x, scale).to(work)
    if target in NARROW_FLOATS:  # float8/float4: rounded to the format, saturating
        if zero is not None:
            q = q + _along(ctx, x, zero).to(work)
        return round_to_float(q, target, bool(ctx.attr("saturate", 1)))
    q = ember.round(q)
    if zero is not None:
        q = q + _along(ctx, x, zero).to(work)
    return ember.clamp(q, *_int_limits(target)).to(
        ember_dtype(target, "QuantizeLinear's output type"))


_UINT8 = 2  # TensorProto.UINT8, QuantizeLinear's default


def _int_limits(elem_type: int) -> tuple[int, int]:
    """The range of an ONNX integer type (4- and 2-bit ones included)."""
    if elem_type in NARROW_INTS:
        low, span = NARROW_INTS[elem_type]
        return low, low + span - 1
    held = held_numpy(elem_type)
    info = np.iinfo(held if held is not None else
                    np.dtype(ember_dtype(elem_type, "an integer type").name))
    return int(info.min), int(info.max)


@importer("DequantizeLinear", since=10)
def _dequantize(ctx: ImportContext, x: Any, scale: Any, zero: Any = None) -> Any:
    work = x.to(ember.float32)
    if zero is not None:
        work = work - _along(ctx, x, zero).to(ember.float32)
    out_dtype = ember_dtype(ctx.attr("output_dtype"), "DequantizeLinear's output_dtype") \
        if ctx.attr("output_dtype") else scale.dtype
    return (work * _along(ctx, x, scale).to(ember.float32)).to(out_dtype)


@importer("DynamicQuantizeLinear", since=11)
def _dynamic_quantize(ctx: ImportContext, x: Any) -> Any:
    lo = ember.minimum(x.amin(), ember.zeros((), dtype=x.dtype, device=x.device))
    hi = ember.maximum(x.amax(), ember.zeros((), dtype=x.dtype, device=x.device))
    scale = (hi - lo) / 255
    safe = ember.where(scale == 0, ember.ones_like(scale), scale)
    zero = ember.clamp(ember.round(-lo / safe), 0, 255)
    y = ember.clamp(ember.round(x / safe) + zero, 0, 255).to(ember.uint8)
    return y, scale, zero.to(ember.uint8)


def _centered(x: Any, zero: Any, per_row: bool = False) -> Any:
    """`x - zero` in float64 (exact for 8-bit values); a 1-D zero point of a weight is
    per output channel."""
    x = x.to(ember.float64)
    if zero is None:
        return x
    zero = zero.to(ember.float64)
    if per_row and zero.ndim == 1 and zero.numel() == x.shape[0] and zero.numel() > 1:
        zero = zero.reshape([-1] + [1] * (x.ndim - 1))
    return x - zero


def _requantize(ctx: ImportContext, acc: Any, scale: Any, zero: Any, like: Any) -> Any:
    y = acc * scale
    dtype = zero.dtype if zero is not None else like.dtype
    if zero is not None:
        y = y + zero.to(ember.float64)
    lo, hi = _limits(dtype)
    return ember.clamp(ember.round(y), lo, hi).to(dtype)


@importer("MatMulInteger", since=10)
def _matmul_integer(ctx: ImportContext, a: Any, b: Any, a_zero: Any = None,
                    b_zero: Any = None) -> Any:
    return ember.matmul(_centered(a, a_zero), _centered(b, b_zero)).to(ember.int32)


@importer("QLinearMatMul", since=10)
def _qlinear_matmul(ctx: ImportContext, a: Any, a_scale: Any, a_zero: Any, b: Any,
                    b_scale: Any, b_zero: Any, y_scale: Any, y_zero: Any = None) -> Any:
    acc = ember.matmul(_centered(a, a_zero), _centered(b, b_zero))
    scale = (a_scale.to(ember.float64) * b_scale.to(ember.float64) /
             y_scale.to(ember.float64))
    return _requantize(ctx, acc, scale, y_zero, a)


def _integer_conv(ctx: ImportContext, x: Any, w: Any) -> Any:
    return float_conv(ctx, x, w, None)  # exact: 8-bit products summed in float64


@importer("ConvInteger", since=10)
def _conv_integer(ctx: ImportContext, x: Any, w: Any, x_zero: Any = None,
                  w_zero: Any = None) -> Any:
    acc = _integer_conv(ctx, _centered(x, x_zero), _centered(w, w_zero, per_row=True))
    return ember.round(acc).to(ember.int32)


@importer("QLinearConv", since=10)
def _qlinear_conv(ctx: ImportContext, x: Any, x_scale: Any, x_zero: Any, w: Any,
                  w_scale: Any, w_zero: Any, y_scale: Any, y_zero: Any = None,
                  bias: Any = None) -> Any:
    acc = _integer_conv(ctx, _centered(x, x_zero), _centered(w, w_zero, per_row=True))
    if bias is not None:
        acc = acc + bias.to(ember.float64).reshape([1, -1] + [1] * (acc.ndim - 2))
    ws = w_scale.to(ember.float64)
    if ws.numel() > 1:
        ws = ws.reshape([1, -1] + [1] * (acc.ndim - 2))
    scale = x_scale.to(ember.float64) * ws / y_scale.to(ember.float64)
    return _requantize(ctx, acc, scale, y_zero, x)
