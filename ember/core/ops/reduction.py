"""Reductions and scans: `sum`, `mean`, `prod`, `max`/`min` and friends, `all`/`any`,
`var`/`std`, `logsumexp`, `norm`, `cumsum`.

Kernels (signatures of their rules):

    sum prod max min all any   kernel(input, dims=tuple|None, keepdim=) -> y; `dims=None`
                               reduces all. (`max`/`min` are amax/amin.)
    argmax argmin              kernel(input, dim=int|None, keepdim=) -> int64; None: over
                               the flattened tensor.
    cumsum                     kernel(input, dim=) -> y.
    topk                       kernel(input, k=, dim=, largest=) -> int64 indices of the k
                               largest (smallest) along `dim`, in order, NaN largest.
"""

from __future__ import annotations

import builtins  # this module defines sum, max, min, all and any: the ops
import math
import operator
import warnings
from collections.abc import Callable
from typing import Any

from ember.core import costs
from ember.core import dtype as dt
from ember.core import forward_ad as fw
from ember.core.apply import apply_labelled, record_grad
from ember.core.creation import arange, tensor, zeros
from ember.core.declare import check_outs, composite, fused_kernel, primitive, write_outs
from ember.core.dispatch import kernel_refuses, refuse_unsigned, run, run_fused, user_stacklevel
from ember.core.errors import (
    ArgumentTypeError,
    as_overload_check,
    invalid_combination,
    type_name,
    with_context,
)
from ember.core.function import Function, as_kernel
from ember.core.grad_mode import no_grad, state
from ember.core.graph import record
from ember.core.host import dtype_arg
from ember.core.opdef import OPS, Grad, OutMeta, metadata_rule
from ember.core.opdef import Precision as P
from ember.core.ops import introsort
from ember.core.ops.elementwise import conj, maximum, minimum, to_dtype, where
from ember.core.ops.indexing import SCALAR_TYPE_NAMES, gather_in_bounds, scatter
from ember.core.ops.shape import contiguous, expand, movedim, reshape, squeeze, unsqueeze
from ember.core.return_types import return_type
from ember.core.shapes import fmt_shape, normalize_dim, normalize_dims, reduced_shape
from ember.core.tensor import Tensor

# -- rules ----------------------------------------------------------------------------


def _reduction_rule(op: str):
    @metadata_rule
    def rule(input, *, dims=None, keepdim=False):
        if op in ("max", "min") and input.numel() == 0 and (
                dims is None or builtins.any(input.shape[d] == 0 for d in dims)):
            if dims is None:  # PyTorch's words for a whole empty tensor
                raise RuntimeError(f"{op}(): Expected reduction dim to be specified for "
                                   f"input.numel() == 0. Specify the reduction dim with the "
                                   f"'dim' argument.")
            raise RuntimeError(f"{op}: cannot reduce over a zero-size dimension "
                               f"(input shape {fmt_shape(input.shape)})")
        shape = reduced_shape(input.shape, dims, keepdim)
        if op in ("all", "any"):
            return OutMeta(shape, dt.bool_, None)
        if op in ("sum", "prod") and not input.dtype._differentiable:
            return OutMeta(shape, dt.int64, dt.int64)
        return OutMeta(shape, input.dtype, None)
    return rule


def _arg_rule(op: str):
    @metadata_rule
    def rule(input, *, dim=None, keepdim=False):
        if dim is None and input.numel() == 0:
            raise IndexError(f"{op}(): Expected reduction dim to be specified for "
                             f"input.numel() == 0.")
        if dim is not None and input.ndim and input.shape[dim] == 0:
            raise IndexError(f"{op}(): Expected reduction dim {dim} to have non-zero size.")
        dims = None if dim is None else (dim,)
        return OutMeta(reduced_shape(input.shape, dims, keepdim), dt.int64, None)
    return rule


@metadata_rule
def _cumsum_rule(input, *, dim):
    floating = input.dtype._differentiable  # (floating or complex: kept)
    return OutMeta(input.shape, input.dtype if floating else dt.int64,
                   None if floating else dt.int64)


# -- helpers --------------------------------------------------------------------------


# the signatures PyTorch's argument parser lists when a method's dim is not ints
_DIM_SIGNATURES = {
    "sum": ("(*, torch.dtype dtype = None)",
            "(tuple of ints dim, bool keepdim = False, *, torch.dtype dtype = None)"),
}
_DIM_SIGNATURES["mean"] = _DIM_SIGNATURES["sum"]


def _is_index(value: Any) -> bool:
    try:
        operator.index(value)
    except TypeError:
        return False
    return True


def _dim_type_error(op: str, dim: Any) -> TypeError:
    """PyTorch's refusal of a dim that is not an int or ints (its parser's words, as for
    the method called with `dim=`)."""
    got = type(dim).__name__
    if op not in _DIM_SIGNATURES:
        return TypeError(f"{op}(): argument 'dim' must be tuple of ints, not {got}")
    return invalid_combination(op, f"dim={got}, ", (
        sig.replace("torch.", dt.API_NAME + ".") for sig in _DIM_SIGNATURES[op]))


def check_bool(op: str, name: str, value: Any, position: int,
               function_form: Callable[[tuple, dict], TypeError | None] | None = None,
               method_form: Callable[[tuple, dict], TypeError | None] | None = None
               ) -> None:
    """PyTorch's argument parser refusing a bool parameter given anything but a bool
    (`x.sum(0, 1)`: an int is not a keepdim); `position` counts as for the method
    (`self` not counted): the op's entry renumbers it for the function form, or makes
    `function_form(args, kwargs)`'s error there (see ArgumentTypeError)."""
    if value.__class__ is not bool:
        raise ArgumentTypeError(op, name, position, "bool", value, function_form, method_form)


