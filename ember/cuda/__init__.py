"""`ember.cuda`, as `torch.cuda`: devices, seeds, synchronization, memory statistics,
streams and events of the CUDA backend, and `ember.cuda.amp`.

Works on every machine. What needs no GPU answers without one, as PyTorch's does:
`is_available()` is False, `device_count()` 0, `manual_seed` does nothing, the memory
functions report 0, `device(-1)` and `stream(None)` are no-ops. What needs a GPU
initializes CUDA first and raises, where it cannot, what PyTorch's CPU build raises
(AssertionError: Torch not compiled with CUDA enabled), with the backend's reason (CuPy
missing, no driver, no device ...) in a note. `ember devices` shows the same reason.

The CUDA backend is reached through the plugin manager, like every backend; its own
methods (device contexts, memory pool statistics, CuPy's streams and events) do the work.
"""

from __future__ import annotations

import random
import warnings
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from ember.core import plugins
from ember.core.backend import OutOfMemoryError, api_name
from ember.core.device import device as _Device
from ember.core.errors import with_context
from ember.core.legacy_types import CUDA_TYPES as _CUDA_TYPES
from ember.core.placement import not_compiled_error

# PyTorch's legacy constructors of CUDA tensors (ember.cuda.FloatTensor ...)
globals().update(_CUDA_TYPES)

__all__ = [
    "is_available", "device_count", "is_initialized", "init", "current_device", "set_device",
    "device", "device_of", "get_device_name", "get_device_capability",
    "get_device_properties", "manual_seed", "manual_seed_all", "seed", "seed_all",
    "initial_seed", "synchronize", "memory_stats", "memory_allocated",
    "max_memory_allocated", "memory_reserved", "max_memory_reserved", "empty_cache",
    "reset_peak_memory_stats", "reset_max_memory_allocated", "mem_get_info", "Stream",
    "Event", "StreamContext", "stream", "current_stream", "default_stream", "set_stream",
    "is_bf16_supported", "get_arch_list", "OutOfMemoryError", "get_rng_state",
    "get_rng_state_all", "set_rng_state", "set_rng_state_all", "memory_cached",
    "max_memory_cached", "reset_max_memory_cached", "memory_stats_as_nested_dict",
    "set_per_process_memory_fraction", "get_per_process_memory_fraction", "ipc_collect",
    "list_gpu_processes", "is_tf32_supported", "get_gencode_flags", "utilization",
    "memory_usage", "temperature", "power_draw", "clock_rate", "device_memory_used",
    "set_sync_debug_mode", "get_sync_debug_mode",
    *_CUDA_TYPES,
]

has_half = True  # PyTorch's build flags: half precision, but no MAGMA
has_magma = False

_initialized = False


def _backend() -> Any:
    """The CUDA backend, or None where ember has none (EMBER_BACKENDS leaves it out)."""
    try:
        return plugins.get_backend("cuda")
    except RuntimeError:
        return None


def _lazy_init() -> Any:
    """The CUDA backend, ready; else PyTorch's error where it cannot use CUDA (its CPU
    build's AssertionError "Torch not compiled with CUDA enabled"), with ember's reason
    (CuPy missing, no driver, no device ...) as a note."""
    global _initialized
    backend = _backend()
    if backend is None:
        raise not_compiled_error("cuda", "the 'cuda' backend is not loaded: see EMBER_BACKENDS")
    if _initialized:
        return backend
    reason = plugins.safe_unavailable_reason(backend)
    if reason is not None:
        raise not_compiled_error("cuda", reason)
    _initialized = True
    return backend


def is_available() -> bool:
    """Whether a CUDA device can be used now."""
    backend = _backend()
    return backend is not None and plugins.safe_unavailable_reason(backend) is None


def device_count() -> int:
    """The number of usable CUDA devices (0 without a GPU)."""
    return _backend().device_count() if is_available() else 0


def is_initialized() -> bool:
    """Whether CUDA has been initialized in this process (by a CUDA tensor or a call here)."""
    backend = _backend()
    return _initialized or bool(backend is not None and getattr(backend, "initialized", False))


