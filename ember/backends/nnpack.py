"""`ember.backends.nnpack`, as `torch.backends.nnpack`: NNPACK, which ember does not use."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

_enabled_flag = False  # whether scripts allowed NNPACK (ember never uses it)


def is_available() -> bool:
    """False: ember is not built with NNPACK."""
    return False


def set_flags(_enabled: bool) -> tuple[bool]:
    """Set whether NNPACK may be used; returns the previous setting, as PyTorch's."""
    global _enabled_flag
    previous = (_enabled_flag,)
    _enabled_flag = _enabled
    return previous


@contextlib.contextmanager
def flags(enabled: bool = False) -> Iterator[None]:
    """`set_flags(enabled)` for a block (restored after it)."""
    previous = set_flags(enabled)
    try:
        yield
    finally:
        set_flags(previous[0])
