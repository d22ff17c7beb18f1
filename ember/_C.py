"""`ember._C` (torch._C): the few names of PyTorch's C extension that programs extending
the Python API use: the `__torch_function__` switches and the disabled implementation."""

from __future__ import annotations

from ember.core import torch_function as _tf
from ember.core.backend import _LinAlgError  # noqa: F401 - torch._C._LinAlgError
from ember.core.creation import Generator  # noqa: F401 - torch._C.Generator
from ember.core.engine import current_graph_task_id as _current_graph_task_id  # noqa: F401
from ember.core.engine import will_engine_execute_node as _will_engine_execute_node  # noqa: F401
from ember.core.torch_function import (  # noqa: F401 - re-exported
    DisableTorchFunction,
    DisableTorchFunctionSubclass,
    _disabled_torch_function_impl,
)

_is_torch_function_enabled = _tf.is_torch_function_enabled
_is_torch_function_mode_enabled = _tf.is_torch_function_mode_enabled


def _len_torch_function_stack() -> int:
    """The number of TorchFunctionModes entered."""
    return len(_tf.modes)


def _is_grad_layout_enforcement_enabled() -> bool:
    """Whether autograd enforces the gradient layout contract on this thread."""
    from ember.core.grad_mode import state

    return state.layout_enforced


def _set_grad_layout_enforcement_enabled(enabled: bool) -> None:
    """Turn the gradient layout contract's enforcement on or off on this thread."""
    from ember.core.grad_mode import state

    state.layout_enforced = bool(enabled)
