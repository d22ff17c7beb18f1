"""Stochastic weight averaging and exponential moving averages of a model's weights, with
PyTorch's API (`torch.optim.swa_utils`):

    swa_model = AveragedModel(model)
    swa_scheduler = SWALR(optimizer, swa_lr=0.05)
    for epoch in range(epochs):
        train(model, optimizer)
        if epoch >= swa_start:
            swa_model.update_parameters(model)
            swa_scheduler.step()
    update_bn(loader, swa_model)  # BatchNorm statistics for the averaged weights

The averages are written in place under `no_grad` with the same arithmetic as PyTorch's
CPU path (one tensor at a time), so they match PyTorch's to the last bit.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable
from copy import deepcopy
from typing import Any

import ember
from ember import Tensor
from ember.nn import Module
from ember.nn.modules.normalization import _BatchNorm
from ember.optim.lr_scheduler import LRScheduler, _format_param, _warn_get_lr_called_within_step
from ember.optim.optimizer import Optimizer

__all__ = ["AveragedModel", "SWALR", "update_bn", "get_ema_multi_avg_fn",
           "get_swa_multi_avg_fn", "get_ema_avg_fn", "get_swa_avg_fn"]

AvgFn = Callable[[Tensor, Tensor, Any], Tensor]
MultiAvgFn = Callable[[list[Tensor], list[Tensor], Any], None]


def get_ema_multi_avg_fn(decay: float = 0.999) -> MultiAvgFn:
    """An in-place EMA update of lists of tensors: ``ema = ema + (1 - decay) * (p - ema)``
    (a lerp for floating tensors)."""

    @ember.no_grad()
    def ema_update(ema_param_list: list[Tensor], current_param_list: list[Tensor], _) -> None:
        if ema_param_list[0].is_floating_point() or ema_param_list[0].is_complex():
            ember._foreach_lerp_(ema_param_list, current_param_list, 1 - decay)
        else:
            for p_ema, p_model in zip(ema_param_list, current_param_list):
                p_ema.copy_(p_ema * decay + p_model * (1 - decay))
    return ema_update


def get_swa_multi_avg_fn() -> MultiAvgFn:
    """An in-place running-mean update of lists of tensors, ``n`` models averaged so far."""

    @ember.no_grad()
    def swa_update(averaged_param_list: list[Tensor], current_param_list: list[Tensor],
                   num_averaged: Tensor | int) -> None:
        if averaged_param_list[0].is_floating_point() or averaged_param_list[0].is_complex():
            ember._foreach_lerp_(averaged_param_list, current_param_list,
                                 1 / (num_averaged + 1))
        else:
            diffs = ember._foreach_sub(current_param_list, averaged_param_list)
            if isinstance(num_averaged, Tensor):
                ember._foreach_addcdiv_(averaged_param_list, diffs,
                                        [num_averaged + 1] * len(averaged_param_list))
            else:
                ember._foreach_add_(averaged_param_list, diffs, alpha=1.0 / (num_averaged + 1))
    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> AvgFn:
    """``decay * ema + (1 - decay) * p``, for `AveragedModel(avg_fn=...)`."""

    @ember.no_grad()
    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged: Any) -> Tensor:
        return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn() -> AvgFn:
    """The running mean ``avg + (p - avg) / (n + 1)``, for `AveragedModel(avg_fn=...)`."""

    @ember.no_grad()
    def swa_update(averaged_param: Tensor, current_param: Tensor,
                   num_averaged: Tensor | int) -> Tensor:
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


class AveragedModel(Module):
    r"""A copy of `model` whose parameters are an average of the weights it is given by
    :meth:`update_parameters` (the running mean by default: stochastic weight averaging).

    Args:
        model (Module): the model to average (deep-copied).
        device (device, optional): where the averaged copy lives. Default: `model`'s.
        avg_fn (callable, optional): ``avg_fn(averaged, current, n_averaged)`` returning
            the new average of one tensor.
        multi_avg_fn (callable, optional): the in-place update of lists of tensors
            (e.g. :func:`get_ema_multi_avg_fn`); at most one of the two is given.
        use_buffers (bool): average the buffers too (else they are copied from `model`).
            Default: ``False``.
    """

    n_averaged: Tensor

    def __init__(self, model: Module, device: Any = None, avg_fn: AvgFn | None = None,
                 multi_avg_fn: MultiAvgFn | None = None, use_buffers: bool = False) -> None:
        super().__init__()
        assert avg_fn is None or multi_avg_fn is None, \
            "Only one of avg_fn and multi_avg_fn should be provided"
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", ember.tensor(0, dtype=ember.long, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Folds `model`'s current weights into the average (the first call copies them)."""
        self_param = itertools.chain(self.module.parameters(), self.module.buffers()) \
            if self.use_buffers else self.parameters()
        model_param = itertools.chain(model.parameters(), model.buffers()) \
            if self.use_buffers else model.parameters()
        averaged, current = [], []
        copy_param = bool(self.n_averaged == 0)
        for p_averaged, p_model in zip(self_param, model_param):
            p_model_ = p_model.detach().to(p_averaged.device)
            averaged.append(p_averaged.detach())
            current.append(p_model_)
            if copy_param:
                p_averaged.detach().copy_(p_model_)

        if self.n_averaged > 0:
            if self.multi_avg_fn is not None:
                for device, group in _by_device_and_dtype(averaged, current).items():
                    self.multi_avg_fn(group[0], group[1], self.n_averaged.to(device))
            else:  # PyTorch's CPU path: one tensor at a time
                avg_fn = self.avg_fn or get_swa_avg_fn()
                for p_averaged, p_model in zip(averaged, current):
                    n_averaged = self.n_averaged.to(p_averaged.device)
                    p_averaged.copy_(avg_fn(p_averaged, p_model, n_averaged))

        if not self.use_buffers:
            # the buffers (BatchNorm statistics) follow the source model
            for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                b_swa.detach().copy_(b_model.detach().to(b_swa.device))
        self.n_averaged += 1


