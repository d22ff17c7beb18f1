"""Convolution: im2col/col2im, and the fused `conv` kernel that runs a whole batch through
one GEMM, `(O, C*K) @ (C*K, N*L)`, with its backward (one GEMM per gradient).

The columns come in one of three layouts (`layout` picks), each chosen so that the GEMMs
run well and the copies around them move long contiguous runs (NumPy pays per inner run,
and a conv's output rows are short: 11 floats in the benchmark CNN's second layer):

- "batch last", (C*K, *out, N): x is first transposed to (C, *spatial, N), so that each
  window row of every sample is one run of out_w * N floats, in im2col and in the col2im
  of the backward alike; the output and the gradient pay a transpose of (O, L, N) each.
  Best where C*K is large beside O (the benchmark CNN's second layer: the copies around
  its GEMMs 5.4 ms -> 2.3 ms on one core).
- "per sample", (C*K, N, L), multiplied as N GEMMs (NumPy's stacked matmul): where C*K is
  small (a first layer), one GEMM with so short an inner dimension, or the weight
  gradient's with an inner dimension of N*L, runs far below the BLAS's speed; per sample
  they fit in cache (the benchmark's first layer: weight gradient 0.85 -> 0.28 ms, forward
  0.73 -> 0.55 ms on one core), the output comes out as (N, O, L) without a transpose, and
  the gradient needs none either.
- "batch first", (C*K, N, L) as one GEMM: the rest; the GEMM's (O, N, L) product is one
  block transpose from (N, O, L).

The bias is added to the GEMM's product along its longest rows (adding it during the move
to (N, O, *out) runs NumPy's slower broadcast loops).
"""

from __future__ import annotations

import math

from ember.backends.xp.lib import ArrayLib, Kernel
from ember.backends.xp.windows import add_windows, crop, kernel_offsets, windows

_ALL = slice(None)


BATCH_LAST, PER_SAMPLE, BATCH_FIRST = "batch last", "per sample", "batch first"
_SMALL_CK = 32  # C*K up to this: per-sample GEMMs (see the module doc)


def layout(x_shape, w_shape) -> str:
    """The columns' layout for a convolution of these shapes (see the module doc)."""
    batch, ck = x_shape[0], x_shape[1] * math.prod(w_shape[2:])
    if batch == 1:
        return BATCH_FIRST  # (N, O, L) is already (O, L): nothing to move
    if ck <= _SMALL_CK:
        return PER_SAMPLE
    return BATCH_LAST if ck >= 2 * w_shape[0] else BATCH_FIRST


