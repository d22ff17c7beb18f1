"""Inception-v3, scaled down, as torchvision's inception.py writes it: BasicConv2d
(conv + BatchNorm2d(eps=0.001) + relu), InceptionA/B/C branches joined by torch.cat,
F.avg_pool2d(kernel_size=3, stride=1, padding=1) and F.max_pool2d in the pooling branches
(and count_include_pad=False as timm's variant), the auxiliary classifier whose logits
only come out in training as the namedtuple InceptionOutputs, transform_input's channel
math, trunc_normal_ init, and the reference training loss `loss1 + 0.4 * loss2`."""
import warnings
from collections import namedtuple
from functools import partial
from typing import Any, Callable, List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import nn, Tensor


InceptionOutputs = namedtuple("InceptionOutputs", ["logits", "aux_logits"])
InceptionOutputs.__annotations__ = {"logits": Tensor, "aux_logits": Optional[Tensor]}

# Script annotations failed with _GoogleNetOutputs = namedtuple ...
# _InceptionOutputs set here for backwards compat
_InceptionOutputs = InceptionOutputs


class BasicConv2d(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, **kwargs: Any) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, bias=False, **kwargs)
        self.bn = nn.BatchNorm2d(out_channels, eps=0.001)

    def forward(self, x: Tensor) -> Tensor:
        x = self.conv(x)
        x = self.bn(x)
        return F.relu(x, inplace=True)


class InceptionA(nn.Module):
    def __init__(
        self, in_channels: int, pool_features: int, conv_block: Optional[Callable[..., nn.Module]] = None
    ) -> None:
        super().__init__()
        if conv_block is None:
            conv_block = BasicConv2d
        self.branch1x1 = conv_block(in_channels, 16, kernel_size=1)

        self.branch5x5_1 = conv_block(in_channels, 12, kernel_size=1)
        self.branch5x5_2 = conv_block(12, 16, kernel_size=5, padding=2)

        self.branch3x3dbl_1 = conv_block(in_channels, 16, kernel_size=1)
        self.branch3x3dbl_2 = conv_block(16, 24, kernel_size=3, padding=1)
        self.branch3x3dbl_3 = conv_block(24, 24, kernel_size=3, padding=1)

        self.branch_pool = conv_block(in_channels, pool_features, kernel_size=1)

    def _forward(self, x: Tensor) -> List[Tensor]:
        branch1x1 = self.branch1x1(x)

        branch5x5 = self.branch5x5_1(x)
        branch5x5 = self.branch5x5_2(branch5x5)

        branch3x3dbl = self.branch3x3dbl_1(x)
        branch3x3dbl = self.branch3x3dbl_2(branch3x3dbl)
        branch3x3dbl = self.branch3x3dbl_3(branch3x3dbl)

        branch_pool = F.avg_pool2d(x, kernel_size=3, stride=1, padding=1)
        branch_pool = self.branch_pool(branch_pool)

        outputs = [branch1x1, branch5x5, branch3x3dbl, branch_pool]
        return outputs

    def forward(self, x: Tensor) -> Tensor:
        outputs = self._forward(x)
        return torch.cat(outputs, 1)


class InceptionB(nn.Module):
    def __init__(self, in_channels: int, conv_block: Optional[Callable[..., nn.Module]] = None) -> None:
        super().__init__()
        if conv_block is None:
            conv_block = BasicConv2d
        self.branch3x3 = conv_block(in_channels, 48, kernel_size=3, stride=2)

        self.branch3x3dbl_1 = conv_block(in_channels, 16, kernel_size=1)
        self.branch3x3dbl_2 = conv_block(16, 24, kernel_size=3, padding=1)
        self.branch3x3dbl_3 = conv_block(24, 24, kernel_size=3, stride=2)

    def _forward(self, x: Tensor) -> List[Tensor]:
        branch3x3 = self.branch3x3(x)

        branch3x3dbl = self.branch3x3dbl_1(x)
        branch3x3dbl = self.branch3x3dbl_2(branch3x3dbl)
        branch3x3dbl = self.branch3x3dbl_3(branch3x3dbl)

        branch_pool = F.max_pool2d(x, kernel_size=3, stride=2)

        outputs = [branch3x3, branch3x3dbl, branch_pool]
        return outputs

    def forward(self, x: Tensor) -> Tensor:
        outputs = self._forward(x)
        return torch.cat(outputs, 1)


