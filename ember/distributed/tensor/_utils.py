"""`torch.distributed.tensor._utils`: the shard arithmetic of DTensors (ember has none;
see `ember.distributed.tensor`)."""

from __future__ import annotations

from typing import Any

from ember.distributed.tensor import _NO_DTENSOR


def compute_local_shape_and_global_offset(global_shape: Any, mesh: Any, placements: Any
                                          ) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The local shard's shape and offset on this rank: needs a DeviceMesh, which ember
    does not have."""
    raise NotImplementedError(_NO_DTENSOR)
