"""ONNX import converter: `Attention` (opset 23 on), scaled dot-product attention with
ONNX's masks (boolean or additive, causal, sliding window, padding), grouped key/value
heads, a key/value cache and softcapping, written with ember ops (differentiable).
The rules follow onnx's reference implementation step by step."""

from __future__ import annotations

import math
from typing import Any

import ember
from ember.exporters.onnx_import_context import ImportContext, ember_dtype
from ember.exporters.onnx_registry import importer


def _heads(x: Any, n: int) -> Any:
    """(batch, seq, n * head) -> (batch, n, seq, head)."""
    b, s, h = x.shape
    return x.reshape(b, s, n, h // n).permute(0, 2, 1, 3)


def _additive(mask: Any, dtype: Any) -> Any:
    """A boolean mask (True = attend) as an additive one (0 or -inf)."""
    if mask.dtype == ember.bool:
        zero = ember.zeros((), dtype=dtype, device=mask.device)
        return ember.where(mask, zero, zero - math.inf)
    return mask.to(dtype)


def _allowed_bias(allowed: Any, dtype: Any) -> Any:
    zero = ember.zeros((), dtype=dtype, device=allowed.device)
    return ember.where(allowed, zero, zero - math.inf)


def _offsets(q_len: int, kv_len: int, offset: Any, device: Any) -> Any:
    """(query + offset) - key for every pair: (q, kv), or (batch, 1, q, kv) per batch."""
    i = ember.arange(q_len, device=device).reshape(q_len, 1)
    j = ember.arange(kv_len, device=device).reshape(1, kv_len)
    if isinstance(offset, int):
        return i + offset - j
    return (i + offset.reshape(-1, 1, 1, 1).to(ember.int64)) - j


@importer("Attention", since=23)
def _attention(ctx: ImportContext, q: Any, k: Any, v: Any, mask: Any = None,
               past_k: Any = None, past_v: Any = None, nonpad: Any = None) -> Any:
    rank3 = q.ndim == 3
    if rank3:
        q = _heads(q, ctx.attr("q_num_heads"))
        k = _heads(k, ctx.attr("kv_num_heads"))
        v = _heads(v, ctx.attr("kv_num_heads"))
    dtype = q.dtype
    scale = ctx.attr("scale")
    scale = math.sqrt(1 / math.sqrt(q.shape[3]) if scale is None else scale)
    if past_k is not None:
        k = ember.cat([past_k, k], 2)
    if past_v is not None:
        v = ember.cat([past_v, v], 2)
    present_k, present_v = k, v
    q_len, kv_len = q.shape[2], k.shape[2]
    bias = ember.zeros(q_len, kv_len, dtype=dtype, device=q.device)
    if mask is not None and mask.shape[-1] < kv_len:  # pad the mask's key axis
        fill = ember.zeros(list(mask.shape[:-1]) + [kv_len - mask.shape[-1]],
                           dtype=mask.dtype, device=mask.device)
        if mask.dtype != ember.bool:
            fill = fill - math.inf
        mask = ember.cat([mask, fill], -1)
    if past_k is not None:
        offset: Any = past_k.shape[2]
    elif nonpad is not None:
        offset = nonpad.reshape(-1) - q_len
    else:
        offset = 0
    left, right = ctx.attr("left_window_size", -1), ctx.attr("right_window_size", -1)
    if ctx.attr("is_causal", 0):
        base = bias if mask is None else _additive(mask, dtype)
        bias = base + _allowed_bias(_offsets(q_len, kv_len, offset, q.device) >= 0, dtype)
    elif mask is not None:
        bias = bias + _additive(mask, dtype)
    if left >= 0 or right >= 0:
        diff = _offsets(q_len, kv_len, offset, q.device)
        allowed = ember.ones_like(diff, dtype=ember.bool)
        if left >= 0:
            allowed = ember.logical_and(allowed, diff <= left)
        if right >= 0:
            allowed = ember.logical_and(allowed, -diff <= right)
        bias = bias + _allowed_bias(allowed, dtype)
    if nonpad is not None:
        keep = ember.arange(kv_len, device=q.device).reshape(1, kv_len) < \
            nonpad.reshape(-1, 1).to(ember.int64)
        bias = bias + _allowed_bias(keep, dtype).reshape(-1, 1, 1, kv_len)
    heads_q, heads_k = q.shape[1], k.shape[1]
    if heads_q != heads_k and heads_q % heads_k == 0:  # grouped-query attention
        reps = heads_q // heads_k
        k = k.unsqueeze(2).expand(-1, -1, reps, -1, -1).reshape(
            k.shape[0], heads_q, kv_len, k.shape[3])
        v = v.unsqueeze(2).expand(-1, -1, reps, -1, -1).reshape(
            v.shape[0], heads_q, kv_len, v.shape[3])
    scores = ember.matmul(q * scale, k.transpose(2, 3) * scale)
    softcap = ctx.attr("softcap")
    if softcap is not None and softcap > 0:
        scores = ember.tanh(scores / softcap) * softcap
    with_bias = scores + bias
    mode = ctx.attr("qk_matmul_output_mode", 0)
    qk_out = with_bias if mode == 2 else scores
    precision = ctx.attr("softmax_precision")
    logits = with_bias.to(ember_dtype(precision, "softmax_precision")) \
        if precision is not None else with_bias
    peak = logits.amax(dim=-1, keepdim=True)
    all_masked = ember.isinf(peak) & (peak < 0)
    peak = ember.where(all_masked, ember.zeros_like(peak), peak)
    e = ember.exp(logits - peak)
    total = e.sum(dim=-1, keepdim=True)
    total = ember.where(total == 0, ember.ones_like(total), total)
    probs = e / total
    bias_peak = bias.amax(dim=-1, keepdim=True)
    masked_rows = ember.isinf(bias_peak) & (bias_peak < 0)
    probs = ember.where(masked_rows, ember.zeros_like(probs), probs)
    if mode == 3:
        qk_out = probs
    probs = probs.to(dtype)
    y = ember.matmul(probs, v)
    if rank3:
        y = y.permute(0, 2, 1, 3)
        y = y.reshape(y.shape[0], y.shape[1], -1)
    return y, present_k, present_v, qk_out.to(dtype)


@importer("SwiGLU", since=26)
def _swiglu(ctx: ImportContext, a: Any, b: Any) -> Any:
    alpha = ctx.attr("alpha", 1.0)
    return a * ember.sigmoid(a * alpha) * b


@importer("RotaryEmbedding", since=23)
def _rotary(ctx: ImportContext, x: Any, cos: Any, sin: Any, positions: Any = None) -> Any:
    shape = list(x.shape)
    if x.ndim == 4:  # (batch, heads, seq, head) -> (batch, seq, heads, head)
        x = x.permute(0, 2, 1, 3)
    else:
        heads = ctx.attr("num_heads")
        x = x.reshape(shape[0], shape[1], heads, shape[2] // heads)
    head = x.shape[3]
    dim = ctx.attr("rotary_embedding_dim", 0) or head
    rot, keep = x[..., :dim], x[..., dim:]
    if positions is not None:
        cos = ember.index_select(cos, 0, positions.reshape(-1).to(ember.int64)).reshape(
            list(positions.shape) + [cos.shape[-1]])
        sin = ember.index_select(sin, 0, positions.reshape(-1).to(ember.int64)).reshape(
            list(positions.shape) + [sin.shape[-1]])
    cos, sin = cos.unsqueeze(2), sin.unsqueeze(2)
    interleaved = ctx.attr("interleaved", 0)
    if interleaved:
        pairs = rot.reshape(list(rot.shape[:-1]) + [dim // 2, 2])
        x1, x2 = pairs[..., 0], pairs[..., 1]
    else:
        x1, x2 = rot[..., :dim // 2], rot[..., dim // 2:]
    real = cos * x1 - sin * x2
    imag = sin * x1 + cos * x2
    if interleaved:
        rot = ember.stack([real, imag], -1).reshape(rot.shape)
    else:
        rot = ember.cat([real, imag], -1)
    out = ember.cat([rot, keep], -1)
    if len(shape) == 3:
        return out.reshape(shape)
    return out.permute(0, 2, 1, 3)
