"""Datasets and dataset combinators, as in `torch.utils.data.dataset`."""

from __future__ import annotations

import bisect
import itertools
import math
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Generic, TypeVar

import ember
from ember.core.errors import with_context

from .sampler import _generator_or_default

__all__ = [
    "ChainDataset",
    "ConcatDataset",
    "Dataset",
    "IterableDataset",
    "StackDataset",
    "Subset",
    "TensorDataset",
    "random_split",
]

T_co = TypeVar("T_co", covariant=True)


class Dataset(Generic[T_co]):
    """A map-style dataset: `__getitem__(index)` returns one sample.

    A subclass implements `__getitem__` and, for the default samplers, `__len__`. It may
    also implement `__getitems__(indices)` returning a list of samples, which `DataLoader`
    then calls once per batch instead of `__getitem__` once per sample.
    """

    def __getitem__(self, index: Any) -> T_co:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: Dataset[T_co]) -> ConcatDataset[T_co]:
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T_co]):
    """An iterable-style dataset: `__iter__` yields the samples.

    With ``num_workers > 0`` every worker process iterates its own copy of the dataset, so
    without sharding each sample comes back once per worker. Shard inside `__iter__` (or in
    a `worker_init_fn`) with :func:`ember.utils.data.get_worker_info`::

        def __iter__(self):
            info = get_worker_info()
            if info is None:  # loading in the main process
                return iter(range(self.start, self.end))
            return iter(range(self.start + info.id, self.end, info.num_workers))
    """

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other: Dataset[T_co]) -> ChainDataset:  # type: ignore[override]
        return ChainDataset([self, other])


class TensorDataset(Dataset[tuple]):
    """Wraps tensors: sample `i` is ``tuple(t[i] for t in tensors)``.

    Args:
        *tensors (Tensor): tensors with the same size of the first dimension.
    """

    def __init__(self, *tensors: ember.Tensor) -> None:
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        if any(tensors[0].size(0) != t.size(0) for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index: Any) -> tuple:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)

    def _collated_batch(self, indices: list[int]) -> list[ember.Tensor]:
        """``default_collate([self[i] for i in indices])`` in one gather per tensor (what
        the DataLoader's fetcher calls instead, when the collate function is the default)."""
        return [t[ember.tensor(indices, dtype=ember.int64, device=t.device)]
                for t in self.tensors]


class StackDataset(Dataset):
    """Zips datasets of one length: sample `i` is a tuple (positional datasets) or a dict
    (keyword datasets) of their samples `i`.

    Args:
        *args (Dataset): datasets whose samples form a tuple.
        **kwargs (Dataset): datasets whose samples form a dict.
    """

    def __init__(self, *args: Dataset, **kwargs: Dataset) -> None:
        if args and kwargs:
            # PyTorch's message, its missing space included
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via "
                             "``kwargs``) like input/output, but both types are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        parts = list(args) if args else list(kwargs.values())
        self._length = len(parts[0])
        if any(self._length != len(d) for d in parts):
            raise ValueError("Size mismatch between datasets")
        self.datasets: tuple | dict = args if args else kwargs

    def __getitem__(self, index: Any) -> tuple | dict:
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices: list) -> list:
        """The samples at `indices`, fetched in one call from each dataset that batches."""
        if isinstance(self.datasets, dict):
            columns = {k: _fetch_many(d, indices) for k, d in self.datasets.items()}
            return [{k: col[i] for k, col in columns.items()} for i in range(len(indices))]
        columns_t = [_fetch_many(d, indices) for d in self.datasets]
        return [tuple(col[i] for col in columns_t) for i in range(len(indices))]

    def __len__(self) -> int:
        return self._length


def _fetch_many(dataset: Any, indices: list) -> list:
    """`dataset`'s samples at `indices`: through its ``__getitems__`` where it has one."""
    getitems = getattr(dataset, "__getitems__", None)
    if not callable(getitems):
        return [dataset[i] for i in indices]
    items = getitems(indices)
    if len(items) != len(indices):
        raise ValueError("Nested dataset's output size mismatch."
                         f" Expected {len(indices)}, got {len(items)}")
    return items


