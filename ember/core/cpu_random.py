"""PyTorch's CPU random streams, on NumPy: each function draws from an `MT19937` engine
exactly the words PyTorch's CPU kernel draws, and transforms them with PyTorch's
arithmetic (ATen's DistributionsHelper.h, TransformationHelper.h and the CPU
DistributionTemplates.h), so the same seed gives the same numbers.

Every function returns a flat array of `n` values in the order PyTorch's kernel writes
them (the tensor's memory order); the caller shapes it.

Exactness: integers, uniforms, Bernoulli draws and permutations are exact in every
dtype. Float64 transforms use the C library's `log`/`sin`/`cos`/`tan`/`exp` through
Python's `math` (the functions PyTorch's scalar kernels call; NumPy's own SIMD code, on
AVX-512 machines, differs in the last bit for a few percent of inputs), element by
element, or through NumPy's loops where those call the C library's (`_UFUNCS`). Float32
normals of 16 or more contiguous elements come from PyTorch's AVX2 kernel, whose SIMD
`log`/`sin`/`cos` are not the C library's: here they are computed in float64 and
rounded, within 1-2 ulp of PyTorch's. PyTorch contracts `x * (to - from) + from` into a
fused multiply-add on AVX2 builds; `_fma` reproduces its single rounding.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ember.core import plugins
from ember.core.mt19937 import MT19937

_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
_COMPILED_MIN = 1024  # values from which a backend's compiled transform is asked for
_MASK24, _MASK53 = np.uint32((1 << 24) - 1), np.uint64((1 << 53) - 1)


def _digits(dtype: np.dtype) -> int:
    """Mantissa digits of a floating dtype (`std::numeric_limits<T>::digits`)."""
    return {"float64": 53, "float32": 24, "float16": 11, "bfloat16": 8}[dtype.name]


def _cast(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """A double result in `dtype` as C++ casts it: float16 and bfloat16 through float."""
    if dtype.kind == "f" and dtype.itemsize < 4 or dtype.name == "bfloat16":
        x = x.astype(_F32)
    return x.astype(dtype)


def _own_simd() -> bool:
    """Whether NumPy's float64 log/exp/trigonometric loops may be its own SIMD code (its
    AVX512F log and exp, AVX512_SKX's SVML) rather than calls of the C library's."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as features
    except ImportError:  # (NumPy 1)
        try:
            from numpy.core._multiarray_umath import __cpu_features__ as features
        except ImportError:
            return True
    return bool(features.get("AVX512F", True))


# the NumPy loops that call the C library's functions where NumPy has no SIMD code of its
# own for float64 (as on AVX2 machines): one call for a whole array, the same values
_UFUNCS = {} if _own_simd() else {math.log1p: np.log1p, math.log: np.log, math.sin: np.sin,
                                  math.cos: np.cos, math.tan: np.tan, math.exp: np.exp}


def _libm(fn, x: np.ndarray) -> np.ndarray:
    """`fn` (a `math` function: the C library's, as PyTorch's scalar kernels call it)
    applied to each element of a float64 array."""
    ufunc = _UFUNCS.get(fn)
    if ufunc is not None:
        return ufunc(np.asarray(x, _F64))
    return np.fromiter(map(fn, x.tolist()), dtype=_F64, count=x.size)


def _compiled(kernel: str) -> Any:
    """The CPU backend's compiled version of a transform below (its kernel `kernel`,
    declared in ember.core.ops), or None. Such a kernel returns None where it does not
    run (too small to be worth loading its compiler, say), and the NumPy code here runs."""
    return plugins.get_backend("cpu").kernels.get(kernel)


# -- fused multiply-add, as AVX2 code contracts `a * b + c` --------------------------------

def _scale(x: np.ndarray, std: float, mean: float, dtype: np.dtype) -> np.ndarray:
    """`x * std + mean` fused, as PyTorch's kernels compute it (x itself for N(0, 1))."""
    return x if std == 1 and mean == 0 else _fma(x, std, mean, dtype)


