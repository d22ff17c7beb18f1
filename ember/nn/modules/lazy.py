"""Lazy modules, as PyTorch's: `LazyLinear`, `LazyConv1d/2d/3d`,
`LazyConvTranspose1d/2d/3d`, `LazyBatchNorm1d/2d/3d`, `LazyInstanceNorm1d/2d/3d` infer
their input size at the first forward, then become the regular module.

A lazy module starts with `UninitializedParameter`s (and `UninitializedBuffer`s); a
forward pre-hook reads the first input's size, materializes them in place (so an
optimizer made before holds the real parameters), runs `reset_parameters` (drawing the
same random numbers the regular module's constructor would), removes itself and swaps
the module's class for `cls_to_become`. Loading a state dict into a lazy module
materializes its parameters to the checkpoint's shapes first.
"""

from __future__ import annotations

import itertools
from typing import Any

import ember
from ember import Tensor
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
    r"""A mixin for modules whose parameters' shapes come from their first input.

    A subclass defines ``initialize_parameters(*args, **kwargs)`` (materialize every
    uninitialized parameter and buffer from the input) and ``cls_to_become`` (the class
    it turns into once initialized; None to keep its own).
    """

    cls_to_become: type | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._load_hook = self.register_load_state_dict_pre_hook(
            LazyModuleMixin._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(
            LazyModuleMixin._infer_parameters, with_kwargs=True)

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        # an uninitialized tensor is saved as it is (detach would lose what it is)
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if is_lazy(param) or keep_vars \
                    else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if is_lazy(buf) or keep_vars \
                    else buf.detach()

    def _lazy_load_hook(self, state_dict: dict, prefix: str, *args: Any) -> None:
        """Materialize the uninitialized tensors that the checkpoint has real values
        for, to its shapes, so the load can copy them."""
        for name, param in itertools.chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if key in state_dict and param is not None and is_lazy(param):
                given = state_dict[key]
                if isinstance(given, Tensor) and not is_lazy(given):
                    param.materialize(given.shape)

    def initialize_parameters(self, *args: Any, **kwargs: Any) -> None:
        r"""Materialize the parameters from the first input (defined by each module)."""
        raise NotImplementedError(f"initialize_parameters is not implemented for "
                                  f"{self.__class__.__name__}")

    def has_uninitialized_params(self) -> bool:
        r"""Whether any parameter or buffer is still uninitialized."""
        return any(is_lazy(t) for t in itertools.chain(self._parameters.values(),
                                                       self._buffers.values()))

    def _infer_parameters(self, args: tuple, kwargs: dict | None = None) -> None:
        """The forward pre-hook: initialize, then become `cls_to_become`."""
        self.initialize_parameters(*args, **(kwargs or {}))
        if self.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        self._initialize_hook.remove()
        self._load_hook.remove()
        del self._initialize_hook
        del self._load_hook
        if self.cls_to_become is not None:
            self.__class__ = self.cls_to_become


class LazyLinear(LazyModuleMixin, Linear):
    r"""A :class:`Linear` whose ``in_features`` is inferred from the first input
    (``input.shape[-1]``); it becomes a :class:`Linear` then.

    Args:
        out_features: size of each output sample.
        bias: if ``False``, the layer learns no additive bias. Default: ``True``
    """

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(0, 0, False)  # no bias: it would be replaced at once
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor, *args: Any, **kwargs: Any) -> None:
        if self.has_uninitialized_params():
            self.in_features = input.shape[-1]
            self.weight.materialize((self.out_features, self.in_features))
            if self.bias is not None:
                self.bias.materialize((self.out_features,))
            self.reset_parameters()


class _LazyConvXdMixin(LazyModuleMixin):
    _spatial_dims = 0

    def __init__(self, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False,
                         padding_mode)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor, *args: Any, **kwargs: Any) -> None:
        if not self.has_uninitialized_params():
            return
        batched = self._spatial_dims + 2
        if input.dim() not in (batched - 1, batched):
            raise RuntimeError(f"Expected {batched - 1}D (unbatched) or {batched}D (batched) "
                               f"input to {self.__class__.__name__}, but got input of size: "
                               f"{input.shape}")
        self.in_channels = input.shape[1] if input.dim() == batched else input.shape[0]
        if self.in_channels % self.groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if self.transposed:
            self.weight.materialize((self.in_channels, self.out_channels // self.groups,
                                     *self.kernel_size))
        else:
            self.weight.materialize((self.out_channels, self.in_channels // self.groups,
                                     *self.kernel_size))
        if self.bias is not None:
            self.bias.materialize((self.out_channels,))
        self.reset_parameters()


class _LazyConvTransposeXdMixin(_LazyConvXdMixin):
    def __init__(self, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                 bias: bool = True, dilation: Any = 1, padding_mode: str = "zeros",
                 device: Any = None, dtype: Any = None) -> None:
        LazyModuleMixin.__init__(self, 0, 0, kernel_size, stride, padding, output_padding,
                                 groups, False, dilation, padding_mode)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)


def _lazy(base: type, mixin: type, **fields: Any) -> type:
    """Lazy<base>: `base` whose input size is inferred from the first input."""
    doc = (f"A :class:`{base.__name__}` whose input size (features or channels) is "
           f"inferred from the first input; it becomes a :class:`{base.__name__}` then.")
    return type("Lazy" + base.__name__, (mixin, base), {
        "cls_to_become": base, "__doc__": doc, "__module__": __name__, **fields})


class _LazyNormBase(LazyModuleMixin):
    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(0, eps, momentum, False, False, device, dtype)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if self.affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            self.bias = UninitializedParameter(device=device, dtype=dtype)
        if self.track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = ember.tensor(0, dtype=ember.int64, device=device)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor, *args: Any, **kwargs: Any) -> None:
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]
            if self.affine:
                self.weight.materialize((self.num_features,))
                self.bias.materialize((self.num_features,))
            if self.track_running_stats:
                self.running_mean.materialize((self.num_features,))
                self.running_var.materialize((self.num_features,))
            self.reset_parameters()


LazyConv1d = _lazy(Conv1d, _LazyConvXdMixin, _spatial_dims=1)
LazyConv2d = _lazy(Conv2d, _LazyConvXdMixin, _spatial_dims=2)
LazyConv3d = _lazy(Conv3d, _LazyConvXdMixin, _spatial_dims=3)
LazyConvTranspose1d = _lazy(ConvTranspose1d, _LazyConvTransposeXdMixin, _spatial_dims=1)
LazyConvTranspose2d = _lazy(ConvTranspose2d, _LazyConvTransposeXdMixin, _spatial_dims=2)
LazyConvTranspose3d = _lazy(ConvTranspose3d, _LazyConvTransposeXdMixin, _spatial_dims=3)
LazyBatchNorm1d = _lazy(BatchNorm1d, _LazyNormBase)
LazyBatchNorm2d = _lazy(BatchNorm2d, _LazyNormBase)
LazyBatchNorm3d = _lazy(BatchNorm3d, _LazyNormBase)
LazyInstanceNorm1d = _lazy(InstanceNorm1d, _LazyNormBase)
LazyInstanceNorm2d = _lazy(InstanceNorm2d, _LazyNormBase)
LazyInstanceNorm3d = _lazy(InstanceNorm3d, _LazyNormBase)
