"""`ember.nn.functional`: the stateless functions behind the layers, with PyTorch's names,
signatures and defaults.

Everything here is written with ember's public Tensor ops, so it runs (and is
differentiated) on every backend. Convolutions, pooling, unfold/fold, constant padding,
`linear` and `layer_norm` are core ops (a backend may fuse them); this module only
checks and forwards their arguments. The losses are declared in core
(`ember.core.ops.losses`, each with its autocast class) and re-exported here as they are.
"""

from __future__ import annotations

import math
import numbers
import struct
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import ember
from ember import Tensor
from ember.core import backend as _contract
from ember.core import dtype as _dt
from ember.core import tracing as _tracing
from ember.core.dispatch import kernel_refuses as _kernel_refuses
from ember.core.dispatch import user_stacklevel as _user_stacklevel
from ember.core.errors import with_context
from ember.core.function import Function as _Function
from ember.core.function import as_kernel as _as_kernel
from ember.core.graph import labelled as _labelled
from ember.core.memory_format import (
    contiguous_format,
    in_format_exactly,
    like_layout,
    row_major,
    tensor_format,
)
from ember.core.ops import nn as _nnops
from ember.core.ops.losses import (  # noqa: F401 - the losses are declared in core
    _legacy_reduction,
    _logsigmoid,
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cosine_embedding_loss,
    cross_entropy,
    gaussian_nll_loss,
    hinge_embedding_loss,
    huber_loss,
    kl_div,
    l1_loss,
    margin_ranking_loss,
    mse_loss,
    multilabel_soft_margin_loss,
    nll_loss,
    poisson_nll_loss,
    smooth_l1_loss,
    soft_margin_loss,
    triplet_margin_loss,
)
from ember.core.ops.reduction import in_float32 as _in_float32_core
from ember.core.ops.shape import in_format_of, in_memory_format, in_suggested_format
from ember.core.ops.writes import write_value as _write_value
from ember.core.storage import cpp_type_name as _cpp_type_name
from ember.core.torch_function import overridable as _overridable

__all__ = [
    # linear and convolution
    "linear", "bilinear", "conv1d", "conv2d", "conv_transpose2d", "unfold", "fold",
    # pooling
    "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    # convolutions, pooling and resampling in 1 to 3 dims (nnconv)
    "conv3d", "conv_transpose1d", "conv_transpose3d", "conv_tbc", "max_pool3d",
    "max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices",
    "avg_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d",
    "adaptive_max_pool3d", "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices", "max_unpool1d",
    "max_unpool2d", "max_unpool3d", "lp_pool1d", "lp_pool2d", "lp_pool3d",
    "fractional_max_pool2d", "fractional_max_pool3d", "fractional_max_pool2d_with_indices",
    "fractional_max_pool3d_with_indices", "grid_sample", "affine_grid",
    # padding and shape
    "pad", "interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "pixel_shuffle",
    "pixel_unshuffle", "one_hot",
    # normalisation
    "batch_norm", "instance_norm", "layer_norm", "group_norm", "rms_norm", "normalize",
    # dropout and embedding
    "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "embedding",
    # activations
    "relu", "relu_", "relu6", "leaky_relu", "leaky_relu_", "elu", "elu_", "selu", "selu_",
    "celu", "celu_",
    "gelu", "silu", "mish", "sigmoid", "tanh", "hardtanh", "hardtanh_", "hardsigmoid",
    "hardswish", "logsigmoid", "softplus", "softsign", "softshrink", "hardshrink",
    "tanhshrink", "threshold", "threshold_", "glu", "prelu", "softmax", "softmin",
    "log_softmax",
    # distances
    "cosine_similarity", "pairwise_distance",
    # attention
    "scaled_dot_product_attention",
    # losses
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "cross_entropy", "nll_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
    "soft_margin_loss", "margin_ranking_loss", "hinge_embedding_loss",
    "cosine_embedding_loss", "poisson_nll_loss", "gaussian_nll_loss",
    "triplet_margin_loss", "multilabel_soft_margin_loss",
]


# -- helpers --------------------------------------------------------------------------



# Input checks read values on the host; they are not part of the computation, so a trace
# (ember.jit) must neither record them nor warn about them.
_checking = _tracing.paused

def _pair(v: Any, n: int = 2) -> tuple:
    if isinstance(v, (tuple, list)):
        return tuple(v)
    return (v,) * n


def _inplace_apply(input: Tensor, fn: Any) -> Tensor:
    """Write `fn(input)` into `input`. When autograd records, `fn` runs on a clone so the
    tensors it saves for backward are not the ones the write changes."""
    src = input.clone() if (ember.is_grad_enabled() and input.requires_grad) else input
    return _write_value(input, fn(src))


def _channel_shape(input: Tensor) -> tuple:
    """Shape that broadcasts a per-channel (dim 1) vector against `input`."""
    return (1, input.shape[1]) + (1,) * (input.ndim - 2)


# -- linear and convolution -----------------------------------------------------------


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    r"""Apply an affine map: :math:`y = xA^T + b`.

    Shapes: input ``(*, in_features)``, weight ``(out_features, in_features)`` or
    ``(in_features,)``, bias ``(out_features,)`` or ``()``; output ``(*, out_features)``.
    """
    return _nnops.linear(input, weight, bias)


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor,
             bias: Tensor | None = None) -> Tensor:
    r"""Apply a bilinear map: :math:`y = x_1^T A x_2 + b`.

    Shapes: input1 ``(*, in1)``, input2 ``(*, in2)``, weight ``(out, in1, in2)``,
    bias ``(out,)``; output ``(*, out)``.
    """
    # PyTorch's checks, in its order and words
    if input1.ndim != input2.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.ndim} and "
                           f"{input2.ndim}")
    if input1.ndim == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    for i in range(input1.ndim - 1):
        if input1.shape[i] != input2.shape[i]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: "
                               f"got {input1.shape[i]} and {input2.shape[i]}")
    if input1.shape[-1] != weight.shape[1]:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got "
                           f"{input1.shape[-1]} but expected {weight.shape[1]}")
    if input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got "
                           f"{input2.shape[-1]} but expected {weight.shape[2]}")
    if bias is not None and bias.shape[0] != weight.shape[0]:
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got "
                           f"{bias.shape[0]} but expected {weight.shape[0]}")
    lead = tuple(input1.shape[:-1])
    x1 = input1.reshape(-1, input1.shape[-1])
    x2 = input2.reshape(-1, input2.shape[-1])
    out = ember.einsum("bi,oij,bj->bo", x1, weight, x2)
    if bias is not None:
        out = out + bias
    return out.reshape(*lead, weight.shape[0])


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    r"""1-D convolution (cross-correlation) over ``(N, C_in, L)`` or ``(C_in, L)`` input.

    ``padding`` is an int, a 1-tuple, ``'valid'`` or ``'same'``.
    """
    return ember.conv1d(input, weight, bias, stride, padding, dilation, groups)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    r"""2-D convolution (cross-correlation) over ``(N, C_in, H, W)`` or ``(C_in, H, W)``.

    ``padding`` is an int, a pair, ``'valid'`` or ``'same'``.
    """
    return ember.conv2d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: Any = 1, padding: Any = 0, output_padding: Any = 0,
                     groups: int = 1, dilation: Any = 1) -> Tensor:
    r"""2-D transposed convolution ("deconvolution"); weight ``(C_in, C_out/groups, kH,
    kW)``."""
    return ember.conv_transpose2d(input, weight, bias, stride, padding, output_padding,
                                  groups, dilation)


_WINDOW_CHECKS = {
    "kernel": ("kernel size should be greater than zero, but got kernel_height: {} "
               "kernel_width: {}", 1),
    "stride": ("stride should be greater than zero, but got stride_height: {} stride_width: {}",
               1),
    "dilation": ("dilation should be greater than zero, but got dilation_height: {} "
                 "dilation_width: {}", 1),
    "padding": ("padding should be non-negative, but got pad_height: {} pad_width: {}", 0),
}


def _check_window(order: Sequence[str], **values: tuple[int, int]) -> None:
    """ATen's im2col/col2im checks of the window's (height, width) pairs, in its order."""
    for name in order:
        message, least = _WINDOW_CHECKS[name]
        if min(values[name]) < least:
            raise RuntimeError(message.format(*values[name]))


def _size_at(input: Tensor, dim: int) -> int:
    """`input.size(dim)` as ATen's shape checks read it: out of range raises IndexError."""
    if dim >= input.ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-input.ndim}, "
                         f"{input.ndim - 1}], but got {dim})")
    return input.shape[dim]


def _refuse_integral(input: Tensor, kernel: str) -> None:
    """PyTorch's CPU `kernel` refusing an integer dtype (it takes floating, complex and
    bool tensors)."""
    d = input.dtype
    if not (d.is_floating_point or d.is_complex or d == ember.bool):
        raise _kernel_refuses(kernel, d)


def unfold(input: Tensor, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
           stride: Any = 1) -> Tensor:
    r"""Extract sliding local blocks: ``(N, C, H, W) -> (N, C*kH*kW, L)`` (im2col); an
    unbatched ``(C, H, W)`` gives ``(C*kH*kW, L)``."""
    kernel, dil, pad, step = (_pair(v) for v in (kernel_size, dilation, padding, stride))
    _check_window(("kernel", "dilation", "padding", "stride"), kernel=kernel, dilation=dil,
                  padding=pad, stride=step)
    valid = _size_at(input, 1) != 0 and _size_at(input, 2) != 0
    if not ((input.ndim == 3 and input.shape[0] != 0 and valid) or
            (input.ndim == 4 and valid and input.shape[3] != 0)):
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with possibly 0 batch size "
                           "and other non-zero dimensions for input, but got: "
                           f"{list(input.shape)}")
    size = tuple(input.shape[-2:])
    blocks = [(size[i] + 2 * pad[i] - (dil[i] * (kernel[i] - 1) + 1)) // step[i] + 1
              for i in range(2)]
    if min(blocks) < 1:
        raise RuntimeError(f"Given input with spatial size {size}, kernel_size={kernel}, "
                           f"dilation={dil}, padding={pad}, calculated shape of the array of "
                           f"sliding blocks as {tuple(blocks)}, but its components must be "
                           "at least one.")
    _refuse_integral(input, "im2col_out_cpu")
    batched = input if input.ndim == 4 else input.unsqueeze(0)
    out = _nnops.im2col(batched, kernel, dil, pad, step)
    return out if input.ndim == 4 else out.squeeze(0)


def fold(input: Tensor, output_size: Any, kernel_size: Any, dilation: Any = 1,
         padding: Any = 0, stride: Any = 1) -> Tensor:
    r"""Sum sliding local blocks into a tensor: ``(N, C*kH*kW, L) -> (N, C, H, W)``
    (col2im, the adjoint of :func:`unfold`); an unbatched ``(C*kH*kW, L)`` gives
    ``(C, H, W)``."""
    size, kernel, dil, pad, step = (_pair(v) for v in (output_size, kernel_size, dilation,
                                                       padding, stride))
    _check_window(("kernel", "stride", "dilation", "padding"), kernel=kernel, stride=step,
                  dilation=dil, padding=pad)
    shape = tuple(input.shape)
    if not ((len(shape) == 2 and shape[0] != 0 and shape[1] != 0) or
            (len(shape) == 3 and shape[1] != 0 and shape[2] != 0)):
        raise RuntimeError("Expected 2D or 3D (batch mode) tensor for input with possibly 0 "
                           f"batch size and non-zero dimensions for input, but got: {list(shape)}")
    planes, length = shape[-2], shape[-1]
    if planes % (kernel[0] * kernel[1]):
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the "
                           f"product of kernel_size, but got input.size(1)={planes} and "
                           f"kernel_size={kernel}.")
    blocks = [(size[i] + 2 * pad[i] - dil[i] * (kernel[i] - 1) - 1) // step[i] + 1
              for i in range(2)]
    given = (f"Given output_size={size}, kernel_size={kernel}, dilation={dil}, "
             f"padding={pad}, stride={step}, ")
    if length != blocks[0] * blocks[1]:
        raise RuntimeError(f"{given}expected size of input's dimension 2 to match the "
                           f"calculated number of sliding blocks {blocks[0]} * {blocks[1]} = "
                           f"{blocks[0] * blocks[1]}, but got input.size(2)={length}.")
    if min(blocks) < 1:
        raise RuntimeError(f"{given}calculated shape of the array of sliding blocks as "
                           f"{tuple(blocks)}, which is too small (non-positive)")
    _refuse_integral(input, "col2im_out_cpu")
    batched = input if len(shape) == 3 else input.unsqueeze(0)
    out = _nnops.col2im(batched, size, kernel, dil, pad, step)
    return out if len(shape) == 3 else out.squeeze(0)


# -- pooling --------------------------------------------------------------------------


def max_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Any:
    r"""1-D max pooling; with ``return_indices`` also the argmax positions."""
    return ember.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode,
                            return_indices)


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Any:
    r"""2-D max pooling; with ``return_indices`` also the argmax positions (flat over
    each H*W plane, as torch returns them)."""
    return ember.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode,
                            return_indices)


def avg_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    r"""1-D average pooling."""
    return ember.avg_pool1d(input, kernel_size, stride, padding, ceil_mode,
                            count_include_pad)


def avg_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    r"""2-D average pooling."""
    return _nnops.avg_pool2d(input, kernel_size, stride, padding, ceil_mode,
                            count_include_pad, divisor_override)


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    r"""2-D average pooling to a fixed output size (``None`` keeps that input size)."""
    return _nnops.adaptive_avg_pool2d(input, output_size)


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    r"""1-D average pooling to a fixed output length."""
    return ember.adaptive_avg_pool1d(input, output_size)


# -- padding and reshaping ------------------------------------------------------------


def _pad_indices(n: int, left: int, right: int, mode: str, dim: int, input: Tensor) -> list:
    idx = range(-left, n + right)
    if mode == "replicate":
        return [min(max(i, 0), n - 1) for i in idx]
    if mode == "reflect":
        if left >= n or right >= n:
            # (ATen names the width's check argument #4, the height's #6, the depth's #8)
            raise RuntimeError(f"Argument #{2 * (input.ndim - dim) + 2}: Padding size should "
                               f"be less than the corresponding input dimension, but got: "
                               f"padding ({left}, {right}) at dimension {dim} of input "
                               f"{list(input.shape)}")
        return [-i if i < 0 else (2 * (n - 1) - i if i >= n else i) for i in idx]
    if mode == "circular":
        if left > n or right > n:
            raise RuntimeError("Padding value causes wrapping around more than once.")
        # a negative side crops first; the wrap is of what remains, as PyTorch's
        crop_left, crop_right = max(-left, 0), max(-right, 0)
        kept = n - crop_left - crop_right
        return [crop_left + i % kept for i in range(-max(left, 0), kept + max(right, 0))]
    raise NotImplementedError(f"Unrecognised padding mode {mode}")


