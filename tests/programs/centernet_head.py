"""A CenterNet-style detector (in the manner of xingyizhou/CenterNet's ctdet): a small
backbone with hm/wh/reg heads (the heatmap bias filled with -2.19), the penalty-reduced
focal loss `_neg_loss` with pow/log and gt.eq(1)/gt.lt(1) masks, `_sigmoid` clamped,
RegL1Loss through `_transpose_and_gather_feat` (permute(0, 2, 3, 1).contiguous().view +
gather with an expanded index), gaussian targets drawn with NumPy (gaussian_radius,
draw_umich_gaussian), and ctdet_decode: `_nms` by F.max_pool2d(3, 1, 1) == heat, `_topk`
over the flattened maps with torch.div(..., rounding_mode="floor") and `%` index
decoding. Synthetic images of bright rectangles, trained a few steps with Adam."""
import argparse
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


# ---------------------------------------------------------------- utils (image.py)
def gaussian_radius(det_size, min_overlap=0.7):
    height, width = det_size

    a1 = 1
    b1 = (height + width)
    c1 = width * height * (1 - min_overlap) / (1 + min_overlap)
    sq1 = np.sqrt(b1 ** 2 - 4 * a1 * c1)
    r1 = (b1 + sq1) / 2

    a2 = 4
    b2 = 2 * (height + width)
    c2 = (1 - min_overlap) * width * height
    sq2 = np.sqrt(b2 ** 2 - 4 * a2 * c2)
    r2 = (b2 + sq2) / 2

    a3 = 4 * min_overlap
    b3 = -2 * min_overlap * (height + width)
    c3 = (min_overlap - 1) * width * height
    sq3 = np.sqrt(b3 ** 2 - 4 * a3 * c3)
    r3 = (b3 + sq3) / 2
    return min(r1, r2, r3)


def gaussian2D(shape, sigma=1):
    m, n = [(ss - 1.) / 2. for ss in shape]
    y, x = np.ogrid[-m:m + 1, -n:n + 1]

    h = np.exp(-(x * x + y * y) / (2 * sigma * sigma))
    h[h < np.finfo(h.dtype).eps * h.max()] = 0
    return h


def draw_umich_gaussian(heatmap, center, radius, k=1):
    diameter = 2 * radius + 1
    gaussian = gaussian2D((diameter, diameter), sigma=diameter / 6)

    x, y = int(center[0]), int(center[1])

    height, width = heatmap.shape[0:2]

    left, right = min(x, radius), min(width - x, radius + 1)
    top, bottom = min(y, radius), min(height - y, radius + 1)

    masked_heatmap = heatmap[y - top:y + bottom, x - left:x + right]
    masked_gaussian = gaussian[radius - top:radius + bottom, radius - left:radius + right]
    if min(masked_gaussian.shape) > 0 and min(masked_heatmap.shape) > 0:
        np.maximum(masked_heatmap, masked_gaussian * k, out=masked_heatmap)
    return heatmap


# ---------------------------------------------------------------- models/utils.py
def _sigmoid(x):
    y = torch.clamp(x.sigmoid_(), min=1e-4, max=1 - 1e-4)
    return y


def _gather_feat(feat, ind, mask=None):
    dim = feat.size(2)
    ind = ind.unsqueeze(2).expand(ind.size(0), ind.size(1), dim)
    feat = feat.gather(1, ind)
    if mask is not None:
        mask = mask.unsqueeze(2).expand_as(feat)
        feat = feat[mask]
        feat = feat.view(-1, dim)
    return feat


def _transpose_and_gather_feat(feat, ind):
    feat = feat.permute(0, 2, 3, 1).contiguous()
    feat = feat.view(feat.size(0), -1, feat.size(3))
    feat = _gather_feat(feat, ind)
    return feat


