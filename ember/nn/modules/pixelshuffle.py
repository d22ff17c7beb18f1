"""PyTorch's module of the pixel shuffles (`torch.nn.modules.pixelshuffle`), where they print and
pickle from; their code is in flatten.py."""

import sys

from ember.core.dtype import place_in
from ember.nn.modules.flatten import PixelShuffle, PixelUnshuffle  # noqa: F401

__all__ = ["PixelShuffle", "PixelUnshuffle"]

place_in(sys.modules[__name__], PixelShuffle, PixelUnshuffle)
