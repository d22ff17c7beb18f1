"""ONNX import converters: elementwise math, comparisons, logic, reductions, matmul, cast.

Each maps one ONNX op onto ember ops (see `onnx_import_context` for the converter's
signature); ONNX's dtype rules that differ from PyTorch's (integer division truncates,
`Pow` keeps the base's dtype) are spelled out where they apply.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import ember
from ember.exporters.onnx_import_context import ImportContext, ember_dtype
from ember.exporters.onnx_registry import importer

# -- elementwise -----------------------------------------------------------------------------


def _unary(name: str, fn: Any) -> None:
    importer(name)(lambda ctx, x: fn(x))


for _name, _fn in {
    "Abs": ember.abs, "Neg": ember.neg, "Exp": ember.exp, "Log": ember.log,
    "Sqrt": ember.sqrt, "Reciprocal": ember.reciprocal, "Floor": ember.floor,
    "Ceil": ember.ceil, "Sign": ember.sign, "Sin": ember.sin, "Cos": ember.cos,
    "Tan": ember.tan, "Asin": ember.asin, "Acos": ember.acos, "Atan": ember.atan,
    "Tanh": ember.tanh, "Sigmoid": ember.sigmoid, "Relu": ember.relu, "Erf": ember.erf,
    "Not": ember.logical_not, "BitwiseNot": ember.bitwise_not, "IsNaN": ember.isnan,
    "Round": ember.round, "Identity": lambda x: x,
    "Sinh": lambda x: (ember.exp(x) - ember.exp(-x)) / 2,
    "Cosh": lambda x: (ember.exp(x) + ember.exp(-x)) / 2,
    "Asinh": lambda x: ember.log(x + ember.sqrt(x * x + 1)),
    "Acosh": lambda x: ember.log(x + ember.sqrt(x * x - 1)),
    "Atanh": lambda x: 0.5 * ember.log((1 + x) / (1 - x)),
    "Softsign": lambda x: x / (1 + ember.abs(x)),
    "Softplus": lambda x: ember.nn.functional.softplus(x),
    "Mish": lambda x: ember.nn.functional.mish(x),
}.items():
    _unary(_name, _fn)


@importer("IsInf", since=10)
def _isinf(ctx: ImportContext, x: Any) -> Any:
    pos, neg = ctx.attr("detect_positive", 1), ctx.attr("detect_negative", 1)
    inf = ember.isinf(x)
    if pos and neg:
        return inf
    if pos:
        return ember.logical_and(inf, x > 0)
    if neg:
        return ember.logical_and(inf, x < 0)
    return ember.zeros_like(inf)


@importer("Div", since=1)
def _div(ctx: ImportContext, a: Any, b: Any) -> Any:
    b = _legacy_broadcast(ctx, a, b)
    if a.dtype.is_floating_point:
        return a / b
    return ember.div(a, b, rounding_mode="trunc")  # C's integer division, as ONNX's


@importer("Mod", since=10)
def _mod(ctx: ImportContext, a: Any, b: Any) -> Any:
    if ctx.attr("fmod", 0):  # the sign of the dividend, as C's fmod
        if a.dtype.is_floating_point:
            return a - ember.trunc(a / b) * b
        return a - ember.div(a, b, rounding_mode="trunc") * b
    return ember.remainder(a, b)


@importer("Pow", since=1)
def _pow(ctx: ImportContext, a: Any, b: Any) -> Any:
    b = _legacy_broadcast(ctx, a, b)
    if b.dtype != a.dtype:
        b = b.to(a.dtype) if a.dtype.is_floating_point or not b.dtype.is_floating_point \
            else b
    return ember.pow(a, b).to(a.dtype)


def _legacy_broadcast(ctx: ImportContext, a: Any, b: Any) -> Any:
    """Before opset 7, `broadcast=1` with `axis=k` aligned `b` with `a` from dim k on
    (not from the right, as NumPy does): give `b` trailing ones."""
    if ctx.opset < 7 and ctx.attr("broadcast", 0) and "axis" in ctx.attrs and b.ndim:
        axis = ctx.attr("axis") % a.ndim
        b = b.reshape(list(b.shape) + [1] * (a.ndim - axis - b.ndim))
    return b


def _binary(name: str, fn: Any) -> None:
    importer(name)(lambda ctx, a, b: fn(a, _legacy_broadcast(ctx, a, b)))


for _name, _fn in {
    "Add": ember.add, "Sub": ember.sub, "Mul": ember.mul, "Equal": ember.eq,
    "Greater": ember.gt, "Less": ember.lt, "GreaterOrEqual": ember.ge,
    "LessOrEqual": ember.le, "And": ember.logical_and, "Or": ember.logical_or,
    "Xor": ember.logical_xor, "BitwiseAnd": ember.bitwise_and, "BitwiseOr": ember.bitwise_or,
    "BitwiseXor": ember.bitwise_xor, "MatMul": ember.matmul,
}.items():
    _binary(_name, _fn)


def _variadic(name: str, fn: Any) -> None:
    def convert(ctx: ImportContext, *xs: Any) -> Any:
        out = xs[0]
        for x in xs[1:]:
            out = fn(out, x)
        return out
    importer(name)(convert)


_variadic("Sum", ember.add)
_variadic("Max", ember.maximum)
_variadic("Min", ember.minimum)


@importer("Mean")
def _mean(ctx: ImportContext, *xs: Any) -> Any:
    out = xs[0]
    for x in xs[1:]:
        out = out + x
    return out / len(xs)


@importer("Where", since=9)
def _where(ctx: ImportContext, cond: Any, a: Any, b: Any) -> Any:
    return ember.where(cond, a, b)


@importer("Clip", since=1)
def _clip_attrs(ctx: ImportContext, x: Any) -> Any:
    return ember.clamp(x, min=ctx.attr("min", -3.4028234663852886e38),
                       max=ctx.attr("max", 3.4028234663852886e38))


@importer("Clip", since=11)
def _clip(ctx: ImportContext, x: Any, lo: Any = None, hi: Any = None) -> Any:
    if lo is not None:
        x = ember.maximum(x, lo.to(x.dtype))
    if hi is not None:
        x = ember.minimum(x, hi.to(x.dtype))
    return x


# -- activations -----------------------------------------------------------------------------

F = ember.nn.functional


@importer("LeakyRelu", since=6)
def _leaky_relu(ctx: ImportContext, x: Any) -> Any:
    return F.leaky_relu(x, ctx.attr("alpha", 0.01))


@importer("Elu", since=6)
def _elu(ctx: ImportContext, x: Any) -> Any:
    return F.elu(x, ctx.attr("alpha", 1.0))


@importer("Celu", since=12)
def _celu(ctx: ImportContext, x: Any) -> Any:
    return F.celu(x, ctx.attr("alpha", 1.0))


@importer("Selu", since=6)
def _selu(ctx: ImportContext, x: Any) -> Any:
    alpha = ctx.attr("alpha", 1.67326319217681884765625)
    gamma = ctx.attr("gamma", 1.05070102214813232421875)
    return gamma * ember.where(x > 0, x, alpha * (ember.exp(x) - 1))


@importer("ThresholdedRelu", since=10)
def _thresholded_relu(ctx: ImportContext, x: Any) -> Any:
    return ember.where(x > ctx.attr("alpha", 1.0), x, ember.zeros_like(x))


@importer("HardSigmoid", since=6)
def _hard_sigmoid(ctx: ImportContext, x: Any) -> Any:
    return ember.clamp(ctx.attr("alpha", 0.2) * x + ctx.attr("beta", 0.5), 0.0, 1.0)


@importer("HardSwish", since=14)
def _hard_swish(ctx: ImportContext, x: Any) -> Any:
    return x * ember.clamp(x / 6 + 0.5, 0.0, 1.0)


@importer("PRelu", since=1)
def _prelu(ctx: ImportContext, x: Any, slope: Any) -> Any:
    if ctx.opset < 7 and slope.ndim == 1 and x.ndim > 2 and slope.shape[0] == x.shape[1]:
        slope = slope.reshape([-1] + [1] * (x.ndim - 2))  # one slope per channel
    return ember.where(x < 0, x * slope, x)


@importer("Gelu", since=20)
def _gelu(ctx: ImportContext, x: Any) -> Any:
    return F.gelu(x, approximate=ctx.attr("approximate", "none"))


@importer("Shrink", since=9)
def _shrink(ctx: ImportContext, x: Any) -> Any:
    lambd, bias = ctx.attr("lambd", 0.5), ctx.attr("bias", 0.0)
    zero = ember.zeros_like(x)
    return ember.where(x < -lambd, x + bias, ember.where(x > lambd, x - bias, zero))


# -- matmul ----------------------------------------------------------------------------------


@importer("Gemm", since=1)
def _gemm(ctx: ImportContext, a: Any, b: Any, c: Any = None) -> Any:
    if ctx.attr("transA", 0):
        a = a.t()
    if ctx.attr("transB", 0):
        b = b.t()
    alpha, beta = ctx.attr("alpha", 1.0), ctx.attr("beta", 1.0)
    y = a @ b
    if alpha != 1.0:
        y = y * alpha
    if c is not None:
        y = y + (c * beta if beta != 1.0 else c)
    return y


@importer("Einsum", since=12)
def _einsum(ctx: ImportContext, *xs: Any) -> Any:
    equation = ctx.attr("equation").replace(" ", "")
    if xs[0].dtype in (ember.bfloat16, ember.float16):  # computed in float32, as autocast
        return ember.einsum(equation, *[x.float() for x in xs]).to(xs[0].dtype)
    return ember.einsum(equation, *xs)


# -- reductions ------------------------------------------------------------------------------

def _axes(ctx: ImportContext, x: Any, axes_input: Any, from_input: bool) -> list[int] | None:
    axes = ctx.ints(axes_input) if from_input else ctx.attr("axes")
    if not axes:
        return None
    return [a % x.ndim if x.ndim else 0 for a in axes]


def _lowest(dtype: Any) -> Any:
    if dtype == ember.bool:
        return False
    return -math.inf if dtype.is_floating_point else int(np.iinfo(dtype.name).min)


def _highest(dtype: Any) -> Any:
    if dtype == ember.bool:
        return True
    return math.inf if dtype.is_floating_point else int(np.iinfo(dtype.name).max)


def _reduce(fn: Any, post: Any = None, empty: Any = None) -> Any:
    """`empty(dtype)`: the result over no elements where `fn` cannot reduce an empty
    dim (max, min); sums and products of nothing are ember's own 0 and 1."""
    def make(from_input: bool) -> Any:
        def convert(ctx: ImportContext, x: Any, axes: Any = None) -> Any:
            dims = _axes(ctx, x, axes, from_input)
            keep = bool(ctx.attr("keepdims", 1))
            if dims is None and ctx.attr("noop_with_empty_axes", 0):
                return x
            if dims is None:
                dims = list(range(x.ndim))
            if empty is not None and any(x.shape[d] == 0 for d in dims):
                shape = [1 if d in dims else s for d, s in enumerate(x.shape)] if keep \
                    else [s for d, s in enumerate(x.shape) if d not in dims]
                return ember.full(shape, empty(x.dtype), dtype=x.dtype, device=x.device)
            if x.ndim == 0:
                y = fn(x.reshape(1), [0], False)
            else:
                y = fn(x, dims, keep)
            return post(y) if post else y
        return convert
    return make


