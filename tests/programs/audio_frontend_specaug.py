"""An audio front-end written as torchaudio.functional does it, in pure torch: a hand-built
mel filterbank (melscale_fbanks with torch.linspace, torch.clamp, torch.min), torch.stft with
a hann_window, power spectrogram, amplitude_to_DB (log10, clamp(min=), top_db via amax),
MFCC through a DCT-II matrix (create_dct: torch.cos outer products), Griffin-Lim with
torch.istft, SpecAugment time/frequency masks drawn with torch.rand (mask_along_axis_iid),
windowed-sinc resampling with F.conv1d (torchaudio's _get_sinc_resample_kernel), and a small
CNN keyword classifier trained on the log-mel features."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def _hz_to_mel(freq, mel_scale="htk"):
    if mel_scale == "htk":
        return 2595.0 * math.log10(1.0 + (freq / 700.0))
    f_min, f_sp = 0.0, 200.0 / 3
    mels = (freq - f_min) / f_sp
    min_log_hz = 1000.0
    min_log_mel = (min_log_hz - f_min) / f_sp
    logstep = math.log(6.4) / 27.0
    if freq >= min_log_hz:
        mels = min_log_mel + math.log(freq / min_log_hz) / logstep
    return mels


def _mel_to_hz(mels, mel_scale="htk"):
    if mel_scale == "htk":
        return 700.0 * (10.0 ** (mels / 2595.0) - 1.0)
    f_min, f_sp = 0.0, 200.0 / 3
    freqs = f_min + f_sp * mels
    min_log_hz = 1000.0
    min_log_mel = (min_log_hz - f_min) / f_sp
    logstep = math.log(6.4) / 27.0
    log_t = mels >= min_log_mel
    freqs[log_t] = min_log_hz * torch.exp(logstep * (mels[log_t] - min_log_mel))
    return freqs


def _create_triangular_filterbank(all_freqs, f_pts):
    f_diff = f_pts[1:] - f_pts[:-1]
    slopes = f_pts.unsqueeze(0) - all_freqs.unsqueeze(1)
    zero = torch.zeros(1)
    down_slopes = (-1.0 * slopes[:, :-2]) / f_diff[:-1]
    up_slopes = slopes[:, 2:] / f_diff[1:]
    fb = torch.max(zero, torch.min(down_slopes, up_slopes))
    return fb


def melscale_fbanks(n_freqs, f_min, f_max, n_mels, sample_rate, norm=None, mel_scale="htk"):
    all_freqs = torch.linspace(0, sample_rate // 2, n_freqs)
    m_min = _hz_to_mel(f_min, mel_scale=mel_scale)
    m_max = _hz_to_mel(f_max, mel_scale=mel_scale)
    m_pts = torch.linspace(m_min, m_max, n_mels + 2)
    f_pts = _mel_to_hz(m_pts, mel_scale=mel_scale)
    fb = _create_triangular_filterbank(all_freqs, f_pts)
    if norm is not None and norm == "slaney":
        enorm = 2.0 / (f_pts[2:n_mels + 2] - f_pts[:n_mels])
        fb *= enorm.unsqueeze(0)
    return fb


def create_dct(n_mfcc, n_mels, norm):
    n = torch.arange(float(n_mels))
    k = torch.arange(float(n_mfcc)).unsqueeze(1)
    dct = torch.cos(math.pi / float(n_mels) * (n + 0.5) * k)
    if norm is None:
        dct *= 2.0
    else:
        dct[0] *= 1.0 / math.sqrt(2.0)
        dct *= math.sqrt(2.0 / float(n_mels))
    return dct.t()


def spectrogram(waveform, pad, window, n_fft, hop_length, win_length, power, normalized,
                center=True, pad_mode="reflect", onesided=True):
    if pad > 0:
        waveform = F.pad(waveform, (pad, pad), "constant")
    shape = waveform.size()
    waveform = waveform.reshape(-1, shape[-1])
    spec_f = torch.stft(input=waveform, n_fft=n_fft, hop_length=hop_length,
                        win_length=win_length, window=window, center=center,
                        pad_mode=pad_mode, normalized=False, onesided=onesided,
                        return_complex=True)
    spec_f = spec_f.reshape(shape[:-1] + spec_f.shape[-2:])
    if normalized:
        spec_f /= window.pow(2.0).sum().sqrt()
    if power is not None:
        if power == 1.0:
            return spec_f.abs()
        return spec_f.abs().pow(power)
    return spec_f


def amplitude_to_DB(x, multiplier, amin, db_multiplier, top_db=None):
    x_db = multiplier * torch.log10(torch.clamp(x, min=amin))
    x_db -= multiplier * db_multiplier
    if top_db is not None:
        shape = x_db.size()
        packed_channels = shape[-3] if x_db.dim() > 2 else 1
        x_db = x_db.reshape(-1, packed_channels, shape[-2], shape[-1])
        x_db = torch.max(x_db, (x_db.amax(dim=(-3, -2, -1)) - top_db).view(-1, 1, 1, 1))
        x_db = x_db.reshape(shape)
    return x_db


def griffinlim(specgram, window, n_fft, hop_length, win_length, power, n_iter, momentum,
               length, rand_init):
    shape = specgram.size()
    specgram = specgram.reshape([-1] + list(shape[-2:]))
    specgram = specgram.pow(1 / power)
    if rand_init:
        angles = torch.rand(specgram.size(), dtype=torch.complex64, device=specgram.device)
    else:
        angles = torch.full(specgram.size(), 1, dtype=torch.complex64,
                            device=specgram.device)
    tprev = torch.tensor(0.0, dtype=specgram.dtype, device=specgram.device)
    for _ in range(n_iter):
        inverse = torch.istft(specgram * angles, n_fft=n_fft, hop_length=hop_length,
                              win_length=win_length, window=window, length=length)
        rebuilt = torch.stft(input=inverse, n_fft=n_fft, hop_length=hop_length,
                             win_length=win_length, window=window, center=True,
                             pad_mode="reflect", normalized=False, onesided=True,
                             return_complex=True)
        angles = rebuilt
        if momentum:
            angles = angles - tprev.mul_(momentum / (1 + momentum))
        angles = angles.div(angles.abs().add(1e-16))
        tprev = rebuilt
    waveform = torch.istft(specgram * angles, n_fft=n_fft, hop_length=hop_length,
                           win_length=win_length, window=window, length=length)
    return waveform.reshape(shape[:-2] + waveform.shape[-1:])


def mask_along_axis_iid(specgrams, mask_param, mask_value, axis, p=1.0):
    dim = specgrams.dim()
    if axis not in [dim - 2, dim - 1]:
        raise ValueError("Only Frequency and Time masking are supported")
    value = torch.rand(specgrams.shape[: (dim - 2)], device=specgrams.device,
                       dtype=specgrams.dtype) * mask_param
    min_value = torch.rand(specgrams.shape[: (dim - 2)], device=specgrams.device,
                           dtype=specgrams.dtype) * (specgrams.size(axis) - value)
    mask_start = min_value.long()[..., None, None]
    mask_end = (min_value.long() + value.long())[..., None, None]
    mask = torch.arange(0, specgrams.size(axis), device=specgrams.device,
                        dtype=specgrams.dtype)
    specgrams = specgrams.transpose(axis, -1)
    specgrams = specgrams.masked_fill((mask >= mask_start) & (mask < mask_end), mask_value)
    specgrams = specgrams.transpose(axis, -1)
    return specgrams


def _get_sinc_resample_kernel(orig_freq, new_freq, gcd, lowpass_filter_width=6,
                              rolloff=0.99, dtype=None):
    orig_freq = int(orig_freq) // gcd
    new_freq = int(new_freq) // gcd
    base_freq = min(orig_freq, new_freq)
    base_freq *= rolloff
    width = math.ceil(lowpass_filter_width * orig_freq / base_freq)
    idx_dtype = dtype if dtype is not None else torch.float64
    idx = torch.arange(-width, width + orig_freq, dtype=idx_dtype)[None, None] / orig_freq
    t = torch.arange(0, -new_freq, -1, dtype=dtype)[:, None, None] / new_freq + idx
    t *= base_freq
    t = t.clamp_(-lowpass_filter_width, lowpass_filter_width)
    window = torch.cos(t * math.pi / lowpass_filter_width / 2) ** 2
    t *= math.pi
    scale = base_freq / orig_freq
    kernels = torch.where(t == 0, torch.tensor(1.0).to(t), t.sin() / t)
    kernels *= window * scale
    if dtype is None:
        kernels = kernels.to(dtype=torch.float32)
    return kernels, width


def _apply_sinc_resample_kernel(waveform, orig_freq, new_freq, gcd, kernel, width):
    orig_freq = int(orig_freq) // gcd
    new_freq = int(new_freq) // gcd
    shape = waveform.size()
    waveform = waveform.view(-1, shape[-1])
    num_wavs, length = waveform.shape
    waveform = F.pad(waveform, (width, width + orig_freq))
    resampled = F.conv1d(waveform[:, None], kernel, stride=orig_freq)
    resampled = resampled.transpose(1, 2).reshape(num_wavs, -1)
    target_length = torch.ceil(torch.as_tensor(new_freq * length / orig_freq)).long()
    resampled = resampled[..., :target_length]
    resampled = resampled.view(shape[:-1] + resampled.shape[-1:])
    return resampled


def resample(waveform, orig_freq, new_freq):
    gcd = math.gcd(int(orig_freq), int(new_freq))
    kernel, width = _get_sinc_resample_kernel(orig_freq, new_freq, gcd, dtype=waveform.dtype)
    return _apply_sinc_resample_kernel(waveform, orig_freq, new_freq, gcd, kernel, width)


# ---- a fixed signal: a chirp plus two tones ---------------------------------------------
sr = 8000
n_fft, hop, n_mels, n_mfcc = 256, 64, 20, 13
t = torch.arange(0, 0.25, 1 / sr)
wave = 0.5 * torch.sin(2 * math.pi * (300 + 2000 * t) * t) + 0.2 * torch.sin(
    2 * math.pi * 1200 * t) + 0.1 * torch.cos(2 * math.pi * 3100 * t)
wave = wave.unsqueeze(0)
print("waveform", wave.shape, wave.dtype, f"{wave.abs().max().item():.5f}")

window = torch.hann_window(n_fft)
print("hann", window.shape, window[:4], window.sum())
print("hann periodic=False", torch.hann_window(8, periodic=False))
fb = melscale_fbanks(n_fft // 2 + 1, 0.0, sr / 2.0, n_mels, sr)
fb_slaney = melscale_fbanks(n_fft // 2 + 1, 20.0, 3800.0, n_mels, sr, norm="slaney",
                            mel_scale="slaney")
print("fbank", fb.shape, f"{fb.sum().item():.4f}", fb[10:14, 1])
print("fbank slaney", f"{fb_slaney.sum().item():.5f}", (fb_slaney > 0).sum(0)[:8].tolist())

spec_c = spectrogram(wave, 0, window, n_fft, hop, n_fft, None, False)
print("stft", spec_c.shape, spec_c.dtype, spec_c[0, 5, 3])
spec = spectrogram(wave, 0, window, n_fft, hop, n_fft, 2.0, False)
print("power spec", spec.shape, spec.dtype, f"{spec.sum().item():.3f}")
spec_n = spectrogram(wave, 0, window, n_fft, hop, n_fft, 1.0, True)
print("magnitude normalized", f"{spec_n.mean().item():.5f}")
mel = torch.matmul(spec.transpose(-1, -2), fb).transpose(-1, -2)
print("mel", mel.shape, mel[0, :3, 4])
db = amplitude_to_DB(mel, 10.0, 1e-10, math.log10(max(1e-10, 1.0)), top_db=80.0)
print("dB", db.shape, f"{db.max().item():.4f}", f"{db.min().item():.4f}", db[0, :4, 0])
dct = create_dct(n_mfcc, n_mels, "ortho")
print("dct", dct.shape, dct[:3, :3])
print("dct orthonormal", torch.allclose(dct.t() @ dct, torch.eye(n_mfcc), atol=1e-5))
mfcc = torch.matmul(db.transpose(-1, -2), dct).transpose(-1, -2)
print("mfcc", mfcc.shape, mfcc[0, :4, 2])

# Griffin-Lim: magnitude -> waveform -> magnitude
torch.manual_seed(1)
rec = griffinlim(spec, window, n_fft, hop, n_fft, 2.0, 16, 0.99, wave.shape[-1], False)
print("griffinlim", rec.shape, rec.dtype)
spec_rec = spectrogram(rec, 0, window, n_fft, hop, n_fft, 2.0, False)
err = (spec_rec.sqrt() - spec.sqrt()).norm() / spec.sqrt().norm()
print("griffinlim spectral convergence", f"{err.item():.4f}")
inv = torch.istft(spec_c, n_fft, hop_length=hop, window=window, length=wave.shape[-1])
print("istft round trip", f"{(inv - wave).abs().max().item():.2e}" if False else
      bool((inv - wave).abs().max() < 1e-5))

# resampling
down = resample(wave, sr, 6000)
up = resample(wave, sr, 11025)
print("resample", down.shape, up.shape, f"{down.pow(2).mean().item():.6f}",
      f"{up.pow(2).mean().item():.6f}")
kernel, width = _get_sinc_resample_kernel(8000, 6000, 2000)
print("sinc kernel", kernel.shape, width, kernel.dtype, kernel[0, 0, 4:8])

# SpecAugment
torch.manual_seed(2)
batch_spec = db.expand(4, 1, -1, -1).clone()
masked = mask_along_axis_iid(batch_spec, 6, 0.0, 3)
masked = mask_along_axis_iid(masked, 4, 0.0, 2)
print("specaugment zeros per example", (masked == 0).sum(dim=(1, 2, 3)).tolist())

# ---- a keyword classifier on log-mel features ----------------------------------------
n_cls, n_per = 3, 8
freqs = torch.tensor([400.0, 1100.0, 2500.0])
tt = torch.arange(0, 0.12, 1 / sr)
waves, labels = [], []
for c in range(n_cls):
    for _ in range(n_per):
        f0 = freqs[c] * (1 + 0.05 * torch.randn(()))
        w = torch.sin(2 * math.pi * f0 * tt) + 0.3 * torch.randn(tt.shape)
        waves.append(w)
        labels.append(c)
waves = torch.stack(waves)
labels = torch.tensor(labels)
feat_spec = spectrogram(waves, 0, window, n_fft, hop, n_fft, 2.0, False)
feats = amplitude_to_DB(torch.matmul(feat_spec.transpose(-1, -2), fb).transpose(-1, -2),
                        10.0, 1e-10, 0.0, top_db=80.0)
feats = (feats - feats.mean()) / feats.std()
feats = feats.unsqueeze(1)
print("features", feats.shape)


class KWS(nn.Module):
    def __init__(self, n_classes):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(1, 8, kernel_size=3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
            nn.MaxPool2d((2, 1)),
            nn.Conv2d(8, 16, kernel_size=3, padding=1), nn.ReLU())
        self.fc = nn.Linear(16, n_classes)

    def forward(self, x):
        x = self.conv(x)
        x = x.mean(dim=(2, 3))
        return self.fc(x)


model = KWS(n_cls)
print(model)
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-2, total_steps=10)
for step in range(10):
    x = mask_along_axis_iid(feats, 4, 0.0, 3)
    logits = model(x)
    loss = F.cross_entropy(logits, labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
    acc = (logits.argmax(-1) == labels).float().mean()
    print(f"kws step {step} loss {loss.item():.4f} acc {acc.item():.3f} "
          f"lr {sched.get_last_lr()[0]:.6f}")
