"""ONNX import converters: GridSample and AffineGrid, for 2-D and 3-D images.

GridSample follows onnx's reference step by step: the grid's normalised coordinates are
denormalised, out-of-range ones clamped or reflected by `padding_mode`, then every tap
of the interpolation (1 for nearest, 2 per axis for linear, 4 for cubic) is gathered
from the flattened image and weighted. All in ember ops: differentiable in the image and
in the grid, on every device.
"""

from __future__ import annotations

import itertools
from typing import Any

import ember
from ember.exporters.onnx_import_context import ImportContext
from ember.exporters.onnx_registry import importer


def _reflect(x: Any, lo: float, hi: float) -> Any:
    span = hi - lo
    below, above = lo - x, x - hi
    nb, na = ember.floor(below / span), ember.floor(above / span)
    rb, ra = below - nb * span, above - na * span
    even_b, even_a = ember.remainder(nb, 2) == 0, ember.remainder(na, 2) == 0
    from_below = ember.where(even_b, lo + rb, hi - rb)
    from_above = ember.where(even_a, hi - ra, lo + ra)
    return ember.where(x < lo, from_below, ember.where(x > hi, from_above, x))


def _cubic(t: Any) -> list[Any]:
    a = -0.75
    t1, t2 = t + 1, 1 - t
    t3 = 2 - t
    return [((a * t1 - 5 * a) * t1 + 8 * a) * t1 - 4 * a,
            ((a + 2) * t - (a + 3)) * t * t + 1,
            ((a + 2) * t2 - (a + 3)) * t2 * t2 + 1,
            ((a * t3 - 5 * a) * t3 + 8 * a) * t3 - 4 * a]


def _taps(x: Any, mode: str) -> list[tuple[Any, Any]]:
    """(integer index, weight) of each tap along one axis."""
    if mode == "nearest":
        return [(x, None)]
    base = ember.floor(x)
    t = x - base
    if mode == "linear":
        return [(base, 1 - t), (base + 1, t)]
    return [(base + (k - 1), w) for k, w in enumerate(_cubic(t))]


@importer("GridSample", since=16)
def _grid_sample(ctx: ImportContext, image: Any, grid: Any) -> Any:
    mode = {"bilinear": "linear", "bicubic": "cubic"}.get(ctx.attr("mode", "linear"),
                                                         ctx.attr("mode", "linear"))
    if ctx.opset < 20 and "mode" not in ctx.attrs:
        mode = "linear"
    padding = ctx.attr("padding_mode", "zeros")
    align = bool(ctx.attr("align_corners", 0))
    n, c = image.shape[0], image.shape[1]
    dims = list(image.shape[2:])
    out = list(grid.shape[1:-1])
    points = 1
    for s in out:
        points *= s
    g = grid.reshape(n, points, len(dims)).to(ember.float32)
    taps_per_axis = []
    for i, d in enumerate(dims):
        v = g[..., len(dims) - 1 - i]  # the grid lists x (the last axis) first
        x = (v + 1) / 2 * (d - 1) if align else ((v + 1) * d - 1) / 2
        if mode == "nearest":
            x = ember.round(x)
        lo, hi = (0.0, d - 1.0) if align else (-0.5, d - 0.5)
        if padding == "border":
            x = ember.clamp(x, 0, d - 1)
        elif padding == "reflection":
            x = _reflect(x, lo, hi)
        axis_taps = []
        for idx, w in _taps(x, mode):
            valid = None
            if padding == "zeros":
                valid = ember.logical_and(idx >= 0, idx <= d - 1)
                idx = ember.clamp(idx, 0, d - 1)
            elif padding == "border":
                idx = ember.clamp(idx, 0, d - 1)
            else:
                idx = ember.clamp(ember.trunc(_reflect(idx, lo, hi)), 0, d - 1)
            axis_taps.append((idx.to(ember.int64), w, valid))
        taps_per_axis.append(axis_taps)
    flat = image.reshape(n, c, -1)
    strides = [1] * len(dims)
    for i in range(len(dims) - 2, -1, -1):
        strides[i] = strides[i + 1] * dims[i + 1]
    y = None
    for combo in itertools.product(*taps_per_axis):
        index = sum(t[0] * s for t, s in zip(combo, strides))
        vals = ember.gather(flat, 2, index.unsqueeze(1).expand(n, c, points))
        weight = None
        for _, w, valid in combo:
            if w is not None:
                weight = w if weight is None else weight * w
            if valid is not None:
                mask = valid.to(vals.dtype)
                weight = mask if weight is None else weight * mask
        term = vals * weight.unsqueeze(1).to(vals.dtype) if weight is not None else vals
        y = term if y is None else y + term
    return y.reshape([n, c] + out).to(image.dtype)


