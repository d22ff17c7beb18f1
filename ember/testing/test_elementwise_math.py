"""The elementwise math of ember.core.ops.elementwise_math on the device under test, against
NumPy and SciPy: the hyperbolic and special functions, fmod/hypot/igamma and the
integer ops, the composites (xlogy, fmax, copysign, logit, nan_to_num, frexp ...), the
`ember.special` functions and the in-place comparisons. Each op on ordinary values, 0-d
and empty tensors, NaN and infinities, and integer inputs where it takes them."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import scipy.special as sp

import ember
import ember.special
from ember.testing import support as S

_RNG = np.random.default_rng(16)
_SPECIAL_VALUES = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0])


@dataclass(frozen=True)
class Math1:
    """A unary op: `fn(x)` on ember, `ref(x)` in float64 on NumPy, inputs in [lo, hi]."""

    name: str
    fn: Callable[[Any], Any]
    ref: Callable[[np.ndarray], np.ndarray]
    lo: float = -3.0
    hi: float = 3.0
    method: str | None = None  # the Tensor method, when there is one
    ints: bool = True  # integer inputs give the default float dtype
    half: bool = True  # False: PyTorch's kernel refuses float16 and bfloat16


def _e(name: str) -> Math1:
    return Math1(name, getattr(ember, name), getattr(np, name), method=name)


UNARY = [
    _e("sinh"), _e("cosh"),
    Math1("asinh", ember.asinh, np.arcsinh, method="arcsinh"),
    Math1("acosh", ember.acosh, np.arccosh, lo=1.0, hi=6.0, method="arccosh"),
    Math1("atanh", ember.atanh, np.arctanh, lo=-0.95, hi=0.95, method="arctanh"),
    _e("exp2"), Math1("log10", ember.log10, np.log10, lo=0.05, hi=9.0, method="log10"),
    Math1("erfc", ember.erfc, sp.erfc, method="erfc"),
    Math1("erfinv", ember.erfinv, sp.erfinv, lo=-0.99, hi=0.99, method="erfinv"),
    # (PyTorch's lgamma(-inf) is +inf, SciPy's -inf)
    Math1("lgamma", ember.lgamma, lambda x: np.where(x == -np.inf, np.inf, sp.gammaln(x)),
          lo=0.05, hi=8.0, method="lgamma"),
    Math1("digamma", ember.digamma, sp.psi, lo=0.05, hi=8.0, method="digamma"),
    Math1("i0", ember.i0, sp.i0, method="i0"),
    Math1("special_i0e", ember.special.i0e, sp.i0e),
    Math1("special_i1", ember.special.i1, sp.i1),
    Math1("special_i1e", ember.special.i1e, sp.i1e),
    Math1("special_erfcx", ember.special.erfcx, sp.erfcx, half=False),
    Math1("special_bessel_j0", ember.special.bessel_j0, sp.j0, lo=-8.0, hi=8.0, half=False),
    Math1("special_airy_ai", ember.special.airy_ai, lambda x: sp.airy(x)[0], lo=-8.0, hi=8.0,
          half=False),
    Math1("special_bessel_j1", ember.special.bessel_j1, sp.j1, lo=-8.0, hi=8.0, half=False),
    Math1("special_bessel_y0", ember.special.bessel_y0, sp.y0, lo=0.1, hi=8.0, half=False),
    Math1("special_bessel_y1", ember.special.bessel_y1, sp.y1, lo=0.1, hi=8.0, half=False),
    Math1("special_modified_bessel_i0", ember.special.modified_bessel_i0, sp.i0, half=False),
    Math1("special_modified_bessel_i1", ember.special.modified_bessel_i1, sp.i1, half=False),
    Math1("special_modified_bessel_k0", ember.special.modified_bessel_k0, sp.k0, lo=0.1,
          half=False),
    Math1("special_modified_bessel_k1", ember.special.modified_bessel_k1, sp.k1, lo=0.1,
          half=False),
    Math1("special_scaled_modified_bessel_k0", ember.special.scaled_modified_bessel_k0,
          sp.k0e, lo=0.1, half=False),
    Math1("special_scaled_modified_bessel_k1", ember.special.scaled_modified_bessel_k1,
          sp.k1e, lo=0.1, half=False),
    Math1("special_spherical_bessel_j0", ember.special.spherical_bessel_j0,
          lambda x: sp.spherical_jn(0, x), lo=-8.0, hi=8.0, half=False),
    Math1("special_ndtr", ember.special.ndtr, sp.ndtr),
    Math1("special_ndtri", ember.special.ndtri, sp.ndtri, lo=0.01, hi=0.99, ints=False, half=False),
    Math1("special_log_ndtr", ember.special.log_ndtr, sp.log_ndtr, lo=-30.0, hi=6.0, half=False),
    Math1("special_entr", ember.special.entr, sp.entr, lo=0.0, hi=4.0),
    Math1("deg2rad", ember.deg2rad, np.deg2rad, lo=-360, hi=360, method="deg2rad"),
    Math1("rad2deg", ember.rad2deg, np.rad2deg, method="rad2deg"),
    Math1("sinc", ember.sinc, np.sinc, method="sinc"),
    Math1("frac", ember.frac, lambda x: x - np.trunc(x), method="frac", ints=False),
    Math1("logit", ember.logit, sp.logit, lo=0.02, hi=0.98, method="logit"),
    Math1("mvlgamma", lambda x: ember.mvlgamma(x, 3), lambda x: 1.5 * np.log(np.pi) + sum(
        np.where(x == -np.inf, np.inf, sp.gammaln(x - j / 2)) for j in range(3)), lo=1.2,
        hi=6.0),
]


def _unary_reference(spec: Math1, arr: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.asarray(spec.ref(arr.astype(np.float64)))


@pytest.mark.parametrize("spec", UNARY, ids=lambda s: s.name)
@pytest.mark.parametrize("d", [ember.float32, ember.float64, ember.float16, ember.int64],
                         ids=str)
def test_unary_math(device: ember.device, spec: Math1, d: ember.dtype) -> None:
    if d is ember.int64 and not spec.ints:
        pytest.skip("floating inputs only")
    if d is ember.float16 and not spec.half:
        with pytest.raises(NotImplementedError, match="not implemented for 'Half'"):
            spec.fn(S.on(device, [0.5], d))
        return
    lo, hi = (max(spec.lo, 0), spec.hi) if d is ember.int64 else (spec.lo, spec.hi)
    arr = _RNG.uniform(lo, hi, (3, 4))
    if d is ember.int64:
        arr = np.clip(np.round(arr), max(math.ceil(spec.lo), 0) if spec.lo > 0 else None, None)
    arr = arr.astype(S.np_dtype(d))
    want = d if d.is_floating_point else ember.get_default_dtype()
    x = S.on(device, arr, d)
    out = spec.fn(x)
    S.assert_matches(out, S.reference_cast(_unary_reference(spec, arr), want), device,
                     dtype=want, what=f"{spec.name}({d})")
    if spec.method is not None:
        S.assert_matches(getattr(x, spec.method)(), S.host(out), device, dtype=want,
                         what=f"Tensor.{spec.method}")
    # 0-d and empty tensors keep their shapes
    S.assert_matches(spec.fn(x[1, 2]), S.host(out)[1, 2], device, dtype=want, what="0-d")
    assert tuple(spec.fn(x[:0]).shape) == (0, 4)


@pytest.mark.parametrize("spec", UNARY, ids=lambda s: s.name)
def test_unary_math_nan_and_infinities(device: ember.device, spec: Math1) -> None:
    x = S.on(device, _SPECIAL_VALUES, ember.float64)
    ref = _unary_reference(spec, _SPECIAL_VALUES)
    got = S.host(spec.fn(x))
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-12, equal_nan=True,
                               err_msg=spec.name)


def test_polygamma(device: ember.device) -> None:
    arr = _RNG.uniform(0.2, 5.0, (2, 5))
    x = S.on(device, arr)
    for n in range(4):
        S.assert_matches(ember.polygamma(n, x), sp.polygamma(n, arr), device,
                         dtype=ember.float64, what=f"polygamma({n})")
    S.assert_matches(x.float().polygamma(2), sp.polygamma(2, arr.astype(np.float32)), device,
                     dtype=ember.float32, what="Tensor.polygamma", rtol=1e-4)
    S.assert_matches(ember.polygamma(1, S.on(device, [1, 2])), sp.polygamma(1, [1.0, 2.0]),
                     device, dtype=ember.float32, what="polygamma of integers")
    with pytest.raises(RuntimeError, match="does not support negative n"):
        ember.polygamma(-1, x)


def test_signbit(device: ember.device) -> None:
    for d in (ember.float32, ember.float64, ember.float16):
        x = S.on(device, _SPECIAL_VALUES, d)
        S.assert_matches(ember.signbit(x), np.signbit(_SPECIAL_VALUES.astype(S.np_dtype(d))),
                         device, dtype=ember.bool, what=f"signbit({d})")
    i = S.on(device, [-3, 0, 4])
    S.assert_matches(i.signbit(), [True, False, False], device, dtype=ember.bool)
    S.assert_matches(ember.signbit(S.on(device, [True, False])), [False, False], device)


def test_nan_to_num_isposinf_isneginf(device: ember.device) -> None:
    for d in (ember.float32, ember.float64, ember.float16):
        arr = _SPECIAL_VALUES.astype(S.np_dtype(d))
        x = S.on(device, arr, d)
        S.assert_matches(ember.nan_to_num(x), np.nan_to_num(arr), device, dtype=d,
                         what=f"nan_to_num({d})")
        S.assert_matches(x.nan_to_num(1.5, 2.0, neginf=-3.0),
                         np.nan_to_num(arr, nan=1.5, posinf=2.0, neginf=-3.0), device, dtype=d)
        S.assert_matches(ember.isposinf(x), np.isposinf(arr), device, dtype=ember.bool)
        S.assert_matches(x.isneginf(), np.isneginf(arr), device, dtype=ember.bool)
    i = S.on(device, [1, -2])
    S.assert_matches(ember.nan_to_num(i), [1, -2], device, dtype=ember.int64)
    S.assert_matches(ember.isposinf(i), [False, False], device, dtype=ember.bool)


def test_frexp(device: ember.device) -> None:
    for d in (ember.float32, ember.float64, ember.float16):
        arr = np.array([0.0, 8.0, -3.0, 0.75, 1e-3, -1e4, np.inf, np.nan], S.np_dtype(d))
        if d is ember.float32 and not S.flushes_float32_subnormals(device):
            arr = np.append(arr, np.float32(1e-40))  # a subnormal
        if d is ember.float64:
            arr = np.append(arr, [5e-324, 2.0 ** 1023])
        mantissa, exponent = ember.frexp(S.on(device, arr, d))
        m, e = np.frexp(arr)
        S.assert_matches(mantissa, m, device, dtype=d, what=f"frexp({d}).mantissa")
        S.assert_matches(exponent, np.where(np.isfinite(arr), e, 0), device, dtype=ember.int32,
                         what=f"frexp({d}).exponent")
    with pytest.raises(RuntimeError, match="floating-point"):
        ember.frexp(S.on(device, [1, 2]))


# -- binary -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Math2:
    name: str
    fn: Callable[[Any, Any], Any]
    ref: Callable[[np.ndarray, np.ndarray], np.ndarray]
    a: tuple[float, float] = (-4.0, 4.0)
    b: tuple[float, float] = (-4.0, 4.0)
    ints: str = "float"  # integers give: "float" the default float, "same" their own dtype,
    #                      "no" an error


def _incomplete_gamma(lower: bool) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """SciPy's gammainc/gammaincc with PyTorch's cases first, in its order (they decide
    for a NaN `a` too)."""
    def ref(a: np.ndarray, x: np.ndarray) -> np.ndarray:
        one, zero = (1.0, 0.0) if lower else (0.0, 1.0)
        y = (sp.gammainc if lower else sp.gammaincc)(a, x)
        y = np.where(np.isinf(x), one, y)
        y = np.where(np.isinf(a), np.where(np.isinf(x), np.nan, zero), y)
        y = np.where(x == 0, zero, y)
        y = np.where(a == 0, np.where(x > 0, one, np.nan), y)
        return np.where((x < 0) | (a < 0), np.nan, y)
    return ref


def _b(name: str, ref: Any, **kw: Any) -> Math2:
    return Math2(name, getattr(ember, name), ref, **kw)


BINARY = [
    _b("fmod", np.fmod, b=(0.5, 3.0), ints="same"),
    _b("hypot", np.hypot, ints="no"),
    _b("nextafter", np.nextafter, ints="no"),
    _b("igamma", _incomplete_gamma(True), a=(0.1, 4.0), b=(0.0, 6.0), ints="no"),
    _b("igammac", _incomplete_gamma(False), a=(0.1, 4.0), b=(0.0, 6.0), ints="no"),
    _b("copysign", np.copysign),
    _b("logaddexp2", np.logaddexp2, ints="no"),
    _b("xlogy", sp.xlogy, b=(0.1, 5.0)),
    Math2("special_xlog1py", ember.special.xlog1py, sp.xlog1py, b=(-0.9, 5.0)),
    _b("fmax", np.fmax, ints="same"),
    _b("fmin", np.fmin, ints="same"),
    _b("ldexp", lambda a, b: a * 2.0 ** b, b=(-3, 4)),
    # (PyTorch's zeta(x > 1, inf) is NaN, SciPy's 0)
    Math2("special_zeta", ember.special.zeta, lambda a, b: np.where(
        (b == np.inf) & (a > 1), np.nan, sp.zeta(a, b)), a=(1.5, 5.0), b=(1.0, 4.0)),
]


@pytest.mark.parametrize("spec", BINARY, ids=lambda s: s.name)
@pytest.mark.parametrize("d", [ember.float32, ember.float64, ember.int64], ids=str)
def test_binary_math(device: ember.device, spec: Math2, d: ember.dtype) -> None:
    a = _RNG.uniform(*spec.a, (3, 4))
    b = _RNG.uniform(*spec.b, (4,))
    if spec.name == "ldexp" or d is ember.int64:
        b = np.round(b) + 0.0  # (+ 0.0: an integer has no -0.0)
        if spec.name == "fmod":
            b = np.where(b == 0, 2.0, b)
    if d is ember.int64:
        a = np.round(a) + 0.0
    x, y = S.on(device, a.astype(S.np_dtype(d)), d), S.on(device, b.astype(S.np_dtype(d)), d)
    if spec.name == "ldexp":
        y = S.on(device, b.astype(np.int64))
    if d is ember.int64 and spec.ints == "no":
        with pytest.raises(NotImplementedError, match=spec.name):
            spec.fn(x, y)
        return
    want = d if d.is_floating_point or spec.ints == "same" else ember.get_default_dtype()
    with np.errstate(all="ignore"):
        if want is d and not d.is_floating_point:
            ref = spec.ref(a.astype(np.int64), b.astype(np.int64))
        elif spec.name == "nextafter":
            ref = spec.ref(a.astype(S.np_dtype(d)), b.astype(S.np_dtype(d)))
        else:
            ref = S.reference_cast(spec.ref(a, b), want)
    out = spec.fn(x, y)
    S.assert_matches(out, ref, device, dtype=want, what=f"{spec.name}({d})")
    S.assert_matches(spec.fn(x[0, 0], y[0]), S.host(out)[0, 0], device, dtype=want,
                     what="0-d")
    assert tuple(spec.fn(x[:0], y).shape) == (0, 4)


@pytest.mark.parametrize("spec", BINARY, ids=lambda s: s.name)
def test_binary_math_nan_and_infinities(device: ember.device, spec: Math2) -> None:
    a, b = np.meshgrid(_SPECIAL_VALUES, _SPECIAL_VALUES)
    if spec.name == "ldexp":
        b = np.where(np.isfinite(b), b, 0.0)
    with np.errstate(all="ignore"):
        ref = spec.ref(a, b)
    got = S.host(spec.fn(S.on(device, a), S.on(device, b)))
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-12, equal_nan=True,
                               err_msg=spec.name)


def test_fmod_of_integers_by_zero(device: ember.device) -> None:
    with pytest.raises(ZeroDivisionError, match="fmod"):
        ember.fmod(S.on(device, [1, 2]), S.on(device, [1, 0]))
    S.assert_matches(ember.fmod(S.on(device, [-7, 7, -7]), -3), [-1, 1, -1], device,
                     dtype=ember.int64)


def test_integer_ops(device: ember.device) -> None:
    a = np.array([12, -18, 0, 7, 0], np.int64)
    b = np.array([8, 12, 5, 0, 0], np.int64)
    x, y = S.on(device, a), S.on(device, b)
    S.assert_matches(ember.gcd(x, y), np.gcd(a, b), device, dtype=ember.int64)
    S.assert_matches(x.lcm(y), np.lcm(a, b), device, dtype=ember.int64)
    for d in (ember.int8, ember.int32, ember.int64, ember.uint8):
        v = np.array([1, 3, 100, 5], S.np_dtype(d))
        bits = np.dtype(S.np_dtype(d)).itemsize * 8
        t = S.on(device, v, d)
        S.assert_matches(ember.bitwise_left_shift(t, 2), v << 2, device, dtype=d)
        S.assert_matches(t >> 1, v >> 1, device, dtype=d)
        S.assert_matches(t << bits, np.zeros_like(v), device, dtype=d,
                         what="a shift by the width gives 0")
    neg = S.on(device, [-8, -1, 8])
    S.assert_matches(ember.bitwise_right_shift(neg, 1), [-4, -1, 4], device)
    S.assert_matches(neg >> 64, [-1, -1, 0], device, what="the sign fills in")
    S.assert_matches(1 << S.on(device, [0, 3]), [1, 8], device)
    with pytest.raises(NotImplementedError, match="gcd"):
        ember.gcd(S.on(device, [1.5]), S.on(device, [2.5]))


def test_heaviside(device: ember.device) -> None:
    arr = np.array([-1.5, 0.0, 2.0, np.nan, -0.0])
    x = S.on(device, arr)
    # (NaN is neither 0 nor positive: 0, as PyTorch)
    S.assert_matches(ember.heaviside(x, S.on(device, [0.5], ember.float64)),
                     np.where(np.isnan(arr), 0.0, np.heaviside(arr, 0.5)), device,
                     dtype=ember.float64)
    i = S.on(device, [-2, 0, 3])
    S.assert_matches(i.heaviside(S.on(device, [7])), [0, 7, 1], device, dtype=ember.int64)
    with pytest.raises(RuntimeError, match="different dtypes"):
        ember.heaviside(i, S.on(device, [0.5]))


def test_float_power(device: ember.device) -> None:
    a = _RNG.uniform(0.5, 3.0, (3, 4)).astype(np.float32)
    x = S.on(device, a)
    S.assert_matches(ember.float_power(x, 2), a.astype(np.float64) ** 2, device,
                     dtype=ember.float64)
    S.assert_matches(ember.float_power(2, S.on(device, [1, 3])), [2.0, 8.0], device,
                     dtype=ember.float64)
    with pytest.raises(RuntimeError, match="float_power_"):
        x.float_power_(2)
    d = x.double()
    d.float_power_(0.5)
    S.assert_matches(d, np.sqrt(a.astype(np.float64)), device, dtype=ember.float64)


def test_sgn_and_logit_eps(device: ember.device) -> None:
    S.assert_matches(ember.sgn(S.on(device, [-2.0, 0.0, 3.0])), [-1.0, 0.0, 1.0], device)
    S.assert_matches(S.on(device, [-2, 0, 3]).sgn(), [-1, 0, 1], device, dtype=ember.int64)
    p = S.on(device, [0.0, 0.5, 1.0, 0.05])
    eps = 0.1
    S.assert_matches(ember.logit(p, eps), sp.logit(np.clip([0.0, 0.5, 1.0, 0.05], eps,
                                                             1 - eps)), device)
    S.assert_matches(ember.logit(p), [-np.inf, 0.0, np.inf, sp.logit(0.05)], device)


def test_in_place_comparisons(device: ember.device) -> None:
    arr = np.array([1.0, 2.0, 3.0])
    for name, ref in (("eq", np.equal), ("ne", np.not_equal), ("lt", np.less),
                      ("le", np.less_equal), ("gt", np.greater), ("ge", np.greater_equal),
                      ("greater", np.greater), ("greater_equal", np.greater_equal),
                      ("less", np.less), ("less_equal", np.less_equal),
                      ("not_equal", np.not_equal)):
        x = S.on(device, arr)
        out = getattr(x, name + "_")(2.0)
        assert out is x
        S.assert_matches(x, ref(arr, 2.0).astype(np.float64), device, dtype=ember.float64,
                         what=f"{name}_")
    i = S.on(device, [1, 5, 3])
    i.gt_(S.on(device, [0, 9, 3]))
    S.assert_matches(i, [1, 0, 0], device, dtype=ember.int64)


def test_hardshrink_and_prelu(device: ember.device) -> None:
    arr = np.array([-2.0, -0.5, -0.2, 0.0, 0.3, 0.5, 1.5, np.nan])
    x = S.on(device, arr)
    S.assert_matches(x.hardshrink(), np.where(np.abs(arr) <= 0.5, 0.0, arr), device,
                     dtype=ember.float64)
    S.assert_matches(ember.hardshrink(x, 0.25), np.where(np.abs(arr) <= 0.25, 0.0, arr),
                     device)
    img = _RNG.uniform(-2, 2, (2, 3, 4))
    w = np.array([0.1, 0.2, 0.3])
    S.assert_matches(S.on(device, img).prelu(S.on(device, w)),
                     np.where(img > 0, img, img * w[None, :, None]), device)
    S.assert_matches(ember.prelu(S.on(device, arr[:7]), S.on(device, [0.25])),
                     np.where(arr[:7] > 0, arr[:7], 0.25 * arr[:7]), device)
    S.assert_matches(ember.prelu(S.on(device, np.array(-2.0)), S.on(device, [0.5])),
                     np.array(-1.0), device, what="a 0-d input keeps its shape")
    with pytest.raises(RuntimeError, match="Mismatch of parameter numbers and input channel "
                                           "size. Found parameter numbers = 4 and channel "
                                           "size = 3."):
        ember.prelu(S.on(device, img), S.on(device, np.ones(4)))
    with pytest.raises(NotImplementedError, match="hardshrink"):
        ember.hardshrink(S.on(device, [1, 2]))


_POLYNOMIALS = {  # name -> (first, step(m, x, P_{m-2}, P_{m-1})) of the float64 reference
    "chebyshev_polynomial_t": (lambda x: x, lambda m, x, p, q: 2 * x * q - p),
    "chebyshev_polynomial_u": (lambda x: 2 * x, lambda m, x, p, q: 2 * x * q - p),
    "chebyshev_polynomial_v": (lambda x: 2 * x - 1, lambda m, x, p, q: 2 * x * q - p),
    "chebyshev_polynomial_w": (lambda x: 2 * x + 1, lambda m, x, p, q: 2 * x * q - p),
    "shifted_chebyshev_polynomial_t": (lambda x: 2 * x - 1,
                                       lambda m, x, p, q: 2 * (2 * x - 1) * q - p),
    "shifted_chebyshev_polynomial_u": (lambda x: 2 * (2 * x - 1),
                                       lambda m, x, p, q: 2 * (2 * x - 1) * q - p),
    "shifted_chebyshev_polynomial_v": (lambda x: 2 * (2 * x - 1) - 1,
                                       lambda m, x, p, q: 2 * (2 * x - 1) * q - p),
    "shifted_chebyshev_polynomial_w": (lambda x: 2 * (2 * x - 1) + 1,
                                       lambda m, x, p, q: 2 * (2 * x - 1) * q - p),
    "hermite_polynomial_h": (lambda x: 2 * x, lambda m, x, p, q: 2 * x * q - 2 * (m - 1) * p),
    "hermite_polynomial_he": (lambda x: x, lambda m, x, p, q: x * q - (m - 1) * p),
    "laguerre_polynomial_l": (lambda x: 1 - x,
                              lambda m, x, p, q: ((2 * m - 1 - x) * q - (m - 1) * p) / m),
    "legendre_polynomial_p": (lambda x: x,
                              lambda m, x, p, q: ((2 * m - 1) * x * q - (m - 1) * p) / m),
}


def _polynomial(name: str, x: np.ndarray, n: int) -> np.ndarray:
    first, step = _POLYNOMIALS[name]
    if n < 0:
        return np.zeros_like(x)
    p, q = np.ones_like(x), first(x)
    if n == 0:
        return p
    for m in range(2, n + 1):
        p, q = q, step(m, x, p, q)
    return q


@pytest.mark.parametrize("name", sorted(_POLYNOMIALS))
def test_orthogonal_polynomials(device: ember.device, name: str) -> None:
    # the closed forms PyTorch switches to (the interval's ends, degrees above 4 to 8
    # inside it) agree with the recurrence up to rounding
    fn = getattr(ember.special, name)
    arr = np.array([-1.5, -1.0, -0.6, 0.0, 0.3, 0.5, 0.9, 1.0, 1.25])
    x = S.on(device, arr)
    for n in (-2, 0, 1, 2, 5, 9, 12):
        S.assert_matches(fn(x, n), _polynomial(name, arr, n), device, dtype=ember.float64,
                         rtol=1e-9, atol=1e-9, what=f"{name}(x, {n})")
    degrees = S.on(device, np.array([0.0, 1.0, 3.7, 10.0]))
    S.assert_matches(fn(0.5, degrees),
                     [_polynomial(name, np.array(0.5), k) for k in (0, 1, 3, 10)], device,
                     rtol=1e-9, atol=1e-9, what=f"{name}(0.5, n)")
    assert fn(S.on(device, np.array([1, 2])), 2).dtype is ember.get_default_dtype()


# -- what this module checks (ember.testing.test_coverage reads it) ---------------------

COVERS = (
    {u.name for u in UNARY} | {b.name for b in BINARY} |
    {"polygamma", "signbit", "nan_to_num", "isposinf", "isneginf", "frexp", "gcd", "lcm",
     "bitwise_left_shift", "bitwise_right_shift", "heaviside", "float_power", "sgn",
     "logit", "fmod", "hardshrink", "prelu"} |
    {f"special_{name}" for name in _POLYNOMIALS}
)
"""The declared ops whose values this module's tests check."""
