"""The ops of sparse COO tensors: products with a dense matrix (`torch.sparse.mm`,
`spmm`, `mm`/`matmul`/`@` with a sparse operand), `torch.sparse.sum`, `softmax` and
`log_softmax` over the specified entries, arithmetic (`+`, `-` of two sparse tensors;
`*`, `/` by a scalar; `*` by a dense tensor of the same shape), and transposes.

Each is written with dense ops on the indices and values (ember.core.sparse_coo), so it
runs on every backend and its gradient is the dense ops': `sparse @ dense` is a gather
of the dense rows at the column indices, scaled by the values, and an index_add into
the rows of the result.
"""

from __future__ import annotations

import functools
import numbers
from typing import Any

from ember.core import dtype as dt
from ember.core.creation import arange, tensor, zeros
from ember.core.grad_mode import no_grad
from ember.core.graph import record, relabel
from ember.core.host import dtype_arg
from ember.core.ops.nn import constant_pad_nd
from ember.core.ops.shape import cat, stack
from ember.core.shapes import normalize_dim
from ember.core.sparse_coo import (
    SparseTensor,
    coalesced,
    could_not_run,
    labelled,
    layout_name,
    linear_index,
    make,
    sparse_coo,
    sparse_csr,
    unsupported,
)
from ember.core.storage import strided
from ember.core.tensor import Tensor

_SCALAR_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half",
                 "bfloat16": "BFloat16", "int64": "Long", "int32": "Int", "int16": "Short",
                 "int8": "Char", "uint8": "Byte", "bool": "Bool"}


# -- products -------------------------------------------------------------------------


def _sparse_dense_mm(s: SparseTensor, d: Tensor, op: str) -> Tensor:
    """`s @ d` for a 2-D sparse `s` (no dense dimensions) and a 1-D or 2-D dense `d`; its
    node is named as PyTorch's (`torch.sparse.mm`: SparseAddmmBackward0, else
    MmBackward0 or MvBackward0)."""
    if s.sparse_dim() != 2 or s.dense_dim():
        raise RuntimeError(f"{op}: expected a 2-D sparse matrix (sparse_dim 2, dense_dim 0), "
                           f"got sparse_dim {s.sparse_dim()} and dense_dim {s.dense_dim()}")
    if d.is_sparse:  # sparse @ sparse: a sparse result of the product's nonzeros
        out = _sparse_dense_mm(s, d.to_dense(), op).to_sparse()
        out._vals = labelled(out._vals, "SparseSparseMatmulBackward0" if op == "sparse.mm"
                             else "MmBackward0")
        return out
    if d.ndim not in (1, 2):
        raise RuntimeError(f"{op}: expected the dense operand to be 1-D or 2-D, got "
                           f"{d.ndim}-D")
    if d.device is not s.device:
        raise RuntimeError(f"{op}: expected all tensors to be on the same device, but found "
                           f"at least two devices, {s.device} and {d.device}!")
    if d.dtype is not s.dtype:
        raise RuntimeError(f"expected scalar type {_SCALAR_NAMES[s.dtype.name]} but found "
                           f"{_SCALAR_NAMES[d.dtype.name]}")
    rows, inner = s.shape
    if d.shape[0] != inner:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {inner}, got "
                           f"{d.shape[0]}")
    dense = d.unsqueeze(1) if d.ndim == 1 else d
    row, col = s._ind[0], s._ind[1]
    contrib = dense.index_select(0, col) * s._vals.unsqueeze(1)
    if s._nnz():
        out = zeros((rows, dense.shape[1]), dtype=s.dtype, device=s.device)
        out = out.index_add(0, row, contrib)
    else:  # no entries: zeros, still in the graph of both operands (as PyTorch's)
        out = contrib.sum(0, keepdim=True).expand(rows, dense.shape[1])
    out = out.squeeze(1) if d.ndim == 1 else out
    return labelled(out, "SparseAddmmBackward0" if op == "sparse.mm" else
                    "MvBackward0" if d.ndim == 1 else "MmBackward0")


def sparse_matmul(input: Tensor, other: Tensor, op: str = "mm") -> Tensor:
    """The product of two matrices, one of them or both sparse (the other dense):
    `torch.mm`, `torch.matmul` and `@` call it when an operand is sparse."""
    if input.is_sparse:
        return _sparse_dense_mm(input, other, op)
    if other.ndim != 2 or input.ndim not in (1, 2):
        raise RuntimeError(f"{op}: a dense operand times a sparse one takes a 1-D or 2-D "
                           f"dense tensor and a 2-D sparse one, got {input.ndim}-D and "
                           f"{other.ndim}-D")
    # dense @ sparse = (sparse^T @ dense^T)^T
    if input.ndim == 1:
        return _sparse_dense_mm(transpose(other, 0, 1), input, op)
    return labelled(_sparse_dense_mm(transpose(other, 0, 1), input.t(), op).t(), "MmBackward0")


def mm(mat1: Tensor, mat2: Tensor, reduce: str = "sum") -> Tensor:
    r"""The matrix product of a sparse matrix `mat1` and a dense (or sparse) `mat2`, as
    ``torch.sparse.mm``; two dense matrices are multiplied as ``torch.mm`` does.

    The gradient of a sparse `mat1` that requires grad is sparse, with `mat1`'s indices
    (the gradient where `mat1` has entries).
    """
    if reduce != "sum":
        return _mm_reduce(mat1, mat2, reduce)
    if hasattr(mat1, "_sparse_mm"):  # a compressed (CSR, CSC, BSR) matrix
        return mat1._sparse_mm(mat2)
    if not (mat1.is_sparse or mat2.is_sparse):
        return mat1.mm(mat2)
    return sparse_matmul(mat1, mat2, "sparse.mm")


