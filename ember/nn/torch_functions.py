"""The ``torch.*`` forms of nn ops (``torch.batch_norm``, ``torch.kl_div``,
``torch.lstm`` ...), with ATen's signatures: positional arguments in ATen's order,
``reduction`` as an integer (0 none, 1 mean, 2 sum), the ``native_*`` ops' extra outputs.

Programs call them directly (and ``torch.nn.functional`` is written on them in PyTorch);
here each one forwards to the one implementation in ``ember.nn.functional`` or
``ember.nn.modules``. The losses' ``reduction`` defaults to 0 (none): ATen's schemas say
Mean, but PyTorch's Python bindings parse that default as 0, and programs see that.
``ember`` exposes these on first use (``ember.batch_norm``), so ``import ember`` does not
load ``ember.nn``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ember
from ember import Tensor
from ember.core.torch_function import overridable
from ember.nn import functional as F

__all__ = [
    "batch_norm", "instance_norm", "group_norm", "rms_norm", "native_batch_norm",
    "native_group_norm", "native_layer_norm", "native_dropout", "dropout", "dropout_",
    "alpha_dropout", "alpha_dropout_", "feature_dropout", "feature_dropout_",
    "feature_alpha_dropout", "feature_alpha_dropout_", "embedding", "celu", "celu_", "selu",
    "selu_", "threshold", "threshold_", "rrelu", "rrelu_", "binary_cross_entropy_with_logits",
    "cosine_embedding_loss", "hinge_embedding_loss", "kl_div", "margin_ranking_loss",
    "poisson_nll_loss", "triplet_margin_loss", "ctc_loss", "lstm", "gru", "rnn_tanh",
    "rnn_relu", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell",
    "batch_norm_stats", "batch_norm_elemt", "batch_norm_gather_stats",
    "batch_norm_gather_stats_with_counts", "batch_norm_backward_reduce",
    "batch_norm_backward_elemt", "batch_norm_update_stats", "embedding_bag",
    "embedding_renorm_", "cosine_similarity", "pairwise_distance", "pdist", "pixel_shuffle",
    "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle", "bilinear",
]

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _reduction(op: str, reduction: int) -> str:
    """ATen's reduction enum as nn.functional's string."""
    if isinstance(reduction, bool) or not isinstance(reduction, int):
        raise TypeError(f"{op}(): argument 'reduction' must be int, not "
                        f"{type(reduction).__name__}")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{op}(): reduction must be 0 (none), 1 (mean) or 2 (sum), got "
                         f"{reduction}")
    return _REDUCTIONS[reduction]


# -- normalisation --------------------------------------------------------------------


def batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None,
               running_mean: Tensor | None, running_var: Tensor | None, training: bool,
               momentum: float, eps: float, cudnn_enabled: bool) -> Tensor:
    r"""``torch.batch_norm``: :func:`ember.nn.functional.batch_norm` with ATen's argument
    order (``cudnn_enabled`` is accepted and means nothing here)."""
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum,
                        eps)


def instance_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None,
                  running_mean: Tensor | None, running_var: Tensor | None,
                  use_input_stats: bool, momentum: float, eps: float,
                  cudnn_enabled: bool) -> Tensor:
    r"""``torch.instance_norm``: :func:`ember.nn.functional.instance_norm` with ATen's
    argument order."""
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                           momentum, eps)


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5,
               cudnn_enabled: bool = True) -> Tensor:
    r"""``torch.group_norm``: :func:`ember.nn.functional.group_norm`."""
    return F.group_norm(input, num_groups, weight, bias, eps)


def rms_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    r"""``torch.rms_norm``: :func:`ember.nn.functional.rms_norm`."""
    return F.rms_norm(input, normalized_shape, weight, eps)


def native_batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None,
                      running_mean: Tensor | None, running_var: Tensor | None,
                      training: bool, momentum: float, eps: float
                      ) -> tuple[Tensor, Tensor, Tensor]:
    r"""``torch.native_batch_norm``: ``(output, save_mean, save_invstd)``, the batch's
    per-channel mean and :math:`1/\sqrt{var + eps}` (biased variance) when ``training``,
    else two empty tensors (as PyTorch's CPU kernel returns)."""
    out = F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    if not training:
        empty = ember.empty(0, dtype=input.dtype, device=input.device)
        return out, empty, empty.clone()
    dims = (0,) + tuple(range(2, input.ndim))
    with ember.no_grad():
        mean = input.mean(dims)
        var = input.var(dims, correction=0)
    return out, mean, ember.rsqrt(var + eps)


def native_group_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, N: int,
                      C: int, HxW: int, group: int, eps: float  # noqa: N803 - ATen's names
                      ) -> tuple[Tensor, Tensor, Tensor]:
    r"""``torch.native_group_norm``: ``(output, mean, rstd)``, the last two ``(N, group)``
    statistics of each group."""
    if input.numel() != N * C * HxW:
        raise RuntimeError(f"Expected input to have {N * C * HxW} elements, got "
                           f"{input.numel()}")
    out = F.group_norm(input, group, weight, bias, eps)
    with ember.no_grad():
        grouped = input.reshape(N, group, -1)
        mean = grouped.mean(-1)
        rstd = ember.rsqrt(grouped.var(-1, correction=0) + eps)
    return out, mean, rstd


