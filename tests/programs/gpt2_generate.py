"""GPT-2 inference the way Hugging Face's modeling_gpt2.py and generation utilities do it:
attention layers return `present = (key, value)` and take `layer_past`, concatenated with
torch.cat on dim=-2 (`use_cache`); logits processors for temperature, repetition penalty
(torch.gather / scatter_), top-k (torch.topk) and top-p (torch.sort(descending=True),
cumsum of softmax, scatter of the removal mask); sampling with torch.multinomial and a seeded
Generator; greedy decoding with and without the cache must agree; beam search over flattened
scores with torch.topk, reordering the cache with index_select. The tiny model is first
trained a few steps on a repeating-pattern corpus."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class GPT2Config:
    vocab_size = 24
    n_positions = 64
    n_embd = 32
    n_layer = 2
    n_head = 4
    layer_norm_epsilon = 1e-5
    initializer_range = 0.02


class Conv1D(nn.Module):
    """Basically works like a linear layer but the weights are transposed."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        x = x.view(size_out)
        return x


class GPT2Attention(nn.Module):
    def __init__(self, config):
        super().__init__()
        max_positions = config.n_positions
        self.register_buffer(
            "bias",
            torch.tril(torch.ones((max_positions, max_positions), dtype=torch.bool)).view(
                1, 1, max_positions, max_positions),
            persistent=False)
        self.register_buffer("masked_bias", torch.tensor(-1e4), persistent=False)
        self.embed_dim = config.n_embd
        self.num_heads = config.n_head
        self.head_dim = self.embed_dim // self.num_heads
        self.c_attn = Conv1D(3 * self.embed_dim, self.embed_dim)
        self.c_proj = Conv1D(self.embed_dim, self.embed_dim)

    def _attn(self, query, key, value, attention_mask=None):
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        attn_weights = attn_weights / torch.full(
            [], value.size(-1) ** 0.5, dtype=attn_weights.dtype, device=attn_weights.device)
        query_length, key_length = query.size(-2), key.size(-2)
        causal_mask = self.bias[:, :, key_length - query_length: key_length, :key_length]
        mask_value = torch.finfo(attn_weights.dtype).min
        mask_value = torch.full([], mask_value, dtype=attn_weights.dtype,
                                device=attn_weights.device)
        attn_weights = torch.where(causal_mask, attn_weights.to(attn_weights.dtype), mask_value)
        if attention_mask is not None:
            attn_weights = attn_weights + attention_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_output = torch.matmul(attn_weights, value)
        return attn_output, attn_weights

    def _split_heads(self, tensor, num_heads, attn_head_size):
        new_shape = tensor.size()[:-1] + (num_heads, attn_head_size)
        tensor = tensor.view(new_shape)
        return tensor.permute(0, 2, 1, 3)  # (batch, head, seq_length, head_features)

    def _merge_heads(self, tensor, num_heads, attn_head_size):
        tensor = tensor.permute(0, 2, 1, 3).contiguous()
        new_shape = tensor.size()[:-2] + (num_heads * attn_head_size,)
        return tensor.view(new_shape)

    def forward(self, hidden_states, layer_past=None, attention_mask=None, use_cache=False):
        query, key, value = self.c_attn(hidden_states).split(self.embed_dim, dim=2)
        query = self._split_heads(query, self.num_heads, self.head_dim)
        key = self._split_heads(key, self.num_heads, self.head_dim)
        value = self._split_heads(value, self.num_heads, self.head_dim)

        if layer_past is not None:
            past_key, past_value = layer_past
            key = torch.cat((past_key, key), dim=-2)
            value = torch.cat((past_value, value), dim=-2)

        if use_cache is True:
            present = (key, value)
        else:
            present = None

        attn_output, attn_weights = self._attn(query, key, value, attention_mask)
        attn_output = self._merge_heads(attn_output, self.num_heads, self.head_dim)
        attn_output = self.c_proj(attn_output)
        return attn_output, present


class GPT2MLP(nn.Module):
    def __init__(self, intermediate_size, config):
        super().__init__()
        embed_dim = config.n_embd
        self.c_fc = Conv1D(intermediate_size, embed_dim)
        self.c_proj = Conv1D(embed_dim, intermediate_size)
        self.act = nn.GELU(approximate="tanh")

    def forward(self, hidden_states):
        return self.c_proj(self.act(self.c_fc(hidden_states)))


