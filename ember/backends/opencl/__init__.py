"""The OpenCL backend (on pyopencl): every primitive op as an OpenCL C kernel, on any
OpenCL device (GPUs, and CPUs through PoCL: ``pip install 'pyopencl[pocl]'``).

Importing this module imports no pyopencl: pyopencl is imported, devices are listed and
contexts are created on first use.

Devices: ``opencl:0`` .. ``opencl:N-1`` cover every device of every OpenCL platform, in
the ICD loader's platform order and each platform's device order. ``EMBER_OPENCL_DEVICE=k``
makes device ``k`` of that order ``opencl:0`` (the one ``"opencl"`` means), the others
following in their order. dtypes: all of ember's; float16 and bfloat16 are stored in 16
bits and computed in float32 (so they need no cl_khr_fp16); float64 needs cl_khr_fp64, and
a device without it refuses float64 with a RuntimeError naming the op and the device.

Layout: buffer.py (the strided `CLBuffer` and NumPy's view rules), runtime.py (devices,
one context per platform, one in-order queue and memory pool per device, the program
cache), cache.py (compiled binaries on disk), sources.py (the OpenCL C, generated from
templates: one program per dtype holds every dtype-specific kernel, each family of
elementwise ops is one kernel switching on the op), kernels.py (the dispatch table).

Switches: ``EMBER_OPENCL_CACHE=0|1`` and ``EMBER_OPENCL_CACHE_DIR`` (the binary cache, see
cache.py); ``EMBER_OPENCL_TUNING=gpu|cpu`` (launch shapes: by default GPU shapes on GPUs,
CPU shapes on CPU devices such as PoCL); ``EMBER_OPENCL_MATMUL=tiled|packed|rows`` (matmul
with local-memory tiles, the GPU default; with packed panels and register tiles, the CPU
default, which takes the rows kernel for small products; or by rows).

Profiling: while `ember.profiler` times devices, each device's work goes to a second
in-order queue created with profiling enabled, and every kernel launch is listed with its
event, so the profiler reads each kernel's start and end from the device (runtime.py).
"""

from __future__ import annotations

import functools
import os
import sys
import weakref
from typing import Any

from ember.backends.opencl import fusion
from ember.core.backend import (
    ALL_DTYPES,
    Backend,
    DeviceActivity,
    DeviceInfo,
    ElementwiseChain,
    dtype,
    float16,
    hookimpl,
)


