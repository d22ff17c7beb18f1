"""`ember.cpu`, as `torch.cpu`: `ember.cpu.amp` (autocast and GradScaler on the CPU)."""

from __future__ import annotations


def is_available() -> bool:
    """The CPU is always available."""
    return True


def device_count() -> int:
    return 1


def synchronize(device: object = None) -> None:
    """The CPU runs ops as they are called: nothing to wait for."""


def __getattr__(name: str):
    if name == "amp":
        import importlib

        return importlib.import_module("ember.cpu.amp")
    raise AttributeError(f"module 'ember.cpu' has no attribute {name!r}")
