"""An encoder-decoder as Hugging Face's modeling_bart.py (with bits of T5 v1.1 and the Whisper
decoder) writes it: learned positional embeddings with an offset, shift_tokens_right, the
attention masks expanded to 4-D additive masks by _prepare_4d_causal_attention_mask /
_expand_mask written out (masked_fill(mask.bool(), torch.finfo(dtype).min)), self- and
cross-attention with past_key_values tuples per layer (the encoder's keys/values computed once),
label-smoothed cross-entropy with ignore_index=-100, a few steps of AdamW with
get_linear_schedule_with_warmup (LambdaLR) and clip_grad_norm_, then greedy generation with the
cache; ragged batches padded by F.pad and pad_sequence(batch_first=True, padding_side=...)."""
import math
from dataclasses import dataclass
from typing import Optional, Tuple

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pad_sequence
from torch.optim.lr_scheduler import LambdaLR


@dataclass
class BartConfig:
    vocab_size: int = 16
    d_model: int = 32
    encoder_layers: int = 2
    decoder_layers: int = 2
    encoder_attention_heads: int = 4
    decoder_attention_heads: int = 4
    encoder_ffn_dim: int = 64
    decoder_ffn_dim: int = 64
    max_position_embeddings: int = 32
    dropout: float = 0.0
    attention_dropout: float = 0.0
    activation_dropout: float = 0.0
    init_std: float = 0.05
    scale_embedding: bool = True
    pad_token_id: int = 1
    bos_token_id: int = 0
    eos_token_id: int = 2
    decoder_start_token_id: int = 2


def shift_tokens_right(input_ids: torch.Tensor, pad_token_id: int, decoder_start_token_id: int):
    """Shift input ids one token to the right."""
    shifted_input_ids = input_ids.new_zeros(input_ids.shape)
    shifted_input_ids[:, 1:] = input_ids[:, :-1].clone()
    shifted_input_ids[:, 0] = decoder_start_token_id
    if pad_token_id is None:
        raise ValueError("self.model.config.pad_token_id has to be defined.")
    # replace possible -100 values in labels by `pad_token_id`
    shifted_input_ids.masked_fill_(shifted_input_ids == -100, pad_token_id)
    return shifted_input_ids


def _make_causal_mask(input_ids_shape: torch.Size, dtype: torch.dtype, device: torch.device,
                      past_key_values_length: int = 0):
    """Make causal mask used for uni-directional self-attention."""
    bsz, tgt_len = input_ids_shape
    mask = torch.full((tgt_len, tgt_len), torch.finfo(dtype).min, device=device)
    mask_cond = torch.arange(mask.size(-1), device=device)
    mask.masked_fill_(mask_cond < (mask_cond + 1).view(mask.size(-1), 1), 0)
    mask = mask.to(dtype)
    if past_key_values_length > 0:
        mask = torch.cat([torch.zeros(tgt_len, past_key_values_length, dtype=dtype,
                                      device=device), mask], dim=-1)
    return mask[None, None, :, :].expand(bsz, 1, tgt_len, tgt_len + past_key_values_length)


def _expand_mask(mask: torch.Tensor, dtype: torch.dtype, tgt_len: Optional[int] = None):
    """[bsz, seq_len] -> [bsz, 1, tgt_seq_len, src_seq_len]."""
    bsz, src_len = mask.size()
    tgt_len = tgt_len if tgt_len is not None else src_len
    expanded_mask = mask[:, None, None, :].expand(bsz, 1, tgt_len, src_len).to(dtype)
    inverted_mask = 1.0 - expanded_mask
    return inverted_mask.masked_fill(inverted_mask.to(torch.bool), torch.finfo(dtype).min)


def _prepare_4d_causal_attention_mask(attention_mask, input_shape, inputs_embeds,
                                      past_key_values_length):
    combined_attention_mask = None
    if input_shape[-1] > 1:
        combined_attention_mask = _make_causal_mask(input_shape, inputs_embeds.dtype,
                                                    inputs_embeds.device,
                                                    past_key_values_length)
    if attention_mask is not None:
        expanded_attn_mask = _expand_mask(attention_mask, inputs_embeds.dtype,
                                          tgt_len=input_shape[-1])
        combined_attention_mask = (expanded_attn_mask if combined_attention_mask is None
                                   else expanded_attn_mask + combined_attention_mask)
    return combined_attention_mask


