"""Rearranging ops written with the shape and indexing families: NumPy-style joins and
splits (`atleast_2d`, `column_stack`, `dstack`, `hsplit` ...), rotations (`roll`,
`rot90`, `fliplr`), diagonals (`diag`, `diag_embed`, `diagflat`), the scatters that write
a view of a copy (`diagonal_scatter`, `select_scatter`, `slice_scatter`,
`as_strided_scatter`), index grids (`meshgrid`, `cartesian_prod`, `combinations`,
`tril_indices`, `unravel_index`), `repeat_interleave`, `as_strided`, and the `*_copy`
forms of the views.

Every op here is a composite: it runs on every backend and exports through its parts.
The scatters (and `diag_embed`, a diagonal scatter into zeros) write into a copy of their
input with indexing, never through a view of it, so a trace records the write and
replays and exports it.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember.core import costs
from ember.core import dtype as dt
from ember.core.creation import arange, zeros
from ember.core.declare import composite
from ember.core.dispatch import kernel_refuses
from ember.core.grad_mode import no_grad
from ember.core.graph import record
from ember.core.inplace import metadata_inplace
from ember.core.ops.elementwise import refuse_complex_autograd, to_dtype
from ember.core.ops.indexing import index_select, narrow, select, split, tensor_split, unbind
from ember.core.ops.shape import (
    _strided,
    cat,
    clone,
    contiguous,
    diagonal,
    expand,
    flip,
    permute,
    reshape,
    sizes_arg,
    squeeze,
    stack,
    strided_positions,
    t,
    transpose,
    unsqueeze,
    vstack,
)
from ember.core.placement import DeviceLike, resolve
from ember.core.shapes import fmt_shape, normalize_dim
from ember.core.tensor import Tensor

_diagonal = diagonal  # `diag`'s parameter is named `diagonal`, as PyTorch's


def _tensors_arg(op: str, tensors: tuple) -> tuple[list[Tensor], bool]:
    """The tensors of `f(x)`, `f(x, y)` or `f([x, y])`, and whether one bare tensor came."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return list(tensors[0]), False
    for x in tensors:
        if not isinstance(x, Tensor):
            raise TypeError(f"{op}(): expected Tensor as element of the arguments, but got "
                            f"{type(x).__name__}")
    return list(tensors), len(tensors) == 1


# -- at least n dimensions, and the NumPy-style joins ----------------------------------


def _atleast(op: str, n: int, tensors: tuple) -> Any:
    xs, single = _tensors_arg(op, tensors)
    out = []
    for x in xs:
        shape = tuple(x.shape)
        # 0-d -> (1,)*n (a reshape); a 1-D (k,) -> (1, k) or (1, k, 1); a 2-D (a, b) ->
        # (a, b, 1) (unsqueezes: PyTorch's steps, which name the autograd node)
        if not shape:
            x = reshape(x, (1,) * n)
        elif len(shape) < n:
            if len(shape) == 1:
                x = unsqueeze(x, 0)
            if n == 3:
                x = unsqueeze(x, -1)
        out.append(x)
    return out[0] if single else tuple(out)


@composite(complex=True, variants="function", cost=costs.view)
def atleast_1d(*tensors: Any) -> Any:
    """Each input viewed with at least one dimension (0-d tensors become shape (1,)); one
    tensor for one tensor given, else a tuple."""
    return _atleast("atleast_1d", 1, tensors)


@composite(complex=True, variants="function", cost=costs.view)
def atleast_2d(*tensors: Any) -> Any:
    """Each input viewed with at least two dimensions (a 1-D tensor becomes a row)."""
    return _atleast("atleast_2d", 2, tensors)


@composite(complex=True, variants="function", cost=costs.view)
def atleast_3d(*tensors: Any) -> Any:
    """Each input viewed with at least three dimensions (NumPy's rule: (k,) -> (1, k, 1),
    (a, b) -> (a, b, 1))."""
    return _atleast("atleast_3d", 3, tensors)


