"""Fake quantization for quantization-aware training (`torch.ao.quantization.fake_quantize`):
modules that observe a tensor and round it to its quantized values in float, so training
sees the quantization error while gradients pass (straight-through)."""

from __future__ import annotations

from typing import Any

import ember
from ember import nn
from ember.ao.qparams import choose_qparams
from ember.ao.quantization.observer import (
    MovingAverageMinMaxObserver,
    MovingAveragePerChannelMinMaxObserver,
    _with_args,
)
from ember.core import dtype as dt
from ember.core.quantized import (
    per_channel_affine,
    per_channel_affine_float_qparams,
    per_channel_symmetric,
    per_tensor_affine,
    per_tensor_symmetric,
)
from ember.core.tensor import Tensor


def _is_per_channel(qscheme: Any) -> bool:
    return qscheme in (per_channel_symmetric, per_channel_affine,
                       per_channel_affine_float_qparams)


class FakeQuantizeBase(nn.Module):
    """The base of fake quantizers: the switches `fake_quant_enabled` and
    `observer_enabled` (uint8 buffers, as PyTorch's)."""

    with_args = classmethod(_with_args)

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("fake_quant_enabled", ember.tensor([1], dtype=ember.uint8))
        self.register_buffer("observer_enabled", ember.tensor([1], dtype=ember.uint8))

    def enable_fake_quant(self, enabled: bool = True) -> None:
        self.fake_quant_enabled[0] = 1 if enabled else 0

    def disable_fake_quant(self) -> None:
        self.enable_fake_quant(False)

    def enable_observer(self, enabled: bool = True) -> None:
        self.observer_enabled[0] = 1 if enabled else 0

    def disable_observer(self) -> None:
        self.enable_observer(False)


class FakeQuantize(FakeQuantizeBase):
    r"""Simulates quantize-dequantize in training: an observer (``observer``, built with
    ``observer_kwargs``) updates the scale and zero point from each batch while
    ``observer_enabled``; while ``fake_quant_enabled`` the output is the input rounded to
    them (:func:`ember.fake_quantize_per_tensor_affine` or its per-channel form)."""

    def __init__(self, observer: Any = MovingAverageMinMaxObserver,
                 quant_min: int | None = None, quant_max: int | None = None,
                 is_dynamic: bool = False, **observer_kwargs: Any) -> None:
        super().__init__()
        if quant_min is not None and quant_max is not None:
            if quant_min > quant_max:
                raise AssertionError("quant_min must be less than or equal to quant_max")
            observer_kwargs.update(quant_min=quant_min, quant_max=quant_max)
        observer_kwargs["is_dynamic"] = is_dynamic
        self.activation_post_process = observer(**observer_kwargs)
        self.quant_min = self.activation_post_process.quant_min
        self.quant_max = self.activation_post_process.quant_max
        self.is_dynamic = self.activation_post_process.is_dynamic
        float_qparams = self.activation_post_process.qscheme is per_channel_affine_float_qparams
        self.register_buffer("scale", ember.tensor([1.0]))
        self.register_buffer("zero_point", ember.tensor(
            [0], dtype=ember.float32 if float_qparams else ember.int32))
        self.dtype = self.activation_post_process.dtype
        self.qscheme = self.activation_post_process.qscheme
        self.ch_axis = getattr(self.activation_post_process, "ch_axis", -1)
        self.is_per_channel = _is_per_channel(self.qscheme)
        self.is_symmetric_quant = self.qscheme in (per_tensor_symmetric, per_channel_symmetric)

    def calculate_qparams(self) -> tuple[Tensor, Tensor]:
        return self.activation_post_process.calculate_qparams()

    def _set_qparams(self, scale: Tensor, zero_point: Tensor) -> None:
        if self.scale.shape != scale.shape:  # per channel: as many as the channels
            self.scale = scale.detach().clone().float()
            self.zero_point = zero_point.detach().clone().to(self.zero_point.dtype)
        else:
            self.scale.copy_(scale)
            self.zero_point.copy_(zero_point)

    def _fake_quantize(self, x: Tensor) -> Tensor:
        if self.is_per_channel:
            return ember.fake_quantize_per_channel_affine(
                x, self.scale, self.zero_point, self.ch_axis, self.quant_min, self.quant_max)
        return ember.fake_quantize_per_tensor_affine(x, float(self.scale),
                                                     int(self.zero_point), self.quant_min,
                                                     self.quant_max)

    def forward(self, X: Tensor) -> Tensor:
        if int(self.observer_enabled[0]) == 1:
            self.activation_post_process(X.detach())
            self._set_qparams(*self.calculate_qparams())
        if int(self.fake_quant_enabled[0]) == 1:
            X = self._fake_quantize(X)
        return X

    def extra_repr(self) -> str:
        return (f"fake_quant_enabled={self.fake_quant_enabled}, "
                f"observer_enabled={self.observer_enabled}, quant_min={self.quant_min}, "
                f"quant_max={self.quant_max}, dtype={self.dtype}, qscheme={self.qscheme}, "
                f"ch_axis={self.ch_axis}, scale={self.scale}, zero_point={self.zero_point}")


