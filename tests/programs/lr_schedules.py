"""The LR schedules training scripts combine, printed the way people check them:
OneCycleLR (cos and linear, three_phase), CosineAnnealingWarmRestarts stepped with
fractional epochs (scheduler.step(epoch + i / iters)), the Hugging Face
get_cosine_schedule_with_warmup written inline as a LambdaLR, SequentialLR and
ChainedScheduler, ReduceLROnPlateau(mode='max'), get_last_lr(), and a scheduler's
state_dict saved mid-run and resumed."""
import math

import torch
import torch.nn as nn
from torch.optim import lr_scheduler

torch.manual_seed(0)
model = nn.Linear(4, 2)


def fmt(lrs):
    return " ".join(f"{lr:.6f}" for lr in lrs)


# OneCycleLR, printed per step
for strategy, three_phase in (("cos", False), ("linear", True)):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = lr_scheduler.OneCycleLR(optimizer, max_lr=0.1, total_steps=12,
                                        anneal_strategy=strategy, three_phase=three_phase)
    lrs, moms = [], []
    for step in range(12):
        optimizer.step()
        lrs.append(optimizer.param_groups[0]["lr"])
        moms.append(optimizer.param_groups[0]["momentum"])
        scheduler.step()
    print(f"OneCycleLR {strategy} three_phase={three_phase}: {fmt(lrs)}")
    print(f"  momentum: {fmt(moms)}")

# CosineAnnealingWarmRestarts with fractional epochs, as its docstring shows
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
scheduler = lr_scheduler.CosineAnnealingWarmRestarts(optimizer, T_0=2, T_mult=2, eta_min=1e-4)
iters = 4
for epoch in range(6):
    seen = []
    for i in range(iters):
        optimizer.step()
        scheduler.step(epoch + i / iters)
        seen.append(optimizer.param_groups[0]["lr"])
    print(f"warm restarts epoch {epoch}: {fmt(seen)} T_i={scheduler.T_i} T_cur={scheduler.T_cur:.2f}")


# transformers.get_cosine_schedule_with_warmup, inline
def get_cosine_schedule_with_warmup(optimizer, num_warmup_steps, num_training_steps, num_cycles=0.5,
                                    last_epoch=-1):
    def lr_lambda(current_step):
        if current_step < num_warmup_steps:
            return float(current_step) / float(max(1, num_warmup_steps))
        progress = float(current_step - num_warmup_steps) / float(max(1, num_training_steps - num_warmup_steps))
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * float(num_cycles) * 2.0 * progress)))

    return lr_scheduler.LambdaLR(optimizer, lr_lambda, last_epoch)


optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01)
scheduler = get_cosine_schedule_with_warmup(optimizer, num_warmup_steps=3, num_training_steps=10)
lrs = []
for step in range(10):
    optimizer.step()
    scheduler.step()
    lrs.append(scheduler.get_last_lr()[0])
print(f"warmup+cosine: {fmt(lrs)}")

# SequentialLR: linear warmup then cosine
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
warmup = lr_scheduler.LinearLR(optimizer, start_factor=0.1, total_iters=3)
cosine = lr_scheduler.CosineAnnealingLR(optimizer, T_max=5, eta_min=0.001)
scheduler = lr_scheduler.SequentialLR(optimizer, schedulers=[warmup, cosine], milestones=[3])
lrs = []
for epoch in range(8):
    lrs.append(optimizer.param_groups[0]["lr"])
    optimizer.step()
    scheduler.step()
print(f"SequentialLR: {fmt(lrs)}")

# ChainedScheduler: both act every step
optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
scheduler = lr_scheduler.ChainedScheduler([
    lr_scheduler.ConstantLR(optimizer, factor=0.1, total_iters=2),
    lr_scheduler.ExponentialLR(optimizer, gamma=0.9)])
lrs = []
for epoch in range(5):
    lrs.append(scheduler.get_last_lr()[0])
    optimizer.step()
    scheduler.step()
print(f"ChainedScheduler: {fmt(lrs)}")

# ReduceLROnPlateau watching an accuracy
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scheduler = lr_scheduler.ReduceLROnPlateau(optimizer, mode='max', factor=0.5, patience=1, min_lr=0.01)
for epoch, acc in enumerate([0.5, 0.6, 0.6, 0.59, 0.61, 0.61, 0.61, 0.6, 0.6, 0.6]):
    scheduler.step(acc)
    print(f"epoch {epoch} acc {acc:.2f} lr {optimizer.param_groups[0]['lr']:.6f} "
          f"best {scheduler.best:.2f} bad epochs {scheduler.num_bad_epochs}")
print(f"plateau get_last_lr: {scheduler.get_last_lr()}")

# a real training run: OneCycleLR on a tiny regression, checkpointed and resumed mid-run
x = torch.randn(64, 4)
y = x @ torch.tensor([[1.0, -2.0], [0.5, 0.0], [0.0, 1.0], [-1.0, 0.5]]) + 0.1


def make(state=None):
    net = nn.Linear(4, 2)
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    sched = lr_scheduler.OneCycleLR(opt, max_lr=0.05, epochs=4, steps_per_epoch=4)
    if state is not None:
        net.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        sched.load_state_dict(state["scheduler"])
    return net, opt, sched


net, opt, sched = make()
for epoch in range(4):
    for i in range(0, 64, 16):
        loss = nn.functional.mse_loss(net(x[i:i + 16]), y[i:i + 16])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    print(f"epoch {epoch} loss {loss.item():.4f} lr {sched.get_last_lr()[0]:.6f}")
    if epoch == 1:
        torch.save({"model": net.state_dict(), "optimizer": opt.state_dict(),
                    "scheduler": sched.state_dict()}, "ckpt.pt")
        print(sorted(sched.state_dict().keys()))

checkpoint = torch.load("ckpt.pt")
net2, opt2, sched2 = make(checkpoint)
print(f"resumed at step {sched2.last_epoch} lr {sched2.get_last_lr()[0]:.6f} "
      f"{opt2.param_groups[0]['lr']:.6f}")
for epoch in range(2, 4):
    for i in range(0, 64, 16):
        loss = nn.functional.mse_loss(net2(x[i:i + 16]), y[i:i + 16])
        opt2.zero_grad()
        loss.backward()
        opt2.step()
        sched2.step()
    print(f"resumed epoch {epoch} loss {loss.item():.4f} lr {sched2.get_last_lr()[0]:.6f}")
print(f"same weights: {torch.allclose(net.weight, net2.weight)}")
