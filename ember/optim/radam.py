"""RAdam, Adam with a rectified adaptive learning rate ("On the Variance of the Adaptive
Learning Rate and Beyond", Liu et al.)."""

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
    _use_foreach,
    penalized_grad,
)

__all__ = ["RAdam"]


class RAdam(Optimizer):
    r"""RAdam, as PyTorch's ``RAdam``.

    For each parameter :math:`\theta` with gradient :math:`g_t` (negated when
    ``maximize``), at step :math:`t = 1, 2, \dots`, with
    :math:`\rho_\infty = 2 / (1 - \beta_2) - 1`:

    .. math::
        \begin{aligned}
        g_t &\leftarrow g_t + \lambda \theta_{t-1}
            \quad (\text{or } \theta_{t-1} \leftarrow (1 - \gamma\lambda)\theta_{t-1}
            \text{ if decoupled\_weight\_decay}) \\
        m_t &= \beta_1 m_{t-1} + (1 - \beta_1) g_t, \qquad
            v_t = \beta_2 v_{t-1} + (1 - \beta_2) g_t^2 \\
        \rho_t &= \rho_\infty - 2 t \beta_2^t / (1 - \beta_2^t) \\
        \theta_t &= \theta_{t-1} - \gamma \frac{m_t}{1 - \beta_1^t} \cdot
            \begin{cases}
            r_t \sqrt{1 - \beta_2^t} / (\sqrt{v_t} + \epsilon) & \rho_t > 5 \\
            1 & \text{otherwise}
            \end{cases}, \quad
            r_t = \sqrt{\frac{(\rho_t - 4)(\rho_t - 2)\rho_\infty}
                              {(\rho_\infty - 4)(\rho_\infty - 2)\rho_t}}
        \end{aligned}

    Args:
        params (iterable): tensors to optimize, or dicts defining parameter groups.
        lr (float): learning rate :math:`\gamma` (default: 1e-3).
        betas (Tuple[float, float]): coefficients for the running averages of the
            gradient and its square (default: (0.9, 0.999)).
        eps (float): added to the denominator for numerical stability (default: 1e-8).
        weight_decay (float): weight decay :math:`\lambda` (default: 0).
        decoupled_weight_decay (bool): decay the weights directly, as AdamW does, instead
            of adding the L2 penalty to the gradient (default: False).
        foreach (bool, optional): ``None`` or ``True`` (default) updates all parameters
            of a device and dtype with one list op per stage; ``False`` runs the
            per-tensor loop. Both compute the same update.
        maximize (bool): maximize the objective instead of minimizing it (default: False).

    State per parameter: ``step``, ``exp_avg`` and ``exp_avg_sq``.
    """

    _option_defaults = {"capturable": False, "differentiable": False,
                        "decoupled_weight_decay": False, "foreach": None,
                        "maximize": False}

    def __init__(self, params: ParamsT, lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False) -> None:
        _check_adam_args(lr, betas, eps, weight_decay)
        _implementation_options("RAdam", foreach, capturable=capturable,
                                differentiable=differentiable)
        # (PyTorch's key order: param_groups and state_dict() print in it)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "decoupled_weight_decay": decoupled_weight_decay,
                    "differentiable": differentiable}
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
                capturable, differentiable = group["capturable"], group["differentiable"]
                # (capturable: the step counts stay tensors, never read into Python)
                params, grads, (exp_avgs, exp_avg_sqs), steps, states = _advance(
                    state, group, ("exp_avg", "exp_avg_sq"), optimizer="RAdam",
                    read_steps=not capturable)
                if not params:
                    continue
                beta1, beta2 = group["betas"]
                options = (group["lr"], beta1, beta2, group["eps"], group["weight_decay"],
                           group["decoupled_weight_decay"], group["maximize"])
                if capturable or differentiable:
                    _use_foreach(group)  # (raises PyTorch's error for foreach + autograd)
                    _radam_tensor_steps(params, grads, exp_avgs, exp_avg_sqs,
                                        [st["step"] for st in states] if capturable else steps,
                                        *options, capturable=capturable,
                                        differentiable=differentiable)
                elif _use_foreach(group):
                    # one run per step count, since the rectification depends on it
                    for bucket in _buckets(params, grads, exp_avgs, exp_avg_sqs, steps):
                        for idx in _by_step(bucket[-1]):
                            _radam_foreach(*([lst[i] for i in idx] for lst in bucket[:-1]),
                                           bucket[-1][idx[0]], *options)
                else:
                    for i in range(len(params)):
                        _radam_foreach([params[i]], [grads[i]], [exp_avgs[i]],
                                       [exp_avg_sqs[i]], steps[i], *options)
        return loss


