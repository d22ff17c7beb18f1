"""DCP's file-system storage: a folder with `.metadata` (the entries) and
`__0_0.distcp` (a `torch.save` archive of the flattened state dict), both written
atomically."""

from __future__ import annotations

import os
import pickle
from typing import Any

from ember.distributed.checkpoint.metadata import (
    BytesStorageMetadata,
    Metadata,
    TensorProperties,
    TensorStorageMetadata,
)
from ember.distributed.checkpoint.storage import StorageReader, StorageWriter

DATA, METADATA = "__0_0.distcp", ".metadata"


def describe(flat: dict[str, Any]) -> Metadata:
    """The metadata of a flattened state dict."""
    from ember.core.tensor import Tensor

    return Metadata({
        key: TensorStorageMetadata(TensorProperties(v.dtype, v.requires_grad), v.shape)
        if isinstance(v, Tensor) else BytesStorageMetadata() for key, v in flat.items()})


class FileSystemWriter(StorageWriter):
    """Writes a checkpoint into the folder `path` (made if missing)."""

    def __init__(self, path: str | os.PathLike, single_file_per_rank: bool = True,
                 sync_files: bool = True, thread_count: int = 1,
                 per_thread_copy_ahead: int = 10_000_000, cache_staged_state_dict: bool = False,
                 overwrite: bool = True, **kwargs: Any) -> None:
        super().__init__(path)
        self.overwrite = overwrite

    def write_state_dict(self, flat: dict[str, Any]) -> None:
        from ember.atomic_write import atomic_write
        from ember.serialization import save

        os.makedirs(self.path, exist_ok=True)
        data = os.path.join(self.path, DATA)
        if not self.overwrite and os.path.exists(data):
            raise RuntimeError(f"Checkpoint already exists at {self.path} and overwrite=False")
        save(flat, data)  # (ember.save writes atomically)
        with atomic_write(os.path.join(self.path, METADATA)) as fh:
            pickle.dump(describe(flat), fh)


class FileSystemReader(StorageReader):
    """Reads the checkpoint in the folder `path`."""

    def read_state_dict(self) -> dict[str, Any]:
        from ember.serialization import load

        data = os.path.join(self.path, DATA)
        if not os.path.exists(data):
            raise FileNotFoundError(f"{data}: no DCP checkpoint written by ember here")
        return load(data, weights_only=False)

    def read_metadata(self) -> Metadata:
        with open(os.path.join(self.path, METADATA), "rb") as fh:
            return pickle.load(fh)
