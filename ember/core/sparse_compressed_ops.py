"""The ops of sparse compressed tensors (CSR, CSC, BSR, BSC) that PyTorch has on the CPU:
products with a dense matrix (`mm`/`matmul`/`@`, `addmm`, `torch.sparse.mm`, in both
orders), `*` by a scalar (or a tensor of the same size), `+` of two tensors of one
layout, `neg`, `t`/`transpose` (CSR <-> CSC, BSR <-> BSC), `sum`; and the refusals, with
PyTorch's errors, of what it has not (`/`, `-`, `torch.sparse.sum` ...).

Each is written with the COO ops (ember.core.sparse_ops) on the entries of
ember.core.sparse_compressed, so it runs on every backend and autograd falls out of
them. Importing this module attaches the methods: `Tensor.to_sparse_csr()` & co, the
compressed parts' errors on dense and COO tensors, and the ops on the compressed type.
"""

from __future__ import annotations

import numbers
from typing import Any

from ember.core import dtype as dt
from ember.core.shapes import normalize_dim
from ember.core.sparse_compressed import (
    BLOCKED,
    ROW_MAJOR,
    SparseCompressedTensor,
    _part_error,
    convert,
    element_coo,
    from_major,
    major_coo,
    make_compressed,
)
from ember.core.sparse_coo import (
    SparseTensor,
    labelled,
    layout_name,
    sparse_bsc,
    sparse_bsr,
    sparse_coo,
    sparse_csc,
    sparse_csr,
    unsupported,
)
from ember.core.sparse_ops import ZERO_PRESERVING, _is_scalar, _sparse_dense_mm
from ember.core.sparse_ops import add as coo_add
from ember.core.storage import strided
from ember.core.tensor import Tensor

# the layout of a transpose: the other dimension compressed
_OPPOSITE = {sparse_csr: sparse_csc, sparse_csc: sparse_csr, sparse_bsr: sparse_bsc,
             sparse_bsc: sparse_bsr}


# -- products -------------------------------------------------------------------------


def _check_matrix(s: SparseCompressedTensor, other: Tensor) -> None:
    """PyTorch's refusals of a product it has no CPU kernel for."""
    if s._batch_ndim() or (isinstance(other, Tensor) and other.ndim > 2):
        raise RuntimeError("expand is unsupported for SparseCsr tensors")
    if s.dense_dim():
        raise RuntimeError("Sparse CSR tensors do not have strides")
    if s.layout is sparse_bsc:
        if isinstance(other, Tensor) and other.ndim == 1:
            raise RuntimeError("torch.addmv: operation not supported for mat with SparseBsc "
                               "layout")
        raise RuntimeError("addmm: computation on CPU is not implemented for Strided + "
                           "SparseBsc @ Strided")


def compressed_matmul(s: SparseCompressedTensor, other: Tensor, op: str = "mm") -> Tensor:
    """`s @ other` for a 2-D compressed `s` and a dense 1-D or 2-D `other`: a dense result,
    whose gradient reaches `other` and `s`'s values."""
    if not isinstance(other, Tensor) or other.layout is not strided:
        raise RuntimeError(f"{op}: ember multiplies a sparse compressed tensor by a dense "
                           f"one, got {layout_name(getattr(other, 'layout', None))}")
    _check_matrix(s, other)
    rows, cols = s.shape
    if other.ndim in (1, 2) and other.shape[0] != cols:
        shape = "x".join(str(n) for n in other.shape)
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{cols} and "
                           f"{shape if other.ndim == 2 else shape + 'x1'})")
    return _sparse_dense_mm(element_coo(s), other, op)


