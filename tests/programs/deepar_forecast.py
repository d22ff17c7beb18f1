"""DeepAR probabilistic forecasting in the style of GluonTS's torch DeepAR and
pytorch-forecasting: lagged targets and time covariates fed to an nn.LSTM, mean scaling
with clamp(min=...), distribution heads mapping hidden states to StudentT(df, loc, scale)
and NegativeBinomial(total_count, logits) parameters through F.softplus, training by
negative log_prob, ancestral sampling with .sample() over the prediction horizon, and
quantile forecasts from torch.quantile over the sample paths."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import NegativeBinomial, StudentT

torch.manual_seed(0)
np.random.seed(0)

CONTEXT, HORIZON, NUM_SERIES = 24, 8, 6
LAGS = [1, 2, 7]


def make_series(n, length, counts):
    t = np.arange(length)
    level = np.random.uniform(5, 40, size=(n, 1))
    season = 1 + 0.5 * np.sin(2 * np.pi * t / 7)[None, :]
    trend = 1 + 0.01 * t[None, :]
    mean = level * season * trend
    if counts:
        return np.random.poisson(mean).astype(np.float32)
    return (mean + np.random.normal(0, 2, size=mean.shape)).astype(np.float32)


def time_features(length):
    t = torch.arange(length, dtype=torch.float32)
    day_of_week = (t % 7) / 6.0 - 0.5
    age = torch.log10(2.0 + t)
    return torch.stack([day_of_week, age], dim=-1)


class MeanScaler(nn.Module):
    def __init__(self, dim=1, keepdim=True, minimum_scale=1e-10):
        super().__init__()
        self.dim = dim
        self.keepdim = keepdim
        self.register_buffer("minimum_scale", torch.tensor(minimum_scale))

    def forward(self, data, observed_indicator):
        num_observed = observed_indicator.sum(self.dim, keepdim=True)
        sum_observed = (data.abs() * observed_indicator).sum(self.dim, keepdim=True)
        default_scale = sum_observed.sum(dim=0) / torch.clamp(num_observed.sum(dim=0), min=1)
        scale = sum_observed / torch.clamp(num_observed, min=1)
        scale = torch.where(sum_observed > torch.zeros_like(sum_observed), scale, default_scale)
        scale = torch.max(scale, self.minimum_scale).detach()
        if not self.keepdim:
            scale = scale.squeeze(dim=self.dim)
        return data / scale, scale


class StudentTOutput(nn.Module):
    args_dim = {"df": 1, "loc": 1, "scale": 1}

    def __init__(self, in_features):
        super().__init__()
        self.proj = nn.ModuleDict({k: nn.Linear(in_features, d) for k, d in self.args_dim.items()})

    @staticmethod
    def squareplus(x):
        return (x + torch.sqrt(torch.square(x) + 4.0)) / 2.0

    def forward(self, h, scale):
        df = 2.0 + F.softplus(self.proj["df"](h)).squeeze(-1)
        loc = self.proj["loc"](h).squeeze(-1)
        sigma = F.softplus(self.proj["scale"](h)).squeeze(-1).clamp_min(torch.finfo(h.dtype).eps)
        return StudentT(df, loc * scale, sigma * scale)


class NegativeBinomialOutput(nn.Module):
    def __init__(self, in_features):
        super().__init__()
        self.proj = nn.Linear(in_features, 2)

    def forward(self, h, scale):
        total_count, logits = self.proj(h).unbind(-1)
        total_count = F.softplus(total_count)
        # scale the mean (total_count * exp(logits)) by the series scale
        logits = logits + torch.log(scale)
        return NegativeBinomial(total_count=total_count, logits=logits)


class DeepAR(nn.Module):
    def __init__(self, num_series, likelihood, hidden_size=16, num_layers=2, embedding_dim=3):
        super().__init__()
        self.embedder = nn.Embedding(num_series, embedding_dim)
        self.scaler = MeanScaler(dim=1, keepdim=True)
        input_size = len(LAGS) + 2 + embedding_dim + 1
        self.rnn = nn.LSTM(input_size=input_size, hidden_size=hidden_size,
                           num_layers=num_layers, dropout=0.1, batch_first=True)
        head = StudentTOutput if likelihood == "student_t" else NegativeBinomialOutput
        self.distr_output = head(hidden_size)

    def features(self, scaled_lags, time_feat, series_id, scale):
        T = scaled_lags.shape[1]
        embedded = self.embedder(series_id).unsqueeze(1).expand(-1, T, -1)
        log_scale = scale.log().unsqueeze(1).expand(-1, T, -1)
        return torch.cat((scaled_lags, time_feat, embedded, log_scale), dim=-1)

    @staticmethod
    def lagged(sequence, lags, length):
        # sequence: (B, S); returns (B, length, len(lags)) of sequence[t - lag]
        S = sequence.shape[1]
        return torch.stack([sequence[:, S - length - lag: S - lag] for lag in lags], dim=-1)

    def unroll(self, past_target, time_feat, series_id, state=None):
        observed = torch.ones_like(past_target[:, -CONTEXT:])
        _, scale = self.scaler(past_target[:, -CONTEXT:], observed)
        scaled = past_target / scale
        lags = self.lagged(scaled, LAGS, CONTEXT - max(LAGS))
        inputs = self.features(lags, time_feat[:, max(LAGS):CONTEXT], series_id, scale)
        output, state = self.rnn(inputs, state)
        return output, state, scale

    def loss(self, target, time_feat, series_id):
        output, _, scale = self.unroll(target[:, :CONTEXT], time_feat, series_id)
        distr = self.distr_output(output, scale)
        return -distr.log_prob(target[:, max(LAGS) + 1:CONTEXT + 1]).mean()

    @torch.no_grad()
    def sample(self, past_target, time_feat, series_id, num_samples=50):
        _, state, scale = self.unroll(past_target, time_feat, series_id)
        repeat = lambda x: x.repeat_interleave(num_samples, dim=0)  # noqa: E731
        state = tuple(s.repeat_interleave(num_samples, dim=1) for s in state)
        history = repeat(past_target)
        scale, series_id, time_feat = repeat(scale), repeat(series_id), repeat(time_feat)
        samples = []
        for k in range(HORIZON):
            lags = self.lagged(torch.cat([history, history[:, -1:]], 1) / scale, LAGS, 1)
            t = CONTEXT + k
            inputs = self.features(lags, time_feat[:, t:t + 1], series_id, scale)
            output, state = self.rnn(inputs, state)
            next_sample = self.distr_output(output, scale).sample()
            samples.append(next_sample)
            history = torch.cat([history, next_sample], dim=1)
        return torch.cat(samples, dim=1).reshape(-1, num_samples, HORIZON)


# distributions on their own: shapes, log_prob, moments, sampling
st = StudentT(df=torch.tensor([3.0, 10.0]), loc=torch.tensor([0.0, 1.0]),
              scale=torch.tensor([1.0, 2.0]))
print(st)
print("student-t log_prob", st.log_prob(torch.tensor([0.5, -1.0])))
print("student-t mean/variance", st.mean, st.variance)
print("student-t entropy", st.entropy())
print("student-t sample", st.sample((4,)).shape, st.rsample().requires_grad,
      st.batch_shape, st.event_shape)
nb = NegativeBinomial(total_count=torch.tensor([2.0, 5.0]), logits=torch.tensor([0.3, -1.0]))
print(nb)
print("neg-binomial probs", nb.probs, "mean", nb.mean, "variance", nb.variance)
print("neg-binomial log_prob", nb.log_prob(torch.tensor([0.0, 3.0])))
print("neg-binomial support", nb.support, nb.has_rsample)
counts = nb.sample((2000,))
print("neg-binomial sample", counts.shape, counts.dtype, bool((counts >= 0).all()),
      bool((counts == counts.round()).all()))
nb_p = NegativeBinomial(total_count=3.0, probs=torch.tensor(0.25))
print("neg-binomial probs form", nb_p.logits, nb_p.mean, nb_p.mode)

# mean scaling
scaler = MeanScaler()
data = torch.tensor([[1.0, 3.0, 0.0], [0.0, 0.0, 0.0]])
scaled, scale = scaler(data, torch.ones_like(data))
print("mean scaler", scaled, scale.squeeze(-1))

time_feat = time_features(CONTEXT + HORIZON).unsqueeze(0).expand(NUM_SERIES, -1, -1)
series_id = torch.arange(NUM_SERIES)
print("time features", tuple(time_feat.shape), time_feat[0, :3])

for likelihood, counts_data in (("student_t", False), ("negative_binomial", True)):
    torch.manual_seed(1)
    target = torch.from_numpy(make_series(NUM_SERIES, CONTEXT + HORIZON, counts_data))
    print(likelihood, "target", tuple(target.shape), target.dtype, target[0, :5])
    model = DeepAR(NUM_SERIES, likelihood)
    if likelihood == "student_t":
        print(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=1e-8)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=3e-2, total_steps=12)
    model.train()
    for step in range(12):
        optimizer.zero_grad()
        loss = model.loss(target, time_feat, series_id)
        loss.backward()
        grad_norm = nn.utils.clip_grad_norm_(model.parameters(), 10.0)
        optimizer.step()
        scheduler.step()
        if step % 3 == 0 or step == 11:
            print(f"{likelihood} step {step:2d} loss {loss.item():.4f} "
                  f"grad norm {grad_norm.item():.3f}")
    model.eval()
    paths = model.sample(target[:, :CONTEXT], time_feat, series_id, num_samples=40)
    print(likelihood, "sample paths", tuple(paths.shape), paths.dtype,
          bool(torch.isfinite(paths).all()))
    q = torch.quantile(paths, torch.tensor([0.1, 0.5, 0.9]), dim=1)
    print(likelihood, "quantiles", tuple(q.shape), bool((q[0] <= q[1]).all() and
                                                        (q[1] <= q[2]).all()))
    median = paths.median(dim=1).values
    truth = target[:, CONTEXT:]
    mase_scale = (target[:, 7:CONTEXT] - target[:, :CONTEXT - 7]).abs().mean(1, keepdim=True)
    mase = ((median - truth).abs() / mase_scale).mean()
    coverage = ((truth >= q[0]) & (truth <= q[2])).float().mean()
    print(f"{likelihood} mase {mase.item():.3f} coverage {coverage.item():.3f}")
    ql = torch.stack([torch.max(qq * (truth - q[i]), (qq - 1) * (truth - q[i]))
                      for i, qq in enumerate((0.1, 0.5, 0.9))]).mean()
    print(f"{likelihood} quantile loss {ql.item():.3f} finite {math.isfinite(ql.item())}")

print("quantile interpolation", [torch.quantile(torch.arange(10.0), 0.33, interpolation=m).item()
                                 for m in ("linear", "lower", "higher", "midpoint", "nearest")])
print("nanquantile", torch.nanquantile(torch.tensor([1.0, float("nan"), 3.0, 4.0]), 0.5))
print("quantile keepdim", torch.quantile(torch.arange(12.0).view(3, 4), 0.25, dim=1,
                                         keepdim=True))
