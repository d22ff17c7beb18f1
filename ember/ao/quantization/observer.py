"""Observers (`torch.ao.quantization.observer`): modules that watch the tensors passing
through them during calibration and compute the quantization parameters (scale, zero
point) from what they saw, with PyTorch's formulas, buffers and printed forms.
"""

from __future__ import annotations

import functools
import math
import warnings
from typing import Any

import ember
from ember import nn
from ember.core import dtype as dt
from ember.core.quantized import (
    per_channel_affine,
    per_channel_affine_float_qparams,
    per_channel_symmetric,
    per_tensor_affine,
    per_tensor_symmetric,
)
from ember.core.tensor import Tensor

_FLOAT32_EPS = 1.1920928955078125e-07  # torch.finfo(torch.float32).eps


class _PartialWrapper:
    """A class with some constructor arguments bound (`Observer.with_args(...)`), printed
    as PyTorch prints it: `functools.partial(<class '...'>, reduce_range=True){}`."""

    def __init__(self, p: functools.partial) -> None:
        self.p = p
        self.callable_args: dict = {}

    def __call__(self, *args: Any, **keywords: Any) -> Any:
        for name, make in self.callable_args.items():
            keywords.setdefault(name, make())
        return self.p(*args, **keywords)

    def __repr__(self) -> str:
        return self.p.__repr__() + self.callable_args.__repr__()

    def with_args(self, **kwargs: Any) -> _PartialWrapper:
        return _with_args(self, **kwargs)


def _with_args(cls_or_self: Any, **kwargs: Any) -> _PartialWrapper:
    """The class (or partial) with `kwargs` bound; each call makes a new instance."""
    return _PartialWrapper(functools.partial(cls_or_self, **kwargs))


def calculate_qmin_qmax(quant_min: int | None, quant_max: int | None,
                        has_customized_qrange: bool, dtype: dt.dtype,
                        reduce_range: bool) -> tuple[int, int]:
    """The integer range an observer quantizes to: the dtype's, or the user's, halved by
    `reduce_range` (x86's kernels keep activations in 7 bits)."""
    if has_customized_qrange:
        lo, hi = int(quant_min), int(quant_max)  # type: ignore[arg-type]
        if reduce_range:
            lo, hi = lo // 2, hi // 2
        return lo, hi
    if dtype in (dt.qint8, dt.int8):
        return (-64, 63) if reduce_range else (-128, 127)
    if dtype in (dt.quint8, dt.uint8):
        return (0, 127) if reduce_range else (0, 255)
    if dtype in (dt.qint32, dt.int32):
        return -(2 ** 31), 2 ** 31 - 1
    return 0, 15


def _is_per_tensor(qscheme: Any) -> bool:
    return qscheme in (per_tensor_affine, per_tensor_symmetric)


class ObserverBase(nn.Module):
    """The base of observers: a module that records statistics of what passes through it
    (`forward` returns its input) and computes quantization parameters from them
    (`calculate_qparams`)."""

    with_args = classmethod(_with_args)

    def __init__(self, dtype: dt.dtype, is_dynamic: bool = False) -> None:
        super().__init__()
        self.dtype = dtype
        self.is_dynamic = is_dynamic

    def forward(self, x: Tensor) -> Tensor:
        raise NotImplementedError

    def calculate_qparams(self, **kwargs: Any) -> Any:
        raise NotImplementedError

    def _follow(self, x: Tensor) -> Tensor:
        """`x` detached; the observer's statistics move to its device first (an observer is
        made on the CPU, and may watch a layer on another device)."""
        stats = getattr(self, "min_val", None)
        if stats is not None and stats.device != x.device:
            self.to(x.device)
        return x.detach()


