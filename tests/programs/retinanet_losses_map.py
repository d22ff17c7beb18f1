"""RetinaNet's training targets and COCO-style evaluation as torchvision's detection code
writes them, without torch.ops: AnchorGenerator's grid anchors (torch.meshgrid with
indexing="ij", base anchors from scales x aspect ratios), BoxCoder.encode/decode with
weights and the bbox_xform_clip clamp, Matcher with BELOW_LOW_THRESHOLD/BETWEEN_THRESHOLDS
and allow_low_quality_matches (torch.where over the max of each gt), sigmoid_focal_loss,
l1 box regression over foreground anchors, a tiny conv head trained on seeded boxes,
postprocess with topk_candidates and batched_nms by the coordinate-offset trick, and a
VOC/COCO-style AP (sort by score, cumsum tp/fp, precision envelope by torch.flip +
cummax, 101-point interpolation with searchsorted)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


# -- torchvision.ops.boxes ------------------------------------------------------------

def box_area(boxes):
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def box_iou(boxes1, boxes2):
    area1 = box_area(boxes1)
    area2 = box_area(boxes2)
    lt = torch.max(boxes1[:, None, :2], boxes2[:, :2])
    rb = torch.min(boxes1[:, None, 2:], boxes2[:, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[:, :, 0] * wh[:, :, 1]
    return inter / (area1[:, None] + area2 - inter)


def nms(boxes, scores, iou_threshold):
    order = scores.argsort(descending=True)
    keep = []
    suppressed = torch.zeros(boxes.size(0), dtype=torch.bool)
    for i in order.tolist():
        if suppressed[i]:
            continue
        keep.append(i)
        ious = box_iou(boxes[i].unsqueeze(0), boxes).squeeze(0)
        suppressed |= ious > iou_threshold
    return torch.tensor(keep, dtype=torch.int64)


def batched_nms(boxes, scores, idxs, iou_threshold):
    # torchvision's _batched_nms_coordinate_trick
    if boxes.numel() == 0:
        return torch.empty((0,), dtype=torch.int64, device=boxes.device)
    max_coordinate = boxes.max()
    offsets = idxs.to(boxes) * (max_coordinate + torch.tensor(1).to(boxes))
    boxes_for_nms = boxes + offsets[:, None]
    return nms(boxes_for_nms, scores, iou_threshold)


def sigmoid_focal_loss(inputs, targets, alpha=0.25, gamma=2.0, reduction="none"):
    p = torch.sigmoid(inputs)
    ce_loss = F.binary_cross_entropy_with_logits(inputs, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    loss = ce_loss * ((1 - p_t) ** gamma)
    if alpha >= 0:
        alpha_t = alpha * targets + (1 - alpha) * (1 - targets)
        loss = alpha_t * loss
    if reduction == "mean":
        loss = loss.mean()
    elif reduction == "sum":
        loss = loss.sum()
    return loss


# -- torchvision.models.detection ------------------------------------------------------

class AnchorGenerator(nn.Module):
    def __init__(self, sizes=((16, 24),), aspect_ratios=((0.5, 1.0, 2.0),)):
        super().__init__()
        self.cell_anchors = [self.generate_anchors(s, a) for s, a in zip(sizes, aspect_ratios)]

    def generate_anchors(self, scales, aspect_ratios, dtype=torch.float32):
        scales = torch.as_tensor(scales, dtype=dtype)
        aspect_ratios = torch.as_tensor(aspect_ratios, dtype=dtype)
        h_ratios = torch.sqrt(aspect_ratios)
        w_ratios = 1 / h_ratios
        ws = (w_ratios[:, None] * scales[None, :]).view(-1)
        hs = (h_ratios[:, None] * scales[None, :]).view(-1)
        base_anchors = torch.stack([-ws, -hs, ws, hs], dim=1) / 2
        return base_anchors.round()

    def grid_anchors(self, grid_sizes, strides):
        anchors = []
        for size, stride, base_anchors in zip(grid_sizes, strides, self.cell_anchors):
            grid_height, grid_width = size
            stride_height, stride_width = stride
            shifts_x = torch.arange(0, grid_width, dtype=torch.int32) * stride_width
            shifts_y = torch.arange(0, grid_height, dtype=torch.int32) * stride_height
            shift_y, shift_x = torch.meshgrid(shifts_y, shifts_x, indexing="ij")
            shift_x = shift_x.reshape(-1)
            shift_y = shift_y.reshape(-1)
            shifts = torch.stack((shift_x, shift_y, shift_x, shift_y), dim=1)
            anchors.append((shifts.view(-1, 1, 4) + base_anchors.view(1, -1, 4)).reshape(-1, 4))
        return anchors

    def forward(self, image_size, feature_map):
        grid_size = feature_map.shape[-2:]
        stride = [torch.empty((), dtype=torch.int64).fill_(image_size // g) for g in grid_size]
        return torch.cat(self.grid_anchors([grid_size], [stride]))


class BoxCoder:
    def __init__(self, weights=(1.0, 1.0, 1.0, 1.0), bbox_xform_clip=math.log(1000.0 / 16)):
        self.weights = weights
        self.bbox_xform_clip = bbox_xform_clip

    def encode_single(self, reference_boxes, proposals):
        wx, wy, ww, wh = self.weights
        ex_widths = proposals[:, 2] - proposals[:, 0]
        ex_heights = proposals[:, 3] - proposals[:, 1]
        ex_ctr_x = proposals[:, 0] + 0.5 * ex_widths
        ex_ctr_y = proposals[:, 1] + 0.5 * ex_heights
        gt_widths = reference_boxes[:, 2] - reference_boxes[:, 0]
        gt_heights = reference_boxes[:, 3] - reference_boxes[:, 1]
        gt_ctr_x = reference_boxes[:, 0] + 0.5 * gt_widths
        gt_ctr_y = reference_boxes[:, 1] + 0.5 * gt_heights
        targets_dx = wx * (gt_ctr_x - ex_ctr_x) / ex_widths
        targets_dy = wy * (gt_ctr_y - ex_ctr_y) / ex_heights
        targets_dw = ww * torch.log(gt_widths / ex_widths)
        targets_dh = wh * torch.log(gt_heights / ex_heights)
        return torch.stack((targets_dx, targets_dy, targets_dw, targets_dh), dim=1)

    def decode_single(self, rel_codes, boxes):
        boxes = boxes.to(rel_codes.dtype)
        widths = boxes[:, 2] - boxes[:, 0]
        heights = boxes[:, 3] - boxes[:, 1]
        ctr_x = boxes[:, 0] + 0.5 * widths
        ctr_y = boxes[:, 1] + 0.5 * heights
        wx, wy, ww, wh = self.weights
        dx = rel_codes[:, 0::4] / wx
        dy = rel_codes[:, 1::4] / wy
        dw = rel_codes[:, 2::4] / ww
        dh = rel_codes[:, 3::4] / wh
        dw = torch.clamp(dw, max=self.bbox_xform_clip)
        dh = torch.clamp(dh, max=self.bbox_xform_clip)
        pred_ctr_x = dx * widths[:, None] + ctr_x[:, None]
        pred_ctr_y = dy * heights[:, None] + ctr_y[:, None]
        pred_w = torch.exp(dw) * widths[:, None]
        pred_h = torch.exp(dh) * heights[:, None]
        c_to_c_h = torch.tensor(0.5, dtype=pred_ctr_y.dtype) * pred_h
        c_to_c_w = torch.tensor(0.5, dtype=pred_ctr_x.dtype) * pred_w
        pred_boxes1 = pred_ctr_x - c_to_c_w
        pred_boxes2 = pred_ctr_y - c_to_c_h
        pred_boxes3 = pred_ctr_x + c_to_c_w
        pred_boxes4 = pred_ctr_y + c_to_c_h
        return torch.stack((pred_boxes1, pred_boxes2, pred_boxes3, pred_boxes4), dim=2).flatten(1)


class Matcher:
    BELOW_LOW_THRESHOLD = -1
    BETWEEN_THRESHOLDS = -2

    def __init__(self, high_threshold, low_threshold, allow_low_quality_matches=False):
        self.high_threshold = high_threshold
        self.low_threshold = low_threshold
        self.allow_low_quality_matches = allow_low_quality_matches

    def __call__(self, match_quality_matrix):
        matched_vals, matches = match_quality_matrix.max(dim=0)
        all_matches = matches.clone() if self.allow_low_quality_matches else None
        below_low_threshold = matched_vals < self.low_threshold
        between_thresholds = (matched_vals >= self.low_threshold) & (
            matched_vals < self.high_threshold)
        matches[below_low_threshold] = self.BELOW_LOW_THRESHOLD
        matches[between_thresholds] = self.BETWEEN_THRESHOLDS
        if self.allow_low_quality_matches:
            self.set_low_quality_matches_(matches, all_matches, match_quality_matrix)
        return matches

    def set_low_quality_matches_(self, matches, all_matches, match_quality_matrix):
        highest_quality_foreach_gt, _ = match_quality_matrix.max(dim=1)
        gt_pred_pairs_of_highest_quality = torch.where(
            match_quality_matrix == highest_quality_foreach_gt[:, None])
        pred_inds_to_update = gt_pred_pairs_of_highest_quality[1]
        matches[pred_inds_to_update] = all_matches[pred_inds_to_update]


class RetinaHead(nn.Module):
    def __init__(self, in_channels, num_anchors, num_classes, prior_probability=0.01):
        super().__init__()
        self.cls_conv = nn.Sequential(nn.Conv2d(in_channels, in_channels, 3, padding=1),
                                      nn.GroupNorm(4, in_channels), nn.ReLU())
        self.cls_logits = nn.Conv2d(in_channels, num_anchors * num_classes, 3, padding=1)
        self.bbox_conv = nn.Sequential(nn.Conv2d(in_channels, in_channels, 3, padding=1),
                                       nn.GroupNorm(4, in_channels), nn.ReLU())
        self.bbox_reg = nn.Conv2d(in_channels, num_anchors * 4, 3, padding=1)
        for layer in self.modules():
            if isinstance(layer, nn.Conv2d):
                torch.nn.init.normal_(layer.weight, std=0.01)
                torch.nn.init.constant_(layer.bias, 0)
        torch.nn.init.constant_(self.cls_logits.bias, -math.log((1 - prior_probability)
                                                                / prior_probability))
        self.num_classes = num_classes

    def forward(self, x):
        cls = self.cls_logits(self.cls_conv(x))
        N, _, H, W = cls.shape
        cls = cls.view(N, -1, self.num_classes, H, W).permute(0, 3, 4, 1, 2)
        cls = cls.reshape(N, -1, self.num_classes)
        reg = self.bbox_reg(self.bbox_conv(x))
        reg = reg.view(N, -1, 4, H, W).permute(0, 3, 4, 1, 2).reshape(N, -1, 4)
        return cls, reg


class TinyRetinaNet(nn.Module):
    def __init__(self, num_classes=3, image_size=64):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(16, 16, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(16, 16, 3, stride=2, padding=1), nn.ReLU())
        self.anchor_generator = AnchorGenerator()
        self.head = RetinaHead(16, 6, num_classes)
        self.box_coder = BoxCoder(weights=(1.0, 1.0, 1.0, 1.0))
        self.proposal_matcher = Matcher(0.5, 0.4, allow_low_quality_matches=True)
        self.image_size = image_size

    def forward(self, images):
        feats = self.backbone(images)
        anchors = self.anchor_generator(self.image_size, feats)
        cls, reg = self.head(feats)
        return cls, reg, anchors


def compute_loss(model, targets, cls_logits, bbox_regression, anchors):
    matched_idxs = []
    for t in targets:
        if t["boxes"].numel() == 0:
            matched_idxs.append(torch.full((anchors.size(0),), -1, dtype=torch.int64))
            continue
        matched_idxs.append(model.proposal_matcher(box_iou(t["boxes"], anchors)))
    cls_losses, reg_losses = [], []
    for t, logits, reg, idxs in zip(targets, cls_logits, bbox_regression, matched_idxs):
        foreground_idxs = idxs >= 0
        num_foreground = foreground_idxs.sum()
        gt_classes_target = torch.zeros_like(logits)
        gt_classes_target[foreground_idxs, t["labels"][idxs[foreground_idxs]]] = 1.0
        valid_idxs = idxs != Matcher.BETWEEN_THRESHOLDS
        cls_losses.append(sigmoid_focal_loss(logits[valid_idxs], gt_classes_target[valid_idxs],
                                             reduction="sum") / max(1, num_foreground))
        matched_gt = t["boxes"][idxs[foreground_idxs]]
        target_regression = model.box_coder.encode_single(matched_gt,
                                                          anchors[foreground_idxs])
        reg_losses.append(F.l1_loss(reg[foreground_idxs], target_regression,
                                    reduction="sum") / max(1, num_foreground))
    return (sum(cls_losses) / len(targets), sum(reg_losses) / len(targets), matched_idxs)


@torch.no_grad()
def postprocess(model, cls_logits, bbox_regression, anchors, score_thresh=0.05,
                topk_candidates=50, nms_thresh=0.5, detections_per_img=10):
    results = []
    num_classes = cls_logits.shape[-1]
    for logits, reg in zip(cls_logits, bbox_regression):
        scores = torch.sigmoid(logits).flatten()
        keep_idxs = scores > score_thresh
        scores = scores[keep_idxs]
        topk_idxs = torch.where(keep_idxs)[0]
        num_topk = min(topk_candidates, topk_idxs.size(0))
        scores, idxs = scores.topk(num_topk)
        topk_idxs = topk_idxs[idxs]
        anchor_idxs = torch.div(topk_idxs, num_classes, rounding_mode="floor")
        labels = topk_idxs % num_classes
        boxes = model.box_coder.decode_single(reg[anchor_idxs], anchors[anchor_idxs])
        boxes = boxes.clamp(min=0, max=model.image_size)
        keep = batched_nms(boxes, scores, labels, nms_thresh)[:detections_per_img]
        results.append({"boxes": boxes[keep], "scores": scores[keep], "labels": labels[keep]})
    return results


def average_precision(dets, gts, iou_thresh=0.5):
    """VOC/COCO-style AP for one class over images: greedy matching by score."""
    scores = torch.cat([d["scores"] for d in dets])
    image_ids = torch.cat([torch.full_like(d["scores"], i, dtype=torch.long)
                           for i, d in enumerate(dets)])
    boxes = torch.cat([d["boxes"] for d in dets])
    n_gt = sum(g.size(0) for g in gts)
    if scores.numel() == 0 or n_gt == 0:
        return 0.0
    order = torch.argsort(scores, descending=True, stable=True)
    tp = torch.zeros(order.numel())
    used = [torch.zeros(g.size(0), dtype=torch.bool) for g in gts]
    for rank, k in enumerate(order.tolist()):
        img = image_ids[k].item()
        if gts[img].numel() == 0:
            continue
        iou = box_iou(boxes[k:k + 1], gts[img])[0]
        best, j = iou.max(0)
        if best >= iou_thresh and not used[img][j]:
            used[img][j] = True
            tp[rank] = 1
    fp = 1 - tp
    tp_c, fp_c = torch.cumsum(tp, 0), torch.cumsum(fp, 0)
    recall = tp_c / n_gt
    precision = tp_c / (tp_c + fp_c).clamp(min=torch.finfo(torch.float32).eps)
    # precision envelope: the max precision at any recall >= r
    envelope = torch.flip(torch.cummax(torch.flip(precision, [0]), 0).values, [0])
    rec_thrs = torch.linspace(0, 1, 101)
    inds = torch.searchsorted(recall, rec_thrs, right=False)
    q = torch.zeros(101)
    valid = inds < envelope.numel()
    q[valid] = envelope[inds[valid]]
    return q.mean().item()


def make_data(n, gen, image_size=64, num_classes=3):
    images = torch.zeros(n, 3, image_size, image_size)
    targets = []
    for i in range(n):
        k = int(torch.randint(1, 3, (1,), generator=gen))
        xy = torch.randint(0, image_size - 24, (k, 2), generator=gen).float()
        wh = torch.randint(12, 24, (k, 2), generator=gen).float()
        boxes = torch.cat([xy, xy + wh], 1)
        labels = torch.randint(0, num_classes, (k,), generator=gen)
        for b, c in zip(boxes.long().tolist(), labels.tolist()):
            images[i, c, b[1]:b[3], b[0]:b[2]] = 1.0
        targets.append({"boxes": boxes, "labels": labels})
    return images, targets


def main():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)

    # fixed-number checks first
    ag = AnchorGenerator()
    print("cell anchors", ag.cell_anchors[0])
    anchors = ag(64, torch.zeros(1, 16, 2, 2))
    print("anchors", anchors.shape, anchors[:7])
    sy, sx = torch.meshgrid(torch.arange(2), torch.arange(3), indexing="ij")
    print("meshgrid ij", sy.tolist(), sx.tolist(), sy.stride(), sx.is_contiguous())
    sx2, sy2 = torch.meshgrid(torch.arange(3), torch.arange(2), indexing="xy")
    print("meshgrid xy", sx2.tolist(), sy2.tolist())
    coder = BoxCoder(weights=(10.0, 10.0, 5.0, 5.0))
    gt = torch.tensor([[10., 12., 40., 30.], [0., 0., 8., 64.]])
    props = torch.tensor([[8., 8., 36., 36.], [2., 2., 10., 40.]])
    codes = coder.encode_single(gt, props)
    print("encode", codes)
    print("decode", coder.decode_single(codes, props))
    print("decode clip", coder.decode_single(torch.tensor([[0., 0., 10., -10.]]), props[:1]))
    iou = box_iou(gt, props)
    print("iou", iou)
    m = Matcher(0.7, 0.3, allow_low_quality_matches=True)
    q = torch.tensor([[0.1, 0.6, 0.8, 0.2, 0.6], [0.35, 0.2, 0.1, 0.9, 0.0]])
    print("matches", m(q).tolist(), Matcher(0.7, 0.3)(q).tolist())
    print("where pairs", torch.where(q == q.max(dim=1).values[:, None]))
    logits = torch.tensor([[-2.0, 0.5, 3.0], [1.0, -1.0, 0.0]])
    tgt = torch.tensor([[0.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
    print("focal none", sigmoid_focal_loss(logits, tgt))
    print("focal sum", sigmoid_focal_loss(logits, tgt, reduction="sum"),
          "mean", sigmoid_focal_loss(logits, tgt, alpha=-1, reduction="mean"))
    nb = torch.tensor([[0., 0., 10., 10.], [1., 1., 11., 11.], [0., 0., 10., 10.],
                       [20., 20., 30., 30.], [1., 0., 10., 10.]])
    ns = torch.tensor([0.9, 0.8, 0.7, 0.6, 0.9])
    nl = torch.tensor([0, 0, 1, 1, 0])
    print("nms", nms(nb, ns, 0.5).tolist(), "batched", batched_nms(nb, ns, nl, 0.5).tolist())
    print("empty batched", batched_nms(torch.zeros(0, 4), torch.zeros(0), torch.zeros(0), 0.5))
    prec = torch.tensor([1.0, 0.5, 0.67, 0.5, 0.6])
    cm = torch.cummax(torch.flip(prec, [0]), 0)
    print("cummax", cm.values, cm.indices)
    print("searchsorted", torch.searchsorted(torch.tensor([0.2, 0.4, 0.4, 0.8]),
                                             torch.tensor([0.0, 0.4, 0.5, 0.9])).tolist(),
          torch.searchsorted(torch.tensor([0.2, 0.4, 0.4, 0.8]), torch.tensor([0.4]),
                             right=True).tolist())

    model = TinyRetinaNet()
    print(model.head)
    images, targets = make_data(8, gen)
    print("images", images.shape, "boxes", [t["boxes"].shape[0] for t in targets])
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=[30], gamma=0.1)
    for step in range(40):
        cls, reg, anchors = model(images)
        cls_loss, reg_loss, matched = compute_loss(model, targets, cls, reg, anchors)
        loss = cls_loss + reg_loss
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 10.0)
        opt.step()
        sched.step()
        if step == 0:
            print("anchors", anchors.shape, "fg per image",
                  [int((mi >= 0).sum()) for mi in matched],
                  "ignored", [int((mi == -2).sum()) for mi in matched])
        if step % 5 == 0 or step == 39:
            print(f"step {step:3d} loss {loss.item():.4f} cls {cls_loss.item():.4f} "
                  f"reg {reg_loss.item():.4f} lr {sched.get_last_lr()[0]:.4f}")

    model.eval()
    cls, reg, anchors = model(images)
    dets = postprocess(model, cls, reg, anchors)
    print("detections", [d["boxes"].shape[0] for d in dets])
    aps = []
    for c in range(3):
        cd = [{k: v[d["labels"] == c] for k, v in d.items()} for d in dets]
        cg = [t["boxes"][t["labels"] == c] for t in targets]
        aps.append(average_precision(cd, cg))
    print("AP per class", [round(a, 4) for a in aps], "mAP", round(sum(aps) / len(aps), 4))

    # AP on hand-made detections (independent of training)
    gts = [torch.tensor([[0., 0., 10., 10.], [20., 20., 30., 30.]]),
           torch.tensor([[5., 5., 15., 15.]])]
    hand = [{"boxes": torch.tensor([[0., 0., 10., 9.], [21., 20., 30., 30.], [40., 40., 50., 50.]]),
             "scores": torch.tensor([0.9, 0.75, 0.8])},
            {"boxes": torch.tensor([[5., 5., 15., 16.], [5., 5., 15., 15.]]),
             "scores": torch.tensor([0.75, 0.3])}]
    print("hand AP", round(average_precision(hand, gts), 6))


if __name__ == "__main__":
    main()