def _got(args: tuple, kwargs: dict) -> str:
    """The arguments' types as PyTorch's "invalid combination" lists them."""
    def name(a: Any) -> str:
        return "Tensor" if isinstance(a, Tensor) else type_name(a)
    return ", ".join([name(a) for a in args] + [f"{k}={name(v)}" for k, v in kwargs.items()])


def _mean_function_error(args: tuple, kwargs: dict) -> TypeError | None:
    """`torch.mean(x, 0, 1)`: no overload of the function takes an int keepdim (given a
    dtype, the one with it names the argument: None, the plain error)."""
    if "dtype" in kwargs:
        return None
    dtype = f"{dt.API_NAME}.dtype dtype = None, Tensor out = None)"
    return invalid_combination("mean", _got(args, kwargs), (
        f"(Tensor input, *, {dtype}",
        f"(Tensor input, tuple of ints dim, bool keepdim = False, *, {dtype}"))


def _max_min_function_error(op: str) -> Callable[[tuple, dict], TypeError | None]:
    """`torch.max(x, 0, 1)`: PyTorch's listing of max's (min's) three overloads, the
    first refusing the extra arguments."""
    def error(args: tuple, kwargs: dict) -> TypeError | None:
        if kwargs.keys() - {"keepdim"}:
            return None  # (its listing of several keywords follows no order ember can copy)
        if kwargs:
            note = "keywords were incorrect: keepdim"
        else:
            note = "arguments have invalid types: (" + ", ".join(
                ["Tensor"] + [f"!{type_name(a)}!" for a in args[1:]]) + ")"
        return invalid_combination(op, _got(args, kwargs), (
            "(Tensor input, *, Tensor out = None)\n      didn't match because some of the "
            f"{note}", "(Tensor input, Tensor other, *, Tensor out = None)",
            "(Tensor input, int dim, bool keepdim = False, *, tuple of Tensors out = None)"))
    return error


def _dims_arg(op: str, x: Tensor, dim: Any) -> tuple[int, ...] | None:
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return None
    if type(dim) is not int and not (_is_index(dim) or isinstance(dim, (tuple, list))
                                     and builtins.all(_is_index(d) for d in dim)):
        raise _dim_type_error(op, dim)
    dims = normalize_dims(op, dim, x.ndim)
    return None if x.ndim == 0 else dims  # a 0-d tensor's dim 0 (or -1) is all of it


def expand_back(g: Tensor, shape: tuple, dims: tuple | None, keepdim: bool) -> Tensor:
    """Broadcast a reduction's gradient back to the input's shape."""
    if not keepdim:
        if dims is None:
            g = reshape(g, (1,) * len(shape))
        else:
            g = reshape(g, tuple(1 if i in dims else s for i, s in enumerate(shape)))
    return expand(g, shape)


def _as_requested(out: Tensor, dtype: Any, op: str) -> Tensor:
    """An explicit `dtype=` is also the output dtype (ints otherwise accumulate in int64;
    the wrap-around of the narrower type is the same either way)."""
    return out if dtype is None else to_dtype(out, dtype_arg(dtype, op))


def _cast_first(input: Tensor, dtype: Any, op: str) -> Tensor:
    return input if dtype is None else to_dtype(input, dtype_arg(dtype, op))


def in_float32(compute: Callable[..., Tensor], input: Tensor, *args: Any,
               **kwargs: Any) -> Tensor:
    """`compute(input, ...)` of a half-precision `input` by PyTorch's CPU rule for its
    reductions and normalizations ("opmath"): in float32, rounded once to the input's
    dtype (not rounded after each step, as computing in the half dtype would)."""
    return to_dtype(compute(to_dtype(input, dt.float32), *args, **kwargs), input._dtype)


# -- sum, mean, prod ------------------------------------------------------------------


@primitive(complex=True, variants="function method out", rule=_reduction_rule("sum"),
           precision=P.FLOAT32, out_is_dtype=True, cost=costs.reduction(1), grad=Grad(
               input=lambda grad, input_shape, dims, keepdim: expand_back(
                   grad, input_shape, dims, keepdim)))
def sum(input: Tensor, dim: Any = None, keepdim: bool = False, *,  # noqa: A001
        dtype: Any = None) -> Tensor:
    """The sum of the elements over `dim` (all dimensions when None)."""
    check_bool("sum", "keepdim", keepdim, 2)
    input = _cast_first(input, dtype, "sum")
    dims = _dims_arg("sum", input, dim)
    out = apply_labelled(OPS["sum"], "SumBackward1" if dims is not None else "SumBackward0",
                         input, dims=dims, keepdim=keepdim)
    return _as_requested(out, dtype, "sum")


@composite(complex=True, variants="method", cost=costs.reduction(1))
def sum_to_size(self: Tensor, *size: Any) -> Tensor:
    """This tensor summed down to `size`, which it must broadcast to (the gradient of a
    broadcast)."""
    shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) \
        else tuple(size)
    if tuple(self.shape) == shape:
        return self
    lead = self.ndim - len(shape)
    if lead < 0 or builtins.any(s not in (1, n) for s, n in zip(shape, self.shape[lead:])):
        raise RuntimeError(f"size {{{list(shape)}}} is not expandable to size "
                           f"{{{list(self.shape)}}}.")
    dims = tuple(range(lead)) + tuple(
        i + lead for i, s in enumerate(shape) if s == 1 and self.shape[i + lead] != 1)
    out = sum(self, dims, keepdim=True) if dims else self
    return reshape(out, shape) if tuple(out.shape) != shape else out


def _mean_grad(grad, input_shape, dims, keepdim, n):
    return expand_back(grad, input_shape, dims, keepdim) / (n if n else float("nan"))


@composite(complex=True,
           variants="function method out", traced_as_node=True, cost=costs.reduction(1),
           grad=Grad(input=_mean_grad))
