"""Neural-network ops in core: linear, convolution, pooling, padding and layer norm.

Convolution is im2col + one matmul (ARCHITECTURE.md's default decomposition), pooling is
im2col + a reduction; both primitives have CPU kernels and a backward (col2im / im2col).
`linear` and `layer_norm` are composites with explicit backward formulas, and a backend may
supply a fused kernel under their names. `ember.nn.functional` calls these.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ember.core import autograd as ag
from ember.core import dtype as dt
from ember.core import functions as F
from ember.core import tracing
from ember.core.autograd import record
from ember.core.dispatch import run
from ember.core.ops import conv_out_size, fmt_shape
from ember.core.tensor import Tensor

_state = ag._state


def _tuple(value: Any, n: int, name: str) -> tuple[int, ...]:
    if isinstance(value, int):
        return (value,) * n
    value = tuple(int(v) for v in value)
    if len(value) == 1:
        return value * n
    if len(value) != n:
        raise ValueError(f"expected {name} to be an int or a tuple of {n} ints, got {value}")
    return value


# -- im2col / col2im (F.unfold / F.fold) ----------------------------------------------


@tracing.composite("im2col")
def im2col(input: Tensor, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
           stride: Any = 1) -> Tensor:
    """Sliding local blocks of a batched (N, C, *spatial) tensor, as (N, C*prod(k), L)."""
    n = input.ndim - 2
    attrs = dict(kernel_size=_tuple(kernel_size, n, "kernel_size"),
                 dilation=_tuple(dilation, n, "dilation"),
                 padding=_tuple(padding, n, "padding"), stride=_tuple(stride, n, "stride"))
    out = run("im2col", input, **attrs)
    if _state.enabled and input._requires_grad:
        record("Im2ColBackward0", _bw_im2col, (input,), out,
               size=tuple(input.shape[2:]), attrs=attrs)
    return out


def _bw_im2col(node, g):
    return col2im(g, node.attrs["size"], **node.attrs["attrs"])


@tracing.composite("col2im")
def col2im(input: Tensor, output_size: Any, kernel_size: Any, dilation: Any = 1,
           padding: Any = 0, stride: Any = 1) -> Tensor:
    """Sum sliding local blocks (N, C*prod(k), L) back into (N, C, *output_size)."""
    n = len(output_size) if not isinstance(output_size, int) else 2
    attrs = dict(kernel_size=_tuple(kernel_size, n, "kernel_size"),
                 dilation=_tuple(dilation, n, "dilation"),
                 padding=_tuple(padding, n, "padding"), stride=_tuple(stride, n, "stride"))
    size = _tuple(output_size, n, "output_size")
    out = run("col2im", input, output_size=size, **attrs)
    if _state.enabled and input._requires_grad:
        record("Col2ImBackward0", _bw_col2im, (input,), out, attrs=attrs)
    return out


def _bw_col2im(node, g):
    return im2col(g, **node.attrs["attrs"])


# -- padding --------------------------------------------------------------------------


@tracing.composite("constant_pad_nd")
def constant_pad_nd(input: Tensor, pad: Sequence[int], value: Any = 0.0) -> Tensor:
    """Pad with a constant; `pad` lists (left, right) pairs from the last dimension
    backwards, as `F.pad` does. Negative amounts crop."""
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2 or len(pad) // 2 > input.ndim:
        raise RuntimeError(f"constant_pad_nd: padding length {len(pad)} must be even and at "
                           f"most twice the number of dimensions ({input.ndim})")
    pairs = [(0, 0)] * input.ndim
    for i in range(len(pad) // 2):
        pairs[input.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    if any(a < 0 or b < 0 for a, b in pairs):  # crop first, then pad what is positive
        key = tuple(slice(-a if a < 0 else 0, s + b if b < 0 else s)
                    for (a, b), s in zip(pairs, input.shape))
        input = F.getitem(input, key)
        pairs = [(max(a, 0), max(b, 0)) for a, b in pairs]
    pairs = tuple(pairs)
    if not any(a or b for a, b in pairs):
        return input
    out = run("constant_pad", input, pad=pairs, value=value)
    if _state.enabled and input._requires_grad:
        record("ConstantPadNdBackward0", _bw_pad, (input,), out, pairs=pairs,
               shape=tuple(input.shape))
    return out


def _bw_pad(node, g):
    key = tuple(slice(a, a + s) for (a, _), s in zip(node.attrs["pairs"], node.attrs["shape"]))
    return F.getitem(g, key)


# -- linear ---------------------------------------------------------------------------


@tracing.composite("linear")
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """`input @ weight.T + bias`."""
    if weight.ndim not in (1, 2):
        raise RuntimeError(f"linear: weight must be 1-D or 2-D, got shape "
                           f"{fmt_shape(tuple(weight.shape))}")
    if input.shape[-1] != weight.shape[-1]:
        raise RuntimeError(f"linear: mat1 and mat2 shapes cannot be multiplied "
                           f"({math.prod(input.shape[:-1])}x{input.shape[-1]} and "
                           f"{weight.shape[-1]}x{weight.shape[0] if weight.ndim == 2 else 1})")
    kernel = input._backend.kernels.get("linear")
    if kernel is not None and tracing.active is None and weight.ndim == 2 and \
            input._device is weight._device and input._dtype is weight._dtype and \
            (bias is None or (bias._device is input._device and bias._dtype is input._dtype)):
        buf = kernel(input._data, weight._data, None if bias is None else bias._data)
        out = Tensor._make(buf, input._dtype, input._device, input._backend)
    else:
        with ag.no_grad():
            out = F.matmul(input, F.t(weight) if weight.ndim == 2 else weight)
            if bias is not None:
                out = F.add(out, bias)
    if _state.enabled and (input._requires_grad or weight._requires_grad or
                           (bias is not None and bias._requires_grad)):
        record("AddmmBackward0", _bw_linear, (input, weight, bias), out,
               saved=(input, weight))
    return out


def _bw_linear(node, g):
    x, w = node.saved_tensors
    fused = g._backend.kernels.get("linear_backward")
    if fused is not None and not _state.enabled and w.ndim == 2 and \
            x._dtype is w._dtype is g._dtype and x._device is g._device is w._device:
        grads = fused(x._data, w._data, g._data, node.needs)
        return tuple(None if buf is None else Tensor._make(buf, g._dtype, g._device,
                                                           g._backend) for buf in grads)
    gx = gw = gb = None
    if w.ndim == 1:
        g = F.unsqueeze(g, -1)
        w2 = F.unsqueeze(w, 0)
    else:
        w2 = w
    if node.needs[0]:
        gx = F.matmul(g, w2)
        if w.ndim == 1:
            gx = F.reshape(gx, tuple(x.shape))
    if node.needs[1] or node.needs[2]:
        g2 = F.reshape(g, (-1, g.shape[-1]))
        if node.needs[1]:
            gw = F.matmul(F.t(g2), F.reshape(x, (-1, x.shape[-1])))
            if w.ndim == 1:
                gw = F.reshape(gw, tuple(w.shape))
        if node.needs[2]:
            gb = F.sum(g2, 0)
            if w.ndim == 1:
                gb = F.reshape(gb, ())
    return gx, gw, gb


# -- convolution ----------------------------------------------------------------------


def _conv_check(op: str, input: Tensor, weight: Tensor, groups: int, n: int) -> bool:
    """Validate shapes; returns True when `input` lacks the batch dimension."""
    if weight.ndim != n + 2:
        raise RuntimeError(f"{op}: expected weight to be {n + 2}-D, got shape "
                           f"{fmt_shape(tuple(weight.shape))}")
    if input.ndim not in (n + 1, n + 2):
        raise RuntimeError(f"{op}: Expected {n + 1}D (unbatched) or {n + 2}D (batched) input "
                           f"to {op}, but got input of size: {list(input.shape)}")
    channels = input.shape[-n - 1]
    if channels != weight.shape[1] * groups:
        raise RuntimeError(
            f"{op}: Given groups={groups}, weight of size {list(weight.shape)}, expected "
            f"input{list(input.shape)} to have {weight.shape[1] * groups} channels, but got "
            f"{channels} channels instead")
    if weight.shape[0] % groups:
        raise RuntimeError(f"{op}: out_channels ({weight.shape[0]}) must be divisible by "
                           f"groups ({groups})")
    return input.ndim == n + 1


def _same_padding(kernel: tuple, dilation: tuple) -> tuple[tuple, tuple]:
    total = [d * (k - 1) for k, d in zip(kernel, dilation)]
    return tuple(t // 2 for t in total), tuple(t - t // 2 for t in total)


def _conv(op: str, n: int, input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any,
          padding: Any, dilation: Any, groups: int) -> Tensor:
    unbatched = _conv_check(op, input, weight, groups, n)
    if unbatched:
        input = F.unsqueeze(input, 0)
    kernel = tuple(weight.shape[2:])
    stride, dilation = _tuple(stride, n, "stride"), _tuple(dilation, n, "dilation")
    if isinstance(padding, str):
        if padding == "valid":
            padding = (0,) * n
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError(f"{op}: padding='same' is not supported for strided "
                                 "convolutions")
            left, right = _same_padding(kernel, dilation)
            if left != right:  # uneven: pad the extra element on the right, as PyTorch does
                extra = []
                for a, b in reversed(list(zip(left, right))):
                    extra += [0, b - a]
                input = constant_pad_nd(input, extra)
            padding = left
        else:
            raise ValueError(f"{op}: invalid padding string {padding!r}, should be one of "
                             "'valid' or 'same'")
    padding = _tuple(padding, n, "padding")
    batch = input.shape[0]
    outs = tuple(conv_out_size(op, input.shape[2 + i], kernel[i], dilation[i], padding[i],
                               stride[i]) for i in range(n))
    fused = input._backend.kernels.get("conv")
    if fused is not None and groups == 1 and tracing.active is None and \
            input._dtype is weight._dtype and input._device is weight._device and \
            (bias is None or (bias._dtype is input._dtype and bias._device is input._device)):
        out = _conv_fused(input, weight, bias, stride, padding, dilation)
        return F.squeeze(out, 0) if unbatched else out
    cols = im2col(input, kernel, dilation, padding, stride)  # (N, C*K, L)
    out_ch = weight.shape[0]
    if groups == 1:
        out = F.matmul(F.reshape(weight, (out_ch, -1)), cols)  # (N, O, L)
    else:
        cols_g = F.reshape(cols, (batch, groups, -1, cols.shape[-1]))
        w_g = F.reshape(weight, (groups, out_ch // groups, -1))
        out = F.reshape(F.matmul(w_g, cols_g), (batch, out_ch, -1))
    out = F.reshape(out, (batch, out_ch) + outs)
    if bias is not None:
        out = F.add(out, F.reshape(bias, (out_ch,) + (1,) * n))
    return F.squeeze(out, 0) if unbatched else out


@tracing.composite("conv1d")
def _conv_fused(x: Tensor, w: Tensor, b: Tensor | None, stride: tuple, padding: tuple,
                dilation: tuple) -> Tensor:
    """Convolution through the backend's `conv` kernel (one GEMM for the whole batch) and
    `conv_backward`; the kernel's im2col columns are kept for the backward."""
    buf, cols = x._backend.kernels["conv"](x._data, w._data, None if b is None else b._data,
                                           stride, padding, dilation)
    out = Tensor._make(buf, x._dtype, x._device, x._backend)
    if _state.enabled and (x._requires_grad or w._requires_grad or
                           (b is not None and b._requires_grad)):
        workspace = Tensor._make(cols, x._dtype, x._device, x._backend)
        record("ConvolutionBackward0", _bw_conv_fused, (x, w, b), out, saved=(w, workspace),
               x_shape=tuple(x.shape), geometry=(stride, padding, dilation), x=x)
    return out


