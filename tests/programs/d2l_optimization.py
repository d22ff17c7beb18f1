"""Dive into Deep Learning chapter 12 (optimization algorithms): gradient descent and
SGD trajectories on f(x1, x2), minibatch SGD, momentum, Adagrad, RMSProp, Adadelta and
Adam from scratch with the book's train_ch11 and their torch.optim counterparts through
train_concise_ch11, and learning rate schedulers (hand-written and lr_scheduler)."""
import math

import numpy as np
import torch
from torch import nn
from torch.optim import lr_scheduler
from torch.utils import data

torch.manual_seed(0)


# ---- 12.3 Gradient Descent / 12.4 Stochastic Gradient Descent
def f(x1, x2):  # Objective function
    return x1 ** 2 + 2 * x2 ** 2


def f_grad(x1, x2):  # Gradient of the objective function
    return 2 * x1, 4 * x2


def gd_2d(x1, x2, s1, s2, f_grad):
    g1, g2 = f_grad(x1, x2)
    return (x1 - eta * g1, x2 - eta * g2, 0, 0)


def sgd_2d(x1, x2, s1, s2, f_grad):
    g1, g2 = f_grad(x1, x2)
    # Simulate noisy gradient
    g1 += torch.normal(0.0, 1, (1,)).item()
    g2 += torch.normal(0.0, 1, (1,)).item()
    eta_t = eta * lr()
    return (x1 - eta_t * g1, x2 - eta_t * g2, 0, 0)


def constant_lr():
    return 1


def train_2d(trainer, steps=20, f_grad=None):  #@save
    """Optimize a 2D objective function with a customized trainer."""
    # `s1` and `s2` are internal state variables that will be used in Momentum, adagrad, RMSProp
    x1, x2, s1, s2 = -5, -2, 0, 0
    results = [(x1, x2)]
    for i in range(steps):
        if f_grad:
            x1, x2, s1, s2 = trainer(x1, x2, s1, s2, f_grad)
        else:
            x1, x2, s1, s2 = trainer(x1, x2, s1, s2)
        results.append((x1, x2))
    print(f'epoch {i + 1}, x1: {float(x1):f}, x2: {float(x2):f}')
    return results


eta = 0.1
train_2d(gd_2d, f_grad=f_grad)
lr = constant_lr  # Constant learning rate
results = train_2d(sgd_2d, steps=50, f_grad=f_grad)
print(len(results), math.hypot(*results[-1]) < math.hypot(-5, -2))


def exponential_lr():
    # Global variable that is defined outside this function and updated inside
    global t
    t += 1
    return math.exp(-0.1 * t)


t = 1
lr = exponential_lr
train_2d(sgd_2d, steps=200, f_grad=f_grad)

# ---- 12.5 Minibatch Stochastic Gradient Descent
# the airfoil self-noise data, standardized: a fixed linear rule plus noise stands in
rs = np.random.RandomState(0)
features_np = rs.randn(200, 5).astype(np.float32)
labels_np = (features_np @ np.array([0.5, -1.0, 0.3, 0.8, -0.2], np.float32) +
             0.1 * rs.randn(200)).astype(np.float32)


def get_data_ch11(batch_size=10, n=200):
    data_ = torch.from_numpy(np.concatenate([features_np, labels_np[:, None]], 1))
    data_ = (data_ - data_.mean(axis=0)) / data_.std(axis=0)
    data_iter = data.DataLoader(data.TensorDataset(data_[:n, :-1], data_[:n, -1]),
                                batch_size, shuffle=True)
    return data_iter, data_.shape[1] - 1


def sgd(params, states, hyperparams):
    for p in params:
        p.data.sub_(hyperparams['lr'] * p.grad)
        p.grad.data.zero_()


def linreg(X, w, b):
    return torch.matmul(X, w) + b


def squared_loss(y_hat, y):
    return (y_hat - y.reshape(y_hat.shape)) ** 2 / 2


def evaluate_loss(net, data_iter, loss):
    total, n = 0.0, 0
    for X, y in data_iter:
        out = net(X)
        l = loss(out, y.reshape(out.shape))
        total, n = total + float(l.sum()), n + l.numel()
    return total / n


