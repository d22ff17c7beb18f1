"""Attention layers: `MultiheadAttention`, `TransformerEncoderLayer`, `TransformerEncoder`,
`TransformerDecoderLayer`, `TransformerDecoder` and the whole `Transformer`, with PyTorch's
parameters, arguments, mask conventions and output shapes.

Mask conventions (as PyTorch's ``nn.MultiheadAttention``): a boolean ``attn_mask`` or
``key_padding_mask`` marks with ``True`` the positions that may NOT be attended to; a
floating-point mask is added to the attention scores. (This is the opposite of
``F.scaled_dot_product_attention``'s boolean convention, as in PyTorch.)
"""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Callable
from typing import Any

import ember
from ember import Tensor
from ember.core.backend import api_name
from ember.core.dtype import place_in
from ember.core.errors import warn_once
from ember.nn import functional as F
from ember.nn import init
from ember.nn.containers import ModuleList
from ember.nn.module import Module
from ember.nn.modules import activation
from ember.nn.modules.activation import GELU, ReLU
from ember.nn.modules.dropout import Dropout
from ember.nn.modules.linear import Linear
from ember.nn.modules.normalization import LayerNorm
from ember.nn.parameter import Parameter

__all__ = ["MultiheadAttention", "NonDynamicallyQuantizableLinear", "TransformerEncoderLayer",
           "TransformerEncoder", "TransformerDecoderLayer", "TransformerDecoder", "Transformer",
           "multi_head_attention_forward"]


class NonDynamicallyQuantizableLinear(Linear):
    r"""A :class:`Linear` under another name: the output projection of
    :class:`MultiheadAttention` (the name PyTorch gives it, so reprs match)."""


# -- masks ---------------------------------------------------------------------------------


def _canonical_mask(mask: Tensor | None, mask_name: str, other_type: Any, other_name: str,
                    target_type: Any, check_other: bool = True) -> Tensor | None:
    """A boolean mask (True = masked out) as an additive float mask (-inf there)."""
    if mask is None:
        return None
    is_float = mask.dtype.is_floating_point
    if mask.dtype is not ember.bool and not is_float:
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype != other_type:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use "
                      "same type for both instead.", stacklevel=2)
    if not is_float:
        mask = ember.zeros_like(mask, dtype=target_type).masked_fill(mask, float("-inf"))
    return mask


def _none_or_dtype(input: Tensor | None) -> Any:
    if input is None:
        return None
    if isinstance(input, Tensor):
        return input.dtype
    raise RuntimeError(f"input to _none_or_dtype() must be None or {api_name()}.Tensor")


def _generate_square_subsequent_mask(sz: int, device: Any = None, dtype: Any = None) -> Tensor:
    """A square causal mask: -inf above the diagonal, 0 elsewhere (float32 unless given,
    whatever the default dtype, as in PyTorch)."""
    if dtype is None:
        dtype = ember.float32
    return ember.triu(ember.full((sz, sz), float("-inf"), dtype=dtype, device=device),
                      diagonal=1)


def _get_seq_len(src: Tensor, batch_first: bool) -> int:
    """The sequence length of ``(S, E)``, ``(S, N, E)`` or (batch first) ``(N, S, E)``."""
    if src.dim() == 2:
        return src.size(0)
    return src.size(1 if batch_first else 0)


def _detect_is_causal_mask(mask: Tensor | None, is_causal: bool | None = None,
                           size: int | None = None) -> bool:
    """``is_causal`` if given, else whether ``mask`` is the causal mask of ``size``."""
    make_causal = is_causal is True
    if is_causal is None and mask is not None:
        sz = size if size is not None else mask.size(-2)
        causal = _generate_square_subsequent_mask(sz, device=mask.device, dtype=mask.dtype)
        if tuple(mask.size()) == tuple(causal.size()):
            make_causal = bool((mask == causal).all())
        else:
            make_causal = False
    return make_causal


