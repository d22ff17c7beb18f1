"""PyTorch's module path of the containers (`from torch.nn.modules.container import
Sequential`); the classes live in ember.nn.containers."""

from ember.nn.containers import (  # noqa: F401
    Container,
    ModuleDict,
    ModuleList,
    ParameterDict,
    ParameterList,
    Sequential,
)

__all__ = ["Container", "Sequential", "ModuleList", "ModuleDict", "ParameterList",
           "ParameterDict"]
