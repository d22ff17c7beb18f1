"""PyTorch's module path of the instance norms (`from torch.nn.modules.instancenorm
import _InstanceNorm`, for isinstance checks); the classes live in normalization.py
and lazy.py."""

from ember.nn.modules.lazy import (  # noqa: F401
    LazyInstanceNorm1d,
    LazyInstanceNorm2d,
    LazyInstanceNorm3d,
)
from ember.nn.modules.normalization import (  # noqa: F401
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    _InstanceNorm,
    _NormBase,
)

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LazyInstanceNorm1d",
           "LazyInstanceNorm2d", "LazyInstanceNorm3d"]
