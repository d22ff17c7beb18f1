"""NumPy kernels for every primitive op (semantics: ember.core.ops' docstring).

Kernels trust their inputs: core has checked shapes, dtypes and devices. They always
return real `ndarray`s (NumPy turns 0-d results into scalars, which `_arr` undoes).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ember.backends.cpu import blas
from ember.core.backend import ALL_DTYPES, ViewNotPossible, bfloat16, numpy_dtype

_NP = {d: numpy_dtype(d) for d in ALL_DTYPES}
_LOW_PRECISION = {np.dtype(np.float16), _NP[bfloat16]}
_BF16, _BOOL = _NP[bfloat16], np.dtype(np.bool_)
_GEMM_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_rng = np.random.Generator(np.random.PCG64(0))
_OVERLAP = ("unsupported operation: more than one element of the written-to tensor refers "
            "to a single memory location. Please clone() the tensor before performing the "
            "operation.")


def manual_seed(seed: int) -> None:
    global _rng
    _rng = np.random.Generator(np.random.PCG64(seed))


def _arr(x: Any) -> np.ndarray:
    return x if type(x) is np.ndarray else np.asarray(x)


def empty(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    return np.empty(shape, _NP[dtype])


# -- elementwise ----------------------------------------------------------------------

def _bf16_call(f, args, out):
    """ml_dtypes' bfloat16 ignores NumPy's weak-scalar rule (`bf16 + 2.0` gives float32):
    make scalars bfloat16 arrays and keep a bfloat16 result."""
    args = tuple(a if type(a) is np.ndarray else np.asarray(a, _BF16) for a in args)
    result = _arr(f(*args, out=out))
    return result if result.dtype in (_BF16, _BOOL) else result.astype(_BF16)


def _is_bf16(args) -> bool:
    first = args[0] if type(args[0]) is np.ndarray else args[-1]
    return first.dtype == _BF16


def _quiet(f):
    """Run a ufunc without NumPy's floating-point warnings (PyTorch gives inf/nan
    silently)."""
    def kernel(*args, out=None):
        if out is not None and not out.flags.writeable:
            raise RuntimeError(_OVERLAP)
        with np.errstate(all="ignore"):
            if _is_bf16(args):
                return _bf16_call(f, args, out)
            return _arr(f(*args, out=out))
    return kernel


def _plain(f):
    def kernel(*args, out=None):
        if out is not None and not out.flags.writeable:
            raise RuntimeError(_OVERLAP)
        if _is_bf16(args):
            return _bf16_call(f, args, out)
        return _arr(f(*args, out=out))
    return kernel


def _sigmoid(x, out=None):
    # tanh form: no overflow for large |x|, and exact to rounding
    y = np.tanh(np.multiply(x, 0.5, out=out), out=out)
    y *= 0.5
    y += 0.5
    return y


def _rsqrt(x, out=None):
    return np.reciprocal(np.sqrt(x, out=out), out=out)


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


def _erf(x, out=None):
    y = _erf_values(x)
    if out is not None:
        np.copyto(out, y)
        return out
    return y


def _erf_values(x):
    if x.dtype == np.float64:
        return np.vectorize(math.erf, otypes=[np.float64])(x)
    # Numerical Recipes' erfc (fractional error < 1.2e-7), enough for 32 bits and below
    z = np.abs(x.astype(np.float64))
    t = 1.0 / (1.0 + 0.5 * z)
    poly = -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (
        0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (
            1.48851587 + t * (-0.82215223 + t * 0.17087277))))))))
    erfc = t * np.exp(poly)
    return np.where(x >= 0, 1.0 - erfc, erfc - 1.0).astype(x.dtype)


UNARY = {
    "neg": _plain(np.negative), "abs": _plain(np.abs), "sign": _plain(np.sign),
    "floor": _plain(np.floor), "ceil": _plain(np.ceil), "round": _plain(np.round),
    "trunc": _plain(np.trunc), "relu": _plain(_relu),
    "exp": _quiet(np.exp), "log": _quiet(np.log), "log2": _quiet(np.log2),
    "log1p": _quiet(np.log1p), "expm1": _quiet(np.expm1), "sqrt": _quiet(np.sqrt),
    "rsqrt": _quiet(_rsqrt), "sin": _plain(np.sin), "cos": _plain(np.cos),
    "tan": _plain(np.tan), "tanh": _plain(np.tanh), "sigmoid": _plain(_sigmoid),
    "erf": _plain(_erf), "asin": _quiet(np.arcsin), "acos": _quiet(np.arccos),
    "atan": _plain(np.arctan), "reciprocal": _quiet(np.reciprocal),
    "logical_not": _plain(np.logical_not), "isnan": _plain(np.isnan),
    "isinf": _plain(np.isinf), "isfinite": _plain(np.isfinite),
    "bitwise_not": _plain(np.invert),
}


def _int_safe_floor_divide(a, b, out=None):
    with np.errstate(all="ignore"):
        if np.issubdtype(np.result_type(a, b), np.integer) and np.any(np.equal(b, 0)):
            raise ZeroDivisionError("floor_divide: integer division by zero")
        return _arr(np.floor_divide(a, b, out=out))


def _int_safe_remainder(a, b, out=None):
    with np.errstate(all="ignore"):
        if np.issubdtype(np.result_type(a, b), np.integer) and np.any(np.equal(b, 0)):
            raise ZeroDivisionError("remainder: integer division by zero")
        return _arr(np.remainder(a, b, out=out))


def _pow(a, b, out=None):
    if np.issubdtype(np.result_type(a, b), np.integer) and np.any(np.less(b, 0)):
        raise RuntimeError("pow: integers to negative integer powers are not allowed")
    with np.errstate(all="ignore"):
        return _arr(np.power(a, b, out=out))


BINARY = {
    "add": _plain(np.add), "sub": _plain(np.subtract), "mul": _plain(np.multiply),
    "div": _quiet(np.true_divide), "pow": _pow,
    "maximum": _plain(np.maximum), "minimum": _plain(np.minimum),
    "remainder": _int_safe_remainder, "floor_divide": _int_safe_floor_divide,
    "atan2": _plain(np.arctan2),
    "eq": _plain(np.equal), "ne": _plain(np.not_equal), "lt": _plain(np.less),
    "le": _plain(np.less_equal), "gt": _plain(np.greater), "ge": _plain(np.greater_equal),
    "logical_and": _plain(np.logical_and), "logical_or": _plain(np.logical_or),
    "logical_xor": _plain(np.logical_xor), "bitwise_and": _plain(np.bitwise_and),
    "bitwise_or": _plain(np.bitwise_or), "bitwise_xor": _plain(np.bitwise_xor),
}


def where(cond, x, y):
    ref = x if type(x) is np.ndarray else y
    if type(ref) is np.ndarray and (type(x) is not np.ndarray or type(y) is not np.ndarray):
        # a Python scalar takes the array's dtype (np.where would widen to float64)
        x = x if type(x) is np.ndarray else np.asarray(x, ref.dtype)
        y = y if type(y) is np.ndarray else np.asarray(y, ref.dtype)
    return _arr(np.where(cond, x, y))


def clamp(x, min=None, max=None):  # noqa: A002
    return _arr(np.clip(x, min, max)).astype(x.dtype, copy=False)


def cast(x, dtype):
    return x.astype(_NP[dtype])


# -- reductions -----------------------------------------------------------------------

def _accumulating(f):
    """Sum and product of half-precision values accumulate in float32, as PyTorch does."""
    def kernel(x, dims=None, keepdim=False):
        if x.dtype in _LOW_PRECISION:
            return _arr(f(x.astype(np.float32), axis=dims, keepdims=keepdim).astype(x.dtype))
        return _arr(f(x, axis=dims, keepdims=keepdim))
    return kernel


def _reduce(f):
    def kernel(x, dims=None, keepdim=False):
        return _arr(f(x, axis=dims, keepdims=keepdim))
    return kernel


def _arg(f):
    def kernel(x, dim=None, keepdim=False):
        return _arr(f(x, axis=dim, keepdims=keepdim)).astype(np.int64, copy=False)
    return kernel


def cumsum(x, dim):
    return np.cumsum(x, axis=dim, dtype=x.dtype)


# -- shapes and views -----------------------------------------------------------------

def reshape(x, shape, copy=True):
    if copy:
        return np.reshape(x, shape, copy=True)
    try:
        return np.reshape(x, shape, copy=False)
    except ValueError:
        raise ViewNotPossible("reshape: a view is not possible for these strides") from None


def permute(x, dims):
    return np.transpose(x, dims)


def expand(x, shape):
    lead = len(shape) - x.ndim
    target = tuple(s if n == -1 else n for s, n in zip((1,) * lead + x.shape, shape))
    return np.broadcast_to(x, target)


def flip(x, dims):
    return np.flip(x, dims).copy()


def clone(x):
    return np.array(x, copy=True, order="C")


def tril(x, diagonal=0):
    return np.tril(x, diagonal)


def triu(x, diagonal=0):
    return np.triu(x, diagonal)


# -- indexing -------------------------------------------------------------------------

def _key(index, tensors):
    key = []
    for entry in index:
        kind = entry[0]
        if kind == "int":
            key.append(entry[1])
        elif kind == "slice":
            key.append(slice(entry[1], entry[2], entry[3]))
        elif kind == "none":
            key.append(None)
        else:
            key.append(tensors[entry[1]])
    key.append(Ellipsis)  # keeps 0-d results as arrays (views), not NumPy scalars
    return tuple(key)


def _select_ints_first(x, index):
    """PyTorch's rule: with tensor indices present, ints select before the advanced
    indexing (NumPy would treat them as advanced). Returns the view and the rest."""
    if not any(e[0] == "int" for e in index) or not any(e[0] == "tensor" for e in index):
        return x, index
    first = tuple(e[1] if e[0] == "int" else slice(None) for e in index if e[0] != "none")
    rest = tuple(e for e in index if e[0] != "int")
    return x[first + (Ellipsis,)], rest


def getitem(x, *tensors, index, shape=None):
    x, index = _select_ints_first(x, index)
    return x[_key(index, tensors)]


def setitem(x, value, *tensors, index, accumulate=False):
    x, index = _select_ints_first(x, index)
    key = _key(index, tensors)
    try:
        if accumulate and tensors:
            np.add.at(x, key[:-1], value)
        elif accumulate:
            x[key] += value
        else:
            x[key] = value
    except ValueError as err:
        if not x.flags.writeable:
            raise RuntimeError(_OVERLAP) from None
        raise RuntimeError(f"setitem: {err}") from None


def assign(dst, src):
    if not dst.flags.writeable:
        raise RuntimeError(_OVERLAP)
    np.copyto(dst, src)


def cat(*xs, dim):
    return np.concatenate(xs, axis=dim)


def _fit(x, index, dim):
    """`x` cut down to `index`'s extent on every dimension but `dim`."""
    key = tuple(slice(None) if d == dim else slice(0, s) for d, s in enumerate(index.shape))
    return x[key]


