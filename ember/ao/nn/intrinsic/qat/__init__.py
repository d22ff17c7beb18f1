"""QAT forms of the fused modules (`torch.ao.nn.intrinsic.qat`): a fake-quantized layer
with its ReLU, and convolutions with their batch norm (`ConvBn2d`, `ConvBnReLU2d`) that
train with the norm folded into the fake-quantized weight, as PyTorch's do."""

from __future__ import annotations

import math
from typing import Any

import ember
from ember import nn
from ember.ao.nn import intrinsic as nni
from ember.ao.nn import qat
from ember.core.tensor import Tensor
from ember.nn import functional as F
from ember.nn import init


class ConvReLU2d(qat.Conv2d):
    r"""A QAT Conv2d followed by a ReLU (from a fused ``ConvReLU2d``)."""

    _relu = True


class LinearReLU(qat.Linear):
    r"""A QAT Linear followed by a ReLU (from a fused ``LinearReLU``)."""

    _relu = True


class ConvBn2d(nn.Conv2d):
    r"""A Conv2d and its BatchNorm2d for quantization-aware training: forward scales the
    weight by the norm's ``weight / running_std``, fake-quantizes it, convolves, undoes the
    scale and runs the norm (PyTorch's approximate folding); ``convert`` folds the norm into
    the quantized convolution. ``freeze_bn_stats`` stops updating the norm's statistics.
    """

    _FLOAT_MODULE: Any = nni.ConvBn2d
    _relu = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: Any = None,
                 padding_mode: str = "zeros", eps: float = 1e-05, momentum: float = 0.1,
                 freeze_bn: bool = False, qconfig: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, False, padding_mode)
        if not qconfig:
            raise AssertionError("qconfig must be provided for QAT module")
        self.qconfig = qconfig
        self.freeze_bn = freeze_bn if self.training else True
        self.bn = nn.BatchNorm2d(out_channels, eps, momentum, True, True)
        self.weight_fake_quant = qconfig.weight()
        if bias:
            self.bias = nn.Parameter(ember.empty(out_channels))
        else:
            self.register_parameter("bias", None)
        self.reset_bn_parameters()
        if self.training and not freeze_bn:
            self.update_bn_stats()
        else:
            self.freeze_bn_stats()

    def reset_bn_parameters(self) -> None:
        self.bn.reset_running_stats()
        init.uniform_(self.bn.weight)
        init.zeros_(self.bn.bias)
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in)
            init.uniform_(self.bias, -bound, bound)

    def update_bn_stats(self) -> ConvBn2d:
        self.freeze_bn = False
        self.bn.training = True
        return self

    def freeze_bn_stats(self) -> ConvBn2d:
        self.freeze_bn = True
        self.bn.training = False
        return self

    def train(self, mode: bool = True) -> ConvBn2d:
        """A frozen norm stays in eval mode (``model.train()`` leaves it frozen)."""
        self.training = mode
        if not self.freeze_bn:
            for module in self.children():
                module.train(mode)
        return self

    def forward(self, input: Tensor) -> Tensor:
        running_std = ember.sqrt(self.bn.running_var + self.bn.eps)
        scale_factor = self.bn.weight / running_std
        weight_shape = [-1] + [1] * (self.weight.ndim - 1)
        bias_shape = [1, -1] + [1] * (self.weight.ndim - 2)
        scaled_weight = self.weight_fake_quant(self.weight * scale_factor.reshape(weight_shape))
        zero_bias = ember.zeros(self.out_channels, dtype=input.dtype, device=input.device)
        conv = self._conv_forward(input, scaled_weight, zero_bias)
        conv_orig = conv / scale_factor.reshape(bias_shape)
        if self.bias is not None:
            conv_orig = conv_orig + self.bias.reshape(bias_shape)
        out = self.bn(conv_orig)
        return F.relu(out) if self._relu else out

    @classmethod
    def from_float(cls, mod: nn.Module, use_precomputed_fake_quant: bool = False) -> ConvBn2d:
        """The QAT module of a fused (``fuse_modules_qat``) conv-bn, sharing its
        parameters and statistics."""
        if type(mod) is not cls._FLOAT_MODULE:
            raise AssertionError(f"qat.{cls.__name__}.from_float only works for "
                                 f"{cls._FLOAT_MODULE.__name__}")
        if not getattr(mod, "qconfig", None):
            raise AssertionError("Input float module must have a valid qconfig")
        conv, bn = mod[0], mod[1]
        out = cls(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride,
                  conv.padding, conv.dilation, conv.groups, conv.bias is not None,
                  conv.padding_mode, bn.eps, bn.momentum, False, mod.qconfig)
        out.weight, out.bias = conv.weight, conv.bias
        out.bn.weight, out.bn.bias = bn.weight, bn.bias
        out.bn.running_mean, out.bn.running_var = bn.running_mean, bn.running_var
        out.bn.num_batches_tracked = bn.num_batches_tracked
        return out


class ConvBnReLU2d(ConvBn2d):
    r"""A :class:`ConvBn2d` followed by a ReLU (from a fused ``ConvBnReLU2d``)."""

    _FLOAT_MODULE: Any = nni.ConvBnReLU2d
    _relu = True


def update_bn_stats(mod: nn.Module) -> None:
    """Lets a QAT conv-bn update its norm's statistics again (use with ``model.apply``)."""
    if type(mod) in (ConvBn2d, ConvBnReLU2d):
        mod.update_bn_stats()


def freeze_bn_stats(mod: nn.Module) -> None:
    """Freezes a QAT conv-bn's norm statistics (use with ``model.apply``)."""
    if type(mod) in (ConvBn2d, ConvBnReLU2d):
        mod.freeze_bn_stats()


__all__ = ["ConvBn2d", "ConvBnReLU2d", "ConvReLU2d", "LinearReLU", "freeze_bn_stats",
           "update_bn_stats"]