def mean(input: Tensor, dim: Any = None, keepdim: bool = False, *,
         dtype: Any = None) -> Tensor:
    """The mean of the elements over `dim` (all dimensions when None); floating tensors
    only."""
    check_bool("mean", "keepdim", keepdim, 2, _mean_function_error)
    input = _cast_first(input, dtype, "mean")
    if not input._dtype._differentiable:
        which = "Input" if dtype is None else "Optional"
        raise RuntimeError(f"mean(): could not infer output dtype. {which} dtype must be "
                           f"either a floating point or complex dtype. Got: "
                           f"{SCALAR_TYPE_NAMES.get(input._dtype.name, input._dtype)}")
    dims = _dims_arg("mean", input, dim)
    n = input.numel() if dims is None else math.prod(input.shape[d] for d in dims)
    with no_grad():  # (the sum primitive itself: `dims` are checked already)
        if input._dtype in dt.HALF_DTYPES:  # PyTorch's: the float32 sum's mean, rounded once
            out = in_float32(lambda x: run("sum", x, dims=dims, keepdim=keepdim) /
                             (n if n else float("nan")), input)
        else:
            out = run("sum", input, dims=dims, keepdim=keepdim) / (n if n else float("nan"))
    record_grad(OPS["mean"], (input,), {"dims": dims, "keepdim": keepdim, "n": n}, out,
                "MeanBackward1" if dims is not None else "MeanBackward0")
    return out


def _prod_keep(x: Tensor, dims: tuple | None) -> Tensor:
    if dims is None:
        return reshape(prod(reshape(x, (-1,))), (1,) * x.ndim)
    return prod(x, dims[0], keepdim=True)


def _prod_grad(grad, input, result, dims, keepdim):
    # PyTorch's prod_backward, conjugated for complex input: grad * conj(result / input)
    shape = tuple(input.shape)
    gy = expand_back(grad * conj(result), shape, dims, keepdim)
    # product of the others = y / x where x != 0; where x == 0, recompute without it
    is_zero = input == 0
    safe = input.where(input != 0, 1.0)
    others = expand_back(_prod_keep(safe, dims), shape, dims, True)
    zeros_count = expand_back(sum(to_dtype(is_zero, input.dtype), dims, keepdim=True), shape,
                              dims, True)
    g_full = expand_back(grad, shape, dims, keepdim)
    at_zero = where(zeros_count == 1.0, g_full * conj(others), 0.0)
    return where(is_zero, at_zero, gy / conj(safe))


@primitive(complex=True, variants="function method out", rule=_reduction_rule("prod"),
           precision=P.FLOAT32, out_is_dtype=True,
           cpu_precision=P.FLOAT32, cost=costs.reduction(1), grad=Grad(input=_prod_grad),
           node_label=lambda input, dim=None, *args, **kwargs:
           None if dim is None else "ProdBackward1")  # (PyTorch's prod.dim_int overload)
def prod(input: Tensor, dim: int | None = None, keepdim: bool = False, *,
         dtype: Any = None) -> Tensor:
    """The product of the elements over `dim` (all of them when None)."""
    check_bool("prod", "keepdim", keepdim, 2)
    input = _cast_first(input, dtype, "prod")
    if dim is not None and (isinstance(dim, bool) or not isinstance(dim, int)):
        raise TypeError(f"prod(): argument 'dim' must be int, not {type(dim).__name__} "
                        f"(prod reduces over one dim, or all of them)")
    dims = None if dim is None else (normalize_dim("prod", dim, input.ndim),)
    if not input.ndim:  # a 0-d tensor's dim 0 (or -1) is all of it
        dims = None
    out = apply_labelled(OPS["prod"], "ProdBackward0", input, dims=dims, keepdim=keepdim)
    return _as_requested(out, dtype, "prod")


# -- extremes -------------------------------------------------------------------------


def _extreme_grad(grad, input, result, dims, keepdim):
    shape = tuple(input.shape)
    hit = to_dtype(input == expand_back(result, shape, dims, keepdim), grad.dtype)
    count = sum(hit, dims, keepdim=True)
    return expand_back(grad, shape, dims, keepdim) * hit / count


def _nonempty_extreme(op: str, input: Tensor, dim: Any, dims: tuple | None) -> None:
    """PyTorch's refusals of amax/amin over an empty tensor: no dim given, or a given dim
    of size 0 (named as given)."""
    if dims is None:
        raise RuntimeError(f"{op}(): Expected reduction dim to be specified for input.numel() "
                           f"== 0. Specify the reduction dim with the 'dim' argument.")
    given = (dim,) if isinstance(dim, int) else tuple(dim)
    for g, d in zip(given, dims):
        if input.shape[d] == 0:
            raise IndexError(f"{op}(): Expected reduction dim {g} to have non-zero size.")


def _extreme(op: str, input: Tensor, dims: tuple | None, keepdim: bool,
             label: str | None = None) -> Tensor:
    return apply_labelled(OPS[op], label or ("AmaxBackward0" if op == "max" else
                                             "AminBackward0"), input, dims=dims,
                          keepdim=keepdim)


