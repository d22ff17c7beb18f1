"""The CPU backend's kernel table: the shared kernels of ember/backends/xp on NumPy, with
what only the CPU has (each op's semantics: its declaration in ember/core/ops).

CPU-only, passed to the shared kernels as hooks or added to the table here:

- OpenBLAS: large matrix products through blas.py's private library (`matmul`, `linear`),
  BLAS axpy for the optimizers' in-place updates, and its blocked transpose
  (`?omatcopy`) for the conv kernels' layout changes;
- bfloat16 through ml_dtypes, which needs its scalars and results kept bfloat16;
- NumPy's read-only arrays (broadcast views), which writes must refuse;
- ReLU laid out for NumPy's fastest `maximum` loop;
- erf to float64 precision through the C library's `math.erf`;
- the special functions (lgamma, digamma, erfinv ...) through SciPy, imported on first use;
- random numbers from a NumPy Generator, for the creation kernels other devices fall back
  to (random ops on the CPU itself draw PyTorch's stream in core: ember/core/cpu_random.py);
- the whole-layer LSTM kernel (lstm.py, registered beside this table);
- numba-compiled sigmoid, tanh, exp and backward formulas above a size, and the CNN's
  ReLU and max pooling passes (compiled.py);
- float32/float64 sums (and means) in PyTorch's order of additions (cascade_sum.py);
- NumPy's RuntimeWarnings on inf and NaN arithmetic, which PyTorch does not give.
"""

from __future__ import annotations

import functools
import importlib
import math
from typing import Any

import numpy as np

from ember.backends.cpu import blas, cascade_sum, compiled, half_vector_lanes, hide_ieee_warnings
from ember.backends.xp import Hooks, make_kernels
from ember.backends.xp.fused import softmax_kernels
from ember.backends.xp.lib import OVERLAP, disordered, in_torch_order
from ember.backends.xp.opmath import half_by_number
from ember.backends.xp.reductions import variance_kernel
from ember.core.backend import (
    EVERY_DTYPE,
    FLOAT8_DTYPES,
    LIMITED_DTYPES,
    bfloat16,
    numpy_dtype,
    to_float8,
)

hide_ieee_warnings()  # (again: ember may have been imported inside a catch_warnings block)

_NP = {d: numpy_dtype(d) for d in EVERY_DTYPE + LIMITED_DTYPES + FLOAT8_DTYPES}
_BF16, _BOOL, _F16 = _NP[bfloat16], np.dtype(np.bool_), np.dtype(np.float16)
_HALF = (_F16, _BF16)
_NATIVE_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))  # BLAS and Generator dtypes
_rng = np.random.Generator(np.random.PCG64(0))


def manual_seed(seed: int) -> None:
    global _rng
    _rng = np.random.Generator(np.random.PCG64(seed))


