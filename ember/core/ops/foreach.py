"""List ("foreach") ops for optimizer updates: one dispatch for a whole list of tensors.

PyTorch's `torch._foreach_*` names and semantics. Each is a composite whose fused kernel
of the same name takes lists of buffers (the CPU backend loops NumPy ufuncs writing in
place); without one, ember loops the per-tensor op, which works on every backend. They
do not record autograd (optimizer updates run under no_grad). `_fused_sgd_` is SGD's
whole update (the role of `torch._fused_sgd_`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ember.core import costs
from ember.core import dtype as dt
from ember.core.declare import composite, define, fused_kernel
from ember.core.dispatch import run_fused
from ember.core.errors import with_context
from ember.core.grad_mode import is_grad_enabled, no_grad
from ember.core.opdef import Cost, Kind
from ember.core.ops.elementwise import (
    add,
    addcdiv,
    addcmul,
    bool_negation_error,
    div,
    lerp,
    maximum,
    maximum_of,
    minimum,
    mul,
    sub,
)
from ember.core.ops.norms import linalg_vector_norm
from ember.core.ops.reduction import norm
from ember.core.tensor import Tensor

# per-tensor meaning of each op: (x, *others, **attrs) -> new value (in-place ops) or result
_PER_TENSOR: dict[str, Callable[..., Tensor]] = {
    "add": lambda x, y, alpha=1: add(x, y, alpha=alpha),
    "sub": lambda x, y, alpha=1: sub(x, y, alpha=alpha),
    "mul": lambda x, y: mul(x, y),
    "div": lambda x, y: div(x, y),
    "maximum": lambda x, y: maximum_of(x, y),
    "addcmul": lambda x, a, b, value=1: addcmul(x, a, b, value=value),
    "addcdiv": lambda x, a, b, value=1: addcdiv(x, a, b, value=value),
    "lerp": lambda x, end, weight: lerp(x, end, weight),
    "sqrt": lambda x: x.sqrt(),
    "neg": lambda x: -x,
    "zero": lambda x: x.new_zeros(x.shape),
    "copy": lambda x, src: src.to(x.device, x.dtype),
}
_SIGNATURES = {
    "add": "(xs, others | scalar | scalars, *, alpha=1)",
    "sub": "(xs, others | scalar | scalars, *, alpha=1)",
    "mul": "(xs, others | scalar | scalars)", "div": "(xs, others | scalar | scalars)",
    "maximum": "(xs, others)", "addcmul": "(xs, tensors1, tensors2, *, value=1)",
    "addcdiv": "(xs, tensors1, tensors2, *, value=1)", "lerp": "(xs, ends, weight)",
    "sqrt": "(xs)", "neg": "(xs)", "zero": "(xs)", "copy": "(xs, srcs)",
}


def _empty_list_error() -> RuntimeError:
    """PyTorch's refusal of an empty tensor list, for every list op."""
    return RuntimeError("Tensor list must have at least one tensor.")


def _check(op: str, xs: list, lists: list, scalars: list | None = None) -> None:
    """A list of one tensor or more, lists of the same length (`scalars`, a list of
    numbers, too), in PyTorch's words; no autograd recording. (Devices are checked by
    `run_fused` for the kernel, and by `_check_devices` before the per-tensor loop.)"""
    if not xs:
        raise with_context(_empty_list_error(), op)
    for other in lists:
        if len(other) != len(xs):
            raise with_context(RuntimeError(f"Tensor lists must have the same number of "
                                            f"tensors, got {len(xs)} and {len(other)}"), op)
    if scalars is not None and len(scalars) != len(xs):
        raise with_context(RuntimeError("Tensor list must have same number of elements as "
                                        "scalar list."), op)
    if is_grad_enabled() and any(x._requires_grad for x in xs):
        raise RuntimeError(f"{op}: list ops do not record autograd; run them under "
                           "ember.no_grad()")


