"""Contrastive and metric learning as the SupContrast repo (HobbitLong) and metric-learning
scripts write it: SupConLoss with torch.div(torch.matmul(anchor, contrast.T), temperature),
the logits_max trick, torch.scatter(torch.ones_like(mask), 1, torch.arange(...).view(-1, 1), 0),
mask.repeat(anchor_count, contrast_count); nn.TripletMarginLoss next to a hand-written
triplet loss with F.pairwise_distance, nn.CosineEmbeddingLoss, F.normalize(dim=1), and
recall@k retrieval with torch.cdist."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class SupConLoss(nn.Module):
    """Supervised Contrastive Learning: https://arxiv.org/pdf/2004.11362.pdf.
    It also supports the unsupervised contrastive loss in SimCLR"""

    def __init__(self, temperature=0.07, contrast_mode='all', base_temperature=0.07):
        super(SupConLoss, self).__init__()
        self.temperature = temperature
        self.contrast_mode = contrast_mode
        self.base_temperature = base_temperature

    def forward(self, features, labels=None, mask=None):
        device = (torch.device('cuda') if features.is_cuda else torch.device('cpu'))

        if len(features.shape) < 3:
            raise ValueError('`features` needs to be [bsz, n_views, ...],'
                             'at least 3 dimensions are required')
        if len(features.shape) > 3:
            features = features.view(features.shape[0], features.shape[1], -1)

        batch_size = features.shape[0]
        if labels is not None and mask is not None:
            raise ValueError('Cannot define both `labels` and `mask`')
        elif labels is None and mask is None:
            mask = torch.eye(batch_size, dtype=torch.float32).to(device)
        elif labels is not None:
            labels = labels.contiguous().view(-1, 1)
            if labels.shape[0] != batch_size:
                raise ValueError('Num of labels does not match num of features')
            mask = torch.eq(labels, labels.T).float().to(device)
        else:
            mask = mask.float().to(device)

        contrast_count = features.shape[1]
        contrast_feature = torch.cat(torch.unbind(features, dim=1), dim=0)
        if self.contrast_mode == 'one':
            anchor_feature = features[:, 0]
            anchor_count = 1
        elif self.contrast_mode == 'all':
            anchor_feature = contrast_feature
            anchor_count = contrast_count
        else:
            raise ValueError('Unknown mode: {}'.format(self.contrast_mode))

        # compute logits
        anchor_dot_contrast = torch.div(
            torch.matmul(anchor_feature, contrast_feature.T),
            self.temperature)
        # for numerical stability
        logits_max, _ = torch.max(anchor_dot_contrast, dim=1, keepdim=True)
        logits = anchor_dot_contrast - logits_max.detach()

        # tile mask
        mask = mask.repeat(anchor_count, contrast_count)
        # mask-out self-contrast cases
        logits_mask = torch.scatter(
            torch.ones_like(mask),
            1,
            torch.arange(batch_size * anchor_count).view(-1, 1).to(device),
            0
        )
        mask = mask * logits_mask

        # compute log_prob
        exp_logits = torch.exp(logits) * logits_mask
        log_prob = logits - torch.log(exp_logits.sum(1, keepdim=True))

        # compute mean of log-likelihood over positive
        # modified to handle edge cases when there is no positives for an anchor point.
        mask_pos_pairs = mask.sum(1)
        mask_pos_pairs = torch.where(mask_pos_pairs < 1e-6, 1, mask_pos_pairs)
        mean_log_prob_pos = (mask * log_prob).sum(1) / mask_pos_pairs

        # loss
        loss = - (self.temperature / self.base_temperature) * mean_log_prob_pos
        loss = loss.view(anchor_count, batch_size).mean()

        return loss


class Encoder(nn.Module):
    def __init__(self, in_dim=16, feat_dim=8):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(in_dim, 64), nn.ReLU(inplace=True), nn.Linear(64, 32))
        self.head = nn.Sequential(nn.Linear(32, 32), nn.ReLU(inplace=True), nn.Linear(32, feat_dim))

    def forward(self, x):
        feat = self.encoder(x)
        feat = F.normalize(self.head(feat), dim=1)
        return feat


# six classes around random centres in 16-d; two noisy "views" of each sample
n_classes, dim = 6, 16
centres = torch.randn(n_classes, dim) * 1.5


def sample(n):
    labels = torch.randint(0, n_classes, (n,))
    return centres[labels] + torch.randn(n, dim), labels


def augment(x):
    return x + 0.3 * torch.randn_like(x)


model = Encoder()
criterion = SupConLoss(temperature=0.1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)

for step in range(40):
    images, labels = sample(64)
    images = torch.cat([augment(images), augment(images)], dim=0)
    bsz = labels.shape[0]
    features = model(images)
    f1, f2 = torch.split(features, [bsz, bsz], dim=0)
    features = torch.cat([f1.unsqueeze(1), f2.unsqueeze(1)], dim=1)
    loss = criterion(features, labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 10 == 0:
        print('Train: [{0}][{1}/{2}]\tloss {loss:.3f}'.format(0, step, 40, loss=loss.item()))

simclr = SupConLoss(temperature=0.5)(features.detach())
print(f"unsupervised (SimCLR) form: {simclr.item():.4f}, one-anchor mode: "
      f"{SupConLoss(contrast_mode='one')(features.detach(), labels).item():.4f}")
try:
    SupConLoss()(features[:, 0])
except ValueError as e:
    print(f"ValueError: {e}")

# --- triplet training: the built-in loss and the hand-written one agree ------------------
anchor, positive, negative = torch.randn(8, 5), torch.randn(8, 5), torch.randn(8, 5)
builtin = nn.TripletMarginLoss(margin=1.0, p=2)(anchor, positive, negative)


def triplet_loss(anchor, positive, negative, margin=1.0):
    distance_positive = F.pairwise_distance(anchor, positive)
    distance_negative = F.pairwise_distance(anchor, negative)
    losses = torch.relu(distance_positive - distance_negative + margin)
    return losses.mean()


print(f"triplet: builtin {builtin.item():.5f} by hand {triplet_loss(anchor, positive, negative).item():.5f}")
print(f"swap: {nn.TripletMarginLoss(margin=0.5, swap=True, reduction='sum')(anchor, positive, negative):.5f}")
cos = nn.CosineEmbeddingLoss(margin=0.2)
target = torch.tensor([1, -1, 1, -1, 1, 1, -1, -1])
print(f"cosine embedding: {cos(anchor, positive, target).item():.5f} "
      f"none: {nn.CosineEmbeddingLoss(reduction='none')(anchor, negative, target)}")

embedder = nn.Sequential(nn.Linear(dim, 32), nn.ReLU(), nn.Linear(32, 8))
triplet = nn.TripletMarginLoss(margin=0.5)
opt = torch.optim.Adam(embedder.parameters(), lr=3e-3)
for step in range(60):
    x, y = sample(96)
    emb = F.normalize(embedder(x), dim=1)
    # batch-hard mining: furthest positive, closest negative
    dist = torch.cdist(emb, emb)
    same = y.unsqueeze(0) == y.unsqueeze(1)
    hardest_pos = (dist * same.float()).argmax(1)
    hardest_neg = dist.masked_fill(same, float('inf')).argmin(1)
    loss = triplet(emb, emb[hardest_pos], emb[hardest_neg])
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 15 == 0:
        print(f"triplet step {step:2d} loss {loss.item():.4f}")


@torch.no_grad()
def recall_at_k(embed_fn, ks=(1, 5)):
    gallery, g_labels = sample(120)
    queries, q_labels = sample(60)
    g, q = embed_fn(gallery), embed_fn(queries)
    dists = torch.cdist(q, g, p=2.0)
    topk = dists.topk(max(ks), dim=1, largest=False).indices
    hits = g_labels[topk] == q_labels.unsqueeze(1)
    return {k: hits[:, :k].any(1).float().mean().item() for k in ks}


for name, fn in (("supcon", model), ("triplet", lambda x: F.normalize(embedder(x), dim=1))):
    r = recall_at_k(fn)
    print(f"{name} recall@1 {r[1]:.3f} recall@5 {r[5]:.3f}")
