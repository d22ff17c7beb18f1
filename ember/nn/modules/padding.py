"""Padding layers: constant (zero), reflection, replication and circular padding."""

from __future__ import annotations

from collections.abc import Sequence

from ember import Tensor
from ember.nn import functional as F
from ember.nn.module import Module

__all__ = ["ConstantPad1d", "ConstantPad2d", "ZeroPad1d", "ZeroPad2d", "ReflectionPad1d",
           "ReflectionPad2d", "ReplicationPad1d", "ReplicationPad2d", "CircularPad1d",
           "CircularPad2d", "ConstantPad3d", "ZeroPad3d", "ReflectionPad3d",
           "ReplicationPad3d", "CircularPad3d"]


def _expand(padding: int | Sequence[int], n: int) -> tuple[int, ...]:
    if isinstance(padding, int):
        return (padding,) * n
    return tuple(padding)


class _ConstantPadNd(Module):
    _n = 2

    def __init__(self, padding: int | Sequence[int], value: float) -> None:
        super().__init__()
        self.padding = _expand(padding, self._n)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    r"""Pad the last dimension with ``value``: ``padding`` is an int or (left, right)."""

    _n = 2


class ConstantPad2d(_ConstantPadNd):
    r"""Pad the last two dimensions with ``value``: ``padding`` is an int or
    (left, right, top, bottom)."""

    _n = 4


class _ZeroPad:
    """`ConstantPad*d` with the value 0, printed as PyTorch's ZeroPad*d."""

    def __init__(self, padding: int | Sequence[int]) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad1d(_ZeroPad, ConstantPad1d):
    r"""Pad the last dimension with zeros."""


class ZeroPad2d(_ZeroPad, ConstantPad2d):
    r"""Pad the last two dimensions with zeros."""


class _ModePadNd(Module):
    _n = 2
    _mode = "reflect"

    def __init__(self, padding: int | Sequence[int]) -> None:
        super().__init__()
        self.padding = _expand(padding, self._n)

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ReflectionPad1d(_ModePadNd):
    r"""Pad the last dimension with the reflection of the input (edge excluded)."""

    _n, _mode = 2, "reflect"


class ReflectionPad2d(_ModePadNd):
    r"""Pad the last two dimensions with the reflection of the input."""

    _n, _mode = 4, "reflect"


class ReplicationPad1d(_ModePadNd):
    r"""Pad the last dimension by repeating the edge value."""

    _n, _mode = 2, "replicate"


class ReplicationPad2d(_ModePadNd):
    r"""Pad the last two dimensions by repeating the edge values."""

    _n, _mode = 4, "replicate"


class CircularPad1d(_ModePadNd):
    r"""Pad the last dimension by wrapping around."""

    _n, _mode = 2, "circular"


class CircularPad2d(_ModePadNd):
    r"""Pad the last two dimensions by wrapping around."""

    _n, _mode = 4, "circular"


class ConstantPad3d(_ConstantPadNd):
    r"""Pad the last three dimensions with ``value``: ``padding`` is an int or
    (left, right, top, bottom, front, back)."""

    _n = 6


class ZeroPad3d(_ZeroPad, ConstantPad3d):
    r"""Pad the last three dimensions with zeros."""


class ReflectionPad3d(_ModePadNd):
    r"""Pad the last three dimensions with the reflection of the input."""

    _n, _mode = 6, "reflect"


class ReplicationPad3d(_ModePadNd):
    r"""Pad the last three dimensions by repeating the edge values."""

    _n, _mode = 6, "replicate"


class CircularPad3d(_ModePadNd):
    r"""Pad the last three dimensions by wrapping around."""

    _n, _mode = 6, "circular"