def _check_devices(op: str, xs: list, lists: list) -> None:
    """Every tensor on the first one's device; the error names `op` and the tensor."""
    device = xs[0]._device
    for i, group in enumerate(zip(xs, *lists)):
        for t in group:
            if isinstance(t, Tensor) and t._device is not device:
                raise RuntimeError(f"{op}: expected all tensors on {device}, but "
                                   f"tensor {i} is on {t._device}")


def _is_list(a: Any) -> bool:
    return isinstance(a, (list, tuple)) and bool(a) and isinstance(a[0], Tensor)


def _list_op(name: str, inplace: bool) -> Callable[..., Any]:
    op = f"_foreach_{name}{'_' if inplace else ''}"
    per_tensor = _PER_TENSOR[name]

    def fn(self: Sequence[Tensor], *args: Any, **kwargs: Any) -> Any:
        xs = list(self)
        args = tuple(list(a) if _is_list(a) else a for a in args)
        lists = [a for a in args if _is_list(a)]
        scalars = [a for a in args if isinstance(a, (list, tuple)) and not _is_list(a)]
        _check(op, xs, lists, scalars[0] if scalars else None)
        if name == "neg" and any(x._dtype is dt.bool_ for x in xs):  # before any kernel
            raise bool_negation_error()
        # (shapes that differ broadcast in the per-tensor loop, or raise PyTorch's error)
        same = all(a[i].shape == x.shape for a in lists for i, x in enumerate(xs))
        fused = run_fused(op, xs, *args, **kwargs) if same else None
        if fused is not None:  # (a tuple out of place; in place, the list given, as PyTorch's)
            return self if inplace else tuple(fused)
        _check_devices(op, xs, lists)
        out = []
        with no_grad():
            for i, x in enumerate(xs):
                others = [a[i] if isinstance(a, (list, tuple)) else a for a in args]
                own = {k: v[i] if isinstance(v, (list, tuple)) else v for k, v in kwargs.items()}
                value = per_tensor(x, *others, **own)
                if inplace:
                    x.copy_(value)
                else:
                    out.append(value)
        return self if inplace else tuple(out)
    fn.__doc__ = f"`{name}` over a list of tensors{' in place' if inplace else ''}."
    return fn


def _list_cost(xs: Sequence[Any], *args: Any, **kwargs: Any) -> Cost:
    total = Cost()
    for x in xs:
        c = costs.pointwise(1)(x)
        total = Cost(total.flops + c.flops, total.bytes + c.bytes)
    return total


def _declare_list_op(name: str, inplace: bool) -> Callable[..., Any]:
    op = f"_foreach_{name}{'_' if inplace else ''}"
    fused_kernel(op, replaces=op, same_dtype=False,
                 outputs=() if inplace else ("each",), writes=(0,) if inplace else (),
                 signature=f"{op}{_SIGNATURES[name]} -> "
                           f"{'xs (written in place)' if inplace else 'list'}",
                 doc=f"`{name}` over lists of buffers in one call.")
    return define(op, Kind.COMPOSITE, _list_op(name, inplace), variants="function",
                  fused=(op,), cost=_list_cost, complex=name in _COMPLEX)


# the list ops whose tensor op takes complex tensors (SGD's update of complex parameters)
_COMPLEX = frozenset({"add", "sub", "mul", "div", "zero", "copy", "neg"})


_foreach_add_ = _declare_list_op("add", True)
_foreach_add = _declare_list_op("add", False)
_foreach_sub_ = _declare_list_op("sub", True)
_foreach_sub = _declare_list_op("sub", False)
_foreach_mul_ = _declare_list_op("mul", True)
_foreach_mul = _declare_list_op("mul", False)
_foreach_div_ = _declare_list_op("div", True)
_foreach_div = _declare_list_op("div", False)
_foreach_maximum_ = _declare_list_op("maximum", True)
_foreach_addcmul_ = _declare_list_op("addcmul", True)
_foreach_addcdiv_ = _declare_list_op("addcdiv", True)
_foreach_lerp_ = _declare_list_op("lerp", True)
_foreach_lerp = _declare_list_op("lerp", False)
_foreach_sqrt = _declare_list_op("sqrt", False)
_foreach_sqrt_ = _declare_list_op("sqrt", True)
_foreach_neg = _declare_list_op("neg", False)
_foreach_neg_ = _declare_list_op("neg", True)
_foreach_zero_ = _declare_list_op("zero", True)
_foreach_copy_ = _declare_list_op("copy", True)


