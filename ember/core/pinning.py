"""Page-locked ("pinned") host memory, as PyTorch's `Tensor.pin_memory()`: a CPU tensor
whose memory an accelerator can copy from asynchronously (`.to(device, non_blocking=True)`).

Pinned memory comes from an available accelerator backend that offers it (the CUDA
backend's `pin_memory`/`is_pinned`, from CuPy's pinned pool); without one, pinning raises
PyTorch's error, and `is_pinned()` is False.
"""

from __future__ import annotations

from typing import Any

from ember.core import plugins

NO_ACCELERATOR = "Cannot access accelerator device when none is available."
NO_ALLOCATOR = ("pin_memory=True requires a CUDA or other accelerator backend; no pinned "
                "memory allocator is available on this system.")


def _pinning_backend() -> Any:
    """The available backend that pins host memory, or None."""
    plugins.registry.ensure_loaded()
    for backend in plugins.registry.backends.values():
        if hasattr(backend, "pin_memory") and backend.is_accelerator and \
                plugins.safe_unavailable_reason(backend) is None:
            return backend
    return None


def can_pin() -> bool:
    """Whether an available accelerator offers pinned host memory."""
    return _pinning_backend() is not None


def pin_memory(tensor: Any, *, message: str = NO_ACCELERATOR) -> Any:
    """`Tensor.pin_memory()`: a copy of a CPU tensor in pinned memory (itself if pinned)."""
    from ember.core.tensor import Tensor

    if tensor.device.type != "cpu":
        raise RuntimeError(f"cannot pin '{tensor.type()}' only dense CPU tensors can be pinned"
                           f" (the tensor is on {tensor.device})")
    backend = _pinning_backend()
    if backend is None:
        raise RuntimeError(message)
    if backend.is_pinned(tensor._data):
        return tensor
    out = Tensor._make(backend.pin_memory(tensor._data), tensor.dtype, tensor.device,
                       tensor._backend)
    return out.requires_grad_(True) if tensor.requires_grad and tensor.is_leaf else out


def is_pinned(tensor: Any) -> bool:
    """`Tensor.is_pinned()`: whether a CPU tensor's memory is pinned."""
    if tensor.device.type != "cpu":
        return False
    backend = _pinning_backend()
    return backend is not None and bool(backend.is_pinned(tensor._data))
