"""numba kernels for a CNN's passes outside its GEMMs: ReLU and its backward, 1-d and 2-d
max pooling (values, window-local indices) and its backward, and a 2-d convolution's
batch-last im2col and col2im (xp/conv.py's "batch last" columns).

Imports numba, so only ``compiled.py`` imports this module, on the first call that wants
one of these kernels (``import ember`` never loads numba).

Each pass is one loop over the data where NumPy takes several (a tiled max pool's forward
is a copy and three `maximum`s, its backward three passes per window offset). Every
kernel comes as a serial loop and a ``prange`` twin over the same body (compiled.py picks
by size: waking the threads costs more than small passes take, and on a loaded machine a
parallel loop waits for its slowest thread); the convolution's columns are serial only
(see there).

Semantics are PyTorch's CPU kernels': ``relu`` keeps NaN and -0.0 (``x < 0 ? 0 : x``);
its backward is ``y <= 0 ? 0 : g`` (a select, not a product, so an infinite gradient
stays exact); a max pool window picks its first maximum, or its *last* NaN (PyTorch's
``val > maxval || isnan(val)`` from ``maxval = -inf``), and a window of -infs its first
element inside the input.

Why the 2x2 backward reads the forward's values and masks bits: the pick written with
``if``s compiles to branches, which random data mispredicts (NumPy's three passes a window
take 2.5 ms for the benchmark CNN's first pool); comparing each element with its
window's maximum and masking the gradient's bits is branch-free, and exact for an
infinite or NaN gradient, where a product with a 0/1 mask would not be. The comparisons
are of int32 bits: LLVM compiles a float32 ``==`` (two flags on x86) to branches even
here (4.9 ms on an AVX2 EPYC; 1.9 ms with the integer comparisons).
"""

from __future__ import annotations

import numba
import numpy as np

from ember.backends.cpu.numba_kernels import (
    _jit,
    one_like,
)


@_jit(inline=True)
def _zero(x):
    """0 in x's dtype (a literal 0 would widen a float32 select to float64)."""
    one = one_like(x)
    return one - one


# -- ReLU over flat, contiguous arrays (`x`, `out` of one dtype) ------------------------

@_jit()
def relu_serial(x, out):
    for i in range(x.size):
        v = x[i]
        out[i] = _zero(v) if v < 0 else v


@_jit(parallel=True)
def relu_parallel(x, out):
    for i in numba.prange(x.size):
        v = x[i]
        out[i] = _zero(v) if v < 0 else v


@_jit()
def relu_backward_serial(y, g, out):
    for i in range(y.size):
        out[i] = _zero(g[i]) if y[i] <= 0 else g[i]


@_jit(parallel=True)
def relu_backward_parallel(y, g, out):
    for i in numba.prange(y.size):
        out[i] = _zero(g[i]) if y[i] <= 0 else g[i]


# -- max pooling over (P, H, W) planes (P = N * C; a 1-d pool has H = 1) ----------------
# One plane's work is a function of its own; `<name>_serial` and `<name>_parallel` loop
# it over the planes (numba's disk cache keys a function by name and line, so each loop
# is written out).

@_jit()
def _values_2x2(x, out, p):
    """Values of 2x2 tiling windows (stride 2, no padding; a floor mode's leftover row and
    column unread): a NaN-propagating maximum, as selects LLVM vectorises."""
    for oh in range(out.shape[1]):
        top, bottom, row = x[p, 2 * oh], x[p, 2 * oh + 1], out[p, oh]
        for ow in range(out.shape[2]):
            a, b = top[2 * ow], top[2 * ow + 1]
            c, d = bottom[2 * ow], bottom[2 * ow + 1]
            ab = a if (a > b or a != a) else b
            cd = c if (c > d or c != c) else d
            row[ow] = ab if (ab > cd or ab != ab) else cd


@_jit()
def max_pool_2x2_serial(x, out):
    for p in range(out.shape[0]):
        _values_2x2(x, out, p)


@_jit(parallel=True)
def max_pool_2x2_parallel(x, out):
    for p in numba.prange(out.shape[0]):
        _values_2x2(x, out, p)


