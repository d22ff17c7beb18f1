"""`DataLoader`: batches of a dataset, loaded in the main process or in worker processes,
as `torch.utils.data.DataLoader`.

Multi-process loading (``num_workers > 0``)
-------------------------------------------
Each worker is a process (the "fork" start method on Linux, else the platform's default;
``multiprocessing_context`` picks another, e.g. "spawn", which needs a picklable dataset,
collate_fn and worker_init_fn). The main process hands out batches of indices round-robin
through one queue per worker, at most ``prefetch_factor * num_workers`` at a time, and
gets results back on one shared queue; results are returned in sampler order (or as they
arrive with ``in_order=False``). Tensors travel as NumPy arrays and are rebuilt as CPU
tensors in the main process.

Worker ``i`` seeds Python's `random`, ember (`ember.manual_seed`) and NumPy's global RNG
from ``base_seed + i``, where ``base_seed`` is drawn once per iterator from the
DataLoader's ``generator`` (default: ``ember.default_generator``), so a seeded program
gets the same per-worker randomness every run.

Shutdown: workers stop when the epoch ends (unless ``persistent_workers``), when the
iterator is deleted or garbage collected, at interpreter exit, and when a worker fails.
Unlike PyTorch, a worker's exception or a timeout ends the epoch: the workers are shut
down before the error is raised in the main process, so no process outlives it; the next
``iter(loader)`` starts fresh workers. A worker also exits by itself if the main process
dies.
"""

from __future__ import annotations

import itertools
import multiprocessing as mp
import os
import pickle
import queue
import sys
import time
import warnings
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Generic, TypeVar

import ember

from . import _worker
from .collate import default_collate, default_convert
from .dataset import Dataset, IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, draw_seed

__all__ = ["DataLoader", "get_worker_info"]

get_worker_info = _worker.get_worker_info

T_co = TypeVar("T_co", covariant=True)

# Seconds the workers get to exit after the final signal before they are terminated: on a
# normal shutdown, and after an error (when a worker may be stuck in user code).
_JOIN_GRACE = 5.0
_ERROR_JOIN_GRACE = 1.0


class _InfiniteConstantSampler(Sampler[None]):
    """The sampler of an IterableDataset: the dataset decides when to stop."""

    def __iter__(self) -> Iterator[None]:
        while True:
            yield None


def _default_context() -> Any:
    # fork is much faster to start than spawn (no re-import, no pickling of the dataset)
    if sys.platform.startswith("linux") and "fork" in mp.get_all_start_methods():
        return mp.get_context("fork")
    return mp.get_context()


def _cpu_count() -> int | None:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count()


