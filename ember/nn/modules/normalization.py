"""Normalisation layers: `BatchNorm1d/2d/3d`, `InstanceNorm1d/2d/3d`, `LayerNorm`,
`GroupNorm`, `RMSNorm`."""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Sequence
from typing import Any

import ember
from ember import Tensor
from ember.autograd import Function
from ember.nn import functional as F
from ember.nn import init
from ember.nn.module import Module
from ember.nn.parameter import Parameter

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d",
           "InstanceNorm3d",
           "LayerNorm", "GroupNorm", "RMSNorm",
           # nnmisc family (issue 16)
           "LocalResponseNorm", "CrossMapLRN2d", "SyncBatchNorm"]


def _affine_parameters(module: Module, shape: Any, affine: bool, bias: bool, device: Any,
                       dtype: Any) -> None:
    """Register ``weight`` and ``bias`` of `shape` (``bias`` None when not wanted), or both
    None without `affine`, in that order (state_dict keys follow it)."""
    if affine:
        module.weight = Parameter(ember.empty(shape, device=device, dtype=dtype))
        if bias:
            module.bias = Parameter(ember.empty(shape, device=device, dtype=dtype))
        else:
            module.register_parameter("bias", None)
    else:
        module.register_parameter("weight", None)
        module.register_parameter("bias", None)


def _reset_affine(module: Module) -> None:
    """The affine parameters' defaults: weight ones, bias zeros (where they exist)."""
    if module.weight is not None:
        init.ones_(module.weight)
    if module.bias is not None:
        init.zeros_(module.bias)


class _NormBase(Module):
    """Parameters and running statistics shared by batch and instance norm."""

    # version 2 added the num_batches_tracked buffer (older checkpoints lack it)
    _version = 2

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device: Any = None,
                 dtype: Any = None, *, bias: bool = True) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _affine_parameters(self, num_features, affine, bias, device, dtype)
        if self.track_running_stats:
            self.register_buffer("running_mean",
                                 ember.zeros(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var",
                                 ember.ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked",
                                 ember.tensor(0, dtype=ember.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        r"""Reset the running mean to 0, variance to 1 and the batch count to 0."""
        if self.track_running_stats:
            with ember.no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        _reset_affine(self)

    def _check_input_dim(self, input: Tensor) -> None:
        raise NotImplementedError

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")

    def _load_from_state_dict(self, state_dict: dict, prefix: str, local_metadata: dict,
                              strict: bool, missing_keys: list, unexpected_keys: list,
                              error_msgs: list) -> None:
        version = local_metadata.get("version", None)
        if (version is None or version < 2) and self.track_running_stats:
            key = prefix + "num_batches_tracked"
            if key not in state_dict:
                state_dict[key] = (self.num_batches_tracked
                                   if self.num_batches_tracked is not None
                                   else ember.tensor(0, dtype=ember.int64))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict,
                                      missing_keys, unexpected_keys, error_msgs)


class _BatchNorm(_NormBase):
    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            with ember.no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked)
        if self.training:
            bn_training = True
        else:
            bn_training = self.running_mean is None and self.running_var is None
        use_running = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if use_running else None,
                            self.running_var if use_running else None, self.weight,
                            self.bias, bn_training, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    r"""Batch normalisation over a 2D ``(N, C)`` or 3D ``(N, C, L)`` input.

    .. math:: y = \frac{x - \mathrm{E}[x]}{\sqrt{\mathrm{Var}[x] + \epsilon}} \gamma + \beta

    Args:
        num_features: ``C``.
        eps: added to the variance for stability. Default: 1e-5
        momentum: weight of the batch statistics in the running ones; ``None`` uses a
            cumulative average. Default: 0.1
        affine: learnable ``gamma`` (weight) and ``beta`` (bias). Default: ``True``
        track_running_stats: keep running statistics (used in eval mode). Default:
            ``True``
    """

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim != 2 and input.ndim != 3:
            raise ValueError(f"expected 2D or 3D input (got {input.ndim}D input)")


class BatchNorm2d(_BatchNorm):
    r"""Batch normalisation over a 4D ``(N, C, H, W)`` input (see :class:`BatchNorm1d`)."""

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim != 4:
            raise ValueError(f"expected 4D input (got {input.ndim}D input)")


class BatchNorm3d(_BatchNorm):
    r"""Batch normalisation over a 5D ``(N, C, D, H, W)`` input."""

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim != 5:
            raise ValueError(f"expected 5D input (got {input.ndim}D input)")


class _InstanceNorm(_NormBase):
    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device: Any = None,
                 dtype: Any = None, *, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)

    _no_batch_dim = 2

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        feature_dim = input.ndim - self._no_batch_dim
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match "
                                 f"num_features ({self.num_features}), but got: "
                                 f"{input.shape[feature_dim]}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. You "
                          "can silence this warning by not passing in num_features, which is "
                          "not used because affine=False", stacklevel=2)
        unbatched = input.ndim == self._no_batch_dim
        x = input.unsqueeze(0) if unbatched else input
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats,
                              self.momentum if self.momentum is not None else 0.0, self.eps)
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    r"""Instance normalisation over ``(N, C, L)`` or ``(C, L)`` input."""

    _no_batch_dim = 2

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.ndim}D input)")