def _mha_shape_check(query: Tensor, key: Tensor, value: Tensor,
                     key_padding_mask: Tensor | None, attn_mask: Tensor | None,
                     num_heads: int) -> bool:
    """Check the ranks of the inputs; True when they are batched."""
    if query.dim() == 3:
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError("For batched (3-D) `query`, expected `key` and `value` to be "
                                 f"3-D but found {key.dim()}-D and {value.dim()}-D tensors "
                                 "respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError("For batched (3-D) `query`, expected `key_padding_mask` to be "
                                 f"`None` or 2-D but found {key_padding_mask.dim()}-D tensor "
                                 "instead")
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError("For batched (3-D) `query`, expected `attn_mask` to be `None`, "
                                 f"2-D or 3-D but found {attn_mask.dim()}-D tensor instead")
        return True
    if query.dim() == 2:
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError("For unbatched (2-D) `query`, expected `key` and `value` to be "
                                 f"2-D but found {key.dim()}-D and {value.dim()}-D tensors "
                                 "respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError("For unbatched (2-D) `query`, expected `key_padding_mask` to "
                                 f"be `None` or 1-D but found {key_padding_mask.dim()}-D tensor "
                                 "instead")
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError("For unbatched (2-D) `query`, expected `attn_mask` to be "
                                     f"`None`, 2-D or 3-D but found {attn_mask.dim()}-D tensor "
                                     "instead")
            if attn_mask.dim() == 3:
                expected = (num_heads, query.shape[0], key.shape[0])
                if tuple(attn_mask.shape) != expected:
                    raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got "
                                         f"{attn_mask.shape}")
        return False
    raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received "
                         f"{query.dim()}-D query tensor")


# -- the attention computation -------------------------------------------------------------


def _in_projection_packed(q: Tensor, k: Tensor, v: Tensor, w: Tensor,
                          b: Tensor | None) -> tuple[Tensor, Tensor, Tensor]:
    if q is k and k is v:
        # self-attention: one matmul for the three projections
        return tuple(F.linear(q, w, b).chunk(3, -1))  # type: ignore[return-value]
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = (None, None, None) if b is None else b.chunk(3)
    return F.linear(q, w_q, b_q), F.linear(k, w_k, b_k), F.linear(v, w_v, b_v)


def _split_heads(t: Tensor, static: Tensor | None, name: str, heads_total: int,
                 head_dim: int) -> Tensor:
    """Keys or values (seq, batch, E) as (batch * heads, seq, head_dim), or the given
    `static` ones after checking their shape (PyTorch's messages)."""
    if static is None:
        return t.reshape(t.shape[0], heads_total, head_dim).transpose(0, 1)
    if static.size(0) != heads_total:
        raise AssertionError(f"expecting {name}.size(0) of {heads_total}, but got "
                             f"{static.size(0)}")
    if static.size(2) != head_dim:
        raise AssertionError(f"expecting {name}.size(2) of {head_dim}, but got "
                             f"{static.size(2)}")
    return static

def _in_projection(q: Tensor, k: Tensor, v: Tensor, w_q: Tensor, w_k: Tensor, w_v: Tensor,
                   b_q: Tensor | None, b_k: Tensor | None,
                   b_v: Tensor | None) -> tuple[Tensor, Tensor, Tensor]:
    """Query, key and value each projected by its own weight (kdim/vdim attention), after
    PyTorch's checks of the weights' and biases' shapes."""
    e_q, e_k, e_v = q.size(-1), k.size(-1), v.size(-1)
    for what, w, want in (("query", w_q, (e_q, e_q)), ("key", w_k, (e_q, e_k)),
                          ("value", w_v, (e_q, e_v))):
        if tuple(w.shape) != want:
            raise AssertionError(f"expecting {what} weights shape of {want}, but got {w.shape}")
    for what, b in (("query", b_q), ("key", b_k), ("value", b_v)):
        if b is not None and tuple(b.shape) != (e_q,):
            raise AssertionError(f"expecting {what} bias shape of {(e_q,)}, but got {b.shape}")
    return F.linear(q, w_q, b_q), F.linear(k, w_k, b_k), F.linear(v, w_v, b_v)


