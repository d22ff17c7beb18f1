"""The rest of PyTorch's elementwise math (issue 16): hyperbolic functions, exp2 and log10,
the special functions (erfc, erfinv, lgamma, digamma, polygamma, i0, igamma ...), binary
ops with their own rounding or NaN rules (fmod, hypot, fmax, copysign, xlogy ...),
integer ops (gcd, lcm, shifts), and the ops of `ember.special` that torch has only there
(declared here without a top-level function: `special_i0e` is `ember.special.i0e`).

Primitives are declared through ember.core.ops.elementwise's `_unary` and a binary
helper here, with the gradient formulas of PyTorch's derivatives.yaml; their kernels
are in ember/backends/xp (elementwise: NumPy's functions; special: SciPy's). Everything
else is a composite of existing ops.
"""

from __future__ import annotations

import math
from typing import Any

from ember.core import costs
from ember.core import dtype as dt
from ember.core.apply import apply, record_grad
from ember.core.creation import tensor
from ember.core.declare import alias, check_tensor, composite, define
from ember.core.dispatch import kernel_refuses, not_implemented_for
from ember.core.errors import invalid_combination, type_name
from ember.core.grad_mode import no_grad
from ember.core.host import python_scalar
from ember.core.inplace import apply_inplace
from ember.core.opdef import OPS, Grad, Kind, OutMeta, metadata_rule
from ember.core.opdef import Precision as P
from ember.core.ops.complex import complex as complex_
from ember.core.ops.elementwise import (
    _binary_inplace,
    _binary_rule,
    _require,
    _unary,
    activation_backward,
    as_operand,
    binary,
    bool_operands_refused,
    check_tensors,
    clamp,
    conj,
    erf,
    log,
    log1p,
    maximum_of,
    minimum_of,
    operand_tier,
    pow,
    refuse_complex_autograd,
    sign,
    sin,
    to_dtype,
    trunc,
    where,
)
from ember.core.ops.indexing import index_select
from ember.core.ops.shape import in_iter_order
from ember.core.return_types import return_type
from ember.core.tensor import Tensor

_SQRT_PI = math.sqrt(math.pi)
_LN2, _LN10 = math.log(2.0), math.log(10.0)
_INF = math.inf


def _not_implemented(what: str) -> Any:
    def formula(grad: Tensor) -> Tensor:
        raise NotImplementedError(f"the derivative for '{what}' is not implemented.")
    return formula


def _floating_only(op: str, d: dt.dtype, like: Any = None) -> None:
    """PyTorch's error for an op that has no integer kernel: `"frac_cpu" not implemented
    for 'Long'` (on tensor `like`'s device; the CPU's when not given)."""
    if not d.is_floating_point:
        raise not_implemented_for(op, like, d)


def _float_of(d: dt.dtype) -> dt.dtype:
    """The dtype a float-valued op gives for operands of dtype `d`."""
    return d if d.is_floating_point else dt.get_default_dtype()


def _as_float(input: Tensor) -> Tensor:
    return input if input.dtype.is_floating_point else to_dtype(input, dt.get_default_dtype())


def _full_float(kernel: str, x: Tensor) -> Tensor:
    """`x`, unless half precision, which PyTorch's CPU kernel `kernel` (float32 and
    float64 only) refuses."""
    if x._dtype in (dt.float16, dt.bfloat16):
        raise kernel_refuses(kernel, x._dtype)
    return x


def _tensor_like(x: Any, like: Tensor, d: dt.dtype) -> Tensor:
    """`x` (a tensor or a Python number) as a tensor of dtype `d` on `like`'s device."""
    if not isinstance(x, Tensor):
        x = as_operand(x, like)
        if not isinstance(x, Tensor):
            x = Tensor._from_data(x, device=like.device)
    return to_dtype(x, d)


def _first(a: Any, b: Any, op: str) -> Tensor:
    for x in (a, b):
        if isinstance(x, Tensor):
            return x
    raise two_numbers(op, a, b)


# PyTorch's names for the ops whose Python entry points are ember's (special.xlog1py)
_PARSER_NAMES = {"xlog1py": "special_xlog1py", "zeta": "special_zeta"}


def two_numbers(op: str, a: Any, b: Any) -> TypeError:
    """PyTorch's argument parser refusing a binary op of two numbers: its three overloads
    (tensor and tensor, number and tensor, tensor and number)."""
    other = "exponent" if op == "float_power" else "other"
    return invalid_combination(_PARSER_NAMES.get(op, op), f"{type_name(a)}, {type_name(b)}", (
        f"(Tensor input, Tensor {other}, *, Tensor out = None)",
        f"(Number self, Tensor {other}, *, Tensor out = None)",
        f"(Tensor input, Number {other}, *, Tensor out = None)"))


# -- unary primitives -----------------------------------------------------------------------

sinh = _unary("sinh", "float", lambda grad, input: grad * conj(input.cosh()),
              precision=P.FLOAT32, flops=8, complex=True,
              doc="Returns the hyperbolic sine of each element.")
