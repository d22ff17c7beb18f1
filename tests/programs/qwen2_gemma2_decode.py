"""Modern decoder LLM inference as Hugging Face's modeling_qwen2.py / modeling_gemma2.py write
it: a config dataclass, RMSNorm in float32 (Gemma's `1 + weight`), rotary embeddings with a
non-persistent `inv_freq` buffer and a @torch.no_grad() forward, rotate_half, grouped-query
attention by repeat_kv (expand + reshape) and by SDPA's enable_gqa, Gemma2 logit soft-capping
and sliding-window masks from torch.finfo(dtype).min / torch.triu(diagonal=), a DynamicCache
(torch.cat along the sequence) and a StaticCache (index_copy_ at cache_position), greedy
decoding under torch.inference_mode(), then sampling (temperature, top-k, top-p, repetition
penalty, seeded multinomial), and the model again in bfloat16."""
import math
from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class DecoderConfig:
    vocab_size: int = 48
    hidden_size: int = 32
    intermediate_size: int = 64
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    head_dim: int = 8
    max_position_embeddings: int = 64
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    sliding_window: int = 4
    attn_logit_softcapping: Optional[float] = None
    final_logit_softcapping: Optional[float] = None
    query_pre_attn_scalar: int = 8
    gemma: bool = False
    attn_implementation: str = "eager"
    tie_word_embeddings: bool = True
    pad_token_id: int = 0
    eos_token_id: int = 1


class Qwen2RMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)

    def extra_repr(self):
        return f"{tuple(self.weight.shape)}, eps={self.variance_epsilon}"


