"""PyTorch's module path of the upsampling layers (`torch.nn.modules.upsampling`); the
classes live in flatten.py."""

from ember.nn.modules.flatten import (  # noqa: F401
    Upsample,
    UpsamplingBilinear2d,
    UpsamplingNearest2d,
)

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]