def kernels(lib: ArrayLib) -> dict[str, Kernel]:
    xp, product, transpose = lib.xp, lib.matmul, lib.transpose
    budget = lib.hooks.conv_columns_bytes
    im2col_batch_last, col2im_batch_last = (lib.hooks.im2col_batch_last,
                                            lib.hooks.col2im_batch_last)

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

    def columns(x, kernel_size, dilation, padding, stride, batch_last, ones=False):
        """im2col as a GEMM operand, (C*K, N*L), or (C*K, L*N) if `batch_last` (see the
        module doc), with a last row of ones if `ones`; and the output's spatial sizes."""
        n = len(kernel_size)
        rows = x.shape[1] * math.prod(kernel_size)
        if batch_last and im2col_batch_last is not None and not ones:
            outs = out_sizes(x.shape, (None, None) + tuple(kernel_size), stride, padding,
                             dilation)
            cols = im2col_batch_last(x, kernel_size, dilation, padding, stride, outs)
            if cols is not None:
                return cols, outs
        if batch_last:
            # (N, C, *sp) -> (C, *sp, N), padded: each window row is one run over the batch
            batch, channels, spatial = x.shape[0], x.shape[1], tuple(x.shape[2:])
            moved = transpose(x.reshape(batch, channels * math.prod(spatial))).reshape(
                (channels,) + spatial + (batch,))
            if any(padding):  # (the padded copy moves runs of width * N floats)
                xt = xp.zeros((channels,) + tuple(s + 2 * p for s, p in
                                                  zip(spatial, padding)) + (batch,),
                              dtype=x.dtype)
                xt[(_ALL,) + tuple(slice(p, p + s) for p, s in zip(padding, spatial))] = moved
            else:
                xt = moved
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
        width = x.shape[0] * math.prod(outs)
        if not ones:
            return xp.ascontiguousarray(win.transpose(order)).reshape(rows, width), outs
        cols = xp.empty((rows + 1, width), dtype=x.dtype)
        moved = win.transpose(order)
        xp.copyto(cols[:rows].reshape(moved.shape), moved)
        cols[rows] = 1
        return cols, outs

    def chunks(x_shape, w_shape, outs, itemsize):
        """The batch cut into (start, stop) slices whose im2col columns fit the backend's
        budget (`Hooks.conv_columns_bytes`), as even as possible; one slice without it."""
        batch = x_shape[0]
        per_sample = x_shape[1] * math.prod(w_shape[2:]) * math.prod(outs) * itemsize
        if budget is None or batch <= 1 or per_sample * batch <= budget:
            return [(0, batch)]
        count = -(-batch // max(1, budget // max(per_sample, 1)))
        size = -(-batch // count)
        return [(start, min(start + size, batch)) for start in range(0, batch, size)]

    def out_sizes(x_shape, w_shape, stride, padding, dilation):
        return tuple((s + 2 * p - d * (k - 1) - 1) // st + 1 for s, k, st, p, d in
                     zip(x_shape[2:], w_shape[2:], stride, padding, dilation))

    def conv(x, w, b, stride, padding, dilation):
        """N-d convolution (groups=1) as one GEMM per batch chunk; returns (out, x): the
        backward rebuilds the columns from x, chunk by chunk, rather than keeping them
        (9x the input for a 3x3 kernel)."""
        outs = out_sizes(x.shape, w.shape, stride, padding, dilation)
        parts = chunks(x.shape, w.shape, outs, x.dtype.itemsize)
        if len(parts) == 1:
            return conv_chunk(x, w, b, stride, padding, dilation), x
        out = xp.empty((x.shape[0], w.shape[0]) + outs, dtype=x.dtype)
        for start, stop in parts:
            out[start:stop] = conv_chunk(x[start:stop], w, b, stride, padding, dilation)
        return out, x

    def conv_chunk(x, w, b, stride, padding, dilation):
        batch, out_ch = x.shape[0], w.shape[0]
        order = layout(x.shape, w.shape)
        # per sample, the bias is one more column of the weight against a row of ones in
        # the columns (K of 9 -> 10 costs nothing), and its gradient one more column of
        # the weight's: no pass over the output for either
        with_ones = order == PER_SAMPLE and b is not None
        cols, outs = columns(x, w.shape[2:], dilation, padding, stride, order == BATCH_LAST,
                             ones=with_ones)
        length = math.prod(outs)
        ck = x.shape[1] * math.prod(w.shape[2:])
        w_mat = w.reshape(out_ch, ck)  # (explicit sizes: -1 is ambiguous at 0)
        if order == PER_SAMPLE:
            if with_ones:
                w_mat = xp.concatenate([w_mat, b.reshape(out_ch, 1)], axis=1)
            out = product(w_mat, cols.reshape(cols.shape[0], batch, length).transpose(1, 0, 2))
        else:
            product_ = product(w_mat, cols)  # (O, N*L) or (O, L*N)
            if b is not None:
                product_ += b[:, None]
            if order == BATCH_LAST:  # (O, L, N) -> (N, O, L): a 2-D transpose
                out = transpose(product_.reshape(out_ch * length, batch))
            else:
                out = xp.ascontiguousarray(
                    product_.reshape(out_ch, batch, length).transpose(1, 0, 2))
        return out.reshape((batch, out_ch) + tuple(outs))

    def conv_backward(g, x_shape, w, x, stride, padding, dilation,
                      needs=(True, True, True)):
        """Gradients of `conv` (x: its workspace, the input): (input, weight, bias), each
        from one GEMM per batch chunk (None if not needed)."""
        parts = chunks(x_shape, w.shape, g.shape[2:], g.dtype.itemsize)
        if len(parts) == 1:
            return backward_chunk(g, x, w, stride, padding, dilation, needs)
        gx = xp.empty(x_shape, dtype=g.dtype) if needs[0] else None
        gw = gb = None
        for start, stop in parts:
            gx_part, gw_part, gb_part = backward_chunk(g[start:stop], x[start:stop], w,
                                                       stride, padding, dilation, needs)
            if needs[0]:
                gx[start:stop] = gx_part
            if gw_part is not None:
                gw = gw_part if gw is None else xp.add(gw, gw_part, out=gw)
            if gb_part is not None:
                gb = gb_part if gb is None else xp.add(gb, gb_part, out=gb)
        return gx, gw, gb

    def input_grad_batch_last(g_cols, x_shape, kernel_size, dilation, padding, stride,
                              outs):
        """The input gradient (N, C, *spatial) from the gradient of batch-last columns,
        (C*K, L*N): the backend's hook where it applies, else each tap's slice added into a
        padded (C, *padded, N), cropped and transposed."""
        if col2im_batch_last is not None:
            gx = col2im_batch_last(g_cols, x_shape, kernel_size, dilation, padding, stride,
                                   outs)
            if gx is not None:
                return gx
        batch, channels = x_shape[0], x_shape[1]
        padded_sp = tuple(s + 2 * p for s, p in zip(x_shape[2:], padding))
        g_cols = g_cols.reshape((channels,) + kernel_size + outs + (batch,))
        padded = xp.zeros((channels,) + padded_sp + (batch,), dtype=g_cols.dtype)
        for offset in kernel_offsets(kernel_size):
            region = tuple(slice(o * d, o * d + s * (m - 1) + 1, s) for o, d, s, m in
                           zip(offset, dilation, stride, outs))
            padded[(_ALL,) + region] += g_cols[(_ALL,) + offset]
        # (C, *padded, N) -> (C, *spatial, N) -> (N, C, *spatial)
        inner = xp.ascontiguousarray(padded[(_ALL,) + tuple(
            slice(p, p + s) for p, s in zip(padding, x_shape[2:]))])
        return transpose(inner.reshape(-1, batch)).reshape(x_shape)

    def backward_chunk(g, x, w, stride, padding, dilation, needs):
        x_shape = x.shape
        batch, channels, out_ch = x_shape[0], x_shape[1], w.shape[0]
        order = layout(x_shape, w.shape)
        kernel_size, outs = tuple(w.shape[2:]), tuple(g.shape[2:])
        g3 = g.reshape(batch, out_ch, math.prod(outs))  # (explicit: -1 is ambiguous at 0)
        ck = channels * math.prod(kernel_size)
        w_mat = w.reshape(out_ch, ck)
        padded_sp = tuple(s + 2 * p for s, p in zip(x_shape[2:], padding))
        gx = gw = gb = None
        if order == PER_SAMPLE:  # (N, O, L) is already each sample's GEMM operand
            with_ones = bool(needs[2])  # (the bias's row: see `conv`)
            if needs[1] or needs[2]:
                cols, _ = columns(x, kernel_size, dilation, padding, stride, False,
                                  ones=with_ones)
                per_sample = cols.reshape(cols.shape[0], batch, g3.shape[2])
                both = product(g3, per_sample.transpose(1, 2, 0)).sum(axis=0)
                gw = both[:, :ck].reshape(w.shape) if needs[1] else None
                gb = xp.ascontiguousarray(both[:, ck]) if needs[2] and with_ones else None
            if needs[2] and gb is None:
                gb = g3.sum(axis=(0, 2))
            if needs[0]:
                g_cols = product(w_mat.T, g3)  # (N, C*K, L)
                g_cols = g_cols.reshape((batch, channels) + kernel_size + outs)
                padded = xp.zeros((batch, channels) + padded_sp, dtype=g.dtype)
                add_windows(padded, lambda offset: g_cols[(_ALL, _ALL) + offset],
                            kernel_size, dilation, stride, outs)
                gx = crop(xp, padded, padding, x_shape[2:])
            return gx, gw, gb
        # the gradient in the columns' order: (O, N*L) or (O, L*N)
        if order == BATCH_LAST:
            g_mat = transpose(g3.reshape(batch, -1))
        else:
            g_mat = xp.ascontiguousarray(g3.transpose(1, 0, 2))
        g_mat = g_mat.reshape(out_ch, batch * g3.shape[2])
        if needs[1]:
            cols, _ = columns(x, kernel_size, dilation, padding, stride, order == BATCH_LAST)
            # (as (C*K, O), the taller product: 12% faster than (O, C*K) in OpenBLAS here)
            gw = xp.ascontiguousarray(product(cols, g_mat.T).T).reshape(w.shape)
            cols = None  # (freed before the input gradient's columns are made)
        gb = g_mat.sum(axis=1) if needs[2] else None
        if needs[0]:
            g_cols = product(w_mat.T, g_mat)  # (C*K, N*L) or (C*K, L*N)
            if order == BATCH_LAST:
                gx = input_grad_batch_last(g_cols, x_shape, kernel_size, dilation, padding,
                                           stride, outs)
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
