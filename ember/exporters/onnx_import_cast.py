"""ONNX import converters: Cast and CastLike, including to the types ember holds in a
wider one (see `onnx_import_context._HELD`).

A cast to a narrow float (float8 E4M3FN/E4M3FNUZ/E5M2/E5M2FNUZ, float4 E2M1) rounds the
value to the nearest one of that format (ties to even), written with ember ops: the
binade's quantum is 2**(exponent - mantissa bits), floored at the subnormal quantum. Too
large values saturate to the largest finite one (`saturate=1`, ONNX's default) or become
inf or NaN as the format has. A cast to a 4- or 2-bit integer truncates and wraps, as
onnx's reference (ml_dtypes) does.
"""

from __future__ import annotations

import math
from typing import Any

import ember
from ember.exporters.onnx_import_context import ImportContext, ember_dtype
from ember.exporters.onnx_import_strings import STRING, from_strings, is_strings, to_strings
from ember.exporters.onnx_registry import importer

__all__ = ["cast", "round_to_float", "round_to_e8m0", "wrap_to_int", "NARROW_FLOATS",
           "NARROW_INTS", "E8M0"]

# elem type: (mantissa bits, smallest normal exponent, largest finite, overflow without
# saturation: "inf" or "nan", keeps -0)
NARROW_FLOATS = {17: (3, -6, 448.0, "nan", True),  # FLOAT8E4M3FN
           18: (3, -7, 240.0, "nan", False),  # FLOAT8E4M3FNUZ
           19: (2, -14, 57344.0, "inf", True),  # FLOAT8E5M2
           20: (2, -15, 57344.0, "nan", False),  # FLOAT8E5M2FNUZ
           23: (1, 0, 6.0, "sat", True)}  # FLOAT4E2M1: no inf, no NaN: it saturates
NARROW_INTS = {21: (0, 16), 22: (-8, 16), 25: (0, 4), 26: (-2, 4)}  # UINT4, INT4, UINT2, INT2


def round_to_float(x: Any, elem_type: int, saturate: bool) -> Any:
    """`x` rounded to the values of a narrow float format, in float32."""
    mantissa, emin, largest, overflow, signed_zero = NARROW_FLOATS[elem_type]
    v = x.to(ember.float64)
    a = v.abs()
    finite = ember.isfinite(a)
    safe = ember.where(ember.logical_and(finite, a > 0), a, ember.ones_like(a))
    exponent = ember.clamp(ember.floor(ember.log2(safe)), min=emin)
    quantum = ember.exp2(exponent - mantissa) if hasattr(ember, "exp2") else \
        ember.pow(ember.full_like(exponent, 2.0), exponent - mantissa)
    rounded = ember.round(a / quantum) * quantum  # ties to even, as the formats round
    rounded = ember.where(finite, rounded, a)
    too_big = rounded > largest
    if saturate or overflow == "sat":
        rounded = ember.where(too_big, ember.full_like(rounded, largest), rounded)
    else:
        rounded = ember.where(too_big, ember.full_like(rounded, math.inf if overflow == "inf"
                                                        else math.nan), rounded)
    # negative, -0 included: atan2(-0, -1) is -pi, atan2(+0, -1) is +pi
    negative = ember.logical_or(v < 0, ember.logical_and(
        v == 0, ember.atan2(v, ember.full_like(v, -1.0)) < 0))
    out = ember.where(negative, -rounded, rounded)
    # NaN stays NaN; a format without NaN (float4) takes it as -0, as ml_dtypes does
    out = ember.where(ember.isnan(v), v if overflow != "sat" else ember.full_like(v, -0.0),
                      out)
    if not signed_zero:  # the FNUZ formats have one zero, +0
        out = ember.where(out == 0, ember.zeros_like(out), out)
    return out.to(ember.float32)


E8M0 = 24  # FLOAT8E8M0: a power of two, 2**(e - 127), e in 0..254 (255 is NaN)


def _pow2(e: Any) -> Any:
    return ember.pow(ember.full_like(e, 2.0), e)


