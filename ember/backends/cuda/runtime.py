"""CuPy's side of the CUDA backend: devices, the memory pool with ember's statistics and
out-of-memory error, streams and events, random generators.

Imported on first use only (importing CuPy takes about half a second, and `import ember`
must stay fast); `ember/backends/cuda/__init__.py` is the cheap plugin entry.

Memory: every CuPy allocation goes through `_Allocator.malloc`, which wraps CuPy's own
memory pool (the caching allocator, as PyTorch's) to keep what `ember.cuda`'s memory
functions report: the bytes in use and reserved now, and their peaks. A peak can only
rise on an allocation, so reading the pool's counters after each one keeps the peaks exact
without seeing the frees. Out of memory: the pool's cached blocks are released and the
allocation tried once more; if it fails again, ember's `OutOfMemoryError` names the
device, the bytes asked for and the bytes free, and the pool stays usable.
"""

from __future__ import annotations

import collections
import threading
from typing import Any

import cupy

from ember.core.backend import OutOfMemoryError

_lock = threading.Lock()


def device_count() -> int:
    return int(cupy.cuda.runtime.getDeviceCount())


def current_device() -> int:
    return int(cupy.cuda.runtime.getDevice())


def set_device(index: int) -> None:
    cupy.cuda.Device(index).use()


def device(index: int) -> Any:
    """A context that makes `index` the current device (CuPy's Device)."""
    return cupy.cuda.Device(index)


def properties(index: int) -> dict[str, Any]:
    """cudaGetDeviceProperties as a dict (`name` decoded to str)."""
    props = dict(cupy.cuda.runtime.getDeviceProperties(index))
    name = props.get("name", b"")
    props["name"] = name.decode() if isinstance(name, bytes) else str(name)
    return props


def mem_get_info(index: int) -> tuple[int, int]:
    """(free, total) bytes of device `index`, as cudaMemGetInfo gives them."""
    with cupy.cuda.Device(index):
        free, total = cupy.cuda.runtime.memGetInfo()
    return int(free), int(total)


def synchronize(index: int | None) -> None:
    if index is None:
        for i in range(device_count()):
            with cupy.cuda.Device(i):
                cupy.cuda.runtime.deviceSynchronize()
    else:
        with cupy.cuda.Device(index):
            cupy.cuda.runtime.deviceSynchronize()


# -- memory ---------------------------------------------------------------------------


class _Stats:
    __slots__ = ("peak_allocated", "peak_reserved", "num_ooms", "num_alloc_retries",
                 "allocations")

    def __init__(self) -> None:
        self.peak_allocated = self.peak_reserved = 0
        self.num_ooms = self.num_alloc_retries = self.allocations = 0