cosh = _unary("cosh", "float", lambda grad, input: grad * conj(input.sinh()),
              precision=P.FLOAT32, flops=8, complex=True,
              doc="Returns the hyperbolic cosine of each element.")
asinh = _unary("asinh", "float",
               lambda grad, input: grad * conj((input * input + 1.0).rsqrt()),
               flops=8, aliases="arcsinh", complex=True,
               doc="Returns the inverse hyperbolic sine of each element.")
def _acosh_grad(grad: Tensor, input: Tensor) -> Tensor:
    """PyTorch's: (x^2 - 1)^-1/2 for real x; for complex z, (z + 1)^-1/2 (z - 1)^-1/2, on
    acosh's branch (where (z^2 - 1)^-1/2 is the other root in half the plane)."""
    if input._dtype.is_complex:
        return grad * conj((input + 1.0).rsqrt() * (input - 1.0).rsqrt())
    return grad * (input * input - 1.0).rsqrt()


acosh = _unary("acosh", "float", _acosh_grad, flops=8, aliases="arccosh", complex=True,
               doc="Returns the inverse hyperbolic cosine of each element (NaN below 1).")
atanh = _unary("atanh", "float", lambda grad, input: grad / (1.0 - conj(input * input)),
               flops=8, aliases="arctanh", complex=True,
               doc="Returns the inverse hyperbolic tangent of each element (NaN outside "
                   "[-1, 1]).")
arcsinh, arccosh = alias(asinh, "arcsinh"), alias(acosh, "arccosh")
arctanh = alias(atanh, "arctanh")
exp2 = _unary("exp2", "float", lambda grad, result: grad * conj(result) * _LN2, flops=8,
              complex=True,
              doc="Returns 2 raised to the power of each element.")
log10 = _unary("log10", "float", lambda grad, input: grad / (conj(input) * _LN10),
               precision=P.FLOAT32, flops=8, complex=True,
               doc="Returns the base-10 logarithm of each element.")
erfc = _unary("erfc", "float",
              lambda grad, input: grad * ((-(input * input)).exp() * (-2.0 / _SQRT_PI)),
              flops=16, doc="Computes the complementary error function 1 - erf(x) of each "
                            "element, accurate where erf(x) is close to 1.")
erfinv = _unary("erfinv", "float",
                lambda grad, result: grad * ((result * result).exp() * (_SQRT_PI / 2.0)),
                precision=P.FLOAT32, flops=32,
                doc="Computes the inverse error function of each element (its domain is "
                    "[-1, 1]).")
lgamma = _unary("lgamma", "float", lambda grad, input: grad * input.digamma(), flops=32,
                doc="Computes the natural logarithm of the absolute value of the gamma "
                    "function of each element.")
digamma = _unary("digamma", "float", lambda grad, input: grad * input.polygamma(1), flops=32,
                 doc="Computes the logarithmic derivative of the gamma function (psi) of "
                     "each element; -inf at 0, NaN at the negative integers.")
i0 = _unary("i0", "float", lambda grad, input: grad * special_i1(input), flops=32,
            doc="Computes the zeroth-order modified Bessel function of the first kind of "
                "each element.")


def _i1_grad(grad: Tensor, input: Tensor, result: Tensor) -> Tensor:
    # i1'(x) = i0(x) - i1(x) / x, and 1/2 at 0
    zero = input == 0
    safe = where(zero, 1.0, input)
    return grad * where(zero, 0.5, i0(input) - result / safe)


def _i1e_grad(grad: Tensor, input: Tensor, result: Tensor) -> Tensor:
    zero = input == 0
    safe = where(zero, 1.0, input)
    return grad * where(zero, 0.5, special_i0e(input) - result * (input.sign() + 1.0 / safe))


_SPECIAL = ""  # no top-level function or method: reached through ember.special
special_i0e = _unary("special_i0e", "float",
                     lambda grad, input, result: grad * (special_i1e(input) -
                                                         input.sign() * result),
                     variants=_SPECIAL, flops=32,
                     doc="Computes the exponentially scaled zeroth-order modified Bessel "
                         "function of the first kind: exp(-|x|) * i0(x).")
special_i1 = _unary("special_i1", "float", _i1_grad, variants=_SPECIAL, flops=32,
                    doc="Computes the first-order modified Bessel function of the first "
                        "kind of each element.")
special_i1e = _unary("special_i1e", "float", _i1e_grad, variants=_SPECIAL, flops=32,
                     doc="Computes the exponentially scaled first-order modified Bessel "
                         "function of the first kind: exp(-|x|) * i1(x).")
special_erfcx = _unary("special_erfcx", "full float",
                       lambda grad, input, result: grad * (input * result * 2.0 -
                                                           2.0 / _SQRT_PI),
                       variants=_SPECIAL, flops=32,
                       doc="Computes the scaled complementary error function "
                           "exp(x**2) * erfc(x), without overflow for large x.")
