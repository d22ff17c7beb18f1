"""Search and counting: `searchsorted`, `bucketize`, `isin`, `unique`,
`unique_consecutive`, `bincount`, `histc`, `histogram`, `histogramdd`.

All are composites. `searchsorted` is a binary search written with `gather` and `where`,
ceil(log2(n + 1)) steps for every value at once, with PyTorch's comparisons (a NaN value
goes after every number; NaN boundaries sort last); the others sort, search or
`scatter_add`. Ops whose result's size depends on the data (unique, bincount) read it
from the device once.
"""

from __future__ import annotations

from typing import Any

from ember.core import costs
from ember.core import dtype as dt
from ember.core.creation import full, linspace, ones, zeros
from ember.core.declare import composite, fused_kernel
from ember.core.dispatch import kernel_refuses, refuse_unsigned, run_fused, user_stacklevel
from ember.core.errors import warn_once
from ember.core.grad_mode import no_grad
from ember.core.graph import record
from ember.core.ops.elementwise import to_dtype, where
from ember.core.ops.indexing import (
    SCALAR_TYPE_NAMES,
    gather_in_bounds,
    getitem,
    nonzero,
    scatter,
    scatter_add,
)
from ember.core.ops.reduction import amax, amin, cumsum
from ember.core.ops.reduction import any as any_
from ember.core.ops.reduction import sum as sum_
from ember.core.ops.scans import diff
from ember.core.ops.shape import cat, movedim, reshape
from ember.core.ops.sorting import sorted_indices
from ember.core.return_types import return_type
from ember.core.shapes import fmt_shape, normalize_dim
from ember.core.tensor import Tensor

HistogramResult = return_type("histogram", ["hist", "bin_edges"])



# -- searchsorted, bucketize, isin -----------------------------------------------------


def _binary_search(seq: Tensor, values: Tensor, right: bool,
                   sorter: Tensor | None) -> Tensor:
    """For each value (along the last dim, matching `seq`'s leading dims, or anywhere
    when `seq` is 1-d), how many boundaries come before it."""
    n = seq.shape[-1]
    lo = zeros(tuple(values.shape), dtype=dt.int64, device=values.device)
    if n == 0:
        return lo
    hi = full(tuple(values.shape), n, dtype=dt.int64, device=values.device)
    last = values.ndim - 1
    for _ in range(n.bit_length()):
        mid = (lo + hi).div(2, rounding_mode="floor")
        at = mid.clamp_max(n - 1)
        if sorter is not None:
            at = gather_in_bounds(sorter, last, at)
        v = gather_in_bounds(seq, last, at)
        # PyTorch's: left goes right while !(v >= x), right while !(v > x); a NaN value
        # is never passed by that, so it lands after every boundary
        after = (v > values) if right else (v >= values)
        go_right = (lo < hi).logical_and(after.logical_not())
        lo = where(go_right, mid + 1, lo)
        hi = where(go_right, hi, mid)
    return lo


