"""PyTorch's legacy tensor types: `ember.FloatTensor`, `ember.LongTensor`, ...

Each is a constructor, not a tensor class (as in PyTorch, `type(ember.FloatTensor(2))` is
`ember.Tensor`): `FloatTensor(2, 3)` is an uninitialized tensor of that size,
`FloatTensor([1, 2])` one of that data, `FloatTensor(t)` the tensor `t` itself when it is
already of that type. `isinstance(t, ember.FloatTensor)` is true for a CPU float32
tensor, and `t.type(ember.LongTensor)` converts.
"""

from __future__ import annotations

import importlib
import numbers
from typing import Any

from ember.core import dtype as dt
from ember.core.creation import empty, tensor
from ember.core.device import device as Device
from ember.core.errors import legacy_new_keywords, warn_once
from ember.core.placement import set_default_device
from ember.core.storage import (
    TypedStorage,
    UntypedStorage,
    cpp_type_name,
    scalar_type_name,
    strided,
)
from ember.core.tensor import Size, Tensor


class _LegacyTensorType(type):
    """The metaclass that makes `isinstance(t, ember.FloatTensor)` a dtype-and-device test."""

    dtype: dt.dtype
    device_type: str = "cpu"

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype and \
            obj.device.type == cls.device_type and not obj.is_sparse

    def __repr__(cls) -> str:
        return f"<class '{dt.API_NAME}.{cls._prefix()}{cls.__name__}'>"

    def _prefix(cls) -> str:
        return "" if cls.device_type == "cpu" else f"{cls.device_type}."


class _LegacyTensor(metaclass=_LegacyTensorType):
    dtype: dt.dtype

    is_sparse = False
    layout = strided

    def __new__(cls, *args: Any, device: Any = None, **kwargs: Any  # type: ignore[misc]
                ) -> Tensor:
        if kwargs:
            raise legacy_new_keywords(args, {"device": device, **kwargs} if device is not None
                                      else kwargs)
        kind = cls.device_type
        if device is not None and Device(device).type != kind:
            raise RuntimeError(f"legacy constructor expects device type: {kind} but device "
                               f"type: {Device(device).type} was passed")
        if len(args) == 1 and isinstance(args[0], Tensor):
            t = args[0]
            if not isinstance(t, cls):
                raise _options_mismatch(cls.dtype, Device(kind), t)
            return t
        try:
            return _new(args, cls.dtype, kind if device is None else device)
        except AssertionError as err:  # `Torch not compiled with CUDA enabled`
            if kind == "cpu" or not str(err).startswith("Torch not compiled with"):
                raise
            # PyTorch's words for the type itself, ember's reason kept as the note
            refusal = TypeError(f"type {dt.API_NAME}.{cls._prefix()}{cls.__name__} not "
                                f"available. {err}.")
            for note in getattr(err, "__notes__", ()):
                refusal.add_note(note)
            raise refusal from None


def _new(args: tuple, d: dt.dtype, device: Any) -> Tensor:
    """The legacy constructors' forms: no argument (an empty tensor), sizes (ints or one
    Size: uninitialized), or one sequence of data."""
    if not args:
        return empty(0, dtype=d, device=device)
    if len(args) == 1 and isinstance(args[0], Size):
        return empty(tuple(args[0]), dtype=d, device=device)
    if len(args) == 1 and isinstance(args[0], numbers.Integral) and \
            not isinstance(args[0], bool):
        return empty(args[0], dtype=d, device=device)
    if len(args) == 1 and isinstance(args[0], TypedStorage):
        return _from_storage(args[0], d, device)
    if len(args) == 1 and isinstance(args[0], str):
        raise TypeError(f"new(): invalid data type '{type(args[0]).__name__}'")
    if len(args) == 1 and (isinstance(args[0], dict) or
                           not hasattr(type(args[0]), "__getitem__")) and \
            not isinstance(args[0], TypedStorage | UntypedStorage) and \
            not hasattr(args[0], "__array__"):  # PySequence_Check's test
        raise TypeError(f"new(): data must be a sequence (got {type(args[0]).__name__})")
    if len(args) == 1:
        return tensor(args[0], dtype=d, device=device)
    # sizes: ints (a bool counts), or one-element integer tensors (Tacotron 2's
    # `torch.LongTensor(len(batch), max_input_len)` with `max_input_len = lengths[0]`)
    for pos, a in enumerate(args, 1):
        if not _size_like(a):
            raise TypeError(f"new(): argument 'size' failed to unpack the object at pos {pos} "
                            f'with error "type must be tuple of ints,but got '
                            f'{type(a).__name__}"')
    return empty(*(int(a) for a in args), dtype=d, device=device)


