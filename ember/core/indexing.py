"""Parsing of `x[key]` into the `getitem`/`setitem` index spec (see ember.core.ops.indexing).

Follows PyTorch: ints, slices with positive steps, None, Ellipsis, integer tensors (or
lists) and boolean masks. Ints always select (they remove their dimension first, unlike
NumPy, which treats them as advanced indices beside tensors); the tensor indices then
broadcast together, and their result dimensions go where the first of them stood if they
are adjacent (ints in between do not count), else in front.
"""

from __future__ import annotations

import numbers
import operator
from typing import Any, NamedTuple

import numpy as np

from ember.core import dtype as dt
from ember.core import tracing
from ember.core.dispatch import run, run_view, user_stacklevel
from ember.core.errors import warn_once, with_context
from ember.core.host import host_array
from ember.core.shapes import broadcast_shapes, fmt_shape
from ember.core.tensor import Tensor


class ParsedIndex(NamedTuple):
    spec: tuple  # one entry per input dimension, plus ("none",) entries
    tensors: tuple  # int64 index tensors referenced by ("tensor", k)
    shape: tuple[int, ...]  # the result's shape
    basic: bool  # no tensor index: the result is a view
    # the key's bool (or uint8) mask when it is the key's only tensor index: PyTorch writes a
    # one-element value through it as masked_fill_ does (any dtype), see ops.indexing.setitem
    mask: Tensor | None = None


def _is_bool_scalar(k: Any) -> bool:
    """A Python bool, or a 0-d bool or uint8 tensor: PyTorch reads it as a new dimension of
    size 1, indexed with [0] (True) or [] (False)."""
    return k is True or k is False or (isinstance(k, Tensor) and k.ndim == 0 and
                                       k.dtype in (dt.bool_, dt.uint8))


def _as_index_tensor(k: Any, x: Tensor) -> Any:
    """A list, range or array-like entry of a key as the tensor PyTorch makes of it."""
    if isinstance(k, range):  # a sequence of integers, as PyTorch takes it: like a list
        k = list(k)
    if isinstance(k, list) or (hasattr(k, "__array__") and not isinstance(k, Tensor)):
        k = Tensor._from_data(k, device=x.device)
        if k.dtype.is_floating_point and k.numel() == 0:
            k = k.long()
    return k


def unsqueeze_bools(x: Tensor, key: Any) -> tuple[Tensor, Any]:
    """PyTorch's reading of bool scalars in a key (`x[True]`, `x[..., False]`,
    `x[ember.tensor(True), 0]`): each inserts a dimension of size 1 where it stands and
    indexes it with the index tensor [0] (True) or [] (False), an advanced index. Returns
    `x` with those dimensions inserted (a view) and the key with the bools replaced; the
    same `x` and key when the key has none."""
    items = key if isinstance(key, tuple) else (key,)
    if not any(_is_bool_scalar(k) for k in items):
        return x, key
    items = [_as_index_tensor(k, x) for k in items]
    bools = [_is_bool_scalar(k) for k in items]

    def width(k: Any) -> int:  # the input dimensions an entry (not a bool) consumes
        if k is None or k is Ellipsis:
            return 0
        if isinstance(k, Tensor) and k.dtype in (dt.bool_, dt.uint8):
            return k.ndim
        return 1
    rest = x.ndim - sum(width(k) for k, b in zip(items, bools) if not b)
    from ember.core.creation import zeros  # (creation imports this module's users)
    pos, inserted, out = 0, [], []
    for k, b in zip(items, bools):
        if b:
            inserted.append(pos)
            pos += 1
            out.append(zeros((1 if bool(k) else 0,), dtype=dt.int64, device=x.device))
        else:
            pos += max(rest, 0) if k is Ellipsis else width(k)
            out.append(k)
    for p in inserted:
        x = x.unsqueeze(p)
    return x, tuple(out)


