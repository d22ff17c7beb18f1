"""Sparse COO tensors (`layout=torch.sparse_coo`): the tensor type, its construction,
coalescing, conversions to and from dense, and its printed form.

A sparse COO tensor holds two dense tensors and a size: `indices`, int64 of shape
`[sparse_dim, nnz]`, and `values`, of shape `[nnz, *dense_dims]`. It is a subclass of
Tensor, as in PyTorch (`isinstance(s, torch.Tensor)` is true), so code that takes any
tensor takes it; but it has no strided buffer. Its `_data`, which every dense op and
kernel reads, raises NotImplementedError naming the op and the layout, PyTorch's
"Could not run 'aten::exp' with arguments from the 'SparseCPU' backend": a dense op
refuses a sparse tensor cleanly, and the dense path pays nothing for it.

Every computation on a sparse tensor is written with dense ops on its indices and
values (ember.core.sparse_ops), so it runs on every backend, and autograd falls out of
the dense ops: a sparse tensor's place in the graph is its values' (`requires_grad`,
`grad_fn`, `is_leaf` are its values'), and the gradient of a sparse leaf is a sparse
tensor with its indices and the values' gradient.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Sequence
from typing import Any

from ember.core import dtype as dt
from ember.core.creation import tensor as _as_tensor
from ember.core.creation import zeros
from ember.core.errors import with_context
from ember.core.graph import record
from ember.core.host import dtype_arg
from ember.core.opdef import OPS, Op
from ember.core.printing import add_suffixes, tensor_body
from ember.core.shapes import normalize_dim
from ember.core.storage import layout
from ember.core.tensor import Size, Tensor
from ember.core.torch_function import _disabled_torch_function_impl

sparse_coo = layout("sparse_coo")
# PyTorch's compressed layouts (their tensors: ember.core.sparse_compressed)
sparse_csr, sparse_csc = layout("sparse_csr"), layout("sparse_csc")
sparse_bsr, sparse_bsc = layout("sparse_bsr"), layout("sparse_bsc")
# PyTorch's name of each layout in its messages ("... layout but got SparseCsr")
_LAYOUT_NAMES = {"strided": "Strided", "sparse_coo": "Sparse", "sparse_csr": "SparseCsr",
                 "sparse_csc": "SparseCsc", "sparse_bsr": "SparseBsr", "sparse_bsc": "SparseBsc"}


def layout_name(layout: Any) -> str:
    """PyTorch's name of `layout` in its messages: 'Strided', 'Sparse', 'SparseCsr' ..."""
    return "none" if layout is None else _LAYOUT_NAMES.get(getattr(layout, "_name", ""),
                                                           str(layout))

_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def backend_key(t: Tensor) -> str:
    """PyTorch's dispatch key of a sparse tensor's layout and device: 'SparseCPU',
    'SparseCUDA', 'SparseCsrCPU'."""
    kind = t.device.type
    return t._dispatch_key + (kind.upper() if kind in ("cpu", "cuda") else kind.capitalize())


def could_not_run(op: str, key: str) -> str:
    """PyTorch's message for an op without a kernel for the dispatch key `key` (but for the
    list of the backends that have one, which is its build's)."""
    return (f"Could not run 'aten::{op}' with arguments from the '{key}' backend. This could "
            "be because the operator doesn't exist for this backend, or was omitted during "
            "the selective/custom build process (if using custom build). If you are a "
            "Facebook employee using PyTorch on mobile, please visit "
            "https://fburl.com/ptmfixes for possible resolutions.")


def unsupported(t: Tensor, op: str) -> NotImplementedError:
    """The error of a dense op given a sparse tensor: PyTorch's words (but for the list of
    the backends that have the op, which is its build's), and ember's hint in a note."""
    return with_context(
        NotImplementedError(could_not_run(op, backend_key(t))),
        f"ember's sparse tensors (layout={t.layout!r}) support {t._supported}; call "
        ".to_dense() first for any other op.")


