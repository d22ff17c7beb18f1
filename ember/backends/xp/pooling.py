"""Max pooling over any number of spatial dimensions, and its backward."""

from __future__ import annotations

import math

from ember.backends.xp.indexing import along_axis
from ember.backends.xp.lib import ArrayLib, Kernel
from ember.backends.xp.windows import add_windows, crop, kernel_offsets, windows

_ALL = slice(None)


def kernels(lib: ArrayLib) -> dict[str, Kernel]:
    xp = lib.xp

    def max_pool(x, kernel_size, stride, padding, dilation, extra, need_indices=True):
        """Max pooling: (values, window-local argmax indices). For tiling windows without
        `need_indices`, indices are None and the backward recovers them from the input
        and the values (a running maximum over k*k strided views is ~8x faster than
        gathering windows for argmax)."""
        if not need_indices and _tiled(kernel_size, stride, padding, dilation, extra):
            outs = tuple(s // k for s, k in zip(x.shape[2:], kernel_size))
            views = _tiles(x, kernel_size, outs)
            best = views[0].copy()
            for view in views[1:]:
                xp.maximum(best, view, out=best)
            return best, None
        win = windows(xp, x, kernel_size, dilation, padding, stride, extra, _lowest(xp, x))
        # windows last, contiguous (the window's size given: an empty batch has no -1)
        flat = win.reshape(win.shape[:-len(kernel_size)] + (math.prod(kernel_size),))
        idx = flat.argmax(axis=-1)
        if any(padding) or any(extra):
            # PyTorch never picks padding: where a window's real elements are all -inf, the
            # argmax may have landed on a pad slot; take the window's first real element then
            real = xp.ones((1, 1) + x.shape[2:], dtype=xp.int8)
            real_win = windows(xp, real, kernel_size, dilation, padding, stride, extra, 0)
            real_flat = real_win.reshape(real_win.shape[:-len(kernel_size)] +
                                         (math.prod(kernel_size),))
            first_real = real_flat.argmax(axis=-1)  # (1, 1, *out)
            on_pad = xp.take_along_axis(xp.broadcast_to(real_flat, flat.shape),
                                        idx[..., None], axis=-1)[..., 0] == 0
            if on_pad.any():
                idx = xp.where(on_pad, xp.broadcast_to(first_real, idx.shape), idx)
        values = xp.take_along_axis(flat, idx[..., None], axis=-1)[..., 0]
        if values.dtype.kind not in "biu" and values.size:
            nan = xp.isnan(values)
            if nan.any():  # PyTorch's CPU kernel picks a window's last NaN, argmax its first
                last = flat.shape[-1] - 1 - xp.isnan(flat[..., ::-1]).argmax(axis=-1)
                idx = xp.where(nan, last, idx)
        return values, idx

    def _all_finite(a) -> bool:
        with lib.quiet():  # (one reduction; inf - inf is NaN, so is any NaN)
            return bool(xp.isfinite(a.sum(dtype=xp.float32) * 0))

    def max_pool_backward(g, x, values, idx, input_shape, kernel_size, stride, padding,
                          dilation, extra):
        """Send each output's gradient to the input element its window picked (the first
        maximum, as PyTorch: recovered from x and the values when idx is None)."""
        if idx is None:
            # NaN windows: let argmax find the NaN, as PyTorch; a gradient holding inf or
            # NaN: scatter it (a product with the mask would put NaN beside it, inf * 0).
            # Overlapping windows (a compiled forward keeps no indices for them either,
            # and this fallback runs for a gradient it declines) take the indices path.
            if _tiled(kernel_size, stride, padding, dilation, extra) and \
                    _all_finite(values) and _all_finite(g):
                return _first_maximum_grad(g, x, values, input_shape, kernel_size)
            _, idx = max_pool(x, kernel_size, stride, padding, dilation, extra)
        n = len(kernel_size)
        k = math.prod(kernel_size)
        cols = xp.zeros(g.shape + (k,), dtype=g.dtype)
        cols[along_axis(xp, idx[..., None], -1)] = g[..., None]
        cols = cols.reshape(g.shape + tuple(kernel_size))
        spatial = input_shape[2:]
        padded_shape = tuple(s + 2 * p + e for s, p, e in zip(spatial, padding, extra))
        outs = g.shape[2:]
        grad = xp.zeros(g.shape[:2] + padded_shape, dtype=g.dtype)
        if tuple(stride) == tuple(kernel_size) and all(d == 1 for d in dilation):
            # non-overlapping windows: interleave (out, kernel) axes and fold by reshaping
            order = (0, 1) + tuple(a for i in range(n) for a in (2 + i, 2 + n + i))
            tiled = cols.transpose(order).reshape(
                g.shape[:2] + tuple(o * kk for o, kk in zip(outs, kernel_size)))
            grad[(_ALL, _ALL) + tuple(slice(0, t) for t in tiled.shape[2:])] = tiled
        else:
            add_windows(grad, lambda offset: cols[(Ellipsis,) + offset], kernel_size,
                        dilation, stride, outs)
        return crop(xp, grad, padding, spatial)

    def _first_maximum_grad(g, x, values, input_shape, kernel_size):
        """Tiling windows without indices: each window's gradient goes to the first of its
        elements equal to its maximum. Per kernel offset: one comparison, one update of
        the windows already taken (`hit > taken` is `hit & ~taken` in one pass), one
        product written in place."""
        outs = values.shape[2:]
        covered = all(o * k == s for o, k, s in zip(outs, kernel_size, input_shape[2:]))
        # every element is written below when the tiles cover the input (no floor crop)
        grad = (xp.empty if covered else xp.zeros)(input_shape, dtype=g.dtype)
        views, gviews = _tiles(x, kernel_size, outs), _tiles(grad, kernel_size, outs)
        taken = None
        for i, (view, gview) in enumerate(zip(views, gviews)):
            hit = xp.equal(view, values)
            if taken is not None:
                xp.greater(hit, taken, out=hit)
            xp.multiply(g, hit, out=gview)
            if i + 1 < len(views):
                taken = hit if taken is None else xp.logical_or(taken, hit, out=taken)
        return grad

    return {"max_pool": max_pool, "max_pool_backward": max_pool_backward}


def _tiles(x, kernel_size, outs):
    """For windows that tile the input (stride == kernel, no padding, no dilation): one
    strided view per kernel offset, each (N, C, *outs), in window order."""
    return [x[(_ALL, _ALL) + tuple(slice(o, o + m * k, k) for o, m, k in
                                   zip(offset, outs, kernel_size))]
            for offset in kernel_offsets(kernel_size)]


def _tiled(kernel_size, stride, padding, dilation, extra) -> bool:
    return tuple(stride) == tuple(kernel_size) and not any(padding) and not any(extra) \
        and all(d == 1 for d in dilation)


def _lowest(xp, x) -> object:
    """The padding of a max pool: -inf, or an integer dtype's least value (a window of
    only padding never happens; one whose values are all the least picks a real one)."""
    if x.dtype.kind in "iu":
        return xp.iinfo(x.dtype).min
    return False if x.dtype.kind == "b" else -math.inf