def multi_head_attention_forward(
        query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int, num_heads: int,
        in_proj_weight: Tensor | None, in_proj_bias: Tensor | None, bias_k: Tensor | None,
        bias_v: Tensor | None, add_zero_attn: bool, dropout_p: float, out_proj_weight: Tensor,
        out_proj_bias: Tensor | None, training: bool = True,
        key_padding_mask: Tensor | None = None, need_weights: bool = True,
        attn_mask: Tensor | None = None, use_separate_proj_weight: bool = False,
        q_proj_weight: Tensor | None = None, k_proj_weight: Tensor | None = None,
        v_proj_weight: Tensor | None = None, static_k: Tensor | None = None,
        static_v: Tensor | None = None, average_attn_weights: bool = True,
        is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
    r"""The computation of :class:`MultiheadAttention`, with PyTorch's arguments
    (``torch.nn.functional.multi_head_attention_forward``).

    Shapes: ``query`` ``(L, N, E)`` or ``(L, E)``; ``key``/``value`` ``(S, N, E_k/E_v)`` or
    ``(S, E_k/E_v)``; ``key_padding_mask`` ``(N, S)`` or ``(S)``; ``attn_mask`` ``(L, S)``
    or ``(N * num_heads, L, S)``. Returns ``attn_output`` ``(L, N, E)`` and, with
    ``need_weights``, the attention weights ``(N, L, S)`` (averaged over heads) or
    ``(N, num_heads, L, S)``; ``None`` otherwise.
    """
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask",
                                       _none_or_dtype(attn_mask), "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        # the hint alone says what the mask is (PyTorch hands it to SDPA as is_causal)
        attn_mask = None
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype,
                                    check_other=False)
        if key_padding_mask is not None:
            is_causal = False
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match "
                                 f"value's {value.shape[:2]}")
        for name, w in (("q", q_proj_weight), ("k", k_proj_weight), ("v", v_proj_weight)):
            if w is None:
                raise AssertionError(f"use_separate_proj_weight is True but {name}_proj_weight "
                                     f"is None")
        b_q, b_k, b_v = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
        q, k, v = _in_projection(query, key, value, q_proj_weight, k_proj_weight,
                                 v_proj_weight, b_q, b_k, b_v)
    else:
        if tuple(key.shape) != tuple(value.shape):
            raise AssertionError(f"key shape {key.shape} does not match value shape "
                                 f"{value.shape}")
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)

    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but "
                                   f"should be {(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but "
                                   f"should be {(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")

    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        k = ember.cat([k, bias_k.repeat(1, bsz, 1)])
        v = ember.cat([v, bias_v.repeat(1, bsz, 1)])
        if attn_mask is not None:
            attn_mask = F.pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = F.pad(key_padding_mask, (0, 1))
    elif bias_k is not None:
        raise AssertionError("bias_k is set but bias_v is None")
    elif bias_v is not None:
        raise AssertionError("bias_v is set but bias_k is None")

    # (seq, batch, E) -> (batch * heads, seq, head_dim)
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = _split_heads(k, static_k, "static_k", bsz * num_heads, head_dim)
    v = _split_heads(v, static_v, "static_v", bsz * num_heads, head_dim)

    if add_zero_attn:
        zeros = ember.zeros(bsz * num_heads, 1, head_dim, dtype=k.dtype, device=k.device)
        k = ember.cat([k, zeros], 1)
        v = ember.cat([v, zeros.to(v.dtype)], 1)
        if attn_mask is not None:
            attn_mask = F.pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = F.pad(key_padding_mask, (0, 1))
    src_len = k.size(1)

    if key_padding_mask is not None:
        if key_padding_mask.shape[0] != bsz:
            raise AssertionError(f"Expected key_padded_mask.shape[0] to be {bsz}, but got "
                                 f"{key_padding_mask.shape[0]}")
        if key_padding_mask.shape[1] != src_len:
            raise AssertionError(f"Expected key_padded_mask.shape[1] to be {src_len}, but got "
                                 f"{key_padding_mask.shape[1]}")
        key_padding_mask = key_padding_mask.view(bsz, 1, 1, src_len).expand(
            -1, num_heads, -1, -1).reshape(bsz * num_heads, 1, src_len)
        attn_mask = key_padding_mask if attn_mask is None else attn_mask + key_padding_mask
    if is_causal and attn_mask is None:
        above = ember.ones(tgt_len, src_len, dtype=ember.bool, device=q.device).triu(1)
        attn_mask = ember.zeros(1, tgt_len, src_len, dtype=q.dtype, device=q.device) \
            .masked_fill(above, float("-inf"))
    if not training:
        dropout_p = 0.0

    scores = ember.bmm(q * math.sqrt(1.0 / float(head_dim)), k.transpose(-2, -1))
    fully_masked = None
    if attn_mask is not None:
        scores = scores + attn_mask
        if not need_weights:
            # PyTorch's attention kernel (the need_weights=False path) gives a query whose
            # every key is masked zero weights, not NaN: keep a fully padded sequence from
            # poisoning the batch (and its gradients)
            fully_masked = (scores == float("-inf")).all(-1, keepdim=True)
            scores = scores.masked_fill(fully_masked, 0.0)
    weights = ember.softmax(scores, -1)
    if fully_masked is not None:
        weights = weights.masked_fill(fully_masked, 0.0)
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p)
    attn_output = ember.bmm(weights, v)
    attn_output = attn_output.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
    attn_output = F.linear(attn_output, out_proj_weight, out_proj_bias)
    attn_output = attn_output.view(tgt_len, bsz, attn_output.size(1))
    if not is_batched:
        attn_output = attn_output.squeeze(1)
    if not need_weights:
        return attn_output, None
    weights = weights.view(bsz, num_heads, tgt_len, src_len)
    if average_attn_weights:
        weights = weights.mean(dim=1)
    if not is_batched:
        weights = weights.squeeze(0)
    return attn_output, weights


