"""`ember.multiprocessing` is `torch.multiprocessing`: Python's :mod:`multiprocessing`,
with ember tensors sent between processes through shared memory.

Everything of :mod:`multiprocessing` is here (``Process``, ``Queue``, ``Pool``,
``get_context``, ``set_start_method`` ...). Importing this module registers how tensors
cross a process boundary: a CPU tensor put on a queue or passed to a spawned process is
moved to shared memory (:meth:`Tensor.share_memory_`) and sent as a file descriptor, so
both processes see the same memory; a tensor on another device is sent by value. A
tensor that requires grad and is not a leaf is refused, as PyTorch refuses it.

Hogwild training, as in PyTorch::

    import ember.multiprocessing as mp

    model.share_memory()
    workers = [mp.Process(target=train, args=(rank, model)) for rank in range(4)]
    for p in workers:
        p.start()
    for p in workers:
        p.join()

:func:`spawn` starts ``nprocs`` processes running ``fn(i, *args)`` and raises, in the
parent, the first error a child raised.
"""

from __future__ import annotations

import multiprocessing
from multiprocessing import *  # noqa: F403 - torch.multiprocessing re-exports it all

from ember.multiprocessing.reductions import init_reductions
from ember.multiprocessing.spawn import (
    ProcessContext,
    ProcessException,
    ProcessExitedException,
    ProcessRaisedException,
    spawn,
    start_processes,
)

__all__ = [*multiprocessing.__all__, "spawn", "start_processes", "ProcessContext",
           "ProcessException", "ProcessRaisedException", "ProcessExitedException",
           "set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies",
           "init_reductions"]

_STRATEGIES = {"file_descriptor", "file_system"}
_strategy = "file_descriptor"


def set_sharing_strategy(new_strategy: str) -> None:
    """Sets how CPU tensors are shared between processes. ember sends file descriptors
    of anonymous shared memory for both strategies (the choice only exists because
    PyTorch's "file_system" names files, which ember never needs)."""
    global _strategy
    if new_strategy not in _STRATEGIES:
        raise AssertionError(f"invalid sharing strategy {new_strategy!r}: expected one "
                             f"of {sorted(_STRATEGIES)}")
    _strategy = new_strategy


def get_sharing_strategy() -> str:
    """The current strategy for sharing CPU tensors."""
    return _strategy


def get_all_sharing_strategies() -> set[str]:
    """The strategies this system supports."""
    return set(_STRATEGIES)


init_reductions()
