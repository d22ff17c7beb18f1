"""KL divergence between distributions (torch.distributions.kl): `kl_divergence(p, q)`
dispatches on the pair of types to a function registered with `@register_kl`."""

from __future__ import annotations

import math
from collections.abc import Callable

import ember
import ember.nn.functional as F
from ember.distributions.bernoulli import Bernoulli
from ember.distributions.categorical import Categorical
from ember.distributions.distribution import Distribution
from ember.distributions.independent import Independent, _sum_rightmost
from ember.distributions.multivariate_normal import MultivariateNormal, _batch_mahalanobis
from ember.distributions.normal import Normal

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY: dict[tuple[type, type], Callable] = {}


def register_kl(type_p: type, type_q: type):
    """Decorator to register a pairwise function with :meth:`kl_divergence`.

    Example::

        @register_kl(Normal, Normal)
        def kl_normal_normal(p, q):
            # insert implementation here
    """
    if not isinstance(type_p, type) or not issubclass(type_p, Distribution):
        raise TypeError(f"Expected type_p to be a Distribution subclass but got {type_p}")
    if not isinstance(type_q, type) or not issubclass(type_q, Distribution):
        raise TypeError(f"Expected type_q to be a Distribution subclass but got {type_q}")

    def decorator(fun):
        _KL_REGISTRY[type_p, type_q] = fun
        return fun

    return decorator


def _dispatch_kl(type_p: type, type_q: type) -> Callable | None:
    """The registered function of the most specific pair of base classes, as PyTorch picks."""
    matches = [(super_p, super_q) for super_p, super_q in _KL_REGISTRY
               if issubclass(type_p, super_p) and issubclass(type_q, super_q)]
    if not matches:
        return None
    best = min(matches, key=lambda pq: (type_p.__mro__.index(pq[0]),
                                        type_q.__mro__.index(pq[1])))
    return _KL_REGISTRY[best]


def kl_divergence(p: Distribution, q: Distribution):
    r"""Compute Kullback-Leibler divergence :math:`KL(p \| q)` between two distributions.

    Args:
        p (Distribution): A :class:`~torch.distributions.Distribution` object.
        q (Distribution): A :class:`~torch.distributions.Distribution` object.

    Returns:
        Tensor: A batch of KL divergences of shape `batch_shape`.

    Raises:
        NotImplementedError: If the distribution types have not been registered via
            :meth:`register_kl`.
    """
    fun = _dispatch_kl(type(p), type(q))
    if fun is None:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type "
                                  f"{p.__class__.__name__} and q type {q.__class__.__name__}")
    return fun(p, q)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t[(q.probs == 0).expand_as(t)] = math.inf
    t[(p.probs == 0).expand_as(t)] = 0
    return t.sum(-1)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    t1 = p.probs * (F.softplus(-q.logits) - F.softplus(-p.logits))
    t1[q.probs == 0] = math.inf
    t1[p.probs == 0] = 0
    t2 = (1 - p.probs) * (F.softplus(q.logits) - F.softplus(p.logits))
    t2[q.probs == 1] = math.inf
    t2[p.probs == 1] = 0
    return t1 + t2


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_multivariatenormal_multivariatenormal(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different event "
                         "shapes cannot be computed")
    p_tril, q_tril = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    half_term1 = (q_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
                  - p_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1))
    n = p.event_shape[0]
    batch = ember.broadcast_shapes(q_tril.shape[:-2], p_tril.shape[:-2])
    solved = ember.linalg.solve_triangular(q_tril.expand(tuple(batch) + (n, n)),
                                           p_tril.expand(tuple(batch) + (n, n)), upper=False)
    term2 = solved.pow(2).sum((-2, -1))  # the trace of X X^T
    term3 = _batch_mahalanobis(q_tril, q.loc - p.loc)
    return half_term1 + 0.5 * (term2 + term3 - n)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    result = kl_divergence(p.base_dist, q.base_dist)
    return _sum_rightmost(result, p.reinterpreted_batch_ndims)
