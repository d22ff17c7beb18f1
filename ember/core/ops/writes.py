"""Ops that write new values into a tensor: `fill_`, `zero_`, `copy_`, and the random
fills (`uniform_`, `normal_`, `bernoulli_`, `exponential_`, `random_`), plus
`bernoulli` and `multinomial`. Through ember.core.inplace, they are differentiable where
PyTorch's are (`copy_` and a tensor `fill_` pass the gradient to their source).
"""

from __future__ import annotations

from typing import Any

from ember.core import costs
from ember.core import dtype as dt
from ember.core.creation import arange, full, full_like, rand, randint, randn
from ember.core.declare import composite
from ember.core.grad_mode import no_grad
from ember.core.inplace import apply_inplace
from ember.core.ops.elementwise import eq, isfinite, lt, to_device, to_dtype, where
from ember.core.ops.indexing import SCALAR_TYPE_NAMES
from ember.core.ops.reduction import all as all_
from ember.core.ops.reduction import argmax, cumsum
from ember.core.ops.reduction import sum as sum_
from ember.core.ops.shape import cat, expand, squeeze, unsqueeze
from ember.core.tensor import Tensor


@composite(variants="function method", cost=costs.creation)
def fill_(input: Tensor, value: Any) -> Tensor:
    """Fills `input` with `value` (a number or a 0-d tensor), in place."""
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor "
                               f"with {value.ndim} dimensions.")
        return apply_inplace(input, lambda old: expand(to_dtype(value, input._dtype),
                                                       tuple(input.shape)), value, op="fill_")
    return apply_inplace(input, lambda old: full_like(old, value), op="fill_")


@composite(variants="function method", cost=costs.creation)
def zero_(input: Tensor) -> Tensor:
    """Fills `input` with zeros, in place."""
    return fill_(input, 0)


@composite(variants="method", cost=costs.movement)
def copy_(self: Tensor, src: Tensor, non_blocking: bool = False) -> Tensor:
    """Copies `src` (broadcastable; any device or dtype) into this tensor, in place."""
    if not isinstance(src, Tensor):
        src = Tensor._from_data(src, device=self.device)

    def compute(old: Tensor) -> Tensor:
        moved = to_dtype(to_device(src, self.device), self._dtype)
        return expand(moved, tuple(self.shape)) if tuple(moved.shape) != tuple(self.shape) \
            else moved
    return apply_inplace(self, compute, src, op="copy_")


@composite(variants="method", cost=costs.creation)
def uniform_(self: Tensor, a: float = 0.0, b: float = 1.0, *, generator: Any = None) -> Tensor:
    """Fills this tensor with numbers drawn uniformly from [a, b), in place."""
    r = rand(tuple(self.shape), dtype=self.dtype, device=self.device, generator=generator)
    return apply_inplace(self, lambda old: r * (b - a) + a, op="uniform_")


@composite(variants="method", cost=costs.creation)
def normal_(self: Tensor, mean: float = 0.0, std: float = 1.0, *,
            generator: Any = None) -> Tensor:
    """Fills this tensor with numbers drawn from N(mean, std²), in place."""
    r = randn(tuple(self.shape), dtype=self.dtype, device=self.device, generator=generator)
    return apply_inplace(self, lambda old: r * std + mean, op="normal_")


@composite(variants="function method", cost=costs.creation)
def bernoulli(input: Tensor, p: Any = None, *, generator: Any = None) -> Tensor:
    """1 with probability `input` (or `p`) for each element, else 0."""
    probs = input if p is None else full_like(input, p)
    r = rand(tuple(input.shape), dtype=probs.dtype if probs.dtype.is_floating_point else
             dt.get_default_dtype(), device=input.device, generator=generator)
    return to_dtype(lt(r, probs), input.dtype)


@composite(variants="method", cost=costs.creation)
def bernoulli_(self: Tensor, p: Any = 0.5, *, generator: Any = None) -> Tensor:
    """Fills this tensor with 1 with probability `p` (else 0), in place."""
    probs = p if isinstance(p, Tensor) else full(tuple(self.shape), p, dtype=dt.float32,
                                                  device=self.device)
    return copy_(self, bernoulli(probs, generator=generator))


