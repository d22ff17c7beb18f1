"""Masked autoregressive flow (Papamakarios et al.; in the style of the pytorch-flows repo of
ikostrikov and karpathy's pytorch-made): MADE masks from torch.randint degrees registered as
buffers, a MaskedLinear that multiplies its weight by the mask in forward, MADE layers giving
(mu, log-scale), log-det as the sum of -alpha, a BatchNorm flow layer with running statistics
in train/eval modes, a Reverse permutation, the sampling loop inverse, a standard Normal base
(torch.distributions.Normal(...).log_prob(...).sum(-1)) and maximum likelihood on a 2-D
two-moons-like dataset built in NumPy, trained with Adam."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Normal, Independent


def get_mask(in_features, out_features, in_flow_features, mask_type=None):
    if mask_type == 'input':
        in_degrees = torch.arange(in_features) % in_flow_features
    else:
        in_degrees = torch.arange(in_features) % (in_flow_features - 1)
    if mask_type == 'output':
        out_degrees = torch.arange(out_features) % in_flow_features - 1
    else:
        out_degrees = torch.arange(out_features) % (in_flow_features - 1)
    return (out_degrees.unsqueeze(-1) >= in_degrees.unsqueeze(0)).float()


class MaskedLinear(nn.Linear):
    """A Linear whose weight is multiplied by a fixed binary mask (karpathy's MADE)."""

    def __init__(self, in_features, out_features, bias=True):
        super().__init__(in_features, out_features, bias)
        self.register_buffer('mask', torch.ones(out_features, in_features))

    def set_mask(self, mask):
        self.mask.data.copy_(mask)

    def forward(self, input):
        return F.linear(input, self.mask * self.weight, self.bias)


class MADE(nn.Module):
    def __init__(self, num_inputs, num_hidden, act='relu'):
        super().__init__()
        activations = {'relu': nn.ReLU, 'sigmoid': nn.Sigmoid, 'tanh': nn.Tanh}
        act_func = activations[act]
        input_mask = get_mask(num_inputs, num_hidden, num_inputs, mask_type='input')
        hidden_mask = get_mask(num_hidden, num_hidden, num_inputs)
        output_mask = get_mask(num_hidden, num_inputs * 2, num_inputs, mask_type='output')
        self.joiner = MaskedLinear(num_inputs, num_hidden)
        self.joiner.set_mask(input_mask)
        self.trunk = nn.Sequential(act_func(), MaskedLinear(num_hidden, num_hidden), act_func(),
                                   MaskedLinear(num_hidden, num_inputs * 2))
        self.trunk[1].set_mask(hidden_mask)
        self.trunk[3].set_mask(output_mask)

    def forward(self, inputs, mode='direct'):
        if mode == 'direct':
            h = self.joiner(inputs)
            m, a = self.trunk(h).chunk(2, 1)
            u = (inputs - m) * torch.exp(-a)
            return u, -a.sum(-1, keepdim=True)
        else:
            x = torch.zeros_like(inputs)
            for i_col in range(inputs.shape[1]):
                h = self.joiner(x)
                m, a = self.trunk(h).chunk(2, 1)
                x[:, i_col] = inputs[:, i_col] * torch.exp(a[:, i_col]) + m[:, i_col]
            return x, -a.sum(-1, keepdim=True)


class BatchNormFlow(nn.Module):
    def __init__(self, num_inputs, momentum=0.0, eps=1e-5):
        super().__init__()
        self.log_gamma = nn.Parameter(torch.zeros(num_inputs))
        self.beta = nn.Parameter(torch.zeros(num_inputs))
        self.momentum = momentum
        self.eps = eps
        self.register_buffer('running_mean', torch.zeros(num_inputs))
        self.register_buffer('running_var', torch.ones(num_inputs))

    def forward(self, inputs, mode='direct'):
        if mode == 'direct':
            if self.training:
                self.batch_mean = inputs.mean(0)
                self.batch_var = (inputs - self.batch_mean).pow(2).mean(0) + self.eps
                self.running_mean.mul_(self.momentum)
                self.running_var.mul_(self.momentum)
                self.running_mean.add_(self.batch_mean.data * (1 - self.momentum))
                self.running_var.add_(self.batch_var.data * (1 - self.momentum))
                mean = self.batch_mean
                var = self.batch_var
            else:
                mean = self.running_mean
                var = self.running_var
            x_hat = (inputs - mean) / var.sqrt()
            y = torch.exp(self.log_gamma) * x_hat + self.beta
            return y, (self.log_gamma - 0.5 * torch.log(var)).sum(-1, keepdim=True)
        else:
            if self.training:
                mean = self.batch_mean
                var = self.batch_var
            else:
                mean = self.running_mean
                var = self.running_var
            x_hat = (inputs - self.beta) / torch.exp(self.log_gamma)
            y = x_hat * var.sqrt() + mean
            return y, (-self.log_gamma + 0.5 * torch.log(var)).sum(-1, keepdim=True)


class Reverse(nn.Module):
    def __init__(self, num_inputs):
        super().__init__()
        self.perm = np.array(np.arange(0, num_inputs)[::-1])
        self.inv_perm = np.argsort(self.perm)

    def forward(self, inputs, mode='direct'):
        if mode == 'direct':
            return inputs[:, self.perm], torch.zeros(inputs.size(0), 1, device=inputs.device)
        else:
            return inputs[:, self.inv_perm], torch.zeros(inputs.size(0), 1, device=inputs.device)


class FlowSequential(nn.Sequential):
    def forward(self, inputs, mode='direct', logdets=None):
        self.num_inputs = inputs.size(-1)
        if logdets is None:
            logdets = torch.zeros(inputs.size(0), 1, device=inputs.device)
        assert mode in ['direct', 'inverse']
        if mode == 'direct':
            for module in self._modules.values():
                inputs, logdet = module(inputs, mode)
                logdets += logdet
        else:
            for module in reversed(self._modules.values()):
                inputs, logdet = module(inputs, mode)
                logdets += logdet
        return inputs, logdets

    def log_probs(self, inputs):
        u, log_jacob = self(inputs)
        log_probs = (-0.5 * u.pow(2) - 0.5 * math.log(2 * math.pi)).sum(-1, keepdim=True)
        return (log_probs + log_jacob).sum(-1, keepdim=True)

    def sample(self, num_samples=None, noise=None):
        if noise is None:
            noise = torch.Tensor(num_samples, self.num_inputs).normal_()
        device = next(self.parameters()).device
        noise = noise.to(device)
        samples = self.forward(noise, mode='inverse')[0]
        return samples


def two_moons(n, rng):
    t = rng.uniform(0, math.pi, size=n)
    which = rng.integers(0, 2, size=n)
    x = np.where(which == 0, np.cos(t), 1 - np.cos(t))
    y = np.where(which == 0, np.sin(t), 0.5 - np.sin(t))
    data = np.stack([x, y], 1) + 0.05 * rng.standard_normal((n, 2))
    return ((data - data.mean(0)) / data.std(0)).astype(np.float32)


def main():
    torch.manual_seed(0)
    torch.set_printoptions(precision=4, sci_mode=False)
    rng = np.random.default_rng(0)

    print("input mask\n", get_mask(3, 6, 3, mask_type='input'))
    print("output mask\n", get_mask(6, 6, 3, mask_type='output'))
    # karpathy-style random degrees with torch.randint
    m = {-1: torch.arange(3)}
    m[0] = torch.randint(m[-1].min().item(), 3 - 1, (8,))
    mask = (m[-1][:, None] <= m[0][None, :]).T
    print("random degrees", m[0].tolist(), "mask", mask.shape, mask.dtype)

    made = MADE(3, 12)
    print(made)
    print("buffers", [(n, tuple(b.shape)) for n, b in made.named_buffers()])
    x = torch.randn(4, 3, requires_grad=True)
    u, logdet = made(x)
    # autoregressive: d u_i / d x_j == 0 for j >= i
    jac = torch.stack([torch.autograd.grad(u[:, i].sum(), x, retain_graph=True)[0][0]
                       for i in range(3)])
    print("jacobian of u[0] wrt x[0]\n", jac)
    print("strictly lower + identity-scaled diag:", bool((jac.triu(1) == 0).all()))

    data = torch.from_numpy(two_moons(512, rng))
    print("data", data.shape, data.dtype, data.mean(0), data.std(0))

    modules = []
    for _ in range(3):
        modules += [MADE(2, 32, act='tanh'), BatchNormFlow(2), Reverse(2)]
    model = FlowSequential(*modules)
    for module in model.modules():
        if isinstance(module, nn.Linear):
            nn.init.orthogonal_(module.weight)
            if hasattr(module, 'bias') and module.bias is not None:
                module.bias.data.fill_(0)
    print(model)

    base = Independent(Normal(torch.zeros(2), torch.ones(2)), 1)
    print("base", base, "event_shape", base.event_shape, "batch_shape", base.batch_shape)
    model.train()
    u, ld = model(data[:8])
    print("log_probs via Normal == closed form:",
          torch.allclose(base.log_prob(u).unsqueeze(-1) + ld, model.log_probs(data[:8]), atol=1e-5))

    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3, weight_decay=1e-6)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(data), batch_size=128,
                                         shuffle=True)
    for epoch in range(6):
        model.train()
        total = 0.0
        for (batch,) in loader:
            optimizer.zero_grad()
            loss = -model.log_probs(batch).mean()
            loss.backward()
            optimizer.step()
            total += loss.item() * batch.size(0)
        for module in model.modules():
            if isinstance(module, BatchNormFlow):
                module.momentum = 0
        with torch.no_grad():
            model(data)
        for module in model.modules():
            if isinstance(module, BatchNormFlow):
                module.momentum = 1
        print(f"epoch {epoch} loss {total / len(data):.4f}")

    model.eval()
    with torch.no_grad():
        u, _ = model(data[:16])
        x_rec = model(u, mode='inverse')[0]
        print("max reconstruction error < 1e-4:", (x_rec - data[:16]).abs().max().item() < 1e-4)
        test_nll = -model.log_probs(data).mean().item()
        print(f"eval nll {test_nll:.4f}")
        model.num_inputs = 2
        samples = model.sample(num_samples=256)
        print("sample shape", tuple(samples.shape), "finite:", bool(torch.isfinite(samples).all()))
    print("running_mean of first BN", [f"{v:.4f}" for v in model[1].running_mean.tolist()])


if __name__ == "__main__":
    main()