special_ndtri = _unary("special_ndtri", "full float",
                       lambda grad, result: grad * ((result * result * 0.5).exp() *
                                                    math.sqrt(2.0 * math.pi)),
                       variants=_SPECIAL, flops=32,
                       doc="The inverse of `ndtr`: the x whose area under the standard "
                           "Gaussian density from -inf is `input`.")


def _bessel(name: str, doc: str) -> Any:
    # (PyTorch declares no derivative for torch.special's Bessel functions)
    return _unary(name, "full float", None, variants=_SPECIAL, flops=32, doc=doc)


special_bessel_j0 = _bessel("special_bessel_j0", "Computes the Bessel function of the first "
                            "kind of order 0.")
special_bessel_j1 = _bessel("special_bessel_j1", "Computes the Bessel function of the first "
                            "kind of order 1.")
special_bessel_y0 = _bessel("special_bessel_y0", "Computes the Bessel function of the second "
                            "kind of order 0.")
special_bessel_y1 = _bessel("special_bessel_y1", "Computes the Bessel function of the second "
                            "kind of order 1.")
special_modified_bessel_i0 = _bessel("special_modified_bessel_i0", "Computes the modified "
                                     "Bessel function of the first kind of order 0.")
special_modified_bessel_i1 = _bessel("special_modified_bessel_i1", "Computes the modified "
                                     "Bessel function of the first kind of order 1.")
special_modified_bessel_k0 = _bessel("special_modified_bessel_k0", "Computes the modified "
                                     "Bessel function of the second kind of order 0.")
special_modified_bessel_k1 = _bessel("special_modified_bessel_k1", "Computes the modified "
                                     "Bessel function of the second kind of order 1.")
special_airy_ai = _bessel("special_airy_ai", "Computes the Airy function Ai of each element.")
special_scaled_modified_bessel_k0 = _bessel(
    "special_scaled_modified_bessel_k0", "Computes the exponentially scaled modified Bessel "
    "function of the second kind of order 0: exp(x) * k0(x).")
special_scaled_modified_bessel_k1 = _bessel(
    "special_scaled_modified_bessel_k1", "Computes the exponentially scaled modified Bessel "
    "function of the second kind of order 1: exp(x) * k1(x).")


# -- polygamma: a primitive with an attribute ------------------------------------------------


def _polygamma_rule(input, *, n):
    out = _float_of(input.dtype)
    return OutMeta(input.shape, out, out)


