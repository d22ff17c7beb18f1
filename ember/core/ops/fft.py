"""Discrete Fourier transforms (`torch.fft`, exported by ember.fft).

Three primitives do the work, as in PyTorch (ATen's `_fft_c2c`, `_fft_r2c`, `_fft_c2r`);
every `torch.fft` function is a composite that resizes its input (`n`/`s`: zeros padded
at the end, or the end cut off), picks the dimensions and the normalization, and calls
one of them. Their gradients are PyTorch's (derivatives.yaml): a transform's adjoint,
with the conjugate-symmetric halves of the one-sided transforms accounted for.

    _fft_c2c  kernel(x, *, dims, normalization, forward) -> complex, x's dtype
    _fft_r2c  kernel(x, *, dims, normalization, onesided) -> complex of x's precision
    _fft_c2r  kernel(x, *, dims, normalization, last_dim_size) -> real of x's precision

`normalization` scales the result: 0 not at all, 1 by 1/sqrt(n), 2 by 1/n (n the
number of points transformed); `forward` picks the sign of the exponent. The xp
kernels run NumPy's (or CuPy's) pocketfft and keep the input's precision.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ember.core import costs
from ember.core import dtype as dt
from ember.core.apply import apply
from ember.core.creation import arange
from ember.core.declare import composite, primitive
from ember.core.graph import relabel
from ember.core.memory_format import contiguous_format
from ember.core.opdef import OPS, Cost, Grad, OutMeta
from ember.core.opdef import Precision as P
from ember.core.ops.complex import real
from ember.core.ops.elementwise import to_dtype
from ember.core.ops.nn import constant_pad_nd
from ember.core.ops.rearrange import roll
from ember.core.shapes import normalize_dim
from ember.core.tensor import Tensor

NONE, BY_ROOT_N, BY_N = 0, 1, 2


def _fft_cost(input: Any, **_: Any) -> Cost:
    n = max(1, math.prod(input.shape))
    return Cost(5.0 * n * math.log2(max(2, n)), 2.0 * costs.nbytes(input))


# -- the primitives -------------------------------------------------------------------


def _c2c_rule(input, *, dims, normalization, forward):
    return OutMeta(tuple(input.shape), input.dtype, None)


def _r2c_rule(input, *, dims, normalization, onesided):
    shape = list(input.shape)
    if onesided:
        shape[dims[-1]] = shape[dims[-1]] // 2 + 1
    return OutMeta(tuple(shape), input.dtype.to_complex(), None)


def _c2r_rule(input, *, dims, normalization, last_dim_size):
    shape = list(input.shape)
    shape[dims[-1]] = last_dim_size
    return OutMeta(tuple(shape), input.dtype.to_real(), None)


def _r2c_grad(grad, input_shape, dims, normalization, onesided):
    """PyTorch's fft_r2c_backward: the one-sided half zero-padded to the full length, an
    inverse c2c, its real part."""
    if onesided:
        last = dims[-1]
        missing = input_shape[last] - grad.shape[last]
        if missing > 0:
            pad = [0, 0] * (grad.ndim - 1 - last) + [0, missing]
            grad = constant_pad_nd(grad, pad)
    return real(_fft_c2c(grad, dims, normalization, False))


def _c2r_grad(grad, dims, normalization, input_shape):
    """PyTorch's fft_c2r_backward: an r2c of the gradient, the entries whose mirror images
    the one-sided input stands for doubled."""
    g = _fft_r2c(grad, dims, normalization, True)
    last = dims[-1]
    double = grad.shape[last] - g.shape[last]
    if double > 0:
        scale = arange(g.shape[last], device=g.device)
        scale = ((scale >= 1).logical_and(scale <= double)).to(g.real.dtype) + 1.0
        g = g * scale.reshape((-1,) + (1,) * (g.ndim - 1 - last))
    return g


@primitive(complex=True, variants="", rule=_c2c_rule, cost=_fft_cost,
           grad=Grad("FftC2CBackward0", input=lambda grad, dims, normalization, forward:
                     _fft_c2c(grad, dims, normalization, not forward)))
def _fft_c2c(input: Tensor, dims: Sequence[int], normalization: int, forward: bool) -> Tensor:
    """The DFT of complex `input` over `dims` (the inverse's sign when not `forward`),
    scaled by `normalization` (0: none, 1: 1/sqrt(n), 2: 1/n)."""
    return apply(OPS["_fft_c2c"], input, dims=tuple(dims), normalization=normalization,
                 forward=bool(forward))


@primitive(complex=True, variants="", rule=_r2c_rule, cost=_fft_cost,
           grad=Grad("FftR2CBackward0", input=_r2c_grad))
def _fft_r2c(input: Tensor, dims: Sequence[int], normalization: int, onesided: bool) -> Tensor:
    """The forward DFT of real `input` over `dims`; `onesided` keeps the non-negative
    frequencies of the last of them only."""
    return apply(OPS["_fft_r2c"], input, dims=tuple(dims), normalization=normalization,
                 onesided=bool(onesided))


@primitive(complex=True, variants="", rule=_c2r_rule, cost=_fft_cost,
           grad=Grad("FftC2RBackward0", input=_c2r_grad))
def _fft_c2r(input: Tensor, dims: Sequence[int], normalization: int,
             last_dim_size: int) -> Tensor:
    """The inverse DFT over `dims` of the one-sided (Hermitian) complex `input`, a real
    signal of `last_dim_size` points along the last of them."""
    return apply(OPS["_fft_c2r"], input, dims=tuple(dims), normalization=normalization,
                 last_dim_size=int(last_dim_size))


# -- arguments ------------------------------------------------------------------------


def _norm_mode(norm: str | None, forward: bool) -> int:
    """PyTorch's norm_from_string: the scaling of a transform in direction `forward`."""
    if norm is None or norm == "backward":
        return NONE if forward else BY_N
    if norm == "forward":
        return BY_N if forward else NONE
    if norm == "ortho":
        return BY_ROOT_N
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def _floating(op: str, x: Tensor, *, real_only: bool = False) -> Tensor:
    """`x` as the transforms take it: integers and bools promoted to the default float;
    half precision refused (PyTorch's CPU FFT has none)."""
    if real_only and x.dtype.is_complex:
        raise RuntimeError(f"{op} expects a real input tensor, but got "
                           f"{dt.SCALAR_TYPE_NAMES[x.dtype.name]}")
    if x.dtype in (dt.float16, dt.bfloat16):
        raise RuntimeError(f"Unsupported dtype {dt.SCALAR_TYPE_NAMES[x.dtype.name]}")
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        x = to_dtype(x, dt.get_default_dtype())
    return x


def _as_complex(x: Tensor) -> Tensor:
    return x if x.dtype.is_complex else to_dtype(x, x.dtype.to_complex())


def _resize(x: Tensor, dims: Sequence[int], sizes: Sequence[int]) -> Tensor:
    """`x` with each of `dims` cut to, or zero-padded at its end to, its size in `sizes`."""
    pad = [0] * (2 * x.ndim)
    padding = False
    for d, n in zip(dims, sizes):
        if n < x.shape[d]:
            x = x.narrow(d, 0, n)
        elif n > x.shape[d]:
            pad[2 * (x.ndim - 1 - d) + 1] = n - x.shape[d]
            padding = True
    if padding:
        while pad and pad[-1] == 0 and pad[-2] == 0:
            pad = pad[:-2]
        x = constant_pad_nd(x, pad)
    return x


def _check_points(n: int) -> None:
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


def _one_dim(op: str, x: Tensor, n: int | None, dim: int) -> tuple[int, int]:
    if x.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = normalize_dim(op, dim, x.ndim)
    n = x.shape[d] if n is None else int(n)
    _check_points(n)
    return d, n


def _many_dims(x: Tensor, s: Sequence[int] | None, dim: Any
               ) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """PyTorch's canonicalize_fft_shape_and_dim_args: the dims transformed and the
    number of points along each."""
    if dim is not None:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        dims = tuple(normalize_dim("fftn", d, x.ndim) for d in dims)
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
    if s is not None:
        s = (s,) if isinstance(s, int) else tuple(s)
        if dim is not None and len(s) != len(dims):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
        if len(s) > x.ndim:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has "
                               f"{x.ndim} dimensions.")
        if dim is None:
            dims = tuple(range(x.ndim - len(s), x.ndim))
        sizes = tuple(x.shape[d] if n == -1 else int(n) for d, n in zip(dims, s))
        for n in sizes:
            _check_points(n)
    else:
        if dim is None:
            dims = tuple(range(x.ndim))
        sizes = tuple(x.shape[d] for d in dims)
    return dims, sizes


