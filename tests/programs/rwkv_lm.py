"""A small RWKV-4 language model (in the style of BlinkDL/RWKV-LM's model.py and "RWKV in
150 lines"): time-mix and channel-mix blocks with token shift by nn.ZeroPad2d((0, 0, 1, -1)),
time_decay / time_first parameters initialised by layer ratio, the WKV recurrence as a
Python loop with exp/maximum for numerical stability (the GPT mode) checked against the
RNN mode with (aa, bb, pp) state, LayerNorm, head tied to nothing, and sampling with top-p
through sort/cumsum/masked_fill."""
import math
import types

import numpy as np
import torch
import torch.nn as nn
from torch.nn import functional as F


class RWKV_TimeMix(nn.Module):
    def __init__(self, config, layer_id):
        super().__init__()
        self.layer_id = layer_id
        self.ctx_len = config.ctx_len
        self.n_embd = config.n_embd
        attn_sz = config.n_embd

        with torch.no_grad():  # fancy init
            ratio_0_to_1 = layer_id / (config.n_layer - 1)  # 0 to 1
            ratio_1_to_almost0 = 1.0 - (layer_id / config.n_layer)  # 1 to ~0

            # fancy time_decay
            decay_speed = torch.ones(attn_sz)
            for h in range(attn_sz):
                decay_speed[h] = -5 + 8 * (h / (attn_sz - 1)) ** (0.7 + 1.3 * ratio_0_to_1)
            self.time_decay = nn.Parameter(decay_speed)

            # fancy time_first
            zigzag = torch.tensor([(i + 1) % 3 - 1 for i in range(attn_sz)]) * 0.5
            self.time_first = nn.Parameter(torch.ones(attn_sz) * math.log(0.3) + zigzag)

            # fancy time_mix
            x = torch.ones(1, 1, config.n_embd)
            for i in range(config.n_embd):
                x[0, 0, i] = i / config.n_embd
            self.time_mix_k = nn.Parameter(torch.pow(x, ratio_1_to_almost0))
            self.time_mix_v = nn.Parameter(torch.pow(x, ratio_1_to_almost0) + 0.3 * ratio_0_to_1)
            self.time_mix_r = nn.Parameter(torch.pow(x, 0.5 * ratio_1_to_almost0))

        self.time_shift = nn.ZeroPad2d((0, 0, 1, -1))

        self.key = nn.Linear(config.n_embd, attn_sz, bias=False)
        self.value = nn.Linear(config.n_embd, attn_sz, bias=False)
        self.receptance = nn.Linear(config.n_embd, attn_sz, bias=False)
        self.output = nn.Linear(attn_sz, config.n_embd, bias=False)

    def jit_func(self, x):
        # Mix x with the previous timestep to produce xk, xv, xr
        xx = self.time_shift(x)
        xk = x * self.time_mix_k + xx * (1 - self.time_mix_k)
        xv = x * self.time_mix_v + xx * (1 - self.time_mix_v)
        xr = x * self.time_mix_r + xx * (1 - self.time_mix_r)

        k = self.key(xk)
        v = self.value(xv)
        r = self.receptance(xr)
        sr = torch.sigmoid(r)
        return sr, k, v

    def forward(self, x):
        B, T, C = x.size()  # x = (Batch,Time,Channel)
        sr, k, v = self.jit_func(x)
        rwkv = sr * wkv_gpt(-torch.exp(self.time_decay), self.time_first, k, v)
        rwkv = self.output(rwkv)
        return rwkv


def wkv_gpt(w, u, k, v):
    """The WKV operator, numerically stable: a running (a, b) pair scaled by exp(-p)."""
    B, T, C = k.size()
    aa = torch.zeros(B, C)
    bb = torch.zeros(B, C)
    pp = torch.full((B, C), -1e38)
    out = []
    for t in range(T):
        kk = k[:, t]
        vv = v[:, t]
        ww = u + kk
        p = torch.maximum(pp, ww)
        e1 = torch.exp(pp - p)
        e2 = torch.exp(ww - p)
        out.append((e1 * aa + e2 * vv) / (e1 * bb + e2))
        ww = w + pp
        p = torch.maximum(ww, kk)
        e1 = torch.exp(ww - p)
        e2 = torch.exp(kk - p)
        aa = e1 * aa + e2 * vv
        bb = e1 * bb + e2
        pp = p
    return torch.stack(out, dim=1)