# -- the rest of PyTorch's list ops --------------------------------------------------------
# No fused kernel: each loops its tensor op, so out of place it records autograd (as
# PyTorch's do) and in place it refuses a leaf that requires grad as the tensor op does.

def _binary_bound(bound: str) -> Callable[..., Tensor]:
    """`maximum`/`minimum` of a tensor and a tensor or a number (`clamp_min`/`clamp_max`
    with a number: PyTorch's list op takes both)."""
    def fn(x: Tensor, other: Any) -> Tensor:
        if isinstance(other, Tensor):
            return (maximum if bound == "min" else minimum)(x, other)
        return x.clamp_min(other) if bound == "min" else x.clamp_max(other)
    return fn


def _method(name: str) -> Callable[[Tensor], Tensor]:
    """The tensor method `name` (a unary op) as a function."""
    return lambda x: getattr(x, name)()


_MORE: dict[str, Callable[..., Tensor]] = {
    **{name: _method(name) for name in (
        "abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1",
        "floor", "frac", "lgamma", "log", "log10", "log1p", "log2", "reciprocal", "round",
        "rsqrt", "sigmoid", "sign", "sin", "sinh", "tan", "tanh", "trunc")},
    "maximum": _binary_bound("min"), "minimum": _binary_bound("max"),
    "clamp_min": _binary_bound("min"), "clamp_max": _binary_bound("max"),
    "pow": lambda x, exponent: x.pow(exponent),
    "addcmul": lambda x, a, b, value=1: addcmul(x, a, b, value=value),
    "addcdiv": lambda x, a, b, value=1: addcdiv(x, a, b, value=value),
    "clone": lambda x: x.clone(),
    "max": lambda x: x.max(),
}
_NO_INPLACE = frozenset({"maximum", "clone", "max", "addcmul", "addcdiv"})  # (declared above
# in place, or PyTorch has none)


def _check_list(op: str, xs: Any) -> list[Tensor]:
    """`xs` as a list, with PyTorch's errors for a tensor and for an empty list."""
    if isinstance(xs, Tensor) or not isinstance(xs, (list, tuple)):
        raise TypeError(f"{op}(): argument 'self' (position 1) must be tuple of Tensors, "
                        f"not {type(xs).__name__}")
    if not xs:
        raise _empty_list_error()
    return list(xs)


def _looped_list_op(name: str, inplace: bool) -> Callable[..., Any]:
    op = f"_foreach_{name}{'_' if inplace else ''}"
    per_tensor = _MORE[name]

    def fn(self: Any, *args: Any, **kwargs: Any) -> Any:
        if name == "pow" and not isinstance(self, (list, tuple, Tensor)):  # pow(number, xs)
            exps = _check_list(op, args[0] if args else kwargs["exponent"])
            return tuple(_rpow(self, x) for x in exps)
        xs = _check_list(op, self)
        args = tuple(list(a) if isinstance(a, (list, tuple)) else a for a in args)
        for other in (a for a in args if isinstance(a, list)):
            if len(other) != len(xs):
                _check(op, xs, [other])
        out = []
        for i, x in enumerate(xs):
            others = [a[i] if isinstance(a, list) else a for a in args]
            own = {k: v[i] if isinstance(v, (list, tuple)) else v for k, v in kwargs.items()}
            method = getattr(x, f"{name}_", None) if inplace else None
            if method is not None and name not in ("clamp_min", "clamp_max"):
                method(*others, **own)
            elif inplace:
                x.copy_(per_tensor(x, *others, **own))
            else:
                out.append(per_tensor(x, *others, **own))
        return self if inplace else tuple(out)
    fn.__doc__ = f"`{name}` of each tensor of a list{' in place' if inplace else ''}."
    return fn