# -- PyTorch's result layout ----------------------------------------------------------
# PyTorch's CPU FFT (MKL's `_exec_fft`) returns a transform along a dimension other than the
# last one strided, not contiguous: the dimensions not transformed outermost, by the input's
# strides (largest first), then the transformed ones in the order it takes them. Visible in
# `.stride()` and `.is_contiguous()`, and in what views of the result (`.view`) allow.


def _batch_first(ndim: int, dims: Sequence[int]) -> list[int]:
    """The dimensions, those not in `dims` first, as C++'s std::partition orders them
    (its swaps decide the order of dimensions with equal strides)."""
    order, first, last = list(range(ndim)), 0, ndim
    while True:
        while first != last and order[first] not in dims:
            first += 1
        if first == last:
            return order[:first]
        last -= 1
        while first != last and order[last] in dims:
            last -= 1
        if first == last:
            return order[:first]
        order[first], order[last] = order[last], order[first]
        first += 1


def _by_stride(strides: Sequence[int], dims: Sequence[int]) -> list[int]:
    return sorted(dims, key=lambda d: -strides[d])  # (stable, as std::sort's small sort)


def _exec_layout(strides: Sequence[int], sizes: Sequence[int], dims: Sequence[int]
                 ) -> tuple[list[int], tuple[int, ...]]:
    """The order (outermost first) and strides of `_exec_fft`'s result of `sizes`, from an
    input of `strides` transformed over `dims` (in the order taken)."""
    order = _by_stride(strides, _batch_first(len(sizes), dims)) + list(dims)
    out, step = [0] * len(sizes), 1
    for d in reversed(order):
        out[d] = step
        step *= max(sizes[d], 1)
    return order, tuple(out)