def _float32_under_cpu_autocast(mode: str, n_pad: int, input: Tensor) -> bool:
    """Whether PyTorch's CPU autocast runs this padding in float32: reflection_pad1d/2d and
    replication_pad1d/2d/3d are on its float32 list (reflection_pad3d is not)."""
    listed = mode == "replicate" or (mode == "reflect" and n_pad < 3)
    return listed and input.device.type == "cpu" and input.dtype in (ember.float16,
                                                                      ember.bfloat16) \
        and ember.is_autocast_enabled("cpu")


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant",
        value: float | None = None) -> Tensor:
    r"""Pad the last ``len(pad) // 2`` dimensions of ``input``.

    ``pad`` lists (left, right) pairs starting from the last dimension:
    ``(left_W, right_W, top_H, bottom_H, ...)``.

    Args:
        mode (str): ``'constant'``, ``'reflect'``, ``'replicate'`` or ``'circular'``.
        value (float): the fill value of ``'constant'`` padding (default 0).
    """
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2 != 0:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.ndim:
        raise RuntimeError("Padding length should be less than or equal to two times the "
                           "input dimension but got padding length "
                           f"{len(pad)} and input of dimension {input.ndim}")
    if mode == "constant":
        return ember.constant_pad_nd(input, pad, 0.0 if value is None else value)
    if value is not None and value != 0:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    n_pad = len(pad) // 2
    if n_pad not in (1, 2, 3) or input.ndim not in (n_pad + 1, n_pad + 2):
        # torch's rule: padding k trailing dims needs a (k+1)- or (k+2)-D input
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {input.ndim}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    if _float32_under_cpu_autocast(mode, n_pad, input):
        input = input.float()
    features = input.shape[1:] if input.ndim == n_pad + 2 else input.shape
    if mode != "circular" and not all(features):  # (circular pads an empty dim's cats)
        raise RuntimeError(f"Expected {n_pad + 1}D or {n_pad + 2}D (batch mode) tensor with "
                           "possibly 0 batch size and other non-zero dimensions for input, but "
                           f"got: {list(input.shape)}")
    out = input
    for i in range(len(pad) // 2):
        dim = input.ndim - 1 - i
        left, right = pad[2 * i], pad[2 * i + 1]
        if left == 0 and right == 0:
            continue
        # (a negative side crops: reflection and replication read the uncropped input)
        idx = _pad_indices(input.shape[dim], left, right, mode, dim, input)
        out = ember.index_select(out, dim, ember.tensor(idx, dtype=ember.int64,
                                                        device=input.device))
    # (PyTorch's reflection and replication kernels keep a channels-last input's format;
    # its circular padding is made of cats, as here)
    return out if mode == "circular" else in_format_of(out, input)


def _interp_source(out_size: int, in_size: int, scale: float | None, align_corners: bool,
                   mode: str) -> tuple[list[int], list[int], list[float]]:
    """For each output position along one dimension: the two source indices and the
    weight of the second, with torch's coordinate conventions."""
    if mode in ("nearest", "nearest-exact"):
        ratio = (1.0 / scale) if scale else in_size / out_size
        shift = 0.5 if mode == "nearest-exact" else 0.0
        idx = [min(int(math.floor((i + shift) * ratio)), in_size - 1) for i in range(out_size)]
        return idx, idx, [0.0] * out_size
    src = _source_coords(out_size, in_size, scale, align_corners, cubic=False)
    lo = [min(int(math.floor(s)), in_size - 1) for s in src]
    hi = [min(i + 1, in_size - 1) for i in lo]
    return lo, hi, [s - i for s, i in zip(src, lo)]


def _source_coords(out_size: int, in_size: int, scale: float | None, align_corners: bool,
                   cubic: bool) -> list[float]:
    """The source coordinate of each output position (PyTorch's
    area_pixel_compute_source_index: only the linear modes clamp it at 0)."""
    if align_corners:
        ratio = (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
        return [i * ratio for i in range(out_size)]
    ratio = (1.0 / scale) if scale else in_size / out_size
    src = [(i + 0.5) * ratio - 0.5 for i in range(out_size)]
    return src if cubic else [max(x, 0.0) for x in src]


_CUBIC_A = -0.75  # PyTorch's (and OpenCV's) cubic convolution coefficient


def _cubic_taps(out_size: int, in_size: int, scale: float | None,
                align_corners: bool) -> tuple[list[list[int]], list[list[float]]]:
    """For each of the 4 taps of bicubic interpolation along one dimension: the source
    index of every output position (clamped to the border, as PyTorch's) and its weight."""
    a = _CUBIC_A
    near = lambda x: ((a + 2) * x - (a + 3)) * x * x + 1  # |x| <= 1
    far = lambda x: ((a * x - 5 * a) * x + 8 * a) * x - 4 * a  # 1 < |x| < 2
    idx: list[list[int]] = [[], [], [], []]
    wts: list[list[float]] = [[], [], [], []]
    for x in _source_coords(out_size, in_size, scale, align_corners, cubic=True):
        base = math.floor(x)
        t = x - base
        for k, w in enumerate((far(t + 1), near(t), near(1 - t), far(2 - t))):
            idx[k].append(min(max(base - 1 + k, 0), in_size - 1))
            wts[k].append(w)
    return idx, wts


def _check_spatial_count(in_sizes: list, size: Any, scale_factor: Any) -> None:
    """PyTorch's refusal of a size or scale_factor sequence of the wrong length, printed
    as the caller gave it."""
    for given, what, form in ((size, "output size of", "output size in (o1, o2, ...,oK)"),
                              (scale_factor, "scale_factor of shape",
                               "scale_factor in (s1, s2, ...,sK)")):
        if isinstance(given, (list, tuple)) and len(given) != len(in_sizes):
            name = "output" if given is size else "scale_factor"
            raise ValueError(f"Input and {name} must have the same number of spatial "
                             f"dimensions, but got input with spatial dimensions of "
                             f"{in_sizes} and {what} {given}. Please provide input tensor in "
                             f"(N, C, d1, d2, ...,dK) format and {form} format.")


def _check_resampled_sizes(in_sizes: list[int], out_sizes: list[int]) -> None:
    """PyTorch's upsampling kernels' refusal of an empty input or output (a scale_factor
    or size that gives no elements)."""
    if min(in_sizes) > 0 and min(out_sizes) > 0:
        return
    names = ("D", "H", "W")[-len(in_sizes):]
    shown = [", ".join(f"{n}: {v}" for n, v in zip(names, sizes))
             for sizes in (in_sizes, out_sizes)]
    joint = " and output" if len(in_sizes) == 1 else " output"  # (its 1-d check's words)
    raise RuntimeError(f"Input and output sizes should be greater than 0, but got input "
                       f"({shown[0]}){joint} ({shown[1]})")


_MODE_DIMS = {"nearest": (3, 4, 5), "nearest-exact": (3, 4, 5), "area": (3, 4, 5),
              "linear": (3,), "bilinear": (4,), "bicubic": (4,), "trilinear": (5,),
              "lanczos": (4,)}


def _check_interpolate_mode(ndim: int, mode: str) -> None:
    """PyTorch's refusal of a mode its input's rank cannot take (or of an unknown mode)."""
    if ndim in _MODE_DIMS.get(mode, ()):
        return
    needs = {"linear": 3, "bilinear": 4, "trilinear": 5}
    if mode in needs and ndim in (3, 4, 5):
        raise NotImplementedError(f"Got {ndim}D input, but {mode} mode needs {needs[mode]}D "
                                  "input")
    raise NotImplementedError(
        f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {ndim}D) for the "
        f"modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
        f"nearest-exact (got {mode})")


def interpolate(input: Tensor, size: Any = None, scale_factor: Any = None,
                mode: str = "nearest", align_corners: bool | None = None,
                recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    r"""Resize the spatial dimensions (all after the first two) of ``input``.

    Args:
        size: the output spatial size (an int or one per dimension).
        scale_factor: multiplier of the spatial size (instead of ``size``).
        mode: ``'nearest'``, ``'nearest-exact'``, ``'linear'`` (3-D input),
            ``'bilinear'``, ``'bicubic'`` or ``'lanczos'`` (4-D; Lanczos-3, with
            ``antialias=True`` only), ``'trilinear'`` (5-D) or ``'area'``.
        align_corners: for the linear modes, align the corner pixels' centres.
        recompute_scale_factor: compute the coordinate scale from the output size
            instead of using ``scale_factor`` directly.
        antialias: low-pass filter while downsampling (``'bilinear'``, ``'bicubic'``
            and ``'lanczos'`` on 4-D input), as PIL's resize.
    """
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating "
                             "modes: linear | bilinear | bicubic | trilinear")
    if (size is None) == (scale_factor is None):
        raise ValueError("either size or scale_factor should be defined" if size is None
                         else "only one of size or scale_factor should be defined")
    spatial = input.ndim - 2
    _check_spatial_count(list(input.shape[2:]), size, scale_factor)
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and input.ndim == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos "
                         "modes and requires a 4-D tensor as input")
    _check_interpolate_mode(input.ndim, mode)
    if mode == "lanczos":
        if align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        if not antialias:
            raise ValueError("Lanczos mode requires antialias=True")
    in_sizes = list(input.shape[2:])
    if size is not None:
        out_sizes = [int(s) for s in _pair(size, spatial)]
        scales: list = [None] * spatial
    else:
        factors = [float(f) for f in _pair(scale_factor, spatial)]
        out_sizes = [int(math.floor(n * f)) for n, f in zip(in_sizes, factors)]
        scales = [None] * spatial if recompute_scale_factor else factors
    if mode != "area":  # (adaptive pooling's own checks)
        _check_resampled_sizes(in_sizes, out_sizes)
    _refuse_interpolate_dtype(input, mode, antialias)
    if mode == "area":
        if spatial == 2:
            return _nnops.adaptive_avg_pool2d(input, tuple(out_sizes))
        if spatial == 1:
            return adaptive_avg_pool1d(input, out_sizes[0])
        return _nnops.adaptive_avg_pool3d(input, tuple(out_sizes))
    if input.dtype == ember.uint8 and mode in ("bilinear", "bicubic", "lanczos"):
        return _nnops.kept_format(input, _uint8_resampled(input, out_sizes, scales,
                                                          bool(align_corners), mode, antialias))
    if antialias:
        return _nnops.kept_format(input, _antialiased(input, out_sizes, scales,
                                                      bool(align_corners), mode))
    if input.dtype in _HALF_FLOATS and mode == "bicubic":
        # PyTorch's CPU kernel: the taps' weights in the input's dtype, the sums in float32
        # ("opmath"), rounded once
        return _nnops.kept_format(input, _in_float32(input, lambda x: _bicubic(
            x, out_sizes, scales, bool(align_corners), weights_dtype=input.dtype)))
    if input.dtype in _HALF_FLOATS and not mode.startswith("nearest"):
        # PyTorch's CPU kernels interpolate in float32 ("opmath") and round once
        return _in_float32(input, lambda x: interpolate(
            x, out_sizes if size is not None else None,
            scale_factor if size is None else None, mode, align_corners,
            recompute_scale_factor, antialias))
    if mode == "bicubic":
        return _nnops.kept_format(input, _bicubic(input, out_sizes, scales,
                                                  bool(align_corners)))
    out = input
    # (the last dim first: ATen's nested loops interpolate it innermost)
    for d in reversed(range(spatial)):
        dim = 2 + d
        if mode.startswith("nearest"):
            lo, _, _ = _interp_source(out_sizes[d], in_sizes[d], scales[d],
                                      bool(align_corners), mode)
            out = ember.index_select(out, dim, ember.tensor(lo, device=input.device))
            continue
        lo, hi, w = _linear_taps(out_sizes[d], in_sizes[d], scales[d], bool(align_corners),
                                 input.dtype is ember.float64)
        a = ember.index_select(out, dim, ember.tensor(lo, device=input.device))
        b = ember.index_select(out, dim, ember.tensor(hi, device=input.device))
        shape = [1] * input.ndim
        shape[dim] = out_sizes[d]
        w0, w1 = (ember.tensor(v, dtype=input.dtype, device=input.device).reshape(shape)
                  for v in zip(*w))
        if input.dtype is ember.float32:  # ATen's fma(t0, w0, t1 * w1), rounded once
            out = (a.double() * w0.double() + (b * w1).double()).float()
        else:
            out = a * w0 + b * w1
    return _nnops.kept_format(input, out)  # (PyTorch's upsampling keeps channels_last)


def _f32(v: float) -> float:
    """`v` rounded to float32."""
    return struct.unpack("f", struct.pack("f", v))[0]


def _linear_taps(out_size: int, in_size: int, scale: float | None, align_corners: bool,
                 double: bool) -> tuple[list[int], list[int], list[tuple[float, float]]]:
    """For each output position along one dimension: the two source indices and their
    weights, computed as ATen's linear upsampling computes them, in its opmath type
    (float32, or float64 for double input): `area_pixel_compute_scale`, then
    `compute_source_index_and_lambda`."""
    r = (lambda v: v) if double else _f32
    if align_corners:
        ratio = r(r(in_size - 1) / r(out_size - 1)) if out_size > 1 else 0.0
    else:
        ratio = r(1.0 / scale) if scale else r(r(in_size) / r(out_size))
    lo, hi, weights = [], [], []
    for j in range(out_size):
        real = r(ratio * j) if align_corners else \
            max(r(r(ratio * r(j + 0.5)) - 0.5), 0.0)
        i0 = min(int(math.floor(real)), in_size - 1)
        lam = min(max(r(real - i0), 0.0), 1.0)
        lo.append(i0)
        hi.append(i0 + (1 if i0 < in_size - 1 else 0))
        weights.append((r(1.0 - lam), lam))
    return lo, hi, weights


def _refuse_interpolate_dtype(input: Tensor, mode: str, antialias: bool) -> None:
    """PyTorch's CPU kernels' refusal of a dtype they lack, named by the kernel that
    refuses it: resampling takes float32 and float64, the other floating dtypes unless
    antialiased, and uint8 for nearest and the 2-D modes (area pooling refuses its own)."""
    d = input.dtype
    if mode == "area" or d in (ember.float32, ember.float64) or (
            d.is_floating_point and not antialias):
        return
    nearest = mode.startswith("nearest")
    if d == ember.uint8 and (nearest or input.ndim == 4):  # (bilinear, bicubic, lanczos)
        return
    if antialias:
        kernel = "compute_index_ranges_weights"
    elif input.ndim == 4 and mode != "bicubic":
        kernel = f"upsample_{'nearest' if nearest else 'bilinear'}2d_channels_last"
    else:
        kernel = "compute_indices_weights_" + ("nearest" if nearest else
                                               "cubic" if mode == "bicubic" else "linear")
    raise _kernel_refuses(kernel, d)


