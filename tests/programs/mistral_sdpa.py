"""A Mistral / LLaMA-2 style decoder in the way mistral-src's one-file reference and
Hugging Face's modeling_mistral.py write it: RMSNorm, rotary embeddings through torch.polar
and view_as_complex, grouped-query attention (repeat_interleave of the key/value heads, and
the expand+reshape repeat_kv; also SDPA's enable_gqa), a sliding-window causal mask from
torch.triu / torch.tril with diagonal=, F.scaled_dot_product_attention with attn_mask= and
is_causal=, SwiGLU feed-forward, tied input/output embeddings, and a generation loop under
@torch.inference_mode() with a rolling key/value cache."""
import math
from dataclasses import dataclass
from typing import Optional, Tuple

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class ModelArgs:
    dim: int = 32
    n_layers: int = 2
    head_dim: int = 8
    hidden_dim: int = 64
    n_heads: int = 4
    n_kv_heads: int = 2
    sliding_window: int = 6
    norm_eps: float = 1e-5
    vocab_size: int = 16
    rope_theta: float = 10000.0
    max_batch_size: int = 4


def repeat_kv(keys: torch.Tensor, values: torch.Tensor, repeats: int, dim: int):
    keys = torch.repeat_interleave(keys, repeats=repeats, dim=dim)
    values = torch.repeat_interleave(values, repeats=repeats, dim=dim)
    return keys, values


def repeat_kv_hf(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:
    """(batch, num_key_value_heads, seqlen, head_dim) -> (batch, num_attention_heads, ...)"""
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep,
                                                           slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


def precompute_freqs_cis(dim: int, end: int, theta: float) -> torch.Tensor:
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=freqs.device)
    freqs = torch.outer(t, freqs).float()
    return torch.polar(torch.ones_like(freqs), freqs)  # complex64


