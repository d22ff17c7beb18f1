"""Small built-in datasets that work offline.

`Digits`: the 1,797 8x8 handwritten digits (UCI ML hand-written digits) that ship inside
scikit-learn (``pip install 'ember[data]'``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

import ember

from .dataset import Dataset

__all__ = ["Digits"]

_INSTALL_HINT = "pip install 'ember[data]'"


@functools.lru_cache(maxsize=1)
def _load_digits() -> tuple[np.ndarray, np.ndarray]:
    """(images float64 (1797, 8, 8) in 0..16, labels int64 (1797,)), read once."""
    try:
        from sklearn.datasets import load_digits
    except ImportError as err:
        raise ImportError("ember.utils.data.datasets.Digits reads the digits that ship with "
                          f"scikit-learn, which is not installed: {_INSTALL_HINT}") from err
    bunch = load_digits()
    return (np.asarray(bunch.images, dtype=np.float64),
            np.asarray(bunch.target, dtype=np.int64))


def _stratified_split(labels: np.ndarray, split: float, seed: int) -> tuple[np.ndarray,
                                                                              np.ndarray]:
    """Per class, a seeded shuffle puts round(split * class size) images in train and the
    rest in test. Both index arrays come back sorted (the original order)."""
    rng = np.random.default_rng(seed)
    train, test = [], []
    for c in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == c))
        n_train = int(round(split * members.size))
        train.append(members[:n_train])
        test.append(members[n_train:])
    return np.sort(np.concatenate(train)), np.sort(np.concatenate(test))


class Digits(Dataset[tuple]):
    """The 8x8 handwritten digits of scikit-learn (1,797 images, classes 0-9), split into
    a train and a test set.

    Each sample is ``(image, label)``: `image` a float32 tensor of shape (1, 8, 8) (pixel
    values 0..16 divided by 16 into [0, 1] when `normalize`), `label` an int64 0-d tensor.

    The split is stratified and deterministic: within each class, a shuffle seeded by
    `seed` sends ``round(split * class size)`` images to train and the rest to test. The
    two sets partition the 1,797 images (with the same `split` and `seed`); `indices`
    holds each set's positions in scikit-learn's order.

    Args:
        train (bool): the training set (default) or the test set.
        split (float): fraction of each class in the training set, in (0, 1). Default: 0.8.
        seed (int): seed of the split. Default: 0.
        transform (Callable, optional): applied to the image tensor.
        normalize (bool): scale pixels to [0, 1] (default); else keep 0..16 (as float32).
        target_transform (Callable, optional): applied to the label tensor.

    Raises:
        ImportError: scikit-learn is not installed (``pip install 'ember[data]'``).

    Example::

        >>> train = Digits(train=True)
        >>> image, label = train[0]
        >>> image.shape, image.dtype, label.dtype
        (ember.Size([1, 8, 8]), ember.float32, ember.int64)
    """

    classes = [str(i) for i in range(10)]

    def __init__(self, train: bool = True, split: float = 0.8, seed: int = 0,
                 transform: Callable[[ember.Tensor], Any] | None = None,
                 normalize: bool = True,
                 target_transform: Callable[[ember.Tensor], Any] | None = None) -> None:
        if not 0.0 < split < 1.0:
            raise ValueError(f"Digits: split must be in (0, 1), got {split}")
        images, labels = _load_digits()
        train_idx, test_idx = _stratified_split(labels, split, seed)
        self.train = train
        self.split = split
        self.seed = seed
        self.transform = transform
        self.target_transform = target_transform
        self.normalize = normalize
        self.indices = train_idx if train else test_idx
        scale = 16.0 if normalize else 1.0
        self._images = (images[self.indices] / scale).astype(np.float32)[:, None, :, :]
        self._labels = labels[self.indices]

    @property
    def data(self) -> ember.Tensor:
        """All images of this set, float32 (N, 1, 8, 8) (before `transform`)."""
        return ember.tensor(self._images)

    @property
    def targets(self) -> ember.Tensor:
        """All labels of this set, int64 (N,)."""
        return ember.tensor(self._labels)

    def __len__(self) -> int:
        return len(self._labels)

    def __getitem__(self, index: int) -> tuple:
        image = ember.tensor(self._images[index])
        label = ember.tensor(self._labels[index], dtype=ember.int64)
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            label = self.target_transform(label)
        return image, label

    def __repr__(self) -> str:
        return (f"Dataset {type(self).__name__}\n"
                f"    Number of datapoints: {len(self)}\n"
                f"    Split: {'Train' if self.train else 'Test'} "
                f"({self.split:g} of each class, seed {self.seed})")