@composite(variants="method", cost=costs.creation)
def exponential_(self: Tensor, lambd: float = 1.0, *, generator: Any = None) -> Tensor:
    """Fills this tensor with numbers drawn from the exponential distribution, in place."""
    u = rand(tuple(self.shape), dtype=self.dtype, device=self.device, generator=generator)
    return copy_(self, -(-u).log1p() / lambd)


# the exclusive upper bound of `random_()` with no bounds: every integer the dtype holds
# exactly (floats: up to 2**digits of their mantissa), from 0 (PyTorch's)
_RANDOM_TO = {"float64": 2 ** 53 + 1, "float32": 2 ** 24 + 1, "float16": 2 ** 11 + 1,
              "bfloat16": 2 ** 8 + 1, "int64": 2 ** 63, "int32": 2 ** 31, "int16": 2 ** 15,
              "int8": 2 ** 7, "uint8": 2 ** 8, "bool": 2}


@composite(variants="method", cost=costs.creation)
def random_(self: Tensor, from_: int | None = None, to: int | None = None, *,
            generator: Any = None) -> Tensor:
    """Fills this tensor with integers drawn uniformly from [from_, to), in place:
    `random_(to)` draws from [0, to); `random_()` from 0 to the largest integer the dtype
    holds exactly."""
    if to is None:
        from_, to = 0, (_RANDOM_TO[self.dtype.name] if from_ is None else from_)
    return copy_(self, randint(from_, to, tuple(self.shape), device=self.device,
                               generator=generator))




@composite(variants="function method", cost=costs.creation)
def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *,
                generator: Any = None) -> Tensor:
    """Indices drawn from the categorical distribution of each row of `input`
    (non-negative weights, not necessarily normalized): `num_samples` per row, as int64,
    shaped `(num_samples,)` for a 1-d `input` and `(rows, num_samples)` for a 2-d one.
    Without `replacement` a row never repeats an index."""
    if not input.dtype.is_floating_point:
        raise RuntimeError("multinomial only supports floating-point dtypes for input, got: "
                           f"{SCALAR_TYPE_NAMES[input.dtype.name]}")
    if input.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    categories = input.shape[-1]
    if not replacement and num_samples > categories:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    with no_grad():
        probs = input if input.ndim == 2 else unsqueeze(input, 0)
        # float16/bfloat16 weights are drawn in float32 (cumulative sums need the range)
        work = probs.dtype if probs.dtype.itemsize >= 4 else dt.float32
        probs = to_dtype(probs, work)
        rows = probs.shape[0]
        if rows == 0:
            out = full((0, num_samples), 0, dtype=dt.int64, device=input.device)
        else:
            if not all_(isfinite(probs).logical_and(probs >= 0)).item():
                raise RuntimeError("probability tensor contains either `inf`, `nan` or "
                                   "element < 0")
            if not all_(sum_(probs, 1) > 0).item():
                raise RuntimeError("invalid multinomial distribution (sum of probabilities "
                                   "<= 0)")
            out = (_draw_with_replacement if replacement else _draw_without_replacement)(
                probs, num_samples, generator)
        return squeeze(out, 0) if input.ndim == 1 else out


def _draw_with_replacement(probs: Tensor, num_samples: int, generator: Any) -> Tensor:
    # inverse CDF: a uniform draw u·total lands in category j when cdf[j-1] <= it < cdf[j];
    # the index is how many of the first k-1 cumulative sums it passed (a zero-weight
    # category has an empty interval, so it is never drawn)
    cdf = cumsum(probs, 1)
    target = rand((probs.shape[0], num_samples), dtype=probs.dtype, device=probs.device,
                  generator=generator) * cdf[:, -1:]
    return sum_(unsqueeze(cdf[:, :-1], 1) <= unsqueeze(target, 2), 2)


def _draw_without_replacement(probs: Tensor, num_samples: int, generator: Any) -> Tensor:
    # an exponential race (PyTorch's algorithm): each category gets weight / Exp(1), and
    # the num_samples largest keys, in order, are a draw without replacement
    u = rand(tuple(probs.shape), dtype=probs.dtype, device=probs.device, generator=generator)
    keys = probs / (-(-u).log1p()).clamp_min(1e-30)
    columns = unsqueeze(arange(probs.shape[1], device=probs.device), 0)
    picks = []
    for _ in range(num_samples):
        pick = argmax(keys, 1, keepdim=True)
        picks.append(pick)
        keys = where(eq(columns, pick), -1.0, keys)  # taken: below every weight (>= 0)
    return cat(picks, 1)
