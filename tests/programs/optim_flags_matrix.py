"""Every built-in optimizer and lr scheduler with the flags training libraries set (as
timm's create_optimizer / Lightning's configure_optimizers / fairseq configure them), on a
small fixed problem, with the parameters printed at full precision every few steps:
SGD (momentum, dampening, nesterov, weight_decay, maximize), Adam/AdamW (amsgrad,
foreach, fused on CPU, maximize), NAdam (momentum_decay, decoupled_weight_decay), RAdam
(decoupled_weight_decay), Adamax, Adagrad (lr_decay, initial_accumulator_value),
Adadelta, RMSprop (centered, momentum), Rprop (etas, step_sizes), ASGD, LBFGS (strong
Wolfe); param groups with their own lr and add_param_group; zero_grad(set_to_none=False);
state_dict() printed and load_state_dict into a fresh optimizer continuing identically;
every lr scheduler's learning rates and state_dict; the warning when scheduler.step()
precedes optimizer.step(); swa_utils (AveragedModel with get_ema_multi_avg_fn, SWALR,
update_bn)."""
import warnings

import torch
import torch.nn as nn
from torch.optim import lr_scheduler as S
from torch.optim.swa_utils import SWALR, AveragedModel, get_ema_multi_avg_fn, update_bn

torch.manual_seed(0)
X = torch.linspace(-1.0, 1.0, 12, dtype=torch.float64).view(6, 2)
Y = torch.tensor([0.5, -1.0, 2.0, 0.0, 1.5, -0.5], dtype=torch.float64)


def make_params():
    w = torch.tensor([0.3, -0.7], dtype=torch.float64, requires_grad=True)
    b = torch.tensor([0.1], dtype=torch.float64, requires_grad=True)
    return w, b


def loss_fn(w, b):
    return ((X @ w + b - Y) ** 2).mean() + 0.1 * (w ** 4).sum()


def fmt(params):
    return [round(v, 12) for p in params for v in p.detach().flatten().tolist()]


def run(name, make_opt, steps=6, closure=False):
    w, b = make_params()
    opt = make_opt([w, b])
    for step in range(steps):
        def closure_fn():
            opt.zero_grad()
            loss = loss_fn(w, b)
            loss.backward()
            return loss
        if closure:
            opt.step(closure_fn)
        else:
            closure_fn()
            opt.step()
        if step % 3 == 2:
            print(f"{name:28s} step {step} {fmt([w, b])}")
    return opt, (w, b)


