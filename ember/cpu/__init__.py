"""`ember.cpu`, as `torch.cpu`: the names of `torch.cuda` for the CPU, so device-generic
code runs there (streams and events that order nothing: the CPU runs each op as it is
called), and `ember.cpu.amp` (autocast and GradScaler on the CPU)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from ember.core.backend import api_name
from ember.core.dtype import printed_in_api

__all__ = ["is_available", "is_initialized", "synchronize", "current_device",
           "current_stream", "stream", "set_device", "device_count", "Stream",
           "StreamContext", "Event"]


def is_available() -> bool:
    """The CPU is always available."""
    return True


def is_initialized() -> bool:
    """The CPU needs no initialization: always True."""
    return True


def device_count() -> int:
    return 1


def current_device() -> str:
    """The CPU's device name, `"cpu"`."""
    return "cpu"


def set_device(device: Any) -> None:
    """Nothing to select: there is one CPU device."""


def synchronize(device: object = None) -> None:
    """The CPU runs ops as they are called: nothing to wait for."""


@printed_in_api(".cpu")
class Stream:
    """
    N.B. This class only exists to facilitate device-agnostic code
    """

    def __init__(self, priority: int = -1) -> None:
        pass

    def wait_stream(self, stream: Any) -> None:
        pass

    def record_event(self) -> None:
        pass

    def wait_event(self, event: Any) -> None:
        pass


@printed_in_api(".cpu")
class Event:
    """An event of the CPU: every op has run when it returns, so it is always done."""

    def query(self) -> bool:
        return True

    def record(self, stream: Any = None) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def wait(self, stream: Any = None) -> None:
        pass


_default_cpu_stream = Stream()
_current_stream = _default_cpu_stream


def current_stream(device: Any = None) -> Stream:
    """Returns the currently selected :class:`Stream` for a given device (`device` is
    ignored)."""
    return _current_stream


@printed_in_api(".cpu")
class StreamContext(AbstractContextManager):
    """Context-manager that selects a given stream (N.B. This class only exists to
    facilitate device-agnostic code)."""

    def __init__(self, stream: Stream | None) -> None:
        self.stream = stream
        self.prev_stream = _default_cpu_stream

    def __enter__(self) -> None:
        global _current_stream
        if self.stream is None:
            return
        self.prev_stream = _current_stream
        _current_stream = self.stream

    def __exit__(self, *exc: Any) -> None:
        global _current_stream
        if self.stream is None:
            return
        _current_stream = self.prev_stream


def stream(stream: Stream | None) -> StreamContext:
    """Wrapper around the Context-manager StreamContext that selects a given stream.
    N.B. This function only exists to facilitate device-agnostic code"""
    return StreamContext(stream)


def __getattr__(name: str):
    if name == "amp":
        import importlib

        return importlib.import_module("ember.cpu.amp")
    raise AttributeError(f"module '{api_name()}.cpu' has no attribute {name!r}")
