"""`ember.masked`, as `torch.masked`: reductions and normalizations that take a `mask=`
(True where an element takes part), and `MaskedTensor`, a tensor with its mask.

Each function follows `torch/masked/_ops.py` on strided tensors: the masked-out elements
are replaced by the reduction's identity (0 for `sum`, 1 for `prod`, the dtype's lowest
value for `amax`, -inf for `logsumexp` and `softmax` ...), then the ordinary op runs. A
slice with no element left gives that identity (`mean` and `var`: NaN, from dividing by
a count of 0). The mask broadcasts to the input's shape and is read as bool.
"""

from __future__ import annotations

import math
from typing import Any

import ember
from ember.core import dtype as dt
from ember.core.tensor import Tensor
from ember.masked.maskedtensor import MaskedTensor, as_masked_tensor, masked_tensor

__all__ = ["MaskedTensor", "masked_tensor", "as_masked_tensor", "sum", "prod", "mean",
           "amax", "amin", "argmax", "argmin", "norm", "var", "std", "logsumexp",
           "softmax", "log_softmax", "softmin", "normalize", "cumsum", "cumprod"]


def _input_mask(input: Tensor, mask: Any) -> Tensor:
    """The mask as a bool tensor of `input`'s shape (all True without one)."""
    if isinstance(input, MaskedTensor):
        input, own = input.get_data(), input.get_mask()
        mask = own if mask is None else mask
    if mask is None:
        return ember.ones(input.shape, dtype=ember.bool, device=input.device)
    if tuple(mask.shape) != tuple(input.shape):
        if mask.ndim > input.ndim:
            raise IndexError("_input_mask expected broadcastable mask (got mask "
                             "dimensionality higher than of the input)")
        mask = mask.broadcast_to(input.shape)
    return mask.to(dtype=ember.bool)


def _data(input: Any) -> Tensor:
    return input.get_data() if isinstance(input, MaskedTensor) else input


def _dims(input: Tensor, dim: Any) -> tuple[int, ...]:
    """`dim` as a tuple of dimensions; all of them for None."""
    if dim is None:
        return tuple(range(input.ndim))
    return (dim,) if isinstance(dim, int) else tuple(dim)


def _identity(op: str, d: dt.dtype) -> Any:
    """The value a masked-out element takes so that `op` ignores it."""
    if op in ("amax", "argmax"):
        return -math.inf if d.is_floating_point else ember.iinfo(d).min
    if op in ("amin", "argmin"):
        return math.inf if d.is_floating_point else ember.iinfo(d).max
    return {"sum": 0, "prod": 1, "logsumexp": -math.inf}[op]


def _filled(op: str, input: Any, mask: Any) -> Tensor:
    data = _data(input)
    return ember.where(_input_mask(input, mask), data, _identity(op, data.dtype))


def sum(input: Tensor, dim: Any = None, *, keepdim: bool = False, dtype: Any = None,  # noqa: A001
        mask: Tensor | None = None) -> Tensor:
    """Returns the sum of all the elements in the `input` tensor along the given
    dimension(s) `dim` while the `input` elements are masked out according to the
    boolean tensor `mask`. The identity value of sum operation is 0."""
    return ember.sum(_filled("sum", input, mask), _dims(_data(input), dim), keepdim=keepdim,
                     dtype=dtype)


def prod(input: Tensor, dim: Any = None, *, keepdim: bool = False, dtype: Any = None,
         mask: Tensor | None = None) -> Tensor:
    """Returns the product of the elements along `dim`, masked-out elements counting as
    1 (the identity value of the product)."""
    result = _filled("prod", input, mask)
    if dtype is not None:
        result = result.to(dtype)
    for d in sorted((d % max(result.ndim, 1) for d in _dims(result, dim)), reverse=True):
        result = result.prod(d, keepdim=bool(keepdim))
    return result


def amax(input: Tensor, dim: Any = None, *, keepdim: bool = False, dtype: Any = None,
         mask: Tensor | None = None) -> Tensor:
    """Returns the maximum along `dim` of the elements `mask` keeps; the identity value
    (the dtype's lowest: -inf for floats) where none is kept."""
    result = ember.amax(_filled("amax", input, mask), _dims(_data(input), dim), keepdim)
    return result if dtype is None else result.to(dtype)


def amin(input: Tensor, dim: Any = None, *, keepdim: bool = False, dtype: Any = None,
         mask: Tensor | None = None) -> Tensor:
    """Returns the minimum along `dim` of the elements `mask` keeps; the identity value
    (the dtype's highest: inf for floats) where none is kept."""
    result = ember.amin(_filled("amin", input, mask), _dims(_data(input), dim), keepdim)
    return result if dtype is None else result.to(dtype)


def _arg(op: str, input: Any, dim: Any, keepdim: bool, dtype: Any, mask: Any) -> Tensor:
    filled = _filled(op, input, mask)
    result = getattr(ember, op)(filled, dim, keepdim=keepdim)
    # (PyTorch's masked argmax returns the index in `dtype`, the input's by default)
    return result.to(filled.dtype if dtype is None else dtype)


def argmax(input: Tensor, dim: int | None = None, *, keepdim: bool = False,
           dtype: Any = None, mask: Tensor | None = None) -> Tensor:
    """Returns the index of the maximum along `dim` of the elements `mask` keeps, in
    `dtype` (the input's by default)."""
    return _arg("argmax", input, dim, keepdim, dtype, mask)


def argmin(input: Tensor, dim: int | None = None, *, keepdim: bool = False,
           dtype: Any = None, mask: Tensor | None = None) -> Tensor:
    """Returns the index of the minimum along `dim` of the elements `mask` keeps, in
    `dtype` (the input's by default)."""
    return _arg("argmin", input, dim, keepdim, dtype, mask)


