"""`ember.utils.dlpack`, as `torch.utils.dlpack`: tensors to and from DLPack, zero-copy."""

from __future__ import annotations

from ember.core.dlpack import from_dlpack, to_dlpack

__all__ = ["from_dlpack", "to_dlpack"]
