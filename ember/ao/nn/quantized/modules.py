"""Quantized modules (`torch.ao.nn.quantized`): what `convert` puts in place of float
layers. They hold quantized weights and the scale and zero point of their quint8 output,
print as PyTorch's (`QuantizedLinear(in_features=.., out_features=.., scale=..,
zero_point=.., qscheme=..)`) and save the state dict entries PyTorch's save."""

from __future__ import annotations

from typing import Any

import ember
from ember import nn
from ember.ao.nn.quantized import functional as qF
from ember.core.tensor import Tensor
from ember.nn.module import _addindent
from ember.nn.modules.utils import _pair
from ember.nn.utils.fusion import fuse_conv_bn_weights


def _quantize_weight(float_wt: Tensor, observer: Any) -> Tensor:
    """The float weight quantized with the qparams its (already run) observer chose."""
    wt_scale, wt_zp = observer.calculate_qparams()
    if observer.qscheme in (ember.per_tensor_symmetric, ember.per_tensor_affine):
        return ember.quantize_per_tensor(float_wt.detach().float(), float(wt_scale),
                                         int(wt_zp), ember.qint8)
    return ember.quantize_per_channel(float_wt.detach().float(), wt_scale.double(),
                                      wt_zp.long(), observer.ch_axis, ember.qint8)


def _hide_packed_params_repr(module: nn.Module) -> str:
    """The repr of a module holding `_packed_params`, without that child (PyTorch's)."""
    children = [(k, m) for k, m in module._modules.items() if k != "_packed_params"]
    lines = [f"({k}): " + _addindent(repr(m), 2) for k, m in children]
    main = module._get_name() + "(" + module.extra_repr()
    if lines:
        main += "\n  " + "\n  ".join(lines) + "\n"
    return main + ")"


def _float_bias(bias: Tensor | None) -> Tensor | None:
    """A layer's float bias, as PyTorch unpacks it: a Parameter of its own."""
    return None if bias is None else nn.Parameter(bias.detach().float().clone())


class LinearPackedParams(nn.Module):
    """The quantized weight and float bias of a quantized linear layer (PyTorch's packed
    FBGEMM weights; here the quantized tensor itself). Its state dict entries are
    `dtype` and `_packed_params`, the tuple (weight, bias)."""

    _version = 3

    def __init__(self, dtype: Any = ember.qint8) -> None:
        super().__init__()
        self.dtype = dtype
        # a tuple, not attributes: the bias is a Parameter that must not be registered
        self._packed_params: tuple = (None, None)

    def set_weight_bias(self, weight: Tensor, bias: Tensor | None) -> None:
        self._packed_params = (weight, _float_bias(bias))

    def _weight_bias(self) -> tuple[Tensor, Tensor | None]:
        return self._packed_params

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "dtype"] = self.dtype
        destination[prefix + "_packed_params"] = self._weight_bias()

    def _load_from_state_dict(self, state_dict: dict, prefix: str, local_metadata: dict,
                              strict: bool, missing_keys: list, unexpected_keys: list,
                              error_msgs: list) -> None:
        self.dtype = state_dict.pop(prefix + "dtype", self.dtype)
        packed = state_dict.pop(prefix + "_packed_params", None)
        if packed is None:
            missing_keys.append(prefix + "_packed_params")
        else:
            self.set_weight_bias(*packed)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys,
                                      unexpected_keys, error_msgs)

    def __repr__(self) -> str:
        return repr(self._weight_bias())


class _QuantizedOutput(nn.Module):
    """What quantized layers share: the scale and zero point of their output, saved as
    tensors in the state dict."""

    scale: float = 1.0
    zero_point: int = 0

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "scale"] = ember.tensor(self.scale)
        destination[prefix + "zero_point"] = ember.tensor(self.zero_point)

    def _load_from_state_dict(self, state_dict: dict, prefix: str, local_metadata: dict,
                              strict: bool, missing_keys: list, unexpected_keys: list,
                              error_msgs: list) -> None:
        for name, kind in (("scale", float), ("zero_point", int)):
            value = state_dict.pop(prefix + name, None)
            if value is None:
                missing_keys.append(prefix + name)
            else:
                setattr(self, name, kind(value))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict,
                                      missing_keys, unexpected_keys, error_msgs)


