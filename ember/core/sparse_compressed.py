"""Sparse compressed tensors: PyTorch's CSR, CSC, BSR and BSC layouts (construction,
the parts, conversions between every layout, the printed form, pickling) in one type.

A compressed tensor of size `(*batch, rows, cols, *dense)` holds three dense tensors:
`compressed_indices` `(*batch, ncompressed + 1)`, `plain_indices` `(*batch, nnz)` and
`values` `(*batch, nnz, *block, *dense)`. CSR and BSR compress the rows (their parts are
`crow_indices`/`col_indices`), CSC and BSC the columns (`ccol_indices`/`row_indices`);
BSR and BSC store `block = (br, bc)` tiles where CSR and CSC store single elements.

Every layout is one "major COO" away from the others: the COO tensor of the entries,
indexed `(*batch, compressed, plain)` over the grid of blocks, each value a block (see
`major_coo`/`from_major`). Conversions, sums of two tensors and `to_dense` go through it
with the dense ops of ember.core.sparse_coo and sparse_ops, so they run on every backend
and autograd falls out of them; the ops live in ember.core.sparse_compressed_ops.
"""

from __future__ import annotations

import copy as _copy
import math
from typing import Any

from ember.core import dtype as dt
from ember.core.creation import arange, zeros
from ember.core.creation import tensor as _as_tensor
from ember.core.host import dtype_arg
from ember.core.ops.shape import cat, stack
from ember.core.printing import add_suffixes, tensor_body
from ember.core.sparse_coo import (
    SparseLayout,
    SparseTensor,
    labelled,
    layout_name,
    make,
    sparse_bsc,
    sparse_bsr,
    sparse_coo,
    sparse_csc,
    sparse_csr,
)
from ember.core.storage import strided
from ember.core.tensor import Tensor

__all__ = ["SparseCompressedTensor", "sparse_compressed_tensor", "sparse_csr_tensor",
           "sparse_csc_tensor", "sparse_bsr_tensor", "sparse_bsc_tensor"]

COMPRESSED = (sparse_csr, sparse_csc, sparse_bsr, sparse_bsc)
ROW_MAJOR = (sparse_csr, sparse_bsr)  # compress the rows
BLOCKED = (sparse_bsr, sparse_bsc)
UPPER = {sparse_csr: "CSR", sparse_csc: "CSC", sparse_bsr: "BSR", sparse_bsc: "BSC"}


def kind(layout: Any) -> str:
    """'csr', 'csc', 'bsr' or 'bsc': the layout in PyTorch's function names."""
    return layout._name[len("sparse_"):]


def index_names(layout: Any) -> tuple[str, str]:
    return ("crow_indices", "col_indices") if layout in ROW_MAJOR else \
        ("ccol_indices", "row_indices")


def _part_error(name: str, row: bool, t: Tensor) -> RuntimeError:
    kind = "row" if row else "column"
    return RuntimeError(f"{name} expected sparse {kind} compressed tensor layout but got "
                        f"{layout_name(t.layout)}")


