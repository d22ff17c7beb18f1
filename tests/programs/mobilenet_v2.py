"""MobileNetV2 (Sandler et al.) as torchvision writes it: _make_divisible, Conv2dNormActivation
blocks, InvertedResidual with a depthwise Conv2d(groups=hidden_dim) and ReLU6, width_mult,
kaiming_normal_(mode="fan_out") init, Dropout + Linear classifier. A tiny width on 32x32
synthetic images of 4 classes, trained a few steps with SGD + cosine LR."""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def _make_divisible(v, divisor, min_value=None):
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    # Make sure that round down does not go down by more than 10%.
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


class Conv2dNormActivation(nn.Sequential):
    def __init__(self, in_planes, out_planes, kernel_size=3, stride=1, groups=1,
                 norm_layer=None, activation_layer=None):
        padding = (kernel_size - 1) // 2
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        if activation_layer is None:
            activation_layer = nn.ReLU6
        super().__init__(
            nn.Conv2d(in_planes, out_planes, kernel_size, stride, padding, groups=groups,
                      bias=False),
            norm_layer(out_planes),
            activation_layer(inplace=True),
        )
        self.out_channels = out_planes


class InvertedResidual(nn.Module):
    def __init__(self, inp, oup, stride, expand_ratio, norm_layer=None):
        super().__init__()
        self.stride = stride
        if stride not in [1, 2]:
            raise ValueError(f"stride should be 1 or 2 instead of {stride}")
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        hidden_dim = int(round(inp * expand_ratio))
        self.use_res_connect = self.stride == 1 and inp == oup

        layers = []
        if expand_ratio != 1:
            # pw
            layers.append(Conv2dNormActivation(inp, hidden_dim, kernel_size=1,
                                               norm_layer=norm_layer,
                                               activation_layer=nn.ReLU6))
        layers.extend([
            # dw
            Conv2dNormActivation(hidden_dim, hidden_dim, stride=stride, groups=hidden_dim,
                                 norm_layer=norm_layer, activation_layer=nn.ReLU6),
            # pw-linear
            nn.Conv2d(hidden_dim, oup, 1, 1, 0, bias=False),
            norm_layer(oup),
        ])
        self.conv = nn.Sequential(*layers)
        self.out_channels = oup
        self._is_cn = stride > 1

    def forward(self, x):
        if self.use_res_connect:
            return x + self.conv(x)
        else:
            return self.conv(x)


class MobileNetV2(nn.Module):
    def __init__(self, num_classes=1000, width_mult=1.0, inverted_residual_setting=None,
                 round_nearest=8, block=None, norm_layer=None, dropout=0.2):
        super().__init__()
        if block is None:
            block = InvertedResidual
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        input_channel = 32
        last_channel = 1280
        if inverted_residual_setting is None:
            inverted_residual_setting = [
                # t, c, n, s
                [1, 16, 1, 1],
                [6, 24, 2, 2],
                [6, 32, 3, 2],
                [6, 64, 4, 2],
                [6, 96, 3, 1],
                [6, 160, 3, 2],
                [6, 320, 1, 1],
            ]
        if len(inverted_residual_setting) == 0 or len(inverted_residual_setting[0]) != 4:
            raise ValueError(
                f"inverted_residual_setting should be non-empty or a 4-element list, "
                f"got {inverted_residual_setting}")

        input_channel = _make_divisible(input_channel * width_mult, round_nearest)
        self.last_channel = _make_divisible(last_channel * max(1.0, width_mult), round_nearest)
        features = [Conv2dNormActivation(3, input_channel, stride=2, norm_layer=norm_layer,
                                         activation_layer=nn.ReLU6)]
        for t, c, n, s in inverted_residual_setting:
            output_channel = _make_divisible(c * width_mult, round_nearest)
            for i in range(n):
                stride = s if i == 0 else 1
                features.append(block(input_channel, output_channel, stride, expand_ratio=t,
                                      norm_layer=norm_layer))
                input_channel = output_channel
        features.append(Conv2dNormActivation(input_channel, self.last_channel, kernel_size=1,
                                             norm_layer=norm_layer,
                                             activation_layer=nn.ReLU6))
        self.features = nn.Sequential(*features)

        self.classifier = nn.Sequential(
            nn.Dropout(p=dropout),
            nn.Linear(self.last_channel, num_classes),
        )

        # weight initialization
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.zeros_(m.bias)

    def _forward_impl(self, x):
        x = self.features(x)
        # Cannot use "squeeze" as batch-size can be 1
        x = nn.functional.adaptive_avg_pool2d(x, (1, 1))
        x = torch.flatten(x, 1)
        x = self.classifier(x)
        return x

    def forward(self, x):
        return self._forward_impl(x)


