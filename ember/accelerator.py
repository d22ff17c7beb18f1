"""`ember.accelerator`, as PyTorch 2.6+'s `torch.accelerator`: the one accelerator a
script should use, whatever it is.

    device = ember.accelerator.current_accelerator() or ember.device("cpu")

The accelerator is the preferred available backend that is not the host CPU: CUDA, an
OpenCL device that is not a CPU (PoCL, which runs OpenCL on the host's own cores, does not
count), or a plugin's backend that declares `is_accelerator` — the same choice as
`device="auto"` makes. Without one, `current_accelerator()` is None, `is_available()` False,
`device_count()` 0, and what needs a device raises PyTorch's RuntimeError.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from ember.core import scheduler
from ember.core.device import device as _Device

__all__ = ["current_accelerator", "is_available", "device_count", "current_device_index",
           "set_device_index", "device_index", "synchronize", "memory_stats",
           "memory_allocated", "max_memory_allocated", "memory_reserved",
           "max_memory_reserved", "reset_peak_memory_stats", "empty_cache",
           "current_stream", "set_stream", "current_device_idx", "set_device_idx"]

_NONE = "Cannot access accelerator device when none is available."


def _accelerator() -> Any:
    """The backend of the current accelerator, or None."""
    for backend in scheduler.available_backends(accelerators_only=True):
        if backend.name != "cpu" and backend.is_accelerator:
            return backend
    return None


def _require() -> Any:
    backend = _accelerator()
    if backend is None:
        raise RuntimeError(_NONE)
    return backend


def current_accelerator(check_available: bool = False) -> _Device | None:
    """The accelerator's device type (e.g. `device(type='cuda')`), or None when there is
    none. (Only available accelerators are considered, so `check_available` changes
    nothing.)"""
    backend = _accelerator()
    return None if backend is None else _Device(backend.name)


def is_available() -> bool:
    """Whether an accelerator with at least one device can be used now."""
    return device_count() > 0


def device_count() -> int:
    """The number of the accelerator's devices (0 without one)."""
    backend = _accelerator()
    return 0 if backend is None else backend.device_count()


def _index(backend: Any, device: Any) -> int:
    if device is None:
        return backend.current_device()
    if isinstance(device, str):
        device = _Device(device)
    if isinstance(device, _Device):
        if device.type != backend.name:
            raise ValueError(f"{device.type} doesn't match the current accelerator "
                             f"{backend.name}.")
        return backend.current_device() if device.index is None else device.index
    if isinstance(device, bool) or not isinstance(device, int):
        raise TypeError(f"Expected a device index, a string or an ember.device, got "
                        f"{type(device).__name__}")
    return device


def current_device_index() -> int:
    """The index of the accelerator's current device."""
    return _require().current_device()


def set_device_index(device: Any) -> None:
    """Make `device` (an index, `"cuda:1"` ...) the accelerator's current device; a
    negative index does nothing."""
    backend = _require()
    index = _index(backend, device)
    if index < 0:
        return
    count = backend.device_count()
    if index >= count:
        raise RuntimeError(f"device index {index} is out of range: the {backend.name} "
                           f"accelerator has {count} device(s)")
    backend.set_device(index)


def _deprecated_alias(function: Any, name: str) -> Any:
    """`function` under its old name, warning as PyTorch's deprecated aliases do."""
    import functools
    import warnings

    @functools.wraps(function)
    def alias(*args: Any, **kwargs: Any) -> Any:
        warnings.warn(f"Use `{function.__name__}` instead.", FutureWarning, stacklevel=2)
        return function(*args, **kwargs)
    alias.__name__ = alias.__qualname__ = name
    return alias


current_device_idx = _deprecated_alias(current_device_index, "current_device_idx")
set_device_idx = _deprecated_alias(set_device_index, "set_device_idx")


def current_stream(device: Any = None, /) -> Any:
    """The current stream (an `ember.Stream`) of an accelerator device (the current one by
    default)."""
    from ember.event import Stream

    backend = _require()
    return Stream(_Device(backend.name, _index(backend, device)))


def set_stream(stream: Any) -> None:
    """Make `stream` current: its device becomes the accelerator's current device (ember's
    generic streams order work as the device's default stream does)."""
    set_device_index(_require() and stream.device)


class device_index:  # noqa: N801 - PyTorch's name
    """Context manager that makes `device` the accelerator's current device inside it
    (None does nothing)."""

    def __init__(self, device: Any, /) -> None:
        self.idx = device
        self.prev_idx = -1

    def __enter__(self) -> None:
        if self.idx is None:
            return
        backend = _require()
        self.prev_idx = backend.current_device()
        set_device_index(self.idx)

    def __exit__(self, *exc: Any) -> bool:
        if self.prev_idx >= 0:
            _require().set_device(self.prev_idx)
        return False


def synchronize(device: Any = None) -> None:
    """Wait for all work queued on an accelerator device (the current one by default)."""
    backend = _require()
    backend.synchronize(_index(backend, device))


def memory_stats(device: Any = None) -> OrderedDict:
    """The accelerator's allocator counters, by PyTorch's names ({} when it keeps none)."""
    backend = _require()
    return OrderedDict(sorted(backend.memory_stats(_index(backend, device)).items()))


def memory_allocated(device: Any = None) -> int:
    return memory_stats(device).get("allocated_bytes.all.current", 0)


def max_memory_allocated(device: Any = None) -> int:
    return memory_stats(device).get("allocated_bytes.all.peak", 0)


def memory_reserved(device: Any = None) -> int:
    return memory_stats(device).get("reserved_bytes.all.current", 0)


def max_memory_reserved(device: Any = None) -> int:
    return memory_stats(device).get("reserved_bytes.all.peak", 0)


def reset_peak_memory_stats(device: Any = None) -> None:
    """Restart the allocator's peaks (where the accelerator keeps them)."""
    backend = _require()
    reset = getattr(backend, "reset_peak_memory_stats", None)
    if reset is not None:
        reset(_index(backend, device))


def empty_cache() -> None:
    """Give the accelerator allocator's cached blocks back (where it caches)."""
    backend = _require()
    empty = getattr(backend, "empty_cache", None)
    if empty is not None:
        empty()
