"""PyTorch's module of the instance norms (`from torch.nn.modules.instancenorm import
_InstanceNorm`, for isinstance checks), where they print and pickle from; their code is
in normalization.py and lazy.py."""

import sys

from ember.core.dtype import place_in
from ember.nn.modules.lazy import (
    LazyInstanceNorm1d,
    LazyInstanceNorm2d,
    LazyInstanceNorm3d,
)
from ember.nn.modules.normalization import (
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    _InstanceNorm,
    _NormBase,  # noqa: F401
)

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LazyInstanceNorm1d",
           "LazyInstanceNorm2d", "LazyInstanceNorm3d"]

place_in(sys.modules[__name__], _InstanceNorm, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d,
         LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d)
