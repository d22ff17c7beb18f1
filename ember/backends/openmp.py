"""`ember.backends.openmp`, as `torch.backends.openmp`."""

from __future__ import annotations


def is_available() -> bool:
    """False: ember's CPU kernels do not run on an OpenMP runtime of its own."""
    return False
