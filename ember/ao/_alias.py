"""PyTorch's older names of the quantization packages (`torch.quantization`,
`torch.nn.quantized`): the same module objects under a second name, submodules included,
so `torch.nn.quantized.dynamic.Linear is torch.ao.nn.quantized.dynamic.Linear`."""

import sys
from types import ModuleType


def alias_package(alias: str, package: ModuleType) -> None:
    """Registers `package` and its loaded submodules under the name `alias` as well."""
    prefix = package.__name__
    for name, module in list(sys.modules.items()):
        if name == prefix or name.startswith(prefix + "."):
            sys.modules[alias + name[len(prefix):]] = module