def gather(x, index, dim):
    return np.take_along_axis(_fit(x, index, dim), index, axis=dim)


def scatter(x, index, src, dim):
    out = x.copy()
    np.put_along_axis(_fit(out, index, dim), index,
                      src[tuple(slice(0, s) for s in index.shape)], axis=dim)
    return out


def scatter_add(x, index, src, dim):
    out = x.copy()
    grid = list(np.indices(index.shape, sparse=True))
    grid[dim] = index
    np.add.at(out, tuple(grid), src[tuple(slice(0, s) for s in index.shape)])
    return out


def index_select(x, index, dim):
    return np.take(x, index.reshape(-1), axis=dim)


def nonzero(x):
    return np.argwhere(x).astype(np.int64, copy=False)


# -- linear algebra -------------------------------------------------------------------

def matmul(a, b):
    if a.ndim >= 2 and b.ndim == 2 and a.dtype == b.dtype and a.dtype in _GEMM_DTYPES and \
            blas.should_use_fast_path(a.shape[-2], b.shape[1], b.shape[0]):
        fast = blas.fast_matmul(a, b)  # NumPy's OpenBLAS runs slower kernels than the CPU has
        if fast is not None:
            return fast
    return _arr(np.matmul(a, b)).astype(a.dtype, copy=False)


