"""`ChannelShuffle`: ShuffleNet's interleaving of channel groups."""

from __future__ import annotations

from ember import Tensor
from ember.nn import functional as F
from ember.nn.module import Module

__all__ = ["ChannelShuffle"]


class ChannelShuffle(Module):
    r"""Split the channels of an ``(N, C, *)`` input into ``groups`` groups and interleave
    them (:func:`F.channel_shuffle`)."""

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"