configs = [
    ("sgd", lambda p: torch.optim.SGD(p, lr=0.1)),
    ("sgd momentum dampening", lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, dampening=0.1)),
    ("sgd nesterov wd", lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True,
                                                  weight_decay=1e-2)),
    ("sgd maximize", lambda p: torch.optim.SGD(p, lr=0.01, maximize=True)),
    ("sgd foreach", lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.5, foreach=True)),
    ("adam", lambda p: torch.optim.Adam(p, lr=0.05)),
    ("adam amsgrad", lambda p: torch.optim.Adam(p, lr=0.05, amsgrad=True)),
    ("adam foreach=False", lambda p: torch.optim.Adam(p, lr=0.05, foreach=False, weight_decay=0.1)),
    ("adam fused", lambda p: torch.optim.Adam(p, lr=0.05, fused=True)),
    ("adam maximize", lambda p: torch.optim.Adam(p, lr=0.05, maximize=True, capturable=False)),
    ("adam betas eps", lambda p: torch.optim.Adam(p, lr=0.05, betas=(0.8, 0.9), eps=1e-6)),
    ("adamw", lambda p: torch.optim.AdamW(p, lr=0.05, weight_decay=0.1)),
    ("adamw amsgrad fused", lambda p: torch.optim.AdamW(p, lr=0.05, amsgrad=True, fused=True)),
    ("nadam", lambda p: torch.optim.NAdam(p, lr=0.05)),
    ("nadam momentum_decay", lambda p: torch.optim.NAdam(p, lr=0.05, momentum_decay=1e-2,
                                                         weight_decay=0.1)),
    ("nadam decoupled", lambda p: torch.optim.NAdam(p, lr=0.05, weight_decay=0.1,
                                                    decoupled_weight_decay=True)),
    ("radam", lambda p: torch.optim.RAdam(p, lr=0.05)),
    ("radam decoupled", lambda p: torch.optim.RAdam(p, lr=0.05, weight_decay=0.1,
                                                    decoupled_weight_decay=True)),
    ("adamax", lambda p: torch.optim.Adamax(p, lr=0.05, weight_decay=0.01)),
    ("adagrad", lambda p: torch.optim.Adagrad(p, lr=0.1)),
    ("adagrad lr_decay init_acc", lambda p: torch.optim.Adagrad(p, lr=0.1, lr_decay=0.01,
                                                                initial_accumulator_value=0.1)),
    ("adadelta", lambda p: torch.optim.Adadelta(p, lr=1.0, rho=0.9, weight_decay=0.01)),
    ("rmsprop", lambda p: torch.optim.RMSprop(p, lr=0.01)),
    ("rmsprop centered momentum", lambda p: torch.optim.RMSprop(p, lr=0.01, centered=True,
                                                                momentum=0.9)),
    ("rprop", lambda p: torch.optim.Rprop(p, lr=0.01)),
    ("rprop etas step_sizes", lambda p: torch.optim.Rprop(p, lr=0.02, etas=(0.3, 1.5),
                                                          step_sizes=(1e-4, 0.1))),
    ("asgd", lambda p: torch.optim.ASGD(p, lr=0.05, t0=2, lambd=1e-3)),
]
for name, make in configs:
    run(name, make)
opt, _ = run("lbfgs", lambda p: torch.optim.LBFGS(p, lr=0.5, max_iter=4, history_size=3),
             steps=3, closure=True)
print("lbfgs state keys", sorted(opt.state[opt.param_groups[0]["params"][0]].keys()))
opt, _ = run("lbfgs strong_wolfe", lambda p: torch.optim.LBFGS(p, lr=1, max_iter=5,
                                                               line_search_fn="strong_wolfe"),
             steps=3, closure=True)
print("lbfgs n_iter", opt.state[opt.param_groups[0]["params"][0]]["n_iter"])

# --- defaults and printed forms ---
w, b = make_params()
for cls in [torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW, torch.optim.NAdam,
            torch.optim.RAdam, torch.optim.Adamax, torch.optim.Adagrad, torch.optim.Adadelta,
            torch.optim.RMSprop, torch.optim.Rprop, torch.optim.ASGD]:
    o = cls([w, b])
    print(cls.__name__, sorted(o.defaults.items()))
print(torch.optim.Adam([w, b], lr=0.01, amsgrad=True))
print(torch.optim.SGD([w, b], lr=0.01, momentum=0.9))

# --- param groups, add_param_group, zero_grad(set_to_none=False) ---
net = nn.Sequential(nn.Linear(2, 3), nn.Tanh(), nn.Linear(3, 1)).double()
opt = torch.optim.SGD([{"params": net[0].parameters()},
                       {"params": net[2].weight, "lr": 0.01, "momentum": 0.5}],
                      lr=0.1, momentum=0.9)
opt.add_param_group({"params": [net[2].bias], "lr": 0.001, "weight_decay": 0.1})
print("groups", [(g["lr"], g["momentum"], g["weight_decay"], len(g["params"]))
                 for g in opt.param_groups])
for step in range(3):
    opt.zero_grad(set_to_none=False)
    ((net(X).squeeze(1) - Y) ** 2).mean().backward()
    opt.step()
