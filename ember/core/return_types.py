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


def _sequence_new(base: type, name: str, n: int):
    """`__new__` taking PyTorch's form, one sequence of the `n` values
    (`torch.return_types.max((values, indices))`), as well as the values themselves
    (ember's ops make them so)."""
    def __new__(cls, *args, **kwargs):
        if len(args) == 1 and not kwargs and n > 1:
            args = tuple(args[0])
            if len(args) != n:
                raise TypeError(f"{dt.API_NAME}.return_types.{name}() takes a {n}-sequence "
                                f"({len(args)}-sequence given)")
        return base.__new__(cls, *args, **kwargs)
    return __new__


def return_type(name: str, fields: list[str]) -> type:
    """A named tuple class called `name` (PyTorch's name for the op's result) with
    PyTorch's printed form, constructor and structseq counts (`n_fields` ...)."""
    base = namedtuple(name, fields)
    n = len(fields)
    made = type(name, (base,), {"__slots__": (), "__repr__": _repr,
                                "__module__": "ember.return_types",
                                "__new__": _sequence_new(base, name, n), "n_fields": n,
                                "n_sequence_fields": n, "n_unnamed_fields": 0})
    RESULT_TYPES[name] = made
    return made


def out_type(result: type) -> type:
    """The result type PyTorch gives a call of the op with `out=` (`torch.return_types.
    max_out` for `torch.max(x, 1, out=(v, i))`): `result`'s, named `<name>_out`."""
    name = result.__name__ + "_out"
    made = RESULT_TYPES.get(name)
    return made if made is not None else return_type(name, list(result._fields))
