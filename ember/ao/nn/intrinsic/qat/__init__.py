"""QAT forms of the fused modules (`torch.ao.nn.intrinsic.qat`): a fake-quantized layer
with its ReLU."""

from __future__ import annotations

from ember.ao.nn import qat


class ConvReLU2d(qat.Conv2d):
    r"""A QAT Conv2d followed by a ReLU (from a fused ``ConvReLU2d``)."""

    _relu = True


class LinearReLU(qat.Linear):
    r"""A QAT Linear followed by a ReLU (from a fused ``LinearReLU``)."""

    _relu = True


__all__ = ["ConvReLU2d", "LinearReLU"]
