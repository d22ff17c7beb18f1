"""A minGPT-style transformer block traced with torch.fx (not from pytorch/examples):
size unpacking, split, view/transpose, math.sqrt on a traced size (autowrapped), buffers,
ModuleDict, a leaf MultiheadAttention, scaled_dot_product_attention, arange on a traced
length."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.fx as fx


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd=8, n_head=2):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.n_head = n_head
        self.n_embd = n_embd
        self.register_buffer("bias", torch.tril(torch.ones(4, 4)).view(1, 1, 4, 4))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias == 0, float('-inf'))
        att = F.softmax(att, dim=-1)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(8)
        self.attn = CausalSelfAttention()
        self.ln_2 = nn.LayerNorm(8)
        self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(8, 32), c_proj=nn.Linear(32, 8), act=nn.GELU()))
        self.mha = nn.MultiheadAttention(8, 2, batch_first=True)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        m = self.mlp
        x = x + m.c_proj(m.act(m.c_fc(self.ln_2(x))))
        a, _ = self.mha(x, x, x, need_weights=False)
        y = F.scaled_dot_product_attention(x, x, x, is_causal=True)
        pos = torch.arange(0, x.shape[1], dtype=torch.long)
        return a + y + torch.zeros_like(x).sum(-1, keepdim=True) + pos.float().unsqueeze(-1)


torch.manual_seed(0)
b = Block().eval()
gm = fx.symbolic_trace(b)
print(gm.graph)
print(gm.code)
x = torch.randn(2, 4, 8)
print(torch.allclose(gm(x), b(x), atol=1e-5))
