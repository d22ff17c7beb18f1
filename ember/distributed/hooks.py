"""What a rank does when its script raises, when it exits, and when the launcher signals
that another rank's process ended.

- An uncaught exception: the traceback is printed as usual, every other rank gets a
  failure notice naming this rank and the error, and the process exits with status 1
  without MPI_Finalize (which would wait forever for the ranks still running).
- A normal exit: a polled barrier on the control communicator first, so no rank enters
  MPI_Finalize while another is still in a collective or has failed; if the barrier
  fails, the error is printed and the process exits with status 1.
- SIGUSR1 (hydra's notice that a process ended, under `-disable-auto-cleanup`): the
  monitor checks its local peers at its next poll, instead of dying (Python's default).
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
from typing import Any

from ember.distributed.errors import DistBackendError
from ember.distributed.faults import Monitor, describe_exception, record_failure, stderr_line

_state: dict[str, Any] = {"monitor": None, "installed": False, "failed": False}


def install(monitor: Monitor, exit_timeout: float) -> None:
    """Arm the hooks for `monitor`'s world (once per process)."""
    _state["monitor"] = monitor
    _state["exit_timeout"] = exit_timeout
    _state["pid"] = os.getpid()  # a forked child (a DataLoader worker) is not the rank
    if _state["installed"]:
        return
    _state["installed"] = True
    previous = sys.excepthook

    def excepthook(kind: type, exc: BaseException, tb: Any) -> None:
        previous(kind, exc, tb)
        if os.getpid() == _state["pid"]:
            _failed(exc)

    sys.excepthook = excepthook
    atexit.register(_at_exit)  # registered after mpi4py's finalizer, so runs before it
    if threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGUSR1) is signal.SIG_DFL:
        signal.signal(signal.SIGUSR1, _peer_ended)


def _peer_ended(signum: int, frame: Any) -> None:
    monitor = _state["monitor"]
    if monitor is not None:
        monitor.signalled = True


def _failed(exc: BaseException) -> None:
    """This rank is going down with `exc`: tell the others (unless `exc` is itself the
    report of another rank's failure, which they learn on their own)."""
    _state["failed"] = True
    monitor = _state["monitor"]
    if monitor is None:
        return
    if isinstance(exc, DistBackendError | KeyboardInterrupt):
        record_failure(monitor.rank, "consequence")
        return
    record_failure(monitor.rank, "cause")
    try:
        monitor.notify(monitor.rank, describe_exception(exc))
    except Exception as err:  # noqa: BLE001 - best effort: the exit must go on
        stderr_line(f"ember.distributed: could not notify the other ranks: {err}")


def active() -> bool:
    """Whether this process is a rank of a distributed run (init_process_group ran)."""
    return _state["monitor"] is not None


def exit_failed(status: int, what: str) -> None:
    """Leave now with `status`, after telling the other ranks (if this process is in a
    distributed run) that this rank failed, and why."""
    monitor = _state["monitor"]
    if monitor is not None and not _state["failed"]:
        _state["failed"] = True
        record_failure(monitor.rank, "cause")
        try:
            monitor.notify(monitor.rank, what)
        except Exception as err:  # noqa: BLE001 - best effort: the exit must go on
            stderr_line(f"ember.distributed: could not notify the other ranks: {err}")
    _flush()
    os._exit(status)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a closed stream must not stop the exit
            pass


def _at_exit() -> None:
    monitor = _state["monitor"]
    if monitor is None or os.getpid() != _state["pid"]:
        return
    if not _state["failed"]:
        try:
            req = monitor.ctl.Ibarrier()
            monitor.wait([req], "the exit barrier (every rank finishing)",
                         list(range(len(monitor.peers))), _state["exit_timeout"])
            # every rank is done: MPI_Finalize (mpi4py's own exit hook) can run safely.
            # hydra may signal ranks as the first ones leave; that is no failure now,
            # and Python's default action (death) must not turn it into one
            if threading.current_thread() is threading.main_thread():
                signal.signal(signal.SIGUSR1, signal.SIG_IGN)
            return
        except DistBackendError as err:
            stderr_line(str(err))
    _flush()
    os._exit(1)