def _check_list(op: str, tensors: Any) -> list[Tensor]:
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}(): argument 'tensors' (position 1) must be tuple of Tensors, "
                        f"not {type(tensors).__name__}")
    if not tensors:
        raise RuntimeError(f"{op} expects a non-empty TensorList")
    return list(tensors)


@composite(complex=True, variants="function out", cost=costs.movement)
def column_stack(tensors: Sequence[Tensor]) -> Tensor:
    """Joins tensors as columns: 0-d and 1-D tensors become columns, the others are
    joined along dim 1."""
    xs = _check_list("column_stack", tensors)
    return cat([reshape(x, (x.numel(), 1)) if x.ndim <= 1 else x for x in xs], 1)


@composite(complex=True, variants="function out", cost=costs.movement)
def row_stack(tensors: Sequence[Tensor]) -> Tensor:
    """Alias of `vstack`: joins tensors row-wise (1-D tensors become rows)."""
    return vstack(_check_list("row_stack", tensors))


@composite(complex=True, variants="function out", cost=costs.movement)
def dstack(tensors: Sequence[Tensor]) -> Tensor:
    """Joins tensors depth-wise (along dim 2), after `atleast_3d`."""
    return cat(list(atleast_3d(_check_list("dstack", tensors))), 2)


# -- splits ---------------------------------------------------------------------------


def _numpy_split(op: str, input: Tensor, sections: Any, dim: int, min_dims: int) -> tuple:
    if input.ndim < min_dims:
        raise RuntimeError(f"torch.{op} requires a tensor with at least {min_dims} "
                           f"dimension, but got a tensor with {input.ndim} dimensions!")
    if isinstance(sections, int) and not isinstance(sections, bool):
        size = input.shape[dim]
        if sections == 0 or size % sections:
            raise RuntimeError(f"torch.{op} attempted to split along dimension {dim}, but "
                               f"the size of the dimension {size} is not divisible by the "
                               f"split_size {sections}!")
    return tensor_split(input, sections, dim)


@composite(complex=True, cost=costs.view)
def hsplit(input: Tensor, indices_or_sections: Any) -> tuple:
    """Splits column-wise (dim 1; dim 0 of a 1-D tensor) into equal sections or at the
    given indices (views)."""
    return _numpy_split("hsplit", input, indices_or_sections, 1 if input.ndim > 1 else 0, 1)


@composite(complex=True, cost=costs.view)
def vsplit(input: Tensor, indices_or_sections: Any) -> tuple:
    """Splits row-wise (dim 0) into equal sections or at the given indices (views)."""
    return _numpy_split("vsplit", input, indices_or_sections, 0, 2)


@composite(complex=True, cost=costs.view)
def dsplit(input: Tensor, indices_or_sections: Any) -> tuple:
    """Splits depth-wise (dim 2) into equal sections or at the given indices (views)."""
    return _numpy_split("dsplit", input, indices_or_sections, 2, 3)


@composite(complex=True, cost=costs.view)
def split_with_sizes(input: Tensor, split_sizes: Sequence[int], dim: int = 0) -> tuple:
    """Splits into pieces of the given sizes along `dim` (views)."""
    return split(input, [int(s) for s in split_sizes], dim)


def _unsafe(label: str, input: Tensor, dim: int, split_pieces: Callable[[], tuple]) -> tuple:
    """The pieces of a split as PyTorch's `unsafe_*` ops return them: sharing `input`'s
    memory, but no views of it to autograd (no `_base`, a version counter of their own),
    so an in-place write into one is allowed and leaves `input`'s graph alone; one
    `label` node takes all their gradients back."""
    with no_grad():
        pieces = split_pieces()
    outs = tuple(Tensor._make(p._data, p._dtype, p._device, p._backend) for p in pieces)
    d = normalize_dim(label, dim, input.ndim)

    def backward(node: Any, grads: Any) -> tuple:
        full = [zeros(meta[0], dtype=meta[1], device=meta[2]) if g is None else g
                for g, meta in zip(grads, node.attrs["_out_meta"])]
        return (cat(full, d),)
    record(label, backward, (input,), outs)
    return outs


