"""A torch.fft tour as a signal-processing notebook walks through it: fft/ifft/rfft/irfft,
fft2/rfft2/irfftn, hfft/ihfft, the norm= modes, n=/s= padding and cropping, fftshift and
ifftshift, fftfreq/rfftfreq, FFT convolution checked against F.conv1d, torch.stft and
torch.istft (window, center, onesided, return_complex), complex printing, view_as_real and
view_as_complex, gradients through .abs() and .angle(); then a tiny spectral-loss fit."""
import math

import torch
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_printoptions(precision=4, sci_mode=False)

x = torch.tensor([1.0, 2.0, 0.0, -1.0, 3.0, 0.5, -2.0, 1.5])
X = torch.fft.fft(x)
print("fft", X)
print("fft dtype", X.dtype, X.shape, X.stride())
print("ifft", torch.fft.ifft(X))
print("ifft real", torch.fft.ifft(X).real)
for norm in ("backward", "ortho", "forward"):
    print("fft norm", norm, torch.fft.fft(x, norm=norm)[:3])
    print("roundtrip", norm, torch.allclose(torch.fft.ifft(torch.fft.fft(x, norm=norm), norm=norm).real, x, atol=1e-6))
print("fft n=12 (pad)", torch.fft.fft(x, n=12).shape, torch.fft.fft(x, n=12)[:2])
print("fft n=5 (crop)", torch.fft.fft(x, n=5))
R = torch.fft.rfft(x)
print("rfft", R, R.shape)
print("irfft", torch.fft.irfft(R))
print("irfft n=7", torch.fft.irfft(R, n=7))
print("irfft odd roundtrip", torch.fft.irfft(torch.fft.rfft(x[:7]), n=7))
print("hfft", torch.fft.hfft(R[:4]), torch.fft.hfft(R[:4]).shape)
print("ihfft", torch.fft.ihfft(x))
print("rfft of int", torch.fft.rfft(torch.arange(4)).dtype)
print("fft of double", torch.fft.fft(x.double()).dtype, "of half-precision error:")
try:
    torch.fft.fft(torch.ones(6, dtype=torch.float16))
except RuntimeError as e:
    print("  ", str(e)[:80])

img = torch.arange(24.0).reshape(4, 6)
F2 = torch.fft.fft2(img)
print("fft2", F2.shape, F2[0, :3])
print("ifft2", torch.fft.ifft2(F2).real.allclose(img, atol=1e-4))
RF2 = torch.fft.rfft2(img)
print("rfft2", RF2.shape, RF2.stride(), RF2[:2, :2])
print("irfft2", torch.fft.irfft2(RF2, s=img.shape).allclose(img, atol=1e-4))
print("fft dim=0 layout", torch.fft.fft(img, dim=0).stride(), torch.fft.rfft(img, dim=0).stride(),
      torch.fft.irfft(RF2, dim=0).stride(), torch.fft.fft2(img.T).stride(), torch.fft.fft(img, dim=0).is_contiguous())
print("rfftn s=", torch.fft.rfftn(img, s=(6, 8)).shape, torch.fft.fftn(img, s=(2, 3)).shape)
vol = torch.randn(2, 4, 6, 8)
spec = torch.fft.rfftn(vol, dim=(-3, -2, -1))
print("rfftn", spec.shape, spec.dtype)
print("irfftn", torch.fft.irfftn(spec, s=vol.shape[-3:], dim=(-3, -2, -1)).allclose(vol, atol=1e-5))
print("fftn dim", torch.fft.fftn(vol, dim=(1,)).shape, torch.fft.ifftn(vol, dim=(0, 2), norm="ortho").shape)
print("ihfft2", torch.fft.ihfft2(img).shape, "hfft2", torch.fft.hfft2(torch.fft.ihfft2(img), s=img.shape).allclose(img, atol=1e-4))

print("fftfreq", torch.fft.fftfreq(8))
print("fftfreq d", torch.fft.fftfreq(5, d=0.1))
print("rfftfreq", torch.fft.rfftfreq(8, d=1 / 16))
print("fftshift", torch.fft.fftshift(torch.fft.fftfreq(8)))
print("ifftshift", torch.fft.ifftshift(torch.fft.fftshift(torch.arange(7))))
print("fftshift 2d", torch.fft.fftshift(torch.arange(12).reshape(3, 4)))
print("fftshift dim", torch.fft.fftshift(torch.arange(12).reshape(3, 4), dim=1))
print("fftfreq dtype", torch.fft.fftfreq(4, dtype=torch.float64).dtype)

# FFT convolution == conv1d (which is cross-correlation: flip the kernel)
sig = torch.randn(1, 1, 32)
ker = torch.randn(1, 1, 5)
direct = F.conv1d(sig, ker.flip(-1), padding=4)
n = sig.shape[-1] + ker.shape[-1] - 1
fftconv = torch.fft.irfft(torch.fft.rfft(sig, n=n) * torch.fft.rfft(ker, n=n), n=n)
print("fft conv shape", direct.shape, fftconv.shape)
print("fft conv matches conv1d", torch.allclose(direct, fftconv, atol=1e-4))
print("circular conv", torch.fft.ifft(torch.fft.fft(torch.tensor([1.0, 2, 3, 4])) * torch.fft.fft(torch.tensor([0.0, 1, 0, 0]))).real)