class InstanceNorm2d(_InstanceNorm):
    r"""Instance normalisation over ``(N, C, H, W)`` or ``(C, H, W)`` input."""

    _no_batch_dim = 3

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim not in (3, 4):
            raise ValueError(f"expected 3D or 4D input (got {input.ndim}D input)")


class InstanceNorm3d(_InstanceNorm):
    r"""Instance normalisation over ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input."""

    _no_batch_dim = 4

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim not in (4, 5):
            raise ValueError(f"expected 4D or 5D input (got {input.ndim}D input)")


def _shape_tuple(normalized_shape: int | Sequence[int]) -> tuple[int, ...]:
    if isinstance(normalized_shape, numbers.Integral):
        return (int(normalized_shape),)
    return tuple(normalized_shape)


class LayerNorm(Module):
    r"""Layer normalisation over the last ``len(normalized_shape)`` dimensions.

    Args:
        normalized_shape: the trailing shape to normalise over.
        eps: added to the variance for stability. Default: 1e-5
        elementwise_affine: learnable per-element weight (ones) and bias (zeros).
        bias: learn the bias (with ``elementwise_affine``). Default: ``True``
    """

    def __init__(self, normalized_shape: int | Sequence[int], eps: float = 1e-5,
                 elementwise_affine: bool = True, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.normalized_shape = _shape_tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _affine_parameters(self, self.normalized_shape, elementwise_affine, bias, device,
                           dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _reset_affine(self)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class GroupNorm(Module):
    r"""Group normalisation: the ``num_channels`` channels are split into
    ``num_groups`` groups, each normalised per sample.

    Args:
        num_groups: number of groups (must divide ``num_channels``).
        num_channels: ``C`` of the ``(N, C, *)`` input.
        eps: added to the variance. Default: 1e-5
        affine: learnable per-channel weight and bias. Default: ``True``
    """

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups "
                             f"({num_groups})")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _affine_parameters(self, num_channels, affine, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _reset_affine(self)

    def forward(self, input: Tensor) -> Tensor:
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, "
                f"affine={self.affine}, bias={self.bias is not None}")


class RMSNorm(Module):
    r"""Root-mean-square normalisation over the trailing ``normalized_shape``.

    Args:
        eps: added inside the square root; ``None`` uses the dtype's machine epsilon.
        elementwise_affine: learnable per-element weight (ones).
    """

    def __init__(self, normalized_shape: int | Sequence[int], eps: float | None = None,
                 elementwise_affine: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.normalized_shape = _shape_tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(ember.empty(self.normalized_shape, device=device,
                                                dtype=dtype))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, input: Tensor) -> Tensor:
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


# -- nnmisc family (issue 16) ----------------------------------------------------------


class LocalResponseNorm(Module):
    r"""Local response normalisation across channels (:func:`F.local_response_norm`):
    :math:`b_c = a_c \left(k + \frac{\alpha}{n} \sum_{c'} a_{c'}^2\right)^{-\beta}`
    over ``size`` neighbouring channels of an ``(N, C, *)`` input."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75,
                 k: float = 1.0) -> None:
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input: Tensor) -> Tensor:
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


def _cross_map_windows(channels: int, size: int) -> list[list[int]]:
    """The channels each output channel of CrossMapLRN2d sums the squares of: the
    running window of PyTorch's (Lua-derived) implementation, which adds
    channel ``c + pre_pad - 1`` and drops channel ``c - pre_pad`` (only from
    ``c > pre_pad`` on, so channel 0 is never dropped)."""
    pre_pad = int((size - 1) / 2 + 1)
    window = set(range(min(pre_pad, channels)))
    rows = [sorted(window)]
    for c in range(1, channels):
        if c < channels - pre_pad + 1:
            window.add(c + pre_pad - 1)
        if c > pre_pad:
            window.discard(c - pre_pad)
        rows.append(sorted(window))
    return rows


def _window_matrix(rows: list[list[int]], channels: int, like: Tensor) -> Tensor:
    return ember.tensor([[1.0 if j in row else 0.0 for j in range(channels)] for row in rows],
                        dtype=like.dtype, device=like.device)


class _CrossMapLRN2dFunction(Function):
    """CrossMapLRN2d with PyTorch's own backward, which sums over a centred window of
    ``size`` channels (not the transpose of the forward's running window)."""

    @staticmethod
    def forward(ctx: Any, input: Tensor, size: int, alpha: float, beta: float,
                k: float) -> Tensor:
        channels = input.shape[1]
        windows = _window_matrix(_cross_map_windows(channels, size), channels, input)
        scale = ember.einsum("cj,njhw->nchw", windows, input * input) * (alpha / size) + k
        output = input * scale.pow(-beta)
        ctx.size, ctx.alpha, ctx.beta = size, alpha, beta
        ctx.save_for_backward(input, output, scale)
        return output

    @staticmethod
    def backward(ctx: Any, grad_output: Tensor) -> tuple:
        input, output, scale = ctx.saved_tensors
        channels, size = input.shape[1], ctx.size
        inverse_pre_pad = int(size - (size - 1) / 2)
        rows = [[j for j in range(c - inverse_pre_pad, c + size - inverse_pre_pad)
                 if 0 <= j < channels] for c in range(channels)]
        ratio = ember.einsum("cj,njhw->nchw", _window_matrix(rows, channels, input),
                             grad_output * output / scale)
        grad = scale.pow(-ctx.beta) * grad_output \
            - input * ratio * (2 * ctx.alpha * ctx.beta / size)
        return grad, None, None, None, None


class CrossMapLRN2d(Module):
    r"""Local response normalisation across the channels of a 4-D ``(N, C, H, W)`` input,
    as Lua Torch's ``SpatialCrossMapLRN``: :math:`b_c = a_c (k + \frac{\alpha}{n}
    \sum_{c'} a_{c'}^2)^{-\beta}`, with that implementation's running window."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75,
                 k: float = 1) -> None:
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.ndim}D "
                             "instead.")
        return _CrossMapLRN2dFunction.apply(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class _AllReduceSum(Function):
    """Sum a tensor over the ranks of a group, differentiably: each rank's loss depends
    on every rank's input, so the gradient is summed over the ranks as well."""

    @staticmethod
    def forward(ctx: Any, input: Tensor, group: Any) -> Tensor:
        import ember.distributed as dist
        ctx.group = group
        out = input.clone()
        dist.all_reduce(out, group=group)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple:
        import ember.distributed as dist
        out = grad.clone()
        dist.all_reduce(out, group=ctx.group)
        return out, None


class SyncBatchNorm(_BatchNorm):
    r"""Batch normalisation whose batch statistics are those of the whole batch across
    the ranks of a process group (data-parallel training): with an initialised
    ``ember.distributed`` group of more than one rank, the per-channel sums are
    all-reduced (and so are their gradients); otherwise it is :class:`BatchNorm` of any
    ``(N, C, *)`` input.

    Args:
        num_features (int): ``C``.
        eps, momentum, affine, track_running_stats, bias: as :class:`BatchNorm1d`.
        process_group (ProcessGroup, optional): the ranks to synchronise (default: the
            world).
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True,
                 process_group: Any = None, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim < 2:
            raise ValueError(f"expected at least 2D input (got {input.ndim}D input)")

    def _group(self) -> Any:
        """The group to synchronise over, or None when there is nothing to synchronise."""
        import ember.distributed as dist
        if not (dist.is_available() and dist.is_initialized()):
            return None
        group = self.process_group or dist.group.WORLD
        return group if dist.get_world_size(group) > 1 else None

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        if input.shape[1] == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")
        group = self._group() if self.training else None
        if group is None:
            return super().forward(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.track_running_stats and self.num_batches_tracked is not None:
            with ember.no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked)
        c = input.shape[1]
        dims = (0,) + tuple(range(2, input.ndim))
        local = ember.tensor([float(input.numel() // c)], dtype=input.dtype,
                             device=input.device)
        count = _AllReduceSum.apply(local, group)
        mean = _AllReduceSum.apply(input.sum(dims), group) / count
        shape = (1, c) + (1,) * (input.ndim - 2)
        centered = input - mean.reshape(shape)
        var = _AllReduceSum.apply((centered * centered).sum(dims), group) / count
        total = float(count.item())
        if total <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got "
                             f"input size {list(input.shape)}")
        if self.track_running_stats and self.running_mean is not None:
            with ember.no_grad():
                self.running_mean.mul_(1.0 - factor).add_(mean.detach() * factor)
                unbiased = var.detach() * (total / (total - 1))
                self.running_var.mul_(1.0 - factor).add_(unbiased * factor)
        out = centered * ember.rsqrt(var + self.eps).reshape(shape)
        if self.weight is not None:
            out = out * self.weight.reshape(shape)
        if self.bias is not None:
            out = out + self.bias.reshape(shape)
        return out

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group: Any = None) -> Module:
        r"""Return `module` with every ``BatchNorm*D`` layer inside it replaced by a
        :class:`SyncBatchNorm` sharing its parameters and running statistics."""
        out = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            out = SyncBatchNorm(module.num_features, module.eps, module.momentum,
                                module.affine, module.track_running_stats, process_group)
            if module.affine:
                with ember.no_grad():
                    out.weight = module.weight
                    out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
            if hasattr(module, "qconfig"):
                out.qconfig = module.qconfig
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        del module
        return out