def native_layer_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None,
                      bias: Tensor | None, eps: float) -> tuple[Tensor, Tensor, Tensor]:
    r"""``torch.native_layer_norm``: ``(output, mean, rstd)``, the statistics shaped as
    the input with the normalised dims kept as 1."""
    shape = tuple(normalized_shape)
    out = F.layer_norm(input, shape, weight, bias, eps)
    dims = tuple(range(input.ndim - len(shape), input.ndim))
    with ember.no_grad():
        mean = input.mean(dims, keepdim=True)
        rstd = ember.rsqrt(input.var(dims, correction=0, keepdim=True) + eps)
    return out, mean, rstd


# -- dropout --------------------------------------------------------------------------


def native_dropout(input: Tensor, p: float, train: bool | None) -> tuple[Tensor, Tensor]:
    r"""``torch.native_dropout``: ``(output, mask)``, ``mask`` the boolean kept elements;
    ``train=None`` means training. Out of training, the input (a copy) and an all-true
    mask."""
    if train is False or p == 0.0:
        return input.clone(), ember.ones(input.shape, dtype=ember.bool, device=input.device)
    F._check_p(p)
    mask = ember.empty(tuple(input.shape), dtype=ember.bool, device=input.device) \
        .bernoulli_(1.0 - p)  # PyTorch's draw: the same mask for the same seed
    scale = 0.0 if p == 1.0 else 1.0 / (1.0 - p)
    return input * mask.to(input.dtype) * scale, mask


def dropout(input: Tensor, p: float, train: bool) -> Tensor:
    r"""``torch.dropout``: :func:`ember.nn.functional.dropout`."""
    return F.dropout(input, p, train)


def dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    r"""In-place ``torch.dropout``."""
    return F.dropout(input, p, train, inplace=True)


def alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    r"""``torch.alpha_dropout``: :func:`ember.nn.functional.alpha_dropout`."""
    return F.alpha_dropout(input, p, train)


def alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    r"""In-place ``torch.alpha_dropout``."""
    return F.alpha_dropout(input, p, train, inplace=True)


def _feature_mask(input: Tensor) -> tuple:
    if input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return tuple(input.shape[:2]) + (1,) * (input.ndim - 2)


def feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    r"""``torch.feature_dropout``: zero whole channels (dim 1) of an ``(N, C, *)`` input
    with probability ``p`` and scale the rest by ``1/(1-p)``, when ``train``."""
    F._check_p(p)
    if not train or p == 0.0:
        return input
    return F._dropout_with_mask_shape(input, p, _feature_mask(input), False)


