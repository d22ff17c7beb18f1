"""Learning-rate schedulers, as PyTorch's ``torch.optim.lr_scheduler``.

Schedulers are chainable: each ``step()`` computes the next rates from the groups'
current ``lr`` (the recursive forms PyTorch uses), so several schedulers can act on one
optimizer and the curves match PyTorch's step for step. ``step(epoch)`` (deprecated, as
in PyTorch) jumps to an epoch with the closed form where one exists.
"""

from __future__ import annotations

import math
import types
import warnings
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

from ember.core.tensor import Tensor
from ember.optim.optimizer import Optimizer

__all__ = [
    "LRScheduler", "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR",
    "LinearLR", "ExponentialLR", "SequentialLR", "PolynomialLR", "CosineAnnealingLR",
    "ChainedScheduler", "ReduceLROnPlateau", "OneCycleLR", "CyclicLR",
    "CosineAnnealingWarmRestarts",
]

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being "
    "deprecated where possible. Please use `scheduler.step()` to step the "
    "scheduler. During the deprecation, if epoch is different from None, the "
    "closed form is used instead of the new chainable form, where available. Please "
    "open an issue if you are unable to replicate your use case: "
    "https://github.com/pytorch/pytorch/issues/new/choose."
)


def _copy(value: Any) -> Any:
    return value.clone() if isinstance(value, Tensor) else value


def _format_param(name: str, optimizer: Optimizer, param: Any) -> list[Any]:
    """One value per param group: a scalar is repeated, a list must match the groups."""
    if isinstance(param, (list, tuple)):
        if len(param) != len(optimizer.param_groups):
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. "
                             f"{name} has {len(param)} values, param_groups has "
                             f"{len(optimizer.param_groups)}.")
    else:
        param = [param] * len(optimizer.param_groups)
    return [_copy(p) for p in param]


def _param_groups_val_list(optimizer: Optimizer, key: str) -> list[Any]:
    """`group[key]` of every group (tensors cloned, so callers never alias them)."""
    return [_copy(group[key]) for group in optimizer.param_groups]


def _update_param_group_val(group: dict[str, Any], key: str, value: Any) -> None:
    """Set `group[key]`; a tensor-valued entry is filled in place rather than replaced."""
    if isinstance(group[key], Tensor):
        group[key].fill_(float(value))
    else:
        group[key] = value


def _check_optimizer(optimizer: Any) -> None:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")


class _GetLrGuard:
    """Marks that `get_lr` runs inside `step` (calling it elsewhere warns)."""

    def __init__(self, sched: LRScheduler, initial: bool = False) -> None:
        self.sched, self.initial = sched, initial

    def __enter__(self) -> None:
        if self.initial:
            self.sched._is_initial = True
        else:
            self.sched._get_lr_called_within_step = True

    def __exit__(self, *exc: Any) -> None:
        if self.initial:
            self.sched._is_initial = False
        else:
            self.sched._get_lr_called_within_step = False


def _warn_get_lr_called_within_step(sched: LRScheduler) -> None:
    if not sched._get_lr_called_within_step:
        warnings.warn("To get the last learning rate computed by the scheduler, please use "
                      "`get_last_lr()`.", UserWarning, stacklevel=3)


