"""Prototypical networks for few-shot classification (in the manner of jakesnell/prototypical-
networks and orobix/Prototypical-Networks-for-Few-shot-Learning): a conv4 encoder
(conv-BN-ReLU-maxpool blocks, Flatten), episodes sampled with torch.randperm (an
N-way K-shot sampler yielding index batches), prototypes as the mean over support
embeddings, squared euclidean distances (the `euclidean_dist` helper with expand, and
torch.cdist(...).pow(2)), log_softmax over negative distances, gather of the true
class's log-probability, accuracy via argmax/eq/float().mean(), Adam with StepLR, and a
95% confidence interval over test episodes. Gaussian-cluster "images" stand in for
Omniglot."""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def conv_block(in_channels, out_channels):
    '''
    returns a block conv-bn-relu-pool
    '''
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, 3, padding=1),
        nn.BatchNorm2d(out_channels),
        nn.ReLU(),
        nn.MaxPool2d(2)
    )


class ProtoNet(nn.Module):
    '''
    Model as described in the reference paper,
    source: https://github.com/jakesnell/prototypical-networks/blob/f0c48808e496989d01db59f86d4449d7aee9ab0c/protonets/models/few_shot.py#L62-L84
    '''
    def __init__(self, x_dim=1, hid_dim=16, z_dim=16):
        super(ProtoNet, self).__init__()
        self.encoder = nn.Sequential(
            conv_block(x_dim, hid_dim),
            conv_block(hid_dim, hid_dim),
            conv_block(hid_dim, z_dim),
            nn.Flatten(),
        )

    def forward(self, x):
        x = self.encoder(x)
        return x.view(x.size(0), -1)


def euclidean_dist(x, y):
    '''
    Compute euclidean distance between two tensors
    '''
    # x: N x D
    # y: M x D
    n = x.size(0)
    m = y.size(0)
    d = x.size(1)
    if d != y.size(1):
        raise Exception

    x = x.unsqueeze(1).expand(n, m, d)
    y = y.unsqueeze(0).expand(n, m, d)

    return torch.pow(x - y, 2).sum(2)


def prototypical_loss(input, target, n_support):
    '''
    Inspired by https://github.com/jakesnell/prototypical-networks/blob/master/protonets/models/few_shot.py

    Compute the barycentres by averaging the features of n_support
    samples for each class in target, computes then the distances from each
    samples' features to each one of the barycentres, computes the
    log_probability for each n_query samples for each one of the current
    classes, of appartaining to a class c, loss and accuracy are then computed
    and returned
    '''
    target_cpu = target.to('cpu')
    input_cpu = input.to('cpu')

    def supp_idxs(c):
        # FIXME when torch will support where as np
        return target_cpu.eq(c).nonzero()[:n_support].squeeze(1)

    # FIXME when torch.unique will be available on cuda too
    classes = torch.unique(target_cpu)
    n_classes = len(classes)
    # FIXME when torch will support where as np
    # assuming n_query, n_target constants
    n_query = target_cpu.eq(classes[0].item()).sum().item() - n_support

    support_idxs = list(map(supp_idxs, classes))

    prototypes = torch.stack([input_cpu[idx_list].mean(0) for idx_list in support_idxs])
    # FIXME when torch will support where as np
    query_idxs = torch.stack(list(map(lambda c: target_cpu.eq(c).nonzero()[n_support:], classes))).view(-1)

    query_samples = input.to('cpu')[query_idxs]
    dists = euclidean_dist(query_samples, prototypes)

    log_p_y = F.log_softmax(-dists, dim=1).view(n_classes, n_query, -1)

    target_inds = torch.arange(0, n_classes)
    target_inds = target_inds.view(n_classes, 1, 1)
    target_inds = target_inds.expand(n_classes, n_query, 1).long()

    loss_val = -log_p_y.gather(2, target_inds).squeeze().view(-1).mean()
    _, y_hat = log_p_y.max(2)
    acc_val = y_hat.eq(target_inds.squeeze(2)).float().mean()

    return loss_val, acc_val


class PrototypicalBatchSampler(object):
    '''
    PrototypicalBatchSampler: yield a batch of indexes at each iteration.
    Indexes are calculated by keeping in account 'classes_per_it' and 'num_samples',
    In fact at every iteration the batch indexes will refer to  'num_support' + 'num_query' samples
    for 'classes_per_it' random classes.

    __len__ returns the number of episodes per epoch (same as 'self.iterations').
    '''

    def __init__(self, labels, classes_per_it, num_samples, iterations):
        super(PrototypicalBatchSampler, self).__init__()
        self.labels = labels
        self.classes_per_it = classes_per_it
        self.sample_per_class = num_samples
        self.iterations = iterations

        self.classes, self.counts = np.unique(self.labels, return_counts=True)
        self.classes = torch.LongTensor(self.classes)

        # create a matrix, indexes, of dim: classes X max(elements per class)
        # fill it with nans
        # for every class c, fill the relative row with the indices samples belonging to c
        # in numel_per_class we store the number of samples for each class/row
        self.idxs = range(len(self.labels))
        self.indexes = np.empty((len(self.classes), max(self.counts)), dtype=int) * np.nan
        self.indexes = torch.Tensor(self.indexes)
        self.numel_per_class = torch.zeros_like(self.classes)
        for idx, label in enumerate(self.labels):
            label_idx = np.argwhere(self.classes == label).item()
            self.indexes[label_idx, np.where(np.isnan(self.indexes[label_idx]))[0][0]] = idx
            self.numel_per_class[label_idx] += 1

    def __iter__(self):
        '''
        yield a batch of indexes
        '''
        spc = self.sample_per_class
        cpi = self.classes_per_it

        for it in range(self.iterations):
            batch_size = spc * cpi
            batch = torch.LongTensor(batch_size)
            c_idxs = torch.randperm(len(self.classes))[:cpi]
            for i, c in enumerate(self.classes[c_idxs]):
                s = slice(i * spc, (i + 1) * spc)
                # FIXME when torch.argwhere will exists
                label_idx = torch.arange(len(self.classes)).long()[self.classes == c].item()
                sample_idxs = torch.randperm(self.numel_per_class[label_idx])[:spc]
                batch[s] = self.indexes[label_idx][sample_idxs]
            batch = batch[torch.randperm(len(batch))]
            yield batch

    def __len__(self):
        '''
        returns the number of iterations (episodes) per epoch
        '''
        return self.iterations


