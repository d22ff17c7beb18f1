"""A Feature Pyramid Network with RoIAlign, torchvision-free, as detection code bases that
avoid the compiled ops write it: a small ResNet-ish backbone, FPN lateral 1x1 convs and a
top-down pathway with F.interpolate(scale_factor=2, mode="nearest") (and size= for odd
shapes), 3x3 output convs and a LastLevelMaxPool (F.max_pool2d(x, 1, 2, 0)); RoIAlign by
turning boxes into affine grids (F.affine_grid, align_corners=False) and F.grid_sample, the
FPN level mapper (floor(4 + log2(sqrt(area) / 224))), box encoding/decoding, box IoU, and a
box head trained with cross entropy plus F.smooth_l1_loss(beta=1/9) under SGD with momentum
and a MultiStepLR."""
import math
from collections import OrderedDict

import torch
import torch.nn.functional as F
from torch import nn

BBOX_XFORM_CLIP = math.log(1000.0 / 16)


class FeaturePyramidNetwork(nn.Module):
    def __init__(self, in_channels_list, out_channels):
        super().__init__()
        self.inner_blocks = nn.ModuleList()
        self.layer_blocks = nn.ModuleList()
        for in_channels in in_channels_list:
            self.inner_blocks.append(nn.Conv2d(in_channels, out_channels, 1))
            self.layer_blocks.append(nn.Conv2d(out_channels, out_channels, 3, padding=1))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_uniform_(m.weight, a=1)
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        names = list(x.keys())
        x = list(x.values())
        last_inner = self.inner_blocks[-1](x[-1])
        results = [self.layer_blocks[-1](last_inner)]
        for idx in range(len(x) - 2, -1, -1):
            inner_lateral = self.inner_blocks[idx](x[idx])
            feat_shape = inner_lateral.shape[-2:]
            if feat_shape[0] == 2 * last_inner.shape[-2]:
                inner_top_down = F.interpolate(last_inner, scale_factor=2, mode="nearest")
            else:
                inner_top_down = F.interpolate(last_inner, size=feat_shape, mode="nearest")
            last_inner = inner_lateral + inner_top_down
            results.insert(0, self.layer_blocks[idx](last_inner))
        # LastLevelMaxPool
        names.append("pool")
        results.append(F.max_pool2d(results[-1], 1, 2, 0))
        return OrderedDict([(k, v) for k, v in zip(names, results)])


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False),
                                  nn.BatchNorm2d(8), nn.ReLU(inplace=True))
        self.layer1 = self._stage(8, 16)
        self.layer2 = self._stage(16, 32)
        self.layer3 = self._stage(32, 32)

    @staticmethod
    def _stage(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, stride=2, padding=1, bias=False),
                             nn.BatchNorm2d(cout), nn.ReLU(inplace=True))

    def forward(self, x):
        x = self.stem(x)
        c2 = self.layer1(x)
        c3 = self.layer2(c2)
        c4 = self.layer3(c3)
        return OrderedDict([("0", c2), ("1", c3), ("2", c4)])


def roi_align(feature, boxes, output_size, spatial_scale):
    """RoIAlign by grid_sample: boxes (K, 5) as (batch_index, x1, y1, x2, y2) in image
    coordinates; each box becomes an affine map of the [-1, 1] output grid."""
    N, C, H, W = feature.shape
    idx = boxes[:, 0].long()
    x1, y1, x2, y2 = (boxes[:, 1:] * spatial_scale).unbind(dim=1)
    theta = torch.zeros(boxes.shape[0], 2, 3, dtype=feature.dtype)
    theta[:, 0, 0] = (x2 - x1) / W
    theta[:, 0, 2] = (x1 + x2) / W - 1
    theta[:, 1, 1] = (y2 - y1) / H
    theta[:, 1, 2] = (y1 + y2) / H - 1
    grid = F.affine_grid(theta, (boxes.shape[0], C) + output_size, align_corners=False)
    return F.grid_sample(feature[idx], grid, mode="bilinear", padding_mode="zeros",
                         align_corners=False)


