"""ResNeXt with squeeze-and-excitation, in the manner of torchvision's resnet.py
(Bottleneck with groups/width_per_group, zero_init_residual, kaiming_normal_
mode="fan_out") and torchvision.ops.SqueezeExcitation (adaptive_avg_pool2d, two 1x1
convs, sigmoid scale broadcast over the map), trained as the classification reference
script does: CrossEntropyLoss(label_smoothing), SGD nesterov with no weight decay on
norms, LinearLR warmup then CosineAnnealingLR through SequentialLR, channels_last, and
the `accuracy` / AverageMeter / ProgressMeter helpers of the ImageNet example."""
import argparse
import io
from enum import Enum

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor


def conv3x3(in_planes, out_planes, stride=1, groups=1, dilation=1):
    """3x3 convolution with padding"""
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=dilation,
                     groups=groups, bias=False, dilation=dilation)


def conv1x1(in_planes, out_planes, stride=1):
    """1x1 convolution"""
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class SqueezeExcitation(torch.nn.Module):
    def __init__(self, input_channels, squeeze_channels, activation=torch.nn.ReLU,
                 scale_activation=torch.nn.Sigmoid):
        super().__init__()
        self.avgpool = torch.nn.AdaptiveAvgPool2d(1)
        self.fc1 = torch.nn.Conv2d(input_channels, squeeze_channels, 1)
        self.fc2 = torch.nn.Conv2d(squeeze_channels, input_channels, 1)
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


class SELayer(nn.Module):
    """The Linear form of hujie-frank/SENet's block (moskomule/senet.pytorch)."""

    def __init__(self, channel, reduction=16):
        super(SELayer, self).__init__()
        self.avg_pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Sequential(
            nn.Linear(channel, channel // reduction, bias=False),
            nn.ReLU(inplace=True),
            nn.Linear(channel // reduction, channel, bias=False),
            nn.Sigmoid()
        )

    def forward(self, x):
        b, c, _, _ = x.size()
        y = self.avg_pool(x).view(b, c)
        y = self.fc(y).view(b, c, 1, 1)
        return x * y.expand_as(x)


class Bottleneck(nn.Module):
    expansion: int = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1, base_width=64,
                 dilation=1, norm_layer=None, se="conv"):
        super().__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        width = int(planes * (base_width / 64.0)) * groups
        # Both self.conv2 and self.downsample layers downsample the input when stride != 1
        self.conv1 = conv1x1(inplanes, width)
        self.bn1 = norm_layer(width)
        self.conv2 = conv3x3(width, width, stride, groups, dilation)
        self.bn2 = norm_layer(width)
        self.conv3 = conv1x1(width, planes * self.expansion)
        self.bn3 = norm_layer(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        if se == "conv":
            self.se = SqueezeExcitation(planes * self.expansion, planes * self.expansion // 8)
        else:
            self.se = SELayer(planes * self.expansion, reduction=8)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: Tensor) -> Tensor:
        identity = x

        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)

        out = self.conv2(out)
        out = self.bn2(out)
        out = self.relu(out)

        out = self.conv3(out)
        out = self.bn3(out)
        out = self.se(out)

        if self.downsample is not None:
            identity = self.downsample(x)

        out += identity
        out = self.relu(out)

        return out


class ResNet(nn.Module):
    def __init__(self, block, layers, num_classes=10, zero_init_residual=False, groups=1,
                 width_per_group=64, se="conv"):
        super().__init__()
        norm_layer = nn.BatchNorm2d
        self._norm_layer = norm_layer

        self.inplanes = 16
        self.dilation = 1
        self.groups = groups
        self.base_width = width_per_group
        self.se = se
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = norm_layer(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.layer1 = self._make_layer(block, 8, layers[0])
        self.layer2 = self._make_layer(block, 16, layers[1], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(16 * block.expansion, num_classes)

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

        # Zero-initialize the last BN in each residual branch,
        # so that the residual branch starts with zeros, and each residual block behaves like an identity.
        # This improves the model by 0.2~0.3% according to https://arxiv.org/abs/1706.02677
        if zero_init_residual:
            for m in self.modules():
                if isinstance(m, Bottleneck) and m.bn3.weight is not None:
                    nn.init.constant_(m.bn3.weight, 0)  # type: ignore[arg-type]

    def _make_layer(self, block, planes, blocks, stride=1):
        norm_layer = self._norm_layer
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                conv1x1(self.inplanes, planes * block.expansion, stride),
                norm_layer(planes * block.expansion),
            )

        layers = []
        layers.append(block(self.inplanes, planes, stride, downsample, self.groups, self.base_width,
                            self.dilation, norm_layer, self.se))
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes, groups=self.groups, base_width=self.base_width,
                                dilation=self.dilation, norm_layer=norm_layer, se=self.se))

        return nn.Sequential(*layers)

    def _forward_impl(self, x: Tensor) -> Tensor:
        x = self.conv1(x)
        x = self.bn1(x)
        x = self.relu(x)

        x = self.layer1(x)
        x = self.layer2(x)

        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        x = self.fc(x)

        return x

    def forward(self, x: Tensor) -> Tensor:
        return self._forward_impl(x)


