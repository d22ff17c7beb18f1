"""Neural processes in the style of deepmind/neural-processes (CNP and ANP notebooks) ported
to PyTorch (soobinseo/Attentive-Neural-Process): 1-D curves sampled from a GP with an RBF
kernel (torch.cdist, torch.linalg.cholesky with jitter, MultivariateNormal), random
context/target splits with torch.randperm, a deterministic path (mean-aggregated or
multi-head cross-attention) and a latent path (Normal with 0.1 + 0.9 * sigmoid/softplus
scale), an ELBO with torch.distributions.kl_divergence, trained with Adam; predictive means
and standard deviations printed."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import MultivariateNormal, Normal, kl_divergence

torch.manual_seed(0)


class GPCurvesReader:
    """Batches of curves from a GP with a squared-exponential kernel."""

    def __init__(self, batch_size, max_num_context, x_size=1, y_size=1, l1_scale=0.6,
                 sigma_scale=1.0, testing=False):
        self._batch_size = batch_size
        self._max_num_context = max_num_context
        self._x_size = x_size
        self._y_size = y_size
        self._l1_scale = l1_scale
        self._sigma_scale = sigma_scale
        self._testing = testing

    def _gaussian_kernel(self, xdata, l1, sigma_f, sigma_noise=2e-2):
        # xdata: [B, N, x_size]; l1: [B, y_size, x_size]; sigma_f: [B, y_size]
        diff = xdata.unsqueeze(1) - xdata.unsqueeze(2)  # [B, N, N, x]
        norm = (diff[:, None, :, :, :] / l1[:, :, None, None, :]) ** 2
        norm = norm.sum(-1)  # [B, y, N, N]
        kernel = (sigma_f ** 2)[:, :, None, None] * torch.exp(-0.5 * norm)
        kernel = kernel + (sigma_noise ** 2) * torch.eye(xdata.shape[1])
        return kernel

    def generate_curves(self):
        num_context = int(torch.randint(3, self._max_num_context, ()))
        if self._testing:
            num_target = 40
            num_total = num_target
            x_values = torch.linspace(-2.0, 2.0, num_target).view(1, -1, 1)
            x_values = x_values.repeat(self._batch_size, 1, 1)
        else:
            num_target = int(torch.randint(2, self._max_num_context, ()))
            num_total = num_context + num_target
            x_values = torch.rand(self._batch_size, num_total, self._x_size) * 4 - 2
        l1 = torch.ones(self._batch_size, self._y_size, self._x_size) * self._l1_scale
        sigma_f = torch.ones(self._batch_size, self._y_size) * self._sigma_scale
        kernel = self._gaussian_kernel(x_values, l1, sigma_f)
        cholesky = torch.linalg.cholesky(kernel.double()).float()
        y_values = torch.matmul(cholesky, torch.randn(self._batch_size, self._y_size,
                                                      num_total, 1))
        y_values = y_values.squeeze(3).permute(0, 2, 1)
        if self._testing:
            target_x, target_y = x_values, y_values
            idx = torch.randperm(num_target)
            context_x = x_values[:, idx[:num_context]]
            context_y = y_values[:, idx[:num_context]]
        else:
            target_x = x_values[:, :num_target + num_context]
            target_y = y_values[:, :num_target + num_context]
            context_x = x_values[:, :num_context]
            context_y = y_values[:, :num_context]
        return (context_x, context_y), target_x, target_y


def rbf_gp_sample(x, lengthscale=0.5, jitter=1e-4):
    """The same prior, through torch.cdist and MultivariateNormal(scale_tril=)."""
    d = torch.cdist(x, x)  # [B, N, N]
    K = torch.exp(-0.5 * (d / lengthscale) ** 2)
    K = K + jitter * torch.eye(x.shape[1]).expand_as(K)
    L = torch.linalg.cholesky(K)
    mvn = MultivariateNormal(torch.zeros(x.shape[:2]), scale_tril=L)
    return mvn, mvn.sample().unsqueeze(-1)


def batch_mlp(sizes):
    layers = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class DeterministicEncoder(nn.Module):
    def __init__(self, sizes, attention=None):
        super().__init__()
        self.mlp = batch_mlp(sizes)
        self.attention = attention
        if attention is not None:
            self.query_mlp = batch_mlp([1, sizes[-1], sizes[-1]])
            self.key_mlp = batch_mlp([1, sizes[-1], sizes[-1]])

    def forward(self, context_x, context_y, target_x):
        r = self.mlp(torch.cat([context_x, context_y], dim=-1))
        if self.attention is None:
            return r.mean(dim=1, keepdim=True).expand(-1, target_x.shape[1], -1)
        q, k = self.query_mlp(target_x), self.key_mlp(context_x)
        out, _ = self.attention(q, k, r, need_weights=False)
        return out


class LatentEncoder(nn.Module):
    def __init__(self, sizes, num_latents):
        super().__init__()
        self.mlp = batch_mlp(sizes)
        hidden = (sizes[-1] + num_latents) // 2
        self.penultimate = nn.Linear(sizes[-1], hidden)
        self.mean = nn.Linear(hidden, num_latents)
        self.log_sigma = nn.Linear(hidden, num_latents)

    def forward(self, x, y):
        hidden = self.mlp(torch.cat([x, y], dim=-1)).mean(dim=1)
        hidden = F.relu(self.penultimate(hidden))
        mu = self.mean(hidden)
        sigma = 0.1 + 0.9 * torch.sigmoid(self.log_sigma(hidden))
        return Normal(loc=mu, scale=sigma)


class Decoder(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        self.mlp = batch_mlp(sizes)

    def forward(self, representation, target_x):
        hidden = self.mlp(torch.cat([representation, target_x], dim=-1))
        mu, log_sigma = torch.split(hidden, 1, dim=-1)
        sigma = 0.1 + 0.9 * F.softplus(log_sigma)
        return Normal(loc=mu, scale=sigma), mu, sigma


class LatentModel(nn.Module):
    """CNP (no latent path, mean aggregation) or ANP (latent path + cross-attention)."""

    def __init__(self, hidden=32, latent=True, attention=True):
        super().__init__()
        att = nn.MultiheadAttention(hidden, 4, batch_first=True) if attention else None
        self.det = DeterministicEncoder([2, hidden, hidden], attention=att)
        self.latent = LatentEncoder([2, hidden, hidden], hidden) if latent else None
        dec_in = hidden * (2 if latent else 1) + 1
        self.decoder = Decoder([dec_in, hidden, hidden, 2])

    def forward(self, query, num_targets, target_y=None):
        (context_x, context_y), target_x = query
        reps = [self.det(context_x, context_y, target_x)]
        kl = None
        if self.latent is not None:
            prior = self.latent(context_x, context_y)
            if target_y is None:
                z = prior.sample()
            else:
                posterior = self.latent(target_x, target_y)
                z = posterior.rsample()
                kl = kl_divergence(posterior, prior).sum(dim=-1, keepdim=True)
            reps.append(z.unsqueeze(1).repeat(1, num_targets, 1))
        dist, mu, sigma = self.decoder(torch.cat(reps, dim=-1), target_x)
        if target_y is None:
            return mu, sigma, None, None
        log_p = dist.log_prob(target_y).squeeze(-1)
        if kl is None:
            loss = -log_p.mean()
        else:
            loss = -(log_p - kl / num_targets).mean()
        return mu, sigma, log_p, kl, loss


# ---- the data --------------------------------------------------------------------------
train_reader = GPCurvesReader(batch_size=8, max_num_context=10)
test_reader = GPCurvesReader(batch_size=1, max_num_context=10, testing=True)
(cx, cy), tx, ty = train_reader.generate_curves()
print("context", cx.shape, cy.shape, "target", tx.shape, ty.shape)
print("first curve", ty[0, :5, 0])
(tcx, tcy), ttx, tty = test_reader.generate_curves()
print("test context", tcx.shape, "test target", ttx.shape, ttx[0, :3, 0])

xs = torch.linspace(-2, 2, 12).view(1, -1, 1).repeat(2, 1, 1)
mvn, sample = rbf_gp_sample(xs)
print(mvn)
print("mvn", mvn.batch_shape, mvn.event_shape, "sample", sample.shape)
print("mvn log_prob", mvn.log_prob(sample.squeeze(-1)))
print("mvn entropy", mvn.entropy(), "variance", mvn.variance[0, :3])
print("cdist", torch.cdist(xs[:1, :4], xs[:1, :4]))
print("cdist p=1", torch.cdist(cx[:1, :3], cx[:1, :3], p=1).shape)
prior = Normal(torch.zeros(3), torch.ones(3))
post = Normal(torch.tensor([0.5, -1.0, 0.0]), torch.tensor([0.5, 2.0, 1.0]))
print(post)
print("kl", kl_divergence(post, prior), "log_prob", post.log_prob(torch.tensor([0.0, 0.0, 0.0])))
print("entropy", post.entropy(), "cdf", post.cdf(torch.tensor([0.5, 0.0, 1.0])),
      "icdf", post.icdf(torch.tensor([0.5, 0.9, 0.1])))
print("mvn kl", kl_divergence(mvn, MultivariateNormal(torch.zeros(2, 12),
                                                       torch.eye(12).expand(2, 12, 12))))
print("rsample grad", post.has_rsample, post.rsample((2,)).shape, post.batch_shape,
      post.event_shape, post.stddev, post.mean)

# ---- train CNP and ANP -----------------------------------------------------------------
for name, model in [("cnp", LatentModel(latent=False, attention=False)),
                    ("anp", LatentModel(latent=True, attention=True))]:
    torch.manual_seed(1)
    print(model)
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    running = []
    for step in range(30):
        (cx, cy), tx, ty = train_reader.generate_curves()
        mu, sigma, log_p, kl, loss = model(((cx, cy), tx), tx.shape[1], ty)
        opt.zero_grad()
        loss.backward()
        opt.step()
        running.append(loss.item())
        if step % 10 == 9:
            kl_txt = "" if kl is None else f" kl {kl.mean().item():.4f}"
            print(f"{name} step {step:2d} loss {sum(running) / len(running):.4f}{kl_txt} "
                  f"n_ctx {cx.shape[1]} n_tgt {tx.shape[1]}")
            running = []
    model.eval()
    with torch.no_grad():
        mu, sigma, _, _ = model(((tcx, tcy), ttx), ttx.shape[1])
    print(f"{name} predictive mean", mu[0, ::8, 0])
    print(f"{name} predictive std ", sigma[0, ::8, 0])
