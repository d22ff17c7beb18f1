"""AdamW ("Decoupled Weight Decay Regularization", Loshchilov & Hutter)."""

from __future__ import annotations

from typing import Any

from ember.optim.adam import Adam
from ember.optim.optimizer import ParamsT

__all__ = ["AdamW"]


class AdamW(Adam):
    r"""Adam with decoupled weight decay, as PyTorch's ``AdamW``.

    Before the Adam update, every parameter decays on its own:
    :math:`\theta \leftarrow \theta (1 - \gamma \lambda)`; the decay never enters the
    gradient's running averages (see :class:`Adam` for the rest of the update).

    Args:
        params (iterable): tensors to optimize, or dicts defining parameter groups.
        lr (float): learning rate :math:`\gamma` (default: 1e-3).
        betas (Tuple[float, float]): running-average coefficients (default: (0.9, 0.999)).
        eps (float): added to the denominator for numerical stability (default: 1e-8).
        weight_decay (float): decoupled weight decay :math:`\lambda` (default: 1e-2).
        amsgrad (bool): use the AMSGrad variant (default: False).
        maximize (bool): maximize the objective instead of minimizing it (default: False).
        foreach (bool, optional): accepted for PyTorch compatibility.
    """

    def __init__(self, params: ParamsT, lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None,
                 capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         foreach=foreach, capturable=capturable,
                         differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        # AdamW always decouples, whatever a loaded state dict's groups say.
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