class BartLearnedPositionalEmbedding(nn.Embedding):
    def __init__(self, num_embeddings: int, embedding_dim: int):
        # Bart is set up so that if padding_idx is specified then offset the embedding ids by 2
        self.offset = 2
        super().__init__(num_embeddings + self.offset, embedding_dim)

    def forward(self, input_ids: torch.Tensor, past_key_values_length: int = 0):
        bsz, seq_len = input_ids.shape[:2]
        positions = torch.arange(past_key_values_length, past_key_values_length + seq_len,
                                 dtype=torch.long, device=self.weight.device
                                 ).expand(bsz, -1)
        return super().forward(positions + self.offset)


class BartScaledWordEmbedding(nn.Embedding):
    def __init__(self, num_embeddings, embedding_dim, padding_idx, embed_scale=1.0):
        super().__init__(num_embeddings, embedding_dim, padding_idx)
        self.embed_scale = embed_scale

    def forward(self, input_ids: torch.Tensor):
        return super().forward(input_ids) * self.embed_scale


class BartAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, dropout=0.0, is_decoder=False, bias=True):
        super().__init__()
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.head_dim = embed_dim // num_heads
        if (self.head_dim * num_heads) != self.embed_dim:
            raise ValueError("embed_dim must be divisible by num_heads")
        self.scaling = self.head_dim ** -0.5
        self.is_decoder = is_decoder
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)

    def _shape(self, tensor: torch.Tensor, seq_len: int, bsz: int):
        return tensor.view(bsz, seq_len, self.num_heads, self.head_dim).transpose(1, 2) \
            .contiguous()

    def forward(self, hidden_states, key_value_states=None,
                past_key_value: Optional[Tuple[torch.Tensor]] = None, attention_mask=None,
                output_attentions=False):
        is_cross_attention = key_value_states is not None
        bsz, tgt_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states) * self.scaling
        if (is_cross_attention and past_key_value is not None
                and past_key_value[0].shape[2] == key_value_states.shape[1]):
            # reuse k,v, cross_attentions
            key_states = past_key_value[0]
            value_states = past_key_value[1]
        elif is_cross_attention:
            key_states = self._shape(self.k_proj(key_value_states), -1, bsz)
            value_states = self._shape(self.v_proj(key_value_states), -1, bsz)
        elif past_key_value is not None:
            # reuse k, v, self_attention
            key_states = self._shape(self.k_proj(hidden_states), -1, bsz)
            value_states = self._shape(self.v_proj(hidden_states), -1, bsz)
            key_states = torch.cat([past_key_value[0], key_states], dim=2)
            value_states = torch.cat([past_key_value[1], value_states], dim=2)
        else:
            key_states = self._shape(self.k_proj(hidden_states), -1, bsz)
            value_states = self._shape(self.v_proj(hidden_states), -1, bsz)

        if self.is_decoder:
            past_key_value = (key_states, value_states)

        proj_shape = (bsz * self.num_heads, -1, self.head_dim)
        query_states = self._shape(query_states, tgt_len, bsz).view(*proj_shape)
        key_states = key_states.reshape(*proj_shape)
        value_states = value_states.reshape(*proj_shape)

        src_len = key_states.size(1)
        attn_weights = torch.bmm(query_states, key_states.transpose(1, 2))
        if attn_weights.size() != (bsz * self.num_heads, tgt_len, src_len):
            raise ValueError(f"Attention weights should be of size "
                             f"{(bsz * self.num_heads, tgt_len, src_len)}, but is"
                             f" {attn_weights.size()}")
        if attention_mask is not None:
            if attention_mask.size() != (bsz, 1, tgt_len, src_len):
                raise ValueError(f"Attention mask should be of size {(bsz, 1, tgt_len, src_len)}"
                                 f", but is {attention_mask.size()}")
            attn_weights = attn_weights.view(bsz, self.num_heads, tgt_len, src_len) \
                + attention_mask
            attn_weights = attn_weights.view(bsz * self.num_heads, tgt_len, src_len)

        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_weights_reshaped = None
        if output_attentions:
            attn_weights_reshaped = attn_weights.view(bsz, self.num_heads, tgt_len, src_len)
        attn_probs = nn.functional.dropout(attn_weights, p=self.dropout, training=self.training)
        attn_output = torch.bmm(attn_probs, value_states)
        attn_output = attn_output.view(bsz, self.num_heads, tgt_len, self.head_dim)
        attn_output = attn_output.transpose(1, 2)
        attn_output = attn_output.reshape(bsz, tgt_len, self.embed_dim)
        attn_output = self.out_proj(attn_output)
        return attn_output, attn_weights_reshaped, past_key_value