class MultiheadAttention(Module):
    r"""Attend to information from different representation subspaces:
    :math:`\text{MultiHead}(Q, K, V) = \text{Concat}(head_1, \dots, head_h) W^O`,
    :math:`head_i = \text{Attention}(Q W_i^Q, K W_i^K, V W_i^V)`.

    Args:
        embed_dim: total dimension of the model.
        num_heads: number of parallel attention heads (``embed_dim`` must be divisible by
            it; each head has dimension ``embed_dim // num_heads``).
        dropout: dropout probability on the attention weights. Default: 0.0
        bias: add bias to the input / output projections. Default: ``True``
        add_bias_kv: add a learned bias to the key and value sequences. Default: ``False``
        add_zero_attn: add a new batch of zeros to the key and value sequences.
            Default: ``False``
        kdim, vdim: number of features of the keys / values. Default: ``embed_dim``
        batch_first: inputs and outputs are ``(batch, seq, feature)``. Default: ``False``

    Parameters: ``in_proj_weight`` ``(3 * embed_dim, embed_dim)`` and ``in_proj_bias``,
    or ``q_proj_weight``/``k_proj_weight``/``v_proj_weight`` when ``kdim`` or ``vdim``
    differ from ``embed_dim``; ``out_proj`` (a Linear); ``bias_k``/``bias_v`` with
    ``add_bias_kv``.
    """

    __constants__ = ["batch_first"]

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False,
                 kdim: int | None = None, vdim: int | None = None, batch_first: bool = False,
                 device: Any = None, dtype: Any = None) -> None:
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got "
                             f"embed_dim={embed_dim} and num_heads={num_heads} instead")
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != self.embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        kw = {"device": device, "dtype": dtype}
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(ember.empty((embed_dim, embed_dim), **kw))
            self.k_proj_weight = Parameter(ember.empty((embed_dim, self.kdim), **kw))
            self.v_proj_weight = Parameter(ember.empty((embed_dim, self.vdim), **kw))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(ember.empty((3 * embed_dim, embed_dim), **kw))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(ember.empty(3 * embed_dim, **kw))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **kw)
        if add_bias_kv:
            self.bias_k = Parameter(ember.empty((1, 1, embed_dim), **kw))
            self.bias_v = Parameter(ember.empty((1, 1, embed_dim), **kw))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def forward(self, query: Tensor, key: Tensor, value: Tensor,
                key_padding_mask: Tensor | None = None, need_weights: bool = True,
                attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
        r"""Attend from ``query`` to ``key``/``value``.

        Args:
            query: ``(L, N, E)`` (``(N, L, E)`` with ``batch_first``) or unbatched
                ``(L, E)``.
            key, value: ``(S, N, kdim/vdim)`` (``(N, S, .)`` with ``batch_first``) or
                ``(S, kdim/vdim)``.
            key_padding_mask: ``(N, S)`` or ``(S)``; ``True`` (bool) marks keys to ignore,
                a float mask is added to the scores.
            need_weights: also return the attention weights. Default: ``True``
            attn_mask: ``(L, S)`` or ``(N * num_heads, L, S)``; ``True`` (bool) = not
                allowed to attend; a float mask is added.
            average_attn_weights: average the returned weights over heads. Default: ``True``
            is_causal: a hint that ``attn_mask`` is the causal mask (``attn_mask`` is then
                still required, as in PyTorch).

        Returns:
            ``(attn_output, attn_weights)``: ``(L, N, E)`` (batch first if so configured)
            and ``(N, L, S)`` / ``(N, num_heads, L, S)`` or ``None``.
        """
        is_batched = query.dim() == 3
        if not need_weights and self._takes_fast_path(query, key, value):
            # PyTorch's fused inference kernel (_native_multi_head_attention) softmaxes a
            # query whose every key is masked to NaN, as the weighted path does, where its
            # need_weights=False path (scaled_dot_product_attention) gives zeros
            return self.forward(query, key, value, key_padding_mask, True, attn_mask,
                                average_attn_weights, is_causal)[0], None
        key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask",
                                           _none_or_dtype(attn_mask), "attn_mask", query.dtype)
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype,
                                    check_other=False)
        if self.batch_first and is_batched:
            # keep the identities (q is k is v) that select the packed projection
            if key is value:
                if query is key:
                    query = key = value = query.transpose(1, 0)
                else:
                    query, key = (x.transpose(1, 0) for x in (query, key))
                    value = key
            else:
                query, key, value = (x.transpose(1, 0) for x in (query, key, value))
        separate = not self._qkv_same_embed_dim
        attn_output, attn_output_weights = multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,
            self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn, self.dropout,
            self.out_proj.weight, self.out_proj.bias, training=self.training,
            key_padding_mask=key_padding_mask, need_weights=need_weights, attn_mask=attn_mask,
            use_separate_proj_weight=separate,
            q_proj_weight=self.q_proj_weight if separate else None,
            k_proj_weight=self.k_proj_weight if separate else None,
            v_proj_weight=self.v_proj_weight if separate else None,
            average_attn_weights=average_attn_weights, is_causal=is_causal)
        if self.batch_first and is_batched:
            return attn_output.transpose(1, 0), attn_output_weights
        return attn_output, attn_output_weights


    def _takes_fast_path(self, query: Tensor, key: Tensor, value: Tensor) -> bool:
        """Whether PyTorch's forward would take its fused inference path (its
        `why_not_fast_path` conditions): batch-first self-attention in inference, packed
        projections with biases, an even number of heads, no autocast, no gradient."""
        if not (ember.backends.mha.get_fastpath_enabled() and query.dim() == 3
                and query is key and key is value and not self.training
                and self.batch_first and self._qkv_same_embed_dim
                and self.in_proj_bias is not None and self.num_heads % 2 == 0
                and self.bias_k is None and self.bias_v is None and not self.add_zero_attn
                and query.dtype == self.in_proj_weight.dtype
                and not ember.is_autocast_enabled()):
            return False
        tensors = (query, self.in_proj_weight, self.in_proj_bias, self.out_proj.weight,
                   self.out_proj.bias)
        return not (ember.is_grad_enabled()
                    and any(t is not None and t.requires_grad for t in tensors))


