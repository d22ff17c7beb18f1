"""Ops that order values: `sort`, `argsort`, `msort`, and the order statistics
(`kthvalue`, `median`, `nanmedian`, `mode`, `quantile`, `nanquantile`).

All are composites over the `topk` kernel: a stable order of a whole row is `topk` with
k = the row's length (ties keep their index order; NaN sorts last ascending, first
descending, as in PyTorch). The values are `gather`ed at the indices, so gradients flow
back to the elements picked (PyTorch's `value_selecting_reduction_backward`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.core import costs
from ember.core import dtype as dt
from ember.core.apply import record_grad
from ember.core.creation import arange, full, tensor
from ember.core.declare import composite, fused_kernel, write_out
from ember.core.dispatch import kernel_refuses, refuse_unsigned, run, run_fused
from ember.core.errors import as_overload_check, invalid_combination
from ember.core.grad_mode import no_grad
from ember.core.opdef import OPS, Grad
from ember.core.opdef import Precision as P
from ember.core.ops import introsort
from ember.core.ops.elementwise import to_dtype, where
from ember.core.ops.indexing import gather_in_bounds
from ember.core.ops.reduction import check_bool, pair_out
from ember.core.ops.reduction import sum as sum_
from ember.core.ops.scans import cummax
from ember.core.ops.shape import cat, in_iter_order, movedim, reshape, squeeze, unsqueeze
from ember.core.return_types import return_type
from ember.core.shapes import normalize_dim
from ember.core.tensor import Tensor

SortResult = return_type("sort", ["values", "indices"])
KthvalueResult = return_type("kthvalue", ["values", "indices"])
MedianResult = return_type("median", ["values", "indices"])
NanmedianResult = return_type("nanmedian", ["values", "indices"])
ModeResult = return_type("mode", ["values", "indices"])


TIE_ORDER_LIMIT = introsort.TIE_ORDER_LIMIT


def sorted_indices(x: Tensor, d: int, descending: bool = False,
                   stable: bool = True) -> Tensor:
    """int64 indices that order `x` along normalized dim `d` (1-d or more); NaN last
    ascending, first descending. Equal keys keep their index order, or with
    `stable=False` on the CPU take the order PyTorch's unstable CPU sort gives them."""
    key = to_dtype(x, dt.uint8) if x._dtype is dt.bool_ else x
    idx = run("topk", key, k=x.shape[d], dim=d, largest=bool(descending))
    if stable or x.device.type != "cpu" or x.numel() > TIE_ORDER_LIMIT or x.shape[d] < 2:
        return idx
    values = gather_in_bounds(key, d, idx)
    n = x.shape[d]
    a, b = values.narrow(d, 0, n - 1), values.narrow(d, 1, n - 1)
    if not bool(((a == b) | (a.isnan() & b.isnan())).any()):
        return idx  # no ties: every correct sort gives this order
    rows = movedim(key, d, -1)
    shape = rows.shape
    order = [introsort.std_sort_order(row, descending)
             for row in reshape(rows, (-1, n)).tolist()]
    idx = tensor(order, dtype=dt.int64, device=x.device)
    return movedim(reshape(idx, shape), -1, d)


def _as_row(op: str, input: Tensor, dim: int) -> tuple[Tensor, int]:
    """`input` with at least one dimension, and `dim` normalized on it (a 0-d tensor is
    a row of one, as in PyTorch)."""
    d = normalize_dim(op, dim, input.ndim)
    return (input if input.ndim else reshape(input, (1,))), d


def _unrow(input: Tensor, t: Tensor) -> Tensor:
    return reshape(t, ()) if input.ndim == 0 else t


# -- sort -----------------------------------------------------------------------------


def _sort_label(input: Any, *args: Any, stable: Any = None, **kwargs: Any) -> str:
    return "SortBackward0" if stable is None else "SortBackward1"


# PyTorch's two overloads of sort and argsort: `(input, *, stable, dim=-1,
# descending=False)` and `(input, dim=-1, descending=False)`, `out=` in the functions'
_SORT_OVERLOADS = {
    "sort": ("(Tensor input, *, bool stable, int dim = -1, bool descending = False, tuple of "
             "Tensors out = None)", "(Tensor input, int dim = -1, bool descending = False, *, "
             "tuple of Tensors out = None)"),
    "argsort": ("(Tensor input, *, bool stable, int dim = -1, bool descending = False, Tensor "
                "out = None)", "(Tensor input, int dim = -1, bool descending = False)"),
}


