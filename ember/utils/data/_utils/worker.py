"""`torch.utils.data._utils.worker`: what a DataLoader worker knows about itself, under
PyTorch's module path (the code is `ember.utils.data._worker`)."""

from ember.utils.data._worker import WorkerInfo, get_worker_info

__all__ = ["WorkerInfo", "get_worker_info"]
