"""The collectives and point-to-point operations, with PyTorch's signatures.

Each one stages its tensors as host buffers (staging.py), starts a non-blocking MPI
operation on them, and returns a Work (`async_op=True`) or waits on it at once. Waits
poll (faults.py), so a failed or silent peer raises DistBackendError instead of hanging.
Results land in the caller's tensors, in place.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import numpy as np

import ember
from ember.distributed import process_group as pgs
from ember.distributed.process_group import GroupMember, ProcessGroup
from ember.distributed.reduce_op import RedOpType, ReduceOp, as_red_op
from ember.distributed.staging import HostBuffer, check_tensor, host_values, stage
from ember.distributed.work import Work

_FLOAT_ONLY = (RedOpType.AVG,)
_INT_ONLY = (RedOpType.BAND, RedOpType.BOR, RedOpType.BXOR)


def _mpi_op(op: RedOpType, t: ember.Tensor, where: str) -> Any:
    """The MPI reduction for `op` on `t`'s dtype, or a ValueError naming the call."""
    MPI = pgs.monitor().MPI
    if op in _FLOAT_ONLY and not t.dtype.is_floating_point:
        raise ValueError(f"{where}: ReduceOp.{op.name} needs a floating-point tensor, got "
                         f"{t.dtype}")
    if op in _INT_ONLY and t.dtype.is_floating_point:
        raise ValueError(f"{where}: ReduceOp.{op.name} needs an integer or bool tensor, "
                         f"got {t.dtype}")
    if t.dtype is ember.bool:  # staged as uint8 0/1: OR and AND
        op = {RedOpType.SUM: RedOpType.BOR, RedOpType.MAX: RedOpType.BOR,
              RedOpType.PRODUCT: RedOpType.BAND, RedOpType.MIN: RedOpType.BAND}.get(op, op)
    return {RedOpType.SUM: MPI.SUM, RedOpType.AVG: MPI.SUM, RedOpType.PRODUCT: MPI.PROD,
            RedOpType.MIN: MPI.MIN, RedOpType.MAX: MPI.MAX, RedOpType.BAND: MPI.BAND,
            RedOpType.BOR: MPI.BOR, RedOpType.BXOR: MPI.BXOR}[op]


def _group(group: ProcessGroup | None) -> ProcessGroup | None:
    """The group to run on; None when this rank is not a member (the op does nothing,
    as in PyTorch)."""
    if group == GroupMember.NON_GROUP_MEMBER:
        pgs.default_group()
        return None
    return pgs.resolve(group)


def _launch(pg: ProcessGroup, name: str, start: Callable[[Any], list[Any]],
            finish: Callable[[], None] | None, async_op: bool, tensors: list[Any],
            statuses: list[Any] | None = None) -> Work | None:
    pg.seq += 1
    requests = start(pg.comm)
    work = Work(requests, finish, pgs.monitor(), f"{name} #{pg.seq} of {pg.name}", pg.ranks,
                pg.timeout, tensors, statuses)
    if async_op:
        return work
    work.wait()
    return None


def _root(pg: ProcessGroup, where: str, what: str, rank: int | None,
          group_rank: int | None) -> int:
    """The group rank of a collective's root, given as a world rank or a group rank."""
    if rank is not None and group_rank is not None:
        raise ValueError(f"{where}: give {what} or group_{what}, not both")
    if group_rank is not None:
        if not 0 <= group_rank < pg.size():
            raise ValueError(f"{where}: group_{what}={group_rank} is not a rank of the "
                             f"group of {pg.size()} ranks")
        return group_rank
    if rank is None:
        raise ValueError(f"{where}: {what} must be given")
    if rank not in pg.ranks:
        raise ValueError(f"{where}: {what}={rank} is not a rank of the group {pg.ranks}")
    return pg.ranks.index(rank)


def _same_layout(where: str, name: str, t: ember.Tensor, like: ember.Tensor,
                 numel: int | None = None) -> None:
    if t.dtype != like.dtype:
        raise TypeError(f"{where}: {name} has dtype {t.dtype}, expected {like.dtype}")
    want = like.numel() if numel is None else numel
    if t.numel() != want:
        raise ValueError(f"{where}: {name} has {t.numel()} elements (shape "
                         f"{list(t.shape)}), expected {want}")


