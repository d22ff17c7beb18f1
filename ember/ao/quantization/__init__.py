"""Eager-mode quantization with PyTorch's API (`torch.ao.quantization`, also
`torch.quantization`): observers, fake quantizers, qconfigs, QuantStub/DeQuantStub,
fuse_modules, prepare/convert, prepare_qat and quantize_dynamic."""

from ember.ao.quantization.fake_quantize import (
    FakeQuantize,
    FakeQuantizeBase,
    FusedMovingAvgObsFakeQuantize,
    default_fake_quant,
    default_fused_act_fake_quant,
    default_fused_per_channel_wt_fake_quant,
    default_fused_wt_fake_quant,
    default_per_channel_weight_fake_quant,
    default_weight_fake_quant,
    disable_fake_quant,
    disable_observer,
    enable_fake_quant,
    enable_observer,
)
from ember.ao.quantization.fuse_modules import fuse_modules, fuse_modules_qat
from ember.ao.quantization.observer import (
    HistogramObserver,
    MinMaxObserver,
    MovingAverageMinMaxObserver,
    MovingAveragePerChannelMinMaxObserver,
    ObserverBase,
    PerChannelMinMaxObserver,
    PlaceholderObserver,
    UniformQuantizationObserverBase,
    default_dynamic_quant_observer,
    default_float_qparams_observer,
    default_histogram_observer,
    default_observer,
    default_per_channel_weight_observer,
    default_placeholder_observer,
    default_weight_observer,
)
from ember.ao.quantization.qconfig import (
    QConfig,
    QConfigDynamic,
    default_dynamic_qconfig,
    default_per_channel_qconfig,
    default_qat_qconfig,
    default_qconfig,
    get_default_qat_qconfig,
    get_default_qconfig,
    per_channel_dynamic_qconfig,
)
from ember.ao.quantization.quantize import (
    convert,
    get_default_dynamic_quant_module_mappings,
    get_default_qat_module_mappings,
    get_default_qconfig_propagation_list,
    get_default_static_quant_module_mappings,
    prepare,
    prepare_qat,
    propagate_qconfig_,
    quantize,
    quantize_dynamic,
    quantize_qat,
    swap_module,
)
from ember.ao.quantization.stubs import DeQuantStub, QuantStub, QuantWrapper

__all__ = [
    "DeQuantStub", "FakeQuantize", "FakeQuantizeBase", "FusedMovingAvgObsFakeQuantize",
    "HistogramObserver", "MinMaxObserver", "MovingAverageMinMaxObserver",
    "MovingAveragePerChannelMinMaxObserver", "ObserverBase", "PerChannelMinMaxObserver",
    "PlaceholderObserver", "QConfig", "QConfigDynamic", "QuantStub", "QuantWrapper",
    "UniformQuantizationObserverBase", "convert", "default_dynamic_qconfig",
    "default_dynamic_quant_observer", "default_fake_quant", "default_float_qparams_observer",
    "default_fused_act_fake_quant", "default_fused_per_channel_wt_fake_quant",
    "default_fused_wt_fake_quant", "default_histogram_observer", "default_observer",
    "default_per_channel_qconfig", "default_per_channel_weight_fake_quant",
    "default_per_channel_weight_observer", "default_placeholder_observer",
    "default_qat_qconfig", "default_qconfig", "default_weight_fake_quant",
    "default_weight_observer", "disable_fake_quant", "disable_observer",
    "enable_fake_quant", "enable_observer", "fuse_modules", "fuse_modules_qat",
    "get_default_dynamic_quant_module_mappings", "get_default_qat_module_mappings",
    "get_default_qat_qconfig", "get_default_qconfig", "get_default_qconfig_propagation_list",
    "get_default_static_quant_module_mappings", "per_channel_dynamic_qconfig", "prepare",
    "prepare_qat", "propagate_qconfig_", "quantize", "quantize_dynamic", "quantize_qat",
    "swap_module",
]
