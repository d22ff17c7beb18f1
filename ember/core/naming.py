"""The namespace ember's printed forms name, and PyTorch's named result tuples.

PyTorch prints its objects under its own name: `torch.float32`, `torch.Size([2, 3])`,
`x.type()` is `"torch.FloatTensor"`, and `torch.max(x, 1)` is a
`torch.return_types.max(...)`. ember prints the same forms under `ember` — or under
`torch` while a PyTorch program runs on ember through `ember.torch_alias` (`python -m
ember.run`), because such programs print, compare and parse these strings
(`x.type() == "torch.FloatTensor"`). One variable decides, read at print time.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

_namespace = "ember"


def namespace() -> str:
    """The name printed forms give the top-level module: ``"ember"`` or ``"torch"``."""
    return _namespace


def set_namespace(name: str) -> None:
    """Print ember's objects under `name` (``"ember"`` or ``"torch"``) from now on."""
    global _namespace
    if name not in ("ember", "torch"):
        raise ValueError(f"set_namespace(): expected 'ember' or 'torch', got {name!r}")
    _namespace = name


def _result_repr(self: Any) -> str:
    fields = ",\n".join(f"{k}={v!r}" for k, v in zip(self._fields, self))
    return f"{_namespace}.return_types.{type(self).__name__}(\n{fields})"


RESULT_TYPES: dict[str, type] = {}
"""Every named result type by name: `ember.return_types` serves them (so they pickle)."""


def return_type(name: str, fields: list[str]) -> type:
    """A named tuple type for an op's several results, printed as PyTorch prints its
    `torch.return_types.<name>` (each field on its own line)."""
    base = namedtuple(name, fields)
    made = type(name, (base,), {"__slots__": (), "__repr__": _result_repr,
                                "__module__": "ember.return_types"})
    RESULT_TYPES[name] = made
    return made
