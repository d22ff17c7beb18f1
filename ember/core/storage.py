"""What `Tensor.storage()`, `untyped_storage()` and `layout` return: small objects with
PyTorch's accessors, over the memory a tensor shares with its views.

ember's views keep the tensor they view (`Tensor._base`, the owner of the memory), so a
tensor's storage is its base's elements in row-major order (itself, when it is not a
view). That is PyTorch's storage for every tensor made by a factory or an op and the
views of it.
"""

from __future__ import annotations

from typing import Any

from ember.core import dtype as dt


class layout:  # noqa: N801 - PyTorch's name
    """How a tensor's elements are laid out in memory (`ember.strided`, the only one)."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"{dt.API_NAME}.{self._name}"


strided = layout("strided")


class memory_format:  # noqa: N801 - PyTorch's name
    """The order of a tensor's dimensions in memory that `to(memory_format=...)`,
    `contiguous(memory_format=...)` and `Module.to(memory_format=...)` ask for. ember's
    buffers are always row-major (`contiguous_format`): another format is accepted as a
    hint that changes no value (PyTorch's results do not depend on it either)."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"{dt.API_NAME}.{self._name}"

    def __reduce__(self) -> str:
        return self._name  # pickled by name: the module-level singleton


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")

# the dimension orders, innermost first, whose strides a format's contiguity checks
_DIM_ORDER = {channels_last: (4, (1, 3, 2, 0)), channels_last_3d: (5, (1, 4, 3, 2, 0))}


def memory_order(t: Any) -> tuple[int, ...] | None:
    """The dims of a non-contiguous but dense, non-overlapping tensor from the outermost
    in memory to the innermost (a transposed one's), or None when it is contiguous or has
    gaps. PyTorch's `empty_like` keeps such a tensor's strides."""
    if t.numel() == 0 or t.is_contiguous():
        return None
    shape, strides = tuple(t.shape), t.stride()
    dims = sorted((d for d in range(len(shape)) if shape[d] != 1), key=lambda d: -strides[d])
    expected = 1
    for d in reversed(dims):
        if strides[d] != expected:
            return None
        expected *= shape[d]
    return tuple(d for d in range(len(shape)) if shape[d] == 1) + tuple(dims)


def like_layout(t: Any, empty: Any) -> Any:
    """`empty(shape)` laid out as PyTorch's `empty_like(t)`: with `t`'s strides when `t` is
    dense but not contiguous (a permuted view of a row-major buffer), else row-major. A
    fill of it (`uniform_`, `bernoulli_`) then draws in PyTorch's order."""
    order = memory_order(t)
    if order is None:
        return empty(tuple(t.shape))
    inverse = [0] * len(order)
    for i, d in enumerate(order):
        inverse[d] = i
    return empty(tuple(t.shape[d] for d in order)).permute(*inverse)


def layout_as(t: Any, fmt: Any, empty: Any) -> Any:
    """`empty(shape)` (a new row-major tensor) laid out as PyTorch's
    `*_like(t, memory_format=fmt)` lays its result out: `preserve_format` (the default) as
    `like_layout`, `contiguous_format` row-major, `channels_last` (`_3d`) with the
    channels innermost. A random fill then draws in PyTorch's order."""
    if fmt is None or fmt is preserve_format:
        return like_layout(t, empty)
    if fmt is contiguous_format:
        return empty(tuple(t.shape))
    rank, innermost_first = _DIM_ORDER[fmt]
    if t.dim() != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {fmt._name} format")
    order = innermost_first[::-1]
    inverse = [0] * rank
    for i, d in enumerate(order):
        inverse[d] = i
    return empty(tuple(t.shape[d] for d in order)).permute(*inverse)


def is_row_major_contiguous_as(shape: tuple[int, ...], fmt: Any) -> bool:
    """Whether a dense row-major tensor of `shape` is also contiguous in `fmt` (PyTorch's
    rule: the strides grow along the format's dimension order, size-1 dims ignored)."""
    if fmt is None or fmt is contiguous_format or fmt is preserve_format:
        return True
    if not isinstance(fmt, memory_format):
        raise TypeError(f"is_contiguous(): argument 'memory_format' must be "
                        f"torch.memory_format, not {type(fmt).__name__}")
    rank, order = _DIM_ORDER[fmt]
    if len(shape) != rank:
        return False
    strides = [1] * rank
    for d in range(rank - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    expected = 1
    for d in order:
        if shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= shape[d]
    return True


class TypedStorage:
    """The elements of the memory a tensor shares with its views, as a typed 1-D array:
    `size()`, `dtype`, `device`, `data_ptr()`, `tolist()`, `nbytes()`, indexing."""

    def __init__(self, owner: Any) -> None:
        self._owner = owner  # the tensor owning the memory

    def _flat(self) -> Any:
        return self._owner.detach().reshape(-1)

    @property
    def dtype(self) -> dt.dtype:
        return self._owner.dtype

    @property
    def device(self) -> Any:
        return self._owner.device

    def size(self) -> int:
        return self._owner.numel()

    def __len__(self) -> int:
        return self.size()

    def element_size(self) -> int:
        return self.dtype.itemsize

    def nbytes(self) -> int:
        return self.size() * self.element_size()

    def data_ptr(self) -> int:
        owner = self._owner
        return owner.data_ptr() - owner.storage_offset() * owner.element_size()

    def tolist(self) -> list:
        return self._flat().tolist()

    def __getitem__(self, i: Any) -> Any:
        out = self._flat()[i]
        return out.item() if out.ndim == 0 else out.tolist()

    def __iter__(self):
        return iter(self.tolist())

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, type(self)) and self.data_ptr() == other.data_ptr()

    def __hash__(self) -> int:
        return hash(self.data_ptr())

    def __repr__(self) -> str:
        values = "\n".join(f" {v}" for v in self.tolist())
        return (f"{values}\n[ember.storage.{type(self).__name__}(dtype={self.dtype}, "
                f"device={self.device}) of size {self.size()}]")


class UntypedStorage(TypedStorage):
    """The same memory counted in bytes: `size()` and `nbytes()` are byte counts."""

    def size(self) -> int:
        return self.nbytes()

    def nbytes(self) -> int:
        return self._owner.numel() * self._owner.element_size()


_TYPED: dict[str, type] = {}


_SCALAR_TYPES = {"float32": "Float", "float64": "Double", "float16": "Half",
                 "bfloat16": "BFloat16", "int64": "Long", "int32": "Int", "int16": "Short",
                 "int8": "Char", "uint8": "Byte", "bool": "Bool"}


def scalar_type_name(d: dt.dtype) -> str:
    """PyTorch's C++ name of a dtype (`Float`, `Long` ...), as its messages print it."""
    return _SCALAR_TYPES.get(d.name, d.name.capitalize())


def storage_type(d: dt.dtype) -> type:
    """PyTorch's legacy storage class of a dtype (`FloatStorage` ...): a TypedStorage."""
    name = scalar_type_name(d) + "Storage"
    if name not in _TYPED:
        _TYPED[name] = type(name, (TypedStorage,), {"__module__": "ember"})
    return _TYPED[name]
