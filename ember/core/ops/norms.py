"""Linear algebra: norms, the condition number, distances and covariance.

Composites of the factorizations (ember.core.ops.factorizations: the SVD for the
nuclear and spectral norms and `cond`, the inverse for `cond` with other orders) and of
reductions, so they run on every backend and differentiate through their parts.
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Any

from ember.core import costs
from ember.core import dtype as dt
from ember.core.declare import composite, write_out
from ember.core.dispatch import kernel_refuses
from ember.core.errors import ArgumentTypeError
from ember.core.host import dtype_arg
from ember.core.opdef import Precision as P
from ember.core.ops.elementwise import where
from ember.core.ops.factorizations import _check, _diag, _inv_ex, _matrix_cost, _svd
from ember.core.ops.linalg import _word, matmul
from ember.core.ops.reduction import in_float32
from ember.core.shapes import normalize_dim
from ember.core.tensor import Tensor


def _write(name: str, out: Any, result: Tensor) -> Tensor:
    return write_out(name, out, result)


# -- norms ---------------------------------------------------------------------------------


def _float_input(op: str, A: Tensor, dtype: Any) -> Tensor:
    if dtype is not None:
        A = A.to(dtype)
    if not A.dtype._differentiable:
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got "
                           f"{_word(A.dtype)}")
    return A


def _check_norm_dtype(op: str, x: Tensor, dtype: Any) -> None:
    """PyTorch's checks of a norm's `dtype=`: a float or complex input, a float or complex
    dtype, complex for complex inputs only, and no narrowing of the input's dtype."""
    _float_input(op, x, None)
    if not dtype._differentiable:
        raise RuntimeError(f"{op}: dtype should be floating point or complex, but got "
                           f"{_word(dtype)}")
    kind = "complex" if x.dtype.is_complex else "real"
    if dtype.is_complex != x.dtype.is_complex:
        raise RuntimeError(f"{op}: dtype should be {kind} for {kind} inputs, but got "
                           f"{_word(dtype)}")
    if dt.promote_types(x.dtype, dtype) is not dtype:
        raise RuntimeError(f"{op}: the dtype of the input ({_word(x.dtype)}) should be "
                           f"convertible without narrowing to the specified dtype "
                           f"({_word(dtype)})")


def _vector_norm(x: Tensor, ord: Any, dims: Any, keepdim: bool) -> Tensor:
    if x._dtype in dt.HALF_DTYPES and ord not in (math.inf, -math.inf):  # (those: exact)
        return in_float32(_vector_norm, x, ord, dims, keepdim)
    if ord == 2:
        return x.norm(2, dims, keepdim)
    if ord == math.inf:
        return x.abs().amax(dims if dims is not None else tuple(range(x.ndim)), keepdim)
    if ord == -math.inf:
        return x.abs().amin(dims if dims is not None else tuple(range(x.ndim)), keepdim)
    if ord == 0:
        return x.norm(0, dims, keepdim)
    if ord == 1:
        return x.abs().sum(dims, keepdim)
    return (x.abs() ** ord).sum(dims, keepdim) ** (1.0 / ord)


@composite(complex=True, variants="", cost=costs.reduction(2), precision=P.FLOAT32)
def linalg_vector_norm(x: Tensor, ord: Any = 2, dim: Any = None, keepdim: bool = False, *,
                       dtype: Any = None, out: Any = None) -> Tensor:
    """`linalg.vector_norm`: the `ord`-norm of the vectors along `dim` (all elements, as one
    vector, when None): `sum(|x|^ord)^(1/ord)`; `inf`/`-inf` the largest/smallest |x|,
    0 the count of non-zeros. A complex tensor's is that of its magnitudes (real)."""
    if dtype is not None:
        _check_norm_dtype("linalg.vector_norm", x, dtype_arg(dtype, "linalg_vector_norm"))
    if x.dtype.is_complex:
        x = x.abs() if dtype is None else x.to(dtype_arg(dtype, "linalg_vector_norm")).abs()
        dtype = None
    x = _float_input("linalg.vector_norm", x, dtype)
    if not isinstance(ord, (numbers.Real, Tensor)):  # (its parser: a bool is a Number)
        raise ArgumentTypeError("linalg_vector_norm", "ord", 1, "Number", ord)
    if isinstance(dim, int):
        dim = (dim,)
    if ord in (math.inf, -math.inf) and x.numel() == 0 and (
            dim is None or any(x.shape[d] == 0 for d in dim)):
        raise RuntimeError(f"linalg.vector_norm cannot compute the {ord} norm on an empty "
                           "tensor because the operation does not have an identity")
    result = _vector_norm(x, float(ord), tuple(dim) if dim is not None else None, keepdim)
    return result if out is None else _write("linalg.vector_norm", out, result)


