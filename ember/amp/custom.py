"""`custom_fwd` and `custom_bwd`: autocast for custom autograd Functions, as PyTorch's.

A Function's backward runs outside the forward's autocast region (backward passes run
after the region ends). Decorate `forward` with `custom_fwd` and `backward` with
`custom_bwd` so that backward runs under the autocast state forward saw; with
`cast_inputs=`, forward runs with autocast off and its floating inputs cast to that dtype.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ember.amp.autocast_mode import autocast, get_autocast_dtype, is_autocast_enabled
from ember.core.tensor import Tensor


def _cast(value: Any, device_type: str, dtype: Any) -> Any:
    if isinstance(value, Tensor):
        if value.is_floating_point() and value.device.type == device_type and \
                value.dtype is not dtype:
            return value.to(dtype)
        return value
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, device_type, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _cast(v, device_type, dtype) for k, v in value.items()}
    return value


def custom_fwd(fwd: Callable | None = None, *, device_type: str,
               cast_inputs: Any = None) -> Callable:
    """Decorator for a custom Function's ``forward``.

    Args:
        device_type: the device type whose autocast state applies (``"cpu"``, ``"cuda"``).
        cast_inputs: None: forward runs under the caller's autocast state. A dtype: inside
            an autocast region, forward runs with autocast off and its floating tensors on
            `device_type` cast to this dtype.
    """
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args: Any, **kwargs: Any) -> Any:
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        ctx._fwd_used_autocast = False
        if not is_autocast_enabled(device_type):
            return fwd(*args, **kwargs)
        with autocast(device_type=device_type, enabled=False):
            return fwd(*_cast(args, device_type, cast_inputs),
                       **_cast(kwargs, device_type, cast_inputs))
    return decorate_fwd


def custom_bwd(bwd: Callable | None = None, *, device_type: str) -> Callable:
    """Decorator for a custom Function's ``backward``: it runs under the autocast state
    its ``forward`` (decorated with `custom_fwd`) ran under."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args: Any, **kwargs: Any) -> Any:
        ctx = args[0]
        with autocast(device_type=device_type, enabled=ctx._fwd_used_autocast,
                      dtype=ctx._dtype):
            return bwd(*args, **kwargs)
    return decorate_bwd