# ---------------------------------------------------------------- models/losses.py
def _neg_loss(pred, gt):
    ''' Modified focal loss. Exactly the same as CornerNet.
        Runs faster and costs a little bit more memory
      Arguments:
        pred (batch x c x h x w)
        gt_regr (batch x c x h x w)
    '''
    pos_inds = gt.eq(1).float()
    neg_inds = gt.lt(1).float()

    neg_weights = torch.pow(1 - gt, 4)

    loss = 0

    pos_loss = torch.log(pred) * torch.pow(1 - pred, 2) * pos_inds
    neg_loss = torch.log(1 - pred) * torch.pow(pred, 2) * neg_weights * neg_inds

    num_pos = pos_inds.float().sum()
    pos_loss = pos_loss.sum()
    neg_loss = neg_loss.sum()

    if num_pos == 0:
        loss = loss - neg_loss
    else:
        loss = loss - (pos_loss + neg_loss) / num_pos
    return loss


class FocalLoss(nn.Module):
    '''nn.Module warpper for focal loss'''
    def __init__(self):
        super(FocalLoss, self).__init__()
        self.neg_loss = _neg_loss

    def forward(self, out, target):
        return self.neg_loss(out, target)


class RegL1Loss(nn.Module):
    def __init__(self):
        super(RegL1Loss, self).__init__()

    def forward(self, output, mask, ind, target):
        pred = _transpose_and_gather_feat(output, ind)
        mask = mask.unsqueeze(2).expand_as(pred).float()
        # loss = F.l1_loss(pred * mask, target * mask, reduction='elementwise_mean')
        loss = F.l1_loss(pred * mask, target * mask, size_average=False)
        loss = loss / (mask.sum() + 1e-4)
        return loss


class CtdetLoss(torch.nn.Module):
    def __init__(self, opt):
        super(CtdetLoss, self).__init__()
        self.crit = FocalLoss()
        self.crit_reg = RegL1Loss()
        self.crit_wh = self.crit_reg
        self.opt = opt

    def forward(self, outputs, batch):
        opt = self.opt
        output = outputs[0]
        output['hm'] = _sigmoid(output['hm'])
        hm_loss = self.crit(output['hm'], batch['hm'])
        wh_loss = self.crit_wh(output['wh'], batch['reg_mask'], batch['ind'], batch['wh'])
        off_loss = self.crit_reg(output['reg'], batch['reg_mask'], batch['ind'], batch['reg'])
        loss = opt.hm_weight * hm_loss + opt.wh_weight * wh_loss + opt.off_weight * off_loss
        loss_stats = {'loss': loss, 'hm_loss': hm_loss, 'wh_loss': wh_loss, 'off_loss': off_loss}
        return loss, loss_stats


# ---------------------------------------------------------------- models/decode.py
def _nms(heat, kernel=3):
    pad = (kernel - 1) // 2

    hmax = nn.functional.max_pool2d(heat, (kernel, kernel), stride=1, padding=pad)
    keep = (hmax == heat).float()
    return heat * keep


