"""Memory-saving training idioms, as HuggingFace transformers (gradient_checkpointing_enable),
torchvision/timm (checkpoint_seq / checkpoint_sequential) and the PyTorch "optimizer step in
backward" tutorial write them, scaled down: torch.utils.checkpoint.checkpoint with
use_reentrant=True and False, keyword arguments, a block returning a tuple and a dropout block
whose RNG state is preserved (gradients equal the unchecked run bit for bit);
checkpoint_sequential(segments, input, use_reentrant=False); gradient accumulation over
micro-batches; torch.autograd.graph.saved_tensors_hooks (pack/unpack counting) and save_on_cpu;
Tensor.register_post_accumulate_grad_hook running one optimizer per parameter inside backward;
zero_grad(set_to_none=True/False)."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import functools
from torch.utils.checkpoint import (CheckpointPolicy, checkpoint, checkpoint_sequential,
                                    create_selective_checkpoint_contexts)


class MLPBlock(nn.Module):
    def __init__(self, dim, p=0.0):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)
        self.drop = nn.Dropout(p)

    def forward(self, x, scale=1.0):
        h = self.fc2(F.gelu(self.fc1(self.norm(x))))
        return x + scale * self.drop(h)


class AttnBlock(nn.Module):
    """Returns (hidden_states, attn_weights) like a HF layer with output_attentions=True."""

    def __init__(self, dim, heads):
        super().__init__()
        self.ln = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)

    def forward(self, x, attn_mask=None):
        h = self.ln(x)
        out, weights = self.attn(h, h, h, attn_mask=attn_mask, need_weights=True)
        return x + out, weights


class Encoder(nn.Module):
    def __init__(self, dim=16, heads=2, depth=2, p=0.1):
        super().__init__()
        self.embed = nn.Linear(8, dim)
        self.attn = nn.ModuleList([AttnBlock(dim, heads) for _ in range(depth)])
        self.mlp = nn.ModuleList([MLPBlock(dim, p) for _ in range(depth)])
        self.head = nn.Linear(dim, 3)
        self.gradient_checkpointing = False
        self.use_reentrant = True

    def forward(self, x, mask=None):
        h = self.embed(x)
        all_weights = []
        for attn, mlp in zip(self.attn, self.mlp):
            if self.gradient_checkpointing and self.training:
                h, w = checkpoint(attn, h, mask, use_reentrant=self.use_reentrant)
                h = checkpoint(mlp, h, use_reentrant=False, scale=0.5)
            else:
                h, w = attn(h, mask)
                h = mlp(h, scale=0.5)
            all_weights.append(w)
        return self.head(h.mean(1)), all_weights


def grads_of(model):
    return [p.grad.clone() for p in model.parameters()]


torch.manual_seed(0)
model = Encoder()
print(model)
x = torch.randn(4, 6, 8)
y = torch.randint(0, 3, (4,))
mask = torch.triu(torch.ones(6, 6, dtype=torch.bool), diagonal=1)

# --- the checkpointed gradients equal the plain ones, dropout included ---
results = {}
for mode in ["plain", "reentrant", "non-reentrant"]:
    model.zero_grad(set_to_none=True)
    model.gradient_checkpointing = mode != "plain"
    model.use_reentrant = mode == "reentrant"
    torch.manual_seed(123)
    inp = x.clone().requires_grad_(mode == "reentrant")
    logits, weights = model(inp, mask)
    loss = F.cross_entropy(logits, y)
    loss.backward()
    results[mode] = grads_of(model)
    print(mode, "loss", f"{loss.item():.6f}", "weights", tuple(weights[0].shape),
          "grad_fn", type(logits.grad_fn).__name__)
for mode in ["reentrant", "non-reentrant"]:
    same = all(torch.equal(a, b) for a, b in zip(results["plain"], results[mode]))
    print(mode, "grads bitwise equal:", same)

# --- a plain function with kwargs and a non-tensor argument ---
def gated(a, b, *, gate):
    return torch.sigmoid(gate) * torch.tanh(a) + b.pow(2)


a = torch.randn(3, 4, requires_grad=True)
b = torch.randn(3, 4, requires_grad=True)
g = torch.randn(4, requires_grad=True)
out = checkpoint(gated, a, b, gate=g, use_reentrant=False)
out.sum().backward()
print("kwargs grads", a.grad.shape, b.grad.sum().item() == (2 * b).sum().item(), g.grad.shape)
try:
    checkpoint(gated, a, b, gate=g, use_reentrant=True)
except ValueError as err:
    print("reentrant kwargs:", err)

# --- checkpoint_sequential over an nn.Sequential (timm checkpoint_seq style) ---
torch.manual_seed(1)
seq = nn.Sequential(*[nn.Sequential(nn.Linear(10, 10), nn.ReLU()) for _ in range(4)],
                    nn.Linear(10, 2))
inp = torch.randn(5, 10, requires_grad=True)
out = checkpoint_sequential(seq, 2, inp, use_reentrant=False)
out.sum().backward()
g_ckpt = [p.grad.clone() for p in seq.parameters()] + [inp.grad.clone()]
seq.zero_grad()
inp.grad = None
seq(inp).sum().backward()
g_plain = [p.grad.clone() for p in seq.parameters()] + [inp.grad.clone()]
print("checkpoint_sequential", out.shape, all(torch.equal(u, v) for u, v in zip(g_ckpt, g_plain)))

# --- selective activation checkpointing (save the matmuls, recompute the rest) ---
def policy_fn(ctx, op, *args, **kwargs):
    if op in (torch.ops.aten.mm.default, torch.ops.aten.addmm.default):
        return CheckpointPolicy.MUST_SAVE
    return CheckpointPolicy.PREFER_RECOMPUTE


seq.zero_grad()
inp.grad = None
context_fn = functools.partial(create_selective_checkpoint_contexts, policy_fn)
checkpoint(seq, inp, use_reentrant=False, context_fn=context_fn).sum().backward()
print("selective checkpoint", all(torch.equal(u, v) for u, v in zip(
    [p.grad for p in seq.parameters()] + [inp.grad], g_plain)))
for bad in [dict(determinism_check="shapes"), dict(context_fn=context_fn)]:
    try:
        checkpoint(seq, inp, use_reentrant="context_fn" in bad, **bad)
    except ValueError as err:
        print("ValueError:", err)
try:
    checkpoint_sequential(seq, 2, inp, use_reentrant=False, scale=2.0)
except ValueError as err:
    print("ValueError:", err)

# --- saved_tensors_hooks: count and inspect what autograd saves ---
packed = []


def pack(t):
    packed.append((tuple(t.shape), t.dtype))
    return t


def unpack(t):
    return t


lin = nn.Linear(4, 4)
with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
    z = torch.randn(2, 4, requires_grad=True)
    w = (lin(z).exp() * z).sum()
w.backward()
print("packed", len(packed) > 0, sorted(set(s for s, _ in packed)))
with torch.autograd.graph.save_on_cpu(pin_memory=False):
    v = (z * z).sin().sum()
v.backward()
print("save_on_cpu grad", z.grad.shape, z.grad.dtype)

# per-saved-tensor hooks (the "Hooks for saved tensors" tutorial)
x = torch.randn(5, requires_grad=True)
y = x.pow(2)
print("saved self equal:", torch.equal(y.grad_fn._saved_self, x),
      type(y.grad_fn._raw_saved_self).__name__)
y.grad_fn._raw_saved_self.register_hooks(lambda t: (print("  pack", t.shape), t * 4)[1],
                                         lambda t: (print("  unpack"), t / 4)[1])
try:
    y.grad_fn._raw_saved_self.register_hooks(lambda t: t, lambda t: t)
except RuntimeError as err:
    print("RuntimeError:", err)
y.sum().backward()
print("grad via hooks", torch.allclose(x.grad, 2 * x))
try:
    y.grad_fn._raw_saved_self.register_hooks(lambda t: t, lambda t: t)
except RuntimeError as err:
    print("RuntimeError:", err)

# --- training: gradient accumulation with checkpointing, optimizer in backward ---
torch.manual_seed(2)
model = Encoder(p=0.0)
model.gradient_checkpointing = True
model.use_reentrant = False
opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
data = torch.randn(32, 6, 8)
labels = (data[:, :, 0].sum(1) > 0).long() + (data[:, :, 1].sum(1) > 1).long()
accum = 4
for step in range(8):
    opt.zero_grad(set_to_none=True)
    total = 0.0
    for micro in range(accum):
        idx = torch.arange(micro * 8, (micro + 1) * 8)
        logits, _ = model(data[idx])
        loss = F.cross_entropy(logits, labels[idx]) / accum
        loss.backward()
        total += loss.item()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    print(f"accum step {step} loss {total:.4f}")

# set_to_none semantics
opt.zero_grad(set_to_none=False)
p0 = next(model.parameters())
print("set_to_none=False:", p0.grad is None, p0.grad.abs().sum().item())
opt.zero_grad()
print("set_to_none default:", p0.grad is None)

# optimizer step fused into backward (PyTorch tutorial "How to save memory by fusing the
# optimizer step into the backward pass")
torch.manual_seed(3)
net = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1))
optimizer_dict = {p: torch.optim.Adam([p], lr=1e-2, foreach=False) for p in net.parameters()}
steps_taken = []


def optimizer_hook(parameter) -> None:
    optimizer_dict[parameter].step()
    optimizer_dict[parameter].zero_grad()
    steps_taken.append(tuple(parameter.shape))


handles = [p.register_post_accumulate_grad_hook(optimizer_hook) for p in net.parameters()]
X = torch.randn(64, 8)
Y = X[:, :1] * 2 - X[:, 1:2]
for step in range(10):
    loss = F.mse_loss(net(X), Y)
    loss.backward()
    if step % 3 == 0:
        print(f"in-backward step {step} loss {loss.item():.4f}")
print("hook order", steps_taken[:4])
print("grads after hooks", [p.grad for p in net.parameters()])
for h in handles:
    h.remove()
loss = F.mse_loss(net(X), Y)
loss.backward()
print("after remove", [p.grad is not None for p in net.parameters()])