def _op_in_progress() -> str:
    """The name of the op that reached for a sparse tensor's `_data`: the nearest frame in
    ember that holds an `op` (dispatch's name, or a declaration), else the first ember
    function the user called. Only errors pay for this walk."""
    frame = sys._getframe(2)
    outermost = None
    while frame is not None:
        if frame.f_code.co_filename.startswith(_EMBER_DIR):
            op = frame.f_locals.get("op")
            if isinstance(op, str) and (op in OPS or op[-1:] == "_" and op[:-1] in OPS):
                return op  # (an in-place op's name, `exp_`, as PyTorch's kernel's)
            if isinstance(op, Op):
                return op.name
            if frame.f_code.co_name != "routed":  # (torch_function's wrapper of a method)
                outermost = frame.f_code.co_name
        elif outermost is not None:  # the user's code (not ember.run's frames below it)
            break
        frame = frame.f_back
    return outermost or "unknown"


class SparseLayout(Tensor):
    """What PyTorch's sparse layouts (ember's COO and CSR tensors) share: a size and the
    values, no strided buffer (`_data`, which every dense op reads, raises as PyTorch's
    "Could not run 'aten::exp' with arguments from the 'SparseCPU' backend"), and a place
    in the autograd graph that is their values'."""

    __slots__ = ("_vals", "_sparse_size")
    __torch_function__ = _disabled_torch_function_impl  # ember's own layout: no overrides
    _dispatch_key = "Sparse"  # PyTorch's dispatch key of the layout, before the device
    _supported = ""  # what ember's tensors of the layout do, for the error of the rest
    _impl_name = "SparseTensorImpl"  # PyTorch's C++ class of the layout, as errors name it

    # -- what dense code reaches for ------------------------------------------------
    @property
    def _data(self) -> Any:  # type: ignore[override]
        raise unsupported(self, _op_in_progress())

    @_data.setter
    def _data(self, value: Any) -> None:
        raise unsupported(self, _op_in_progress())

    # autograd state is the values': a sparse tensor is in the graph where they are
    @property
    def _requires_grad(self) -> bool:  # type: ignore[override]
        return self._vals._requires_grad

    @_requires_grad.setter
    def _requires_grad(self, value: bool) -> None:
        self._vals._requires_grad = value

    @property
    def _node(self) -> Any:  # type: ignore[override]
        return self._vals._node

    @_node.setter
    def _node(self, value: Any) -> None:
        self._vals._node = value

    # -- attributes -----------------------------------------------------------------
    @property
    def shape(self) -> Size:  # type: ignore[override]
        return Size(self._sparse_size)

    @property
    def ndim(self) -> int:  # type: ignore[override]
        return len(self._sparse_size)

    def dim(self) -> int:
        return len(self._sparse_size)

    def size(self, dim: int | None = None) -> Size | int:
        if dim is None:
            return Size(self._sparse_size)
        return self._sparse_size[normalize_dim("size", dim, self.ndim)]

    def numel(self) -> int:
        return math.prod(self._sparse_size)

    nelement = numel

    def __len__(self) -> int:
        if not self._sparse_size:
            raise TypeError("len() of a 0-d tensor")
        return self._sparse_size[0]

    def is_contiguous(self, memory_format: Any = None) -> bool:
        return False

    # -- no strided storage: PyTorch's answers ---------------------------------------
    def storage_offset(self) -> int:
        return 0

    def data_ptr(self) -> int:
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    const_data_ptr = data_ptr

    def untyped_storage(self) -> Any:
        raise NotImplementedError(f"Cannot access storage of {self._impl_name}")

    def storage(self) -> Any:
        return self.untyped_storage()

    def storage_type(self) -> Any:
        return self.untyped_storage()

    def requires_grad_(self, requires_grad: bool = True) -> SparseLayout:
        Tensor.requires_grad_(self, requires_grad)
        return self

    def __format__(self, format_spec: str) -> str:
        return object.__format__(self, format_spec)