def parse_basic(shape: tuple[int, ...], key: Any) -> ParsedIndex | None:
    """The fast path for keys of plain ints and slices (the common case: `x[i]`,
    `x[:, a:b]`, narrow, select); None for anything else."""
    if type(key) is not tuple:
        key = (key,)
    if len(key) > len(shape):
        return None
    spec, out = [], []
    for d, k in enumerate(key):
        kind = type(k)
        if kind is int:
            n = shape[d]
            if not -n <= k < n:
                raise IndexError(f"index {k} is out of bounds for dimension {d} with size {n}")
            spec.append(("int", k % n))
        elif kind is slice:
            if k.step is not None and (type(k.step) is not int or k.step <= 0):
                return None  # the general path raises the right error
            start, stop, step = k.indices(shape[d])
            spec.append(("slice", start, stop, step))
            out.append(len(range(start, stop, step)))
        else:
            return None
    for d in range(len(key), len(shape)):
        spec.append(("slice", 0, shape[d], 1))
        out.append(shape[d])
    return ParsedIndex(tuple(spec), (), tuple(out), True)


def full_slice(k: slice, size: int) -> bool:
    """Whether PyTorch skips this slice of a tuple key (`:`, `0:`, `0:n` with n >= size)."""
    start = 0 if k.start is None else operator.index(k.start)
    stop = size if k.stop is None else operator.index(k.stop)
    step = 1 if k.step is None else operator.index(k.step)
    return start == 0 and stop >= size and step == 1


def view_label(key: Any, shape: tuple[int, ...]) -> str:
    """The grad_fn name PyTorch gives basic indexing `x[key]`: that of the last view op its
    indexing applies (select, slice, unsqueeze), AliasBackward0 when none does. A lone
    slice is always applied; inside a tuple key, full slices are skipped."""
    if type(key) is not tuple:
        if key is None:
            return "UnsqueezeBackward0"
        if key is Ellipsis:
            return "AliasBackward0"
        return "SliceBackward0" if isinstance(key, slice) else "SelectBackward0"
    consumed = sum(k is not None and k is not Ellipsis for k in key)
    label, dim = "AliasBackward0", 0
    for k in key:
        if k is None:
            label = "UnsqueezeBackward0"
        elif k is Ellipsis:
            dim += len(shape) - consumed
        else:
            if not isinstance(k, slice):
                label = "SelectBackward0"
            elif not full_slice(k, shape[dim] if dim < len(shape) else 0):  # (past a 2nd ...)
                label = "SliceBackward0"
            dim += 1
    return label


def write_label(key: Any, shape: tuple[int, ...], value: Any) -> str:
    """The grad_fn name PyTorch gives `x` after `x[key] = value`: CopySlices when its
    indexing makes a view to write into (an int or 0-d integer tensor, a slice that is not
    full, None, a bool scalar), else IndexPutBackward0 for a tensor (or list) index, else
    that of the write into `x` itself: fill_ of a 0-d value, copy_ of any other."""
    items = key if type(key) is tuple else (key,)
    widths = [_width(k) for k in items]
    dim, advanced = 0, False
    for k, width in zip(items, widths):
        if k is Ellipsis:
            dim += len(shape) - sum(widths)
        elif k is None or _is_bool_scalar(k) or isinstance(k, numbers.Integral) or (
                isinstance(k, Tensor) and not k.ndim):
            return "CopySlices"
        elif isinstance(k, slice):
            if not full_slice(k, shape[dim] if dim < len(shape) else 0):
                return "CopySlices"
        else:
            advanced = True
        dim += width
    if advanced:
        return "IndexPutBackward0"
    value_shape = tuple(value.shape) if isinstance(value, Tensor) else \
        (() if isinstance(value, (numbers.Number, bool)) else None)
    return "FillBackward3" if value_shape == () and shape != () else "CopyBackwards"


def _width(k: Any) -> int:
    """The input dimensions an entry of a key consumes (a bool scalar: none)."""
    if k is None or k is Ellipsis or _is_bool_scalar(k):
        return 0
    if isinstance(k, Tensor) and k.dtype in (dt.bool_, dt.uint8):
        return k.ndim
    return 1