class BartEncoderLayer(nn.Module):
    def __init__(self, config: BartConfig):
        super().__init__()
        self.embed_dim = config.d_model
        self.self_attn = BartAttention(self.embed_dim, config.encoder_attention_heads,
                                       dropout=config.attention_dropout)
        self.self_attn_layer_norm = nn.LayerNorm(self.embed_dim)
        self.dropout = config.dropout
        self.activation_fn = nn.functional.gelu
        self.fc1 = nn.Linear(self.embed_dim, config.encoder_ffn_dim)
        self.fc2 = nn.Linear(config.encoder_ffn_dim, self.embed_dim)
        self.final_layer_norm = nn.LayerNorm(self.embed_dim)

    def forward(self, hidden_states, attention_mask):
        residual = hidden_states
        hidden_states, attn_weights, _ = self.self_attn(hidden_states,
                                                        attention_mask=attention_mask)
        hidden_states = nn.functional.dropout(hidden_states, p=self.dropout,
                                              training=self.training)
        hidden_states = residual + hidden_states
        hidden_states = self.self_attn_layer_norm(hidden_states)
        residual = hidden_states
        hidden_states = self.activation_fn(self.fc1(hidden_states))
        hidden_states = self.fc2(hidden_states)
        hidden_states = nn.functional.dropout(hidden_states, p=self.dropout,
                                              training=self.training)
        hidden_states = residual + hidden_states
        hidden_states = self.final_layer_norm(hidden_states)
        if hidden_states.dtype == torch.float16 and (torch.isinf(hidden_states).any()
                                                     or torch.isnan(hidden_states).any()):
            clamp_value = torch.finfo(hidden_states.dtype).max - 1000
            hidden_states = torch.clamp(hidden_states, min=-clamp_value, max=clamp_value)
        return hidden_states


class BartDecoderLayer(nn.Module):
    def __init__(self, config: BartConfig):
        super().__init__()
        self.embed_dim = config.d_model
        self.self_attn = BartAttention(self.embed_dim, config.decoder_attention_heads,
                                       dropout=config.attention_dropout, is_decoder=True)
        self.dropout = config.dropout
        self.activation_fn = nn.functional.gelu
        self.self_attn_layer_norm = nn.LayerNorm(self.embed_dim)
        self.encoder_attn = BartAttention(self.embed_dim, config.decoder_attention_heads,
                                          dropout=config.attention_dropout, is_decoder=True)
        self.encoder_attn_layer_norm = nn.LayerNorm(self.embed_dim)
        self.fc1 = nn.Linear(self.embed_dim, config.decoder_ffn_dim)
        self.fc2 = nn.Linear(config.decoder_ffn_dim, self.embed_dim)
        self.final_layer_norm = nn.LayerNorm(self.embed_dim)

    def forward(self, hidden_states, attention_mask=None, encoder_hidden_states=None,
                encoder_attention_mask=None, past_key_value=None, use_cache=True):
        residual = hidden_states
        # Self Attention: decoder uni-directional self-attention cached key/values tuple is
        # at positions 1,2
        self_attn_past_key_value = past_key_value[:2] if past_key_value is not None else None
        hidden_states, _, present_key_value = self.self_attn(
            hidden_states=hidden_states, past_key_value=self_attn_past_key_value,
            attention_mask=attention_mask)
        hidden_states = nn.functional.dropout(hidden_states, p=self.dropout,
                                              training=self.training)
        hidden_states = residual + hidden_states
        hidden_states = self.self_attn_layer_norm(hidden_states)

        # Cross-Attention Block: cross_attn cached key/values tuple is at positions 3,4
        residual = hidden_states
        cross_attn_past_key_value = past_key_value[-2:] if past_key_value is not None else None
        hidden_states, cross_attn_weights, cross_attn_present_key_value = self.encoder_attn(
            hidden_states=hidden_states, key_value_states=encoder_hidden_states,
            attention_mask=encoder_attention_mask, past_key_value=cross_attn_past_key_value,
            output_attentions=True)
        hidden_states = nn.functional.dropout(hidden_states, p=self.dropout,
                                              training=self.training)
        hidden_states = residual + hidden_states
        hidden_states = self.encoder_attn_layer_norm(hidden_states)
        present_key_value = present_key_value + cross_attn_present_key_value

        residual = hidden_states
        hidden_states = self.activation_fn(self.fc1(hidden_states))
        hidden_states = self.fc2(hidden_states)
        hidden_states = nn.functional.dropout(hidden_states, p=self.dropout,
                                              training=self.training)
        hidden_states = residual + hidden_states
        hidden_states = self.final_layer_norm(hidden_states)
        return hidden_states, cross_attn_weights, (present_key_value if use_cache else None)


