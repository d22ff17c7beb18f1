"""The adjoint sensitivity method as torchdiffeq's adjoint.py writes it, in miniature: an
autograd.Function (OdeintAdjointMethod) that integrates forward under no_grad, and in
backward integrates the augmented state (y, adj_y, adj_params) backwards in time, the
vector-Jacobian products coming from torch.autograd.grad(..., allow_unused=True) under
torch.enable_grad(), parameters flattened with torch.cat([p.reshape(-1) ...]). Its
gradients are checked against plain backpropagation through the same fixed-step RK4
solver, then it fits a latent spiral (FFJORD-style time-dependent dynamics, nn.Softplus)
with Adam and a MultiStepLR schedule.
"""
import argparse

import torch
import torch.nn as nn


def rk4_alt_step_func(func, t0, dt, y0, f0=None):
    """torchdiffeq's rk4 ("3/8 rule") step."""
    k1 = f0 if f0 is not None else func(t0, y0)
    k2 = func(t0 + dt / 3, tuple(y + dt * k / 3 for y, k in zip(y0, k1)))
    k3 = func(t0 + dt * 2 / 3, tuple(y + dt * (a - b / 3) for y, a, b in zip(y0, k2, k1)))
    k4 = func(t0 + dt, tuple(y + dt * (a - b + c) for y, a, b, c in zip(y0, k1, k2, k3)))
    return tuple((a + 3 * (b + c) + d) * (dt * 0.125) for a, b, c, d in zip(k1, k2, k3, k4))


def odeint(func, y0, t, substeps=2):
    """Fixed-step solve of a tuple state; returns a tuple of (len(t), *y.shape) tensors."""
    ys = [y0]
    y = y0
    for t0, t1 in zip(t[:-1], t[1:]):
        dt = (t1 - t0) / substeps
        for s in range(substeps):
            dy = rk4_alt_step_func(func, t0 + s * dt, dt, y)
            y = tuple(y_ + dy_ for y_, dy_ in zip(y, dy))
        ys.append(y)
    return tuple(torch.stack(parts) for parts in zip(*ys))


def _flatten(sequence):
    flat = [p.contiguous().view(-1) for p in sequence]
    return torch.cat(flat) if len(flat) > 0 else torch.tensor([])


def _flatten_convert_none_to_zeros(sequence, like_sequence):
    flat = [
        p.contiguous().view(-1) if p is not None else torch.zeros_like(q).view(-1)
        for p, q in zip(sequence, like_sequence)
    ]
    return torch.cat(flat) if len(flat) > 0 else torch.tensor([])


class OdeintAdjointMethod(torch.autograd.Function):

    @staticmethod
    def forward(ctx, *args):
        assert len(args) >= 4, 'Internal error: all arguments required.'
        y0, func, t, flat_params = args[:-3], args[-3], args[-2], args[-1]
        ctx.func = func
        with torch.no_grad():
            ans = odeint(func, y0, t)
        ctx.save_for_backward(t, flat_params, *ans)
        return ans

    @staticmethod
    def backward(ctx, *grad_output):
        t, flat_params, *ans = ctx.saved_tensors
        ans = tuple(ans)
        func = ctx.func
        n_tensors = len(ans)
        f_params = tuple(func.parameters())

        def augmented_dynamics(t, y_aug):
            # Dynamics of the original system augmented with
            # the adjoint wrt y, and an integrator wrt t and args.
            y, adj_y = y_aug[:n_tensors], y_aug[n_tensors:2 * n_tensors]

            with torch.set_grad_enabled(True):
                t = t.detach().requires_grad_(True)
                y = tuple(y_.detach().requires_grad_(True) for y_ in y)
                func_eval = func(t, y)
                vjp_t, *vjp_y_and_params = torch.autograd.grad(
                    func_eval, (t,) + y + f_params,
                    tuple(-adj_y_ for adj_y_ in adj_y), allow_unused=True, retain_graph=True
                )
            vjp_y = vjp_y_and_params[:n_tensors]
            vjp_params = vjp_y_and_params[n_tensors:]

            # autograd.grad returns None if no gradient, set to zero.
            vjp_t = torch.zeros_like(t) if vjp_t is None else vjp_t
            vjp_y = tuple(torch.zeros_like(y_) if vjp_y_ is None else vjp_y_
                          for vjp_y_, y_ in zip(vjp_y, y))
            vjp_params = _flatten_convert_none_to_zeros(vjp_params, f_params)

            return (*func_eval, *vjp_y, vjp_t, vjp_params)

        T = ans[0].shape[0]
        with torch.no_grad():
            adj_y = tuple(grad_output_[-1] for grad_output_ in grad_output)
            adj_params = torch.zeros_like(flat_params)
            adj_time = torch.tensor(0.).to(t)
            time_vjps = []
            for i in range(T - 1, 0, -1):
                ans_i = tuple(ans_[i] for ans_ in ans)
                grad_output_i = tuple(grad_output_[i] for grad_output_ in grad_output)
                func_i = func(t[i], ans_i)

                # Compute the effect of moving the current time measurement point.
                dLd_cur_t = sum(
                    torch.dot(func_i_.reshape(-1), grad_output_i_.reshape(-1)).reshape(1)
                    for func_i_, grad_output_i_ in zip(func_i, grad_output_i)
                )
                adj_time = adj_time - dLd_cur_t
                time_vjps.append(dLd_cur_t)

                # Run the augmented system backwards in time.
                aug_y0 = (*ans_i, *adj_y, adj_time, adj_params)
                aug_ans = odeint(augmented_dynamics, aug_y0, torch.tensor([t[i], t[i - 1]]))

                # Unpack aug_ans.
                adj_y = aug_ans[n_tensors:2 * n_tensors]
                adj_time = aug_ans[2 * n_tensors]
                adj_params = aug_ans[2 * n_tensors + 1]

                adj_y = tuple(adj_y_[1] if len(adj_y_) > 0 else adj_y_ for adj_y_ in adj_y)
                if len(adj_time) > 0:
                    adj_time = adj_time[1]
                if len(adj_params) > 0:
                    adj_params = adj_params[1]

                adj_y = tuple(adj_y_ + grad_output_[i - 1]
                              for adj_y_, grad_output_ in zip(adj_y, grad_output))

                del aug_y0, aug_ans

            time_vjps.append(adj_time)
            time_vjps = torch.cat(time_vjps[::-1])

            return (*adj_y, None, time_vjps, adj_params)


