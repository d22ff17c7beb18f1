"""DLPack exchange, zero-copy: `ember.from_dlpack`, `ember.utils.dlpack.to_dlpack`, and the
`Tensor.__dlpack__` / `__dlpack_device__` protocol.

A tensor exports its buffer's own DLPack (NumPy's for the CPU, CuPy's for CUDA), so the
consumer shares ember's memory; a bfloat16 CPU tensor exports its bits as uint16 with the
capsule's dtype patched to kDLBfloat (NumPy knows no bfloat16). Imports go by the
producer's device: host memory is read from the capsule's DLTensor here, with ctypes, into
a writable NumPy array that keeps the producer's memory alive (NumPy's own `from_dlpack`
makes legacy capsules read-only and has no bfloat16); a CUDA device goes to the CUDA
backend (`from_dlpack`: CuPy's), found by the plugin manager like every backend.
"""

from __future__ import annotations

import ctypes
import enum
from typing import Any

import numpy as np

from ember.core import plugins
from ember.core.backend import from_numpy_dtype
from ember.core.declare import composite
from ember.core.device import device as Device


class DLDeviceType(enum.IntEnum):
    """DLPack's device codes (dlpack.h's `DLDeviceType`), as `__dlpack_device__` gives
    them."""

    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17


_CPU, _CUDA, _CUDA_HOST, _CUDA_MANAGED = 1, 2, 3, 13
_BACKEND_OF = {_CUDA: "cuda", _CUDA_MANAGED: "cuda"}


def tensor_dlpack(tensor: Any, *, stream: Any = None, max_version: Any = None,
                  dl_device: Any = None, copy: Any = None) -> Any:
    """`Tensor.__dlpack__`: a DLPack capsule sharing the tensor's memory."""
    if tensor.requires_grad:
        raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
    buffer = tensor._data
    bf16 = tensor.dtype.name == "bfloat16" and tensor.device.type == "cpu"
    if bf16:  # NumPy exports no ml_dtypes type: its bits as uint16, then the dtype patched
        buffer = buffer.view(np.uint16)
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
        capsule = export(**kwargs)
    except BufferError as err:
        raise BufferError(f"can't export a {tensor.dtype} tensor through DLPack: {err}") \
            from None
    if bf16:
        _dl_tensor(capsule).dtype_code = _BFLOAT
    return capsule


def tensor_dlpack_device(tensor: Any) -> tuple[int, int]:
    """`Tensor.__dlpack_device__`: (DLDeviceType, index)."""
    buffer = tensor._data
    if hasattr(buffer, "__dlpack_device__"):
        kind, index = buffer.__dlpack_device__()
        known = int(kind) in DLDeviceType._value2member_map_
        return (DLDeviceType(int(kind)) if known else int(kind)), int(index)
    if tensor.device.type == "cpu":
        return DLDeviceType.kDLCPU, 0
    raise BufferError(f"the {tensor.device.type} backend's buffers do not support DLPack")


@composite(variants="function")
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
        array = _host_array(ext.__dlpack__())
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
    """A DLPack capsule (the unversioned "dltensor" kind) sharing the tensor's memory;
    PyTorch's `torch.to_dlpack`, which, unlike `__dlpack__`, exports a tensor that
    requires grad (its data, without the graph)."""
    return tensor_dlpack(tensor.detach())


# -- capsules -------------------------------------------------------------------------


def _is_capsule(obj: Any) -> bool:
    return type(obj).__name__ == "PyCapsule"


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("dtype_code", ctypes.c_uint8), ("dtype_bits", ctypes.c_uint8),
                ("dtype_lanes", ctypes.c_uint16), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


_VERSIONED_HEADER = 32  # DLManagedTensorVersioned: version, manager_ctx, deleter, flags
_BFLOAT = 4  # kDLBfloat
_NUMPY_OF = {(0, 8): "int8", (0, 16): "int16", (0, 32): "int32", (0, 64): "int64",
             (1, 8): "uint8", (2, 16): "float16", (2, 32): "float32", (2, 64): "float64",
             (6, 8): "bool", (_BFLOAT, 16): "bfloat16"}  # (DLDataTypeCode, bits)



