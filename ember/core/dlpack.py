"""DLPack exchange, zero-copy: `ember.from_dlpack`, `ember.utils.dlpack.to_dlpack`, and the
`Tensor.__dlpack__` / `__dlpack_device__` protocol.

A tensor exports its buffer's own DLPack (NumPy's for the CPU, CuPy's for CUDA), so the
consumer shares ember's memory. Imports go by the producer's device: host memory through
NumPy's `from_dlpack` into a CPU tensor; a CUDA device through the CUDA backend
(`Backend.from_dlpack`: CuPy's), found by the plugin manager like every backend.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from ember.core import plugins
from ember.core.backend import from_numpy_dtype
from ember.core.device import device as Device

# DLDeviceType codes (dlpack.h)
_CPU, _CUDA, _CUDA_HOST, _CUDA_MANAGED = 1, 2, 3, 13
_BACKEND_OF = {_CUDA: "cuda", _CUDA_MANAGED: "cuda"}


def tensor_dlpack(tensor: Any, *, stream: Any = None, max_version: Any = None,
                  dl_device: Any = None, copy: Any = None) -> Any:
    """`Tensor.__dlpack__`: a DLPack capsule sharing the tensor's memory."""
    if tensor.requires_grad:
        raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
    buffer = tensor._data
    export = getattr(buffer, "__dlpack__", None)
    if export is None:
        raise BufferError(f"the {tensor.device.type} backend's buffers do not support DLPack; "
                          "move the tensor to the CPU first (tensor.cpu())")
    kwargs: dict[str, Any] = {}
    if stream is not None:
        kwargs["stream"] = stream
    if max_version is not None:
        kwargs["max_version"] = max_version
    if dl_device is not None:
        kwargs["dl_device"] = dl_device
    if copy is not None:
        kwargs["copy"] = copy
    try:
        return export(**kwargs)
    except BufferError as err:
        raise BufferError(f"can't export a {tensor.dtype} tensor through DLPack: {err}") \
            from None


def tensor_dlpack_device(tensor: Any) -> tuple[int, int]:
    """`Tensor.__dlpack_device__`: (DLDeviceType, index)."""
    buffer = tensor._data
    if hasattr(buffer, "__dlpack_device__"):
        kind, index = buffer.__dlpack_device__()
        return int(kind), int(index)
    if tensor.device.type == "cpu":
        return _CPU, 0
    raise BufferError(f"the {tensor.device.type} backend's buffers do not support DLPack")


def from_dlpack(ext: Any) -> Any:
    """A tensor sharing the memory of `ext`: any object with `__dlpack__` (a NumPy or CuPy
    array, a PyTorch tensor ...) or a DLPack capsule (from `to_dlpack`)."""
    from ember.core.tensor import Tensor

    if isinstance(ext, Tensor):
        return ext
    if _is_capsule(ext):
        ext = _Capsule(ext)
    if not hasattr(ext, "__dlpack__"):
        raise TypeError(f"from_dlpack(): expected an object with __dlpack__ or a DLPack "
                        f"capsule, got {type(ext).__name__}")
    kind, index = ext.__dlpack_device__()
    if kind in (_CPU, _CUDA_HOST):
        try:
            array = np.from_dlpack(ext)
        except (BufferError, RuntimeError, TypeError) as err:
            raise BufferError(f"from_dlpack(): can't import from host memory: {err}") from None
        backend = plugins.get_backend("cpu")
        return Tensor._make(array, from_numpy_dtype(array.dtype), Device("cpu"), backend)
    name = _BACKEND_OF.get(int(kind))
    if name is None:
        raise BufferError(f"from_dlpack(): DLPack device type {kind} (index {index}) has no "
                          "ember backend; ember imports CPU and CUDA memory")
    dev = Device(name, int(index))
    backend = plugins.get_backend(name)
    reason = plugins.safe_unavailable_reason(backend)
    if reason is not None:
        raise RuntimeError(f"from_dlpack(): device {str(dev)!r} is not available: {reason}")
    buffer = backend.from_dlpack(ext)
    return Tensor._make(buffer, from_numpy_dtype(buffer.dtype), dev, backend)


def to_dlpack(tensor: Any) -> Any:
    """A DLPack capsule (the unversioned "dltensor" kind) sharing the tensor's memory."""
    return tensor_dlpack(tensor)


# -- capsules -------------------------------------------------------------------------


def _is_capsule(obj: Any) -> bool:
    return type(obj).__name__ == "PyCapsule"


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DLTensorHead(ctypes.Structure):
    # the start of DLTensor: void* data, then DLDevice (what the device query needs)
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice)]


class _Capsule:
    """A DLPack capsule given the `__dlpack__` protocol, so that consumers take it. Its
    device is read from the DLTensor the capsule holds (DLManagedTensor starts with it)."""

    def __init__(self, capsule: Any) -> None:
        get = ctypes.pythonapi.PyCapsule_GetPointer
        get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
        is_valid = ctypes.pythonapi.PyCapsule_IsValid
        is_valid.restype, is_valid.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]
        if not is_valid(capsule, b"dltensor"):
            raise RuntimeError("from_dlpack(): the capsule is not a DLPack tensor, or was "
                               "consumed already (a DLPack capsule can be used only once)")
        head = _DLTensorHead.from_address(get(capsule, b"dltensor"))
        self.device = (int(head.device.device_type), int(head.device.device_id))
        self.capsule = capsule

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self.capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device
