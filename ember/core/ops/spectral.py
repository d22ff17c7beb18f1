"""Spectral ops: the short-time Fourier transform (`stft`), and its inverse (`istft`).

`stft(return_complex=True)` frames the signal, windows each frame and transforms it with
ember.fft (a complex result); `return_complex=False` (which PyTorch still accepts, with a
deprecation warning) gives PyTorch's real view, the real and imaginary parts in a last
dimension of size 2, as a DFT written as two matrix products (cosines and sines, built
once per call in float64), so it runs on every backend, complex dtypes or not. `istft`
inverts the complex form: an inverse FFT of each frame, windowed, overlap-added (`fold`)
and divided by the window's summed square. All of it is differentiable.
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ember.core import costs
from ember.core import dtype as dt
from ember.core.creation import arange, full, ones, tensor
from ember.core.declare import composite
from ember.core.errors import as_overload_check, invalid_combination, warn_once
from ember.core.host import dtype_arg
from ember.core.opdef import Precision as P
from ember.core.ops import fft
from ember.core.ops.complex import real, view_as_real
from ember.core.ops.elementwise_math import i0
from ember.core.ops.nn import col2im, constant_pad_nd
from ember.core.ops.shape import cat, stack
from ember.core.storage import cpp_type_name
from ember.core.tensor import Tensor

_DEPRECATED = ("stft with return_complex=False is deprecated. In a future pytorch release, "
               "stft will return complex tensors for all inputs, and return_complex=False "
               "will raise an error.\nNote: you can still call torch.view_as_real on the "
               "complex output to recover the old return format.")


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


def _real_stft(frames: Tensor, n_fft: int, onesided: bool | None, normalized: bool
               ) -> Tensor:
    """The real view of a real signal's transform as two matmuls with the DFT's cosines
    and sines: for devices that hold no complex dtype (OpenCL, a vendor's), where the
    FFT's complex result cannot live. (B, n_freq, frames, 2)."""
    n_freq = n_fft // 2 + 1 if onesided is None or onesided else n_fft
    cos, sin = _dft_matrices(n_fft, n_freq, frames)
    out = stack([frames @ cos, frames @ sin], -1).transpose(1, 2)
    return out * (1.0 / math.sqrt(n_fft)) if normalized else out


def _pad_signal(x: Tensor, pad: int, mode: str) -> Tensor:
    """`x` (..., L) with `pad` samples added at both ends, as `F.pad(mode)` adds them."""
    n = x.shape[-1]
    if mode == "constant":
        return constant_pad_nd(x, (pad, pad))
    if mode == "reflect":
        if pad >= n:  # (F.pad's words: PyTorch pads the signal viewed as (1, B, L))
            shown = [1, x.shape[0] if x.ndim == 2 else 1, n]
            raise RuntimeError(f"Argument #4: Padding size should be less than the "
                               f"corresponding input dimension, but got: padding ({pad}, "
                               f"{pad}) at dimension 2 of input {shown}")
        left, right = x[..., 1:pad + 1].flip(-1), x[..., n - pad - 1:n - 1].flip(-1)
    elif mode == "replicate":
        shape = tuple(x.shape[:-1]) + (pad,)
        left, right = x[..., :1].expand(shape), x[..., n - 1:].expand(shape)
    elif mode == "circular":
        if pad > n:
            raise RuntimeError("Padding value causes wrapping around more than once.")
        left, right = x[..., n - pad:], x[..., :pad]
    else:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    return cat([left, x, right], -1)


# the dtypes with a legacy tensor type (`torch.FloatTensor`), which Tensor::toString prints;
# the others print their dispatch key and scalar type (`CPUBoolType`, `CPUComplexFloatType`)
_LEGACY_TYPES = frozenset({"float32", "float64", "float16", "uint8", "int8", "int16", "int32",
                           "int64"})


def _tensor_string(t: Tensor) -> str:
    """PyTorch's C++ Tensor::toString(), as its stft/istft errors print a tensor."""
    if t.dtype.name in _LEGACY_TYPES:
        return t.type_name()
    return f"{t.device.type.upper()}{dt.SCALAR_TYPE_NAMES[t.dtype.name]}Type"


def _window_string(window: Tensor | None) -> str:
    return "None" if window is None else f"{_tensor_string(window)}{{{list(window.shape)}}}"


def _flag(v: bool | None) -> str:
    """An optional bool as C++ prints it: None, 0 or 1."""
    return "None" if v is None else str(int(v))


class _StftCall:
    """How PyTorch's stft kernel names its call in its errors: the (padded) signal's type
    and shape, then every argument as its C++ prints it (bools as 0/1). Written only when
    an error is raised."""

    def __init__(self, signal: Tensor, *args: Any) -> None:
        self.signal, self.args = signal, args

    def error(self, message: str) -> RuntimeError:
        n_fft, hop, win, window, normalized, onesided, return_complex, align = self.args
        return RuntimeError(
            f"stft({_tensor_string(self.signal)}{list(self.signal.shape)}, n_fft={n_fft}, "
            f"hop_length={hop}, win_length={win}, window={_window_string(window)}, "
            f"normalized={int(normalized)}, onesided={_flag(onesided)}, "
            f"return_complex={int(return_complex)}, align_to_window={_flag(align)}) : "
            f"{message}")


@composite(complex=True, variants="function method", cost=costs.matmul,
           cpu_precision=P.FLOAT32)  # (PyTorch's CPU autocast: float32)
def stft(input: Tensor, n_fft: int, hop_length: int | None = None,
         win_length: int | None = None, window: Tensor | None = None, center: bool = True,
         pad_mode: str = "reflect", normalized: bool = False, onesided: bool | None = None,
         return_complex: bool | None = None, align_to_window: bool | None = None) -> Tensor:
    """The short-time Fourier transform of a real signal (L,) or batch (B, L): each frame
    of `n_fft` samples, `hop_length` apart, times `window`, transformed. Returns PyTorch's
    complex (B?, n_fft // 2 + 1 (or n_fft if not onesided), frames) with
    `return_complex=True`; PyTorch's real view of it, with the real and imaginary parts
    in a last dimension of size 2, with `return_complex=False` (which warns, as PyTorch's
    does). A complex signal has a two-sided transform."""
    if window is None:  # (PyTorch's TORCH_WARN_ONCE, its kernel's first act)
        warn_once(_stft_no_window(), stacklevel=3)
    if return_complex is None:
        if not input.dtype.is_complex:
            raise RuntimeError("stft requires the return_complex parameter be given for real "
                               "inputs, and will further require that return_complex=True in "
                               "a future PyTorch release.")
        return_complex = True
    if onesided and input.dtype.is_complex:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    if align_to_window and center:
        raise RuntimeError("stft: align_to_window should only be set when center = false")
    if align_to_window:
        raise NotImplementedError("stft: align_to_window=True is not supported")
    if not return_complex:
        warnings.warn(_DEPRECATED, UserWarning, stacklevel=3)
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    x = input if input.ndim != 1 else input.reshape(1, -1)
    if center:
        x = _pad_signal(x, n_fft // 2, pad_mode)
    # (the signal PyTorch's kernel is handed: padded, of the input's rank)
    call = _StftCall(x if input.ndim != 1 else x[0], n_fft, hop, win, window, normalized,
                     onesided, return_complex, align_to_window)
    if input.ndim not in (1, 2):
        raise call.error("expected a 1D or 2D tensor")
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise call.error("expected a tensor of floating point or complex values")
    length = x.shape[-1]
    if not 0 < n_fft <= length:
        raise call.error(f"expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop <= 0:
        raise call.error(f"expected hop_length > 0, but got hop_length={hop}")
    if not 0 < win <= n_fft:
        raise call.error(f"expected 0 < win_length <= n_fft, but got win_length={win}")
    if window is None:
        window = ones(win, dtype=input.dtype.to_real(), device=input.device)
    elif window.ndim != 1 or window.shape[0] != win:
        raise call.error(f"expected a 1D window tensor of size equal to win_length={win}, "
                         f"but got window with size {list(window.shape)}")
    if win < n_fft:  # centred in the frame, as PyTorch places a shorter window
        left = (n_fft - win) // 2
        window = constant_pad_nd(window, (left, n_fft - win - left))
    frames = x.unfold(-1, n_fft, hop) * window  # (B, frames, n_fft)
    if not return_complex and dt.complex64 not in frames._backend.dtypes:
        out = _real_stft(frames, n_fft, onesided, normalized)
        return out if input.ndim == 2 else out.squeeze(0)
    two_sided = onesided is False or frames.dtype.is_complex
    out = (fft.fft_fft if two_sided else fft.fft_rfft)(
        frames, norm="ortho" if normalized else None).transpose(1, 2)
    if not return_complex:  # (B, n_freq, frames, 2): the FFT's exact zero imaginary parts
        out = view_as_real(out)
    return out if input.ndim == 2 else out.squeeze(0)


def _stft_no_window() -> str:
    api = dt.API_NAME
    return (f"A window was not provided. A rectangular window will be applied,which is known "
            f"to cause spectral leakage. Other windows such as {api}.hann_window or "
            f"{api}.hamming_window are recommended to reduce spectral leakage.To suppress this "
            f"warning and use a rectangular window, explicitly set `window={api}.ones(n_fft, "
            f"device=<device>)`.")


_NO_WINDOW = ("A window was not provided. A rectangular window will be applied.Please provide "
              "the same window used by stft to make the inversion lossless.To suppress this "
              "warning and use a rectangular window, explicitly set `window=torch.ones(n_fft, "
              "device=<device>)`.")


@composite(complex=True, variants="function method", cost=costs.matmul)
def istft(input: Tensor, n_fft: int, hop_length: int | None = None,
          win_length: int | None = None, window: Tensor | None = None, center: bool = True,
          normalized: bool = False, onesided: bool | None = None, length: int | None = None,
          return_complex: bool = False) -> Tensor:
    """The inverse of `stft(return_complex=True)`: the signal (B?, length) whose
    short-time Fourier transform is `input` (B?, n_freq, frames), by inverse FFTs of the
    frames, windowed and overlap-added, divided by the window's overlap-added square."""
    if not input.dtype.is_complex:
        raise RuntimeError("istft requires a complex-valued input tensor matching the output "
                           "from stft with return_complex=True.")
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    fail = _istft_call(input, n_fft, hop, win, window, center, normalized, onesided, length,
                       return_complex)
    if input.ndim not in (2, 3):  # (PyTorch counts the dimensions of view_as_real(input))
        raise fail(f": expected a tensor with 3 or 4 dimensions, but got {input.ndim + 1}")
    if hop <= 0 or hop > win:
        raise fail(": expected 0 < hop_length <= win_length")
    if not 0 < win <= n_fft:
        raise fail(": expected 0 < win_length <= n_fft")
    x = input if input.ndim == 3 else input.unsqueeze(0)
    n_freq, n_frames = x.shape[1], x.shape[2]
    if onesided is None:
        onesided = n_freq != n_fft
    if onesided and return_complex:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    if onesided and n_fft // 2 + 1 != n_freq:
        raise fail(f": expected the frequency dimension (3rd to the last) of the input tensor "
                   f"to match n_fft / 2 + 1 when onesided=True, but got {n_freq}")
    if not onesided and n_freq != n_fft:
        raise fail(f": expected the frequency dimension (3rd to the last) of the input tensor "
                   f"to match n_fft when onesided=False, but got {n_freq}")
    real_dtype = input.dtype.to_real()
    if window is None:
        warnings.warn(_NO_WINDOW, UserWarning, stacklevel=3)
        window = ones(win, dtype=real_dtype, device=input.device)
    elif window.ndim != 1 or window.shape[0] != win:
        raise fail(": Invalid window shape. window has to be 1D and length of `win_length`")
    if win < n_fft:
        left = (n_fft - win) // 2
        window = constant_pad_nd(window, (left, n_fft - win - left))
    spec = x.transpose(1, 2)  # (B, frames, n_freq)
    norm = "ortho" if normalized else "backward"
    if onesided:
        frames = fft.fft_irfft(spec, n=n_fft, norm=norm)
    else:
        frames = fft.fft_ifft(spec, n=n_fft, norm=norm)
        if not return_complex:
            frames = real(frames)
    frames = frames * window  # (B, frames, n_fft)
    total = n_fft + hop * (n_frames - 1)
    y = _overlap_add(frames, total, n_fft, hop)
    envelope = _overlap_add((window * window).expand(1, n_frames, n_fft), total, n_fft, hop)
    start = n_fft // 2 if center else 0
    end = total - n_fft // 2 if center else total
    if length is not None:
        end = start + length
    y, envelope = y[:, start:min(end, total)], envelope[:, start:min(end, total)]
    if bool((envelope.abs() < 1e-11).any()):  # (the check's bool tensor, printed)
        raise fail("window overlap add min: 1\n[ CPUBoolType{} ]")
    y = y / envelope
    if length is not None and y.shape[1] < length:
        warn_once("The length of signal is shorter than the length parameter. Result is being "
                  "padded with zeros in the tail. Please check your center and hop_length "
                  "settings.", stacklevel=3)
        y = constant_pad_nd(y, (0, length - y.shape[1]))
    return y if input.ndim == 3 else y.squeeze(0)


def _istft_call(input: Tensor, n_fft: int, hop: int, win: int, window: Tensor | None,
                center: bool, normalized: bool, onesided: bool | None, length: int | None,
                return_complex: bool) -> Callable[[str], RuntimeError]:
    """How PyTorch's istft names its call in its errors (the complex input's backend type
    and shape, every argument as C++ prints it), before the message."""
    def fail(message: str) -> RuntimeError:
        return RuntimeError(
            f"istft({_tensor_string(input)}{list(input.shape)}, n_fft={n_fft}, "
            f"hop_length={hop}, win_length={win}, window={_window_string(window)}, "
            f"center={int(center)}, normalized={int(normalized)}, "
            f"onesided={_flag(onesided)}, length={length}, "
            f"return_complex={int(return_complex)}) {message}")
    return fail


def _overlap_add(frames: Tensor, total: int, n_fft: int, hop: int) -> Tensor:
    """Frames (B, frames, n_fft), `hop` apart, summed into signals (B, total)."""
    if frames.dtype.is_complex:
        parts = [_overlap_add(p, total, n_fft, hop) for p in (frames.real, frames.imag)]
        from ember.core.ops.complex import complex as make_complex

        return make_complex(*parts)
    cols = frames.transpose(1, 2)  # (B, n_fft, frames): col2im's blocks
    return col2im(cols, (1, total), (1, n_fft), (1, 1), (0, 0), (1, hop)).reshape(
        frames.shape[0], total)


# -- window functions -----------------------------------------------------------------


def _window_dtype(name: str, length: int, dtype: Any, device: Any = None) -> Any:
    """A window's dtype (floating, the default one unless given), after PyTorch's checks."""
    d = dtype_arg(dtype, name) or dt.get_default_dtype()
    if not d.is_floating_point and not d.is_complex:  # (complex fails later, in arange)
        where = "cpu" if device is None else str(device)
        raise RuntimeError(f"{name} expects floating point dtypes, got: TensorOptions(dtype="
                           f"{cpp_type_name(d)}, device={where}, layout=Strided (default), "
                           "requires_grad=false (default), pinned_memory=false, "
                           "memory_format=(nullopt))")
    if length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got "
                           f"window_length={length}")
    return d


_WINDOW_KEYWORDS = ("torch.dtype dtype = None, torch.layout layout = None, torch.device device"
                    " = None, bool pin_memory = False, bool requires_grad = False")


def _window_args(name: str, length: Any, periodic: Any, *params: tuple[str, Any]) -> bool:
    """PyTorch's overloads of a window function: `(N)`, `(N, periodic)`, then each of
    `params` (name, value; None when not given) in turn, a later one only after every
    earlier one, as its argument parser matches them (`kaiser_window(5, beta=8.0)` and
    `kaiser_window(5, 8.0)` match none). Returns `periodic` (True when not given)."""
    values = [periodic, *(v for _, v in params)]
    given = [v is not None for v in values]
    first_gap = given.index(False) if False in given else len(given)
    ok = not any(given[first_gap:]) and (periodic is None or isinstance(periodic, bool)) \
        and all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))
                for _, v in params)
    if not ok:
        names = ["periodic", *(n for n, _ in params)]
        got = [type(length).__name__] + [
            (f"{n}=" if i > first_gap else "") + type(v).__name__
            for i, (n, v) in enumerate(zip(names, values)) if v is not None]
        raise _window_error(name, got, names[1:])
    return True if periodic is None else periodic