def _pytorch_layout(out: Tensor, in_strides: Sequence[int], dims: Sequence[int],
                    exclude_last: bool = False) -> Tensor:
    """`out` (a primitive's result, of an input of `in_strides`) in PyTorch's layout: the
    transformed `dims` taken by stride (the last one kept last for r2c and c2r)."""
    taken = _by_stride(in_strides, dims[:-1]) + [dims[-1]] if exclude_last else \
        _by_stride(in_strides, dims)
    order, strides = _exec_layout(in_strides, tuple(out.shape), taken)
    if tuple(out.stride()) == strides:
        return out
    back = sorted(range(out.ndim), key=order.__getitem__)
    result = out.permute(order).clone(memory_format=contiguous_format).permute(back)
    if tuple(result.stride()) != strides:  # (a size-1 dimension's stride)
        result = result.as_strided(tuple(out.shape), strides)
    label = getattr(out._node, "label", None)
    if label:  # shows the transform's node (`FftC2CBackward0`), not the copy's
        relabel(result, label, (out,))
    return result


def _c2c(x: Tensor, dims: Sequence[int], mode: int, forward: bool) -> Tensor:
    return _pytorch_layout(_fft_c2c(x, dims, mode, forward), x.stride(), dims)


def _r2c_layout(x: Tensor, dims: Sequence[int], mode: int, onesided: bool) -> Tensor:
    return _pytorch_layout(_fft_r2c(x, dims, mode, onesided), x.stride(), dims, True)


