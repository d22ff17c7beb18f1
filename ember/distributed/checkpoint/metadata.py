"""What a DCP checkpoint holds: each flattened key's kind, shape and dtype."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class TensorProperties:
    dtype: Any = None
    requires_grad: bool = False


@dataclass
class TensorStorageMetadata:
    """A tensor's entry: its properties and size."""

    properties: TensorProperties
    size: Any
    chunks: list = field(default_factory=list)


@dataclass
class BytesStorageMetadata:
    """A non-tensor value's entry (stored pickled)."""


@dataclass
class Metadata:
    """The checkpoint's entries by flattened key (`state_dict_metadata`)."""

    state_dict_metadata: dict[str, TensorStorageMetadata | BytesStorageMetadata]
    planner_data: Any = None
    storage_data: Any = None
    storage_meta: Any = None
