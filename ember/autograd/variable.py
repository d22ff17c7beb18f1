"""`Variable`, PyTorch's deprecated wrapper: since PyTorch 0.4 a tensor is a Variable, so
`Variable(t)` just returns a tensor, and every tensor is an instance of `Variable`."""

from __future__ import annotations

import warnings
from typing import Any

from ember.core import engine
from ember.core.creation import empty
from ember.core.tensor import Tensor


class _ExecutionEngine:
    """`Variable._execution_engine`, PyTorch's C++ autograd engine as Python code reaches
    it (DistributedDataParallel-style code queues callbacks that run once backward ends)."""

    @staticmethod
    def queue_callback(callback: Any) -> None:
        engine.queue_callback(callback)

    @staticmethod
    def run_backward(tensors: Any, grad_tensors: Any, keep_graph: bool, create_graph: bool,
                     inputs: Any = (), allow_unreachable: bool = True,
                     accumulate_grad: bool = True) -> Any:
        """The engine call behind `backward` (accumulate_grad) and `autograd.grad`."""
        if accumulate_grad:
            engine.backward(tuple(tensors), tuple(grad_tensors), keep_graph, create_graph,
                            inputs=tuple(inputs) or None)
            return ()
        return engine.grad(tuple(tensors), tuple(inputs), tuple(grad_tensors), keep_graph,
                           create_graph, allow_unused=allow_unreachable)


class VariableMeta(type):  # (PyTorch's name: `type(Variable)` prints it)
    def __instancecheck__(cls, other: Any) -> bool:
        return isinstance(other, Tensor)


class Variable(metaclass=VariableMeta):
    """Variable(data=None, requires_grad=False, volatile=False) -> Tensor

    Deprecated: returns `data` detached (sharing its storage) with `requires_grad` set;
    with no data, an empty tensor. `volatile` has no effect (use `ember.no_grad()`).
    `isinstance(t, Variable)` holds for every tensor.
    """

    _execution_engine = _ExecutionEngine()

    def __new__(cls, *args: Any, **kwargs: Any) -> Tensor:  # type: ignore[misc]
        # PyTorch's C++ parser: (data, requires_grad, volatile, _grad_fn), by position or
        # by name
        names = ("data", "requires_grad", "volatile", "_grad_fn")
        for key in kwargs:
            if key not in names:
                raise TypeError(f"'{key}' is an invalid keyword argument for this function")
        if len(args) > len(names):
            raise TypeError(f"function takes at most {len(names)} arguments ({len(args)} "
                            "given)")
        given = {**dict(zip(names, args)), **kwargs}
        data, requires_grad = given.get("data"), given.get("requires_grad", False)
        volatile, grad_fn = given.get("volatile", False), given.get("_grad_fn")
        if grad_fn is not None:
            raise TypeError(f"_grad_fn has to be a Function object or None, but got "
                            f"{type(grad_fn).__name__}")
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with "
                          "torch.no_grad():` instead.", UserWarning, stacklevel=2)
        if data is None:
            return empty(0).requires_grad_(bool(requires_grad))
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got "
                            f"{type(data).__name__}")
        if requires_grad and not (data.dtype.is_floating_point or data.dtype.is_complex):
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        return data.detach().requires_grad_(bool(requires_grad))