class SparseCompressedTensor(SparseLayout):
    """A sparse CSR, CSC, BSR or BSC tensor; make one with `ember.sparse_csr_tensor` & co,
    `ember.sparse_compressed_tensor(..., layout=)` or `dense.to_sparse_csr()` & co."""

    __slots__ = ("_cidx", "_pidx", "_layout")
    is_sparse = False  # (PyTorch's `is_sparse` means the COO layout)
    _dispatch_key = "SparseCsr"  # PyTorch's one dispatch key of the compressed layouts
    _impl_name = "SparseCsrTensorImpl"

    @property
    def _supported(self) -> str:  # type: ignore[override]
        return ("crow/col/ccol/row_indices, values, to_dense, to_sparse*, mm/matmul/@ with a "
                "dense operand, * by a scalar, + of the same layout, t/transpose, sum()")

    @property
    def layout(self) -> Any:  # type: ignore[override]
        return self._layout

    @property
    def is_sparse_csr(self) -> bool:  # type: ignore[override]
        return self._layout is sparse_csr

    @property
    def grad(self) -> Tensor | None:  # type: ignore[override]
        """A leaf's gradient: a tensor of this layout and indices (the gradient where this
        tensor has entries, as PyTorch's `torch.sparse.mm` and `to_dense` give it)."""
        g = self._vals._grad
        return None if g is None else _same_pattern(self, g)

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None and value.layout is not self._layout:
            raise RuntimeError(f"assigned grad has a different layout than the tensor: "
                               f"expected {self._layout!r}, got {value.layout!r}")
        self._vals._grad = None if value is None else value._vals

    # -- the parts --------------------------------------------------------------------
    def crow_indices(self) -> Tensor:
        """Where each row's (row block's) entries start in `col_indices`, and nnz last."""
        if self._layout not in ROW_MAJOR:
            raise _part_error("crow_indices", True, self)
        return self._cidx

    def col_indices(self) -> Tensor:
        """The column (column block) of each entry, row by row."""
        if self._layout not in ROW_MAJOR:
            raise _part_error("col_indices", True, self)
        return self._pidx

    def ccol_indices(self) -> Tensor:
        """Where each column's (column block's) entries start in `row_indices`."""
        if self._layout in ROW_MAJOR:
            raise _part_error("ccol_indices", False, self)
        return self._cidx

    def row_indices(self) -> Tensor:
        """The row (row block) of each entry, column by column."""
        if self._layout in ROW_MAJOR:
            raise _part_error("row_indices", False, self)
        return self._pidx

    def values(self) -> Tensor:
        """The entries' values (blocks for BSR/BSC); differentiable."""
        return self._vals

    def _nnz(self) -> int:
        """How many entries (blocks) each batch element specifies."""
        return self._pidx.shape[-1]

    def _batch_ndim(self) -> int:
        return self._cidx.ndim - 1

    def blocksize(self) -> tuple[int, int]:
        b = self._batch_ndim()
        return tuple(self._vals.shape[b + 1:b + 3]) if self._layout in BLOCKED else (1, 1)

    def sparse_dim(self) -> int:
        return 2

    def dense_dim(self) -> int:
        return len(self._sparse_size) - self._batch_ndim() - 2

    def is_contiguous(self, memory_format: Any = None) -> bool:
        raise RuntimeError(f"Sparse {UPPER[self._layout]} tensors do not have is_contiguous")

    def stride(self, dim: Any = None) -> Any:
        raise RuntimeError(f"Sparse {UPPER[self._layout]} tensors do not have strides")

    def numpy(self, *, force: bool = False) -> Any:
        raise TypeError(f"can't convert {layout_name(self._layout)} layout tensor to numpy. "
                        "Use Tensor.to_dense() first.")

    def type(self, dtype: Any = None, non_blocking: bool = False) -> Any:
        if dtype is None:
            raise RuntimeError(f"Unimplemented backend SparseCsr{self.device.type.upper()}")
        return self.to(getattr(dtype, "dtype", dtype))

    # -- conversions ------------------------------------------------------------------
    def to_dense(self, dtype: Any = None, *, masked_grad: Any = None) -> Tensor:
        """The dense tensor of these entries; differentiable in the values."""
        if dtype is not None:
            raise RuntimeError("dtype argument is not supported by sparse_csr_to_dense")
        return labelled(compressed_to_dense(self), "ToDenseBackward0")

    def to_sparse(self, sparse_dim: int | None = None, *, layout: Any = None,
                  blocksize: Any = None, dense_dim: Any = None) -> Tensor:
        """This tensor in another layout (COO when none is given)."""
        if sparse_dim is not None and sparse_dim != 2:
            raise RuntimeError(f"sparse_compressed_to_sparse: conversion from "
                               f"{layout_name(self._layout)} to Sparse with sparse_dim "
                               "argument !=2 is not supported")
        return convert(self, layout or sparse_coo, blocksize, dense_dim)

    def to_sparse_coo(self) -> SparseTensor:
        return convert(self, sparse_coo, None, None)

    # -- copies, casts ----------------------------------------------------------------
    def detach(self) -> SparseCompressedTensor:
        return make_compressed(self._cidx, self._pidx, self._vals.detach(), self._sparse_size,
                               self._layout)

    def detach_(self) -> SparseCompressedTensor:
        self._vals.detach_()
        return self

    def clone(self, *, memory_format: Any = None) -> SparseCompressedTensor:
        return make_compressed(self._cidx.clone(), self._pidx.clone(), self._vals.clone(),
                               self._sparse_size, self._layout)

    def to(self, *args: Any, **kwargs: Any) -> SparseCompressedTensor:
        """This tensor on another device or as another dtype (itself when nothing
        changes); the indices keep their dtype."""
        from ember.core.ops.elementwise import to_arguments

        device, d, non_blocking, copy = to_arguments(args, kwargs)
        vals, cidx, pidx = self._vals, self._cidx, self._pidx
        if device is not None:
            vals = vals.to(device, non_blocking=non_blocking)
            cidx, pidx = cidx.to(device), pidx.to(device)
        if d is not None:
            vals = vals.to(d)
        if vals is self._vals and cidx is self._cidx:
            return self.clone() if copy else self
        return make_compressed(cidx, pidx, vals, self._sparse_size, self._layout)

    def cpu(self) -> SparseCompressedTensor:
        return self.to("cpu")

    def cuda(self, device: Any = None, non_blocking: bool = False) -> SparseCompressedTensor:
        return self.to("cuda" if device is None else
                       (f"cuda:{device}" if isinstance(device, int) else device),
                       non_blocking=non_blocking)

    def float(self, memory_format: Any = None) -> SparseCompressedTensor:
        return self.to(dt.float32)

    def double(self, memory_format: Any = None) -> SparseCompressedTensor:
        return self.to(dt.float64)

    def half(self, memory_format: Any = None) -> SparseCompressedTensor:
        return self.to(dt.float16)

    def bfloat16(self, memory_format: Any = None) -> SparseCompressedTensor:
        return self.to(dt.bfloat16)

    def long(self, memory_format: Any = None) -> SparseCompressedTensor:
        return self.to(dt.int64)

    def int(self, memory_format: Any = None) -> SparseCompressedTensor:
        return self.to(dt.int32)

    def bool(self, memory_format: Any = None) -> SparseCompressedTensor:
        return self.to(dt.bool_)

    # -- printing and pickling --------------------------------------------------------
    def __repr__(self) -> str:
        return compressed_repr(self)

    def __reduce_ex__(self, protocol: int) -> Any:
        return (_rebuild_compressed, (self._layout._name, self._cidx, self._pidx,
                                      self._vals.detach(), self._sparse_size,
                                      self.requires_grad))

    def __deepcopy__(self, memo: dict) -> SparseCompressedTensor:
        out = make_compressed(_copy.deepcopy(self._cidx, memo), _copy.deepcopy(self._pidx, memo),
                              self._vals.detach().clone(), self._sparse_size, self._layout)
        if self.requires_grad and self.is_leaf:
            out.requires_grad_(True)
        memo[id(self)] = out
        return out


