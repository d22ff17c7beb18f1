"""Quantized fused modules (`torch.ao.nn.intrinsic.quantized`): a quantized layer whose
output is clamped at its zero point (the ReLU folded into the requantization)."""

from __future__ import annotations

from ember.ao.nn.quantized.modules import Conv2d, Linear


class ConvReLU2d(Conv2d):
    r"""A quantized Conv2d with a fused ReLU (``QuantizedConvReLU2d``)."""

    _relu = True

    def _get_name(self) -> str:
        return "QuantizedConvReLU2d"


class LinearReLU(Linear):
    r"""A quantized Linear with a fused ReLU (``QuantizedLinearReLU``)."""

    _relu = True

    def _get_name(self) -> str:
        return "QuantizedLinearReLU"


__all__ = ["ConvReLU2d", "LinearReLU"]
