"""Collectives on picklable Python objects (`all_gather_object`,
`broadcast_object_list`, `gather_object`), as PyTorch's: pickled to bytes, the sizes
exchanged first, then the bytes, with the same polled waits as the tensor collectives."""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np

from ember.distributed import process_group as pgs
from ember.distributed.collectives import _group, _root
from ember.distributed.process_group import ProcessGroup


def _wait(pg: ProcessGroup, name: str, requests: list[Any]) -> None:
    pg.seq += 1
    pgs.monitor().wait(requests, f"{name} #{pg.seq} of {pg.name}", pg.ranks, pg.timeout)


def _pickled(obj: Any) -> np.ndarray:
    return np.frombuffer(pickle.dumps(obj), np.uint8)


def _vector(recv: np.ndarray, sizes: np.ndarray, offsets: np.ndarray) -> list[Any]:
    return [recv, (sizes.tolist(), offsets.tolist()), pgs.monitor().MPI.BYTE]


def all_gather_object(object_list: list[Any], obj: Any,
                      group: ProcessGroup | None = None) -> None:
    """Gather the picklable `obj` of every rank into `object_list` (which must have
    world_size entries), in rank order."""
    pg = _group(group)
    if pg is None:
        return
    if not isinstance(object_list, list) or len(object_list) != pg.size():
        raise ValueError(f"all_gather_object: object_list must be a list of {pg.size()} "
                         f"entries, got {object_list!r}")
    data = _pickled(obj)
    sizes = np.zeros(pg.size(), np.int64)
    _wait(pg, "all_gather_object", [pg.comm.Iallgather(np.array([data.size]), sizes)])
    recv = np.empty(int(sizes.sum()), np.uint8)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    _wait(pg, "all_gather_object", [pg.comm.Iallgatherv(data, _vector(recv, sizes, offsets))])
    for i, (start, n) in enumerate(zip(offsets, sizes)):
        object_list[i] = pickle.loads(recv[start:start + n].tobytes())


def gather_object(obj: Any, object_gather_list: list[Any] | None = None,
                  dst: int | None = None, group: ProcessGroup | None = None,
                  group_dst: int | None = None) -> None:
    """Gather the picklable `obj` of every rank into `object_gather_list` on rank
    `dst` (default 0)."""
    pg = _group(group)
    if pg is None:
        return
    root = _root(pg, "gather_object", "dst", 0 if dst is None and group_dst is None else dst,
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
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    _wait(pg, "gather_object", [pg.comm.Igatherv(data, _vector(recv, sizes, offsets) if mine
                                                 else None, root=root)])
    if mine:
        for i, (start, n) in enumerate(zip(offsets, sizes)):
            object_gather_list[i] = pickle.loads(recv[start:start + n].tobytes())


def broadcast_object_list(object_list: list[Any], src: int | None = None,
                          group: ProcessGroup | None = None, device: Any = None,
                          group_src: int | None = None) -> None:
    """Replace the entries of `object_list` on every rank with those of rank `src`
    (default 0); the lists must have the same length on every rank."""
    pg = _group(group)
    if pg is None:
        return
    root = _root(pg, "broadcast_object_list", "src",
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
