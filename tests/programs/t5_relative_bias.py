"""A tiny T5 encoder-decoder as Hugging Face's modeling_t5.py writes it: T5LayerNorm (RMS norm
computed in float32, `hidden_states.pow(2).mean(-1, keepdim=True)`, cast back), the
relative position bias of the first layer (_relative_position_bucket with torch.log,
torch.where, torch.full_like, .to(torch.long); shared by the later layers), no scaling of
the attention scores, gated-GELU feed-forward, _shift_right of the labels for teacher
forcing, tied embeddings rescaled by d_model**-0.5. Trained to reverse short sequences,
then decoded greedily."""
import copy
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class T5Config:
    vocab_size = 20
    d_model = 32
    d_kv = 8
    d_ff = 64
    num_layers = 2
    num_heads = 4
    relative_attention_num_buckets = 32
    relative_attention_max_distance = 128
    dropout_rate = 0.0
    layer_norm_epsilon = 1e-6
    initializer_factor = 1.0
    decoder_start_token_id = 0
    pad_token_id = 0
    eos_token_id = 1
    is_decoder = False
    tie_word_embeddings = True


class T5LayerNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        """Construct a layernorm module in the T5 style. No bias and no subtraction of mean."""
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        # T5 uses a layer_norm which only scales and doesn't shift, which is also known as Root
        # Mean Square Layer Normalization https://arxiv.org/abs/1910.07467 thus variance is
        # calculated w/o mean and there is no bias. Additionally we want to make sure that the
        # accumulation for half-precision inputs is done in fp32
        variance = hidden_states.to(torch.float32).pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        # convert into half-precision if necessary
        if self.weight.dtype in [torch.float16, torch.bfloat16]:
            hidden_states = hidden_states.to(self.weight.dtype)
        return self.weight * hidden_states


