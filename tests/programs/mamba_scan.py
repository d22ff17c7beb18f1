"""A minimal Mamba (Gu & Dao; in the style of johnma2006/mamba-minimal and mamba.py): RMSNorm,
in_proj split into x and the gate z, a depthwise causal Conv1d (padding=d_conv-1, then
[..., :L]), x_proj to (delta, B, C), softplus(dt_proj) for delta, the A_log parameter with
A = -exp(A_log), discretization torch.exp(einsum(delta, A)) and a sequential selective
scan, checked against a cumsum-based parallel scan; SiLU gating, weight tying, a small
language model trained on a synthetic copy task with AdamW and gradient clipping."""
import argparse
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ModelArgs:
    d_model: int
    n_layer: int
    vocab_size: int
    d_state: int = 8
    expand: int = 2
    dt_rank: int | str = 'auto'
    d_conv: int = 4
    pad_vocab_size_multiple: int = 8
    conv_bias: bool = True
    bias: bool = False

    def __post_init__(self):
        self.d_inner = int(self.expand * self.d_model)
        if self.dt_rank == 'auto':
            self.dt_rank = math.ceil(self.d_model / 16)
        if self.vocab_size % self.pad_vocab_size_multiple != 0:
            self.vocab_size += (self.pad_vocab_size_multiple
                                - self.vocab_size % self.pad_vocab_size_multiple)


class RMSNorm(nn.Module):
    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
        output = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight
        return output


def selective_scan(u, delta, A, B, C, D):
    """Sequential: x(t + 1) = exp(delta A) x(t) + delta B u(t); y(t) = C x(t) + D u(t)."""
    (b, l, d_in) = u.shape
    n = A.shape[1]
    # Discretize continuous parameters (A, B)
    deltaA = torch.exp(torch.einsum('b l d, d n -> b l d n', delta, A))
    deltaB_u = torch.einsum('b l d, b l n, b l d -> b l d n', delta, B, u)
    x = torch.zeros((b, d_in, n), device=deltaA.device)
    ys = []
    for i in range(l):
        x = deltaA[:, i] * x + deltaB_u[:, i]
        y = torch.einsum('b d n, b n -> b d', x, C[:, i, :])
        ys.append(y)
    y = torch.stack(ys, dim=1)  # shape (b, l, d_in)
    y = y + u * D
    return y


def selective_scan_parallel(u, delta, A, B, C, D):
    """The same recurrence in closed form with cumulative sums of delta*A (log space):
    x_t = sum_{s<=t} exp(sum_{s<r<=t} delta_r A) delta_s B_s u_s."""
    deltaA = torch.einsum('bld,dn->bldn', delta, A)
    deltaB_u = torch.einsum('bld,bln,bld->bldn', delta, B, u)
    cum = torch.cumsum(deltaA, dim=1)  # (b, l, d, n)
    # weights[t, s] = exp(cum_t - cum_s) for s <= t
    diff = cum.unsqueeze(2) - cum.unsqueeze(1)  # (b, t, s, d, n)
    L = u.shape[1]
    causal = torch.tril(torch.ones(L, L, dtype=torch.bool, device=u.device))
    diff = diff.masked_fill(~causal[None, :, :, None, None], float('-inf'))
    x = torch.einsum('btsdn,bsdn->btdn', torch.exp(diff), deltaB_u)
    y = torch.einsum('bldn,bln->bld', x, C)
    return y + u * D