class Gemma2RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.zeros(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        output = self._norm(x.float())
        # Llama does x.to(float16) * w whilst Gemma2 is (x * w).to(float16)
        output = output * (1.0 + self.weight.float())
        return output.type_as(x)

    def extra_repr(self):
        return f"{tuple(self.weight.shape)}, eps={self.eps}"


class RotaryEmbedding(nn.Module):
    def __init__(self, config: DecoderConfig, device=None):
        super().__init__()
        dim = config.head_dim
        inv_freq = 1.0 / (config.rope_theta ** (
            torch.arange(0, dim, 2, dtype=torch.int64).to(device=device, dtype=torch.float) / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.original_inv_freq = self.inv_freq
        self.attention_scaling = 1.0

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(
            position_ids.shape[0], -1, 1).to(x.device)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = emb.cos() * self.attention_scaling
        sin = emb.sin() * self.attention_scaling
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


def rotate_half(x):
    """Rotates half the hidden dims of the input."""
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


def repeat_kv(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(
        batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class DynamicCache:
    def __init__(self):
        self.key_cache = []
        self.value_cache = []

    def update(self, key_states, value_states, layer_idx, cache_kwargs=None):
        if len(self.key_cache) <= layer_idx:
            self.key_cache.append(key_states)
            self.value_cache.append(value_states)
        else:
            self.key_cache[layer_idx] = torch.cat([self.key_cache[layer_idx], key_states], dim=-2)
            self.value_cache[layer_idx] = torch.cat([self.value_cache[layer_idx], value_states],
                                                    dim=-2)
        return self.key_cache[layer_idx], self.value_cache[layer_idx]

    def get_seq_length(self, layer_idx=0):
        if len(self.key_cache) <= layer_idx:
            return 0
        return self.key_cache[layer_idx].shape[-2]


class StaticCache:
    def __init__(self, config, max_batch_size, max_cache_len, dtype=torch.float32):
        self.max_cache_len = max_cache_len
        shape = (max_batch_size, config.num_key_value_heads, max_cache_len, config.head_dim)
        self.key_cache = []
        self.value_cache = []
        for _ in range(config.num_hidden_layers):
            new_layer_key_cache = torch.zeros(shape, dtype=dtype)
            new_layer_value_cache = torch.zeros(shape, dtype=dtype)
            torch._dynamo.mark_static_address(new_layer_key_cache)
            torch._dynamo.mark_static_address(new_layer_value_cache)
            self.key_cache.append(new_layer_key_cache)
            self.value_cache.append(new_layer_value_cache)

    def update(self, key_states, value_states, layer_idx, cache_kwargs=None):
        cache_position = cache_kwargs.get("cache_position")
        k_out = self.key_cache[layer_idx]
        v_out = self.value_cache[layer_idx]
        k_out.index_copy_(2, cache_position, key_states)
        v_out.index_copy_(2, cache_position, value_states)
        return k_out, v_out

    def get_seq_length(self, layer_idx=0):
        return (self.key_cache[layer_idx][0, 0].any(dim=-1)).sum()


class DecoderMLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)
        self.act_fn = nn.GELU(approximate="tanh") if config.gemma else nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


def eager_attention_forward(module, query, key, value, attention_mask, dropout=0.0,
                            scaling=None, softcap=None):
    key_states = repeat_kv(key, module.num_key_value_groups)
    value_states = repeat_kv(value, module.num_key_value_groups)
    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    if softcap is not None:
        attn_weights = attn_weights / softcap
        attn_weights = torch.tanh(attn_weights)
        attn_weights = attn_weights * softcap
    if attention_mask is not None:
        causal_mask = attention_mask[:, :, :, : key_states.shape[-2]]
        attn_weights = attn_weights + causal_mask
    # upcast attention to fp32
    attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_weights = nn.functional.dropout(attn_weights, p=dropout, training=module.training)
    attn_output = torch.matmul(attn_weights, value_states)
    attn_output = attn_output.transpose(1, 2).contiguous()
    return attn_output, attn_weights


def sdpa_attention_forward(module, query, key, value, attention_mask, dropout=0.0,
                           scaling=None, softcap=None):
    is_causal = attention_mask is None and query.shape[2] > 1
    if attention_mask is not None:
        attention_mask = attention_mask[:, :, :, : key.shape[-2]]
    attn_output = F.scaled_dot_product_attention(
        query, key, value, attn_mask=attention_mask, dropout_p=dropout, scale=scaling,
        is_causal=is_causal, enable_gqa=True)
    attn_output = attn_output.transpose(1, 2).contiguous()
    return attn_output, None


class DecoderAttention(nn.Module):
    def __init__(self, config: DecoderConfig, layer_idx: int):
        super().__init__()
        self.config = config
        self.layer_idx = layer_idx
        self.head_dim = config.head_dim
        self.num_key_value_groups = config.num_attention_heads // config.num_key_value_heads
        self.scaling = (config.query_pre_attn_scalar ** -0.5 if config.gemma
                        else self.head_dim ** -0.5)
        bias = not config.gemma  # Qwen2 has q/k/v biases
        self.q_proj = nn.Linear(config.hidden_size, config.num_attention_heads * self.head_dim,
                                bias=bias)
        self.k_proj = nn.Linear(config.hidden_size, config.num_key_value_heads * self.head_dim,
                                bias=bias)
        self.v_proj = nn.Linear(config.hidden_size, config.num_key_value_heads * self.head_dim,
                                bias=bias)
        self.o_proj = nn.Linear(config.num_attention_heads * self.head_dim, config.hidden_size,
                                bias=False)
        self.attn_logit_softcapping = config.attn_logit_softcapping
        self.sliding_window = config.sliding_window if (config.gemma and not layer_idx % 2) \
            else None

    def forward(self, hidden_states, position_embeddings, attention_mask,
                past_key_value=None, cache_position=None):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)

        cos, sin = position_embeddings
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)

        if past_key_value is not None:
            cache_kwargs = {"sin": sin, "cos": cos, "cache_position": cache_position}
            key_states, value_states = past_key_value.update(key_states, value_states,
                                                             self.layer_idx, cache_kwargs)
        if self.config.attn_implementation == "sdpa" and self.attn_logit_softcapping is None:
            attention_interface = sdpa_attention_forward
        else:
            attention_interface = eager_attention_forward
        attn_output, attn_weights = attention_interface(
            self, query_states, key_states, value_states, attention_mask,
            dropout=0.0, scaling=self.scaling, softcap=self.attn_logit_softcapping)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        attn_output = self.o_proj(attn_output)
        return attn_output, attn_weights


class DecoderLayer(nn.Module):
    def __init__(self, config: DecoderConfig, layer_idx: int):
        super().__init__()
        norm = Gemma2RMSNorm if config.gemma else Qwen2RMSNorm
        self.self_attn = DecoderAttention(config=config, layer_idx=layer_idx)
        self.mlp = DecoderMLP(config)
        self.input_layernorm = norm(config.hidden_size, eps=config.rms_norm_eps)
        self.post_attention_layernorm = norm(config.hidden_size, eps=config.rms_norm_eps)
        self.gemma = config.gemma
        if config.gemma:
            self.pre_feedforward_layernorm = norm(config.hidden_size, eps=config.rms_norm_eps)
            self.post_feedforward_layernorm = norm(config.hidden_size, eps=config.rms_norm_eps)
        self.sliding_window = self.self_attn.sliding_window

    def forward(self, hidden_states, attention_mask, position_embeddings,
                past_key_value=None, cache_position=None):
        if self.sliding_window is not None and attention_mask is not None:
            # Gemma2: a sliding-window layer masks keys older than the window
            min_dtype = torch.finfo(attention_mask.dtype).min
            sliding_window_mask = torch.tril(
                torch.ones_like(attention_mask, dtype=torch.bool),
                diagonal=-self.sliding_window)
            attention_mask = torch.where(sliding_window_mask, min_dtype, attention_mask)
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states, _ = self.self_attn(hidden_states, position_embeddings, attention_mask,
                                          past_key_value, cache_position)
        if self.gemma:
            hidden_states = self.post_attention_layernorm(hidden_states)
            hidden_states = residual + hidden_states
            residual = hidden_states
            hidden_states = self.pre_feedforward_layernorm(hidden_states)
            hidden_states = self.mlp(hidden_states)
            hidden_states = self.post_feedforward_layernorm(hidden_states)
        else:
            hidden_states = residual + hidden_states
            residual = hidden_states
            hidden_states = self.post_attention_layernorm(hidden_states)
            hidden_states = self.mlp(hidden_states)
        return residual + hidden_states


class DecoderModel(nn.Module):
    def __init__(self, config: DecoderConfig):
        super().__init__()
        self.config = config
        self.padding_idx = config.pad_token_id
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size, self.padding_idx)
        self.layers = nn.ModuleList([DecoderLayer(config, i)
                                     for i in range(config.num_hidden_layers)])
        norm = Gemma2RMSNorm if config.gemma else Qwen2RMSNorm
        self.norm = norm(config.hidden_size, eps=config.rms_norm_eps)
        self.rotary_emb = RotaryEmbedding(config=config)

    def forward(self, input_ids, past_key_values=None, cache_position=None, position_ids=None):
        inputs_embeds = self.embed_tokens(input_ids)
        if cache_position is None:
            past_seen_tokens = past_key_values.get_seq_length() if past_key_values else 0
            cache_position = torch.arange(past_seen_tokens,
                                          past_seen_tokens + inputs_embeds.shape[1])
        if position_ids is None:
            position_ids = cache_position.unsqueeze(0)
        target_length = (past_key_values.max_cache_len if isinstance(past_key_values, StaticCache)
                         else cache_position[-1].item() + 1)
        causal_mask = self._update_causal_mask(inputs_embeds.dtype, inputs_embeds.shape[0],
                                               inputs_embeds.shape[1], target_length,
                                               cache_position)
        hidden_states = inputs_embeds
        if self.config.gemma:
            normalizer = torch.tensor(self.config.hidden_size ** 0.5, dtype=hidden_states.dtype)
            hidden_states = hidden_states * normalizer
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        for decoder_layer in self.layers:
            hidden_states = decoder_layer(hidden_states, causal_mask, position_embeddings,
                                          past_key_values, cache_position)
        return self.norm(hidden_states)

    @staticmethod
    def _update_causal_mask(dtype, batch_size, sequence_length, target_length, cache_position):
        min_dtype = torch.finfo(dtype).min
        causal_mask = torch.full((sequence_length, target_length), fill_value=min_dtype,
                                 dtype=dtype)
        if sequence_length != 1:
            causal_mask = torch.triu(causal_mask, diagonal=1)
        causal_mask *= torch.arange(target_length) > cache_position.reshape(-1, 1)
        causal_mask = causal_mask[None, None, :, :].expand(batch_size, 1, -1, -1)
        return causal_mask


class DecoderForCausalLM(nn.Module):
    _tied_weights_keys = ["lm_head.weight"]

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.model = DecoderModel(config)
        self.vocab_size = config.vocab_size
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.apply(self._init_weights)
        self.tie_weights()

    def _init_weights(self, module):
        std = 0.2
        if isinstance(module, nn.Linear):
            module.weight.data.normal_(mean=0.0, std=std)
            if module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.Embedding):
            module.weight.data.normal_(mean=0.0, std=1.0)
            if module.padding_idx is not None:
                module.weight.data[module.padding_idx].zero_()

    def tie_weights(self):
        if self.config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight

    def num_parameters(self, only_trainable: bool = False, exclude_embeddings: bool = False):
        if exclude_embeddings:
            embedding_param_names = [f"{name}.weight" for name, module_type in
                                     self.named_modules() if isinstance(module_type, nn.Embedding)]
            total_parameters = [parameter for name, parameter in self.named_parameters()
                                if name not in embedding_param_names]
        else:
            total_parameters = list(self.parameters())
        return sum(p.numel() for p in total_parameters if p.requires_grad or not only_trainable)

    def forward(self, input_ids, past_key_values=None, cache_position=None, labels=None):
        hidden_states = self.model(input_ids, past_key_values, cache_position)
        logits = self.lm_head(hidden_states)
        if self.config.final_logit_softcapping is not None:
            logits = logits / self.config.final_logit_softcapping
            logits = torch.tanh(logits)
            logits = logits * self.config.final_logit_softcapping
        loss = None
        if labels is not None:
            logits32 = logits.float()
            shift_logits = logits32[..., :-1, :].contiguous()
            shift_labels = labels[..., 1:].contiguous()
            loss = F.cross_entropy(shift_logits.view(-1, self.vocab_size), shift_labels.view(-1),
                                   ignore_index=-100)
        return logits, loss