class LRScheduler:
    r"""Base class of the learning-rate schedulers.

    Subclasses implement :meth:`get_lr` (the next rates, from the groups' current ones)
    and optionally ``_get_closed_form_lr`` (the rates at :attr:`last_epoch` from
    :attr:`base_lrs`).

    Args:
        optimizer (Optimizer): the optimizer whose groups' ``lr`` it sets.
        last_epoch (int): index of the last epoch; ``-1`` (default) starts afresh and
            records each group's ``lr`` as its ``initial_lr``. Pass another value only
            when resuming, with ``initial_lr`` already in the groups.

    Attributes:
        base_lrs (list): each group's ``initial_lr``.
        last_epoch (int): the number of :meth:`step` calls so far (0 after construction).

    .. warning::
        Creating a scheduler sets the groups' ``lr``: when restoring a checkpoint, create
        it *before* calling the optimizer's ``load_state_dict``.
    """

    _get_lr_called_within_step: bool = False
    _is_initial: bool = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", _copy(group["lr"]))
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] "
                                   "when resuming scheduler with last_epoch >= 0.\nThis "
                                   "typically happens when:\n1. You're trying to resume "
                                   "training from a checkpoint but haven't properly loaded "
                                   "the optimizer state\n2. You're using last_epoch >= 0 for "
                                   "a fresh training run (not recommended)")
        self.base_lrs: list[Any] = _param_groups_val_list(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self) -> None:
        """Reset the step count and take the initial step (to epoch `last_epoch + 1`)."""
        self._step_count = 0
        with _GetLrGuard(self, initial=True):
            self.step()

    def state_dict(self) -> dict[str, Any]:
        """The scheduler's state: every attribute except the optimizer."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a state returned by :meth:`state_dict`."""
        self.__dict__.update(state_dict)

    def get_last_lr(self) -> list[Any]:
        """The learning rates of the groups after the last :meth:`step`."""
        return self._last_lr

    def get_lr(self) -> list[Any]:
        """The next learning rate of each group (called by :meth:`step`; use
        :meth:`get_last_lr` to read the current ones)."""
        raise NotImplementedError

    def step(self, epoch: int | None = None) -> None:
        """Advance the schedule by one epoch (or batch) and set the groups' ``lr``.

        Call it after the optimizer's ``step()``.

        Args:
            epoch (int, optional): deprecated: jump to this epoch, with the closed form
                where the scheduler has one.
        """
        if self._step_count == 1 and not getattr(self.optimizer, "_opt_called", False):
            warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`. "
                          "In PyTorch 1.1.0 and later, you should call them in the opposite "
                          "order: `optimizer.step()` before `lr_scheduler.step()`.  Failure to "
                          "do this will result in PyTorch skipping the first value of the "
                          "learning rate schedule. See more details at https://pytorch.org/docs"
                          "/stable/optim.html#how-to-adjust-learning-rate",
                          UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        with _GetLrGuard(self):
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed_form = getattr(self, "_get_closed_form_lr", None)
                values = closed_form() if closed_form is not None else self.get_lr()
        groups = self.optimizer.param_groups
        if len(values) != len(groups):
            raise ValueError(f"{type(self).__name__} computed {len(values)} learning rates for "
                             f"{len(groups)} parameter groups")
        for group, lr in zip(groups, values):
            _update_param_group_val(group, "lr", lr)
        self._last_lr = _param_groups_val_list(self.optimizer, "lr")


def _lambdas_for(optimizer: Optimizer, lr_lambda: Any) -> list[Callable[[int], float]]:
    if not isinstance(lr_lambda, (list, tuple)):
        return [lr_lambda] * len(optimizer.param_groups)
    if len(lr_lambda) != len(optimizer.param_groups):
        raise ValueError(f"Expected {len(optimizer.param_groups)} lr_lambdas, but got "
                         f"{len(lr_lambda)}")
    return list(lr_lambda)


class _LRScheduler(LRScheduler):
    """PyTorch's old name of `LRScheduler`, which custom schedulers of older repos (warmup
    schedulers written with `get_lr`) still subclass."""


class _LambdaStateMixin:
    """state_dict / load_state_dict that keep the state of callable objects (functions
    and lambdas themselves are not saved)."""

    lr_lambdas: list[Callable[[int], float]]

    def state_dict(self) -> dict[str, Any]:
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else
                               fn.__dict__.copy() for fn in self.lr_lambdas]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = dict(state_dict)
        lr_lambdas = state.pop("lr_lambdas")
        self.__dict__.update(state)
        for idx, fn_state in enumerate(lr_lambdas):
            if fn_state is not None:
                self.lr_lambdas[idx].__dict__.update(fn_state)


class LambdaLR(_LambdaStateMixin, LRScheduler):
    """Set each group's learning rate to its initial lr times ``lr_lambda(epoch)``.

    Args:
        optimizer (Optimizer): wrapped optimizer.
        lr_lambda (function or list): a function of the epoch returning a factor, or one
            such function per param group.
        last_epoch (int): index of the last epoch (default: -1).

    Example:
        >>> sched = LambdaLR(opt, lr_lambda=lambda epoch: 0.95 ** epoch)
    """

    def __init__(self, optimizer: Optimizer,
                 lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
                 last_epoch: int = -1) -> None:
        self.optimizer = optimizer
        self.lr_lambdas = _lambdas_for(optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[Any]:
        _warn_get_lr_called_within_step(self)
        return [base_lr * lmbda(self.last_epoch)
                for lmbda, base_lr in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(_LambdaStateMixin, LRScheduler):
    """Multiply each group's learning rate by ``lr_lambda(epoch)`` at every step.

    Args:
        optimizer (Optimizer): wrapped optimizer.
        lr_lambda (function or list): a function of the epoch returning a factor, or one
            such function per param group.
        last_epoch (int): index of the last epoch (default: -1).
    """

    def __init__(self, optimizer: Optimizer,
                 lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
                 last_epoch: int = -1) -> None:
        self.optimizer = optimizer
        self.lr_lambdas = _lambdas_for(optimizer, lr_lambda)
        for fn in self.lr_lambdas:
            if not callable(fn):
                raise TypeError(f"lr_lambda should be a function, but got {type(fn).__name__}")
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[Any]:
        _warn_get_lr_called_within_step(self)
        if self._is_initial:
            return _param_groups_val_list(self.optimizer, "lr")
        return [group["lr"] * lmbda(self.last_epoch)
                for lmbda, group in zip(self.lr_lambdas, self.optimizer.param_groups)]


class StepLR(LRScheduler):
    """Multiply each group's learning rate by ``gamma`` every ``step_size`` epochs.

    Args:
        optimizer (Optimizer): wrapped optimizer.
        step_size (int): period of the decay.
        gamma (float): multiplicative factor (default: 0.1).
        last_epoch (int): index of the last epoch (default: -1).
    """

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[Any]:
        _warn_get_lr_called_within_step(self)
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return _param_groups_val_list(self.optimizer, "lr")
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[Any]:
        return [base_lr * self.gamma ** (self.last_epoch // self.step_size)
                for base_lr in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply each group's learning rate by ``gamma`` at each milestone epoch (by
    ``gamma ** n`` at a milestone listed ``n`` times).

    Args:
        optimizer (Optimizer): wrapped optimizer.
        milestones (list): epoch indices, increasing.
        gamma (float): multiplicative factor (default: 0.1).
        last_epoch (int): index of the last epoch (default: -1).
    """

    def __init__(self, optimizer: Optimizer, milestones: Iterable[int], gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[Any]:
        _warn_get_lr_called_within_step(self)
        if self.last_epoch not in self.milestones:
            return _param_groups_val_list(self.optimizer, "lr")
        return [group["lr"] * self.gamma ** self.milestones[self.last_epoch]
                for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[Any]:
        milestones = sorted(self.milestones.elements())
        return [base_lr * self.gamma ** bisect_right(milestones, self.last_epoch)
                for base_lr in self.base_lrs]


class ConstantLR(LRScheduler):
    """Multiply each group's learning rate by ``factor`` until epoch ``total_iters``.

    Args:
        optimizer (Optimizer): wrapped optimizer.
        factor (float): the factor, in [0, 1] (default: 1/3).
        total_iters (int): number of epochs it applies to (default: 5).
        last_epoch (int): index of the last epoch (default: -1).
    """

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1) -> None:
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[Any]:
        _warn_get_lr_called_within_step(self)
        if self.last_epoch == 0:
            return [group["lr"] * self.factor for group in self.optimizer.param_groups]
        if self.last_epoch != self.total_iters:
            return _param_groups_val_list(self.optimizer, "lr")
        return [group["lr"] * (1.0 / self.factor) for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[Any]:
        return [base_lr * (self.factor + (self.last_epoch >= self.total_iters)
                           * (1 - self.factor)) for base_lr in self.base_lrs]


class LinearLR(LRScheduler):
    """Scale each group's learning rate by a factor going linearly from ``start_factor``
    to ``end_factor`` over ``total_iters`` epochs.

    Args:
        optimizer (Optimizer): wrapped optimizer.
        start_factor (float): factor at the first epoch, in (0, 1] (default: 1/3).
        end_factor (float): factor from ``total_iters`` on, in [0, 1] (default: 1.0).
        total_iters (int): number of epochs of the ramp (default: 5).
        last_epoch (int): index of the last epoch (default: -1).
    """

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3,
                 end_factor: float = 1.0, total_iters: int = 5, last_epoch: int = -1) -> None:
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 and "
                             "less or equal to 1.")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[Any]:
        _warn_get_lr_called_within_step(self)
        if self.last_epoch == 0:
            return [group["lr"] * self.start_factor for group in self.optimizer.param_groups]
        if self._is_initial or self.last_epoch > self.total_iters:
            return _param_groups_val_list(self.optimizer, "lr")
        delta = self.end_factor - self.start_factor
        factor = 1.0 + delta / (self.total_iters * self.start_factor
                                + (self.last_epoch - 1) * delta)
        return [group["lr"] * factor for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[Any]:
        return [base_lr * (self.start_factor + (self.end_factor - self.start_factor)
                           * min(self.total_iters, self.last_epoch) / self.total_iters)
                for base_lr in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply each group's learning rate by ``gamma`` every epoch.

    Args:
        optimizer (Optimizer): wrapped optimizer.
        gamma (float): multiplicative factor.
        last_epoch (int): index of the last epoch (default: -1).
    """

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[Any]:
        _warn_get_lr_called_within_step(self)
        # When resuming, the constructor's initial step must not advance the rate again.
        if self._is_initial:
            return _param_groups_val_list(self.optimizer, "lr")
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[Any]:
        return [base_lr * self.gamma ** self.last_epoch for base_lr in self.base_lrs]


class PolynomialLR(LRScheduler):
    """Decay each group's learning rate as ``base_lr * (1 - epoch / total_iters) ** power``
    until ``total_iters``.

    Args:
        optimizer (Optimizer): wrapped optimizer.
        total_iters (int): number of epochs of the decay (default: 5).
        power (float): power of the polynomial (default: 1.0).
        last_epoch (int): index of the last epoch (default: -1).
    """

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0,
                 last_epoch: int = -1) -> None:
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[Any]:
        _warn_get_lr_called_within_step(self)
        if self._is_initial or self.last_epoch > self.total_iters:
            return _param_groups_val_list(self.optimizer, "lr")
        decay = ((1.0 - self.last_epoch / self.total_iters)
                 / (1.0 - (self.last_epoch - 1) / self.total_iters)) ** self.power
        return [group["lr"] * decay for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[Any]:
        return [base_lr * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters)
                ** self.power for base_lr in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    r"""Anneal each group's learning rate along a cosine, from its initial lr to
    ``eta_min`` over ``T_max`` epochs (and back up over the next ``T_max``, and so on):

    .. math::
        \eta_t = \eta_{min} + \tfrac{1}{2}(\eta_{base} - \eta_{min})
            \left(1 + \cos\left(\tfrac{t}{T_{max}} \pi\right)\right)

    computed recursively from the current rate, as PyTorch does, so that it chains with
    other schedulers and its curve matches PyTorch's.

    Args:
        optimizer (Optimizer): wrapped optimizer.
        T_max (int): number of epochs of a half period.
        eta_min (float): the minimum learning rate (default: 0).
        last_epoch (int): index of the last epoch (default: -1).
    """

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0,  # noqa: N803
                 last_epoch: int = -1) -> None:
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[Any]:
        _warn_get_lr_called_within_step(self)
        groups = self.optimizer.param_groups
        if self._is_initial:
            return _param_groups_val_list(self.optimizer, "lr")
        if self._step_count == 1 and self.last_epoch > 0:
            return [self.eta_min + (base_lr - self.eta_min)
                    * (1 + math.cos(self.last_epoch * math.pi / self.T_max)) / 2
                    for base_lr in self.base_lrs]
        if (self.last_epoch - 1 - self.T_max) % (2 * self.T_max) == 0:
            return [group["lr"] + (base_lr - self.eta_min)
                    * (1 - math.cos(math.pi / self.T_max)) / 2
                    for base_lr, group in zip(self.base_lrs, groups)]
        ratio = ((1 + math.cos(math.pi * self.last_epoch / self.T_max))
                 / (1 + math.cos(math.pi * (self.last_epoch - 1) / self.T_max)))
        return [ratio * (group["lr"] - self.eta_min) + self.eta_min for group in groups]

    def _get_closed_form_lr(self) -> list[Any]:
        return [self.eta_min + (base_lr - self.eta_min)
                * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base_lr in self.base_lrs]


def _check_children(owner: str, optimizer: Optimizer | None,
                    schedulers: Sequence[LRScheduler]) -> None:
    for idx, sched in enumerate(schedulers):
        if not hasattr(sched, "optimizer"):
            raise TypeError(f"{owner} at index {idx} should have `optimizer` as its attribute.")
        if isinstance(sched, ReduceLROnPlateau):
            raise ValueError(f"{owner} does not support `ReduceLROnPlateau` scheduler as it "
                             "requires additional kwargs to be specified when calling `step`, "
                             f"but got one at index {idx} in the given schedulers sequence.")
        if optimizer is not sched.optimizer:
            raise ValueError(f"{owner} expects all schedulers to belong to the same optimizer, "
                             f"but got scheduler {type(sched).__name__} at index {idx} has "
                             f"{sched.optimizer}, which is different from "
                             f"{type(optimizer).__name__}.")


class _ChildStateMixin:
    """state_dict / load_state_dict that nest the states of the child schedulers."""

    _schedulers: list[LRScheduler]

    def state_dict(self) -> dict[str, Any]:
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = dict(state_dict)
        children = state.pop("_schedulers")
        self.__dict__.update(state)
        for sched, child_state in zip(self._schedulers, children):
            sched.load_state_dict(child_state)


class SequentialLR(_ChildStateMixin, LRScheduler):
    """Run schedulers one after another, switching at the milestone epochs.

    Args:
        optimizer (Optimizer): wrapped optimizer.
        schedulers (list): the schedulers, in order (all on ``optimizer``).
        milestones (list): the epochs at which the next scheduler takes over (one fewer
            than the schedulers).
        last_epoch (int): index of the last epoch (default: -1).

    Example:
        >>> warmup = LinearLR(opt, start_factor=0.1, total_iters=5)
        >>> decay = CosineAnnealingLR(opt, T_max=95)
        >>> sched = SequentialLR(opt, schedulers=[warmup, decay], milestones=[5])
    """

    def __init__(self, optimizer: Optimizer, schedulers: list[LRScheduler],
                 milestones: list[int], last_epoch: int = -1) -> None:
        if len(schedulers) < 1:
            raise ValueError(f"{type(self).__name__} expects at least one scheduler, but got "
                             "no scheduler.")
        _check_children(type(self).__name__, optimizer, schedulers)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError("Sequential Schedulers expects number of schedulers provided to be "
                             "one more than the number of milestone points, but got number of "
                             f"schedulers {len(schedulers)} and the number of milestones to be "
                             f"equal to {len(milestones)}")
        self._schedulers = list(schedulers)
        self._milestones = list(milestones)
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        # Each child took its initial step when it was built: reset the rates and undo
        # those steps, then take the initial step of the scheduler that owns epoch 0.
        for group in optimizer.param_groups:
            _update_param_group_val(group, "lr", group["initial_lr"])
        self.recursive_undo()
        idx = bisect_right(self._milestones, 0)
        self._schedulers[idx]._initial_step()
        self._last_lr = self._schedulers[idx].get_last_lr()

    def recursive_undo(self, sched: Any = None) -> None:
        """Undo the initial step that each (nested) child took when it was built."""
        scheds = self if sched is None else sched
        if hasattr(scheds, "_schedulers"):
            for s in scheds._schedulers:
                self.recursive_undo(s)
        elif hasattr(scheds, "last_epoch"):
            scheds.last_epoch -= 1

    def step(self) -> None:  # type: ignore[override]
        """Advance by one epoch, with the scheduler that owns the new epoch."""
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        sched = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            sched._update_lr(0)  # a scheduler taking over starts at its epoch 0
        else:
            sched.step()
        self._last_lr = sched.get_last_lr()


class ChainedScheduler(_ChildStateMixin, LRScheduler):
    """Step several schedulers together (their factors multiply).

    Args:
        schedulers (sequence): the schedulers (all on one optimizer).
        optimizer (Optimizer, optional): that optimizer (default: the first scheduler's).
    """

    def __init__(self, schedulers: Sequence[LRScheduler],
                 optimizer: Optimizer | None = None) -> None:
        if len(schedulers) < 1:
            raise ValueError(f"{type(self).__name__} expects at least one scheduler to be "
                             "chained, but got no scheduler.")
        optimizer = optimizer or schedulers[0].optimizer
        _check_children(type(self).__name__, optimizer, schedulers)
        self._schedulers = list(schedulers)
        self.optimizer = optimizer
        self._last_lr = _param_groups_val_list(self._schedulers[-1].optimizer, "lr")

    def step(self) -> None:  # type: ignore[override]
        """Step every chained scheduler."""
        for sched in self._schedulers:
            sched.step()
        self._last_lr = _param_groups_val_list(self._schedulers[-1].optimizer, "lr")


class ReduceLROnPlateau(LRScheduler):
    """Reduce the learning rate when a metric has stopped improving.

    Args:
        optimizer (Optimizer): wrapped optimizer.
        mode (str): ``"min"`` (the metric should decrease) or ``"max"`` (default: "min").
        factor (float): ``new_lr = lr * factor``, below 1 (default: 0.1).
        patience (int): epochs without improvement tolerated before reducing; the lr
            drops when ``num_bad_epochs > patience`` (default: 10).
        threshold (float): the change that counts as an improvement (default: 1e-4).
        threshold_mode (str): ``"rel"``: better than ``best * (1 -+ threshold)``;
            ``"abs"``: better than ``best -+ threshold`` (default: "rel").
        cooldown (int): epochs to wait after a reduction before counting bad epochs
            again (default: 0).
        min_lr (float or list): lower bound on the lr, for all groups or per group
            (default: 0).
        eps (float): a reduction smaller than this is skipped (default: 1e-8).

    Example:
        >>> sched = ReduceLROnPlateau(opt, mode="min", patience=3)
        >>> for epoch in range(100):
        ...     train(...)
        ...     sched.step(validate(...))
    """

    def __init__(self, optimizer: Optimizer, mode: Literal["min", "max"] = "min",
                 factor: float = 0.1, patience: int = 10, threshold: float = 1e-4,
                 threshold_mode: Literal["rel", "abs"] = "rel", cooldown: int = 0,
                 min_lr: list[float] | float = 0, eps: float = 1e-8) -> None:
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        self.factor = factor
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(optimizer.param_groups):
                raise ValueError(f"expected {len(optimizer.param_groups)} min_lrs, got "
                                 f"{len(min_lr)}")
            self.default_min_lr: float | None = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * len(optimizer.param_groups)
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = _param_groups_val_list(optimizer, "lr")
        self._init_is_better(mode=mode, threshold=threshold, threshold_mode=threshold_mode)
        self._reset()

    def _reset(self) -> None:
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def step(self, metrics: Any, epoch: int | None = None) -> None:  # type: ignore[override]
        """Record this epoch's metric (a number or a one-element tensor), reducing the lr
        after too many epochs without improvement."""
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self._is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad epochs in cooldown do not count
        if self.num_bad_epochs > self.patience:
            self._reduce_lr(epoch)
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = _param_groups_val_list(self.optimizer, "lr")

    def _reduce_lr(self, epoch: int) -> None:
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(f"The number of param groups in the `optimizer` "
                                   f"({len(groups)}) differs from when `ReduceLROnPlateau` "
                                   f"was initialized ({len(self.min_lrs)}), usually due to a "
                                   "new param group being added to the optimizer. Please "
                                   "modify the `min_lrs` field to match the length of the "
                                   "`optimizer` param groups.")
            self.min_lrs = [self.default_min_lr] * len(groups)
        for i, group in enumerate(groups):
            old_lr = float(group["lr"])
            new_lr = max(old_lr * self.factor, self.min_lrs[i])
            if old_lr - new_lr > self.eps:
                _update_param_group_val(group, "lr", new_lr)

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def _is_better(self, a: float, best: float) -> bool:
        if self.mode == "min" and self.threshold_mode == "rel":
            return a < best * (1.0 - self.threshold)
        if self.mode == "min" and self.threshold_mode == "abs":
            return a < best - self.threshold
        if self.mode == "max" and self.threshold_mode == "rel":
            return a > best * (self.threshold + 1.0)
        return a > best + self.threshold

    def _init_is_better(self, mode: str, threshold: float, threshold_mode: str) -> None:
        if mode not in {"min", "max"}:
            raise ValueError("mode " + mode + " is unknown!")
        if threshold_mode not in {"rel", "abs"}:
            raise ValueError("threshold mode " + threshold_mode + " is unknown!")
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a state returned by :meth:`state_dict`."""
        self.__dict__.update(state_dict)
        self._init_is_better(mode=self.mode, threshold=self.threshold,
                             threshold_mode=self.threshold_mode)


class OneCycleLR(LRScheduler):
    r"""The 1cycle policy ("Super-Convergence", Smith & Topin): the learning rate rises
    from ``max_lr / div_factor`` to ``max_lr``, then anneals to
    ``max_lr / (div_factor * final_div_factor)``; momentum (or Adam's beta1) moves the
    opposite way between ``max_momentum`` and ``base_momentum``. Step it after every
    batch.

    Args:
        optimizer (Optimizer): wrapped optimizer.
        max_lr (float or list): the peak learning rate, for all groups or per group.
        total_steps (int, optional): the number of steps in the cycle; else
            ``epochs * steps_per_epoch``.
        epochs (int, optional): epochs to train for (with ``steps_per_epoch``).
        steps_per_epoch (int, optional): steps per epoch (with ``epochs``).
        pct_start (float): fraction of the cycle spent rising (default: 0.3).
        anneal_strategy (str): ``"cos"`` or ``"linear"`` (default: "cos").
        cycle_momentum (bool): cycle the groups' ``momentum`` (or ``betas[0]``) inversely
            to the lr (default: True).
        base_momentum (float or list): momentum at the lr's peak (default: 0.85).
        max_momentum (float or list): momentum at the start and end (default: 0.95).
        div_factor (float): ``initial_lr = max_lr / div_factor`` (default: 25).
        final_div_factor (float): ``min_lr = initial_lr / final_div_factor``
            (default: 1e4).
        three_phase (bool): rise, fall back to ``initial_lr`` symmetrically, then anneal to
            ``min_lr`` (the paper's schedule), instead of fastai's two phases
            (default: False).
        last_epoch (int): the number of batches already seen when resuming (default: -1).
    """

    def __init__(self, optimizer: Optimizer, max_lr: float | list[float],
                 total_steps: int | None = None, epochs: int | None = None,
                 steps_per_epoch: int | None = None, pct_start: float = 0.3,
                 anneal_strategy: Literal["cos", "linear"] = "cos",
                 cycle_momentum: bool = True, base_momentum: float | list[float] = 0.85,
                 max_momentum: float | list[float] = 0.95, div_factor: float = 25.0,
                 final_div_factor: float = 1e4, three_phase: bool = False,
                 last_epoch: int = -1) -> None:
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if total_steps is not None:
            if not isinstance(total_steps, int) or total_steps <= 0:
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"Expected positive integer epochs, but got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError(f"Expected positive integer steps_per_epoch, but got "
                                 f"{steps_per_epoch}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND "
                             "steps_per_epoch)")

        if three_phase:
            self._schedule_phases = [
                {"end_step": float(pct_start * self.total_steps) - 1, "start_lr": "initial_lr",
                 "end_lr": "max_lr", "start_momentum": "max_momentum",
                 "end_momentum": "base_momentum"},
                {"end_step": float(2 * pct_start * self.total_steps) - 2, "start_lr": "max_lr",
                 "end_lr": "initial_lr", "start_momentum": "base_momentum",
                 "end_momentum": "max_momentum"},
                {"end_step": self.total_steps - 1, "start_lr": "initial_lr",
                 "end_lr": "min_lr", "start_momentum": "max_momentum",
                 "end_momentum": "max_momentum"},
            ]
        else:
            self._schedule_phases = [
                {"end_step": float(pct_start * self.total_steps) - 1, "start_lr": "initial_lr",
                 "end_lr": "max_lr", "start_momentum": "max_momentum",
                 "end_momentum": "base_momentum"},
                {"end_step": self.total_steps - 1, "start_lr": "max_lr", "end_lr": "min_lr",
                 "start_momentum": "base_momentum", "end_momentum": "max_momentum"},
            ]

        if not isinstance(pct_start, float) or pct_start < 0 or pct_start > 1:
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._anneal_func_type = anneal_strategy

        max_lrs = _format_param("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for idx, group in enumerate(optimizer.param_groups):
                group["initial_lr"] = max_lrs[idx] / div_factor
                group["max_lr"] = max_lrs[idx]
                group["min_lr"] = group["initial_lr"] / final_div_factor

        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("optimizer must support momentum or beta1 with "
                                 "`cycle_momentum` option enabled")
            self.use_beta1 = "betas" in optimizer.defaults
            max_momentums = _format_param("max_momentum", optimizer, max_momentum)
            base_momentums = _format_param("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for m_mom, b_mom, group in zip(max_momentums, base_momentums,
                                               optimizer.param_groups):
                    if self.use_beta1:
                        group["betas"] = (m_mom, *group["betas"][1:])
                    else:
                        group["momentum"] = m_mom
                    group["max_momentum"] = m_mom
                    group["base_momentum"] = b_mom
        super().__init__(optimizer, last_epoch)

    def _anneal_func(self, start: float, end: float, pct: float) -> float:
        if self._anneal_func_type == "cos":
            return self._annealing_cos(start, end, pct)
        return self._annealing_linear(start, end, pct)

    @staticmethod
    def _annealing_cos(start: float, end: float, pct: float) -> float:
        """Cosine anneal from `start` to `end` as `pct` goes from 0 to 1."""
        return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)

    @staticmethod
    def _annealing_linear(start: float, end: float, pct: float) -> float:
        """Linear anneal from `start` to `end` as `pct` goes from 0 to 1."""
        return (end - start) * pct + start

    def get_lr(self) -> list[Any]:
        """The next learning rates; also sets each group's momentum when cycling it."""
        _warn_get_lr_called_within_step(self)
        step_num = self.last_epoch
        if step_num > self.total_steps:
            raise ValueError(f"Tried to step {step_num} times. The specified number of total "
                             f"steps is {self.total_steps}")
        lrs = []
        last = len(self._schedule_phases) - 1
        for group in self.optimizer.param_groups:
            start_step = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end_step = phase["end_step"]
                if step_num <= end_step or i == last:
                    pct = (step_num - start_step) / (end_step - start_step)
                    lr = self._anneal_func(group[phase["start_lr"]], group[phase["end_lr"]],
                                           pct)
                    if self.cycle_momentum:
                        momentum = self._anneal_func(group[phase["start_momentum"]],
                                                     group[phase["end_momentum"]], pct)
                    break
                start_step = phase["end_step"]
            lrs.append(lr)
            if self.cycle_momentum:
                if self.use_beta1:
                    group["betas"] = (momentum, *group["betas"][1:])
                else:
                    group["momentum"] = momentum
        return lrs


class CyclicLR(LRScheduler):
    r"""Cyclical learning rates (Smith, "Cyclical Learning Rates for Training Neural
    Networks"): the rate moves between ``base_lr`` and ``max_lr`` and back, a cycle every
    ``step_size_up + step_size_down`` steps; momentum (or Adam's beta1) cycles the
    opposite way. Step it after every batch.

    Args:
        optimizer (Optimizer): wrapped optimizer.
        base_lr (float or list): the lower bound of the cycle, for all groups or per group.
        max_lr (float or list): the upper bound (reached only if the scaling allows).
        step_size_up (int): steps in the rising half of a cycle (default: 2000).
        step_size_down (int, optional): steps in the falling half; ``step_size_up`` when
            None (default).
        mode (str): ``"triangular"`` (no scaling), ``"triangular2"`` (the amplitude halves
            every cycle) or ``"exp_range"`` (scaled by ``gamma ** iteration``); ignored
            when ``scale_fn`` is given (default: "triangular").
        gamma (float): the base of ``"exp_range"`` (default: 1.0).
        scale_fn (callable, optional): a custom scaling of the amplitude, in ``[0, 1]``.
        scale_mode (str): whether ``scale_fn`` reads the cycle number (``"cycle"``) or the
            iteration (``"iterations"``) (default: "cycle").
        cycle_momentum (bool): cycle the groups' ``momentum`` (or ``betas[0]``)
            (default: True).
        base_momentum (float or list): momentum at the lr's peak (default: 0.8).
        max_momentum (float or list): momentum at the cycle's start (default: 0.9).
        last_epoch (int): the number of batches already seen when resuming (default: -1).
    """

    def __init__(self, optimizer: Optimizer, base_lr: float | list[float],
                 max_lr: float | list[float], step_size_up: int = 2000,
                 step_size_down: int | None = None,
                 mode: Literal["triangular", "triangular2", "exp_range"] = "triangular",
                 gamma: float = 1.0, scale_fn: Callable[[float], float] | None = None,
                 scale_mode: Literal["cycle", "iterations"] = "cycle",
                 cycle_momentum: bool = True, base_momentum: float = 0.8,
                 max_momentum: float = 0.9, last_epoch: int = -1) -> None:
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        base_lrs = _format_param("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                _update_param_group_val(group, "lr", lr)
        self.max_lrs = _format_param("max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("optimizer must support momentum or beta1 with "
                                 "`cycle_momentum` option enabled")
            self.use_beta1 = "betas" in optimizer.defaults
            self.base_momentums = _format_param("base_momentum", optimizer, base_momentum)
            self.max_momentums = _format_param("max_momentum", optimizer, max_momentum)
            if last_epoch == -1:
                for m_mom, b_mom, group in zip(self.max_momentums, self.base_momentums,
                                               optimizer.param_groups):
                    self._set_momentum(group, m_mom)
                    group["max_momentum"] = m_mom
                    group["base_momentum"] = b_mom
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _set_momentum(self, group: dict[str, Any], momentum: float) -> None:
        if self.use_beta1:
            group["betas"] = (momentum, *group["betas"][1:])
        else:
            group["momentum"] = momentum

    def _init_scale_fn(self) -> None:
        if self._scale_fn_custom is not None:
            return
        # the built-in modes fix their scale mode, as PyTorch's do
        self.scale_mode = "iterations" if self.mode == "exp_range" else "cycle"

    def scale_fn(self, x: float) -> float:
        """The amplitude's scale at cycle (or iteration) `x`."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        if self.mode == "exp_range":
            return self.gamma ** x
        return 1.0

    def get_lr(self) -> list[Any]:
        """The next learning rates; also sets each group's momentum when cycling it."""
        _warn_get_lr_called_within_step(self)
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            scale_factor = x / self.step_ratio
        else:
            scale_factor = (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [base_lr + (max_lr - base_lr) * scale_factor * scale
               for base_lr, max_lr in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for group, b_mom, m_mom in zip(self.optimizer.param_groups, self.base_momentums,
                                           self.max_momentums):
                self._set_momentum(group, m_mom - (m_mom - b_mom) * scale_factor * scale)
        return lrs

    def state_dict(self) -> dict[str, Any]:
        """The scheduler's state; a custom ``scale_fn`` is kept only when it is a callable
        object (its ``__dict__``), not a function or lambda."""
        state = super().state_dict()
        fn = state.pop("_scale_fn_custom")
        state["_scale_fn_custom"] = None
        if fn is not None and not isinstance(fn, types.FunctionType):
            state["_scale_fn_custom"] = fn.__dict__.copy()
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a state returned by :meth:`state_dict`."""
        state_dict = dict(state_dict)
        fn = state_dict.pop("_scale_fn_custom")
        super().load_state_dict(state_dict)
        if fn is not None:
            self._scale_fn_custom.__dict__.update(fn)
        self._init_scale_fn()


class CosineAnnealingWarmRestarts(LRScheduler):
    r"""Cosine annealing with warm restarts (SGDR, Loshchilov & Hutter):

    .. math::
        \eta_t = \eta_{min} + \frac{1}{2}(\eta_{max} - \eta_{min})
        \left(1 + \cos\left(\frac{T_{cur}}{T_i}\pi\right)\right)

    where :math:`T_{cur}` counts the epochs since the last restart and :math:`T_i`, the
    length of the current run, starts at ``T_0`` and is multiplied by ``T_mult`` at each
    restart. ``step(epoch)`` accepts fractional epochs (``epoch + i / iters``) so it can
    be stepped every batch.

    Args:
        optimizer (Optimizer): wrapped optimizer.
        T_0 (int): steps until the first restart.
        T_mult (int): the factor by which :math:`T_i` grows after a restart (default: 1).
        eta_min (float): the minimum learning rate (default: 0).
        last_epoch (int): the index of the last epoch (default: -1).
    """

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1,  # noqa: N803
                 eta_min: float = 0.0, last_epoch: int = -1) -> None:
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(f"Expected float or int eta_min, but got {eta_min} of type "
                             f"{type(eta_min)}")
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[Any]:
        """The learning rates at :attr:`T_cur` of the current run."""
        _warn_get_lr_called_within_step(self)
        return [self.eta_min + (base_lr - self.eta_min)
                * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
                for base_lr in self.base_lrs]

    def step(self, epoch: float | None = None) -> None:  # type: ignore[override]
        """Advance one step, or jump to `epoch` (which may be fractional: step it every
        batch with ``epoch + i / iters``); the two can be interleaved."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            if epoch < 0:
                raise ValueError(f"Expected non-negative epoch, but got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log((epoch / self.T_0 * (self.T_mult - 1) + 1), self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult ** n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        with _GetLrGuard(self):
            values = self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, values):
            _update_param_group_val(group, "lr", lr)
        self._last_lr = _param_groups_val_list(self.optimizer, "lr")