class DataLoader(Generic[T_co]):
    """Combines a dataset and a sampler, and iterates over batches of the dataset.

    Args:
        dataset (Dataset): the dataset to load from (map-style or iterable-style).
        batch_size (int, optional): samples per batch. ``None`` turns automatic batching
            off: each item is converted with `default_convert` instead. Default: ``1``.
        shuffle (bool, optional): reshuffle the data every epoch. Default: ``False``.
        sampler (Sampler or Iterable, optional): the order of the indices. Exclusive with
            `shuffle`.
        batch_sampler (Sampler or Iterable, optional): yields lists of indices. Exclusive
            with `batch_size`, `shuffle`, `sampler` and `drop_last`.
        num_workers (int, optional): worker processes; ``0`` loads in the main process.
            Default: ``0``.
        collate_fn (Callable, optional): merges a list of samples into a batch. Default:
            `default_collate` (`default_convert` when batching is off).
        pin_memory (bool, optional): page-lock the batches' host memory (for
            ``.to(device, non_blocking=True)``); without an accelerator that offers pinned
            memory (CUDA), it warns and has no effect, as in PyTorch. Default: ``False``.
        drop_last (bool, optional): drop the last incomplete batch. Default: ``False``.
        timeout (float, optional): seconds to wait for a batch from the workers before
            raising RuntimeError; ``0`` waits forever. Needs ``num_workers > 0``.
        worker_init_fn (Callable, optional): called as ``worker_init_fn(worker_id)`` in each
            worker after seeding and before loading.
        multiprocessing_context (str or context, optional): the start method ("fork",
            "spawn", "forkserver") or a `multiprocessing` context. Default: "fork" on Linux.
        generator (ember.Generator, optional): draws the shuffling order and the workers'
            base seed. Default: ``ember.default_generator``.
        prefetch_factor (int, optional): batches loaded in advance by each worker. Default:
            ``2`` with workers; must stay ``None`` without.
        persistent_workers (bool, optional): keep the workers alive between epochs.
            Default: ``False``.
        pin_memory_device (str, optional): deprecated, as in PyTorch: the current
            accelerator is the device (a warning says so when ``pin_memory`` is set).
        in_order (bool, optional): return batches in sampler order (default); ``False``
            returns them as the workers finish them.

    Example::

        >>> ds = TensorDataset(ember.randn(100, 3), ember.randint(0, 2, (100,)))
        >>> for x, y in DataLoader(ds, batch_size=32, shuffle=True, num_workers=2):
        ...     pass
    """

    _initialized = False

    def __init__(self, dataset: Dataset[T_co], batch_size: int | None = 1,
                 shuffle: bool | None = None, sampler: Sampler | Iterable | None = None,
                 batch_sampler: Sampler[Sequence] | Iterable[Sequence] | None = None,
                 num_workers: int = 0, collate_fn: Callable[[list], Any] | None = None,
                 pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
                 worker_init_fn: Callable[[int], None] | None = None,
                 multiprocessing_context: Any = None, generator: Any = None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True) -> None:
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                             "disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in "
                             "multiprocessing.let num_workers > 0 to enable multiprocessing, "
                             "otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 1:
            # PyTorch accepts 0, which then loads nothing at all
            raise ValueError("prefetch_factor option should be a positive integer")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device  # (deprecated in PyTorch: warned, unused)
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        # dataset-kind checks first: an IterableDataset takes no sampler of any kind
        if isinstance(dataset, IterableDataset):
            self._is_iterable = True
            if shuffle not in (False, None):
                raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle "
                                 f"option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler "
                                 f"option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
            self._is_iterable = False
            shuffle = bool(shuffle)

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")

        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")

        if sampler is None:
            if self._is_iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)  # type: ignore[arg-type]
            else:
                sampler = SequentialSampler(dataset)  # type: ignore[arg-type]

        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator

        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers

        self._IterableDataset_len_called: int | None = None
        self._iterator: _MultiProcessingDataLoaderIter | None = None
        self._initialized = True
        self.check_worker_number_rationality()

    # -- configuration ------------------------------------------------------------------
    @property
    def multiprocessing_context(self) -> Any:
        return self._multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, context: Any) -> None:
        if context is not None:
            if self.num_workers == 0:
                raise ValueError("multiprocessing_context can only be used with multi-process "
                                 "loading (num_workers > 0), but got "
                                 f"num_workers={self.num_workers}")
            if isinstance(context, str):
                methods = mp.get_all_start_methods()
                if context not in methods:
                    raise ValueError("multiprocessing_context option should specify a valid "
                                     f"start method in {methods!r}, but got "
                                     f"multiprocessing_context={context!r}")
                context = mp.get_context(context)
            if not isinstance(context, mp.context.BaseContext):
                raise TypeError("multiprocessing_context option should be a valid context "
                                "object or a string specifying the start method, but got "
                                f"multiprocessing_context={context}")
        self._multiprocessing_context = context

    def __setattr__(self, attr: str, val: Any) -> None:
        if self._initialized and attr in ("batch_size", "batch_sampler", "sampler", "drop_last",
                                          "dataset", "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after "
                             f"{type(self).__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self) -> Any:
        # what yields the fetcher's keys: lists of indices when batching, else indices
        return self.batch_sampler if self._auto_collation else self.sampler

    def check_worker_number_rationality(self) -> None:
        """Warn when `num_workers` exceeds the CPUs this process may use."""
        self._check_workers(stacklevel=4)

    def _check_workers(self, stacklevel: int) -> None:
        # (`stacklevel` points the warning at the user's line that built or iterated us)
        if not self.num_workers:
            return
        cpus = _cpu_count()
        if cpus is None or self.num_workers > cpus:
            suggestion = (f"Our suggested max number of worker in current system is {cpus}, "
                          "which is smaller than what this DataLoader is going to create."
                          if cpus is not None else
                          "DataLoader is not able to compute a suggested max number of worker "
                          "in current system.")
            warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in "
                          f"total. {suggestion} Please be aware that excessive worker creation "
                          "might get DataLoader running slow or even freeze, lower the worker "
                          "number to avoid potential slowness/freeze if necessary.",
                          stacklevel=stacklevel)

    # -- iteration ----------------------------------------------------------------------
    def _get_iterator(self) -> _BaseDataLoaderIter:
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        self._check_workers(stacklevel=4)  # PyTorch warns again at each start of workers
        return _MultiProcessingDataLoaderIter(self)

    def __iter__(self) -> _BaseDataLoaderIter:
        # persistent workers: one iterator (and one set of processes) for the loader's life
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None or self._iterator._shutdown:
                self._iterator = self._get_iterator()  # type: ignore[assignment]
            else:
                self._iterator._reset(self)
            return self._iterator  # type: ignore[return-value]
        return self._get_iterator()

    def __len__(self) -> int:
        """Batches per epoch. For an IterableDataset this trusts ``len(dataset)``, which
        counts each sample once: shard the dataset across workers to make it true."""
        if self._is_iterable:
            length = self._IterableDataset_len_called = len(self.dataset)  # type: ignore
            if self.batch_size is not None:
                if self.drop_last:
                    length = length // self.batch_size
                else:
                    length = -(-length // self.batch_size)
            return length
        return len(self._index_sampler)


# -- iterators ---------------------------------------------------------------------------------

def _pin_memory(data: Any) -> Any:
    if isinstance(data, ember.Tensor):
        return data.pin_memory()
    if isinstance(data, dict):
        return type(data)({k: _pin_memory(v) for k, v in data.items()})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(_pin_memory(v) for v in data))
    if isinstance(data, (list, tuple)):
        return type(data)(_pin_memory(v) for v in data)
    return data


