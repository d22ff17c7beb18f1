"""Gradient tricks from training repos: SAM (davda54/sam) subclassing torch.optim.Optimizer
with @torch.no_grad() first_step/second_step and self.state[p]["old_p"], activation
checkpointing (checkpoint(fn, x, use_reentrant=False), checkpoint_sequential), gradient
accumulation with loss / accum_steps, param.register_hook clamping, clip_grad_value_,
requires_grad_(False) freezing with filter(lambda p: p.requires_grad, ...), and
parameters_to_vector / vector_to_parameters."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import parameters_to_vector, vector_to_parameters
from torch.utils.checkpoint import checkpoint, checkpoint_sequential

torch.manual_seed(1)


class SAM(torch.optim.Optimizer):
    def __init__(self, params, base_optimizer, rho=0.05, adaptive=False, **kwargs):
        assert rho >= 0.0, f"Invalid rho, should be non-negative: {rho}"

        defaults = dict(rho=rho, adaptive=adaptive, **kwargs)
        super(SAM, self).__init__(params, defaults)

        self.base_optimizer = base_optimizer(self.param_groups, **kwargs)
        self.param_groups = self.base_optimizer.param_groups
        self.defaults.update(self.base_optimizer.defaults)

    @torch.no_grad()
    def first_step(self, zero_grad=False):
        grad_norm = self._grad_norm()
        for group in self.param_groups:
            scale = group["rho"] / (grad_norm + 1e-12)

            for p in group["params"]:
                if p.grad is None:
                    continue
                self.state[p]["old_p"] = p.data.clone()
                e_w = (torch.pow(p, 2) if group["adaptive"] else 1.0) * p.grad * scale.to(p)
                p.add_(e_w)  # climb to the local maximum "w + e(w)"

        if zero_grad:
            self.zero_grad()

    @torch.no_grad()
    def second_step(self, zero_grad=False):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                p.data = self.state[p]["old_p"]  # get back to "w" from "w + e(w)"

        self.base_optimizer.step()  # do the actual "sharpness-aware" update

        if zero_grad:
            self.zero_grad()

    @torch.no_grad()
    def step(self, closure=None):
        assert closure is not None, "Sharpness Aware Minimization requires closure, but it was not provided"
        closure = torch.enable_grad()(closure)  # the closure should do a full forward-backward pass

        self.first_step(zero_grad=True)
        closure()
        self.second_step()

    def _grad_norm(self):
        shared_device = self.param_groups[0]["params"][0].device  # put everything on the same device, in case of model parallelism
        norm = torch.norm(
            torch.stack([
                ((torch.abs(p) if group["adaptive"] else 1.0) * p.grad).norm(p=2).to(shared_device)
                for group in self.param_groups for p in group["params"]
                if p.grad is not None
            ]),
            p=2
        )
        return norm

    def load_state_dict(self, state_dict):
        super().load_state_dict(state_dict)
        self.base_optimizer.param_groups = self.param_groups


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc1 = nn.Linear(dim, dim * 2)
        self.fc2 = nn.Linear(dim * 2, dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        return self.norm(x + self.fc2(F.gelu(self.fc1(x))))


class Net(nn.Module):
    def __init__(self, dim=16, depth=3, n_classes=4, use_checkpoint=True):
        super().__init__()
        self.stem = nn.Linear(8, dim)
        self.blocks = nn.ModuleList([Block(dim) for _ in range(depth)])
        self.head = nn.Linear(dim, n_classes)
        self.use_checkpoint = use_checkpoint

    def forward(self, x):
        x = self.stem(x)
        for blk in self.blocks:
            if self.use_checkpoint and self.training:
                x = checkpoint(blk, x, use_reentrant=False)
            else:
                x = blk(x)
        return self.head(x)


x_all = torch.randn(256, 8)
w = torch.randn(8, 4)
y_all = (x_all @ w + 0.2 * torch.randn(256, 4)).argmax(1)

# checkpointing gives the plain model's gradients
net = Net()
plain = Net(use_checkpoint=False)
plain.load_state_dict(net.state_dict())
F.cross_entropy(net(x_all[:32]), y_all[:32]).backward()
F.cross_entropy(plain(x_all[:32]), y_all[:32]).backward()
print(f"checkpoint grads match: {all(torch.allclose(a.grad, b.grad, atol=1e-6) for a, b in zip(net.parameters(), plain.parameters()))}")
seq = nn.Sequential(*[Block(16) for _ in range(4)])
inp = torch.randn(5, 16, requires_grad=True)
out = checkpoint_sequential(seq, 2, inp, use_reentrant=False)
out.sum().backward()
print(f"checkpoint_sequential: {tuple(out.shape)} {out.grad_fn is not None} input grad {tuple(inp.grad.shape)}")

# SAM training with the closure form and the two-step form
model = Net()
base_optimizer = torch.optim.SGD
optimizer = SAM(model.parameters(), base_optimizer, rho=0.05, lr=0.1, momentum=0.9)
print(optimizer.defaults)
print(f"param groups shared with the base optimizer: {optimizer.param_groups is optimizer.base_optimizer.param_groups}")
for epoch in range(3):
    model.train()
    for i in range(0, 256, 32):
        inputs, targets = x_all[i:i + 32], y_all[i:i + 32]

        # first forward-backward pass
        loss = F.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.first_step(zero_grad=True)

        # second forward-backward pass
        F.cross_entropy(model(inputs), targets).backward()
        optimizer.second_step(zero_grad=True)
    print(f"SAM epoch {epoch} loss {loss.item():.4f} old_p saved {len(optimizer.state)}")


def closure():
    loss = F.cross_entropy(model(x_all[:32]), y_all[:32])
    loss.backward()
    return loss


F.cross_entropy(model(x_all[:32]), y_all[:32]).backward()
optimizer.step(closure)
optimizer.zero_grad()
model.eval()
with torch.no_grad():
    acc = (model(x_all).argmax(1) == y_all).float().mean().item()
print(f"SAM train accuracy {acc:.3f}")

# fine-tuning: freeze the stem and first block, clamp grads with hooks, accumulate
model.requires_grad_(False)
for p in model.blocks[1:].parameters():
    p.requires_grad_(True)
for p in model.head.parameters():
    p.requires_grad_(True)
trainable = list(filter(lambda p: p.requires_grad, model.parameters()))
print(f"trainable tensors {len(trainable)} of {len(list(model.parameters()))}, "
      f"{sum(p.numel() for p in trainable)} params")
handles = [p.register_hook(lambda g: g.clamp(-0.01, 0.01)) for p in trainable]
optimizer = torch.optim.SGD(trainable, lr=0.5)
frozen_before = parameters_to_vector(model.stem.parameters()).clone()
accum_steps = 4
model.train()
optimizer.zero_grad()
for i, start in enumerate(range(0, 256, 16)):
    loss = F.cross_entropy(model(x_all[start:start + 16]), y_all[start:start + 16])
    loss = loss / accum_steps
    loss.backward()
    if (i + 1) % accum_steps == 0:
        torch.nn.utils.clip_grad_value_(trainable, clip_value=0.005)
        max_grad = max(p.grad.abs().max().item() for p in trainable)
        optimizer.step()
        optimizer.zero_grad()
        print(f"accumulated step {(i + 1) // accum_steps}: loss {loss.item() * accum_steps:.4f} max |grad| {max_grad:.4f}")
for h in handles:
    h.remove()
print(f"frozen stem unchanged: {torch.equal(frozen_before, parameters_to_vector(model.stem.parameters()))}, "
      f"stem grad {model.stem.weight.grad}")

# flatten, perturb and write back the head's parameters
vec = parameters_to_vector(model.head.parameters())
print(f"vector {tuple(vec.shape)} requires_grad {vec.requires_grad}")
vector_to_parameters(vec * 0 + 0.25, model.head.parameters())
print(model.head.bias)