def _sort_overload_error(op: str, method: bool, args: tuple, kwargs: dict) -> TypeError:
    """PyTorch's argument parser refusing `x.sort(0, stable=True)` (`stable` only in the
    keyword-only overload), too many positional arguments, or a bool dim (`x.sort(True)`:
    its int takes no bool)."""
    first = 0 if method else 1  # the functions count the input
    given = first + len(args)
    n = given + len(kwargs)
    fits_stable = first + 1 <= n <= first + 4  # (the function's out counted)
    fits_plain = n <= first + 2 + (op == "sort" and not method)
    if fits_stable and not fits_plain:  # its parser's message for the one overload left
        return TypeError(f"{op}() takes from {first + 1} to {first} positional arguments but "
                         f"{given} were given")
    stable_sig, plain_sig = (s.replace("Tensor input, ", "") if method else s
                             for s in _SORT_OVERLOADS[op])
    if method:  # (the methods have no out=)
        stable_sig = stable_sig.split(", tuple of")[0].split(", Tensor out")[0] + ")"
        plain_sig = plain_sig.split(", *, tuple")[0].rstrip(")") + ")"
    got = ["Tensor"] * first + [type(a).__name__ for a in args] + \
        [f"{k}={type(v).__name__}" for k, v in kwargs.items()]
    wrong = [k for k in kwargs if k not in ("dim", "descending", "out")]
    # (PyTorch's listing explains the plain overload's keywords, but for sort's function,
    # whose `tuple of Tensors out` its listing does not match)
    note = "      didn't match because some of the keywords were incorrect: " \
        f"{', '.join(wrong)}\n" if wrong and len(args) <= 2 and (method or op == "argsort") \
        else ""
    if len(args) == 2 and not kwargs and not isinstance(args[1], bool) and \
            (method or op == "argsort"):  # (its listing marks both, dim too)
        marked = ["Tensor"] * first + [f"!{type(a).__name__}!" for a in args]
        note = "      didn't match because some of the arguments have invalid types: " \
            f"({', '.join(marked)})\n"
    return invalid_combination(op, ", ".join(got), (stable_sig, plain_sig), note)


def _sort_overloads(op: str, method: bool) -> Callable[[Callable], Callable]:
    """`fn` behind PyTorch's overload match of `op` (see `_sort_overload_error`)."""
    def wrap(fn: Callable) -> Callable:
        def checked(input: Any, *args: Any, **kwargs: Any) -> Any:
            if args and ("stable" in kwargs or len(args) > 2 or (
                    len(args) == 1 and not kwargs and isinstance(args[0], bool)) or (
                    len(args) == 2 and not kwargs and not isinstance(args[1], bool))):
                raise _sort_overload_error(op, method, args, kwargs)
            out = kwargs.get("out")
            if op == "sort" and out is not None and not isinstance(out, (tuple, list)):
                # (a lone tensor matches neither overload's tuple; its parser lists out=
                # first among the keywords)
                rest = {k: v for k, v in kwargs.items() if k != "out"}
                raise _sort_overload_error(op, method, args, {"out": out, **rest})
            return fn(input, *args, **kwargs)
        return as_overload_check(checked, fn)
    return wrap


def sort(input: Tensor, dim: int = -1, descending: bool = False, *,
         stable: bool | None = False, out: Any = None) -> Any:
    """The values along `dim` in ascending order (descending with `descending=True`), and
    the indices they came from, as a named (values, indices) pair; NaN sorts as larger
    than any number. With `stable=True` equal values keep their order; otherwise (the
    default) CPU tensors give equal values PyTorch's CPU order (its unstable sort's), up
    to `TIE_ORDER_LIMIT` elements, and other devices the stable one."""
    if out is not None:
        return pair_out("sort", input, out,
                        lambda: _sort(input, dim, descending, stable=stable))
    x, d = _as_row("sort", input, dim)
    idx = sorted_indices(x, d, descending, stable=bool(stable))
    # (PyTorch's sort keeps a dense input's strides, and infers dense ones from others')
    return SortResult(in_iter_order(_unrow(input, gather_in_bounds(x, d, idx)), input),
                      in_iter_order(_unrow(input, idx), input))