def _get_activation_fn(activation: str) -> Callable[[Tensor], Tensor]:
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


class TransformerEncoderLayer(Module):
    r"""Self-attention followed by a feed-forward network, each with a residual connection
    and layer norm ("Attention Is All You Need"; ``norm_first`` for the pre-norm variant).

    Args:
        d_model: number of expected features in the input.
        nhead: number of attention heads.
        dim_feedforward: width of the feed-forward network. Default: 2048
        dropout: dropout probability. Default: 0.1
        activation: ``"relu"``, ``"gelu"`` or a callable. Default: ``F.relu``
        layer_norm_eps: eps of the layer norms. Default: 1e-5
        batch_first: inputs and outputs are ``(batch, seq, feature)``. Default: ``False``
        norm_first: apply the layer norms before attention / feed-forward (pre-norm).
            Default: ``False``
        bias: learn additive biases in the Linear and LayerNorm layers. Default: ``True``
    """

    __constants__ = ["norm_first"]

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1,
                 activation: str | Callable[[Tensor], Tensor] = F.relu,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        kw = {"device": device, "dtype": dtype}
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if isinstance(activation, str):
            activation = _get_activation_fn(activation)
        if activation is F.relu or isinstance(activation, ReLU):
            self.activation_relu_or_gelu = 1
        elif activation is F.gelu or isinstance(activation, GELU):
            self.activation_relu_or_gelu = 2
        else:
            self.activation_relu_or_gelu = 0
        self.activation = activation

    def forward(self, src: Tensor, src_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None, is_causal: bool = False) -> Tensor:
        r"""Pass the input through the layer.

        Args:
            src: ``(S, N, E)`` (``(N, S, E)`` with ``batch_first``) or ``(S, E)``.
            src_mask: ``(S, S)`` or ``(N * nhead, S, S)`` attention mask.
            src_key_padding_mask: ``(N, S)`` or ``(S)``.
            is_causal: a hint that ``src_mask`` is the causal mask.
        """
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask",
                                               _none_or_dtype(src_mask), "src_mask",
                                               src.dtype)
        src_mask = _canonical_mask(src_mask, "src_mask", None, "", src.dtype,
                                   check_other=False)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask,
                                   is_causal=is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask,
                                              is_causal=is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x: Tensor, attn_mask: Tensor | None, key_padding_mask: Tensor | None,
                  is_causal: bool = False) -> Tensor:
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout2(x)