def einsum(*xs, equation):
    return _arr(np.einsum(equation, *xs, optimize=len(xs) > 1))


# -- creation -------------------------------------------------------------------------

def full(shape, fill_value, dtype, device=0):
    return np.full(shape, fill_value, dtype=_NP[dtype])


def arange(start, end, step, dtype, device=0):
    n = max(0, math.ceil((end - start) / step))
    return (start + np.arange(n, dtype=np.float64) * step).astype(_NP[dtype]) \
        if _NP[dtype].kind == "f" else np.arange(start, end, step).astype(_NP[dtype])


def _uniform_like(sample, shape, dtype):
    native = _NP[dtype] if _NP[dtype] in (np.dtype(np.float32), np.dtype(np.float64)) \
        else np.dtype(np.float32)
    return sample(shape, dtype=native).astype(_NP[dtype], copy=False)


def rand(shape, dtype, device=0):
    return _uniform_like(_rng.random, shape, dtype)


def randn(shape, dtype, device=0):
    return _uniform_like(_rng.standard_normal, shape, dtype)


def randint(shape, dtype, low, high, device=0):
    return _rng.integers(low, high, size=shape, dtype=np.int64).astype(_NP[dtype])


def randperm(n, dtype, device=0):
    return _rng.permutation(n).astype(_NP[dtype])


