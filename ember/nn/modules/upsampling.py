"""PyTorch's module of the upsampling layers (`torch.nn.modules.upsampling`), where they print and
pickle from; their code is in flatten.py."""

import sys

from ember.core.dtype import place_in
from ember.nn.modules.flatten import (  # noqa: F401
    Upsample,
    UpsamplingBilinear2d,
    UpsamplingNearest2d,
)

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]

place_in(sys.modules[__name__], Upsample, UpsamplingNearest2d, UpsamplingBilinear2d)
