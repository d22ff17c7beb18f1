"""SIREN in the style of vsitzmann/siren (explore_siren.ipynb and modules.py): SineLayer with
its special uniform init under torch.no_grad, omega_0 = 30, coordinates from get_mgrid,
image gradient and Laplacian of the network output with torch.autograd.grad(create_graph=
True), fitting a 2-D signal, then a Poisson-style fit from gradients only."""
import math

import numpy as np
import torch
from torch import nn

torch.manual_seed(0)


def get_mgrid(sidelen, dim=2):
    '''Generates a flattened grid of (x,y,...) coordinates in a range of -1 to 1.'''
    tensors = tuple(dim * [torch.linspace(-1, 1, steps=sidelen)])
    mgrid = torch.stack(torch.meshgrid(*tensors, indexing='ij'), dim=-1)
    mgrid = mgrid.reshape(-1, dim)
    return mgrid


class SineLayer(nn.Module):
    def __init__(self, in_features, out_features, bias=True, is_first=False, omega_0=30):
        super().__init__()
        self.omega_0 = omega_0
        self.is_first = is_first
        self.in_features = in_features
        self.linear = nn.Linear(in_features, out_features, bias=bias)
        self.init_weights()

    def init_weights(self):
        with torch.no_grad():
            if self.is_first:
                self.linear.weight.uniform_(-1 / self.in_features, 1 / self.in_features)
            else:
                self.linear.weight.uniform_(-np.sqrt(6 / self.in_features) / self.omega_0,
                                            np.sqrt(6 / self.in_features) / self.omega_0)

    def forward(self, input):
        return torch.sin(self.omega_0 * self.linear(input))

    def forward_with_intermediate(self, input):
        intermediate = self.omega_0 * self.linear(input)
        return torch.sin(intermediate), intermediate

    def extra_repr(self):
        return f'omega_0={self.omega_0}, is_first={self.is_first}'


class Siren(nn.Module):
    def __init__(self, in_features, hidden_features, hidden_layers, out_features,
                 outermost_linear=False, first_omega_0=30, hidden_omega_0=30.):
        super().__init__()
        self.net = []
        self.net.append(SineLayer(in_features, hidden_features, is_first=True,
                                  omega_0=first_omega_0))
        for i in range(hidden_layers):
            self.net.append(SineLayer(hidden_features, hidden_features, is_first=False,
                                      omega_0=hidden_omega_0))
        if outermost_linear:
            final_linear = nn.Linear(hidden_features, out_features)
            with torch.no_grad():
                final_linear.weight.uniform_(-np.sqrt(6 / hidden_features) / hidden_omega_0,
                                             np.sqrt(6 / hidden_features) / hidden_omega_0)
            self.net.append(final_linear)
        else:
            self.net.append(SineLayer(hidden_features, out_features, is_first=False,
                                      omega_0=hidden_omega_0))
        self.net = nn.Sequential(*self.net)

    def forward(self, coords):
        coords = coords.clone().detach().requires_grad_(True)  # allows to take derivative w.r.t. input
        output = self.net(coords)
        return output, coords


def laplace(y, x):
    grad = gradient(y, x)
    return divergence(grad, x)


def divergence(y, x):
    div = 0.
    for i in range(y.shape[-1]):
        div += torch.autograd.grad(y[..., i], x, torch.ones_like(y[..., i]),
                                   create_graph=True)[0][..., i:i + 1]
    return div


def gradient(y, x, grad_outputs=None):
    if grad_outputs is None:
        grad_outputs = torch.ones_like(y)
    grad = torch.autograd.grad(y, [x], grad_outputs=grad_outputs, create_graph=True)[0]
    return grad


# analytic checks of the derivative helpers on f(x, y) = x^2 y + sin(y)
x = torch.tensor([[0.5, -1.0], [2.0, 0.25]], requires_grad=True)
f = (x[:, :1] ** 2 * x[:, 1:] + torch.sin(x[:, 1:]))
print('gradient', gradient(f, x))
print('laplace', laplace(f, x))

