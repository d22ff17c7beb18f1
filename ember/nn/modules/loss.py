"""Loss modules: thin wrappers over the `ember.nn.functional` losses, with torch's
constructor arguments (including the deprecated `size_average` / `reduce`)."""

from __future__ import annotations

import math
import warnings
from typing import Any

from ember import Tensor
from ember.nn import functional as F
from ember.nn.module import Module

__all__ = [
    "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "CrossEntropyLoss", "NLLLoss",
    "BCELoss", "BCEWithLogitsLoss", "KLDivLoss", "SoftMarginLoss", "MarginRankingLoss",
    "HingeEmbeddingLoss", "CosineEmbeddingLoss", "PoissonNLLLoss", "GaussianNLLLoss",
    "TripletMarginLoss", "MultiLabelSoftMarginLoss",
    # nnmisc family (issue 16)
    "MultiMarginLoss", "MultiLabelMarginLoss", "TripletMarginWithDistanceLoss", "NLLLoss2d",
    "CTCLoss", "LinearCrossEntropyLoss",
]


class _Loss(Module):
    reduction: str

    def __init__(self, size_average: bool | None = None, reduce: bool | None = None,
                 reduction: str = "mean") -> None:
        super().__init__()
        if size_average is not None or reduce is not None:
            self.reduction = F._legacy_reduction(size_average, reduce)
        else:
            self.reduction = reduction


class _WeightedLoss(_Loss):
    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None,
                 reduce: bool | None = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        # a buffer: it moves with `.to()` and is saved in the state_dict, as in torch
        self.register_buffer("weight", weight)
        self.weight: Tensor | None


class L1Loss(_Loss):
    r"""Mean absolute error :math:`|x_n - y_n|`, reduced by ``reduction``
    (``'none'`` | ``'mean'`` | ``'sum'``)."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.l1_loss(input, target, reduction=self.reduction)


class MSELoss(_Loss):
    r"""Mean squared error :math:`(x_n - y_n)^2`, reduced by ``reduction``."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.mse_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    r"""Squared error below ``beta``, absolute error above (:func:`F.smooth_l1_loss`)."""

    def __init__(self, size_average: bool | None = None, reduce: bool | None = None,
                 reduction: str = "mean", beta: float = 1.0) -> None:
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    r"""Squared error below ``delta``, ``delta``-scaled absolute error above."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class NLLLoss(_WeightedLoss):
    r"""Negative log likelihood of log-probabilities at class indices
    (:func:`F.nll_loss`), with class ``weight`` and ``ignore_index``."""

    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None,
                 ignore_index: int = -100, reduce: bool | None = None,
                 reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    r"""Cross entropy between logits and class indices or class probabilities
    (:func:`F.cross_entropy`), with ``weight``, ``ignore_index`` and
    ``label_smoothing``."""

    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None,
                 ignore_index: int = -100, reduce: bool | None = None,
                 reduction: str = "mean", label_smoothing: float = 0.0) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.cross_entropy(input, target, weight=self.weight,
                               ignore_index=self.ignore_index, reduction=self.reduction,
                               label_smoothing=self.label_smoothing)


