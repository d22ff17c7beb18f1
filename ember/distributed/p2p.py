"""Point-to-point operations, with PyTorch's signatures: send, recv, isend, irecv, and
batch_isend_irecv of P2POps. Sends copy the tensor first, so the caller may change it
while the message is in flight."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import ember
from ember.distributed import process_group as pgs
from ember.distributed.operation import launch, member_group, root_rank
from ember.distributed.process_group import ProcessGroup
from ember.distributed.staging import check_tensor, host_values, stage
from ember.distributed.work import Work


def isend(tensor: ember.Tensor, dst: int | None = None, group: ProcessGroup | None = None,
          tag: int = 0, group_dst: int | None = None) -> Work | None:
    """Send `tensor` to rank `dst` without waiting; returns a Work."""
    where = "isend"
    check_tensor(tensor, where)
    pg = member_group(group)
    if pg is None:
        return None
    peer = root_rank(pg, where, "dst", dst, group_dst)
    if peer == pg.rank():
        raise ValueError("Invalid destination rank: destination rank should not be the same "
                         "as the rank of the current process.")
    data = host_values(tensor).view(np.uint8).copy()  # the caller may change tensor meanwhile
    return launch(pg, where, lambda comm: [comm.Isend(data, dest=peer, tag=tag)], None,
                  True, [tensor])


def irecv(tensor: ember.Tensor, src: int | None = None, group: ProcessGroup | None = None,
          tag: int = 0, group_src: int | None = None) -> Work | None:
    """Receive into `tensor` from rank `src` (any rank when None) without waiting;
    returns a Work."""
    return _irecv(tensor, src, group, tag, group_src, "irecv")[0]


def _irecv(tensor: ember.Tensor, src: int | None, group: ProcessGroup | None, tag: int,
           group_src: int | None, where: str) -> tuple[Work | None, Any]:
    check_tensor(tensor, where)
    pg = member_group(group)
    if pg is None:
        return None, None
    MPI = pgs.monitor().MPI
    peer = MPI.ANY_SOURCE if src is None and group_src is None else \
        root_rank(pg, where, "src", src, group_src)
    if peer == pg.rank():
        raise ValueError("Invalid source rank: source rank should not be the same as the "
                         "rank of the current process.")
    buf = stage(tensor, read=False)
    status = MPI.Status()
    work = launch(pg, where, lambda comm: [comm.Irecv(buf.raw, source=peer, tag=tag)],
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
