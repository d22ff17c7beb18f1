"""Growing neural cellular automata (in the manner of the Distill "Growing NCA" PyTorch
ports): fixed identity/sobel filters applied as a depthwise F.conv2d(groups=channels)
with circular padding (F.pad mode="circular"), a 1x1-conv update rule with a zero-init
last layer, the stochastic update mask from torch.rand, alive masking by F.max_pool2d on
the alpha channel, a sample pool refreshed through index_select / index_copy_, loss
ranking with argsort, damage with a meshgrid disc, per-parameter gradient normalisation
p.grad / (p.grad.norm() + 1e-8), and a MultiStepLR schedule. The target is a small
NumPy-drawn emoji-like image."""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


CHANNEL_N = 12        # Number of CA state channels
TARGET_PADDING = 4    # Number of pixels used to pad the target image border
TARGET_SIZE = 12


def load_emoji(size=TARGET_SIZE):
    """A ring with a bright centre, RGBA premultiplied, drawn with NumPy."""
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32) - (size - 1) / 2
    r = np.sqrt(yy ** 2 + xx ** 2)
    alpha = np.clip(size / 2.2 - r, 0, 1)
    rgb = np.stack([np.clip(1 - r / size * 2, 0, 1),
                    np.clip(r / size * 1.5, 0, 1) * 0.8,
                    0.3 * np.ones_like(r)], -1)
    img = np.concatenate([rgb * alpha[..., None], alpha[..., None]], -1)
    return img.astype(np.float32)


def to_rgba(x):
    return x[..., :4]


def to_alpha(x):
    return torch.clamp(x[:, 3:4, :, :], 0.0, 1.0)


def to_rgb(x):
    # assume rgb premultiplied by alpha
    rgb, a = x[:, :3], to_alpha(x)
    return 1.0 - a + rgb


def get_living_mask(x):
    alpha = x[:, 3:4, :, :]
    return F.max_pool2d(alpha, kernel_size=3, stride=1, padding=1) > 0.1


