"""Grad modes: whether ops record the autograd graph (`no_grad`, `enable_grad`,
`set_grad_enabled`, `inference_mode`), per thread, as in PyTorch."""

from __future__ import annotations

import contextlib
import threading


class _GradState(threading.local):
    enabled = True
    inference = False


state = _GradState()
"""Read `state.enabled` on hot paths: one attribute lookup, no call."""


def is_grad_enabled() -> bool:
    """Whether ops record the autograd graph on this thread."""
    return state.enabled


def is_inference_mode_enabled() -> bool:
    """Whether `inference_mode` is active on this thread."""
    return state.inference


class _GradMode(contextlib.ContextDecorator):
    _target: bool = True

    def __enter__(self):
        self._prev = (state.enabled, state.inference)
        state.enabled = self._target
        return self

    def __exit__(self, *exc):
        state.enabled, state.inference = self._prev
        return False


class no_grad(_GradMode):  # noqa: N801 - PyTorch's spelling
    """Context manager and decorator that disables gradient recording."""

    _target = False


class enable_grad(_GradMode):  # noqa: N801
    """Context manager and decorator that enables gradient recording."""

    _target = True


class set_grad_enabled(_GradMode):  # noqa: N801
    """Enable or disable gradient recording, as a function, context manager or decorator."""

    def __init__(self, mode: bool) -> None:
        self._target = bool(mode)
        self._prev = (state.enabled, state.inference)
        state.enabled = self._target  # works as a plain function call too

    def __enter__(self):
        return self


class inference_mode(_GradMode):  # noqa: N801
    """Like `no_grad`, and tensors made inside are marked as inference tensors."""

    def __init__(self, mode: bool = True) -> None:
        self._mode = bool(mode)

    def __enter__(self):
        self._prev = (state.enabled, state.inference)
        if self._mode:
            state.enabled, state.inference = False, True
        return self