class _BaseDataLoaderIter:
    def __init__(self, loader: DataLoader) -> None:
        self._dataset = loader.dataset
        self._is_iterable = loader._is_iterable
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        self._pin_memory = False
        if loader.pin_memory and loader.pin_memory_device:
            warnings.warn("pin_memory_device is deprecated, the current accelerator will be "
                          "used as the device,ignore pin_memory_device="
                          f"'{loader.pin_memory_device}'.", stacklevel=5)
        if loader.pin_memory:
            from ember.core import pinning

            if pinning.can_pin():
                self._pin_memory = True
            else:  # PyTorch's warning
                warnings.warn("'pin_memory' argument is set as true but no accelerator is "
                              "found, then device pinned memory won't be used.", stacklevel=5)
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._sampler_iter = iter(self._index_sampler)
        # drawn with or without workers, so shuffling draws the same order either way
        self._base_seed = draw_seed(loader.generator)
        self._persistent_workers = loader.persistent_workers
        self._num_yielded = 0

    def __iter__(self) -> _BaseDataLoaderIter:
        return self

    def _reset(self, loader: DataLoader, first_iter: bool = False) -> None:
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def _next_index(self) -> Any:
        return next(self._sampler_iter)  # StopIteration ends the epoch

    def _next_data(self) -> Any:
        raise NotImplementedError

    def __next__(self) -> Any:
        data = self._next_data()
        self._num_yielded += 1
        if (self._is_iterable and self._IterableDataset_len_called is not None
                and self._num_yielded > self._IterableDataset_len_called):
            msg = (f"Length of IterableDataset {self._dataset} was reported to be "
                   f"{self._IterableDataset_len_called}(when accessing len(dataloader)), but "
                   f"{self._num_yielded} samples have been fetched. ")  # (PyTorch's words)
            if self._num_workers > 0:
                msg += ("For multiprocessing data-loading, this could be caused by not properly "
                        "configuring the IterableDataset replica at each worker. Please see "
                        "https://pytorch.org/docs/stable/data.html"
                        "#torch.utils.data.IterableDataset for examples.")
            warnings.warn(msg, stacklevel=2)
        return data

    def __len__(self) -> int:
        return len(self._index_sampler)


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        if self._timeout != 0:
            raise AssertionError("timeout option needs num_workers > 0: loading in the main "
                                 "process cannot time out")
        self._fetcher = _worker.make_fetcher(self._is_iterable, self._dataset,
                                             self._auto_collation, self._collate_fn,
                                             self._drop_last)

    def _next_data(self) -> Any:
        index = self._next_index()
        data = self._fetcher.fetch(index)  # StopIteration for an exhausted IterableDataset
        return _pin_memory(data) if self._pin_memory else data