def _fma(a: np.ndarray, b: np.ndarray | float, c: np.ndarray | float,
         dtype: np.dtype) -> np.ndarray:
    """`a * b + c` with one rounding, in `dtype` (float32 or float64)."""
    if dtype == _F32:
        return _fma32(a, b, c)
    # float64: Dekker's exact product, then the sum of its two parts and c
    a = np.asarray(a, _F64)
    b = np.float64(b) if np.isscalar(b) else np.asarray(b, _F64)
    p = a * b
    split = 134217729.0  # 2**27 + 1
    ah = a * split - (a * split - a)
    al = a - ah
    bh = b * split - (b * split - b)
    bl = b - bh
    p_err = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    s = p + c
    s_err = (p - (s - (s - p))) + (c - (s - p))
    return s + (p_err + s_err)


_HALF_ULP32 = np.uint64(1 << 28)  # a float64 halfway between two float32s: these low bits
_LOW29 = np.uint64((1 << 29) - 1)


def _fma32(a: Any, b: Any, c: Any) -> np.ndarray:
    """float32 `a * b + c` with one rounding. The product of two float32s is exact in
    float64; the sum rounds a second time only where it lands exactly halfway between two
    float32s, and there its own rounding error says which way the exact value lies.
    (Float32 subnormal results, which round at another bit, are not corrected.)"""
    a32 = np.asarray(a, _F32)
    b64 = np.float64(np.float32(b)) if np.isscalar(b) else np.asarray(b, _F32).astype(_F64)
    c64 = np.float64(np.float32(c)) if np.isscalar(c) else np.asarray(c, _F32).astype(_F64)
    s = a32.astype(_F64)
    s *= b64
    s += c64
    out = s.astype(_F32)
    halfway = (s.view(np.uint64) & _LOW29) == _HALF_ULP32
    if halfway.any():
        idx = np.nonzero(halfway)
        p = a32[idx].astype(_F64) * (b64 if np.isscalar(b64) else b64[idx])
        cc = c64 if np.isscalar(c64) else c64[idx]
        sf, of = s[idx], out[idx]
        err = (p - (sf - (sf - p))) + (cc - (sf - p))  # TwoSum: sf + err == p + c
        up = np.where(of.astype(_F64) > sf, of, np.nextafter(of, np.float32(np.inf)))
        down = np.where(of.astype(_F64) < sf, of, np.nextafter(of, np.float32(-np.inf)))
        out[idx] = np.where(err > 0, up, np.where(err < 0, down, of))
    return out


# -- uniform ------------------------------------------------------------------------

def unit(eng: MT19937, n: int, dtype: np.dtype) -> np.ndarray:
    """`uniform_real_distribution(0, 1)` drawn `n` times: float64 from `random64()`'s low
    53 bits; every other dtype from `random()`'s low 24 bits, as float32 (PyTorch draws
    float16 and bfloat16 as float and rounds the result)."""
    if dtype == _F64:
        return (eng.words64(n) & _MASK53).astype(_F64) * 2.0 ** -53
    return (eng.words(n) & _MASK24).astype(_F32) * np.float32(2.0 ** -24)


def uniform(eng: MT19937, n: int, dtype: np.dtype, low: float = 0.0,
            high: float = 1.0) -> np.ndarray:
    """`uniform_(low, high)`: `x * (to - from) + from` with `from` and `to` in the dtype."""
    x = unit(eng, n, dtype)
    if low == 0.0 and high == 1.0 and dtype in (_F32, _F64):
        return x
    if dtype == _F64:
        return _fma(x, high - low, low, _F64)
    if dtype == _F32:
        lo, hi = np.float32(low), np.float32(high)
        return _fma32(x, hi - lo, lo)
    # float16/bfloat16: computed in float; a value that rounds to `high` in the dtype
    # becomes `low` (PyTorch keeps the range half-open)
    lo, hi = np.float32(low), np.float32(high)
    out = _fma32(x, hi - lo, lo).astype(dtype)
    out[out == dtype.type(high)] = dtype.type(low)
    return out


# -- normal -------------------------------------------------------------------------

