"""`Work`: the handle of an operation started with `async_op=True` (and of isend/irecv).

The operation is under way in MPI (non-blocking requests on host buffers); `wait()`
polls it to completion with the fault checks of faults.py, then finishes it: copies
staged results back into the caller's tensors, divides for AVG."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from ember.distributed.faults import Monitor

_in_flight: list[Work] = []  # operations started with async_op=True, not yet finished


def progress() -> None:
    """Let MPI move the operations in flight along. MPICH progresses non-blocking
    operations only inside MPI calls, so a long stretch of computation between starting
    an all-reduce and waiting on it would otherwise leave it idle; ember.distributed
    calls this whenever it starts an operation, and DDP may call it from its gradient
    hooks. Results are not copied back here: `wait()` does that."""
    _in_flight[:] = [w for w in _in_flight if not w._done]
    for work in _in_flight:
        if work._monitor.MPI.Request.Testall(work._requests, work._statuses):
            work._ready = True


class Work:
    """A collective or point-to-point operation in flight (torch.distributed.Work)."""

    def __init__(self, requests: list[Any], finish: Callable[[], None] | None,
                 monitor: Monitor, what: str, ranks: list[int], timeout: float,
                 tensors: list[Any] | None = None, statuses: list[Any] | None = None) -> None:
        self._requests = requests
        self._statuses = statuses
        self._finish = finish
        self._monitor = monitor
        self._what = what
        self._ranks = ranks
        self._timeout = timeout
        self._tensors = tensors or []
        self._done = False
        self._ready = False  # its requests completed (progress() saw it); not finished yet
        self._error: BaseException | None = None

    def track(self) -> Work:
        """Count this operation among those `progress()` moves along."""
        _in_flight.append(self)
        return self

    def wait(self, timeout: timedelta | float | None = None) -> bool:
        """Block until the operation completes and its results are in the tensors.

        Raises DistBackendError (naming the rank) when a peer fails, or when `timeout`
        (default: the process group's) passes first. Returns True."""
        if self._done:
            if self._error is not None:
                raise self._error
            return True
        seconds = self._timeout if timeout is None else (
            timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout))
        try:
            if not self._ready:
                self._monitor.wait(self._requests, self._what, self._ranks, seconds,
                                   self._statuses)
        except BaseException as err:
            self._done, self._error = True, err
            raise
        self._complete()
        return True

    def is_completed(self) -> bool:
        """Whether the operation has completed (finishing it if so); never blocks."""
        if not self._done:
            MPI = self._monitor.MPI
            if self._ready or MPI.Request.Testall(self._requests, self._statuses):
                self._complete()
        return self._done

    def is_success(self) -> bool:
        return self._done and self._error is None

    def exception(self) -> BaseException | None:
        return self._error

    def result(self) -> list[Any]:
        """The tensors the operation wrote (after `wait()`)."""
        return list(self._tensors)

    def synchronize(self) -> None:
        self.wait()

    def _complete(self) -> None:
        self._done = True
        if self._finish is not None:
            finish, self._finish = self._finish, None
            finish()

    def __repr__(self) -> str:
        state = "completed" if self._done else "in flight"
        return f"<ember.distributed.Work {self._what} ({state})>"
