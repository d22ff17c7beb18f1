"""`ember.signal.windows`: PyTorch's `torch.signal.windows`, the SciPy-style window
functions (`sym=True`: symmetric, for filter design; `sym=False`: periodic, for spectral
analysis), computed as PyTorch's Python does: from a `linspace` of the window's
arguments, so the values round as its do. (`ember.hann_window` & co are the ATen
functions, whose `periodic` flag is the opposite sense of `sym`.)"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import ember
from ember.core.tensor import Tensor

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall"]


def _checked(name: str, M: int, dtype: Any, layout: Any) -> Any:
    """The window's dtype (the default one unless given) after PyTorch's checks."""
    dtype = dtype or ember.get_default_dtype()
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not ember.strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (ember.float32, ember.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")
    return dtype


def _trivial(M: int, dtype: Any, device: Any, requires_grad: bool) -> Tensor | None:
    """The empty window and the one-point window (1), which every window shares."""
    if M > 1:
        return None
    make = ember.empty if M == 0 else ember.ones
    return make((M,), dtype=dtype, device=device, requires_grad=requires_grad)


def _line(start: Any, end: Any, M: int, dtype: Any, device: Any,
          requires_grad: bool) -> Tensor:
    return ember.linspace(start, end, M, dtype=dtype, device=device,
                          requires_grad=requires_grad)


def exponential(M: int, *, center: float | None = None, tau: float = 1.0, sym: bool = True,
                dtype: Any = None, layout: Any = ember.strided, device: Any = None,
                requires_grad: bool = False) -> Tensor:
    r"""The exponential (Poisson) window :math:`w_n = e^{-|n - c| / \tau}`."""
    dtype = _checked("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return _trivial(M, dtype, device, requires_grad)
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    k = _line(-center / tau, (-center + (M - 1)) / tau, M, dtype, device, requires_grad)
    return ember.exp(-ember.abs(k))


def cosine(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = ember.strided,
           device: Any = None, requires_grad: bool = False) -> Tensor:
    r"""The cosine (sine) window :math:`w_n = \sin(\pi (n + 0.5) / M)`."""
    dtype = _checked("cosine", M, dtype, layout)
    if M == 0:
        return _trivial(M, dtype, device, requires_grad)
    constant = math.pi / (M + 1 if not sym and M > 1 else M)
    k = _line(0.5 * constant, (0.5 + (M - 1)) * constant, M, dtype, device, requires_grad)
    return ember.sin(k)


def gaussian(M: int, *, std: float = 1.0, sym: bool = True, dtype: Any = None,
             layout: Any = ember.strided, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    r"""The Gaussian window :math:`w_n = e^{-(n / 2\sigma)^2}` about the centre."""
    dtype = _checked("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return _trivial(M, dtype, device, requires_grad)
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    constant = 1 / (std * math.sqrt(2))
    k = _line(start * constant, (start + (M - 1)) * constant, M, dtype, device, requires_grad)
    return ember.exp(-(k ** 2))


def kaiser(M: int, *, beta: float = 12.0, sym: bool = True, dtype: Any = None,
           layout: Any = ember.strided, device: Any = None,
           requires_grad: bool = False) -> Tensor:
    r"""The Kaiser window :math:`w_n = I_0(\beta \sqrt{1 - (2n / N - 1)^2}) / I_0(\beta)`."""
    dtype = _checked("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    beta_ = ember.tensor(beta, dtype=dtype, device=device)  # (no NaN from rounding)
    start = -beta_
    end = ember.minimum(beta_, start + (M - 1) * (2.0 * beta_ / (M if not sym else M - 1)))
    k = _line(start, end, M, dtype, device, requires_grad)
    return ember.i0(ember.sqrt(beta_ * beta_ - ember.pow(k, 2))) / ember.i0(beta_)


def general_cosine(M: int, *, a: Iterable, sym: bool = True, dtype: Any = None,
                   layout: Any = ember.strided, device: Any = None,
                   requires_grad: bool = False) -> Tensor:
    r"""The generalised cosine window :math:`w_n = \sum_i (-1)^i a_i \cos(2 \pi i n / N)`."""
    dtype = _checked("general_cosine", M, dtype, layout)
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    constant = 2 * math.pi / (M if not sym else M - 1)
    k = _line(0, (M - 1) * constant, M, dtype, device, requires_grad)
    a_i = ember.tensor([(-1) ** i * w for i, w in enumerate(a)], dtype=dtype, device=device,
                       requires_grad=requires_grad)
    i = ember.arange(a_i.shape[0], dtype=dtype, device=device, requires_grad=requires_grad)
    return (a_i.unsqueeze(-1) * ember.cos(i.unsqueeze(-1) * k)).sum(0)


def general_hamming(M: int, *, alpha: float = 0.54, sym: bool = True, dtype: Any = None,
                    layout: Any = ember.strided, device: Any = None,
                    requires_grad: bool = False) -> Tensor:
    r"""The generalised Hamming window :math:`w_n = \alpha - (1 - \alpha) \cos(2\pi n / N)`."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def hamming(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = ember.strided,
            device: Any = None, requires_grad: bool = False) -> Tensor:
    """The Hamming window: `general_hamming` with alpha 0.54."""
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def hann(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = ember.strided,
         device: Any = None, requires_grad: bool = False) -> Tensor:
    """The Hann window: `general_hamming` with alpha 0.5."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = ember.strided,
             device: Any = None, requires_grad: bool = False) -> Tensor:
    """The Blackman window: `general_cosine` with a = (0.42, 0.5, 0.08)."""
    dtype = _checked("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def bartlett(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = ember.strided,
             device: Any = None, requires_grad: bool = False) -> Tensor:
    r"""The Bartlett (triangular) window :math:`w_n = 1 - |2n / N - 1|`."""
    dtype = _checked("bartlett", M, dtype, layout)
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    constant = 2 / (M if not sym else M - 1)
    k = _line(-1, -1 + (M - 1) * constant, M, dtype, device, requires_grad)
    return 1 - ember.abs(k)


def nuttall(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = ember.strided,
            device: Any = None, requires_grad: bool = False) -> Tensor:
    """Nuttall's minimum 4-term Blackman-Harris window."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym,
                          dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)