def _c2r_layout(x: Tensor, dims: Sequence[int], mode: int, last: int) -> Tensor:
    """PyTorch's c2r: a c2c over all but the last of `dims` first, whose layout decides
    the c2r's."""
    strides = x.stride()
    if len(dims) > 1:
        sizes = tuple(x.shape)
        strides = _exec_layout(strides, sizes, _by_stride(strides, dims[:-1]))[1]
    return _pytorch_layout(_fft_c2r(x, dims, mode, last), strides, dims[-1:])


# -- the torch.fft functions ----------------------------------------------------------


def _c2c_or_r2c(op: str, x: Tensor, dims: tuple, sizes: tuple, norm: str | None,
                forward: bool, promote: bool = False) -> Tensor:
    """A c2c of complex `x`; of real `x`, a two-sided r2c, unless `promote` (PyTorch's
    n-dimensional transforms make a real input complex first: their result's layout)."""
    x = _resize(_floating(op, x), dims, sizes)
    if promote:
        x = _as_complex(x)
    mode = _norm_mode(norm, forward)
    if x.dtype.is_complex:
        return _c2c(x, dims, mode, forward)
    out = _r2c_layout(x, dims, mode, False)
    return out if forward else out.conj()


def _r2c(op: str, x: Tensor, dims: tuple, sizes: tuple, norm: str | None,
         forward: bool) -> Tensor:
    x = _resize(_floating(op, x, real_only=True), dims, sizes)
    out = _r2c_layout(x, dims, _norm_mode(norm, forward), True)
    return out if forward else out.conj()


def _c2r(op: str, x: Tensor, dims: tuple, sizes: tuple, norm: str | None,
         forward: bool) -> Tensor:
    """irfft's and hfft's: `sizes[-1]` is the real output's length along `dims[-1]`."""
    last = sizes[-1]
    _check_points(last)
    x = _as_complex(_floating(op, x))
    x = _resize(x, dims, sizes[:-1] + (last // 2 + 1,))
    if forward:  # hfft: the conjugate's inverse transform, forward-normalized
        x = x.conj()
    return _c2r_layout(x, dims, _norm_mode(norm, forward), last)



@composite(complex=True, variants="", cost=costs.pointwise(1),
           cpu_precision=P.FLOAT32)  # (PyTorch's CPU autocast: float32)
def fft_fft(input: Tensor, n: int | None = None, dim: int = -1,
            norm: str | None = None) -> Tensor:
    """The one-dimensional discrete Fourier transform of `input` along `dim` (`n` points:
    zero-padded or trimmed); `norm`: "backward" (none, the default), "ortho" (1/sqrt(n))
    or "forward" (1/n)."""
    d, n = _one_dim("fft", input, n, dim)
    return _c2c_or_r2c("fft", input, (d,), (n,), norm, True)


@composite(complex=True, variants="", cost=costs.pointwise(1),
           cpu_precision=P.FLOAT32)  # (PyTorch's CPU autocast: float32)
def fft_ifft(input: Tensor, n: int | None = None, dim: int = -1,
             norm: str | None = None) -> Tensor:
    """The one-dimensional inverse discrete Fourier transform of `input` along `dim`."""
    d, n = _one_dim("ifft", input, n, dim)
    return _c2c_or_r2c("ifft", input, (d,), (n,), norm, False)


@composite(complex=True, variants="", cost=costs.pointwise(1),
           cpu_precision=P.FLOAT32)  # (PyTorch's CPU autocast: float32)
def fft_fft2(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] = (-2, -1),
             norm: str | None = None) -> Tensor:
    """The two-dimensional discrete Fourier transform of `input` over `dim`."""
    dims, sizes = _many_dims(input, s, dim)
    return _c2c_or_r2c("fft2", input, dims, sizes, norm, True, promote=True)


@composite(complex=True, variants="", cost=costs.pointwise(1),
           cpu_precision=P.FLOAT32)  # (PyTorch's CPU autocast: float32)
def fft_ifft2(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] = (-2, -1),
              norm: str | None = None) -> Tensor:
    """The two-dimensional inverse discrete Fourier transform of `input` over `dim`."""
    dims, sizes = _many_dims(input, s, dim)
    return _c2c_or_r2c("ifft2", input, dims, sizes, norm, False, promote=True)


