"""`torch.distributed.tensor`: distributed tensors (DTensor) over a device mesh.

ember's distributed training is data parallel over MPI (`ember.distributed`,
`DistributedDataParallel`); it has no sharded tensor type. The names are here so that
libraries which check for DTensors (`isinstance(p, DTensor)`, as transformers does) run:
no ember tensor is a DTensor, and making one, or distributing a tensor, raises
NotImplementedError. The placements are real values (`placement_types`).
"""

from __future__ import annotations

from typing import Any

from ember.distributed.tensor.placement_types import Partial, Placement, Replicate, Shard

__all__ = ["DTensor", "DeviceMesh", "Partial", "Placement", "Replicate", "Shard",
           "distribute_module", "distribute_tensor", "init_device_mesh"]

_NO_DTENSOR = ("ember has no DTensor: its distributed training is data parallel "
               "(ember.nn.parallel.DistributedDataParallel over MPI)")


class DTensor:
    """A tensor sharded or replicated over a device mesh (PyTorch's DTensor); ember has
    none, so no tensor is one and constructing one raises NotImplementedError."""

    def __new__(cls, *args: Any, **kwargs: Any) -> DTensor:
        raise NotImplementedError(_NO_DTENSOR)

    @staticmethod
    def from_local(*args: Any, **kwargs: Any) -> DTensor:
        raise NotImplementedError(_NO_DTENSOR)


def distribute_tensor(tensor: Any, device_mesh: Any = None, placements: Any = None,
                      **kwargs: Any) -> DTensor:
    """Shard or replicate `tensor` over `device_mesh`: not in ember."""
    raise NotImplementedError(_NO_DTENSOR)


def distribute_module(module: Any, device_mesh: Any = None, partition_fn: Any = None,
                      **kwargs: Any) -> Any:
    """Distribute `module`'s parameters over `device_mesh`: not in ember."""
    raise NotImplementedError(_NO_DTENSOR)


def __getattr__(name: str) -> Any:
    if name in ("DeviceMesh", "init_device_mesh"):
        from ember.distributed import device_mesh

        return getattr(device_mesh, name)
    raise AttributeError(f"module 'torch.distributed.tensor' has no attribute {name!r}")
