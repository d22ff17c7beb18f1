"""`ember._C` (torch._C): the few names of PyTorch's C extension that programs extending
the Python API, and libraries built on PyTorch (Lightning, torchmetrics), use: the
`__torch_function__` switches and the disabled implementation, Tensor's metaclass,
`Module.to`'s argument parser, the API-usage logging hook."""

from __future__ import annotations

from ember.core import torch_function as _tf
from ember.core.backend import _LinAlgError  # noqa: F401 - torch._C._LinAlgError
from ember.core.creation import Generator  # noqa: F401 - torch._C.Generator
from ember.core.engine import current_graph_task_id as _current_graph_task_id  # noqa: F401
from ember.core.engine import will_engine_execute_node as _will_engine_execute_node  # noqa: F401
from ember.core.tensor import Tensor as _Tensor
from ember.core.torch_function import (  # noqa: F401 - re-exported
    DisableTorchFunction,
    DisableTorchFunctionSubclass,
    _disabled_torch_function_impl,
)

# the metaclass of Tensor (torch._C._TensorMeta; ember's Tensor is a plain Python class)
_TensorMeta = type(_Tensor)

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


def _log_api_usage_once(event: str) -> None:
    """PyTorch's API-usage logging hook (libraries call it on construction); a no-op, as
    in PyTorch builds without a logging backend."""


def _log_api_usage_metadata(event: str, metadata: dict) -> None:
    """The metadata form of :func:`_log_api_usage_once`; a no-op."""


class _nn:  # noqa: N801 - torch._C._nn, the namespace of nn's C++ helpers
    @staticmethod
    def _parse_to(*args: object, **kwargs: object) -> tuple:
        """`Module.to`'s arguments as `(device, dtype, non_blocking, memory_format)`,
        None where not given (torch._C._nn._parse_to)."""
        from ember.core.device import device as _device
        from ember.core.ops.elementwise import to_arguments

        memory_format = kwargs.get("memory_format")
        dev, dtype, non_blocking, _ = to_arguments(args, kwargs)
        return (None if dev is None else _device(dev), dtype, non_blocking, memory_format)


class ScriptModule:
    """torch._C.ScriptModule (torch.ScriptModule): the C++ object under a TorchScript
    module. ember compiles nothing to TorchScript, so no object is one (its scripted
    modules are `ember.jit.ScriptModule`s, as PyTorch's are `torch.jit.ScriptModule`s)."""


class ScriptMethod:
    """torch._C.ScriptMethod (torch.ScriptMethod): a compiled TorchScript method; as
    :class:`ScriptModule`, nothing in ember is one."""


def __getattr__(name: str):
    # torch._C.PyTorchFileReader/Writer (imported on use: zipfile)
    import importlib

    if name in ("PyTorchFileReader", "PyTorchFileWriter"):
        return getattr(importlib.import_module("ember.stream_file"), name)
    if name == "ScriptFunction":
        return importlib.import_module("ember.jit.script").ScriptFunction
    raise AttributeError(f"module 'torch._C' has no attribute {name!r}")
