"""Fused float modules (`torch.ao.nn.intrinsic`): the sequences `fuse_modules` makes of a
layer and the ReLU after it, so that quantization treats them as one op."""

from __future__ import annotations

from ember import nn


class _FusedModule(nn.Sequential):
    """A float layer followed by its activation, run as a Sequential."""

    _FIRST: type = nn.Module

    def __init__(self, *modules: nn.Module) -> None:
        first = modules[0]
        if not isinstance(first, self._FIRST) or \
                not all(isinstance(m, (nn.ReLU, nn.BatchNorm2d)) for m in modules[1:]):
            raise AssertionError(f"Incorrect types for input modules"
                                 f"{tuple(type(m) for m in modules)}")
        super().__init__(*modules)


class ConvReLU2d(_FusedModule):
    r"""A Conv2d and the ReLU after it (fused by ``fuse_modules``)."""

    _FIRST = nn.Conv2d


class LinearReLU(_FusedModule):
    r"""A Linear and the ReLU after it (fused by ``fuse_modules``)."""

    _FIRST = nn.Linear


class BNReLU2d(_FusedModule):
    r"""A BatchNorm2d and the ReLU after it (fused by ``fuse_modules``)."""

    _FIRST = nn.BatchNorm2d


class ConvBn2d(_FusedModule):
    r"""A Conv2d and the BatchNorm2d after it, kept apart for training (``fuse_modules_qat``)."""

    _FIRST = nn.Conv2d


class ConvBnReLU2d(_FusedModule):
    r"""A Conv2d, BatchNorm2d and ReLU, kept apart for training (``fuse_modules_qat``)."""

    _FIRST = nn.Conv2d
