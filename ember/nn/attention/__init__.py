"""`ember.nn.attention` (torch.nn.attention): choosing the kernel behind
`scaled_dot_product_attention`. ember has one implementation per backend (the math one);
`sdpa_kernel` sets PyTorch's kernel switches (`ember.backends.cuda.flash_sdp_enabled()`
...) for the block, and attention refuses to run when they leave no kernel that PyTorch
could use for its arguments."""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Iterator

from ember.core import backend as contract

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


# the kernel switch (ember.core.backend.SDP_KERNELS) of each backend
_SWITCH = {SDPBackend.FLASH_ATTENTION: "flash", SDPBackend.EFFICIENT_ATTENTION: "mem_efficient",
           SDPBackend.MATH: "math", SDPBackend.CUDNN_ATTENTION: "cudnn",
           SDPBackend.OVERRIDEABLE: "overrideable"}


@contextlib.contextmanager
def sdpa_kernel(backends: SDPBackend | list[SDPBackend],
                set_priority: bool = False) -> Iterator[dict]:
    """Context manager restricting scaled_dot_product_attention to `backends` inside the
    block; the previous switches come back on exit."""
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError("Backend must be an instance of SDPBackend or a list of "
                             f"SDPBackend instances, got {type(backends).__name__}")
    if isinstance(backends, SDPBackend):
        backends = [backends]
    with contract.sdp_kernels_only(_SWITCH[b] for b in backends if b in _SWITCH) as context:
        yield context
