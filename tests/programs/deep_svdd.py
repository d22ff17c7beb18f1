"""Deep SVDD anomaly detection (in the manner of lukasruff/Deep-SVDD-PyTorch): a bias-free
LeNet-style encoder (Conv2d/Linear with bias=False, BatchNorm2d(affine=False),
F.leaky_relu), an autoencoder pretraining whose encoder weights are copied into the
SVDD net through state_dict filtering, the hypersphere centre c computed under
torch.no_grad() with the eps adjustment `c[(abs(c) < eps) & (c < 0)] = -eps`, the
one-class and soft-boundary objectives (radius R updated as a quantile of the sqrt
distances via np.quantile and torch.quantile), Adam with amsgrad and MultiStepLR, and a
ROC-AUC computed by hand with argsort/cumsum (checked against the rank-sum formula).
Normal class: smooth blobs; anomalies: stripes."""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class BaseNet(nn.Module):
    """Base class for all neural networks."""

    def __init__(self):
        super().__init__()
        self.rep_dim = None  # representation dimensionality, i.e. dim of the last layer

    def summary(self):
        """Network summary."""
        net_parameters = filter(lambda p: p.requires_grad, self.parameters())
        params = sum([np.prod(p.size()) for p in net_parameters])
        print('Trainable parameters: {}'.format(params))
        print(self)


class MNIST_LeNet(BaseNet):

    def __init__(self):
        super().__init__()

        self.rep_dim = 32
        self.pool = nn.MaxPool2d(2, 2)

        self.conv1 = nn.Conv2d(1, 4, 5, bias=False, padding=2)
        self.bn1 = nn.BatchNorm2d(4, eps=1e-04, affine=False)
        self.conv2 = nn.Conv2d(4, 8, 5, bias=False, padding=2)
        self.bn2 = nn.BatchNorm2d(8, eps=1e-04, affine=False)
        self.fc1 = nn.Linear(8 * 4 * 4, self.rep_dim, bias=False)

    def forward(self, x):
        x = self.conv1(x)
        x = self.pool(F.leaky_relu(self.bn1(x)))
        x = self.conv2(x)
        x = self.pool(F.leaky_relu(self.bn2(x)))
        x = x.view(x.size(0), -1)
        x = self.fc1(x)
        return x


class MNIST_LeNet_Autoencoder(BaseNet):

    def __init__(self):
        super().__init__()

        self.rep_dim = 32
        self.pool = nn.MaxPool2d(2, 2)

        # Encoder (must match the Deep SVDD network above)
        self.conv1 = nn.Conv2d(1, 4, 5, bias=False, padding=2)
        self.bn1 = nn.BatchNorm2d(4, eps=1e-04, affine=False)
        self.conv2 = nn.Conv2d(4, 8, 5, bias=False, padding=2)
        self.bn2 = nn.BatchNorm2d(8, eps=1e-04, affine=False)
        self.fc1 = nn.Linear(8 * 4 * 4, self.rep_dim, bias=False)

        # Decoder
        self.deconv1 = nn.ConvTranspose2d(2, 8, 5, bias=False, padding=2)
        self.bn3 = nn.BatchNorm2d(8, eps=1e-04, affine=False)
        self.deconv2 = nn.ConvTranspose2d(8, 4, 5, bias=False, padding=2)
        self.bn4 = nn.BatchNorm2d(4, eps=1e-04, affine=False)
        self.deconv3 = nn.ConvTranspose2d(4, 1, 5, bias=False, padding=2)

    def forward(self, x):
        x = self.conv1(x)
        x = self.pool(F.leaky_relu(self.bn1(x)))
        x = self.conv2(x)
        x = self.pool(F.leaky_relu(self.bn2(x)))
        x = x.view(x.size(0), -1)
        x = self.fc1(x)
        x = x.view(x.size(0), int(self.rep_dim / 16), 4, 4)
        x = F.interpolate(F.leaky_relu(x), scale_factor=2)
        x = self.deconv1(x)
        x = F.interpolate(F.leaky_relu(self.bn3(x)), scale_factor=2)
        x = self.deconv2(x)
        x = F.leaky_relu(self.bn4(x))
        x = self.deconv3(x)
        x = torch.sigmoid(x)
        return x


def init_center_c(train_x, net, eps=0.1):
    """Initialize hypersphere center c as the mean from an initial forward pass on the data."""
    n_samples = 0
    c = torch.zeros(net.rep_dim)

    net.eval()
    with torch.no_grad():
        for inputs in train_x.split(16):
            # get the inputs of the batch
            outputs = net(inputs)
            n_samples += outputs.shape[0]
            c += torch.sum(outputs, dim=0)

    c /= n_samples

    # If c_i is too close to 0, set to +-eps. Reason: a zero unit can be trivially matched with zero weights.
    c[(abs(c) < eps) & (c < 0)] = -eps
    c[(abs(c) < eps) & (c > 0)] = eps

    return c


def get_radius(dist: torch.Tensor, nu: float):
    """Optimally solve for radius R via the (1-nu)-quantile of distances."""
    return np.quantile(np.sqrt(dist.clone().data.cpu().numpy()), 1 - nu)


def roc_auc(labels, scores):
    """Area under the ROC curve by sorting scores (ties ignored)."""
    order = torch.argsort(scores, descending=True)
    labels = labels[order].float()
    tps = torch.cumsum(labels, dim=0)
    fps = torch.cumsum(1 - labels, dim=0)
    tpr = torch.cat([torch.zeros(1), tps / tps[-1]])
    fpr = torch.cat([torch.zeros(1), fps / fps[-1]])
    return torch.trapezoid(tpr, fpr)


