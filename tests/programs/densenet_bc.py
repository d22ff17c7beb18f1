"""DenseNet-BC (Huang et al.) as torchvision writes it: _DenseLayer with a bottleneck
(norm1/relu1/conv1), memory-efficient mode through torch.utils.checkpoint.checkpoint
(`call_checkpoint_bottleneck`, use_reentrant=False), torch.cat of the feature list,
_DenseBlock as nn.ModuleDict, _Transition layers, add_module names, F.adaptive_avg_pool2d.
A tiny growth rate on synthetic 16x16 images; checks that the memory-efficient model gives
the same outputs and gradients as the plain one."""
import argparse
from collections import OrderedDict
from typing import List

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint as cp
from torch import Tensor


class _DenseLayer(nn.Module):
    def __init__(self, num_input_features: int, growth_rate: int, bn_size: int,
                 drop_rate: float, memory_efficient: bool = False) -> None:
        super().__init__()
        self.norm1 = nn.BatchNorm2d(num_input_features)
        self.relu1 = nn.ReLU(inplace=True)
        self.conv1 = nn.Conv2d(num_input_features, bn_size * growth_rate, kernel_size=1,
                               stride=1, bias=False)

        self.norm2 = nn.BatchNorm2d(bn_size * growth_rate)
        self.relu2 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(bn_size * growth_rate, growth_rate, kernel_size=3, stride=1,
                               padding=1, bias=False)

        self.drop_rate = float(drop_rate)
        self.memory_efficient = memory_efficient

    def bn_function(self, inputs: List[Tensor]) -> Tensor:
        concated_features = torch.cat(inputs, 1)
        bottleneck_output = self.conv1(self.relu1(self.norm1(concated_features)))  # noqa: T484
        return bottleneck_output

    # todo: rewrite when torchscript supports any
    def any_requires_grad(self, input: List[Tensor]) -> bool:
        for tensor in input:
            if tensor.requires_grad:
                return True
        return False

    def call_checkpoint_bottleneck(self, input: List[Tensor]) -> Tensor:
        def closure(*inputs):
            return self.bn_function(inputs)

        return cp.checkpoint(closure, *input, use_reentrant=False)

    def forward(self, input):  # noqa: F811
        if isinstance(input, Tensor):
            prev_features = [input]
        else:
            prev_features = input

        if self.memory_efficient and self.any_requires_grad(prev_features):
            bottleneck_output = self.call_checkpoint_bottleneck(prev_features)
        else:
            bottleneck_output = self.bn_function(prev_features)

        new_features = self.conv2(self.relu2(self.norm2(bottleneck_output)))
        if self.drop_rate > 0:
            new_features = F.dropout(new_features, p=self.drop_rate, training=self.training)
        return new_features


class _DenseBlock(nn.ModuleDict):
    _version = 2

    def __init__(self, num_layers: int, num_input_features: int, bn_size: int,
                 growth_rate: int, drop_rate: float, memory_efficient: bool = False) -> None:
        super().__init__()
        for i in range(num_layers):
            layer = _DenseLayer(
                num_input_features + i * growth_rate,
                growth_rate=growth_rate,
                bn_size=bn_size,
                drop_rate=drop_rate,
                memory_efficient=memory_efficient,
            )
            self.add_module("denselayer%d" % (i + 1), layer)

    def forward(self, init_features: Tensor) -> Tensor:
        features = [init_features]
        for name, layer in self.items():
            new_features = layer(features)
            features.append(new_features)
        return torch.cat(features, 1)


class _Transition(nn.Sequential):
    def __init__(self, num_input_features: int, num_output_features: int) -> None:
        super().__init__()
        self.norm = nn.BatchNorm2d(num_input_features)
        self.relu = nn.ReLU(inplace=True)
        self.conv = nn.Conv2d(num_input_features, num_output_features, kernel_size=1,
                              stride=1, bias=False)
        self.pool = nn.AvgPool2d(kernel_size=2, stride=2)


