"""Quantization configurations (`torch.ao.quantization.qconfig`): which observer (or fake
quantizer) watches a module's output activations and which its weight."""

from __future__ import annotations

from collections import namedtuple
from typing import Any

from ember import nn
from ember.ao.quantization.fake_quantize import (
    FakeQuantize,
    FusedMovingAvgObsFakeQuantize,
    default_fake_quant,
    default_fused_per_channel_wt_fake_quant,
    default_fused_wt_fake_quant,
    default_per_channel_weight_fake_quant,
    default_weight_fake_quant,
)
from ember.ao.quantization.observer import (
    HistogramObserver,
    MovingAverageMinMaxObserver,
    default_dynamic_quant_observer,
    default_observer,
    default_per_channel_weight_observer,
    default_weight_observer,
)
from ember.core import dtype as dt


class QConfig(namedtuple("QConfig", ["activation", "weight"])):
    """How to quantize a layer: `activation` and `weight` are observer classes (or
    `with_args` partials of them), each called to make a fresh observer."""

    __slots__ = ()

    def __new__(cls, activation: Any = nn.Identity, weight: Any = nn.Identity) -> QConfig:
        if isinstance(weight, nn.Module) or isinstance(activation, nn.Module):
            raise ValueError("QConfig received observer instance, please pass observer class "
                             "instead. Use MyObserver.with_args(x=1) to override arguments to "
                             "constructor if needed")
        return super().__new__(cls, activation, weight)


QConfig.__module__ = "ember.ao.quantization.qconfig"
dt.printed_in_api(".ao.quantization.qconfig")(QConfig)
QConfigDynamic = QConfig

default_qconfig = QConfig(activation=default_observer, weight=default_weight_observer)
default_per_channel_qconfig = QConfig(activation=default_observer,
                                      weight=default_per_channel_weight_observer)
default_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer,
                                  weight=default_weight_observer)
per_channel_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer,
                                      weight=default_per_channel_weight_observer)
default_qat_qconfig = QConfig(activation=default_fake_quant, weight=default_weight_fake_quant)

_BACKENDS = ["fbgemm", "x86", "qnnpack", "onednn"]


def _check_backend(backend: str) -> None:
    if backend not in _BACKENDS:
        raise AssertionError(f"backend: {backend} not supported. backend must be one of "
                             f"{_BACKENDS}")


def get_default_qconfig(backend: str = "x86", version: int = 0) -> QConfig:
    """The default post-training quantization config of a backend: a histogram observer
    on activations (7-bit on x86/fbgemm), per-channel symmetric weights (per tensor on
    qnnpack)."""
    _check_backend(backend)
    if version != 0:
        raise AssertionError(f"Version number: {version} in get_default_qconfig is not "
                             "supported. Version number must be 0")
    if backend in ("fbgemm", "x86"):
        return QConfig(activation=HistogramObserver.with_args(reduce_range=True),
                       weight=default_per_channel_weight_observer)
    if backend == "qnnpack":
        return QConfig(activation=HistogramObserver.with_args(reduce_range=False),
                       weight=default_weight_observer)
    return QConfig(activation=HistogramObserver.with_args(reduce_range=False),
                   weight=default_per_channel_weight_observer)


def get_default_qat_qconfig(backend: str = "x86", version: int = 1) -> QConfig:
    """The default quantization-aware training config of a backend: fake quantizers with
    moving-average observers (fused ones in version 1, the default)."""
    _check_backend(backend)
    reduce = backend in ("fbgemm", "x86")
    if version == 0:
        weight = default_weight_fake_quant if backend == "qnnpack" else \
            default_per_channel_weight_fake_quant
        return QConfig(activation=FakeQuantize.with_args(
            observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255,
            reduce_range=reduce), weight=weight)
    if version != 1:
        raise AssertionError(f"Version number: {version}in get_default_qat_qconfig is not "
                             "supported. Version number must be 0 or 1")
    if backend == "onednn":
        activation = FusedMovingAvgObsFakeQuantize.with_args(
            observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255)
    else:
        activation = FusedMovingAvgObsFakeQuantize.with_args(
            observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255,
            reduce_range=reduce)
    weight = default_fused_wt_fake_quant if backend == "qnnpack" else \
        default_fused_per_channel_wt_fake_quant
    return QConfig(activation=activation, weight=weight)