class FusedMovingAvgObsFakeQuantize(FakeQuantize):
    r"""PyTorch's fused moving-average observer and fake quantizer (the default of
    :func:`get_default_qat_qconfig`): the observer's running minimum and maximum are
    moving averages, and the scale and zero point come from them as FBGEMM chooses them
    (symmetric schemes keep 0 in the middle of the range)."""

    def __init__(self, observer: Any = MovingAverageMinMaxObserver, quant_min: int = 0,
                 quant_max: int = 255, **observer_kwargs: Any) -> None:
        super().__init__(observer, quant_min, quant_max, **observer_kwargs)
        if not isinstance(self.activation_post_process, (
                MovingAverageMinMaxObserver, MovingAveragePerChannelMinMaxObserver)):
            raise AssertionError("Fused observer+fake_quant module only works with "
                                 "MovingAverageMinMaxObserver")
        self.register_buffer("fake_quant_enabled", ember.tensor([1], dtype=ember.long))
        self.register_buffer("observer_enabled", ember.tensor([1], dtype=ember.long))

    def _observed_qparams(self) -> tuple[Tensor, Tensor]:
        post = self.activation_post_process
        lows = post.min_val.reshape(-1).tolist()
        highs = post.max_val.reshape(-1).tolist()
        pairs = [choose_qparams(lo, hi, post.quant_min, post.quant_max,
                                preserve_sparsity=self.is_symmetric_quant)
                 for lo, hi in zip(lows, highs)]
        device = post.min_val.device
        return (ember.tensor([s for s, _ in pairs], device=device),
                ember.tensor([z for _, z in pairs], dtype=ember.int32, device=device))

    def forward(self, X: Tensor) -> Tensor:
        if int(self.observer_enabled[0]) == 1:
            self.activation_post_process(X.detach())
            self._set_qparams(*self._observed_qparams())
        if int(self.fake_quant_enabled[0]) == 1:
            X = self._fake_quantize(X)
        return X

    def extra_repr(self) -> str:
        return (f"fake_quant_enabled={self.fake_quant_enabled}, "
                f"observer_enabled={self.observer_enabled}, scale={self.scale}, "
                f"zero_point={self.zero_point}, dtype={self.dtype}, "
                f"quant_min={self.activation_post_process.quant_min}, "
                f"quant_max={self.activation_post_process.quant_max}, "
                f"qscheme={self.qscheme}, "
                f"reduce_range={self.activation_post_process.reduce_range}")


for _cls in (FakeQuantizeBase, FakeQuantize, FusedMovingAvgObsFakeQuantize):
    dt.printed_in_api(".ao.quantization.fake_quantize")(_cls)


def disable_fake_quant(mod: nn.Module) -> None:
    """Turns fake quantization off in `mod` if it is a fake quantizer (use with
    ``model.apply``)."""
    if isinstance(mod, FakeQuantizeBase):
        mod.disable_fake_quant()


def enable_fake_quant(mod: nn.Module) -> None:
    """Turns fake quantization on in `mod` if it is a fake quantizer."""
    if isinstance(mod, FakeQuantizeBase):
        mod.enable_fake_quant()


def disable_observer(mod: nn.Module) -> None:
    """Freezes the scale and zero point of `mod` if it is a fake quantizer."""
    if isinstance(mod, FakeQuantizeBase):
        mod.disable_observer()


def enable_observer(mod: nn.Module) -> None:
    """Lets `mod`, if a fake quantizer, update its scale and zero point again."""
    if isinstance(mod, FakeQuantizeBase):
        mod.enable_observer()


default_fake_quant = FakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255, dtype=dt.quint8,
    qscheme=per_tensor_affine, reduce_range=True)
default_weight_fake_quant = FakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127, dtype=dt.qint8,
    qscheme=per_tensor_symmetric, reduce_range=False)
default_per_channel_weight_fake_quant = FakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127,
    dtype=dt.qint8, qscheme=per_channel_symmetric, reduce_range=False, ch_axis=0)
default_fused_act_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255, dtype=dt.quint8)
default_fused_wt_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127, dtype=dt.qint8,
    qscheme=per_tensor_symmetric)
default_fused_per_channel_wt_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127,
    dtype=dt.qint8, qscheme=per_channel_symmetric)
