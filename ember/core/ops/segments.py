"""Segment reductions (`torch.segment_reduce`): contiguous runs of `data` along one axis,
given by their lengths or offsets, each reduced to one slice.

A composite: each position along the axis gets the number of its segment (a search of
the segments' ends), and `scatter_reduce` folds the values into an output that starts at
`initial` (or the reduction's identity); positions past the last segment go to one spare
slot that is cut off. The gradient is PyTorch's (`_segment_reduce_backward`), declared
here rather than taken from scatter_reduce's: ties of max/min share it without the
initial value, mean divides by the segment's length, prod computes the product without
each zero (or NaN) entry.
"""

from __future__ import annotations

from typing import Any

from ember.core import costs
from ember.core import dtype as dt
from ember.core.apply import record_grad
from ember.core.creation import arange, full
from ember.core.declare import composite
from ember.core.dispatch import kernel_refuses
from ember.core.grad_mode import no_grad
from ember.core.opdef import OPS, Grad
from ember.core.ops.elementwise import where
from ember.core.ops.nn import constant_pad_nd
from ember.core.ops.search import searchsorted
from ember.core.shapes import normalize_dim
from ember.core.tensor import Tensor

_REDUCTIONS = {"sum": "sum", "mean": "sum", "max": "amax", "amax": "amax", "min": "amin",
               "amin": "amin", "prod": "prod"}
_IDENTITY = {"sum": 0.0, "prod": 1.0, "amax": float("-inf"), "amin": float("inf")}


def _backward(grad: Tensor, data: Tensor, result: Tensor, reduce: str, index: Tensor,
              lengths: Tensor, axis: int, initial: Any) -> Tensor:
    """PyTorch's _segment_reduce_backward for the data (each position's segment read
    through `index`, the data's shape, the spare slot past the last segment)."""
    pad = [0] * (2 * (grad.ndim - 1 - axis)) + [0, 1]
    g = constant_pad_nd(grad, pad).gather(axis, index)  # the spare slot: no gradient
    kind = _REDUCTIONS[reduce]
    if reduce == "sum":
        return g
    if reduce == "mean":
        count = constant_pad_nd(lengths.to(data.dtype), [0, 1], 1.0)
        count = count.reshape(tuple(count.shape) + (1,) * (data.ndim - axis - 1))
        return g / count.expand(tuple(grad.shape[:axis]) + (count.shape[axis],) +
                                tuple(grad.shape[axis + 1:])).gather(axis, index)
    out = constant_pad_nd(result, pad).gather(axis, index)
    if kind in ("amax", "amin"):
        hit = (data == out) | data.isnan()
        ties = full(tuple(grad.shape[:axis]) + (grad.shape[axis] + 1,) +
                    tuple(grad.shape[axis + 1:]), 0.0, dtype=data.dtype, device=data.device)
        ties = ties.scatter_add(axis, index, hit.to(data.dtype)).gather(axis, index)
        return where(hit, g / ties.clamp(min=1.0), 0.0)
    # prod: output / value, or the product of the others where the value is 0 or NaN
    special = (data == 0) | data.isnan()
    slots = tuple(grad.shape[:axis]) + (grad.shape[axis] + 1,) + tuple(grad.shape[axis + 1:])
    start = 1.0 if initial is None else float(initial)
    rest = full(slots, start, dtype=data.dtype, device=data.device).scatter_reduce(
        axis, index, where(special, 1.0, data), "prod").gather(axis, index)
    nans = full(slots, 0.0, dtype=data.dtype, device=data.device).scatter_add(
        axis, index, data.isnan().to(data.dtype)).gather(axis, index) - data.isnan().to(
        data.dtype)
    zeros = full(slots, 0.0, dtype=data.dtype, device=data.device).scatter_add(
        axis, index, (data == 0).to(data.dtype)).gather(axis, index) - (data == 0).to(
        data.dtype)
    others = where(nans > 0, float("nan"), where(zeros > 0, 0.0, 1.0))
    return where(special, g * rest * others, g * out / data)


