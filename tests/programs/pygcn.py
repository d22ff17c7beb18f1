"""Kipf's pygcn (github.com/tkipf/pygcn), as written: scipy.sparse features and adjacency
(`sp.coo_matrix`, symmetrised, row-normalised with `np.power(rowsum, -1)` and
`sp.diags`), `sparse_mx_to_torch_sparse_tensor` (`torch.from_numpy(np.vstack(...))`,
`torch.sparse.FloatTensor(indices, values, shape)`), GraphConvolution with
`torch.spmm(adj, support)`, Adam with weight decay, accuracy. The Cora files are
replaced by a random citation-like graph (a planted partition with class-dependent
bag-of-words features), so the program needs no download."""
import argparse
import time

import numpy as np
import scipy.sparse as sp
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.nn.parameter import Parameter

parser = argparse.ArgumentParser()
parser.add_argument('--no-cuda', action='store_true', default=False,
                    help='Disables CUDA training.')
parser.add_argument('--fastmode', action='store_true', default=False,
                    help='Validate during training pass.')
parser.add_argument('--seed', type=int, default=42, help='Random seed.')
parser.add_argument('--epochs', type=int, default=120,
                    help='Number of epochs to train.')
parser.add_argument('--lr', type=float, default=0.01,
                    help='Initial learning rate.')
parser.add_argument('--weight_decay', type=float, default=5e-4,
                    help='Weight decay (L2 loss on parameters).')
parser.add_argument('--hidden', type=int, default=16,
                    help='Number of hidden units.')
parser.add_argument('--dropout', type=float, default=0.5,
                    help='Dropout rate (1 - keep probability).')

args = parser.parse_args()
args.cuda = not args.no_cuda and torch.cuda.is_available()

np.random.seed(args.seed)
torch.manual_seed(args.seed)
if args.cuda:
    torch.cuda.manual_seed(args.seed)


# -- utils.py ---------------------------------------------------------------------------

def encode_onehot(labels):
    classes = sorted(set(labels))
    classes_dict = {c: np.identity(len(classes))[i, :] for i, c in
                    enumerate(classes)}
    labels_onehot = np.array(list(map(classes_dict.get, labels)),
                             dtype=np.int32)
    return labels_onehot


def make_citation_graph(n_per_class=60, n_classes=4, n_words=120, p_in=0.05, p_out=0.004):
    """Cora-like content and cites: (idx, words..., label) rows and (cited, citing) pairs."""
    rng = np.random.RandomState(0)
    n = n_per_class * n_classes
    label_names = np.array([f"topic_{c}" for c in range(n_classes)])
    y = np.repeat(np.arange(n_classes), n_per_class)
    ids = rng.permutation(10 * n)[:n] + 1000  # paper ids, as in cora.content
    topic_words = rng.rand(n_classes, n_words) < 0.12
    words = (rng.rand(n, n_words) < 0.02) | (topic_words[y] & (rng.rand(n, n_words) < 0.5))
    content = np.column_stack([ids.astype(str), words.astype(int).astype(str),
                               label_names[y]])
    same = y[:, None] == y[None, :]
    links = np.triu(rng.rand(n, n) < np.where(same, p_in, p_out), 1)
    src, dst = np.nonzero(links)
    cites = np.column_stack([ids[src], ids[dst]])
    return content, cites


def load_data():
    """Load the citation network (pygcn's load_data, from arrays instead of files)."""
    print('Loading citation dataset...')
    idx_features_labels, edges_unordered = make_citation_graph()
    features = sp.csr_matrix(idx_features_labels[:, 1:-1], dtype=np.float32)
    labels = encode_onehot(idx_features_labels[:, -1])

    # build graph
    idx = np.array(idx_features_labels[:, 0], dtype=np.int32)
    idx_map = {j: i for i, j in enumerate(idx)}
    edges = np.array(list(map(idx_map.get, edges_unordered.flatten())),
                     dtype=np.int32).reshape(edges_unordered.shape)
    adj = sp.coo_matrix((np.ones(edges.shape[0]), (edges[:, 0], edges[:, 1])),
                        shape=(labels.shape[0], labels.shape[0]),
                        dtype=np.float32)

    # build symmetric adjacency matrix
    adj = adj + adj.T.multiply(adj.T > adj) - adj.multiply(adj.T > adj)

    features = normalize(features)
    adj = normalize(adj + sp.eye(adj.shape[0]))

    perm = np.random.permutation(labels.shape[0])
    idx_train = perm[:60]
    idx_val = perm[60:120]
    idx_test = perm[120:]

    features = torch.FloatTensor(np.array(features.todense()))
    labels = torch.LongTensor(np.where(labels)[1])
    adj = sparse_mx_to_torch_sparse_tensor(adj)

    idx_train = torch.LongTensor(idx_train)
    idx_val = torch.LongTensor(idx_val)
    idx_test = torch.LongTensor(idx_test)

    return adj, features, labels, idx_train, idx_val, idx_test


