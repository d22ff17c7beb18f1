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

    def arange(start, end, step, dtype, device=0):
        if dtypes[dtype].kind == "f":
            # start + i * step, computed in float64 and then cast to the dtype
            n = max(0, math.ceil((end - start) / step))
            return (start + xp.arange(n, dtype=xp.float64) * step).astype(dtypes[dtype])
        if all(isinstance(v, int) for v in (start, end, step)):
            return xp.arange(start, end, step).astype(dtypes[dtype])
        # PyTorch's integer kernel: the count from the numbers as given, the values from
        # the start and the step truncated to integers
        n = max(0, math.ceil((end - start) / step))
        return (int(start) + xp.arange(n, dtype=xp.int64) * int(step)).astype(dtypes[dtype])

    return {"full": full, "arange": arange}
