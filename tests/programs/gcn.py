"""A two-layer GCN (Kipf & Welling) on a random stochastic-block-model graph, in the style
of pygcn / the PyG intro: edge_index, degrees by torch.bincount and index_add_, symmetric
D^-1/2 (A+I) D^-1/2 normalisation with masked inf, propagation by a dense normalised
adjacency (index_put_) checked against index_add_ message passing, and node
classification accuracy on train/val/test masks."""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser()
parser.add_argument('--no-cuda', action='store_true', default=False, help='Disables CUDA training.')
parser.add_argument('--seed', type=int, default=42, help='Random seed.')
parser.add_argument('--epochs', type=int, default=100, help='Number of epochs to train.')
parser.add_argument('--lr', type=float, default=0.01, help='Initial learning rate.')
parser.add_argument('--weight_decay', type=float, default=5e-4, help='Weight decay (L2 loss on parameters).')
parser.add_argument('--hidden', type=int, default=16, help='Number of hidden units.')
parser.add_argument('--dropout', type=float, default=0.5, help='Dropout rate (1 - keep probability).')
args = parser.parse_args()
args.cuda = not args.no_cuda and torch.cuda.is_available()

torch.manual_seed(args.seed)
device = torch.device('cuda' if args.cuda else 'cpu')


def stochastic_block_graph(n_per_class=40, n_classes=3, p_in=0.2, p_out=0.01, n_feat=20):
    n = n_per_class * n_classes
    labels = torch.arange(n_classes).repeat_interleave(n_per_class)
    same = labels[:, None] == labels[None, :]
    prob = torch.where(same, torch.tensor(p_in), torch.tensor(p_out))
    adj = torch.rand(n, n) < prob
    adj = torch.triu(adj, diagonal=1)
    adj = adj | adj.t()
    edge_index = adj.nonzero().t().contiguous()
    # noisy class-dependent features
    centers = torch.randn(n_classes, n_feat)
    x = centers[labels] + 2.0 * torch.randn(n, n_feat)
    return x, edge_index, labels


def gcn_norm(edge_index, num_nodes, add_self_loops=True):
    if add_self_loops:
        loops = torch.arange(num_nodes).unsqueeze(0).repeat(2, 1)
        edge_index = torch.cat([edge_index, loops], dim=1)
    row, col = edge_index[0], edge_index[1]
    edge_weight = torch.ones(edge_index.size(1))
    deg = torch.zeros(num_nodes).index_add_(0, col, edge_weight)
    assert torch.equal(deg.long(), torch.bincount(col, minlength=num_nodes))
    deg_inv_sqrt = deg.pow(-0.5)
    deg_inv_sqrt.masked_fill_(deg_inv_sqrt == float('inf'), 0)
    norm = deg_inv_sqrt[row] * edge_weight * deg_inv_sqrt[col]
    return edge_index, norm


class GraphConvolution(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super(GraphConvolution, self).__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = nn.Parameter(torch.FloatTensor(in_features, out_features))
        if bias:
            self.bias = nn.Parameter(torch.FloatTensor(out_features))
        else:
            self.register_parameter('bias', None)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1. / (self.weight.size(1) ** 0.5)
        self.weight.data.uniform_(-stdv, stdv)
        if self.bias is not None:
            self.bias.data.uniform_(-stdv, stdv)

    def forward(self, input, adj):
        support = torch.mm(input, self.weight)
        output = torch.mm(adj, support)
        if self.bias is not None:
            return output + self.bias
        return output

    def __repr__(self):
        return self.__class__.__name__ + ' (' + str(self.in_features) + ' -> ' \
            + str(self.out_features) + ')'


class GCN(nn.Module):
    def __init__(self, nfeat, nhid, nclass, dropout):
        super(GCN, self).__init__()
        self.gc1 = GraphConvolution(nfeat, nhid)
        self.gc2 = GraphConvolution(nhid, nclass)
        self.dropout = dropout

    def forward(self, x, adj):
        x = F.relu(self.gc1(x, adj))
        x = F.dropout(x, self.dropout, training=self.training)
        x = self.gc2(x, adj)
        return F.log_softmax(x, dim=1)


def accuracy(output, labels):
    preds = output.max(1)[1].type_as(labels)
    correct = preds.eq(labels).double()
    correct = correct.sum()
    return correct / len(labels)


features, edge_index, labels = stochastic_block_graph()
n = features.size(0)
print(f"nodes {n}, edges {edge_index.size(1)}, classes {int(labels.max()) + 1}")
ei, norm = gcn_norm(edge_index, n)
adj = torch.zeros(n, n).index_put_((ei[1], ei[0]), norm, accumulate=True)
print(adj.shape, adj.dtype, f"density {(adj != 0).float().mean().item():.4f}")
print("symmetric:", torch.allclose(adj, adj.t()))

# the dense product is the same as message passing with index_add_
h = torch.randn(n, 4)
msg = torch.zeros(n, 4).index_add_(0, ei[1], norm.view(-1, 1) * h[ei[0]])
print("mm == index_add_:", torch.allclose(torch.mm(adj, h), msg, atol=1e-5))

perm = torch.randperm(n)
train_mask = torch.zeros(n, dtype=torch.bool)
val_mask = torch.zeros(n, dtype=torch.bool)
test_mask = torch.zeros(n, dtype=torch.bool)
train_mask[perm[:30]] = True
val_mask[perm[30:60]] = True
test_mask[perm[60:]] = True
print("masks", int(train_mask.sum()), int(val_mask.sum()), int(test_mask.sum()))

model = GCN(nfeat=features.shape[1], nhid=args.hidden, nclass=int(labels.max()) + 1,
            dropout=args.dropout)
print(model)
optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
model, features, adj, labels = model.to(device), features.to(device), adj.to(device), labels.to(device)


def train(epoch):
    t = time.time()
    model.train()
    optimizer.zero_grad()
    output = model(features, adj)
    loss_train = F.nll_loss(output[train_mask], labels[train_mask])
    acc_train = accuracy(output[train_mask], labels[train_mask])
    loss_train.backward()
    optimizer.step()
    model.eval()
    output = model(features, adj)
    loss_val = F.nll_loss(output[val_mask], labels[val_mask])
    acc_val = accuracy(output[val_mask], labels[val_mask])
    if epoch % 20 == 0:
        print('Epoch: {:04d}'.format(epoch + 1),
              'loss_train: {:.4f}'.format(loss_train.item()),
              'acc_train: {:.4f}'.format(acc_train.item()),
              'loss_val: {:.4f}'.format(loss_val.item()),
              'acc_val: {:.4f}'.format(acc_val.item()),
              'time: {:.4f}s'.format(time.time() - t))


def test():
    model.eval()
    output = model(features, adj)
    loss_test = F.nll_loss(output[test_mask], labels[test_mask])
    acc_test = accuracy(output[test_mask], labels[test_mask])
    print("Test set results:",
          "loss= {:.4f}".format(loss_test.item()),
          "accuracy= {:.4f}".format(acc_test.item()))


t_total = time.time()
for epoch in range(args.epochs):
    train(epoch)
print("Optimization Finished!")
test()
