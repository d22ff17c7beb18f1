"""SparseAdam: Adam for the sparse gradients of `nn.Embedding(sparse=True)`, updating
only the rows a batch touched ("lazy Adam")."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ember.core.creation import zeros_like
from ember.core.grad_mode import no_grad
from ember.core.sparse_grad import sparse_rows
from ember.core.tensor import Tensor
from ember.optim.optimizer import Optimizer, ParamsT

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    r"""SparseAdam, as PyTorch's ``SparseAdam``: a masked Adam for parameters whose
    gradients are sparse (the weight of ``nn.Embedding(sparse=True)`` or
    ``nn.EmbeddingBag(sparse=True)``).

    Only the rows the gradient names are touched: their first and second moments are
    decayed and updated, and the parameter moves by the bias-corrected Adam step; the
    other rows, and their moments, stay as they are. Dense gradients are refused (use
    :class:`~ember.optim.Adam`).

    Args:
        params (iterable): tensors to optimize, or dicts defining parameter groups.
        lr (float): learning rate (default: 1e-3).
        betas (Tuple[float, float]): coefficients of the running averages of the
            gradient and of its square (default: (0.9, 0.999)).
        eps (float): added to the denominator for numerical stability (default: 1e-8).
        maximize (bool): maximize the objective instead of minimizing it (default: False).

    Example:
        >>> emb = ember.nn.Embedding(1000, 64, sparse=True)
        >>> opt = ember.optim.SparseAdam(list(emb.parameters()), lr=0.01)
        >>> emb(ember.tensor([3, 7, 3])).sum().backward()
        >>> opt.step()
    """

    _scalar_state = ()  # (PyTorch's SparseAdam counts steps in a Python int)

    def __init__(self, params: ParamsT, lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 maximize: bool = False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
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
        sparse_params, complex_params = [], []
        for index, group in enumerate(self.param_groups):
            for d_index, p in enumerate(group["params"]):
                if p.is_sparse:
                    sparse_params.append([index, d_index])
                if p.is_complex():
                    complex_params.append([index, d_index])
        if sparse_params:
            raise ValueError(f"Sparse params at indices {sparse_params}: SparseAdam requires "
                             "dense parameter tensors")
        if complex_params:
            raise ValueError(f"Complex params at indices {complex_params}: SparseAdam does "
                             "not support complex parameters")

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step.

        Args:
            closure (Callable, optional): re-evaluates the model and returns the loss.
        """
        loss = self._eval_closure(closure)
        with no_grad():
            for group in self.param_groups:
                work = []
                for p in group["params"]:  # every gradient checked before any update
                    if p.grad is None:
                        continue
                    if not p.grad.is_sparse:
                        raise RuntimeError("SparseAdam does not support dense gradients, "
                                           "please consider Adam instead")
                    pstate = self.state[p]
                    if not pstate:
                        pstate["step"] = 0
                        pstate["exp_avg"] = zeros_like(p)
                        pstate["exp_avg_sq"] = zeros_like(p)
                    pstate["step"] += 1
                    work.append((p, pstate))
                for p, pstate in work:
                    _sparse_adam_update(p, pstate, group)
        return loss


def _sparse_adam_update(p: Tensor, pstate: dict[str, Any], group: dict[str, Any]) -> None:
    """PyTorch's `F.sparse_adam` for one parameter, on the rows of its coalesced grad."""
    beta1, beta2 = group["betas"]
    grad = -p.grad if group["maximize"] else p.grad
    where, values = sparse_rows(grad)
    if not values.numel():  # nothing looked up: nothing moves
        return
    exp_avg, exp_avg_sq = pstate["exp_avg"], pstate["exp_avg_sq"]
    # old <- b * old + (1 - b) * new, written as old += (1 - b) * (new - old)
    old_avg = exp_avg[where]
    avg_update = (values - old_avg).mul_(1 - beta1)
    exp_avg.index_put_(where, avg_update, accumulate=True)
    old_sq = exp_avg_sq[where]
    sq_update = values.pow(2).sub_(old_sq).mul_(1 - beta2)
    exp_avg_sq.index_put_(where, sq_update, accumulate=True)
    numer = avg_update.add_(old_avg)
    denom = sq_update.add_(old_sq).sqrt_().add_(group["eps"])
    step = pstate["step"]
    lr = group["lr"]
    lr = lr.item() if isinstance(lr, Tensor) else lr
    step_size = lr * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
    p.index_put_(where, -step_size * numer.div_(denom), accumulate=True)