def dense_matmul(dense: Tensor, s: SparseCompressedTensor, op: str = "mm") -> Tensor:
    """`dense @ s` = `(s.t() @ dense.t()).t()`: the transpose of CSR is CSC, free."""
    if s.layout is sparse_bsr:
        raise RuntimeError("addmm: computation on CPU is not implemented for Strided + "
                           "Strided @ SparseBsr")
    if dense.ndim not in (1, 2):
        raise RuntimeError("expand is unsupported for SparseCsr tensors")
    if dense.shape[-1] != s.shape[0]:
        shape = "x".join(str(n) for n in dense.shape)
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied "
                           f"({shape if dense.ndim == 2 else '1x' + shape} and "
                           f"{s.shape[0]}x{s.shape[1]})")
    st = transpose(s, 0, 1)
    if dense.ndim == 1:
        return compressed_matmul(st, dense, op)
    return labelled(compressed_matmul(st, dense.t(), op).t(), "MmBackward0")


def _matmul_method(self: SparseCompressedTensor, other: Tensor) -> Tensor:
    return compressed_matmul(self, other, "matmul")


def _rmatmul_method(self: SparseCompressedTensor, other: Tensor) -> Tensor:
    if not isinstance(other, Tensor):
        return NotImplemented
    return dense_matmul(other, self, "matmul")


def _mm_method(self: SparseCompressedTensor, mat2: Tensor) -> Tensor:
    return compressed_matmul(self, mat2, "mm")


# -- arithmetic -----------------------------------------------------------------------


def mul(input: SparseCompressedTensor, other: Any) -> SparseCompressedTensor:
    """`input * other`: by a number or 0-d tensor the values are scaled; by a tensor of
    the same size (dense or of this layout), each entry by the element at its place."""
    if _is_scalar(other):
        return make_compressed(input._cidx, input._pidx, input._vals * other,
                               input._sparse_size, input.layout)
    if isinstance(other, Tensor) and tuple(other.shape) == tuple(input.shape) and \
            input.layout not in BLOCKED and not input._batch_ndim():
        dense = other if other.layout is strided else other.to_dense()
        at = element_coo(input)
        picked = dense[tuple(at._ind[d] for d in range(2))]
        return make_compressed(input._cidx, input._pidx, input._vals * picked,
                               input._sparse_size, input.layout)
    raise unsupported(input, "mul.Tensor")


def _refuse(name: str) -> Any:
    def method(self: SparseCompressedTensor, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"unsupported tensor layout: {layout_name(self.layout)}")
    method.__name__ = name
    return method


def add(input: SparseCompressedTensor, other: Any, *, alpha: Any = 1) -> Tensor:
    """`input + alpha * other`: of two tensors of one compressed layout and size, the
    union of their entries (values summed where both have one); with a dense `other`, a
    dense tensor."""
    if isinstance(other, Tensor) and other.layout is strided:
        return dense_add(other, input, alpha)
    if not isinstance(other, SparseCompressedTensor):
        if isinstance(other, SparseTensor):
            raise RuntimeError("add: ember adds a sparse compressed tensor to one of its "
                               f"layout or a dense one, got {layout_name(other.layout)}")
        raise unsupported(input, "add.Tensor")
    if other.layout is not input.layout:
        name = "crow_indices" if input.layout in ROW_MAJOR else "ccol_indices"
        raise _part_error(name, input.layout in ROW_MAJOR, other)
    if tuple(other.shape) != tuple(input.shape):
        raise RuntimeError(f"torch.add: Expected input tensors to have the same shape, but got "
                           f"tensor `self` with shape {list(input.shape)} and tensor `other` "
                           f"with shape {list(other.shape)}")
    if other.dtype is not input.dtype:
        raise RuntimeError(f"expected scalar type {_scalar(other.dtype)} but found "
                           f"{_scalar(input.dtype)}")
    if input.blocksize() != other.blocksize():
        raise RuntimeError(f"add: the block sizes differ, {list(input.blocksize())} and "
                           f"{list(other.blocksize())}")
    if input._cidx is other._cidx and input._pidx is other._pidx or (
            input._cidx.equal(other._cidx) and input._pidx.equal(other._pidx)):
        theirs = other._vals if alpha == 1 else other._vals * alpha
        return make_compressed(input._cidx, input._pidx, input._vals + theirs,
                               input._sparse_size, input.layout)
    total = coo_add(major_coo(input), major_coo(other), alpha=alpha).coalesce()
    return from_major(total._ind, total._vals, input._sparse_size, input._batch_ndim(),
                      input.layout, "add")