# the 2-D signal: a smooth "image" on a 16x16 grid
sidelen = 16
coords = get_mgrid(sidelen, 2)
print('mgrid', coords.shape, coords[:3])
xx, yy = coords[:, 0:1], coords[:, 1:2]
pixels = torch.sin(3 * xx) * torch.cos(2 * yy) + 0.5 * xx * yy
print('pixels', pixels.shape, 'min %.4f max %.4f' % (pixels.min(), pixels.max()))

img_siren = Siren(in_features=2, out_features=1, hidden_features=32, hidden_layers=2,
                  outermost_linear=True)
print(img_siren)
first = img_siren.net[0].linear.weight
print('first layer weight bound ok:', bool(first.abs().max() <= 1 / 2))
print('hidden weight bound ok:',
      bool(img_siren.net[1].linear.weight.abs().max() <= math.sqrt(6 / 32) / 30))

total_steps = 60
steps_til_summary = 10
optim = torch.optim.Adam(lr=1e-4 * 10, params=img_siren.parameters())
model_input, ground_truth = coords.unsqueeze(0), pixels.unsqueeze(0)
for step in range(total_steps + 1):
    model_output, coords_out = img_siren(model_input)
    loss = ((model_output - ground_truth) ** 2).mean()
    if not step % steps_til_summary:
        img_grad = gradient(model_output, coords_out)
        img_laplacian = laplace(model_output, coords_out)
        print("Step %d, Total loss %0.6f" % (step, loss))
        print('  grad norm %.4f laplacian mean %.4f' % (img_grad.norm(dim=-1).mean().item(),
                                                       img_laplacian.mean().item()))
    optim.zero_grad()
    loss.backward()
    optim.step()

# Poisson: supervise only the gradients (and the Laplacian) of the signal
gt = {'pixels': pixels}
coords_g = coords.clone().requires_grad_(True)
sig = torch.sin(3 * coords_g[:, :1]) * torch.cos(2 * coords_g[:, 1:]) + 0.5 * coords_g[:, :1] * coords_g[:, 1:]
gt['grads'] = gradient(sig, coords_g).detach()
gt['laplace'] = laplace(sig, coords_g).detach()
print('gt grads', gt['grads'].shape, 'gt laplace', gt['laplace'].shape,
      'requires_grad', gt['grads'].requires_grad)
poisson_siren = Siren(in_features=2, out_features=1, hidden_features=32, hidden_layers=2,
                      outermost_linear=True)
optim = torch.optim.Adam(lr=1e-3, params=poisson_siren.parameters())
for step in range(31):
    out, c = poisson_siren(coords)
    train_loss = ((gradient(out, c) - gt['grads']) ** 2).mean()
    optim.zero_grad()
    train_loss.backward()
    if step % 10 == 0:
        print('poisson step %d loss %.6f' % (step, train_loss.item()))
    optim.step()

# relu vs sine derivative: the ReLU MLP has zero Laplacian
relu_net = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 1))
c = coords[:5].clone().requires_grad_(True)
lap = laplace(relu_net(c), c)
print('relu laplacian', lap.abs().max().item(), lap.shape)

# the same derivatives with torch.func (as newer SIREN / PINN ports write them): the
# Jacobian and Hessian per coordinate with vmap, the parameters closed over, trained through
from torch.func import hessian, jacrev, vmap

scalar_siren = lambda c: poisson_siren.net(c).squeeze(-1)
jac = vmap(jacrev(scalar_siren))(coords[:4])
hes = vmap(hessian(scalar_siren))(coords[:4])
out, c = poisson_siren(coords[:4])
print('jacrev agrees with autograd.grad:', torch.allclose(jac, gradient(out, c), atol=1e-5),
      jac.shape, jac.requires_grad)
print('hessian trace agrees with laplace:',
      torch.allclose(hes.diagonal(dim1=-2, dim2=-1).sum(-1, keepdim=True), laplace(out, c), atol=1e-3),
      hes.shape)
optim = torch.optim.Adam(lr=1e-3, params=poisson_siren.parameters())
sub = slice(None, None, 16)  # (vmap runs per coordinate: a subset keeps it quick)
for step in range(7):
    func_loss = ((vmap(jacrev(scalar_siren))(coords[sub]) - gt['grads'][sub]) ** 2).mean()
    optim.zero_grad()
    func_loss.backward()
    optim.step()
    if step % 3 == 0:
        print('func step %d loss %.6f' % (step, func_loss.item()))
