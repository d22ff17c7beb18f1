"""RetNet-lite multi-scale retention (Sun et al.; in the style of microsoft/torchscale and
Jamie-Stirling/RetNet): per-head decays gamma = 1 - 2**(-5 - arange), decay masks from
arange outer differences with masked_fill(-inf) then exp, xPos-style rotary embeddings
through complex numbers (view_as_complex / torch.polar / view_as_real) and the real
rotate-every-two trick, the parallel, recurrent and chunkwise forms checked equal, a swish
gate and GroupNorm over heads, and a small LM trained with AdamW and cosine annealing."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def rotate_every_two(x):
    x1 = x[:, :, :, ::2]
    x2 = x[:, :, :, 1::2]
    x = torch.stack((-x2, x1), dim=-1)
    return x.flatten(-2)


def theta_shift(x, sin, cos):
    return (x * cos) + (rotate_every_two(x) * sin)


class RetNetRelPos(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        angle = 1.0 / (10000 ** torch.linspace(0, 1, embed_dim // num_heads // 2))
        angle = angle.unsqueeze(-1).repeat(1, 2).flatten()
        decay = torch.log(1 - 2 ** (-5 - torch.arange(num_heads, dtype=torch.float)))
        self.register_buffer("angle", angle)
        self.register_buffer("decay", decay)

    def forward(self, slen, activate_recurrent=False, chunkwise_recurrent=False, chunk=4):
        if activate_recurrent:
            sin = torch.sin(self.angle * (slen - 1))
            cos = torch.cos(self.angle * (slen - 1))
            return (sin, cos), self.decay.exp()
        index = torch.arange(slen).to(self.decay)
        sin = torch.sin(index[:, None] * self.angle[None, :])
        cos = torch.cos(index[:, None] * self.angle[None, :])
        if chunkwise_recurrent:
            block_index = torch.arange(chunk).to(self.decay)
            mask = torch.tril(torch.ones(chunk, chunk).to(self.decay))
            mask = torch.masked_fill(block_index[:, None] - block_index[None, :], ~mask.bool(),
                                     float("inf"))
            mask = torch.exp(mask * self.decay[:, None, None])
            mask = torch.nan_to_num(mask)
            value_inner_decay = mask[:, -1] / mask[:, -1].sum(dim=-1, keepdim=True)
            value_inner_decay = value_inner_decay.unsqueeze(-1)
            scale = mask.sum(dim=-1, keepdim=True).sqrt()
            inner_mask = mask / scale
            cross_decay = torch.exp(self.decay * chunk)
            query_inner_decay = torch.exp(self.decay[:, None] * (block_index + 1))
            query_inner_decay = query_inner_decay[:, :, None] / (
                scale / mask[:, -1].sum(dim=-1)[:, None, None])
            cross_decay = cross_decay[:, None, None]
            return (sin, cos), (inner_mask, cross_decay, query_inner_decay, value_inner_decay)
        mask = torch.tril(torch.ones(slen, slen).to(self.decay))
        mask = torch.masked_fill(index[:, None] - index[None, :], ~mask.bool(), float("inf"))
        mask = torch.exp(mask * self.decay[:, None, None])
        mask = torch.nan_to_num(mask)
        mask = mask / mask.sum(dim=-1, keepdim=True).sqrt()
        return (sin, cos), mask


class MultiScaleRetention(nn.Module):
    def __init__(self, embed_dim, value_factor=2, num_heads=4):
        super().__init__()
        self.embed_dim = embed_dim
        self.value_dim = embed_dim * value_factor
        self.num_heads = num_heads
        self.head_dim = self.value_dim // num_heads
        self.key_dim = self.embed_dim // num_heads
        self.scaling = self.key_dim ** -0.5
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=True)
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=True)
        self.v_proj = nn.Linear(embed_dim, self.value_dim, bias=True)
        self.g_proj = nn.Linear(embed_dim, self.value_dim, bias=True)
        self.out_proj = nn.Linear(self.value_dim, embed_dim, bias=True)
        self.group_norm = nn.GroupNorm(num_heads, self.value_dim, affine=False)
        self.reset_parameters()

    def reset_parameters(self):
        nn.init.xavier_uniform_(self.q_proj.weight, gain=2 ** -2.5)
        nn.init.xavier_uniform_(self.k_proj.weight, gain=2 ** -2.5)
        nn.init.xavier_uniform_(self.v_proj.weight, gain=2 ** -2.5)
        nn.init.xavier_uniform_(self.g_proj.weight, gain=2 ** -2.5)
        nn.init.xavier_uniform_(self.out_proj.weight)
        nn.init.constant_(self.out_proj.bias, 0.0)

    def parallel_forward(self, qr, kr, v, mask):
        bsz, tgt_len, embed_dim = v.size()
        vr = v.view(bsz, tgt_len, self.num_heads, self.head_dim).transpose(1, 2)
        qk_mat = qr @ kr.transpose(-1, -2)
        qk_mat = qk_mat * mask
        qk_mat = qk_mat / qk_mat.detach().abs().sum(dim=-1, keepdim=True).clamp(min=1)
        output = torch.matmul(qk_mat, vr)
        return output.transpose(1, 2)

    def recurrent_forward(self, qr, kr, v, decay, incremental_state):
        bsz = v.size(0)
        v = v.view(bsz, self.num_heads, self.head_dim, 1)
        kv = kr * v
        if "prev_key_value" in incremental_state:
            prev_kv = incremental_state["prev_key_value"]
            prev_scale = incremental_state["scale"]
            scale = prev_scale * decay + 1
            kv = prev_kv * (prev_scale.sqrt() * decay / scale.sqrt()).view(
                self.num_heads, 1, 1) + kv / scale.sqrt().view(self.num_heads, 1, 1)
        else:
            scale = torch.ones_like(decay)
        incremental_state["prev_key_value"] = kv
        incremental_state["scale"] = scale
        output = torch.sum(qr * kv, dim=3)
        return output

    def forward(self, x, rel_pos, incremental_state=None):
        bsz, tgt_len, _ = x.size()
        (sin, cos), inner_mask = rel_pos
        q = self.q_proj(x)
        k = self.k_proj(x) * self.scaling
        v = self.v_proj(x)
        g = self.g_proj(x)
        q = q.view(bsz, tgt_len, self.num_heads, self.key_dim).transpose(1, 2)
        k = k.view(bsz, tgt_len, self.num_heads, self.key_dim).transpose(1, 2)
        qr = theta_shift(q, sin, cos)
        kr = theta_shift(k, sin, cos)
        if incremental_state is not None:
            output = self.recurrent_forward(qr, kr, v, inner_mask, incremental_state)
        else:
            output = self.parallel_forward(qr, kr, v, inner_mask)
        output = output.reshape(bsz * tgt_len, self.value_dim)
        output = self.group_norm(output).reshape(bsz, tgt_len, self.value_dim)
        output = F.silu(g) * output
        return self.out_proj(output)


class RetNetLM(nn.Module):
    def __init__(self, vocab, dim=32, heads=4, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.retnet_rel_pos = RetNetRelPos(dim, heads)
        self.layers = nn.ModuleList()
        for _ in range(layers):
            self.layers.append(nn.ModuleDict(dict(
                ln1=nn.LayerNorm(dim, eps=1e-6), retention=MultiScaleRetention(dim, num_heads=heads),
                ln2=nn.LayerNorm(dim, eps=1e-6),
                ffn=nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(approximate="tanh"),
                                  nn.Linear(2 * dim, dim)))))
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, tokens, incremental_state=None):
        x = self.embed(tokens)
        if incremental_state is not None:
            rel_pos = self.retnet_rel_pos(incremental_state["slen"] + 1, activate_recurrent=True)
        else:
            rel_pos = self.retnet_rel_pos(tokens.size(1))
        for i, layer in enumerate(self.layers):
            state = None if incremental_state is None else incremental_state.setdefault(i, {})
            x = x + layer["retention"](layer["ln1"](x), rel_pos, state)
            x = x + layer["ffn"](layer["ln2"](x))
        return self.head(x)


def complex_rotary(x, angle, positions):
    """The complex-number form of the same rotation (LLaMA's freqs_cis)."""
    freqs = positions[:, None] * angle[None, ::2]
    freqs_cis = torch.polar(torch.ones_like(freqs), freqs)
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(xc * freqs_cis).flatten(-2)


def main():
    torch.manual_seed(0)
    torch.set_printoptions(precision=4, sci_mode=False)

    rel = RetNetRelPos(16, 4)
    print("decay (log gamma)", rel.decay)
    print("gamma", rel.decay.exp())
    (sin, cos), mask = rel(5)
    print("mask", tuple(mask.shape))
    print(mask[0])
    print("upper triangle is zero:", bool((mask.triu(1) == 0).all()))

    x = torch.randn(1, 2, 5, 4)
    pos = torch.arange(5).float()
    angle = rel.angle
    print("angle", angle)
    real_form = theta_shift(x, torch.sin(pos[:, None] * angle[None, :]),
                            torch.cos(pos[:, None] * angle[None, :]))
    cplx_form = complex_rotary(x, angle, pos)
    print("rotate_every_two", rotate_every_two(x)[0, 0, 1])
    print("complex rotary == real rotary:", torch.allclose(real_form, cplx_form, atol=1e-6))
    freqs_cis = torch.polar(torch.ones(3), torch.tensor([0.0, math.pi / 2, math.pi]))
    print("freqs_cis", freqs_cis, freqs_cis.dtype)
    print("angle/abs", freqs_cis.angle(), freqs_cis.abs())

    model = RetNetLM(vocab=16)
    print(model)
    tokens = torch.randint(0, 16, (2, 8))
    model.eval()
    with torch.no_grad():
        parallel = model(tokens)
        state = {"slen": 0}
        rec = []
        for t in range(tokens.size(1)):
            state["slen"] = t
            rec.append(model(tokens[:, t:t + 1], state))
        recurrent = torch.cat(rec, dim=1)
    print("parallel logits", tuple(parallel.shape), parallel[0, -1, :5])
    print("recurrent == parallel:", torch.allclose(parallel, recurrent, atol=1e-4))
    print("max |recurrent - parallel| < 1e-4:", (recurrent - parallel).abs().max().item() < 1e-4)

    gn = nn.GroupNorm(4, 8, affine=False)
    print(gn, "weight", gn.weight)
    y = gn(torch.randn(3, 8))
    print("group means", y.view(3, 4, 2).mean(-1).abs().max().item() < 1e-6)

    data = torch.randint(0, 16, (8, 4)).repeat(1, 5)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=5e-3, betas=(0.9, 0.98), weight_decay=0.05)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=20, eta_min=1e-4)
    for step in range(20):
        logits = model(data[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, 16), data[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step % 4 == 0 or step == 19:
            print(f"step {step:2d} loss {loss.item():.4f} lr {sched.get_last_lr()[0]:.6f}")
    print("tied:", model.head.weight is model.embed.weight,
          model.head.weight.data_ptr() == model.embed.weight.data_ptr())


if __name__ == "__main__":
    main()
