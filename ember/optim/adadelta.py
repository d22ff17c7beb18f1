"""Adadelta ("ADADELTA: An Adaptive Learning Rate Method", Zeiler)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.core.ops import foreach as fe
from ember.core.tensor import Tensor
from ember.optim.optimizer import (
    Optimizer,
    ParamsT,
    _advance,
    _buckets,
    _implementation_options,
    _use_foreach,
)

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    r"""Adadelta, as PyTorch's ``Adadelta``.

    For each parameter :math:`\theta` with gradient :math:`g_t` (negated when
    ``maximize``):

    .. math::
        \begin{aligned}
        g_t &\leftarrow g_t + \lambda \theta_{t-1} \\
        v_t &= \rho v_{t-1} + (1 - \rho) g_t^2 \\
        \Delta x_t &= \frac{\sqrt{u_{t-1} + \epsilon}}{\sqrt{v_t + \epsilon}} g_t \\
        u_t &= \rho u_{t-1} + (1 - \rho) \Delta x_t^2 \\
        \theta_t &= \theta_{t-1} - \gamma \Delta x_t
        \end{aligned}

    Args:
        params (iterable): tensors to optimize, or dicts defining parameter groups.
        lr (float): coefficient :math:`\gamma` that scales delta before it is applied
            to the parameters (default: 1.0).
        rho (float): coefficient used for computing a running average of squared
            gradients (default: 0.9).
        eps (float): added to the denominator for numerical stability (default: 1e-6).
        weight_decay (float): L2 penalty :math:`\lambda` (default: 0).
        foreach (bool, optional): ``None`` or ``True`` (default) updates all parameters
            of a device and dtype with one list op per stage; ``False`` runs the
            per-tensor loop. Both compute the same update.
        maximize (bool): maximize the objective instead of minimizing it (default: False).

    State per parameter: ``step``, ``square_avg`` and ``acc_delta``.
    """

    _option_defaults = {"capturable": False, "differentiable": False, "foreach": None,
                        "maximize": False}

    def __init__(self, params: ParamsT, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, foreach: bool | None = None, *,
                 capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        _implementation_options("Adadelta", foreach, capturable=capturable,
                                differentiable=differentiable)
        # (PyTorch's key order: param_groups and state_dict() print in it)
        defaults = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "capturable": capturable, "foreach": foreach,
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
                params, grads, (square_avgs, acc_deltas), _, _ = _advance(
                    state, group, ("square_avg", "acc_delta"), optimizer="Adadelta",
                    read_steps=False)  # (the update does not depend on the count)
                if not params:
                    continue
                options = (group["lr"], group["rho"], group["eps"], group["weight_decay"],
                           group["maximize"])
                if _use_foreach(group):
                    for bucket in _buckets(params, grads, square_avgs, acc_deltas):
                        _adadelta_foreach(*bucket, *options)
                else:
                    _adadelta_single(params, grads, square_avgs, acc_deltas, *options)
        return loss


def _adadelta_single(params: list[Tensor], grads: list[Tensor], square_avgs: list[Tensor],
                     acc_deltas: list[Tensor], lr: float, rho: float, eps: float,
                     weight_decay: float, maximize: bool) -> None:
    """The per-tensor update."""
    for p, grad, square_avg, acc_delta in zip(params, grads, square_avgs, acc_deltas):
        if maximize:
            grad = -grad
        if weight_decay != 0:
            grad = grad.add(p, alpha=weight_decay)
        square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
        std = square_avg.add(eps).sqrt_()
        delta = acc_delta.add(eps).sqrt_().div_(std).mul_(grad)
        acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
        p.add_(delta, alpha=-lr)


def _adadelta_foreach(params: list[Tensor], grads: list[Tensor], square_avgs: list[Tensor],
                      acc_deltas: list[Tensor], lr: float, rho: float, eps: float,
                      weight_decay: float, maximize: bool) -> None:
    """The same update with one list op per stage (parameters on one device and dtype)."""
    if maximize:
        grads = fe._foreach_neg(grads)
    if weight_decay != 0:
        if maximize:
            fe._foreach_add_(grads, params, alpha=weight_decay)
        else:
            grads = fe._foreach_add(grads, params, alpha=weight_decay)
    fe._foreach_mul_(square_avgs, rho)
    fe._foreach_addcmul_(square_avgs, grads, grads, 1 - rho)
    std = fe._foreach_add(square_avgs, eps)
    fe._foreach_sqrt_(std)
    deltas = fe._foreach_add(acc_deltas, eps)
    fe._foreach_sqrt_(deltas)
    fe._foreach_div_(deltas, std)
    fe._foreach_mul_(deltas, grads)
    fe._foreach_mul_(acc_deltas, rho)
    fe._foreach_addcmul_(acc_deltas, deltas, deltas, 1 - rho)
    fe._foreach_add_(params, deltas, alpha=-lr)
