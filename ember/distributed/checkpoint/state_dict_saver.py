"""`dcp.save` and `dcp.async_save`."""

from __future__ import annotations

import os
import warnings
from typing import Any

from ember.distributed.checkpoint._flatten import flatten
from ember.distributed.checkpoint.api import CheckpointException, _wrap_exception
from ember.distributed.checkpoint.filesystem import FileSystemWriter, describe
from ember.distributed.checkpoint.metadata import Metadata
from ember.distributed.checkpoint.storage import StorageWriter


def _single_process(no_dist: bool, what: str) -> bool:
    """Whether to work in this process alone (warning so, as PyTorch does)."""
    from ember.distributed import is_initialized

    if no_dist or not is_initialized():
        from ember.core.backend import api_name

        warnings.warn(f"{api_name()}.distributed is disabled, unavailable or uninitialized, "
                      f"assuming the intent is to {what} in a single process.", stacklevel=3)
        return True
    return False


def _on_rank(rank: int, step: Any) -> Any:
    """Runs `step()`; an error it raises becomes a CheckpointException naming `rank`."""
    try:
        return step()
    except Exception as err:
        raise CheckpointException(f"CheckpointException ranks:{ {rank: None}.keys()}",
                                  {rank: _wrap_exception(err)}) from err


def _writer(checkpoint_id: Any, storage_writer: StorageWriter | None) -> StorageWriter:
    if storage_writer is None:
        if checkpoint_id is None:
            raise RuntimeError("`checkpoint_id` must be specified if storage_writer is None.")
        return FileSystemWriter(checkpoint_id)
    if checkpoint_id is not None:
        storage_writer.reset(checkpoint_id)
    return storage_writer


def save(state_dict: dict[str, Any], *, checkpoint_id: str | os.PathLike | None = None,
         storage_writer: StorageWriter | None = None, planner: Any = None,
         process_group: Any = None, no_dist: bool = False) -> Metadata:
    """Save `state_dict` (nested dicts of tensors and values) to `checkpoint_id` (a
    folder) or through `storage_writer`. With a process group, rank 0 writes and every
    rank returns after it has.

    Returns:
        Metadata: the saved entries.
    """
    flat = flatten(state_dict)
    writer = _writer(checkpoint_id, storage_writer)
    if _single_process(no_dist, "save"):
        _on_rank(0, lambda: writer.write_state_dict(flat))
        return describe(flat)
    from ember.distributed import barrier, get_rank

    rank = get_rank(process_group)
    if rank == 0:
        _on_rank(rank, lambda: writer.write_state_dict(flat))
    barrier(process_group)
    return describe(flat)


def async_save(state_dict: dict[str, Any], *, checkpoint_id: str | os.PathLike | None = None,
               storage_writer: StorageWriter | None = None, planner: Any = None,
               process_group: Any = None, **kwargs: Any) -> Any:
    """:func:`save`, returning a Future of its Metadata. ember saves before returning
    (the state dict may change right after), so the Future is already done."""
    from ember.futures import Future

    future: Future = Future()
    future.set_result(save(state_dict, checkpoint_id=checkpoint_id,
                           storage_writer=storage_writer, planner=planner,
                           process_group=process_group, **kwargs))
    return future