@importer("AffineGrid", since=20)
def _affine_grid(ctx: ImportContext, theta: Any, size: Any) -> Any:
    shape = ctx.ints(size)
    spatial = shape[2:]
    align = bool(ctx.attr("align_corners", 0))
    axes = []
    for d in reversed(spatial):  # x (the last axis) first, as a grid lists them
        k = ember.arange(d, dtype=ember.float64, device=theta.device)
        axes.append(k * 2 / (d - 1) - 1 if align and d > 1 else
                    (k * 2 + 1) / d - 1 if not align else k * 0)
    grids = []
    for i, a in enumerate(axes):  # broadcast axis i (reversed order) over the others
        view = [1] * len(spatial)
        view[len(spatial) - 1 - i] = -1
        grids.append(ember.broadcast_to(a.reshape(view), spatial))
    ones = ember.ones(spatial, dtype=ember.float64, device=theta.device)
    base = ember.stack(grids + [ones], -1).reshape(-1, len(spatial) + 1)
    out = ember.matmul(base.to(theta.dtype), theta.transpose(1, 2))
    return out.reshape([shape[0]] + spatial + [len(spatial)])


def _roi_taps(box: list[float], scale: float, half: bool, size: tuple[int, int],
              pooled: tuple[int, int], ratio: int) -> tuple[Any, Any, int]:
    """The 4 bilinear taps (flat positions, weights) of every sample of every bin of one
    region, as onnx's reference computes them: (bins, samples, 4) each, and the count."""
    import numpy as np

    height, width = size
    ph_n, pw_n = pooled
    offset = 0.5 if half else 0.0
    x0, y0, x1, y1 = (v * scale - offset for v in box)
    rw, rh = x1 - x0, y1 - y0
    if not half:
        rw, rh = max(rw, 1.0), max(rh, 1.0)
    bh, bw = rh / ph_n, rw / pw_n
    gh = ratio if ratio > 0 else int(np.ceil(rh / ph_n))
    gw = ratio if ratio > 0 else int(np.ceil(rw / pw_n))
    pos = np.zeros((ph_n * pw_n, gh * gw, 4), np.int64)
    wts = np.zeros((ph_n * pw_n, gh * gw, 4))
    for ph in range(ph_n):
        for pw in range(pw_n):
            for iy in range(gh):
                y = y0 + ph * bh + (iy + 0.5) * bh / gh
                for ix in range(gw):
                    x = x0 + pw * bw + (ix + 0.5) * bw / gw
                    if y < -1.0 or y > height or x < -1.0 or x > width:
                        continue
                    y, x = max(y, 0.0), max(x, 0.0)
                    yl, xl = int(y), int(x)
                    if yl >= height - 1:
                        yh = yl = height - 1
                        y = yl
                    else:
                        yh = yl + 1
                    if xl >= width - 1:
                        xh = xl = width - 1
                        x = xl
                    else:
                        xh = xl + 1
                    ly, lx = y - yl, x - xl
                    b, s = ph * pw_n + pw, iy * gw + ix
                    pos[b, s] = [yl * width + xl, yl * width + xh, yh * width + xl,
                                 yh * width + xh]
                    wts[b, s] = [(1 - ly) * (1 - lx), (1 - ly) * lx, ly * (1 - lx), ly * lx]
    return pos, wts, max(gh * gw, 1)


@importer("RoiAlign", since=10)
def _roi_align(ctx: ImportContext, x: Any, rois: Any, batch: Any) -> Any:
    """Each region's bins average (or max) bilinear samples of the feature map. The
    sample positions depend on the regions' values and are computed on the host; the
    features are gathered with ember ops (differentiable in `x`)."""
    n_c, height, width = x.shape[1], x.shape[2], x.shape[3]
    pooled = (ctx.attr("output_height", 1), ctx.attr("output_width", 1))
    half = ctx.attr("coordinate_transformation_mode",
                    "half_pixel" if ctx.opset >= 16 else "output_half_pixel") == "half_pixel"
    mode = ctx.attr("mode", "avg")
    flat = x.reshape(x.shape[0], n_c, height * width)
    outs = []
    for box, b in zip(rois.tolist(), ctx.ints(batch)):
        pos, wts, count = _roi_taps(box, ctx.attr("spatial_scale", 1.0), half,
                                    (height, width), pooled, ctx.attr("sampling_ratio", 0))
        index = ember.tensor(pos.reshape(-1).tolist(), dtype=ember.int64, device=x.device)
        vals = ember.index_select(flat[b], 1, index).reshape((n_c,) + pos.shape)
        weighted = vals * ember.tensor(wts.tolist(), dtype=x.dtype, device=x.device)
        if mode == "avg":
            pooled_vals = weighted.sum(dim=3).sum(dim=2) / count
        else:
            pooled_vals = weighted.amax(dim=3).amax(dim=2)
        outs.append(pooled_vals.reshape(n_c, *pooled))
    if not outs:
        return ember.zeros(0, n_c, *pooled, dtype=x.dtype, device=x.device)
    return ember.stack(outs, 0)