class UniformQuantizationObserverBase(ObserverBase):
    """Observers with a uniform (affine or symmetric) quantization: their qparams come from
    a minimum and a maximum."""

    def __init__(self, dtype: dt.dtype = dt.quint8, qscheme: Any = per_tensor_affine,
                 reduce_range: bool = False, quant_min: int | None = None,
                 quant_max: int | None = None, factory_kwargs: Any = None,
                 eps: float = _FLOAT32_EPS, is_dynamic: bool = False, **kwargs: Any) -> None:
        super().__init__(dtype=dtype, is_dynamic=is_dynamic)
        self.qscheme = qscheme
        if reduce_range:
            warnings.warn("Please use quant_min and quant_max to specify the range for "
                          "observers.                     reduce_range will be deprecated "
                          "in a future release of PyTorch.", stacklevel=2)
        self.reduce_range = reduce_range
        self.register_buffer("eps", ember.tensor([eps]))
        if qscheme not in (per_tensor_affine, per_tensor_symmetric, per_channel_affine,
                           per_channel_symmetric, per_channel_affine_float_qparams):
            raise AssertionError(
                "Default Observer only works for per_tensor_affine, per_tensor_symmetric, "
                "per_channel_affine, per_channel_symmetric and per_channel_float_qparams "
                "quantization scheme")
        allowed = (dt.qint8, dt.quint8, dt.quint4x2, dt.qint32, dt.int8, dt.uint8, dt.int16,
                   dt.int32)
        if dtype not in allowed:
            raise AssertionError(f"Default Observer only works for {allowed} data type")
        self.has_customized_qrange = quant_min is not None and quant_max is not None
        if self.has_customized_qrange:
            if not quant_min <= 0 <= quant_max:  # type: ignore[operator]
                raise AssertionError("Used-specified quantization range must include 0.")
            if quant_min >= quant_max:  # type: ignore[operator]
                raise AssertionError("qmin must be strictly less than qmax for "
                                     "user-specified quantization range.")
        self.quant_min, self.quant_max = calculate_qmin_qmax(
            quant_min, quant_max, self.has_customized_qrange, dtype, reduce_range)

    def _calculate_qparams(self, min_val: Tensor, max_val: Tensor) -> tuple[Tensor, Tensor]:
        """Scale and zero point (1-element tensors, or one per channel) for values seen in
        [min_val, max_val]: PyTorch's formulas, in float32."""
        device = min_val.device
        if not _check_min_max_valid(min_val, max_val):
            return ember.tensor([1.0], device=device), ember.tensor([0], device=device)
        quant_min, quant_max = self.quant_min, self.quant_max
        min_val_neg = ember.minimum(min_val, ember.zeros_like(min_val))
        max_val_pos = ember.maximum(max_val, ember.zeros_like(max_val))
        zero_point = ember.zeros(min_val_neg.size(), dtype=ember.int64, device=device)
        if self.qscheme in (per_tensor_symmetric, per_channel_symmetric):
            max_val_pos = ember.maximum(-min_val_neg, max_val_pos)
            scale = max_val_pos / (float(quant_max - quant_min) / 2)
            scale = ember.maximum(scale, self.eps)
            if self.dtype in (dt.quint8, dt.uint8):
                middle = (quant_min + quant_max) // 2 if self.has_customized_qrange else 128
                zero_point = zero_point.new_full(zero_point.size(), middle)
        elif self.qscheme is per_channel_affine_float_qparams:
            scale = (max_val - min_val) / float(quant_max - quant_min)
            scale = ember.where(scale > self.eps, scale, ember.ones_like(scale))
            zero_point = -1 * min_val / scale
        else:
            scale = (max_val_pos - min_val_neg) / float(quant_max - quant_min)
            scale = ember.maximum(scale, self.eps)
            zero_point = quant_min - ember.round(min_val_neg / scale).to(ember.int)
            zero_point = ember.clamp(zero_point, quant_min, quant_max)
        if scale.ndim == 0:
            scale = scale.reshape(1)
        if zero_point.ndim == 0:
            zero_point = zero_point.reshape(1)
        return scale, zero_point

    def reset_min_max_vals(self) -> None:
        raise NotImplementedError("Cannot reset min/max values in the given observer.")


