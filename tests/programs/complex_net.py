"""A complex-valued MLP fitting a complex function, trained with Adam.

The network's weights are complex (nn.Linear(dtype=torch.cfloat)); its activation is
CReLU, ReLU applied to the real and imaginary parts through the `view_as_real` /
`view_as_complex` round trip; the loss is the mean squared modulus of the error, so the
complex gradients follow PyTorch's conjugate convention into Adam.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def target(z):
    # a smooth complex function of the input: a rotation of z^2 plus sin(z)
    return 0.5 * z * z * torch.exp(torch.tensor(0.6j)) + torch.sin(z)


class CReLU(nn.Module):
    def forward(self, z):
        return torch.view_as_complex(F.relu(torch.view_as_real(z)))


class ComplexMLP(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1, hidden, dtype=torch.cfloat), CReLU(),
                                 nn.Linear(hidden, hidden, dtype=torch.cfloat), CReLU(),
                                 nn.Linear(hidden, 1, dtype=torch.cfloat))

    def forward(self, z):
        return self.net(z)


# fixed values, independent of the random stream
z0 = torch.tensor([0.5 + 0.25j, -0.75 + 1.0j, 1.5 - 0.5j])
print("target", torch.view_as_real(target(z0)).flatten().tolist())
m = torch.tensor([[2.0, 1.0, 0.0], [0.5, 3.0, 1.0], [0.0, -1.0, 1.0]], dtype=torch.float64)
values = torch.linalg.eigvals(m)
order = torch.argsort(values.real)
print("eigvals", values.dtype, torch.view_as_real(values[order]).flatten().tolist())
print("cplx ops", [round(v, 6) for v in torch.view_as_real(torch.stack([
    z0.tanh(), z0.sigmoid(), z0.log10(), z0.cumprod(0), torch.vdot(z0, z0).expand(3)])).flatten()
    .tolist()])

model = ComplexMLP()
print("parameters", sum(p.numel() for p in model.parameters()),
      [str(p.dtype) for p in model.parameters()][:2])
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
x = torch.randn(512, 1, dtype=torch.cfloat)
y = target(x)

for step in range(201):
    opt.zero_grad()
    err = model(x) - y
    loss = (err.abs() ** 2).mean()
    loss.backward()
    opt.step()
    if step % 40 == 0:
        print(f"step {step} loss {loss.item():.6f}")

with torch.no_grad():
    test = torch.randn(64, 1, dtype=torch.cfloat)
    mse = (model(test) - target(test)).abs().pow(2).mean().item()
    base = target(test).abs().pow(2).mean().item()
print(f"relative test error {mse / base:.4f}")
print("fits", mse / base < 0.1)
