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
from ember.core.errors import warn_once


@dt.printed_in_api()
class layout:  # noqa: N801 - PyTorch's name
    """How a tensor's elements are laid out in memory (`ember.strided`, the only one)."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"{dt.API_NAME}.{self._name}"


strided = layout("strided")


@dt.printed_in_api(".storage")
class TypedStorage:
    """The elements of the memory a tensor shares with its views, as a typed 1-D array:
    `size()`, `dtype`, `device`, `data_ptr()`, `tolist()`, `nbytes()`, indexing."""

    _legacy_dtype: dt.dtype | None = None  # a legacy class's (FloatStorage ...)

    def __new__(cls, *args: Any, **kwargs: Any) -> TypedStorage:
        # `ember.FloatStorage(...)` makes a TypedStorage of float32, as PyTorch's does
        legacy = cls._legacy_dtype
        if legacy is not None:
            kwargs["dtype"] = legacy
            cls = TypedStorage
        out = object.__new__(cls)
        if legacy is not None:
            out.__init__(*args, **kwargs)
        return out

    def __init__(self, *args: Any, dtype: Any = None, device: Any = None) -> None:
        """`TypedStorage()` (empty), `TypedStorage(size)` (uninitialised) or
        `TypedStorage(sequence)`, of `dtype` (the default dtype if not given)."""
        from ember.core.creation import empty, tensor  # (creation imports the Tensor)

        d = dtype if dtype is not None else dt.get_default_dtype()
        if len(args) > 1:
            raise RuntimeError(f"{type(self).__name__}(): Too many positional arguments")
        if not args:
            owner = empty(0, dtype=d, device=device)
        elif isinstance(args[0], int) and not isinstance(args[0], bool):
            owner = empty(args[0], dtype=d, device=device)
        else:
            owner = tensor(list(args[0]), dtype=d, device=device).reshape(-1)
        self._owner = owner

    @classmethod
    def _of(cls, owner: Any) -> TypedStorage:
        """The storage of the tensor `owner` (the one owning the memory)."""
        out = object.__new__(cls)
        out._owner = owner
        return out

    def _flat(self) -> Any:
        return self._owner.detach().reshape(-1)

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    @property
    def is_sparse(self) -> bool:
        return False

    def is_shared(self) -> bool:
        return False

    def is_pinned(self, device: Any = "cuda") -> bool:
        return False

    @property
    def _untyped_storage(self) -> UntypedStorage:
        return UntypedStorage._of(self._owner)

    def untyped(self) -> UntypedStorage:
        return UntypedStorage._of(self._owner)

    def _check_index(self, i: Any) -> None:
        if isinstance(i, int) and not -self.size() <= i < self.size():
            raise IndexError(f"index {i} out of range for storage of size {self.size()}")

    def __setitem__(self, i: Any, value: Any) -> None:
        self._check_index(i)
        self._owner.detach().view(-1)[i] = value

    def fill_(self, value: Any) -> TypedStorage:
        self._owner.detach().fill_(value)
        return self

    def copy_(self, source: Any, non_blocking: bool | None = None) -> TypedStorage:
        src = source._flat() if isinstance(source, TypedStorage) else source
        self._owner.detach().view(-1).copy_(src.reshape(-1))
        return self

    def clone(self) -> TypedStorage:
        return type(self)._of(self._flat().clone())

    def _to(self, d: dt.dtype) -> TypedStorage:
        if d is self.dtype:
            return self
        return TypedStorage._of(self._flat().to(d))

    def type(self, dtype: Any = None, non_blocking: bool = False) -> Any:
        if dtype is None:
            return f"{dt.API_NAME}.{scalar_type_name(self.dtype)}Storage"
        target = getattr(dtype, "_legacy_dtype", None)
        if target is None:
            raise TypeError(f"invalid storage type: {dtype!r}")
        return self._to(target)

    def double(self) -> TypedStorage:
        return self._to(dt.float64)

    def float(self) -> TypedStorage:
        return self._to(dt.float32)

    def half(self) -> TypedStorage:
        return self._to(dt.float16)

    def bfloat16(self) -> TypedStorage:
        return self._to(dt.bfloat16)

    def long(self) -> TypedStorage:
        return self._to(dt.int64)

    def int(self) -> TypedStorage:
        return self._to(dt.int32)

    def short(self) -> TypedStorage:
        return self._to(dt.int16)

    def char(self) -> TypedStorage:
        return self._to(dt.int8)

    def byte(self) -> TypedStorage:
        return self._to(dt.uint8)

    def bool(self) -> TypedStorage:
        return self._to(dt.bool_)

    def cpu(self) -> TypedStorage:
        return self

    def resize_(self, size: int) -> None:
        """Grow or shrink to `size` elements, keeping the first ones (the tensors over
        the old memory keep it)."""
        old = self._flat()
        keep = min(size, old.numel())
        from ember.core.creation import empty

        new = empty(size, dtype=self.dtype, device=self.device)
        new[:keep] = old[:keep]
        self._owner = new

    @classmethod
    def from_buffer(cls, buffer: Any, byte_order: str = "native", count: int = -1,
                    offset: int = 0, *, dtype: Any = None) -> TypedStorage:
        """A storage of a copy of `buffer`'s bytes read as `dtype`'s elements."""
        import numpy as np

        from ember.core.creation import tensor

        d = cls._legacy_dtype or dtype or dt.get_default_dtype()
        order = {"native": "=", "little": "<", "big": ">"}[byte_order]
        arr = np.frombuffer(buffer, dtype=np.dtype(d.name).newbyteorder(order), count=count,
                            offset=offset)
        return TypedStorage._of(tensor(arr.astype(np.dtype(d.name)), dtype=d))

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
        self._check_index(i)
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
        return (f"{values}\n[{dt.API_NAME}.storage.{type(self).__name__}(dtype={self.dtype}, "
                f"device={self.device}) of size {self.size()}]")


@dt.printed_in_api(".storage")
class UntypedStorage(TypedStorage):
    """The same memory counted in bytes: `size()` and `nbytes()` are byte counts, its
    elements (`tolist()`, indexing, its printed form) the bytes."""

    def __init__(self, *args: Any, device: Any = None) -> None:
        """`UntypedStorage()` or `UntypedStorage(nbytes)` (uninitialised bytes)."""
        super().__init__(*args, dtype=dt.uint8, device=device)

    def _flat(self) -> Any:
        from ember.core.ops.shape import view_dtype  # (ops import this module's users)

        flat = super()._flat()
        return view_dtype(flat if flat.dtype is not dt.bool_ else flat.to(dt.uint8),
                          dt.uint8)

    def size(self) -> int:
        return self.nbytes()

    def nbytes(self) -> int:
        return self._owner.numel() * self._owner.element_size()

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):  # a byte range: a storage over the same memory
            return UntypedStorage._of(self._flat()[i])
        return super().__getitem__(i)

    @classmethod
    def from_file(cls, filename: str, shared: bool = False, nbytes: int = 0
                  ) -> UntypedStorage:
        """The first `nbytes` bytes of a file (all of it for 0), mapped into memory:
        written through to the file when `shared`, private copy-on-write otherwise (as
        safetensors reads checkpoints)."""
        import os

        import numpy as np

        from ember.core.creation import from_numpy

        size = nbytes or os.path.getsize(filename)
        if size == 0:
            return cls._of(from_numpy(np.empty(0, np.uint8)))
        data = np.memmap(filename, dtype=np.uint8, mode="r+" if shared else "c",
                         shape=(size,))
        return cls._of(from_numpy(data))

    def __repr__(self) -> str:
        values = "\n".join(f" {v}" for v in self.tolist())
        return (f"{values}\n[{dt.API_NAME}.storage.UntypedStorage(device={self.device}) of size "
                f"{self.size()}]")


class _LegacyStorageType(type):
    """`isinstance(t.storage(), ember.FloatStorage)`: a typed storage of the class's dtype
    is an instance of it, as in PyTorch (whose `storage()` is a TypedStorage)."""

    def __instancecheck__(cls, instance: Any) -> bool:
        if type.__instancecheck__(cls, instance):
            return True
        return type(instance) is TypedStorage and \
            scalar_type_name(instance.dtype) + "Storage" == cls.__name__


_TYPED: dict[str, type] = {}


_SCALAR_TYPES = {"float32": "Float", "float64": "Double", "float16": "Half",
                 "bfloat16": "BFloat16", "int64": "Long", "int32": "Int", "int16": "Short",
                 "int8": "Char", "uint8": "Byte", "bool": "Bool"}


def warn_typed_storage_removal(stacklevel: int = 2) -> None:
    """PyTorch's deprecation warning for typed storages, given once a process."""
    warn_once("TypedStorage is deprecated. It will be removed in the future and UntypedStorage "
              "will be the only storage class. This should only matter to you if you are "
              "using storages directly.  To access UntypedStorage directly, use "
              "tensor.untyped_storage() instead of tensor.storage()", UserWarning,
              stacklevel=stacklevel + 1)


def scalar_type_name(d: dt.dtype) -> str:
    """PyTorch's C++ name of a dtype (`Float`, `Long` ...), as its messages print it."""
    return _SCALAR_TYPES.get(d.name, d.name.capitalize())


_CPP_TYPES = {"float32": "float", "float64": "double", "float16": "c10::Half",
              "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int",
              "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
              "bool": "bool", "complex64": "c10::complex<float>",
              "complex128": "c10::complex<double>", "uint16": "short unsigned int",
              "uint32": "unsigned int", "uint64": "long unsigned int"}


def cpp_type_name(d: dt.dtype) -> str:
    """The C++ type of a dtype (`float`, `long int` ...), as some of PyTorch's messages
    print it."""
    return _CPP_TYPES.get(d.name, d.name)


def storage_type(d: dt.dtype) -> type:
    """PyTorch's legacy storage class of a dtype (`FloatStorage` ...): a TypedStorage."""
    name = scalar_type_name(d) + "Storage"
    if name not in _TYPED:
        _TYPED[name] = _LegacyStorageType(name, (TypedStorage,), {"__module__": "ember",
                                                                  "_legacy_dtype": d})
    return _TYPED[name]