# printed as PyTorch's tensors' class (`type(csr)` is <class 'torch.Tensor'> under the alias)
SparseCompressedTensor.__name__ = SparseCompressedTensor.__qualname__ = "Tensor"
dt.printed_in_api()(SparseCompressedTensor)


def _rebuild_compressed(layout: str, cidx: Tensor, pidx: Tensor, values: Tensor, size: tuple,
                        requires_grad: bool) -> SparseCompressedTensor:
    """Unpickling (copies, `copy.deepcopy`, multiprocessing)."""
    out = make_compressed(cidx, pidx, values, tuple(size), _LAYOUTS[layout])
    return out.requires_grad_(True) if requires_grad else out


_LAYOUTS = {lay._name: lay for lay in COMPRESSED}


def make_compressed(cidx: Tensor, pidx: Tensor, values: Tensor, size: Any,
                    layout: Any) -> SparseCompressedTensor:
    """A compressed tensor of these parts, trusted as they are (ember's own results)."""
    t = object.__new__(SparseCompressedTensor)
    t._cidx, t._pidx, t._vals, t._layout = cidx, pidx, values, layout
    t._sparse_size = tuple(int(n) for n in size)
    t._dtype, t._device, t._backend = values._dtype, values._device, values._backend
    t._vc = [0]
    return t


def _same_pattern(s: SparseCompressedTensor, values: Tensor) -> SparseCompressedTensor:
    return make_compressed(s._cidx, s._pidx, values, s._sparse_size, s._layout)


# -- construction ---------------------------------------------------------------------


def sparse_compressed_tensor(compressed_indices: Any, plain_indices: Any, values: Any,
                             size: Any = None, *, dtype: Any = None, layout: Any = None,
                             device: Any = None, pin_memory: bool = False,
                             requires_grad: bool = False,
                             check_invariants: bool | None = None) -> SparseCompressedTensor:
    r"""Constructs a sparse tensor in Compressed Sparse format - CSR, CSC, BSR, or BSC -
    with specified values at the given ``compressed_indices`` and ``plain_indices``.

    Args:
        compressed_indices (array_like): ``(*batchsize, compressed_dim_size + 1)``: where
            each row (CSR, BSR) or column (CSC, BSC), or block of them, starts in
            ``plain_indices`` and ``values``; the last element is nnz.
        plain_indices (array_like): ``(*batchsize, nnz)``: the column (CSR, BSR) or row
            (CSC, BSC) of each entry (of each block for BSR, BSC).
        values (array_like): ``(*batchsize, nnz, *densesize)`` for CSR and CSC,
            ``(*batchsize, nnz, *blocksize, *densesize)`` for BSR and BSC.
        size (list, tuple, torch.Size, optional): ``(*batchsize, nrows, ncols,
            *densesize)``; when not given, the smallest that holds every index.

    Keyword args:
        dtype (torch.dtype, optional): the values' dtype (default: the values').
        layout (torch.layout): ``torch.sparse_csr``, ``sparse_csc``, ``sparse_bsr`` or
            ``sparse_bsc``.
        device (torch.device, optional): the device of the result (default: the values').
        requires_grad (bool, optional): make the result a leaf that records autograd.
        check_invariants (bool, optional): accepted for PyTorch's signature; ember always
            checks the invariants, with PyTorch's messages (an invalid tensor would
            otherwise fail later, in whichever op first reads it).

    Example::

        >>> compressed_indices = [0, 2, 4]
        >>> plain_indices = [0, 1, 0, 1]
        >>> values = [1, 2, 3, 4]
        >>> torch.sparse_compressed_tensor(torch.tensor(compressed_indices, dtype=torch.int64),
        ...                                torch.tensor(plain_indices, dtype=torch.int64),
        ...                                torch.tensor(values), dtype=torch.double,
        ...                                layout=torch.sparse_csr)
        tensor(crow_indices=tensor([0, 2, 4]),
               col_indices=tensor([0, 1, 0, 1]),
               values=tensor([1., 2., 3., 4.]), size=(2, 2), nnz=4,
               dtype=torch.float64, layout=torch.sparse_csr)
    """
    if layout not in COMPRESSED:
        raise RuntimeError("sparse_compressed_tensor expected sparse compressed tensor layout "
                           f"but got {layout_name(layout)}")
    vals = values if isinstance(values, Tensor) else _as_tensor(values, dtype=dtype)
    cidx, pidx = (x if isinstance(x, Tensor) else _as_tensor(x, dtype=dt.int64)
                  for x in (compressed_indices, plain_indices))
    if dtype is not None:
        vals = vals.to(dtype_arg(dtype, "sparse_compressed_tensor"))
    if device is not None:
        vals, cidx, pidx = vals.to(device), cidx.to(device), pidx.to(device)
    if size is None:
        size = _estimated_size(cidx, pidx, vals, layout)
    size = _int_size(size)
    validate(cidx, pidx, vals, size, layout)
    vals = vals.detach().requires_grad_(True) if requires_grad else \
        labelled(vals, "SparseCompressedTensorBackward0")
    return make_compressed(cidx.detach(), pidx.detach(), vals, size, layout)


def _int_size(size: Any) -> tuple[int, ...]:
    try:
        return tuple(int(n) for n in size)
    except TypeError:
        raise TypeError("sparse_compressed_tensor(): argument 'size' must be tuple of ints, "
                        f"but found element of type {type(size).__name__}") from None


