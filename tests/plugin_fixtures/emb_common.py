"""Shared by the fake plugins (not a plugin itself): a backend on private NumPy memory
that borrows the CPU backend's kernels, the way ember-plugin-example's countdev does."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.core.backend import Backend, Kernel, dtype, numpy_dtype


class NumpyBackend(Backend):
    """Buffers are NumPy arrays that are never shared with the host (every move copies).
    It poses as an accelerator, so that `ember.devices()` lists it when it is usable."""

    is_accelerator = True

    def empty(self, shape: tuple[int, ...], dtype: dtype, device: int) -> Any:
        return np.empty(shape, numpy_dtype(dtype))

    def from_numpy(self, array: Any, device: int) -> Any:
        return np.array(array, copy=True)

    def to_numpy(self, buffer: Any) -> Any:
        return np.array(buffer, copy=True)

    def is_contiguous(self, buffer: Any) -> bool:
        return buffer.flags.c_contiguous


def borrow_cpu_kernels(target: Backend | None, other: Backend,
                       skip: frozenset[str] = frozenset()) -> None:
    """From an `ember_backend_kernels` hook: when ember offers the CPU backend, copy its
    kernels (all but `skip`) into `target`."""
    if target is not None and other.name == "cpu":
        kernels: dict[str, Kernel] = {k: v for k, v in other.kernels.items() if k not in skip}
        target.kernels.update(kernels)
