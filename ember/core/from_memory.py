"""Tensors over memory that already exists: `asarray` (any array-like, sharing memory when
it can), `frombuffer` (a Python buffer) and `from_file` (a memory-mapped file).

Each shares the memory it is given as PyTorch does, through a NumPy array over it
(`from_numpy`), so writes through the tensor reach the buffer or the file.
"""

from __future__ import annotations

import errno
import os
import warnings
from typing import Any

import numpy as np

from ember.core import dtype as dt
from ember.core import storage
from ember.core.backend import from_numpy_dtype, numpy_dtype
from ember.core.creation import from_numpy, tensor
from ember.core.declare import composite
from ember.core.errors import warn_once
from ember.core.host import check_numpy_array, dtype_arg
from ember.core.placement import DeviceLike, resolve
from ember.core.tensor import Tensor

__all__ = ["asarray", "frombuffer", "from_file"]



def _alias_error(source: dt.dtype, target: dt.dtype) -> ValueError:
    return ValueError(f"can't alias tensor with dtype '{storage.scalar_type_name(source)}' "
                      f"into dtype '{storage.scalar_type_name(target)}'.")


def _converted(t: Tensor, d: dt.dtype | None, device: DeviceLike, copy: bool | None
               ) -> Tensor:
    """`t` itself where nothing changes and no copy is asked for, else its converted copy."""
    same_dtype = d is None or d is t.dtype
    same_device = device is None or resolve(device)[0] == t.device
    if copy is False and not same_dtype:
        raise _alias_error(t.dtype, d)
    if copy is False and not same_device:
        raise ValueError(f"can't alias tensor from device '{t.device}' to '{device}'.")
    if copy:
        return t.to(dtype=d or t.dtype, device=device or t.device, copy=True)
    return t if same_dtype and same_device else t.to(dtype=d or t.dtype,
                                                     device=device or t.device)


@composite(complex=True, variants="function")
def asarray(obj: Any, *, dtype: Any = None, device: DeviceLike = None,
            copy: bool | None = None, requires_grad: bool | None = None) -> Tensor:
    """`obj` (a tensor, storage, NumPy array, DLPack capsule or object, buffer, sequence or
    number) as a tensor, sharing its memory when `copy` is not True and neither `dtype` nor
    `device` asks for a conversion (`copy=False` raises where one is needed).
    `requires_grad` defaults to `obj.requires_grad` for a tensor, else False."""
    d = dtype_arg(dtype, "asarray")
    if isinstance(obj, Tensor):
        if requires_grad is None and obj.requires_grad:
            warnings.warn("torch.asarray: unspecified requires_grad now defaults to "
                          "obj.requires_grad instead of False. Pass requires_grad=False "
                          "explicitly to get the old behavior and silence this warning.",
                          UserWarning, stacklevel=2)
        out = _converted(obj, d, device, copy)
        wanted = obj.requires_grad if requires_grad is None else requires_grad
        if out.requires_grad != wanted:
            out = out.detach().requires_grad_(wanted)
        return out
    from ember.core.storage import TypedStorage, UntypedStorage

    if isinstance(obj, TypedStorage):  # its memory, shared: an untyped one's bytes as `dtype`
        flat = obj._flat()
        if isinstance(obj, UntypedStorage) and d is not None and d is not flat.dtype:
            flat, d = flat.view(d), None
        out = _converted(flat, d, device, copy)
    elif hasattr(obj, "__dlpack__") and not isinstance(obj, np.ndarray):
        from ember.core.dlpack import from_dlpack

        out = _converted(from_dlpack(obj), d, device, copy)
    elif isinstance(obj, (np.ndarray, np.generic)):
        array = np.asarray(obj)
        check_numpy_array(array)
        want = array.dtype if d is None else numpy_dtype(d)
        if copy is False and want != array.dtype:
            raise _alias_error(from_numpy_dtype(array.dtype), d)
        if copy or want != array.dtype or not array.flags.writeable:
            array = array.astype(want, copy=True)
        out = _converted(from_numpy(array), None, device, copy=None)
    elif isinstance(obj, (bytes, bytearray, memoryview)):
        # PyTorch reads a bare buffer's bytes as the dtype asked for (or the default)
        out = frombuffer(obj, dtype=d or dt.get_default_dtype())
        out = out.clone() if copy else out
        out = _converted(out, None, device, copy=None)
    else:
        if copy is False:
            raise ValueError("can't alias arbitrary sequence into a tensor.")
        out = tensor(obj, dtype=d, device=device)
    return out.requires_grad_(bool(requires_grad)) if requires_grad else out


