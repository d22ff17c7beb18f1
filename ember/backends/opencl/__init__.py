"""The OpenCL backend (on pyopencl): its plugin entry.

Importing this module never imports pyopencl; the backend probes for pyopencl and an
OpenCL platform only when asked whether it is available. Its kernels are not written
yet, so it reports itself unavailable, with the reason, everywhere.
"""

from __future__ import annotations

from ember.core.backend import Backend, DeviceInfo, hookimpl


class OpenCLBackend(Backend):
    name = "opencl"
    priority = 50
    is_accelerator = True

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
        return 0

    def device_info(self, index: int) -> DeviceInfo:
        return DeviceInfo(name=f"OpenCL device {index}")


def _probe() -> str | None:
    try:
        import pyopencl as cl
    except Exception as err:
        return (f"pyopencl is not installed or failed to import ({type(err).__name__}: "
                f"{err}); pip install 'ember[opencl]'")
    try:
        devices = [d for p in cl.get_platforms() for d in p.get_devices()]
    except Exception as err:
        return f"no OpenCL platform found ({type(err).__name__}: {err})"
    if not devices:
        return "no OpenCL device found"
    return "the OpenCL kernels are not implemented yet in this version of ember"


@hookimpl
def ember_backends():
    return [OpenCLBackend]
