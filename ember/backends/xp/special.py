"""Special functions (lgamma, digamma, polygamma, erfinv, erfc, erfcx, the modified Bessel
functions i0/i1 and their scaled forms, the regularized incomplete gamma functions, the
Bessel functions j0/j1) through the array module's SciPy: `scipy.special` for NumPy,
`cupyx.scipy.special` for CuPy (the `special` hook, imported on the first call).

SciPy's ufuncs have float32 and float64 loops: half-precision inputs are computed in
float32 and the result cast back, as PyTorch's CPU kernels do.
"""

from __future__ import annotations

import math
from typing import Any

from ember.backends.xp.lib import OVERLAP, ArrayLib, Kernel
from ember.core.backend import float32

# op name -> the scipy.special function that computes it
_UNARY = {
    "erfc": "erfc", "erfinv": "erfinv", "lgamma": "gammaln", "digamma": "psi", "i0": "i0",
    "special_i0e": "i0e", "special_i1": "i1", "special_i1e": "i1e",
    "special_erfcx": "erfcx", "special_bessel_j0": "j0", "special_bessel_j1": "j1",
    "special_ndtri": "ndtri", "special_bessel_y0": "y0", "special_bessel_y1": "y1",
    "special_modified_bessel_i0": "i0", "special_modified_bessel_i1": "i1",
    "special_modified_bessel_k0": "k0", "special_modified_bessel_k1": "k1",
    "special_scaled_modified_bessel_k0": "k0e", "special_scaled_modified_bessel_k1": "k1e",
    "special_airy_ai": "airy",
}
_BINARY = {"igamma": "gammainc", "igammac": "gammaincc"}  # (and zeta)

# SciPy's values at +inf and -inf, which PyTorch's kernels give too; cupyx.scipy.special's
# Cephes ports return finite limits there instead (i0(inf) inf, j0(inf) 0, k0e(inf) NaN:
# seen on an H200, CuPy 14.2)
_AT_INFINITY = {
    "i0": (float("nan"), float("nan")), "i1": (float("nan"), float("nan")),
    "i0e": (0.0, 0.0), "i1e": (0.0, -0.0),
    "j0": (float("nan"), float("nan")), "j1": (float("nan"), float("nan")),
    "y0": (float("nan"), float("nan")), "y1": (float("nan"), float("nan")),
    "k0": (0.0, float("nan")), "k1": (0.0, float("nan")),
    "k0e": (0.0, float("nan")), "k1e": (0.0, float("nan")),
}

# the SciPy functions PyTorch computes as exp(|x|) times a series (Cephes'), and the
# least float32 whose exp overflows
_EXP_OVERFLOWS = {"i0", "i1"}
_FLOAT32_EXP_OVERFLOW = 88.72283935546875


