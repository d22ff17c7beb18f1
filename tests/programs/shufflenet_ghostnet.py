"""ShuffleNetV2 and GhostNet blocks as torchvision's shufflenetv2.py and huawei-noah's
ghostnet.py write them: channel_shuffle through view/transpose/contiguous/view,
x.chunk(2, dim=1) for the stride-1 split, depthwise 3x3 convs (groups=channels),
nn.init.kaiming_normal_(mode='fan_out'), GhostModule's cheap operation concatenated and
sliced to oup channels, squeeze-excite with hard_sigmoid, and timm's DropPath
(bernoulli_ on a (B, 1, 1, 1) tensor, divided by keep_prob). Trained a few steps with
SGD + CosineAnnealingLR on a tiny seeded image set."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor


def drop_path(x, drop_prob: float = 0., training: bool = False, scale_by_keep: bool = True):
    if drop_prob == 0. or not training:
        return x
    keep_prob = 1 - drop_prob
    shape = (x.shape[0],) + (1,) * (x.ndim - 1)  # work with diff dim tensors, not just 2D ConvNets
    random_tensor = x.new_empty(shape).bernoulli_(keep_prob)
    if keep_prob > 0.0 and scale_by_keep:
        random_tensor.div_(keep_prob)
    return x * random_tensor


class DropPath(nn.Module):
    """Drop paths (Stochastic Depth) per sample  (when applied in main path of residual blocks).
    """
    def __init__(self, drop_prob: float = 0., scale_by_keep: bool = True):
        super(DropPath, self).__init__()
        self.drop_prob = drop_prob
        self.scale_by_keep = scale_by_keep

    def forward(self, x):
        return drop_path(x, self.drop_prob, self.training, self.scale_by_keep)

    def extra_repr(self):
        return f'drop_prob={round(self.drop_prob,3):0.3f}'


def channel_shuffle(x: Tensor, groups: int) -> Tensor:
    batchsize, num_channels, height, width = x.size()
    channels_per_group = num_channels // groups

    # reshape
    x = x.view(batchsize, groups, channels_per_group, height, width)

    x = torch.transpose(x, 1, 2).contiguous()

    # flatten
    x = x.view(batchsize, num_channels, height, width)

    return x


class InvertedResidual(nn.Module):
    def __init__(self, inp: int, oup: int, stride: int) -> None:
        super().__init__()

        if not (1 <= stride <= 3):
            raise ValueError("illegal stride value")
        self.stride = stride

        branch_features = oup // 2
        if (self.stride == 1) and (inp != branch_features << 1):
            raise ValueError(
                f"Invalid combination of stride {stride}, inp {inp} and oup {oup} values. If stride == 1 then inp should be equal to oup // 2 << 1."
            )

        if self.stride > 1:
            self.branch1 = nn.Sequential(
                self.depthwise_conv(inp, inp, kernel_size=3, stride=self.stride, padding=1),
                nn.BatchNorm2d(inp),
                nn.Conv2d(inp, branch_features, kernel_size=1, stride=1, padding=0, bias=False),
                nn.BatchNorm2d(branch_features),
                nn.ReLU(inplace=True),
            )
        else:
            self.branch1 = nn.Sequential()

        self.branch2 = nn.Sequential(
            nn.Conv2d(
                inp if (self.stride > 1) else branch_features,
                branch_features,
                kernel_size=1,
                stride=1,
                padding=0,
                bias=False,
            ),
            nn.BatchNorm2d(branch_features),
            nn.ReLU(inplace=True),
            self.depthwise_conv(branch_features, branch_features, kernel_size=3, stride=self.stride, padding=1),
            nn.BatchNorm2d(branch_features),
            nn.Conv2d(branch_features, branch_features, kernel_size=1, stride=1, padding=0, bias=False),
            nn.BatchNorm2d(branch_features),
            nn.ReLU(inplace=True),
        )

    @staticmethod
    def depthwise_conv(
        i: int, o: int, kernel_size: int, stride: int = 1, padding: int = 0, bias: bool = False
    ) -> nn.Conv2d:
        return nn.Conv2d(i, o, kernel_size, stride, padding, bias=bias, groups=i)

    def forward(self, x: Tensor) -> Tensor:
        if self.stride == 1:
            x1, x2 = x.chunk(2, dim=1)
            out = torch.cat((x1, self.branch2(x2)), dim=1)
        else:
            out = torch.cat((self.branch1(x), self.branch2(x)), dim=1)

        out = channel_shuffle(out, 2)

        return out


def _make_divisible(v, divisor, min_value=None):
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    # Make sure that round down does not go down by more than 10%.
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


def hard_sigmoid(x, inplace: bool = False):
    if inplace:
        return x.add_(3.).clamp_(0., 6.).div_(6.)
    else:
        return F.relu6(x + 3.) / 6.


class SqueezeExcite(nn.Module):
    def __init__(self, in_chs, se_ratio=0.25, reduced_base_chs=None,
                 act_layer=nn.ReLU, gate_fn=hard_sigmoid, divisor=4, **_):
        super(SqueezeExcite, self).__init__()
        self.gate_fn = gate_fn
        reduced_chs = _make_divisible((reduced_base_chs or in_chs) * se_ratio, divisor)
        self.avg_pool = nn.AdaptiveAvgPool2d(1)
        self.conv_reduce = nn.Conv2d(in_chs, reduced_chs, 1, bias=True)
        self.act1 = act_layer(inplace=True)
        self.conv_expand = nn.Conv2d(reduced_chs, in_chs, 1, bias=True)

    def forward(self, x):
        x_se = self.avg_pool(x)
        x_se = self.conv_reduce(x_se)
        x_se = self.act1(x_se)
        x_se = self.conv_expand(x_se)
        x = x * self.gate_fn(x_se)
        return x


class GhostModule(nn.Module):
    def __init__(self, inp, oup, kernel_size=1, ratio=2, dw_size=3, stride=1, relu=True):
        super(GhostModule, self).__init__()
        self.oup = oup
        init_channels = math.ceil(oup / ratio)
        new_channels = init_channels*(ratio-1)

        self.primary_conv = nn.Sequential(
            nn.Conv2d(inp, init_channels, kernel_size, stride, kernel_size//2, bias=False),
            nn.BatchNorm2d(init_channels),
            nn.ReLU(inplace=True) if relu else nn.Sequential(),
        )

        self.cheap_operation = nn.Sequential(
            nn.Conv2d(init_channels, new_channels, dw_size, 1, dw_size//2, groups=init_channels, bias=False),
            nn.BatchNorm2d(new_channels),
            nn.ReLU(inplace=True) if relu else nn.Sequential(),
        )

    def forward(self, x):
        x1 = self.primary_conv(x)
        x2 = self.cheap_operation(x1)
        out = torch.cat([x1, x2], dim=1)
        return out[:, :self.oup, :, :]


class GhostBottleneck(nn.Module):
    """ Ghost bottleneck w/ optional SE"""

    def __init__(self, in_chs, mid_chs, out_chs, dw_kernel_size=3,
                 stride=1, act_layer=nn.ReLU, se_ratio=0., drop_path=0.):
        super(GhostBottleneck, self).__init__()
        has_se = se_ratio is not None and se_ratio > 0.
        self.stride = stride

        # Point-wise expansion
        self.ghost1 = GhostModule(in_chs, mid_chs, relu=True)

        # Depth-wise convolution
        if self.stride > 1:
            self.conv_dw = nn.Conv2d(mid_chs, mid_chs, dw_kernel_size, stride=stride,
                                     padding=(dw_kernel_size-1)//2,
                                     groups=mid_chs, bias=False)
            self.bn_dw = nn.BatchNorm2d(mid_chs)

        # Squeeze-and-excitation
        if has_se:
            self.se = SqueezeExcite(mid_chs, se_ratio=se_ratio)
        else:
            self.se = None

        # Point-wise linear projection
        self.ghost2 = GhostModule(mid_chs, out_chs, relu=False)

        # shortcut
        if (in_chs == out_chs and self.stride == 1):
            self.shortcut = nn.Sequential()
        else:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_chs, in_chs, dw_kernel_size, stride=stride,
                          padding=(dw_kernel_size-1)//2, groups=in_chs, bias=False),
                nn.BatchNorm2d(in_chs),
                nn.Conv2d(in_chs, out_chs, 1, stride=1, padding=0, bias=False),
                nn.BatchNorm2d(out_chs),
            )
        self.drop_path = DropPath(drop_path) if drop_path > 0. else nn.Identity()

    def forward(self, x):
        residual = x

        # 1st ghost bottleneck
        x = self.ghost1(x)

        # Depth-wise convolution
        if self.stride > 1:
            x = self.conv_dw(x)
            x = self.bn_dw(x)

        # Squeeze-and-excitation
        if self.se is not None:
            x = self.se(x)

        # 2nd ghost bottleneck
        x = self.ghost2(x)

        x = self.drop_path(x) + self.shortcut(residual)
        return x


class TinyShuffleGhostNet(nn.Module):
    def __init__(self, num_classes=4, drop_path_rate=0.2):
        super().__init__()
        self.conv1 = nn.Sequential(
            nn.Conv2d(3, 16, 3, 2, 1, bias=False),
            nn.BatchNorm2d(16),
            nn.ReLU(inplace=True),
        )
        self.stage2 = nn.Sequential(InvertedResidual(16, 32, 2), InvertedResidual(32, 32, 1))
        dpr = [x.item() for x in torch.linspace(0, drop_path_rate, 2)]
        self.stage3 = nn.Sequential(
            GhostBottleneck(32, 48, 40, stride=2, se_ratio=0.25, drop_path=dpr[0]),
            GhostBottleneck(40, 60, 40, stride=1, se_ratio=0.25, drop_path=dpr[1]),
        )
        self.conv5 = nn.Sequential(
            nn.Conv2d(40, 64, 1, 1, 0, bias=False),
            nn.BatchNorm2d(64),
            nn.ReLU(inplace=True),
        )
        self.fc = nn.Linear(64, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode='fan_out', nonlinearity='relu')
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.conv1(x)
        x = self.stage2(x)
        x = self.stage3(x)
        x = self.conv5(x)
        x = x.mean([2, 3])  # globalpool
        x = self.fc(x)
        return x


def make_data(n=64):
    """Four classes: a bright square in one of four quadrants."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 3, 16, 16, generator=g) * 0.3
    y = torch.arange(n) % 4
    for i in range(n):
        r, c = divmod(int(y[i]), 2)
        x[i, :, r * 8 + 2:r * 8 + 6, c * 8 + 2:c * 8 + 6] += 1.5
    return x, y