def _check_min_max_valid(min_val: Tensor, max_val: Tensor) -> bool:
    """False (with PyTorch's warning) before the observer saw anything."""
    if min_val.numel() == 0 or max_val.numel() == 0:
        warnings.warn("must run observer before calling calculate_qparams. Returning "
                      "default values.", stacklevel=3)
        return False
    if min_val.ndim == 0 or min_val.numel() == 1:
        if float(min_val) == math.inf and float(max_val) == -math.inf:
            warnings.warn("must run observer before calling calculate_qparams. Returning "
                          "default values.", stacklevel=3)
            return False
        if float(min_val) > float(max_val):
            raise AssertionError(f"min {min_val} should be less than max {max_val}")
    elif bool((min_val > max_val).any()):
        raise AssertionError(f"min {min_val} should be less than max {max_val}")
    return True


class MinMaxObserver(UniformQuantizationObserverBase):
    r"""Observer computing the quantization parameters from the running minimum and
    maximum of the tensors it sees (per tensor).

    Args:
        dtype: the quantized dtype (``quint8``, ``qint8``...).
        qscheme: ``per_tensor_affine`` or ``per_tensor_symmetric``.
        reduce_range: use one bit less of the dtype's range.
        quant_min, quant_max: the integer range, when not the dtype's.
        eps: the smallest scale.
    """

    def __init__(self, dtype: dt.dtype = dt.quint8, qscheme: Any = per_tensor_affine,
                 reduce_range: bool = False, quant_min: int | None = None,
                 quant_max: int | None = None, factory_kwargs: Any = None,
                 eps: float = _FLOAT32_EPS, is_dynamic: bool = False, **kwargs: Any) -> None:
        if not _is_per_tensor(qscheme):
            raise NotImplementedError("MinMaxObserver's qscheme only support "
                                      "torch.per_tensor_symmetric                     and "
                                      "torch.per_tensor_affine.")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max, eps=eps,
                         is_dynamic=is_dynamic, **kwargs)
        self.register_buffer("min_val", ember.tensor(float("inf")))
        self.register_buffer("max_val", ember.tensor(float("-inf")))
        if qscheme is per_tensor_symmetric and reduce_range and dtype is dt.quint8:
            raise NotImplementedError("Cannot reduce range for symmetric quantization for "
                                      "quint8")

    def forward(self, x_orig: Tensor) -> Tensor:
        """Records the running minimum and maximum of ``x``."""
        if x_orig.numel() == 0:
            return x_orig
        x = self._follow(x_orig).to(self.min_val.dtype)
        min_val_cur, max_val_cur = ember.aminmax(x)
        self.min_val.copy_(ember.minimum(min_val_cur, self.min_val))
        self.max_val.copy_(ember.maximum(max_val_cur, self.max_val))
        return x_orig

    def calculate_qparams(self) -> tuple[Tensor, Tensor]:
        """The scale and zero point (1-element tensors)."""
        return self._calculate_qparams(self.min_val, self.max_val)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}"

    def reset_min_max_vals(self) -> None:
        self.min_val.copy_(ember.tensor(float("inf")))
        self.max_val.copy_(ember.tensor(float("-inf")))


class MovingAverageMinMaxObserver(MinMaxObserver):
    r"""A :class:`MinMaxObserver` whose minimum and maximum are moving averages:
    ``min = min + averaging_constant * (min(x) - min)`` (the first batch sets them)."""

    def __init__(self, averaging_constant: float = 0.01, dtype: dt.dtype = dt.quint8,
                 qscheme: Any = per_tensor_affine, reduce_range: bool = False,
                 quant_min: int | None = None, quant_max: int | None = None,
                 eps: float = _FLOAT32_EPS, is_dynamic: bool = False, **kwargs: Any) -> None:
        if not _is_per_tensor(qscheme):
            raise NotImplementedError(f"MovingAverageMinMaxObserver's qscheme only support "
                                      f"torch.per_tensor_symmetric and torch.per_tensor_affine."
                                      f" but got: {qscheme}")
        self.averaging_constant = averaging_constant
        if is_dynamic and averaging_constant != 1:
            raise NotImplementedError("MovingAverageMinMaxObserver doesn't support dynamic "
                                      "quantization for averaging constant of "
                                      f"{averaging_constant}")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max, eps=eps,
                         is_dynamic=is_dynamic, **kwargs)

    def forward(self, x_orig: Tensor) -> Tensor:
        if x_orig.numel() == 0:
            return x_orig
        x = self._follow(x_orig).to(self.min_val.dtype)
        min_val, max_val = self.min_val, self.max_val
        if float(min_val) == math.inf and float(max_val) == -math.inf:
            min_val, max_val = ember.aminmax(x)
        else:
            min_val_cur, max_val_cur = ember.aminmax(x)
            min_val = min_val + self.averaging_constant * (min_val_cur - min_val)
            max_val = max_val + self.averaging_constant * (max_val_cur - max_val)
        self.min_val.copy_(min_val)
        self.max_val.copy_(max_val)
        return x_orig


