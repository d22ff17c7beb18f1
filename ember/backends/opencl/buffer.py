"""The OpenCL buffer: device memory plus a NumPy-style view on it.

A `CLBuffer` holds a pyopencl memory object (from the device's memory pool) and a view:
`shape`, `strides` and `offset` counted in elements, and an ember `dtype`. Views (reshape
when the strides allow, permute, expand with zero strides, basic indexing) share the
memory object and change only the view, exactly as NumPy arrays do. Every kernel reads
its inputs through strides and offset, and writes a fresh contiguous output (except the
in-place kernels, which write through the destination's strides).
"""

from __future__ import annotations

import math
from typing import Any


class CLBuffer:
    """A strided view of OpenCL device memory. `mem` may be shared with other views."""

    __slots__ = ("mem", "shape", "strides", "offset", "dtype", "dev", "__weakref__")

    def __init__(self, mem: Any, shape: tuple[int, ...], strides: tuple[int, ...],
                 offset: int, dtype: Any, dev: Any) -> None:
        self.mem = mem
        self.shape = shape
        self.strides = strides
        self.offset = offset
        self.dtype = dtype
        self.dev = dev

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def device(self) -> int:
        return self.dev.index

    def is_contiguous(self) -> bool:
        """C-contiguous, ignoring the strides of dimensions of size 1 (NumPy's rule)."""
        return is_contiguous(self.shape, self.strides)

    def view(self, shape: tuple[int, ...], strides: tuple[int, ...], offset: int) -> CLBuffer:
        return CLBuffer(self.mem, shape, strides, offset, self.dtype, self.dev)

    def __repr__(self) -> str:
        return (f"CLBuffer(shape={self.shape}, strides={self.strides}, offset={self.offset}, "
                f"dtype={self.dtype.name}, device=opencl:{self.dev.index})")


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides = []
    acc = 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(strides))


def is_contiguous(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    acc = 1
    for s, st in zip(reversed(shape), reversed(strides)):
        if s == 0:
            return True
        if s != 1 and st != acc:
            return False
        acc *= s
    return True


def reshape_strides(shape: tuple[int, ...], strides: tuple[int, ...],
                    new: tuple[int, ...]) -> tuple[int, ...] | None:
    """The strides of a view of (shape, strides) with shape `new`, or None when no view
    is possible (PyTorch's `computeStride`, which accepts what NumPy's reshape does)."""
    numel = math.prod(shape)
    if numel == 0 or not shape:
        return contiguous_strides(new) if numel == 0 or not shape else None
    out = [0] * len(new)
    view_d = len(new) - 1
    chunk_base = strides[-1]
    tensor_numel = 1
    view_numel = 1
    for d in range(len(shape) - 1, -1, -1):
        tensor_numel *= shape[d]
        # the end of a contiguous chunk: dims [d, ...] can be viewed together
        if d == 0 or (shape[d - 1] != 1 and strides[d - 1] != tensor_numel * chunk_base):
            while view_d >= 0 and (view_numel < tensor_numel or new[view_d] == 1):
                out[view_d] = view_numel * chunk_base
                view_numel *= new[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                chunk_base = strides[d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(out)
