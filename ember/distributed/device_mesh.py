"""`torch.distributed.device_mesh`: an n-d grid of devices for sharded training, which
ember does not do (its distributed training is data parallel over MPI). The names are
here for the libraries that import them; making a mesh raises NotImplementedError."""

from __future__ import annotations

from typing import Any

__all__ = ["DeviceMesh", "init_device_mesh"]

_NO_MESH = ("ember has no DeviceMesh: its distributed training is data parallel "
            "(ember.nn.parallel.DistributedDataParallel over MPI)")


class DeviceMesh:
    """PyTorch's n-d device grid; ember has none, so constructing one raises
    NotImplementedError."""

    def __new__(cls, *args: Any, **kwargs: Any) -> DeviceMesh:
        raise NotImplementedError(_NO_MESH)


def init_device_mesh(device_type: str, mesh_shape: tuple[int, ...], *,
                     mesh_dim_names: tuple[str, ...] | None = None, **kwargs: Any) -> DeviceMesh:
    """A DeviceMesh over `mesh_shape` devices: not in ember."""
    raise NotImplementedError(_NO_MESH)
