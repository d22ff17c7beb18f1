"""Eager-mode quantization (`torch.ao.quantization.quantize`): `prepare` attaches observers
to the layers a qconfig reaches, calibration runs them, `convert` swaps each observed
layer for its quantized module; `prepare_qat` swaps in fake-quantized training modules
first; `quantize_dynamic` swaps Linear/LSTM for their dynamically quantized modules."""

from __future__ import annotations

import copy
import itertools
import warnings
from typing import Any

from ember import nn
from ember.ao.nn import intrinsic as nni
from ember.ao.nn import qat as nnqat
from ember.ao.nn import quantized as nnq
from ember.ao.nn.intrinsic import qat as nniqat
from ember.ao.nn.intrinsic import quantized as nniq
from ember.ao.nn.intrinsic.modules import _FusedModule
from ember.ao.nn.quantized import dynamic as nnqd
from ember.ao.quantization.fake_quantize import FakeQuantizeBase
from ember.ao.quantization.observer import ObserverBase
from ember.ao.quantization.qconfig import QConfig, default_dynamic_qconfig
from ember.ao.quantization.stubs import DeQuantStub, QuantStub
from ember.core import dtype as dt

DEFAULT_STATIC_QUANT_MODULE_MAPPINGS: dict[type, type] = {
    QuantStub: nnq.Quantize, DeQuantStub: nnq.DeQuantize,
    nn.Linear: nnq.Linear, nn.Conv2d: nnq.Conv2d,
    nni.ConvReLU2d: nniq.ConvReLU2d, nni.LinearReLU: nniq.LinearReLU,
    nnqat.Linear: nnq.Linear, nnqat.Conv2d: nnq.Conv2d,
    nniqat.ConvReLU2d: nniq.ConvReLU2d, nniqat.LinearReLU: nniq.LinearReLU,
    nniqat.ConvBn2d: nnq.Conv2d, nniqat.ConvBnReLU2d: nniq.ConvReLU2d,
    nnq.FloatFunctional: nnq.QFunctional,
}
DEFAULT_QAT_MODULE_MAPPINGS: dict[type, type] = {
    nn.Linear: nnqat.Linear, nn.Conv2d: nnqat.Conv2d,
    nni.ConvReLU2d: nniqat.ConvReLU2d, nni.LinearReLU: nniqat.LinearReLU,
    nni.ConvBn2d: nniqat.ConvBn2d, nni.ConvBnReLU2d: nniqat.ConvBnReLU2d,
}
DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS: dict[type, type] = {
    nn.Linear: nnqd.Linear, nn.LSTM: nnqd.LSTM,
}


def get_default_static_quant_module_mappings() -> dict[type, type]:
    return copy.copy(DEFAULT_STATIC_QUANT_MODULE_MAPPINGS)


def get_default_qat_module_mappings() -> dict[type, type]:
    return copy.copy(DEFAULT_QAT_MODULE_MAPPINGS)


def get_default_dynamic_quant_module_mappings() -> dict[type, type]:
    return copy.copy(DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS)


def get_default_qconfig_propagation_list() -> set[type]:
    """The module types that get observers (the keys of every mapping)."""
    return (set(DEFAULT_STATIC_QUANT_MODULE_MAPPINGS) | set(DEFAULT_QAT_MODULE_MAPPINGS)
            | set(DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS) | {nn.Sequential})


def _check_qconfig(qconfig: Any, module: nn.Module) -> None:
    if qconfig is not None and not isinstance(qconfig, QConfig):
        raise TypeError(f"the qconfig of {type(module).__name__} must be a QConfig (or None), "
                        f"got {type(qconfig).__name__}")


def _propagate(module: nn.Module, qconfig_dict: dict, parent: Any, prefix: str) -> None:
    qconfig = qconfig_dict.get(type(module), parent)
    qconfig = qconfig_dict.get(prefix, qconfig)
    qconfig = getattr(module, "qconfig", qconfig)
    _check_qconfig(qconfig, module)
    module.qconfig = qconfig
    for name, child in module.named_children():
        _propagate(child, qconfig_dict, qconfig, f"{prefix}.{name}" if prefix else name)