def make_seed(shape, n=1):
    x = np.zeros([n, shape[0], shape[1], CHANNEL_N], np.float32)
    x[:, shape[0] // 2, shape[1] // 2, 3:] = 1.0
    return x


def make_circle_masks(n, h, w):
    x = torch.linspace(-1.0, 1.0, w)[None, None, :]
    y = torch.linspace(-1.0, 1.0, h)[None, :, None]
    center = torch.rand(2, n, 1, 1) - 0.5
    r = 0.3 * torch.rand(n, 1, 1) + 0.1
    x, y = (x - center[0]) / r, (y - center[1]) / r
    mask = (x * x + y * y < 1.0).float()
    return mask


class CAModel(nn.Module):
    def __init__(self, channel_n, fire_rate, hidden_size=64):
        super(CAModel, self).__init__()

        self.channel_n = channel_n
        self.fire_rate = fire_rate

        self.fc0 = nn.Conv2d(channel_n * 3, hidden_size, kernel_size=1)
        self.fc1 = nn.Conv2d(hidden_size, channel_n, kernel_size=1, bias=False)
        with torch.no_grad():
            self.fc1.weight.zero_()

        ident = torch.tensor([[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
        sobel_x = torch.outer(torch.tensor([1.0, 2.0, 1.0]), torch.tensor([-1.0, 0.0, 1.0])) / 8.0
        kernel = torch.stack([ident, sobel_x, sobel_x.T])
        kernel = kernel.repeat(channel_n, 1, 1)[:, None]
        self.register_buffer("kernel", kernel)

    def perceive(self, x, angle=0.0):
        c, s = np.cos(angle), np.sin(angle)
        k = self.kernel.clone()
        kx, ky = k[1::3].clone(), k[2::3].clone()
        k[1::3] = c * kx - s * ky
        k[2::3] = s * kx + c * ky
        y = F.conv2d(F.pad(x, (1, 1, 1, 1), "circular"), k, groups=self.channel_n)
        return y

    def update(self, x, fire_rate, angle):
        pre_life_mask = get_living_mask(x)

        dx = self.perceive(x, angle)
        dx = self.fc0(dx)
        dx = F.relu(dx)
        dx = self.fc1(dx)

        if fire_rate is None:
            fire_rate = self.fire_rate
        stochastic = torch.rand([dx.size(0), 1, dx.size(2), dx.size(3)]) > fire_rate
        dx = dx * stochastic.float()

        x = x + dx

        post_life_mask = get_living_mask(x)
        life_mask = (pre_life_mask & post_life_mask).float()
        x = x * life_mask
        return x

    def forward(self, x, steps=1, fire_rate=None, angle=0.0):
        for step in range(steps):
            x = self.update(x, fire_rate, angle)
        return x


class SamplePool:
    def __init__(self, x, pool_size):
        self.x = x
        self.pool_size = pool_size

    def sample(self, n, generator=None):
        idx = torch.randperm(self.pool_size, generator=generator)[:n]
        return idx, self.x.index_select(0, idx)

    def commit(self, idx, batch):
        self.x.index_copy_(0, idx, batch)


def main():
    parser = argparse.ArgumentParser(description="Growing NCA")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--pool-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=2e-3)
    args = parser.parse_args()
    torch.manual_seed(42)

    target_img = load_emoji()
    p = TARGET_PADDING
    pad_target = np.pad(target_img, [(p, p), (p, p), (0, 0)])
    h, w = pad_target.shape[:2]
    pad_target = torch.from_numpy(pad_target).permute(2, 0, 1)[None]
    print("target", tuple(pad_target.shape), "alpha sum %.4f" % pad_target[:, 3].sum().item())
    print("target row", np.round(target_img[TARGET_SIZE // 2, :, 3], 3))

    seed = make_seed((h, w), 1)
    seed = torch.from_numpy(seed).permute(0, 3, 1, 2)
    print("seed", seed.shape, seed.sum().item(), seed.is_contiguous(), seed.stride())
    pool = SamplePool(seed.repeat(args.pool_size, 1, 1, 1), args.pool_size)

    ca = CAModel(CHANNEL_N, 0.5, hidden_size=32)
    print(ca)
    print("kernel", ca.kernel.shape, ca.kernel[:3, 0])
    print("perceive", ca.perceive(seed).shape, ca.perceive(seed)[0, 9:15, h // 2, w // 2 - 1:w // 2 + 2])
    print("rotated", ca.perceive(seed, angle=np.pi / 4)[0, 10:12, h // 2 - 1:h // 2 + 1, w // 2 - 1])
    print("living", get_living_mask(seed).sum().item(), get_living_mask(seed).dtype)
    print("circle masks", make_circle_masks(2, 16, 16).sum((1, 2)))

    optimizer = torch.optim.Adam(ca.parameters(), lr=args.lr, betas=(0.5, 0.5))
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, [6, 10], 0.3)
    loss_log = []
    for i in range(args.steps):
        batch_idx, x0 = pool.sample(args.batch_size)
        loss_rank = F.mse_loss(to_rgba(x0.permute(0, 2, 3, 1)),
                               to_rgba(pad_target.permute(0, 2, 3, 1)).expand(len(x0), -1, -1, -1),
                               reduction="none").mean([-2, -3, -1]).argsort(descending=True)
        x0 = x0[loss_rank]
        batch_idx = batch_idx[loss_rank]
        x0[:1] = seed
        if i >= 6:
            damage = 1.0 - make_circle_masks(2, h, w)[:, None]
            x0[-2:] *= damage

        iter_n = int(torch.randint(8, 12, ()))
        x = ca(x0, steps=iter_n)
        loss = F.mse_loss(x[:, :4], pad_target.expand(len(x), -1, -1, -1))
        optimizer.zero_grad()
        loss.backward()
        for p in ca.parameters():
            p.grad = p.grad / (p.grad.norm() + 1e-8)
        optimizer.step()
        scheduler.step()

        pool.commit(batch_idx, x.detach())
        loss_log.append(loss.item())
        print("%d steps %d, loss = %.6f, lr %.2e, log10 %.3f" % (
            i, iter_n, loss.item(), scheduler.get_last_lr()[0], np.log10(loss.item())))

    with torch.no_grad():
        x = ca(seed, steps=20)
    rgb = to_rgb(x)
    print("grown", rgb.shape, "alive cells", int(get_living_mask(x).sum()),
          "rgb range", [round(v, 3) for v in (rgb.min().item(), rgb.max().item())])
    print("grad norms after normalisation", [round(p.grad.norm().item(), 4) for p in ca.parameters()])
    print("pool", pool.x.shape, "max alpha", pool.x[:, 3].amax(dim=(1, 2)).shape)


if __name__ == "__main__":
    main()