def feature_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    r"""In-place ``torch.feature_dropout``."""
    F._check_p(p)
    if not train or p == 0.0:
        return input
    return F._dropout_with_mask_shape(input, p, _feature_mask(input), True)


def feature_alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    r"""``torch.feature_alpha_dropout``: :func:`ember.nn.functional.feature_alpha_dropout`."""
    return F.feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    r"""In-place ``torch.feature_alpha_dropout``."""
    return F.feature_alpha_dropout(input, p, train, inplace=True)


# -- embedding and activations --------------------------------------------------------


def embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    r"""``torch.embedding``: the rows of ``weight`` at ``indices`` (note: weight first);
    a negative ``padding_idx`` means none."""
    return F.embedding(indices, weight, padding_idx if padding_idx >= 0 else None,
                       scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def embedding_renorm_(input: Tensor, indices: Tensor, max_norm: float,
                      norm_type: float) -> Tensor:
    r"""``torch.embedding_renorm_``: rescales, in place, the rows of ``input`` at
    ``indices`` whose ``norm_type``-norm exceeds ``max_norm`` to that norm (what
    ``F.embedding(..., max_norm=)`` does to its weight); returns ``input``."""
    if indices.dtype not in (ember.int64, ember.int32):
        raise RuntimeError(f"Expected tensor for argument #2 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got {indices.type()} "
                           f"instead (while checking arguments for embedding_renorm_)")
    if ember.is_grad_enabled() and input.requires_grad and input.is_leaf:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    flat = indices.reshape(-1).to(ember.int64)
    num = input.shape[0]
    bad = flat[(flat < -num) | (flat >= num)]
    if bad.numel():
        raise IndexError(f"select(): index {int(bad[0])} out of range for tensor of size "
                         f"{list(input.shape)} at dimension 0")
    F._embedding_renorm_(input, flat % num, max_norm, norm_type)
    return input


def embedding_bag(weight: Tensor, indices: Tensor, offsets: Tensor,
                  scale_grad_by_freq: bool = False, mode: int = 0, sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    r"""``torch.embedding_bag`` (weight first; ``mode`` 0 sum, 1 mean, 2 max):
    ``(output, offset2bag, bag_size, max_indices)`` as PyTorch's CPU kernel returns them:
    each index's bag (empty for a sum on its fast path), each bag's size without padding
    (zeros, one per offset, for sums), and for max the row each maximum came from (else
    the bag sizes, or zeros)."""
    if mode not in (0, 1, 2):
        raise ValueError(f"embedding_bag: mode must be 0 (sum), 1 (mean) or 2 (max), got "
                         f"{mode}")
    out = F.embedding_bag(indices, weight, offsets, None, 2, scale_grad_by_freq,
                          ("sum", "mean", "max")[mode], sparse, per_sample_weights,
                          include_last_offset, padding_idx)
    num = weight.shape[0]
    pad = None if padding_idx is None else padding_idx % num
    flat, bag, _, count = F._bags(indices, offsets if indices.ndim == 1 else None, None,
                                  include_last_offset)
    kind = indices.dtype
    if mode == 0:
        # PyTorch's CPU sum: zeros per offset; the bags only where its fast path (no
        # padding, a float type other than float64) does not run
        fast = pad is None and weight.dtype is not ember.float64
        offset2bag = ember.empty(0, dtype=kind, device=indices.device) if fast \
            else bag.to(kind)
        entries = count if indices.ndim == 2 else offsets.shape[0]
        zeros = ember.zeros(entries, dtype=kind, device=indices.device)
        return out, offset2bag, zeros, zeros.clone()
    keep = ember.ones(flat.shape, dtype=ember.bool, device=flat.device) if pad is None \
        else flat != pad
    sizes = ember.zeros(count, dtype=ember.int64, device=flat.device).index_add(
        0, bag, keep.to(ember.int64))
    if mode == 1:
        return out, bag.to(kind), sizes.to(kind), sizes.to(kind)
    return out, bag.to(kind), sizes.to(kind), _max_rows(weight, flat, bag, keep, count).to(kind)


def _max_rows(weight: Tensor, flat: Tensor, bag: Tensor, keep: Tensor, count: int) -> Tensor:
    """For each bag and column, the row (index value) its maximum came from; 0 for a bag
    with no rows."""
    dim = weight.shape[1]
    if flat.numel() == 0:
        return ember.zeros(count, dim, dtype=ember.int64, device=flat.device)
    with ember.no_grad():
        sizes = ember.zeros(count, dtype=ember.int64, device=flat.device).index_add(
            0, bag, ember.ones_like(bag)).tolist()
        longest = max(sizes)
        first = [sum(sizes[:i]) for i in range(count)]
        place = ember.arange(flat.shape[0], device=flat.device) - ember.tensor(
            first, dtype=ember.int64, device=flat.device).index_select(0, bag)
        slot = bag * longest + place
        rows = ember.where(keep.unsqueeze(1), weight.index_select(0, flat), float("-inf"))
        dense = ember.full((count * longest, dim), float("-inf"), dtype=weight.dtype,
                           device=weight.device).scatter(
            0, slot.unsqueeze(1).expand(flat.shape[0], dim), rows)
        ids = ember.zeros(count * longest, dtype=ember.int64, device=flat.device).scatter(
            0, slot, flat.to(ember.int64))
        dense = dense.reshape(count, longest, dim)
        best = dense.argmax(1)
        picked = ids.reshape(count, longest).gather(1, best)
        return ember.where(dense.amax(1) == float("-inf"), 0, picked)


def celu(input: Tensor, alpha: float = 1.0) -> Tensor:
    r"""``torch.celu``: :func:`ember.nn.functional.celu`."""
    return F.celu(input, alpha)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    r"""In-place ``torch.celu``."""
    return F.celu(input, alpha, inplace=True)


def selu(input: Tensor) -> Tensor:
    r"""``torch.selu``: :func:`ember.nn.functional.selu`."""
    return F.selu(input)


def selu_(input: Tensor) -> Tensor:
    r"""In-place ``torch.selu``."""
    return F.selu(input, inplace=True)


def threshold(input: Tensor, threshold: float, value: float) -> Tensor:
    r"""``torch.threshold``: ``value`` where ``input <= threshold``, else ``input``."""
    return F.threshold(input, threshold, value)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    r"""In-place ``torch.threshold``."""
    return F.threshold(input, threshold, value, inplace=True)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
          training: bool = False, generator: Any = None) -> Tensor:
    r"""``torch.rrelu``: :func:`ember.nn.functional.rrelu` (``generator`` must be None:
    slopes come from ember's default generator)."""
    _no_generator("rrelu", generator)
    return F.rrelu(input, lower, upper, training)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
           training: bool = False, generator: Any = None) -> Tensor:
    r"""In-place ``torch.rrelu``."""
    _no_generator("rrelu_", generator)
    return F.rrelu(input, lower, upper, training, inplace=True)