class InceptionC(nn.Module):
    def __init__(
        self, in_channels: int, channels_7x7: int, conv_block: Optional[Callable[..., nn.Module]] = None
    ) -> None:
        super().__init__()
        if conv_block is None:
            conv_block = BasicConv2d
        self.branch1x1 = conv_block(in_channels, 32, kernel_size=1)

        c7 = channels_7x7
        self.branch7x7_1 = conv_block(in_channels, c7, kernel_size=1)
        self.branch7x7_2 = conv_block(c7, c7, kernel_size=(1, 7), padding=(0, 3))
        self.branch7x7_3 = conv_block(c7, 32, kernel_size=(7, 1), padding=(3, 0))

        self.branch_pool = conv_block(in_channels, 32, kernel_size=1)

    def _forward(self, x: Tensor) -> List[Tensor]:
        branch1x1 = self.branch1x1(x)

        branch7x7 = self.branch7x7_1(x)
        branch7x7 = self.branch7x7_2(branch7x7)
        branch7x7 = self.branch7x7_3(branch7x7)

        # timm's variant: the padded border does not dilute the average
        branch_pool = F.avg_pool2d(x, kernel_size=3, stride=1, padding=1, count_include_pad=False)
        branch_pool = self.branch_pool(branch_pool)

        outputs = [branch1x1, branch7x7, branch_pool]
        return outputs

    def forward(self, x: Tensor) -> Tensor:
        outputs = self._forward(x)
        return torch.cat(outputs, 1)


class InceptionAux(nn.Module):
    def __init__(
        self, in_channels: int, num_classes: int, conv_block: Optional[Callable[..., nn.Module]] = None
    ) -> None:
        super().__init__()
        if conv_block is None:
            conv_block = BasicConv2d
        self.conv0 = conv_block(in_channels, 32, kernel_size=1)
        # the lite net's aux input is 3x3, pooled to 1x1: pad so the 3x3 conv fits
        self.conv1 = conv_block(32, 48, kernel_size=3, padding=1)
        self.conv1.stddev = 0.01  # type: ignore[assignment]
        self.fc = nn.Linear(48, num_classes)
        self.fc.stddev = 0.001  # type: ignore[assignment]

    def forward(self, x: Tensor) -> Tensor:
        # N x 96 x 3 x 3
        x = F.avg_pool2d(x, kernel_size=3, stride=2)
        # N x 96 x 1 x 1
        x = self.conv0(x)
        x = self.conv1(x)
        # Adaptive average pooling
        x = F.adaptive_avg_pool2d(x, (1, 1))
        x = torch.flatten(x, 1)
        x = self.fc(x)
        return x


class Inception3Lite(nn.Module):
    def __init__(
        self,
        num_classes: int = 5,
        aux_logits: bool = True,
        transform_input: bool = False,
        inception_blocks: Optional[List[Callable[..., nn.Module]]] = None,
        init_weights: Optional[bool] = None,
        dropout: float = 0.5,
    ) -> None:
        super().__init__()
        if inception_blocks is None:
            inception_blocks = [BasicConv2d, InceptionA, InceptionB, InceptionC, InceptionAux]
        if init_weights is None:
            warnings.warn(
                "The default weight initialization of inception_v3 will be changed in future releases of "
                "torchvision. If you wish to keep the old behavior (which leads to long initialization times"
                " due to scipy/scipy#11299), please set init_weights=True.",
                FutureWarning,
            )
            init_weights = True
        if len(inception_blocks) != 5:
            raise ValueError(f"length of inception_blocks should be 5 instead of {len(inception_blocks)}")
        conv_block = inception_blocks[0]
        inception_a = inception_blocks[1]
        inception_b = inception_blocks[2]
        inception_c = inception_blocks[3]
        inception_aux = inception_blocks[4]

        self.aux_logits = aux_logits
        self.transform_input = transform_input
        self.Conv2d_1a_3x3 = conv_block(3, 16, kernel_size=3, stride=2)
        self.Conv2d_2a_3x3 = conv_block(16, 32, kernel_size=3, padding=1)
        self.maxpool1 = nn.MaxPool2d(kernel_size=3, stride=2)
        self.Mixed_5b = inception_a(32, pool_features=8)
        self.Mixed_6a = inception_b(64)
        self.Mixed_6b = inception_c(136, channels_7x7=16)
        self.AuxLogits: Optional[nn.Module] = None
        if aux_logits:
            self.AuxLogits = inception_aux(96, num_classes)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.dropout = nn.Dropout(p=dropout)
        self.fc = nn.Linear(96, num_classes)
        if init_weights:
            for m in self.modules():
                if isinstance(m, nn.Conv2d) or isinstance(m, nn.Linear):
                    stddev = float(m.stddev) if hasattr(m, "stddev") else 0.1  # type: ignore
                    torch.nn.init.trunc_normal_(m.weight, mean=0.0, std=stddev, a=-2, b=2)
                elif isinstance(m, nn.BatchNorm2d):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)

    def _transform_input(self, x: Tensor) -> Tensor:
        if self.transform_input:
            x_ch0 = torch.unsqueeze(x[:, 0], 1) * (0.229 / 0.5) + (0.485 - 0.5) / 0.5
            x_ch1 = torch.unsqueeze(x[:, 1], 1) * (0.224 / 0.5) + (0.456 - 0.5) / 0.5
            x_ch2 = torch.unsqueeze(x[:, 2], 1) * (0.225 / 0.5) + (0.406 - 0.5) / 0.5
            x = torch.cat((x_ch0, x_ch1, x_ch2), 1)
        return x

    def _forward(self, x: Tensor) -> Tuple[Tensor, Optional[Tensor]]:
        # N x 3 x 35 x 35
        x = self.Conv2d_1a_3x3(x)
        # N x 16 x 17 x 17
        x = self.Conv2d_2a_3x3(x)
        x = self.maxpool1(x)
        # N x 32 x 8 x 8
        x = self.Mixed_5b(x)
        # N x 64 x 8 x 8
        x = self.Mixed_6a(x)
        # N x 136 x 3 x 3
        x = self.Mixed_6b(x)
        # N x 96 x 3 x 3
        aux: Optional[Tensor] = None
        if self.AuxLogits is not None:
            if self.training:
                aux = self.AuxLogits(x)
        x = self.avgpool(x)
        x = self.dropout(x)
        x = torch.flatten(x, 1)
        x = self.fc(x)
        return x, aux

    @torch.jit.unused
    def eager_outputs(self, x: Tensor, aux: Optional[Tensor]) -> InceptionOutputs:
        if self.training and self.aux_logits:
            return InceptionOutputs(x, aux)
        else:
            return x  # type: ignore[return-value]

    def forward(self, x: Tensor) -> InceptionOutputs:
        x = self._transform_input(x)
        x, aux = self._forward(x)
        aux_defined = self.training and self.aux_logits
        if torch.jit.is_scripting():
            if not aux_defined:
                warnings.warn("Scripted Inception3 always returns Inception3 Tuple")
            return InceptionOutputs(x, aux)
        else:
            return self.eager_outputs(x, aux)


