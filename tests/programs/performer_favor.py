"""Performer FAVOR+ linear attention (Choromanski et al.; in the style of lucidrains'
performer-pytorch): orthogonal random features from torch.linalg.qr of gaussian blocks scaled
by chi-distributed norms, the softmax kernel feature map with exp and a max stabiliser, the
non-causal linear attention and the causal one with prefix sums (cumsum over einsum outer
products), compared with exact softmax attention, and a small causal Performer LM trained
with AdamW on a repeating-pattern task, with feature redraws every few steps."""
import math
from functools import partial

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import einsum


def exists(val):
    return val is not None


def default(val, d):
    return val if exists(val) else d


def orthogonal_matrix_chunk(cols, device=None):
    unstructured_block = torch.randn((cols, cols), device=device)
    q, r = torch.linalg.qr(unstructured_block.cpu(), mode='reduced')
    q, r = map(lambda t: t.to(device), (q, r))
    return q.t()


def gaussian_orthogonal_random_matrix(nb_rows, nb_columns, scaling=0, device=None):
    nb_full_blocks = int(nb_rows / nb_columns)
    block_list = []
    for _ in range(nb_full_blocks):
        q = orthogonal_matrix_chunk(nb_columns, device=device)
        block_list.append(q)
    remaining_rows = nb_rows - nb_full_blocks * nb_columns
    if remaining_rows > 0:
        q = orthogonal_matrix_chunk(nb_columns, device=device)
        block_list.append(q[:remaining_rows])
    final_matrix = torch.cat(block_list)
    if scaling == 0:
        multiplier = torch.randn((nb_rows, nb_columns), device=device).norm(dim=1)
    elif scaling == 1:
        multiplier = math.sqrt((float(nb_columns))) * torch.ones((nb_rows,), device=device)
    else:
        raise ValueError(f'Invalid scaling {scaling}')
    return torch.diag(multiplier) @ final_matrix


def softmax_kernel(data, *, projection_matrix, is_query, normalize_data=True, eps=1e-4,
                   device=None):
    b, h, *_ = data.shape
    data_normalizer = (data.shape[-1] ** -0.25) if normalize_data else 1.
    ratio = (projection_matrix.shape[0] ** -0.5)
    projection = projection_matrix.unsqueeze(0).unsqueeze(0).expand(b, h, -1, -1)
    projection = projection.type_as(data)
    data_dash = torch.einsum('...id,...jd->...ij', (data_normalizer * data), projection)
    diag_data = data ** 2
    diag_data = torch.sum(diag_data, dim=-1)
    diag_data = (diag_data / 2.0) * (data_normalizer ** 2)
    diag_data = diag_data.unsqueeze(dim=-1)
    if is_query:
        data_dash = ratio * (
            torch.exp(data_dash - diag_data -
                      torch.amax(data_dash, dim=-1, keepdim=True).detach()) + eps)
    else:
        data_dash = ratio * (
            torch.exp(data_dash - diag_data -
                      torch.amax(data_dash, dim=(-1, -2), keepdim=True).detach()) + eps)
    return data_dash.type_as(data)


def linear_attention(q, k, v):
    k_cumsum = k.sum(dim=-2)
    D_inv = 1. / torch.einsum('...nd,...d->...n', q, k_cumsum.type_as(q))
    context = torch.einsum('...nd,...ne->...de', k, v)
    out = torch.einsum('...de,...nd,...n->...ne', context, q, D_inv)
    return out


def causal_linear_attention_noncuda(q, k, v, chunk_size=8, eps=1e-6):
    last_k_cumsum = 0
    last_context_cumsum = 0
    outs = []
    for q, k, v in zip(*map(lambda t: t.chunk(chunk_size, dim=-2), (q, k, v))):
        k_cumsum = last_k_cumsum + k.cumsum(dim=-2)
        D_inv = 1. / torch.einsum('...nd,...nd->...n', q, k_cumsum.type_as(q) + eps)
        context = torch.einsum('...nd,...ne->...nde', k, v)
        context_cumsum = last_context_cumsum + context.cumsum(dim=-3)
        out = torch.einsum('...nde,...nd,...n->...ne', context_cumsum, q, D_inv)
        last_k_cumsum = k_cumsum[:, :, -1:]
        last_context_cumsum = context_cumsum[:, :, -1:]
        outs.append(out)
    return torch.cat(outs, dim=-2)


class FastAttention(nn.Module):
    def __init__(self, dim_heads, nb_features=None, ortho_scaling=0, causal=False):
        super().__init__()
        nb_features = default(nb_features, int(dim_heads * math.log(dim_heads)))
        self.dim_heads = dim_heads
        self.nb_features = nb_features
        self.ortho_scaling = ortho_scaling
        self.create_projection = partial(gaussian_orthogonal_random_matrix, nb_rows=self.nb_features,
                                         nb_columns=dim_heads, scaling=ortho_scaling)
        projection_matrix = self.create_projection()
        self.register_buffer('projection_matrix', projection_matrix)
        self.causal = causal

    @torch.no_grad()
    def redraw_projection_matrix(self, device):
        projections = self.create_projection(device=device)
        self.projection_matrix.copy_(projections)
        del projections

    def forward(self, q, k, v):
        device = q.device
        create_kernel = partial(softmax_kernel, projection_matrix=self.projection_matrix,
                                device=device)
        q = create_kernel(q, is_query=True)
        k = create_kernel(k, is_query=False)
        attn_fn = linear_attention if not self.causal else causal_linear_attention_noncuda
        out = attn_fn(q, k, v)
        return out

    def extra_repr(self):
        return f'dim_heads={self.dim_heads}, nb_features={self.nb_features}, causal={self.causal}'


