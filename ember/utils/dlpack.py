"""`ember.utils.dlpack`, as `torch.utils.dlpack`: tensors to and from DLPack, zero-copy."""

from __future__ import annotations

from ember.core.dlpack import DLDeviceType, from_dlpack, to_dlpack

__all__ = ["DLDeviceType", "from_dlpack", "to_dlpack"]
