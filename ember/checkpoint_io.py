"""Reading safetensors files (what ember's earlier `ember.save` wrote, and other tools'
tensors) without copies, the views of a storage, and the placement of loaded tensors on
devices (`map_location`).

safetensors: an 8-byte little-endian header length, a JSON header (`{name: {"dtype",
"shape", "data_offsets": [begin, end]}, "__metadata__": {str: str}}`), then the tensors'
bytes back to back. Reading fills one buffer with the data region and returns NumPy
views of it, so loading peaks at about the file's size. Every header field is checked
before it is used.
"""

from __future__ import annotations

import json
import math
from typing import Any, BinaryIO

import numpy as np

from ember.core import dtype as dt
from ember.core.backend import numpy_dtype
from ember.core.device import device as Device
from ember.core.errors import with_context
from ember.core.tensor import Tensor

_DTYPES = {"F16": dt.float16, "BF16": dt.bfloat16, "F32": dt.float32, "F64": dt.float64,
           "I8": dt.int8, "I16": dt.int16, "I32": dt.int32, "I64": dt.int64,
           "U8": dt.uint8, "BOOL": dt.bool_, "C64": dt.complex64, "C128": dt.complex128}
MAX_HEADER = 100_000_000  # safetensors' own limit


class FormatError(RuntimeError):
    """Bytes that are not a well-formed checkpoint."""


class UnsupportedError(FormatError):
    """A well-formed checkpoint holding what ember has no counterpart for (a dtype)."""


def read_into(fh: BinaryIO, offset: int, buffer: np.ndarray, what: str) -> np.ndarray:
    """Fills `buffer` with the file's bytes at `offset` (no intermediate copy)."""
    fh.seek(offset)
    view = memoryview(buffer.reshape(-1).view(np.uint8))
    nbytes, got = buffer.nbytes, 0
    while got < nbytes:
        n = fh.readinto(view[got:])
        if not n:
            raise FormatError(f"{what} is truncated ({got} of {nbytes} bytes)")
        got += n
    return buffer


# -- read -----------------------------------------------------------------------------


