"""Speculative decoding (Leviathan et al. / Chen et al., in the style of the reference
implementations that accompany the papers and of `transformers`' assisted generation):
a small draft model proposes gamma tokens, the target model scores them in one forward
pass, each is accepted with probability min(1, p/q) (torch.rand with a seeded
Generator), a rejection resamples from norm(max(p - q, 0)) with torch.multinomial.
The target's key/value cache is kept in int8 with per-channel scales
(`torch.round(x / scale).clamp(-128, 127).to(torch.int8)`) and dequantized on use.
Both models are first trained on the same synthetic sequences."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def quantize_per_channel(x: torch.Tensor, dim: int = -1):
    """Symmetric int8 quantization with one scale per channel (the last dim is reduced)."""
    amax = x.abs().amax(dim=dim, keepdim=True).clamp(min=1e-8)
    scale = amax / 127.0
    q = torch.round(x / scale).clamp(-128, 127).to(torch.int8)
    return q, scale


def dequantize(q: torch.Tensor, scale: torch.Tensor, dtype=torch.float32):
    return q.to(dtype) * scale


class QuantizedKVCache:
    def __init__(self):
        self.k, self.k_scale, self.v, self.v_scale = [], [], [], []

    def append(self, layer, k, v):
        qk, sk = quantize_per_channel(k)
        qv, sv = quantize_per_channel(v)
        if layer == len(self.k):
            self.k.append(qk)
            self.k_scale.append(sk)
            self.v.append(qv)
            self.v_scale.append(sv)
        else:
            self.k[layer] = torch.cat([self.k[layer], qk], dim=-2)
            self.k_scale[layer] = torch.cat([self.k_scale[layer], sk], dim=-2)
            self.v[layer] = torch.cat([self.v[layer], qv], dim=-2)
            self.v_scale[layer] = torch.cat([self.v_scale[layer], sv], dim=-2)
        return (dequantize(self.k[layer], self.k_scale[layer]),
                dequantize(self.v[layer], self.v_scale[layer]))

    def crop(self, length):
        for lst in (self.k, self.k_scale, self.v, self.v_scale):
            for i in range(len(lst)):
                lst[i] = lst[i][..., :length, :]

    def __len__(self):
        return 0 if not self.k else self.k[0].shape[-2]

    def nbytes(self):
        return sum(t.numel() * t.element_size()
                   for lst in (self.k, self.k_scale, self.v, self.v_scale) for t in lst)


class Block(nn.Module):
    def __init__(self, dim, n_head):
        super().__init__()
        self.n_head = n_head
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x, layer=None, cache=None, past=0):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        if cache is not None:
            k, v = cache.append(layer, k, v)
        # causal over the new positions, everything cached is visible
        mask = torch.ones(T, past + T, dtype=torch.bool).tril(diagonal=past)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.proj(y)
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab, dim, n_layer, n_head, block_size=64):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(block_size, dim)
        self.blocks = nn.ModuleList([Block(dim, n_head) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, idx, cache=None):
        past = len(cache) if cache is not None else 0
        pos = torch.arange(past, past + idx.size(1))
        x = self.wte(idx) + self.wpe(pos)
        for i, block in enumerate(self.blocks):
            x = block(x, i, cache, past)
        return self.head(self.ln_f(x))


def max_fn(x):
    x_max = torch.where(x > 0, x, torch.zeros_like(x))
    return x_max / torch.sum(x_max, dim=-1, keepdim=True)


def norm_logits(logits, temperature):
    return F.softmax(logits / temperature, dim=-1)


@torch.no_grad()
def autoregressive_sampling(model, prefix, n, temperature, generator):
    x = prefix
    for _ in range(n):
        probs = norm_logits(model(x)[:, -1, :], temperature)
        x = torch.cat((x, torch.multinomial(probs, 1, generator=generator)), dim=1)
    return x


@torch.no_grad()
def speculative_sampling(target, draft, prefix, max_len, gamma, temperature, generator):
    seq_len = prefix.shape[1]
    T = seq_len + max_len
    accepted = 0
    proposed = 0
    cache = QuantizedKVCache()
    target_probs_all = norm_logits(target(prefix[:, :-1], cache), temperature)
    while prefix.shape[1] < T:
        # the draft proposes gamma tokens
        x = prefix
        prefix_len = prefix.shape[1]
        q_list = []
        for _ in range(gamma):
            q = norm_logits(draft(x)[:, -1, :], temperature)
            next_tok = torch.multinomial(q, num_samples=1, generator=generator)
            q_list.append(q)
            x = torch.cat((x, next_tok), dim=1)
        # the target scores all of them at once, reusing its cache
        new_logits = target(x[:, len(cache):], cache)
        p = norm_logits(new_logits, temperature)  # positions prefix_len-1 .. prefix_len+gamma-1
        n = prefix_len - 1
        for i in range(gamma):
            r = torch.rand(1, generator=generator)
            j = x[:, prefix_len + i]
            p_j = p[:, i, j]
            q_j = q_list[i][:, j]
            proposed += 1
            if r < torch.min(torch.tensor([1.0]), p_j / q_j):
                n += 1
                accepted += 1
            else:
                # reject: resample from the residual distribution
                t = torch.multinomial(max_fn(p[:, i, :] - q_list[i]), num_samples=1,
                                      generator=generator)
                break
        else:
            t = torch.multinomial(p[:, gamma, :], num_samples=1, generator=generator)
        prefix = torch.cat((x[:, :n + 1], t), dim=1)
        cache.crop(prefix.shape[1] - 1)
    del target_probs_all
    return prefix[:, :T], accepted, proposed, cache


def train(model, data, steps, lr, tag, generator):
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    for step in range(steps):
        idx = torch.randint(0, data.size(0), (32,), generator=generator)
        x = data[idx]
        logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), x[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % 10 == 0 or step == steps - 1:
            print(f"{tag} step {step:2d} loss {loss.item():.4f}")


def main():
    torch.manual_seed(0)
    x = torch.tensor([[0.5, -1.0, 0.25], [3.0, 0.0, -6.0]])
    q, scale = quantize_per_channel(x)
    print("int8", q, q.dtype, "scale", scale.flatten())
    print("dequantized", dequantize(q, scale))
    print("round half to even", torch.round(torch.tensor([0.5, 1.5, 2.5, -0.5, -2.5])))
    print("clamp then int8", torch.tensor([-300.0, -128.4, 127.6, 300.0]).clamp(-128, 127)
          .to(torch.int8))
    print("max_fn", max_fn(torch.tensor([[0.2, -0.1, 0.3, -0.4]])))

    vocab = 12
    g = torch.Generator().manual_seed(0)
    start = torch.randint(0, vocab, (128, 1), generator=g)
    step = torch.randint(1, 4, (128, 1), generator=g)
    data = (start + step * torch.arange(24)) % vocab

    target = GPT(vocab, 32, 2, 4)
    draft = GPT(vocab, 16, 1, 2)
    print(f"target params {sum(p.numel() for p in target.parameters()):,} "
          f"draft params {sum(p.numel() for p in draft.parameters()):,}")
    train(target, data, 30, 3e-3, "target", g)
    train(draft, data, 20, 3e-3, "draft", g)
    target.eval()
    draft.eval()

    prompt = data[:1, :6]
    with torch.no_grad():
        full = target(prompt)
        cache = QuantizedKVCache()
        cached = target(prompt, cache)
        print("int8 cache", cache.k[0].dtype, tuple(cache.k[0].shape), "scales",
              tuple(cache.k_scale[0].shape), f"{cache.nbytes()} bytes")
        err = (full - cached).abs().max().item()
        print("quantized-cache logits close:", err < 0.05)
        step_logits = target(data[:1, 6:7], cache)
        ref = target(data[:1, :7])[:, -1:]
        print("incremental step close:", (step_logits - ref).abs().max().item() < 0.05)

    gen = torch.Generator().manual_seed(123)
    out = autoregressive_sampling(target, prompt, 6, 1.0, gen)
    print("autoregressive", tuple(out.shape), out.dtype)
    gen = torch.Generator().manual_seed(123)
    out, accepted, proposed, cache = speculative_sampling(target, draft, prompt, 8, 4, 1.0, gen)
    print("speculative", tuple(out.shape), out.dtype, "cache length", len(cache))
    print(f"acceptance rate {accepted / max(proposed, 1):.2f}")
    print("follows the pattern:", ((out[0, 1:] - out[0, :-1]) % vocab).tolist())


if __name__ == "__main__":
    main()