def train_ch11(trainer_fn, states, hyperparams, data_iter,
               feature_dim, num_epochs=2):
    # Initialization
    w = torch.normal(mean=0.0, std=0.01, size=(feature_dim, 1),
                     requires_grad=True)
    b = torch.zeros((1), requires_grad=True)
    net, loss = lambda X: linreg(X, w, b), squared_loss
    # Train
    n = 0
    losses = []
    for _ in range(num_epochs):
        for X, y in data_iter:
            l = loss(net(X), y).mean()
            l.backward()
            trainer_fn([w, b], states, hyperparams)
            n += X.shape[0]
            if n % 100 == 0:
                losses.append(evaluate_loss(net, data_iter, squared_loss))
    print(f'loss: {losses[-1]:.3f}, {n} examples, first {losses[0]:.3f}')
    return losses


def train_sgd(lr, batch_size, num_epochs=2):
    data_iter, feature_dim = get_data_ch11(batch_size)
    return train_ch11(
        sgd, None, {'lr': lr}, data_iter, feature_dim, num_epochs)


gd_res = train_sgd(1, 200, 10)
sgd_res = train_sgd(0.005, 1)
mini1_res = train_sgd(.4, 100)
mini2_res = train_sgd(.05, 10)


def train_concise_ch11(trainer_fn, hyperparams, data_iter, num_epochs=4):
    # Initialization
    net = nn.Sequential(nn.Linear(5, 1))

    def init_weights(module):
        if type(module) == nn.Linear:
            torch.nn.init.normal_(module.weight, std=0.01)
    net.apply(init_weights)

    optimizer = trainer_fn(net.parameters(), **hyperparams)
    loss = nn.MSELoss(reduction='none')
    n = 0
    losses = []
    for _ in range(num_epochs):
        for X, y in data_iter:
            optimizer.zero_grad()
            out = net(X)
            y = y.reshape(out.shape)
            l = loss(out, y)
            l.mean().backward()
            optimizer.step()
            n += X.shape[0]
            if n % 100 == 0:
                # `MSELoss` computes squared error without the 1/2 factor
                losses.append(evaluate_loss(net, data_iter, loss) / 2)
    print(f'loss: {losses[-1]:.3f}, {n} examples, first {losses[0]:.3f}')
    print(optimizer)


data_iter, _ = get_data_ch11(10)
trainer = torch.optim.SGD
train_concise_ch11(trainer, {'lr': 0.01}, data_iter)


# ---- 12.6 Momentum
def init_momentum_states(feature_dim):
    v_w = torch.zeros((feature_dim, 1))
    v_b = torch.zeros(1)
    return (v_w, v_b)


def sgd_momentum(params, states, hyperparams):
    for p, v in zip(params, states):
        with torch.no_grad():
            v[:] = hyperparams['momentum'] * v + p.grad
            p[:] -= hyperparams['lr'] * v
        p.grad.data.zero_()


def train_momentum(lr, momentum, num_epochs=2):
    train_ch11(sgd_momentum, init_momentum_states(feature_dim),
               {'lr': lr, 'momentum': momentum}, data_iter,
               feature_dim, num_epochs)


data_iter, feature_dim = get_data_ch11(batch_size=10)
train_momentum(0.02, 0.5)
train_momentum(0.005, 0.9)
train_concise_ch11(torch.optim.SGD, {'lr': 0.005, 'momentum': 0.9}, data_iter)


# ---- 12.7 Adagrad
def init_adagrad_states(feature_dim):
    s_w = torch.zeros((feature_dim, 1))
    s_b = torch.zeros(1)
    return (s_w, s_b)


def adagrad(params, states, hyperparams):
    eps = 1e-6
    for p, s in zip(params, states):
        with torch.no_grad():
            s[:] += torch.square(p.grad)
            p[:] -= hyperparams['lr'] * p.grad / torch.sqrt(s + eps)
        p.grad.data.zero_()


