"""A physics-informed neural network (Raissi et al.'s PINN, in the style of the popular
PyTorch re-implementations) for the 1-D viscous Burgers equation
u_t + u u_x - (0.01/pi) u_xx = 0 on x in [-1, 1], t in [0, 1], u(0, x) = -sin(pi x),
u(t, -1) = u(t, 1) = 0: derivatives by torch.autograd.grad(..., grad_outputs=
torch.ones_like(u), create_graph=True), collocation points from torch.meshgrid / torch.rand,
xavier_normal_ init, Adam then LBFGS(line_search_fn="strong_wolfe") with a closure."""
import argparse
import math

import numpy as np
import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument('--adam-iters', type=int, default=101)
parser.add_argument('--lbfgs-iters', type=int, default=30)
parser.add_argument('--seed', type=int, default=1234)
args = parser.parse_args()

torch.manual_seed(args.seed)
np.random.seed(args.seed)
device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
nu = 0.01 / math.pi


class DNN(nn.Module):
    def __init__(self, layers):
        super(DNN, self).__init__()
        self.depth = len(layers) - 1
        layer_list = []
        for i in range(self.depth - 1):
            layer_list.append(('layer_%d' % i, nn.Linear(layers[i], layers[i + 1])))
            layer_list.append(('activation_%d' % i, nn.Tanh()))
        layer_list.append(('layer_%d' % (self.depth - 1), nn.Linear(layers[-2], layers[-1])))
        from collections import OrderedDict
        self.layers = nn.Sequential(OrderedDict(layer_list))
        for m in self.layers:
            if isinstance(m, nn.Linear):
                nn.init.xavier_normal_(m.weight)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        return self.layers(x)


class PhysicsInformedNN():
    def __init__(self, X_u, u, X_f, layers):
        self.x_u = torch.tensor(X_u[:, 0:1], requires_grad=True).float().to(device)
        self.t_u = torch.tensor(X_u[:, 1:2], requires_grad=True).float().to(device)
        self.x_f = torch.tensor(X_f[:, 0:1], requires_grad=True).float().to(device)
        self.t_f = torch.tensor(X_f[:, 1:2], requires_grad=True).float().to(device)
        self.u = torch.tensor(u).float().to(device)
        self.dnn = DNN(layers).to(device)
        self.iter = 0

    def net_u(self, x, t):
        u = self.dnn(torch.cat([x, t], dim=1))
        return u

    def net_f(self, x, t):
        """ The pytorch autograd version of calculating residual """
        u = self.net_u(x, t)

        u_t = torch.autograd.grad(
            u, t,
            grad_outputs=torch.ones_like(u),
            retain_graph=True,
            create_graph=True
        )[0]
        u_x = torch.autograd.grad(
            u, x,
            grad_outputs=torch.ones_like(u),
            retain_graph=True,
            create_graph=True
        )[0]
        u_xx = torch.autograd.grad(
            u_x, x,
            grad_outputs=torch.ones_like(u_x),
            retain_graph=True,
            create_graph=True
        )[0]

        f = u_t + u * u_x - nu * u_xx
        return f

    def loss_func(self):
        u_pred = self.net_u(self.x_u, self.t_u)
        f_pred = self.net_f(self.x_f, self.t_f)
        loss_u = torch.mean((self.u - u_pred) ** 2)
        loss_f = torch.mean(f_pred ** 2)
        return loss_u, loss_f

    def train(self):
        self.dnn.train()
        optimizer_adam = torch.optim.Adam(self.dnn.parameters(), lr=5e-3)
        for it in range(args.adam_iters):
            optimizer_adam.zero_grad()
            loss_u, loss_f = self.loss_func()
            loss = loss_u + loss_f
            loss.backward()
            optimizer_adam.step()
            if it % 50 == 0:
                print('Adam It: %d, Loss: %.5e, Loss_u: %.5e, Loss_f: %.5e' %
                      (it, loss.item(), loss_u.item(), loss_f.item()))

        optimizer = torch.optim.LBFGS(
            self.dnn.parameters(),
            lr=1.0,
            max_iter=args.lbfgs_iters,
            max_eval=args.lbfgs_iters,
            history_size=50,
            tolerance_grad=1e-5,
            tolerance_change=1.0 * np.finfo(float).eps,
            line_search_fn="strong_wolfe"       # can be "strong_wolfe"
        )

        def closure():
            optimizer.zero_grad()
            loss_u, loss_f = self.loss_func()
            loss = loss_u + loss_f
            loss.backward()
            self.iter += 1
            if self.iter % 10 == 0:
                print('LBFGS Iter %d, Loss: %.5e, Loss_u: %.5e, Loss_f: %.5e' %
                      (self.iter, loss.item(), loss_u.item(), loss_f.item()))
            return loss

        optimizer.step(closure)

    def predict(self, X):
        x = torch.tensor(X[:, 0:1], requires_grad=True).float().to(device)
        t = torch.tensor(X[:, 1:2], requires_grad=True).float().to(device)
        self.dnn.eval()
        u = self.net_u(x, t)
        f = self.net_f(x, t)
        u = u.detach().cpu().numpy()
        f = f.detach().cpu().numpy()
        return u, f


# training data: initial and boundary conditions, and collocation points
N_u, N_f = 60, 600
layers = [2, 20, 20, 20, 1]
x0 = np.linspace(-1, 1, 40)[:, None]
xx1 = np.hstack((x0, np.zeros_like(x0)))             # t = 0
uu1 = -np.sin(np.pi * x0)
t0 = np.linspace(0, 1, 20)[:, None]
xx2 = np.hstack((-np.ones_like(t0), t0))              # x = -1
xx3 = np.hstack((np.ones_like(t0), t0))               # x = 1
X_u_train = np.vstack([xx1, xx2, xx3])
u_train = np.vstack([uu1, np.zeros_like(t0), np.zeros_like(t0)])
idx = np.random.choice(X_u_train.shape[0], N_u, replace=False)
X_u_train, u_train = X_u_train[idx, :], u_train[idx, :]
lb, ub = np.array([-1.0, 0.0]), np.array([1.0, 1.0])
X_f_train = lb + (ub - lb) * np.random.rand(N_f, 2)
X_f_train = np.vstack((X_f_train, X_u_train))
print('training points:', X_u_train.shape, X_f_train.shape)

model = PhysicsInformedNN(X_u_train, u_train, X_f_train, layers)
print(model.dnn)
model.train()

# the initial condition is met: u(0, x) ~ -sin(pi x)
xs = torch.linspace(-1, 1, 9)
T, Xg = torch.meshgrid(torch.zeros(1), xs, indexing='ij')
X_star = torch.stack([Xg.flatten(), T.flatten()], dim=1).numpy()
u_pred, f_pred = model.predict(X_star)
error_u = np.linalg.norm(-np.sin(np.pi * X_star[:, :1]) - u_pred, 2) / np.linalg.norm(np.sin(np.pi * X_star[:, :1]), 2)
print('Error u at t=0: %.3f' % error_u)