@composite(complex=True, cost=costs.view)
def unsafe_split(input: Tensor, split_size: int, dim: int = 0) -> tuple:
    """`split` into pieces of `split_size` that are no views to autograd: in-place writes
    into them are allowed (see `_unsafe`)."""
    return _unsafe("UnsafeSplitBackward0", input, dim, lambda: split(input, split_size, dim))


@composite(complex=True, cost=costs.view)
def unsafe_split_with_sizes(input: Tensor, split_sizes: Sequence[int], dim: int = 0) -> tuple:
    """`split_with_sizes` (see `unsafe_split`)."""
    return _unsafe("UnsafeSplitWithSizesBackward0", input, dim,
                   lambda: split(input, [int(s) for s in split_sizes], dim))


@composite(complex=True, cost=costs.view)
def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple:
    """`chunk` (see `unsafe_split`; PyTorch's node is unsafe_split's)."""
    return _unsafe("UnsafeSplitBackward0", input, dim, lambda: input.chunk(chunks, dim))


# -- flips, rotations, ravel ----------------------------------------------------------


@composite(complex=True, cost=costs.movement)
def fliplr(input: Tensor) -> Tensor:
    """Reverses the order of the columns (dim 1)."""
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, (1,))


@composite(complex=True, cost=costs.movement)
def flipud(input: Tensor) -> Tensor:
    """Reverses the order of the rows (dim 0)."""
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, (0,))


@composite(complex=True, cost=costs.movement, node_label="Rot90Backward0")
def rot90(input: Tensor, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:
    """Rotates by 90 degrees `k` times in the plane of `dims`, from the first towards the
    second."""
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    a, b = (normalize_dim("rot90", d, input.ndim) for d in dims)
    if a == b:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {a} and "
                           f"dim1 = {b}")
    k = k % 4
    if k == 1:
        return transpose(flip(input, (b,)), a, b)
    if k == 2:
        return flip(input, (a, b))
    if k == 3:
        return transpose(flip(input, (a,)), a, b)
    return clone(input)


@composite(complex=True, node_label="RollBackward0", cost=costs.movement)
def roll(input: Tensor, shifts: Any, dims: Any = None) -> Tensor:
    """Rolls the elements along `dims` by `shifts` (elements leaving one end come back at
    the other); without `dims`, the flattened tensor is rolled and its shape restored."""
    shifts = (shifts,) if isinstance(shifts, int) else tuple(int(s) for s in shifts)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                               f"dims:0")
        return reshape(roll(reshape(input, (-1,)), shifts, 0), tuple(input.shape))
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                           f"dims:{len(dims)}")
    out = input
    for shift, dim in zip(shifts, dims):
        d = normalize_dim("roll", dim, input.ndim)
        n = input.shape[d]
        s = shift % n if n else 0
        if s:
            out = cat([narrow(out, d, n - s, s), narrow(out, d, 0, n - s)], d)
    return clone(out) if out is input else out


@composite(complex=True, cost=costs.view)
def ravel(input: Tensor) -> Tensor:
    """The elements as a 1-D tensor: a view when `input` is contiguous, else a copy."""
    return contiguous(input).view(-1)


# -- diagonals ------------------------------------------------------------------------


def _diag_label(input: Tensor, *args: Any, **kwargs: Any) -> str | None:
    """PyTorch's node of `diag`: its 1-D case is diag_embed's; its 2-D one a
    `diagonal_copy`'s."""
    return "DiagonalBackward0_copy" if input.ndim == 2 else None


@composite(complex=True, variants="function method out", cost=costs.movement,
           node_label=_diag_label)
