"""PyTorch's error messages with ember's context beside them.

Programs print caught errors (`except RuntimeError as e: print(e)`), so an error's
message is PyTorch's word for word; what ember knows besides (the op, the full shapes)
goes into a PEP 678 note: tracebacks print it under the message, `str(err)` leaves it
out, and `pytest.raises(match=...)` searches both.
"""

from __future__ import annotations

from typing import TypeVar

E = TypeVar("E", bound=BaseException)


def with_context(err: E, context: str) -> E:
    """`err` with `context` added as a note; returns `err` to raise."""
    err.add_note(context)
    return err
