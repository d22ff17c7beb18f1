"""float32/float64 `sum` (and so `mean`) in PyTorch's CPU order of additions, so that
ember's sums are PyTorch's bit for bit (NumPy's pairwise sum rounds differently in most
sums of more than a few elements).

PyTorch's CPU sum (aten/src/ATen/native/cpu/SumKernel.cpp, `cascade_sum`) runs over a
TensorIterator whose dimensions are reordered, reduced ones first, each group by stride,
and coalesced; its 2-D inner loop takes the first two dimensions, and the others are
looped around it, every result added into the zero-filled output. Inside:

- **a contiguous reduced dimension of at least one vector** (W lanes: 8 float32 or 4
  float64 with AVX2, twice that with AVX-512): the row's vectors are summed by `row_sum`
  (four interleaved accumulators, "ilp"), its tail elements one by one, then the lanes;
- **a contiguous kept dimension of at least W**: each output column is summed down the
  reduced dimension by `multi_row_sum` for the first 4·W columns of every 4·W block, and
  by `row_sum` for the rest;
- otherwise, scalar loops of the same two kinds (rows; or columns four at a time).

`multi_row_sum` is a cascade: rows are summed in blocks of 2^p (p = max(4,
ceil_log2(n) / 4)), block sums into a second accumulator emptied into a third every 2^p
blocks, and so on for four levels, which are added up at the end. Each accumulator is a
sequential float sum, which NumPy's `add.accumulate` (never pairwise) computes exactly.

This path takes C-contiguous float32/float64 arrays. From 32768 elements on, PyTorch
splits the work among its threads (`at::internal::GRAIN_SIZE`), which changes the order
with the thread count: the sum of all elements follows its split (`threaded_total`);
sums over some dims of such arrays, and other layouts, keep NumPy's sum.
The vector width follows the CPU as PyTorch's dispatch does (`ATEN_CPU_CAPABILITY`
overrides it, as in PyTorch).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from ember.backends.cpu import blas, compiled

_SERIAL_MAX = 32768  # PyTorch's GRAIN_SIZE: from here its sum may run on several threads
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_vector_bytes: int | None = None


def vector_bytes() -> int:
    """The width of PyTorch's CPU vectors here: 64 bytes where it runs its AVX-512 kernels
    (avx512f/bw/vl/dq and an OS that enables them), else 32 (AVX2). ATEN_CPU_CAPABILITY
    picks as it does in PyTorch ("avx512": 64; "avx2", or "default", whose generic vectors
    are 32 bytes too: 32)."""
    global _vector_bytes
    if _vector_bytes is None:
        forced = os.environ.get("ATEN_CPU_CAPABILITY", "").lower()
        if forced in ("avx2", "avx512", "default"):
            _vector_bytes = 64 if forced == "avx512" else 32
        else:
            info = blas._cpu_info()
            flags = info["flags"] if info else frozenset()
            avx512 = {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags and \
                blas._os_enables_avx512()
            _vector_bytes = 64 if avx512 else 32
    return _vector_bytes


def _ceil_log2(x: int) -> int:
    return 1 if x <= 2 else (x - 1).bit_length()


def _sequential(a: np.ndarray, axis: int = 0) -> np.ndarray:
    """``((0 + a[0]) + a[1]) + ...`` along `axis`, rounded at each step (the + 0 makes an
    all -0.0 sum +0.0, as an accumulator that starts at zero does)."""
    if a.shape[axis] == 0:
        return np.zeros(a.shape[:axis] + a.shape[axis + 1:], a.dtype)
    last = np.add.accumulate(a, axis=axis).take(-1, axis=axis)
    return last + a.dtype.type(0)


def _grouped(a: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """The sequential sums of each whole group of `size` along axis 0, and of the rest."""
    whole = a.shape[0] // size
    groups = _sequential(a[:whole * size].reshape((whole, size) + a.shape[1:]), 1)
    return groups, _sequential(a[whole * size:])


def multi_row_sum(rows: np.ndarray) -> np.ndarray:
    """PyTorch's four-level cascade sum of `rows` along axis 0 (see the docstring)."""
    step = 1 << max(4, _ceil_log2(rows.shape[0]) // 4)
    if rows.shape[0] < step:  # no whole block: the higher levels stay zero
        return _sequential(rows)
    blocks, acc0 = _grouped(rows, step)    # acc0: the rows after the last whole block
    level2, acc1 = _grouped(blocks, step)  # acc1: the blocks not yet moved up a level
    level3, acc2 = _grouped(level2, step)
    acc3 = _sequential(level3)
    return ((acc0 + acc1) + acc2) + acc3


def _in_order(parts: list[np.ndarray]) -> np.ndarray:
    """``parts[0] + parts[1] + ...``, rounded at each step (each part an array of the
    same shape, or a stack of them along axis 0)."""
    return np.add.accumulate(np.concatenate(parts), axis=0)[-1]


def row_sum(items: np.ndarray) -> np.ndarray:
    """PyTorch's `row_sum` along axis 0: four interleaved cascades, the items left over
    added to the first, then the four added in order."""
    whole = items.shape[0] // 4
    partial = multi_row_sum(items[:whole * 4].reshape((whole, 4) + items.shape[1:]))
    return _in_order([partial[:1], items[whole * 4:], partial[1:]])


def inner_sum(rows: np.ndarray, lanes: int) -> np.ndarray:
    """The sum along axis 0 of rows contiguous along it (their other axes trail): by
    vectors of `lanes` elements where there is at least one (`vectorized_inner_sum`),
    else element by element (`row_sum`)."""
    n = rows.shape[0]
    if n < lanes:
        return row_sum(rows)
    vectors = n // lanes
    lane_sums = row_sum(rows[:vectors * lanes].reshape((vectors, lanes) + rows.shape[1:]))
    # from zero: the elements after the last whole vector, then the lanes
    zero = np.zeros((1,) + rows.shape[1:], rows.dtype)
    return _in_order([zero, rows[vectors * lanes:], lane_sums])


def outer_sum(rows: np.ndarray, lanes: int, vectorized: bool) -> np.ndarray:
    """The sum along axis 0 of a (reduced, kept, ...) array, a column at a time:
    `multi_row_sum` for the columns of whole blocks, `row_sum` for the rest. The blocks
    are 4 vectors wide where the columns are contiguous and fill a vector
    (`vectorized_outer_sum`), else 4 columns (`scalar_outer_sum`)."""
    block = 4 * lanes if vectorized else 4
    whole = rows.shape[1] // block * block
    out = np.empty(rows.shape[1:], rows.dtype)
    out[:whole] = multi_row_sum(rows[:, :whole])
    out[whole:] = row_sum(rows[:, whole:])
    return out


def _loop_dims(shape: tuple[int, ...], dims: tuple[int, ...]) -> tuple[list[list[int]], list[int]]:
    """TensorIterator's dimensions for a reduction of a C-contiguous array over `dims`:
    runs of adjacent dims alike (reduced or kept, size-1 dims left out) merge, as its
    coalescing does; then the reduced runs come first, each group from the smallest
    stride up. Returns the runs (lists of dims, in order) and that loop order (indices of
    runs)."""
    runs: list[list[int]] = []
    for d, n in enumerate(shape):
        if n == 1:
            continue
        if runs and (runs[-1][-1] in dims) == (d in dims):
            runs[-1].append(d)
        else:
            runs.append([d])
    order = [i for i in range(len(runs) - 1, -1, -1) if runs[i][0] in dims] + \
        [i for i in range(len(runs) - 1, -1, -1) if runs[i][0] not in dims]
    return runs, order


def _contiguous_rows(rows: np.ndarray, lanes: int) -> np.ndarray:
    """The sum of each row of a C-contiguous (rows, n) array, n > 0 (a loop of inner
    sums whose results go each to its own output)."""
    kernels = compiled.sum_kernels(rows.size)
    if kernels is None:
        return inner_sum(rows.T, lanes)
    out = np.empty(rows.shape[0], rows.dtype)
    kernels.inner_sums(rows.reshape(-1), np.arange(0, rows.size, rows.shape[1]),
                       rows.shape[1], lanes, out)
    return out


def _compiled_partial(kernels: Any, x: np.ndarray, shape: tuple[int, ...],
                      strides: list[int], reduced: list[bool], lanes: int) -> np.ndarray:
    """The inner loop's sums by numba_sum's kernels (the same numbers as the NumPy code
    in pytorch_sum): one sum for every combination of the axes after the inner one."""
    starts = np.zeros(shape[1:], np.int64)
    for axis, (size, stride) in enumerate(zip(shape[1:], strides[1:])):
        starts += (np.arange(size, dtype=np.int64) * stride).reshape(
            (-1,) + (1,) * (len(shape) - 2 - axis))
    flat = x.reshape(-1)
    out = np.empty(shape[1:], x.dtype)
    if strides[0] == 1:
        kernels.inner_sums(flat, starts.reshape(-1), shape[0], lanes, out.reshape(-1))
    elif reduced[1] or strides[0] < strides[1]:
        kernels.strided_sums(flat, starts.reshape(-1), shape[0], strides[0], out.reshape(-1))
    else:  # columns along axis 1: laid out (outer combinations, columns) for the kernel
        vectorized = strides[1] == 1 and shape[1] >= lanes
        columns = np.ascontiguousarray(np.moveaxis(starts, 0, -1)).reshape(-1, shape[1])
        sums = np.empty(columns.shape, x.dtype)
        kernels.column_sums(flat, columns, shape[0], strides[0],
                            4 * lanes if vectorized else 4, sums)
        out = np.moveaxis(sums.reshape(shape[2:] + (shape[1],)), -1, 0)
    return out


def pytorch_sum(x: np.ndarray, dims: tuple[int, ...]) -> np.ndarray:
    """The sum of `x` (C-contiguous, float32/float64, 0 < size < 32768) over `dims` in
    PyTorch's order, shaped as the kept dims (no keepdim)."""
    kept = tuple(n for d, n in enumerate(x.shape) if d not in dims)
    lanes = vector_bytes() // x.itemsize
    last = x.shape[-1] if x.ndim else 1
    if len(dims) == x.ndim or (dims == (x.ndim - 1,) and last > 1):
        # the common cases, one loop of contiguous rows: all of x, or its last dim
        return _contiguous_rows(x.reshape(-1, last if len(dims) < x.ndim else x.size),
                                lanes).reshape(kept)
    runs, order = _loop_dims(x.shape, dims)
    if not order or runs[order[0]][0] not in dims:  # every reduced dim has size 1
        return (x + x.dtype.type(0)).reshape(kept)
    sizes = [math.prod(x.shape[d] for d in run) for run in runs]
    # x with TensorIterator's dims as axes, the innermost first
    view = x.reshape(sizes).transpose(order)
    strides = [view.strides[i] // x.itemsize for i in range(view.ndim)]
    reduced = [runs[i][0] in dims for i in order]
    compiled_sums = compiled.sum_kernels(x.size)
    if compiled_sums is not None:
        partial = _compiled_partial(compiled_sums, x, view.shape, strides, reduced, lanes)
    elif strides[0] == 1:  # the reduced dim is contiguous: sums along rows
        partial = inner_sum(view, lanes)
    elif reduced[1] or strides[0] < strides[1]:  # rows of strided elements
        partial = row_sum(view)
    else:  # down columns of the kept dim (reduced dims all come before the kept ones)
        partial = outer_sum(view, lanes, strides[1] == 1 and view.shape[1] >= lanes)
    # `partial` has the axes after the inner one, innermost first; the reduced ones among
    # them (all before the kept ones) are added into the zero-filled output in loop
    # order, the innermost fastest (Fortran order)
    outer_reduced = sum(reduced[1:])
    if outer_reduced:
        out = _sequential(partial.reshape((-1,) + partial.shape[outer_reduced:], order="F"))
    else:
        out = partial + x.dtype.type(0)
    # the kept axes are innermost first: reversed, they are the kept dims of x in order
    out = np.asarray(out)
    return out.transpose(tuple(range(out.ndim - 1, -1, -1))).reshape(kept).copy(order="C")


def threaded_total(flat: np.ndarray) -> np.ndarray:
    """The sum of a contiguous 1-D array of _SERIAL_MAX elements or more as PyTorch's
    `two_pass_reduction` adds it: split into one contiguous chunk a thread
    (`at::parallel_for` with GRAIN_SIZE: ceil(n / threads) elements each), each chunk's
    inner sum into its own slot of a zeroed buffer of one slot a thread, then the buffer
    summed. The threads are NumPy's BLAS's (``ember.set_num_threads`` sets them; PyTorch's
    default, one a CPU, is theirs too)."""
    ref = blas._numpy_blas()
    threads = (ref.num_threads() if ref is not None else None) or 1
    lanes = vector_bytes() // flat.itemsize
    n = flat.size
    used = min(threads, -(-n // _SERIAL_MAX))
    chunk = -(-n // used)
    slots = np.zeros(threads, flat.dtype)
    for t in range(used):
        slots[t] = _contiguous_rows(flat[t * chunk:(t + 1) * chunk].reshape(1, -1), lanes)[0]
    return _contiguous_rows(slots.reshape(1, -1), lanes)[0]


def sum_all(x: np.ndarray) -> np.ndarray:
    """The sum of all of a C-contiguous float32/float64 array, 0-d, as the CPU's `sum`
    kernel adds it (PyTorch's order; 0 for an empty array)."""
    if not x.size:
        return np.zeros((), x.dtype)
    if x.size < _SERIAL_MAX:
        return pytorch_sum(x, tuple(range(x.ndim)))
    return np.asarray(threaded_total(x.reshape(-1)))


def sum_kernel(shared: Callable[..., Any]) -> Callable[..., Any]:
    """The CPU's `sum(x, dims, keepdim)`: PyTorch's order of additions where
    :func:`pytorch_sum` applies, else `shared` (NumPy's)."""
    def kernel(x, dims=None, keepdim=False):
        if type(x) is np.ndarray and x.dtype in _FLOATS and x.size and x.flags.c_contiguous:
            reduce_dims = tuple(range(x.ndim)) if dims is None else \
                tuple(d % x.ndim for d in dims)
            if x.size < _SERIAL_MAX:
                out = pytorch_sum(x, reduce_dims)
            elif len(reduce_dims) == x.ndim:
                out = sum_all(x)
            else:  # PyTorch splits an output dim among its threads: not emulated
                return shared(x, dims, keepdim)
            if keepdim:
                out = out.reshape(tuple(1 if d in reduce_dims else n
                                        for d, n in enumerate(x.shape)))
            return out
        return shared(x, dims, keepdim)
    return kernel
