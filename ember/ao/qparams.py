"""The quantization parameters FBGEMM chooses at run time (`ChooseQuantizationParams` of
PyTorch's quantized CPU kernels): for dynamic quantization's activations and the fused
moving-average fake quantization of QAT. Plain Python arithmetic on two floats, in
double precision as PyTorch's C++ does it."""

from __future__ import annotations

import math

import numpy as np

_SMALL_SCALE_THRESHOLD = 6.1e-5


def choose_qparams(min_val: float, max_val: float, qmin: int, qmax: int,
                   preserve_sparsity: bool = False,
                   reduce_range: bool = False) -> tuple[float, int]:
    """(scale, zero_point) mapping [min_val, max_val] (widened to hold 0) onto
    [qmin, qmax]; `preserve_sparsity` makes the range symmetric around 0 (symmetric
    quantization), `reduce_range` halves the integer range."""
    if reduce_range:
        qmin, qmax = qmin // 2, qmax // 2
    min_val, max_val = float(np.float32(min_val)), float(np.float32(max_val))
    if min_val < 0 and max_val > 0 and preserve_sparsity:
        symmetric_qmin = -((qmax - qmin) // 2 + 1)
        symmetric_qmax = (qmax - qmin) // 2
        max_scale = max(abs(min_val / symmetric_qmin), abs(max_val / symmetric_qmax))
        min_val, max_val = max_scale * symmetric_qmin, max_scale * symmetric_qmax
    min_val, max_val = min(min_val, 0.0), max(max_val, 0.0)
    scale = (max_val - min_val) / (qmax - qmin)
    if float(np.float32(scale)) == 0.0 or math.isinf(1.0 / float(np.float32(scale))):
        scale = 0.1
    if scale < _SMALL_SCALE_THRESHOLD:
        org_scale = scale
        scale = _SMALL_SCALE_THRESHOLD
        if min_val == 0.0:
            max_val = _SMALL_SCALE_THRESHOLD * (qmax - qmin)
        elif max_val == 0.0:
            min_val = -_SMALL_SCALE_THRESHOLD * (qmax - qmin)
        else:
            amplifier = _SMALL_SCALE_THRESHOLD / org_scale
            min_val, max_val = min_val * amplifier, max_val * amplifier
    zero_point_from_min = qmin - min_val / scale
    zero_point_from_max = qmax - max_val / scale
    zero_point_from_min_error = abs(qmin) - abs(min_val / scale)
    zero_point_from_max_error = abs(qmax) - abs(max_val / scale)
    initial = zero_point_from_min if zero_point_from_min_error < zero_point_from_max_error \
        else zero_point_from_max
    if min_val < 0 and max_val > 0 and preserve_sparsity:
        initial = (qmin + qmax) / 2
    if initial < qmin:
        zero_point = qmin
    elif initial > qmax:
        zero_point = qmax
    else:
        zero_point = int(round(initial))  # nearbyint: halves to even, as Python's round
    return float(np.float32(scale)), zero_point
