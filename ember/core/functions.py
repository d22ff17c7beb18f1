"""Differentiable ops: each runs its primitive through the dispatch table and, when an
input requires grad, records how to send gradients back, written with ember ops (so
gradients stay on the forward's device, and `create_graph=True` differentiates them).

Composite ops (softmax, log_softmax, var, ...) are decompositions into primitives; a
backend may supply a fused kernel under the composite's name, and then it runs instead.
"""

from __future__ import annotations

import builtins as _builtins  # this module defines sum/min/max/any/all/abs/round/pow
import math
import numbers
from collections import namedtuple
from collections.abc import Sequence
from typing import Any

from ember.core import autograd as ag
from ember.core import dtype as dt
from ember.core import indexing, tracing
from ember.core.autograd import record
from ember.core.creation import (  # noqa: F401 - re-exported for the Tensor methods
    Generator,
    arange,
    as_tensor,
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    linspace,
    manual_seed,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randint_like,
    randn,
    randn_like,
    randperm,
    rebuild_tensor,
    resolve,
    tensor,
    zeros,
    zeros_like,
    zeros_meta,
)
from ember.core.dispatch import (
    host_array,
    run,
    run_binary,
    run_inplace,
    run_unary_into,
    write_into,
)
from ember.core.ops import (
    ViewNotPossible,
    fmt_shape,
    infer_reshape,
    normalize_dim,
    normalize_dims,
)
from ember.core.tensor import Tensor

_state = ag._state
_Number = (int, float, bool)


def _grad_on(*xs: Any) -> bool:
    return _state.enabled and _builtins.any(
        isinstance(x, Tensor) and x._requires_grad for x in xs)


def host(x: Tensor):
    """The tensor's values as a NumPy array on the host."""
    return host_array(x)


def note_python_value(x: Tensor, how: str) -> None:
    """Called when a tensor's value is read into Python (the tracer warns there)."""
    if _python_value_hooks and tracing.active is not None:  # not while a check pauses it
        _python_value_hooks[-1](x, how)


_python_value_hooks: list = []


def _operand(x: Any, like: Tensor) -> Any:
    """A Python number stays as is; an array-like becomes a tensor on `like`'s device."""
    if isinstance(x, Tensor) or isinstance(x, _Number):
        return x
    if isinstance(x, numbers.Number):
        return x.item() if hasattr(x, "item") else float(x)
    if hasattr(x, "__array__") or isinstance(x, (list, tuple)):
        return tensor(x, device=like.device)
    raise TypeError(f"unsupported operand type {type(x).__name__} for a tensor op")


def _first_tensor(*xs: Any) -> Tensor:
    for x in xs:
        if isinstance(x, Tensor):
            return x
    raise TypeError("expected at least one tensor operand")


# -- gradient helpers -----------------------------------------------------------------


def sum_to_shape(g: Tensor, shape: Sequence[int]) -> Tensor:
    """Sum `g` over the dimensions that broadcasting added or stretched to reach `shape`."""
    shape = tuple(shape)
    if tuple(g.shape) == shape:
        return g
    lead = g.ndim - len(shape)
    dims = tuple(range(lead)) + tuple(
        i + lead for i, s in enumerate(shape) if s == 1 and g.shape[i + lead] != 1)
    out = sum(g, dims, keepdim=True) if dims else g
    return reshape(out, shape) if tuple(out.shape) != shape else out


def _grad_for(g: Tensor, meta: tuple | None) -> Tensor | None:
    """Reduce a gradient to an operand's (shape, dtype); None for a non-tensor operand."""
    if meta is None:
        return None
    shape, d = meta
    if tuple(g.shape) != shape:
        g = sum_to_shape(g, shape)
    if g._dtype is not d:
        g = to_dtype(g, d)
    return g


def _meta(x: Any) -> tuple | None:
    return (tuple(x.shape), x._dtype) if isinstance(x, Tensor) and x._requires_grad else None


# -- elementwise unary ----------------------------------------------------------------

_LN2 = math.log(2.0)


# op -> (what its backward reads: "x" the input or "y" the output, formula(v, g)).
# Saving only that value matters: a saved tensor changed in place later makes backward
# raise, and PyTorch saves exactly these.
_UNARY_GRADS: dict[str, tuple[str, Any]] = {
    "neg": ("", lambda v, g: neg(g)),
    "abs": ("x", lambda x, g: mul(g, sign(x))),
    "relu": ("y", lambda y, g: where(gt(y, 0), g, 0.0)),
    "exp": ("y", lambda y, g: mul(g, y)),
    "log": ("x", lambda x, g: div(g, x)),
    "log2": ("x", lambda x, g: div(g, mul(x, _LN2))),
    "log1p": ("x", lambda x, g: div(g, add(x, 1.0))),
    "expm1": ("y", lambda y, g: mul(g, add(y, 1.0))),
    "sqrt": ("y", lambda y, g: div(g, mul(y, 2.0))),
    "rsqrt": ("y", lambda y, g: mul(g, mul(pow(y, 3), -0.5))),
    "sin": ("x", lambda x, g: mul(g, cos(x))),
    "cos": ("x", lambda x, g: mul(g, neg(sin(x)))),
    "tan": ("y", lambda y, g: mul(g, add(mul(y, y), 1.0))),
    "tanh": ("y", lambda y, g: mul(g, rsub(mul(y, y), 1.0))),
    "sigmoid": ("y", lambda y, g: mul(g, mul(y, rsub(y, 1.0)))),
    "erf": ("x", lambda x, g: mul(g, mul(exp(neg(mul(x, x))), 2.0 / math.sqrt(math.pi)))),
    "asin": ("x", lambda x, g: div(g, sqrt(rsub(mul(x, x), 1.0)))),
    "acos": ("x", lambda x, g: neg(div(g, sqrt(rsub(mul(x, x), 1.0))))),
    "atan": ("x", lambda x, g: div(g, add(mul(x, x), 1.0))),
    "reciprocal": ("y", lambda y, g: neg(mul(g, mul(y, y)))),
}


def _unary_backward(op: str):
    """Backward of unary `op`. A backend may fuse it: kernel `<op>_backward(v, grad)`,
    where v is what the formula reads (the input or the output); used when the backward
    itself is not being recorded (no create_graph)."""
    entry = _UNARY_GRADS.get(op)
    if entry is None:  # sign, floor, ceil, round, trunc: zero almost everywhere
        return lambda node, g: mul(g, 0.0)
    _, formula = entry
    fused_name = op + "_backward"

    def backward(node, g):
        saved = node.saved_tensors
        v = saved[0] if saved else None
        if not _state.enabled and v is not None and v._device is g._device \
                and v._dtype is g._dtype:
            fused = g._backend.kernels.get(fused_name)
            if fused is not None:
                return Tensor._make(fused(v._data, g._data), g._dtype, g._device, g._backend)
        return formula(v, g)
    return backward


_UNARY_BW: dict[str, Any] = {}
_UNARY_LABEL: dict[str, str] = {}
_UNARY_SAVES: dict[str, str] = {op: reads for op, (reads, _) in _UNARY_GRADS.items()}


def _unary(op: str, x: Tensor) -> Tensor:
    out = run(op, x)
    if _state.enabled and x._requires_grad:
        reads = _UNARY_SAVES.get(op, "")
        saved = (x,) if reads == "x" else ((out,) if reads == "y" else ())
        record(_UNARY_LABEL[op], _UNARY_BW[op], (x,), out, saved=saved)
    return out


def _make_unary(op: str):
    _UNARY_BW[op] = _unary_backward(op)
    _UNARY_LABEL[op] = "".join(p.capitalize() for p in op.split("_")) + "Backward0"

    def fn(input: Tensor) -> Tensor:
        return _unary(op, input)
    fn.__name__ = op
    fn.__doc__ = f"Elementwise {op}."
    return fn


neg = _make_unary("neg")
abs = _make_unary("abs")  # noqa: A001 - PyTorch's name
_sign = _make_unary("sign")


def sign(input: Tensor) -> Tensor:
    """-1, 0 or 1 by the sign of each element (a bool tensor is its own sign)."""
    return clone(input) if input._dtype is dt.bool_ else _sign(input)
floor = _make_unary("floor")
ceil = _make_unary("ceil")
trunc = _make_unary("trunc")
relu = _make_unary("relu")
exp = _make_unary("exp")
log = _make_unary("log")
log2 = _make_unary("log2")
log1p = _make_unary("log1p")
expm1 = _make_unary("expm1")
sqrt = _make_unary("sqrt")
rsqrt = _make_unary("rsqrt")
sin = _make_unary("sin")
cos = _make_unary("cos")
tan = _make_unary("tan")
tanh = _make_unary("tanh")
sigmoid = _make_unary("sigmoid")
erf = _make_unary("erf")
asin = _make_unary("asin")
acos = _make_unary("acos")
atan = _make_unary("atan")
reciprocal = _make_unary("reciprocal")
_round = _make_unary("round")


def round(input: Tensor, decimals: int = 0) -> Tensor:  # noqa: A001
    """Round half to even, as PyTorch does; `decimals` shifts the rounding position."""
    if decimals == 0:
        return _round(input)
    scale = 10.0 ** decimals
    return div(_round(mul(input, scale)), scale)


def logical_not(input: Tensor) -> Tensor:
    return run("logical_not", input)


def isnan(input: Tensor) -> Tensor:
    return run("isnan", input)


def isinf(input: Tensor) -> Tensor:
    return run("isinf", input)


def isfinite(input: Tensor) -> Tensor:
    return run("isfinite", input)


def bitwise_not(input: Tensor) -> Tensor:
    return run("bitwise_not", input)


# -- elementwise binary ---------------------------------------------------------------


def _bw_add(node, g):
    ma, mb = node.attrs["metas"]
    return _grad_for(g, ma), _grad_for(g, mb)


def _bw_sub(node, g):
    ma, mb = node.attrs["metas"]
    return _grad_for(g, ma), (None if mb is None else _grad_for(neg(g), mb))


def _saved_operands(node):
    """The (a, b) operands of a binary node: the saved tensors or the stored scalars (None
    for a tensor operand that was not saved because no gradient needs it)."""
    saved = iter(node.saved_tensors)
    (sa, sb), (keep_a, keep_b) = node.attrs["scalars"], node.attrs["kept"]
    a = (next(saved) if keep_a else None) if sa is None else sa
    b = (next(saved) if keep_b else None) if sb is None else sb
    return a, b


def _bw_mul(node, g):
    ma, mb = node.attrs["metas"]
    a, b = _saved_operands(node)
    return (None if ma is None else _grad_for(mul(g, b), ma),
            None if mb is None else _grad_for(mul(g, a), mb))