# -- logits processors, as transformers' generation/logits_process.py writes them --------------

def repetition_penalty(input_ids, scores, penalty):
    score = torch.gather(scores, 1, input_ids)
    # if score < 0 then repetition penalty has to be multiplied to reduce the token probabilities
    score = torch.where(score < 0, score * penalty, score / penalty)
    scores_processed = scores.scatter(1, input_ids, score)
    return scores_processed


def temperature_warp(scores, temperature):
    return scores / temperature


def top_k_warp(scores, top_k, filter_value=-float("Inf")):
    top_k = min(top_k, scores.size(-1))
    indices_to_remove = scores < torch.topk(scores, top_k)[0][..., -1, None]
    return scores.masked_fill(indices_to_remove, filter_value)


def top_p_warp(scores, top_p, filter_value=-float("Inf"), min_tokens_to_keep=1):
    sorted_logits, sorted_indices = torch.sort(scores, descending=False)
    cumulative_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
    sorted_indices_to_remove = cumulative_probs <= (1 - top_p)
    sorted_indices_to_remove[..., -min_tokens_to_keep:] = 0
    indices_to_remove = sorted_indices_to_remove.scatter(1, sorted_indices,
                                                         sorted_indices_to_remove)
    return scores.masked_fill(indices_to_remove, filter_value)


