"""Quantized ops on quantized tensors (`torch.ao.nn.quantized.functional`), computed as
PyTorch's FBGEMM kernels compute them: integer accumulation of the zero-point-centred
values (done exactly, in float64 ops), then the requantization of FBGEMM
(`(acc + bias / (x_scale * w_scale)) * (x_scale * w_scale / out_scale)`, in float32,
rounded half to even, clamped; fused ReLU clamps at the zero point).
"""

from __future__ import annotations

from typing import Any

import ember
from ember.ao.qparams import choose_qparams
from ember.core.tensor import Tensor
from ember.nn import functional as F


def _centered(q: Tensor) -> Tensor:
    """`int - zero_point` of a quantized tensor, float64 (exact)."""
    ints = q.int_repr().double()
    if q.qscheme() in (ember.per_tensor_affine, ember.per_tensor_symmetric):
        return ints - q.q_zero_point()
    shape = [1] * q.ndim
    shape[q.q_per_channel_axis()] = -1
    return ints - q.q_per_channel_zero_points().double().reshape(shape)


def _weight_scales(w: Tensor) -> Tensor:
    """The weight's scales as float32, one per output channel (or one)."""
    if w.qscheme() in (ember.per_tensor_affine, ember.per_tensor_symmetric):
        return ember.tensor([w.q_scale()], dtype=ember.float32, device=w.device)
    return w.q_per_channel_scales().float()


def _check_quantized(op: str, input: Any) -> None:
    if not isinstance(input, Tensor) or not input.is_quantized:
        what = input.dtype if isinstance(input, Tensor) else type(input).__name__
        raise RuntimeError(f"{op}: expected a quantized input tensor (quantize it with a "
                           f"QuantStub or ember.quantize_per_tensor), got {what}")


def requantize(acc: Tensor, input_scale: float, weight_scales: Tensor, bias: Tensor | None,
               scale: float, zero_point: int, relu: bool = False,
               channel_dim: int = -1) -> Tensor:
    """The quint8 output of an integer accumulation `acc` (float64 of exact integers),
    as FBGEMM's `ReQuantizeOutput` with a float bias computes it."""
    shape = [1] * acc.ndim
    shape[channel_dim] = -1
    act_w = (float(ember.tensor(input_scale, dtype=ember.float32)) * weight_scales).reshape(shape)
    raw = acc.float()
    if bias is not None:
        raw = raw + bias.detach().float().reshape(shape) / act_w
    multiplier = act_w / float(ember.tensor(scale, dtype=ember.float32))
    ints = (raw * multiplier).round() + zero_point
    ints = ints.clamp(zero_point if relu else 0, 255).to(ember.uint8)
    return ember._make_per_tensor_quantized_tensor(ints, scale, zero_point)


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None, scale: float | None = None,
           zero_point: int | None = None, relu: bool = False) -> Tensor:
    r"""Quantized linear: ``input`` (quint8) times the quantized ``weight`` (qint8, per
    tensor or per output channel), plus the float ``bias``, as a quint8 tensor of the
    given ``scale`` and ``zero_point`` (the input's when not given)."""
    _check_quantized("quantized::linear", input)
    if scale is None:
        scale = input.q_scale()
    if zero_point is None:
        zero_point = input.q_zero_point()
    acc = _centered(input).matmul(_centered(weight).t())
    return requantize(acc, input.q_scale(), _weight_scales(weight), bias, scale, zero_point,
                      relu)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1,
           padding_mode: str = "zeros", scale: float = 1.0, zero_point: int = 0,
           dtype: Any = ember.quint8, relu: bool = False) -> Tensor:
    r"""Quantized 2-D convolution of a quint8 ``input`` by a qint8 ``weight`` (per tensor
    or per output channel) plus a float ``bias``; the output is quint8 with ``scale`` and
    ``zero_point``. Zero padding pads with the input's zero point (the real 0)."""
    _check_quantized("quantized::conv2d", input)
    if padding_mode != "zeros":
        raise NotImplementedError("Only zero-padding is supported!")
    if dtype is not ember.quint8:
        raise NotImplementedError("Only torch.quint8 is supported for activation tensor!")
    acc = F.conv2d(_centered(input), _centered(weight), None, stride, padding, dilation,
                   groups)
    return requantize(acc, input.q_scale(), _weight_scales(weight), bias, scale, zero_point,
                      relu, channel_dim=1)


def linear_dynamic(input: Tensor, weight: Tensor, bias: Tensor | None = None,
                   reduce_range: bool = True) -> Tensor:
    r"""Dynamically quantized linear (FBGEMM's ``quantized::linear_dynamic``): the float
    ``input`` is quantized to uint8 with a scale and zero point chosen from its own
    minimum and maximum (7 bits with ``reduce_range``), multiplied with the qint8
    ``weight`` in integers, and the float result is
    ``x_scale * w_scale * acc + bias``."""
    x = input.detach()
    if x.numel():
        low, high = ember.aminmax(x)
        x_scale, x_zero_point = choose_qparams(float(low), float(high), 0, 255,
                                               reduce_range=reduce_range)
    else:
        x_scale, x_zero_point = 1.0, 0
    xq = ember.quantize_per_tensor(x.float(), x_scale, x_zero_point, ember.quint8)
    acc = _centered(xq).matmul(_centered(weight).t())
    out = (float(ember.tensor(x_scale, dtype=ember.float32)) * _weight_scales(weight)) * \
        acc.float()
    if bias is not None:
        out = out + bias.detach()
    return out.to(input.dtype)