class SparseTensor(SparseLayout):
    """A sparse COO tensor (`layout=torch.sparse_coo`); make one with
    `ember.sparse_coo_tensor` or `dense.to_sparse()`."""

    __slots__ = ("_ind", "_coalesced")
    is_sparse = True
    layout = sparse_coo
    _supported = ("coalesce, to_dense, indices/values, mm/matmul/spmm with a dense operand, "
                  "sparse.sum, sparse.softmax, +, -, * and / by a scalar, t/transpose, "
                  "select and s[i], and to()")

    @property
    def grad(self) -> Tensor | None:  # type: ignore[override]
        """A sparse leaf's gradient: a sparse tensor of its indices (PyTorch's for
        `torch.sparse.mm`: the gradient where this tensor has entries)."""
        g = self._vals._grad
        return None if g is None else leaf_grad(self, g)

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None and not value.is_sparse:
            raise RuntimeError("assigned grad has a different layout than the sparse tensor: "
                               f"expected {sparse_coo!r}, got {value.layout!r}")
        self._vals._grad = None if value is None else value._vals

    def stride(self, dim: int | None = None) -> tuple[int, ...] | int:
        """PyTorch's strides of a COO tensor: 0 along every dimension (it has no strided
        buffer)."""
        if dim is None:
            return (0,) * self.ndim
        normalize_dim("stride", dim, self.ndim)
        return 0

    @property
    def nbytes(self) -> int:  # type: ignore[override]
        raise RuntimeError(
            "nbytes is not defined for sparse tensors.  If you want the size of the "
            "constituent tensors, add the nbytes of the indices and values.  If you want the "
            "size of the  equivalent dense tensor, multiply numel() by element_size()")

    def sparse_dim(self) -> int:
        """How many leading dimensions are sparse (the rows of `indices`)."""
        return self._ind.shape[0]

    def dense_dim(self) -> int:
        """How many trailing dimensions each value has."""
        return self._vals.ndim - 1

    def _nnz(self) -> int:
        """How many entries are specified (duplicates count until coalesced)."""
        return self._vals.shape[0]

    def is_coalesced(self) -> bool:
        """Whether the indices are sorted and free of duplicates (as known: a tensor built
        from indices is not, until `coalesce()` or `is_coalesced=True` says so)."""
        return self._coalesced

    def _indices(self) -> Tensor:
        """The indices, `[sparse_dim, nnz]`, coalesced or not."""
        return self._ind

    def _values(self) -> Tensor:
        """The values, `[nnz, *dense_dims]`, coalesced or not; as PyTorch's, outside the
        graph (`values()` is the differentiable one)."""
        return self._vals.detach()

    def indices(self) -> Tensor:
        """The indices of a coalesced tensor (call `coalesce()` first)."""
        if not self._coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return self._ind.detach()

    def values(self) -> Tensor:
        """The values of a coalesced tensor (call `coalesce()` first); differentiable."""
        if not self._coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return labelled(self._vals, "ValuesBackward0")  # (an alias: in-place writes show)

    def coalesce(self) -> SparseTensor:
        """This tensor with its duplicate entries summed and its indices sorted (itself
        when coalesced already)."""
        return self if self._coalesced else coalesced(self)

    def to_dense(self, dtype: Any = None, *, masked_grad: Any = None) -> Tensor:
        """The dense tensor of these entries (duplicates summed); differentiable."""
        if dtype is not None:
            raise RuntimeError("dtype argument is not supported by sparse_to_dense")
        return labelled(to_dense(self), "ToDenseBackward0")

    def to_sparse(self, sparse_dim: int | None = None) -> SparseTensor:
        if sparse_dim is not None and sparse_dim != self.sparse_dim():
            raise RuntimeError(f"to_sparse: conversion from Sparse to Sparse with sparse_dim "
                               f"argument !=self.sparse_dim() is not supported (got "
                               f"{sparse_dim} and {self.sparse_dim()})")
        return self

    def numpy(self, *, force: bool = False) -> Any:
        raise TypeError("can't convert Sparse layout tensor to numpy. Use Tensor.to_dense() "
                        "first.")

    # -- copies, moves, casts -------------------------------------------------------
    def copy_(self, src: Tensor, non_blocking: bool = False) -> SparseTensor:
        """Makes this tensor a copy of the sparse tensor `src` (its size, indices and
        values, cast to this tensor's dtype), in place: `load_state_dict` of a sparse
        buffer."""
        if not src.is_sparse:
            raise unsupported(self, "copy_")
        vals = src._vals.detach().to(self._device, self._dtype, copy=True)
        if self._vals._requires_grad and self._vals._node is None:
            vals.requires_grad_(True)
        self._ind = src._ind.to(self._device, copy=True)
        self._vals, self._sparse_size = vals, src._sparse_size
        self._coalesced = src._coalesced
        self._vc[0] += 1
        return self


    def detach(self) -> SparseTensor:
        return make(self._ind, self._vals.detach(), self._sparse_size, self._coalesced)

    def detach_(self) -> SparseTensor:
        self._vals.detach_()
        return self

    def clone(self, *, memory_format: Any = None) -> SparseTensor:
        return make(self._ind.clone(), self._vals.clone(), self._sparse_size,
                    self._coalesced)

    def to(self, *args: Any, **kwargs: Any) -> SparseTensor:
        """This tensor on another device or as another dtype (itself when nothing
        changes); the indices stay int64."""
        from ember.core.ops.elementwise import to_arguments

        device, d, non_blocking, copy = to_arguments(args, kwargs)
        vals, ind = self._vals, self._ind
        if device is not None:
            vals = vals.to(device, non_blocking=non_blocking)
            ind = ind.to(device, non_blocking=non_blocking)
        if d is not None:
            vals = vals.to(d)
        if vals is self._vals and ind is self._ind:
            return self.clone() if copy else self
        return make(ind, vals, self._sparse_size, self._coalesced)

    def cpu(self) -> SparseTensor:
        return self.to("cpu")

    def cuda(self, device: Any = None, non_blocking: bool = False) -> SparseTensor:
        return self.to("cuda" if device is None else
                       (f"cuda:{device}" if isinstance(device, int) else device),
                       non_blocking=non_blocking)

    def type(self, dtype: Any = None, non_blocking: bool = False) -> Any:
        """With no argument, the type name (`torch.sparse.FloatTensor`); else this tensor
        as `dtype`."""
        if dtype is None:

            kind = "" if self.device.type == "cpu" else f"{self.device.type}."
            return f"{dt.API_NAME}.{kind}sparse.{dt.LEGACY_TYPE_NAMES[self.dtype.name]}"
        return self.to(getattr(dtype, "dtype", dtype))

    def float(self, memory_format: Any = None) -> SparseTensor:
        return self.to(dt.float32)

    def double(self, memory_format: Any = None) -> SparseTensor:
        return self.to(dt.float64)

    def half(self, memory_format: Any = None) -> SparseTensor:
        return self.to(dt.float16)

    def bfloat16(self, memory_format: Any = None) -> SparseTensor:
        return self.to(dt.bfloat16)

    def long(self, memory_format: Any = None) -> SparseTensor:
        return self.to(dt.int64)

    def int(self, memory_format: Any = None) -> SparseTensor:
        return self.to(dt.int32)

    def bool(self, memory_format: Any = None) -> SparseTensor:
        return self.to(dt.bool_)

    # -- printing and pickling ------------------------------------------------------
    def __repr__(self) -> str:
        return sparse_repr(self)

    def __reduce_ex__(self, protocol: int) -> Any:
        return (_rebuild_sparse, (self._ind, self._vals.detach(), self._sparse_size,
                                  self._coalesced, self.requires_grad))

    def __deepcopy__(self, memo: dict) -> SparseTensor:
        out = make(self._ind.clone(), self._vals.detach().clone(), self._sparse_size,
                   self._coalesced)
        if self.requires_grad and self.is_leaf:
            out.requires_grad_(True)
        memo[id(self)] = out
        return out


