"""`ember.Event` (torch.Event): the device-generic event of PyTorch's accelerator API.

A host device runs every op before it returns, so there is nothing on the CPU for an
event to mark: as PyTorch's, recording one raises (`cpu backend doesn't support
events.`), and querying, synchronizing and waiting return at once. The CUDA backend's
own events are `ember.cuda.Event`.
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