def _mm_reduce(mat1: Tensor, mat2: Tensor, reduce: str) -> Tensor:
    """`torch.sparse.mm(csr, dense, reduce)`: each row of the result the `reduce` ("mean",
    "amax", "amin") of the row's entries times the dense rows they name; a row without
    entries is zeros. PyTorch has it for CSR matrices only."""
    if mat1.layout is strided:
        raise NotImplementedError(could_not_run("_sparse_mm_reduce_impl",
                                                mat1.device.type.upper()))
    if mat1.layout is sparse_coo:
        raise unsupported(mat1, "_sparse_mm_reduce_impl")
    if mat1.layout is not sparse_csr:
        raise RuntimeError(f"sparse_mm_reduce: expect self to be SparseCsr, got "
                           f"{layout_name(mat1.layout)}")
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, "
                           f"got {reduce}")
    if reduce == "prod":
        raise RuntimeError("sparse_mm_reduce: reduce type of prod has not been enabled.")
    coo = mat1.to_sparse_coo()
    rows, cols = coo._ind[0], coo._ind[1]
    contrib = mat2.index_select(0, cols) * coo._vals.unsqueeze(1)
    out = zeros((mat1.shape[0], mat2.shape[1]), dtype=contrib.dtype, device=contrib.device)
    out = out.scatter_reduce(0, rows.unsqueeze(1).expand_as(contrib), contrib, reduce,
                             include_self=False)
    return labelled(out, "SparseMmReduceImplBackward0")


def bmm(input: SparseTensor, mat2: Tensor) -> Tensor:
    """`torch.bmm` of a 3-D sparse COO batch of matrices and a dense batch: each entry
    (b, i, j) adds its value times row j of `mat2[b]` into row i of the result's `b`."""
    if input.sparse_dim() != 3 or input.dense_dim() or mat2.is_sparse or mat2.ndim != 3:
        raise RuntimeError(f"bmm_sparse: expected a 3-D sparse COO tensor (sparse_dim 3) "
                           f"and a 3-D dense tensor, got sparse_dim {input.sparse_dim()} and "
                           f"a {mat2.ndim}-D tensor")
    batch, rows, inner = input.shape
    if mat2.shape[0] != batch:
        raise RuntimeError("bmm_sparse: 'self.size(0)' and 'mat2.size(0)' must match")
    if mat2.shape[1] != inner:
        raise RuntimeError("bmm_sparse: 'self.size(2)' and 'mat2.size(1)' must match")
    b, i, j = input._ind[0], input._ind[1], input._ind[2]
    cols = mat2.shape[2]
    contrib = mat2.reshape(batch * inner, cols).index_select(0, b * inner + j) * \
        input._vals.unsqueeze(1)
    out = zeros((batch * rows, cols), dtype=contrib.dtype, device=contrib.device)
    out = out.index_add(0, b * rows + i, contrib).reshape(batch, rows, cols)
    return labelled(out, "BmmBackward0")


def spmm(input: Tensor, mat2: Tensor) -> Tensor:
    """`input @ mat2` where `input` may be sparse (``torch.spmm``, ``torch.mm``'s twin)."""
    return input.mm(mat2)


def addmm(mat: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Any = 1,
          alpha: Any = 1) -> Tensor:
    """`beta * mat + alpha * (mat1 @ mat2)` for a sparse `mat1` (``torch.sparse.addmm``)."""
    return labelled(mat.addmm(mat1, mat2, beta=beta, alpha=alpha), "SparseAddmmBackward0")


# -- reductions -----------------------------------------------------------------------


def _dims(input: SparseTensor, dim: Any) -> list[int]:
    dims = [dim] if isinstance(dim, numbers.Integral) else list(dim)
    return sorted({normalize_dim("sum", d, input.ndim) for d in dims})


def sparse_sum(input: Tensor, dim: Any = None, dtype: Any = None) -> Tensor:
    r"""The sum of a sparse tensor's entries over `dim` (all of them when None), as
    ``torch.sparse.sum``: a dense tensor when every sparse dimension is summed, else a
    coalesced sparse tensor of the remaining dimensions.
    """
    if not input.is_sparse:
        if dim is not None and input.layout is not strided:  # (a compressed tensor)
            raise unsupported(input, "_indices")
        raise RuntimeError("coalesce expected sparse coordinate tensor layout but got "
                           f"{layout_name(input.layout)}")
    vals = input._vals
    if dtype is not None:
        vals = vals.to(dtype_arg(dtype, "sum"))
    elif not (vals.dtype.is_floating_point):
        vals = vals.to(dt.int64)  # integers sum as int64, as in PyTorch
    if dim is None:
        return vals.sum()
    dims = _dims(input, dim)
    nsparse = input.sparse_dim()
    sparse_dims = [d for d in dims if d < nsparse]
    dense_dims = [d - nsparse + 1 for d in dims if d >= nsparse]
    if dense_dims:
        vals = vals.sum(dense_dims)
    if len(sparse_dims) == nsparse:
        return vals.sum(0)
    keep = [d for d in range(nsparse) if d not in sparse_dims]
    size = tuple(n for d, n in enumerate(input.shape) if d not in dims)
    return coalesced(make(input._ind[keep], vals, size))


def _sum_method(self: SparseTensor, dim: Any = None, keepdim: bool = False,
                dtype: Any = None) -> Tensor:
    out = sparse_sum(self, dim, dtype)
    if keepdim and dim is not None:  # the summed dimensions back, of size 1
        for d in _dims(self, dim):
            out = unsqueeze(out, d) if out.is_sparse else out.unsqueeze(d)
    return out


# -- softmax over the specified entries -------------------------------------------------