def _scalar(d: dt.dtype) -> str:
    from ember.core.sparse_ops import _SCALAR_NAMES

    return _SCALAR_NAMES.get(d.name, d.name)


def dense_add(dense: Tensor, s: SparseCompressedTensor, alpha: Any = 1) -> Tensor:
    """`dense + alpha * s` (either order): a dense tensor, for CSR and CSC."""
    if s.layout in BLOCKED:
        raise RuntimeError("add: ember adds a dense tensor to a CSR or CSC tensor only, as "
                           f"PyTorch does (src.layout() == kSparseCsr || src.layout() == "
                           f"kSparseCsc), got {layout_name(s.layout)}")
    if tuple(dense.shape) != tuple(s.shape):
        raise RuntimeError(f"torch.add: Expected input tensors to have the same shape, but got "
                           f"tensor `self` with shape {list(dense.shape)} and tensor `other` "
                           f"with shape {list(s.shape)}")
    other = s.to_dense()
    return dense + (other if alpha == 1 else other * alpha)


def _add_method(self: SparseCompressedTensor, other: Any, *, alpha: Any = 1) -> Any:
    if isinstance(other, numbers.Number):
        raise unsupported(self, "add.Tensor")
    return add(self, other, alpha=alpha)


def _radd_method(self: SparseCompressedTensor, other: Any) -> Any:
    if isinstance(other, Tensor):
        return dense_add(other, self)
    return NotImplemented


def neg(input: SparseCompressedTensor) -> SparseCompressedTensor:
    return make_compressed(input._cidx, input._pidx, -input._vals, input._sparse_size,
                           input.layout)


# PyTorch's value-wise unary ops of compressed tensors: the f with f(0) == 0, applied to
# the specified values, the indices kept (others, `exp`, `cos`, `sigmoid` ..., refused)
_VALUE_WISE = ZERO_PRESERVING + ("angle",)
_VALUE_WISE_INPLACE = ("abs", "sin", "sqrt", "tanh", "relu", "log1p", "expm1", "sgn", "sign",
                       "ceil", "floor", "round", "trunc", "frac", "asin", "asinh", "atan",
                       "atanh", "tan", "sinh", "erf", "erfinv", "deg2rad", "rad2deg", "neg")
# PyTorch's "unsupported tensor layout" refusals among the unary and scalar ops
_UNSUPPORTED = ("exp", "log", "cos", "exp2", "rsqrt", "reciprocal", "sigmoid", "square",
                "pow", "__pow__", "clamp", "clip", "threshold", "leaky_relu", "gelu", "silu",
                "div", "__truediv__", "true_divide",
                "divide", "sub", "__sub__", "__rsub__", "div_", "sub_", "__itruediv__",
                "__isub__")


def _value_wise(name: str) -> Any:
    def op(input: SparseCompressedTensor) -> SparseCompressedTensor:
        return make_compressed(input._cidx, input._pidx, getattr(input._vals, name)(),
                               input._sparse_size, input.layout)
    op.__name__ = name
    return op


def _value_wise_(name: str) -> Any:
    def op(input: SparseCompressedTensor) -> SparseCompressedTensor:
        getattr(input._vals, name + "_")()
        return input
    op.__name__ = name + "_"
    return op


def mul_(input: SparseCompressedTensor, other: Any) -> SparseCompressedTensor:
    """`input *= number`: the values scaled in place."""
    if not _is_scalar(other):
        raise unsupported(input, "mul_.Tensor")
    input._vals.mul_(other)
    return input