def _polygamma(n: int, input: Tensor) -> Tensor:
    if isinstance(n, bool) or not isinstance(python_scalar(n), int):
        raise TypeError(f"polygamma(): argument 'n' (position 1) must be int, not "
                        f"{type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    if isinstance(input, Tensor) and input.dtype.is_complex:  # (ATen's kernel for this n)
        raise kernel_refuses({0: "digamma", 1: "trigamma"}.get(int(n), "polygamma"),
                             input.dtype)
    return apply(OPS["polygamma"], input, n=int(n))


def _polygamma_method(self: Tensor, n: int) -> Tensor:
    return _polygamma(n, self)


def _polygamma_inplace(self: Tensor, n: int) -> Tensor:
    return apply_inplace(self, lambda old: _polygamma(n, old), op="polygamma_")


polygamma = define("polygamma", Kind.PRIMITIVE, _polygamma,
                   variants="function method inplace out", rule=_polygamma_rule,
                   method=_polygamma_method, inplace_method=_polygamma_inplace,
                   grad=Grad(input=lambda grad, input, n: grad * _polygamma(n + 1, input)),
                   cost=costs.pointwise(64),
                   doc="Computes the n-th derivative of the digamma function of each "
                       "element (`polygamma(0, x)` is `digamma(x)`).")


# -- signbit: a predicate that reads the sign bit (-0.0 and -NaN included) -------------------


@metadata_rule
def _signbit_rule(input):
    return OutMeta(input.shape, dt.bool_, None)


def _signbit(input: Tensor) -> Tensor:
    if input.dtype.is_complex:
        raise not_implemented_for("signbit", input)
    if input.dtype is dt.bool_:
        return input != input  # never negative
    if not input.dtype.is_floating_point:
        return input != input if input.dtype in dt.LIMITED_DTYPES else input < 0
    return apply(OPS["signbit"], input)


signbit = define("signbit", Kind.PRIMITIVE, _signbit, variants="function method out",
                 rule=_signbit_rule, cost=costs.pointwise(1),
                 doc="Tests each element's sign bit: True for negative numbers, -0.0 and "
                     "NaNs with the sign bit set.")


# -- binary primitives ------------------------------------------------------------------------


def _binary_rule_of(op: str, kind: str):
    """`kind`: "arith" (type promotion; integer division by zero raises in the kernel),
    "float" (floating operands only, a floating result), "to_float" (a floating result,
    integers computed in the default dtype) or "integer" (integer operands only)."""
    base = _binary_rule(op, "arith")
    if kind == "to_float":
        return _binary_rule(op, "float")

    @metadata_rule
    def rule(input, other):
        meta = base(input, other)
        if kind == "float":
            _floating_only(op, meta.dtype, input)
        elif kind == "integer":
            _require(op, meta.dtype, lambda d: not d.is_floating_point and d is not dt.bool_,
                     "integer tensors", input, other)
        elif kind == "arith" and meta.dtype is dt.bool_:
            raise bool_operands_refused(op)
        return meta
    rule.__name__ = f"{op}_rule"
    return rule


def _declare(name: str, kind: str, doc: str, *, grad: Grad | None = None, flops: float = 1,
             operators: str = "", variants: str = "function method inplace out",
             tensors: bool = False) -> Any:
    """A binary op; `tensors`: PyTorch's takes only tensors (no number for `other`)."""
    def fn(input: Any, other: Any) -> Tensor:
        if tensors:
            check_tensors(name, input, other)
        elif not (isinstance(input, Tensor) or isinstance(other, Tensor)):
            raise two_numbers(name.removeprefix("special_"), input, other)
        return binary(name, input, other)
    return define(name, Kind.PRIMITIVE, fn, variants=variants, rule=_binary_rule_of(name, kind),
                  grad=grad, cost=costs.pointwise(flops), doc=doc, operators=operators,
                  operator_impl=fn if operators else None,
                  inplace_method=_binary_inplace(name, fn) if "inplace" in variants else None)


fmod = _declare("fmod", "arith", "C's remainder (`fmod`): the remainder of `input / other` "
                "with the sign of `input` (see `remainder` for Python's).", flops=4,
                grad=Grad(input=lambda grad: grad,
                          other=lambda grad, input, other: -(grad * (input / other).trunc())))
hypot = _declare("hypot", "float", "`sqrt(input**2 + other**2)` element-wise, without "
                 "overflow or underflow.", flops=8, tensors=True,
                 grad=Grad(input=lambda grad, input, result: grad * input / result,
                           other=lambda grad, other, result: grad * other / result))
nextafter = _declare("nextafter", "float", "The next floating-point value after `input` "
                     "towards `other`.", tensors=True)
igamma = _declare("igamma", "float", "The regularized lower incomplete gamma function "
                  "P(input, other).", flops=64, tensors=True, grad=Grad(
                      input=_not_implemented("igamma: input"),
                      other=lambda grad, input, other: grad * (
                          (input - 1.0) * other.log() - other - input.lgamma()).exp()))
igammac = _declare("igammac", "float", "The regularized upper incomplete gamma function "
                   "Q(input, other) = 1 - P(input, other).", flops=64, tensors=True, grad=Grad(
                       input=_not_implemented("igammac: input"),
                       other=lambda grad, input, other: -(grad * (
                           (input - 1.0) * other.log() - other - input.lgamma()).exp())))
gcd = _declare("gcd", "integer", "The greatest common divisor of each pair of elements "
               "(non-negative; gcd(0, 0) is 0).", flops=16)
lcm = _declare("lcm", "integer", "The least common multiple of each pair of elements "
               "(non-negative).", flops=16)
bitwise_left_shift = _declare(
    "bitwise_left_shift", "integer", "Shifts the bits of `input` left by `other` (0 when "
    "the shift is the width of the type or more).",
    operators="__lshift__ __rlshift__ __ilshift__")
bitwise_right_shift = _declare(
    "bitwise_right_shift", "integer", "Shifts the bits of `input` right by `other`, "
    "arithmetically (the sign fills in).", operators="__rshift__ __rrshift__ __irshift__")
special_zeta = _declare(
    "special_zeta", "to_float", "The Hurwitz zeta function: the sum over k >= 0 of "
    "(k + other) ** -input.", flops=64, variants="", grad=Grad(
        input=_not_implemented("zeta"),
        other=lambda grad, input, other: grad * -input * special_zeta(input + 1.0, other)))


# -- unary composites ------------------------------------------------------------------------


@composite(variants="function method inplace out", cost=costs.pointwise(1))
def deg2rad(input: Tensor) -> Tensor:
    """Converts each element from degrees to radians."""
    return _as_float(input) * (math.pi / 180.0)


@composite(variants="function method inplace out", cost=costs.pointwise(1))
def rad2deg(input: Tensor) -> Tensor:
    """Converts each element from radians to degrees."""
    return _as_float(input) * (180.0 / math.pi)


@composite(node_label="FracBackward0",
           variants="function method inplace out", cost=costs.pointwise(2))
def frac(input: Tensor) -> Tensor:
    """The fractional part of each element: `input - trunc(input)`, with its sign."""
    _floating_only("frac", input.dtype, input)
    return input - trunc(input)


@composite(variants="function method inplace out", cost=costs.pointwise(12),
           node_label="SincBackward0", complex=True)
def sinc(input: Tensor) -> Tensor:
    """The normalized sinc function `sin(pi x) / (pi x)` of each element (1 at 0)."""
    x = input if input.dtype.is_complex else _as_float(input)
    if x._dtype in (dt.float16, dt.bfloat16):  # PyTorch's: in float32, rounded once
        return to_dtype(sinc(to_dtype(x, dt.float32)), x._dtype)
    zero = x == 0
    # where(zero, ...) twice: the unused branch must not make a 0/0 in the gradient
    px = where(zero, 1.0, x * math.pi)
    return where(zero, 1.0, sin(px) / px)


@composite(complex=True, variants="function method inplace out", cost=costs.pointwise(1),
           node_label="SgnBackward0")
def sgn(input: Tensor) -> Tensor:
    """The sign of each element (for real tensors `sign`, with PyTorch's 0 for NaN; for
    complex ones `z / |z|`, 0 at 0)."""
    if input.dtype.is_complex:
        size = input.abs()
        zero = size == 0
        # (the divisor is 1 at 0, so the unused branch's gradient is no 0/0)
        return where(zero, 0.0, input / where(zero, 1.0, size))
    out = sign(input)
    if input.dtype.is_floating_point:
        out = where(input.isnan(), 0.0, out)
    return out


def _logit_grad(grad: Tensor, input: Tensor, eps: Any) -> Tensor:
    """PyTorch's logit_backward: NaN outside [0, 1] without eps; 0 outside [eps, 1 - eps]
    with it."""
    x = _as_float(input)
    g = grad / (x * (1.0 - x))
    if eps is None:
        return where((x < 0).logical_or(x > 1), math.nan, g)
    return where((x < eps).logical_or(x > 1.0 - eps), 0.0, g)


@composite(variants="function method inplace out", cost=costs.pointwise(4),
           grad=Grad(input=_logit_grad))
def logit(input: Tensor, eps: float | None = None) -> Tensor:
    """The log-odds `log(x / (1 - x))` of each element; with `eps`, the input is clamped
    into [eps, 1 - eps] first."""
    with no_grad():
        x = _as_float(input)
        if eps is not None:
            x = clamp(x, eps, 1.0 - eps)
        out = log(x / (1.0 - x))
    record_grad(OPS["logit"], (input,), {"eps": eps}, out)
    return out


_LARGEST = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38,
            "float32": 3.4028234663852886e38, "float64": 1.7976931348623157e308}


