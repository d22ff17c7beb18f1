"""Gradient clipping: `clip_grad_norm_`, `clip_grad_value_`, `get_total_norm`."""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable

import ember
from ember import Tensor
from ember.core.sparse_coo import unsupported

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm",
           "clip_grads_with_norm_"]

_TensorOrTensors = Tensor | Iterable[Tensor]


def _as_list(tensors: _TensorOrTensors) -> list[Tensor]:
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def get_total_norm(tensors: _TensorOrTensors, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    r"""The ``norm_type``-norm of the norms of ``tensors``: the norm of all their elements
    taken together as one vector.

    Args:
        tensors: a tensor or an iterable of tensors (typically gradients).
        norm_type: the p of the norm; ``inf`` for the max norm.
        error_if_nonfinite: raise if the total norm is nan or inf.
    """
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return ember.tensor(0.0)
    first = tensors[0]
    for t in tensors:  # PyTorch's vector norm has no sparse kernel (ember.norm has one)
        if t.is_sparse:
            raise unsupported(t, "linalg_vector_norm")
    with ember.no_grad():
        # (a complex gradient's norm is real: the norms keep the real dtype)
        norms = [ember.norm(t, norm_type).to(first.device, first.dtype.to_real())
                 for t in tensors]
        # the norm of the stacked norms even for one tensor, as PyTorch: the 0-"norm" then
        # counts the tensors with a nonzero gradient, not their nonzero elements
        total = ember.norm(ember.stack(norms), norm_type)
    if error_if_nonfinite and not math.isfinite(float(total)):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from "
                           "`parameters` is non-finite, so it cannot be clipped. To disable "
                           "this error and scale the gradients by the non-finite norm anyway, "
                           "set `error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters: _TensorOrTensors, max_norm: float, total_norm: Tensor,
                          foreach: bool | None = None) -> None:
    r"""Scale the gradients of ``parameters`` in place by
    ``min(1, max_norm / (total_norm + 1e-6))``."""
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    if not grads:
        return
    with ember.no_grad():
        coef = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef.to(g.device, g.dtype))


def clip_grad_norm_(parameters: _TensorOrTensors, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    r"""Clip the gradient norm of ``parameters``, in place.

    The norm is computed over all gradients together, as if concatenated into one
    vector; the gradients are scaled by ``max_norm / (total_norm + 1e-6)`` when that is
    below 1.

    Args:
        parameters: a tensor or an iterable of tensors whose ``.grad`` is clipped.
        max_norm: the largest allowed norm.
        norm_type: the p of the norm; ``inf`` for the max norm. Default: 2.0
        error_if_nonfinite: raise a RuntimeError if the total norm is nan or inf.

    Returns:
        Tensor: the total norm of the gradients before clipping.
    """
    params = _as_list(parameters)
    grads = [p.grad for p in params if p.grad is not None]
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(params, max_norm, total, foreach)
    return total


def clip_grad_norm(parameters: _TensorOrTensors, max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    r"""Deprecated alias of :func:`clip_grad_norm_`."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters: _TensorOrTensors, clip_value: float,
                     foreach: bool | None = None) -> None:
    r"""Clamp the gradients of ``parameters`` to ``[-clip_value, clip_value]``, in
    place."""
    clip_value = float(clip_value)
    with ember.no_grad():
        for p in _as_list(parameters):
            if p.grad is not None:
                p.grad.clamp_(-clip_value, clip_value)


