"""Adafactor ("Adafactor: Adaptive Learning Rates with Sublinear Memory Cost", Shazeer &
Stern), as PyTorch's: the second moment of a matrix kept as its row and column means."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ember.core.creation import zeros, zeros_like
from ember.core.grad_mode import no_grad
from ember.optim.optimizer import Optimizer, ParamsT, new_scalar, refuse_sparse

__all__ = ["Adafactor"]

# machine epsilon of each floating dtype: PyTorch's default eps1 (torch.finfo(dtype).eps)
_EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float32": 2.0 ** -23,
        "float64": 2.0 ** -52}


class Adafactor(Optimizer):
    r"""Adafactor, as PyTorch's ``Adafactor``.

    At step :math:`t` with gradient :math:`G_t` (negated when ``maximize``):
    :math:`\hat\beta_{2t} = 1 - t^{c}` (``c = beta2_decay``),
    :math:`\rho_t = \min(\gamma, 1/\sqrt t)`,
    :math:`\alpha_t = \max(\epsilon_2, \mathrm{RMS}(\theta_{t-1}))\,\rho_t`; the weights
    decay by :math:`1 - \gamma\lambda`; a matrix keeps the running means of its squared
    gradient's rows :math:`R_t` and columns :math:`C_t` and estimates
    :math:`V_t = R_t C_t / \mathrm{mean}(R_t)` (a vector keeps :math:`V_t` itself); then
    :math:`U_t = G_t / \sqrt{\max(V_t, \epsilon_1^2)}` and
    :math:`\theta_t = \theta_{t-1} - \alpha_t U_t / \max(1, \mathrm{RMS}(U_t) / d)`.

    Args:
        params (iterable): tensors to optimize, or dicts defining parameter groups.
        lr (float): the cap :math:`\gamma` on the relative step size (default: 1e-2).
        beta2_decay (float): the decay rate :math:`c` of the second moment's
            coefficient, <= 0 (default: -0.8).
        eps (Tuple[float | None, float]): :math:`\epsilon_1`, the floor of the second
            moment's root (None: the dtype's machine epsilon), and :math:`\epsilon_2`,
            the floor of a parameter's RMS (default: (None, 1e-3)).
        d (float): the clipping threshold of the update's RMS (default: 1.0).
        weight_decay (float): decoupled weight decay :math:`\lambda` (default: 0).
        foreach (bool, optional): accepted for PyTorch compatibility; the update runs
            per tensor.
        maximize (bool): maximize the objective instead of minimizing it (default: False).

    State per parameter: ``step`` (a 0-d float32 tensor), and ``row_var`` and ``col_var`` for a
    tensor of two or more dims, else ``variance``.
    """

    _option_defaults = {"foreach": None, "maximize": False}

    def __init__(self, params: ParamsT, lr: float = 1e-2, beta2_decay: float = -0.8,
                 eps: tuple[float | None, float] = (None, 1e-3), d: float = 1.0,
                 weight_decay: float = 0.0, *, foreach: bool | None = None,
                 maximize: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = {"lr": lr, "beta2_decay": beta2_decay, "eps": eps, "d": d,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize}
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step.

        Args:
            closure (Callable, optional): re-evaluates the model and returns the loss.
        """
        loss = self._eval_closure(closure)
        with no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    refuse_sparse(p.grad, "Adafactor")
                    pstate = self.state[p]
                    if not pstate:
                        pstate["step"] = new_scalar(0.0)
                        if p.grad.ndim > 1:
                            shape = list(p.grad.shape)
                            pstate["row_var"] = zeros(shape[:-1] + [1], dtype=p.grad.dtype,
                                                      device=p.grad.device)
                            pstate["col_var"] = zeros(shape[:-2] + [1, shape[-1]],
                                                      dtype=p.grad.dtype, device=p.grad.device)
                        else:
                            pstate["variance"] = zeros_like(p.grad)
                    pstate["step"].add_(1)
                    _adafactor_update(p, pstate, group)
        return loss


def _adafactor_update(p: Any, pstate: dict[str, Any], group: dict[str, Any]) -> None:
    """One parameter's update, in PyTorch's order of operations."""
    grad = -p.grad if group["maximize"] else p.grad
    lr, eps1, eps2 = group["lr"], group["eps"][0], group["eps"][1]
    if eps1 is None:
        eps1 = _EPS[p.dtype.name] if p.dtype.is_floating_point else 0.0
    step = pstate["step"].item()
    one_minus_beta2 = step ** group["beta2_decay"]
    rho = min(lr, 1 / (step ** 0.5))
    alpha = max(eps2, p.norm(2).item() / math.sqrt(max(p.numel(), 1))) * rho
    if group["weight_decay"] != 0:
        p.mul_(1 - lr * group["weight_decay"])
    if grad.ndim > 1:
        row_var, col_var = pstate["row_var"], pstate["col_var"]
        row_var.lerp_(grad.norm(dim=-1, keepdim=True).square().div(grad.shape[-1]),
                      one_minus_beta2)
        col_var.lerp_(grad.norm(dim=-2, keepdim=True).square().div(grad.shape[-2]),
                      one_minus_beta2)
        estimate = (row_var @ col_var).div(row_var.mean(dim=-2, keepdim=True).clamp(min=eps1))
    else:
        variance = pstate["variance"]
        variance.lerp_(grad * grad, one_minus_beta2)
        estimate = variance.clone()
    update = estimate.clamp(min=eps1 * eps1).rsqrt().mul(grad)
    denom = max(1.0, update.norm(2).item() / (math.sqrt(update.numel()) * group["d"]))
    p.add_(update, alpha=-alpha / denom)