class PerChannelMinMaxObserver(UniformQuantizationObserverBase):
    r"""Observer computing per-channel quantization parameters (along ``ch_axis``) from
    the running minimum and maximum of each channel."""

    def __init__(self, ch_axis: int = 0, dtype: dt.dtype = dt.quint8,
                 qscheme: Any = per_channel_affine, reduce_range: bool = False,
                 quant_min: int | None = None, quant_max: int | None = None,
                 factory_kwargs: Any = None, eps: float = _FLOAT32_EPS,
                 is_dynamic: bool = False, **kwargs: Any) -> None:
        if _is_per_tensor(qscheme):
            raise NotImplementedError("PerChannelMinMaxObserver's qscheme only support    "
                                      "                torch.per_channel_symmetric,       "
                                      "             torch.per_channel_affine and           "
                                      "         torch.per_channel_affine_float_qparams.")
        if is_dynamic:
            raise NotImplementedError("PerChannelMinMaxObserver doesn't support dynamic "
                                      "quantization")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max, eps=eps,
                         is_dynamic=is_dynamic, **kwargs)
        self.ch_axis = ch_axis
        self.register_buffer("min_val", ember.tensor([]))
        self.register_buffer("max_val", ember.tensor([]))
        if qscheme is per_channel_symmetric and reduce_range and dtype is dt.quint8:
            raise NotImplementedError("Cannot reduce range for symmetric quantization for "
                                      "quint8")

    def _channel_minmax(self, x: Tensor) -> tuple[Tensor, Tensor]:
        y = x.transpose(0, self.ch_axis).flatten(1) if x.ndim > 1 else x.reshape(-1, 1)
        return ember.aminmax(y, dim=1)

    def _update(self, min_val: Tensor, max_val: Tensor) -> None:
        self.min_val = min_val.detach().clone()
        self.max_val = max_val.detach().clone()

    def forward(self, x_orig: Tensor) -> Tensor:
        if x_orig.numel() == 0:
            return x_orig
        x = self._follow(x_orig).to(self.min_val.dtype)
        min_val, max_val = self._channel_minmax(x)
        if self.min_val.numel() != 0 and self.max_val.numel() != 0:
            min_val = ember.minimum(self.min_val, min_val)
            max_val = ember.maximum(self.max_val, max_val)
        self._update(min_val, max_val)
        return x_orig

    def calculate_qparams(self) -> tuple[Tensor, Tensor]:
        return self._calculate_qparams(self.min_val, self.max_val)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}"

    def _load_from_state_dict(self, state_dict: dict, prefix: str, *args: Any) -> None:
        # the per-channel statistics are as long as the checkpoint's, not the empty ones
        for name in ("min_val", "max_val"):
            if prefix + name in state_dict:
                setattr(self, name, state_dict[prefix + name].clone())
        super()._load_from_state_dict(state_dict, prefix, *args)

    def reset_min_max_vals(self) -> None:
        self.min_val = ember.tensor([])
        self.max_val = ember.tensor([])