def _check(data: Tensor, reduce: str, lengths: Tensor | None, indices: Tensor | None,
           offsets: Tensor | None, axis: int, unsafe: bool) -> tuple[int, Tensor, Tensor]:
    """PyTorch's checks, in its order; the axis and each segment's start and end."""
    try:
        axis = normalize_dim("segment_reduce", axis, data.ndim)
    except IndexError as error:  # (PyTorch's maybe_wrap_dim names no op)
        message = str(error)
        raise IndexError(message.removeprefix("segment_reduce: ")) from None
    if indices is not None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet.")
    if lengths is None and offsets is None:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    if reduce not in _REDUCTIONS:
        raise RuntimeError("reduce argument must be either sum, prod, mean, amax or amin, "
                           f"got {reduce}")
    if not data.dtype.is_floating_point:
        raise NotImplementedError(f"\"_segment_reduce_{data.device.type}\" not implemented "
                                  f"for '{dt.SCALAR_TYPE_NAMES[data.dtype.name]}'")
    given, name = (offsets, "offsets") if offsets is not None else (lengths, "lengths")
    if given.ndim > data.ndim or axis != given.ndim - 1:
        raise RuntimeError(f"segment_reduce(): Expected axis to be the last dimension of "
                           f"{name} but got {axis}.")
    if given.dtype.is_floating_point or given.dtype.is_complex:
        raise kernel_refuses(f"_segment_reduce_{name}_{data.device.type}_kernel1", given.dtype)
    given = given.to(dt.int64)
    if offsets is not None:
        starts, ends = given[..., :-1], given[..., 1:]
    else:
        if not unsafe and given.numel():
            if int(given.min()) < 0:
                raise RuntimeError("lengths contains negative value!")
            if not bool((given.sum(-1) == data.shape[axis]).all()):
                raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis "
                                   "to sum to data.size(lengths.dim()-1) when !unsafe.")
        ends = given.cumsum(-1)
        starts = ends - given
    if given.numel() and bool((ends < starts).any()):
        raise RuntimeError("Expected segment_length >= 0 to be true, but got false.  (Could "
                           "this error message be improved?  If so, please report an "
                           "enhancement request to PyTorch.)")
    return axis, starts, ends


@composite(variants="function", cost=costs.pointwise(1), grad=Grad(
    data=lambda grad, data, result, reduce, index, lengths, axis, initial: _backward(
        grad, data, result, reduce, index, lengths, axis, initial)))
def segment_reduce(data: Tensor, reduce: str, *, lengths: Tensor | None = None,
                   indices: Tensor | None = None, offsets: Tensor | None = None, axis: int = 0,
                   unsafe: bool = False, initial: Any = None) -> Tensor:
    """Reduce contiguous segments of `data` along `axis`: "sum", "mean", "max", "min" or
    "prod" of each, the segments given by `lengths` (or `offsets`, one more than there are
    segments), of shape `data.shape[:axis] + (segments,)`. An empty segment gives
    `initial`, or the reduction's identity (NaN for "mean"); `initial` also takes part
    in every segment's reduction. `unsafe=True` skips checking that the lengths cover
    the axis."""
    axis, starts, ends = _check(data, reduce, lengths, indices, offsets, axis, unsafe)
    kind = _REDUCTIONS[reduce]
    segments = starts.shape[-1]
    batch, rest = tuple(data.shape[:axis]), tuple(data.shape[axis + 1:])
    with no_grad():
        positions = arange(data.shape[axis], device=data.device).expand(
            batch + (data.shape[axis],)).contiguous()
        # each position's segment: the first whose end lies past it (the spare slot
        # `segments` for positions after the last, or before the first's start)
        seg = searchsorted(ends.contiguous(), positions, right=True)
        inside = (seg < segments) & (positions >= constant_pad_nd(
            starts, [0, 1], 0).gather(-1, seg.clamp(max=segments)))
        seg = where(inside, seg, segments)
        index = seg.reshape(seg.shape + (1,) * len(rest)).expand(tuple(data.shape))
        fill = _IDENTITY[kind] if initial is None else initial
        out = full(batch + (segments + 1,) + rest, fill, dtype=data.dtype, device=data.device)
        out = out.scatter_reduce(axis, index, data, kind).narrow(axis, 0, segments)
        length = ends - starts
        if reduce == "mean":
            count = where((length == 0) & (initial is not None), 1, length).to(data.dtype)
            out = out / count.reshape(count.shape + (1,) * len(rest))
        out = out.contiguous()
    record_grad(OPS["segment_reduce"], (data,), {
        "reduce": reduce, "index": index, "lengths": length, "axis": axis,
        "initial": initial}, out)
    return out
