"""`ember.backends.cudnn`, as `torch.backends.cudnn`: the flags scripts set for cuDNN.

ember's CUDA backend does not call cuDNN (convolutions are one GEMM through cuBLAS), so
the flags are kept, checked as PyTorch checks them, and change nothing: `benchmark` and
`deterministic` ask for what ember does anyway (no autotuning; the same kernels every
run), `enabled` and `allow_tf32` concern cuDNN alone. `is_available()` is False and
`version()` None, as in PyTorch without cuDNN.
"""

from __future__ import annotations

import contextlib
import sys
import types
from collections.abc import Iterator
from typing import Any

_FLAGS = {"enabled": True, "benchmark": False, "deterministic": False, "allow_tf32": True}
_SETTER = {"enabled": "set_enabled_cudnn", "benchmark": "set_benchmark_cudnn",
           "deterministic": "set_deterministic_cudnn", "allow_tf32": "set_allow_tf32_cudnn"}


def is_available() -> bool:
    """False: ember does not use cuDNN."""
    return False


def version() -> int | None:
    """None: ember does not use cuDNN."""
    return None


def is_acceptable(tensor: Any) -> bool:
    """False: no tensor goes to cuDNN."""
    return False


@contextlib.contextmanager
def flags(enabled: bool = False, benchmark: bool = False, deterministic: bool = False,
          allow_tf32: bool = True, **kwargs: Any) -> Iterator[None]:
    """Set the flags inside the block, and restore them after."""
    module = sys.modules[__name__]
    saved = {name: getattr(module, name) for name in _FLAGS}
    try:
        for name, value in (("enabled", enabled), ("benchmark", benchmark),
                            ("deterministic", deterministic), ("allow_tf32", allow_tf32)):
            setattr(module, name, value)
        yield
    finally:
        for name, value in saved.items():
            setattr(module, name, value)


class _CudnnModule(types.ModuleType):
    """The module, with its flags checked when set (PyTorch's RuntimeError for a non-bool)."""

    def __getattr__(self, name: str) -> Any:
        if name in _FLAGS:
            return _FLAGS[name]
        if name == "benchmark_limit":
            return None
        raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _FLAGS:
            if not isinstance(value, bool):
                raise RuntimeError(f"{_SETTER[name]} expects a bool, but got "
                                   f"{type(value).__name__}")
            _FLAGS[name] = value
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _CudnnModule