_REDUCTIONS = {
    "ReduceSum": (_reduce(lambda x, d, k: x.sum(dim=d, keepdim=k)), 13),
    "ReduceMean": (_reduce(lambda x, d, k: x.mean(dim=d, keepdim=k)), 18),
    "ReduceMax": (_reduce(lambda x, d, k: x.amax(dim=d, keepdim=k), empty=_lowest), 18),
    "ReduceMin": (_reduce(lambda x, d, k: x.amin(dim=d, keepdim=k), empty=_highest), 18),
    "ReduceProd": (_reduce(lambda x, d, k: _prod(x, d, k)), 18),
    "ReduceSumSquare": (_reduce(lambda x, d, k: (x * x).sum(dim=d, keepdim=k)), 18),
    "ReduceL1": (_reduce(lambda x, d, k: x.abs().sum(dim=d, keepdim=k)), 18),
    "ReduceL2": (_reduce(lambda x, d, k: (x * x).sum(dim=d, keepdim=k).sqrt()), 18),
    "ReduceLogSum": (_reduce(lambda x, d, k: x.sum(dim=d, keepdim=k).log()), 18),
    "ReduceLogSumExp": (_reduce(lambda x, d, k: ember.logsumexp(x, dim=d, keepdim=k),
                                empty=lambda dtype: -math.inf), 18),
}


