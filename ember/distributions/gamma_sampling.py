"""Reparameterised gamma and Dirichlet draws through ember ops, for Gamma, Chi2, Beta,
Dirichlet and StudentT.

Draws use Marsaglia and Tsang's rejection sampler (shape < 1 boosted by `U ** (1 / shape)`),
so they run on any device but follow a different random stream from PyTorch's. Their
gradients are PyTorch's implicit reparameterisation gradients (`implicit_grads`): given the
same draw, the same gradient as `torch._standard_gamma` / `torch._sample_dirichlet` give.
"""

from __future__ import annotations

import ember
from ember.autograd import Function
from ember.distributions.implicit_grads import dirichlet_grad, standard_gamma_grad

__all__ = ["sample_dirichlet", "standard_gamma"]


def _marsaglia_tsang(alpha):
    """Unit-rate gamma draws of shape `alpha` (> 0), without gradient."""
    boosted = alpha < 1
    a = ember.where(boosted, alpha + 1, alpha)
    d = a - 1.0 / 3.0
    c = (9.0 * d).rsqrt()
    out = ember.zeros_like(alpha)
    pending = ember.ones_like(alpha, dtype=ember.bool)
    while bool(pending.any()):
        x = ember.randn(tuple(alpha.shape), dtype=alpha.dtype, device=alpha.device)
        u = ember.rand(tuple(alpha.shape), dtype=alpha.dtype, device=alpha.device)
        v = (1 + c * x) ** 3
        v_safe = ember.where(v > 0, v, ember.ones_like(v))
        accepted = (v > 0) & (u.log() < 0.5 * x * x + d - d * v_safe + d * v_safe.log())
        accepted = accepted & pending
        out = ember.where(accepted, d * v_safe, out)
        pending = pending & ~accepted
    u = ember.rand(tuple(alpha.shape), dtype=alpha.dtype, device=alpha.device)
    safe_alpha = ember.where(boosted, alpha, ember.ones_like(alpha))
    return ember.where(boosted, out * u.pow(1.0 / safe_alpha), out)


class _StandardGamma(Function):
    @staticmethod
    def forward(ctx, alpha):
        x = _marsaglia_tsang(alpha)
        x = x.clamp(min=ember.finfo(x.dtype).tiny)
        ctx.save_for_backward(alpha, x)
        return x

    @staticmethod
    def backward(ctx, grad_output):
        alpha, x = ctx.saved_tensors
        return grad_output * standard_gamma_grad(alpha, x)


def standard_gamma(concentration):
    """Gamma(concentration, 1) draws, differentiable with respect to `concentration`."""
    return _StandardGamma.apply(concentration)


class _Dirichlet(Function):
    @staticmethod
    def forward(ctx, concentration):
        gammas = _marsaglia_tsang(concentration).clamp(min=ember.finfo(concentration.dtype).tiny)
        x = gammas / gammas.sum(-1, keepdim=True)
        ctx.save_for_backward(x, concentration)
        return x

    @staticmethod
    def backward(ctx, grad_output):
        x, concentration = ctx.saved_tensors
        total = concentration.sum(-1, True).expand_as(concentration)
        grad = dirichlet_grad(x, concentration, total)
        return grad * (grad_output - (x * grad_output).sum(-1, True))


def sample_dirichlet(concentration):
    """Dirichlet(concentration) draws (normalised gamma draws over the last dimension),
    differentiable with respect to `concentration` as PyTorch's."""
    return _Dirichlet.apply(concentration)
