"""Set Transformer (juho-lee/set_transformer: MAB, SAB, ISAB, PMA) and a Perceiver-style
latent cross-attention encoder, written on nn.MultiheadAttention(batch_first=True, kdim=,
vdim=), with need_weights=True / average_attn_weights=False attention maps printed, bool
key_padding_mask for padded sets, learned inducing points / seeds / latents as
nn.Parameter(torch.randn(...)) with xavier_uniform_, a permutation-invariance check with
torch.randperm, and max-of-set regression (the paper's toy task) trained with Adam."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class MAB(nn.Module):
    def __init__(self, dim_Q, dim_K, dim_V, num_heads, ln=False):
        super().__init__()
        self.dim_V = dim_V
        self.num_heads = num_heads
        self.fc_q = nn.Linear(dim_Q, dim_V)
        self.attn = nn.MultiheadAttention(dim_V, num_heads, batch_first=True, kdim=dim_K,
                                          vdim=dim_K)
        if ln:
            self.ln0 = nn.LayerNorm(dim_V)
            self.ln1 = nn.LayerNorm(dim_V)
        self.fc_o = nn.Linear(dim_V, dim_V)

    def forward(self, Q, K, key_padding_mask=None, return_weights=False):
        Q = self.fc_q(Q)
        A, W = self.attn(Q, K, K, key_padding_mask=key_padding_mask, need_weights=True,
                         average_attn_weights=False)
        O = Q + A
        O = O if getattr(self, "ln0", None) is None else self.ln0(O)
        O = O + F.relu(self.fc_o(O))
        O = O if getattr(self, "ln1", None) is None else self.ln1(O)
        return (O, W) if return_weights else O


class SAB(nn.Module):
    def __init__(self, dim_in, dim_out, num_heads, ln=False):
        super().__init__()
        self.mab = MAB(dim_in, dim_in, dim_out, num_heads, ln=ln)

    def forward(self, X, mask=None):
        return self.mab(X, X, key_padding_mask=mask)


class ISAB(nn.Module):
    def __init__(self, dim_in, dim_out, num_heads, num_inds, ln=False):
        super().__init__()
        self.I = nn.Parameter(torch.Tensor(1, num_inds, dim_out))
        nn.init.xavier_uniform_(self.I)
        self.mab0 = MAB(dim_out, dim_in, dim_out, num_heads, ln=ln)
        self.mab1 = MAB(dim_in, dim_out, dim_out, num_heads, ln=ln)

    def forward(self, X, mask=None):
        H = self.mab0(self.I.repeat(X.size(0), 1, 1), X, key_padding_mask=mask)
        return self.mab1(X, H)


class PMA(nn.Module):
    def __init__(self, dim, num_heads, num_seeds, ln=False):
        super().__init__()
        self.S = nn.Parameter(torch.Tensor(1, num_seeds, dim))
        nn.init.xavier_uniform_(self.S)
        self.mab = MAB(dim, dim, dim, num_heads, ln=ln)

    def forward(self, X, mask=None, return_weights=False):
        return self.mab(self.S.repeat(X.size(0), 1, 1), X, key_padding_mask=mask,
                        return_weights=return_weights)


class SetTransformer(nn.Module):
    def __init__(self, dim_input, num_outputs, dim_output, num_inds=8, dim_hidden=16,
                 num_heads=4, ln=True):
        super().__init__()
        self.enc = nn.ModuleList([
            ISAB(dim_input, dim_hidden, num_heads, num_inds, ln=ln),
            ISAB(dim_hidden, dim_hidden, num_heads, num_inds, ln=ln)])
        self.pma = PMA(dim_hidden, num_heads, num_outputs, ln=ln)
        self.dec = nn.Sequential(
            SAB(dim_hidden, dim_hidden, num_heads, ln=ln),
            nn.Linear(dim_hidden, dim_output))

    def forward(self, X, mask=None):
        for layer in self.enc:
            X = layer(X, mask)
            mask = None  # only the first ISAB sees the raw padded set
        return self.dec(self.pma(X))


class PerceiverEncoder(nn.Module):
    """Latents cross-attend to the inputs (kdim/vdim = input width), then self-attend."""

    def __init__(self, input_dim, num_latents=6, latent_dim=24, heads=2, depth=2):
        super().__init__()
        self.latents = nn.Parameter(torch.randn(num_latents, latent_dim) * 0.02)
        self.cross_norm = nn.LayerNorm(latent_dim)
        self.input_norm = nn.LayerNorm(input_dim)
        self.cross_attn = nn.MultiheadAttention(latent_dim, 1, batch_first=True,
                                                kdim=input_dim, vdim=input_dim)
        self.self_attns = nn.ModuleList([
            nn.TransformerEncoderLayer(latent_dim, heads, dim_feedforward=48, dropout=0.0,
                                       batch_first=True, norm_first=True,
                                       activation="gelu")
            for _ in range(depth)])
        self.head = nn.Linear(latent_dim, 1)

    def forward(self, x, key_padding_mask=None):
        b = x.shape[0]
        lat = self.latents.unsqueeze(0).expand(b, -1, -1)
        kv = self.input_norm(x)
        out, w = self.cross_attn(self.cross_norm(lat), kv, kv,
                                 key_padding_mask=key_padding_mask)
        lat = lat + out
        for layer in self.self_attns:
            lat = layer(lat)
        return self.head(lat.mean(dim=1)).squeeze(-1), w


def gen_max_data(batch_size, max_length=10, min_length=4):
    length = int(torch.randint(min_length, max_length + 1, (1,)))
    x = torch.randint(1, 100, (batch_size, length, 1)).float()
    y = torch.max(x, dim=1)[0]
    return x / 100.0, y / 100.0


# ---- shapes, weights, masks ------------------------------------------------------------
mab = MAB(3, 5, 8, 2, ln=True)
print(mab)
print("in_proj_weight", mab.attn.in_proj_weight, "q_proj", mab.attn.q_proj_weight.shape,
      "k_proj", mab.attn.k_proj_weight.shape, "v_proj", mab.attn.v_proj_weight.shape)
print("_qkv_same_embed_dim", mab.attn._qkv_same_embed_dim, mab.attn.batch_first,
      mab.attn.head_dim)
print([n for n, _ in mab.attn.named_parameters()])
Q = torch.randn(2, 4, 3)
K = torch.randn(2, 6, 5)
mask = torch.tensor([[False] * 6, [False] * 4 + [True] * 2])
O, W = mab(Q, K, key_padding_mask=mask, return_weights=True)
print("MAB out", O.shape, "weights", W.shape)
print("weights head 1, padded set", W[1, 1])
print("masked weight mass", W[1, ..., 4:].abs().sum().item(), "rows sum",
      W.sum(-1).allclose(torch.ones(2, 2, 4)))
_, W_avg = mab.attn(mab.fc_q(Q), K, K, key_padding_mask=mask)
print("averaged weights", W_avg.shape, torch.allclose(W_avg, W.mean(1), atol=1e-6))
_, none_w = mab.attn(mab.fc_q(Q), K, K, need_weights=False)
print("need_weights=False", none_w)
float_mask = torch.zeros(2, 6).masked_fill(mask, float("-inf"))
O2 = mab(Q, K, key_padding_mask=float_mask)
print("float mask agrees", torch.allclose(O, O2, atol=1e-6))

model = SetTransformer(1, 1, 1)
print(model)
print("parameters", sum(p.numel() for p in model.parameters()))
print("seed", model.pma.S.shape, f"{model.pma.S.abs().max().item():.5f}")

# permutation invariance
X = torch.rand(3, 7, 1)
perm = torch.randperm(7)
print("perm", perm.tolist())
model.eval()
with torch.no_grad():
    y1, y2 = model(X), model(X[:, perm])
print("permutation invariant", torch.allclose(y1, y2, atol=1e-5), y1.shape)
# padding invariance: extra padded elements masked out give the same encoding of the
# first ISAB's inducing points
Xp = torch.cat([X, torch.rand(3, 2, 1)], dim=1)
pad = torch.zeros(3, 9, dtype=torch.bool)
pad[:, 7:] = True
with torch.no_grad():
    h1 = model.enc[0].mab0(model.enc[0].I.repeat(3, 1, 1), X)
    h2 = model.enc[0].mab0(model.enc[0].I.repeat(3, 1, 1), Xp, key_padding_mask=pad)
print("padding masked out", torch.allclose(h1, h2, atol=1e-5))
with torch.no_grad():
    _, pma_w = model.pma(model.enc[1](model.enc[0](X)), return_weights=True)
print("PMA attention", pma_w.shape, pma_w[0, :, 0])
model.train()

# ---- train on max of a set ----------------------------------------------------------
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(12):
    x, y = gen_max_data(16)
    pred = model(x).squeeze(-1)
    loss = F.l1_loss(pred, y)
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    print(f"set step {step} loss {loss.item():.4f} n {x.shape[1]}")

# ---- Perceiver: sum of a padded set ----------------------------------------------------
perc = PerceiverEncoder(input_dim=3)
print(perc)
opt = torch.optim.AdamW(perc.parameters(), lr=2e-3, weight_decay=0.01)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 4))
for step in range(10):
    lengths = torch.randint(3, 9, (8,))
    x = torch.randn(8, 8, 3)
    kpm = torch.arange(8)[None, :] >= lengths[:, None]
    x = x.masked_fill(kpm[..., None], 0.0)
    target = x[..., 0].sum(1) / lengths
    pred, w = perc(x, key_padding_mask=kpm)
    loss = F.mse_loss(pred, target)
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
    print(f"perceiver step {step} loss {loss.item():.4f} "
          f"pad mass {w.masked_select(kpm[:, None, :].expand_as(w)).sum().item():.1f}")
print("cross weights", w.shape, w[0, 0])
