"""Cost functions for op declarations: FLOPs and bytes moved, from the inputs' shapes.

Each helper returns a cost function, called with the op's arguments (tensors, or any
objects with `.shape` and `.dtype`, such as a traced graph's values). The profiler's
`with_flops` and the scheduler's estimates read them. They count what the op must do
(an add is one FLOP an element; a matmul 2*M*N*K), not what one kernel happens to do.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from ember.core.opdef import Cost
from ember.core.shapes import broadcast_shapes


def _is_array(x: Any) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype")


def _arrays(args: Iterable[Any]) -> list[Any]:
    out = []
    for a in args:
        if _is_array(a):
            out.append(a)
        elif isinstance(a, (list, tuple)):
            out.extend(x for x in a if _is_array(x))
    return out


def numel(x: Any) -> int:
    return math.prod(x.shape)


def nbytes(x: Any) -> int:
    return numel(x) * x.dtype.itemsize


def _broadcast(arrays: list[Any]) -> tuple[int, ...]:
    shape: tuple[int, ...] = ()
    for a in arrays:
        shape = broadcast_shapes("cost", shape, tuple(a.shape))
    return shape


def pointwise(flops_per_element: float = 1.0) -> Callable[..., Cost]:
    """Elementwise ops: `flops_per_element` for each output element; every input read
    once, the broadcast output written once."""
    def cost(*args: Any, **attrs: Any) -> Cost:
        arrays = _arrays(args)
        if not arrays:
            return Cost()
        out = math.prod(_broadcast(arrays))
        itemsize = max(a.dtype.itemsize for a in arrays)
        return Cost(flops_per_element * out, sum(nbytes(a) for a in arrays) + out * itemsize)
    return cost


def reduction(flops_per_element: float = 1.0) -> Callable[..., Cost]:
    """Reductions and scans: `flops_per_element` for each input element; the input read
    once (the output is small beside it, or the same size for a scan)."""
    def cost(x: Any, *args: Any, **attrs: Any) -> Cost:
        return Cost(flops_per_element * numel(x), 2 * nbytes(x))
    return cost


def movement(*args: Any, **attrs: Any) -> Cost:
    """Copies, gathers, concatenations: no arithmetic; every input read and written."""
    return Cost(0.0, 2 * sum(nbytes(a) for a in _arrays(args)))


def view(*args: Any, **attrs: Any) -> Cost:
    """Views share their input's storage: no arithmetic, no memory traffic."""
    return Cost()


def creation(*, shape: tuple[int, ...] = (), dtype: Any = None, **attrs: Any) -> Cost:
    """Filling a new tensor: one write an element (`n` elements for randperm)."""
    n = math.prod(shape) if shape else attrs.get("n", 1)
    if "start" in attrs:  # arange
        n = max(0, math.ceil((attrs["end"] - attrs["start"]) / attrs["step"]))
    return Cost(0.0, n * (dtype.itemsize if dtype is not None else 4))


def matmul_flops(a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> float:
    """2*M*N*K for each matrix product of `a @ b` (NumPy's rules for 1-D and batches)."""
    sa = (1,) + tuple(a_shape) if len(a_shape) == 1 else tuple(a_shape)
    sb = tuple(b_shape) + (1,) if len(b_shape) == 1 else tuple(b_shape)
    batch = math.prod(broadcast_shapes("cost", sa[:-2], sb[:-2]))
    return 2.0 * batch * sa[-2] * sb[-1] * sa[-1]


def matmul(a: Any, b: Any, **attrs: Any) -> Cost:
    """`a @ b`: the products' FLOPs; both operands read, the result written."""
    flops = matmul_flops(tuple(a.shape), tuple(b.shape))
    sa = (1,) + tuple(a.shape) if len(a.shape) == 1 else tuple(a.shape)
    sb = tuple(b.shape) + (1,) if len(b.shape) == 1 else tuple(b.shape)
    out = math.prod(broadcast_shapes("cost", sa[:-2], sb[:-2])) * sa[-2] * sb[-1]
    return Cost(flops, nbytes(a) + nbytes(b) + out * a.dtype.itemsize)
