"""`torch.utils.data._utils`: the module path programs import PyTorch's collate and worker
helpers from (`from torch.utils.data._utils.collate import default_collate`). The code
lives in `ember.utils.data.collate` and `ember.utils.data._worker`; these modules name it
where PyTorch's do."""

from . import collate, worker

IS_WINDOWS = False
"""Whether the platform is Windows (ember's worker processes fork: never)."""

MP_STATUS_CHECK_INTERVAL = 5.0
"""Seconds between a DataLoader worker's checks that its parent is alive."""

HAS_NUMPY = True

__all__ = ["HAS_NUMPY", "IS_WINDOWS", "MP_STATUS_CHECK_INTERVAL", "collate", "worker"]
