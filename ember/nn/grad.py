"""Gradients of the convolutions with respect to their input and weight, as PyTorch's
`torch.nn.grad` (``conv2d_input(input_size, weight, grad_output, ...)`` ...): what a
custom autograd Function's backward calls to reuse a convolution's gradient."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import ember
from ember.core.tensor import Tensor

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input",
           "conv3d_weight"]


def _conv(n: int) -> Callable[..., Tensor]:
    from ember.nn import functional  # (functional imports this module)
    return getattr(functional, f"conv{n}d")


def _input_grad(n: int, input_size: Sequence[int], weight: Tensor, grad_output: Tensor,
                stride: Any, padding: Any, dilation: Any, groups: int) -> Tensor:
    # the convolution is linear in its input: its vector-Jacobian product at any input
    # (zeros here) is the gradient
    x = ember.zeros(tuple(input_size), dtype=grad_output.dtype, device=grad_output.device,
                    requires_grad=True)
    return _vjp(n, x, weight, x, grad_output, stride, padding, dilation, groups)


def _vjp(n: int, input: Tensor, weight: Tensor, wrt: Tensor, grad_output: Tensor,
         stride: Any, padding: Any, dilation: Any, groups: int) -> Tensor:
    """The gradient with respect to `wrt` (the input or the weight), itself differentiable
    in the other operand and `grad_output` where grad mode is on, as PyTorch's
    convolution_backward."""
    other = weight if wrt is input else input
    graph = ember.is_grad_enabled() and (other.requires_grad or grad_output.requires_grad)
    with ember.enable_grad():
        out = _conv(n)(input, weight, None, stride, padding, dilation, groups)
        return ember.autograd.grad(out, wrt, grad_output, create_graph=graph)[0]


def _weight_grad(n: int, input: Tensor, weight_size: Sequence[int], grad_output: Tensor,
                 stride: Any, padding: Any, dilation: Any, groups: int) -> Tensor:
    w = ember.zeros(tuple(weight_size), dtype=grad_output.dtype, device=grad_output.device,
                    requires_grad=True)
    return _vjp(n, input, w, w, grad_output, stride, padding, dilation, groups)


def conv1d_input(input_size: Sequence[int], weight: Tensor, grad_output: Tensor,
                 stride: Any = 1, padding: Any = 0, dilation: Any = 1,
                 groups: int = 1) -> Tensor:
    r"""The gradient of conv1d with respect to its input, of shape ``input_size``."""
    return _input_grad(1, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv1d_weight(input: Tensor, weight_size: Sequence[int], grad_output: Tensor,
                  stride: Any = 1, padding: Any = 0, dilation: Any = 1,
                  groups: int = 1) -> Tensor:
    r"""The gradient of conv1d with respect to its weight, of shape ``weight_size``."""
    return _weight_grad(1, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv2d_input(input_size: Sequence[int], weight: Tensor, grad_output: Tensor,
                 stride: Any = 1, padding: Any = 0, dilation: Any = 1,
                 groups: int = 1) -> Tensor:
    r"""The gradient of conv2d with respect to its input, of shape ``input_size``."""
    return _input_grad(2, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv2d_weight(input: Tensor, weight_size: Sequence[int], grad_output: Tensor,
                  stride: Any = 1, padding: Any = 0, dilation: Any = 1,
                  groups: int = 1) -> Tensor:
    r"""The gradient of conv2d with respect to its weight, of shape ``weight_size``."""
    return _weight_grad(2, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv3d_input(input_size: Sequence[int], weight: Tensor, grad_output: Tensor,
                 stride: Any = 1, padding: Any = 0, dilation: Any = 1,
                 groups: int = 1) -> Tensor:
    r"""The gradient of conv3d with respect to its input, of shape ``input_size``."""
    return _input_grad(3, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv3d_weight(input: Tensor, weight_size: Sequence[int], grad_output: Tensor,
                  stride: Any = 1, padding: Any = 0, dilation: Any = 1,
                  groups: int = 1) -> Tensor:
    r"""The gradient of conv3d with respect to its weight, of shape ``weight_size``."""
    return _weight_grad(3, input, weight_size, grad_output, stride, padding, dilation, groups)