opt.zero_grad(set_to_none=False)
print("zeroed grads", [p.grad.abs().sum().item() for p in net.parameters()])
opt.zero_grad()
print("grads after zero_grad()", [p.grad for p in net.parameters()])
try:
    opt.add_param_group({"params": [net[2].bias]})
except ValueError as err:
    print("ValueError:", err)

# --- state_dict round trip continuing identically ---
for name, make in [("adam", lambda p: torch.optim.Adam(p, lr=0.05, amsgrad=True)),
                   ("sgd", lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9)),
                   ("rmsprop", lambda p: torch.optim.RMSprop(p, lr=0.01, centered=True)),
                   ("nadam", lambda p: torch.optim.NAdam(p, lr=0.05)),
                   ("asgd", lambda p: torch.optim.ASGD(p, lr=0.05)),
                   ("rprop", lambda p: torch.optim.Rprop(p, lr=0.01))]:
    opt, (w, b) = run(name + " (saved)", make, steps=3)
    sd = opt.state_dict()
    print(name, "state_dict keys", list(sd.keys()), "state", sorted(sd["state"].keys()))
    print(name, "state 0", {k: ([round(x, 12) for x in v.tolist()] if torch.is_tensor(v)
                                and v.dim() else (v.item() if torch.is_tensor(v) else v))
                            for k, v in sorted(sd["state"][0].items())})
    print(name, "param_groups", sd["param_groups"])
    w2 = w.detach().clone().requires_grad_()
    b2 = b.detach().clone().requires_grad_()
    fresh = make([w2, b2])
    fresh.load_state_dict(sd)
    for _ in range(3):
        for o, ps in ((opt, (w, b)), (fresh, (w2, b2))):
            o.zero_grad()
            loss_fn(*ps).backward()
            o.step()
    print(name, "resumed identically", torch.equal(w, w2) and torch.equal(b, b2), fmt([w2, b2]))
    print(name, "step dtype", [type(v).__name__ if not torch.is_tensor(v) else str(v.dtype)
                              for k, v in sorted(fresh.state[w2].items()) if k == "step"])

# --- lr schedulers ---
def lrs(make_sched, steps=12, metric=None):
    p = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([p], lr=0.1, momentum=0.9)
    sched = make_sched(opt)
    out = []
    for i in range(steps):
        opt.step()
        if metric is None:
            sched.step()
        else:
            sched.step(metric[i])
        out.append(round(opt.param_groups[0]["lr"], 10))
    return sched, opt, out


schedulers = [
    ("StepLR", lambda o: S.StepLR(o, step_size=3, gamma=0.5)),
    ("MultiStepLR", lambda o: S.MultiStepLR(o, milestones=[2, 5, 9], gamma=0.3)),
    ("ExponentialLR", lambda o: S.ExponentialLR(o, gamma=0.9)),
    ("CosineAnnealingLR", lambda o: S.CosineAnnealingLR(o, T_max=5, eta_min=0.01)),
    ("CosineAnnealingWarmRestarts", lambda o: S.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2,
                                                                          eta_min=0.001)),
    ("OneCycleLR cos", lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=13)),
    ("OneCycleLR linear 3phase", lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=13,
                                                        anneal_strategy="linear",
                                                        three_phase=True, pct_start=0.25,
                                                        div_factor=10, final_div_factor=100)),
    ("CyclicLR triangular", lambda o: S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3)),
    ("CyclicLR triangular2", lambda o: S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=2,
                                                 step_size_down=3, mode="triangular2")),
    ("CyclicLR exp_range", lambda o: S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=2,
                                               mode="exp_range", gamma=0.9)),
    ("LinearLR", lambda o: S.LinearLR(o, start_factor=0.25, end_factor=1.0, total_iters=4)),
    ("ConstantLR", lambda o: S.ConstantLR(o, factor=0.5, total_iters=3)),
    ("PolynomialLR", lambda o: S.PolynomialLR(o, total_iters=8, power=2.0)),
    ("LambdaLR", lambda o: S.LambdaLR(o, lr_lambda=lambda e: 1.0 / (1 + e))),
    ("MultiplicativeLR", lambda o: S.MultiplicativeLR(o, lr_lambda=lambda e: 0.95)),
    ("SequentialLR", lambda o: S.SequentialLR(o, schedulers=[
        S.LinearLR(o, start_factor=0.1, total_iters=3), S.ExponentialLR(o, gamma=0.8)],
        milestones=[3])),
    ("ChainedScheduler", lambda o: S.ChainedScheduler([
        S.ConstantLR(o, factor=0.5, total_iters=4), S.ExponentialLR(o, gamma=0.9)])),
]
for name, make in schedulers:
    sched, opt, out = lrs(make)
    print(f"{name:28s} {out}")
    print(f"{name:28s} last {[round(v, 10) for v in sched.get_last_lr()]}")
    sd = sched.state_dict()
    print(f"{name:28s} state keys {sorted(k for k in sd if not callable(sd[k]))}")
