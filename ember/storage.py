"""`ember.storage`, as `torch.storage`: the storage classes (`UntypedStorage`, the
bytes behind a tensor, and the legacy `TypedStorage`)."""

from __future__ import annotations

from ember.core.storage import TypedStorage, UntypedStorage

__all__ = ["TypedStorage", "UntypedStorage"]
