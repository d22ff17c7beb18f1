"""HiFi-GAN, scaled down, as jik876/hifi-gan's models.py and meldataset.py write it: the
generator's weight_norm'ed ConvTranspose1d upsampling and ResBlock1 with dilations
(1, 3, 5), LeakyReLU(0.1), init_weights normal_(0, 0.01), remove_weight_norm for
inference; the multi-period discriminator reshaping (b, c, t) to (b, c, t // p, p) after
a reflect pad; feature-matching, discriminator and generator least-squares losses; the
L1 mel loss on torch.stft magnitudes with torch.hann_window and a mel filterbank built
from torch.linspace (librosa-free); AdamW with ExponentialLR, as the training script."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn import Conv1d, ConvTranspose1d, Conv2d
from torch.nn.utils import weight_norm, remove_weight_norm, spectral_norm
from torch.nn.utils import parametrizations

LRELU_SLOPE = 0.1


def init_weights(m, mean=0.0, std=0.01):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        m.weight.data.normal_(mean, std)


def get_padding(kernel_size, dilation=1):
    return int((kernel_size*dilation - dilation)/2)


class ResBlock1(torch.nn.Module):
    def __init__(self, h, channels, kernel_size=3, dilation=(1, 3, 5)):
        super(ResBlock1, self).__init__()
        self.h = h
        self.convs1 = nn.ModuleList([
            weight_norm(Conv1d(channels, channels, kernel_size, 1, dilation=dilation[0],
                               padding=get_padding(kernel_size, dilation[0]))),
            weight_norm(Conv1d(channels, channels, kernel_size, 1, dilation=dilation[1],
                               padding=get_padding(kernel_size, dilation[1]))),
            weight_norm(Conv1d(channels, channels, kernel_size, 1, dilation=dilation[2],
                               padding=get_padding(kernel_size, dilation[2])))
        ])
        self.convs1.apply(init_weights)

        self.convs2 = nn.ModuleList([
            weight_norm(Conv1d(channels, channels, kernel_size, 1, dilation=1,
                               padding=get_padding(kernel_size, 1))),
            weight_norm(Conv1d(channels, channels, kernel_size, 1, dilation=1,
                               padding=get_padding(kernel_size, 1))),
            weight_norm(Conv1d(channels, channels, kernel_size, 1, dilation=1,
                               padding=get_padding(kernel_size, 1)))
        ])
        self.convs2.apply(init_weights)

    def forward(self, x):
        for c1, c2 in zip(self.convs1, self.convs2):
            xt = F.leaky_relu(x, LRELU_SLOPE)
            xt = c1(xt)
            xt = F.leaky_relu(xt, LRELU_SLOPE)
            xt = c2(xt)
            x = xt + x
        return x

    def remove_weight_norm(self):
        for l in self.convs1:
            remove_weight_norm(l)
        for l in self.convs2:
            remove_weight_norm(l)


class AttrDict(dict):
    def __init__(self, *args, **kwargs):
        super(AttrDict, self).__init__(*args, **kwargs)
        self.__dict__ = self


class Generator(torch.nn.Module):
    def __init__(self, h):
        super(Generator, self).__init__()
        self.h = h
        self.num_kernels = len(h.resblock_kernel_sizes)
        self.num_upsamples = len(h.upsample_rates)
        self.conv_pre = weight_norm(Conv1d(h.num_mels, h.upsample_initial_channel, 7, 1, padding=3))
        resblock = ResBlock1

        self.ups = nn.ModuleList()
        for i, (u, k) in enumerate(zip(h.upsample_rates, h.upsample_kernel_sizes)):
            self.ups.append(weight_norm(
                ConvTranspose1d(h.upsample_initial_channel//(2**i), h.upsample_initial_channel//(2**(i+1)),
                                k, u, padding=(k-u)//2)))

        self.resblocks = nn.ModuleList()
        for i in range(len(self.ups)):
            ch = h.upsample_initial_channel//(2**(i+1))
            for j, (k, d) in enumerate(zip(h.resblock_kernel_sizes, h.resblock_dilation_sizes)):
                self.resblocks.append(resblock(h, ch, k, d))

        self.conv_post = weight_norm(Conv1d(ch, 1, 7, 1, padding=3))
        self.ups.apply(init_weights)
        self.conv_post.apply(init_weights)

    def forward(self, x):
        x = self.conv_pre(x)
        for i in range(self.num_upsamples):
            x = F.leaky_relu(x, LRELU_SLOPE)
            x = self.ups[i](x)
            xs = None
            for j in range(self.num_kernels):
                if xs is None:
                    xs = self.resblocks[i*self.num_kernels+j](x)
                else:
                    xs += self.resblocks[i*self.num_kernels+j](x)
            x = xs / self.num_kernels
        x = F.leaky_relu(x)
        x = self.conv_post(x)
        x = torch.tanh(x)

        return x

    def remove_weight_norm(self):
        print('Removing weight norm...')
        for l in self.ups:
            remove_weight_norm(l)
        for l in self.resblocks:
            l.remove_weight_norm()
        remove_weight_norm(self.conv_pre)
        remove_weight_norm(self.conv_post)


class DiscriminatorP(torch.nn.Module):
    def __init__(self, period, kernel_size=5, stride=3, use_spectral_norm=False):
        super(DiscriminatorP, self).__init__()
        self.period = period
        norm_f = parametrizations.weight_norm if use_spectral_norm == False else spectral_norm
        self.convs = nn.ModuleList([
            norm_f(Conv2d(1, 8, (kernel_size, 1), (stride, 1), padding=(get_padding(5, 1), 0))),
            norm_f(Conv2d(8, 16, (kernel_size, 1), (stride, 1), padding=(get_padding(5, 1), 0))),
            norm_f(Conv2d(16, 16, (kernel_size, 1), 1, padding=(2, 0))),
        ])
        self.conv_post = norm_f(Conv2d(16, 1, (3, 1), 1, padding=(1, 0)))

    def forward(self, x):
        fmap = []

        # 1d to 2d
        b, c, t = x.shape
        if t % self.period != 0: # pad first
            n_pad = self.period - (t % self.period)
            x = F.pad(x, (0, n_pad), "reflect")
            t = t + n_pad
        x = x.view(b, c, t // self.period, self.period)

        for l in self.convs:
            x = l(x)
            x = F.leaky_relu(x, LRELU_SLOPE)
            fmap.append(x)
        x = self.conv_post(x)
        fmap.append(x)
        x = torch.flatten(x, 1, -1)

        return x, fmap


class MultiPeriodDiscriminator(torch.nn.Module):
    def __init__(self):
        super(MultiPeriodDiscriminator, self).__init__()
        self.discriminators = nn.ModuleList([
            DiscriminatorP(2),
            DiscriminatorP(3),
            DiscriminatorP(5),
        ])

    def forward(self, y, y_hat):
        y_d_rs = []
        y_d_gs = []
        fmap_rs = []
        fmap_gs = []
        for i, d in enumerate(self.discriminators):
            y_d_r, fmap_r = d(y)
            y_d_g, fmap_g = d(y_hat)
            y_d_rs.append(y_d_r)
            fmap_rs.append(fmap_r)
            y_d_gs.append(y_d_g)
            fmap_gs.append(fmap_g)

        return y_d_rs, y_d_gs, fmap_rs, fmap_gs


def feature_loss(fmap_r, fmap_g):
    loss = 0
    for dr, dg in zip(fmap_r, fmap_g):
        for rl, gl in zip(dr, dg):
            loss += torch.mean(torch.abs(rl - gl))

    return loss*2


def discriminator_loss(disc_real_outputs, disc_generated_outputs):
    loss = 0
    r_losses = []
    g_losses = []
    for dr, dg in zip(disc_real_outputs, disc_generated_outputs):
        r_loss = torch.mean((1-dr)**2)
        g_loss = torch.mean(dg**2)
        loss += (r_loss + g_loss)
        r_losses.append(r_loss.item())
        g_losses.append(g_loss.item())

    return loss, r_losses, g_losses


def generator_loss(disc_outputs):
    loss = 0
    gen_losses = []
    for dg in disc_outputs:
        l = torch.mean((1-dg)**2)
        gen_losses.append(l)
        loss += l

    return loss, gen_losses


def hz_to_mel(f):
    return 2595.0 * torch.log10(1.0 + f / 700.0)


def mel_to_hz(m):
    return 700.0 * (10.0 ** (m / 2595.0) - 1.0)


def mel_filterbank(sr, n_fft, n_mels, fmin, fmax):
    """Triangular HTK mel filters, (n_mels, n_fft // 2 + 1), as librosa.filters.mel(htk=True)
    without its Slaney normalisation."""
    fftfreqs = torch.linspace(0, sr / 2, n_fft // 2 + 1)
    mel_pts = torch.linspace(hz_to_mel(torch.tensor(float(fmin))).item(),
                             hz_to_mel(torch.tensor(float(fmax))).item(), n_mels + 2)
    hz_pts = mel_to_hz(mel_pts)
    fdiff = torch.diff(hz_pts)
    ramps = hz_pts.unsqueeze(1) - fftfreqs.unsqueeze(0)
    lower = -ramps[:-2] / fdiff[:-1].unsqueeze(1)
    upper = ramps[2:] / fdiff[1:].unsqueeze(1)
    return torch.clamp(torch.minimum(lower, upper), min=0.0)


mel_basis = {}
hann_window = {}


def dynamic_range_compression_torch(x, C=1, clip_val=1e-5):
    return torch.log(torch.clamp(x, min=clip_val) * C)


def spectral_normalize_torch(magnitudes):
    output = dynamic_range_compression_torch(magnitudes)
    return output


def mel_spectrogram(y, n_fft, num_mels, sampling_rate, hop_size, win_size, fmin, fmax, center=False):
    if torch.min(y) < -1.:
        print('min value is ', torch.min(y))
    if torch.max(y) > 1.:
        print('max value is ', torch.max(y))

    global mel_basis, hann_window
    if str(fmax)+'_'+str(y.device) not in mel_basis:
        mel = mel_filterbank(sampling_rate, n_fft, num_mels, fmin, fmax)
        mel_basis[str(fmax)+'_'+str(y.device)] = mel.float().to(y.device)
        hann_window[str(y.device)] = torch.hann_window(win_size).to(y.device)

    y = torch.nn.functional.pad(y.unsqueeze(1), (int((n_fft-hop_size)/2), int((n_fft-hop_size)/2)), mode='reflect')
    y = y.squeeze(1)

    spec = torch.stft(y, n_fft, hop_length=hop_size, win_length=win_size, window=hann_window[str(y.device)],
                      center=center, pad_mode='reflect', normalized=False, onesided=True, return_complex=True)
    spec = torch.view_as_real(spec)

    spec = torch.sqrt(spec.pow(2).sum(-1)+(1e-9))

    spec = torch.matmul(mel_basis[str(fmax)+'_'+str(y.device)], spec)
    spec = spectral_normalize_torch(spec)

    return spec


def main():
    torch.manual_seed(1234)
    h = AttrDict(num_mels=16, upsample_rates=[4, 4], upsample_kernel_sizes=[8, 8],
                 upsample_initial_channel=32, resblock_kernel_sizes=[3, 5],
                 resblock_dilation_sizes=[[1, 3, 5], [1, 3, 5]], n_fft=64, hop_size=16,
                 win_size=64, sampling_rate=8000, fmin=0, fmax=4000)

    wn = weight_norm(nn.Conv1d(2, 3, 3))
    print(wn)
    print("weight_norm params", sorted(n for n, _ in wn.named_parameters()))
    print("weight_g", wn.weight_g.shape, "weight_v", wn.weight_v.shape)
    print("norm matches", torch.allclose(wn.weight_g.flatten(), wn.weight_v.flatten(1).norm(dim=1)))
    remove_weight_norm(wn)
    print("removed", sorted(n for n, _ in wn.named_parameters()))
    pwn = parametrizations.weight_norm(nn.Conv2d(1, 2, (3, 1)))
    print(pwn)
    print("parametrized", sorted(n for n, _ in pwn.named_parameters()))
    print("original0", pwn.parametrizations.weight.original0.shape,
          "original1", pwn.parametrizations.weight.original1.shape)
    # a checkpoint saved with the old weight_norm loads into the parametrized module
    old = weight_norm(nn.Conv2d(1, 2, (3, 1)))
    print("old checkpoint", pwn.load_state_dict(old.state_dict()), torch.equal(pwn.weight, old.weight))
    torch.nn.utils.parametrize.remove_parametrizations(pwn, "weight")
    print("parametrize removed", sorted(n for n, _ in pwn.named_parameters()))

    generator = Generator(h)
    mpd = MultiPeriodDiscriminator()
    print(generator.ups)
    print(mpd.discriminators[0])
    print("generator params", sum(p.numel() for p in generator.parameters()))
    print("mpd params", sum(p.numel() for p in mpd.parameters()))

    up = generator.ups[0]
    z = torch.randn(1, 32, 5)
    print("convtranspose out", up(z).shape, "padding", up.padding, "output_padding", up.output_padding)

    mel = mel_filterbank(h.sampling_rate, h.n_fft, h.num_mels, h.fmin, h.fmax)
    print("mel basis", mel.shape, f"{mel.sum().item():.4f}", mel.argmax(dim=1).tolist())
    win = torch.hann_window(8)
    print("hann", win)
    print("hann periodic=False", torch.hann_window(5, periodic=False))

    # a tiny "dataset": two chirps and a tone, 512 samples each
    t = torch.arange(512) / h.sampling_rate
    wavs = torch.stack([
        0.5 * torch.sin(2 * math.pi * (200 + 1500 * t) * t),
        0.4 * torch.sin(2 * math.pi * 440 * t),
        0.3 * torch.sin(2 * math.pi * (1200 - 900 * t) * t),
    ])
    mels = mel_spectrogram(wavs, h.n_fft, h.num_mels, h.sampling_rate, h.hop_size, h.win_size,
                           h.fmin, h.fmax)
    print("mel spectrogram", mels.shape, f"{mels.mean().item():.4f}", f"{mels.min().item():.4f}")
    spec = torch.stft(wavs, 64, hop_length=16, win_length=64, window=torch.hann_window(64),
                      center=True, pad_mode='reflect', return_complex=True)
    print("stft", spec.shape, spec.dtype, f"{spec.abs().max().item():.4f}")

    y_g = generator(mels)
    print("generated", y_g.shape)
    y = wavs.unsqueeze(1)[..., :y_g.shape[-1]]
    y_d_rs, y_d_gs, fmap_rs, fmap_gs = mpd(y, y_g)
    print("mpd outputs", [tuple(o.shape) for o in y_d_rs])
    print("fmap shapes", [tuple(f.shape) for f in fmap_rs[1]])

    optim_g = torch.optim.AdamW(generator.parameters(), 2e-3, betas=[0.8, 0.99])
    optim_d = torch.optim.AdamW(mpd.parameters(), 2e-3, betas=[0.8, 0.99])
    scheduler_g = torch.optim.lr_scheduler.ExponentialLR(optim_g, gamma=0.99)
    scheduler_d = torch.optim.lr_scheduler.ExponentialLR(optim_d, gamma=0.99)
    generator.train()
    mpd.train()
    for steps in range(10):
        y_g_hat = generator(mels)
        y_g_hat_mel = mel_spectrogram(y_g_hat.squeeze(1), h.n_fft, h.num_mels, h.sampling_rate,
                                      h.hop_size, h.win_size, h.fmin, h.fmax)
        optim_d.zero_grad()
        # MPD
        y_df_hat_r, y_df_hat_g, _, _ = mpd(y, y_g_hat.detach())
        loss_disc_f, losses_disc_f_r, losses_disc_f_g = discriminator_loss(y_df_hat_r, y_df_hat_g)
        loss_disc_all = loss_disc_f
        loss_disc_all.backward()
        optim_d.step()

        # Generator
        optim_g.zero_grad()
        # L1 Mel-Spectrogram Loss
        loss_mel = F.l1_loss(mels[..., :y_g_hat_mel.shape[-1]], y_g_hat_mel) * 45
        y_df_hat_r, y_df_hat_g, fmap_f_r, fmap_f_g = mpd(y, y_g_hat)
        loss_fm_f = feature_loss(fmap_f_r, fmap_f_g)
        loss_gen_f, losses_gen_f = generator_loss(y_df_hat_g)
        loss_gen_all = loss_gen_f + loss_fm_f + loss_mel
        loss_gen_all.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(generator.parameters(), 1000.0)
        optim_g.step()
        scheduler_g.step()
        scheduler_d.step()
        print('Steps : {:d}, Gen Loss Total : {:4.3f}, Mel-Spec. Error : {:4.3f}, Disc : {:4.3f}, grad {:4.3f}'.
              format(steps, loss_gen_all.item(), loss_mel.item() / 45, loss_disc_all.item(), grad_norm.item()))

    generator.eval()
    generator.remove_weight_norm()
    print(generator.conv_pre)
    print("after removal", sorted(n for n, _ in generator.conv_pre.named_parameters()))
    with torch.no_grad():
        audio = generator(mels[:1]).squeeze()
    audio = audio * 32768.0
    audio = audio.cpu().numpy().astype('int16')
    print("audio", audio.shape, audio.dtype)
    print("lr", scheduler_g.get_last_lr())


if __name__ == "__main__":
    main()
