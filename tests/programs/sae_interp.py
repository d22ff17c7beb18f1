"""Sparse autoencoder for interpretability on a tiny transformer, in the style of the
TransformerLens / SAELens / OpenAI sparse_autoencoder code: activations cached with
register_forward_hook into a dict (hook handles removed afterwards), a TopK SAE (torch.topk +
scatter into zeros), a ReLU SAE with L1 penalty and pre-encoder bias, decoder columns
renormalised under torch.no_grad with the parallel gradient component removed, ghost-grads style
dead-latent bookkeeping with bincount, feature density histograms, a TopK-activation auxiliary
loss, explained variance and reconstruction (spliced-in) loss via a forward hook that returns a
replacement output."""
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Cfg:
    d_vocab: int = 24
    d_model: int = 16
    n_ctx: int = 12
    n_heads: int = 2
    n_layers: int = 2
    d_mlp: int = 64


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        d_head = cfg.d_model // cfg.n_heads
        self.W_Q = nn.Parameter(torch.empty(cfg.n_heads, cfg.d_model, d_head))
        self.W_K = nn.Parameter(torch.empty(cfg.n_heads, cfg.d_model, d_head))
        self.W_V = nn.Parameter(torch.empty(cfg.n_heads, cfg.d_model, d_head))
        self.W_O = nn.Parameter(torch.empty(cfg.n_heads, d_head, cfg.d_model))
        for w in (self.W_Q, self.W_K, self.W_V, self.W_O):
            nn.init.normal_(w, std=0.02)
        self.register_buffer("IGNORE", torch.tensor(-1e5, dtype=torch.float32))
        self.hook_pattern = nn.Identity()

    def forward(self, x):
        q = torch.einsum("bpd,hde->bphe", x, self.W_Q)
        k = torch.einsum("bpd,hde->bphe", x, self.W_K)
        v = torch.einsum("bpd,hde->bphe", x, self.W_V)
        scores = torch.einsum("bqhe,bkhe->bhqk", q, k) / math.sqrt(q.shape[-1])
        mask = torch.triu(torch.ones(scores.size(-2), scores.size(-1), device=scores.device), diagonal=1).bool()
        scores.masked_fill_(mask, self.IGNORE)
        pattern = self.hook_pattern(scores.softmax(-1))
        z = torch.einsum("bhqk,bkhe->bqhe", pattern, v)
        return torch.einsum("bqhe,hed->bqd", z, self.W_O)


class MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.W_in = nn.Linear(cfg.d_model, cfg.d_mlp)
        self.W_out = nn.Linear(cfg.d_mlp, cfg.d_model)
        self.hook_post = nn.Identity()

    def forward(self, x):
        return self.W_out(self.hook_post(F.gelu(self.W_in(x), approximate="tanh")))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.attn = Attention(cfg)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.mlp = MLP(cfg)
        self.hook_resid_mid = nn.Identity()

    def forward(self, x):
        x = self.hook_resid_mid(x + self.attn(self.ln1(x)))
        return x + self.mlp(self.ln2(x))


