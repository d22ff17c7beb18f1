"""FT-Transformer for tabular data in the style of yandex-research/rtdl (NumericalFeatureTokenizer
with nn.Parameter weights and torch.einsum-free broadcasting, CategoricalFeatureTokenizer with
offsets, a CLS token appended with expand/cat, nn.TransformerEncoderLayer(norm_first=True,
batch_first=True)) and the sparsemax/entmax-1.5 activations of the deep-spin/entmax package
(torch.sort, cumsum, arange, the threshold gathered from the support size, clamp, and custom
torch.autograd.Function backwards), trained with AdamW parameter groups that exempt biases,
norms and embeddings from weight decay."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


# ----------------------------------------------------------------------------- entmax
def _make_ix_like(X, dim):
    d = X.size(dim)
    rho = torch.arange(1, d + 1, device=X.device, dtype=X.dtype)
    view = [1] * X.dim()
    view[0] = -1
    return rho.view(view).transpose(0, dim)


def _roll_last(X, dim):
    if dim == -1:
        return X
    elif dim < 0:
        dim = X.dim() - dim
    perm = [i for i in range(X.dim()) if i != dim] + [dim]
    return X.permute(perm)


def _sparsemax_threshold_and_support(X, dim=-1, k=None):
    if k is None or k >= X.shape[dim]:
        topk, _ = torch.sort(X, dim=dim, descending=True)
    else:
        topk, _ = torch.topk(X, k=k, dim=dim)
    topk_cumsum = topk.cumsum(dim) - 1
    rhos = _make_ix_like(topk, dim)
    support = rhos * topk > topk_cumsum
    support_size = support.sum(dim=dim).unsqueeze(dim)
    tau = topk_cumsum.gather(dim, support_size - 1)
    tau /= support_size.to(X.dtype)
    return tau, support_size


def _entmax_threshold_and_support(X, dim=-1, k=None):
    Xsrt, _ = torch.sort(X, descending=True, dim=dim)
    rho = _make_ix_like(Xsrt, dim)
    mean = Xsrt.cumsum(dim) / rho
    mean_sq = (Xsrt ** 2).cumsum(dim) / rho
    ss = rho * (mean_sq - mean ** 2)
    delta = (1 - ss) / rho
    delta_nz = torch.clamp(delta, 0)
    tau = mean - torch.sqrt(delta_nz)
    support_size = (tau <= Xsrt).sum(dim).unsqueeze(dim)
    tau_star = tau.gather(dim, support_size - 1)
    return tau_star, support_size


class SparsemaxFunction(torch.autograd.Function):
    @classmethod
    def forward(cls, ctx, X, dim=-1, k=None):
        ctx.dim = dim
        max_val, _ = X.max(dim=dim, keepdim=True)
        X = X - max_val  # same numerical stability trick as softmax
        tau, supp_size = _sparsemax_threshold_and_support(X, dim=dim, k=k)
        output = torch.clamp(X - tau, min=0)
        ctx.save_for_backward(supp_size, output)
        return output

    @classmethod
    def backward(cls, ctx, grad_output):
        supp_size, output = ctx.saved_tensors
        dim = ctx.dim
        grad_input = grad_output.clone()
        grad_input[output == 0] = 0
        v_hat = grad_input.sum(dim=dim) / supp_size.to(output.dtype).squeeze(dim)
        v_hat = v_hat.unsqueeze(dim)
        grad_input = torch.where(output != 0, grad_input - v_hat, grad_input)
        return grad_input, None, None


class Entmax15Function(torch.autograd.Function):
    @classmethod
    def forward(cls, ctx, X, dim=0, k=None):
        ctx.dim = dim
        max_val, _ = X.max(dim=dim, keepdim=True)
        X = X - max_val
        X = X / 2
        tau_star, _ = _entmax_threshold_and_support(X, dim=dim, k=k)
        Y = torch.clamp(X - tau_star, min=0) ** 2
        ctx.save_for_backward(Y)
        return Y

    @classmethod
    def backward(cls, ctx, dY):
        Y, = ctx.saved_tensors
        gppr = Y.sqrt()
        dX = dY * gppr
        q = dX.sum(ctx.dim) / gppr.sum(ctx.dim)
        q = q.unsqueeze(ctx.dim)
        dX -= q * gppr
        return dX, None, None


def sparsemax(X, dim=-1, k=None):
    return SparsemaxFunction.apply(X, dim, k)


def entmax15(X, dim=-1, k=None):
    return Entmax15Function.apply(X, dim, k)


class Sparsemax(nn.Module):
    def __init__(self, dim=-1, k=None):
        self.dim = dim
        self.k = k
        super().__init__()

    def forward(self, X):
        return sparsemax(X, dim=self.dim, k=self.k)

    def extra_repr(self):
        return f"dim={self.dim}"


# ----------------------------------------------------------------------------- rtdl
class NumericalFeatureTokenizer(nn.Module):
    def __init__(self, n_features, d_token, bias=True, initialization="uniform"):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_features, d_token))
        self.bias = nn.Parameter(torch.empty(n_features, d_token)) if bias else None
        d_sqrt_inv = 1 / math.sqrt(d_token)
        for parameter in [self.weight, self.bias]:
            if parameter is not None:
                nn.init.uniform_(parameter, a=-d_sqrt_inv, b=d_sqrt_inv)

    @property
    def n_tokens(self):
        return len(self.weight)

    def forward(self, x):
        x = torch.einsum("bf,fd->bfd", x, self.weight)
        if self.bias is not None:
            x = x + self.bias[None]
        return x


class CategoricalFeatureTokenizer(nn.Module):
    category_offsets: torch.Tensor

    def __init__(self, cardinalities, d_token, bias=True):
        super().__init__()
        category_offsets = torch.tensor([0] + cardinalities[:-1]).cumsum(0)
        self.register_buffer("category_offsets", category_offsets, persistent=False)
        self.embeddings = nn.Embedding(sum(cardinalities), d_token)
        self.bias = nn.Parameter(torch.empty(len(cardinalities), d_token)) if bias else None
        d_sqrt_inv = 1 / math.sqrt(d_token)
        for parameter in [self.embeddings.weight, self.bias]:
            if parameter is not None:
                nn.init.uniform_(parameter, a=-d_sqrt_inv, b=d_sqrt_inv)

    def forward(self, x):
        x = self.embeddings(x + self.category_offsets[None])
        if self.bias is not None:
            x = x + self.bias[None]
        return x


class CLSToken(nn.Module):
    def __init__(self, d_token):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(d_token))
        d_sqrt_inv = 1 / math.sqrt(d_token)
        nn.init.uniform_(self.weight, a=-d_sqrt_inv, b=d_sqrt_inv)

    def expand(self, *leading_dimensions):
        if not leading_dimensions:
            return self.weight
        new_dims = (1,) * (len(leading_dimensions) - 1)
        return self.weight.view(*new_dims, -1).expand(*leading_dimensions, -1)

    def forward(self, x):
        return torch.cat([x, self.expand(len(x), 1)], dim=1)


class ReGLU(nn.Module):
    def forward(self, x):
        a, b = x.chunk(2, dim=-1)
        return a * F.relu(b)


class SparseAttentionBlock(nn.Module):
    """A pre-norm attention block whose attention weights come from sparsemax or entmax15."""

    def __init__(self, d_token, n_heads, activation):
        super().__init__()
        self.n_heads = n_heads
        self.norm = nn.LayerNorm(d_token)
        self.W_qkv = nn.Linear(d_token, 3 * d_token)
        self.W_out = nn.Linear(d_token, d_token)
        self.activation = activation

    def forward(self, x):
        B, T, D = x.shape
        h = self.n_heads
        q, k, v = self.W_qkv(self.norm(x)).chunk(3, dim=-1)
        q, k, v = (t.reshape(B, T, h, D // h).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(D // h)
        attention = self.activation(scores)
        out = (attention @ v).transpose(1, 2).reshape(B, T, D)
        return x + self.W_out(out), attention


class FTTransformer(nn.Module):
    def __init__(self, n_num, cardinalities, d_token=16, n_blocks=2, n_heads=4, d_out=1,
                 attention="softmax"):
        super().__init__()
        self.num_tokenizer = NumericalFeatureTokenizer(n_num, d_token)
        self.cat_tokenizer = CategoricalFeatureTokenizer(cardinalities, d_token)
        self.cls_token = CLSToken(d_token)
        if attention == "softmax":
            layer = nn.TransformerEncoderLayer(d_token, n_heads, dim_feedforward=2 * d_token,
                                               dropout=0.0, activation="gelu",
                                               batch_first=True, norm_first=True)
            self.blocks = nn.TransformerEncoder(layer, n_blocks, enable_nested_tensor=False)
        else:
            act = Sparsemax(dim=-1) if attention == "sparsemax" else (lambda s: entmax15(s))
            self.blocks = nn.ModuleList(
                [SparseAttentionBlock(d_token, n_heads, act) for _ in range(n_blocks)])
        self.head = nn.Sequential(nn.LayerNorm(d_token), nn.ReLU(), nn.Linear(d_token, d_out))
        self.last_attention = None

    def forward(self, x_num, x_cat):
        x = torch.cat([self.num_tokenizer(x_num), self.cat_tokenizer(x_cat)], dim=1)
        x = self.cls_token(x)
        if isinstance(self.blocks, nn.TransformerEncoder):
            x = self.blocks(x)
        else:
            for block in self.blocks:
                x, self.last_attention = block(x)
        return self.head(x[:, -1])


def make_parameter_groups(model, weight_decay):
    no_decay_names = {"bias", "weight_norm"}
    decay, no_decay = [], []
    for module_name, module in model.named_modules():
        for name, parameter in module.named_parameters(recurse=False):
            full_name = f"{module_name}.{name}" if module_name else name
            if (isinstance(module, (nn.LayerNorm, nn.Embedding, CLSToken))
                    or name in no_decay_names or "tokenizer" in full_name):
                no_decay.append(parameter)
            else:
                decay.append(parameter)
    return [{"params": decay, "weight_decay": weight_decay},
            {"params": no_decay, "weight_decay": 0.0}]


# the activations on their own
z = torch.tensor([[1.0, 0.8, 0.1, -1.0], [0.2, 0.2, 0.2, 0.2], [3.0, 0.0, 0.0, -2.0]])
print("softmax", torch.softmax(z, -1))
print("sparsemax", sparsemax(z))
print("entmax15", entmax15(z))
print("sums", sparsemax(z).sum(-1), entmax15(z).sum(-1))
print("sparsemax dim 0", sparsemax(z, dim=0))
print("sparsemax top-2", sparsemax(z, k=2))
zg = z.clone().requires_grad_()
w = torch.arange(4.0)
(sparsemax(zg) * w).sum().backward()
print("sparsemax grad", zg.grad)
zg.grad = None
(entmax15(zg) * w).sum().backward()
print("entmax15 grad", zg.grad)
zd = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
print("gradcheck sparsemax", torch.autograd.gradcheck(lambda t: sparsemax(t), (zd,)))
print("gradcheck entmax15", torch.autograd.gradcheck(lambda t: entmax15(t), (zd,)))
print(Sparsemax(dim=1))

# a tabular regression task: y depends on numerical features and a categorical one
N, n_num, cards = 96, 5, [3, 4]
x_num = torch.randn(N, n_num)
x_cat = torch.stack([torch.randint(0, c, (N,)) for c in cards], dim=1)
cat_effect = torch.tensor([-1.0, 0.0, 1.0])[x_cat[:, 0]]
y = (x_num[:, 0] * x_num[:, 1] + torch.sin(x_num[:, 2]) + cat_effect).unsqueeze(1)
y = (y - y.mean()) / y.std()
print("data", tuple(x_num.shape), tuple(x_cat.shape), x_cat.dtype, f"{y.std().item():.4f}")

tok = CategoricalFeatureTokenizer(cards, 8)
print("category offsets", tok.category_offsets, "state keys", list(tok.state_dict()))
print("cls expand", tuple(CLSToken(8).expand(2, 1).shape), CLSToken(8).expand(2, 1).stride())

for attention in ("softmax", "sparsemax", "entmax15"):
    torch.manual_seed(1)
    model = FTTransformer(n_num, cards, attention=attention)
    if attention == "softmax":
        print(model)
    groups = make_parameter_groups(model, weight_decay=1e-5)
    print(attention, "param groups", [len(g["params"]) for g in groups],
          sum(p.numel() for p in model.parameters()))
    optimizer = torch.optim.AdamW(groups, lr=3e-3, betas=(0.9, 0.999))
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=10, eta_min=1e-4)
    for epoch in range(10):
        model.train()
        perm = torch.randperm(N)
        total = 0.0
        for idx in perm.split(32):
            optimizer.zero_grad(set_to_none=True)
            loss = F.mse_loss(model(x_num[idx], x_cat[idx]), y[idx])
            loss.backward()
            optimizer.step()
            total += loss.item() * len(idx)
        scheduler.step()
        if epoch % 3 == 0 or epoch == 9:
            print(f"{attention} epoch {epoch} loss {total / N:.4f} "
                  f"lr {scheduler.get_last_lr()[0]:.6f}")
    model.eval()
    with torch.no_grad():
        pred = model(x_num, x_cat)
        rmse = torch.sqrt(F.mse_loss(pred, y))
    print(f"{attention} rmse {rmse.item():.4f}")
    if model.last_attention is not None:
        att = model.last_attention
        print(attention, "attention", tuple(att.shape),
              "zeros", f"{(att == 0).float().mean().item():.3f}",
              "rows sum to 1", torch.allclose(att.sum(-1), torch.ones(())))