class Linear(_QuantizedOutput):
    r"""A quantized linear layer: quint8 input, qint8 weight (per tensor or per channel),
    float bias, quint8 output of ``scale`` and ``zero_point``.

    Args:
        in_features, out_features: the sizes, as :class:`ember.nn.Linear`'s.
        bias_ (bool): whether it has a bias.
        dtype: the weight's dtype (qint8).
    """

    _version = 3
    _FLOAT_MODULE: Any = nn.Linear
    _relu = False

    def __init__(self, in_features: int, out_features: int, bias_: bool = True,
                 dtype: Any = ember.qint8) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        bias = ember.zeros(out_features) if bias_ else None
        qweight = ember._make_per_tensor_quantized_tensor(
            ember.zeros(out_features, in_features, dtype=ember.int8), 1.0, 0)
        self._packed_params = LinearPackedParams(dtype)
        self._packed_params.set_weight_bias(qweight, bias)
        self.scale = 1.0
        self.zero_point = 0

    def _get_name(self) -> str:
        return "QuantizedLinear"

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"scale={self.scale}, zero_point={self.zero_point}, "
                f"qscheme={self.weight().qscheme()}")

    def __repr__(self) -> str:
        return _hide_packed_params_repr(self)

    def forward(self, x: Tensor) -> Tensor:
        return qF.linear(x, self.weight(), self.bias(), self.scale, self.zero_point,
                         relu=self._relu)

    def weight(self) -> Tensor:
        return self._packed_params._weight_bias()[0]

    def bias(self) -> Tensor | None:
        return self._packed_params._weight_bias()[1]

    def _weight_bias(self) -> tuple[Tensor, Tensor | None]:
        return self._packed_params._weight_bias()

    def set_weight_bias(self, w: Tensor, b: Tensor | None) -> None:
        self._packed_params.set_weight_bias(w, b)

    @classmethod
    def from_float(cls, mod: nn.Module, use_precomputed_fake_quant: bool = False) -> Linear:
        """The quantized layer of a float (or QAT) linear layer whose observers ran."""
        float_linear = mod[0] if isinstance(mod, nn.Sequential) else mod
        weight_post_process = getattr(mod, "weight_fake_quant", None)
        if weight_post_process is None:
            weight_post_process = mod.qconfig.weight()
            weight_post_process(float_linear.weight)
        act_scale, act_zp = mod.activation_post_process.calculate_qparams()
        qweight = _quantize_weight(float_linear.weight, weight_post_process)
        out = cls(float_linear.in_features, float_linear.out_features)
        out.set_weight_bias(qweight, float_linear.bias)
        out.scale, out.zero_point = float(act_scale), int(act_zp)
        return out


class Conv2d(_QuantizedOutput):
    r"""A quantized 2-D convolution: quint8 input, qint8 weight (per tensor or per output
    channel), float bias, quint8 output of ``scale`` and ``zero_point``. The arguments
    are :class:`ember.nn.Conv2d`'s."""

    _version = 3
    _relu = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride = _pair(kernel_size), _pair(stride)
        self.padding, self.dilation = _pair(padding), _pair(dilation)
        self.transposed, self.output_padding = False, _pair(0)
        self.groups, self.padding_mode = groups, padding_mode
        qweight = ember._make_per_tensor_quantized_tensor(ember.zeros(
            out_channels, in_channels // groups, *self.kernel_size, dtype=ember.int8), 1.0, 0)
        self.set_weight_bias(qweight, ember.zeros(out_channels) if bias else None)
        self.scale = 1.0
        self.zero_point = 0

    def _get_name(self) -> str:
        return "QuantizedConv2d"

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}, scale={self.scale}, zero_point={self.zero_point}")
        if self.padding != (0, 0):
            s += f", padding={self.padding}"
        if self.dilation != (1, 1):
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias() is None:
            s += ", bias=False"
        return s

    def set_weight_bias(self, w: Tensor, b: Tensor | None) -> None:
        self._weight_and_bias = (w, _float_bias(b))  # (a tuple: not registered)

    def weight(self) -> Tensor:
        return self._weight_and_bias[0]

    def bias(self) -> Tensor | None:
        return self._weight_and_bias[1]

    def _weight_bias(self) -> tuple[Tensor, Tensor | None]:
        return self._weight_and_bias

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim != 4:
            raise ValueError("Input shape must be `(N, C, H, W)`!")
        return qF.conv2d(input, self.weight(), self.bias(), self.stride, self.padding,
                         self.dilation, self.groups, self.padding_mode, self.scale,
                         self.zero_point, relu=self._relu)

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        destination[prefix + "weight"], destination[prefix + "bias"] = self._weight_and_bias
        super()._save_to_state_dict(destination, prefix, keep_vars)

    def _load_from_state_dict(self, state_dict: dict, prefix: str, local_metadata: dict,
                              strict: bool, missing_keys: list, unexpected_keys: list,
                              error_msgs: list) -> None:
        if prefix + "weight" in state_dict:
            self.set_weight_bias(state_dict.pop(prefix + "weight"),
                                 state_dict.pop(prefix + "bias", None))
        else:
            missing_keys.append(prefix + "weight")
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict,
                                      missing_keys, unexpected_keys, error_msgs)

    @classmethod
    def from_float(cls, mod: nn.Module, use_precomputed_fake_quant: bool = False) -> Conv2d:
        """The quantized convolution of a float (or QAT) one whose observers ran."""
        conv = mod[0] if isinstance(mod, nn.Sequential) else mod
        if hasattr(mod, "bn"):  # a QAT conv-bn: the norm folds into the weight and bias
            conv.weight, conv.bias = fuse_conv_bn_weights(
                mod.weight, mod.bias, mod.bn.running_mean, mod.bn.running_var, mod.bn.eps,
                mod.bn.weight, mod.bn.bias)
        weight_post_process = getattr(mod, "weight_fake_quant", None)
        if weight_post_process is None:
            weight_post_process = mod.qconfig.weight()
            weight_post_process(conv.weight)
        act_scale, act_zp = mod.activation_post_process.calculate_qparams()
        qweight = _quantize_weight(conv.weight, weight_post_process)
        out = cls(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride,
                  conv.padding, conv.dilation, conv.groups, conv.bias is not None,
                  conv.padding_mode)
        out.set_weight_bias(qweight, conv.bias)
        out.scale, out.zero_point = float(act_scale), int(act_zp)
        return out


