"""Convolution: im2col/col2im, and the fused `conv` kernel that runs a whole batch as one
GEMM, `(O, C*K) @ (C*K, N*L)`, with its backward (one GEMM per gradient)."""

from __future__ import annotations

import math

from ember.backends.xp.lib import ArrayLib, Kernel
from ember.backends.xp.windows import add_windows, crop, windows


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

    def columns(x, kernel_size, dilation, padding, stride):
        """im2col in the layout (C*K, N*L): the whole batch as one GEMM operand."""
        n = len(kernel_size)
        win = windows(xp, x, kernel_size, dilation, padding, stride)
        outs = win.shape[2:2 + n]
        # (N, C, *out, *k) -> (C, *k, N, *out)
        order = (1,) + tuple(range(2 + n, 2 + 2 * n)) + (0,) + tuple(range(2, 2 + n))
        cols = xp.ascontiguousarray(win.transpose(order))
        rows = x.shape[1] * math.prod(kernel_size)
        return cols.reshape(rows, x.shape[0] * math.prod(outs)), outs

    def conv(x, w, b, stride, padding, dilation):
        """N-d convolution (groups=1) as one GEMM; returns (out, columns kept for
        backward)."""
        n = x.ndim - 2
        cols, outs = columns(x, w.shape[2:], dilation, padding, stride)
        out = product(w.reshape(w.shape[0], -1), cols)  # (O, N*L)
        if b is not None:
            out += b[:, None]
        out = out.reshape((w.shape[0], x.shape[0]) + outs)
        order = (1, 0) + tuple(range(2, 2 + n))
        return xp.ascontiguousarray(out.transpose(order)), cols

    def conv_backward(g, x_shape, w, cols, stride, padding, dilation,
                      needs=(True, True, True)):
        """Gradients of `conv`: (input, weight, bias), each from one GEMM (None if not
        needed)."""
        n = len(x_shape) - 2
        out_ch = w.shape[0]
        order = (1, 0) + tuple(range(2, 2 + n))
        g_mat = xp.ascontiguousarray(g.transpose(order)).reshape(out_ch, -1)  # (O, N*L)
        gw = product(g_mat, cols.T).reshape(w.shape) if needs[1] else None
        gb = g_mat.sum(axis=1) if needs[2] else None
        gx = None
        if needs[0]:
            g_cols = product(w.reshape(out_ch, -1).T, g_mat)  # (C*K, N*L)
            kernel_size = w.shape[2:]
            outs = g.shape[2:]
            batch, channels = x_shape[0], x_shape[1]
            g_cols = g_cols.reshape((channels,) + tuple(kernel_size) + (batch,) + tuple(outs))
            padded = xp.zeros((batch, channels) + tuple(s + 2 * p for s, p in
                                                        zip(x_shape[2:], padding)),
                              dtype=g.dtype)
            # each offset's (C, N, *out) slice of the columns, as (N, C, *out)
            add_windows(padded, lambda offset: g_cols[(slice(None),) + offset].swapaxes(0, 1),
                        kernel_size, dilation, stride, outs)
            gx = crop(xp, padded, padding, x_shape[2:])
        return gx, gw, gb

    return {"im2col": im2col, "col2im": col2im, "conv": conv, "conv_backward": conv_backward}
