"""Discrete Fourier transforms, as `torch.fft`: `fft`, `ifft`, `fft2`, `ifft2`, `fftn`,
`ifftn`, `rfft`, `irfft`, `rfft2`, `irfft2`, `rfftn`, `irfftn`, `hfft`, `ihfft`, `hfft2`,
`ihfft2`, `hfftn`, `ihfftn`, the sample frequencies (`fftfreq`, `rfftfreq`) and the
shifts (`fftshift`, `ifftshift`).

Real inputs give complex results of their precision (float32 -> complex64), integers are
promoted to the default float first; every transform is differentiable (PyTorch's
gradients). The ops are declared in ember.core.ops.fft.
"""

from __future__ import annotations

from ember.core.ops import fft as _ops

fft = _ops.fft_fft
ifft = _ops.fft_ifft
fft2 = _ops.fft_fft2
ifft2 = _ops.fft_ifft2
fftn = _ops.fft_fftn
ifftn = _ops.fft_ifftn
rfft = _ops.fft_rfft
irfft = _ops.fft_irfft
rfft2 = _ops.fft_rfft2
irfft2 = _ops.fft_irfft2
rfftn = _ops.fft_rfftn
irfftn = _ops.fft_irfftn
hfft = _ops.fft_hfft
ihfft = _ops.fft_ihfft
hfft2 = _ops.fft_hfft2
ihfft2 = _ops.fft_ihfft2
hfftn = _ops.fft_hfftn
ihfftn = _ops.fft_ihfftn
fftfreq = _ops.fft_fftfreq
rfftfreq = _ops.fft_rfftfreq
fftshift = _ops.fft_fftshift
ifftshift = _ops.fft_ifftshift

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
           "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq",
           "rfftfreq", "fftshift", "ifftshift"]
