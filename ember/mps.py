"""`ember.mps`, as `torch.mps` in a PyTorch built without Metal (MPS) support: ember has no
MPS backend, so `is_available()` is False and `device_count()` 0; `manual_seed` is
accepted (the global `manual_seed` calls it), and the calls that need the device raise
PyTorch's RuntimeError naming the missing backend call."""

from __future__ import annotations

from typing import Any


def _without_mps(call: str) -> RuntimeError:
    return RuntimeError(f"Cannot execute {call}() without MPS backend.")


def device_count() -> int:
    """Returns the number of available MPS devices: 0."""
    return 0


def is_available() -> bool:
    """False: ember has no MPS backend."""
    return False


def manual_seed(seed: int) -> None:
    """Sets the seed for generating random numbers: nothing to seed without MPS."""


def seed() -> None:
    """Sets the seed for generating random numbers to a random number: raises without MPS."""
    raise _without_mps("getDefaultGenerator")


def get_rng_state(device: Any = "mps") -> Any:
    """Returns the random number generator state: raises without MPS."""
    raise _without_mps("getDefaultGenerator")


def set_rng_state(new_state: Any, device: Any = "mps") -> None:
    """Sets the random number generator state: raises without MPS."""
    raise _without_mps("getDefaultGenerator")


def synchronize() -> None:
    """Waits for all kernels on the MPS device to complete: raises without MPS."""
    raise _without_mps("deviceSynchronize")


def empty_cache() -> None:
    """Releases the MPS allocator's cached memory: raises without MPS."""
    raise _without_mps("emptyCache")


def set_per_process_memory_fraction(fraction: float) -> None:
    """Sets the memory fraction for the MPS allocator: raises without MPS."""
    raise _without_mps("setMemoryFraction")


def current_allocated_memory() -> int:
    """Bytes of MPS memory held by tensors: raises without MPS."""
    raise _without_mps("getCurrentAllocatedMemory")


def driver_allocated_memory() -> int:
    """Bytes of MPS memory the Metal driver holds: raises without MPS."""
    raise _without_mps("getDriverAllocatedMemory")


def recommended_max_memory() -> int:
    """The recommended working-set size of the MPS device: raises without MPS."""
    raise _without_mps("getRecommendedMaxMemory")


def compile_shader(source: str) -> Any:
    """Compiles a Metal shader: raises without MPS."""
    raise RuntimeError("MPS is not available")


class Event:
    """An MPS event: cannot be made without MPS."""

    def __init__(self, enable_timing: bool = False) -> None:
        raise _without_mps("acquireEvent")
