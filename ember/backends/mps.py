"""`ember.backends.mps`, as `torch.backends.mps`: Apple's Metal backend, which ember does
not have, so scripts that probe for it take their other branch."""

from __future__ import annotations


def is_available() -> bool:
    """False: ember has no Metal (MPS) backend."""
    return False


def is_built() -> bool:
    """False: ember has no Metal (MPS) backend."""
    return False
