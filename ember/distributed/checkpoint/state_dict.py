"""`torch.distributed.checkpoint.state_dict`: model and optimizer state dicts keyed by
parameter names (fully qualified names, FQNs), the form DCP saves.

An optimizer's own `state_dict()` numbers its parameters; here they are named, so a
checkpoint does not depend on the order parameters were given to the optimizer:
`{"state": {"fc.weight": {...}}, "param_groups": [{..., "params": ["fc.weight", ...]}]}`.
With data-parallel training every rank holds whole tensors, so full and sharded state
dicts are the same.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["StateDictOptions", "get_model_state_dict", "get_optimizer_state_dict",
           "get_state_dict", "set_model_state_dict", "set_optimizer_state_dict",
           "set_state_dict"]


@dataclass
class StateDictOptions:
    """How the state dicts are made and loaded (PyTorch's fields and defaults)."""

    full_state_dict: bool = False
    cpu_offload: bool = False
    ignore_frozen_params: bool = False
    keep_submodule_prefixes: bool = True
    strict: bool = True
    broadcast_from_rank0: bool = False
    flatten_optimizer_state_dict: bool = False
    dsd_fqn_modifiers: str = "_fqn_modifiers"


def _optimizers(optimizers: Any) -> list[Any]:
    return list(optimizers) if isinstance(optimizers, Iterable) else [optimizers]


def _names(model: Any) -> dict[int, str]:
    """id(parameter) -> its FQN (the first name of a shared parameter)."""
    names: dict[int, str] = {}
    for name, p in model.named_parameters(remove_duplicate=False):
        names.setdefault(id(p), name)
    return names


def get_model_state_dict(model: Any, *, submodules: Any = None,
                         options: StateDictOptions | None = None) -> dict[str, Any]:
    """`model`'s state dict: every parameter and persistent buffer by FQN (frozen
    parameters left out with `ignore_frozen_params`, copies on the CPU with
    `cpu_offload`)."""
    options = options or StateDictOptions()
    state = model.state_dict()
    if options.ignore_frozen_params:
        frozen = {n for n, p in model.named_parameters() if not p.requires_grad}
        state = {k: v for k, v in state.items() if k not in frozen}
    if options.cpu_offload:
        state = {k: v.cpu() if hasattr(v, "cpu") else v for k, v in state.items()}
    return dict(state)


def _init_optim_state(opt: Any) -> None:
    """Gives an optimizer that has not stepped its state, as PyTorch does before saving
    (so that a loaded checkpoint has a place for every state tensor): one step with zero
    gradients and a zero learning rate. Not where a parameter already has a gradient."""
    if opt.state or any(p.grad is not None for g in opt.param_groups for p in g["params"]):
        return
    from ember.core.creation import tensor, zeros_like
    from ember.core.tensor import Tensor

    for group in opt.param_groups:
        for p in group["params"]:
            if p.requires_grad:
                p.grad = zeros_like(p)
    lrs = []
    for group in opt.param_groups:
        if "lr" in group:
            lrs.append(group["lr"])
            group["lr"] = tensor(0.0) if isinstance(group["lr"], Tensor) else 0.0
    opt.step(closure=None)
    for group in opt.param_groups:
        if "lr" in group:
            group["lr"] = lrs.pop(0)
    opt.zero_grad(set_to_none=True)


def get_optimizer_state_dict(model: Any, optimizers: Any, *, submodules: Any = None,
                             options: StateDictOptions | None = None) -> dict[str, Any]:
    """The optimizers' state dicts merged, parameters named by FQN (an optimizer that
    has not stepped gets its state first, as in PyTorch)."""
    names = _names(model)
    state: dict[str, Any] = {}
    groups: list[dict[str, Any]] = []
    for opt in _optimizers(optimizers):
        _init_optim_state(opt)
        own = opt.state_dict()
        params = [p for group in opt.param_groups for p in group["params"]]
        fqn = {i: names[id(p)] for i, p in enumerate(params)}
        state.update({fqn[i]: s for i, s in own["state"].items()})
        for group in own["param_groups"]:
            groups.append({**group, "params": [fqn[i] for i in group["params"]]})
    return {"state": state, "param_groups": groups}


def get_state_dict(model: Any, optimizers: Any, *, submodules: Any = None,
                   options: StateDictOptions | None = None) -> tuple[dict, dict]:
    """`(get_model_state_dict(...), get_optimizer_state_dict(...))`."""
    return (get_model_state_dict(model, options=options),
            get_optimizer_state_dict(model, optimizers, options=options))


def set_model_state_dict(model: Any, model_state_dict: dict[str, Any], *,
                         options: StateDictOptions | None = None) -> Any:
    """Loads `model_state_dict` into `model` (strictly unless `options.strict` is False).

    Returns:
        ``NamedTuple`` with ``missing_keys`` and ``unexpected_keys``.
    """
    options = options or StateDictOptions()
    return model.load_state_dict(model_state_dict, strict=options.strict)


def set_optimizer_state_dict(model: Any, optimizers: Any, optim_state_dict: dict[str, Any], *,
                             options: StateDictOptions | None = None) -> None:
    """Loads an FQN-keyed optimizer state dict into `optimizers`."""
    names = _names(model)
    groups = iter(optim_state_dict["param_groups"])
    for opt in _optimizers(optimizers):
        params = [p for group in opt.param_groups for p in group["params"]]
        index = {names[id(p)]: i for i, p in enumerate(params)}
        own_groups = [next(groups) for _ in opt.param_groups]
        opt.load_state_dict({
            "state": {index[n]: s for n, s in optim_state_dict["state"].items() if n in index},
            "param_groups": [{**g, "params": [index[n] for n in g["params"]]}
                             for g in own_groups]})


def set_state_dict(model: Any, optimizers: Any, *, model_state_dict: dict[str, Any],
                   optim_state_dict: dict[str, Any],
                   options: StateDictOptions | None = None) -> Any:
    """:func:`set_model_state_dict` and :func:`set_optimizer_state_dict` together."""
    keys = set_model_state_dict(model, model_state_dict, options=options)
    set_optimizer_state_dict(model, optimizers, optim_state_dict, options=options)
    return keys
