"""`torch.distributed._composable`: the composable (per-module) forms of the distributed
wrappers; `fsdp` re-exports `ember.distributed.fsdp`'s."""
