"""Mixup / CutMix training with label smoothing as in the CutMix-PyTorch repo (clovaai)
and timm/loss/cross_entropy.py: lam from np.random.beta(alpha, alpha), torch.randperm
pairs, rand_bbox with np.int32 and np.clip, the box pasted with
x[:, :, bbx1:bbx2, bby1:bby2] = x[index, :, bbx1:bbx2, bby1:bby2],
LabelSmoothingCrossEntropy, SoftTargetCrossEntropy, and nn.CrossEntropyLoss(label_smoothing=0.1)."""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser(description='CutMix / Mixup training')
parser.add_argument('--beta', default=1.0, type=float, help='hyperparameter beta')
parser.add_argument('--cutmix_prob', default=0.5, type=float, help='cutmix probability')
parser.add_argument('--epochs', default=6, type=int)
parser.add_argument('--lr', default=0.05, type=float)
args = parser.parse_args()
print(args)

torch.manual_seed(0)
np.random.seed(0)


class LabelSmoothingCrossEntropy(nn.Module):
    """ NLL loss with label smoothing. """

    def __init__(self, smoothing=0.1):
        super(LabelSmoothingCrossEntropy, self).__init__()
        assert smoothing < 1.0
        self.smoothing = smoothing
        self.confidence = 1. - smoothing

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        logprobs = F.log_softmax(x, dim=-1)
        nll_loss = -logprobs.gather(dim=-1, index=target.unsqueeze(1))
        nll_loss = nll_loss.squeeze(1)
        smooth_loss = -logprobs.mean(dim=-1)
        loss = self.confidence * nll_loss + self.smoothing * smooth_loss
        return loss.mean()


class SoftTargetCrossEntropy(nn.Module):

    def __init__(self):
        super(SoftTargetCrossEntropy, self).__init__()

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        loss = torch.sum(-target * F.log_softmax(x, dim=-1), dim=-1)
        return loss.mean()


def one_hot(x, num_classes, on_value=1., off_value=0.):
    x = x.long().view(-1, 1)
    return torch.full((x.size()[0], num_classes), off_value, device=x.device).scatter_(1, x, on_value)


def mixup_target(target, num_classes, lam=1., smoothing=0.0):
    off_value = smoothing / num_classes
    on_value = 1. - smoothing + off_value
    y1 = one_hot(target, num_classes, on_value=on_value, off_value=off_value)
    y2 = one_hot(target.flip(0), num_classes, on_value=on_value, off_value=off_value)
    return y1 * lam + y2 * (1. - lam)


def rand_bbox(size, lam):
    W = size[2]
    H = size[3]
    cut_rat = np.sqrt(1. - lam)
    cut_w = np.int32(W * cut_rat)
    cut_h = np.int32(H * cut_rat)

    # uniform
    cx = np.random.randint(W)
    cy = np.random.randint(H)

    bbx1 = np.clip(cx - cut_w // 2, 0, W)
    bby1 = np.clip(cy - cut_h // 2, 0, H)
    bbx2 = np.clip(cx + cut_w // 2, 0, W)
    bby2 = np.clip(cy + cut_h // 2, 0, H)

    return bbx1, bby1, bbx2, bby2


class Net(nn.Module):
    def __init__(self, num_classes=5):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d(1))
        self.fc = nn.Linear(16, num_classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.features(x), 1))


# five classes of 12x12 images: a bright bar at one of five rows
num_classes = 5
rng = np.random.RandomState(1)
labels = rng.randint(0, num_classes, 320)
images = rng.randn(320, 1, 12, 12).astype(np.float32) * 0.3
for k in range(num_classes):
    images[labels == k, :, 2 * k + 1:2 * k + 3, :] += 1.0
print(f"class counts: {np.bincount(labels).tolist()}")
x_all = torch.from_numpy(images)
y_all = torch.from_numpy(labels).long()
x_train, y_train, x_val, y_val = x_all[:256], y_all[:256], x_all[256:], y_all[256:]

model = Net(num_classes)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), args.lr, momentum=0.9, weight_decay=1e-4, nesterov=True)

# the three smoothed losses agree on hard targets
logits = torch.randn(6, num_classes)
target = torch.tensor([0, 1, 2, 3, 4, 0])
ls = LabelSmoothingCrossEntropy(0.1)(logits, target)
builtin = nn.CrossEntropyLoss(label_smoothing=0.1)(logits, target)
soft = SoftTargetCrossEntropy()(logits, mixup_target(target, num_classes, 1.0, 0.1))
print(f"smoothing: {ls.item():.6f} {builtin.item():.6f} {soft.item():.6f}")
print(f"smoothed target row: {mixup_target(target, num_classes, 0.7, 0.1)[0].tolist()}")



def mixup_data(x, y, alpha=1.0):
    """Returns mixed inputs, pairs of targets, and lambda (the Beta drawn with torch)"""
    if alpha > 0:
        lam = torch.distributions.beta.Beta(torch.tensor([alpha]), torch.tensor([alpha])).sample().item()
    else:
        lam = 1
    batch_size = x.size()[0]
    index = torch.randperm(batch_size)
    mixed_x = lam * x + (1 - lam) * x[index, :]
    y_a, y_b = y, y[index]
    return mixed_x, y_a, y_b, lam


mixed_x, y_a, y_b, lam = mixup_data(x_train[:8], y_train[:8], alpha=0.4)
print(f"torch Beta lam {lam:.6f} pairs {y_b.tolist()} mixed {mixed_x.sum().item():.4f}")

for epoch in range(args.epochs):
    model.train()
    perm = torch.randperm(256)
    total, n = 0., 0
    for i in range(0, 256, 32):
        input, target = x_train[perm[i:i + 32]].clone(), y_train[perm[i:i + 32]]
        r = np.random.rand(1)
        if args.beta > 0 and r < args.cutmix_prob:
            # generate mixed sample
            lam = np.random.beta(args.beta, args.beta)
            rand_index = torch.randperm(input.size()[0])
            target_a = target
            target_b = target[rand_index]
            bbx1, bby1, bbx2, bby2 = rand_bbox(input.size(), lam)
            input[:, :, bbx1:bbx2, bby1:bby2] = input[rand_index, :, bbx1:bbx2, bby1:bby2]
            # adjust lambda to exactly match pixel ratio
            lam = 1 - ((bbx2 - bbx1) * (bby2 - bby1) / (input.size()[-1] * input.size()[-2]))
            output = model(input)
            loss = criterion(output, target_a) * lam + criterion(output, target_b) * (1. - lam)
        else:
            # mixup with soft targets, as timm's Mixup does
            lam = float(np.random.beta(0.4, 0.4))
            mixed = input.mul(lam).add_(input.flip(0).mul_(1. - lam))
            output = model(mixed)
            loss = SoftTargetCrossEntropy()(output, mixup_target(target, num_classes, lam, 0.1))
        if i == 0:
            print(f"epoch {epoch} first batch: lam {lam:.4f} loss {loss.item():.4f} dtype {loss.dtype}")
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item() * input.size(0)
        n += input.size(0)
    model.eval()
    with torch.no_grad():
        out = model(x_val)
        val_loss = criterion(out, y_val).item()
        correct = out.argmax(1).eq(y_val).sum().item()
    print('* Epoch: [{0}/{1}]\t Train Loss {2:.4f}\t Val Loss {3:.4f}\t Top 1-acc {4:.3f}'.format(
        epoch, args.epochs, total / n, val_loss, 100. * correct / len(y_val)))
