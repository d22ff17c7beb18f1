"""`ember.backends.mkl`, as `torch.backends.mkl`: Intel MKL, which ember does not link
(its CPU BLAS is NumPy's), so `is_available()` is False."""

from __future__ import annotations

VERBOSE_OFF = 0
VERBOSE_ON = 1


class verbose:  # noqa: N801 - PyTorch's spelling
    """MKL's verbose dump for a block; ember has no MKL, so nothing is dumped."""

    def __init__(self, enable: int) -> None:
        self.enable = enable

    def __enter__(self) -> verbose | None:
        return None if self.enable == VERBOSE_OFF else self

    def __exit__(self, *exc: object) -> bool:
        return False


def is_available() -> bool:
    """False: ember does not link Intel MKL."""
    return False