def _why_not_fast_path(layer: Any) -> str:
    """Why PyTorch's TransformerEncoder would not take its nested-tensor path for
    `layer` ("" when it would), in its words and order."""
    name = "encoder_layer"
    if not isinstance(layer, TransformerEncoderLayer):
        return f"{name} was not TransformerEncoderLayer"
    if layer.norm_first:
        return f"{name}.norm_first was True"
    if not layer.self_attn.batch_first:
        return (f"{name}.self_attn.batch_first was not True(use batch_first for better "
                f"inference performance)")
    if not layer.self_attn._qkv_same_embed_dim:
        return f"{name}.self_attn._qkv_same_embed_dim was not True"
    if layer.self_attn.in_proj_bias is None:
        return f"{name}.self_attn was passed bias=False"
    if not layer.activation_relu_or_gelu:
        return f"{name}.activation_relu_or_gelu was not True"
    if layer.norm1.eps != layer.norm2.eps:
        return f"{name}.norm1.eps was not equal to {name}.norm2.eps"
    if layer.self_attn.num_heads % 2 == 1:
        return f"{name}.self_attn.num_heads is odd"
    return ""


class TransformerEncoder(Module):
    r"""A stack of ``num_layers`` encoder layers (deep copies of ``encoder_layer``), and an
    optional final ``norm``.

    Args:
        encoder_layer: an instance of :class:`TransformerEncoderLayer` (copied).
        num_layers: number of layers.
        norm: a final normalisation module. Default: ``None``
        enable_nested_tensor: take PyTorch's "sparsity fast path" where it would (in
            inference, with a left-aligned ``src_key_padding_mask``): ember runs the layers
            on the padded input as always, and then gives the padded positions zeros, as
            PyTorch's nested tensors padded back do. Default: ``True``
        mask_check: check that ``src_key_padding_mask`` is left-aligned before that.
    """

    __constants__ = ["norm"]

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int,
                 norm: Module | None = None, enable_nested_tensor: bool = True,
                 mask_check: bool = True) -> None:
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check
        why_not = _why_not_fast_path(encoder_layer)
        self.use_nested_tensor = enable_nested_tensor and not why_not
        if enable_nested_tensor and why_not:  # PyTorch's warning
            warnings.warn(f"enable_nested_tensor is True, but self.use_nested_tensor is False "
                          f"because {why_not}", stacklevel=2)

    def forward(self, src: Tensor, mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                is_causal: bool | None = None) -> Tensor:
        r"""Pass the input through every layer in turn.

        Args:
            src: ``(S, N, E)`` (``(N, S, E)`` with ``batch_first``) or ``(S, E)``.
            mask: ``(S, S)`` or ``(N * nhead, S, S)`` attention mask.
            src_key_padding_mask: ``(N, S)`` or ``(S)``.
            is_causal: whether ``mask`` is the causal mask; detected when ``None``.
        """
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask",
                                               _none_or_dtype(mask), "mask", src.dtype)
        mask = _canonical_mask(mask, "mask", None, "", src.dtype, check_other=False)
        output = src
        batch_first = self.layers[0].self_attn.batch_first if len(self.layers) else False
        is_causal = _detect_is_causal_mask(mask, is_causal, _get_seq_len(src, batch_first))
        keep = self._nested_keep(src, mask, src_key_padding_mask)
        for mod in self.layers:
            output = mod(output, src_mask=mask, is_causal=is_causal,
                         src_key_padding_mask=src_key_padding_mask)
        if keep is not None:  # PyTorch's nested output padded back with zeros
            output = output.masked_fill(keep.logical_not().unsqueeze(-1), 0.0)
        if self.norm is not None:
            output = self.norm(output)
        return output


    def _nested_keep(self, src: Tensor, mask: Tensor | None,
                     src_key_padding_mask: Tensor | None) -> Tensor | None:
        """The (N, S) positions PyTorch's sparsity fast path keeps (None where it would
        not take that path: training, grad needed, a `mask`, padding not at the end...)."""
        if not (ember.backends.mha.get_fastpath_enabled() and self.use_nested_tensor) \
                or not len(self.layers) or self.layers[0].training or src.ndim != 3 \
                or src_key_padding_mask is None or mask is not None \
                or ember.is_autocast_enabled():
            return None
        keep = src_key_padding_mask.logical_not()
        if self.mask_check and bool((keep[:, 1:] > keep[:, :-1]).any()):
            return None  # (a kept position after a padded one: not left-aligned)
        if ember.is_grad_enabled() and (src.requires_grad or any(
                p.requires_grad for p in self.layers[0].parameters())):
            return None
        warn_once("The PyTorch API of nested tensors is in prototype stage and will change in "
                  "the near future. We recommend specifying layout=torch.jagged when "
                  "constructing a nested tensor, as this layout receives active development, "
                  "has better operator coverage, and works with torch.compile.", stacklevel=2)
        return keep


