"""PyTorch's module path of the pixel shuffles (`torch.nn.modules.pixelshuffle`); the
classes live in flatten.py."""

from ember.nn.modules.flatten import PixelShuffle, PixelUnshuffle  # noqa: F401

__all__ = ["PixelShuffle", "PixelUnshuffle"]
