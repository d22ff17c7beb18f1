"""Exact Gaussian-process regression written by hand in plain torch (the GPyTorch
"Simple GP Regression" tutorial's data and printout, without GPyTorch): an RBF kernel
from torch.cdist with softplus'd hyper-parameters, the negative log marginal likelihood
through torch.linalg.cholesky / torch.cholesky_solve / diagonal().log().sum() (checked
against torch.distributions.MultivariateNormal), Adam on the hyper-parameters, and the
predictive mean and variance (torch.linalg.solve_triangular) with a 2-sigma region."""
import argparse
import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.distributions import MultivariateNormal


class RBFKernel(nn.Module):
    def __init__(self):
        super().__init__()
        self.raw_lengthscale = nn.Parameter(torch.zeros(1, 1))
        self.raw_outputscale = nn.Parameter(torch.tensor(0.))

    @property
    def lengthscale(self):
        return F.softplus(self.raw_lengthscale)

    @property
    def outputscale(self):
        return F.softplus(self.raw_outputscale)

    def forward(self, x1, x2):
        x1_ = x1.div(self.lengthscale)
        x2_ = x2.div(self.lengthscale)
        dist = torch.cdist(x1_, x2_, p=2)
        return self.outputscale * dist.pow(2).div(-2).exp()


class ExactGPModel(nn.Module):
    def __init__(self, train_x, train_y):
        super().__init__()
        self.train_x = train_x.unsqueeze(-1) if train_x.dim() == 1 else train_x
        self.train_y = train_y
        self.mean_constant = nn.Parameter(torch.zeros(()))
        self.covar_module = RBFKernel()
        self.raw_noise = nn.Parameter(torch.tensor(0.))

    @property
    def noise(self):
        return F.softplus(self.raw_noise) + 1e-4

    def _prior(self):
        n = self.train_x.size(0)
        K = self.covar_module(self.train_x, self.train_x)
        K = K + self.noise * torch.eye(n, dtype=K.dtype)
        L = torch.linalg.cholesky(K)
        return L

    def marginal_log_likelihood(self):
        n = self.train_x.size(0)
        L = self._prior()
        diff = (self.train_y - self.mean_constant).unsqueeze(-1)
        alpha = torch.cholesky_solve(diff, L)
        data_fit = -0.5 * (diff * alpha).sum()
        complexity = -L.diagonal().log().sum()
        return (data_fit + complexity - 0.5 * n * math.log(2 * math.pi)) / n

    def predict(self, test_x):
        test_x = test_x.unsqueeze(-1) if test_x.dim() == 1 else test_x
        L = self._prior()
        K_s = self.covar_module(self.train_x, test_x)
        K_ss_diag = self.covar_module.outputscale.expand(test_x.size(0))
        alpha = torch.cholesky_solve((self.train_y - self.mean_constant).unsqueeze(-1), L)
        mean = self.mean_constant + (K_s.t() @ alpha).squeeze(-1)
        v = torch.linalg.solve_triangular(L, K_s, upper=False)
        var = K_ss_diag - v.pow(2).sum(0) + self.noise
        return mean, var.clamp_min(1e-10)


def main():
    parser = argparse.ArgumentParser(description='Exact GP regression by hand')
    parser.add_argument('--training-iter', type=int, default=50)
    parser.add_argument('--lr', type=float, default=0.1)
    parser.add_argument('--seed', type=int, default=0)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    torch.set_default_dtype(torch.float64)

    # Training data is 100 points in [0,1] inclusive regularly spaced
    train_x = torch.linspace(0, 1, 100)
    # True function is sin(2*pi*x) with Gaussian noise
    train_y = torch.sin(train_x * (2 * math.pi)) + torch.randn(train_x.size()) * math.sqrt(0.04)
    print(train_x.dtype, train_y.shape)

    model = ExactGPModel(train_x, train_y)
    print(model)
    for name, param in model.named_parameters():
        print(f'Parameter name: {name:42} value = {param.data.reshape(-1).tolist()}')

    # the likelihood by hand is the multivariate normal's
    with torch.no_grad():
        L = model._prior()
        mvn = MultivariateNormal(model.mean_constant.expand(100), scale_tril=L)
        print('check: {:.6f} {:.6f}'.format(model.marginal_log_likelihood().item(),
                                            mvn.log_prob(train_y).item() / 100))

    # Use the adam optimizer
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)  # Includes GaussianLikelihood parameters

    model.train()
    for i in range(args.training_iter):
        # Zero gradients from previous iteration
        optimizer.zero_grad()
        # Calc loss and backprop gradients
        loss = -model.marginal_log_likelihood()
        loss.backward()
        if i % 5 == 0:
            print('Iter %d/%d - Loss: %.3f   lengthscale: %.3f   noise: %.3f' % (
                i + 1, args.training_iter, loss.item(),
                model.covar_module.lengthscale.item(),
                model.noise.item()
            ))
        optimizer.step()

    # Get into evaluation (predictive posterior) mode
    model.eval()

    # Test points are regularly spaced along [0,1]
    with torch.no_grad():
        test_x = torch.linspace(0, 1, 51)
        mean, var = model.predict(test_x)
        lower, upper = mean - 2 * var.sqrt(), mean + 2 * var.sqrt()
        truth = torch.sin(test_x * (2 * math.pi))
        rmse = (mean - truth).pow(2).mean().sqrt()
        inside = ((truth >= lower) & (truth <= upper)).float().mean()
    print(f'predictive mean[:5] {mean[:5]}')
    print(f'rmse {rmse.item():.4f}  mean std {var.sqrt().mean().item():.4f}  '
          f'truth inside 2 sigma {inside.item():.2f}')


if __name__ == '__main__':
    main()
