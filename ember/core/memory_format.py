"""Memory formats: the order in memory of a 4-d or 5-d tensor's dimensions, as PyTorch's
`torch.channels_last` (NHWC) and `torch.channels_last_3d` (NDHWC).

ember's buffers are strided arrays, so a tensor in channels_last is a row-major
(N, H, W, C) buffer seen as (N, C, H, W), with PyTorch's strides. The rules below are
c10's (MemoryFormat.h, TensorImpl): which strides each format has, when a tensor is
contiguous in a format, which format its strides suggest (what convolutions, pooling,
batch norm and upsampling keep for their outputs), and what a copy that preserves the
format (`clone`, `empty_like`, the `*_like` factories) is laid out as.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.core import dtype as dt
from ember.core.backend import logical_to_physical_perm


@dt.printed_in_api()
class memory_format:  # noqa: N801 - PyTorch's name
    """The order of a tensor's dimensions in memory that `to(memory_format=...)`,
    `contiguous(memory_format=...)`, `clone(memory_format=...)`, `empty(...,
    memory_format=...)` and `Module.to(memory_format=...)` ask for."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"{dt.API_NAME}.{self._name}"

    def __reduce__(self) -> str:
        return self._name  # pickled by name: the module-level singleton


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")

# rank, and the dimensions from the innermost in memory to the outermost
_DIM_ORDER = {channels_last: (4, (1, 3, 2, 0)), channels_last_3d: (5, (1, 4, 3, 2, 0))}


def check_format(op: str, fmt: Any) -> memory_format:
    """`fmt` (None: preserve_format), or PyTorch's TypeError for anything else."""
    if fmt is None:
        return preserve_format
    if not isinstance(fmt, memory_format):
        raise TypeError(f"{op}(): argument 'memory_format' must be torch.memory_format, "
                        f"not {type(fmt).__name__}")  # (PyTorch's words, as ever)
    return fmt


def check_rank(fmt: memory_format, ndim: int) -> None:
    """PyTorch's error for a channels-last format on a tensor of another rank."""
    if fmt in _DIM_ORDER and _DIM_ORDER[fmt][0] != ndim:
        raise RuntimeError(f"required rank {_DIM_ORDER[fmt][0]} tensor to use "
                           f"{fmt._name} format")


def is_contiguous_in(shape: tuple, strides: tuple, fmt: memory_format) -> bool:
    """Whether strides are channels-last format `fmt`'s dense ones for `shape` (size-1
    dimensions ignored; row-major is the backend's own `is_contiguous`)."""
    rank, order = _DIM_ORDER[fmt]
    if len(shape) != rank:
        return False
    expected = 1
    for d in order:
        if shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= shape[d]
    return True


def in_format_exactly(t: Any, fmt: memory_format) -> bool:
    """Whether tensor `t` has exactly the strides `empty(t.shape, memory_format=fmt)` has,
    size-1 dims' included (an (N, C, 1, 1) row-major tensor is channels-last contiguous,
    but not laid out as a channels-last result)."""
    if fmt not in _DIM_ORDER:
        return plain(t)
    shape, strides = tuple(t.shape), t.stride()
    rank, order = _DIM_ORDER[fmt]
    expected = 1
    for d in order:
        if strides[d] != expected:
            return False
        expected *= max(shape[d], 1)
    return len(shape) == rank


def suggest_memory_format(shape: tuple, strides: tuple) -> memory_format:
    """The format a tensor's strides are like (c10's is_channels_last_strides_2d/3d):
    channels-last when its channel dimension is innermost and the others follow in
    NHWC order; contiguous_format in ambiguous cases (N111, a channel stride of 0)."""
    for fmt, (rank, order) in _DIM_ORDER.items():
        if len(shape) != rank or strides[1] == 0:
            continue
        smallest, like = 0, True
        for d in order:
            if shape[d] == 0 or strides[d] < smallest or (d == 0 and smallest == strides[1]):
                like = False
                break
            smallest = strides[d] * (shape[d] if shape[d] > 1 else 1)
        if like:
            return fmt
    return contiguous_format


