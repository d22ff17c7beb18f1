"""ONNX import converters: neural-network ops (Conv, pooling, normalisations, softmax,
losses, dropout, random numbers).

ember's convolutions and pools are 1-D to 3-D (as `ember.nn.functional`'s); a 1-D ONNX
op runs as a 2-D one of height 1, ONNX's asymmetric or "SAME" paddings become an explicit
`pad` before the op, and higher ranks compose from strided slices (onnx_import_windows).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import ember
from ember.exporters import onnx_import_windows as windows
from ember.exporters.onnx_import_context import ImportContext, ember_dtype
from ember.exporters.onnx_registry import importer

F = ember.nn.functional


def _spatial(ctx: ImportContext, x: Any, kernel: list[int]) -> tuple[list, list, list, list]:
    """(strides, dilations, pads_begin, pads_end) of a conv/pool node, "auto_pad" resolved."""
    n = len(kernel)
    strides = ctx.attr("strides") or [1] * n
    dilations = ctx.attr("dilations") or [1] * n
    pads = ctx.attr("pads") or [0] * (2 * n)
    auto = ctx.attr("auto_pad", "NOTSET")
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        begin, end = [], []
        for size, k, s, d in zip(x.shape[2:], kernel, strides, dilations):
            total = max((math.ceil(size / s) - 1) * s + (k - 1) * d + 1 - size, 0)
            small = total // 2
            begin.append(small if auto == "SAME_UPPER" else total - small)
            end.append(total - begin[-1])
        return strides, dilations, begin, end
    if auto == "VALID":
        return strides, dilations, [0] * n, [0] * n
    return strides, dilations, list(pads[:n]), list(pads[n:])


def _pad_explicit(x: Any, begin: list[int], end: list[int], value: float) -> Any:
    flat = []
    for b, e in zip(reversed(begin), reversed(end)):
        flat += [b, e]
    return F.pad(x, flat, value=value) if any(flat) else x


def _as_2d(x: Any, n: int) -> Any:
    return x.unsqueeze(2) if n == 1 else x


def _from_2d(y: Any, n: int) -> Any:
    return y.squeeze(2) if n == 1 else y


def _lift(values: list[int], n: int, fill: int) -> list[int]:
    return [fill] + list(values) if n == 1 else list(values)


@importer("Conv", since=1)
def _conv(ctx: ImportContext, x: Any, w: Any, b: Any = None) -> Any:
    kernel = ctx.attr("kernel_shape") or list(w.shape[2:])
    strides, dilations, begin, end = _spatial(ctx, x, kernel)
    n = len(kernel)
    if n > 3:
        return windows.conv(x, w, b, strides, dilations, begin, end, ctx.attr("group", 1))
    padding = 0
    if begin == end:
        padding = _lift(begin, n, 0)
    else:
        x = _pad_explicit(x, begin, end, 0.0)
    conv = F.conv3d if n == 3 else F.conv2d
    y = conv(_as_2d(x, n), _as_2d(w, n), b, stride=_lift(strides, n, 1),
                 padding=padding, dilation=_lift(dilations, n, 1),
                 groups=ctx.attr("group", 1))
    return _from_2d(y, n)


@importer("ConvTranspose", since=1)
def _conv_transpose(ctx: ImportContext, x: Any, w: Any, b: Any = None) -> Any:
    kernel = ctx.attr("kernel_shape") or list(w.shape[2:])
    n = len(kernel)
    strides = ctx.attr("strides") or [1] * n
    dilations = ctx.attr("dilations") or [1] * n
    out_pad = ctx.attr("output_padding") or [0] * n
    pads = ctx.attr("pads") or [0] * (2 * n)
    out_shape = ctx.attr("output_shape")
    auto = ctx.attr("auto_pad", "NOTSET")
    full = [(i - 1) * s + (k - 1) * d + 1 + op for i, s, k, d, op in
            zip(x.shape[2:], strides, kernel, dilations, out_pad)]
    if out_shape is not None or auto in ("SAME_UPPER", "SAME_LOWER"):
        # ONNX's rule: total = full - wanted; SAME_UPPER puts the smaller half first
        want = list(out_shape)[-n:] if out_shape is not None else \
            [i * s for i, s in zip(x.shape[2:], strides)]
        begin, end = [], []
        for f, o in zip(full, want):
            total = f - o
            half = total // 2
            first = half if auto == "SAME_UPPER" else total - half
            begin.append(first)
            end.append(total - first)
    else:
        begin, end = list(pads[:n]), list(pads[n:])
    if n > 3:
        y = windows.conv_transpose(x, w, b, strides, dilations, out_pad,
                                   ctx.attr("group", 1))
    else:
        transpose = F.conv_transpose3d if n == 3 else F.conv_transpose2d
        y = _from_2d(transpose(
            _as_2d(x, n), _as_2d(w, n), b, stride=_lift(strides, n, 1), padding=0,
            output_padding=_lift(out_pad, n, 0), groups=ctx.attr("group", 1),
            dilation=_lift(dilations, n, 1)), n)
    for axis, (bg, en) in enumerate(zip(begin, end), start=2):
        if en < 0:  # a wanted output longer than the full one: zeros at the end
            tail = list(y.shape)
            tail[axis] = -en
            y = ember.cat([y, ember.zeros(tail, dtype=y.dtype, device=y.device)], axis)
            en = 0
        if bg or en:
            y = y.narrow(axis, bg, y.shape[axis] - bg - en)
    return y


# -- pooling ---------------------------------------------------------------------------------


@importer("MaxPool", since=1)
def _max_pool(ctx: ImportContext, x: Any) -> Any:
    kernel = ctx.attr("kernel_shape")
    strides, dilations, begin, end = _spatial(ctx, x, kernel)
    n = len(kernel)
    ceil = bool(ctx.attr("ceil_mode", 0))
    if not x.dtype.is_floating_point:  # 8/16-bit integers are exact in float32
        if x.dtype.name not in ("uint8", "int8", "int16"):
            raise ctx.fail(f"MaxPool of {x.dtype} is not supported", NotImplementedError)
        out = _max_pool(ctx, x.float())
        return out.to(x.dtype) if not isinstance(out, tuple) else \
            (out[0].to(x.dtype), out[1])
    symmetric = begin == end and all(p <= k // 2 for p, k in zip(begin, kernel))
    if n > 3 and not ctx.wants(1):
        return windows.max_pool(x, kernel, strides, dilations, begin, end, ceil)
    if n > 3:
        raise ctx.fail(f"indices of a {n}-D MaxPool are not supported", NotImplementedError)
    padding = _lift(begin, n, 0) if symmetric else 0
    if not symmetric:
        x = _pad_explicit(x, begin, end, -math.inf)
    xs = _as_2d(x, n)
    want_idx = ctx.wants(1)
    pool = F.max_pool3d if n == 3 else F.max_pool2d
    out = pool(xs, _lift(kernel, n, 1), _lift(strides, n, 1), padding,
                       _lift(dilations, n, 1), ceil_mode=ceil, return_indices=want_idx)
    if not want_idx:
        return _from_2d(out, n)
    y, idx = out
    if not symmetric:
        raise ctx.fail("indices of a MaxPool with asymmetric pads are not supported",
                       NotImplementedError)
    # ember's indices are flat within each (H, W) plane; ONNX's are flat over the tensor
    plane = int(np.prod(x.shape[2:]))
    if ctx.attr("storage_order", 0) == 1 and n == 2:
        h, w = x.shape[2], x.shape[3]
        idx = (idx % w) * h + idx // w
    nc = x.shape[0] * x.shape[1]
    base = (ember.arange(nc, device=idx.device) * plane).reshape(
        [x.shape[0], x.shape[1]] + [1] * (idx.ndim - 2))
    return _from_2d(y, n), _from_2d(idx + base, n)


@importer("AveragePool", since=1)
def _avg_pool(ctx: ImportContext, x: Any) -> Any:
    kernel = ctx.attr("kernel_shape")
    strides, dilations, begin, end = _spatial(ctx, x, kernel)
    n = len(kernel)
    ceil = bool(ctx.attr("ceil_mode", 0))
    include = bool(ctx.attr("count_include_pad", 0))
    if n > 3 or any(d != 1 for d in dilations):
        return windows.avg_pool(x, kernel, strides, dilations, begin, end, ceil, include)
    symmetric = begin == end and all(p <= k // 2 for p, k in zip(begin, kernel))
    k2, s2 = _lift(kernel, n, 1), _lift(strides, n, 1)
    pool = F.avg_pool3d if n == 3 else F.avg_pool2d
    if symmetric:
        y = pool(_as_2d(x, n), k2, s2, _lift(begin, n, 0), ceil_mode=ceil,
                 count_include_pad=include)
        return _from_2d(y, n)
    xp = _as_2d(_pad_explicit(x, begin, end, 0.0), n)
    y = pool(xp, k2, s2, 0, ceil_mode=ceil)
    if not include:  # divide by the count of real (unpadded) elements per window
        ones = _as_2d(_pad_explicit(ember.ones_like(x), begin, end, 0.0), n)
        y = y / pool(ones, k2, s2, 0, ceil_mode=ceil)
    return _from_2d(y, n)


@importer("GlobalAveragePool", since=1)
def _global_avg(ctx: ImportContext, x: Any) -> Any:
    return x.mean(dim=list(range(2, x.ndim)), keepdim=True)


@importer("GlobalMaxPool", since=1)
def _global_max(ctx: ImportContext, x: Any) -> Any:
    return x.amax(dim=list(range(2, x.ndim)), keepdim=True)


# -- normalisation ---------------------------------------------------------------------------

def _channel(t: Any, ndim: int) -> Any:
    return t.reshape([1, -1] + [1] * (ndim - 2))


@importer("BatchNormalization", since=1)
def _batch_norm(ctx: ImportContext, x: Any, scale: Any, bias: Any, mean: Any, var: Any
                ) -> Any:
    eps = ctx.attr("epsilon", 1e-5)
    if ctx.attr("training_mode", 0):
        dims = [0] + list(range(2, x.ndim))
        bmean = x.mean(dim=dims)
        bvar = ((x - _channel(bmean, x.ndim)) ** 2).mean(dim=dims)
        y = (x - _channel(bmean, x.ndim)) / ember.sqrt(_channel(bvar, x.ndim) + eps)
        y = y * _channel(scale, x.ndim) + _channel(bias, x.ndim)
        m = ctx.attr("momentum", 0.9)
        return y, mean * m + bmean * (1 - m), var * m + bvar * (1 - m)
    inv = scale / ember.sqrt(var + eps)
    return x * _channel(inv, x.ndim) + _channel(bias - mean * inv, x.ndim)


@importer("InstanceNormalization", since=6)
def _instance_norm(ctx: ImportContext, x: Any, scale: Any, bias: Any) -> Any:
    return F.instance_norm(x, weight=scale, bias=bias, eps=ctx.attr("epsilon", 1e-5))


@importer("LayerNormalization", since=17)
def _layer_norm(ctx: ImportContext, x: Any, scale: Any, bias: Any = None) -> Any:
    axis = ctx.attr("axis", -1) % x.ndim
    eps = ctx.attr("epsilon", 1e-5)
    dims = list(range(axis, x.ndim))
    if not ctx.wants(1) and not ctx.wants(2) and list(scale.shape) == list(x.shape[axis:]):
        return F.layer_norm(x, list(x.shape[axis:]), scale, bias, eps)
    mean = x.mean(dim=dims, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=dims, keepdim=True)
    inv = 1 / ember.sqrt(var + eps)
    y = (x - mean) * inv * scale
    if bias is not None:
        y = y + bias
    return y, mean, inv


@importer("GroupNormalization", since=18)
def _group_norm(ctx: ImportContext, x: Any, scale: Any, bias: Any) -> Any:
    groups = ctx.attr("num_groups")
    eps = ctx.attr("epsilon", 1e-5)
    n, c = x.shape[0], x.shape[1]
    xg = x.reshape(n, groups, -1)
    mean = xg.mean(dim=2, keepdim=True)
    var = ((xg - mean) ** 2).mean(dim=2, keepdim=True)
    y = ((xg - mean) / ember.sqrt(var + eps)).reshape(x.shape)
    if ctx.opset < 21 and scale.shape[0] == groups and groups != c:  # per-group (opset 18)
        scale = scale.repeat_interleave(c // groups) if hasattr(scale, "repeat_interleave") \
            else scale.reshape(groups, 1).repeat(1, c // groups).reshape(-1)
        bias = bias.reshape(groups, 1).repeat(1, c // groups).reshape(-1)
    return y * _channel(scale, x.ndim) + _channel(bias, x.ndim)


@importer("LpNormalization", since=1)
def _lp_norm(ctx: ImportContext, x: Any) -> Any:
    axis, p = ctx.attr("axis", -1), ctx.attr("p", 2)
    norm = x.abs().sum(dim=axis, keepdim=True) if p == 1 else \
        (x * x).sum(dim=axis, keepdim=True).sqrt()
    safe = ember.where(norm == 0, ember.ones_like(norm), norm)
    return ember.where(norm == 0, ember.zeros_like(x), x / safe)  # 0 where the norm is


@importer("MeanVarianceNormalization", since=9)
def _mvn(ctx: ImportContext, x: Any) -> Any:
    axes = ctx.attr("axes", [0, 2, 3])
    mean = x.mean(dim=axes, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=axes, keepdim=True)
    return (x - mean) / ember.sqrt(var + 1e-9)


# -- softmax family --------------------------------------------------------------------------

def _softmax_like(fn: Any) -> Any:
    def before_13(ctx: ImportContext, x: Any) -> Any:
        axis = ctx.attr("axis", 1) % max(x.ndim, 1)
        shape = list(x.shape)
        lead = int(np.prod(shape[:axis], dtype=np.int64))
        return fn(x.reshape(lead, -1), 1).reshape(shape)

    def since_13(ctx: ImportContext, x: Any) -> Any:
        return fn(x, ctx.attr("axis", -1) % max(x.ndim, 1))
    return before_13, since_13


def _hardmax(x: Any, dim: int) -> Any:
    idx = x.argmax(dim=dim, keepdim=True)
    hot = ember.arange(x.shape[dim], device=x.device).reshape(
        [-1 if i == dim else 1 for i in range(x.ndim)]) == idx
    return hot.to(x.dtype)


for _name, _fn in {"Softmax": lambda x, d: F.softmax(x, d),
                   "LogSoftmax": lambda x, d: F.log_softmax(x, d),
                   "Hardmax": _hardmax}.items():
    _old, _new = _softmax_like(_fn)
    importer(_name, since=1)(_old)
    importer(_name, since=13)(_new)


# -- losses ----------------------------------------------------------------------------------


@importer("NegativeLogLikelihoodLoss", since=12)
def _nll(ctx: ImportContext, x: Any, target: Any, weight: Any = None) -> Any:
    ignore = ctx.attr("ignore_index")
    return F.nll_loss(x, target.to(ember.int64), weight=weight,
                      ignore_index=-100 if ignore is None else ignore,
                      reduction=ctx.attr("reduction", "mean"))


@importer("SoftmaxCrossEntropyLoss", since=12)
def _softmax_ce(ctx: ImportContext, x: Any, target: Any, weight: Any = None) -> Any:
    logp = F.log_softmax(x, 1)
    ignore = ctx.attr("ignore_index")
    loss = F.nll_loss(logp, target.to(ember.int64), weight=weight,
                      ignore_index=-100 if ignore is None else ignore,
                      reduction=ctx.attr("reduction", "mean"))
    return (loss, logp) if ctx.wants(1) else loss


# -- dropout and random numbers --------------------------------------------------------------


@importer("Dropout", since=1)
def _dropout(ctx: ImportContext, x: Any, ratio: Any = None, training: Any = None) -> Any:
    if training is not None and bool(training.reshape(-1)[0].item()):
        p = float(ctx.scalar(ratio, 0.5))
        keep = ember.rand(tuple(x.shape), device=x.device) >= p
        y = ember.where(keep, x / (1 - p), ember.zeros_like(x)) if p < 1 else x * 0
        return (y, keep) if ctx.wants(1) else y
    if ctx.wants(1):
        return x, ember.ones(tuple(x.shape), dtype=ember.bool, device=x.device)
    return x


def _random_dtype(ctx: ImportContext, default: Any) -> Any:
    return ember_dtype(ctx.attr("dtype"), "the dtype of a random op") \
        if "dtype" in ctx.attrs else default


@importer("RandomUniform", since=1)
def _random_uniform(ctx: ImportContext) -> Any:
    low, high = ctx.attr("low", 0.0), ctx.attr("high", 1.0)
    u = ember.rand(tuple(ctx.attr("shape")), device=ctx.device)
    return (u * (high - low) + low).to(_random_dtype(ctx, ember.float32))


@importer("RandomNormal", since=1)
def _random_normal(ctx: ImportContext) -> Any:
    z = ember.randn(tuple(ctx.attr("shape")), device=ctx.device)
    return (z * ctx.attr("scale", 1.0) + ctx.attr("mean", 0.0)).to(
        _random_dtype(ctx, ember.float32))


@importer("RandomUniformLike", since=1)
def _random_uniform_like(ctx: ImportContext, x: Any) -> Any:
    low, high = ctx.attr("low", 0.0), ctx.attr("high", 1.0)
    u = ember.rand(tuple(x.shape), device=x.device)
    return (u * (high - low) + low).to(_random_dtype(ctx, x.dtype))


@importer("RandomNormalLike", since=1)
def _random_normal_like(ctx: ImportContext, x: Any) -> Any:
    z = ember.randn(tuple(x.shape), device=x.device)
    return (z * ctx.attr("scale", 1.0) + ctx.attr("mean", 0.0)).to(
        _random_dtype(ctx, x.dtype))


# -- rearrangements of channels --------------------------------------------------------------


@importer("DepthToSpace", since=1)
def _depth_to_space(ctx: ImportContext, x: Any) -> Any:
    b = ctx.attr("blocksize")
    n, c, h, w = x.shape
    if ctx.attr("mode", "DCR") == "DCR":
        y = x.reshape(n, b, b, c // (b * b), h, w).permute(0, 3, 4, 1, 5, 2)
    else:
        y = x.reshape(n, c // (b * b), b, b, h, w).permute(0, 1, 4, 2, 5, 3)
    return y.reshape(n, c // (b * b), h * b, w * b)


@importer("SpaceToDepth", since=1)
def _space_to_depth(ctx: ImportContext, x: Any) -> Any:
    b = ctx.attr("blocksize")
    n, c, h, w = x.shape
    y = x.reshape(n, c, h // b, b, w // b, b)
    if ctx.attr("mode", "DCR") == "CRD":
        y = y.permute(0, 1, 3, 5, 2, 4)
    else:
        y = y.permute(0, 3, 5, 1, 2, 4)
    return y.reshape(n, c * b * b, h // b, w // b)


@importer("TopK", since=10)
def _topk(ctx: ImportContext, x: Any, k: Any) -> Any:
    """k rounds of arg-max (ember has no sort): ties go to the lower index, as ONNX's."""
    kk = int(ctx.scalar(k))
    axis = ctx.attr("axis", -1) % x.ndim
    largest = bool(ctx.attr("largest", 1))
    work = x.detach().to(ember.float64)
    fill = -math.inf if largest else math.inf
    picks = []
    for _ in range(kk):
        idx = (work.argmax if largest else work.argmin)(dim=axis, keepdim=True)
        picks.append(idx)
        work = ember.scatter(work, axis, idx, value=fill)
    if not picks:
        shape = list(x.shape)
        shape[axis] = 0
        return ember.zeros(shape, dtype=x.dtype), ember.zeros(shape, dtype=ember.int64)
    indices = ember.cat(picks, axis)
    return ember.gather(x, axis, indices), indices


