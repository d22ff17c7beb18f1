"""Modules for quantization-aware training (`torch.ao.nn.qat`): float layers whose weight
passes through a fake quantizer (`weight_fake_quant`) on every forward."""

from __future__ import annotations

from typing import Any

from ember import nn
from ember.core.tensor import Tensor
from ember.nn import functional as F


class Linear(nn.Linear):
    r"""A Linear layer whose weight is fake-quantized in forward (made by ``prepare_qat``
    from an ``nn.Linear`` with a ``qconfig``)."""

    _FLOAT_MODULE: Any = nn.Linear
    _relu = False

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 qconfig: Any = None, device: Any = None, dtype: Any = None) -> None:
        super().__init__(in_features, out_features, bias)
        if not qconfig:
            raise AssertionError("qconfig must be provided for QAT module")
        self.qconfig = qconfig
        self.weight_fake_quant = qconfig.weight()

    def forward(self, input: Tensor) -> Tensor:
        out = F.linear(input, self.weight_fake_quant(self.weight), self.bias)
        return F.relu(out) if self._relu else out

    @classmethod
    def from_float(cls, mod: nn.Module, use_precomputed_fake_quant: bool = False) -> Linear:
        """The QAT layer sharing the float (or fused) layer's parameters."""
        linear = mod[0] if isinstance(mod, nn.Sequential) else mod
        out = cls(linear.in_features, linear.out_features, linear.bias is not None,
                  qconfig=mod.qconfig)
        out.weight, out.bias = linear.weight, linear.bias
        return out

    def to_float(self) -> nn.Linear:
        linear = nn.Linear(self.in_features, self.out_features, self.bias is not None)
        linear.weight, linear.bias = self.weight, self.bias
        return linear


class Conv2d(nn.Conv2d):
    r"""A Conv2d whose weight is fake-quantized in forward (made by ``prepare_qat`` from
    an ``nn.Conv2d`` with a ``qconfig``)."""

    _FLOAT_MODULE: Any = nn.Conv2d
    _relu = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", qconfig: Any = None, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride=stride,
                         padding=padding, dilation=dilation, groups=groups, bias=bias,
                         padding_mode=padding_mode)
        if not qconfig:
            raise AssertionError("qconfig must be provided for QAT module")
        self.qconfig = qconfig
        self.weight_fake_quant = qconfig.weight()

    def forward(self, input: Tensor) -> Tensor:
        out = self._conv_forward(input, self.weight_fake_quant(self.weight), self.bias)
        return F.relu(out) if self._relu else out

    @classmethod
    def from_float(cls, mod: nn.Module, use_precomputed_fake_quant: bool = False) -> Conv2d:
        """The QAT convolution sharing the float (or fused) one's parameters."""
        conv = mod[0] if isinstance(mod, nn.Sequential) else mod
        out = cls(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride,
                  conv.padding, conv.dilation, conv.groups, conv.bias is not None,
                  conv.padding_mode, qconfig=mod.qconfig)
        out.weight, out.bias = conv.weight, conv.bias
        return out


__all__ = ["Conv2d", "Linear"]
