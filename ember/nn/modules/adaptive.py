"""`AdaptiveLogSoftmaxWithLoss`: the adaptive softmax of "Efficient softmax approximation
for GPUs" (Grave et al.), for very many classes."""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence
from itertools import pairwise
from typing import Any

import ember
from ember import Tensor
from ember.nn import functional as F
from ember.nn.containers import ModuleList, Sequential
from ember.nn.module import Module
from ember.nn.modules.linear import Linear

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    r"""Adaptive softmax: the frequent classes (below ``cutoffs[0]``) and one entry per
    cluster of rarer ones form the head; each cluster's classes get their log-probability
    from a smaller projection (``in_features / div_value ** (i + 1)`` wide) plus their
    cluster's head log-probability.

    Args:
        in_features (int): size of each input sample.
        n_classes (int): number of classes.
        cutoffs (Sequence[int]): increasing cluster boundaries in ``[1, n_classes - 1]``.
        div_value (float): the projection's shrink factor per cluster (default: 4.0).
        head_bias (bool): give the head a bias (default: False).

    ``forward(input, target)`` returns ``(output, loss)``: each target's
    log-probability and the mean negative log-likelihood. :meth:`log_prob` gives every
    class's log-probability, :meth:`predict` the most likely class.
    """

    def __init__(self, in_features: int, n_classes: int, cutoffs: Sequence[int],
                 div_value: float = 4.0, head_bias: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers "
                             "sorted in an increasing order, where each value is between 1 "
                             "and n_classes-1")
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, device=device,
                           dtype=dtype)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(in_features // (div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(
                Linear(in_features, hsz, bias=False, device=device, dtype=dtype),
                Linear(hsz, osz, bias=False, device=device, dtype=dtype)))

    def reset_parameters(self) -> None:
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_: Tensor, target_: Tensor) -> _ASMoutput:
        targ_dim = target_.ndim
        if targ_dim == 1:
            if input_.shape[0] != target_.shape[0]:
                raise RuntimeError("Input and target should have the same size in the batch "
                                   "dimension.")
            if input_.ndim != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found "
                                   f"inputs with size {input_.size()}")
        elif targ_dim == 0:
            if input_.ndim != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found "
                                   f"inputs with size {input_.size()}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = targ_dim > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        if target.numel():
            low, high = int(target.min()), int(target.max())
            if low < 0 or high >= self.n_classes:
                raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but "
                                   f"values in range [{low}, {high}] were found. ")
        # the head's index for each row: its class, or its cluster's entry
        gather_inds = target
        output = ember.zeros(target.shape[0], dtype=input.dtype, device=input.device)
        for i, (low, high) in enumerate(pairwise(self.cutoffs)):
            mask = (target >= low) & (target < high)
            rows = mask.nonzero().reshape(-1)
            if rows.numel() == 0:
                continue
            gather_inds = ember.where(mask, self.shortlist_size + i, gather_inds)
            relative = target.index_select(0, rows) - low
            cluster = F.log_softmax(self.tail[i](input.index_select(0, rows)), dim=1)
            local = cluster.gather(1, relative.unsqueeze(1)).squeeze(1)
            output = output.index_add(0, rows, local)
        head = F.log_softmax(self.head(input), dim=1)
        output = output + head.gather(1, gather_inds.unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        if not batched:
            output = output.squeeze(0)
        return _ASMoutput(output, loss)

    def _get_full_log_prob(self, input: Tensor, head_output: Tensor) -> Tensor:
        head = F.log_softmax(head_output, dim=1)
        parts = [head[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster = F.log_softmax(self.tail[i](input), dim=1)
            parts.append(cluster + head[:, self.shortlist_size + i].unsqueeze(1))
        return ember.cat(parts, 1)

    def log_prob(self, input: Tensor) -> Tensor:
        r"""The log-probability of every class, ``(N, n_classes)``."""
        return self._get_full_log_prob(input, self.head(input))

    def predict(self, input: Tensor) -> Tensor:
        r"""The most likely class of each row, ``(N,)``; the same as
        ``log_prob(input).argmax(dim=1)``, computed only where the head's best is a
        cluster."""
        head_output = self.head(input)
        output = head_output.argmax(dim=1)
        not_in_shortlist = output >= self.shortlist_size
        if not bool(not_in_shortlist.any()):
            return output
        full = self._get_full_log_prob(input, head_output).argmax(dim=1)
        return ember.where(not_in_shortlist, full, output)
