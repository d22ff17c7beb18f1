"""`ember.use_deterministic_algorithms` and its queries, as PyTorch's.

ember's CPU kernels are deterministic already (NumPy, fixed summation orders); the flag is
kept so programs that set it run, and so backends with nondeterministic kernels can ask.
"""

from __future__ import annotations

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
