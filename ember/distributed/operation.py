"""How one operation of ember.distributed runs, for collectives.py, p2p.py and
objects.py: the group and root it runs on, its argument checks (with PyTorch's error
types), and its start: a non-blocking MPI call wrapped in a Work, waited on at once
unless `async_op`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import ember
from ember.distributed import process_group as pgs
from ember.distributed.process_group import GroupMember, ProcessGroup
from ember.distributed.reduce_op import RedOpType
from ember.distributed.staging import HostBuffer, stage
from ember.distributed.work import Work, progress

FLOAT_ONLY = (RedOpType.AVG,)
INT_ONLY = (RedOpType.BAND, RedOpType.BOR, RedOpType.BXOR)


def mpi_op(op: RedOpType, t: ember.Tensor, where: str) -> Any:
    """The MPI reduction for `op` on `t`'s dtype, or a ValueError naming the call."""
    MPI = pgs.monitor().MPI
    if op in FLOAT_ONLY and not t.dtype.is_floating_point:
        raise ValueError(f"{where}: ReduceOp.{op.name} needs a floating-point tensor, got "
                         f"{t.dtype}")
    if op in INT_ONLY and t.dtype.is_floating_point:
        raise ValueError(f"{where}: ReduceOp.{op.name} needs an integer or bool tensor, "
                         f"got {t.dtype}")
    if t.dtype is ember.bool:  # staged as uint8 0/1: OR and AND
        op = {RedOpType.SUM: RedOpType.BOR, RedOpType.MAX: RedOpType.BOR,
              RedOpType.PRODUCT: RedOpType.BAND, RedOpType.MIN: RedOpType.BAND}.get(op, op)
    return {RedOpType.SUM: MPI.SUM, RedOpType.AVG: MPI.SUM, RedOpType.PRODUCT: MPI.PROD,
            RedOpType.MIN: MPI.MIN, RedOpType.MAX: MPI.MAX, RedOpType.BAND: MPI.BAND,
            RedOpType.BOR: MPI.BOR, RedOpType.BXOR: MPI.BXOR}[op]


def member_group(group: ProcessGroup | None) -> ProcessGroup | None:
    """The group to run on; None when this rank is not a member (the op does nothing,
    as in PyTorch)."""
    if group == GroupMember.NON_GROUP_MEMBER:
        pgs.default_group()
        return None
    return pgs.resolve(group)


def launch(pg: ProcessGroup, name: str, start: Callable[[Any], list[Any]],
           finish: Callable[[], None] | None, async_op: bool, tensors: list[Any],
           statuses: list[Any] | None = None) -> Work | None:
    """Start an operation (`start(comm)` returns its MPI requests) on `pg`: its Work
    when `async_op`, else wait on it (and `finish` it) and return None."""
    pg.seq += 1
    progress()  # the operations already in flight move along too
    requests = start(pg.comm)
    work = Work(requests, finish, pgs.monitor(), f"{name} #{pg.seq} of {pg.name}", pg.ranks,
                pg.timeout, tensors, statuses)
    if async_op:
        return work.track()
    work.wait()
    return None


def root_rank(pg: ProcessGroup, where: str, what: str, rank: int | None,
              group_rank: int | None) -> int:
    """The group rank of a collective's root, given as a world rank or a group rank."""
    if rank is not None and group_rank is not None:
        raise ValueError(f"{where}: give {what} or group_{what}, not both")
    if group_rank is not None:
        if not 0 <= group_rank < pg.size():
            raise RuntimeError(f"{where}: group_{what}={group_rank} is not a rank of the "
                             f"group of {pg.size()} ranks")
        return group_rank
    if rank is None:
        raise ValueError(f"{where}: {what} must be given")
    if rank not in pg.ranks:
        raise RuntimeError(f"{where}: invalid root rank: {what}={rank} is not a rank of the "
                           f"group {pg.ranks}")
    return pg.ranks.index(rank)


def check_layout(where: str, name: str, t: ember.Tensor, like: ember.Tensor,
                 numel: int | None = None) -> None:
    if t.dtype != like.dtype:
        raise TypeError(f"{where}: {name} has dtype {t.dtype}, expected {like.dtype}")
    want = like.numel() if numel is None else numel
    if t.numel() != want:
        raise RuntimeError(f"{where}: invalid tensor size: {name} has {t.numel()} elements (shape "
                         f"{list(t.shape)}), expected {want}")


def write_values(t: ember.Tensor, values: np.ndarray) -> None:
    """Copy host `values` (raw bytes or values of t's dtype) into `t`, in place."""
    buf = stage(t, read=False)
    buf.values[...] = values.view(buf.values.dtype) if values.dtype == np.uint8 and \
        buf.values.dtype != np.uint8 else values
    buf.write_back()


def finish_reduce(buf: HostBuffer, op: RedOpType, size: int) -> Callable[[], None]:
    def finish() -> None:
        if op is RedOpType.AVG:
            np.divide(buf.values, size, out=buf.values)
        buf.write_back()
    return finish


def check_list(where: str, name: str, lst: Any, n: int) -> None:
    """A list of `n` tensors (one per rank), or PyTorch's errors: TypeError for what is
    not a list, RuntimeError for a wrong length."""
    if not isinstance(lst, list):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"List[ember.Tensor] but got {type(lst)} instead ({where}).")
    if len(lst) != n:
        raise RuntimeError(f"{where}: invalid {name} (expected length {n}, one tensor per "
                           f"rank, got {len(lst)})")


def offsets(counts: list[int]) -> list[int]:
    """Where each of consecutive blocks of `counts` starts (for MPI's v-collectives)."""
    return [int(x) for x in np.cumsum([0] + list(counts[:-1]))] if len(counts) else []