def _constructor(layout: Any, kind: str, compressed: str, plain: str, example: str) -> Any:
    def construct(compressed_indices: Any, plain_indices: Any, values: Any, size: Any = None,
                  *, dtype: Any = None, device: Any = None, pin_memory: bool = False,
                  requires_grad: bool = False,
                  check_invariants: bool | None = None) -> SparseCompressedTensor:
        return sparse_compressed_tensor(compressed_indices, plain_indices, values, size,
                                        dtype=dtype, layout=layout, device=device,
                                        requires_grad=requires_grad)
    construct.__name__ = construct.__qualname__ = f"sparse_{kind}_tensor"
    construct.__doc__ = (
        f"Constructs a sparse tensor in {UPPER[layout]} layout with specified values at "
        f"the given ``{compressed}`` and ``{plain}``: "
        "``sparse_compressed_tensor(..., layout=torch.sparse_" + kind + ")``.\n\n"
        f"    Args:\n        {compressed} (array_like): ``(*batchsize, n + 1)`` offsets of "
        f"each compressed {'row' if layout in ROW_MAJOR else 'column'}"
        f"{' block' if layout in BLOCKED else ''}, the last one nnz.\n"
        f"        {plain} (array_like): ``(*batchsize, nnz)``, the plain index of each "
        "entry.\n        values (array_like): the entries"
        f"{' (blocks)' if layout in BLOCKED else ''}.\n"
        "        size (list, tuple, torch.Size, optional): the size; inferred when not "
        "given.\n\n    Keyword args: dtype, device, requires_grad, check_invariants (ember "
        "always checks), as ``sparse_compressed_tensor``.\n\n    Example::\n\n" + example)
    return construct


sparse_csr_tensor = _constructor(sparse_csr, "csr", "crow_indices", "col_indices", """\
        >>> crow = torch.tensor([0, 2, 3])
        >>> col = torch.tensor([0, 2, 1])
        >>> torch.sparse_csr_tensor(crow, col, torch.tensor([1., 2., 3.]), (2, 3)).to_dense()
        tensor([[1., 0., 2.],
                [0., 3., 0.]])
""")
sparse_csc_tensor = _constructor(sparse_csc, "csc", "ccol_indices", "row_indices", """\
        >>> ccol = torch.tensor([0, 1, 3])
        >>> row = torch.tensor([0, 0, 1])
        >>> torch.sparse_csc_tensor(ccol, row, torch.tensor([1., 2., 3.]), (2, 2)).to_dense()
        tensor([[1., 2.],
                [0., 3.]])
""")
sparse_bsr_tensor = _constructor(sparse_bsr, "bsr", "crow_indices", "col_indices", """\
        >>> values = torch.tensor([[[1., 2.], [3., 4.]]])
        >>> torch.sparse_bsr_tensor(torch.tensor([0, 1, 1]), torch.tensor([1]), values,
        ...                         (4, 4)).to_dense()
        tensor([[0., 0., 1., 2.],
                [0., 0., 3., 4.],
                [0., 0., 0., 0.],
                [0., 0., 0., 0.]])
""")
sparse_bsc_tensor = _constructor(sparse_bsc, "bsc", "ccol_indices", "row_indices", """\
        >>> values = torch.tensor([[[1., 2.], [3., 4.]]])
        >>> torch.sparse_bsc_tensor(torch.tensor([0, 1, 1]), torch.tensor([1]), values,
        ...                         (4, 4)).to_dense()
        tensor([[0., 0., 0., 0.],
                [0., 0., 0., 0.],
                [1., 2., 0., 0.],
                [3., 4., 0., 0.]])
""")


def _block_ndim(layout: Any) -> int:
    return 2 if layout in BLOCKED else 0


def _check_dims(cidx: Tensor, pidx: Tensor, vals: Tensor, layout: Any) -> tuple[int, int, int]:
    """PyTorch's first checks: (batch_ndim, block_ndim, dense_ndim)."""
    cname, pname = index_names(layout)
    batch = cidx.ndim - 1
    if batch < 0:
        raise RuntimeError(f"{cname} must have dimensionality >= 1 but got {cidx.ndim}")
    if cidx.ndim != pidx.ndim:
        raise RuntimeError(f"{cname} and {pname} dimensionalities must be equal but got "
                           f"{cidx.ndim} and {pidx.ndim}, respectively")
    block = _block_ndim(layout)
    dense = vals.ndim - batch - block - 1
    if dense < 0:
        raise RuntimeError(f"values must have dimensionality > sum of batch and block "
                           f"dimensionalities (={batch} + {block}) but got {vals.ndim}")
    return batch, block, dense


def _estimated_size(cidx: Tensor, pidx: Tensor, vals: Tensor, layout: Any) -> tuple[int, ...]:
    """PyTorch's size of a tensor built without one: the batch of the indices, the
    compressed dimension from `compressed_indices`, the plain one from the largest plain
    index, times the block size, then the values' dense dimensions."""
    batch, block, dense = _check_dims(cidx, pidx, vals, layout)
    bs = (max(1, vals.shape[batch + 1]), max(1, vals.shape[batch + 2])) if block else (1, 1)
    ncomp = cidx.shape[-1] - 1 if cidx.shape[-1] > 0 else 0
    nplain = int(pidx.max().item()) + 1 if pidx.numel() else 0
    rows, cols = (ncomp, nplain) if layout in ROW_MAJOR else (nplain, ncomp)
    return (tuple(cidx.shape[:batch]) + (rows * bs[0], cols * bs[1]) +
            tuple(vals.shape[batch + 1 + block:]))