@composite(complex=True, variants="", cost=costs.pointwise(1),
           cpu_precision=P.FLOAT32)  # (PyTorch's CPU autocast: float32)
def fft_fftn(input: Tensor, s: Sequence[int] | None = None, dim: Any = None,
             norm: str | None = None) -> Tensor:
    """The N-dimensional discrete Fourier transform of `input` (over all dimensions, or
    the last `len(s)`, or `dim`)."""
    dims, sizes = _many_dims(input, s, dim)
    return _c2c_or_r2c("fftn", input, dims, sizes, norm, True, promote=True)


@composite(complex=True, variants="", cost=costs.pointwise(1),
           cpu_precision=P.FLOAT32)  # (PyTorch's CPU autocast: float32)
def fft_ifftn(input: Tensor, s: Sequence[int] | None = None, dim: Any = None,
              norm: str | None = None) -> Tensor:
    """The N-dimensional inverse discrete Fourier transform of `input`."""
    dims, sizes = _many_dims(input, s, dim)
    return _c2c_or_r2c("ifftn", input, dims, sizes, norm, False, promote=True)


@composite(complex=True, variants="", cost=costs.pointwise(1),
           cpu_precision=P.FLOAT32)  # (PyTorch's CPU autocast: float32)
def fft_rfft(input: Tensor, n: int | None = None, dim: int = -1,
             norm: str | None = None) -> Tensor:
    """The one-dimensional Fourier transform of real `input`: its `n // 2 + 1`
    non-negative frequencies (the rest are their conjugates)."""
    d, n = _one_dim("rfft", input, n, dim)
    return _r2c("rfft", input, (d,), (n,), norm, True)


@composite(complex=True, variants="", cost=costs.pointwise(1),
           cpu_precision=P.FLOAT32)  # (PyTorch's CPU autocast: float32)
def fft_irfft(input: Tensor, n: int | None = None, dim: int = -1,
              norm: str | None = None) -> Tensor:
    """The inverse of `rfft`: a real signal of `n` points (default `2 * (m - 1)`, `m` the
    input's length along `dim`) from its non-negative frequencies."""
    d = _one_dim("irfft", input, 1, dim)[0]
    n = 2 * (input.shape[d] - 1) if n is None else int(n)
    return _c2r("irfft", input, (d,), (n,), norm, False)


@composite(complex=True, variants="", cost=costs.pointwise(1),
           cpu_precision=P.FLOAT32)  # (PyTorch's CPU autocast: float32)
def fft_rfft2(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] = (-2, -1),
              norm: str | None = None) -> Tensor:
    """The two-dimensional Fourier transform of real `input`, one-sided in the last of
    `dim`."""
    dims, sizes = _many_dims(input, s, dim)
    return _r2c("rfft2", input, dims, sizes, norm, True)


@composite(complex=True, variants="", cost=costs.pointwise(1),
           cpu_precision=P.FLOAT32)  # (PyTorch's CPU autocast: float32)
def fft_irfft2(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] = (-2, -1),
               norm: str | None = None) -> Tensor:
    """The inverse of `rfft2`: a real signal of shape `s` over `dim`."""
    return _irfftn("irfft2", input, s, dim, norm)


@composite(complex=True, variants="", cost=costs.pointwise(1),
           cpu_precision=P.FLOAT32)  # (PyTorch's CPU autocast: float32)
