"""Lazy modules: layers whose input size is inferred from their first input
(`nn.LazyLinear(10)` learns `in_features` at its first forward).

A lazy module starts with `UninitializedParameter`s (and `UninitializedBuffer`s) and a
forward pre-hook. The first call gives each its shape (`materialize`, in place, so an
optimizer built before it keeps working), runs the layer's own `reset_parameters`, drops
the hook and turns the module into its eager class (`LazyLinear` -> `Linear`), as PyTorch
does. A state dict with shapes materializes the module on `load_state_dict` too.
"""

from __future__ import annotations

import itertools
from typing import Any

import ember
from ember import Tensor
from ember.core.dtype import place_in
from ember.nn.modules import conv, linear
from ember.nn.modules.conv import (
    Conv1d,
    Conv2d,
    Conv3d,
    ConvTranspose1d,
    ConvTranspose2d,
    ConvTranspose3d,
)
from ember.nn.modules.linear import Linear
from ember.nn.modules.normalization import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
)
from ember.nn.parameter import UninitializedBuffer, UninitializedParameter, is_lazy

__all__ = ["LazyModuleMixin", "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d",
           "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d",
           "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d",
           "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


class LazyModuleMixin:
    r"""A mixin for modules that infer their parameters' shapes from their first input.

    Subclasses declare ``UninitializedParameter``/``UninitializedBuffer`` attributes,
    implement :meth:`initialize_parameters` (materialize them from the input) and name
    ``cls_to_become``, the class the module takes once every parameter has a shape.
    """

    cls_to_become: type | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._load_hook = self.register_load_state_dict_pre_hook(
            LazyModuleMixin._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(
            LazyModuleMixin._infer_parameters, with_kwargs=True)

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        # an uninitialized tensor is saved as itself (detaching would give a plain tensor)
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = (param if is_lazy(param) or keep_vars
                                              else param.detach())
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if is_lazy(buf) or keep_vars else buf.detach()

    def _lazy_load_hook(self, state_dict: dict, prefix: str, *args: Any) -> None:
        """Before loading: give uninitialized tensors the shapes of the loaded ones."""
        for name, param in itertools.chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if key in state_dict and param is not None and is_lazy(param):
                loaded = state_dict[key]
                if not is_lazy(loaded):
                    with ember.no_grad():
                        param.materialize(loaded.shape)

    def initialize_parameters(self, *args: Any, **kwargs: Any) -> None:
        r"""Give the parameters their shapes from the input batch."""
        raise NotImplementedError(f"initialize_parameters is not implemented for "
                                  f"{self.__class__.__name__}")

    def has_uninitialized_params(self) -> bool:
        r"""Whether any parameter or buffer of this module still lacks its shape."""
        return any(is_lazy(t) for t in itertools.chain(self._parameters.values(),
                                                       self._buffers.values()))

    def _infer_parameters(self, args: tuple, kwargs: dict | None = None) -> None:
        """The forward pre-hook: materialize from the first input, then become eager."""
        self.initialize_parameters(*args, **(kwargs or {}))
        if self.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        self._initialize_hook.remove()
        self._load_hook.remove()
        del self._initialize_hook, self._load_hook
        if self.cls_to_become is not None:
            self.__class__ = self.cls_to_become


class LazyLinear(LazyModuleMixin, Linear):
    r"""A :class:`Linear` whose ``in_features`` is inferred from ``input.shape[-1]`` at
    the first forward; the module then becomes a :class:`Linear`.

    Args:
        out_features: size of each output sample.
        bias: if ``False``, the layer learns no additive bias. Default: ``True``
    """

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        # (bias=False: no tensor made only to be replaced)
        super().__init__(0, 0, False, device=device, dtype=dtype)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor) -> None:
        if self.has_uninitialized_params():
            with ember.no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()


class _LazyConvMixin(LazyModuleMixin):
    _spatial_dims = 0

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor, *args: Any, **kwargs: Any) -> None:
        if not self.has_uninitialized_params():
            return
        unbatched = self._spatial_dims + 1
        if input.dim() not in (unbatched, unbatched + 1):
            raise RuntimeError(f"Expected {unbatched}D (unbatched) or {unbatched + 1}D "
                               f"(batched) input to {self.__class__.__name__}, but got input "
                               f"of size: {input.shape}")
        self.in_channels = input.shape[1] if input.dim() == unbatched + 1 else input.shape[0]
        if self.in_channels % self.groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if self.transposed:
            shape = (self.in_channels, self.out_channels // self.groups, *self.kernel_size)
        else:
            shape = (self.out_channels, self.in_channels // self.groups, *self.kernel_size)
        self.weight.materialize(shape)
        if self.bias is not None:
            self.bias.materialize((self.out_channels,))
        self.reset_parameters()

    def _make_lazy(self, out_channels: int, bias: bool, device: Any, dtype: Any) -> None:
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)


def _lazy_conv(base: type, dims: int) -> type:
    """`LazyConv{dims}d`: `base`'s signature without `in_channels`."""

    class LazyConv(_LazyConvMixin, base):
        cls_to_become = base
        _spatial_dims = dims

        def __init__(self, out_channels: int, kernel_size: Any, stride: Any = 1,
                     padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                     padding_mode: str = "zeros", device: Any = None,
                     dtype: Any = None) -> None:
            super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False,
                             padding_mode, device=device, dtype=dtype)
            self._make_lazy(out_channels, bias, device, dtype)

    return _named(LazyConv, f"LazyConv{dims}d", base)


