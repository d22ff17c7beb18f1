"""A YOLO-style detector head and loss (in the manner of ultralytics/yolov5's Detect, bbox_iou
and ComputeLoss): anchors registered as buffers, grids from torch.meshgrid(indexing="ij"),
box decoding with sigmoid/exp, CIoU/GIoU written with clamp(0), target building with
torch.where / index_put_(accumulate=True), BCEWithLogitsLoss with pos_weight, and a
torchvision-free NMS with argsort and a loop. Tiny backbone, synthetic images of bright
squares, trained a few steps; then detections are decoded and printed."""
import argparse
import math

import torch
import torch.nn as nn


def bbox_iou(box1, box2, xywh=True, GIoU=False, DIoU=False, CIoU=False, eps=1e-7):
    # Returns Intersection over Union (IoU) of box1(1,4) to box2(n,4)
    if xywh:  # transform from xywh to xyxy
        (x1, y1, w1, h1), (x2, y2, w2, h2) = box1.chunk(4, -1), box2.chunk(4, -1)
        w1_, h1_, w2_, h2_ = w1 / 2, h1 / 2, w2 / 2, h2 / 2
        b1_x1, b1_x2, b1_y1, b1_y2 = x1 - w1_, x1 + w1_, y1 - h1_, y1 + h1_
        b2_x1, b2_x2, b2_y1, b2_y2 = x2 - w2_, x2 + w2_, y2 - h2_, y2 + h2_
    else:  # x1, y1, x2, y2 = box1
        b1_x1, b1_y1, b1_x2, b1_y2 = box1.chunk(4, -1)
        b2_x1, b2_y1, b2_x2, b2_y2 = box2.chunk(4, -1)
        w1, h1 = b1_x2 - b1_x1, (b1_y2 - b1_y1).clamp(eps)
        w2, h2 = b2_x2 - b2_x1, (b2_y2 - b2_y1).clamp(eps)

    # Intersection area
    inter = (b1_x2.minimum(b2_x2) - b1_x1.maximum(b2_x1)).clamp(0) * \
            (b1_y2.minimum(b2_y2) - b1_y1.maximum(b2_y1)).clamp(0)

    # Union Area
    union = w1 * h1 + w2 * h2 - inter + eps

    # IoU
    iou = inter / union
    if CIoU or DIoU or GIoU:
        cw = b1_x2.maximum(b2_x2) - b1_x1.minimum(b2_x1)  # convex (smallest enclosing box) width
        ch = b1_y2.maximum(b2_y2) - b1_y1.minimum(b2_y1)  # convex height
        if CIoU or DIoU:  # Distance or Complete IoU https://arxiv.org/abs/1911.08287v1
            c2 = cw ** 2 + ch ** 2 + eps  # convex diagonal squared
            rho2 = ((b2_x1 + b2_x2 - b1_x1 - b1_x2) ** 2 + (b2_y1 + b2_y2 - b1_y1 - b1_y2) ** 2) / 4  # center dist ** 2
            if CIoU:  # https://github.com/Zzh-tju/DIoU-SSD-pytorch/blob/master/utils/box/box_utils.py#L47
                v = (4 / math.pi ** 2) * (torch.atan(w2 / h2) - torch.atan(w1 / h1)).pow(2)
                with torch.no_grad():
                    alpha = v / (v - iou + (1 + eps))
                return iou - (rho2 / c2 + v * alpha)  # CIoU
            return iou - rho2 / c2  # DIoU
        c_area = cw * ch + eps  # convex area
        return iou - (c_area - union) / c_area  # GIoU https://arxiv.org/pdf/1902.09630.pdf
    return iou  # IoU


def xywh2xyxy(x):
    y = x.clone() if isinstance(x, torch.Tensor) else None
    y[..., 0] = x[..., 0] - x[..., 2] / 2  # top left x
    y[..., 1] = x[..., 1] - x[..., 3] / 2  # top left y
    y[..., 2] = x[..., 0] + x[..., 2] / 2  # bottom right x
    y[..., 3] = x[..., 1] + x[..., 3] / 2  # bottom right y
    return y


def box_area(box):
    return (box[:, 2] - box[:, 0]) * (box[:, 3] - box[:, 1])