def _grouped_softmax(input: Tensor, dim: int, dtype: Any, log: bool) -> Tensor:
    name = "log_softmax" if log else "softmax"
    if not input.is_sparse:
        return input.log_softmax(dim, dtype=dtype) if log else input.softmax(dim, dtype=dtype)
    s = input.coalesce()
    d = normalize_dim(name, dim, s.ndim)
    if d >= s.sparse_dim():
        vals = s._vals.log_softmax(d - s.sparse_dim() + 1, dtype=dtype) if log else \
            s._vals.softmax(d - s.sparse_dim() + 1, dtype=dtype)
        return make(s._ind, vals, s._sparse_size, True)
    want = dtype_arg(dtype, "log_softmax" if log else "softmax")
    vals = s._vals if want is None else s._vals.to(want)
    if not s._nnz():
        return make(s._ind, vals, s._sparse_size, True)
    # entries that share every index but `d` form a group; unspecified ones count as -inf
    keep = [k for k in range(s.sparse_dim()) if k != d]
    group_size = tuple(s._sparse_size[k] for k in keep)
    group = linear_index(s._ind[keep], group_size) if keep else \
        zeros((s._nnz(),), dtype=dt.int64, device=s.device)
    _, group = group.unique(return_inverse=True)
    n = int(group.max().item()) + 1
    shape = (n,) + tuple(vals.shape[1:])
    index = group.reshape((-1,) + (1,) * (vals.ndim - 1)).expand(tuple(vals.shape))
    peak = zeros(shape, dtype=vals.dtype, device=vals.device).scatter_reduce(
        0, index, vals.detach(), "amax", include_self=False)
    shifted = vals - peak.gather(0, index)
    total = zeros(shape, dtype=vals.dtype, device=vals.device).scatter_add(
        0, index, shifted.exp())
    out = shifted - total.log().gather(0, index) if log else \
        shifted.exp() / total.gather(0, index)
    label = "SparseLogSoftmaxBackward0" if log else "SparseSoftmaxBackward0"
    return make(s._ind, labelled(out, label), s._sparse_size, True)


def softmax(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    r"""Softmax over the specified entries of a sparse tensor along `dim` (the entries it
    does not specify count as -inf, so they stay unspecified), as
    ``torch.sparse.softmax``."""
    return _grouped_softmax(input, dim, dtype, log=False)


def log_softmax(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    r"""`log(softmax(input, dim))` over the specified entries, as
    ``torch.sparse.log_softmax``."""
    return _grouped_softmax(input, dim, dtype, log=True)


# -- arithmetic -----------------------------------------------------------------------


def _is_scalar(x: Any) -> bool:
    return isinstance(x, numbers.Number) or (isinstance(x, Tensor) and not x.is_sparse
                                             and x.ndim == 0)


def add(input: SparseTensor, other: Any, *, alpha: Any = 1) -> SparseTensor:
    """`input + alpha * other` of two sparse tensors of one size: PyTorch's merge of their
    entry lists (see `merge`)."""
    if not (isinstance(other, Tensor) and other.is_sparse):
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) "
                           "instead.")
    _check_same_shape(input, other)
    common = dt.promote_types(input.dtype, other.dtype)
    theirs = (other._vals if alpha == 1 else other._vals * alpha).to(common)
    if input._nnz() and other._nnz() and not (input._vals.is_contiguous()
                                              and other._vals.is_contiguous()):
        return _concatenated(input, input._vals.to(common), other, theirs)
    if _same_indices(input, other):  # PyTorch's merge pairs the entries one to one
        return make(input._ind, input._vals.to(common) + theirs, input._sparse_size,
                    input._coalesced and other._coalesced)
    return merge(input, input._vals.to(common), other, theirs)


def _concatenated(a: SparseTensor, a_vals: Tensor, b: SparseTensor,
                  b_vals: Tensor) -> SparseTensor:
    """PyTorch's sparse add when either operand's values are not contiguous (the gradient
    of a `sum` is an expanded tensor): the entry lists concatenated, uncoalesced, and
    coalesced only once there are more entries than elements (its bound on the growth of
    an accumulated gradient; the flag still says uncoalesced)."""
    out = make(cat([a._ind, b._ind], 1), cat([a_vals, b_vals]), a._sparse_size)
    if out._nnz() > out.numel():
        out = coalesced(out)
        out._coalesced = False
    return out


def _check_same_shape(input: SparseTensor, other: SparseTensor) -> None:
    if tuple(other.shape) != tuple(input.shape):
        raise RuntimeError(f"add: expected sizes of 'self' and 'other' to match, but "
                           f"{list(input.shape)} != {list(other.shape)}")
    if other.sparse_dim() != input.sparse_dim():
        raise RuntimeError(f"add: expected 'self' and 'other' to have same sparse "
                           f"dimensions, but got {input.sparse_dim()} and "
                           f"{other.sparse_dim()}")


def merge(a: SparseTensor, a_vals: Tensor, b: SparseTensor, b_vals: Tensor) -> SparseTensor:
    """The entries of `a` (values `a_vals`) and `b` (values `b_vals`) merged as PyTorch's
    sparse add does, coalesced or not: one pass over both lists that takes the smaller
    head (`a`'s on a tie, summed with `b`'s). Two coalesced operands give their coalesced
    union; others keep their duplicates, and an empty operand gives the other's entries
    unchanged (how gradient accumulation concatenates two embedding gradients). The
    order is found on the host from the indices; the values are gathered by an
    index_add, so the result is differentiable in both."""
    flag = a._coalesced and b._coalesced
    if not b._nnz():  # (a copy in PyTorch: contiguous values)
        return make(a._ind, a_vals.contiguous(), a._sparse_size, a._coalesced)
    if not a._nnz():
        return make(b._ind, b_vals.contiguous(), b._sparse_size, b._coalesced)
    if flag:  # the merge of two sorted unique lists is their coalesced union (no host pass)
        return coalesced(make(cat([a._ind, b._ind], 1), cat([a_vals, b_vals]),
                              a._sparse_size))
    size = a._sparse_size[:a.sparse_dim()]
    # row-major positions compare as PyTorch's lexicographic comparison of the indices
    ka = linear_index(a._ind, size).tolist()
    kb = linear_index(b._ind, size).tolist()
    na, nb = len(ka), len(kb)
    dest_a, dest_b, pick = [0] * na, [0] * nb, []
    i = j = r = 0
    while i < na or j < nb:
        if i < na and (j >= nb or ka[i] <= kb[j]):
            dest_a[i] = r
            pick.append(i)
            if j < nb and ka[i] == kb[j]:
                dest_b[j] = r
                j += 1
            i += 1
        else:
            dest_b[j] = r
            pick.append(na + j)
            j += 1
        r += 1
    device = a._ind.device
    dest = _as_index(dest_a + dest_b, device)
    ind = cat([a._ind, b._ind], 1).index_select(1, _as_index(pick, device))
    vals = zeros((r,) + tuple(a_vals.shape[1:]), dtype=a_vals.dtype,
                 device=a_vals.device).index_add(0, dest, cat([a_vals, b_vals]))
    return make(ind, vals, a._sparse_size, flag)


