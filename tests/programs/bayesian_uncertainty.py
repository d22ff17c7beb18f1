"""Three ways to put uncertainty on a regression, as the tutorials write them, on a 1-D
toy problem: Bayes by Backprop (after nitarshan's "Weight Uncertainty in Neural
Networks" notebook: Gaussian variational posteriors with sigma = torch.log1p(torch.exp(rho)),
reparameterised samples, torch.distributions.Normal(...).log_prob for the posterior and a
scale-mixture prior, the ELBO's KL term from samples, checked against the closed-form
torch.distributions.kl_divergence); MC dropout (model.train() at test time,
torch.stack([...]).std(0)); and a mixture density network on the inverted sine data
whose likelihood is D.MixtureSameFamily(D.Categorical(logits=...),
D.Independent(D.Normal(...), 1)).
"""
import argparse
import math

import numpy as np
import torch
import torch.distributions as D
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

PI = 0.5
SIGMA_1 = torch.FloatTensor([math.exp(-0)])
SIGMA_2 = torch.FloatTensor([math.exp(-6)])


class Gaussian(object):
    def __init__(self, mu, rho):
        super().__init__()
        self.mu = mu
        self.rho = rho
        self.normal = torch.distributions.Normal(0, 1)

    @property
    def sigma(self):
        return torch.log1p(torch.exp(self.rho))

    def sample(self):
        epsilon = self.normal.sample(self.rho.size())
        return self.mu + self.sigma * epsilon

    def log_prob(self, input):
        return torch.distributions.Normal(self.mu, self.sigma).log_prob(input).sum()


class ScaleMixtureGaussian(object):
    def __init__(self, pi, sigma1, sigma2):
        super().__init__()
        self.pi = pi
        self.sigma1 = sigma1
        self.sigma2 = sigma2
        self.gaussian1 = torch.distributions.Normal(0, sigma1)
        self.gaussian2 = torch.distributions.Normal(0, sigma2)

    def log_prob(self, input):
        prob1 = torch.exp(self.gaussian1.log_prob(input))
        prob2 = torch.exp(self.gaussian2.log_prob(input))
        return (torch.log(self.pi * prob1 + (1 - self.pi) * prob2)).sum()