def fmt(t, n=6):
    return " ".join(f"{v:.4f}" for v in t.flatten()[:n].float().tolist())


def generate(model, input_ids, max_new_tokens, cache, do_sample=False, generator=None,
             temperature=1.0, top_k=None, top_p=None, penalty=None, label=""):
    batch, prompt_len = input_ids.shape
    cache_position = torch.arange(prompt_len)
    unfinished = torch.ones(batch, dtype=torch.long)
    next_input = input_ids
    for step in range(max_new_tokens):
        logits, _ = model(next_input, past_key_values=cache, cache_position=cache_position)
        next_token_logits = logits[:, -1, :].clone().float()
        scores = next_token_logits
        if penalty is not None:
            scores = repetition_penalty(input_ids, scores, penalty)
        if do_sample:
            scores = temperature_warp(scores, temperature)
            if top_k is not None:
                scores = top_k_warp(scores, top_k)
            if top_p is not None:
                scores = top_p_warp(scores, top_p)
            probs = nn.functional.softmax(scores, dim=-1)
            next_tokens = torch.multinomial(probs, num_samples=1, generator=generator).squeeze(1)
        else:
            next_tokens = torch.argmax(scores, dim=-1)
        next_tokens = next_tokens * unfinished + model.config.pad_token_id * (1 - unfinished)
        input_ids = torch.cat([input_ids, next_tokens[:, None]], dim=-1)
        unfinished = unfinished & ~(next_tokens == model.config.eos_token_id)
        print(f"{label} step {step} logits {fmt(next_token_logits[0], 4)} "
              f"tokens {next_tokens.tolist()} kept {int((scores > -math.inf).sum())}")
        next_input = next_tokens[:, None]
        cache_position = cache_position[-1:] + 1
        if unfinished.max() == 0:
            break
    return input_ids