class BCELoss(_WeightedLoss):
    r"""Binary cross entropy of probabilities (:func:`F.binary_cross_entropy`)."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy(input, target, weight=self.weight,
                                      reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    r"""Sigmoid and binary cross entropy in one stable step
    (:func:`F.binary_cross_entropy_with_logits`), with ``weight`` and ``pos_weight``
    (both buffers)."""

    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None,
                 reduce: bool | None = None, reduction: str = "mean",
                 pos_weight: Tensor | None = None) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)
        self.weight: Tensor | None
        self.pos_weight: Tensor | None

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy_with_logits(input, target, self.weight,
                                                  pos_weight=self.pos_weight,
                                                  reduction=self.reduction)


class KLDivLoss(_Loss):
    r"""Kullback-Leibler divergence of log-probabilities (:func:`F.kl_div`);
    ``reduction='batchmean'`` gives the true KL divergence."""

    def __init__(self, size_average: bool | None = None, reduce: bool | None = None,
                 reduction: str = "mean", log_target: bool = False) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class SoftMarginLoss(_Loss):
    r""":math:`\log(1 + e^{-yx})` for targets in {-1, 1}."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MarginRankingLoss(_Loss):
    r""":math:`\max(0, -y(x_1 - x_2) + \text{margin})`."""

    def __init__(self, margin: float = 0.0, size_average: bool | None = None,
                 reduce: bool | None = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin,
                                     reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    r""":math:`x` for :math:`y = 1`, :math:`\max(0, \text{margin} - x)` for
    :math:`y = -1`."""

    def __init__(self, margin: float = 1.0, size_average: bool | None = None,
                 reduce: bool | None = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.hinge_embedding_loss(input, target, margin=self.margin,
                                      reduction=self.reduction)


class CosineEmbeddingLoss(_Loss):
    r""":math:`1 - \cos(x_1, x_2)` for :math:`y = 1`,
    :math:`\max(0, \cos(x_1, x_2) - \text{margin})` for :math:`y = -1`."""

    def __init__(self, margin: float = 0.0, size_average: bool | None = None,
                 reduce: bool | None = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin,
                                       reduction=self.reduction)


class PoissonNLLLoss(_Loss):
    r"""Negative log likelihood of a Poisson-distributed target."""

    def __init__(self, log_input: bool = True, full: bool = False,
                 size_average: bool | None = None, eps: float = 1e-8,
                 reduce: bool | None = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_input = log_input
        self.full = full
        self.eps = eps

    def forward(self, log_input: Tensor, target: Tensor) -> Tensor:
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input,
                                  full=self.full, eps=self.eps, reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    r"""Negative log likelihood of a Gaussian with predicted mean and variance."""

    def __init__(self, *, full: bool = False, eps: float = 1e-6,
                 reduction: str = "mean") -> None:
        super().__init__(None, None, reduction)
        self.full = full
        self.eps = eps

    def forward(self, input: Tensor, target: Tensor, var: Tensor | float) -> Tensor:
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps,
                                   reduction=self.reduction)


class TripletMarginLoss(_Loss):
    r""":math:`\max(d(a, p) - d(a, n) + \text{margin}, 0)`."""

    def __init__(self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6,
                 swap: bool = False, size_average: bool | None = None,
                 reduce: bool | None = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got "
                             f"{margin} instead")
        self.margin = margin
        self.p = p
        self.eps = eps
        self.swap = swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p,
                                     eps=self.eps, swap=self.swap, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    r"""Multi-label one-versus-all logistic loss."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight,
                                             reduction=self.reduction)


# -- nnmisc family (issue 16) ----------------------------------------------------------


class MultiMarginLoss(_WeightedLoss):
    r"""Multi-class hinge loss (:func:`F.multi_margin_loss`):
    :math:`\frac{1}{C}\sum_{i \ne y} w_y \max(0, margin - x_y + x_i)^p`."""

    def __init__(self, p: int = 1, margin: float = 1.0, weight: Tensor | None = None,
                 size_average: bool | None = None, reduce: bool | None = None,
                 reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        if p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.ndim != 1:
            raise ValueError(f"MultiMarginLoss: expected weight to be None or 1D tensor, got "
                             f"{weight.ndim}D instead")
        self.p = p
        self.margin = margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin,
                                   weight=self.weight, reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    r"""Multi-label hinge loss (:func:`F.multilabel_margin_loss`): each target row lists
    its classes, ended by the first -1."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    r"""Triplet loss with any distance function
    (:func:`F.triplet_margin_with_distance_loss`):
    :math:`\max(d(a, p) - d(a, n) + margin, 0)`."""

    def __init__(self, *, distance_function: Any = None, margin: float = 1.0,
                 swap: bool = False, reduction: str = "mean") -> None:
        super().__init__(size_average=None, reduce=None, reduction=reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater "
                             f"than 0, got {margin} instead")
        from ember.nn.modules.distance import PairwiseDistance
        # PyTorch's default is a PairwiseDistance module (a submodule: it shows in repr)
        self.distance_function = distance_function if distance_function is not None \
            else PairwiseDistance()
        self.margin = margin
        self.swap = swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return F.triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function,
            margin=self.margin, swap=self.swap, reduction=self.reduction)


class NLLLoss2d(NLLLoss):
    r"""The old name of :class:`NLLLoss` on ``(N, C, H, W)`` input (deprecated in
    PyTorch; the same loss)."""

    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None,
                 ignore_index: int = -100, reduce: bool | None = None,
                 reduction: str = "mean") -> None:
        warnings.warn("`NLLLoss2d` has been deprecated. Please use `NLLLoss` instead as a "
                      "drop-in replacement and see https://pytorch.org/docs/main/nn.html#"
                      "torch.nn.NLLLoss for more details.", FutureWarning, stacklevel=2)
        super().__init__(weight, size_average, ignore_index, reduce, reduction)


class CTCLoss(_Loss):
    r"""The Connectionist Temporal Classification loss (:func:`F.ctc_loss`) of
    ``(T, N, C)`` log-probabilities against unaligned target sequences.

    Args:
        blank (int): the blank label (default: 0).
        reduction (str): ``'none'``, ``'mean'`` (losses divided by their target lengths,
            then averaged) or ``'sum'`` (default: 'mean').
        zero_infinity (bool): zero infinite losses and their gradients (default: False).
    """

    def __init__(self, blank: int = 0, reduction: str = "mean",
                 zero_infinity: bool = False) -> None:
        super().__init__(reduction=reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs: Tensor, targets: Tensor, input_lengths: Tensor,
                target_lengths: Tensor) -> Tensor:
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank,
                          self.reduction, self.zero_infinity)


class LinearCrossEntropyLoss(_WeightedLoss):
    r"""A linear layer and the cross entropy of its logits in one module
    (:func:`F.linear_cross_entropy`); ``linear`` holds the ``(C * prod(out_features),
    in_features)`` weight (and bias, if asked for).

    Args:
        in_features (int): size of each input sample.
        num_classes (int): ``C``.
        out_features (tuple): extra dims of a K-dimensional loss (default: ()).
        bias (bool): give the linear map a bias (default: False).
        reduction, weight, ignore_index, label_smoothing: as :class:`CrossEntropyLoss`
            (``ignore_index`` None: -100 for class indices).
        options: PyTorch's chunking options (accepted; the result is the same).
    """

    def __init__(self, in_features: int, num_classes: int, *, out_features: tuple = (),
                 bias: bool = False, device: Any = None, dtype: Any = None,
                 reduction: str = "mean", weight: Tensor | None = None,
                 ignore_index: int | None = None, label_smoothing: float = 0.0,
                 options: Any = None) -> None:
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(f"expected weight shape to be {(num_classes,)}, got "
                               f"{tuple(weight.shape)}")
        if label_smoothing < 0 or label_smoothing > 1.0:
            raise RuntimeError(f"expected label_smoothing to be in range [0, 1], got "
                               f"{label_smoothing}")
        super().__init__(weight=weight, size_average=None, reduce=None, reduction=reduction)
        from ember.nn.modules.linear import Linear
        self.num_classes = num_classes
        self.out_features = out_features
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        self.linear = Linear(in_features, math.prod(out_features, start=num_classes),
                             bias=bias, device=device, dtype=dtype)
        self.options = options

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        linear_weight = self.linear.weight.reshape(
            (self.num_classes, *self.out_features, self.linear.in_features))
        linear_bias = None if self.linear.bias is None else \
            self.linear.bias.reshape((self.num_classes, *self.out_features))
        return F.linear_cross_entropy(input, linear_weight, target, linear_bias=linear_bias,
                                      weight=self.weight, reduction=self.reduction,
                                      ignore_index=self.ignore_index,
                                      label_smoothing=self.label_smoothing,
                                      options=self.options)

    def extra_repr(self) -> str:
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
                f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")