class MovingAveragePerChannelMinMaxObserver(PerChannelMinMaxObserver):
    r"""A :class:`PerChannelMinMaxObserver` whose per-channel minimum and maximum are
    moving averages with ``averaging_constant``."""

    def __init__(self, averaging_constant: float = 0.01, ch_axis: int = 0,
                 dtype: dt.dtype = dt.quint8, qscheme: Any = per_channel_affine,
                 reduce_range: bool = False, quant_min: int | None = None,
                 quant_max: int | None = None, eps: float = _FLOAT32_EPS,
                 is_dynamic: bool = False, **kwargs: Any) -> None:
        if _is_per_tensor(qscheme):
            raise NotImplementedError("MovingAveragePerChannelMinMaxObserver's qscheme only "
                                      "support torch.per_channel_symmetric, "
                                      "torch.per_channel_affine and "
                                      "torch.per_channel_affine_float_qparams.")
        super().__init__(ch_axis=ch_axis, dtype=dtype, qscheme=qscheme,
                         reduce_range=reduce_range, quant_min=quant_min,
                         quant_max=quant_max, eps=eps, is_dynamic=is_dynamic, **kwargs)
        self.averaging_constant = averaging_constant

    def forward(self, x_orig: Tensor) -> Tensor:
        if x_orig.numel() == 0:
            return x_orig
        x = self._follow(x_orig).to(self.min_val.dtype)
        min_val, max_val = self._channel_minmax(x)
        if self.min_val.numel() != 0 and self.max_val.numel() != 0:
            min_val = self.min_val + self.averaging_constant * (min_val - self.min_val)
            max_val = self.max_val + self.averaging_constant * (max_val - self.max_val)
        self._update(min_val, max_val)
        return x_orig


