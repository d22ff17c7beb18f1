"""What every family of shared kernels is written against: the array module `xp`, and the
few things a backend does its own way (`Hooks`).

Only what NumPy and CuPy both provide is used through `xp`. Where they differ, the
difference is either derived here from what `xp` has (`errstate` exists in NumPy only:
CuPy never warns) or is a hook the backend passes in.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ember.core.backend import (  # noqa: F401 - OVERLAP: the kernels' error, re-exported
    EVERY_DTYPE,
    FLOAT8_DTYPES,
    LIMITED_DTYPES,
    OVERLAP,
    bfloat16,
    dense_strides,
    float16,
    float32,
    float64,
    logical_to_physical_perm,
    numpy_dtype,
)

Kernel = Callable[..., Any]



def in_float32(xp: Any, f: Kernel, *arrays: Any, out: Any = None) -> Any:
    """`f(*arrays)` of half-precision arrays by PyTorch's rule for its CPU kernels
    ("opmath"): computed in float32, rounded once to the first array's dtype (into `out`
    where given)."""
    y = f(*(a.astype(xp.float32) for a in arrays)).astype(arrays[0].dtype)
    if out is None:
        return y
    xp.copyto(out, y)
    return out


def through_float(x: Any, target: Any) -> Any:
    """`x`, ready to become `target`: a float64 array going to a 2-byte float (float16,
    bfloat16) rounded to float32 first, as PyTorch converts (c10::Half and c10::BFloat16
    are made from a float: two roundings, which differ from one next to a halfway
    point)."""
    if x.dtype.kind == "f" and x.dtype.itemsize == 8 and target.itemsize == 2 and \
            target.kind not in "iu":
        return x.astype("float32")
    return x


def copy_like(x: Any, dtype: Any, xp: Any) -> Any:
    """`x` copied into `dtype`, laid out as PyTorch's `to` lays out the copy: with `x`'s
    own strides when they are dense (row-major or a permuted view), else densely in
    `x`'s memory order as TensorIterator sorts it (ATen's `infer_dense_strides`, where a
    broadcast dim says nothing; NumPy's `astype` would put it outermost)."""
    shape, strides = x.shape, tuple(st // x.itemsize for st in x.strides)
    if dense_strides(shape, strides):
        return x.astype(dtype)  # (order "K": the same strides)
    order = logical_to_physical_perm(shape, [strides])[0]  # outermost first
    out = xp.empty(tuple(shape[d] for d in order), dtype).transpose(
        tuple(order.index(d) for d in range(x.ndim)))
    out[...] = x
    return out


def disordered(args: tuple, ndarray: type) -> bool:
    """Whether NumPy (or CuPy) may lay out an elementwise result of `args` otherwise than
    PyTorch does: the first operand an array that is not row-major, and another operand
    an array too, or broadcast dims among dims out of row-major order (NumPy's sort
    moves a dim past a broadcast one, TensorIterator's swaps over it; see
    `in_torch_order`)."""
    first = args[0]
    if type(first) is not ndarray or first.ndim < 2 or first.flags.c_contiguous:
        return False
    if len(args) > 1 and any(type(a) is ndarray for a in args[1:]):
        return True
    if 0 not in first.strides:
        return False
    spread = [st for st in first.strides if st]  # (none: a broadcast scalar, ordered)
    return spread[1:] != [] and spread != sorted(spread, reverse=True)


def in_torch_order(f: Kernel, ndarray: type) -> Kernel:
    """`f` whose elementwise result is laid out as PyTorch's TensorIterator lays it out:
    in the memory order of the first operand that orders each pair of dims. NumPy lets
    row-major order win where its operands disagree, so a transposed `x` plus a
    row-major `y` comes back row-major there and in `x`'s order in PyTorch, which a later
    `view`, `is_contiguous` or random fill (dropout's mask) sees. Every operand is walked
    in PyTorch's order, so NumPy's own choice is then row-major over it."""
    def ordered(*args: Any, **kwargs: Any) -> Any:
        arrays = [a for a in args if type(a) is ndarray]
        shape = arrays[0].shape
        if all(a.shape == shape for a in arrays):  # (the common case: nothing broadcast)
            strides = [a.strides for a in arrays]
        else:
            ndim = max(a.ndim for a in arrays)
            # (views: leading 1s never copy)
            args = tuple(a.reshape((1,) * (ndim - a.ndim) + a.shape) if type(a) is ndarray
                         else a for a in args)
            arrays = [a for a in args if type(a) is ndarray]
            shape = tuple(max(sizes) for sizes in zip(*(a.shape for a in arrays)))
            strides = [tuple(0 if n == 1 and m != 1 else st
                             for n, m, st in zip(a.shape, shape, a.strides)) for a in arrays]
        ndim = len(shape)
        perm, _ = logical_to_physical_perm(shape, strides)
        if perm == sorted(perm):
            return f(*args, **kwargs)
        inverse = [0] * ndim
        for i, d in enumerate(perm):
            inverse[d] = i
        result = f(*(a.transpose(perm) if type(a) is ndarray else a for a in args), **kwargs)
        return result.transpose(inverse)
    return ordered


def torch_layout(kernel: Kernel, ndarray: type) -> Kernel:
    """A kernel `kernel(*args, out=None)` of two or more operands whose new results take
    PyTorch's layout (`in_torch_order`); a result written into `out` keeps out's."""
    ordered = in_torch_order(kernel, ndarray)

    def laid_out(*args: Any, out: Any = None) -> Any:
        if out is None and disordered(args, ndarray):
            return ordered(*args)
        return kernel(*args, out=out)
    return laid_out


@dataclass(frozen=True)
class Hooks:
    """What a backend does its own way. Every hook is optional: left out, the kernels use
    their own code, written for any NumPy-like module."""

    call_elementwise: Callable[[Callable[..., Any], tuple, Any], Any] | None = None
    """How a unary or binary kernel calls its function: `call(f, args, out)` returns the
    result as an array. Default: `f(*args, out=out)`, made an array if it is a scalar.
    The CPU's keeps bfloat16 results bfloat16 (ml_dtypes ignores the weak-scalar rule)."""

    elementwise_kernel: Callable[[Callable[..., Any]], Callable[..., Any]] | None = None
    """Makes the kernel `kernel(*args, out=None)` of a unary or binary function `f` that
    raises no floating-point warnings to silence (add, mul ...): a backend's own can skip
    the generic wrapper's steps (these kernels are the most called). Default: a wrapper
    that refuses read-only `out` buffers and calls `call_elementwise`."""

    elementwise: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    """Elementwise functions `f(*args, out=None)` that replace the shared ones, by op name
    (the CPU's `relu` picks NumPy's fastest loop)."""

    read_only: Callable[[Any], bool] | None = None
    """Whether a buffer must not be written because its elements share memory (NumPy marks
    broadcast views read-only); writes into it then raise `OVERLAP`. Default: never."""

    writable: Callable[[Any], Any] | None = None
    """A writable view of the same memory as a `read_only` buffer, for the writes PyTorch
    lets into shared elements (a fill: every alias gets the same value). Default: the
    buffer itself."""

    exact_ufunc_at: Callable[[Any, Any], bool] | None = None
    """Whether `ufunc.at(out, key, values)` reduces exactly in `out`'s dtype, given the
    ufunc and the dtype (scatter_reduce's prod/amax/amin). Where not, the kernels reduce in
    rounds of plain fancy writes. Default: always (NumPy's)."""

    half_vector_lanes: Callable[[], int] | None = None
    """float16/bfloat16 elements per vector of the PyTorch kernels being reproduced, where
    their rounding depends on which elements a vector loop takes (`Backend.
    half_vector_lanes`); default None: every element rounded alike."""

    matmul: Callable[[Any, Any], Any] | None = None
    """The matrix product of every kernel that multiplies matrices (matmul, linear, conv
    and their backwards). Default: `xp.matmul`."""

    axpy: Callable[[float, Any, Any], bool] | None = None
    """`y += alpha * x` in place in one pass (a BLAS axpy) for the optimizer updates;
    returns False, having done nothing, where it does not apply. Default: never applies."""

    fma: Callable[[Any, Any, Any], Any] | None = None
    """`a * b + c` rounded once to float32, for float32 arrays a and c of one shape and b
    one too or a number (xp/opmath.py's rules), or None where it does not apply. Default:
    emulated in float64 with `xp`'s ufuncs."""

    fma64: Callable[[Any, float, Any], Any] | None = None
    """`a * b + c` rounded once to float64, for a float64 array a (small integers: arange's
    indices), a number b and a float64 array or number c, or None where it does not apply.
    Default: unfused (NumPy has no float64 fma)."""

    scale_add: Callable[[Any, float, Any], bool] | None = None
    """`x = x * scale + y` in place for arrays x and y of one shape, rounded to x's dtype
    after the product and after the sum (PyTorch's `x.mul_(scale).add_(y)`: SGD's
    momentum buffer) in one pass; returns False where it does not apply. Default: the
    two passes with `xp`'s ufuncs."""

    transpose: Callable[[Any], Any] | None = None
    """The transpose of a 2-D array as a new C-contiguous array (the conv kernels' layout
    changes), or None where it does not apply. Default: `xp.ascontiguousarray(a.T)`. The
    CPU's is OpenBLAS's cache-blocked `?omatcopy`."""

    conv_columns_bytes: int | None = None
    """The most bytes of im2col columns a convolution kernel builds at once: the batch is
    cut into chunks that fit, each run through its own GEMMs (memory, and columns that
    stay in cache). Default: the whole batch at once."""

    im2col_batch_last: Callable[..., Any] | None = None
    """`im2col_batch_last(x, kernel_size, dilation, padding, stride, outs)`: a
    convolution's "batch last" columns, (C*K, L*N) (xp/conv.py), or None where it does not
    apply. Default: NumPy's transpose, padded copy and window copy."""

    col2im_batch_last: Callable[..., Any] | None = None
    """`col2im_batch_last(cols, x_shape, kernel_size, dilation, padding, stride, outs)`:
    the input gradient (N, C, *spatial) from the gradient of those columns, or None where
    it does not apply. Default: a strided add per kernel tap, a crop and a transpose."""

    exact_erf: Callable[[Any], Any] | None = None
    """erf of a float64 array to float64 precision. Default: the polynomial that every
    other dtype uses (fractional error < 1.2e-7)."""

    quiet: Callable[[], Any] | None = None
    """Makes a context manager in which the array module raises no floating-point
    warnings (inf/NaN arithmetic, which PyTorch computes silently). Default: the module's
    `errstate(all="ignore")` where it has one, else nothing to silence."""

    special: Callable[[], Any] | None = None
    """Returns the array module's `scipy.special` (SciPy's for NumPy, `cupyx.scipy.special`
    for CuPy), imported on the first call: the special-function kernels (lgamma, digamma,
    erfinv ...) call it. Default: none, and the table has no such kernels (the CPU's run)."""


class ArrayLib:
    """`xp` and the hooks, with what several kernel families derive from them. Kernel
    families copy what they use into locals when they build their kernels, so a kernel
    call pays no attribute look-ups on this object."""

    def __init__(self, xp: Any, hooks: Hooks) -> None:
        self.xp = xp
        self.hooks = hooks
        # CuPy keeps NumPy's dtype objects, so one vocabulary serves every array module
        self.dtypes: dict[Any, Any] = {d: numpy_dtype(d) for d in
                                       EVERY_DTYPE + LIMITED_DTYPES + FLOAT8_DTYPES}
        # half precision: sums and products accumulate in float32, as PyTorch's do
        self.low_precision = frozenset({self.dtypes[float16], self.dtypes[bfloat16]})
        self.gemm_dtypes = (self.dtypes[float32], self.dtypes[float64])  # BLAS's own
        # every matrix product of the kernels (matmul, linear, conv and their backwards)
        self.matmul: Callable[[Any, Any], Any] = hooks.matmul or xp.matmul
        self.read_only: Callable[[Any], bool] = hooks.read_only or (lambda buffer: False)
        self.writable: Callable[[Any], Any] = hooks.writable or (lambda buffer: buffer)
        self.transpose = _transposer(xp, hooks.transpose)
        self.as_array = _array_maker(xp)
        self.quiet = _quiet(xp, hooks.quiet)


def _transposer(xp: Any, hook: Callable[[Any], Any] | None) -> Callable[[Any], Any]:
    ascontiguousarray = xp.ascontiguousarray

    def transpose(a: Any) -> Any:
        """`a.T` of a 2-D array, as a new C-contiguous array."""
        if hook is not None:
            out = hook(a)
            if out is not None:
                return out
        return ascontiguousarray(a.T)
    return transpose


def _array_maker(xp: Any) -> Callable[[Any], Any]:
    ndarray, asarray = xp.ndarray, xp.asarray

    def as_array(x: Any) -> Any:
        """`x` as an array: NumPy returns 0-d results as scalars (CuPy never does)."""
        return x if isinstance(x, ndarray) else asarray(x)
    return as_array


def _quiet(xp: Any, hook: Callable[[], Any] | None) -> Callable[[], Any]:
    """A context that silences floating-point warnings (PyTorch gives inf/nan silently).
    NumPy warns and has `errstate`; CuPy has neither."""
    if hook is not None:
        return hook
    if hasattr(xp, "errstate"):
        return functools.partial(xp.errstate, all="ignore")
    return contextlib.nullcontext