KERNELS: dict[str, Any] = {**UNARY, **BINARY}
KERNELS.update({
    "where": where, "clamp": clamp, "cast": cast,
    "sum": _accumulating(np.sum), "prod": _accumulating(np.prod),
    "max": _reduce(np.max), "min": _reduce(np.min), "all": _reduce(np.all),
    "any": _reduce(np.any), "argmax": _arg(np.argmax), "argmin": _arg(np.argmin),
    "cumsum": cumsum, "reshape": reshape, "permute": permute, "expand": expand,
    "flip": flip, "clone": clone, "tril": tril, "triu": triu, "getitem": getitem,
    "setitem": setitem, "assign": assign, "cat": cat, "gather": gather, "scatter": scatter,
    "scatter_add": scatter_add, "index_select": index_select, "nonzero": nonzero,
    "matmul": matmul, "einsum": einsum, "full": full, "arange": arange, "rand": rand,
    "randn": randn, "randint": randint, "randperm": randperm,
})


# -- convolution helpers --------------------------------------------------------------

def constant_pad(x, pad, value=0):
    return np.pad(x, pad, mode="constant", constant_values=value)


def im2col(x, kernel_size, dilation, padding, stride):
    n = len(kernel_size)
    if any(padding):
        x = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    spans = [d * (k - 1) + 1 for k, d in zip(kernel_size, dilation)]
    axes = tuple(range(2, 2 + n))
    win = np.lib.stride_tricks.sliding_window_view(x, spans, axis=axes)
    # win: (N, C, *positions, *span); keep every stride-th position, dilation-th offset
    win = win[(Ellipsis,) + tuple(slice(None, None, d) for d in dilation)]
    win = win[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in stride)]
    # -> (N, C, *kernel, *out) -> (N, C * prod(kernel), prod(out))
    order = (0, 1) + tuple(range(2 + n, 2 + 2 * n)) + tuple(range(2, 2 + n))
    cols = win.transpose(order)
    out_len = math.prod(cols.shape[2 + n:])
    return np.ascontiguousarray(cols).reshape(x.shape[0], -1, out_len)


def col2im(x, output_size, kernel_size, dilation, padding, stride):
    batch, ck, _ = x.shape
    channels = ck // math.prod(kernel_size)
    outs = [(o + 2 * p - d * (k - 1) - 1) // s + 1 for o, k, d, p, s in
            zip(output_size, kernel_size, dilation, padding, stride)]
    padded = np.zeros((batch, channels) + tuple(o + 2 * p for o, p in
                                                zip(output_size, padding)), dtype=x.dtype)
    cols = x.reshape((batch, channels) + tuple(kernel_size) + tuple(outs))
    for offset in np.ndindex(*kernel_size):
        region = tuple(slice(o * d, o * d + s * (m - 1) + 1, s) for o, d, s, m in
                       zip(offset, dilation, stride, outs))
        padded[(slice(None), slice(None)) + region] += cols[(slice(None), slice(None)) +
                                                            offset]
    crop = tuple(slice(p, p + o) for p, o in zip(padding, output_size))
    return np.ascontiguousarray(padded[(slice(None), slice(None)) + crop])


KERNELS.update({"constant_pad": constant_pad, "im2col": im2col, "col2im": col2im})


# -- list ("foreach") kernels: one call updates a whole list of arrays in place --------

def _each(values, n):
    """A per-tensor list of scalars, or one scalar for every tensor."""
    return values if isinstance(values, (list, tuple)) else [values] * n


def _foreach_binary(ufunc, inplace):
    # an in-place add of a large tensor (the optimizers' updates) goes through BLAS's axpy
    # where it applies: one threaded pass, no temporary for `alpha`
    axpy = inplace and ufunc is np.add

    def kernel(xs, others, alpha=1):
        ys = _each(others, len(xs))
        if inplace:
            for x, y in zip(xs, ys):
                if axpy and type(y) is np.ndarray and blas.axpy(alpha, y, x):
                    continue
                ufunc(x, y if alpha == 1 else np.multiply(y, alpha), out=x)
            return None
        return [_arr(ufunc(x, y if alpha == 1 else np.multiply(y, alpha)))
                for x, y in zip(xs, ys)]
    return kernel


def _foreach_addcmul_(xs, t1s, t2s, value=1):
    for x, a, b, v in zip(xs, t1s, t2s, _each(value, len(xs))):
        tmp = np.multiply(a, b)
        if v != 1:
            tmp *= v
        x += tmp


def _foreach_addcdiv_(xs, t1s, t2s, value=1):
    with np.errstate(all="ignore"):
        for x, a, b, v in zip(xs, t1s, t2s, _each(value, len(xs))):
            tmp = np.divide(a, b)
            if v != 1:
                tmp *= v
            x += tmp


def _foreach_lerp_(xs, ends, weight):
    for x, end, w in zip(xs, ends, _each(weight, len(xs))):
        x += w * (end - x)


