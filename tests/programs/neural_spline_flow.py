"""Neural spline flows (Durkan et al.), scaled down, as the nflows / bayesiains
`rational_quadratic_spline` and `unconstrained_rational_quadratic_spline` write them:
softmax bin widths and heights with a minimum, F.pad of the cumulative sums, a
torch.searchsorted-style bin lookup (nflows' own searchsorted and torch.searchsorted),
torch.gather of knot values (`[..., bin_idx][..., 0]`), F.softplus derivatives with a
constant boundary, log|det| via torch.log, identity outside the tails interval with
torch.where / masks, affine-free coupling layers with a checkerboard mask, a
torch.distributions Independent(Normal) base log_prob, and maximum-likelihood training on
two moons with Adam and a cosine LR schedule; then sampling via the inverse pass."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Independent, Normal

torch.manual_seed(0)
np.random.seed(0)

DEFAULT_MIN_BIN_WIDTH = 1e-3
DEFAULT_MIN_BIN_HEIGHT = 1e-3
DEFAULT_MIN_DERIVATIVE = 1e-3


def searchsorted(bin_locations, inputs, eps=1e-6):
    bin_locations[..., -1] += eps
    return torch.sum(inputs[..., None] >= bin_locations, dim=-1) - 1


def unconstrained_rational_quadratic_spline(inputs, unnormalized_widths, unnormalized_heights,
                                            unnormalized_derivatives, inverse=False,
                                            tails="linear", tail_bound=1.0,
                                            min_bin_width=DEFAULT_MIN_BIN_WIDTH,
                                            min_bin_height=DEFAULT_MIN_BIN_HEIGHT,
                                            min_derivative=DEFAULT_MIN_DERIVATIVE):
    inside_interval_mask = (inputs >= -tail_bound) & (inputs <= tail_bound)
    outside_interval_mask = ~inside_interval_mask

    outputs = torch.zeros_like(inputs)
    logabsdet = torch.zeros_like(inputs)

    if tails == "linear":
        unnormalized_derivatives = F.pad(unnormalized_derivatives, pad=(1, 1))
        constant = np.log(np.exp(1 - min_derivative) - 1)
        unnormalized_derivatives[..., 0] = constant
        unnormalized_derivatives[..., -1] = constant

        outputs[outside_interval_mask] = inputs[outside_interval_mask]
        logabsdet[outside_interval_mask] = 0
    else:
        raise RuntimeError("{} tails are not implemented.".format(tails))

    if torch.any(inside_interval_mask):
        outputs[inside_interval_mask], logabsdet[inside_interval_mask] = rational_quadratic_spline(
            inputs=inputs[inside_interval_mask],
            unnormalized_widths=unnormalized_widths[inside_interval_mask, :],
            unnormalized_heights=unnormalized_heights[inside_interval_mask, :],
            unnormalized_derivatives=unnormalized_derivatives[inside_interval_mask, :],
            inverse=inverse, left=-tail_bound, right=tail_bound, bottom=-tail_bound,
            top=tail_bound, min_bin_width=min_bin_width, min_bin_height=min_bin_height,
            min_derivative=min_derivative)
    return outputs, logabsdet


def rational_quadratic_spline(inputs, unnormalized_widths, unnormalized_heights,
                              unnormalized_derivatives, inverse=False, left=0.0, right=1.0,
                              bottom=0.0, top=1.0, min_bin_width=DEFAULT_MIN_BIN_WIDTH,
                              min_bin_height=DEFAULT_MIN_BIN_HEIGHT,
                              min_derivative=DEFAULT_MIN_DERIVATIVE):
    if torch.min(inputs) < left or torch.max(inputs) > right:
        raise ValueError("Input to a transform is not within its domain")

    num_bins = unnormalized_widths.shape[-1]

    widths = F.softmax(unnormalized_widths, dim=-1)
    widths = min_bin_width + (1 - min_bin_width * num_bins) * widths
    cumwidths = torch.cumsum(widths, dim=-1)
    cumwidths = F.pad(cumwidths, pad=(1, 0), mode="constant", value=0.0)
    cumwidths = (right - left) * cumwidths + left
    cumwidths[..., 0] = left
    cumwidths[..., -1] = right
    widths = cumwidths[..., 1:] - cumwidths[..., :-1]

    derivatives = min_derivative + F.softplus(unnormalized_derivatives)

    heights = F.softmax(unnormalized_heights, dim=-1)
    heights = min_bin_height + (1 - min_bin_height * num_bins) * heights
    cumheights = torch.cumsum(heights, dim=-1)
    cumheights = F.pad(cumheights, pad=(1, 0), mode="constant", value=0.0)
    cumheights = (top - bottom) * cumheights + bottom
    cumheights[..., 0] = bottom
    cumheights[..., -1] = top
    heights = cumheights[..., 1:] - cumheights[..., :-1]

    if inverse:
        bin_idx = searchsorted(cumheights, inputs)[..., None]
    else:
        bin_idx = searchsorted(cumwidths, inputs)[..., None]

    input_cumwidths = cumwidths.gather(-1, bin_idx)[..., 0]
    input_bin_widths = widths.gather(-1, bin_idx)[..., 0]

    input_cumheights = cumheights.gather(-1, bin_idx)[..., 0]
    delta = heights / widths
    input_delta = delta.gather(-1, bin_idx)[..., 0]

    input_derivatives = derivatives.gather(-1, bin_idx)[..., 0]
    input_derivatives_plus_one = derivatives[..., 1:].gather(-1, bin_idx)[..., 0]

    input_heights = heights.gather(-1, bin_idx)[..., 0]

    if inverse:
        a = (inputs - input_cumheights) * (input_derivatives + input_derivatives_plus_one
                                           - 2 * input_delta) \
            + input_heights * (input_delta - input_derivatives)
        b = input_heights * input_derivatives - (inputs - input_cumheights) * (
            input_derivatives + input_derivatives_plus_one - 2 * input_delta)
        c = -input_delta * (inputs - input_cumheights)

        discriminant = b.pow(2) - 4 * a * c
        assert (discriminant >= 0).all()

        root = (2 * c) / (-b - torch.sqrt(discriminant))
        outputs = root * input_bin_widths + input_cumwidths

        theta_one_minus_theta = root * (1 - root)
        denominator = input_delta + ((input_derivatives + input_derivatives_plus_one
                                      - 2 * input_delta) * theta_one_minus_theta)
        derivative_numerator = input_delta.pow(2) * (
            input_derivatives_plus_one * root.pow(2)
            + 2 * input_delta * theta_one_minus_theta
            + input_derivatives * (1 - root).pow(2))
        logabsdet = torch.log(derivative_numerator) - 2 * torch.log(denominator)
        return outputs, -logabsdet
    else:
        theta = (inputs - input_cumwidths) / input_bin_widths
        theta_one_minus_theta = theta * (1 - theta)

        numerator = input_heights * (input_delta * theta.pow(2)
                                     + input_derivatives * theta_one_minus_theta)
        denominator = input_delta + ((input_derivatives + input_derivatives_plus_one
                                      - 2 * input_delta) * theta_one_minus_theta)
        outputs = input_cumheights + numerator / denominator

        derivative_numerator = input_delta.pow(2) * (
            input_derivatives_plus_one * theta.pow(2)
            + 2 * input_delta * theta_one_minus_theta
            + input_derivatives * (1 - theta).pow(2))
        logabsdet = torch.log(derivative_numerator) - 2 * torch.log(denominator)
        return outputs, logabsdet


class ResidualNet(nn.Module):
    def __init__(self, in_features, out_features, hidden_features):
        super().__init__()
        self.initial_layer = nn.Linear(in_features, hidden_features)
        self.blocks = nn.ModuleList([nn.Sequential(nn.ReLU(), nn.Linear(hidden_features, hidden_features))
                                     for _ in range(2)])
        self.final_layer = nn.Linear(hidden_features, out_features)
        nn.init.uniform_(self.final_layer.weight, -1e-3, 1e-3)
        nn.init.uniform_(self.final_layer.bias, -1e-3, 1e-3)

    def forward(self, inputs):
        temps = self.initial_layer(inputs)
        for block in self.blocks:
            temps = temps + block(temps)
        return self.final_layer(temps)


class PiecewiseRationalQuadraticCouplingTransform(nn.Module):
    def __init__(self, mask, hidden_features, num_bins=8, tail_bound=3.0):
        super().__init__()
        mask = torch.as_tensor(mask)
        features_vector = torch.arange(len(mask))
        self.register_buffer("identity_features", features_vector.masked_select(mask <= 0))
        self.register_buffer("transform_features", features_vector.masked_select(mask > 0))
        self.num_bins, self.tail_bound = num_bins, tail_bound
        self.transform_net = ResidualNet(len(self.identity_features),
                                         len(self.transform_features) * (3 * num_bins - 1),
                                         hidden_features)

    def _coupling_transform(self, inputs, transform_params, inverse):
        b, d = inputs.shape
        transform_params = transform_params.view(b, d, 3 * self.num_bins - 1)
        unnormalized_widths = transform_params[..., :self.num_bins]
        unnormalized_heights = transform_params[..., self.num_bins:2 * self.num_bins]
        unnormalized_derivatives = transform_params[..., 2 * self.num_bins:]
        hidden = self.transform_net.initial_layer.out_features
        unnormalized_widths = unnormalized_widths / np.sqrt(hidden)
        unnormalized_heights = unnormalized_heights / np.sqrt(hidden)
        outputs, logabsdet = unconstrained_rational_quadratic_spline(
            inputs, unnormalized_widths, unnormalized_heights, unnormalized_derivatives,
            inverse=inverse, tails="linear", tail_bound=self.tail_bound)
        return outputs, logabsdet.sum(dim=1)

    def forward(self, inputs, inverse=False):
        identity_split = inputs[:, self.identity_features, ...]
        transform_split = inputs[:, self.transform_features, ...]
        transform_params = self.transform_net(identity_split)
        transform_split, logabsdet = self._coupling_transform(transform_split, transform_params,
                                                              inverse)
        outputs = torch.empty_like(inputs)
        outputs[:, self.identity_features, ...] = identity_split
        outputs[:, self.transform_features, ...] = transform_split
        return outputs, logabsdet


class Flow(nn.Module):
    def __init__(self, features=2, layers=4, hidden=32):
        super().__init__()
        masks = [torch.tensor([1, 0]) if i % 2 == 0 else torch.tensor([0, 1]) for i in range(layers)]
        self.transforms = nn.ModuleList([PiecewiseRationalQuadraticCouplingTransform(m, hidden)
                                         for m in masks])
        self.register_buffer("loc", torch.zeros(features))
        self.register_buffer("scale", torch.ones(features))

    @property
    def base(self):
        return Independent(Normal(self.loc, self.scale), 1)

    def log_prob(self, x):
        total = torch.zeros(x.shape[0])
        for t in self.transforms:
            x, lad = t(x)
            total = total + lad
        return self.base.log_prob(x) + total

    def sample(self, n):
        z = self.base.sample((n,))
        for t in reversed(self.transforms):
            z, _ = t(z, inverse=True)
        return z


def make_moons(n, noise=0.1):
    n_out = n // 2
    n_in = n - n_out
    outer = np.stack([np.cos(np.linspace(0, np.pi, n_out)), np.sin(np.linspace(0, np.pi, n_out))], 1)
    inner = np.stack([1 - np.cos(np.linspace(0, np.pi, n_in)),
                      1 - np.sin(np.linspace(0, np.pi, n_in)) - 0.5], 1)
    X = np.concatenate([outer, inner]) + np.random.normal(scale=noise, size=(n, 2))
    return X.astype(np.float32)


# the spline on fixed numbers: identity outside [-B, B], invertible inside
torch.manual_seed(0)
x = torch.tensor([-4.0, -1.5, -0.2, 0.0, 0.7, 2.9, 3.5])
uw = torch.linspace(-1, 1, 7 * 5).view(7, 5)
uh = torch.linspace(1, -1, 7 * 5).view(7, 5).cos()
ud = torch.linspace(-0.5, 0.5, 7 * 4).view(7, 4)
y, lad = unconstrained_rational_quadratic_spline(x, uw, uh, ud, tail_bound=3.0)
print("spline", y)
print("logabsdet", lad)
xr, lad_inv = unconstrained_rational_quadratic_spline(y, uw, uh, ud, inverse=True, tail_bound=3.0)
print("inverse", xr, torch.allclose(xr, x, atol=1e-5), torch.allclose(lad + lad_inv, torch.zeros(7), atol=1e-5))
knots = torch.tensor([[0.0, 0.25, 0.5, 1.0]])
print("searchsorted", searchsorted(knots.clone(), torch.tensor([[0.1, 0.5, 1.0]]).T),
      torch.searchsorted(knots[0], torch.tensor([0.1, 0.5, 1.0])),
      torch.searchsorted(knots[0], torch.tensor([0.1, 0.5, 1.0]), right=True),
      torch.searchsorted(knots, torch.tensor([[0.3, 0.75]]), side="right"))
print("softplus const", F.softplus(torch.tensor(float(np.log(np.exp(1 - 1e-3) - 1)))) + 1e-3)
print("pad cumsum", F.pad(torch.cumsum(torch.tensor([[0.2, 0.3, 0.5]]), -1), (1, 0), value=0.0))
print("gather", torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]).gather(-1, torch.tensor([[2], [0]]))[..., 0])

# autograd through the spline matches a finite difference
xg = torch.tensor([0.3, -1.2], dtype=torch.float64, requires_grad=True)
uwg, uhg, udg = uw[:2].double(), uh[:2].double(), ud[:2].double()
yg, _ = unconstrained_rational_quadratic_spline(xg, uwg, uhg, udg, tail_bound=3.0)
dy, = torch.autograd.grad(yg.sum(), xg)
_, ladg = unconstrained_rational_quadratic_spline(xg.detach(), uwg, uhg, udg, tail_bound=3.0)
print("dy/dx", dy, "exp(logabsdet)", ladg.exp(), torch.allclose(dy, ladg.exp()))

data = torch.from_numpy(make_moons(256))
print("data", data.shape, data.dtype, data[:2])
flow = Flow()
print(flow)
print("base", flow.base, flow.base.batch_shape, flow.base.event_shape)
print("base log_prob", flow.base.log_prob(torch.tensor([[0.0, 0.0], [1.0, -1.0]])))
print("parameters", sum(p.numel() for p in flow.parameters()))

optimizer = torch.optim.Adam(flow.parameters(), lr=5e-3)
epochs = 30
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, epochs)
for epoch in range(epochs):
    perm = torch.randperm(data.shape[0])
    total = 0.0
    for i in range(0, data.shape[0], 128):
        batch = data[perm[i:i + 128]]
        loss = -flow.log_prob(batch).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    scheduler.step()
    if epoch % 5 == 0 or epoch == epochs - 1:
        print(f"epoch {epoch:3d} lr {scheduler.get_last_lr()[0]:.5f} nll {total / 2:.4f}")

flow.eval()
with torch.no_grad():
    samples = flow.sample(500)
    print("samples", samples.shape, torch.isfinite(samples).all().item())
    z = flow.transforms[0](data[:4])[0]
    back = flow.transforms[0](z, inverse=True)[0]
    print("coupling invertible", torch.allclose(back, data[:4], atol=1e-4))
    print("test nll", -flow.log_prob(data).mean().item())