def _as_index(values: list[int], device: Any) -> Tensor:
    return tensor(values, dtype=dt.int64, device=device)


def _same_indices(a: SparseTensor, b: SparseTensor) -> bool:
    return a._ind is b._ind or (a._ind.shape == b._ind.shape and bool(a._ind.equal(b._ind)))


def dense_add(dense: Tensor, sparse: SparseTensor, alpha: Any = 1) -> Tensor:
    """`dense + alpha * sparse`: a dense tensor (`dense + sparse`, `dense - sparse`)."""
    _check_dense_sparse_shapes(dense, sparse)
    other = sparse.to_dense()
    return dense + (other if alpha == 1 else other * alpha)


def _check_dense_sparse_shapes(dense: Tensor, sparse: SparseTensor) -> None:
    if tuple(dense.shape) != tuple(sparse.shape):
        raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self has "
                           f"size {list(dense.shape)} while other has size "
                           f"{list(sparse.shape)} (FYI: dense-sparse addition does not "
                           "currently support broadcasting)")


def _reflected_add(alpha: int) -> Any:
    def method(self: SparseTensor, other: Any) -> Any:
        if isinstance(other, Tensor):  # (a sparse `other` calls its own __add__ first)
            return dense_add(other, self, alpha)
        if isinstance(other, numbers.Number):
            raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) "
                               "instead.")
        return NotImplemented
    return method


def sub(input: SparseTensor, other: Any, *, alpha: Any = 1) -> SparseTensor:
    """`input - alpha * other` of two sparse tensors of one size."""
    return add(input, other, alpha=-alpha)


def mul(input: SparseTensor, other: Any) -> SparseTensor:
    """`input * other`: by a scalar (or 0-d tensor) the values are scaled; by a dense
    tensor of the same shape, each entry by the dense element at its place."""
    if _is_scalar(other):
        return make(input._ind, input._vals * other, input._sparse_size, input._coalesced)
    if isinstance(other, Tensor) and other.is_sparse:
        return _sparse_mul(input, other)
    if isinstance(other, Tensor) and _broadcasts_to(other.shape, input.shape):
        # a dense tensor that broadcasts to this one's shape (a row or column of scales):
        # each entry times the dense element at its place
        n = input.sparse_dim()
        full = other.expand(*input.shape)
        at = full[tuple(input._ind[d] for d in range(n))]
        return make(input._ind, input._vals * at, input._sparse_size, input._coalesced)
    raise RuntimeError(f"mul: a sparse tensor of size {list(input.shape)} multiplies a "
                       "number, a 0-d tensor, or a tensor that broadcasts to its size")


def _sparse_mul(input: SparseTensor, other: SparseTensor) -> SparseTensor:
    """`sparse * sparse` as PyTorch's intersection kernel leaves it: of two coalesced
    tensors, the entries both specify (coalesced); else the entries of the uncoalesced
    one (of both uncoalesced, the one with fewer), each times the other's sum at its
    place, zeros kept."""
    if input.sparse_dim() != other.sparse_dim() or \
            tuple(input.shape) != tuple(other.shape):
        raise RuntimeError("sparse_binary_op_intersection_cpu(): expects sparse inputs with "
                           "equal dimensionality, number of sparse dimensions, and shape of "
                           "sparse dimensions")
    both = input._coalesced and other._coalesced
    if not both and (input._coalesced or (not other._coalesced and
                                          other._nnz() < input._nnz())):
        input, other = other, input  # the pattern is `input`'s
    n = input.sparse_dim()
    place = tuple(input._ind[d] for d in range(n))
    at = other.to_dense()[place]
    if not both:
        return make(input._ind, labelled(input._vals * at, "MulBackward0"),
                    input._sparse_size, False)
    ones = make(other._ind, other._vals.new_ones((other._nnz(),)), other._sparse_size[:n],
                True)
    kept = ones.to_dense()[place].nonzero().reshape(-1)
    return make(input._ind.index_select(1, kept),
                labelled((input._vals * at).index_select(0, kept), "MulBackward0"),
                input._sparse_size, True)


def _broadcasts_to(shape: Any, target: Any) -> bool:
    if len(shape) > len(target):
        return False
    return all(a in (1, b) for a, b in zip(reversed(tuple(shape)), reversed(tuple(target))))


def div(input: SparseTensor, other: Any, *, rounding_mode: str | None = None) -> SparseTensor:
    """`input / other` for a scalar (or 0-d tensor) `other`: the values divided."""
    _check_divisor(other)
    return make(input._ind, input._vals.div(other, rounding_mode=rounding_mode),
                input._sparse_size, input._coalesced)


