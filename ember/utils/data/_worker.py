"""What runs inside a DataLoader worker process, and what crosses the process boundary.

Every message a worker sends is pickled by the worker itself (`dumps`), so a batch or an
exception that cannot be pickled is reported as an error instead of dying silently in a
queue's feeder thread (which would leave the main process waiting). Tensors cross as
NumPy arrays: `dumps` reduces each ember Tensor to its host array and the main process
rebuilds it with `ember.from_numpy` (no copy beyond unpickling).
"""

from __future__ import annotations

import copyreg
import io
import os
import pickle
import queue
import random
import sys
import traceback
from dataclasses import dataclass
from typing import Any

import numpy as np

import ember
from ember.core.host import host_array

# How often (seconds) a waiting worker checks that its parent is alive, and a waiting main
# process checks that its workers are.
STATUS_CHECK_INTERVAL = 1.0

# message kinds, worker -> main: (task index, kind, payload)
DATA, ERROR, STOP, RESUMED = "data", "error", "stop", "resumed"


@dataclass(frozen=True)
class WorkerInfo:
    """What a DataLoader worker process knows about itself (see `get_worker_info`).

    Attributes:
        id (int): the worker's id, ``0 .. num_workers - 1``.
        num_workers (int): how many workers the DataLoader runs.
        seed (int): the seed of this worker (``base_seed + id``), set for Python's
            `random`, for ember (`ember.manual_seed`) and, derived from it, NumPy's legacy
            global RNG.
        dataset: this process's copy of the dataset.
    """

    id: int
    num_workers: int
    seed: int
    dataset: Any


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """Information about the current DataLoader worker process, or ``None`` in the main
    process.

    Use it in an `IterableDataset`'s `__iter__` or in a `worker_init_fn` to give each
    worker its own share of the data (`id`, `num_workers`) or its own configuration of
    `dataset` (the copy in this process).
    """
    return _worker_info


# -- exceptions --------------------------------------------------------------------------

class KeyErrorMessage(str):
    """A str whose repr is itself, so a KeyError shows the worker's traceback readably."""

    def __repr__(self) -> str:
        return self