class T5DenseGatedActDense(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.wi_0 = nn.Linear(config.d_model, config.d_ff, bias=False)
        self.wi_1 = nn.Linear(config.d_model, config.d_ff, bias=False)
        self.wo = nn.Linear(config.d_ff, config.d_model, bias=False)
        self.dropout = nn.Dropout(config.dropout_rate)
        self.act = nn.GELU(approximate="tanh")

    def forward(self, hidden_states):
        hidden_gelu = self.act(self.wi_0(hidden_states))
        hidden_linear = self.wi_1(hidden_states)
        hidden_states = hidden_gelu * hidden_linear
        hidden_states = self.dropout(hidden_states)
        hidden_states = self.wo(hidden_states)
        return hidden_states


class T5LayerFF(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.DenseReluDense = T5DenseGatedActDense(config)
        self.layer_norm = T5LayerNorm(config.d_model, eps=config.layer_norm_epsilon)
        self.dropout = nn.Dropout(config.dropout_rate)

    def forward(self, hidden_states):
        forwarded_states = self.layer_norm(hidden_states)
        forwarded_states = self.DenseReluDense(forwarded_states)
        hidden_states = hidden_states + self.dropout(forwarded_states)
        return hidden_states


class T5Attention(nn.Module):
    def __init__(self, config, has_relative_attention_bias=False):
        super().__init__()
        self.is_decoder = config.is_decoder
        self.has_relative_attention_bias = has_relative_attention_bias
        self.relative_attention_num_buckets = config.relative_attention_num_buckets
        self.relative_attention_max_distance = config.relative_attention_max_distance
        self.d_model = config.d_model
        self.key_value_proj_dim = config.d_kv
        self.n_heads = config.num_heads
        self.dropout = config.dropout_rate
        self.inner_dim = self.n_heads * self.key_value_proj_dim

        self.q = nn.Linear(self.d_model, self.inner_dim, bias=False)
        self.k = nn.Linear(self.d_model, self.inner_dim, bias=False)
        self.v = nn.Linear(self.d_model, self.inner_dim, bias=False)
        self.o = nn.Linear(self.inner_dim, self.d_model, bias=False)

        if self.has_relative_attention_bias:
            self.relative_attention_bias = nn.Embedding(self.relative_attention_num_buckets,
                                                        self.n_heads)

    @staticmethod
    def _relative_position_bucket(relative_position, bidirectional=True, num_buckets=32,
                                  max_distance=128):
        relative_buckets = 0
        if bidirectional:
            num_buckets //= 2
            relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
            relative_position = torch.abs(relative_position)
        else:
            relative_position = -torch.min(relative_position,
                                           torch.zeros_like(relative_position))
        # now relative_position is in the range [0, inf)

        # half of the buckets are for exact increments in positions
        max_exact = num_buckets // 2
        is_small = relative_position < max_exact

        # The other half of the buckets are for logarithmically bigger bins in positions up to
        # max_distance
        relative_position_if_large = max_exact + (
            torch.log(relative_position.float() / max_exact)
            / math.log(max_distance / max_exact)
            * (num_buckets - max_exact)
        ).to(torch.long)
        relative_position_if_large = torch.min(
            relative_position_if_large, torch.full_like(relative_position_if_large,
                                                        num_buckets - 1))

        relative_buckets += torch.where(is_small, relative_position, relative_position_if_large)
        return relative_buckets

    def compute_bias(self, query_length, key_length, device=None):
        """Compute binned relative position bias"""
        if device is None:
            device = self.relative_attention_bias.weight.device
        context_position = torch.arange(query_length, dtype=torch.long, device=device)[:, None]
        memory_position = torch.arange(key_length, dtype=torch.long, device=device)[None, :]
        relative_position = memory_position - context_position  # shape (query_length, key_length)
        relative_position_bucket = self._relative_position_bucket(
            relative_position,  # shape (query_length, key_length)
            bidirectional=(not self.is_decoder),
            num_buckets=self.relative_attention_num_buckets,
            max_distance=self.relative_attention_max_distance,
        )
        # shape (query_length, key_length, num_heads)
        values = self.relative_attention_bias(relative_position_bucket)
        # shape (1, num_heads, query_length, key_length)
        values = values.permute([2, 0, 1]).unsqueeze(0)
        return values

    def forward(self, hidden_states, mask=None, key_value_states=None, position_bias=None):
        batch_size, seq_length = hidden_states.shape[:2]
        real_seq_length = seq_length
        key_length = real_seq_length if key_value_states is None else key_value_states.shape[1]

        def shape(states):
            """projection"""
            return states.view(batch_size, -1, self.n_heads,
                               self.key_value_proj_dim).transpose(1, 2)

        def unshape(states):
            """reshape"""
            return states.transpose(1, 2).contiguous().view(batch_size, -1, self.inner_dim)

        query_states = shape(self.q(hidden_states))
        source = hidden_states if key_value_states is None else key_value_states
        key_states = shape(self.k(source))
        value_states = shape(self.v(source))

        # compute scores, equivalent of torch.einsum("bnqd,bnkd->bnqk", query_states, key_states)
        scores = torch.matmul(query_states, key_states.transpose(3, 2))

        if position_bias is None:
            if not self.has_relative_attention_bias:
                position_bias = torch.zeros(
                    (1, self.n_heads, real_seq_length, key_length), device=scores.device,
                    dtype=scores.dtype)
            else:
                position_bias = self.compute_bias(real_seq_length, key_length,
                                                  device=scores.device)
            if mask is not None:
                position_bias = position_bias + mask  # (batch_size, n_heads, seq_length, key_length)

        scores += position_bias
        attn_weights = nn.functional.softmax(scores.float(), dim=-1).type_as(scores)
        attn_weights = nn.functional.dropout(attn_weights, p=self.dropout,
                                             training=self.training)
        attn_output = unshape(torch.matmul(attn_weights, value_states))
        attn_output = self.o(attn_output)
        return attn_output, position_bias


class T5LayerSelfAttention(nn.Module):
    def __init__(self, config, has_relative_attention_bias=False):
        super().__init__()
        self.SelfAttention = T5Attention(config, has_relative_attention_bias)
        self.layer_norm = T5LayerNorm(config.d_model, eps=config.layer_norm_epsilon)
        self.dropout = nn.Dropout(config.dropout_rate)

    def forward(self, hidden_states, attention_mask=None, position_bias=None):
        normed_hidden_states = self.layer_norm(hidden_states)
        attention_output, position_bias = self.SelfAttention(
            normed_hidden_states, mask=attention_mask, position_bias=position_bias)
        hidden_states = hidden_states + self.dropout(attention_output)
        return hidden_states, position_bias


class T5LayerCrossAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.EncDecAttention = T5Attention(config, has_relative_attention_bias=False)
        self.layer_norm = T5LayerNorm(config.d_model, eps=config.layer_norm_epsilon)
        self.dropout = nn.Dropout(config.dropout_rate)

    def forward(self, hidden_states, key_value_states, attention_mask=None, position_bias=None):
        normed_hidden_states = self.layer_norm(hidden_states)
        attention_output, position_bias = self.EncDecAttention(
            normed_hidden_states, mask=attention_mask, key_value_states=key_value_states,
            position_bias=position_bias)
        layer_output = hidden_states + self.dropout(attention_output)
        return layer_output, position_bias


class T5Block(nn.Module):
    def __init__(self, config, has_relative_attention_bias=False):
        super().__init__()
        self.is_decoder = config.is_decoder
        self.layer = nn.ModuleList()
        self.layer.append(T5LayerSelfAttention(config, has_relative_attention_bias))
        if self.is_decoder:
            self.layer.append(T5LayerCrossAttention(config))
        self.layer.append(T5LayerFF(config))

    def forward(self, hidden_states, attention_mask=None, position_bias=None,
                encoder_hidden_states=None, encoder_attention_mask=None,
                encoder_decoder_position_bias=None):
        hidden_states, position_bias = self.layer[0](hidden_states, attention_mask,
                                                     position_bias)
        if self.is_decoder and encoder_hidden_states is not None:
            hidden_states, encoder_decoder_position_bias = self.layer[1](
                hidden_states, encoder_hidden_states, encoder_attention_mask,
                encoder_decoder_position_bias)
        hidden_states = self.layer[-1](hidden_states)
        return hidden_states, position_bias, encoder_decoder_position_bias


class T5Stack(nn.Module):
    def __init__(self, config, embed_tokens=None):
        super().__init__()
        self.embed_tokens = embed_tokens
        self.is_decoder = config.is_decoder
        self.block = nn.ModuleList(
            [T5Block(config, has_relative_attention_bias=bool(i == 0))
             for i in range(config.num_layers)])
        self.final_layer_norm = T5LayerNorm(config.d_model, eps=config.layer_norm_epsilon)
        self.dropout = nn.Dropout(config.dropout_rate)

    def forward(self, input_ids, attention_mask=None, encoder_hidden_states=None,
                encoder_attention_mask=None):
        inputs_embeds = self.embed_tokens(input_ids)
        batch_size, seq_length = input_ids.size()
        if attention_mask is None:
            attention_mask = torch.ones(batch_size, seq_length, device=inputs_embeds.device)
        if self.is_decoder:
            seq_ids = torch.arange(seq_length, device=inputs_embeds.device)
            causal_mask = seq_ids[None, None, :].repeat(batch_size, seq_length, 1) <= seq_ids[
                None, :, None]
            causal_mask = causal_mask.to(attention_mask.dtype)
            extended_attention_mask = causal_mask[:, None, :, :] * attention_mask[:, None, None, :]
        else:
            extended_attention_mask = attention_mask[:, None, None, :]
        extended_attention_mask = extended_attention_mask.to(dtype=inputs_embeds.dtype)
        extended_attention_mask = (1.0 - extended_attention_mask) * torch.finfo(
            inputs_embeds.dtype).min
        encoder_extended_attention_mask = None
        if encoder_hidden_states is not None:
            encoder_extended_attention_mask = (1.0 - encoder_attention_mask[:, None, None, :].to(
                inputs_embeds.dtype)) * torch.finfo(inputs_embeds.dtype).min

        position_bias = None
        encoder_decoder_position_bias = None
        hidden_states = self.dropout(inputs_embeds)
        for layer_module in self.block:
            hidden_states, position_bias, encoder_decoder_position_bias = layer_module(
                hidden_states, extended_attention_mask, position_bias, encoder_hidden_states,
                encoder_extended_attention_mask, encoder_decoder_position_bias)
        hidden_states = self.final_layer_norm(hidden_states)
        hidden_states = self.dropout(hidden_states)
        return hidden_states


class T5ForConditionalGeneration(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.model_dim = config.d_model
        self.shared = nn.Embedding(config.vocab_size, config.d_model)
        encoder_config = copy.deepcopy(config)
        encoder_config.is_decoder = False
        self.encoder = T5Stack(encoder_config, self.shared)
        decoder_config = copy.deepcopy(config)
        decoder_config.is_decoder = True
        self.decoder = T5Stack(decoder_config, self.shared)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.apply(self._init_weights)
        self.lm_head.weight = self.shared.weight

    def _init_weights(self, module):
        factor = self.config.initializer_factor
        if isinstance(module, T5LayerNorm):
            module.weight.data.fill_(factor * 1.0)
        elif isinstance(module, nn.Embedding) and module.weight.shape[0] == self.config.vocab_size:
            module.weight.data.normal_(mean=0.0, std=factor * 1.0)
        elif isinstance(module, T5DenseGatedActDense):
            module.wi_0.weight.data.normal_(mean=0.0, std=factor * ((self.config.d_model) ** -0.5))
            module.wi_1.weight.data.normal_(mean=0.0, std=factor * ((self.config.d_model) ** -0.5))
            module.wo.weight.data.normal_(mean=0.0, std=factor * ((self.config.d_ff) ** -0.5))
        elif isinstance(module, T5Attention):
            d_model = self.config.d_model
            key_value_proj_dim = self.config.d_kv
            n_heads = self.config.num_heads
            module.q.weight.data.normal_(mean=0.0,
                                         std=factor * ((d_model * key_value_proj_dim) ** -0.5))
            module.k.weight.data.normal_(mean=0.0, std=factor * (d_model ** -0.5))
            module.v.weight.data.normal_(mean=0.0, std=factor * (d_model ** -0.5))
            module.o.weight.data.normal_(mean=0.0,
                                         std=factor * ((n_heads * key_value_proj_dim) ** -0.5))
            if module.has_relative_attention_bias:
                module.relative_attention_bias.weight.data.normal_(mean=0.0,
                                                                   std=factor * (d_model ** -0.5))

    def _shift_right(self, input_ids):
        decoder_start_token_id = self.config.decoder_start_token_id
        pad_token_id = self.config.pad_token_id
        shifted_input_ids = input_ids.new_zeros(input_ids.shape)
        shifted_input_ids[..., 1:] = input_ids[..., :-1].clone()
        shifted_input_ids[..., 0] = decoder_start_token_id
        # replace possible -100 values in labels by `pad_token_id`
        shifted_input_ids.masked_fill_(shifted_input_ids == -100, pad_token_id)
        return shifted_input_ids

    def forward(self, input_ids, attention_mask=None, decoder_input_ids=None, labels=None,
                encoder_outputs=None):
        if encoder_outputs is None:
            encoder_outputs = self.encoder(input_ids, attention_mask)
        if labels is not None and decoder_input_ids is None:
            decoder_input_ids = self._shift_right(labels)
        sequence_output = self.decoder(decoder_input_ids,
                                       encoder_hidden_states=encoder_outputs,
                                       encoder_attention_mask=attention_mask)
        # Rescale output before projecting on vocab
        sequence_output = sequence_output * (self.model_dim ** -0.5)
        lm_logits = self.lm_head(sequence_output)
        loss = None
        if labels is not None:
            loss_fct = nn.CrossEntropyLoss(ignore_index=-100)
            loss = loss_fct(lm_logits.view(-1, lm_logits.size(-1)), labels.view(-1))
        return loss, lm_logits, encoder_outputs


def make_batch(generator, batch_size, config):
    """Reverse a sequence of 3..6 tokens (ids 2..vocab-1), eos-terminated, padded."""
    lengths = torch.randint(3, 7, (batch_size,), generator=generator)
    max_len = int(lengths.max()) + 1
    input_ids = torch.full((batch_size, max_len), config.pad_token_id)
    labels = torch.full((batch_size, max_len), -100)
    for i, n in enumerate(lengths.tolist()):
        seq = torch.randint(2, config.vocab_size, (n,), generator=generator)
        input_ids[i, :n] = seq
        input_ids[i, n] = config.eos_token_id
        labels[i, :n] = seq.flip(0)
        labels[i, n] = config.eos_token_id
    attention_mask = (input_ids != config.pad_token_id).long()
    return input_ids, attention_mask, labels


@torch.no_grad()
def greedy_decode(model, input_ids, attention_mask, max_length):
    encoder_outputs = model.encoder(input_ids, attention_mask)
    decoder_input_ids = torch.full((input_ids.size(0), 1), model.config.decoder_start_token_id)
    for _ in range(max_length):
        _, logits, _ = model(input_ids, attention_mask, decoder_input_ids=decoder_input_ids,
                             encoder_outputs=encoder_outputs)
        next_tokens = logits[:, -1].argmax(-1, keepdim=True)
        decoder_input_ids = torch.cat([decoder_input_ids, next_tokens], dim=-1)
    return decoder_input_ids[:, 1:]


def main():
    torch.manual_seed(0)
    config = T5Config()
    rp = torch.arange(-6, 7)[None, :] - torch.zeros(1, 1, dtype=torch.long)
    print("bidirectional buckets", T5Attention._relative_position_bucket(
        rp, True, num_buckets=8, max_distance=20).tolist())
    rp = torch.tensor([[-200, -100, -40, -17, -16, -9, -8, -7, -1, 0, 1, 3, 50, 300]])
    print("bidirectional 32/128", T5Attention._relative_position_bucket(rp).tolist())
    print("causal 32/128", T5Attention._relative_position_bucket(
        rp, bidirectional=False).tolist())
    norm = T5LayerNorm(4)
    x = torch.tensor([[1.0, -2.0, 3.0, 0.5]], dtype=torch.float64)
    print("T5LayerNorm", norm(x), norm(x).dtype)

    model = T5ForConditionalGeneration(config)
    print(model.encoder.block[0].layer[0])
    print(model.decoder.block[1].layer[1].EncDecAttention)
    print(f"parameters: {sum(p.numel() for p in model.parameters()):,}")
    labels = torch.tensor([[5, 6, 1, -100]])
    print("shift_right", model._shift_right(labels))
    bias = model.encoder.block[0].layer[0].SelfAttention.compute_bias(3, 4)
    print("position bias shape", tuple(bias.shape))

    g = torch.Generator().manual_seed(0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3)
    model.train()
    for step in range(30):
        input_ids, attention_mask, labels = make_batch(g, 24, config)
        loss, _, _ = model(input_ids, attention_mask, labels=labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 10 == 0 or step == 29:
            print(f"step {step:2d} loss {loss.item():.4f}")

    model.eval()
    input_ids, attention_mask, labels = make_batch(g, 64, config)
    pred = greedy_decode(model, input_ids, attention_mask, labels.size(1))
    valid = labels != -100
    acc = (pred == labels)[valid].float().mean().item()
    print(f"token accuracy {acc:.3f}")


if __name__ == "__main__":
    main()