def _no_generator(op: str, generator: Any) -> None:
    if generator is not None:
        raise NotImplementedError(f"{op}: a generator argument is not supported by ember; "
                                  "seed with ember.manual_seed")


# -- losses (reduction as ATen's enum) ------------------------------------------------


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,
                                     weight: Tensor | None = None,
                                     pos_weight: Tensor | None = None,
                                     reduction: int = 0) -> Tensor:
    r"""``torch.binary_cross_entropy_with_logits``."""
    return F.binary_cross_entropy_with_logits(
        input, target, weight, pos_weight=pos_weight,
        reduction=_reduction("binary_cross_entropy_with_logits", reduction))


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor,
                          margin: float = 0.0, reduction: int = 0) -> Tensor:
    r"""``torch.cosine_embedding_loss``."""
    return F.cosine_embedding_loss(input1, input2, target, margin,
                                   reduction=_reduction("cosine_embedding_loss", reduction))


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,
                         reduction: int = 0) -> Tensor:
    r"""``torch.hinge_embedding_loss``."""
    return F.hinge_embedding_loss(input, target, margin,
                                  reduction=_reduction("hinge_embedding_loss", reduction))


def kl_div(input: Tensor, target: Tensor, reduction: int = 0, *,
           log_target: bool = False) -> Tensor:
    r"""``torch.kl_div``: ``reduction`` 1 is the mean over every element (not
    ``'batchmean'``); the default, 0, no reduction."""
    mode = _reduction("kl_div", reduction)
    # (not F.kl_div's 'mean', which warns: torch.kl_div does not)
    loss = F.kl_div(input, target, reduction="none", log_target=log_target)
    return loss if mode == "none" else (loss.mean() if mode == "mean" else loss.sum())


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        reduction: int = 0) -> Tensor:
    r"""``torch.margin_ranking_loss``."""
    return F.margin_ranking_loss(input1, input2, target, margin,
                                 reduction=_reduction("margin_ranking_loss", reduction))


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool, full: bool, eps: float,
                     reduction: int) -> Tensor:
    r"""``torch.poisson_nll_loss`` (every argument required, as in ATen)."""
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps,
                              reduction=_reduction("poisson_nll_loss", reduction))


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor,
                        margin: float = 1.0, p: float = 2.0, eps: float = 1e-6,
                        swap: bool = False, reduction: int = 0) -> Tensor:
    r"""``torch.triplet_margin_loss``."""
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                 reduction=_reduction("triplet_margin_loss", reduction))


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Any, target_lengths: Any,
             blank: int = 0, reduction: int = 0, zero_infinity: bool = False) -> Tensor:
    r"""``torch.ctc_loss``: :func:`ember.nn.functional.ctc_loss` with ATen's reduction."""
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                      _reduction("ctc_loss", reduction), zero_infinity)