def _drop_later_ellipses(items: list, ndim: int, rest: int) -> list:
    """A key with several ellipses, as PyTorch walks it: each one moves the dimension it
    is at by `rest` (the dimensions no other entry consumes), so the first stands for them
    all and the later ones skip past the end. They change nothing when `rest` is 0, or when
    only full slices follow them; any other entry after them is out of range."""
    first = items.index(Ellipsis)
    out = items[:first + 1]
    dim, ndim_now = 0, ndim
    for k in items[:first]:
        dim, ndim_now = _walk(k, dim, ndim_now)
    dim += rest
    past = False
    for k in items[first + 1:]:
        if k is Ellipsis:
            past = past or rest > 0
            dim += rest
            continue
        if past and isinstance(k, slice) and k == slice(None):
            continue
        if past:
            n = ndim_now + (k is None)
            raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, "
                             f"{n - 1}], but got {dim})")
        out.append(k)
        dim, ndim_now = _walk(k, dim, ndim_now)
    return out


def _walk(k: Any, dim: int, ndim: int) -> tuple[int, int]:
    """PyTorch's dimension pointer and the result's dims after the key entry `k` (an int
    selects at the pointer: it removes a dim and leaves the pointer)."""
    if isinstance(k, int):
        return dim, ndim - 1
    if k is None:
        return dim + 1, ndim + 1
    return dim + (k[1].ndim if isinstance(k, tuple) else 1), ndim


