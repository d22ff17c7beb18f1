"""Unary and binary elementwise kernels (with `out=`), `where`, `clamp` and `cast`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.backends.xp.lib import (
    OVERLAP,
    ArrayLib,
    Kernel,
    copy_like,
    disordered,
    in_float32,
    in_torch_order,
    through_float,
    torch_layout,
)
from ember.backends.xp.opmath import half_by_number
from ember.core.backend import IntegerDivisionByZero

# op name -> the xp function that computes it
_XP_FUNCTIONS = {
    "neg": "negative", "abs": "abs", "sign": "sign", "floor": "floor", "ceil": "ceil",
    "round": "round", "trunc": "trunc", "exp": "exp", "log": "log", "log2": "log2",
    "log1p": "log1p", "expm1": "expm1", "sqrt": "sqrt", "sin": "sin", "cos": "cos",
    "tan": "tan", "tanh": "tanh", "asin": "arcsin", "acos": "arccos", "atan": "arctan",
    "reciprocal": "reciprocal", "logical_not": "logical_not", "isnan": "isnan",
    "isinf": "isinf", "isfinite": "isfinite", "bitwise_not": "invert",
    "add": "add", "sub": "subtract", "mul": "multiply", "div": "true_divide",
    "maximum": "maximum", "minimum": "minimum", "atan2": "arctan2", "eq": "equal",
    "ne": "not_equal", "lt": "less", "le": "less_equal", "gt": "greater",
    "ge": "greater_equal", "logical_and": "logical_and", "logical_or": "logical_or",
    "logical_xor": "logical_xor", "bitwise_and": "bitwise_and", "bitwise_or": "bitwise_or",
    "bitwise_xor": "bitwise_xor",
    # elementwise math (issue 16)
    "sinh": "sinh", "cosh": "cosh", "asinh": "arcsinh", "acosh": "arccosh",
    "atanh": "arctanh", "exp2": "exp2", "log10": "log10", "signbit": "signbit",
    "hypot": "hypot", "nextafter": "nextafter", "gcd": "gcd", "lcm": "lcm",
}

# the ops that make inf or nan from finite input: they run with floating-point warnings off
_QUIET = frozenset({"exp", "log", "log2", "log1p", "expm1", "sqrt", "rsqrt", "asin", "acos",
                    "reciprocal", "div", "sinh", "cosh", "acosh", "atanh", "exp2", "log10",
                    "hypot"})


def kernels(lib: ArrayLib) -> dict[str, Kernel]:
    xp, as_array, quiet, read_only = lib.xp, lib.as_array, lib.quiet, lib.read_only
    ndarray, float64 = xp.ndarray, xp.float64
    low_precision = lib.low_precision
    real_floats = (xp.float32, xp.float64)  # (a dtype equals its scalar type)
    half_lanes = lib.hooks.half_vector_lanes

    def default_call(f, args, out):
        result = half_by_number(xp, f, args, out, low_precision)
        return as_array(f(*args, out=out)) if result is None else result
    call = lib.hooks.call_elementwise or default_call

    make_plain = lib.hooks.elementwise_kernel

    def plain(f):
        if make_plain is not None:
            return make_plain(f)

        ordered = in_torch_order(f, ndarray)

        def kernel(*args, out=None):
            if out is not None and read_only(out):
                raise RuntimeError(OVERLAP)
            return call(ordered if out is None and disordered(args, ndarray) else f, args, out)
        return kernel

    def silenced(f):
        ordered = in_torch_order(f, ndarray)

        def kernel(*args, out=None):
            if out is not None and read_only(out):
                raise RuntimeError(OVERLAP)
            with quiet():
                return call(ordered if out is None and disordered(args, ndarray) else f,
                            args, out)
        return kernel

    def sigmoid(x, out=None):
        # e / (1 + e) with e = exp(-|x|) <= 1: never overflows, and keeps its relative
        # precision for very negative x (the tanh form rounds 0.5 - 0.5 to 0 below -17)
        if x.dtype.kind == "c":  # PyTorch's 1 / (1 + exp(-z)): |z| has no sign to split on
            with quiet():
                return as_array(xp.reciprocal(xp.add(xp.exp(-x), 1), out=out))
        if x.dtype in low_precision:
            return in_float32(xp, sigmoid, x, out=out)
        e = as_array(xp.exp(-xp.abs(x)))
        y = xp.where(x >= 0, x.dtype.type(1), e)
        return as_array(xp.true_divide(y, xp.add(e, 1, out=e), out=out))

    def sign(x, out=None):
        # PyTorch's (0 < x) - (x < 0): 0 at NaN (NumPy's sign gives NaN)
        y = as_array(xp.sign(x, out=out))
        if x.dtype.kind not in "biu":  # floats, bfloat16 (ml_dtypes) included
            y[xp.isnan(x)] = 0
        return y

    def log1p(x, out=None):
        if x.dtype.kind != "c":
            return as_array(xp.log1p(x, out=out))
        # PyTorch's (c10's complex log1p): log|1 + z| as log1p(x (x + 2) + y^2) / 2 near
        # 0, where NumPy's log(1 + z) loses the real part (all of it in single precision)
        re, im = x.real, x.imag
        r = re * (re + 2) + im * im
        near = xp.abs(x) < 0.5
        y = xp.empty_like(x) if out is None else out
        y.real[...] = xp.where(near, xp.where(r == 0, re, xp.log1p(r) * 0.5),
                               xp.log(xp.hypot(re + 1, im)))
        y.imag[...] = xp.arctan2(im, re + 1)
        return y

    def rsqrt(x, out=None):
        if x.dtype in low_precision:
            return half_rsqrt(x, out)
        return xp.reciprocal(xp.sqrt(x, out=out), out=out)

    def half_rsqrt(x, out=None):
        """rsqrt of a float16/bfloat16 array as PyTorch's CPU kernel rounds it: in
        float32, rounded once, in its vectorised loop (two vectors at a time); the
        elements of a row-major array past the last pair of vectors go through its scalar
        loop, which rounds the square root to the dtype before taking its reciprocal."""
        tail = x.size % (2 * half_lanes()) if half_lanes and x.flags.c_contiguous else 0
        # (read before `out`, which may be `x`, is written)
        rest = x.reshape(-1)[-tail:].astype(xp.float32) if tail else None
        y = in_float32(xp, rsqrt, x, out=out)
        if tail and y.flags.c_contiguous:
            root = xp.sqrt(rest).astype(x.dtype).astype(xp.float32)
            y.reshape(-1)[-tail:] = xp.reciprocal(root).astype(x.dtype)
        return y

    def reciprocal(x, out=None):
        # a complex one as `1 / x`: ATen's complex division (NumPy's reciprocal makes 1/0
        # nan+nanj, the division inf+nanj)
        if x.dtype.kind == "c":
            return as_array(xp.true_divide(x.dtype.type(1), x, out=out))
        return as_array(xp.reciprocal(x, out=out))

    def relu(x, out=None):
        return xp.maximum(x, x.dtype.type(0), out=out)

    exact_erf = lib.hooks.exact_erf

    def erf(x, out=None):
        y = exact_erf(x) if exact_erf is not None and x.dtype == float64 else \
            _erf_polynomial(xp, x)
        if out is not None:
            xp.copyto(out, y)
            return out
        return y

    functions = {op: getattr(xp, name) for op, name in _XP_FUNCTIONS.items()}
    functions.update(sigmoid=sigmoid, sign=sign, rsqrt=rsqrt, relu=relu, erf=erf, log1p=log1p,
                     reciprocal=reciprocal)
    functions.update(lib.hooks.elementwise)
    table = {op: (silenced if op in _QUIET else plain)(f) for op, f in functions.items()}

    def is_integer(a, b) -> bool:
        return xp.issubdtype(xp.result_type(a, b), xp.integer)

    def rounded_number(a, b):
        """PyTorch's pow, fmod and remainder round a number operand to a half-precision
        tensor's dtype (NumPy's weak-scalar rule; ml_dtypes' bfloat16 would compute, and
        answer, in float32); floor_divide keeps it whole."""
        if isinstance(a, ndarray) and a.dtype in low_precision and not isinstance(b, ndarray):
            return a, xp.asarray(b, a.dtype)
        if isinstance(b, ndarray) and b.dtype in low_precision and not isinstance(a, ndarray):
            return xp.asarray(a, b.dtype), b
        return a, b

    def integer_division(f, name, rounds=False):
        def kernel(a, b, out=None):
            if rounds:
                a, b = rounded_number(a, b)
            with quiet():
                # (PyTorch's kernel checks the divisors it reads: none for an empty result)
                if is_integer(a, b) and _any(b == 0) and getattr(a, "size", 1):
                    raise IntegerDivisionByZero(name)
                return as_array(f(a, b, out=out))
        return kernel

    def remainder(a, b, out=None):
        # PyTorch's: fmod, then the divisor's sign; a zero keeps fmod's sign
        # (remainder(-2., 2) is -0.), where NumPy's gives the divisor's
        a, b = rounded_number(a, b)
        if is_integer(a, b):
            return integer_division(xp.remainder, "remainder")(a, b, out=out)
        with quiet():
            mod = xp.fmod(a, b)
            y = xp.where((mod != 0) & ((xp.asarray(b) < 0) != (mod < 0)), mod + b, mod)
        y = as_array(y).astype(mod.dtype, copy=False)
        if out is None:
            return y
        xp.copyto(out, y)
        return out

    def complex_power(a, b, out):
        """PyTorch's complex pow: C's cpow, `exp(b * log(a))`, but for the number exponents
        its kernels special-case (_COMPLEX_POWERS)."""
        d = xp.result_type(a, b)
        with quiet():
            if isinstance(b, ndarray):
                y = xp.exp(b.astype(d, copy=False) * xp.log(xp.asarray(a, d)))
            elif complex(b) in _COMPLEX_POWERS:
                y = _COMPLEX_POWERS[complex(b)](xp, xp.asarray(a, d), d.type(1))
            else:
                y = xp.exp(xp.asarray(b, d) * xp.log(a))
        y = as_array(y).astype(d, copy=False)
        if out is None:
            return y
        xp.copyto(out, y)
        return out

    def power(a, b, out=None):
        if isinstance(a, ndarray) and a.dtype in real_floats and type(b) in (int, float) \
                and b in _POWERS_BY_PRODUCTS:
            with quiet():
                return as_array(_POWERS_BY_PRODUCTS[b](xp, a, out))
        a, b = rounded_number(a, b)
        if xp.result_type(a, b).kind == "c":
            return complex_power(a, b, out)
        if is_integer(a, b) and _any(b < 0):
            if not isinstance(b, ndarray):  # PyTorch refuses a negative number exponent
                raise RuntimeError("Integers to negative integer powers are not allowed.")
            # and for a tensor of them gives 1 ** -n = 1, (-1) ** -n = +-1, else 0
            a = xp.asarray(a, dtype=xp.result_type(a, b))
            mag = xp.power(a, xp.where(b < 0, 0, b))
            tiny = xp.where(a == 1, 1, xp.where(a == -1, 1 - 2 * (b & 1), 0)).astype(a.dtype)
            y = xp.where(b < 0, tiny, mag)
            if out is None:
                return as_array(y)
            xp.copyto(out, y)
            return out
        with quiet():
            y = as_array(xp.power(a, b, out=out))
        if out is None and not isinstance(a, ndarray) and not y.flags.c_contiguous:
            # PyTorch's pow(Scalar, Tensor) gives a row-major result whatever the exponent's
            # layout (the kernel sizes its output without strides)
            y = xp.ascontiguousarray(y)
        return y

    def where(cond, x, y):
        ref = x if isinstance(x, ndarray) else y
        if isinstance(ref, ndarray) and not (isinstance(x, ndarray) and isinstance(y, ndarray)):
            # a Python scalar takes the array's dtype (xp.where would widen to float64)
            x = x if isinstance(x, ndarray) else xp.asarray(x, ref.dtype)
            y = y if isinstance(y, ndarray) else xp.asarray(y, ref.dtype)
        return as_array(xp.where(cond, x, y))

    def clamp(x, min=None, max=None):  # noqa: A002
        # one bound alone as maximum/minimum: CuPy's clip takes no None for bfloat16
        y = xp.maximum(x, min) if max is None else xp.minimum(x, max) if min is None else \
            xp.clip(x, min, max)
        return as_array(y).astype(x.dtype, copy=False)

    def cast(x, dtype):
        if x.dtype.kind == "c" and not dtype.is_complex:
            if dtype.name == "bool":  # nonzero: either part
                return x != 0
            x = x.real  # (core has warned, as PyTorch)
        x = through_float(x, lib.dtypes[dtype])
        if x.flags.c_contiguous:  # (the common case)
            return x.astype(lib.dtypes[dtype])
        return copy_like(x, lib.dtypes[dtype], xp)

    def shift(left):
        # as PyTorch: a shift by the width of the type or more (or by a negative count)
        # gives 0, or -1 for a negative number shifted right (C leaves it undefined)
        def kernel(a, b, out=None):
            ref = a if isinstance(a, ndarray) else b
            bits = ref.dtype.itemsize * 8
            a, b = xp.asarray(a, ref.dtype), xp.asarray(b, ref.dtype)
            wide = (b < 0) | (b >= bits)
            safe = xp.where(wide, 0, b).astype(ref.dtype)
            if left:
                y = xp.where(wide, 0, xp.left_shift(a, safe))
            else:
                y = xp.right_shift(a, xp.where(wide, bits - 1, safe).astype(ref.dtype))
                if ref.dtype.kind == "u":
                    y = xp.where(wide, 0, y)
            y = as_array(y).astype(ref.dtype, copy=False)
            if out is not None:
                xp.copyto(out, y)
                return out
            return y
        return kernel

    def where_laid_out(cond, x, y):
        # PyTorch's where iterates (condition, input, other): the condition leads
        if disordered((cond, x, y), ndarray):
            return in_torch_order(where, ndarray)(cond, x, y)
        return where(cond, x, y)

    table.update({
        op: torch_layout(k, ndarray) for op, k in {
            "fmod": integer_division(xp.fmod, "fmod", rounds=True),
            "bitwise_left_shift": shift(True), "bitwise_right_shift": shift(False),
            "pow": power, "remainder": remainder,
            "floor_divide": integer_division(xp.floor_divide, "floor_divide")}.items()})
    table.update({"where": where_laid_out, "clamp": clamp, "cast": cast})
    return table


# PyTorch's pow of a float32/float64 tensor by these numbers (pow_tensor_scalar_kernel):
# sqrt, 1 / sqrt, 1 / x and products, not the C library's pow, which rounds otherwise (x ** 3
# in a quarter of float32 elements, x ** 0.5 in a tenth) and takes ~3x as long
# ATen's complex pow by a number: 0 and 1 before any kernel, 0.5, -0.5 and -1 by sqrt,
# rsqrt and reciprocal, 2, 3 and -2 by products (its complex division: NumPy's, 1/0 inf+nanj)
_COMPLEX_POWERS: dict[complex, Callable[[Any, Any, Any], Any]] = {
    0: lambda xp, a, one: xp.zeros_like(a) + one, 1: lambda xp, a, one: a.copy(),
    2: lambda xp, a, one: a * a, 3: lambda xp, a, one: a * a * a,
    -1: lambda xp, a, one: xp.true_divide(one, a),
    -2: lambda xp, a, one: xp.true_divide(one, a * a),
    0.5: lambda xp, a, one: xp.sqrt(a),
    -0.5: lambda xp, a, one: xp.true_divide(one, xp.sqrt(a)),
}

_POWERS_BY_PRODUCTS: dict[float, Callable[[Any, Any, Any], Any]] = {
    2: lambda xp, x, out: xp.multiply(x, x, out=out),
    3: lambda xp, x, out: xp.multiply(xp.multiply(x, x), x, out=out),
    0.5: lambda xp, x, out: xp.sqrt(x, out=out),
    -0.5: lambda xp, x, out: xp.reciprocal(xp.sqrt(x), out=out),
    -1: lambda xp, x, out: xp.reciprocal(x, out=out),
    -2: lambda xp, x, out: xp.reciprocal(xp.multiply(x, x), out=out),
}


def _any(flags: Any) -> bool:
    """Whether any of `flags` (an array, or one Python bool for a scalar operand) is set."""
    return bool(flags.any()) if hasattr(flags, "any") else bool(flags)


# Cephes' erf (ndtr.c): a rational function of x**2 for |x| <= 1, erfc's rational function
# of |x| times exp(-x**2) beyond; relative error below 5e-16 in float64 (checked against
# math.erf in the tests), so every float32 result is correctly rounded and erf(0) is 0.
_ERF_T = (9.60497373987051638749e0, 9.00260197203842689217e1, 2.23200534594684319226e3,
          7.00332514112805075473e3, 5.55923013010394962768e4)
_ERF_U = (3.35617141647503099647e1, 5.21357949780152679795e2, 4.59432382970980127987e3,
          2.26290000613890934246e4, 4.92673942608635921086e4)
_ERFC_P = (2.46196981473530512524e-10, 5.64189564831068821977e-1, 7.46321056442269912687e0,
           4.86371970985681366614e1, 1.96520832956077098242e2, 5.26445194995477358631e2,
           9.34528527171957607540e2, 1.02755188689515710272e3, 5.57535335369399327526e2)
_ERFC_Q = (1.32281951154744992508e1, 8.67072140885989742329e1, 3.54937778887819891062e2,
           9.75708501743205489753e2, 1.82390916687909736289e3, 2.24633760818710981792e3,
           1.65666309194161350182e3, 5.57535340817727675546e2)


def _polynomial(x: Any, coefficients: tuple[float, ...], monic: bool = False) -> Any:
    """Horner's rule; `monic` puts an implicit leading coefficient 1 (Cephes' p1evl)."""
    y = x + coefficients[0] if monic else x * 0 + coefficients[0]
    for c in coefficients[1:]:
        y = y * x + c
    return y


def erf_coefficients() -> tuple[tuple[float, ...], ...]:
    """The Cephes coefficients of `_erf_polynomial` (T, U, P, Q), for the CPU's compiled
    erf (which must compute exactly this formula)."""
    return _ERF_T, _ERF_U, _ERFC_P, _ERFC_Q


def _erf_polynomial(xp: Any, x: Any) -> Any:
    """erf in float64 (Cephes), returned in x's dtype. |x| is clipped at 6, where erf is
    1.0 in float64, so infinities give +-1 and no overflow warns; NaN stays NaN."""
    x64 = xp.clip(x.astype(xp.float64), -6.0, 6.0)
    a, z = xp.abs(x64), x64 * x64
    near_zero = x64 * _polynomial(z, _ERF_T) / _polynomial(z, _ERF_U, monic=True)
    erfc = xp.exp(-z) * _polynomial(a, _ERFC_P) / _polynomial(a, _ERFC_Q, monic=True)
    return xp.where(a <= 1.0, near_zero, xp.copysign(1.0 - erfc, x64)).astype(x.dtype)