# -- recurrent layers and cells -------------------------------------------------------


def _check_cell(op: str, input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor) -> None:
    if input.shape[-1] != w_ih.shape[1]:
        raise RuntimeError(f"{op}: input has inconsistent input_size: got {input.shape[-1]} "
                           f"expected {w_ih.shape[1]}")
    if hx.shape[-1] != w_hh.shape[1]:
        raise RuntimeError(f"{op}: hidden has inconsistent hidden_size: got {hx.shape[-1]}, "
                           f"expected {w_hh.shape[1]}")


def lstm_cell(input: Tensor, hx: Sequence[Tensor], w_ih: Tensor, w_hh: Tensor,
              b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> tuple[Tensor, Tensor]:
    r"""``torch.lstm_cell``: one LSTM step, ``hx = [h, c]``; returns ``(h', c')``."""
    from ember.nn.modules.rnn import _lstm_cell
    if len(hx) != 2:
        raise RuntimeError(f"lstm_cell: Expected hx to have 2 tensors, got {len(hx)}")
    _check_cell("lstm_cell", input, hx[0], w_ih, w_hh)
    return _lstm_cell(F.linear(input, w_ih, b_ih), hx[0], hx[1], w_hh, b_hh, None)


def gru_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor,
             b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    r"""``torch.gru_cell``: one GRU step (gates r, z, n)."""
    from ember.nn.modules.rnn import _gru_cell
    _check_cell("gru_cell", input, hx, w_ih, w_hh)
    return _gru_cell(F.linear(input, w_ih, b_ih), hx, w_hh, b_hh)


def rnn_tanh_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor,
                  b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    r"""``torch.rnn_tanh_cell``: :math:`\tanh(W_{ih} x + b_{ih} + W_{hh} h + b_{hh})`."""
    from ember.nn.modules.rnn import _rnn_cell
    _check_cell("rnn_tanh_cell", input, hx, w_ih, w_hh)
    return _rnn_cell(F.linear(input, w_ih, b_ih), hx, w_hh, b_hh, False)


def rnn_relu_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor,
                  b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    r"""``torch.rnn_relu_cell``: :math:`\mathrm{relu}(W_{ih} x + b_{ih} + W_{hh} h +
    b_{hh})`."""
    from ember.nn.modules.rnn import _rnn_cell
    _check_cell("rnn_relu_cell", input, hx, w_ih, w_hh)
    return _rnn_cell(F.linear(input, w_ih, b_ih), hx, w_hh, b_hh, True)


def _recurrent(mode: str, input: Tensor, h0: Tensor, c0: Tensor | None,
               params: Sequence[Tensor], has_biases: bool, num_layers: int, dropout: float,
               train: bool, bidirectional: bool, batch_first: bool) -> tuple:
    """ATen's flat recurrent ops (the ``.input`` overloads): ``params`` holds, per layer
    and direction, w_ih, w_hh, then b_ih, b_hh with ``has_biases``, then w_hr for a
    projected LSTM (told apart by the count)."""
    from ember.nn.modules.rnn import _run_layers, _Steps
    directions = 2 if bidirectional else 1
    groups = num_layers * directions
    per = 4 if has_biases else 2
    if len(params) == groups * (per + 1) and mode == "LSTM":
        per += 1
    if len(params) != groups * per:
        raise RuntimeError(f"{mode.lower()}: expected {groups * per} parameters for "
                           f"{num_layers} layer(s), {directions} direction(s), got "
                           f"{len(params)}")
    weights = []
    for k in range(groups):
        group = list(params[k * per:(k + 1) * per])
        w_ih, w_hh = group[0], group[1]
        b_ih, b_hh = (group[2], group[3]) if has_biases else (None, None)
        w_hr = group[-1] if per in (3, 5) else None
        weights.append((w_ih, w_hh, b_ih, b_hh, w_hr))
    if input.ndim != 3:
        raise RuntimeError(f"input must have 3 dimensions, got {input.ndim}")
    x = input.transpose(0, 1) if batch_first else input
    length, batch = x.shape[0], x.shape[1]
    for name, state in (("hx", h0), ("cx", c0)):
        if state is not None and (state.ndim != 3 or tuple(state.shape[:2]) != (groups, batch)):
            raise RuntimeError(f"{mode.lower()}: expected {name} of size ({groups}, {batch}, "
                               f"*), got {list(state.shape)}")
    out, h_n, c_n = _run_layers(mode, weights, num_layers, directions, dropout, train,
                                _Steps([batch] * length), x.reshape(length * batch, x.shape[2]),
                                h0, c0)
    out = out.view(length, batch, out.shape[1])
    return (out.transpose(0, 1) if batch_first else out), h_n, c_n


def lstm(input: Tensor, hx: Sequence[Tensor], params: Sequence[Tensor], has_biases: bool,
         num_layers: int, dropout: float, train: bool, bidirectional: bool,
         batch_first: bool) -> tuple[Tensor, Tensor, Tensor]:
    r"""``torch.lstm``: a whole multi-layer LSTM from flat weights; returns
    ``(output, h_n, c_n)``."""
    if len(hx) != 2:
        raise RuntimeError(f"lstm expects two hidden states, got {len(hx)}")
    return _recurrent("LSTM", input, hx[0], hx[1], params, has_biases, num_layers, dropout,
                      train, bidirectional, batch_first)


def gru(input: Tensor, hx: Tensor, params: Sequence[Tensor], has_biases: bool,
        num_layers: int, dropout: float, train: bool, bidirectional: bool,
        batch_first: bool) -> tuple[Tensor, Tensor]:
    r"""``torch.gru``: a whole multi-layer GRU from flat weights; ``(output, h_n)``."""
    out, h_n, _ = _recurrent("GRU", input, hx, None, params, has_biases, num_layers,
                             dropout, train, bidirectional, batch_first)
    return out, h_n


def rnn_tanh(input: Tensor, hx: Tensor, params: Sequence[Tensor], has_biases: bool,
             num_layers: int, dropout: float, train: bool, bidirectional: bool,
             batch_first: bool) -> tuple[Tensor, Tensor]:
    r"""``torch.rnn_tanh``: a multi-layer Elman RNN (tanh) from flat weights."""
    out, h_n, _ = _recurrent("RNN_TANH", input, hx, None, params, has_biases, num_layers,
                             dropout, train, bidirectional, batch_first)
    return out, h_n


def rnn_relu(input: Tensor, hx: Tensor, params: Sequence[Tensor], has_biases: bool,
             num_layers: int, dropout: float, train: bool, bidirectional: bool,
             batch_first: bool) -> tuple[Tensor, Tensor]:
    r"""``torch.rnn_relu``: a multi-layer Elman RNN (ReLU) from flat weights."""
    out, h_n, _ = _recurrent("RNN_RELU", input, hx, None, params, has_biases, num_layers,
                             dropout, train, bidirectional, batch_first)
    return out, h_n


# -- the pieces of synchronised batch norm --------------------------------------------
# (PyTorch has them on CUDA only, for its SyncBatchNorm; here they run on every device)


def _channel_view(t: Tensor, input: Tensor) -> Tensor:
    return t.reshape((1, -1) + (1,) * (input.ndim - 2))


def _reduce_dims(input: Tensor) -> tuple:
    return (0,) + tuple(range(2, input.ndim))


def batch_norm_stats(input: Tensor, eps: float) -> tuple[Tensor, Tensor]:
    r"""``torch.batch_norm_stats``: each channel's mean and :math:`1/\sqrt{var + eps}`
    (biased variance) over every dim but 1."""
    dims = _reduce_dims(input)
    return input.mean(dims), ember.rsqrt(input.var(dims, correction=0) + eps)


def batch_norm_elemt(input: Tensor, weight: Tensor | None, bias: Tensor | None,
                     mean: Tensor, invstd: Tensor, eps: float) -> Tensor:
    r"""``torch.batch_norm_elemt``: :math:`(x - mean) \cdot invstd \cdot w + b` per
    channel (``eps`` is already in ``invstd``)."""
    out = (input - _channel_view(mean, input)) * _channel_view(invstd, input)
    if weight is not None:
        out = out * _channel_view(weight, input)
    if bias is not None:
        out = out + _channel_view(bias, input)
    return out


def batch_norm_gather_stats_with_counts(input: Tensor, mean: Tensor, invstd: Tensor,
                                        running_mean: Tensor | None,
                                        running_var: Tensor | None, momentum: float,
                                        eps: float, counts: Tensor) -> tuple[Tensor, Tensor]:
    r"""``torch.batch_norm_gather_stats_with_counts``: the global mean and invstd from the
    ``(world, C)`` per-rank ``mean``/``invstd`` of ``counts`` elements each; updates the
    running statistics in place (unbiased variance)."""
    n = counts.to(mean.dtype).reshape(-1, 1)
    total = n.sum()
    global_mean = (mean * n).sum(0) / total
    var = 1.0 / (invstd * invstd) - eps
    global_var = ((var + (mean - global_mean) ** 2) * n).sum(0) / total
    if running_mean is not None or running_var is not None:
        with ember.no_grad():
            if running_mean is not None:
                running_mean.mul_(1 - momentum).add_(global_mean.to(running_mean.dtype)
                                                     * momentum)
            if running_var is not None:
                unbiased = global_var * (total / (total - 1))
                running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype) * momentum)
    return global_mean, ember.rsqrt(global_var + eps)


