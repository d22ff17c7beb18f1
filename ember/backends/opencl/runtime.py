"""The OpenCL runtime: device discovery, contexts (one per platform), one in-order queue
and memory pool per device, the program cache and kernel launches.

pyopencl is imported, and contexts are created, on first use only (importing this module
is free). Devices are numbered over every platform, in the order the ICD loader lists the
platforms and each platform lists its devices; `EMBER_OPENCL_DEVICE=k` moves device `k`
of that order to index 0, so that `"opencl"` (which means `"opencl:0"`) is device `k`,
and the others keep their relative order after it.

Programs are compiled once per (device, source, options): kept in memory here, and their
binaries on disk (cache.py), so a later process loads them instead of compiling.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from typing import Any

from ember.core.backend import OutOfMemoryError, human_bytes

_cl: Any = None  # the pyopencl module, once imported
_lock = threading.RLock()
_devices: list[Device] | None = None
_probe_error: str | None = None

LOCAL_MEM_SAFETY = 0.9

# Build statistics of this process, for tests and benchmarks: programs made (compiled from
# source, or loaded from the disk cache of binaries), kernels created, seconds spent.
stats = {"programs": 0, "compiled": 0, "cache_hits": 0, "build_seconds": 0.0, "kernels": 0}


def cl() -> Any:
    """The pyopencl module, imported on first use."""
    global _cl
    if _cl is None:
        import pyopencl
        import pyopencl.tools  # noqa: F401 - MemoryPool lives there

        _cl = pyopencl
    return _cl


class Device:
    """One OpenCL device as ember uses it: its context, in-order queue, memory pool,
    compiled kernels and random-number state. Created by `devices()`; the context and
    queue are made on first use (`ensure()`)."""

    def __init__(self, index: int, cl_device: Any, platform: Any) -> None:
        self.index = index
        self.cl_device = cl_device
        self.platform = platform
        self.name = cl_device.name.strip()
        self.platform_name = platform.name.strip()
        ext = set(cl_device.extensions.split())
        self.extensions = ext
        self.fp64 = "cl_khr_fp64" in ext or bool(getattr(cl_device, "double_fp_config", 0))
        self.fp16 = "cl_khr_fp16" in ext
        self.int64_atomics = "cl_khr_int64_base_atomics" in ext
        cl_ = cl()
        self.is_cpu = bool(cl_device.type & cl_.device_type.CPU)
        self.compute_units = int(cl_device.max_compute_units)
        self.global_mem = int(cl_device.global_mem_size)
        self.max_alloc = int(cl_device.max_mem_alloc_size)
        self.local_mem = int(cl_device.local_mem_size)
        self.max_wg = int(cl_device.max_work_group_size)
        self.label = f"opencl:{index} ({self.name})"
        # Launch shapes. A GPU likes work-groups of 256 work-items, one element each, and
        # matmul tiles in local memory. PoCL runs a work-group as a loop over its
        # work-items and pays per work-item and per barrier: there each work-item takes a
        # long run of elements (chunk()), work-groups stay small, and matmul uses register tiles
        # (sources.matmul_packed_source). EMBER_OPENCL_TUNING=gpu|cpu overrides the choice
        # (so the GPU shapes can be tested on PoCL); EMBER_OPENCL_MATMUL=tiled|packed|rows too.
        tuning = os.environ.get("EMBER_OPENCL_TUNING", "").strip().lower()
        cpu_like = self.is_cpu if tuning not in ("gpu", "cpu") else tuning == "cpu"
        self.cpu_like = cpu_like
        self.ls = min(8 if cpu_like else 256, self.max_wg)
        self.red_ls = _pow2_floor(min(16 if cpu_like else 256, self.max_wg))
        choice = os.environ.get("EMBER_OPENCL_MATMUL", "").strip().lower()
        self.matmul = choice if choice in ("tiled", "rows", "packed") else (
            "packed" if cpu_like else "tiled")
        self.ls_tuple = (self.ls,)
        self.enqueue = cl_._cl.enqueue_nd_range_kernel
        self.context: Any = None
        self.queue: Any = None
        self.pool: Any = None
        self.kernels: dict[Any, Any] = {}
        self.programs: dict[Any, Any] = {}
        self.rng_offset = 0  # Philox counter: 128-bit blocks used so far
        self.pending: list[Any] = []  # events of non-blocking host writes (keep alive)
        self.plain_queue: Any = None  # the usual queue, while a profiling one runs (timing)
        self.timed_queue: Any = None
        opts = []
        try:
            if cl_device.single_fp_config & cl_.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT:
                # float32 division and sqrt correctly rounded, as on the CPU (NumPy)
                opts.append("-cl-fp32-correctly-rounded-divide-sqrt")
        except Exception:  # an old driver without the query: default rounding
            pass
        self.options = tuple(opts)

    # -- lifetime ----------------------------------------------------------------------
    def ensure(self) -> Device:
        """Create the context, queue and memory pool on first use."""
        if self.queue is None:
            with _lock:
                if self.queue is None:
                    cl_ = cl()
                    ctx = _platform_context(self.platform, self.cl_device)
                    queue = cl_.CommandQueue(ctx, self.cl_device)
                    self.pool = cl_.tools.MemoryPool(cl_.tools.ImmediateAllocator(queue))
                    # kernels that index set this flag on an out-of-range index (instead
                    # of reading or writing out of bounds); checked at every sync
                    import numpy as np

                    self._flag_host = np.zeros(1, np.int32)
                    self.errflag = cl_.Buffer(ctx, cl_.mem_flags.READ_WRITE |
                                              cl_.mem_flags.COPY_HOST_PTR,
                                              hostbuf=self._flag_host)
                    self.context = ctx
                    self.queue = queue
                    if _timing is not None:  # first used while the profiler records
                        self.start_timing(_timing)
                    _finish_at_exit()
        return self

    def chunk(self, n: int) -> int:
        """Elements per work-item of an elementwise kernel over n elements: 1 on a GPU;
        on a CPU, enough that the work-items number a few per core."""
        if not self.cpu_like or n <= 4096:
            return 1 if not self.cpu_like else max(1, n // self.ls)
        return -(-n // (self.compute_units * 8 * self.ls))

    # -- memory ------------------------------------------------------------------------
    def alloc(self, nbytes: int) -> Any:
        """`nbytes` of device memory from the pool, or a RuntimeError naming the device
        and the size (OpenCL cannot allocate 0 bytes: empty tensors get 1 byte)."""
        if nbytes > self.max_alloc:
            raise OutOfMemoryError(self._oom_message(nbytes, "it exceeds the device's largest "
                                                     "single allocation"))
        try:
            return self.pool.allocate(nbytes or 8)
        except Exception as first:  # MemoryError or cl.MemoryError: drop cached blocks
            self.pool.free_held()
            try:
                return self.pool.allocate(nbytes)
            except Exception:
                raise OutOfMemoryError(self._oom_message(nbytes, str(first))) from None

    def _oom_message(self, nbytes: int, why: str) -> str:
        return (f"OpenCL out of memory on {self.label}: tried to allocate "
                f"{human_bytes(nbytes)} ({nbytes} bytes); the device has "
                f"{human_bytes(self.global_mem)} in total and allows "
                f"{human_bytes(self.max_alloc)} in one allocation ({why})")

    # -- programs ----------------------------------------------------------------------
    def kernel(self, key: Any, make_source: Any, name: str) -> Any:
        """The kernel `name` of the program that `make_source()` writes, compiled once
        per device and cached under `key`."""
        k = self.kernels.get(key)
        if k is None:
            with _lock:
                k = self.kernels.get(key)
                if k is None:
                    prg = self.program(make_source())
                    k = cl().Kernel(prg, name)
                    self.kernels[key] = k
                    stats["kernels"] += 1
        return k

    def program(self, source: str) -> Any:
        """The built program of `source`: from memory, else from the disk cache of
        binaries (cache.py), else compiled (and its binary stored)."""
        self.ensure()
        from ember.backends.opencl import cache

        digest = cache.key(self.cl_device, source, self.options)
        prg = self.programs.get(digest)
        if prg is not None:
            return prg
        cl_ = cl()
        start = time.perf_counter()
        use_cache = cache.enabled(self.cl_device)
        binary = cache.load(digest) if use_cache else None
        if binary is not None:
            try:
                prg = cl_.Program(self.context, [self.cl_device], [binary]).build(
                    options=list(self.options), devices=[self.cl_device])
                stats["cache_hits"] += 1
            except Exception:  # a stale or foreign binary: compile the source instead
                cache.forget(digest)
                prg = None
        if prg is None:
            try:
                prg = cl_.Program(self.context, source).build(options=list(self.options),
                                                              devices=[self.cl_device])
            except cl_.RuntimeError as err:
                raise RuntimeError(f"OpenCL program failed to build on {self.label}: "
                                   f"{err}") from None
            stats["compiled"] += 1
            if use_cache:
                try:
                    cache.store(digest, prg.get_info(cl_.program_info.BINARIES)[0])
                except Exception:  # a driver that cannot return binaries: no disk cache
                    pass
        stats["programs"] += 1
        stats["build_seconds"] += time.perf_counter() - start
        self.programs[digest] = prg
        return prg

    def launch(self, kernel: Any, global_size: tuple, local_size: tuple | None) -> None:
        if local_size is None and self.cpu_like:
            local_size = _cpu_local_size(global_size, self.compute_units)
        self.enqueue(self.queue, kernel, global_size, local_size, None, None, False, False)

    def keep(self, event: Any) -> None:
        """Hold a non-blocking host-to-device copy's event (a pyopencl NannyEvent, which
        owns the host array) until the copy completes; completed ones are dropped."""
        pending = self.pending
        pending.append(event)
        if len(pending) > 32:
            complete = cl().command_execution_status.COMPLETE
            while pending and pending[0].command_execution_status == complete:
                pending.pop(0)

    # -- device timing (ember.profiler) ---------------------------------------------------
    def start_timing(self, launches: list) -> None:
        """Run later work on a queue with profiling enabled, and append each kernel launch
        to `launches` as (device, kernel, event, host ns when queued): the device's own
        start and end times are read from the events later (`timings`). The usual queue is
        drained first, so the work stays in order; the in-order queue that replaces it is
        the only one used until `stop_timing`."""
        if self.plain_queue is not None:
            return
        self.finish()
        cl_ = cl()
        if self.timed_queue is None:
            self.timed_queue = cl_.CommandQueue(
                self.context, self.cl_device,
                properties=cl_.command_queue_properties.PROFILING_ENABLE)
        self.plain_queue, self.queue = self.queue, self.timed_queue
        real, index, now, append = self.enqueue, self.index, time.perf_counter_ns, \
            launches.append

        def enqueue(queue: Any, kernel: Any, *args: Any) -> Any:
            queued = now()
            event = real(queue, kernel, *args)
            append((index, kernel, event, queued))
            return event
        self.enqueue = enqueue

    def stop_timing(self) -> None:
        """Back to the usual queue (after the profiling one has drained)."""
        if self.plain_queue is None:
            return
        self.finish()
        self.queue, self.plain_queue = self.plain_queue, None
        self.enqueue = cl()._cl.enqueue_nd_range_kernel

    def finish(self) -> None:
        if self.queue is not None:
            self.read_errors()
            self.queue.finish()
            self.pending.clear()
            self.raise_errors()

    def read_errors(self) -> None:
        """Queue a read of the error flag; it lands by the next blocking read (the queue
        is in order), after which `raise_errors` reports it."""
        cl().enqueue_copy(self.queue, self._flag_host, self.errflag, is_blocking=False)

    def raise_errors(self) -> None:
        code = int(self._flag_host[0])
        if code:
            self._flag_host[0] = 0
            cl().enqueue_copy(self.queue, self.errflag, self._flag_host, is_blocking=True)
            what = {1: "an index tensor of an indexing op (x[idx], x[idx] = v, "
                       "index_select, index_put_)",
                    2: "the index of gather, scatter or scatter_add",
                    3: "a target class of cross_entropy"}.get(code, "an index")
            raise IndexError(f"{what} was out of range on {self.label}; the kernel skipped "
                             "it (detected at this synchronization, like CUDA's "
                             "device-side assertions)")


# -- device timing (ember.profiler) -----------------------------------------------------

_timing: list | None = None  # the launches recorded while timing is on, else None
_kernel_names: dict[Any, str] = {}


def start_timing() -> None:
    """Time every kernel of the devices in use, and of those first used from now on."""
    global _timing
    with _lock:
        if _timing is None:
            _timing = []
            for dev in known_devices():
                if dev.queue is not None:
                    dev.start_timing(_timing)


def take_launches() -> list:
    """The launches recorded since the last call: (device, kernel name, event, host ns)."""
    launches = _timing
    if not launches:
        return []
    taken = launches[:]
    del launches[:len(taken)]
    out = []
    for index, kernel, event, queued in taken:
        name = _kernel_names.get(kernel)
        if name is None:
            name = _kernel_names[kernel] = kernel.function_name
        out.append((index, name, event, queued))
    return out


def event_times(event: Any, queued_host: int) -> tuple[int, int]:
    """A kernel's (start, end) on the host's perf_counter_ns clock: the device's clock
    is not the host's, so its times are taken relative to the moment the kernel was
    queued, which both clocks saw (waits for the kernel to finish)."""
    event.wait()
    profile = event.profile
    base = queued_host - profile.queued
    return profile.start + base, profile.end + base


def stop_timing() -> None:
    """Back to the usual queues; launches already taken stay readable."""
    global _timing
    with _lock:
        _timing = None
        for dev in known_devices():
            dev.stop_timing()


@functools.lru_cache(maxsize=1024)
def _cpu_local_size(global_size: tuple, compute_units: int) -> tuple:
    """The work-group shape of a launch that leaves it to the device, on a CPU device.
    PoCL, given none, made a whole 2-D grid one work-group (its kernel cache showed
    matmul's 16x22 tiles compiled as one group), and one thread runs a work-group: the GEMM
    ran on one core. Here the grid is cut, last dim first (batch dims are independent),
    into about 8 groups per core, each dim by a divisor of its size (OpenCL 1.2's rule);
    no finer, since each group costs PoCL a dispatch."""
    target = 8 * compute_units
    local = list(global_size)
    groups = 1
    for d in range(len(local) - 1, -1, -1):
        if groups >= target:
            break
        size = local[d]
        need = -(-target // groups)
        pieces = next((k for k in range(need, size + 1) if size % k == 0), size)
        local[d] = size // pieces
        groups *= pieces
    return tuple(local)


def _pow2_floor(n: int) -> int:
    p = 1
    while p * 2 <= n:
        p *= 2
    return p




_contexts: dict[int, Any] = {}


def _platform_context(platform: Any, cl_device: Any) -> Any:
    """One context per platform holding all its devices (so buffers copy directly between
    them); a platform that refuses a shared context gets one context per device."""
    key = platform.int_ptr
    ctx = _contexts.get(key)
    if ctx is None:
        cl_ = cl()
        try:
            ctx = cl_.Context(devices=platform.get_devices())
        except Exception:
            ctx = None
        _contexts[key] = ctx if ctx is not None else False
    if not ctx:
        ctx = cl().Context(devices=[cl_device])
    return ctx


def devices() -> list[Device]:
    """Every OpenCL device found, in ember's order (see the module docstring). Raises a
    RuntimeError saying why when pyopencl or an OpenCL platform is missing."""
    global _devices, _probe_error
    if _devices is not None:
        return _devices
    with _lock:
        if _devices is not None:
            return _devices
        if _probe_error is not None:
            raise RuntimeError(_probe_error)
        try:
            found = _discover()
        except RuntimeError as err:
            _probe_error = str(err)
            raise
        _devices = found
        return found


def _discover() -> list[Device]:
    try:
        cl_ = cl()
    except Exception as err:
        raise RuntimeError(f"pyopencl is not installed or failed to import "
                           f"({type(err).__name__}: {err}); pip install 'ember[opencl]' "
                           "(or pip install 'pyopencl[pocl]' for a CPU OpenCL)") from None
    try:
        platforms = cl_.get_platforms()
    except Exception as err:
        raise RuntimeError(f"no OpenCL platform found ({type(err).__name__}: {err}); "
                           "install an OpenCL driver, or pip install pocl-binary-"
                           "distribution for a CPU one") from None
    pairs = []
    for p in platforms:
        try:
            pairs.extend((p, d) for d in p.get_devices())
        except Exception:  # a platform with no devices raises DEVICE_NOT_FOUND
            continue
    if not pairs:
        raise RuntimeError("no OpenCL device found on the OpenCL platforms "
                           f"({', '.join(p.name for p in platforms) or 'none'})")
    choice = os.environ.get("EMBER_OPENCL_DEVICE", "").strip()
    if choice:
        if not choice.isdigit() or int(choice) >= len(pairs):
            raise RuntimeError(f"EMBER_OPENCL_DEVICE={choice!r} is not the index of one of "
                               f"the {len(pairs)} OpenCL device(s) found")
        k = int(choice)
        pairs = [pairs[k]] + pairs[:k] + pairs[k + 1:]
    return [Device(i, d, p) for i, (p, d) in enumerate(pairs)]


_exit_hook_installed = False


def _finish_at_exit() -> None:
    """At interpreter exit, wait for every queue's work before Python tears down: work
    still running in the driver's threads (PoCL's) while the process unwinds can crash it
    (a segfault after the program's last line, seen rarely with PoCL)."""
    global _exit_hook_installed
    if _exit_hook_installed:
        return
    _exit_hook_installed = True
    import atexit

    def finish_all() -> None:
        for dev in list(_devices or []):
            try:
                if dev.queue is not None:
                    dev.queue.finish()
                dev.pending.clear()
            except Exception:  # noqa: S110 - a device already lost: nothing to wait for
                pass
    atexit.register(finish_all)


def initialized() -> bool:
    """Whether this process has created an OpenCL context (and so the driver's threads
    and locks that a fork() does not copy)."""
    return any(d.queue is not None for d in _devices or [])


def known_devices() -> list[Device]:
    """The devices discovered so far (none before the first device query)."""
    return list(_devices or [])


def device(index: int) -> Device:
    devs = devices()
    if not 0 <= index < len(devs):
        raise RuntimeError(f"device 'opencl:{index}' does not exist: opencl has "
                           f"{len(devs)} device(s)")
    return devs[index].ensure()

