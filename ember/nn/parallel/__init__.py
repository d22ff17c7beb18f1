"""Data parallelism: `DataParallel` (one process, several devices, any backends) and
`DistributedDataParallel` (one process per rank, gradients all-reduced over
`ember.distributed`), with `torch.nn.parallel`'s names."""

from ember.nn.parallel.data_parallel import DataParallel, DataParallelPlan, data_parallel

__all__ = ["DataParallel", "DataParallelPlan", "data_parallel"]