def _search(op: str, seq: Tensor, values: Any, right: bool, out_int32: bool,
            sorter: Tensor | None) -> Tensor:
    if seq.ndim != 1 and (seq.ndim != values.ndim or seq.shape[:-1] != values.shape[:-1]):
        raise RuntimeError(f"{op}(): boundaries tensor should be 1 dimension or the first "
                           f"N-1 dimensions of boundaries tensor and input value tensor must "
                           f"match, but we got boundaries tensor {fmt_shape(seq.shape)} and "
                           f"input value tensor {fmt_shape(values.shape)}")
    if sorter is not None:
        if sorter.dtype is not dt.int64:
            raise RuntimeError(f"{op}(): sorter must be a tensor of long dtype but got dtype "
                               f"{SCALAR_TYPE_NAMES[sorter.dtype.name]}")
        if tuple(sorter.shape) != tuple(seq.shape):
            raise RuntimeError(f"{op}(): boundary and sorter must have the same size, but got "
                               f"boundary tensor {fmt_shape(seq.shape)}and got sorter tensor "
                               f"{fmt_shape(sorter.shape)}")
        if sorter.numel() and (bool((sorter < 0).any()) or
                               bool((sorter >= seq.shape[-1]).any())):
            raise RuntimeError("torch.searchsorted(): sorter index out of range")
    if seq.dtype is dt.bool_ and values.dtype is dt.bool_:  # (no bool kernel)
        raise kernel_refuses("searchsorted_out_cpu", dt.bool_)
    for name, t in (("boundary", seq), ("input value", values), ("sorter", sorter)):
        if t is not None and not t.is_contiguous():  # (bucketize's words are these too)
            warn_once(f"torch.searchsorted(): {name} tensor is non-contiguous, this will lower "
                      "the performance due to extra data copy when converting non-contiguous "
                      f"tensor to contiguous, please use contiguous {name} tensor if possible. "
                      "This message will only appear once per program.",
                      stacklevel=user_stacklevel())
    with no_grad():
        if seq.ndim != 1 and values.ndim == 0:
            out = values.long()
        else:
            out = _fused_search(seq, values, right, sorter)
        if out is None and seq.ndim == 1:
            out = reshape(_binary_search(seq, reshape(values, (-1,)), right, sorter),
                          tuple(values.shape))
        elif out is None:
            out = _binary_search(seq, values, right, sorter)
    return to_dtype(out, dt.int32) if out_int32 else out


def _fused_search(seq: Tensor, values: Tensor, right: bool,
                  sorter: Tensor | None) -> Tensor | None:
    """The backend's `searchsorted` kernel on the sequence in sorted order, or None (the
    binary search in ember ops runs then)."""
    if seq.dtype is not values.dtype or seq.shape[-1] == 0:
        return None
    if sorter is not None:
        seq = gather_in_bounds(seq, seq.ndim - 1, sorter)
    return run_fused("searchsorted", seq, values, right=right)


fused_kernel("searchsorted", replaces="searchsorted", outputs=("int64",),
             signature="searchsorted(seq, values, *, right) -> indices",
             doc="For each value, how many elements of the sorted, non-empty `seq` (1-d, or "
                 "a row per leading index of `values`) come before it: those < it, or <= "
                 "it with `right`, with PyTorch's comparisons (a NaN value after every "
                 "element). The kernel may return None for a call it does not run (the "
                 "CPU's: a NaN in `seq`, where PyTorch's binary search is not a sort's "
                 "order).")


@composite(variants="function out", cost=costs.reduction(8), fused=("searchsorted",))
def searchsorted(sorted_sequence: Tensor, input: Any, *, out_int32: bool = False,
                 right: bool = False, side: str | None = None,
                 sorter: Tensor | None = None) -> Tensor:
    """Where each value of `input` would be inserted into `sorted_sequence` (along its
    last dim) to keep it sorted: before equal boundaries, or after them with
    `right=True` / `side="right"`. `sorter` gives the order of an unsorted sequence."""
    refuse_unsigned("searchsorted_out_cpu", sorted_sequence)
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but "
                               f"got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to "
                               "opposites, got side of left while right was True")
        right = side == "right"
    if not isinstance(input, Tensor):  # a number: only against a 1-d sequence
        if sorted_sequence.ndim != 1:
            raise RuntimeError("torch.searchsorted(): input value can be a scalar only when "
                               "boundaries tensor dimension is 1, but we got boundaries "
                               f"tensor dim({sorted_sequence.ndim}) and input value's dim(0) "
                               "numel(1)")
        input = full((), input, device=sorted_sequence.device)
    return _search("torch.searchsorted", sorted_sequence, input, right, out_int32, sorter)


@composite(variants="function out", cost=costs.reduction(8), fused=("searchsorted",))
def bucketize(input: Any, boundaries: Tensor, *, out_int32: bool = False,
              right: bool = False) -> Tensor:
    """The index of the bucket of each value: `boundaries[i-1] < x <= boundaries[i]`
    (`<= x <` with `right=True`), for 1-d sorted `boundaries`."""
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim("
                           f"{boundaries.ndim})")
    if not isinstance(input, Tensor):
        input = full((), input, device=boundaries.device)
    return _search("bucketize", boundaries, input, right, out_int32, None)