def normal(eng: MT19937, n: int, dtype: np.dtype, mean: float = 0.0, std: float = 1.0,
           contiguous: bool = True) -> np.ndarray:
    """`normal_(mean, std)`: for 16 or more contiguous elements PyTorch's `normal_fill`
    (uniforms for every element, Box-Muller over blocks of 16, the last 16 drawn again and
    recomputed when 16 does not divide `n`); else one `normal_distribution<double>` draw
    per element. float16 and bfloat16 draw uniforms for the whole blocks only (then the
    redrawn last 16) and compute in float32, rounding at the end."""
    if n >= 16 and contiguous:
        full = n - n % 16
        data = unit(eng, n if dtype in (_F32, _F64) else full, dtype)
        tail = unit(eng, 16, dtype) if n % 16 else None
        out = np.empty(n, dtype)
        out[:full] = _box_muller_16(data[:full], dtype, mean, std)
        if tail is not None:
            out[n - 16:] = _box_muller_16(tail, dtype, mean, std)
        return out
    return _cast(normal_double(eng, n, mean, std), dtype)


def _box_muller_16(u: np.ndarray, dtype: np.dtype, mean: float, std: float) -> np.ndarray:
    """`normal_fill_16` on each block of 16 uniforms: u1 = 1 - first 8, u2 = last 8."""
    if u.size >= _COMPILED_MIN and (fill := _compiled("pytorch_normal_fill16")) is not None:
        if dtype not in (_F32, _F64):
            mean, std = float(dtype.type(mean)), float(dtype.type(std))
        out = fill(np.ascontiguousarray(u, _F64 if dtype == _F64 else _F32), mean, std)
        if out is not None:
            return out.astype(dtype, copy=False)
    blocks = u.reshape(-1, 2, 8)
    u1, u2 = 1 - blocks[:, 0], blocks[:, 1]
    if dtype == _F64:
        radius = np.sqrt(-2 * _libm(math.log, u1.ravel()))
        theta = (2.0 * math.pi) * u2.ravel()
        cos = radius * _libm(math.cos, theta)
        sin = radius * _libm(math.sin, theta)
        first, second = _scale(cos, std, mean, _F64), _scale(sin, std, mean, _F64)
    else:
        # float32: PyTorch's AVX2 kernel, its SIMD log and sincos step for step (float16
        # and bfloat16 the same on float32, with mean and std in their dtype)
        if dtype != _F32:
            mean, std = float(dtype.type(mean)), float(dtype.type(std))
        radius = np.sqrt(np.float32(-2) * _simd_log(u1.ravel().astype(_F32)))
        sin, cos = _simd_sincos(np.float32(2.0 * math.pi) * u2.ravel().astype(_F32))
        first = _scale(radius * cos, std, mean, _F32)
        second = _scale(radius * sin, std, mean, _F32)
    out = np.empty_like(blocks, dtype=dtype)
    out[:, 0] = first.reshape(-1, 8)
    out[:, 1] = second.reshape(-1, 8)
    return out.reshape(-1)


# PyTorch's AVX2 `normal_fill` takes log, sin and cos from avx_mathfun.h: Cephes'
# single-precision polynomials, vectorised. Reproduced here operation by operation in
# float32, with a fused multiply-add (`_fma32`) wherever GCC contracts a product into the
# sum that uses it, which makes them bit-identical to PyTorch's (tested on 2**20 values).

def _simd_log(x: np.ndarray) -> np.ndarray:
    """avx_mathfun's `log256_ps` for x > 0: x = m * 2**e with m in [sqrt(1/2), sqrt(2)),
    log(m) by Cephes' degree-9 polynomial, e * log(2) added in two parts."""
    bits = np.maximum(x, np.float32(2.0 ** -126)).view(np.uint32)
    e = ((bits >> np.uint32(23)).astype(np.int32) - 126).astype(_F32)
    m = ((bits & np.uint32(0x807FFFFF)) | np.uint32(0x3F000000)).view(_F32)  # in [0.5, 1)
    small = m < np.float32(0.707106781186547524)
    e = e - small.astype(_F32)
    m = (m - np.float32(1)) + np.where(small, m, np.float32(0))
    z = m * m
    y = np.full_like(m, np.float32(7.0376836292e-2))
    for coef in (-1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1,
                 -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1):
        y = _fma32(y, m, coef)
    y = _fma32(y * m, z, e * np.float32(-2.12194440e-4))
    y = _fma32(-z, 0.5, y)
    return _fma32(e, 0.693359375, m + y)


