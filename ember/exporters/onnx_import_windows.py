"""Convolution and pooling of any rank (3-D, dilated average pools ...), for the ONNX
nodes ember's 1-D and 2-D kernels cannot take.

A window op is a sum (or max) over the kernel's offsets: for each offset, one strided
slice of the padded input holds that tap of every window. So a k1 x k2 x k3 kernel costs
k1*k2*k3 slices and multiply-adds, all ember ops (differentiable, on every device). It is
slower than a native kernel, and used only where none applies.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import ember


def output_size(size: int, k: int, s: int, d: int, b: int, e: int, ceil: bool) -> int:
    """ONNX's (and PyTorch's) pooled length; ceil mode drops a last window that would
    start in the end padding."""
    span = size + b + e - d * (k - 1) - 1
    n = (math.ceil(span / s) if ceil else span // s) + 1
    if ceil and (n - 1) * s >= size + b:
        n -= 1
    return max(n, 0)


def _padded(x: Any, begin: list[int], end: list[int], value: float) -> Any:
    for axis, (b, e) in enumerate(zip(begin, end), start=2):
        parts = []
        if b:
            shape = list(x.shape)
            shape[axis] = b
            parts.append(ember.full(shape, value, dtype=x.dtype, device=x.device))
        parts.append(x)
        if e:
            shape = list(x.shape)
            shape[axis] = e
            parts.append(ember.full(shape, value, dtype=x.dtype, device=x.device))
        if len(parts) > 1:
            x = ember.cat(parts, axis)
    return x


def _taps(x: Any, kernel: list[int], strides: list[int], dilations: list[int],
          begin: list[int], end: list[int], ceil: bool, value: float) -> tuple[Any, list]:
    """The padded input's slices, one per kernel offset, each of the output's shape."""
    out = [output_size(x.shape[2 + i], k, s, d, b, e, ceil) for i, (k, s, d, b, e) in
           enumerate(zip(kernel, strides, dilations, begin, end))]
    # pad the end further so the last (ceil mode) window is whole
    extra = [max(0, (o - 1) * s + d * (k - 1) + 1 - (x.shape[2 + i] + b + e))
             for i, (o, k, s, d, b, e) in enumerate(zip(out, kernel, strides, dilations,
                                                        begin, end))]
    xp = _padded(x, begin, [e + x_ for e, x_ in zip(end, extra)], value)
    taps = []
    for offset in itertools.product(*[range(k) for k in kernel]):
        index: list[Any] = [slice(None), slice(None)]
        for o, d, s, n in zip(offset, dilations, strides, out):
            start = o * d
            index.append(slice(start, start + (n - 1) * s + 1, s))
        taps.append((offset, xp[tuple(index)]))
    return out, taps


def max_pool(x: Any, kernel: list[int], strides: list[int], dilations: list[int],
             begin: list[int], end: list[int], ceil: bool) -> Any:
    _, taps = _taps(x, kernel, strides, dilations, begin, end, ceil, -math.inf)
    y = taps[0][1]
    for _, t in taps[1:]:
        y = ember.maximum(y, t)
    return y


def sum_pool(x: Any, kernel: list[int], strides: list[int], dilations: list[int],
             begin: list[int], end: list[int], ceil: bool) -> Any:
    _, taps = _taps(x, kernel, strides, dilations, begin, end, ceil, 0.0)
    y = taps[0][1]
    for _, t in taps[1:]:
        y = y + t
    return y


def avg_pool(x: Any, kernel: list[int], strides: list[int], dilations: list[int],
             begin: list[int], end: list[int], ceil: bool, count_include_pad: bool) -> Any:
    total = sum_pool(x, kernel, strides, dilations, begin, end, ceil)
    ones = ember.ones([1, 1] + list(x.shape[2:]), dtype=x.dtype, device=x.device)
    if count_include_pad:  # the pads count, the ceil mode's extra end does not
        count = sum_pool(_padded(ones, begin, end, 1.0), kernel, strides, dilations,
                         [0] * len(kernel), [0] * len(kernel), ceil)
    else:
        count = sum_pool(ones, kernel, strides, dilations, begin, end, ceil)
    return total / count


def conv(x: Any, w: Any, b: Any, strides: list[int], dilations: list[int],
         begin: list[int], end: list[int], groups: int) -> Any:
    kernel = list(w.shape[2:])
    _, taps = _taps(x, kernel, strides, dilations, begin, end, False, 0.0)
    cin = x.shape[1] // groups
    cout = w.shape[0] // groups
    outs = []
    for g in range(groups):
        y = None
        wg = w.narrow(0, g * cout, cout)
        for offset, t in taps:
            tap = t.narrow(1, g * cin, cin).movedim(1, -1)  # (N, *out, Cin)
            w_tap = wg[(slice(None), slice(None)) + tuple(offset)]  # (Cout, Cin)
            term = ember.matmul(tap, w_tap.t())
            y = term if y is None else y + term
        outs.append(y.movedim(-1, 1))
    y = ember.cat(outs, 1) if groups > 1 else outs[0]
    if b is not None:
        y = y + b.reshape([1, -1] + [1] * (y.ndim - 2))
    return y


def _dilate(x: Any, axis: int, stride: int) -> Any:
    """Insert stride - 1 zeros between the elements of `x` along `axis`."""
    if stride == 1:
        return x
    moved = x.movedim(axis, -1).unsqueeze(-1)
    zeros = ember.zeros(list(moved.shape[:-1]) + [stride - 1], dtype=x.dtype,
                        device=x.device)
    spread = ember.cat([moved, zeros], -1).reshape(list(moved.shape[:-2]) + [-1])
    return spread.narrow(-1, 0, (x.shape[axis] - 1) * stride + 1).movedim(-1, axis)


def conv_transpose(x: Any, w: Any, b: Any, strides: list[int], dilations: list[int],
                   output_padding: list[int], groups: int) -> Any:
    """The full (uncropped) transposed convolution of any rank: the input spread by the
    stride, padded by the dilated kernel's reach, convolved with the flipped kernel."""
    kernel = list(w.shape[2:])
    for i, s in enumerate(strides):
        x = _dilate(x, 2 + i, s)
    reach = [d * (k - 1) for d, k in zip(dilations, kernel)]
    cin = w.shape[0] // groups
    flipped = ember.flip(w, list(range(2, w.ndim)))
    per_group = [flipped.narrow(0, g * cin, cin).transpose(0, 1) for g in range(groups)]
    weight = ember.cat(per_group, 0) if groups > 1 else per_group[0]
    return conv(x, weight, b, [1] * len(kernel), dilations, reach,
                [r + p for r, p in zip(reach, output_padding)], groups)


