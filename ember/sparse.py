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
from ember.core.creation import empty
from ember.core.sparse_coo import SparseTensor, sparse_coo_tensor
from ember.core.sparse_ops import addmm, log_softmax, mm, softmax, spmm
from ember.core.sparse_ops import sparse_sum as sum  # noqa: A001 - PyTorch's name
from ember.core.tensor import Size, Tensor

__all__ = ["mm", "sum", "softmax", "log_softmax", "addmm", "spmm",
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