def protonet_episode(model, xs, xq):
    """jakesnell's loss: support (n_way, n_shot, ...) and query (n_way, n_query, ...)."""
    n_class, n_support, n_query = xs.size(0), xs.size(1), xq.size(1)
    target_inds = torch.arange(0, n_class).view(n_class, 1, 1).expand(n_class, n_query, 1).long()
    x = torch.cat([xs.view(n_class * n_support, *xs.size()[2:]),
                   xq.view(n_class * n_query, *xq.size()[2:])], 0)
    z = model(x)
    z_dim = z.size(-1)
    z_proto = z[:n_class * n_support].view(n_class, n_support, z_dim).mean(1)
    zq = z[n_class * n_support:]
    dists = torch.cdist(zq, z_proto).pow(2)
    log_p_y = F.log_softmax(-dists, dim=1).view(n_class, n_query, -1)
    loss_val = -log_p_y.gather(2, target_inds).squeeze().view(-1).mean()
    _, y_hat = log_p_y.max(2)
    acc_val = torch.eq(y_hat, target_inds.squeeze()).float().mean()
    return loss_val, {'loss': loss_val.item(), 'acc': acc_val.item()}


def make_dataset(n_classes, per_class, rng):
    """Each class: a fixed random 16x16 pattern plus noise."""
    protos = rng.normal(0, 1, (n_classes, 1, 16, 16)).astype(np.float32)
    x = np.repeat(protos, per_class, 0) + rng.normal(0, 0.8, (n_classes * per_class, 1, 16, 16))
    y = np.repeat(np.arange(n_classes), per_class)
    return torch.from_numpy(x.astype(np.float32)), y


def main():
    parser = argparse.ArgumentParser(description='protonets')
    parser.add_argument('--episodes', type=int, default=20)
    parser.add_argument('--way', type=int, default=5)
    parser.add_argument('--shot', type=int, default=2)
    parser.add_argument('--query', type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(7)
    rng = np.random.default_rng(7)

    train_x, train_y = make_dataset(12, 8, rng)
    test_x, test_y = make_dataset(6, 8, rng)
    print('train', tuple(train_x.shape), 'test', tuple(test_x.shape), 'class sizes', np.bincount(train_y))

    a = torch.randn(4, 3)
    b = torch.randn(2, 3)
    print('euclidean_dist', euclidean_dist(a, b))
    print('cdist^2', torch.cdist(a, b).pow(2))
    print('agree', torch.allclose(euclidean_dist(a, b), torch.cdist(a, b).pow(2), atol=1e-5))

    model = ProtoNet()
    print(model)
    print('embedding', model(train_x[:2]).shape)

    sampler = PrototypicalBatchSampler(train_y, args.way, args.shot + args.query, args.episodes)
    print('sampler indexes', sampler.indexes.shape, sampler.indexes.dtype, sampler.numel_per_class)
    dataloader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(train_x, torch.from_numpy(train_y)),
                                             batch_sampler=sampler)
    optim = torch.optim.Adam(params=model.parameters(), lr=1e-3)
    lr_scheduler = torch.optim.lr_scheduler.StepLR(optimizer=optim, gamma=0.5, step_size=10)

    train_loss, train_acc = [], []
    model.train()
    for i, (x, y) in enumerate(dataloader):
        optim.zero_grad()
        model_output = model(x)
        loss, acc = prototypical_loss(model_output, target=y, n_support=args.shot)
        loss.backward()
        optim.step()
        lr_scheduler.step()
        train_loss.append(loss.item())
        train_acc.append(acc.item())
        if i % 4 == 0:
            print('episode {} batch {} labels {} Avg Train Loss: {:.4f}, Avg Train Acc: {:.4f}'.format(
                i, tuple(x.shape), y.dtype, np.mean(train_loss[-4:]), np.mean(train_acc[-4:])))

    model.eval()
    accs = []
    with torch.no_grad():
        for ep in range(10):
            cls = torch.randperm(6)[:args.way]
            xs, xq = [], []
            for c in cls:
                idx = torch.from_numpy(np.flatnonzero(test_y == c.item()))
                idx = idx[torch.randperm(len(idx))]
                xs.append(test_x[idx[:args.shot]])
                xq.append(test_x[idx[args.shot:args.shot + args.query]])
            loss, out = protonet_episode(model, torch.stack(xs), torch.stack(xq))
            accs.append(out['acc'])
    accs = torch.tensor(accs)
    print('Test Acc: {:.4f} +- {:.4f}'.format(accs.mean().item(), 1.96 * accs.std().item() / np.sqrt(len(accs))))


if __name__ == '__main__':
    main()
