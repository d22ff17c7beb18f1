"""Scientific-ML pieces: a DeepONet (branch/trunk nets joined by torch.einsum('bi,bi->b')) in
the style of lululxvi/deepxde's PyTorch backend, a Fourier-feature MLP (Tancik et al.) with a
fixed Gaussian projection buffer, and a Lagrangian neural network in the style of
MilesCranmer/lagrangian_nns ported to torch.func: the Hessian of a scalar Lagrangian with
torch.func.hessian, its gradient with torch.func.jacrev, accelerations from
torch.linalg.pinv / torch.linalg.solve, batched with torch.func.vmap over
torch.func.functional_call with a params dict."""
import math

import torch
import torch.nn as nn
from torch.func import functional_call, grad, hessian, jacrev, vmap

torch.manual_seed(0)
torch.set_printoptions(precision=4)


class FNN(nn.Module):
    def __init__(self, layer_sizes, activation=torch.tanh):
        super().__init__()
        self.activation = activation
        self.linears = nn.ModuleList()
        for i in range(1, len(layer_sizes)):
            self.linears.append(nn.Linear(layer_sizes[i - 1], layer_sizes[i], dtype=torch.float32))
            nn.init.xavier_normal_(self.linears[-1].weight)
            nn.init.zeros_(self.linears[-1].bias)

    def forward(self, x):
        for linear in self.linears[:-1]:
            x = self.activation(linear(x))
        return self.linears[-1](x)


class DeepONetCartesianProd(nn.Module):
    def __init__(self, layer_sizes_branch, layer_sizes_trunk):
        super().__init__()
        self.branch = FNN(layer_sizes_branch)
        self.trunk = FNN(layer_sizes_trunk)
        self.b = nn.Parameter(torch.tensor(0.0))

    def forward(self, inputs):
        x_func, x_loc = inputs
        x_func = self.branch(x_func)
        x_loc = torch.tanh(self.trunk(x_loc))
        x = torch.einsum("bi,ni->bn", x_func, x_loc)
        return x + self.b


class DeepONet(DeepONetCartesianProd):
    def forward(self, inputs):
        x_func, x_loc = inputs
        return torch.einsum("bi,bi->b", self.branch(x_func), torch.tanh(self.trunk(x_loc))) + self.b


class FourierFeatures(nn.Module):
    def __init__(self, in_features, mapping_size=16, scale=2.0):
        super().__init__()
        self.register_buffer("B", torch.randn(in_features, mapping_size) * scale)

    def forward(self, x):
        x_proj = (2.0 * math.pi * x) @ self.B
        return torch.cat([torch.sin(x_proj), torch.cos(x_proj)], dim=-1)


# --- DeepONet: learn the antiderivative operator on 8 sensors ---------------------------
m = 8
sensors = torch.linspace(0, 1, m)
coef = torch.randn(32, 3)
u = coef[:, :1] + coef[:, 1:2] * torch.sin(math.pi * sensors) + coef[:, 2:] * sensors ** 2
ys = torch.rand(32, 1)
s = coef[:, :1] * ys + coef[:, 1:2] * (1 - torch.cos(math.pi * ys)) / math.pi + coef[:, 2:] * ys ** 3 / 3
net = DeepONet([m, 16, 16], [1, 16, 16])
print(net)
opt = torch.optim.Adam(net.parameters(), lr=5e-3)
for step in range(40):
    pred = net((u, ys))
    loss = torch.mean((pred - s.squeeze(-1)) ** 2)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 5 == 0:
        print(f"deeponet step {step:2d} loss {loss.item():.5f}")
prod = DeepONetCartesianProd([m, 16, 16], [1, 16, 16])
print("cartesian", prod((u[:4], torch.linspace(0, 1, 5)[:, None])).shape)

# --- Fourier-feature MLP regression -------------------------------------------------------
ff = nn.Sequential(FourierFeatures(2), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 1))
print(ff)
print("buffers", [name for name, _ in ff.named_buffers()], ff[0].B.shape)
xy = torch.rand(64, 2)
target = torch.sin(4 * xy[:, :1]) * torch.cos(3 * xy[:, 1:])
opt = torch.optim.Adam(ff.parameters(), lr=1e-2)
for step in range(30):
    loss = nn.functional.mse_loss(ff(xy), target)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 5 == 0:
        print(f"fourier step {step:2d} loss {loss.item():.5f}")

# --- Lagrangian NN with torch.func --------------------------------------------------------
def analytical_lagrangian(q, q_t, m1=1.0, g=9.8, l1=1.0):
    # a single pendulum: T - V
    return 0.5 * m1 * (l1 * q_t[0]) ** 2 + m1 * g * l1 * torch.cos(q[0])


def equation_of_motion(lagrangian, state):
    q, q_t = torch.split(state, state.shape[-1] // 2)
    H = hessian(lagrangian, 1)(q, q_t)
    J = jacrev(lagrangian, 0)(q, q_t)
    M = jacrev(jacrev(lagrangian, 1), 0)(q, q_t)
    q_tt = torch.linalg.pinv(H) @ (J - M @ q_t)
    return torch.cat([q_t, q_tt])


state = torch.tensor([0.3, -0.1])
print("analytic eom", equation_of_motion(analytical_lagrangian, state))
print("expected", torch.tensor([-0.1, -9.8 * math.sin(0.3)]))
print("grad L", grad(analytical_lagrangian, argnums=(0, 1))(state[:1], state[1:]))

lnn = nn.Sequential(nn.Linear(2, 32), nn.Softplus(), nn.Linear(32, 32), nn.Softplus(),
                    nn.Linear(32, 1))
params = {k: v.detach() for k, v in lnn.named_parameters()}
print("params", {k: tuple(v.shape) for k, v in params.items()})


def learned_lagrangian(params, q, q_t):
    return functional_call(lnn, params, (torch.cat([q, q_t]),)).squeeze()


def learned_eom(params, state):
    q, q_t = torch.split(state, 1)
    L = lambda a, b: learned_lagrangian(params, a, b)
    H = hessian(L, 1)(q, q_t)
    J = jacrev(L, 0)(q, q_t)
    M = jacrev(jacrev(L, 1), 0)(q, q_t)
    return torch.linalg.solve(H + 1e-3 * torch.eye(1), J - M @ q_t)


states = torch.randn(8, 2) * torch.tensor([1.0, 2.0])
true_acc = vmap(lambda st: equation_of_motion(analytical_lagrangian, st))(states)[:, 1:]
print("true acc", true_acc.shape, true_acc[:3].squeeze(-1))
print("vmap analytic matches", torch.allclose(
    true_acc[0], equation_of_motion(analytical_lagrangian, states[0])[1:]))

params = {k: v.clone().requires_grad_() for k, v in params.items()}
opt = torch.optim.Adam(params.values(), lr=3e-3)
batched_eom = vmap(learned_eom, in_dims=(None, 0))
for step in range(8):
    pred = batched_eom(params, states)
    loss = (pred - true_acc).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"lnn step {step:2d} loss {loss.item():.4f} pred {tuple(pred.shape)}")

# --- jacobian sanity of the Fourier features, per-sample ----------------------------------
fparams = dict(ff.named_parameters())
fbuffers = dict(ff.named_buffers())
jac = vmap(jacrev(lambda p, b, x: functional_call(ff, (p, b), (x[None],)).squeeze(), argnums=2),
           in_dims=(None, None, 0))(fparams, fbuffers, xy[:5])
print("per-sample input jacobian", jac.shape)
print("einsum bi,bi->b", torch.einsum("bi,bi->b", jac, jac).shape)