def _write(t: ember.Tensor, values: np.ndarray) -> None:
    """Copy host `values` (raw bytes or values of t's dtype) into `t`, in place."""
    buf = stage(t, read=False)
    buf.values[...] = values.view(buf.values.dtype) if values.dtype == np.uint8 and \
        buf.values.dtype != np.uint8 else values
    buf.write_back()


def _finish_reduce(buf: HostBuffer, op: RedOpType, size: int) -> Callable[[], None]:
    def finish() -> None:
        if op is RedOpType.AVG:
            np.divide(buf.values, size, out=buf.values)
        buf.write_back()
    return finish


# -- collectives ----------------------------------------------------------------------
def barrier(group: ProcessGroup | None = None, async_op: bool = False,
            device_ids: Any = None, timeout: timedelta | None = None) -> Work | None:
    """Wait until every rank of the group has reached this barrier."""
    pg = _group(group)
    if pg is None:
        return None
    pg.seq += 1
    work = Work([pg.comm.Ibarrier()], None, pgs.monitor(), f"barrier #{pg.seq} of {pg.name}",
                pg.ranks, pg.timeout)
    if async_op:
        return work
    work.wait(timeout)
    return None


def all_reduce(tensor: ember.Tensor, op: RedOpType = ReduceOp.SUM,
               group: ProcessGroup | None = None, async_op: bool = False) -> Work | None:
    """Reduce `tensor` across the group with `op`; every rank gets the result in
    `tensor`, in place.

    With ``async_op=True`` the reduction runs in the background (a non-blocking MPI
    all-reduce) and a Work is returned: `tensor` holds the result after `Work.wait()`."""
    where = "all_reduce"
    check_tensor(tensor, where)
    op = as_red_op(op, where)
    pg = _group(group)
    if pg is None:
        return None
    mop = _mpi_op(op, tensor, where)
    buf = stage(tensor, reduce=True)
    MPI = pgs.monitor().MPI
    return _launch(pg, where,
                   lambda comm: [comm.Iallreduce(MPI.IN_PLACE, buf.values, op=mop)],
                   _finish_reduce(buf, op, pg.size()), async_op, [tensor])


def broadcast(tensor: ember.Tensor, src: int | None = None,
              group: ProcessGroup | None = None, async_op: bool = False,
              group_src: int | None = None) -> Work | None:
    """Copy `tensor` of rank `src` into `tensor` on every other rank of the group."""
    where = "broadcast"
    check_tensor(tensor, where)
    pg = _group(group)
    if pg is None:
        return None
    root = _root(pg, where, "src", src, group_src)
    buf = stage(tensor, read=pg.rank() == root)
    return _launch(pg, where, lambda comm: [comm.Ibcast(buf.raw, root=root)],
                   buf.write_back, async_op, [tensor])


def reduce(tensor: ember.Tensor, dst: int | None = None, op: RedOpType = ReduceOp.SUM,
           group: ProcessGroup | None = None, async_op: bool = False,
           group_dst: int | None = None) -> Work | None:
    """Reduce `tensor` across the group with `op` into `tensor` of rank `dst` only."""
    where = "reduce"
    check_tensor(tensor, where)
    op = as_red_op(op, where)
    pg = _group(group)
    if pg is None:
        return None
    root = _root(pg, where, "dst", dst, group_dst)
    mop = _mpi_op(op, tensor, where)
    MPI = pgs.monitor().MPI
    buf = stage(tensor, reduce=True)
    if pg.rank() == root:
        return _launch(pg, where, lambda comm: [comm.Ireduce(MPI.IN_PLACE, buf.values,
                                                             op=mop, root=root)],
                       _finish_reduce(buf, op, pg.size()), async_op, [tensor])
    return _launch(pg, where, lambda comm: [comm.Ireduce(buf.values, None, op=mop,
                                                         root=root)],
                   None, async_op, [tensor])


