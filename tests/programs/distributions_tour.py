"""A torch.distributions tour as a notebook walks through it: Normal, MultivariateNormal
(scale_tril and covariance_matrix), Categorical (logits and probs), OneHotCategorical,
Bernoulli, Binomial, Beta, Gamma, Dirichlet, Poisson, Laplace, Cauchy, StudentT, LogNormal,
Exponential, Uniform, MixtureSameFamily, RelaxedOneHotCategorical, TransformedDistribution
with Exp/Affine/Sigmoid/Compose transforms, Independent; sample shapes, rsample gradients,
log_prob, entropy, moments, cdf/icdf, kl_divergence, expand, printed reprs, validate_args
errors, constraints and biject_to; then a small reparameterised VI fit of a Normal."""
import torch
import torch.distributions as D
from torch.distributions import constraints, biject_to, kl_divergence
from torch.distributions.transforms import (AffineTransform, ComposeTransform, ExpTransform,
                                            SigmoidTransform)

torch.manual_seed(0)
torch.set_printoptions(precision=4)


def show(name, d, x=None):
    print(name, "repr", d)
    print(name, "batch_shape", d.batch_shape, "event_shape", d.event_shape)
    s = d.sample((3,))
    print(name, "sample", tuple(s.shape), s.dtype)
    if x is not None:
        print(name, "log_prob", d.log_prob(x))
    try:
        print(name, "mean", d.mean, "variance", d.variance)
        print(name, "stddev", d.stddev)
    except NotImplementedError as e:
        print(name, "moments NotImplementedError", type(e).__name__)
    try:
        print(name, "entropy", d.entropy())
    except NotImplementedError as e:
        print(name, "entropy NotImplementedError", type(e).__name__)


loc = torch.tensor([0.0, 1.0])
scale = torch.tensor([1.0, 2.0])
normal = D.Normal(loc, scale)
show("normal", normal, torch.tensor([0.5, -1.0]))
print("normal cdf", normal.cdf(torch.tensor([0.0, 1.0])))
print("normal icdf", normal.icdf(torch.tensor([0.25, 0.975])))
print("normal support", normal.support, "arg_constraints", normal.arg_constraints)
print("normal has_rsample", normal.has_rsample, D.Categorical.has_rsample)
print("normal expand", normal.expand(torch.Size([3, 2])).batch_shape)
print("normal scalar", D.Normal(0.0, 1.0), D.Normal(0.0, 1.0).batch_shape)

mu = torch.tensor([0.5, -0.5], requires_grad=True)
sigma = torch.tensor([1.0, 0.5], requires_grad=True)
z = D.Normal(mu, sigma).rsample((1000,))
(z ** 2).mean().backward()
print("rsample grad shapes", mu.grad.shape, sigma.grad.shape, z.shape)

L = torch.tensor([[1.0, 0.0], [0.5, 2.0]])
mvn = D.MultivariateNormal(torch.zeros(2), scale_tril=L)
show("mvn", mvn, torch.tensor([0.3, -0.2]))
print("mvn covariance", mvn.covariance_matrix)
print("mvn precision", mvn.precision_matrix)
cov = torch.tensor([[2.0, 0.3], [0.3, 1.0]])
mvn2 = D.MultivariateNormal(torch.ones(3, 2), covariance_matrix=cov)
show("mvn2", mvn2, torch.zeros(3, 2))
print("mvn2 scale_tril", mvn2.scale_tril)
print("kl mvn", kl_divergence(mvn, D.MultivariateNormal(torch.ones(2), covariance_matrix=cov)))

logits = torch.tensor([[1.0, 2.0, 0.5], [0.0, 0.0, 0.0]])
cat = D.Categorical(logits=logits)
show("categorical", cat, torch.tensor([1, 2]))
print("categorical probs", cat.probs)
print("categorical logits", cat.logits)
print("categorical enumerate", cat.enumerate_support())
cat2 = D.Categorical(probs=torch.tensor([0.2, 0.3, 0.5]))
show("categorical probs", cat2, torch.tensor(2))
print("categorical param_shape", cat2.param_shape, cat2._num_events)
oh = D.OneHotCategorical(logits=logits)
show("onehot", oh, torch.tensor([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]))
print("onehot sample dtype", oh.sample().dtype)

