"""`ember.signal`: PyTorch's `torch.signal` namespace (its `windows`)."""

from ember.signal import windows

__all__ = ["windows"]
