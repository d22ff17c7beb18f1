"""Shape arithmetic shared by the op rules: broadcasting, dims, reshapes, sliding windows.

Pure functions on tuples of ints; every error names the op and the shapes, with
PyTorch's wording where users know it.
"""

from __future__ import annotations

import functools
import math
from typing import Any

from ember.core.errors import with_context


def fmt_shape(shape: tuple[int, ...]) -> str:
    """`(2, 3)` -> `"[2, 3]"`, the way PyTorch prints sizes in its messages."""
    return "[" + ", ".join(str(s) for s in shape) + "]"


@functools.cache
def broadcast_shapes(op: str, a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy/PyTorch broadcasting of two shapes, with PyTorch's error message."""
    if a == b:
        return a
    n = max(len(a), len(b))
    pa, pb = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    out = []
    for i in reversed(range(n)):  # PyTorch reports the last mismatching dimension
        x, y = pa[i], pb[i]
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            raise with_context(RuntimeError(
                f"The size of tensor a ({x}) must match the size of tensor b ({y}) at "
                f"non-singleton dimension {i}"),
                f"{op}: shapes {fmt_shape(a)} and {fmt_shape(b)} cannot be broadcast")
    return tuple(reversed(out))


def normalize_dim(op: str, dim: int, ndim: int) -> int:
    """A possibly negative dim -> a valid non-negative one, or PyTorch's IndexError."""
    lo, hi = (-ndim, ndim - 1) if ndim else (-1, 0)
    if not lo <= dim <= hi:
        raise with_context(IndexError(f"Dimension out of range (expected to be in range of "
                                      f"[{lo}, {hi}], but got {dim})"),
                           f"{op}: dim {dim} of a {ndim}-d tensor")
    return dim % ndim if ndim else 0


def normalize_dims(op: str, dims: Any, ndim: int) -> tuple[int, ...] | None:
    """An int or a sequence of ints -> a tuple of valid dims (None stays None)."""
    if dims is None:
        return None
    if type(dims) is int:  # (one dim: nothing can repeat)
        return (normalize_dim(op, dims, ndim),)
    if isinstance(dims, int):
        dims = (dims,)
    out = tuple(normalize_dim(op, d, ndim) for d in dims)
    if len(set(out)) != len(out):  # PyTorch names the first repeat, wrapped
        repeat = next(d for k, d in enumerate(out) if d in out[:k])
        raise with_context(RuntimeError(f"dim {repeat} appears multiple times in the list of "
                                        "dims"), f"{op}: dims {tuple(dims)}")
    return out


def reduced_shape(shape: tuple[int, ...], dims: tuple[int, ...] | None,
                  keepdim: bool) -> tuple[int, ...]:
    """The shape left by reducing `dims` (every dim when None)."""
    if dims is None:
        return tuple(1 for _ in shape) if keepdim else ()
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def infer_reshape(op: str, shape: tuple[int, ...], numel: int,
                  new: tuple[int, ...]) -> tuple[int, ...]:
    """Resolve one -1 in `new` and check the element count, with PyTorch's messages."""
    for i, s in enumerate(new):  # (PyTorch reads the shape left to right)
        if s < -1:
            raise with_context(RuntimeError(f"invalid shape dimension {s} at index {i} of shape "
                                            f"{fmt_shape(new)}"), op)
        if s == -1 and -1 in new[:i]:
            raise with_context(RuntimeError("only one dimension can be inferred"), op)
    if -1 in new:
        known = math.prod(s for s in new if s != -1)
        if known == 0 and numel == 0:
            raise with_context(RuntimeError(
                f"cannot reshape tensor of 0 elements into shape {fmt_shape(new)} because the "
                f"unspecified dimension size -1 can be any value and is ambiguous"), op)
        if known == 0 or numel % known:
            raise with_context(RuntimeError(f"shape '{fmt_shape(new)}' is invalid for "
                                            f"input of size {numel}"), op)
        new = tuple(numel // known if s == -1 else s for s in new)
    if math.prod(new) != numel:
        raise with_context(RuntimeError(f"shape '{fmt_shape(new)}' is invalid for input of "
                                        f"size {numel}"), op)
    return new


def conv_out_size(op: str, size: int, k: int, d: int, p: int, s: int,
                  ceil_mode: bool = False) -> int:
    """Output length of a sliding window (PyTorch's formula, with its ceil_mode rule)."""
    if size + 2 * p - d * (k - 1) - 1 < 0:
        raise RuntimeError(f"{op}: the kernel (size {k}, dilation {d}) is larger than the "
                           f"padded input (size {size} + 2 * {p})")
    return window_count(size, k, d, p, s, ceil_mode)


def window_count(size: int, k: int, d: int, p: int, s: int, ceil_mode: bool = False) -> int:
    """PyTorch's `pooling_output_shape`: the number of windows, zero or less when the
    kernel does not fit (the caller words the refusal)."""
    span = size + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= size + p:  # the last window must start inside
        out -= 1
    return out
