"""PyTorch's deprecated per-device amp spellings and their warnings, naming the API as the
program imported it: the FutureWarning of `torch.cuda.amp.*` / `torch.cpu.amp.*`, and the
old top-level getters (`torch.is_autocast_cpu_enabled()` ...) with their
DeprecationWarning."""

from __future__ import annotations

import warnings

from ember.amp.autocast_mode import (
    get_autocast_dtype,
    is_autocast_enabled,
    set_autocast_dtype,
    set_autocast_enabled,
)
from ember.core import dtype as dt


def warn_device_amp(device_type: str, name: str, stacklevel: int = 3) -> None:
    """Warn that `<api>.<device_type>.amp.<name>(args...)` is deprecated, as PyTorch does."""
    api = dt.API_NAME
    warnings.warn(f"`{api}.{device_type}.amp.{name}(args...)` is deprecated. Please use "
                  f"`{api}.amp.{name}('{device_type}', args...)` instead.", FutureWarning,
                  stacklevel=stacklevel)


def _warn_getter(old: str, new: str) -> None:
    api = dt.API_NAME
    warnings.warn(f"{api}.{old}() is deprecated. Please use {api}.{new} instead.",
                  DeprecationWarning, stacklevel=3)


def is_autocast_cpu_enabled() -> bool:
    """Deprecated: ``is_autocast_enabled("cpu")``."""
    _warn_getter("is_autocast_cpu_enabled", "is_autocast_enabled('cpu')")
    return is_autocast_enabled("cpu")


def get_autocast_cpu_dtype() -> dt.dtype:
    """Deprecated: ``get_autocast_dtype("cpu")``."""
    _warn_getter("get_autocast_cpu_dtype", "get_autocast_dtype('cpu')")
    return get_autocast_dtype("cpu")


def get_autocast_gpu_dtype() -> dt.dtype:
    """Deprecated: ``get_autocast_dtype("cuda")``."""
    _warn_getter("get_autocast_gpu_dtype", "get_autocast_dtype('cuda')")
    return get_autocast_dtype("cuda")


def _warn_setter(old: str, new: str) -> None:
    api = dt.API_NAME
    warnings.warn(f"{api}.{old} is deprecated. Please use {api}.{new} instead.",
                  DeprecationWarning, stacklevel=3)


def _check_dtype(dtype: object) -> None:
    if not isinstance(dtype, dt.dtype):
        raise TypeError(f"dtype must be a {dt.API_NAME}.dtype (got {type(dtype).__name__})")


def set_autocast_cpu_enabled(enabled: bool) -> None:
    """Deprecated: ``set_autocast_enabled("cpu", enabled)``."""
    if not isinstance(enabled, bool):
        raise TypeError(f"enabled must be a bool (got {type(enabled).__name__})")
    _warn_setter("set_autocast_cpu_enabled(enabled)", "set_autocast_enabled('cpu', enabled)")
    set_autocast_enabled("cpu", enabled)


def set_autocast_cpu_dtype(dtype: dt.dtype) -> None:
    """Deprecated: ``set_autocast_dtype("cpu", dtype)``."""
    _check_dtype(dtype)
    _warn_setter("set_autocast_cpu_dtype(dtype)", "set_autocast_dtype('cpu', dtype)")
    set_autocast_dtype("cpu", dtype)


def set_autocast_gpu_dtype(dtype: dt.dtype) -> None:
    """Deprecated: ``set_autocast_dtype("cuda", dtype)``."""
    _check_dtype(dtype)
    _warn_setter("set_autocast_gpu_dtype(dtype)", "set_autocast_dtype('cuda', dtype)")
    set_autocast_dtype("cuda", dtype)
