"""PyTorch's CPU random transforms compiled by numba: the arithmetic of the NumPy
reference in ember/core/cpu_random.py, element by element, so the same uniforms give the
same bits.

Imports numba, so only ``compiled.py`` imports this module, on the first call that wants
it. The reference spends ~60 NumPy passes on each float32 normal (avx_mathfun's `log`
and `sincos` are a dozen fused multiply-adds each, and NumPy has no fused multiply-add,
so each is emulated in float64 with a halfway check); here each is one instruction.

- ``normal_fill16``: `normal_fill_16` (Box-Muller over blocks of 16 uniforms), float32
  as PyTorch's AVX2 kernel computes it (avx_mathfun's Cephes `log` and `sincos`, with
  the fused multiply-adds GCC contracts), float64 with libm's `log`/`cos`/`sin` (the
  C library's, which numba calls, as Python's `math` and PyTorch's scalar code do).
- ``randperm_swaps``/``randperm_inside_out``: the two Fisher-Yates shuffles, whose
  swaps depend on the ones before (a Python loop in the reference).

Nothing here is ``fastmath``: every rounding stays where PyTorch's code has it, and the
only fused multiply-adds are the explicit ``_fma`` calls.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload

from ember.backends.cpu.numba_kernels import _bits_of_float32, _float32_from_bits


def _jit(f: Callable) -> Any:
    """numba.njit, no fastmath, cached on disk where a cache folder is writable."""
    try:
        return numba.njit(cache=True, error_model="numpy")(f)
    except RuntimeError:  # numba: "cannot cache function ...: no locator available"
        return numba.njit(cache=False, error_model="numpy")(f)


@intrinsic
def _fma(typingctx, a, b, c):
    """`a * b + c` with one rounding (LLVM's `llvm.fma`: the CPU's instruction, or libm's
    exact `fma`), for three float32 or three float64 values."""
    if not (a == b == c and a in (types.float32, types.float64)):
        return None

    def codegen(context, builder, signature, args):
        kind = ir.FloatType() if signature.return_type == types.float32 else ir.DoubleType()
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(kind, [kind] * 3),
            "llvm.fma.f32" if kind == ir.FloatType() else "llvm.fma.f64")
        return builder.call(fn, args)
    return a(a, b, c), codegen


F = np.float32
_ZERO, _ONE, _HALF = F(0.0), F(1.0), F(0.5)
_MIN_NORMAL = F(2.0 ** -126)
_SQRT_HALF = F(0.707106781186547524)
_LOG_POLY = tuple(F(c) for c in (-1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1,
                                 1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1,
                                 -2.4999993993e-1, 3.3333331174e-1))
_LOG_P0 = F(7.0376836292e-2)
_LN2_HI, _LN2_LO = F(0.693359375), F(-2.12194440e-4)
_FOUR_OVER_PI = F(1.27323954473516)
_DP1, _DP2, _DP3 = F(-0.78515625), F(-2.4187564849853515625e-4), F(-3.77489497744594108e-8)
_COS0, _COS1, _COS2 = F(2.443315711809948e-5), F(-1.388731625493765e-3), \
    F(4.166664568298827e-2)
_SIN0, _SIN1, _SIN2 = F(-1.9515295891e-4), F(8.3321608736e-3), F(-1.6666654611e-1)
_MINUS_TWO = F(-2.0)
_TWO_PI32 = F(2.0 * math.pi)


@numba.njit(inline="always")
def _simd_log(x):
    """avx_mathfun's `log256_ps` on one float32 x > 0 (cpu_random._simd_log). Written
    without branches or loops, so LLVM vectorises the loop that calls it."""
    bits = _bits_of_float32(max(x, _MIN_NORMAL))
    m = _float32_from_bits((bits & 0x807FFFFF) | 0x3F000000)  # in [0.5, 1)
    small = m < _SQRT_HALF
    e = F((bits >> 23) - 126) - (_ONE if small else _ZERO)
    m = (m - _ONE) + (m if small else _ZERO)
    z = m * m
    y = _fma(_LOG_P0, m, _LOG_POLY[0])
    y = _fma(y, m, _LOG_POLY[1])
    y = _fma(y, m, _LOG_POLY[2])
    y = _fma(y, m, _LOG_POLY[3])
    y = _fma(y, m, _LOG_POLY[4])
    y = _fma(y, m, _LOG_POLY[5])
    y = _fma(y, m, _LOG_POLY[6])
    y = _fma(y, m, _LOG_POLY[7])
    y = _fma(y * m, z, e * _LN2_LO)
    y = _fma(-z, _HALF, y)
    return _fma(e, _LN2_HI, m + y)


@numba.njit(inline="always")
def _simd_sincos(x):
    """avx_mathfun's `sincos256_ps` on one float32 x >= 0 (cpu_random._simd_sincos),
    without branches."""
    j = np.int32(x * _FOUR_OVER_PI)
    j = (j + 1) & ~1
    y = F(j)
    x = _fma(y, _DP1, x)
    x = _fma(y, _DP2, x)
    x = _fma(y, _DP3, x)
    z = x * x
    c = _fma(_COS0, z, _COS1)
    c = _fma(c, z, _COS2)
    c = _fma(c * z, z, -(z * _HALF)) + _ONE
    s = _fma(_SIN0, z, _SIN1)
    s = _fma(s, z, _SIN2)
    s = _fma(s * z, x, x)
    sine_poly = (j & 2) == 0
    sin = s if sine_poly else c
    cos = c if sine_poly else s
    sin = -sin if (j & 4) != 0 else sin
    cos = -cos if ((~(j - 2)) & 4) != 0 else cos
    return sin, cos


def _radius_angle(u1, u2):
    """Box-Muller's radius sqrt(-2 log u1) and angle 2 pi u2, in u1's float type (the
    overload below: avx_mathfun's float32 log, or libm's in float64)."""
    raise NotImplementedError


def _cos_sin(theta):
    """(cos, sin) of theta in its float type (avx_mathfun's sincos, or libm's)."""
    raise NotImplementedError


@overload(_radius_angle)
def _radius_angle_by_dtype(u1, u2):
    if u1 == types.float32:
        return lambda u1, u2: (np.sqrt(_MINUS_TWO * _simd_log(u1)), _TWO_PI32 * u2)
    two_pi = 2.0 * math.pi
    return lambda u1, u2: (math.sqrt(-2.0 * math.log(u1)), two_pi * u2)


@overload(_cos_sin)
def _cos_sin_by_dtype(theta):
    if theta == types.float32:
        def float32(theta):
            sin, cos = _simd_sincos(theta)
            return cos, sin
        return float32
    return lambda theta: (math.cos(theta), math.sin(theta))


_CHUNK = 512  # pairs transformed at a time (their four buffers stay in L1)


@_jit
def normal_fill16(u, mean, std, scaled, out):
    """`normal_fill_16` on each block of 16 uniforms of `u` (float32 or float64): u1 = 1 -
    its first 8, u2 = its last 8; `r cos` into the first 8 of `out`'s block, `r sin` into
    the last 8, `* std + mean` fused where `scaled`. Pairs are gathered a chunk at a time
    into flat buffers, so the transform is one flat loop without branches, which LLVM
    vectorises as PyTorch's AVX2 loop is (float64 calls libm, element by element)."""
    one = u.dtype.type(1)
    u1, u2 = np.empty(_CHUNK, u.dtype), np.empty(_CHUNK, u.dtype)
    first, second = np.empty(_CHUNK, u.dtype), np.empty(_CHUNK, u.dtype)
    pairs = u.size // 2
    for start in range(0, pairs, _CHUNK):
        count = min(_CHUNK, pairs - start)
        for k in range(count):
            at = ((start + k) >> 3) * 16 + ((start + k) & 7)
            u1[k], u2[k] = one - u[at], u[at + 8]
        for k in range(count):
            radius, theta = _radius_angle(u1[k], u2[k])
            cos, sin = _cos_sin(theta)
            a, b = radius * cos, radius * sin
            first[k] = _fma(a, std, mean) if scaled else a
            second[k] = _fma(b, std, mean) if scaled else b
        for k in range(count):
            at = ((start + k) >> 3) * 16 + ((start + k) & 7)
            out[at], out[at + 8] = first[k], second[k]


@_jit
def randperm_swaps(offsets, perm):
    """The forward shuffle: swap i with i + offsets[i], in order."""
    for i in range(offsets.size):
        j = i + offsets[i]
        perm[i], perm[j] = perm[j], perm[i]


@_jit
def randperm_inside_out(picks, perm):
    """The inside-out shuffle: perm[i] = perm[picks[i]], then perm[picks[i]] = i."""
    for i in range(picks.size):
        z = picks[i]
        perm[i] = perm[z]
        perm[z] = i
