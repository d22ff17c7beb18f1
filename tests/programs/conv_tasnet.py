"""Conv-TasNet, scaled down, as Kaituo Xu's Conv-TasNet repository (and Asteroid) write it:
a Conv1d encoder with ReLU, a separator of dilated depthwise-separable TCN blocks (1x1 Conv1d,
PReLU, global layer norm as GroupNorm(1, C) and as the repository's own gLN with
mean over (1, 2), dilated depthwise Conv1d with groups=C, residual and skip 1x1 convs), masks
via sigmoid, a ConvTranspose1d decoder plus an overlap-and-add variant with
torch.nn.functional.fold / unfold, F.pad to the stride, and the scale-invariant SNR loss with
permutation invariant training (itertools.permutations, torch.stack, .min(dim=...)),
trained with Adam on two-speaker mixtures of synthetic sinusoids."""
import itertools
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
EPS = 1e-8


class GlobalLayerNorm(nn.Module):
    """Global Layer Normalization (gLN)"""
    def __init__(self, channel_size):
        super(GlobalLayerNorm, self).__init__()
        self.gamma = nn.Parameter(torch.Tensor(1, channel_size, 1))
        self.beta = nn.Parameter(torch.Tensor(1, channel_size, 1))
        self.reset_parameters()

    def reset_parameters(self):
        self.gamma.data.fill_(1)
        self.beta.data.zero_()

    def forward(self, y):
        mean = y.mean(dim=1, keepdim=True).mean(dim=2, keepdim=True)
        var = (torch.pow(y - mean, 2)).mean(dim=1, keepdim=True).mean(dim=2, keepdim=True)
        return self.gamma * (y - mean) / torch.pow(var + EPS, 0.5) + self.beta