def _window_error(name: str, got: list[str], params: Any) -> TypeError:
    """PyTorch's refusal of a window call matching none of its overloads: `(N)`, `(N,
    periodic)`, then one more of `params` (float parameters) each."""
    overloads = ["int window_length"]
    for n in ("periodic", *params):
        overloads.append(overloads[-1] + (", bool periodic" if n == "periodic"
                                          else f", float {n}"))
    keywords = _WINDOW_KEYWORDS.replace("torch.", dt.API_NAME + ".")
    return invalid_combination(name, ", ".join(got),
                               (f"({o}, *, {keywords})" for o in overloads))


def _window_overloads(*params: str) -> Any:
    """A window function that refuses, in PyTorch's words, what its Python signature
    would (a keyword it lacks, such as `hann_window(5, alpha=0.5)`; too many arguments)."""
    def wrap(fn: Any) -> Any:
        name = fn.__name__
        known = set(inspect.signature(fn).parameters) - {"window_length"}

        def checked(window_length: Any, *args: Any, **kwargs: Any) -> Any:
            if len(args) > 1 + len(params) or not kwargs.keys() <= known:
                got = [type(window_length).__name__] + [type(a).__name__ for a in args] + \
                    [f"{k}={type(v).__name__}" for k, v in kwargs.items()]
                raise _window_error(name, got, params)
            return fn(window_length, *args, **kwargs)
        return as_overload_check(checked, fn)
    return wrap