_, opt, _ = lrs(lambda o: S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3), steps=4)
print("cyclic momentum", opt.param_groups[0]["momentum"], opt.param_groups[0].get("max_momentum"))
metrics = [1.0, 0.9, 0.95, 0.96, 0.97, 0.85, 0.86, 0.87, 0.88, 0.89, 0.9, 0.91]
for kw in [dict(mode="min", factor=0.5, patience=1),
           dict(mode="max", factor=0.5, patience=2, threshold=0.05),
           dict(mode="min", threshold_mode="abs", threshold=0.02, patience=1, cooldown=2),
           dict(mode="min", factor=0.1, patience=0, min_lr=0.002, eps=1e-4)]:
    sched, opt, out = lrs(lambda o: S.ReduceLROnPlateau(o, **kw), metric=metrics)
    print("plateau", kw, out, sched.num_bad_epochs, sched.best, sched.get_last_lr())

# the warning when the scheduler steps before the optimizer
p = torch.zeros(1, requires_grad=True)
opt = torch.optim.SGD([p], lr=0.1)
sched = S.StepLR(opt, step_size=1)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    sched.step()
print("warnings", [(w.category.__name__, str(w.message)) for w in caught])
sd = S.StepLR(opt, step_size=2, gamma=0.3).state_dict()
print("StepLR state_dict", {k: v for k, v in sorted(sd.items())})

# --- swa_utils ---
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(2, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 1)).double()
ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
swa = AveragedModel(model)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
swa_sched = SWALR(opt, swa_lr=0.01, anneal_epochs=3, anneal_strategy="cos")
for step in range(6):
    opt.zero_grad()
    ((model(X).squeeze(1) - Y) ** 2).mean().backward()
    opt.step()
    ema.update_parameters(model)
    swa.update_parameters(model)
    swa_sched.step()
    print("swa lr", round(opt.param_groups[0]["lr"], 10))
print("n_averaged", ema.n_averaged.item(), swa.n_averaged.item())
print("ema weight", [round(v, 12) for v in ema.module[0].weight.flatten().tolist()])
print("swa weight", [round(v, 12) for v in swa.module[3].weight.flatten().tolist()])
loader = [(X[:3],), (X[3:],)]
update_bn(loader, swa)
print("bn running_mean", [round(v, 12) for v in swa.module[1].running_mean.tolist()])
print("bn momentum", swa.module[1].momentum, swa.module[1].num_batches_tracked.item())