class BartEncoder(nn.Module):
    def __init__(self, config: BartConfig, embed_tokens):
        super().__init__()
        self.dropout = config.dropout
        self.embed_tokens = embed_tokens
        self.embed_positions = BartLearnedPositionalEmbedding(config.max_position_embeddings,
                                                              config.d_model)
        self.layers = nn.ModuleList([BartEncoderLayer(config)
                                     for _ in range(config.encoder_layers)])
        self.layernorm_embedding = nn.LayerNorm(config.d_model)

    def forward(self, input_ids, attention_mask=None):
        input_shape = input_ids.size()
        input_ids = input_ids.view(-1, input_shape[-1])
        inputs_embeds = self.embed_tokens(input_ids)
        embed_pos = self.embed_positions(input_ids)
        hidden_states = inputs_embeds + embed_pos
        hidden_states = self.layernorm_embedding(hidden_states)
        hidden_states = nn.functional.dropout(hidden_states, p=self.dropout,
                                              training=self.training)
        if attention_mask is not None:
            attention_mask = _expand_mask(attention_mask, inputs_embeds.dtype)
        for encoder_layer in self.layers:
            hidden_states = encoder_layer(hidden_states, attention_mask)
        return hidden_states


class BartDecoder(nn.Module):
    def __init__(self, config: BartConfig, embed_tokens):
        super().__init__()
        self.dropout = config.dropout
        self.embed_tokens = embed_tokens
        self.embed_positions = BartLearnedPositionalEmbedding(config.max_position_embeddings,
                                                              config.d_model)
        self.layers = nn.ModuleList([BartDecoderLayer(config)
                                     for _ in range(config.decoder_layers)])
        self.layernorm_embedding = nn.LayerNorm(config.d_model)

    def forward(self, input_ids, attention_mask=None, encoder_hidden_states=None,
                encoder_attention_mask=None, past_key_values=None, use_cache=False):
        input_shape = input_ids.shape
        past_key_values_length = past_key_values[0][0].shape[2] \
            if past_key_values is not None else 0
        inputs_embeds = self.embed_tokens(input_ids)
        attention_mask = _prepare_4d_causal_attention_mask(attention_mask, input_shape,
                                                           inputs_embeds, past_key_values_length)
        if encoder_hidden_states is not None and encoder_attention_mask is not None:
            encoder_attention_mask = _expand_mask(encoder_attention_mask, inputs_embeds.dtype,
                                                  tgt_len=input_shape[-1])
        positions = self.embed_positions(input_ids, past_key_values_length)
        hidden_states = self.layernorm_embedding(inputs_embeds + positions)
        hidden_states = nn.functional.dropout(hidden_states, p=self.dropout,
                                              training=self.training)
        next_decoder_cache = () if use_cache else None
        all_cross_attentions = ()
        for idx, decoder_layer in enumerate(self.layers):
            past_key_value = past_key_values[idx] if past_key_values is not None else None
            hidden_states, cross_attn, present = decoder_layer(
                hidden_states, attention_mask=attention_mask,
                encoder_hidden_states=encoder_hidden_states,
                encoder_attention_mask=encoder_attention_mask,
                past_key_value=past_key_value, use_cache=use_cache)
            all_cross_attentions += (cross_attn,)
            if use_cache:
                next_decoder_cache += (present,)
        return hidden_states, next_decoder_cache, all_cross_attentions