def _check_divisor(other: Any) -> None:
    if not _is_scalar(other):
        shape = list(other.shape) if isinstance(other, Tensor) else []
        raise RuntimeError(f"Sparse division requires a scalar or zero-dim dense tensor "
                           f"divisor (got shape {shape} for divisor)")


def _refuse(aten_name: str) -> Any:
    """PyTorch's refusal of a sparse operand by an op it has no sparse kernel for, under
    the kernel's name (`mean` runs `aten::mean.dim`, a tensor's `softmax` `_softmax`)."""
    def refused(input: SparseTensor, *args: Any, **kwargs: Any) -> Any:
        raise unsupported(input, aten_name)
    refused.__name__ = aten_name
    return refused


# the dense ops whose refusal PyTorch words with another kernel's name than ember's op's
_REFUSED = {"mean": _refuse("mean.dim"), "equal": _refuse("equal"),
            "softmax": _refuse("_softmax"), "log_softmax": _refuse("_log_softmax")}


def neg(input: SparseTensor) -> SparseTensor:
    return make(input._ind, -input._vals, input._sparse_size, input._coalesced)


# PyTorch's value-wise unary ops of sparse tensors: the f with f(0) == 0, applied to the
# specified values (of COO tensors: after coalescing, as f(a + b) is not f(a) + f(b));
# the others (`exp`, `cos`, `sigmoid` ...) refuse a sparse operand
ZERO_PRESERVING = ("abs", "sin", "sqrt", "tanh", "relu", "log1p", "expm1", "sgn", "sign",
                   "ceil", "floor", "round", "trunc", "frac", "asin", "asinh", "atan", "atanh",
                   "tan", "sinh", "erf", "erfinv", "deg2rad", "rad2deg", "isnan", "isinf",
                   "signbit", "conj_physical")
_COO_VALUE_WISE = ZERO_PRESERVING + ("square", "nan_to_num", "isneginf", "isposinf")
# (PyTorch's in-place forms of the first list; `neg_` keeps the entries as they are)
_COO_VALUE_WISE_INPLACE = tuple(n for n in ZERO_PRESERVING if not n.startswith("is")
                                and n not in ("signbit", "conj_physical")) + ("nan_to_num",)
_VALUE_WISE_ALIASES = {"absolute": "abs", "fix": "trunc", "arcsin": "asin",
                       "arcsinh": "asinh", "arctan": "atan", "arctanh": "atanh"}


def _value_wise(name: str) -> Any:
    def op(input: SparseTensor, *args: Any, **kwargs: Any) -> SparseTensor:
        s = input.coalesce()
        return make(s._ind, getattr(s._vals, name)(*args, **kwargs), s._sparse_size, True)
    op.__name__ = name
    return op


def _value_wise_(name: str) -> Any:
    def op(input: SparseTensor, *args: Any, **kwargs: Any) -> SparseTensor:
        if not input._coalesced:
            raise RuntimeError(f"{name}_ requires coalesced input")
        getattr(input._vals, name + "_")(*args, **kwargs)
        input._vc[0] += 1
        return input
    op.__name__ = name + "_"
    return op


def pow(input: SparseTensor, exponent: Any) -> SparseTensor:  # noqa: A001 - PyTorch's name
    """`input ** exponent` for a number `exponent` other than 0 (which would make every
    unspecified element 1): the coalesced values raised."""
    if not _is_scalar(exponent):
        raise unsupported(input, "pow.Tensor_Tensor")
    if exponent == 0:
        raise RuntimeError("pow: cannot raise to zeroth power on sparse tensor; it would make "
                           "the result tensor dense")
    s = input.coalesce()
    return make(s._ind, s._vals.pow(exponent), s._sparse_size, True)


# -- in place: what optimizers and gradient accumulation write --------------------------


def _replace(target: SparseTensor, result: SparseTensor) -> SparseTensor:
    """Makes `target` hold `result`'s entries (in its own dtype): a sparse in-place op."""
    target._ind, target._vals = result._ind, result._vals.to(target._dtype)
    target._coalesced = result._coalesced
    target._vc[0] += 1
    return target


def add_(input: SparseTensor, other: Any, *, alpha: Any = 1) -> SparseTensor:
    """`input += alpha * other` for a sparse `other` of the same size (PyTorch's merge)."""
    return _replace(input, add(input, other, alpha=alpha))


def sub_(input: SparseTensor, other: Any, *, alpha: Any = 1) -> SparseTensor:
    return _replace(input, add(input, other, alpha=-alpha))


def mul_(input: SparseTensor, other: Any) -> SparseTensor:
    """`input *= other` for a number or 0-d tensor: the values scaled in place."""
    if not _is_scalar(other):
        raise unsupported(input, "mul_.Tensor")
    input._vals.mul_(other)
    input._vc[0] += 1
    return input


def div_(input: SparseTensor, other: Any, *, rounding_mode: str | None = None) -> SparseTensor:
    _check_divisor(other)
    input._vals.div_(other, rounding_mode=rounding_mode)
    input._vc[0] += 1
    return input


def zero_(input: SparseTensor) -> SparseTensor:
    """Removes every entry (PyTorch's `zero_` of a sparse tensor: nnz becomes 0)."""
    vals = input._vals
    input._ind = zeros((input.sparse_dim(), 0), dtype=dt.int64, device=input.device)
    input._vals = zeros((0,) + tuple(vals.shape[1:]), dtype=vals.dtype, device=vals.device)
    input._coalesced = True
    input._vc[0] += 1
    return input


def dense_add_(dense: Tensor, sparse: SparseTensor, alpha: Any = 1) -> Tensor:
    """`dense += alpha * sparse`, in place: the values added at their indices (duplicates
    each once), touching only those entries (an optimizer's step on a sparse gradient)."""
    _check_dense_sparse_shapes(dense, sparse)
    if not sparse._nnz():
        return dense
    vals = sparse._vals.to(dense.dtype)
    if sparse.sparse_dim() == 1:  # (an embedding's gradient) row by row, in entry order
        return dense.index_add_(0, sparse._ind[0], vals, alpha=alpha)
    where = tuple(sparse._ind[d] for d in range(sparse.sparse_dim()))
    dense.index_put_(where, vals if alpha == 1 else vals * alpha, accumulate=True)
    return dense


