"""PyTorch's conversions into the float8 dtypes, on NumPy arrays (ml_dtypes' types).

PyTorch converts every value through float32 (c10's `Float8_*(float)` constructors: a
double is rounded to float first) and rounds to nearest even, as ml_dtypes does; the
formats differ from ml_dtypes where PyTorch chose otherwise:

- `float8_e4m3fn` saturates: a finite value or infinity beyond its range becomes +-448
  (ml_dtypes: NaN);
- `float8_e5m2` writes NaN as 0x7f with the sign (ml_dtypes: 0x7e);
- `float8_e8m0fnu` (a power of two, no sign) takes the exponent of |x| rounded from its
  guard, round and sticky bits (c10's Float8_e8m0fnu-inl.h): ties round up, a
  float32 subnormal down; NaN and infinity give NaN (0xff).

The float8s convert back exactly (float8 -> float32 has no rounding).
"""

from __future__ import annotations

from typing import Any

import numpy as np

_E4M3FN_MAX = 448.0


def numpy_type(name: str) -> Any:
    """The NumPy dtype (ml_dtypes) holding PyTorch's float8 dtype `name`."""
    import ml_dtypes

    return np.dtype(getattr(ml_dtypes, name))


def to_float8(values: np.ndarray, name: str) -> np.ndarray:
    """`values` (any real NumPy dtype) as float8 dtype `name`, rounded as PyTorch does."""
    x = np.asarray(values).astype(np.float32)
    target = numpy_type(name)
    if name == "float8_e8m0fnu":
        return _to_e8m0fnu(x).view(target)
    with np.errstate(invalid="ignore", over="ignore"):
        out = x.astype(target)
    if name == "float8_e4m3fn":
        overflow = np.isnan(out.astype(np.float32)) & ~np.isnan(x)
        if overflow.any():
            out[overflow] = np.copysign(_E4M3FN_MAX, x[overflow]).astype(target)
    elif name == "float8_e5m2":
        nan = np.isnan(x)
        if nan.any():
            bits = out.view(np.uint8)
            bits[nan] = 0x7F | (np.signbit(x[nan]).astype(np.uint8) << 7)
    return out


def _to_e8m0fnu(x: np.ndarray) -> np.ndarray:
    """The uint8 bits of float32 `x` as float8_e8m0fnu: the biased exponent, plus one
    when the mantissa rounds up."""
    bits = x.view(np.uint32)
    exponent = ((bits >> 23) & 0xFF).astype(np.uint16)
    guard = (bits & 0x400000) != 0
    rest = (bits & 0x3FFFFF) != 0  # the round and sticky bits
    normal = exponent > 0  # (the implied mantissa bit, e8m0's lowest)
    up = guard & (rest | normal)
    result = np.where(exponent == 0xFF, 0xFF, exponent + up)
    return result.astype(np.uint8)


def round_scalar(value: float, name: str) -> float:
    """A Python number as float8 dtype `name` holds it (as a float)."""
    return float(to_float8(np.array([value], np.float64), name).astype(np.float64)[0])


# -- the arithmetic PyTorch's CPU kernels refuse --------------------------------------
#
# PyTorch holds, casts, copies, views, indexes, prints and compares (`==`, `!=`, `isnan`,
# `abs`, `all`, `mm`) float8 tensors, but most of its CPU kernels are not built for them:
# `x + 1` is NotImplementedError('"add_stub" not implemented for 'Float8_e4m3fn''). The
# kernel each ember primitive meets there, by the name PyTorch's message gives; a pair is
# (with a tensor operand, with a Python number), None where that one computes.

_UNARY_VML = ("exp", "expm1", "log", "log2", "log10", "log1p", "sqrt", "sin", "cos", "tan",
              "asin", "acos", "atan", "tanh", "floor", "ceil", "trunc", "round", "erf",
              "erfc", "erfinv", "lgamma")
_CPU = ("neg", "rsqrt", "sinh", "cosh", "asinh", "acosh", "atanh", "frac", "sign",
              "reciprocal", "signbit", "logical_not", "bitwise_not", "angle", "lt", "le", "gt",
              "ge", "maximum", "minimum", "atan2", "hypot", "remainder", "fmod", "copysign",
              "nextafter", "xlogy", "logaddexp", "logical_and", "logical_or", "logical_xor",
              "argmax", "argmin", "norm", "median", "mode", "nansum", "cummax", "topk", "silu")
REFUSING_KERNELS: dict[str, Any] = {
    **{op: f"{op}_vml_cpu" for op in _UNARY_VML},
    **{op: f"{op}_cpu" for op in _CPU},
    "exp2": "exp2", "digamma": "digamma", "isinf": "isinf", "isfinite": "isfinite",
    "pow": "pow", "nan_to_num": "nan_to_num", "add": "add_stub", "sub": "add_stub",
    "mul": (None, "mul_cpu_reduced_float"), "div": ("div_cpu", "div_cpu_reduced_float"),
    "sigmoid": "sigmoid_cpu_reduced_float", "relu": "clamp_min_scalar_cpu",
    "floor_divide": "div_floor_cpu", "sum": "sum_cpu", "prod": "prod_out_cpu",
    "max": "max_all", "min": "min_all", "cumsum": "cumsum_out_cpu",
    "cumprod": "cumprod_out_cpu", "sort": "sorting_kernel_method_name",
    "softmax": "softmax_lastdim_kernel_impl", "log_softmax": "log_softmax_lastdim_kernel_impl",
    "clamp": "clamp_scalar_cpu", "flip": "flip_cpu", "nonzero": "nonzero_count_cpu",
    "unique": "unique", "lerp": "lerp_kernel_scalar", "addcmul": "addcmul_cpu_out",
    "gelu": "GeluKernelImpl", "tril": "tril", "triu": "triu", "fmax": "fmax_cpu",
    "fmin": "fmin_cpu", "isclose": "mul_cpu_reduced_float",
}
# matmul by the operands' dimensions: a dot, a matrix-vector product, batches (a matrix
# product, vector-matrix included, computes)
_MATMUL_KERNELS = {(1, 1): "dot", (2, 1): "addmv_impl_cpu"}


def refusing_kernel(op: str, args: tuple) -> str | None:
    """The name of PyTorch's CPU kernel that refuses float8 operands for ember primitive
    `op` run on `args` (its operands, a float8 tensor among them), or None when PyTorch
    computes it."""
    if op == "matmul":
        dims = tuple(getattr(a, "ndim", 0) for a in args[:2])
        return _MATMUL_KERNELS.get(dims, "bmm" if max(dims) > 2 else None)
    kernel = REFUSING_KERNELS.get(op)
    if isinstance(kernel, tuple):  # a Python number among the operands: the second
        kernel = kernel[not all(hasattr(a, "_dtype") for a in args)]
    return kernel