def _bicubic(input: Tensor, out_sizes: list[int], scales: list, align_corners: bool,
             weights_dtype: Any = None) -> Tensor:
    """Separable bicubic resampling: along the width, then the height (PyTorch's order),
    each output the sum of 4 weighted taps in tap order (the weights rounded to
    `weights_dtype` where given)."""
    out = input
    for d in (1, 0):
        dim = 2 + d
        idx, wts = _cubic_taps(out_sizes[d], input.shape[dim], scales[d], align_corners)
        shape = [1] * input.ndim
        shape[dim] = out_sizes[d]
        total = None
        for i, w in zip(idx, wts):
            weight = ember.tensor(w, dtype=weights_dtype or input.dtype, device=input.device)
            tap = ember.index_select(out, dim, ember.tensor(i, device=input.device)) * \
                weight.to(input.dtype).reshape(shape)
            total = tap if total is None else total + tap
        out = total
    return out


def _sinc(x: float) -> float:
    return 1.0 if x == 0.0 else math.sin(math.pi * x) / (math.pi * x)


# half the width of each antialiasing filter, in source pixels at scale 1
_AA_HALF_WIDTH = {"bilinear": 1.0, "bicubic": 2.0, "lanczos": 3.0}


def _aa_filter(x: float, mode: str) -> float:
    """ATen's antialiasing filters: the triangle (bilinear), Keys' cubic with a = -0.5,
    PIL's (bicubic), and the Lanczos-3 window sinc(x) sinc(x / 3)."""
    x = abs(x)
    if mode == "bilinear":
        return 1.0 - x if x < 1.0 else 0.0
    if mode == "lanczos":
        return _sinc(x) * _sinc(x / 3.0) if x < 3.0 else 0.0
    a = -0.5
    if x < 1.0:
        return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
    return (((x - 5.0) * x + 8.0) * x - 4.0) * a if x < 2.0 else 0.0


