"""`nn.utils.spectral_norm`: PyTorch's hook-based spectral reparametrisation (GAN
discriminators use it; weight_norm.py holds its sibling).

It moves the parameter `name` to `name_orig`, and a forward pre-hook recomputes
`module.name` from it before every call, as PyTorch does, so state dicts carry the same
keys as PyTorch's.
"""

from __future__ import annotations

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


def _remove_reparametrisation(module: Module, name: str, kind: type, label: str) -> Module:
    """Undo the `kind` hook on parameter `name` of `module` (PyTorch's error if none)."""
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, kind) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"{label} of '{name}' not found in {module}")
