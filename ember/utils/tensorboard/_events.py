"""Event files: where a SummaryWriter's records go.

An event file is a sequence of `Event` protocol buffers in TFRecord framing; tensorboardX
provides both (`tensorboardX.proto`, `tensorboardX.record_writer.RecordWriter`, which also
knows the s3:// and gs:// destinations). The writing loop is ours, for two reasons that
tensorboardX's own `EventFileWriter` gets wrong for PyTorch's semantics:

- ``flush()`` must mean "everything added so far is in the file": tensorboardX flushes
  the file but not the events still waiting in its queue;
- two writers in one directory must never share a file: tensorboardX names files by the
  second only, so a writer reopened within the same second truncates the first file.
  The names here are TensorBoard's own (time, host, process id, a per-process counter).
"""

from __future__ import annotations

import atexit
import itertools
import os
import queue
import socket
import threading
import time
import weakref
from typing import Any

_INSTALL_HINT = "pip install 'ember[tensorboard]'"
_file_ids = itertools.count()
_open_files: weakref.WeakSet[EventFile] = weakref.WeakSet()
_STOP = object()


def require_tensorboardx() -> None:
    """Raise an ImportError that says how to install tensorboardX, if it is missing."""
    try:
        import tensorboardX  # noqa: F401
    except ImportError as err:
        raise ImportError("ember.utils.tensorboard writes TensorBoard event files with "
                          f"tensorboardX, which is not installed: {_INSTALL_HINT}") from err


def check_log_dir(log_dir: str) -> None:
    """Raise if event files cannot be written under ``log_dir``, before creating anything.

    The deepest part of the path that exists must be a directory we may write into; the
    rest is created by the writer. Remote destinations (``s3://``, ``gs://``) are left to
    tensorboardX.
    """
    if "://" in log_dir:
        return
    target = os.path.abspath(log_dir)
    existing = target
    while not os.path.exists(existing):
        parent = os.path.dirname(existing)
        if parent == existing:
            break
        existing = parent
    what = f"SummaryWriter: cannot write event files to {log_dir!r}"
    if not os.path.isdir(existing):
        raise NotADirectoryError(f"{what}: {existing!r} is a file, not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise PermissionError(f"{what}: {existing!r} is not writable")


class EventFile:
    """One event file in ``log_dir``, written by a background thread.

    ``add_event`` serializes the event and queues it (blocking once ``max_queue`` events
    wait); the thread writes them in order and flushes the file every ``flush_secs``.
    ``flush`` waits for the queue to drain, then flushes; ``close`` also stops the thread.
    An error met by the thread (a full disk) is raised by the next call.
    """

    def __init__(self, log_dir: str, max_queue: int = 10, flush_secs: float = 120,
                 filename_suffix: str = "") -> None:
        from tensorboardX.proto.event_pb2 import Event
        from tensorboardX.record_writer import RecordWriter, directory_check

        self.log_dir = log_dir
        directory_check(log_dir)
        name = (f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}."
                f"{os.getpid()}.{next(_file_ids)}{filename_suffix}")
        self.path = os.path.join(log_dir, name)
        self._records = RecordWriter(self.path)
        self._queue: queue.Queue = queue.Queue(max(int(max_queue), 0))  # 0: unbounded
        self._flush_secs = float(flush_secs)
        self._lock = threading.Lock()  # the thread's writes vs. flush() from the caller
        self._error: BaseException | None = None
        self._dirty = False  # written but not yet flushed
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=f"ember-tensorboard:{name}",
                                        daemon=True)
        self._thread.start()
        _open_files.add(self)
        self.add_event(Event(wall_time=time.time(), file_version="brain.Event:2"))
        self.flush()

    def add_event(self, event: Any) -> None:
        """Queue an ``Event`` protocol buffer for writing."""
        if self._closed:
            raise ValueError(f"event file {self.path!r} is closed")
        self._check()
        self._queue.put(event.SerializeToString())

    def flush(self) -> None:
        """Write every queued event and flush the file to disk."""
        if self._closed:
            return
        self._queue.join()
        self._check()
        with self._lock:
            self._records.flush()
            self._dirty = False

    def close(self) -> None:
        """Flush, stop the writing thread and close the file. Closing twice does nothing."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(_STOP)
        self._thread.join()
        _open_files.discard(self)
        try:
            self._records.flush()
        finally:
            self._records.close()
        self._check()

    def _check(self) -> None:
        if self._error is not None:
            err, self._error = self._error, None
            raise OSError(f"writing TensorBoard events to {self.path!r} failed: {err}") from err

    def _run(self) -> None:
        next_flush = time.monotonic() + self._flush_secs
        while True:
            try:  # with nothing unflushed, sleep until an event comes
                timeout = max(next_flush - time.monotonic(), 0.0) if self._dirty else None
                data = self._queue.get(timeout=timeout)
            except queue.Empty:
                data = None  # time for the periodic flush
            try:
                if data is _STOP:
                    return
                with self._lock:
                    if data is not None:
                        self._records.write(data)
                        self._dirty = True
                    if self._dirty and time.monotonic() >= next_flush:
                        self._records.flush()
                        self._dirty = False
                        next_flush = time.monotonic() + self._flush_secs
            except BaseException as err:  # kept for the caller's next call
                self._error = err
            finally:
                if data is not None:
                    self._queue.task_done()


@atexit.register
def _flush_open_files() -> None:
    # A script that never closes its writer still gets its last events on disk.
    for f in list(_open_files):
        try:
            f.flush()
        except Exception:  # nothing to report to at exit
            pass
