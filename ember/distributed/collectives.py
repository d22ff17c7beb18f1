"""The collectives, with PyTorch's signatures: barrier, all_reduce, broadcast, reduce,
the gathers and scatters, reduce_scatter and all-to-all.

Each one stages its tensors as host buffers (staging.py), starts a non-blocking MPI
operation on them, and returns a Work (`async_op=True`) or waits on it at once
(operation.py). Waits poll (faults.py), so a failed or silent peer raises
DistBackendError instead of hanging. Results land in the caller's tensors, in place.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import numpy as np

import ember
from ember.distributed import process_group as pgs
from ember.distributed.operation import (
    check_layout,
    check_list,
    finish_reduce,
    launch,
    member_group,
    mpi_op,
    offsets,
    root_rank,
    write_values,
)
from ember.distributed.process_group import ProcessGroup
from ember.distributed.reduce_op import RedOpType, ReduceOp, as_red_op
from ember.distributed.staging import check_tensor, host_values, stage
from ember.distributed.work import Work


# -- collectives ----------------------------------------------------------------------
def barrier(group: ProcessGroup | None = None, async_op: bool = False,
            device_ids: Any = None, timeout: timedelta | None = None) -> Work | None:
    """Wait until every rank of the group has reached this barrier."""
    pg = member_group(group)
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
    pg = member_group(group)
    if pg is None:
        return None
    mop = mpi_op(op, tensor, where)
    buf = stage(tensor, reduce=True)
    MPI = pgs.monitor().MPI
    return launch(pg, where,
                  lambda comm: [comm.Iallreduce(MPI.IN_PLACE, buf.values, op=mop)],
                  finish_reduce(buf, op, pg.size()), async_op, [tensor])


def broadcast(tensor: ember.Tensor, src: int | None = None,
              group: ProcessGroup | None = None, async_op: bool = False,
              group_src: int | None = None) -> Work | None:
    """Copy `tensor` of rank `src` into `tensor` on every other rank of the group."""
    where = "broadcast"
    check_tensor(tensor, where)
    pg = member_group(group)
    if pg is None:
        return None
    root = root_rank(pg, where, "src", src, group_src)
    buf = stage(tensor, read=pg.rank() == root)
    return launch(pg, where, lambda comm: [comm.Ibcast(buf.raw, root=root)],
                  buf.write_back, async_op, [tensor])


def reduce(tensor: ember.Tensor, dst: int | None = None, op: RedOpType = ReduceOp.SUM,
           group: ProcessGroup | None = None, async_op: bool = False,
           group_dst: int | None = None) -> Work | None:
    """Reduce `tensor` across the group with `op` into `tensor` of rank `dst` only."""
    where = "reduce"
    check_tensor(tensor, where)
    op = as_red_op(op, where)
    pg = member_group(group)
    if pg is None:
        return None
    root = root_rank(pg, where, "dst", dst, group_dst)
    mop = mpi_op(op, tensor, where)
    MPI = pgs.monitor().MPI
    buf = stage(tensor, reduce=True)
    if pg.rank() == root:
        return launch(pg, where, lambda comm: [comm.Ireduce(MPI.IN_PLACE, buf.values,
                                                            op=mop, root=root)],
                      finish_reduce(buf, op, pg.size()), async_op, [tensor])
    return launch(pg, where, lambda comm: [comm.Ireduce(buf.values, None, op=mop,
                                                        root=root)],
                  None, async_op, [tensor])


def all_gather(tensor_list: list[ember.Tensor], tensor: ember.Tensor,
               group: ProcessGroup | None = None, async_op: bool = False) -> Work | None:
    """Gather `tensor` from every rank into `tensor_list` (one tensor per rank, in rank
    order) on every rank."""
    where = "all_gather"
    check_tensor(tensor, where)
    pg = member_group(group)
    if pg is None:
        return None
    check_list(where, "tensor_list", tensor_list, pg.size())
    for i, out in enumerate(tensor_list):
        check_tensor(out, where, f"tensor_list[{i}]")
        check_layout(where, f"tensor_list[{i}]", out, tensor)
    send = host_values(tensor).view(np.uint8)
    recv = np.empty((pg.size(), send.size), np.uint8)

    def finish() -> None:
        for out, row in zip(tensor_list, recv):
            write_values(out, row)
    return launch(pg, where, lambda comm: [comm.Iallgather(send, recv)], finish, async_op,
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
    pg = member_group(group)
    if pg is None:
        return None
    check_layout(where, "output_tensor", output_tensor, input_tensor,
                 input_tensor.numel() * pg.size())
    send = host_values(input_tensor).view(np.uint8)
    out = stage(output_tensor, read=False)
    return launch(pg, where, lambda comm: [comm.Iallgather(send, out.raw)], out.write_back,
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
    pg = member_group(group)
    if pg is None:
        return None
    check_layout(where, "input", input, output, output.numel() * pg.size())
    mop = mpi_op(op, input, where)
    send = stage(input, reduce=True)
    out = stage(output, reduce=True, read=False)
    return launch(pg, where,
                  lambda comm: [comm.Ireduce_scatter_block(send.values, out.values, op=mop)],
                  finish_reduce(out, op, pg.size()), async_op, [output])


def gather(tensor: ember.Tensor, gather_list: list[ember.Tensor] | None = None,
           dst: int | None = None, group: ProcessGroup | None = None,
           async_op: bool = False, group_dst: int | None = None) -> Work | None:
    """Gather `tensor` from every rank into `gather_list` on rank `dst` (rank order)."""
    where = "gather"
    check_tensor(tensor, where)
    pg = member_group(group)
    if pg is None:
        return None
    root = root_rank(pg, where, "dst", 0 if dst is None and group_dst is None else dst,
                     group_dst)
    send = host_values(tensor).view(np.uint8)
    if pg.rank() != root:
        if gather_list:
            raise ValueError("Argument ``gather_list`` must NOT be specified on "
                             "non-destination ranks.")
        return launch(pg, where, lambda comm: [comm.Igather(send, None, root=root)], None,
                      async_op, [])
    check_list(where, "gather_list", gather_list, pg.size())
    for i, out in enumerate(gather_list):
        check_tensor(out, where, f"gather_list[{i}]")
        check_layout(where, f"gather_list[{i}]", out, tensor)
    recv = np.empty((pg.size(), send.size), np.uint8)

    def finish() -> None:
        for out, row in zip(gather_list, recv):
            write_values(out, row)
    return launch(pg, where, lambda comm: [comm.Igather(send, recv, root=root)], finish,
                  async_op, list(gather_list))


def scatter(tensor: ember.Tensor, scatter_list: list[ember.Tensor] | None = None,
            src: int | None = None, group: ProcessGroup | None = None,
            async_op: bool = False, group_src: int | None = None) -> Work | None:
    """Give rank i the tensor `scatter_list[i]` of rank `src`, in `tensor`."""
    where = "scatter"
    check_tensor(tensor, where)
    pg = member_group(group)
    if pg is None:
        return None
    root = root_rank(pg, where, "src", 0 if src is None and group_src is None else src,
                     group_src)
    out = stage(tensor, read=False)
    if pg.rank() != root:
        if scatter_list:
            raise ValueError("Argument ``scatter_list`` must NOT be specified on "
                             "non-source ranks.")
        return launch(pg, where, lambda comm: [comm.Iscatter(None, out.raw, root=root)],
                      out.write_back, async_op, [tensor])
    check_list(where, "scatter_list", scatter_list, pg.size())
    for i, part in enumerate(scatter_list):
        check_tensor(part, where, f"scatter_list[{i}]")
        check_layout(where, f"scatter_list[{i}]", part, tensor)
    send = np.stack([host_values(p).view(np.uint8) for p in scatter_list]) if tensor.numel() \
        else np.empty((pg.size(), 0), np.uint8)
    return launch(pg, where, lambda comm: [comm.Iscatter(send, out.raw, root=root)],
                  out.write_back, async_op, [tensor])


# -- list forms and all-to-all ----------------------------------------------------------
def reduce_scatter(output: ember.Tensor, input_list: list[ember.Tensor],
                   op: RedOpType = ReduceOp.SUM, group: ProcessGroup | None = None,
                   async_op: bool = False) -> Work | None:
    """Reduce `input_list[i]` across the group with `op` into `output` of rank i."""
    where = "reduce_scatter"
    check_tensor(output, where, "output")
    pg = member_group(group)
    if pg is None:
        return None
    check_list(where, "input_list", input_list, pg.size())
    for i, part in enumerate(input_list):
        check_tensor(part, where, f"input_list[{i}]")
        check_layout(where, f"input_list[{i}]", part, output)
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
    pg = member_group(group)
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
    msg_in = [send, (counts_in, offsets(counts_in)), pgs.monitor().MPI.BYTE]
    msg_out = [out.raw, (counts_out, offsets(counts_out)), pgs.monitor().MPI.BYTE]
    return launch(pg, where, lambda comm: [comm.Ialltoallv(msg_in, msg_out)],
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


def all_to_all(output_tensor_list: list[ember.Tensor], input_tensor_list: list[ember.Tensor],
               group: ProcessGroup | None = None, async_op: bool = False) -> Work | None:
    """Send `input_tensor_list[i]` to rank i, and receive rank i's piece for this rank
    into `output_tensor_list[i]`."""
    where = "all_to_all"
    pg = member_group(group)
    if pg is None:
        return None
    n = pg.size()
    for name, lst in (("output_tensor_list", output_tensor_list),
                      ("input_tensor_list", input_tensor_list)):
        check_list(where, name, lst, n)
        for i, t in enumerate(lst):
            check_tensor(t, where, f"{name}[{i}]")
    sends = [host_values(t).view(np.uint8) for t in input_tensor_list]
    send = np.concatenate(sends) if sends else np.empty(0, np.uint8)
    counts_in = [s.size for s in sends]
    counts_out = [t.numel() * t.element_size() for t in output_tensor_list]
    recv = np.empty(sum(counts_out), np.uint8)
    MPI = pgs.monitor().MPI
    msg_in = [send, (counts_in, offsets(counts_in)), MPI.BYTE]
    msg_out = [recv, (counts_out, offsets(counts_out)), MPI.BYTE]

    def finish() -> None:
        for t, start, count in zip(output_tensor_list, offsets(counts_out), counts_out):
            write_values(t, recv[start:start + count])
    return launch(pg, where, lambda comm: [comm.Ialltoallv(msg_in, msg_out)], finish,
                  async_op, list(output_tensor_list))


