"""EfficientNet-B0-style network (Tan & Le; written as torchvision/timm write it): MBConv blocks
with depthwise convs, squeeze-and-excitation (AdaptiveAvgPool2d(1), SiLU, sigmoid gate),
stochastic depth (DropPath with x.new_empty(shape).bernoulli_(keep_prob) and div_), a
linearly growing drop-path rate, AdamW with a warmup + cosine LambdaLR, and an EMA of the
weights. Tiny sizes, synthetic 3-class images."""
import argparse
import copy
import math
from functools import partial

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor
from torch.utils.data import DataLoader, TensorDataset


def drop_path(x: Tensor, drop_prob: float = 0., training: bool = False,
              scale_by_keep: bool = True) -> Tensor:
    if drop_prob == 0. or not training:
        return x
    keep_prob = 1 - drop_prob
    shape = (x.shape[0],) + (1,) * (x.ndim - 1)  # work with diff dim tensors, not just 2D ConvNets
    random_tensor = x.new_empty(shape).bernoulli_(keep_prob)
    if keep_prob > 0.0 and scale_by_keep:
        random_tensor.div_(keep_prob)
    return x * random_tensor


class DropPath(nn.Module):
    """Drop paths (Stochastic Depth) per sample (when applied in main path of residual blocks)."""

    def __init__(self, drop_prob: float = 0., scale_by_keep: bool = True):
        super().__init__()
        self.drop_prob = drop_prob
        self.scale_by_keep = scale_by_keep

    def forward(self, x):
        return drop_path(x, self.drop_prob, self.training, self.scale_by_keep)

    def extra_repr(self):
        return f'drop_prob={round(self.drop_prob, 3):0.3f}'


class SqueezeExcitation(nn.Module):
    def __init__(self, input_channels: int, squeeze_channels: int,
                 activation=nn.ReLU, scale_activation=nn.Sigmoid) -> None:
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(input_channels, squeeze_channels, 1)
        self.fc2 = nn.Conv2d(squeeze_channels, input_channels, 1)
        self.activation = activation()
        self.scale_activation = scale_activation()

    def _scale(self, input: Tensor) -> Tensor:
        scale = self.avgpool(input)
        scale = self.fc1(scale)
        scale = self.activation(scale)
        scale = self.fc2(scale)
        return self.scale_activation(scale)

    def forward(self, input: Tensor) -> Tensor:
        scale = self._scale(input)
        return scale * input


class ConvBNAct(nn.Sequential):
    def __init__(self, in_ch, out_ch, kernel_size=3, stride=1, groups=1, act=True):
        layers = [nn.Conv2d(in_ch, out_ch, kernel_size, stride, (kernel_size - 1) // 2,
                            groups=groups, bias=False),
                  nn.BatchNorm2d(out_ch, eps=1e-3, momentum=0.01)]
        if act:
            layers.append(nn.SiLU(inplace=True))
        super().__init__(*layers)


class MBConv(nn.Module):
    def __init__(self, in_ch, out_ch, expand_ratio, kernel_size, stride, se_ratio=0.25,
                 drop_path_rate=0.0):
        super().__init__()
        self.use_res_connect = stride == 1 and in_ch == out_ch
        layers = []
        expanded = in_ch * expand_ratio
        if expanded != in_ch:
            layers.append(ConvBNAct(in_ch, expanded, kernel_size=1))
        layers.append(ConvBNAct(expanded, expanded, kernel_size, stride, groups=expanded))
        squeeze = max(1, int(in_ch * se_ratio))
        layers.append(SqueezeExcitation(expanded, squeeze, activation=partial(nn.SiLU,
                                                                              inplace=True)))
        layers.append(ConvBNAct(expanded, out_ch, kernel_size=1, act=False))
        self.block = nn.Sequential(*layers)
        self.stochastic_depth = DropPath(drop_path_rate)
        self.out_channels = out_ch

    def forward(self, input: Tensor) -> Tensor:
        result = self.block(input)
        if self.use_res_connect:
            result = self.stochastic_depth(result)
            result += input
        return result