train_ch11(adagrad, init_adagrad_states(feature_dim), {'lr': 0.1}, data_iter, feature_dim)
train_concise_ch11(torch.optim.Adagrad, {'lr': 0.1}, data_iter)


# ---- 12.8 RMSProp
def init_rmsprop_states(feature_dim):
    s_w = torch.zeros((feature_dim, 1))
    s_b = torch.zeros(1)
    return (s_w, s_b)


def rmsprop(params, states, hyperparams):
    gamma, eps = hyperparams['gamma'], 1e-6
    for p, s in zip(params, states):
        with torch.no_grad():
            s[:] = gamma * s + (1 - gamma) * torch.square(p.grad)
            p[:] -= hyperparams['lr'] * p.grad / torch.sqrt(s + eps)
        p.grad.data.zero_()


train_ch11(rmsprop, init_rmsprop_states(feature_dim), {'lr': 0.01, 'gamma': 0.9},
           data_iter, feature_dim)
train_concise_ch11(torch.optim.RMSprop, {'lr': 0.01, 'alpha': 0.9}, data_iter)


# ---- 12.9 Adadelta
def init_adadelta_states(feature_dim):
    s_w, s_b = torch.zeros((feature_dim, 1)), torch.zeros(1)
    delta_w, delta_b = torch.zeros((feature_dim, 1)), torch.zeros(1)
    return ((s_w, delta_w), (s_b, delta_b))


def adadelta(params, states, hyperparams):
    rho, eps = hyperparams['rho'], 1e-5
    for p, (s, delta) in zip(params, states):
        with torch.no_grad():
            # In-place updates via [:]
            s[:] = rho * s + (1 - rho) * torch.square(p.grad)
            g = (torch.sqrt(delta + eps) / torch.sqrt(s + eps)) * p.grad
            p[:] -= g
            delta[:] = rho * delta + (1 - rho) * g * g
        p.grad.data.zero_()


train_ch11(adadelta, init_adadelta_states(feature_dim), {'rho': 0.9}, data_iter, feature_dim)
train_concise_ch11(torch.optim.Adadelta, {'rho': 0.9}, data_iter)


# ---- 12.10 Adam
def init_adam_states(feature_dim):
    v_w, v_b = torch.zeros((feature_dim, 1)), torch.zeros(1)
    s_w, s_b = torch.zeros((feature_dim, 1)), torch.zeros(1)
    return ((v_w, s_w), (v_b, s_b))


def adam(params, states, hyperparams):
    beta1, beta2, eps = 0.9, 0.999, 1e-6
    for p, (v, s) in zip(params, states):
        with torch.no_grad():
            v[:] = beta1 * v + (1 - beta1) * p.grad
            s[:] = beta2 * s + (1 - beta2) * torch.square(p.grad)
            v_bias_corr = v / (1 - beta1 ** hyperparams['t'])
            s_bias_corr = s / (1 - beta2 ** hyperparams['t'])
            p[:] -= hyperparams['lr'] * v_bias_corr / (torch.sqrt(s_bias_corr) + eps)
        p.grad.data.zero_()
    hyperparams['t'] += 1


train_ch11(adam, init_adam_states(feature_dim), {'lr': 0.01, 't': 1}, data_iter, feature_dim)
trainer = torch.optim.Adam
train_concise_ch11(trainer, {'lr': 0.01}, data_iter)


# ---- 12.11 Learning Rate Scheduling
class SquareRootScheduler:
    def __init__(self, lr=0.1):
        self.lr = lr

    def __call__(self, num_update):
        return self.lr * pow(num_update + 1.0, -0.5)


class FactorScheduler:
    def __init__(self, factor=1, stop_factor_lr=1e-7, base_lr=0.1):
        self.factor = factor
        self.stop_factor_lr = stop_factor_lr
        self.base_lr = base_lr

    def __call__(self, num_update):
        self.base_lr = max(self.stop_factor_lr, self.base_lr * self.factor)
        return self.base_lr