def _rpow(base: float, x: Tensor) -> Tensor:
    """`base ** x` (PyTorch's `_foreach_pow(scalar, exponents)`)."""
    return base ** x


for _name in _MORE:
    for _inplace in (False, True):
        if _inplace and _name in _NO_INPLACE:
            continue
        _op = f"_foreach_{_name}{'_' if _inplace else ''}"
        globals()[_op] = define(_op, Kind.COMPOSITE, _looped_list_op(_name, _inplace),
                                variants="function", cost=_list_cost)
del _name, _inplace, _op


@composite(complex=True, variants="function", cost=_list_cost)
def _foreach_norm(self: Sequence[Tensor], ord: float = 2,
                  dtype: Any = None) -> tuple[Tensor, ...]:
    """The p-norm of each tensor, as a tuple of 0-d tensors (computed in, and of,
    `dtype` where given: `linalg.vector_norm`'s)."""
    if not self:
        raise _empty_list_error()
    with no_grad():
        if dtype is not None:
            return tuple(linalg_vector_norm(x, ord, dtype=dtype) for x in self)
        return tuple(norm(x, ord) for x in self)


@composite(complex=True, variants="function", fused="_fused_sgd_", cost=_list_cost)
def _fused_sgd_(params: list[Tensor], grads: list[Tensor],
                momentum_buffers: list[Tensor | None], *, lr: float, momentum: float = 0.0,
                dampening: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False,
                maximize: bool = False) -> None:
    """One SGD step over lists of tensors on one device and dtype, in place, with
    PyTorch's update rule (the role of ``torch._fused_sgd_``).

    ``momentum_buffers`` has an entry per parameter (used when ``momentum != 0``); a None
    entry is replaced by a new buffer, the step's gradient, as on PyTorch's first step. A
    backend's ``_fused_sgd_`` kernel (one pass per tensor where it can) runs when every
    buffer exists; otherwise the step runs as `_foreach_*` ops.
    """
    if not params:
        return
    _check("_fused_sgd_", params, [grads])
    first_step = momentum != 0 and any(b is None for b in momentum_buffers)
    if not first_step and run_fused(
            "_fused_sgd_", params, grads, momentum_buffers if momentum != 0 else None, lr,
            momentum, dampening, weight_decay, nesterov, maximize) is not None:
        return
    _check_devices("_fused_sgd_", params, [grads])
    if maximize:
        grads = _foreach_neg(grads)
    if weight_decay != 0:
        if maximize:  # `grads` is already a fresh list of tensors: reuse it
            _foreach_add_(grads, params, alpha=weight_decay)
        else:
            grads = _foreach_add(grads, params, alpha=weight_decay)
    if momentum != 0:
        bufs = momentum_buffers
        if first_step:  # buffers start as the gradient
            with no_grad():
                for i, grad in enumerate(grads):
                    if bufs[i] is None:
                        bufs[i] = grad.clone()
                    else:
                        bufs[i].mul_(momentum).add_(grad, alpha=1 - dampening)
        else:
            _foreach_mul_(bufs, momentum)
            _foreach_add_(bufs, grads, alpha=1 - dampening)
        # (PyTorch adds in place here, which would write into p.grad)
        grads = _foreach_add(grads, bufs, alpha=momentum) if nesterov else list(bufs)
    _foreach_add_(params, grads, alpha=-lr)


fused_kernel("_fused_sgd_", replaces="_fused_sgd_", same_dtype=False, outputs=(),
             writes=(0, 2),
             signature="_fused_sgd_(params, grads, momentum_buffers | None, lr, momentum, "
                       "dampening, weight_decay, nesterov, maximize) -> None",
             doc="SGD's whole update in place, every momentum buffer existing.")
