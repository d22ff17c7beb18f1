"""Fused modules (`torch.ao.nn.intrinsic`) and their quantized and QAT forms."""

from ember.ao.nn.intrinsic.modules import BNReLU2d, ConvBn2d, ConvBnReLU2d, ConvReLU2d, LinearReLU

__all__ = ["BNReLU2d", "ConvBn2d", "ConvBnReLU2d", "ConvReLU2d", "LinearReLU"]