class _WorkerPool:
    """The worker processes and their queues, apart from the iterator: a
    `weakref.finalize` on the iterator holds the pool, so the pool (and the queues'
    feeder threads) is still whole when the iterator is collected, even from a reference
    cycle, and at interpreter exit."""

    def __init__(self, data_queue: Any, done_event: Any) -> None:
        self.data_queue = data_queue
        self.done_event = done_event
        self.workers: list = []
        self.index_queues: list = []
        self.is_shutdown = False

    def shutdown(self, grace: float = _JOIN_GRACE) -> None:
        """Stop every worker: final signal, join within `grace` seconds, then terminate.
        Idempotent."""
        if self.is_shutdown:
            return
        self.is_shutdown = True
        try:
            self.done_event.set()
            for q in self.index_queues:
                try:
                    q.put(None)
                except Exception:  # noqa: S110 - a closed queue: its worker is gone
                    pass
            deadline = time.monotonic() + grace
            for w in self.workers:
                w.join(timeout=max(0.0, deadline - time.monotonic()))
            for q in self.index_queues:
                q.cancel_join_thread()
                q.close()
            # results nobody will read must not hold up our exit
            self.data_queue.cancel_join_thread()
            self.data_queue.close()
        finally:
            for w in self.workers:
                if w.is_alive():
                    w.terminate()
            for w in self.workers:
                w.join(timeout=_JOIN_GRACE)
                if w.is_alive():
                    w.kill()
                    w.join(timeout=_JOIN_GRACE)


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """Bookkeeping (as in PyTorch): task `i` is the `i`-th index sent; `_task_info[i]` is
    ``(worker_id,)`` while outstanding and ``(worker_id, kind, payload)`` once it arrived
    out of order; `_rcvd_idx` is the next task to return."""

    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        self._in_order = loader.in_order
        context = loader.multiprocessing_context or _default_context()
        self._worker_init_fn = loader.worker_init_fn
        self._pool = pool = _WorkerPool(context.Queue(), context.Event())
        self._data_queue = pool.data_queue
        self._index_queues = pool.index_queues
        self._workers = pool.workers
        # shuts the workers down when this iterator is collected or at interpreter exit
        self._finalizer = weakref.finalize(self, pool.shutdown)
        try:
            for i in range(self._num_workers):
                index_queue = context.Queue()
                # don't block our exit flushing indices to a worker that is gone
                index_queue.cancel_join_thread()
                w = context.Process(
                    target=_worker.worker_loop,
                    args=(self._is_iterable, self._dataset, index_queue, pool.data_queue,
                          pool.done_event, self._auto_collation, self._collate_fn,
                          self._drop_last, self._base_seed, self._worker_init_fn, i,
                          self._num_workers),
                    name=f"ember-data-worker-{i}",
                    daemon=True)
                w.start()
                pool.index_queues.append(index_queue)
                pool.workers.append(w)
        except BaseException as err:
            pool.shutdown(grace=_ERROR_JOIN_GRACE)
            if isinstance(err, (TypeError, AttributeError, pickle.PicklingError)):
                warnings.warn("Got pickle error when attempting to start a worker Process. The "
                              f"{context.get_start_method()!r} start method pickles the "
                              "dataset, collate_fn and worker_init_fn: define them at module "
                              "level, or use multiprocessing_context='fork'.", stacklevel=4)
            raise
        self._reset(loader, first_iter=True)

    @property
    def _shutdown(self) -> bool:
        return self._pool.is_shutdown

    def _reset(self, loader: DataLoader, first_iter: bool = False) -> None:
        super()._reset(loader, first_iter)
        self._send_idx = 0
        self._rcvd_idx = 0
        self._task_info: dict[int, tuple] = {}
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:
            # a new epoch for persistent workers: each acknowledges after every result it
            # still owed the last epoch, so draining to the acks drops all stale results
            for q in self._index_queues:
                q.put(_worker.ResumeIteration())
            pending = self._num_workers
            while pending > 0:
                _, kind, _ = self._get_data()
                if kind == _worker.RESUMED:
                    pending -= 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    # -- receiving -----------------------------------------------------------------------
    def _check_workers(self) -> None:
        failed = [w for i, w in enumerate(self._workers)
                  if (self._workers_status[i] or self._persistent_workers) and not w.is_alive()]
        if failed:
            pids = ", ".join(str(w.pid) for w in failed)
            codes = ", ".join(str(w.exitcode) for w in failed)
            self._shutdown_workers(grace=_ERROR_JOIN_GRACE)
            raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly "
                               f"(exit code(s) {codes})")

    def _try_get_data(self, timeout: float) -> tuple[bool, Any]:
        try:
            return True, self._data_queue.get(timeout=timeout)
        except queue.Empty:
            self._check_workers()
            return False, None
        except Exception:
            # a worker killed while writing can leave the queue unreadable
            self._check_workers()
            raise

    def _get_data(self) -> tuple:
        if self._timeout > 0:
            deadline = time.monotonic() + self._timeout
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self._shutdown_workers(grace=0.1)
                    raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
                ok, data = self._try_get_data(min(remaining, _worker.STATUS_CHECK_INTERVAL))
                if ok:
                    return data
        while True:
            ok, data = self._try_get_data(_worker.STATUS_CHECK_INTERVAL)
            if ok:
                return data

    def _next_data(self) -> Any:
        if self._shutdown:
            raise StopIteration
        while True:
            # skip the tasks of workers whose IterableDataset ran out: they never answer
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is not None:
                    if len(info) > 1 or self._workers_status[info[0]]:
                        break
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration

            info = self._task_info[self._rcvd_idx]
            if len(info) > 1:  # arrived earlier, out of order
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
                return self._process_data(info[1], info[2])

            idx, kind, payload = self._get_data()
            if kind == _worker.RESUMED:
                continue  # a late acknowledgement; cannot happen after _reset drained them
            self._tasks_outstanding -= 1
            if kind == _worker.STOP:
                worker_id = payload
                if self._persistent_workers:
                    self._workers_status[worker_id] = False
                else:
                    self._mark_worker_as_unavailable(worker_id)
                self._try_put_index()
                continue
            if idx == self._rcvd_idx:
                del self._task_info[idx]
                self._rcvd_idx += 1
                return self._process_data(kind, payload)
            if not self._in_order:
                del self._task_info[idx]
                return self._process_data(kind, payload)
            self._task_info[idx] += (kind, payload)

    def _process_data(self, kind: str, payload: bytes) -> Any:
        if kind == _worker.ERROR:
            wrapper = _worker.loads(payload)
            self._shutdown_workers(grace=_ERROR_JOIN_GRACE)
            wrapper.reraise()
        self._try_put_index()
        data = _worker.loads(payload)
        return _pin_memory(data) if self._pin_memory else data

    # -- sending -------------------------------------------------------------------------
    def _try_put_index(self) -> None:
        assert self._tasks_outstanding < self._prefetch_factor * self._num_workers
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):  # the next active worker, if any
            worker_id = next(self._worker_queue_idx_cycle)
            if self._workers_status[worker_id]:
                break
        else:
            return  # every worker's IterableDataset ran out: the epoch is ending
        self._index_queues[worker_id].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker_id,)
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _mark_worker_as_unavailable(self, worker_id: int) -> None:
        self._index_queues[worker_id].put(None)  # the worker's final signal
        self._workers_status[worker_id] = False

    # -- shutdown -------------------------------------------------------------------------
    def _shutdown_workers(self, grace: float = _JOIN_GRACE) -> None:
        self._pool.shutdown(grace)