class TinyTransformer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed = nn.Embedding(cfg.d_vocab, cfg.d_model)
        self.pos_embed = nn.Parameter(torch.randn(cfg.n_ctx, cfg.d_model) * 0.02)
        self.blocks = nn.ModuleList([Block(cfg) for _ in range(cfg.n_layers)])
        self.ln_final = nn.LayerNorm(cfg.d_model)
        self.unembed = nn.Linear(cfg.d_model, cfg.d_vocab, bias=False)

    def forward(self, tokens):
        x = self.embed(tokens) + self.pos_embed[: tokens.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.unembed(self.ln_final(x))


class TopKSAE(nn.Module):
    def __init__(self, d_in, d_sae, k):
        super().__init__()
        self.k = k
        self.W_enc = nn.Parameter(torch.nn.init.kaiming_uniform_(torch.empty(d_in, d_sae)))
        self.W_dec = nn.Parameter(self.W_enc.detach().t().clone())
        self.b_enc = nn.Parameter(torch.zeros(d_sae))
        self.b_dec = nn.Parameter(torch.zeros(d_in))
        self.set_decoder_norm_to_unit_norm()

    def encode_pre(self, x):
        return (x - self.b_dec) @ self.W_enc + self.b_enc

    def encode(self, x):
        pre = self.encode_pre(x)
        topk = torch.topk(pre, self.k, dim=-1)
        values = F.relu(topk.values)
        return torch.zeros_like(pre).scatter(-1, topk.indices, values)

    def decode(self, acts):
        return acts @ self.W_dec + self.b_dec

    def forward(self, x):
        acts = self.encode(x)
        return self.decode(acts), acts

    @torch.no_grad()
    def set_decoder_norm_to_unit_norm(self):
        self.W_dec.data /= torch.norm(self.W_dec.data, dim=1, keepdim=True)

    @torch.no_grad()
    def remove_gradient_parallel_to_decoder_directions(self):
        parallel_component = torch.einsum("fd,fd->f", self.W_dec.grad, self.W_dec.data)
        self.W_dec.grad -= torch.einsum("f,fd->fd", parallel_component, self.W_dec.data)


class ReluSAE(nn.Module):
    def __init__(self, d_in, d_sae, l1_coefficient=3e-3):
        super().__init__()
        self.l1_coefficient = l1_coefficient
        self.W_enc = nn.Parameter(torch.empty(d_in, d_sae))
        self.W_dec = nn.Parameter(torch.empty(d_sae, d_in))
        nn.init.kaiming_uniform_(self.W_enc)
        nn.init.kaiming_uniform_(self.W_dec)
        self.b_enc = nn.Parameter(torch.zeros(d_sae))
        self.b_dec = nn.Parameter(torch.zeros(d_in))
        with torch.no_grad():
            self.W_dec.data = F.normalize(self.W_dec.data, dim=-1)

    def forward(self, x):
        acts = F.relu((x - self.b_dec) @ self.W_enc + self.b_enc)
        recon = acts @ self.W_dec + self.b_dec
        mse = (recon - x).pow(2).sum(-1).mean()
        l1 = self.l1_coefficient * acts.norm(p=1, dim=-1).mean()
        return recon, acts, mse, l1


torch.manual_seed(0)
torch.set_printoptions(precision=4, sci_mode=False)
cfg = Cfg()
print(cfg)
model = TinyTransformer(cfg)
print(model)

# train the tiny LM a few steps on a repeating-pattern task so the activations have structure
opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
for step in range(20):
    start = torch.randint(0, cfg.d_vocab, (16, 1))
    tokens = (start + torch.arange(cfg.n_ctx) * torch.randint(1, 3, (16, 1))) % cfg.d_vocab
    logits = model(tokens)
    loss = F.cross_entropy(logits[:, :-1].reshape(-1, cfg.d_vocab), tokens[:, 1:].reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 5 == 4:
        print("lm step %2d loss %.5f" % (step, loss.item()))

# cache activations with forward hooks
cache = {}


def save_hook(name):
    def hook(module, inputs, output):
        cache[name] = output.detach()
    return hook


handles = []
for name, module in model.named_modules():
    if name.endswith("hook_resid_mid") or name.endswith("hook_post"):
        handles.append(module.register_forward_hook(save_hook(name)))
print("hooks", len(handles), type(handles[0]).__name__)
with torch.no_grad():
    start = torch.randint(0, cfg.d_vocab, (64, 1))
    tokens = (start + torch.arange(cfg.n_ctx) * torch.randint(1, 3, (64, 1))) % cfg.d_vocab
    model(tokens)
for h in handles:
    h.remove()
print("cached", sorted(cache))
print({k: tuple(v.shape) for k, v in sorted(cache.items())})
print("hooks after remove", len(model.blocks[0].hook_resid_mid._forward_hooks))

acts_all = cache["blocks.1.hook_resid_mid"].reshape(-1, cfg.d_model)
print("activations", acts_all.shape, "mean norm %.4f" % acts_all.norm(dim=-1).mean().item())

sae = TopKSAE(cfg.d_model, 64, k=4)
print(sae)
print("decoder norms", sae.W_dec.norm(dim=1)[:4])
with torch.no_grad():
    sae.b_dec.data = acts_all.median(dim=0).values  # geometric median proxy
sae_opt = torch.optim.Adam(sae.parameters(), lr=4e-3, betas=(0.9, 0.999))
n_tokens_since_fired = torch.zeros(64, dtype=torch.long)
for step in range(40):
    idx = torch.randint(0, acts_all.shape[0], (128,))
    x = acts_all[idx]
    recon, latents = sae(x)
    mse = (recon - x).pow(2).mean()
    # AuxK: reconstruct the residual from the dead latents' top activations
    dead = n_tokens_since_fired > 256
    pre = sae.encode_pre(x)
    if dead.any():
        aux_pre = pre.masked_fill(~dead, float("-inf"))
        k_aux = min(8, int(dead.sum()))
        aux_top = aux_pre.topk(k_aux, dim=-1)
        aux_acts = torch.zeros_like(pre).scatter_(-1, aux_top.indices, F.relu(aux_top.values))
        aux = ((aux_acts @ sae.W_dec) - (x - recon).detach()).pow(2).mean()
    else:
        aux = pre.new_zeros(())
    loss = mse + aux / 32
    sae_opt.zero_grad()
    loss.backward()
    sae.remove_gradient_parallel_to_decoder_directions()
    sae_opt.step()
    sae.set_decoder_norm_to_unit_norm()
    fired = torch.bincount(latents.nonzero()[:, 1], minlength=64)
    n_tokens_since_fired += x.shape[0]
    n_tokens_since_fired[fired > 0] = 0
    if step % 10 == 9:
        ev = 1 - (x - recon).var(dim=0).sum() / x.var(dim=0).sum()
        print("sae step %2d mse %.6f aux %.6f l0 %.2f ev %.4f dead %d" % (
            step, mse.item(), aux.item(), (latents > 0).float().sum(-1).mean().item(),
            ev.item(), int(dead.sum())))
print("decoder norms after", torch.allclose(sae.W_dec.norm(dim=1), torch.ones(64)))

with torch.no_grad():
    _, latents = sae(acts_all)
    density = (latents > 0).float().mean(0)
    log_density = torch.log10(density + 1e-10)
    hist = torch.histc(log_density, bins=5, min=-10, max=0)
print("log feature density histogram", hist)
top_feat = density.argmax().item()
top_tokens = latents[:, top_feat].topk(3).indices
print("top feature fires", latents.shape[0], (latents[:, top_feat] > 0).sum().item() > 0, top_tokens.shape)


# splice the SAE reconstruction into the forward pass: a hook that returns a replacement
def splice_hook(module, inputs, output):
    return sae(output)[0]


with torch.no_grad():
    clean = F.cross_entropy(model(tokens)[:, :-1].reshape(-1, cfg.d_vocab), tokens[:, 1:].reshape(-1))
    handle = model.blocks[1].hook_resid_mid.register_forward_hook(splice_hook)
    spliced = F.cross_entropy(model(tokens)[:, :-1].reshape(-1, cfg.d_vocab), tokens[:, 1:].reshape(-1))
    handle.remove()
    zero = model.blocks[1].hook_resid_mid.register_forward_hook(lambda m, i, o: torch.zeros_like(o))
    ablated = F.cross_entropy(model(tokens)[:, :-1].reshape(-1, cfg.d_vocab), tokens[:, 1:].reshape(-1))
    zero.remove()
print("ce clean %.4f spliced %.4f ablated %.4f" % (clean.item(), spliced.item(), ablated.item()))
print("loss recovered > 0", bool((ablated - spliced) / (ablated - clean) > 0))

relu_sae = ReluSAE(cfg.d_model, 64)
relu_opt = torch.optim.Adam(relu_sae.parameters(), lr=3e-3)
for step in range(20):
    x = acts_all[torch.randint(0, acts_all.shape[0], (128,))]
    recon, acts, mse, l1 = relu_sae(x)
    loss = mse + l1
    relu_opt.zero_grad()
    loss.backward()
    relu_opt.step()
    if step % 5 == 4:
        print("relu sae step %2d loss %.5f mse %.5f l1 %.5f" % (step, loss.item(), mse.item(), l1.item()))
