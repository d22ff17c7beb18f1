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
from ember.distributed.work import Work, progress

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
    progress()  # the operations already in flight move along too
    requests = start(pg.comm)
    work = Work(requests, finish, pgs.monitor(), f"{name} #{pg.seq} of {pg.name}", pg.ranks,
                pg.timeout, tensors, statuses)
    if async_op:
        return work.track()
    work.wait()
    return None


def _root(pg: ProcessGroup, where: str, what: str, rank: int | None,
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


def _same_layout(where: str, name: str, t: ember.Tensor, like: ember.Tensor,
                 numel: int | None = None) -> None:
    if t.dtype != like.dtype:
        raise TypeError(f"{where}: {name} has dtype {t.dtype}, expected {like.dtype}")
    want = like.numel() if numel is None else numel
    if t.numel() != want:
        raise RuntimeError(f"{where}: invalid tensor size: {name} has {t.numel()} elements (shape "
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


def monitored_barrier(group: ProcessGroup | None = None, timeout: timedelta | None = None,
                      wait_all_ranks: bool = False) -> None:
    """A barrier that names the ranks that did not reach it within `timeout` (default:
    the group's): it raises DistBackendError saying which ranks did not respond and
    what the others are waiting in. Every barrier of ember.distributed does this, so
    this is `barrier(group, timeout=timeout)`; `wait_all_ranks` is accepted for
    PyTorch's signature (every silent rank is always named)."""
    barrier(group, timeout=timeout)


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
    _check_list(where, "tensor_list", tensor_list, pg.size())
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
    _check_list(where, "gather_list", gather_list, pg.size())
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
    _check_list(where, "scatter_list", scatter_list, pg.size())
    for i, part in enumerate(scatter_list):
        check_tensor(part, where, f"scatter_list[{i}]")
        _same_layout(where, f"scatter_list[{i}]", part, tensor)
    send = np.stack([host_values(p).view(np.uint8) for p in scatter_list]) if tensor.numel() \
        else np.empty((pg.size(), 0), np.uint8)
    return _launch(pg, where, lambda comm: [comm.Iscatter(send, out.raw, root=root)],
                   out.write_back, async_op, [tensor])


def _check_list(where: str, name: str, lst: Any, n: int) -> None:
    """A list of `n` tensors (one per rank), or PyTorch's errors: TypeError for what is
    not a list, RuntimeError for a wrong length."""
    if not isinstance(lst, list):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"List[ember.Tensor] but got {type(lst)} instead ({where}).")
    if len(lst) != n:
        raise RuntimeError(f"{where}: invalid {name} (expected length {n}, one tensor per "
                           f"rank, got {len(lst)})")


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
        raise ValueError("Invalid destination rank: destination rank should not be the same "
                         "as the rank of the current process.")
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
        raise ValueError("Invalid source rank: source rank should not be the same as the "
                         "rank of the current process.")
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


# -- list forms and all-to-all ----------------------------------------------------------
def reduce_scatter(output: ember.Tensor, input_list: list[ember.Tensor],
                   op: RedOpType = ReduceOp.SUM, group: ProcessGroup | None = None,
                   async_op: bool = False) -> Work | None:
    """Reduce `input_list[i]` across the group with `op` into `output` of rank i."""
    where = "reduce_scatter"
    check_tensor(output, where, "output")
    pg = _group(group)
    if pg is None:
        return None
    _check_list(where, "input_list", input_list, pg.size())
    for i, part in enumerate(input_list):
        check_tensor(part, where, f"input_list[{i}]")
        _same_layout(where, f"input_list[{i}]", part, output)
    return reduce_scatter_tensor(output, ember.stack([p.reshape(-1) for p in input_list]),
                                 op, group, async_op)


def all_to_all_single(output: ember.Tensor, input: ember.Tensor,
                      output_split_sizes: list[int] | None = None,
                      input_split_sizes: list[int] | None = None,
                      group: ProcessGroup | None = None,
                      async_op: bool = False) -> Work | None:
    """Split `input` along its first dimension, send the i-th piece to rank i, and
    concatenate the pieces received, in rank order, into `output`. Without split sizes
    the pieces are equal."""
    where = "all_to_all_single"
    check_tensor(output, where, "output")
    check_tensor(input, where, "input")
    pg = _group(group)
    if pg is None:
        return None
    n = pg.size()
    if output.dtype != input.dtype:
        raise TypeError(f"{where}: output has dtype {output.dtype}, input {input.dtype}")
    in_sizes = _splits(where, "input", input, input_split_sizes, n)
    out_sizes = _splits(where, "output", output, output_split_sizes, n)
    row = input.element_size() * (input.numel() // max(input.shape[0], 1) if input.ndim
                                  else 1)
    send = host_values(input).view(np.uint8)
    out = stage(output, read=False)
    counts_in = [s * row for s in in_sizes]
    counts_out = [s * row for s in out_sizes]
    msg_in = [send, (counts_in, _offsets(counts_in)), pgs.monitor().MPI.BYTE]
    msg_out = [out.raw, (counts_out, _offsets(counts_out)), pgs.monitor().MPI.BYTE]
    return _launch(pg, where, lambda comm: [comm.Ialltoallv(msg_in, msg_out)],
                   out.write_back, async_op, [output])


def _splits(where: str, name: str, t: ember.Tensor, sizes: list[int] | None,
            n: int) -> list[int]:
    rows = t.shape[0] if t.ndim else 1
    if sizes is None:
        if rows % n:
            raise ValueError(f"{where}: {name}'s first dimension ({rows}) does not split "
                             f"into {n} equal parts; give {name}_split_sizes")
        return [rows // n] * n
    sizes = [int(s) for s in sizes]
    if len(sizes) != n or sum(sizes) != rows:
        raise ValueError(f"{where}: {name}_split_sizes {sizes} must have {n} entries "
                         f"summing to {name}'s first dimension ({rows})")
    return sizes


def _offsets(counts: list[int]) -> list[int]:
    return [int(x) for x in np.concatenate([[0], np.cumsum(counts)[:-1]])] if counts else []


def all_to_all(output_tensor_list: list[ember.Tensor], input_tensor_list: list[ember.Tensor],
               group: ProcessGroup | None = None, async_op: bool = False) -> Work | None:
    """Send `input_tensor_list[i]` to rank i, and receive rank i's piece for this rank
    into `output_tensor_list[i]`."""
    where = "all_to_all"
    pg = _group(group)
    if pg is None:
        return None
    n = pg.size()
    for name, lst in (("output_tensor_list", output_tensor_list),
                      ("input_tensor_list", input_tensor_list)):
        _check_list(where, name, lst, n)
        for i, t in enumerate(lst):
            check_tensor(t, where, f"{name}[{i}]")
    sends = [host_values(t).view(np.uint8) for t in input_tensor_list]
    send = np.concatenate(sends) if sends else np.empty(0, np.uint8)
    counts_in = [s.size for s in sends]
    counts_out = [t.numel() * t.element_size() for t in output_tensor_list]
    recv = np.empty(sum(counts_out), np.uint8)
    MPI = pgs.monitor().MPI
    msg_in = [send, (counts_in, _offsets(counts_in)), MPI.BYTE]
    msg_out = [recv, (counts_out, _offsets(counts_out)), MPI.BYTE]

    def finish() -> None:
        for t, start, count in zip(output_tensor_list, _offsets(counts_out), counts_out):
            _write(t, recv[start:start + count])
    return _launch(pg, where, lambda comm: [comm.Ialltoallv(msg_in, msg_out)], finish,
                   async_op, list(output_tensor_list))


class P2POp:
    """A point-to-point operation for `batch_isend_irecv`: `P2POp(dist.isend, tensor,
    peer)` or `P2POp(dist.irecv, tensor, peer)`."""

    def __init__(self, op: Callable, tensor: ember.Tensor, peer: int | None = None,
                 group: ProcessGroup | None = None, tag: int = 0,
                 group_peer: int | None = None) -> None:
        if op not in (isend, irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type "
                             "``torch.distributed.isend`` or ``torch.distributed.irecv``.")
        self.op, self.tensor, self.peer, self.group = op, tensor, peer, group
        self.tag, self.group_peer = tag, group_peer


def batch_isend_irecv(p2p_op_list: list[P2POp]) -> list[Work]:
    """Start every send and receive of the list; returns their Works."""
    if not p2p_op_list or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("batch_isend_irecv: expected a non-empty list of P2POp")
    return [p.op(p.tensor, p.peer, p.group, p.tag, p.group_peer) for p in p2p_op_list]