@composite(variants="function", cost=costs.reduction(8))
def isin(elements: Any, test_elements: Any, *, assume_unique: bool = False,
         invert: bool = False) -> Tensor:
    """Whether each element of `elements` is among `test_elements` (either may be a
    number); the reverse with `invert=True`."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin() received an invalid combination of arguments: expected "
                        "at least one tensor")
    like = elements if isinstance(elements, Tensor) else test_elements
    refuse_unsigned("isin_default_cpu", like)
    if not isinstance(elements, Tensor):
        elements = full((), elements, device=like.device)
    if not isinstance(test_elements, Tensor):
        test_elements = full((1,), test_elements, device=like.device)
    with no_grad():
        pool = reshape(test_elements, (-1,))
        if pool.dtype.is_floating_point:  # NaN matches nothing, and would break the search
            pool = getitem(pool, pool.isnan().logical_not())
        if pool.numel() == 0:
            found = zeros(tuple(elements.shape), dtype=dt.bool_, device=elements.device)
        else:
            pool = gather_in_bounds(pool, 0, sorted_indices(pool, 0))
            flat = reshape(elements, (-1,))
            at = _binary_search(pool, flat, False, None).clamp_max(pool.numel() - 1)
            found = reshape(gather_in_bounds(pool, 0, at) == flat, tuple(elements.shape))
    return found.logical_not() if invert else found


# -- unique ---------------------------------------------------------------------------


def _runs(rows: Tensor, order: Tensor | None, return_inverse: bool,
          return_counts: bool) -> tuple:
    """The first row of each run of equal rows of `rows` (n, ...) taken in `order` (None:
    as they are), with the inverse (for each row, its run) and the run lengths."""
    n = rows.shape[0]
    s = rows if order is None else rows[order]
    if n == 0:
        empty = zeros((0,), dtype=dt.int64, device=rows.device)
        return s, empty, empty
    differs = s[1:] != s[:-1]
    if s.ndim > 1:
        differs = any_(reshape(differs, (n - 1, -1)), 1)
    starts = cat([full((1,), True, dtype=dt.bool_, device=rows.device), differs])
    values = getitem(s, starts)
    inverse = counts = None
    if return_inverse:
        run_of = cumsum(starts, 0) - 1
        inverse = run_of if order is None else scatter(run_of, 0, order, run_of)
    if return_counts:
        first = reshape(nonzero(starts), (-1,))
        counts = diff(first, append=full((1,), n, dtype=dt.int64, device=rows.device))
    return values, inverse, counts


# float8 and uint16/32/64: PyTorch's refusal (or not) comes from the sort's kernel
_NO_FUSED_UNIQUE = frozenset(dt.FLOAT8_DTYPES) | frozenset(dt.LIMITED_DTYPES)


def _unique(op: str, input: Tensor, sort: bool, return_inverse: bool,
            return_counts: bool, dim: int | None) -> Any:
    with no_grad():
        fused = run_fused("unique", input, return_inverse=return_inverse,
                          return_counts=return_counts) \
            if sort and dim is None and input._dtype not in _NO_FUSED_UNIQUE else None
        if fused is not None:
            values, inverse, counts = fused
        elif dim is None:
            flat = reshape(input, (-1,))
            order = sorted_indices(flat, 0) if sort and flat.numel() else None
            values, inverse, counts = _runs(flat, order, return_inverse, return_counts)
            if inverse is not None:
                inverse = reshape(inverse, tuple(input.shape))
        else:
            d = normalize_dim(op, dim, input.ndim)
            rows = movedim(input, d, 0)
            order = _lexsort(reshape(rows, (rows.shape[0], -1))) if sort else None
            values, inverse, counts = _runs(rows, order, return_inverse, return_counts)
            values = movedim(values, 0, d)
    out = (values,) + ((inverse,) if return_inverse else ()) + \
        ((counts,) if return_counts else ())
    return out[0] if len(out) == 1 else out


fused_kernel("unique", replaces="unique", outputs=("like", "int64", "int64"),
             signature="unique(x, *, return_inverse, return_counts) -> (values, inverse "
                       "| None, counts | None)",
             doc="The distinct elements of `x` in ascending order (a stable sort: of equal "
                 "elements, the first in `x` is kept; NaNs last, each distinct), for each "
                 "element its value's index (`x`'s shape) and each value's count; the "
                 "two are None unless asked for.")


def _lexsort(rows: Tensor) -> Tensor | None:
    """The stable order of the rows of a 2-d tensor, compared element by element."""
    n, k = rows.shape
    if n == 0:
        return None
    order = None
    for j in reversed(range(k)):  # least significant column first: stable sorts stack
        column = rows[:, j] if order is None else rows[order, j]
        step = sorted_indices(column, 0)
        order = step if order is None else order[step]
    return order


@composite(variants="function method", cost=costs.reduction(10), fused=("unique",))
def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False,  # noqa: A002
           return_counts: bool = False, dim: int | None = None) -> Any:
    """The distinct elements of `input` (or slices along `dim`), in ascending order; with
    `return_inverse`, where each element went; with `return_counts`, how many of each.
    (Always sorted, which `sorted=False` allows.)"""
    return _unique("unique", input, True, return_inverse, return_counts, dim)


@composite(variants="function method", cost=costs.reduction(4))
def unique_consecutive(input: Tensor, return_inverse: bool = False,
                       return_counts: bool = False, dim: int | None = None) -> Any:
    """`input` with each run of equal consecutive elements (or slices along `dim`) kept
    once; `return_inverse` and `return_counts` as in `unique`."""
    return _unique("unique_consecutive", input, False, return_inverse, return_counts, dim)


# -- counting -------------------------------------------------------------------------


@composite(variants="function method", cost=costs.movement,
           fused=("bincount", "bincount_weighted"))
def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """How many times each non-negative integer occurs in the 1-d `input` (the sum of
    `weights` at its occurrences), for 0 to max(input) and at least `minlength` bins."""
    refuse_unsigned("bincount_cpu", input)
    if input.dtype.is_floating_point or input.dtype is dt.bool_:
        raise kernel_refuses("bincount_cpu", input.dtype)
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    fits = weights is None or (weights.ndim == 1 and weights.shape[0] == input.shape[0])
    with no_grad():
        out = _fused_bincount(input, weights, minlength) if input.ndim == 1 and fits else None
        if out is None:
            out = _bincount(input, weights, minlength, fits)
    if weights is not None and weights._requires_grad:  # (PyTorch's: backward raises)
        record("NotImplemented", _no_bincount_derivative, (weights,), out)
    return out


def _no_bincount_derivative(node: Any, grad: Tensor) -> Any:
    raise RuntimeError("derivative for aten::bincount is not implemented")


def _bincount(input: Tensor, weights: Tensor | None, minlength: int, fits: bool) -> Tensor:
    """bincount in ember ops, after PyTorch's checks of the values and of `weights`."""
    if input.ndim != 1 or (input.numel() and int(amin(input).item()) < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if not fits:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    length = max(minlength, int(amax(input).item()) + 1 if input.numel() else 0)
    index = input.long()
    if weights is None:
        return scatter_add(zeros((length,), dtype=dt.int64, device=input.device), 0, index,
                           ones(tuple(index.shape), dtype=dt.int64, device=input.device))
    kind = _weight_kind(weights)
    return scatter_add(zeros((length,), dtype=kind, device=input.device), 0, index,
                       to_dtype(weights, kind))


def _weight_kind(weights: Tensor) -> dt.dtype:
    """What weights count in: float32 weights in float32, all others in float64 (PyTorch's)."""
    return dt.float32 if weights.dtype is dt.float32 else dt.float64


def _fused_bincount(input: Tensor, weights: Tensor | None, minlength: int) -> Tensor | None:
    """The backend's `bincount` kernel (one call in place of ~8 ops), or None where it
    has none or it declines (a negative value: the checks then raise PyTorch's error)."""
    if weights is None:
        return run_fused("bincount", input, minlength=minlength)
    return run_fused("bincount_weighted", to_dtype(weights, _weight_kind(weights)), input,
                     minlength=minlength)


fused_kernel("bincount", replaces="bincount", outputs=("int64",),
             signature="bincount(x, *, minlength) -> counts",
             doc="How many times each value of the 1-d integer `x` occurs, for 0 to "
                 "max(x) and at least `minlength` bins. The kernel returns None where `x` "
                 "holds a negative value (core raises PyTorch's error then).")
fused_kernel("bincount_weighted", replaces="bincount", same_dtype=False,
             signature="bincount_weighted(weights, x, *, minlength) -> sums",
             doc="The sum of the float32 or float64 `weights` at each value's occurrences "
                 "in the 1-d integer `x`, in `weights`' dtype and in the order of `x` (a "
                 "sequential scatter-add); None where `x` holds a negative value.")


def _bin_index(x: Tensor, edges: Tensor) -> tuple[Tensor, Tensor]:
    """For each value, its bin among `edges` (a value on the last edge goes in the last
    bin) and whether it falls in any bin at all."""
    bins = edges.shape[0] - 1
    index = searchsorted(edges, x, right=True) - 1
    index = where(x == edges[-1], bins - 1, index)
    inside = (index >= 0).logical_and(index < bins)
    return index.clamp(0, max(bins - 1, 0)), inside


def _outer_edges(op: str, x: Tensor, lo: Any, hi: Any, widen: float,
                 empty: tuple[float, float], dim: int | None = None) -> tuple[float, float]:
    """The first and last edge: `lo` and `hi`, else the data's range (`empty` when there
    is no data), widened by `widen` either way when it is a single point. `dim`: the
    histogramdd dimension they are for (its messages name it; histogram's are its);
    None: histc's messages."""
    if lo is not None and hi is not None and dim is not None and float(lo) > float(hi):
        raise RuntimeError(f"{op}: min should not exceed max, but got min {float(lo):g} max "
                           f"{float(hi):g} for dimension {dim}")
    if lo is None or hi is None or lo == hi:
        lo, hi = (float(amin(x).item()), float(amax(x).item())) if x.numel() else empty
    lo, hi = float(lo), float(hi)
    if lo != lo or hi != hi or abs(lo) == float("inf") or abs(hi) == float("inf"):
        where_ = "range of" if dim is None else f"dimension {dim}'s range"
        raise RuntimeError(f"{op}: {where_} [{lo:g}, {hi:g}] is not finite")
    if lo > hi:
        raise RuntimeError(f"{op}: max must be larger than min")
    if lo == hi:
        lo, hi = lo - widen, hi + widen
    return lo, hi


def _count(x: Tensor, edges: Tensor, weight: Tensor | None) -> Tensor:
    index, inside = _bin_index(x, edges)
    w = to_dtype(inside, x.dtype) if weight is None else where(inside, weight, 0.0)
    return scatter_add(zeros((edges.shape[0] - 1,), dtype=x.dtype, device=x.device), 0, index,
                       w)


@composite(variants="function method", cost=costs.movement)
def histc(input: Tensor, bins: int = 100, min: Any = 0, max: Any = 0) -> Tensor:  # noqa: A002
    """A histogram of `bins` equal bins from `min` to `max` (the data's own range when
    they are equal); values outside are left out."""
    if not input.dtype.is_floating_point:  # (bool meets PyTorch's linspace first)
        kernel = "linspace_cpu" if input.dtype is dt.bool_ else "histogram_cpu"
        raise kernel_refuses(kernel, input.dtype)
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for "
                           f"dimension 0")
    with no_grad():
        lo, hi = _outer_edges("torch.histc", input, min, max, 1.0, (0.0, 0.0))
        edges = linspace(lo, hi, bins + 1, dtype=input.dtype, device=input.device)
        return _count(reshape(input, (-1,)), edges, None)