def _cosine_window(name: str, length: int, periodic: bool, terms: tuple[float, ...],
                   dtype: Any, device: Any, requires_grad: bool) -> Tensor:
    """`sum_k (-1)^k terms[k] cos(2 pi k n / (N - 1))` for n < N, N = `length` (+1 when
    `periodic`, the last point then dropped), computed as PyTorch computes it."""
    d = _window_dtype(name, length, dtype, device)
    if length <= 1:
        out = ones(length, dtype=d, device=device)
    else:
        n = length + 1 if periodic else length
        step = arange(n, dtype=d, device=device) * (2 * math.pi / (n - 1))
        out = full((n,), terms[0], dtype=d, device=device)
        for k, a in enumerate(terms[1:], 1):
            out = out + (step * k if k > 1 else step).cos() * (-a if k % 2 else a)
        out = out[:-1] if periodic else out
    return out.requires_grad_(True) if requires_grad else out


@composite(variants="function", cost=costs.creation)
@_window_overloads()
def hann_window(window_length: int, periodic: bool | None = None, *, dtype: Any = None,
                device: Any = None, requires_grad: bool = False) -> Tensor:
    """The Hann window, `0.5 - 0.5 cos(2 pi n / (N - 1))` (periodic: of N + 1 points,
    the last dropped, as spectral analysis wants)."""
    periodic = _window_args("hann_window", window_length, periodic)
    return _cosine_window("hann_window", window_length, periodic, (0.5, 0.5), dtype, device,
                          requires_grad)


