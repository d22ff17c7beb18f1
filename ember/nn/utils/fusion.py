"""Folding an eval-mode BatchNorm into the convolution or linear layer before it
(`torch.nn.utils.fusion`): one layer computing what the pair computes, for inference."""

from __future__ import annotations

import copy
from typing import Any

import ember
from ember import Tensor
from ember.nn.parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights"]


def fuse_conv_bn_eval(conv: Any, bn: Any, transpose: bool = False) -> Any:
    r"""A new convolution equal to ``bn(conv(x))``, both in eval mode.

    Args:
        conv: a convolutional module.
        bn: a BatchNorm module with running statistics.
        transpose: ``conv`` is a transposed convolution (its weight's output channels are
            dimension 1).
    """
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused_conv = copy.deepcopy(conv)
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")
    fused_conv.weight, fused_conv.bias = fuse_conv_bn_weights(
        fused_conv.weight, fused_conv.bias, bn.running_mean, bn.running_var, bn.eps,
        bn.weight, bn.bias, transpose)
    return fused_conv


def fuse_conv_bn_weights(conv_w: Tensor, conv_b: Tensor | None, bn_rm: Tensor,
                         bn_rv: Tensor, bn_eps: float, bn_w: Tensor | None,
                         bn_b: Tensor | None, transpose: bool = False
                         ) -> tuple[Parameter, Parameter]:
    r"""The weight and bias of a convolution that folds in a BatchNorm's affine map
    (scale ``bn_w / sqrt(bn_rv + eps)``, shift from ``bn_rm`` and ``bn_b``)."""
    conv_weight_dtype = conv_w.dtype
    conv_bias_dtype = conv_b.dtype if conv_b is not None else conv_weight_dtype
    if conv_b is None:
        conv_b = ember.zeros_like(bn_rm)
    if bn_w is None:
        bn_w = ember.ones_like(bn_rm)
    if bn_b is None:
        bn_b = ember.zeros_like(bn_rm)
    bn_var_rsqrt = ember.rsqrt(bn_rv + bn_eps)
    shape = ([1, -1] if transpose else [-1, 1]) + [1] * (len(conv_w.shape) - 2)
    fused_conv_w = (conv_w * (bn_w * bn_var_rsqrt).reshape(shape)).to(dtype=conv_weight_dtype)
    fused_conv_b = ((conv_b - bn_rm) * bn_var_rsqrt * bn_w + bn_b).to(dtype=conv_bias_dtype)
    return (Parameter(fused_conv_w, conv_w.requires_grad),
            Parameter(fused_conv_b, conv_b.requires_grad))


def fuse_linear_bn_eval(linear: Any, bn: Any) -> Any:
    r"""A new Linear equal to ``bn(linear(x))``, both in eval mode; ``bn.num_features``
    must be ``linear.out_features`` or 1."""
    if linear.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused_linear = copy.deepcopy(linear)
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError(
            f"To fuse, linear.out_features == bn.num_features or bn.num_features == 1, "
            f"got linear.out_features={linear.out_features} and "
            f"bn.num_features={bn.num_features}")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")
    fused_linear.weight, fused_linear.bias = fuse_linear_bn_weights(
        fused_linear.weight, fused_linear.bias, bn.running_mean, bn.running_var, bn.eps,
        bn.weight, bn.bias)
    return fused_linear


def fuse_linear_bn_weights(linear_w: Tensor, linear_b: Tensor | None, bn_rm: Tensor,
                           bn_rv: Tensor, bn_eps: float, bn_w: Tensor, bn_b: Tensor
                           ) -> tuple[Parameter, Parameter]:
    r"""The weight and bias of a Linear that folds in a BatchNorm's affine map."""
    linear_weight_dtype = linear_w.dtype
    linear_bias_dtype = linear_b.dtype if linear_b is not None else linear_weight_dtype
    if linear_b is None:
        linear_b = ember.zeros_like(bn_rm)
    bn_scale = bn_w * ember.rsqrt(bn_rv + bn_eps)
    fused_w = linear_w * bn_scale.unsqueeze(-1).to(dtype=linear_weight_dtype)
    fused_b = ((linear_b - bn_rm) * bn_scale + bn_b).to(dtype=linear_bias_dtype)
    return (Parameter(fused_w, linear_w.requires_grad),
            Parameter(fused_b, linear_b.requires_grad))