def transpose(input: SparseTensor, dim0: int, dim1: int) -> SparseTensor:
    """The sparse tensor with sparse dimensions `dim0` and `dim1` swapped."""
    d0 = normalize_dim("transpose", dim0, input.ndim)
    d1 = normalize_dim("transpose", dim1, input.ndim)
    if d0 == d1:
        return input
    n = input.sparse_dim()
    if d0 >= n or d1 >= n:
        raise RuntimeError(f"transpose: ember transposes the sparse dimensions of a sparse "
                           f"tensor only (sparse_dim {n}), got {dim0} and {dim1}")
    order = list(range(n))
    order[d0], order[d1] = d1, d0
    size = list(input._sparse_size)
    size[d0], size[d1] = size[d1], size[d0]
    return make(input._ind[order], input._vals, size, False)


def narrow_copy(input: SparseTensor, dim: int, start: int, length: int) -> SparseTensor:
    """A sparse copy of `length` slices of `dim` from `start` on: along a sparse dimension
    the entries inside the range, their index shifted down by `start`; along a dense one
    the values narrowed (PyTorch's narrow_copy_sparse)."""
    ndim = input.ndim
    if not 0 <= dim < ndim:
        raise RuntimeError(f"Dimension {dim} out of range. Expecting 0 <= dim < {ndim}.")
    size = list(input.shape)
    if start < 0 or length < 0 or start + length > size[dim]:
        raise RuntimeError(f"Invalid range to narrow. range(start, start+length) must be a "
                           f"subset of range(0, {size[dim]}).")
    size[dim] = length
    n = input.sparse_dim()
    ind, vals = input._ind, input._vals
    if dim >= n:
        return make(ind.clone(), vals.narrow_copy(dim - n + 1, start, length), size,
                    input.is_coalesced())
    inside = ((ind[dim] >= start) & (ind[dim] < start + length)).nonzero().reshape(-1)
    kept = ind.index_select(1, inside)
    shift = zeros(n, 1, dtype=kept.dtype, device=kept.device)
    shift[dim] = start
    return make(kept - shift, vals.index_select(0, inside), size, input.is_coalesced())


def select(input: SparseTensor, dim: int, index: int) -> Tensor:
    """The slice at `index` of `dim` (PyTorch's select_sparse): along a sparse dimension
    the entries there, that dimension dropped from their indices (a dense tensor, their
    sum, when it was the only sparse one); along a dense one the values selected."""
    d = normalize_dim("select", dim, input.ndim)
    size = list(input.shape)
    if not -size[d] <= index < size[d]:
        raise IndexError(f"index {index} is out of bounds for dimension {d} with size "
                         f"{size[d]}")
    index %= size[d]
    del size[d]
    n = input.sparse_dim()
    ind, vals = input._ind, input._vals
    if d >= n:
        return make(ind.clone(), labelled(vals.select(d - n + 1, index), "SelectBackward0"),
                    size, input.is_coalesced())
    there = (ind[d] == index).nonzero().reshape(-1)
    picked = vals.index_select(0, there)
    if n == 1:  # no sparse dimension left: the dense sum of the entries there
        return relabel(picked.sum(0), "SelectBackward0", (vals,))
    rows = [r for r in range(n) if r != d]
    # (flagged coalesced only with at most one entry, as PyTorch's)
    return make(ind.index_select(0, _as_index(rows, ind.device)).index_select(1, there),
                labelled(picked, "SelectBackward0"), size, picked.shape[0] <= 1)


def index_select(input: SparseTensor, dim: int, index: Tensor) -> SparseTensor:
    """The slices `index` of `dim`, in that order (PyTorch's index_select_sparse): along
    a sparse dimension each entry at a selected position, re-indexed by where `index`
    names it (repeats repeat it); along a dense one the values selected."""
    d = normalize_dim("index_select", dim, input.ndim)
    size = list(input.shape)
    size[d] = index.numel()
    n = input.sparse_dim()
    ind, vals = input._ind, input._vals
    if d >= n:
        return make(ind.clone(), vals.index_select(d - n + 1, index), size,
                    input.is_coalesced())
    # (position in `index`, entry) pairs, by position then entry, as PyTorch orders them
    pairs = (index.reshape(-1, 1) == ind[d].reshape(1, -1)).nonzero()
    picked, entries = pairs[:, 0], pairs[:, 1]
    new_ind = ind.index_select(1, entries)
    new_ind[d] = picked
    return make(new_ind, labelled(vals.index_select(0, entries), "IndexSelectBackward0"),
                size, False)


