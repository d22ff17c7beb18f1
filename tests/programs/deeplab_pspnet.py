"""Semantic segmentation heads in the manner of torchvision's DeepLabV3 (ASPP: 1x1 conv,
dilated 3x3 convs and an image-pooling branch upsampled with F.interpolate, projected
after torch.cat) and hszhao/semseg's PSPNet (PPM: AdaptiveAvgPool2d bins 1/2/3/6,
bilinear align_corners=True), trained with CrossEntropyLoss(ignore_index=255) and a poly
learning-rate schedule through LambdaLR; evaluation with a confusion matrix built by
torch.bincount, per-class IoU and mIoU (intersectionAndUnion style). Synthetic images of
coloured shapes stand in for VOC."""
import argparse
from collections import OrderedDict

import torch
import torch.nn as nn
import torch.nn.functional as F


# ------------------------------------------------------------- torchvision deeplabv3.py
class ASPPConv(nn.Sequential):
    def __init__(self, in_channels: int, out_channels: int, dilation: int) -> None:
        modules = [
            nn.Conv2d(in_channels, out_channels, 3, padding=dilation, dilation=dilation, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
        ]
        super().__init__(*modules)


class ASPPPooling(nn.Sequential):
    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__(
            nn.AdaptiveAvgPool2d(1),
            nn.Conv2d(in_channels, out_channels, 1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        size = x.shape[-2:]
        for mod in self:
            x = mod(x)
        return F.interpolate(x, size=size, mode="bilinear", align_corners=False)


class ASPP(nn.Module):
    def __init__(self, in_channels, atrous_rates, out_channels=256):
        super().__init__()
        modules = []
        modules.append(
            nn.Sequential(nn.Conv2d(in_channels, out_channels, 1, bias=False),
                          nn.BatchNorm2d(out_channels), nn.ReLU())
        )

        rates = tuple(atrous_rates)
        for rate in rates:
            modules.append(ASPPConv(in_channels, out_channels, rate))

        modules.append(ASPPPooling(in_channels, out_channels))

        self.convs = nn.ModuleList(modules)

        self.project = nn.Sequential(
            nn.Conv2d(len(self.convs) * out_channels, out_channels, 1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
            nn.Dropout(0.5),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _res = []
        for conv in self.convs:
            _res.append(conv(x))
        res = torch.cat(_res, dim=1)
        return self.project(res)


class DeepLabHead(nn.Sequential):
    def __init__(self, in_channels: int, num_classes: int, atrous_rates=(12, 24, 36), width=256) -> None:
        super().__init__(
            ASPP(in_channels, atrous_rates, width),
            nn.Conv2d(width, width, 3, padding=1, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(),
            nn.Conv2d(width, num_classes, 1),
        )


class Backbone(nn.Module):
    """A small dilated backbone (output stride 4) returning an OrderedDict like
    IntermediateLayerGetter."""

    def __init__(self, width=16):
        super().__init__()
        self.layer1 = nn.Sequential(nn.Conv2d(3, width, 3, 2, 1, bias=False), nn.BatchNorm2d(width),
                                    nn.ReLU(inplace=True))
        self.layer2 = nn.Sequential(nn.Conv2d(width, width * 2, 3, 2, 1, bias=False),
                                    nn.BatchNorm2d(width * 2), nn.ReLU(inplace=True))
        self.layer3 = nn.Sequential(nn.Conv2d(width * 2, width * 2, 3, 1, 2, dilation=2, bias=False),
                                    nn.BatchNorm2d(width * 2), nn.ReLU(inplace=True))

    def forward(self, x):
        out = OrderedDict()
        x = self.layer1(x)
        x = self.layer2(x)
        out["aux"] = x
        out["out"] = self.layer3(x)
        return out


class DeepLabV3(nn.Module):
    def __init__(self, backbone, classifier, aux_classifier=None):
        super().__init__()
        self.backbone = backbone
        self.classifier = classifier
        self.aux_classifier = aux_classifier

    def forward(self, x):
        input_shape = x.shape[-2:]
        features = self.backbone(x)

        result = OrderedDict()
        x = features["out"]
        x = self.classifier(x)
        x = F.interpolate(x, size=input_shape, mode="bilinear", align_corners=False)
        result["out"] = x

        if self.aux_classifier is not None:
            x = features["aux"]
            x = self.aux_classifier(x)
            x = F.interpolate(x, size=input_shape, mode="bilinear", align_corners=False)
            result["aux"] = x

        return result


# ------------------------------------------------------------- semseg model/pspnet.py
class PPM(nn.Module):
    def __init__(self, in_dim, reduction_dim, bins):
        super(PPM, self).__init__()
        self.features = []
        for bin in bins:
            self.features.append(nn.Sequential(
                nn.AdaptiveAvgPool2d(bin),
                nn.Conv2d(in_dim, reduction_dim, kernel_size=1, bias=False),
                nn.BatchNorm2d(reduction_dim),
                nn.ReLU(inplace=True)
            ))
        self.features = nn.ModuleList(self.features)

    def forward(self, x):
        x_size = x.size()
        out = [x]
        for f in self.features:
            out.append(F.interpolate(f(x), x_size[2:], mode='bilinear', align_corners=True))
        return torch.cat(out, 1)


class PSPNet(nn.Module):
    def __init__(self, bins=(1, 2, 3, 6), dropout=0.1, classes=2, zoom_factor=4,
                 criterion=nn.CrossEntropyLoss(ignore_index=255), width=16):
        super(PSPNet, self).__init__()
        assert 2048 % len(bins) == 0
        assert classes > 1
        assert zoom_factor in [1, 2, 4, 8]
        self.zoom_factor = zoom_factor
        self.criterion = criterion
        self.layer0 = nn.Sequential(nn.Conv2d(3, width, 3, 2, 1, bias=False), nn.BatchNorm2d(width),
                                    nn.ReLU(inplace=True), nn.Conv2d(width, width * 2, 3, 2, 1, bias=False),
                                    nn.BatchNorm2d(width * 2), nn.ReLU(inplace=True))
        fea_dim = width * 2
        self.ppm = PPM(fea_dim, int(fea_dim / len(bins)), bins)
        fea_dim *= 2
        self.cls = nn.Sequential(
            nn.Conv2d(fea_dim, 32, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(32),
            nn.ReLU(inplace=True),
            nn.Dropout2d(p=dropout),
            nn.Conv2d(32, classes, kernel_size=1)
        )

    def forward(self, x, y=None):
        x_size = x.size()
        h = int((x_size[2] - 1) / 8 * self.zoom_factor * 2 + 1)
        w = int((x_size[3] - 1) / 8 * self.zoom_factor * 2 + 1)

        x = self.layer0(x)
        x = self.ppm(x)
        x = self.cls(x)
        if self.zoom_factor != 1:
            x = F.interpolate(x, size=(h, w), mode='bilinear', align_corners=True)

        if self.training:
            main_loss = self.criterion(x, y)
            return x.max(1)[1], main_loss
        else:
            return x


# ------------------------------------------------------------- metrics
def intersectionAndUnion(output, target, K, ignore_index=255):
    # 'K' classes, output and target sizes are N or N * L or N * H * W, each value in range 0 to K - 1.
    assert (output.dim() in [1, 2, 3])
    assert output.shape == target.shape
    output = output.view(-1)
    target = target.view(-1)
    output[target == ignore_index] = ignore_index
    intersection = output[output == target]
    area_intersection = torch.histc(intersection, bins=K, min=0, max=K - 1)
    area_output = torch.histc(output, bins=K, min=0, max=K - 1)
    area_target = torch.histc(target, bins=K, min=0, max=K - 1)
    area_union = area_output + area_target - area_intersection
    return area_intersection, area_union, area_target


class ConfusionMatrix:
    """references/segmentation/utils.py"""

    def __init__(self, num_classes):
        self.num_classes = num_classes
        self.mat = None

    def update(self, a, b):
        n = self.num_classes
        if self.mat is None:
            self.mat = torch.zeros((n, n), dtype=torch.int64, device=a.device)
        with torch.inference_mode():
            k = (a >= 0) & (a < n)
            inds = n * a[k].to(torch.int64) + b[k]
            self.mat += torch.bincount(inds, minlength=n**2).reshape(n, n)

    def compute(self):
        h = self.mat.float()
        acc_global = torch.diag(h).sum() / h.sum()
        acc = torch.diag(h) / h.sum(1)
        iu = torch.diag(h) / (h.sum(1) + h.sum(0) - torch.diag(h))
        return acc_global, acc, iu

    def __str__(self):
        acc_global, acc, iu = self.compute()
        return ("global correct: {:.1f}\naverage row correct: {}\nIoU: {}\nmean IoU: {:.1f}").format(
            acc_global.item() * 100,
            [f"{i:.1f}" for i in (acc * 100).tolist()],
            [f"{i:.1f}" for i in (iu * 100).tolist()],
            iu.mean().item() * 100,
        )


def criterion(inputs, target):
    losses = {}
    for name, x in inputs.items():
        losses[name] = nn.functional.cross_entropy(x, target, ignore_index=255)

    if len(losses) == 1:
        return losses["out"]

    return losses["out"] + 0.5 * losses["aux"]


def make_data(n, size, num_classes, g):
    """Backgrounds with a square (class 1) and a disc (class 2); a 1-pixel 255 border
    around every object, as VOC marks its boundaries."""
    yy, xx = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
    images = torch.randn(n, 3, size, size, generator=g) * 0.2
    masks = torch.zeros(n, size, size, dtype=torch.long)
    for i in range(n):
        cy, cx = torch.randint(6, size - 6, (2,), generator=g).tolist()
        sq = ((yy - cy).abs() <= 4) & ((xx - cx).abs() <= 4)
        dy, dx = torch.randint(5, size - 5, (2,), generator=g).tolist()
        disc = (yy - dy) ** 2 + (xx - dx) ** 2 <= 16
        border = (((yy - cy).abs() == 5) & ((xx - cx).abs() <= 5)) | \
                 (((xx - cx).abs() == 5) & ((yy - cy).abs() <= 5))
        masks[i][sq] = 1
        masks[i][disc] = 2
        masks[i][border & ~sq & ~disc] = 255
        images[i, 0][sq] += 1.0
        images[i, 1][disc] += 1.0
    return images, masks


def main():
    parser = argparse.ArgumentParser(description="DeepLabV3 / PSPNet on shapes")
    parser.add_argument("--size", type=int, default=25)
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--batch-size", type=int, default=8)
    args = parser.parse_args()
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    num_classes = 3

    images, masks = make_data(32, args.size, num_classes, g)
    print("images", images.shape, "masks", masks.shape, masks.dtype,
          "labels", torch.unique(masks).tolist(), "ignored", int((masks == 255).sum()))

    aspp = ASPP(8, [2, 4], 8)
    print(aspp)
    x = torch.randn(2, 8, 9, 9)
    print("aspp out", aspp.eval()(x).shape)
    pool = ASPPPooling(8, 4).eval()
    print("pooling branch", pool(x).shape, pool(x).is_contiguous(), pool(x)[0, 0, :2, :2])
    print("interpolate", F.interpolate(torch.arange(6.).view(1, 1, 2, 3), size=(3, 5), mode="bilinear",
                                       align_corners=True))
    print("interpolate", F.interpolate(torch.arange(6.).view(1, 1, 2, 3), scale_factor=1.5,
                                       mode="bilinear", align_corners=False))

    models = {
        "deeplabv3": DeepLabV3(Backbone(), DeepLabHead(32, num_classes, (2, 4, 6), 16),
                               nn.Sequential(nn.Conv2d(32, 16, 3, padding=1, bias=False),
                                             nn.BatchNorm2d(16), nn.ReLU(), nn.Dropout(0.1),
                                             nn.Conv2d(16, num_classes, 1))),
        "pspnet": PSPNet(classes=num_classes),
    }
    print(models["pspnet"])
    print("ppm out", models["pspnet"].ppm(torch.randn(2, 32, 9, 9)).shape)

    iters_per_epoch = len(images) // args.batch_size
    for name, model in models.items():
        params_to_optimize = [
            {"params": [p for p in model.parameters() if p.requires_grad]},
        ]
        optimizer = torch.optim.SGD(params_to_optimize, lr=args.lr, momentum=0.9, weight_decay=1e-4)
        iters = iters_per_epoch * args.epochs
        lr_scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda x: (1 - x / iters) ** 0.9)
        for epoch in range(args.epochs):
            model.train()
            total = 0.0
            for i in range(iters_per_epoch):
                image = images[i * args.batch_size:(i + 1) * args.batch_size]
                target = masks[i * args.batch_size:(i + 1) * args.batch_size]
                if name == "deeplabv3":
                    output = model(image)
                    loss = criterion(output, target)
                else:
                    _, loss = model(image, target)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                lr_scheduler.step()
                total += loss.item()
            print(f"{name} epoch {epoch} loss {total / iters_per_epoch:.4f} "
                  f"lr {optimizer.param_groups[0]['lr']:.6f}")

        model.eval()
        confmat = ConfusionMatrix(num_classes)
        with torch.no_grad():
            output = model(images)
            if isinstance(output, dict):
                output = output["out"]
            pred = output.argmax(1)
            confmat.update(masks.flatten(), pred.flatten())
            inter, union, tgt = intersectionAndUnion(pred.clone().float(), masks.float(), num_classes)
        print(name, "output", output.shape, "pred", pred.dtype)
        print(confmat)
        print(name, "histc IoU", (inter / (union + 1e-10)).tolist(), "mIoU",
              f"{(inter / (union + 1e-10)).mean().item():.4f}", "target areas", tgt.tolist())


if __name__ == "__main__":
    main()