def _matrix_dims(op: str, A: Tensor, dim: Any) -> tuple[int, int]:
    if A.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if len(dim) != 2:
        raise RuntimeError(f"{op}: dim must be a 2-tuple. Got {' '.join(map(str, dim))}")
    d0, d1 = normalize_dim(op, dim[0], A.ndim), normalize_dim(op, dim[1], A.ndim)
    if d0 == d1:
        raise RuntimeError(f"{op}: dims must be different. Got ({dim[0]}, {dim[1]})")
    return d0, d1


def _matrix_norm(A: Tensor, ord: Any, d0: int, d1: int, keepdim: bool) -> Tensor:
    if ord == "fro":
        return A.norm(2, (d0, d1), keepdim)
    if ord in ("nuc", 2, -2):
        if A.dtype in (dt.float16, dt.bfloat16):  # (before the SVD's own refusal)
            raise RuntimeError(f"linalg.matrix_norm: Low precision dtypes not supported. Got "
                               f"{_word(A.dtype)}")
        S = _svd(A.movedim((d0, d1), (-2, -1)), False)[1]
        out = S.sum(-1) if ord == "nuc" else S.amax(-1) if ord == 2 else S.amin(-1)
        if keepdim:
            out = out.unsqueeze(min(d0, d1)).unsqueeze(max(d0, d1))
        return out
    if ord in (1, -1, math.inf, -math.inf):
        summed, reduced = (d0, d1) if ord in (1, -1) else (d1, d0)
        sums = A.abs().sum(summed, keepdim=True)
        out = sums.amax(reduced, keepdim=True) if ord > 0 else sums.amin(reduced, keepdim=True)
        return out if keepdim else out.squeeze(max(d0, d1)).squeeze(min(d0, d1))
    raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")


@composite(complex=True, variants="", cost=costs.reduction(2), precision=P.FLOAT32)
def linalg_matrix_norm(A: Tensor, ord: Any = "fro", dim: Any = (-2, -1),
                       keepdim: bool = False, *, dtype: Any = None,
                       out: Any = None) -> Tensor:
    """`linalg.matrix_norm`: the matrix norm over the two dimensions `dim`: "fro"
    (Frobenius), "nuc" (nuclear: the sum of the singular values), 2 / -2 (the
    largest / smallest singular value), 1 / -1 (max / min column sum of |A|), inf / -inf
    (max / min row sum)."""
    A = _float_input("linalg.matrix_norm", A, dtype)
    d0, d1 = _matrix_dims("linalg.matrix_norm", A, dim)
    if ord not in ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    result = _matrix_norm(A, ord, d0, d1, keepdim)
    return result if out is None else _write("linalg.matrix_norm", out, result)


@composite(complex=True, variants="", cost=costs.reduction(2))
def linalg_norm(A: Tensor, ord: Any = None, dim: Any = None, keepdim: bool = False, *,
                dtype: Any = None, out: Any = None) -> Tensor:
    """`linalg.norm`: a vector norm (dim an int, or the input 1-D), or a matrix norm (dim a
    pair, or the input 2-D); `ord=None` with `dim=None` is the 2-norm of all elements."""
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None and len(dim) == 2 or (dim is None and ord is not None and A.ndim == 2):
        result = linalg_matrix_norm(A, "fro" if ord is None else ord,
                                    (-2, -1) if dim is None else dim, keepdim, dtype=dtype)
    elif dim is None and ord is not None and A.ndim != 1:
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must "
                           f"be 1D or 2D. Got {A.ndim}D.")
    else:
        result = linalg_vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)
    return result if out is None else _write("linalg.norm", out, result)


@composite(complex=True, variants="function", cost=costs.reduction(2), precision=P.FLOAT32)
def frobenius_norm(input: Tensor, dim: Any = (-2, -1), keepdim: bool = False, *,
                   out: Any = None) -> Tensor:
    """The Frobenius norm over `dim` (deprecated in PyTorch for `linalg.matrix_norm`)."""
    dim = (dim,) if isinstance(dim, int) else tuple(dim)
    if len(dim) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dim)} dimensions "
                           "instead.")
    result = linalg_vector_norm(input, 2, dim, keepdim)
    return result if out is None else _write("frobenius_norm", out, result)


@composite(complex=True, variants="function", cost=_matrix_cost(12.0), precision=P.FLOAT32)
def nuclear_norm(input: Tensor, dim: Any = None, keepdim: bool = False, *,
                 out: Any = None) -> Tensor:
    """The nuclear norm (the sum of the singular values) over `dim` (the last two when
    not given; `nuclear_norm(A, True)` keeps the dimensions)."""
    if isinstance(dim, bool):
        dim, keepdim = None, dim
    if dim is None:
        dim = (-2, -1)
    result = linalg_matrix_norm(input, "nuc", dim, keepdim)
    return result if out is None else _write("nuclear_norm", out, result)


