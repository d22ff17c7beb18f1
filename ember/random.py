"""`torch.random`: the default CPU generator's seeding and state, and `fork_rng`.

ember's CPU generator is PyTorch's (ember.core.mt19937): its state is PyTorch's 5056
bytes, so `get_rng_state`/`set_rng_state` interchange states with `torch.random`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import Any

from ember.core.creation import (
    default_generator,
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)

__all__ = ["default_generator", "fork_rng", "get_rng_state", "initial_seed", "manual_seed",
           "seed", "set_rng_state", "thread_safe_generator"]


@contextlib.contextmanager
def fork_rng(devices: Iterable[Any] | None = None, enabled: bool = True,
             _caller: str = "fork_rng", _devices_kw: str = "devices",
             device_type: str = "cuda") -> Iterator[None]:
    """Run the block with the CPU generator's state saved, and restore it on leaving: draws
    inside the block leave the default stream where it was.

    Args:
        devices: accelerator devices whose generators are forked too (accepted for
            PyTorch's signature; ember's accelerator backends keep their own generators,
            which this does not save).
        enabled: when False, do nothing.
    """
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)


def thread_safe_generator() -> Any:
    """The generator a DataLoader's thread worker keeps for its own draws, or None (the
    default generator then) in the main process and in process workers. ember's
    DataLoader runs its workers as processes, so this is None there too."""
    from ember.utils.data import get_worker_info

    info = get_worker_info()
    if info is not None and getattr(info, "worker_method", None) == "thread" and \
            getattr(info, "rng", None) is not None:
        return info.rng.torch_generator
    return None
