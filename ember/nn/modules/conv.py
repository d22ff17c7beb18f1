"""Convolution layers: `Conv1d/2d/3d`, `ConvTranspose1d/2d/3d`."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import ember
from ember import Tensor
from ember.nn import functional as F
from ember.nn import init
from ember.nn.module import Module
from ember.nn.parameter import Parameter

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
           "ConvTranspose3d"]


def _ntuple(v: Any, n: int) -> tuple:
    # PyTorch's _ntuple: any iterable as its tuple (a string too: ConvTranspose2d's
    # padding='same' becomes ('s', 'a', 'm', 'e'), as in PyTorch)
    if isinstance(v, Iterable):
        return tuple(v)
    return (v,) * n


def _reverse_repeat_tuple(t: Sequence[int], n: int) -> tuple:
    """(1, 2) -> (2, 2, 1, 1): the F.pad order (last dimension first)."""
    return tuple(x for x in reversed(t) for _ in range(n))


class _ConvNd(Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: tuple,
                 stride: tuple, padding: str | tuple, dilation: tuple, transposed: bool,
                 output_padding: tuple, groups: int, bias: bool, padding_mode: str,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        valid_strings = {"same", "valid"}
        if isinstance(padding, str):
            if padding not in valid_strings:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 f"{valid_strings}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        valid_modes = {"zeros", "reflect", "replicate", "circular"}
        if padding_mode not in valid_modes:
            raise ValueError(f"padding_mode must be one of {valid_modes}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = output_padding
        self.groups = groups
        self.padding_mode = padding_mode
        # the explicit F.pad amounts used by the non-zero padding modes
        if isinstance(padding, str):
            pads = [0, 0] * len(kernel_size)
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size, range(len(kernel_size) - 1, -1, -1)):
                    total = d * (k - 1)
                    pads[2 * i] = total // 2
                    pads[2 * i + 1] = total - total // 2
            self._reversed_padding_repeated_twice = pads
        else:
            self._reversed_padding_repeated_twice = list(_reverse_repeat_tuple(padding, 2))
        if transposed:
            shape = (in_channels, out_channels // groups, *kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *kernel_size)
        self.weight = Parameter(ember.empty(shape, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(ember.empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        r"""kaiming_uniform_(a=sqrt(5)) weight and U(-1/sqrt(fan_in), 1/sqrt(fan_in))
        bias, as torch initialises them."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * len(self.padding):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv1d(_ConvNd):
    r"""1-D convolution over ``(N, C_in, L)`` (or unbatched ``(C_in, L)``) input.

    Args:
        in_channels, out_channels: channel counts.
        kernel_size, stride, dilation: ints or 1-tuples.
        padding: int, 1-tuple, ``'valid'`` or ``'same'``.
        groups: blocked connections from input to output channels.
        bias: learn an additive bias. Default: ``True``
        padding_mode: ``'zeros'``, ``'reflect'``, ``'replicate'`` or ``'circular'``.

    Attributes:
        weight: ``(out_channels, in_channels/groups, kernel_size)``.
        bias: ``(out_channels)``.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any,
                 stride: Any = 1, padding: Any = 0, dilation: Any = 1, groups: int = 1,
                 bias: bool = True, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, _ntuple(kernel_size, 1),
                         _ntuple(stride, 1),
                         padding if isinstance(padding, str) else _ntuple(padding, 1),
                         _ntuple(dilation, 1), False, (0,), groups, bias, padding_mode,
                         device, dtype)

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        if self.padding_mode != "zeros":
            return F.conv1d(F.pad(input, self._reversed_padding_repeated_twice,
                                  mode=self.padding_mode),
                            weight, bias, self.stride, (0,), self.dilation, self.groups)
        return F.conv1d(input, weight, bias, self.stride, self.padding, self.dilation,
                        self.groups)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)


class Conv2d(_ConvNd):
    r"""2-D convolution over ``(N, C_in, H, W)`` (or unbatched ``(C_in, H, W)``) input.

    Args:
        in_channels, out_channels: channel counts.
        kernel_size, stride, dilation: ints or pairs.
        padding: int, pair, ``'valid'`` or ``'same'``.
        groups: blocked connections from input to output channels.
        bias: learn an additive bias. Default: ``True``
        padding_mode: ``'zeros'``, ``'reflect'``, ``'replicate'`` or ``'circular'``.

    Attributes:
        weight: ``(out_channels, in_channels/groups, kH, kW)``, kaiming_uniform_(a=sqrt(5)).
        bias: ``(out_channels)``, :math:`\mathcal{U}(-1/\sqrt{fan\_in}, 1/\sqrt{fan\_in})`.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any,
                 stride: Any = 1, padding: Any = 0, dilation: Any = 1, groups: int = 1,
                 bias: bool = True, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, _ntuple(kernel_size, 2),
                         _ntuple(stride, 2),
                         padding if isinstance(padding, str) else _ntuple(padding, 2),
                         _ntuple(dilation, 2), False, (0, 0), groups, bias, padding_mode,
                         device, dtype)

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        if self.padding_mode != "zeros":
            return F.conv2d(F.pad(input, self._reversed_padding_repeated_twice,
                                  mode=self.padding_mode),
                            weight, bias, self.stride, (0, 0), self.dilation, self.groups)
        return F.conv2d(input, weight, bias, self.stride, self.padding, self.dilation,
                        self.groups)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)