def _foreach_sqrt(xs):
    return [np.sqrt(x) for x in xs]


def _foreach_sqrt_(xs):
    for x in xs:
        np.sqrt(x, out=x)


def _foreach_neg(xs):
    return [np.negative(x) for x in xs]


def _foreach_zero_(xs):
    for x in xs:
        x.fill(0)


def _foreach_copy_(xs, srcs):
    for x, s in zip(xs, srcs):
        np.copyto(x, s, casting="unsafe")


def _fused_sgd_(params, grads, bufs, lr, momentum, dampening, weight_decay, nesterov,
                maximize):
    """SGD's update in place (every momentum buffer exists): with momentum, the buffer
    update ``m * buf + (1 - d) * g`` is one BLAS axpby and the step one axpy where they
    apply, two passes instead of four."""
    for i, (p, g) in enumerate(zip(params, grads)):
        if maximize:
            g = np.negative(g)
        if weight_decay != 0:
            g = g + np.multiply(p, weight_decay)
        if momentum != 0:
            buf = bufs[i]
            if not blas.axpby(1 - dampening, g, momentum, buf):
                buf *= momentum
                buf += g if dampening == 0 else np.multiply(g, 1 - dampening)
            g = g + np.multiply(buf, momentum) if nesterov else buf
        if not blas.axpy(-lr, g, p):
            p -= np.multiply(g, lr)


KERNELS.update({
    "_fused_sgd_": _fused_sgd_,
    "_foreach_add_": _foreach_binary(np.add, True), "_foreach_add": _foreach_binary(np.add, False),
    "_foreach_sub_": _foreach_binary(np.subtract, True),
    "_foreach_mul_": _foreach_binary(np.multiply, True),
    "_foreach_mul": _foreach_binary(np.multiply, False),
    "_foreach_div_": _foreach_binary(np.true_divide, True),
    "_foreach_div": _foreach_binary(np.true_divide, False),
    "_foreach_maximum_": _foreach_binary(np.maximum, True),
    "_foreach_addcmul_": _foreach_addcmul_, "_foreach_addcdiv_": _foreach_addcdiv_,
    "_foreach_lerp_": _foreach_lerp_, "_foreach_sqrt": _foreach_sqrt,
    "_foreach_sqrt_": _foreach_sqrt_, "_foreach_neg": _foreach_neg,
    "_foreach_zero_": _foreach_zero_, "_foreach_copy_": _foreach_copy_,
})


# -- fused kernels for composite ops and backward formulas (optional; see ops.py) -------

def _tanh_backward(y, g):
    out = np.multiply(y, y)
    np.subtract(1, out, out=out)
    return np.multiply(out, g, out=out)


def _sigmoid_backward(y, g):
    out = np.subtract(1, y)
    out *= y
    return np.multiply(out, g, out=out)


def _relu_backward(y, g):
    return np.where(y > 0, g, g.dtype.type(0))


def _exp_backward(y, g):
    return np.multiply(g, y)


def _log_backward(x, g):
    with np.errstate(all="ignore"):
        return np.divide(g, x)


def linear(x, w, b=None):
    """x @ w.T + b in one call (the transpose is a BLAS flag, not a copy)."""
    out = matmul(x, w.T)
    if b is not None:
        out += b
    return _arr(out).astype(x.dtype, copy=False)


def linear_backward(x, w, g, needs=(True, True, True)):
    """Gradients of linear: (g @ w, g2.T @ x2, g2.sum(0)) with leading dims flattened."""
    g2 = g.reshape(-1, g.shape[-1])
    gx = np.matmul(g, w) if needs[0] else None
    gw = np.matmul(g2.T, x.reshape(-1, x.shape[-1])) if needs[1] else None
    gb = g2.sum(0, dtype=np.float32 if g.dtype in _LOW_PRECISION else None).astype(
        g.dtype, copy=False) if len(needs) > 2 and needs[2] else None
    return gx, gw, gb


def cross_entropy(logits, target, ignore_index=-100, reduction="mean"):
    """Loss of (N, C) logits against class indices, and the softmax saved for backward."""
    shifted = logits - logits.max(axis=1, keepdims=True)
    probs = np.exp(shifted)
    total = probs.sum(axis=1, keepdims=True)
    probs /= total
    valid = target != ignore_index
    rows = np.arange(len(target))
    if valid.all():  # the common case, without the masking
        losses = np.log(total[:, 0])
        losses -= shifted[rows, target]
        losses = losses.astype(logits.dtype, copy=False)
    else:
        picked = shifted[rows, np.where(valid, target, 0)]
        losses = np.where(valid, np.log(total[:, 0]) - picked, 0).astype(logits.dtype)
    if reduction == "none":
        return losses, probs
    total_loss = losses.sum(dtype=np.float64)
    if reduction == "mean":
        count = valid.sum()
        total_loss = total_loss / count if count else np.nan
    return np.asarray(total_loss, dtype=logits.dtype), probs


