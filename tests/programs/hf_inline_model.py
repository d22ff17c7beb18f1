"""A HuggingFace-transformers-style model file written inline (the shape of
modeling_llama.py / modeling_gpt2.py without the library): a PretrainedConfig-like config with
to_dict / to_json_string, a PreTrainedModel base with _init_weights via apply, post_init,
tie_weights, get/set_input_embeddings, num_parameters, a ModelOutput dataclass that also
indexes like a tuple, RMSNorm, rotary embeddings cached in non-persistent buffers, a 4-D
attention mask built from a padding mask with torch.finfo(dtype).min, left padding with
position_ids from cumsum, past_key_values grown with torch.cat, shifted-label
CrossEntropyLoss with -100, generate() with greedy / top-k / top-p sampling, repetition
penalty through gather / scatter, LogitsProcessorList-style callables, and loading a
checkpoint with renamed state_dict keys and strict=False."""
import json
import math
from collections import OrderedDict
from dataclasses import asdict, dataclass, fields
from typing import Optional, Tuple

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class TinyLlamaConfig:
    vocab_size: int = 40
    hidden_size: int = 32
    intermediate_size: int = 64
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    max_position_embeddings: int = 64
    rms_norm_eps: float = 1e-6
    initializer_range: float = 0.02
    rope_theta: float = 10000.0
    tie_word_embeddings: bool = True
    pad_token_id: int = 0
    bos_token_id: int = 1
    eos_token_id: int = 2
    model_type: str = "tiny_llama"

    def to_dict(self):
        return asdict(self)

    def to_json_string(self):
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"


class ModelOutput(OrderedDict):
    """Attribute and tuple access over the fields that are not None."""

    def __post_init__(self):
        for f in fields(self):
            v = getattr(self, f.name)
            if v is not None:
                self[f.name] = v

    def __getitem__(self, k):
        if isinstance(k, str):
            return dict(self.items())[k]
        return self.to_tuple()[k]

    def to_tuple(self):
        return tuple(self[k] for k in self.keys())


@dataclass
class CausalLMOutputWithPast(ModelOutput):
    loss: Optional[torch.FloatTensor] = None
    logits: torch.FloatTensor = None
    past_key_values: Optional[Tuple[Tuple[torch.FloatTensor]]] = None


class LlamaRMSNorm(nn.Module):
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


class LlamaRotaryEmbedding(nn.Module):
    def __init__(self, dim, max_position_embeddings=2048, base=10000):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.max_seq_len_cached = max_position_embeddings

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = emb.cos()
        sin = emb.sin()
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


def rotate_half(x):
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
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


def _prepare_4d_causal_attention_mask(attention_mask, input_shape, dtype, past_key_values_length):
    bsz, tgt_len = input_shape
    src_len = tgt_len + past_key_values_length
    min_dtype = torch.finfo(dtype).min
    causal = torch.full((tgt_len, src_len), min_dtype, dtype=dtype)
    causal = torch.triu(causal, diagonal=past_key_values_length + 1)
    causal = causal[None, None, :, :].expand(bsz, 1, -1, -1).clone()
    if attention_mask is not None:
        padding_mask = causal[..., :src_len].eq(0.0) * attention_mask[:, None, None, :].eq(0.0)
        causal[..., :src_len] = causal[..., :src_len].masked_fill(padding_mask, min_dtype)
    return causal


class LlamaMLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class LlamaAttention(nn.Module):
    def __init__(self, config, layer_idx):
        super().__init__()
        self.layer_idx = layer_idx
        self.num_heads = config.num_attention_heads
        self.head_dim = config.hidden_size // self.num_heads
        self.num_key_value_heads = config.num_key_value_heads
        self.num_key_value_groups = self.num_heads // self.num_key_value_heads
        self.q_proj = nn.Linear(config.hidden_size, self.num_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(config.hidden_size, self.num_key_value_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(config.hidden_size, self.num_key_value_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.num_heads * self.head_dim, config.hidden_size, bias=False)

    def forward(self, hidden_states, attention_mask, position_embeddings, past_key_value=None,
                use_cache=False, sdpa=False):
        bsz, q_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        cos, sin = position_embeddings
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
        if past_key_value is not None:
            key_states = torch.cat([past_key_value[0], key_states], dim=2)
            value_states = torch.cat([past_key_value[1], value_states], dim=2)
        present = (key_states, value_states) if use_cache else None
        key_states = repeat_kv(key_states, self.num_key_value_groups)
        value_states = repeat_kv(value_states, self.num_key_value_groups)
        if sdpa:
            attn_output = F.scaled_dot_product_attention(
                query_states.contiguous(), key_states.contiguous(), value_states.contiguous(),
                attn_mask=attention_mask, dropout_p=0.0)
        else:
            attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / math.sqrt(self.head_dim)
            if attention_mask is not None:
                causal_mask = attention_mask[:, :, :, : key_states.shape[-2]]
                attn_weights = attn_weights + causal_mask
            attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
            attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous()
        attn_output = attn_output.reshape(bsz, q_len, -1)
        return self.o_proj(attn_output), present


class LlamaDecoderLayer(nn.Module):
    def __init__(self, config, layer_idx):
        super().__init__()
        self.self_attn = LlamaAttention(config, layer_idx)
        self.mlp = LlamaMLP(config)
        self.input_layernorm = LlamaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.post_attention_layernorm = LlamaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)

    def forward(self, hidden_states, attention_mask, position_embeddings, past_key_value=None,
                use_cache=False, sdpa=False):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states, present = self.self_attn(hidden_states, attention_mask, position_embeddings,
                                                past_key_value, use_cache, sdpa)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        return residual + hidden_states, present


class TinyPreTrainedModel(nn.Module):
    config_class = TinyLlamaConfig
    base_model_prefix = "model"
    _no_split_modules = ["LlamaDecoderLayer"]

    def __init__(self, config):
        super().__init__()
        self.config = config

    def _init_weights(self, module):
        std = self.config.initializer_range
        if isinstance(module, nn.Linear):
            module.weight.data.normal_(mean=0.0, std=std)
            if module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.Embedding):
            module.weight.data.normal_(mean=0.0, std=std)
            if module.padding_idx is not None:
                module.weight.data[module.padding_idx].zero_()

    def post_init(self):
        self.apply(self._init_weights)
        self.tie_weights()

    def tie_weights(self):
        if getattr(self.config, "tie_word_embeddings", False) and hasattr(self, "lm_head"):
            self.lm_head.weight = self.get_input_embeddings().weight

    def num_parameters(self, only_trainable=False, exclude_embeddings=False):
        if exclude_embeddings:
            embedding_param_names = [f"{name}.weight" for name, module_type in self.named_modules()
                                     if isinstance(module_type, nn.Embedding)]
            params = [p for n, p in self.named_parameters() if n not in embedding_param_names]
        else:
            params = list(self.parameters())
        return sum(p.numel() for p in params if p.requires_grad or not only_trainable)

    @property
    def dtype(self):
        return next(self.parameters()).dtype


class LlamaModel(TinyPreTrainedModel):
    def __init__(self, config):
        super().__init__(config)
        self.padding_idx = config.pad_token_id
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size, self.padding_idx)
        self.layers = nn.ModuleList([LlamaDecoderLayer(config, i) for i in range(config.num_hidden_layers)])
        self.norm = LlamaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.rotary_emb = LlamaRotaryEmbedding(config.hidden_size // config.num_attention_heads,
                                               config.max_position_embeddings, config.rope_theta)

    def forward(self, input_ids, attention_mask=None, position_ids=None, past_key_values=None,
                use_cache=False, sdpa=False):
        inputs_embeds = self.embed_tokens(input_ids)
        past_len = past_key_values[0][0].shape[2] if past_key_values is not None else 0
        if position_ids is None:
            position_ids = torch.arange(past_len, past_len + input_ids.shape[1]).unsqueeze(0)
        mask = _prepare_4d_causal_attention_mask(attention_mask, input_ids.shape, inputs_embeds.dtype, past_len)
        position_embeddings = self.rotary_emb(inputs_embeds, position_ids)
        hidden_states = inputs_embeds
        presents = () if use_cache else None
        for i, layer in enumerate(self.layers):
            pkv = past_key_values[i] if past_key_values is not None else None
            hidden_states, present = layer(hidden_states, mask, position_embeddings, pkv, use_cache, sdpa)
            if use_cache:
                presents += (present,)
        return self.norm(hidden_states), presents


