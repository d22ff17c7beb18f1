"""Adagrad ("Adaptive Subgradient Methods for Online Learning and Stochastic
Optimization", Duchi et al.)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.core.creation import full_like
from ember.core.ops import foreach as fe
from ember.core.sparse_grad import sparse_rows
from ember.core.tensor import Tensor
from ember.optim.optimizer import (
    Optimizer,
    ParamsT,
    _buckets,
    _implementation_options,
    _per_step,
    _use_foreach,
    check_fused,
    count_steps,
    new_scalar,
    on_device,
)

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    r"""Adagrad, as PyTorch's ``Adagrad``.

    For each parameter :math:`\theta` with gradient :math:`g_t` (negated when
    ``maximize``), at step :math:`t = 1, 2, \dots`:

    .. math::
        \begin{aligned}
        g_t &\leftarrow g_t + \lambda \theta_{t-1} \\
        \tilde\gamma &= \gamma / (1 + (t - 1) \eta) \\
        s_t &= s_{t-1} + g_t^2 \qquad (s_0 = \text{initial\_accumulator\_value}) \\
        \theta_t &= \theta_{t-1} - \tilde\gamma \, g_t / (\sqrt{s_t} + \epsilon)
        \end{aligned}

    Args:
        params (iterable): tensors to optimize, or dicts defining parameter groups.
        lr (float): learning rate :math:`\gamma` (default: 1e-2).
        lr_decay (float): learning rate decay :math:`\eta` (default: 0).
        weight_decay (float): L2 penalty :math:`\lambda` (default: 0).
        initial_accumulator_value (float): starting value of the sums of squares
            (default: 0).
        eps (float): added to the denominator for numerical stability (default: 1e-10).
        foreach (bool, optional): ``None`` or ``True`` (default) updates all parameters
            of a device and dtype with one list op per stage; ``False`` runs the
            per-tensor loop. Both compute the same update.
        maximize (bool): maximize the objective instead of minimizing it (default: False).

    State per parameter (created with the optimizer, as in PyTorch): ``step`` and ``sum``.
    """

    _option_defaults = {"differentiable": False, "fused": None, "foreach": None, "maximize": False}

    def __init__(self, params: ParamsT, lr: float = 1e-2, lr_decay: float = 0,
                 weight_decay: float = 0, initial_accumulator_value: float = 0,
                 eps: float = 1e-10, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 fused: bool | None = None) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: "
                             f"{initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value,
                    "foreach": foreach, "maximize": maximize}
        defaults.update(_implementation_options("Adagrad", foreach, differentiable=differentiable,
                                                fused=fused))
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, group)

    def _init_state(self, p: Any, group: dict[str, Any]) -> dict[str, Any]:
        pstate = self.state[p]
        pstate["step"] = new_scalar(0.0, p.device if on_device(group) else None,
                                    fused=bool(group["fused"]))
        pstate["sum"] = full_like(p, group["initial_accumulator_value"])
        return pstate

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step.

        Args:
            closure (Callable, optional): re-evaluates the model and returns the loss.
        """
        loss = self._eval_closure(closure)
        state = self.state
        with self._update_mode():
            for group in self.param_groups:
                params, grads, sums, steps = [], [], [], []
                for p in group["params"]:
                    grad = p.grad
                    if grad is None:
                        continue
                    pstate = state[p]
                    if not pstate:  # a group added after construction
                        pstate = self._init_state(p, group)
                    steps.append(pstate["step"])
                    params.append(p)
                    grads.append(grad)
                    sums.append(pstate["sum"])
                if not params:
                    continue
                if group["fused"]:
                    check_fused(params[0])
                    if any(g.is_sparse for g in grads):
                        raise RuntimeError("`fused` does not support sparse grad or complex "
                                           "param")
                foreach = _use_foreach(group)
                steps = count_steps(steps)
                options = (group["lr"], group["lr_decay"], group["eps"],
                           group["weight_decay"], group["maximize"])
                if foreach and not any(g.is_sparse for g in grads):
                    for bucket in _buckets(params, grads, sums, steps):
                        _adagrad_foreach(*bucket, *options)
                else:
                    _adagrad_single(params, grads, sums, steps, *options,
                                    differentiable=group["differentiable"])
        return loss


def _adagrad_single(params: list[Tensor], grads: list[Tensor], sums: list[Tensor],
                    steps: list[float], lr: float, lr_decay: float, eps: float,
                    weight_decay: float, maximize: bool, differentiable: bool = False) -> None:
    """The per-tensor update (`steps` already counts this step); recorded by autograd in
    a differentiable group, where the square root autograd saves is not written in place."""
    for p, grad, state_sum, step in zip(params, grads, sums, steps):
        if maximize:
            grad = -grad
        if grad.is_sparse and weight_decay != 0:
            raise RuntimeError("weight_decay option is not compatible with sparse gradients")
        if weight_decay != 0:
            grad = grad.add(p, alpha=weight_decay)
        clr = lr / (1 + (step - 1) * lr_decay)
        if grad.is_sparse:  # the rows the gradient names, each once (the update is not linear)
            where, values = sparse_rows(grad)
            state_sum.index_put_(where, values.pow(2), accumulate=True)
            std = state_sum[where].sqrt_().add_(eps)
            p.index_put_(where, values / std * -clr, accumulate=True)
            continue
        state_sum.addcmul_(grad, grad)
        std = state_sum.sqrt()
        p.addcdiv_(grad, std.add(eps) if differentiable else std.add_(eps), value=-clr)


def _adagrad_foreach(params: list[Tensor], grads: list[Tensor], sums: list[Tensor],
                     steps: list[float], lr: float, lr_decay: float, eps: float,
                     weight_decay: float, maximize: bool) -> None:
    """The same update with one list op per stage (parameters on one device and dtype)."""
    if maximize:
        grads = fe._foreach_neg(grads)
    if weight_decay != 0:
        if maximize:
            fe._foreach_add_(grads, params, alpha=weight_decay)
        else:
            grads = fe._foreach_add(grads, params, alpha=weight_decay)
    fe._foreach_addcmul_(sums, grads, grads)
    std = fe._foreach_sqrt(sums)
    fe._foreach_add_(std, eps)
    fe._foreach_addcdiv_(params, grads, std,
                         _per_step(steps, lambda s: -lr / (1 + (s - 1) * lr_decay)))
