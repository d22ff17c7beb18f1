"""`torch.distributed.fsdp.fully_sharded_data_parallel`: the wrapper class's own module."""

from ember.distributed.fsdp import FullyShardedDataParallel  # noqa: F401
