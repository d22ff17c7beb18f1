"""SparseAdam: Adam for the sparse gradients of `nn.Embedding(sparse=True)`, updating
only the rows a batch touched ("lazy Adam")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.optim.optimizer import Optimizer, ParamsT

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    r"""SparseAdam, as PyTorch's ``SparseAdam``: Adam whose moments are updated only where
    the (sparse) gradient has values.

    ember has no sparse tensors, so every gradient it makes is dense, and PyTorch's
    SparseAdam refuses dense gradients: :meth:`step` raises as PyTorch's does. Use
    :class:`~ember.optim.Adam` (or :class:`~ember.optim.AdamW`) instead.

    Args:
        params (iterable): tensors to optimize, or dicts defining parameter groups.
        lr (float): learning rate (default: 1e-3).
        betas (Tuple[float, float]): coefficients of the running averages of the
            gradient and of its square (default: (0.9, 0.999)).
        eps (float): added to the denominator for numerical stability (default: 1e-8).
        maximize (bool): maximize the objective instead of minimizing it (default: False).
    """

    def __init__(self, params: ParamsT, lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 maximize: bool = False) -> None:
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "maximize": maximize}
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step: raises for the dense gradients ember makes.

        Args:
            closure (Callable, optional): re-evaluates the model and returns the loss.
        """
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    raise RuntimeError("SparseAdam does not support dense gradients, please "
                                       "consider Adam instead")
        return loss
