"""Continuous-time models in plain torch: torchdiffeq's examples/ode_demo.py (a neural
ODE fitted to the cubic spiral dy/dt = (y**3) A, minibatches of trajectory pieces
stacked with torch.stack, RMSprop, a RunningAverageMeter) with its odeint written by hand
as fixed-step solvers (classic RK4 and the Dormand-Prince 5th-order tableau taken at
fixed steps), and greydanus/hamiltonian-nn's HNN on the ideal mass-spring: the network
outputs a scalar H, its symplectic gradient comes from
torch.autograd.grad(H.sum(), x, create_graph=True) split with dx.split(1, 1), compared
with a baseline MLP on the energy drift of a long integrated orbit.
"""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

parser = argparse.ArgumentParser('ODE demo')
parser.add_argument('--method', type=str, choices=['dopri5', 'rk4'], default='rk4')
parser.add_argument('--data_size', type=int, default=120)
parser.add_argument('--batch_time', type=int, default=6)
parser.add_argument('--batch_size', type=int, default=16)
parser.add_argument('--niters', type=int, default=60)
parser.add_argument('--test_freq', type=int, default=20)
parser.add_argument('--hnn_steps', type=int, default=150)
args = parser.parse_args()

device = torch.device('cpu')


# -- a fixed-step odeint ---------------------------------------------------------------

def rk4_step(func, t0, dt, y0):
    k1 = func(t0, y0)
    k2 = func(t0 + dt / 2, y0 + dt * k1 / 2)
    k3 = func(t0 + dt / 2, y0 + dt * k2 / 2)
    k4 = func(t0 + dt, y0 + dt * k3)
    return y0 + dt * (k1 + 2 * k2 + 2 * k3 + k4) / 6


DOPRI5_C = [0., 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.]
DOPRI5_A = [
    [],
    [1 / 5],
    [3 / 40, 9 / 40],
    [44 / 45, -56 / 15, 32 / 9],
    [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729],
    [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656],
]
DOPRI5_B = [35 / 384, 0., 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84]


def dopri5_step(func, t0, dt, y0):
    k = []
    for c, a in zip(DOPRI5_C, DOPRI5_A):
        yi = y0 + dt * sum(aij * kj for aij, kj in zip(a, k)) if a else y0
        k.append(func(t0 + c * dt, yi))
    return y0 + dt * sum(b * ki for b, ki in zip(DOPRI5_B, k))


def odeint(func, y0, t, method='rk4', substeps=1):
    step = {'rk4': rk4_step, 'dopri5': dopri5_step}[method]
    solution = [y0]
    y = y0
    for t0, t1 in zip(t[:-1], t[1:]):
        dt = (t1 - t0) / substeps
        for s in range(substeps):
            y = step(func, t0 + s * dt, dt, y)
        solution.append(y)
    return torch.stack(solution)


# -- ode_demo.py -----------------------------------------------------------------------

true_y0 = torch.tensor([[2., 0.]]).to(device)
t = torch.linspace(0., 25., args.data_size).to(device)
true_A = torch.tensor([[-0.1, 2.0], [-2.0, -0.1]]).to(device)


class Lambda(nn.Module):

    def forward(self, t, y):
        return torch.mm(y**3, true_A)


with torch.no_grad():
    true_y = odeint(Lambda(), true_y0, t, method='dopri5', substeps=4)


def get_batch():
    s = torch.from_numpy(np.random.choice(np.arange(args.data_size - args.batch_time, dtype=np.int64), args.batch_size, replace=False))
    batch_y0 = true_y[s]  # (M, D)
    batch_t = t[:args.batch_time]  # (T)
    batch_y = torch.stack([true_y[s + i] for i in range(args.batch_time)], dim=0)  # (T, M, D)
    return batch_y0.to(device), batch_t.to(device), batch_y.to(device)


class ODEFunc(nn.Module):

    def __init__(self):
        super(ODEFunc, self).__init__()

        self.net = nn.Sequential(
            nn.Linear(2, 50),
            nn.Tanh(),
            nn.Linear(50, 2),
        )

        for m in self.net.modules():
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, mean=0, std=0.1)
                nn.init.constant_(m.bias, val=0)

    def forward(self, t, y):
        return self.net(y**3)


class RunningAverageMeter(object):
    """Computes and stores the average and current value"""

    def __init__(self, momentum=0.99):
        self.momentum = momentum
        self.reset()

    def reset(self):
        self.val = None
        self.avg = 0

    def update(self, val):
        if self.val is None:
            self.avg = val
        else:
            self.avg = self.avg * self.momentum + val * (1 - self.momentum)
        self.val = val