def _bilinear_zeros(flat: Any, py: Any, px: Any, height: int, width: int) -> Any:
    """Samples of `flat` (N, C, H*W) at pixel coordinates py, px (N, Q): bilinear, zero
    outside the image (GridSample's zeros padding with align_corners=1). (N, C, Q)."""
    n, c = flat.shape[0], flat.shape[1]
    y0, x0 = ember.floor(py), ember.floor(px)
    out = None
    for dy, dx in itertools.product((0, 1), (0, 1)):
        yi, xi = y0 + dy, x0 + dx
        wy = 1 - (py - y0) if dy == 0 else py - y0
        wx = 1 - (px - x0) if dx == 0 else px - x0
        valid = ember.logical_and(ember.logical_and(yi >= 0, yi <= height - 1),
                                  ember.logical_and(xi >= 0, xi <= width - 1))
        index = (ember.clamp(yi, 0, height - 1) * width +
                 ember.clamp(xi, 0, width - 1)).to(ember.int64)
        vals = ember.gather(flat, 2, index.unsqueeze(1).expand(n, c, index.shape[1]))
        term = vals * (wy * wx * valid.to(wy.dtype)).unsqueeze(1).to(vals.dtype)
        out = term if out is None else out + term
    return out


@importer("DeformConv", since=19)
def _deform_conv(ctx: ImportContext, x: Any, w: Any, offset: Any, bias: Any = None,
                 mask: Any = None) -> Any:
    """2-D deformable convolution: each kernel tap samples the input (bilinearly) at its
    place shifted by the learned offset, scaled by the mask, then a grouped matmul."""
    if x.ndim != 4:
        raise ctx.fail(f"{x.ndim - 2}-D inputs are not supported (2-D are)",
                       NotImplementedError)
    n, ic, height, width = x.shape
    oc = w.shape[0]
    kh, kw = ctx.attr("kernel_shape") or list(w.shape[2:])
    sh, sw = ctx.attr("strides") or [1, 1]
    dh, dw = ctx.attr("dilations") or [1, 1]
    pads = ctx.attr("pads") or [0, 0, 0, 0]
    groups, ogroups = ctx.attr("group", 1), ctx.attr("offset_group", 1)
    oh, ow = offset.shape[2], offset.shape[3]
    k, p = kh * kw, oh * ow
    off = offset.reshape(n, ogroups, kh, kw, 2, oh, ow)
    msk = mask.reshape(n, ogroups, k, p) if mask is not None else None
    base_y = (ember.arange(kh, device=x.device) * dh).reshape(kh, 1, 1, 1) + \
        (ember.arange(oh, device=x.device) * sh - pads[0]).reshape(1, 1, oh, 1)
    base_x = (ember.arange(kw, device=x.device) * dw).reshape(1, kw, 1, 1) + \
        (ember.arange(ow, device=x.device) * sw - pads[1]).reshape(1, 1, 1, ow)
    per_og = ic // ogroups
    flat = x.reshape(n, ic, height * width)
    cols = []
    for g in range(ogroups):
        py = (base_y.to(x.dtype) + off[:, g, :, :, 0]).reshape(n, k * p)
        px = (base_x.to(x.dtype) + off[:, g, :, :, 1]).reshape(n, k * p)
        samples = _bilinear_zeros(flat.narrow(1, g * per_og, per_og), py, px, height,
                                  width).reshape(n, per_og, k, p)
        if msk is not None:
            samples = samples * msk[:, g].unsqueeze(1)
        cols.append(samples)
    cols = ember.cat(cols, 1) if ogroups > 1 else cols[0]  # (N, IC, K, P)
    icg, ocg = ic // groups, oc // groups
    outs = []
    for g in range(groups):
        cg = cols.narrow(1, g * icg, icg).reshape(n, icg * k, p)
        wg = w.narrow(0, g * ocg, ocg).reshape(ocg, icg * k)
        outs.append(ember.matmul(wg, cg))
    y = (ember.cat(outs, 1) if groups > 1 else outs[0]).reshape(n, oc, oh, ow)
    if bias is not None:
        y = y + bias.reshape(1, -1, 1, 1)
    return y
