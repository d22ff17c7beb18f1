"""
A 1-D Fourier neural operator (Li et al., neuraloperator's fourier_1d.py), tiny: spectral
convolutions with complex weights (nn.Parameter(scale * torch.rand(..., dtype=torch.cfloat)),
torch.fft.rfft, a complex einsum on the lowest modes written into a zero spectrum,
torch.fft.irfft(n=...)), pointwise Conv1d paths, GELU, the relative L2 loss, Adam with
StepLR. Trained a few epochs to learn the antiderivative operator on synthetic data.
"""
import operator
from functools import reduce

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class SpectralConv1d(nn.Module):
    def __init__(self, in_channels, out_channels, modes1):
        super(SpectralConv1d, self).__init__()
        """
        1D Fourier layer. It does FFT, linear transform, and Inverse FFT.
        """
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.modes1 = modes1  # Number of Fourier modes to multiply, at most floor(N/2) + 1

        self.scale = (1 / (in_channels * out_channels))
        self.weights1 = nn.Parameter(
            self.scale * torch.rand(in_channels, out_channels, self.modes1, dtype=torch.cfloat))

    # Complex multiplication
    def compl_mul1d(self, input, weights):
        # (batch, in_channel, x ), (in_channel, out_channel, x) -> (batch, out_channel, x)
        return torch.einsum("bix,iox->box", input, weights)

    def forward(self, x):
        batchsize = x.shape[0]
        # Compute Fourier coeffcients up to factor of e^(- something constant)
        x_ft = torch.fft.rfft(x)

        # Multiply relevant Fourier modes
        out_ft = torch.zeros(batchsize, self.out_channels, x.size(-1) // 2 + 1,
                             device=x.device, dtype=torch.cfloat)
        out_ft[:, :, :self.modes1] = self.compl_mul1d(x_ft[:, :, :self.modes1], self.weights1)

        # Return to physical space
        x = torch.fft.irfft(out_ft, n=x.size(-1))
        return x


class FNO1d(nn.Module):
    def __init__(self, modes, width):
        super(FNO1d, self).__init__()
        self.modes1 = modes
        self.width = width
        self.padding = 2  # pad the domain if input is non-periodic
        self.fc0 = nn.Linear(2, self.width)  # input channel is 2: (a(x), x)

        self.conv0 = SpectralConv1d(self.width, self.width, self.modes1)
        self.conv1 = SpectralConv1d(self.width, self.width, self.modes1)
        self.w0 = nn.Conv1d(self.width, self.width, 1)
        self.w1 = nn.Conv1d(self.width, self.width, 1)

        self.fc1 = nn.Linear(self.width, 32)
        self.fc2 = nn.Linear(32, 1)

    def forward(self, x):
        grid = self.get_grid(x.shape, x.device)
        x = torch.cat((x, grid), dim=-1)
        x = self.fc0(x)
        x = x.permute(0, 2, 1)
        x = F.pad(x, [0, self.padding])  # pad the domain if input is non-periodic

        x1 = self.conv0(x)
        x2 = self.w0(x)
        x = x1 + x2
        x = F.gelu(x)

        x1 = self.conv1(x)
        x2 = self.w1(x)
        x = x1 + x2

        x = x[..., :-self.padding]
        x = x.permute(0, 2, 1)
        x = self.fc1(x)
        x = F.gelu(x)
        x = self.fc2(x)
        return x

    def get_grid(self, shape, device):
        batchsize, size_x = shape[0], shape[1]
        gridx = torch.tensor(np.linspace(0, 1, size_x), dtype=torch.float)
        gridx = gridx.reshape(1, size_x, 1).repeat([batchsize, 1, 1])
        return gridx.to(device)


class LpLoss(object):
    """The relative Lp loss of neuraloperator's utilities3.py."""

    def __init__(self, d=2, p=2, size_average=True, reduction=True):
        super(LpLoss, self).__init__()
        self.d = d
        self.p = p
        self.reduction = reduction
        self.size_average = size_average

    def rel(self, x, y):
        num_examples = x.size()[0]
        diff_norms = torch.norm(x.reshape(num_examples, -1) - y.reshape(num_examples, -1),
                                self.p, 1)
        y_norms = torch.norm(y.reshape(num_examples, -1), self.p, 1)
        if self.reduction:
            if self.size_average:
                return torch.mean(diff_norms / y_norms)
            else:
                return torch.sum(diff_norms / y_norms)
        return diff_norms / y_norms

    def __call__(self, x, y):
        return self.rel(x, y)


def count_params(model):
    c = 0
    for p in list(model.parameters()):
        c += reduce(operator.mul, list(p.size() + (2,) if p.is_complex() else p.size()))
    return c


def make_data(rng, n, s):
    # inputs: random smooth functions (a few Fourier modes); targets: their running
    # integral (the antiderivative operator), on a grid of s points
    k = np.arange(1, 5)
    coef = rng.standard_normal((n, 4)) / k
    x = np.linspace(0, 1, s)
    a = (coef[:, :, None] * np.sin(2 * np.pi * k[None, :, None] * x[None, None, :])).sum(1)
    u = np.cumsum(a, axis=1) / s
    return (torch.tensor(a, dtype=torch.float32).unsqueeze(-1),
            torch.tensor(u, dtype=torch.float32).unsqueeze(-1))


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    s, modes, width, batch_size = 32, 8, 16, 10
    x_train, y_train = make_data(rng, 60, s)
    x_test, y_test = make_data(rng, 20, s)

    model = FNO1d(modes, width)
    print("weights:", model.conv0.weights1.dtype, tuple(model.conv0.weights1.shape),
          model.conv0.weights1.requires_grad)
    print("params:", count_params(model))
    spectrum = torch.fft.rfft(x_train[:2, :, 0])
    print("spectrum:", spectrum.dtype, tuple(spectrum.shape),
          torch.allclose(torch.fft.irfft(spectrum, n=s), x_train[:2, :, 0], atol=1e-5))

    optimizer = torch.optim.Adam(model.parameters(), lr=0.005, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=10, gamma=0.5)
    myloss = LpLoss(size_average=False)
    for ep in range(12):
        model.train()
        perm = torch.randperm(x_train.shape[0])
        train_l2 = 0.0
        for i in range(0, x_train.shape[0], batch_size):
            idx = perm[i:i + batch_size]
            x, y = x_train[idx], y_train[idx]
            optimizer.zero_grad()
            out = model(x)
            l2 = myloss(out.view(batch_size, -1), y.view(batch_size, -1))
            l2.backward()
            optimizer.step()
            train_l2 += l2.item()
        scheduler.step()
        model.eval()
        with torch.no_grad():
            test_l2 = myloss(model(x_test).view(20, -1), y_test.view(20, -1)).item()
        if ep % 3 == 0 or ep == 11:
            print(f"epoch {ep:2d} train l2 {train_l2 / 60:.4f} test l2 {test_l2 / 20:.4f}")
    print("grad dtype:", model.conv0.weights1.grad.dtype)


if __name__ == "__main__":
    main()
