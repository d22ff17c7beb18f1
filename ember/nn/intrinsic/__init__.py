"""`torch.nn.intrinsic`, PyTorch's older name of `torch.ao.nn.intrinsic`: the same module,
submodules (`qat`, `quantized`) included."""

from ember.ao import _alias
from ember.ao.nn import intrinsic
from ember.ao.nn.intrinsic import qat, quantized  # noqa: F401 - aliased below too

_alias.alias_package(__name__, intrinsic)
