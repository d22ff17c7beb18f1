"""FFT kernels: the three transforms core's `torch.fft` functions are written with, on
the array module's pocketfft (NumPy's, or CuPy's cuFFT), in the input's precision."""

from __future__ import annotations

from ember.backends.xp.lib import ArrayLib, Kernel

# core's normalization codes (ember.core.ops.fft): none, 1/sqrt(n), 1/n -> NumPy's `norm`
# for a forward and for an inverse transform
_FORWARD = ("backward", "ortho", "forward")
_INVERSE = ("forward", "ortho", "backward")


def kernels(lib: ArrayLib) -> dict[str, Kernel]:
    xp = lib.xp
    fft = xp.fft
    as_array = lib.as_array

    def _fft_c2c(x, dims, normalization, forward):
        if forward:
            y = fft.fftn(x, axes=dims, norm=_FORWARD[normalization])
        else:
            y = fft.ifftn(x, axes=dims, norm=_INVERSE[normalization])
        return as_array(y).astype(x.dtype, copy=False)

    def _fft_r2c(x, dims, normalization, onesided):
        norm = _FORWARD[normalization]
        y = fft.rfftn(x, axes=dims, norm=norm) if onesided else fft.fftn(x, axes=dims,
                                                                           norm=norm)
        return as_array(y).astype(xp.result_type(x.dtype, xp.complex64), copy=False)

    def _fft_c2r(x, dims, normalization, last_dim_size):
        sizes = [x.shape[d] for d in dims[:-1]] + [last_dim_size]
        y = fft.irfftn(x, s=sizes, axes=dims, norm=_INVERSE[normalization])
        real = xp.float32 if x.dtype == xp.complex64 else xp.float64
        return as_array(y).astype(real, copy=False)

    return {"_fft_c2c": _fft_c2c, "_fft_r2c": _fft_r2c, "_fft_c2r": _fft_c2r}
