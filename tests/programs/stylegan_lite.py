"""StyleGAN2 pieces (Karras et al.; as rosinality/stylegan2-pytorch writes them, tiny):
equalized-learning-rate EqualLinear/EqualConv2d (weight * scale at forward, lr_mul),
a mapping network with PixelNorm, ModulatedConv2d with demodulation done by reshaping the
batch into groups (F.conv2d(input.view(1, batch * in_channel, h, w), weight, groups=batch)),
NoiseInjection, fused leaky ReLU (leaky_relu(0.2) * sqrt(2)), ToRGB with upsampled skips,
a small discriminator, the non-saturating logistic loss (softplus) and the R1 penalty
through autograd.grad(create_graph=True), path-length-free lazy regularization, and
accumulate() for the EMA generator."""
import argparse
import math
import random

import torch
from torch import autograd, nn
from torch.nn import functional as F


class PixelNorm(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, input):
        return input * torch.rsqrt(torch.mean(input ** 2, dim=1, keepdim=True) + 1e-8)


def fused_leaky_relu(input, bias=None, negative_slope=0.2, scale=2 ** 0.5):
    if bias is not None:
        rest_dim = [1] * (input.ndim - bias.ndim - 1)
        input = input + bias.view(1, bias.shape[0], *rest_dim)
    return F.leaky_relu(input, negative_slope=negative_slope) * scale


class FusedLeakyReLU(nn.Module):
    def __init__(self, channel, bias=True, negative_slope=0.2, scale=2 ** 0.5):
        super().__init__()
        if bias:
            self.bias = nn.Parameter(torch.zeros(channel))
        else:
            self.bias = None
        self.negative_slope = negative_slope
        self.scale = scale

    def forward(self, input):
        return fused_leaky_relu(input, self.bias, self.negative_slope, self.scale)


class EqualConv2d(nn.Module):
    def __init__(self, in_channel, out_channel, kernel_size, stride=1, padding=0, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_channel, in_channel, kernel_size, kernel_size))
        self.scale = 1 / math.sqrt(in_channel * kernel_size ** 2)
        self.stride = stride
        self.padding = padding
        if bias:
            self.bias = nn.Parameter(torch.zeros(out_channel))
        else:
            self.bias = None

    def forward(self, input):
        out = F.conv2d(input, self.weight * self.scale, bias=self.bias, stride=self.stride,
                       padding=self.padding)
        return out

    def __repr__(self):
        return (
            f"{self.__class__.__name__}({self.weight.shape[1]}, {self.weight.shape[0]},"
            f" {self.weight.shape[2]}, stride={self.stride}, padding={self.padding})"
        )


class EqualLinear(nn.Module):
    def __init__(self, in_dim, out_dim, bias=True, bias_init=0, lr_mul=1, activation=None):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_dim, in_dim).div_(lr_mul))
        if bias:
            self.bias = nn.Parameter(torch.zeros(out_dim).fill_(bias_init))
        else:
            self.bias = None
        self.activation = activation
        self.scale = (1 / math.sqrt(in_dim)) * lr_mul
        self.lr_mul = lr_mul

    def forward(self, input):
        if self.activation:
            out = F.linear(input, self.weight * self.scale)
            out = fused_leaky_relu(out, self.bias * self.lr_mul)
        else:
            out = F.linear(input, self.weight * self.scale, bias=self.bias * self.lr_mul)
        return out

    def __repr__(self):
        return f"{self.__class__.__name__}({self.weight.shape[1]}, {self.weight.shape[0]})"


class ModulatedConv2d(nn.Module):
    def __init__(self, in_channel, out_channel, kernel_size, style_dim, demodulate=True,
                 upsample=False):
        super().__init__()
        self.eps = 1e-8
        self.kernel_size = kernel_size
        self.in_channel = in_channel
        self.out_channel = out_channel
        self.upsample = upsample
        fan_in = in_channel * kernel_size ** 2
        self.scale = 1 / math.sqrt(fan_in)
        self.padding = kernel_size // 2
        self.weight = nn.Parameter(torch.randn(1, out_channel, in_channel, kernel_size, kernel_size))
        self.modulation = EqualLinear(style_dim, in_channel, bias_init=1)
        self.demodulate = demodulate

    def __repr__(self):
        return (
            f"{self.__class__.__name__}({self.in_channel}, {self.out_channel}, {self.kernel_size}, "
            f"upsample={self.upsample})"
        )

    def forward(self, input, style):
        batch, in_channel, height, width = input.shape
        style = self.modulation(style).view(batch, 1, in_channel, 1, 1)
        weight = self.scale * self.weight * style
        if self.demodulate:
            demod = torch.rsqrt(weight.pow(2).sum([2, 3, 4]) + 1e-8)
            weight = weight * demod.view(batch, self.out_channel, 1, 1, 1)
        weight = weight.view(batch * self.out_channel, in_channel, self.kernel_size, self.kernel_size)
        if self.upsample:
            input = F.interpolate(input, scale_factor=2, mode="bilinear", align_corners=False)
            height, width = input.shape[-2:]
        input = input.view(1, batch * in_channel, height, width)
        out = F.conv2d(input, weight, padding=self.padding, groups=batch)
        _, _, height, width = out.shape
        out = out.view(batch, self.out_channel, height, width)
        return out


