"""Evaluation code as segmentation / detection / classification repos write it: a
confusion matrix from torch.bincount(num_classes * y + p, minlength=num_classes**2),
per-class precision/recall with torch.diag and torch.nan_to_num, mIoU, AP from
torch.argsort(descending=True) and cumsum, torch.unique(return_counts=True),
torch.histc, torch.quantile, torch.searchsorted / torch.bucketize binning (calibration
ECE), all printed with .tolist() under torch.set_printoptions(precision=3)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_printoptions(precision=3)
torch.manual_seed(0)
num_classes = 4


class ConfusionMatrix:
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
            self.mat += torch.bincount(inds, minlength=n ** 2).reshape(n, n)

    def reset(self):
        self.mat.zero_()

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


# a small segmentation net trained for a few steps on synthetic masks
class TinySeg(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(),
                                  nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(),
                                  nn.Conv2d(16, num_classes, 1))

    def forward(self, x):
        return self.body(x)


def make_batch(n):
    masks = torch.zeros(n, 16, 16, dtype=torch.long)
    masks[:, :8, 8:] = 1
    masks[:, 8:, :8] = 2
    masks[:, 8:, 8:] = 3
    shift = torch.randint(-2, 3, (n,))
    masks = torch.stack([m.roll(int(s), dims=1) for m, s in zip(masks, shift)])
    images = F.one_hot(masks, num_classes)[..., :3].permute(0, 3, 1, 2).float()
    images = images + 0.5 * torch.randn_like(images)
    masks[:, 0, :] = 255  # an ignored border row, as in VOC
    return images, masks


model = TinySeg()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range(30):
    image, target = make_batch(8)
    output = model(image)
    loss = F.cross_entropy(output, target, ignore_index=255)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 10 == 0:
        print(f"step {step} loss {loss.item():.4f}")

model.eval()
confmat = ConfusionMatrix(num_classes)
with torch.no_grad():
    for _ in range(3):
        image, target = make_batch(8)
        output = model(image)
        confmat.update(target.flatten(), output.argmax(1).flatten())
print(confmat)
print(confmat.mat.dtype, confmat.mat.sum().item())

# per-class precision / recall / F1 from a fixed confusion matrix with an empty class
cm = torch.tensor([[5, 1, 0, 0], [2, 7, 1, 0], [0, 0, 0, 0], [1, 0, 0, 3]])
tp = torch.diag(cm).float()
precision = torch.nan_to_num(tp / cm.sum(0), nan=0.0)
recall = torch.nan_to_num(tp / cm.sum(1), nan=0.0)
f1 = torch.nan_to_num(2 * precision * recall / (precision + recall))
print(f"precision {precision}")
print(f"recall {recall.tolist()}")
print(f"f1 {f1} macro {f1.mean():.4f}")
print(torch.nan_to_num(torch.tensor([float('nan'), float('inf'), -float('inf'), 1.5]), nan=0.0, posinf=1e4, neginf=-1e4))


# average precision per class (VOC-style, all-point interpolation)
def average_precision(scores, labels):
    order = torch.argsort(scores, descending=True)
    labels = labels[order]
    tps = torch.cumsum(labels, dim=0).float()
    fps = torch.cumsum(1 - labels, dim=0).float()
    recall = tps / labels.sum().clamp(min=1)
    precision = tps / (tps + fps)
    mrec = torch.cat([torch.tensor([0.0]), recall, torch.tensor([1.0])])
    mpre = torch.cat([torch.tensor([0.0]), precision, torch.tensor([0.0])])
    mpre = torch.flip(torch.cummax(torch.flip(mpre, [0]), 0).values, [0])
    i = torch.where(mrec[1:] != mrec[:-1])[0]
    return torch.sum((mrec[i + 1] - mrec[i]) * mpre[i + 1])


logits = torch.randn(60, num_classes)
labels = torch.randint(0, num_classes, (60,))
logits[torch.arange(60), labels] += 1.5
probs = logits.softmax(-1)
aps = torch.stack([average_precision(probs[:, c], (labels == c).long()) for c in range(num_classes)])
print(f"AP per class {aps} mAP {aps.mean().item():.4f}")
values, counts = torch.unique(labels, return_counts=True)
print(f"unique {values.tolist()} counts {counts.tolist()}")
u, inverse, c = torch.unique(torch.tensor([3, 1, 3, 2, 1, 3]), sorted=True, return_inverse=True, return_counts=True)
print(u, inverse, c)
top2 = probs.topk(2, dim=1).indices
print(f"top-2 accuracy {(top2 == labels[:, None]).any(1).float().mean().item():.4f}")

# confidence statistics and calibration
conf, pred = probs.max(1)
print(f"histc {torch.histc(conf, bins=5, min=0, max=1).tolist()}")
print(f"quantiles {torch.quantile(conf, torch.tensor([0.1, 0.5, 0.9]))}")
print(f"quantile nearest {torch.quantile(conf, 0.75, interpolation='nearest').item():.4f} "
      f"median {conf.median().item():.4f} nanquantile {torch.nanquantile(torch.tensor([1.0, float('nan'), 3.0]), 0.5)}")
bin_boundaries = torch.linspace(0, 1, 6)
bins = torch.bucketize(conf, bin_boundaries[1:-1])
same_bins = torch.searchsorted(bin_boundaries[1:-1], conf)
print(f"bucketize == searchsorted: {torch.equal(bins, same_bins)}, right: "
      f"{torch.searchsorted(torch.tensor([0.2, 0.4, 0.6]), torch.tensor([0.2, 0.5]), right=True).tolist()}")
accuracies = pred.eq(labels)
ece = torch.zeros(1)
for b in range(5):
    in_bin = bins == b
    prop_in_bin = in_bin.float().mean()
    if prop_in_bin.item() > 0:
        accuracy_in_bin = accuracies[in_bin].float().mean()
        avg_confidence_in_bin = conf[in_bin].mean()
        ece += torch.abs(avg_confidence_in_bin - accuracy_in_bin) * prop_in_bin
print(f"ECE {ece.item():.4f} {ece}")
print(torch.tensor([0.123456, 12.3456789]), torch.tensor([1e-5, 1.0]))