def cross_entropy_backward(probs, target, g, ignore_index=-100, reduction="mean"):
    valid = target != ignore_index
    grad = probs.copy()
    if valid.all():  # the common case, without the masking
        grad[np.arange(len(target)), target] -= 1
    else:
        rows = np.nonzero(valid)[0]
        grad[rows, target[rows]] -= 1
        grad[~valid] = 0
    if reduction == "none":
        grad *= g[:, None]
    else:
        scale = g.item() if reduction == "sum" else g.item() / max(int(valid.sum()), 1)
        grad *= grad.dtype.type(scale)
    return grad


KERNELS.update({
    "tanh_backward": _tanh_backward, "sigmoid_backward": _sigmoid_backward,
    "relu_backward": _relu_backward, "exp_backward": _exp_backward,
    "log_backward": _log_backward, "linear": linear, "linear_backward": linear_backward,
    "cross_entropy": cross_entropy, "cross_entropy_backward": cross_entropy_backward,
})


def _sigmoid_(x):
    """In place: sigmoid(x) = 0.5 * tanh(x / 2) + 0.5."""
    x *= 0.5
    np.tanh(x, out=x)
    x *= 0.5
    x += 0.5
    return x


def lstm_cell(input_gates, hidden_gates, cx):
    """One LSTM step (gates i, f, g, o); returns hy, cy and the activated gates."""
    hidden = cx.shape[1]
    gates = np.add(input_gates, hidden_gates)
    _sigmoid_(gates[:, :2 * hidden])
    np.tanh(gates[:, 2 * hidden:3 * hidden], out=gates[:, 2 * hidden:3 * hidden])
    _sigmoid_(gates[:, 3 * hidden:])
    i, f = gates[:, :hidden], gates[:, hidden:2 * hidden]
    g, o = gates[:, 2 * hidden:3 * hidden], gates[:, 3 * hidden:]
    cy = np.multiply(f, cx)
    cy += i * g
    hy = np.tanh(cy)
    hy *= o
    return hy, cy, gates


def lstm_cell_backward(grad_hy, grad_cy, cx, cy, gates):
    hidden = cx.shape[1]
    i, f = gates[:, :hidden], gates[:, hidden:2 * hidden]
    g, o = gates[:, 2 * hidden:3 * hidden], gates[:, 3 * hidden:]
    t = np.tanh(cy)
    grad = np.empty_like(gates)
    # output gate: grad_hy * tanh(cy) * o * (1 - o)
    go = grad[:, 3 * hidden:]
    np.subtract(1, o, out=go)
    go *= o
    go *= t
    go *= grad_hy
    # cell: gc = grad_hy * o * (1 - t^2) (+ grad_cy)
    np.multiply(t, t, out=t)
    np.subtract(1, t, out=t)
    t *= o
    t *= grad_hy
    gc = t
    if grad_cy is not None:
        gc += grad_cy
    gi, gf, gg = grad[:, :hidden], grad[:, hidden:2 * hidden], grad[:, 2 * hidden:3 * hidden]
    np.subtract(1, i, out=gi)
    gi *= i
    gi *= g
    gi *= gc
    np.subtract(1, f, out=gf)
    gf *= f
    gf *= cx
    gf *= gc
    np.multiply(g, g, out=gg)
    np.subtract(1, gg, out=gg)
    gg *= i
    gg *= gc
    return grad, np.multiply(gc, f)


KERNELS.update({"lstm_cell": lstm_cell, "lstm_cell_backward": lstm_cell_backward})


def _pool_view(x, kernel_size, stride, padding, dilation, extra, fill):
    """(N, C, *out, *kernel) windows of x padded with `fill` (+ `extra` on the right)."""
    n = len(kernel_size)
    if any(padding) or any(extra):
        x = np.pad(x, [(0, 0), (0, 0)] + [(p, p + e) for p, e in zip(padding, extra)],
                   constant_values=fill)
    spans = [d * (k - 1) + 1 for k, d in zip(kernel_size, dilation)]
    win = np.lib.stride_tricks.sliding_window_view(x, spans, axis=tuple(range(2, 2 + n)))
    win = win[(Ellipsis,) + tuple(slice(None, None, d) for d in dilation)]
    return win[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in stride)]


def _tiles(x, kernel_size, outs):
    """For windows that tile the input (stride == kernel, no padding, no dilation): one
    strided view per kernel offset, each (N, C, *outs), in window order."""
    return [x[(slice(None), slice(None)) + tuple(slice(o, o + m * k, k) for o, m, k in
                                                 zip(offset, outs, kernel_size))]
            for offset in np.ndindex(*kernel_size)]


