"""Two of PyTorch's functions of quantized tensors: `quantize_per_tensor_dynamic` (the
scale and zero point chosen from the input's range, FBGEMM's ChooseQuantizationParams)
and `quantized_batch_norm` (batch normalization of a quantized NCHW tensor, requantized
to the given scale and zero point, as PyTorch's CPU kernel computes it).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ember.core import dtype as dt
from ember.core.creation import tensor
from ember.core.grad_mode import no_grad
from ember.core.host import dtype_arg
from ember.core.quantized import QuantizedTensor, _make, per_tensor_affine, quantize_per_tensor
from ember.core.tensor import Tensor

_SMALL_SCALE = np.float32(6.1e-5)  # FBGEMM's SMALL_SCALE_THRESHOLD


def _choose_params(low: float, high: float, qmin: int, qmax: int,
                   reduce_range: bool) -> tuple[float, int]:
    """FBGEMM's ChooseQuantizationParams (no sparsity preservation, no power-of-two
    scale): the range widened to hold 0, its scale in double precision, the zero point
    whose rounding error is smaller, nudged into [qmin, qmax]."""
    if not low <= high:
        raise RuntimeError("In ChooseQuantizationParams, min should be less than or equal to "
                           "max")
    if reduce_range:
        qmin, qmax = int(qmin / 2), int(qmax / 2)
    low, high = np.float32(min(low, 0.0)), np.float32(max(high, 0.0))
    scale = (float(high) - float(low)) / (qmax - qmin)
    if np.float32(scale) == 0 or math.isinf(np.float32(1.0) / np.float32(scale)):
        scale = 0.1
    if scale < _SMALL_SCALE:
        original = np.float32(scale)
        scale = float(_SMALL_SCALE)
        if low == 0:
            high = _SMALL_SCALE * np.float32(qmax - qmin)
        elif high == 0:
            low = -_SMALL_SCALE * np.float32(qmax - qmin)
        else:
            amplifier = _SMALL_SCALE / original
            low, high = low * amplifier, high * amplifier
    from_min = qmin - float(low) / scale
    from_max = qmax - float(high) / scale
    from_min_error = abs(qmin) - abs(float(low) / scale)
    from_max_error = abs(qmax) - abs(float(high) / scale)
    initial = from_min if from_min_error < from_max_error else from_max
    zero_point = qmin if initial < qmin else qmax if initial > qmax else int(np.rint(initial))
    return scale, zero_point


def quantize_per_tensor_dynamic(input: Any, dtype: Any, reduce_range: bool) -> Any:
    """Converts a float tensor to a quantized tensor whose scale and zero point are chosen
    from the input's range (which is widened to hold 0).

    Args:
        input (Tensor): float32 tensor (or a list of them) to quantize.
        dtype (ember.dtype): ``quint8`` or ``qint8`` (``float16``: the input cast).
        reduce_range (bool): use one bit less of the quantized range (7 bits), as
            hardware whose accumulators could overflow needs.
    """
    if isinstance(input, (list, tuple)):
        return [quantize_per_tensor_dynamic(x, dtype, reduce_range) for x in input]
    d = dtype_arg(dtype, "quantize_per_tensor_dynamic")
    if d not in (dt.qint8, dt.quint8, dt.float16):
        name = dt.SCALAR_TYPE_NAMES.get(d.name, d.name) if isinstance(d, dt.dtype) else d
        raise RuntimeError(f"dtype {name}not supported")
    if d is dt.float16:
        return input.contiguous().to(dt.float16)
    if input.numel() == 0:
        raise RuntimeError("min(): Expected reduction dim to be specified for input.numel() "
                           "== 0. Specify the reduction dim with the 'dim' argument.")
    qmin, qmax = dt.QUANTIZED_RANGE[d.name]
    with no_grad():
        low, high = float(input.detach().min()), float(input.detach().max())
    scale, zero_point = _choose_params(low, high, qmin, qmax, reduce_range)
    return quantize_per_tensor(input, scale, zero_point, d)


def quantized_batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None,
                         mean: Tensor, var: Tensor, eps: float, output_scale: float,
                         output_zero_point: int) -> Tensor:
    """Batch normalization of a quantized (N, C, ...) tensor with the given statistics,
    `(x - mean) / sqrt(var + eps) * weight + bias`, requantized with `output_scale` and
    `output_zero_point`.

    As PyTorch's kernel: per channel, `alpha = weight / sqrt(var + eps) * (input_scale /
    output_scale)` and `beta = (bias - mean * weight / sqrt(var + eps)) / output_scale`
    in float32, and `y = clamp(round(alpha * (q - input_zero_point) + beta) +
    output_zero_point)` on the integer values q.
    """
    if not isinstance(input, QuantizedTensor) or input.qscheme() is not per_tensor_affine:
        raise RuntimeError("quantized_batch_norm: expected a per-tensor affine quantized "
                           "input")
    if not 2 <= input.ndim <= 5:
        raise RuntimeError("quantized::batch_norm only support 2d, 3d, 4d or 5d inputs.")
    channels = input.shape[1]
    for name, t in (("weight", weight), ("bias", bias), ("mean", mean), ("var", var)):
        if t is not None and t.numel() != channels:
            raise RuntimeError(f"Expect {name} size to match C")

    def floats(t: Tensor | None, default: float) -> np.ndarray:
        if t is None:
            return np.full(channels, default, np.float32)
        return t.detach().to(dt.float32).cpu().numpy().reshape(-1)

    w, b = floats(weight, 1.0), floats(bias, 0.0)
    m, v = floats(mean, 0.0), floats(var, 1.0)
    inv_sigma = (1.0 / np.sqrt(v + np.float32(eps)).astype(np.float64)).astype(np.float32)
    ratio = float(input.q_scale()) / float(output_scale)
    alpha = ((inv_sigma * w).astype(np.float64) * ratio).astype(np.float32)
    beta = ((b - m * inv_sigma * w).astype(np.float64) / float(output_scale)).astype(
        np.float32)
    ints = input.int_repr()
    shape = (1, channels) + (1,) * (input.ndim - 2)
    with no_grad():
        centered = ints.to(dt.float64) - float(input.q_zero_point())
        alpha_t = tensor(alpha.astype(np.float64), device=ints.device).reshape(shape)
        beta_t = tensor(beta.astype(np.float64), device=ints.device).reshape(shape)
        # (an FMA in float32: the product and sum exact in float64, rounded once)
        y = (centered * alpha_t + beta_t).to(dt.float32).round() + int(output_zero_point)
        lo, hi = dt.QUANTIZED_RANGE[input.dtype.name]
        out = y.clamp(lo, hi).to(ints.dtype)
    return _make(out, input.dtype, per_tensor_affine, float(output_scale),
                 int(output_zero_point), None)