# printed as PyTorch's sparse tensors' class: `type(adj)` is <class 'torch.Tensor'> under the
# alias (it pickles through __reduce_ex__, a function of this module)
SparseTensor.__name__ = SparseTensor.__qualname__ = "Tensor"
dt.printed_in_api()(SparseTensor)


def _rebuild_sparse(indices: Tensor, values: Tensor, size: tuple, is_coalesced: bool,
                    requires_grad: bool) -> SparseTensor:
    """Unpickling (copies, `torch.save`/`load`)."""
    out = make(indices, values, tuple(size), is_coalesced)
    return out.requires_grad_(True) if requires_grad else out


def make(indices: Tensor, values: Tensor, size: Sequence[int],
         is_coalesced: bool = False) -> SparseTensor:
    """A sparse tensor of these parts, trusted as they are (no checks, no copies): the
    constructor of ember's own results."""
    t = object.__new__(SparseTensor)
    t._ind, t._vals = indices, values
    t._sparse_size = tuple(size)
    t._coalesced = bool(is_coalesced)
    t._dtype, t._device, t._backend = values._dtype, values._device, values._backend
    t._vc = [0]
    return t


# -- construction ---------------------------------------------------------------------


def _int_size(size: Any) -> tuple[int, ...]:
    try:
        return tuple(int(s) for s in size)
    except TypeError:
        raise TypeError(f"sparse_coo_tensor(): argument 'size' must be a tuple of ints, but "
                        f"got {type(size).__name__}") from None