def propagate_qconfig_(module: nn.Module, qconfig_dict: dict | None = None,
                       prepare_custom_config_dict: dict | None = None) -> None:
    r"""Gives every submodule a ``qconfig``: its own, else the one ``qconfig_dict`` names
    for its type or dotted name, else its parent's."""
    _propagate(module, qconfig_dict or {}, None, "")


def _observer_forward_hook(self: nn.Module, input: Any, output: Any) -> Any:
    """Runs the module's output through its activation_post_process (whose result, a
    fake-quantized tensor in QAT, replaces the output)."""
    return self.activation_post_process(output)


def _needs_observation(m: nn.Module) -> bool:
    return getattr(m, "qconfig", None) is not None


def _insert_activation_post_process(m: nn.Module) -> None:
    if _needs_observation(m) and not isinstance(m, DeQuantStub):
        m.add_module("activation_post_process", m.qconfig.activation())
        m.register_forward_hook(_observer_forward_hook, prepend=True)


def _add_observer_(module: nn.Module, propagation: set, non_leaf: set | None) -> None:
    for child in module.children():
        if type(child) is nn.Dropout:
            continue
        if isinstance(child, (nnq.FloatFunctional, nnq.QFunctional)):
            if _needs_observation(child):
                child.activation_post_process = child.qconfig.activation()
        elif isinstance(child, _FusedModule) or (non_leaf and type(child) in non_leaf):
            _insert_activation_post_process(child)
        else:
            _add_observer_(child, propagation, non_leaf)
    if type(module) in propagation and not isinstance(module, nn.Sequential) and (
            not module._modules or hasattr(module, "weight_fake_quant")):
        _insert_activation_post_process(module)


def prepare(model: nn.Module, inplace: bool = False, allow_list: set | None = None,
            observer_non_leaf_module_list: set | None = None,
            prepare_custom_config_dict: dict | None = None) -> nn.Module:
    r"""Prepares a copy of the model (or the model itself, ``inplace``) for calibration:
    propagates ``qconfig`` to the submodules and attaches an observer
    (``activation_post_process``) to the output of each layer it reaches.

    Args:
        model: the float model, with ``qconfig`` set on it or its submodules.
        inplace: change ``model`` itself.
        allow_list: the module types that get observers (default: the quantizable ones).
    """
    if not inplace:
        model = copy.deepcopy(model)
    propagate_qconfig_(model)
    if not any(getattr(m, "qconfig", None) for m in model.modules()):
        warnings.warn("None of the submodule got qconfig applied. Make sure you passed "
                      "correct configuration through `qconfig_dict` or by assigning the "
                      "`.qconfig` attribute directly on submodules", stacklevel=2)
    _add_observer_(model, allow_list or get_default_qconfig_propagation_list(),
                   observer_non_leaf_module_list)
    return model


def prepare_qat(model: nn.Module, mapping: dict | None = None,
                inplace: bool = False) -> nn.Module:
    r"""Prepares a model in training mode for quantization-aware training: its layers are
    swapped for fake-quantized ones (``torch.ao.nn.qat``) and observers attached."""
    if not model.training:
        raise AssertionError("prepare_qat only works on models in training mode")
    if mapping is None:
        mapping = get_default_qat_module_mappings()
    if not inplace:
        model = copy.deepcopy(model)
    propagate_qconfig_(model)
    convert(model, mapping=mapping, inplace=True, remove_qconfig=False)
    prepare(model, observer_non_leaf_module_list=set(mapping.values()), inplace=True)
    return model


def swap_module(mod: nn.Module, mapping: dict, custom_module_class_mapping: dict | None = None,
                use_precomputed_fake_quant: bool = False) -> nn.Module:
    r"""The module that ``mapping`` gives for ``mod``'s type, made by its ``from_float``
    (``mod`` itself when it has no qconfig or no mapping); hooks other than the
    observer's move to the new module."""
    if getattr(mod, "qconfig", None) is None:
        return mod
    target = mapping.get(type(mod))
    if target is None:
        if type(mod) in (nni.ConvBn2d, nni.ConvBnReLU2d) and nnq.Conv2d in mapping.values():
            raise NotImplementedError(f"{type(mod).__name__} (from fuse_modules_qat) is "
                                      "quantized through prepare_qat; for post-training "
                                      "quantization fuse the model in eval mode")
        return mod
    new = target.from_float(mod)
    for hook in mod._forward_pre_hooks.values():
        new.register_forward_pre_hook(hook)
    for hook in mod._forward_hooks.values():
        if hook is not _observer_forward_hook:
            new.register_forward_hook(hook)
    return new


