"""`torch.futures`: a value that some work will produce, as PyTorch's `Future` (what
`ember.jit.fork` returns and what DDP communication hooks and RPC code pass around).

A future is completed once, by `set_result` or `set_exception`; `wait` blocks until
then. Callbacks added by `then` (which returns a future of the callback's result) or
`add_done_callback` run when it completes, in the completing thread, or at once where it
already has. ember runs its work eagerly, so most futures are complete when handed out.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from ember.core import dtype as dt

__all__ = ["Future", "collect_all", "wait_all"]

T = TypeVar("T")
S = TypeVar("S")


@dt.printed_in_api(".jit")
class Future(Generic[T]):
    """Wraps the result of an asynchronous execution (`wait()` it, or chain work on it
    with `then`)."""

    def __init__(self, *, devices: list[Any] | None = None) -> None:
        self._done = threading.Condition()
        self._completed = False
        self._result: Any = None
        self._error: BaseException | None = None
        self._callbacks: list[Callable[[Future[T]], None]] = []

    def done(self) -> bool:
        """Whether this future has a result or an exception."""
        return self._completed

    def wait(self) -> T:
        """Block until the future completes; its result, or raise its exception."""
        with self._done:
            self._done.wait_for(lambda: self._completed)
        return self.value()

    def value(self) -> T:
        """The result of a completed future (raises its exception, if it has one)."""
        if not self._completed:
            raise RuntimeError("Future::value() called before the Future completed")
        if self._error is not None:
            raise self._error
        return self._result

    def set_result(self, result: T) -> None:
        """Complete the future with `result` and run its callbacks."""
        self._complete(result, None)

    def set_exception(self, result: BaseException) -> None:
        """Complete the future with an exception, raised by `wait()` and `value()`."""
        if not isinstance(result, BaseException):
            raise AssertionError(f"{result} is of type {type(result)}, not an Exception.")
        self._complete(None, result)

    def then(self, callback: Callable[[Future[T]], S]) -> Future[S]:
        """A future of ``callback(self)``, run once this future completes (if the callback
        raises, the returned future holds PyTorch's RuntimeError naming the exception)."""
        chained: Future[S] = Future()

        def run(fut: Future[T]) -> None:
            try:
                result = callback(fut)
            except Exception as e:  # noqa: BLE001 - handed to the chained future
                error = RuntimeError(f"Got the following error when running the callback: "
                                     f"{type(e).__name__}: {e}")
                error.__cause__ = e
                chained.set_exception(error)
                return
            chained.set_result(result)
        self.add_done_callback(run)
        return chained

    def add_done_callback(self, callback: Callable[[Future[T]], None]) -> None:
        """Run ``callback(self)`` when the future completes (at once if it has)."""
        with self._done:
            if not self._completed:
                self._callbacks.append(callback)
                return
        callback(self)

    def _complete(self, result: Any, error: BaseException | None) -> None:
        with self._done:
            if self._completed:
                raise RuntimeError("Attempting to mark a completed Future as complete again. "
                                   "Note that a Future can only be marked completed once.")
            self._result, self._error, self._completed = result, error, True
            callbacks, self._callbacks = self._callbacks, []
            self._done.notify_all()
        for callback in callbacks:
            callback(self)


def collect_all(futures: list[Future]) -> Future[list[Future]]:
    """A future, completed when all of `futures` are, whose value is the list of them."""
    combined: Future[list[Future]] = Future()
    futures = list(futures)
    remaining = [len(futures)]
    lock = threading.Lock()

    def one_done(_: Future) -> None:
        with lock:
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            combined.set_result(futures)
    if not futures:
        combined.set_result([])
    for fut in futures:
        fut.add_done_callback(one_done)
    return combined


def wait_all(futures: list[Future]) -> list[Any]:
    """Wait for all of `futures`; their values (raises the first exception met)."""
    return [fut.wait() for fut in collect_all(futures).wait()]
