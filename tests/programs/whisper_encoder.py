"""Whisper's audio encoder, scaled down, as openai/whisper's audio.py and model.py write it:
log-mel features from torch.stft (window=torch.hann_window(N_FFT), return_complex=True),
magnitudes = stft[..., :-1].abs() ** 2, a mel filterbank matmul, clamp(min=1e-10).log10(),
torch.maximum(log_spec, log_spec.max() - 8.0), (log_spec + 4.0) / 4.0; the Conv1d stem with
GELU, a sinusoidal positional embedding buffer, residual attention blocks with
nn.MultiheadAttention(batch_first=True) and F.scaled_dot_product_attention, trained as a
tiny audio classifier with AdamW."""
import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

SAMPLE_RATE = 1600
N_FFT = 64
HOP_LENGTH = 16
N_MELS = 16


def mel_filters(n_mels: int = N_MELS) -> torch.Tensor:
    """A triangular mel filterbank (librosa.filters.mel, slaney-free), made with NumPy."""
    def hz_to_mel(f):
        return 2595.0 * np.log10(1.0 + f / 700.0)

    def mel_to_hz(m):
        return 700.0 * (10 ** (m / 2595.0) - 1.0)

    n_freqs = N_FFT // 2 + 1
    fftfreqs = np.linspace(0, SAMPLE_RATE / 2, n_freqs)
    mels = mel_to_hz(np.linspace(hz_to_mel(0.0), hz_to_mel(SAMPLE_RATE / 2), n_mels + 2))
    fdiff = np.diff(mels)
    ramps = mels[:, None] - fftfreqs[None, :]
    lower = -ramps[:-2] / fdiff[:-1, None]
    upper = ramps[2:] / fdiff[1:, None]
    weights = np.maximum(0, np.minimum(lower, upper))
    return torch.from_numpy(weights.astype(np.float32))


def log_mel_spectrogram(audio: torch.Tensor, n_mels: int = N_MELS, padding: int = 0):
    if padding > 0:
        audio = F.pad(audio, (0, padding))
    window = torch.hann_window(N_FFT).to(audio.device)
    stft = torch.stft(audio, N_FFT, HOP_LENGTH, window=window, return_complex=True)
    magnitudes = stft[..., :-1].abs() ** 2

    filters = mel_filters(n_mels)
    mel_spec = filters @ magnitudes

    log_spec = torch.clamp(mel_spec, min=1e-10).log10()
    log_spec = torch.maximum(log_spec, log_spec.max() - 8.0)
    log_spec = (log_spec + 4.0) / 4.0
    return log_spec