def nms(boxes, scores, iou_thres):
    """Greedy NMS, torchvision.ops.nms's semantics, written with argsort and a loop."""
    order = scores.argsort(descending=True)
    keep = []
    while order.numel() > 0:
        i = order[0]
        keep.append(i.item())
        if order.numel() == 1:
            break
        rest = order[1:]
        lt = torch.max(boxes[i, :2], boxes[rest, :2])
        rb = torch.min(boxes[i, 2:], boxes[rest, 2:])
        wh = (rb - lt).clamp(min=0)
        inter = wh[:, 0] * wh[:, 1]
        iou = inter / (box_area(boxes[i].unsqueeze(0)) + box_area(boxes[rest]) - inter)
        order = rest[iou <= iou_thres]
    return torch.tensor(keep, dtype=torch.long)


class Detect(nn.Module):
    stride = None  # strides computed during build

    def __init__(self, nc=80, anchors=(), ch=()):  # detection layer
        super().__init__()
        self.nc = nc  # number of classes
        self.no = nc + 5  # number of outputs per anchor
        self.nl = len(anchors)  # number of detection layers
        self.na = len(anchors[0]) // 2  # number of anchors
        self.grid = [torch.empty(0) for _ in range(self.nl)]  # init grid
        self.anchor_grid = [torch.empty(0) for _ in range(self.nl)]  # init anchor grid
        self.register_buffer('anchors', torch.tensor(anchors).float().view(self.nl, -1, 2))  # shape(nl,na,2)
        self.m = nn.ModuleList(nn.Conv2d(x, self.no * self.na, 1) for x in ch)  # output conv

    def forward(self, x):
        z = []  # inference output
        for i in range(self.nl):
            x[i] = self.m[i](x[i])  # conv
            bs, _, ny, nx = x[i].shape  # x(bs,255,20,20) to x(bs,3,20,20,85)
            x[i] = x[i].view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()

            if not self.training:  # inference
                if self.grid[i].shape[2:4] != x[i].shape[2:4]:
                    self.grid[i], self.anchor_grid[i] = self._make_grid(nx, ny, i)

                xy, wh, conf = x[i].sigmoid().split((2, 2, self.nc + 1), 4)
                xy = (xy * 2 + self.grid[i]) * self.stride[i]  # xy
                wh = (wh * 2) ** 2 * self.anchor_grid[i]  # wh
                y = torch.cat((xy, wh, conf), 4)
                z.append(y.view(bs, self.na * nx * ny, self.no))

        return x if self.training else (torch.cat(z, 1), x)

    def _make_grid(self, nx=20, ny=20, i=0):
        d = self.anchors[i].device
        t = self.anchors[i].dtype
        shape = 1, self.na, ny, nx, 2  # grid shape
        y, x = torch.arange(ny, device=d, dtype=t), torch.arange(nx, device=d, dtype=t)
        yv, xv = torch.meshgrid(y, x, indexing='ij')
        grid = torch.stack((xv, yv), 2).expand(shape) - 0.5  # add grid offset, i.e. y = 2.0 * x - 0.5
        anchor_grid = (self.anchors[i] * self.stride[i]).view((1, self.na, 1, 1, 2)).expand(shape)
        return grid, anchor_grid