def apply_rotary_emb(xq: torch.Tensor, xk: torch.Tensor,
                     freqs_cis: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = freqs_cis[:, None, :]
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


def sliding_window_mask(seqlen: int, window: int, dtype=torch.float32) -> torch.Tensor:
    tensor = torch.full((seqlen, seqlen), fill_value=1, dtype=dtype)
    mask = torch.tril(tensor, diagonal=0)
    # make the mask banded to account for sliding window
    mask = torch.triu(mask, diagonal=-window + 1)
    mask = torch.log(mask)
    return mask


class RMSNorm(torch.nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        output = self._norm(x.float()).type_as(x)
        return output * self.weight


class Attention(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.args = args
        self.n_heads: int = args.n_heads
        self.n_kv_heads: int = args.n_kv_heads
        self.repeats = self.n_heads // self.n_kv_heads
        self.sliding_window = self.args.sliding_window
        self.scale = self.args.head_dim ** -0.5
        self.wq = nn.Linear(args.dim, args.n_heads * args.head_dim, bias=False)
        self.wk = nn.Linear(args.dim, args.n_kv_heads * args.head_dim, bias=False)
        self.wv = nn.Linear(args.dim, args.n_kv_heads * args.head_dim, bias=False)
        self.wo = nn.Linear(args.n_heads * args.head_dim, args.dim, bias=False)
        self.cache_k = torch.empty((args.max_batch_size, args.sliding_window, self.n_kv_heads,
                                    self.args.head_dim))
        self.cache_v = torch.empty((args.max_batch_size, args.sliding_window, self.n_kv_heads,
                                    self.args.head_dim))

    def forward(self, x: torch.Tensor, freqs_cis: torch.Tensor, positions: torch.Tensor,
                mask: Optional[torch.Tensor], use_cache: bool = False) -> torch.Tensor:
        bsz, seqlen, _ = x.shape
        xq, xk, xv = self.wq(x), self.wk(x), self.wv(x)
        xq = xq.view(bsz, seqlen, self.n_heads, self.args.head_dim)
        xk = xk.view(bsz, seqlen, self.n_kv_heads, self.args.head_dim)
        xv = xv.view(bsz, seqlen, self.n_kv_heads, self.args.head_dim)
        xq, xk = apply_rotary_emb(xq, xk, freqs_cis=freqs_cis)

        if use_cache:
            # The cache is a rotating buffer
            scatter_pos = (positions[-self.sliding_window:] % self.sliding_window)[
                None, :, None, None]
            scatter_pos = scatter_pos.repeat(bsz, 1, self.n_kv_heads, self.args.head_dim)
            self.cache_k[:bsz].scatter_(dim=1, index=scatter_pos,
                                        src=xk[:, -self.sliding_window:])
            self.cache_v[:bsz].scatter_(dim=1, index=scatter_pos,
                                        src=xv[:, -self.sliding_window:])
            if positions.shape[0] > 1:
                # prefill
                key, value = repeat_kv(xk, xv, self.repeats, dim=2)
            else:
                cur_pos = positions[-1].item() + 1
                key = self.cache_k[:bsz, :cur_pos, ...]
                value = self.cache_v[:bsz, :cur_pos, ...]
                key, value = repeat_kv(key, value, self.repeats, dim=2)
        else:
            key, value = repeat_kv(xk, xv, self.repeats, dim=2)

        xq = xq.transpose(1, 2)
        key = key.transpose(1, 2)
        value = value.transpose(1, 2)
        # scores : [bsz, n_heads, seqlen | 1, seqlen]
        output = F.scaled_dot_product_attention(
            xq, key, value, attn_mask=mask[None, None] if mask is not None else None)
        output = output.transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.wo(output)


class FeedForward(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.w1 = nn.Linear(args.dim, args.hidden_dim, bias=False)
        self.w2 = nn.Linear(args.hidden_dim, args.dim, bias=False)
        self.w3 = nn.Linear(args.dim, args.hidden_dim, bias=False)

    def forward(self, x) -> torch.Tensor:
        return self.w2(nn.functional.silu(self.w1(x)) * self.w3(x))


class TransformerBlock(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.attention = Attention(args)
        self.feed_forward = FeedForward(args=args)
        self.attention_norm = RMSNorm(args.dim, eps=args.norm_eps)
        self.ffn_norm = RMSNorm(args.dim, eps=args.norm_eps)

    def forward(self, x, freqs_cis, positions, mask, use_cache=False):
        r = self.attention.forward(self.attention_norm(x), freqs_cis, positions, mask, use_cache)
        h = x + r
        r = self.feed_forward.forward(self.ffn_norm(h))
        out = h + r
        return out


class Transformer(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.args = args
        self.vocab_size = args.vocab_size
        self.tok_embeddings = nn.Embedding(args.vocab_size, args.dim)
        self.layers = torch.nn.ModuleList([TransformerBlock(args=args)
                                           for _ in range(args.n_layers)])
        self.norm = RMSNorm(args.dim, eps=args.norm_eps)
        self.output = nn.Linear(args.dim, args.vocab_size, bias=False)
        self.output.weight = self.tok_embeddings.weight  # weight tying
        self.freqs_cis = precompute_freqs_cis(self.args.head_dim, 128, theta=args.rope_theta)

    def forward(self, input_ids: torch.Tensor, positions: torch.Tensor, use_cache=False):
        h = self.tok_embeddings(input_ids)
        freqs_cis = self.freqs_cis[positions]
        mask: Optional[torch.Tensor] = None
        if input_ids.shape[1] > 1:
            seqlen = input_ids.shape[1]
            mask = sliding_window_mask(seqlen, self.args.sliding_window, dtype=h.dtype)
        for layer in self.layers:
            h = layer(h, freqs_cis, positions, mask, use_cache)
        return self.output(self.norm(h)).float()


@torch.inference_mode()
def generate(prompts, model: Transformer, max_tokens: int):
    model = model.eval()
    bsz, seqlen = prompts.shape
    positions = torch.arange(0, seqlen)
    logits = model.forward(prompts, positions, use_cache=True)
    logprobs = nn.functional.log_softmax(logits, dim=-1)
    generated = []
    all_logprobs = []
    next_token = torch.argmax(logprobs[:, -1, :], dim=-1)
    for cur_pos in range(seqlen, seqlen + max_tokens):
        generated.append(next_token[:, None])
        all_logprobs.append(logprobs[:, -1, :].gather(1, next_token[:, None]))
        logits = model.forward(next_token[:, None], torch.LongTensor([cur_pos]), use_cache=True)
        logprobs = nn.functional.log_softmax(logits, dim=-1)
        next_token = torch.argmax(logprobs[:, -1, :], dim=-1)
    all_logprobs = torch.cat(all_logprobs, 1)
    return torch.cat(generated, 1), all_logprobs


def batch(generator, bsz, seqlen, vocab):
    start = torch.randint(0, vocab, (bsz, 1), generator=generator)
    step = torch.randint(1, 3, (bsz, 1), generator=generator)
    seq = (start + step * torch.arange(seqlen + 1)) % vocab
    return seq[:, :-1], seq[:, 1:]


def main():
    torch.manual_seed(0)
    args = ModelArgs()
    print(sliding_window_mask(5, 3))
    # SDPA: the boolean mask, the additive mask and is_causal give the same attention
    q, k, v = torch.randn(3, 2, 4, 5, 8).unbind(0)
    causal = torch.ones(5, 5, dtype=torch.bool).tril(diagonal=0)
    a = F.scaled_dot_product_attention(q, k, v, attn_mask=causal)
    b = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    c = F.scaled_dot_product_attention(
        q, k, v, attn_mask=torch.zeros(5, 5).masked_fill(~causal, float("-inf")))
    print("bool mask == is_causal == additive:", torch.allclose(a, b, atol=1e-6),
          torch.allclose(a, c, atol=1e-6))
    kv = torch.randn(2, 2, 5, 8)
    gqa = F.scaled_dot_product_attention(q, kv, kv, is_causal=True, enable_gqa=True)
    rep = F.scaled_dot_product_attention(q, repeat_kv_hf(kv, 2), repeat_kv_hf(kv, 2),
                                         is_causal=True)
    il = torch.repeat_interleave(kv, repeats=2, dim=1)
    print("enable_gqa == repeat_kv == repeat_interleave:", torch.allclose(gqa, rep, atol=1e-6),
          torch.equal(il, repeat_kv_hf(kv, 2)))
    scaled = F.scaled_dot_product_attention(q, k, v, scale=0.5)
    manual = torch.softmax(q @ k.transpose(-2, -1) * 0.5, dim=-1) @ v
    print("scale= agrees:", torch.allclose(scaled, manual, atol=1e-6))

    model = Transformer(args)
    print(model.layers[0])
    print("freqs_cis", model.freqs_cis.dtype, tuple(model.freqs_cis.shape))
    print("tied:", model.output.weight is model.tok_embeddings.weight)
    print(f"number of parameters: {sum(p.numel() for p in model.parameters()):,}")

    g = torch.Generator().manual_seed(0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=30, eta_min=3e-4)
    for step in range(30):
        x, y = batch(g, 8, 12, args.vocab_size)
        logits = model(x, torch.arange(x.shape[1]))
        loss = F.cross_entropy(logits.view(-1, args.vocab_size), y.reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        if step % 10 == 0 or step == 29:
            print(f"step {step:2d} loss {loss.item():.4f} lr {scheduler.get_last_lr()[0]:.6f}")

    x, _ = batch(g, 2, 8, args.vocab_size)
    tokens, logprobs = generate(x, model, 6)
    print("generated", tuple(tokens.shape), tokens.dtype, "logprobs", tuple(logprobs.shape))
    print("inference tensors:", tokens.is_inference(), x.is_inference())
    with torch.inference_mode():
        full = model(torch.cat([x, tokens[:, :-1]], 1), torch.arange(13))
    print("cached and full agree:", torch.equal(full[:, -6:].argmax(-1), tokens))
    try:
        tokens.add_(1)
        with torch.no_grad():
            logprobs.requires_grad_()
    except RuntimeError as e:
        print("RuntimeError:", e)


if __name__ == "__main__":
    main()
