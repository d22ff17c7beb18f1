"""`dcp.load`: a checkpoint into an existing state dict, in place."""

from __future__ import annotations

import os
from typing import Any

from ember.distributed.checkpoint._flatten import assign, missing
from ember.distributed.checkpoint.filesystem import FileSystemReader
from ember.distributed.checkpoint.state_dict_saver import _on_rank, _single_process
from ember.distributed.checkpoint.storage import StorageReader


def load(state_dict: dict[str, Any], *, checkpoint_id: str | os.PathLike | None = None,
         storage_reader: StorageReader | None = None, planner: Any = None,
         process_group: Any = None, no_dist: bool = False) -> None:
    """Load a checkpoint into `state_dict`: each tensor is filled in place (keeping its
    device and dtype), each other value replaced. Keys the checkpoint has and
    `state_dict` lacks are not loaded.

    Raises:
        CheckpointException: a key of `state_dict` missing from the checkpoint (unless
            the planner allows a partial load), a tensor of another size, an unreadable
            checkpoint; the rank's error and traceback are in it.
    """
    if storage_reader is None:
        if checkpoint_id is None:
            raise RuntimeError("`checkpoint_id` must be specified if storage_reader is None.")
        storage_reader = FileSystemReader(checkpoint_id)
    elif checkpoint_id is not None:
        storage_reader.reset(checkpoint_id)
    rank = 0
    if not _single_process(no_dist, "load"):
        from ember.distributed import get_rank

        rank = get_rank(process_group)

    def step() -> None:
        loaded = storage_reader.read_state_dict()
        absent = missing(state_dict, loaded)
        if absent and not getattr(planner, "allow_partial_load", False):
            raise RuntimeError(f"Missing key in checkpoint state_dict: {absent[0]}.")
        assign(state_dict, loaded)  # (a partial load leaves the absent keys as they are)
    _on_rank(rank, step)