def _by_step(steps: list[float]) -> list[list[int]]:
    """Indices of `steps` grouped by value (usually one group)."""
    groups: dict[int, list[int]] = {}
    for i, s in enumerate(steps):
        groups.setdefault(s, []).append(i)
    return list(groups.values())


def _radam_tensor_steps(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
                        exp_avg_sqs: list[Tensor], steps: list[Any], lr: float, beta1: float,
                        beta2: float, eps: float, weight_decay: float,
                        decoupled_weight_decay: bool, maximize: bool, *, capturable: bool,
                        differentiable: bool) -> None:
    """The per-tensor update of a ``capturable`` or ``differentiable`` group, as PyTorch's.
    Capturable: `steps` are the step tensors, and the rectification is chosen by
    `where` on their device rather than by a Python `if`. Differentiable: no tensor that
    autograd saves is written in place."""
    rho_inf = 2 / (1 - beta2) - 1
    for p, grad, exp_avg, exp_avg_sq, step in zip(params, grads, exp_avgs, exp_avg_sqs,
                                                  steps):
        grad = penalized_grad(p, grad, lr, weight_decay, maximize, decoupled_weight_decay)
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        bias_corrected_exp_avg = exp_avg / bias_correction1
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
        if capturable:
            update = ember.where(rho_t > 5.0, _rect(rho_t, rho_inf) * _adaptive_lr(
                exp_avg_sq, bias_correction2, eps, differentiable), 1.0)
            p.add_(bias_corrected_exp_avg * lr * update, alpha=-1.0)
        elif rho_t > 5.0:
            p.add_(bias_corrected_exp_avg * lr * _adaptive_lr(
                exp_avg_sq, bias_correction2, eps, differentiable) * _rect(rho_t, rho_inf),
                alpha=-1.0)
        else:
            p.add_(bias_corrected_exp_avg * lr, alpha=-1.0)


def _rect(rho_t: Any, rho_inf: float) -> Any:
    """RAdam's variance rectification term (NaN where `rho_t` <= 4: unused there)."""
    return ((rho_t - 4) * (rho_t - 2) * rho_inf
            / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5


def _adaptive_lr(exp_avg_sq: Tensor, bias_correction2: Any, eps: float,
                 differentiable: bool) -> Tensor:
    """`sqrt(1 - beta2^t) / (sqrt(v) + eps)`, as PyTorch computes it."""
    root = exp_avg_sq.sqrt()
    root = root.add(eps) if differentiable else root.add_(eps)
    return (bias_correction2 ** 0.5) / root


def _radam_foreach(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
                   exp_avg_sqs: list[Tensor], step: float, lr: float, beta1: float,
                   beta2: float, eps: float, weight_decay: float,
                   decoupled_weight_decay: bool, maximize: bool) -> None:
    """The update of tensors all at step `step` (already counting this step), one list op
    per stage; ``foreach=False`` runs it on one-tensor lists (the per-tensor loop)."""
    if weight_decay != 0 and decoupled_weight_decay:
        fe._foreach_mul_(params, 1 - lr * weight_decay)
        grads = _foreach_penalized_grads(params, grads, 0, maximize)
    else:
        grads = _foreach_penalized_grads(params, grads, weight_decay, maximize)
    fe._foreach_lerp_(exp_avgs, grads, 1 - beta1)
    fe._foreach_mul_(exp_avg_sqs, beta2)
    fe._foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2)
    bias_correction1 = 1 - beta1 ** step
    bias_correction2 = 1 - beta2 ** step
    rho_inf = 2 / (1 - beta2) - 1
    rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
    # PyTorch's order of operations: ((m / bc1) * lr) * adaptive_lr * rect
    update = fe._foreach_div(exp_avgs, bias_correction1)
    fe._foreach_mul_(update, lr)
    if rho_t > 5.0:
        rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
        adaptive = fe._foreach_sqrt(exp_avg_sqs)
        fe._foreach_add_(adaptive, eps)
        adaptive = [(bias_correction2 ** 0.5) / a for a in adaptive]  # scalar / tensor
        fe._foreach_mul_(update, adaptive)
        fe._foreach_mul_(update, rect)
    fe._foreach_add_(params, update, alpha=-1.0)
