"""Densities with torch.distributions, as the tutorials and blog posts write them: a mixture
density network on 1-D data with two branches (MixtureSameFamily(Categorical, Normal)) and
(MixtureSameFamily(Categorical, Independent(Normal, 1)) for 2-D targets), trained by
negative log-likelihood; then a normalizing flow built from torch.distributions.transforms:
a TransformedDistribution of a Normal through learnable AffineTransforms, a custom Transform
(a sinh-arcsinh bijection written by hand), SigmoidTransform onto
(0, 1), ComposeTransform, log_prob, rsample and the inverse."""
import argparse
import math

import torch
import torch.distributions as D
from torch import nn
from torch.distributions import constraints
from torch.distributions.transforms import (AffineTransform, ComposeTransform, ExpTransform,
                                            SigmoidTransform, Transform)

parser = argparse.ArgumentParser()
parser.add_argument('--steps', type=int, default=100)
args = parser.parse_args()

torch.manual_seed(0)

# ---------------------------------------------------------------- the distributions API
normal = D.Normal(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 0.5]))
print(normal)
print("batch_shape", normal.batch_shape, "event_shape", normal.event_shape)
ind = D.Independent(normal, 1)
print(ind, ind.batch_shape, ind.event_shape)
print("log_prob", ind.log_prob(torch.tensor([0.5, 0.5])))
mix = D.MixtureSameFamily(D.Categorical(probs=torch.tensor([0.3, 0.7])),
                          D.Normal(torch.tensor([-1.0, 2.0]), torch.tensor([0.5, 1.0])))
print(mix)
print("mixture mean", mix.mean, "variance", mix.variance)
print("mixture log_prob", mix.log_prob(torch.tensor([-1.0, 0.0, 2.0])))
print("mixture cdf", mix.cdf(torch.tensor([0.0])))
s = mix.sample((5,))
print("mixture sample", s.shape)
print("support", mix.support, "| categorical support", mix.mixture_distribution.support)


# ---------------------------------------------------------------- mixture density network
def make_data(n):
    # inverted sine: x given y is multi-valued, so a single Gaussian fails
    y = torch.rand(n, 1) * 2 - 1
    x = torch.sin(3 * y) * 0.8 + 0.1 * torch.randn(n, 1) + 0.5 * y
    return x, y


class MDN(nn.Module):
    def __init__(self, dim_in, dim_out, n_components, hidden=32):
        super().__init__()
        self.n_components = n_components
        self.dim_out = dim_out
        self.backbone = nn.Sequential(nn.Linear(dim_in, hidden), nn.Tanh())
        self.pi = nn.Linear(hidden, n_components)
        self.mu = nn.Linear(hidden, n_components * dim_out)
        self.log_sigma = nn.Linear(hidden, n_components * dim_out)

    def forward(self, x):
        h = self.backbone(x)
        logits = self.pi(h)
        mu = self.mu(h).view(-1, self.n_components, self.dim_out)
        sigma = torch.exp(self.log_sigma(h).clamp(-7, 5)).view(-1, self.n_components, self.dim_out)
        mix = D.Categorical(logits=logits)
        comp = D.Independent(D.Normal(mu, sigma), 1)
        return D.MixtureSameFamily(mix, comp)


x, y = make_data(256)
mdn = MDN(1, 1, n_components=3)
print(mdn)
opt = torch.optim.Adam(mdn.parameters(), lr=1e-2)
for step in range(args.steps):
    dist = mdn(x)
    loss = -dist.log_prob(y).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 50 == 0 or step == args.steps - 1:
        print(f"mdn step {step:4d} nll {loss.item():.4f}")

with torch.no_grad():
    dist = mdn(torch.tensor([[0.0], [0.5]]))
    print("mixture weights shape", dist.mixture_distribution.probs.shape,
          "component means shape", dist.component_distribution.mean.shape)
    print("event_shape", dist.event_shape, "batch_shape", dist.batch_shape)
    samples = dist.sample((100,))
    print("samples", samples.shape, "finite", bool(torch.isfinite(samples).all()))


