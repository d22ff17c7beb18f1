"""Values given to a SummaryWriter, as NumPy arrays: tensors of any device, arrays, lists.

This is the only place the writer touches tensor data; it needs nothing from a tensor
but ``.detach().cpu().numpy()``, so it works the same for every backend.
"""

from __future__ import annotations

import numbers
import struct
import zlib
from typing import Any

import numpy as np

import ember

# The letters an image's dataformats may use, by number of dimensions.
_IMAGE_LETTERS = {2: "HW", 3: "CHW", 4: "NCHW"}


def to_numpy(value: Any, what: str = "value") -> np.ndarray:
    """``value`` as a NumPy array: an ember tensor on any device (detached, copied to the
    host), a NumPy array or scalar, a Python number, or a (nested) list of numbers."""
    if isinstance(value, ember.Tensor):
        return value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (numbers.Number, np.generic, list, tuple)) or \
            hasattr(value, "__array__"):
        return np.asarray(value)
    raise TypeError(f"{what} must be an ember.Tensor, a NumPy array, a number or a list of "
                    f"numbers; got {type(value).__name__}")


def _check_numeric(array: np.ndarray, what: str) -> None:
    if array.dtype.kind not in "biuf" and array.dtype.name != "bfloat16":
        raise TypeError(f"{what} must hold numbers; got dtype {array.dtype}")


def to_float(value: Any, what: str = "scalar_value") -> float:
    """A one-element tensor, array or number as a Python float (what add_scalar logs)."""
    array = to_numpy(value, what)
    _check_numeric(array, what)
    if array.size != 1:
        raise ValueError(f"{what}: only one element tensors can be converted to Python "
                         f"scalars; got {array.size} elements of shape {tuple(array.shape)}")
    return float(array.reshape(()))


def to_values(value: Any, what: str = "values") -> np.ndarray:
    """Numbers to summarize (a histogram's values), as a flat float64 array."""
    array = to_numpy(value, what)
    _check_numeric(array, what)
    if array.size == 0:
        raise ValueError(f"{what} is empty: a histogram needs at least one value")
    return array.astype(np.float64).reshape(-1)


def check_dataformats(dataformats: str, shape: tuple[int, ...], what: str) -> str:
    """``dataformats`` upper-cased, once checked against the image's shape."""
    if not isinstance(dataformats, str):
        raise TypeError(f"{what}: dataformats must be a string like 'CHW'; got "
                        f"{type(dataformats).__name__}")
    fmt = dataformats.upper()
    letters = _IMAGE_LETTERS.get(len(fmt))
    if letters is None or sorted(fmt) != sorted(letters):
        raise ValueError(f"{what}: unknown dataformats {dataformats!r}: use an order of "
                         "'NCHW' (a batch), 'CHW', or 'HW' (e.g. 'NHWC', 'HWC', 'WH')")
    if len(shape) != len(fmt):
        raise ValueError(f"{what}: dataformats {dataformats!r} has {len(fmt)} dimensions but "
                         f"the image has shape {shape}")
    if 0 in shape:
        raise ValueError(f"{what}: the image is empty (shape {shape})")
    if "C" in fmt and shape[fmt.index("C")] not in (1, 3, 4):
        raise ValueError(f"{what}: an image has 1 (grey), 3 (RGB) or 4 (RGBA) channels; "
                         f"dataformats {dataformats!r} puts {shape[fmt.index('C')]} channels "
                         f"in shape {shape}")
    return fmt


def tile(nchw: np.ndarray, ncols: int = 8) -> np.ndarray:
    # A batch tiled into one CHW image, row-major, ncols per row (PyTorch's make_grid).
    n, c, h, w = nchw.shape
    ncols = min(n, ncols)
    nrows = -(-n // ncols)
    canvas = np.zeros((c, h * nrows, w * ncols), dtype=nchw.dtype)
    for i in range(n):
        y, x = divmod(i, ncols)
        canvas[:, y * h:(y + 1) * h, x * w:(x + 1) * w] = nchw[i]
    return canvas


def to_hwc_uint8(value: Any, dataformats: str, what: str) -> np.ndarray:
    """An image (or a batch, tiled) as HWC uint8 with 3 or 4 channels.

    uint8 values are kept; any other dtype is taken to be in [0, 1], scaled by 255 and
    clipped, as PyTorch does.
    """
    array = to_numpy(value, what)
    _check_numeric(array, what)
    fmt = check_dataformats(dataformats, tuple(array.shape), what)
    if len(fmt) == 4:
        array = tile(array.transpose([fmt.index(c) for c in "NCHW"])).transpose(1, 2, 0)
    elif len(fmt) == 3:
        array = array.transpose([fmt.index(c) for c in "HWC"])
    else:
        array = array.transpose([fmt.index(c) for c in "HW"])[:, :, None]
    if array.shape[2] == 1:  # grey shown as RGB, like PyTorch
        array = np.repeat(array, 3, axis=2)
    if array.dtype != np.uint8:
        array = (array.astype(np.float32) * 255.0).clip(0, 255).astype(np.uint8)
    return np.ascontiguousarray(array)


def encode_png(hwc: np.ndarray) -> bytes:
    """A uint8 HWC array (3 or 4 channels) as PNG bytes.

    Written out here (zlib and a few chunk headers) so that images need no imaging
    library: tensorboardX uses Pillow, which ember does not depend on.
    """
    height, width, channels = hwc.shape
    color_type = {3: 2, 4: 6}[channels]  # RGB, RGBA

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    rows = hwc.reshape(height, width * channels)
    raw = np.concatenate([np.zeros((height, 1), np.uint8), rows], axis=1)  # filter 0 per row
    header = struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(raw.tobytes(), 6)) + chunk(b"IEND", b""))
