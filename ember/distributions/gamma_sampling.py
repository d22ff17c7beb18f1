"""Reparameterised gamma draws through ember ops, for Gamma, Chi2, Beta and Dirichlet.

Draws use Marsaglia and Tsang's rejection sampler (shape < 1 boosted by `U ** (1 / shape)`),
so they run on any device but follow a different random stream from PyTorch's. Their gradient
with respect to the shape is PyTorch's implicit reparameterisation,
``dx/dalpha = -(dF(x; alpha)/dalpha) / f(x; alpha)`` with F the regularised lower incomplete
gamma function; dF/dalpha is a central difference of `special.gammainc` in float64 (PyTorch uses
series and asymptotic expansions of the same derivative): the two agree to about 1e-5 relative
typically and 1e-3 at worst (shapes from 0.01 to 5000).
"""

from __future__ import annotations

import ember
from ember.autograd import Function

__all__ = ["standard_gamma"]


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


def standard_gamma_grad(alpha, x):
    """d x / d alpha of a unit-rate gamma draw `x` held at its CDF value (float64 inside)."""
    a, v = alpha.double(), x.double()
    h = 1e-5 * ember.clamp(a, min=1.0)
    dcdf = (ember.special.gammainc(a + h, v) - ember.special.gammainc(a - h, v)) / (2 * h)
    log_pdf = (a - 1) * v.log() - v - ember.lgamma(a)
    return (-dcdf / log_pdf.exp()).to(alpha.dtype)


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
