"""PyTorch's `nn.modules.utils` helpers that custom layers import (`_pair(3) == (3, 3)`)."""

from __future__ import annotations

import collections.abc
from collections.abc import Callable
from itertools import repeat
from typing import Any


def _ntuple(n: int, name: str = "parse") -> Callable[[Any], tuple]:
    def parse(x: Any) -> tuple:
        if isinstance(x, collections.abc.Iterable) and not isinstance(x, str):
            return tuple(x)
        return tuple(repeat(x, n))

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def consume_prefix_in_state_dict_if_present(state_dict: dict[str, Any], prefix: str) -> None:
    r"""Strip ``prefix`` from the keys of ``state_dict`` in place, where they have it.

    A local model loads a :class:`~ember.nn.parallel.DistributedDataParallel` model's
    state dict after ``consume_prefix_in_state_dict_if_present(state_dict, "module.")``.
    The state dict's ``_metadata`` (module versions, keyed by module path) is renamed the
    same way, its root entry ``""`` kept.

    Args:
        state_dict (OrderedDict): a state dict to be loaded into a model.
        prefix (str): the prefix to strip.
    """
    for key in list(state_dict.keys()):
        if key.startswith(prefix):
            state_dict[key[len(prefix):]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is None:
        return
    for key in list(metadata.keys()):
        # "module" names the wrapped model itself, "module.x.y" its submodules
        if key and (key == prefix.replace(".", "") or key.startswith(prefix)):
            metadata[key[len(prefix):]] = metadata.pop(key)