@composite(complex=True, node_label="NanToNumBackward0",
           variants="function method inplace out", cost=costs.pointwise(4))
def nan_to_num(input: Tensor, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None) -> Tensor:
    """Replaces NaN with `nan`, +inf with `posinf` and -inf with `neginf` (by default the
    largest and the lowest finite values of the dtype); in a complex tensor, in each of
    the real and imaginary parts."""
    if input.dtype.is_complex:
        refuse_complex_autograd("nan_to_num", input.dtype, input)
        return complex_(*(nan_to_num(p, nan, posinf, neginf) for p in (input.real, input.imag)))
    if not input.dtype.is_floating_point:
        return input.clone()
    big = _LARGEST[input.dtype.name]
    out = where(input == _INF, big if posinf is None else posinf, input)
    out = where(input == -_INF, -big if neginf is None else neginf, out)
    return where(input.isnan(), nan, out)


@composite(variants="function method out", cost=costs.pointwise(1))
def isposinf(input: Tensor) -> Tensor:
    """Tests each element for positive infinity."""
    return input == _INF


@composite(variants="function method out", cost=costs.pointwise(1))
def isneginf(input: Tensor) -> Tensor:
    """Tests each element for negative infinity."""
    return input == -_INF


@composite(complex=True, variants="function method", cost=costs.pointwise(1))
def isreal(input: Tensor) -> Tensor:
    """Tests each element for being real: a zero imaginary part (every element of a real
    tensor)."""
    if input.dtype.is_complex:
        return input.imag == 0
    return input.new_ones(tuple(input.shape), dtype=dt.bool_)


@composite(variants="function method inplace out", cost=costs.pointwise(32),
           node_label="MvlgammaBackward0")
def mvlgamma(input: Tensor, p: int) -> Tensor:
    """The multivariate log-gamma function of dimension `p`:
    `p (p - 1) / 4 * log(pi) + sum(lgamma(x - j / 2) for j in range(p))`."""
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    x = _as_float(input)
    out = lgamma(x)
    for j in range(1, p):
        out = out + lgamma(x - j / 2.0)
    return out + p * (p - 1) / 4.0 * math.log(math.pi)


_POWERS_OF_TWO = tuple(math.ldexp(1.0, i) for i in range(-1074, 1024))  # 2**-1074 .. 2**1023


def _powers_of_two(table: Tensor, k: Tensor) -> Tensor:
    """`2.0**k` in float64 for integral float64 `k` in [-1074, 1023], exact on every device:
    a lookup in `table` (`_POWERS_OF_TWO` on k's device), since `pow(2.0, k)` is only as
    exact as the device's `pow` (CUDA's may be an ulp off, which made frexp's mantissa of
    2**1023 come out as 0.9999999999999999)."""
    index = to_dtype(k + 1074.0, dt.int64)
    return index_select(table, 0, index.reshape(-1)).reshape(k.shape)


frexp_result = return_type("frexp", ["mantissa", "exponent"])