class LlamaForCausalLM(TinyPreTrainedModel):
    _tied_weights_keys = ["lm_head.weight"]

    def __init__(self, config):
        super().__init__(config)
        self.model = LlamaModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.post_init()

    def get_input_embeddings(self):
        return self.model.embed_tokens

    def set_input_embeddings(self, value):
        self.model.embed_tokens = value

    def forward(self, input_ids, attention_mask=None, position_ids=None, past_key_values=None,
                labels=None, use_cache=False, return_dict=True, sdpa=False):
        hidden_states, presents = self.model(input_ids, attention_mask, position_ids, past_key_values,
                                             use_cache, sdpa)
        logits = self.lm_head(hidden_states).float()
        loss = None
        if labels is not None:
            shift_logits = logits[..., :-1, :].contiguous()
            shift_labels = labels[..., 1:].contiguous()
            loss_fct = nn.CrossEntropyLoss()
            loss = loss_fct(shift_logits.view(-1, self.config.vocab_size), shift_labels.view(-1))
        if not return_dict:
            output = (logits, presents)
            return (loss,) + output if loss is not None else output
        return CausalLMOutputWithPast(loss=loss, logits=logits, past_key_values=presents)

    @torch.no_grad()
    def generate(self, input_ids, attention_mask=None, max_new_tokens=8, do_sample=False, top_k=0,
                 top_p=1.0, temperature=1.0, repetition_penalty=1.0, logits_processor=None,
                 generator=None):
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        position_ids = attention_mask.long().cumsum(-1) - 1
        position_ids.masked_fill_(attention_mask == 0, 1)
        out = self(input_ids, attention_mask=attention_mask, position_ids=position_ids, use_cache=True)
        past = out.past_key_values
        unfinished = torch.ones(input_ids.shape[0], dtype=torch.long)
        for _ in range(max_new_tokens):
            scores = out.logits[:, -1, :]
            if repetition_penalty != 1.0:
                score = torch.gather(scores, 1, input_ids)
                score = torch.where(score < 0, score * repetition_penalty, score / repetition_penalty)
                scores = scores.scatter(1, input_ids, score)
            for proc in logits_processor or []:
                scores = proc(input_ids, scores)
            if do_sample:
                scores = scores / temperature
                if top_k > 0:
                    top_k = min(top_k, scores.size(-1))
                    indices_to_remove = scores < torch.topk(scores, top_k)[0][..., -1, None]
                    scores = scores.masked_fill(indices_to_remove, -float("Inf"))
                if top_p < 1.0:
                    sorted_logits, sorted_indices = torch.sort(scores, descending=False)
                    cumulative_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
                    sorted_indices_to_remove = cumulative_probs <= (1 - top_p)
                    sorted_indices_to_remove[..., -1:] = 0
                    indices_to_remove = sorted_indices_to_remove.scatter(1, sorted_indices, sorted_indices_to_remove)
                    scores = scores.masked_fill(indices_to_remove, -float("Inf"))
                probs = nn.functional.softmax(scores, dim=-1)
                next_tokens = torch.multinomial(probs, num_samples=1, generator=generator).squeeze(1)
            else:
                next_tokens = torch.argmax(scores, dim=-1)
            next_tokens = next_tokens * unfinished + self.config.pad_token_id * (1 - unfinished)
            input_ids = torch.cat([input_ids, next_tokens[:, None]], dim=-1)
            attention_mask = torch.cat([attention_mask, attention_mask.new_ones((attention_mask.shape[0], 1))], dim=-1)
            unfinished = unfinished & (next_tokens != self.config.eos_token_id).long()
            if unfinished.max() == 0:
                break
            position_ids = position_ids[:, -1:] + 1
            out = self(next_tokens[:, None], attention_mask=attention_mask, position_ids=position_ids,
                       past_key_values=past, use_cache=True)
            past = out.past_key_values
        return input_ids


class NoRepeatBigram:
    """A LogitsProcessor: bans the token that would repeat the last bigram."""

    def __call__(self, input_ids, scores):
        banned = torch.zeros_like(scores, dtype=torch.bool)
        for b in range(input_ids.shape[0]):
            seq = input_ids[b].tolist()
            for i in range(len(seq) - 1):
                if seq[i] == seq[-1]:
                    banned[b, seq[i + 1]] = True
        return scores.masked_fill(banned, -float("inf"))


torch.manual_seed(0)
torch.set_printoptions(precision=4, sci_mode=False)
config = TinyLlamaConfig()
print(config)
print(config.to_json_string().splitlines()[:4])
model = LlamaForCausalLM(config)
print(model)
print("num_parameters", model.num_parameters(), "without embeddings",
      model.num_parameters(exclude_embeddings=True), "dtype", model.dtype)