class BayesianLinear(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        # Weight parameters
        self.weight_mu = nn.Parameter(torch.Tensor(out_features, in_features).uniform_(-0.2, 0.2))
        self.weight_rho = nn.Parameter(torch.Tensor(out_features, in_features).uniform_(-5, -4))
        self.weight = Gaussian(self.weight_mu, self.weight_rho)
        # Bias parameters
        self.bias_mu = nn.Parameter(torch.Tensor(out_features).uniform_(-0.2, 0.2))
        self.bias_rho = nn.Parameter(torch.Tensor(out_features).uniform_(-5, -4))
        self.bias = Gaussian(self.bias_mu, self.bias_rho)
        # Prior distributions
        self.weight_prior = ScaleMixtureGaussian(PI, SIGMA_1, SIGMA_2)
        self.bias_prior = ScaleMixtureGaussian(PI, SIGMA_1, SIGMA_2)
        self.log_prior = 0
        self.log_variational_posterior = 0

    def forward(self, input, sample=False, calculate_log_probs=False):
        if self.training or sample:
            weight = self.weight.sample()
            bias = self.bias.sample()
        else:
            weight = self.weight.mu
            bias = self.bias.mu
        if self.training or calculate_log_probs:
            self.log_prior = self.weight_prior.log_prob(weight) + self.bias_prior.log_prob(bias)
            self.log_variational_posterior = self.weight.log_prob(weight) + self.bias.log_prob(bias)
        else:
            self.log_prior, self.log_variational_posterior = 0, 0

        return F.linear(input, weight, bias)

    def kl_closed_form(self):
        """KL(q || N(0, 1)) summed over the weights, the closed form of the ELBO term."""
        q_w = D.Normal(self.weight_mu, self.weight.sigma)
        q_b = D.Normal(self.bias_mu, self.bias.sigma)
        p = D.Normal(torch.zeros(()), torch.ones(()))
        return D.kl_divergence(q_w, p).sum() + D.kl_divergence(q_b, p).sum()


class BayesianNetwork(nn.Module):
    def __init__(self, hidden=32, noise_std=0.1):
        super().__init__()
        self.l1 = BayesianLinear(1, hidden)
        self.l2 = BayesianLinear(hidden, 1)
        self.noise_std = noise_std

    def forward(self, x, sample=False):
        x = torch.relu(self.l1(x, sample))
        return self.l2(x, sample)

    def log_prior(self):
        return self.l1.log_prior + self.l2.log_prior

    def log_variational_posterior(self):
        return self.l1.log_variational_posterior + self.l2.log_variational_posterior

    def sample_elbo(self, input, target, num_batches, samples=2):
        outputs = torch.zeros(samples, target.size(0), 1)
        log_priors = torch.zeros(samples)
        log_variational_posteriors = torch.zeros(samples)
        for i in range(samples):
            outputs[i] = self(input, sample=True)
            log_priors[i] = self.log_prior()
            log_variational_posteriors[i] = self.log_variational_posterior()
        log_prior = log_priors.mean()
        log_variational_posterior = log_variational_posteriors.mean()
        negative_log_likelihood = -D.Normal(outputs, self.noise_std).log_prob(target).sum(
            dim=(1, 2)).mean()
        loss = (log_variational_posterior - log_prior) / num_batches + negative_log_likelihood
        return loss, log_prior, log_variational_posterior, negative_log_likelihood


def toy_data(rng, n=128):
    x = rng.uniform(-1, 1, (n, 1)).astype(np.float32)
    y = np.sin(3 * x) + 0.1 * rng.randn(n, 1).astype(np.float32)
    return torch.from_numpy(x), torch.from_numpy(y)


def bayes_by_backprop(args, x, y, x_in, x_out):
    net = BayesianNetwork()
    optimizer = optim.Adam(net.parameters(), lr=args.lr)
    num_batches = 4
    batch_size = len(x) // num_batches
    for epoch in range(args.epochs):
        net.train()
        perm = torch.randperm(len(x))
        for batch_idx in range(num_batches):
            idx = perm[batch_idx * batch_size:(batch_idx + 1) * batch_size]
            net.zero_grad()
            loss, log_prior, log_variational_posterior, nll = net.sample_elbo(
                x[idx], y[idx], num_batches)
            loss.backward()
            optimizer.step()
        if epoch % 10 == 0:
            print('BBB epoch {:3d} loss {:.3f} log prior {:.3f} log q {:.3f} nll {:.3f}'.format(
                epoch, loss.item(), log_prior.item(), log_variational_posterior.item(), nll.item()))
    net.eval()
    with torch.no_grad():
        rmse = (net(x) - y).pow(2).mean().sqrt()
        preds_in = torch.stack([net(x_in, sample=True) for _ in range(20)])
        preds_out = torch.stack([net(x_out, sample=True) for _ in range(20)])
        print('BBB rmse (posterior mean) {:.4f} | predictive std in {:.4f} out {:.4f}'.format(
            rmse.item(), preds_in.std(0).mean().item(), preds_out.std(0).mean().item()))
        print('closed-form KL(q||N(0,1)) {:.2f} | mean sigma {:.5f}'.format(
            (net.l1.kl_closed_form() + net.l2.kl_closed_form()).item(),
            net.l1.weight.sigma.mean().item()))


class DropoutNet(nn.Module):
    def __init__(self, p=0.1):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1, 64), nn.ReLU(), nn.Dropout(p),
                                 nn.Linear(64, 64), nn.ReLU(), nn.Dropout(p),
                                 nn.Linear(64, 1))

    def forward(self, x):
        return self.net(x)