def _aa_weights(out_size: int, in_size: int, scale: float | None, align_corners: bool,
                mode: str) -> list[list[float]]:
    """The `(out_size, in_size)` matrix of antialiased resampling along one dimension, as
    ATen's _compute_weights_aa: each output's window of `support` source pixels around its
    centre, the filter stretched by the downscaling factor, its weights normalised."""
    if align_corners:
        ratio = (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    else:
        ratio = 1.0 / scale if scale else in_size / out_size
    half = _AA_HALF_WIDTH[mode]  # interp_size / 2
    support = half * ratio if ratio >= 1.0 else half
    invscale = 1.0 / ratio if ratio >= 1.0 else 1.0
    weights = []
    for i in range(out_size):
        center = ratio * (i + 0.5)
        lo = max(int(center - support + 0.5), 0)
        hi = min(int(center + support + 0.5), in_size)
        w = [_aa_filter((j - center + 0.5) * invscale, mode) for j in range(lo, hi)]
        total = sum(w)
        if total != 0.0:
            w = [v / total for v in w]
        weights.append([0.0] * lo + w + [0.0] * (in_size - hi))
    return weights


def _antialiased(input: Tensor, out_sizes: list[int], scales: list, align_corners: bool,
                 mode: str) -> Tensor:
    """interpolate(antialias=True): separable resampling by a weight matrix along the width,
    then the height (ATen's order), a dimension whose size is kept left as it is."""
    out = input
    for d in (1, 0):
        dim = 2 + d
        if out_sizes[d] == input.shape[dim]:
            continue
        w = _aa_weights(out_sizes[d], input.shape[dim], scales[d], align_corners, mode)
        wt = ember.tensor(w, dtype=input.dtype, device=input.device)
        out = ember.matmul(out.movedim(dim, -1), wt.t()).movedim(-1, dim)
    # ATen writes its result row-major (the height's pass leaves a transposed view here)
    return in_memory_format(out, ember.contiguous_format)


def _plain_weights(out_size: int, in_size: int, scale: float | None, align_corners: bool,
                   mode: str) -> list[list[float]]:
    """The `(out_size, in_size)` matrix of bilinear or bicubic interpolation (no
    antialiasing) along one dimension: each output's taps, those clamped to the border
    adding up on it."""
    if mode == "bicubic":
        idx, wts = _cubic_taps(out_size, in_size, scale, align_corners)
        taps = [list(zip(i, w)) for i, w in zip(zip(*idx), zip(*wts))]
    else:
        lo, hi, w = _interp_source(out_size, in_size, scale, align_corners, mode)
        taps = [((a, 1.0 - t), (b, t)) for a, b, t in zip(lo, hi, w)]
    rows = []
    for row_taps in taps:
        row = [0.0] * in_size
        for j, w in row_taps:
            row[j] += w
        rows.append(row)
    return rows


def _fixed_point(weights: list[list[float]]) -> tuple[list[list[int]], int]:
    """`weights` as ATen's uint8 kernels hold them: integers scaled by 2**precision, the
    largest precision (below 22) at which twice the largest weight stays an int16, each
    rounded half away from zero."""
    top = max(max(row) for row in weights)
    precision = 0
    while precision < 22 and int(0.5 + top * (1 << (precision + 1))) < (1 << 15):
        precision += 1
    unit = 1 << precision
    return [[int(v * unit - 0.5) if v < 0 else int(v * unit + 0.5) for v in row]
            for row in weights], precision


def _uint8_resampled(input: Tensor, out_sizes: list[int], scales: list, align_corners: bool,
                     mode: str, antialias: bool) -> Tensor:
    """bilinear/bicubic/lanczos interpolation of a uint8 image as ATen computes it: separable
    passes along the width, then the height (a kept size skipped), each a fixed-point sum
    with int16 weights, rounded and clamped back to uint8 before the next pass."""
    weights_of = _aa_weights if antialias else _plain_weights
    out = input
    for d in (1, 0):
        dim = 2 + d
        if out_sizes[d] == input.shape[dim]:
            continue
        fixed, precision = _fixed_point(weights_of(out_sizes[d], input.shape[dim], scales[d],
                                                   align_corners, mode))
        wt = ember.tensor(fixed, dtype=ember.int64, device=input.device)
        acc = ember.matmul(out.movedim(dim, -1).to(ember.int64), wt.t())
        acc = (acc + (1 << (precision - 1))) >> precision
        out = acc.clamp(0, 255).to(ember.uint8).movedim(-1, dim)
    return in_memory_format(out, ember.contiguous_format)


def upsample(input: Tensor, size: Any = None, scale_factor: Any = None,
             mode: str = "nearest", align_corners: bool | None = None) -> Tensor:
    r"""Deprecated alias of :func:`interpolate` (warns as PyTorch does)."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", stacklevel=_user_stacklevel())
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    r"""Deprecated: :func:`interpolate` with ``mode='nearest'`` (warns as PyTorch does)."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=_user_stacklevel())
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    r"""Deprecated: :func:`interpolate` with ``mode='bilinear', align_corners=True`` (warns
    as PyTorch does)."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=_user_stacklevel())
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def _pixel_shuffle_check(op: str, input: Tensor, factor: Any, what: str) -> int:
    """pixel_shuffle / pixel_unshuffle's checks of their factor and input rank, as ATen's."""
    if isinstance(factor, bool) or not isinstance(factor, int):
        raise TypeError(f"{op}(): argument '{what}' (position 2) must be int, not "
                        f"{type(factor).__name__}")
    if input.dim() < 3:
        raise RuntimeError(f"{op} expects input to have at least 3 dimensions, but got input "
                           f"with {input.dim()} dimension(s)")
    if factor <= 0:
        raise RuntimeError(f"{op} expects a positive {what}, but got {factor}")
    return factor


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    r"""Rearrange ``(*, C*r^2, H, W)`` into ``(*, C, H*r, W*r)``."""
    r = _pixel_shuffle_check("pixel_shuffle", input, upscale_factor, "upscale_factor")
    *lead, c, h, w = input.shape
    if c % (r * r) != 0:
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c} "
                           f"is not divisible by {r * r}")
    n = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return _shuffled(input, x.reshape(*lead, c // (r * r), h * r, w * r))


def _shuffled(input: Tensor, out: Tensor) -> Tensor:
    """pixel_(un)shuffle's result as PyTorch lays it out: in the memory format `input`
    suggests (channels_last stays channels_last), row-major otherwise."""
    return _nnops.kept_format(input, out.contiguous())


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    r"""Rearrange ``(*, C, H*r, W*r)`` into ``(*, C*r^2, H, W)``."""
    r = _pixel_shuffle_check("pixel_unshuffle", input, downscale_factor, "downscale_factor")
    *lead, c, h, w = input.shape
    for side, size, dim in (("height", h, -2), ("width", w, -1)):
        if size % r != 0:
            raise RuntimeError(f"pixel_unshuffle expects {side} to be divisible by "
                               f"downscale_factor, but input.size({dim})={size} is not "
                               f"divisible by {r}")
    n = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return _shuffled(input, x.reshape(*lead, c * r * r, h // r, w // r))


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    r"""``(*)`` class indices -> ``(*, num_classes)`` int64 one-hot vectors; with
    ``num_classes=-1`` the number of classes is one more than the largest index."""
    if tensor.dtype is not ember.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if tensor.numel() > 0:
        if int(tensor.min()) < 0:
            raise RuntimeError("Class values must be non-negative.")
        top = int(tensor.max())
        if num_classes == -1:
            num_classes = top + 1
        elif top >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    elif num_classes == -1:
        raise RuntimeError("Can not infer total number of classes from empty tensor.")
    classes = ember.arange(num_classes, device=tensor.device)
    # (row-major whatever the input's layout: PyTorch scatters into new zeros)
    return (tensor.unsqueeze(-1) == classes).to(ember.int64).contiguous()


# -- normalisation --------------------------------------------------------------------


def _verify_batch_size(size: Sequence[int]) -> None:
    size_prods = size[0]
    for i in range(len(size) - 2):
        size_prods *= size[i + 2]
    if size_prods == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input "
                         f"size {size}")


def _check_channel_params(input: Tensor, c: int, **params: Tensor | None) -> None:
    """PyTorch's refusal of a per-channel parameter that is not `c` long, checked in
    its order (running_mean, running_var, weight, bias)."""
    for name, param in params.items():
        if param is not None and param.numel() != c:
            raise with_context(RuntimeError(f"{name} should contain {c} elements not "
                                            f"{param.numel()}"),
                               f"batch_norm: input of shape {tuple(input.shape)} has {c} "
                               f"channels (dim 1); {name} has shape {tuple(param.shape)}")


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    r"""Batch normalisation over dim 1 of ``(N, C)``, ``(N, C, L)`` or ``(N, C, H, W)``.

    In training (or without running statistics) the batch's statistics normalise; the
    running ones are updated in place:
    ``running = (1 - momentum) * running + momentum * batch`` (unbiased variance).
    Otherwise the running statistics normalise. A half-float input is normalised in
    float32 and the result rounded to its dtype, as PyTorch's.
    """
    if training:
        _refuse_unbatched_running_stats(input, running_mean, running_var)
    if input.dtype in _HALF_FLOATS:
        # PyTorch keeps the batch's mean and 1/std in the parameters' dtype: the input's
        # where there are none or they are half floats too (not under autocast's float32)
        stats = input.dtype if all(p is None or p.dtype == input.dtype
                                   for p in (weight, bias)) else None
        return _in_float32(input, lambda x: _batch_norm(x, running_mean, running_var, weight,
                                                        bias, training, momentum, eps, stats))
    return _batch_norm(input, running_mean, running_var, weight, bias, training, momentum,
                       eps)


def _refuse_unbatched_running_stats(input: Tensor, *running: Tensor | None) -> None:
    """Under vmap, PyTorch refuses to update running statistics that are not batched
    from an input that is (one sample's statistics cannot update them in place)."""
    batched = getattr(_tracing.active, "batched", None)  # (vmap's per-sample watch)
    if batched is None or not batched(input):
        return
    if any(t is not None and not batched(t) for t in running):
        raise RuntimeError(
            "Batch norm got a batched tensor as input while the running_mean or running_var, "
            "which will be updated in place, were not batched.\nIf you are using a module "
            "and do not need eval mode, please set `track_running_stats` to be False.If you "
            "are using a prebuilt module and do not need eval mode, please see the functorch "
            "website for resources on how to patch your module to work with vmap")


def _batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
                weight: Tensor | None, bias: Tensor | None, training: bool, momentum: float,
                eps: float, stats_dtype: Any = None) -> Tensor:
    """batch_norm's computation; `stats_dtype`: the dtype the batch's mean and 1/std are
    rounded to before they normalise (PyTorch's saved statistics of a half-float input)."""
    if training:
        _verify_batch_size(input.shape)
    if input.ndim < 2:
        raise ValueError(f"batch_norm: expected at least 2D input (got {input.ndim}D input)")
    c = input.shape[1]
    _check_channel_params(input, c, running_mean=running_mean, running_var=running_var,
                          weight=weight, bias=bias)
    shape = _channel_shape(input)
    dims = (0,) + tuple(range(2, input.ndim))
    if training or running_mean is None or running_var is None:
        mean = input.mean(dims, keepdim=True)
        centered = input - mean
        var = (centered * centered).mean(dims, keepdim=True)
        if stats_dtype is None:
            out = centered * ember.rsqrt(var + eps)
        else:
            out = (input - mean.to(stats_dtype).float()) * \
                ember.rsqrt(var + eps).to(stats_dtype).float()
        if training and running_mean is not None and running_var is not None:
            n = input.numel() // c
            with ember.no_grad():
                running_mean.mul_(1.0 - momentum).add_(mean.reshape(c) * momentum)
                unbiased = var.reshape(c) * (n / (n - 1) if n > 1 else float("nan"))
                running_var.mul_(1.0 - momentum).add_(unbiased * momentum)
    else:
        out = (input - running_mean.reshape(shape)) * ember.rsqrt(running_var.reshape(shape)
                                                                  + eps)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return _in_suggested_format(out, input)


def _in_suggested_format(out: Tensor, input: Tensor) -> Tensor:
    """`out` laid out as PyTorch's CPU batch and instance norm kernels allocate their
    results: in the input's suggested memory format (row-major for a transposed input,
    where the arithmetic above would keep its order)."""
    fmt = tensor_format(input)
    if fmt is contiguous_format:
        return out if row_major(out) else out.contiguous()
    # (with the format's own strides: ATen's empty_like(input, suggest_memory_format()))
    return out if in_format_exactly(out, fmt) else out.clone(memory_format=fmt)


def instance_norm(input: Tensor, running_mean: Tensor | None = None,
                  running_var: Tensor | None = None, weight: Tensor | None = None,
                  bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    r"""Instance normalisation: each (sample, channel) plane normalised by its own
    statistics; running statistics (averaged over the batch) update when given."""
    if input.dtype in _HALF_FLOATS:
        return _in_float32(input, lambda x: instance_norm(
            x, running_mean, running_var, weight, bias, use_input_stats, momentum, eps))
    if use_input_stats:
        dims = tuple(range(2, input.ndim))
        if math.prod(input.shape[2:]) == 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input "
                             f"size {input.shape}")
        mean = input.mean(dims, keepdim=True)
        centered = input - mean
        var = (centered * centered).mean(dims, keepdim=True)
        out = centered * ember.rsqrt(var + eps)
        if running_mean is not None and running_var is not None:
            c = input.shape[1]
            n = math.prod(input.shape[2:])
            with ember.no_grad():
                running_mean.mul_(1.0 - momentum).add_(
                    mean.reshape(input.shape[0], c).mean(0) * momentum)
                running_var.mul_(1.0 - momentum).add_(
                    var.reshape(input.shape[0], c).mean(0) * (n / (n - 1) * momentum))
    else:
        shape = _channel_shape(input)
        out = (input - running_mean.reshape(shape)) * ember.rsqrt(running_var.reshape(shape)
                                                                  + eps)
    if weight is not None:
        out = out * weight.reshape(_channel_shape(input))
    if bias is not None:
        out = out + bias.reshape(_channel_shape(input))
    # (PyTorch normalises a row-major (1, N * C, ...) view of any input)
    out = in_memory_format(out, ember.contiguous_format)
    return _nnops.show_instance_norm_graph(out, input, weight, bias)


def layer_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    r"""Layer normalisation over the last ``len(normalized_shape)`` dimensions."""
    if isinstance(normalized_shape, numbers.Integral):
        normalized_shape = (int(normalized_shape),)
    return ember.layer_norm(input, tuple(normalized_shape), weight, bias, eps)


def rms_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    r"""Root-mean-square normalisation over the last ``len(normalized_shape)`` dims.

    As in torch, half floats are normalised (and scaled by ``weight``) in float32 and the
    result rounded once to the input's dtype; ``eps`` defaults to the machine epsilon of
    that computation dtype (float32's for half floats)."""
    if isinstance(normalized_shape, numbers.Integral):
        normalized_shape = (int(normalized_shape),)
    normalized_shape = tuple(normalized_shape)
    if tuple(input.shape[input.ndim - len(normalized_shape):]) != normalized_shape:
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input "
                           f"with shape [*, {', '.join(map(str, normalized_shape))}], but got "
                           f"input of size{input.shape}")
    x = input.float() if input.dtype in _HALF_FLOATS else input
    if eps is None:
        eps = 2.220446049250313e-16 if x.dtype is ember.float64 else 1.1920928955078125e-07
    dims = tuple(range(input.ndim - len(normalized_shape), input.ndim))
    out = x * ember.rsqrt((x * x).mean(dims, keepdim=True) + eps)
    if weight is not None:
        out = out * weight
    return out.to(input.dtype)  # (a weight of another dtype does not change the result's)


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    r"""Group normalisation: the channels of each sample are split into ``num_groups``
    groups, each normalised by its own mean and (biased) variance."""
    if input.dtype in _HALF_FLOATS:
        return _in_float32(input, lambda x: group_norm(x, num_groups, weight, bias, eps))
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.ndim}")
    n, c = input.shape[0], input.shape[1]
    if c % num_groups != 0:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    for name, param in (("weight", weight), ("bias", bias)):
        if param is not None and (param.ndim != 1 or param.numel() != c):
            # (PyTorch's bias message prints the weight's shape, [0] without one)
            shown = param if name == "weight" else weight
            raise with_context(RuntimeError(
                f"Expected {name} to be a vector of size equal to the number of channels in "
                f"input, but got {name} of shape {list(shown.shape) if shown is not None else [0]}"
                f" and input of shape {list(input.shape)}"),
                f"group_norm: {name} of shape {tuple(param.shape)}, {c} channels")
    # explicit sizes: a -1 is ambiguous when the batch is empty
    x = input.reshape(n, num_groups, (c // num_groups) * math.prod(input.shape[2:]))
    mean = x.mean(-1, keepdim=True)
    centered = x - mean
    var = (centered * centered).mean(-1, keepdim=True)
    out = (centered * ember.rsqrt(var + eps)).reshape(input.shape)
    shape = _channel_shape(input)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return in_suggested_format(out, input)


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,
              out: Tensor | None = None) -> Tensor:
    r"""Divide ``input`` by its ``p``-norm over ``dim``: :math:`v / \max(\|v\|_p, \epsilon)`."""
    denom = ember.norm(input, p, dim, keepdim=True).clamp_min(eps)
    result = input / denom
    if out is not None:
        return out.copy_(result)
    return result


# -- dropout and embedding ------------------------------------------------------------


def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _kept(input: Tensor, p: float, mask_shape: tuple) -> Tensor:
    """1 where an element (or channel) is kept, else 0, in `input`'s dtype: PyTorch's
    `empty(mask_shape).bernoulli_(1 - p)`, so a seeded program drops what PyTorch drops.
    A whole-tensor mask is PyTorch's `empty_like(input)`: for a transposed input its draws
    fill memory order, not index order."""
    def empty(shape: tuple) -> Tensor:
        return ember.empty(shape, dtype=input.dtype, device=input.device)
    noise = like_layout(input, empty) if mask_shape == tuple(input.shape) else \
        empty(mask_shape)
    return noise.bernoulli_(1.0 - p)


def _dropped(input: Tensor) -> Tensor:
    """Everything dropped (p = 1): zeros of the input's dtype, as PyTorch's `input * 0`
    of a zero of that dtype."""
    return input * ember.zeros((), dtype=input.dtype, device=input.device)


def _refuse_integral_noise(input: Tensor, p: float, mask_shape: tuple) -> None:
    """PyTorch scales its noise (drawn in the input's dtype) by 1 / (1 - p) in place: an
    integer or bool input cannot take the float result, refused once the noise is drawn
    (so the random stream moves on as PyTorch's does)."""
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        _kept(input, p, mask_shape)
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{_dt.SCALAR_TYPE_NAMES[input.dtype.name]}")


def _dropout_with_mask_shape(input: Tensor, p: float, mask_shape: tuple,
                             inplace: bool) -> Tensor:
    if p == 1.0:
        out = _dropped(input)
    else:
        _refuse_integral_noise(input, p, mask_shape)
        scale = _kept(input, p, mask_shape) / (1.0 - p)  # PyTorch's noise.div_(1 - p)
        if inplace:
            return _inplace_apply(input, lambda x: x * scale)
        return input * scale
    return _write_value(input, out) if inplace else out


def dropout(input: Tensor, p: float = 0.5, training: bool = True,
            inplace: bool = False) -> Tensor:
    r"""Zero each element with probability ``p`` and scale the rest by ``1/(1-p)``
    (only when ``training``)."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    return _dropout_with_mask_shape(input, p, tuple(input.shape), inplace)


def _feature_dropout(input: Tensor, p: float, training: bool, inplace: bool,
                     batched: bool = True) -> Tensor:
    """ATen's feature dropout: one draw per (sample, channel), i.e. a mask of shape
    ``(N, C, 1, ...)``; an unbatched input is seen as a batch of one."""
    if not training or p == 0.0 or input.numel() == 0:
        return input
    shape = tuple(input.shape) if batched else (1, *input.shape)
    if len(shape) < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    mask_shape = shape[:2] + (1,) * (len(shape) - 2)
    return _dropout_with_mask_shape(input, p, mask_shape if batched else mask_shape[1:],
                                    inplace)


def _deprecated_dims(name: str, ndim: int, spatial: int) -> None:
    warnings.warn(f"{name}: Received a {ndim}-D input to {name}, which is deprecated and will "
                  "result in an error in a future release. To retain the behavior and "
                  "silence this warning, please use dropout instead. Note that "
                  f"{name} exists to provide channel-wise dropout on inputs with {spatial} "
                  "spatial dimensions, a channel dimension, and an optional batch dimension "
                  f"(i.e. {spatial + 1}D or {spatial + 2}D inputs).", stacklevel=_user_stacklevel())


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    r"""Zero whole channels of ``(N, C, L)`` / ``(C, L)`` input with probability ``p``."""
    _check_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D "
                           "input. Note that dropout1d exists to provide channel-wise dropout "
                           "on inputs with 1 spatial dimension, a channel dimension, and an "
                           "optional batch dimension (i.e. 2D or 3D inputs).")
    return _feature_dropout(input, p, training, inplace, batched=input.ndim == 3)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    r"""Zero whole channels of ``(N, C, H, W)`` input with probability ``p``.

    As PyTorch: a 3-D input is read as ``(N, C, L)`` (channel-wise 1-D dropout, with a
    warning), and other ranks drop per ``(dim 0, dim 1)`` entry, with a deprecation warning
    (a 2-D ``(N, features)`` input: element-wise).
    """
    _check_p(p)
    if input.ndim not in (3, 4):
        _deprecated_dims("dropout2d", input.ndim, 2)
    if input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that "
                      "channel-wise 1D dropout behavior is desired - input is interpreted as "
                      "shape (N, C, L), where C is the channel dim. This behavior will change "
                      "in a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise "
                      "dropout behavior, please switch to using dropout1d instead.",
                      stacklevel=_user_stacklevel())
    return _feature_dropout(input, p, training, inplace)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    r"""Zero whole channels of ``(N, C, D, H, W)`` / ``(C, D, H, W)`` input (other ranks:
    seen as unbatched, with PyTorch's deprecation warning)."""
    _check_p(p)
    if input.ndim not in (4, 5):
        _deprecated_dims("dropout3d", input.ndim, 3)
    return _feature_dropout(input, p, training, inplace, batched=input.ndim == 5)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                  inplace: bool = False) -> Tensor:
    r"""Dropout that keeps the mean and variance of SELU activations."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    return _alpha_dropout_with_mask_shape(input, p, tuple(input.shape), inplace)


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    r"""Look up rows of ``weight`` (``(num_embeddings, embedding_dim)``) by the integer
    indices in ``input``; output ``(*input.shape, embedding_dim)``.

    Args:
        padding_idx (int, optional): the row at this index receives no gradient.
        max_norm (float, optional): rows looked up whose ``norm_type``-norm exceeds it are
            renormalised to ``max_norm``, in place.
        sparse (bool): ``weight``'s gradient is a sparse COO tensor of the looked-up rows
            (for :class:`~torch.optim.SparseAdam`, ``SGD`` or ``Adagrad``).
    """
    if input.dtype not in (ember.int64, ember.int32):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got {input.type()} instead "
                           "(while checking arguments for embedding)")
    num = weight.shape[0]
    if padding_idx is not None:
        if padding_idx > 0:
            if padding_idx >= num:
                raise AssertionError("Padding_idx must be within num_embeddings")
        elif padding_idx < 0:
            if padding_idx < -num:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = num + padding_idx
    flat = input.reshape(-1)
    if flat.dtype is not ember.int64:  # int32 indices, as torch accepts
        flat = flat.to(ember.int64)
    # one host read for the bounds check (negative indices would otherwise wrap around)
    with _checking():
        # (meta indices have no values to check)
        out_of_range = flat.numel() and not flat.is_meta and \
            bool(((flat < 0) | (flat >= num)).any())
    if out_of_range:
        raise IndexError("index out of range in self")
    if max_norm is not None:
        _embedding_renorm_(weight, flat, max_norm, norm_type)
    return _nnops.embedding(weight, flat.reshape(input.shape),
                            -1 if padding_idx is None else padding_idx, scale_grad_by_freq,
                            bool(sparse))


def _embedding_renorm_(weight: Tensor, flat: Tensor, max_norm: float,
                       norm_type: float) -> None:
    with ember.no_grad():
        num = weight.shape[0]
        used = ember.zeros(num, dtype=ember.bool, device=weight.device).scatter(
            0, flat, value=True)
        norms = ember.norm(weight, norm_type, 1)
        scale = ember.where(used & (norms > max_norm), max_norm / (norms + 1e-7), 1.0)
        weight.mul_(scale.unsqueeze(1).to(weight.dtype))


# -- activations ----------------------------------------------------------------------


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    r"""Rectified linear unit: :math:`\max(0, x)`."""
    return input.relu_() if inplace else ember.relu(input)


def relu_(input: Tensor) -> Tensor:
    r"""In-place :func:`relu`."""
    return input.relu_()


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    r""":math:`y = x` if :math:`x > threshold`, else ``value``."""
    label = "ThresholdBackward1" if inplace else "ThresholdBackward0"
    fn = lambda x: _nnops.threshold(x, threshold, value, label)  # noqa: E731
    return _inplace_apply(input, fn) if inplace else fn(input)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    r"""In-place :func:`threshold`."""
    return globals()["threshold"](input, threshold, value, inplace=True)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    r"""Clamp to ``[min_val, max_val]``; the gradient is 1 strictly inside, 0 elsewhere
    (as torch's)."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    fn = lambda x: _nnops.hardtanh(x, min_val, max_val)  # noqa: E731
    return _inplace_apply(input, fn) if inplace else fn(input)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    r"""In-place :func:`hardtanh`."""
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    r""":math:`\min(\max(0, x), 6)`."""
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    r""":math:`x` if :math:`x > 0` else :math:`negative\_slope \cdot x`."""
    fn = lambda x: _nnops.leaky_relu(x, negative_slope)  # noqa: E731
    # (the in-place form's node: LeakyReluBackward1, as PyTorch's leaky_relu_)
    return _inplace_apply(input, _labelled("LeakyReluBackward1", fn)) if inplace else \
        fn(input)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    r"""In-place :func:`leaky_relu`."""
    return leaky_relu(input, negative_slope, inplace=True)


def _elu(x: Tensor, alpha: float, scale: float = 1.0, input_scale: float = 1.0,
         label: str = "EluBackward0") -> Tensor:
    # one node (ELU, SELU and CELU all run ATen's elu)
    return _nnops.elu(x, alpha, scale, input_scale, label)


def _elu_label(op: str, inplace: bool) -> str:
    """The node name of ELU (SELU) or CELU: PyTorch's in-place forms (elu_, celu_) are
    its overload 1."""
    return f"{op}Backward{int(inplace)}"


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    r""":math:`x` if :math:`x > 0` else :math:`\alpha (e^x - 1)`."""
    fn = lambda x: _elu(x, alpha, label=_elu_label("Elu", inplace))
    return _inplace_apply(input, fn) if inplace else fn(input)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    r"""In-place :func:`elu`."""
    return elu(input, alpha, inplace=True)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    r""":math:`scale \cdot (\max(0,x) + \min(0, \alpha (e^x - 1)))` with the SELU
    constants."""
    fn = lambda x: _elu(x, _SELU_ALPHA, _SELU_SCALE, label=_elu_label("Elu", inplace))
    return _inplace_apply(input, fn) if inplace else fn(input)


def selu_(input: Tensor) -> Tensor:
    r"""In-place :func:`selu`."""
    return selu(input, inplace=True)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    r""":math:`\max(0,x) + \min(0, \alpha (e^{x/\alpha} - 1))`."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    fn = lambda x: _elu(x, alpha, 1.0, 1.0 / alpha, _elu_label("Celu", inplace))
    return _inplace_apply(input, fn) if inplace else fn(input)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    r"""In-place :func:`celu`."""
    return celu(input, alpha, inplace=True)


_HALF_FLOATS = _dt.HALF_DTYPES


def _in_float32(input: Tensor, fn: Callable[[Tensor], Tensor]) -> Tensor:
    """fn(input), computed in float32 and rounded once for a half-float input (core's
    `reduction.in_float32`: PyTorch's activations compute in float32, "opmath"; rounding
    each step to bfloat16 differs by an ulp in about half the elements)."""
    return _in_float32_core(fn, input) if input.dtype in _HALF_FLOATS else fn(input)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    r"""Gaussian error linear unit: :math:`x \Phi(x)`; ``approximate='tanh'`` uses
    :math:`0.5x(1 + \tanh(\sqrt{2/\pi}(x + 0.044715x^3)))`."""
    return _nnops.gelu(input, approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    r"""Sigmoid linear unit (swish): :math:`x \sigma(x)`."""
    return _inplace_apply(input, _nnops.silu) if inplace else _nnops.silu(input)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    r""":math:`x \tanh(\mathrm{softplus}(x))`."""
    _nnops.refuse_integer("mish_{}", input)
    fn = lambda x: _in_float32(x, lambda y: y * ember.tanh(softplus(y)))
    # (in place, the value written is named: `input` keeps its own node's name otherwise)
    return _inplace_apply(input, _labelled("MishBackward0", fn)) if inplace else fn(input)


def sigmoid(input: Tensor) -> Tensor:
    r""":math:`1 / (1 + e^{-x})`."""
    return ember.sigmoid(input)


def tanh(input: Tensor) -> Tensor:
    r"""Hyperbolic tangent."""
    return ember.tanh(input)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    r""":math:`\mathrm{clamp}(x/6 + 1/2, 0, 1)` (gradient 1/6 strictly inside)."""
    _nnops.refuse_integer("hardsigmoid_{}", input)
    fn = lambda x: _in_float32(x, lambda y: hardtanh(y / 6.0 + 0.5, 0.0, 1.0))
    return _inplace_apply(input, _labelled("HardsigmoidBackward0", fn)) if inplace else \
        fn(input)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    r""":math:`x \cdot \mathrm{relu6}(x + 3) / 6`."""
    _nnops.refuse_integer("hardswish_{}", input)

    def fn(x: Tensor) -> Tensor:
        # torch's gradient: 0 for x < -3, 1 for x > 3, (2x + 3) / 6 in [-3, 3]
        mid = x * (x + 3.0) / 6.0
        return ember.where(x <= -3.0, x * 0.0, ember.where(x >= 3.0, x, mid))
    half = lambda x: _in_float32(x, fn)  # noqa: E731
    return _inplace_apply(input, half) if inplace else half(input)


def logsigmoid(input: Tensor) -> Tensor:
    r""":math:`\log(1 / (1 + e^{-x}))`, computed stably."""
    _nnops.refuse_integer("log_sigmoid_{}", input)
    # (PyTorch's kernel writes a new row-major tensor)
    return _in_float32(input, _logsigmoid).contiguous()


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    r""":math:`\frac{1}{\beta}\log(1 + e^{\beta x})`, linear (:math:`x`) where
    :math:`\beta x > threshold`."""
    return _nnops.softplus(input, beta, threshold)


def softsign(input: Tensor) -> Tensor:
    r""":math:`x / (1 + |x|)`."""
    return input / (ember.abs(input) + 1.0)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    r""":math:`x - \lambda` if :math:`x > \lambda`, :math:`x + \lambda` if
    :math:`x < -\lambda`, else 0."""
    return _nnops.softshrink(input, lambd)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    r""":math:`x` if :math:`|x| > \lambda`, else 0."""
    return ember.hardshrink(input, lambd)


def tanhshrink(input: Tensor) -> Tensor:
    r""":math:`x - \tanh(x)`."""
    return input - ember.tanh(input)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    r"""Gated linear unit: :math:`a \otimes \sigma(b)` where ``input`` is split in half
    along ``dim`` into ``a`` and ``b``."""
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    if input.shape[dim] % 2 != 0:
        raise RuntimeError(f"Halving dimension must be even, but dimension {dim % input.ndim} "
                           f"is size {input.shape[dim]}")
    a, b = ember.chunk(input, 2, dim)
    return a * ember.sigmoid(b)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    r""":math:`\max(0,x) + a \min(0,x)` with a learnable ``a`` (one per channel, dim 1,
    or a single one)."""
    return ember.prelu(input, weight)  # (the op: autocast runs it in low precision)


def _softmax_dim(name: str, ndim: int) -> int:
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  "to include dim=X as an argument.", stacklevel=_user_stacklevel())
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
            dtype: Any = None) -> Tensor:
    r"""Softmax over ``dim``: :math:`e^{x_i} / \sum_j e^{x_j}`."""
    if dim is None:
        dim = _softmax_dim("softmax", input.ndim)
    return ember.softmax(input, dim, dtype=dtype)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
            dtype: Any = None) -> Tensor:
    r"""Softmax of ``-input`` over ``dim``."""
    if dim is None:
        dim = _softmax_dim("softmin", input.ndim)
    return ember.softmax(-input, dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
                dtype: Any = None) -> Tensor:
    r"""Logarithm of softmax over ``dim``, computed stably."""
    if dim is None:
        dim = _softmax_dim("log_softmax", input.ndim)
    return ember.log_softmax(input, dim, dtype=dtype)


# -- distances and attention ----------------------------------------------------------


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    r"""Cosine similarity along ``dim``:
    :math:`\frac{x_1 \cdot x_2}{\max(\|x_1\|, \epsilon) \max(\|x_2\|, \epsilon)}`."""
    common = ember.promote_types(x1.dtype, x2.dtype)
    if not common.is_floating_point:  # PyTorch's kernel takes real floating tensors only
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is "
                           f"{_dt.SCALAR_TYPE_NAMES[common.name]}")
    x1, x2 = ember.broadcast_tensors(x1, x2)
    n1 = ember.norm(x1, 2, dim, keepdim=True).clamp_min(eps)
    n2 = ember.norm(x2, 2, dim, keepdim=True).clamp_min(eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    r""":math:`\|x_1 - x_2 + \epsilon\|_p` over the last dimension."""
    return ember.norm(x1 - x2 + eps, p, -1, keepdim=keepdim)


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    r""":math:`\mathrm{softmax}(QK^T \cdot scale + mask) V`, with torch's arguments.

    ``attn_mask`` is boolean (True = take part) or additive; ``is_causal`` masks out the
    upper triangle. ``dropout_p`` is applied to the attention weights (always: pass 0.0
    in evaluation).
    """
    _validate_sdpa_input(query, key, value, attn_mask)
    _check_sdp_kernel(query, key, value, dropout_p)
    if enable_gqa and query.ndim >= 3 and (query.shape[-3] % key.shape[-3]
                                           or query.shape[-3] % value.shape[-3]):
        # (PyTorch's message stops there)
        raise RuntimeError("Number of heads in key and value must divide the number of "
                           "heads in ")
    length, source = query.shape[-2], key.shape[-2]
    scale_factor = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    if query.dtype in _HALF_FLOATS and _cpu_flash_applies(query, key, value, dropout_p):
        return _half_attention(query, key, value, attn_mask, is_causal, scale_factor)
    if query.dtype in _HALF_FLOATS and query.device.type == "cpu":
        # PyTorch's math kernel keeps half floats' attention in float32, rounded once
        mask = attn_mask if attn_mask is None or attn_mask.dtype is ember.bool else \
            attn_mask.float()
        return scaled_dot_product_attention(
            query.float(), key.float(), value.float(), mask, dropout_p, is_causal,
            scale_factor, enable_gqa).to(query.dtype)
    if enable_gqa:
        rep_k = query.shape[-3] // key.shape[-3]
        rep_v = query.shape[-3] // value.shape[-3]
        key = _repeat_heads(key, rep_k)
        value = _repeat_heads(value, rep_v)
    scores = ember.matmul(query, key.transpose(-2, -1)) * scale_factor
    if is_causal:
        if attn_mask is not None and not _cpu_flash_applies(query, key, value, dropout_p):
            # (the math kernel's refusal; PyTorch's CPU flash kernel applies both masks)
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not "
                               "be set when is_causal=True")
        causal = ember.ones(length, source, dtype=ember.bool, device=query.device).tril(0)
        scores = scores.masked_fill(causal.logical_not(), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype is ember.bool:
            scores = scores.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:  # (added in place: a float32 mask keeps half-float scores' dtype)
            scores = (scores + attn_mask).to(scores.dtype)
    weights = _safe_softmax(scores) if is_causal or attn_mask is not None else \
        ember.softmax(scores, -1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, True)
    return ember.matmul(weights, value)


def _cpu_flash_applies(query: Tensor, key: Tensor, value: Tensor, dropout_p: float) -> bool:
    """Whether PyTorch picks its CPU flash-attention kernel: 4-D inputs of one head size,
    no dropout, the kernel switched on."""
    return (query.device.type == "cpu" and _contract.sdp_use("flash")
            and query.ndim == key.ndim == value.ndim == 4 and dropout_p == 0.0
            and query.shape[-1] == key.shape[-1] == value.shape[-1])


def _half_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None,
                    is_causal: bool, scale: float) -> Tensor:
    """Attention of half floats as PyTorch's CPU flash kernel computes it, forward and
    backward (`_HalfFlashAttention`); `key` and `value` may have fewer heads (GQA)."""
    return _HalfFlashAttention.apply(query, key, value, attn_mask, is_causal, scale)


def _half_scores(q: Tensor, k: Tensor, attn_mask: Tensor | None, is_causal: bool,
                 scale: float) -> Tensor:
    """The float32 scores of the flash kernel: `q k^T * scale`, plus the mask (read as
    float32; a boolean one as 0 / -inf), the causal upper triangle -inf."""
    scores = ember.matmul(q, k.transpose(-2, -1)) * scale
    if attn_mask is not None:
        scores = scores.masked_fill(attn_mask.logical_not(), float("-inf")) \
            if attn_mask.dtype is ember.bool else scores + attn_mask.float()
    if is_causal:
        causal = ember.ones(q.shape[-2], k.shape[-2], dtype=ember.bool,
                            device=q.device).tril(0)
        scores = scores.masked_fill(causal.logical_not(), float("-inf"))
    return scores


def _sum_heads(grads: Tensor, heads: int, half: Any) -> Tensor:
    """The gradient of `_repeat_heads`, rounded to `half`: each key/value head's query-head
    group added up in order, the sum rounded to `half` after each head (PyTorch's kernel
    accumulates into the gradient tensor itself)."""
    n = grads.shape[-3] // heads
    if n == 1:
        return grads.to(half)
    shape = tuple(grads.shape)
    grouped = grads.reshape(*shape[:-3], heads, n, shape[-2], shape[-1])
    total = grouped[..., 0, :, :].to(half)
    for r in range(1, n):
        total = (total.float() + grouped[..., r, :, :]).to(half)
    return total


@_as_kernel("ScaledDotProductFlashAttentionForCpuBackward0", 3)
class _HalfFlashAttention(_Function):
    """PyTorch's CPU flash attention of float16/bfloat16 tensors, its rounding included:
    scores, their softmax statistics and every product accumulated in float32; forward,
    the exponentials rounded to the dtype for the product with `value` and the output
    rounded once; backward (from the row's log-sum-exp), `dV = P^T dO` with `P` rounded,
    `dS = P (dO V^T - rowsum(dO O))` rounded, then `dQ = dS K`, `dK = dS^T Q`, each rounded
    once (a GQA group's added up head by head). A row masked out entirely gives zeros.
    (Wider heads and longer rows can differ in the last bits: the kernel's blocked,
    vectorised arithmetic is not modelled.)"""

    @staticmethod
    def forward(ctx: Any, query: Tensor, key: Tensor, value: Tensor,
                attn_mask: Tensor | None, is_causal: bool, scale: float) -> Tensor:
        half = query.dtype
        q = query.float()
        k = _repeat_heads(key.float(), query.shape[-3] // key.shape[-3])
        v = _repeat_heads(value.float(), query.shape[-3] // value.shape[-3])
        scores = _half_scores(q, k, attn_mask, is_causal, scale)
        top = scores.amax(-1, keepdim=True)
        empty = top == float("-inf")  # (exp(-inf - -inf) would be NaN)
        top = top.masked_fill(empty, 0.0)
        e = (scores - top).exp()
        total = e.sum(-1, keepdim=True).masked_fill(empty, 1.0)
        out = (ember.matmul(e.to(half).float(), v) / total).to(half)
        ctx.save_for_backward(query, key, value, out, top + total.log())
        ctx.attn = (attn_mask, is_causal, scale)
        return out

    @staticmethod
    def jvp(ctx: Any, *tangents: Any) -> Any:
        raise NotImplementedError(
            "Trying to use forward AD with _scaled_dot_product_flash_attention_for_cpu that "
            "does not support it because it has not been implemented yet.\nPlease file an "
            "issue to PyTorch at https://github.com/pytorch/pytorch/issues/new?template="
            "feature-request.yml so that we can prioritize its implementation or submit a PR "
            "adding the implementation to derivatives.yaml")

    @staticmethod
    def backward(ctx: Any, grad_out: Tensor) -> tuple:
        query, key, value, out, lse = ctx.saved_tensors
        attn_mask, is_causal, scale = ctx.attn
        half = query.dtype
        q, do = query.float(), grad_out.to(half).float()
        k = _repeat_heads(key.float(), query.shape[-3] // key.shape[-3])
        v = _repeat_heads(value.float(), query.shape[-3] // value.shape[-3])
        p = (_half_scores(q, k, attn_mask, is_causal, scale) - lse).exp()
        grad_v = ember.matmul(p.to(half).float().transpose(-2, -1), do)
        rowdot = (do * out.float()).sum(-1, keepdim=True)
        ds = (p * (ember.matmul(do, v.transpose(-2, -1)) - rowdot)).to(half).float()
        grad_q = ember.matmul(ds, k) * scale
        grad_k = ember.matmul(ds.transpose(-2, -1), q) * scale
        return (grad_q.to(half), _sum_heads(grad_k, key.shape[-3], half),
                _sum_heads(grad_v, value.shape[-3], half), None, None, None)


def _safe_softmax(scores: Tensor) -> Tensor:
    """PyTorch's `_safe_softmax` of the attention scores: a row its mask takes out entirely
    (all -inf) attends to nothing, its weights 0 (not softmax's NaN), its gradient 0."""
    masked = (scores == float("-inf")).all(-1, keepdim=True)
    # the softmax of such a row would be NaN, and NaN times a zero gradient stays NaN
    weights = ember.softmax(scores.masked_fill(masked, 0.0), -1)
    return weights.masked_fill(masked, 0.0)


def _validate_sdpa_input(query: Tensor, key: Tensor, value: Tensor,
                         attn_mask: Tensor | None) -> None:
    """PyTorch's checks of the attention inputs, before it picks a kernel (its words, the
    doubled spaces included): one dtype for q, k and v, at least 2-D each, a mask that is
    bool, float32 or of the query's dtype."""
    if not query.dtype == key.dtype == value.dtype:
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got "
                           f"query.dtype: {_cpp_type_name(query.dtype)} key.dtype: "
                           f"{_cpp_type_name(key.dtype)} and value.dtype: "
                           f"{_cpp_type_name(value.dtype)} instead.")
    if min(query.ndim, key.ndim, value.ndim) < 2:
        raise RuntimeError(f"Expected query, key, and value to all be  at least 2 dimensional, "
                           f"but got query.dim: {query.ndim} key.dim: {key.ndim} and "
                           f"value.dim: {value.ndim} instead.")
    if attn_mask is not None and attn_mask.dtype not in (ember.bool, ember.float32,
                                                         query.dtype):
        raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query "
                           f"dtype, but got attn_mask.dtype: {_cpp_type_name(attn_mask.dtype)} "
                           f"and  query.dtype: {_cpp_type_name(query.dtype)} instead.")


def _check_sdp_kernel(query: Tensor, key: Tensor, value: Tensor, dropout_p: float) -> None:
    """Refuse, as PyTorch does, when the kernel switches (`sdpa_kernel`,
    `ember.backends.cuda.enable_*_sdp`) leave no kernel PyTorch could run: on the CPU the
    math one, or the flash one where it applies (no dropout, one head size); elsewhere
    ember takes any switched-on kernel for its own."""
    use = _contract.sdp_use
    if use("math"):
        return
    if query.device.type != "cpu":
        if any(use(k) for k in ("flash", "mem_efficient", "cudnn")):
            return
    elif use("flash"):
        reason = None
        if dropout_p > 0.0:
            reason = "Both fused kernels do not support non-zero dropout."
        elif not query.shape[-1] == key.shape[-1] == value.shape[-1]:
            reason = ("Flash attention requires q,k,v to have the same last dimension. Got "
                      f"Query.size(-1): {query.shape[-1]}, Key.size(-1): {key.shape[-1]}, "
                      f"Value.size(-1): {value.shape[-1]} instead.")
        if reason is None:
            return
        warnings.warn("Flash attention kernel not used because:", UserWarning,
                      stacklevel=_user_stacklevel())
        warnings.warn(reason, UserWarning, stacklevel=_user_stacklevel())
        raise RuntimeError("No available kernel.  Aborting execution.")
    raise RuntimeError("No viable backend for scaled_dot_product_attention was found. This is "
                       "likely due to turning off both the math kernel and the fused kernels.")


def _repeat_heads(x: Tensor, n: int) -> Tensor:
    if n == 1:
        return x
    shape = tuple(x.shape)
    x = x.unsqueeze(-3).expand(*shape[:-3], shape[-3], n, shape[-2], shape[-1])
    return x.reshape(*shape[:-3], shape[-3] * n, shape[-2], shape[-1])


# -- nnmisc family (issue 16): the rest of nn.functional ------------------------------
from ember.core.ops.losses import (  # noqa: E402 - declared in core, re-exported here
    ctc_loss,
    multi_margin_loss,
    multilabel_margin_loss,
)

__all__ += [
    "rrelu", "rrelu_", "feature_alpha_dropout", "local_response_norm", "channel_shuffle",
    "native_channel_shuffle", "multi_margin_loss", "multilabel_margin_loss",
    "triplet_margin_with_distance_loss", "ctc_loss", "embedding_bag", "gumbel_softmax",
    "pdist", "linear_cross_entropy", "multi_head_attention_forward",
]


def _rrelu_slopes(input: Tensor, lower: float, upper: float, training: bool) -> Any:
    """The negative slope of each element: drawn from U(lower, upper) when training, else
    their mean (a Python number)."""
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if not training:
        return (lower + upper) / 2
    if input.device.type == "cpu":
        # PyTorch's CPU kernel draws a slope (a double uniform between the bounds as the
        # input's dtype holds them) only for each element <= 0, in order; the others
        # keep slope 1
        negative = input.detach() <= 0
        slopes = ember.ones(tuple(input.shape), dtype=ember.float64)
        low, high = (ember.tensor(v, dtype=input.dtype).item() for v in (lower, upper))
        drawn = ember.empty(int(negative.sum().item()), dtype=ember.float64).uniform_(
            low, high)
        slopes[negative] = drawn
        return slopes.to(input.dtype)
    return ember.empty(tuple(input.shape), dtype=input.dtype,
                       device=input.device).uniform_(lower, upper)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
          training: bool = False, inplace: bool = False) -> Tensor:
    r"""Randomized leaky ReLU ("Empirical Evaluation of Rectified Activations in
    Convolutional Network"): :math:`x` where :math:`x \ge 0`, else :math:`a x`, with
    :math:`a \sim U(lower, upper)` per element when ``training``, else
    :math:`a = (lower + upper) / 2`."""
    slope = _rrelu_slopes(input, lower, upper, training)
    if training:
        fn = lambda x: ember.where(x >= 0, x, x * slope)  # noqa: E731
    else:
        fn = lambda x: _nnops.leaky_relu(x, slope)  # noqa: E731
    # one node, PyTorch's rrelu_with_noise's (its in-place form's: overload 1)
    fn = _labelled(f"RreluWithNoiseBackward{int(inplace)}", fn)
    return _inplace_apply(input, fn) if inplace else fn(input)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
           training: bool = False) -> Tensor:
    r"""In-place :func:`rrelu`."""
    return rrelu(input, lower, upper, training, inplace=True)


def _alpha_dropout_with_mask_shape(input: Tensor, p: float, mask_shape: tuple,
                                   inplace: bool) -> Tensor:
    """PyTorch's alpha dropout: dropped values become SELU's negative saturation, then an
    affine map restores the mean and variance; the mask has `mask_shape` (broadcast)."""
    if p == 1.0:
        out = _dropped(input)
        return _write_value(input, out) if inplace else out
    _refuse_integral_noise(input, p, mask_shape)
    alpha = _SELU_ALPHA * _SELU_SCALE
    a = 1.0 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    keep = _kept(input, p, mask_shape)
    b = (keep - 1.0) * (alpha * a) + alpha * a * p
    fn = lambda x: x * (keep * a) + b  # noqa: E731
    return _inplace_apply(input, fn) if inplace else fn(input)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                          inplace: bool = False) -> Tensor:
    r"""Alpha dropout of whole channels: each channel of an ``(N, C, *)`` input is kept, or
    set to SELU's negative saturation, with probability ``p``, then the affine map of
    :func:`alpha_dropout` restores the mean and variance."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    if input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    mask_shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    return _alpha_dropout_with_mask_shape(input, p, mask_shape, inplace)


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Tensor:
    r"""Local response normalisation across channels (AlexNet's):
    :math:`b_c = a_c \left(k + \frac{\alpha}{n} \sum_{c'} a_{c'}^2\right)^{-\beta}` over a
    window of ``size`` neighbouring channels (zero-padded at the ends)."""
    dim = input.ndim
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality                          "
                         f"input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    sizes = tuple(input.shape)
    div = input.mul(input).reshape(sizes[0], 1, sizes[1], -1)
    div = pad(div, (0, 0, size // 2, (size - 1) // 2))
    div = avg_pool2d(div, (size, 1), stride=1).reshape(sizes)
    return input / div.mul(alpha).add(k).pow(beta)


def _channel_shuffle(op: str, input: Tensor, groups: int) -> Tensor:
    """ATen's native_channel_shuffle: the checks, then channels interleaved, the result
    laid out in the input's suggested memory format (channels-last stays channels-last)."""
    if isinstance(groups, bool) or not hasattr(groups, "__index__"):
        raise TypeError(f"{op}(): argument 'groups' (position 2) must be int, not "
                        f"{type(groups).__name__}")
    groups = groups.__index__()
    if input.ndim <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with "
                           f"sizes {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value "
                           f"of groups:{groups}")
    if input.shape[1] % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got "
                           f"{input.shape[1]} channels and {groups} groups.")
    shape = tuple(input.shape)
    out = input.reshape(shape[0], groups, shape[1] // groups, *shape[2:]).transpose(1, 2)
    return in_suggested_format(out.reshape(shape), input)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    r"""Split the channels of ``(N, C, *)`` input into ``groups`` groups and interleave
    them (ShuffleNet): channel ``g * (C / groups) + i`` moves to ``i * groups + g``."""
    return _channel_shuffle("channel_shuffle", input, groups)


def native_channel_shuffle(input: Tensor, groups: int) -> Tensor:
    r"""Native kernel level implementation of the `channel_shuffle`: the same result
    (see :func:`channel_shuffle`)."""
    return _channel_shuffle("native_channel_shuffle", input, groups)


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function: Any = None, margin: float = 1.0,
                                      swap: bool = False, reduction: str = "mean") -> Tensor:
    r""":math:`\max(d(a, p) - d(a, n) + margin, 0)` with any distance function ``d``
    (default: :func:`pairwise_distance`)."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have "
                           f"the same number of dimensions, but got: anchor {anchor.ndim}D, "
                           f"positive {positive.ndim}D, and negative {negative.ndim}D inputs")
    distance = pairwise_distance if distance_function is None else distance_function
    dist_pos = distance(anchor, positive)
    dist_neg = distance(anchor, negative)
    if swap:
        dist_neg = ember.minimum(dist_neg, distance(positive, negative))
    loss = (margin + dist_pos - dist_neg).clamp_min(0)
    if reduction == "sum":
        return loss.sum()
    return loss.mean() if reduction == "mean" else loss


def _bags(input: Tensor, offsets: Tensor | None, per_sample_weights: Tensor | None,
          include_last_offset: bool) -> tuple[Tensor, Tensor, Tensor | None, int]:
    """embedding_bag's input as flat indices, the bag of each, the flat weights and the
    number of bags, with PyTorch's checks."""
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated "
                             "is a mini-batch of fixed length sequences. However, found "
                             f"offsets of type {type(offsets)}")
        count, length = input.shape
        bag = ember.arange(count, device=input.device).unsqueeze(1).expand(count, length)
        weights = None if per_sample_weights is None else per_sample_weights.reshape(-1)
        return input.reshape(-1), bag.reshape(-1), weights, count
    if input.ndim != 1:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.ndim}")
    if offsets is None:
        raise ValueError("offsets has to be a 1D Tensor but got None")
    if offsets.ndim != 1:
        raise ValueError("offsets has to be a 1D Tensor")
    n = input.shape[0]
    with _checking():
        starts = [int(v) for v in offsets.tolist()]
    if starts and starts[0] != 0:
        raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the "
                           f"mini-batch has to start from position 0. However, got "
                           f"{starts[0]}\n[ {ember.core.dtype.API_NAME}.LongTensor{{}} ]")
    if starts and starts[-1] > n:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {n} but got "
                           f"offsets[-1] of {starts[-1]}")
    count = len(starts) - 1 if include_last_offset else len(starts)
    ends = starts[1:count + 1] if include_last_offset else starts[1:] + [n]
    bag = [i for i, (s, e) in enumerate(zip(starts[:count], ends)) for _ in range(e - s)]
    used = sum(max(e - s, 0) for s, e in zip(starts[:count], ends))
    flat = input[:used] if used < n else input
    return flat, ember.tensor(bag, dtype=ember.int64, device=input.device), \
        (None if per_sample_weights is None else per_sample_weights[:used]), count