_INDEX_DTYPES = (dt.int64, dt.int32)  # (and the uint8 and bool masks, taken before)
def parse(x: Tensor, key: Any) -> ParsedIndex:
    fast = parse_basic(x._data.shape, key)
    if fast is not None:
        return fast
    shape = x._data.shape
    if type(key) is Tensor and key._dtype is dt.int64 and key._device is x._device and \
            key._data.shape and shape and shape[0]:
        return _parse_one_index_tensor(shape, key)
    if type(key) is Tensor and key._dtype is dt.bool_ and key._device is x._device and \
            key._data.shape and shape[:key._data.ndim] == key._data.shape:
        return _parse_one_mask(shape, key)
    if not x._data.shape and not isinstance(key, tuple):  # PyTorch's words for `loss.data[0]`
        if isinstance(key, numbers.Integral) and not isinstance(key, bool):
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python "
                             "or `tensor.item<T>()` in C++ to convert a 0-dim tensor to a "
                             "number")
        if isinstance(key, slice):
            raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    if not isinstance(key, tuple):
        key = (key,)
    items: list[Any] = []
    masks: list[Tensor] = []  # the bool and uint8 masks, as the key gave them
    bad: TypeError | None = None
    for k in key:
        k = _as_index_tensor(k, x)
        if isinstance(k, Tensor):
            if k.device != x.device and k.device.type != "cpu":
                raise RuntimeError(f"indexing: indices should be either on cpu or on the same "
                                   f"device as the indexed tensor ({x.device}), got {k.device}")
            if k.device != x.device:
                k = k.to(x.device)
            if k.dtype is dt.uint8 and k.ndim:
                warn_once(f"indexing with dtype {dt.API_NAME}.uint8 is now deprecated, please "
                          f"use a dtype {dt.API_NAME}.bool instead.", UserWarning,
                          stacklevel=user_stacklevel())
                masks.append(k)
                items.append(("mask", k != 0))
                continue
            if k.dtype is dt.bool_:
                masks.append(k)
                items.append(("mask", k))
                continue
            if k.dtype not in _INDEX_DTYPES:
                raise with_context(IndexError("tensors used as indices must be long, int, byte "
                                              "or bool tensors"), f"indexing: got {k.dtype}")
            if k.ndim == 0:
                items.append(int(k))
                continue
            items.append(k if k.dtype is dt.int64 else k.long())
        elif k is None or k is Ellipsis or isinstance(k, slice):
            items.append(k)
        elif isinstance(k, numbers.Integral):
            items.append(int(k))
        elif isinstance(k, (str, bytes)):  # PyTorch reads it as a sequence to make a tensor
            # of, once it has counted the key's dims (it takes one)
            bad = bad or TypeError(f"new(): invalid data type '{type(k).__name__}'")
            items.append(slice(None))
        else:
            raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or "
                             f"byte Variables are valid indices (got {type(k).__name__})")

    consumed = sum(k[1].ndim if isinstance(k, tuple) else
                   (0 if k is None or k is Ellipsis else 1) for k in items)
    if consumed > x.ndim:
        raise with_context(IndexError(f"too many indices for tensor of dimension {x.ndim}"),
                           f"index: {consumed} indices for a tensor of shape {tuple(x.shape)}")
    if bad is not None:
        raise bad
    if sum(k is Ellipsis for k in items) > 1:
        items = _drop_later_ellipses(items, x.ndim, x.ndim - consumed)
    if any(k is Ellipsis for k in items):
        i = next(j for j, k in enumerate(items) if k is Ellipsis)
        items[i:i + 1] = [slice(None)] * (x.ndim - consumed)
    else:
        items.extend([slice(None)] * (x.ndim - consumed))

    spec: list[tuple] = []
    tensors: list[Tensor] = []
    int_tensors: list[tuple[int, int]] = []  # (position in tensors, size of its dimension)
    shape_parts: list[Any] = []  # result sizes of basic entries, or "adv" markers, in order
    dim = 0
    for k in items:
        if k is None:
            spec.append(("none",))
            shape_parts.append(1)
        elif isinstance(k, slice):
            size = x.shape[dim]
            if k.step is not None and int(k.step) <= 0:
                raise with_context(ValueError("slice step cannot be zero" if int(k.step) == 0
                                              else "step must be greater than zero"),
                                   f"indexing: got step {k.step}")
            start, stop, step = k.indices(size)
            spec.append(("slice", start, stop, step))
            shape_parts.append(len(range(start, stop, step)))
            dim += 1
        elif isinstance(k, int):
            size = x.shape[dim]
            if not -size <= k < size:
                raise IndexError(f"index {k} is out of bounds for dimension {dim} with size "
                                 f"{size}")
            spec.append(("int", k % size))  # removes the dimension: no part of the shape
            dim += 1
        elif isinstance(k, tuple):  # a bool mask covering k.ndim dimensions
            mask = k[1]
            want = x.shape[dim:dim + mask.ndim]
            if tuple(mask.shape) != tuple(want):
                j = next((j for j, (m, w) in enumerate(zip(mask.shape, want)) if m != w),
                         len(want))
                raise IndexError(f"The shape of the mask {fmt_shape(mask.shape)} at index {j} "
                                 f"does not match the shape of the indexed tensor "
                                 f"{fmt_shape(x.shape)} at index {dim + j}")
            nz = run("nonzero", mask)
            for j in range(mask.ndim):
                tensors.append(nz[:, j] if mask.ndim > 1 else nz.reshape(-1))
                spec.append(("tensor", len(tensors) - 1))
                shape_parts.append("adv")
            dim += mask.ndim
        else:  # an integer tensor, checked once the shapes are known
            int_tensors.append((len(tensors), x.shape[dim]))
            tensors.append(k)
            spec.append(("tensor", len(tensors) - 1))
            shape_parts.append("adv")
            dim += 1

    n_tensors = sum(isinstance(k, (Tensor, tuple)) for k in items)  # a mask counts once
    mask = masks[0] if n_tensors == 1 and masks else None
    if not tensors:
        return ParsedIndex(tuple(spec), (), tuple(shape_parts), True, mask)
    adv_shape: tuple[int, ...] = ()
    try:
        for t in tensors:
            adv_shape = broadcast_shapes("index", adv_shape, tuple(t.shape))
    except RuntimeError:
        raise IndexError("shape mismatch: indexing tensors could not be broadcast together "
                         "with shapes " + ", ".join(fmt_shape(tuple(t.shape)) for t in tensors)
                         ) from None
    if any(n == 0 for _, n in int_tensors) and all(adv_shape):
        raise IndexError("index is out of bounds for dimension with size 0")
    if int_tensors:  # (a mask's indices are in bounds: only the integer tensors can fail)
        sizes: list[int | None] = [None] * len(tensors)
        for i, n in int_tensors:
            sizes[i] = n
        check_bounds(tensors, sizes, adv_shape)
    positions = [i for i, p in enumerate(shape_parts) if p == "adv"]
    adjacent = positions == list(range(positions[0], positions[-1] + 1))
    basic = [p for p in shape_parts if p != "adv"]
    if adjacent:
        before = [p for p in shape_parts[:positions[0]]]
        after = [p for p in shape_parts[positions[-1] + 1:]]
        shape = tuple(before) + adv_shape + tuple(after)
    else:
        shape = adv_shape + tuple(basic)
    return ParsedIndex(tuple(spec), tuple(tensors), shape, False, mask)