def transpose(input: SparseCompressedTensor, dim0: int, dim1: int) -> SparseCompressedTensor:
    """The two sparse dimensions swapped: CSR <-> CSC and BSR <-> BSC with the same index
    tensors (the blocks transposed); batch dimensions do not move, as in PyTorch."""
    n = input.ndim
    d0, d1 = normalize_dim("transpose", dim0, n), normalize_dim("transpose", dim1, n)
    if d0 == d1:
        return input
    batch = input._batch_ndim()

    def kind(d: int) -> str:
        return "Batch" if d < batch else "Sparse" if d < batch + 2 else "Dense"

    if input.dense_dim():
        raise RuntimeError("transpose(): hybrid sparse compressed tensors with dense "
                           "dimensions are not supported")
    if kind(d0) != kind(d1):
        raise RuntimeError(f"transpose(): can only transpose dimensions of the same type "
                           f"(Batch, Sparse, Dense), got {dim0}({kind(d0)}) and "
                           f"{dim1}({kind(d1)})")
    if kind(d0) == "Batch":
        raise RuntimeError("transpose(): ember transposes the sparse dimensions of a sparse "
                           f"compressed tensor only, got {dim0} and {dim1}")
    size = list(input._sparse_size)
    size[batch], size[batch + 1] = size[batch + 1], size[batch]
    vals = input._vals
    if input.layout in BLOCKED:
        vals = vals.transpose(-1, -2)
    return make_compressed(input._cidx, input._pidx, labelled(vals, "TransposeBackward0"),
                           size, _OPPOSITE[input.layout])


def t(input: SparseCompressedTensor) -> SparseCompressedTensor:
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{input.ndim}D")
    out = transpose(input, 0, 1)
    out._vals = labelled(out._vals, "TBackward0")
    return out


def sum(input: SparseCompressedTensor, dim: Any = None, keepdim: bool = False, *,  # noqa: A001
        dtype: Any = None) -> Tensor:
    """The sum of all entries (a dense 0-d tensor); PyTorch sums a CSR matrix over `dim`
    with `keepdim=True` only, into a CSR matrix."""
    if dim is None:
        vals = input._vals
        if dtype is None and not (vals.dtype.is_floating_point or vals.dtype.is_complex):
            return vals.sum(dtype=dt.int64)
        return vals.sum(dtype=dtype)
    if input.layout is not sparse_csr:
        raise RuntimeError("Currently the only compressed sparse format supported for "
                           f"sum.dim_IntList is CSR, but got layout {layout_name(input.layout)}")
    if not keepdim:
        raise RuntimeError("reduction operations on CSR tensors with keepdim=False is "
                           "unsupported")
    return input.to_dense().sum(dim, keepdim=True, dtype=dtype).to_sparse_csr()


def _binary(fn: Any) -> Any:
    def method(self: SparseCompressedTensor, other: Any) -> Any:
        if not isinstance(other, (Tensor, numbers.Number)):
            return NotImplemented
        return fn(self, other)
    return method


C = SparseCompressedTensor
C.mul = C.__mul__ = C.__rmul__ = C.multiply = _binary(mul)
C.add = C.__add__ = _add_method
C.__radd__ = _radd_method
C.neg = C.__neg__ = C.negative = neg
for _name in _UNSUPPORTED:
    setattr(C, _name, _refuse(_name))
_UNARY_FORMS = {name: _value_wise(name) for name in _VALUE_WISE}
for _name, _op in _UNARY_FORMS.items():
    setattr(C, _name, _op)
for _name in _VALUE_WISE_INPLACE:
    setattr(C, _name + "_", _value_wise_(_name))
C.absolute = C.abs
C.mul_ = C.__imul__ = mul_
C.transpose = transpose
C.t = t
C.T = property(lambda self: t(self))
C.sum = sum
C.mm = C.spmm = _mm_method
C._sparse_mm = lambda self, mat2: compressed_matmul(self, mat2, "sparse.mm")
C.matmul = C.__matmul__ = _matmul_method
C.__rmatmul__ = _rmatmul_method
# `ember.<name>(compressed, ...)` once the dense op refused it (see declare._sparse_form)
C.function_forms = {
    "mm": _mm_method, "matmul": _matmul_method, "sum": sum, "mul": mul, "add": add,
    "neg": neg, "t": t, "transpose": transpose, "clone": C.clone, "detach": C.detach,
    **_UNARY_FORMS, **{name: _refuse(name) for name in _UNSUPPORTED}}