class TransformerDecoderLayer(Module):
    r"""Self-attention, attention over the encoder's output (``memory``), then a
    feed-forward network, each with a residual connection and layer norm ("Attention Is All
    You Need"; ``norm_first`` for the pre-norm variant).

    Args:
        d_model: number of expected features in the input.
        nhead: number of attention heads.
        dim_feedforward: width of the feed-forward network. Default: 2048
        dropout: dropout probability. Default: 0.1
        activation: ``"relu"``, ``"gelu"`` or a callable. Default: ``F.relu``
        layer_norm_eps: eps of the layer norms. Default: 1e-5
        batch_first: inputs and outputs are ``(batch, seq, feature)``. Default: ``False``
        norm_first: apply the layer norms before each block (pre-norm). Default: ``False``
        bias: learn additive biases in the Linear and LayerNorm layers. Default: ``True``

    Examples::

        >>> layer = nn.TransformerDecoderLayer(d_model=512, nhead=8)
        >>> out = layer(ember.rand(20, 32, 512), ember.rand(10, 32, 512))
    """

    __constants__ = ["norm_first"]

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1,
                 activation: str | Callable[[Tensor], Tensor] = F.relu,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        kw = {"device": device, "dtype": dtype}
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                            batch_first=batch_first, bias=bias, **kw)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                                 batch_first=batch_first, bias=bias, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = (_get_activation_fn(activation) if isinstance(activation, str)
                           else activation)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False) -> Tensor:
        r"""Pass the target and the encoder's output through the layer.

        Args:
            tgt: ``(T, N, E)`` (``(N, T, E)`` with ``batch_first``) or ``(T, E)``.
            memory: ``(S, N, E)`` (``(N, S, E)`` with ``batch_first``) or ``(S, E)``.
            tgt_mask: ``(T, T)`` or ``(N * nhead, T, T)`` self-attention mask.
            memory_mask: ``(T, S)`` or ``(N * nhead, T, S)`` mask over ``memory``.
            tgt_key_padding_mask: ``(N, T)`` or ``(T)``.
            memory_key_padding_mask: ``(N, S)`` or ``(S)``.
            tgt_is_causal: a hint that ``tgt_mask`` is the causal mask.
            memory_is_causal: a hint that ``memory_mask`` is the causal mask.
        """
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask,
                                   tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask,
                                    memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask,
                                              tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask,
                                               memory_key_padding_mask, memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x: Tensor, attn_mask: Tensor | None, key_padding_mask: Tensor | None,
                  is_causal: bool = False) -> Tensor:
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           is_causal=is_causal, need_weights=False)[0]
        return self.dropout1(x)

    def _mha_block(self, x: Tensor, mem: Tensor, attn_mask: Tensor | None,
                   key_padding_mask: Tensor | None, is_causal: bool = False) -> Tensor:
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, is_causal=is_causal,
                                need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout3(x)


class TransformerDecoder(Module):
    r"""A stack of ``num_layers`` decoder layers (deep copies of ``decoder_layer``), and an
    optional final ``norm``.

    Args:
        decoder_layer: an instance of :class:`TransformerDecoderLayer` (copied).
        num_layers: number of layers.
        norm: a final normalisation module. Default: ``None``
    """

    __constants__ = ["norm"]

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int,
                 norm: Module | None = None) -> None:
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(decoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False) -> Tensor:
        r"""Pass the target and the encoder's output through every layer in turn.

        Args:
            tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
            memory_key_padding_mask, memory_is_causal: as in
                :meth:`TransformerDecoderLayer.forward`.
            tgt_is_causal: whether ``tgt_mask`` is the causal mask; detected when ``None``.
        """
        output = tgt
        seq_len = _get_seq_len(tgt, self.layers[0].self_attn.batch_first)
        tgt_is_causal = _detect_is_causal_mask(tgt_mask, tgt_is_causal, seq_len)
        for mod in self.layers:
            output = mod(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                         tgt_key_padding_mask=tgt_key_padding_mask,
                         memory_key_padding_mask=memory_key_padding_mask,
                         tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)
        if self.norm is not None:
            output = self.norm(output)
        return output


