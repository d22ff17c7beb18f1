"""`torch.distributed`'s debug level (TORCH_DISTRIBUTED_DEBUG): OFF, INFO or DETAIL.
ember.distributed names the failing rank and collective in its errors at every level;
the level is kept for the programs that read or set it."""

from __future__ import annotations

import enum
import os


class DebugLevel(enum.IntEnum):
    """How much torch.distributed checks and logs."""

    OFF = 0
    INFO = 1
    DETAIL = 2


_level = DebugLevel.OFF


def set_debug_level(level: DebugLevel) -> None:
    """Set the debug level."""
    global _level
    _level = DebugLevel(level)


def set_debug_level_from_env() -> None:
    """Set the debug level from TORCH_DISTRIBUTED_DEBUG (OFF when unset)."""
    value = os.environ.get("TORCH_DISTRIBUTED_DEBUG", "OFF").upper()
    if value not in DebugLevel.__members__:
        raise ValueError(f"The value of TORCH_DISTRIBUTED_DEBUG must be OFF, INFO, or DETAIL, "
                         f"but is {value!r}.")
    set_debug_level(DebugLevel[value])


def get_debug_level() -> DebugLevel:
    """The debug level (read from TORCH_DISTRIBUTED_DEBUG when ember.distributed loads)."""
    return _level


if "TORCH_DISTRIBUTED_DEBUG" in os.environ:
    try:
        set_debug_level_from_env()
    except ValueError:  # PyTorch checks it only when a process group starts
        pass
