"""`ember.testing.make_tensor` (torch.testing.make_tensor): a tensor of random values drawn
uniformly from `[low, high)`, by PyTorch's recipe, so a seeded program draws the same
values as under PyTorch."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

from ember.core import dtype as dt
from ember.core.creation import empty, randint
from ember.core.ops.complex import view_as_real
from ember.core.tensor import Tensor
from ember.core.typeinfo import finfo, iinfo

__all__ = ["make_tensor"]


def _low_high(dtype: dt.dtype, low: float | None, high: float | None, *, lowest: float,
              highest_exclusive: float, default_low: float, default_high: float
              ) -> tuple[float, float]:
    """The user's bounds (or the defaults), checked and clamped to the dtype's range;
    ceiled for integers (randint's upper bound is exclusive)."""
    low = default_low if low is None else low
    high = default_high if high is None else high
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and (dtype.is_floating_point or dtype.is_complex):
        warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or "
                      "complex types is deprecated since 2.1 and will be removed in 2.3. Use "
                      "`torch.full(...)` instead.", FutureWarning, stacklevel=3)
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest or low >= highest_exclusive:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, "
                         f"{high}), but {dtype} only supports [{lowest}, {highest_exclusive})")
    low = min(max(low, lowest), highest_exclusive)
    high = min(max(high, lowest), highest_exclusive)
    if not (dtype.is_floating_point or dtype.is_complex):
        return math.ceil(low), math.ceil(high)
    return low, high


def make_tensor(*shape: int | Sequence[int], dtype: dt.dtype, device: Any,
                low: float | None = None, high: float | None = None,
                requires_grad: bool = False, noncontiguous: bool = False,
                exclude_zero: bool = False, memory_format: Any = None) -> Tensor:
    """A tensor of `shape` on `device` filled with values drawn uniformly from `[low,
    high)` (defaults -9 and 9, 10 for integers; bool: 0 and 1), clamped to the dtype's
    range. `noncontiguous` gives a strided view, `exclude_zero` replaces zeros with the
    smallest positive value (1 for integers)."""
    if len(shape) == 1 and isinstance(shape[0], Sequence):
        shape = tuple(shape[0])
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError(f"The parameters `noncontiguous` and `memory_format` are mutually "
                         f"exclusive, but got noncontiguous={noncontiguous} and "
                         f"memory_format={memory_format}")
    floating = dtype.is_floating_point or dtype.is_complex
    if requires_grad and not floating:
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral "
                         f"dtypes, but got dtype={dtype}")
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:  # twice as long in the last dim, viewed every other element from 1
        shape = (*shape[:-1], 2 * shape[-1])
    if dtype is dt.bool_:
        low, high = _low_high(dtype, low, high, lowest=0, highest_exclusive=2, default_low=0,
                              default_high=2)
        result = randint(low, high, shape, device=device, dtype=dtype)
    elif not floating:
        info = iinfo(dtype)
        low, high = _low_high(dtype, low, high, lowest=info.min,
                              highest_exclusive=info.max + (dtype is not dt.int64),
                              default_low=-9, default_high=10)
        result = randint(low, high, shape, device=device, dtype=dtype)
    else:
        info = finfo(dtype)
        low, high = _low_high(dtype, low, high, lowest=info.min, highest_exclusive=info.max,
                              default_low=-9, default_high=9)
        result = empty(shape, device=device, dtype=dtype)
        target = view_as_real(result) if dtype.is_complex else result
        if high - low >= finfo(target.dtype).max:  # uniform_ needs high - low finite
            target.uniform_(low / 2, high / 2).mul_(2)
        else:
            target.uniform_(low, high)
    if noncontiguous:
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result[result == 0] = finfo(dtype).tiny if floating else 1
    if floating:
        result.requires_grad = requires_grad
    return result
