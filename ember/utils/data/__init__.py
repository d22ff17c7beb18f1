"""Datasets, samplers and the DataLoader, with `torch.utils.data`'s API.

    from ember.utils.data import DataLoader, TensorDataset, random_split

    ds = TensorDataset(ember.randn(1000, 8), ember.randint(0, 2, (1000,)))
    train, val = random_split(ds, [0.8, 0.2], generator=ember.Generator().manual_seed(0))
    for x, y in DataLoader(train, batch_size=64, shuffle=True, num_workers=2):
        ...

Built-in datasets live in `ember.utils.data.datasets` (e.g. `Digits`).
"""

from ._worker import WorkerInfo, get_worker_info
from .collate import default_collate, default_convert
from .dataloader import DataLoader
from .dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from .distributed import DistributedSampler
from .sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = [
    "BatchSampler",
    "ChainDataset",
    "ConcatDataset",
    "DataLoader",
    "Dataset",
    "DistributedSampler",
    "IterableDataset",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "StackDataset",
    "Subset",
    "SubsetRandomSampler",
    "TensorDataset",
    "WeightedRandomSampler",
    "WorkerInfo",
    "default_collate",
    "default_convert",
    "get_worker_info",
    "random_split",
]