print("tied", model.lm_head.weight is model.model.embed_tokens.weight,
      "pad row zero", bool((model.model.embed_tokens.weight[0] == 0).all()))
print("buffers", [n for n, _ in model.named_buffers()], "persistent in state_dict",
      any("inv_freq" in k for k in model.state_dict()))
print("finfo", torch.finfo(torch.float32).min, torch.finfo(torch.bfloat16).min, torch.finfo(torch.float16).min)
print("finfo float32", torch.finfo(torch.float32))

# masks: left padding, causal + padding 4-D
attention_mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])
mask4d = _prepare_4d_causal_attention_mask(attention_mask, (2, 5), torch.float32, 0)
print("4d mask", mask4d.shape, mask4d.dtype)
print((mask4d[0, 0] == 0).int())
print("mask with past", _prepare_4d_causal_attention_mask(None, (1, 2), torch.float16, 3)[0, 0])
position_ids = attention_mask.long().cumsum(-1) - 1
position_ids.masked_fill_(attention_mask == 0, 1)
print("position_ids", position_ids)

# training with shifted labels and -100 padding
data = torch.randint(3, config.vocab_size, (64, 12))
data[:, ::4] = data[:, 1::4]  # some structure: every 4th token repeats its right neighbour
optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3, betas=(0.9, 0.95), weight_decay=0.1)
scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / 3))
for step in range(15):
    batch = data[(step * 8) % 64:(step * 8) % 64 + 8]
    labels = batch.clone()
    labels[:, :2] = -100
    out = model(batch, labels=labels)
    out.loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad(set_to_none=True)
    if step % 3 == 2:
        print("step %2d loss %.5f lr %.6f" % (step, out.loss.item(), scheduler.get_last_lr()[0]))
print("output keys", list(out.keys()), "tuple len", len(out.to_tuple()), "logits", out[0].shape)
loss_t, logits_t, _ = model(batch, labels=labels, return_dict=False)
print("return_dict=False", type(loss_t).__name__, logits_t.shape)

model.eval()
with torch.no_grad():
    x = data[:2, :6]
    full = model(x).logits
    out = model(x[:, :4], use_cache=True)
    step_logits = model(x[:, 4:], past_key_values=out.past_key_values, use_cache=True).logits
    print("kv cache matches full", torch.allclose(full[:, 4:], step_logits, atol=1e-5),
          out.past_key_values[0][0].shape)
    sd = model(x, sdpa=True).logits
    print("sdpa matches eager", torch.allclose(full, sd, atol=1e-5))

prompt = torch.tensor([[0, 0, 5, 6, 7], [3, 4, 5, 6, 7]])
greedy = model.generate(prompt, attention_mask=(prompt != 0).long(), max_new_tokens=6)
print("greedy", greedy)
pen = model.generate(prompt, attention_mask=(prompt != 0).long(), max_new_tokens=6,
                     repetition_penalty=1.3, logits_processor=[NoRepeatBigram()])
print("penalized", pen)
g = torch.Generator().manual_seed(42)
sampled = model.generate(prompt, max_new_tokens=6, do_sample=True, top_k=10, top_p=0.9,
                         temperature=0.8, generator=g)
print("sampled", sampled.shape)

# save with the old naming, load into a renamed model with strict=False
state = model.state_dict()
old_state = OrderedDict((k.replace("model.", "transformer.", 1), v) for k, v in state.items())
old_state["transformer.extra_counter"] = torch.tensor(3)
renamed = OrderedDict()
for k, v in old_state.items():
    if k.startswith("transformer."):
        k = "model." + k[len("transformer."):]
    renamed[k] = v
del renamed["lm_head.weight"]
model2 = LlamaForCausalLM(config)
result = model2.load_state_dict(renamed, strict=False)
print(result)
print("missing", result.missing_keys, "unexpected", result.unexpected_keys)
model2.tie_weights()
model2.eval()
print("reloaded agrees", torch.equal(model2(prompt).logits, model(prompt).logits))
try:
    model2.load_state_dict(renamed)
except RuntimeError as e:
    print(str(e).splitlines()[0])

bf = LlamaForCausalLM(config).to(torch.bfloat16)
print("bf16", bf.dtype, bf(prompt).logits.dtype, _prepare_4d_causal_attention_mask(None, (1, 3), torch.bfloat16, 0)[0, 0])
