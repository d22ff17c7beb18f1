"""`torch.distributed.constants`: the default process-group timeouts."""

from datetime import timedelta

from ember.distributed.process_group import DEFAULT_TIMEOUT as default_pg_timeout

_DEFAULT_PG_TIMEOUT = default_pg_timeout
# PyTorch sets this only in builds with NCCL
default_pg_nccl_timeout: timedelta | None = None

__all__ = ["default_pg_timeout", "default_pg_nccl_timeout"]
