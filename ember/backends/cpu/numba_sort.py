"""numba kernels for PyTorch's CPU order of equal keys: ``mode``'s sort of each row.

Imports numba, so only ``compiled.py`` imports this module, on the first call that wants
one of these kernels (``import ember`` never loads numba).

The same libstdc++ ``std::sort`` (introsort) over (key, index) pairs as
``ember.core.ops.introsort``'s pure-Python emulation, step for step, with ATen's ``mode``
comparator (``a < b`` alone), so equal keys end in the same order and ``mode`` returns
the same index: one compiled call for all the rows instead of ~200 us of Python a row of
64. The recursion of ``__introsort_loop`` on its right part becomes a stack of ranges:
the parts are disjoint, so the order they are sorted in changes nothing. Rows holding
NaN stay with the emulation (with ``a < b`` a NaN can lead a partition past the row's
end, which the emulation detects and this loop would not).
"""

from __future__ import annotations

import numba
import numpy as np

_THRESHOLD = 16  # libstdc++'s _S_threshold


@numba.njit(inline="always")
def _swap(k, ix, i, j):
    k[i], k[j] = k[j], k[i]
    ix[i], ix[j] = ix[j], ix[i]


@numba.njit(inline="always")
def _move_median_to_first(k, ix, result, a, b, c):
    if k[a] < k[b]:
        if k[b] < k[c]:
            _swap(k, ix, result, b)
        elif k[a] < k[c]:
            _swap(k, ix, result, c)
        else:
            _swap(k, ix, result, a)
    elif k[a] < k[c]:
        _swap(k, ix, result, a)
    elif k[b] < k[c]:
        _swap(k, ix, result, c)
    else:
        _swap(k, ix, result, b)


@numba.njit
def _partition_pivot(k, ix, first, last):
    _move_median_to_first(k, ix, first, first + 1, first + (last - first) // 2, last - 1)
    pivot = first
    first += 1
    while True:
        while k[first] < k[pivot]:
            first += 1
        last -= 1
        while k[pivot] < k[last]:
            last -= 1
        if not first < last:
            return first
        _swap(k, ix, first, last)
        first += 1


@numba.njit
def _adjust_heap(k, ix, first, hole, length, vk, vi):
    top = hole
    second = hole
    while second < (length - 1) // 2:
        second = 2 * (second + 1)
        if k[first + second] < k[first + second - 1]:
            second -= 1
        k[first + hole], ix[first + hole] = k[first + second], ix[first + second]
        hole = second
    if (length & 1) == 0 and second == (length - 2) // 2:
        second = 2 * (second + 1)
        k[first + hole], ix[first + hole] = k[first + second - 1], ix[first + second - 1]
        hole = second - 1
    parent = (hole - 1) // 2
    while hole > top and k[first + parent] < vk:
        k[first + hole], ix[first + hole] = k[first + parent], ix[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    k[first + hole], ix[first + hole] = vk, vi


@numba.njit
def _heap_sort(k, ix, first, last):
    """std::partial_sort(first, last, last): make_heap, then sort_heap."""
    length = last - first
    if length >= 2:
        parent = (length - 2) // 2
        while True:
            _adjust_heap(k, ix, first, parent, length, k[first + parent], ix[first + parent])
            if parent == 0:
                break
            parent -= 1
    while last - first > 1:
        last -= 1
        vk, vi = k[last], ix[last]
        k[last], ix[last] = k[first], ix[first]
        _adjust_heap(k, ix, first, 0, last - first, vk, vi)


@numba.njit(inline="always")
def _linear_insert(k, ix, i):
    vk, vi = k[i], ix[i]
    j = i - 1
    while vk < k[j]:
        k[j + 1], ix[j + 1] = k[j], ix[j]
        j -= 1
    k[j + 1], ix[j + 1] = vk, vi


@numba.njit
def _insertion_sort(k, ix, first, last):
    for i in range(first + 1, last):
        if k[i] < k[first]:
            vk, vi = k[i], ix[i]
            for j in range(i, first, -1):
                k[j], ix[j] = k[j - 1], ix[j - 1]
            k[first], ix[first] = vk, vi
        else:
            _linear_insert(k, ix, i)


@numba.njit
def _std_sort(k, ix, stack):
    """std::sort of the pairs (k, ix) by k; `stack` (3 x 2 log2(n) + 3 int64s) holds the
    ranges left to partition."""
    n = k.size
    if n < 2:
        return
    depth_limit = 0
    m = n
    while m > 1:
        m >>= 1
        depth_limit += 1
    top = 0
    stack[0], stack[1], stack[2] = 0, n, 2 * depth_limit
    top = 1
    while top:
        top -= 1
        first, last, depth = stack[3 * top], stack[3 * top + 1], stack[3 * top + 2]
        while last - first > _THRESHOLD:
            if depth == 0:
                _heap_sort(k, ix, first, last)
                break
            depth -= 1
            cut = _partition_pivot(k, ix, first, last)
            stack[3 * top], stack[3 * top + 1], stack[3 * top + 2] = cut, last, depth
            top += 1
            last = cut
    if n > _THRESHOLD:
        _insertion_sort(k, ix, 0, _THRESHOLD)
        for i in range(_THRESHOLD, n):
            _linear_insert(k, ix, i)
    else:
        _insertion_sort(k, ix, 0, n)


@numba.njit(cache=True)
def mode_rows(rows, out):
    """out[r] = the index ATen's CPU mode returns for row r of `rows` (R, n), n >= 1: the
    last pair of the first longest run of equal keys in std::sort's order."""
    n = rows.shape[1]
    k = np.empty(n, rows.dtype)
    ix = np.empty(n, np.int64)
    stack = np.empty(3 * (2 * 64 + 3), np.int64)
    for r in range(rows.shape[0]):
        for j in range(n):
            k[j] = rows[r, j]
            ix[j] = j
        _std_sort(k, ix, stack)
        best_index, best_count, count = ix[0], 0, 0
        for pos in range(n):
            count += 1
            if pos == n - 1 or k[pos] != k[pos + 1]:
                if count > best_count:
                    best_index, best_count = ix[pos], count
                count = 0
        out[r] = best_index
