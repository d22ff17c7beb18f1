"""`ember.use_deterministic_algorithms` and its queries, as PyTorch's.

ember's CPU kernels are deterministic already (NumPy, fixed summation orders); the flag is
kept so programs that set it run, so backends with nondeterministic kernels can ask, and
so the ops PyTorch refuses under it (`put_` without accumulation) refuse as PyTorch's do
(`alert_not_deterministic`).
"""

from __future__ import annotations

import warnings

_enabled = False
_warn_only = False


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Sets whether operations must use deterministic algorithms.

    Args:
        mode (bool): If True, makes potentially nondeterministic operations switch to a
            deterministic algorithm or throw a runtime error. If False, allows
            nondeterministic operations.
        warn_only (bool, optional): If True, operations that do not have a deterministic
            implementation will throw a warning instead of an error. Default: ``False``
    """
    global _enabled, _warn_only
    if not isinstance(mode, bool):
        raise TypeError(f"_set_deterministic_algorithms(): argument 'mode' (position 1) must be "
                        f"bool, not {type(mode).__name__}")
    if not isinstance(warn_only, bool):
        raise TypeError(f"_set_deterministic_algorithms(): argument 'warn_only' must be bool, "
                        f"not {type(warn_only).__name__}")
    _enabled, _warn_only = mode, warn_only


def are_deterministic_algorithms_enabled() -> bool:
    """Returns True if the global deterministic flag is turned on."""
    return _enabled


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """Returns True if the global deterministic flag is set to warn only."""
    return _warn_only


def alert_not_deterministic(caller: str) -> None:
    """PyTorch's alertNotDeterministic: under `use_deterministic_algorithms(True)`, raise
    (or, with `warn_only`, warn) that `caller` has no deterministic implementation."""
    if not _enabled:
        return
    from ember.core.dtype import API_NAME

    issue = ("file an issue at https://github.com/pytorch/pytorch/issues to help us "
             "prioritize adding deterministic support for this operation.")
    start = f"{caller} does not have a deterministic implementation, but you set '{API_NAME}"
    if _warn_only:
        warnings.warn(f"{start}.use_deterministic_algorithms(True, warn_only=True)'. You can "
                      f"{issue}", UserWarning, stacklevel=3)
    else:
        raise RuntimeError(f"{start}.use_deterministic_algorithms(True)'. You can turn off "
                           "determinism just for this operation, or you can use the "
                           "'warn_only=True' option, if that's acceptable for your "
                           f"application. You can also {issue}")


def set_deterministic_debug_mode(debug_mode: int | str) -> None:
    r"""Sets the debug mode for deterministic operations: another interface for
    :func:`use_deterministic_algorithms`.

    Args:
        debug_mode(str or int): If "default" or 0, don't error or warn on
            nondeterministic operations. If "warn" or 1, warn on
            nondeterministic operations. If "error" or 2, error on
            nondeterministic operations.
    """
    global _enabled, _warn_only
    if not isinstance(debug_mode, (int, str)):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, "
                               f"`warn`, `error`, but got {debug_mode}")
        debug_mode = _DEBUG_MODES.index(debug_mode)
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got "
                           f"{debug_mode}")
    _enabled, _warn_only = debug_mode != 0, debug_mode == 1


def get_deterministic_debug_mode() -> int:
    r"""Returns the current value of the debug mode for deterministic operations
    (0: default, 1: warn, 2: error). Refer to :func:`set_deterministic_debug_mode`."""
    if not _enabled:
        return 0
    return 1 if _warn_only else 2


_DEBUG_MODES = ("default", "warn", "error")
