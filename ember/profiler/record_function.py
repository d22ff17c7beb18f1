"""`record_function`: a named range of the user's, as a context manager or a decorator."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ember.profiler import recorder


class record_function:  # noqa: N801 - PyTorch's name
    """Mark a block of code (or every call of a function) as a named range in the
    profile, shown in tables and traces beside the ops it holds
    (`torch.profiler.record_function`).

    Outside a profile it does nothing, at the cost of one check.

    Args:
        name (str): the range's name.
        args (str, optional): kept for PyTorch's signature; not recorded.

    Example::

        with ember.profiler.profile() as prof:
            with ember.profiler.record_function("data"):
                batch = next(loader)

        @ember.profiler.record_function("loss")
        def compute_loss(out, y): ...
    """

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name = name
        self.args = args
        self._open: list[tuple[Any, Any]] = []  # (recorder, range): re-entrant, nestable

    def __enter__(self) -> record_function:
        rec = recorder.current
        self._open.append((rec, rec.enter_range(self.name) if rec is not None else None))
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._open:
            rec, r = self._open.pop()
            if r is not None and rec.recording:
                rec.exit_range(r)

    def __call__(self, fn: Callable) -> Callable:
        """As a decorator: every call of `fn` is a range."""
        @functools.wraps(fn)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with self:
                return fn(*args, **kwargs)
        return wrapped