class Summary(Enum):
    NONE = 0
    AVERAGE = 1
    SUM = 2
    COUNT = 3


class AverageMeter(object):
    """Computes and stores the average and current value"""
    def __init__(self, name, fmt=':f', summary_type=Summary.AVERAGE):
        self.name = name
        self.fmt = fmt
        self.summary_type = summary_type
        self.reset()

    def reset(self):
        self.val = 0
        self.avg = 0
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count

    def __str__(self):
        fmtstr = '{name} {val' + self.fmt + '} ({avg' + self.fmt + '})'
        return fmtstr.format(**self.__dict__)


class ProgressMeter(object):
    def __init__(self, num_batches, meters, prefix=""):
        self.batch_fmtstr = self._get_batch_fmtstr(num_batches)
        self.meters = meters
        self.prefix = prefix

    def display(self, batch):
        entries = [self.prefix + self.batch_fmtstr.format(batch)]
        entries += [str(meter) for meter in self.meters]
        print('\t'.join(entries))

    def _get_batch_fmtstr(self, num_batches):
        num_digits = len(str(num_batches // 1))
        fmt = '{:' + str(num_digits) + 'd}'
        return '[' + fmt + '/' + fmt.format(num_batches) + ']'


def accuracy(output, target, topk=(1,)):
    """Computes the accuracy over the k top predictions for the specified values of k"""
    with torch.no_grad():
        maxk = max(topk)
        batch_size = target.size(0)

        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))

        res = []
        for k in topk:
            correct_k = correct[:k].reshape(-1).float().sum(0, keepdim=True)
            res.append(correct_k.mul_(100.0 / batch_size))
        return res


def set_weight_decay(model, weight_decay, norm_weight_decay=0.0):
    norm_classes = (nn.modules.batchnorm._BatchNorm, nn.LayerNorm, nn.GroupNorm)
    params = {"other": [], "norm": []}

    def _add_params(module, prefix=""):
        for name, p in module.named_parameters(recurse=False):
            if not p.requires_grad:
                continue
            if isinstance(module, norm_classes):
                params["norm"].append(p)
            else:
                params["other"].append(p)
        for child_name, child_module in module.named_children():
            child_prefix = f"{prefix}.{child_name}" if prefix != "" else child_name
            _add_params(child_module, prefix=child_prefix)

    _add_params(model)
    return [{"params": params["other"], "weight_decay": weight_decay},
            {"params": params["norm"], "weight_decay": norm_weight_decay}]


def make_data(n, g):
    """Ten classes: a bright bar at one of 5 orientations/positions in one of 2 colours."""
    x = torch.randn(n, 3, 16, 16, generator=g) * 0.5
    y = torch.randint(0, 10, (n,), generator=g)
    for i in range(n):
        c, k = int(y[i]) % 2, int(y[i]) // 2
        if k < 3:
            x[i, c, 3 + 4 * k:5 + 4 * k, :] += 2.0
        else:
            x[i, c, :, 4 + 6 * (k - 3):6 + 6 * (k - 3)] += 2.0
    return x, y