def sparse_cat(tensors: Any, dim: int = 0) -> SparseTensor:
    """`torch.cat` of sparse COO tensors (PyTorch's cat_sparse): along a sparse dimension
    the entry lists joined, each tensor's indices there shifted by the sizes before it;
    along a dense one the entry lists joined, each tensor's values zero-padded to the
    joined width. The result is flagged uncoalesced, as PyTorch's."""
    tensors = list(tensors)
    for k, x in enumerate(tensors):
        if not x.is_sparse:
            raise RuntimeError(f"Concatenating sparse tensors, but a dense tensor was found "
                               f"at position {k}.")
    first = tensors[0]
    d = normalize_dim("cat", dim, first.ndim)
    for k, x in enumerate(tensors[1:], 1):
        if x.ndim != first.ndim or x.sparse_dim() != first.sparse_dim() or any(
                a != b for j, (a, b) in enumerate(zip(x.shape, first.shape)) if j != d):
            raise RuntimeError(f"All tensors must have the same shape: {list(first.shape)} "
                               f"(except in the concatenating dimension), but found shape: "
                               f"{list(x.shape)} at position {k}.")
    kind = functools.reduce(dt.promote_types, (x.dtype for x in tensors))
    tensors = [x if x.dtype is kind else x.to(kind) for x in tensors]
    size = list(first.shape)
    size[d] = sum(x.shape[d] for x in tensors)
    n = first.sparse_dim()
    indices, values, offset = [], [], 0
    for x in tensors:
        ind, vals = x._ind, x._vals
        if d < n:  # shift this tensor's entries along the sparse dimension
            shift = zeros((n, 1), dtype=ind.dtype, device=ind.device)
            shift[d] = offset
            ind = ind + shift
        else:  # place this tensor's values at its offset of the joined dense dimension
            vd = d - n + 1
            pad = [0, 0] * (vals.ndim - 1 - vd) + [offset, size[d] - offset - x.shape[d]]
            vals = constant_pad_nd(vals, pad)
        indices.append(ind)
        values.append(vals)
        offset += x.shape[d]
    return make(cat(indices, 1), labelled(cat(values), "CatBackward0"), size, False)


def unsqueeze(input: SparseTensor, dim: int) -> SparseTensor:
    """A dimension of size 1 inserted at `dim`: a sparse one (a row of zeros in the
    indices) up to the last sparse dimension, else a dense one of the values."""
    d = normalize_dim("unsqueeze", dim, input.ndim + 1)
    size = list(input.shape)
    size.insert(d, 1)
    n = input.sparse_dim()
    ind, vals = input._ind, input._vals
    if d <= n:
        zero = zeros((1, ind.shape[1]), dtype=ind.dtype, device=ind.device)
        ind = cat([ind[:d], zero, ind[d:]])
        return make(ind, labelled(vals, "UnsqueezeBackward0"), size, False)
    return make(ind, vals.unsqueeze(d - n + 1), size, input._coalesced)


def sparse_stack(tensors: Any, dim: int = 0) -> SparseTensor:
    """`torch.stack` of sparse COO tensors: each unsqueezed at `dim`, then joined."""
    tensors = list(tensors)
    d = normalize_dim("stack", dim, tensors[0].ndim + 1)
    out = sparse_cat([unsqueeze(x, d) if x.is_sparse else x for x in tensors], d)
    out._vals = labelled(out._vals, "StackBackward0")
    return out


def zeros_like(input: SparseTensor, *, dtype: Any = None, layout: Any = None,
               device: Any = None, requires_grad: bool = False,
               memory_format: Any = None) -> Tensor:
    """`torch.zeros_like` of a sparse tensor: one of its size, sparse and dense dimensions
    with no entries (dense with `layout=torch.strided`)."""
    if layout is strided:
        return input.to_dense().new_zeros(input.shape, dtype=dtype, device=device)\
            .requires_grad_(requires_grad)
    kind = dtype_arg(dtype, "zeros_like") or input.dtype
    place = device if device is not None else input.device
    n = input.sparse_dim()
    ind = zeros((n, 0), dtype=dt.int64, device=place)
    vals = zeros((0, *input.shape[n:]), dtype=kind, device=place)
    return make(ind, vals.requires_grad_(requires_grad), input.shape, True)


def _coalesced_(self: SparseTensor, coalesced: bool) -> SparseTensor:
    """Marks this tensor coalesced (or not) without checking: PyTorch's promise-keeping
    `_coalesced_`, for indices known to be sorted and unique."""
    self._coalesced = bool(coalesced)
    return self


def hspmm(mat1: Tensor, mat2: Tensor) -> SparseTensor:
    """The product of a 2-D sparse `mat1` and a dense `mat2` as a hybrid sparse tensor
    (``torch.hspmm``): the rows of `mat1` with entries, each a dense row of the product.
    PyTorch has no derivative for it: a gradient through it raises, as there."""
    if not getattr(mat1, "is_sparse", False):
        raise NotImplementedError(f"Could not run 'aten::hspmm' with arguments from the "
                                  f"'{mat1.device.type.upper()}' backend.")
    s = mat1.coalesce()
    with no_grad():
        rows = s._ind[0].unique(sorted=True)
        vals = _sparse_dense_mm(s, mat2, "hspmm").index_select(0, rows)
    if s.requires_grad or mat2.requires_grad:
        record("NotImplemented", _no_hspmm_derivative, (s._vals, mat2), vals)
    return make(rows.reshape(1, -1), vals, (s.shape[0], mat2.shape[1]), rows.numel() <= 1)


def sspaddmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Any = 1,
             alpha: Any = 1) -> SparseTensor:
    """`beta * input + alpha * (mat1 @ mat2)` as a sparse tensor (``torch.sspaddmm``): the
    entries of the sparse `input`, then each row of the product where the sparse `mat1`
    has entries, as a dense row of entries (uncoalesced, as PyTorch's)."""
    if not getattr(input, "is_sparse", False):
        raise RuntimeError("tensor.sspaddmm(...) can only be called on sparse tensors")
    s = mat1.coalesce()
    rows = s._ind[0].unique(sorted=True)
    product = _sparse_dense_mm(s, mat2, "sspaddmm").index_select(0, rows)
    cols = mat2.shape[1]
    place = stack([rows.repeat_interleave(cols),
                   arange(cols, device=rows.device).repeat(rows.numel())])
    return make(cat([input._ind, place], 1),
                cat([input._vals * beta, product.reshape(-1) * alpha]), input.shape, False)


