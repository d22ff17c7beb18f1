"""`ember.nn.utils.skip_init` (torch.nn.utils.init): a module built without running its
parameter initialisation."""

from __future__ import annotations

import inspect
from typing import Any

from ember.nn.module import Module


def skip_init(module_cls: type, *args: Any, **kwargs: Any) -> Module:
    r"""Given a module class, instantiate it without initialising its parameters or
    buffers: it is built on the ``meta`` device, then given uninitialised memory on
    ``device`` (default the CPU) with ``to_empty``.

    Args:
        module_cls: the class of the module (it must take a ``device`` keyword argument).
        \*args, \*\*kwargs: the arguments of its constructor.

    Example::

        >>> m = ember.nn.utils.skip_init(ember.nn.Linear, 5, 1)
        >>> m.weight.shape
        ember.Size([1, 5])
    """
    if not isinstance(module_cls, type) or not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    kwargs["device"] = "meta"
    return module_cls(*args, **kwargs).to_empty(device=final_device)
