"""Muon ("Muon: An optimizer for hidden layers in neural networks", Keller Jordan), as
PyTorch's: momentum SGD whose update is orthogonalised by a Newton-Schulz iteration."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ember.core import dtype as dt
from ember.core.creation import zeros_like
from ember.core.grad_mode import no_grad
from ember.core.ops.linalg import addmm
from ember.core.tensor import Tensor
from ember.optim.optimizer import Optimizer, ParamsT, refuse_sparse

__all__ = ["Muon"]

EPS = 1e-7
DEFAULT_A = 3.4445
DEFAULT_B = -4.7750
DEFAULT_C = 2.0315
DEFAULT_NS_STEPS = 5


def _zeropower_via_newtonschulz(grad: Tensor, ns_coefficients: tuple[float, float, float],
                                ns_steps: int, eps: float) -> Tensor:
    """A quintic Newton-Schulz iteration towards the orthogonal factor of `grad`, in
    bfloat16 as PyTorch runs it (the iteration only needs to land near 1)."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if grad.ndim != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    tall = grad.shape[0] > grad.shape[1]
    x = grad.to(dt.bfloat16)
    if tall:
        x = x.T
    x = x.div(x.norm().clamp(min=eps))
    for _ in range(ns_steps):
        gram = x @ x.T
        update = addmm(gram, gram, gram, beta=b, alpha=c)
        x = addmm(x, update, x, beta=a)
    return x.T if tall else x


def _adjust_lr(lr: float, adjust_lr_fn: str | None, shape: tuple) -> float:
    """The learning rate scaled for a (A, B) matrix: Keller Jordan's sqrt(max(1, A/B))
    ("original", the default) or Moonshot's 0.2 sqrt(max(A, B)) ("match_rms_adamw")."""
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = math.sqrt(max(1, rows / cols))
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(rows, cols))
    else:
        ratio = 1.0
    return lr * ratio


class Muon(Optimizer):
    r"""Muon, as PyTorch's ``Muon``, for 2-D parameters (the hidden layers' weights;
    optimize biases and embeddings with another optimizer, e.g. AdamW).

    With momentum :math:`\mu` and gradient :math:`g_t`: :math:`B_t = \mu B_{t-1} + g_t`
    (as ``B.lerp_(g, 1 - mu)``, PyTorch's form), the update is :math:`g_t + \mu B_t`
    with ``nesterov`` else :math:`B_t`, orthogonalised by ``ns_steps`` Newton-Schulz
    steps :math:`O_t`; then :math:`\theta \leftarrow \theta(1 - \gamma\lambda)` and
    :math:`\theta \leftarrow \theta - \mathrm{AdjustLR}(\gamma)\,O_t`.

    Args:
        params (iterable): 2-D tensors to optimize, or dicts defining parameter groups.
        lr (float): learning rate (default: 1e-3).
        weight_decay (float): decoupled weight decay (default: 0.1).
        momentum (float): momentum factor (default: 0.95).
        nesterov (bool): Nesterov momentum (default: True).
        ns_coefficients (tuple): the iteration's polynomial (a, b, c)
            (default: (3.4445, -4.7750, 2.0315)).
        eps (float): floor of the norm the update is divided by (default: 1e-7).
        ns_steps (int): Newton-Schulz steps (default: 5).
        adjust_lr_fn (str, optional): ``"original"`` or ``"match_rms_adamw"``
            (default: None, which is "original").

    State per parameter: ``momentum_buffer``.
    """

    def __init__(self, params: ParamsT, lr: float = 1e-3, weight_decay: float = 0.1,
                 momentum: float = 0.95, nesterov: bool = True,
                 ns_coefficients: tuple[float, float, float] = (DEFAULT_A, DEFAULT_B,
                                                                DEFAULT_C),
                 eps: float = EPS, ns_steps: int = DEFAULT_NS_STEPS,
                 adjust_lr_fn: str | None = None) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ("original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = {"lr": lr, "weight_decay": weight_decay, "momentum": momentum,
                    "nesterov": nesterov, "ns_coefficients": ns_coefficients, "eps": eps,
                    "ns_steps": ns_steps, "adjust_lr_fn": adjust_lr_fn}
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError("Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {p.size()}")

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step.

        Args:
            closure (Callable, optional): re-evaluates the model and returns the loss.
        """
        loss = self._eval_closure(closure)
        with no_grad():
            for group in self.param_groups:
                lr, momentum = group["lr"], group["momentum"]
                for p in group["params"]:
                    grad = p.grad
                    if grad is None:
                        continue
                    refuse_sparse(grad, "Muon")
                    if grad.ndim != 2:
                        raise ValueError("Param gradient must be a 2D matrix")
                    pstate = self.state[p]
                    if "momentum_buffer" not in pstate:
                        pstate["momentum_buffer"] = zeros_like(grad)
                    buf = pstate["momentum_buffer"]
                    buf.lerp_(grad, 1 - momentum)
                    update = grad.lerp(buf, momentum) if group["nesterov"] else buf
                    update = _zeropower_via_newtonschulz(update, group["ns_coefficients"],
                                                         group["ns_steps"], group["eps"])
                    adjusted = _adjust_lr(lr, group["adjust_lr_fn"], tuple(p.shape))
                    p.mul_(1 - lr * group["weight_decay"])
                    p.add_(update.to(p.dtype), alpha=-adjusted)
        return loss
