"""`torch.distributed.elastic.multiprocessing.errors`: `@record` on a program's entry point
writes an uncaught exception to the file the launcher names in ``TORCHELASTIC_ERROR_FILE``
(PyTorch's JSON layout: ``{"message": {"message": "Type: text", "extraInfo":
{"py_callstack": ..., "timestamp": ...}}}``), then raises it as before, so the launcher can
report which rank failed and why. Without the variable it only re-raises."""

from __future__ import annotations

import functools
import json
import os
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

__all__ = ["ChildFailedError", "ErrorHandler", "ProcessFailure", "get_error_handler", "record"]

T = TypeVar("T")


class ErrorHandler:
    """Writes a rank's uncaught exception where the launcher looks for it."""

    def _error_file_path(self) -> str | None:
        return os.environ.get("TORCHELASTIC_ERROR_FILE")

    def initialize(self) -> None:
        """Set up before the entry point runs (nothing to do: Python's own fault handler
        is left as the user set it)."""

    def record_exception(self, e: BaseException) -> None:
        """Write `e` and its traceback to ``TORCHELASTIC_ERROR_FILE``, if it is set."""
        path = self._error_file_path()
        if not path:
            return
        data = {"message": {
            "message": f"{type(e).__name__}: {e}",
            "extraInfo": {"py_callstack": traceback.format_exc(),
                          "timestamp": str(int(time.time()))}}}
        tmp = f"{path}.{os.getpid()}.tmp"  # whole or not at all: the launcher may read it
        with open(tmp, "w") as f:
            json.dump(data, f)
        os.replace(tmp, path)


def get_error_handler() -> ErrorHandler:
    """The handler `record` uses."""
    return ErrorHandler()


@dataclass
class ProcessFailure:
    """A failed worker: its local and global rank, pid, exit code and error file."""

    local_rank: int
    pid: int
    exitcode: int
    error_file: str
    message: str = field(init=False, default="")
    timestamp: int = field(init=False, default=0)


class ChildFailedError(Exception):
    """Raised by a launcher when one or more of its workers failed (`failures`: global
    rank to ProcessFailure)."""

    def __init__(self, name: str, failures: dict[int, ProcessFailure]) -> None:
        self.name = name
        self.failures = failures
        super().__init__(f"{name} FAILED")


def record(fn: Callable[..., T], error_handler: ErrorHandler | None = None) -> Callable[..., T]:
    """Decorate a program's entry point: an exception it raises is written to
    ``TORCHELASTIC_ERROR_FILE`` (when the launcher set it) and raised again."""
    handler = error_handler or get_error_handler()

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        handler.initialize()
        try:
            return fn(*args, **kwargs)
        except SystemExit as se:
            if se.code == 0:  # a clean sys.exit(0) is not a failure
                return None  # type: ignore[return-value]
            raise
        except Exception as e:
            handler.record_exception(e)
            raise
    return wrapper
