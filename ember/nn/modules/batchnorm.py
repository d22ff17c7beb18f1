"""PyTorch's module path of the batch norms (`from torch.nn.modules.batchnorm import
_BatchNorm`, for isinstance checks); the classes live in normalization.py."""

from ember.nn.modules.normalization import (  # noqa: F401
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    SyncBatchNorm,
    _BatchNorm,
    _NormBase,
)