@composite(variants="function method", cost=costs.movement)
def histogram(input: Tensor, bins: Any = 100, *, range: Any = None,  # noqa: A002
              weight: Tensor | None = None, density: bool = False) -> Any:
    """A histogram of `input`, as a named (hist, bin_edges) pair: `bins` equal bins over
    `range` (the data's range by default), or the given increasing edges; with `weight`,
    sums of weights; with `density`, normalized to integrate to 1."""
    if not input.dtype.is_floating_point:
        raise kernel_refuses("histogramdd", input.dtype)
    if weight is not None and tuple(weight.shape) != tuple(input.shape):
        raise RuntimeError("torch.histogram(): if weight tensor is provided it should have "
                           "the same shape as the input tensor excluding its innermost "
                           "dimension")
    with no_grad():
        if isinstance(bins, Tensor):
            if bins.ndim != 1 or bins.numel() < 1:
                raise RuntimeError("torch.histogram(): bins tensor should have one dimension "
                                   "and at least 1 element")
            edges = to_dtype(bins, input.dtype)
        else:
            if bins <= 0:
                raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for "
                                   f"dimension 0")
            lo, hi = _outer_edges("torch.histogramdd", input,
                                  *(range if range is not None else (None, None)), 0.5,
                                  (0.0, 1.0), dim=0)
            edges = linspace(lo, hi, bins + 1, dtype=input.dtype, device=input.device)
        w = None if weight is None else reshape(weight, (-1,))
        hist = _count(reshape(input, (-1,)), edges, w) if edges.shape[0] > 1 else \
            zeros((0,), dtype=input.dtype, device=input.device)
        if density:
            hist = hist / (sum_(hist) * diff(edges))
    return HistogramResult(hist, edges)