class MambaBlock(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.args = args
        self.in_proj = nn.Linear(args.d_model, args.d_inner * 2, bias=args.bias)
        self.conv1d = nn.Conv1d(
            in_channels=args.d_inner,
            out_channels=args.d_inner,
            bias=args.conv_bias,
            kernel_size=args.d_conv,
            groups=args.d_inner,
            padding=args.d_conv - 1,
        )
        # x_proj takes in `x` and outputs the input-specific Δ, B, C
        self.x_proj = nn.Linear(args.d_inner, args.dt_rank + args.d_state * 2, bias=False)
        # dt_proj projects Δ from dt_rank to d_in
        self.dt_proj = nn.Linear(args.dt_rank, args.d_inner, bias=True)
        A = torch.arange(1, args.d_state + 1).repeat(args.d_inner, 1)
        self.A_log = nn.Parameter(torch.log(A))
        self.D = nn.Parameter(torch.ones(args.d_inner))
        self.out_proj = nn.Linear(args.d_inner, args.d_model, bias=args.bias)

        # dt bias init: softplus^-1 of dt in [1e-3, 1e-1] (as mamba_simple.py)
        dt = torch.exp(torch.rand(args.d_inner) * (math.log(0.1) - math.log(1e-3))
                       + math.log(1e-3)).clamp(min=1e-4)
        inv_dt = dt + torch.log(-torch.expm1(-dt))
        with torch.no_grad():
            self.dt_proj.bias.copy_(inv_dt)

    def forward(self, x):
        (b, l, d) = x.shape
        x_and_res = self.in_proj(x)  # shape (b, l, 2 * d_in)
        (x, res) = x_and_res.split(split_size=[self.args.d_inner, self.args.d_inner], dim=-1)
        x = x.transpose(1, 2)  # 'b l d_in -> b d_in l'
        x = self.conv1d(x)[:, :, :l]
        x = x.transpose(1, 2)  # 'b d_in l -> b l d_in'
        x = F.silu(x)
        y = self.ssm(x)
        y = y * F.silu(res)
        output = self.out_proj(y)
        return output

    def ssm(self, x, parallel=False):
        (d_in, n) = self.A_log.shape
        A = -torch.exp(self.A_log.float())  # shape (d_in, n)
        D = self.D.float()
        x_dbl = self.x_proj(x)  # (b, l, dt_rank + 2*n)
        (delta, B, C) = x_dbl.split(split_size=[self.args.dt_rank, n, n], dim=-1)
        delta = F.softplus(self.dt_proj(delta))  # (b, l, d_in)
        scan = selective_scan_parallel if parallel else selective_scan
        return scan(x, delta, A, B, C, D)


class ResidualBlock(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.mixer = MambaBlock(args)
        self.norm = RMSNorm(args.d_model)

    def forward(self, x):
        return self.mixer(self.norm(x)) + x


class Mamba(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.args = args
        self.embedding = nn.Embedding(args.vocab_size, args.d_model)
        self.layers = nn.ModuleList([ResidualBlock(args) for _ in range(args.n_layer)])
        self.norm_f = RMSNorm(args.d_model)
        self.lm_head = nn.Linear(args.d_model, args.vocab_size, bias=False)
        self.lm_head.weight = self.embedding.weight  # Tie output projection to embedding weights.

    def forward(self, input_ids):
        x = self.embedding(input_ids)
        for layer in self.layers:
            x = layer(x)
        x = self.norm_f(x)
        logits = self.lm_head(x)
        return logits


def get_batch(batch_size, seq_len, vocab, generator):
    """Copy task: a random prefix, a separator (0), then the prefix again."""
    half = seq_len // 2
    prefix = torch.randint(1, vocab, (batch_size, half), generator=generator)
    sep = torch.zeros(batch_size, 1, dtype=torch.long)
    seq = torch.cat([prefix, sep, prefix], dim=1)
    return seq[:, :-1], seq[:, 1:]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--d_model', type=int, default=16)
    parser.add_argument('--n_layer', type=int, default=2)
    parser.add_argument('--seq_len', type=int, default=12)
    parser.add_argument('--steps', type=int, default=30)
    parser.add_argument('--lr', type=float, default=5e-3)
    args = parser.parse_args()

    torch.manual_seed(0)
    device = 'cuda' if torch.cuda.is_available() else 'cpu'
    margs = ModelArgs(d_model=args.d_model, n_layer=args.n_layer, vocab_size=10)
    print(margs)
    model = Mamba(margs).to(device)
    print(model.layers[0])
    print('tied:', model.lm_head.weight is model.embedding.weight)
    print(f'number of parameters: {sum(p.numel() for p in model.parameters()):,}')
    print('A_log[0]', model.layers[0].mixer.A_log[0])

    # the sequential scan and the parallel (cumsum) form agree
    mixer = model.layers[0].mixer
    with torch.no_grad():
        u = torch.randn(2, 7, margs.d_inner)
        seq = mixer.ssm(u)
        par = mixer.ssm(u, parallel=True)
    print('scan forms agree:', torch.allclose(seq, par, atol=1e-5), tuple(seq.shape))
    # causality: changing the last token does not change earlier logits
    ids = torch.randint(0, 10, (1, 8))
    ids2 = ids.clone()
    ids2[0, -1] = (ids[0, -1] + 1) % 10
    with torch.no_grad():
        same_prefix = torch.allclose(model(ids)[:, :-1], model(ids2)[:, :-1], atol=1e-6)
    print('causal:', same_prefix)

    g = torch.Generator().manual_seed(1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    model.train()
    for step in range(args.steps):
        x, y = get_batch(16, args.seq_len, margs.vocab_size - 2, g)
        x, y = x.to(device), y.to(device)
        logits = model(x)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if step % 5 == 0 or step == args.steps - 1:
            print(f'step {step:3d} | loss {loss.item():.4f} | grad norm {norm.item():.3f}')

    model.eval()
    x, y = get_batch(64, args.seq_len, margs.vocab_size - 2, g)
    with torch.no_grad():
        pred = model(x).argmax(-1)
    half = args.seq_len // 2
    acc = (pred[:, half:] == y[:, half:]).float().mean().item()
    print(f'copy accuracy (second half): {acc:.3f}')
    A = -torch.exp(model.layers[0].mixer.A_log.detach())
    print('A stays negative:', bool((A < 0).all()), 'dtype', A.dtype)


if __name__ == '__main__':
    main()