def mc_dropout(args, x, y, x_in, x_out):
    model = DropoutNet()
    optimizer = optim.Adam(model.parameters(), lr=args.lr, weight_decay=1e-5)
    for epoch in range(args.epochs):
        model.train()
        optimizer.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        if epoch % 10 == 0:
            print(f'MC dropout epoch {epoch:3d} mse {loss.item():.4f}')

    def predict(x, T=args.mc_samples):
        model.train()  # keep dropout on: each pass is a sample of the weights
        with torch.no_grad():
            preds = torch.stack([model(x) for _ in range(T)])
        return preds.mean(0), preds.std(0)

    mean_in, std_in = predict(x_in)
    mean_out, std_out = predict(x_out)
    print('MC dropout: mean std in {:.4f} out {:.4f}, out > in: {}'.format(
        std_in.mean().item(), std_out.mean().item(), bool(std_out.mean() > std_in.mean())))
    model.eval()
    with torch.no_grad():
        print('eval-mode forward is deterministic:', torch.equal(model(x_in), model(x_in)))


class MixtureDensityNetwork(nn.Module):
    def __init__(self, dim_in, dim_out, n_components, hidden_dim=32):
        super().__init__()
        self.n_components, self.dim_out = n_components, dim_out
        self.base = nn.Sequential(nn.Linear(dim_in, hidden_dim), nn.Tanh(),
                                  nn.Linear(hidden_dim, hidden_dim), nn.Tanh())
        self.pi = nn.Linear(hidden_dim, n_components)
        self.mu = nn.Linear(hidden_dim, n_components * dim_out)
        self.log_sigma = nn.Linear(hidden_dim, n_components * dim_out)

    def forward(self, x):
        h = self.base(x)
        logits = self.pi(h)
        mu = self.mu(h).view(-1, self.n_components, self.dim_out)
        sigma = torch.exp(self.log_sigma(h)).view(-1, self.n_components, self.dim_out)
        mix = D.Categorical(logits=logits)
        comp = D.Independent(D.Normal(mu, sigma), 1)
        return D.MixtureSameFamily(mix, comp)

    def loss(self, x, y):
        return -self(x).log_prob(y).mean()


def mdn(args):
    # hardmaru's inverted sine: x as a function of y has several branches
    n = 256
    y_data = np.float32(np.random.uniform(-10.5, 10.5, (1, n))).T
    r_data = np.float32(np.random.normal(size=(n, 1)))
    x_data = np.float32(np.sin(0.75 * y_data) * 7.0 + y_data * 0.5 + r_data * 1.0)
    x, y = torch.from_numpy(y_data / 10), torch.from_numpy(x_data / 10)
    x, y = y, x  # invert
    model = MixtureDensityNetwork(1, 1, n_components=5)
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    for step in range(args.mdn_steps):
        optimizer.zero_grad()
        loss = model.loss(x, y)
        loss.backward()
        optimizer.step()
        if step % 25 == 0:
            print(f'MDN step {step:3d} nll {loss.item():.4f}')
    with torch.no_grad():
        dist = model(torch.tensor([[0.0]]))
        print('mixture', dist.batch_shape, dist.event_shape, 'weights sum',
              f'{dist.mixture_distribution.probs.sum().item():.4f}')
        samples = model(x).sample()
        print('samples', samples.shape, 'mean', dist.mean.shape, 'variance', dist.variance.shape)


def main():
    parser = argparse.ArgumentParser(description='Bayesian deep learning on a toy regression')
    parser.add_argument('--epochs', type=int, default=30)
    parser.add_argument('--lr', type=float, default=1e-2)
    parser.add_argument('--mc-samples', type=int, default=20)
    parser.add_argument('--mdn-steps', type=int, default=76)
    args = parser.parse_args()
    torch.manual_seed(0)
    np.random.seed(0)
    rng = np.random.RandomState(0)
    x, y = toy_data(rng)
    x_in = torch.linspace(-1, 1, 50).unsqueeze(1)
    x_out = torch.linspace(2, 4, 50).unsqueeze(1)
    bayes_by_backprop(args, x, y, x_in, x_out)
    mc_dropout(args, x, y, x_in, x_out)
    mdn(args)


if __name__ == '__main__':
    main()