def sparse_coo_tensor(indices: Any = None, values: Any = None,
                      size: Sequence[int] | None = None, *,
                      dtype: Any = None, device: Any = None, pin_memory: bool = False,
                      requires_grad: bool = False, check_invariants: bool | None = None,
                      is_coalesced: bool | None = None) -> SparseTensor:
    r"""Constructs a sparse tensor in COO(rdinate) format with specified values at the
    given indices.

    Args:
        indices (array_like): the coordinates, `[sparse_dim, nnz]`; converted to int64.
        values (array_like): the values, `[nnz, *dense_dims]`.
        size (list, tuple, or torch.Size, optional): the size of the sparse tensor; when
            not given, the smallest that holds every index.
        dtype (torch.dtype, optional): the values' dtype (default: the values').
        device (torch.device, optional): the device of the result (default: the values').
        requires_grad (bool, optional): make the result a leaf that records autograd.
        check_invariants (bool, optional): accepted for PyTorch's signature; ember always
            checks that the indices are not negative and lie inside `size` (an invalid
            index would otherwise fail later, in whichever op first reads it).
        is_coalesced (bool, optional): declare the indices sorted and unique.

    `sparse_coo_tensor(size)` and `sparse_coo_tensor(size=size)` are an empty sparse tensor
    of that size (of the default dtype, or `dtype`).

    Example::

        >>> i = torch.tensor([[0, 1, 1], [2, 0, 2]])
        >>> torch.sparse_coo_tensor(i, torch.tensor([3., 4., 5.]), (2, 3)).to_dense()
        tensor([[0., 0., 3.],
                [4., 0., 5.]])
    """
    if values is None and (size is None or indices is None):  # (size): no entries
        full_size = _int_size(indices if size is None else size)
        d = dtype_arg(dtype, "sparse_coo_tensor") or dt.get_default_dtype()
        return sparse_coo_tensor(zeros((len(full_size), 0), dtype=dt.int64, device=device),
                                 zeros((0,), dtype=d, device=device), full_size,
                                 requires_grad=requires_grad, is_coalesced=True)
    vals = values if isinstance(values, Tensor) else _as_tensor(values, dtype=dtype)
    ind = indices if isinstance(indices, Tensor) else _as_tensor(indices, dtype=dt.int64)
    if vals.is_sparse or ind.is_sparse:
        raise TypeError("sparse_coo_tensor(): indices and values must be dense tensors")
    if dtype is not None:
        vals = vals.to(dtype_arg(dtype, "sparse_coo_tensor"))
    if device is not None:
        vals = vals.to(device)
        ind = ind.to(device)
    elif ind.device is not vals.device:
        raise RuntimeError(f"device of indices ({ind.device}) must match device of values "
                           f"({vals.device})")
    if ind.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(ind.shape)}")
    if ind.dtype is not dt.int64:
        ind = ind.long()
    if vals.ndim == 0:
        raise RuntimeError("values must be at least one-dimensional (one value per index)")
    sparse_dim, nnz = ind.shape
    if vals.shape[0] != nnz:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: "
                           f"{nnz}, nnz from values: {vals.shape[0]}")
    dense_dims = tuple(vals.shape[1:])
    if size is None:
        top = ind.detach().amax(1).tolist() if nnz else [-1] * sparse_dim
        full_size = tuple(int(m) + 1 for m in top) + dense_dims
        _check_bounds(ind, full_size[:sparse_dim])  # (negative indices)
    else:
        full_size = _int_size(size)
        if len(full_size) != sparse_dim + len(dense_dims):
            raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: "
                               f"len(size) = {len(full_size)}, sparse_dim = {sparse_dim}, "
                               f"dense_dim = {len(dense_dims)}")
        if full_size[sparse_dim:] != dense_dims:
            raise RuntimeError(f"values has incorrect size, expected "
                               f"{[nnz, *full_size[sparse_dim:]]}, got {list(vals.shape)}")
        _check_bounds(ind, full_size[:sparse_dim])
    ind = ind.detach()
    if requires_grad:
        vals = vals.detach().requires_grad_(True)
    else:  # a node of its own, as PyTorch's: the tensor is not its values' leaf
        vals = labelled(vals, "SparseCooTensorWithDimsAndTensorsBackward0")
    # (at most one entry is coalesced, as PyTorch flags it)
    return make(ind, vals, full_size, bool(is_coalesced) or nnz <= 1)


