"""`torch.distributed._composable.fsdp`: FSDP2's names, the same objects as
`ember.distributed.fsdp`'s (where `fully_shard` explains why ember does not shard)."""

from ember.distributed.fsdp import (  # noqa: F401 - re-exported
    CPUOffloadPolicy,
    FSDPModule,
    MixedPrecisionPolicy,
    OffloadPolicy,
    fully_shard,
)

__all__ = ["CPUOffloadPolicy", "FSDPModule", "MixedPrecisionPolicy", "OffloadPolicy",
           "fully_shard"]
