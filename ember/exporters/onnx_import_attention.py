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
    # the scale in the operands' dtype, as onnx's reference (NumPy) multiplies by it: a
    # Python float would stay float32 in a half-precision product (PyTorch's opmath)
    root = ember.tensor(scale, dtype=q.dtype, device=q.device)
    scores = ember.matmul(q * root, k.transpose(2, 3) * root)
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
    if a.dtype in (ember.float16, ember.bfloat16):  # the gate in float32, then rounded
        return a * ember.sigmoid(a.float() * alpha).to(a.dtype) * b
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


def _heads_of(x: Any, n: int) -> Any:
    """(batch, seq, n * d) -> (batch, n, seq, d), in float32 as onnx's reference."""
    return _heads(x, n).to(ember.float32)


@importer("LinearAttention", since=26)
def _linear_attention(ctx: ImportContext, q: Any, k: Any, v: Any, past: Any = None,
                      decay: Any = None, beta: Any = None) -> Any:
    """Recurrent linear attention: a (d_k x d_v) state per head, decayed (gated), corrected
    (delta rule) and read by the query at every step."""
    hq, hkv = ctx.attr("q_num_heads"), ctx.attr("kv_num_heads")
    rule = ctx.attr("update_rule", "gated_delta")
    b, t = q.shape[0], q.shape[1]
    dk, dv = q.shape[-1] // hq, v.shape[-1] // hkv
    q4, k4, v4 = _heads_of(q, hq), _heads_of(k, hkv), _heads_of(v, hkv)
    if decay is not None:
        decay4 = (decay.reshape(b, t, hkv, 1) if decay.shape[-1] == hkv else
                  decay.reshape(b, t, hkv, dk)).permute(0, 2, 1, 3).to(ember.float32)
    if beta is not None:
        beta4 = beta.reshape(b, t, beta.shape[-1], 1).permute(0, 2, 1, 3).to(ember.float32)
    state = past.to(ember.float32) if past is not None else \
        ember.zeros(b, hkv, dk, dv, device=q.device)
    scale = ctx.attr("scale") or 1 / math.sqrt(dk)
    group = hq // hkv
    outs = []
    for i in range(t):
        k_t, v_t = k4[:, :, i, :], v4[:, :, i, :]
        if rule in ("gated", "gated_delta"):
            state = state * ember.exp(decay4[:, :, i, :]).unsqueeze(-1)
        if rule in ("delta", "gated_delta"):
            retrieved = ember.matmul(k_t.unsqueeze(-2), state).squeeze(-2)
            v_t = beta4[:, :, i, :] * (v_t - retrieved)
        state = state + k_t.unsqueeze(-1) * v_t.unsqueeze(-2)
        read = state if group == 1 else state.unsqueeze(2).expand(
            -1, -1, group, -1, -1).reshape(b, hq, dk, dv)
        outs.append(scale * ember.matmul(q4[:, :, i, :].unsqueeze(-2), read).squeeze(-2))
    y = ember.stack(outs, 2).permute(0, 2, 1, 3).reshape(b, t, hq * dv)
    return y.to(q.dtype), state.to(past.dtype if past is not None else q.dtype)


@importer("CausalConvWithState", since=26)
def _causal_conv(ctx: ImportContext, x: Any, w: Any, bias: Any = None,
                 past: Any = None) -> Any:
    """A depthwise causal 1-D convolution that carries its last k-1 inputs as state."""
    b, c = x.shape[0], x.shape[1]
    k = w.shape[2]
    pad = past if past is not None else ember.zeros(b, c, k - 1, dtype=x.dtype,
                                                    device=x.device)
    padded = ember.cat([pad, x], 2)
    y = ember.nn.functional.conv1d(padded, w, bias, groups=c).to(x.dtype)
    if ctx.attr("activation", "none") in ("silu", "swish"):
        y32 = y.to(ember.float32)
        y = (y32 * ember.sigmoid(y32)).to(x.dtype)
    return y, padded.narrow(2, padded.shape[2] - (k - 1), k - 1)


@importer("FlexAttention", since=1, domain="ai.onnx.preview")
def _flex_attention(ctx: ImportContext, q: Any, k: Any, v: Any) -> Any:
    """Attention whose scores and probabilities pass through the node's own subgraphs
    (`score_mod`, `prob_mod`), as PyTorch's flex_attention."""
    heads_q, heads_kv = q.shape[1], k.shape[1]
    if heads_q != heads_kv:
        reps = heads_q // heads_kv
        k = k.unsqueeze(2).expand(-1, -1, reps, -1, -1).reshape(
            k.shape[0], heads_q, k.shape[2], k.shape[3])
        v = v.unsqueeze(2).expand(-1, -1, reps, -1, -1).reshape(
            v.shape[0], heads_q, v.shape[2], v.shape[3])
    scale = ctx.attr("scale")
    root = math.sqrt(1 / math.sqrt(q.shape[3]) if scale is None else scale)
    scores = ember.matmul(q * root, k.transpose(-1, -2) * root)
    precision = ctx.attr("softmax_precision")
    work = ember_dtype(precision, "softmax_precision") if precision is not None else (
        ember.float32 if q.dtype in (ember.float16, ember.bfloat16) else q.dtype)
    scores = scores.to(work)
    if ctx.attr("score_mod") is not None:
        scores = ctx.run_graph(ctx.attr("score_mod"), [scores])[0].to(work)
    probs = ember.softmax(scores, -1)
    if ctx.attr("prob_mod") is not None:
        probs = ctx.run_graph(ctx.attr("prob_mod"), [probs])[0].to(work)
    return ember.matmul(probs, v.to(work)).to(v.dtype)
