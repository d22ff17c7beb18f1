"""xLSTM cells written by hand (in the style of the NX-AI xlstm reference code and the
popular single-file re-implementations): an sLSTM cell with exponential input gate and a
stabilizer state m (m_t = max(log f_t + m_{t-1}, log i_t)), forget gate through
torch.logsigmoid, normalizer state n; an mLSTM cell with matrix memory C updated by outer
products (torch.einsum), the parallel (attention-like) mLSTM form with a log-gate cumsum
decay matrix checked against the recurrent one; block-diagonal head projections, causal
conv, GroupNorm as multi-head layer norm, trained on a tiny sequence task."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalConv1d(nn.Module):
    def __init__(self, dim, kernel_size=4):
        super().__init__()
        self.pad = kernel_size - 1
        self.conv = nn.Conv1d(dim, dim, kernel_size, groups=dim, padding=self.pad)

    def forward(self, x):  # (B, T, D)
        y = self.conv(x.transpose(1, 2))[..., :-self.pad]
        return y.transpose(1, 2)


class BlockDiagonal(nn.Module):
    def __init__(self, in_features, out_features, num_blocks, bias=True):
        super().__init__()
        assert in_features % num_blocks == 0 and out_features % num_blocks == 0
        self.num_blocks = num_blocks
        self.blocks = nn.ModuleList([
            nn.Linear(in_features // num_blocks, out_features // num_blocks, bias=bias)
            for _ in range(num_blocks)])

    def forward(self, x):
        x = x.chunk(self.num_blocks, dim=-1)
        x = [b(x_i) for b, x_i in zip(self.blocks, x)]
        return torch.cat(x, dim=-1)


class sLSTMCell(nn.Module):
    """Scalar memory, exponential gating, stabilized: h, c, n, m states."""

    def __init__(self, input_size, hidden_size, num_heads):
        super().__init__()
        self.hidden_size = hidden_size
        self.num_heads = num_heads
        self.W = nn.Linear(input_size, 4 * hidden_size)
        self.R = BlockDiagonal(hidden_size, 4 * hidden_size, num_heads, bias=False)
        self.group_norm = nn.GroupNorm(num_heads, hidden_size)

    def forward(self, x, state):
        h, c, n, m = state
        z_tilde, i_tilde, f_tilde, o_tilde = (self.W(x) + self.R(h)).chunk(4, dim=-1)
        log_f = F.logsigmoid(f_tilde)  # sigmoid forget gate in log space
        m_new = torch.max(log_f + m, i_tilde)  # stabilizer
        i = torch.exp(i_tilde - m_new)
        f = torch.exp(log_f + m - m_new)
        z = torch.tanh(z_tilde)
        o = torch.sigmoid(o_tilde)
        c_new = f * c + i * z
        n_new = f * n + i
        h_new = o * (c_new / n_new)
        return h_new, (h_new, c_new, n_new, m_new)

    def init_state(self, batch):
        zeros = torch.zeros(batch, self.hidden_size)
        return zeros, zeros.clone(), zeros.clone(), zeros.clone()


class mLSTMCell(nn.Module):
    """Matrix memory C (per head d x d) with covariance update rule."""

    def __init__(self, input_size, hidden_size, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.hidden_size = hidden_size
        self.q = nn.Linear(input_size, hidden_size)
        self.k = nn.Linear(input_size, hidden_size)
        self.v = nn.Linear(input_size, hidden_size)
        self.igate = nn.Linear(3 * input_size, num_heads)
        self.fgate = nn.Linear(3 * input_size, num_heads)
        self.outnorm = nn.GroupNorm(num_heads, hidden_size, affine=True)
        nn.init.zeros_(self.igate.weight)
        nn.init.normal_(self.igate.bias, mean=0.0, std=0.1)
        nn.init.zeros_(self.fgate.weight)
        with torch.no_grad():
            self.fgate.bias.copy_(torch.linspace(3.0, 6.0, num_heads))

    def gates(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        qkv = torch.cat([q, k, v], dim=-1)
        return q, k, v, self.igate(qkv), self.fgate(qkv)

    def step(self, x, state):
        B = x.shape[0]
        C, n, m = state  # (B, H, d, d), (B, H, d), (B, H)
        q, k, v, i_tilde, f_tilde = self.gates(x)
        q = q.view(B, self.num_heads, self.head_dim)
        k = k.view(B, self.num_heads, self.head_dim) / math.sqrt(self.head_dim)
        v = v.view(B, self.num_heads, self.head_dim)
        log_f = F.logsigmoid(f_tilde)
        m_new = torch.maximum(log_f + m, i_tilde)
        i = torch.exp(i_tilde - m_new).unsqueeze(-1)
        f = torch.exp(log_f + m - m_new).unsqueeze(-1)
        C_new = f.unsqueeze(-1) * C + i.unsqueeze(-1) * torch.einsum('bhd,bhe->bhde', v, k)
        n_new = f * n + i * k
        num = torch.einsum('bhde,bhe->bhd', C_new, q)
        den = torch.maximum((n_new * q).sum(-1, keepdim=True).abs(), torch.exp(-m_new).unsqueeze(-1))
        h = num / den
        return h.reshape(B, -1), (C_new, n_new, m_new)

    def init_state(self, batch):
        H, d = self.num_heads, self.head_dim
        return (torch.zeros(batch, H, d, d), torch.zeros(batch, H, d), torch.zeros(batch, H))

    def recurrent(self, x):
        B, T, _ = x.shape
        state = self.init_state(B)
        hs = []
        for t in range(T):
            h, state = self.step(x[:, t], state)
            hs.append(h)
        return torch.stack(hs, dim=1)

    def parallel(self, x):
        """The stabilized parallel form: D[t, s] = exp(sum_{s<r<=t} log f_r + i_s - m_t)."""
        B, T, _ = x.shape
        q, k, v, i_tilde, f_tilde = self.gates(x)
        q = q.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)  # (B, H, T, d)
        k = k.view(B, T, self.num_heads, self.head_dim).transpose(1, 2) / math.sqrt(self.head_dim)
        v = v.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        log_f = F.logsigmoid(f_tilde).transpose(1, 2)  # (B, H, T)
        i_tilde = i_tilde.transpose(1, 2)
        log_f_cumsum = torch.cat([torch.zeros_like(log_f[..., :1]), log_f.cumsum(-1)], dim=-1)
        # log_fg_matrix[t, s] = sum_{s < r <= t} log f_r
        log_fg_matrix = log_f_cumsum[..., 1:, None] - log_f_cumsum[..., None, 1:]
        ltr = torch.tril(torch.ones(T, T, dtype=torch.bool))
        log_fg_matrix = torch.where(ltr, log_fg_matrix, -float("inf"))
        log_D = log_fg_matrix + i_tilde[..., None, :]
        max_log_D, _ = torch.max(log_D, dim=-1, keepdim=True)
        D = torch.exp(log_D - max_log_D)
        scores = q @ k.transpose(-2, -1)
        C = scores * D
        normalizer = torch.maximum(C.sum(dim=-1, keepdim=True).abs(), torch.exp(-max_log_D))
        h = (C / normalizer) @ v  # (B, H, T, d)
        return h.transpose(1, 2).reshape(B, T, -1)


class xLSTMModel(nn.Module):
    def __init__(self, vocab, dim=32, heads=4):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.conv = CausalConv1d(dim)
        self.mlstm = mLSTMCell(dim, dim, heads)
        self.slstm = sLSTMCell(dim, dim, heads)
        self.norm1 = nn.LayerNorm(dim)
        self.norm2 = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, idx):
        x = self.embed(idx)
        B, T, D = x.shape
        h = self.mlstm.parallel(F.silu(self.conv(self.norm1(x))))
        h = self.mlstm.outnorm(h.reshape(B * T, D)).reshape(B, T, D)
        x = x + h
        state = self.slstm.init_state(B)
        y = []
        xn = self.norm2(x)
        for t in range(T):
            out, state = self.slstm(xn[:, t], state)
            y.append(out)
        x = x + self.slstm.group_norm(torch.stack(y, 1).reshape(B * T, D)).reshape(B, T, D)
        return self.head(x)


torch.manual_seed(0)
torch.set_printoptions(precision=4, sci_mode=False)
print("logsigmoid", F.logsigmoid(torch.tensor([-30.0, -1.0, 0.0, 2.0, 30.0])))
t = torch.tensor([-3.0, 0.0, 3.0], requires_grad=True)
F.logsigmoid(t).sum().backward()
print("logsigmoid grad", t.grad)
print("nn.LogSigmoid", nn.LogSigmoid()(torch.tensor([[-1.0, 1.0]])))

cell = mLSTMCell(8, 8, 2)
print(cell)
x = torch.randn(2, 6, 8)
rec = cell.recurrent(x)
par = cell.parallel(x)
print("mLSTM recurrent", rec.shape, "parallel", par.shape)
print("recurrent == parallel", torch.allclose(rec, par, atol=1e-5))
print("mLSTM out[0, -1]", par[0, -1])

s = sLSTMCell(8, 8, 2)
print(s)
state = s.init_state(2)
for t_ in range(6):
    h, state = s(x[:, t_], state)
print("sLSTM h", h[0])
print("sLSTM n positive", bool((state[2] > 0).all()), "m", state[3].shape)
print("outer product", torch.einsum('bhd,bhe->bhde', torch.ones(1, 1, 2), torch.arange(3.0).view(1, 1, 3)))
print("block diag", BlockDiagonal(4, 8, 2))

# task: predict the token seen 3 steps ago
vocab, T = 8, 12
model = xLSTMModel(vocab)
print("parameters", sum(p.numel() for p in model.parameters()))
print("tied", model.head.weight is model.embed.weight)
opt = torch.optim.AdamW(model.parameters(), lr=1e-2, betas=(0.9, 0.98), weight_decay=0.1)
for step in range(25):
    idx = torch.randint(0, vocab, (16, T))
    logits = model(idx)
    loss = F.cross_entropy(logits[:, 3:].reshape(-1, vocab), idx[:, :-3].reshape(-1))
    opt.zero_grad()
    loss.backward()
    gn = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    if step % 5 == 0 or step == 24:
        print(f"step {step:2d} loss {loss.item():.4f} grad norm {gn.item():.3f}")