class Conv3d(_ConvNd):
    r"""3-D convolution over ``(N, C_in, D, H, W)`` (or unbatched ``(C_in, D, H, W)``) input.

    Args:
        in_channels, out_channels: channel counts.
        kernel_size, stride, dilation: ints or triples.
        padding: int, triple, ``'valid'`` or ``'same'``.
        groups: blocked connections from input to output channels.
        bias: learn an additive bias. Default: ``True``
        padding_mode: ``'zeros'``, ``'reflect'``, ``'replicate'`` or ``'circular'``.

    Attributes:
        weight: ``(out_channels, in_channels/groups, kD, kH, kW)``.
        bias: ``(out_channels)``.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any,
                 stride: Any = 1, padding: Any = 0, dilation: Any = 1, groups: int = 1,
                 bias: bool = True, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, _ntuple(kernel_size, 3),
                         _ntuple(stride, 3),
                         padding if isinstance(padding, str) else _ntuple(padding, 3),
                         _ntuple(dilation, 3), False, (0, 0, 0), groups, bias, padding_mode,
                         device, dtype)

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        if self.padding_mode != "zeros":
            return F.conv3d(F.pad(input, self._reversed_padding_repeated_twice,
                                  mode=self.padding_mode),
                            weight, bias, self.stride, (0, 0, 0), self.dilation, self.groups)
        return F.conv3d(input, weight, bias, self.stride, self.padding, self.dilation,
                        self.groups)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)


class _ConvTransposeNd(_ConvNd):
    _n = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any,
                 stride: Any = 1, padding: Any = 0, output_padding: Any = 0,
                 groups: int = 1, bias: bool = True, dilation: Any = 1,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f"{self.__class__.__name__}")
        n = self._n
        super().__init__(in_channels, out_channels, _ntuple(kernel_size, n),
                         _ntuple(stride, n), _ntuple(padding, n), _ntuple(dilation, n), True,
                         _ntuple(output_padding, n), groups, bias, padding_mode, device,
                         dtype)

    def _output_padding(self, input: Tensor, output_size: Sequence[int] | None) -> tuple:
        if output_size is None:
            return self.output_padding
        spatial = self._n
        non_spatial = 2 if input.ndim == spatial + 2 else 1
        output_size = list(output_size)
        if len(output_size) == non_spatial + spatial:
            output_size = output_size[non_spatial:]
        if len(output_size) != spatial:
            raise ValueError(f"ConvTranspose{spatial}D: for {input.ndim}D input, output_size "
                             f"must have {spatial} or {non_spatial + spatial} elements (got "
                             f"{len(output_size)})")
        min_sizes, max_sizes = [], []
        for d in range(spatial):
            size = ((input.shape[d + non_spatial] - 1) * self.stride[d] - 2 * self.padding[d]
                    + self.dilation[d] * (self.kernel_size[d] - 1) + 1)
            min_sizes.append(size)
            max_sizes.append(size + self.stride[d] - 1)
        for i, size in enumerate(output_size):
            if size < min_sizes[i] or size > max_sizes[i]:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes "
                                 f"range from {min_sizes} to {max_sizes} (for an input of "
                                 f"{input.shape[non_spatial:]})")
        return tuple(output_size[d] - min_sizes[d] for d in range(spatial))

    def forward(self, input: Tensor, output_size: Sequence[int] | None = None) -> Tensor:
        output_padding = self._output_padding(input, output_size)
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[self._n - 1]
        return fn(input, self.weight, self.bias, self.stride, self.padding, output_padding,
                  self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    r"""1-D transposed convolution (the gradient of Conv1d with respect to its input).

    Args:
        in_channels, out_channels: channel counts.
        kernel_size, stride, padding, output_padding, dilation: ints or 1-tuples.
        groups: blocked connections. bias: learn an additive bias.

    Attributes:
        weight: ``(in_channels, out_channels/groups, kW)``.

    ``forward(input, output_size=None)``: ``output_size`` picks the output padding that
    gives that length.
    """

    _n = 1


class ConvTranspose2d(_ConvTransposeNd):
    r"""2-D transposed convolution (the gradient of Conv2d with respect to its input).

    Args:
        in_channels, out_channels: channel counts.
        kernel_size, stride, padding, output_padding, dilation: ints or pairs.
        groups: blocked connections. bias: learn an additive bias.

    Attributes:
        weight: ``(in_channels, out_channels/groups, kH, kW)``.

    ``forward(input, output_size=None)``: ``output_size`` picks the output padding that
    gives that spatial size.
    """

    _n = 2


class ConvTranspose3d(_ConvTransposeNd):
    r"""3-D transposed convolution (the gradient of Conv3d with respect to its input).

    Args:
        in_channels, out_channels: channel counts.
        kernel_size, stride, padding, output_padding, dilation: ints or triples.
        groups: blocked connections. bias: learn an additive bias.

    Attributes:
        weight: ``(in_channels, out_channels/groups, kD, kH, kW)``.

    ``forward(input, output_size=None)``: ``output_size`` picks the output padding that
    gives that spatial size.
    """

    _n = 3
