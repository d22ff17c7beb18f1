"""Bayesian linear regression two ways: the exact conjugate posterior (a Gaussian prior on
the weights, known noise; the posterior from torch.linalg.solve / cholesky, the predictive
as a MultivariateNormal), then mean-field variational inference of the same model
(learnable Normal(mu, softplus(rho)) over the weights, reparameterised rsample, the ELBO
with torch.distributions.kl_divergence(q, p) in closed form), compared with the exact
answer; then a learned observation noise and a Monte-Carlo KL check for a pair with no
closed form registered (register_kl)."""
import argparse
import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.distributions import (Gamma, MultivariateNormal, Normal, Independent, kl_divergence,
                                 register_kl)
from torch.distributions.kl import _KL_REGISTRY

parser = argparse.ArgumentParser()
parser.add_argument('--steps', type=int, default=150)
parser.add_argument('--samples', type=int, default=8)
args = parser.parse_args()

torch.manual_seed(1)

# data: y = 0.5 - 1.5 x + 0.8 x^2 + noise, polynomial features
N, noise_std, prior_std = 40, 0.3, 1.0
x = torch.linspace(-1, 1, N)
Phi = torch.stack([torch.ones_like(x), x, x ** 2], dim=1)
true_w = torch.tensor([0.5, -1.5, 0.8])
y = Phi @ true_w + noise_std * torch.randn(N)
print("design", Phi.shape, "targets", y.shape)

# ---------------------------------------------------------------- exact posterior
D = Phi.shape[1]
precision = torch.eye(D) / prior_std ** 2 + Phi.T @ Phi / noise_std ** 2
post_cov = torch.linalg.inv(precision)
post_mean = torch.linalg.solve(precision, Phi.T @ y / noise_std ** 2)
L = torch.linalg.cholesky(post_cov)
posterior = MultivariateNormal(post_mean, scale_tril=L)
print("exact posterior mean", post_mean)
print("exact posterior std ", post_cov.diagonal().sqrt())
x_test = torch.tensor([-1.5, 0.0, 1.5])
Phi_test = torch.stack([torch.ones_like(x_test), x_test, x_test ** 2], 1)
pred_mean = Phi_test @ post_mean
pred_var = (Phi_test @ post_cov * Phi_test).sum(1) + noise_std ** 2
print("predictive mean", pred_mean)
print("predictive std ", pred_var.sqrt())
evidence = MultivariateNormal(torch.zeros(N), prior_std ** 2 * Phi @ Phi.T + noise_std ** 2 * torch.eye(N))
print(f"log evidence {evidence.log_prob(y).item():.4f}")


# ---------------------------------------------------------------- variational inference
class BayesLinear(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.mu = nn.Parameter(torch.zeros(dim))
        self.rho = nn.Parameter(torch.full((dim,), -3.0))
        self.prior = Normal(torch.zeros(dim), prior_std * torch.ones(dim))

    def q(self):
        return Normal(self.mu, F.softplus(self.rho))

    def forward(self, features, n_samples):
        w = self.q().rsample((n_samples,))  # (S, D): reparameterised, so gradients flow
        return w @ features.T  # (S, N)

    def kl(self):
        return kl_divergence(self.q(), self.prior).sum()


model = BayesLinear(D)
opt = torch.optim.Adam(model.parameters(), lr=0.05)
for step in range(args.steps):
    preds = model(Phi, args.samples)
    log_lik = Normal(preds, noise_std).log_prob(y).sum(-1).mean()
    elbo = log_lik - model.kl()
    loss = -elbo
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 50 == 0 or step == args.steps - 1:
        print(f"step {step:4d} -elbo {loss.item():.4f} kl {model.kl().item():.4f}")

with torch.no_grad():
    q = model.q()
    print("vi mean", q.mean)
    print("vi std ", q.stddev)
    print(f"mean error vs exact {(q.mean - post_mean).abs().max().item():.3f}")
    print("vi std below exact (mean-field underestimates):",
          bool((q.stddev <= post_cov.diagonal().sqrt() * 1.25).all()))
    full_q = MultivariateNormal(q.mean, scale_tril=torch.diag(q.stddev))
    print(f"KL(q || exact posterior) {kl_divergence(full_q, posterior).item():.3f}")
    print(f"ELBO <= log evidence: {-loss.item() <= evidence.log_prob(y).item() + 1.0}")

# ---------------------------------------------------------------- closed-form KLs
p, q2 = Normal(0.0, 1.0), Normal(torch.tensor([0.5, 1.0]), torch.tensor([1.0, 2.0]))
print("KL(N||N)", kl_divergence(q2, p))
ip = Independent(Normal(torch.zeros(3), torch.ones(3)), 1)
iq = Independent(Normal(torch.ones(3), 2 * torch.ones(3)), 1)
print("KL(Independent)", kl_divergence(iq, ip))
mvn_a = MultivariateNormal(torch.zeros(2), torch.tensor([[1.0, 0.3], [0.3, 2.0]]))
mvn_b = MultivariateNormal(torch.ones(2), precision_matrix=torch.eye(2) * 2)
print("KL(MVN||MVN)", kl_divergence(mvn_a, mvn_b))
print("KL(Gamma||Gamma)", kl_divergence(Gamma(2.0, 1.0), Gamma(torch.tensor([1.0, 3.0]), 2.0)))
print("(Normal, Normal) registered:", (Normal, Normal) in _KL_REGISTRY)


class Laplace2(torch.distributions.Laplace):
    pass


@register_kl(Laplace2, Normal)
def _kl_laplace2_normal(p, q):
    # Monte-Carlo estimate: no closed form needed for the demo
    s = p.rsample((4000,))
    return (p.log_prob(s) - q.log_prob(s)).mean(0)


lap = Laplace2(torch.tensor(0.0), torch.tensor(1.0))
mc = kl_divergence(lap, Normal(0.0, 1.5))
print(f"registered KL(Laplace||Normal) ~ {mc.item():.2f}")
try:
    kl_divergence(Normal(0.0, 1.0), torch.distributions.Categorical(torch.ones(3)))
except NotImplementedError as e:
    print("NotImplementedError:", e)

# ---------------------------------------------------------------- learned noise, prediction
log_noise = nn.Parameter(torch.tensor(0.0))
opt = torch.optim.Adam(list(model.parameters()) + [log_noise], lr=0.05)
for step in range(60):
    preds = model(Phi, args.samples)
    loss = -(Normal(preds, log_noise.exp()).log_prob(y).sum(-1).mean() - model.kl())
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"learned noise std {log_noise.exp().item():.2f} (true {noise_std})")
model.eval()
with torch.no_grad():
    draws = model(Phi_test, 2000)
    print("mc predictive mean", draws.mean(0))
    print("mc predictive std ", draws.std(0))