def _bw_div(node, g):
    ma, mb = node.attrs["metas"]
    a, b = _saved_operands(node)
    ga = None if ma is None else _grad_for(div(g, b), ma)
    gb = None if mb is None else _grad_for(neg(div(mul(g, a), mul(b, b))), mb)
    return ga, gb


def _bw_pow(node, g):
    ma, mb = node.attrs["metas"]
    a, b = _saved_operands(node)
    ga = gb = None
    if ma is not None:
        if isinstance(b, _Number) and b == 0:
            ga = _grad_for(mul(g, 0.0), ma)
        else:
            b_minus_1 = sub(b, 1) if isinstance(b, Tensor) else b - 1
            ga = _grad_for(mul(g, mul(pow(a, b_minus_1), b)), ma)
    if mb is not None:
        y = pow(a, b)
        safe_log = log(where(eq(a, 0), 1.0, a)) if isinstance(a, Tensor) else math.log(a) \
            if a > 0 else float("nan")
        gb = _grad_for(mul(g, mul(y, safe_log)), mb)
    return ga, gb


def _bw_maxmin(op: str):
    def backward(node, g):
        ma, mb = node.attrs["metas"]
        a, b = _saved_operands(node)
        win_a = gt(a, b) if op == "maximum" else lt(a, b)
        tie = eq(a, b)
        share = add(to_dtype(win_a, g.dtype), mul(to_dtype(tie, g.dtype), 0.5))
        ga = None if ma is None else _grad_for(mul(g, share), ma)
        gb = None if mb is None else _grad_for(mul(g, rsub(share, 1.0)), mb)
        return ga, gb
    return backward


def _bw_atan2(node, g):
    ma, mb = node.attrs["metas"]
    a, b = _saved_operands(node)
    denom = add(mul(a, a), mul(b, b))
    return (None if ma is None else _grad_for(div(mul(g, b), denom), ma),
            None if mb is None else _grad_for(neg(div(mul(g, a), denom)), mb))


def _bw_remainder(node, g):
    ma, mb = node.attrs["metas"]
    a, b = _saved_operands(node)
    return (None if ma is None else _grad_for(g, ma),
            None if mb is None else _grad_for(neg(mul(g, floor_divide(a, b))), mb))


def _keep_both(need_a: bool, need_b: bool) -> tuple[bool, bool]:
    return True, True


# op -> (node label, backward, which operands to save given which gradients are needed).
# Saving only what backward reads matters: a saved tensor changed in place later makes
# backward raise, so `y * 2` must not save `y` when only y's gradient is wanted.
_BINARY_BW = {
    "add": ("AddBackward0", _bw_add, None), "sub": ("SubBackward0", _bw_sub, None),
    "mul": ("MulBackward0", _bw_mul, lambda na, nb: (nb, na)),
    "div": ("DivBackward0", _bw_div, lambda na, nb: (nb, True)),
    "pow": ("PowBackward0", _bw_pow, _keep_both),
    "maximum": ("MaximumBackward0", _bw_maxmin("maximum"), _keep_both),
    "minimum": ("MinimumBackward0", _bw_maxmin("minimum"), _keep_both),
    "atan2": ("Atan2Backward0", _bw_atan2, _keep_both),
    "remainder": ("RemainderBackward0", _bw_remainder, lambda na, nb: (nb, nb)),
}


def _binary(op: str, a: Any, b: Any) -> Tensor:
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError(f"{op}(): expected at least one tensor operand, got "
                        f"{type(a).__name__} and {type(b).__name__}")
    ta, tb = isinstance(a, Tensor), isinstance(b, Tensor)
    if not ta:
        a = _operand(a, b)
        ta = isinstance(a, Tensor)
    if not tb:
        b = _operand(b, a)
        tb = isinstance(b, Tensor)
    out = run_binary(op, a, b)
    if _state.enabled and ((ta and a._requires_grad) or (tb and b._requires_grad)):
        entry = _BINARY_BW.get(op)
        if entry is not None and out._dtype.is_floating_point:
            label, fn, which = entry
            need_a, need_b = ta and a._requires_grad, tb and b._requires_grad
            keep_a, keep_b = which(need_a, need_b) if which else (False, False)
            keep_a, keep_b = keep_a and ta, keep_b and tb
            saved = tuple(x for x, keep in ((a, keep_a), (b, keep_b)) if keep)
            record(label, fn, (a, b), out, saved=saved, metas=(_meta(a), _meta(b)),
                   scalars=(None if ta else a, None if tb else b), kept=(keep_a, keep_b))
    return out


def add(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    """`input + alpha * other`, with broadcasting and type promotion."""
    if alpha != 1:
        other = mul(other, alpha)
    return _binary("add", input, other)


def sub(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    """`input - alpha * other`."""
    if alpha != 1:
        other = mul(other, alpha)
    return _binary("sub", input, other)


def rsub(input: Any, other: Any) -> Tensor:
    """`other - input`."""
    return _binary("sub", other, input)


def mul(input: Any, other: Any) -> Tensor:
    return _binary("mul", input, other)


def div(input: Any, other: Any, *, rounding_mode: str | None = None) -> Tensor:
    """True division; `rounding_mode="floor"` or `"trunc"` rounds the quotient."""
    if rounding_mode is None:
        return _binary("div", input, other)
    if rounding_mode == "floor":
        return floor_divide(input, other)
    if rounding_mode == "trunc":
        out = trunc(_binary("div", input, other))
        common = dt.result_type(_tier(input), _tier(other))
        return out if common.is_floating_point else to_dtype(out, common)
    raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
                     f"found '{rounding_mode}'")


def _tier(v: Any) -> tuple:
    if isinstance(v, Tensor):
        return v._dtype, (dt.DIMMED if v.ndim else dt.ZERO_DIM)
    return dt.scalar_dtype(v), dt.SCALAR


true_divide = div


def floor_divide(input: Any, other: Any) -> Tensor:
    return _binary("floor_divide", input, other)


def remainder(input: Any, other: Any) -> Tensor:
    return _binary("remainder", input, other)


def pow(input: Any, exponent: Any) -> Tensor:  # noqa: A001
    return _binary("pow", input, exponent)


def maximum(input: Tensor, other: Tensor) -> Tensor:
    return _binary("maximum", input, other)


def minimum(input: Tensor, other: Tensor) -> Tensor:
    return _binary("minimum", input, other)


def atan2(input: Tensor, other: Tensor) -> Tensor:
    return _binary("atan2", input, other)


def _compare(op: str):
    def fn(input: Any, other: Any) -> Tensor:
        if not isinstance(input, Tensor):
            input = _operand(input, other)
        if not isinstance(other, Tensor):
            other = _operand(other, input)
        return run_binary(op, input, other)
    fn.__name__ = op
    return fn


eq = _compare("eq")
ne = _compare("ne")
lt = _compare("lt")
le = _compare("le")
gt = _compare("gt")
ge = _compare("ge")
logical_and = _compare("logical_and")
logical_or = _compare("logical_or")
logical_xor = _compare("logical_xor")
bitwise_and = _compare("bitwise_and")
bitwise_or = _compare("bitwise_or")
bitwise_xor = _compare("bitwise_xor")
greater, less, greater_equal, less_equal, not_equal = gt, lt, ge, le, ne


def result_type(tensor1: Any, tensor2: Any) -> dt.dtype:
    """The dtype an arithmetic op on these operands (tensors or numbers) would produce."""
    return dt.result_type(_tier(tensor1), _tier(tensor2))


def equal(input: Tensor, other: Tensor) -> bool:
    """True when both tensors have the same shape and elements."""
    return tuple(input.shape) == tuple(other.shape) and bool(all(eq(input, other)))


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-5, atol: float = 1e-8,
             equal_nan: bool = False) -> bool:
    return bool(all(isclose(input, other, rtol, atol, equal_nan)))


def isclose(input: Tensor, other: Tensor, rtol: float = 1e-5, atol: float = 1e-8,
            equal_nan: bool = False) -> Tensor:
    diff = abs(sub(input, other))
    close = le(diff, add(mul(abs(other), rtol), atol))
    close = logical_or(close, eq(input, other))
    if equal_nan:
        close = logical_or(close, logical_and(isnan(input), isnan(other)))
    return close


def where(condition: Tensor, input: Any = None, other: Any = None) -> Tensor:
    """`input` where `condition` holds, else `other` (broadcasting); with only a condition,
    the indices of its true elements, like `nonzero(as_tuple=True)`."""
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    t = _first_tensor(condition, input, other)
    if not isinstance(condition, Tensor):
        condition = tensor(condition, device=t.device)
    input, other = _operand(input, t), _operand(other, t)
    out = run("where", condition, input, other)
    if _grad_on(input, other) and out._dtype.is_floating_point:
        record("WhereBackward0", _bw_where, (None, input, other), out, saved=(condition,),
               metas=(_meta(input), _meta(other)))
    return out


def _bw_where(node, g):
    (cond,) = node.saved_tensors
    mi, mo = node.attrs["metas"]
    return (None,
            None if mi is None else _grad_for(where(cond, g, 0.0), mi),
            None if mo is None else _grad_for(where(cond, 0.0, g), mo))