# complex tensors: printing, views
z = torch.complex(torch.tensor([1.0, -0.5, 0.0]), torch.tensor([2.0, 0.25, -1.0]))
print("complex", z, z.dtype)
print("complex abs angle", z.abs(), z.angle())
print("polar", torch.polar(torch.tensor([1.0, 2.0]), torch.tensor([0.0, math.pi / 2])))
vr = torch.view_as_real(z)
print("view_as_real", vr, vr.shape, vr.stride())
vc = torch.view_as_complex(torch.tensor([[1.0, 2.0], [3.0, -4.0]]))
print("view_as_complex", vc, vc.shape, vc.stride())
print("conj", z.conj(), z.conj().is_conj(), z.conj().resolve_conj().is_conj(), z.conj()[1:].is_conj(), z.is_conj())
print("real imag", z.real, z.imag, z.real.stride())
print("complex matmul", torch.outer(z, z.conj()).diagonal())
print("complex128", torch.randn(2, dtype=torch.complex128).dtype, torch.zeros(2, dtype=torch.cfloat))
print("complex big", torch.tensor([1e5 + 1j, 3.25 - 1e-3j]))
try:
    torch.view_as_complex(torch.ones(3))
except RuntimeError as e:
    print("view_as_complex error", e)

# gradients through the magnitude and phase of a spectrum
xs = torch.tensor([0.5, -1.0, 2.0, 0.25, 1.0, -0.5], requires_grad=True)
S = torch.fft.rfft(xs)
S.abs().sum().backward()
print("abs grad", xs.grad)
xs.grad = None
torch.fft.rfft(xs)[1:].angle().sum().backward()
print("angle grad", xs.grad)
zc = torch.tensor([1.0 + 1.0j, -2.0 + 0.5j], requires_grad=True)
(zc.abs() ** 2).sum().backward()
print("complex leaf grad", zc.grad)
xs.grad = None
(torch.fft.fft(xs, norm="ortho").real ** 2).sum().backward()
print("fft real grad", xs.grad)
print("grad_fn", torch.fft.rfft(xs).grad_fn.name(), torch.fft.fft(xs).abs().grad_fn.name())

# STFT / ISTFT
t = torch.linspace(0, 1, 400)
wave = torch.sin(2 * math.pi * 50 * t) + 0.5 * torch.sin(2 * math.pi * 120 * t)
window = torch.hann_window(64)
print("hann", window[:4], window.shape, torch.hann_window(5, periodic=False))
spec = torch.stft(wave, n_fft=64, hop_length=16, window=window, return_complex=True)
print("stft", spec.shape, spec.dtype)
print("stft mag", spec.abs()[:5, 3])
print("peak bins", spec.abs().mean(-1).topk(2).indices.sort().values)
spec_nc = torch.stft(wave, n_fft=64, hop_length=16, window=window, center=False, return_complex=True)
print("stft center=False", spec_nc.shape)
spec_two = torch.stft(wave, n_fft=64, hop_length=16, window=window, onesided=False, return_complex=True)
print("stft onesided=False", spec_two.shape)
spec_norm = torch.stft(wave, 64, 16, window=window, normalized=True, return_complex=True)
print("stft normalized", spec_norm.abs().max() < spec.abs().max())
batch = torch.stack([wave, wave.flip(0)])
print("stft batched", torch.stft(batch, 64, 16, window=window, return_complex=True).shape)
print("stft no window", torch.stft(wave, 32, return_complex=True).shape)
print("stft win_length", torch.stft(wave, 64, 16, win_length=32, window=torch.hann_window(32), return_complex=True).shape)
rec = torch.istft(spec, n_fft=64, hop_length=16, window=window, length=wave.shape[0])
print("istft", rec.shape, "max error", (rec - wave).abs().max() < 1e-4)
print("istft no length", torch.istft(spec, 64, 16, window=window).shape)
try:
    torch.stft(wave, 64)
except RuntimeError as e:
    print("stft error", str(e)[:100])
pad = F.pad(wave.view(1, 1, -1), (32, 32), mode="reflect").view(-1)
frames = pad.unfold(0, 64, 16) * window
manual = torch.fft.rfft(frames, dim=-1).T
print("manual stft matches", torch.allclose(manual, spec, atol=1e-3))

# spectral loss fit: learn a filter's gain per frequency bin to match a target spectrum
target = torch.fft.rfft(torch.sin(torch.arange(64.0) * 0.7))
noise = torch.randn(64)
gain = torch.ones(33, requires_grad=True)
opt = torch.optim.Adam([gain], lr=0.05)
for step in range(50):
    out = torch.fft.irfft(torch.fft.rfft(noise) * gain, n=64)
    loss = F.mse_loss(torch.fft.rfft(out).abs(), target.abs())
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"spectral step {step:3d} loss {loss.item():.4f}")