class NoiseInjection(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(1))

    def forward(self, image, noise=None):
        if noise is None:
            batch, _, height, width = image.shape
            noise = image.new_empty(batch, 1, height, width).normal_()
        return image + self.weight * noise


class ConstantInput(nn.Module):
    def __init__(self, channel, size=4):
        super().__init__()
        self.input = nn.Parameter(torch.randn(1, channel, size, size))

    def forward(self, input):
        batch = input.shape[0]
        out = self.input.repeat(batch, 1, 1, 1)
        return out


class StyledConv(nn.Module):
    def __init__(self, in_channel, out_channel, kernel_size, style_dim, upsample=False,
                 demodulate=True):
        super().__init__()
        self.conv = ModulatedConv2d(in_channel, out_channel, kernel_size, style_dim,
                                    upsample=upsample, demodulate=demodulate)
        self.noise = NoiseInjection()
        self.activate = FusedLeakyReLU(out_channel)

    def forward(self, input, style, noise=None):
        out = self.conv(input, style)
        out = self.noise(out, noise=noise)
        out = self.activate(out)
        return out


class ToRGB(nn.Module):
    def __init__(self, in_channel, style_dim, upsample=True):
        super().__init__()
        self.upsample = upsample
        self.conv = ModulatedConv2d(in_channel, 3, 1, style_dim, demodulate=False)
        self.bias = nn.Parameter(torch.zeros(1, 3, 1, 1))

    def forward(self, input, style, skip=None):
        out = self.conv(input, style)
        out = out + self.bias
        if skip is not None:
            if self.upsample:
                skip = F.interpolate(skip, scale_factor=2, mode="bilinear", align_corners=False)
            out = out + skip
        return out


class Generator(nn.Module):
    def __init__(self, size=16, style_dim=16, n_mlp=2, channel=16, lr_mlp=0.01):
        super().__init__()
        self.size = size
        self.style_dim = style_dim
        layers = [PixelNorm()]
        for i in range(n_mlp):
            layers.append(EqualLinear(style_dim, style_dim, lr_mul=lr_mlp, activation="fused_lrelu"))
        self.style = nn.Sequential(*layers)
        self.input = ConstantInput(channel)
        self.conv1 = StyledConv(channel, channel, 3, style_dim)
        self.to_rgb1 = ToRGB(channel, style_dim, upsample=False)
        self.log_size = int(math.log(size, 2))
        self.convs = nn.ModuleList()
        self.to_rgbs = nn.ModuleList()
        for i in range(3, self.log_size + 1):
            self.convs.append(StyledConv(channel, channel, 3, style_dim, upsample=True))
            self.convs.append(StyledConv(channel, channel, 3, style_dim))
            self.to_rgbs.append(ToRGB(channel, style_dim))
        self.n_latent = self.log_size * 2 - 2

    def mean_latent(self, n_latent):
        latent_in = torch.randn(n_latent, self.style_dim, device=self.input.input.device)
        latent = self.style(latent_in).mean(0, keepdim=True)
        return latent

    def forward(self, styles, truncation=1, truncation_latent=None):
        styles = [self.style(s) for s in styles]
        if truncation < 1:
            styles = [truncation_latent + truncation * (style - truncation_latent)
                      for style in styles]
        if len(styles) < 2:
            latent = styles[0].unsqueeze(1).repeat(1, self.n_latent, 1)
        else:
            inject_index = random.randint(1, self.n_latent - 1)
            latent = styles[0].unsqueeze(1).repeat(1, inject_index, 1)
            latent2 = styles[1].unsqueeze(1).repeat(1, self.n_latent - inject_index, 1)
            latent = torch.cat([latent, latent2], 1)
        out = self.input(latent)
        out = self.conv1(out, latent[:, 0])
        skip = self.to_rgb1(out, latent[:, 1])
        i = 1
        for conv1, conv2, to_rgb in zip(self.convs[::2], self.convs[1::2], self.to_rgbs):
            out = conv1(out, latent[:, i])
            out = conv2(out, latent[:, i + 1])
            skip = to_rgb(out, latent[:, i + 2], skip)
            i += 2
        image = skip
        return image, latent


