"""An audio classifier without torchaudio (in the style of the keyword-spotting and
ESC-50 baselines that build their front end in torch): synthetic tones and chirps,
torch.stft with a hann_window and return_complex=True, a power spectrogram, a mel
filterbank built in torch (HTK mel scale, triangular filters), log-mel with clamp_min,
per-utterance normalisation, SpecAugment time/frequency masking with masked_fill,
F.pad to a fixed number of frames, and a small Conv2d net trained with AdamW."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

SAMPLE_RATE = 8000
N_FFT = 256
HOP = 64
N_MELS = 32


def hz_to_mel(f):
    return 2595.0 * torch.log10(1.0 + f / 700.0)


def mel_to_hz(m):
    return 700.0 * (10.0 ** (m / 2595.0) - 1.0)


def melscale_fbanks(n_freqs, f_min, f_max, n_mels, sample_rate):
    """Triangular filters on the HTK mel scale, (n_freqs, n_mels), as torchaudio builds them."""
    all_freqs = torch.linspace(0, sample_rate // 2, n_freqs)
    m_min, m_max = hz_to_mel(torch.tensor(f_min)), hz_to_mel(torch.tensor(f_max))
    m_pts = torch.linspace(m_min, m_max, n_mels + 2)
    f_pts = mel_to_hz(m_pts)
    f_diff = f_pts[1:] - f_pts[:-1]
    slopes = f_pts.unsqueeze(0) - all_freqs.unsqueeze(1)
    down_slopes = (-1.0 * slopes[:, :-2]) / f_diff[:-1]
    up_slopes = slopes[:, 2:] / f_diff[1:]
    return torch.max(torch.zeros(1), torch.min(down_slopes, up_slopes))


class LogMel(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("window", torch.hann_window(N_FFT))
        self.register_buffer("fb", melscale_fbanks(N_FFT // 2 + 1, 0.0, SAMPLE_RATE / 2, N_MELS,
                                                   SAMPLE_RATE))

    def forward(self, wav):
        spec = torch.stft(wav, n_fft=N_FFT, hop_length=HOP, win_length=N_FFT, window=self.window,
                          center=True, pad_mode="reflect", normalized=False, onesided=True,
                          return_complex=True)
        power = spec.abs().pow(2.0)  # (B, freq, time)
        mel = torch.matmul(power.transpose(-1, -2), self.fb).transpose(-1, -2)
        logmel = torch.log10(mel.clamp_min(1e-10))
        mean = logmel.mean(dim=(-2, -1), keepdim=True)
        std = logmel.std(dim=(-2, -1), keepdim=True)
        return (logmel - mean) / (std + 1e-5)


def spec_augment(spec, freq_mask=6, time_mask=8, num_masks=2):
    """SpecAugment-style masks: random bands of mel bins and frames set to the mean (0)."""
    b, n_mels, n_frames = spec.shape
    mask = torch.zeros_like(spec, dtype=torch.bool)
    for _ in range(num_masks):
        f = torch.randint(0, freq_mask + 1, (b, 1, 1))
        f0 = torch.randint(0, n_mels - freq_mask, (b, 1, 1))
        mels = torch.arange(n_mels).view(1, -1, 1)
        mask |= (mels >= f0) & (mels < f0 + f)
        t = torch.randint(0, time_mask + 1, (b, 1, 1))
        t0 = torch.randint(0, n_frames - time_mask, (b, 1, 1))
        frames = torch.arange(n_frames).view(1, 1, -1)
        mask |= (frames >= t0) & (frames < t0 + t)
    return spec.masked_fill(mask, 0.0)


def pad_frames(spec, n_frames):
    missing = n_frames - spec.size(-1)
    if missing > 0:
        return F.pad(spec, (0, missing), mode="constant", value=0.0)
    return spec[..., :n_frames]


class AudioCNN(nn.Module):
    def __init__(self, n_classes=4):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, kernel_size=3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, kernel_size=3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 16, kernel_size=3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.AdaptiveAvgPool2d((1, 1)),
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Dropout(0.1), nn.Linear(16, n_classes))

    def forward(self, x):
        return self.classifier(self.features(x.unsqueeze(1)))


def synth(n, seconds=0.5):
    """Four classes: a low tone, a high tone, a rising chirp, noise bursts."""
    t = torch.arange(int(SAMPLE_RATE * seconds)) / SAMPLE_RATE
    labels = torch.randint(0, 4, (n,))
    waves = []
    for label in labels.tolist():
        jitter = 1.0 + 0.05 * torch.randn(())
        if label == 0:
            w = torch.sin(2 * math.pi * 300.0 * jitter * t)
        elif label == 1:
            w = torch.sin(2 * math.pi * 2000.0 * jitter * t)
        elif label == 2:
            w = torch.sin(2 * math.pi * (200.0 + 3000.0 * t) * jitter * t)
        else:
            w = torch.randn_like(t) * (torch.rand(t.shape) > 0.7).float()
        waves.append(0.5 * w + 0.05 * torch.randn_like(t))
    return torch.stack(waves), labels


def main():
    torch.manual_seed(0)
    win = torch.hann_window(8)
    print("hann_window", win)
    print("periodic=False", torch.hann_window(5, periodic=False))
    fb = melscale_fbanks(N_FFT // 2 + 1, 0.0, SAMPLE_RATE / 2, N_MELS, SAMPLE_RATE)
    print("fbanks", tuple(fb.shape), "row sums", fb.sum(0)[:4])
    print("mel(1000 Hz)", hz_to_mel(torch.tensor(1000.0)))

    wav, labels = synth(48)
    print("waves", wav.shape, wav.dtype, "labels", labels.bincount(minlength=4))
    frontend = LogMel()
    spec = torch.stft(wav[:2], N_FFT, hop_length=HOP, window=frontend.window, return_complex=True)
    print("stft", spec.shape, spec.dtype, spec.real.dtype)
    print("power peak bin", spec.abs().pow(2).mean(-1).argmax(-1))
    print("a bin", spec[0, 10, 5:7], "phase", spec[0, 10, 5:7].angle())
    print("view_as_real", torch.view_as_real(spec).shape, torch.polar(spec.abs(), spec.angle()).dtype)
    back = torch.istft(spec, N_FFT, hop_length=HOP, window=frontend.window, length=wav.size(-1))
    print("istft error", (back - wav[:2]).abs().max().item() < 1e-4)
    frames = F.pad(wav[:2], (N_FFT // 2, N_FFT // 2), mode="reflect").unfold(-1, N_FFT, HOP)
    manual = torch.fft.rfft(frames * frontend.window, dim=-1).transpose(-1, -2)
    print("frames", frames.shape, "manual stft agrees", torch.allclose(manual, spec, atol=1e-3))
    print("windows", torch.hamming_window(4), torch.blackman_window(4, periodic=False),
          torch.kaiser_window(4, periodic=False, beta=8.0))
    feats = frontend(wav)
    print("log-mel", feats.shape, f"{feats.mean().item():.4f}", f"{feats.std().item():.4f}")
    n_frames = 64
    feats = pad_frames(feats, n_frames)
    print("padded", feats.shape, "zeros at the end", bool((feats[..., -1] == 0).all()))
    aug = spec_augment(feats[:4])
    print("masked fraction", f"{(aug == 0).float().mean().item():.4f}")

    model = AudioCNN()
    print(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-2)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=10)
    train_x, train_y = feats[:40], labels[:40]
    for epoch in range(10):
        model.train()
        perm = torch.randperm(40)
        total = 0.0
        for i in range(0, 40, 10):
            idx = perm[i:i + 10]
            x = spec_augment(train_x[idx])
            loss = F.cross_entropy(model(x), train_y[idx])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            total += loss.item()
        scheduler.step()
        print(f"epoch {epoch} loss {total / 4:.4f} lr {scheduler.get_last_lr()[0]:.6f}")

    model.eval()
    with torch.no_grad():
        logits = model(feats[40:])
        probs = F.softmax(logits, dim=-1)
        print("probs", probs.shape, "rows sum to 1", torch.allclose(probs.sum(-1), torch.ones(8)))
        acc = (logits.argmax(-1) == labels[40:]).float().mean().item()
    print(f"held-out accuracy {acc:.2f}")


if __name__ == "__main__":
    main()