def _check_bag_indices(flat: Tensor, num: int, mode: str, padding_idx: int | None,
                       dtype: Any) -> None:
    """PyTorch's RuntimeError for an index outside [0, num): its fast path (a sum or mean
    of float32/half rows, no padding_idx) names the index's place in the flat input (as
    its single-threaded kernel does: threads each report a place in their own share)."""
    with _checking():
        bad = (flat < 0) | (flat >= num)
        if not (flat.numel() and bool(bad.any())):
            return
        first = int(bad.int().argmax())
        value = int(flat[first])
    if mode != "max" and padding_idx is None and dtype in (ember.float32, ember.float16,
                                                           ember.bfloat16):
        raise RuntimeError(f"Index {first} of input takes value {value} which is not in the "
                           f"valid range [0, {num})")
    raise RuntimeError(f"embedding_bag: Expected idx >= 0 && idx < num_embeddings but found "
                       f"idx to be {value}")


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None,
                  max_norm: float | None = None, norm_type: float = 2,
                  scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    r"""Sums, means or maxima of bags of embeddings, without materialising the lookups of
    every bag.

    A 2-D ``input`` ``(B, L)`` is ``B`` bags of ``L`` indices; a 1-D ``input`` holds the
    bags one after another, bag ``i`` starting at ``offsets[i]`` (``offsets[0]`` is 0;
    with ``include_last_offset`` the last offset ends the last bag). Entries equal to
    ``padding_idx`` take no part (nor count in a mean); an empty bag gives zeros.
    ``per_sample_weights`` (``mode='sum'`` only) scales each looked-up row.
    """
    if weight.dtype in (ember.int64, ember.int32) and input.dtype.is_floating_point:
        warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage "
                      "`embedding_bag(weight, input, ...)` is deprecated, and should now be "
                      "`embedding_bag(input, weight, ...)`.", stacklevel=_user_stacklevel())
        weight, input = input, weight
    if per_sample_weights is not None and input.shape != per_sample_weights.shape:
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) "
                         f"is not None, then it must have the same shape as the input "
                         f"({input.shape})")
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight.ndim}")
    if input.dtype not in (ember.int64, ember.int32):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got {input.type()} instead "
                           "(while checking arguments for embedding_bag)")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. "
                                  f"per_sample_weights is only supported for mode='sum' (got "
                                  f"mode='{mode}'). Please open a feature request on GitHub.")
    if per_sample_weights is not None and per_sample_weights.dtype is not weight.dtype:
        raise RuntimeError(f"Expected tensor for argument #1 'weight' to have the same type as "
                           f"tensor for argument #1 'per_sample_weights'; but type "
                           f"{weight.type()} does not equal {per_sample_weights.type()} (while "
                           f"checking arguments for embedding_bag)")
    num = weight.shape[0]
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise RuntimeError(f"padding_idx must be within the number of embeddings, {-num} "
                               f"through {num - 1}, but got {padding_idx}")
        padding_idx = padding_idx % num
    flat, bag, weights, count = _bags(input, offsets, per_sample_weights, include_last_offset)
    _check_bag_indices(flat, num, mode, padding_idx, weight.dtype)
    rows = embedding(flat, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq,
                     sparse)
    keep = ember.ones(flat.shape, dtype=ember.bool, device=flat.device) \
        if padding_idx is None else flat != padding_idx
    dim = weight.shape[1]
    zeros = ember.zeros(count, dim, dtype=weight.dtype, device=weight.device)
    if mode == "max":
        if flat.numel() == 0:
            return zeros
        with _checking():
            sizes = ember.zeros(count, dtype=ember.int64, device=flat.device).index_add(
                0, bag, ember.ones_like(bag)).tolist()
        longest = max(sizes)
        first = [sum(sizes[:i]) for i in range(count)]
        place = ember.arange(flat.shape[0], device=flat.device) - ember.tensor(
            first, dtype=ember.int64, device=flat.device).index_select(0, bag)
        slot = (bag * longest + place).unsqueeze(1).expand(flat.shape[0], dim)
        rows = ember.where(keep.unsqueeze(1), rows, float("-inf"))
        dense = ember.full((count * longest, dim), float("-inf"), dtype=weight.dtype,
                           device=weight.device).scatter(0, slot, rows)
        out = dense.reshape(count, longest, dim).amax(1)
        return ember.where(out == float("-inf"), 0.0, out)
    rows = rows * keep.unsqueeze(1).to(rows.dtype)
    if weights is not None:
        rows = rows * weights.unsqueeze(1)
    out = zeros.index_add(0, bag, rows)
    if mode == "mean":
        counts = ember.zeros(count, dtype=weight.dtype, device=weight.device).index_add(
            0, bag, keep.to(weight.dtype))
        out = out / counts.clamp_min(1).unsqueeze(1)
    return out