class RWKV_ChannelMix(nn.Module):
    def __init__(self, config, layer_id):
        super().__init__()
        self.layer_id = layer_id

        self.time_shift = nn.ZeroPad2d((0, 0, 1, -1))

        with torch.no_grad():  # fancy init of time_mix
            ratio_1_to_almost0 = 1.0 - (layer_id / config.n_layer)  # 1 to ~0

            x = torch.ones(1, 1, config.n_embd)
            for i in range(config.n_embd):
                x[0, 0, i] = i / config.n_embd

            self.time_mix_k = nn.Parameter(torch.pow(x, ratio_1_to_almost0))
            self.time_mix_r = nn.Parameter(torch.pow(x, ratio_1_to_almost0))

        hidden_sz = 4 * config.n_embd
        self.key = nn.Linear(config.n_embd, hidden_sz, bias=False)
        self.receptance = nn.Linear(config.n_embd, config.n_embd, bias=False)
        self.value = nn.Linear(hidden_sz, config.n_embd, bias=False)

    def forward(self, x):
        xx = self.time_shift(x)
        xk = x * self.time_mix_k + xx * (1 - self.time_mix_k)
        xr = x * self.time_mix_r + xx * (1 - self.time_mix_r)

        k = self.key(xk)
        k = torch.square(torch.relu(k))
        kv = self.value(k)

        rkv = torch.sigmoid(self.receptance(xr)) * kv
        return rkv


class Block(nn.Module):
    def __init__(self, config, layer_id):
        super().__init__()
        self.config = config
        self.layer_id = layer_id

        self.ln1 = nn.LayerNorm(config.n_embd)
        self.ln2 = nn.LayerNorm(config.n_embd)

        if self.layer_id == 0:
            self.ln0 = nn.LayerNorm(config.n_embd)

        self.att = RWKV_TimeMix(config, layer_id)
        self.ffn = RWKV_ChannelMix(config, layer_id)

    def forward(self, x):
        if self.layer_id == 0:
            x = self.ln0(x)
        x = x + self.att(self.ln1(x))
        x = x + self.ffn(self.ln2(x))
        return x


class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.step = 0
        self.config = config

        self.emb = nn.Embedding(config.vocab_size, config.n_embd)
        self.blocks = nn.Sequential(*[Block(config, i) for i in range(config.n_layer)])
        self.ln_out = nn.LayerNorm(config.n_embd)
        self.head = nn.Linear(config.n_embd, config.vocab_size, bias=False)

        self.ctx_len = config.ctx_len
        self.apply(self._init_weights)
        print("number of parameters: %e" % sum(p.numel() for p in self.parameters()))

    def _init_weights(self, module):
        if isinstance(module, (nn.Linear)):
            module.weight.data.normal_(mean=0.0, std=0.01)
        if isinstance(module, (nn.Embedding)):
            module.weight.data.uniform_(-1e-4, 1e-4)

    def configure_optimizers(self, train_config):
        no_decay = set()
        for mn, m in self.named_modules():  # here we disable weight_decay
            for pn, p in m.named_parameters():
                fpn = "%s.%s" % (mn, pn) if mn else pn  # full param name
                no_decay.add(fpn)

        param_dict = {pn: p for pn, p in self.named_parameters()}
        optim_groups = [
            {"params": [param_dict[pn] for pn in sorted(list(no_decay))], "weight_decay": 0.0},
        ]
        optimizer = torch.optim.Adam(optim_groups, lr=train_config.learning_rate,
                                     betas=train_config.betas, eps=train_config.eps)
        return optimizer

    def forward(self, idx, targets=None):
        self.step += 1
        B, T = idx.size()
        assert T <= self.ctx_len, "Cannot forward, because len(input) > model ctx_len."

        x = self.emb(idx)
        x = self.blocks(x)
        x = self.ln_out(x)
        x = self.head(x)

        loss = None
        if targets is not None:
            loss = F.cross_entropy(x.view(-1, x.size(-1)), targets.reshape(-1))
        return x, loss