class Quantize(nn.Module):
    r"""Quantizes float input with a fixed ``scale`` and ``zero_point`` (what a
    :class:`QuantStub` becomes)."""

    def __init__(self, scale: float, zero_point: int, dtype: Any, factory_kwargs: Any = None
                 ) -> None:
        super().__init__()
        self.register_buffer("scale", ember.tensor([scale]))
        self.register_buffer("zero_point", ember.tensor([zero_point], dtype=ember.long))
        self.dtype = dtype

    def forward(self, X: Tensor) -> Tensor:
        return ember.quantize_per_tensor(X, float(self.scale), int(self.zero_point),
                                         self.dtype)

    @staticmethod
    def from_float(mod: nn.Module, use_precomputed_fake_quant: bool = False) -> Quantize:
        scale, zero_point = mod.activation_post_process.calculate_qparams()
        return Quantize(float(scale), int(zero_point), mod.activation_post_process.dtype)

    def extra_repr(self) -> str:
        return f"scale={self.scale}, zero_point={self.zero_point}, dtype={self.dtype}"


class DeQuantize(nn.Module):
    r"""Dequantizes a quantized input to float32 (what a :class:`DeQuantStub` becomes)."""

    def forward(self, Xq: Tensor) -> Tensor:
        return Xq.dequantize()

    @staticmethod
    def from_float(mod: nn.Module, use_precomputed_fake_quant: bool = False) -> DeQuantize:
        return DeQuantize()


class FloatFunctional(nn.Module):
    r"""Float ``add``/``mul``/``cat``/``add_relu`` as a module, so an observer can watch
    their output (``convert`` makes it a :class:`QFunctional`)."""

    def __init__(self) -> None:
        super().__init__()
        self.activation_post_process = nn.Identity()

    def forward(self, x: Tensor) -> Tensor:
        raise RuntimeError("FloatFunctional is not intended to use the 'forward'. Please use "
                           "the underlying operation")

    def add(self, x: Tensor, y: Tensor) -> Tensor:
        return self.activation_post_process(ember.add(x, y))

    def add_scalar(self, x: Tensor, y: float) -> Tensor:
        return ember.add(x, y)

    def mul(self, x: Tensor, y: Tensor) -> Tensor:
        return self.activation_post_process(ember.mul(x, y))

    def mul_scalar(self, x: Tensor, y: float) -> Tensor:
        return ember.mul(x, y)

    def cat(self, x: list, dim: int = 0) -> Tensor:
        return self.activation_post_process(ember.cat(x, dim=dim))

    def add_relu(self, x: Tensor, y: Tensor) -> Tensor:
        return self.activation_post_process(ember.relu(ember.add(x, y)))


class QFunctional(nn.Module):
    r"""``add``/``mul``/``cat``/``add_relu`` of quantized tensors, requantized to the
    module's ``scale`` and ``zero_point``."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = 1.0
        self.zero_point = 0
        self.activation_post_process = nn.Identity()

    def _get_name(self) -> str:
        return "QFunctional"

    def extra_repr(self) -> str:
        return f"scale={self.scale}, zero_point={self.zero_point}"

    def forward(self, x: Tensor) -> Tensor:
        raise RuntimeError("Functional is not intended to use the 'forward'. Please use the "
                           "underlying operation")

    def _requantize(self, values: Tensor) -> Tensor:
        return ember.quantize_per_tensor(values, self.scale, self.zero_point, ember.quint8)

    def add(self, x: Tensor, y: Tensor) -> Tensor:
        return self._requantize(x.dequantize() + y.dequantize())

    def mul(self, x: Tensor, y: Tensor) -> Tensor:
        return self._requantize(x.dequantize() * y.dequantize())

    def cat(self, x: list, dim: int = 0) -> Tensor:
        return self._requantize(ember.cat([t.dequantize() for t in x], dim=dim))

    def add_relu(self, x: Tensor, y: Tensor) -> Tensor:
        return self._requantize(ember.relu(x.dequantize() + y.dequantize()))

    @classmethod
    def from_float(cls, mod: nn.Module, use_precomputed_fake_quant: bool = False
                   ) -> QFunctional:
        scale, zero_point = mod.activation_post_process.calculate_qparams()
        out = cls()
        out.scale, out.zero_point = float(scale), int(zero_point)
        return out