def _float_dtype(op: str, input: Tensor, dtype: Any) -> Any:
    if dtype is not None:
        return dtype
    if input.dtype.is_floating_point or input.dtype.is_complex:
        return input.dtype
    raise ValueError(f"{op}(): Could not infer output dtype. Input dtype must be either a "
                     f"floating point or complex dtype. Got: {input.dtype}")


def mean(input: Tensor, dim: Any = None, *, keepdim: bool = False, dtype: Any = None,
         mask: Tensor | None = None) -> Tensor:
    """Returns the mean along `dim` of the elements `mask` keeps: NaN where none is."""
    dtype = _float_dtype("mean", _data(input), dtype)
    count = sum(_input_mask(input, mask).to(dtype), dim, keepdim=keepdim)
    return sum(input, dim, keepdim=keepdim, dtype=dtype, mask=mask) / count


def norm(input: Tensor, ord: float | None = 2.0, dim: Any = None, *, keepdim: bool = False,
         dtype: Any = None, mask: Tensor | None = None) -> Tensor:
    """Returns the vector norm of order `ord` along `dim` of the elements `mask` keeps
    (the others count as 0)."""
    filled = _filled("sum", input, mask)
    dtype = _float_dtype("norm", filled, dtype)
    return ember.linalg.vector_norm(filled, 2.0 if ord is None else ord, _dims(filled, dim),
                                    keepdim, dtype=dtype)


def var(input: Tensor, dim: Any = None, unbiased: bool | None = None, *,
        correction: float | None = None, keepdim: bool = False, dtype: Any = None,
        mask: Tensor | None = None) -> Tensor:
    """Returns the variance along `dim` of the elements `mask` keeps, with `correction`
    (or `unbiased`: 1 or 0; default 1) subtracted from their count."""
    data = _data(input)
    dtype = _float_dtype("var", data, dtype)
    if unbiased is not None and correction is not None:
        raise ValueError("Only one of unbiased and correction may be given")
    correction = 1 if correction is None and unbiased is None else \
        (correction if correction is not None else int(unbiased))
    keep = _input_mask(input, mask)
    count = sum(keep.to(dtype), dim, keepdim=True)
    centred = data.to(dtype) - sum(data, dim, keepdim=True, dtype=dtype, mask=keep) / count
    total = sum(centred * centred.conj(), dim, keepdim=keepdim, dtype=dtype, mask=keep)
    if not keepdim:
        count = count.reshape(total.shape)
    return total / (count - correction).clamp(min=0)


def std(input: Tensor, dim: Any = None, unbiased: bool | None = None, *,
        correction: int | None = None, keepdim: bool = False, dtype: Any = None,
        mask: Tensor | None = None) -> Tensor:
    """The square root of :func:`var`."""
    return var(input, dim, unbiased, correction=correction, keepdim=keepdim, dtype=dtype,
               mask=mask).sqrt()


def logsumexp(input: Tensor, dim: Any = None, *, keepdim: bool = False, dtype: Any = None,
              mask: Tensor | None = None) -> Tensor:
    """Returns log(sum(exp(x))) along `dim` of the elements `mask` keeps (-inf where
    none is)."""
    filled = _filled("logsumexp", input, mask)
    if dtype is not None:
        filled = filled.to(dtype)
    return ember.logsumexp(filled, _dims(filled, dim), keepdim=keepdim)


def _normalized(op: str, fill: float, input: Any, dim: int, dtype: Any, mask: Any) -> Tensor:
    data = _data(input)
    filled = ember.where(_input_mask(input, mask), data, fill)
    return getattr(ember.nn.functional, op)(filled, dim, dtype=dtype)


def softmax(input: Tensor, dim: int, *, dtype: Any = None,
            mask: Tensor | None = None) -> Tensor:
    """Softmax along `dim` over the elements `mask` keeps: the others get 0 (a slice
    with none kept: NaN)."""
    return _normalized("softmax", -math.inf, input, dim, dtype, mask)


def log_softmax(input: Tensor, dim: int, *, dtype: Any = None,
                mask: Tensor | None = None) -> Tensor:
    """Log-softmax along `dim` over the elements `mask` keeps: the others get -inf."""
    return _normalized("log_softmax", -math.inf, input, dim, dtype, mask)


def softmin(input: Tensor, dim: int, *, dtype: Any = None,
            mask: Tensor | None = None) -> Tensor:
    """Softmin along `dim` over the elements `mask` keeps: the others get 0."""
    return _normalized("softmin", math.inf, input, dim, dtype, mask)


def normalize(input: Tensor, ord: float, dim: int, *, eps: float = 1e-12, dtype: Any = None,
              mask: Tensor | None = None) -> Tensor:
    """`input` divided by its masked norm of order `ord` along `dim` (at least `eps`);
    masked-out elements become 0."""
    filled = _filled("sum", input, mask)
    nrm = norm(input, ord, dim, keepdim=True, dtype=dtype, mask=mask)
    return ember.divide(filled if dtype is None else filled.to(dtype), nrm.clamp(min=eps))


def cumsum(input: Tensor, dim: int, *, dtype: Any = None,
           mask: Tensor | None = None) -> Tensor:
    """Cumulative sum along `dim`, masked-out elements counting as 0."""
    return ember.cumsum(_filled("sum", input, mask), dim, dtype=dtype)


def cumprod(input: Tensor, dim: int, *, dtype: Any = None,
            mask: Tensor | None = None) -> Tensor:
    """Cumulative product along `dim`, masked-out elements counting as 1."""
    return ember.cumprod(_filled("prod", input, mask), dim, dtype=dtype)