class GPT2Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        hidden_size = config.n_embd
        self.ln_1 = nn.LayerNorm(hidden_size, eps=config.layer_norm_epsilon)
        self.attn = GPT2Attention(config)
        self.ln_2 = nn.LayerNorm(hidden_size, eps=config.layer_norm_epsilon)
        self.mlp = GPT2MLP(4 * hidden_size, config)

    def forward(self, hidden_states, layer_past=None, attention_mask=None, use_cache=False):
        residual = hidden_states
        hidden_states = self.ln_1(hidden_states)
        attn_output, present = self.attn(hidden_states, layer_past=layer_past,
                                         attention_mask=attention_mask, use_cache=use_cache)
        hidden_states = attn_output + residual
        residual = hidden_states
        hidden_states = self.ln_2(hidden_states)
        feed_forward_hidden_states = self.mlp(hidden_states)
        hidden_states = residual + feed_forward_hidden_states
        return hidden_states, present


class GPT2LMHeadModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.n_positions, config.n_embd)
        self.h = nn.ModuleList([GPT2Block(config) for _ in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.apply(self._init_weights)
        self.lm_head.weight = self.wte.weight
        for name, p in self.named_parameters():
            if name == "c_proj.weight" or name.endswith("mlp.c_proj.weight"):
                p.data.normal_(mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def _init_weights(self, module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            module.weight.data.normal_(mean=0.0, std=self.config.initializer_range)
        elif isinstance(module, nn.LayerNorm):
            module.bias.data.zero_()
            module.weight.data.fill_(1.0)

    def forward(self, input_ids, past_key_values=None, use_cache=False, labels=None):
        input_shape = input_ids.size()
        if past_key_values is None:
            past_length = 0
            past_key_values = tuple([None] * len(self.h))
        else:
            past_length = past_key_values[0][0].size(-2)
        position_ids = torch.arange(past_length, input_shape[-1] + past_length,
                                    dtype=torch.long, device=input_ids.device)
        position_ids = position_ids.unsqueeze(0)
        hidden_states = self.wte(input_ids) + self.wpe(position_ids)
        presents = () if use_cache else None
        for block, layer_past in zip(self.h, past_key_values):
            hidden_states, present = block(hidden_states, layer_past=layer_past,
                                           use_cache=use_cache)
            if use_cache is True:
                presents = presents + (present,)
        hidden_states = self.ln_f(hidden_states)
        lm_logits = self.lm_head(hidden_states)
        loss = None
        if labels is not None:
            shift_logits = lm_logits[..., :-1, :].contiguous()
            shift_labels = labels[..., 1:].contiguous()
            loss_fct = nn.CrossEntropyLoss()
            loss = loss_fct(shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1))
        return loss, lm_logits, presents


# --- logits processors (transformers/generation/logits_process.py) ---
class TemperatureLogitsWarper:
    def __init__(self, temperature):
        self.temperature = temperature

    def __call__(self, input_ids, scores):
        return scores / self.temperature


class RepetitionPenaltyLogitsProcessor:
    def __init__(self, penalty):
        self.penalty = penalty

    def __call__(self, input_ids, scores):
        score = torch.gather(scores, 1, input_ids)
        # if score < 0 then repetition penalty has to be multiplied to reduce the token probability
        score = torch.where(score < 0, score * self.penalty, score / self.penalty)
        scores_processed = scores.scatter(1, input_ids, score)
        return scores_processed


class TopKLogitsWarper:
    def __init__(self, top_k, filter_value=-float("Inf"), min_tokens_to_keep=1):
        self.top_k = max(top_k, min_tokens_to_keep)
        self.filter_value = filter_value

    def __call__(self, input_ids, scores):
        top_k = min(self.top_k, scores.size(-1))  # Safety check
        # Remove all tokens with a probability less than the last token of the top-k
        indices_to_remove = scores < torch.topk(scores, top_k)[0][..., -1, None]
        scores_processed = scores.masked_fill(indices_to_remove, self.filter_value)
        return scores_processed


class TopPLogitsWarper:
    def __init__(self, top_p, filter_value=-float("Inf"), min_tokens_to_keep=1):
        self.top_p = top_p
        self.filter_value = filter_value
        self.min_tokens_to_keep = min_tokens_to_keep

    def __call__(self, input_ids, scores):
        sorted_logits, sorted_indices = torch.sort(scores, descending=False)
        cumulative_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
        # Remove tokens with cumulative top_p above the threshold (token with 0 are kept)
        sorted_indices_to_remove = cumulative_probs <= (1 - self.top_p)
        # Keep at least min_tokens_to_keep
        sorted_indices_to_remove[..., -self.min_tokens_to_keep:] = 0
        # scatter sorted tensors to original indexing
        indices_to_remove = sorted_indices_to_remove.scatter(1, sorted_indices,
                                                             sorted_indices_to_remove)
        scores_processed = scores.masked_fill(indices_to_remove, self.filter_value)
        return scores_processed


def top_k_top_p_filtering(logits, top_k=0, top_p=1.0, filter_value=-float("Inf")):
    """The classic run_generation.py version (sort descending, shift the mask right)."""
    top_k = min(top_k, logits.size(-1))
    if top_k > 0:
        indices_to_remove = logits < torch.topk(logits, top_k)[0][..., -1, None]
        logits[indices_to_remove] = filter_value
    if top_p < 1.0:
        sorted_logits, sorted_indices = torch.sort(logits, descending=True)
        cumulative_probs = torch.cumsum(F.softmax(sorted_logits, dim=-1), dim=-1)
        sorted_indices_to_remove = cumulative_probs > top_p
        sorted_indices_to_remove[..., 1:] = sorted_indices_to_remove[..., :-1].clone()
        sorted_indices_to_remove[..., 0] = 0
        indices_to_remove = sorted_indices_to_remove.scatter(
            dim=1, index=sorted_indices, src=sorted_indices_to_remove)
        logits[indices_to_remove] = filter_value
    return logits


@torch.no_grad()
def greedy(model, input_ids, max_new_tokens, use_cache):
    past = None
    generated = input_ids
    for _ in range(max_new_tokens):
        inputs = generated[:, -1:] if (use_cache and past is not None) else generated
        _, logits, past = model(inputs, past_key_values=past if use_cache else None,
                                use_cache=use_cache)
        next_token = logits[:, -1, :].argmax(dim=-1, keepdim=True)
        generated = torch.cat([generated, next_token], dim=-1)
    return generated


@torch.no_grad()
def sample(model, input_ids, max_new_tokens, processors, generator):
    past = None
    generated = input_ids
    for _ in range(max_new_tokens):
        inputs = generated if past is None else generated[:, -1:]
        _, logits, past = model(inputs, past_key_values=past, use_cache=True)
        scores = logits[:, -1, :]
        for proc in processors:
            scores = proc(generated, scores)
        probs = nn.functional.softmax(scores, dim=-1)
        next_tokens = torch.multinomial(probs, num_samples=1, generator=generator)
        generated = torch.cat([generated, next_tokens], dim=-1)
    return generated


@torch.no_grad()
def beam_search(model, input_ids, num_beams, max_new_tokens, length_penalty=1.0):
    batch_size, cur_len = input_ids.shape
    input_ids = input_ids.repeat_interleave(num_beams, dim=0)
    beam_scores = torch.zeros((batch_size, num_beams), dtype=torch.float)
    beam_scores[:, 1:] = -1e9
    beam_scores = beam_scores.view((batch_size * num_beams,))
    past = None
    vocab_size = model.config.vocab_size
    for _ in range(max_new_tokens):
        inputs = input_ids if past is None else input_ids[:, -1:]
        _, logits, past = model(inputs, past_key_values=past, use_cache=True)
        next_token_scores = nn.functional.log_softmax(logits[:, -1, :], dim=-1)
        next_token_scores = next_token_scores + beam_scores[:, None].expand_as(next_token_scores)
        next_token_scores = next_token_scores.view(batch_size, num_beams * vocab_size)
        next_token_scores, next_tokens = torch.topk(next_token_scores, 2 * num_beams, dim=1,
                                                    largest=True, sorted=True)
        next_indices = torch.div(next_tokens, vocab_size, rounding_mode="floor")
        next_tokens = next_tokens % vocab_size
        # keep the best num_beams (no eos in this vocabulary)
        beam_scores = next_token_scores[:, :num_beams].reshape(-1)
        beam_next_tokens = next_tokens[:, :num_beams].reshape(-1)
        beam_idx = (next_indices[:, :num_beams]
                    + torch.arange(batch_size)[:, None] * num_beams).reshape(-1)
        input_ids = torch.cat([input_ids[beam_idx, :], beam_next_tokens.unsqueeze(-1)], dim=-1)
        # reorder the cache: _reorder_cache
        past = tuple(tuple(past_state.index_select(0, beam_idx.to(past_state.device))
                           for past_state in layer_past) for layer_past in past)
    scores = beam_scores.view(batch_size, num_beams) / (input_ids.shape[-1] ** length_penalty)
    best = scores.argmax(dim=-1) + torch.arange(batch_size) * num_beams
    return input_ids[best], scores


def corpus(generator, n, length, vocab):
    # repeating patterns: each row repeats a random motif of length 3 or 4
    rows = []
    for _ in range(n):
        period = int(torch.randint(3, 5, (1,), generator=generator))
        motif = torch.randint(0, vocab, (period,), generator=generator)
        rows.append(motif.repeat(length // period + 1)[:length])
    return torch.stack(rows)


def main():
    torch.manual_seed(0)
    config = GPT2Config()
    model = GPT2LMHeadModel(config)
    print(model.h[0])
    print(f"number of parameters: {sum(p.numel() for p in model.parameters()):,}")
    print("tied:", model.lm_head.weight.data_ptr() == model.wte.weight.data_ptr())

    g = torch.Generator().manual_seed(1234)
    data = corpus(g, 256, 16, config.vocab_size)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, betas=(0.9, 0.95))
    model.train()
    for step in range(30):
        idx = torch.randint(0, data.size(0), (32,), generator=g)
        loss, _, _ = model(data[idx], labels=data[idx])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step % 10 == 0 or step == 29:
            print(f"step {step} loss {loss.item():.4f}")

    model.eval()
    prompt = data[:2, :6]
    _, logits, past = model(prompt, use_cache=True)
    print("past_key_values", len(past), len(past[0]), tuple(past[0][0].shape))
    out_cached = greedy(model, prompt, 8, use_cache=True)
    out_full = greedy(model, prompt, 8, use_cache=False)
    print("greedy cached == uncached:", torch.equal(out_cached, out_full))
    _, full_logits, _ = model(out_full)
    _, step_logits, _ = model(out_full[:, -1:], past_key_values=model(out_full[:, :-1],
                                                                      use_cache=True)[2])
    print("last-step logits agree:",
          torch.allclose(full_logits[:, -1], step_logits[:, -1], atol=1e-5))

    # the processors on fixed scores
    scores = torch.tensor([[1.0, -2.0, 3.0, 0.5, -0.5, 2.0]])
    ids = torch.tensor([[2, 1]])
    print("repetition penalty", RepetitionPenaltyLogitsProcessor(1.5)(ids, scores))
    print("top-k", TopKLogitsWarper(3)(ids, scores))
    print("top-p", TopPLogitsWarper(0.8)(ids, scores))
    print("classic top-k/top-p", top_k_top_p_filtering(scores.clone(), top_k=4, top_p=0.9))
    print("temperature", TemperatureLogitsWarper(0.5)(ids, scores))

    gen = torch.Generator().manual_seed(42)
    probs = torch.softmax(scores, dim=-1)
    draws = torch.multinomial(probs.expand(3, -1), num_samples=4, replacement=True, generator=gen)
    print("multinomial draws", draws)

    gen = torch.Generator().manual_seed(0)
    processors = [RepetitionPenaltyLogitsProcessor(1.2), TemperatureLogitsWarper(0.7),
                  TopKLogitsWarper(10), TopPLogitsWarper(0.9)]
    sampled = sample(model, prompt, 8, processors, gen)
    print("sampled shape", tuple(sampled.shape), sampled.dtype)

    beams, beam_scores = beam_search(model, prompt, num_beams=3, max_new_tokens=6)
    print("beam output shape", tuple(beams.shape), "scores shape", tuple(beam_scores.shape))
    print("beam best scores", beam_scores.max(dim=-1).values)


if __name__ == "__main__":
    main()
