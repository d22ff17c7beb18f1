"""Adamax, the infinity-norm variant of Adam ("Adam: A Method for Stochastic
Optimization", Kingma and Ba, section 7)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ember
from ember.core.ops import foreach as fe
from ember.core.tensor import Tensor
from ember.optim.adam import _check_adam_args
from ember.optim.optimizer import (
    Optimizer,
    ParamsT,
    _advance,
    _buckets,
    _foreach_penalized_grads,
    _implementation_options,
    _per_step,
    _use_foreach,
)

__all__ = ["Adamax"]


class Adamax(Optimizer):
    r"""Adamax, as PyTorch's ``Adamax``.

    For each parameter :math:`\theta` with gradient :math:`g_t` (negated when
    ``maximize``), at step :math:`t = 1, 2, \dots`:

    .. math::
        \begin{aligned}
        g_t &\leftarrow g_t + \lambda \theta_{t-1} \\
        m_t &= \beta_1 m_{t-1} + (1 - \beta_1) g_t \\
        u_t &= \max(\beta_2 u_{t-1}, |g_t| + \epsilon) \\
        \theta_t &= \theta_{t-1} - \frac{\gamma}{1 - \beta_1^t} \frac{m_t}{u_t}
        \end{aligned}

    Args:
        params (iterable): tensors to optimize, or dicts defining parameter groups.
        lr (float): learning rate :math:`\gamma` (default: 2e-3).
        betas (Tuple[float, float]): coefficients for the running averages of the
            gradient and of its infinity norm (default: (0.9, 0.999)).
        eps (float): added to the denominator for numerical stability (default: 1e-8).
        weight_decay (float): L2 penalty :math:`\lambda` (default: 0).
        foreach (bool, optional): ``None`` or ``True`` (default) updates all parameters
            of a device and dtype with one list op per stage; ``False`` runs the
            per-tensor loop. Both compute the same update.
        maximize (bool): maximize the objective instead of minimizing it (default: False).

    State per parameter: ``step``, ``exp_avg`` and ``exp_inf``.
    """

    _option_defaults = {"differentiable": False, "capturable": False, "foreach": None,
                        "maximize": False}

    def __init__(self, params: ParamsT, lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        _check_adam_args(lr, betas, eps, weight_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize}
        defaults.update(_implementation_options("Adamax", foreach, differentiable=differentiable,
                                                capturable=capturable))
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step.

        Args:
            closure (Callable, optional): re-evaluates the model and returns the loss.
        """
        loss = self._eval_closure(closure)
        state = self.state
        with self._update_mode():
            for group in self.param_groups:
                capturable = group["capturable"]
                # (capturable: the step counts stay tensors, never read into Python)
                params, grads, (exp_avgs, exp_infs), steps, states = _advance(
                    state, group, ("exp_avg", "exp_inf"), optimizer="Adamax",
                    read_steps=not capturable)
                if not params:
                    continue
                beta1, beta2 = group["betas"]
                options = (group["lr"], beta1, beta2, group["eps"], group["weight_decay"],
                           group["maximize"])
                if capturable:
                    _use_foreach(group)  # (raises PyTorch's error for foreach + autograd)
                    _adamax_single(params, grads, exp_avgs, exp_infs,
                                   [st["step"] for st in states], *options,
                                   differentiable=group["differentiable"], capturable=True)
                elif _use_foreach(group):
                    for bucket in _buckets(params, grads, exp_avgs, exp_infs, steps):
                        _adamax_foreach(*bucket, *options)
                else:
                    _adamax_single(params, grads, exp_avgs, exp_infs, steps, *options,
                                   differentiable=group["differentiable"])
        return loss


def _adamax_single(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
                   exp_infs: list[Tensor], steps: list[float], lr: float, beta1: float,
                   beta2: float, eps: float, weight_decay: float, maximize: bool,
                   differentiable: bool = False, capturable: bool = False) -> None:
    """The per-tensor update (`steps` already counts this step); in a differentiable
    group the new `exp_inf` is PyTorch's `amax` over a stacked copy, so the tensor
    autograd saves is not the one overwritten. In a capturable group `steps` are the
    step tensors and the bias correction is computed from them on their device."""
    for p, grad, exp_avg, exp_inf, step in zip(params, grads, exp_avgs, exp_infs, steps):
        if maximize:
            grad = -grad
        if weight_decay != 0:
            grad = grad.add(p, alpha=weight_decay)
        exp_avg.lerp_(grad, 1 - beta1)
        norm = grad.abs().add_(eps)
        if differentiable:
            exp_inf.copy_(ember.stack([exp_inf.mul_(beta2), norm]).amax(0))
        else:
            exp_inf.copy_(exp_inf.mul_(beta2).maximum(norm))
        if capturable:  # PyTorch's: the negated correction folded into the denominator
            neg_bias_correction = (beta1 ** step - 1).div_(lr)
            p.addcdiv_(exp_avg, exp_inf * neg_bias_correction)
        else:
            p.addcdiv_(exp_avg, exp_inf, value=-lr / (1 - beta1 ** step))


def _adamax_foreach(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
                    exp_infs: list[Tensor], steps: list[float], lr: float, beta1: float,
                    beta2: float, eps: float, weight_decay: float, maximize: bool) -> None:
    """The same update with one list op per stage (parameters on one device and dtype)."""
    grads = _foreach_penalized_grads(params, grads, weight_decay, maximize)
    fe._foreach_lerp_(exp_avgs, grads, 1 - beta1)
    fe._foreach_mul_(exp_infs, beta2)
    norm = [g.abs() for g in grads]  # (no list op for abs)
    fe._foreach_add_(norm, eps)
    fe._foreach_maximum_(exp_infs, norm)
    fe._foreach_addcdiv_(params, exp_avgs, exp_infs,
                         _per_step(steps, lambda s: -lr / (1 - beta1 ** s)))
