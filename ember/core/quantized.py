"""Quantized tensors (`torch.quantize_per_tensor`, `torch.quantize_per_channel`): the tensor
type, quantizing and dequantizing, the quantization schemes, and the few ops PyTorch runs
on quantized tensors that a quantized model's forward needs (relu, pooling, reshaping).

A quantized tensor is an ember tensor whose dtype is a quantized one (`ember.qint8`,
`quint8`, `qint32`) and which holds two things: its integer values, an ordinary integer
tensor of the storage dtype (int8, uint8, int32: what `int_repr()` returns), and its
quantizer (`qscheme()`, the scale and zero point, per tensor or per channel along
`q_per_channel_axis()`). The real value of an element is `(int - zero_point) * scale`.

Everything on it is written with ordinary ops on the integer tensor, so it runs on every
backend and no backend knows the quantized dtypes. Like a sparse tensor it has no buffer
of its own dtype: its `_data`, which every dense op reads, raises PyTorch's
"Could not run 'aten::add' with arguments from the 'QuantizedCPU' backend", and the ops
a quantized model uses (`function_forms`) answer instead, after that refusal, so dense
code pays nothing for them.

Rounding is PyTorch's (FBGEMM's): `int = nearbyint(x * (1 / scale)) + zero_point` in
float32, halves to even, clamped to the dtype's range.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ember.core import dtype as dt
from ember.core.errors import warn_once
from ember.core.function import Function
from ember.core.grad_mode import no_grad
from ember.core.host import dtype_arg
from ember.core.opdef import OPS
from ember.core.printing import add_suffixes, tensor_body
from ember.core.shapes import normalize_dim
from ember.core.sparse_coo import _op_in_progress
from ember.core.tensor import Size, Tensor
from ember.core.torch_function import _disabled_torch_function_impl


@dt.printed_in_api()  # <class 'torch.qscheme'> under the alias
class qscheme:  # noqa: N801 - PyTorch's spelling
    """How a quantized tensor maps integers to reals (`ember.per_tensor_affine`, ...)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"{dt.API_NAME}.{self.name}"

    def __reduce__(self) -> Any:
        return (qscheme_by_name, (self.name,))


per_tensor_affine = qscheme("per_tensor_affine")
per_channel_affine = qscheme("per_channel_affine")
per_tensor_symmetric = qscheme("per_tensor_symmetric")
per_channel_symmetric = qscheme("per_channel_symmetric")
per_channel_affine_float_qparams = qscheme("per_channel_affine_float_qparams")
_QSCHEMES = {q.name: q for q in (per_tensor_affine, per_channel_affine, per_tensor_symmetric,
                                 per_channel_symmetric, per_channel_affine_float_qparams)}


def qscheme_by_name(name: str) -> qscheme:
    """Unpickling: `"per_tensor_affine"` -> `ember.per_tensor_affine`."""
    return _QSCHEMES[name]


_DEPRECATION = ("torch.quantize_per_tensor, torch.quantize_per_channel and other quantized "
                "tensor creation functions that produce tensors with dtype torch.quint8, "
                "torch.qint8, and torch.qint32 are deprecated and will be removed in a future "
                "PyTorch release. Please see https://github.com/pytorch/pytorch/issues/184982 "
                "for more information.")
def _warn_deprecated() -> None:
    """PyTorch 2.13 warns once per process on the first quantized tensor made."""
    warn_once(_DEPRECATION, UserWarning, stacklevel=3)