def all_gather(tensor_list: list[ember.Tensor], tensor: ember.Tensor,
               group: ProcessGroup | None = None, async_op: bool = False) -> Work | None:
    """Gather `tensor` from every rank into `tensor_list` (one tensor per rank, in rank
    order) on every rank."""
    where = "all_gather"
    check_tensor(tensor, where)
    pg = _group(group)
    if pg is None:
        return None
    if not isinstance(tensor_list, list) or len(tensor_list) != pg.size():
        raise ValueError(f"{where}: tensor_list must be a list of {pg.size()} tensors (one "
                         f"per rank), got {_describe(tensor_list)}")
    for i, out in enumerate(tensor_list):
        check_tensor(out, where, f"tensor_list[{i}]")
        _same_layout(where, f"tensor_list[{i}]", out, tensor)
    send = host_values(tensor).view(np.uint8)
    recv = np.empty((pg.size(), send.size), np.uint8)

    def finish() -> None:
        for out, row in zip(tensor_list, recv):
            _write(out, row)
    return _launch(pg, where, lambda comm: [comm.Iallgather(send, recv)], finish, async_op,
                   list(tensor_list))


def all_gather_into_tensor(output_tensor: ember.Tensor, input_tensor: ember.Tensor,
                           group: ProcessGroup | None = None,
                           async_op: bool = False) -> Work | None:
    """Gather `input_tensor` from every rank into `output_tensor`, concatenated along its
    first dimension in rank order (or stacked: any shape of world_size x the input's
    elements)."""
    where = "all_gather_into_tensor"
    check_tensor(output_tensor, where, "output_tensor")
    check_tensor(input_tensor, where, "input_tensor")
    pg = _group(group)
    if pg is None:
        return None
    _same_layout(where, "output_tensor", output_tensor, input_tensor,
                 input_tensor.numel() * pg.size())
    send = host_values(input_tensor).view(np.uint8)
    out = stage(output_tensor, read=False)
    return _launch(pg, where, lambda comm: [comm.Iallgather(send, out.raw)], out.write_back,
                   async_op, [output_tensor])


def reduce_scatter_tensor(output: ember.Tensor, input: ember.Tensor,
                          op: RedOpType = ReduceOp.SUM, group: ProcessGroup | None = None,
                          async_op: bool = False) -> Work | None:
    """Reduce `input` across the group with `op`, and give rank i the i-th of its
    world_size equal chunks (along the flattened input) in `output`."""
    where = "reduce_scatter_tensor"
    check_tensor(output, where, "output")
    check_tensor(input, where, "input")
    op = as_red_op(op, where)
    pg = _group(group)
    if pg is None:
        return None
    _same_layout(where, "input", input, output, output.numel() * pg.size())
    mop = _mpi_op(op, input, where)
    send = stage(input, reduce=True)
    out = stage(output, reduce=True, read=False)
    return _launch(pg, where,
                   lambda comm: [comm.Ireduce_scatter_block(send.values, out.values, op=mop)],
                   _finish_reduce(out, op, pg.size()), async_op, [output])


def gather(tensor: ember.Tensor, gather_list: list[ember.Tensor] | None = None,
           dst: int | None = None, group: ProcessGroup | None = None,
           async_op: bool = False, group_dst: int | None = None) -> Work | None:
    """Gather `tensor` from every rank into `gather_list` on rank `dst` (rank order)."""
    where = "gather"
    check_tensor(tensor, where)
    pg = _group(group)
    if pg is None:
        return None
    root = _root(pg, where, "dst", 0 if dst is None and group_dst is None else dst,
                 group_dst)
    send = host_values(tensor).view(np.uint8)
    if pg.rank() != root:
        if gather_list:
            raise ValueError("Argument ``gather_list`` must NOT be specified on "
                             "non-destination ranks.")
        return _launch(pg, where, lambda comm: [comm.Igather(send, None, root=root)], None,
                       async_op, [])
    if not isinstance(gather_list, list) or len(gather_list) != pg.size():
        raise ValueError(f"{where}: on the destination rank, gather_list must be a list of "
                         f"{pg.size()} tensors, got {_describe(gather_list)}")
    for i, out in enumerate(gather_list):
        check_tensor(out, where, f"gather_list[{i}]")
        _same_layout(where, f"gather_list[{i}]", out, tensor)
    recv = np.empty((pg.size(), send.size), np.uint8)

    def finish() -> None:
        for out, row in zip(gather_list, recv):
            _write(out, row)
    return _launch(pg, where, lambda comm: [comm.Igather(send, recv, root=root)], finish,
                   async_op, list(gather_list))


