"""The CUDA backend (on CuPy): its plugin entry, and `ember.backends.cuda` as
`torch.backends.cuda` (`matmul.allow_tf32`, `is_built()`).

Importing this module never imports CuPy: the backend probes for CuPy and a GPU when first
asked whether it is available, and only then loads its kernels (kernels.py) and runtime
(runtime.py: devices, the memory pool, streams and events). Buffers are CuPy arrays, so
views are native. Kernels are queued on the current stream and not waited on; reading a
value (`to_numpy`, CuPy's `.get()`) waits.

NCCL collectives (for ember.distributed) belong here, as an optional `collectives`
capability of this backend; they are not written yet.
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

from ember.backends.cuda import fusion
from ember.backends.cuda.flags import (  # noqa: F401 - torch.backends.cuda's switches
    cudnn_sdp_enabled,
    enable_cudnn_sdp,
    enable_flash_sdp,
    enable_math_sdp,
    enable_mem_efficient_sdp,
    flash_sdp_enabled,
    is_flash_attention_available,
    math_sdp_enabled,
    matmul,
    mem_efficient_sdp_enabled,
    sdp_kernel,
)
from ember.core.backend import (
    EVERY_DTYPE,
    Backend,
    DeviceInfo,
    ElementwiseChain,
    dtype,
    float16,
    hookimpl,
    numpy_dtype,
)


def is_built() -> bool:
    """Whether ember can use CUDA here at all: CuPy is installed (as
    `torch.backends.cuda.is_built()`, whether PyTorch was built with CUDA)."""
    if "cupy" in sys.modules:
        return sys.modules["cupy"] is not None  # None: imports of it are blocked
    try:
        return importlib.util.find_spec("cupy") is not None
    except (ImportError, ValueError):
        return False


class CUDABackend(Backend):
    name = "cuda"
    priority = 100
    is_accelerator = True
    autocast_dtype = float16  # PyTorch's CUDA autocast default
    fusible_ops = fusion.FUSIBLE

    def __init__(self) -> None:
        super().__init__()
        self._reason: str | None = None
        self._probed = False
        self._seed: int | None = None
        self._k: Any = None  # kernels.py, once CUDA is known to work
        self._rt: Any = None  # runtime.py
        # bfloat16: CuPy 14's, ml_dtypes.bfloat16; complex: the shared xp kernels'
        self.dtypes = frozenset(EVERY_DTYPE)

    # -- availability -------------------------------------------------------------------
    def unavailable_reason(self) -> str | None:
        if not self._probed:
            self._probed = True
            self._reason = _probe()
            if self._reason is None:
                self._load()
        return self._reason

    def is_built(self) -> bool:
        return is_built()

    def _load(self) -> None:
        from ember.backends.cuda import kernels, runtime

        self._rt, self._k = runtime, kernels
        runtime.allocator()  # CuPy allocates through ember's pool statistics from now on
        table = kernels.KERNELS
        if runtime.device_count() > 1:
            table = kernels.guard_devices(table)
        for name, kernel in table.items():  # another plugin's overrides stay
            self.kernels.setdefault(name, kernel)
        if self._seed is not None:
            kernels.generators.manual_seed(self._seed)

    def device_count(self) -> int:
        return 0 if self.unavailable_reason() else self._rt.device_count()

    def device_info(self, index: int) -> DeviceInfo:
        if self.unavailable_reason():
            return DeviceInfo(name=f"CUDA device {index}")
        p = self._rt.properties(index)
        return DeviceInfo(
            name=p["name"], memory_bytes=int(p.get("totalGlobalMem", 0)) or None,
            compute_units=p.get("multiProcessorCount"),
            details={"compute capability": f"{p.get('major')}.{p.get('minor')}",
                     "CuPy": sys.modules["cupy"].__version__})

    # -- devices (ember.cuda) -----------------------------------------------------------
    @property
    def initialized(self) -> bool:
        """Whether CUDA is in use in this process (the probe found a device)."""
        return self._rt is not None

    def initial_seed(self) -> int:
        return 0 if self._seed is None else self._seed

    def current_device(self) -> int:
        return self._rt.current_device() if self._rt is not None else 0

    def set_device(self, index: int) -> None:
        self._rt.set_device(index)

    def device_context(self, index: int) -> Any:
        """A context manager that makes `index` the current device."""
        return self._rt.device(index)

    def device_properties(self, index: int) -> dict[str, Any]:
        return self._rt.properties(index)

    # -- memory -------------------------------------------------------------------------
    def empty(self, shape: tuple[int, ...], dtype: dtype, device: int) -> Any:
        import cupy

        with self._rt.device(device):
            return cupy.empty(shape, numpy_dtype(dtype))

    def from_numpy(self, array: Any, device: int) -> Any:
        import cupy

        with self._rt.device(device):
            return cupy.asarray(array)

    def from_host_async(self, array: Any, device: int) -> Any:
        """A copy of a host array queued on the current stream, not waited on (from pinned
        memory the copy overlaps other work: `non_blocking=True`)."""
        import cupy

        if not array.flags.c_contiguous:
            return None  # CuPy's set() copies dense host memory only: from_numpy instead
        with self._rt.device(device):
            out = cupy.empty(array.shape, array.dtype)
            out.set(array, stream=cupy.cuda.get_current_stream())
            self._rt.keep_until_done(array)
            return out

    def to_numpy(self, buffer: Any) -> Any:
        return buffer.get()  # waits for the work queued on the current stream

    def to_device(self, buffer: Any, device: int) -> Any:
        if buffer.device.id == device:
            return buffer
        with self._rt.device(device):
            return buffer.copy()  # CuPy copies to the current device (peer to peer)

    def owns(self, buffer: Any) -> bool:
        return buffer.base is None

    def buffer_device(self, buffer: Any) -> int:
        return buffer.device.id

    def is_contiguous(self, buffer: Any) -> bool:
        return buffer.flags.c_contiguous

    def strides(self, buffer: Any) -> tuple[int, ...]:
        return tuple(s // buffer.itemsize for s in buffer.strides)

    def storage_offset(self, buffer: Any) -> int:
        return (buffer.data.ptr - buffer.data.mem.ptr) // buffer.itemsize

    def data_ptr(self, buffer: Any) -> int:
        return buffer.data.ptr

    def fuse_elementwise(self, chain: ElementwiseChain) -> Any | None:
        return fusion.fuse(chain)

    def memory_stats(self, device: int) -> dict[str, int]:
        return self._rt.allocator().memory_stats(device)

    def reset_peak_memory_stats(self, device: int) -> None:
        self._rt.allocator().reset_peak(device)

    def empty_cache(self) -> None:
        self._rt.allocator().empty_cache()

    def mem_get_info(self, device: int) -> tuple[int, int]:
        return self._rt.mem_get_info(device)

    def pin_memory(self, array: Any) -> Any:
        """A copy of a NumPy array in page-locked host memory (CuPy's pinned pool)."""
        import cupyx

        out = cupyx.empty_pinned(array.shape, array.dtype)
        out[...] = array
        return out

    def is_pinned(self, array: Any) -> bool:
        import cupy

        base = array
        while base is not None and not isinstance(base, cupy.cuda.PinnedMemoryPointer):
            base = getattr(base, "base", None)
        return base is not None

    # -- execution ------------------------------------------------------------------------
    def manual_seed(self, seed: int) -> None:
        self._seed = int(seed)  # applied when the kernels load: seeding never imports CuPy
        if self._k is not None:
            self._k.generators.manual_seed(self._seed)

    def synchronize(self, device: int | None = None) -> None:
        self._rt.synchronize(device)

    # streams and events: CuPy's Stream and Event objects (ember.cuda wraps them)
    def new_stream(self, device: int, priority: int = 0) -> Any:
        return self._rt.new_stream(device, priority)

    def current_stream(self, device: int) -> Any:
        return self._rt.current_stream(device)

    def default_stream(self, device: int) -> Any:
        return self._rt.default_stream(device)

    def new_event(self, enable_timing: bool = False, blocking: bool = False,
                  interprocess: bool = False) -> Any:
        return self._rt.new_event(enable_timing, blocking, interprocess)

    def elapsed_time(self, start: Any, end: Any) -> float:
        return self._rt.elapsed_ms(start, end)

    # -- DLPack ---------------------------------------------------------------------------
    def from_dlpack(self, obj: Any) -> Any:
        """A CuPy array sharing the memory of a DLPack producer on a CUDA device."""
        import cupy

        return cupy.from_dlpack(obj)

    # -- device timing (ember.profiler; see timing.py) -----------------------------------
    def start_device_timing(self) -> bool:
        # CUDA work needs CuPy imported: without it there is nothing to time (and the
        # profiler must not import CuPy, which is slow, on machines that do not use it)
        if "cupy" not in sys.modules:
            return False
        try:
            from ember.backends.cuda import timing

            self._timer = timing.Timer()
        except Exception:  # no GPU, or a CuPy built for another CUDA
            self._timer = None
            return False
        return True

    def device_activities(self) -> list:
        timer = getattr(self, "_timer", None)
        return timer.take() if timer is not None else []

    def stop_device_timing(self) -> None:
        self._timer = None


def _probe() -> str | None:
    try:
        import cupy  # noqa: F401
    except Exception as err:  # ImportError, or a CuPy built for another CUDA
        return (f"CuPy is not installed or failed to import ({type(err).__name__}: {err}); "
                "pip install 'ember[cuda12]' or 'ember[cuda13]'")
    try:
        count = _gpu_count()
    except Exception as err:  # CUDARuntimeError on a machine without a GPU or driver
        return f"no usable CUDA device ({type(err).__name__}: {err})"
    if count == 0:
        return "no CUDA device found"
    return None


def _gpu_count() -> int:
    import cupy

    return int(cupy.cuda.runtime.getDeviceCount())


@hookimpl
def ember_backends():
    return [CUDABackend]
