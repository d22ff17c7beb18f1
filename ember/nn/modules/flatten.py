"""`Flatten`, `Unflatten`, `PixelShuffle`, `PixelUnshuffle`, `Upsample`: reshaping and
resizing layers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember import Tensor
from ember.nn import functional as F
from ember.nn.module import Module

__all__ = ["Flatten", "Unflatten", "PixelShuffle", "PixelUnshuffle", "Upsample",
           "UpsamplingNearest2d", "UpsamplingBilinear2d"]


class Flatten(Module):
    r"""Flatten dims ``start_dim`` .. ``end_dim`` into one (by default all but the
    batch dimension)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    r"""Expand dimension ``dim`` into ``unflattened_size``."""

    def __init__(self, dim: int, unflattened_size: Sequence[int]) -> None:
        super().__init__()
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError(f"unflattened_size must be a tuple of ints, but found type "
                            f"{type(unflattened_size).__name__}")
        for idx, elem in enumerate(unflattened_size):
            if not isinstance(elem, int):
                raise TypeError(f"unflattened_size must be tuple of ints, but found element of "
                                f"type {type(elem).__name__} at pos {idx}")
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input: Tensor) -> Tensor:
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class PixelShuffle(Module):
    r"""``(*, C*r^2, H, W) -> (*, C, H*r, W*r)``."""

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    r"""``(*, C, H*r, W*r) -> (*, C*r^2, H, W)``."""

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


class Upsample(Module):
    r"""Upsample (or resize) spatial data with :func:`ember.nn.functional.interpolate`.

    Args:
        size: output spatial size; or ``scale_factor``: its multiplier.
        mode: ``'nearest'`` (default), ``'nearest-exact'``, ``'linear'``, ``'bilinear'``,
            ``'trilinear'`` or ``'area'``.
        align_corners: for the linear modes.
    """

    def __init__(self, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                 align_corners: bool | None = None,
                 recompute_scale_factor: bool | None = None) -> None:
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.interpolate(input, self.size, self.scale_factor, self.mode,
                             self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self) -> str:
        if self.scale_factor is not None:
            info = "scale_factor=" + repr(self.scale_factor)
        else:
            info = "size=" + repr(self.size)
        return info + ", mode=" + repr(self.mode)


class UpsamplingNearest2d(Upsample):
    r"""2-D nearest-neighbour upsampling (``Upsample(mode='nearest')`` of 4-D input)."""

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    r"""2-D bilinear upsampling with ``align_corners=True`` (``Upsample(mode='bilinear',
    align_corners=True)`` of 4-D input)."""

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