def batch_norm_gather_stats(input: Tensor, mean: Tensor, invstd: Tensor,
                            running_mean: Tensor | None, running_var: Tensor | None,
                            momentum: float, eps: float, count: int) -> tuple[Tensor, Tensor]:
    r"""``torch.batch_norm_gather_stats``: :func:`batch_norm_gather_stats_with_counts`
    with ``count`` elements on every rank."""
    counts = ember.full((mean.shape[0],), float(count), dtype=mean.dtype, device=mean.device)
    return batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean, running_var,
                                               momentum, eps, counts)


def batch_norm_backward_reduce(grad_out: Tensor, input: Tensor, mean: Tensor, invstd: Tensor,
                               weight: Tensor | None, input_g: bool, weight_g: bool,
                               bias_g: bool) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    r"""``torch.batch_norm_backward_reduce``: per channel, ``sum_dy`` :math:`\sum dy`,
    ``sum_dy_xmu`` :math:`\sum dy (x - mean)`, and the weight and bias gradients (empty
    where not asked for)."""
    dims = _reduce_dims(input)
    sum_dy = grad_out.sum(dims)
    sum_dy_xmu = (grad_out * (input - _channel_view(mean, input))).sum(dims)
    empty = ember.empty(0, dtype=grad_out.dtype, device=grad_out.device)
    grad_weight = sum_dy_xmu * invstd if weight_g else empty
    grad_bias = sum_dy if bias_g else empty.clone()
    if not input_g:
        sum_dy, sum_dy_xmu = empty.clone(), empty.clone()
    return sum_dy, sum_dy_xmu, grad_weight, grad_bias