@composite(variants="function", cost=costs.creation)
@_window_overloads("alpha", "beta")
def hamming_window(window_length: int, periodic: bool | None = None,
                   alpha: float | None = None, beta: float | None = None, *,
                   dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """The Hamming window, `alpha - beta cos(2 pi n / (N - 1))`."""
    periodic = _window_args("hamming_window", window_length, periodic, ("alpha", alpha),
                            ("beta", beta))
    terms = (0.54 if alpha is None else alpha, 0.46 if beta is None else beta)
    return _cosine_window("hamming_window", window_length, periodic, terms, dtype,
                          device, requires_grad)


@composite(variants="function", cost=costs.creation)
@_window_overloads()
def blackman_window(window_length: int, periodic: bool | None = None, *, dtype: Any = None,
                    device: Any = None, requires_grad: bool = False) -> Tensor:
    """The Blackman window, `0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))`
    (summed in PyTorch's order, so the float32 values are its to the last bit)."""
    periodic = _window_args("blackman_window", window_length, periodic)
    d = _window_dtype("blackman_window", window_length, dtype, device)
    if window_length <= 1:
        out = ones(window_length, dtype=d, device=device)
    else:
        n = window_length + 1 if periodic else window_length
        step = arange(n, dtype=d, device=device) * (math.pi / (n - 1))
        out = (step * 4).cos() * 0.08 - (step * 2).cos() * 0.5 + 0.42
        out = out[:-1] if periodic else out
    return out.requires_grad_(True) if requires_grad else out


@composite(variants="function", cost=costs.creation)
@_window_overloads("beta")
def kaiser_window(window_length: int, periodic: bool | None = None,
                  beta: float | None = None, *,
                  dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """The Kaiser window, `I0(beta sqrt(1 - ((n - a) / a)^2)) / I0(beta)` with
    `a = (N - 1) / 2` (periodic: of N + 1 points, the last dropped)."""
    periodic = _window_args("kaiser_window", window_length, periodic, ("beta", beta))
    beta = 12.0 if beta is None else beta
    d = _window_dtype("kaiser_window", window_length, dtype, device)
    if window_length <= 1:
        out = ones(window_length, dtype=d, device=device)
    else:
        n = window_length + 1 if periodic else window_length
        alpha = (n - 1) / 2.0
        ratio = (arange(n, dtype=d, device=device) - alpha) / alpha
        out = i0((1 - ratio.pow(2)).abs().sqrt() * beta) / i0(full((), beta, dtype=d,
                                                                    device=device))
        out = out[:-1] if periodic else out
    return out.requires_grad_(True) if requires_grad else out


@composite(variants="function", cost=costs.creation)
@_window_overloads()
def bartlett_window(window_length: int, periodic: bool | None = None, *, dtype: Any = None,
                    device: Any = None, requires_grad: bool = False) -> Tensor:
    """The Bartlett (triangular) window, `1 - |2 n / (N - 1) - 1|`."""
    periodic = _window_args("bartlett_window", window_length, periodic)
    d = _window_dtype("bartlett_window", window_length, dtype, device)
    if window_length <= 1:
        out = ones(max(window_length, 0), dtype=d, device=device)
    else:
        # as PyTorch computes it, to its rounding: the ramp `2 n / (N - 1)` with the step
        # rounded to the dtype, its second half reflected as `2 - ramp`
        n = window_length + 1 if periodic else window_length
        ramp = arange(n, dtype=d, device=device) * full((), 2.0 / (n - 1), dtype=d,
                                                        device=device)
        half = ((n - 1) >> 1) + 1
        out = cat([ramp[:half], 2.0 - ramp[half:]])
        out = out[:-1] if periodic else out
    return out.requires_grad_(True) if requires_grad else out
