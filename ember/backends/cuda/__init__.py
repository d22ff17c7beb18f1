"""The CUDA backend (on CuPy): its plugin entry.

Importing this module never imports CuPy; the backend probes for CuPy and a GPU only when
asked whether it is available. Its kernels are not written yet, so it reports itself
unavailable, with the reason, everywhere.
"""

from __future__ import annotations

import sys

from ember.core.backend import Backend, DeviceInfo, float16, hookimpl


class CUDABackend(Backend):
    name = "cuda"
    priority = 100
    is_accelerator = True
    autocast_dtype = float16  # PyTorch's CUDA autocast default

    def __init__(self) -> None:
        super().__init__()
        self._reason: str | None = None
        self._probed = False

    def unavailable_reason(self) -> str | None:
        if not self._probed:
            self._probed = True
            self._reason = _probe()
        return self._reason

    def device_count(self) -> int:
        return 0 if self.unavailable_reason() else _gpu_count()

    def device_info(self, index: int) -> DeviceInfo:
        return DeviceInfo(name=f"CUDA device {index}")

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
    return "the CUDA kernels are not implemented yet in this version of ember"


def _gpu_count() -> int:
    import cupy

    return int(cupy.cuda.runtime.getDeviceCount())


@hookimpl
def ember_backends():
    return [CUDABackend]