_sort = sort
sort = composite(node_label=_sort_label, variants="function method", cost=costs.reduction(8),
                 method=_sort_overloads("sort", True)(_sort))(
    _sort_overloads("sort", False)(_sort))


def argsort(input: Tensor, dim: int = -1, descending: bool = False, *,
            stable: bool = False) -> Tensor:
    """The indices that sort `input` along `dim` (see `sort`, also for `stable`)."""
    x, d = _as_row("argsort", input, dim)
    return in_iter_order(_unrow(input, sorted_indices(x, d, descending, stable=bool(stable))),
                          input)


argsort = composite(variants="function method", cost=costs.reduction(8),
                    method=_sort_overloads("argsort", True)(argsort))(
    _sort_overloads("argsort", False)(argsort))


@composite(variants="function method", cost=costs.reduction(8))
def msort(input: Tensor) -> Tensor:
    """`input` sorted along its first dimension (`sort(input, 0).values`)."""
    return sort(input, 0).values


# -- order statistics ------------------------------------------------------------------


def _nonempty(op: str, x: Tensor, d: int) -> None:
    if x.shape[d] == 0:
        raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")


def _pick(input: Tensor, x: Tensor, d: int, order: Tensor, pos: Tensor,
          keepdim: bool) -> tuple[Tensor, Tensor]:
    """The values and indices at positions `pos` (keepdim-shaped int64) of the order
    `order` along `d` of `x` (`input` with at least one dim)."""
    idx = gather_in_bounds(order, d, pos)
    values = gather_in_bounds(x, d, idx)
    if input.ndim == 0:
        return reshape(values, ()), reshape(idx, ())
    if not keepdim:
        values, idx = squeeze(values, d), squeeze(idx, d)
    return values, idx


def _positions(x: Tensor, d: int, value: Any) -> Tensor:
    shape = list(x.shape)
    shape[d] = 1
    return full(tuple(shape), value, dtype=dt.int64, device=x.device)


@composite(node_label="KthvalueBackward0", variants="function method", cost=costs.reduction(8))
def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False, *,
             out: Any = None) -> Any:
    """The `k`-th smallest value along `dim` (k counts from 1) and its index, as a named
    (values, indices) pair."""
    refuse_unsigned("kthvalue_cpu", input)
    check_bool("kthvalue", "keepdim", keepdim, 3)
    if out is not None:
        return pair_out("kthvalue", input, out, lambda: kthvalue(input, k, dim, keepdim))
    if input.dtype is dt.bool_:
        raise kernel_refuses("kthvalue_cpu", input.dtype)
    x, d = _as_row("kthvalue", input, dim)
    _nonempty("kthvalue", x, d)
    if not 1 <= k <= x.shape[d]:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    with no_grad():
        order = sorted_indices(x, d)
        idx = gather_in_bounds(order, d, _positions(x, d, k - 1))
        idx = _quickselect_ties(x, d, idx, k - 1)
    values = gather_in_bounds(x, d, idx)
    if input.ndim == 0:
        return KthvalueResult(reshape(values, ()), reshape(idx, ()))
    if not keepdim:
        values, idx = squeeze(values, d), squeeze(idx, d)
    return KthvalueResult(values, idx)


def _tied_rows(x: Tensor, d: int, idx: Tensor) -> Tensor:
    """Which rows along `d` hold the value at `idx` (keepdim-shaped) more than once (NaN
    equal to NaN), as a flat bool tensor over the rows of `movedim(x, d, -1)`."""
    v = gather_in_bounds(x, d, idx)
    same = (x == v) | (x.isnan() & v.isnan()) if x._dtype.is_floating_point else x == v
    return reshape(movedim(sum_(same, d, keepdim=True), d, -1), (-1,)) > 1