@composite(variants="function method out", cost=costs.pointwise(8))
def frexp(input: Tensor) -> tuple[Tensor, Tensor]:
    """Splits each element into a mantissa in (-1, -0.5] or [0.5, 1) and an int32
    exponent, `input = mantissa * 2**exponent` (0, inf and NaN have exponent 0)."""
    if not input.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    with no_grad():
        wide = to_dtype(input, dt.float64)
        finite = wide.isfinite().logical_and(wide != 0)
        a = where(finite, wide.abs(), 1.0)
        e = a.log2().floor() + 1.0  # log2 may round up at a power of two: fixed below
        # 2**-e in two halves, so that neither overflows for subnormal inputs
        table = tensor(_POWERS_OF_TWO, dtype=dt.float64, device=input.device)
        half = (-e / 2.0).floor()
        m = a * _powers_of_two(table, half) * _powers_of_two(table, -e - half)
        e = e + (m >= 1.0).to(dt.float64) - (m < 0.5).to(dt.float64)
        half = (-e / 2.0).floor()
        scale1, scale2 = _powers_of_two(table, half), _powers_of_two(table, -e - half)
        exponent = to_dtype(where(finite, e, 0.0), dt.int32)
        scale1 = to_dtype(where(finite, scale1, 1.0), input.dtype)
        scale2 = to_dtype(where(finite, scale2, 1.0), input.dtype)
    # the mantissa is the input scaled by 2**-exponent: its gradient, grad / 2**exponent
    mantissa = input * scale1 * scale2
    return frexp_result(mantissa, exponent)


# -- binary composites ------------------------------------------------------------------------


def _common(op: str, input: Any, other: Any) -> dt.dtype:
    return dt.result_type(operand_tier(input), operand_tier(other))


def _float_operands(op: str, input: Any, other: Any) -> tuple[Tensor, Tensor, Tensor]:
    """Both operands as tensors of their common floating dtype (ints promote to the
    default dtype), and the first tensor among them."""
    like = _first(input, other, op)
    d = _float_of(_common(op, input, other))
    return _tensor_like(input, like, d), _tensor_like(other, like, d), like


def _copysign_grad(grad: Tensor, input: Tensor, result: Tensor) -> Tensor:
    # PyTorch's copysign_tensor_self_backward: result / input, 0 where input is 0
    zero = input == 0
    return grad * where(zero, 0.0, result / where(zero, 1.0, input))


@composite(variants="function method inplace out", cost=costs.pointwise(2),
           grad=Grad(input=_copysign_grad, other=lambda grad: grad * 0.0))
def copysign(input: Any, other: Any) -> Tensor:
    """The magnitude of `input` with the sign of `other` (the sign bit: -0.0 counts as
    negative), as a floating tensor."""
    with no_grad():
        x, y, _ = _float_operands("copysign", input, other)
        a = x.abs()
        out = in_iter_order(where(signbit(y), -a, a), input, other)
    record_grad(OPS["copysign"], (input, other), {}, out)
    return out


@composite(variants="function method inplace out", cost=costs.pointwise(3))
def heaviside(input: Tensor, values: Tensor) -> Tensor:
    """The Heaviside step function: 0 where `input` < 0, `values` where it is 0, 1 where
    it is > 0 (not differentiable)."""
    check_tensors("heaviside", input, values, "values")
    if isinstance(values, Tensor) and values.dtype is not input.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different "
                           "dtypes.")
    with no_grad():
        return where(input == 0, values, (input > 0).to(input.dtype))


@composite(variants="function method out", cost=costs.pointwise(6), grad=Grad(
    input=lambda grad, input, result: grad * (input - result).exp2(),
    other=lambda grad, other, result: grad * (other - result).exp2()))
def logaddexp2(input: Tensor, other: Tensor) -> Tensor:
    """`log2(2**input + 2**other)`, computed without overflow or underflow."""
    check_tensors("logaddexp2", input, other)
    _floating_only("logaddexp2", _common("logaddexp2", input, other), input)
    with no_grad():
        larger = maximum_of(input, other)
        out = larger + log1p((-(input - other).abs()).exp2()) / _LN2
        out = where(larger.isinf().logical_and(input == other), larger, out)
    record_grad(OPS["logaddexp2"], (input, other), {}, out)
    return out


def _xlogy_like(op: str, input: Any, other: Any, f: Any) -> Tensor:
    """`input * f(other)`, 0 where input is 0 and other is not NaN."""
    x, y, _ = _float_operands(op, input, other)
    return where((x == 0).logical_and(y.isnan().logical_not()), 0.0, x * f(y))


def _xlogy_grad_input(grad: Tensor, input: Any, other: Any) -> Tensor:
    # PyTorch's rule: grad * log(other), also where input is 0 (a Dirichlet's log_prob
    # differentiated at concentration 1 needs it), but 0 where input is 0 and other <= 0
    x, y, _ = _float_operands("xlogy", input, other)
    return where((x == 0).logical_and(y <= 0), 0.0, xlogy(grad, y))


