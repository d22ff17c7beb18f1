"""`ember.nn.utils.stateless`: call a module with other tensors in place of its parameters
and buffers (`functional_call`, also `ember.func.functional_call`), as PyTorch's
torch.nn.utils.stateless does: the substitutes are swapped into the module for the one
call and the originals put back afterwards, even when the call raises. Gradients then
flow to the substitutes (MAML's fast weights, ensembles, per-sample tricks)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from ember.core.tensor import Tensor
from ember.nn.module import Module


def _untie(module: Module, given: dict[str, Tensor]) -> dict[str, Tensor]:
    """`given`, completed with every other name of a tied tensor whose one name is given
    (PyTorch's `_untie_named_tensors_map`)."""
    named: dict[str, Tensor] = dict(module.named_parameters(remove_duplicate=False))
    named.update(module.named_buffers(remove_duplicate=False))
    names_of: dict[int, set[str]] = {}
    for name, t in named.items():
        names_of.setdefault(id(t), set()).add(name)
    untied = dict(given)
    for name, t in named.items():
        tied = names_of[id(t)]
        chosen = [n for n in tied if n in given]
        if len(chosen) > 1 and any(given[n] is not given[chosen[0]] for n in chosen):
            raise ValueError(f"functional_call got multiple values for keys {sorted(chosen)}, "
                             "which are tied. Consider using tie_weights=False")
        if chosen and name not in given:
            untied[name] = given[chosen[0]]
    return untied


def _owner(module: Module, name: str) -> tuple[Module, str]:
    *path, leaf = name.split(".")
    for part in path:
        module = module.get_submodule(part) if part else module
    return module, leaf


def _swap(module: Module, name: str, value: Any) -> Any:
    """Put `value` where `name` is; return what was there (a missing name: `_MISSING`)."""
    owner, leaf = _owner(module, name)
    for table in (owner._parameters, owner._buffers):
        if leaf in table:
            old, table[leaf] = table[leaf], value
            return old
    old = owner.__dict__.get(leaf, _MISSING)
    object.__setattr__(owner, leaf, value)
    return old


def _restore(module: Module, name: str, old: Any) -> None:
    owner, leaf = _owner(module, name)
    for table in (owner._parameters, owner._buffers):
        if leaf in table:
            table[leaf] = old
            return
    if old is _MISSING:
        owner.__dict__.pop(leaf, None)
    else:
        object.__setattr__(owner, leaf, old)


_MISSING = object()


@contextlib.contextmanager
def _reparametrize_module(module: Module, tensors: dict[str, Tensor], tie_weights: bool = False,
                          strict: bool = False) -> Iterator[None]:
    if tie_weights:
        tensors = _untie(module, tensors)
    if strict:
        known = ({n for n, _ in module.named_parameters(remove_duplicate=False)}
                 | {n for n, _ in module.named_buffers(remove_duplicate=False)})
        unexpected = sorted(set(tensors) - known)
        missing = sorted(known - set(tensors))
        msgs = []
        if unexpected:
            msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
        if missing:
            msgs.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
        if msgs:
            raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(
                module._get_name(), "\n\t".join(msgs)))
    originals: list[tuple[str, Any]] = []
    try:
        for name, value in tensors.items():
            originals.append((name, _swap(module, name, value)))
        yield
    finally:
        for name, old in reversed(originals):
            _restore(module, name, old)


def functional_call(module: Module,
                    parameter_and_buffer_dicts: dict[str, Tensor] | Sequence[dict[str, Tensor]],
                    args: Any = None, kwargs: dict[str, Any] | None = None, *,
                    tie_weights: bool = True, strict: bool = False) -> Any:
    r"""Performs a functional call on the module by replacing the module parameters and
    buffers with the provided ones.

    Args:
        module (nn.Module): the module to call.
        parameter_and_buffer_dicts (dict or sequence of dicts): name -> tensor, by the
            names of ``module.named_parameters()`` / ``named_buffers()``; several dicts
            must not share a key.
        args (Any or tuple): the positional arguments of the call (one non-tuple value is
            the only argument).
        kwargs (dict): the keyword arguments of the call.
        tie_weights (bool): when a tied tensor is given under one of its names, use it for
            every name. Default: True.
        strict (bool): every parameter and buffer must be given, and nothing else.

    Returns:
        Any: the result of calling ``module``.
    """
    if isinstance(parameter_and_buffer_dicts, dict):
        merged = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, Sequence):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be "
                             "dictionaries")
        merged = {}
        for d in parameter_and_buffer_dicts:
            repeated = sorted(set(merged) & set(d))
            if repeated:
                raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of "
                                 "functional call is ambiguous")
            merged.update(d)
    else:
        raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple "
                         f"of dicts, but got {type(parameter_and_buffer_dicts)}")
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize_module(module, merged, tie_weights=tie_weights, strict=strict):
        return module(*args, **kwargs)
