"""ember.distributions against torch.distributions: values, gradients, shapes, validation
errors and printed forms (Categorical, Normal, Bernoulli)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.distributions import Bernoulli, Categorical, Normal, constraints

torch = pytest.importorskip("torch")
td = torch.distributions


def _pair(values, requires_grad=False):
    """The same float32 values as an ember and a torch tensor."""
    arr = np.asarray(values, dtype=np.float32)
    return (ember.tensor(arr, requires_grad=requires_grad),
            torch.tensor(arr, requires_grad=requires_grad))


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else t.detach().numpy()


def _message(fn):
    with pytest.raises(ValueError) as info:
        fn()
    return str(info.value).replace("ember.", "torch.")


@pytest.mark.parametrize("param", ["probs", "logits"])
def test_categorical_log_prob_entropy_and_gradients_match_torch(param):
    raw = {"probs": [[0.2, 0.5, 0.3], [1.0, 3.0, 0.5]],
           "logits": [[0.1, -2.0, 1.5], [0.0, 0.0, 4.0]]}[param]
    e_p, t_p = _pair(raw, requires_grad=True)
    e_d, t_d = Categorical(**{param: e_p}), td.Categorical(**{param: t_p})
    e_v, t_v = ember.tensor([2, 0]), torch.tensor([2, 0])
    for e_out, t_out in [(e_d.log_prob(e_v), t_d.log_prob(t_v)), (e_d.entropy(), t_d.entropy()),
                         (e_d.probs, t_d.probs), (e_d.logits, t_d.logits)]:
        np.testing.assert_allclose(_np(e_out), _np(t_out), rtol=1e-6, atol=1e-7)
    (e_d.log_prob(e_v).sum() + e_d.entropy().sum()).backward()
    (t_d.log_prob(t_v).sum() + t_d.entropy().sum()).backward()
    np.testing.assert_allclose(e_p.grad.numpy(), t_p.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_categorical_shapes_mode_support_and_repr_match_torch():
    e_p, t_p = _pair([[0.1, 0.9], [0.7, 0.3], [0.5, 0.5]])
    e_d, t_d = Categorical(e_p), td.Categorical(t_p)
    assert tuple(e_d.batch_shape) == tuple(t_d.batch_shape) == (3,)
    assert tuple(e_d.event_shape) == tuple(t_d.event_shape) == ()
    for shape in [(), (4,), (2, 5)]:
        assert tuple(e_d.sample(shape).shape) == tuple(t_d.sample(shape).shape)
    assert e_d.sample().dtype == ember.int64
    assert e_d.mode.tolist() == t_d.mode.tolist()
    assert e_d.enumerate_support().tolist() == t_d.enumerate_support().tolist()
    assert (e_d.enumerate_support(expand=False).tolist()
            == t_d.enumerate_support(expand=False).tolist())
    assert np.isnan(e_d.mean.numpy()).all() and tuple(e_d.mean.shape) == (3,)
    assert repr(e_d).replace("ember.", "torch.") == repr(t_d)
    assert repr(e_d.support) == repr(t_d.support)
    assert repr(Categorical.arg_constraints) == repr(td.Categorical.arg_constraints)
    one = Categorical(ember.tensor([0.25, 0.75]))
    assert tuple(one.sample().shape) == () and tuple(one.batch_shape) == ()
    # a log_prob value broadcasts against the batch, as in torch
    e_lp = e_d.log_prob(ember.tensor([[1], [0]]))
    t_lp = t_d.log_prob(torch.tensor([[1], [0]]))
    np.testing.assert_allclose(e_lp.numpy(), t_lp.numpy(), rtol=1e-6)


def test_categorical_samples_follow_the_probabilities():
    ember.manual_seed(0)
    samples = Categorical(ember.tensor([0.1, 0.6, 0.3])).sample((6000,)).numpy()
    freq = np.bincount(samples, minlength=3) / samples.size
    np.testing.assert_allclose(freq, [0.1, 0.6, 0.3], atol=0.03)


def test_categorical_errors_match_torch():
    assert _message(lambda: Categorical()) == _message(lambda: td.Categorical())
    bad_e, bad_t = _pair([[0.2, -0.8]])
    assert _message(lambda: Categorical(bad_e)) == _message(lambda: td.Categorical(bad_t))
    e_d, t_d = Categorical(_pair([[0.2, 0.8]])[0]), td.Categorical(_pair([[0.2, 0.8]])[1])
    assert (_message(lambda: e_d.log_prob(ember.tensor([3])))
            == _message(lambda: t_d.log_prob(torch.tensor([3]))))
    assert (_message(lambda: Categorical(ember.tensor(0.5)))
            == _message(lambda: td.Categorical(torch.tensor(0.5))))
    # validation off: torch does not look at the value either
    assert Categorical(bad_e, validate_args=False).probs.shape == (1, 2)


def test_normal_matches_torch():
    e_loc, t_loc = _pair([0.0, 1.5, -2.0], requires_grad=True)
    e_scale, t_scale = _pair([1.0, 0.5, 3.0], requires_grad=True)
    e_d, t_d = Normal(e_loc, e_scale), td.Normal(t_loc, t_scale)
    e_x, t_x = _pair([0.3, 1.0, -7.0])
    e_u, t_u = _pair([0.1, 0.5, 0.975])
    for e_out, t_out in [(e_d.log_prob(e_x), t_d.log_prob(t_x)), (e_d.entropy(), t_d.entropy()),
                         (e_d.cdf(e_x), t_d.cdf(t_x)), (e_d.icdf(e_u), t_d.icdf(t_u)),
                         (e_d.variance, t_d.variance), (e_d.stddev, t_d.stddev)]:
        np.testing.assert_allclose(_np(e_out), _np(t_out), rtol=1e-5, atol=1e-6)
    e_d.log_prob(e_x).sum().backward()
    t_d.log_prob(t_x).sum().backward()
    np.testing.assert_allclose(e_loc.grad.numpy(), t_loc.grad.numpy(), rtol=1e-5)
    np.testing.assert_allclose(e_scale.grad.numpy(), t_scale.grad.numpy(), rtol=1e-5)
    assert repr(e_d).replace("ember.", "torch.") == repr(t_d)
    assert repr(Normal(0.0, 1.0)) == repr(td.Normal(0.0, 1.0))
    assert tuple(Normal(0.0, 1.0).batch_shape) == () and Normal(0.0, 1.0).loc.dtype == ember.float32
    assert tuple(e_d.sample((4, 2)).shape) == tuple(t_d.sample((4, 2)).shape) == (4, 2, 3)
    assert not e_d.sample().requires_grad
    # rsample is differentiable: d(loc + eps * scale)/dloc = 1
    e_loc.grad = None
    Normal(e_loc, e_scale).rsample((5,)).sum().backward()
    assert e_loc.grad.tolist() == [5.0, 5.0, 5.0]


def test_normal_samples_and_errors():
    ember.manual_seed(1)
    draws = Normal(ember.tensor(2.0), ember.tensor(0.5)).sample((20000,)).numpy()
    assert abs(draws.mean() - 2.0) < 0.02 and abs(draws.std() - 0.5) < 0.02
    assert _message(lambda: Normal(0.0, -1.0)) == _message(lambda: td.Normal(0.0, -1.0))
    e_d, t_d = Normal(ember.zeros(2), 1.0), td.Normal(torch.zeros(2), 1.0)
    assert (_message(lambda: e_d.log_prob(ember.zeros(3)))
            == _message(lambda: t_d.log_prob(torch.zeros(3))))
    with pytest.raises(ValueError, match="must be a Tensor"):
        e_d.log_prob([0.0, 1.0])


@pytest.mark.parametrize("param", ["probs", "logits"])
def test_bernoulli_matches_torch(param):
    raw = [0.2, 0.5, 0.9] if param == "probs" else [-1.0, 0.0, 2.5]
    e_p, t_p = _pair(raw, requires_grad=True)
    e_d, t_d = Bernoulli(**{param: e_p}), td.Bernoulli(**{param: t_p})
    e_x, t_x = _pair([1.0, 0.0, 1.0])
    for e_out, t_out in [(e_d.log_prob(e_x), t_d.log_prob(t_x)), (e_d.entropy(), t_d.entropy()),
                         (e_d.probs, t_d.probs), (e_d.logits, t_d.logits),
                         (e_d.variance, t_d.variance)]:
        np.testing.assert_allclose(_np(e_out), _np(t_out), rtol=1e-5, atol=1e-6)
    e_d.log_prob(e_x).sum().backward()
    t_d.log_prob(t_x).sum().backward()
    np.testing.assert_allclose(e_p.grad.numpy(), t_p.grad.numpy(), rtol=1e-5)
    sample = e_d.sample((3,))
    assert tuple(sample.shape) == (3, 3) and set(np.unique(sample.numpy())) <= {0.0, 1.0}
    assert repr(Bernoulli(probs=0.3)) == repr(td.Bernoulli(probs=0.3))
    assert repr(e_d).replace("ember.", "torch.") == repr(t_d)
    assert (_message(lambda: e_d.log_prob(ember.tensor([0.5, 0.0, 1.0])))
            == _message(lambda: t_d.log_prob(torch.tensor([0.5, 0.0, 1.0]))))


def test_constraints_print_and_check_as_torch():
    for name in ["real", "positive", "simplex", "boolean", "unit_interval", "real_vector",
                 "nonnegative_integer"]:
        assert repr(getattr(constraints, name)) == repr(getattr(td.constraints, name))
    assert repr(constraints.integer_interval(0, 3)) == repr(td.constraints.integer_interval(0, 3))
    assert repr(constraints.greater_than(1.5)) == repr(td.constraints.greater_than(1.5))
    value = [[0.5, 0.5], [0.2, 0.9], [-0.1, 1.1]]
    assert (constraints.simplex.check(ember.tensor(value)).tolist()
            == td.constraints.simplex.check(torch.tensor(value)).tolist())
    value = [[1.0, float("nan")], [0.0, 1.0]]
    assert (constraints.real_vector.check(ember.tensor(value)).tolist()
            == td.constraints.real_vector.check(torch.tensor(value)).tolist())


def test_kl_divergence_matches_torch():
    e_loc, t_loc = _pair([0.0, 1.0], requires_grad=True)
    e_scale, t_scale = _pair([1.0, 2.0])
    pairs = [
        ((Normal(e_loc, e_scale), Normal(0.5, 1.5)),
         (td.Normal(t_loc, t_scale), td.Normal(0.5, 1.5))),
    ]
    for kind, p_values, q_values in [("Categorical", [[0.2, 0.8], [0.0, 1.0]], [0.5, 0.5]),
                                     ("Categorical", [0.5, 0.5], [0.0, 1.0]),
                                     ("Bernoulli", [0.0, 0.3, 1.0], [0.5, 0.0, 0.2])]:
        (e_pv, t_pv), (e_qv, t_qv) = _pair(p_values), _pair(q_values)
        mine, theirs = getattr(ember.distributions, kind), getattr(td, kind)
        pairs.append(((mine(e_pv), mine(e_qv)), (theirs(t_pv), theirs(t_qv))))
    for (e_p, e_q), (t_p, t_q) in pairs:
        e_kl = ember.distributions.kl_divergence(e_p, e_q)
        t_kl = td.kl_divergence(t_p, t_q)
        np.testing.assert_allclose(_np(e_kl), _np(t_kl), rtol=1e-5, atol=1e-7)
    ember.distributions.kl_divergence(*pairs[0][0]).sum().backward()
    td.kl_divergence(*pairs[0][1]).sum().backward()
    np.testing.assert_allclose(e_loc.grad.numpy(), t_loc.grad.numpy(), rtol=1e-5)
    # Normal and Bernoulli are both exponential families: PyTorch's Bregman rule refuses
    with pytest.raises(NotImplementedError, match="The cross KL-divergence between different "
                                                  "exponential families cannot +be computed"):
        ember.distributions.kl_divergence(Normal(0.0, 1.0), Bernoulli(0.5))
    with pytest.raises(NotImplementedError, match="No KL\\(p \\|\\| q\\) is implemented"):
        ember.distributions.kl_divergence(
            ember.distributions.Categorical(probs=ember.tensor([0.5, 0.5])), Normal(0.0, 1.0))


def test_uniform_matches_torch():
    e_low, t_low = _pair([0.0, -1.0], requires_grad=True)
    e_high, t_high = _pair([2.0, 3.0], requires_grad=True)
    e_d, t_d = ember.distributions.Uniform(e_low, e_high), td.Uniform(t_low, t_high)
    e_x, t_x = _pair([0.5, -0.25])
    for e_out, t_out in [(e_d.log_prob(e_x), t_d.log_prob(t_x)), (e_d.entropy(), t_d.entropy()),
                         (e_d.cdf(e_x), t_d.cdf(t_x)), (e_d.icdf(e_x.abs()), t_d.icdf(t_x.abs())),
                         (e_d.mean, t_d.mean), (e_d.variance, t_d.variance),
                         (e_d.stddev, t_d.stddev)]:
        np.testing.assert_allclose(_np(e_out), _np(t_out), rtol=1e-6)
    e_d.rsample((4,)).sum().backward()
    assert e_low.grad is not None and e_high.grad is not None
    assert repr(e_d).replace("ember.", "torch.") == repr(t_d)
    assert repr(ember.distributions.Uniform(0.0, 1.0)) == repr(td.Uniform(0.0, 1.0))
    ember.manual_seed(0)
    draws = ember.distributions.Uniform(2.0, 4.0).sample((5000,)).numpy()
    assert draws.min() >= 2.0 and draws.max() < 4.0 and abs(draws.mean() - 3.0) < 0.05
    assert (_message(lambda: ember.distributions.Uniform(1.0, 0.0))
            == _message(lambda: td.Uniform(1.0, 0.0)))
    assert (_message(lambda: e_d.log_prob(ember.tensor([5.0, 0.0])))
            == _message(lambda: t_d.log_prob(torch.tensor([5.0, 0.0]))))


def test_independent_matches_torch():
    e_loc, t_loc = _pair([[0.0, 1.0, 2.0], [0.5, -1.0, 0.0]])
    e_d = ember.distributions.Independent(Normal(e_loc, 1.5), 1)
    t_d = td.Independent(td.Normal(t_loc, 1.5), 1)
    assert tuple(e_d.batch_shape) == tuple(t_d.batch_shape) == (2,)
    assert tuple(e_d.event_shape) == tuple(t_d.event_shape) == (3,)
    e_x, t_x = _pair([[0.1, 0.2, 0.3], [1.0, 1.0, 1.0]])
    np.testing.assert_allclose(e_d.log_prob(e_x).numpy(), t_d.log_prob(t_x).numpy(), rtol=1e-6)
    np.testing.assert_allclose(e_d.entropy().numpy(), t_d.entropy().numpy(), rtol=1e-6)
    assert tuple(e_d.sample((4,)).shape) == tuple(t_d.sample((4,)).shape) == (4, 2, 3)
    assert repr(e_d).replace("ember.", "torch.") == repr(t_d)
    assert repr(e_d.support) == repr(t_d.support)
    assert e_d.has_rsample and not e_d.has_enumerate_support
    assert (_message(lambda: ember.distributions.Independent(Normal(e_loc, 1.0), 3))
            == _message(lambda: td.Independent(td.Normal(t_loc, 1.0), 3)))
    assert (_message(lambda: e_d.log_prob(ember.zeros(2, 4)))
            == _message(lambda: t_d.log_prob(torch.zeros(2, 4))))


@pytest.mark.parametrize("param", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_multivariate_normal_matches_torch(param):
    e_loc, t_loc = _pair([[0.0, 1.0, -1.0], [2.0, 0.5, 0.0]], requires_grad=True)
    a = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 0.5]], dtype=np.float32)
    matrix = np.linalg.cholesky(a) if param == "scale_tril" else a
    e_m, t_m = _pair(matrix)
    e_d = ember.distributions.MultivariateNormal(e_loc, **{param: e_m})
    t_d = td.MultivariateNormal(t_loc, **{param: t_m})
    assert tuple(e_d.batch_shape) == tuple(t_d.batch_shape) == (2,)
    assert tuple(e_d.event_shape) == tuple(t_d.event_shape) == (3,)
    e_x, t_x = _pair([[[0.5, 0.5, 0.5], [1.0, 0.0, -1.0]], [[0.0, 0.0, 0.0], [3.0, 1.0, 1.0]]])
    for e_out, t_out in [(e_d.log_prob(e_x), t_d.log_prob(t_x)), (e_d.entropy(), t_d.entropy()),
                         (e_d.variance, t_d.variance), (e_d.covariance_matrix,
                                                        t_d.covariance_matrix),
                         (e_d.scale_tril, t_d.scale_tril),
                         (e_d.precision_matrix, t_d.precision_matrix)]:
        np.testing.assert_allclose(_np(e_out), _np(t_out), rtol=2e-5, atol=2e-6)
    e_d.log_prob(e_x).sum().backward()
    t_d.log_prob(t_x).sum().backward()
    np.testing.assert_allclose(e_loc.grad.numpy(), t_loc.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert repr(e_d).replace("ember.", "torch.") == repr(t_d)
    assert tuple(e_d.rsample((5,)).shape) == (5, 2, 3)
    ember.manual_seed(0)
    draws = ember.distributions.MultivariateNormal(ember.zeros(3), ember.tensor(a)).sample(
        (20000,)).numpy()
    np.testing.assert_allclose(np.cov(draws.T), a, atol=0.06)


def test_multivariate_normal_errors_match_torch():
    loc = np.zeros(2, dtype=np.float32)
    not_pd = np.array([[1.0, 2.0], [2.0, 1.0]], dtype=np.float32)
    mvn, t_mvn = ember.distributions.MultivariateNormal, td.MultivariateNormal
    for e_args, t_args in [((ember.tensor(loc),), (torch.tensor(loc),)),
                           ((ember.tensor(loc), ember.tensor(not_pd)),
                            (torch.tensor(loc), torch.tensor(not_pd))),
                           ((ember.tensor(0.0), ember.eye(1)), (torch.tensor(0.0), torch.eye(1)))]:
        assert (_message(lambda e_args=e_args: mvn(*e_args))
                == _message(lambda t_args=t_args: t_mvn(*t_args)))
    e_lower = mvn(ember.tensor(loc), scale_tril=ember.tensor([[1.0, 0.0], [0.5, 1.0]]))
    with pytest.raises(ValueError, match="LowerCholesky"):
        mvn(ember.tensor(loc), scale_tril=ember.tensor([[1.0, 0.5], [0.5, 1.0]]))
    assert repr(ember.distributions.constraints.positive_definite) == "PositiveDefinite()"
    assert e_lower.log_prob(ember.zeros(2)).shape == ()
