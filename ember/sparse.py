"""`torch.sparse`: the functions of sparse COO tensors (`mm`, `sum`, `softmax`,
`log_softmax`, `addmm`) and the legacy constructors `torch.sparse.FloatTensor(indices,
values, size)` and its siblings.

The tensor type and its methods live in ember.core.sparse_coo, the ops in
ember.core.sparse_ops (both imported by `import ember`); this module is PyTorch's
namespace for them.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Any

from ember.core import dtype as dt
from ember.core.creation import arange, empty
from ember.core.ops.shape import cat, stack
from ember.core.sparse_compressed import sparse_csr_tensor
from ember.core.sparse_coo import (
    SparseTensor,
    sparse_coo,
    sparse_coo_tensor,
    sparse_csc,
    sparse_csr,
)
from ember.core.sparse_ops import addmm, log_softmax, mm, softmax, spmm
from ember.core.sparse_ops import sparse_sum as sum  # noqa: A001 - PyTorch's name
from ember.core.tensor import Size, Tensor

__all__ = ["mm", "sum", "softmax", "log_softmax", "addmm", "spmm", "spdiags", "sampled_addmm",
           "check_sparse_tensor_invariants", "FloatTensor", "DoubleTensor", "HalfTensor",
           "BFloat16Tensor", "LongTensor", "IntTensor", "ShortTensor", "CharTensor",
           "ByteTensor", "BoolTensor"]


class check_sparse_tensor_invariants(contextlib.ContextDecorator):  # noqa: N801
    """PyTorch's switch for checking a new sparse tensor's indices. ember always checks
    them (against a given size), so this is accepted and changes nothing."""

    _enabled = False

    def __init__(self, enable: bool = True) -> None:
        self.state = enable

    @staticmethod
    def is_enabled() -> bool:
        return check_sparse_tensor_invariants._enabled

    @staticmethod
    def enable() -> None:
        check_sparse_tensor_invariants._enabled = True

    @staticmethod
    def disable() -> None:
        check_sparse_tensor_invariants._enabled = False

    def __enter__(self) -> None:
        self._saved = check_sparse_tensor_invariants._enabled
        check_sparse_tensor_invariants._enabled = bool(self.state)

    def __exit__(self, *exc: Any) -> None:
        check_sparse_tensor_invariants._enabled = self._saved


class _LegacySparseType(type):
    """`isinstance(t, torch.sparse.FloatTensor)`: a sparse CPU tensor of that dtype."""

    dtype: dt.dtype

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, SparseTensor) and obj.dtype is cls.dtype and \
            obj.device.type == "cpu"

    def __repr__(cls) -> str:
        return f"<class '{dt.API_NAME}.sparse.{cls.__name__}'>"


class _LegacySparseTensor(metaclass=_LegacySparseType):
    dtype: dt.dtype

    def __new__(cls, *args: Any, device: Any = None) -> SparseTensor:  # type: ignore[misc]
        if len(args) in (2, 3) and isinstance(args[0], Tensor):
            warnings.warn(f"{dt.API_NAME}.sparse.SparseTensor(indices, values, shape, *, "
                          f"device=) is deprecated.  Please use {dt.API_NAME}."
                          "sparse_coo_tensor(indices, values, shape, dtype=, device=).",
                          UserWarning, stacklevel=2)
            indices, values = args[0], args[1]
            if not isinstance(values, Tensor):
                values = Tensor._from_data(values, cls.dtype)
            size = tuple(args[2]) if len(args) == 3 else None
            return sparse_coo_tensor(indices, values, size, device=device)
        if len(args) == 1 and isinstance(args[0], Size):
            args = tuple(args[0])
        if all(isinstance(a, int) and not isinstance(a, bool) for a in args):
            size = args if args else (0,)
            nd = max(len(size), 1)
            return sparse_coo_tensor(empty((nd, 0), dtype=dt.int64, device=device),
                                     empty((0,), dtype=cls.dtype, device=device), size)
        raise TypeError(f"{cls.__name__}(): expected (indices, values[, size]) or sizes, "
                        f"got ({', '.join(type(a).__name__ for a in args)})")


def _legacy(name: str, d: dt.dtype) -> type:
    doc = (f"PyTorch's legacy constructor of sparse {d} tensors: `{name}(indices, values, "
           f"size)`, `{name}(indices, values)` or `{name}(*sizes)` (no entries).")
    return _LegacySparseType(name, (_LegacySparseTensor,), {"dtype": d, "__doc__": doc,
                                                            "__module__": "ember.sparse"})


FloatTensor = _legacy("FloatTensor", dt.float32)
DoubleTensor = _legacy("DoubleTensor", dt.float64)
HalfTensor = _legacy("HalfTensor", dt.float16)
BFloat16Tensor = _legacy("BFloat16Tensor", dt.bfloat16)
LongTensor = _legacy("LongTensor", dt.int64)
IntTensor = _legacy("IntTensor", dt.int32)
ShortTensor = _legacy("ShortTensor", dt.int16)
CharTensor = _legacy("CharTensor", dt.int8)
ByteTensor = _legacy("ByteTensor", dt.uint8)
BoolTensor = _legacy("BoolTensor", dt.bool_)


# PyTorch's C++ names of the layouts, as its messages print them
_LAYOUT_NAMES = {"strided": "Strided", "sparse_coo": "Sparse", "sparse_csr": "SparseCsr",
                 "sparse_csc": "SparseCsc", "sparse_bsr": "SparseBsr", "sparse_bsc": "SparseBsc"}


def spdiags(diagonals: Tensor, offsets: Tensor, shape: tuple[int, int],
            layout: Any = None) -> Tensor:
    """Creates a sparse 2D tensor by placing the values from rows of `diagonals` along
    specified diagonals of the output.

    The `offsets` tensor controls which diagonals are set: ``offsets[i] = 0`` is the main
    diagonal, ``> 0`` above it and ``< 0`` below it. Row ``i`` of `diagonals` fills
    diagonal ``offsets[i]``, the element in column ``c`` of the output taken from
    ``diagonals[i, c]``; values of a row that fall outside the output are dropped.

    Args:
        diagonals (Tensor): Matrix storing diagonals row-wise.
        offsets (Tensor): The diagonals to be set, stored as a vector.
        shape (2-tuple of ints): The desired shape of the result.
        layout (:class:`torch.layout`, optional): The desired layout of the returned
            tensor. ``torch.sparse_coo``, ``torch.sparse_csc`` and ``torch.sparse_csr``
            are supported. Default: ``torch.sparse_coo``.
    """
    diagonals2d = diagonals.unsqueeze(0) if diagonals.ndim == 1 else diagonals
    _check_spdiags(diagonals2d, offsets, shape, layout)
    offsets1d = offsets.reshape(-1)
    nrows, ncols = shape
    length = diagonals2d.shape[1]
    rows, cols, values = [], [], []
    for k, off in enumerate(offsets1d.tolist()):
        count = min(off + nrows, length) if off <= 0 else min(ncols, length) - off
        first = max(off, 0)
        col = arange(first, first + max(count, 0), device=diagonals.device)
        rows.append(col - off)
        cols.append(col)
        values.append(diagonals2d[k, first:first + max(count, 0)])
    indices = stack([cat(rows), cat(cols)]) if rows else \
        empty((2, 0), dtype=dt.int64, device=diagonals.device)
    vals = cat(values) if values else empty((0,), dtype=diagonals.dtype,
                                            device=diagonals.device)
    result = sparse_coo_tensor(indices, vals, (nrows, ncols))
    if layout is sparse_csr:
        return result.to_sparse_csr()
    return result.to_sparse_csc() if layout is sparse_csc else result


def _check_spdiags(diagonals: Tensor, offsets: Tensor, shape: Any, layout: Any) -> None:
    if diagonals.ndim > 2:
        raise RuntimeError("Diagonals must be vector or matrix")
    if len(shape) != 2:
        raise RuntimeError("Output shape must be 2d")
    if offsets.ndim > 1:
        raise RuntimeError("Offsets must be scalar or vector")
    if diagonals.shape[0] != offsets.numel():
        raise RuntimeError(f"Number of diagonals ({diagonals.shape[0]}) does not match the "
                           f"number of offsets ({offsets.numel()})")
    if layout is not None and layout not in (sparse_coo, sparse_csc, sparse_csr):
        raise RuntimeError("Only output layouts (Sparse, SparseCsc, SparseCsr) are supported, "
                           f"got {_LAYOUT_NAMES.get(layout._name, layout._name)}")
    if offsets.dtype is not dt.int64:
        raise RuntimeError(f"Offset Tensor must have dtype Long but got "
                           f"{dt.SCALAR_TYPE_NAMES[offsets.dtype.name]}")
    listed = offsets.reshape(-1).tolist()
    if len(set(listed)) != len(listed):
        raise RuntimeError("Offset tensor contains duplicate values")


def sampled_addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: float = 1.0,
                  alpha: float = 1.0, out: Tensor | None = None) -> Tensor:
    r"""Performs a matrix multiplication of the dense matrices `mat1` and `mat2` at the
    locations specified by the sparsity pattern of `input`. The matrix `input` is added
    to the final result.

    .. math::
        \text{out} = \alpha\ (\text{mat1} \mathbin{@} \text{mat2})*\text{spy}(\text{input})
        + \beta\ \text{input}

    Args:
        input (Tensor): a sparse CSR matrix of shape `(m, n)` to be added and used to
            compute the sampled matrix multiplication
        mat1 (Tensor): a dense matrix to be multiplied of shape `(m, k)`
        mat2 (Tensor): a dense matrix to be multiplied of shape `(k, n)`

    Keyword args:
        beta (Number, optional): multiplier for `input` (:math:`\beta`)
        alpha (Number, optional): multiplier for :math:`mat1 @ mat2` (:math:`\alpha`)
        out (Tensor, optional): output tensor. Ignored if `None`. Default: `None`.
    """
    if input.layout is not sparse_csr:
        backend = "SparseCPU" if input.layout is sparse_coo else "CPU"
        raise NotImplementedError(f"Could not run 'aten::sparse_sampled_addmm' with arguments "
                                  f"from the '{backend}' backend.")
    if mat1.dtype is not mat2.dtype:
        raise RuntimeError(f"sampled_addmm: Expected mat1 and mat2 to have the same dtype, "
                           f"but got {dt.SCALAR_TYPE_NAMES[mat1.dtype.name]} and "
                           f"{dt.SCALAR_TYPE_NAMES[mat2.dtype.name]}")
    if mat1.shape[-1] != mat2.shape[-2]:
        raise RuntimeError(f"sampled_addmm: mat1 and mat2 shapes cannot be multiplied "
                           f"({mat1.shape[-2]}x{mat1.shape[-1]} and "
                           f"{mat2.shape[-2]}x{mat2.shape[-1]})")
    if input.shape[-2] != mat1.shape[-2]:
        raise RuntimeError("sampled_addmm: self.shape[-2] must match mat1.shape[-2]")
    if input.shape[-1] != mat2.shape[-1]:
        raise RuntimeError("sampled_addmm: self.shape[-1] must match mat2.shape[-1]")
    if input.ndim != 2:
        raise NotImplementedError("ember's sparse.sampled_addmm takes 2-D (unbatched) "
                                  "matrices")
    rows, cols = input.to_sparse_coo().indices()  # (row-major: the CSR values' order)
    sampled = (mat1[rows] * mat2.t()[cols]).sum(-1)
    values = input.values() * beta + sampled * alpha
    result = sparse_csr_tensor(input.crow_indices(), input.col_indices(), values,
                               tuple(input.shape))
    if out is not None:
        out.copy_(result)
        return out
    return result