def init() -> None:
    """Initialize CUDA now (it is otherwise initialized on first use); raises why it can't."""
    _lazy_init()


# -- devices --------------------------------------------------------------------------


def _device_index(device: Any, optional: bool = False) -> int:
    """A device argument (int, "cuda:1", ember.device) as an index; None, or "cuda" with no
    index, means the current device when `optional`. PyTorch's `_get_device_index`."""
    if isinstance(device, str):
        device = _Device(device)
    if isinstance(device, _Device):
        if device.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {device}")
        device = device.index
    if device is None:
        if not optional:
            raise ValueError(f"Expected a {api_name()}.device with a specified index or an "
                             "integer, but got:None")
        return current_device()
    if isinstance(device, bool) or not isinstance(device, int):
        raise ValueError(f"Expected a cuda device, but got: {device!r}")
    return device


def _check_index(backend: Any, index: int) -> int:
    count = backend.device_count()
    if not 0 <= index < count:
        raise RuntimeError(f"CUDA error: invalid device ordinal: device cuda:{index} does not "
                           f"exist ({count} CUDA device(s))")
    return index


def current_device() -> int:
    """The index of the current CUDA device."""
    return _lazy_init().current_device()


def set_device(device: Any) -> None:
    """Make `device` the current CUDA device (a negative index does nothing)."""
    index = _device_index(device)
    if index >= 0:
        backend = _lazy_init()
        backend.set_device(_check_index(backend, index))


class device:  # noqa: N801 - PyTorch's name
    """Context manager that makes `device` the current CUDA device inside it (an index of
    -1, or None, does nothing)."""

    def __init__(self, device: Any) -> None:
        self.idx = -1 if device is None else _device_index(device, optional=True)
        self.prev_idx = -1

    def __enter__(self) -> None:
        if self.idx < 0:
            return
        backend = _needs_cuda("PyTorch was compiled without CUDA support", suffix="")
        self.prev_idx = backend.current_device()
        if self.prev_idx != self.idx:
            backend.set_device(_check_index(backend, self.idx))

    def __exit__(self, *exc: Any) -> bool:
        if self.prev_idx >= 0 and self.prev_idx != self.idx:
            _lazy_init().set_device(self.prev_idx)
        return False


class device_of(device):  # noqa: N801 - PyTorch's name
    """`device(...)` of a tensor: its CUDA device, or a no-op for a tensor elsewhere."""

    def __init__(self, obj: Any) -> None:
        super().__init__(obj.device.index or 0 if obj.device.type == "cuda" else -1)


@dataclass(frozen=True)
class _CudaDeviceProperties:
    """What `get_device_properties` returns (the fields scripts read)."""

    name: str
    major: int
    minor: int
    total_memory: int
    multi_processor_count: int
    L2_cache_size: int  # noqa: N815 - PyTorch's name
    is_integrated: int
    is_multi_gpu_board: int

    def __repr__(self) -> str:
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, "
                f"minor={self.minor}, total_memory={self.total_memory // 2**20}MB, "
                f"multi_processor_count={self.multi_processor_count}, "
                f"L2_cache_size={self.L2_cache_size // 2**20}MB)")


def get_device_properties(device: Any = None) -> _CudaDeviceProperties:
    """The properties of a CUDA device (the current one by default)."""
    backend = _lazy_init()
    index = _check_index(backend, _device_index(device, optional=True))
    p = backend.device_properties(index)
    return _CudaDeviceProperties(
        name=p["name"], major=int(p["major"]), minor=int(p["minor"]),
        total_memory=int(p["totalGlobalMem"]),
        multi_processor_count=int(p["multiProcessorCount"]),
        L2_cache_size=int(p.get("l2CacheSize", 0)), is_integrated=int(p.get("integrated", 0)),
        is_multi_gpu_board=int(p.get("isMultiGpuBoard", 0)))


def get_device_name(device: Any = None) -> str:
    """The name of a CUDA device (the current one by default)."""
    return get_device_properties(device).name


