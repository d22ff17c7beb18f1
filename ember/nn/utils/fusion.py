"""Folding an eval-mode batch norm into the convolution or linear layer before it
(`torch.nn.utils.fusion`): inference runs one layer instead of two, with the same output
up to rounding."""

from __future__ import annotations

import copy

import ember
from ember import Tensor
from ember.nn.module import Module
from ember.nn.parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights"]


def _bn_defaults(bn_rm: Tensor, bias: Tensor | None, bn_w: Tensor | None,
                 bn_b: Tensor | None) -> tuple[Tensor, Tensor, Tensor]:
    """The layer's bias and the norm's affine parameters, with the identity's for absent
    ones."""
    return (ember.zeros_like(bn_rm) if bias is None else bias,
            ember.ones_like(bn_rm) if bn_w is None else bn_w,
            ember.zeros_like(bn_rm) if bn_b is None else bn_b)


def _check_eval(layer: Module, bn: Module) -> None:
    if layer.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")


def fuse_conv_bn_eval(conv: Module, bn: Module, transpose: bool = False) -> Module:
    r"""A new convolution equal to ``bn(conv(x))`` with both in eval mode.

    Args:
        conv: a convolution module (``Conv*d`` or, with `transpose`, ``ConvTranspose*d``).
        bn: a batch norm module with running statistics.
        transpose (bool, optional): the weight is a transposed convolution's
            ``(in, out, *kernel)``. Default: ``False``
    """
    _check_eval(conv, bn)
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias,
        transpose)
    return fused


def fuse_conv_bn_weights(conv_w: Tensor, conv_b: Tensor | None, bn_rm: Tensor, bn_rv: Tensor,
                         bn_eps: float, bn_w: Tensor | None, bn_b: Tensor | None,
                         transpose: bool = False) -> tuple[Parameter, Parameter]:
    r"""The weight and bias of a convolution followed by a batch norm, as one convolution's
    (each a :class:`Parameter` in the convolution's dtypes)."""
    weight_dtype = conv_w.dtype
    bias_dtype = conv_b.dtype if conv_b is not None else weight_dtype
    conv_b, bn_w, bn_b = _bn_defaults(bn_rm, conv_b, bn_w, bn_b)
    scale = ember.rsqrt(bn_rv + bn_eps)
    rest = [1] * (conv_w.ndim - 2)
    shape = [1, -1, *rest] if transpose else [-1, 1, *rest]
    weight = (conv_w * (bn_w * scale).reshape(shape)).to(dtype=weight_dtype)
    bias = ((conv_b - bn_rm) * scale * bn_w + bn_b).to(dtype=bias_dtype)
    return Parameter(weight, conv_w.requires_grad), Parameter(bias, conv_b.requires_grad)


def fuse_linear_bn_eval(linear: Module, bn: Module) -> Module:
    r"""A new linear layer equal to ``bn(linear(x))`` with both in eval mode; the norm's
    features must equal the layer's outputs, or be 1."""
    _check_eval(linear, bn)
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError(
            f"To fuse, linear.out_features == bn.num_features or bn.num_features == 1, got "
            f"linear.out_features={linear.out_features} and bn.num_features={bn.num_features}")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    return fused


def fuse_linear_bn_weights(linear_w: Tensor, linear_b: Tensor | None, bn_rm: Tensor,
                           bn_rv: Tensor, bn_eps: float, bn_w: Tensor | None,
                           bn_b: Tensor | None) -> tuple[Parameter, Parameter]:
    r"""The weight and bias of a linear layer followed by a batch norm, as one linear
    layer's."""
    weight_dtype = linear_w.dtype
    bias_dtype = linear_b.dtype if linear_b is not None else weight_dtype
    linear_b, bn_w, bn_b = _bn_defaults(bn_rm, linear_b, bn_w, bn_b)
    scale = bn_w * ember.rsqrt(bn_rv + bn_eps)
    weight = linear_w * scale.unsqueeze(-1).to(dtype=weight_dtype)
    bias = ((linear_b - bn_rm) * scale + bn_b).to(dtype=bias_dtype)
    return Parameter(weight, linear_w.requires_grad), Parameter(bias, linear_b.requires_grad)
