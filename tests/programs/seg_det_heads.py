"""torchvision-style detection and segmentation pieces written without torch.ops: RoI
Align by F.grid_sample(align_corners=False) over grids from F.affine_grid (per-box affine
thetas), a deformable-conv-style sampling of offsets predicted by a conv, a small
FCN/DeepLab-like segmentation head trained with Dice + Lovasz-Softmax + CE losses, targets
made by F.one_hot(...).permute(0, 3, 1, 2), and mIoU by torch.bincount confusion matrix."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(1)


# --- RoI Align with affine_grid + grid_sample ------------------------------------------
def roi_align_affine(features, boxes, output_size, spatial_scale=1.0):
    """boxes: Tensor[K, 5] (batch_idx, x1, y1, x2, y2) in image coordinates."""
    N, C, H, W = features.shape
    idx = boxes[:, 0].long()
    x1, y1, x2, y2 = (boxes[:, 1:] * spatial_scale).unbind(1)
    theta = torch.zeros(boxes.shape[0], 2, 3, dtype=features.dtype)
    theta[:, 0, 0] = (x2 - x1) / W
    theta[:, 0, 2] = (x1 + x2) / W - 1
    theta[:, 1, 1] = (y2 - y1) / H
    theta[:, 1, 2] = (y1 + y2) / H - 1
    grid = F.affine_grid(theta, (boxes.shape[0], C) + tuple(output_size), align_corners=False)
    return F.grid_sample(features[idx], grid, mode="bilinear", padding_mode="zeros",
                         align_corners=False)


feats = torch.arange(2 * 3 * 8 * 8, dtype=torch.float32).view(2, 3, 8, 8) / 100
boxes = torch.tensor([[0, 0., 0., 8., 8.], [1, 2., 2., 6., 6.], [0, 1., 3., 5., 7.]])
rois = roi_align_affine(feats, boxes, (2, 2))
print("roi shape", tuple(rois.shape), rois.stride())
print("roi", rois[1, 0])
theta = torch.tensor([[[1., 0., 0.], [0., 1., 0.]]])
g = F.affine_grid(theta, (1, 1, 2, 3), align_corners=False)
print("identity grid", g.shape, g)
g_ac = F.affine_grid(theta, (1, 1, 2, 3), align_corners=True)
print("identity grid align_corners", g_ac)
print("grid_sample identity", torch.allclose(F.grid_sample(feats, F.affine_grid(
    torch.eye(2, 3).expand(2, 2, 3), feats.shape, align_corners=False), align_corners=False),
    feats, atol=1e-6))
print("nearest border", F.grid_sample(feats[:1, :1], torch.tensor([[[[-1.2, 0.3], [0.9, 1.5]]]]),
                                      mode="nearest", padding_mode="border", align_corners=False))
print("bilinear reflection", F.grid_sample(feats[:1, :1], torch.tensor([[[[-1.2, 0.3], [0.9, 1.5]]]]),
                                           padding_mode="reflection", align_corners=True))
print("bicubic", F.grid_sample(feats[:1, :1], torch.tensor([[[[-0.4, 0.3], [0.2, -0.5]]]]),
                               mode="bicubic", align_corners=False))
theta3 = torch.tensor([[[1., 0., 0., 0.1], [0., 1., 0., 0.], [0., 0., 1., 0.]]])
g3 = F.affine_grid(theta3, (1, 1, 2, 2, 2), align_corners=False)
print("3d grid", g3.shape, g3[0, 0, 0])
try:
    F.affine_grid(torch.zeros(1, 3, 3), (1, 1, 4, 4), align_corners=False)
except ValueError as e:
    print("ValueError:", e)


# --- deformable sampling: offsets from a conv, applied by grid_sample ------------------
class DeformSample(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.offset = nn.Conv2d(channels, 2, 3, padding=1)
        nn.init.zeros_(self.offset.weight)
        nn.init.zeros_(self.offset.bias)
        self.proj = nn.Conv2d(channels, channels, 1)

    def forward(self, x):
        N, C, H, W = x.shape
        off = self.offset(x).permute(0, 2, 3, 1)  # N, H, W, 2 in pixels
        ys, xs = torch.meshgrid(torch.arange(H, dtype=x.dtype), torch.arange(W, dtype=x.dtype),
                                indexing="ij")
        base = torch.stack((xs, ys), dim=-1).unsqueeze(0)  # N, H, W, 2 (x, y)
        pos = base + off
        norm = torch.tensor([W - 1, H - 1], dtype=x.dtype)
        grid = pos / norm * 2 - 1
        return self.proj(F.grid_sample(x, grid, align_corners=True))


# --- losses ---------------------------------------------------------------------------
def dice_loss(logits, target, num_classes, eps=1e-6):
    probs = logits.softmax(dim=1)
    onehot = F.one_hot(target, num_classes).permute(0, 3, 1, 2).float()
    dims = (0, 2, 3)
    inter = torch.sum(probs * onehot, dims)
    card = torch.sum(probs + onehot, dims)
    dice = (2. * inter + eps) / (card + eps)
    return 1 - dice.mean()


def lovasz_grad(gt_sorted):
    p = len(gt_sorted)
    gts = gt_sorted.sum()
    intersection = gts - gt_sorted.float().cumsum(0)
    union = gts + (1 - gt_sorted).float().cumsum(0)
    jaccard = 1. - intersection / union
    if p > 1:
        jaccard[1:p] = jaccard[1:p] - jaccard[0:-1]
    return jaccard


def lovasz_softmax_flat(probas, labels, classes='present'):
    if probas.numel() == 0:
        return probas * 0.
    C = probas.size(1)
    losses = []
    class_to_sum = list(range(C)) if classes in ['all', 'present'] else classes
    for c in class_to_sum:
        fg = (labels == c).float()
        if classes == 'present' and fg.sum() == 0:
            continue
        class_pred = probas[:, c]
        errors = (fg - class_pred).abs()
        errors_sorted, perm = torch.sort(errors, 0, descending=True)
        perm = perm.data
        fg_sorted = fg[perm]
        losses.append(torch.dot(errors_sorted, lovasz_grad(fg_sorted)))
    return torch.stack(losses).mean()


def flatten_probas(probas, labels, ignore=None):
    B, C, H, W = probas.size()
    probas = probas.permute(0, 2, 3, 1).contiguous().view(-1, C)
    labels = labels.view(-1)
    if ignore is None:
        return probas, labels
    valid = (labels != ignore)
    vprobas = probas[valid.nonzero().squeeze()]
    vlabels = labels[valid]
    return vprobas, vlabels


def lovasz_softmax(probas, labels, ignore=None):
    return lovasz_softmax_flat(*flatten_probas(probas, labels, ignore))


def confusion_matrix(pred, target, num_classes, ignore_index=255):
    k = (target >= 0) & (target < num_classes) & (target != ignore_index)
    return torch.bincount(num_classes * target[k] + pred[k],
                          minlength=num_classes ** 2).reshape(num_classes, num_classes)


def miou(hist):
    iu = torch.diag(hist) / (hist.sum(1) + hist.sum(0) - torch.diag(hist))
    return iu, torch.nanmean(iu)


# --- a small segmentation net ---------------------------------------------------------
class ASPPPooling(nn.Sequential):
    def __init__(self, in_channels, out_channels):
        super().__init__(nn.AdaptiveAvgPool2d(1), nn.Conv2d(in_channels, out_channels, 1,
                                                            bias=False),
                         nn.BatchNorm2d(out_channels), nn.ReLU())

    def forward(self, x):
        size = x.shape[-2:]
        for mod in self:
            x = mod(x)
        return F.interpolate(x, size=size, mode="bilinear", align_corners=False)


class TinySegNet(nn.Module):
    def __init__(self, num_classes=3, ch=8):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, ch, 3, 2, 1, bias=False), nn.BatchNorm2d(ch),
                                      nn.ReLU(inplace=True))
        self.deform = DeformSample(ch)
        self.aspp = nn.ModuleList([
            nn.Sequential(nn.Conv2d(ch, ch, 1, bias=False), nn.BatchNorm2d(ch), nn.ReLU()),
            nn.Sequential(nn.Conv2d(ch, ch, 3, padding=2, dilation=2, bias=False),
                          nn.BatchNorm2d(ch), nn.ReLU()),
            ASPPPooling(ch, ch)])
        self.project = nn.Sequential(nn.Conv2d(3 * ch, ch, 1, bias=False), nn.BatchNorm2d(ch),
                                     nn.ReLU(), nn.Dropout(0.1))
        self.classifier = nn.Conv2d(ch, num_classes, 1)

    def forward(self, x):
        input_shape = x.shape[-2:]
        f = self.backbone(x)
        f = f + self.deform(f)
        f = self.project(torch.cat([m(f) for m in self.aspp], dim=1))
        out = self.classifier(f)
        return F.interpolate(out, size=input_shape, mode="bilinear", align_corners=False)


images = torch.randn(4, 3, 16, 16)
yy, xx = torch.meshgrid(torch.arange(16), torch.arange(16), indexing="ij")
masks = torch.stack([((xx + k) // 6 % 3) for k in range(4)])  # stripes of 3 classes
images[:, 0] += masks.float()  # learnable: class in channel 0
masks[0, :2, :2] = 255  # an ignored corner
print("one_hot target", tuple(F.one_hot(masks.clamp(max=2), 3).permute(0, 3, 1, 2).shape),
      F.one_hot(masks.clamp(max=2), 3).permute(0, 3, 1, 2).stride(),
      F.one_hot(masks.clamp(max=2), 3).dtype)
model = TinySegNet()
print(model)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
for step in range(8):
    model.train()
    logits = model(images)
    valid = masks.clamp(max=2)
    ce = F.cross_entropy(logits, masks, ignore_index=255)
    dl = dice_loss(logits, valid, 3)
    lv = lovasz_softmax(logits.softmax(1), masks, ignore=255)
    loss = ce + dl + lv
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"seg step {step} loss {loss.item():.4f} ce {ce.item():.4f} dice {dl.item():.4f} "
          f"lovasz {lv.item():.4f}")
model.eval()
with torch.no_grad():
    pred = model(images).argmax(1)
hist = confusion_matrix(pred.flatten(), masks.flatten(), 3)
iu, m = miou(hist.float())
print("confusion", hist.sum().item(), "miou", round(m.item(), 3), iu.shape)
print("deform offset grad", model.deform.offset.weight.grad.abs().sum() > 0)