def get_device_capability(device: Any = None) -> tuple[int, int]:
    """The (major, minor) compute capability of a CUDA device."""
    p = get_device_properties(device)
    return p.major, p.minor


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether the current CUDA device runs bfloat16: natively from compute capability 8.0
    (Ampere), and in emulation (float32 arithmetic, bfloat16 storage) on older devices
    when `including_emulation`. False without CUDA."""
    if not is_available():
        return False
    return including_emulation or get_device_capability()[0] >= 8


def is_tf32_supported() -> bool:
    """Whether the current device computes in TF32 (compute capability 8.0 and up);
    False without CUDA."""
    if not is_available():
        return False
    return get_device_capability() >= (8, 0)


def get_gencode_flags() -> str:
    """The NVCC flags of the architectures compiled in (ember compiles its kernels when
    first used, for the device at hand: none)."""
    return ""


def get_arch_list() -> list[str]:
    """The architectures ember's CUDA kernels are built for: none ahead of time (CuPy
    compiles each kernel for the device it runs on)."""
    return []


# -- random numbers -------------------------------------------------------------------


def manual_seed(seed: int) -> None:
    """Seed the CUDA random number generators (does nothing without CUDA, as in PyTorch).
    ember.manual_seed seeds them too."""
    backend = _backend()
    if backend is not None:
        backend.manual_seed(int(seed))


manual_seed_all = manual_seed  # ember seeds every device's generator from one seed


def seed() -> None:
    """Seed the CUDA generators with a random number."""
    manual_seed(random.getrandbits(63))


seed_all = seed


def initial_seed() -> int:
    """The seed the CUDA generators were last given."""
    return _lazy_init().initial_seed()


def get_rng_state(device: Any = "cuda") -> Any:
    """A device's random number generator state, as a uint8 tensor (ember's CUDA
    generators are CuPy's, whose position cannot be read: the state is the seed they
    were last given, and :func:`set_rng_state` restarts the streams from it)."""
    from ember.core.creation import tensor
    from ember.core.dtype import uint8

    backend = _lazy_init()
    _check_index(backend, _device_index(device, optional=True))
    return tensor(list(int(backend.initial_seed()).to_bytes(8, "little")), dtype=uint8)


def get_rng_state_all() -> list:
    """The random number generator states of all CUDA devices (none without CUDA)."""
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state(new_state: Any, device: Any = "cuda") -> None:
    """Set a device's random number generator state (one from :func:`get_rng_state`).
    Without CUDA it does nothing, as PyTorch's CPU build (which defers it to CUDA's
    initialization, which never comes)."""
    if not is_available():
        return
    backend = _lazy_init()
    _check_index(backend, _device_index(device, optional=True))
    backend.manual_seed(int.from_bytes(bytes(new_state.tolist()[:8]), "little"))


def set_rng_state_all(new_states: Any) -> None:
    """Set every device's random number generator state, one state a device."""
    for index, state in enumerate(new_states):
        set_rng_state(state, index)


def synchronize(device: Any = None) -> None:
    """Wait for all work queued on a CUDA device (the current one by default)."""
    backend = _lazy_init()
    backend.synchronize(_check_index(backend, _device_index(device, optional=True)))


# -- memory ---------------------------------------------------------------------------


def memory_stats(device: Any = None) -> OrderedDict:
    """The CUDA memory pool's counters for a device, by PyTorch's names (empty before
    CUDA is initialized)."""
    if not is_initialized():
        return OrderedDict()
    index = _device_index(device, optional=True)
    return OrderedDict(sorted(_lazy_init().memory_stats(index).items()))


def memory_allocated(device: Any = None) -> int:
    """Bytes of device memory held by tensors now."""
    return memory_stats(device).get("allocated_bytes.all.current", 0)


def max_memory_allocated(device: Any = None) -> int:
    """The peak of `memory_allocated` since the start or `reset_peak_memory_stats`."""
    return memory_stats(device).get("allocated_bytes.all.peak", 0)


def memory_reserved(device: Any = None) -> int:
    """Bytes of device memory held by the pool (in use, or cached for reuse)."""
    return memory_stats(device).get("reserved_bytes.all.current", 0)