def _tiled(kernel_size, stride, padding, dilation, extra) -> bool:
    return tuple(stride) == tuple(kernel_size) and not any(padding) and not any(extra) \
        and all(d == 1 for d in dilation)


def max_pool(x, kernel_size, stride, padding, dilation, extra, need_indices=True):
    """Max pooling over 1 or 2 spatial dims: (values, window-local argmax indices). For
    tiling windows without `need_indices`, indices are None and the backward recovers
    them from the input and the values (a running maximum over k*k strided views is ~8x
    faster than gathering windows for argmax)."""
    if not need_indices and _tiled(kernel_size, stride, padding, dilation, extra):
        outs = tuple(s // k for s, k in zip(x.shape[2:], kernel_size))
        views = _tiles(x, kernel_size, outs)
        best = views[0].copy()
        for view in views[1:]:
            np.maximum(best, view, out=best)
        return best, None
    win = _pool_view(x, kernel_size, stride, padding, dilation, extra, -np.inf)
    flat = win.reshape(win.shape[:-len(kernel_size)] + (-1,))  # windows last, contiguous
    idx = flat.argmax(axis=-1)
    if any(padding) or any(extra):
        # PyTorch never picks padding: where a window's real elements are all -inf, the
        # argmax may have landed on a pad slot; take the window's first real element then
        real = np.ones((1, 1) + x.shape[2:], dtype=np.int8)
        real_win = _pool_view(real, kernel_size, stride, padding, dilation, extra, 0)
        real_flat = real_win.reshape(real_win.shape[:-len(kernel_size)] + (-1,))
        first_real = real_flat.argmax(axis=-1)  # (1, 1, *out)
        on_pad = np.take_along_axis(np.broadcast_to(real_flat, flat.shape), idx[..., None],
                                    axis=-1)[..., 0] == 0
        if on_pad.any():
            idx = np.where(on_pad, np.broadcast_to(first_real, idx.shape), idx)
    values = np.take_along_axis(flat, idx[..., None], axis=-1)[..., 0]
    return values, idx


def max_pool_backward(g, x, values, idx, input_shape, kernel_size, stride, padding, dilation,
                      extra):
    """Send each output's gradient to the input element its window picked (the first
    maximum, as PyTorch: recovered from x and the values when idx is None)."""
    if idx is None:
        if np.isnan(values).any():  # NaN windows: let argmax find the NaN, as PyTorch does
            _, idx = max_pool(x, kernel_size, stride, padding, dilation, extra)
        else:
            grad = np.zeros(input_shape, dtype=g.dtype)
            outs = values.shape[2:]
            taken = np.zeros(values.shape, dtype=bool)
            for view, gview in zip(_tiles(x, kernel_size, outs),
                                   _tiles(grad, kernel_size, outs)):
                hit = np.equal(view, values)
                hit &= ~taken
                taken |= hit
                np.multiply(g, hit, out=gview)
            return grad
    n = len(kernel_size)
    k = math.prod(kernel_size)
    cols = np.zeros(g.shape + (k,), dtype=g.dtype)
    np.put_along_axis(cols, idx[..., None], g[..., None], axis=-1)
    cols = cols.reshape(g.shape + tuple(kernel_size))
    spatial = input_shape[2:]
    padded_shape = tuple(s + 2 * p + e for s, p, e in zip(spatial, padding, extra))
    outs = g.shape[2:]
    if tuple(stride) == tuple(kernel_size) and all(d == 1 for d in dilation):
        # non-overlapping windows: interleave (out, kernel) axes and fold by reshaping
        order = (0, 1) + tuple(a for i in range(n) for a in (2 + i, 2 + n + i))
        tiled = cols.transpose(order).reshape(g.shape[:2] + tuple(o * kk for o, kk in
                                                                   zip(outs, kernel_size)))
        grad = np.zeros(g.shape[:2] + padded_shape, dtype=g.dtype)
        grad[(slice(None), slice(None)) + tuple(slice(0, t) for t in tiled.shape[2:])] = tiled
    else:
        grad = np.zeros(g.shape[:2] + padded_shape, dtype=g.dtype)
        for offset in np.ndindex(*kernel_size):
            region = tuple(slice(o * d, o * d + s * (m - 1) + 1, s) for o, d, s, m in
                           zip(offset, dilation, stride, outs))
            grad[(slice(None), slice(None)) + region] += cols[(Ellipsis,) + offset]
    crop = tuple(slice(p, p + s) for p, s in zip(padding, spatial))
    return np.ascontiguousarray(grad[(slice(None), slice(None)) + crop])


def _relu_backward_exact(y, g):
    """g where y > 0, else 0: a multiply by the mask (3x faster than np.where), with
    np.where's exact zeros kept where g holds a NaN or an infinity."""
    with np.errstate(invalid="ignore"):  # inf * 0 is replaced below
        out = np.multiply(g, (y > 0).astype(g.dtype))  # (a float mask multiplies faster)
    if not _all_finite(out):
        out = np.where(y > 0, g, g.dtype.type(0))
    return out


def _all_finite(x) -> bool:
    """Whether x holds no NaN or infinity; may say False for finite values whose squares
    overflow (callers then take an exact slow path). A BLAS dot is one pass without a
    temporary (2.5x faster than NumPy's pairwise sum, 1.1x than isfinite(...).all())."""
    with np.errstate(over="ignore", invalid="ignore"):
        if x.dtype in _GEMM_DTYPES and x.flags.c_contiguous:
            flat = x.reshape(-1)
            return bool(np.isfinite(np.dot(flat, flat)))
        return bool(np.isfinite(x.sum()))


KERNELS.update({"max_pool": max_pool, "max_pool_backward": max_pool_backward,
                "relu_backward": _relu_backward_exact})


# -- convolution as single GEMMs --------------------------------------------------------

def _conv_columns(x, kernel_size, dilation, padding, stride):
    """im2col in the layout (C*K, N*L): the whole batch as one GEMM operand."""
    n = len(kernel_size)
    if any(padding):
        x = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    spans = [d * (k - 1) + 1 for k, d in zip(kernel_size, dilation)]
    win = np.lib.stride_tricks.sliding_window_view(x, spans, axis=tuple(range(2, 2 + n)))
    win = win[(Ellipsis,) + tuple(slice(None, None, d) for d in dilation)]
    win = win[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in stride)]
    outs = win.shape[2:2 + n]
    # (N, C, *out, *k) -> (C, *k, N, *out)
    order = (1,) + tuple(range(2 + n, 2 + 2 * n)) + (0,) + tuple(range(2, 2 + n))
    cols = np.ascontiguousarray(win.transpose(order))
    return cols.reshape(-1, x.shape[0] * math.prod(outs)), outs


