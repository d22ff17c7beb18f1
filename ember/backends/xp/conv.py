"""Convolution: im2col/col2im, and the fused `conv` kernel that runs a whole batch as one
GEMM, `(O, C*K) @ (C*K, N*L)`, with its backward (one GEMM per gradient).

The GEMM's columns come in one of two orders (`_batch_last` picks), each chosen so that
the copies around the GEMM move long contiguous runs (NumPy pays per inner run, and a
conv's output rows are short: 11 floats in the benchmark's second layer):

- "batch first", (C*K, N, *out): the kernel offsets' windows of x, as im2col lays them
  out; the GEMM's (O, N, L) result is one block transpose from (N, O, L). Best where the
  columns are small beside the output (few input channels: a first layer).
- "batch last", (C*K, *out, N): x is first transposed to (C, *spatial, N), so that each
  window row of every sample is one run of out_w * N floats, in im2col and in the col2im
  of the backward alike; the output and the gradient pay a transpose of (O, L, N) each.
  Best where C*K is large beside O (measured on the benchmark CNN's second layer: the
  copies around its GEMMs 5.4 ms -> 2.3 ms on one core).
"""

from __future__ import annotations

import math

from ember.backends.xp.lib import ArrayLib, Kernel
from ember.backends.xp.windows import add_windows, crop, kernel_offsets, windows

_ALL = slice(None)


def _batch_last(x_shape, w_shape) -> bool:
    """Whether the batch-last column order moves less memory (see the module doc): the
    columns (C*K per position) outweigh the output (O per position) twice over."""
    batch, channels = x_shape[0], x_shape[1]
    return batch > 1 and channels * math.prod(w_shape[2:]) >= 2 * w_shape[0]


