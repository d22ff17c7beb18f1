"""Quantized modules (`torch.ao.nn.quantized`, also `torch.nn.quantized`)."""

from ember.ao.nn.quantized import dynamic, functional  # noqa: F401
from ember.ao.nn.quantized.modules import (
    Conv2d,
    DeQuantize,
    FloatFunctional,
    Linear,
    LinearPackedParams,
    QFunctional,
    Quantize,
)

__all__ = ["Conv2d", "DeQuantize", "FloatFunctional", "Linear", "LinearPackedParams",
           "QFunctional", "Quantize", "dynamic", "functional"]
