"""`ember.nn.attention` (torch.nn.attention): choosing the kernel behind
`scaled_dot_product_attention`. ember has one implementation per backend (the math one),
so `sdpa_kernel` checks its argument as PyTorch does and runs the block unchanged."""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Iterator

__all__ = ["SDPBackend", "WARN_FOR_UNFUSED_KERNELS", "sdpa_kernel"]

WARN_FOR_UNFUSED_KERNELS = False


class SDPBackend(enum.IntEnum):
    """The attention kernels PyTorch chooses from (ember's is always the math one)."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    def __str__(self) -> str:
        return f"SDPBackend.{self.name}"


@contextlib.contextmanager
def sdpa_kernel(backends: SDPBackend | list[SDPBackend],
                set_priority: bool = False) -> Iterator[None]:
    """Context manager restricting scaled_dot_product_attention to `backends` (on ember,
    where the math kernel is the only one, a check of the argument)."""
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError("Backend must be an instance of SDPBackend or a list of "
                             f"SDPBackend instances, got {type(backends).__name__}")
    yield
