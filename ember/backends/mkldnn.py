"""`ember.backends.mkldnn`, as `torch.backends.mkldnn`: oneDNN (MKL-DNN), which ember does
not use, so `is_available()` is False and scripts that probe for it take their other
branch. The flags scripts set (`enabled`, `deterministic`) are kept and read back."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

VERBOSE_OFF = 0
VERBOSE_ON = 1
VERBOSE_ON_CREATION = 2

enabled = True
deterministic = False
allow_tf32 = None


def is_available() -> bool:
    """False: ember is not built on oneDNN."""
    return False


def is_acl_available() -> bool:
    """False: ember is not built on oneDNN (nor its Arm Compute Library)."""
    return False


class verbose:  # noqa: N801 - PyTorch's spelling
    """oneDNN's verbose dump for a block; ember has no oneDNN, so nothing is dumped."""

    def __init__(self, level: int) -> None:
        self.level = level

    def __enter__(self) -> verbose | None:
        return None if self.level == VERBOSE_OFF else self

    def __exit__(self, *exc: object) -> bool:
        return False


@contextlib.contextmanager
def flags(enabled: bool = False, deterministic: bool = False, allow_tf32: bool = True,
          fp32_precision: str = "none") -> Iterator[None]:
    """Set `enabled` and `deterministic` for a block (restored after it)."""
    saved = globals()["enabled"], globals()["deterministic"]
    globals()["enabled"], globals()["deterministic"] = enabled, deterministic
    try:
        yield
    finally:
        globals()["enabled"], globals()["deterministic"] = saved
