"""ASGD, averaged stochastic gradient descent ("Acceleration of Stochastic Approximation
by Averaging", Polyak and Juditsky)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ember
from ember.core.creation import as_tensor, zeros_like
from ember.core.tensor import Tensor
from ember.optim.optimizer import (
    Optimizer,
    ParamsT,
    _implementation_options,
    _use_foreach,
    check_capturable,
    new_scalar,
    refuse_sparse,
)

__all__ = ["ASGD"]


class ASGD(Optimizer):
    r"""Averaged SGD, as PyTorch's ``ASGD``.

    For each parameter :math:`\theta` with gradient :math:`g_t` (negated when
    ``maximize``), at step :math:`t = 1, 2, \dots` (:math:`\eta_0 = \gamma`,
    :math:`\mu_0 = 1`):

    .. math::
        \begin{aligned}
        g_t &\leftarrow g_t + \lambda \theta_{t-1} \\
        \theta_t &= (1 - \lambda_d \eta_{t-1}) \theta_{t-1} - \eta_{t-1} g_t \\
        a_t &= a_{t-1} + \mu_{t-1} (\theta_t - a_{t-1}) \\
        \eta_t &= \gamma / (1 + \lambda_d \gamma t)^\alpha, \qquad
            \mu_t = 1 / \max(1, t - t_0)
        \end{aligned}

    Args:
        params (iterable): tensors to optimize, or dicts defining parameter groups.
        lr (float): learning rate :math:`\gamma` (default: 1e-2).
        lambd (float): decay term :math:`\lambda_d` (default: 1e-4).
        alpha (float): power for the eta update (default: 0.75).
        t0 (float): point at which to start averaging (default: 1e6).
        weight_decay (float): L2 penalty :math:`\lambda` (default: 0).
        foreach (bool, optional): accepted for PyTorch compatibility; the update always
            runs per tensor, as PyTorch's does on the CPU.
        maximize (bool): maximize the objective instead of minimizing it (default: False).

    State per parameter: ``step``, ``eta``, ``mu`` (0-d float32 tensors on the
    parameter's device, as PyTorch keeps them) and ``ax`` (the average :math:`a_t`).
    """

    _scalar_state = ("step", "eta", "mu")

    _option_defaults = {"differentiable": False, "capturable": False, "foreach": None,
                        "maximize": False}

    def _scalar_device(self, group: dict[str, Any], p: Tensor) -> Any:
        return p.device  # (ASGD's scalars are on the parameter's device in any group)

    def __init__(self, params: ParamsT, lr: float = 1e-2, lambd: float = 1e-4,
                 alpha: float = 0.75, t0: float = 1e6, weight_decay: float = 0,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize}
        defaults.update(_implementation_options("ASGD", foreach, differentiable=differentiable,
                                                capturable=capturable))
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step.

        Args:
            closure (Callable, optional): re-evaluates the model and returns the loss.
        """
        loss = self._eval_closure(closure)
        with self._update_mode():
            for group in self.param_groups:
                _use_foreach(group)  # (the update is per tensor; this raises as PyTorch's)
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    refuse_sparse(p.grad, "ASGD")
                    pstate = self.state[p]
                    if not pstate:
                        # (PyTorch keeps ASGD's scalars on the parameter's device)
                        pstate["step"] = new_scalar(0.0, p.device)
                        pstate["eta"] = new_scalar(group["lr"], p.device)
                        pstate["mu"] = new_scalar(1.0, p.device)
                        pstate["ax"] = zeros_like(p)
                    if group["capturable"]:
                        check_capturable([p], [pstate["step"]], "ASGD")
                    pstate["step"].add_(1)
                    _asgd_update(p, p.grad, pstate, group)
        return loss


def _asgd_update(p: Tensor, grad: Tensor, pstate: dict[str, Any],
                 group: dict[str, Any]) -> None:
    """One parameter's update; `pstate["step"]` already counts this step."""
    lr, lambd, alpha, t0 = group["lr"], group["lambd"], group["alpha"], group["t0"]
    if group["maximize"]:
        grad = -grad
    if group["weight_decay"] != 0:
        grad = grad.add(p, alpha=group["weight_decay"])
    if group["capturable"]:  # PyTorch's: eta, mu and step used as tensors, never read
        _asgd_capturable(p, grad, pstate, lr, lambd, alpha, t0)
        return
    eta, mu, ax = pstate["eta"].item(), pstate["mu"].item(), pstate["ax"]
    p.mul_(1 - lambd * eta)
    p.add_(grad, alpha=-eta)
    if mu != 1:
        ax.add_(p.sub(ax).mul_(mu))
    else:
        ax.copy_(p)
    step = pstate["step"].item()
    # PyTorch copies `torch.as_tensor(value)`, a tensor of the default dtype, into eta and
    # mu: the values are rounded to it even where a loaded state made them float64
    pstate["eta"].copy_(as_tensor(lr / ((1 + lambd * lr * step) ** alpha)))
    pstate["mu"].copy_(as_tensor(1 / max(1, step - t0)))


def _asgd_capturable(p: Tensor, grad: Tensor, pstate: dict[str, Any], lr: float,
                     lambd: float, alpha: float, t0: float) -> None:
    """The update of a capturable group: on the parameter's device, from the 0-d `eta`,
    `mu` and `step` tensors, with no value read back into Python."""
    eta, mu, ax, step = pstate["eta"], pstate["mu"], pstate["ax"], pstate["step"]
    p.mul_(1 - lambd * eta)
    p.addcmul_(grad, eta, value=-1)
    ax.add_(p.sub(ax).mul_(mu))
    eta.copy_(lr / ((1 + lambd * lr * step) ** alpha))
    mu.copy_(1 / ember.maximum(step - t0, ember.ones_like(step)))