def _bw_conv_fused(node, g):
    w, cols = node.saved_tensors
    stride, padding, dilation = node.attrs["geometry"]
    if not _state.enabled:
        bufs = g._backend.kernels["conv_backward"](g._data, node.attrs["x_shape"], w._data,
                                                   cols._data, stride, padding, dilation,
                                                   node.needs)
        return tuple(None if buf is None else Tensor._make(buf, g._dtype, g._device,
                                                           g._backend) for buf in bufs)
    # create_graph: the same gradients through differentiable ops
    x = node.attrs["x"]
    with tracing.paused():
        n = x.ndim - 2
        gx = conv_transpose_nd(g, w, stride, padding, dilation, tuple(x.shape[2:])) \
            if node.needs[0] else None
        cols_t = im2col(x, tuple(w.shape[2:]), dilation, padding, stride)  # (N, CK, L)
        g_flat = F.reshape(g, (g.shape[0], g.shape[1], -1))  # (N, O, L)
        gw = F.reshape(F.sum(F.matmul(g_flat, F.transpose(cols_t, 1, 2)), 0),
                       tuple(w.shape)) if node.needs[1] else None
        gb = F.sum(g, (0,) + tuple(range(2, 2 + n))) if node.needs[2] else None
    return gx, gw, gb


def conv_transpose_nd(g: Tensor, w: Tensor, stride: tuple, padding: tuple, dilation: tuple,
                      size: tuple) -> Tensor:
    """The input gradient of a convolution (groups=1), differentiably: W^T @ g, folded."""
    batch, out_ch = g.shape[0], g.shape[1]
    g_flat = F.reshape(g, (batch, out_ch, -1))
    cols = F.matmul(F.t(F.reshape(w, (out_ch, -1))), g_flat)  # (N, CK, L)
    return col2im(cols, size, tuple(w.shape[2:]), dilation, padding, stride)


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """1-D convolution (cross-correlation) over (N, C, L) inputs."""
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