def clamp(input: Tensor, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
    """Clamp every element into [min, max]; either bound may be None or a tensor."""
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        out = input
        if min is not None:
            out = maximum(out, min)
        if max is not None:
            out = minimum(out, max)
        return out
    out = run("clamp", input, min=min, max=max)
    if _state.enabled and input._requires_grad:
        record("ClampBackward1", _bw_clamp, (input,), out, saved=(input,), lo=min, hi=max)
    return out


def _bw_clamp(node, g):
    (x,) = node.saved_tensors
    lo, hi = node.attrs["lo"], node.attrs["hi"]
    keep = None
    if lo is not None:
        keep = ge(x, lo)
    if hi is not None:
        keep = le(x, hi) if keep is None else logical_and(keep, le(x, hi))
    return where(keep, g, 0.0)


clip = clamp


def clamp_min(input: Tensor, min: Any) -> Tensor:  # noqa: A002
    return clamp(input, min=min)


def clamp_max(input: Tensor, max: Any) -> Tensor:  # noqa: A002
    return clamp(input, max=max)


def lerp(input: Tensor, end: Tensor, weight: Any) -> Tensor:
    return add(input, mul(sub(end, input), weight))


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    return add(input, mul(mul(tensor1, tensor2), value))


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    return add(input, mul(div(tensor1, tensor2), value))


def square(input: Tensor) -> Tensor:
    return mul(input, input)


# -- dtype and device moves -----------------------------------------------------------


def to_dtype(x: Tensor, d: dt.dtype) -> Tensor:
    """`x` as dtype `d`; differentiable between floating dtypes."""
    if x._dtype is d:
        return x
    out = run("cast", x, dtype=d)
    if _state.enabled and x._requires_grad and d.is_floating_point:
        record("ToCopyBackward0", _bw_cast, (x,), out, src=x._dtype)
    return out


def _bw_cast(node, g):
    return to_dtype(g, node.attrs["src"])


def to_device(x: Tensor, device: Any) -> Tensor:
    """`x` on another device; differentiable (the gradient moves back)."""
    dev, backend = resolve(device)
    if dev is x._device:
        return x
    src = x._backend
    if backend is src:
        buf = src.to_device(x._data, dev.index or 0)
    else:
        buf = src.export_to(x._data, backend, dev.index or 0)
        if buf is None:
            buf = backend.from_numpy(src.to_numpy(x._data), dev.index or 0)
    out = Tensor._make(buf, x._dtype, dev, backend)
    if _state.enabled and x._requires_grad:
        record("ToCopyBackward0", _bw_to_device, (x,), out, src=x._device)
    if tracing.active is not None:
        tracing.primitive("to_device", (x,), {"device": str(dev)}, out)
    return out


def _bw_to_device(node, g):
    return to_device(g, node.attrs["src"])


def to(x: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """`x.to(device)`, `x.to(dtype)`, `x.to(device, dtype)` or `x.to(other)`."""
    device = kwargs.pop("device", None)
    d = kwargs.pop("dtype", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    for a in args:
        if isinstance(a, Tensor):
            device, d = a.device, a.dtype
        elif isinstance(a, dt.dtype):
            d = a
        elif a is not None:
            device = a
    out = x
    if device is not None:
        out = to_device(out, device)
    if d is not None:
        from ember.core.creation import _dtype_arg
        out = to_dtype(out, _dtype_arg(d))
    if copy and out is x:
        out = clone(x)
    return out


# -- reductions -----------------------------------------------------------------------


def _dims_arg(op: str, x: Tensor, dim: Any) -> tuple[int, ...] | None:
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0 and op != "sum"):
        return None
    if isinstance(dim, (tuple, list)) and len(dim) == 0:
        return None
    return normalize_dims(op, dim, x.ndim)


def _expand_back(g: Tensor, shape: tuple, dims: tuple | None, keepdim: bool) -> Tensor:
    """Broadcast a reduction's gradient back to the input's shape."""
    if not keepdim:
        if dims is None:
            g = reshape(g, (1,) * len(shape))
        else:
            kept = [1 if i in dims else s for i, s in enumerate(shape)]
            g = reshape(g, tuple(kept))
    return expand(g, shape)


def sum(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:  # noqa: A001
    """Sum over `dim` (all dimensions when None)."""
    if dtype is not None:
        input = to(input, dtype=dtype)
    dims = _dims_arg("sum", input, dim)
    out = run("sum", input, dims=dims, keepdim=keepdim)
    if _state.enabled and input._requires_grad:
        record("SumBackward1" if dims is not None else "SumBackward0", _bw_sum, (input,), out,
               shape=tuple(input.shape), dims=dims, keepdim=keepdim)
    return _as_requested(out, dtype)


def _as_requested(out: Tensor, dtype: Any) -> Tensor:
    """An explicit `dtype=` is also the output dtype (ints otherwise accumulate in int64;
    the wrap-around of the narrower type is the same either way)."""
    if dtype is None:
        return out
    from ember.core.creation import _dtype_arg
    return to_dtype(out, _dtype_arg(dtype))


def _bw_sum(node, g):
    return _expand_back(g, node.attrs["shape"], node.attrs["dims"], node.attrs["keepdim"])


@tracing.composite("mean")
def mean(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Mean over `dim` (all dimensions when None); floating tensors only."""
    if dtype is not None:
        input = to(input, dtype=dtype)
    if not input._dtype.is_floating_point:
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either "
                           f"a floating point or complex dtype. Got: {input._dtype}")
    dims = _dims_arg("mean", input, dim)
    n = input.numel() if dims is None else math.prod(input.shape[d] for d in dims)
    with ag.no_grad():
        out = div(sum(input, dims, keepdim), n if n else float("nan"))
    if _state.enabled and input._requires_grad:
        record("MeanBackward1" if dims is not None else "MeanBackward0", _bw_mean, (input,),
               out, shape=tuple(input.shape), dims=dims, keepdim=keepdim, n=n)
    return out


def _bw_mean(node, g):
    n = node.attrs["n"]
    return div(_bw_sum(node, g), n if n else float("nan"))


def prod(input: Tensor, dim: int | None = None, keepdim: bool = False, *,
         dtype: Any = None) -> Tensor:
    if dtype is not None:
        input = to(input, dtype=dtype)
    dims = None if dim is None else (normalize_dim("prod", dim, input.ndim),)
    out = run("prod", input, dims=dims, keepdim=keepdim)
    if _state.enabled and input._requires_grad:
        record("ProdBackward0", _bw_prod, (input,), out, saved=(input, out), dims=dims,
               keepdim=keepdim)
    return _as_requested(out, dtype)


def _bw_prod(node, g):
    x, y = node.saved_tensors
    dims, keepdim = node.attrs["dims"], node.attrs["keepdim"]
    shape = tuple(x.shape)
    gy = _expand_back(mul(g, y), shape, dims, keepdim)
    # product of the others = y / x where x != 0; where x == 0, recompute without it
    safe = where(eq(x, 0), 1.0, x)
    others = _expand_back(prod_keep(safe, dims), shape, dims, True)
    zeros_count = _expand_back(sum(to_dtype(eq(x, 0), x.dtype), dims, keepdim=True), shape,
                               dims, True)
    g_full = _expand_back(g, shape, dims, keepdim)
    at_zero = where(eq(zeros_count, 1.0), mul(g_full, others), 0.0)
    return where(eq(x, 0), at_zero, div(gy, safe))


def prod_keep(x: Tensor, dims: tuple | None) -> Tensor:
    if dims is None:
        return reshape(prod(reshape(x, (-1,))), (1,) * x.ndim)
    return prod(x, dims[0], keepdim=True)


def _extreme(op: str, input: Tensor, dims: tuple | None, keepdim: bool,
             label: str | None = None) -> Tensor:
    out = run(op, input, dims=dims, keepdim=keepdim)
    if _state.enabled and input._requires_grad:
        record(label or ("AmaxBackward0" if op == "max" else "AminBackward0"), _bw_extreme,
               (input,), out, saved=(input, out), dims=dims, keepdim=keepdim)
    return out


def _bw_extreme(node, g):
    x, y = node.saved_tensors
    dims, keepdim = node.attrs["dims"], node.attrs["keepdim"]
    shape = tuple(x.shape)
    hit = to_dtype(eq(x, _expand_back(y, shape, dims, keepdim)), g.dtype)
    count = sum(hit, dims, keepdim=True)
    return div(mul(_expand_back(g, shape, dims, keepdim), hit), count)


def amax(input: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:
    return _extreme("max", input, _dims_arg("amax", input, dim), keepdim)


def amin(input: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:
    return _extreme("min", input, _dims_arg("amin", input, dim), keepdim)


MaxResult = namedtuple("max", ["values", "indices"])
MinResult = namedtuple("min", ["values", "indices"])


def _max_min(op: str, input: Tensor, dim: Any, keepdim: bool) -> Any:
    if isinstance(dim, Tensor):  # max(a, b) is maximum(a, b)
        return maximum(input, dim) if op == "max" else minimum(input, dim)
    if dim is None:
        return _extreme(op, input, None, False, "MaxBackward1" if op == "max" else
                        "MinBackward1")
    d = normalize_dim(op, dim, input.ndim)
    if input.shape and input.shape[d] == 0:
        raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")
    idx = run("argmax" if op == "max" else "argmin", input, dim=d, keepdim=True)
    values = gather(input, d, idx)
    if not keepdim:
        values, idx = squeeze(values, d), squeeze(idx, d)
    return (MaxResult if op == "max" else MinResult)(values, idx)


def max(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:  # noqa: A001
    """The largest element; with `dim`, a (values, indices) pair along it; with a tensor,
    the elementwise maximum."""
    return _max_min("max", input, dim, keepdim)


def min(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:  # noqa: A001
    return _max_min("min", input, dim, keepdim)


def argmax(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    d = None if dim is None else normalize_dim("argmax", dim, input.ndim)
    return run("argmax", input, dim=d, keepdim=keepdim)


def argmin(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    d = None if dim is None else normalize_dim("argmin", dim, input.ndim)
    return run("argmin", input, dim=d, keepdim=keepdim)


def all(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    return run("all", input, dims=_dims_arg("all", input, dim), keepdim=keepdim)


def any(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    return run("any", input, dims=_dims_arg("any", input, dim), keepdim=keepdim)


def count_nonzero(input: Tensor, dim: Any = None) -> Tensor:
    return sum(ne(input, 0), dim)


@tracing.composite("var")
def var(input: Tensor, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False,
        *, correction: Any = None) -> Tensor:
    """Variance over `dim`, with Bessel's correction by default (`correction=1`)."""
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    if not input._dtype.is_floating_point:
        raise RuntimeError(f"var(): expected a floating-point input, got {input._dtype}")
    dims = _dims_arg("var", input, dim)
    n = input.numel() if dims is None else math.prod(input.shape[d] for d in dims)
    centered = sub(input, mean(input, dims, keepdim=True))
    total = sum(mul(centered, centered), dims, keepdim)
    return div(total, n - correction if n - correction > 0 else float("nan"))


def std(input: Tensor, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False,
        *, correction: Any = None) -> Tensor:
    return sqrt(var(input, dim, unbiased, keepdim, correction=correction))


def var_mean(input: Tensor, dim: Any = None, unbiased: bool | None = None,
             keepdim: bool = False, *, correction: Any = None) -> tuple:
    return (var(input, dim, unbiased, keepdim, correction=correction),
            mean(input, _dims_arg("var_mean", input, dim), keepdim))


@tracing.composite("logsumexp")
def logsumexp(input: Tensor, dim: Any, keepdim: bool = False) -> Tensor:
    """`log(sum(exp(input), dim))`, computed stably."""
    dims = _dims_arg("logsumexp", input, dim)
    with ag.no_grad():
        m = amax(input, dims if dims is not None else (), keepdim=True)
        m = where(isinf(m), 0.0, m)
    out = add(log(sum(exp(sub(input, m)), dims, keepdim=True)), m)
    if not keepdim:
        out = reshape(out, tuple(s for i, s in enumerate(input.shape)
                                 if dims is not None and i not in dims))
    return out


def norm(input: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False,
         dtype: Any = None) -> Tensor:
    """Vector p-norm over `dim` (the Frobenius norm by default)."""
    if dtype is not None:
        input = to(input, dtype=dtype)
    dims = _dims_arg("norm", input, dim)
    if p in ("fro", 2, 2.0):
        with ag.no_grad():
            out = sqrt(sum(mul(input, input), dims, keepdim))
        if _state.enabled and input._requires_grad:
            record("NormBackward1" if dims is not None else "NormBackward0", _bw_norm2,
                   (input,), out, saved=(input, out), dims=dims, keepdim=keepdim)
        return out
    if p in (math.inf, float("inf")):
        return _extreme("max", abs(input), dims, keepdim)
    if p in (-math.inf, float("-inf")):
        return _extreme("min", abs(input), dims, keepdim)
    if p == 1:
        return sum(abs(input), dims, keepdim)
    if p == 0:
        return sum(to_dtype(ne(input, 0), input.dtype), dims, keepdim)
    if isinstance(p, str):
        raise RuntimeError(f"norm(): unsupported norm type {p!r}")
    return pow(sum(pow(abs(input), p), dims, keepdim), 1.0 / p)


def _bw_norm2(node, g):
    x, y = node.saved_tensors
    shape, dims, keepdim = tuple(x.shape), node.attrs["dims"], node.attrs["keepdim"]
    norm_ = _expand_back(y, shape, dims, keepdim)
    scale = where(eq(norm_, 0), 0.0, div(x, norm_))  # 0 at a zero vector, as PyTorch
    return mul(_expand_back(g, shape, dims, keepdim), scale)


def cumsum(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    if dtype is not None:
        input = to(input, dtype=dtype)
    d = normalize_dim("cumsum", dim, input.ndim)
    out = run("cumsum", input, dim=d)
    if _state.enabled and input._requires_grad:
        record("CumsumBackward0", _bw_cumsum, (input,), out, dim=d)
    return _as_requested(out, dtype)


def _bw_cumsum(node, g):
    d = node.attrs["dim"]
    return flip(cumsum(flip(g, (d,)), d), (d,))


# -- shapes and views -----------------------------------------------------------------


def _as_view(out: Tensor, x: Tensor, fn) -> Tensor:
    """Mark `out` as a view of `x`: it shares `x`'s storage and version counter, and
    `fn(x)` recreates it (so in-place writes through it reach the base's graph)."""
    out._vc = x._vc
    if x._base is None:
        out._base, out._view_fn = x, fn
    else:
        parent = x._view_fn
        out._base = x._base
        out._view_fn = (lambda b: fn(parent(b))) if parent is not None else None
    return out


def _sizes(args: tuple) -> tuple:
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    return tuple(int(a) for a in args)


def _reshape_impl(x: Tensor, shape: tuple, must_view: bool, op: str,
                  label: str | None = None) -> Tensor:
    shape = infer_reshape(op, tuple(x.shape), x.numel(), shape)
    if tuple(x.shape) == shape and not must_view:
        return x
    try:
        out = run("reshape", x, shape=shape, copy=False)
        viewed = True
    except ViewNotPossible:
        if must_view:
            raise RuntimeError(
                f"view size is not compatible with input tensor's size and stride (at least "
                f"one dimension spans across two contiguous subspaces); shape "
                f"{fmt_shape(tuple(x.shape))} -> {fmt_shape(shape)}. Use .reshape(...) "
                "instead.") from None
        out = run("reshape", x, shape=shape, copy=True)
        viewed = False
    if viewed:
        _as_view(out, x, lambda b: reshape(b, shape))
    if _state.enabled and x._requires_grad:
        record(label or ("ViewBackward0" if viewed else "UnsafeViewBackward0"), _bw_reshape,
               (x,), out, shape=tuple(x.shape))
    return out


def _bw_reshape(node, g):
    return reshape(g, node.attrs["shape"])


def reshape(input: Tensor, *shape: Any) -> Tensor:
    """The same values in a new shape: a view when possible, else a copy."""
    return _reshape_impl(input, _sizes(shape), False, "reshape")


def view(input: Tensor, *shape: Any) -> Tensor:
    """A view with a new shape; raises when the strides do not allow one."""
    if len(shape) == 1 and isinstance(shape[0], dt.dtype):
        raise NotImplementedError("view(dtype) is not supported")
    return _reshape_impl(input, _sizes(shape), True, "view")


def view_as(input: Tensor, other: Tensor) -> Tensor:
    return view(input, tuple(other.shape))


def reshape_as(input: Tensor, other: Tensor) -> Tensor:
    return reshape(input, tuple(other.shape))


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    if input.ndim == 0:
        return reshape(input, (1,))
    s = normalize_dim("flatten", start_dim, input.ndim)
    e = normalize_dim("flatten", end_dim, input.ndim)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shape = tuple(input.shape)
    return reshape(input, shape[:s] + (math.prod(shape[s:e + 1]),) + shape[e + 1:])


def unflatten(input: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    d = normalize_dim("unflatten", dim, input.ndim)
    shape = tuple(input.shape)
    inner = infer_reshape("unflatten", (shape[d],), shape[d], tuple(sizes))
    return reshape(input, shape[:d] + inner + shape[d + 1:])


def squeeze(input: Tensor, dim: Any = None) -> Tensor:
    """Remove dimensions of size 1 (only `dim` when given)."""
    shape = tuple(input.shape)
    if dim is None:
        new = tuple(s for s in shape if s != 1)
    else:
        dims = normalize_dims("squeeze", dim, input.ndim) or ()
        new = tuple(s for i, s in enumerate(shape) if not (i in dims and s == 1))
    return reshape(input, new) if new != shape else _alias(input)


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """Insert a dimension of size 1 at `dim`."""
    d = normalize_dim("unsqueeze", dim, input.ndim + 1)
    shape = tuple(input.shape)
    return _reshape_impl(input, shape[:d] + (1,) + shape[d:], False, "unsqueeze",
                         "UnsqueezeBackward0")


def _alias(x: Tensor) -> Tensor:
    """A new tensor object that views all of `x` (PyTorch returns one for no-op views)."""
    return _reshape_impl(x, tuple(x.shape), True, "view")


def permute(input: Tensor, *dims: Any) -> Tensor:
    """A view with the dimensions reordered."""
    dims = tuple(normalize_dim("permute", d, input.ndim) for d in _sizes(dims))
    if len(dims) != input.ndim:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does "
                           f"not match the length of the desired ordering of dimensions i.e. "
                           f"input.dim() = {input.ndim} is not equal to len(dims) = {len(dims)}")
    return _permute(input, dims, "PermuteBackward0")


def _permute(input: Tensor, dims: tuple, label: str) -> Tensor:
    out = run("permute", input, dims=dims)
    _as_view(out, input, lambda b: permute(b, dims))
    if _state.enabled and input._requires_grad:
        inverse = tuple(sorted(range(len(dims)), key=lambda i: dims[i]))
        record(label, _bw_permute, (input,), out, inverse=inverse)
    return out


def _bw_permute(node, g):
    return permute(g, node.attrs["inverse"])


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """A view with two dimensions swapped."""
    n = input.ndim
    if n == 0:
        return _alias(input)
    a, b = normalize_dim("transpose", dim0, n), normalize_dim("transpose", dim1, n)
    order = list(range(n))
    order[a], order[b] = order[b], order[a]
    return _permute(input, tuple(order), "TransposeBackward0")


swapaxes = transpose
swapdims = transpose


def t(input: Tensor) -> Tensor:
    """Transpose of a tensor with at most 2 dimensions."""
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{input.ndim}D")
    return _permute(input, (1, 0), "TBackward0") if input.ndim == 2 else \
        _reshape_impl(input, tuple(input.shape), True, "t", "TBackward0")


def movedim(input: Tensor, source: Any, destination: Any) -> Tensor:
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    n = input.ndim
    src = [normalize_dim("movedim", s, n) for s in src]
    dst = [normalize_dim("movedim", d, n) for d in dst]
    order = [i for i in range(n) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute(input, tuple(order))


def expand(input: Tensor, *sizes: Any) -> Tensor:
    """A view with size-1 dimensions repeated (no copy); -1 keeps a size."""
    shape = _sizes(sizes)
    if shape == tuple(input.shape):
        return input
    out = run("expand", input, shape=shape)
    _as_view(out, input, lambda b: expand(b, shape))
    if _state.enabled and input._requires_grad:
        record("ExpandBackward0", _bw_expand, (input,), out, shape=tuple(input.shape))
    return out


def _bw_expand(node, g):
    return sum_to_shape(g, node.attrs["shape"])


def expand_as(input: Tensor, other: Tensor) -> Tensor:
    return expand(input, tuple(other.shape))


def broadcast_to(input: Tensor, shape: Sequence[int]) -> Tensor:
    return expand(input, tuple(shape))


def broadcast_tensors(*tensors: Tensor) -> tuple:
    from ember.core.ops import broadcast_shapes
    shape: tuple = ()
    for x in tensors:
        shape = broadcast_shapes("broadcast_tensors", shape, tuple(x.shape))
    return tuple(expand(x, shape) for x in tensors)


def repeat(input: Tensor, *sizes: Any) -> Tensor:
    """Tile the tensor `sizes[i]` times along each dimension (a copy)."""
    reps = _sizes(sizes)
    if len(reps) < input.ndim:
        raise RuntimeError("repeat(): Number of dimensions of repeat dims can not be smaller "
                           "than number of dimensions of tensor")
    x = reshape(input, (1,) * (len(reps) - input.ndim) + tuple(input.shape))
    shape = tuple(x.shape)
    # insert a broadcast axis before each dimension, expand it, and fold it in
    inter = tuple(v for s in shape for v in (1, s))
    target = tuple(v for r, s in zip(reps, shape) for v in (r, s))
    out = expand(reshape(x, inter), target)
    return reshape(contiguous(out), tuple(r * s for r, s in zip(reps, shape)))


def tile(input: Tensor, dims: Sequence[int]) -> Tensor:
    dims = tuple(dims)
    if len(dims) < input.ndim:
        dims = (1,) * (input.ndim - len(dims)) + dims
    return repeat(input, dims)


def flip(input: Tensor, *dims: Any) -> Tensor:
    """A copy with the order of elements reversed along `dims` (`x.flip(0, 1)` or
    `x.flip((0, 1))`)."""
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    dims = normalize_dims("flip", dims, input.ndim) or ()
    out = run("flip", input, dims=dims)
    if _state.enabled and input._requires_grad:
        record("FlipBackward0", lambda node, g: flip(g, node.attrs["dims"]), (input,), out,
               dims=dims)
    return out


def _triangle(op: str, input: Tensor, diagonal: int) -> Tensor:
    if input.ndim < 2:
        raise RuntimeError(f"{op}: input tensor must have at least 2 dimensions")
    out = run(op, input, diagonal=diagonal)
    if _state.enabled and input._requires_grad:
        record(op.capitalize() + "Backward0", lambda node, g: _triangle(op, g, diagonal),
               (input,), out)
    return out


def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    return _triangle("tril", input, diagonal)


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    return _triangle("triu", input, diagonal)


def clone(input: Tensor, *, memory_format: Any = None) -> Tensor:
    """A copy with its own storage; differentiable."""
    out = run("clone", input)
    if _state.enabled and input._requires_grad:
        record("CloneBackward0", lambda node, g: g, (input,), out)
    return out


def contiguous(input: Tensor, memory_format: Any = None) -> Tensor:
    is_contig = getattr(input._backend, "is_contiguous", None)
    if is_contig is not None and is_contig(input._data):
        return input
    return clone(input)


def is_contiguous(input: Tensor, memory_format: Any = None) -> bool:
    is_contig = getattr(input._backend, "is_contiguous", None)
    return True if is_contig is None else bool(is_contig(input._data))


def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """A view of `length` elements of `dim` from `start`."""
    d = normalize_dim("narrow", dim, input.ndim)
    size = input.shape[d]
    if start < 0:
        start += size
    if not (0 <= start <= size and 0 <= length and start + length <= size):
        raise IndexError(f"narrow(): start ({start}) + length ({length}) exceeds dimension "
                         f"size ({size}).")
    key = (slice(None),) * d + (slice(start, start + length),)
    return _index(input, indexing.parse_basic(input._data.shape, key), key)


def select(input: Tensor, dim: int, index: int) -> Tensor:
    d = normalize_dim("select", dim, input.ndim)
    key = (slice(None),) * d + (int(index),)
    return _index(input, indexing.parse_basic(input._data.shape, key), key)


def unbind(input: Tensor, dim: int = 0) -> tuple:
    d = normalize_dim("unbind", dim, input.ndim)
    return tuple(select(input, d, i) for i in range(input.shape[d]))


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join tensors along an existing dimension."""
    tensors = [x for x in tensors]
    if not tensors:
        raise RuntimeError("cat(): expected a non-empty list of Tensors")
    if not isinstance(tensors[0], Tensor):
        raise TypeError(f"cat(): expected a sequence of Tensors, got "
                        f"{type(tensors[0]).__name__}")
    # PyTorch skips legacy empty 1-D tensors of shape (0,)
    tensors = [x for x in tensors if not (x.ndim == 1 and x.shape[0] == 0)] or tensors[:1]
    d = normalize_dim("cat", dim, tensors[0].ndim)
    out = run("cat", *tensors, dim=d)
    if _grad_on(*tensors):
        record("CatBackward0", _bw_cat, tensors, out, dim=d,
               sizes=[x.shape[d] for x in tensors], dtypes=[x._dtype for x in tensors])
    return out


def _bw_cat(node, g):
    d = node.attrs["dim"]
    grads, start = [], 0
    for size, need, dtype_ in zip(node.attrs["sizes"], node.needs, node.attrs["dtypes"]):
        grads.append(to_dtype(narrow(g, d, start, size), dtype_) if need else None)
        start += size
    return tuple(grads)


concat = cat
concatenate = cat


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join tensors of one shape along a new dimension."""
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack(): expected a non-empty list of Tensors")
    shape = tuple(tensors[0].shape)
    for i, x in enumerate(tensors):
        if tuple(x.shape) != shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{fmt_shape(shape)} at entry 0 and {fmt_shape(tuple(x.shape))} "
                               f"at entry {i}")
    d = normalize_dim("stack", dim, len(shape) + 1)
    return cat([unsqueeze(x, d) for x in tensors], d)


def hstack(tensors: Sequence[Tensor]) -> Tensor:
    tensors = list(tensors)
    return cat(tensors, 0 if tensors[0].ndim == 1 else 1)


def vstack(tensors: Sequence[Tensor]) -> Tensor:
    return cat([x if x.ndim > 1 else unsqueeze(x, 0) for x in tensors], 0)


def split(input: Tensor, split_size_or_sections: Any, dim: int = 0) -> tuple:
    """Split into chunks of a given size, or of the given list of sizes (views)."""
    d = normalize_dim("split", dim, input.ndim)
    size = input.shape[d]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step <= 0 and size:
            raise RuntimeError(f"split(): split_size must be positive, got {step}")
        sizes = [builtins_min(step, size - s) for s in range(0, size, step)] if size else [0]
    else:
        sizes = list(split_size_or_sections)
        if builtins_sum(sizes) != size:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {size} "
                               f"(input tensor's size at dimension {d}), but got "
                               f"split_sizes={sizes}")
    out, start = [], 0
    for s in sizes:
        out.append(narrow(input, d, start, s))
        start += s
    return tuple(out)


def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple:
    """Split into `chunks` nearly equal pieces (views)."""
    if chunks <= 0:
        raise RuntimeError(f"chunk(): chunks must be greater than 0, got {chunks}")
    d = normalize_dim("chunk", dim, input.ndim)
    step = -(-input.shape[d] // chunks)
    return split(input, builtins_max(step, 1), d)


def tensor_split(input: Tensor, sections: int, dim: int = 0) -> tuple:
    d = normalize_dim("tensor_split", dim, input.ndim)
    n = input.shape[d]
    q, r = divmod(n, sections)
    return split(input, [q + 1 if i < r else q for i in range(sections)], d)


builtins_min, builtins_max, builtins_sum = _builtins.min, _builtins.max, _builtins.sum


# -- indexing -------------------------------------------------------------------------


def getitem(input: Tensor, key: Any) -> Tensor:
    """`input[key]`: basic indexing returns a view; tensor indices copy."""
    return _index(input, indexing.parse(input, key), key)


def _index(input: Tensor, parsed: indexing.ParsedIndex, key: Any) -> Tensor:
    out = run("getitem", input, *parsed.tensors, index=parsed.spec, shape=parsed.shape)
    if parsed.basic:
        _as_view(out, input, lambda b: getitem(b, key))
    if _state.enabled and input._requires_grad:
        record("SelectBackward0" if parsed.basic else "IndexBackward0", _bw_getitem, (input,),
               out, parsed=parsed, shape=tuple(input.shape))
    return out


def _bw_getitem(node, g):
    parsed = node.attrs["parsed"]
    return index_put_into_zeros(g, node.attrs["shape"], parsed)


def index_put_into_zeros(g: Tensor, shape: tuple, parsed: indexing.ParsedIndex) -> Tensor:
    """Zeros of `shape` with `g` written (accumulated, for tensor indices) at `parsed`."""
    out = zeros(shape, dtype=g.dtype, device=g.device)
    run_inplace("setitem", out, g, *parsed.tensors, index=parsed.spec,
                accumulate=not parsed.basic)
    if _state.enabled and g._requires_grad:
        record("IndexPutBackward0", _bw_index_put_zeros, (g,), out, parsed=parsed)
    return out


def _bw_index_put_zeros(node, gg):
    return _getitem_parsed(gg, node.attrs["parsed"])


def _getitem_parsed(x: Tensor, parsed: indexing.ParsedIndex) -> Tensor:
    out = run("getitem", x, *parsed.tensors, index=parsed.spec, shape=parsed.shape)
    if _state.enabled and x._requires_grad:
        record("IndexBackward0", _bw_getitem, (x,), out, parsed=parsed, shape=tuple(x.shape))
    return out


def setitem(input: Tensor, key: Any, value: Any) -> None:
    """`input[key] = value`, in place (differentiable through `value` and `input`)."""
    parsed = indexing.parse(input, key)
    if isinstance(value, Tensor):
        if value.device != input.device:
            raise RuntimeError(f"setitem: expected value on device {input.device}, got "
                               f"{value.device}")
        _check_castable("setitem", value._dtype, input._dtype)
    else:
        value = _operand(value, input)
        if not isinstance(value, Tensor):
            value = full((), value, dtype=input._dtype, device=input.device)
    from ember.core.ops import broadcast_shapes
    try:
        target = broadcast_shapes("setitem", tuple(value.shape), parsed.shape)
    except RuntimeError:
        target = None
    if target != parsed.shape:
        raise RuntimeError(f"setitem: shape mismatch: value tensor of shape "
                           f"{fmt_shape(tuple(value.shape))} cannot be broadcast to indexing "
                           f"result of shape {fmt_shape(parsed.shape)}")
    if not _grad_on(input, value):
        run_inplace("setitem", input, to_dtype(value, input._dtype), *parsed.tensors,
                    index=parsed.spec, accumulate=False)
        input._vc[0] += 1
        return

    def compute(old: Tensor) -> Tensor:
        return _index_put(old, parsed, to_dtype(value, input._dtype))
    _inplace(input, compute)


def _index_put(x: Tensor, parsed: indexing.ParsedIndex, value: Tensor) -> Tensor:
    """Out of place: a copy of `x` with `value` written at `parsed`."""
    out = run("clone", x)
    run_inplace("setitem", out, value, *parsed.tensors, index=parsed.spec, accumulate=False)
    if _grad_on(x, value):
        record("IndexPutBackward0", _bw_index_put, (x, value), out, parsed=parsed,
               vshape=tuple(value.shape))
    return out


def _bw_index_put(node, g):
    parsed = node.attrs["parsed"]
    gx = gv = None
    if node.needs[0]:
        gx = _index_put(g, parsed, zeros((), dtype=g.dtype, device=g.device))
    if node.needs[1]:
        gv = sum_to_shape(_getitem_parsed(g, parsed), node.attrs["vshape"])
    return gx, gv


def gather(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """Values of `input` along `dim` at `index`."""
    d = normalize_dim("gather", dim, input.ndim)
    indexing._check_bounds(index, input.shape[d], d)
    out = run("gather", input, index, dim=d)
    if _state.enabled and input._requires_grad:
        record("GatherBackward0", _bw_gather, (input,), out, saved=(index,), dim=d,
               shape=tuple(input.shape))
    return out


def _bw_gather(node, g):
    (index,) = node.saved_tensors
    z = zeros(node.attrs["shape"], dtype=g.dtype, device=g.device)
    if index.shape[node.attrs["dim"]] == 1:  # one pick per row: no repeats to add up
        return scatter(z, node.attrs["dim"], index, g)
    return scatter_add(z, node.attrs["dim"], index, g)


def scatter(input: Tensor, dim: int, index: Tensor, src: Any = None, *, value: Any = None,
            reduce: str | None = None) -> Tensor:
    """A copy of `input` with `src` (or `value`) written along `dim` at `index`."""
    if reduce is not None:
        if reduce != "add":
            raise RuntimeError(f"scatter(): reduce={reduce!r} is not supported (use 'add')")
        return scatter_add(input, dim, index, src)
    d = normalize_dim("scatter", dim, input.ndim)
    if src is None:
        src = value
    if not isinstance(src, Tensor):
        src = full(tuple(index.shape), src, dtype=input.dtype, device=input.device)
    indexing._check_bounds(index, input.shape[d], d)
    out = run("scatter", input, index, to_dtype(src, input._dtype), dim=d)
    if _grad_on(input, src):
        record("ScatterBackward0", _bw_scatter, (input, None, src), out, saved=(index,), dim=d,
               sshape=tuple(src.shape))
    return out


def _bw_scatter(node, g):
    (index,) = node.saved_tensors
    d = node.attrs["dim"]
    gx = scatter(g, d, index, 0.0) if node.needs[0] else None
    gs = _pad_to(gather(g, d, index), node.attrs["sshape"]) if node.needs[2] else None
    return gx, None, gs


def _pad_to(g: Tensor, shape: tuple) -> Tensor:
    """Zero-pad `g` up to `shape` (src may be larger than index in scatter)."""
    if tuple(g.shape) == shape:
        return g
    out = zeros(shape, dtype=g.dtype, device=g.device)
    key = tuple(slice(0, s) for s in g.shape)
    return _index_put(out, indexing.parse(out, key), g)


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """A copy of `input` with `src` added along `dim` at `index` (repeats accumulate)."""
    d = normalize_dim("scatter_add", dim, input.ndim)
    indexing._check_bounds(index, input.shape[d], d)
    out = run("scatter_add", input, index, to_dtype(src, input._dtype), dim=d)
    if _grad_on(input, src):
        record("ScatterAddBackward0", _bw_scatter_add, (input, None, src), out,
               saved=(index,), dim=d, sshape=tuple(src.shape))
    return out


def _bw_scatter_add(node, g):
    (index,) = node.saved_tensors
    gs = _pad_to(gather(g, node.attrs["dim"], index), node.attrs["sshape"]) \
        if node.needs[2] else None
    return (g if node.needs[0] else None), None, gs


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """Entries of `input` along `dim` at the 1-D `index`."""
    d = normalize_dim("index_select", dim, input.ndim)
    indexing._check_bounds(index, input.shape[d], d)
    out = run("index_select", input, index, dim=d)
    if _state.enabled and input._requires_grad:
        record("IndexSelectBackward0", _bw_index_select, (input,), out, saved=(index,), dim=d,
               shape=tuple(input.shape))
    return out


def _bw_index_select(node, g):
    (index,) = node.saved_tensors
    d = node.attrs["dim"]
    key = (slice(None),) * d + (reshape(index, (-1,)),)
    z = zeros(node.attrs["shape"], dtype=g.dtype, device=g.device)
    return index_put_into_zeros(g, tuple(z.shape), indexing.parse(z, key))


def masked_fill(input: Tensor, mask: Tensor, value: Any) -> Tensor:
    """A copy of `input` with `value` where `mask` is true."""
    if mask.dtype is not dt.bool_:
        raise RuntimeError(f"masked_fill only supports boolean masks, but got mask with dtype "
                           f"{mask.dtype}")
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError(f"masked_fill only supports a 0-dimensional value tensor, but "
                               f"got tensor with {value.ndim} dimension(s).")
        value = to_dtype(value, input._dtype)
    elif not input._dtype.is_floating_point:
        value = int(value) if input._dtype is not dt.bool_ else bool(value)
    else:
        value = float(value)
    out = where(mask, value, input)
    return out if out._dtype is input._dtype else to_dtype(out, input._dtype)


def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    input, mask = broadcast_tensors(input, mask)
    return getitem(input, mask)


def nonzero(input: Tensor, *, as_tuple: bool = False) -> Any:
    """Indices of the non-zero elements, one row per element (or one tensor per dim)."""
    out = run("nonzero", input)
    if as_tuple:
        if input.ndim == 0:  # PyTorch treats a 0-d tensor as 1-d here
            return (reshape(run("nonzero", reshape(input, (1,))), (-1,)),)
        return tuple(out[:, i] for i in range(input.ndim))
    return out


def take_along_dim(input: Tensor, indices: Tensor, dim: int) -> Tensor:
    return gather(input, dim, indices)


# -- linear algebra -------------------------------------------------------------------


def matmul(input: Tensor, other: Tensor) -> Tensor:
    """Matrix product with NumPy's rules for 1-D operands and batch broadcasting."""
    out = run("matmul", input, other)
    if _grad_on(input, other):
        label = {(1, 1): "DotBackward0", (2, 1): "MvBackward0", (2, 2): "MmBackward0",
                 (3, 3): "BmmBackward0"}.get((input.ndim, other.ndim), "MatmulBackward0")
        record(label, _bw_matmul, (input, other), out, saved=(input, other))
    return out


def _bw_matmul(node, g):
    a, b = node.saved_tensors
    if a.ndim == 1 and b.ndim == 1:  # a dot product: g is 0-d
        return (mul(g, b) if node.needs[0] else None), (mul(g, a) if node.needs[1] else None)
    a2 = unsqueeze(a, 0) if a.ndim == 1 else a
    b2 = unsqueeze(b, -1) if b.ndim == 1 else b
    g2 = g
    if a.ndim == 1:
        g2 = unsqueeze(g2, -2)
    if b.ndim == 1:
        g2 = unsqueeze(g2, -1)
    ga = gb = None
    if node.needs[0]:
        ga = matmul(g2, transpose(b2, -1, -2))
        ga = reshape(sum_to_shape(ga, tuple(a2.shape)), tuple(a.shape))
    if node.needs[1]:
        gb = matmul(transpose(a2, -1, -2), g2)
        gb = reshape(sum_to_shape(gb, tuple(b2.shape)), tuple(b.shape))
    return ga, gb


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    if input.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(f"mm: expected 2D tensors, got {input.ndim}D and {mat2.ndim}D")
    return matmul(input, mat2)


def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    if input.ndim != 3 or mat2.ndim != 3:
        raise RuntimeError(f"bmm: expected 3D tensors, got {input.ndim}D and {mat2.ndim}D")
    if input.shape[0] != mat2.shape[0]:
        raise RuntimeError(f"bmm: batch sizes must match, got {input.shape[0]} and "
                           f"{mat2.shape[0]}")
    return matmul(input, mat2)


def mv(input: Tensor, vec: Tensor) -> Tensor:
    return matmul(input, vec)


def dot(input: Tensor, other: Tensor) -> Tensor:
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"dot: 1D tensors expected, but got {input.ndim}D and "
                           f"{other.ndim}D tensors")
    return matmul(input, other)


def outer(input: Tensor, vec2: Tensor) -> Tensor:
    return mul(unsqueeze(input, 1), unsqueeze(vec2, 0))


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Any = 1,
          alpha: Any = 1) -> Tensor:
    prod_ = matmul(mat1, mat2)
    if alpha != 1:
        prod_ = mul(prod_, alpha)
    return add(mul(input, beta) if beta != 1 else input, prod_)


def einsum(equation: str, *operands: Any) -> Tensor:
    """Einstein summation, e.g. `einsum("bij,bjk->bik", a, b)` (no ellipsis yet)."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    eq_ = _expand_ellipsis(equation.replace(" ", ""), operands)
    out = run("einsum", *operands, equation=eq_)
    if _grad_on(*operands):
        record("EinsumBackward0", _bw_einsum, operands, out, saved=operands, equation=eq_)
    return out


def _expand_ellipsis(equation: str, operands: Sequence[Tensor]) -> str:
    """Rewrite `...` into explicit letters (NumPy's rules), so the rest of einsum only
    ever sees plain subscripts."""
    if "." not in equation:
        return equation
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise RuntimeError(f"einsum(): equation {equation!r} names {len(terms)} operands but "
                           f"{len(operands)} were given")
    spare = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
             if c not in equation]
    widths = [x.ndim - (len(t) - 3) if "..." in t else 0 for t, x in zip(terms, operands)]
    if _builtins.any(w < 0 for w in widths):
        raise RuntimeError(f"einsum(): operand has fewer dimensions than subscripts in "
                           f"{equation!r}")
    n = builtins_max(widths)
    letters = "".join(spare[:n])
    terms = [t.replace("...", letters[n - w:]) for t, w in zip(terms, widths)]
    if arrow:
        rhs = rhs.replace("...", letters)
    else:  # implicit output: broadcast dims first, then the letters that occur once
        joined = "".join(t for t in terms)
        rhs = letters + "".join(sorted(c for c in set(joined) - set(letters)
                                       if joined.count(c) == 1))
    return ",".join(terms) + "->" + rhs


def _bw_einsum(node, g):
    ops_ = node.saved_tensors
    eq_ = node.attrs["equation"]
    lhs, arrow, rhs = eq_.partition("->")
    terms = lhs.split(",")
    if not arrow:
        rhs = "".join(sorted(c for c in set(lhs) - {","} if lhs.count(c) == 1))
    grads = []
    for i, (term, x) in enumerate(zip(terms, ops_)):
        if not node.needs[i]:
            grads.append(None)
            continue
        if len(set(term)) != len(term):
            raise RuntimeError(f"einsum backward: repeated subscripts in {term!r} are not "
                               "supported")
        others = [t for j, t in enumerate(terms) if j != i]
        avail = set(rhs).union(*others) if others else set(rhs)
        kept = "".join(c for c in term if c in avail)
        sub_eq = ",".join(others + [rhs]) + "->" + kept
        gi = einsum(sub_eq, *[o for j, o in enumerate(ops_) if j != i], g)
        if kept != term:  # letters summed only within this operand: broadcast back
            shape = tuple(x.shape[term.index(c)] if c in kept else 1 for c in term)
            gi = expand(reshape(gi, shape), tuple(x.shape))
        grads.append(_grad_for(gi, (tuple(x.shape), x._dtype)))
    return tuple(grads)


# -- composites with optional fused kernels -------------------------------------------


def _fused(op: str, x: Tensor, **attrs: Any) -> Tensor | None:
    """Run a backend's fused kernel for composite `op`, if it has one (not while tracing:
    a trace records the decomposition, so it can be replayed and exported)."""
    kernel = x._backend.kernels.get(op)
    if kernel is None or tracing.active is not None:
        return None
    return Tensor._make(kernel(x._data, **attrs), x._dtype, x._device, x._backend)


@tracing.composite("softmax")
def softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """`exp(x) / sum(exp(x), dim)`, computed stably."""
    if dtype is not None:
        input = to(input, dtype=dtype)
    if not input._dtype.is_floating_point:
        raise RuntimeError(f"softmax: expected a floating-point input, got {input._dtype}")
    d = normalize_dim("softmax", dim, input.ndim)
    out = _fused("softmax", input, dim=d)
    if out is None:
        with ag.no_grad():
            e = exp(sub(input, amax(input, d, keepdim=True)))
            out = div(e, sum(e, d, keepdim=True))
    if _state.enabled and input._requires_grad:
        record("SoftmaxBackward0", _bw_softmax, (input,), out, saved=(out,), dim=d)
    return out


def _bw_softmax(node, g):
    (y,) = node.saved_tensors
    d = node.attrs["dim"]
    return mul(y, sub(g, sum(mul(g, y), d, keepdim=True)))


@tracing.composite("log_softmax")
def log_softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """`x - logsumexp(x, dim)`, computed stably."""
    if dtype is not None:
        input = to(input, dtype=dtype)
    if not input._dtype.is_floating_point:
        raise RuntimeError(f"log_softmax: expected a floating-point input, got "
                           f"{input._dtype}")
    d = normalize_dim("log_softmax", dim, input.ndim)
    out = _fused("log_softmax", input, dim=d)
    if out is None:
        with ag.no_grad():
            shifted = sub(input, amax(input, d, keepdim=True))
            out = sub(shifted, log(sum(exp(shifted), d, keepdim=True)))
    if _state.enabled and input._requires_grad:
        record("LogSoftmaxBackward0", _bw_log_softmax, (input,), out, saved=(out,), dim=d)
    return out


def _bw_log_softmax(node, g):
    (y,) = node.saved_tensors
    d = node.attrs["dim"]
    return sub(g, mul(exp(y), sum(g, d, keepdim=True)))


# -- in-place ops ---------------------------------------------------------------------


def _check_castable(op: str, src: dt.dtype, dst: dt.dtype) -> None:
    if src._category > dst._category:
        raise RuntimeError(f"{op}: result type {src} can't be cast to the desired output type "
                           f"{dst}")


def _write(x: Tensor, result: Tensor, op: str) -> None:
    """Copy `result` into `x`'s storage (checks first, so a failure changes nothing)."""
    if result._data.shape != x._data.shape:
        raise RuntimeError(f"{op}: output with shape {fmt_shape(tuple(x.shape))} doesn't match "
                           f"the broadcast shape {fmt_shape(tuple(result.shape))}")
    _check_castable(op, result._dtype, x._dtype)
    if result._device is not x._device:
        raise RuntimeError(f"{op}: expected all tensors to be on the same device, but found "
                           f"at least two devices, {x._device} and {result._device}!")
    write_into(x, result)


def _check_inplace_allowed(x: Tensor) -> None:
    if x._requires_grad and x._node is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    base = x._base
    if base is not None and x._view_fn is not None and base._requires_grad and \
            base._node is None:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")


def _inplace(x: Tensor, compute, *others: Any, op: str = "inplace") -> Tensor:
    """Run `compute(x)` out of place and write the result into `x`.

    When autograd records, `x`'s old value is kept as a clone (ops that saved it stay
    valid), and `x` — or, for a view, its base — takes the result's place in the graph.
    """
    if not (_state.enabled and (x._requires_grad or _builtins.any(
            isinstance(o, Tensor) and o._requires_grad for o in others))):
        _write(x, compute(x), op)
        return x
    _check_inplace_allowed(x)
    result = compute(clone(x))
    _write(x, result, op)
    if x._view_fn is None:
        x._node, x._output_nr = result._node, result._output_nr
        x._requires_grad = result._requires_grad
    else:
        _rebase_view(x, result)
    return x


def _rebase_view(x: Tensor, result: Tensor) -> None:
    """After an in-place write through view `x`, route the base's gradient through it."""
    base, fn = x._base, x._view_fn
    edges = (ag.edge_of(base), ag.edge_of(result) if result._requires_grad else None)
    node = ag.FnNode("CopySlices", _bw_copy_slices, edges, view_fn=fn,
                     meta=(tuple(base.shape), base._dtype, base._device))
    base._node, base._output_nr, base._requires_grad = node, 0, True
    fresh = fn(base)
    x._node, x._output_nr, x._requires_grad = fresh._node, fresh._output_nr, True


def _bw_copy_slices(node, g):
    fn = node.attrs["view_fn"]
    gb = None
    if node.needs[0]:
        mask = zeros_like(g)
        with ag.no_grad():
            fill_(fn(mask), 1.0)
        gb = mul(g, rsub(mask, 1.0))
    return gb, (fn(g) if node.needs[1] else None)


def fill_(x: Tensor, value: Any) -> Tensor:
    if isinstance(value, Tensor):
        return _inplace(x, lambda old: expand(to_dtype(value, x._dtype), tuple(x.shape)),
                        value, op="fill_")
    return _inplace(x, lambda old: full_like(old, value), op="fill_")


def zero_(x: Tensor) -> Tensor:
    return fill_(x, 0)


def copy_(x: Tensor, src: Tensor, non_blocking: bool = False) -> Tensor:
    """Copy `src` (broadcastable, any device or dtype) into `x`."""
    if not isinstance(src, Tensor):
        src = tensor(src, device=x.device)

    def compute(old: Tensor) -> Tensor:
        moved = to_dtype(to_device(src, x.device), x._dtype)
        return expand(moved, tuple(x.shape)) if tuple(moved.shape) != tuple(x.shape) \
            else moved
    return _inplace(x, compute, src, op="copy_")


def _make_inplace(name: str, fn):
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        return _inplace(self, lambda old: fn(old, *args, **kwargs), *args, op=name + "_")
    method.__name__ = name + "_"
    return method


def _recording(x: Tensor, other: Any = None) -> bool:
    return _state.enabled and (x._requires_grad or (isinstance(other, Tensor) and
                                                    other._requires_grad))


def _make_inplace_binary(op: str, fn):
    """`x.add_(y)` and friends: one kernel writing into x when autograd is not recording."""
    def method(self: Tensor, other: Any, **kwargs: Any) -> Tensor:
        if kwargs or _recording(self, other):
            return _inplace(self, lambda old: fn(old, other, **kwargs), other, op=op + "_")
        if not isinstance(other, Tensor):
            other = _operand(other, self)
        return run_binary(op, self, other, out=self)
    method.__name__ = op + "_"
    return method


def _make_inplace_unary(op: str, fn):
    def method(self: Tensor) -> Tensor:
        if _recording(self):
            return _inplace(self, fn, op=op + "_")
        return run_unary_into(op, self)
    method.__name__ = op + "_"
    return method


_inplace_add = _make_inplace_binary("add", add)


def _add_(self: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
    if alpha != 1 and not _recording(self, other):
        other = mul(other, alpha)
        alpha = 1
    if alpha == 1:
        return _inplace_add(self, other)
    return _inplace(self, lambda old: add(old, other, alpha=alpha), other, op="add_")


def _sub_(self: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
    return _add_(self, other, alpha=-alpha)


def _addcmul_(self: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    if _state.enabled and (self._requires_grad or tensor1._requires_grad or
                           tensor2._requires_grad):
        return _inplace(self, lambda old: addcmul(old, tensor1, tensor2, value=value),
                        tensor1, tensor2, op="addcmul_")
    prod_ = mul(tensor1, tensor2)
    return run_binary("add", self, mul(prod_, value) if value != 1 else prod_, out=self)


def _addcdiv_(self: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    if _state.enabled and (self._requires_grad or tensor1._requires_grad or
                           tensor2._requires_grad):
        return _inplace(self, lambda old: addcdiv(old, tensor1, tensor2, value=value),
                        tensor1, tensor2, op="addcdiv_")
    q = div(tensor1, tensor2)
    return run_binary("add", self, mul(q, value) if value != 1 else q, out=self)


def uniform_(x: Tensor, a: float = 0.0, b: float = 1.0, *, generator: Any = None) -> Tensor:
    r = rand(tuple(x.shape), dtype=x.dtype, device=x.device, generator=generator)
    return _inplace(x, lambda old: add(mul(r, b - a), a), op="uniform_")


def normal_(x: Tensor, mean: float = 0.0, std: float = 1.0, *, generator: Any = None) -> Tensor:
    r = randn(tuple(x.shape), dtype=x.dtype, device=x.device, generator=generator)
    return _inplace(x, lambda old: add(mul(r, std), mean), op="normal_")


def bernoulli(input: Tensor, p: Any = None, *, generator: Any = None) -> Tensor:
    probs = input if p is None else full_like(input, p)
    r = rand(tuple(input.shape), dtype=probs.dtype if probs.dtype.is_floating_point else
             dt.get_default_dtype(), device=input.device, generator=generator)
    return to_dtype(lt(r, probs), input.dtype)


def index_fill(input: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    """A copy of `input` with `value` at positions `index` along `dim`."""
    d = normalize_dim("index_fill", dim, input.ndim)
    key = (slice(None),) * d + (reshape(index, (-1,)),)
    out = clone(input)
    setitem(out, key, value)
    return out


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *,
              alpha: Any = 1) -> Tensor:
    """A copy of `input` with `alpha * source` added at `index` along `dim` (repeats
    accumulate)."""
    d = normalize_dim("index_add", dim, input.ndim)
    indexing._check_bounds(index, input.shape[d], d)
    src = mul(source, alpha) if alpha != 1 else source
    shape = [1] * input.ndim
    shape[d] = index.numel()
    full_index = expand(reshape(index, tuple(shape)), tuple(src.shape))
    return scatter_add(input, d, full_index, to_dtype(src, input.dtype))


def _make_metadata_inplace(fn):
    """`x.squeeze_()` and friends: x itself becomes the reshaped view."""
    def method(self: Tensor, *args: Any) -> Tensor:
        result = fn(self, *args)
        self._data = result._data
        if result._node is not None:
            self._node, self._output_nr = result._node, result._output_nr
        return self
    method.__name__ = fn.__name__ + "_"
    return method


def bernoulli_(x: Tensor, p: Any = 0.5, *, generator: Any = None) -> Tensor:
    probs = p if isinstance(p, Tensor) else full_like(x, p, dtype=dt.float32)
    return copy_(x, bernoulli(probs, generator=generator))


def exponential_(x: Tensor, lambd: float = 1.0, *, generator: Any = None) -> Tensor:
    u = rand(tuple(x.shape), dtype=x.dtype, device=x.device, generator=generator)
    return copy_(x, div(neg(log1p(neg(u))), lambd))


def random_(x: Tensor, from_: int = 0, to: int | None = None, *,
            generator: Any = None) -> Tensor:
    if to is None:
        from_, to = 0, (2 ** 24 if x.dtype.is_floating_point else 2 ** 31)
    return copy_(x, randint(from_, to, tuple(x.shape), device=x.device, generator=generator))


def fill_diagonal_(x: Tensor, fill_value: Any, wrap: bool = False) -> Tensor:
    n = builtins_min(x.shape)
    idx = arange(n, device=x.device)
    setitem(x, tuple(idx for _ in range(x.ndim)), fill_value)
    return x


# -- Tensor methods -------------------------------------------------------------------


def _reflected(fn):
    return lambda self, other: fn(other, self)


_OPERAND_TYPES = (Tensor, int, float)


def _binary_method(fn):
    def method(self, other):
        if not isinstance(other, _OPERAND_TYPES) and not hasattr(other, "__array__") \
                and not isinstance(other, numbers.Number):
            return NotImplemented
        return fn(self, other)
    return method


def _binary_operator(op: str, reflected: bool = False):
    """`a + b` and friends: straight to the op, skipping the `alpha` handling."""
    def method(self, other):
        if not isinstance(other, _OPERAND_TYPES) and not hasattr(other, "__array__") \
                and not isinstance(other, numbers.Number):
            return NotImplemented
        return _binary(op, other, self) if reflected else _binary(op, self, other)
    return method


def _invert(x: Tensor) -> Tensor:
    return logical_not(x) if x.dtype is dt.bool_ else bitwise_not(x)


def _method_sum(self, dim=None, keepdim=False, *, dtype=None):
    return sum(self, dim, keepdim, dtype=dtype)


def _cuda(self, device: Any = None, non_blocking: bool = False) -> Tensor:
    return to_device(self, "cuda" if device is None else
                     (f"cuda:{device}" if isinstance(device, int) else device))


def _new(fn):
    def method(self, *size, dtype=None, device=None, requires_grad=False):
        return fn(*size, dtype=dtype or self.dtype, device=device or self.device,
                  requires_grad=requires_grad)
    return method


def _new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
    return full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                requires_grad=requires_grad)


def _new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
    return tensor(data, dtype=dtype or self.dtype, device=device or self.device,
                  requires_grad=requires_grad)


def _type(self, dtype: Any = None) -> Any:
    if dtype is None:
        return f"ember.{self.dtype.name.capitalize()}Tensor"
    return to(self, dtype=dtype)


def _as_dtype_method(d: dt.dtype):
    return lambda self, memory_format=None: to_dtype(self, d)


def _sizes_method(fn):
    return lambda self, *sizes: fn(self, *sizes)


def bind_methods(cls: type) -> None:
    """Attach the op functions to Tensor as methods and operators."""
    plain = {
        "abs": abs, "neg": neg, "negative": neg, "sign": sign, "floor": floor, "ceil": ceil,
        "trunc": trunc, "round": round, "relu": relu, "exp": exp, "log": log, "log2": log2,
        "log1p": log1p, "expm1": expm1, "sqrt": sqrt, "rsqrt": rsqrt, "sin": sin, "cos": cos,
        "tan": tan, "tanh": tanh, "sigmoid": sigmoid, "erf": erf, "asin": asin, "acos": acos,
        "atan": atan, "reciprocal": reciprocal, "square": square,
        "logical_not": logical_not, "isnan": isnan, "isinf": isinf, "isfinite": isfinite,
        "bitwise_not": bitwise_not,
        "add": add, "sub": sub, "subtract": sub, "mul": mul, "multiply": mul, "div": div,
        "divide": div, "true_divide": div, "floor_divide": floor_divide,
        "remainder": remainder, "pow": pow, "maximum": maximum, "minimum": minimum,
        "atan2": atan2, "eq": eq, "ne": ne, "lt": lt, "le": le, "gt": gt, "ge": ge,
        "greater": gt, "less": lt, "greater_equal": ge, "less_equal": le, "not_equal": ne,
        "logical_and": logical_and, "logical_or": logical_or, "logical_xor": logical_xor,
        "bitwise_and": bitwise_and, "bitwise_or": bitwise_or, "bitwise_xor": bitwise_xor,
        "equal": equal, "allclose": allclose, "isclose": isclose,
        "clamp": clamp, "clip": clamp, "clamp_min": clamp_min, "clamp_max": clamp_max,
        "lerp": lerp, "addcmul": addcmul, "addcdiv": addcdiv, "where": lambda self, c, o:
        where(c, self, o),
        "sum": _method_sum, "mean": mean, "prod": prod, "amax": amax, "amin": amin,
        "max": max, "min": min, "argmax": argmax, "argmin": argmin, "all": all, "any": any,
        "var": var, "std": std, "logsumexp": logsumexp, "norm": norm, "cumsum": cumsum,
        "count_nonzero": count_nonzero,
        "reshape": reshape, "view": view, "view_as": view_as, "reshape_as": reshape_as,
        "flatten": flatten, "unflatten": unflatten, "squeeze": squeeze,
        "unsqueeze": unsqueeze, "permute": permute, "transpose": transpose,
        "swapaxes": transpose, "swapdims": transpose, "t": t, "movedim": movedim,
        "expand": expand, "expand_as": expand_as, "broadcast_to": broadcast_to,
        "repeat": repeat, "tile": tile, "flip": flip, "tril": tril, "triu": triu,
        "clone": clone, "contiguous": contiguous, "is_contiguous": is_contiguous,
        "narrow": narrow, "select": select, "unbind": unbind, "split": split,
        "chunk": chunk, "tensor_split": tensor_split,
        "gather": gather, "scatter": scatter, "scatter_add": scatter_add,
        "index_select": index_select, "masked_fill": masked_fill,
        "masked_select": masked_select, "nonzero": nonzero,
        "matmul": matmul, "mm": mm, "bmm": bmm, "mv": mv, "dot": dot, "outer": outer,
        "softmax": softmax, "log_softmax": log_softmax,
        "to": to, "cpu": lambda self: to_device(self, "cpu"), "cuda": _cuda,
        "type": _type, "bernoulli": bernoulli,
        "fill_": fill_, "zero_": zero_, "copy_": copy_, "uniform_": uniform_,
        "normal_": normal_,
        "new_zeros": _new(zeros), "new_ones": _new(ones), "new_empty": _new(empty),
        "new_full": _new_full, "new_tensor": _new_tensor,
        "__getitem__": getitem, "__setitem__": setitem,
        "__matmul__": matmul, "__rmatmul__": _reflected(matmul),
        "__neg__": neg, "__pos__": lambda self: self, "__abs__": abs, "__invert__": _invert,
    }
    for name, fn in plain.items():
        setattr(cls, name, fn)
    for name, d in (("float", dt.float32), ("double", dt.float64), ("half", dt.float16),
                    ("bfloat16", dt.bfloat16), ("long", dt.int64), ("int", dt.int32),
                    ("short", dt.int16), ("char", dt.int8), ("byte", dt.uint8),
                    ("bool", dt.bool_)):
        setattr(cls, name, _as_dtype_method(d))
    operators = {"add": add, "sub": sub, "mul": mul, "truediv": div, "floordiv": floor_divide,
                 "mod": remainder, "pow": pow, "and": bitwise_and, "or": bitwise_or,
                 "xor": bitwise_xor}
    fast = {"add": "add", "sub": "sub", "mul": "mul", "truediv": "div", "pow": "pow",
            "floordiv": "floor_divide", "mod": "remainder"}
    for name, fn in operators.items():
        if name in fast:
            setattr(cls, f"__{name}__", _binary_operator(fast[name]))
            setattr(cls, f"__r{name}__", _binary_operator(fast[name], reflected=True))
            setattr(cls, f"__i{name}__", _make_inplace_binary(fast[name], fn))
        else:
            setattr(cls, f"__{name}__", _binary_method(fn))
            setattr(cls, f"__r{name}__", _binary_method(_reflected(fn)))
            setattr(cls, f"__i{name}__", _make_inplace(name, fn))
    for name in ("eq", "ne", "lt", "le", "gt", "ge"):
        setattr(cls, f"__{name}__", _binary_method(globals()[name]))
    inplace = {"pow": pow, "clamp": clamp, "clamp_min": clamp_min, "clamp_max": clamp_max,
               "round": round, "masked_fill": masked_fill, "scatter": scatter,
               "scatter_add": scatter_add, "lerp": lerp, "tril": tril, "triu": triu,
               "clip": clamp}
    for name, fn in inplace.items():
        setattr(cls, name + "_", _make_inplace(name, fn))
    for name, fn in (("mul", mul), ("div", div), ("remainder", remainder),
                     ("maximum", maximum), ("minimum", minimum)):
        setattr(cls, name + "_", _make_inplace_binary(name, fn))
    for name in ("neg", "abs", "exp", "log", "sqrt", "relu", "sigmoid", "tanh", "floor",
                 "ceil", "sign", "reciprocal", "sin", "cos", "log1p", "rsqrt", "trunc"):
        setattr(cls, name + "_", _make_inplace_unary(name, globals()[name]))
    cls.add_, cls.sub_ = _add_, _sub_
    cls.addcmul_, cls.addcdiv_ = _addcmul_, _addcdiv_
    for name, fn in (("floor_divide", floor_divide), ("atan2", atan2),
                     ("bitwise_and", bitwise_and), ("bitwise_or", bitwise_or),
                     ("bitwise_xor", bitwise_xor)):
        setattr(cls, name + "_", _make_inplace_binary(name, fn))
    for name in ("expm1", "erf"):
        setattr(cls, name + "_", _make_inplace_unary(name, globals()[name]))
    for name, fn in (("square", square), ("logical_not", logical_not),
                     ("index_fill", index_fill), ("index_add", index_add)):
        setattr(cls, name + "_", _make_inplace(name, fn))
    for name, fn in (("squeeze", squeeze), ("unsqueeze", unsqueeze), ("t", t),
                     ("transpose", transpose)):
        setattr(cls, name + "_", _make_metadata_inplace(fn))
    cls.index_fill, cls.index_add = index_fill, index_add
    cls.bernoulli_, cls.exponential_, cls.random_ = bernoulli_, exponential_, random_
    cls.fill_diagonal_ = fill_diagonal_