def col2im(cols: Any, size: list[int], block: list[int], strides: list[int],
           dilations: list[int], begin: list[int], end: list[int]) -> Any:
    """Sum the columns (N, C * prod(block), L) back into images (N, C, *size) of any rank."""
    import numpy as np

    n = cols.shape[0]
    taps = int(np.prod(block))
    c = cols.shape[1] // taps
    padded = [s + b + e for s, b, e in zip(size, begin, end)]
    counts = [(p - d * (k - 1) - 1) // s + 1 for p, k, s, d in
              zip(padded, block, strides, dilations)]
    starts = np.stack(np.meshgrid(*[np.arange(m) * s for m, s in zip(counts, strides)],
                                  indexing="ij"), -1).reshape(-1, len(size))
    image = ember.zeros(n, c, int(np.prod(padded)), dtype=cols.dtype, device=cols.device)
    grouped = cols.reshape(n, c, taps, -1)
    for t, offset in enumerate(itertools.product(*[range(k) for k in block])):
        where = starts + np.asarray(offset) * np.asarray(dilations)
        flat = np.ravel_multi_index(tuple(where.T), tuple(padded))
        index = ember.tensor(flat.tolist(), dtype=ember.int64, device=cols.device)
        image = ember.scatter_add(image, 2, index.reshape(1, 1, -1).expand(n, c, -1),
                                  grouped[:, :, t, :])
    image = image.reshape([n, c] + padded)
    for axis, (b, s) in enumerate(zip(begin, size), start=2):
        image = image.narrow(axis, b, s)
    return image
