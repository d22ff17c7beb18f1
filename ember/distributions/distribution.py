"""The base class of every distribution (torch.distributions.Distribution)."""

from __future__ import annotations

import warnings

import ember
from ember.distributions import constraints
from ember.distributions.utils import lazy_property

__all__ = ["Distribution"]


class Distribution:
    r"""Distribution is the abstract base class for probability distributions.

    Args:
        batch_shape (torch.Size): The shape over which parameters are batched.
        event_shape (torch.Size): The shape of a single sample (without batching).
        validate_args (bool, optional): Whether to validate arguments. Default: None
            (validation is on, as in PyTorch, unless `set_default_validate_args(False)`).
    """

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Sets whether validation is enabled or disabled."""
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args: bool | None = None):
        self._batch_shape = ember.Size(batch_shape)
        self._event_shape = ember.Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set "
                              "`arg_constraints = {}` or initialize the distribution with "
                              "`validate_args=False` to turn off validation.", stacklevel=2)
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue  # skip constraints that cannot be checked
                lazy = isinstance(getattr(type(self), param, None), lazy_property)
                if param not in self.__dict__ and lazy:
                    continue  # skip checking lazily-constructed args
                value = getattr(self, param)
                if not bool(constraint.check(value).all()):
                    raise ValueError(
                        f"Expected parameter {param} "
                        f"({type(value).__name__} of shape {tuple(value.shape)}) "
                        f"of distribution {self!r} "
                        f"to satisfy the constraint {constraint!r}, "
                        f"but found invalid values:\n{value}")

    def expand(self, batch_shape, _instance=None):
        """Returns a new distribution instance (or populates an existing instance provided by a
        derived class) with batch dimensions expanded to `batch_shape`: the parameters are
        `Tensor.expand`-ed views, and no argument checking is repeated.

        Args:
            batch_shape (torch.Size): the desired expanded size.
            _instance: new instance provided by subclasses that need to override `.expand`.
        """
        raise NotImplementedError

    def _get_checked_instance(self, cls, _instance=None):
        """A bare instance of this object's class for `expand` to fill in."""
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                "__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    @property
    def batch_shape(self) -> ember.Size:
        """Returns the shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self) -> ember.Size:
        """Returns the shape of a single sample (without batching)."""
        return self._event_shape

    @property
    def arg_constraints(self) -> dict:
        """Returns a dictionary from argument names to the constraints they satisfy."""
        raise NotImplementedError

    @property
    def support(self):
        """Returns a constraint object representing this distribution's support."""
        raise NotImplementedError

    @property
    def mean(self):
        """Returns the mean of the distribution."""
        raise NotImplementedError

    @property
    def mode(self):
        """Returns the mode of the distribution."""
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self):
        """Returns the variance of the distribution."""
        raise NotImplementedError

    @property
    def stddev(self):
        """Returns the standard deviation of the distribution."""
        return self.variance.sqrt()

    def sample(self, sample_shape=()):
        """Generates a sample_shape shaped sample (or batch of samples), without gradient."""
        with ember.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        """Generates a reparameterized sample_shape shaped sample (differentiable)."""
        raise NotImplementedError

    def sample_n(self, n: int):
        """Generates n samples (deprecated in PyTorch: use `.sample((n,))`)."""
        warnings.warn("`sample_n(n)` will be deprecated. Use `sample((n,))` instead.",
                      FutureWarning, stacklevel=2)
        return self.sample(ember.Size((n,)))

    def log_prob(self, value):
        """Returns the log of the probability density/mass function evaluated at `value`."""
        raise NotImplementedError

    def cdf(self, value):
        """Returns the cumulative density/mass function evaluated at `value`."""
        raise NotImplementedError

    def icdf(self, value):
        """Returns the inverse cumulative density/mass function evaluated at `value`."""
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True):
        """Returns a tensor of all values supported by a discrete distribution."""
        raise NotImplementedError

    def entropy(self):
        """Returns the entropy of the distribution, batched over batch_shape."""
        raise NotImplementedError

    def perplexity(self):
        """Returns the perplexity of the distribution, batched over batch_shape."""
        return ember.exp(self.entropy())

    def _extended_shape(self, sample_shape=()) -> ember.Size:
        """The shape of a sample: sample_shape + batch_shape + event_shape."""
        return ember.Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value) -> None:
        """Argument validation for `log_prob` and friends: shape, then support."""
        if not isinstance(value, ember.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = len(value.size()) - len(self._event_shape)
        if value.size()[event_dim_start:] != self._event_shape:
            raise ValueError(f"The right-most size of value must match event_shape: "
                             f"{value.size()} vs {self._event_shape}.")
        actual_shape = value.size()
        expected_shape = ember.Size(tuple(self._batch_shape) + tuple(self._event_shape))
        for i, j in zip(reversed(actual_shape), reversed(expected_shape)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: "
                                 f"{actual_shape} vs {expected_shape}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample "
                          "validation. Please initialize the distribution with "
                          "`validate_args=False` to turn off validation.", stacklevel=2)
            return
        if not bool(support.check(value).all()):
            raise ValueError(
                "Expected value argument "
                f"({type(value).__name__} of shape {tuple(value.shape)}) "
                f"to be within the support ({support!r}) "
                f"of the distribution {self!r}, "
                f"but found invalid values:\n{value}")

    def __repr__(self) -> str:
        param_names = [k for k in self.arg_constraints if k in self.__dict__]
        args_string = ", ".join(
            f"{p}: {self.__dict__[p] if self.__dict__[p].numel() == 1 else self.__dict__[p].size()}"
            for p in param_names)
        return self.__class__.__name__ + "(" + args_string + ")"