class DenseNet(nn.Module):
    def __init__(self, growth_rate: int = 32, block_config=(6, 12, 24, 16),
                 num_init_features: int = 64, bn_size: int = 4, drop_rate: float = 0,
                 num_classes: int = 1000, memory_efficient: bool = False) -> None:
        super().__init__()

        # First convolution
        self.features = nn.Sequential(
            OrderedDict(
                [
                    ("conv0", nn.Conv2d(3, num_init_features, kernel_size=3, stride=1,
                                        padding=1, bias=False)),
                    ("norm0", nn.BatchNorm2d(num_init_features)),
                    ("relu0", nn.ReLU(inplace=True)),
                    ("pool0", nn.MaxPool2d(kernel_size=3, stride=2, padding=1)),
                ]
            )
        )

        # Each denseblock
        num_features = num_init_features
        for i, num_layers in enumerate(block_config):
            block = _DenseBlock(
                num_layers=num_layers,
                num_input_features=num_features,
                bn_size=bn_size,
                growth_rate=growth_rate,
                drop_rate=drop_rate,
                memory_efficient=memory_efficient,
            )
            self.features.add_module("denseblock%d" % (i + 1), block)
            num_features = num_features + num_layers * growth_rate
            if i != len(block_config) - 1:
                trans = _Transition(num_input_features=num_features,
                                    num_output_features=num_features // 2)
                self.features.add_module("transition%d" % (i + 1), trans)
                num_features = num_features // 2

        # Final batch norm
        self.features.add_module("norm5", nn.BatchNorm2d(num_features))

        # Linear layer
        self.classifier = nn.Linear(num_features, num_classes)

        # Official init from torch repo.
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.Linear):
                nn.init.constant_(m.bias, 0)

    def forward(self, x: Tensor) -> Tensor:
        features = self.features(x)
        out = F.relu(features, inplace=True)
        out = F.adaptive_avg_pool2d(out, (1, 1))
        out = torch.flatten(out, 1)
        out = self.classifier(out)
        return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--growth-rate", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--memory-efficient", action="store_true", default=True)
    args = parser.parse_args()

    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    config = dict(growth_rate=args.growth_rate, block_config=(2, 3), num_init_features=8,
                  num_classes=3)
    model = DenseNet(memory_efficient=args.memory_efficient, **config).to(device)
    print(model.features.transition1)
    print(list(model.features.denseblock2.keys()))
    print(model.features.denseblock1.denselayer2)
    print("classifier:", model.classifier)
    print("parameters:", sum(p.numel() for p in model.parameters()))

    # the memory-efficient (checkpointed) model computes what the plain one does
    plain = DenseNet(memory_efficient=False, **config).to(device)
    plain.load_state_dict(model.state_dict())
    x = torch.randn(4, 3, 16, 16, device=device)
    out_ckpt, out_plain = model(x), plain(x)
    out_ckpt.sum().backward()
    out_plain.sum().backward()
    grads_same = all(torch.allclose(a.grad, b.grad, atol=1e-5) for a, b in
                     zip(model.parameters(), plain.parameters()))
    print("checkpoint outputs match:", torch.allclose(out_ckpt, out_plain, atol=1e-6),
          "grads match:", grads_same)
    print("output grad_fn:", out_ckpt.grad_fn.name())
    model.zero_grad(set_to_none=True)

    g = torch.Generator().manual_seed(5)
    labels = torch.randint(0, 3, (96,), generator=g)
    images = torch.randn(96, 3, 16, 16, generator=g)
    images[:, :, 4:12, 4:12] += labels.view(-1, 1, 1, 1).float()
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(images, labels),
                                         batch_size=32, shuffle=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True,
                                weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[2], gamma=0.1)
    for epoch in range(args.epochs):
        model.train()
        losses, correct = 0.0, 0
        for batch_idx, (input, target) in enumerate(loader):
            input, target = input.to(device), target.to(device)
            output = model(input)
            loss = F.cross_entropy(output, target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses += loss.item() * input.size(0)
            correct += output.argmax(1).eq(target).sum().item()
            if batch_idx == 0:
                print("Epoch: [{0}][{1}/{2}]\tLoss {loss:.4f}".format(
                    epoch, batch_idx, len(loader), loss=loss.item()))
        scheduler.step()
        print(f"Epoch {epoch}: train loss {losses / len(loader.dataset):.4f} "
              f"error {100 * (1 - correct / len(loader.dataset)):.2f}% "
              f"lr {scheduler.get_last_lr()[0]}")

    model.eval()
    with torch.no_grad():
        err = (model(images).argmax(1) != labels).float().mean().item()
    print(f"Test error: {100 * err:.2f}%")


if __name__ == "__main__":
    main()
