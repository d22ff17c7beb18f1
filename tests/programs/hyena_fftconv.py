"""Hyena operator (Poli et al., "Hyena Hierarchy"), in the style of the safari / HazyResearch
reference code (standalone_hyena.py): fftconv with torch.fft.rfft / irfft at n = 2L, an
implicit long filter (HyenaFilter) as an MLP with Sin activations over complex-exponential
positional encodings, an ExponentialModulation decay window, short depthwise Conv1d filter,
data-controlled gating with einops-free rearranges; a tiny associative-recall LM trained a
few steps."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def fftconv(u, k, D):
    seqlen = u.shape[-1]
    fft_size = 2 * seqlen

    k_f = torch.fft.rfft(k, n=fft_size) / fft_size
    u_f = torch.fft.rfft(u.to(dtype=k.dtype), n=fft_size)

    if len(u.shape) > 3:
        k_f = k_f.unsqueeze(1)
    y = torch.fft.irfft(u_f * k_f, n=fft_size, norm="forward")[..., :seqlen]

    out = y + u * D.unsqueeze(-1)
    return out.to(dtype=u.dtype)


class OptimModule(nn.Module):
    """ Interface for Module that allows registering buffers/parameters with configurable optimizer hyperparameters """

    def register(self, name, tensor, lr=None, wd=0.0):
        """Register a tensor with a configurable learning rate and 0 weight decay"""
        if lr == 0.0:
            self.register_buffer(name, tensor)
        else:
            self.register_parameter(name, nn.Parameter(tensor))
            optim = {"weight_decay": wd}
            if lr is not None:
                optim["lr"] = lr
            setattr(getattr(self, name), "_optim", optim)


class Sin(nn.Module):
    def __init__(self, dim, w=10, train_freq=True):
        super().__init__()
        self.freq = nn.Parameter(w * torch.ones(1, dim)) if train_freq else w * torch.ones(1, dim)

    def forward(self, x):
        return torch.sin(self.freq * x)


class PositionalEmbedding(OptimModule):
    def __init__(self, emb_dim: int, seq_len: int, lr_pos_emb: float = 1e-5, **kwargs):
        """Complex exponential positional embeddings for Hyena filters."""
        super().__init__()
        self.seq_len = seq_len
        # The time embedding fed to the filteres is normalized so that t_f = 1
        t = torch.linspace(0, 1, self.seq_len)[None, :, None]  # 1, L, 1

        if emb_dim > 1:
            bands = (emb_dim - 1) // 2
        # To compute the right embeddings we use the "proper" linspace
        t_rescaled = torch.linspace(0, seq_len - 1, seq_len)[None, :, None]
        w = 2 * math.pi * t_rescaled / seq_len  # 1, L, 1

        f = torch.linspace(1e-4, bands - 1, bands)[None, None]
        z = torch.exp(-1j * f * w)
        z = torch.cat([t, z.real, z.imag], dim=-1)
        self.register("z", z, lr=lr_pos_emb)
        self.register("t", t, lr=0.0)

    def forward(self, L):
        return self.z[:, :L], self.t[:, :L]


class ExponentialModulation(OptimModule):
    def __init__(self, d_model, fast_decay_pct=0.3, slow_decay_pct=1.5, target=1e-2,
                 modulation_lr=0.0, modulate: bool = True, shift: float = 0.0, **kwargs):
        super().__init__()
        self.modulate = modulate
        self.shift = shift
        max_decay = math.log(target) / fast_decay_pct
        min_decay = math.log(target) / slow_decay_pct
        deltas = torch.linspace(min_decay, max_decay, d_model)[None, None]
        self.register("deltas", deltas, lr=modulation_lr)

    def forward(self, t, x):
        if self.modulate:
            decay = torch.exp(-t * self.deltas.abs())
            x = x * (decay + self.shift)
        return x


class HyenaFilter(OptimModule):
    def __init__(self, d_model, emb_dim=3, order=16, fused_fft_conv=False, seq_len=1024,
                 lr=1e-3, lr_pos_emb=1e-5, dropout=0.0, w=1, wd=0, bias=True, num_inner_mlps=2,
                 normalized=False, **kwargs):
        super().__init__()
        self.d_model = d_model
        self.use_bias = bias
        self.fused_fft_conv = fused_fft_conv
        self.bias = nn.Parameter(torch.randn(self.d_model))
        self.dropout = nn.Dropout(dropout)

        act = Sin(dim=order, w=w)
        self.emb_dim = emb_dim
        assert emb_dim % 2 != 0 and emb_dim >= 3, "emb_dim must be odd and greater or equal to 3"
        self.seq_len = seq_len

        self.pos_emb = PositionalEmbedding(emb_dim, seq_len, lr_pos_emb)

        self.implicit_filter = nn.Sequential(
            nn.Linear(emb_dim, order),
            act,
        )
        for i in range(num_inner_mlps):
            self.implicit_filter.append(nn.Linear(order, order))
            self.implicit_filter.append(act)

        self.implicit_filter.append(nn.Linear(order, d_model, bias=False))

        self.modulation = ExponentialModulation(d_model, **kwargs)

        self.normalized = normalized
        for c in self.implicit_filter.children():
            for name, v in c.state_dict().items():
                optim = {"weight_decay": wd, "lr": lr}
                setattr(getattr(c, name), "_optim", optim)

    def filter(self, L, *args, **kwargs):
        z, t = self.pos_emb(L)
        h = self.implicit_filter(z)
        h = self.modulation(t, h)
        return h

    def forward(self, x, L, k=None, bias=None, *args, **kwargs):
        if k is None:
            k = self.filter(L)

        # Ensure compatibility with filters that return a tuple
        k = k[0] if type(k) is tuple else k

        y = fftconv(x, k, bias)
        return y


class HyenaOperator(nn.Module):
    def __init__(self, d_model, l_max, order=2, filter_order=64, dropout=0.0,
                 filter_dropout=0.0, **filter_args):
        super().__init__()
        self.d_model = d_model
        self.l_max = l_max
        self.order = order
        inner_width = d_model * (order + 1)
        self.dropout = nn.Dropout(dropout)
        self.in_proj = nn.Linear(d_model, inner_width)
        self.out_proj = nn.Linear(d_model, d_model)

        self.short_filter = nn.Conv1d(inner_width, inner_width, 3, padding=2, groups=inner_width)
        self.filter_fn = HyenaFilter(d_model * (order - 1), order=filter_order, seq_len=l_max,
                                     channels=1, dropout=filter_dropout, **filter_args)

    def forward(self, u, *args, **kwargs):
        l = u.size(-2)
        l_filter = min(l, self.l_max)
        u = self.in_proj(u)
        u = u.transpose(1, 2)  # 'b l d -> b d l'

        uc = self.short_filter(u)[..., :l_filter]
        *x, v = uc.split(self.d_model, dim=1)

        k = self.filter_fn.filter(l_filter)[0]
        k = k.transpose(0, 1).reshape(self.order - 1, self.d_model, l_filter)  # 'l (o d) -> o d l'
        bias = self.filter_fn.bias.view(self.order - 1, self.d_model)  # '(o d) -> o d'

        for o, x_i in enumerate(reversed(x[1:])):
            v = self.dropout(v * x_i)
            v = self.filter_fn(v, l_filter, k=k[o], bias=bias[o])

        y = (v * x[0]).transpose(1, 2)  # 'b d l -> b l d'
        y = self.out_proj(y)
        return y


class HyenaLM(nn.Module):
    def __init__(self, vocab, d_model, l_max, n_layer=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.layers = nn.ModuleList([HyenaOperator(d_model, l_max, filter_order=16)
                                     for _ in range(n_layer)])
        self.norms = nn.ModuleList([nn.LayerNorm(d_model) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)
        self.head.weight = self.embed.weight
        self.apply(self._init_weights)

    def _init_weights(self, module, initializer_range=0.02):
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=initializer_range)

    def forward(self, idx):
        x = self.embed(idx)
        for norm, layer in zip(self.norms, self.layers):
            x = x + layer(norm(x))
        return self.head(self.ln_f(x))


def associative_recall(n, seq_len, vocab, gen):
    """key value key value ... query -> value of the query's key."""
    keys = torch.randint(0, vocab // 2, (n, seq_len // 2), generator=gen)
    vals = torch.randint(vocab // 2, vocab, (n, seq_len // 2), generator=gen)
    x = torch.stack([keys, vals], dim=-1).reshape(n, seq_len)
    pick = torch.randint(0, seq_len // 2 - 1, (n,), generator=gen)
    x = torch.cat([x[:, :-1], keys.gather(1, pick[:, None])], dim=1)
    y = torch.full_like(x, -100)
    y[:, -1] = vals.gather(1, pick[:, None]).squeeze(1)
    return x, y


torch.manual_seed(0)
torch.set_printoptions(precision=4, sci_mode=False)

# fftconv against a direct causal convolution
u = torch.randn(2, 3, 8)
k = torch.randn(3, 8)
D = torch.randn(3)
y = fftconv(u, k, D)
direct = F.conv1d(F.pad(u, (7, 0)), k.flip(-1).unsqueeze(1), groups=3) + u * D[:, None]
print("fftconv", y.shape, y.dtype, "matches direct conv", torch.allclose(y, direct, atol=1e-5))
spec = torch.fft.rfft(k, n=16)
print("rfft", spec.shape, spec.dtype)
print(spec[0, :4])
print("irfft roundtrip", torch.allclose(torch.fft.irfft(spec, n=16)[..., :8], k, atol=1e-6))

pe = PositionalEmbedding(5, 8)
print("pos emb z", pe.z.shape, pe.z.dtype, "t is buffer", "t" in dict(pe.named_buffers()))
print(pe.z[0, :3])
print("optim attrs", getattr(pe.z, "_optim"))

op = HyenaOperator(8, 16, filter_order=16)
print(op)
h = op.filter_fn.filter(16)
print("implicit filter", h.shape)
print(h[0, :4, :3])
print("operator out", op(torch.randn(2, 16, 8)).shape)

vocab, L = 16, 16
model = HyenaLM(vocab, 16, L)
print("parameters", sum(p.numel() for p in model.parameters()))
# the reference code gives filter parameters their own lr / weight decay via _optim
all_params = list(model.parameters())
special = [p for p in all_params if hasattr(p, "_optim")]
plain = [p for p in all_params if not hasattr(p, "_optim")]
groups = [{"params": plain, "weight_decay": 0.1}]
for hp in [dict(s) for s in sorted(list(dict.fromkeys(frozenset(p._optim.items()) for p in special)))]:
    groups.append({"params": [p for p in special if p._optim == hp], **hp})
opt = torch.optim.AdamW(groups, lr=1e-2)
print("param groups", [(len(g["params"]), g["lr"], g["weight_decay"]) for g in opt.param_groups])

gen = torch.Generator().manual_seed(1)
for step in range(15):
    x, y = associative_recall(16, L, vocab, gen)
    logits = model(x)
    loss = F.cross_entropy(logits.view(-1, vocab), y.view(-1), ignore_index=-100)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    print("step %2d loss %.5f" % (step, loss.item()))