class TinyYolo(nn.Module):
    def __init__(self, nc=2, anchors=((1, 1, 2, 2),)):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 8, 3, 2, 1), nn.BatchNorm2d(8), nn.SiLU(),
            nn.Conv2d(8, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.SiLU(),
            nn.Conv2d(16, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.SiLU())
        self.detect = Detect(nc, anchors, ch=(16,))
        self.detect.stride = torch.tensor([8.])
        self.detect.anchors /= self.detect.stride.view(-1, 1, 1)
        self._initialize_biases()

    def _initialize_biases(self, cf=None):
        m = self.detect
        for mi, s in zip(m.m, m.stride):  # from
            b = mi.bias.view(m.na, -1)  # conv.bias(255) to (3,85)
            b.data[:, 4] += math.log(8 / (640 / s) ** 2)  # obj (8 objects per 640 image)
            b.data[:, 5:5 + m.nc] += math.log(0.6 / (m.nc - 0.99999))
            mi.bias = torch.nn.Parameter(b.view(-1), requires_grad=True)

    def forward(self, x):
        return self.detect([self.backbone(x)])


class ComputeLoss:
    def __init__(self, model, hyp):
        device = next(model.parameters()).device
        self.BCEcls = nn.BCEWithLogitsLoss(pos_weight=torch.tensor([hyp['cls_pw']], device=device))
        self.BCEobj = nn.BCEWithLogitsLoss(pos_weight=torch.tensor([hyp['obj_pw']], device=device))
        self.hyp = hyp
        m = model.detect
        self.balance = [1.0]
        self.na, self.nc, self.nl = m.na, m.nc, m.nl
        self.anchors = m.anchors
        self.device = device

    def __call__(self, p, targets):  # predictions, targets
        lcls = torch.zeros(1, device=self.device)  # class loss
        lbox = torch.zeros(1, device=self.device)  # box loss
        lobj = torch.zeros(1, device=self.device)  # object loss
        tcls, tbox, indices, anchors = self.build_targets(p, targets)  # targets

        for i, pi in enumerate(p):  # layer index, layer predictions
            b, a, gj, gi = indices[i]  # image, anchor, gridy, gridx
            tobj = torch.zeros(pi.shape[:4], dtype=pi.dtype, device=self.device)  # target obj

            n = b.shape[0]  # number of targets
            if n:
                pxy, pwh, _, pcls = pi[b, a, gj, gi].split((2, 2, 1, self.nc), 1)  # target-subset of predictions

                # Regression
                pxy = pxy.sigmoid() * 2 - 0.5
                pwh = (pwh.sigmoid() * 2) ** 2 * anchors[i]
                pbox = torch.cat((pxy, pwh), 1)  # predicted box
                iou = bbox_iou(pbox, tbox[i], CIoU=True).squeeze()  # iou(prediction, target)
                lbox += (1.0 - iou).mean()  # iou loss

                # Objectness
                iou = iou.detach().clamp(0).type(tobj.dtype)
                tobj[b, a, gj, gi] = iou  # iou ratio

                # Classification
                t = torch.full_like(pcls, 0.0, device=self.device)  # targets
                t[range(n), tcls[i]] = 1.0
                lcls += self.BCEcls(pcls, t)  # BCE

            obji = self.BCEobj(pi[..., 4], tobj)
            lobj += obji * self.balance[i]  # obj loss

        lbox *= self.hyp['box']
        lobj *= self.hyp['obj']
        lcls *= self.hyp['cls']
        bs = tobj.shape[0]  # batch size

        return (lbox + lobj + lcls) * bs, torch.cat((lbox, lobj, lcls)).detach()

    def build_targets(self, p, targets):
        # Build targets for compute_loss(), input targets(image,class,x,y,w,h)
        na, nt = self.na, targets.shape[0]  # number of anchors, targets
        tcls, tbox, indices, anch = [], [], [], []
        gain = torch.ones(7, device=self.device)  # normalized to gridspace gain
        ai = torch.arange(na, device=self.device).float().view(na, 1).repeat(1, nt)  # same as .repeat_interleave(nt)
        targets = torch.cat((targets.repeat(na, 1, 1), ai[..., None]), 2)  # append anchor indices

        g = 0.5  # bias
        off = torch.tensor(
            [
                [0, 0],
                [1, 0],
                [0, 1],
                [-1, 0],
                [0, -1],  # j,k,l,m
            ],
            device=self.device).float() * g  # offsets

        for i in range(self.nl):
            anchors, shape = self.anchors[i], p[i].shape
            gain[2:6] = torch.tensor(shape)[[3, 2, 3, 2]]  # xyxy gain

            # Match targets to anchors
            t = targets * gain  # shape(3,n,7)
            if nt:
                # Matches
                r = t[..., 4:6] / anchors[:, None]  # wh ratio
                j = torch.max(r, 1 / r).max(2)[0] < self.hyp['anchor_t']  # compare
                t = t[j]  # filter

                # Offsets
                gxy = t[:, 2:4]  # grid xy
                gxi = gain[[2, 3]] - gxy  # inverse
                j, k = ((gxy % 1 < g) & (gxy > 1)).T
                l, m = ((gxi % 1 < g) & (gxi > 1)).T
                j = torch.stack((torch.ones_like(j), j, k, l, m))
                t = t.repeat((5, 1, 1))[j]
                offsets = (torch.zeros_like(gxy)[None] + off[:, None])[j]
            else:
                t = targets[0]
                offsets = 0

            # Define
            bc, gxy, gwh, a = t.chunk(4, 1)  # (image, class), grid xy, grid wh, anchors
            a, (b, c) = a.long().view(-1), bc.long().T  # anchors, image, class
            gij = (gxy - offsets).long()
            gij = gij.clamp_(0, shape[2] - 1)
            gi, gj = gij.T  # grid indices

            # Append
            indices.append((b, a, gj, gi))  # image, anchor, grid
            tbox.append(torch.cat((gxy - gij, gwh), 1))  # box
            anch.append(anchors[a])  # anchors
            tcls.append(c)  # class

        return tcls, tbox, indices, anch


def synthetic_batch(bs, img, generator):
    """Images with one bright square each (class 0) or a dim one (class 1); targets are
    (image, class, x, y, w, h) normalized to the image."""
    images = torch.rand(bs, 3, img, img, generator=generator) * 0.2
    targets = []
    for b in range(bs):
        size = int(torch.randint(6, 12, (1,), generator=generator))
        x0, y0 = (int(v) for v in torch.randint(0, img - size, (2,), generator=generator))
        cls = int(torch.randint(0, 2, (1,), generator=generator))
        images[b, :, y0:y0 + size, x0:x0 + size] = 1.0 if cls == 0 else 0.6
        targets.append([b, cls, (x0 + size / 2) / img, (y0 + size / 2) / img, size / img,
                        size / img])
    return images, torch.tensor(targets)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--img', type=int, default=32)
    parser.add_argument('--steps', type=int, default=12)
    parser.add_argument('--conf-thres', type=float, default=0.001)
    parser.add_argument('--iou-thres', type=float, default=0.45)
    opt = parser.parse_args()
    print(opt)

    torch.manual_seed(0)
    device = torch.device('cuda:0' if torch.cuda.is_available() else 'cpu')
    hyp = {'box': 0.05, 'obj': 1.0, 'cls': 0.5, 'cls_pw': 1.0, 'obj_pw': 2.0, 'anchor_t': 4.0}

    # box utilities
    a = torch.tensor([[0.5, 0.5, 0.2, 0.2]])
    b = torch.tensor([[0.55, 0.5, 0.2, 0.2], [0.9, 0.9, 0.1, 0.1]])
    print('iou ', bbox_iou(a, b).flatten())
    print('giou', bbox_iou(a, b, GIoU=True).flatten())
    print('ciou', bbox_iou(a, b, CIoU=True).flatten())
    boxes = torch.tensor([[0, 0, 10, 10], [1, 1, 11, 11], [20, 20, 30, 30], [0, 0, 9, 10]],
                         dtype=torch.float32)
    scores = torch.tensor([0.9, 0.8, 0.7, 0.95])
    print('nms keep', nms(boxes, scores, 0.5))

    # index_put with accumulate=True: duplicate cells add up
    heat = torch.zeros(4, 4)
    heat.index_put_((torch.tensor([0, 0, 3]), torch.tensor([1, 1, 2])), torch.tensor([1., 2., 5.]),
                    accumulate=True)
    print('heat', heat.nonzero().tolist(), heat[heat > 0].tolist())

    model = TinyYolo().to(device)
    print(model.detect)
    print('anchors', model.detect.anchors)
    print('bias', model.detect.m[0].bias.data[:7])
    compute_loss = ComputeLoss(model, hyp)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2, betas=(0.937, 0.999))
    lf = lambda x: (1 - x / opt.steps) * (1.0 - 0.1) + 0.1  # linear
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda=lf)
    gen = torch.Generator().manual_seed(3)
    model.train()
    for step in range(opt.steps):
        imgs, targets = synthetic_batch(16, opt.img, gen)
        pred = model(imgs.to(device))
        loss, loss_items = compute_loss(pred, targets.to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        if step % 3 == 0 or step == opt.steps - 1:
            print(('%10s' * 2 + '%10.4g' * 4) % (f'{step}/{opt.steps - 1}', 'loss',
                                                 *loss_items, loss.item()))

    model.eval()
    imgs, targets = synthetic_batch(2, opt.img, gen)
    with torch.no_grad():
        out, train_out = model(imgs)
    print('inference out', tuple(out.shape), 'train_out', [tuple(t.shape) for t in train_out])
    print('grid', model.detect.grid[0].shape, model.detect.grid[0][0, 0, 1, 2].tolist())
    for i, x in enumerate(out):
        x = x[x[:, 4] > opt.conf_thres]
        box = xywh2xyxy(x[:, :4])
        conf, j = x[:, 5:].max(1, keepdim=True)
        det = torch.cat((box, conf * x[:, 4:5], j.float()), 1)
        keep = nms(det[:, :4], det[:, 4], opt.iou_thres)
        print(f'image {i}: {x.shape[0]} candidates, {keep.numel()} after NMS, '
              f'target class {int(targets[i, 1])}')


if __name__ == '__main__':
    main()