HistogramddResult = return_type("histogramdd", ["hist", "bin_edges"])


@composite(variants="function", cost=costs.movement)
def histogramdd(input: Tensor, bins: Any, *, range: Any = None,  # noqa: A002
                weight: Tensor | None = None, density: bool = False) -> Any:
    """A D-dimensional histogram of the points in the rows of `input` (..., D), as a
    named (hist, bin_edges) pair: `bins` is a count for every dim, one count per dim, or
    one tensor of edges per dim; `range` the [min, max] of each dim, flattened."""
    if input.ndim < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    if not input.dtype.is_floating_point:
        raise kernel_refuses("histogramdd", input.dtype)
    dims = input.shape[-1]
    bins = [bins] * dims if isinstance(bins, int) else list(bins)
    if len(bins) != dims:
        raise RuntimeError(f"torch.histogramdd: expected {dims} sequences of bin edges for a "
                           f"{dims}-dimensional histogram but got {len(bins)}")
    if range is not None and len(range) != 2 * dims:
        raise RuntimeError(f"torch.histogramdd: for a {dims}-dimensional histogram range "
                           f"should have {2 * dims} elements, but got {len(range)}")
    points = reshape(input, (-1, dims))
    with no_grad():
        edges, flat, inside, sizes = [], None, None, []
        for k, b in enumerate(bins):
            column = points[:, k]
            if isinstance(b, Tensor):
                e = to_dtype(b, input.dtype)
            else:
                if b <= 0:
                    raise RuntimeError(f"torch.histogramdd(): bins must be > 0, but got {b} for "
                                       f"dimension {k}")
                lo, hi = _outer_edges("torch.histogramdd", column, *(
                    range[2 * k:2 * k + 2] if range is not None else (None, None)), 0.5,
                    (0.0, 1.0), dim=k)
                e = linspace(lo, hi, b + 1, dtype=input.dtype, device=input.device)
            edges.append(e)
            sizes.append(e.shape[0] - 1)
            index, ok = _bin_index(column, e)
            flat = index if flat is None else flat * sizes[-1] + index
            inside = ok if inside is None else inside.logical_and(ok)
        w = to_dtype(inside, input.dtype) if weight is None else \
            where(inside, reshape(weight, (-1,)), 0.0)
        total = 1
        for s in sizes:
            total *= s
        hist = reshape(scatter_add(zeros((total,), dtype=input.dtype, device=input.device), 0,
                                   flat, w), tuple(sizes))
        if density:
            volume = None
            for k, e in enumerate(edges):
                shape = [1] * dims
                shape[k] = sizes[k]
                width = reshape(diff(e), tuple(shape))
                volume = width if volume is None else volume * width
            hist = hist / (sum_(hist) * volume)
    return HistogramddResult(hist, tuple(edges))
