"""Utilities built on ember's public Tensor API: data loading (`ember.utils.data`) and
TensorBoard logging (`ember.utils.tensorboard`), timing statements (`ember.utils.benchmark`),
and `swap_tensors`.

Sub-packages load on first use (`ember.utils.data`), so importing this package is free.
"""

from __future__ import annotations

import copyreg
import importlib
import weakref
from types import ModuleType
from typing import Any

_SUBMODULES = ("data", "tensorboard", "dlpack", "model_zoo", "checkpoint", "benchmark",
               "_pytree", "hooks")


def __getattr__(name: str) -> ModuleType:
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def swap_tensors(t1: Any, t2: Any) -> None:
    """This function swaps the content of the two Tensor objects.
    At a high level, this will make t1 have the content of t2 while preserving
    its identity.

    This will not work if t1 and t2 have different slots.
    """
    if weakref.getweakrefs(t1):
        raise RuntimeError("Cannot swap t1 because it has weakref associated with it")
    if weakref.getweakrefs(t2):
        raise RuntimeError("Cannot swap t2 because it has weakref associated with it")
    slots = set(copyreg._slotnames(t1.__class__))
    if set(copyreg._slotnames(t2.__class__)) != slots:
        raise RuntimeError("Cannot swap t1 and t2 if they have different slots")
    t1.__class__, t2.__class__ = t2.__class__, t1.__class__
    t1.__dict__, t2.__dict__ = t2.__dict__, t1.__dict__
    for slot in slots:
        v1, v2 = getattr(t1, slot, _MISSING), getattr(t2, slot, _MISSING)
        for t, v in ((t1, v2), (t2, v1)):
            if v is _MISSING:
                delattr(t, slot)
            else:
                setattr(t, slot, v)
    # a leaf's gradient node names the object it accumulates into: follow the content
    for t in (t1, t2):
        if t.__dict__.get("_grad_acc") is not None:
            t._grad_acc.variable = t


_MISSING = object()
