"""`parameters_to_vector` and `vector_to_parameters`."""

from __future__ import annotations

from collections.abc import Iterable

import ember
from ember import Tensor
from ember.core.backend import api_name

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_same_device(param: Tensor, old: ember.device | None) -> ember.device:
    if old is not None and param.device != old:
        raise TypeError("Found two parameters on different devices, this is currently not "
                        "supported.")
    return param.device


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    r"""Flatten ``parameters`` into one 1-D tensor (differentiable)."""
    device = None
    vec = []
    for param in parameters:
        device = _check_same_device(param, device)
        vec.append(param.view(-1))  # (PyTorch's: a channels_last weight raises)
    return ember.cat(vec)


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    r"""Copy consecutive slices of the 1-D ``vec`` into ``parameters`` (their ``.data``
    is replaced, so the Parameter objects stay the same)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected {api_name()}.Tensor, but got: {ember.typename(vec)}")
    device = None
    pointer = 0
    for param in parameters:
        device = _check_same_device(param, device)
        n = param.numel()
        param.data = vec[pointer:pointer + n].view_as(param).data
        pointer += n
