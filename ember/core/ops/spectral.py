"""Spectral ops: the short-time Fourier transform (`stft`) of real signals, and its
inverse (`istft`).

ember has no complex dtypes, so `stft` gives PyTorch's real view of its result: the
real and imaginary parts in a last dimension of size 2 (`return_complex=False`, which
PyTorch still accepts, with a deprecation warning). The transform is a DFT written as
two matrix products (cosines and sines, built once per call in float64), so it runs
on every backend, differentiably. `istft` takes only the complex tensors PyTorch's
`stft(return_complex=True)` returns, which ember cannot hold: it raises as PyTorch
raises for a real input.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ember.core import costs
from ember.core.creation import ones, tensor
from ember.core.declare import composite
from ember.core.ops.nn import constant_pad_nd
from ember.core.ops.shape import cat, stack
from ember.core.tensor import Tensor

_DEPRECATED = ("stft with return_complex=False is deprecated. In a future pytorch release, "
               "stft will return complex tensors for all inputs, and return_complex=False "
               "will raise an error.\nNote: you can still call torch.view_as_real on the "
               "complex output to recover the old return format.")


def _pad_signal(x: Tensor, pad: int, mode: str) -> Tensor:
    """`x` (..., L) with `pad` samples added at both ends, as `F.pad(mode)` adds them."""
    n = x.shape[-1]
    if mode == "constant":
        return constant_pad_nd(x, (pad, pad))
    if mode == "reflect":
        if pad >= n:
            raise RuntimeError(f"stft: reflect padding of {pad} needs a signal longer than "
                               f"{pad} samples, got {n} (Padding size should be less than the "
                               f"corresponding input dimension)")
        left, right = x[..., 1:pad + 1].flip(-1), x[..., n - pad - 1:n - 1].flip(-1)
    elif mode == "replicate":
        shape = tuple(x.shape[:-1]) + (pad,)
        left, right = x[..., :1].expand(shape), x[..., n - 1:].expand(shape)
    elif mode == "circular":
        if pad > n:
            raise RuntimeError(f"stft: circular padding of {pad} needs at least {pad} samples, "
                               f"got {n}")
        left, right = x[..., n - pad:], x[..., :pad]
    else:
        raise NotImplementedError(f"stft: unsupported pad_mode {mode!r} (expected 'constant', "
                                  f"'reflect', 'replicate' or 'circular')")
    return cat([left, x, right], -1)


def _dft_matrices(n_fft: int, n_freq: int, like: Tensor) -> tuple[Tensor, Tensor]:
    """cos(2 pi k n / N) and -sin(2 pi k n / N), (n_fft, n_freq), in `like`'s dtype. The
    angle is reduced modulo N first, and the twiddles that are exactly 0 (a quarter turn)
    are written as 0, as an FFT's are: else cos(pi / 2) ~ 6e-17 would bring a huge
    sample's rounding into frequencies it does not reach."""
    turns = np.outer(np.arange(n_fft), np.arange(n_freq)) % n_fft
    angle = 2.0 * np.pi * turns / n_fft
    cos, sin = np.cos(angle), -np.sin(angle)
    cos[np.abs(cos) < 1e-12] = 0.0
    sin[np.abs(sin) < 1e-12] = 0.0
    make = lambda a: tensor(a, dtype=like.dtype, device=like.device)  # noqa: E731
    return make(cos), make(sin)


@composite(variants="function method", cost=costs.matmul)
def stft(input: Tensor, n_fft: int, hop_length: int | None = None,
         win_length: int | None = None, window: Tensor | None = None, center: bool = True,
         pad_mode: str = "reflect", normalized: bool = False, onesided: bool | None = None,
         return_complex: bool | None = None, align_to_window: bool | None = None) -> Tensor:
    """The short-time Fourier transform of a real signal (L,) or batch (B, L): each frame
    of `n_fft` samples, `hop_length` apart, times `window`, transformed. Returns PyTorch's
    real view, (B?, n_fft // 2 + 1 (or n_fft if not onesided), frames, 2) with the real
    and imaginary parts last; `return_complex=False` is required (ember has no complex
    dtypes), and warns as PyTorch does."""
    if return_complex is None:
        raise RuntimeError("stft requires the return_complex parameter be given for real "
                           "inputs, and will further require that return_complex=True in a "
                           "future PyTorch release.")
    if return_complex:
        raise RuntimeError("stft: return_complex=True returns a complex tensor, and ember has "
                           "no complex dtypes: pass return_complex=False for PyTorch's real "
                           "view (the real and imaginary parts in a last dimension of size 2)")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"stft: expected a tensor of floating point values, got "
                           f"{input.dtype}")
    if input.ndim not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got {input.ndim}D")
    if align_to_window and center:
        raise RuntimeError("stft: align_to_window should only be set when center = false")
    if align_to_window:
        raise NotImplementedError("stft: align_to_window=True is not supported")
    warnings.warn(_DEPRECATED, UserWarning, stacklevel=3)
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    x = input if input.ndim == 2 else input.reshape(1, -1)
    if center:
        x = _pad_signal(x, n_fft // 2, pad_mode)
    length = x.shape[-1]
    if not 0 < n_fft <= length:
        raise RuntimeError(f"stft: expected 0 < n_fft <= {length}, but got n_fft={n_fft}")
    if hop <= 0:
        raise RuntimeError(f"stft: expected hop_length > 0, but got hop_length={hop}")
    if not 0 < win <= n_fft:
        raise RuntimeError(f"stft: expected 0 < win_length <= n_fft, but got "
                           f"win_length={win}")
    if window is None:
        window = ones(win, dtype=input.dtype, device=input.device)
    elif window.ndim != 1 or window.shape[0] != win:
        raise RuntimeError(f"stft: expected a 1D window tensor of size equal to win_length="
                           f"{win}, but got window with size {list(window.shape)}")
    if win < n_fft:  # centred in the frame, as PyTorch places a shorter window
        left = (n_fft - win) // 2
        window = constant_pad_nd(window, (left, n_fft - win - left))
    frames = x.unfold(-1, n_fft, hop) * window  # (B, frames, n_fft)
    n_freq = n_fft // 2 + 1 if onesided is None or onesided else n_fft
    cos, sin = _dft_matrices(n_fft, n_freq, frames)
    out = stack([frames @ cos, frames @ sin], -1).transpose(1, 2)  # (B, n_freq, frames, 2)
    if normalized:
        out = out * (1.0 / math.sqrt(n_fft))
    return out if input.ndim == 2 else out.squeeze(0)


@composite(variants="function method", cost=costs.matmul)
def istft(input: Tensor, n_fft: int, hop_length: int | None = None,
          win_length: int | None = None, window: Tensor | None = None, center: bool = True,
          normalized: bool = False, onesided: bool | None = None, length: int | None = None,
          return_complex: bool = False) -> Tensor:
    """The inverse of `stft` in PyTorch, which takes only the complex tensor
    `stft(return_complex=True)` returns. ember has no complex dtypes, so every input is
    real, and this raises PyTorch's error for a real input."""
    raise RuntimeError("istft requires a complex-valued input tensor matching the output "
                       "from stft with return_complex=True. (ember has no complex dtypes.)")