@composite(complex=True, variants="", cost=_matrix_cost(12.0), cpu_precision=P.FLOAT32)
def linalg_cond(A: Tensor, p: Any = None, *, out: Any = None) -> Tensor:
    """`linalg.cond`: the condition number `norm(A, p) * norm(inv(A), p)`; for p None or 2
    (the default) and -2, the ratio of the extreme singular values."""
    if p in (None, 2, -2):
        _check("linalg.svd", A, square=False)  # (PyTorch's words: the SVD's)
        S = _svd(A, False)[1]
        result = S[..., 0] / S[..., -1] if p in (None, 2) else S[..., -1] / S[..., 0]
    else:
        _check("linalg.cond", A)
        inverse_, info = _inv_ex(A)  # a singular matrix's condition number is inf
        result = _matrix_norm(A, p, A.ndim - 2, A.ndim - 1, False) * \
            _matrix_norm(where(info.unsqueeze(-1).unsqueeze(-1) != 0, 0.0, inverse_), p,
                         A.ndim - 2, A.ndim - 1, False)
        result = where(info != 0, math.inf, result)
    return result if out is None else _write("linalg.cond", out, result)


# -- statistics and distances ------------------------------------------------------------


def _check_cov_weights(name: str, weights: Tensor, kind: str, kind_ok: bool) -> None:
    """PyTorch's checks of cov's `fweights` / `aweights`: one or fewer dims, then `kind`."""
    if weights.ndim > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got "
                           f"{name} with {weights.ndim} dimensions")
    if not kind_ok:
        raise RuntimeError(f"cov(): expected {name} to have {kind} dtype but got {name} with "
                           f"{dt.SCALAR_TYPE_NAMES.get(weights.dtype.name)} dtype")


@composite(variants="function method", cost=costs.matmul,
           cpu_precision=P.LOWER)
def cov(input: Tensor, *, correction: int = 1, fweights: Tensor | None = None,
        aweights: Tensor | None = None) -> Tensor:
    """The covariance matrix of the variables in the rows of `input` (observations in the
    columns), with frequency and importance weights; `correction=1` is Bessel's."""
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.ndim} dimensions")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    if not x.dtype.is_floating_point:
        x = x.to(dt.get_default_dtype())
    n_obs = x.shape[1]
    w = None
    if fweights is not None:
        _check_cov_weights("fweights", fweights, "integral", not (
            fweights.dtype.is_floating_point or fweights.dtype.is_complex
            or fweights.dtype is dt.bool_))
        if fweights.numel() != n_obs:
            raise RuntimeError(f"cov(): expected fweights to have the same numel as there are "
                               f"observations in the input but got {fweights.numel()} != "
                               f"{n_obs}")
        if n_obs and bool((fweights < 0).any()):
            raise RuntimeError("cov(): fweights cannot be negative")
        w = fweights
    if aweights is not None:
        _check_cov_weights("aweights", aweights, "floating point",
                           aweights.dtype.is_floating_point)
        if aweights.numel() != n_obs:
            raise RuntimeError(f"cov(): expected aweights to have the same numel as there are "
                               f"observations in the input but got {aweights.numel()} != "
                               f"{n_obs}")
        if n_obs and bool((aweights < 0).any()):
            raise RuntimeError("cov(): aweights cannot be negative")
        w = aweights if w is None else w * aweights
    if w is not None:
        w = w.to(x.dtype)
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum
    else:
        w_sum = n_obs
        avg = x.mean(1)
    if w is not None and correction != 0:
        norm_factor = w_sum - correction * ((w * aweights).sum() / w_sum) \
            if aweights is not None else w_sum - correction
    else:
        norm_factor = w_sum - correction
    if float(norm_factor) <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.", UserWarning, stacklevel=3)
        norm_factor = norm_factor * 0 if isinstance(norm_factor, Tensor) else 0
    xc = x - avg.unsqueeze(1)
    c = matmul(xc, (xc * w if w is not None else xc).mT)
    return (c / norm_factor).squeeze()


@composite(variants="function method", cost=costs.matmul,
           cpu_precision=P.LOWER)
def corrcoef(input: Tensor) -> Tensor:
    """The Pearson correlation coefficients of the variables in the rows of `input`,
    clipped to [-1, 1]."""
    c = cov(input)
    if c.ndim == 0:
        return c / c
    d = _diag(c).sqrt()
    c = c / d.unsqueeze(1)
    c = c / d.unsqueeze(0)
    return c.clamp(-1, 1)


