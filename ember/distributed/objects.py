"""Collectives on picklable Python objects (`all_gather_object`,
`broadcast_object_list`, `gather_object`), as PyTorch's: pickled to bytes, the sizes
exchanged first, then the bytes, with the same polled waits as the tensor collectives."""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np

from ember.distributed import process_group as pgs
from ember.distributed.operation import member_group, offsets, root_rank
from ember.distributed.process_group import ProcessGroup


def _wait(pg: ProcessGroup, name: str, requests: list[Any]) -> None:
    pg.seq += 1
    pgs.monitor().wait(requests, f"{name} #{pg.seq} of {pg.name}", pg.ranks, pg.timeout)


def _pickled(obj: Any) -> np.ndarray:
    return np.frombuffer(pickle.dumps(obj), np.uint8)


def _blocks(buffer: np.ndarray | None, sizes: np.ndarray) -> list[Any]:
    """`buffer` as consecutive byte blocks of `sizes` (an MPI v-collective's buffer)."""
    counts = [int(n) for n in sizes]
    return [buffer, (counts, offsets(counts)), pgs.monitor().MPI.BYTE]


def _unpickle_blocks(buffer: np.ndarray, sizes: np.ndarray) -> list[Any]:
    counts = [int(n) for n in sizes]
    return [pickle.loads(buffer[start:start + n].tobytes())
            for start, n in zip(offsets(counts), counts)]


def all_gather_object(object_list: list[Any], obj: Any,
                      group: ProcessGroup | None = None) -> None:
    """Gather the picklable `obj` of every rank into `object_list` (which must have
    world_size entries), in rank order."""
    pg = member_group(group)
    if pg is None:
        return
    if not isinstance(object_list, list) or len(object_list) != pg.size():
        raise ValueError(f"all_gather_object: object_list must be a list of {pg.size()} "
                         f"entries, got {object_list!r}")
    data = _pickled(obj)
    sizes = np.zeros(pg.size(), np.int64)
    _wait(pg, "all_gather_object", [pg.comm.Iallgather(np.array([data.size]), sizes)])
    recv = np.empty(int(sizes.sum()), np.uint8)
    _wait(pg, "all_gather_object", [pg.comm.Iallgatherv(data, _blocks(recv, sizes))])
    object_list[:] = _unpickle_blocks(recv, sizes)


def gather_object(obj: Any, object_gather_list: list[Any] | None = None,
                  dst: int | None = None, group: ProcessGroup | None = None,
                  group_dst: int | None = None) -> None:
    """Gather the picklable `obj` of every rank into `object_gather_list` on rank
    `dst` (default 0)."""
    pg = member_group(group)
    if pg is None:
        return
    root = root_rank(pg, "gather_object", "dst", 0 if dst is None and group_dst is None else dst,
                     group_dst)
    mine = pg.rank() == root
    if mine and (not isinstance(object_gather_list, list) or
                 len(object_gather_list) != pg.size()):
        raise ValueError(f"gather_object: on the destination rank, object_gather_list must "
                         f"be a list of {pg.size()} entries, got {object_gather_list!r}")
    data = _pickled(obj)
    sizes = np.zeros(pg.size(), np.int64)
    _wait(pg, "gather_object", [pg.comm.Igather(np.array([data.size]), sizes, root=root)])
    recv = np.empty(int(sizes.sum()), np.uint8) if mine else None
    _wait(pg, "gather_object", [pg.comm.Igatherv(data, _blocks(recv, sizes) if mine else None,
                                                 root=root)])
    if mine:
        object_gather_list[:] = _unpickle_blocks(recv, sizes)


def broadcast_object_list(object_list: list[Any], src: int | None = None,
                          group: ProcessGroup | None = None, device: Any = None,
                          group_src: int | None = None) -> None:
    """Replace the entries of `object_list` on every rank with those of rank `src`
    (default 0); the lists must have the same length on every rank."""
    pg = member_group(group)
    if pg is None:
        return
    root = root_rank(pg, "broadcast_object_list", "src",
                     0 if src is None and group_src is None else src, group_src)
    if not isinstance(object_list, list):
        raise TypeError(f"broadcast_object_list: object_list must be a list, got "
                        f"{type(object_list).__name__}")
    mine = pg.rank() == root
    data = _pickled(list(object_list)) if mine else None
    size = np.array([data.size if mine else 0], np.int64)
    _wait(pg, "broadcast_object_list", [pg.comm.Ibcast(size, root=root)])
    if not mine:
        data = np.empty(int(size[0]), np.uint8)
    _wait(pg, "broadcast_object_list", [pg.comm.Ibcast(data, root=root)])
    if not mine:
        values = pickle.loads(data.tobytes())
        if len(values) != len(object_list):
            raise ValueError(f"broadcast_object_list: rank {pg.ranks[root]} sent "
                             f"{len(values)} objects, but this rank's list has "
                             f"{len(object_list)} entries")
        object_list[:] = values


def scatter_object_list(scatter_object_output_list: list[Any],
                        scatter_object_input_list: list[Any] | None = None,
                        src: int | None = None, group: ProcessGroup | None = None,
                        group_src: int | None = None) -> None:
    """Give rank i the object `scatter_object_input_list[i]` of rank `src` (default 0),
    in `scatter_object_output_list[0]`."""
    pg = member_group(group)
    if pg is None:
        return
    root = root_rank(pg, "scatter_object_list", "src",
                     0 if src is None and group_src is None else src, group_src)
    if not isinstance(scatter_object_output_list, list) or not scatter_object_output_list:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size "
                         "at least 1.")
    mine = pg.rank() == root
    if mine and (not isinstance(scatter_object_input_list, list) or
                 len(scatter_object_input_list) != pg.size()):
        raise ValueError(f"scatter_object_list: on the source rank, the input list must "
                         f"have {pg.size()} entries, got {scatter_object_input_list!r}")
    parts = [_pickled(o) for o in scatter_object_input_list] if mine else []
    sizes = np.array([p.size for p in parts] if mine else [0] * pg.size(), np.int64)
    size = np.zeros(1, np.int64)
    _wait(pg, "scatter_object_list", [pg.comm.Iscatter(sizes if mine else None, size,
                                                       root=root)])
    recv = np.empty(int(size[0]), np.uint8)
    send = _blocks(np.concatenate(parts), sizes) if mine else None
    _wait(pg, "scatter_object_list", [pg.comm.Iscatterv(send, recv, root=root)])
    scatter_object_output_list[0] = pickle.loads(recv.tobytes())