def labelled(values: Tensor, label: str) -> Tensor:
    """`values` as a new tensor whose graph node (an identity) is named `label`, PyTorch's
    name for the sparse op that made them; detached when they need no gradient."""
    out = values.detach()
    if values.requires_grad:
        record(label, lambda node, g: g, (values,), out)
    return out


def _check_bounds(ind: Tensor, sparse_size: tuple[int, ...]) -> None:
    """PyTorch's invariant check: each index row within `[0, size)` of its dimension."""
    if not ind.shape[1]:
        return
    lo, hi = ind.amin(1).tolist(), ind.amax(1).tolist()
    for d, (low, high, n) in enumerate(zip(lo, hi, sparse_size)):
        if low < 0:
            raise RuntimeError(f"found negative index {low} for dim {d}")
        if high >= n:
            raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is {n} "
                               f"but found index {high}")


# -- coalescing and conversions -----------------------------------------------------


def linear_index(ind: Tensor, sparse_size: tuple[int, ...]) -> Tensor:
    """Each entry's position in the row-major order of the sparse dimensions."""
    lin = zeros((ind.shape[1],), dtype=dt.int64, device=ind.device)
    for d, n in enumerate(sparse_size):
        lin = lin * n + ind[d]
    return lin


def unravel(lin: Tensor, sparse_size: tuple[int, ...]) -> Tensor:
    """The indices `[sparse_dim, n]` of row-major positions (linear_index's inverse)."""
    rows = []
    for n in reversed(sparse_size):
        rows.append(lin.remainder(n) if n else lin)
        lin = lin.div(n, rounding_mode="floor") if n else lin
    from ember.core.ops.shape import stack

    return stack(rows[::-1]) if rows else lin.reshape(0, -1)


def coalesced(s: SparseTensor) -> SparseTensor:
    """`s` with duplicates summed (differentiably) and indices in row-major order."""
    size = s._sparse_size[:s.sparse_dim()]
    vals = s._vals
    if not s._nnz():
        return make(s._ind, vals, s._sparse_size, True)
    uniq, inverse = linear_index(s._ind, size).unique(sorted=True, return_inverse=True)
    summed = zeros((uniq.shape[0],) + tuple(vals.shape[1:]), dtype=vals.dtype,
                   device=vals.device).index_add(0, inverse, vals)
    return make(unravel(uniq, size), labelled(summed, "CoalesceBackward0"), s._sparse_size,
                True)


def leaf_grad(s: SparseTensor, g: Tensor) -> SparseTensor:
    """The gradient of a sparse leaf from its values' gradient `g`: coalesced, as
    PyTorch's (the duplicates of an entry share one gradient, kept once)."""
    if s._coalesced:
        return make(s._ind, g, s._sparse_size, True)
    size = s._sparse_size[:s.sparse_dim()]
    if not s._nnz():
        return make(s._ind, g, s._sparse_size, True)
    uniq, inverse = linear_index(s._ind, size).unique(sorted=True, return_inverse=True)
    once = zeros((uniq.shape[0],) + tuple(g.shape[1:]), dtype=g.dtype,
                 device=g.device).index_copy(0, inverse, g)
    return make(unravel(uniq, size), once, s._sparse_size, True)


def to_dense(s: SparseTensor) -> Tensor:
    """The dense tensor of `s` (duplicates summed): an index_add of the values into the
    flattened sparse dimensions, differentiable in the values."""
    sparse_size = s._sparse_size[:s.sparse_dim()]
    dense_dims = tuple(s._vals.shape[1:])
    flat = zeros((math.prod(sparse_size),) + dense_dims, dtype=s.dtype, device=s.device)
    if s._nnz():
        flat = flat.index_add(0, linear_index(s._ind, sparse_size), s._vals)
    return flat.reshape(s._sparse_size)


