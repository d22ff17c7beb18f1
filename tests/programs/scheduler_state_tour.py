"""Learning-rate schedulers and optimizer state the way training scripts drive them:
OneCycleLR (cos and linear, three_phase), CosineAnnealingWarmRestarts(T_mult=2) stepped
with fractional epochs, ReduceLROnPlateau(mode='max', threshold_mode='abs', cooldown),
SequentialLR, ChainedScheduler, CyclicLR(triangular2), PolynomialLR, get_last_lr(),
state_dict()/load_state_dict() round trips of schedulers and optimizers, add_param_group
and zero_grad(set_to_none=False), around a small regression that trains."""
import copy

import torch
import torch.nn as nn
from torch.optim import SGD, Adam, AdamW
from torch.optim.lr_scheduler import (ChainedScheduler, ConstantLR, CosineAnnealingWarmRestarts,
                                      CyclicLR, ExponentialLR, LambdaLR, LinearLR, MultiStepLR,
                                      OneCycleLR, PolynomialLR, ReduceLROnPlateau, SequentialLR,
                                      StepLR)

torch.manual_seed(0)


def lrs(opt):
    return [round(g['lr'], 6) for g in opt.param_groups]


def fresh(lr=0.1, cls=SGD, **kw):
    return cls([nn.Parameter(torch.zeros(2))], lr=lr, **kw)


# --- OneCycleLR ---
for anneal, three in (('cos', False), ('linear', False), ('cos', True)):
    opt = fresh(cls=SGD, momentum=0.9)
    sched = OneCycleLR(opt, max_lr=1.0, total_steps=10, anneal_strategy=anneal,
                       three_phase=three, pct_start=0.3)
    seen = []
    for _ in range(10):
        seen.append(round(sched.get_last_lr()[0], 5))
        opt.step()
        sched.step()
    print('onecycle', anneal, three, seen, 'momentum', round(opt.param_groups[0]['momentum'], 4))
opt = fresh(cls=Adam)
sched = OneCycleLR(opt, max_lr=0.01, epochs=2, steps_per_epoch=3, div_factor=10.0,
                   final_div_factor=100.0)
print('onecycle adam betas', opt.param_groups[0]['betas'], opt.param_groups[0]['initial_lr'],
      opt.param_groups[0]['max_lr'], opt.param_groups[0]['min_lr'])
print('onecycle total', sched.total_steps)

# --- CosineAnnealingWarmRestarts with fractional epochs ---
opt = fresh()
sched = CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2, eta_min=0.001)
iters = 4
seen = []
for epoch in range(6):
    for i in range(iters):
        sched.step(epoch + i / iters)
        seen.append(round(sched.get_last_lr()[0], 5))
print('warm restarts', seen)
print('warm restarts state', sched.T_i, sched.T_cur, sched.last_epoch)

# --- ReduceLROnPlateau ---
opt = fresh(lr=1.0)
plateau = ReduceLROnPlateau(opt, mode='max', factor=0.5, patience=1, threshold=0.01,
                            threshold_mode='abs', cooldown=2, min_lr=0.05)
for step, metric in enumerate([0.5, 0.6, 0.605, 0.6, 0.61, 0.59, 0.58, 0.57, 0.56, 0.55, 0.5, 0.4]):
    plateau.step(metric)
    print('plateau', step, metric, plateau.get_last_lr(), plateau.num_bad_epochs,
          plateau.cooldown_counter, plateau.best)
print('plateau state', sorted(plateau.state_dict().keys()))

# --- SequentialLR, ChainedScheduler, CyclicLR, PolynomialLR ---
opt = fresh()
warm = LinearLR(opt, start_factor=0.1, total_iters=3)
decay = ExponentialLR(opt, gamma=0.5)
seq = SequentialLR(opt, schedulers=[warm, decay], milestones=[3])
seen = []
for _ in range(7):
    opt.step()
    seq.step()
    seen.append(lrs(opt)[0])
print('sequential', seen, seq.last_epoch)
opt = fresh(lr=1.0)
chain = ChainedScheduler([ConstantLR(opt, factor=0.5, total_iters=2), ExponentialLR(opt, gamma=0.9)])
seen = []
for _ in range(5):
    opt.step()
    chain.step()
    seen.append(lrs(opt)[0])
print('chained', seen, [round(v, 6) for v in chain.get_last_lr()])
opt = fresh(cls=SGD, momentum=0.9)
cyc = CyclicLR(opt, base_lr=0.01, max_lr=0.1, step_size_up=2, mode='triangular2')
seen = []
for _ in range(12):
    opt.step()
    cyc.step()
    seen.append(lrs(opt)[0])
print('cyclic triangular2', seen)
print('cyclic momentum', round(opt.param_groups[0]['momentum'], 4))
opt = fresh(cls=Adam)
cyc = CyclicLR(opt, base_lr=0.001, max_lr=0.01, step_size_up=3, mode='exp_range', gamma=0.9,
               cycle_momentum=False)
