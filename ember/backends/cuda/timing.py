"""Device timing for ember.profiler on CuPy: CUDA events recorded on each device's
current stream, timed by the GPU.

CuPy has no per-kernel launch callback (PyTorch reads those from CUPTI), so the unit is
the stretch of work queued between two of the profiler's calls — the profiler calls
`take()` on entering and leaving every op, so each op's device work is timed as one
activity, named after the op. The profiler keeps a stretch only where an op ran on a
CUDA device in it (host-only ops and ranges record no device events, as in PyTorch).

Clocks: when timing starts, each device is synchronized and an origin event recorded,
with the host's perf_counter_ns beside it; every later time is the origin's host time
plus the GPU's elapsed time since the origin event.

Exercised by tests/test_profiler.py and tests/test_cuda.py on a GPU machine only: it uses
`cupy.cuda.Event`, `Event.record`, `Event.synchronize` and `cupy.cuda.get_elapsed_time`.
"""

from __future__ import annotations

import functools
import time
from typing import Any

from ember.core.backend import DeviceActivity


class Timer:
    """Marks each device's stream at every `take()`; an activity spans two marks."""

    def __init__(self) -> None:
        import cupy

        self.cupy = cupy
        self.origins: dict[int, tuple[Any, int]] = {}  # device -> (event, host ns)
        self.last: dict[int, Any] = {}  # device -> the event of the last mark
        for dev in range(cupy.cuda.runtime.getDeviceCount()):
            with cupy.cuda.Device(dev):
                cupy.cuda.runtime.deviceSynchronize()
                event = cupy.cuda.Event()
                event.record()
                event.synchronize()  # the device is idle: the event's time is now
                self.origins[dev] = (event, time.perf_counter_ns())
                self.last[dev] = event

    def take(self) -> list[DeviceActivity]:
        """The work queued on the current device since the last call, as one activity."""
        dev = self.cupy.cuda.runtime.getDevice()
        if dev not in self.origins:
            return []
        event = self.cupy.cuda.Event()
        event.record()  # on the current stream
        prev, self.last[dev] = self.last[dev], event
        return [DeviceActivity(None, dev, functools.partial(self._times, dev, prev, event))]

    def _times(self, dev: int, start: Any, end: Any) -> tuple[int, int]:
        end.synchronize()
        origin, host = self.origins[dev]
        elapsed = self.cupy.cuda.get_elapsed_time  # milliseconds
        return (host + int(elapsed(origin, start) * 1e6),
                host + int(elapsed(origin, end) * 1e6))