def kernels(lib: ArrayLib) -> dict[str, Kernel]:
    load = lib.hooks.special
    if load is None:  # this array module has no SciPy: the CPU's kernels run them
        return {}
    xp, as_array, quiet, read_only = lib.xp, lib.as_array, lib.quiet, lib.read_only
    native = lib.gemm_dtypes  # float32 and float64: SciPy's own loops
    work_dtype = lib.dtypes[float32]

    def computed(x: Any) -> Any:
        return x if x.dtype in native else x.astype(work_dtype)

    def finish(y: Any, like: Any, out: Any) -> Any:
        y = as_array(y).astype(like.dtype, copy=False)
        if out is None:
            return y
        if read_only(out):
            raise RuntimeError(OVERLAP)
        xp.copyto(out, y)
        return out

    def unary(name: str) -> Kernel:
        at_inf = _AT_INFINITY.get(name)

        def kernel(x: Any, out: Any = None) -> Any:
            with quiet():
                wide = computed(x)
                y = getattr(load(), name)(wide)
                if name in _EXP_OVERFLOWS and wide.dtype != xp.float64:
                    y = exp_overflow(wide, y, name == "i1")
                if name == "airy":  # (Ai, Ai', Bi, Bi'): Ai
                    y = y[0]
                if name == "gammaln":  # PyTorch's lgamma(-inf) is +inf (SciPy's, -inf)
                    y = xp.where(x == -xp.inf, xp.inf, y)
                    if y.dtype == xp.float64:
                        # SciPy's gammaln is inf at a float64 subnormal; lgamma there is
                        # -log|x| to the last bit (the next term, -0.577 x, is below an ulp)
                        tiny = (x != 0) & (xp.abs(x) < 2.2250738585072014e-308)
                        y = xp.where(tiny, -xp.log(xp.abs(xp.where(tiny, x, 1.0))), y)
                elif at_inf is not None:
                    y = xp.where(x == xp.inf, at_inf[0], xp.where(x == -xp.inf, at_inf[1], y))
                return finish(y, x, out)
        return kernel

    def exp_overflow(x: Any, y: Any, odd: bool) -> Any:
        """PyTorch's float32 i0 and i1 (half precision's too, computed in float32):
        exp(|x|) times a series, so infinite where float32's exp overflows; SciPy's
        float32 loops compute in float64 and stay finite there."""
        big = xp.abs(x) >= _FLOAT32_EXP_OVERFLOW
        return xp.where(big, xp.copysign(xp.inf, x) if odd else xp.inf, y)

    def incomplete_gamma(name: str) -> Kernel:
        lower = name == "gammainc"

        def kernel(a: Any, x: Any, out: Any = None) -> Any:
            like = a if hasattr(a, "dtype") else x
            a = computed(a) if hasattr(a, "dtype") else xp.asarray(a, like.dtype)
            x = computed(x) if hasattr(x, "dtype") else xp.asarray(x, like.dtype)
            with quiet():
                y = getattr(load(), name)(a, x)
                # PyTorch's cases, in its order (they decide for a NaN `a` too)
                one, zero, nan = (1.0, 0.0, xp.nan) if lower else (0.0, 1.0, xp.nan)
                y = xp.where(xp.isinf(x), one, y)
                y = xp.where(xp.isinf(a), xp.where(xp.isinf(x), nan, zero), y)
                y = xp.where(x == 0, zero, y)
                y = xp.where(a == 0, xp.where(x > 0, one, nan), y)
                y = xp.where((x < 0) | (a < 0), nan, y)
                return finish(y, like, out)
        return kernel

    def zeta(x: Any, q: Any, out: Any = None) -> Any:
        like = x if hasattr(x, "dtype") else q
        x = computed(x) if hasattr(x, "dtype") else x
        q = computed(q) if hasattr(q, "dtype") else q
        with quiet():
            y = load().zeta(x, q)
            # PyTorch's zeta(x > 1, inf) is NaN (SciPy's, 0)
            return finish(xp.where((q == xp.inf) & (x > 1), xp.nan, y), like, out)

    def polygamma(x: Any, n: int) -> Any:
        with quiet():  # n as an array: cupyx's polygamma compares it elementwise
            y = load().polygamma(xp.asarray(n), computed(x))
            if n == 1:
                y = trigamma_poles(x, y)
            return finish(y, x, None)

    def trigamma_poles(x: Any, y: Any) -> Any:
        """ATen's trigamma at the poles 0, -1, -2 ...: its reflection `pi**2 / sin(pi x)**2
        - trigamma(1 - x)` in the input's precision, where `sin(pi x)` is not quite 0
        (so a huge finite number, but at 0)."""
        poles = (x <= 0) & (x == xp.floor(x)) & xp.isfinite(x)
        if not poles.any():
            return y
        d = x.dtype if x.dtype in native else work_dtype
        at = xp.where(poles, x, 0.5).astype(d)  # (0.5: no division by zero elsewhere)
        pi = xp.asarray(math.pi, d)
        s = xp.sin(pi * at)
        reflected = (pi * pi) / (s * s) - load().polygamma(xp.asarray(1), 1 - at).astype(d)
        return xp.where(poles, reflected, y)

    table: dict[str, Kernel] = {op: unary(name) for op, name in _UNARY.items()}
    table.update({op: incomplete_gamma(name) for op, name in _BINARY.items()})
    table["polygamma"] = polygamma
    table["special_zeta"] = zeta
    return table
