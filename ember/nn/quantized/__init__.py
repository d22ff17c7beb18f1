"""`torch.nn.quantized`, PyTorch's older name of `torch.ao.nn.quantized`: the same module,
submodules (`dynamic`, `functional`) included."""

from ember.ao import _alias
from ember.ao.nn import quantized

_alias.alias_package(__name__, quantized)