def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """Of a 1-D tensor, the square matrix with it on diagonal `diagonal`; of a 2-D tensor,
    a copy of its diagonal `diagonal`."""
    if input.ndim == 1:
        return diag_embed(input, diagonal, 0, 1)
    if input.ndim == 2:
        return clone(_diagonal(input, diagonal, 0, 1))
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")


@composite(complex=True, cost=costs.movement, node_label="DiagEmbedBackward0")
def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """A tensor whose diagonals (`offset`, in the plane of `dim1` and `dim2` of the
    result) hold the last dimension of `input`; zeros elsewhere."""
    n = input.ndim + 1
    d1, d2 = normalize_dim("diag_embed", dim1, n), normalize_dim("diag_embed", dim2, n)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    size = input.shape[-1] + abs(int(offset)) if input.ndim else 1 + abs(int(offset))
    rest = iter(tuple(input.shape)[:-1])
    shape = tuple(size if d in (d1, d2) else next(rest) for d in range(n))
    out = zeros(shape, dtype=input.dtype, device=input.device)
    return diagonal_scatter(out, input, offset, d1, d2)


@composite(complex=True, cost=costs.movement)
def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """The square matrix with the flattened input on diagonal `offset`."""
    return diag_embed(reshape(input, (-1,)), offset, 0, 1)


# -- scatters: a copy of input with a view of it overwritten --------------------------


def _scatter_into(op: str, input: Tensor, src: Tensor, key: tuple, target_shape: tuple,
                  value: Callable[[Tensor], Tensor] = lambda v: v) -> Tensor:
    """A copy of `input` with `src` written at `key` (a setitem key selecting a part of
    shape `target_shape`); `value` lays `src` out as `copy[key]` is laid out. The write is
    to the copy itself, not through a view of it, so traces replay and export it."""
    if tuple(target_shape) != tuple(src.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. "
                           f"src size = {fmt_shape(tuple(src.shape))}, slice size = "
                           f"{fmt_shape(tuple(target_shape))}")
    if src.dtype != input.dtype:  # cast to input's dtype, as PyTorch's copy_
        src = src.to(input.dtype)
    out = clone(input)
    out[key] = value(src)
    return out


@composite(complex=True, cost=costs.movement)
def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0,
                     dim2: int = 1) -> Tensor:
    """A copy of `input` with `src` written into its diagonal (as `diagonal` takes it)."""
    target = diagonal(input, offset, dim1, dim2)
    d1, d2 = (normalize_dim("diagonal_scatter", d, input.ndim) for d in (dim1, dim2))
    n = target.shape[-1]
    key: list[Any] = [slice(None)] * input.ndim
    key[d1] = arange(max(-offset, 0), max(-offset, 0) + n, device=input.device)
    key[d2] = arange(max(offset, 0), max(offset, 0) + n, device=input.device)
    # tensor indices in dims d1 and d2 put the diagonal where d1 stood when they are
    # adjacent, else in front (PyTorch's indexing rule)
    at = min(d1, d2) if abs(d1 - d2) == 1 else 0
    return _scatter_into("diagonal_scatter", input, src, tuple(key), tuple(target.shape),
                         lambda v: v.movedim(-1, at))


@composite(complex=True, cost=costs.movement)
def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """A copy of `input` with `src` written at `index` of dimension `dim`."""
    refuse_complex_autograd("select_scatter", input.dtype, input, src)
    d = normalize_dim("select_scatter", dim, input.ndim)
    key = (slice(None),) * d + (int(index),)
    return _scatter_into("select_scatter", input, src, key, tuple(select(input, d, index).shape))