def conv(x, w, b, stride, padding, dilation):
    """N-d convolution (groups=1) as one GEMM; returns (out, columns kept for backward)."""
    n = x.ndim - 2
    cols, outs = _conv_columns(x, w.shape[2:], dilation, padding, stride)
    out = np.matmul(w.reshape(w.shape[0], -1), cols)  # (O, N*L)
    if b is not None:
        out += b[:, None]
    out = out.reshape((w.shape[0], x.shape[0]) + outs)
    order = (1, 0) + tuple(range(2, 2 + n))
    return np.ascontiguousarray(out.transpose(order)), cols


def conv_backward(g, x_shape, w, cols, stride, padding, dilation, needs=(True, True, True)):
    """Gradients of `conv`: (input, weight, bias), each from one GEMM (None if not needed)."""
    n = len(x_shape) - 2
    out_ch = w.shape[0]
    order = (1, 0) + tuple(range(2, 2 + n))
    g_mat = np.ascontiguousarray(g.transpose(order)).reshape(out_ch, -1)  # (O, N*L)
    gw = np.matmul(g_mat, cols.T).reshape(w.shape) if needs[1] else None
    gb = g_mat.sum(axis=1) if needs[2] else None
    gx = None
    if needs[0]:
        g_cols = np.matmul(w.reshape(out_ch, -1).T, g_mat)  # (C*K, N*L)
        kernel_size = w.shape[2:]
        outs = g.shape[2:]
        batch, channels = x_shape[0], x_shape[1]
        g_cols = g_cols.reshape((channels,) + tuple(kernel_size) + (batch,) + tuple(outs))
        padded = np.zeros((batch, channels) + tuple(s + 2 * p for s, p in
                                                    zip(x_shape[2:], padding)), dtype=g.dtype)
        for offset in np.ndindex(*kernel_size):
            region = tuple(slice(o * d, o * d + s * (m - 1) + 1, s) for o, d, s, m in
                           zip(offset, dilation, stride, outs))
            piece = g_cols[(slice(None),) + offset]  # (C, N, *out)
            padded[(slice(None), slice(None)) + region] += piece.swapaxes(0, 1)
        crop = tuple(slice(p, p + s) for p, s in zip(padding, x_shape[2:]))
        gx = np.ascontiguousarray(padded[(slice(None), slice(None)) + crop])
    return gx, gw, gb


KERNELS.update({"conv": conv, "conv_backward": conv_backward})