def round_to_e8m0(x: Any, saturate: bool, mode: str) -> Any:
    """`x` rounded to a power of two as onnx.numpy_helper.to_float8e8m0 does from the
    float32 bits: the sign is dropped, "up" rounds up anything with a fraction, "nearest"
    rounds on the guard, round and sticky bits, "down" truncates; in float32."""
    a = x.to(ember.float32).to(ember.float64).abs()
    special = ~ember.isfinite(a)
    a = ember.where(special, ember.ones_like(a), a)
    subnormal = a < 2.0 ** -126
    e = ember.where(subnormal, ember.zeros_like(a),
                    ember.floor(ember.log2(ember.where(a > 0, a, ember.ones_like(a)))) + 127)
    fraction = ember.where(subnormal, a * 2.0 ** 149, (a / _pow2(e - 127) - 1) * 2.0 ** 23)
    if mode == "nearest":
        guard = fraction >= 2.0 ** 22
        rest = ember.remainder(fraction, 2.0 ** 22)
        round_up = ember.logical_and(guard, ember.logical_or(
            ember.logical_or(rest >= 2.0 ** 21, ember.remainder(rest, 2.0 ** 21) > 0), e > 0))
    elif mode == "up":
        round_up = fraction > 0
    elif mode == "down":
        round_up = ember.zeros_like(fraction, dtype=ember.bool)
    else:
        raise ValueError(f"Cast to FLOAT8E8M0: unknown round_mode {mode!r} (up, down, "
                         "nearest are)")
    if saturate:
        round_up = ember.logical_and(round_up, e != 254)
    e = e + round_up.to(e.dtype)
    nan = ember.logical_or(special, e >= 255)
    value = _pow2(ember.where(nan, ember.zeros_like(e), e) - 127)
    return ember.where(nan, ember.full_like(value, math.nan), value).to(ember.float32)


def wrap_to_int(x: Any, elem_type: int, held: Any) -> Any:
    """`x` truncated towards zero and wrapped into a 4- or 2-bit integer's range."""
    low, span = NARROW_INTS[elem_type]
    v = ember.trunc(x.to(ember.float64)) if x.dtype.is_floating_point else x.to(ember.int64)
    v = v.to(ember.int64)
    return (ember.remainder(v - low, span) + low).to(held)


def cast(x: Any, elem_type: int, saturate: bool, what: str, round_mode: str = "up") -> Any:
    """`x` cast to the ONNX element type `elem_type` (held as ember holds it)."""
    if elem_type == E8M0:
        return round_to_e8m0(x, saturate, round_mode)
    held = ember_dtype(elem_type, what)
    if elem_type in NARROW_FLOATS:
        return round_to_float(x, elem_type, saturate)
    if elem_type in NARROW_INTS:
        return wrap_to_int(x, elem_type, held)
    return x.to(held)


@importer("Cast", since=6)
def _cast(ctx: ImportContext, x: Any) -> Any:
    if ctx.attr("to") == STRING:  # strings are host values (`onnx_import_strings`)
        return to_strings(x)
    if is_strings(x):
        return from_strings(ctx, x, ctx.attr("to"))
    return cast(x, ctx.attr("to"), bool(ctx.attr("saturate", 1)),
                f"the target of Cast node {ctx.node.name!r}", ctx.attr("round_mode", "up"))


@importer("CastLike", since=15)
def _cast_like(ctx: ImportContext, x: Any, like: Any) -> Any:
    if is_strings(like):
        return to_strings(x)
    declared = ctx.input_type(1)  # the narrow type `like` is held for, if any
    if is_strings(x):
        return from_strings(ctx, x, declared if declared is not None else
                            _elem_type(like))
    if declared is not None:
        return cast(x, declared, bool(ctx.attr("saturate", 1)),
                    f"the target of CastLike node {ctx.node.name!r}")
    return x.to(like.dtype)


def _elem_type(t: Any) -> int:
    from onnx import helper

    from ember.exporters.onnx_context import numpy_dtype

    return helper.np_dtype_to_tensor_dtype(numpy_dtype(t.dtype))


@importer("BitCast", since=26)
def _bitcast(ctx: ImportContext, x: Any) -> Any:
    """The same bits read as another type of the same width. Bits are no ember op: the
    values go through the host (a NumPy view), as a data-dependent index op's would."""
    import numpy as np
    from onnx import helper

    from ember.exporters.onnx_context import numpy_dtype
    from ember.exporters.onnx_import_context import held_numpy

    source = held_numpy(ctx.input_type(0)) if ctx.input_type(0) is not None else None
    source = np.dtype(source) if source is not None else numpy_dtype(x.dtype)
    target = np.dtype(helper.tensor_dtype_to_np_dtype(ctx.attr("to")))
    if source.itemsize != target.itemsize:
        raise ctx.fail(f"cannot reinterpret {source} as {target}: their widths differ")
    values = np.asarray(x.to(ember.float64).tolist() if x.dtype == ember.bfloat16
                        else x.tolist()).astype(source).reshape(tuple(x.shape))
    return ctx.tensor(values.view(target), device=x.device)