@importer("RMSNormalization", since=23)
def _rms_norm(ctx: ImportContext, x: Any, scale: Any) -> Any:
    axis = ctx.attr("axis", -1) % x.ndim
    eps = ctx.attr("epsilon", 1e-5)
    dtype = ember_dtype(ctx.attr("stash_type", 1), "RMSNormalization's stash_type")
    xs = x.to(dtype)
    ms = (xs * xs).mean(dim=list(range(axis, x.ndim)), keepdim=True)
    return (xs / ember.sqrt(ms + eps)).to(x.dtype) * scale


@importer("LRN", since=1)
def _lrn(ctx: ImportContext, x: Any) -> Any:
    size = ctx.attr("size")
    alpha, beta, bias = ctx.attr("alpha", 1e-4), ctx.attr("beta", 0.75), ctx.attr("bias", 1.0)
    sq = (x * x).unsqueeze(1)  # (N, 1, C, ...): pool the channels as a spatial dim
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    flat = sq.reshape(sq.shape[0], 1, sq.shape[2], -1)
    summed = F.avg_pool2d(F.pad(flat, [0, 0, lo, hi]), (size, 1), 1) * size
    return x / (bias + alpha / size * summed.reshape(x.shape)) ** beta


@importer("CenterCropPad", since=18)
def _center_crop_pad(ctx: ImportContext, x: Any, shape: Any) -> Any:
    sizes = ctx.ints(shape)
    axes = ctx.attr("axes") or list(range(x.ndim))
    for a, want in zip([a % x.ndim for a in axes], sizes):
        have = x.shape[a]
        if want < have:
            x = x.narrow(a, (have - want) // 2, want)
        elif want > have:
            before = (want - have) // 2
            zeros = list(x.shape)
            zeros[a] = before
            after = list(x.shape)
            after[a] = want - have - before
            x = ember.cat([ember.zeros(zeros, dtype=x.dtype, device=x.device), x,
                           ember.zeros(after, dtype=x.dtype, device=x.device)], a)
    return x


@importer("LpPool", since=1)
def _lp_pool(ctx: ImportContext, x: Any) -> Any:
    """(sum over the window of |x|^p)^(1/p): an average pool of |x|^p, times the window."""
    kernel = ctx.attr("kernel_shape")
    p = ctx.attr("p", 2)
    strides, dilations, begin, end = _spatial(ctx, x, kernel)
    n = len(kernel)
    if n > 2 or any(d != 1 for d in dilations):
        total = windows.sum_pool(x.abs() ** p, kernel, strides, dilations, begin, end,
                                 bool(ctx.attr("ceil_mode", 0)))
        return total ** (1.0 / p)
    powered = _as_2d(_pad_explicit(x.abs() ** p, begin, end, 0.0), n)
    avg = F.avg_pool2d(powered, _lift(kernel, n, 1), _lift(strides, n, 1), 0,
                       ceil_mode=bool(ctx.attr("ceil_mode", 0)))
    return _from_2d(avg * int(np.prod(kernel)), n) ** (1.0 / p)


@importer("Col2Im", since=18)
def _col2im(ctx: ImportContext, x: Any, image_shape: Any, block_shape: Any) -> Any:
    size, block = ctx.ints(image_shape), ctx.ints(block_shape)
    n = len(size)
    pads = ctx.attr("pads") or [0] * (2 * n)
    if n != 2 or pads[:2] != pads[2:]:
        return windows.col2im(x, size, block, ctx.attr("strides") or [1] * n,
                              ctx.attr("dilations") or [1] * n, pads[:n], pads[n:])
    return F.fold(x, size, block, dilation=ctx.attr("dilations") or 1,
                  padding=pads[:2], stride=ctx.attr("strides") or 1)


@importer("MaxUnpool", since=9)
def _max_unpool(ctx: ImportContext, x: Any, indices: Any, output_shape: Any = None) -> Any:
    kernel = ctx.attr("kernel_shape")
    strides = ctx.attr("strides") or [1] * len(kernel)
    pads = ctx.attr("pads") or [0] * (2 * len(kernel))
    spatial = [(i - 1) * s + k - pads[j] - pads[j + len(kernel)]
               for j, (i, s, k) in enumerate(zip(x.shape[2:], strides, kernel))]
    shape = list(x.shape[:2]) + spatial  # where the indices point (as onnx's reference)
    flat = ember.zeros(int(np.prod(shape)), dtype=x.dtype, device=x.device)
    flat = ember.scatter(flat, 0, indices.reshape(-1).to(ember.int64), x.reshape(-1))
    y = flat.reshape(shape)
    if output_shape is not None:  # a larger output: the unpooled values at its start
        for axis, want in enumerate(ctx.ints(output_shape)):
            if want > y.shape[axis]:
                tail = list(y.shape)
                tail[axis] = want - y.shape[axis]
                y = ember.cat([y, ember.zeros(tail, dtype=y.dtype, device=y.device)], axis)
    return y