print('cyclic exp_range', [round(x, 6) for x in (cyc.step() or lrs(opt)[0] for _ in range(6))])
opt = fresh()
poly = PolynomialLR(opt, total_iters=4, power=2.0)
seen = []
for _ in range(6):
    opt.step()
    poly.step()
    seen.append(lrs(opt)[0])
print('polynomial', seen)
opt = fresh()
ms = MultiStepLR(opt, milestones=[2, 4], gamma=0.1)
lam = LambdaLR(opt, lr_lambda=lambda e: 1.0 / (e + 1))
for _ in range(3):
    opt.step()
    ms.step()
    lam.step()
print('stacked multistep+lambda', lrs(opt), ms.get_last_lr(), lam.get_last_lr())
print('multistep state', ms.state_dict())

# --- SWA: SWALR after a cosine phase, and its state dict ---
opt = fresh(cls=SGD, momentum=0.9)
swa_sched = torch.optim.swa_utils.SWALR(opt, swa_lr=0.02, anneal_epochs=3, anneal_strategy='linear')
seen = []
for _ in range(4):
    opt.step()
    swa_sched.step()
    seen.append(lrs(opt)[0])
print('swalr', seen, sorted(swa_sched.state_dict().keys()))

# --- optimizer state_dicts and param groups ---


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh())
        self.head = nn.Linear(8, 1)

    def forward(self, x):
        return self.head(self.body(x))


net = Net()
print(net)
X = torch.randn(64, 3)
Y = (X[:, :1] * 2 - X[:, 1:2] + 0.5 * X[:, 2:] ** 2)
opt = AdamW(net.body.parameters(), lr=0.01, weight_decay=0.01)
opt.add_param_group({'params': net.head.parameters(), 'lr': 0.02, 'weight_decay': 0.0})
print('groups', len(opt.param_groups), [(g['lr'], g['weight_decay'], len(g['params']))
                                        for g in opt.param_groups])
print(opt)
sched = OneCycleLR(opt, max_lr=[0.05, 0.1], total_steps=40)
for step in range(20):
    opt.zero_grad(set_to_none=False)
    loss = nn.functional.mse_loss(net(X), Y)
    loss.backward()
    opt.step()
    sched.step()
    if step % 4 == 0:
        print(f'step {step:2d} lr {sched.get_last_lr()[0]:.5f} {sched.get_last_lr()[1]:.5f} '
              f'loss {loss.item():.5f}')
opt.zero_grad(set_to_none=False)
print('zero_grad keeps tensors', all(p.grad is not None and p.grad.abs().sum().item() == 0
                                     for p in net.parameters()))
sd = opt.state_dict()
print('optimizer state keys', list(sd.keys()), list(sd['state'].keys()))
print('optimizer state entry', sorted(sd['state'][0].keys()), sd['state'][0]['step'])
print('optimizer groups', [{k: v for k, v in g.items() if k != 'params'} for g in sd['param_groups']][1])
print('optimizer group params', [g['params'] for g in sd['param_groups']])
ssd = sched.state_dict()
print('scheduler state', sorted(ssd.keys()))
print('scheduler counters', ssd['last_epoch'], ssd['_step_count'], ssd['total_steps'])

# resume: a fresh model, optimizer and scheduler loaded from the state dicts
net2 = Net()
net2.load_state_dict(copy.deepcopy(net.state_dict()))
opt2 = AdamW(net2.body.parameters(), lr=0.01, weight_decay=0.01)
opt2.add_param_group({'params': net2.head.parameters(), 'lr': 0.02, 'weight_decay': 0.0})
sched2 = OneCycleLR(opt2, max_lr=[0.05, 0.1], total_steps=40)
opt2.load_state_dict(copy.deepcopy(sd))
sched2.load_state_dict(ssd)
print('resumed lr', sched2.get_last_lr() == sched.get_last_lr(), lrs(opt2) == lrs(opt))
print('resumed exp_avg', torch.equal(opt2.state_dict()['state'][0]['exp_avg'], sd['state'][0]['exp_avg']))
for step in range(20, 40):
    for o, n in ((opt, net), (opt2, net2)):
        o.zero_grad()
        nn.functional.mse_loss(n(X), Y).backward()
        o.step()
    sched.step()
    sched2.step()
    if step % 4 == 0:
        print(f'step {step:2d} lr {sched.get_last_lr()[0]:.5f} {sched.get_last_lr()[1]:.5f} '
              f'loss {nn.functional.mse_loss(net(X), Y).item():.5f}')
print('resumed run agrees', all(torch.allclose(a, b) for a, b in zip(net.parameters(), net2.parameters())))
try:
    opt2.load_state_dict({'state': {}, 'param_groups': sd['param_groups'][:1]})
except ValueError as e:
    print('load error', e)
steplr = StepLR(fresh(), step_size=2)
steplr.load_state_dict({'step_size': 2, 'gamma': 0.5, 'base_lrs': [0.1], 'last_epoch': 3,
                        'verbose': False, '_step_count': 4, '_get_lr_called_within_step': False,
                        '_last_lr': [0.05]})
print('steplr loaded', steplr.gamma, steplr.last_epoch, steplr.get_last_lr())
