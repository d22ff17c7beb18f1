"""`ember.cpu.amp`, as the (deprecated) `torch.cpu.amp`: autocast and GradScaler for the
CPU, each warning as PyTorch's do."""

from __future__ import annotations

from typing import Any

from ember.amp import autocast as _autocast
from ember.amp.deprecated import warn_device_amp
from ember.amp.grad_scaler import GradScaler as _GradScaler
from ember.core.dtype import bfloat16


class autocast(_autocast):  # noqa: N801 - PyTorch's name
    """``ember.cpu.amp.autocast(args...)`` is ``ember.autocast("cpu", args...)``."""

    def __init__(self, enabled: bool = True, dtype: Any = bfloat16,
                 cache_enabled: bool = True) -> None:
        warn_device_amp("cpu", "autocast")
        super().__init__("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """``ember.cpu.amp.GradScaler(args...)`` is ``ember.amp.GradScaler("cpu", args...)``."""

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        warn_device_amp("cpu", "GradScaler")
        super().__init__("cpu", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)


__all__ = ["GradScaler", "autocast"]
