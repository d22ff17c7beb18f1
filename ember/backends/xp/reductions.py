"""Reductions over some or all dimensions, arg-reductions, cumsum and topk."""

from __future__ import annotations

from math import nan, prod

from ember.backends.xp.lib import ArrayLib, Kernel, through_float

_PARTIAL_SHARE = 4
"""topk partitions (rather than sorts) a row of at least this many times `k` elements."""


def variance_kernel(total: Kernel, sqrt: Kernel, as_array: Kernel) -> Kernel:
    """The fused kernel `variance` over a backend's own `sum` kernel `total` (the CPU's
    adds in PyTorch's order): (var or std, mean) over `dims` as PyTorch's CPU kernels
    reduce them, in float64 whatever the input's dtype and rounded once to it; the
    deviations are taken from the float64 mean, or (`own_mean`: its all-reduce of var and
    std) from the mean in the input's own dtype. See ember.core.ops.reduction._moments,
    whose decomposition this computes in the same steps."""
    def variance(x, dims, correction, keepdim, root, own_mean):
        n = x.size if dims is None else prod(x.shape[d] for d in dims)
        wide = x.astype("float64", copy=False)
        centre = total(wide, dims, True) / (n if n else nan)
        shift = centre
        if own_mean:
            shift = (total(x, dims, True) / x.dtype.type(n)).astype("float64")
        deviation = wide - shift
        out = total(deviation * deviation, dims, keepdim) / (
            n - correction if n - correction > 0 else nan)
        if root:
            out = sqrt(out)
        return (as_array(through_float(out, x.dtype).astype(x.dtype, copy=False)),
                as_array(through_float(centre.reshape(out.shape), x.dtype).astype(
                    x.dtype, copy=False)))
    return variance