def map_levels(boxes, k_min=2, k_max=4, canonical_scale=224, canonical_level=4):
    s = torch.sqrt((boxes[:, 3] - boxes[:, 1]) * (boxes[:, 4] - boxes[:, 2]))
    target_lvls = torch.floor(canonical_level + torch.log2(s / canonical_scale) + 1e-6)
    target_lvls = torch.clamp(target_lvls, min=k_min, max=k_max)
    return (target_lvls.to(torch.int64) - k_min).to(torch.int64)


def multiscale_roi_align(features, boxes, output_size=(4, 4)):
    levels = map_levels(boxes, canonical_scale=32)
    feats = list(features.values())[:3]
    scales = [1 / 4, 1 / 8, 1 / 16]
    result = torch.zeros((boxes.shape[0], feats[0].shape[1]) + output_size)
    for level, (feat, scale) in enumerate(zip(feats, scales)):
        idx_in_level = torch.where(levels == level)[0]
        if idx_in_level.numel() == 0:
            continue
        rois = boxes[idx_in_level]
        result[idx_in_level] = roi_align(feat, rois, output_size, scale).to(result.dtype)
    return result


def box_iou(boxes1, boxes2):
    area1 = (boxes1[:, 2] - boxes1[:, 0]) * (boxes1[:, 3] - boxes1[:, 1])
    area2 = (boxes2[:, 2] - boxes2[:, 0]) * (boxes2[:, 3] - boxes2[:, 1])
    lt = torch.max(boxes1[:, None, :2], boxes2[:, :2])
    rb = torch.min(boxes1[:, None, 2:], boxes2[:, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[:, :, 0] * wh[:, :, 1]
    return inter / (area1[:, None] + area2 - inter)


def encode_boxes(reference, proposals, weights=(10.0, 10.0, 5.0, 5.0)):
    wx, wy, ww, wh = weights
    ex_w = proposals[:, 2] - proposals[:, 0]
    ex_h = proposals[:, 3] - proposals[:, 1]
    ex_x = proposals[:, 0] + 0.5 * ex_w
    ex_y = proposals[:, 1] + 0.5 * ex_h
    gt_w = reference[:, 2] - reference[:, 0]
    gt_h = reference[:, 3] - reference[:, 1]
    gt_x = reference[:, 0] + 0.5 * gt_w
    gt_y = reference[:, 1] + 0.5 * gt_h
    dx = wx * (gt_x - ex_x) / ex_w
    dy = wy * (gt_y - ex_y) / ex_h
    dw = ww * torch.log(gt_w / ex_w)
    dh = wh * torch.log(gt_h / ex_h)
    return torch.stack((dx, dy, dw, dh), dim=1)


def decode_boxes(codes, boxes, weights=(10.0, 10.0, 5.0, 5.0),
                 bbox_xform_clip=BBOX_XFORM_CLIP):
    widths = boxes[:, 2] - boxes[:, 0]
    heights = boxes[:, 3] - boxes[:, 1]
    ctr_x = boxes[:, 0] + 0.5 * widths
    ctr_y = boxes[:, 1] + 0.5 * heights
    wx, wy, ww, wh = weights
    dx = codes[:, 0::4] / wx
    dy = codes[:, 1::4] / wy
    dw = torch.clamp(codes[:, 2::4] / ww, max=bbox_xform_clip)
    dh = torch.clamp(codes[:, 3::4] / wh, max=bbox_xform_clip)
    pred_ctr_x = dx * widths[:, None] + ctr_x[:, None]
    pred_ctr_y = dy * heights[:, None] + ctr_y[:, None]
    pred_w = torch.exp(dw) * widths[:, None]
    pred_h = torch.exp(dh) * heights[:, None]
    c_to_c_h = torch.tensor(0.5, dtype=pred_ctr_y.dtype) * pred_h
    c_to_c_w = torch.tensor(0.5, dtype=pred_ctr_x.dtype) * pred_w
    x1 = pred_ctr_x - c_to_c_w
    y1 = pred_ctr_y - c_to_c_h
    x2 = pred_ctr_x + c_to_c_w
    y2 = pred_ctr_y + c_to_c_h
    return torch.stack((x1, y1, x2, y2), dim=2).flatten(1)


class TwoMLPHead(nn.Module):
    def __init__(self, in_channels, representation_size):
        super().__init__()
        self.fc6 = nn.Linear(in_channels, representation_size)
        self.fc7 = nn.Linear(representation_size, representation_size)

    def forward(self, x):
        x = x.flatten(start_dim=1)
        x = F.relu(self.fc6(x))
        x = F.relu(self.fc7(x))
        return x


class FastRCNNPredictor(nn.Module):
    def __init__(self, in_channels, num_classes):
        super().__init__()
        self.cls_score = nn.Linear(in_channels, num_classes)
        self.bbox_pred = nn.Linear(in_channels, num_classes * 4)

    def forward(self, x):
        x = x.flatten(start_dim=1)
        return self.cls_score(x), self.bbox_pred(x)


class Detector(nn.Module):
    def __init__(self, num_classes=3):
        super().__init__()
        self.backbone = Backbone()
        self.fpn = FeaturePyramidNetwork([16, 32, 32], 16)
        self.box_head = TwoMLPHead(16 * 4 * 4, 64)
        self.box_predictor = FastRCNNPredictor(64, num_classes)

    def forward(self, images, proposals):
        features = self.fpn(self.backbone(images))
        box_features = multiscale_roi_align(features, proposals)
        return self.box_predictor(self.box_head(box_features))


def fastrcnn_loss(class_logits, box_regression, labels, regression_targets):
    classification_loss = F.cross_entropy(class_logits, labels)
    sampled_pos_inds_subset = torch.where(labels > 0)[0]
    labels_pos = labels[sampled_pos_inds_subset]
    N, num_classes = class_logits.shape
    box_regression = box_regression.reshape(N, box_regression.size(-1) // 4, 4)
    box_loss = F.smooth_l1_loss(
        box_regression[sampled_pos_inds_subset, labels_pos],
        regression_targets[sampled_pos_inds_subset],
        beta=1 / 9,
        reduction="sum",
    )
    box_loss = box_loss / labels.numel()
    return classification_loss, box_loss


def make_scene(generator):
    """A 64x64 image with two filled squares (class 1: red, class 2: green) and proposals
    jittered around them plus background boxes."""
    image = 0.1 * torch.randn(3, 64, 64, generator=generator)
    gts, labels = [], []
    for cls in (1, 2):
        size = int(torch.randint(12, 28, (1,), generator=generator))
        x0, y0 = torch.randint(0, 64 - size, (2,), generator=generator).tolist()
        image[cls - 1, y0:y0 + size, x0:x0 + size] += 1.0
        gts.append([x0, y0, x0 + size, y0 + size])
        labels.append(cls)
    gts = torch.tensor(gts, dtype=torch.float32)
    jitter = 3.0 * torch.randn(8, 4, generator=generator)
    proposals = torch.cat([gts.repeat(4, 1) + jitter,
                           torch.tensor([[0.0, 0.0, 16.0, 16.0], [40.0, 40.0, 63.0, 63.0]])])
    x1y1 = proposals[:, :2].clamp(0, 60)
    x2y2 = torch.maximum(proposals[:, 2:], x1y1 + 4).clamp(max=64)
    proposals = torch.cat([x1y1, x2y2], dim=1)
    return image, gts, torch.tensor(labels), proposals


def match(proposals, gts, gt_labels):
    iou = box_iou(proposals, gts)
    matched_vals, matches = iou.max(dim=1)
    labels = gt_labels[matches].clone()
    labels[matched_vals < 0.5] = 0
    targets = encode_boxes(gts[matches], proposals)
    return labels, targets


def main():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(42)
    scenes = [make_scene(g) for _ in range(6)]
    images = torch.stack([s[0] for s in scenes])
    print("images", images.shape, "gts", scenes[0][1].tolist())

    x = torch.arange(6.).view(1, 1, 2, 3)
    print("nearest x2", F.interpolate(x, scale_factor=2, mode="nearest")[0, 0, :2])
    print("nearest size", F.interpolate(x, size=(3, 5), mode="nearest")[0, 0])
    print("maxpool 1 2", F.max_pool2d(torch.arange(25.).view(1, 1, 5, 5), 1, 2, 0)[0, 0])

    theta = torch.tensor([[[0.5, 0.0, 0.25], [0.0, 0.5, -0.25]]])
    grid = F.affine_grid(theta, (1, 1, 2, 2), align_corners=False)
    print("affine grid", grid)
    feat = torch.arange(16.).view(1, 1, 4, 4)
    print("grid sample", F.grid_sample(feat, grid, align_corners=False))
    print("roi_align", roi_align(feat, torch.tensor([[0.0, 0.0, 0.0, 4.0, 4.0],
                                                     [0.0, 1.0, 1.0, 3.0, 2.0]]), (2, 2), 1.0))
    props = torch.tensor([[0.0, 0.0, 10.0, 10.0], [5.0, 5.0, 20.0, 25.0]])
    ref = torch.tensor([[1.0, 2.0, 12.0, 9.0], [4.0, 6.0, 22.0, 21.0]])
    codes = encode_boxes(ref, props)
    print("encode", codes)
    print("decode round trip", torch.allclose(decode_boxes(codes, props), ref, atol=1e-4))
    print("box_iou", box_iou(props, ref))
    print("levels", map_levels(torch.tensor([[0, 0, 0, 8, 8], [0, 0, 0, 32, 32],
                                             [0, 0, 0, 64, 60.]]), canonical_scale=32))
    print("smooth_l1", F.smooth_l1_loss(torch.tensor([0.0, 0.05, 1.0]), torch.zeros(3),
                                        beta=1 / 9, reduction="none"))

    model = Detector()
    print(model)
    feats = model.fpn(model.backbone(images[:1]))
    print("fpn", [(k, tuple(v.shape)) for k, v in feats.items()])

    optimizer = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9, weight_decay=1e-4)
    lr_scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[12], gamma=0.1)
    for it in range(18):
        i = it % 3
        batch = scenes[2 * i:2 * i + 2]
        rois, labels, targets = [], [], []
        for b, (_, gts, gt_labels, proposals) in enumerate(batch):
            lab, tgt = match(proposals, gts, gt_labels)
            rois.append(torch.cat([torch.full((proposals.shape[0], 1), float(b)), proposals],
                                  dim=1))
            labels.append(lab)
            targets.append(tgt)
        rois, labels, targets = torch.cat(rois), torch.cat(labels), torch.cat(targets)
        class_logits, box_regression = model(images[2 * i:2 * i + 2], rois)
        loss_classifier, loss_box_reg = fastrcnn_loss(class_logits, box_regression, labels,
                                                      targets)
        losses = loss_classifier + loss_box_reg
        optimizer.zero_grad()
        losses.backward()
        optimizer.step()
        lr_scheduler.step()
        if it % 3 == 0 or it == 17:
            print(f"iter {it:2d} lr {optimizer.param_groups[0]['lr']:.4f} "
                  f"loss {losses.item():.4f} loss_classifier {loss_classifier.item():.4f} "
                  f"loss_box_reg {loss_box_reg.item():.4f}")

    model.eval()
    with torch.no_grad():
        logits, regs = model(images[:2], rois)
        scores = F.softmax(logits, -1)
        boxes = decode_boxes(regs, rois[:, 1:]).reshape(-1, 3, 4)
    print("eval", scores.shape, boxes.shape, "rows sum to one",
          torch.allclose(scores.sum(-1), torch.ones(len(scores))))


if __name__ == "__main__":
    main()