def make_data(n, num_classes, generator):
    # each class is a colour/frequency pattern plus noise
    labels = torch.randint(0, num_classes, (n,), generator=generator)
    xs = torch.linspace(0, 1, 32)
    grid = xs.view(1, 32) + xs.view(32, 1)
    images = torch.randn(n, 3, 32, 32, generator=generator) * 0.5
    for c in range(num_classes):
        pattern = torch.sin(grid * (c + 1) * 3.0)
        images[labels == c, c % 3] += pattern
    return images, labels


def train(model, device, loader, optimizer, scheduler, epoch, log_interval):
    model.train()
    for batch_idx, (data, target) in enumerate(loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.cross_entropy(output, target, label_smoothing=0.1)
        loss.backward()
        optimizer.step()
        scheduler.step()
        if batch_idx % log_interval == 0:
            print(f"Train Epoch: {epoch} [{batch_idx * len(data)}/{len(loader.dataset)}]"
                  f"\tLoss: {loss.item():.6f}\tlr: {scheduler.get_last_lr()[0]:.5f}")


def evaluate(model, device, loader):
    model.eval()
    correct, total, loss_sum = 0, 0, 0.0
    with torch.no_grad():
        for data, target in loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            loss_sum += F.cross_entropy(output, target, reduction="sum").item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
            total += target.size(0)
    print(f"Test set: Average loss: {loss_sum / total:.4f}, "
          f"Accuracy: {correct}/{total} ({100. * correct / total:.0f}%)")


def main():
    parser = argparse.ArgumentParser(description="MobileNetV2 on synthetic images")
    parser.add_argument("--width-mult", type=float, default=0.25)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--log-interval", type=int, default=2)
    args = parser.parse_args()
    print(args)

    torch.manual_seed(args.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    g = torch.Generator().manual_seed(0)
    x_train, y_train = make_data(128, 4, g)
    x_test, y_test = make_data(64, 4, g)
    train_loader = DataLoader(TensorDataset(x_train, y_train), batch_size=args.batch_size,
                              shuffle=True)
    test_loader = DataLoader(TensorDataset(x_test, y_test), batch_size=64)

    setting = [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 2, 2], [6, 64, 1, 2]]
    model = MobileNetV2(num_classes=4, width_mult=args.width_mult,
                        inverted_residual_setting=setting).to(device)
    print(model.features[1])
    print(model.features[2].conv[1])
    print(model.classifier)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"last_channel: {model.last_channel}, params: {n_params}")
    print(f"_make_divisible: {[_make_divisible(c * 0.35, 8) for c in (32, 16, 24, 96, 1280)]}")

    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9,
                                weight_decay=4e-5, nesterov=True)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(
        optimizer, T_max=args.epochs * len(train_loader))
    start = time.time()
    for epoch in range(1, args.epochs + 1):
        train(model, device, train_loader, optimizer, scheduler, epoch, args.log_interval)
        evaluate(model, device, test_loader)
    print(f"time: {time.time() - start:.1f}s")

    torch.save(model.state_dict(), "mobilenet_v2.pt")
    reloaded = MobileNetV2(num_classes=4, width_mult=args.width_mult,
                           inverted_residual_setting=setting)
    reloaded.load_state_dict(torch.load("mobilenet_v2.pt", weights_only=True))
    reloaded.eval()
    model.eval()
    with torch.no_grad():
        same = torch.allclose(reloaded(x_test[:8]), model(x_test[:8]), atol=1e-6)
    print(f"reloaded model agrees: {same}")
    print(f"running_mean of last BN: {model.features[-1][1].running_mean.shape}, "
          f"num_batches_tracked: {model.features[-1][1].num_batches_tracked.item()}")


if __name__ == "__main__":
    main()
