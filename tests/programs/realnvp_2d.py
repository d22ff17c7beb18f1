"""RealNVP in 2-D (after the normalizing-flows tutorials): affine coupling layers with
alternating binary masks, a standard-normal base distribution from torch.distributions,
training by maximum likelihood, then sampling."""
import argparse

import numpy as np
import torch
from torch import nn, distributions

parser = argparse.ArgumentParser()
parser.add_argument('--iters', type=int, default=100)
parser.add_argument('--hidden', type=int, default=64)
args = parser.parse_args()

torch.manual_seed(42)
device = 'cuda' if torch.cuda.is_available() else 'cpu'


def sample_data(n):
    # two interleaved half circles, made with torch only
    theta = torch.rand(n) * 3.141592653589793
    which = torch.randint(0, 2, (n,)).float()
    x = torch.stack([torch.cos(theta) + which, torch.sin(theta) * (1 - 2 * which) + 0.5 * which], 1)
    return x + 0.05 * torch.randn(n, 2)


class RealNVP(nn.Module):
    def __init__(self, nets, nett, mask, prior):
        super(RealNVP, self).__init__()
        self.prior = prior
        self.mask = nn.Parameter(mask, requires_grad=False)
        self.t = torch.nn.ModuleList([nett() for _ in range(len(mask))])
        self.s = torch.nn.ModuleList([nets() for _ in range(len(mask))])

    def g(self, z):
        x = z
        for i in range(len(self.t)):
            x_ = x * self.mask[i]
            s = self.s[i](x_) * (1 - self.mask[i])
            t = self.t[i](x_) * (1 - self.mask[i])
            x = x_ + (1 - self.mask[i]) * (x * torch.exp(s) + t)
        return x

    def f(self, x):
        log_det_J, z = x.new_zeros(x.shape[0]), x
        for i in reversed(range(len(self.t))):
            z_ = self.mask[i] * z
            s = self.s[i](z_) * (1 - self.mask[i])
            t = self.t[i](z_) * (1 - self.mask[i])
            z = (1 - self.mask[i]) * (z - t) * torch.exp(-s) + z_
            log_det_J -= s.sum(dim=1)
        return z, log_det_J

    def log_prob(self, x):
        z, logp = self.f(x)
        return self.prior.log_prob(z) + logp

    def sample(self, batchSize):
        z = self.prior.sample((batchSize,))
        x = self.g(z)
        return x


H = args.hidden
nets = lambda: nn.Sequential(nn.Linear(2, H), nn.LeakyReLU(), nn.Linear(H, H), nn.LeakyReLU(),
                             nn.Linear(H, 2), nn.Tanh())
nett = lambda: nn.Sequential(nn.Linear(2, H), nn.LeakyReLU(), nn.Linear(H, H), nn.LeakyReLU(),
                             nn.Linear(H, 2))
masks = torch.from_numpy(np.array([[0, 1], [1, 0]] * 3).astype(np.float32))
prior = distributions.MultivariateNormal(torch.zeros(2), torch.eye(2))
flow = RealNVP(nets, nett, masks, prior)
print(flow.mask)
print(prior)
base = distributions.Independent(distributions.Normal(torch.zeros(2), torch.ones(2)), 1)
print(base, base.batch_shape, base.event_shape)
probe = torch.tensor([[0.0, 0.0], [1.0, -1.0]])
print("base log_prob", prior.log_prob(probe), base.log_prob(probe))

optimizer = torch.optim.Adam([p for p in flow.parameters() if p.requires_grad == True], lr=1e-3)
for t in range(args.iters + 1):
    noisy_moons = sample_data(100)
    loss = -flow.log_prob(noisy_moons).mean()
    optimizer.zero_grad()
    loss.backward(retain_graph=True)
    optimizer.step()
    if t % 50 == 0:
        print('iter %s:' % t, 'loss = %.3f' % loss)

flow.eval()
with torch.no_grad():
    x = sample_data(500)
    z, _ = flow.f(x)
    x_rec = flow.g(z)
    print(f"max reconstruction error {torch.max(torch.abs(x_rec - x)).item() < 1e-4}")
    samples = flow.sample(1000)
    print("sample shape", samples.shape, "finite", bool(torch.isfinite(samples).all()))
    print(f"test nll {-flow.log_prob(x).mean().item():.3f}")