class QuantizedTensor(Tensor):
    """A quantized tensor; make one with `ember.quantize_per_tensor` or
    `ember.quantize_per_channel`."""

    __slots__ = ("_int", "_qscheme", "_scale", "_zero_point", "_axis")
    __torch_function__ = _disabled_torch_function_impl  # ember's own layout: no overrides
    is_quantized = True

    # -- what dense code reaches for ------------------------------------------------
    @property
    def _data(self) -> Any:  # type: ignore[override]
        raise NotImplementedError(
            f"Could not run 'aten::{_op_in_progress()}' with arguments from the "
            f"'Quantized{self._device.type.upper()}' backend. ember runs on quantized "
            "tensors only the ops of quantized models (relu, max_pool2d, "
            "adaptive_avg_pool2d, flatten, reshape/view, indexing); call .dequantize() "
            "first for any other op.")

    @_data.setter
    def _data(self, value: Any) -> None:
        raise RuntimeError("a quantized tensor's values are set through its integers "
                           "(int_repr())")

    # -- attributes -----------------------------------------------------------------
    @property
    def shape(self) -> Size:  # type: ignore[override]
        return self._int.shape

    @property
    def ndim(self) -> int:  # type: ignore[override]
        return self._int.ndim

    def dim(self) -> int:
        return self._int.ndim

    def size(self, dim: int | None = None) -> Size | int:
        return self._int.size() if dim is None else self._int.size(dim)

    def numel(self) -> int:
        return self._int.numel()

    nelement = numel

    def __len__(self) -> int:
        return len(self._int)

    def stride(self, dim: int | None = None) -> Any:
        return self._int.stride() if dim is None else self._int.stride(dim)

    def is_contiguous(self, memory_format: Any = None) -> bool:
        return self._int.is_contiguous()

    # -- the quantizer --------------------------------------------------------------
    def int_repr(self) -> Tensor:
        """The integer values, a tensor of the storage dtype (uint8 for quint8)."""
        return self._int.clone()

    def dequantize(self) -> Tensor:
        """The real values, float32: `(int - zero_point) * scale`."""
        with no_grad():
            ints = self._int.float()
            if self._axis is None:
                return (ints - self._zero_point) * float(np.float32(self._scale))
            shape = [1] * self._int.ndim
            shape[self._axis] = -1
            scale = self._scale.float().reshape(shape)
            zero_point = self._zero_point.float().reshape(shape)
            return (ints - zero_point) * scale

    def qscheme(self) -> qscheme:
        return self._qscheme

    def q_scale(self) -> float:
        return self._per_tensor("q_scale", self._scale)

    def q_zero_point(self) -> int:
        return self._per_tensor("q_zero_point", self._zero_point)

    def q_per_channel_scales(self) -> Tensor:
        return self._per_channel("q_per_channel_scales", self._scale).clone()

    def q_per_channel_zero_points(self) -> Tensor:
        return self._per_channel("q_per_channel_zero_points", self._zero_point).clone()

    def q_per_channel_axis(self) -> int:
        return self._per_channel("q_per_channel_axis", self._axis)

    def _per_tensor(self, what: str, value: Any) -> Any:
        if self._axis is not None:
            raise RuntimeError(f"Expected quantizer->qscheme() == kPerTensorAffine to be true, "
                               f"but got false. ({what} of a {self._qscheme.name} tensor)")
        return value

    def _per_channel(self, what: str, value: Any) -> Any:
        if self._axis is None:
            raise RuntimeError(f"Expected (qscheme == kPerChannelAffine || qscheme == "
                               f"kPerChannelAffineFloatQParams) to be true, but got false. "
                               f"({what} of a {self._qscheme.name} tensor)")
        return value

    # -- the ops of quantized models ------------------------------------------------
    def _with_ints(self, ints: Tensor) -> QuantizedTensor:
        """A quantized tensor of the same quantizer holding `ints` (a per-channel tensor's
        channel axis must keep its place)."""
        return _make(ints, self._dtype, self._qscheme, self._scale, self._zero_point,
                     self._axis)

    def _reshaped(self, fn: Callable[[Tensor], Tensor], op: str) -> QuantizedTensor:
        if self._axis is not None:
            raise NotImplementedError(f"{op}: ember reshapes per-tensor quantized tensors "
                                      "only; dequantize() a per-channel one first")
        return self._with_ints(fn(self._int))

    def __getitem__(self, key: Any) -> QuantizedTensor:
        return self._reshaped(lambda ints: ints[key], "indexing")

    def clone(self, *, memory_format: Any = None) -> QuantizedTensor:
        return self._with_ints(self._int.clone())

    def detach(self) -> QuantizedTensor:
        return self

    def contiguous(self, memory_format: Any = None) -> QuantizedTensor:
        return self._with_ints(self._int.contiguous())

    def cpu(self) -> QuantizedTensor:
        return self._with_ints(self._int.cpu())

    def __repr__(self) -> str:
        body = tensor_body(self.dequantize(), len("tensor("))
        suffix = [f"size={tuple(self.shape)}", f"dtype={self._dtype!r}",
                  f"quantization_scheme={self._qscheme!r}"]
        if self._axis is None:
            suffix += [f"scale={self._scale!r}", f"zero_point={self._zero_point!r}"]
        else:
            suffix += [f"scale={self._scale!r}", f"zero_point={self._zero_point!r}",
                       f"axis={self._axis}"]
        if self._device.type != "cpu":
            suffix.insert(0, f"device='{self._device}'")
        return add_suffixes("tensor(" + body, suffix, len("tensor("))

    def __format__(self, format_spec: str) -> str:
        return object.__format__(self, format_spec)

    def __reduce_ex__(self, protocol: int) -> Any:
        return (rebuild_quantized, (self._int, self._dtype, self._qscheme.name, self._scale,
                                    self._zero_point, self._axis))

    def __deepcopy__(self, memo: dict) -> QuantizedTensor:
        out = self.clone()
        memo[id(self)] = out
        return out

    @property
    def function_forms(self) -> dict[str, Callable]:
        """The ops answered for a quantized first operand (see ember.core.declare)."""
        return _FUNCTION_FORMS