def validate(cidx: Tensor, pidx: Tensor, vals: Tensor, size: tuple[int, ...],
             layout: Any) -> None:
    """PyTorch's invariants of a compressed tensor, in its order and words
    (`_validate_sparse_compressed_tensor_args` with `check_invariants=True`)."""
    cname, pname = index_names(layout)
    batch, block, dense = _check_dims(cidx, pidx, vals, layout)
    if len(size) != batch + 2 + dense:
        raise RuntimeError(f"tensor dimensionality must be sum of batch, base, and dense "
                           f"dimensionalities (={batch} + 2 + {dense}) but got {len(size)}")
    bs = (max(1, vals.shape[batch + 1]), max(1, vals.shape[batch + 2])) if block else (1, 1)
    shapes = [list(size[:batch]), list(cidx.shape[:batch]), list(pidx.shape[:batch]),
              list(vals.shape[:batch])]
    if any(s != shapes[0] for s in shapes[1:]):
        raise RuntimeError(f"all batch dimensions of {cname} (={shapes[1]}), {pname} "
                           f"(={shapes[2]}), and values (={shapes[3]}) must be equal to "
                           f"tensor batch dimensions (={shapes[0]})")
    for i in range(block):
        if size[batch + i] % bs[i]:
            raise RuntimeError(f"tensor shape[{batch + i}] (={size[batch + i]}) must be "
                               f"divisible with blocksize[{i}] (={bs[i]}) as defined by "
                               "values shape")
    nrows, ncols = size[batch] // bs[0], size[batch + 1] // bs[1]
    row = layout in ROW_MAJOR
    ncomp, nplain = (nrows, ncols) if row else (ncols, nrows)
    cdim, pdim = ("row", "col") if row else ("column", "row")
    cdim += " block" if block else ""
    if cidx.shape[-1] != ncomp + 1:
        raise RuntimeError(f"{cname}.shape[-1] must be equal to the number of {cdim}s + 1 "
                           f"(={ncomp + 1}), but got {cidx.shape[-1]}")
    nnz = vals.shape[batch]
    if pidx.shape[-1] != nnz:
        raise RuntimeError(f"{pname}.shape[-1] must be equal to nnz (={nnz}) as defined by "
                           f"values.shape[{batch}], but got {pidx.shape[-1]}")
    if cidx.dtype is not pidx.dtype:
        raise RuntimeError(f"{cname} and {pname} must have the same dtype, bot got "
                           f"{_scalar_name(cidx.dtype)} and {_scalar_name(pidx.dtype)}, "
                           "respectively")
    if cidx.dtype not in (dt.int32, dt.int64):
        raise RuntimeError(f"{cname} and {pname} dtype must be Int or Long, but got "
                           f"{_scalar_name(cidx.dtype)}")
    _check_indices(cidx.long(), pidx.long(), ncomp, nplain, nnz, row)
    for name, part in ((cname, cidx), (pname, pidx)):
        if part.device != vals.device:
            raise RuntimeError(f"device of {name} (={part.device}) must match device of "
                               f"values (={vals.device})")


def _scalar_name(d: dt.dtype) -> str:
    from ember.core.sparse_ops import _SCALAR_NAMES

    return _SCALAR_NAMES.get(d.name, d.name)


def _check_indices(cidx: Tensor, pidx: Tensor, ncomp: int, nplain: int, nnz: int,
                   row: bool) -> None:
    """PyTorch's `_validate_compressed_sparse_indices` (its order and messages)."""
    c, p = ("crow", "col") if row else ("ccol", "row")
    nc, np_ = ("nrows", "ncols") if row else ("ncols", "nrows")
    if not cidx.numel():
        return
    if bool((cidx[..., 0] != 0).any()):
        raise RuntimeError(f"`{c}_indices[..., 0] == 0` is not satisfied.")
    if bool((cidx[..., -1] != nnz).any()):
        raise RuntimeError(f"`{c}_indices[..., -1] == nnz` is not satisfied.")
    steps = cidx[..., 1:] - cidx[..., :-1]
    if steps.numel() and bool(((steps < 0) | (steps > nplain)).any()):
        raise RuntimeError(f"`0 <= {c}_indices[..., 1:] - {c}_indices[..., :-1] <= {np_}` "
                           "is not satisfied.")
    if not nnz:
        return
    if bool(((pidx < 0) | (pidx >= nplain)).any()):
        raise RuntimeError(f"`0 <= {p}_indices < {np_}` is not satisfied.")
    # within each compressed slice the plain indices increase strictly
    flat_c = cidx.reshape(-1, cidx.shape[-1])
    flat_p = pidx.reshape(-1, nnz)
    owner = arange(flat_c.shape[0] * ncomp, device=cidx.device).repeat_interleave(
        (flat_c[:, 1:] - flat_c[:, :-1]).reshape(-1)) if ncomp else None
    if owner is not None and nnz > 1:
        owner = owner.reshape(flat_p.shape)
        same = owner[:, 1:] == owner[:, :-1]
        if bool((same & (flat_p[:, 1:] <= flat_p[:, :-1])).any()):
            raise RuntimeError(f"`{p}_indices[..., {c}_indices[..., i - 1]:{c}_indices[..., "
                               f"i]] for all i = 1, ..., {nc} are sorted and distinct along "
                               "the last dimension values` is not satisfied.")


