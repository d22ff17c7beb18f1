"""`countdev`: an ember device on NumPy memory of its own that counts its kernel calls."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from ember.core import plugins
from ember.core.backend import Backend, DeviceInfo, dtype, hookimpl, numpy_dtype

NOT_NATIVE = frozenset({"einsum"})  # left out on purpose: ember falls back to the CPU
calls: Counter[str] = Counter()


class CountingBackend(Backend):
    """A device whose buffers are private NumPy arrays, and whose kernels are counted."""

    name = "countdev"
    priority = 1

    def device_count(self) -> int:
        return 1

    def device_info(self, index: int) -> DeviceInfo:
        return DeviceInfo(name="counting NumPy device", details={"calls so far": sum(
            calls.values())})

    def empty(self, shape: tuple[int, ...], dtype: dtype, device: int) -> Any:
        return np.empty(shape, numpy_dtype(dtype))

    def from_numpy(self, array: Any, device: int) -> Any:
        return np.array(array, copy=True)  # device memory: never shared with the host

    def to_numpy(self, buffer: Any) -> Any:
        return np.array(buffer, copy=True)

    def is_contiguous(self, buffer: Any) -> bool:
        return buffer.flags.c_contiguous

    def strides(self, buffer: Any) -> tuple[int, ...]:
        return tuple(s // buffer.itemsize for s in buffer.strides)

    def storage_offset(self, buffer: Any) -> int:
        root = node = buffer  # the array owning the memory, down the chain of views
        while getattr(node, "base", None) is not None:
            node = node.base
            if isinstance(node, np.ndarray):
                root = node
        return (self.data_ptr(buffer) - self.data_ptr(root)) // buffer.itemsize

    def data_ptr(self, buffer: Any) -> int:
        return buffer.__array_interface__["data"][0]

    def manual_seed(self, seed: int) -> None:
        calls["manual_seed"] += 1


def _counted(op: str, kernel):
    def run(*args: Any, **kwargs: Any) -> Any:
        calls[op] += 1
        return kernel(*args, **kwargs)
    run.__name__ = op
    return run


@hookimpl
def ember_backends():
    return [CountingBackend]


@hookimpl
def ember_backend_kernels(backend: Backend):
    """countdev's kernels: the CPU backend's NumPy kernels (both hold NumPy arrays), each
    counted. Called for every loaded backend; returns kernels for countdev only."""
    if backend.name != "countdev":
        return None
    cpu = plugins.get_backend("cpu")
    return {op: _counted(op, k) for op, k in cpu.kernels.items() if op not in NOT_NATIVE}
