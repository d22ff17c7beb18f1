"""DGCNN (Wang et al., "Dynamic Graph CNN for Learning on Point Clouds"), in the style of the
reference PyTorch code (WangYueFt/dgcnn): knn by pairwise distances and topk, get_graph_feature
gathering neighbour features with index arithmetic and view, EdgeConv as Conv2d + BatchNorm2d +
LeakyReLU(0.2) and max over neighbours, Conv1d embedding, adaptive max + avg pooling concat,
cal_loss with label smoothing; trained a few steps on tiny synthetic shapes."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def knn(x, k):
    inner = -2 * torch.matmul(x.transpose(2, 1), x)
    xx = torch.sum(x ** 2, dim=1, keepdim=True)
    pairwise_distance = -xx - inner - xx.transpose(2, 1)
    idx = pairwise_distance.topk(k=k, dim=-1)[1]  # (batch_size, num_points, k)
    return idx


def get_graph_feature(x, k=20, idx=None):
    batch_size = x.size(0)
    num_points = x.size(2)
    x = x.view(batch_size, -1, num_points)
    if idx is None:
        idx = knn(x, k=k)
    device = torch.device('cpu')
    idx_base = torch.arange(0, batch_size, device=device).view(-1, 1, 1) * num_points
    idx = idx + idx_base
    idx = idx.view(-1)
    _, num_dims, _ = x.size()
    x = x.transpose(2, 1).contiguous()
    feature = x.view(batch_size * num_points, -1)[idx, :]
    feature = feature.view(batch_size, num_points, k, num_dims)
    x = x.view(batch_size, num_points, 1, num_dims).repeat(1, 1, k, 1)
    feature = torch.cat((feature - x, x), dim=3).permute(0, 3, 1, 2).contiguous()
    return feature


class DGCNN(nn.Module):
    def __init__(self, k=5, emb_dims=64, dropout=0.5, output_channels=4):
        super(DGCNN, self).__init__()
        self.k = k
        self.bn1 = nn.BatchNorm2d(16)
        self.bn2 = nn.BatchNorm2d(16)
        self.bn3 = nn.BatchNorm2d(32)
        self.bn4 = nn.BatchNorm2d(64)
        self.bn5 = nn.BatchNorm1d(emb_dims)
        self.conv1 = nn.Sequential(nn.Conv2d(6, 16, kernel_size=1, bias=False),
                                   self.bn1, nn.LeakyReLU(negative_slope=0.2))
        self.conv2 = nn.Sequential(nn.Conv2d(16 * 2, 16, kernel_size=1, bias=False),
                                   self.bn2, nn.LeakyReLU(negative_slope=0.2))
        self.conv3 = nn.Sequential(nn.Conv2d(16 * 2, 32, kernel_size=1, bias=False),
                                   self.bn3, nn.LeakyReLU(negative_slope=0.2))
        self.conv4 = nn.Sequential(nn.Conv2d(32 * 2, 64, kernel_size=1, bias=False),
                                   self.bn4, nn.LeakyReLU(negative_slope=0.2))
        self.conv5 = nn.Sequential(nn.Conv1d(128, emb_dims, kernel_size=1, bias=False),
                                   self.bn5, nn.LeakyReLU(negative_slope=0.2))
        self.linear1 = nn.Linear(emb_dims * 2, 32, bias=False)
        self.bn6 = nn.BatchNorm1d(32)
        self.dp1 = nn.Dropout(p=dropout)
        self.linear2 = nn.Linear(32, 16)
        self.bn7 = nn.BatchNorm1d(16)
        self.dp2 = nn.Dropout(p=dropout)
        self.linear3 = nn.Linear(16, output_channels)

    def forward(self, x):
        batch_size = x.size(0)
        x = get_graph_feature(x, k=self.k)
        x = self.conv1(x)
        x1 = x.max(dim=-1, keepdim=False)[0]

        x = get_graph_feature(x1, k=self.k)
        x = self.conv2(x)
        x2 = x.max(dim=-1, keepdim=False)[0]

        x = get_graph_feature(x2, k=self.k)
        x = self.conv3(x)
        x3 = x.max(dim=-1, keepdim=False)[0]

        x = get_graph_feature(x3, k=self.k)
        x = self.conv4(x)
        x4 = x.max(dim=-1, keepdim=False)[0]

        x = torch.cat((x1, x2, x3, x4), dim=1)

        x = self.conv5(x)
        x1 = F.adaptive_max_pool1d(x, 1).view(batch_size, -1)
        x2 = F.adaptive_avg_pool1d(x, 1).view(batch_size, -1)
        x = torch.cat((x1, x2), 1)

        x = F.leaky_relu(self.bn6(self.linear1(x)), negative_slope=0.2)
        x = self.dp1(x)
        x = F.leaky_relu(self.bn7(self.linear2(x)), negative_slope=0.2)
        x = self.dp2(x)
        x = self.linear3(x)
        return x


def cal_loss(pred, gold, smoothing=True):
    ''' Calculate cross entropy loss, apply label smoothing if needed. '''
    gold = gold.contiguous().view(-1)
    if smoothing:
        eps = 0.2
        n_class = pred.size(1)
        one_hot = torch.zeros_like(pred).scatter(1, gold.view(-1, 1), 1)
        one_hot = one_hot * (1 - eps) + (1 - one_hot) * eps / (n_class - 1)
        log_prb = F.log_softmax(pred, dim=1)
        loss = -(one_hot * log_prb).sum(dim=1).mean()
    else:
        loss = F.cross_entropy(pred, gold, reduction='mean')
    return loss


def make_shapes(n, num_points, rng):
    """Four tiny classes of point clouds: sphere, cube surface, line, plane patch."""
    data, labels = [], []
    for i in range(n):
        c = i % 4
        if c == 0:
            p = rng.normal(size=(num_points, 3))
            p /= np.linalg.norm(p, axis=1, keepdims=True)
        elif c == 1:
            p = rng.uniform(-1, 1, size=(num_points, 3))
            ax = rng.integers(0, 3, size=num_points)
            p[np.arange(num_points), ax] = np.sign(p[np.arange(num_points), ax])
        elif c == 2:
            t = rng.uniform(-1, 1, size=(num_points, 1))
            p = t * np.array([[1.0, 0.5, -0.3]]) + 0.02 * rng.normal(size=(num_points, 3))
        else:
            p = np.concatenate([rng.uniform(-1, 1, size=(num_points, 2)),
                                0.02 * rng.normal(size=(num_points, 1))], axis=1)
        data.append(p.astype('float32'))
        labels.append(c)
    return np.stack(data), np.array(labels, dtype='int64')


torch.manual_seed(1)
torch.set_printoptions(precision=4)
rng = np.random.default_rng(0)
data, label = make_shapes(16, 32, rng)
print("data", data.shape, data.dtype, "labels", np.bincount(label))

pts = torch.from_numpy(data[:2]).permute(0, 2, 1)  # (B, 3, N)
idx = knn(pts, k=4)
print("knn idx", idx.shape, idx.dtype)
print(idx[0, :3])
feat = get_graph_feature(pts, k=4)
print("graph feature", feat.shape, feat.is_contiguous())
print(feat[0, :, 0, :2])

model = DGCNN(k=5)
print(model)
print("parameters", sum(p.numel() for p in model.parameters() if p.requires_grad))

opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(opt, 8, eta_min=1e-3)
x_all = torch.from_numpy(data).permute(0, 2, 1)
y_all = torch.from_numpy(label)
for epoch in range(8):
    model.train()
    perm = torch.randperm(16)
    tot, count = 0.0, 0
    for b in range(2):
        sel = perm[b * 8:(b + 1) * 8]
        x, y = x_all[sel], y_all[sel]
        opt.zero_grad()
        logits = model(x)
        loss = cal_loss(logits, y)
        loss.backward()
        opt.step()
        tot += loss.item() * x.size(0)
        count += x.size(0)
    scheduler.step()
    print("epoch %d loss %.6f lr %.6f" % (epoch, tot / count, scheduler.get_last_lr()[0]))

model.eval()
with torch.no_grad():
    logits = model(x_all)
    pred = logits.max(dim=1)[1]
print("eval logits", logits.shape, logits.dtype)
print("train acc", (pred == y_all).float().mean().item() >= 0.25)
print("bn5 running_var", model.bn5.running_var.shape, model.bn5.num_batches_tracked)