bern = D.Bernoulli(probs=torch.tensor([0.1, 0.5, 0.9]))
show("bernoulli", bern, torch.tensor([0.0, 1.0, 1.0]))
print("bernoulli logits", bern.logits)
binom = D.Binomial(total_count=10, probs=torch.tensor([0.2, 0.7]))
show("binomial", binom, torch.tensor([2.0, 7.0]))
beta = D.Beta(torch.tensor([2.0, 0.5]), torch.tensor([3.0, 0.5]))
show("beta", beta, torch.tensor([0.3, 0.9]))
gamma = D.Gamma(torch.tensor([2.0, 5.0]), torch.tensor([1.0, 0.5]))
show("gamma", gamma, torch.tensor([1.5, 8.0]))
print("gamma cdf", gamma.cdf(torch.tensor([1.5, 8.0])))
diri = D.Dirichlet(torch.tensor([1.0, 2.0, 3.0]))
show("dirichlet", diri, torch.tensor([0.2, 0.3, 0.5]))
pois = D.Poisson(torch.tensor([1.0, 4.0]))
show("poisson", pois, torch.tensor([0.0, 3.0]))
lap = D.Laplace(0.0, torch.tensor([1.0, 2.0]))
show("laplace", lap, torch.tensor([0.5, -1.0]))
print("laplace cdf", lap.cdf(torch.tensor([0.5, -1.0])), "icdf", lap.icdf(torch.tensor([0.1, 0.9])))
cauchy = D.Cauchy(torch.tensor([0.0]), torch.tensor([1.0]))
show("cauchy", cauchy, torch.tensor([2.0]))
print("cauchy cdf", cauchy.cdf(torch.tensor([1.0])), "icdf", cauchy.icdf(torch.tensor([0.75])))
st = D.StudentT(torch.tensor([3.0, 1.5]))
show("studentt", st, torch.tensor([0.5, 2.0]))
logn = D.LogNormal(torch.tensor([0.0]), torch.tensor([0.5]))
show("lognormal", logn, torch.tensor([1.2]))
expo = D.Exponential(torch.tensor([2.0, 0.5]))
show("exponential", expo, torch.tensor([0.3, 1.0]))
print("exponential cdf", expo.cdf(torch.tensor([0.3, 1.0])), "icdf", expo.icdf(torch.tensor([0.5, 0.5])))
uni = D.Uniform(torch.tensor([0.0, -1.0]), torch.tensor([1.0, 3.0]))
show("uniform", uni, torch.tensor([0.5, 2.0]))
print("uniform cdf", uni.cdf(torch.tensor([0.5, 2.0])), "icdf", uni.icdf(torch.tensor([0.5, 0.25])))

mix = D.Categorical(torch.ones(3) / 3)
comp = D.Normal(torch.tensor([-2.0, 0.0, 2.0]), torch.tensor([0.5, 1.0, 0.5]))
gmm = D.MixtureSameFamily(mix, comp)
show("gmm", gmm, torch.tensor([0.1, -2.0]).unsqueeze(-1).squeeze(-1))
comp2 = D.Independent(D.Normal(torch.randn(3, 2), torch.rand(3, 2) + 0.5), 1)
gmm2 = D.MixtureSameFamily(mix, comp2)
print("gmm2 repr", gmm2)
print("gmm2 shapes", gmm2.batch_shape, gmm2.event_shape, gmm2.sample((4,)).shape)
print("gmm2 log_prob", gmm2.log_prob(torch.zeros(2)))

temp = torch.tensor(0.5)
relaxed = D.RelaxedOneHotCategorical(temp, logits=torch.tensor([1.0, 2.0, 3.0]))
print("relaxed repr", relaxed)
rs = relaxed.rsample((2,))
print("relaxed rsample", rs.shape, rs.sum(-1))
print("relaxed log_prob", relaxed.log_prob(torch.tensor([0.1, 0.2, 0.7])))
rb = D.RelaxedBernoulli(temp, probs=torch.tensor([0.3, 0.8]))
print("relaxed bernoulli", rb.rsample().shape, rb.log_prob(torch.tensor([0.2, 0.9])))

base = D.Normal(torch.zeros(2), torch.ones(2))
lognormal_t = D.TransformedDistribution(base, [ExpTransform()])
print("transformed repr", lognormal_t)
print("transformed log_prob", lognormal_t.log_prob(torch.tensor([1.0, 2.0])))
print("lognormal agrees", torch.allclose(lognormal_t.log_prob(torch.tensor([1.0, 2.0])),
                                          D.LogNormal(0.0, 1.0).log_prob(torch.tensor([1.0, 2.0]))))
affine = AffineTransform(loc=1.0, scale=torch.tensor([2.0, 3.0]))
logistic = D.TransformedDistribution(D.Uniform(0.0, 1.0), [SigmoidTransform().inv,
                                                          AffineTransform(0.0, 1.0)])
