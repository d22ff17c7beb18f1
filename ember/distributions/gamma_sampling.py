"""Reparameterised gamma and Dirichlet draws through ember ops, for Gamma, Chi2, Beta,
Dirichlet and StudentT.

Draws use Marsaglia and Tsang's rejection sampler (shape < 1 boosted by `U ** (1 / shape)`).
On the CPU it runs element by element on the host generator as PyTorch's `sample_gamma`
does (`cpu_random.gamma`), so a seeded program draws PyTorch's numbers (a Beta mixup's lam);
elsewhere (and while a trace records) it runs vectorised on the device's generator. Their
gradients are PyTorch's implicit reparameterisation gradients (`implicit_grads`): given the
same draw, the same gradient as `torch._standard_gamma` / `torch._sample_dirichlet` give.
"""

from __future__ import annotations

import numpy as np

import ember
from ember.autograd import Function
from ember.core import cpu_random, tracing
from ember.core.creation import default_generator, host_random
from ember.core.host import host_array
from ember.distributions.implicit_grads import dirichlet_grad, standard_gamma_grad

__all__ = ["sample_dirichlet", "standard_gamma"]


def _host_gamma(alpha, single: bool, generator=None):
    """PyTorch's CPU gamma draws of each shape in `alpha` (row-major order, float64 on
    the host; from `generator`, else the default one), or None where they are drawn on a
    device or recorded by a trace."""
    if tracing.replaying() or alpha.device.type != "cpu" or \
            alpha.dtype not in (ember.float32, ember.float64):
        return None
    shapes = np.ascontiguousarray(host_array(alpha.detach())).reshape(-1)
    return cpu_random.gamma((generator or default_generator)._engine, shapes, single)


def _from_host(values: np.ndarray, like):
    """`values` (row-major) as a tensor of `like`'s shape, dtype and device, recorded as
    a random draw (a compiled step replays a fresh one)."""
    shape = tuple(like.shape)
    return host_random("gamma", shape, like.dtype, like.device, lambda: values, shape=shape)


def _marsaglia_tsang(alpha, generator=None):
    """Unit-rate gamma draws of shape `alpha` (> 0), without gradient."""
    host = _host_gamma(alpha, single=alpha.dtype is ember.float32, generator=generator)
    if host is not None:  # PyTorch's `_standard_gamma`: rounded to the dtype
        return _from_host(host, alpha)
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
    def forward(ctx, alpha, generator=None):
        x = _marsaglia_tsang(alpha, generator)
        x = x.clamp(min=ember.finfo(x.dtype).tiny)
        ctx.save_for_backward(alpha, x)
        return x

    @staticmethod
    def backward(ctx, grad_output):
        alpha, x = ctx.saved_tensors
        return grad_output * standard_gamma_grad(alpha, x), None


def _aten_node_name(self) -> str:
    return "StandardGammaBackward0"


# torch._standard_gamma is an ATen op: its node is `StandardGammaBackward0`
_StandardGamma._backward_cls = type("StandardGammaBackward0", (_StandardGamma._backward_cls,),
                                    {"__slots__": (), "name": _aten_node_name})


def standard_gamma(concentration, generator=None):
    """Gamma(concentration, 1) draws, differentiable with respect to `concentration`
    (`torch._standard_gamma`)."""
    return _StandardGamma.apply(concentration, generator)


class _Dirichlet(Function):
    @staticmethod
    def forward(ctx, concentration, generator=None):
        host = _host_gamma(concentration, single=False, generator=generator)
        if host is not None:  # PyTorch's `_sample_dirichlet`: normalised in float64
            gammas = np.maximum(host, np.finfo(np.float64).tiny).reshape(concentration.shape)
            ratio = (gammas / gammas.sum(-1, keepdims=True)).astype(
                host_array(ember.empty(0, dtype=concentration.dtype)).dtype)
            top = np.nextafter(ratio.dtype.type(1), ratio.dtype.type(0))
            x = _from_host(np.clip(ratio, np.finfo(ratio.dtype).tiny, top).reshape(-1),
                           concentration)
        else:
            gammas = _marsaglia_tsang(concentration, generator).clamp(
                min=ember.finfo(concentration.dtype).tiny)
            x = gammas / gammas.sum(-1, keepdim=True)
        ctx.save_for_backward(x, concentration)
        return x

    @staticmethod
    def backward(ctx, grad_output):
        x, concentration = ctx.saved_tensors
        total = concentration.sum(-1, True).expand_as(concentration)
        grad = dirichlet_grad(x, concentration, total)
        return grad * (grad_output - (x * grad_output).sum(-1, True)), None


def sample_dirichlet(concentration, generator=None):
    """Dirichlet(concentration) draws (normalised gamma draws over the last dimension),
    differentiable with respect to `concentration` as PyTorch's (`torch._sample_dirichlet`)."""
    return _Dirichlet.apply(concentration, generator)