# printed as PyTorch's quantized tensors' class, <class 'torch.Tensor'>
QuantizedTensor.__name__ = QuantizedTensor.__qualname__ = "Tensor"
dt.printed_in_api()(QuantizedTensor)


def _make(ints: Tensor, dtype: dt.dtype, scheme: qscheme, scale: Any, zero_point: Any,
          axis: int | None) -> QuantizedTensor:
    t = object.__new__(QuantizedTensor)
    t._int, t._dtype, t._device, t._backend = ints, dtype, ints._device, ints._backend
    t._requires_grad, t._node, t._vc = False, None, [0]
    t._qscheme, t._scale, t._zero_point, t._axis = scheme, scale, zero_point, axis
    return t


def rebuild_quantized(ints: Tensor, dtype: dt.dtype, scheme: str, scale: Any,
                      zero_point: Any, axis: int | None) -> QuantizedTensor:
    """A quantized tensor from its parts: what plain pickling (`copy`, multiprocessing)
    and reading a checkpoint's `torch._utils._rebuild_qtensor` build."""
    return _make(ints, dtype, _QSCHEMES[scheme], scale, zero_point, axis)


def _check_input(op: str, input: Any, dtype: Any) -> dt.dtype:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if input._dtype is not dt.float32:
        raise RuntimeError(f"Quantize only works on Float Tensor, got "
                           f"{dt.SCALAR_TYPE_NAMES.get(input._dtype.name, input._dtype.name)}")
    d = dtype_arg(dtype, op)
    if d not in (dt.qint8, dt.quint8, dt.qint32):
        name = dt.SCALAR_TYPE_NAMES.get(d.name, d.name) if isinstance(d, dt.dtype) else d
        raise RuntimeError(f"ScalarType {name} is not supported in new_qtensor.")
    return d


def _round_to_ints(values: Tensor, inv_scale: Any, zero_point: Any, dtype: dt.dtype) -> Tensor:
    """`clamp(nearbyint(values * inv_scale) + zero_point)` as the storage dtype."""
    lo, hi = dt.QUANTIZED_RANGE[dtype.name]
    ints = (values * inv_scale).round() + zero_point
    return ints.clamp(lo, hi).to(dt.STORAGE_OF[dtype.name])


def _float_inverse(scale: float) -> float:
    """FBGEMM's `1.0f / scale`, in float32."""
    return float(np.float32(1.0) / np.float32(scale))


def quantize_per_tensor(input: Tensor, scale: Any, zero_point: Any, dtype: Any) -> Tensor:
    """Converts a float tensor to a quantized tensor with the given scale and zero point.

    Args:
        input (Tensor): float32 tensor (or a list of them) to quantize.
        scale (float or Tensor): scale to apply in the quantization formula.
        zero_point (int or Tensor): offset in integer value that maps to float zero.
        dtype (ember.dtype): the quantized dtype: ``qint8``, ``quint8`` or ``qint32``.
    """
    if isinstance(input, (list, tuple)):
        return [quantize_per_tensor(x, s, z, dtype) for x, s, z in zip(input, scale, zero_point)]
    d = _check_input("quantize_per_tensor", input, dtype)
    scale = float(np.float32(scale.item())) if isinstance(scale, Tensor) else float(scale)
    zero_point = int(zero_point.item()) if isinstance(zero_point, Tensor) else int(zero_point)
    lo, hi = dt.QUANTIZED_RANGE[d.name]
    if zero_point > hi:
        raise RuntimeError(f"quantize_tensor_per_tensor_affine zero_point {zero_point} is "
                           "above upper bound.")
    if zero_point < lo:
        raise RuntimeError(f"quantize_tensor_per_tensor_affine zero_point {zero_point} is "
                           "below lower bound.")
    if scale <= 0 or not math.isfinite(scale):
        raise RuntimeError(f"quantize_per_tensor: scale must be a positive finite number, "
                           f"got {scale}")
    _warn_deprecated()
    with no_grad():
        ints = _round_to_ints(input.detach(), _float_inverse(scale), zero_point, d)
    return _make(ints, d, per_tensor_affine, scale, zero_point, None)