def _lazy_conv_transpose(base: type, dims: int) -> type:
    """`LazyConvTranspose{dims}d`: `base`'s signature without `in_channels`."""

    class LazyConvTranspose(_LazyConvMixin, base):
        cls_to_become = base
        _spatial_dims = dims

        def __init__(self, out_channels: int, kernel_size: Any, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     bias: bool = True, dilation: Any = 1, padding_mode: str = "zeros",
                     device: Any = None, dtype: Any = None) -> None:
            super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups,
                             False, dilation, padding_mode, device=device, dtype=dtype)
            self._make_lazy(out_channels, bias, device, dtype)

    return _named(LazyConvTranspose, f"LazyConvTranspose{dims}d", base)


class _LazyNormMixin(LazyModuleMixin):
    def _make_lazy(self, affine: bool, track_running_stats: bool, bias: bool, device: Any,
                   dtype: Any) -> None:
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = ember.tensor(0, dtype=ember.int64, device=device)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor) -> None:
        if not self.has_uninitialized_params():
            return
        self.num_features = input.shape[1]
        for name in ("weight", "bias", "running_mean", "running_var"):
            tensor = getattr(self, name, None)
            if tensor is not None:
                tensor.materialize((self.num_features,))
        self.reset_parameters()


def _lazy_norm(base: type) -> type:
    """`Lazy{base}`: `base`'s signature without `num_features`."""

    class LazyNorm(_LazyNormMixin, base):
        cls_to_become = base

        def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1,
                     affine: bool = True, track_running_stats: bool = True,
                     device: Any = None, dtype: Any = None, *, bias: bool = True) -> None:
            # (affine and statistics off: no tensors made only to be replaced)
            super().__init__(0, eps, momentum, False, False, device, dtype, bias=False)
            self._make_lazy(affine, track_running_stats, bias, device, dtype)

    return _named(LazyNorm, f"Lazy{base.__name__}", base)


def _named(cls: type, name: str, base: type) -> type:
    cls.__name__ = cls.__qualname__ = name
    cls.__doc__ = (f"A :class:`{base.__name__}` whose input channels/features are inferred "
                   f"from its first input, which it then becomes.")
    return cls


LazyConv1d = _lazy_conv(Conv1d, 1)
LazyConv2d = _lazy_conv(Conv2d, 2)
LazyConv3d = _lazy_conv(Conv3d, 3)
LazyConvTranspose1d = _lazy_conv_transpose(ConvTranspose1d, 1)
LazyConvTranspose2d = _lazy_conv_transpose(ConvTranspose2d, 2)
LazyConvTranspose3d = _lazy_conv_transpose(ConvTranspose3d, 3)
LazyBatchNorm1d = _lazy_norm(BatchNorm1d)
LazyBatchNorm2d = _lazy_norm(BatchNorm2d)
LazyBatchNorm3d = _lazy_norm(BatchNorm3d)
LazyInstanceNorm1d = _lazy_norm(InstanceNorm1d)
LazyInstanceNorm2d = _lazy_norm(InstanceNorm2d)
LazyInstanceNorm3d = _lazy_norm(InstanceNorm3d)

# PyTorch defines the lazy convolutions and LazyLinear beside their eager classes
place_in(conv, LazyConv1d, LazyConv2d, LazyConv3d, LazyConvTranspose1d, LazyConvTranspose2d,
         LazyConvTranspose3d)
place_in(linear, LazyLinear)