class _Allocator:
    """CuPy's default memory pool, with peak statistics and ember's out-of-memory error."""

    def __init__(self) -> None:
        self.pool = cupy.get_default_memory_pool()
        self.stats: dict[int, _Stats] = {}
        cupy.cuda.set_allocator(self.malloc)

    def _stats(self, index: int) -> _Stats:
        s = self.stats.get(index)
        if s is None:
            s = self.stats[index] = _Stats()
        return s

    def malloc(self, size: int) -> Any:
        pool = self.pool
        try:
            ptr = pool.malloc(size)
        except cupy.cuda.memory.OutOfMemoryError:
            index = current_device()
            stats = self._stats(index)
            stats.num_alloc_retries += 1
            pool.free_all_blocks()  # cached blocks of other sizes may make room
            try:
                ptr = pool.malloc(size)
            except cupy.cuda.memory.OutOfMemoryError:
                stats.num_ooms += 1
                raise self._error(index, size) from None
        stats = self._stats(ptr.device_id)
        stats.allocations += 1
        used = pool.used_bytes()
        if used > stats.peak_allocated:
            stats.peak_allocated = used
            reserved = pool.total_bytes()
            if reserved > stats.peak_reserved:
                stats.peak_reserved = reserved
        return ptr

    def _error(self, index: int, size: int) -> OutOfMemoryError:
        free, total = mem_get_info(index)
        with cupy.cuda.Device(index):
            used, reserved = self.pool.used_bytes(), self.pool.total_bytes()
        return OutOfMemoryError(
            f"CUDA out of memory. Tried to allocate {_size(size)} ({size} bytes) on device "
            f"cuda:{index}. GPU {index} has a total capacity of {_size(total)} of which "
            f"{_size(free)} ({free} bytes) is free. Of the allocated memory {_size(used)} is "
            f"allocated by ember, and {_size(reserved - used)} is reserved by ember but "
            "unallocated (ember.cuda.empty_cache() releases it).")

    def memory_stats(self, index: int) -> dict[str, int]:
        s = self._stats(index)
        with cupy.cuda.Device(index):
            used, reserved = self.pool.used_bytes(), self.pool.total_bytes()
        # the peaks are read at allocations; a reset may leave them below the current use
        s.peak_allocated, s.peak_reserved = max(s.peak_allocated, used), \
            max(s.peak_reserved, reserved)
        return {
            "allocated_bytes.all.current": used,
            "allocated_bytes.all.peak": s.peak_allocated,
            "reserved_bytes.all.current": reserved,
            "reserved_bytes.all.peak": s.peak_reserved,
            "num_alloc_retries": s.num_alloc_retries,
            "num_ooms": s.num_ooms,
            "allocation.all.allocated": s.allocations,
        }

    def reset_peak(self, index: int) -> None:
        s = self._stats(index)
        with cupy.cuda.Device(index):
            s.peak_allocated, s.peak_reserved = self.pool.used_bytes(), self.pool.total_bytes()

    def empty_cache(self) -> None:
        self.pool.free_all_blocks()
        cupy.get_default_pinned_memory_pool().free_all_blocks()


def _size(n: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} bytes"


_allocator: _Allocator | None = None


def allocator() -> _Allocator:
    global _allocator
    if _allocator is None:
        with _lock:
            if _allocator is None:
                _allocator = _Allocator()
    return _allocator


# -- asynchronous host copies --------------------------------------------------------

_in_flight: collections.deque = collections.deque()  # (event, host array) of queued copies


def keep_until_done(host: Any) -> None:
    """Keep `host` (the source of a copy just queued on the current stream) alive until the
    copy has run: pinned memory freed early would go back to CuPy's pool and could be
    reused while the GPU still reads it (PyTorch's caching host allocator does the same
    with events)."""
    event = cupy.cuda.Event(disable_timing=True)
    event.record()
    _in_flight.append((event, host))
    while _in_flight and _in_flight[0][0].done:
        _in_flight.popleft()


# -- streams and events ---------------------------------------------------------------


def new_stream(index: int, priority: int = 0) -> Any:
    with cupy.cuda.Device(index):
        return cupy.cuda.Stream(non_blocking=False, priority=priority)


def current_stream(index: int) -> Any:
    with cupy.cuda.Device(index):
        return cupy.cuda.get_current_stream()


def default_stream(index: int) -> Any:
    with cupy.cuda.Device(index):
        return cupy.cuda.Stream.null


def new_event(enable_timing: bool, blocking: bool, interprocess: bool) -> Any:
    return cupy.cuda.Event(block=blocking, disable_timing=not enable_timing,
                           interprocess=interprocess)


def elapsed_ms(start: Any, end: Any) -> float:
    return float(cupy.cuda.get_elapsed_time(start, end))


# -- random numbers -------------------------------------------------------------------


class Generators:
    """One cupy.random.RandomState per device, made on first use from the last seed (each
    device's stream of numbers is seeded with seed + device index)."""

    def __init__(self) -> None:
        self.seed = 0
        self.by_device: dict[int, Any] = {}

    def manual_seed(self, seed: int) -> None:
        self.seed = int(seed)
        self.by_device.clear()  # made afresh on next use, from the new seed

    def get(self, index: int) -> Any:
        g = self.by_device.get(index)
        if g is None:
            with cupy.cuda.Device(index):
                g = self.by_device[index] = cupy.random.RandomState(self.seed + index)
        return g