def main():
    torch.manual_seed(0)
    x = torch.arange(2 * 8 * 2 * 2, dtype=torch.float32).view(2, 8, 2, 2)
    s = channel_shuffle(x, 2)
    print("shuffled channels", s[0, :, 0, 0].tolist(), s.is_contiguous(), s.stride())
    a, b = x.chunk(2, dim=1)
    print("chunk", a.shape, a.stride(), a.is_contiguous(), b.storage_offset())
    t = torch.transpose(x.view(2, 2, 4, 2, 2), 1, 2)
    print("transposed", t.stride(), t.is_contiguous(), t.contiguous().stride())

    dp = DropPath(0.5)
    print(dp)
    ones = torch.ones(8, 2, 3, 3)
    kept = dp(ones)
    print("drop path kept", kept[:, 0, 0, 0].tolist())
    dp.eval()
    print("drop path eval identity", torch.equal(dp(ones), ones))
    mask = ones.new_empty((8, 1, 1, 1)).bernoulli_(0.75)
    print("bernoulli mask", mask.shape, mask.dtype, mask.flatten().tolist())

    model = TinyShuffleGhostNet()
    print(model)
    n_params = sum(p.numel() for p in model.parameters())
    print("params", n_params)
    conv = model.stage2[0].branch1[0]
    print("depthwise", conv, conv.weight.shape, conv.groups)
    print("kaiming std", round(conv.weight.std().item(), 2), "fan_out bound",
          round(math.sqrt(2.0 / (conv.weight.size(0) * 9)), 4))
    print("hard_sigmoid", hard_sigmoid(torch.tensor([-4., -1., 0., 1., 4.])))
    print("make_divisible", [_make_divisible(c * 0.25, 4) for c in (16, 48, 60, 120)])

    xs, ys = make_data()
    out = model(xs[:2])
    print("logits", out.shape, out.dtype, out.grad_fn is not None)
    feats = model.stage2(model.conv1(xs[:2]))
    print("stage2", feats.shape, feats.is_contiguous())
    ghost = model.stage3[0].ghost1(feats)
    print("ghost1", ghost.shape)

    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=4e-5,
                          nesterov=True)
    steps = 20
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    crit = nn.CrossEntropyLoss(label_smoothing=0.1)
    model.train()
    for step in range(steps):
        idx = torch.randperm(64)[:32]
        loss = crit(model(xs[idx]), ys[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        print(f"step {step:2d} lr {sched.get_last_lr()[0]:.5f} loss {loss.item():.4f}")
    model.eval()
    with torch.no_grad():
        pred = model(xs).argmax(1)
    acc = (pred == ys).float().mean().item()
    print(f"train acc {acc:.3f}")
    print("bn running_var", model.conv1[1].running_var.shape,
          model.conv1[1].num_batches_tracked)


if __name__ == "__main__":
    main()