@composite(complex=True, variants="function method out", cost=costs.movement)
def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start: int | None = None,
                  end: int | None = None, step: int = 1) -> Tensor:
    """A copy of `input` with `src` written into the slice `start:end:step` of `dim`."""
    refuse_complex_autograd("slice_scatter", input.dtype, input, src)
    d = normalize_dim("slice_scatter", dim, input.ndim)
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    key = (slice(None),) * d + (slice(start, end, step),)
    return _scatter_into("slice_scatter", input, src, key, tuple(input[key].shape))


@composite(complex=True, cost=costs.movement)
def as_strided_scatter(input: Tensor, src: Tensor, size: Sequence[int], stride: Sequence[int],
                       storage_offset: int | None = None) -> Tensor:
    """A copy of `input` with `src` written into `as_strided(size, stride,
    storage_offset)` of it (the copy is contiguous, its storage offset 0)."""
    size, stride = sizes_arg((size,)), sizes_arg((stride,))
    view = as_strided(clone(input).detach(), size, stride, storage_offset or 0)
    pos = strided_positions(size, tuple((s,) for s in stride), (storage_offset or 0,),
                            (input.numel(),))
    index = Tensor._from_data(pos.reshape(-1), device=input.device)
    flat = _scatter_into("as_strided_scatter", reshape(input, (-1,)), src, (index,),
                         tuple(view.shape), lambda v: reshape(v, (-1,)))
    return reshape(flat, tuple(input.shape))


# -- as_strided ---------------------------------------------------------------------


def _storage_root(input: Tensor) -> Tensor:
    """The tensor owning `input`'s storage (itself, for a tensor that is not a view)."""
    return input._base if input._base is not None else input


@composite(complex=True, variants="function method inplace", cost=costs.view,
           inplace_method=metadata_inplace(
               lambda self, size, stride, storage_offset=None:
               as_strided(self, size, stride, storage_offset)))
def as_strided(input: Tensor, size: Sequence[int], stride: Sequence[int],
               storage_offset: int | None = None) -> Tensor:
    """A view of `input`'s storage with the given sizes, strides and offset, in elements
    (the offset is `input.storage_offset()` when not given). Every element it reaches
    must lie in the storage. The gradient goes to `input`, or to its base where the view
    reaches beyond `input`'s elements (PyTorch drops the gradient of the elements outside
    `input` there)."""
    size, stride = sizes_arg((size,)), sizes_arg((stride,))
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, "
                           f"got strides: {list(stride)}")
    if any(s < 0 for s in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(size)}: "
                           f"{list(size)}")
    offset = input.storage_offset() if storage_offset is None else int(storage_offset)
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    empty = math.prod(size) == 0
    last = offset + sum((n - 1) * s for n, s in zip(size, stride)) if not empty else offset
    # the view is taken on `input` when its elements are dense and hold every element
    # reached, else on the tensor owning the storage (`input`'s base), when that is dense
    root = _storage_root(input)
    for owner in (input, root):
        first = owner.storage_offset()
        if owner.is_contiguous() and (empty or first <= offset and
                                      last < first + owner.numel()):
            break
    else:
        end = root.storage_offset() + root.numel()
        if not empty and last >= end:
            size_of = input.element_size()
            raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, "
                               f"storage offset {offset}, and itemsize {size_of} requiring a "
                               f"storage size of {(last + 1) * size_of} are out of bounds "
                               f"for storage of size {end * size_of}")
        raise NotImplementedError("as_strided: the storage of this tensor is not dense (its "
                                  "base is a strided view)")
    if owner is not input and input._requires_grad and not owner._requires_grad:
        raise NotImplementedError("as_strided beyond the elements of a view that requires "
                                  "grad, of a base that does not, is not supported")
    flat = reshape(owner, (-1,)) if owner.ndim != 1 else owner
    start = 0 if empty else offset - first
    return _strided(flat, size, tuple((s,) for s in stride), (start,), "AsStridedBackward0")


# -- index grids ----------------------------------------------------------------------


