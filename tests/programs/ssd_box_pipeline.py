"""The SSD / RetinaNet box pipeline as amdegroot/ssd.pytorch's box_utils.py and
torchvision's detection code write it, without torch.ops: anchors from
torch.meshgrid(indexing='ij') over feature-map strides, point_form/center_size,
intersect/jaccard via broadcast torch.max(a[:, None, :2], b[:, :2]) and clamp(min=0),
match() with best_truth_overlap.index_fill_ and max(dim=...), encode/decode with log and
exp and variances, hard-negative mining by a double sort, torchvision's
sigmoid_focal_loss, smooth_l1_loss, and a pure-torch NMS loop with argsort(descending=True)
and boolean masks; a tiny single-level RetinaNet-style head trained on seeded boxes."""
import math
import itertools

import torch
import torch.nn as nn
import torch.nn.functional as F


def point_form(boxes):
    """ Convert prior_boxes to (xmin, ymin, xmax, ymax)
    representation for comparison to point form ground truth data.
    """
    return torch.cat((boxes[:, :2] - boxes[:, 2:]/2,     # xmin, ymin
                     boxes[:, :2] + boxes[:, 2:]/2), 1)  # xmax, ymax


def center_size(boxes):
    """ Convert prior_boxes to (cx, cy, w, h)
    representation for comparison to center-size form ground truth data.
    """
    return torch.cat(((boxes[:, 2:] + boxes[:, :2])/2,  # cx, cy
                      boxes[:, 2:] - boxes[:, :2]), 1)  # w, h


def intersect(box_a, box_b):
    A = box_a.size(0)
    B = box_b.size(0)
    max_xy = torch.min(box_a[:, 2:].unsqueeze(1).expand(A, B, 2),
                       box_b[:, 2:].unsqueeze(0).expand(A, B, 2))
    min_xy = torch.max(box_a[:, :2].unsqueeze(1).expand(A, B, 2),
                       box_b[:, :2].unsqueeze(0).expand(A, B, 2))
    inter = torch.clamp((max_xy - min_xy), min=0)
    return inter[:, :, 0] * inter[:, :, 1]


def jaccard(box_a, box_b):
    inter = intersect(box_a, box_b)
    area_a = ((box_a[:, 2]-box_a[:, 0]) *
              (box_a[:, 3]-box_a[:, 1])).unsqueeze(1).expand_as(inter)  # [A,B]
    area_b = ((box_b[:, 2]-box_b[:, 0]) *
              (box_b[:, 3]-box_b[:, 1])).unsqueeze(0).expand_as(inter)  # [A,B]
    union = area_a + area_b - inter
    return inter / union  # [A,B]


def box_area(boxes):
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def box_iou(boxes1, boxes2):
    """torchvision.ops.box_iou's broadcasting form."""
    area1 = box_area(boxes1)
    area2 = box_area(boxes2)
    lt = torch.max(boxes1[:, None, :2], boxes2[:, :2])  # [N,M,2]
    rb = torch.min(boxes1[:, None, 2:], boxes2[:, 2:])  # [N,M,2]
    wh = (rb - lt).clamp(min=0)  # [N,M,2]
    inter = wh[:, :, 0] * wh[:, :, 1]  # [N,M]
    union = area1[:, None] + area2 - inter
    return inter / union