def dim_order(shape: tuple, strides: tuple, contiguous: bool, check: bool = False
              ) -> tuple[tuple[int, ...], bool]:
    """`Tensor.dim_order()` and whether it is ambiguous (with `check`): row-major and 4-d
    channels-last tensors answer at once (when only one of the two holds), others by
    `logical_to_physical_perm`."""
    ndim = len(shape)
    if ndim < 2:
        return tuple(range(ndim)), False
    nhwc = ndim == 4 and is_contiguous_in(shape, strides, channels_last)
    if contiguous and not nhwc:
        return tuple(range(ndim)), False
    if nhwc and not contiguous:
        return (0, *range(2, ndim), 1), False
    perm, ambiguous = logical_to_physical_perm(shape, [strides], check)
    return tuple(perm), ambiguous


def row_major(t: Any) -> bool:
    """Whether tensor `t` is row-major (`t.is_contiguous()`), asked of its backend
    directly: core's own layout checks are no op calls a trace or an export capture
    records (there `is_contiguous` returning a bool reads as data-dependent control
    flow)."""
    return bool(t._backend.is_contiguous(t._data))


def tensor_format(t: Any) -> memory_format:
    """`suggest_memory_format` of a tensor (contiguous_format at once for a row-major one
    with the row-major strides, the common case: a row-major (C, K, 1, 1) conv weight
    made channels-last keeps strides that suggest channels_last)."""
    if t.ndim not in (4, 5):
        return contiguous_format
    if plain(t):
        return contiguous_format
    return suggest_memory_format(tuple(t.shape), t.stride())


def plain(t: Any) -> bool:
    """Whether tensor `t` is row-major with the row-major strides, size-1 dims included
    (a row-major (N, C, 1, 1) made channels-last is not: a copy keeps its strides)."""
    return row_major(t) and (t.ndim < 2 or t.stride() == _row_major_strides(tuple(t.shape)))


def _row_major_strides(shape: tuple) -> tuple[int, ...]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def in_order(shape: tuple, order: Any, empty: Callable[[tuple], Any]) -> Any:
    """`empty` of `shape` whose dims lie in memory outermost-first in `order`."""
    inverse = [0] * len(order)
    for i, d in enumerate(order):
        inverse[d] = i
    return empty(tuple(shape[d] for d in order)).permute(*inverse)


def empty_in_format(shape: tuple, fmt: memory_format, empty: Callable[[tuple], Any]) -> Any:
    """`empty(shape)` laid out in `fmt` (row-major for contiguous_format)."""
    check_rank(fmt, len(shape))
    if fmt not in _DIM_ORDER:
        return empty(tuple(shape))
    return in_order(tuple(shape), tuple(reversed(_DIM_ORDER[fmt][1])), empty)


def like_layout(t: Any, empty: Callable[[tuple], Any], fmt: Any = None) -> Any:
    """`empty(t.shape)` laid out as PyTorch's `empty_like(t, memory_format=fmt)`: for
    preserve_format (the default), in `t`'s own memory order, whether `t` is dense (a
    permuted view: its strides) or has gaps or broadcast dims (the dense strides of that
    order: ATen's `infer_dense_strides`, TensorIterator's sort). A fill of it (`uniform_`,
    `bernoulli_`) then draws in PyTorch's order."""
    fmt = preserve_format if fmt is None else fmt
    if fmt is preserve_format:
        shape = tuple(t.shape)
        # (a row-major tensor whose size-1 dims have other strides, an (N, C, 1, 1)
        # channels-last one, keeps them: ATen's empty_like copies a dense tensor's strides)
        if t.numel() == 0 or plain(t):
            return empty(shape)
        return in_order(shape, logical_to_physical_perm(shape, [t.stride()])[0], empty)
    return empty_in_format(tuple(t.shape), fmt, empty)