def rank_auc(labels, scores):
    ranks = torch.empty_like(scores)
    ranks[scores.argsort()] = torch.arange(1, len(scores) + 1, dtype=scores.dtype)
    n_pos = labels.sum()
    n_neg = len(labels) - n_pos
    return (ranks[labels.bool()].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def make_images(n, kind, rng):
    yy, xx = np.mgrid[0:16, 0:16].astype(np.float32)
    imgs = np.zeros((n, 1, 16, 16), np.float32)
    for i in range(n):
        if kind == 'normal':
            cy, cx = rng.uniform(4, 12, 2)
            imgs[i, 0] = np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / 8.0)
        else:
            period = rng.integers(3, 6)
            imgs[i, 0] = ((xx + rng.integers(0, period)) % period < 1).astype(np.float32)
        imgs[i, 0] += rng.normal(0, 0.05, (16, 16))
    return torch.from_numpy(imgs.clip(0, 1))


def main():
    parser = argparse.ArgumentParser(description='Deep SVDD')
    parser.add_argument('--ae_epochs', type=int, default=4)
    parser.add_argument('--epochs', type=int, default=6)
    parser.add_argument('--nu', type=float, default=0.1)
    args = parser.parse_args()
    torch.manual_seed(0)
    rng = np.random.default_rng(0)

    train_x = make_images(64, 'normal', rng)
    test_x = torch.cat([make_images(24, 'normal', rng), make_images(24, 'anomaly', rng)])
    test_y = torch.cat([torch.zeros(24, dtype=torch.long), torch.ones(24, dtype=torch.long)])
    print('train', train_x.shape, 'mean %.4f' % train_x.mean().item(), 'test', test_x.shape)

    ae_net = MNIST_LeNet_Autoencoder()
    ae_net.summary()
    ae_optimizer = torch.optim.Adam(ae_net.parameters(), lr=1e-3, weight_decay=1e-6, amsgrad=True)
    ae_scheduler = torch.optim.lr_scheduler.MultiStepLR(ae_optimizer, milestones=[3], gamma=0.1)
    ae_net.train()
    for epoch in range(args.ae_epochs):
        loss_epoch, n_batches = 0.0, 0
        for inputs in train_x[torch.randperm(len(train_x))].split(16):
            ae_optimizer.zero_grad()
            outputs = ae_net(inputs)
            scores = torch.sum((outputs - inputs) ** 2, dim=tuple(range(1, outputs.dim())))
            loss = torch.mean(scores)
            loss.backward()
            ae_optimizer.step()
            loss_epoch += loss.item()
            n_batches += 1
        ae_scheduler.step()
        print('  AE Epoch {}/{}\t Loss: {:.8f}'.format(epoch + 1, args.ae_epochs, loss_epoch / n_batches))

    net = MNIST_LeNet()
    net_dict = net.state_dict()
    ae_net_dict = ae_net.state_dict()
    # Filter out decoder network keys
    ae_net_dict = {k: v for k, v in ae_net_dict.items() if k in net_dict}
    print('copied keys', sorted(ae_net_dict))
    net_dict.update(ae_net_dict)
    net.load_state_dict(net_dict)
    print('bn1 running_var', net.bn1.running_var, 'batches tracked', net.bn1.num_batches_tracked)

    c = init_center_c(train_x, net)
    print('center c', c)
    print('near-zero entries set to +-eps:', int((c.abs() == 0.1).sum()))

    results = {}
    for objective in ['one-class', 'soft-boundary']:
        torch.manual_seed(1)
        model = MNIST_LeNet()
        model.load_state_dict(net_dict)
        R = torch.tensor(0.0)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-6, amsgrad=True)
        scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[4], gamma=0.1)
        model.train()
        for epoch in range(args.epochs):
            loss_epoch, n_batches = 0.0, 0
            for inputs in train_x[torch.randperm(len(train_x))].split(16):
                optimizer.zero_grad()
                outputs = model(inputs)
                dist = torch.sum((outputs - c) ** 2, dim=1)
                if objective == 'soft-boundary':
                    scores = dist - R ** 2
                    loss = R ** 2 + (1 / args.nu) * torch.mean(torch.max(torch.zeros_like(scores), scores))
                else:
                    loss = torch.mean(dist)
                loss.backward()
                optimizer.step()
                if objective == 'soft-boundary' and epoch >= 2:
                    R.data = torch.tensor(get_radius(dist, args.nu))
                loss_epoch += loss.item()
                n_batches += 1
            scheduler.step()
            print('{} Epoch {}/{}\t Loss: {:.8f}\t R: {:.4f}'.format(
                objective, epoch + 1, args.epochs, loss_epoch / n_batches, R.item()))

        model.eval()
        with torch.no_grad():
            outputs = model(test_x)
            dist = torch.sum((outputs - c) ** 2, dim=1)
            scores = dist - R ** 2 if objective == 'soft-boundary' else dist
        auc = roc_auc(test_y, scores)
        results[objective] = auc.item()
        print('{} Test set AUC: {:.2f}%  rank-sum AUC: {:.2f}%'.format(
            objective, 100. * auc.item(), 100. * rank_auc(test_y, scores).item()))
        q = torch.quantile(dist.sqrt(), torch.tensor([0.5, 1 - args.nu]))
        print('{} sqrt-dist quantiles {} R from np {:.4f}'.format(
            objective, q.shape, get_radius(dist, args.nu)))

    print('AUC (fixed scores)', roc_auc(torch.tensor([0, 0, 1, 1, 0, 1]),
                                        torch.tensor([0.1, 0.4, 0.35, 0.8, 0.2, 0.9])))


if __name__ == '__main__':
    main()