def scatter(tensor: ember.Tensor, scatter_list: list[ember.Tensor] | None = None,
            src: int | None = None, group: ProcessGroup | None = None,
            async_op: bool = False, group_src: int | None = None) -> Work | None:
    """Give rank i the tensor `scatter_list[i]` of rank `src`, in `tensor`."""
    where = "scatter"
    check_tensor(tensor, where)
    pg = _group(group)
    if pg is None:
        return None
    root = _root(pg, where, "src", 0 if src is None and group_src is None else src,
                 group_src)
    out = stage(tensor, read=False)
    if pg.rank() != root:
        if scatter_list:
            raise ValueError("Argument ``scatter_list`` must NOT be specified on "
                             "non-source ranks.")
        return _launch(pg, where, lambda comm: [comm.Iscatter(None, out.raw, root=root)],
                       out.write_back, async_op, [tensor])
    if not isinstance(scatter_list, list) or len(scatter_list) != pg.size():
        raise ValueError(f"{where}: on the source rank, scatter_list must be a list of "
                         f"{pg.size()} tensors, got {_describe(scatter_list)}")
    for i, part in enumerate(scatter_list):
        check_tensor(part, where, f"scatter_list[{i}]")
        _same_layout(where, f"scatter_list[{i}]", part, tensor)
    send = np.stack([host_values(p).view(np.uint8) for p in scatter_list]) if tensor.numel() \
        else np.empty((pg.size(), 0), np.uint8)
    return _launch(pg, where, lambda comm: [comm.Iscatter(send, out.raw, root=root)],
                   out.write_back, async_op, [tensor])


def _describe(x: Any) -> str:
    return f"a list of {len(x)}" if isinstance(x, list) else type(x).__name__


# -- point to point -------------------------------------------------------------------
def isend(tensor: ember.Tensor, dst: int | None = None, group: ProcessGroup | None = None,
          tag: int = 0, group_dst: int | None = None) -> Work | None:
    """Send `tensor` to rank `dst` without waiting; returns a Work."""
    where = "isend"
    check_tensor(tensor, where)
    pg = _group(group)
    if pg is None:
        return None
    peer = _root(pg, where, "dst", dst, group_dst)
    if peer == pg.rank():
        raise ValueError(f"{where}: dst={pg.ranks[peer]} is this rank; cannot send to self")
    data = host_values(tensor).view(np.uint8).copy()  # the caller may change tensor meanwhile
    return _launch(pg, where, lambda comm: [comm.Isend(data, dest=peer, tag=tag)], None,
                   True, [tensor])


def irecv(tensor: ember.Tensor, src: int | None = None, group: ProcessGroup | None = None,
          tag: int = 0, group_src: int | None = None) -> Work | None:
    """Receive into `tensor` from rank `src` (any rank when None) without waiting;
    returns a Work."""
    return _irecv(tensor, src, group, tag, group_src, "irecv")[0]


def _irecv(tensor: ember.Tensor, src: int | None, group: ProcessGroup | None, tag: int,
           group_src: int | None, where: str) -> tuple[Work | None, Any]:
    check_tensor(tensor, where)
    pg = _group(group)
    if pg is None:
        return None, None
    MPI = pgs.monitor().MPI
    peer = MPI.ANY_SOURCE if src is None and group_src is None else \
        _root(pg, where, "src", src, group_src)
    if peer == pg.rank():
        raise ValueError(f"{where}: src={pg.ranks[peer]} is this rank; cannot receive from "
                         "self")
    buf = stage(tensor, read=False)
    status = MPI.Status()
    work = _launch(pg, where, lambda comm: [comm.Irecv(buf.raw, source=peer, tag=tag)],
                   buf.write_back, True, [tensor], [status])
    return work, (status, pg)


def send(tensor: ember.Tensor, dst: int | None = None, group: ProcessGroup | None = None,
         tag: int = 0, group_dst: int | None = None) -> None:
    """Send `tensor` to rank `dst` (returns when the data has left `tensor`)."""
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor: ember.Tensor, src: int | None = None, group: ProcessGroup | None = None,
         tag: int = 0, group_src: int | None = None) -> int:
    """Receive into `tensor` from rank `src` (any rank when None); returns the sender's
    rank (-1 when this rank is not in `group`)."""
    work, info = _irecv(tensor, src, group, tag, group_src, "recv")
    if work is None:
        return -1
    work.wait()
    status, pg = info
    return pg.ranks[status.Get_source()]
