"""Elementwise kernels compiled by numba: the transcendental functions, their backward
formulas, and the fused gate updates of the LSTM layer (lstm.py).

Imports numba, so only ``compiled.py`` imports this module, on the first call that wants
a compiled kernel (``import ember`` never loads numba).

Why hand-written float32 functions: the llvmlite wheels are built without Intel's SVML, so
numba compiles ``math.tanh`` and ``math.exp`` to one libm call per element, never SIMD.
The float32 ``tanh``, ``exp`` and ``log`` below are pure arithmetic (a clamp, a polynomial
or rational function, exponent bits set with integer ops), which LLVM vectorises to the
CPU's widest registers. float64 keeps libm (its accuracy is the dtype's point); its
kernels gain from fusion only.

Accuracy (float32, measured against float64 NumPy over [-110, 100] and the extremes, see
tests/test_numba_kernels.py): ``exp`` <= 1 ulp, ``tanh`` <= 5 ulp, ``log`` <= 1 ulp,
``sigmoid`` <= 2 ulp; NaN, +-inf, 0, -0 and denormals give what NumPy gives.

fastmath is ``{"contract"}`` only (fused multiply-adds). ``nnan``/``ninf`` would let LLVM
drop the NaN and infinity selects; ``reassoc`` would fold the two-constant Cody-Waite
range reduction ``x - n*C1 - n*C2`` back into one rounded product and lose ~10 bits of
``exp``; ``afn`` only matters for libm calls (the float64 path) and may swap them for less
accurate ones. ``error_model="numpy"`` makes a division by zero give inf/NaN instead of
raising (Python's rule), which also lets the loops vectorise.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload

_FASTMATH = {"contract"}


def _jit(parallel: bool = False, inline: bool = False,
         contract: bool = True) -> Callable[[Callable], Any]:
    """numba.njit with this module's flags, cached on disk (so a process loads the machine
    code instead of compiling it, ~2 s a kernel) where a cache folder is writable.
    `contract=False` for a kernel whose roundings must stay apart (no fused multiply-add)."""
    options: dict[str, Any] = dict(fastmath=_FASTMATH if contract else False,
                                   error_model="numpy")
    if inline:  # a scalar helper: inlined into the loops, nothing to cache
        return numba.njit(**options)

    def decorate(f: Callable) -> Any:
        try:
            return numba.njit(cache=True, parallel=parallel, **options)(f)
        except RuntimeError:  # numba: "cannot cache function ...: no locator available"
            return numba.njit(cache=False, parallel=parallel, **options)(f)
    return decorate


# -- bit casts: the exponent field of a float32, for exp's 2^n and log's frexp ----------

@intrinsic
def _float32_from_bits(typingctx, bits):
    def codegen(context, builder, signature, args):
        value = args[0]
        if value.type.width > 32:  # numba widens int32 arithmetic to int64
            value = builder.trunc(value, ir.IntType(32))
        return builder.bitcast(value, ir.FloatType())
    return types.float32(bits), codegen


@intrinsic
def _bits_of_float32(typingctx, x):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(32))
    return types.int32(types.float32), codegen


F = np.float32
_ONE, _HALF, _TWO = F(1.0), F(0.5), F(2.0)
_INF = F(np.inf)

# exp: Cephes' expf (Cody-Waite reduction by ln 2 in two parts, degree-6 polynomial)
_LOG2E = F(1.44269504088896341)
_LN2_HI, _LN2_LO = F(0.693359375), F(-2.12194440e-4)
_E0, _E1, _E2, _E3, _E4, _E5 = (F(1.9875691500e-4), F(1.3981999507e-3), F(8.3334519073e-3),
                                F(4.1665795894e-2), F(1.6666665459e-1), F(5.0000001201e-1))
_EXP_HI = F(88.72283905206835)  # above: inf
_EXP_LO = F(-104.0)             # below: 0 (the smallest denormal is e^-103.3)


@_jit(inline=True)
def _exp32(a):
    x = _EXP_LO if a < _EXP_LO else a  # clamped so the integer conversions see no NaN
    x = _EXP_HI if x > _EXP_HI else x
    x = _EXP_LO if a != a else x
    n = np.floor(x * _LOG2E + _HALF)
    x = x - n * _LN2_HI
    x = x - n * _LN2_LO
    y = _E0
    y = y * x + _E1
    y = y * x + _E2
    y = y * x + _E3
    y = y * x + _E4
    y = y * x + _E5
    y = y * (x * x) + x + _ONE
    # y * 2^n as two factors 2^n1 * 2^n2, each a normal float: the result may be denormal
    n1 = np.floor(n * _HALF)
    n2 = n - n1
    y = y * _float32_from_bits((np.int32(n1) + 127) << 23) * \
        _float32_from_bits((np.int32(n2) + 127) << 23)
    y = _INF if a > _EXP_HI else y
    return a if a != a else y


# tanh: Eigen's rational approximation (odd degree-13 over even degree-6) on [-7.9, 7.9]
_TANH_CLAMP = F(7.90531110763549805)
_TANH_TINY = F(0.0004)  # below: tanh(x) = x in float32
_TANH_ONE = F(9.0)      # above: tanh(x) rounds to 1 in float32
_T1, _T3, _T5, _T7, _T9, _T11, _T13 = (
    F(4.89352455891786e-03), F(6.37261928875436e-04), F(1.48572235717979e-05),
    F(5.12229709037114e-08), F(-8.60467152213735e-11), F(2.00018790482477e-13),
    F(-2.76076847742355e-16))
_U0, _U2, _U4, _U6 = (F(4.89352518554385e-03), F(2.26843463243900e-03),
                      F(1.18534705686654e-04), F(1.19825839466702e-06))


@_jit(inline=True)
def _tanh32(a):
    x = _TANH_CLAMP if a > _TANH_CLAMP else a  # (NaN passes through both)
    x = -_TANH_CLAMP if x < -_TANH_CLAMP else x
    x2 = x * x
    p = _T13
    p = p * x2 + _T11
    p = p * x2 + _T9
    p = p * x2 + _T7
    p = p * x2 + _T5
    p = p * x2 + _T3
    p = p * x2 + _T1
    p = p * x
    q = _U6
    q = q * x2 + _U4
    q = q * x2 + _U2
    q = q * x2 + _U0
    y = p / q
    y = a if abs(a) < _TANH_TINY else y
    return math.copysign(_ONE, a) if abs(a) > _TANH_ONE else y


# log: Cephes' logf (mantissa in [sqrt(1/2), sqrt(2)), degree-9 polynomial)
_SQRT_HALF = F(0.707106781186547524)
_L = (F(7.0376836292e-2), F(-1.1514610310e-1), F(1.1676998740e-1), F(-1.2420140846e-1),
      F(1.4249322787e-1), F(-1.6668057665e-1), F(2.0000714765e-1), F(-2.4999993993e-1),
      F(3.3333331174e-1))
_L0, _L1, _L2, _L3, _L4, _L5, _L6, _L7, _L8 = _L
_MIN_NORMAL = F(1.17549435e-38)
_TWO_23 = F(8388608.0)
_NAN = F(np.nan)


@_jit(inline=True)
def _log32(a):
    small = a < _MIN_NORMAL  # denormals: scaled into the normal range first
    x = a * _TWO_23 if small else a
    bits = _bits_of_float32(x)
    e = F(((bits >> 23) & 0xFF) - 126)
    e = e - F(23.0) if small else e
    m = _float32_from_bits((bits & 0x807FFFFF) | 0x3F000000)  # in [0.5, 1)
    low = m < _SQRT_HALF
    e = e - _ONE if low else e
    m = m + m - _ONE if low else m - _ONE
    z = m * m
    y = _L0
    y = y * m + _L1
    y = y * m + _L2
    y = y * m + _L3
    y = y * m + _L4
    y = y * m + _L5
    y = y * m + _L6
    y = y * m + _L7
    y = y * m + _L8
    y = y * m * z
    y = y + e * _LN2_LO
    y = y - _HALF * z
    y = m + y
    y = y + e * _LN2_HI
    y = a if a == _INF else y        # log(inf) = inf
    y = -_INF if a == 0 else y       # log(+-0) = -inf
    y = _NAN if a < 0 else y         # log(negative) = NaN
    return a if a != a else y


# -- the scalar functions by dtype: float32 the above, float64 libm ----------------------

# stubs that numba compiles by the argument's dtype (the overloads below)
def exp(x):
    raise NotImplementedError


def tanh(x):
    raise NotImplementedError


def log(x):
    raise NotImplementedError


def sigmoid(x):
    raise NotImplementedError


@overload(exp, fastmath=_FASTMATH)
def _exp_by_dtype(x):
    return (lambda x: _exp32(x)) if x == types.float32 else (lambda x: math.exp(x))


@overload(tanh, fastmath=_FASTMATH)
def _tanh_by_dtype(x):
    return (lambda x: _tanh32(x)) if x == types.float32 else (lambda x: math.tanh(x))


@overload(log, fastmath=_FASTMATH)
def _log_by_dtype(x):
    return (lambda x: _log32(x)) if x == types.float32 else (lambda x: math.log(x))


def one_like(x):
    raise NotImplementedError


@overload(one_like)
def _one_by_dtype(x):
    """1 in x's float type (numba types a literal 1 as an integer, and int op float32 as
    float64)."""
    one = np.float32(1) if x == types.float32 else np.float64(1)
    return lambda x: one


@overload(sigmoid, fastmath=_FASTMATH)
def _sigmoid_by_dtype(x):
    one = np.float32(1) if x == types.float32 else np.float64(1)

    def impl(x):
        # e / (1 + e) with e = exp(-|x|) <= 1: never overflows, and keeps its relative
        # precision for very negative x (as the NumPy kernel does)
        e = exp(-abs(x))
        return (one if x >= 0 else e) / (e + one)
    return impl


# -- elementwise loops over flat, contiguous arrays (`x`, `out` of one dtype) -----------
# Written out one by one: numba's disk cache names a compiled function by its qualified
# name and line, so loops made by one closure factory would overwrite each other's entry.

@_jit()
def exp_serial(x, out):
    for i in range(x.size):
        out[i] = exp(x[i])


@_jit(parallel=True)
def exp_parallel(x, out):
    for i in numba.prange(x.size):
        out[i] = exp(x[i])


@_jit()
def tanh_serial(x, out):
    for i in range(x.size):
        out[i] = tanh(x[i])


@_jit(parallel=True)
def tanh_parallel(x, out):
    for i in numba.prange(x.size):
        out[i] = tanh(x[i])


@_jit()
def log_serial(x, out):
    for i in range(x.size):
        out[i] = log(x[i])


@_jit(parallel=True)
def log_parallel(x, out):
    for i in numba.prange(x.size):
        out[i] = log(x[i])


@_jit()
def sigmoid_serial(x, out):
    for i in range(x.size):
        out[i] = sigmoid(x[i])


@_jit(parallel=True)
def sigmoid_parallel(x, out):
    for i in numba.prange(x.size):
        out[i] = sigmoid(x[i])


# -- backward formulas: one pass instead of NumPy's three --------------------------------

@_jit()
def tanh_backward(y, g, out):
    """out = g * (1 - y^2)."""
    for i in range(y.size):
        out[i] = g[i] * (one_like(y[i]) - y[i] * y[i])


@_jit()
def sigmoid_backward(y, g, out):
    """out = g * y * (1 - y)."""
    for i in range(y.size):
        out[i] = g[i] * (y[i] * (one_like(y[i]) - y[i]))


UNARY = {"exp": (exp_serial, exp_parallel), "tanh": (tanh_serial, tanh_parallel),
         "log": (log_serial, log_parallel), "sigmoid": (sigmoid_serial, sigmoid_parallel)}
"""op name -> (serial, parallel) kernel `(x, out)` on flat contiguous arrays."""


# -- erf: the NumPy kernel's Cephes formula (ember/backends/xp/elementwise.py) in one pass --
# float32 computes in float64 with each step rounded as NumPy's passes round it (no
# contraction: a fused multiply-add would round differently); float64 calls libm's erf,
# as NumPy's float64 kernel (math.erf) does.

@_jit(inline=True, contract=False)
def _horner(x, c):
    y = c[0]
    for j in range(1, len(c)):
        y = y * x + c[j]
    return y


@_jit(inline=True, contract=False)
def _monic(x, c):
    y = x + c[0]
    for j in range(1, len(c)):
        y = y * x + c[j]
    return y


@_jit(contract=False)
def erf_cephes(x, out, t, u, p, q):
    """out = erf(x) for float32 x, by `_erf_polynomial`'s formula (t, u, p, q its
    coefficients as float64 arrays)."""
    for i in range(x.size):
        v = np.float64(x[i])
        v = min(max(v, -6.0), 6.0) if v == v else v
        a = abs(v)
        z = v * v
        if a <= 1.0:
            r = v * _horner(z, t) / _monic(z, u)
        else:
            r = math.copysign(1.0 - math.exp(-z) * _horner(a, p) / _monic(a, q), v)
        out[i] = r


@_jit()
def erf_libm(x, out):
    for i in range(x.size):
        out[i] = math.erf(x[i])


# -- PyTorch's float32 fused multiply-add (the opmath rules: ember/backends/xp/opmath.py) --
# float64 holds a product of two float32 exactly, so the sum's one rounding to float32 is
# the fma's (a contracted float64 fma changes nothing)

@_jit()
def fma32(a, b, c, out):
    for i in range(out.size):
        out[i] = np.float32(np.float64(a[i]) * np.float64(b[i]) + np.float64(c[i]))


@_jit()
def fma32_by_number(a, b, c, out):
    wide = np.float64(b)
    for i in range(out.size):
        out[i] = np.float32(np.float64(a[i]) * wide + np.float64(c[i]))


@_jit(contract=False)
def scale_add32(x, scale, y):
    """``x = x * scale + y`` in place, each step rounded to float32 as PyTorch's `mul_`
    then `add_` round it (compiled without contraction: LLVM would fuse them)."""
    s = np.float32(scale)
    for i in range(x.size):
        x[i] = x[i] * s + y[i]


# -- BLAS from compiled code -------------------------------------------------------------

@intrinsic
def _gemm(typingctx, fn, int_kind, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c,
          ldc):
    """Call the row-major CBLAS ``?gemm`` at address `fn` (an integer): NumPy's own
    OpenBLAS (compiled.py finds it), so a compiled time loop runs its recurrent matmuls on
    the BLAS and the threads NumPy uses, with ``beta = 1`` and strided blocks where
    ``np.dot`` has neither. `a`, `b`, `c` are addresses; `alpha`'s type picks sgemm or
    dgemm's float width; `int_kind`, an empty array, gives the BLAS's integer width by its
    dtype (int64 for NumPy's ILP64 OpenBLAS). The address is an argument, not a constant,
    so the kernels stay cacheable."""
    sig = types.void(fn, int_kind, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta,
                     c, ldc)

    def codegen(context, builder, signature, args):
        i32, ity = ir.IntType(32), ir.IntType(signature.args[1].dtype.bitwidth)
        fty = context.get_value_type(signature.args[7])
        ptr = ir.IntType(8).as_pointer()

        def as_int(value, to):
            if value.type.width > to.width:
                return builder.trunc(value, to)
            return builder.sext(value, to) if value.type.width < to.width else value

        fn_, _, ta, tb, m_, n_, k_, al, a_, lda_, b_, ldb_, be, c_, ldc_ = args
        fnty = ir.FunctionType(ir.VoidType(), [i32] * 3 + [ity] * 3 +
                               [fty, ptr, ity, ptr, ity, fty, ptr, ity])
        callee = builder.inttoptr(fn_, fnty.as_pointer())
        builder.call(callee, [ir.Constant(i32, 101), as_int(ta, i32), as_int(tb, i32),
                              as_int(m_, ity), as_int(n_, ity), as_int(k_, ity),
                              context.cast(builder, al, signature.args[7], signature.args[7]),
                              builder.inttoptr(a_, ptr), as_int(lda_, ity),
                              builder.inttoptr(b_, ptr), as_int(ldb_, ity),
                              context.cast(builder, be, signature.args[12], signature.args[7]),
                              builder.inttoptr(c_, ptr), as_int(ldc_, ity)])
        return context.get_dummy_value()
    return sig, codegen


_NO_TRANS = 111  # CBLAS enum


@_jit(inline=True)
def _address(a):
    """An array's data address as a signed integer (numba types ``ctypes.data`` unsigned,
    and unsigned + signed arithmetic as float64)."""
    return np.int64(a.ctypes.data)


# -- the LSTM layer, the whole time loop in one call each way (lstm.py) -------------------
# PyTorch's layout: rows are (time step, sample) pairs, time-major, in the sequence's own
# order whatever the direction; gates (i, f, g, o) side by side in each row. float32 only
# (float64 would call libm's scalar tanh).

@_jit()
def lstm_layer_forward(gemm, int_kind, w_hh_t, bias, h0, acts, cs, out, reverse):
    """The time loop of an LSTM layer direction. On entry `acts` (T*B, 4H) holds every
    step's input projection ``x @ W_ih^T`` (without bias); each step adds ``h_prev @
    W_hh^T`` with one BLAS call (`w_hh_t`: W_hh^T, (H, 4H) contiguous: OpenBLAS runs this
    shape 1.5x slower with the transpose flag) and then replaces its rows by the
    activated gates. Writes
    c_t into `cs` ((T+1)*B, H; slot 0, or slot T if `reverse`, holds c0 on entry) and h_t
    into `out` (T*B, H)."""
    batch, hidden = h0.shape
    steps = out.shape[0] // batch
    four_h = 4 * hidden
    one = one_like(acts[0, 0])
    half = one / (one + one)
    size = acts.itemsize
    for s in range(steps):
        t = steps - 1 - s if reverse else s
        row = t * batch
        c_prev = (t + 1) * batch if reverse else t * batch  # rows of c_{t-1} and c_t in cs
        c_row = t * batch if reverse else (t + 1) * batch
        if s == 0:
            h_prev = _address(h0)
        else:
            h_prev = _address(out) + ((t + 1) if reverse else (t - 1)) * batch * hidden * size
        _gemm(gemm, int_kind, _NO_TRANS, _NO_TRANS, batch, four_h, hidden, one, h_prev,
              hidden, _address(w_hh_t), four_h, one, _address(acts) + row * four_h * size,
              four_h)
        for n in range(batch):
            r = row + n
            for j in range(hidden):
                i = half * tanh(half * (acts[r, j] + bias[j])) + half
                f = half * tanh(half * (acts[r, hidden + j] + bias[hidden + j])) + half
                g = tanh(acts[r, 2 * hidden + j] + bias[2 * hidden + j])
                o = half * tanh(half * (acts[r, 3 * hidden + j] + bias[3 * hidden + j])) + half
                acts[r, j] = i
                acts[r, hidden + j] = f
                acts[r, 2 * hidden + j] = g
                acts[r, 3 * hidden + j] = o
                c = f * cs[c_prev + n, j] + i * g
                cs[c_row + n, j] = c
                out[r, j] = o * tanh(c)


@_jit()
def lstm_layer_backward(gemm, int_kind, w_hh, acts, cs, grad_out, dh, dc, reverse):
    """The backward time loop of :func:`lstm_layer_forward` (last step first): from the
    output gradient `grad_out` (T*B, H), `dh`/`dc` (B, H) the gradients reaching h_n and
    c_n on entry, replaces every step's activated gates in `acts` (T*B, 4H) by the
    gradients of their pre-activations (each row is read before it is written; one array,
    not a second output argument that aliases it: LLVM's overlap check would then find
    the overlap and run the scalar loop) and leaves the gradients of h0 and c0 in `dh` and
    `dc`."""
    batch, hidden = dh.shape
    steps = grad_out.shape[0] // batch
    four_h = 4 * hidden
    one = one_like(acts[0, 0])
    zero = one - one
    size = acts.itemsize
    for s in range(steps):
        t = s if reverse else steps - 1 - s
        row = t * batch
        c_prev = (t + 1) * batch if reverse else t * batch
        c_row = t * batch if reverse else (t + 1) * batch
        for n in range(batch):
            r = row + n
            for j in range(hidden):
                i = acts[r, j]
                f = acts[r, hidden + j]
                g = acts[r, 2 * hidden + j]
                o = acts[r, 3 * hidden + j]
                tc = tanh(cs[c_row + n, j])
                d_h = grad_out[r, j] + dh[n, j]
                d_c = dc[n, j] + d_h * o * (one - tc * tc)
                acts[r, j] = d_c * g * (i * (one - i))
                acts[r, hidden + j] = d_c * cs[c_prev + n, j] * (f * (one - f))
                acts[r, 2 * hidden + j] = d_c * i * (one - g * g)
                acts[r, 3 * hidden + j] = d_h * tc * (o * (one - o))
                dc[n, j] = d_c * f
        # the gradient reaching h_{t-1}: this step's gate gradients through W_hh
        _gemm(gemm, int_kind, _NO_TRANS, _NO_TRANS, batch, hidden, four_h, one,
              _address(acts) + row * four_h * size, four_h, _address(w_hh), hidden,
              zero, _address(dh), hidden)


# -- the GRU layer, the same way (gru.py) -------------------------------------------------
# Gates (r, z, n) side by side in each row, PyTorch's formulation:
# r, z = sigmoid(x W_i^T + b_i + h W_h^T + b_h), n = tanh(x W_in^T + b_in + r (h W_hn^T
# + b_hn)), h' = n + z (h - n).

@_jit()
def gru_layer_forward(gemm, int_kind, w_hh_t, b_ih, b_hh, h, hg, acts, hns, out, reverse):
    """The time loop of a GRU layer direction. On entry `acts` (T*B, 3H) holds every step's
    ``x @ W_ih^T`` (without bias) and `h` (B, H) the initial state; each step forms
    ``h @ W_hh^T`` into `hg` (B, 3H) with one BLAS call (`w_hh_t`: W_hh^T, (H, 3H)
    contiguous, as in lstm_layer_forward), then replaces its rows of `acts`
    by r, z, n, writes ``h W_hn^T + b_hn`` into `hns` (T*B, H), and h_t into `out`
    (T*B, H) and `h` (which ends as h_n)."""
    batch, hidden = h.shape
    steps = out.shape[0] // batch
    three_h = 3 * hidden
    one = one_like(acts[0, 0])
    half = one / (one + one)
    zero = one - one
    for s in range(steps):
        t = steps - 1 - s if reverse else s
        row = t * batch
        _gemm(gemm, int_kind, _NO_TRANS, _NO_TRANS, batch, three_h, hidden, one, _address(h),
              hidden, _address(w_hh_t), three_h, zero, _address(hg), three_h)
        for n in range(batch):
            r_ = row + n
            for j in range(hidden):
                r = half * tanh(half * (acts[r_, j] + b_ih[j] + hg[n, j] + b_hh[j])) + half
                z = half * tanh(half * (acts[r_, hidden + j] + b_ih[hidden + j] +
                                        hg[n, hidden + j] + b_hh[hidden + j])) + half
                hn = hg[n, 2 * hidden + j] + b_hh[2 * hidden + j]
                nn = tanh(acts[r_, 2 * hidden + j] + b_ih[2 * hidden + j] + r * hn)
                acts[r_, j] = r
                acts[r_, hidden + j] = z
                acts[r_, 2 * hidden + j] = nn
                hns[r_, j] = hn
                h_new = nn + z * (h[n, j] - nn)
                h[n, j] = h_new
                out[r_, j] = h_new


@_jit()
def gru_layer_backward(gemm, int_kind, w_hh, h0, acts, hns, out, grad_out, dh, reverse):
    """The backward time loop of :func:`gru_layer_forward` (last step first): from the
    output gradient `grad_out` (T*B, H) and `dh` (B, H), the gradient reaching h_n on
    entry, overwrites `acts` with the gradients of the recurrent pre-activations (r, z:
    also the input ones; n: ``h W_hn^T + b_hn``'s) and `hns` with those of the input
    projection's n part, and leaves h0's gradient in `dh`."""
    batch, hidden = dh.shape
    steps = out.shape[0] // batch
    three_h = 3 * hidden
    one = one_like(acts[0, 0])
    for s in range(steps):
        t = s if reverse else steps - 1 - s
        row = t * batch
        first = s == steps - 1  # the step that started from h0
        prev = h0 if first else out
        prev_row = 0 if first else ((t + 1) * batch if reverse else (t - 1) * batch)
        for n in range(batch):
            r_ = row + n
            for j in range(hidden):
                r = acts[r_, j]
                z = acts[r_, hidden + j]
                nn = acts[r_, 2 * hidden + j]
                hp = prev[prev_row + n, j]
                d_h = grad_out[r_, j] + dh[n, j]
                d_n = d_h * (one - z) * (one - nn * nn)
                acts[r_, j] = d_n * hns[r_, j] * (r * (one - r))
                acts[r_, hidden + j] = d_h * (hp - nn) * (z * (one - z))
                acts[r_, 2 * hidden + j] = d_n * r
                hns[r_, j] = d_n
                dh[n, j] = d_h * z
        # plus the gradient through W_hh: the recurrent pre-activations' of this step
        _gemm(gemm, int_kind, _NO_TRANS, _NO_TRANS, batch, hidden, three_h, one,
              _address(acts) + row * three_h * acts.itemsize, three_h, _address(w_hh),
              hidden, one, _address(dh), hidden)
