"""Optimizers people copy into their code bases, each a torch.optim.Optimizer subclass with
@torch.no_grad() step(closure=None): Lion (lucidrains/lion-pytorch: sign of the interpolated
momentum, decoupled weight decay p.mul_(1 - lr * wd)), Muon (KellerJordan/Muon: Newton-Schulz
orthogonalisation in bfloat16 with X.mT, Nesterov momentum, shape-based scaling, AdamW for
the non-matrix parameters), and LAMB (cybertronai/pytorch-lamb: the trust ratio with
torch.where(w_norm > 0, ...)); param groups with different lrs, state_dict round trips and
printed optimizer reprs, training a small MLP classifier with each."""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim import Optimizer


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
                grad, lr, wd, beta1, beta2, state = (p.grad, group['lr'], group['weight_decay'],
                                                     *group['betas'], self.state[p])
                if len(state) == 0:
                    state['exp_avg'] = torch.zeros_like(p)
                exp_avg = state['exp_avg']
                p.data.mul_(1. - lr * wd)
                update = exp_avg.clone().mul_(beta1).add(grad, alpha=1. - beta1).sign_()
                p.add_(update, alpha=-lr)
                exp_avg.mul_(beta2).add_(grad, alpha=1. - beta2)
        return loss


def zeropower_via_newtonschulz5(G, steps: int):
    assert G.ndim >= 2
    a, b, c = (3.4445, -4.7750, 2.0315)
    X = G.bfloat16()
    if G.size(-2) > G.size(-1):
        X = X.mT
    X = X / (X.norm(dim=(-2, -1), keepdim=True) + 1e-7)
    for _ in range(steps):
        A = X @ X.mT
        B = b * A + c * A @ A
        X = a * X + B @ X
    if G.size(-2) > G.size(-1):
        X = X.mT
    return X


def muon_update(grad, momentum, beta=0.95, ns_steps=5, nesterov=True):
    momentum.lerp_(grad, 1 - beta)
    update = grad.lerp_(momentum, beta) if nesterov else momentum
    if update.ndim == 4:
        update = update.view(len(update), -1)
    update = zeropower_via_newtonschulz5(update, steps=ns_steps)
    update *= max(1, grad.size(-2) / grad.size(-1))**0.5
    return update


def adam_update(grad, buf1, buf2, step, betas, eps):
    buf1.lerp_(grad, 1 - betas[0])
    buf2.lerp_(grad.square(), 1 - betas[1])
    buf1c = buf1 / (1 - betas[0]**step)
    buf2c = buf2 / (1 - betas[1]**step)
    return buf1c / (buf2c.sqrt() + eps)


class SingleDeviceMuonWithAuxAdam(torch.optim.Optimizer):
    def __init__(self, param_groups):
        for group in param_groups:
            assert "use_muon" in group
            if group["use_muon"]:
                group["lr"] = group.get("lr", 0.02)
                group["momentum"] = group.get("momentum", 0.95)
                group["weight_decay"] = group.get("weight_decay", 0)
            else:
                group["lr"] = group.get("lr", 3e-4)
                group["betas"] = group.get("betas", (0.9, 0.95))
                group["eps"] = group.get("eps", 1e-10)
                group["weight_decay"] = group.get("weight_decay", 0)
        super().__init__(param_groups, dict())

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            if group["use_muon"]:
                for p in group["params"]:
                    if p.grad is None:
                        p.grad = torch.zeros_like(p)
                    state = self.state[p]
                    if len(state) == 0:
                        state["momentum_buffer"] = torch.zeros_like(p)
                    update = muon_update(p.grad, state["momentum_buffer"], beta=group["momentum"])
                    p.mul_(1 - group["lr"] * group["weight_decay"])
                    p.add_(update.reshape(p.shape), alpha=-group["lr"])
            else:
                for p in group["params"]:
                    if p.grad is None:
                        p.grad = torch.zeros_like(p)
                    state = self.state[p]
                    if len(state) == 0:
                        state["exp_avg"] = torch.zeros_like(p)
                        state["exp_avg_sq"] = torch.zeros_like(p)
                        state["step"] = 0
                    state["step"] += 1
                    update = adam_update(p.grad, state["exp_avg"], state["exp_avg_sq"],
                                         state["step"], group["betas"], group["eps"])
                    p.mul_(1 - group["lr"] * group["weight_decay"])
                    p.add_(update, alpha=-group["lr"])
        return loss


class Lamb(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0, adam=False):
        if not 0.0 <= lr:
            raise ValueError("Invalid learning rate: {}".format(lr))
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError("Invalid beta parameter at index 0: {}".format(betas[0]))
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
        self.adam = adam
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
                grad = p.grad.data
                if grad.is_sparse:
                    raise RuntimeError('Lamb does not support sparse gradients.')
                state = self.state[p]
                if len(state) == 0:
                    state['step'] = 0
                    state['exp_avg'] = torch.zeros_like(p.data)
                    state['exp_avg_sq'] = torch.zeros_like(p.data)
                exp_avg, exp_avg_sq = state['exp_avg'], state['exp_avg_sq']
                beta1, beta2 = group['betas']
                state['step'] += 1
                exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                step_size = group['lr']
                weight_norm = p.data.pow(2).sum().sqrt().clamp(0, 10)
                adam_step = exp_avg / exp_avg_sq.sqrt().add(group['eps'])
                if group['weight_decay'] != 0:
                    adam_step.add_(p.data, alpha=group['weight_decay'])
                adam_norm = adam_step.pow(2).sum().sqrt()
                trust_ratio = torch.where(weight_norm > 0,
                                          torch.where(adam_norm > 0, weight_norm / adam_norm, 1.0),
                                          1.0)
                state['weight_norm'] = weight_norm
                state['adam_norm'] = adam_norm
                state['trust_ratio'] = trust_ratio
                if self.adam:
                    trust_ratio = 1
                p.data.add_(adam_step, alpha=-step_size * trust_ratio)
        return loss