@composite(complex=True, variants="function", cost=costs.view)
def meshgrid(*tensors: Any, indexing: str | None = None) -> tuple:
    """Coordinate grids of 1-D (or 0-d) tensors: the i-th output varies along dim i
    (`indexing="ij"`), or with the first two dims swapped (`"xy"`, NumPy's default).
    The outputs are expanded views."""
    xs, _ = _tensors_arg("meshgrid", tensors)
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass "
                      "the indexing argument.", UserWarning, stacklevel=3)
        indexing = "ij"
    # PyTorch's order of checks: the list, the dtypes and devices, the indexing, the ranks
    if not xs:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for x in xs:
        if x.dtype is not xs[0].dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
        if x.device != xs[0].device:
            raise RuntimeError("meshgrid expects all tensors to have the same device")
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but '
                           f'received: {indexing}')
    for x in xs:
        if x.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list "
                               f"but got: {x}")
    swap = indexing == "xy" and len(xs) >= 2
    if swap:
        xs[0], xs[1] = xs[1], xs[0]
    shape = tuple(x.numel() for x in xs)
    out = []
    for i, x in enumerate(xs):
        view = (1,) * i + (-1,) + (1,) * (len(xs) - i - 1)
        out.append(expand(reshape(x, view), shape))
    if swap:
        out[0], out[1] = out[1], out[0]
    return tuple(out)


@composite(complex=True, variants="function", cost=costs.movement)
def cartesian_prod(*tensors: Tensor) -> Tensor:
    """Every combination of one element of each 1-D tensor, as rows (itertools.product);
    one tensor is returned as it is."""
    xs, _ = _tensors_arg("cartesian_prod", tensors)
    for x in xs:
        if x.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {fmt_shape(tuple(x.shape))}")
    if len(xs) == 1:
        return xs[0]
    grids = meshgrid(*xs, indexing="ij")
    return stack([reshape(g, (-1,)) for g in grids], 1)


@composite(complex=True, variants="function", cost=costs.movement,
           node_label="BlockDiagBackward0")
def block_diag(*tensors: Tensor) -> Tensor:
    """The block-diagonal matrix of the inputs (0-d tensors are 1 x 1 blocks, 1-D ones
    rows), zeros elsewhere, in their promoted dtype."""
    blocks = []
    for i, x in enumerate(tensors):
        if x.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input {i} has {x.ndim} dimensions")
        blocks.append(reshape(x, (1, x.numel())) if x.ndim == 1 else
                      reshape(x, (1, 1)) if x.ndim == 0 else x)
    if not blocks:
        return zeros((1, 0))
    common = blocks[0].dtype
    for b in blocks[1:]:
        common = dt.promote_types(common, b.dtype)
    device = blocks[0].device
    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        r, c = b.shape
        parts = [zeros((r, left), dtype=common, device=device), to_dtype(b, common),
                 zeros((r, width - left - c), dtype=common, device=device)]
        rows.append(cat(parts, 1))
        left += c
    return cat(rows, 0)


def _index_tensor(rows: Any, device: Any) -> Tensor:
    return Tensor._from_data(np.asarray(rows, dtype=np.int64), device=device)


@composite(complex=True, variants="function", cost=costs.movement)
def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """The length-`r` combinations of the elements of a 1-D tensor, as rows
    (itertools.combinations, or combinations_with_replacement)."""
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {fmt_shape(tuple(input.shape))}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_empty((0,))
    pick = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    rows = list(pick(range(input.numel()), r))
    if not rows:
        return input.new_empty((0, r))
    index = _index_tensor(rows, input.device)
    return reshape(index_select(input, 0, reshape(index, (-1,))), (len(rows), r))


def _triangle_indices(op: str, np_fn: Callable, row: int, col: int, offset: int, dtype: Any,
                      device: DeviceLike) -> Tensor:
    d = dt.int64 if dtype is None else dtype
    if d not in (dt.int32, dt.int64):
        raise kernel_refuses(op, d)
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    rows, cols = np_fn(row, offset, col)
    dev, _ = resolve(device)
    return Tensor._from_data(np.stack([rows, cols]).astype(np.int64).reshape(2, -1),
                             dtype=d, device=dev)