@_jit()
def _backward_2x2(g, x, values, grad, p):
    """Input gradient of one plane's 2x2 tiling windows from x and the forward's values:
    the first element equal to its window's maximum takes the gradient (its bits masked:
    float32). A plane with a NaN window is redone by `_backward_plane` (the last NaN
    wins there). The comparisons are of the float32s' bits, as int32s: the maximum is a
    copy of its element's bits, and no element before it compares equal as a float
    either (the forward picked the first maximum); float comparisons here compiled to
    branches, which random data mispredicts (2.5x slower)."""
    out_h, out_w = g.shape[1], g.shape[2]
    xi, vi, gi, gradi = (x[p].view(np.int32), values[p].view(np.int32),
                         g[p].view(np.int32), grad[p].view(np.int32))
    nan = np.int32(0)
    for oh in range(out_h):
        top, bottom = xi[2 * oh], xi[2 * oh + 1]
        g_top, g_bottom = gradi[2 * oh], gradi[2 * oh + 1]
        g_row, v_row = gi[oh], vi[oh]
        for ow in range(out_w):
            m = v_row[ow]
            nan |= np.int32((m & 0x7FFFFFFF) > 0x7F800000)
            ea = np.int32(top[2 * ow] == m)
            eb = np.int32(top[2 * ow + 1] == m) & (1 - ea)
            ec = np.int32(bottom[2 * ow] == m) & (1 - ea) & (1 - eb)
            ed = (1 - ea) & (1 - eb) & (1 - ec)
            bits = g_row[ow]
            g_top[2 * ow] = bits & -ea
            g_top[2 * ow + 1] = bits & -eb
            g_bottom[2 * ow] = bits & -ec
            g_bottom[2 * ow + 1] = bits & -ed
    zero = _zero(grad[p, 0, 0])
    if nan:
        for h in range(grad.shape[1]):
            for w in range(grad.shape[2]):
                grad[p, h, w] = zero
        _backward_plane(g, x, np.empty((0, 0, 0), np.int64), False, grad, 2, 2, 2, 2, 0, 0,
                        1, 1, p)
        return
    for h in range(2 * out_h):  # the floor mode's leftover column and row get nothing
        for w in range(2 * out_w, grad.shape[2]):
            grad[p, h, w] = zero
    for h in range(2 * out_h, grad.shape[1]):
        for w in range(grad.shape[2]):
            grad[p, h, w] = zero


@_jit()
def max_pool_2x2_backward_serial(g, x, values, grad):
    for p in range(g.shape[0]):
        _backward_2x2(g, x, values, grad, p)


@_jit(parallel=True)
def max_pool_2x2_backward_parallel(g, x, values, grad):
    for p in numba.prange(g.shape[0]):
        _backward_2x2(g, x, values, grad, p)


@_jit(inline=True)
def _window_pick(x, p, h0, w0, kh, kw, dh, dw):
    """(value, window-local index) of the window at (h0, w0), which may hang over the
    input's edges (only elements inside are read): PyTorch's rule, see the module doc."""
    height, width = x.shape[1], x.shape[2]
    best = x[p, 0, 0]  # (a typed placeholder: the first element inside replaces it)
    pick = -1
    for i in range(kh):
        h = h0 + i * dh
        if h < 0 or h >= height:
            continue
        for j in range(kw):
            w = w0 + j * dw
            if w < 0 or w >= width:
                continue
            v = x[p, h, w]
            if pick < 0 or v > best or v != v:  # (the first inside: -infs' window picks it)
                best = v
                pick = i * kw + j
    return best, pick


@_jit()
def _pool_plane(x, out, idx, want_idx, kh, kw, sh, sw, ph, pw, dh, dw, p):
    """Values (and window-local indices if `want_idx`) of one plane, any geometry."""
    for oh in range(out.shape[1]):
        for ow in range(out.shape[2]):
            best, pick = _window_pick(x, p, oh * sh - ph, ow * sw - pw, kh, kw, dh, dw)
            out[p, oh, ow] = best
            if want_idx:
                idx[p, oh, ow] = pick


@_jit()
def max_pool_serial(x, out, idx, want_idx, kh, kw, sh, sw, ph, pw, dh, dw):
    for p in range(out.shape[0]):
        _pool_plane(x, out, idx, want_idx, kh, kw, sh, sw, ph, pw, dh, dw, p)


@_jit(parallel=True)
def max_pool_parallel(x, out, idx, want_idx, kh, kw, sh, sw, ph, pw, dh, dw):
    for p in numba.prange(out.shape[0]):
        _pool_plane(x, out, idx, want_idx, kh, kw, sh, sw, ph, pw, dh, dw, p)