def _xlog1py_grad_input(grad: Tensor, input: Any, other: Any) -> Tensor:
    # as xlogy's: grad * log1p(other), 0 where input is 0 and other <= -1
    x, y, _ = _float_operands("xlog1py", input, other)
    return where((x == 0).logical_and(y <= -1), 0.0, special_xlog1py(grad, y))


@composite(variants="function method inplace out", cost=costs.pointwise(10), grad=Grad(
    input=_xlogy_grad_input, other=lambda grad, input, other: grad * input / other))
def xlogy(input: Any, other: Any) -> Tensor:
    """`input * log(other)`, and 0 where `input` is 0 (unless `other` is NaN)."""
    with no_grad():
        out = _xlogy_like("xlogy", input, other, log)
    record_grad(OPS["xlogy"], (input, other), {}, out)
    return out


def _fmax_grads(op: str):
    def to_input(grad: Tensor, input: Any, other: Any) -> Tensor:
        wins = (input >= other) if op == "fmax" else (input <= other)
        return grad.where(wins.logical_or(other.isnan()), 0.0)

    def to_other(grad: Tensor, input: Any, other: Any) -> Tensor:
        wins = (input >= other) if op == "fmax" else (input <= other)
        return grad.where(wins.logical_or(other.isnan()).logical_not(), 0.0)
    return Grad(input=to_input, other=to_other)


def _fmax(op: str, input: Tensor, other: Tensor) -> Tensor:
    other = as_operand(other, input)
    if not isinstance(other, Tensor):
        other = _tensor_like(other, input, _common(op, input, other))
    with no_grad():
        m = (maximum_of if op == "fmax" else minimum_of)(input, other)
        out = where(input.isnan(), other, where(other.isnan(), input, m))
        out = to_dtype(out, m.dtype)
    record_grad(OPS[op], (input, other), {}, out)
    return out


@composite(variants="function method out", cost=costs.pointwise(3), grad=_fmax_grads("fmax"))
def fmax(input: Tensor, other: Tensor) -> Tensor:
    """The elementwise maximum, ignoring NaN (NaN only where both are NaN)."""
    check_tensor("fmax", "input", input, 0)
    check_tensor("fmax", "other", other, 1)
    return _fmax("fmax", input, other)


@composite(variants="function method out", cost=costs.pointwise(3), grad=_fmax_grads("fmin"))
def fmin(input: Tensor, other: Tensor) -> Tensor:
    """The elementwise minimum, ignoring NaN (NaN only where both are NaN)."""
    check_tensor("fmin", "input", input, 0)
    check_tensor("fmin", "other", other, 1)
    return _fmax("fmin", input, other)


def _float_power_inplace(self: Tensor, exponent: Any) -> Tensor:
    cplx = self.dtype.is_complex or (exponent.dtype.is_complex if isinstance(
        exponent, Tensor) else isinstance(python_scalar(exponent), complex))
    want = dt.complex128 if cplx else dt.float64
    if self.dtype is not want:
        raise RuntimeError(f"the base given to float_power_ has dtype "
                           f"{dt.SCALAR_TYPE_NAMES[self.dtype.name]} but the operation's "
                           f"result requires dtype {dt.SCALAR_TYPE_NAMES[want.name]}")
    return apply_inplace(self, lambda old: float_power(old, exponent), exponent,
                         op="float_power_")


@composite(variants="function method inplace out", inplace_method=_float_power_inplace,
           cost=costs.pointwise(8), complex=True, exact_out="float_power")
def float_power(input: Any, exponent: Any) -> Tensor:
    """`input ** exponent` computed in double precision (the result is float64)."""
    like = _first(input, exponent, "float_power")
    # double precision: complex128 where either operand is complex, else float64
    cplx = any(x.dtype.is_complex if isinstance(x, Tensor) else
               isinstance(python_scalar(x), complex) for x in (input, exponent))
    d, number = (dt.complex128, complex) if cplx else (dt.float64, float)
    base = _tensor_like(input, like, d) if isinstance(input, Tensor) else \
        number(python_scalar(input))
    power = _tensor_like(exponent, like, d) if isinstance(exponent, Tensor) else \
        number(python_scalar(exponent))
    return pow(base, power)


@composite(variants="function method inplace out", cost=costs.pointwise(9), complex=True,
           grad=Grad(
    # PyTorch's derivatives.yaml: `grad * 2 ** other`, an integer power for an integer
    # `other` (so 2**-1 is 0 there), and `grad * result * log(2)`
    input=lambda grad, other: grad * pow(2, other),
    other=lambda grad, result: grad * result * _LN2))
def ldexp(input: Tensor, other: Tensor) -> Tensor:
    """`input * 2**other`."""
    check_tensors("ldexp", input, other)
    common = _common("ldexp", input, other)
    d = common if common.is_complex else _float_of(common)
    # (a real `other` raises 2 in the real dtype: exact powers of two, complex input or not)
    power_dtype = d if other.dtype.is_complex else d.to_real()
    with no_grad():
        out = to_dtype(input, d) * pow(2.0, _tensor_like(other, input, power_dtype))
    record_grad(OPS["ldexp"], (input, other), {}, out)
    return out


