"""Sliding windows over the spatial dimensions of (N, C, *spatial) arrays, and their
inverse: what convolution and pooling are built on."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

_ALL = slice(None)


def windows(xp: Any, x: Any, kernel_size: Sequence[int], dilation: Sequence[int],
            padding: Sequence[int], stride: Sequence[int], extra: Sequence[int] = (),
            fill: float = 0) -> Any:
    """A (N, C, *out, *kernel) view of x's windows: x padded with `fill` by `padding` on
    each side (and `extra` more on the right), every `stride`-th window position, every
    `dilation`-th element inside a window."""
    n = len(kernel_size)
    extra = tuple(extra) or (0,) * n
    if any(padding) or any(extra):
        x = xp.pad(x, [(0, 0), (0, 0)] + [(p, p + e) for p, e in zip(padding, extra)],
                   constant_values=fill)
    spans = [d * (k - 1) + 1 for k, d in zip(kernel_size, dilation)]
    win = xp.lib.stride_tricks.sliding_window_view(x, spans, axis=tuple(range(2, 2 + n)))
    win = win[(Ellipsis,) + tuple(slice(None, None, d) for d in dilation)]
    return win[(_ALL, _ALL) + tuple(slice(None, None, s) for s in stride)]


def kernel_offsets(kernel_size: Sequence[int]) -> itertools.product:
    """Every position inside a window, in C order (as NumPy's ndindex)."""
    return itertools.product(*(range(k) for k in kernel_size))


def add_windows(padded: Any, piece: Callable[[tuple], Any], kernel_size: Sequence[int],
                dilation: Sequence[int], stride: Sequence[int], outs: Sequence[int]) -> None:
    """The inverse of `windows` (without its padding): for each offset inside a window,
    add `piece(offset)`, (N, C, *outs), into `padded` (N, C, *padded spatial) at the
    elements that offset of every window reads."""
    for offset in kernel_offsets(kernel_size):
        region = tuple(slice(o * d, o * d + s * (m - 1) + 1, s) for o, d, s, m in
                       zip(offset, dilation, stride, outs))
        padded[(_ALL, _ALL) + region] += piece(offset)


def crop(xp: Any, padded: Any, padding: Sequence[int], spatial: Sequence[int]) -> Any:
    """The unpadded (N, C, *spatial) part of `padded`, as a contiguous array."""
    return xp.ascontiguousarray(
        padded[(_ALL, _ALL) + tuple(slice(p, p + s) for p, s in zip(padding, spatial))])
