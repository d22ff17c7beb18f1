"""The named tuples ops with several results return (`torch.return_types.max` ...).

They are tuples with field names, as `collections.namedtuple` makes, printed as PyTorch
prints them:

    torch.return_types.max(
    values=tensor([5, 3]),
    indices=tensor([1, 0]))
"""

from __future__ import annotations

from collections import namedtuple

from ember.core import dtype as dt

RESULT_TYPES: dict[str, type] = {}
"""Every result type by name: `ember.return_types` serves them, so results pickle."""


def _repr(self) -> str:
    fields = ",\n".join(f"{name}={value!r}" for name, value in zip(self._fields, self))
    return f"{dt.API_NAME}.return_types.{type(self).__name__}(\n{fields})"


def return_type(name: str, fields: list[str]) -> type:
    """A named tuple class called `name` (PyTorch's name for the op's result) with
    PyTorch's printed form."""
    made = type(name, (namedtuple(name, fields),), {"__slots__": (), "__repr__": _repr,
                                                    "__module__": "ember.return_types"})
    RESULT_TYPES[name] = made
    return made