class BartForConditionalGeneration(nn.Module):
    _tied_weights_keys = ["encoder.embed_tokens.weight", "decoder.embed_tokens.weight",
                          "lm_head.weight"]

    def __init__(self, config: BartConfig):
        super().__init__()
        self.config = config
        embed_scale = math.sqrt(config.d_model) if config.scale_embedding else 1.0
        self.shared = BartScaledWordEmbedding(config.vocab_size, config.d_model,
                                              config.pad_token_id, embed_scale=embed_scale)
        self.encoder = BartEncoder(config, self.shared)
        self.decoder = BartDecoder(config, self.shared)
        self.register_buffer("final_logits_bias", torch.zeros((1, config.vocab_size)))
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.apply(self._init_weights)
        self.lm_head.weight = self.shared.weight

    def _init_weights(self, module):
        std = self.config.init_std
        if isinstance(module, nn.Linear):
            module.weight.data.normal_(mean=0.0, std=std)
            if module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.Embedding):
            module.weight.data.normal_(mean=0.0, std=std)
            if module.padding_idx is not None:
                module.weight.data[module.padding_idx].zero_()

    def get_encoder(self):
        return self.encoder

    def forward(self, input_ids=None, attention_mask=None, decoder_input_ids=None,
                decoder_attention_mask=None, encoder_outputs=None, past_key_values=None,
                labels=None, use_cache=False, label_smoothing=0.1):
        if labels is not None and decoder_input_ids is None:
            decoder_input_ids = shift_tokens_right(labels, self.config.pad_token_id,
                                                   self.config.decoder_start_token_id)
        if encoder_outputs is None:
            encoder_outputs = self.encoder(input_ids, attention_mask)
        dec, cache, cross = self.decoder(decoder_input_ids, decoder_attention_mask,
                                         encoder_outputs, attention_mask, past_key_values,
                                         use_cache)
        lm_logits = self.lm_head(dec)
        lm_logits = lm_logits + self.final_logits_bias.to(lm_logits.device)
        masked_lm_loss = None
        if labels is not None:
            loss_fct = nn.CrossEntropyLoss(ignore_index=-100, label_smoothing=label_smoothing)
            masked_lm_loss = loss_fct(lm_logits.view(-1, self.config.vocab_size),
                                      labels.view(-1))
        return masked_lm_loss, lm_logits, cache, encoder_outputs, cross


def get_linear_schedule_with_warmup(optimizer, num_warmup_steps, num_training_steps,
                                    last_epoch=-1):
    def lr_lambda(current_step: int):
        if current_step < num_warmup_steps:
            return float(current_step) / float(max(1, num_warmup_steps))
        return max(0.0, float(num_training_steps - current_step)
                   / float(max(1, num_training_steps - num_warmup_steps)))
    return LambdaLR(optimizer, lr_lambda, last_epoch)


def collate(batch, pad_token_id, padding_side="right"):
    """Ragged source/target pairs -> padded tensors, attention masks, -100 labels."""
    sources = [torch.tensor(src) for src, _ in batch]
    targets = [torch.tensor(tgt) for _, tgt in batch]
    input_ids = pad_sequence(sources, batch_first=True, padding_value=pad_token_id,
                             padding_side=padding_side)
    attention_mask = pad_sequence([torch.ones_like(s) for s in sources], batch_first=True,
                                  padding_side=padding_side)
    longest = max(len(t) for t in targets)
    labels = torch.stack([F.pad(t, (0, longest - len(t)), value=-100) for t in targets])
    return input_ids, attention_mask, labels


@torch.no_grad()
def greedy_generate(model, input_ids, attention_mask, max_length=8):
    cfg = model.config
    encoder_outputs = model.get_encoder()(input_ids, attention_mask)
    decoder_input_ids = torch.full((input_ids.shape[0], 1), cfg.decoder_start_token_id,
                                   dtype=torch.long)
    past_key_values = None
    finished = torch.zeros(input_ids.shape[0], dtype=torch.bool)
    for step in range(max_length):
        inputs = decoder_input_ids if past_key_values is None else decoder_input_ids[:, -1:]
        _, logits, past_key_values, _, cross = model(
            attention_mask=attention_mask, decoder_input_ids=inputs,
            encoder_outputs=encoder_outputs, past_key_values=past_key_values, use_cache=True)
        next_tokens = logits[:, -1, :].argmax(dim=-1)
        next_tokens = torch.where(finished, torch.full_like(next_tokens, cfg.pad_token_id),
                                  next_tokens)
        decoder_input_ids = torch.cat([decoder_input_ids, next_tokens[:, None]], dim=-1)
        finished |= next_tokens == cfg.eos_token_id
        if step < 2:
            print(f"gen step {step} cache", [tuple(t.shape) for t in past_key_values[0]],
                  "cross attn", tuple(cross[-1].shape),
                  "attention to padding", cross[-1][2, ..., -1].max().item())
        if finished.all():
            break
    return decoder_input_ids