class ExceptionWrapper:
    """An exception caught in a worker, with its traceback as text, re-raised in the main
    process by `reraise`. Build it inside an ``except`` block."""

    def __init__(self, where: str) -> None:
        exc_type, exc, tb = sys.exc_info()
        self.exc_type: type = exc_type
        self.exc_msg = (f"Caught {exc_type.__name__} {where}.\nOriginal "
                        + "".join(traceback.format_exception(exc_type, exc, tb)))
        try:  # a class defined where the main process cannot import it: fall back
            pickle.loads(pickle.dumps(exc_type))
        except Exception:
            self.exc_type = RuntimeError

    def reraise(self) -> None:
        """Raise the wrapped exception type with the worker's message and traceback."""
        msg = self.exc_msg
        if self.exc_type is KeyError:
            # KeyError's str() is the repr of its argument, which would escape the newlines
            msg = KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            # exceptions whose constructor wants `message=` (e.g. some library errors)
            raise self.exc_type(message=msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            # the type's constructor wants other arguments: keep the text at least
            raise RuntimeError(msg) from None
        raise exception


# -- tensor transport ----------------------------------------------------------------------

def _rebuild_tensor(array: np.ndarray, device: str, requires_grad: bool) -> ember.Tensor:
    if device == "cpu":
        t = ember.from_numpy(array)
    else:
        t = ember.tensor(array, device=device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _reduce_tensor(t: ember.Tensor) -> tuple:
    return _rebuild_tensor, (host_array(t.detach()), str(t.device), t.requires_grad)


class _Pickler(pickle.Pickler):
    # dispatch_table is consulted before a class's own __reduce_ex__
    dispatch_table = copyreg.dispatch_table.copy()
    dispatch_table[ember.Tensor] = _reduce_tensor


def dumps(obj: Any) -> bytes:
    """Pickle `obj`, sending every ember Tensor inside it as a NumPy array."""
    buf = io.BytesIO()
    _Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return buf.getvalue()


loads = pickle.loads


# -- fetching --------------------------------------------------------------------------------

def _collated_batch(dataset: Any, indices: list) -> Any:
    """The default-collated batch of a TensorDataset (or Subset of one) in one gather per
    tensor instead of a getitem per sample and a stack, or None for other datasets. Exact
    types only: a subclass may override __getitem__."""
    from .dataset import Subset, TensorDataset

    if type(indices) is not list or not indices:
        return None  # a custom batch sampler's tensor or array of indices: per sample
    while type(dataset) is Subset:
        indices = [dataset.indices[i] for i in indices]
        dataset = dataset.dataset
    if type(dataset) is TensorDataset:
        return dataset._collated_batch(indices)
    return None


class _MapDatasetFetcher:
    def __init__(self, dataset: Any, auto_collation: bool, collate_fn: Any,
                 drop_last: bool) -> None:
        from .collate import default_collate

        self.dataset, self.auto_collation = dataset, auto_collation
        self.collate_fn, self.drop_last = collate_fn, drop_last
        self._fast = auto_collation and collate_fn is default_collate

    def fetch(self, index: Any) -> Any:
        if self._fast:
            batch = _collated_batch(self.dataset, index)
            if batch is not None:
                return batch
        if self.auto_collation:
            getitems = getattr(self.dataset, "__getitems__", None)
            if callable(getitems):
                data = getitems(index)
            else:
                data = [self.dataset[i] for i in index]
        else:
            data = self.dataset[index]
        return self.collate_fn(data)


class _IterableDatasetFetcher:
    def __init__(self, dataset: Any, auto_collation: bool, collate_fn: Any,
                 drop_last: bool) -> None:
        self.dataset, self.auto_collation = dataset, auto_collation
        self.collate_fn, self.drop_last = collate_fn, drop_last
        self.dataset_iter = iter(dataset)
        self.ended = False

    def fetch(self, index: Any) -> Any:
        """The next batch (a list of `len(index)` samples, collated), or the next sample;
        StopIteration when the dataset is exhausted."""
        if self.ended:
            raise StopIteration
        if self.auto_collation:
            data = []
            for _ in index:
                try:
                    data.append(next(self.dataset_iter))
                except StopIteration:
                    self.ended = True
                    break
            if not data or (self.drop_last and len(data) < len(index)):
                raise StopIteration
        else:
            data = next(self.dataset_iter)
        return self.collate_fn(data)


def make_fetcher(is_iterable: bool, dataset: Any, auto_collation: bool, collate_fn: Any,
                 drop_last: bool) -> _MapDatasetFetcher | _IterableDatasetFetcher:
    cls = _IterableDatasetFetcher if is_iterable else _MapDatasetFetcher
    return cls(dataset, auto_collation, collate_fn, drop_last)


# -- the worker loop ---------------------------------------------------------------------------

class ResumeIteration:
    """Main -> persistent worker: a new epoch starts; rebuild the fetcher and acknowledge."""


def _numpy_seed(base_seed: int, worker_id: int) -> np.ndarray:
    # NumPy's legacy global RNG takes at most 32-bit words: derive them from both numbers
    return np.random.SeedSequence([worker_id, base_seed]).generate_state(4)


def _parent_alive(parent_pid: int) -> bool:
    # an orphaned process is re-parented (to init or a subreaper): its parent pid changes.
    # `parent_pid` is the parent found at start, as PyTorch's ManagerWatchdog keeps it: a
    # "forkserver" worker is the fork server's child, which ends with the loader's process
    return os.getppid() == parent_pid


def worker_loop(is_iterable: bool, dataset: Any, index_queue: Any, data_queue: Any,
                done_event: Any, auto_collation: bool, collate_fn: Any, drop_last: bool,
                base_seed: int, init_fn: Any, worker_id: int, num_workers: int) -> None:
    """The body of a worker process: take (task index, sampler index) from `index_queue`,
    put (task index, kind, pickled payload) on `data_queue`, until told to stop (None) or
    the parent dies."""
    global _worker_info
    where = f"in DataLoader worker process {worker_id}"
    parent_pid = os.getppid()  # the process that started this one (see _parent_alive)
    try:
        seed = base_seed + worker_id
        random.seed(seed)
        ember.manual_seed(seed)
        np.random.seed(_numpy_seed(base_seed, worker_id))
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                                  dataset=dataset)

        init_error: bytes | None = None
        fetcher = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = make_fetcher(is_iterable, dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            init_error = dumps(ExceptionWrapper(where))

        iteration_end = False  # an iterable dataset ran out in this worker
        while _parent_alive(parent_pid):
            try:
                r = index_queue.get(timeout=STATUS_CHECK_INTERVAL)
            except queue.Empty:
                continue
            if isinstance(r, ResumeIteration):
                iteration_end = False
                try:
                    fetcher = make_fetcher(is_iterable, dataset, auto_collation, collate_fn,
                                           drop_last)
                except Exception:
                    init_error = dumps(ExceptionWrapper(where))
                data_queue.put((None, RESUMED, None))
                continue
            if r is None:  # the final signal
                break
            if done_event.is_set() or iteration_end:
                continue  # shutting down, or nothing left: wait for the final signal
            idx, index = r
            if init_error is not None:
                message = (idx, ERROR, init_error)
                init_error = None
            else:
                try:
                    message = (idx, DATA, dumps(fetcher.fetch(index)))
                except StopIteration:
                    if not is_iterable:
                        message = (idx, ERROR, dumps(ExceptionWrapper(where)))
                    else:
                        message = (idx, STOP, worker_id)
                        iteration_end = True
                except Exception:
                    message = (idx, ERROR, dumps(ExceptionWrapper(where)))
            data_queue.put(message)
            del message, r
    except KeyboardInterrupt:
        pass  # the main process gets the interrupt too and shuts the workers down
    if done_event.is_set():
        # don't wait at exit to flush results nobody will read
        data_queue.cancel_join_thread()
        data_queue.close()