# ---------------------------------------------------------------- a flow from transforms
class SinhArcsinhTransform(Transform):
    """y = sinh(b * asinh(x) - a): a bijection on the reals that bends the tails."""
    domain = constraints.real
    codomain = constraints.real
    bijective = True
    sign = +1

    def __init__(self, skew, tail, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.skew = skew
        self.tail = tail

    def __eq__(self, other):
        return isinstance(other, SinhArcsinhTransform) and self.skew is other.skew

    def _call(self, x):
        return torch.sinh(self.tail * torch.asinh(x) - self.skew)

    def _inverse(self, y):
        return torch.sinh((torch.asinh(y) + self.skew) / self.tail)

    def log_abs_det_jacobian(self, x, y):
        inner = self.tail * torch.asinh(x) - self.skew
        return (torch.log(self.tail) + torch.log(torch.cosh(inner))
                - 0.5 * torch.log1p(x ** 2))


target = 0.3 * torch.randn(512) ** 2 + torch.randn(512) * 0.3 + 1.0  # skewed data
loc = nn.Parameter(torch.zeros(()))
log_scale = nn.Parameter(torch.zeros(()))
skew = nn.Parameter(torch.zeros(()))
raw_tail = nn.Parameter(torch.zeros(()))
base = D.Normal(torch.tensor(0.0), torch.tensor(1.0))


def make_flow():
    tail = torch.nn.functional.softplus(raw_tail) + 0.5
    return D.TransformedDistribution(base, [SinhArcsinhTransform(skew, tail),
                                            AffineTransform(loc, log_scale.exp())])


flow = make_flow()
print(flow)
print("flow event_shape", flow.event_shape, "has_rsample", flow.has_rsample)
print("initial nll", f"{-flow.log_prob(target).mean().item():.4f}")
params = [loc, log_scale, skew, raw_tail]
opt = torch.optim.Adam(params, lr=0.05)
for step in range(args.steps):
    flow = make_flow()
    loss = -flow.log_prob(target).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 50 == 0 or step == args.steps - 1:
        print(f"flow step {step:4d} nll {loss.item():.4f}")

with torch.no_grad():
    flow = make_flow()
    z = flow.sample((2000,))
    print(f"data mean {target.mean():.2f} flow sample mean {z.mean():.2f}")
    t = flow.transforms[0]
    xs = torch.linspace(-2, 2, 5)
    print("inverse round trip", torch.allclose(t.inv(t(xs)), xs, atol=1e-5))

# reparameterised samples carry gradients through the transforms
flow = make_flow()
r = flow.rsample((4,))
r.sum().backward()
print("rsample grad on loc", loc.grad is not None and bool(torch.isfinite(loc.grad)))

# ---------------------------------------------------------------- fixed transforms
unit = D.TransformedDistribution(D.Normal(torch.zeros(3), torch.ones(3)), [SigmoidTransform()])
v = torch.tensor([0.1, 0.5, 0.9])
print("logit-normal log_prob", unit.log_prob(v))
print("support", unit.support)
logistic = D.TransformedDistribution(D.Uniform(torch.tensor(0.0), torch.tensor(1.0)),
                                     [SigmoidTransform().inv, AffineTransform(loc=1.0, scale=2.0)])
print("logistic log_prob", logistic.log_prob(torch.tensor([0.0, 1.0, 3.0])))
chain = ComposeTransform([AffineTransform(0.0, 2.0), ExpTransform()])
u = torch.tensor([0.0, 0.5, 1.0])
print("compose", chain(u), chain.inv(chain(u)))
print("log|det J|", chain.log_abs_det_jacobian(u, chain(u)))
lognormal = D.TransformedDistribution(D.Normal(0.0, 1.0), [ExpTransform()])
print("matches LogNormal", torch.allclose(lognormal.log_prob(u + 1), D.LogNormal(0.0, 1.0).log_prob(u + 1)))
print(SigmoidTransform(), AffineTransform(1.0, 2.0), chain.inv)
print("sigmoid sign", SigmoidTransform().sign, "bijective", SigmoidTransform().bijective)

# ---------------------------------------------------------------- constraint registries
from torch.distributions import biject_to, transform_to
from torch.distributions.transforms import (CatTransform, IndependentTransform, PowerTransform,
                                            ReshapeTransform, StackTransform, StickBreakingTransform,
                                            TanhTransform, LowerCholeskyTransform)

for c in (constraints.positive, constraints.unit_interval, constraints.simplex,
          constraints.interval(-1.0, 3.0), constraints.greater_than(2.0)):
    t = transform_to(c)
    print(c, "->", t, "| biject_to", biject_to(c))
raw = torch.tensor([-1.0, 0.0, 2.0])
print("positive", transform_to(constraints.positive)(raw))
print("simplex", transform_to(constraints.simplex)(raw))
sb = StickBreakingTransform()
p = sb(raw)
print("stick breaking", p, p.sum(), sb.inv(p))
print("stick breaking shapes", sb.forward_shape((4, 3)), sb.inverse_shape((4, 4)))
print("stick breaking log|det J|", sb.log_abs_det_jacobian(raw, p))
print("interval", transform_to(constraints.interval(-1.0, 3.0))(raw))
tanh = TanhTransform(cache_size=1)
a = tanh(torch.tensor([0.3, -2.0]))
print("tanh", a, tanh.inv(a), tanh.log_abs_det_jacobian(torch.tensor([0.3, -2.0]), a))
print("power", PowerTransform(2.0)(torch.tensor([3.0])), PowerTransform(torch.tensor(0.5)).inv(torch.tensor([3.0])))
lc = LowerCholeskyTransform()
L = lc(torch.tensor([[1.0, 2.0], [-0.5, 0.0]]))
print("lower cholesky", L)
reshape = ReshapeTransform((4,), (2, 2))
print("reshape", reshape(torch.arange(4.0)).shape, reshape.forward_shape((3, 4)), reshape.inverse_shape((3, 2, 2)))
it = IndependentTransform(ExpTransform(), 1)
print("independent", it.log_abs_det_jacobian(u, it(u)), it.domain.event_dim, it.codomain.event_dim)
cat = CatTransform([ExpTransform(), AffineTransform(0.0, 3.0)], dim=0, lengths=[2, 1])
print("cat", cat(u), cat.log_abs_det_jacobian(u, cat(u)))
stack = StackTransform([ExpTransform(), AffineTransform(1.0, 2.0)], dim=1)
w = torch.tensor([[0.0, 1.0], [1.0, 2.0]])
print("stack", stack(w), stack.inv(stack(w)))
bounded = D.TransformedDistribution(D.Normal(torch.zeros(2), torch.ones(2)),
                                    [TanhTransform(cache_size=1), AffineTransform(0.0, 2.0)])
act = bounded.rsample()
print("squashed gaussian in bounds", bool((act.abs() <= 2).all()), bounded.log_prob(act).shape)
print("event dims", D.TransformedDistribution(D.Normal(torch.zeros(4), 1.0), [ReshapeTransform((4,), (2, 2))]).event_shape)