def _prod(x: Any, dims: list[int], keep: bool) -> Any:
    for d in sorted(dims, reverse=True):
        x = x.prod(dim=d, keepdim=keep)
    return x


for _name, (_make, _since) in _REDUCTIONS.items():
    importer(_name, since=1)(_make(False))
    importer(_name, since=_since)(_make(True))


def _arg(fn_name: str) -> Any:
    def convert(ctx: ImportContext, x: Any) -> Any:
        axis = ctx.attr("axis", 0) % max(x.ndim, 1)
        keep = bool(ctx.attr("keepdims", 1))
        if ctx.attr("select_last_index", 0):
            flipped = ember.flip(x, [axis])
            idx = getattr(flipped, fn_name)(dim=axis, keepdim=keep)
            return x.shape[axis] - 1 - idx
        return getattr(x, fn_name)(dim=axis, keepdim=keep)
    return convert


importer("ArgMax")(_arg("argmax"))
importer("ArgMin")(_arg("argmin"))


@importer("CumSum", since=11)
def _cumsum(ctx: ImportContext, x: Any, axis: Any) -> Any:
    dim = int(ctx.scalar(axis)) % x.ndim
    if ctx.attr("reverse", 0):
        x = ember.flip(x, [dim])
    y = ember.cumsum(x, dim).to(x.dtype)  # ONNX keeps the input's dtype
    if ctx.attr("exclusive", 0):
        y = y - x
    return ember.flip(y, [dim]) if ctx.attr("reverse", 0) else y


