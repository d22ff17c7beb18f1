"""Glow-lite (in the style of rosinality/glow-pytorch and chaiyujin/glow-pytorch): ActNorm
with data-dependent initialisation on the first batch, an invertible 1x1 convolution with
torch.linalg.slogdet and its LU-decomposed variant (torch.linalg.lu, tril/triu masks,
torch.diag, log of |s|), an affine coupling whose scale goes through torch.sigmoid, squeeze
by view/permute, a learned-prior top, and training in bits per dimension on tiny 8x8 data."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

logabs = lambda x: torch.log(torch.abs(x))  # noqa: E731 (as in glow-pytorch)


class ActNorm(nn.Module):
    def __init__(self, in_channel, logdet=True):
        super().__init__()
        self.loc = nn.Parameter(torch.zeros(1, in_channel, 1, 1))
        self.scale = nn.Parameter(torch.ones(1, in_channel, 1, 1))
        self.register_buffer("initialized", torch.tensor(0, dtype=torch.uint8))
        self.logdet = logdet

    def initialize(self, input):
        with torch.no_grad():
            flatten = input.permute(1, 0, 2, 3).contiguous().view(input.shape[1], -1)
            mean = flatten.mean(1).unsqueeze(1).unsqueeze(2).unsqueeze(3).permute(1, 0, 2, 3)
            std = flatten.std(1).unsqueeze(1).unsqueeze(2).unsqueeze(3).permute(1, 0, 2, 3)
            self.loc.data.copy_(-mean)
            self.scale.data.copy_(1 / (std + 1e-6))

    def forward(self, input):
        _, _, height, width = input.shape
        if self.initialized.item() == 0:
            self.initialize(input)
            self.initialized.fill_(1)
        log_abs = logabs(self.scale)
        logdet = height * width * torch.sum(log_abs)
        return self.scale * (input + self.loc), logdet

    def reverse(self, output):
        return output / self.scale - self.loc


class InvConv2d(nn.Module):
    def __init__(self, in_channel):
        super().__init__()
        weight = torch.randn(in_channel, in_channel)
        q, _ = torch.linalg.qr(weight)
        weight = q.unsqueeze(2).unsqueeze(3)
        self.weight = nn.Parameter(weight)

    def forward(self, input):
        _, _, height, width = input.shape
        out = F.conv2d(input, self.weight)
        logdet = height * width * torch.linalg.slogdet(self.weight.squeeze().double())[1].float()
        return out, logdet

    def reverse(self, output):
        return F.conv2d(output, self.weight.squeeze().inverse().unsqueeze(2).unsqueeze(3))


class InvConv2dLU(nn.Module):
    def __init__(self, in_channel):
        super().__init__()
        weight = np.random.randn(in_channel, in_channel)
        q, _ = np.linalg.qr(weight)
        w_p, w_l, w_u = torch.linalg.lu(torch.from_numpy(q).float())
        w_s = torch.diag(w_u)
        w_u = torch.triu(w_u, 1)
        u_mask = torch.triu(torch.ones_like(w_u), 1)
        l_mask = u_mask.T
        self.register_buffer("w_p", w_p)
        self.register_buffer("u_mask", u_mask)
        self.register_buffer("l_mask", l_mask)
        self.register_buffer("s_sign", torch.sign(w_s))
        self.register_buffer("l_eye", torch.eye(l_mask.shape[0]))
        self.w_l = nn.Parameter(w_l)
        self.w_s = nn.Parameter(logabs(w_s))
        self.w_u = nn.Parameter(w_u)

    def forward(self, input):
        _, _, height, width = input.shape
        weight = self.calc_weight()
        out = F.conv2d(input, weight)
        logdet = height * width * torch.sum(self.w_s)
        return out, logdet

    def calc_weight(self):
        weight = (
            self.w_p
            @ (self.w_l * self.l_mask + self.l_eye)
            @ ((self.w_u * self.u_mask) + torch.diag(self.s_sign * torch.exp(self.w_s)))
        )
        return weight.unsqueeze(2).unsqueeze(3)

    def reverse(self, output):
        weight = self.calc_weight()
        return F.conv2d(output, weight.squeeze().inverse().unsqueeze(2).unsqueeze(3))


class ZeroConv2d(nn.Module):
    def __init__(self, in_channel, out_channel):
        super().__init__()
        self.conv = nn.Conv2d(in_channel, out_channel, 3, padding=0)
        self.conv.weight.data.zero_()
        self.conv.bias.data.zero_()
        self.scale = nn.Parameter(torch.zeros(1, out_channel, 1, 1))

    def forward(self, input):
        out = F.pad(input, [1, 1, 1, 1], value=1)
        out = self.conv(out)
        return out * torch.exp(self.scale * 3)


class AffineCoupling(nn.Module):
    def __init__(self, in_channel, filter_size=32):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(in_channel // 2, filter_size, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(filter_size, filter_size, 1),
            nn.ReLU(inplace=True),
            ZeroConv2d(filter_size, in_channel),
        )
        self.net[0].weight.data.normal_(0, 0.05)
        self.net[0].bias.data.zero_()
        self.net[2].weight.data.normal_(0, 0.05)
        self.net[2].bias.data.zero_()

    def forward(self, input):
        in_a, in_b = input.chunk(2, 1)
        log_s, t = self.net(in_a).chunk(2, 1)
        s = torch.sigmoid(log_s + 2)
        out_b = (in_b + t) * s
        logdet = torch.sum(torch.log(s).view(input.shape[0], -1), 1)
        return torch.cat([in_a, out_b], 1), logdet

    def reverse(self, output):
        out_a, out_b = output.chunk(2, 1)
        log_s, t = self.net(out_a).chunk(2, 1)
        s = torch.sigmoid(log_s + 2)
        in_b = out_b / s - t
        return torch.cat([out_a, in_b], 1)


class Flow(nn.Module):
    def __init__(self, in_channel, conv_lu=True):
        super().__init__()
        self.actnorm = ActNorm(in_channel)
        self.invconv = InvConv2dLU(in_channel) if conv_lu else InvConv2d(in_channel)
        self.coupling = AffineCoupling(in_channel)

    def forward(self, input):
        out, logdet = self.actnorm(input)
        out, det1 = self.invconv(out)
        out, det2 = self.coupling(out)
        logdet = logdet + det1
        if det2 is not None:
            logdet = logdet + det2
        return out, logdet

    def reverse(self, output):
        input = self.coupling.reverse(output)
        input = self.invconv.reverse(input)
        return self.actnorm.reverse(input)


def gaussian_log_p(x, mean, log_sd):
    return -0.5 * math.log(2 * math.pi) - log_sd - 0.5 * (x - mean) ** 2 / torch.exp(2 * log_sd)


def squeeze2d(input):
    b_size, n_channel, height, width = input.shape
    squeezed = input.view(b_size, n_channel, height // 2, 2, width // 2, 2)
    squeezed = squeezed.permute(0, 1, 3, 5, 2, 4)
    return squeezed.contiguous().view(b_size, n_channel * 4, height // 2, width // 2)


def unsqueeze2d(output):
    b_size, n_channel, height, width = output.shape
    unsqueezed = output.view(b_size, n_channel // 4, 2, 2, height, width)
    unsqueezed = unsqueezed.permute(0, 1, 4, 2, 5, 3)
    return unsqueezed.contiguous().view(b_size, n_channel // 4, height * 2, width * 2)


class Glow(nn.Module):
    def __init__(self, in_channel, n_flow, conv_lu=True):
        super().__init__()
        squeeze_dim = in_channel * 4
        self.flows = nn.ModuleList([Flow(squeeze_dim, conv_lu=conv_lu) for _ in range(n_flow)])
        self.prior = ZeroConv2d(squeeze_dim, squeeze_dim * 2)

    def forward(self, input):
        out = squeeze2d(input)
        logdet = 0
        for flow in self.flows:
            out, det = flow(out)
            logdet = logdet + det
        zero = torch.zeros_like(out)
        mean, log_sd = self.prior(zero).chunk(2, 1)
        log_p = gaussian_log_p(out, mean, log_sd).view(input.shape[0], -1).sum(1)
        return log_p, logdet, out

    def reverse(self, z):
        for flow in self.flows[::-1]:
            z = flow.reverse(z)
        return unsqueeze2d(z)


def calc_loss(log_p, logdet, image_size, n_bins):
    n_pixel = image_size * image_size * 1
    loss = -math.log(n_bins) * n_pixel
    loss = loss + logdet + log_p
    return (
        (-loss / (math.log(2) * n_pixel)).mean(),
        (log_p / (math.log(2) * n_pixel)).mean(),
        (logdet / (math.log(2) * n_pixel)).mean(),
    )


def make_data(n, size=8):
    """Blobs: a bright square at a random place on a dark background, values in [0, 1]."""
    x = torch.zeros(n, 1, size, size)
    pos = torch.randint(0, size - 3, (n, 2))
    for i in range(n):
        r, c = pos[i].tolist()
        x[i, 0, r:r + 3, c:c + 3] = 1.0
    return x * 0.8 + 0.1 * torch.rand(n, 1, size, size)


def main():
    torch.manual_seed(0)
    np.random.seed(0)
    n_bits = 5
    n_bins = 2.0 ** n_bits
    image_size = 8

    # the plain invertible 1x1 conv: logdet by slogdet agrees with log|det| of the weight
    conv = InvConv2d(4)
    x = torch.randn(2, 4, 3, 3)
    y, ld = conv(x)
    sign, logabsdet = torch.linalg.slogdet(conv.weight.squeeze())
    print("slogdet sign", sign.item(), "|det| is 1", abs(logabsdet.item()) < 1e-5, "logdet", ld.shape)
    print("invconv reverse ok", (conv.reverse(y) - x).abs().max().item() < 1e-5)

    # LU variant: weight rebuilt from P, L, U equals the QR-orthogonal start
    lu = InvConv2dLU(4)
    w = lu.calc_weight().squeeze()
    print("LU masks", lu.u_mask.tolist(), lu.l_mask.sum().item())
    print("w_p is permutation", bool((lu.w_p.sum(0) == 1).all() and (lu.w_p.sum(1) == 1).all()))
    print("W orthogonal", torch.allclose(w @ w.T, torch.eye(4), atol=1e-5))
    print("nuclear norm", round(torch.norm(w.detach(), p="nuc").item(), 4))
    print("s_sign", lu.s_sign)

    model = Glow(1, n_flow=3, conv_lu=True)
    print(model)
    print("parameters", sum(p.numel() for p in model.parameters()))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    data = make_data(64, image_size)
    print("data", data.shape, data.dtype, round(data.mean().item(), 4))
    for i in range(12):
        image = data[(i * 16) % 64:(i * 16) % 64 + 16]
        image = torch.floor(image * 255 / 2 ** (8 - n_bits))
        image = image / n_bins - 0.5
        if i == 0:
            with torch.no_grad():
                log_p, logdet, _ = model(image + torch.rand_like(image) / n_bins)
                print("actnorm initialized", [int(f.actnorm.initialized) for f in model.flows])
                print("actnorm loc", model.flows[0].actnorm.loc.flatten()[:4])
            continue
        log_p, logdet, z = model(image + torch.rand_like(image) / n_bins)
        logdet = logdet.mean()
        loss, log_p, log_det = calc_loss(log_p, logdet, image_size, n_bins)
        model.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {i:2d} loss: {loss.item():.5f}; logP: {log_p.item():.5f}; logdet: {log_det.item():.5f}")

    print("z shape", tuple(z.shape))
    with torch.no_grad():
        _, _, z = model(image)
        rec = model.reverse(z)
        print("reconstruction ok", torch.allclose(rec, image, atol=1e-4))
        z_sample = torch.randn(4, 4, 4, 4) * 0.7
        sample = model.reverse(z_sample)
        print("sample", sample.shape, bool(torch.isfinite(sample).all()))


if __name__ == "__main__":
    main()
