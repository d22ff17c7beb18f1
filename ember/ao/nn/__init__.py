"""Quantized, fused and quantization-aware-training modules (`torch.ao.nn`)."""

from ember.ao.nn import intrinsic, qat, quantized  # noqa: F401

__all__ = ["intrinsic", "qat", "quantized"]