# -- ember.special's own ops -------------------------------------------------------------------


@composite(variants="", cost=costs.pointwise(10), grad=Grad(
    input=_xlog1py_grad_input,
    other=lambda grad, input, other: grad * input / (other + 1.0)))
def special_xlog1py(input: Any, other: Any) -> Tensor:
    """`input * log1p(other)`, and 0 where `input` is 0 (unless `other` is NaN)."""
    with no_grad():
        out = _xlogy_like("xlog1py", input, other, log1p)
    record_grad(OPS["special_xlog1py"], (input, other), {}, out)
    return out


@composite(variants="", cost=costs.pointwise(8),
           grad=Grad(input=lambda grad, input: grad * -(input.log() + 1.0)))
def special_entr(input: Tensor) -> Tensor:
    """The elementwise entropy `-x * log(x)`: 0 at 0, -inf for negative x."""
    with no_grad():
        x = _as_float(input)
        positive = x > 0
        safe = where(positive, x, 1.0)
        # (two Python numbers would make a default-dtype tensor: cast back to x's)
        out = where(positive, -x * log(safe), to_dtype(where(x == 0, 0.0, -_INF), x.dtype))
        out = where(x.isnan(), x, out)
    record_grad(OPS["special_entr"], (input,), {}, out)
    return out


@composite(variants="", cost=costs.pointwise(12))
def special_spherical_bessel_j0(input: Tensor) -> Tensor:
    """The spherical Bessel function of the first kind of order 0: sin(x) / x, 1 at 0
    (not differentiable, as in PyTorch)."""
    with no_grad():
        x = _full_float("spherical_bessel_j0_cpu", _as_float(input))
        zero = x == 0
        safe = where(zero, 1.0, x)
        out = where(zero, 1.0, sin(safe) / safe)
        return where(x.isinf(), 0.0, out)


_SQRT1_2 = math.sqrt(0.5)


@composite(variants="", cost=costs.pointwise(16), node_label="MulBackward1")
def special_ndtr(input: Tensor) -> Tensor:
    """The standard normal distribution function: the area under the Gaussian density
    from -inf to x, as PyTorch computes it: `(1 + erf(x / sqrt(2))) * 0.5` (0 below
    about -8.3 in float64, where erf rounds to -1)."""
    return (erf(_as_float(input) * _SQRT1_2) + 1.0) * 0.5


@composite(variants="", cost=costs.pointwise(32), node_label="SpecialLogNdtrBackward0")
def special_log_ndtr(input: Tensor) -> Tensor:
    """The log of `ndtr`, accurate far into the lower tail (through `erfcx`)."""
    x = _full_float("log_ndtr_cpu", _as_float(input))
    lower = x < -1.0
    t = where(lower, x, -1.0) * -_SQRT1_2  # large positive in the tail
    tail = log(special_erfcx(t) * 0.5) - t * t
    upper = log1p(erfc(where(lower, 1.0, x) * _SQRT1_2) * -0.5)
    return where(lower, tail, upper)



# -- activations PyTorch also has as tensor methods ----------------------------------------------


def shrink_passes(input: Tensor, lambd: float) -> Tensor:
    """Where hardshrink and softshrink pass their gradient: outside `[-lambd, lambd]` (NaN
    included, as ATen's backward kernels)."""
    return (input >= -lambd).logical_and(input <= lambd).logical_not()


@composite(variants="function method", cost=costs.pointwise(3),
           grad=Grad("HardshrinkBackward0", input=lambda grad, input, lambd:
                     activation_backward(grad, input, shrink_passes(input, lambd),
                                         label="HardshrinkBackwardBackward0")))
def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """The hard shrinkage function: `input` where `|input| > lambd`, else 0 (NaN stays),
    as one node."""
    _floating_only("hardshrink", input.dtype, input)
    with no_grad():
        out = where(shrink_passes(input, lambd), input, 0.0)
    record_grad(OPS["hardshrink"], (input,), {"lambd": lambd}, out)
    return out


# (in PyTorch's autocast lists of both devices: the low-precision dtype)
@composite(variants="function method", cost=costs.pointwise(3), precision=P.LOWER,
           cpu_precision=P.LOWER, node_label="PreluKernelBackward0")
def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """The parametric ReLU: `input` where it is > 0, else `weight * input`; `weight` has
    one element, or one per channel (dim 1)."""
    _floating_only("prelu", input.dtype, input)
    if weight.numel() != 1:
        channels = input.shape[1] if input.ndim >= 2 else 1
        if weight.numel() != channels:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found "
                               f"parameter numbers = {weight.numel()} and channel size = "
                               f"{channels}.")
        weight = weight.reshape((1, channels) + (1,) * (input.ndim - 2))
    else:  # one weight for all: a 0-d tensor, so that it broadcasts to any input's shape
        weight = weight.reshape(())
    return where(input > 0, input, input * weight)