def sinusoids(length, channels, max_timescale=10000):
    """Returns sinusoids for positional embedding"""
    assert channels % 2 == 0
    log_timescale_increment = np.log(max_timescale) / (channels // 2 - 1)
    inv_timescales = torch.exp(-log_timescale_increment * torch.arange(channels // 2))
    scaled_time = torch.arange(length)[:, np.newaxis] * inv_timescales[np.newaxis, :]
    return torch.cat([torch.sin(scaled_time), torch.cos(scaled_time)], dim=1)


class LayerNorm(nn.LayerNorm):
    def forward(self, x: Tensor) -> Tensor:
        return super().forward(x.float()).type(x.dtype)


class Linear(nn.Linear):
    def forward(self, x: Tensor) -> Tensor:
        return F.linear(x, self.weight.to(x.dtype),
                        None if self.bias is None else self.bias.to(x.dtype))


class Conv1d(nn.Conv1d):
    def _conv_forward(self, x: Tensor, weight: Tensor, bias) -> Tensor:
        return super()._conv_forward(
            x, weight.to(x.dtype), None if bias is None else bias.to(x.dtype))


class MultiHeadAttention(nn.Module):
    def __init__(self, n_state: int, n_head: int):
        super().__init__()
        self.n_head = n_head
        self.query = Linear(n_state, n_state)
        self.key = Linear(n_state, n_state, bias=False)
        self.value = Linear(n_state, n_state)
        self.out = Linear(n_state, n_state)

    def forward(self, x: Tensor):
        q, k, v = self.query(x), self.key(x), self.value(x)
        n_batch, n_ctx, n_state = q.shape
        q = q.view(*q.shape[:2], self.n_head, -1).permute(0, 2, 1, 3)
        k = k.view(*k.shape[:2], self.n_head, -1).permute(0, 2, 1, 3)
        v = v.view(*v.shape[:2], self.n_head, -1).permute(0, 2, 1, 3)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=False)
        out = a.permute(0, 2, 1, 3).flatten(start_dim=2)
        return self.out(out)


class ResidualAttentionBlock(nn.Module):
    def __init__(self, n_state: int, n_head: int, torch_mha: bool = False):
        super().__init__()
        self.torch_mha = torch_mha
        if torch_mha:
            self.attn = nn.MultiheadAttention(n_state, n_head, batch_first=True)
        else:
            self.attn = MultiHeadAttention(n_state, n_head)
        self.attn_ln = LayerNorm(n_state)
        n_mlp = n_state * 4
        self.mlp = nn.Sequential(Linear(n_state, n_mlp), nn.GELU(), Linear(n_mlp, n_state))
        self.mlp_ln = LayerNorm(n_state)

    def forward(self, x: Tensor):
        h = self.attn_ln(x)
        if self.torch_mha:
            h, _ = self.attn(h, h, h, need_weights=False)
        else:
            h = self.attn(h)
        x = x + h
        x = x + self.mlp(self.mlp_ln(x))
        return x


class AudioEncoder(nn.Module):
    def __init__(self, n_mels: int, n_ctx: int, n_state: int, n_head: int, n_layer: int):
        super().__init__()
        self.conv1 = Conv1d(n_mels, n_state, kernel_size=3, padding=1)
        self.conv2 = Conv1d(n_state, n_state, kernel_size=3, stride=2, padding=1)
        self.register_buffer("positional_embedding", sinusoids(n_ctx, n_state))

        self.blocks = nn.ModuleList(
            [ResidualAttentionBlock(n_state, n_head, torch_mha=i % 2 == 1)
             for i in range(n_layer)])
        self.ln_post = LayerNorm(n_state)

    def forward(self, x: Tensor):
        """x : torch.Tensor, shape = (batch_size, n_mels, n_ctx)"""
        x = F.gelu(self.conv1(x))
        x = F.gelu(self.conv2(x))
        x = x.permute(0, 2, 1)

        assert x.shape[1:] == self.positional_embedding.shape, "incorrect audio shape"
        x = (x + self.positional_embedding).to(x.dtype)

        for block in self.blocks:
            x = block(x)

        x = self.ln_post(x)
        return x


class AudioClassifier(nn.Module):
    def __init__(self, n_ctx, n_classes=3):
        super().__init__()
        self.encoder = AudioEncoder(N_MELS, n_ctx, n_state=32, n_head=4, n_layer=2)
        self.head = nn.Linear(32, n_classes)

    def forward(self, mel):
        return self.head(self.encoder(mel).mean(dim=1))


def make_audio(n, rng):
    """Tones at one of three pitches with noise: the class is the pitch."""
    t = np.arange(384) / SAMPLE_RATE
    labels = rng.integers(0, 3, size=n)
    freqs = np.array([150.0, 400.0, 650.0])[labels]
    audio = np.sin(2 * np.pi * freqs[:, None] * t[None, :])
    audio += 0.1 * rng.standard_normal(audio.shape)
    return torch.from_numpy(audio.astype(np.float32)), torch.from_numpy(labels)


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    audio, labels = make_audio(24, rng)
    print("audio", tuple(audio.shape), audio.dtype, "labels", labels.tolist())

    window = torch.hann_window(N_FFT)
    print("hann window", window.shape, window[:4])
    stft = torch.stft(audio[0], N_FFT, HOP_LENGTH, window=window, return_complex=True)
    print("stft", stft.shape, stft.dtype, "is_complex", stft.is_complex())
    print("filters", mel_filters().shape, "rows sum", mel_filters().sum(1)[:4])
    mel = log_mel_spectrogram(audio)
    print("mel", tuple(mel.shape), f"min {mel.min().item():.4f} max {mel.max().item():.4f}")
    print("mel[0, :3, :4]", mel[0, :3, :4])

    n_ctx = mel.shape[-1] // 2
    pe = sinusoids(n_ctx, 32)
    print("sinusoids", pe.shape, pe[1, :3], pe[1, 16:19])

    model = AudioClassifier(n_ctx)
    print(model)
    print("parameters", sum(p.numel() for p in model.parameters()))
    print("buffers", [(n, tuple(b.shape)) for n, b in model.named_buffers()])

    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=24)
    for step in range(24):
        idx = torch.randperm(24)[:8]
        logits = model(mel[idx])
        loss = F.cross_entropy(logits, labels[idx])
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % 4 == 0 or step == 23:
            print(f"step {step:2d} loss {loss.item():.4f}")

    model.eval()
    with torch.no_grad():
        feats = model.encoder(mel[:2])
        acc = (model(mel).argmax(-1) == labels).float().mean().item()
    print("encoder out", tuple(feats.shape), feats.dtype)
    print("accuracy", acc >= 0.5)
    print("sdpa mask agrees", torch.allclose(
        F.scaled_dot_product_attention(feats[:, None], feats[:, None], feats[:, None]),
        torch.softmax(feats[:, None] @ feats[:, None].transpose(-2, -1) / math.sqrt(32), -1)
        @ feats[:, None], atol=1e-5))


if __name__ == "__main__":
    main()