class EfficientNet(nn.Module):
    def __init__(self, settings, num_classes=1000, stem=16, head=64, dropout=0.2,
                 stochastic_depth_prob=0.2):
        super().__init__()
        layers = [ConvBNAct(3, stem, 3, stride=2)]
        total_stage_blocks = sum(s[-1] for s in settings)
        stage_block_id = 0
        in_ch = stem
        for expand_ratio, kernel, stride, out_ch, num_layers in settings:
            stage = []
            for i in range(num_layers):
                # adjust stochastic depth probability based on the depth of the stage block
                sd_prob = stochastic_depth_prob * float(stage_block_id) / total_stage_blocks
                stage.append(MBConv(in_ch, out_ch, expand_ratio, kernel,
                                    stride if i == 0 else 1, drop_path_rate=sd_prob))
                in_ch = out_ch
                stage_block_id += 1
            layers.append(nn.Sequential(*stage))
        layers.append(ConvBNAct(in_ch, head, kernel_size=1))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(
            nn.Dropout(p=dropout, inplace=True),
            nn.Linear(head, num_classes),
        )
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                init_range = 1.0 / math.sqrt(m.out_features)
                nn.init.uniform_(m.weight, -init_range, init_range)
                nn.init.zeros_(m.bias)

    def forward(self, x: Tensor) -> Tensor:
        x = self.features(x)
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        x = self.classifier(x)
        return x


class ModelEma(nn.Module):
    def __init__(self, model, decay=0.9):
        super().__init__()
        self.module = copy.deepcopy(model)
        self.module.eval()
        self.decay = decay

    @torch.no_grad()
    def update(self, model):
        for ema_v, model_v in zip(self.module.state_dict().values(),
                                  model.state_dict().values()):
            if ema_v.dtype.is_floating_point:
                ema_v.mul_(self.decay).add_(model_v, alpha=1. - self.decay)
            else:
                ema_v.copy_(model_v)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--steps', type=int, default=16)
    parser.add_argument('--warmup', type=int, default=3)
    parser.add_argument('--lr', type=float, default=3e-3)
    parser.add_argument('--drop-path', type=float, default=0.2)
    args = parser.parse_args()

    torch.manual_seed(42)
    device = 'cuda' if torch.cuda.is_available() else 'cpu'

    # drop_path on its own: the kept samples are scaled by 1 / keep_prob
    dp = DropPath(0.5)
    print(dp)
    ones = torch.ones(8, 2, 2, 2)
    out = dp(ones)
    print('drop_path values:', sorted(set(out.flatten().tolist())), 'shape', tuple(out.shape))
    dp.eval()
    print('eval is identity:', torch.equal(dp(ones), ones))

    settings = [  # expand, kernel, stride, channels, layers
        [1, 3, 1, 16, 1],
        [6, 3, 2, 24, 2],
        [6, 5, 2, 32, 2],
    ]
    model = EfficientNet(settings, num_classes=3, stochastic_depth_prob=args.drop_path)
    model.to(device)
    print(model.features[2][1])
    print('drop path rates:', [f'{m.drop_prob:.3f}' for m in model.modules()
                               if isinstance(m, DropPath)])
    n_parameters = sum(p.numel() for p in model.parameters() if p.requires_grad)
    print('number of params:', n_parameters)

    g = torch.Generator().manual_seed(3)
    y = torch.randint(0, 3, (96,), generator=g)
    x = torch.randn(96, 3, 24, 24, generator=g) * 0.3
    x[:, 0] += (y == 0).float().view(-1, 1, 1)
    x[:, 1] += (y == 1).float().view(-1, 1, 1) * torch.linspace(-1, 1, 24)
    x[:, 2] -= (y == 2).float().view(-1, 1, 1)
    loader = DataLoader(TensorDataset(x, y), batch_size=24, shuffle=True, drop_last=True)

    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if p.ndim <= 1 or name.endswith('.bias') else decay).append(p)
    optimizer = torch.optim.AdamW([{'params': decay, 'weight_decay': 0.05},
                                   {'params': no_decay, 'weight_decay': 0.0}], lr=args.lr)

    def lr_lambda(step):
        if step < args.warmup:
            return (step + 1) / args.warmup
        progress = (step - args.warmup) / max(1, args.steps - args.warmup)
        return 0.5 * (1. + math.cos(math.pi * progress))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    ema = ModelEma(model, decay=0.8)

    step = 0
    while step < args.steps:
        model.train()
        for images, target in loader:
            images, target = images.to(device), target.to(device)
            output = model(images)
            loss = criterion(output, target)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=5.0)
            optimizer.step()
            scheduler.step()
            ema.update(model)
            if step % 4 == 0:
                print(f'step {step:3d} loss {loss.item():.4f} '
                      f'lr {optimizer.param_groups[0]["lr"]:.6f}')
            step += 1
            if step >= args.steps:
                break

    model.eval()
    with torch.no_grad():
        acc = (model(x).argmax(1) == y).float().mean().item()
        ema_acc = (ema.module(x).argmax(1) == y).float().mean().item()
    print(f'train accuracy {acc:.3f}, ema accuracy {ema_acc:.3f}')
    bn = model.features[0][1]
    print('stem BN:', bn, 'batches tracked', int(bn.num_batches_tracked))


if __name__ == '__main__':
    main()
