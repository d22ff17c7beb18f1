"""`ember.Event` and `ember.Stream` (torch.Event, torch.Stream): the device-generic event
and stream of PyTorch's accelerator API.

A host device runs every op before it returns, so there is nothing on the CPU for an
event to mark or a stream to order: as PyTorch's, recording an event raises (`cpu backend
doesn't support events.`), and querying, synchronizing and waiting return at once. The
CUDA backend's own events and streams are `ember.cuda.Event` and `ember.cuda.Stream`.
"""

from __future__ import annotations

from typing import Any

from ember.core import dtype as _dtypes
from ember.core.device import device as _device


@_dtypes.printed_in_api()
class Event:
    """An event on `device` (the current accelerator's, or the CPU's when there is none).

    Args:
        device: the event's device.
        enable_timing: whether the event can measure time (`elapsed_time`).
        blocking: whether `wait` blocks (not supported: ignored, as in PyTorch).
        interprocess: whether the event can be shared between processes (ignored).
    """

    def __init__(self, device: Any = None, *, enable_timing: bool = False,
                 blocking: bool = False, interprocess: bool = False) -> None:
        if device is None:
            from ember.accelerator import current_accelerator

            device = current_accelerator() or "cpu"
        self.device = _device(device)
        if self.device.type == "cpu":  # (one host device: PyTorch's has no index)
            self.device = _device("cpu")
        self._timing = bool(enable_timing)
        self._recorded = False
        self.event_id = 0

    def record(self, stream: Any = None) -> None:
        """Record the event in `stream` (the device's current stream)."""
        raise RuntimeError(f"{self.device.type} backend doesn't support events.")

    def query(self) -> bool:
        """Whether the work the event marks is done: always, on a host device."""
        return True

    def synchronize(self) -> None:
        """Wait for the work the event marks: done already, on a host device."""

    def wait(self, stream: Any = None) -> None:
        """Make `stream` wait for the event: nothing to wait for, on a host device."""

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds between this event and `end_event`, both recorded with
        `enable_timing=True`."""
        if not (self._timing and end_event._timing):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        if not (self._recorded and end_event._recorded):
            raise ValueError("Both events must be recorded before calculating elapsed time.")
        raise RuntimeError(f"{self.device.type} backend doesn't support events.")

    def ipc_handle(self) -> Any:
        """A handle to share the event with another process (not supported)."""
        raise NotImplementedError("torch.Event ipc is not supported yet, please open an "
                                  "issue if you need this!")

    @classmethod
    def from_ipc_handle(cls, device: Any, ipc_handle: Any) -> Event:
        """The event another process shared (not supported)."""
        raise NotImplementedError("torch.Event ipc is not supported yet, please open an "
                                  "issue if you need this!")

    def __repr__(self) -> str:
        index = -1 if self.device.index is None else self.device.index
        # (`event_flag`: PyTorch's EventFlag, 1 for a timing event)
        return (f"{_dtypes.API_NAME}.Event device_type={self.device.type}, device_index="
                f"{index}, event_flag={int(self._timing)}, event_id={self.event_id}")


# c10's DeviceType codes, as `Stream.device_type` gives them
_DEVICE_TYPES = {"cpu": 0, "cuda": 1, "opencl": 4, "xpu": 12, "mps": 13, "meta": 14,
                 "mtia": 19}
_PRIVATE_USE = 20


@_dtypes.printed_in_api()
class Stream:
    """A stream on `device` (the current accelerator's, or the CPU's when there is none):
    the work queued on it runs in order. On the CPU every op has run when it returns, so
    the stream is a formality that device-generic code can use.

    Args:
        device: the stream's device (a device, a string, or an index of the current
            accelerator's devices).
        priority: the stream's priority (ignored: one host stream).
    """

    def __init__(self, device: Any = None, *, priority: int = 0) -> None:
        from ember import accelerator

        if device is None:
            device = accelerator.current_accelerator() or "cpu"
        elif isinstance(device, int) and not isinstance(device, bool):
            accelerator.current_device_index()  # (raises PyTorch's error without one)
            device = _device(accelerator.current_accelerator().type, device)
        self.device = _device(device)
        if self.device.type == "cpu":  # (one host device: PyTorch's has no index)
            self.device = _device("cpu")
        elif self.device.type not in (b.name for b in _available()):
            raise RuntimeError(f"PyTorch is not linked with support for {self.device.type} "
                               "devices")
        self.priority = priority
        self.stream_id = 0

    @property
    def device_type(self) -> int:
        """The device's type as c10's DeviceType code (0 for the CPU)."""
        return _DEVICE_TYPES.get(self.device.type, _PRIVATE_USE)

    @property
    def device_index(self) -> int:
        """The device's index (-1 for the CPU)."""
        return -1 if self.device.index is None else self.device.index

    @property
    def native_handle(self) -> Any:
        raise RuntimeError("Backend doesn't support getting stream native handle.")

    def query(self) -> bool:
        """Whether all work queued on the stream is done."""
        if self.device.type != "cpu":
            self.synchronize()
        return True

    def synchronize(self) -> None:
        """Wait for all work queued on the stream."""
        if self.device.type != "cpu":
            from ember import accelerator

            accelerator.synchronize(self.device)

    def is_capturing(self) -> bool:
        """Whether the stream is capturing a graph: never."""
        return False

    def record_event(self, event: Event | None = None) -> Event:
        """Record an event (`event`, or a new one) marking the work queued so far."""
        event = Event(self.device) if event is None else event
        event.record(self)
        return event

    def wait_event(self, event: Event) -> None:
        """Make later work on the stream wait for `event`: nothing to wait for when the
        device runs ops as they are called."""

    def wait_stream(self, stream: Stream) -> None:
        """Make later work on the stream wait for the work queued on `stream`."""
        self.wait_event(stream.record_event())

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: Any) -> bool:
        return False

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream) and (other.device, other.stream_id) == \
            (self.device, self.stream_id)

    def __hash__(self) -> int:
        return hash((self.device, self.stream_id))

    def __repr__(self) -> str:
        return (f"{_dtypes.API_NAME}.Stream device_type={self.device.type}, device_index="
                f"{self.device_index}, stream_id={self.stream_id}")


def _available() -> list:
    from ember.core import scheduler

    return scheduler.available_backends()
