"""Custom optimizers as repos write them: Lookahead wrapping an inner optimizer, LAMB and
LARS with torch.where(w_norm > 0, ...) trust ratios, Lion (lucidrains/lion-pytorch's
update rule), Optimizer.add_param_group, state_dict round trips with the keys printed,
and the built-in flags people pass: Adam(amsgrad=True), foreach=False, capturable,
maximize=True."""
from collections import OrderedDict, defaultdict

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim import Optimizer

torch.manual_seed(3)
device = "cuda" if torch.cuda.is_available() else "cpu"


class Lion(Optimizer):
    def __init__(self, params, lr: float = 1e-4, betas=(0.9, 0.99), weight_decay: float = 0.0):
        assert lr > 0.
        assert all([0. <= beta <= 1. for beta in betas])
        defaults = dict(lr=lr, betas=betas, weight_decay=weight_decay)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()

        for group in self.param_groups:
            for p in filter(lambda p: p.grad is not None, group['params']):
                grad, lr, wd, beta1, beta2, state = p.grad, group['lr'], group['weight_decay'], *group['betas'], self.state[p]
                # init state - exponential moving average of gradient values
                if len(state) == 0:
                    state['exp_avg'] = torch.zeros_like(p)
                exp_avg = state['exp_avg']
                # stepweight decay
                p.data.mul_(1. - lr * wd)
                # weight update
                update = exp_avg.clone().mul_(beta1).add(grad, alpha=1. - beta1).sign_()
                p.add_(update, alpha=-lr)
                # decay the momentum running average coefficient
                exp_avg.mul_(beta2).add_(grad, alpha=1. - beta2)
        return loss


class Lamb(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.01):
        if not 0.0 <= lr:
            raise ValueError("Invalid learning rate: {}".format(lr))
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
        super(Lamb, self).__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group['params']:
                if p.grad is None:
                    continue
                grad = p.grad
                state = self.state[p]
                if len(state) == 0:
                    state['step'] = 0
                    state['exp_avg'] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    state['exp_avg_sq'] = torch.zeros_like(p, memory_format=torch.preserve_format)
                exp_avg, exp_avg_sq = state['exp_avg'], state['exp_avg_sq']
                beta1, beta2 = group['betas']
                state['step'] += 1
                exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                bias_correction1 = 1 - beta1 ** state['step']
                bias_correction2 = 1 - beta2 ** state['step']
                adam_step = (exp_avg / bias_correction1) / (exp_avg_sq / bias_correction2).sqrt().add(group['eps'])
                if group['weight_decay'] != 0:
                    adam_step.add_(p, alpha=group['weight_decay'])
                w_norm = p.norm(2.0)
                g_norm = adam_step.norm(2.0)
                one = torch.ones_like(w_norm)
                trust_ratio = torch.where(w_norm > 0, torch.where(g_norm > 0, (w_norm / g_norm), one), one)
                state['trust_ratio'] = trust_ratio
                p.add_(adam_step, alpha=-group['lr'] * trust_ratio.item())
        return loss


class LARS(Optimizer):
    """LARS as in the SimCLR / BYOL reference ports (no LARS on biases and norms)."""

    def __init__(self, params, lr=0, weight_decay=0, momentum=0.9, trust_coefficient=0.001):
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum,
                        trust_coefficient=trust_coefficient)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self):
        for g in self.param_groups:
            for p in g['params']:
                dp = p.grad
                if dp is None:
                    continue
                if p.ndim > 1:  # if not normalization gamma/beta or bias
                    dp = dp.add(p, alpha=g['weight_decay'])
                    param_norm = torch.norm(p)
                    update_norm = torch.norm(dp)
                    one = torch.ones_like(param_norm)
                    q = torch.where(param_norm > 0.,
                                    torch.where(update_norm > 0,
                                                (g['trust_coefficient'] * param_norm / update_norm), one),
                                    one)
                    dp = dp.mul(q)
                param_state = self.state[p]
                if 'mu' not in param_state:
                    param_state['mu'] = torch.zeros_like(p)
                mu = param_state['mu']
                mu.mul_(g['momentum']).add_(dp)
                p.add_(mu, alpha=-g['lr'])


class Lookahead(Optimizer):
    def __init__(self, base_optimizer, alpha=0.5, k=6):
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f'Invalid slow update rate: {alpha}')
        if not 1 <= k:
            raise ValueError(f'Invalid lookahead steps: {k}')
        defaults = dict(lookahead_alpha=alpha, lookahead_k=k, lookahead_step=0)
        self._base_optimizer = base_optimizer
        self.param_groups = base_optimizer.param_groups
        self.defaults = base_optimizer.defaults
        self.defaults.update(defaults)
        self.state = defaultdict(dict)
        # super().__init__() is not invoked: the hooks Optimizer.step's wrapper reads
        self._optimizer_step_pre_hooks = OrderedDict()
        self._optimizer_step_post_hooks = OrderedDict()
        # manually add our defaults to the param groups
        for name, default in defaults.items():
            for group in self._base_optimizer.param_groups:
                group.setdefault(name, default)

    @torch.no_grad()
    def update_slow(self, group):
        for fast_p in group["params"]:
            if fast_p.grad is None:
                continue
            param_state = self._base_optimizer.state[fast_p]
            if 'lookahead_slow_buff' not in param_state:
                param_state['lookahead_slow_buff'] = torch.empty_like(fast_p)
                param_state['lookahead_slow_buff'].copy_(fast_p)
            slow = param_state['lookahead_slow_buff']
            slow.add_(fast_p - slow, alpha=group['lookahead_alpha'])
            fast_p.copy_(slow)

    def sync_lookahead(self):
        for group in self._base_optimizer.param_groups:
            self.update_slow(group)

    @torch.no_grad()
    def step(self, closure=None):
        loss = self._base_optimizer.step(closure)
        for group in self._base_optimizer.param_groups:
            group['lookahead_step'] += 1
            if group['lookahead_step'] % group['lookahead_k'] == 0:
                self.update_slow(group)
        return loss

    def state_dict(self):
        return self._base_optimizer.state_dict()

    def load_state_dict(self, state_dict):
        self._base_optimizer.load_state_dict(state_dict)
        self.param_groups = self._base_optimizer.param_groups


