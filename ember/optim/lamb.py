"""LAMB ("Large Batch Optimization for Deep Learning: Training BERT in 76 minutes",
You et al., ICLR 2020; Algorithm 2)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ember
from ember.core.creation import zeros_like
from ember.core.grad_mode import no_grad
from ember.core.ops import foreach as fe
from ember.core.tensor import Tensor
from ember.optim.adam import _check_adam_args
from ember.optim.optimizer import (
    Optimizer,
    ParamsT,
    _buckets,
    _per_step,
    _use_foreach,
    refuse_sparse,
)

__all__ = ["LAMB"]


class LAMB(Optimizer):
    r"""LAMB: Adam's moments with a layer-wise trust ratio, for large-batch training.

    PyTorch has no LAMB; this follows Algorithm 2 of You et al. (2020). For each
    parameter tensor :math:`\theta` (one "layer") with gradient :math:`g_t` (negated when
    ``maximize``), at step :math:`t = 1, 2, \dots`:

    .. math::
        \begin{aligned}
        m_t &= \beta_1 m_{t-1} + (1 - \beta_1) g_t \\
        v_t &= \beta_2 v_{t-1} + (1 - \beta_2) g_t^2 \\
        \hat m_t &= m_t / (1 - \beta_1^t), \qquad \hat v_t = v_t / (1 - \beta_2^t) \\
        u_t &= \frac{\hat m_t}{\sqrt{\hat v_t} + \epsilon} + \lambda \theta_{t-1} \\
        r_t &= \begin{cases}
            \phi(\lVert\theta_{t-1}\rVert) / \lVert u_t \rVert
                & \lVert\theta_{t-1}\rVert > 0 \text{ and } \lVert u_t \rVert > 0 \\
            1 & \text{otherwise} \end{cases} \\
        \theta_t &= \theta_{t-1} - \gamma \, r_t \, u_t
        \end{aligned}

    where the norms are Euclidean norms over the whole tensor, and
    :math:`\phi(z) = \min(\max(z, \gamma_l), \gamma_u)` clamps the weight norm
    (the identity unless ``min_weight_norm`` / ``max_weight_norm`` are given). The weight
    decay is decoupled, as in AdamW: it is added to the update, not to the moments.
    The trust ratio is computed on the device (no host synchronization).

    Args:
        params (iterable): tensors to optimize, or dicts defining parameter groups.
        lr (float): learning rate :math:`\gamma` (default: 1e-3).
        betas (Tuple[float, float]): running-average coefficients (default: (0.9, 0.999)).
        eps (float): added to the denominator for numerical stability (default: 1e-6).
        weight_decay (float): decoupled weight decay :math:`\lambda` (default: 1e-2).
        min_weight_norm (float, optional): lower clamp :math:`\gamma_l` of
            :math:`\lVert\theta\rVert` in the trust ratio (default: None, no clamp).
        max_weight_norm (float, optional): upper clamp :math:`\gamma_u` of
            :math:`\lVert\theta\rVert` in the trust ratio (default: None, no clamp).
        maximize (bool): maximize the objective instead of minimizing it (default: False).
        foreach (bool, optional): ``None`` or ``True`` (default) updates all parameters
            of a device and dtype with list ops and computes their trust ratios at once;
            ``False`` runs the per-tensor loop. Both compute the same update.

    State per parameter: ``step``, ``exp_avg`` and ``exp_avg_sq``.
    """

    _scalar_state = ()  # (not a PyTorch optimizer: counts steps in a Python int)

    _option_defaults = {"min_weight_norm": None, "max_weight_norm": None, "maximize": False,
                        "foreach": None}

    def __init__(self, params: ParamsT, lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-6,
                 weight_decay: float = 1e-2, *, min_weight_norm: float | None = None,
                 max_weight_norm: float | None = None, maximize: bool = False,
                 foreach: bool | None = None) -> None:
        _check_adam_args(lr, betas, eps, weight_decay)
        if min_weight_norm is not None and min_weight_norm < 0.0:
            raise ValueError(f"Invalid min_weight_norm value: {min_weight_norm}")
        if max_weight_norm is not None and not 0.0 < max_weight_norm:
            raise ValueError(f"Invalid max_weight_norm value: {max_weight_norm}")
        if min_weight_norm is not None and max_weight_norm is not None and \
                min_weight_norm > max_weight_norm:
            raise ValueError(f"min_weight_norm ({min_weight_norm}) must not exceed "
                             f"max_weight_norm ({max_weight_norm})")
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay,
                    "min_weight_norm": min_weight_norm, "max_weight_norm": max_weight_norm,
                    "maximize": maximize, "foreach": foreach}
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step.

        Args:
            closure (Callable, optional): re-evaluates the model and returns the loss.
        """
        loss = self._eval_closure(closure)
        state = self.state
        with no_grad():
            for group in self.param_groups:
                params, grads, exp_avgs, exp_avg_sqs, steps = [], [], [], [], []
                for p in group["params"]:
                    grad = p.grad
                    if grad is None:
                        continue
                    refuse_sparse(grad, "LAMB")
                    pstate = state[p]
                    if not pstate:
                        pstate["step"] = 0
                        pstate["exp_avg"] = zeros_like(p)
                        pstate["exp_avg_sq"] = zeros_like(p)
                    steps.append(pstate["step"] + 1)
                    pstate["step"] = steps[-1]
                    params.append(p)
                    grads.append(grad)
                    exp_avgs.append(pstate["exp_avg"])
                    exp_avg_sqs.append(pstate["exp_avg_sq"])
                if not params:
                    continue
                options = (group["lr"], *group["betas"], group["eps"], group["weight_decay"],
                           group["min_weight_norm"], group["max_weight_norm"],
                           group["maximize"])
                if _use_foreach(group):
                    for bucket in _buckets(params, grads, exp_avgs, exp_avg_sqs, steps):
                        _lamb_foreach(*bucket, *options)
                else:
                    _lamb_single(params, grads, exp_avgs, exp_avg_sqs, steps, *options)
        return loss