class ConcatDataset(Dataset[T_co]):
    """The concatenation of map-style datasets.

    Args:
        datasets (iterable): the datasets to concatenate.
    """

    @staticmethod
    def cumsum(sequence: Iterable[Any]) -> list[int]:
        out, total = [], 0
        for d in sequence:
            total += len(d)
            out.append(total)
        return out

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int) -> T_co:
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        if idx >= len(self):
            # PyTorch's error is its lookup of the dataset past the last one
            raise with_context(IndexError("list index out of range"),
                               f"index {idx} is out of range for a ConcatDataset of length "
                               f"{len(self)}")
        dataset_idx = bisect.bisect_right(self.cumulative_sizes, idx)
        sample_idx = idx if dataset_idx == 0 else idx - self.cumulative_sizes[dataset_idx - 1]
        return self.datasets[dataset_idx][sample_idx]


class ChainDataset(IterableDataset):
    """The chaining of iterable-style datasets, one after another, on the fly.

    Args:
        datasets (iterable of IterableDataset): the datasets to chain.
    """

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = datasets

    def __iter__(self) -> Iterator:
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self) -> int:
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            total += len(d)  # type: ignore[arg-type]
        return total


class Subset(Dataset[T_co]):
    """The samples of `dataset` at `indices`.

    Args:
        dataset (Dataset): the whole dataset.
        indices (sequence): the indices in the whole dataset that form the subset.
    """

    def __init__(self, dataset: Dataset[T_co], indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices
        # PyTorch (2.13) refuses a subclass whose __getitem__ the batched fetch would skip
        if (type(self).__getitem__ is not Subset.__getitem__
                and type(self).__getitems__ is Subset.__getitems__):
            raise NotImplementedError(
                f"{type(self).__name__} overrides __getitem__ but not __getitems__. "
                "When subclassing Subset and overriding __getitem__, you must also override "
                "__getitems__ to ensure DataLoader works correctly with your custom logic. "
                "A simple implementation:\n\n"
                "def __getitems__(self, indices):\n"
                "    return [self.__getitem__(idx) for idx in indices]")

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list[int]) -> list:
        getitems = getattr(self.dataset, "__getitems__", None)
        if callable(getitems):
            return getitems([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(dataset: Dataset[T_co], lengths: Sequence[int | float],
                 generator: Any = None) -> list[Subset[T_co]]:
    """Randomly split a dataset into non-overlapping subsets of the given lengths.

    `lengths` are either sizes that sum to ``len(dataset)``, or fractions that sum to 1:
    then each split gets ``floor(frac * len(dataset))`` samples and the remainder is dealt
    one by one, round-robin, from the first split (PyTorch's rule).

    Args:
        dataset (Dataset): the dataset to split.
        lengths (sequence): lengths or fractions of the splits.
        generator (ember.Generator, optional): the generator for the permutation (default:
            ``ember.default_generator``). The same seed gives the split PyTorch gives.

    Example::

        >>> train, val = random_split(range(10), [0.7, 0.3],
        ...                           generator=ember.Generator().manual_seed(42))
        >>> len(train), len(val)
        (7, 3)
    """
    n = len(dataset)  # type: ignore[arg-type]
    lengths = list(lengths)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        sizes = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            sizes.append(math.floor(n * frac))
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
        for i, size in enumerate(sizes):
            if size == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an "
                              "empty dataset.", stacklevel=2)
        lengths = sizes
    if sum(lengths) != n:  # (fractions that do not sum to 1 end here too, as in PyTorch)
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    if any(not isinstance(x, int) or x < 0 for x in lengths):
        raise ValueError(f"random_split(): lengths must be non-negative integers or fractions "
                         f"that sum to 1, got {lengths}")
    indices = ember.randperm(n, generator=_generator_or_default(generator),
                             device="cpu").tolist()
    return [Subset(dataset, indices[offset - length:offset])
            for offset, length in zip(itertools.accumulate(lengths), lengths)]