@tracing.composite("conv2d")
def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """2-D convolution (cross-correlation) over (N, C, H, W) inputs."""
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


@tracing.composite("conv_transpose2d")
def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: Any = 1, padding: Any = 0, output_padding: Any = 0,
                     groups: int = 1, dilation: Any = 1) -> Tensor:
    """2-D transposed convolution: the gradient of conv2d with respect to its input."""
    n = 2
    if weight.ndim != 4:
        raise RuntimeError(f"conv_transpose2d: expected a 4-D weight, got shape "
                           f"{fmt_shape(tuple(weight.shape))}")
    unbatched = input.ndim == 3
    if unbatched:
        input = F.unsqueeze(input, 0)
    if input.ndim != 4 or input.shape[1] != weight.shape[0]:
        raise RuntimeError(f"conv_transpose2d: Given transposed=1, weight of size "
                           f"{list(weight.shape)}, expected input{list(input.shape)} to have "
                           f"{weight.shape[0]} channels, but got "
                           f"{input.shape[1] if input.ndim > 1 else '?'} channels instead")
    stride, padding = _tuple(stride, n, "stride"), _tuple(padding, n, "padding")
    dilation, output_padding = _tuple(dilation, n, "dilation"), _tuple(output_padding, n,
                                                                       "output_padding")
    for op_, s, d in zip(output_padding, stride, dilation):
        if op_ >= s and op_ >= d:
            raise RuntimeError("conv_transpose2d: output padding must be smaller than either "
                               "stride or dilation")
    batch, in_ch, h, w = input.shape
    kernel = tuple(weight.shape[2:])
    out_ch = weight.shape[1] * groups
    size = tuple((i - 1) * s - 2 * p + d * (k - 1) + op_ + 1 for i, s, p, d, k, op_ in
                 zip((h, w), stride, padding, dilation, kernel, output_padding))
    x = F.reshape(input, (batch, groups, in_ch // groups, h * w))
    wg = F.reshape(weight, (groups, in_ch // groups, -1))  # (G, Cin/G, Cout/G*K)
    cols = F.matmul(F.transpose(wg, 1, 2), x)  # (N, G, Cout/G*K, L)
    cols = F.reshape(cols, (batch, -1, h * w))
    out = col2im(cols, size, kernel, dilation, padding, stride)
    if bias is not None:
        out = F.add(out, F.reshape(bias, (out_ch, 1, 1)))
    return F.squeeze(out, 0) if unbatched else out


# -- pooling --------------------------------------------------------------------------


def _pool_windows(op: str, n: int, input: Tensor, kernel_size: Any, stride: Any, padding: Any,
                  dilation: Any, ceil_mode: bool, fill: float):
    """im2col of the input padded with `fill`: (N, C, K, L) windows and the output size."""
    kernel, stride, padding, dilation, extra, outs = _pool_geometry(
        op, n, input, kernel_size, stride, padding, dilation, ceil_mode)
    pad = []
    for p, e in reversed(list(zip(padding, extra))):
        pad += [p, p + e]
    padded = constant_pad_nd(input, pad, fill)
    cols = im2col(padded, kernel, dilation, 0, stride)
    batch, channels = input.shape[0], input.shape[1]
    windows = F.reshape(cols, (batch, channels, math.prod(kernel), -1))
    return windows, outs, (kernel, stride, padding, dilation, extra)


def _batched(input: Tensor, n: int, op: str) -> tuple[Tensor, bool]:
    if input.ndim == n + 1:
        return F.unsqueeze(input, 0), True
    if input.ndim != n + 2:
        raise RuntimeError(f"{op}: Expected {n + 1}D or {n + 2}D input, got shape "
                           f"{fmt_shape(tuple(input.shape))}")
    return input, False


def _max_pool(op: str, n: int, input: Tensor, kernel_size, stride, padding, dilation,
              ceil_mode, return_indices):
    x, unbatched = _batched(input, n, op)
    if "max_pool" in x._backend.kernels and tracing.active is None:
        return _max_pool_fused(op, n, x, unbatched, kernel_size, stride, padding, dilation,
                               ceil_mode, return_indices)
    windows, outs, geom = _pool_windows(op, n, x, kernel_size, stride, padding, dilation,
                                        ceil_mode, float("-inf"))
    result = F.max(windows, 2)
    values = F.reshape(result.values, tuple(x.shape[:2]) + outs)
    if unbatched:
        values = F.squeeze(values, 0)
    if not return_indices:
        return values
    indices = _pool_indices(result.indices, x, outs, geom)
    return values, (F.squeeze(indices, 0) if unbatched else indices)


def _pool_geometry(op: str, n: int, x: Tensor, kernel_size, stride, padding, dilation,
                   ceil_mode) -> tuple:
    """Checked (kernel, stride, padding, dilation, extra right padding, output sizes); the
    extra right padding lets ceil_mode windows fit."""
    kernel = _tuple(kernel_size, n, "kernel_size")
    stride = kernel if stride is None or stride == [] or stride == () else \
        _tuple(stride, n, "stride")
    padding, dilation = _tuple(padding, n, "padding"), _tuple(dilation, n, "dilation")
    for k, p in zip(kernel, padding):
        if p > k // 2:
            raise RuntimeError(f"{op}: pad should be at most half of effective kernel size, "
                               f"but got pad={p}, kernel_size={k}")
    spatial = tuple(x.shape[2:])
    outs = tuple(conv_out_size(op, spatial[i], kernel[i], dilation[i], padding[i], stride[i],
                               ceil_mode) for i in range(n))
    if any(o <= 0 for o in outs):
        raise RuntimeError(f"{op}: output size {outs} is too small for input "
                           f"{fmt_shape(tuple(x.shape))}")
    extra = tuple(max(0, (o - 1) * s + d * (k - 1) + 1 - (size + 2 * p))
                  for o, s, d, k, size, p in zip(outs, stride, dilation, kernel, spatial,
                                                 padding))
    return kernel, stride, padding, dilation, extra, outs


def _max_pool_fused(op, n, x, unbatched, kernel_size, stride, padding, dilation, ceil_mode,
                    return_indices):
    """Max pooling through the backend's `max_pool` kernel: (values, window-local argmax)
    forward, and `max_pool_backward` (or a col2im of the scattered gradient)."""
    kernel, stride, padding, dilation, extra, outs = _pool_geometry(
        op, n, x, kernel_size, stride, padding, dilation, ceil_mode)
    attrs = dict(kernel_size=kernel, stride=stride, padding=padding, dilation=dilation,
                 extra=extra)
    vbuf, ibuf = x._backend.kernels["max_pool"](x._data, need_indices=return_indices, **attrs)
    values = Tensor._make(vbuf, x._dtype, x._device, x._backend)
    k_index = None if ibuf is None else Tensor._make(ibuf, dt.int64, x._device, x._backend)
    if _state.enabled and x._requires_grad:
        if k_index is None:  # the backward recovers the positions from input and values
            saved = (x, Tensor._make(vbuf, x._dtype, x._device, x._backend))
        else:
            saved = (k_index,)
        record("MaxPool2DWithIndicesBackward0" if n == 2 else "MaxPool1DWithIndicesBackward0",
               _bw_max_pool, (x,), values, saved=saved, shape=tuple(x.shape), attrs=attrs)
    if unbatched:
        values = F.squeeze(values, 0)
    if not return_indices:
        return values
    flat_k = F.reshape(k_index, tuple(k_index.shape[:2]) + (-1,))
    indices = _pool_indices(flat_k, x, outs, (kernel, stride, padding, dilation, extra))
    return values, (F.squeeze(indices, 0) if unbatched else indices)


def _bw_max_pool(node, g):
    saved = node.saved_tensors
    attrs, shape = node.attrs["attrs"], node.attrs["shape"]
    fused = g._backend.kernels.get("max_pool_backward")
    if len(saved) == 2:  # (input, values): positions are recomputed
        x, values = saved
        if fused is not None and not _state.enabled:
            buf = fused(g._data, x._data, values._data, None, shape, **attrs)
            return Tensor._make(buf, g._dtype, g._device, g._backend)
        _, ibuf = x._backend.kernels["max_pool"](x._data, need_indices=True, **attrs)
        k_index = Tensor._make(ibuf, dt.int64, x._device, x._backend)
    else:
        (k_index,) = saved
        if fused is not None and not _state.enabled:
            buf = fused(g._data, None, None, k_index._data, shape, **attrs)
            return Tensor._make(buf, g._dtype, g._device, g._backend)
    # in ember ops (differentiable): scatter into window slots, then fold with col2im
    kernel = attrs["kernel_size"]
    k = math.prod(kernel)
    flat_g = F.reshape(g, tuple(g.shape[:2]) + (-1, 1))
    flat_k = F.reshape(k_index, tuple(k_index.shape[:2]) + (-1, 1))
    slots = F.scatter(F.zeros(tuple(flat_g.shape[:3]) + (k,), dtype=g.dtype, device=g.device),
                      3, flat_k, flat_g)
    cols = F.reshape(F.permute(slots, (0, 1, 3, 2)), (g.shape[0], g.shape[1] * k, -1))
    padded = tuple(s + 2 * p + e for s, p, e in zip(shape[2:], attrs["padding"],
                                                    attrs["extra"]))
    grad = col2im(cols, padded, kernel, attrs["dilation"], 0, attrs["stride"])
    key = (slice(None), slice(None)) + tuple(slice(p, p + s) for p, s in
                                             zip(attrs["padding"], shape[2:]))
    return F.getitem(grad, key)


def _pool_indices(k_index: Tensor, x: Tensor, outs: tuple, geom: tuple) -> Tensor:
    """Flat input positions (PyTorch's return_indices) of the chosen window elements.

    Along dim i, output o's window starts at o * stride - padding, and the chosen kernel
    offset adds offset * dilation; the flat index is row-major over the input's dims.
    """
    kernel, stride, padding, dilation, _ = geom
    n = len(kernel)
    k = F.reshape(k_index, tuple(k_index.shape[:2]) + outs)
    flat = None
    for i in range(n):
        offset = F.remainder(F.floor_divide(k, math.prod(kernel[i + 1:])), kernel[i])
        shape = [1] * (2 + n)
        shape[2 + i] = outs[i]
        start = F.reshape(F.sub(F.mul(F.arange(outs[i], device=x.device), stride[i]),
                                padding[i]), tuple(shape))
        coord = F.add(start, F.mul(offset, dilation[i]))
        flat = coord if flat is None else F.add(F.mul(flat, x.shape[2 + i]), coord)
    return flat


@tracing.composite("max_pool1d")
def max_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False):
    """1-D max pooling over (N, C, L) inputs."""
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


@tracing.composite("max_pool2d")
def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False):
    """2-D max pooling over (N, C, H, W) inputs."""
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


def _avg_pool(op: str, n: int, input: Tensor, kernel_size, stride, padding, ceil_mode,
              count_include_pad, divisor_override=None):
    x, unbatched = _batched(input, n, op)
    windows, outs, geom = _pool_windows(op, n, x, kernel_size, stride, padding, 1, ceil_mode,
                                        0.0)
    kernel, stride_, padding_, _, extra = geom
    total = F.sum(windows, 2)
    if divisor_override:
        out = F.div(total, divisor_override)
    elif not any(padding_) and not any(extra):
        out = F.div(total, math.prod(kernel))
    else:
        # count what each window covers: the input, plus the explicit padding if included
        with ag.no_grad():
            ones = F.ones((1, 1) + tuple(x.shape[2:]), dtype=x.dtype, device=x.device)
            if count_include_pad:
                pad = []
                for p in reversed(padding_):
                    pad += [p, p]
                ones = constant_pad_nd(ones, pad, 1.0)
                rest = []
                for e in reversed(extra):
                    rest += [0, e]
                covered = constant_pad_nd(ones, rest, 0.0)
            else:
                pad = []
                for p, e in reversed(list(zip(padding_, extra))):
                    pad += [p, p + e]
                covered = constant_pad_nd(ones, pad, 0.0)
            counts = F.sum(F.reshape(im2col(covered, kernel, 1, 0, stride_),
                                     (1, 1, math.prod(kernel), -1)), 2)
        out = F.div(total, counts)
    out = F.reshape(out, tuple(x.shape[:2]) + outs)
    return F.squeeze(out, 0) if unbatched else out


@tracing.composite("avg_pool1d")
def avg_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    """1-D average pooling over (N, C, L) inputs."""
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad)


@tracing.composite("avg_pool2d")
def avg_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """2-D average pooling over (N, C, H, W) inputs."""
    return _avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def _adaptive_avg_pool(op: str, n: int, input: Tensor, output_size: Any) -> Tensor:
    x, unbatched = _batched(input, n, op)
    spatial = tuple(x.shape[2:])
    outs = tuple(s if o is None else o for s, o in
                 zip(spatial, _tuple(output_size, n, "output_size")
                     if not isinstance(output_size, (tuple, list)) or None not in output_size
                     else output_size))
    if all(s % o == 0 for s, o in zip(spatial, outs)):
        k = tuple(s // o for s, o in zip(spatial, outs))
        out = _avg_pool(op, n, x, k, k, 0, False, True)
    else:  # PyTorch's windows: [floor(i*S/O), ceil((i+1)*S/O))
        out = x
        for dim in range(n):
            size, o = spatial[dim], outs[dim]
            pieces = []
            for i in range(o):
                lo, hi = (i * size) // o, -(-((i + 1) * size) // o)
                pieces.append(F.mean(F.narrow(out, 2 + dim, lo, hi - lo), 2 + dim,
                                     keepdim=True))
            out = F.cat(pieces, 2 + dim)
    return F.squeeze(out, 0) if unbatched else out


@tracing.composite("adaptive_avg_pool1d")
def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    return _adaptive_avg_pool("adaptive_avg_pool1d", 1, input, output_size)


@tracing.composite("adaptive_avg_pool2d")
def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    """Average pooling to a fixed output size."""
    return _adaptive_avg_pool("adaptive_avg_pool2d", 2, input, output_size)


# -- losses ---------------------------------------------------------------------------


@tracing.composite("cross_entropy")
def cross_entropy(input: Tensor, target: Tensor, ignore_index: int = -100,
                  reduction: str = "mean") -> Tensor:
    """Cross entropy of (N, C) logits against int64 class indices (N,): the common case
    of `nn.functional.cross_entropy`, as one fused op where the backend has one."""
    if input.ndim != 2 or target.ndim != 1 or target.shape[0] != input.shape[0]:
        raise RuntimeError(f"cross_entropy: expected input (N, C) and target (N,), got "
                           f"{fmt_shape(tuple(input.shape))} and "
                           f"{fmt_shape(tuple(target.shape))}")
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    _check_targets(target, input.shape[1], ignore_index)
    kernel = input._backend.kernels.get("cross_entropy")
    if kernel is None or tracing.active is not None or input._device is not target._device:
        return _cross_entropy_composite(input, target, ignore_index, reduction)
    loss, probs = kernel(input._data, target._data, ignore_index=ignore_index,
                         reduction=reduction)
    out = Tensor._make(loss, input._dtype, input._device, input._backend)
    if _state.enabled and input._requires_grad:
        probs_t = Tensor._make(probs, input._dtype, input._device, input._backend)
        record("NllLossBackward0", _bw_cross_entropy, (input,), out, saved=(probs_t, target),
               ignore_index=ignore_index, reduction=reduction)
    return out


def _check_targets(target: Tensor, classes: int, ignore_index: int) -> None:
    """PyTorch's IndexError for a class index outside [0, classes) (ignore_index aside).

    Only for CPU targets, where the values are already in host memory: on an accelerator
    the check would wait for the device every step (PyTorch's CUDA kernels do not check
    synchronously either); backends' kernels must stay in bounds on their own."""
    if target.numel() == 0 or target._device.type != "cpu":
        return
    with tracing.paused():
        values = F.host(target)
    bad = values[(values != ignore_index) & ((values < 0) | (values >= classes))]
    if bad.size:
        raise IndexError(f"Target {int(bad[0])} is out of bounds.")


def _bw_cross_entropy(node, g):
    probs, target = node.saved_tensors
    fused = probs._backend.kernels.get("cross_entropy_backward")
    attrs = node.attrs
    if fused is not None and not _state.enabled:
        buf = fused(probs._data, target._data, g._data, ignore_index=attrs["ignore_index"],
                    reduction=attrs["reduction"])
        return Tensor._make(buf, probs._dtype, probs._device, probs._backend)
    valid = F.ne(target, attrs["ignore_index"])
    safe = F.where(valid, target, 0)
    onehot = F.scatter(F.zeros_like(probs), 1, F.unsqueeze(safe, 1), 1.0)
    grad = F.mul(F.sub(probs, onehot), F.unsqueeze(F.to_dtype(valid, probs.dtype), 1))
    if attrs["reduction"] == "none":
        return F.mul(grad, F.unsqueeze(g, 1))
    if attrs["reduction"] == "mean":
        g = F.div(g, F.clamp(F.sum(F.to_dtype(valid, probs.dtype)), min=1.0))
    return F.mul(grad, g)


def _cross_entropy_composite(input: Tensor, target: Tensor, ignore_index: int,
                             reduction: str) -> Tensor:
    logp = F.log_softmax(input, 1)
    valid = F.ne(target, ignore_index)
    safe = F.where(valid, target, 0)
    picked = F.squeeze(F.gather(logp, 1, F.unsqueeze(safe, 1)), 1)
    losses = F.where(valid, F.neg(picked), 0.0)
    if reduction == "none":
        return losses
    total = F.sum(losses)
    if reduction == "sum":
        return total
    return F.div(total, F.sum(F.to_dtype(valid, input.dtype)))


# -- normalization --------------------------------------------------------------------


@tracing.composite("layer_norm")
def layer_norm(input: Tensor, normalized_shape: Any, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalize over the trailing `normalized_shape` dims, then scale and shift."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else \
        tuple(normalized_shape)
    if tuple(input.shape[input.ndim - len(shape):]) != shape:
        raise RuntimeError(f"layer_norm: Given normalized_shape={list(shape)}, expected input "
                           f"with shape [*, {', '.join(str(s) for s in shape)}], but got "
                           f"input of size{list(input.shape)}")
    dims = tuple(range(input.ndim - len(shape), input.ndim))
    mean = F.mean(input, dims, keepdim=True)
    centered = F.sub(input, mean)
    var = F.mean(F.mul(centered, centered), dims, keepdim=True)
    out = F.mul(centered, F.rsqrt(F.add(var, eps)))
    if weight is not None:
        out = F.mul(out, weight)
    if bias is not None:
        out = F.add(out, bias)
    return out


# -- recurrent cells ------------------------------------------------------------------


def _fused_lstm_cell(input_gates: Tensor, hidden_gates: Tensor,
                     cx: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """One LSTM step from precomputed gate pre-activations (PyTorch's gate order i, f, g,
    o): returns (hy, cy, workspace), the workspace holding the activated gates for
    `_fused_lstm_cell_backward`. Not differentiable itself (nn's LSTM does its own BPTT);
    a backend may supply the kernel `lstm_cell`."""
    kernel = input_gates._backend.kernels.get("lstm_cell")
    if kernel is not None and tracing.active is None:
        bufs = kernel(input_gates._data, hidden_gates._data, cx._data)
        return tuple(Tensor._make(b, cx._dtype, cx._device, cx._backend) for b in bufs)
    with ag.no_grad():
        gates = F.add(input_gates, hidden_gates)
        i, f, g, o = F.chunk(gates, 4, 1)
        i, f, g, o = F.sigmoid(i), F.sigmoid(f), F.tanh(g), F.sigmoid(o)
        cy = F.add(F.mul(f, cx), F.mul(i, g))
        hy = F.mul(o, F.tanh(cy))
        return hy, cy, F.cat([i, f, g, o], 1)


def _fused_lstm_cell_backward(grad_hy: Tensor, grad_cy: Tensor | None, cx: Tensor,
                              cy: Tensor, workspace: Tensor) -> tuple[Tensor, Tensor]:
    """Gradients of `_fused_lstm_cell` with respect to its gate pre-activations (the same
    for input and hidden gates) and to cx. A backend may supply `lstm_cell_backward`."""
    kernel = grad_hy._backend.kernels.get("lstm_cell_backward")
    if kernel is not None and tracing.active is None:
        bufs = kernel(grad_hy._data, None if grad_cy is None else grad_cy._data, cx._data,
                      cy._data, workspace._data)
        return tuple(Tensor._make(b, cx._dtype, cx._device, cx._backend) for b in bufs)
    with ag.no_grad():
        i, f, g, o = F.chunk(workspace, 4, 1)
        t = F.tanh(cy)
        gc = F.mul(F.mul(grad_hy, o), F.rsub(F.mul(t, t), 1.0))
        if grad_cy is not None:
            gc = F.add(gc, grad_cy)
        grad_gates = F.cat([F.mul(F.mul(gc, g), F.mul(i, F.rsub(i, 1.0))),
                            F.mul(F.mul(gc, cx), F.mul(f, F.rsub(f, 1.0))),
                            F.mul(F.mul(gc, i), F.rsub(F.mul(g, g), 1.0)),
                            F.mul(F.mul(grad_hy, t), F.mul(o, F.rsub(o, 1.0)))], 1)
        return grad_gates, F.mul(gc, f)


def _fused_lstm_layer(x: Tensor, h0: Tensor, c0: Tensor, w_ih: Tensor, w_hh: Tensor,
                      bias: Tensor | None, reverse: bool, keep: bool) -> tuple | None:
    """A whole LSTM layer (one direction, padded time-major input ``x`` of (T*B, I) rows,
    last step first if `reverse`) in one backend kernel: ``(out, h_n, c_n, saved)``,
    ``saved`` opaque to core and only passed to `_fused_lstm_layer_backward`. None when
    the backend has no `lstm_layer` kernel, the dtype is not float32/float64, or a trace
    records (nn's LSTM then runs per step)."""
    kernel = x._backend.kernels.get("lstm_layer")
    if kernel is None or tracing.active is not None or x._dtype not in (dt.float32,
                                                                         dt.float64):
        return None
    if any(t is not None and (t._dtype is not x._dtype or t._device is not x._device)
           for t in (h0, c0, w_ih, w_hh, bias)):
        return None  # the per-step path promotes or raises as the ops do
    out, hn, cn, saved = kernel(x._data, w_ih._data, w_hh._data,
                                None if bias is None else bias._data, h0._data, c0._data,
                                reverse, keep)
    return (*(Tensor._make(b, x._dtype, x._device, x._backend) for b in (out, hn, cn)),
            saved)


def _fused_lstm_layer_backward(like: Tensor, saved: Any, grad_out: Tensor | None,
                               grad_hn: Tensor | None, grad_cn: Tensor | None,
                               needs: tuple) -> tuple:
    """Gradients of `_fused_lstm_layer` for (x, w_ih, w_hh, bias, h0, c0), None where
    ``needs`` is false; `like` gives the dtype and device."""
    kernel = like._backend.kernels["lstm_layer_backward"]
    bufs = kernel(saved, *(None if g is None else g._data for g in (grad_out, grad_hn,
                                                                      grad_cn)), needs)
    return tuple(None if b is None else Tensor._make(b, like._dtype, like._device,
                                                     like._backend) for b in bufs)