X = torch.randn(200, 10)
Y = torch.sin(X[:, :3].sum(1, keepdim=True)) + 0.05 * torch.randn(200, 1)


def make_model():
    torch.manual_seed(7)
    return nn.Sequential(nn.Linear(10, 32), nn.Tanh(), nn.Linear(32, 1))


def train(name, make_opt, steps=60):
    model = make_model()
    opt = make_opt(model)
    losses = []
    for step in range(steps):
        idx = torch.arange(step * 20, step * 20 + 40) % 200
        loss = F.mse_loss(model(X[idx]), Y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    with torch.no_grad():
        final = F.mse_loss(model(X), Y).item()
    print(f"{name:<22s} first {losses[0]:.4f} final {final:.4f}")
    return model, opt


train("Lion", lambda m: Lion(m.parameters(), lr=3e-3, weight_decay=1e-2))
_, lamb = train("LAMB", lambda m: Lamb(m.parameters(), lr=2e-2))
print(f"LAMB trust ratio: {lamb.state[lamb.param_groups[0]['params'][0]]['trust_ratio'].dtype}, "
      f"step {lamb.state[lamb.param_groups[0]['params'][0]]['step']}")
train("LARS", lambda m: LARS(m.parameters(), lr=0.5, weight_decay=1e-6))
_, la = train("Lookahead(AdamW)", lambda m: Lookahead(torch.optim.AdamW(m.parameters(), lr=5e-3), alpha=0.5, k=5))
print(sorted(la.param_groups[0].keys()))
train("Adam amsgrad", lambda m: torch.optim.Adam(m.parameters(), lr=5e-3, amsgrad=True, foreach=False))
# capturable=True is for CUDA graphs: on the CPU the flag stays off
train("Adam capturable", lambda m: torch.optim.Adam(m.parameters(), lr=5e-3, capturable=device == "cuda"))
train("NAdam", lambda m: torch.optim.NAdam(m.parameters(), lr=5e-3, decoupled_weight_decay=True, weight_decay=0.01))
train("RAdam", lambda m: torch.optim.RAdam(m.parameters(), lr=5e-3))
train("Adagrad", lambda m: torch.optim.Adagrad(m.parameters(), lr=5e-2, lr_decay=1e-3))


# maximize=True climbs the objective: maximise the negative loss
model = make_model()
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, maximize=True)
for step in range(30):
    objective = -F.mse_loss(model(X), Y)
    opt.zero_grad()
    objective.backward()
    opt.step()
print(f"maximize=True objective {objective.item():.4f}")

# add_param_group: a new head joins mid-training with its own lr
model = make_model()
extra = nn.Linear(10, 1)
opt = torch.optim.Adam(model.parameters(), lr=1e-3, amsgrad=True)
for step in range(3):
    loss = F.mse_loss(model(X) + extra(X), Y)
    opt.zero_grad()
    loss.backward()
    opt.step()
opt.add_param_group({'params': extra.parameters(), 'lr': 1e-2})
print(f"groups: {len(opt.param_groups)} lrs {[g['lr'] for g in opt.param_groups]} amsgrad {[g['amsgrad'] for g in opt.param_groups]}")
try:
    opt.add_param_group({'params': extra.weight})
except ValueError as e:
    print(f"ValueError: {e}")
loss = F.mse_loss(model(X) + extra(X), Y)
opt.zero_grad()
loss.backward()
opt.step()

sd = opt.state_dict()
print(sorted(sd.keys()), sorted(sd['state'].keys()))
print(sorted(sd['state'][0].keys()), sd['state'][0]['step'], sd['state'][4]['step'])
print(sd['param_groups'][1]['params'], sorted(sd['param_groups'][0].keys()))
torch.save(sd, "opt.pt")
opt2 = torch.optim.Adam(list(model.parameters()), lr=1e-3, amsgrad=True)
opt2.add_param_group({'params': extra.parameters(), 'lr': 1e-2})
opt2.load_state_dict(torch.load("opt.pt"))
print(f"restored max_exp_avg_sq equal: {torch.equal(opt2.state[extra.weight]['max_exp_avg_sq'], opt.state[extra.weight]['max_exp_avg_sq'])}")
print(opt2)