def _simd_sincos(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """avx_mathfun's `sincos256_ps` for x >= 0: reduced by the multiple j of pi/4 (even)
    in three parts, then Cephes' sine and cosine polynomials, picked and signed by j."""
    j = (x * np.float32(1.27323954473516)).astype(np.int32)
    j = (j + 1) & ~1
    y = j.astype(_F32)
    for part in (-0.78515625, -2.4187564849853515625e-4, -3.77489497744594108e-8):
        x = _fma32(y, part, x)
    z = x * x
    c = np.full_like(x, np.float32(2.443315711809948e-5))
    c = _fma32(c, z, -1.388731625493765e-3)
    c = _fma32(c, z, 4.166664568298827e-2)
    c = _fma32(c * z, z, -(z * np.float32(0.5))) + np.float32(1)
    s = np.full_like(x, np.float32(-1.9515295891e-4))
    s = _fma32(s, z, 8.3321608736e-3)
    s = _fma32(s, z, -1.6666654611e-1)
    s = _fma32(s * z, x, x)
    sine_poly = (j & 2) == 0
    sin = np.where(sine_poly, s, c)
    cos = np.where(sine_poly, c, s)
    sin = np.where((j & 4) != 0, -sin, sin)
    cos = np.where(((~(j - 2)) & 4) != 0, -cos, cos)
    return sin, cos


def normal_double(eng: MT19937, n: int, mean: float = 0.0, std: float = 1.0) -> np.ndarray:
    """`normal_distribution<double>(mean, std)` drawn `n` times: Box-Muller on pairs of
    double uniforms, `r cos θ` returned and `r sin θ` kept in the generator for the next
    draw (which may be in a later call)."""
    out = np.empty(n, _F64)
    if n == 0:
        return out
    start = 0
    if eng.next_double_normal is not None:
        out[0] = eng.next_double_normal
        eng.next_double_normal = None
        start = 1
    pairs = (n - start + 1) // 2
    if pairs:
        u = unit(eng, 2 * pairs, _F64)
        u1, u2 = u[0::2], u[1::2]
        r = np.sqrt(-2.0 * _libm(math.log1p, -u2))
        theta = (2.0 * math.pi) * u1
        cos = r * _libm(math.cos, theta)
        sin = r * _libm(math.sin, theta)
        values = np.empty(2 * pairs, _F64)
        values[0::2], values[1::2] = cos, sin
        out[start:] = values[:n - start]
        if (n - start) % 2:
            eng.next_double_normal = float(sin[-1])
    return _scale(out, std, mean, _F64)


# -- integers -------------------------------------------------------------------------

def integers(eng: MT19937, n: int, low: int, high: int, wide: bool = True) -> np.ndarray:
    """`random_(low, high)` (and `randint`): `word % (high - low) + low`, with
    `random64()` when the range needs 32 bits or more and the dtype is wide (int64,
    float, double, bfloat16). Returns int64."""
    span = high - low
    if span >= 1 << 32 and wide:
        return (eng.words64(n) % np.uint64(span)).astype(np.int64) + low
    return (eng.words(n).astype(np.int64) % span) + low


def integers_default(eng: MT19937, n: int, dtype: np.dtype) -> np.ndarray:
    """`random_()` with no bounds: every integer the dtype holds exactly, from 0."""
    if dtype == np.bool_:
        return (eng.words(n) & 1).astype(np.bool_)
    if dtype == np.int64:
        return (eng.words64(n) % np.uint64(1 << 63)).astype(np.int64)
    if dtype == _F64:
        return (eng.words64(n) % np.uint64((1 << 53) + 1)).astype(_F64)
    if dtype.kind == "f" or dtype.name == "bfloat16":
        return (eng.words(n).astype(np.int64) % ((1 << _digits(dtype)) + 1)).astype(dtype)
    top = int(np.iinfo(dtype).max) + 1
    return (eng.words(n).astype(np.int64) % top).astype(dtype)


# torch shuffles with 32-bit words below this size (TensorFactories.cpp's randperm_cpu)
RANDPERM_SMALL = (2 ** 32 - 1) // 20


def randperm(eng: MT19937, n: int) -> np.ndarray:
    """`randperm(n)`: a forward Fisher-Yates shuffle swapping i with i + word % (n - i),
    as int64 (for n at or above `RANDPERM_SMALL`, PyTorch's inside-out shuffle on
    64-bit words)."""
    shuffle = _compiled("pytorch_randperm_shuffle") if n >= _COMPILED_MIN else None
    if n < RANDPERM_SMALL:
        if n <= 1:
            return np.arange(n, dtype=np.int64)
        offsets = eng.words(n - 1).astype(np.int64) % np.arange(n, 1, -1, dtype=np.int64)
        if shuffle is not None and (done := shuffle(offsets, False)) is not None:
            return done
        perm = list(range(n))
        for i, z in enumerate(offsets.tolist()):  # each swap depends on the ones before
            j = i + z
            perm[i], perm[j] = perm[j], perm[i]
        return np.array(perm, dtype=np.int64)
    picks = (eng.words64(n) % np.arange(1, n + 1, dtype=np.uint64)).astype(np.int64)
    if shuffle is not None and (done := shuffle(picks, True)) is not None:
        return done
    perm = np.empty(n, np.int64)
    for i, z in enumerate(picks.tolist()):
        perm[i] = perm[z]
        perm[z] = i
    return perm


# -- the distributions of one uniform each ----------------------------------------------

def bernoulli(eng: MT19937, n: int, p: float) -> np.ndarray:
    """`bernoulli_(p)` for a number `p` (PyTorch's default CPU kernel): a double uniform
    below `p`, as bool."""
    return unit(eng, n, _F64) < p


def bernoulli_tensor(eng: MT19937, p: np.ndarray) -> np.ndarray:
    """`bernoulli_(p)` for a tensor `p` (already in the output's shape and order): a
    uniform of `p`'s dtype (double for float64, else float) below each `p`, as bool."""
    dtype = _F64 if p.dtype == _F64 else _F32
    return unit(eng, p.size, dtype) < p.astype(dtype, copy=False)


def exponential(eng: MT19937, n: int, dtype: np.dtype, lambd: float) -> np.ndarray:
    """`exponential_(lambd)`: `-1 / lambd * log1p(-u)` on a double uniform."""
    u = unit(eng, n, _F64)
    return _cast((-1.0 / lambd) * _libm(math.log1p, -u), dtype)


def cauchy(eng: MT19937, n: int, dtype: np.dtype, median: float, sigma: float) -> np.ndarray:
    """`cauchy_(median, sigma)`: `median + sigma * tan(pi * (u - 0.5))`."""
    u = unit(eng, n, _F64)
    return _cast(median + sigma * _libm(math.tan, math.pi * (u - 0.5)), dtype)


def log_normal(eng: MT19937, n: int, dtype: np.dtype, mean: float, std: float) -> np.ndarray:
    """`log_normal_(mean, std)`: `exp` of a `normal_distribution<double>` draw."""
    return _cast(_libm(math.exp, normal_double(eng, n, mean, std)), dtype)


def geometric(eng: MT19937, n: int, dtype: np.dtype, p: float) -> np.ndarray:
    """`geometric_(p)`: `ceil(log(u) / log1p(-p))` on a double uniform."""
    u = unit(eng, n, _F64)
    denom = math.log1p(-p)
    return _cast(np.ceil(_libm(_log_or_inf, u) / denom), dtype)


def _log_or_inf(x: float) -> float:
    return math.log(x) if x > 0 else -math.inf


# -- sequential samplers: a data-dependent number of draws per element --------------------

class _Uniforms:
    """Double uniforms read one at a time, drawn in bulk: `close()` puts the engine
    exactly past the ones read (it rewinds and skips), so the stream is PyTorch's."""

    def __init__(self, eng: MT19937, hint: int) -> None:
        self.eng, self.start = eng, eng.snapshot()
        self.buf: list[float] = []
        self.pos = self.read = 0
        self.hint = max(hint, 16)
        self.cached_normal = eng.next_double_normal

    def __call__(self) -> float:
        if self.pos == len(self.buf):
            self.buf, self.pos = unit(self.eng, self.hint, _F64).tolist(), 0
        self.pos += 1
        self.read += 1
        return self.buf[self.pos - 1]

    def normal(self) -> float:
        """`normal_distribution<double>(0, 1)`, as `normal_double` draws it one at a time:
        Box-Muller on the next two uniforms, its sine kept for the next draw."""
        if self.cached_normal is not None:
            value, self.cached_normal = self.cached_normal, None
            return value
        u1, u2 = self(), self()
        r = math.sqrt(-2.0 * math.log1p(-u2))
        theta = 2.0 * math.pi * u1
        self.cached_normal = r * math.sin(theta)
        return r * math.cos(theta)

    def close(self) -> None:
        self.eng.restore(self.start)
        self.eng.skip(2 * self.read)
        self.eng.next_double_normal = self.cached_normal


def poisson(eng: MT19937, rates: np.ndarray) -> np.ndarray:
    """`torch.poisson` of each rate (in order), as float64: PyTorch's `sample_poisson`,
    per element: for rates >= 10 Hoermann's transformed rejection (PTRS), below it the
    product of uniforms against exp(-rate)."""
    uniform = _Uniforms(eng, 4 * rates.size)
    out = np.empty(rates.size, _F64)
    for i, lam in enumerate(rates.astype(_F64).tolist()):
        out[i] = _poisson_one(lam, uniform)
    uniform.close()
    return out


def _poisson_one(lam: float, uniform: _Uniforms) -> float:
    if lam >= 10:
        slam, loglam = math.sqrt(lam), math.log(lam)
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        invalpha = 1.1239 + 1.1328 / (b - 3.4)
        vr = 0.9277 - 3.6224 / (b - 2)
        while True:
            u = uniform() - 0.5
            v = uniform()
            us = 0.5 - abs(u)
            k = math.floor((2 * a / us + b) * u + lam + 0.43)
            if us >= 0.07 and v <= vr:
                return k
            if k < 0 or (us < 0.013 and v > us):
                continue
            if (math.log(v) + math.log(invalpha) - math.log(a / (us * us) + b)
                    <= -lam + k * loglam - math.lgamma(k + 1.0)):
                return k
    if lam == 0:
        return 0.0
    limit, count, prod = math.exp(-lam), 0, 1.0
    while True:
        prod *= uniform()
        if prod > limit:
            count += 1
        else:
            return count


def gamma(eng: MT19937, alphas: np.ndarray, single: bool) -> np.ndarray:
    """Unit-rate gamma draws of each shape in `alphas` (in order), as float64: PyTorch's
    `sample_gamma` per element (Marsaglia and Tsang's rejection sampler, a shape below 1
    boosted by `(1 - U) ** (1 / shape)`), its shape arithmetic in float32 where `single`
    (`_standard_gamma` of a float32 tensor) and in float64 otherwise (`_sample_dirichlet`,
    which draws in float64 whatever the dtype)."""
    draws = _Uniforms(eng, 4 * alphas.size)
    real = np.float32 if single else np.float64
    third = float(np.float32(1.0) / np.float32(3.0))  # (C++'s `1.0f / 3.0f`)
    squeeze = float(np.float32(0.0331))
    out = np.empty(alphas.size, _F64)
    for i, alpha in enumerate(alphas.astype(real)):
        out[i] = _gamma_one(alpha, real, third, squeeze, draws)
    draws.close()
    return out


def _gamma_one(alpha: Any, real: Any, third: float, squeeze: float,
               draws: _Uniforms) -> float:
    scale = 1.0
    if alpha < 1:
        if alpha == 0:
            return 0.0
        scale *= math.pow(1.0 - draws(), float(real(1.0) / alpha))
        alpha = real(alpha + real(1.0))
    d = float(real(alpha - real(third)))
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        x = draws.normal()
        y = 1.0 + c * x
        while y <= 0:
            x = draws.normal()
            y = 1.0 + c * x
        v = y * y * y
        u = 1.0 - draws()
        xx = x * x
        if u < 1.0 - squeeze * xx * xx:
            return scale * d * v
        if math.log(u) < 0.5 * xx + d * (1.0 - v + math.log(v)):
            return scale * d * v


def binomial(eng: MT19937, counts: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """`torch.binomial` of each (count, prob) pair (in order, in their dtype), as float64:
    PyTorch's `sample_binomial` per element (inversion by geometric waiting times below a
    mean of 10, BTRS above it, on min(p, 1 - p)), with its mix of the dtype's arithmetic
    and float64."""
    uniform = _Uniforms(eng, 4 * counts.size)
    real = counts.dtype.type
    out = np.empty(counts.size, _F64)
    for i, (n, p) in enumerate(zip(counts.tolist(), probs.tolist())):
        out[i] = _binomial_one(real(n), real(p), real, uniform)
    uniform.close()
    return out


def _binomial_one(n: Any, p: Any, real: Any, uniform: _Uniforms) -> float:
    if n <= 0 or p <= 0:
        return 0.0
    if p >= 1:
        return float(n)
    if p <= 0.5:
        return _btrs(n, p, real, uniform) if n * p >= 10 else _inversion(n, p, uniform)
    if p > 0.5:
        q = real(1.0 - float(p))
        return float(n) - (_btrs(n, q, real, uniform) if n * q >= 10
                           else _inversion(n, q, uniform))
    return math.nan


def _inversion(n: Any, p: Any, uniform: _Uniforms) -> float:
    geom_sum, num_geom = 0.0, 0.0
    logprob = math.log1p(-float(p))
    while True:
        geom_sum += math.ceil(_log_or_inf(uniform()) / logprob)
        if geom_sum > n:
            return num_geom
        num_geom += 1


_TAILS = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509,
          0.0166446911898211, 0.0138761288230707, 0.0118967099458917, 0.0104112652619720,
          0.00925546218271273, 0.00833056343336287)


def _stirling_tail(k: float) -> float:
    if k <= 9:
        return _TAILS[int(k)]
    kp1sq = (k + 1) * (k + 1)
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)


