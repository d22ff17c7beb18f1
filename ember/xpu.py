"""`ember.xpu`, as `torch.xpu` in a PyTorch built without XPU (Intel GPU) support: ember
has no XPU backend, so device-selection code finds none and takes its other branch. The
queries a program makes before choosing a device answer as PyTorch's do (False, 0, empty
statistics), the seeding calls are silently accepted (PyTorch queues them until a device
initializes), and the calls that need a device raise PyTorch's AssertionError."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from ember.core.dtype import API_NAME

default_generators: tuple = ()


def _not_compiled() -> AssertionError:
    return AssertionError(f"{'Torch' if API_NAME == 'torch' else 'ember'} not compiled with "
                          "XPU enabled")


def _is_compiled() -> bool:
    """False: ember has no XPU backend."""
    return False


def is_available() -> bool:
    """Return a bool indicating if XPU is currently available: always False."""
    return False


def device_count() -> int:
    """Return the number of XPU devices available: 0."""
    return 0


def is_initialized() -> bool:
    """Return whether the XPU state has been initialized: never."""
    return False


def init() -> None:
    """Initialize the XPU state: raises, as ember has no XPU backend."""
    raise _not_compiled()


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Return a bool indicating if the current XPU device supports bfloat16: False."""
    return False


def is_tf32_supported() -> bool:
    """Return a bool indicating if the current XPU device supports tf32: False."""
    return False


def get_arch_list() -> list[str]:
    """The XPU architectures this build was compiled for: none."""
    return []


def get_gencode_flags() -> str:
    """The XPU AOT flags this build was compiled with: none."""
    return ""


def _needs_device(*args: Any, **kwargs: Any) -> Any:
    raise _not_compiled()


# the calls that need an initialized device (PyTorch's `_lazy_init()` raises first)
synchronize = current_device = set_device = get_device_name = _needs_device
get_device_properties = get_device_capability = current_stream = _needs_device
initial_seed = get_rng_state = mem_get_info = set_per_process_memory_fraction = _needs_device
set_stream = _needs_device


def manual_seed(seed: int) -> None:
    """Set the seed for the current XPU device: queued, and dropped, as no device exists."""
    int(seed)


def manual_seed_all(seed: int) -> None:
    """Set the seed for every XPU device: queued, and dropped, as no device exists."""
    int(seed)


def seed() -> None:
    """Seed the current XPU device randomly: a no-op without a device."""


def seed_all() -> None:
    """Seed every XPU device randomly: a no-op without a device."""


def set_rng_state(new_state: Any, device: Any = "xpu") -> None:
    """Set the XPU generator's state: queued, and dropped, as no device exists."""


def get_rng_state_all() -> list:
    """Every XPU device's generator state: an empty list."""
    return []


def set_rng_state_all(new_states: Any) -> None:
    """Set every XPU device's generator state: there are none."""


def empty_cache() -> None:
    """Release cached XPU memory: a no-op without a device."""


def memory_stats(device: Any = None) -> OrderedDict:
    """The XPU caching allocator's statistics: empty without a device."""
    return OrderedDict()


def memory_allocated(device: Any = None) -> int:
    """Bytes of XPU memory held by tensors: 0."""
    return 0


def max_memory_allocated(device: Any = None) -> int:
    """Peak bytes of XPU memory held by tensors: 0."""
    return 0


def memory_reserved(device: Any = None) -> int:
    """Bytes of XPU memory held by the caching allocator: 0."""
    return 0


def max_memory_reserved(device: Any = None) -> int:
    """Peak bytes of XPU memory held by the caching allocator: 0."""
    return 0


class device:  # noqa: N801 - PyTorch's name
    """Context-manager that changes the selected XPU device; entering it raises, as ember
    has no XPU backend.

    Args:
        device (torch.device or int or str): device index to select.
    """

    def __init__(self, device: Any) -> None:
        from ember.core.device import device as _device

        if device is None or isinstance(device, int):
            self.idx = device
        else:
            self.idx = _device(device).index
        self.prev_idx = -1

    def __enter__(self) -> None:
        brand = "PyTorch" if API_NAME == "torch" else "ember"
        raise NotImplementedError(f"{brand} was compiled without XPU support")

    def __exit__(self, *exc: Any) -> bool:
        return False


class device_of(device):  # noqa: N801 - PyTorch's name
    """Context-manager that changes the current device to that of the given tensor."""

    def __init__(self, obj: Any) -> None:
        super().__init__(obj.get_device() if obj.device.type == "xpu" else -1)


class StreamContext:
    """Context-manager that selects a given XPU stream; with ``None``, a no-op."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def __enter__(self) -> None:
        if self.stream is not None:
            raise _not_compiled()

    def __exit__(self, *exc: Any) -> bool:
        return False


def stream(stream: Any) -> StreamContext:
    """Wrap a StreamContext selecting `stream` (``None``: a no-op)."""
    return StreamContext(stream)


class Stream:
    """An XPU stream: cannot be made, as ember has no XPU backend."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Stream:
        raise RuntimeError("Tried to instantiate dummy base class Stream")


class Event:
    """An XPU event: cannot be made, as ember has no XPU backend."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Event:
        raise RuntimeError("Tried to instantiate dummy base class Event")