def _capi(name: str, restype: Any) -> Any:
    """A private prototype of a CPython C function (ctypes.pythonapi's own are shared with
    every other library in the process, which may set other argtypes)."""
    proto = ctypes.PYFUNCTYPE(restype, ctypes.py_object, ctypes.c_char_p)
    return proto((name, ctypes.pythonapi))


class _api:  # noqa: N801 - the C API's names
    PyCapsule_GetPointer = _capi("PyCapsule_GetPointer", ctypes.c_void_p)
    PyCapsule_IsValid = _capi("PyCapsule_IsValid", ctypes.c_int)
    PyCapsule_SetName = _capi("PyCapsule_SetName", ctypes.c_int)


def _dl_tensor(capsule: Any) -> _DLTensor:
    """The DLTensor inside a capsule, legacy ("dltensor") or versioned."""
    for name, offset in ((b"dltensor", 0), (b"dltensor_versioned", _VERSIONED_HEADER)):
        if _api.PyCapsule_IsValid(capsule, name):
            return _DLTensor.from_address(_api.PyCapsule_GetPointer(capsule, name) + offset)
    raise RuntimeError("from_dlpack received an invalid capsule. Note that DLTensor capsules "
                       "can be consumed only once, so you might have already constructed a "
                       "tensor from it once.")


class _Owner:
    """Keeps a consumed DLPack tensor's memory: calls the producer's deleter when the last
    array viewing it is gone (the capsule is renamed "used_dltensor", as consumers do)."""

    def __init__(self, managed: int) -> None:
        self.managed = managed

    def __del__(self) -> None:
        try:
            deleter = _DLManagedTensor.from_address(self.managed).deleter
            if deleter:
                _Deleter(deleter)(self.managed)
        except Exception:  # noqa: S110 - at interpreter exit ctypes may be gone already
            pass


def _host_array(capsule: Any) -> np.ndarray:
    """A writable NumPy array over a legacy DLPack capsule's host memory (NumPy's own
    from_dlpack makes legacy capsules read-only, and knows no bfloat16)."""
    t = _dl_tensor(capsule)
    if not _api.PyCapsule_IsValid(capsule, b"dltensor"):
        raise BufferError("from_dlpack(): expected a legacy DLPack capsule for host memory")
    name = _NUMPY_OF.get((t.dtype_code, t.dtype_bits))
    if name is None or t.dtype_lanes != 1:
        raise BufferError(f"from_dlpack(): DLPack dtype (code {t.dtype_code}, "
                          f"{t.dtype_bits} bits, {t.dtype_lanes} lanes) has no ember dtype")
    from ember.core.backend import numpy_dtype
    from ember.core.dtype import from_name

    dtype = numpy_dtype(from_name(name))
    shape = tuple(t.shape[i] for i in range(t.ndim))
    itemsize = dtype.itemsize
    if t.strides:
        strides = tuple(t.strides[i] * itemsize for i in range(t.ndim))
    else:  # dense, row-major
        strides, step = [], itemsize
        for n in reversed(shape):
            strides.insert(0, step)
            step *= n
        strides = tuple(strides)
    managed = _api.PyCapsule_GetPointer(capsule, b"dltensor")
    _api.PyCapsule_SetName(capsule, b"used_dltensor")
    owner = _Owner(managed)
    if not all(shape):
        return np.empty(shape, dtype)  # `owner` frees the producer's tensor now
    # the bytes the elements span: negative strides reach below the first element
    low = sum((n - 1) * st for n, st in zip(shape, strides) if st < 0)
    high = sum((n - 1) * st for n, st in zip(shape, strides) if st > 0) + itemsize
    raw = (ctypes.c_char * (high - low)).from_address(t.data + t.byte_offset + low)
    raw._ember_owner = owner  # the memory lives as long as any array viewing it
    return np.ndarray(shape, dtype, buffer=raw, offset=-low, strides=strides)


class _Capsule:
    """A DLPack capsule given the `__dlpack__` protocol, so that consumers take it (its
    device read from the DLTensor the capsule holds)."""

    def __init__(self, capsule: Any) -> None:
        t = _dl_tensor(capsule)
        self.device = (int(t.device_type), int(t.device_id))
        self.capsule = capsule

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self.capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device
