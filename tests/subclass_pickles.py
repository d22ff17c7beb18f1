"""Tensor subclasses for test_torch_function's pickling tests, at a module's top level so
that pickle finds them by name; imported only by those tests (a `__torch_function__`
switches ember's override check on for the rest of the process)."""

import pytest

import ember

torch = pytest.importorskip("torch")


class EmberUnits(ember.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return super().__torch_function__(func, types, args, kwargs)


class TorchUnits(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return super().__torch_function__(func, types, args, kwargs)


class EmberSlotted(ember.Tensor):
    __slots__ = ("unit",)


class TorchSlotted(torch.Tensor):
    __slots__ = ("unit",)
