"""MLP-Mixer (Tolstikhin et al.; as lucidrains/mlp-mixer-pytorch and timm write it: token- and
channel-mixing MLPs, einsum-based patch embedding with rearrange done by reshape/permute),
and a Perceiver-style classifier (Jaegle et al.): a latent array cross-attending to a padded
input sequence through nn.MultiheadAttention(batch_first=True) with key_padding_mask and
need_weights=False, then latent self-attention written with torch.einsum. Both trained a
few steps on synthetic data."""
import argparse
from functools import partial

import torch
import torch.nn.functional as F
from torch import einsum, nn

pair = lambda x: x if isinstance(x, tuple) else (x, x)


class PreNormResidual(nn.Module):
    def __init__(self, dim, fn):
        super().__init__()
        self.fn = fn
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        return self.fn(self.norm(x)) + x


def FeedForward(dim, expansion_factor=4, dropout=0., dense=nn.Linear):
    inner_dim = int(dim * expansion_factor)
    return nn.Sequential(
        dense(dim, inner_dim),
        nn.GELU(),
        nn.Dropout(dropout),
        dense(inner_dim, dim),
        nn.Dropout(dropout)
    )


class Rearrange(nn.Module):
    """'b c (h p1) (w p2) -> b (h w) (p1 p2 c)'"""
    def __init__(self, p1, p2):
        super().__init__()
        self.p1, self.p2 = p1, p2

    def forward(self, x):
        b, c, H, W = x.shape
        h, w = H // self.p1, W // self.p2
        x = x.reshape(b, c, h, self.p1, w, self.p2)
        x = x.permute(0, 2, 4, 3, 5, 1)
        return x.reshape(b, h * w, self.p1 * self.p2 * c)

    def extra_repr(self):
        return f"'b c (h p1) (w p2) -> b (h w) (p1 p2 c)', p1={self.p1}, p2={self.p2}"


class Reduce(nn.Module):
    def forward(self, x):
        return x.mean(dim=1)

    def extra_repr(self):
        return "'b n c -> b c', 'mean'"


