"""Samplers: iterables of dataset indices (or of lists of indices, for `BatchSampler`),
as in `torch.utils.data.sampler`.

Randomness comes from an `ember.Generator` when one is given, else from
`ember.default_generator` (which `ember.manual_seed` seeds), with PyTorch's draws in
PyTorch's order: ember's CPU generator is PyTorch's, so a seeded program shuffles its data
exactly as it does under PyTorch.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence, Sized
from typing import Any, Generic, TypeVar

import numpy as np

import ember

__all__ = [
    "BatchSampler",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
]

T_co = TypeVar("T_co", covariant=True)

def _generator_or_default(generator: Any) -> ember.Generator:
    return ember.default_generator if generator is None else generator


def draw_seed(generator: Any = None) -> int:
    """A seed in [0, 2**63) drawn from `generator` (default: `ember.default_generator`) as
    PyTorch draws one: `empty((), dtype=int64).random_(generator=generator)`."""
    return int(ember.empty((), dtype=ember.int64, device="cpu").random_(
        generator=_generator_or_default(generator)).item())


def _check_num_samples(num_samples: Any) -> None:
    if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
        raise ValueError("num_samples should be a positive integer value, but got "
                         f"num_samples={num_samples}")


class Sampler(Generic[T_co]):
    """Base class for all samplers.

    A subclass provides `__iter__`, yielding dataset indices (or lists of indices for a
    batch sampler), and may provide `__len__`, which `len(DataLoader)` needs. It takes no
    constructor arguments (PyTorch 2.13 dropped the old `data_source`).
    """

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError


class SequentialSampler(Sampler[int]):
    """Samples elements sequentially, always in the same order.

    Args:
        data_source (Sized): the dataset to sample from.
    """

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler[int]):
    """Samples elements randomly. Without replacement: a random permutation of the dataset
    (repeated whole, then truncated, when `num_samples` exceeds its length). With
    replacement: `num_samples` independent uniform draws.

    Args:
        data_source (Sized): the dataset to sample from.
        replacement (bool): draw with replacement. Default: ``False``.
        num_samples (int, optional): how many indices to draw. Default: ``len(data_source)``.
        generator (ember.Generator, optional): the generator to draw from. When ``None``,
            each pass draws a fresh seed from ``ember.default_generator``.
    """

    def __init__(self, data_source: Sized, replacement: bool = False,
                 num_samples: int | None = None, generator: Any = None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError("replacement should be a boolean value, but got "
                            f"replacement={self.replacement}")
        _check_num_samples(self.num_samples)

    @property
    def num_samples(self) -> int:
        # the dataset may change size between passes: read its length each time
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        if self.generator is None:
            # like torch: one seed from the default generator per pass, so a pass does not
            # interleave its draws with other users of the default generator
            generator = ember.Generator().manual_seed(draw_seed())
        else:
            generator = self.generator
        if self.replacement:
            # draw in chunks of 32 so a huge num_samples does not allocate up front
            for _ in range(self.num_samples // 32):
                yield from ember.randint(0, n, (32,), generator=generator, device="cpu").tolist()
            yield from ember.randint(0, n, (self.num_samples % 32,), generator=generator,
                                     device="cpu").tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from ember.randperm(n, generator=generator, device="cpu").tolist()
            yield from ember.randperm(n, generator=generator,
                                      device="cpu").tolist()[:self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """Samples elements randomly from a given sequence of indices, without replacement.

    Args:
        indices (sequence): the indices to draw from.
        generator (ember.Generator, optional): the generator to draw from (default:
            ``ember.default_generator``).
    """

    def __init__(self, indices: Sequence[int], generator: Any = None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        perm = ember.randperm(len(self.indices), generator=_generator_or_default(self.generator),
                              device="cpu")
        for i in perm.tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """Samples indices ``0 .. len(weights) - 1`` with probabilities proportional to
    `weights`.

    Args:
        weights (sequence): non-negative weights, not necessarily summing to one.
        num_samples (int): how many indices to draw.
        replacement (bool): draw with replacement (default). Without replacement an index
            is drawn at most once, each draw proportional to the weights of the indices
            left (computed in one pass with the Efraimidis-Spirakis keys ``u ** (1 / w)``).
        generator (ember.Generator, optional): the generator to draw from (default:
            ``ember.default_generator``).

    Example::

        >>> g = ember.Generator().manual_seed(0)
        >>> sampler = WeightedRandomSampler([0.1, 0.9, 0.4, 0.7, 3.0, 0.6], 5, generator=g)
        >>> len(list(sampler))  # mostly 4s: index 4 carries half the weight
        5
    """

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator: Any = None) -> None:
        _check_num_samples(num_samples)
        if not isinstance(replacement, bool):
            raise ValueError("replacement should be a boolean value, but got "
                             f"replacement={replacement}")
        weights_tensor = ember.as_tensor(weights, dtype=ember.float64, device="cpu")
        if weights_tensor.ndim != 1:
            raise ValueError("weights should be a 1d sequence but given weights have shape "
                             f"{tuple(weights_tensor.shape)}")
        self.weights = weights_tensor
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def _draw(self) -> np.ndarray:
        # PyTorch's draw: torch.multinomial of the float64 weights
        return ember.multinomial(self.weights, self.num_samples, self.replacement,
                                 generator=self.generator).numpy()

    def __iter__(self) -> Iterator[int]:
        yield from self._draw().tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[list[int]]):
    """Wraps another sampler to yield mini-batches of indices.

    Args:
        sampler (Sampler or Iterable): the base sampler.
        batch_size (int): size of a mini-batch.
        drop_last (bool): drop the last batch if it would be smaller than `batch_size`.

    Example::

        >>> list(BatchSampler(SequentialSampler(range(10)), batch_size=3, drop_last=False))
        [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
        >>> list(BatchSampler(SequentialSampler(range(10)), batch_size=3, drop_last=True))
        [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    """

    def __init__(self, sampler: Sampler[int] | Iterable[int], batch_size: int,
                 drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError("batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        sampler_iter = iter(self.sampler)
        if self.drop_last:
            # zip of one iterator repeated stops at the first incomplete group
            for batch in zip(*([sampler_iter] * self.batch_size)):
                yield [*batch]
        else:
            batch = [*itertools.islice(sampler_iter, self.batch_size)]
            while batch:
                yield batch
                batch = [*itertools.islice(sampler_iter, self.batch_size)]

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size  # type: ignore[arg-type]
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size  # type: ignore[arg-type]