def main():
    torch.manual_seed(0)
    config = BartConfig()
    model = BartForConditionalGeneration(config)
    print(model.decoder.layers[0])
    print("parameters", sum(p.numel() for p in model.parameters()),
          "tied", model.lm_head.weight is model.encoder.embed_tokens.weight)
    print("buffers", [name for name, _ in model.named_buffers()])

    labels = torch.tensor([[5, 6, 7, 2, -100, -100], [8, 9, 10, 11, 12, 2]])
    print("shift_tokens_right", shift_tokens_right(labels, 1, 2).tolist())
    mask = _prepare_4d_causal_attention_mask(torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]]),
                                             (2, 4), torch.zeros(1, dtype=torch.float32), 0)
    print("4d mask", tuple(mask.shape), mask.dtype, (mask == torch.finfo(torch.float32).min)
          .int()[0, 0].tolist())
    print("4d mask with past", tuple(_make_causal_mask((2, 1), torch.float32, "cpu", 3).shape),
          _make_causal_mask((1, 2), torch.float16, "cpu", 1)[0, 0].tolist())
    print("expand_mask", _expand_mask(torch.tensor([[1, 0]]), torch.float16, 3)[0, 0].tolist())

    # a copy task on ragged sequences
    g = torch.Generator().manual_seed(7)
    pairs = []
    for _ in range(12):
        n = int(torch.randint(3, 7, (1,), generator=g))
        src = (torch.randint(3, config.vocab_size, (n,), generator=g)).tolist()
        pairs.append((src + [config.eos_token_id], src + [config.eos_token_id]))
    left = pad_sequence([torch.tensor(s) for s, _ in pairs[:3]], batch_first=True,
                        padding_value=config.pad_token_id, padding_side="left")
    print("left padded", left.tolist())
    right = pad_sequence([torch.tensor(s) for s, _ in pairs[:3]],
                         padding_value=config.pad_token_id)
    print("time-major padded", tuple(right.shape), right[:, 0].tolist())
    ids, att, lab = collate(pairs[:4], config.pad_token_id)
    print("batch", ids.tolist(), att.tolist(), lab.tolist(), sep="\n")

    steps = 30
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, betas=(0.9, 0.98),
                                  weight_decay=0.01)
    scheduler = get_linear_schedule_with_warmup(optimizer, num_warmup_steps=4,
                                                num_training_steps=steps)
    model.train()
    for step in range(steps):
        batch = [pairs[(step * 4 + i) % len(pairs)] for i in range(4)]
        input_ids, attention_mask, labels = collate(batch, config.pad_token_id)
        loss, logits, _, _, _ = model(input_ids=input_ids, attention_mask=attention_mask,
                                      labels=labels)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        if step % 3 == 0 or step == steps - 1:
            print(f"step {step:2d} loss {loss.item():.4f} grad_norm {grad_norm.item():.4f} "
                  f"lr {scheduler.get_last_lr()[0]:.6f}")
    print("final lr", scheduler.get_last_lr(), "state keys", sorted(scheduler.state_dict()))
    print("logits", logits.shape, logits.dtype, logits.grad_fn.name())

    model.eval()
    input_ids, attention_mask, labels = collate(pairs[:3], config.pad_token_id)
    with torch.no_grad():
        loss_eval, logits, _, enc, _ = model(input_ids=input_ids, attention_mask=attention_mask,
                                             labels=labels)
        _, logits_nols, _, _, _ = model(input_ids=input_ids, attention_mask=attention_mask,
                                        labels=labels, label_smoothing=0.0)
    print("eval loss", f"{loss_eval.item():.4f}", "encoder out", tuple(enc.shape))
    ce = F.cross_entropy(logits_nols.transpose(1, 2), labels, ignore_index=-100,
                         reduction="none")
    print("per-token ce", tuple(ce.shape), "zeros at -100", bool((ce[labels == -100] == 0).all()))
    out = greedy_generate(model, input_ids, attention_mask)
    print("generated", out.tolist())
    # generation without the cache recomputes every step and gives the same tokens
    with torch.no_grad():
        _, full, _, _, _ = model(input_ids=input_ids, attention_mask=attention_mask,
                                 decoder_input_ids=out[:, :-1])
    print("no-cache argmax", full.argmax(-1).tolist())
    print("targets", labels.masked_fill(labels == -100, config.pad_token_id).tolist())
    print("attention error", end=" ")
    try:
        model.decoder.layers[0].self_attn(torch.zeros(1, 3, 32),
                                          attention_mask=torch.zeros(1, 1, 3, 4))
    except ValueError as err:
        print(err)


if __name__ == "__main__":
    main()
