"""Data parallelism: `DataParallel` (one process, several devices, any backends) and
`DistributedDataParallel` (one process per rank, gradients all-reduced over
`ember.distributed`), with `torch.nn.parallel`'s names."""

from ember.nn.parallel import distributed  # noqa: F401
from ember.nn.parallel.data_parallel import DataParallel, DataParallelPlan, data_parallel
from ember.nn.parallel.distributed import DDP, DistributedDataParallel

__all__ = ["DDP", "DataParallel", "DataParallelPlan", "DistributedDataParallel",
           "data_parallel"]