class HistogramObserver(UniformQuantizationObserverBase):
    r"""Observer recording a running histogram (``bins`` bins) of the values it sees; its
    qparams come from the minimum and maximum that minimize the L2 quantization error of
    that histogram (PyTorch's search, dropping outliers), then computed as
    :class:`MinMaxObserver` does."""

    def __init__(self, bins: int = 2048, dtype: dt.dtype = dt.quint8,
                 qscheme: Any = per_tensor_affine, reduce_range: bool = False,
                 quant_min: int | None = None, quant_max: int | None = None,
                 factory_kwargs: Any = None, eps: float = _FLOAT32_EPS,
                 is_dynamic: bool = False, **kwargs: Any) -> None:
        if not _is_per_tensor(qscheme):
            raise NotImplementedError("HistogramObserver's qscheme only support "
                                      "torch.per_tensor_symmetric                     and "
                                      "torch.per_tensor_affine.")
        if is_dynamic:
            raise NotImplementedError("HistogramObserver doesn't support dynamic quantization")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max, eps=eps,
                         is_dynamic=is_dynamic, **kwargs)
        self.bins = bins
        self.register_buffer("histogram", ember.zeros(bins))
        self.register_buffer("min_val", ember.tensor(float("inf")))
        self.register_buffer("max_val", ember.tensor(float("-inf")))
        self.dst_nbins = 2 ** (8 * dt.STORAGE_OF.get(dtype.name, dtype).itemsize)
        self.upsample_rate = 16  # reduces the error of re-binning a histogram

    def _get_norm(self, delta_begin: Any, delta_end: Any, density: Tensor) -> Tensor:
        """The L2 norm of values spread uniformly between delta_begin and delta_end."""
        return density * ((delta_end * delta_end * delta_end
                           - delta_begin * delta_begin * delta_begin) / 3)

    def _compute_quantization_error(self, next_start_bin: int, next_end_bin: int) -> float:
        bin_width = (self.max_val.item() - self.min_val.item()) / self.bins
        dst_bin_width = bin_width * (next_end_bin - next_start_bin + 1) / self.dst_nbins
        if dst_bin_width == 0.0:
            return 0.0
        device = self.histogram.device
        src_bin = ember.arange(self.bins, device=device)
        src_bin_begin = (src_bin - next_start_bin) * bin_width
        src_bin_end = src_bin_begin + bin_width
        dst_bin_of_begin = ember.clamp(
            ember.div(src_bin_begin, dst_bin_width, rounding_mode="floor"), 0,
            self.dst_nbins - 1)
        dst_bin_of_begin_center = (dst_bin_of_begin + 0.5) * dst_bin_width
        dst_bin_of_end = ember.clamp(
            ember.div(src_bin_end, dst_bin_width, rounding_mode="floor"), 0,
            self.dst_nbins - 1)
        density = self.histogram / bin_width
        delta_begin = src_bin_begin - dst_bin_of_begin_center
        half = dst_bin_width / 2
        norm = self._get_norm(delta_begin, ember.ones(self.bins, device=device) * half,
                              density)
        norm = norm + (dst_bin_of_end - dst_bin_of_begin - 1) * self._get_norm(
            ember.tensor(-half, device=device), ember.tensor(half, device=device), density)
        dst_bin_of_end_center = dst_bin_of_end * dst_bin_width + dst_bin_width / 2
        norm = norm + self._get_norm(ember.tensor(-half, device=device),
                                     src_bin_end - dst_bin_of_end_center, density)
        return norm.sum().item()

    def _non_linear_param_search(self) -> tuple[Tensor, Tensor]:
        """PyTorch's approximate L2 minimization over the histogram: narrows [min, max]
        from the side with fewer values while the quantization error falls."""
        bin_width = (self.max_val - self.min_val) / self.bins
        total = self.histogram.sum().item()
        c_sum = ember.cumsum(self.histogram, dim=0).tolist()
        stepsize = 1e-5
        alpha, beta = 0.0, 1.0
        start_bin, end_bin = 0, self.bins - 1
        norm_min = float("inf")
        while alpha < beta:
            next_alpha, next_beta = alpha + stepsize, beta - stepsize
            left, right = start_bin, end_bin
            while left < end_bin and c_sum[left] < next_alpha * total:
                left += 1
            while right > start_bin and c_sum[right] > next_beta * total:
                right -= 1
            next_start_bin, next_end_bin = start_bin, end_bin
            if (left - start_bin) > (end_bin - right):
                next_start_bin = left
                alpha = next_alpha
            else:
                next_end_bin = right
                beta = next_beta
            if next_start_bin == start_bin and next_end_bin == end_bin:
                continue
            norm = self._compute_quantization_error(next_start_bin, next_end_bin)
            if norm > norm_min:
                break
            norm_min = norm
            start_bin, end_bin = next_start_bin, next_end_bin
        new_min = self.min_val + bin_width * start_bin
        new_max = self.min_val + bin_width * (end_bin + 1)
        return new_min, new_max

    def _upscale_histogram(self, histogram: Tensor, orig_min: Tensor, orig_max: Tensor,
                           update_min: Tensor, update_max: Tensor) -> Tensor:
        histogram = histogram.repeat_interleave(self.upsample_rate) / self.upsample_rate
        bin_size = (orig_max - orig_min) / (self.bins * self.upsample_rate)
        device = histogram.device
        mid_points = ember.linspace(float(orig_min), float(orig_max),
                                    self.bins * self.upsample_rate + 1,
                                    device=device)[:-1] + 0.5 * bin_size
        boundaries = ember.linspace(float(update_min), float(update_max), self.bins + 1,
                                    device=device)
        buckets = ember.bucketize(mid_points, boundaries, right=True) - 1
        buckets = buckets.clamp(0, self.bins - 1)
        return ember.bincount(buckets, weights=histogram, minlength=self.bins)

    def _combine_histograms(self, orig_hist: Tensor, orig_min: Tensor, orig_max: Tensor,
                            update_hist: Tensor, update_min: Tensor,
                            update_max: Tensor) -> Tensor:
        if float(update_min) == float(orig_min) and float(update_max) == float(orig_max):
            return orig_hist + update_hist
        if float(orig_min) == float(orig_max):
            bin_value = orig_hist.sum()
            moved = ember.histc(orig_min.reshape(1), bins=self.bins, min=float(update_min),
                                max=float(update_max)) * bin_value
            return moved + update_hist
        return update_hist + self._upscale_histogram(orig_hist, orig_min, orig_max,
                                                     update_min, update_max)

    def forward(self, x_orig: Tensor) -> Tensor:
        if x_orig.numel() == 0:
            return x_orig
        x = self._follow(x_orig)
        x_min, x_max = ember.aminmax(x)
        if math.isinf(float(x_min)) or math.isinf(float(x_max)):
            warnings.warn("torch.inf detected in input tensor, ignoring input", stacklevel=2)
            x = x[x.abs() != math.inf]
            if x.numel() == 0:
                return x_orig
            x_min, x_max = ember.aminmax(x)
        if float(self.min_val) == math.inf or float(self.max_val) == -math.inf:
            self.min_val.copy_(x_min)
            self.max_val.copy_(x_max)
            self.histogram.copy_(ember.histc(x, self.bins, min=float(x_min),
                                             max=float(x_max)))
            return x_orig
        new_min = ember.minimum(self.min_val, x_min)
        new_max = ember.maximum(self.max_val, x_max)
        update = ember.histc(x, self.bins, min=float(new_min), max=float(new_max))
        self.histogram.copy_(self._combine_histograms(self.histogram, self.min_val,
                                                      self.max_val, update, new_min, new_max))
        self.min_val.copy_(new_min)
        self.max_val.copy_(new_max)
        return x_orig

    def calculate_qparams(self) -> tuple[Tensor, Tensor]:
        if float(self.min_val) == math.inf and float(self.max_val) == -math.inf:
            warnings.warn("must run observer before calling calculate_qparams.              "
                          "                      Returning default scale and zero point ",
                          stacklevel=2)
            device = self.min_val.device
            return ember.tensor([1.0], device=device), ember.tensor([0], device=device)
        new_min, new_max = self._non_linear_param_search()
        return self._calculate_qparams(new_min, new_max)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}"


