"""Host memory other processes can map: what `Tensor.share_memory_()` moves a CPU tensor
into, and what `ember.multiprocessing` sends as a file descriptor instead of the bytes.

Each block is an anonymous in-memory file (`memfd_create`) mapped `MAP_SHARED`: a child
made by `fork` shares the mapping as it is, and any other process maps the same pages
from a duplicate of the descriptor (PyTorch's "file_descriptor" strategy, the default on
Linux). The descriptor is closed when the mapping is collected; the pages live while any
process maps them.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import weakref
from typing import Any

import numpy as np


class _Block(mmap.mmap):
    """A shared mapping that knows its file descriptor (arrays keep it as their base)."""

    fd: int


def _block(fd: int, size: int) -> _Block:
    block = _Block(fd, size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    block.fd = fd
    weakref.finalize(block, os.close, fd)
    return block


def share(array: np.ndarray) -> np.ndarray:
    """A copy of `array` in a new shared block, with the same strides where its elements
    fill their span (C or Fortran order), C order otherwise."""
    if not hasattr(os, "memfd_create"):
        raise RuntimeError("share_memory_: this system has no memfd_create (Linux only)")
    size = max(array.nbytes, 1)  # a mapping cannot be empty
    fd = os.memfd_create("ember-tensor", os.MFD_CLOEXEC)
    try:
        os.ftruncate(fd, size)
        block = _block(fd, size)
    except BaseException:
        os.close(fd)
        raise
    dense = array.flags.c_contiguous or array.flags.f_contiguous
    out = np.ndarray(array.shape, array.dtype, buffer=block,
                     strides=array.strides if dense else None)
    out[...] = array
    return out


def block_of(array: np.ndarray) -> tuple[_Block, int] | None:
    """The shared block holding `array`, and the array's byte offset in it; None when
    `array` is not in a shared block."""
    node: Any = array
    while isinstance(node, np.ndarray):
        node = node.base
    if not isinstance(node, _Block):
        return None
    start = ctypes.addressof(ctypes.c_char.from_buffer(node))
    return node, _address(array) - start


def _address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def attach(fd: int, size: int) -> _Block:
    """The shared block behind `fd` (a descriptor this process owns from now on)."""
    return _block(fd, size)


def array_in(block: _Block, dtype: Any, shape: tuple[int, ...], strides: tuple[int, ...],
             offset: int) -> np.ndarray:
    """An array over `block`'s memory."""
    return np.ndarray(shape, dtype, buffer=block, offset=offset, strides=strides)