def read(fh: BinaryIO, mmap_path: str | None = None
         ) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Reads a safetensors file: (name -> NumPy array viewing one shared buffer,
    metadata). `mmap_path` maps the data region copy-on-write instead of reading it."""
    fh.seek(0, 2)
    size = fh.tell()
    fh.seek(0)
    head = fh.read(8)
    if len(head) != 8:
        raise FormatError(f"the file is {len(head)} bytes long, too short for a header")
    header_len = int.from_bytes(head, "little")
    if header_len > min(MAX_HEADER, size - 8):
        raise FormatError(f"its header claims {header_len} bytes; the file has {size}")
    try:
        header = json.loads(fh.read(header_len))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
        raise FormatError(f"its header is not valid JSON ({err})") from None
    if not isinstance(header, dict):
        raise FormatError("its header is not a JSON object")
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict):
        raise FormatError("its metadata is not a JSON object")
    start = 8 + header_len
    entries = {name: _entry(name, info) for name, info in header.items()}
    end = max((e[2][1] for e in entries.values()), default=0)
    if start + end > size:
        raise FormatError(f"its tensors need {end} bytes of data; the file holds "
                          f"{size - start} (truncated?)")
    if mmap_path is not None and end:
        data = np.memmap(mmap_path, dtype=np.uint8, mode="c", offset=start, shape=(end,))
    else:
        data = read_into(fh, start, np.empty(end, np.uint8), "its tensor data")
    arrays = {}
    for name, (d, shape, (b, e)) in entries.items():
        np_dtype = numpy_dtype(d)
        raw = data[b:e]
        if raw.ctypes.data % np_dtype.itemsize:
            raw = raw.copy()  # misaligned (written by another tool): one copy
        arrays[name] = raw.view(np_dtype).reshape(shape)
    return arrays, metadata


def _entry(name: str, info: Any) -> tuple[dt.dtype, list[int], tuple[int, int]]:
    if not isinstance(info, dict):
        raise FormatError(f"its entry {name!r} is not a JSON object")
    d = _DTYPES.get(info.get("dtype"))
    if d is None:
        raise UnsupportedError(f"tensor {name!r} has dtype {info.get('dtype')!r}, which ember "
                          "does not support")
    shape, offsets = info.get("shape"), info.get("data_offsets")
    if not (isinstance(shape, list) and all(_count(n) for n in shape)):
        raise FormatError(f"tensor {name!r} has a damaged shape {shape!r}")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(map(_count, offsets))
            and offsets[0] <= offsets[1]):
        raise FormatError(f"tensor {name!r} has damaged data offsets {offsets!r}")
    if (offsets[1] - offsets[0]) != math.prod(shape) * d.itemsize:
        raise FormatError(f"tensor {name!r} of shape {shape} and dtype {d.name} does not "
                          f"fit its {offsets[1] - offsets[0]} bytes")
    return d, shape, (offsets[0], offsets[1])


def _count(n: Any) -> bool:
    return isinstance(n, int) and not isinstance(n, bool) and n >= 0


# -- views of a storage ---------------------------------------------------------------


def storage_view(arr: np.ndarray) -> tuple[np.ndarray, int, tuple[int, ...]] | None:
    """(root, offset, strides in elements) when `arr` views a C-contiguous array of its
    dtype (its storage, as far as NumPy tells), else None."""
    root = arr
    while True:
        base = root.base
        if base is not None and not isinstance(base, np.ndarray):
            base = getattr(base, "base", None)  # as_strided's views hold a wrapper
        if not (isinstance(base, np.ndarray) and base.dtype == arr.dtype):
            break
        root = base
    itemsize = arr.itemsize
    delta = arr.ctypes.data - root.ctypes.data
    if not root.flags.c_contiguous or not 0 <= delta <= root.nbytes or delta % itemsize or any(
            s < 0 or s % itemsize for s in arr.strides):
        return None
    return root, delta // itemsize, tuple(s // itemsize for s in arr.strides)


def strided_view(flat: np.ndarray, offset: Any, size: Any, stride: Any) -> np.ndarray:
    """The view (`offset`, `size`, `stride` in elements) of the 1-d `flat`, after checking
    that every element it reaches lies inside `flat` (the numbers come from a file)."""
    if not (_count(offset) and isinstance(size, (list, tuple)) and isinstance(
            stride, (list, tuple)) and len(size) == len(stride)
            and all(map(_count, size)) and all(map(_count, stride))):
        raise FormatError(f"a tensor has size {size!r}, stride {stride!r} and offset "
                          f"{offset!r}")
    if 0 in size:
        return flat[:0].reshape(tuple(size))
    last = offset + sum((n - 1) * s for n, s in zip(size, stride))
    if last >= flat.size:
        raise FormatError(f"a tensor of size {tuple(size)}, stride {tuple(stride)} and offset "
                          f"{offset} reaches past its storage of {flat.size} elements")
    return np.lib.stride_tricks.as_strided(
        flat[offset:], shape=tuple(size), strides=tuple(s * flat.itemsize for s in stride))


# -- placement ------------------------------------------------------------------------


def place(t: Tensor, saved: str, map_location: Any) -> Tensor:
    """A loaded CPU tensor moved where `map_location` says (None: the device it was
    saved from; a device or string; a dict from saved device names to new ones; a
    callable `(tensor, saved_device) -> tensor`, or None for the saved device, as
    PyTorch's default restore location)."""
    if callable(map_location) and not isinstance(map_location, (str, Device)):
        moved = map_location(t, saved)
        if moved is not None:
            return moved
        map_location = None
    if map_location is None:
        target = saved
    elif isinstance(map_location, dict):
        target = map_location.get(saved, saved)
    else:
        target = map_location
    if str(target) == "cpu":
        return t
    try:
        return t.to(target)
    except (RuntimeError, ValueError, AssertionError) as err:
        context = (f"ember.load: a tensor was saved on {saved!r}, which cannot be used here "
                   f"({err}); pass map_location='cpu' to load it on the CPU")
        if not isinstance(err, AssertionError):
            raise RuntimeError(context) from None
        # CUDA unusable here: PyTorch's own words, ember's in a note
        raise with_context(RuntimeError(
            "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() "
            "is False. If you are running on a CPU-only machine, please use torch.load with "
            "map_location=torch.device('cpu') to map your storages to the CPU."),
            context) from None