def kernels(lib: ArrayLib) -> dict[str, Kernel]:
    xp, product = lib.xp, lib.matmul

    def im2col(x, kernel_size, dilation, padding, stride):
        n = len(kernel_size)
        win = windows(xp, x, kernel_size, dilation, padding, stride)
        # (N, C, *out, *kernel) -> (N, C, *kernel, *out) -> (N, C * prod(kernel), prod(out))
        order = (0, 1) + tuple(range(2 + n, 2 + 2 * n)) + tuple(range(2, 2 + n))
        cols = win.transpose(order)
        out_len = math.prod(cols.shape[2 + n:])
        rows = x.shape[1] * math.prod(kernel_size)  # explicit: -1 is ambiguous at size 0
        return xp.ascontiguousarray(cols).reshape(x.shape[0], rows, out_len)

    def col2im(x, output_size, kernel_size, dilation, padding, stride):
        batch, ck, _ = x.shape
        channels = ck // math.prod(kernel_size)
        outs = [(o + 2 * p - d * (k - 1) - 1) // s + 1 for o, k, d, p, s in
                zip(output_size, kernel_size, dilation, padding, stride)]
        padded = xp.zeros((batch, channels) + tuple(o + 2 * p for o, p in
                                                    zip(output_size, padding)), dtype=x.dtype)
        cols = x.reshape((batch, channels) + tuple(kernel_size) + tuple(outs))
        add_windows(padded, lambda offset: cols[(slice(None), slice(None)) + offset],
                    kernel_size, dilation, stride, outs)
        return crop(xp, padded, padding, output_size)

    def columns(x, kernel_size, dilation, padding, stride, batch_last):
        """im2col as one GEMM operand, (C*K, N*L) or (C*K, L*N) (see the module doc); and
        the output's spatial sizes."""
        n = len(kernel_size)
        rows = x.shape[1] * math.prod(kernel_size)
        if batch_last:
            # (N, C, *sp) -> (C, *sp, N), padded: each window row is one run over the batch
            moved = x.transpose((1,) + tuple(range(2, 2 + n)) + (0,))
            if any(padding):
                xt = xp.zeros((x.shape[1],) + tuple(s + 2 * p for s, p in
                                                    zip(x.shape[2:], padding)) + (x.shape[0],),
                              dtype=x.dtype)
                xt[(_ALL,) + tuple(slice(p, p + s) for p, s in zip(padding, x.shape[2:]))] = \
                    moved
            else:
                xt = xp.ascontiguousarray(moved)
            spans = [d * (k - 1) + 1 for k, d in zip(kernel_size, dilation)]
            win = xp.lib.stride_tricks.sliding_window_view(
                xt, spans, axis=tuple(range(1, 1 + n)))  # (C, *out', N, *span)
            win = win[(Ellipsis,) + tuple(slice(None, None, d) for d in dilation)]
            win = win[(_ALL,) + tuple(slice(None, None, s) for s in stride)]
            outs = win.shape[1:1 + n]
            # (C, *out, N, *k) -> (C, *k, *out, N)
            order = (0,) + tuple(range(2 + n, 2 + 2 * n)) + tuple(range(1, 2 + n))
        else:
            win = windows(xp, x, kernel_size, dilation, padding, stride)
            outs = win.shape[2:2 + n]
            # (N, C, *out, *k) -> (C, *k, N, *out)
            order = (1,) + tuple(range(2 + n, 2 + 2 * n)) + (0,) + tuple(range(2, 2 + n))
        cols = xp.ascontiguousarray(win.transpose(order))
        return cols.reshape(rows, x.shape[0] * math.prod(outs)), outs

    def conv(x, w, b, stride, padding, dilation):
        """N-d convolution (groups=1) as one GEMM; returns (out, columns kept for
        backward)."""
        batch, out_ch = x.shape[0], w.shape[0]
        batch_last = _batch_last(x.shape, w.shape)
        cols, outs = columns(x, w.shape[2:], dilation, padding, stride, batch_last)
        length = math.prod(outs)
        product_ = product(w.reshape(out_ch, -1), cols)  # (O, N*L) or (O, L*N)
        # to (N, O, L), adding the bias on the way (one pass over the output)
        if batch_last:
            moved = product_.reshape(out_ch, length, batch).transpose(2, 0, 1)
        else:
            moved = product_.reshape(out_ch, batch, length).transpose(1, 0, 2)
        out = xp.empty((batch, out_ch, length), dtype=product_.dtype)
        if b is None:
            xp.copyto(out, moved)
        else:
            xp.add(moved, b.reshape(1, out_ch, 1), out=out)
        return out.reshape((batch, out_ch) + tuple(outs)), cols

    def conv_backward(g, x_shape, w, cols, stride, padding, dilation,
                      needs=(True, True, True)):
        """Gradients of `conv`: (input, weight, bias), each from one GEMM (None if not
        needed)."""
        n = len(x_shape) - 2
        batch, channels, out_ch = x_shape[0], x_shape[1], w.shape[0]
        batch_last = _batch_last(x_shape, w.shape)
        kernel_size, outs = tuple(w.shape[2:]), tuple(g.shape[2:])
        g3 = g.reshape(batch, out_ch, -1)
        # the gradient in the columns' order: (O, N*L) or (O, L*N)
        g_mat = xp.ascontiguousarray(g3.transpose(1, 2, 0) if batch_last
                                     else g3.transpose(1, 0, 2)).reshape(out_ch, -1)
        gw = product(g_mat, cols.T).reshape(w.shape) if needs[1] else None
        gb = g_mat.sum(axis=1) if needs[2] else None
        gx = None
        if needs[0]:
            g_cols = product(w.reshape(out_ch, -1).T, g_mat)  # (C*K, N*L) or (C*K, L*N)
            padded_sp = tuple(s + 2 * p for s, p in zip(x_shape[2:], padding))
            if batch_last:
                g_cols = g_cols.reshape((channels,) + kernel_size + outs + (batch,))
                padded = xp.zeros((channels,) + padded_sp + (batch,), dtype=g.dtype)
                for offset in kernel_offsets(kernel_size):
                    region = tuple(slice(o * d, o * d + s * (m - 1) + 1, s) for o, d, s, m in
                                   zip(offset, dilation, stride, outs))
                    padded[(_ALL,) + region] += g_cols[(_ALL,) + offset]
                # (C, *padded, N) -> (N, C, *spatial), unpadded
                inner = padded[(_ALL,) + tuple(slice(p, p + s) for p, s in
                                               zip(padding, x_shape[2:]))]
                gx = xp.ascontiguousarray(inner.transpose((n + 1, 0) + tuple(range(1, n + 1))))
            else:
                # accumulated as (C, N, *padded): each offset's slice of the columns adds
                # in place without a transpose; one transpose at the end
                g_cols = g_cols.reshape((channels,) + kernel_size + (batch,) + outs)
                padded = xp.zeros((channels, batch) + padded_sp, dtype=g.dtype)
                add_windows(padded, lambda offset: g_cols[(_ALL,) + offset],
                            kernel_size, dilation, stride, outs)
                gx = crop(xp, padded.swapaxes(0, 1), padding, x_shape[2:])
        return gx, gw, gb

    return {"im2col": im2col, "col2im": col2im, "conv": conv, "conv_backward": conv_backward}