def main():
    torch.manual_seed(0)
    qcfg = DecoderConfig(attn_implementation="sdpa")
    qwen = DecoderForCausalLM(qcfg).eval()
    print(qwen)
    print("num_parameters", qwen.num_parameters(),
          qwen.num_parameters(exclude_embeddings=True))
    print("tied", qwen.lm_head.weight is qwen.model.embed_tokens.weight,
          qwen.lm_head.weight.data_ptr() == qwen.model.embed_tokens.weight.data_ptr())
    keys = list(qwen.state_dict().keys())
    print("state_dict keys", len(keys), keys[:6])
    print("inv_freq in state_dict", any("inv_freq" in k for k in keys),
          [n for n, _ in qwen.named_buffers()])
    print("inv_freq", fmt(qwen.model.rotary_emb.inv_freq, 4))

    prompt = torch.randint(2, qcfg.vocab_size, (2, 5))
    print("prompt", prompt.tolist())

    # eager attention and SDPA with enable_gqa agree
    with torch.inference_mode():
        logits_sdpa, _ = qwen(prompt)
        qcfg.attn_implementation = "eager"
        logits_eager, _ = qwen(prompt)
        qcfg.attn_implementation = "sdpa"
    print("logits", tuple(logits_sdpa.shape), logits_sdpa.dtype, fmt(logits_sdpa[0, -1]))
    print("eager == sdpa", torch.allclose(logits_sdpa, logits_eager, atol=1e-5),
          logits_sdpa.is_inference(), logits_sdpa.requires_grad)

    cos, sin = qwen.model.rotary_emb(logits_sdpa, torch.arange(5).unsqueeze(0))
    print("cos", tuple(cos.shape), cos.dtype, fmt(cos[0, 3]), "sin", fmt(sin[0, 3]))
    mask = DecoderModel._update_causal_mask(torch.float32, 1, 3, 5, torch.arange(2, 5))
    print("causal mask", tuple(mask.shape), (mask[0, 0] == torch.finfo(torch.float32).min)
          .int().tolist())

    # a short fine-tune of the Qwen2 model, labels with ignore_index padding
    opt = torch.optim.AdamW(qwen.parameters(), lr=1e-2, weight_decay=0.0)
    qwen.train()
    data = torch.randint(2, qcfg.vocab_size, (4, 8))
    labels = data.clone()
    labels[:, :2] = -100
    for step in range(6):
        _, loss = qwen(data, labels=labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"train step {step} loss {loss.item():.5f}")
    qwen.eval()
    print("still tied", qwen.lm_head.weight is qwen.model.embed_tokens.weight)

    with torch.inference_mode():
        dyn = DynamicCache()
        out = generate(qwen, prompt, 6, dyn, label="greedy dynamic")
        print("greedy dynamic", out.tolist(), "cache len", dyn.get_seq_length(),
              tuple(dyn.key_cache[0].shape))
        static = StaticCache(qcfg, 2, 16)
        out_s = generate(qwen, prompt, 6, static, label="greedy static")
        print("greedy static", out_s.tolist(), "cache len", int(static.get_seq_length()))
        print("static == dynamic", torch.equal(out, out_s))
        # no cache: the full sequence every step gives the same tokens
        full, _ = qwen(out[:, :-1])
        print("recompute argmax", full[:, -6:].argmax(-1).tolist())

        g = torch.Generator().manual_seed(1234)
        sampled = generate(qwen, prompt, 5, DynamicCache(), do_sample=True, generator=g,
                           temperature=0.7, top_k=10, top_p=0.9, penalty=1.3, label="sample")
        print("sampled", sampled.tolist())

    scores = torch.tensor([[1.0, -2.0, 3.0, 0.5, -1.0], [0.1, 0.2, 0.3, 0.4, 0.5]])
    ids = torch.tensor([[0, 1], [4, 4]])
    print("penalty", repetition_penalty(ids, scores, 2.0).tolist())
    print("top_k", top_k_warp(scores, 2).tolist())
    print("top_p", top_p_warp(scores, 0.8).tolist())

    # Gemma2: (1 + weight) norms, soft-capping, sliding window on even layers, eager attention
    torch.manual_seed(1)
    gcfg = DecoderConfig(gemma=True, attn_logit_softcapping=50.0, final_logit_softcapping=30.0,
                         num_key_value_heads=1, sliding_window=3)
    gemma = DecoderForCausalLM(gcfg).eval()
    print(gemma.model.layers[0])
    print("gemma num_parameters", gemma.num_parameters())
    print("sliding windows", [layer.sliding_window for layer in gemma.model.layers])
    with torch.inference_mode():
        glogits, _ = gemma(prompt)
        print("gemma logits", fmt(glogits[1, -1]), "max |logit|",
              f"{glogits.abs().max().item():.4f}")
        gout = generate(gemma, prompt, 5, DynamicCache(), label="gemma greedy")
        print("gemma greedy", gout.tolist())

    # the same model in bfloat16
    qwen_bf16 = qwen.to(torch.bfloat16)
    print("bf16 dtypes", {p.dtype for p in qwen_bf16.parameters()},
          qwen_bf16.model.rotary_emb.inv_freq.dtype)
    with torch.inference_mode():
        blogits, _ = qwen_bf16(prompt)
        print("bf16 logits", blogits.dtype, tuple(blogits.shape))
        print("bf16 argmax", blogits[:, -1].argmax(-1).tolist(),
              "fp32 argmax", logits_sdpa[:, -1].argmax(-1).tolist())
        bcos, _ = qwen_bf16.model.rotary_emb(blogits, torch.arange(3)[None])
        print("bf16 cos", bcos.dtype, fmt(bcos[0, 2]))
        hs = torch.randn(2, 3, qcfg.hidden_size, dtype=torch.bfloat16)
        normed = qwen_bf16.model.norm(hs)
        print("bf16 norm", normed.dtype, fmt(normed[0, 0]))
        gmm = Gemma2RMSNorm(4)
        print("gemma norm bf16", gmm(torch.tensor([[1.0, 2.0, 3.0, 4.0]],
                                                 dtype=torch.bfloat16)))
        bout = generate(qwen_bf16, prompt, 4, DynamicCache(), label="bf16 greedy")
        print("bf16 greedy", bout.shape)


if __name__ == "__main__":
    main()
