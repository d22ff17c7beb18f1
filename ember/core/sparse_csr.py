"""Sparse CSR matrices (`layout=torch.sparse_csr`): construction
(`torch.sparse_csr_tensor`, `dense.to_sparse_csr()`), the parts (`crow_indices`,
`col_indices`, `values`), conversions to dense and COO, the printed form, and products
with a dense matrix.

A CSR matrix holds its values in row-major order with their column indices, and
`crow_indices`, where row `i`'s entries are `crow[i]:crow[i + 1]`. ember keeps 2-D
matrices without dense dimensions (PyTorch's common case). Every computation goes through
the COO tensor of the same entries (ember.core.sparse_coo), whose ops are written with
dense ops: a product's gradient reaches the dense operand (and the values) through them.
"""

from __future__ import annotations

from typing import Any

from ember.core import dtype as dt
from ember.core.creation import arange, zeros
from ember.core.creation import tensor as _as_tensor
from ember.core.host import dtype_arg
from ember.core.ops.shape import stack
from ember.core.printing import add_suffixes, tensor_body
from ember.core.sparse_coo import SparseLayout, SparseTensor, labelled, make, sparse_csr
from ember.core.tensor import Tensor

__all__ = ["SparseCsrTensor", "sparse_csr_tensor"]


class SparseCsrTensor(SparseLayout):
    """A 2-D sparse CSR matrix (`layout=torch.sparse_csr`); make one with
    `ember.sparse_csr_tensor` or `dense.to_sparse_csr()`."""

    __slots__ = ("_crow", "_col")
    is_sparse = False  # (PyTorch's `is_sparse` means the COO layout)
    is_sparse_csr = True
    layout = sparse_csr
    _dispatch_key = "SparseCsr"
    _supported = ("crow_indices/col_indices/values, to_dense, to_sparse, mm/matmul/@ with a "
                  "dense operand, sum(), * and / by a scalar")

    def crow_indices(self) -> Tensor:
        """Where each row's entries start in `col_indices` and `values` (and, last, nnz)."""
        return self._crow

    def col_indices(self) -> Tensor:
        """The column of each entry, row by row."""
        return self._col

    def values(self) -> Tensor:
        """The entries' values, row by row; differentiable."""
        return self._vals

    def _nnz(self) -> int:
        return self._vals.shape[0]

    def sparse_dim(self) -> int:
        return 2

    def dense_dim(self) -> int:
        return 0

    def to_sparse(self, sparse_dim: int | None = None, *, layout: Any = None,
                  blocksize: Any = None, dense_dim: Any = None) -> Any:
        """The COO tensor of these entries (coalesced), or this one for `layout=sparse_csr`."""
        if layout is sparse_csr:
            return self
        rows = arange(self._sparse_size[0], device=self.device).repeat_interleave(
            self._crow[1:] - self._crow[:-1])
        return make(stack([rows, self._col]), self._vals, self._sparse_size, True)

    to_sparse_coo = to_sparse

    def to_sparse_csr(self, dense_dim: int | None = None) -> SparseCsrTensor:
        return self

    def to_dense(self, dtype: Any = None, *, masked_grad: Any = None) -> Tensor:
        """The dense matrix of these entries; differentiable in the values."""
        out = self.to_sparse().to_dense()
        return out if dtype is None else out.to(dtype_arg(dtype))

    def numpy(self, *, force: bool = False) -> Any:
        raise TypeError("can't convert SparseCsr layout tensor to numpy. Use "
                        "Tensor.to_dense() first.")

    def detach(self) -> SparseCsrTensor:
        return make_csr(self._crow, self._col, self._vals.detach(), self._sparse_size)

    def clone(self, *, memory_format: Any = None) -> SparseCsrTensor:
        return make_csr(self._crow.clone(), self._col.clone(), self._vals.clone(),
                        self._sparse_size)

    # -- arithmetic -------------------------------------------------------------------
    def matmul(self, other: Tensor) -> Tensor:
        """`self @ other` for a dense `other` (1-D or 2-D): a dense result, whose gradient
        reaches `other` and the values."""
        if isinstance(other, Tensor) and not other.is_sparse and other.ndim in (1, 2) and \
                other.shape[0] != self._sparse_size[1]:
            rows, cols = self._sparse_size
            shape = "x".join(str(n) for n in other.shape)
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{cols} and "
                               f"{shape if other.ndim == 2 else shape + 'x1'})")
        from ember.core.sparse_ops import sparse_matmul

        return sparse_matmul(self.to_sparse(), other, "mm")

    __matmul__ = mm = matmul

    def sum(self, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
        """The sum of all entries (a dense 0-d tensor); with `dim`, of the dense matrix."""
        if dim is None:
            return self._vals.sum(dtype=dtype)
        return self.to_dense().sum(dim, keepdim, dtype=dtype)

    def mul(self, other: Any) -> SparseCsrTensor:
        """The values times a number (or 0-d tensor)."""
        return make_csr(self._crow, self._col, self._vals * other, self._sparse_size)

    def div(self, other: Any) -> SparseCsrTensor:
        return make_csr(self._crow, self._col, self._vals / other, self._sparse_size)

    __mul__ = __rmul__ = mul
    __truediv__ = div

    def __repr__(self) -> str:
        return csr_repr(self)


SparseCsrTensor.__name__ = SparseCsrTensor.__qualname__ = "Tensor"
dt.printed_in_api()(SparseCsrTensor)
# `ember.mm(csr, dense)` & co: the function forms the dense op hands a CSR operand to
SparseCsrTensor.function_forms = {
    "mm": SparseCsrTensor.matmul, "matmul": SparseCsrTensor.matmul,
    "sum": SparseCsrTensor.sum, "mul": SparseCsrTensor.mul}


def make_csr(crow: Tensor, col: Tensor, values: Tensor, size: tuple) -> SparseCsrTensor:
    """A CSR matrix of these parts, trusted as they are (ember's own results)."""
    t = object.__new__(SparseCsrTensor)
    t._crow, t._col, t._vals = crow, col, values
    t._sparse_size = tuple(size)
    t._dtype, t._device, t._backend = values._dtype, values._device, values._backend
    t._vc = [0]
    return t


def sparse_csr_tensor(crow_indices: Any, col_indices: Any, values: Any, size: Any = None, *,
                      dtype: Any = None, device: Any = None, pin_memory: bool = False,
                      requires_grad: bool = False,
                      check_invariants: bool | None = None) -> SparseCsrTensor:
    r"""Constructs a sparse matrix in CSR (Compressed Sparse Row) format: row ``i``'s
    entries are ``values[crow_indices[i]:crow_indices[i + 1]]``, in the columns
    ``col_indices[crow_indices[i]:crow_indices[i + 1]]``.

    Args:
        crow_indices (array_like): ``rows + 1`` nondecreasing offsets, from 0 to nnz.
        col_indices (array_like): the column of each entry.
        values (array_like): the value of each entry.
        size (list, tuple, or torch.Size, optional): ``(rows, cols)``; when not given,
            ``len(crow_indices) - 1`` rows and the smallest number of columns that holds
            every column index.
        dtype (torch.dtype, optional): the values' dtype (default: the values').
        device (torch.device, optional): the device of the result (default: the values').
        requires_grad (bool, optional): make the values record autograd.
        check_invariants (bool, optional): accepted for PyTorch's signature; ember always
            checks the invariants (PyTorch's messages), as its COO constructor does.

    Example::

        >>> crow = torch.tensor([0, 2, 3])
        >>> col = torch.tensor([0, 2, 1])
        >>> torch.sparse_csr_tensor(crow, col, torch.tensor([1., 2., 3.]), (2, 3)).to_dense()
        tensor([[1., 0., 2.],
                [0., 3., 0.]])
    """
    vals = values if isinstance(values, Tensor) else _as_tensor(values, dtype=dtype)
    crow, col = (x if isinstance(x, Tensor) else _as_tensor(x, dtype=dt.int64)
                 for x in (crow_indices, col_indices))
    if dtype is not None:
        vals = vals.to(dtype_arg(dtype))
    if device is not None:
        vals, crow, col = vals.to(device), crow.to(device), col.to(device)
    if crow.ndim != 1 or col.ndim != 1 or vals.ndim != 1:
        raise RuntimeError("sparse_csr_tensor: ember supports 2-D CSR matrices: "
                           "crow_indices, col_indices and values must be 1-D, got "
                           f"{crow.ndim}-D, {col.ndim}-D and {vals.ndim}-D")
    crow, col = crow.long(), col.long()
    nnz = vals.shape[0]
    if size is None:
        cols = int(col.max().item()) + 1 if col.numel() else 0
        size = (crow.shape[0] - 1, cols)
    size = tuple(int(n) for n in size)
    if len(size) != 2:
        raise RuntimeError(f"sparse_csr_tensor: ember supports 2-D CSR matrices, got size "
                           f"{size}")
    _check_invariants(crow, col, nnz, size)
    vals = vals.detach().requires_grad_(True) if requires_grad else \
        labelled(vals, "SparseCsrTensorBackward0")
    return make_csr(crow.detach(), col.detach(), vals, size)


def _check_invariants(crow: Tensor, col: Tensor, nnz: int, size: tuple[int, int]) -> None:
    """PyTorch's CSR invariants (its messages with `check_invariants=True`)."""
    rows, cols = size
    if crow.shape[0] != rows + 1:
        raise RuntimeError(f"crow_indices.shape[-1] must be equal to the number of rows + 1 "
                           f"(={rows + 1}), but got {crow.shape[0]}")
    if col.shape[0] != nnz:
        raise RuntimeError(f"col_indices.shape[-1] must be equal to nnz (={nnz}) as defined "
                           f"by values.shape[0], but got {col.shape[0]}")
    first, last = crow[0].item(), crow[-1].item()
    if first != 0:
        raise RuntimeError("`crow_indices[..., 0] == 0` is not satisfied.")
    if last != nnz:
        raise RuntimeError("`crow_indices[..., -1] == nnz` is not satisfied.")
    steps = crow[1:] - crow[:-1]
    if rows and bool(((steps < 0) | (steps > cols)).any()):
        raise RuntimeError("`0 <= crow_indices[..., 1:] - crow_indices[..., :-1] <= ncols` "
                           "is not satisfied.")
    if nnz and bool(((col < 0) | (col >= cols)).any()):
        raise RuntimeError("`0 <= col_indices < ncols` is not satisfied.")


def coo_to_csr(s: SparseTensor) -> SparseCsrTensor:
    """The CSR matrix of a 2-D COO tensor's entries (coalesced: sorted by row, then
    column); differentiable in the values."""
    if s.ndim != 2 or s.dense_dim():
        raise RuntimeError(f"to_sparse_csr: ember supports 2-D matrices without dense "
                           f"dimensions, got a {s.ndim}-D tensor")
    s = s.coalesce()
    rows = s._sparse_size[0]
    ind = s._indices()
    counts = zeros((rows + 1,), dtype=dt.int64, device=s.device)
    if s._nnz():
        counts = counts.index_add(0, ind[0] + 1, ind[0].new_ones(ind.shape[1]))
    return make_csr(counts.cumsum(0), ind[1].contiguous(), s._vals, s._sparse_size)


def dense_to_csr(x: Tensor, dense_dim: int | None = None) -> SparseCsrTensor:
    """`x.to_sparse_csr()`: the nonzero entries of a 2-D dense `x` (or a COO tensor's)."""
    if dense_dim is not None:
        raise RuntimeError("to_sparse_csr: ember supports no dense dimensions "
                           f"(dense_dim={dense_dim})")
    if x.ndim != 2:
        raise RuntimeError(f"to_sparse_csr: ember supports 2-D matrices, got a {x.ndim}-D "
                           "tensor")
    return coo_to_csr(x if x.is_sparse else x.to_sparse())


def csr_repr(s: SparseCsrTensor) -> str:
    """PyTorch's form: `tensor(crow_indices=tensor([...]),\\n       col_indices=...,\\n
    values=tensor([...]), size=(2, 3), nnz=3, layout=torch.sparse_csr)`."""
    indent = len("tensor(")
    parts = []
    for name, part in (("crow_indices", s._crow), ("col_indices", s._col),
                       ("values", s._vals)):
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
    suffixes.append(f"layout={sparse_csr!r}")
    if s.grad_fn is not None:
        suffixes.append(f"grad_fn=<{s.grad_fn.name()}>")
    elif s.requires_grad:
        suffixes.append("requires_grad=True")
    return add_suffixes("tensor(" + (",\n" + " " * indent).join(parts), suffixes, indent)


Tensor.to_sparse_csr = dense_to_csr
SparseTensor.to_sparse_csr = coo_to_csr