def main():
    parser = argparse.ArgumentParser(description="ResNeXt-SE")
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr-warmup-epochs", type=int, default=2)
    args = parser.parse_args()
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)

    model = ResNet(Bottleneck, [1, 1], groups=4, width_per_group=16, zero_init_residual=True)
    print(model.layer1)
    print("bn3 gamma", model.layer1[0].bn3.weight[:4], "conv2 groups", model.layer1[0].conv2.groups,
          "weight", tuple(model.layer1[0].conv2.weight.shape))
    print("kaiming std %.4f (fan_out) expected %.4f" % (model.conv1.weight.std().item(), (2 / (16 * 9)) ** 0.5))
    se_lin = SELayer(32, 8)
    print(se_lin)
    z = torch.randn(2, 32, 4, 4)
    print("se", se_lin(z).shape, se_lin(z).stride(), model.layer1[0].se(z).stride())

    model = model.to(memory_format=torch.channels_last)
    print("channels_last", model.conv1.weight.is_contiguous(memory_format=torch.channels_last),
          model.conv1.weight.stride())

    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    parameters = set_weight_decay(model, 5e-4)
    print("param groups", [len(p["params"]) for p in parameters])
    optimizer = torch.optim.SGD(parameters, lr=0.1, momentum=0.9, nesterov=True)
    main_lr_scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(
        optimizer, T_max=args.epochs - args.lr_warmup_epochs, eta_min=0.0)
    warmup_lr_scheduler = torch.optim.lr_scheduler.LinearLR(
        optimizer, start_factor=0.1, total_iters=args.lr_warmup_epochs)
    lr_scheduler = torch.optim.lr_scheduler.SequentialLR(
        optimizer, schedulers=[warmup_lr_scheduler, main_lr_scheduler], milestones=[args.lr_warmup_epochs])

    train_x, train_y = make_data(128, g)
    val_x, val_y = make_data(64, g)
    nb = len(train_x) // args.batch_size
    for epoch in range(args.epochs):
        batch_time = AverageMeter('Loss', ':.4e')
        losses = AverageMeter('Loss', ':.4e')
        top1 = AverageMeter('Acc@1', ':6.2f')
        top5 = AverageMeter('Acc@5', ':6.2f')
        progress = ProgressMeter(nb, [losses, top1, top5], prefix="Epoch: [{}]".format(epoch))
        del batch_time
        model.train()
        perm = torch.randperm(len(train_x))
        for i in range(nb):
            idx = perm[i * args.batch_size:(i + 1) * args.batch_size]
            images = train_x[idx].contiguous(memory_format=torch.channels_last)
            target = train_y[idx]
            output = model(images)
            loss = criterion(output, target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            acc1, acc5 = accuracy(output, target, topk=(1, 5))
            losses.update(loss.item(), images.size(0))
            top1.update(acc1[0], images.size(0))
            top5.update(acc5[0], images.size(0))
        progress.display(nb)
        lr_scheduler.step()
        print("lr", lr_scheduler.get_last_lr())

    model.eval()
    with torch.no_grad():
        out = model(val_x)
        acc1, acc5 = accuracy(out, val_y, topk=(1, 5))
    print(f"Test:  Acc@1 {acc1.item():.3f} Acc@5 {acc5.item():.3f}", out.stride())

    buf = io.BytesIO()
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "lr_scheduler": lr_scheduler.state_dict(), "epoch": args.epochs}, buf)
    buf.seek(0)
    checkpoint = torch.load(buf, map_location="cpu", weights_only=True)
    print("checkpoint", sorted(checkpoint), sorted(checkpoint["lr_scheduler"]))
    print("milestones", checkpoint["lr_scheduler"]["_milestones"],
          "last_epoch", checkpoint["lr_scheduler"]["last_epoch"])
    print("probs", F.softmax(out[:2], dim=1).max(1))


if __name__ == "__main__":
    main()