# --- hooks, tensor lr, errors, resuming schedulers ---
w, b = make_params()
opt = torch.optim.Adam([w, b], lr=0.05)
calls = []
h1 = opt.register_step_pre_hook(lambda o, args, kwargs: calls.append("pre"))
h2 = opt.register_step_post_hook(lambda o, args, kwargs: calls.append("post"))
opt.register_state_dict_pre_hook(lambda o: calls.append("sd pre"))
opt.register_state_dict_post_hook(lambda o, sd: calls.append("sd post") or sd)
opt.register_load_state_dict_pre_hook(lambda o, sd: calls.append("load pre"))
opt.register_load_state_dict_post_hook(lambda o: calls.append("load post"))
loss_fn(w, b).backward()
opt.step()
h1.remove()
opt.step()
opt.load_state_dict(opt.state_dict())
print("hooks", calls)
opt = torch.optim.Adam([w, b], lr=torch.tensor(0.05))
loss_fn(w, b).backward()
opt.step()
print("tensor lr", opt.param_groups[0]["lr"], fmt([w, b]))
w.grad = None
opt = torch.optim.SGD([w, b], lr=0.1, momentum=0.9, foreach=True)
loss_fn(w, b).backward()
w.grad = None
opt.step()
print("None grad skipped", sorted(k.shape[0] for k in opt.state.keys()))
bad_ctors = [
    lambda: torch.optim.SGD([w], lr=-0.1),
    lambda: torch.optim.SGD([w], lr=0.1, momentum=-1),
    lambda: torch.optim.SGD([w], lr=0.1, nesterov=True),
    lambda: torch.optim.SGD([w], lr=0.1, weight_decay=-1),
    lambda: torch.optim.Adam([w], betas=(1.0, 0.999)),
    lambda: torch.optim.Adam([w], betas=(0.9, -0.1)),
    lambda: torch.optim.Adam([w], eps=-1),
    lambda: torch.optim.Adam([w], foreach=True, fused=True),
    lambda: torch.optim.Adam([], lr=0.1),
    lambda: torch.optim.Adam(w, lr=0.1),
    lambda: torch.optim.Adam([w, w], lr=0.1),
    lambda: torch.optim.Adagrad([w], lr_decay=-1),
    lambda: torch.optim.Adagrad([w], initial_accumulator_value=-1),
    lambda: torch.optim.Adadelta([w], rho=1.5),
    lambda: torch.optim.RMSprop([w], alpha=-1),
    lambda: torch.optim.Rprop([w], etas=(1.5, 1.2)),
    lambda: torch.optim.NAdam([w], momentum_decay=-1),
    lambda: torch.optim.LBFGS([w, b]).step(),
    lambda: torch.optim.LBFGS([w], line_search_fn="armijo"),
    lambda: torch.optim.SparseAdam([w]).step() if w.grad is not None else None,
    lambda: torch.optim.Adam([w], lr=0.1).load_state_dict(
        torch.optim.Adam([w, b], lr=0.1).state_dict()),
    lambda: torch.optim.Adam([w], lr=0.1).load_state_dict(
        torch.optim.SGD([{"params": [w]}, {"params": [b]}], lr=0.1).state_dict()),
    lambda: S.StepLR(torch.optim.SGD([w], lr=0.1), step_size=2, last_epoch=3),
    lambda: S.ReduceLROnPlateau(torch.optim.SGD([w], lr=0.1), mode="median"),
    lambda: S.ReduceLROnPlateau(torch.optim.SGD([w], lr=0.1), threshold_mode="rel2"),
    lambda: S.ReduceLROnPlateau(torch.optim.SGD([w], lr=0.1), factor=1.0),
    lambda: S.OneCycleLR(torch.optim.SGD([w], lr=0.1), max_lr=1.0),
    lambda: S.OneCycleLR(torch.optim.SGD([w], lr=0.1), max_lr=1.0, total_steps=10,
                         anneal_strategy="exp"),
    lambda: S.CosineAnnealingWarmRestarts(torch.optim.SGD([w], lr=0.1), T_0=0),
    lambda: S.CosineAnnealingWarmRestarts(torch.optim.SGD([w], lr=0.1), T_0=2, T_mult=1.5),
    lambda: S.LinearLR(torch.optim.SGD([w], lr=0.1), start_factor=0.0),
    lambda: S.ConstantLR(torch.optim.SGD([w], lr=0.1), factor=2.0),
    lambda: S.CyclicLR(torch.optim.SGD([w], lr=0.1), base_lr=0.01, max_lr=0.1, mode="cubic"),
    lambda: S.CyclicLR(torch.optim.Adam([w], lr=0.1), base_lr=0.01, max_lr=0.1),
    lambda: S.SequentialLR(torch.optim.SGD([w], lr=0.1),
                           schedulers=[S.StepLR(torch.optim.SGD([w], lr=0.1), 2)],
                           milestones=[2]),
    lambda: S.LambdaLR(torch.optim.SGD([w], lr=0.1), lr_lambda=[lambda e: 1, lambda e: 2]),
    lambda: SWALR(torch.optim.SGD([w], lr=0.1), swa_lr=0.01, anneal_strategy="exp"),
    lambda: SWALR(torch.optim.SGD([w], lr=0.1), swa_lr=0.01, anneal_epochs=-1),
]
for k, bad in enumerate(bad_ctors):
    try:
        bad()
        print(k, "no error")
    except Exception as err:
        print(k, type(err).__name__ + ":", err)
