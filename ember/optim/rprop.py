"""Rprop, resilient backpropagation ("A Direct Adaptive Method for Faster
Backpropagation Learning: The RPROP Algorithm", Riedmiller and Braun)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.core.creation import full_like, zeros_like
from ember.core.ops.elementwise import where
from ember.core.tensor import Tensor
from ember.optim.optimizer import (
    Optimizer,
    ParamsT,
    _implementation_options,
    _use_foreach,
    check_capturable,
    new_scalar,
    on_device,
    refuse_sparse,
)

__all__ = ["Rprop"]


class Rprop(Optimizer):
    r"""Rprop, as PyTorch's ``Rprop``.

    Each element keeps its own step size :math:`\delta`, grown by :math:`\eta_+` while
    the gradient's sign holds, shrunk by :math:`\eta_-` when it flips (that step then
    skips the element and forgets its gradient), and clamped to ``step_sizes``; the
    parameter moves by :math:`-\operatorname{sign}(g_t)\,\delta_t`.

    Args:
        params (iterable): tensors to optimize, or dicts defining parameter groups.
        lr (float): learning rate, the initial step size (default: 1e-2).
        etas (Tuple[float, float]): the multiplicative decrease and increase factors
            :math:`(\eta_-, \eta_+)` (default: (0.5, 1.2)).
        step_sizes (Tuple[float, float]): the minimal and maximal allowed step sizes
            (default: (1e-6, 50)).
        foreach (bool, optional): accepted for PyTorch compatibility; the update always
            runs per tensor, as PyTorch's does on the CPU.
        maximize (bool): maximize the objective instead of minimizing it (default: False).

    State per parameter: ``step``, ``prev`` (the last gradient used) and ``step_size``.
    """

    _option_defaults = {"capturable": False, "differentiable": False, "foreach": None,
                        "maximize": False}

    def __init__(self, params: ParamsT, lr: float = 1e-2,
                 etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *,
                 capturable: bool = False, foreach: bool | None = None,
                 maximize: bool = False, differentiable: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        _implementation_options("Rprop", foreach, capturable=capturable,
                                differentiable=differentiable)
        # (PyTorch's key order: param_groups and state_dict() print in it)
        defaults = {"lr": lr, "etas": etas, "step_sizes": step_sizes, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
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
                    refuse_sparse(p.grad, "Rprop")
                    pstate = self.state[p]
                    if not pstate:
                        pstate["step"] = new_scalar(0.0, p.device if on_device(group) else None)
                        pstate["prev"] = zeros_like(p)
                        pstate["step_size"] = full_like(p.grad, group["lr"])
                    if group["capturable"]:
                        check_capturable([p], [pstate["step"]])
                    pstate["step"].add_(1)
                    _rprop_update(p, p.grad, pstate["prev"], pstate["step_size"], group)
        return loss


def _rprop_update(p: Tensor, grad: Tensor, prev: Tensor, step_size: Tensor,
                  group: dict[str, Any]) -> None:
    """One parameter's update, in PyTorch's order of operations."""
    etaminus, etaplus = group["etas"]
    step_size_min, step_size_max = group["step_sizes"]
    if group["maximize"]:
        grad = -grad
    # (a differentiable group keeps the `prev` autograd saves: it is overwritten below)
    sign = grad.mul(prev.clone() if group["differentiable"] else prev).sign()
    flipped = sign.lt(0)
    # the factors, in the gradient's dtype as PyTorch writes them into `sign`
    factor = where(sign.gt(0), etaplus, where(flipped, etaminus, where(sign.eq(0), 1, sign)))
    step_size.mul_(factor).clamp_(step_size_min, step_size_max)
    grad = where(flipped, 0, grad)  # a flipped sign: no step, and forget the gradient
    p.addcmul_(grad.sign(), step_size, value=-1)
    prev.copy_(grad)
