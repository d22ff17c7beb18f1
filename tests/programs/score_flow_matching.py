"""Score-based and flow-matching toys on 2-D data: sliced score matching in the style of
ermongroup/sliced_score_matching (Rademacher projections torch.randint(0, 2, ...) * 2 - 1 and
torch.autograd.grad(..., create_graph=True)), rectified flow / conditional flow matching in
the style of gnobitab/RectifiedFlow and atong01/conditional-flow-matching (times from
torch.rand(b, 1), an Euler sampler under torch.inference_mode()), and EMA weights two ways:
torch._foreach_mul_ / torch._foreach_add_ and
torch.optim.swa_utils.AveragedModel(multi_avg_fn=get_ema_multi_avg_fn(0.999))."""
import math

import torch
import torch.nn as nn
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

torch.manual_seed(0)


def sample_moons(n):
    t = torch.rand(n) * math.pi
    upper = torch.randint(0, 2, (n,)).bool()
    x = torch.where(upper, torch.cos(t), 1 - torch.cos(t))
    y = torch.where(upper, torch.sin(t), 0.5 - torch.sin(t))
    return torch.stack([x, y], 1) + 0.05 * torch.randn(n, 2)


class ScoreNet(nn.Module):
    def __init__(self, dim=2, hidden=64):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, hidden), nn.Softplus(), nn.Linear(hidden, hidden),
                                 nn.Softplus(), nn.Linear(hidden, dim))

    def forward(self, x):
        return self.net(x)


def sliced_score_estimation_vr(score_net, samples, n_particles=1):
    dup_samples = samples.unsqueeze(0).expand(n_particles, *samples.shape).contiguous().view(-1, *samples.shape[1:])
    dup_samples.requires_grad_(True)
    vectors = torch.randn_like(dup_samples)
    grad1 = score_net(dup_samples)
    gradv = torch.sum(grad1 * vectors)
    grad2 = torch.autograd.grad(gradv, dup_samples, create_graph=True)[0]
    grad1 = grad1.view(dup_samples.shape[0], -1)
    loss1 = torch.sum(grad1 * grad1, dim=-1) / 2.
    loss2 = torch.sum((vectors * grad2).view(dup_samples.shape[0], -1), dim=-1)
    loss1 = loss1.view(n_particles, -1).mean(dim=0)
    loss2 = loss2.view(n_particles, -1).mean(dim=0)
    loss = loss1 + loss2
    return loss.mean(), loss1.mean(), loss2.mean()


def sliced_score_rademacher(score_net, samples):
    samples = samples.detach().requires_grad_(True)
    vectors = torch.randint(0, 2, samples.shape).float() * 2 - 1
    grad1 = score_net(samples)
    gradv = torch.sum(grad1 * vectors)
    grad2, = torch.autograd.grad(gradv, samples, create_graph=True)
    loss = (0.5 * (grad1 * vectors).sum(-1) ** 2 + (vectors * grad2).sum(-1)).mean()
    return loss


data = sample_moons(512)
print("data", data.shape, data.mean(0))
score = ScoreNet()
print(score)
opt = torch.optim.Adam(score.parameters(), lr=1e-3)
for step in range(30):
    batch = data[torch.randint(0, 512, (128,))]
    noisy = batch + 0.1 * torch.randn_like(batch)
    if step % 2 == 0:
        loss, l1, l2 = sliced_score_estimation_vr(score, noisy)
    else:
        loss = sliced_score_rademacher(score, noisy)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 5 == 0:
        print(f"ssm step {step:2d} loss {loss.item():.4f}")

# Langevin dynamics with the learned score
x = torch.randn(256, 2)
with torch.no_grad():
    for i in range(20):
        x = x + 0.005 * score(x) + math.sqrt(2 * 0.005) * torch.randn_like(x)
print("langevin", x.shape, bool(torch.isfinite(x).all()))


# --- rectified flow / conditional flow matching ------------------------------------------
class VelocityMLP(nn.Module):
    def __init__(self, dim=2, hidden=64, time_dim=16):
        super().__init__()
        self.time_dim = time_dim
        self.net = nn.Sequential(nn.Linear(dim + time_dim, hidden), nn.SiLU(),
                                 nn.Linear(hidden, hidden), nn.SiLU(), nn.Linear(hidden, dim))

    def time_embed(self, t):
        half = self.time_dim // 2
        freqs = torch.exp(-math.log(1000) * torch.arange(half, dtype=torch.float32) / half)
        args = t * freqs[None]
        return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)

    def forward(self, x, t):
        return self.net(torch.cat([x, self.time_embed(t)], -1))


flow = VelocityMLP()
ema_model = AveragedModel(flow, multi_avg_fn=get_ema_multi_avg_fn(0.999))
print(ema_model)
print("n_averaged", ema_model.n_averaged, ema_model.n_averaged.dtype)
shadow = [p.detach().clone() for p in flow.parameters()]
opt = torch.optim.AdamW(flow.parameters(), lr=2e-3, weight_decay=0.0)
for step in range(60):
    x1 = data[torch.randint(0, 512, (128,))]
    x0 = torch.randn_like(x1)
    t = torch.rand(x1.shape[0], 1)
    xt = t * x1 + (1 - t) * x0
    target = x1 - x0
    loss = torch.mean((flow(xt, t) - target) ** 2)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    ema_model.update_parameters(flow)
    with torch.no_grad():
        params = [p.detach() for p in flow.parameters()]
        torch._foreach_mul_(shadow, 0.99)
        torch._foreach_add_(shadow, params, alpha=0.01)
    if step % 10 == 0:
        print(f"flow step {step:2d} loss {loss.item():.4f}")
print("n_averaged", ema_model.n_averaged.item())
diff = max((a - b.detach()).abs().max().item()
           for a, b in zip(shadow, flow.parameters()))
print("foreach ema moved", diff > 0)
norms = torch._foreach_norm(shadow)
print("foreach_norm", len(norms), norms[0].shape)
lerped = [s.clone() for s in shadow]
torch._foreach_lerp_(lerped, [p.detach() for p in flow.parameters()], 0.5)
print("lerp between", all(torch.allclose(lv, (s + p.detach()) / 2, atol=1e-6)
                          for lv, s, p in zip(lerped, shadow, flow.parameters())))


@torch.inference_mode()
def euler_sample(model, n=256, steps=20):
    z = torch.randn(n, 2)
    dt = 1.0 / steps
    for i in range(steps):
        t = torch.full((n, 1), i * dt)
        z = z + model(z, t) * dt
    return z


samples = euler_sample(flow)
print("samples", samples.shape, samples.requires_grad, samples.is_inference())
ema_samples = euler_sample(ema_model.module)
print("ema samples", ema_samples.shape, bool(torch.isfinite(ema_samples).all()))
try:
    samples.requires_grad_()
except RuntimeError as e:
    print("inference tensor:", e)
print("clone outside", samples.clone().is_inference())
