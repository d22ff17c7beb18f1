"""PyTorch's module of the containers (`from torch.nn.modules.container import
Sequential`), where they print and pickle from; their code is in ember.nn.containers."""

import sys

from ember.core.dtype import place_in
from ember.nn.containers import (  # noqa: F401
    Container,
    ModuleDict,
    ModuleList,
    ParameterDict,
    ParameterList,
    Sequential,
    __all__,
)

place_in(sys.modules[__name__], Container, Sequential, ModuleList, ModuleDict, ParameterList,
         ParameterDict)
