"""`torch.distributed._functional_collectives`: collectives that return their result as a
new tensor instead of writing into an argument (the form tensor-parallel code and
compilers use), over ember's collectives. ember's collectives finish before they return,
so `wait_tensor` has nothing to wait for.

`reduceOp` is a string ("sum", "avg", "product", "min", "max"), as in PyTorch.
"""

from __future__ import annotations

from typing import Any

import ember
from ember.autograd import Function
from ember.distributed import collectives
from ember.distributed.reduce_op import ReduceOp

__all__ = ["all_gather_tensor", "all_reduce", "all_to_all_single",
           "all_to_all_single_autograd", "broadcast", "reduce_scatter_tensor", "wait_tensor"]


def _op(reduce_op: str | Any) -> Any:
    if not isinstance(reduce_op, str):
        return reduce_op
    ops = {"sum": ReduceOp.SUM, "avg": ReduceOp.AVG, "product": ReduceOp.PRODUCT,
           "min": ReduceOp.MIN, "max": ReduceOp.MAX}
    if reduce_op.lower() not in ops:
        raise ValueError(f"Unrecognized reduce_op {reduce_op!r}")
    return ops[reduce_op.lower()]


def _world(group: Any) -> int:
    from ember.distributed import get_world_size

    return get_world_size(group)


def wait_tensor(tensor: ember.Tensor) -> ember.Tensor:
    """The result of a functional collective, once it is done (it always is in ember)."""
    return tensor


def all_reduce(self: ember.Tensor, reduceOp: str, group: Any = None,  # noqa: N803
               tag: str = "") -> ember.Tensor:
    """`self` reduced across the group with `reduceOp`, as a new tensor."""
    out = self.clone()
    collectives.all_reduce(out, _op(reduceOp), group=group)
    return out


def broadcast(self: ember.Tensor, src: int, group: Any = None, tag: str = "") -> ember.Tensor:
    """Rank `src`'s `self` on every rank, as a new tensor."""
    out = self.clone()
    collectives.broadcast(out, src, group=group)
    return out


def all_gather_tensor(self: ember.Tensor, gather_dim: int, group: Any = None,
                      tag: str = "") -> ember.Tensor:
    """Every rank's `self`, concatenated along `gather_dim`."""
    world = _world(group)
    flat = ember.empty((world * self.shape[0], *self.shape[1:]), dtype=self.dtype,
                       device=self.device)
    collectives.all_gather_into_tensor(flat, self.contiguous(), group=group)
    if gather_dim == 0:
        return flat
    return ember.cat(flat.chunk(world), dim=gather_dim)


def reduce_scatter_tensor(self: ember.Tensor, reduceOp: str, scatter_dim: int,  # noqa: N803
                          group: Any = None, tag: str = "") -> ember.Tensor:
    """`self` reduced across the group, and this rank's piece of it along
    `scatter_dim`."""
    world = _world(group)
    if self.shape[scatter_dim] % world:
        raise ValueError(f"input dimension {scatter_dim} ({self.shape[scatter_dim]}) must be "
                         f"a multiple of the group size {world}")
    if scatter_dim != 0:
        self = ember.cat(self.chunk(world, dim=scatter_dim), dim=0)
    out = ember.empty((self.shape[0] // world, *self.shape[1:]), dtype=self.dtype,
                      device=self.device)
    # (with scatter_dim != 0 the pieces were stacked along dim 0: this rank's comes back
    # in its own layout)
    collectives.reduce_scatter_tensor(out, self.contiguous(), _op(reduceOp), group=group)
    return out


def all_to_all_single(self: ember.Tensor, output_split_sizes: list[int] | None,
                      input_split_sizes: list[int] | None, group: Any = None,
                      tag: str = "") -> ember.Tensor:
    """Rows of `self` split by `input_split_sizes` and sent one piece to each rank; the
    pieces received, concatenated (`output_split_sizes` rows from each rank)."""
    world = _world(group)
    rows = sum(output_split_sizes) if output_split_sizes is not None else self.shape[0]
    if output_split_sizes is None and self.shape[0] % world:
        raise ValueError(f"all_to_all_single: {self.shape[0]} rows do not split evenly over "
                         f"{world} ranks")
    out = ember.empty((rows, *self.shape[1:]), dtype=self.dtype, device=self.device)
    collectives.all_to_all_single(out, self.contiguous(), output_split_sizes,
                                  input_split_sizes, group=group)
    return out


class _AllToAllSingle(Function):
    @staticmethod
    def forward(ctx: Any, input: ember.Tensor, output_split_sizes: Any,
                input_split_sizes: Any, group: Any) -> ember.Tensor:
        ctx.splits, ctx.group = (output_split_sizes, input_split_sizes), group
        return all_to_all_single(input, output_split_sizes, input_split_sizes, group)

    @staticmethod
    def backward(ctx: Any, grad: ember.Tensor) -> tuple:
        out_splits, in_splits = ctx.splits
        # the gradient goes back the way the rows came: the splits swap
        return all_to_all_single(grad, in_splits, out_splits, ctx.group), None, None, None


def all_to_all_single_autograd(self: ember.Tensor, output_split_sizes: list[int] | None,
                               input_split_sizes: list[int] | None, group: Any = None,
                               tag: str = "") -> ember.Tensor:
    """:func:`all_to_all_single`, differentiable: the gradient is the reverse exchange."""
    return _AllToAllSingle.apply(self, output_split_sizes, input_split_sizes, group)