def dense_to_sparse(x: Tensor, sparse_dim: int | None = None) -> SparseTensor:
    """`x.to_sparse(sparse_dim)`: the entries of `x` whose value (the slice of its dense
    dimensions) is not all zero; coalesced, differentiable in `x`."""
    if x.is_sparse:
        return x.to_sparse(sparse_dim)
    n = x.ndim if sparse_dim is None else int(sparse_dim)
    if sparse_dim is not None and not 0 <= n <= x.ndim:
        raise RuntimeError(f"dense_to_sparse: sparse_dim argument must be in [0,{x.ndim}] "
                           f"range, but {n} is given")
    if n == 0 and x.ndim:
        raise RuntimeError("dense_to_sparse: sparse_dim argument must be in >0 when "
                           "self.dim()>0")
    if n == 0:  # a 0-d tensor: one entry at no coordinates
        return make(zeros((0, 1), dtype=dt.int64, device=x.device), x.reshape(1), (), True)
    mask = x.detach() != 0
    if n < x.ndim:
        mask = mask.reshape(tuple(x.shape[:n]) + (-1,)).any(-1)
    ind = mask.nonzero().t()
    values = x[tuple(ind[d] for d in range(n))]
    return make(ind.contiguous(), values, tuple(x.shape), True)


# -- the printed form -----------------------------------------------------------------


def sparse_repr(s: SparseTensor) -> str:
    """PyTorch's form: `tensor(indices=tensor([[...]]),\\n       values=tensor([...]),\\n
    size=(3, 3), nnz=4, layout=torch.sparse_coo)`."""
    indent = len("tensor(")
    suffixes = []
    if s.device.type != "cpu":
        suffixes.append(f"device='{s.device}'")
    suffixes.append(f"size={tuple(s._sparse_size)}")
    suffixes.append(f"nnz={s._nnz()}")
    if s.dtype not in (dt.get_default_dtype(), dt.int64, dt.bool_):
        suffixes.append(f"dtype={s.dtype!r}")
    parts = []
    for name, part in (("indices", s._ind), ("values", s._vals)):
        prefix = f"{name}=tensor("
        body = tensor_body(part.detach(), indent + len(prefix))
        if not part.numel():
            body += f", size={tuple(part.shape)}"
        parts.append(prefix + body + ")")
    text = parts[0] + ",\n" + " " * indent + parts[1]
    suffixes.append(f"layout={sparse_coo!r}")
    if s.grad_fn is not None:
        suffixes.append(f"grad_fn=<{s.grad_fn.name()}>")
    elif s.requires_grad:
        suffixes.append("requires_grad=True")
    return add_suffixes("tensor(" + text, suffixes, indent, force_newline=True)


# -- what a dense tensor answers to the sparse API --------------------------------------


def _strided_error(name: str, what: str = "sparse coordinate") -> Any:
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"{name} expected {what} tensor layout but got Strided")
    method.__name__ = name
    return method


def _dense_nnz(self: Tensor) -> int:
    raise NotImplementedError(f"Could not run 'aten::_nnz' with arguments from the "
                              f"'{self.device.type.upper()}' backend.")


def _dense_to_dense(self: Tensor, dtype: Any = None, *, masked_grad: Any = None) -> Tensor:
    return self if dtype is None else self.to(dtype)


for _name in ("is_coalesced", "indices", "_indices", "coalesce"):
    setattr(Tensor, _name, _strided_error(_name))
for _name in ("values", "_values"):
    setattr(Tensor, _name, _strided_error(_name, "sparse"))
def _sparse_mask(self: Tensor, mask: Tensor) -> SparseTensor:
    """The entries of this dense tensor where the sparse `mask` has entries: a sparse
    tensor of `mask`'s indices (differentiable in this tensor)."""
    if not mask.is_sparse:
        raise RuntimeError("sparse_mask expects mask to be sparse coordinate tensor layout "
                           "but got Strided")
    if tuple(mask.shape) != tuple(self.shape):
        raise RuntimeError("sparse_mask(): operands have incompatible sizes; self has size "
                           f"{list(self.shape)} but mask has size {list(mask.shape)}")
    ind = mask._ind
    values = self[tuple(ind[d] for d in range(mask.sparse_dim()))]
    return make(ind, values, mask._sparse_size, mask._coalesced)


Tensor.sparse_mask = _sparse_mask
Tensor.is_sparse_csr = False
Tensor._nnz = _dense_nnz
Tensor.sparse_dim = lambda self: 0
Tensor.dense_dim = lambda self: self.ndim
Tensor.to_dense = _dense_to_dense
Tensor.to_sparse_coo = dense_to_sparse  # (`to_sparse`: ember.core.sparse_compressed_ops)
SparseTensor.to_sparse_coo = SparseTensor.to_sparse
