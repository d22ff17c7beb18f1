"""SimCLR-style contrastive learning in the style of sthalles/SimCLR: two augmented views
of each image through one encoder and projection head, the InfoNCE/NT-Xent loss built
from F.normalize, a similarity matmul, a torch.eye mask with masked_fill(-inf) on the
diagonal, and CrossEntropyLoss over logits with torch.arange labels; torch.chunk and
torch.cat views; then a linear probe on the frozen features, top-1/top-5 accuracy."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser(description='PyTorch SimCLR')
parser.add_argument('--epochs', default=4, type=int, metavar='N', help='number of total epochs to run')
parser.add_argument('-b', '--batch-size', default=32, type=int, metavar='N')
parser.add_argument('--lr', '--learning-rate', default=0.003, type=float, metavar='LR', dest='lr')
parser.add_argument('--wd', '--weight-decay', default=1e-4, type=float, metavar='W', dest='weight_decay')
parser.add_argument('--out_dim', default=16, type=int, help='feature dimension (default: 16)')
parser.add_argument('--temperature', default=0.1, type=float, help='softmax temperature (default: 0.1)')
parser.add_argument('--n-views', default=2, type=int, metavar='N', help='Number of views for contrastive learning training.')
args = parser.parse_args()
print(args)

torch.manual_seed(0)
args.device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')


class ResNetSimCLR(nn.Module):
    def __init__(self, out_dim):
        super(ResNetSimCLR, self).__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d(1), nn.Flatten())
        dim_mlp = 32
        # add mlp projection head
        self.projector = nn.Sequential(nn.Linear(dim_mlp, dim_mlp), nn.ReLU(), nn.Linear(dim_mlp, out_dim))

    def forward(self, x):
        return self.projector(self.backbone(x))


def augment(x):
    """Random resized-crop-ish shift, horizontal flip, colour jitter and noise."""
    n = x.shape[0]
    shifts = torch.randint(-2, 3, (2,))
    x = torch.roll(x, shifts=(int(shifts[0]), int(shifts[1])), dims=(2, 3))
    flip = torch.rand(n, 1, 1, 1) < 0.5
    x = torch.where(flip, x.flip(3), x)
    x = x * (0.8 + 0.4 * torch.rand(n, 3, 1, 1)) + 0.1 * torch.randn_like(x)
    return x


class SimCLR(object):
    def __init__(self, *args, **kwargs):
        self.args = kwargs['args']
        self.model = kwargs['model'].to(self.args.device)
        self.optimizer = kwargs['optimizer']
        self.scheduler = kwargs['scheduler']
        self.criterion = torch.nn.CrossEntropyLoss().to(self.args.device)

    def info_nce_loss(self, features):
        labels = torch.cat([torch.arange(self.args.batch_size) for i in range(self.args.n_views)], dim=0)
        labels = (labels.unsqueeze(0) == labels.unsqueeze(1)).float()
        labels = labels.to(self.args.device)

        features = F.normalize(features, dim=1)

        similarity_matrix = torch.matmul(features, features.T)

        # discard the main diagonal from both: labels and similarities matrix
        mask = torch.eye(labels.shape[0], dtype=torch.bool).to(self.args.device)
        labels = labels[~mask].view(labels.shape[0], -1)
        similarity_matrix = similarity_matrix[~mask].view(similarity_matrix.shape[0], -1)

        # select and combine multiple positives
        positives = similarity_matrix[labels.bool()].view(labels.shape[0], -1)

        # select only the negatives the negatives
        negatives = similarity_matrix[~labels.bool()].view(similarity_matrix.shape[0], -1)

        logits = torch.cat([positives, negatives], dim=1)
        labels = torch.zeros(logits.shape[0], dtype=torch.long).to(self.args.device)

        logits = logits / self.args.temperature
        return logits, labels

    def train(self, train_loader):
        n_iter = 0
        print(f"Start SimCLR training for {self.args.epochs} epochs.")
        for epoch_counter in range(self.args.epochs):
            for (images,) in train_loader:
                images = torch.cat([augment(images) for _ in range(self.args.n_views)], dim=0)
                images = images.to(self.args.device)

                features = self.model(images)
                logits, labels = self.info_nce_loss(features)
                loss = self.criterion(logits, labels)

                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()

                if n_iter % 4 == 0:
                    top1, top5 = accuracy(logits, labels, topk=(1, 5))
                    print(f"Step {n_iter}\tLoss: {loss.item():.4f}\tTop1 accuracy: {top1[0]:.2f}\t"
                          f"Top5 accuracy: {top5[0]:.2f}\tlr: {self.scheduler.get_last_lr()[0]:.6f}")
                n_iter += 1

            # warmup for the first 10 epochs
            if epoch_counter >= 1:
                self.scheduler.step()
        print("Training has finished.")


def nt_xent(z1, z2, temperature):
    """The same loss written with masked_fill and arange labels (the other common form)."""
    z = F.normalize(torch.cat([z1, z2], dim=0), dim=1)
    n = z1.shape[0]
    sim = z @ z.t() / temperature
    sim = sim.masked_fill(torch.eye(2 * n, dtype=torch.bool), float('-inf'))
    targets = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)])
    return F.cross_entropy(sim, targets)


def accuracy(output, target, topk=(1,)):
    """Computes the accuracy over the k top predictions for the specified values of k"""
    with torch.no_grad():
        maxk = max(topk)
        batch_size = target.size(0)

        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))

        res = []
        for k in topk:
            correct_k = correct[:k].reshape(-1).float().sum(0, keepdim=True)
            res.append(correct_k.mul_(100.0 / batch_size))
        return res


# unlabeled images from 6 prototype textures; labels only for the linear probe
g = torch.Generator().manual_seed(4)
protos = torch.randn(6, 3, 12, 12, generator=g)
labels_all = torch.randint(0, 6, (320,), generator=g)
images_all = protos[labels_all] + 0.5 * torch.randn(320, 3, 12, 12, generator=g)
train_loader = DataLoader(TensorDataset(images_all[:256]), batch_size=args.batch_size, shuffle=True, drop_last=True)

model = ResNetSimCLR(out_dim=args.out_dim)
optimizer = torch.optim.Adam(model.parameters(), args.lr, weight_decay=args.weight_decay)
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=len(train_loader), eta_min=0, last_epoch=-1)

simclr = SimCLR(model=model, optimizer=optimizer, scheduler=scheduler, args=args)
simclr.train(train_loader)

# the masked_fill form gives the same loss as the index form on one batch
model.eval()
with torch.no_grad():
    x = images_all[:args.batch_size]
    z1, z2 = torch.chunk(model(torch.cat([x, x.flip(3)])), 2, dim=0)
    logits, labels = simclr.info_nce_loss(torch.cat([z1, z2]))
    print(f"index form {F.cross_entropy(logits, labels).item():.4f}  "
          f"masked_fill form {nt_xent(z1, z2, args.temperature).item():.4f}")

# linear evaluation on frozen features
for p in model.backbone.parameters():
    p.requires_grad = False
with torch.no_grad():
    feats = model.backbone(images_all)
probe = nn.Linear(feats.shape[1], 6)
probe_opt = torch.optim.SGD(probe.parameters(), lr=0.5, momentum=0.9)
for epoch in range(30):
    probe_opt.zero_grad()
    loss = F.cross_entropy(probe(feats[:256]), labels_all[:256])
    loss.backward()
    probe_opt.step()
with torch.no_grad():
    top1, = accuracy(probe(feats[256:]), labels_all[256:], topk=(1,))
print(f"linear probe: train loss {loss.item():.4f}, test top1 {top1.item():.2f}%")
print(f"trainable: {sum(p.numel() for p in model.parameters() if p.requires_grad)}")
