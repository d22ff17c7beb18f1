"""Probability distributions with PyTorch's API (torch.distributions): Categorical,
Normal, MultivariateNormal, Bernoulli, Uniform and Independent, with their constraints,
argument validation and KL divergences, for policy-gradient and variational programs.

    m = Categorical(probs)
    action = m.sample()
    loss = -m.log_prob(action) * reward
"""

from ember.distributions import constraints, transforms
from ember.distributions.bernoulli import Bernoulli
from ember.distributions.categorical import Categorical
from ember.distributions.distribution import Distribution
from ember.distributions.independent import Independent
from ember.distributions.kl import kl_divergence, register_kl
from ember.distributions.multivariate_normal import MultivariateNormal
from ember.distributions.normal import Normal
from ember.distributions.transformed_distribution import TransformedDistribution
from ember.distributions.uniform import Uniform

__all__ = ["Bernoulli", "Categorical", "Distribution", "Independent", "MultivariateNormal",
           "Normal", "TransformedDistribution", "Uniform", "constraints", "kl_divergence",
           "register_kl", "transforms"]