def _topk(scores, K=40):
    batch, cat, height, width = scores.size()

    topk_scores, topk_inds = torch.topk(scores.view(batch, cat, -1), K)

    topk_inds = topk_inds % (height * width)
    topk_ys = torch.div(topk_inds, width, rounding_mode='floor').int().float()
    topk_xs = (topk_inds % width).int().float()

    topk_score, topk_ind = torch.topk(topk_scores.view(batch, -1), K)
    topk_clses = (topk_ind // K).int()
    topk_inds = _gather_feat(
        topk_inds.view(batch, -1, 1), topk_ind).view(batch, K)
    topk_ys = _gather_feat(topk_ys.view(batch, -1, 1), topk_ind).view(batch, K)
    topk_xs = _gather_feat(topk_xs.view(batch, -1, 1), topk_ind).view(batch, K)

    return topk_score, topk_inds, topk_clses, topk_ys, topk_xs


def ctdet_decode(heat, wh, reg=None, cat_spec_wh=False, K=100):
    batch, cat, height, width = heat.size()

    heat = _nms(heat)

    scores, inds, clses, ys, xs = _topk(heat, K=K)
    if reg is not None:
        reg = _transpose_and_gather_feat(reg, inds)
        reg = reg.view(batch, K, 2)
        xs = xs.view(batch, K, 1) + reg[:, :, 0:1]
        ys = ys.view(batch, K, 1) + reg[:, :, 1:2]
    else:
        xs = xs.view(batch, K, 1) + 0.5
        ys = ys.view(batch, K, 1) + 0.5
    wh = _transpose_and_gather_feat(wh, inds)
    wh = wh.view(batch, K, 2)
    clses = clses.view(batch, K, 1).float()
    scores = scores.view(batch, K, 1)
    bboxes = torch.cat([xs - wh[..., 0:1] / 2,
                        ys - wh[..., 1:2] / 2,
                        xs + wh[..., 0:1] / 2,
                        ys + wh[..., 1:2] / 2], dim=2)
    detections = torch.cat([bboxes, scores, clses], dim=2)

    return detections


# ---------------------------------------------------------------- a tiny backbone
def fill_fc_weights(layers):
    for m in layers.modules():
        if isinstance(m, nn.Conv2d):
            if m.bias is not None:
                nn.init.constant_(m.bias, 0)


class TinyCenterNet(nn.Module):
    def __init__(self, heads, head_conv=16, width=16):
        super(TinyCenterNet, self).__init__()
        self.heads = heads
        self.base = nn.Sequential(
            nn.Conv2d(3, width, 3, stride=2, padding=1, bias=False),
            nn.BatchNorm2d(width, momentum=0.1),
            nn.ReLU(inplace=True),
            nn.Conv2d(width, width, 3, stride=2, padding=1, bias=False),
            nn.BatchNorm2d(width, momentum=0.1),
            nn.ReLU(inplace=True),
            nn.Conv2d(width, width, 3, padding=1, bias=False),
            nn.BatchNorm2d(width, momentum=0.1),
            nn.ReLU(inplace=True),
        )
        for head in self.heads:
            classes = self.heads[head]
            fc = nn.Sequential(
                nn.Conv2d(width, head_conv, kernel_size=3, padding=1, bias=True),
                nn.ReLU(inplace=True),
                nn.Conv2d(head_conv, classes, kernel_size=1, stride=1, padding=0, bias=True))
            if 'hm' in head:
                fc[-1].bias.data.fill_(-2.19)
            else:
                fill_fc_weights(fc)
            self.__setattr__(head, fc)

    def forward(self, x):
        x = self.base(x)
        ret = {}
        for head in self.heads:
            ret[head] = self.__getattr__(head)(x)
        return [ret]


# ---------------------------------------------------------------- synthetic data
def make_batch(rng, opt):
    """Images with 1-3 rectangles of two classes (red, green); CenterNet targets at stride 4."""
    out = opt.input_res // opt.down_ratio
    imgs = np.zeros((opt.batch_size, 3, opt.input_res, opt.input_res), np.float32)
    hm = np.zeros((opt.batch_size, opt.num_classes, out, out), np.float32)
    wh = np.zeros((opt.batch_size, opt.max_objs, 2), np.float32)
    reg = np.zeros((opt.batch_size, opt.max_objs, 2), np.float32)
    ind = np.zeros((opt.batch_size, opt.max_objs), np.int64)
    reg_mask = np.zeros((opt.batch_size, opt.max_objs), np.uint8)
    for b in range(opt.batch_size):
        imgs[b] = rng.normal(0, 0.1, imgs[b].shape)
        for k in range(rng.integers(1, 4)):
            cls = int(rng.integers(0, opt.num_classes))
            w, h = rng.integers(6, 14, 2)
            x0, y0 = rng.integers(0, opt.input_res - w), rng.integers(0, opt.input_res - h)
            imgs[b, cls, y0:y0 + h, x0:x0 + w] += 1.0
            bbox = np.array([x0, y0, x0 + w, y0 + h], np.float32) / opt.down_ratio
            bh, bw = bbox[3] - bbox[1], bbox[2] - bbox[0]
            radius = max(0, int(gaussian_radius((math.ceil(bh), math.ceil(bw)))))
            ct = np.array([(bbox[0] + bbox[2]) / 2, (bbox[1] + bbox[3]) / 2], dtype=np.float32)
            ct_int = ct.astype(np.int32)
            draw_umich_gaussian(hm[b, cls], ct_int, radius)
            wh[b, k] = 1. * bw, 1. * bh
            ind[b, k] = ct_int[1] * out + ct_int[0]
            reg[b, k] = ct - ct_int
            reg_mask[b, k] = 1
    batch = {'input': imgs, 'hm': hm, 'reg_mask': reg_mask, 'ind': ind, 'wh': wh, 'reg': reg}
    return {k: torch.from_numpy(v) for k, v in batch.items()}


def main():
    parser = argparse.ArgumentParser(description='tiny ctdet')
    parser.add_argument('--input_res', type=int, default=32)
    parser.add_argument('--down_ratio', type=int, default=4)
    parser.add_argument('--num_classes', type=int, default=2)
    parser.add_argument('--max_objs', type=int, default=8)
    parser.add_argument('--batch_size', type=int, default=8)
    parser.add_argument('--lr', type=float, default=5e-3)
    parser.add_argument('--num_iters', type=int, default=30)
    parser.add_argument('--hm_weight', type=float, default=1)
    parser.add_argument('--wh_weight', type=float, default=0.1)
    parser.add_argument('--off_weight', type=float, default=1)
    parser.add_argument('--K', type=int, default=5)
    opt = parser.parse_args()
    torch.manual_seed(317)
    rng = np.random.default_rng(0)

    r = gaussian_radius((3, 2))
    print('gaussian radius (3, 2): %.6f' % r, 'kernel', gaussian2D((5, 5), sigma=5 / 6)[2].round(4))

    heads = {'hm': opt.num_classes, 'wh': 2, 'reg': 2}
    model = TinyCenterNet(heads)
    print(model)
    print('hm bias', model.hm[-1].bias)

    # the decoding helpers on a fixed map
    heat = torch.zeros(1, 2, 6, 6)
    heat[0, 0, 1, 2] = 0.9
    heat[0, 0, 1, 3] = 0.7
    heat[0, 1, 4, 4] = 0.8
    heat[0, 1, 5, 0] = 0.3
    print('nms peaks', _nms(heat).nonzero().tolist())
    scores, inds, clses, ys, xs = _topk(_nms(heat), K=3)
    print('topk', scores, inds, clses, ys, xs, sep='\n')
    feat = torch.arange(2 * 2 * 6 * 6, dtype=torch.float32).view(1, 4, 6, 6)[:, :2]
    print('gathered', _transpose_and_gather_feat(feat, inds))

    batch = make_batch(rng, opt)
    print('batch', {k: (tuple(v.shape), v.dtype) for k, v in batch.items()})
    print('hm peaks', int(batch['hm'].eq(1).sum()), 'objects', int(batch['reg_mask'].sum()))

    loss_fn = CtdetLoss(opt)
    optimizer = torch.optim.Adam(model.parameters(), opt.lr)
    model.train()
    for it in range(opt.num_iters):
        outputs = model(batch['input'])
        loss, loss_stats = loss_fn(outputs, batch)
        loss = loss.mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if it % 5 == 0 or it == opt.num_iters - 1:
            print('ctdet: [{}][{}/{}] '.format(0, it, opt.num_iters)
                  + ' |'.join(' {} {:.4f}'.format(k, v.item()) for k, v in loss_stats.items()))

    model.eval()
    with torch.no_grad():
        output = model(batch['input'])[-1]
        hm = output['hm'].sigmoid_()
        dets = ctdet_decode(hm, output['wh'], reg=output['reg'], K=opt.K)
    print('dets', dets.shape, dets.dtype)
    true = batch['reg_mask'].sum(1)
    for b in range(3):
        keep = dets[b, dets[b, :, 4] > 0.3]
        print('image %d: %d objects, %d detections, classes %s' % (
            b, int(true[b]), keep.shape[0], keep[:, 5].long().tolist()))


if __name__ == '__main__':
    main()
