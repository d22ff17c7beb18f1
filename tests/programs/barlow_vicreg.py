"""Barlow Twins in the style of facebookresearch/barlowtwins (main.py) and VICReg in the style
of facebookresearch/vicreg (main_vicreg.py): the off_diagonal trick through a flattened view,
the cross-correlation of two BatchNorm1d(affine=False)-normalized embeddings,
torch.diagonal(c).add_(-1).pow_(2).sum(), VICReg's invariance/variance/covariance terms with
F.relu(1 - std), the LARS optimizer subclass with exclude_bias_and_norm, and a warmup-cosine
LambdaLR."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import optim

torch.manual_seed(0)


def off_diagonal(x):
    # return a flattened view of the off-diagonal elements of a square matrix
    n, m = x.shape
    assert n == m
    return x.flatten()[:-1].view(n - 1, n + 1)[:, 1:].flatten()


def backbone():
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
        nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten())


def projector_mlp(spec, embedding=8):
    mlp_spec = f"{embedding}-{spec}"
    layers = []
    f = list(map(int, mlp_spec.split("-")))
    for i in range(len(f) - 2):
        layers.append(nn.Linear(f[i], f[i + 1], bias=False))
        layers.append(nn.BatchNorm1d(f[i + 1]))
        layers.append(nn.ReLU(True))
    layers.append(nn.Linear(f[-2], f[-1], bias=False))
    return nn.Sequential(*layers)


class BarlowTwins(nn.Module):
    def __init__(self, projector="16-16", lambd=0.0051, batch_size=16):
        super().__init__()
        self.lambd = lambd
        self.batch_size = batch_size
        self.backbone = backbone()
        self.projector = projector_mlp(projector)
        sizes = [8] + list(map(int, projector.split('-')))
        # normalization layer for the representations z1 and z2
        self.bn = nn.BatchNorm1d(sizes[-1], affine=False)

    def forward(self, y1, y2):
        z1 = self.projector(self.backbone(y1))
        z2 = self.projector(self.backbone(y2))
        # empirical cross-correlation matrix
        c = self.bn(z1).T @ self.bn(z2)
        # sum the cross-correlation matrix between all gpus
        c.div_(self.batch_size)
        on_diag = torch.diagonal(c).add_(-1).pow_(2).sum()
        off_diag = off_diagonal(c).pow_(2).sum()
        loss = on_diag + self.lambd * off_diag
        return loss, on_diag, off_diag


class VICReg(nn.Module):
    def __init__(self, mlp="16-16", batch_size=16, sim_coeff=25.0, std_coeff=25.0, cov_coeff=1.0):
        super().__init__()
        self.num_features = int(mlp.split("-")[-1])
        self.batch_size = batch_size
        self.sim_coeff, self.std_coeff, self.cov_coeff = sim_coeff, std_coeff, cov_coeff
        self.backbone = backbone()
        self.projector = projector_mlp(mlp)

    def forward(self, x, y):
        x = self.projector(self.backbone(x))
        y = self.projector(self.backbone(y))
        repr_loss = F.mse_loss(x, y)
        x = x - x.mean(dim=0)
        y = y - y.mean(dim=0)
        std_x = torch.sqrt(x.var(dim=0) + 0.0001)
        std_y = torch.sqrt(y.var(dim=0) + 0.0001)
        std_loss = torch.mean(F.relu(1 - std_x)) / 2 + torch.mean(F.relu(1 - std_y)) / 2
        cov_x = (x.T @ x) / (self.batch_size - 1)
        cov_y = (y.T @ y) / (self.batch_size - 1)
        cov_loss = off_diagonal(cov_x).pow_(2).sum().div(
            self.num_features
        ) + off_diagonal(cov_y).pow_(2).sum().div(self.num_features)
        loss = (
            self.sim_coeff * repr_loss
            + self.std_coeff * std_loss
            + self.cov_coeff * cov_loss
        )
        return loss, repr_loss, std_loss, cov_loss


class LARS(optim.Optimizer):
    def __init__(self, params, lr, weight_decay=0, momentum=0.9, eta=0.001,
                 weight_decay_filter=None, lars_adaptation_filter=None):
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, eta=eta,
                        weight_decay_filter=weight_decay_filter,
                        lars_adaptation_filter=lars_adaptation_filter)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self):
        for g in self.param_groups:
            for p in g['params']:
                dp = p.grad
                if dp is None:
                    continue
                if g['weight_decay_filter'] is None or not g['weight_decay_filter'](p):
                    dp = dp.add(p, alpha=g['weight_decay'])
                if g['lars_adaptation_filter'] is None or not g['lars_adaptation_filter'](p):
                    param_norm = torch.norm(p)
                    update_norm = torch.norm(dp)
                    one = torch.ones_like(param_norm)
                    q = torch.where(param_norm > 0.,
                                    torch.where(update_norm > 0,
                                                (g['eta'] * param_norm / update_norm), one), one)
                    dp = dp.mul(q)
                param_state = self.state[p]
                if 'mu' not in param_state:
                    param_state['mu'] = torch.zeros_like(p)
                mu = param_state['mu']
                mu.mul_(g['momentum']).add_(dp)
                p.add_(mu, alpha=-g['lr'])


def exclude_bias_and_norm(p):
    return p.ndim == 1


def warmup_cosine(total, warmup):
    def fn(step):
        if step < warmup:
            return (step + 1) / warmup
        q = (step - warmup) / max(1, total - warmup)
        return 0.5 * (1 + math.cos(math.pi * q)) * 0.998 + 0.002
    return fn


def augment(x):
    """Two cheap 'views': random flips and additive noise."""
    flip = torch.rand(x.shape[0], 1, 1, 1) < 0.5
    x = torch.where(flip, x.flip(-1), x)
    return x + 0.05 * torch.randn_like(x)


a = torch.arange(16.).view(4, 4)
print("off_diagonal", off_diagonal(a))
print("diagonal", torch.diagonal(a), torch.diagonal(a, 1), torch.diagonal(a, offset=-1))

data = torch.randn(64, 3, 8, 8)
steps = 16
for name, cls in (("barlow", BarlowTwins), ("vicreg", VICReg)):
    torch.manual_seed(1)
    model = cls()
    if name == "barlow":
        print(model)
    param_weights, param_biases = [], []
    for param in model.parameters():
        if param.ndim == 1:
            param_biases.append(param)
        else:
            param_weights.append(param)
    parameters = [{'params': param_weights}, {'params': param_biases}]
    optimizer = LARS(parameters, lr=0, weight_decay=1e-6,
                     weight_decay_filter=exclude_bias_and_norm,
                     lars_adaptation_filter=exclude_bias_and_norm)
    print(name, "groups", [len(g['params']) for g in optimizer.param_groups],
          sorted(optimizer.defaults))
    for g in optimizer.param_groups:
        g['lr'] = 0.2
        g['initial_lr'] = 0.2
    scheduler = optim.lr_scheduler.LambdaLR(optimizer, warmup_cosine(steps, 3))
    print(name, "lr0", scheduler.get_last_lr())
    for step in range(steps):
        y = data[(step % 4) * 16:(step % 4 + 1) * 16]
        y1, y2 = augment(y), augment(y)
        optimizer.zero_grad()
        out = model(y1, y2)
        loss = out[0]
        loss.backward()
        optimizer.step()
        scheduler.step()
        parts = " ".join(f"{t.item():.4f}" for t in out[1:])
        print(f"{name} step {step:2d} loss {loss.item():.4f} parts {parts} "
              f"lr {scheduler.get_last_lr()[0]:.5f}")
    mu = optimizer.state[param_weights[0]]['mu']
    print(name, "mu", tuple(mu.shape), mu.dtype, len(optimizer.state))
    with torch.no_grad():
        model.eval()
        z = model.projector(model.backbone(data[:16]))
        print(name, "embedding std", z.std(dim=0).mean().item() > 0)
