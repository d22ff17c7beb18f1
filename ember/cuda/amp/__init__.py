"""`ember.cuda.amp`, as the (deprecated) `torch.cuda.amp`: autocast and GradScaler for
the "cuda" device type. Without CUDA both disable themselves with a warning, as
PyTorch's do, so a training loop written for a GPU still runs."""

from __future__ import annotations

import warnings
from typing import Any

from ember.amp import autocast as _autocast
from ember.amp import custom_bwd as _custom_bwd
from ember.amp import custom_fwd as _custom_fwd
from ember.amp.deprecated import warn_device_amp
from ember.amp.grad_scaler import GradScaler as _GradScaler
from ember.core import dtype as dt
from ember.core.dtype import float16


class autocast(_autocast):  # noqa: N801 - PyTorch's name
    """``ember.cuda.amp.autocast(args...)`` is ``ember.autocast("cuda", args...)``."""

    def __init__(self, enabled: bool = True, dtype: Any = float16,
                 cache_enabled: bool = True) -> None:
        warn_device_amp("cuda", "autocast")
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """``ember.cuda.amp.GradScaler(args...)`` is ``ember.amp.GradScaler("cuda", args...)``."""

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        warn_device_amp("cuda", "GradScaler")
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)


def custom_fwd(fwd: Any = None, *, cast_inputs: Any = None) -> Any:
    """``ember.cuda.amp.custom_fwd(args...)`` is
    ``ember.amp.custom_fwd(args..., device_type="cuda")`` (deprecated, as PyTorch's)."""
    _warn_decorator("custom_fwd")
    return _custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd: Any = None) -> Any:
    """``ember.cuda.amp.custom_bwd(args...)`` is
    ``ember.amp.custom_bwd(args..., device_type="cuda")`` (deprecated, as PyTorch's)."""
    _warn_decorator("custom_bwd")
    return _custom_bwd(bwd, device_type="cuda")


def _warn_decorator(name: str) -> None:
    api = dt.API_NAME
    warnings.warn(f"`{api}.cuda.amp.{name}(args...)` is deprecated. Please use "
                  f"`{api}.amp.{name}(args..., device_type='cuda')` instead.", FutureWarning,
                  stacklevel=3)

__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd"]