def _btrs(n: Any, p: Any, real: Any, uniform: _Uniforms) -> float:
    one = real(1)
    stddev = math.sqrt(float(n * p * (one - p)))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * float(p)
    c = float(n * p) + 0.5
    v_r = 0.92 - 4.2 / b
    r = float(p / (one - p))
    alpha = (2.83 + 5.1 / b) * stddev
    m = math.floor(float((n + one) * p))
    nf = float(n)
    while True:
        u = uniform() - 0.5
        v = uniform()
        us = 0.5 - abs(u)
        k = float(real(math.floor((2 * a / us + b) * u + c)))
        if k < 0 or k > nf:
            continue
        if us >= 0.07 and v <= v_r:
            return k
        v = math.log(v * alpha / (a / (us * us) + b))
        n_k1 = float(n - real(k) + one)
        upper = ((m + 0.5) * math.log((m + 1) / (r * (nf - m + 1)))
                 + float(n + one) * math.log((nf - m + 1) / n_k1)
                 + (k + 0.5) * math.log(r * n_k1 / float(real(k) + one))
                 + _stirling_tail(m) + _stirling_tail(nf - m)
                 - _stirling_tail(k) - _stirling_tail(float(n - real(k))))
        if v <= upper:
            return k


def intel_cpu() -> bool:
    """Whether processor 0 is Intel's (cpuinfo's vendor test, which PyTorch's
    `bernoulli_(p)` makes): there, PyTorch builds with MKL draw `bernoulli_` with a number
    `p` (dropout's masks) from MKL's own generator, seeded by one word of this stream,
    which ember does not reproduce; ember always follows PyTorch's default kernel."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("vendor_id"):
                    return "GenuineIntel" in line
    except OSError:
        pass
    import platform

    return "intel" in platform.processor().lower()
