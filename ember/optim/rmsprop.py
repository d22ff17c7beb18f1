"""RMSprop (Hinton's lecture notes; the centered form of Graves, "Generating Sequences
With Recurrent Neural Networks")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.core.creation import zeros_like
from ember.core.ops import foreach as fe
from ember.core.tensor import Tensor
from ember.optim.optimizer import (
    Optimizer,
    ParamsT,
    _buckets,
    _implementation_options,
    _use_foreach,
    check_capturable,
    count_steps,
    new_scalar,
    on_device,
    refuse_sparse,
)

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    r"""RMSprop, as PyTorch's ``RMSprop``.

    For each parameter :math:`\theta` with gradient :math:`g_t` (negated when
    ``maximize``):

    .. math::
        \begin{aligned}
        g_t &\leftarrow g_t + \lambda \theta_{t-1} \\
        v_t &= \alpha v_{t-1} + (1 - \alpha) g_t^2 \\
        \bar g_t &= \alpha \bar g_{t-1} + (1 - \alpha) g_t
            \qquad \tilde v_t = v_t - \bar g_t^2 \text{ if centered, else } v_t \\
        d_t &= \sqrt{\tilde v_t} + \epsilon \\
        b_t &= \mu b_{t-1} + g_t / d_t, \quad \theta_t = \theta_{t-1} - \gamma b_t
            \text{ if } \mu > 0, \text{ else } \theta_t = \theta_{t-1} - \gamma g_t / d_t
        \end{aligned}

    Args:
        params (iterable): tensors to optimize, or dicts defining parameter groups.
        lr (float): learning rate :math:`\gamma` (default: 1e-2).
        alpha (float): smoothing constant :math:`\alpha` (default: 0.99).
        eps (float): added to the denominator for numerical stability (default: 1e-8).
        weight_decay (float): L2 penalty :math:`\lambda` (default: 0).
        momentum (float): momentum factor :math:`\mu` (default: 0).
        centered (bool): normalize by an estimate of the gradient's variance instead of
            its second moment (default: False).
        foreach (bool, optional): ``None`` or ``True`` (default) updates all parameters
            of a device and dtype with one list op per stage; ``False`` runs the
            per-tensor loop. Both compute the same update.
        maximize (bool): maximize the objective instead of minimizing it (default: False).

    State per parameter: ``step``, ``square_avg``, and ``momentum_buffer`` (momentum > 0)
    and ``grad_avg`` (centered).
    """

    _option_defaults = {"capturable": False, "differentiable": False, "momentum": 0,
                        "centered": False, "foreach": None, "maximize": False}

    def __init__(self, params: ParamsT, lr: float = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8, weight_decay: float = 0, momentum: float = 0,
                 centered: bool = False, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        _implementation_options("RMSprop", foreach, capturable=capturable,
                                differentiable=differentiable)
        # (PyTorch's key order: param_groups and state_dict() print in it)
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps,
                    "centered": centered, "weight_decay": weight_decay,
                    "capturable": capturable, "foreach": foreach, "maximize": maximize,
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
                momentum, centered = group["momentum"], group["centered"]
                params, grads, square_avgs, grad_avgs, bufs, steps = [], [], [], [], [], []
                for p in group["params"]:
                    grad = p.grad
                    if grad is None:
                        continue
                    refuse_sparse(grad, "RMSprop")
                    pstate = state[p]
                    if not pstate:
                        pstate["step"] = new_scalar(0.0, p.device if on_device(group) else None)
                        pstate["square_avg"] = zeros_like(p)
                        if momentum > 0:
                            pstate["momentum_buffer"] = zeros_like(p)
                        if centered:
                            pstate["grad_avg"] = zeros_like(p)
                    steps.append(pstate["step"])
                    params.append(p)
                    grads.append(grad)
                    square_avgs.append(pstate["square_avg"])
                    grad_avgs.append(pstate["grad_avg"] if centered else None)
                    bufs.append(pstate["momentum_buffer"] if momentum > 0 else None)
                if not params:
                    continue
                foreach = _use_foreach(group)
                if group["capturable"]:
                    check_capturable(params, steps)
                count_steps(steps, read=False)  # (the update does not depend on the count)
                options = (group["lr"], group["alpha"], group["eps"], group["weight_decay"],
                           momentum, centered, group["maximize"])
                if foreach:
                    for bucket in _buckets(params, grads, square_avgs, grad_avgs, bufs):
                        _rmsprop_foreach(*bucket, *options)
                else:
                    _rmsprop_single(params, grads, square_avgs, grad_avgs, bufs, *options,
                                    differentiable=group["differentiable"])
        return loss


def _rmsprop_single(params: list[Tensor], grads: list[Tensor], square_avgs: list[Tensor],
                    grad_avgs: list, bufs: list, lr: float, alpha: float, eps: float,
                    weight_decay: float, momentum: float, centered: bool,
                    maximize: bool, differentiable: bool = False) -> None:
    """The per-tensor update (recorded by autograd in a differentiable group, where the
    square root autograd saves is not written in place)."""
    for p, grad, square_avg, grad_avg, buf in zip(params, grads, square_avgs, grad_avgs, bufs):
        if maximize:
            grad = -grad
        if weight_decay != 0:
            grad = grad.add(p, alpha=weight_decay)
        square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
        if centered:
            grad_avg.lerp_(grad, 1 - alpha)
            avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt()
        else:
            avg = square_avg.sqrt()
        avg = avg.add(eps) if differentiable else avg.add_(eps)
        if momentum > 0:
            buf.mul_(momentum).addcdiv_(grad, avg)
            p.add_(buf, alpha=-lr)
        else:
            p.addcdiv_(grad, avg, value=-lr)


def _rmsprop_foreach(params: list[Tensor], grads: list[Tensor], square_avgs: list[Tensor],
                     grad_avgs: list, bufs: list, lr: float, alpha: float, eps: float,
                     weight_decay: float, momentum: float, centered: bool,
                     maximize: bool) -> None:
    """The same update with one list op per stage (parameters on one device and dtype)."""
    if maximize:
        grads = fe._foreach_neg(grads)
    if weight_decay != 0:
        if maximize:
            fe._foreach_add_(grads, params, alpha=weight_decay)
        else:
            grads = fe._foreach_add(grads, params, alpha=weight_decay)
    fe._foreach_mul_(square_avgs, alpha)
    fe._foreach_addcmul_(square_avgs, grads, grads, 1 - alpha)
    if centered:
        fe._foreach_lerp_(grad_avgs, grads, 1 - alpha)
        avg = fe._foreach_add(square_avgs, fe._foreach_mul(grad_avgs, grad_avgs), alpha=-1)
        fe._foreach_sqrt_(avg)
    else:
        avg = fe._foreach_sqrt(square_avgs)
    fe._foreach_add_(avg, eps)
    if momentum > 0:
        fe._foreach_mul_(bufs, momentum)
        fe._foreach_addcdiv_(bufs, grads, avg)
        fe._foreach_add_(params, bufs, alpha=-lr)
    else:
        fe._foreach_addcdiv_(params, grads, avg, -lr)