@importer("CumProd", since=26)
def _cumprod(ctx: ImportContext, x: Any, axis: Any) -> Any:
    dim = int(ctx.scalar(axis)) % x.ndim
    reverse, exclusive = ctx.attr("reverse", 0), ctx.attr("exclusive", 0)
    if reverse:
        x = ember.flip(x, [dim])
    if exclusive:  # shift right by one, a 1 first
        ones = ember.ones_like(x.narrow(dim, 0, 1))
        x = ember.cat([ones, x.narrow(dim, 0, x.shape[dim] - 1)], dim)
    parts, acc = [], None
    for i in range(x.shape[dim]):  # ember has no cumprod: a running product, kept exact
        step = x.narrow(dim, i, 1)
        acc = step if acc is None else acc * step
        parts.append(acc)
    y = ember.cat(parts, dim) if parts else x
    return ember.flip(y, [dim]) if reverse else y


@importer("Swish", since=24)
def _swish(ctx: ImportContext, x: Any) -> Any:
    alpha = ctx.attr("alpha", 1.0)
    if x.dtype in (ember.float16, ember.bfloat16):  # the gate in float32, then rounded
        return x * ember.sigmoid(x.float() * alpha).to(x.dtype)
    return x * ember.sigmoid(alpha * x)


_BITS = {"uint8": 8, "int8": 8, "int16": 16, "int32": 32, "int64": 64}


@importer("BitShift", since=11)
def _bitshift(ctx: ImportContext, x: Any, y: Any) -> Any:
    """Shifts as multiplication or floor division by 2**y, computed in int64 (exact below
    64 bits) and wrapped back; a shift outside [0, width) empties the value (left) or
    leaves its sign (right), as onnx's reference does."""
    width = _BITS.get(x.dtype.name, 64)
    wide_x, wide_y = x.to(ember.int64), y.to(ember.int64)
    outside = ember.logical_or(wide_y < 0, wide_y >= min(width, 63))
    factor = ember.pow(ember.full_like(wide_y, 2), ember.where(outside,
                                                               ember.zeros_like(wide_y),
                                                               wide_y))
    zero = ember.zeros_like(wide_x)
    if ctx.attr("direction") == "LEFT":
        out = ember.where(outside, zero, wide_x * factor)
    else:
        sign = ember.where(wide_x < 0, zero - 1, zero)
        out = ember.where(outside, sign, ember.div(wide_x, factor, rounding_mode="floor"))
    return out.to(x.dtype)


def _window(fn: Any) -> Any:
    def convert(ctx: ImportContext, size: Any) -> Any:
        n = int(ctx.scalar(size))
        dtype = ember_dtype(ctx.attr("output_datatype", 1), "the window's dtype")
        periodic = ctx.attr("periodic", 1)
        denom = n if periodic else n - 1
        k = ember.arange(n, dtype=ember.float64)
        return fn(2 * 3.141592653589793 * k / denom).to(dtype)
    return convert


importer("HannWindow", since=17)(_window(lambda a: 0.5 - 0.5 * ember.cos(a)))
importer("HammingWindow", since=17)(_window(
    lambda a: 25 / 46 - (1 - 25 / 46) * ember.cos(a)))
importer("BlackmanWindow", since=17)(_window(
    lambda a: 0.42 - 0.5 * ember.cos(a) + 0.08 * ember.cos(2 * a)))


@importer("Det", since=11)
def _det(ctx: ImportContext, x: Any) -> Any:
    """Gaussian elimination with partial pivoting, batched, in ember ops (differentiable)."""
    n = x.shape[-1]
    batch = list(x.shape[:-2])
    a = x.reshape(-1, n, n)
    det = ember.ones(a.shape[0], dtype=x.dtype, device=x.device)
    for k in range(n):
        col = a[:, k:, k].abs()
        pivot = col.argmax(dim=1) + k  # (B,)
        rows = ember.arange(n, device=x.device).reshape(1, n)
        p = pivot.reshape(-1, 1)
        order = ember.where(rows == k, p, ember.where(rows == p, ember.full_like(p, k), rows))
        a = ember.gather(a, 1, order.unsqueeze(-1).expand(-1, -1, n))
        sign = ember.where(pivot == k, ember.ones_like(det), -ember.ones_like(det))
        diag = a[:, k, k]
        det = det * sign * diag
        if k + 1 < n:
            safe = ember.where(diag == 0, ember.ones_like(diag), diag)
            factors = a[:, k + 1:, k] / safe.reshape(-1, 1)
            lower = a[:, k + 1:, :] - factors.unsqueeze(-1) * a[:, k:k + 1, :]
            a = ember.cat([a[:, :k + 1, :], lower], 1)
    return det.reshape(batch)