def MLPMixer(*, image_size, channels, patch_size, dim, depth, num_classes, expansion_factor=4,
             expansion_factor_token=0.5, dropout=0.):
    image_h, image_w = pair(image_size)
    assert (image_h % patch_size) == 0 and (image_w % patch_size) == 0, \
        'image must be divisible by patch size'
    num_patches = (image_h // patch_size) * (image_w // patch_size)
    chan_first, chan_last = partial(nn.Conv1d, kernel_size=1), nn.Linear

    return nn.Sequential(
        Rearrange(patch_size, patch_size),
        nn.Linear((patch_size ** 2) * channels, dim),
        *[nn.Sequential(
            PreNormResidual(dim, FeedForward(num_patches, expansion_factor, dropout, chan_first)),
            PreNormResidual(dim, FeedForward(dim, expansion_factor_token, dropout, chan_last))
        ) for _ in range(depth)],
        nn.LayerNorm(dim),
        Reduce(),
        nn.Linear(dim, num_classes)
    )


class Attention(nn.Module):
    """Latent self-attention with einsum (as lucidrains/perceiver-pytorch)."""
    def __init__(self, query_dim, heads=2, dim_head=8):
        super().__init__()
        inner_dim = dim_head * heads
        self.scale = dim_head ** -0.5
        self.heads = heads
        self.to_q = nn.Linear(query_dim, inner_dim, bias=False)
        self.to_kv = nn.Linear(query_dim, inner_dim * 2, bias=False)
        self.to_out = nn.Linear(inner_dim, query_dim)

    def forward(self, x, mask=None):
        h = self.heads
        q = self.to_q(x)
        k, v = self.to_kv(x).chunk(2, dim=-1)
        b, n, _ = q.shape
        q, k, v = map(lambda t: t.reshape(b, n, h, -1).permute(0, 2, 1, 3).reshape(b * h, n, -1),
                      (q, k, v))
        sim = einsum('b i d, b j d -> b i j', q, k) * self.scale
        if mask is not None:
            max_neg_value = -torch.finfo(sim.dtype).max
            sim.masked_fill_(~mask, max_neg_value)
        attn = sim.softmax(dim=-1)
        out = einsum('b i j, b j d -> b i d', attn, v)
        out = out.reshape(b, h, n, -1).permute(0, 2, 1, 3).reshape(b, n, -1)
        return self.to_out(out)


class Perceiver(nn.Module):
    def __init__(self, input_dim, num_latents=8, latent_dim=16, cross_heads=1, latent_heads=2,
                 depth=2, num_classes=3):
        super().__init__()
        self.latents = nn.Parameter(torch.randn(num_latents, latent_dim))
        self.input_proj = nn.Linear(input_dim, latent_dim)
        self.cross_norm = nn.LayerNorm(latent_dim)
        self.cross_attn = nn.MultiheadAttention(latent_dim, cross_heads, batch_first=True)
        self.cross_ff = PreNormResidual(latent_dim, FeedForward(latent_dim, 2))
        self.layers = nn.ModuleList([nn.ModuleList([
            PreNormResidual(latent_dim, Attention(latent_dim, heads=latent_heads)),
            PreNormResidual(latent_dim, FeedForward(latent_dim, 2))]) for _ in range(depth)])
        self.to_logits = nn.Sequential(nn.LayerNorm(latent_dim), nn.Linear(latent_dim, num_classes))

    def forward(self, data, mask=None):
        b = data.shape[0]
        x = self.latents.unsqueeze(0).expand(b, -1, -1)
        context = self.input_proj(data)
        key_padding_mask = ~mask if mask is not None else None  # True = ignore
        attn_out, attn_weights = self.cross_attn(self.cross_norm(x), context, context,
                                                 key_padding_mask=key_padding_mask,
                                                 need_weights=False)
        x = x + attn_out
        x = self.cross_ff(x)
        for self_attn, self_ff in self.layers:
            x = self_attn(x)
            x = self_ff(x)
        return self.to_logits(x.mean(dim=-2)), attn_weights


def train(model, make_batch, steps, lr, name):
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    scheduler = torch.optim.lr_scheduler.StepLR(opt, step_size=steps // 2, gamma=0.5)
    for step in range(steps):
        inputs, labels, extra = make_batch()
        logits = model(inputs, **extra)
        if isinstance(logits, tuple):
            logits = logits[0]
        loss = F.cross_entropy(logits, labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        scheduler.step()
        if step % 5 == 0 or step == steps - 1:
            acc = (logits.argmax(dim=-1) == labels).float().mean()
            print(f'{name} step {step:2d} loss {loss.item():.4f} acc {acc.item():.2f}')


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--steps', type=int, default=15)
    args = parser.parse_args()
    torch.manual_seed(2024)

    mixer = MLPMixer(image_size=16, channels=3, patch_size=4, dim=16, depth=2, num_classes=3)
    print(mixer[:3])
    print('mixer parameters:', sum(p.numel() for p in mixer.parameters()))
    img = torch.randn(2, 3, 16, 16)
    print('mixer logits shape:', mixer(img).shape)

    def image_batch():
        y = torch.randint(0, 3, (32,))
        x = torch.randn(32, 3, 16, 16) * 0.5
        x[torch.arange(32), y] += 1.0
        return x, y, {}
    train(mixer, image_batch, args.steps, 3e-3, 'mixer')

    perceiver = Perceiver(input_dim=5)
    print(perceiver.cross_attn)
    print('in_proj_weight', tuple(perceiver.cross_attn.in_proj_weight.shape),
          '_qkv_same_embed_dim', perceiver.cross_attn._qkv_same_embed_dim)
    print('perceiver parameters:', sum(p.numel() for p in perceiver.parameters()))

    def sequence_batch():
        lengths = torch.randint(3, 12, (24,))
        mask = torch.arange(12)[None, :] < lengths[:, None]
        data = torch.randn(24, 12, 5)
        y = torch.randint(0, 3, (24,))
        data[..., 0] += (y.float() - 1)[:, None] * 2
        data = data.masked_fill(~mask[..., None], 0.)
        return data, y, {'mask': mask}

    # padded keys are ignored: changing them does not change the output
    perceiver.eval()
    data, _, extra = sequence_batch()
    noisy = torch.where(extra['mask'][..., None], data, torch.randn_like(data) * 100)
    with torch.no_grad():
        a, w = perceiver(data, **extra)
        b, _ = perceiver(noisy, **extra)
    print('padding ignored:', torch.allclose(a, b, atol=1e-5), 'weights:', w)
    perceiver.train()
    train(perceiver, sequence_batch, args.steps, 3e-3, 'perceiver')

    q = torch.randn(2, 4, 16)
    kv = torch.randn(2, 6, 16)
    mha = perceiver.cross_attn
    out, weights = mha(q, kv, kv, key_padding_mask=torch.tensor([[False] * 6, [False] * 3 + [True] * 3]))
    print('average attn weights', tuple(weights.shape), 'masked weight sum',
          weights[1, :, 3:].sum().item(), 'rows sum to one',
          torch.allclose(weights.sum(-1), torch.ones(2, 4)))


if __name__ == '__main__':
    main()