class Encoder(nn.Module):
    def __init__(self, L, N):
        super(Encoder, self).__init__()
        self.L, self.N = L, N
        self.conv1d_U = nn.Conv1d(1, N, kernel_size=L, stride=L // 2, bias=False)

    def forward(self, mixture):
        mixture = torch.unsqueeze(mixture, 1)  # [M, 1, T]
        return F.relu(self.conv1d_U(mixture))  # [M, N, K]


class DepthwiseSeparableConv(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 norm_type="gLN"):
        super(DepthwiseSeparableConv, self).__init__()
        depthwise_conv = nn.Conv1d(in_channels, in_channels, kernel_size, stride=stride,
                                   padding=padding, dilation=dilation, groups=in_channels,
                                   bias=False)
        prelu = nn.PReLU()
        norm = GlobalLayerNorm(in_channels) if norm_type == "gLN" else nn.GroupNorm(1, in_channels, eps=1e-8)
        pointwise_conv = nn.Conv1d(in_channels, out_channels, 1, bias=False)
        self.net = nn.Sequential(depthwise_conv, prelu, norm, pointwise_conv)

    def forward(self, x):
        return self.net(x)


class TemporalBlock(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 norm_type="gLN"):
        super(TemporalBlock, self).__init__()
        conv1x1 = nn.Conv1d(in_channels, out_channels, 1, bias=False)
        prelu = nn.PReLU()
        norm = nn.GroupNorm(1, out_channels, eps=1e-8)
        dsconv = DepthwiseSeparableConv(out_channels, in_channels, kernel_size, stride,
                                        padding, dilation, norm_type)
        self.net = nn.Sequential(conv1x1, prelu, norm, dsconv)
        self.skip = nn.Conv1d(out_channels, in_channels, 1)

    def forward(self, x):
        residual = x
        out = self.net(x)
        return out + residual


class TemporalConvNet(nn.Module):
    def __init__(self, N, B, H, P, X, R, C, mask_nonlinear="sigmoid"):
        super(TemporalConvNet, self).__init__()
        self.C = C
        self.mask_nonlinear = mask_nonlinear
        layer_norm = nn.GroupNorm(1, N, eps=1e-8)
        bottleneck_conv1x1 = nn.Conv1d(N, B, 1, bias=False)
        repeats = []
        for r in range(R):
            blocks = []
            for x in range(X):
                dilation = 2**x
                padding = (P - 1) * dilation // 2
                blocks += [TemporalBlock(B, H, P, stride=1, padding=padding, dilation=dilation,
                                         norm_type="gLN" if x % 2 == 0 else "GN")]
            repeats += [nn.Sequential(*blocks)]
        temporal_conv_net = nn.Sequential(*repeats)
        mask_conv1x1 = nn.Conv1d(B, C * N, 1, bias=False)
        self.network = nn.Sequential(layer_norm, bottleneck_conv1x1, temporal_conv_net,
                                     mask_conv1x1)

    def forward(self, mixture_w):
        M, N, K = mixture_w.size()
        score = self.network(mixture_w)  # [M, N, K] -> [M, C*N, K]
        score = score.view(M, self.C, N, K)
        if self.mask_nonlinear == "softmax":
            est_mask = F.softmax(score, dim=1)
        else:
            est_mask = torch.sigmoid(score)
        return est_mask


class Decoder(nn.Module):
    def __init__(self, N, L):
        super(Decoder, self).__init__()
        self.N, self.L = N, L
        self.basis_signals = nn.ConvTranspose1d(N, 1, L, stride=L // 2, bias=False)

    def forward(self, mixture_w, est_mask):
        source_w = torch.unsqueeze(mixture_w, 1) * est_mask  # [M, C, N, K]
        M, C, N, K = source_w.shape
        return self.basis_signals(source_w.view(M * C, N, K)).view(M, C, -1)


def overlap_and_add_fold(frames, frame_step):
    """The same decoder output by F.fold: frames [B, L, K] -> signal [B, (K-1)*step + L]."""
    B, L, K = frames.shape
    length = (K - 1) * frame_step + L
    out = F.fold(frames, output_size=(1, length), kernel_size=(1, L), stride=(1, frame_step))
    return out.view(B, length)


class ConvTasNet(nn.Module):
    def __init__(self, N, L, B, H, P, X, R, C, mask_nonlinear="sigmoid"):
        super(ConvTasNet, self).__init__()
        self.N, self.L, self.C = N, L, C
        self.encoder = Encoder(L, N)
        self.separator = TemporalConvNet(N, B, H, P, X, R, C, mask_nonlinear)
        self.decoder = Decoder(N, L)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_normal_(p)

    def forward(self, mixture):
        T_origin = mixture.size(-1)
        rest = (self.L // 2 - (T_origin - self.L) % (self.L // 2)) % (self.L // 2)
        mixture = F.pad(mixture, (0, rest))
        mixture_w = self.encoder(mixture)
        est_mask = self.separator(mixture_w)
        est_source = self.decoder(mixture_w, est_mask)
        T_conv = est_source.size(-1)
        est_source = F.pad(est_source, (0, T_origin - T_conv))
        return est_source


def cal_si_snr(source, estimate_source):
    """Scale-invariant SNR per (batch, speaker), zero-mean first."""
    source = source - torch.mean(source, dim=-1, keepdim=True)
    estimate_source = estimate_source - torch.mean(estimate_source, dim=-1, keepdim=True)
    ref_energy = torch.sum(source ** 2, dim=-1, keepdim=True) + EPS
    proj = torch.sum(source * estimate_source, dim=-1, keepdim=True) * source / ref_energy
    noise = estimate_source - proj
    ratio = torch.sum(proj ** 2, dim=-1) / (torch.sum(noise ** 2, dim=-1) + EPS)
    return 10 * torch.log10(ratio + EPS)


def pit_si_snr_loss(source, estimate_source):
    """Asteroid's PITLossWrapper(pit_from='perm_avg'): every permutation, the best one."""
    C = source.size(1)
    perms = list(itertools.permutations(range(C)))
    losses = torch.stack([-cal_si_snr(source[:, list(p)], estimate_source).mean(dim=1)
                          for p in perms], dim=1)  # [B, n_perms]
    min_loss, min_idx = losses.min(dim=1)
    best_perm = torch.tensor(perms)[min_idx]
    return min_loss.mean(), best_perm


def make_mixtures(batch, T):
    t = torch.arange(T, dtype=torch.float32) / 800.0
    f1 = 40 + 60 * torch.rand(batch, 1)
    f2 = 150 + 100 * torch.rand(batch, 1)
    s1 = torch.sin(2 * math.pi * f1 * t)
    s2 = 0.7 * torch.sign(torch.sin(2 * math.pi * f2 * t + torch.rand(batch, 1)))
    sources = torch.stack([s1, s2], dim=1)
    return sources.sum(1), sources


model = ConvTasNet(N=16, L=8, B=16, H=32, P=3, X=3, R=1, C=2)
print(model)
print("parameters", sum(p.numel() for p in model.parameters() if p.requires_grad))
prelu = model.separator.network[2][0][0].net[1]
print("prelu", prelu.weight, prelu(torch.tensor([-2.0, 3.0])))

# overlap-add by fold agrees with ConvTranspose1d of an identity basis
frames = torch.arange(12.0).view(1, 4, 3)
print("fold ola", overlap_and_add_fold(frames, 2))
deconv = nn.ConvTranspose1d(4, 1, 4, stride=2, bias=False)
with torch.no_grad():
    deconv.weight.copy_(torch.eye(4).view(4, 1, 4))
print("convtranspose ola", deconv(frames).view(1, -1))
x = torch.arange(10.0).view(1, 1, 1, 10)
patches = F.unfold(x, kernel_size=(1, 4), stride=(1, 2))
print("unfold", patches.shape, patches[0, :, :2])
ones = F.fold(torch.ones_like(patches), (1, 10), kernel_size=(1, 4), stride=(1, 2))
print("fold/unfold roundtrip", torch.allclose(F.fold(patches, (1, 10), (1, 4), stride=(1, 2)) / ones, x))
gn = nn.GroupNorm(1, 4, eps=1e-8)
y = torch.randn(2, 4, 6)
gln = GlobalLayerNorm(4)
print("gLN == GroupNorm(1, C)", torch.allclose(gn(y), gln(y), atol=1e-5), gn)
print("pad", F.pad(torch.ones(1, 5), (0, 3)), F.pad(torch.ones(1, 2, 3), (1, 1), mode="reflect"))

src = torch.stack([torch.sin(torch.arange(16.0)), torch.cos(torch.arange(16.0))]).unsqueeze(0)
print("si-snr", cal_si_snr(src, src.flip(1) * 2 + 0.01))
loss, perm = pit_si_snr_loss(src, src.flip(1) + 0.1 * torch.cos(torch.arange(16.0) * 3))
print("pit", loss, perm)

T = 400
mixture, sources = make_mixtures(8, T)
print("mixture", mixture.shape, "sources", sources.shape)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range(25):
    est = model(mixture)
    loss, perm = pit_si_snr_loss(sources, est)
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 5)
    optimizer.step()
    if step % 4 == 0 or step == 24:
        print(f"step {step:3d} loss {loss.item():.4f} est {tuple(est.shape)} perm {perm[0].tolist()}")
model.eval()
with torch.no_grad():
    est = model(mixture)
    print("eval si-snr", cal_si_snr(sources, est).mean().item(), "mixture si-snr",
          cal_si_snr(sources, mixture.unsqueeze(1).expand_as(sources)).mean().item())
