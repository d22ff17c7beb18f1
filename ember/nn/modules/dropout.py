"""Dropout layers: active in training mode, the identity in eval mode."""

from __future__ import annotations

from ember import Tensor
from ember.nn import functional as F
from ember.nn.module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
           "FeatureAlphaDropout"]


class _DropoutNd(Module):
    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    r"""During training, zero each element with probability ``p`` and scale the others
    by :math:`1/(1-p)`; in eval mode, the identity.

    Args:
        p: probability of an element to be zeroed. Default: 0.5
        inplace: do it in place. Default: ``False``
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout(input, self.p, self.training, self.inplace)


class Dropout1d(_DropoutNd):
    r"""Zero whole channels of ``(N, C, L)`` / ``(C, L)`` input in training."""

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    r"""Zero whole channels of ``(N, C, H, W)`` / ``(C, H, W)`` input in training."""

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    r"""Zero whole channels of ``(N, C, D, H, W)`` / ``(C, D, H, W)`` input."""

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    r"""Dropout that keeps the self-normalising property of SELU networks."""

    def forward(self, input: Tensor) -> Tensor:
        return F.alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    r"""Alpha dropout of whole channels of ``(N, C, *)`` input in training
    (:func:`F.feature_alpha_dropout`): a dropped channel takes SELU's negative
    saturation, and the mean and variance are kept."""

    def forward(self, input: Tensor) -> Tensor:
        return F.feature_alpha_dropout(input, self.p, self.training)
