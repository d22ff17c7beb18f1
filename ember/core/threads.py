"""`ember.set_num_threads` / `get_num_threads`, as PyTorch's: the threads a CPU op may use.

ember's CPU kernels run in NumPy, whose matrix products use the BLAS thread pool; the
setting is applied to that pool through threadpoolctl when it is installed (it is an
optional dependency, imported only when the setting changes).
"""

from __future__ import annotations

import os

_num_threads: int | None = None
_num_interop_threads: int | None = None


def _cpus() -> int:
    """PyTorch's default: OMP_NUM_THREADS when set, else the CPUs this process may use."""
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        value = os.environ.get(var, "")
        if value.isdigit() and int(value) > 0:
            return int(value)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _positive_int(name: str, value) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise RuntimeError(f"{name} expects an int, but got {type(value).__name__}")
    if value <= 0:
        raise RuntimeError(f"{name} expects a positive integer")
    return value


def set_num_threads(num: int) -> None:
    """Sets the number of threads used for intraop parallelism on CPU."""
    global _num_threads
    _num_threads = _positive_int("set_num_threads", num)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return
    threadpool_limits(limits=num)


def get_num_threads() -> int:
    """Returns the number of threads used for parallelizing CPU operations."""
    return _num_threads if _num_threads is not None else _cpus()


def set_num_interop_threads(num: int) -> None:
    """Sets the number of threads used for interop parallelism on CPU (ember records it:
    its CPU ops run one at a time)."""
    global _num_interop_threads
    _num_interop_threads = _positive_int("set_num_interop_threads", num)


def get_num_interop_threads() -> int:
    """Returns the number of threads used for inter-op parallelism on CPU."""
    return _num_interop_threads if _num_interop_threads is not None else _cpus()