def odeint_adjoint(func, y0, t):
    tensor_input = False
    if torch.is_tensor(y0):
        class TupleFunc(nn.Module):
            def __init__(self, base_func):
                super(TupleFunc, self).__init__()
                self.base_func = base_func

            def forward(self, t, y):
                return (self.base_func(t, y[0]),)

        tensor_input = True
        y0 = (y0,)
        func = TupleFunc(func)

    flat_params = _flatten(func.parameters())
    ys = OdeintAdjointMethod.apply(*y0, func, t, flat_params)

    if tensor_input:
        ys = ys[0]
    return ys


class ODEfunc(nn.Module):
    """Time-dependent dynamics: t is concatenated to the state, as FFJORD's ConcatLinear."""

    def __init__(self, dim=2, hidden=32):
        super(ODEfunc, self).__init__()
        self.fc1 = nn.Linear(dim + 1, hidden)
        self.act = nn.Softplus()
        self.fc2 = nn.Linear(hidden, dim)
        self.nfe = 0

    def forward(self, t, y):
        self.nfe += 1
        tt = torch.ones_like(y[..., :1]) * t
        return self.fc2(self.act(self.fc1(torch.cat([tt, y], -1))))


def spiral(n):
    t = torch.linspace(0., 4., n)
    r = 1.5 - 0.25 * t
    return t, torch.stack([r * torch.cos(1.8 * t), r * torch.sin(1.8 * t)], -1)


def main():
    parser = argparse.ArgumentParser(description='adjoint method')
    parser.add_argument('--niters', type=int, default=30)
    parser.add_argument('--lr', type=float, default=0.02)
    parser.add_argument('--points', type=int, default=12)
    args = parser.parse_args()
    torch.manual_seed(0)

    func = ODEfunc()
    print(func)
    t, target = spiral(args.points)
    y0 = target[0].unsqueeze(0)

    # the adjoint's gradients are backpropagation's (same solver, same steps)
    pred = odeint_adjoint(func, y0, t)
    print('prediction', pred.shape, pred.grad_fn.__class__.__name__)
    loss = (pred.squeeze(1) - target).pow(2).mean()
    adjoint_grads = torch.autograd.grad(loss, list(func.parameters()))
    direct = odeint(lambda tt, y: (func(tt, y[0]),), (y0,), t)[0]
    direct_loss = (direct.squeeze(1) - target).pow(2).mean()
    direct_grads = torch.autograd.grad(direct_loss, list(func.parameters()))
    max_diff = max((a - b).abs().max().item() for a, b in zip(adjoint_grads, direct_grads))
    print(f'loss {loss.item():.6f} vs {direct_loss.item():.6f}; '
          f'adjoint grads match backprop: {max_diff < 1e-4}')

    optimizer = torch.optim.Adam(func.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[20], gamma=0.3)
    for itr in range(1, args.niters + 1):
        optimizer.zero_grad()
        func.nfe = 0
        pred_y = odeint_adjoint(func, y0, t).squeeze(1)
        loss = torch.mean(torch.abs(pred_y - target))
        nfe_forward = func.nfe
        func.nfe = 0
        loss.backward()
        optimizer.step()
        scheduler.step()
        if itr % 10 == 0 or itr == 1:
            print('Iter {:04d} | Loss {:.6f} | NFE-F {} | NFE-B {} | lr {:.4f}'.format(
                itr, loss.item(), nfe_forward, func.nfe, scheduler.get_last_lr()[0]))


if __name__ == '__main__':
    main()
