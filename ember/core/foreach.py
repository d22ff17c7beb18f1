"""List ("foreach") ops for optimizer updates: one dispatch for a whole list of tensors.

PyTorch's `torch._foreach_*` names and semantics. A backend may provide a kernel named
`_foreach_<op>` taking lists of buffers (the CPU backend loops NumPy ufuncs writing in
place); without one, ember loops the per-tensor op, which works on every backend.
They do not record autograd (optimizer updates run under no_grad).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember.core import autograd as ag
from ember.core import functions as F
from ember.core.tensor import Tensor

# per-tensor meaning of each op: (x, *others, **attrs) -> new value (in-place ops) or result
_PER_TENSOR = {
    "add": lambda x, y, alpha=1: F.add(x, y, alpha=alpha),
    "sub": lambda x, y, alpha=1: F.sub(x, y, alpha=alpha),
    "mul": lambda x, y: F.mul(x, y),
    "div": lambda x, y: F.div(x, y),
    "maximum": lambda x, y: F.maximum(x, y),
    "addcmul": lambda x, a, b, value=1: F.addcmul(x, a, b, value=value),
    "addcdiv": lambda x, a, b, value=1: F.addcdiv(x, a, b, value=value),
    "lerp": lambda x, end, weight: F.lerp(x, end, weight),
    "sqrt": lambda x: F.sqrt(x),
    "neg": lambda x: F.neg(x),
    "zero": lambda x: F.zeros_like(x),
    "copy": lambda x, src: F.to(src, x.device, x.dtype),
}


def _check(op: str, xs: list, lists: list) -> None:
    """Same lengths, one device, no autograd recording; errors name `op`."""
    if not xs:
        return
    device = xs[0]._device
    for other in lists:
        if len(other) != len(xs):
            raise RuntimeError(f"{op}: tensor lists must have the same length, got "
                               f"{len(xs)} and {len(other)}")
    for i, group in enumerate(zip(xs, *lists)):
        for t in group:
            if isinstance(t, Tensor) and t._device is not device:
                raise RuntimeError(f"{op}: expected all tensors on {device}, but "
                                   f"tensor {i} is on {t._device}")
    if ag.is_grad_enabled() and any(x._requires_grad for x in xs):
        raise RuntimeError(f"{op}: list ops do not record autograd; run them under "
                           "ember.no_grad()")


def _apply(name: str, inplace: bool, xs: Sequence[Tensor], *args: Any, **attrs: Any):
    xs = list(xs)
    lists = [list(a) for a in args if isinstance(a, (list, tuple)) and a and
             isinstance(a[0], Tensor)]
    _check(f"_foreach_{name}{'_' if inplace else ''}", xs, lists)
    if not xs:
        return None if inplace else []
    backend = xs[0]._backend
    kernel = backend.kernels.get(f"_foreach_{name}{'_' if inplace else ''}")
    if kernel is not None:
        raw = [[t._data for t in a] if isinstance(a, (list, tuple)) and a and
               isinstance(a[0], Tensor) else a for a in args]
        result = kernel([x._data for x in xs], *raw, **attrs)
        if inplace:
            for x in xs:
                x._vc[0] += 1
            return None
        return [Tensor._make(buf, x._dtype, x._device, backend) for buf, x in zip(result, xs)]
    per_tensor = _PER_TENSOR[name]
    out = []
    with ag.no_grad():
        for i, x in enumerate(xs):
            others = [a[i] if isinstance(a, (list, tuple)) else a for a in args]
            own = {k: v[i] if isinstance(v, (list, tuple)) else v for k, v in attrs.items()}
            value = per_tensor(x, *others, **own)
            if inplace:
                F.copy_(x, value)
            else:
                out.append(value)
    return None if inplace else out


def _make(name: str, inplace: bool):
    def op(self: Sequence[Tensor], *args: Any, **kwargs: Any):
        return _apply(name, inplace, self, *args, **kwargs)
    op.__name__ = f"_foreach_{name}{'_' if inplace else ''}"
    op.__doc__ = f"`{name}` over a list of tensors{' in place' if inplace else ''}."
    return op


_foreach_add_ = _make("add", True)
_foreach_add = _make("add", False)
_foreach_sub_ = _make("sub", True)
_foreach_mul_ = _make("mul", True)
_foreach_mul = _make("mul", False)
_foreach_div_ = _make("div", True)
_foreach_div = _make("div", False)
_foreach_maximum_ = _make("maximum", True)
_foreach_addcmul_ = _make("addcmul", True)
_foreach_addcdiv_ = _make("addcdiv", True)
_foreach_lerp_ = _make("lerp", True)
_foreach_sqrt = _make("sqrt", False)
_foreach_sqrt_ = _make("sqrt", True)
_foreach_neg = _make("neg", False)
_foreach_zero_ = _make("zero", True)
_foreach_copy_ = _make("copy", True)


def _fused_sgd_(params: list[Tensor], grads: list[Tensor],
                momentum_buffers: list[Tensor | None], *, lr: float, momentum: float = 0.0,
                dampening: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False,
                maximize: bool = False) -> None:
    """One SGD step over lists of tensors on one device and dtype, in place, with
    PyTorch's update rule (the role of ``torch._fused_sgd_``).

    ``momentum_buffers`` has an entry per parameter (used when ``momentum != 0``); a None
    entry is replaced by a new buffer, the step's gradient, as on PyTorch's first step. A
    backend may provide a ``_fused_sgd_`` kernel (one pass per tensor where it can); it
    is called when every buffer exists. Otherwise the step runs as `_foreach_*` ops.
    """
    if not params:
        return
    _check("_fused_sgd_", params, [grads])
    kernel = params[0]._backend.kernels.get("_fused_sgd_")
    first_step = momentum != 0 and any(b is None for b in momentum_buffers)
    if kernel is not None and not first_step:
        bufs = [b._data for b in momentum_buffers] if momentum != 0 else None
        kernel([p._data for p in params], [g._data for g in grads], bufs, lr, momentum,
               dampening, weight_decay, nesterov, maximize)
        for t in params + (list(momentum_buffers) if momentum != 0 else []):
            t._vc[0] += 1
        return
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
            with ag.no_grad():
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


def _foreach_norm(self: Sequence[Tensor], ord: float = 2) -> list[Tensor]:
    """The p-norm of each tensor, as a list of 0-d tensors."""
    with ag.no_grad():
        return [F.norm(x, ord) for x in self]


__all__ = [n for n in dir() if n.startswith("_foreach_")] + ["_fused_sgd_"]