def kernels(lib: ArrayLib) -> dict[str, Kernel]:
    xp, low_precision = lib.xp, lib.low_precision
    float32, int64 = xp.float32, xp.int64
    if hasattr(xp, "errstate"):
        # NumPy: the ufuncs' own reduce and accumulate (np.sum's wrapper costs ~6 us more);
        # their IEEE warnings (inf - inf) name this module, which the CPU backend silences
        # as PyTorch is silent, where np.sum's name NumPy's own and reach the user
        add_reduce, multiply_reduce, add_accumulate, multiply_accumulate = (
            xp.add.reduce, xp.multiply.reduce, xp.add.accumulate, xp.multiply.accumulate)
    else:
        add_reduce, multiply_reduce = xp.sum, xp.prod

        def add_accumulate(x, axis, dtype=None):
            return xp.cumsum(x, axis=axis, dtype=dtype)

        def multiply_accumulate(x, axis, dtype=None):
            return xp.cumprod(x, axis=axis, dtype=dtype)

    make_array, ascontiguousarray = lib.as_array, xp.ascontiguousarray

    def as_array(result, kept=False):
        # PyTorch allocates reduction and scan results row-major whatever the input's
        # layout (NumPy keeps a transposed input's order): a later `view` relies on it.
        # `kept`: a keepdim result of an input that is not row-major, whose size-1 dims
        # NumPy may give the input's strides (its flags ignore them); PyTorch's are
        # row-major's.
        result = make_array(result)
        if not result.flags.c_contiguous:
            return ascontiguousarray(result)
        return result.reshape(-1).reshape(result.shape) if kept else result

    def accumulating(f, half=None):
        """Sum and product of half-precision values accumulate in float32, as PyTorch
        does, or by `half(x, dims, keepdim)` where given."""
        def kernel(x, dims=None, keepdim=False):
            kept = keepdim and not x.flags.c_contiguous
            if x.dtype in low_precision:
                if half is not None:
                    return half(x, dims, keepdim)
                return as_array(f(x.astype(float32), axis=dims, keepdims=keepdim)
                                .astype(x.dtype), kept)
            return as_array(f(x, axis=dims, keepdims=keepdim), kept)
        return kernel

    def sequential_product(x, axis):
        """The product along `axis`, each step rounded to x's (half) dtype: the last of
        the running products (NumPy's half-precision reduce would keep float32)."""
        return xp.take(multiply_accumulate(x, axis=axis, dtype=x.dtype), -1, axis=axis)

    def half_prod(x, dims=None, keepdim=False):
        """prod of a float16/bfloat16 array as PyTorch's CPU reduction rounds it: each
        step in the dtype, in order along the dim; where the dim is contiguous in memory
        (for no dims: all of a row- or column-major array, in memory order) and holds 64
        or more, its vectorized loop keeps 4 x 16 running products side by side (lane k:
        elements k, k + 64, ...), multiplies the four 16-lane vectors pairwise, then the
        16 lanes in order, then the elements left. (AVX2's vector width, as torch's CPU
        wheels run on most x86 machines.)"""
        if dims is not None and len(dims) > 1:  # (no public form: a dim at a time)
            out = x
            for d in sorted(dims, reverse=True):
                out = half_prod(out, (d,), True)
            return out if keepdim else \
                out.reshape(tuple(n for i, n in enumerate(x.shape) if i not in dims))
        d = 0 if dims is None else dims[0]
        y = x if dims is not None else \
            (x.T if x.flags.f_contiguous and not x.flags.c_contiguous else x).reshape(-1)
        n, lanes = y.shape[d], 64
        inner = y.strides[d] == y.itemsize
        y = y.transpose([i for i in range(y.ndim) if i != d] + [d])  # (the dim last)
        if not inner or n < lanes or not n:
            out = sequential_product(y, -1) if n else xp.ones(y.shape[:-1], x.dtype)
        else:
            body = n // lanes * lanes
            acc = sequential_product(y[..., :body].reshape(y.shape[:-1] + (-1, 4, 16)), -3)
            pairs = (acc[..., 0, :] * acc[..., 1, :]) * (acc[..., 2, :] * acc[..., 3, :])
            out = sequential_product(xp.concatenate([pairs, y[..., body:]], axis=-1), -1)
        if keepdim:
            out = out.reshape((1,) * x.ndim if dims is None else x.shape[:d] + (1,) +
                              x.shape[d + 1:])
        return as_array(out, keepdim)

    def reduction(f):
        def kernel(x, dims=None, keepdim=False):
            return as_array(f(x, axis=dims, keepdims=keepdim),
                            keepdim and not x.flags.c_contiguous)
        return kernel

    def arg_reduction(f):
        def kernel(x, dim=None, keepdim=False):
            return as_array(f(x, axis=dim, keepdims=keepdim),
                            keepdim and not x.flags.c_contiguous).astype(int64, copy=False)
        return kernel

    def max_min_dim(x, dim, keepdim, largest):
        """(values, indices) of max(dim)/min(dim): argmax's index (the first maximum, or
        the first NaN) and the value there, not the reduction's (which may pick the other
        zero of a -0.0/0.0 tie)."""
        idx = (xp.argmax if largest else xp.argmin)(x, axis=dim, keepdims=True)
        values = xp.take_along_axis(x, idx, axis=dim)
        if not keepdim:
            values, idx = values.squeeze(dim), idx.squeeze(dim)
        return as_array(values), as_array(idx).astype(int64, copy=False)

    def cumsum(x, dim):
        if x.dtype in low_precision:  # accumulated in float32, each sum rounded: PyTorch's
            return as_array(add_accumulate(x.astype(float32), axis=dim).astype(x.dtype))
        return as_array(add_accumulate(x, axis=dim, dtype=x.dtype))

    def smallest(key, k):
        """The stable argsort's first `k` along the last axis (NaN last, ties by index),
        from a partition: the elements below the k-th smallest, then as many of those
        equal to it as are missing, first indices first, then a stable sort of those."""
        kth = xp.take_along_axis(key, xp.argpartition(key, k - 1, axis=-1)[..., k - 1:k], -1)
        below, tie = key < kth, key == kth
        if key.dtype.kind == "f":  # (a NaN k-th: every number is below, every NaN ties)
            nan_kth, nan = kth != kth, key != key
            below |= nan_kth & ~nan
            tie |= nan_kth & nan
        need = k - below.sum(-1, keepdims=True)
        below |= tie & (xp.cumsum(tie, -1) <= need)
        idx = xp.nonzero(below)[-1].reshape(key.shape[:-1] + (k,))
        return xp.take_along_axis(idx, xp.argsort(xp.take_along_axis(key, idx, -1), axis=-1,
                                                  kind="stable"), -1)

    def topk(x, k, dim, largest=True):
        """Indices of the k largest (smallest) along `dim`, in order, ties by index. A stable
        ascending sort puts NaN last; for the largest, sort the reversed axis and read it
        back to front, so NaN comes first and ties still keep their index order. (NumPy's
        sort of ml_dtypes' bfloat16 does not place NaN: half precision sorts as float32.)"""
        if x.dtype in low_precision:
            x = x.astype(float32)
        if 0 < k and k * _PARTIAL_SHARE <= x.shape[dim] and x.dtype.kind in "fiu" and \
                not (largest and x.dtype.kind == "f" and xp.isnan(x).any()):
            # (the largest as the smallest of a key in reverse order: a NaN, largest,
            # would be the key's largest too; NumPy's partition puts it last either way)
            key = (-x if x.dtype.kind == "f" else ~x) if largest else x
            order = xp.moveaxis(smallest(xp.moveaxis(key, dim, -1), k), -1, dim)
            return as_array(order).astype(int64, copy=False)
        if not largest:
            order = xp.argsort(x, axis=dim, kind="stable")
        else:
            n = x.shape[dim]
            order = n - 1 - xp.flip(xp.argsort(xp.flip(x, axis=dim), axis=dim, kind="stable"),
                                    axis=dim)
        return as_array(xp.take(order, xp.arange(k), axis=dim)).astype(int64, copy=False)

    return {
        "sum": accumulating(add_reduce), "prod": accumulating(multiply_reduce, half_prod),
        "max": reduction(xp.max), "min": reduction(xp.min), "all": reduction(xp.all),
        "any": reduction(xp.any), "argmax": arg_reduction(xp.argmax),
        "argmin": arg_reduction(xp.argmin), "max_min_dim": max_min_dim, "cumsum": cumsum,
        "topk": topk,
        "variance": variance_kernel(accumulating(add_reduce), xp.sqrt, as_array),
    }
