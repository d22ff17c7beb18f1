"""The storage layer under DCP: a writer takes the flattened state dict, a reader gives
one back. ember's are the file system's (`filesystem`) and Hugging Face's safetensors
layout (`hf_storage`); a subclass implements these two methods."""

from __future__ import annotations

import os
from typing import Any


class StorageWriter:
    """Writes a flattened state dict (`{dotted key: tensor or value}`) to its place."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = os.fspath(path)

    def write_state_dict(self, flat: dict[str, Any]) -> None:
        raise NotImplementedError

    def reset(self, checkpoint_id: str | os.PathLike | None = None) -> None:
        if checkpoint_id is not None:
            self.path = os.fspath(checkpoint_id)


class StorageReader:
    """Reads back what a :class:`StorageWriter` wrote, as a flattened state dict."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = os.fspath(path)

    def read_state_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def reset(self, checkpoint_id: str | os.PathLike | None = None) -> None:
        if checkpoint_id is not None:
            self.path = os.fspath(checkpoint_id)