class Transformer(Module):
    r"""The encoder-decoder transformer of "Attention Is All You Need": a
    :class:`TransformerEncoder` over ``src`` and a :class:`TransformerDecoder` from ``tgt``
    attending to the encoder's output, each ending in a :class:`LayerNorm`.

    Args:
        d_model: number of expected features in the inputs. Default: 512
        nhead: number of attention heads. Default: 8
        num_encoder_layers: number of encoder layers. Default: 6
        num_decoder_layers: number of decoder layers. Default: 6
        dim_feedforward: width of the feed-forward networks. Default: 2048
        dropout: dropout probability. Default: 0.1
        activation: ``"relu"``, ``"gelu"`` or a callable. Default: ``F.relu``
        custom_encoder: a module used as the encoder instead. Default: ``None``
        custom_decoder: a module used as the decoder instead. Default: ``None``
        layer_norm_eps: eps of the layer norms. Default: 1e-5
        batch_first: inputs and outputs are ``(batch, seq, feature)``. Default: ``False``
        norm_first: pre-norm layers. Default: ``False``
        bias: learn additive biases in the Linear and LayerNorm layers. Default: ``True``

    Examples::

        >>> model = nn.Transformer(nhead=16, num_encoder_layers=12)
        >>> out = model(ember.rand(10, 32, 512), ember.rand(20, 32, 512))
    """

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048,
                 dropout: float = 0.1,
                 activation: str | Callable[[Tensor], Tensor] = F.relu,
                 custom_encoder: Any | None = None, custom_decoder: Any | None = None,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        kw = {"device": device, "dtype": dtype}
        super().__init__()
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            encoder_layer = TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout,
                                                    activation, layer_norm_eps, batch_first,
                                                    norm_first, bias, **kw)
            encoder_norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
            self.encoder = TransformerEncoder(encoder_layer, num_encoder_layers, encoder_norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            decoder_layer = TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout,
                                                    activation, layer_norm_eps, batch_first,
                                                    norm_first, bias, **kw)
            decoder_norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
            self.decoder = TransformerDecoder(decoder_layer, num_decoder_layers, decoder_norm)
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Tensor | None = None,
                tgt_mask: Tensor | None = None, memory_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                src_is_causal: bool | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        r"""Encode ``src`` and decode ``tgt`` attending to it.

        Args:
            src: ``(S, N, E)`` (``(N, S, E)`` with ``batch_first``) or ``(S, E)``.
            tgt: ``(T, N, E)`` (``(N, T, E)`` with ``batch_first``) or ``(T, E)``.
            src_mask: ``(S, S)`` or ``(N * nhead, S, S)``.
            tgt_mask: ``(T, T)`` or ``(N * nhead, T, T)``.
            memory_mask: ``(T, S)`` or ``(N * nhead, T, S)``.
            src_key_padding_mask, tgt_key_padding_mask, memory_key_padding_mask:
                ``(N, S)``, ``(N, T)``, ``(N, S)`` (unbatched: ``(S)``, ``(T)``, ``(S)``).
            src_is_causal, tgt_is_causal: whether ``src_mask`` / ``tgt_mask`` is the causal
                mask; detected when ``None``.
            memory_is_causal: a hint that ``memory_mask`` is the causal mask.

        Returns:
            ``(T, N, E)`` (``(N, T, E)`` with ``batch_first``) or ``(T, E)``.
        """
        is_batched = src.dim() == 3
        if is_batched and src.size(0 if self.batch_first else 1) != \
                tgt.size(0 if self.batch_first else 1):
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.size(-1) != self.d_model or tgt.size(-1) != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device: Any = None,
                                        dtype: Any = None) -> Tensor:
        r"""A square causal mask for a sequence of ``sz``: ``-inf`` above the diagonal
        (future positions), ``0.0`` elsewhere; float32 unless ``dtype`` is given."""
        return _generate_square_subsequent_mask(sz, dtype=dtype, device=device)

    def _reset_parameters(self) -> None:
        # PyTorch's init: Xavier-uniform every matrix (the biases keep their own init)
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)


place_in(activation, MultiheadAttention)  # (PyTorch's module for it)
