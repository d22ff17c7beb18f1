"""`nn.utils.spectral_norm` and `nn.utils.weight_norm`: PyTorch's hook-based weight
reparametrisations (GAN discriminators use the first, WaveNet-style models the second).

Each moves the parameter `name` to `name_orig` (spectral) or `name_g` + `name_v` (weight
norm), and a forward pre-hook recomputes `module.name` from them before every call, as
PyTorch does, so state dicts carry the same keys as PyTorch's.
"""

from __future__ import annotations

import warnings
from typing import Any

import ember
from ember.nn import functional as F
from ember.nn.module import Module
from ember.nn.parameter import Parameter


class SpectralNorm:
    """The forward pre-hook of `spectral_norm`: weight / sigma, sigma estimated by
    `n_power_iterations` steps of power iteration per training forward."""

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.name, self.dim, self.eps = name, dim, eps
        self.n_power_iterations = n_power_iterations

    def reshape_weight_to_matrix(self, weight: Any) -> Any:
        if self.dim != 0:  # the output dimension first
            weight = weight.permute(self.dim, *[d for d in range(weight.dim()) if d != self.dim])
        return weight.reshape(weight.size(0), -1)

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Any:
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with ember.no_grad():  # the buffers u and v are updated in place, as PyTorch's
                for _ in range(self.n_power_iterations):
                    v.copy_(F.normalize(ember.mv(weight_mat.t(), u), dim=0, eps=self.eps))
                    u.copy_(F.normalize(ember.mv(weight_mat, v), dim=0, eps=self.eps))
            u, v = u.clone(), v.clone()
        sigma = ember.dot(u, ember.mv(weight_mat, v))
        return weight / sigma

    def remove(self, module: Module) -> None:
        with ember.no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name,
                self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(module: Module, name: str, n_power_iterations: int, dim: int,
              eps: float) -> SpectralNorm:
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same "
                                   f"parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        with ember.no_grad():
            h, w = fn.reshape_weight_to_matrix(weight).shape
            u = F.normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=fn.eps)
            v = F.normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        setattr(module, fn.name, weight.detach())  # a plain attribute, not in state_dict
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    r"""Apply spectral normalization to a parameter of `module`, as
    ``torch.nn.utils.spectral_norm``: :math:`W_{SN} = W / \sigma(W)`, with
    :math:`\sigma(W)` estimated by power iteration on every forward in training mode.

    Args:
        module (Module): containing module.
        name (str): name of the weight parameter. Default: ``"weight"``.
        n_power_iterations (int): power iterations per forward. Default: 1.
        eps (float): epsilon for numerical stability in normalizing. Default: 1e-12.
        dim (int, optional): the output dimension (1 for ConvTranspose, else 0).

    Returns:
        The original module, with the spectral norm hook.
    """
    if dim is None:
        from ember.nn.modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d

        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d,
                                       ConvTranspose3d)) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module: Module, name: str = "weight") -> Module:
    """Remove the spectral normalization reparametrisation from `module`."""
    return _remove_reparametrisation(module, name, SpectralNorm, "spectral_norm")


def norm_except_dim(v: Any, pow: float = 2, dim: int = 0) -> Any:  # noqa: A002
    """The `pow`-norm of `v` over every dimension but `dim` (all of them for dim=-1),
    shaped to broadcast against `v`."""
    if dim == -1:
        return v.norm(pow)
    dim = dim % v.dim()
    others = [d for d in range(v.dim()) if d != dim]
    return v.norm(pow, dim=others, keepdim=True) if others else v.abs()


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
        module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, 2,
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


def _remove_reparametrisation(module: Module, name: str, kind: type, label: str) -> Module:
    """Undo the `kind` hook on parameter `name` of `module` (PyTorch's error if none)."""
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, kind) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"{label} of '{name}' not found in {module}")
