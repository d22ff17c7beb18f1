"""`hash_tensor`: a uint64 hash of a tensor's elements (all, or along dims), PyTorch's
mode 0: each element widened to 64 bits (a float to float64, an integer or bool to
int64), its bits taken as uint64, and the lot folded with XOR.

A composite: the XOR fold halves the reduced axis at each step (`bitwise_xor` of the
two halves, an odd element carried), so every backend with int64 XOR runs it.
"""

from __future__ import annotations

import math
from typing import Any

from ember.core import costs
from ember.core import dtype as dt
from ember.core.declare import composite
from ember.core.dispatch import kernel_refuses
from ember.core.grad_mode import no_grad
from ember.core.ops.elementwise import bitwise_xor
from ember.core.shapes import normalize_dims, reduced_shape
from ember.core.tensor import Tensor


def _bits(input: Tensor) -> Tensor:
    """The elements widened to 64 bits, as int64 holding those bits."""
    if input.dtype.is_floating_point:
        return input.to(dt.float64).view(dt.int64)
    return input.to(dt.int64)


def _xor_fold(x: Tensor) -> Tensor:
    """XOR of x's last axis (at least one element long)."""
    while x.shape[-1] > 1:
        half = x.shape[-1] // 2
        folded = bitwise_xor(x[..., :half], x[..., half:2 * half])
        x = folded if x.shape[-1] % 2 == 0 else \
            folded.index_put((Ellipsis, 0), bitwise_xor(folded[..., 0], x[..., -1]))
    return x[..., 0]


@composite(complex=True, variants="function method", cost=costs.reduction(1))
def hash_tensor(input: Tensor, dim: Any = None, *, keepdim: bool = False,
                mode: int = 0) -> Tensor:
    """A uint64 hash of `input`'s elements (over `dim`, one int or several, or all):
    mode 0 (the only one) widens each element to 64 bits (float64 for floating dtypes,
    int64 for integers and bool), takes the bits as uint64 and XORs them."""
    if mode != 0:
        raise RuntimeError(f"Unknown hash_tensor mode: {mode}")
    if input.dtype.is_complex or input.dtype in dt.LIMITED_DTYPES:
        raise kernel_refuses(f"xor_sum_{input.device.type}", input.dtype)
    if isinstance(dim, (list, tuple)) and len(dim) == 0:
        dim = None
    if dim is None and input.numel() == 0:
        raise RuntimeError("hash_tensor: Expected reduction dim to be specified for "
                           "input.numel() == 0. Specify the reduction dim with the 'dim' "
                           "argument.")
    dims = tuple(range(input.ndim)) if dim is None else \
        normalize_dims("hash_tensor", dim, input.ndim)
    for d in dims:
        if input.shape[d] == 0:
            raise IndexError(f"hash_tensor: Expected reduction dim {d} to have non-zero size.")
    with no_grad():
        bits = _bits(input.detach())
        kept = [d for d in range(input.ndim) if d not in dims]
        moved = bits.permute(tuple(kept) + dims).reshape(
            tuple(bits.shape[d] for d in kept) + (math.prod(bits.shape[d] for d in dims),))
        out = _xor_fold(moved)
        shape = reduced_shape(tuple(input.shape), dims, keepdim)
        return out.reshape(shape).view(dt.uint64)
