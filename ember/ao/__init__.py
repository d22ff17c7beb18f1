"""Quantization (`torch.ao`): `ember.ao.quantization` (the workflow) and `ember.ao.nn` (the
quantized, fused and QAT modules). Written against ember's public Tensor API, above
ember.nn."""

import importlib

from ember.core.backend import api_name

_SUBMODULES = {"quantization", "nn"}


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f"ember.ao.{name}")
    raise AttributeError(f"module '{api_name()}.ao' has no attribute {name!r}")