@composite(variants="function", cost=costs.creation)
def tril_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None,
                 device: DeviceLike = None, layout: Any = None) -> Tensor:
    """The (row, column) coordinates of the lower triangle of a `row` x `col` matrix
    (diagonal `offset` and below), in row-major order: a 2 x N tensor."""
    return _triangle_indices("tril_indices", np.tril_indices, row, col, offset, dtype, device)


@composite(variants="function", cost=costs.creation)
def triu_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None,
                 device: DeviceLike = None, layout: Any = None) -> Tensor:
    """The (row, column) coordinates of the upper triangle of a `row` x `col` matrix
    (diagonal `offset` and above), in row-major order: a 2 x N tensor."""
    return _triangle_indices("triu_indices", np.triu_indices, row, col, offset, dtype, device)


@composite(variants="function", cost=costs.pointwise(2))
def unravel_index(indices: Tensor, shape: Any) -> tuple:
    """The coordinates, in a tensor of `shape`, of each flat index in `indices`: a tuple
    of tensors, one per dimension, each of `indices`' shape (negative indices count from
    the end)."""
    if not isinstance(indices, Tensor):
        raise TypeError(f"expected 'indices' to be a tensor, but got {type(indices).__name__}")
    if indices.dtype.is_floating_point or indices.dtype is dt.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = (int(shape),) if isinstance(shape, int) else tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got "
                         f"{tuple(shape)}")
    flat = to_dtype(indices, dt.int64)
    # floor division and modulus, as PyTorch's: indices out of range wrap around
    return tuple(flat // math.prod(shape[k + 1:]) % shape[k] for k in range(len(shape)))


# -- repeat_interleave ----------------------------------------------------------------


@composite(complex=True, cost=costs.movement,
           node_label=lambda input, repeats=None, *args, **kwargs:
           "ViewBackward0" if isinstance(repeats, int) else None)  # (a tensor's: index_select)
def repeat_interleave(input: Tensor, repeats: Any = None, dim: int | None = None, *,
                      output_size: int | None = None) -> Tensor:
    """Repeats each element (each slice along `dim`) `repeats` times, in place order;
    `repeats` is an int or a tensor of one count per element. Without `dim` the input is
    flattened. `repeat_interleave(counts)` gives the indices repeated by `counts`."""
    if repeats is None:  # repeat_interleave(repeats): arange(len) repeated
        counts = input
        if counts.ndim != 1 or counts.dtype.is_floating_point:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        return _by_counts(arange(counts.numel(), device=counts.device), counts, 0,
                          output_size)
    x = reshape(input, (-1,)) if dim is None else input
    d = 0 if dim is None else normalize_dim("repeat_interleave", dim, x.ndim)
    if isinstance(repeats, Tensor) and repeats.numel() != 1:
        return _by_counts(x, repeats, d, output_size)
    r = int(repeats)
    if r < 0:
        raise RuntimeError("Repeats must be non-negative")
    if r == 1:
        return clone(x)
    shape = tuple(x.shape)
    spread = expand(unsqueeze(x, d + 1), shape[:d + 1] + (r,) + shape[d + 1:])
    return reshape(spread, shape[:d] + (shape[d] * r,) + shape[d + 1:])


def _by_counts(x: Tensor, counts: Tensor, d: int, output_size: int | None) -> Tensor:
    if counts.ndim != 1:
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
    if counts.dtype not in (dt.int32, dt.int64):
        raise kernel_refuses("repeat_interleave_cpu", counts.dtype)
    c = np.asarray(counts.tolist(), dtype=np.int64)
    if len(c) != x.shape[d]:
        raise RuntimeError("repeats must have the same size as input along dim, but got "
                           f"repeats.size(0) = {len(c)} and input.size({d}) = {x.shape[d]}")
    if (c < 0).any():
        raise RuntimeError("repeats can not be negative")
    if output_size is not None and output_size != int(c.sum()):
        raise RuntimeError("allocated size does not match required size")
    index = _index_tensor(np.repeat(np.arange(len(c)), c), x.device)
    return index_select(x, d, index)


# -- the *_copy forms of the views ----------------------------------------------------


def _copy_of(view: Callable[..., Any], name: str, variants: str = "function out",
             label: str | None = None) -> Callable[..., Any]:
    """`torch.<view>_copy`: the view's result as a new tensor with its own storage (a
    tuple of them for the views that return several). Its autograd node is named as
    PyTorch's: `label`, else the view's node name + "_copy" (`ViewBackward0_copy`)."""
    def copied(input: Tensor, view_out: Tensor) -> Tensor:
        out = clone(view_out)
        if out._node is not None:
            node = view_out._node
            viewed = node is not None and node is not input._node
            out._node.label = label or \
                f"{node.label if viewed else 'AliasBackward0'}_copy"
        return out

    def fn(input: Tensor, *args: Any, **kwargs: Any) -> Any:
        out = view(input, *args, **kwargs)
        if isinstance(out, (tuple, list)):
            return tuple(copied(input, o) for o in out)
        return copied(input, out)
    fn.__doc__ = f"`{view.__name__}`, copied: the result shares no storage with `input`."
    # (complex when its view is: the view refuses a complex tensor it does not take)
    return composite(variants=variants, cost=costs.movement, complex=True)(_named(fn, name))


def _named(fn: Callable, name: str) -> Callable:
    fn.__name__ = fn.__qualname__ = name
    return fn


alias_copy = _copy_of(lambda x: x, "alias_copy")
as_strided_copy = _copy_of(as_strided, "as_strided_copy")
detach_copy = _copy_of(lambda x: x.detach(), "detach_copy")
diagonal_copy = _copy_of(diagonal, "diagonal_copy")
expand_copy = _copy_of(lambda x, size, *, implicit=False: expand(x, size), "expand_copy")
narrow_copy = _copy_of(narrow, "narrow_copy", "function method out", "NarrowCopyBackward0")
permute_copy = _copy_of(permute, "permute_copy")
select_copy = _copy_of(select, "select_copy")
slice_copy = _copy_of(lambda x, dim=0, start=None, end=None, step=1:
                      x[(slice(None),) * normalize_dim("slice_copy", dim, x.ndim)
                        + (slice(start, end, step),)], "slice_copy")
# (the ones returning several tensors take no out=: PyTorch's is a list of tensors)
split_copy = _copy_of(split, "split_copy", "function")
split_with_sizes_copy = _copy_of(split_with_sizes, "split_with_sizes_copy", "function")
squeeze_copy = _copy_of(squeeze, "squeeze_copy")
t_copy = _copy_of(t, "t_copy")
transpose_copy = _copy_of(transpose, "transpose_copy")
unbind_copy = _copy_of(unbind, "unbind_copy", "function")
unfold_copy = _copy_of(lambda x, dimension, size, step: x.unfold(dimension, size, step),
                       "unfold_copy")
unsqueeze_copy = _copy_of(unsqueeze, "unsqueeze_copy")
view_copy = _copy_of(lambda x, size: x.view(size), "view_copy")


@composite(variants="function method", cost=costs.view)
def slice_inverse(input: Tensor, src: Tensor, dim: int = 0, start: int | None = None,
                  end: int | None = None, step: int = 1) -> Tensor:
    """The inverse of `src.narrow`-style slicing: `input` (a slice of `src`'s storage)
    viewed with `src`'s sizes, strides and storage offset (PyTorch's rule; `dim`,
    `start`, `end` and `step` name the slice and are not read)."""
    return as_strided(input, tuple(src.shape), src.stride(), src.storage_offset())