def quantize_per_channel(input: Tensor, scales: Tensor, zero_points: Tensor, axis: int,
                         dtype: Any) -> Tensor:
    """Converts a float tensor to a per-channel quantized tensor: the slices along `axis`
    each have their scale and zero point.

    Args:
        input (Tensor): float32 tensor to quantize.
        scales (Tensor): float 1-D tensor of scales, one per slice along `axis`.
        zero_points (Tensor): integer 1-D tensor of zero points, one per slice.
        axis (int): the dimension the channels run along.
        dtype (ember.dtype): the quantized dtype: ``qint8``, ``quint8`` or ``qint32``.
    """
    d = _check_input("quantize_per_channel", input, dtype)
    axis = normalize_dim("quantize_per_channel", axis, max(input.ndim, 1))
    channels = input.shape[axis]
    if scales.ndim != 1 or scales.shape[0] != channels or zero_points.shape != scales.shape:
        raise RuntimeError(f"quantize_per_channel: expected {channels} scales and zero points "
                           f"(the size of axis {axis}), got scales of shape "
                           f"{list(scales.shape)} and zero_points of shape "
                           f"{list(zero_points.shape)}")
    _warn_deprecated()
    with no_grad():
        scales = scales.detach().to(dt.float64)
        zero_points = zero_points.detach().to(dt.int64)
        shape = [1] * input.ndim
        shape[axis] = -1
        inv = 1.0 / scales.float().reshape(shape)  # float32, as FBGEMM's 1.0f / scale
        ints = _round_to_ints(input.detach(), inv, zero_points.reshape(shape), d)
    return _make(ints, d, per_channel_affine, scales, zero_points, axis)


def dequantize(tensor: Any) -> Any:
    """The float values of a quantized tensor (or of each in a list); a float tensor is
    returned as it is, as PyTorch does."""
    if isinstance(tensor, (list, tuple)):
        return [dequantize(t) for t in tensor]
    return tensor.dequantize()


