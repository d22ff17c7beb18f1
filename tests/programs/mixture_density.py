"""Gaussian mixtures two ways (in the style of the pytorch-mdn / "Mixture Density Networks"
tutorials and of a hand-written EM): a mixture density network whose head outputs
Categorical(logits=) weights and Independent(Normal) components joined by
MixtureSameFamily, trained on the inverted sine problem by -log_prob; then EM for a 2-D
GMM with responsibilities by logsumexp, the closed-form M step, and the same model's
log-likelihood checked against MixtureSameFamily(MultivariateNormal)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import (Categorical, Independent, MixtureSameFamily,
                                 MultivariateNormal, Normal)


class MDN(nn.Module):
    def __init__(self, dim_in, dim_out, n_components, hidden=32):
        super().__init__()
        self.dim_out, self.n_components = dim_out, n_components
        self.base = nn.Sequential(nn.Linear(dim_in, hidden), nn.Tanh(),
                                  nn.Linear(hidden, hidden), nn.Tanh())
        self.pi = nn.Linear(hidden, n_components)
        self.mu = nn.Linear(hidden, n_components * dim_out)
        self.log_sigma = nn.Linear(hidden, n_components * dim_out)

    def forward(self, x):
        h = self.base(x)
        logits = self.pi(h)
        mu = self.mu(h).view(-1, self.n_components, self.dim_out)
        sigma = F.softplus(self.log_sigma(h)).view(-1, self.n_components, self.dim_out) + 1e-3
        mix = Categorical(logits=logits)
        comp = Independent(Normal(mu, sigma), 1)
        return MixtureSameFamily(mix, comp)


def inverted_sine(n):
    y = torch.rand(n, 1) * 2 - 1
    x = y + 0.3 * torch.sin(2 * math.pi * y) + 0.05 * torch.randn(n, 1)
    return x, y  # one x has several y: a unimodal regressor averages them


def em_gmm(x, k, iters=20):
    n, d = x.shape
    mu = x[torch.randperm(n)[:k]].clone()
    cov = torch.eye(d).expand(k, d, d).clone()
    log_pi = torch.full((k,), -math.log(k))
    history = []
    for it in range(iters):
        # E step: log N(x | mu_j, cov_j) + log pi_j, normalised by logsumexp
        log_prob = MultivariateNormal(mu, covariance_matrix=cov).log_prob(x.unsqueeze(1))
        joint = log_prob + log_pi
        ll = torch.logsumexp(joint, dim=1)
        resp = torch.exp(joint - ll.unsqueeze(1))
        history.append(ll.mean().item())
        # M step
        nk = resp.sum(0) + 1e-10
        mu = (resp.T @ x) / nk.unsqueeze(1)
        diff = x.unsqueeze(1) - mu  # (n, k, d)
        cov = torch.einsum("nk,nki,nkj->kij", resp, diff, diff) / nk.view(k, 1, 1)
        cov = cov + 1e-4 * torch.eye(d)
        log_pi = torch.log(nk / n)
    return mu, cov, log_pi, history


def main():
    torch.manual_seed(1)
    # the distribution objects and their shapes
    mix = Categorical(logits=torch.zeros(3))
    comp = Independent(Normal(torch.zeros(3, 2), torch.ones(3, 2)), 1)
    gmm = MixtureSameFamily(mix, comp)
    print(mix)
    print(comp)
    print(gmm)
    print("batch", gmm.batch_shape, "event", gmm.event_shape, "probs", mix.probs)
    s = gmm.sample((5,))
    print("sample", s.shape, "log_prob", gmm.log_prob(s).shape)
    print("log_prob(0)", gmm.log_prob(torch.zeros(2)))
    print("mean", gmm.mean, "variance", gmm.variance)
    print("entropy of mix", mix.entropy(), "comp entropy", comp.entropy())
    print("cdf of a Normal", Normal(0.0, 1.0).cdf(torch.tensor([-1.0, 0.0, 1.96])))
    print("icdf", Normal(torch.tensor(0.0), torch.tensor(2.0)).icdf(torch.tensor(0.975)))

    # mixture density network on the inverted sine
    x, y = inverted_sine(512)
    model = MDN(1, 1, n_components=5)
    print(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    for step in range(60):
        idx = torch.randint(0, 512, (128,))
        dist = model(x[idx])
        loss = -dist.log_prob(y[idx]).mean()
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
        if step % 10 == 9:
            print(f"mdn step {step + 1:3d} nll {loss.item():.4f}")
    with torch.no_grad():
        dist = model(torch.tensor([[0.0], [0.5]]))
        print("mixture weights", dist.mixture_distribution.probs.shape,
              "component means", dist.component_distribution.base_dist.loc.shape)
        samples = dist.sample((100,))
        print("samples", samples.shape, bool(torch.isfinite(samples).all()))

    # EM on a 2-D mixture
    true_mu = torch.tensor([[-2.0, 0.0], [2.0, 1.0], [0.0, -2.5]])
    z = torch.randint(0, 3, (300,))
    data = true_mu[z] + 0.5 * torch.randn(300, 2)
    mu, cov, log_pi, history = em_gmm(data, 3)
    for it in (0, 4, 9, 19):
        print(f"em iter {it:2d} mean log-likelihood {history[it]:.4f}")
    print("monotone", all(b >= a - 1e-4 for a, b in zip(history, history[1:])))
    order = mu[:, 0].argsort()
    print("recovered means", mu[order].round(decimals=1))
    fitted = MixtureSameFamily(Categorical(logits=log_pi), MultivariateNormal(mu, cov))
    ll = fitted.log_prob(data).mean()
    print("MixtureSameFamily agrees with EM", abs(ll.item() - history[-1]) < 0.05)
    print("weights", torch.softmax(log_pi, 0)[order].round(decimals=2))


if __name__ == "__main__":
    main()