# -- the major COO form: every conversion's hub ---------------------------------------


def major_coo(s: SparseCompressedTensor) -> SparseTensor:
    """The entries of `s` as a coalesced COO tensor indexed `(*batch, compressed, plain)`
    over the grid of blocks, each value a block (BSR/BSC) or an element (CSR/CSC),
    followed by the dense dimensions; differentiable in the values."""
    batch = s._batch_ndim()
    bshape = s._sparse_size[:batch]
    nb = math.prod(bshape)
    ncomp = s._cidx.shape[-1] - 1
    nnz = s._nnz()
    cidx = s._cidx.long().reshape(nb, ncomp + 1)
    counts = (cidx[:, 1:] - cidx[:, :-1]).reshape(-1)
    rows = []
    if nb and nnz:
        lin = arange(nb * ncomp, device=s.device).repeat_interleave(counts)
        rows = [lin.div(ncomp, rounding_mode="floor"), lin.remainder(ncomp)]
    else:
        empty = zeros((0,), dtype=dt.int64, device=s.device)
        rows = [empty, empty]
    ind = stack(_unravel_batch(rows[0], bshape) + [rows[1], s._pidx.long().reshape(-1)]) \
        if nb else zeros((batch + 2, 0), dtype=dt.int64, device=s.device)
    bs = s.blocksize()
    grid = _grid(s._sparse_size, batch, bs, s._layout)
    vals = s._vals.reshape((nb * nnz,) + tuple(s._vals.shape[batch + 1:]))
    return make(ind, vals, tuple(bshape) + grid + tuple(s._vals.shape[batch + 1:]), True)


def _unravel_batch(lin: Tensor, bshape: tuple[int, ...]) -> list[Tensor]:
    out = []
    for n in reversed(bshape):
        out.append(lin.remainder(n))
        lin = lin.div(n, rounding_mode="floor")
    return out[::-1]


def _grid(size: tuple[int, ...], batch: int, bs: tuple[int, int], layout: Any
          ) -> tuple[int, int]:
    """(compressed, plain) counts of blocks."""
    rows, cols = size[batch] // bs[0], size[batch + 1] // bs[1]
    return (rows, cols) if layout in ROW_MAJOR else (cols, rows)


def from_major(ind: Tensor, vals: Tensor, size: tuple[int, ...], batch: int, layout: Any,
               op: str, label: str | None = None) -> SparseCompressedTensor:
    """The compressed tensor of the entries `ind` (`[batch + 2, n]`, sorted by (*batch,
    compressed, plain)) and `vals` (`[n, *block, *dense]`), of full size `size`; its
    values' graph node named `label` (PyTorch's name of the conversion)."""
    bshape = size[:batch]
    nb = math.prod(bshape)
    if batch and not nb:
        raise RuntimeError(f"{op}: Expected product of batch dimensions to be non-zero.")
    n = ind.shape[1]
    bs = tuple(vals.shape[1:3]) if layout in BLOCKED else (1, 1)
    ncomp, _ = _grid(size, batch, bs, layout)
    blin = zeros((n,), dtype=dt.int64, device=ind.device)
    for d, k in enumerate(bshape):
        blin = blin * k + ind[d]
    if batch:
        per = zeros((nb,), dtype=dt.int64, device=ind.device).index_add(
            0, blin, blin.new_ones(n)) if n else zeros((nb,), dtype=dt.int64, device=ind.device)
        if nb > 1 and bool((per != per[0]).any()):
            raise RuntimeError("Expect the same number of specified elements per batch.")
    nnz = n // nb
    counts = zeros((nb * ncomp,), dtype=dt.int64, device=ind.device)
    if n:
        counts = counts.index_add(0, blin * ncomp + ind[batch], blin.new_ones(n))
    cidx = cat([zeros((nb, 1), dtype=dt.int64, device=ind.device),
                counts.reshape(nb, ncomp).cumsum(1)], 1).reshape(tuple(bshape) + (ncomp + 1,))
    pidx = ind[batch + 1].contiguous().reshape(tuple(bshape) + (nnz,))
    values = vals.reshape(tuple(bshape) + (nnz,) + tuple(vals.shape[1:]))
    if label is not None:
        values = labelled(values, label)
    return make_compressed(cidx, pidx, values, size, layout)


# -- conversions ----------------------------------------------------------------------


def compressed_to_dense(s: SparseCompressedTensor) -> Tensor:
    """The dense tensor of `s`: its major COO made dense, the grid put back in row order
    and each block into its place; differentiable in the values."""
    batch = s._batch_ndim()
    grid = major_coo(s).to_dense()  # (*batch, ncomp, nplain, *block, *dense)
    if s._layout not in ROW_MAJOR:
        grid = grid.transpose(batch, batch + 1)
    if s._layout in BLOCKED:  # (*batch, R/br, C/bc, br, bc, *dense) -> (*batch, R, C, *dense)
        order = list(range(batch)) + [batch, batch + 2, batch + 1, batch + 3] + \
            list(range(batch + 4, grid.ndim))
        grid = grid.permute(order)
    return grid.reshape(s._sparse_size)