def gumbel_softmax(logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    r"""A sample of the Gumbel-softmax (concrete) distribution over ``dim``:
    :math:`\mathrm{softmax}((logits + g) / \tau)` with :math:`g \sim \mathrm{Gumbel}(0, 1)`;
    with ``hard``, the one-hot of its argmax, differentiated as the soft sample
    (straight-through)."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.",
                      stacklevel=_user_stacklevel())
    gumbels = -ember.empty_like(logits).exponential_().log()
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = ember.zeros_like(logits).scatter(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


def pdist(input: Tensor, p: float = 2) -> Tensor:
    r"""The ``p``-norm distance between every pair of rows of an ``(N, M)`` input: the
    upper triangle (row-major, diagonal excluded) of ``cdist(input, input)``, as a
    ``N (N - 1) / 2`` vector."""
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if not input.dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if input.dtype in (ember.float16, ember.bfloat16) and input.device.type == "cpu":
        raise _kernel_refuses("pdist", input.dtype)  # (PyTorch's CPU kernel: float32/64 only)
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    n = input.shape[0]
    first = [i for i in range(n) for _ in range(i + 1, n)]
    second = [j for i in range(n) for j in range(i + 1, n)]
    if not first:
        return ember.empty(0, dtype=input.dtype, device=input.device)
    a = input.index_select(0, ember.tensor(first, dtype=ember.int64, device=input.device))
    b = input.index_select(0, ember.tensor(second, dtype=ember.int64, device=input.device))
    return ember.norm(a - b, p, 1)


def linear_cross_entropy(input: Tensor, linear_weight: Tensor, target: Tensor, *,
                         linear_bias: Tensor | None = None, weight: Tensor | None = None,
                         reduction: str = "mean", ignore_index: int | None = None,
                         label_smoothing: float = 0.0, options: Any = None) -> Tensor:
    r"""Cross entropy of ``input @ linear_weight.T (+ linear_bias)`` against ``target``:
    ``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)``.

    ``linear_weight`` is ``(C, in_features)``, or ``(C, d1, ..., dK, in_features)`` for a
    K-dimensional loss (batched input only). ``ignore_index`` None means -100 for class
    indices and is refused with class probabilities. ``options`` (PyTorch's chunking
    strategy, which only lowers memory) is accepted and does not change the result.
    """
    del options  # PyTorch's chunked path computes the same loss
    if input.ndim < 1 or input.ndim > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.ndim}")
    if linear_weight.ndim < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got "
                           f"{linear_weight.ndim}")
    batches = tuple(input.shape[:-1])
    in_features = input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError(f"expected equal input and linear_weight last dimensions "
                           f"(in_features), got {input.shape[-1]} and "
                           f"{linear_weight.shape[-1]}, respectively")
    classes = linear_weight.shape[0]
    out_features = tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(classes, *out_features)}, got "
                           f"{tuple(linear_bias.shape)}")
    if out_features and not batches:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape "
                           f"{tuple(linear_weight.shape)} requires batched input, "
                           f"(N, {in_features}), got unbatched input with shape "
                           f"{tuple(input.shape)}")
    logits_shape = (*batches, classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains "
                           "probabilities")
    ignore_index = -100 if ignore_index is None else ignore_index
    if out_features:
        linear_weight = linear_weight.reshape(math.prod(out_features, start=classes),
                                              in_features)
        if linear_bias is not None:
            linear_bias = linear_bias.reshape(math.prod(out_features, start=classes))
    logits = linear(input, linear_weight, linear_bias).reshape(logits_shape)
    return cross_entropy(logits, target, weight=weight, reduction=reduction,
                         ignore_index=ignore_index, label_smoothing=label_smoothing)


def multi_head_attention_forward(
        query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int, num_heads: int,
        in_proj_weight: Tensor | None, in_proj_bias: Tensor | None, bias_k: Tensor | None,
        bias_v: Tensor | None, add_zero_attn: bool, dropout_p: float, out_proj_weight: Tensor,
        out_proj_bias: Tensor | None, training: bool = True,
        key_padding_mask: Tensor | None = None, need_weights: bool = True,
        attn_mask: Tensor | None = None, use_separate_proj_weight: bool = False,
        q_proj_weight: Tensor | None = None, k_proj_weight: Tensor | None = None,
        v_proj_weight: Tensor | None = None, static_k: Tensor | None = None,
        static_v: Tensor | None = None, average_attn_weights: bool = True,
        is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
    r"""Multi-head attention with explicit weights: the computation
    :class:`~ember.nn.MultiheadAttention` runs (one implementation, in
    ``ember.nn.modules.transformer``, which imports this module).

    Shapes: ``query`` ``(L, N, E)`` or ``(L, E)``; ``key``/``value`` ``(S, N, E_k/E_v)``;
    returns ``attn_output`` ``(L, N, E)`` and, with ``need_weights``, the attention
    weights ``(N, L, S)`` (averaged over heads) or ``(N, num_heads, L, S)``, else None.
    """
    from ember.nn.modules.transformer import multi_head_attention_forward as attention
    return attention(query, key, value, embed_dim_to_check, num_heads, in_proj_weight,
                     in_proj_bias, bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight,
                     out_proj_bias, training, key_padding_mask, need_weights, attn_mask,
                     use_separate_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight,
                     static_k, static_v, average_attn_weights, is_causal)


# -- convolutions, pooling and resampling in 1 to 3 dims (nnconv) ----------------------
# The convolutions and pools are core ops (ember.core.ops.nn), N-d over im2col; these
# check and forward arguments as torch.nn.functional does.


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    r"""3-D convolution (cross-correlation) over ``(N, C_in, D, H, W)`` or unbatched
    ``(C_in, D, H, W)`` input; ``padding`` is an int, a triple, ``'valid'`` or ``'same'``."""
    return ember.conv3d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: Any = 1, padding: Any = 0, output_padding: Any = 0,
                     groups: int = 1, dilation: Any = 1) -> Tensor:
    r"""1-D transposed convolution; weight ``(C_in, C_out/groups, kW)``."""
    return ember.conv_transpose1d(input, weight, bias, stride, padding, output_padding,
                                  groups, dilation)


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: Any = 1, padding: Any = 0, output_padding: Any = 0,
                     groups: int = 1, dilation: Any = 1) -> Tensor:
    r"""3-D transposed convolution; weight ``(C_in, C_out/groups, kD, kH, kW)``."""
    return ember.conv_transpose3d(input, weight, bias, stride, padding, output_padding,
                                  groups, dilation)


def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:
    r"""1-D convolution of ``(time, batch, channels)`` input; weight ``(kW, C_in, C_out)``."""
    return ember.conv_tbc(input, weight, bias, pad)


def max_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False):
    r"""3-D max pooling; with ``return_indices`` also the argmax positions (flat over
    ``D * H * W``)."""
    return ember.max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode,
                            return_indices)


def max_pool1d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None,
                            padding: Any = 0, dilation: Any = 1, ceil_mode: bool = False,
                            return_indices: bool = False) -> tuple[Tensor, Tensor]:
    r"""1-D max pooling: (values, argmax positions), whatever ``return_indices`` says."""
    return ember.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None,
                            padding: Any = 0, dilation: Any = 1, ceil_mode: bool = False,
                            return_indices: bool = False) -> tuple[Tensor, Tensor]:
    r"""2-D max pooling: (values, argmax positions), whatever ``return_indices`` says."""
    return ember.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None,
                            padding: Any = 0, dilation: Any = 1, ceil_mode: bool = False,
                            return_indices: bool = False) -> tuple[Tensor, Tensor]:
    r"""3-D max pooling: (values, argmax positions), whatever ``return_indices`` says."""
    return ember.max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def avg_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    r"""3-D average pooling."""
    return _nnops.avg_pool3d(input, kernel_size, stride, padding, ceil_mode,
                             count_include_pad, divisor_override)


def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:
    r"""3-D average pooling to a fixed output size (``None`` keeps that input size)."""
    return _nnops.adaptive_avg_pool3d(input, output_size)


def adaptive_max_pool1d_with_indices(input: Tensor, output_size: Any,
                                     return_indices: bool = False) -> tuple[Tensor, Tensor]:
    r"""1-D max pooling to a fixed output length: (values, argmax positions)."""
    return ember.adaptive_max_pool1d(input, output_size)


def adaptive_max_pool2d_with_indices(input: Tensor, output_size: Any,
                                     return_indices: bool = False) -> tuple[Tensor, Tensor]:
    r"""2-D max pooling to a fixed output size: (values, argmax positions)."""
    return _nnops.adaptive_max_pool2d(input, output_size)


def adaptive_max_pool3d_with_indices(input: Tensor, output_size: Any,
                                     return_indices: bool = False) -> tuple[Tensor, Tensor]:
    r"""3-D max pooling to a fixed output size: (values, argmax positions)."""
    return _nnops.adaptive_max_pool3d(input, output_size)


def adaptive_max_pool1d(input: Tensor, output_size: Any, return_indices: bool = False):
    r"""1-D max pooling to a fixed output length (``windows [floor(i*L/O),
    ceil((i+1)*L/O))``); with ``return_indices`` also the argmax positions."""
    out = adaptive_max_pool1d_with_indices(input, output_size)
    return out if return_indices else out[0]


def adaptive_max_pool2d(input: Tensor, output_size: Any, return_indices: bool = False):
    r"""2-D max pooling to a fixed output size (``None`` keeps that input size); with
    ``return_indices`` also the argmax positions."""
    out = adaptive_max_pool2d_with_indices(input, output_size)
    return out if return_indices else out[0]


def adaptive_max_pool3d(input: Tensor, output_size: Any, return_indices: bool = False):
    r"""3-D max pooling to a fixed output size (``None`` keeps that input size); with
    ``return_indices`` also the argmax positions."""
    out = adaptive_max_pool3d_with_indices(input, output_size)
    return out if return_indices else out[0]


def _unpool_output_size(input: Tensor, kernel_size: tuple, stride: tuple, padding: tuple,
                        output_size: Any) -> list[int]:
    n = len(kernel_size)
    default = [(input.shape[input.ndim - n + d] - 1) * stride[d] + kernel_size[d]
               - 2 * padding[d] for d in range(n)]
    if output_size is None:
        return default
    if len(output_size) == n + 2:
        output_size = output_size[2:]
    if len(output_size) != n:
        raise ValueError(f"output_size should be a sequence containing {n} or {n + 2} "
                         f"elements, but it has a length of '{len(output_size)}'")
    for d in range(n):
        low, high = default[d] - stride[d], default[d] + stride[d]
        if not low < int(output_size[d]) < high:  # (the message shows it as given)
            raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between '
                             f"{low} and {high})")
    return [int(s) for s in output_size]


def _max_unpool(op: str, n: int, input: Tensor, indices: Tensor, kernel_size: Any,
                stride: Any, padding: Any, output_size: Any) -> Tensor:
    """Each input value written at its flat index (per sample and channel) of a zero
    output: the inverse of max pooling with ``return_indices``."""
    if input.ndim not in (n + 1, n + 2):
        raise RuntimeError(f"{op}(): Expected {n + 1}D or {n + 2}D input, but got input of "
                           f"shape {list(input.shape)}")
    kernel = _pair(kernel_size, n)
    stride = kernel if stride is None else _pair(stride, n)
    padding = _pair(padding, n)
    size = _unpool_output_size(input, kernel, stride, padding, output_size)
    if indices.dtype is not ember.int64:
        raise RuntimeError(f"{op}(): Expected elements of indices to be of type int64, got "
                           f"{indices.dtype}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"{op}(): Expected shape of indices to be same as that of the "
                           f"input tensor ({list(input.shape)}) but got indices tensor with "
                           f"shape: {list(indices.shape)}")
    x, idx = (input, indices) if input.ndim == n + 2 else (input.unsqueeze(0),
                                                           indices.unsqueeze(0))
    batch, channels = x.shape[0], x.shape[1]
    total = math.prod(size)
    length = math.prod(x.shape[2:])  # (not -1: ambiguous for an empty batch)
    flat_idx = idx.reshape(batch, channels, length)
    if flat_idx.numel():
        with _checking():
            bad = ((flat_idx < 0) | (flat_idx >= total)).flatten().nonzero()
            if bad.numel():  # PyTorch's kernel keeps the last one it meets
                wrong = int(flat_idx.flatten()[bad[-1, 0]])
                shown = list(size) + [1] if n == 1 else size  # (1-d: max_unpool2d's words)
                raise RuntimeError(f"Found an invalid max index: {wrong} (output volumes "
                                   f"are of size {'x'.join(str(s) for s in shown)})")
    out = ember.zeros(batch, channels, total, dtype=x.dtype, device=x.device)
    out = out.scatter(2, flat_idx, x.reshape(batch, channels, length))
    out = out.reshape(batch, channels, *size)
    return out if input.ndim == n + 2 else out.squeeze(0)


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None,
                 padding: Any = 0, output_size: Any = None) -> Tensor:
    r"""The partial inverse of :func:`max_pool1d`: each value placed at its index, zeros
    elsewhere."""
    return _max_unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding,
                       output_size)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None,
                 padding: Any = 0, output_size: Any = None) -> Tensor:
    r"""The partial inverse of :func:`max_pool2d`: each value placed at its index, zeros
    elsewhere."""
    return _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding,
                       output_size)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None,
                 padding: Any = 0, output_size: Any = None) -> Tensor:
    r"""The partial inverse of :func:`max_pool3d`: each value placed at its index, zeros
    elsewhere."""
    return _max_unpool("max_unpool3d", 3, input, indices, kernel_size, stride, padding,
                       output_size)


def _lp_pool(n: int, input: Tensor, norm_type: float, kernel_size: Any, stride: Any,
             ceil_mode: bool) -> Tensor:
    """PyTorch's power-average pooling: (sum over the window of x ** p) ** (1 / p), from
    an average pool (negative window sums, possible with odd p, give 0)."""
    max_pool = (max_pool1d, max_pool2d, max_pool3d)[n - 1]
    if isinstance(norm_type, (int, float)) and math.isinf(norm_type):
        if norm_type > 0:
            return max_pool(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        return -max_pool(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    avg_pool = (avg_pool1d, avg_pool2d, avg_pool3d)[n - 1]
    out = avg_pool(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (ember.sign(out) * relu(out.abs())).mul(math.prod(_pair(kernel_size, n))) \
        .pow(1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    r"""1-D power-average pooling: :math:`(\sum_{x \in window} x^p)^{1/p}`."""
    return _lp_pool(1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    r"""2-D power-average pooling: :math:`(\sum_{x \in window} x^p)^{1/p}`."""
    return _lp_pool(2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    r"""3-D power-average pooling: :math:`(\sum_{x \in window} x^p)^{1/p}`."""
    return _lp_pool(3, input, norm_type, kernel_size, stride, ceil_mode)


def _fractional_max_pool(n: int, input: Tensor, kernel_size: Any, output_size: Any,
                         output_ratio: Any, _random_samples: Tensor | None
                         ) -> tuple[Tensor, Tensor]:
    op = f"fractional_max_pool{n}d"
    if input.ndim not in (n + 1, n + 2):
        raise RuntimeError(f"{op}(): Expected {n + 1}D or {n + 2}D tensor, but got: "
                           f"{list(input.shape)}")
    if output_size is None and output_ratio is None:
        raise ValueError(f"{op} requires specifying either an output_size or an "
                         "output_ratio")
    if output_size is None:
        ratio = _pair(output_ratio, n)
        if len(ratio) != n:
            raise ValueError(f"{op} requires output_ratio to either be a single Int or "
                             f"tuple of Ints.")
        output_size = [int(input.shape[input.ndim - n + d] * ratio[d]) for d in range(n)]
    if _random_samples is None:
        batch = 1 if input.ndim == n + 1 else input.shape[0]
        _random_samples = ember.rand(batch, input.shape[-n - 1], n, dtype=input.dtype,
                                     device=input.device)
    return _nnops.fractional_max_pool(op, n, input, kernel_size, output_size,
                                      _random_samples)


def fractional_max_pool2d_with_indices(input: Tensor, kernel_size: Any, output_size: Any = None,
                                       output_ratio: Any = None, return_indices: bool = False,
                                       _random_samples: Tensor | None = None
                                       ) -> tuple[Tensor, Tensor]:
    r"""2-D fractional max pooling: (values, argmax positions)."""
    return _fractional_max_pool(2, input, kernel_size, output_size, output_ratio,
                                _random_samples)


def fractional_max_pool3d_with_indices(input: Tensor, kernel_size: Any, output_size: Any = None,
                                       output_ratio: Any = None, return_indices: bool = False,
                                       _random_samples: Tensor | None = None
                                       ) -> tuple[Tensor, Tensor]:
    r"""3-D fractional max pooling: (values, argmax positions)."""
    return _fractional_max_pool(3, input, kernel_size, output_size, output_ratio,
                                _random_samples)


def fractional_max_pool2d(input: Tensor, kernel_size: Any, output_size: Any = None,
                          output_ratio: Any = None, return_indices: bool = False,
                          _random_samples: Tensor | None = None):
    r"""2-D fractional max pooling (Graham, 2014): ``kernel_size`` windows at
    pseudo-random steps that give ``output_size`` (or ``output_ratio`` of the input size).

    ``_random_samples`` ``(N, C, 2)`` in [0, 1) fixes the steps (drawn with
    :func:`ember.rand` when not given); with ``return_indices`` also the argmax positions.
    """
    out = _fractional_max_pool(2, input, kernel_size, output_size, output_ratio,
                               _random_samples)
    return out if return_indices else out[0]


def fractional_max_pool3d(input: Tensor, kernel_size: Any, output_size: Any = None,
                          output_ratio: Any = None, return_indices: bool = False,
                          _random_samples: Tensor | None = None):
    r"""3-D fractional max pooling (Graham, 2014); ``_random_samples`` is ``(N, C, 3)``.
    See :func:`fractional_max_pool2d`."""
    out = _fractional_max_pool(3, input, kernel_size, output_size, output_ratio,
                               _random_samples)
    return out if return_indices else out[0]


GRID_SAMPLE_INTERPOLATION_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
GRID_SAMPLE_PADDING_MODES = {"zeros": 0, "border": 1, "reflection": 2}
_GRID_MODES, _GRID_PADDING = GRID_SAMPLE_INTERPOLATION_MODES, GRID_SAMPLE_PADDING_MODES
_ALIGN_CORNERS_CHANGED = (
    "Default grid_sample and affine_grid behavior has changed to align_corners=False since "
    "1.3.0. Please specify align_corners=True if the old behavior is desired. See the "
    "documentation of grid_sample for details.")


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear",
                padding_mode: str = "zeros", align_corners: bool | None = None) -> Tensor:
    r"""Sample ``input`` ``(N, C, H, W)`` (or ``(N, C, D, H, W)``) at the normalised
    coordinates of ``grid`` ``(N, H_out, W_out, 2)`` (or ``(..., 3)``): ``(-1, -1)`` is the
    top-left corner (its pixel's centre with ``align_corners=True``).

    Args:
        mode: ``'bilinear'`` (trilinear for 5-D input), ``'nearest'`` or ``'bicubic'``
            (4-D only).
        padding_mode: what a coordinate outside the input reads: ``'zeros'``, the
            ``'border'`` value, or the ``'reflection'`` of the input.
        align_corners: whether -1 and 1 are the centres of the corner pixels (default
            ``False``, with a warning as PyTorch gives).
    """
    if mode not in _GRID_MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in _GRID_PADDING:
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_CORNERS_CHANGED, stacklevel=_user_stacklevel())
        align_corners = False
    return ember.grid_sampler(input, grid, _GRID_MODES[mode], _GRID_PADDING[padding_mode],
                              align_corners)


def affine_grid(theta: Tensor, size: Sequence[int], align_corners: bool | None = None
                ) -> Tensor:
    r"""The sampling grid (for :func:`grid_sample`) of a batch of affine maps: ``theta``
    ``(N, 2, 3)`` for a 2-D ``size`` ``(N, C, H, W)``, ``(N, 3, 4)`` for a 3-D one; the
    grid is ``(N, H, W, 2)`` (or ``(N, D, H, W, 3)``)."""
    if align_corners is None:
        warnings.warn(_ALIGN_CORNERS_CHANGED, stacklevel=_user_stacklevel())
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    if len(size) == 4:
        if theta.ndim != 3 or theta.shape[-2] != 2 or theta.shape[-1] != 3:
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                             f"{size}. Got {theta.shape}.")
    elif len(size) == 5:
        if theta.ndim != 3 or theta.shape[-2] != 3 or theta.shape[-1] != 4:
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size "
                             f"{size}. Got {theta.shape}.")
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {size}.")
    if align_corners and min(list(size)[2:]) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size "
                      "grids when align_corners=True. This is not an intended use case of "
                      "affine_grid. See the documentation of affine_grid for details.",
                      stacklevel=_user_stacklevel())
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    return ember.affine_grid_generator(theta, size, align_corners)


# -- node names ------------------------------------------------------------------------
# These functions are written as decompositions; their results' graph nodes carry the
# name PyTorch's fused kernels give theirs (`print(F.gelu(x))` shows
# `grad_fn=<GeluBackward0>`). An in-place call keeps its own node's name.

_INTERPOLATE_NODES = {"nearest": "UpsampleNearest{n}D", "nearest-exact": "UpsampleNearestExact{n}D",
                      "linear": "UpsampleLinear1D", "bilinear": "UpsampleBilinear2D",
                      "bicubic": "UpsampleBicubic2D", "trilinear": "UpsampleTrilinear3D",
                      "lanczos": "UpsampleLanczos2D", "area": "AdaptiveAvgPool{n}D"}


def _interpolate_label(input: Tensor, size: Any = None, scale_factor: Any = None,
                       mode: str = "nearest", align_corners: bool | None = None,
                       recompute_scale_factor: bool | None = None,
                       antialias: bool = False) -> str | None:
    node = _INTERPOLATE_NODES.get(mode)
    if node is None:
        return None
    # (the antialiased kernels are ATen ops of their own: _upsample_bilinear2d_aa ...)
    return node.format(n=input.ndim - 2) + ("Aa" if antialias else "") + "Backward0"


def _pad_label(input: Tensor, pad: Sequence[int], mode: str = "constant",
               value: float | None = None) -> str | None:
    # (PyTorch's reflection and replication pads are one op each; its circular pad
    # writes slices, and the constant pad is named by constant_pad_nd)
    if mode == "circular":  # (its last write into the new tensor's slices)
        return "CopySlices"
    kind = {"reflect": "Reflection", "replicate": "Replication"}.get(mode)
    return None if kind is None else f"{kind}Pad{len(pad) // 2}DBackward0"


def _sdpa_label(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None,
                dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
                enable_gqa: bool = False) -> str | None:
    """PyTorch's CPU flash-attention node where its `use_flash_attention_cpp` takes the
    call (4-D q, k, v of one batch and head count, one head size, rows of stride 1, no
    dropout, a mask it can broadcast that needs no gradient); else its math path's last
    node stays."""
    if query.device.type != "cpu" or not _contract.sdp_use("flash") or dropout_p > 0.0:
        return None
    qkv = (query, key, value)
    if any(t.ndim != 4 or t.shape[-2] == 0 or t.stride(-1) != 1 for t in qkv):
        return None
    batch, heads, length, source = query.shape[0], query.shape[1], query.shape[2], key.shape[2]
    if key.shape[0] != batch or value.shape[0] != batch or \
            not query.shape[-1] == key.shape[-1] == value.shape[-1]:
        return None
    if not (heads % key.shape[1] == 0 and heads % value.shape[1] == 0 if enable_gqa
            else heads == key.shape[1] == value.shape[1]):
        return None
    if attn_mask is not None:
        mask = attn_mask.shape
        if attn_mask.requires_grad or mask[-2] not in (length, 1) or \
                mask[-1] not in (source, 1) or attn_mask.ndim not in (2, 4) or \
                (attn_mask.ndim == 4 and (mask[0] not in (1, batch) or mask[1] not in (1, heads))):
            return None
    return "ScaledDotProductFlashAttentionForCpuBackward0"


_NODE_LABELS: dict[str, str | Callable[..., str | None]] = {
    "scaled_dot_product_attention": _sdpa_label,
    "pdist": "PdistBackward0", "pixel_shuffle": "PixelShuffleBackward0",
    "pixel_unshuffle": "PixelUnshuffleBackward0", "channel_shuffle": "ChannelShuffleBackward0",
    "mish": "MishBackward0", "hardswish": "HardswishBackward0",
    "hardsigmoid": "HardsigmoidBackward0", "logsigmoid": "LogSigmoidBackward0",
    "glu": "GluBackward0", "batch_norm": "NativeBatchNormBackward0",
    "pairwise_distance": "NormBackward1", "unfold": "Im2ColBackward0", "fold": "Col2ImBackward0",
    "group_norm": "NativeGroupNormBackward0", "interpolate": _interpolate_label,
    "embedding_bag": "EmbeddingBagBackward0", "pad": _pad_label,
    "adaptive_max_pool3d": "AdaptiveMaxPool3DBackward0",
    "fractional_max_pool2d": "FractionalMaxPool2DBackward0",
    "fractional_max_pool3d": "FractionalMaxPool3DBackward0",
    "fractional_max_pool2d_with_indices": "FractionalMaxPool2DBackward0",
    "fractional_max_pool3d_with_indices": "FractionalMaxPool3DBackward0",
}
"""Node names of the decomposed functions (gelu, silu, elu, selu, celu, softplus,
hardtanh, leaky_relu and embedding are one node each, named by their own gradients)."""


for _name, _label in _NODE_LABELS.items():
    globals()[_name] = _labelled(_label, globals()[_name])


# the functions torch binds to C++ builtins, by torch's path (torch.fx records them as
# called; their failed `__torch_function__` dispatch has the C++ functions' message)
TORCH_BUILTINS: dict[str, str] = {
    "adaptive_avg_pool1d": "torch.adaptive_avg_pool1d", "avg_pool1d": "torch.avg_pool1d",
    "avg_pool2d": "torch._C._nn.avg_pool2d", "avg_pool3d": "torch._C._nn.avg_pool3d",
    "bilinear": "torch.bilinear", "celu_": "torch.celu_",
    "channel_shuffle": "torch.channel_shuffle", "conv1d": "torch.conv1d",
    "conv2d": "torch.conv2d", "conv3d": "torch.conv3d", "conv_tbc": "torch.conv_tbc",
    "conv_transpose1d": "torch.conv_transpose1d", "conv_transpose2d": "torch.conv_transpose2d",
    "conv_transpose3d": "torch.conv_transpose3d", "cosine_similarity": "torch.cosine_similarity",
    "elu_": "torch._C._nn.elu_", "gelu": "torch._C._nn.gelu", "hardshrink": "torch.hardshrink",
    "hardtanh_": "torch._C._nn.hardtanh_", "leaky_relu_": "torch._C._nn.leaky_relu_",
    "linear": "torch._C._nn.linear", "logsigmoid": "torch._C._nn.log_sigmoid",
    "native_channel_shuffle": "torch.native_channel_shuffle",
    "one_hot": "torch._C._nn.one_hot", "pairwise_distance": "torch.pairwise_distance",
    "pdist": "torch.pdist", "pixel_shuffle": "torch.pixel_shuffle",
    "pixel_unshuffle": "torch.pixel_unshuffle", "prelu": "torch.prelu", "relu_": "torch.relu_",
    "rrelu_": "torch.rrelu_",
    "scaled_dot_product_attention": "torch._C._nn.scaled_dot_product_attention",
    "selu_": "torch.selu_", "softplus": "torch._C._nn.softplus",
    "softshrink": "torch._C._nn.softshrink", "threshold_": "torch.threshold_",
}

# each function checks for `__torch_function__` overrides first, as PyTorch's call
# `handle_torch_function` (the declared ops among them check at their own entry)
for _name in __all__:
    _fn = globals().get(_name)
    if callable(_fn) and not isinstance(_fn, type) and not getattr(_fn, "op_entry", False):
        globals()[_name] = _overridable(_fn, TORCH_BUILTINS.get(_name))
    elif getattr(_fn, "op_entry", False) and _name not in TORCH_BUILTINS and \
            _name not in vars(ember):  # a declared op that torch writes in Python (losses)
        _fn.torch_python = True

from ember.nn import grad  # noqa: E402, F401  (`F.grad.conv2d_input`, as torch's)
