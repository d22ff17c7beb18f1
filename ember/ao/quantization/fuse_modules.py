"""`fuse_modules`: replace a layer and the modules after it (conv-bn, conv-bn-relu,
conv-relu, linear-relu, linear-bn, bn-relu) by one fused module, the others by Identity,
as PyTorch's eager quantization does before `prepare`."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from ember import nn
from ember.ao.nn import intrinsic as nni
from ember.nn.utils.fusion import fuse_conv_bn_eval, fuse_linear_bn_eval


def _check_same_mode(a: nn.Module, b: nn.Module, what: str) -> None:
    if a.training != b.training:
        raise AssertionError(f"{what} both must be in the same mode (train or eval).")


def fuse_conv_bn(is_qat: bool, conv: nn.Module, bn: nn.Module) -> nn.Module:
    """Conv2d + BatchNorm2d: one convolution (eval), or a ConvBn2d kept apart (QAT)."""
    _check_same_mode(conv, bn, "Conv and BN")
    return nni.ConvBn2d(conv, bn) if is_qat else fuse_conv_bn_eval(conv, bn)


def fuse_conv_bn_relu(is_qat: bool, conv: nn.Module, bn: nn.Module,
                      relu: nn.Module) -> nn.Module:
    """Conv2d + BatchNorm2d + ReLU: a ConvReLU2d of the folded convolution (eval), or a
    ConvBnReLU2d (QAT)."""
    _check_same_mode(conv, bn, "Conv and BN")
    if is_qat:
        return nni.ConvBnReLU2d(conv, bn, relu)
    return nni.ConvReLU2d(fuse_conv_bn_eval(conv, bn), relu)


def fuse_linear_bn(is_qat: bool, linear: nn.Module, bn: nn.Module) -> nn.Module:
    """Linear + BatchNorm1d: one linear layer (eval only)."""
    _check_same_mode(linear, bn, "Linear and BN")
    if is_qat:
        raise AssertionError("Fusing Linear+BatchNorm not yet supported in QAT.")
    return fuse_linear_bn_eval(linear, bn)


def _sequential(fused: type) -> Callable[..., nn.Module]:
    return lambda is_qat, *modules: fused(*modules)


DEFAULT_OP_LIST_TO_FUSER_METHOD: dict[tuple, Callable[..., nn.Module]] = {
    (nn.Conv2d, nn.BatchNorm2d): fuse_conv_bn,
    (nn.Conv2d, nn.BatchNorm2d, nn.ReLU): fuse_conv_bn_relu,
    (nn.Conv2d, nn.ReLU): _sequential(nni.ConvReLU2d),
    (nn.Linear, nn.ReLU): _sequential(nni.LinearReLU),
    (nn.Linear, nn.BatchNorm1d): fuse_linear_bn,
    (nn.BatchNorm2d, nn.ReLU): _sequential(nni.BNReLU2d),
}


def fuse_known_modules(mod_list: list[nn.Module], is_qat: bool,
                       additional_fuser_method_mapping: dict | None = None
                       ) -> list[nn.Module]:
    """The fused module followed by an Identity for each other module of `mod_list`."""
    types = tuple(type(m) for m in mod_list)
    methods = dict(DEFAULT_OP_LIST_TO_FUSER_METHOD, **(additional_fuser_method_mapping or {}))
    fuser = methods.get(types)
    if fuser is None:
        raise NotImplementedError(f"Cannot fuse modules: {types}")
    fused = fuser(is_qat, *mod_list)
    # the first module's pre-hooks and the last one's hooks stay on the fused module
    for hook in mod_list[0]._forward_pre_hooks.values():
        fused.register_forward_pre_hook(hook)
    for hook in mod_list[-1]._forward_hooks.values():
        fused.register_forward_hook(hook)
    identities = []
    for _ in mod_list[1:]:
        identity = nn.Identity()
        identity.training = mod_list[0].training
        identities.append(identity)
    return [fused, *identities]


def _get_module(model: nn.Module, name: str) -> nn.Module:
    for part in name.split("."):
        model = getattr(model, part)
    return model


def _set_module(model: nn.Module, name: str, new: nn.Module) -> None:
    *parents, last = name.split(".")
    for part in parents:
        model = getattr(model, part)
    setattr(model, last, new)


def _fuse(model: nn.Module, modules_to_fuse: Any, is_qat: bool, inplace: bool,
          fuser_func: Callable, fuse_custom_config_dict: dict | None) -> nn.Module:
    if not inplace:
        model = copy.deepcopy(model)
    groups = [modules_to_fuse] if all(isinstance(m, str) for m in modules_to_fuse) else \
        modules_to_fuse
    extra = (fuse_custom_config_dict or {}).get("additional_fuser_method_mapping", {})
    for names in groups:
        fused = fuser_func([_get_module(model, n) for n in names], is_qat, extra)
        for name, new in zip(names, fused):
            _set_module(model, name, new)
    return model


def fuse_modules(model: nn.Module, modules_to_fuse: Any, inplace: bool = False,
                 fuser_func: Callable = fuse_known_modules,
                 fuse_custom_config_dict: dict | None = None) -> nn.Module:
    r"""Fuses groups of modules into one (the model in eval mode): conv-bn,
    conv-bn-relu, conv-relu, linear-relu, linear-bn, bn-relu. The first module of each
    group becomes the fused module, the others ``Identity``.

    Args:
        model: the model holding the modules.
        modules_to_fuse: a list of dotted module names, or a list of such lists.
        inplace: fuse in ``model`` itself instead of a copy.
    """
    return _fuse(model, modules_to_fuse, False, inplace, fuser_func, fuse_custom_config_dict)


def fuse_modules_qat(model: nn.Module, modules_to_fuse: Any, inplace: bool = False,
                     fuser_func: Callable = fuse_known_modules,
                     fuse_custom_config_dict: dict | None = None) -> nn.Module:
    r""":func:`fuse_modules` for quantization-aware training (the model in train mode):
    conv-bn stays a ConvBn2d instead of being folded."""
    return _fuse(model, modules_to_fuse, True, inplace, fuser_func, fuse_custom_config_dict)
