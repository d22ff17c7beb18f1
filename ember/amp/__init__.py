"""Mixed precision, as `torch.amp`: `autocast` regions and `GradScaler`.

    with ember.autocast("cpu"):              # bfloat16 where PyTorch's CPU lists say
        loss = loss_fn(model(x), y)

    scaler = ember.amp.GradScaler("cpu")     # for float16: scale, unscale, skip overflows
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
"""

from ember.amp.autocast_mode import (
    autocast,
    clear_autocast_cache,
    get_autocast_dtype,
    is_autocast_available,
    is_autocast_cache_enabled,
    is_autocast_enabled,
)
from ember.amp.custom import custom_bwd, custom_fwd
from ember.amp.grad_scaler import GradScaler

__all__ = ["GradScaler", "autocast", "clear_autocast_cache", "custom_bwd", "custom_fwd",
           "get_autocast_dtype", "is_autocast_available", "is_autocast_cache_enabled",
           "is_autocast_enabled"]
