"""`profile_memory`: the bytes each op allocates, and frees, on the host and on devices.

An op's allocation is the storage of each tensor it returns that is new: not a view of
another tensor (views share their base's storage), not one of its inputs (in-place ops
return their input), not sharing an input's buffer, not already counted (a composite
returns what the op inside it made: the inner op allocated it). Each such buffer gets a
finalizer, so its release is recorded too (as negative bytes, given to the op running when
it happens, as PyTorch does): an op's "Self CPU Mem" can be negative. Memory a kernel uses only
inside itself (scratch buffers) is not seen; a composite's temporaries are, through the
ops it calls. Finalizers are detached when the profile stops.
"""

from __future__ import annotations

import math
import time
import weakref
from collections.abc import Callable
from typing import Any

from ember.core.tensor import Tensor


class MemoryRecord:
    """One allocation (bytes > 0) or release (bytes < 0): a `[memory]` trace event."""

    __slots__ = ("ns", "bytes", "total", "device", "tid")

    def __init__(self, ns: int, nbytes: int, total: int, device: str, tid: int) -> None:
        self.ns = ns
        self.bytes = nbytes
        self.total = total
        self.device = device
        self.tid = tid


def _tensors(value: Any) -> list[Tensor]:
    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [v for v in value if isinstance(v, Tensor)]
    return []


class MemoryTracker:
    """Counts allocations and releases for one profile.

    `current()` gives the innermost open range of the calling thread (or None), which a
    release is charged to; `tid()` the calling thread's id.
    """

    def __init__(self, current: Callable[[], Any], tid: Callable[[], int]) -> None:
        self.current = current
        self.tid = tid
        self.records: list[MemoryRecord] = []
        self.totals: dict[str, int] = {}
        self.live: dict[int, weakref.finalize] = {}  # id of a counted buffer alive
        self.active = True

    def outputs(self, frame: Any, result: Any, args: tuple, kwargs: dict) -> None:
        """Count the new tensors among `result` as allocated by `frame`'s op."""
        outs = _tensors(result)
        if not outs:
            return
        inputs = [a for a in (*args, *kwargs.values()) if isinstance(a, Tensor)]
        for t in outs:
            data = t._data
            if t._base is not None or id(data) in self.live or \
                    any(t is a or data is a._data for a in inputs):
                continue  # a view, an input, or what an op inside this one made
            nbytes = math.prod(data.shape) * t._dtype.itemsize
            if not nbytes:
                continue
            device = str(t._device)
            self._count(frame, nbytes, device)
            try:
                fin = weakref.finalize(data, self._released, id(data), nbytes, device)
            except TypeError:  # a backend buffer without weak references: no release
                continue
            fin.atexit = False
            self.live[id(data)] = fin

    def _count(self, frame: Any, nbytes: int, device: str) -> None:
        total = self.totals.get(device, 0) + nbytes
        self.totals[device] = total
        if frame is not None:
            if device == "cpu":
                frame.cpu_mem += nbytes
            else:
                frame.dev_mem += nbytes
        self.records.append(MemoryRecord(time.perf_counter_ns(), nbytes, total, device,
                                         self.tid()))

    def _released(self, key: int, nbytes: int, device: str) -> None:
        # runs whenever the buffer dies: in any op, any thread (never after stop())
        self.live.pop(key, None)
        if self.active:
            self._count(self.current(), -nbytes, device)

    def stop(self) -> None:
        """Stop counting, and drop the finalizers of buffers still alive."""
        self.active = False
        for fin in list(self.live.values()):
            fin.detach()
        self.live.clear()
