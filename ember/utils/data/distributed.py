"""`DistributedSampler`: each rank reads its own share of a dataset, as in
`torch.utils.data.distributed`.

The shuffled order is PyTorch's own for the same `seed` and epoch (its mt19937-based
`randperm` is reproduced in `_torch_randperm`), so a program moved from PyTorch to
ember, or ranks that mix both, read the same samples.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sized
from typing import Any, TypeVar

from ._torch_randperm import torch_randperm
from .sampler import Sampler

__all__ = ["DistributedSampler"]

T_co = TypeVar("T_co", covariant=True)


def _default_group_value(name: str) -> int:
    # ember.distributed is imported only when a sampler needs the process group, so
    # ember.utils.data stays importable (and fast) without MPI
    from ember import distributed as dist

    if not dist.is_available():
        raise RuntimeError("Requires distributed package to be available")
    return getattr(dist, name)()


class DistributedSampler(Sampler[T_co]):
    r"""Sampler that restricts data loading to a subset of the dataset.

    Each of `num_replicas` processes passes its own instance as a `DataLoader`'s
    `sampler` and reads an exclusive share of the dataset. Without `drop_last` the
    indices are padded by repeating the first ones, so every rank gets the same count.

    Args:
        dataset: dataset used for sampling (needs `__len__`).
        num_replicas (int, optional): number of processes taking part. Default: the
            world size of the current process group.
        rank (int, optional): rank of this process within `num_replicas`. Default:
            the rank in the current process group.
        shuffle (bool, optional): shuffle the indices. Default: ``True``.
        seed (int, optional): seed of the shuffle; the same on every rank. Default: ``0``.
        drop_last (bool, optional): drop the tail so the data divides evenly instead of
            padding it. Default: ``False``.

    Call :meth:`set_epoch` at the start of each epoch, before the DataLoader's iterator
    is made, or every epoch uses the same order.

    Example::

        >>> sampler = DistributedSampler(dataset)
        >>> loader = DataLoader(dataset, sampler=sampler, batch_size=32)
        >>> for epoch in range(n_epochs):
        ...     sampler.set_epoch(epoch)
        ...     train(loader)
    """

    def __init__(self, dataset: Sized, num_replicas: int | None = None,
                 rank: int | None = None, shuffle: bool = True, seed: int = 0,
                 drop_last: bool = False) -> None:
        if num_replicas is None:
            num_replicas = _default_group_value("get_world_size")
        if rank is None:
            rank = _default_group_value("get_rank")
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[Any]:
        n = len(self.dataset)
        indices = torch_randperm(n, self.seed + self.epoch) if self.shuffle else list(range(n))
        if not self.drop_last:
            padding_size = self.total_size - len(indices)
            if padding_size <= len(indices):
                indices += indices[:padding_size]
            else:
                indices += (indices * math.ceil(padding_size / len(indices)))[:padding_size]
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        r"""Set the epoch of this sampler: with `shuffle=True`, each epoch gets its own
        order (seeded by ``seed + epoch``), the same on every rank.

        Args:
            epoch (int): epoch number.
        """
        self.epoch = epoch