def batch_norm_backward_elemt(grad_out: Tensor, input: Tensor, mean: Tensor, invstd: Tensor,
                              weight: Tensor | None, sum_dy: Tensor, sum_dy_xmu: Tensor,
                              count: Tensor) -> Tensor:
    r"""``torch.batch_norm_backward_elemt``: the input's gradient from the sums over every
    rank (``count``: each rank's element count per channel)."""
    total = count.to(grad_out.dtype).sum()
    mean_dy = _channel_view(sum_dy / total, input)
    mean_dy_xmu = _channel_view(sum_dy_xmu / total, input)
    inv = _channel_view(invstd, input)
    scale = inv if weight is None else inv * _channel_view(weight, input)
    centered = input - _channel_view(mean, input)
    return (grad_out - mean_dy - centered * inv * inv * mean_dy_xmu) * scale


def batch_norm_update_stats(input: Tensor, running_mean: Tensor | None,
                            running_var: Tensor | None, momentum: float
                            ) -> tuple[Tensor, Tensor]:
    r"""``torch.batch_norm_update_stats``: the batch's per-channel mean and (biased)
    variance; the running statistics, if given, move towards them in place (unbiased
    variance)."""
    dims = _reduce_dims(input)
    mean = input.mean(dims)
    var = input.var(dims, correction=0)
    n = input.numel() // max(input.shape[1], 1)
    with ember.no_grad():
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(mean.to(running_mean.dtype) * momentum)
        if running_var is not None:
            unbiased = var * (n / (n - 1)) if n > 1 else var * float("nan")
            running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype) * momentum)
    return mean, var


# -- the ones whose torch.* signature is nn.functional's ------------------------------

cosine_similarity = F.cosine_similarity
pairwise_distance = F.pairwise_distance
pdist = F.pdist
pixel_shuffle = F.pixel_shuffle
pixel_unshuffle = F.pixel_unshuffle
channel_shuffle = F.channel_shuffle
native_channel_shuffle = F.native_channel_shuffle
bilinear = F.bilinear


# each checks for `__torch_function__` overrides first, as torch.batch_norm & co do
for _name in __all__:
    _fn = globals()[_name]
    if not getattr(_fn, "op_entry", False) and not getattr(_fn, "overridable", False):
        globals()[_name] = overridable(_fn)