def element_coo(s: SparseCompressedTensor) -> SparseTensor:
    """The COO tensor of `s`'s elements (`to_sparse()`): PyTorch's order, entry by entry
    (each block's elements row by row); coalesced for CSR only, as PyTorch flags it."""
    m = major_coo(s)
    batch = s._batch_ndim()
    ind, vals = m._ind, m._vals
    if s._layout not in ROW_MAJOR:
        ind = cat([ind[:batch], ind[batch + 1:batch + 2], ind[batch:batch + 1]])
    if s._layout in BLOCKED:
        br, bc = s.blocksize()
        n = ind.shape[1]
        i = arange(br, device=s.device).repeat_interleave(bc).repeat(n)
        j = arange(bc, device=s.device).repeat(br * n)
        ind = ind.repeat_interleave(br * bc, 1)
        ind = cat([ind[:batch], (ind[batch] * br + i).unsqueeze(0),
                   (ind[batch + 1] * bc + j).unsqueeze(0)])
        vals = vals.reshape((n * br * bc,) + tuple(vals.shape[3:]))
    return make(ind, vals, s._sparse_size, s._layout is sparse_csr)


def _check_blocksize(blocksize: Any, op: str) -> tuple[int, int]:
    if isinstance(blocksize, int):
        blocksize = (blocksize, blocksize)
    blocksize = tuple(int(b) for b in blocksize)
    if len(blocksize) != 2:
        raise RuntimeError(f"{op}: blocksize needs to be a tuple of size 2, but got "
                           f"{len(blocksize)}")
    return blocksize


