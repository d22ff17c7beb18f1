"""`spawn`/`start_processes`: run `fn(i, *args)` in `nprocs` processes, and in the
parent raise the first error a child raised (as `torch.multiprocessing.spawn`)."""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import signal
import sys
import traceback
from collections.abc import Callable
from typing import Any


class ProcessException(Exception):
    """A spawned process failed."""

    __slots__ = ("error_index", "error_pid")

    def __init__(self, msg: str, error_index: int, pid: int) -> None:
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.pid = pid

    def __reduce__(self) -> tuple:
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A spawned process raised an exception (its traceback is in the message)."""


class ProcessExitedException(ProcessException):
    """A spawned process exited with a nonzero code or was killed by a signal."""

    __slots__ = ("exit_code",)

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int,
                 signal_name: str | None = None) -> None:
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self) -> tuple:
        return (type(self), (self.msg, self.error_index, self.pid, self.exit_code,
                             self.signal_name))


def _wrap(fn: Callable[..., Any], i: int, args: tuple, error_queue: Any) -> None:
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # the parent is stopping everything
    except Exception:
        error_queue.put(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """The processes `start_processes` started; `join()` waits for them."""

    def __init__(self, processes: list[Any], error_queues: list[Any]) -> None:
        self.processes = processes
        self.error_queues = error_queues
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self) -> list[int]:
        return [int(p.pid) for p in self.processes]

    def join(self, timeout: float | None = None) -> bool:
        """Wait for one process to end (up to `timeout` seconds). True once every process
        has ended well; raises for the first that failed, after ending the others."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(list(self.sentinels), timeout=timeout)
        failed = None
        for sentinel in ready:
            i = self.sentinels.pop(sentinel)
            self.processes[i].join()
            if self.processes[i].exitcode != 0:
                failed = i
                break
        if failed is None:
            return not self.sentinels
        for p in self.processes:  # end the others, then report the failed one
            if p.is_alive():
                p.terminate()
            p.join()
        process = self.processes[failed]
        queue = self.error_queues[failed]
        if queue.empty():
            code = process.exitcode
            if code < 0:
                name = signal.Signals(-code).name
                raise ProcessExitedException(
                    f"process {failed} terminated with signal {name}", failed, process.pid,
                    code, name)
            raise ProcessExitedException(f"process {failed} terminated with exit code {code}",
                                         failed, process.pid, code)
        msg = f"\n\n-- Process {failed} terminated with the following error:\n" + queue.get()
        raise ProcessRaisedException(msg, failed, process.pid)


def start_processes(fn: Callable[..., Any], args: tuple = (), nprocs: int = 1,
                    join: bool = True, daemon: bool = False,
                    start_method: str = "spawn") -> ProcessContext | None:
    """Start `nprocs` processes running `fn(i, *args)` with the given start method;
    with `join`, wait for all of them (raising the first failure), else return their
    `ProcessContext`."""
    ctx = multiprocessing.get_context(start_method)
    processes, error_queues = [], []
    for i in range(nprocs):
        queue = ctx.SimpleQueue()
        process = ctx.Process(target=_wrap, args=(fn, i, args, queue), daemon=daemon)
        process.start()
        processes.append(process)
        error_queues.append(queue)
    context = ProcessContext(processes, error_queues)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn: Callable[..., Any], args: tuple = (), nprocs: int = 1, join: bool = True,
          daemon: bool = False, start_method: str = "spawn") -> ProcessContext | None:
    """Spawn `nprocs` processes that run `fn(i, *args)` (`i` from 0 to nprocs - 1).

    Args:
        fn: the function each process runs; must be picklable (defined at module level).
        args: the arguments after the index.
        nprocs: how many processes.
        join: wait for all of them; a failure in any raises `ProcessRaisedException`
            (with the child's traceback) or `ProcessExitedException` here.
        daemon: start them as daemon processes.
        start_method: "spawn" (default), "fork" or "forkserver".

    Returns:
        None when `join`, else the `ProcessContext`.
    """
    return start_processes(fn, args, nprocs, join, daemon, start_method)