def _by_device_and_dtype(averaged: list[Tensor],
                         current: list[Tensor]) -> dict[Any, tuple[list[Tensor], list[Tensor]]]:
    """The (averaged, current) pairs grouped as PyTorch's foreach grouping does (one list
    op per device and dtype)."""
    groups: dict[Any, tuple[list[Tensor], list[Tensor]]] = {}
    for a, c in zip(averaged, current):
        lists = groups.setdefault((a.device, a.dtype), ([], []))
        lists[0].append(a)
        lists[1].append(c)
    return {key[0]: lists for key, lists in groups.items()}


@ember.no_grad()
def update_bn(loader: Iterable[Any], model: Module, device: Any = None) -> None:
    r"""Recomputes the BatchNorm running statistics of `model` with one pass over
    `loader` (a cumulative average over its batches; a batch that is a list or tuple
    gives its first element as the input). Needed after :class:`AveragedModel`, whose
    averaged weights have no statistics of their own.
    """
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return

    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    for input in loader:
        if isinstance(input, (list, tuple)):
            input = input[0]
        if device is not None:
            input = input.to(device)
        model(input)
    for bn_module, momentum in momenta.items():
        bn_module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    r"""Anneals each group's learning rate to a fixed `swa_lr` over `anneal_epochs`
    steps (``'cos'`` or ``'linear'``), then holds it.

    Args:
        optimizer (Optimizer): the wrapped optimizer.
        swa_lr (float or list): the learning rate(s) to anneal to, one per group.
        anneal_epochs (int): the steps of the annealing. Default: 10.
        anneal_strategy (str): ``'cos'`` or ``'linear'``. Default: ``'cos'``.
        last_epoch (int): the index of the last epoch. Default: -1.
    """

    def __init__(self, optimizer: Optimizer, swa_lr: float | list[float],
                 anneal_epochs: int = 10, anneal_strategy: str = "cos",
                 last_epoch: int = -1) -> None:
        swa_lrs = _format_param("swa_lr", optimizer, swa_lr)
        for lr, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got "
                             f"{anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    def _set_anneal_func(self, anneal_strategy: str) -> None:
        self._anneal_strategy = anneal_strategy  # (the state dict keeps the name)
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else \
            self._linear_anneal

    def state_dict(self) -> dict[str, Any]:
        """The scheduler's state: every attribute except the optimizer and anneal_func."""
        return {key: value for key, value in self.__dict__.items()
                if key not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a state returned by :meth:`state_dict`."""
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)

    @staticmethod
    def _linear_anneal(t: float) -> float:
        return t

    @staticmethod
    def _cosine_anneal(t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr: float, swa_lr: float, alpha: float) -> float:
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list[Any]:
        _warn_get_lr_called_within_step(self)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [group["swa_lr"] * alpha + lr * (1 - alpha)
                for group, lr in zip(self.optimizer.param_groups, prev_lrs)]