class Discriminator(nn.Module):
    def __init__(self, size=16, channel=16):
        super().__init__()
        self.convs = nn.Sequential(
            EqualConv2d(3, channel, 1), FusedLeakyReLU(channel),
            EqualConv2d(channel, channel, 3, padding=1), FusedLeakyReLU(channel),
            nn.AvgPool2d(2),
            EqualConv2d(channel, channel, 3, padding=1), FusedLeakyReLU(channel),
            nn.AvgPool2d(2))
        self.final_linear = nn.Sequential(
            EqualLinear(channel * (size // 4) ** 2, channel, activation="fused_lrelu"),
            EqualLinear(channel, 1))

    def forward(self, input):
        out = self.convs(input)
        out = out.view(out.shape[0], -1)
        return self.final_linear(out)


def requires_grad(model, flag=True):
    for p in model.parameters():
        p.requires_grad = flag


def accumulate(model1, model2, decay=0.999):
    par1 = dict(model1.named_parameters())
    par2 = dict(model2.named_parameters())
    for k in par1.keys():
        par1[k].data.mul_(decay).add_(par2[k].data, alpha=1 - decay)


def d_logistic_loss(real_pred, fake_pred):
    real_loss = F.softplus(-real_pred)
    fake_loss = F.softplus(fake_pred)
    return real_loss.mean() + fake_loss.mean()


def d_r1_loss(real_pred, real_img):
    grad_real, = autograd.grad(outputs=real_pred.sum(), inputs=real_img, create_graph=True)
    grad_penalty = grad_real.pow(2).reshape(grad_real.shape[0], -1).sum(1).mean()
    return grad_penalty


def g_nonsaturating_loss(fake_pred):
    loss = F.softplus(-fake_pred).mean()
    return loss


def mixing_noise(batch, latent_dim, prob, device):
    if prob > 0 and random.random() < prob:
        return torch.randn(2, batch, latent_dim, device=device).unbind(0)
    else:
        return [torch.randn(batch, latent_dim, device=device)]


def real_images(batch, size, generator):
    """Smooth blobs: a gaussian bump at a random place, in a random colour."""
    coords = torch.linspace(-1, 1, size)
    yy, xx = torch.meshgrid(coords, coords, indexing="ij")
    centre = torch.rand(batch, 2, generator=generator) - 0.5
    colour = torch.rand(batch, 3, 1, 1, generator=generator) * 2 - 1
    d2 = (xx - centre[:, 0, None, None]) ** 2 + (yy - centre[:, 1, None, None]) ** 2
    return colour * torch.exp(-d2 / 0.2).unsqueeze(1)


def main():
    parser = argparse.ArgumentParser(description="StyleGAN2 trainer")
    parser.add_argument("--iter", type=int, default=10)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--size", type=int, default=16)
    parser.add_argument("--r1", type=float, default=10)
    parser.add_argument("--d_reg_every", type=int, default=4)
    parser.add_argument("--g_reg_every", type=int, default=4)
    parser.add_argument("--mixing", type=float, default=0.9)
    parser.add_argument("--lr", type=float, default=0.002)
    args = parser.parse_args()

    random.seed(0)
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    args.latent = 16

    generator = Generator(args.size, args.latent).to(device)
    discriminator = Discriminator(args.size).to(device)
    g_ema = Generator(args.size, args.latent).to(device)
    g_ema.eval()
    accumulate(g_ema, generator, 0)
    print(generator.convs[0])
    print(generator.style)
    print(discriminator.convs[:3])
    print("G params:", sum(p.numel() for p in generator.parameters()),
          "D params:", sum(p.numel() for p in discriminator.parameters()))

    # the grouped modulated conv equals one conv per sample with its own weight
    conv = generator.convs[1].conv
    x = torch.randn(3, 16, 8, 8)
    s = torch.randn(3, 16)
    grouped = conv(x, s)
    per_sample = []
    for b in range(3):
        w = conv.scale * conv.weight * conv.modulation(s[b:b + 1]).view(1, 1, -1, 1, 1)
        w = w * torch.rsqrt(w.pow(2).sum([2, 3, 4]) + 1e-8).view(1, -1, 1, 1, 1)
        per_sample.append(F.conv2d(x[b:b + 1], w[0], padding=1))
    print("grouped conv matches per-sample conv:",
          torch.allclose(grouped, torch.cat(per_sample), atol=1e-5))

    g_reg_ratio = args.g_reg_every / (args.g_reg_every + 1)
    d_reg_ratio = args.d_reg_every / (args.d_reg_every + 1)
    g_optim = torch.optim.Adam(generator.parameters(), lr=args.lr * g_reg_ratio,
                               betas=(0 ** g_reg_ratio, 0.99 ** g_reg_ratio))
    d_optim = torch.optim.Adam(discriminator.parameters(), lr=args.lr * d_reg_ratio,
                               betas=(0 ** d_reg_ratio, 0.99 ** d_reg_ratio))
    data_gen = torch.Generator().manual_seed(1)
    accum = 0.5 ** (32 / (10 * 1000))
    r1_loss = torch.tensor(0.0, device=device)
    loss_dict = {}
    for i in range(args.iter):
        real_img = real_images(args.batch, args.size, data_gen).to(device)

        requires_grad(generator, False)
        requires_grad(discriminator, True)
        noise = mixing_noise(args.batch, args.latent, args.mixing, device)
        fake_img, _ = generator(noise)
        fake_pred = discriminator(fake_img)
        real_pred = discriminator(real_img)
        d_loss = d_logistic_loss(real_pred, fake_pred)
        loss_dict["d"] = d_loss
        loss_dict["real_score"] = real_pred.mean()
        loss_dict["fake_score"] = fake_pred.mean()
        discriminator.zero_grad()
        d_loss.backward()
        d_optim.step()

        d_regularize = i % args.d_reg_every == 0
        if d_regularize:
            real_img.requires_grad = True
            real_pred = discriminator(real_img)
            r1_loss = d_r1_loss(real_pred, real_img)
            discriminator.zero_grad()
            (args.r1 / 2 * r1_loss * args.d_reg_every + 0 * real_pred[0]).backward()
            d_optim.step()
        loss_dict["r1"] = r1_loss

        requires_grad(generator, True)
        requires_grad(discriminator, False)
        noise = mixing_noise(args.batch, args.latent, args.mixing, device)
        fake_img, _ = generator(noise)
        fake_pred = discriminator(fake_img)
        g_loss = g_nonsaturating_loss(fake_pred)
        loss_dict["g"] = g_loss
        generator.zero_grad()
        g_loss.backward()
        g_optim.step()

        accumulate(g_ema, generator, accum)
        d_loss_val = loss_dict["d"].mean().item()
        g_loss_val = loss_dict["g"].mean().item()
        r1_val = loss_dict["r1"].mean().item()
        print(f"d: {d_loss_val:.4f}; g: {g_loss_val:.4f}; r1: {r1_val:.4f}; "
              f"real: {loss_dict['real_score'].item():.4f}; "
              f"fake: {loss_dict['fake_score'].item():.4f}")

    with torch.no_grad():
        mean_latent = g_ema.mean_latent(64)
        sample_z = torch.randn(4, args.latent, device=device)
        sample, _ = g_ema([sample_z], truncation=0.7, truncation_latent=mean_latent)
    print("sample", tuple(sample.shape), "finite:", bool(torch.isfinite(sample).all()),
          "noise weights", [round(m.weight.item(), 4) != 0 for m in generator.modules()
                            if isinstance(m, NoiseInjection)])
    torch.save({"g": generator.state_dict(), "d": discriminator.state_dict(),
                "g_ema": g_ema.state_dict(), "g_optim": g_optim.state_dict(),
                "d_optim": d_optim.state_dict(), "args": args}, "ckpt.pt")
    ckpt = torch.load("ckpt.pt", map_location=lambda storage, loc: storage, weights_only=False)
    g2 = Generator(args.size, args.latent)
    g2.load_state_dict(ckpt["g_ema"])
    print("checkpoint keys:", sorted(ckpt), "args.size", ckpt["args"].size)


if __name__ == "__main__":
    main()