def match(threshold, truths, priors, variances, labels, loc_t, conf_t, idx):
    # jaccard index
    overlaps = jaccard(
        truths,
        point_form(priors)
    )
    # (Bipartite Matching)
    # [1,num_objects] best prior for each ground truth
    best_prior_overlap, best_prior_idx = overlaps.max(1, keepdim=True)
    # [1,num_priors] best ground truth for each prior
    best_truth_overlap, best_truth_idx = overlaps.max(0, keepdim=True)
    best_truth_idx.squeeze_(0)
    best_truth_overlap.squeeze_(0)
    best_prior_idx.squeeze_(1)
    best_prior_overlap.squeeze_(1)
    best_truth_overlap.index_fill_(0, best_prior_idx, 2)  # ensure best prior
    # TODO refactor: index  best_prior_idx with long tensor
    # ensure every gt matches with its prior of max overlap
    for j in range(best_prior_idx.size(0)):
        best_truth_idx[best_prior_idx[j]] = j
    matches = truths[best_truth_idx]          # Shape: [num_priors,4]
    conf = labels[best_truth_idx] + 1         # Shape: [num_priors]
    conf[best_truth_overlap < threshold] = 0  # label as background
    loc = encode(matches, priors, variances)
    loc_t[idx] = loc    # [num_priors,4] encoded offsets to learn
    conf_t[idx] = conf  # [num_priors] top class label for each prior


def encode(matched, priors, variances):
    # dist b/t match center and prior's center
    g_cxcy = (matched[:, :2] + matched[:, 2:])/2 - priors[:, :2]
    # encode variance
    g_cxcy /= (variances[0] * priors[:, 2:])
    # match wh / prior wh
    g_wh = (matched[:, 2:] - matched[:, :2]) / priors[:, 2:]
    g_wh = torch.log(g_wh) / variances[1]
    # return target for smooth_l1_loss
    return torch.cat([g_cxcy, g_wh], 1)  # [num_priors,4]


def decode(loc, priors, variances):
    boxes = torch.cat((
        priors[:, :2] + loc[:, :2] * variances[0] * priors[:, 2:],
        priors[:, 2:] * torch.exp(loc[:, 2:] * variances[1])), 1)
    boxes[:, :2] -= boxes[:, 2:] / 2
    boxes[:, 2:] += boxes[:, :2]
    return boxes


def log_sum_exp(x):
    x_max = x.data.max()
    return torch.log(torch.sum(torch.exp(x-x_max), 1, keepdim=True)) + x_max


def nms(boxes, scores, overlap=0.5, top_k=200):
    """A pure-torch NMS: keep the best box, drop those overlapping it, repeat."""
    keep = []
    if boxes.numel() == 0:
        return torch.empty(0, dtype=torch.long)
    order = scores.argsort(descending=True)[:top_k]
    while order.numel() > 0:
        i = order[0]
        keep.append(i.item())
        if order.numel() == 1:
            break
        ious = box_iou(boxes[i].unsqueeze(0), boxes[order[1:]]).squeeze(0)
        mask = ious <= overlap
        order = order[1:][mask]
    return torch.tensor(keep, dtype=torch.long)


def batched_nms(boxes, scores, idxs, iou_threshold):
    # torchvision's coordinate trick: offset each class's boxes so they never overlap
    if boxes.numel() == 0:
        return torch.empty((0,), dtype=torch.int64, device=boxes.device)
    max_coordinate = boxes.max()
    offsets = idxs.to(boxes) * (max_coordinate + torch.tensor(1).to(boxes))
    boxes_for_nms = boxes + offsets[:, None]
    return nms(boxes_for_nms, scores, iou_threshold)


