"""`ember.cuda`, as `torch.cuda`: whether CUDA devices can be used, and `ember.cuda.amp`.

Works on every machine: without a GPU (or without CuPy) `is_available()` is False and
`device_count()` is 0; `ember devices` says why.
"""

from __future__ import annotations

from ember.core import plugins


def is_available() -> bool:
    """Whether a CUDA device can be used now."""
    try:
        return plugins.get_backend("cuda").is_available()
    except RuntimeError:
        return False


def device_count() -> int:
    """The number of usable CUDA devices (0 without a GPU)."""
    return plugins.get_backend("cuda").device_count() if is_available() else 0


def __getattr__(name: str):
    if name == "amp":  # loads on first use, as ember's other subpackages
        import importlib

        return importlib.import_module("ember.cuda.amp")
    raise AttributeError(f"module 'ember.cuda' has no attribute {name!r}")
