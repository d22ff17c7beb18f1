"""NAdam, Adam with Nesterov momentum ("Incorporating Nesterov Momentum into Adam",
Dozat), with the momentum-decay schedule of PyTorch's ``NAdam``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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

__all__ = ["NAdam"]


def _mu(beta1: float, momentum_decay: float, step: float) -> float:
    """The momentum coefficient :math:`\\mu_t` of step `step`."""
    return beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))


class NAdam(Optimizer):
    r"""NAdam, as PyTorch's ``NAdam``.

    For each parameter :math:`\theta` with gradient :math:`g_t` (negated when
    ``maximize``), at step :math:`t = 1, 2, \dots`:

    .. math::
        \begin{aligned}
        g_t &\leftarrow g_t + \lambda \theta_{t-1}
            \quad (\text{or } \theta_{t-1} \leftarrow (1 - \gamma\lambda)\theta_{t-1}
            \text{ if decoupled\_weight\_decay}) \\
        \mu_t &= \beta_1 (1 - \tfrac12 \, 0.96^{t \psi}), \qquad
            \Pi_t = \textstyle\prod_{i \le t} \mu_i \\
        m_t &= \beta_1 m_{t-1} + (1 - \beta_1) g_t, \qquad
            v_t = \beta_2 v_{t-1} + (1 - \beta_2) g_t^2 \\
        \theta_t &= \theta_{t-1} - \gamma \Big(\frac{(1 - \mu_t) g_t}{1 - \Pi_t}
            + \frac{\mu_{t+1} m_t}{1 - \Pi_t \mu_{t+1}}\Big)
            \Big/ \Big(\sqrt{v_t / (1 - \beta_2^t)} + \epsilon\Big)
        \end{aligned}

    Args:
        params (iterable): tensors to optimize, or dicts defining parameter groups.
        lr (float): learning rate :math:`\gamma` (default: 2e-3).
        betas (Tuple[float, float]): coefficients for the running averages of the
            gradient and its square (default: (0.9, 0.999)).
        eps (float): added to the denominator for numerical stability (default: 1e-8).
        weight_decay (float): weight decay :math:`\lambda` (default: 0).
        momentum_decay (float): momentum decay :math:`\psi` (default: 4e-3).
        decoupled_weight_decay (bool): decay the weights directly, as AdamW does, instead
            of adding the L2 penalty to the gradient (default: False).
        foreach (bool, optional): ``None`` or ``True`` (default) updates all parameters
            of a device and dtype with one list op per stage; ``False`` runs the
            per-tensor loop. Both compute the same update.
        maximize (bool): maximize the objective instead of minimizing it (default: False).

    State per parameter: ``step``, ``mu_product`` (:math:`\Pi_t`; both 0-d float32
    tensors, as PyTorch keeps them, so that trajectories match), ``exp_avg`` and
    ``exp_avg_sq``.
    """

    _scalar_state = ("step", "mu_product")
    _option_defaults = {"capturable": False, "differentiable": False,
                        "decoupled_weight_decay": False, "foreach": None,
                        "maximize": False}

    def __init__(self, params: ParamsT, lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        _check_adam_args(lr, betas, eps, weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "momentum_decay": momentum_decay,
                    "decoupled_weight_decay": decoupled_weight_decay,
                    "maximize": maximize, "foreach": foreach}
        defaults.update(_implementation_options("NAdam", foreach, capturable=capturable,
                                                differentiable=differentiable))
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
                beta1, beta2 = group["betas"]
                capturable = group["capturable"]
                # (capturable: the step counts and mu products stay tensors, never read)
                params, grads, (exp_avgs, exp_avg_sqs), steps, states = _advance(
                    state, group, ("exp_avg", "exp_avg_sq"), {"mu_product": 1.0},
                    optimizer="NAdam", read_steps=not capturable)
                if capturable:
                    steps = [st["step"] for st in states]
                for pstate, step in zip(states, steps):
                    # (a 0-d tensor, as PyTorch's: it rounds the product as PyTorch does)
                    pstate["mu_product"].mul_(_mu(beta1, group["momentum_decay"], step))
                if not params:
                    continue
                options = (group["lr"], beta1, beta2, group["eps"], group["weight_decay"],
                           group["momentum_decay"], group["decoupled_weight_decay"],
                           group["maximize"])
                if group["differentiable"] or capturable:  # (_use_foreach refuses
                    _use_foreach(group)                      # foreach=True with autograd)
                    _nadam_tensor_steps(params, grads, exp_avgs, exp_avg_sqs, steps,
                                        [st["mu_product"] for st in states], *options)
                    continue
                mu_products = [st["mu_product"].item() for st in states]
                run = _nadam_foreach if _use_foreach(group) else _nadam_single
                for bucket in _buckets(params, grads, exp_avgs, exp_avg_sqs, steps,
                                       mu_products):
                    run(*bucket, *options)
        return loss


def _coefficients(step: float, mu_product: float, lr: float, beta1: float, beta2: float,
                  momentum_decay: float) -> tuple[float, float, float]:
    """(1 - beta2^t, the gradient's coefficient, the momentum's coefficient)."""
    mu = _mu(beta1, momentum_decay, step)
    mu_next = _mu(beta1, momentum_decay, step + 1)
    return (1 - beta2 ** step, -lr * (1.0 - mu) / (1.0 - mu_product),
            (-lr * mu_next) / (1.0 - mu_product * mu_next))


def _nadam_single(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
                  exp_avg_sqs: list[Tensor], steps: list[float], mu_products: list[float],
                  lr: float, beta1: float, beta2: float, eps: float, weight_decay: float,
                  momentum_decay: float, decoupled_weight_decay: bool,
                  maximize: bool) -> None:
    """The per-tensor update (`steps` and `mu_products` already count this step)."""
    for p, grad, exp_avg, exp_avg_sq, step, mu_product in zip(
            params, grads, exp_avgs, exp_avg_sqs, steps, mu_products):
        grad = penalized_grad(p, grad, lr, weight_decay, maximize, decoupled_weight_decay)
        bias_correction2, grad_coef, avg_coef = _coefficients(
            step, mu_product, lr, beta1, beta2, momentum_decay)
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        denom = exp_avg_sq.div(bias_correction2).sqrt().add_(eps)
        p.addcdiv_(grad, denom, value=grad_coef)
        p.addcdiv_(exp_avg, denom, value=avg_coef)


def _nadam_tensor_steps(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
                        exp_avg_sqs: list[Tensor], steps: list[Any],
                        mu_products: list[Tensor], lr: float, beta1: float, beta2: float,
                        eps: float, weight_decay: float, momentum_decay: float,
                        decoupled_weight_decay: bool, maximize: bool) -> None:
    """The per-tensor update of a differentiable or capturable group, as PyTorch's: the
    coefficients are tensor ops on the 0-d `mu_products` (this step's) and, capturable,
    on the step tensors `steps`; no tensor autograd saves is written in place."""
    for p, grad, exp_avg, exp_avg_sq, step, mu_product in zip(
            params, grads, exp_avgs, exp_avg_sqs, steps, mu_products):
        grad = penalized_grad(p, grad, lr, weight_decay, maximize, decoupled_weight_decay)
        mu = _mu(beta1, momentum_decay, step)
        mu_next = _mu(beta1, momentum_decay, step + 1)
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        denom = exp_avg_sq.div(1 - beta2 ** step).sqrt().add(eps)
        p.addcdiv_(grad * (-lr * (1.0 - mu) / (1.0 - mu_product)), denom)
        p.addcdiv_(exp_avg * (-lr * mu_next / (1.0 - mu_product * mu_next)), denom)


def _nadam_foreach(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
                   exp_avg_sqs: list[Tensor], steps: list[float], mu_products: list[float],
                   lr: float, beta1: float, beta2: float, eps: float, weight_decay: float,
                   momentum_decay: float, decoupled_weight_decay: bool,
                   maximize: bool) -> None:
    """The same update with one list op per stage (parameters on one device and dtype)."""
    if weight_decay != 0 and decoupled_weight_decay:
        fe._foreach_mul_(params, 1 - lr * weight_decay)
        grads = _foreach_penalized_grads(params, grads, 0, maximize)
    else:
        grads = _foreach_penalized_grads(params, grads, weight_decay, maximize)
    coefs = [_coefficients(s, m, lr, beta1, beta2, momentum_decay)
             for s, m in zip(steps, mu_products)]
    same = all(c == coefs[0] for c in coefs)
    bias_correction2, grad_coef, avg_coef = (
        coefs[0] if same else tuple(list(c) for c in zip(*coefs)))
    fe._foreach_lerp_(exp_avgs, grads, 1 - beta1)
    fe._foreach_mul_(exp_avg_sqs, beta2)
    fe._foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2)
    denom = fe._foreach_div(exp_avg_sqs, bias_correction2)
    fe._foreach_sqrt_(denom)
    fe._foreach_add_(denom, eps)
    fe._foreach_addcdiv_(params, grads, denom, grad_coef)
    fe._foreach_addcdiv_(params, exp_avgs, denom, avg_coef)