class CosineScheduler:
    def __init__(self, max_update, base_lr=0.01, final_lr=0,
                 warmup_steps=0, warmup_begin_lr=0):
        self.base_lr_orig = base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.warmup_steps = warmup_steps
        self.warmup_begin_lr = warmup_begin_lr
        self.max_steps = self.max_update - self.warmup_steps

    def get_warmup_lr(self, epoch):
        increase = (self.base_lr_orig - self.warmup_begin_lr) \
            * float(epoch) / float(self.warmup_steps)
        return self.warmup_begin_lr + increase

    def __call__(self, epoch):
        if epoch < self.warmup_steps:
            return self.get_warmup_lr(epoch)
        if epoch <= self.max_update:
            self.base_lr = self.final_lr + (
                self.base_lr_orig - self.final_lr) * (1 + math.cos(
                    math.pi * (epoch - self.warmup_steps) / self.max_steps)) / 2
        return self.base_lr


scheduler = SquareRootScheduler(lr=0.1)
print([round(scheduler(t), 4) for t in range(0, 30, 6)])
scheduler = FactorScheduler(factor=0.9, stop_factor_lr=1e-2, base_lr=2.0)
print([round(scheduler(t), 4) for t in range(0, 50, 10)])
scheduler = CosineScheduler(max_update=20, base_lr=0.3, final_lr=0.01)
print([round(scheduler(t), 4) for t in range(0, 30, 5)])
scheduler = CosineScheduler(20, warmup_steps=5, base_lr=0.3, final_lr=0.01)
print([round(scheduler(t), 4) for t in range(0, 30, 5)])


def net_fn():
    model = nn.Sequential(
        nn.Conv2d(1, 6, kernel_size=5, padding=2), nn.ReLU(),
        nn.MaxPool2d(kernel_size=2, stride=2),
        nn.Conv2d(6, 16, kernel_size=5), nn.ReLU(),
        nn.MaxPool2d(kernel_size=2, stride=2),
        nn.Flatten(),
        nn.Linear(16 * 5 * 5, 32), nn.ReLU(),
        nn.Linear(32, 10))
    return model


def train(net, train_iter, num_epochs, loss, trainer, scheduler=None):
    for epoch in range(num_epochs):
        net.train()
        total, n = 0.0, 0
        for X, y in train_iter:
            trainer.zero_grad()
            y_hat = net(X)
            l = loss(y_hat, y)
            l.backward()
            trainer.step()
            total, n = total + l.item() * X.shape[0], n + X.shape[0]
        if scheduler:
            if scheduler.__module__ == lr_scheduler.__name__:
                # Using PyTorch In-Built scheduler
                scheduler.step()
            else:
                # Using custom defined scheduler
                for param_group in trainer.param_groups:
                    param_group['lr'] = scheduler(epoch)
        print(f'epoch {epoch + 1}, train loss {total / n:.3f}, '
              f'lr {trainer.param_groups[0]["lr"]:.4f}')


templates = (torch.rand(10, 1, 28, 28) > 0.7).float()
y = torch.randint(0, 10, (256,))
X = (0.5 * templates[y] + 0.5 * torch.rand(256, 1, 28, 28))
train_iter = data.DataLoader(data.TensorDataset(X, y), 64, shuffle=True)
loss = nn.CrossEntropyLoss()
lr, num_epochs = 0.3, 3
net = net_fn()
trainer = torch.optim.SGD(net.parameters(), lr=lr)
train(net, train_iter, num_epochs, loss, trainer, FactorScheduler(factor=0.9, base_lr=lr))

net = net_fn()
trainer = torch.optim.SGD(net.parameters(), lr=0.5)
scheduler = lr_scheduler.MultiStepLR(trainer, milestones=[1, 2], gamma=0.5)


def get_lr(trainer, scheduler):
    lr = scheduler.get_last_lr()[0]
    trainer.step()
    scheduler.step()
    return lr


print([get_lr(trainer, scheduler) for t in range(num_epochs)])
trainer = torch.optim.SGD(net.parameters(), lr=0.5)
scheduler = lr_scheduler.MultiStepLR(trainer, milestones=[1, 2], gamma=0.5)
train(net, train_iter, num_epochs, loss, trainer, scheduler)
print(scheduler.state_dict())
