"""`ember.set_num_threads` & co, as torch's: the number of threads CPU ops may use.

Programs call `torch.set_num_threads(n)` to share a machine; ember records the count and
reports it back. The CPU backend's BLAS keeps its own pool (sized by OPENBLAS_NUM_THREADS /
OMP_NUM_THREADS at start-up), so the count is a request, never a change of results.
"""

from __future__ import annotations

import os

_intra: int | None = None
_interop: int | None = None


def _default() -> int:
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        value = os.environ.get(var, "")
        if value.isdigit() and int(value) > 0:
            return int(value)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        (os.cpu_count() or 1)


def set_num_threads(n: int) -> None:
    """Set the number of threads used for intra-op parallelism on the CPU."""
    global _intra
    if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    _intra = n


def get_num_threads() -> int:
    """The number of threads used for intra-op parallelism on the CPU."""
    return _default() if _intra is None else _intra


def set_num_interop_threads(n: int) -> None:
    """Set the number of threads used for inter-op parallelism on the CPU."""
    global _interop
    if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
        raise RuntimeError("set_num_interop_threads expects a positive integer")
    _interop = n


def get_num_interop_threads() -> int:
    """The number of threads used for inter-op parallelism on the CPU."""
    return _default() if _interop is None else _interop
