"""Stacked hourglass pose estimation (in the manner of princeton-vl/pytorch_stacked_hourglass
and bearpaw/pytorch-pose): a recursive Hourglass module built from residual blocks with
nn.Upsample(scale_factor=2, mode="nearest"), intermediate supervision with merge convs,
gaussian heatmap targets from torch.meshgrid(indexing="ij"), a masked heatmap MSE,
integral-regression soft-argmax (softmax over the flattened maps, summed with coordinate
grids), argmax decoding with `%` and floor division, and the PCK@0.2 metric. Synthetic
"skeletons" of three bright joints stand in for MPII."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

Pool = nn.MaxPool2d


def batchnorm(x):
    return nn.BatchNorm2d(x.size()[1])(x)


class Conv(nn.Module):
    def __init__(self, inp_dim, out_dim, kernel_size=3, stride=1, bn=False, relu=True):
        super(Conv, self).__init__()
        self.inp_dim = inp_dim
        self.conv = nn.Conv2d(inp_dim, out_dim, kernel_size, stride, padding=(kernel_size - 1) // 2, bias=True)
        self.relu = None
        self.bn = None
        if relu:
            self.relu = nn.ReLU()
        if bn:
            self.bn = nn.BatchNorm2d(out_dim)

    def forward(self, x):
        assert x.size()[1] == self.inp_dim, "{} {}".format(x.size()[1], self.inp_dim)
        x = self.conv(x)
        if self.bn is not None:
            x = self.bn(x)
        if self.relu is not None:
            x = self.relu(x)
        return x


class Residual(nn.Module):
    def __init__(self, inp_dim, out_dim):
        super(Residual, self).__init__()
        self.relu = nn.ReLU()
        self.bn1 = nn.BatchNorm2d(inp_dim)
        self.conv1 = Conv(inp_dim, int(out_dim / 2), 1, relu=False)
        self.bn2 = nn.BatchNorm2d(int(out_dim / 2))
        self.conv2 = Conv(int(out_dim / 2), int(out_dim / 2), 3, relu=False)
        self.bn3 = nn.BatchNorm2d(int(out_dim / 2))
        self.conv3 = Conv(int(out_dim / 2), out_dim, 1, relu=False)
        self.skip_layer = Conv(inp_dim, out_dim, 1, relu=False)
        if inp_dim == out_dim:
            self.need_skip = False
        else:
            self.need_skip = True

    def forward(self, x):
        if self.need_skip:
            residual = self.skip_layer(x)
        else:
            residual = x
        out = self.bn1(x)
        out = self.relu(out)
        out = self.conv1(out)
        out = self.bn2(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn3(out)
        out = self.relu(out)
        out = self.conv3(out)
        out += residual
        return out


class Hourglass(nn.Module):
    def __init__(self, n, f, bn=None, increase=0):
        super(Hourglass, self).__init__()
        nf = f + increase
        self.up1 = Residual(f, f)
        # Lower branch
        self.pool1 = Pool(2, 2)
        self.low1 = Residual(f, nf)
        self.n = n
        # Recursive hourglass
        if self.n > 1:
            self.low2 = Hourglass(n - 1, nf, bn=bn)
        else:
            self.low2 = Residual(nf, nf)
        self.low3 = Residual(nf, f)
        self.up2 = nn.Upsample(scale_factor=2, mode='nearest')

    def forward(self, x):
        up1 = self.up1(x)
        pool1 = self.pool1(x)
        low1 = self.low1(pool1)
        low2 = self.low2(low1)
        low3 = self.low3(low2)
        up2 = self.up2(low3)
        return up1 + up2


class UnFlatten(nn.Module):
    def forward(self, input):
        return input.view(-1, 256, 4, 4)


class Merge(nn.Module):
    def __init__(self, x_dim, y_dim):
        super(Merge, self).__init__()
        self.conv = Conv(x_dim, y_dim, 1, relu=False, bn=False)

    def forward(self, x):
        return self.conv(x)


class PoseNet(nn.Module):
    def __init__(self, nstack, inp_dim, oup_dim, bn=False, increase=0, **kwargs):
        super(PoseNet, self).__init__()

        self.nstack = nstack
        self.pre = nn.Sequential(
            Conv(3, 16, 3, 1, bn=True, relu=True),
            Residual(16, 32),
            Pool(2, 2),
            Residual(32, inp_dim)
        )

        self.hgs = nn.ModuleList([
            nn.Sequential(
                Hourglass(2, inp_dim, bn, increase),
            ) for i in range(nstack)])

        self.features = nn.ModuleList([
            nn.Sequential(
                Residual(inp_dim, inp_dim),
                Conv(inp_dim, inp_dim, 1, bn=True, relu=True)
            ) for i in range(nstack)])

        self.outs = nn.ModuleList([Conv(inp_dim, oup_dim, 1, relu=False, bn=False) for i in range(nstack)])
        self.merge_features = nn.ModuleList([Merge(inp_dim, inp_dim) for i in range(nstack - 1)])
        self.merge_preds = nn.ModuleList([Merge(oup_dim, inp_dim) for i in range(nstack - 1)])
        self.nstack = nstack
        self.heatmapLoss = HeatmapLoss()

    def forward(self, imgs):
        # our posenet
        x = self.pre(imgs)
        combined_hm_preds = []
        for i in range(self.nstack):
            hg = self.hgs[i](x)
            feature = self.features[i](hg)
            preds = self.outs[i](feature)
            combined_hm_preds.append(preds)
            if i < self.nstack - 1:
                x = x + self.merge_preds[i](preds) + self.merge_features[i](feature)
        return torch.stack(combined_hm_preds, 1)

    def calc_loss(self, combined_hm_preds, heatmaps):
        combined_loss = []
        for i in range(self.nstack):
            combined_loss.append(self.heatmapLoss(combined_hm_preds[:, i], heatmaps))
        combined_loss = torch.stack(combined_loss, dim=1)
        return combined_loss


class HeatmapLoss(torch.nn.Module):
    """
    loss for detection heatmap
    """
    def __init__(self):
        super(HeatmapLoss, self).__init__()

    def forward(self, pred, gt):
        l = ((pred - gt)**2)
        l = l.mean(dim=3).mean(dim=2).mean(dim=1)
        return l  # l of dim bsize


def generate_target(joints, visible, size, sigma=1.0):
    """Gaussian heatmaps (num_joints, size, size) centred on each visible joint."""
    ys, xs = torch.meshgrid(torch.arange(size, dtype=torch.float32),
                            torch.arange(size, dtype=torch.float32), indexing="ij")
    d2 = (xs[None] - joints[:, 0, None, None]) ** 2 + (ys[None] - joints[:, 1, None, None]) ** 2
    target = torch.exp(-d2 / (2 * sigma ** 2))
    return target * visible[:, None, None]


def softargmax2d(heatmaps, beta=10.0):
    """Integral regression: expected (x, y) under softmax(beta * heatmap)."""
    n, j, h, w = heatmaps.shape
    probs = F.softmax(beta * heatmaps.reshape(n, j, -1), dim=-1).reshape(n, j, h, w)
    ys = torch.arange(h, dtype=heatmaps.dtype).view(1, 1, h, 1)
    xs = torch.arange(w, dtype=heatmaps.dtype).view(1, 1, 1, w)
    x = (probs * xs).sum(dim=(2, 3))
    y = (probs * ys).sum(dim=(2, 3))
    return torch.stack([x, y], dim=-1)


def get_preds(scores):
    ''' get predictions from score maps in torch Tensor
        return type: torch.LongTensor
    '''
    assert scores.dim() == 4, 'Score maps should be 4-dim'
    maxval, idx = torch.max(scores.view(scores.size(0), scores.size(1), -1), 2)

    maxval = maxval.view(scores.size(0), scores.size(1), 1)
    idx = idx.view(scores.size(0), scores.size(1), 1) + 1

    preds = idx.repeat(1, 1, 2).float()

    preds[:, :, 0] = (preds[:, :, 0] - 1) % scores.size(3) + 1
    preds[:, :, 1] = torch.floor((preds[:, :, 1] - 1) / scores.size(3)) + 1

    pred_mask = maxval.gt(0).repeat(1, 1, 2).float()
    preds *= pred_mask
    return preds


def pck(pred, gt, visible, thr=0.2):
    """PCK: a joint is correct within thr * the torso size (joint 0 to joint 2)."""
    torso = (gt[:, 0] - gt[:, 2]).norm(dim=-1, keepdim=True)
    dist = (pred - gt).norm(dim=-1) / torso
    correct = (dist <= thr) & visible.bool()
    return correct.sum().float() / visible.sum()


def make_batch(n, size, out_size, g):
    imgs = torch.randn(n, 3, size, size, generator=g) * 0.1
    joints = torch.zeros(n, 3, 2)
    visible = torch.ones(n, 3)
    ys, xs = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
    for i in range(n):
        base = torch.randint(4, size - 12, (2,), generator=g).float()
        pts = torch.stack([base, base + torch.tensor([8.0, 0.0]), base + torch.tensor([4.0, 8.0])])
        for k, p in enumerate(pts):
            blob = ((xs - p[0]) ** 2 + (ys - p[1]) ** 2) <= 2
            imgs[i, k][blob] += 1.0
        joints[i] = pts / (size / out_size)
    visible[0, 2] = 0
    return imgs, joints, visible


def main():
    parser = argparse.ArgumentParser(description="stacked hourglass")
    parser.add_argument("--iters", type=int, default=15)
    parser.add_argument("--size", type=int, default=32)
    args = parser.parse_args()
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(5)
    out_size = args.size // 2

    net = PoseNet(nstack=2, inp_dim=32, oup_dim=3)
    print(net.hgs[0])
    print("params", sum(p.numel() for p in net.parameters() if p.requires_grad))

    imgs, joints, visible = make_batch(8, args.size, out_size, g)
    heatmaps = torch.stack([generate_target(j, v, out_size) for j, v in zip(joints, visible)])
    print("heatmaps", heatmaps.shape, "peak", heatmaps.amax(dim=(2, 3))[0])
    print("decoded targets", get_preds(heatmaps)[0] - 1, "joints", joints[0])
    print("soft-argmax of targets", softargmax2d(heatmaps)[0])
    up = nn.Upsample(scale_factor=2, mode="nearest")
    print(up, up(torch.arange(4.0).view(1, 1, 2, 2))[0, 0])

    optimizer = torch.optim.RMSprop(net.parameters(), lr=2.5e-3)
    for it in range(args.iters):
        net.train()
        combined_hm_preds = net(imgs)
        combined_loss = net.calc_loss(combined_hm_preds, heatmaps * 10)
        loss = torch.mean(combined_loss)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if it % 5 == 0 or it == args.iters - 1:
            print("iter {:3d} loss {:.5f} per-stack {}".format(
                it, loss.item(), [round(v, 5) for v in combined_loss.mean(0).tolist()]))

    net.eval()
    with torch.no_grad():
        out = net(imgs)[:, -1] / 10
    hard = get_preds(out) - 1
    soft = softargmax2d(out)
    print("preds", out.shape, hard.dtype, "hard", hard[1].tolist())
    print("PCK@0.2 hard %.3f soft %.3f" % (pck(hard, joints, visible).item(), pck(soft, joints, visible).item()))


if __name__ == "__main__":
    main()