@composite(complex=True, node_label="DistBackward0",
           variants="function method", cost=costs.pointwise(3), precision=P.FLOAT32)
def dist(input: Tensor, other: Tensor, p: Any = 2) -> Tensor:
    """The p-norm of `input - other` (broadcast, promoted), as a 0-d tensor."""
    difference = input - other
    if not difference.dtype._differentiable:
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. "
                           f"Got {_word(difference.dtype)} instead.")
    return linalg_vector_norm(difference, float(p))


_CDIST_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                "donot_use_mm_for_euclid_dist")


@composite(node_label="CdistBackward0",
           variants="function", cost=costs.pointwise(3), cpu_precision=P.FLOAT32,
           precision=P.FLOAT32)
def cdist(x1: Tensor, x2: Tensor, p: float = 2.0,
          compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """The p-norm distance between each row vector of `x1` (.., P, M) and each of `x2`
    (.., R, M): (.., P, R), batches broadcast. Computed from the differences in every
    mode (exact where PyTorch's matrix-product route for p=2 rounds)."""
    if compute_mode not in _CDIST_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    for name, x in (("X1", x1), ("X2", x2)):
        if not x.dtype.is_floating_point:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: "
                               f"{_word(x.dtype)}")
        if x.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: "
                               f"{x.ndim}D")
    if (x1.dtype in (dt.float16, dt.bfloat16) and x1.device.type == "cpu"
            and x1.shape[-1] == x2.shape[-1]):
        raise kernel_refuses("cdist", x1.dtype)  # (PyTorch's CPU kernel: float32/64 only)
    if x1.dtype is not x2.dtype:
        raise RuntimeError(f"expected scalar type {_word(x1.dtype)} but found "
                           f"{_word(x2.dtype)}")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    if p == float("inf") and diff.requires_grad:
        # PyTorch's cdist gradient gives each tied largest coordinate the whole gradient
        # (the norm's splits it): the maximum plus zeros that carry those slopes
        size = diff.abs()
        top = size.amax(-1, keepdim=True).detach()
        return (top + ((size - top) * (size == top)).sum(-1, keepdim=True)).squeeze(-1)
    return linalg_vector_norm(diff, float(p), -1)


@composite(variants="function", cost=costs.reduction(2))
def norm_except_dim(v: Tensor, pow: Any = 2, dim: int = 0) -> Tensor:
    """The `pow`-norm of `v` over every dimension but `dim`, kept with size 1 (the norm of
    all of `v` for `dim=-1`), as weight normalization takes it: PyTorch's rule, dimension
    for dimension."""
    if dim == -1:
        return v.norm(pow)
    if dim == 0:
        return v.contiguous().reshape(v.shape[0], -1).norm(pow, 1).reshape(
            (v.shape[0],) + (1,) * (v.ndim - 1))
    if dim == v.ndim - 1:
        return v.contiguous().reshape(-1, v.shape[-1]).norm(pow, 0).reshape(
            (1,) * (v.ndim - 1) + (v.shape[-1],))
    return norm_except_dim(v.transpose(0, dim), pow, 0).transpose(0, dim)


def _weight_norm_label(v: Tensor, g: Tensor, dim: int = 0) -> str | None:
    # PyTorch's fused kernel (one node) serves the first and last dim of a full-precision
    # v; it decomposes the others (and dim=-1, all of v) as here
    fused = dim in (0, v.ndim - 1) and dim != -1 and \
        v.dtype not in (dt.float16, dt.bfloat16) and g.dtype not in (dt.float16, dt.bfloat16)
    return "WeightNormInterfaceBackward0" if fused else None


@composite(variants="function", cost=costs.reduction(3), node_label=_weight_norm_label)
def _weight_norm(v: Tensor, g: Tensor, dim: int = 0) -> Tensor:
    """Weight normalization's weight `v * (g / norm_except_dim(v, 2, dim))` (`dim=-1`:
    over all of `v`): what `nn.utils.weight_norm` and its parametrization compute."""
    return v * (g / norm_except_dim(v, 2, dim))


@composite(variants="function", cost=costs.reduction(2))
def native_norm(input: Tensor, p: Any = 2, dim: Any = None, keepdim: bool = False,
                dtype: Any = None) -> Tensor:
    """PyTorch's norm kernel of sparse tensors. ember has no sparse tensors, and PyTorch
    runs no dense one through it either: this raises, as PyTorch does for a dense input
    (`ember.linalg.vector_norm` is the norm of a dense tensor)."""
    raise NotImplementedError(f"Could not run 'aten::native_norm' with arguments from the "
                              f"'{input.device.type.upper()}' backend: native_norm takes "
                              f"sparse tensors only (use ember.linalg.vector_norm)")