def max_memory_reserved(device: Any = None) -> int:
    """The peak of `memory_reserved`."""
    return memory_stats(device).get("reserved_bytes.all.peak", 0)


def reset_peak_memory_stats(device: Any = None) -> None:
    """Restart the peaks from the current values."""
    index = _device_index(device, optional=True)
    _lazy_init().reset_peak_memory_stats(index)


def reset_max_memory_allocated(device: Any = None) -> None:
    warnings.warn(f"{api_name()}.cuda.reset_max_memory_allocated now calls "
                  f"{api_name()}.cuda.reset_peak_memory_stats, which resets /all/ peak memory "
                  "stats.",
                  FutureWarning, stacklevel=2)
    reset_peak_memory_stats(device)


def memory_cached(device: Any = None) -> int:
    """Deprecated; see :func:`memory_reserved`."""
    return memory_reserved(device)


def max_memory_cached(device: Any = None) -> int:
    """Deprecated; see :func:`max_memory_reserved`."""
    return max_memory_reserved(device)


def reset_max_memory_cached(device: Any = None) -> None:
    warnings.warn(f"{api_name()}.cuda.reset_max_memory_cached now calls "
                  f"{api_name()}.cuda.reset_peak_memory_stats, which resets /all/ peak memory "
                  "stats.",
                  FutureWarning, stacklevel=2)
    reset_peak_memory_stats(device)


def memory_stats_as_nested_dict(device: Any = None) -> dict:
    """:func:`memory_stats` as nested dictionaries, split at the dots of its names
    (empty before CUDA is initialized)."""
    nested: dict = {}
    for name, value in memory_stats(device).items():
        *path, last = name.split(".")
        level = nested
        for part in path:
            level = level.setdefault(part, {})
        level[last] = value
    return nested


_memory_fraction: dict[int, float] = {}