def _trust_ratio(w_norm: Tensor, u_norm: Tensor, lo: float | None,
                 hi: float | None) -> Tensor:
    """phi(||w||) / ||u||, and 1 where either norm is 0 (elementwise, so it also works on
    stacked norms). A zero-initialized layer, or a zero update, still takes the plain step."""
    phi = w_norm if lo is None and hi is None else w_norm.clamp(lo, hi)
    usable = (w_norm > 0).logical_and(u_norm > 0)
    return ember.where(usable, phi / ember.where(usable, u_norm, 1.0), 1.0)


def _lamb_single(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
                 exp_avg_sqs: list[Tensor], steps: list[int], lr: float, beta1: float,
                 beta2: float, eps: float, weight_decay: float, lo: float | None,
                 hi: float | None, maximize: bool) -> None:
    """The per-tensor update (`steps` already counts this step)."""
    for p, grad, exp_avg, exp_avg_sq, step in zip(params, grads, exp_avgs, exp_avg_sqs,
                                                   steps):
        if maximize:
            grad = -grad
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        update = exp_avg / (1 - beta1 ** step)
        denom = (exp_avg_sq / (1 - beta2 ** step)).sqrt_().add_(eps)
        update.div_(denom)
        if weight_decay != 0:
            update.add_(p, alpha=weight_decay)
        trust = _trust_ratio(p.norm(), update.norm(), lo, hi)
        p.sub_(update.mul_(trust * lr))


def _lamb_foreach(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
                  exp_avg_sqs: list[Tensor], steps: list[int], lr: float, beta1: float,
                  beta2: float, eps: float, weight_decay: float, lo: float | None,
                  hi: float | None, maximize: bool) -> None:
    """The same update with list ops, and the trust ratios of all tensors at once."""
    if maximize:
        grads = fe._foreach_neg(grads)
    fe._foreach_lerp_(exp_avgs, grads, 1 - beta1)
    fe._foreach_mul_(exp_avg_sqs, beta2)
    fe._foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2)
    updates = fe._foreach_div(exp_avgs, _per_step(steps, lambda s: 1 - beta1 ** s))
    denom = fe._foreach_div(exp_avg_sqs, _per_step(steps, lambda s: 1 - beta2 ** s))
    fe._foreach_sqrt_(denom)
    fe._foreach_add_(denom, eps)
    fe._foreach_div_(updates, denom)
    if weight_decay != 0:
        fe._foreach_add_(updates, params, alpha=weight_decay)
    w_norms = ember.stack(fe._foreach_norm(params))
    u_norms = ember.stack(fe._foreach_norm(updates))
    scales = (_trust_ratio(w_norms, u_norms, lo, hi) * lr).unbind(0)
    fe._foreach_mul_(updates, list(scales))
    fe._foreach_sub_(params, updates)
