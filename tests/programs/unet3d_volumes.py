"""3D U-Net for volumetric segmentation in the style of wolny/pytorch-3dunet and
MONAI's BasicUNet: double Conv3d + BatchNorm3d + ReLU blocks, MaxPool3d encoder,
ConvTranspose3d (and trilinear F.interpolate) decoder with torch.cat skip connections,
a soft Dice + cross-entropy loss on one-hot targets made with
F.one_hot(...).permute(0, 4, 1, 2, 3), and per-class Dice scores from torch.argmax."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class DoubleConv(nn.Sequential):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        mid = out_channels // 2 if out_channels > in_channels else out_channels
        self.add_module("conv1", nn.Conv3d(in_channels, mid, kernel_size=3, padding=1, bias=False))
        self.add_module("bn1", nn.BatchNorm3d(mid))
        self.add_module("relu1", nn.ReLU(inplace=True))
        self.add_module("conv2", nn.Conv3d(mid, out_channels, kernel_size=3, padding=1, bias=False))
        self.add_module("bn2", nn.BatchNorm3d(out_channels))
        self.add_module("relu2", nn.ReLU(inplace=True))


class Encoder(nn.Module):
    def __init__(self, in_channels, out_channels, apply_pooling=True):
        super().__init__()
        self.pooling = nn.MaxPool3d(kernel_size=2) if apply_pooling else None
        self.basic_module = DoubleConv(in_channels, out_channels)

    def forward(self, x):
        if self.pooling is not None:
            x = self.pooling(x)
        return self.basic_module(x)


class Decoder(nn.Module):
    def __init__(self, in_channels, out_channels, transposed=True):
        super().__init__()
        self.transposed = transposed
        if transposed:
            self.upsample = nn.ConvTranspose3d(in_channels, in_channels // 2, kernel_size=3,
                                               stride=2, padding=1, output_padding=1)
            self.basic_module = DoubleConv(in_channels // 2 + out_channels, out_channels)
        else:
            self.upsample = None
            self.basic_module = DoubleConv(in_channels + out_channels, out_channels)

    def forward(self, encoder_features, x):
        if self.transposed:
            x = self.upsample(x)
        else:
            x = F.interpolate(x, size=encoder_features.size()[2:], mode="trilinear",
                              align_corners=False)
        x = torch.cat((encoder_features, x), dim=1)
        return self.basic_module(x)


class UNet3D(nn.Module):
    def __init__(self, in_channels, out_channels, f_maps=(4, 8, 16), transposed=True):
        super().__init__()
        self.encoders = nn.ModuleList(
            [Encoder(in_channels if i == 0 else f_maps[i - 1], f, apply_pooling=i > 0)
             for i, f in enumerate(f_maps)])
        rev = list(reversed(f_maps))
        self.decoders = nn.ModuleList(
            [Decoder(rev[i], rev[i + 1], transposed) for i in range(len(rev) - 1)])
        self.final_conv = nn.Conv3d(f_maps[0], out_channels, 1)
        for m in self.modules():
            if isinstance(m, (nn.Conv3d, nn.ConvTranspose3d)):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm3d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        encoders_features = []
        for encoder in self.encoders:
            x = encoder(x)
            encoders_features.insert(0, x)
        encoders_features = encoders_features[1:]
        for decoder, encoder_features in zip(self.decoders, encoders_features):
            x = decoder(encoder_features, x)
        return self.final_conv(x)


class DiceCELoss(nn.Module):
    def __init__(self, num_classes, smooth=1e-5, lambda_dice=1.0, lambda_ce=1.0):
        super().__init__()
        self.num_classes = num_classes
        self.smooth = smooth
        self.lambda_dice = lambda_dice
        self.lambda_ce = lambda_ce
        self.ce = nn.CrossEntropyLoss()

    def forward(self, logits, target):
        probs = torch.softmax(logits, dim=1)
        onehot = F.one_hot(target, self.num_classes).permute(0, 4, 1, 2, 3).float()
        reduce_axis = [0] + list(range(2, logits.dim()))
        intersection = torch.sum(probs * onehot, dim=reduce_axis)
        denominator = torch.sum(probs, dim=reduce_axis) + torch.sum(onehot, dim=reduce_axis)
        dice = (2.0 * intersection + self.smooth) / (denominator + self.smooth)
        dice_loss = 1.0 - dice.mean()
        return self.lambda_dice * dice_loss + self.lambda_ce * self.ce(logits, target), dice


def make_volumes(n, size=16):
    """Spheres of class 1 and cubes of class 2 in noisy volumes."""
    zz, yy, xx = torch.meshgrid(torch.arange(size), torch.arange(size), torch.arange(size),
                                indexing="ij")
    vols, labels = [], []
    for _ in range(n):
        c = torch.randint(4, size - 4, (3,))
        r = 2 + torch.rand(1).item() * 2
        sphere = ((zz - c[0]) ** 2 + (yy - c[1]) ** 2 + (xx - c[2]) ** 2).float() < r * r
        o = torch.randint(1, size - 5, (3,))
        cube = torch.zeros(size, size, size, dtype=torch.bool)
        cube[o[0]:o[0] + 4, o[1]:o[1] + 4, o[2]:o[2] + 4] = True
        label = torch.zeros(size, size, size, dtype=torch.long)
        label[cube] = 2
        label[sphere] = 1
        vol = label.float() * 0.8 + 0.3 * torch.randn(size, size, size)
        vols.append(vol)
        labels.append(label)
    return torch.stack(vols).unsqueeze(1), torch.stack(labels)


def dice_per_class(pred, target, num_classes):
    scores = []
    for c in range(num_classes):
        p, t = pred == c, target == c
        inter = (p & t).sum().item()
        total = p.sum().item() + t.sum().item()
        scores.append(2.0 * inter / total if total > 0 else 1.0)
    return torch.tensor(scores)


x, y = make_volumes(4)
print("volumes", tuple(x.shape), x.dtype, "labels", tuple(y.shape), y.dtype)
print("class voxels", torch.bincount(y.flatten(), minlength=3).tolist())
onehot = F.one_hot(y, 3).permute(0, 4, 1, 2, 3)
print("one-hot", tuple(onehot.shape), onehot.dtype, onehot.is_contiguous(), onehot.stride())

model = UNet3D(1, 3)
print(model)
print("parameters", sum(p.numel() for p in model.parameters() if p.requires_grad))
with torch.no_grad():
    feats = model.encoders[0](x)
    print("encoder0", tuple(feats.shape), "pool", tuple(nn.MaxPool3d(2)(feats).shape))
    up = model.decoders[0].upsample(model.encoders[2](model.encoders[1](feats)))
    print("upsampled", tuple(up.shape))
    tri = F.interpolate(x[:1], scale_factor=0.5, mode="trilinear", align_corners=False)
    print("trilinear down", tuple(tri.shape), tri.mean().item())
    tri = F.interpolate(tri, size=(16, 16, 16), mode="trilinear", align_corners=False)
    print("trilinear up", tuple(tri.shape))
    print(tri[0, 0, 7, 7, :6])

criterion = DiceCELoss(3)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=1e-5)
scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode="min", factor=0.5,
                                                       patience=2)
model.train()
for step in range(8):
    optimizer.zero_grad()
    logits = model(x)
    loss, dice = criterion(logits, y)
    loss.backward()
    optimizer.step()
    scheduler.step(loss.item())
    scores = " ".join(f"{d:.3f}" for d in dice.tolist())
    print(f"unet step {step} loss {loss.item():.4f} dice {scores} "
          f"lr {optimizer.param_groups[0]['lr']:.4f}")

model.eval()
with torch.no_grad():
    pred = torch.argmax(model(x), dim=1)
print("pred", tuple(pred.shape), pred.dtype)
print("eval dice", " ".join(f"{d:.2f}" for d in dice_per_class(pred, y, 3).tolist()))
print("bn running mean", model.encoders[0].basic_module.bn1.running_mean[:2].shape,
      model.encoders[0].basic_module.bn1.num_batches_tracked)

interp = UNet3D(1, 3, f_maps=(4, 8), transposed=False)
out = interp(x[:2])
print("trilinear unet", tuple(out.shape))
loss, _ = criterion(out, y[:2])
loss.backward()
print("trilinear grads", all(p.grad is not None for p in interp.parameters()))

# nnU-Net-style pieces: InstanceNorm3d + LeakyReLU, deep supervision targets by
# nearest downsampling, mirroring test-time augmentation with torch.flip
block = nn.Sequential(nn.Conv3d(1, 4, 3, padding=1), nn.InstanceNorm3d(4, affine=True),
                      nn.LeakyReLU(negative_slope=1e-2, inplace=True))
print(block)
with torch.no_grad():
    h = block(x[:1])
    print("instance-normed mean/var", h.mean(dim=(2, 3, 4))[0, :2], h.var(dim=(2, 3, 4))[0, :2])
    ds = [F.interpolate(y[:1, None].float(), scale_factor=s, mode="nearest").long()
          for s in (1.0, 0.5, 0.25)]
    print("deep supervision targets", [tuple(d.shape) for d in ds], ds[2].unique())
    logits = model(x[:1])
    for axes in ((2,), (3,), (4,), (2, 3)):
        logits = logits + torch.flip(model(torch.flip(x[:1], axes)), axes)
    probs = torch.softmax(logits / 5, 1)
    print("tta probs", tuple(probs.shape), probs.sum(1).mean().item())
    pooled, idx = F.max_pool3d(x[:1], 2, return_indices=True)
    unpooled = F.max_unpool3d(pooled, idx, 2, output_size=x[:1].shape[2:])
    print("unpool", tuple(unpooled.shape), idx.dtype, (unpooled != 0).sum().item())
    up = nn.Upsample(scale_factor=2, mode="trilinear", align_corners=True)
    print(up, tuple(up(pooled).shape))
    print("avg_pool3d", F.avg_pool3d(x[:1], kernel_size=3, stride=2, padding=1,
                                     count_include_pad=False).shape)