def normalize(mx):
    """Row-normalize sparse matrix"""
    rowsum = np.array(mx.sum(1))
    r_inv = np.power(rowsum, -1).flatten()
    r_inv[np.isinf(r_inv)] = 0.
    r_mat_inv = sp.diags(r_inv)
    mx = r_mat_inv.dot(mx)
    return mx


def accuracy(output, labels):
    preds = output.max(1)[1].type_as(labels)
    correct = preds.eq(labels).double()
    correct = correct.sum()
    return correct / len(labels)


def sparse_mx_to_torch_sparse_tensor(sparse_mx):
    """Convert a scipy sparse matrix to a torch sparse tensor."""
    sparse_mx = sparse_mx.tocoo().astype(np.float32)
    indices = torch.from_numpy(
        np.vstack((sparse_mx.row, sparse_mx.col)).astype(np.int64))
    values = torch.from_numpy(sparse_mx.data)
    shape = torch.Size(sparse_mx.shape)
    return torch.sparse.FloatTensor(indices, values, shape)


# -- layers.py and models.py ------------------------------------------------------------

class GraphConvolution(nn.Module):
    """
    Simple GCN layer, similar to https://arxiv.org/abs/1609.02907
    """

    def __init__(self, in_features, out_features, bias=True):
        super(GraphConvolution, self).__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(torch.FloatTensor(in_features, out_features))
        if bias:
            self.bias = Parameter(torch.FloatTensor(out_features))
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
        output = torch.spmm(adj, support)
        if self.bias is not None:
            return output + self.bias
        else:
            return output

    def __repr__(self):
        return self.__class__.__name__ + ' (' \
               + str(self.in_features) + ' -> ' \
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


# -- train.py ---------------------------------------------------------------------------

# Load data
adj, features, labels, idx_train, idx_val, idx_test = load_data()

# what the sparse adjacency is, and that the usual sparse calls agree with dense algebra
print("adj", adj.layout, adj.is_sparse, tuple(adj.shape), adj.dtype, "nnz", adj._nnz(),
      "coalesced", adj.is_coalesced(), "dims", adj.sparse_dim(), adj.dense_dim())
adj_c = adj.coalesce()
print("coalesced", adj_c.is_coalesced(), tuple(adj_c.indices().shape), adj_c.values().dtype)
print("row sums", torch.sparse.sum(adj, dim=1).to_dense()[:5])
dense_adj = adj.to_dense()
x = torch.randn(adj.shape[0], 3)
print("spmm == mm:", torch.allclose(torch.spmm(adj, x), dense_adj @ x, atol=1e-6),
      torch.allclose(torch.sparse.mm(adj, x), adj @ x, atol=1e-6))
again = dense_adj.to_sparse()
print("to_sparse round trip:", again.is_coalesced(), again._nnz() == adj_c._nnz(),
      torch.equal(again.indices(), adj_c.indices()))
small = torch.sparse_coo_tensor(adj_c.indices()[:, :4], adj_c.values()[:4] * 2, (3, 250))
print(small)
print(small.t().coalesce())

# Model and optimizer
model = GCN(nfeat=features.shape[1],
            nhid=args.hidden,
            nclass=labels.max().item() + 1,
            dropout=args.dropout)
print(model)
optimizer = optim.Adam(model.parameters(),
                       lr=args.lr, weight_decay=args.weight_decay)

if args.cuda:
    model.cuda()
    features = features.cuda()
    adj = adj.cuda()
    labels = labels.cuda()
    idx_train = idx_train.cuda()
    idx_val = idx_val.cuda()
    idx_test = idx_test.cuda()


def train(epoch):
    t = time.time()
    model.train()
    optimizer.zero_grad()
    output = model(features, adj)
    loss_train = F.nll_loss(output[idx_train], labels[idx_train])
    acc_train = accuracy(output[idx_train], labels[idx_train])
    loss_train.backward()
    optimizer.step()

    if not args.fastmode:
        # Evaluate validation set performance separately,
        # deactivates dropout during validation run.
        model.eval()
        output = model(features, adj)

    loss_val = F.nll_loss(output[idx_val], labels[idx_val])
    acc_val = accuracy(output[idx_val], labels[idx_val])
    if epoch % 20 == 0:
        print('Epoch: {:04d}'.format(epoch+1),
              'loss_train: {:.4f}'.format(loss_train.item()),
              'acc_train: {:.4f}'.format(acc_train.item()),
              'loss_val: {:.4f}'.format(loss_val.item()),
              'acc_val: {:.4f}'.format(acc_val.item()),
              'time: {:.4f}s'.format(time.time() - t))


def test():
    model.eval()
    output = model(features, adj)
    loss_test = F.nll_loss(output[idx_test], labels[idx_test])
    acc_test = accuracy(output[idx_test], labels[idx_test])
    print("Test set results:",
          "loss= {:.4f}".format(loss_test.item()),
          "accuracy= {:.4f}".format(acc_test.item()))
    print("test accuracy {:.4f}".format(acc_test.item()))


# Train model
t_total = time.time()
for epoch in range(args.epochs):
    train(epoch)
print("Optimization Finished!")
print("Total time elapsed: {:.4f}s".format(time.time() - t_total))

# Testing
test()
