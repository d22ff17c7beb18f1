"""Adam ("Adam: A Method for Stochastic Optimization", Kingma & Ba), with the AMSGrad
variant and optionally decoupled weight decay (which makes it AdamW)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ember
from ember.core.creation import zeros_like
from ember.core.ops import foreach as fe
from ember.core.tensor import Tensor
from ember.optim.optimizer import (
    Optimizer,
    ParamsT,
    _buckets,
    _implementation_options,
    _per_step,
    _use_foreach,
    _view_as_real,
    check_capturable,
    check_fused,
    count_steps,
    new_scalar,
    on_device,
    penalized_grad,
    refuse_sparse,
)

__all__ = ["Adam"]


def _check_adam_args(lr: float, betas: tuple[float, float], eps: float,
                     weight_decay: float) -> None:
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


class Adam(Optimizer):
    r"""Adam, as PyTorch's ``Adam``.

    For each parameter :math:`\theta` with gradient :math:`g_t` (negated when
    ``maximize``), at step :math:`t = 1, 2, \dots`:

    .. math::
        \begin{aligned}
        &\text{if } \lambda \ne 0: \text{ decoupled: } \theta \leftarrow \theta (1 - \gamma\lambda)
            \text{, else } g_t \leftarrow g_t + \lambda \theta \\
        m_t &= \beta_1 m_{t-1} + (1 - \beta_1) g_t \\
        v_t &= \beta_2 v_{t-1} + (1 - \beta_2) g_t^2 \\
        \hat v_t &= \max(\hat v_{t-1}, v_t) \text{ with amsgrad, else } v_t \\
        \theta_t &= \theta_{t-1} - \frac{\gamma}{1 - \beta_1^t}
            \frac{m_t}{\sqrt{\hat v_t} / \sqrt{1 - \beta_2^t} + \epsilon}
        \end{aligned}

    Args:
        params (iterable): tensors to optimize, or dicts defining parameter groups.
        lr (float): learning rate :math:`\gamma` (default: 1e-3).
        betas (Tuple[float, float]): coefficients of the running averages of the
            gradient and of its square (default: (0.9, 0.999)).
        eps (float): added to the denominator for numerical stability (default: 1e-8).
        weight_decay (float): weight decay :math:`\lambda` (default: 0).
        amsgrad (bool): use the AMSGrad variant ("On the Convergence of Adam and Beyond")
            (default: False).
        maximize (bool): maximize the objective instead of minimizing it (default: False).
        foreach (bool, optional): ``None`` or ``True`` (default) updates all parameters
            of a device and dtype with one list op per stage; ``False`` runs the
            per-tensor loop. Both compute the same update.
        decoupled_weight_decay (bool): decay the weights directly instead of adding an L2
            term to the gradient, which makes this AdamW (default: False).

    State per parameter, as PyTorch's: ``step`` (a 0-d float32 tensor, ``tensor(3.)``),
    ``exp_avg``, ``exp_avg_sq`` and, with amsgrad, ``max_exp_avg_sq``.
    """

    _option_defaults = {"capturable": False, "differentiable": False, "fused": None,
                        "amsgrad": False, "maximize": False, "foreach": None,
                        "decoupled_weight_decay": False}

    def __init__(self, params: ParamsT, lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None, decoupled_weight_decay: bool = False) -> None:
        _check_adam_args(lr, betas, eps, weight_decay)
        # PyTorch's Adam (and AdamW) take floats or tensors, not ints: betas=(0, 0.99) raises
        if not (all(isinstance(b, float) for b in betas[:2])
                or all(isinstance(b, Tensor) for b in betas[:2])):
            raise ValueError("betas must be either both floats or both Tensors")
        options = _implementation_options("Adam", foreach, capturable=capturable,
                                          differentiable=differentiable, fused=fused)
        # (PyTorch's key order: param_groups and state_dict() print in it)
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay,
                    "amsgrad": amsgrad, "maximize": maximize, "foreach": foreach, **options,
                    "decoupled_weight_decay": decoupled_weight_decay}
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
                amsgrad = group["amsgrad"]
                params, grads, exp_avgs, exp_avg_sqs, max_sqs, steps = [], [], [], [], [], []
                for p in group["params"]:
                    grad = p.grad
                    if grad is None:
                        continue
                    refuse_sparse(grad, "Adam", ", please consider SparseAdam instead")
                    pstate = state[p]
                    if not pstate:
                        if group["fused"]:
                            check_fused(p)
                        pstate["step"] = new_scalar(0.0, p.device if on_device(group) else None,
                                                    fused=bool(group["fused"]))
                        pstate["exp_avg"] = zeros_like(p)
                        pstate["exp_avg_sq"] = zeros_like(p)
                        if amsgrad:
                            pstate["max_exp_avg_sq"] = zeros_like(p)
                    params.append(p)
                    grads.append(grad)
                    exp_avgs.append(pstate["exp_avg"])
                    exp_avg_sqs.append(pstate["exp_avg_sq"])
                    if amsgrad:
                        max_sqs.append(pstate["max_exp_avg_sq"])
                    steps.append(pstate["step"])
                if not params:
                    continue
                foreach = _use_foreach(group)
                capturable, differentiable = group["capturable"], group["differentiable"]
                if capturable:
                    check_capturable(params, steps)
                # (capturable: the step tensors never come back to Python)
                counts = count_steps(steps, read=not (capturable or differentiable))
                if any(p.is_complex() for p in params):
                    params, grads, exp_avgs, exp_avg_sqs, max_sqs = _view_as_real(
                        params, grads, exp_avgs, exp_avg_sqs, max_sqs)
                options = (group["lr"], *group["betas"], group["eps"], group["weight_decay"],
                           amsgrad, group["maximize"], group["decoupled_weight_decay"])
                if group["fused"] and not (capturable or differentiable) and \
                        any(p.dtype in (ember.float16, ember.bfloat16) for p in params):
                    _adam_fused_half(params, grads, exp_avgs, exp_avg_sqs, max_sqs, counts,
                                     *options)
                elif capturable or differentiable:
                    _adam_tensor_steps(params, grads, exp_avgs, exp_avg_sqs, max_sqs, steps,
                                       *options, differentiable=differentiable)
                elif foreach:
                    for bucket in _buckets(params, grads, exp_avgs, exp_avg_sqs,
                                           max_sqs if amsgrad else [None] * len(params),
                                           counts):
                        _adam_foreach(*bucket, *options)
                else:
                    _adam_single(params, grads, exp_avgs, exp_avg_sqs, max_sqs, counts,
                                 *options)
        return loss


def _adam_single(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
                 exp_avg_sqs: list[Tensor], max_sqs: list[Tensor], steps: list[float], lr: float,
                 beta1: float, beta2: float, eps: float, weight_decay: float, amsgrad: bool,
                 maximize: bool, decoupled: bool) -> None:
    """The per-tensor update (`steps` already counts this step)."""
    for i, (p, grad, exp_avg, exp_avg_sq) in enumerate(zip(params, grads, exp_avgs,
                                                           exp_avg_sqs)):
        step = steps[i]
        grad = penalized_grad(p, grad, lr, weight_decay, maximize, decoupled)
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
        if amsgrad:
            ember.maximum(max_sqs[i], exp_avg_sq, out=max_sqs[i])
            denom = max_sqs[i].sqrt()
        else:
            denom = exp_avg_sq.sqrt()
        denom.div_(bias_correction2_sqrt).add_(eps)  # in place on the fresh temporary
        p.addcdiv_(exp_avg, denom, value=-lr / bias_correction1)


def _adam_fused_half(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
                     exp_avg_sqs: list[Tensor], max_sqs: list[Tensor], steps: list[float],
                     lr: float, beta1: float, beta2: float, eps: float, weight_decay: float,
                     amsgrad: bool, maximize: bool, decoupled: bool) -> None:
    """The update of PyTorch's fused CPU kernel, for groups with half-float tensors: each
    parameter, gradient and state read in float32, the whole step computed there, and
    each written back rounded once (the unfused updates round after every op)."""
    for i, (p, grad, exp_avg, exp_avg_sq) in enumerate(zip(params, grads, exp_avgs,
                                                           exp_avg_sqs)):
        step = steps[i]
        param, g = p.float(), grad.float()
        if maximize:
            g = -g
        if weight_decay:
            if decoupled:
                param = param * (1 - lr * weight_decay)
            else:
                g = g + param * weight_decay
        m = exp_avg.float()
        m = m + (g - m) * (1 - beta1)
        v = exp_avg_sq.float() * beta2 + (1 - beta2) * g * g
        second = v
        if amsgrad:
            second = ember.maximum(max_sqs[i].float(), v)
            max_sqs[i].copy_(second)
        denom = second.sqrt() / (1 - beta2 ** step) ** 0.5 + eps
        p.copy_(param - (lr / (1 - beta1 ** step)) * m / denom)
        exp_avg.copy_(m)
        exp_avg_sq.copy_(v)


def _adam_tensor_steps(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
                       exp_avg_sqs: list[Tensor], max_sqs: list[Tensor], steps: list[Tensor],
                       lr: float, beta1: float, beta2: float, eps: float, weight_decay: float,
                       amsgrad: bool, maximize: bool, decoupled: bool, *,
                       differentiable: bool) -> None:
    """The per-tensor update of a ``capturable`` or ``differentiable`` group, as PyTorch's:
    the bias corrections are tensor ops on the step counts (`steps`, already advanced),
    on their device, never read into Python. In a differentiable group autograd records
    every op (the state is cloned where PyTorch clones it, so its history stays intact)."""
    for i, (p, grad, exp_avg, exp_avg_sq) in enumerate(zip(params, grads, exp_avgs,
                                                           exp_avg_sqs)):
        grad = penalized_grad(p, grad, lr, weight_decay, maximize, decoupled)
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        step_size_neg = (lr / (1 - beta1 ** steps[i])).neg()
        bias_correction2_sqrt = (1 - beta2 ** steps[i]).sqrt()
        if amsgrad:
            previous = max_sqs[i].clone() if differentiable else max_sqs[i]
            max_sqs[i].copy_(ember.maximum(previous, exp_avg_sq))
            exp_avg_sq = max_sqs[i]
        denom = (exp_avg_sq.sqrt() / (bias_correction2_sqrt * step_size_neg)).add_(
            eps / step_size_neg)
        p.addcdiv_(exp_avg.clone() if differentiable else exp_avg, denom)


def _adam_foreach(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
                  exp_avg_sqs: list[Tensor], max_sqs: list, steps: list[float], lr: float,
                  beta1: float, beta2: float, eps: float, weight_decay: float, amsgrad: bool,
                  maximize: bool, decoupled: bool) -> None:
    """The same update with one list op per stage (parameters on one device and dtype)."""
    if maximize:
        grads = fe._foreach_neg(grads)
    if weight_decay != 0:
        if decoupled:
            fe._foreach_mul_(params, 1 - lr * weight_decay)
        elif maximize:  # `grads` is already a fresh list of tensors: reuse it
            fe._foreach_add_(grads, params, alpha=weight_decay)
        else:
            grads = fe._foreach_add(grads, params, alpha=weight_decay)
    fe._foreach_lerp_(exp_avgs, grads, 1 - beta1)
    fe._foreach_mul_(exp_avg_sqs, beta2)
    fe._foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2)
    if amsgrad:
        fe._foreach_maximum_(max_sqs, exp_avg_sqs)
        denom = fe._foreach_sqrt(max_sqs)
    else:
        denom = fe._foreach_sqrt(exp_avg_sqs)
    fe._foreach_div_(denom, _per_step(steps, lambda s: (1 - beta2 ** s) ** 0.5))
    fe._foreach_add_(denom, eps)
    fe._foreach_addcdiv_(params, exp_avgs, denom,
                         _per_step(steps, lambda s: -lr / (1 - beta1 ** s)))