def _convert(module: nn.Module, mapping: dict) -> None:
    for name, child in list(module.named_children()):
        if not isinstance(child, _FusedModule):
            _convert(child, mapping)
        module._modules[name] = swap_module(child, mapping)


def _remove_qconfig(module: nn.Module) -> None:
    for child in module.children():
        _remove_qconfig(child)
    if "qconfig" in module.__dict__:
        del module.qconfig
    post = module._modules.get("activation_post_process")
    if isinstance(post, (ObserverBase, FakeQuantizeBase)):
        del module._modules["activation_post_process"]
    for key, hook in list(module._forward_hooks.items()):
        if hook is _observer_forward_hook:
            del module._forward_hooks[key]


def convert(module: nn.Module, mapping: dict | None = None, inplace: bool = False,
            remove_qconfig: bool = True, is_reference: bool = False,
            convert_custom_config_dict: dict | None = None,
            use_precomputed_fake_quant: bool = False) -> nn.Module:
    r"""Converts a calibrated (or QAT-trained) model: each observed layer is replaced by
    its quantized module (``QuantStub`` -> ``Quantize``, ``Linear`` -> ``QuantizedLinear``,
    fused ``ConvReLU2d`` -> ``QuantizedConvReLU2d``...), built from its observers' qparams.

    Args:
        module: the prepared model.
        mapping: float (or QAT) module type -> quantized module type.
        inplace: change ``module`` itself.
        remove_qconfig: drop the ``qconfig`` attributes and observers afterwards.
    """
    if is_reference:
        raise NotImplementedError("ember has no reference quantized modules "
                                  "(is_reference=True)")
    if not inplace:
        module = copy.deepcopy(module)
    _convert(module, mapping if mapping is not None else DEFAULT_STATIC_QUANT_MODULE_MAPPINGS)
    if remove_qconfig:
        _remove_qconfig(module)
    return module


def quantize(model: nn.Module, run_fn: Any, run_args: Any, mapping: dict | None = None,
             inplace: bool = False) -> nn.Module:
    r"""Post-training static quantization in one call: prepare, ``run_fn(model,
    run_args)`` to calibrate, convert."""
    if not inplace:
        model = copy.deepcopy(model)
    model.eval()
    prepare(model, inplace=True)
    run_fn(model, run_args)
    convert(model, mapping, inplace=True)
    return model


def quantize_qat(model: nn.Module, run_fn: Any, run_args: Any,
                 inplace: bool = False) -> nn.Module:
    r"""Quantization-aware training in one call: prepare_qat, ``run_fn(model, *run_args)``
    to train, convert."""
    if not inplace:
        model = copy.deepcopy(model)
    model.train()
    prepare_qat(model, inplace=True)
    run_fn(model, *run_args)
    convert(model, inplace=True)
    return model


def quantize_dynamic(model: nn.Module, qconfig_spec: Any = None, dtype: Any = dt.qint8,
                     mapping: dict | None = None, inplace: bool = False) -> nn.Module:
    r"""Converts a float model to a dynamically quantized one: its Linear (and LSTM)
    layers get qint8 weights and quantize their activations on the fly.

    Args:
        model: the float model.
        qconfig_spec: a set of module types (or names) to quantize, or a dict from them
            to a qconfig; default: every Linear and LSTM.
        dtype: the weights' dtype; ``ember.qint8``.
        mapping: float module type -> dynamically quantized module type.
        inplace: change ``model`` itself.
    """
    if dtype is not dt.qint8:
        raise NotImplementedError(f"ember's quantize_dynamic quantizes to torch.qint8 only, "
                                  f"got {dtype}")
    if qconfig_spec is None:
        qconfig_spec = {nn.Linear: default_dynamic_qconfig, nn.LSTM: default_dynamic_qconfig}
    elif isinstance(qconfig_spec, set):
        qconfig_spec = dict(zip(qconfig_spec, itertools.repeat(default_dynamic_qconfig)))
    if not inplace:
        model = copy.deepcopy(model)
    model.eval()
    propagate_qconfig_(model, qconfig_spec)
    convert(model, mapping or get_default_dynamic_quant_module_mappings(), inplace=True)
    return model
