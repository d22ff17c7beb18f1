"""Stochastic gradient descent, optionally with (Nesterov) momentum."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.core.ops import foreach as fe
from ember.core.tensor import Tensor
from ember.optim.optimizer import (
    Optimizer,
    ParamsT,
    _buckets,
    _implementation_options,
    _use_foreach,
    check_fused,
)

__all__ = ["SGD"]


class SGD(Optimizer):
    r"""Stochastic gradient descent (optionally with momentum), as PyTorch's ``SGD``.

    For each parameter :math:`\theta` with gradient :math:`g_t` (negated when
    ``maximize``):

    .. math::
        \begin{aligned}
        g_t &\leftarrow g_t + \lambda \theta_{t-1} && \text{(weight decay } \lambda\text{)} \\
        b_t &\leftarrow \begin{cases} g_t & t = 1 \\
                    \mu b_{t-1} + (1 - \tau) g_t & t > 1 \end{cases}
                    && \text{(momentum } \mu\text{, dampening } \tau\text{)} \\
        g_t &\leftarrow g_t + \mu b_t \text{ if nesterov, else } b_t \\
        \theta_t &\leftarrow \theta_{t-1} - \gamma g_t
        \end{aligned}

    Args:
        params (iterable): tensors to optimize, or dicts defining parameter groups.
        lr (float): learning rate :math:`\gamma` (default: 1e-3).
        momentum (float): momentum factor :math:`\mu` (default: 0).
        dampening (float): dampening :math:`\tau` for momentum (default: 0).
        weight_decay (float): L2 penalty :math:`\lambda` (default: 0).
        nesterov (bool): use Nesterov momentum; needs ``momentum > 0`` and zero
            dampening (default: False).
        maximize (bool): maximize the objective instead of minimizing it (default: False).
        foreach (bool, optional): ``None`` or ``True`` (default) updates all parameters
            of a device and dtype with one list op per stage (``ember._foreach_*``);
            ``False`` runs the per-tensor loop. Both compute the same update.

    The momentum buffer is kept in ``state[p]["momentum_buffer"]`` (only when
    ``momentum != 0``).

    Example:
        >>> opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        >>> opt.zero_grad()
        >>> loss_fn(model(x), y).backward()
        >>> opt.step()
    """

    _option_defaults = {"differentiable": False, "fused": None, "nesterov": False,
                        "maximize": False, "foreach": None}

    def __init__(self, params: ParamsT, lr: float = 1e-3, momentum: float = 0,
                 dampening: float = 0, weight_decay: float = 0, nesterov: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening,
                    "weight_decay": weight_decay, "nesterov": nesterov, "maximize": maximize,
                    "foreach": foreach}
        defaults.update(_implementation_options("SGD", foreach, differentiable=differentiable,
                                                fused=fused))
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
                params, grads = [], []
                for p in group["params"]:
                    grad = p.grad
                    if grad is not None:
                        params.append(p)
                        grads.append(grad)
                if not params:
                    continue
                momentum = group["momentum"]
                if momentum != 0:
                    pstates = [state[p] for p in params]
                    bufs = [st.get("momentum_buffer") for st in pstates]
                else:
                    pstates = bufs = [None] * len(params)
                options = (group["lr"], momentum, group["dampening"], group["weight_decay"],
                           group["nesterov"], group["maximize"])
                # sparse gradients (nn.Embedding(sparse=True)) take the per-tensor loop,
                # whose ops have sparse forms, as PyTorch's do
                sparse = any(g.is_sparse for g in grads)
                if group.get("fused"):
                    check_fused(params[0])
                    if sparse:
                        raise RuntimeError("`_fused_sgd` does not support sparse gradients")
                # (PyTorch's SGD takes foreach=True with differentiable=True: the loop runs)
                foreach = _use_foreach(group, autograd_refused=False) and not sparse
                runs = _buckets(params, grads, bufs, pstates) if foreach else \
                    [(params, grads, bufs, pstates)]
                for run_params, run_grads, run_bufs, run_states in runs:
                    if foreach:
                        _sgd_foreach(run_params, run_grads, run_bufs, *options)
                    else:
                        _sgd_single(run_params, run_grads, run_bufs, *options)
                    if momentum != 0:  # the first step creates the buffers
                        for st, buf in zip(run_states, run_bufs):
                            st["momentum_buffer"] = buf
        return loss


def _sgd_single(params: list[Tensor], grads: list[Tensor], bufs: list[Tensor | None],
                lr: float, momentum: float, dampening: float, weight_decay: float,
                nesterov: bool, maximize: bool) -> None:
    """The per-tensor update; fills `bufs` in place with new momentum buffers."""
    for i, (p, grad) in enumerate(zip(params, grads)):
        if maximize:
            grad = -grad
        if weight_decay != 0:
            grad = grad.add(p, alpha=weight_decay)
        if momentum != 0:
            buf = bufs[i]
            if buf is None:
                buf = bufs[i] = grad.clone().detach()  # (not recorded, as PyTorch's)
            else:
                buf.mul_(momentum).add_(grad, alpha=1 - dampening)
            grad = grad.add(buf, alpha=momentum) if nesterov else buf
        p.add_(grad, alpha=-lr)


def _sgd_foreach(params: list[Tensor], grads: list[Tensor], bufs: list[Tensor | None],
                 lr: float, momentum: float, dampening: float, weight_decay: float,
                 nesterov: bool, maximize: bool) -> None:
    """The same update for parameters on one device and dtype: one fused list op (the
    backend's `_fused_sgd_` kernel, else a few `_foreach_*` ops)."""
    fe._fused_sgd_(params, grads, bufs, lr=lr, momentum=momentum, dampening=dampening,
                   weight_decay=weight_decay, nesterov=nesterov, maximize=maximize)