def _parse_one_index_tensor(shape: tuple[int, ...], key: Tensor) -> ParsedIndex:
    """`x[idx]` with one int64 tensor on x's device (embedding lookups, batches by index,
    the commonest advanced index): what the general parse builds for it, without its
    walk over the key."""
    rows = tuple(key._data.shape)
    check_bounds([key], [shape[0]], rows)
    spec = (("tensor", 0),) + tuple(("slice", 0, n, 1) for n in shape[1:])
    return ParsedIndex(spec, (key,), rows + tuple(shape[1:]), False, None)


def _parse_one_mask(shape: tuple[int, ...], mask: Tensor) -> ParsedIndex:
    """`x[mask]` with one bool mask over x's leading dimensions, on x's device: what the
    general parse builds for it (the mask's nonzero positions, one index tensor per
    dimension it covers), without its walk over the key."""
    nz = run("nonzero", mask)
    n, k = nz._data.shape
    if k == 1:
        tensors = (run_view("reshape", nz, shape=(n,), copy=False),)
    else:
        tensors = tuple(run_view("getitem", nz, index=(("slice", 0, n, 1), ("int", j)),
                                 shape=(n,)) for j in range(k))
    spec = tuple(("tensor", j) for j in range(k)) + tuple(("slice", 0, s, 1)
                                                          for s in shape[k:])
    return ParsedIndex(spec, tensors, (n,) + tuple(shape[k:]), False, mask)


def _index_range(index: Tensor) -> tuple[int, int]:
    """The smallest and largest entry of a non-empty index tensor."""
    if index._device.type == "cpu":  # (its own values: two NumPy calls, no dispatches)
        values = host_array(index)
        return int(values.min()), int(values.max())
    with tracing.paused():  # a check, not part of the computation
        lo = host_array(run("min", index, dims=None, keepdim=False)).item()
        hi = host_array(run("max", index, dims=None, keepdim=False)).item()
    return lo, hi


def first_outside(index: Tensor, lo: int, hi: int) -> int | None:
    """The first entry of `index` (in row-major order, as PyTorch's kernels meet them)
    outside [lo, hi), or None. Two reductions when all are inside; the search for the
    first one only on the way to an error."""
    if index.numel() == 0 or index._backend.shape_only:  # (meta indices: no values)
        return None
    least, most = _index_range(index)
    if least >= lo and most < hi:
        return None
    flat = host_array(index).reshape(-1)
    return int(flat[np.flatnonzero((flat < lo) | (flat >= hi))[0]])


def check_bounds(tensors: list[Tensor], sizes: list[int | None],
                 shape: tuple[int, ...]) -> None:
    """PyTorch's IndexError for advanced indices outside [-size, size) (a size None: a
    mask's, in bounds): the tensors, broadcast to `shape`, are met element by element,
    each element's tensors in order, and the error names the first bad index with the
    ordinal of its tensor among them ("dimension k", as PyTorch's index kernel counts)."""
    if all(n is None or first_outside(t, -n, n) is None for t, n in zip(tensors, sizes)):
        return
    big = 1 << 62
    sizes = [big if n is None else n for n in sizes]
    with tracing.paused():
        flats = [np.broadcast_to(host_array(t), shape).reshape(-1) for t in tensors]
    outside = np.stack([(f < -n) | (f >= n) for f, n in zip(flats, sizes)], axis=1)
    element = int(np.flatnonzero(outside.any(axis=1))[0])
    k = int(np.flatnonzero(outside[element])[0])
    raise IndexError(f"index {int(flats[k][element])} is out of bounds for dimension {k} "
                     f"with size {sizes[k]}")


def check_in_range(op: str, index: Tensor, size: int, dim: int, *,
                   select: bool = False) -> None:
    """PyTorch's check of the indices of gather, scatter, index_select and index_add:
    in [0, size), a negative index never counts from the end; the first one outside (in
    row-major order) is named. `select`: index_select's and index_add's IndexError; else
    gather's and scatter's RuntimeError."""
    bad = first_outside(index, 0, size)
    if bad is None:
        return
    if select:
        raise IndexError("index out of range in self")
    raise with_context(RuntimeError(f"index {bad} is out of bounds for dimension {dim} with "
                                    f"size {size}"),
                       f"{op}: index of shape {tuple(index.shape)}")
