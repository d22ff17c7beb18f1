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
