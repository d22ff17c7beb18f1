"""DCP storage in Hugging Face's layout: the tensors in safetensors files
(`model-00001-of-00001.safetensors`, or one file per index of `fqn_to_index_mapping`)
and a `model.safetensors.index.json` naming each tensor's file."""

from __future__ import annotations

import json
import os
import struct
from typing import Any

import numpy as np

from ember.distributed.checkpoint.storage import StorageReader, StorageWriter

_INDEX = "model.safetensors.index.json"


def _code(d: Any) -> str:
    from ember.checkpoint_io import _DTYPES

    for code, dtype in _DTYPES.items():
        if dtype is d:
            return code
    raise ValueError(f"safetensors has no dtype for {d}")


def write_safetensors(path: str, tensors: dict[str, Any]) -> None:
    """Writes `tensors` (name -> ember tensor) as one safetensors file, atomically."""
    from ember.atomic_write import atomic_write

    header: dict[str, Any] = {}
    blobs, offset = [], 0
    for name, t in tensors.items():
        data = np.ascontiguousarray(t.detach().cpu().numpy()).tobytes()
        header[name] = {"dtype": _code(t.dtype), "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data starts 8-aligned
    with atomic_write(path) as fh:
        fh.write(struct.pack("<Q", len(text)) + text)
        for blob in blobs:
            fh.write(blob)


class HuggingFaceStorageWriter(StorageWriter):
    """Writes a checkpoint's tensors as safetensors files in the folder `path`."""

    def __init__(self, path: str, fqn_to_index_mapping: dict[str, int] | None = None,
                 thread_count: int = 1, save_distributed: bool = False,
                 enable_consolidation: bool = False, thread_count_consolidation: int = 1
                 ) -> None:
        super().__init__(path)
        self.fqn_to_index_mapping = fqn_to_index_mapping

    def write_state_dict(self, flat: dict[str, Any]) -> None:
        from ember.core.tensor import Tensor

        tensors = {k: v for k, v in flat.items() if isinstance(v, Tensor)}
        mapping = self.fqn_to_index_mapping or {k: 1 for k in tensors}
        count = max(mapping.values(), default=1)
        files: dict[int, dict[str, Any]] = {}
        for name, t in tensors.items():
            files.setdefault(mapping.get(name, 1), {})[name] = t
        os.makedirs(self.path, exist_ok=True)
        weight_map = {}
        for index, group in sorted(files.items()):
            file = f"model-{index:05d}-of-{count:05d}.safetensors"
            write_safetensors(os.path.join(self.path, file), group)
            weight_map.update(dict.fromkeys(group, file))
        size = sum(t.numel() * t.element_size() for t in tensors.values())
        from ember.atomic_write import atomic_write

        index = {"metadata": {"total_size": size}, "weight_map": weight_map}
        with atomic_write(os.path.join(self.path, _INDEX)) as fh:
            fh.write(json.dumps(index, indent=2).encode())


class HuggingFaceStorageReader(StorageReader):
    """Reads the safetensors files of the folder `path` (every `*.safetensors`)."""

    def __init__(self, path: str, thread_count: int = 1) -> None:
        super().__init__(path)

    def read_state_dict(self) -> dict[str, Any]:
        from ember.checkpoint_io import read
        from ember.core.creation import from_numpy

        flat: dict[str, Any] = {}
        for file in sorted(os.listdir(self.path)):
            if file.endswith(".safetensors"):
                with open(os.path.join(self.path, file), "rb") as fh:
                    arrays = read(fh)[0]
                flat.update({k: from_numpy(np.array(a)) for k, a in arrays.items()})
        return flat