def set_per_process_memory_fraction(fraction: float, device: Any = None) -> None:
    """Cap the share of a device's memory this process may take (ember's CUDA backend
    keeps the cap as a number: CuPy's pool is not limited by it)."""
    backend = _lazy_init()
    index = _check_index(backend, _device_index(device, optional=True))
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`")
    if not 0 <= fraction <= 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    _memory_fraction[index] = fraction


def get_per_process_memory_fraction(device: Any = None) -> float:
    """The cap :func:`set_per_process_memory_fraction` set (1.0 by default)."""
    backend = _lazy_init()
    return _memory_fraction.get(_check_index(backend, _device_index(device, optional=True)),
                                1.0)


def ipc_collect() -> None:
    """Free CUDA memory that other processes held through IPC and released (ember shares
    no CUDA memory between processes: nothing to free)."""
    _lazy_init()


def list_gpu_processes(device: Any = None) -> str:
    """The processes using a GPU and their memory, read through NVIDIA's management
    library (`pynvml`, from the nvidia-ml-py package); a line saying why not without it."""
    try:
        import pynvml
    except ModuleNotFoundError:
        return "pynvml module not found, please install nvidia-ml-py"
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return "cuda driver can't be loaded, is cuda enabled?"
    index = _device_index(device, optional=True)
    handle = pynvml.nvmlDeviceGetHandleByIndex(index)
    lines = [f"GPU:{index}"]
    procs = pynvml.nvmlDeviceGetComputeRunningProcesses(handle)
    if not procs:
        lines.append("no processes are running")
    for p in procs:
        lines.append(f"process {p.pid:>10d} uses {p.usedGpuMemory / (1024 * 1024):>12.3f} MB "
                     f"GPU memory")
    return "\n".join(lines)


_sync_debug_mode = 0


def set_sync_debug_mode(debug_mode: int | str) -> None:
    """Whether to warn (1, "warn") or raise (2, "error") on operations that synchronize
    with the device; 0 or "default" for neither. ember records the setting: its CUDA
    backend does not report its synchronizations."""
    global _sync_debug_mode
    _lazy_init()
    if isinstance(debug_mode, str):
        modes = {"default": 0, "warn": 1, "error": 2}
        if debug_mode not in modes:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, "
                               "`warn`, `error`")
        debug_mode = modes[debug_mode]
    _sync_debug_mode = int(debug_mode)


def get_sync_debug_mode() -> int:
    """The mode :func:`set_sync_debug_mode` set (0 by default)."""
    _lazy_init()
    return _sync_debug_mode


# -- NVIDIA's management library (pynvml, from the nvidia-ml-py package) ----------------


def _nvml_device(device: Any) -> Any:
    """pynvml's handle of a device; PyTorch's ModuleNotFoundError without pynvml."""
    try:
        import pynvml
    except ModuleNotFoundError:
        raise ModuleNotFoundError("nvidia-ml-py does not seem to be installed or it can't be "
                                  "imported.") from None
    pynvml.nvmlInit()
    return pynvml, pynvml.nvmlDeviceGetHandleByIndex(_device_index(device, optional=True))


def utilization(device: Any = None) -> int:
    """Percent of the last sample period a kernel ran on the device."""
    nvml, handle = _nvml_device(device)
    return nvml.nvmlDeviceGetUtilizationRates(handle).gpu


def memory_usage(device: Any = None) -> int:
    """Percent of the last sample period device memory was read or written."""
    nvml, handle = _nvml_device(device)
    return nvml.nvmlDeviceGetUtilizationRates(handle).memory


def temperature(device: Any = None) -> int:
    """The device's temperature in degrees Celsius."""
    nvml, handle = _nvml_device(device)
    return nvml.nvmlDeviceGetTemperature(handle, 0)  # NVML_TEMPERATURE_GPU


def power_draw(device: Any = None) -> int:
    """The device's power draw in milliwatts."""
    nvml, handle = _nvml_device(device)
    return nvml.nvmlDeviceGetPowerUsage(handle)


def clock_rate(device: Any = None) -> int:
    """The device's streaming multiprocessor clock in MHz."""
    nvml, handle = _nvml_device(device)
    return nvml.nvmlDeviceGetClockInfo(handle, 1)  # NVML_CLOCK_SM


def device_memory_used(device: Any = None) -> int:
    """Bytes of device memory in use by all processes, as the driver counts them."""
    nvml, handle = _nvml_device(device)
    return nvml.nvmlDeviceGetMemoryInfo(handle).used


def empty_cache() -> None:
    """Give the pool's cached, unused blocks back to the driver."""
    if is_initialized():
        _lazy_init().empty_cache()


def mem_get_info(device: Any = None) -> tuple[int, int]:
    """(free, total) bytes of a device's memory, from the driver."""
    backend = _lazy_init()
    return backend.mem_get_info(_check_index(backend, _device_index(device, optional=True)))


# -- streams and events ---------------------------------------------------------------


def _needs_cuda(what: str, suffix: str = " requires CUDA support") -> Any:
    """The CUDA backend, ready; else the RuntimeError that PyTorch's CPU build raises
    here (`what` + `suffix`), with ember's reason as a note."""
    try:
        return _lazy_init()
    except AssertionError as err:
        reason = "; ".join(getattr(err, "__notes__", []))
        raise with_context(RuntimeError(what + suffix), reason) from None


class Stream:
    """A CUDA stream: a queue of work on one device (CuPy's stream underneath)."""

    def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any) -> None:
        backend = _needs_cuda("ember.cuda.Stream")
        index = _device_index(device, optional=True)
        self._handle = backend.new_stream(index, priority)
        self.device = _Device("cuda", index)
        self.priority = priority

    @classmethod
    def _wrap(cls, handle: Any, index: int) -> Stream:
        s = object.__new__(cls)
        s._handle, s.device, s.priority = handle, _Device("cuda", index), 0
        return s

    @property
    def cuda_stream(self) -> int:
        return int(self._handle.ptr)

    def wait_event(self, event: Event) -> None:
        """Make later work on this stream wait for `event`."""
        self._handle.wait_event(event._handle)

    def wait_stream(self, stream: Stream) -> None:
        """Make later work on this stream wait for the work queued on `stream` so far."""
        self.wait_event(stream.record_event())

    def record_event(self, event: Event | None = None) -> Event:
        """Record `event` (a new one by default) on this stream."""
        event = event or Event()
        event.record(self)
        return event

    def query(self) -> bool:
        """Whether all work queued on this stream has finished."""
        return bool(self._handle.done)

    def synchronize(self) -> None:
        """Wait for all work queued on this stream."""
        self._handle.synchronize()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream) and self.cuda_stream == other.cuda_stream and \
            self.device == other.device

    def __hash__(self) -> int:
        return hash((self.cuda_stream, self.device))

    def __repr__(self) -> str:
        return f"<ember.cuda.Stream device={self.device} cuda_stream={self.cuda_stream:#x}>"


class Event:
    """A CUDA event: a mark in a stream, to wait for or to time work with
    (`enable_timing=True`, then `start.elapsed_time(end)` in milliseconds)."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False) -> None:
        backend = _needs_cuda("ember.cuda.Event")
        self._backend = backend
        self._handle = backend.new_event(enable_timing, blocking, interprocess)
        self.enable_timing = enable_timing

    def record(self, stream: Stream | None = None) -> None:
        """Record the event on `stream` (the current stream by default)."""
        self._handle.record(None if stream is None else stream._handle)

    def wait(self, stream: Stream | None = None) -> None:
        """Make later work on `stream` (the current stream) wait for this event."""
        (stream or current_stream()).wait_event(self)

    def query(self) -> bool:
        """Whether the work before the event has finished."""
        return bool(self._handle.done)

    def synchronize(self) -> None:
        """Wait until the work before the event has finished."""
        self._handle.synchronize()

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds between this event and `end_event` (both recorded, with timing)."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        return self._backend.elapsed_time(self._handle, end_event._handle)

    @property
    def cuda_event(self) -> int:
        return int(self._handle.ptr)

    def __repr__(self) -> str:
        return f"<ember.cuda.Event {self.cuda_event:#x}>"


def current_stream(device: Any = None) -> Stream:
    """The stream new work on a device is queued on."""
    backend = _lazy_init()
    index = _device_index(device, optional=True)
    return Stream._wrap(backend.current_stream(index), index)


def default_stream(device: Any = None) -> Stream:
    """A device's default (null) stream."""
    backend = _lazy_init()
    index = _device_index(device, optional=True)
    return Stream._wrap(backend.default_stream(index), index)


def set_stream(stream: Stream | None) -> None:
    """Make `stream` the current stream of its device (None does nothing)."""
    if stream is not None:
        stream._handle.use()


class StreamContext:
    """Context manager that queues work on `stream` inside it (None: a no-op)."""

    def __init__(self, stream: Stream | None) -> None:
        self.stream = stream
        self._device: device | None = None

    def __enter__(self) -> None:
        if self.stream is None:
            return
        self._device = device(self.stream.device)
        self._device.__enter__()
        self.stream._handle.__enter__()

    def __exit__(self, *exc: Any) -> bool:
        if self.stream is not None:
            self.stream._handle.__exit__(*exc)
            self._device.__exit__(*exc)
        return False


def stream(stream: Stream | None) -> StreamContext:
    """`with ember.cuda.stream(s):` queues the work inside on `s`."""
    return StreamContext(stream)


def __getattr__(name: str):
    import importlib

    if name in ("amp", "nvtx", "graphs"):  # load on first use, as ember's other subpackages
        return importlib.import_module(f"ember.cuda.{name}")
    if name in ("CUDAGraph", "graph", "graph_pool_handle", "is_current_stream_capturing",
                "make_graphed_callables"):
        return getattr(importlib.import_module("ember.cuda.graphs"), name)
    if name == "default_generators":  # one generator a device (none without CUDA)
        from ember.core.creation import Generator

        return tuple(Generator(f"cuda:{i}") for i in range(device_count()))
    raise AttributeError(f"module '{api_name()}.cuda' has no attribute {name!r}")
