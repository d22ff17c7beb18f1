"""`torch.quantization`, PyTorch's older name of `torch.ao.quantization`: the same module
(`ember.quantization is ember.ao.quantization`), submodules included."""

from ember.ao import _alias, quantization

_alias.alias_package(__name__, quantization)
