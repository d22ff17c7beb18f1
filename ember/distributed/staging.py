"""Tensors as the host buffers MPI reads and writes, and the results written back into the
same tensor objects (collectives work in place, as PyTorch's do).

A CPU tensor whose memory is one dense, writable block of a dtype MPI handles is used as
it is: MPI works on its memory, no copy. Anything else (another device, a strided view,
bfloat16 or bool in a reduction) is staged: copied into a dense host array, and the
result copied back with `Tensor.copy_`, so a view writes through to its base and a
device tensor stays on its device.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import ember
from ember.core.backend import numpy_dtype
from ember.core.host import host_array

# dtypes MPI reduces natively (mpi4py maps them to MPI datatypes)
_REDUCIBLE = frozenset(np.dtype(n) for n in
                       ("float16", "float32", "float64", "int8", "int16", "int32", "int64",
                        "uint8"))


class HostBuffer:
    """A dense 1-d host array (`values`) holding a tensor's values for MPI.

    `raw` is the same memory as bytes, for operations that only move data (any dtype);
    `write_back()` makes the tensor hold the values (nothing to do when `values` is the
    tensor's own memory)."""

    __slots__ = ("tensor", "values", "shared")

    def __init__(self, tensor: ember.Tensor, values: np.ndarray, shared: bool) -> None:
        self.tensor = tensor
        self.values = values
        self.shared = shared

    @property
    def raw(self) -> np.ndarray:
        return self.values.view(np.uint8)

    def write_back(self) -> None:
        if self.shared:
            return
        t = self.tensor
        values = self.values.reshape(tuple(t.shape))
        want = numpy_dtype(t.dtype)
        if values.dtype != want:
            values = values.astype(want)
        with ember.no_grad():
            t.copy_(ember.from_numpy(values))


def check_tensor(t: Any, where: str, name: str = "tensor") -> ember.Tensor:
    """`t`, or PyTorch's TypeError naming the argument (and the call)."""
    if not isinstance(t, ember.Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"ember.Tensor but got {type(t)} instead ({where}).")
    return t


def stage(t: ember.Tensor, *, reduce: bool = False, read: bool = True) -> HostBuffer:
    """A host buffer for `t`. With `reduce`, its dtype is one MPI reduces (bfloat16 is
    widened to float32, bool to uint8). With `read=False` the buffer is an output only:
    its starting values need not be `t`'s."""
    if t.device.type == "cpu":
        arr = host_array(t)
        own = arr is t._data  # the tensor's memory itself, not a converted copy
        if own and arr.flags.c_contiguous and arr.flags.writeable and (
                not reduce or arr.dtype in _REDUCIBLE):
            return HostBuffer(t, arr.reshape(-1), shared=True)
    want = numpy_dtype(t.dtype)
    if reduce and want not in _REDUCIBLE:
        want = np.dtype(np.uint8 if want == np.bool_ else np.float32)
    if not read:
        return HostBuffer(t, np.empty(t.numel(), want), shared=False)
    return HostBuffer(t, np.array(host_array(t), dtype=want, order="C").reshape(-1),
                      shared=False)


def host_values(t: ember.Tensor) -> np.ndarray:
    """`t`'s values as a dense 1-d host array to read from (shared when possible)."""
    arr = host_array(t)
    return np.ascontiguousarray(arr).reshape(-1)
