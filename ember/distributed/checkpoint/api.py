"""DCP's error type: a failed save or load, with each failing rank's exception and
traceback (a BaseException, as PyTorch's, so `except Exception` does not hide it)."""

from __future__ import annotations

import traceback as tb
from typing import Any

__all__ = ["CheckpointException"]


def _wrap_exception(exc: BaseException) -> tuple[BaseException, tb.StackSummary]:
    return exc, tb.extract_tb(exc.__traceback__)


class CheckpointException(BaseException):
    """Raised when a checkpoint load or save failed (`failures`: rank -> (exception,
    traceback))."""

    def __init__(self, msg: str, failures: dict[int, Any]) -> None:
        super().__init__(msg, failures)
        self._failures = failures

    @property
    def failures(self) -> dict[int, Any]:
        return self._failures

    def __str__(self) -> str:
        text = f"CheckpointException ranks:{self._failures.keys()}\n"
        for rank, (exc, trace) in self._failures.items():
            text += f"Traceback (most recent call last): (RANK {rank})\n"
            if trace is not None:
                text += "".join(tb.format_list(trace))
            text += "".join(tb.format_exception_only(type(exc), value=exc))
        return text