def _requantized(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """An op that PyTorch's quantized kernels run keeping the input's quantizer, computed
    on the integers as floats (exact: pooling and averaging only mix the integers)."""
    def quantized(input: QuantizedTensor, *args: Any, **kwargs: Any) -> Any:
        if input._axis is not None:
            raise NotImplementedError("ember pools per-tensor quantized tensors only")
        out = fn(input._int.float(), *args, **kwargs)
        if isinstance(out, tuple):  # (values, indices)
            return (input._with_ints(out[0].round().to(input._int.dtype)),) + out[1:]
        return input._with_ints(out.round().to(input._int.dtype))
    return quantized


def _reshaping(name: str) -> Callable[..., QuantizedTensor]:
    def quantized(input: QuantizedTensor, *args: Any, **kwargs: Any) -> QuantizedTensor:
        return input._reshaped(lambda ints: getattr(ints, name)(*args, **kwargs), name)
    return quantized


def _relu(input: QuantizedTensor, *args: Any) -> QuantizedTensor:
    if input._axis is not None:
        raise NotImplementedError("ember's quantized relu takes per-tensor tensors only")
    return input._with_ints(input._int.clamp(min=input._zero_point))


def _relu_(input: QuantizedTensor) -> QuantizedTensor:
    input._int = _relu(input)._int
    return input


def _pooling(name: str) -> Callable[..., Any]:
    def pool(*args: Any, **kwargs: Any) -> Any:
        return OPS[name].public(*args, **kwargs)
    return _requantized(pool)


_FUNCTION_FORMS: dict[str, Callable] = {
    "relu": _relu, "relu_": _relu_,
    "max_pool1d": _pooling("max_pool1d"), "max_pool2d": _pooling("max_pool2d"),
    "adaptive_avg_pool2d": _pooling("adaptive_avg_pool2d"),
    "avg_pool2d": _pooling("avg_pool2d"),
    **{name: _reshaping(name) for name in (
        "reshape", "view", "flatten", "squeeze", "unsqueeze", "permute", "transpose",
        "view_as", "reshape_as")},
}


class _FakeQuantize(Function):
    """Quantize-dequantize in float; the gradient passes where the integer was in range
    (PyTorch's straight-through estimator with its clamp mask)."""

    @staticmethod
    def forward(ctx: Any, input: Tensor, inv_scale: Any, scale: Any, zero_point: Any,
                quant_min: int, quant_max: int) -> Tensor:
        ints = (input * inv_scale).round() + zero_point
        ctx.save_for_backward((ints >= quant_min).logical_and(ints <= quant_max))
        return (ints.clamp(quant_min, quant_max) - zero_point) * scale

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple:
        (mask,) = ctx.saved_tensors
        return grad * mask, None, None, None, None, None


def _check_fake_range(quant_min: int, quant_max: int, zero_point: Any) -> None:
    if quant_min > quant_max:
        raise RuntimeError("`quant_min` should be less than or equal to `quant_max`.")
    if isinstance(zero_point, int) and not quant_min <= zero_point <= quant_max:
        raise RuntimeError("`zero_point` must be between `quant_min` and `quant_max`.")


def fake_quantize_per_tensor_affine(input: Tensor, scale: Any, zero_point: Any,
                                    quant_min: int, quant_max: int) -> Tensor:
    """Quantizes `input` to integers in [quant_min, quant_max] and back to float32, in one
    float tensor: `(clamp(nearbyint(x / scale) + zero_point) - zero_point) * scale`.

    The gradient is the straight-through estimator: 1 where the integer was in range, 0
    where it was clamped.
    """
    scale = float(np.float32(scale.item())) if isinstance(scale, Tensor) else float(scale)
    zero_point = int(zero_point.item()) if isinstance(zero_point, Tensor) else int(zero_point)
    _check_fake_range(quant_min, quant_max, zero_point)
    return _FakeQuantize.apply(input, _float_inverse(scale), scale, zero_point, quant_min,
                               quant_max)


def fake_quantize_per_channel_affine(input: Tensor, scale: Tensor, zero_point: Tensor,
                                     axis: int, quant_min: int, quant_max: int) -> Tensor:
    """:func:`fake_quantize_per_tensor_affine` with a scale and zero point per slice of
    `input` along `axis`."""
    _check_fake_range(quant_min, quant_max, None)
    axis = normalize_dim("fake_quantize_per_channel_affine", axis, input.ndim)
    if scale.shape != (input.shape[axis],) or zero_point.shape != scale.shape:
        raise RuntimeError(f"fake_quantize_per_channel_affine: expected {input.shape[axis]} "
                           f"scales and zero points (the size of axis {axis}), got "
                           f"{list(scale.shape)} and {list(zero_point.shape)}")
    shape = [1] * input.ndim
    shape[axis] = -1
    scale = scale.detach().float().reshape(shape).to(input.device)
    zero_point = zero_point.detach().reshape(shape).to(dt.int64).to(input.device)
    return _FakeQuantize.apply(input, 1.0 / scale, scale, zero_point, quant_min, quant_max)


def _make_per_tensor_quantized_tensor(input: Tensor, scale: float, zero_point: int) -> Tensor:
    """A per-tensor quantized tensor holding the integers `input` (int8 -> qint8, uint8 ->
    quint8, int32 -> qint32) with the given scale and zero point."""
    by_storage = {dt.int8: dt.qint8, dt.uint8: dt.quint8, dt.int32: dt.qint32}
    if input._dtype not in by_storage:
        raise RuntimeError(f"_make_per_tensor_quantized_tensor: expected an int8, uint8 or "
                           f"int32 tensor, got {input._dtype}")
    # a copy, as PyTorch's: the quantized tensor owns its integers
    return _make(input.detach().clone(), by_storage[input._dtype], per_tensor_affine,
                 float(scale), int(zero_point), None)


def _make_per_channel_quantized_tensor(input: Tensor, scale: Tensor, zero_point: Tensor,
                                       axis: int) -> Tensor:
    """A per-channel quantized tensor holding the integers `input`, with a scale and zero
    point per slice along `axis`."""
    by_storage = {dt.int8: dt.qint8, dt.uint8: dt.quint8, dt.int32: dt.qint32}
    if input._dtype not in by_storage:
        raise RuntimeError(f"_make_per_channel_quantized_tensor: expected an int8, uint8 or "
                           f"int32 tensor, got {input._dtype}")
    return _make(input.detach().clone(), by_storage[input._dtype], per_channel_affine,
                 scale.to(dt.float64), zero_point.to(dt.int64),
                 normalize_dim("quantize", axis, input.ndim))
