"""Indexing kernels: getitem/setitem with PyTorch's rules, assign, and the gather/scatter
family along one dimension."""

from __future__ import annotations

from typing import Any

from ember.backends.xp.lib import OVERLAP, ArrayLib, Kernel
from ember.core.backend import logical_to_physical_perm


def kernels(lib: ArrayLib) -> dict[str, Kernel]:
    xp, read_only, writable = lib.xp, lib.read_only, lib.writable
    exact_at = lib.hooks.exact_ufunc_at or (lambda ufunc, dtype: True)

    def reduce_at(ufunc, out, key, values):
        """`ufunc.at(out, key, values)`: unbuffered, so repeated indices all reduce. In
        rounds of plain fancy writes where the array module has no exact `at` for this
        ufunc and dtype (CuPy: multiply, float64 maximum/minimum, add on 8- and 16-bit
        types)."""
        if exact_at(ufunc, out.dtype):
            try:
                if len(key) > 1 and out.flags.c_contiguous:
                    # one flat index: NumPy's fast 1-d loop (with several index arrays it
                    # takes ~140 ns an element); the same elements in the same order
                    ufunc.at(out.reshape(-1), _flat_index(xp, key, out.shape, values.shape),
                             values.reshape(-1))
                else:
                    ufunc.at(out, key, values)
                return
            except (AttributeError, NotImplementedError, TypeError):
                pass
        _reduce_by_rounds(xp, ufunc, out, key, values)

    def add_at(x, key, value):
        """`xp.add.at(x, key, value)`; through one flat index where x is a writeable
        row-major array of 1024 elements or more, not much larger than the values (a
        position array of x's size is made): NumPy's fast 1-d loop, where a key of
        slices and index arrays takes ~140 ns an element. Repeats of a position add in
        the same order either way (the index arrays' row-major order)."""
        if _FLAT_AT_MIN <= x.size <= max(_FLAT_AT_SIZE, 8 * getattr(value, "size", 1)) and \
                x.flags.c_contiguous and x.flags.writeable:
            where = xp.arange(x.size).reshape(x.shape)[key]
            xp.add.at(x.reshape(-1), where.reshape(-1),
                      xp.broadcast_to(value, where.shape).reshape(-1))
        else:
            xp.add.at(x, key, value)

    def getitem(x, *tensors, index, shape=None):
        x, index = _select_ints_first(x, index)
        result = x[_key(index, tensors)]
        if not tensors and _NONE in index and result.size:
            return _unsqueeze_strides(xp, x, index, result)
        if not tensors or result.ndim < 2:
            return result
        return _in_index_order(xp, result, x, index, tensors)

    def setitem(x, value, *tensors, index, accumulate=False):
        x, index = _select_ints_first(x, index)
        key = _key(index, tensors)
        try:
            if accumulate and tensors:
                add_at(x, key[:-1], value)  # unbuffered: repeated indices all add
            elif accumulate:
                x[key] += value
            else:
                x[key] = value
        except ValueError as err:
            if read_only(x):
                raise RuntimeError(OVERLAP) from None
            raise RuntimeError(f"setitem: {err}") from None

    def assign(dst, src, overlapping=False):
        # (`overlapping`: a fill, which PyTorch writes into shared elements too)
        if read_only(dst):
            if not overlapping:
                raise RuntimeError(OVERLAP)
            dst = writable(dst)
        xp.copyto(dst, src)

    def gather(x, index, dim):
        x = _fit(x, index, dim)
        if index.size >= _FLAT_GATHER and dim == index.ndim - 1 > 0 and x.size and \
                int(index.min()) >= 0:
            return flat_gather(x, index)
        # (row-major as ATen's, whatever the index's layout: NumPy keeps a transposed one's)
        return xp.ascontiguousarray(xp.take_along_axis(x, index, axis=dim))

    def flat_gather(x, index):
        """take_along_axis along the last dim through one flat position per element of a
        row-major copy of `x`: its row's offset plus the index (~3x faster: the index
        arrays it makes for the other dims are slow). The same elements: `index` is
        non-negative here (take_along_axis wraps negatives)."""
        x = xp.ascontiguousarray(x)
        offsets = 0  # each row's, broadcast (small)
        for d, size in enumerate(index.shape[:-1]):
            if size > 1:
                offsets = offsets + (xp.arange(size) * (x.strides[d] // x.itemsize)).reshape(
                    (size,) + (1,) * (index.ndim - 1 - d))
        # (a fresh sum: NumPy's in-place add of a broadcast operand is ~10x slower)
        return xp.take(x.reshape(-1), xp.add(index, offsets))

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


_FLAT_AT_SIZE = 1 << 20  # elements: up to it, a position array costs little beside add.at
_FLAT_AT_MIN = 1024  # below, making it costs more Python calls than the slow loop saves


def along_axis(xp: Any, index: Any, dim: int) -> tuple:
    """The advanced-indexing key that pairs each element of `index` with its own position
    on every dimension but `dim` (what take/put_along_axis index with): `a[key]` reads
    `a[i0, ..., index[i0, ...], ...]`, and writes through it go to the same places."""
    ndim = index.ndim
    dim = dim + ndim if dim < 0 else dim
    return tuple(index if d == dim else
                 xp.arange(n).reshape((1,) * d + (n,) + (1,) * (ndim - d - 1))
                 for d, n in enumerate(index.shape))


def _flat_index(xp: Any, key: tuple, shape: tuple, like: tuple) -> Any:
    """The row-major positions in an array of `shape` that the index arrays `key` (one a
    dimension) point at, broadcast to `like` and flattened."""
    flat = 0
    for k, stride in zip(key, _row_major_strides(shape)):
        flat = flat + k * stride if stride != 1 else flat + k
    return xp.broadcast_to(flat, like).reshape(-1)


def _reduce_by_rounds(xp: Any, ufunc: Any, out: Any, key: tuple, values: Any) -> None:
    """`ufunc.at(out, key, values)` from fancy reads and writes: each round takes, for
    every target position, the first of its pending values, so no round writes a
    position twice."""
    shape = out.shape
    flat_target = _flat_index(xp, key, shape, values.shape)
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


_FLAT_GATHER = 4096  # index elements: from here gather takes through flat positions


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


def _in_index_order(xp: Any, result: Any, x: Any, index: tuple, tensors: tuple) -> Any:
    """`result` of advanced indexing laid out as PyTorch lays it out. NumPy puts the
    indexed dims' block outermost in memory (`x[:, idx]` of a row-major `x` comes back
    strided), PyTorch orders the result by TensorIterator's rule over `x` (its indexed
    dims made stride 0) and the index tensors (see `_index_order`): a row-major `x` and
    row-major indices give a row-major result, which a later `view` needs."""
    ndim = result.ndim
    if _plainly_row_major(x) and all(t.ndim < 2 or _plainly_row_major(t) for t in tensors):
        if _plainly_row_major(result):  # (the common case, and its answer)
            return result
        perm = list(range(ndim))
    else:
        perm = _index_order(result.shape, x, index, tensors)
    expected = _dense_strides(result.shape, perm, result.itemsize)
    if result.strides == expected or not result.size:
        return result
    ordered = result.transpose(perm)
    if not ordered.flags.c_contiguous:
        inverse = [0] * ndim
        for i, d in enumerate(perm):
            inverse[d] = i
        result = xp.ascontiguousarray(ordered).transpose(inverse)
    if result.strides != expected:  # dense in that order: only size-1 dims' strides differ
        result = xp.lib.stride_tricks.as_strided(result, result.shape, expected)
    return result


def _plainly_row_major(a: Any) -> bool:
    """Row-major with no size-1 dim, whose stride (which NumPy's flags ignore) PyTorch's
    layout rule reads."""
    return a.flags.c_contiguous and 1 not in a.shape


def _dense_strides(shape: tuple, perm: list[int], itemsize: int) -> tuple:
    """The strides (in bytes) of a dense array of `shape` whose dims lie outermost-first
    in `perm`, as PyTorch gives them (a size-1 dim too)."""
    strides = [0] * len(shape)
    step = itemsize
    for d in reversed(perm):
        strides[d] = step
        step *= shape[d]
    return tuple(strides)


def _index_order(shape: tuple, x: Any, index: tuple, tensors: tuple) -> list[int]:
    """The memory order (outermost first) of PyTorch's result of `x[index]` with tensor
    indices (ints already selected), by TensorIterator's rule over what ATen's
    AdvancedIndex feeds it: `x` after its slices and Nones, restrided so the indexed dims
    become the broadcast index block with stride 0 (where they stood when adjacent, else
    in front), and each index tensor viewed with size-1 dims around it. Size-1 dims keep
    the strides PyTorch's views give them, which break ties."""
    strides, positions, d = [], [], 0
    for e in index:
        if e[0] == "none":  # unsqueeze's stride
            strides.append(x.shape[d] * x.strides[d] if d < x.ndim else x.itemsize)
            continue
        if e[0] == "tensor":
            positions.append(len(strides))
        strides.append(x.strides[d] * (e[3] if e[0] == "slice" and e[3] else 1))
        d += 1
    block = len(shape) - (len(strides) - len(positions))
    if positions == list(range(positions[0], positions[-1] + 1)):
        before = positions[0]
        src = strides[:before] + [0] * block + strides[positions[-1] + 1:]
    else:
        before = 0
        src = [0] * block + [st for k, st in enumerate(strides) if k not in positions]
    after = len(shape) - before - block
    operands = [tuple(src)]
    for t in tensors:  # expanded to the block, then viewed with the 1s around it
        sizes, strides = _expanded(t.shape, t.strides, shape[before:before + block])
        sizes = (1,) * before + sizes + (1,) * after
        strides = _view_strides(sizes[before:before + block], strides, sizes)
        operands.append(_broadcast_strides(strides, shape, sizes))
    return logical_to_physical_perm(tuple(shape), operands)[0]


def _expanded(sizes: tuple, strides: tuple, target: tuple) -> tuple[tuple, tuple]:
    """`expand`'s sizes and strides of an array of `sizes`/`strides` to `target`
    (c10's inferExpandGeometry): a new or grown dim has stride 0, except a new dim of
    size 1, which takes the stride a row-major view would give it."""
    if sizes == target:
        return sizes, strides
    out = [0] * len(target)
    lead = len(target) - len(sizes)
    for i in reversed(range(len(target))):
        j = i - lead
        if j >= 0:
            out[i] = 0 if sizes[j] != target[i] else strides[j]
        else:
            inner = target[i + 1] * out[i + 1] if i + 1 < len(target) else 1
            out[i] = inner if target[i] == 1 else 0
    return tuple(target), tuple(out)


def _view_strides(old_shape: tuple, old_strides: tuple, shape: tuple) -> tuple:
    """The strides `view(shape)` gives an array of `old_shape`/`old_strides` (ATen's
    computeStride, for a shape that only adds or drops size-1 dims): size-1 dims get the
    strides a dense chunk would give them, which TensorIterator's ordering reads."""
    if not old_shape:
        return (1,) * len(shape)
    strides = [0] * len(shape)
    view_d = len(shape) - 1
    base, tensor_numel, view_numel = old_strides[-1], 1, 1
    for tensor_d in reversed(range(len(old_shape))):
        tensor_numel *= old_shape[tensor_d]
        if tensor_d == 0 or (old_shape[tensor_d - 1] != 1 and
                             old_strides[tensor_d - 1] != tensor_numel * base):
            while view_d >= 0 and (view_numel < tensor_numel or shape[view_d] == 1):
                strides[view_d] = view_numel * base
                view_numel *= shape[view_d]
                view_d -= 1
            if tensor_d > 0:
                base, tensor_numel, view_numel = old_strides[tensor_d - 1], 1, 1
    return tuple(strides)


def _broadcast_strides(strides: tuple, shape: tuple, sizes: tuple) -> tuple:
    """An operand's strides as TensorIterator sees them over `shape`: 0 where the operand
    (of `sizes`) has size 1 and `shape` does not."""
    return tuple(0 if n == 1 and m != 1 else st for n, m, st in zip(sizes, shape, strides))


_NONE = ("none",)


def _unsqueeze_strides(xp: Any, x: Any, index: tuple, result: Any) -> Any:
    """`result`, the view `x[key]` of a basic key with None, with PyTorch's strides for the
    dimensions None adds: it applies the key left to right, each None an `unsqueeze` of
    the tensor so far, whose stride is size * stride of the dimension it goes before (of
    `x`, as ints and slices further right are not applied yet), or 1 at the end. NumPy
    gives them 0."""
    strides = list(result.strides)
    out_dim = in_dim = 0
    for entry in index:
        if entry[0] == "none":
            strides[out_dim] = x.shape[in_dim] * x.strides[in_dim] if in_dim < x.ndim else \
                x.itemsize
            out_dim += 1
        else:
            in_dim += 1
            out_dim += entry[0] != "int"
    return xp.lib.stride_tricks.as_strided(result, result.shape, tuple(strides))


def _select_ints_first(x: Any, index: tuple) -> tuple[Any, tuple]:
    """PyTorch's rule: with tensor indices present, ints select before the advanced
    indexing (NumPy would treat them as advanced). Returns the view and the rest."""
    if not any(e[0] == "int" for e in index) or not any(e[0] == "tensor" for e in index):
        return x, index
    first = tuple(e[1] if e[0] == "int" else slice(None) for e in index if e[0] != "none")
    rest = tuple(e for e in index if e[0] != "int")
    return x[first + (Ellipsis,)], rest
