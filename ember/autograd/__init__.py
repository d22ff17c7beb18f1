"""Automatic differentiation: `backward`, `grad`, grad modes, custom `Function`s, and the
deprecated `Variable`."""

from ember.autograd import (
    function,  # noqa: F401  (torch.autograd.function.X without an import)
    grad_mode,  # noqa: F401  (torch.autograd.grad_mode.no_grad & co)
)
from ember.autograd.anomaly_mode import detect_anomaly, set_detect_anomaly
from ember.autograd.variable import Variable
from ember.core import engine as _engine
from ember.core.backend import api_name
from ember.core.engine import queue_callback
from ember.core.function import Function, FunctionCtx
from ember.core.grad_mode import (
    enable_grad,
    enforce_grad_layout_policy,
    inference_mode,
    is_multithreading_enabled,
    no_grad,
    set_grad_enabled,
    set_multithreading_enabled,
)
from ember.core.graph import Node
from ember.core.torch_function import overridable as _overridable

# overridable, as PyTorch's: a Tensor subclass sees `grad`/`backward`, not the engine's ops
backward = _overridable(_engine.backward)
grad = _overridable(_engine.grad)
backward.__module__ = grad.__module__ = __name__

__all__ = ["Function", "FunctionCtx", "Node", "backward", "detect_anomaly", "enable_grad",
           "enforce_grad_layout_policy", "grad",
           "inference_mode", "no_grad", "queue_callback", "set_detect_anomaly", "set_grad_enabled",
           "Variable", "forward_ad", "functional", "graph", "profiler",
           "is_multithreading_enabled", "set_multithreading_enabled"]


def _is_checkpoint_valid() -> bool:
    """False inside an `autograd.grad` (or `backward(inputs=...)`) pass, where a reentrant
    checkpoint's inner backward cannot run (PyTorch's private check of the same name)."""
    from ember.core.backend import backward_state
    return backward_state.checkpoint_valid


def __getattr__(name: str):
    """`ember.autograd.functional`, `.forward_ad`, `.graph` and `.profiler` load on first
    use (they bring ops and the profiler's recorder that `import ember` does not need); so
    do `gradcheck` and `gradgradcheck`."""
    import importlib

    if name in ("anomaly_mode", "forward_ad", "functional", "graph", "profiler"):
        return importlib.import_module(f"ember.autograd.{name}")
    if name in ("gradcheck", "gradgradcheck"):  # in ember.testing, which needs NumPy
        return getattr(importlib.import_module("ember.testing.gradcheck"), name)
    raise AttributeError(f"module '{api_name()}.autograd' has no attribute {name!r}")