def sigmoid_focal_loss(inputs, targets, alpha: float = 0.25, gamma: float = 2,
                       reduction: str = "none"):
    p = torch.sigmoid(inputs)
    ce_loss = F.binary_cross_entropy_with_logits(inputs, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    loss = ce_loss * ((1 - p_t) ** gamma)

    if alpha >= 0:
        alpha_t = alpha * targets + (1 - alpha) * (1 - targets)
        loss = alpha_t * loss

    # Check reduction option and return loss accordingly
    if reduction == "none":
        pass
    elif reduction == "mean":
        loss = loss.mean()
    elif reduction == "sum":
        loss = loss.sum()
    else:
        raise ValueError(
            f"Invalid Value for arg 'reduction': '{reduction} \n Supported reduction modes: 'none', 'mean', 'sum'"
        )
    return loss


class PriorBox(object):
    """Compute priorbox coordinates in center-offset form for each source feature map."""
    def __init__(self, image_size=32, feature_maps=(4, 2), steps=(8, 16), min_sizes=(8, 16),
                 max_sizes=(16, 28), aspect_ratios=((2,), (2,)), clip=True):
        self.image_size = image_size
        self.feature_maps = feature_maps
        self.steps = steps
        self.min_sizes = min_sizes
        self.max_sizes = max_sizes
        self.aspect_ratios = aspect_ratios
        self.clip = clip

    def forward(self):
        mean = []
        for k, f in enumerate(self.feature_maps):
            for i, j in itertools.product(range(f), repeat=2):
                f_k = self.image_size / self.steps[k]
                # unit center x,y
                cx = (j + 0.5) / f_k
                cy = (i + 0.5) / f_k

                # aspect_ratio: 1
                # rel size: min_size
                s_k = self.min_sizes[k]/self.image_size
                mean += [cx, cy, s_k, s_k]

                # aspect_ratio: 1
                # rel size: sqrt(s_k * s_(k+1))
                s_k_prime = math.sqrt(s_k * (self.max_sizes[k]/self.image_size))
                mean += [cx, cy, s_k_prime, s_k_prime]

                # rest of aspect ratios
                for ar in self.aspect_ratios[k]:
                    mean += [cx, cy, s_k*math.sqrt(ar), s_k/math.sqrt(ar)]
                    mean += [cx, cy, s_k/math.sqrt(ar), s_k*math.sqrt(ar)]
        # back to torch land
        output = torch.Tensor(mean).view(-1, 4)
        if self.clip:
            output.clamp_(max=1, min=0)
        return output


def grid_anchors(grid_size, stride, cell_anchors):
    """torchvision AnchorGenerator.grid_anchors for one level."""
    grid_height, grid_width = grid_size
    shifts_x = torch.arange(0, grid_width, dtype=torch.int32) * stride
    shifts_y = torch.arange(0, grid_height, dtype=torch.int32) * stride
    shift_y, shift_x = torch.meshgrid(shifts_y, shifts_x, indexing="ij")
    shift_x = shift_x.reshape(-1)
    shift_y = shift_y.reshape(-1)
    shifts = torch.stack((shift_x, shift_y, shift_x, shift_y), dim=1)
    return (shifts.view(-1, 1, 4) + cell_anchors.view(1, -1, 4)).reshape(-1, 4)


def generate_anchors(scales, aspect_ratios, dtype=torch.float32):
    scales = torch.as_tensor(scales, dtype=dtype)
    aspect_ratios = torch.as_tensor(aspect_ratios, dtype=dtype)
    h_ratios = torch.sqrt(aspect_ratios)
    w_ratios = 1 / h_ratios

    ws = (w_ratios[:, None] * scales[None, :]).view(-1)
    hs = (h_ratios[:, None] * scales[None, :]).view(-1)

    base_anchors = torch.stack([-ws, -hs, ws, hs], dim=1) / 2
    return base_anchors.round()


class TinySSD(nn.Module):
    def __init__(self, num_classes=2, num_anchors=4):
        super().__init__()
        self.num_classes = num_classes
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(2),
            nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(2),
        )
        self.extra = nn.Sequential(nn.Conv2d(32, 32, 3, stride=2, padding=1), nn.ReLU(inplace=True))
        self.loc = nn.ModuleList([nn.Conv2d(32, num_anchors * 4, 3, padding=1) for _ in range(2)])
        self.conf = nn.ModuleList([nn.Conv2d(32, num_anchors * num_classes, 3, padding=1)
                                   for _ in range(2)])
        prior = -math.log((1 - 0.01) / 0.01)
        for c in self.conf:
            torch.nn.init.normal_(c.weight, std=0.01)
            torch.nn.init.constant_(c.bias, prior)

    def forward(self, x):
        sources = [self.backbone(x)]
        sources.append(self.extra(sources[0]))
        loc, conf = [], []
        for (x, l, c) in zip(sources, self.loc, self.conf):
            loc.append(l(x).permute(0, 2, 3, 1).contiguous())
            conf.append(c(x).permute(0, 2, 3, 1).contiguous())
        loc = torch.cat([o.view(o.size(0), -1) for o in loc], 1)
        conf = torch.cat([o.view(o.size(0), -1) for o in conf], 1)
        return loc.view(loc.size(0), -1, 4), conf.view(conf.size(0), -1, self.num_classes)


