"""`torch.cuda.nvtx`: named ranges for NVIDIA's profilers (Nsight Systems).

Without CUDA, each function raises what PyTorch's CPU build raises, so a program that
guards its ranges with ``torch.cuda.is_available()`` runs the same. With the CUDA backend,
the ranges nest and `range_push`/`range_pop` return their depth as PyTorch's do; ember
does not emit them to NVTX (CuPy's NVTX bindings are optional), so profilers do not show
them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

__all__ = ["mark", "range", "range_pop", "range_push"]

_NOT_INSTALLED = "NVTX functions not installed. Are you sure you have a CUDA build?"
_depth = 0


def _check() -> None:
    from ember import cuda

    if not cuda.is_available():
        raise RuntimeError(_NOT_INSTALLED)


def range_push(msg: str) -> int:
    """Push a range onto the stack of nested ranges; returns its zero-based depth."""
    global _depth
    _check()
    _depth += 1
    return _depth - 1


def range_pop() -> int:
    """Pop the innermost range; returns the depth of the range that ended (-1 if none)."""
    global _depth
    _check()
    if _depth == 0:
        return -1
    _depth -= 1
    return _depth


def mark(msg: str) -> None:
    """Describe an instantaneous event."""
    _check()


@contextlib.contextmanager
def range(msg: str, *args: Any, **kwargs: Any) -> Iterator[None]:  # noqa: A001 - PyTorch's
    """Context manager: a range named ``msg.format(*args, **kwargs)`` around its block."""
    range_push(msg.format(*args, **kwargs))
    try:
        yield
    finally:
        range_pop()
