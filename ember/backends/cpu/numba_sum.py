"""numba kernels for PyTorch's CPU order of additions in `sum` (cascade_sum.py states the
algorithm and holds its NumPy reference; these compute the same numbers, bit for bit, in
one pass).

Every part of PyTorch's sum is made of one thing: a four-level cascade down one strided
chain of elements (`multi_row_sum`'s accumulators are independent per row, lane and
column). Each kernel below takes the input as a flat array and, for every output of its
loop, the offset where its chain starts; they differ in how the chains are laid out.
Compiled without fast-math: the order of additions is the point.

Imports numba, so only ``compiled.py`` imports this module, on the first call that wants
one of these kernels (``import ember`` never loads numba).
"""

from __future__ import annotations

import numba
import numpy as np

from ember.backends.cpu.numba_kernels import _jit, one_like


@numba.njit(inline="always")
def _ceil_log2(n):
    if n <= 2:
        return 1
    bits, v = 0, n - 1
    while v > 0:
        v >>= 1
        bits += 1
    return bits


@numba.njit(inline="always")
def _cascade(x, start, stride, size):
    """`multi_row_sum` of one chain: x[start], x[start + stride], ... (`size` of them)."""
    zero = one_like(x[0]) - one_like(x[0])
    power = max(4, _ceil_log2(size) // 4)
    step = 1 << power
    mask = step - 1
    acc0 = acc1 = acc2 = acc3 = zero
    i = 0
    while i + step <= size:
        for _ in range(step):
            acc0 += x[start + i * stride]
            i += 1
        acc1 += acc0
        acc0 = zero
        if i & (mask << power) == 0:
            acc2 += acc1
            acc1 = zero
            if i & (mask << (2 * power)) == 0:
                acc3 += acc2
                acc2 = zero
    while i < size:
        acc0 += x[start + i * stride]
        i += 1
    return ((acc0 + acc1) + acc2) + acc3


@numba.njit(inline="always")
def _row_sum(x, start, stride, size):
    """`row_sum`: four interleaved cascades, the items left over added to the first, then
    the four in order."""
    quarter = size // 4
    total = _cascade(x, start, 4 * stride, quarter)
    for i in range(4 * quarter, size):
        total += x[start + i * stride]
    for k in range(1, 4):
        total += _cascade(x, start + k * stride, 4 * stride, quarter)
    return total


@numba.njit
def _add_rows(x, base, rows, width, into):
    """into[k] += x[base + r * width + k], row by row (a sequential sum per k)."""
    for r in range(rows):
        row = base + r * width
        for k in range(width):
            into[k] += x[row + k]


@numba.njit(inline="always")
def _vector_row_sum(x, start, lanes, vectors, acc, lane_sums):
    """`row_sum` of `vectors` consecutive vectors of `lanes` elements from x[start], into
    `lane_sums` (lanes,): the four interleaved cascades advance together over blocks of
    four vectors, as PyTorch's SIMD loop does (one pass through memory), each lane and
    chain its own accumulators in `acc` (4 levels of 4 * lanes)."""
    width = 4 * lanes
    rows = vectors // 4
    power = max(4, _ceil_log2(rows) // 4)
    step = 1 << power
    mask = step - 1
    zero = one_like(x[0]) - one_like(x[0])
    acc0, acc1, acc2, acc3 = acc[0], acc[1], acc[2], acc[3]
    acc[:, :] = zero
    i = 0
    while i + step <= rows:
        _add_rows(x, start + i * width, step, width, acc0)
        i += step
        for k in range(width):
            acc1[k] += acc0[k]
            acc0[k] = zero
        if i & (mask << power) == 0:
            for k in range(width):
                acc2[k] += acc1[k]
                acc1[k] = zero
            if i & (mask << (2 * power)) == 0:
                for k in range(width):
                    acc3[k] += acc2[k]
                    acc2[k] = zero
    _add_rows(x, start + i * width, rows - i, width, acc0)
    for k in range(width):  # each chain's four levels, added up
        acc0[k] = ((acc0[k] + acc1[k]) + acc2[k]) + acc3[k]
    for lane in range(lanes):
        total = acc0[lane]
        for v in range(4 * rows, vectors):  # the vectors left over, to the first chain
            total += x[start + v * lanes + lane]
        for chain in range(1, 4):
            total += acc0[chain * lanes + lane]
        lane_sums[lane] = total


@_jit(contract=False)
def inner_sums(x, starts, size, lanes, out):
    """For each start, the sum of the `size` contiguous elements from it
    (`vectorized_inner_sum` by vectors of `lanes`, or `row_sum` below one vector)."""
    acc = np.empty((4, 4 * lanes), x.dtype)
    lane_sums = np.empty(lanes, x.dtype)
    for r in range(starts.size):
        start = starts[r]
        if size < lanes:
            out[r] = _row_sum(x, start, 1, size)
            continue
        vectors = size // lanes
        _vector_row_sum(x, start, lanes, vectors, acc, lane_sums)
        total = one_like(x[0]) - one_like(x[0])
        for k in range(vectors * lanes, size):
            total += x[start + k]
        for lane in range(lanes):
            total += lane_sums[lane]
        out[r] = total


@_jit(contract=False)
def strided_sums(x, starts, size, stride, out):
    """For each start, `row_sum` of `size` elements `stride` apart (`scalar_inner_sum`)."""
    for r in range(starts.size):
        out[r] = _row_sum(x, starts[r], stride, size)


@_jit(contract=False)
def column_sums(x, starts, size, stride, block, out):
    """Sums down columns: `starts` (outer combinations, columns), each column `size`
    elements `stride` apart; the columns of whole `block`s are cascades, the rest
    `row_sum`s (`vectorized_outer_sum`, `scalar_outer_sum`)."""
    outer, columns = starts.shape
    whole = columns // block * block
    for p in range(outer):
        for c in range(columns):
            if c < whole:
                out[p, c] = _cascade(x, starts[p, c], stride, size)
            else:
                out[p, c] = _row_sum(x, starts[p, c], stride, size)