def dense_to_compressed(x: Tensor, layout: Any, blocksize: Any = None,
                        dense_dim: int | None = None) -> SparseCompressedTensor:
    """`x.to_sparse_csr()` & co: the nonzero entries (blocks) of a dense `x`, whose last
    `dense_dim` dimensions are dense and the ones before the two sparse ones batch;
    differentiable in `x`."""
    name = kind(layout)
    op = f"dense_to_sparse_{name}"
    nd = x.ndim
    dense = 0 if dense_dim is None else int(dense_dim)
    if dense_dim is not None and not 0 <= dense <= nd - 2:
        raise RuntimeError(f"{op}: dense_dim argument must be in [0,{max(nd - 2, 0)}] range, "
                           f"but {dense} is given")
    if nd == 1 and layout is sparse_csr:  # (PyTorch's CSR kernel selects column 1 of [n, 1])
        raise IndexError(f"select(): index 1 out of range for tensor of size [{x.shape[0]}, 1] "
                         "at dimension 1")
    if nd < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [-{max(nd, 1)}, "
                         f"{max(nd, 1) - 1}], but got {-2 if layout in BLOCKED else 1})")
    batch = nd - 2 - dense
    bs = _check_blocksize(blocksize, op) if layout in BLOCKED else (1, 1)
    rows, cols = x.shape[batch], x.shape[batch + 1]
    if rows % bs[0] or cols % bs[1]:
        raise RuntimeError(f"{op}: tensor sparse size ({rows},{cols}) must be divisible by "
                           f"given blocksize ({bs[0]},{bs[1]})")
    bshape, dshape = tuple(x.shape[:batch]), tuple(x.shape[batch + 2:])
    if batch and not math.prod(bshape):
        raise RuntimeError(f"to_sparse_{name}: Expected product of batch dimensions to be "
                           "non-zero.")
    tiles = x.reshape(bshape + (rows // bs[0], bs[0], cols // bs[1], bs[1]) + dshape)
    order = list(range(batch)) + [batch, batch + 2, batch + 1, batch + 3] + \
        list(range(batch + 4, tiles.ndim))
    tiles = tiles.permute(order)  # (*batch, R/br, C/bc, br, bc, *dense)
    if layout not in ROW_MAJOR:
        tiles = tiles.transpose(batch, batch + 1)
    if layout not in BLOCKED:
        tiles = tiles.reshape(tuple(tiles.shape[:batch + 2]) + dshape)
    mask = tiles.detach() != 0
    if mask.ndim > batch + 2:
        mask = mask.reshape(tuple(mask.shape[:batch + 2]) + (-1,)).any(-1)
    ind = mask.nonzero().t()
    vals = tiles[tuple(ind[d] for d in range(batch + 2))]
    return from_major(ind, vals, tuple(x.shape), batch, layout, f"to_sparse_{name}",
                      f"ToSparse{name.capitalize()}Backward0")


def coo_to_compressed(s: SparseTensor, layout: Any, blocksize: Any) -> SparseCompressedTensor:
    """A COO tensor of two sparse dimensions (and any dense ones) in a compressed layout."""
    name = kind(layout)
    if s.sparse_dim() != 2:
        raise RuntimeError(f"coo_to_sparse_{name}: conversion from Sparse to "
                           f"{layout_name(layout)} for input tensors with sparse_dim()!=2 is "
                           "not supported")
    if layout in BLOCKED:  # through the dense tensor: entries become whole blocks
        return dense_to_compressed(s.to_dense(), layout, blocksize, s.dense_dim())
    s = s.coalesce()
    if layout in ROW_MAJOR:
        m = s
    else:  # sorted by (column, row): the transposed pattern, of the transposed size
        rows, cols = s._sparse_size
        m = make(s._ind.flip(0), s._vals, (cols, rows), False).coalesce()
    return from_major(m._ind, m._vals, tuple(s.shape), 0, layout, f"to_sparse_{name}")


def _transposed_pattern(s: SparseCompressedTensor, layout: Any) -> SparseCompressedTensor:
    """`s` (CSR/BSR or CSC/BSC) in its opposite layout `layout`: the same entries
    (blocks unchanged), reordered by the other dimension."""
    m = major_coo(s)
    batch = s._batch_ndim()
    order = list(range(batch)) + [batch + 1, batch]
    swapped = make(m._ind[order], m._vals,
                   tuple(m.shape[:batch]) + (m.shape[batch + 1], m.shape[batch]) +
                   tuple(m.shape[batch + 2:]), False).coalesce()
    return from_major(swapped._ind, swapped._vals, s._sparse_size, batch, layout,
                      f"to_sparse_{kind(layout)}")


def convert(x: Tensor, layout: Any, blocksize: Any = None, dense_dim: Any = None) -> Tensor:
    """`x.to_sparse(layout=..., blocksize=..., dense_dim=...)` for any `x` (dense, COO or
    compressed) and any layout, with PyTorch's refusals."""
    src = x.layout
    if layout is strided:
        return x.to_dense() if src is not strided else x
    if layout not in COMPRESSED and layout is not sparse_coo:
        raise RuntimeError(f"to_sparse: unexpected layout {layout!r}")
    if src is strided:
        if layout in BLOCKED and blocksize is None:
            raise RuntimeError(f"dense_to_sparse: conversion from Strided to "
                               f"{layout_name(layout)} without blocksize argument given is "
                               "not supported")
        if layout not in BLOCKED and blocksize is not None:
            raise RuntimeError(f"dense_to_sparse: conversion from Strided to "
                               f"{layout_name(layout)} with blocksize argument given is not "
                               "supported")
        if layout is sparse_coo:
            from ember.core.sparse_coo import dense_to_sparse

            sparse_dim = None if dense_dim is None else x.ndim - int(dense_dim)
            return dense_to_sparse(x, sparse_dim)
        return dense_to_compressed(x, layout, blocksize, dense_dim)
    op = f"to_sparse_{kind(layout)}" if layout is not sparse_coo else "to_sparse"
    if dense_dim is not None:
        raise RuntimeError(f"{op}: conversion from {layout_name(src)} to "
                           f"{layout_name(layout)} with dense_dim argument given is not "
                           "supported")
    if src is sparse_coo:
        if layout is sparse_coo:
            return x
        if layout in BLOCKED and blocksize is None:
            raise RuntimeError(f"sparse_coo_to_sparse: conversion from Sparse to "
                               f"{layout_name(layout)} without blocksize argument given is "
                               "not supported")
        return coo_to_compressed(x, layout, blocksize)
    # compressed to another layout
    if layout is sparse_coo:
        return element_coo(x)
    here = x.blocksize() if src in BLOCKED else None
    if layout in BLOCKED:
        if blocksize is None:
            if here is None:
                raise RuntimeError(f"sparse_compressed_to_sparse_{kind(layout)}: conversion "
                                   f"from {layout_name(src)} to {layout_name(layout)} without "
                                   "blocksize argument given is not supported")
            blocksize = here
        blocksize = _check_blocksize(blocksize, op)
        if here is not None and tuple(blocksize) != tuple(here):
            name = op if src is layout else f"sparse_compressed_to_sparse_{kind(layout)}"
            raise RuntimeError(f"{name}: conversion from {layout_name(src)} to "
                               f"{layout_name(layout)} with blocksize changed from "
                               f"{list(here)} to {list(blocksize)} is not supported")
    elif blocksize is not None:
        raise RuntimeError(f"sparse_compressed_to_sparse_{kind(layout)}: conversion from "
                           f"{layout_name(src)} to {layout_name(layout)} with blocksize "
                           "argument given is not supported")
    if src is layout:
        return x
    if (src in BLOCKED) != (layout in BLOCKED):
        if src in BLOCKED:
            raise RuntimeError(f"sparse_compressed_to_sparse_{kind(layout)}: expected "
                               f"SparseCsr or SparseCsc layout but got {layout_name(src)}")
        if x._batch_ndim():
            raise RuntimeError(f"sparse_compressed_to_sparse_{kind(layout)}: conversion from "
                               f"{layout_name(src)} to {layout_name(layout)} for batched "
                               "inputs is not supported")
        return dense_to_compressed(x.to_dense(), layout, blocksize, x.dense_dim())
    return _transposed_pattern(x, layout)


# -- the printed form -----------------------------------------------------------------


def compressed_repr(s: SparseCompressedTensor) -> str:
    """PyTorch's form: `tensor(crow_indices=tensor([...]),\\n       col_indices=...,\\n
    values=tensor([...]), size=(2, 3), nnz=3, layout=torch.sparse_csr)`."""
    indent = len("tensor(")
    parts = []
    cname, pname = index_names(s._layout)
    for name, part in ((cname, s._cidx), (pname, s._pidx), ("values", s._vals)):
        prefix = f"{name}=tensor("
        body = tensor_body(part.detach(), indent + len(prefix))
        if not part.numel():
            body += f", size={tuple(part.shape)}"
        parts.append(prefix + body + ")")
    suffixes = []
    if s.device.type != "cpu":
        suffixes.append(f"device='{s.device}'")
    suffixes += [f"size={tuple(s._sparse_size)}", f"nnz={s._nnz()}"]
    if s.dtype not in (dt.get_default_dtype(), dt.int64, dt.bool_):
        suffixes.append(f"dtype={s.dtype!r}")
    suffixes.append(f"layout={s._layout!r}")
    if s.grad_fn is not None:
        suffixes.append(f"grad_fn=<{s.grad_fn.name()}>")
    elif s.requires_grad:
        suffixes.append("requires_grad=True")
    return add_suffixes("tensor(" + (",\n" + " " * indent).join(parts), suffixes, indent)