def make_images(n=16, size=32):
    g = torch.Generator().manual_seed(3)
    imgs = torch.rand(n, 3, size, size, generator=g) * 0.1
    targets = []
    for i in range(n):
        boxes, labels = [], []
        for k in range(1 + i % 2):
            w, h = torch.randint(8, 16, (2,), generator=g).tolist()
            x0 = torch.randint(0, size - w, (1,), generator=g).item()
            y0 = torch.randint(0, size - h, (1,), generator=g).item()
            cls = (i + k) % 2
            imgs[i, cls, y0:y0 + h, x0:x0 + w] = 1.0
            boxes.append([x0 / size, y0 / size, (x0 + w) / size, (y0 + h) / size])
            labels.append(cls)
        targets.append(torch.cat([torch.tensor(boxes), torch.tensor(labels, dtype=torch.float32)[:, None]], 1))
    return imgs, targets


def main():
    torch.manual_seed(0)
    a = torch.tensor([[0., 0., 10., 10.], [5., 5., 15., 15.], [20., 20., 30., 30.]])
    b = torch.tensor([[0., 0., 10., 10.], [10., 10., 20., 20.]])
    print("box_iou", box_iou(a, b))
    print("jaccard agrees", torch.allclose(jaccard(a, b), box_iou(a, b)))
    print("center_size", center_size(a), point_form(center_size(a)).equal(a))

    base = generate_anchors((8, 16), (0.5, 1.0, 2.0))
    print("cell anchors", base.shape, base)
    anchors = grid_anchors((2, 3), 8, base)
    print("grid anchors", anchors.shape, anchors.dtype, anchors[:3].tolist(), anchors[-1].tolist())
    ys, xs = torch.meshgrid(torch.arange(2), torch.arange(3), indexing="ij")
    print("meshgrid ij", ys.tolist(), xs.tolist(), ys.stride(), xs.is_contiguous())
    yx, xx = torch.meshgrid(torch.arange(2), torch.arange(3), indexing="xy")
    print("meshgrid xy", yx.shape, yx.tolist())

    priors = PriorBox().forward()
    print("priors", priors.shape, priors[:2])
    variances = [0.1, 0.2]
    loc = encode(point_form(priors), priors, variances)
    print("encode self", loc.abs().max().item() < 1e-5)
    print("decode roundtrip", torch.allclose(decode(torch.zeros_like(priors), priors, variances),
                                             point_form(priors), atol=1e-6))
    ov = torch.tensor([0.3, 0.2, 0.9, 0.1])
    ov.index_fill_(0, torch.tensor([1, 3]), 2)
    print("index_fill_", ov)
    st = torch.zeros(3, 4).scatter_(1, torch.tensor([[0], [2], [1]]), 1.0)
    print("scatter_ one-hot", st)

    logits = torch.tensor([[2.0, -1.0], [-3.0, 0.5], [0.0, 0.0]])
    onehot = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    print("focal none", sigmoid_focal_loss(logits, onehot))
    print("focal sum", sigmoid_focal_loss(logits, onehot, reduction="sum"))
    try:
        sigmoid_focal_loss(logits, onehot, reduction="avg")
    except ValueError as e:
        print("ValueError", str(e).splitlines()[0])

    boxes = torch.tensor([[0., 0., 10., 10.], [1., 1., 11., 11.], [20., 20., 30., 30.],
                          [21., 21., 29., 29.], [0., 0., 9., 9.]])
    scores = torch.tensor([0.9, 0.8, 0.7, 0.95, 0.3])
    print("nms keep", nms(boxes, scores, 0.5).tolist())
    print("batched_nms keep", batched_nms(boxes, scores, torch.tensor([0, 1, 0, 0, 1]), 0.5).tolist())
    print("argsort", scores.argsort(descending=True), scores.sort(0, descending=True))

    imgs, targets = make_images()
    print("targets", [t.shape for t in targets[:3]], targets[0])

    net = TinySSD()
    print(net)
    num_priors = priors.size(0)
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    neg_pos = 3
    for it in range(25):
        idx = torch.randperm(len(imgs))[:8]
        loc_data, conf_data = net(imgs[idx])
        num = loc_data.size(0)
        loc_t = torch.Tensor(num, num_priors, 4)
        conf_t = torch.LongTensor(num, num_priors)
        for j, k in enumerate(idx.tolist()):
            truths = targets[k][:, :-1].data
            labels = targets[k][:, -1].data
            match(0.5, truths, priors.data, variances, labels, loc_t, conf_t, j)
        pos = conf_t > 0
        num_pos = pos.sum(dim=1, keepdim=True)
        # Localization Loss (Smooth L1)
        pos_idx = pos.unsqueeze(pos.dim()).expand_as(loc_data)
        loc_p = loc_data[pos_idx].view(-1, 4)
        loc_tt = loc_t[pos_idx].view(-1, 4)
        loss_l = F.smooth_l1_loss(loc_p, loc_tt, reduction='sum')
        # sigmoid focal classification over all priors (RetinaNet style): one-hot targets
        gt = torch.zeros_like(conf_data)
        gt[pos] = F.one_hot(conf_t[pos] - 1, num_classes=2).to(gt.dtype)
        loss_c = sigmoid_focal_loss(conf_data, gt, reduction="sum")
        # hard negative mining on the background score, SSD style (for the report)
        batch_conf = conf_data.detach().view(-1, 2)
        loss_m = log_sum_exp(batch_conf) - batch_conf.max(1, keepdim=True)[0]
        loss_m = loss_m.view(num, -1)
        loss_m[pos] = 0
        _, loss_idx = loss_m.sort(1, descending=True)
        _, idx_rank = loss_idx.sort(1)
        num_neg = torch.clamp(neg_pos*num_pos, max=pos.size(1)-1)
        neg = idx_rank < num_neg.expand_as(idx_rank)
        N = num_pos.data.sum().clamp(min=1)
        loss = (loss_l + loss_c) / N
        opt.zero_grad()
        loss.backward()
        opt.step()
        if it % 4 == 0 or it == 24:
            print(f"iter {it:2d} loss {loss.item():.4f} (loc {loss_l.item() / N.item():.4f} "
                  f"cls {loss_c.item() / N.item():.4f}) pos {int(N)} neg {int(neg.sum())}")

    net.eval()
    with torch.no_grad():
        loc_data, conf_data = net(imgs[:4])
    for i in range(4):
        decoded = decode(loc_data[i], priors, variances)
        scores_i = conf_data[i].sigmoid()
        best, cls = scores_i.max(1)
        keep_mask = best > 0.05
        kept = batched_nms(decoded[keep_mask], best[keep_mask], cls[keep_mask], 0.45)
        iou = box_iou(decoded[keep_mask][kept], targets[i][:, :4]) if kept.numel() else torch.zeros(0, 1)
        found = int((iou.max(0).values > 0.3).sum()) if kept.numel() else 0
        print(f"image {i}: {targets[i].size(0)} objects, {kept.numel()} detections, found {found}")


if __name__ == "__main__":
    main()