@_jit()
def _backward_plane(g, x, idx, use_idx, grad, kh, kw, sh, sw, ph, pw, dh, dw, p):
    """One plane's input gradient, summed where windows overlap: each window's pick (from
    `idx` if `use_idx`, else recomputed from x) gets its output's gradient. `grad` comes
    zeroed."""
    for oh in range(g.shape[1]):
        for ow in range(g.shape[2]):
            h0, w0 = oh * sh - ph, ow * sw - pw
            if use_idx:
                pick = idx[p, oh, ow]
            else:
                _, pick = _window_pick(x, p, h0, w0, kh, kw, dh, dw)
            grad[p, h0 + (pick // kw) * dh, w0 + (pick % kw) * dw] += g[p, oh, ow]


@_jit()
def max_pool_backward_serial(g, x, idx, use_idx, grad, kh, kw, sh, sw, ph, pw, dh, dw):
    for p in range(g.shape[0]):
        _backward_plane(g, x, idx, use_idx, grad, kh, kw, sh, sw, ph, pw, dh, dw, p)


@_jit(parallel=True)
def max_pool_backward_parallel(g, x, idx, use_idx, grad, kh, kw, sh, sw, ph, pw, dh, dw):
    for p in numba.prange(g.shape[0]):
        _backward_plane(g, x, idx, use_idx, grad, kh, kw, sh, sw, ph, pw, dh, dw, p)


# -- a 2-d convolution's batch-last columns (xp/conv.py) --------------------------------
# The columns are (C*KH*KW, OH*OW*N): row (c, kh, kw) holds, for each output pixel, the
# batch's input values under that tap, N in a row. One channel's work reads or writes its
# plane through an (H, W, N) scratch that stays in cache, so every other access moves N
# contiguous values: NumPy's version (a transpose of all of x, a padded copy, a strided
# window copy; for col2im a pass over the whole gradient per tap, a crop and a
# transpose) moved the data five to nine times (see docs/architecture.md for the figures).
# Serial only: beside OpenBLAS's threads, `prange` twins made the convolution slower.

@_jit(inline=True)
def _tap_range(kw, sw, pw, dw, width, out_w):
    """The output columns j whose tap kw reads inside the input: 0 <= j*sw + kw*dw - pw
    < width, as [first, stop)."""
    offset = kw * dw - pw
    first = 0 if offset >= 0 else (-offset + sw - 1) // sw
    stop = 0 if width - offset <= 0 else min(out_w, (width - offset - 1) // sw + 1)
    return first, max(first, stop)


@_jit()
def _im2col_channel(x, cols, c, kh_, kw_, sh, sw, ph, pw, dh, dw, out_h, out_w):
    """Rows (c, *, *) of the columns from x[:, c] (zeros where a tap falls in the padding).
    With stride 1 along the width, an output row's pixels under one tap read consecutive
    input pixels: one run of (stop - first) * N values."""
    batch, height, width = x.shape[0], x.shape[2], x.shape[3]
    plane = np.empty((height, width * batch), x.dtype)  # (H, W, N)
    for n in range(batch):
        for h in range(height):
            for w in range(width):
                plane[h, w * batch + n] = x[n, c, h, w]
    for kh in range(kh_):
        for kw in range(kw_):
            row = cols[(c * kh_ + kh) * kw_ + kw]
            first, stop = _tap_range(kw, sw, pw, dw, width, out_w)
            for i in range(out_h):
                dst = row[i * out_w * batch:(i + 1) * out_w * batch]
                h = i * sh + kh * dh - ph
                if h < 0 or h >= height:
                    first_i, stop_i = 0, 0
                else:
                    first_i, stop_i = first, stop
                for k in range(first_i * batch):
                    dst[k] = 0
                for k in range(stop_i * batch, out_w * batch):
                    dst[k] = 0
                if stop_i == first_i:
                    continue
                src = plane[h]
                if sw == 1:  # (slices: an index that might be negative would not vectorise)
                    start = (first_i + kw * dw - pw) * batch
                    run_src = src[start:start + (stop_i - first_i) * batch]
                    run_dst = dst[first_i * batch:stop_i * batch]
                    for k in range(run_dst.size):
                        run_dst[k] = run_src[k]
                else:
                    for j in range(first_i, stop_i):
                        w = j * sw + kw * dw - pw
                        for n in range(batch):
                            dst[j * batch + n] = src[w * batch + n]


@_jit()
def im2col_batch_last(x, cols, kh, kw, sh, sw, ph, pw, dh, dw, out_h, out_w):
    for c in range(x.shape[1]):
        _im2col_channel(x, cols, c, kh, kw, sh, sw, ph, pw, dh, dw, out_h, out_w)


@_jit()
def _col2im_channel(cols, grad, c, kh_, kw_, sh, sw, ph, pw, dh, dw, out_h, out_w):
    """grad[:, c]: the sum of every tap's column values over the pixels they read (taps in
    the padding dropped); runs as in `_im2col_channel`."""
    batch, height, width = grad.shape[0], grad.shape[2], grad.shape[3]
    plane = np.zeros((height, width * batch), grad.dtype)  # (H, W, N)
    for kh in range(kh_):
        for kw in range(kw_):
            row = cols[(c * kh_ + kh) * kw_ + kw]
            first, stop = _tap_range(kw, sw, pw, dw, width, out_w)
            for i in range(out_h):
                h = i * sh + kh * dh - ph
                if h < 0 or h >= height or stop == first:
                    continue
                src, dst = row[i * out_w * batch:(i + 1) * out_w * batch], plane[h]
                if sw == 1:
                    start = (first + kw * dw - pw) * batch
                    run_dst = dst[start:start + (stop - first) * batch]
                    run_src = src[first * batch:stop * batch]
                    for k in range(run_src.size):
                        run_dst[k] += run_src[k]
                else:
                    for j in range(first, stop):
                        w = j * sw + kw * dw - pw
                        for n in range(batch):
                            dst[w * batch + n] += src[j * batch + n]
    for n in range(batch):
        for h in range(height):
            for w in range(width):
                grad[n, c, h, w] = plane[h, w * batch + n]


@_jit()
def col2im_batch_last(cols, grad, kh, kw, sh, sw, ph, pw, dh, dw, out_h, out_w):
    for c in range(grad.shape[1]):
        _col2im_channel(cols, grad, c, kh, kw, sh, sw, ph, pw, dh, dw, out_h, out_w)