def smm(input: Tensor, mat: Tensor) -> SparseTensor:
    """The product of a sparse matrix and a dense one as a sparse tensor (``torch.smm``):
    `sspaddmm` with no entries of its own to add."""
    if not getattr(input, "is_sparse", False):
        raise RuntimeError("tensor.sspaddmm(...) can only be called on sparse tensors")
    empty = make(zeros((2, 0), dtype=dt.int64, device=input.device),
                 zeros((0,), dtype=input.dtype, device=input.device),
                 (input.shape[0], mat.shape[1]), True)
    return sspaddmm(empty, input, mat)


def _no_hspmm_derivative(node: Any, grad: Tensor) -> Any:
    raise RuntimeError("derivative for aten::hspmm is not implemented")


def _getitem(self: SparseTensor, index: Any) -> Tensor:
    """`s[i]`: select along the first dimension (PyTorch's only indexing of a sparse
    tensor; any other index meets the dense op's refusal)."""
    if isinstance(index, numbers.Integral) and not isinstance(index, bool):
        return select(self, 0, int(index))
    return Tensor.__getitem__(self, index)


def t(input: SparseTensor) -> SparseTensor:
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{input.ndim}D")
    return input if input.ndim < 2 else transpose(input, 0, 1)


def _binary(fn: Any, reflected: bool = False) -> Any:
    def method(self: SparseTensor, other: Any, **kwargs: Any) -> Any:
        if not isinstance(other, (Tensor, numbers.Number)):
            return NotImplemented
        return fn(self, other, **kwargs)
    if reflected:  # `number * sparse`, and `dense * sparse`: Python asks the subclass first
        def rmethod(self: SparseTensor, other: Any) -> Any:
            if not isinstance(other, (Tensor, numbers.Number)):
                return NotImplemented
            return fn(self, other)
        return rmethod
    return method


def _matmul_method(self: SparseTensor, other: Tensor) -> Tensor:
    return sparse_matmul(self, other, "matmul")


def _mm_method(self: SparseTensor, mat2: Tensor) -> Tensor:
    return sparse_matmul(self, mat2, "mm")


for _name, _fn in (("add", add), ("sub", sub), ("mul", mul)):
    setattr(SparseTensor, _name, _binary(_fn))
    setattr(SparseTensor, f"__{_name}__", _binary(_fn))
SparseTensor.div = SparseTensor.__truediv__ = SparseTensor.true_divide = \
    SparseTensor.divide = _binary(div)
SparseTensor.multiply = SparseTensor.mul
SparseTensor.__rmul__ = _binary(mul, reflected=True)
SparseTensor.__radd__ = _reflected_add(1)
SparseTensor.__rsub__ = _reflected_add(-1)
SparseTensor.add_ = SparseTensor.__iadd__ = add_
SparseTensor.sub_ = SparseTensor.__isub__ = sub_
SparseTensor.mul_ = SparseTensor.__imul__ = mul_
SparseTensor.div_ = SparseTensor.__itruediv__ = div_
SparseTensor.zero_ = zero_
SparseTensor.neg = SparseTensor.__neg__ = SparseTensor.negative = neg
SparseTensor.transpose = transpose
SparseTensor.t = t
SparseTensor.narrow_copy = narrow_copy
SparseTensor.select = select
SparseTensor.index_select = index_select
SparseTensor.unsqueeze = unsqueeze
SparseTensor.bmm = bmm
SparseTensor.smm = smm
SparseTensor.sspaddmm = sspaddmm
SparseTensor._coalesced_ = _coalesced_
SparseTensor.pow = SparseTensor.__pow__ = _binary(pow)
_VALUE_WISE_FORMS = {name: _value_wise(name) for name in _COO_VALUE_WISE}
_VALUE_WISE_FORMS.update({alias: _VALUE_WISE_FORMS[name]
                          for alias, name in _VALUE_WISE_ALIASES.items()})
for _name, _op in _VALUE_WISE_FORMS.items():
    setattr(SparseTensor, _name, _op)
for _name in _COO_VALUE_WISE_INPLACE:
    setattr(SparseTensor, _name + "_", _value_wise_(_name))
SparseTensor.neg_ = SparseTensor.negative_ = lambda self: _replace(self, neg(self))
SparseTensor.positive = lambda self: self
SparseTensor.__getitem__ = _getitem
SparseTensor.T = property(lambda self: t(self))
SparseTensor.sum = _sum_method
SparseTensor.mm = SparseTensor.spmm = _mm_method
SparseTensor.matmul = SparseTensor.__matmul__ = _matmul_method
# `ember.<name>(sparse, ...)`: the function forms that take a sparse first operand (see
# declare._sparse_form); PyTorch's others (softmax ...) refuse it, and so do ember's
SparseTensor.function_forms = {
    "t": t, "transpose": transpose, "sum": _sum_method, "clone": SparseTensor.clone,
    "detach": SparseTensor.detach, "neg": neg, "add": add, "sub": sub, "mul": mul,
    "div": div, "narrow_copy": narrow_copy, "select": select, "index_select": index_select,
    "cat": sparse_cat, "concat": sparse_cat, "concatenate": sparse_cat, "stack": sparse_stack,
    "unsqueeze": unsqueeze, "pow": pow, "zeros_like": zeros_like, "empty_like": zeros_like,
    "bmm": bmm, "negative": neg,
    "positive": lambda input: input,
    **_VALUE_WISE_FORMS, **_REFUSED}
SparseTensor.second_operand_forms = {  # `ember.add(dense, sparse)` & co
    "add": lambda input, other, *, alpha=1: dense_add(input, other, alpha),
    "sub": lambda input, other, *, alpha=1: dense_add(input, other, -alpha),
    "mul": lambda input, other: mul(other, input),
    "add_": lambda input, other, *, alpha=1: dense_add_(input, other, alpha),
    "sub_": lambda input, other, *, alpha=1: dense_add_(input, other, -alpha)}
for _name, _op in _REFUSED.items():  # (a tensor's softmax refuses it: torch.sparse's
    setattr(SparseTensor, _name, _op)  # softmax is the sparse one)