def make_data(n=40):
    g = torch.Generator().manual_seed(0)
    y = torch.arange(n) % 5
    x = torch.rand(n, 3, 35, 35, generator=g) * 0.2
    for i in range(n):
        c = int(y[i])
        # class c: a bar at row band c
        x[i, c % 3, 7 * c:7 * c + 5, :] += 0.8
    return x, y


def main():
    torch.manual_seed(0)
    model = Inception3Lite(num_classes=5, transform_input=True, init_weights=True)
    print(model)
    print("params", sum(p.numel() for p in model.parameters() if p.requires_grad))
    w = model.fc.weight
    print("trunc_normal within", bool(w.abs().max() <= 2.0), "aux fc std < 0.01",
          bool(model.AuxLogits.fc.weight.std() < 0.01))

    x = torch.linspace(0, 1, 3 * 2 * 2).view(1, 3, 2, 2)
    print("transform_input", model._transform_input(x))
    cip = F.avg_pool2d(torch.ones(1, 1, 4, 4), kernel_size=3, stride=1, padding=1)
    nocip = F.avg_pool2d(torch.ones(1, 1, 4, 4), kernel_size=3, stride=1, padding=1,
                         count_include_pad=False)
    print("count_include_pad=True", cip[0, 0])
    print("count_include_pad=False", nocip[0, 0])
    print(nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False))

    xs, ys = make_data()
    model.train()
    out = model(xs[:4])
    print(type(out).__name__, out._fields, out.logits.shape, out.aux_logits.shape)
    logits, aux = out
    print("tuple unpack", logits.shape == out[0].shape, isinstance(out, tuple))
    model.eval()
    with torch.no_grad():
        ev = model(xs[:4])
    print("eval output", type(ev).__name__, ev.shape)
    model.train()

    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.RMSprop(model.parameters(), lr=0.002, alpha=0.9, eps=1.0,
                                    momentum=0.9, weight_decay=1e-5)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.5)
    for epoch in range(12):
        perm = torch.randperm(len(xs))
        for i in range(0, len(xs), 20):
            idx = perm[i:i + 20]
            output, aux_output = model(xs[idx])
            loss1 = criterion(output, ys[idx])
            loss2 = criterion(aux_output, ys[idx])
            loss = loss1 + 0.4 * loss2
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        scheduler.step()
        print(f"epoch {epoch:2d} lr {scheduler.get_last_lr()[0]:.5f} loss {loss.item():.4f} "
              f"main {loss1.item():.4f} aux {loss2.item():.4f}")
    model.eval()
    with torch.no_grad():
        acc = (model(xs).argmax(dim=1) == ys).float().mean()
    print(f"train acc {acc.item():.3f}")
    print("state_dict keys", len(model.state_dict()), list(model.state_dict())[:3])


if __name__ == "__main__":
    main()