@torch.no_grad()
def forward_rnn(model, token, state):
    """RNN mode: one token at a time with per-layer state (xx_att, aa, bb, pp, xx_ffn)."""
    x = model.emb.weight[token]
    for i, block in enumerate(model.blocks):
        if i == 0:
            x = block.ln0(x)
        att, ffn = block.att, block.ffn
        xa = block.ln1(x)
        xk = xa * att.time_mix_k.view(-1) + state[5 * i + 0] * (1 - att.time_mix_k.view(-1))
        xv = xa * att.time_mix_v.view(-1) + state[5 * i + 0] * (1 - att.time_mix_v.view(-1))
        xr = xa * att.time_mix_r.view(-1) + state[5 * i + 0] * (1 - att.time_mix_r.view(-1))
        state[5 * i + 0] = xa
        r = torch.sigmoid(att.receptance.weight @ xr)
        k = att.key.weight @ xk
        v = att.value.weight @ xv
        aa, bb, pp = state[5 * i + 1], state[5 * i + 2], state[5 * i + 3]
        ww = att.time_first + k
        qq = torch.maximum(pp, ww)
        e1 = torch.exp(pp - qq)
        e2 = torch.exp(ww - qq)
        wkv = (e1 * aa + e2 * v) / (e1 * bb + e2)
        ww = pp - torch.exp(att.time_decay)
        qq = torch.maximum(ww, k)
        e1 = torch.exp(ww - qq)
        e2 = torch.exp(k - qq)
        state[5 * i + 1] = e1 * aa + e2 * v
        state[5 * i + 2] = e1 * bb + e2
        state[5 * i + 3] = qq
        x = x + att.output.weight @ (r * wkv)
        xf = block.ln2(x)
        xk = xf * ffn.time_mix_k.view(-1) + state[5 * i + 4] * (1 - ffn.time_mix_k.view(-1))
        xr = xf * ffn.time_mix_r.view(-1) + state[5 * i + 4] * (1 - ffn.time_mix_r.view(-1))
        state[5 * i + 4] = xf
        r = torch.sigmoid(ffn.receptance.weight @ xr)
        k = torch.square(torch.relu(ffn.key.weight @ xk))
        x = x + r * (ffn.value.weight @ k)
    x = model.ln_out(x)
    return model.head.weight @ x, state


def sample_logits(logits, temperature=1.0, top_p=0.8):
    probs = F.softmax(logits.float(), dim=-1)
    sorted_probs, sorted_ids = torch.sort(probs, descending=True)
    cumulative_probs = torch.cumsum(sorted_probs, dim=-1)
    cutoff_mask = cumulative_probs > top_p
    cutoff_mask[..., 1:] = cutoff_mask[..., :-1].clone()
    cutoff_mask[..., 0] = False
    sorted_probs = sorted_probs.masked_fill(cutoff_mask, 0.0)
    probs = torch.zeros_like(probs).scatter_(-1, sorted_ids, sorted_probs)
    if temperature != 1.0:
        probs = probs.pow(1.0 / temperature)
    probs = probs / probs.sum(dim=-1, keepdim=True)
    return torch.multinomial(probs, num_samples=1)[0].item()


torch.manual_seed(42)
np.random.seed(42)
torch.set_printoptions(precision=4, sci_mode=False)
config = types.SimpleNamespace(vocab_size=12, n_embd=32, n_layer=2, ctx_len=16)
model = GPT(config)
print(model.blocks[0])
print("time_decay", model.blocks[1].att.time_decay[:6])
print("time_first", model.blocks[0].att.time_first[:6])
print("time_mix_k", model.blocks[0].att.time_mix_k.shape, model.blocks[0].att.time_mix_k[0, 0, :4])
x = torch.arange(6.0).view(1, 3, 2)
print("time shift", model.blocks[0].att.time_shift(x))

# data: repeating arithmetic patterns "a, a+d, a+2d, ... mod vocab"
rng = np.random.default_rng(0)
def batch(n):
    a = rng.integers(0, config.vocab_size, size=(n, 1))
    d = rng.integers(1, 4, size=(n, 1))
    seq = (a + d * np.arange(config.ctx_len + 1)) % config.vocab_size
    seq = torch.from_numpy(seq).long()
    return seq[:, :-1], seq[:, 1:]

train_config = types.SimpleNamespace(learning_rate=3e-3, betas=(0.9, 0.99), eps=1e-8)
optimizer = model.configure_optimizers(train_config)
print(optimizer)
for step in range(20):
    idx, targets = batch(16)
    logits, loss = model(idx, targets)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    if step % 5 == 0 or step == 19:
        print(f"step {step:2d} loss {loss.item():.4f}")

# GPT mode and RNN mode give the same logits
model.eval()
idx = torch.tensor([[1, 3, 5, 7, 9]])
with torch.no_grad():
    gpt_logits, _ = model(idx)
state = [torch.zeros(config.n_embd) for _ in range(5 * config.n_layer)]
for i in range(config.n_layer):
    state[5 * i + 3] -= 1e30
for t in idx[0].tolist():
    rnn_logits, state = forward_rnn(model, t, state)
print("rnn == gpt", torch.allclose(rnn_logits, gpt_logits[0, -1], atol=1e-4))
print("next token", rnn_logits.argmax().item())

torch.manual_seed(7)
out = idx[0].tolist()
for _ in range(8):
    logits, state = forward_rnn(model, out[-1], state)
    out.append(sample_logits(logits, temperature=1.0, top_p=0.5))
print("sampled", out)
fixed = torch.tensor([0.1, 2.0, -1.0, 0.5, 1.5, 0.0])
probs = F.softmax(fixed, dim=-1)
sorted_probs, sorted_ids = torch.sort(probs, descending=True)
print("sorted", sorted_probs, sorted_ids)
print("cumsum", torch.cumsum(sorted_probs, dim=-1))
