"""Shape kernels: views (reshape, permute, expand) and the copies that rearrange or join
arrays (flip, clone, tril/triu, cat, constant_pad)."""

from __future__ import annotations

from ember.backends.xp.lib import ArrayLib, Kernel
from ember.core.backend import ViewNotPossible


def kernels(lib: ArrayLib) -> dict[str, Kernel]:
    xp = lib.xp

    def reshape(x, shape, copy=True):
        if copy:
            return xp.reshape(x, shape, copy=True)
        try:
            return xp.reshape(x, shape, copy=False)
        except ValueError:
            raise ViewNotPossible("reshape: a view is not possible for these strides") from None

    def permute(x, dims):
        return xp.transpose(x, dims)

    def expand(x, shape):
        lead = len(shape) - x.ndim
        target = tuple(s if n == -1 else n for s, n in zip((1,) * lead + x.shape, shape))
        if target == x.shape:  # nothing repeats: a plain (writable) view, made faster
            return x.view()
        out = xp.broadcast_to(x, target)
        if out.size == x.size:  # only size-1 dims added: no element repeats, so writable
            # (PyTorch writes into `arange(n).expand(1, -1)`: a size-1 dim's stride 0
            # aliases nothing)
            return xp.lib.stride_tricks.as_strided(x, shape=out.shape, strides=out.strides)
        return out

    def strided_view(x, shape, steps, start):
        # a view through the input's own strides: `steps` and `start` count indices
        strides = tuple(sum(a * st for a, st in zip(row, x.strides)) for row in steps)
        if any(s == 0 for s in shape):
            return xp.empty(tuple(shape), x.dtype)
        first = x[tuple(slice(b, b + 1) for b in start)] if start else x
        view = xp.lib.stride_tricks.as_strided(first, shape=tuple(shape), strides=strides)
        if 0 in strides and any(n > 1 and st == 0 for n, st in zip(shape, strides)):
            try:  # elements that share memory: not written, as a broadcast view (NumPy)
                view.flags.writeable = False
            except (AttributeError, ValueError):  # (CuPy keeps no such flag)
                pass
        return view

    def view_dtype(x, dtype):
        # NumPy and CuPy reinterpret a view's bytes in place (their strides count bytes);
        # core has checked that the last dimension is dense where the sizes differ
        return x.view(lib.dtypes[dtype])

    def view_as_real(x):
        # the real parts' view keeps x's strides; the parts' pair is the last dimension
        parts = x.real
        return xp.lib.stride_tricks.as_strided(parts, shape=x.shape + (2,),
                                               strides=parts.strides + (parts.itemsize,))

    def flip(x, dims):
        return xp.flip(x, dims).copy()

    def clone(x):
        return xp.array(x, copy=True, order="C")

    # (row-major, as ATen's: NumPy keeps a transposed or channels-last input's order)
    def tril(x, diagonal=0):
        return xp.ascontiguousarray(xp.tril(x, diagonal))

    def triu(x, diagonal=0):
        return xp.ascontiguousarray(xp.triu(x, diagonal))

    def cat(*xs, dim):
        out = xp.concatenate(xs, axis=dim)
        order = _channels_last_order(xs) if xs[0].ndim in (4, 5) else None
        if order is None:  # (PyTorch's cat is row-major unless every input is channels-last)
            return out if out.flags.c_contiguous else xp.ascontiguousarray(out)
        # ATen's cat: the inputs' common channels-last format, with its exact strides
        dense = xp.empty(tuple(out.shape[d] for d in order), out.dtype)
        dense = dense.transpose(tuple(order.index(d) for d in range(out.ndim)))
        dense[...] = out
        return dense

    def constant_pad(x, pad, value=0):
        return xp.pad(x, pad, mode="constant", constant_values=value)

    as_array = lib.as_array

    def conj_physical(x):
        return as_array(xp.conj(x))  # (NumPy returns a 0-d input's conjugate as a scalar)

    return {"reshape": reshape, "permute": permute, "expand": expand, "flip": flip,
            "conj_physical": conj_physical,
            "strided_view": strided_view, "view_dtype": view_dtype, "view_as_real": view_as_real,
            "clone": clone, "tril": tril, "triu": triu, "cat": cat,
            "constant_pad": constant_pad}


def _channels_last(shape: tuple, strides: tuple) -> bool:
    """c10's is_channels_last_strides_2d/3d: whether a 4-d (5-d) array's strides are like
    NHWC's (NDHWC's): channels innermost, the rest outward in W, H, (D,) N order, a
    size-1 dim read as lying where the format puts it; N111 and channel stride 0 not."""
    if len(shape) not in (4, 5) or strides[1] == 0:
        return False
    smallest = 0
    for d in (1, *range(len(shape) - 1, 1, -1), 0):
        if shape[d] == 0 or strides[d] < smallest or (d == 0 and smallest == strides[1]):
            return False
        smallest = strides[d] * max(shape[d], 1)
    return True


def _channels_last_order(xs) -> tuple[int, ...] | None:
    """The dims outermost first of the channels-last format every array in `xs` suggests
    (ATen's compute_output_memory_format), or None: row-major."""
    if xs[0].ndim not in (4, 5) or not all(
            _channels_last(x.shape, tuple(st // x.itemsize for st in x.strides)) for x in xs):
        return None
    return (0, *range(2, xs[0].ndim), 1)
