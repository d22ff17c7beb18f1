"""`ember.backends.mha`, as `torch.backends.mha`: whether the native fast path of
multi-head attention and of the transformer encoder is on. ember has one path; the switch
decides what PyTorch's fast path shows (a TransformerEncoder's padded positions)."""

from __future__ import annotations

_fastpath_enabled = True


def get_fastpath_enabled() -> bool:
    """Whether the fast path is enabled (default True)."""
    return _fastpath_enabled


def set_fastpath_enabled(value: bool) -> None:
    """Set whether the fast path is enabled."""
    global _fastpath_enabled
    _fastpath_enabled = bool(value)
