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