print("logistic log_prob", logistic.log_prob(torch.tensor([0.0, 1.0])))
compose = ComposeTransform([affine, ExpTransform()])
print("compose repr", compose, compose.inv)
y = compose(torch.tensor([0.0, 0.5]))
print("compose forward", y, "inverse", compose.inv(y))
print("compose log_abs_det", compose.log_abs_det_jacobian(torch.tensor([0.0, 0.5]), y))
print("sigmoid transform", SigmoidTransform()(torch.tensor([0.0, 2.0])),
      SigmoidTransform().domain, SigmoidTransform().codomain)
td = D.TransformedDistribution(base, compose)
print("transformed sample", td.sample((5,)).shape, td.rsample().shape)
print("transformed support", td.support)

ind = D.Independent(D.Normal(torch.zeros(4, 3), torch.ones(4, 3)), 1)
print("independent repr", ind)
print("independent shapes", ind.batch_shape, ind.event_shape, ind.log_prob(torch.zeros(4, 3)))
print("independent entropy", ind.entropy())

p = D.Normal(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 2.0]))
q = D.Normal(torch.tensor([1.0, 1.0]), torch.tensor([1.0, 1.0]))
print("kl normal", kl_divergence(p, q))
print("kl categorical", kl_divergence(cat, D.Categorical(probs=torch.ones(2, 3) / 3)))
print("kl bernoulli", kl_divergence(bern, D.Bernoulli(probs=torch.tensor([0.5, 0.5, 0.5]))))
print("kl beta", kl_divergence(beta, D.Beta(torch.ones(2), torch.ones(2))))
print("kl gamma", kl_divergence(gamma, D.Gamma(torch.ones(2), torch.ones(2))))
print("kl dirichlet", kl_divergence(diri, D.Dirichlet(torch.ones(3))))
print("kl exponential", kl_divergence(expo, D.Exponential(torch.ones(2))))
print("kl laplace", kl_divergence(lap, D.Laplace(torch.zeros(2), torch.ones(2))))
print("kl poisson", kl_divergence(pois, D.Poisson(torch.ones(2))))
print("kl uniform", kl_divergence(uni, D.Uniform(torch.tensor([-1.0, -2.0]), torch.tensor([2.0, 4.0]))))
print("kl independent", kl_divergence(ind, D.Independent(D.Normal(torch.ones(4, 3), torch.ones(4, 3)), 1)))
try:
    kl_divergence(D.Normal(0.0, 1.0), D.StudentT(3.0))
except NotImplementedError as e:
    print("kl missing NotImplementedError", e)

for bad in (lambda: D.Normal(torch.tensor([0.0]), torch.tensor([-1.0]), validate_args=True),
            lambda: D.Bernoulli(probs=torch.tensor([1.5]), validate_args=True),
            lambda: D.Categorical(probs=torch.tensor([-0.1, 0.5]), validate_args=True)):
    try:
        bad()
    except ValueError as e:
        print("validate error", type(e).__name__, str(e).split("\n")[0][:90])
try:
    D.Normal(0.0, 1.0, validate_args=True).log_prob(torch.tensor(float("nan")))
    print("nan log_prob allowed")
except ValueError as e:
    print("validate error", str(e).split("\n")[0][:60])
try:
    D.Exponential(1.0, validate_args=True).log_prob(torch.tensor(-1.0))
except ValueError as e:
    print("support error", str(e).split("\n")[0][:70])
try:
    D.Normal(torch.zeros(2), torch.ones(3))
except (ValueError, RuntimeError) as e:
    print("broadcast error", type(e).__name__)

print("constraints", constraints.positive, constraints.real, constraints.simplex,
      constraints.unit_interval, constraints.interval(0.0, 2.0))
print("positive check", constraints.positive.check(torch.tensor([-1.0, 0.0, 2.0])))
print("simplex check", constraints.simplex.check(torch.tensor([0.2, 0.8])))
print("interval check", constraints.interval(0.0, 2.0).check(torch.tensor([0.5, 3.0])))
print("integer check", constraints.nonnegative_integer.check(torch.tensor([0.0, 1.5, 2.0])))
for c in (constraints.positive, constraints.unit_interval, constraints.simplex,
          constraints.real, constraints.greater_than(2.0)):
    t = biject_to(c)
    print("biject_to", c, "->", t)
print("transform_to", D.transform_to(constraints.lower_cholesky))
print("lower_cholesky", D.transform_to(constraints.lower_cholesky)(torch.tensor([[0.0, 1.0], [2.0, 0.5]])))
raw = torch.tensor([0.3, -1.0, 2.0])
print("biject positive", biject_to(constraints.positive)(raw))
print("biject simplex", biject_to(constraints.simplex)(raw))
print("biject unit_interval", biject_to(constraints.unit_interval)(raw))
print("biject inverse", biject_to(constraints.positive).inv(torch.tensor([1.0, 2.0])))

