"""Anomaly detection for autograd, as PyTorch's `torch.autograd.detect_anomaly` and
`set_detect_anomaly`: while it is on, the backward pass checks every gradient a node
returns and raises, naming the node, at the first NaN."""

from __future__ import annotations

import functools
import os
import traceback
import warnings

_enabled = False
_check_nan = True


def is_anomaly_enabled() -> bool:
    """Returns True if anomaly detection is enabled."""
    return _enabled


def is_anomaly_check_nan_enabled() -> bool:
    """Returns True if anomaly detection checks gradients for NaN."""
    return _check_nan


def _set(mode: bool, check_nan: bool) -> None:
    global _enabled, _check_nan
    _enabled, _check_nan = bool(mode), bool(check_nan)


def check_gradients(node, results) -> None:
    """Raise if a backward node returned a NaN gradient (called only while enabled)."""
    if not _check_nan:
        return
    for i, g in enumerate(results):
        if g is not None and g.dtype.is_floating_point and bool(g.isnan().any()):
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th "
                               f"output.")


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def forward_stack() -> list[str]:
    """The program's Python stack where a node is recorded, as PyTorch keeps it in
    `grad_fn.metadata["traceback_"]` under anomaly mode: the caller's frames, formatted
    (ember's own frames and the interpreter's runner left out, as PyTorch's ops are C++)."""
    frames = [f for f in traceback.extract_stack()
              if not f.filename.startswith(_PACKAGE) and not f.filename.startswith("<frozen")]
    return traceback.format_list(frames)


def warn_failed(node) -> None:
    """PyTorch's warning when `node`'s backward fails under anomaly mode: the stack of
    the forward call that recorded it."""
    metadata = getattr(node, "_metadata", None)
    stack = metadata.get("traceback_") if isinstance(metadata, dict) else None
    if stack is None:
        return
    warnings.warn(f"Error detected in {node.name().rpartition('::')[2]}. Traceback of forward "
                  f"call that caused the error:\n{''.join(stack)}", stacklevel=2)


class _AnomalyMode:
    """Restores the previous mode on exit; usable as a decorator."""

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.__class__(*self._args):
                return func(*args, **kwargs)
        return wrapper

    def __exit__(self, *exc) -> None:
        _set(*self._previous)


class detect_anomaly(_AnomalyMode):  # noqa: N801 - PyTorch's name
    r"""Context-manager that enables anomaly detection for the autograd engine.

    Any backward computation that generates a NaN value raises an error naming the node
    that produced it. This mode should be enabled only for debugging: it slows the
    backward pass down.

    Args:
        check_nan (bool): Specifies whether to raise an error when backward generates
            "nan". Default: ``True``.
    """

    def __init__(self, check_nan: bool = True) -> None:
        self._args = (check_nan,)
        self._previous = (_enabled, _check_nan)
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the "
                      "runtime and should only be enabled for debugging.", stacklevel=2)

    def __enter__(self) -> None:
        _set(True, self._args[0])


class set_detect_anomaly(_AnomalyMode):  # noqa: N801 - PyTorch's name
    r"""Context-manager (or plain function call) that sets anomaly detection on or off.

    Args:
        mode (bool): Flag whether to enable anomaly detection (``True``), or disable
            (``False``).
        check_nan (bool): Specifies whether to raise an error when backward generates
            "nan". Default: ``True``.
    """

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self._args = (mode, check_nan)
        self._previous = (_enabled, _check_nan)
        _set(mode, check_nan)

    def __enter__(self) -> None:
        pass


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turns anomaly detection on or off (`torch.set_anomaly_enabled`, the function that
    `set_detect_anomaly` calls), without the warning of `detect_anomaly`."""
    for position, (name, value) in enumerate((("enabled", enabled), ("check_nan", check_nan))):
        if not isinstance(value, bool):
            raise TypeError(f"set_anomaly_enabled(): argument '{name}' (position "
                            f"{position + 1}) must be bool, not {type(value).__name__}")
    _set(enabled, check_nan)