@composite(variants="function")
def frombuffer(buffer: Any, *, dtype: Any, count: int = -1, offset: int = 0,
               requires_grad: bool = False) -> Tensor:
    """A 1-D tensor over an object that exposes the buffer protocol (`bytearray`, `array`,
    `mmap` ...), sharing its memory: `count` elements of `dtype` from byte `offset`
    (all that follow where `count` is -1)."""
    d = dtype_arg(dtype, "frombuffer")
    try:
        view = memoryview(buffer).cast("B")
    except TypeError:  # PyTorch's words for an object without the buffer protocol
        raise ValueError("object does not implement Python buffer protocol.") from None
    length, size = view.nbytes, np.dtype(numpy_dtype(d)).itemsize
    if length == 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if not 0 <= offset < length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({length} bytes) minus 1")
    if count < 0:
        if (length - offset) % size:
            raise ValueError(f"buffer length ({length - offset} bytes) after offset "
                             f"({offset} bytes) must be a multiple of element size ({size})")
        count = (length - offset) // size
    elif offset + count * size > length:
        raise ValueError(f"requested buffer length ({count} * {size} bytes) after offset "
                         f"({offset} bytes) must not be greater than actual buffer length "
                         f"({length} bytes)")
    if view.readonly:
        warn_once("The given buffer is not writable, and PyTorch does not support "
                  "non-writable tensors. This means you can write to the underlying "
                  "(supposedly non-writable) buffer using the tensor. You may want to copy "
                  "the buffer to protect its data or make it writable before converting "
                  "it to a tensor. This type of warning will be suppressed for the rest "
                  "of this program.", UserWarning, stacklevel=2)
    array = np.frombuffer(view, dtype=numpy_dtype(d), count=count, offset=offset)
    if not array.flags.writeable:
        # immutable bytes: nothing else can write them, so a writable copy reads the same
        array = array.copy()
    out = from_numpy(array)
    return out.requires_grad_() if requires_grad else out


@composite(variants="function")
def from_file(filename: str | os.PathLike, shared: bool | None = None, size: int = 0, *,
              dtype: Any = None, device: DeviceLike = None, requires_grad: bool = False,
              pin_memory: bool = False) -> Tensor:
    """A 1-D tensor of `size` elements of `dtype` memory-mapped from `filename`. With
    `shared=True` writes reach the file; otherwise the mapping is private."""
    d = dtype_arg(dtype, "from_file") or dt.get_default_dtype()
    path = os.fspath(filename)
    mode = "r+" if shared else "c"
    nbytes = size * np.dtype(numpy_dtype(d)).itemsize
    try:
        have = os.path.getsize(path)
    except OSError as err:
        access = "read-write" if shared else "read-only"
        code = err.errno or errno.ENOENT
        raise RuntimeError(f"unable to open file <{path}> in {access} mode: "
                           f"{os.strerror(code)} ({code})") from None
    if have < nbytes:
        raise RuntimeError(f"file <{path}> size <{have}> is smaller than the required "
                           f"mapping size <{nbytes}>")
    if size == 0:
        out = tensor([], dtype=d)
    else:
        out = from_numpy(np.memmap(path, dtype=numpy_dtype(d), mode=mode, shape=(size,)))
    if device is not None:
        out = out.to(device)
    return out.requires_grad_() if requires_grad else out