# more families, printed samples and modes
torch.manual_seed(1)
extra = {
    "halfnormal": D.HalfNormal(torch.tensor([1.0, 2.0])),
    "halfcauchy": D.HalfCauchy(torch.tensor([1.0])),
    "chi2": D.Chi2(torch.tensor([3.0])),
    "fisher": D.FisherSnedecor(torch.tensor([5.0]), torch.tensor([7.0])),
    "geometric": D.Geometric(probs=torch.tensor([0.3, 0.7])),
    "negbinomial": D.NegativeBinomial(5, probs=torch.tensor([0.4])),
    "multinomial": D.Multinomial(10, probs=torch.tensor([0.2, 0.3, 0.5])),
    "gumbel": D.Gumbel(torch.tensor([0.0]), torch.tensor([2.0])),
    "weibull": D.Weibull(torch.tensor([1.0]), torch.tensor([1.5])),
    "pareto": D.Pareto(torch.tensor([1.0]), torch.tensor([3.0])),
    "vonmises": D.VonMises(torch.tensor([0.5]), torch.tensor([2.0])),
    "kumaraswamy": D.Kumaraswamy(torch.tensor([2.0]), torch.tensor([5.0])),
    "contbern": D.ContinuousBernoulli(probs=torch.tensor([0.3])),
    "lowrank": D.LowRankMultivariateNormal(torch.zeros(3), torch.ones(3, 1), torch.ones(3)),
    "logisticnormal": D.LogisticNormal(torch.zeros(2), torch.ones(2)),
    "lkj": D.LKJCholesky(3, concentration=2.0),
    "wishart": D.Wishart(torch.tensor(4.0), covariance_matrix=torch.eye(2)),
}
for name, d in extra.items():
    print(name, "repr", d)
    print(name, "shapes", d.batch_shape, d.event_shape, d.support)
    x = d.sample()
    print(name, "sample", tuple(x.shape), x.dtype, "log_prob", d.log_prob(x).shape)
    for attr in ("mean", "mode", "variance"):
        try:
            print(name, attr, getattr(d, attr))
        except (NotImplementedError, AttributeError) as e:
            print(name, attr, type(e).__name__)
    try:
        print(name, "entropy", d.entropy())
    except NotImplementedError as e:
        print(name, "entropy", type(e).__name__)
print("modes", normal.mode, cat.mode, bern.mode, beta.mode, gamma.mode, pois.mode, expo.mode)
print("perplexity", cat.perplexity(), normal.perplexity())
print("sample values normal", normal.sample((4,)))
print("sample values categorical", cat.sample((5,)))
print("sample values bernoulli", bern.sample((4,)))
print("sample values uniform", uni.sample((3,)))
print("sample values exponential", expo.sample((3,)))
print("sample values laplace", lap.sample((3,)))
print("sample values cauchy", cauchy.sample((3,)))
print("sample values mvn", mvn.sample((3,)))
print("sample values multinomial", extra["multinomial"].sample((2,)))
print("sample values geometric", extra["geometric"].sample((3,)))
print("expanded repr", normal.expand((3, 2)))
print("log_prob broadcast", normal.log_prob(torch.zeros(4, 1)).shape)
print("default validate", D.Distribution._validate_args)
try:
    D.Normal(0.0, 1.0).log_prob(torch.zeros(2)).sum().backward()
except RuntimeError as e:
    print("no grad error", e)
try:
    D.Categorical(logits=torch.zeros(3), validate_args=True).log_prob(torch.tensor(5))
except ValueError as e:
    print("categorical support error", str(e).split("\n")[0][:80])
try:
    D.MultivariateNormal(torch.zeros(2))
except ValueError as e:
    print("mvn error", e)
try:
    D.Categorical()
except ValueError as e:
    print("categorical error", e)
try:
    D.Categorical(probs=torch.ones(3), logits=torch.ones(3))
except ValueError as e:
    print("categorical both error", e)

# variational fit: q(z) = Normal(m, softplus(s)) towards a target Normal(2, 0.5)
target = D.Normal(torch.tensor(2.0), torch.tensor(0.5))
m = torch.zeros((), requires_grad=True)
s = torch.zeros((), requires_grad=True)
opt = torch.optim.Adam([m, s], lr=0.1)
for step in range(60):
    q = D.Normal(m, torch.nn.functional.softplus(s))
    z = q.rsample((64,))
    loss = (q.log_prob(z) - target.log_prob(z)).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"vi step {step:3d} loss {loss.item():.4f}")
print("vi kl", round(kl_divergence(D.Normal(m, torch.nn.functional.softplus(s)), target).item(), 1))