C.second_operand_forms = {  # `ember.mm(dense, csr)`, `ember.add(dense, csr)`
    "mm": lambda input, mat2: dense_matmul(input, mat2, "mm"),
    "matmul": lambda input, other: dense_matmul(input, other, "matmul"),
    "add": lambda input, other, *, alpha=1: dense_add(input, other, alpha),
    "mul": lambda input, other: mul(other, input)}


# -- what dense and COO tensors answer to the compressed API --------------------------


def _to_layout(layout: Any) -> Any:
    name = layout._name[len("sparse_"):]
    if layout in BLOCKED:
        def method(self: Tensor, blocksize: Any, dense_dim: int | None = None) -> Tensor:
            return convert(self, layout, blocksize, dense_dim)
    else:
        def method(self: Tensor, dense_dim: int | None = None) -> Tensor:
            return convert(self, layout, None, dense_dim)
    method.__name__ = f"to_sparse_{name}"
    method.__doc__ = (f"This tensor in the sparse {name.upper()} layout"
                      f"{' of blocks of `blocksize`' if layout in BLOCKED else ''} (itself "
                      "when it is one); the last `dense_dim` dimensions of a dense tensor "
                      "stay dense, the ones before the two sparse ones are batch dimensions.")
    return method


def to_sparse(self: Tensor, sparse_dim: int | None = None, *, layout: Any = None,
              blocksize: Any = None, dense_dim: Any = None) -> Tensor:
    """This tensor as a sparse tensor: COO (with `sparse_dim` sparse dimensions) or, with
    `layout`, any of PyTorch's sparse layouts (`blocksize` for BSR and BSC; the last
    `dense_dim` dimensions dense)."""
    if sparse_dim is not None and (layout is not None or blocksize is not None or
                                   dense_dim is not None):
        raise TypeError("to_sparse() takes 0 positional arguments but 1 was given")
    if sparse_dim is not None or (layout in (None, sparse_coo) and blocksize is None and
                                  dense_dim is None):
        from ember.core.sparse_coo import dense_to_sparse

        return dense_to_sparse(self, sparse_dim) if self.layout is strided else \
            self.to_sparse(sparse_dim)
    return convert(self, layout or sparse_coo, blocksize, dense_dim)


def _part_of_other(name: str, row: bool) -> Any:
    def method(self: Tensor) -> Any:
        raise _part_error(name, row, self)
    method.__name__ = name
    return method


for _lay in _OPPOSITE:
    for _cls in (Tensor, SparseTensor):
        setattr(_cls, f"to_sparse_{_lay._name[len('sparse_'):]}", _to_layout(_lay))
for _name, _row in (("crow_indices", True), ("col_indices", True), ("ccol_indices", False),
                    ("row_indices", False)):
    setattr(Tensor, _name, _part_of_other(_name, _row))
Tensor.to_sparse = to_sparse


def _coo_to_sparse(self: SparseTensor, sparse_dim: int | None = None, *, layout: Any = None,
                   blocksize: Any = None, dense_dim: Any = None) -> Tensor:
    if layout in (None, sparse_coo) and blocksize is None and dense_dim is None:
        if sparse_dim is not None and sparse_dim != self.sparse_dim():
            raise RuntimeError(f"to_sparse: conversion from Sparse to Sparse with sparse_dim "
                               f"argument !=self.sparse_dim() is not supported (got "
                               f"{sparse_dim} and {self.sparse_dim()})")
        return self
    return convert(self, layout, blocksize, dense_dim)


SparseTensor.to_sparse = _coo_to_sparse
