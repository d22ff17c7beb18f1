"""`ember.mtia`, as `torch.mtia` in a PyTorch built without MTIA (Meta's accelerator)
support: ember has none, so `is_available()` is False and `device_count()` 0; the
queries that need no device answer as PyTorch's (no memory in use, seeding accepted),
and the calls that need one raise PyTorch's errors."""

from __future__ import annotations

from typing import Any

from ember.core.dtype import API_NAME

default_generators: tuple = ()


def _without_mtia(call: str) -> RuntimeError:
    return RuntimeError(f"Cannot execute {call}() without MTIA backend.")


def _not_compiled() -> AssertionError:
    return AssertionError(f"{'Torch' if API_NAME == 'torch' else 'ember'} not compiled with "
                          "MTIA enabled")


def _is_compiled() -> bool:
    """False: ember has no MTIA backend."""
    return False


def is_available() -> bool:
    """False: ember has no MTIA backend."""
    return False


def device_count() -> int:
    """The number of MTIA devices: 0."""
    return 0


def is_initialized() -> bool:
    """Whether the MTIA state is initialized: never."""
    return False


def init() -> None:
    """Initialize the MTIA state: raises without MTIA."""
    raise _not_compiled()


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """PyTorch's answer for MTIA: True (every MTIA device has bfloat16)."""
    return True


def _needs_current_device(*args: Any, **kwargs: Any) -> Any:
    raise _without_mtia("getCurrentDevice")


synchronize = current_device = current_stream = default_stream = _needs_current_device
get_device_properties = get_device_capability = set_rng_state = _needs_current_device
stream = _needs_current_device


def set_device(device: Any) -> None:
    """Set the current MTIA device: raises without MTIA."""
    raise _without_mtia("setCurrentDevice")


def empty_cache() -> None:
    """Release the MTIA allocator's cached memory: raises without MTIA."""
    raise _without_mtia("emptyCache")


def initial_seed() -> int:
    """The current MTIA generator's seed: raises without MTIA."""
    raise _not_compiled()


def get_rng_state(device: Any = "mtia") -> Any:
    """The MTIA generator's state: raises without MTIA."""
    raise _not_compiled()


def manual_seed(seed: int) -> None:
    """Seed the current MTIA device: queued, and dropped, as no device exists."""
    int(seed)


def manual_seed_all(seed: int) -> None:
    """Seed every MTIA device: queued, and dropped, as no device exists."""
    int(seed)


def seed() -> None:
    """Seed the current MTIA device randomly: a no-op without a device."""


def seed_all() -> None:
    """Seed every MTIA device randomly: a no-op without a device."""


def get_rng_state_all() -> list:
    """Every MTIA device's generator state: an empty list."""
    return []


def set_rng_state_all(new_states: Any) -> None:
    """Set every MTIA device's generator state: there are none."""


def memory_stats(device: Any = None) -> dict:
    """The MTIA allocator's statistics: empty without a device."""
    return {}


def memory_allocated(device: Any = None) -> int:
    """Bytes of MTIA memory held by tensors: 0."""
    return 0


def max_memory_allocated(device: Any = None) -> int:
    """Peak bytes of MTIA memory held by tensors: 0."""
    return 0


def reset_peak_memory_stats(device: Any = None) -> None:
    """Reset the MTIA allocator's peak statistics: nothing to reset."""


class device:  # noqa: N801 - PyTorch's name
    """Context-manager that changes the selected MTIA device; entering it raises without
    MTIA."""

    def __init__(self, device: Any) -> None:
        from ember.core.device import device as _device

        self.idx = device if device is None or isinstance(device, int) else _device(device).index
        self.prev_idx = -1

    def __enter__(self) -> None:
        raise _without_mtia("maybeExchangeDevice")

    def __exit__(self, *exc: Any) -> bool:
        return False
