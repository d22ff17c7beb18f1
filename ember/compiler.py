"""`torch.compiler`: `compile`, `reset`, `is_compiling` and the decorators programs use
around `torch.compile`. ember's compile replays recorded kernels (ember.jit.compiled);
see ember._dynamo for what the settings mean here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.jit.compiled import compile, reset  # noqa: A004 - PyTorch's name

__all__ = ["allow_in_graph", "assume_constant_result", "compile", "cudagraph_mark_step_begin",
           "disable", "is_compiling", "is_dynamo_compiling", "is_exporting", "reset"]


def is_compiling() -> bool:
    """False: ember never traces Python to compile it (the recorded calls run as written,
    so code guarded by `if not is_compiling()` runs, as in eager mode)."""
    return False


def is_dynamo_compiling() -> bool:
    """False, as `is_compiling`."""
    return False


def is_exporting() -> bool:
    """Whether `torch.export.export` is capturing the running code (ember.export)."""
    import sys

    trace = sys.modules.get("ember.export._trace")
    return bool(trace is not None and trace.exporting)


def disable(fn: Callable | None = None, recursive: bool = True, *,
            reason: str | None = None) -> Any:
    """Mark `fn` as not to be compiled (a decorator with or without arguments). ember
    returns it unchanged: inside a compiled call it runs (and is recorded) as written."""
    if fn is None:
        return lambda f: f
    return fn


def allow_in_graph(fn: Callable) -> Callable:
    """Returns `fn`: ember records the kernels any function runs."""
    return fn


def assume_constant_result(fn: Callable) -> Callable:
    """Returns `fn`: ember's replays are keyed by the values a call can see."""
    return fn


def cudagraph_mark_step_begin() -> None:
    """Accepted: ember's replays need no step marker."""