@composite(variants="function method out", exact_out="reduction", cost=costs.reduction(1))
def amax(input: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:
    """The maximum over `dim` (all dimensions when empty); the gradient is shared by
    ties."""
    check_bool("amax", "keepdim", keepdim, 2)
    refuse_unsigned("max_values_cpu", input)
    dims = _dims_arg("amax", input, dim)
    if 0 in input._data.shape:
        _nonempty_extreme("amax", input, dim, dims)
    return _extreme("max", input, dims, keepdim)


@composite(variants="function method out", exact_out="reduction", cost=costs.reduction(1))
def amin(input: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:
    """The minimum over `dim` (all dimensions when empty); the gradient is shared by
    ties."""
    check_bool("amin", "keepdim", keepdim, 2)
    refuse_unsigned("min_values_cpu", input)
    dims = _dims_arg("amin", input, dim)
    if 0 in input._data.shape:
        _nonempty_extreme("amin", input, dim, dims)
    return _extreme("min", input, dims, keepdim)


MaxResult = return_type("max", ["values", "indices"])
MinResult = return_type("min", ["values", "indices"])


def _max_min(op: str, input: Tensor, dim: Any, keepdim: bool) -> Any:
    if isinstance(dim, Tensor):  # max(a, b) is maximum(a, b)
        return maximum(input, dim) if op == "max" else minimum(input, dim)
    if dim is None:
        return _extreme(op, input, None, False, "MaxBackward1" if op == "max" else
                        "MinBackward1")
    check_bool(op, "keepdim", keepdim, 2, _max_min_function_error(op))
    refuse_unsigned(f"{op}_cpu", input)
    d = normalize_dim(op, dim, input.ndim)
    if not input.ndim:  # a 0-d tensor is its own max, at index 0
        flat = _max_min(op, reshape(input, (1,)), 0, False)
        return type(flat)(reshape(flat.values, ()), reshape(flat.indices, ()))
    if input.shape and input.shape[d] == 0:
        raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")
    with no_grad():  # one node, PyTorch's MaxBackward0 / MinBackward0
        both = run_fused("max_min_dim", input, dim=d, keepdim=keepdim, largest=op == "max")
        if both is not None:
            values, idx = both
        else:
            idx = run("argmax" if op == "max" else "argmin", input, dim=d, keepdim=True)
            values = gather_in_bounds(input, d, idx)
            if not keepdim:
                values, idx = squeeze(values, d), squeeze(idx, d)
    if state.enabled and input._requires_grad:
        record("MaxBackward0" if op == "max" else "MinBackward0", _select_back, (input,),
               values, saved=(idx,), dim=d, keepdim=keepdim, shape=tuple(input.shape))
    return (MaxResult if op == "max" else MinResult)(values, idx)


fused_kernel("max_min_dim", replaces="max", outputs=("like", "int64"),
             signature="max_min_dim(x, *, dim, keepdim, largest) -> (values, indices)",
             doc="The largest (smallest) element along `dim` and its index: the first "
                 "among ties, a NaN (the first) before any number, as argmax/argmin and a "
                 "gather at their indices give them; min(dim)'s too.")


def _select_back(node: Any, grad: Tensor) -> Tensor:
    """ATen's value_selecting_reduction_backward: the gradient scattered at the selected
    indices of zeros shaped as the input."""
    (idx,) = node.saved_tensors
    a = node.attrs
    if not a["keepdim"]:
        grad, idx = unsqueeze(grad, a["dim"]), unsqueeze(idx, a["dim"])
    return scatter(zeros(a["shape"], dtype=grad.dtype, device=grad.device), a["dim"], idx,
                   grad)


@primitive(rule=_reduction_rule("max"), cost=costs.reduction(1), variants="function method out",
           grad=Grad(input=_extreme_grad), fused=("max_min_dim",))
def max(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:  # noqa: A001
    """The largest element; with `dim`, a (values, indices) pair along it; with a tensor,
    the elementwise maximum."""
    return _max_min("max", input, dim, keepdim)


@primitive(rule=_reduction_rule("min"), cost=costs.reduction(1), variants="function method out",
           grad=Grad(input=_extreme_grad), fused=("max_min_dim",))
def min(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:  # noqa: A001
    """The smallest element; with `dim`, a (values, indices) pair along it; with a tensor,
    the elementwise minimum."""
    return _max_min("min", input, dim, keepdim)


def _no_bool(op: str, input: Tensor) -> None:
    """PyTorch's argmax and argmin refuse bool (its max and min with a dim do not)."""
    if input._dtype is dt.bool_:
        raise RuntimeError(f"{op}(): does not support bool input")


@primitive(rule=_arg_rule("argmax"), cost=costs.reduction(1))
def argmax(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """The index of the largest element (over the flattened tensor when `dim` is None)."""
    _no_bool("argmax", input)
    check_bool("argmax", "keepdim", keepdim, 2)
    d = None if dim is None else normalize_dim("argmax", dim, input.ndim)
    return run("argmax", input, dim=d, keepdim=keepdim)


@primitive(rule=_arg_rule("argmin"), cost=costs.reduction(1))
def argmin(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """The index of the smallest element (over the flattened tensor when `dim` is None)."""
    _no_bool("argmin", input)
    check_bool("argmin", "keepdim", keepdim, 2)
    d = None if dim is None else normalize_dim("argmin", dim, input.ndim)
    return run("argmin", input, dim=d, keepdim=keepdim)


TopkResult = return_type("topk", ["values", "indices"])


def _topk_rule(input, *, k, dim, largest=True):
    if input.dtype is dt.bool_:
        raise RuntimeError("topk does not support bool dtypes on CPU")
    size = input.shape[dim] if input.shape else 1
    if not 0 <= k <= size:
        raise RuntimeError("selected index k out of range")
    shape = tuple(input.shape)
    return OutMeta(shape[:dim] + (k,) + shape[dim + 1:] if shape else (), dt.int64, None)


@primitive(node_label="TopkBackward0",
           rule=_topk_rule, cost=costs.reduction(8))
def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True,
         *, out: Any = None) -> Any:
    """The `k` largest elements along `dim` (smallest with `largest=False`), as a named
    (values, indices) pair, largest first; NaN counts as larger than any number.
    `sorted=False` returns them in the order PyTorch's CPU selection leaves them. `out`
    is an optional (values, indices) pair of tensors to write the result into."""
    refuse_unsigned("topk_cpu", input)
    if isinstance(k, bool) or not isinstance(k, int):
        raise TypeError(f"topk(): argument 'k' (position 2) must be int, not "
                        f"{type(k).__name__}")
    check_bool("topk", "largest", largest, 3)
    check_bool("topk", "sorted", sorted, 4)
    d = normalize_dim("topk", dim, builtins.max(input.ndim, 1))
    if out is not None:
        return _topk_out(input, k, d, largest, out)
    if not input.ndim:  # a 0-d tensor: topk of its one element, then 0-d again
        x = reshape(input, (1,))
        idx = run("topk", x, k=k, dim=0, largest=bool(largest))
        return TopkResult(reshape(gather_in_bounds(x, 0, idx), ()) if k else
                          gather_in_bounds(x, 0, idx), reshape(idx, ()) if k else idx)
    idx = _topk_indices(input, k, d, bool(largest), bool(sorted))
    return TopkResult(gather_in_bounds(input, d, idx), idx)


def _topk_indices(input: Tensor, k: int, d: int, largest: bool, in_order: bool) -> Tensor:
    """The backend's topk indices, in PyTorch's CPU order where it is not the stable
    one: which of equal keys come first (and which make the cut), and the unsorted order
    `sorted=False` leaves (introsort.std_topk_order, emulated on the host for CPU
    tensors of up to TIE_ORDER_LIMIT elements)."""
    n = input.shape[d]
    if input.device.type != "cpu" or not 0 < k <= n or n < 2 or \
            input.numel() > introsort.TIE_ORDER_LIMIT:
        return run("topk", input, k=k, dim=d, largest=largest)
    if in_order:  # one more than asked: equal keys at the cut decide too
        wide = run("topk", input, k=builtins.min(k + 1, n), dim=d, largest=largest)
        values = gather_in_bounds(input, d, wide)
        m = wide.shape[d]
        a, b = values.narrow(d, 0, m - 1), values.narrow(d, 1, m - 1)
        if not bool(((a == b) | (a.isnan() & b.isnan())).any()):
            return wide if m == k else contiguous(wide.narrow(d, 0, k))
    rows = movedim(input, d, -1)
    order = [introsort.std_topk_order(row, k, largest, in_order)
             for row in reshape(rows, (-1, n)).tolist()]
    idx = tensor(order, dtype=dt.int64, device=input.device)
    return contiguous(movedim(reshape(idx, tuple(rows.shape[:-1]) + (k,)), -1, d))


def _topk_out(input: Tensor, k: int, d: int, largest: bool, out: Any) -> Any:
    return pair_out("topk", input, out, lambda: topk(input, k, d, largest))


def pair_out(name: str, input: Tensor, out: Any, compute: Any) -> Any:
    """An op with a (values, indices) result, written into `out`, a pair of tensors:
    PyTorch's `out=` for topk, sort, kthvalue and the like."""
    check_outs(name, out, 2)
    if state.enabled and builtins.any(
            isinstance(t, Tensor) and t._requires_grad for t in (input, *out)):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support "
                           "automatic differentiation, but one of the arguments requires "
                           "grad.")
    return write_outs(name, out, compute())


# -- logical --------------------------------------------------------------------------


def _all_any_error(op: str, function: bool) -> Callable[[tuple, dict], TypeError | None]:
    """`x.all(0, 1)`, `torch.any(x, 0, keepdim=1)`: PyTorch's listing of all's (any's)
    overloads refusing an int keepdim after an int dim (None: another call, whose listing
    ember leaves to the plain message)."""
    def error(args: tuple, kwargs: dict) -> TypeError | None:
        rest = args[1:]  # (the tensor, `self` of the method, comes first in both)
        if not rest or type(rest[0]) is not int or kwargs.keys() - {"keepdim"}:
            return None
        if kwargs:
            notes = ["keywords were incorrect: keepdim"] * 2
        else:
            kd = type_name(rest[1])
            notes = [f"arguments have invalid types: (!int!, !{kd}!)",
                     f"arguments have invalid types: (int, !{kd}!)"]
        notes = [f"\n      didn't match because some of the {note}" for note in notes]
        if function:
            first = ("(Tensor input, *, Tensor out = None)\n      didn't match because some "
                     "of the " + ("keywords were incorrect: keepdim" if kwargs else
                                  "arguments have invalid types: (Tensor, " + ", ".join(
                                      f"!{type_name(a)}!" for a in rest) + ")"))
            signatures = (first, "(Tensor input, tuple of ints dim = None, bool keepdim = "
                          "False, *, Tensor out = None)", "(Tensor input, int dim, bool "
                          "keepdim = False, *, Tensor out = None)")
        else:
            signatures = ("()", "(tuple of ints dim = None, bool keepdim = False)" + notes[0],
                          "(int dim, bool keepdim = False)" + notes[1])
        return invalid_combination(op, _got(args if function else rest, kwargs), signatures)
    return error


_ALL_FORMS = (_all_any_error("all", True), _all_any_error("all", False))
_ANY_FORMS = (_all_any_error("any", True), _all_any_error("any", False))


@primitive(complex=True, rule=_reduction_rule("all"), cost=costs.reduction(1))
def all(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """Whether every element over `dim` is nonzero (uint8 for a uint8 input, as PyTorch)."""
    check_bool("all", "keepdim", keepdim, 2, *_ALL_FORMS)
    out = run("all", input, dims=_dims_arg("all", input, dim), keepdim=keepdim)
    return to_dtype(out, dt.uint8) if input._dtype is dt.uint8 else out


@primitive(complex=True, rule=_reduction_rule("any"), cost=costs.reduction(1))
def any(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """Whether any element over `dim` is nonzero (uint8 for a uint8 input, as PyTorch)."""
    check_bool("any", "keepdim", keepdim, 2, *_ANY_FORMS)
    out = run("any", input, dims=_dims_arg("any", input, dim), keepdim=keepdim)
    return to_dtype(out, dt.uint8) if input._dtype is dt.uint8 else out


@composite(complex=True, cost=costs.reduction(1))
def count_nonzero(input: Tensor, dim: Any = None) -> Tensor:
    """The number of nonzero elements over `dim`."""
    refuse_unsigned("nonzero_count_cpu", input)
    return sum(input != 0, dim)


# -- statistics -----------------------------------------------------------------------


def _variance_overloads(op: str, method: bool) -> Any:
    """`fn` (var, std, var_mean, std_mean) behind PyTorch's overload match: `(dim,
    unbiased, keepdim)`, `(dim, *, correction, keepdim)` and `(unbiased)`, so a bool
    alone is `unbiased` (`x.std(True)`, over all elements), and an `unbiased` or
    `keepdim` that is no bool matches none (PyTorch's TypeError)."""
    def wrap(fn: Any) -> Any:
        def checked(input: Any, *args: Any, **kwargs: Any) -> Any:
            named = dict(zip(("dim", "unbiased", "keepdim"), args), **kwargs)
            if len(args) == 1 and not kwargs and isinstance(args[0], bool):  # (unbiased)
                return fn(input, unbiased=args[0])
            if builtins.any(k in named and not isinstance(named[k], bool)
                            for k in ("unbiased", "keepdim")) or isinstance(
                    named.get("dim"), bool):
                raise _variance_overload_error(op, method, args, kwargs)
            return fn(input, *args, **kwargs)
        return as_overload_check(checked, fn)
    return wrap


def _variance_overload_error(op: str, method: bool, args: tuple, kwargs: dict) -> TypeError:
    out = "" if op.endswith("_mean") else ", *, Tensor out = None"
    signatures = [f"(tuple of ints dim, bool unbiased = True, bool keepdim = False{out})",
                  "(tuple of ints dim = None, *, Number correction = None, bool keepdim = "
                  f"False{out.replace(', *', '')})", "(bool unbiased = True)"]
    if method:
        signatures = [sig.replace(", *, Tensor out = None", "").replace(
            ", Tensor out = None", "") for sig in signatures]
    else:
        signatures = [sig.replace("(", "(Tensor input, ", 1) for sig in signatures]
    got = ["Tensor"] * (not method) + [type(a).__name__ for a in args] + \
        [f"{k}={type(v).__name__}" for k, v in kwargs.items()]
    if "dim" in kwargs and isinstance(kwargs["dim"], bool):  # (its parser's own listing)
        return invalid_combination(op, ", ".join(got) + ", ", signatures,
                                   "      didn't match because some of the keywords were "
                                   "incorrect: dim\n")
    return invalid_combination(op, ", ".join(got), signatures)


def var(input: Tensor, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False,
        *, correction: Any = None) -> Tensor:
    """The variance over `dim`, with Bessel's correction by default (`correction=1`)."""
    return _variance("var", input, dim, unbiased, keepdim, correction)


_var = var
var = composite(complex=True, node_label="VarBackward0", traced_as_node=True,
                fused="variance", cost=costs.reduction(4),
                method=_variance_overloads("var", True)(_var))(
    _variance_overloads("var", False)(_var))


_NO_FREEDOM = ("{}(): degrees of freedom is <= 0. Correction should be strictly less than the "
               "reduction factor (input numel divided by output numel).")


def _variance(op: str, input: Tensor, dim: Any, unbiased: bool | None, keepdim: bool,
              correction: Any, root: bool = False) -> Tensor:
    """var's computation (std's with `root`); `op` (var, std, var_mean, std_mean) names it
    in PyTorch's warning when the correction leaves no degrees of freedom (the result is
    NaN)."""
    return _moments(op, input, dim, unbiased, keepdim, correction, root)[0]


def _moments(op: str, input: Tensor, dim: Any, unbiased: bool | None, keepdim: bool,
             correction: Any, root: bool = False, with_mean: bool = False) -> tuple:
    """(variance or its root, the mean where `with_mean`) by PyTorch's CPU algorithm: a
    real input is reduced in float64 whatever its dtype (its Welford reduction) and
    rounded once to the input's dtype, the mean too; the all-reduce of var and std (one
    result) takes the deviations from the mean in the input's own dtype. A complex
    input's variance is its real part's plus its imaginary part's."""
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    if not input._dtype._differentiable:
        names = op if op in ("var_mean", "std_mean") else "std and var"
        raise with_context(RuntimeError(f"{names} only support floating point and complex "
                                        "dtypes"), f"{op}: input of dtype {input._dtype}")
    if input._dtype.is_complex:
        variance = _moments(op, input.real, dim, unbiased, keepdim, correction)[0] + \
            _moments(op, input.imag, dim, unbiased, keepdim, correction)[0]
        return (_root(variance) if root else variance), \
            (mean(input, _dims_arg(op, input, dim), keepdim) if with_mean else None)
    dims = _dims_arg("var", input, dim)
    n = input.numel() if dims is None else math.prod(input.shape[d] for d in dims)
    if n - correction <= 0:
        warnings.warn(_NO_FREEDOM.format(op), UserWarning, stacklevel=user_stacklevel())
    own_mean = bool(n) and n == input.numel() and not with_mean and \
        input._dtype in _ALL_REDUCED
    if not (state.enabled and input._requires_grad or fw.active):  # (no tangent there)
        both = run_fused("variance", input, dims=dims, correction=correction,
                         keepdim=keepdim, root=root, own_mean=own_mean)
        if both is not None:
            return both
    wide = input if input._dtype is dt.float64 else to_dtype(input, dt.float64)
    centre = mean(wide, dims, keepdim=True)
    # PyTorch's CPU all-reduce: two passes about the mean in the input's own dtype
    centered = wide - (mean(input, dims, keepdim=True) if own_mean else centre)
    variance = sum(centered * centered, dims, keepdim) / (
        n - correction if n - correction > 0 else float("nan"))
    if root:
        variance = _root(variance)
    if input._dtype is not dt.float64:
        variance = to_dtype(variance, input._dtype)
    if not with_mean:
        return variance, None
    centre = centre if keepdim else reshape(centre, variance.shape)
    return variance, centre if input._dtype is dt.float64 else to_dtype(centre, input._dtype)


fused_kernel("variance", replaces="var", outputs=("like", "like"),
             signature="variance(x, *, dims, correction, keepdim, root, own_mean) -> "
                       "(var, mean)",
             doc="var (std where `root`) over `dims` and the mean, reduced in float64 and "
                 "rounded to x's dtype; the deviations from the mean in x's own dtype where "
                 "`own_mean` (PyTorch's CPU all-reduce of var and std).")

_ALL_REDUCED = (dt.float32, dt.float64)


def std(input: Tensor, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False,
        *, correction: Any = None) -> Tensor:
    """The standard deviation over `dim` (see `var`)."""
    return _variance("std", input, dim, unbiased, keepdim, correction, root=True)


_std = std
std = composite(complex=True, node_label="StdBackward0", cost=costs.reduction(5),
                method=_variance_overloads("std", True)(_std))(
    _variance_overloads("std", False)(_std))


def _root(variance: Tensor) -> Tensor:
    """`variance.sqrt()` with PyTorch's std gradient: zero where the variance is zero (a
    constant input), not sqrt's infinite slope times zero."""
    if not variance.requires_grad:
        return variance.sqrt()
    zero = variance == 0
    return where(zero, 0.0, where(zero, 1.0, variance).sqrt())


@composite(complex=True, node_label="VarMeanBackward0",
           variants="function", cost=costs.reduction(5))
@_variance_overloads("var_mean", False)
def var_mean(input: Tensor, dim: Any = None, unbiased: bool | None = None,
             keepdim: bool = False, *, correction: Any = None) -> tuple:
    """(`var`, `mean`) over `dim`."""
    return _with_mean("var_mean", input, dim, unbiased, keepdim, correction, False)


@composite(complex=True, node_label="StdMeanBackward0",
           variants="function", cost=costs.reduction(5))
@_variance_overloads("std_mean", False)
def std_mean(input: Tensor, dim: Any = None, unbiased: bool | None = None,
             keepdim: bool = False, *, correction: Any = None) -> tuple:
    """(`std`, `mean`) over `dim`."""
    return _with_mean("std_mean", input, dim, unbiased, keepdim, correction, True)


def _with_mean(op: str, input: Tensor, dim: Any, unbiased: bool | None, keepdim: bool,
               correction: Any, root: bool) -> tuple:
    """(var or std, mean) of var_mean and std_mean."""
    return _moments(op, input, dim, unbiased, keepdim, correction, root, with_mean=True)


@composite(complex=True, node_label="LogsumexpBackward0",
           traced_as_node=True, precision=P.FLOAT32, cost=costs.reduction(10))
def logsumexp(input: Tensor, dim: Any, keepdim: bool = False) -> Tensor:
    """`log(sum(exp(input), dim))`, computed stably: shifted by the maximum (of the real
    parts, for complex input, as PyTorch)."""
    check_bool("logsumexp", "keepdim", keepdim, 2)
    dims = _dims_arg("logsumexp", input, dim)
    if not (input._dtype.is_floating_point or input._dtype.is_complex):
        input = to_dtype(input, dt.get_default_dtype())  # as PyTorch: the default float dtype
    if not input.numel():  # no maximum to shift by: the sum of no terms is 0, its log -inf
        return input.exp().sum(dims, keepdim).log()
    with no_grad():
        m = amax(input.real if input._dtype.is_complex else input,
                 dims if dims is not None else (), keepdim=True)
        m = where(m.isinf(), 0.0, m)
    out = ((input - m).exp().sum(dims, keepdim=True)).log() + m
    if not keepdim:
        out = reshape(out, tuple(s for i, s in enumerate(input.shape)
                                 if dims is not None and i not in dims))
    return out


def _norm2_grad(grad, input, result, dims, keepdim):
    shape = tuple(input.shape)
    norm_ = expand_back(result, shape, dims, keepdim)
    scale = where(norm_ == 0, 0.0, input / norm_)  # 0 at a zero vector, as PyTorch
    return expand_back(grad, shape, dims, keepdim) * scale


@as_kernel("LinalgVectorNormBackward0", 1)
class _CountNorm(Function):
    """The 0-"norm" (the count of non-zeros): PyTorch records its node, whose gradient is
    undefined (the input's `.grad` stays None), not a graph that ends before it."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, dims: Any, keepdim: bool) -> Tensor:
        return sum(to_dtype(x != 0, x.dtype), dims, keepdim)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[None, None, None]:
        return None, None, None


@composite(complex=True, node_label="LinalgVectorNormBackward0",
           precision=P.FLOAT32, cost=costs.reduction(2),
           grad=Grad(input=_norm2_grad))
def norm(input: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False,
         dtype: Any = None) -> Tensor:
    """The vector p-norm over `dim` (the Frobenius norm by default); of a complex tensor,
    the norm of its magnitudes (a real result)."""
    check_bool("linalg_vector_norm", "keepdim", keepdim, 3)  # (norm calls it: see check_bool)
    input = _cast_first(input, dtype, "norm")
    if input.dtype.is_complex:
        return norm(input.abs(), p, dim, keepdim)
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor "
                           f"as input. Got {SCALAR_TYPE_NAMES[input.dtype.name]}")
    if input._dtype in dt.HALF_DTYPES and (not isinstance(p, str) or p == "fro"):
        return in_float32(norm, input, p, dim, keepdim)
    dims = _dims_arg("norm", input, dim)
    if p in ("fro", 2, 2.0):
        with no_grad():
            out = sum(input * input, dims, keepdim).sqrt()
        if state.enabled:
            record_grad(OPS["norm"], (input,), {"dims": dims, "keepdim": keepdim}, out,
                        "NormBackward1" if dims is not None else "NormBackward0")
        return out
    if p in (math.inf, float("inf")):
        return _extreme("max", input.abs(), dims, keepdim)
    if p in (-math.inf, float("-inf")):
        return _extreme("min", input.abs(), dims, keepdim)
    if p == 1:
        return sum(input.abs(), dims, keepdim)
    if p == 0:
        return _CountNorm.apply(input, dims, keepdim)
    if isinstance(p, str):  # "nuc" (or a bad order): a matrix norm over `dim`, all when None
        matrix_norm = OPS["linalg_matrix_norm"].fn  # (by name: norms.py imports this module)
        if dims is None:  # (PyTorch refuses a bad order before it looks at the dimensions)
            dims = tuple(range(input.ndim)) if p == "nuc" else (-2, -1)
        return matrix_norm(input, p, dims, keepdim)
    return sum(input.abs() ** p, dims, keepdim) ** (1.0 / p)




# -- scans ----------------------------------------------------------------------------


@primitive(complex=True,
           variants="function method inplace out", rule=_cumsum_rule, precision=P.FLOAT32,
           cost=costs.reduction(1),
           grad=Grad(input=lambda grad, dim: grad.flip((dim,)).cumsum(dim).flip((dim,))))
def cumsum(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """The cumulative sum along `dim`."""
    input = _cast_first(input, dtype, "cumsum")
    d = normalize_dim("cumsum", dim, input.ndim)
    if not input.ndim:  # a 0-d tensor: the sum of its one element, still 0-d
        return reshape(cumsum(reshape(input, (1,)), 0, dtype=dtype), ())
    out = apply_labelled(OPS["cumsum"], "CumsumBackward0", input, dim=d)
    return _as_requested(out, dtype, "cumsum")


# -- NaN-ignoring reductions, aminmax, trace, renorm ----------------------------------

AminmaxResult = return_type("aminmax", ["min", "max"])


@composite(variants="function method out", cost=costs.reduction(2), node_label="NansumBackward0")
def nansum(input: Tensor, dim: Any = None, keepdim: bool = False, *,
           dtype: Any = None) -> Tensor:
    """The sum over `dim`, counting NaN as zero."""
    check_bool("nansum", "keepdim", keepdim, 2)
    if input._dtype.is_floating_point:
        input = where(input.isnan(), 0.0, input)
    return sum(input, dim, keepdim, dtype=dtype)


@composite(variants="function method out", cost=costs.reduction(3))
def nanmean(input: Tensor, dim: Any = None, keepdim: bool = False, *,
            dtype: Any = None) -> Tensor:
    """The mean over `dim` of the elements that are not NaN."""
    check_bool("nanmean", "keepdim", keepdim, 2)
    if not input._dtype.is_floating_point and dtype is None:
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex "
                           f"dtype but got {SCALAR_TYPE_NAMES.get(input.dtype.name, input.dtype)}")
    input = _cast_first(input, dtype, "nanmean")
    numbers = sum(input.isnan().logical_not(), dim, keepdim)
    return nansum(input, dim, keepdim) / numbers


@composite(variants="function method out", cost=costs.reduction(2))
def aminmax(input: Tensor, *, dim: int | None = None, keepdim: bool = False) -> Any:
    """The minimum and maximum over `dim` (all elements when None), as a named
    (min, max) pair."""
    check_bool("aminmax", "keepdim", keepdim, 0)  # (keyword-only: no position shown)
    refuse_unsigned("aminmax_cpu", input)
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as "
                               "the operation has no identity.")
        lo, hi = amin(input), amax(input)
        if keepdim:
            shape = (1,) * input.ndim
            lo, hi = reshape(lo, shape), reshape(hi, shape)
        return AminmaxResult(lo, hi)
    d = normalize_dim("aminmax", dim, input.ndim)
    if input.ndim and input.shape[d] == 0:
        raise IndexError(f"aminmax: Expected reduction dim {d} to have non-zero size.")
    if not input.ndim:
        return AminmaxResult(amin(input), amax(input))
    return AminmaxResult(amin(input, d, keepdim), amax(input, d, keepdim))


@composite(complex=True, node_label="TraceBackward0",
           variants="function method", cost=costs.reduction(1),
           cpu_precision=P.FLOAT32)  # (PyTorch's CPU autocast: float32)
def trace(input: Tensor) -> Tensor:
    """The sum of the main diagonal of a matrix (int64 for integer matrices)."""
    refuse_unsigned("trace", input)
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    if input.dtype is dt.bool_:
        raise kernel_refuses("trace", input.dtype)
    i = arange(builtins.min(input.shape), device=input.device)
    return sum(input[i, i])


@composite(variants="function method inplace out", cost=costs.reduction(4),
           node_label="RenormBackward0")
def renorm(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    """Each slice along `dim` (over all the other dimensions) with a `p`-norm above
    `maxnorm` scaled down to norm `maxnorm` (PyTorch's `maxnorm / (norm + 1e-7)`)."""
    if not input._dtype.is_floating_point:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor "
                           f"as input. Got {SCALAR_TYPE_NAMES[input.dtype.name]}")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm:g}")
    if input.ndim < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} "
                           "dimensions")
    d = normalize_dim("renorm", dim, input.ndim)
    others = tuple(i for i in range(input.ndim) if i != d)
    n = norm(input, p, others, keepdim=True) if others else input.abs()
    with no_grad():
        big = n > maxnorm
    return input * where(big, maxnorm / (n + 1e-7), 1.0)
