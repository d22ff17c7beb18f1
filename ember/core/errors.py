"""PyTorch's error messages with ember's context beside them, and its warn-once warnings.

Programs print caught errors (`except RuntimeError as e: print(e)`), so an error's
message is PyTorch's word for word; what ember knows besides (the op, the full shapes)
goes into a PEP 678 note: tracebacks print it under the message, `str(err)` leaves it
out, and `pytest.raises(match=...)` searches both.
"""

from __future__ import annotations

import warnings
from typing import TypeVar

E = TypeVar("E", bound=BaseException)


def with_context(err: E, context: str) -> E:
    """`err` with `context` added as a note; returns `err` to raise."""
    err.add_note(context)
    return err


_warned: set[str] = set()  # the messages warn_once has given


def warn_once(message: str, category: type[Warning] = UserWarning, stacklevel: int = 2) -> None:
    """`warnings.warn(message, category, stacklevel)` the first time this process gives
    `message` (PyTorch's TORCH_WARN_ONCE); `stacklevel` counts from the caller, as it
    would for its own `warnings.warn`."""
    if message not in _warned:
        _warned.add(message)
        warnings.warn(message, category, stacklevel=stacklevel + 1)


def type_name(obj: object) -> str:
    """`type(obj)`'s name as PyTorch's argument errors print it: bare for builtins
    (`str`), qualified otherwise (`numpy.dtypes.Float32DType`)."""
    cls = type(obj)
    if cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"
