"""`torch.distributed.checkpoint` (DCP): save a nested state dict to a folder, and load
one back into existing tensors, in place.

ember's distributed training is data parallel, so every rank holds the whole state: the
coordinator rank (0) writes and every rank reads, with a barrier in between when a
process group is initialized. Without one, both work in a single process, after
PyTorch's warning. A state dict is flattened to dotted keys as DCP flattens it
(`{"model": {"fc.weight": w}}` -> `model.fc.weight`); tensors load into the target's
tensors (`copy_`, keeping their device and dtype), other values replace the target's.

Storage: `FileSystemWriter`/`FileSystemReader` (a `.metadata` file and the data in
`__0_0.distcp`, a `torch.save` archive) and `hf_storage`'s Hugging Face safetensors
layout. The planners are accepted and have nothing to plan (no sharding).
"""

from __future__ import annotations

from typing import Any

from ember.distributed.checkpoint.api import CheckpointException
from ember.distributed.checkpoint.default_planner import DefaultLoadPlanner, DefaultSavePlanner
from ember.distributed.checkpoint.filesystem import FileSystemReader, FileSystemWriter
from ember.distributed.checkpoint.metadata import (
    BytesStorageMetadata,
    Metadata,
    TensorProperties,
    TensorStorageMetadata,
)
from ember.distributed.checkpoint.state_dict_loader import load
from ember.distributed.checkpoint.state_dict_saver import async_save, save
from ember.distributed.checkpoint.storage import StorageReader, StorageWriter

__all__ = ["BytesStorageMetadata", "CheckpointException", "DefaultLoadPlanner",
           "DefaultSavePlanner", "FileSystemReader", "FileSystemWriter", "Metadata",
           "StorageReader", "StorageWriter", "TensorProperties", "TensorStorageMetadata",
           "async_save", "load", "save"]


def __getattr__(name: str) -> Any:
    if name in ("state_dict", "hf_storage"):
        import importlib

        return importlib.import_module(f"ember.distributed.checkpoint.{name}")
    raise AttributeError(f"module 'torch.distributed.checkpoint' has no attribute {name!r}")
