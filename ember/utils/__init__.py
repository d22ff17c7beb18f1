"""Utilities built on ember's public Tensor API: data loading (`ember.utils.data`) and
TensorBoard logging (`ember.utils.tensorboard`), timing statements (`ember.utils.benchmark`).

Sub-packages load on first use (`ember.utils.data`), so importing this package is free.
"""

from __future__ import annotations

import importlib
from types import ModuleType

_SUBMODULES = ("data", "tensorboard", "dlpack", "model_zoo", "checkpoint", "benchmark",
               "_pytree")


def __getattr__(name: str) -> ModuleType:
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
