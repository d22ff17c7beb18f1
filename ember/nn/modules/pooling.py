"""Pooling layers: max, average, adaptive (average and max), power-average (LP),
fractional max pooling and max unpooling, over 1 to 3 spatial dims."""

from __future__ import annotations

from typing import Any

from ember import Tensor
from ember.nn import functional as F
from ember.nn.functional import _pair
from ember.nn.module import Module

__all__ = ["MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool1d",
           "AdaptiveAvgPool2d", "MaxPool3d", "AvgPool3d", "AdaptiveAvgPool3d",
           "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "MaxUnpool1d",
           "MaxUnpool2d", "MaxUnpool3d", "LPPool1d", "LPPool2d", "LPPool3d",
           "FractionalMaxPool2d", "FractionalMaxPool3d"]


class _MaxPoolNd(Module):
    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 dilation: Any = 1, return_indices: bool = False,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}, dilation={self.dilation}, "
                f"ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    r"""1-D max pooling over ``(N, C, L)`` or ``(C, L)`` input; ``stride`` defaults to
    ``kernel_size``; ``return_indices`` also returns the argmax positions."""

    def forward(self, input: Tensor) -> Any:
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding,
                            self.dilation, ceil_mode=self.ceil_mode,
                            return_indices=self.return_indices)


class MaxPool2d(_MaxPoolNd):
    r"""2-D max pooling over ``(N, C, H, W)`` or ``(C, H, W)`` input; ``stride``
    defaults to ``kernel_size``; ``return_indices`` also returns the argmax positions."""

    def forward(self, input: Tensor) -> Any:
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding,
                            self.dilation, ceil_mode=self.ceil_mode,
                            return_indices=self.return_indices)


class AvgPool1d(Module):
    r"""1-D average pooling over ``(N, C, L)`` or ``(C, L)`` input."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True) -> None:
        super().__init__()
        single = lambda v: tuple(v) if isinstance(v, (tuple, list)) else (v,)
        self.kernel_size = single(kernel_size)
        self.stride = single(stride if stride is not None else kernel_size)
        self.padding = single(padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding,
                            self.ceil_mode, self.count_include_pad)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}")


class AvgPool2d(Module):
    r"""2-D average pooling over ``(N, C, H, W)`` or ``(C, H, W)`` input.

    Args:
        count_include_pad: count the zero padding in the averaging divisor.
        divisor_override: divide by this instead of the window size.
    """

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override: int | None = None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding,
                            self.ceil_mode, self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}")


class AdaptiveAvgPool1d(Module):
    r"""1-D average pooling to a fixed output length."""

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool1d(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool2d(Module):
    r"""2-D average pooling to a fixed output size ``(H_out, W_out)`` (an int for a
    square; ``None`` keeps that input size)."""

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool2d(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


# -- 3-d pools, adaptive max, unpooling, power-average and fractional pooling (nnconv) --


class MaxPool3d(_MaxPoolNd):
    r"""3-D max pooling over ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input; ``stride``
    defaults to ``kernel_size``; ``return_indices`` also returns the argmax positions."""

    def forward(self, input: Tensor) -> Any:
        return F.max_pool3d(input, self.kernel_size, self.stride, self.padding,
                            self.dilation, ceil_mode=self.ceil_mode,
                            return_indices=self.return_indices)


class AvgPool3d(AvgPool2d):
    r"""3-D average pooling over ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input.

    Args:
        count_include_pad: count the zero padding in the averaging divisor.
        divisor_override: divide by this instead of the window size.
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool3d(input, self.kernel_size, self.stride, self.padding,
                            self.ceil_mode, self.count_include_pad, self.divisor_override)


class AdaptiveAvgPool3d(AdaptiveAvgPool2d):
    r"""3-D average pooling to a fixed output size ``(D_out, H_out, W_out)`` (an int for a
    cube; ``None`` keeps that input size)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool3d(input, self.output_size)


class _AdaptiveMaxPoolNd(Module):
    _fn = staticmethod(F.adaptive_max_pool1d)

    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def forward(self, input: Tensor) -> Any:
        return self._fn(input, self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    r"""1-D max pooling to a fixed output length; ``return_indices`` also returns the
    argmax positions."""

    _fn = staticmethod(F.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    r"""2-D max pooling to a fixed output size (``None`` keeps that input size);
    ``return_indices`` also returns the argmax positions."""

    _fn = staticmethod(F.adaptive_max_pool2d)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    r"""3-D max pooling to a fixed output size (``None`` keeps that input size);
    ``return_indices`` also returns the argmax positions."""

    _fn = staticmethod(F.adaptive_max_pool3d)


class _MaxUnpoolNd(Module):
    _n = 1

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0) -> None:
        super().__init__()
        self.kernel_size = _pair(kernel_size, self._n)
        self.stride = _pair(stride if stride is not None else kernel_size, self._n)
        self.padding = _pair(padding, self._n)

    def forward(self, input: Tensor, indices: Tensor, output_size: Any = None) -> Tensor:
        fn = (F.max_unpool1d, F.max_unpool2d, F.max_unpool3d)[self._n - 1]
        return fn(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    r"""The partial inverse of :class:`MaxPool1d`: ``forward(input, indices,
    output_size=None)`` places each value at its index, zeros elsewhere."""

    _n = 1


class MaxUnpool2d(_MaxUnpoolNd):
    r"""The partial inverse of :class:`MaxPool2d`: ``forward(input, indices,
    output_size=None)`` places each value at its index, zeros elsewhere."""

    _n = 2


class MaxUnpool3d(_MaxUnpoolNd):
    r"""The partial inverse of :class:`MaxPool3d`: ``forward(input, indices,
    output_size=None)`` places each value at its index, zeros elsewhere."""

    _n = 3


class _LPPoolNd(Module):
    _n = 1

    def __init__(self, norm_type: float, kernel_size: Any, stride: Any = None,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        fn = (F.lp_pool1d, F.lp_pool2d, F.lp_pool3d)[self._n - 1]
        return fn(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    r"""1-D power-average pooling: :math:`(\sum_{x \in window} x^p)^{1/p}`."""

    _n = 1


class LPPool2d(_LPPoolNd):
    r"""2-D power-average pooling: :math:`(\sum_{x \in window} x^p)^{1/p}`."""

    _n = 2


class LPPool3d(_LPPoolNd):
    r"""3-D power-average pooling: :math:`(\sum_{x \in window} x^p)^{1/p}`."""

    _n = 3


class _FractionalMaxPoolNd(Module):
    _n = 2

    def __init__(self, kernel_size: Any, output_size: Any = None, output_ratio: Any = None,
                 return_indices: bool = False, _random_samples: Tensor | None = None) -> None:
        super().__init__()
        name = type(self).__name__
        self.kernel_size = _pair(kernel_size, self._n)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = _pair(output_size, self._n) if output_size is not None else None
        self.output_ratio = _pair(output_ratio, self._n) if output_ratio is not None \
            else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a "
                             "pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and \
                not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input: Tensor) -> Any:
        fn = F.fractional_max_pool2d if self._n == 2 else F.fractional_max_pool3d
        return fn(input, self.kernel_size, self.output_size, self.output_ratio,
                  self.return_indices, _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    r"""2-D fractional max pooling (Graham, 2014): ``kernel_size`` windows at
    pseudo-random steps giving ``output_size`` (or ``output_ratio`` of the input's size);
    ``_random_samples`` ``(N, C, 2)`` fixes the steps."""

    _n = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    r"""3-D fractional max pooling; ``_random_samples`` ``(N, C, 3)`` fixes the steps."""

    _n = 3
