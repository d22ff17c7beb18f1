"""WaveNet (van den Oord et al. 2016; in the style of vincentherrmann/pytorch-wavenet and
r9y9/wavenet_vocoder, tiny): mu-law companding (torch.sign, torch.log1p, torch.abs) and
quantization to 256 classes, one-hot inputs via F.one_hot(...).permute, dilated causal
Conv1d layers (left padding with F.pad), gated activations tanh * sigmoid, residual and
skip 1x1 convolutions, a cross-entropy over the 256 classes, Adam with gradient clipping,
and fast autoregressive generation with torch.multinomial on a synthetic mixture of sines."""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def mu_law_encoding(x, quantization_channels=256):
    mu = quantization_channels - 1.0
    x_mu = torch.sign(x) * torch.log1p(mu * torch.abs(x)) / math.log1p(mu)
    x_mu = ((x_mu + 1) / 2 * mu + 0.5).to(torch.int64)
    return x_mu


def mu_law_decoding(x_mu, quantization_channels=256):
    mu = quantization_channels - 1.0
    x = (x_mu / mu) * 2 - 1.0
    x = torch.sign(x) * (torch.exp(torch.abs(x) * math.log1p(mu)) - 1.0) / mu
    return x


class CausalConv1d(nn.Conv1d):
    def __init__(self, in_channels, out_channels, kernel_size, dilation=1, **kwargs):
        super().__init__(in_channels, out_channels, kernel_size, padding=0, dilation=dilation,
                         **kwargs)
        self.left_padding = (kernel_size - 1) * dilation

    def forward(self, x):
        return super().forward(F.pad(x, (self.left_padding, 0)))


class ResidualLayer(nn.Module):
    def __init__(self, residual_channels, dilation_channels, skip_channels, dilation):
        super().__init__()
        self.filter_conv = CausalConv1d(residual_channels, dilation_channels, 2, dilation)
        self.gate_conv = CausalConv1d(residual_channels, dilation_channels, 2, dilation)
        self.residual_conv = nn.Conv1d(dilation_channels, residual_channels, 1)
        self.skip_conv = nn.Conv1d(dilation_channels, skip_channels, 1)

    def forward(self, x):
        out = torch.tanh(self.filter_conv(x)) * torch.sigmoid(self.gate_conv(x))
        skip = self.skip_conv(out)
        return (self.residual_conv(out) + x) * math.sqrt(0.5), skip


class WaveNet(nn.Module):
    def __init__(self, layers=4, blocks=2, residual_channels=16, dilation_channels=16,
                 skip_channels=32, classes=256):
        super().__init__()
        self.classes = classes
        self.start_conv = nn.Conv1d(classes, residual_channels, 1, bias=False)
        self.dilations = [2 ** i for _ in range(blocks) for i in range(layers)]
        self.layers = nn.ModuleList([ResidualLayer(residual_channels, dilation_channels,
                                                   skip_channels, d) for d in self.dilations])
        self.end_conv_1 = nn.Conv1d(skip_channels, skip_channels, 1)
        self.end_conv_2 = nn.Conv1d(skip_channels, classes, 1)
        self.receptive_field = sum(self.dilations) + 1

    def forward(self, input):
        x = self.start_conv(input)
        skip = 0
        for layer in self.layers:
            x, s = layer(x)
            skip = s + skip
        x = F.relu(skip)
        x = F.relu(self.end_conv_1(x))
        return self.end_conv_2(x)

    @torch.no_grad()
    def generate(self, num_samples, first_samples, temperature=1.0):
        self.eval()
        generated = first_samples.clone()
        for _ in range(num_samples):
            window = generated[-self.receptive_field:]
            x = F.one_hot(window, self.classes).float().t().unsqueeze(0)
            logits = self(x)[0, :, -1] / temperature
            prob = F.softmax(logits, dim=0)
            nxt = torch.multinomial(prob, 1)
            generated = torch.cat([generated, nxt])
        self.train()
        return generated


def make_audio(n, length, generator):
    t = torch.arange(length, dtype=torch.float32)
    freqs = torch.rand(n, 2, generator=generator) * 0.2 + 0.05
    phase = torch.rand(n, 2, generator=generator) * 2 * math.pi
    wave = 0.6 * torch.sin(freqs[:, :1] * t + phase[:, :1]) + 0.3 * torch.sin(freqs[:, 1:] * t + phase[:, 1:])
    return wave.clamp(-1, 1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--steps', type=int, default=20)
    parser.add_argument('--length', type=int, default=64)
    parser.add_argument('--lr', type=float, default=3e-3)
    args = parser.parse_args()

    torch.manual_seed(1)
    device = 'cuda' if torch.cuda.is_available() else 'cpu'
    x = torch.linspace(-1, 1, 7)
    encoded = mu_law_encoding(x)
    print('mu-law', encoded.tolist(), 'roundtrip error',
          round((mu_law_decoding(encoded) - x).abs().max().item(), 4))

    model = WaveNet().to(device)
    print(model.layers[3])
    print('dilations', model.dilations, 'receptive field', model.receptive_field)
    print('parameters', sum(p.numel() for p in model.parameters()))

    # causality: the output at t does not depend on inputs after t
    probe = F.one_hot(torch.randint(0, 256, (1, 20)), 256).permute(0, 2, 1).float()
    changed = probe.clone()
    changed[:, :, 15:] = 0
    with torch.no_grad():
        print('causal:', torch.allclose(model(probe)[:, :, :15], model(changed)[:, :, :15], atol=1e-6))

    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    g = torch.Generator().manual_seed(2)
    for step in range(args.steps):
        audio = make_audio(8, args.length + 1, g)
        q = mu_law_encoding(audio).to(device)
        inputs = F.one_hot(q[:, :-1], 256).permute(0, 2, 1).float()
        targets = q[:, 1:]
        logits = model(inputs)
        loss = F.cross_entropy(logits, targets)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if step % 5 == 0 or step == args.steps - 1:
            acc = (logits.argmax(1) == targets).float().mean()
            print(f'step {step:3d} loss {loss.item():.4f} accuracy {acc.item():.3f}')

    seed = mu_law_encoding(make_audio(1, model.receptive_field, g))[0]
    out = model.generate(16, seed, temperature=0.8)
    print('generated', tuple(out.shape), out.dtype, 'in range:',
          bool(((out >= 0) & (out < 256)).all()))


if __name__ == '__main__':
    main()