class PlaceholderObserver(ObserverBase):
    r"""An observer that records nothing and carries its configuration (the dtype of a
    dynamic quantization's activations)."""

    def __init__(self, dtype: dt.dtype = dt.float32, custom_op_name: str = "",
                 compute_dtype: Any = None, quant_min: int | None = None,
                 quant_max: int | None = None, qscheme: Any = None, eps: float | None = None,
                 is_dynamic: bool = False) -> None:
        super().__init__(dtype=dtype, is_dynamic=is_dynamic)
        if qscheme is None:
            qscheme = per_tensor_affine
        if eps is None:
            eps = _FLOAT32_EPS
        self.quant_min, self.quant_max = quant_min, quant_max
        self.qscheme, self.eps = qscheme, eps
        self.custom_op = custom_op_name

    def forward(self, x: Tensor) -> Tensor:
        return x

    def extra_repr(self) -> str:
        return f"dtype={self.dtype}, is_dynamic={self.is_dynamic}"

    def calculate_qparams(self) -> Any:
        raise Exception("calculate_qparams should not be called for PlaceholderObserver")


for _cls in (ObserverBase, UniformQuantizationObserverBase, MinMaxObserver,
             MovingAverageMinMaxObserver, PerChannelMinMaxObserver,
             MovingAveragePerChannelMinMaxObserver, HistogramObserver, PlaceholderObserver):
    dt.printed_in_api(".ao.quantization.observer")(_cls)

default_observer = MinMaxObserver.with_args(quant_min=0, quant_max=127)
default_placeholder_observer = PlaceholderObserver
default_weight_observer = MinMaxObserver.with_args(dtype=dt.qint8,
                                                   qscheme=per_tensor_symmetric)
default_histogram_observer = HistogramObserver.with_args(quant_min=0, quant_max=127)
default_per_channel_weight_observer = PerChannelMinMaxObserver.with_args(
    dtype=dt.qint8, qscheme=per_channel_symmetric)
default_dynamic_quant_observer = PlaceholderObserver.with_args(
    dtype=dt.quint8, quant_min=0, quant_max=255, is_dynamic=True)
default_float_qparams_observer = PerChannelMinMaxObserver.with_args(
    dtype=dt.quint8, qscheme=per_channel_affine_float_qparams, ch_axis=0)