one = S.OneCycleLR(torch.optim.SGD([w], lr=0.1), max_lr=1.0, total_steps=2)
try:
    for _ in range(4):
        one.optimizer.step()
        one.step()
except ValueError as err:
    print("ValueError:", err)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    sched = S.StepLR(torch.optim.SGD([w], lr=0.1), step_size=2)
    sched.optimizer.step()
    print("get_lr", sched.get_lr())
    sched.step(5)
    print("epoch arg", sched.get_last_lr(), sched.last_epoch)
print("warnings", [(c.category.__name__, str(c.message)[:90]) for c in caught])
# resuming: a fresh scheduler with last_epoch needs initial_lr in the groups
o = torch.optim.SGD([w], lr=0.1)
first = S.CosineAnnealingLR(o, T_max=10)
for _ in range(4):
    o.step()
    first.step()
print("initial_lr", o.param_groups[0]["initial_lr"], "lr", round(o.param_groups[0]["lr"], 12))
resumed = S.CosineAnnealingLR(o, T_max=10, last_epoch=3)
print("resumed lr", round(o.param_groups[0]["lr"], 12), resumed.last_epoch,
      [round(v, 12) for v in resumed.get_last_lr()])
restored = S.CosineAnnealingLR(torch.optim.SGD([w], lr=0.1), T_max=10)
restored.load_state_dict(first.state_dict())
print("restored", restored.last_epoch, [round(v, 12) for v in restored.get_last_lr()])
lam = S.LambdaLR(torch.optim.SGD([w], lr=0.1), lr_lambda=lambda e: 0.5 ** e)
print("LambdaLR state", sorted(lam.state_dict().keys()), lam.state_dict()["lr_lambdas"])


class WarmupLinear(S.LRScheduler):
    def __init__(self, optimizer, warmup, total, last_epoch=-1):
        self.warmup, self.total = warmup, total
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        e = self.last_epoch
        scale = e / self.warmup if e < self.warmup else max(0.0, (self.total - e) /
                                                             (self.total - self.warmup))
        return [base * scale for base in self.base_lrs]


o = torch.optim.SGD([w], lr=0.2)
custom = WarmupLinear(o, 3, 8)
seen = []
for _ in range(9):
    o.step()
    custom.step()
    seen.append(round(custom.get_last_lr()[0], 12))
print("custom scheduler", seen, isinstance(custom, S._LRScheduler))
print("ema avg fn", torch.optim.swa_utils.get_ema_avg_fn(0.5)(torch.ones(2), torch.zeros(2),
                                                               torch.tensor(1)))
ema_b = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.5), use_buffers=True)
ema_b.update_parameters(model)
print("use_buffers", [round(v, 12) for v in ema_b.module[1].running_var.tolist()])