def fft_rfftn(input: Tensor, s: Sequence[int] | None = None, dim: Any = None,
              norm: str | None = None) -> Tensor:
    """The N-dimensional Fourier transform of real `input`, one-sided in the last of its
    dimensions."""
    dims, sizes = _many_dims(input, s, dim)
    return _r2c("rfftn", input, dims, sizes, norm, True)


@composite(complex=True, variants="", cost=costs.pointwise(1),
           cpu_precision=P.FLOAT32)  # (PyTorch's CPU autocast: float32)
def fft_irfftn(input: Tensor, s: Sequence[int] | None = None, dim: Any = None,
               norm: str | None = None) -> Tensor:
    """The inverse of `rfftn`."""
    return _irfftn("irfftn", input, s, dim, norm)


def _irfftn(op: str, input: Tensor, s: Any, dim: Any, norm: str | None) -> Tensor:
    dims, sizes = _many_dims(input, s, dim)
    last = s[-1] if s is not None and s[-1] != -1 else 2 * (input.shape[dims[-1]] - 1)
    return _c2r(op, input, dims, sizes[:-1] + (last,), norm, False)


@composite(complex=True, variants="", cost=costs.pointwise(1),
           cpu_precision=P.FLOAT32)  # (PyTorch's CPU autocast: float32)
def fft_hfft(input: Tensor, n: int | None = None, dim: int = -1,
             norm: str | None = None) -> Tensor:
    """The Fourier transform of a Hermitian-symmetric signal given by its first half:
    a real result of `n` points (default `2 * (m - 1)`)."""
    d = _one_dim("hfft", input, 1, dim)[0]
    n = 2 * (input.shape[d] - 1) if n is None else int(n)
    return _c2r("hfft", input, (d,), (n,), norm, True)


@composite(complex=True, variants="", cost=costs.pointwise(1),
           cpu_precision=P.FLOAT32)  # (PyTorch's CPU autocast: float32)
def fft_ihfft(input: Tensor, n: int | None = None, dim: int = -1,
              norm: str | None = None) -> Tensor:
    """The inverse of `hfft`: the `n // 2 + 1` non-negative frequencies of the inverse
    transform of real `input`."""
    d, n = _one_dim("ihfft", input, n, dim)
    return _r2c("ihfft", input, (d,), (n,), norm, False)


def _hermitian_dims(op: str, input: Tensor, s: Any, dim: Any) -> tuple[tuple, tuple]:
    dims, sizes = _many_dims(input, s, dim)
    if not dims:
        raise RuntimeError(f"{op} must transform at least one axis")
    return dims, sizes


