"""The named tuples ops return (`ember.return_types.max` ...), as `torch.return_types`."""

from __future__ import annotations

from typing import Any

import ember.core.ops  # noqa: F401 - declares the ops, which make the types
from ember.core.return_types import RESULT_TYPES


def __getattr__(name: str) -> Any:
    try:
        return RESULT_TYPES[name]
    except KeyError:
        raise AttributeError(f"module 'ember.return_types' has no attribute {name!r}") \
            from None


def __dir__() -> list[str]:
    return sorted(RESULT_TYPES)
