"""Advanced autograd in the style of the PyTorch autograd tutorials and MAML reference code:
a custom torch.autograd.Function (ctx.save_for_backward, ctx.needs_input_grad,
gradcheck), tensor.register_hook, module forward / full-backward hooks, a WGAN-GP style
gradient penalty with torch.autograd.grad(create_graph=True), and MAML on sine regression
with torch.func.functional_call."""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call

parser = argparse.ArgumentParser()
parser.add_argument('--meta-iters', type=int, default=100)
parser.add_argument('--inner-lr', type=float, default=0.01)
parser.add_argument('--meta-lr', type=float, default=3e-3)
args = parser.parse_args()
torch.manual_seed(0)


class LegendrePolynomial3(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return 0.5 * (5 * input ** 3 - 3 * input)

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input ** 2 - 1)


class MulAdd(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, b):
        ctx.save_for_backward(x, w)
        return x * w + b

    @staticmethod
    def backward(ctx, grad_output):
        x, w = ctx.saved_tensors
        grad_x = grad_w = grad_b = None
        if ctx.needs_input_grad[0]:
            grad_x = grad_output * w
        if ctx.needs_input_grad[1]:
            grad_w = grad_output * x
        if ctx.needs_input_grad[2]:
            grad_b = grad_output
        return grad_x, grad_w, grad_b


# custom Function, checked numerically
dtype = torch.double
x = torch.linspace(-1, 1, 7, dtype=dtype, requires_grad=True)
P3 = LegendrePolynomial3.apply
y = P3(x)
print(y)
y.sum().backward()
print(x.grad)
inp = (torch.randn(5, dtype=dtype, requires_grad=True), torch.randn(5, dtype=dtype),
       torch.randn(5, dtype=dtype, requires_grad=True))
print("gradcheck:", torch.autograd.gradcheck(MulAdd.apply, inp, eps=1e-6, atol=1e-4))
out = MulAdd.apply(*inp)
out.sum().backward()
print("w.grad is None:", inp[1].grad is None, "b.grad:", inp[2].grad)

# tensor hooks
a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
b = a * 2
seen = []
handle = b.register_hook(lambda grad: seen.append(grad.clone()))
a.register_hook(lambda grad: grad * 10)
(b ** 2).sum().backward()
print("hooked grad", seen[0], "a.grad", a.grad)
handle.remove()

# module hooks
net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
activations = {}


def get_activation(name):
    def hook(model, input, output):
        activations[name] = output.detach()
    return hook


grad_norms = {}


def backward_hook(module, grad_input, grad_output):
    grad_norms[module.__class__.__name__] = grad_output[0].norm().item()


h1 = net[1].register_forward_hook(get_activation('relu'))
h2 = net[2].register_full_backward_hook(backward_hook)
out = net(torch.randn(8, 3))
out.mean().backward()
print("activation", activations['relu'].shape, "grad hooks", sorted(grad_norms))
h1.remove()
h2.remove()
net(torch.randn(2, 3))
print("hooks removed:", len(net[1]._forward_hooks), len(net[2]._backward_hooks))

# gradient penalty (WGAN-GP)
critic = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 1))
real, fake = torch.randn(16, 2), torch.randn(16, 2) + 2
alpha = torch.rand(16, 1)
interpolates = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
d_interp = critic(interpolates)
gradients = torch.autograd.grad(outputs=d_interp, inputs=interpolates,
                                grad_outputs=torch.ones_like(d_interp),
                                create_graph=True, retain_graph=True, only_inputs=True)[0]
gp = ((gradients.norm(2, dim=1) - 1) ** 2).mean()
d_loss = critic(fake).mean() - critic(real).mean() + 10 * gp
d_loss.backward()
print("gradient penalty grad finite:", all(torch.isfinite(p.grad).all() for p in critic.parameters()))

# MAML on sine waves
class SineModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1, 40), nn.ReLU(), nn.Linear(40, 40), nn.ReLU(),
                                 nn.Linear(40, 1))

    def forward(self, x):
        return self.net(x)


def sample_task():
    amplitude = torch.empty(1).uniform_(0.1, 5.0)
    phase = torch.empty(1).uniform_(0, math.pi)

    def sample(k):
        xs = torch.empty(k, 1).uniform_(-5, 5)
        return xs, amplitude * torch.sin(xs + phase)
    return sample


model = SineModel()
meta_opt = torch.optim.Adam(model.parameters(), lr=args.meta_lr)
running = 0.0
for it in range(args.meta_iters):
    meta_opt.zero_grad()
    meta_loss = 0.0
    for _ in range(4):
        task = sample_task()
        x_s, y_s = task(10)
        x_q, y_q = task(10)
        params = dict(model.named_parameters())
        support_loss = F.mse_loss(functional_call(model, params, (x_s,)), y_s)
        grads = torch.autograd.grad(support_loss, params.values(), create_graph=True)
        fast = {name: p - args.inner_lr * g for (name, p), g in zip(params.items(), grads)}
        meta_loss = meta_loss + F.mse_loss(functional_call(model, fast, (x_q,)), y_q)
    meta_loss = meta_loss / 4
    meta_loss.backward()
    meta_opt.step()
    running += meta_loss.item()
    if (it + 1) % 20 == 0:
        print(f"meta iter {it + 1:3d} meta loss {running / 20:.4f}")
        running = 0.0