class SelfAttention(nn.Module):
    def __init__(self, dim, heads=4, dim_head=16, nb_features=32, causal=True):
        super().__init__()
        inner_dim = dim_head * heads
        self.fast_attention = FastAttention(dim_head, nb_features, causal=causal)
        self.heads = heads
        self.to_q = nn.Linear(dim, inner_dim)
        self.to_k = nn.Linear(dim, inner_dim)
        self.to_v = nn.Linear(dim, inner_dim)
        self.to_out = nn.Linear(inner_dim, dim)

    def forward(self, x):
        b, n, _, h = *x.shape, self.heads
        q, k, v = self.to_q(x), self.to_k(x), self.to_v(x)
        q, k, v = map(lambda t: t.reshape(b, n, h, -1).transpose(1, 2), (q, k, v))
        out = self.fast_attention(q, k, v)
        out = out.transpose(1, 2).reshape(b, n, -1)
        return self.to_out(out)


class PerformerLM(nn.Module):
    def __init__(self, num_tokens, max_seq_len, dim, depth, heads=4, dim_head=16):
        super().__init__()
        self.token_emb = nn.Embedding(num_tokens, dim)
        self.pos_emb = nn.Embedding(max_seq_len, dim)
        self.layers = nn.ModuleList([])
        for _ in range(depth):
            self.layers.append(nn.ModuleList([
                nn.LayerNorm(dim), SelfAttention(dim, heads, dim_head),
                nn.LayerNorm(dim), nn.Sequential(nn.Linear(dim, dim * 4), nn.GELU(),
                                                 nn.Linear(dim * 4, dim)),
            ]))
        self.norm = nn.LayerNorm(dim)
        self.to_logits = nn.Linear(dim, num_tokens)

    @torch.no_grad()
    def redraw_projections(self):
        for m in self.modules():
            if isinstance(m, FastAttention):
                m.redraw_projection_matrix(m.projection_matrix.device)

    def forward(self, x):
        b, n = x.shape
        x = self.token_emb(x) + self.pos_emb(torch.arange(n, device=x.device))
        for ln1, attn, ln2, ff in self.layers:
            x = x + attn(ln1(x))
            x = x + ff(ln2(x))
        return self.to_logits(self.norm(x))


def main():
    torch.manual_seed(0)
    torch.set_printoptions(precision=4, sci_mode=False)

    proj = gaussian_orthogonal_random_matrix(24, 8, scaling=1)
    g = proj[:8] @ proj[:8].t()
    print("projection", tuple(proj.shape), "block orthogonal:",
          torch.allclose(g, 8 * torch.eye(8), atol=1e-4))
    proj0 = gaussian_orthogonal_random_matrix(24, 8)
    print("row norms (chi)", proj0.norm(dim=1)[:6])

    # FAVOR+ approximates softmax attention: error shrinks as features grow
    q = torch.randn(1, 2, 32, 8) * 0.5
    k = torch.randn(1, 2, 32, 8) * 0.5
    v = torch.randn(1, 2, 32, 8)
    exact = F.softmax(q @ k.transpose(-1, -2) / math.sqrt(8), dim=-1) @ v
    for m in (16, 256, 2048):
        fa = FastAttention(8, nb_features=m)
        approx = fa(q, k, v)
        err = (approx - exact).abs().mean().item()
        print(f"features {m:5d} mean abs error {err:.3f}")

    causal = FastAttention(8, nb_features=64, causal=True)
    qf = softmax_kernel(q, projection_matrix=causal.projection_matrix, is_query=True)
    kf = softmax_kernel(k, projection_matrix=causal.projection_matrix, is_query=False)
    print("features", tuple(qf.shape), "positive:", bool((qf > 0).all() and (kf > 0).all()))
    out_c = causal_linear_attention_noncuda(qf, kf, v)
    # the same thing by masking the (n x n) kernel matrix
    A = torch.einsum('...nd,...md->...nm', qf, kf).tril()
    ref = (A @ v) / (A.sum(-1, keepdim=True))
    print("causal prefix-sum == masked quadratic:", torch.allclose(out_c, ref, rtol=1e-3, atol=1e-4))
    print("first causal row equals v[0]:", torch.allclose(out_c[..., 0, :], v[..., 0, :], atol=1e-4))

    seq_len, num_tokens = 32, 16
    model = PerformerLM(num_tokens, seq_len, dim=32, depth=2)
    print(model)
    print("parameters", sum(p.numel() for p in model.parameters() if p.requires_grad))
    print("buffers", [n for n, _ in model.named_buffers()])

    base = torch.randint(0, num_tokens, (16, 8))
    data = base.repeat(1, 5)[:, : seq_len + 1]
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    for step in range(30):
        if step > 0 and step % 10 == 0:
            model.redraw_projections()
        logits = model(data[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, num_tokens), data[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 5 == 0 or step == 29:
            print(f"step {step:2d} loss {loss.item():.4f}")
    model.eval()
    with torch.no_grad():
        pred = model(data[:, :-1]).argmax(-1)
        acc = (pred[:, 8:] == data[:, 9:]).float().mean().item()
    print(f"copy accuracy after the first period {acc:.3f}")


if __name__ == "__main__":
    main()
