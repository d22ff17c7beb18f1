"""Where a model's quantized region starts and ends (`QuantStub`, `DeQuantStub`): identity
modules in float that `convert` swaps for `Quantize` and `DeQuantize`."""

from __future__ import annotations

from typing import Any

from ember import nn
from ember.core.tensor import Tensor


class _Stub(nn.Module):
    """An identity in float that carries an optional qconfig of its own."""

    def __init__(self, qconfig: Any = None) -> None:
        super().__init__()
        if qconfig:
            self.qconfig = qconfig

    def forward(self, x: Tensor) -> Tensor:
        return x


class QuantStub(_Stub):
    r"""Marks where float input enters the quantized part of a model: an observer watches
    it during calibration, and ``convert`` makes it a ``Quantize`` module.

    Args:
        qconfig: the quantization config of the tensor, when not the model's.
    """


class DeQuantStub(_Stub):
    r"""Marks where a quantized tensor leaves the quantized part of a model: ``convert``
    makes it a ``DeQuantize`` module."""


class QuantWrapper(nn.Module):
    r"""Wraps a module between a :class:`QuantStub` and a :class:`DeQuantStub`."""

    def __init__(self, module: nn.Module) -> None:
        super().__init__()
        qconfig = getattr(module, "qconfig", None)
        self.add_module("quant", QuantStub(qconfig))
        self.add_module("dequant", DeQuantStub(qconfig))
        self.add_module("module", module)
        self.train(module.training)

    def forward(self, X: Tensor) -> Tensor:
        return self.dequant(self.module(self.quant(X)))
