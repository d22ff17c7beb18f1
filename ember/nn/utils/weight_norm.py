"""`nn.utils.weight_norm`: PyTorch's hook-based weight normalisation (WaveNet-style models
use it). It moves the parameter `name` to `name_g` + `name_v`, and a forward pre-hook
recomputes `module.name` from them before every call, as PyTorch does, so state dicts
carry the same keys as PyTorch's.
"""

from __future__ import annotations

import warnings
from typing import Any

import ember
from ember.nn.module import Module
from ember.nn.parameter import Parameter
from ember.nn.utils.spectral_norm import _remove_reparametrisation

__all__ = ["WeightNorm", "remove_weight_norm", "weight_norm"]


class WeightNorm:
    """The forward pre-hook of `weight_norm`: weight = g * v / ||v||."""

    def __init__(self, name: str, dim: int | None) -> None:
        self.name, self.dim = name, -1 if dim is None else dim

    def compute_weight(self, module: Module) -> Any:
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return ember._weight_norm(v, g, self.dim)

    def remove(self, module: Module) -> None:
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module))

    @staticmethod
    def apply(module: Module, name: str, dim: int | None) -> WeightNorm:
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same "
                                   f"parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(ember.norm_except_dim(weight, 2,
                                                                               fn.dim).detach()))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    r"""Apply weight normalization to a parameter of `module`, as
    ``torch.nn.utils.weight_norm``: the magnitude ``name_g`` and the direction ``name_v``
    become the parameters, and :math:`w = g \, v / \|v\|` is recomputed before each forward.

    Args:
        module (Module): containing module.
        name (str): name of the weight parameter. Default: ``"weight"``.
        dim (int, optional): dimension over which the norm is *not* taken (``None``: the
            whole tensor). Default: 0.

    Returns:
        The original module, with the weight norm hook.
    """
    # PyTorch's warning; its replacement (nn.utils.parametrizations) is not in ember yet
    warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                  "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=2)
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    """Remove the weight normalization reparametrisation from `module`."""
    return _remove_reparametrisation(module, name, WeightNorm, "weight_norm")