def _quickselect_ties(x: Tensor, d: int, idx: Tensor, k: int) -> Tensor:
    """`idx` (the stable order's index of the k-th value, keepdim-shaped) with, in CPU rows
    where that value is tied, the index PyTorch's quickselect returns instead."""
    if x.device.type != "cpu" or x.numel() > TIE_ORDER_LIMIT or x._dtype.is_complex:
        return idx
    tied = _tied_rows(x, d, idx).tolist()
    if not any(tied):
        return idx
    rows = reshape(movedim(x, d, -1), (-1, x.shape[d])).tolist()
    flat = reshape(movedim(idx, d, -1), (-1,)).tolist()
    for r, row in enumerate(rows):
        if tied[r]:
            flat[r] = introsort.quick_select_index(row, k)
    shape = tuple(movedim(idx, d, -1).shape)
    return movedim(reshape(tensor(flat, dtype=dt.int64, device=x.device), shape), -1, d)


def _median_grad(grad, input, result):
    # PyTorch's evenly_distribute_backward: shared by the elements equal to the median
    hit = input.isnan() if bool(result.isnan().item()) else input == result
    hit = to_dtype(hit, grad.dtype)
    return hit * (grad / sum_(hit))


def _median_positions(x: Tensor, d: int, ignore_nan: bool) -> Tensor:
    """Where the lower median sits in the stable ascending order along `d`: among the
    numbers; a row with a NaN has its first NaN as median (unless `ignore_nan`), and a
    row of NaN only its first element."""
    n = x.shape[d]
    if not x._dtype.is_floating_point:
        return _positions(x, d, (n - 1) // 2)
    nans = sum_(x.isnan(), d, keepdim=True)
    if ignore_nan:
        numbers = nans.neg() + n
        return where(numbers > 0, (numbers - 1).div(2, rounding_mode="floor"), 0)
    return where(nans > 0, nans.neg() + n, (n - 1) // 2)


def _median(op: str, input: Tensor, dim: Any, keepdim: bool, ignore_nan: bool) -> Any:
    if input.dtype is dt.bool_:  # (PyTorch's kernels, both ops: the whole or along a dim)
        raise NotImplementedError(f"\"median_{'cpu' if dim is None else 'out'}\" not "
                                  "implemented for 'Bool'")
    result = NanmedianResult if ignore_nan else MedianResult
    if dim is None:
        flat = reshape(input, (-1,))
        if flat.numel() == 0:
            return full((), float("nan"), dtype=input.dtype, device=input.device)
        with no_grad():
            order = sorted_indices(flat, 0)
            value, _ = _pick(flat, flat, 0, order, _median_positions(flat, 0, ignore_nan),
                             False)
        record_grad(OPS[op], (input,), {}, value, "MedianBackward0" if op == "median"
                    else "NanmedianBackward0")
        return value
    x, d = _as_row(op, input, dim)
    _nonempty(op, x, d)
    with no_grad():
        order = sorted_indices(x, d)
        pos = _median_positions(x, d, ignore_nan)
    return result(*_pick(input, x, d, order, pos, keepdim))


@composite(variants="function method out", cost=costs.reduction(8),
           grad=Grad(input=_median_grad),
           node_label=lambda input, dim=None, *args, **kwargs:
           None if dim is None else "MedianBackward1")
def median(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
    """The lower median of all elements; with `dim`, a named (values, indices) pair of
    the lower medians along it. NaN propagates: a row with a NaN has median NaN."""
    refuse_unsigned("median_cpu", input)
    check_bool("median", "keepdim", keepdim, 2)
    return _median("median", input, dim, keepdim, ignore_nan=False)


@composite(variants="function method out", cost=costs.reduction(8),
           grad=Grad(input=_median_grad), node_label=lambda input, dim=None, *args, **kwargs:
           None if dim is None else "NanmedianBackward1")
def nanmedian(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
    """`median`, ignoring NaN (NaN only where a row is all NaN)."""
    check_bool("nanmedian", "keepdim", keepdim, 2)
    return _median("nanmedian", input, dim, keepdim, ignore_nan=True)


@composite(variants="function method out", cost=costs.reduction(10),
           node_label="ModeBackward0", fused=("mode_index",))
def mode(input: Tensor, dim: int = -1, keepdim: bool = False) -> Any:
    """The most frequent value along `dim` (the smallest of those equally frequent) and
    the index of its last occurrence, as a named (values, indices) pair."""
    refuse_unsigned("mode_cpu", input)
    check_bool("mode", "keepdim", keepdim, 2)
    x, d = _as_row("mode", input, dim)
    _nonempty("mode", x, d)
    n = x.shape[d]
    if x.numel() == 0:
        return ModeResult(*_pick(input, x, d, x.long(), _positions(x, d, 0), keepdim))
    picked = run_fused("mode_index", x, dim=d)  # (a backend's PyTorch order of ties)
    if picked is not None:
        return ModeResult(*_pick(input, x, d, picked, _positions(x, d, 0), keepdim))
    if x.device.type == "cpu" and x.numel() <= TIE_ORDER_LIMIT and not x._dtype.is_complex:
        picked = _aten_mode(x, d)
        if picked is not None:
            return ModeResult(*_pick(input, x, d, picked, _positions(x, d, 0), keepdim))
    with no_grad():
        order = sorted_indices(x, d)
        s = gather_in_bounds(x, d, order)
        # the length of the run of equal values each sorted position ends, so far: its
        # position minus that of the run's first element, plus one
        shape = [1] * x.ndim
        shape[d] = n
        p = reshape(arange(n, device=x.device), tuple(shape)).expand(tuple(x.shape))
        starts = cat([_positions(x, d, 1) > 0, s.narrow(d, 1, n - 1) != s.narrow(d, 0, n - 1)],
                     d)
        run_start = cummax(where(starts, p, 0), d).values
        # the first longest run is of the smallest such value; its end is its last
        # occurrence (a stable order keeps the run in index order)
        pos = (p - run_start).argmax(d, keepdim=True)
    return ModeResult(*_pick(input, x, d, order, pos, keepdim))


fused_kernel("mode_index", replaces="mode", outputs=("int64",),
             signature="mode_index(x, *, dim) -> indices",
             doc="The index `mode` returns in each row along `dim` (keepdim-shaped), in "
                 "PyTorch's CPU order of equal keys (see introsort.mode_of_row): the last "
                 "of the first longest run of equal keys in std::sort's order. The kernel "
                 "may return None for a call it does not run; `mode` then emulates the sort "
                 "on the host (up to TIE_ORDER_LIMIT elements) or sorts stably.")


def _aten_mode(x: Tensor, d: int) -> Tensor | None:
    """PyTorch's CPU mode of each row along `d` (see introsort.mode_of_row): the index it
    returns, keepdim-shaped; None where a NaN makes the emulated sort leave its row (its
    comparator orders nothing consistently then)."""
    n = x.shape[d]
    rows = reshape(movedim(x, d, -1), (-1, n)).tolist()
    try:
        picked = [introsort.mode_of_row(row)[1] for row in rows]
    except IndexError:  # (a NaN led a partition past the row's end, where C++ reads on)
        return None
    shape = tuple(movedim(x, d, -1).shape[:-1]) + (1,)
    return movedim(reshape(tensor(picked, dtype=dt.int64, device=x.device), shape), -1, d)


# -- quantiles -------------------------------------------------------------------------

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile_q(op: str, input: Tensor, q: Any) -> tuple[Tensor, bool]:
    """q as a 1-d tensor of the input's dtype, and whether it was a scalar."""
    if isinstance(q, Tensor):
        if q.ndim > 1:
            raise RuntimeError(f"{op}() q must be a scalar or 1D tensor")
        if q.dtype is not input.dtype:
            raise RuntimeError(f"{op}() q tensor must be same dtype as the input tensor")
        if q.device != input.device:
            raise RuntimeError(f"{op}() q tensor must be on the same device as the input "
                               f"tensor ({input.device}), got {q.device}")
        if q.numel() and not bool((q >= 0).logical_and(q <= 1).all().item()):
            raise RuntimeError(f"{op}() q values must be in the range [0, 1]")
        return reshape(q, (-1,)), q.ndim == 0
    if not 0 <= q <= 1:
        raise RuntimeError(f"{op}() q must be in the range [0, 1] but got {q}")
    return full((1,), float(q), dtype=input.dtype, device=input.device), True


def _quantile(op: str, input: Tensor, q: Any, dim: int | None, keepdim: bool,
              interpolation: str, ignore_nan: bool) -> Tensor:
    if not input.dtype.is_floating_point or input.dtype.itemsize < 4:
        raise RuntimeError(f"{op}() input tensor must be either float or double dtype")
    qs, scalar_q = _quantile_q(op, input, q)
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{op}() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation}")
    if input.numel() == 0:
        raise RuntimeError(f"{op}() input tensor must be non-empty")
    if dim is None:
        rows, d = reshape(input, (-1,)), None
    else:
        d = normalize_dim(op, dim, input.ndim)
        rows = movedim(input if input.ndim else reshape(input, (1,)), d, -1)
    s = sort(rows, -1).values  # (..., n), NaN last
    n = s.shape[-1]
    with no_grad():
        if ignore_nan:
            numbers = sum_(s.isnan().logical_not(), -1, keepdim=True)
            ranks = qs * (numbers - 1)
            ranks = where(ranks < 0, 0.0, ranks)
        else:  # a row with a NaN: its last element, a NaN
            ranks = where(s.isnan().any(-1, keepdim=True), float(n - 1), qs * (n - 1))
        if interpolation == "lower":
            ranks = ranks.floor()
        elif interpolation == "higher":
            ranks = ranks.ceil()
        elif interpolation == "nearest":
            ranks = ranks.round()  # half to even, as PyTorch
        below = to_dtype(ranks, dt.int64)
    out = gather_in_bounds(s, s.ndim - 1, below)
    if interpolation in ("linear", "midpoint"):
        with no_grad():
            weights = ranks - below if interpolation == "linear" else \
                full(tuple(ranks.shape), 0.5, dtype=ranks.dtype, device=ranks.device)
            above = to_dtype(ranks.ceil(), dt.int64)
        out = _lerp(out, gather_in_bounds(s, s.ndim - 1, above), weights)
    out = movedim(out, -1, 0)  # (Q, ...)
    if keepdim:
        out = reshape(out, (out.shape[0],) + (1,) * input.ndim) if d is None else \
            unsqueeze(out, d + 1) if input.ndim else out
    return squeeze(out, 0) if scalar_q else out


def _quantile_out(op: str, result: Tensor, out: Tensor | None) -> Tensor:
    """The result, written into `out` when given (PyTorch's `out=` of the quantiles, a
    composite op that keeps autograd, wants the input's dtype exactly)."""
    if out is None:
        return result
    if isinstance(out, Tensor) and out.dtype is not result.dtype:
        raise RuntimeError(f"{op}() out tensor must be same dtype as the input tensor")
    return write_out(op, out, result)


def _lerp(start: Tensor, end: Tensor, weight: Tensor) -> Tensor:
    """PyTorch's lerp: from the nearer end, so that an infinite neighbour gives the
    quantile PyTorch gives."""
    step = end - start
    return where(weight < 0.5, start + weight * step, end - step * (1 - weight))


@composite(variants="function method", node_label="SqueezeBackward4", cost=costs.reduction(10),
           cpu_precision=P.FLOAT32)  # (PyTorch's CPU autocast: float32)
def quantile(input: Tensor, q: Any, dim: int | None = None, keepdim: bool = False, *,
             interpolation: str = "linear", out: Tensor | None = None) -> Tensor:
    """The `q`-th quantiles (a number or a 1-d tensor in [0, 1]) of the values along
    `dim` (of all values when None); a tensor `q` puts its dimension first. Between two
    values, `interpolation` picks: "linear", "lower", "higher", "midpoint" or "nearest".
    A row with a NaN has NaN quantiles. `out`, when given, receives the result."""
    result = _quantile("quantile", input, q, dim, keepdim, interpolation, ignore_nan=False)
    return _quantile_out("quantile", result, out)


@composite(variants="function method", node_label="SqueezeBackward4", cost=costs.reduction(10),
           cpu_precision=P.FLOAT32)  # (PyTorch's CPU autocast: float32)
def nanquantile(input: Tensor, q: Any, dim: int | None = None, keepdim: bool = False, *,
                interpolation: str = "linear", out: Tensor | None = None) -> Tensor:
    """`quantile`, ignoring NaN (NaN only where a row is all NaN)."""
    result = _quantile("nanquantile", input, q, dim, keepdim, interpolation, ignore_nan=True)
    return _quantile_out("nanquantile", result, out)


