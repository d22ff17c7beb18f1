"""Host memory: keep freed tensor memory in the process instead of giving it back.

NumPy takes every array's memory from the C library's ``malloc``. glibc's malloc serves
a block above its mmap threshold (128 KiB at first, adapting up to 32 MiB) with a fresh
``mmap`` and unmaps it on free, and it returns the top of its heap to the OS when more
than its trim threshold (twice the mmap threshold) is free. A training step allocates and
frees the same activation and gradient sizes every step, so every step faults its memory
back in page by page, and the kernel zeroes each page first. On these VMs a page fault
costs microseconds: measured, the CNN benchmark's step took 42 ms with glibc's defaults
and 24 ms with freed memory kept (see benchmarks/README.md).

This is what PyTorch's caching allocator does for GPU memory, done here with glibc's own
switches: blocks up to the largest mmap threshold glibc accepts come from the heap, and
the heap is not trimmed, so the process keeps its peak footprint (a later step reuses it
without faulting). Blocks larger than 32 MiB still use ``mmap``.

It changes the whole process's malloc, so it is applied once, when the CPU backend is
first created (never on ``import ember``), and ``EMBER_CPU_MALLOC=system`` turns it off.
On a C library other than glibc it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform

ENV = "EMBER_CPU_MALLOC"

# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
# the largest mmap threshold glibc accepts on 64-bit systems (DEFAULT_MMAP_THRESHOLD_MAX)
_MMAP_THRESHOLD_MAX = 32 * 1024 * 1024
_NEVER_TRIM = 2**31 - 1  # an int, as mallopt takes one: ~2 GiB of free heap top

_state: str | None = None


def keep_freed_memory() -> str:
    """Apply the policy above once; returns what was done, for ``ember devices --explain``:
    ``"cached"`` (applied), ``"system"`` (turned off by EMBER_CPU_MALLOC) or
    ``"unavailable: <why>"``."""
    global _state
    if _state is None:
        _state = _apply()
    return _state


def _apply() -> str:
    if os.environ.get(ENV, "").strip().lower() == "system":
        return "system"
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return "unavailable: not glibc"
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError) as exc:
        return f"unavailable: {exc}"
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    # mallopt returns 1 on success. The mmap threshold first: keeping the heap untrimmed
    # is of no use while large blocks are still mmapped.
    if mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_MAX) != 1:
        return "unavailable: mallopt(M_MMAP_THRESHOLD) refused"
    if mallopt(_M_TRIM_THRESHOLD, _NEVER_TRIM) != 1:
        return "unavailable: mallopt(M_TRIM_THRESHOLD) refused"
    return "cached"
