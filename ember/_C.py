"""`ember._C` (torch._C): the few names of PyTorch's C extension that programs extending
the Python API use: the `__torch_function__` switches and the disabled implementation."""

from __future__ import annotations

from ember.core.torch_function import (  # noqa: F401 - re-exported
    DisableTorchFunction,
    DisableTorchFunctionSubclass,
    _disabled_torch_function_impl,
)


def _len_torch_function_stack() -> int:
    """The number of TorchFunctionModes entered."""
    from ember.core import torch_function

    return len(torch_function.modes)
