"""`nn.utils.convert_conv2d_weight_memory_format` and its 3-d twin (lay out every
convolution's weight in a memory format, so the convolutions then write their outputs
in it too)."""

from __future__ import annotations

from typing import Any

from ember.nn.module import Module


def _convert(module: Module, memory_format: Any, kinds: tuple[type, ...]) -> Module:
    if isinstance(module, kinds):
        module.weight.data = module.weight.detach().clone(memory_format=memory_format)
    for child in module.children():
        _convert(child, memory_format, kinds)
    return module


def convert_conv2d_weight_memory_format(module: Module, memory_format: Any) -> Module:
    """Give the weights of `module`'s `Conv2d` and `ConvTranspose2d` layers (recursively)
    `memory_format` (`ember.channels_last`); returns `module`."""
    from ember.nn import Conv2d, ConvTranspose2d

    return _convert(module, memory_format, (Conv2d, ConvTranspose2d))


def convert_conv3d_weight_memory_format(module: Module, memory_format: Any) -> Module:
    """Give the weights of `module`'s `Conv3d` and `ConvTranspose3d` layers (recursively)
    `memory_format` (`ember.channels_last_3d`); returns `module`."""
    from ember.nn import Conv3d, ConvTranspose3d

    return _convert(module, memory_format, (Conv3d, ConvTranspose3d))
