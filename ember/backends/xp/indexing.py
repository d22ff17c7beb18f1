"""Indexing kernels: getitem/setitem with PyTorch's rules, assign, and the gather/scatter
family along one dimension."""

from __future__ import annotations

from typing import Any

from ember.backends.xp.lib import OVERLAP, ArrayLib, Kernel


def kernels(lib: ArrayLib) -> dict[str, Kernel]:
    xp, read_only = lib.xp, lib.read_only
    exact_at = lib.hooks.exact_ufunc_at or (lambda ufunc, dtype: True)

    def reduce_at(ufunc, out, key, values):
        """`ufunc.at(out, key, values)`: unbuffered, so repeated indices all reduce. In
        rounds of plain fancy writes where the array module has no exact `at` for this
        ufunc and dtype (CuPy: multiply, float64 maximum/minimum, add on 8- and 16-bit
        types)."""
        if exact_at(ufunc, out.dtype):
            try:
                ufunc.at(out, key, values)
                return
            except (AttributeError, NotImplementedError, TypeError):
                pass
        _reduce_by_rounds(xp, ufunc, out, key, values)

    def getitem(x, *tensors, index, shape=None):
        x, index = _select_ints_first(x, index)
        return x[_key(index, tensors)]

    def setitem(x, value, *tensors, index, accumulate=False):
        x, index = _select_ints_first(x, index)
        key = _key(index, tensors)
        try:
            if accumulate and tensors:
                xp.add.at(x, key[:-1], value)  # unbuffered: repeated indices all add
            elif accumulate:
                x[key] += value
            else:
                x[key] = value
        except ValueError as err:
            if read_only(x):
                raise RuntimeError(OVERLAP) from None
            raise RuntimeError(f"setitem: {err}") from None

    def assign(dst, src):
        if read_only(dst):
            raise RuntimeError(OVERLAP)
        xp.copyto(dst, src)

    def gather(x, index, dim):
        return xp.take_along_axis(_fit(x, index, dim), index, axis=dim)

    def scatter(x, index, src, dim):
        out = x.copy()
        _fit(out, index, dim)[along_axis(xp, index, dim)] = _fit(src, index, None)
        return out

    def scatter_add(x, index, src, dim):
        out = x.copy()
        reduce_at(xp.add, out, along_axis(xp, index, dim), _fit(src, index, None))
        return out

    reducers = {"prod": xp.multiply, "amax": xp.maximum, "amin": xp.minimum}

    def scatter_reduce(x, index, src, dim, reduce):
        out = x.copy()
        reduce_at(reducers[reduce], out, along_axis(xp, index, dim), _fit(src, index, None))
        return out

    def index_select(x, index, dim):
        return xp.take(x, index.reshape(-1), axis=dim)

    def nonzero(x):
        return xp.argwhere(x).astype(xp.int64, copy=False)

    return {"getitem": getitem, "setitem": setitem, "assign": assign, "gather": gather,
            "scatter": scatter, "scatter_add": scatter_add, "scatter_reduce": scatter_reduce,
            "index_select": index_select, "nonzero": nonzero}


def along_axis(xp: Any, index: Any, dim: int) -> tuple:
    """The advanced-indexing key that pairs each element of `index` with its own position
    on every dimension but `dim` (what take/put_along_axis index with): `a[key]` reads
    `a[i0, ..., index[i0, ...], ...]`, and writes through it go to the same places."""
    ndim = index.ndim
    dim = dim + ndim if dim < 0 else dim
    return tuple(index if d == dim else
                 xp.arange(n).reshape((1,) * d + (n,) + (1,) * (ndim - d - 1))
                 for d, n in enumerate(index.shape))


def _reduce_by_rounds(xp: Any, ufunc: Any, out: Any, key: tuple, values: Any) -> None:
    """`ufunc.at(out, key, values)` from fancy reads and writes: each round takes, for
    every target position, the first of its pending values, so no round writes a
    position twice."""
    shape = out.shape
    flat_target = 0
    for k, stride in zip(key, _row_major_strides(shape)):
        flat_target = flat_target + xp.broadcast_to(k, values.shape).ravel() * stride
    flat_values = values.ravel()
    flat_out = out.reshape(-1)
    while flat_target.size:
        order = xp.argsort(flat_target, kind="stable")
        sorted_target = flat_target[order]
        first = xp.ones(sorted_target.shape, dtype=bool)
        first[1:] = sorted_target[1:] != sorted_target[:-1]
        take = order[first]
        t = flat_target[take]
        flat_out[t] = ufunc(flat_out[t], flat_values[take])
        keep = xp.ones(flat_target.shape, dtype=bool)
        keep[take] = False
        flat_target, flat_values = flat_target[keep], flat_values[keep]
    out[...] = flat_out.reshape(shape)


def _row_major_strides(shape: tuple) -> list[int]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return strides[::-1]


def _fit(x: Any, index: Any, dim: int | None) -> Any:
    """`x` cut down to `index`'s extent on every dimension but `dim`."""
    return x[tuple(slice(None) if d == dim else slice(0, s) for d, s in enumerate(index.shape))]


def _key(index: tuple, tensors: tuple) -> tuple:
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


def _select_ints_first(x: Any, index: tuple) -> tuple[Any, tuple]:
    """PyTorch's rule: with tensor indices present, ints select before the advanced
    indexing (NumPy would treat them as advanced). Returns the view and the rest."""
    if not any(e[0] == "int" for e in index) or not any(e[0] == "tensor" for e in index):
        return x, index
    first = tuple(e[1] if e[0] == "int" else slice(None) for e in index if e[0] != "none")
    rest = tuple(e for e in index if e[0] != "int")
    return x[first + (Ellipsis,)], rest
