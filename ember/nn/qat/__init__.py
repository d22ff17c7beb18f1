"""`torch.nn.qat`, PyTorch's older name of `torch.ao.nn.qat`: the same module."""

from ember.ao import _alias
from ember.ao.nn import qat

_alias.alias_package(__name__, qat)
