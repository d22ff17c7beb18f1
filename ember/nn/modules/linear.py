"""`Identity`, `Linear`, `Bilinear`."""

from __future__ import annotations

import math
from typing import Any

import ember
from ember import Tensor
from ember.nn import functional as F
from ember.nn import init
from ember.nn.module import Module
from ember.nn.parameter import Parameter

__all__ = ["Identity", "Linear", "Bilinear"]


class Identity(Module):
    r"""A placeholder that returns its input; any constructor arguments are ignored."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        return input


class Linear(Module):
    r"""Apply an affine map to the last dimension: :math:`y = xA^T + b`.

    Args:
        in_features: size of each input sample.
        out_features: size of each output sample.
        bias: if ``False``, the layer learns no additive bias. Default: ``True``

    Shape: input ``(*, in_features)``, output ``(*, out_features)``.

    Attributes:
        weight: ``(out_features, in_features)``, initialised from
            :math:`\mathcal{U}(-\sqrt{k}, \sqrt{k})`, :math:`k = 1/\text{in\_features}`.
        bias: ``(out_features)``, initialised the same way.
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(ember.empty((out_features, in_features), device=device,
                                            dtype=dtype))
        if bias:
            self.bias = Parameter(ember.empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        r"""Re-initialise the weight (kaiming_uniform_ with a=sqrt(5)) and bias."""
        # kaiming_uniform_ with a=sqrt(5) is U(-1/sqrt(in), 1/sqrt(in)), as torch does it
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Bilinear(Module):
    r"""Apply a bilinear map: :math:`y = x_1^T A x_2 + b`.

    Args:
        in1_features, in2_features: sizes of the two inputs' last dimension.
        out_features: size of each output sample.
        bias: if ``False``, no additive bias. Default: ``True``

    Attributes:
        weight: ``(out_features, in1_features, in2_features)``, and bias
            ``(out_features)``, both from :math:`\mathcal{U}(-\sqrt{k}, \sqrt{k})`,
            :math:`k = 1/\text{in1\_features}`.
    """

    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(ember.empty((out_features, in1_features, in2_features),
                                            device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(ember.empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.in1_features <= 0:
            raise ValueError(f"in1_features must be > 0, but got (in1_features="
                             f"{self.in1_features})")
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")