def make_data():
    g = torch.Generator().manual_seed(42)
    X = torch.randn(256, 10, generator=g)
    W = torch.randn(10, 3, generator=g)
    y = (X @ W + 0.1 * torch.randn(256, 3, generator=g)).argmax(1)
    return X, y


def make_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(),
                         nn.Linear(32, 3))


def train(name, model, opt, X, y, steps=15):
    for step in range(steps):
        def closure():
            opt.zero_grad()
            loss = F.cross_entropy(model(X), y)
            loss.backward()
            return loss
        loss = opt.step(closure)
        if step % 5 == 0 or step == steps - 1:
            print(f"{name} step {step:2d} loss {loss.item():.4f}")
    acc = (model(X).argmax(1) == y).float().mean().item()
    print(f"{name} accuracy {acc:.3f}")


def main():
    torch.set_printoptions(precision=4, sci_mode=False)
    X, y = make_data()
    print("classes", torch.bincount(y).tolist())

    # Newton-Schulz: the singular values of the result are close to one
    torch.manual_seed(0)
    G = torch.randn(16, 8)
    O = zeropower_via_newtonschulz5(G, steps=5)
    print("orthogonalised", O.shape, O.dtype)
    sv = torch.linalg.svdvals(O.float())
    print("singular values in (0.5, 1.5):", bool(((sv > 0.5) & (sv < 1.5)).all()))
    print("bf16 matmul", (G.bfloat16()[:2] @ G.bfloat16()[:2].mT))
    print("mT of 3-d", torch.randn(2, 3, 4).mT.shape, "lerp", torch.lerp(torch.zeros(3), torch.ones(3), 0.25))

    model = make_model()
    lion = Lion([{'params': model[0].parameters(), 'lr': 3e-3},
                 {'params': list(model[2].parameters()) + list(model[4].parameters())}],
                lr=1e-3, weight_decay=0.1)
    print(lion)
    train("lion", model, lion, X, y)
    sd = lion.state_dict()
    print("state keys", sorted(sd['state'].keys()), "groups", [g['params'] for g in sd['param_groups']])
    print("exp_avg of param 1", sd['state'][1]['exp_avg'][:4])
    clone = make_model()
    clone.load_state_dict(model.state_dict())
    lion2 = Lion(clone.parameters(), lr=1.0)
    try:
        lion2.load_state_dict(sd)
    except ValueError as e:
        print("ValueError:", e)
    lion2 = Lion([{'params': clone[0].parameters()},
                  {'params': list(clone[2].parameters()) + list(clone[4].parameters())}])
    lion2.load_state_dict(copy.deepcopy(sd))
    print("reloaded lrs", [g['lr'] for g in lion2.param_groups], "wd", lion2.param_groups[0]['weight_decay'])
    for m, o in ((model, lion), (clone, lion2)):
        o.zero_grad()
        F.cross_entropy(m(X), y).backward()
        o.step()
    print("resumed steps agree:", all(torch.equal(a, b) for a, b in zip(model.parameters(), clone.parameters())))

    model = make_model()
    hidden_weights = [p for p in model.parameters() if p.ndim >= 2]
    other = [p for p in model.parameters() if p.ndim < 2]
    muon = SingleDeviceMuonWithAuxAdam([
        dict(params=hidden_weights, use_muon=True, lr=0.02, weight_decay=0.01),
        dict(params=other, use_muon=False, lr=3e-3, betas=(0.9, 0.95), weight_decay=0.01)])
    print(muon)
    train("muon", model, muon, X, y)
    print("momentum dtype", muon.state[hidden_weights[0]]["momentum_buffer"].dtype,
          "adam step", muon.state[other[0]]["step"])

    model = make_model()
    lamb = Lamb(model.parameters(), lr=0.02, weight_decay=0.01, betas=(0.9, 0.999))
    print(lamb)
    train("lamb", model, lamb, X, y)
    st = lamb.state[model[0].weight]
    print("trust ratio", st['trust_ratio'], st['trust_ratio'].dtype, "step", st['step'])
    zero = nn.Parameter(torch.zeros(3))
    zero.grad = torch.ones(3)
    lz = Lamb([zero], lr=0.1)
    lz.step()
    print("zero weight trust ratio", lz.state[zero]['trust_ratio'], zero.data)
    try:
        Lamb(model.parameters(), lr=-1)
    except ValueError as e:
        print("ValueError:", e)
    sched = torch.optim.lr_scheduler.OneCycleLR(lamb, max_lr=0.05, total_steps=10)
    lrs = []
    for _ in range(10):
        lamb.step()
        sched.step()
        lrs.append(round(sched.get_last_lr()[0], 5))
    print("one-cycle lrs", lrs)
    print("defaults", lamb.defaults)


if __name__ == "__main__":
    main()
