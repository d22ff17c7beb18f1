"""Creation kernels that need no random numbers: `full` and `arange`. (Random numbers come
from each backend's own generator.) The `device` attribute is the backend's concern: the
kernels create on the array module's current device."""

from __future__ import annotations

import math

from ember.backends.xp.lib import ArrayLib, Kernel


def _positive_zero(zero: complex) -> bool:
    """Whether a number equal to 0 has no negative zero in it (-0.0, complex(-0.0, 0)...)."""
    value = complex(zero)
    return math.copysign(1, value.real) > 0 and math.copysign(1, value.imag) > 0


def kernels(lib: ArrayLib) -> dict[str, Kernel]:
    xp, dtypes = lib.xp, lib.dtypes

    def full(shape, fill_value, dtype, device=0):
        if fill_value == 0 and _positive_zero(fill_value):
            # zeroed pages from the allocator: no pass over the memory (zeros(256, 256)
            # 31 -> 4 us; NumPy's `full` writes every element)
            return xp.zeros(shape, dtype=dtypes[dtype])
        return xp.full(shape, fill_value, dtype=dtypes[dtype])

    lanes_of_half, fma64 = lib.hooks.half_vector_lanes, lib.hooks.fma64

    def arange(start, end, step, dtype, device=0):
        if dtype.is_floating_point:  # (bfloat16's NumPy dtype is no kind "f")
            n = max(0, math.ceil((end - start) / step))
            return float_arange(start, step, n, dtypes[dtype])
        if all(isinstance(v, int) for v in (start, end, step)):
            return xp.arange(start, end, step).astype(dtypes[dtype])
        # PyTorch's integer kernel: the count from the numbers as given, the values from
        # the start and the step truncated to integers
        n = max(0, math.ceil((end - start) / step))
        return (int(start) + xp.arange(n, dtype=xp.int64) * int(step)).astype(dtypes[dtype])

    def float_arange(start, step, n, dtype):
        """PyTorch's CPU arange: `start + step * i` in the accumulate type (float32 for the
        half types, else float64; the compiler fuses the multiply-add), cast to the dtype.
        Its vector loop, which takes two vectors at a time and leaves the rest to the
        plain loop, writes each vector as its first element cast to the dtype, plus
        `k * step` (k < lanes; fused but for bfloat16)."""
        if lanes_of_half is None:  # (not PyTorch's CPU kernel: each element alike)
            return (start + xp.arange(n, dtype=xp.float64) * step).astype(dtype)
        acc = xp.float32 if dtype.itemsize == 2 else xp.float64

        def fused(k, base):  # base + k * step, rounded once, in the accumulate type
            if acc is xp.float32:  # (float64 holds the product exactly)
                return (xp.float64(acc(step)) * k + base).astype(acc)
            out = None if fma64 is None else fma64(k.astype(acc), step, base)
            return k * step + base if out is None else out

        out = fused(xp.arange(n), acc(start))
        lanes = lanes_of_half() * 2 // dtype.itemsize
        vectors = n // (2 * lanes) * (2 * lanes)
        k = xp.arange(vectors) % lanes
        first = out[:vectors][xp.arange(vectors) - k].astype(dtype).astype(acc)
        if dtype.kind != "f":  # bfloat16's vectors round `k * step` first
            out[:vectors] = first + k.astype(acc) * acc(step)
        else:
            out[:vectors] = fused(k, first)
        return out.astype(dtype)

    return {"full": full, "arange": arange}
