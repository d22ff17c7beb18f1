"""`ember.nn.utils.parametrizations` (PyTorch's torch.nn.utils.parametrizations):
`weight_norm` and `spectral_norm` as parametrizations (`nn.utils.parametrize`), the
forms PyTorch recommends over the hook-based `nn.utils.weight_norm`/`spectral_norm`."""

from __future__ import annotations

import ember
from ember.core.tensor import Tensor
from ember.nn import functional as F
from ember.nn.module import Module
from ember.nn.utils import parametrize
from ember.nn.utils.spectral_norm import norm_except_dim

__all__ = ["spectral_norm", "weight_norm"]


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return weight_v * (weight_g / norm_except_dim(weight_v, 2, self.dim))

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    r"""Apply weight normalization to a parameter in the given module:
    :math:`\mathbf{w} = g \dfrac{\mathbf{v}}{\|\mathbf{v}\|}`, with the magnitude ``g``
    in ``parametrizations.<name>.original0`` and the direction ``v`` in ``original1``.

    Args:
        module (Module): containing module.
        name (str, optional): name of weight parameter. Default: ``"weight"``.
        dim (int, optional): dimension over which to compute the norm (``None``: the
            whole tensor). Default: 0.

    Returns:
        The original module with the weight norm parametrization.
    """
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.size()
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            # start from a good estimate of the singular vectors
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:  # the output dimension first
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        # the buffers are updated in place, as PyTorch's (out=)
        with ember.no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(ember.mv(weight_mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(ember.mv(weight_mat.H, self._u), dim=0,
                                          eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = ember.vdot(u, ember.mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    r"""Apply spectral normalization to a parameter in the given module:
    :math:`\mathbf{W}_{SN} = \dfrac{\mathbf{W}}{\sigma(\mathbf{W})}`, :math:`\sigma`
    estimated by power iteration (the singular vectors are the buffers ``_u`` and ``_v``
    of the parametrization, updated on every access in training mode).

    Args:
        module (nn.Module): containing module.
        name (str, optional): name of weight parameter. Default: ``"weight"``.
        n_power_iterations (int, optional): number of power iterations. Default: 1.
        eps (float, optional): epsilon for numerical stability. Default: ``1e-12``.
        dim (int, optional): dimension corresponding to number of outputs (1 for
            ConvTranspose modules, else 0).

    Returns:
        The original module with a new parametrization registered to the specified weight.
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        from ember.nn.modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d

        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d,
                                       ConvTranspose3d)) else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
