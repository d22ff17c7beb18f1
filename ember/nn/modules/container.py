"""PyTorch's module path of the containers (`from torch.nn.modules.container import
Sequential`); the classes live in ember.nn.containers."""

from ember.nn.containers import *  # noqa: F401, F403
from ember.nn.containers import __all__  # noqa: F401