class OpenCLBackend(Backend):
    """Tensors in OpenCL device memory (`CLBuffer`: a pooled buffer plus a strided view)."""

    name = "opencl"
    priority = 50
    autocast_dtype = float16  # OpenCL's half type (cl_khr_fp16 where the device has it)

    @property
    def is_accelerator(self) -> bool:
        """Whether device="auto" may pick OpenCL: only with a device that is not a CPU
        (PoCL on the host's own cores loses to the CPU backend's BLAS)."""
        if self.unavailable_reason() is not None:
            return False
        from ember.backends.opencl import runtime

        return any(not dev.is_cpu for dev in runtime.devices())

    fusible_ops = fusion.FUSIBLE

    def __init__(self) -> None:
        super().__init__()
        self._reason: str | None = None
        self._probed = False
        self._dtypes: frozenset[dtype] | None = None
        self._forked = False
        self.kernels.update(_kernel_table())
        after_fork = weakref.WeakMethod(self._after_fork_in_child)
        os.register_at_fork(after_in_child=lambda: (after_fork() or (lambda: None))())

    # -- fork ---------------------------------------------------------------------------
    def _after_fork_in_child(self) -> None:
        """A child forked after the parent created an OpenCL context inherits the
        context's handles but not the driver's threads: its first kernel would wait
        forever (a DataLoader worker indexing an OpenCL dataset hung so). As PyTorch does
        for CUDA, every OpenCL use in such a child raises instead."""
        from ember.backends.opencl import runtime

        if not runtime.initialized():
            return  # nothing was created: the child may start OpenCL afresh
        self._forked = True
        self._reason, self._probed = FORKED_MESSAGE, True
        self.kernels.update({name: _forked_kernel for name in self.kernels})

    def _check_fork(self) -> None:
        if self._forked:
            raise RuntimeError(FORKED_MESSAGE)

    # -- availability -------------------------------------------------------------------
    def unavailable_reason(self) -> str | None:
        if not self._probed:
            from ember.backends.opencl import runtime

            try:
                runtime.devices()
                self._reason = None
            except RuntimeError as err:
                self._reason = str(err)
            except Exception as err:  # a broken driver must not take ember down
                self._reason = f"OpenCL probe failed ({type(err).__name__}: {err})"
            self._probed = True
        return self._reason

    def device_count(self) -> int:
        if self.unavailable_reason() is not None:
            return 0
        from ember.backends.opencl import runtime

        return len(runtime.devices())

    def device_info(self, index: int) -> DeviceInfo:
        from ember.backends.opencl import runtime

        dev = runtime.devices()[index]
        d = dev.cl_device
        clock = int(getattr(d, "max_clock_frequency", 0) or 0)
        details: dict[str, Any] = {
            "platform": dev.platform_name, "platform version": dev.platform.version.strip(),
            "device version": d.version.strip(), "driver": d.driver_version.strip(),
            "type": "CPU" if dev.is_cpu else "GPU" if "GPU" in
            runtime.cl().device_type.to_string(d.type) else
            runtime.cl().device_type.to_string(d.type),
            "max clock MHz": clock, "max work-group size": dev.max_wg,
            "local memory bytes": dev.local_mem, "max allocation bytes": dev.max_alloc,
            "fp64": dev.fp64, "fp16 (cl_khr_fp16)": dev.fp16,
        }
        return DeviceInfo(name=dev.name, memory_bytes=dev.global_mem,
                          compute_units=dev.compute_units, details=details)

    @property
    def dtypes(self) -> frozenset[dtype]:  # type: ignore[override]
        """The dtypes every OpenCL device here can hold (float64 only with cl_khr_fp64)."""
        if self._dtypes is None:
            if self.unavailable_reason() is not None:
                return frozenset(ALL_DTYPES)
            from ember.backends.opencl import runtime

            fp64 = all(d.fp64 for d in runtime.devices())
            self._dtypes = frozenset(d for d in ALL_DTYPES if fp64 or d.name != "float64")
        return self._dtypes

    @dtypes.setter
    def dtypes(self, value: frozenset[dtype]) -> None:
        pass  # decided by the devices (Backend.__init__ sets a default)

    # -- memory -------------------------------------------------------------------------
    def empty(self, shape: tuple[int, ...], dtype: dtype, device: int) -> Any:
        self._check_fork()
        from ember.backends.opencl import kernels, runtime

        return kernels.empty(runtime.device(device), tuple(shape), dtype)

    def from_numpy(self, array: Any, device: int) -> Any:
        self._check_fork()
        from ember.backends.opencl import kernels, runtime

        return kernels.from_numpy(array, runtime.device(device))

    def to_numpy(self, buffer: Any) -> Any:
        self._check_fork()
        from ember.backends.opencl import kernels

        return kernels.to_numpy(buffer)

    def to_device(self, buffer: Any, device: int) -> Any:
        self._check_fork()
        from ember.backends.opencl import kernels, runtime

        return kernels.to_device(buffer, runtime.device(device))

    def owns(self, buffer: Any) -> bool:
        """Whether no other buffer views `buffer`'s memory and it covers that memory from
        its start: autograd then keeps a fresh gradient as `.grad` without a copy (the
        memory object is referenced by this buffer alone, and getrefcount's argument)."""
        return buffer.offset == 0 and sys.getrefcount(buffer.mem) <= 2 and \
            buffer.is_contiguous()

    def buffer_device(self, buffer: Any) -> int:
        return buffer.dev.index

    def is_contiguous(self, buffer: Any) -> bool:
        return buffer.is_contiguous()

    def strides(self, buffer: Any) -> tuple[int, ...]:
        return tuple(buffer.strides)

    def storage_offset(self, buffer: Any) -> int:
        return buffer.offset

    def data_ptr(self, buffer: Any) -> int:
        return buffer.mem.int_ptr + buffer.offset * buffer.dtype.itemsize

    def fuse_elementwise(self, chain: ElementwiseChain) -> Any | None:
        return fusion.fuse(chain)

    # -- execution ----------------------------------------------------------------------
    def manual_seed(self, seed: int) -> None:
        from ember.backends.opencl import kernels

        kernels.manual_seed(seed)

    def synchronize(self, device: int | None = None) -> None:
        if self._forked:
            return  # a forked child queued nothing (and its queues cannot finish)
        from ember.backends.opencl import runtime

        devs = runtime.known_devices()
        for dev in devs if device is None else [devs[device]] if devs else []:
            dev.finish()


    # -- device timing (ember.profiler) ------------------------------------------------
    def start_device_timing(self) -> bool:
        from ember.backends.opencl import runtime

        runtime.start_timing()  # devices not used yet start timing on first use
        return True

    def device_activities(self) -> list[DeviceActivity]:
        from ember.backends.opencl import runtime

        return [DeviceActivity(name, index, functools.partial(runtime.event_times, event,
                                                              queued))
                for index, name, event, queued in runtime.take_launches()]

    def stop_device_timing(self) -> None:
        from ember.backends.opencl import runtime

        runtime.stop_timing()


FORKED_MESSAGE = (
    "Cannot use OpenCL in a forked subprocess: the parent process had created its OpenCL "
    "context before fork(). To use OpenCL with multiprocessing (e.g. DataLoader workers "
    "that touch OpenCL tensors), you must use the 'spawn' or 'forkserver' start method "
    "(DataLoader(..., multiprocessing_context='spawn')), or keep the dataset on the CPU.")


def _forked_kernel(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError(FORKED_MESSAGE)


def _kernel_table() -> dict[str, Any]:
    # kernels.py is plain Python (its OpenCL sources compile on first use)
    from ember.backends.opencl import host, kernels

    return dict(kernels.TABLE, **host.KERNELS)


@hookimpl
def ember_backends():
    return [OpenCLBackend]