def ode_demo():
    print('true_y', true_y.shape, 'ends at', true_y[-1])
    ii = 0

    func = ODEFunc().to(device)

    optimizer = optim.RMSprop(func.parameters(), lr=1e-3)
    end = time.time()

    time_meter = RunningAverageMeter(0.97)

    loss_meter = RunningAverageMeter(0.97)

    for itr in range(1, args.niters + 1):
        optimizer.zero_grad()
        batch_y0, batch_t, batch_y = get_batch()
        pred_y = odeint(func, batch_y0, batch_t, method=args.method).to(device)
        loss = torch.mean(torch.abs(pred_y - batch_y))
        loss.backward()
        optimizer.step()

        time_meter.update(time.time() - end)
        loss_meter.update(loss.item())

        if itr % args.test_freq == 0 or itr == 1:
            with torch.no_grad():
                pred_y = odeint(func, true_y0, t, method=args.method)
                loss = torch.mean(torch.abs(pred_y - true_y))
                print('Iter {:04d} | Total Loss {:.6f} | running loss {:.6f}'.format(
                    itr, loss.item(), loss_meter.avg))
                ii += 1

        end = time.time()


# -- hamiltonian-nn --------------------------------------------------------------------

class MLP(torch.nn.Module):
    '''Just a salt-of-the-earth MLP'''
    def __init__(self, input_dim, hidden_dim, output_dim, nonlinearity='tanh'):
        super(MLP, self).__init__()
        self.linear1 = torch.nn.Linear(input_dim, hidden_dim)
        self.linear2 = torch.nn.Linear(hidden_dim, hidden_dim)
        self.linear3 = torch.nn.Linear(hidden_dim, output_dim, bias=None)

        for l in [self.linear1, self.linear2, self.linear3]:
            torch.nn.init.orthogonal_(l.weight)  # use a principled initialization

        self.nonlinearity = torch.tanh

    def forward(self, x, separate_fields=False):
        h = self.nonlinearity(self.linear1(x))
        h = self.nonlinearity(self.linear2(h))
        return self.linear3(h)


class HNN(torch.nn.Module):
    '''Learn arbitrary vector fields that are sums of conservative and solenoidal fields'''
    def __init__(self, input_dim, differentiable_model, baseline=False):
        super(HNN, self).__init__()
        self.baseline = baseline
        self.differentiable_model = differentiable_model

    def forward(self, x):
        return self.differentiable_model(x)

    def time_derivative(self, x, t=None):
        '''NEURAL ODE-STLE VECTOR FIELD'''
        if self.baseline:
            return self.differentiable_model(x)

        '''NEURAL HAMILTONIAN-STLE VECTOR FIELD'''
        H = self.forward(x)  # traditional forward pass
        dH = torch.autograd.grad(H.sum(), x, create_graph=True)[0]  # gradients for solenoidal field
        dHdq, dHdp = dH.split(1, 1)
        return torch.cat([dHdp, -dHdq], 1)


def get_spring_dataset(seed=0, samples=64, noise_std=0.1):
    rng = np.random.RandomState(seed)
    radius = rng.rand(samples) * 0.9 + 0.1
    angle = rng.rand(samples) * 2 * np.pi
    q, p = radius * np.cos(angle), radius * np.sin(angle)
    x = np.stack([q, p], 1)
    dx = np.stack([p, -q], 1)                     # H = (q^2 + p^2) / 2
    x = x + rng.randn(*x.shape) * noise_std
    return torch.tensor(x, dtype=torch.float32), torch.tensor(dx, dtype=torch.float32)


def L2_loss(u, v):
    return (u-v).pow(2).mean()


def train_hnn(baseline):
    output_dim = 2 if baseline else 1
    nn_model = MLP(2, 64, output_dim)
    model = HNN(2, differentiable_model=nn_model, baseline=baseline)
    optim = torch.optim.Adam(model.parameters(), 1e-3, weight_decay=1e-4)

    x, dxdt = get_spring_dataset(seed=0)
    test_x, test_dxdt = get_spring_dataset(seed=1)
    x.requires_grad_(True)
    test_x.requires_grad_(True)

    stats = {'train_loss': [], 'test_loss': []}
    for step in range(args.hnn_steps + 1):
        dxdt_hat = model.time_derivative(x)
        loss = L2_loss(dxdt, dxdt_hat)
        loss.backward()
        optim.step()
        optim.zero_grad()

        test_dxdt_hat = model.time_derivative(test_x)
        test_loss = L2_loss(test_dxdt, test_dxdt_hat)
        stats['train_loss'].append(loss.item())
        stats['test_loss'].append(test_loss.item())
        if step % 50 == 0:
            print("{} step {}, train_loss {:.4e}, test_loss {:.4e}".format(
                'baseline' if baseline else 'HNN', step, loss.item(), test_loss.item()))
    return model


def energy_drift(model):
    y0 = torch.tensor([[1.0, 0.0]], requires_grad=True)
    ts = torch.linspace(0, 20, 201)

    def fun(t, y):
        with torch.enable_grad():
            y = y.detach().requires_grad_(True) if not y.requires_grad else y
            return model.time_derivative(y).detach()

    orbit = odeint(fun, y0.detach(), ts, method='rk4').squeeze(1)
    energy = 0.5 * orbit.pow(2).sum(1)
    return (energy[-1] - energy[0]).abs().item()


def main():
    torch.manual_seed(0)
    np.random.seed(0)
    ode_demo()
    baseline = train_hnn(baseline=True)
    hnn = train_hnn(baseline=False)
    print('energy drift over 20 time units: baseline {:.4f} HNN {:.4f}'.format(
        energy_drift(baseline), energy_drift(hnn)))


if __name__ == '__main__':
    main()