def _hfftn(op: str, input: Tensor, s: Any, dim: Any, norm: str | None) -> Tensor:
    """PyTorch's fft_hfftn_impl: a forward c2c over all but the last of the dims, then the
    conjugate's c2r over the last (its real output `s[-1]` long, `2 * (m - 1)` by
    default), each normalized over its own dims."""
    dims, sizes = _hermitian_dims(op, input, s, dim)
    last = s[-1] if s is not None and s[-1] != -1 else 2 * (input.shape[dims[-1]] - 1)
    _check_points(last)
    x = _as_complex(_floating(op, input))
    x = _resize(x, dims, sizes[:-1] + (last // 2 + 1,))
    mode = _norm_mode(norm, True)
    if len(dims) > 1:
        x = _c2c(x, dims[:-1], mode, True)
    return _c2r_layout(x.conj(), dims[-1:], mode, last)


def _ihfftn(op: str, input: Tensor, s: Any, dim: Any, norm: str | None) -> Tensor:
    """PyTorch's fft_ihfftn_impl: a one-sided r2c over the last of the dims, conjugated,
    then an inverse c2c over the others."""
    dims, sizes = _hermitian_dims(op, input, s, dim)
    if input.dtype.is_complex:
        raise RuntimeError("Only supports floating-point dtypes, but found: "
                           f"{dt.SCALAR_TYPE_NAMES[input.dtype.name]}")
    x = _resize(_floating(op, input), dims, sizes)
    mode = _norm_mode(norm, False)
    out = _r2c_layout(x, dims[-1:], mode, True).conj()
    return out if len(dims) == 1 else _c2c(out, dims[:-1], mode, False)


@composite(complex=True, variants="", cost=costs.pointwise(1))
def fft_hfft2(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] = (-2, -1),
              norm: str | None = None) -> Tensor:
    """The two-dimensional Fourier transform of a Hermitian-symmetric signal given by its
    first half in the last of `dim`: a real result of shape `s`."""
    return _hfftn("hfft2", input, s, dim, norm)


@composite(complex=True, variants="", cost=costs.pointwise(1))
def fft_hfftn(input: Tensor, s: Sequence[int] | None = None, dim: Any = None,
              norm: str | None = None) -> Tensor:
    """The N-dimensional Fourier transform of a Hermitian-symmetric signal given by its
    first half in the last transformed dimension: a real result."""
    return _hfftn("hfftn", input, s, dim, norm)


@composite(complex=True, variants="", cost=costs.pointwise(1))
def fft_ihfft2(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] = (-2, -1),
               norm: str | None = None) -> Tensor:
    """The inverse of `hfft2`: the two-dimensional inverse transform of real `input`,
    one-sided in the last of `dim`."""
    return _ihfftn("ihfft2", input, s, dim, norm)


@composite(complex=True, variants="", cost=costs.pointwise(1))
def fft_ihfftn(input: Tensor, s: Sequence[int] | None = None, dim: Any = None,
               norm: str | None = None) -> Tensor:
    """The inverse of `hfftn`: the N-dimensional inverse transform of real `input`,
    one-sided in the last transformed dimension."""
    return _ihfftn("ihfftn", input, s, dim, norm)


@composite(complex=True, variants="", cost=costs.creation)
def fft_fftfreq(n: int, d: float = 1.0, *, dtype: Any = None, device: Any = None,
                requires_grad: bool = False) -> Tensor:
    """The sample frequencies of an `n`-point DFT with sample spacing `d`:
    `[0, 1, ..., n//2 - 1 (or (n-1)//2), -(n//2), ..., -1] / (d * n)`."""
    k = arange(n, dtype=dtype or dt.get_default_dtype(), device=device)
    k = k - (k >= (n + 1) // 2).to(k.dtype) * n
    out = k * (1.0 / (n * d))
    return out.requires_grad_(requires_grad) if requires_grad else out


@composite(complex=True, variants="", cost=costs.creation)
def fft_rfftfreq(n: int, d: float = 1.0, *, dtype: Any = None, device: Any = None,
                 requires_grad: bool = False) -> Tensor:
    """The non-negative sample frequencies of an `n`-point real DFT:
    `[0, 1, ..., n // 2] / (d * n)`."""
    out = arange(n // 2 + 1, dtype=dtype or dt.get_default_dtype(), device=device) * \
        (1.0 / (n * d))
    return out.requires_grad_(requires_grad) if requires_grad else out


def _shift_dims(input: Tensor, dim: Any) -> tuple[int, ...]:
    if dim is None:
        return tuple(range(input.ndim))
    return (dim,) if isinstance(dim, int) else tuple(dim)


@composite(complex=True, variants="", cost=costs.movement)
def fft_fftshift(input: Tensor, dim: Any = None) -> Tensor:
    """`input` with the zero frequency moved to the centre of each of `dim` (all by
    default)."""
    dims = _shift_dims(input, dim)
    return roll(input, [input.shape[d] // 2 for d in dims], dims)


@composite(complex=True, variants="", cost=costs.movement)
def fft_ifftshift(input: Tensor, dim: Any = None) -> Tensor:
    """The inverse of `fftshift`."""
    dims = _shift_dims(input, dim)
    return roll(input, [-(input.shape[d] // 2) for d in dims], dims)
