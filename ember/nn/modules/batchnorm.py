"""PyTorch's module of the batch norms (`from torch.nn.modules.batchnorm import
_BatchNorm`, for isinstance checks), where they print and pickle from; their code is in
normalization.py and lazy.py."""

import sys

from ember.core.dtype import place_in
from ember.nn.modules.lazy import LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d
from ember.nn.modules.normalization import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    SyncBatchNorm,
    _BatchNorm,
    _NormBase,
)

place_in(sys.modules[__name__], _NormBase, _BatchNorm, BatchNorm1d, BatchNorm2d, BatchNorm3d,
         SyncBatchNorm, LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d)