def _from_storage(storage: TypedStorage, d: dt.dtype, device: Any) -> Tensor:
    """`FloatTensor(storage)`: a 1-D tensor over all of a storage of that dtype (or the
    bytes of an untyped one), sharing its memory."""
    flat = storage._owner.detach().reshape(-1)
    if isinstance(storage, UntypedStorage):
        return flat.view(d)
    if storage.dtype is not d:
        raise RuntimeError(f"Expected a Storage of type {scalar_type_name(d)} or an "
                           f"UntypedStorage, but got type {scalar_type_name(storage.dtype)} "
                           "for argument 1 'storage'")
    return flat


def _size_like(a: Any) -> bool:
    """Whether PyTorch's legacy constructors take `a` as a size: an int, or a tensor of
    one integer element."""
    if isinstance(a, Tensor):
        return a.numel() == 1 and not a.dtype.is_floating_point and not a.dtype.is_complex
    return isinstance(a, numbers.Integral)


def _options(d: dt.dtype, device: Device) -> str:
    """PyTorch's print of a c10::TensorOptions, as its legacy constructors' errors show it."""
    return (f"TensorOptions(dtype={cpp_type_name(d)}, device={device}, layout=Strided, "
            "requires_grad=false (default), pinned_memory=false (default), "
            "memory_format=(nullopt))")


def _options_mismatch(d: dt.dtype, device: Device, t: Tensor) -> TypeError:
    """PyTorch's refusal of a legacy constructor given a tensor of another dtype or
    device: both TensorOptions, printed as C++ prints them."""
    return TypeError(f"expected {_options(d, device)} (got {_options(t.dtype, t.device)})")


def _tensor_new(self: Tensor, *args: Any, device: Any = None, **kwargs: Any) -> Tensor:
    """`x.new(...)`, the legacy constructor of `x`'s dtype and device (old programs'
    `weight.new(n, h).zero_()`): `new(*sizes)` uninitialized, `new(data)`, `new(tensor)`
    (sharing its memory, of the same dtype), `new()` empty."""
    if kwargs:
        raise legacy_new_keywords(args, {"device": device, **kwargs} if device is not None
                                  else kwargs)
    target = self.device if device is None else Device(device)
    if len(args) == 1 and isinstance(args[0], Tensor):
        t = args[0]
        if t.dtype is not self.dtype or t.device != target:
            raise _options_mismatch(self.dtype, target, t)
        return t.detach()
    return _new(args, self.dtype, target)


Tensor.new = _tensor_new


def _legacy(name: str, d: dt.dtype, device_type: str = "cpu") -> type:
    doc = (f"PyTorch's legacy constructor of {device_type} {d} tensors: `{name}(*sizes)` "
           f"(uninitialized), `{name}(data)`, or `{name}(tensor)`.")
    submodule = "" if device_type == "cpu" else f".{device_type}"
    return dt.printed_in_api(submodule)(_LegacyTensorType(
        name, (_LegacyTensor,), {"dtype": d, "device_type": device_type, "__doc__": doc,
                                 "is_cuda": device_type == "cuda"}))


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


# `torch.cuda.FloatTensor` ...: old programs' `Tensor = torch.cuda.FloatTensor if cuda
# else torch.FloatTensor`; ember.cuda exports them
CUDA_TYPES = {name: _legacy(name, dt.from_name(d), "cuda")
              for d, name in dt.LEGACY_TYPE_NAMES.items()}


def set_default_tensor_type(t: type | str) -> None:
    """Deprecated: make a floating legacy type's dtype (and, for `torch.cuda.*Tensor`, its
    device) the default: `set_default_tensor_type(torch.DoubleTensor)` or by its name
    (`'torch.DoubleTensor'`)."""
    if isinstance(t, str):  # PyTorch's _import_dotted_name: import the first, then getattr
        first, *rest = t.split(".")
        if first in ("torch", dt.API_NAME, "ember"):
            if rest[:1] == ["cuda"]:
                obj, rest, where = CUDA_TYPES, rest[1:], f"{first}.cuda"
            else:
                obj, where = globals(), first
            name = rest[0] if rest else ""
            if len(rest) != 1 or not isinstance(obj.get(name), _LegacyTensorType):
                raise AttributeError(f"module '{where}' has no attribute '{name}'")
            t = obj[name]
        else:
            obj = importlib.import_module(first)
            for part in rest:
                obj = getattr(obj, part)
            t = obj
    # (PyTorch's TORCH_WARN_ONCE, before it checks the type)
    warn_once("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
              "torch.set_default_dtype() and torch.set_default_device() as alternatives.")
    if not isinstance(t, _LegacyTensorType):
        raise TypeError("invalid type object: only floating-point types are supported as the "
                        "default type")
    if not t.dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    if t.device_type != "cpu":  # refused, changing nothing, where that device is missing
        try:
            empty(0, dtype=t.dtype, device=t.device_type)
        except AssertionError as err:  # `Torch not compiled with CUDA enabled`
            raise TypeError(f"type {dt.API_NAME}.{t._prefix()}{t.__name__} not available. "
                            f"{err}.") from None
    dt.set_default_dtype(t.dtype)
    if t.device_type != "cpu":
        set_default_device(t.device_type)