def empty(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    return np.empty(shape, _NP[dtype])


# -- hooks for the shared kernels -------------------------------------------------------

def _call_elementwise(f, args, out):
    """Run an elementwise function; always return an ndarray (NumPy turns 0-d results
    into scalars). ml_dtypes' bfloat16 ignores NumPy's weak-scalar rule (`bf16 + 2.0`
    gives float32): there, make scalars bfloat16 arrays and keep a bfloat16 result."""
    first = args[0] if type(args[0]) is np.ndarray else args[-1]
    if first.dtype in _HALF and (result := half_by_number(np, f, args, out, _HALF)) is not None:
        return result
    if first.dtype != _BF16:
        result = f(*args, out=out)
        return result if type(result) is np.ndarray else np.asarray(result)
    args = tuple(a if type(a) is np.ndarray else np.asarray(a, _BF16) for a in args)
    result = np.asarray(f(*args, out=out))
    return result if result.dtype in (_BF16, _BOOL) else result.astype(_BF16)


def _elementwise_kernel(f):
    """The kernel of a NumPy function of one or two operands: the common case (no `out`,
    no bfloat16) calls it straight away, the rest goes through _call_elementwise. Two
    arrays the first of which is not row-major take PyTorch's result layout."""
    ndarray, asarray = np.ndarray, np.asarray
    ordered = in_torch_order(f, ndarray)

    def kernel(*args, out=None):
        if out is None:
            first = args[0] if type(args[0]) is ndarray else args[-1]
            # (a row-major first operand, the common case, costs one flag read)
            if not first.flags.c_contiguous and disordered(args, ndarray):
                return _call_elementwise(ordered, args, None)
            if first.dtype is not _BF16 and first.dtype is not _F16:
                result = f(*args)
                return result if type(result) is ndarray else asarray(result)
        elif not out.flags.writeable:  # a broadcast view: its elements share memory
            raise RuntimeError(OVERLAP)
        return _call_elementwise(f, args, out)
    return kernel


def _read_only(buffer: np.ndarray) -> bool:
    return not buffer.flags.writeable


def _writable(buffer: np.ndarray) -> np.ndarray:
    """A writable view of a read-only view's memory (NumPy's broadcast views are read-only):
    an array over the (writable, contiguous) array owning that memory, at the view's
    offset, with its strides."""
    owner = buffer  # the array owning the memory (a view's extent may pass its own base's)
    while True:
        base = owner.base
        while base is not None and not isinstance(base, np.ndarray):
            base = getattr(base, "base", None)  # (as_strided's views hold a stand-in)
        if base is None:
            break
        owner = base
    if not owner.flags.writeable or not owner.flags.c_contiguous:
        raise RuntimeError(OVERLAP)
    offset = buffer.__array_interface__["data"][0] - owner.__array_interface__["data"][0]
    return np.ndarray(buffer.shape, buffer.dtype, buffer=owner, offset=offset,
                      strides=buffer.strides)


_RELU_ROW = 1024


def _relu(x, out=None):
    # NumPy's maximum against a scalar takes a slow loop; against a row of zeros broadcast
    # over rows it runs its fast one (128x512 float32: 35 us vs 15 us). Contiguous arrays
    # with short rows (a conv's 26 wide) are viewed as rows of 1024 (1.38M floats: 0.38 ms
    # instead of 0.63 ms as 26-wide rows, 0.71 ms against a scalar).
    if x.ndim and x.shape[-1] < 256 and x.size >= _RELU_ROW and x.flags.c_contiguous and \
            (out is None or out.flags.c_contiguous):
        res = np.empty_like(x) if out is None else out
        src, dst = x.reshape(-1), res.reshape(-1)
        whole = src.size - src.size % _RELU_ROW
        np.maximum(src[:whole].reshape(-1, _RELU_ROW), np.zeros(_RELU_ROW, x.dtype),
                   out=dst[:whole].reshape(-1, _RELU_ROW))
        np.maximum(src[whole:], x.dtype.type(0), out=dst[whole:])
        return res
    if x.ndim and x.shape[-1] > 1:
        return np.maximum(x, np.zeros(x.shape[-1], x.dtype), out=out)
    return np.maximum(x, x.dtype.type(0), out=out)




def _matmul(a, b):
    if a.dtype in _HALF and b.dtype == a.dtype:
        # NumPy multiplies half floats in a scalar loop (256x256: 65 ms); PyTorch's CPU
        # kernels accumulate them in float32 too, so go through BLAS in float32
        return _matmul(a.astype(np.float32), b.astype(np.float32)).astype(a.dtype)
    if a.ndim >= 2 and b.ndim == 2 and a.dtype == b.dtype and a.dtype in _NATIVE_FLOATS and \
            blas.should_use_fast_path(a.shape[-2], b.shape[1], b.shape[0]):
        fast = blas.fast_matmul(a, b)  # NumPy's OpenBLAS runs slower kernels than the CPU has
        if fast is not None:
            return fast
    return np.matmul(a, b)


# -- random numbers ---------------------------------------------------------------------

def _expand(shared):
    """The shared `expand` (NumPy's broadcast_to: ~5 us of argument checks and an nditer
    in Python) as one array constructor over a C-contiguous input's own buffer; the
    result is read-only as broadcast_to's is where elements repeat (one that only gains
    size-1 dims aliases nothing, and PyTorch writes into it). Other inputs take the shared
    kernel."""
    def expand(x, shape):
        lead = len(shape) - x.ndim
        if not x.flags.c_contiguous or not x.size or lead < 0:
            return shared(x, shape)
        target, strides = [], []
        for i, n in enumerate(shape):
            s = x.shape[i - lead] if i >= lead else 1
            if n == -1:
                n = s
            target.append(n)
            strides.append(x.strides[i - lead] if i >= lead and s == n else 0)
        if not math.prod(target) or tuple(target) == x.shape:
            return shared(x, shape)
        out = np.ndarray(tuple(target), x.dtype, buffer=x, strides=tuple(strides))
        if out.size != x.size:
            out.flags.writeable = False
        return out
    return expand


def _quiet() -> Any:
    """NumPy 2's `errstate` builds its error state anew on each entry (~3 us, more than a
    small division itself). The state it sets is a context variable: this context sets
    one made once instead (thread- and task-safe, as errstate is). Another NumPy gets
    errstate itself."""
    try:
        from numpy._core._ufunc_config import _extobj_contextvar, _make_extobj

        ignore_all = _make_extobj(all="ignore")
    except (ImportError, TypeError):
        return functools.partial(np.errstate, all="ignore")

    class Quiet:
        __slots__ = ("token",)

        def __enter__(self) -> None:
            self.token = _extobj_contextvar.set(ignore_all)

        def __exit__(self, *exc_info: Any) -> None:
            _extobj_contextvar.reset(self.token)
    return Quiet


def _uniform_like(sample, shape, dtype):
    native = _NP[dtype] if _NP[dtype] in _NATIVE_FLOATS else np.dtype(np.float32)
    return sample(shape, dtype=native).astype(_NP[dtype], copy=False)


def rand(shape, dtype, device=0):
    return _uniform_like(_rng.random, shape, dtype)


def randn(shape, dtype, device=0):
    return _uniform_like(_rng.standard_normal, shape, dtype)


def randint(shape, dtype, low, high, device=0):
    return _rng.integers(low, high, size=shape, dtype=np.int64).astype(_NP[dtype])


def randperm(n, dtype, device=0):
    return _rng.permutation(n).astype(_NP[dtype])


KERNELS: dict[str, Any] = make_kernels(np, hooks=Hooks(
    call_elementwise=_call_elementwise,
    elementwise_kernel=_elementwise_kernel,
    elementwise={"relu": _relu},
    read_only=_read_only,
    writable=_writable,
    quiet=_quiet(),
    matmul=_matmul,
    half_vector_lanes=half_vector_lanes,
    axpy=blas.axpy,
    fma=compiled.fma,
    fma64=compiled.fma64,
    scale_add=compiled.scale_add,
    transpose=blas.transpose,
    conv_columns_bytes=2 << 20,  # (L2-sized chunks; the benchmark CNN's conv2 in 5)
    im2col_batch_last=compiled.im2col_batch_last,
    col2im_batch_last=compiled.col2im_batch_last,
    exact_erf=np.vectorize(math.erf, otypes=[np.float64]),
    special=lambda: importlib.import_module("scipy.special"),  # (slow to import: on first use)
))
KERNELS.update({"rand": rand, "randn": randn, "randint": randint, "randperm": randperm,
                "expand": _expand(KERNELS["expand"]),
                "sum": cascade_sum.sum_kernel(KERNELS["sum"]),  # PyTorch's order of adds
                # PyTorch's random streams (core's NumPy reference) compiled, for large draws
                "pytorch_normal_fill16": compiled.normal_fill16,
                "pytorch_randperm_shuffle": compiled.randperm_shuffle})


# (softmax as its decomposition computes it: the CPU's own `exp` and `sum`, PyTorch's order;
# looked up at each call, as the compiled exp takes the table's entry once numba loads)
KERNELS.update(softmax_kernels(np, _quiet(), lambda a: KERNELS["exp"](a),
                               lambda a, dims, keepdim: KERNELS["sum"](a, dims, keepdim)))

# (var and std add in PyTorch's order too; a 0-d result stays 0-d: ascontiguousarray's is 1-d)
KERNELS["variance"] = variance_kernel(
    KERNELS["sum"], np.sqrt, lambda a: np.ascontiguousarray(a) if np.ndim(a) else np.asarray(a))

_WIDER_SCAN = {np.dtype(np.float32): np.float64, np.dtype(np.complex64): np.complex128}


def _cumsum(shared):
    """PyTorch's CPU cumsum keeps its running sum in double (complex double) for float32
    (complex64) and rounds each output to the dtype: so here too (in float32 itself it
    would round every step)."""
    def kernel(x, dim):
        wide = _WIDER_SCAN.get(x.dtype) if type(x) is np.ndarray else None
        if wide is None:
            return shared(x, dim)
        return np.add.accumulate(x, axis=dim, dtype=wide).astype(x.dtype, order="C")
    return kernel


KERNELS["cumsum"] = _cumsum(KERNELS["cumsum"])


def _float8_cast(cast):
    """The cast kernel, float8 through float32 as PyTorch converts: into a float8 dtype
    with its rounding and saturation (to_float8), out of one exactly."""
    float8 = frozenset(_NP[d] for d in FLOAT8_DTYPES)

    def kernel(x, dtype):
        if x.dtype in float8:
            x = x.astype(np.float32)
        if dtype in FLOAT8_DTYPES:
            return to_float8(x.real if x.dtype.kind == "c" else x, dtype.name)
        return cast(x, dtype)
    return kernel


KERNELS["cast"] = _float8_cast(KERNELS["cast"])


_EXP_WIDE_MAX = 1024
_F32 = np.dtype(np.float32)


def _small_float32(x, out) -> bool:
    """Whether `exp`/`sigmoid` take their PyTorch-rounded path: a row-major float32 array
    of up to `_EXP_WIDE_MAX` elements, into a writable `out` if any."""
    return type(x) is np.ndarray and x.dtype == _F32 and x.size <= _EXP_WIDE_MAX and \
        x.flags.c_contiguous and (out is None or out.flags.writeable)


def _exp_rounded_once(exp):
    """float32 `exp` computed in float64 and rounded once. NumPy's float32 SIMD exp is an
    ulp off the correctly rounded result on ~40% of inputs, PyTorch's CPU exp (SLEEF, under
    1 ulp) on ~1%: so nearly every result agrees with PyTorch's bit for bit (exp(log(r))
    gives r back, as a box decoder's exp(log(gt/anchor)) needs). Up to `_EXP_WIDE_MAX`
    elements only: the float64 loop and the two casts cost ~2.5x NumPy's float32 loop
    (~+70 us at 4k elements), a few us below 1k; larger arrays keep the float32 loops
    (and the compiled one, compiled.py)."""
    def kernel(x, out=None):
        if not _small_float32(x, out):
            return exp(x, out=out)  # (a view: the kernel lays its result out as PyTorch's)
        wide = exp(x.astype(np.float64))
        if out is None:
            return wide.astype(_F32)
        np.copyto(out, wide, casting="same_kind")
        return out
    kernel.__name__ = kernel.__qualname__ = "exp"
    return kernel


KERNELS["exp"] = _exp_rounded_once(KERNELS["exp"])


def _sigmoid_as_torch(sigmoid, exp):
    """float32 sigmoid as PyTorch's CPU kernel computes it, 1 / (1 + exp(-x)) in float32
    with `exp` rounded once (above): its bits nearly always, and its 0 below -88.7 where
    exp(-x) overflows (the e / (1 + e) form gives denormals there). Up to `_EXP_WIDE_MAX`
    elements, as `exp`; the compiled loop takes larger arrays (compiled.py)."""
    def kernel(x, out=None):
        if type(x) is np.ndarray and x.dtype in (_F16, _BF16):
            # PyTorch's reduced-float kernel: the float32 form on the widened input (exp
            # rounded once), then rounded to the input's dtype
            with np.errstate(over="ignore"):
                # (asarray: a 0-d input's exp is a NumPy scalar, not an array)
                e = np.asarray(np.exp(np.negative(x, dtype=np.float64)), dtype=_F32)
            y = np.reciprocal(np.add(e, np.float32(1), out=e), out=e).astype(x.dtype)
            if out is None:
                return y
            np.copyto(out, y, casting="unsafe")
            return out
        if not _small_float32(x, out):
            return sigmoid(x, out=out)
        with np.errstate(over="ignore"):
            e = exp(np.negative(x))
        return np.reciprocal(np.add(e, np.float32(1), out=e), out=out)
    kernel.__name__ = kernel.__qualname__ = "sigmoid"
    return kernel


KERNELS["sigmoid"] = _sigmoid_as_torch(KERNELS["sigmoid"], KERNELS["exp"])
_SELECT_MIN = 4096  # elements: below, NumPy's where costs less than the five passes
_SELECT_BITS = {2: np.int16, 4: np.int32, 8: np.int64}


def _bit_select(where):
    """`where(cond, x, y)` of one-shape row-major arrays of one 2-, 4- or 8-byte dtype as a
    select of their bits, `((x ^ y) & -cond) ^ y`: five vectorised passes, where NumPy's
    where branches on each element (~25 ns each on random conditions, ~15x a multiply).
    The same bits (NaN payloads and signed zeros included)."""
    def kernel(cond, x, y):
        if type(x) is np.ndarray and type(y) is np.ndarray and type(cond) is np.ndarray \
                and x.size >= _SELECT_MIN and x.dtype == y.dtype and \
                x.dtype.kind in "fiu" and cond.dtype == np.bool_ and \
                x.shape == y.shape == cond.shape and x.flags.c_contiguous and \
                y.flags.c_contiguous and cond.flags.c_contiguous and \
                (bits := _SELECT_BITS.get(x.dtype.itemsize)) is not None:
            mask = cond.view(np.uint8).astype(bits)
            np.negative(mask, out=mask)
            out = np.bitwise_xor(x.view(bits), y.view(bits))
            out &= mask
            out ^= y.view(bits)
            return out.view(x.dtype)
        return where(cond, x, y)
    kernel.__name__ = kernel.__qualname__ = "where"
    return kernel


KERNELS["where"] = _bit_select(KERNELS["where"])


_RUN_INDEX, _RUN_SIZE, _RUNS = 64, 4096, 8
"""index_select along the last dim copies slices for an index of at most _RUN_INDEX
entries into at least _RUN_SIZE elements, made of at most _RUNS runs."""


def _index_runs(ids: list) -> list:
    """`ids` as (start in the index, first source index, length, step) runs of
    consecutive (step 1 or -1) source indices."""
    runs, j, n = [], 0, len(ids)
    while j < n:
        first = ids[j]
        step = ids[j + 1] - first if j + 1 < n else 0
        if step not in (1, -1):
            step = length = 1
        else:
            length = 2
            while j + length < n and ids[j + length] - ids[j + length - 1] == step:
                length += 1
        runs.append((j, first, length, step))
        j += length
    return runs


def _slicing_index_select(take):
    """index_select as slice copies where it picks a few runs of neighbours along the
    last dim (a reflection or replication pad's index): NumPy's take along the last axis
    copies element by element, ~7x slower. The same elements, copied."""
    def index_select(x, index, dim):
        n = index.size
        if dim != x.ndim - 1 or dim == 0 or not 1 < n <= _RUN_INDEX or x.size < _RUN_SIZE:
            return take(x, index, dim)
        runs = _index_runs(index.reshape(-1).tolist())
        if len(runs) > _RUNS:
            return take(x, index, dim)
        out = np.empty(x.shape[:-1] + (n,), dtype=x.dtype)
        for j, first, length, step in runs:
            last = first + step * (length - 1)
            source = x[..., first:last + 1] if step == 1 else \
                x[..., first:(last - 1 if last else None):-1]
            out[..., j:j + length] = source
        return out
    index_select.__name__ = index_select.__qualname__ = "index_select"
    return index_select


KERNELS["index_select"] = _slicing_index_select(KERNELS["index_select"])


_SEARCH_ROWS = 64  # the most rows of a batched sequence searched one NumPy call each


def _searchsorted(seq, values, right=False):
    """The fused `searchsorted`: NumPy's binary search, whose order (NaN after every
    number) is PyTorch's comparisons' where `seq` holds no NaN; None where it does (a NaN
    boundary makes PyTorch's search follow its own path), for a dtype NumPy does not
    order as PyTorch does, or for more rows than are worth a Python loop."""
    if seq.dtype.kind not in "fiu" or values.dtype != seq.dtype or \
            (seq.dtype.kind == "f" and np.isnan(seq).any()):
        return None
    side = "right" if right else "left"
    if seq.ndim == 1:
        return np.asarray(np.searchsorted(seq, values, side=side), dtype=np.int64)
    rows = seq.reshape(-1, seq.shape[-1])
    if rows.shape[0] > _SEARCH_ROWS:
        return None
    flat = values.reshape(rows.shape[0], -1)
    out = np.empty(flat.shape, dtype=np.int64)
    for i in range(rows.shape[0]):
        out[i] = np.searchsorted(rows[i], flat[i], side=side)
    return out.reshape(values.shape)


KERNELS["searchsorted"] = _searchsorted


def _bincount(x, minlength=0):
    """The fused `bincount`: NumPy's (None where `x` holds a negative value)."""
    if x.size and x.min() < 0:
        return None
    return np.bincount(x, minlength=minlength).astype(np.int64, copy=False)


def _bincount_weighted(weights, x, minlength=0):
    """The fused `bincount_weighted`: a sequential scatter-add in `weights`' dtype (as
    scatter_add's `ufunc.at`: NumPy's bincount would sum float32 weights in float64);
    None where `x` holds a negative value."""
    if x.size and x.min() < 0:
        return None
    if weights.dtype == np.float64:  # (its sum from 0.0 in the order of `x`)
        return np.bincount(x, weights, minlength=minlength)
    out = np.zeros(max(minlength, int(x.max()) + 1 if x.size else 0), dtype=weights.dtype)
    np.add.at(out, x, weights)
    return out


KERNELS["bincount"] = _bincount


def _unique(x, return_inverse=False, return_counts=False):
    """The fused `unique`: a stable sort (half precision ordered as float32, as `topk`)
    and the starts of runs of unequal (`!=`: each NaN its own run) neighbours."""
    flat = x.reshape(-1)
    key = flat.astype(np.float32) if flat.dtype in (_F16, _BF16) else flat
    order = np.argsort(key, kind="stable")
    s = flat[order]
    starts = np.empty(s.shape, dtype=np.bool_)
    starts[:1] = True
    np.not_equal(s[1:], s[:-1], out=starts[1:])
    inverse = counts = None
    if return_inverse:
        inverse = np.empty(order.shape, dtype=np.int64)
        inverse[order] = np.cumsum(starts, dtype=np.int64) - 1
        inverse = inverse.reshape(x.shape)
    if return_counts:
        counts = np.diff(np.flatnonzero(starts), append=s.size).astype(np.int64, copy=False)
    return s[starts], inverse, counts


KERNELS["unique"] = _unique
KERNELS["bincount_weighted"] = _bincount_weighted

# numba-compiled loops where they beat NumPy (compiled.py says where; numba loads lazily)
KERNELS.update({op: compiled.unary(op, KERNELS[op]) for op in ("sigmoid", "tanh", "exp")})
KERNELS.update({op: compiled.backward(op, KERNELS[op])
                for op in ("tanh_backward", "sigmoid_backward")})
KERNELS.update({op: getattr(compiled, op)(KERNELS[op])
                for op in ("relu", "relu_backward", "max_pool", "max_pool_backward")})
KERNELS["erf"] = compiled.erf(KERNELS["erf"])
KERNELS["mode_index"] = compiled.mode_index
