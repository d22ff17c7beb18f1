"""A graph transformer layer (Dwivedi & Bresson, "A Generalization of Transformer Networks to
Graphs", as graphdeeplearning/graphtransformer writes it, without DGL) and a GAT layer
(Velickovic et al.; as pyGAT's sparse version): edge-wise attention scores from index
gathers, a numerically safe softmax over each node's incoming edges with
scatter_reduce(reduce="amax", include_self=False) and index_add_, message passing with
torch.sparse_coo_tensor and torch.sparse.mm, Laplacian positional encodings from
torch.linalg.eigh, BatchNorm1d, and node classification on a synthetic stochastic block
model graph."""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def scatter_softmax(src, index, num_nodes):
    """softmax of `src` (E, H) over the edges that share a target node."""
    src_max = torch.full((num_nodes, src.size(1)), float('-inf'), dtype=src.dtype,
                         device=src.device)
    src_max = src_max.scatter_reduce(0, index.unsqueeze(-1).expand_as(src), src,
                                     reduce="amax", include_self=False)
    out = (src - src_max[index]).exp()
    denom = torch.zeros(num_nodes, src.size(1), dtype=src.dtype, device=src.device)
    denom.index_add_(0, index, out)
    return out / (denom[index] + 1e-16)


class MultiHeadAttentionLayer(nn.Module):
    def __init__(self, in_dim, out_dim, num_heads, use_bias):
        super().__init__()
        self.out_dim = out_dim
        self.num_heads = num_heads
        self.Q = nn.Linear(in_dim, out_dim * num_heads, bias=use_bias)
        self.K = nn.Linear(in_dim, out_dim * num_heads, bias=use_bias)
        self.V = nn.Linear(in_dim, out_dim * num_heads, bias=use_bias)

    def forward(self, h, edge_index):
        src, dst = edge_index
        N = h.size(0)
        Q_h = self.Q(h).view(-1, self.num_heads, self.out_dim)
        K_h = self.K(h).view(-1, self.num_heads, self.out_dim)
        V_h = self.V(h).view(-1, self.num_heads, self.out_dim)
        # src_dot_dst, scaled, clamped exp (as the reference's scaled_exp)
        score = (K_h[src] * Q_h[dst]).sum(-1, keepdim=True) / np.sqrt(self.out_dim)
        score = torch.exp(score.clamp(-5, 5))
        wV = torch.zeros_like(V_h).index_add_(0, dst, V_h[src] * score)
        z = torch.zeros(N, self.num_heads, 1, dtype=h.dtype).index_add_(0, dst, score)
        head_out = wV / (z + torch.full_like(z, 1e-6))
        return head_out


class GraphTransformerLayer(nn.Module):
    def __init__(self, in_dim, out_dim, num_heads, dropout=0.0, layer_norm=False,
                 batch_norm=True, residual=True, use_bias=False):
        super().__init__()
        self.in_channels = in_dim
        self.out_channels = out_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.residual = residual
        self.layer_norm = layer_norm
        self.batch_norm = batch_norm
        self.attention = MultiHeadAttentionLayer(in_dim, out_dim // num_heads, num_heads,
                                                 use_bias)
        self.O = nn.Linear(out_dim, out_dim)
        if self.layer_norm:
            self.layer_norm1 = nn.LayerNorm(out_dim)
        if self.batch_norm:
            self.batch_norm1 = nn.BatchNorm1d(out_dim)
        # FFN
        self.FFN_layer1 = nn.Linear(out_dim, out_dim * 2)
        self.FFN_layer2 = nn.Linear(out_dim * 2, out_dim)
        if self.layer_norm:
            self.layer_norm2 = nn.LayerNorm(out_dim)
        if self.batch_norm:
            self.batch_norm2 = nn.BatchNorm1d(out_dim)

    def forward(self, h, edge_index):
        h_in1 = h  # for first residual connection
        attn_out = self.attention(h, edge_index)
        h = attn_out.view(-1, self.out_channels)
        h = F.dropout(h, self.dropout, training=self.training)
        h = self.O(h)
        if self.residual:
            h = h_in1 + h  # residual connection
        if self.layer_norm:
            h = self.layer_norm1(h)
        if self.batch_norm:
            h = self.batch_norm1(h)
        h_in2 = h  # for second residual connection
        h = self.FFN_layer1(h)
        h = F.relu(h)
        h = F.dropout(h, self.dropout, training=self.training)
        h = self.FFN_layer2(h)
        if self.residual:
            h = h_in2 + h  # residual connection
        if self.layer_norm:
            h = self.layer_norm2(h)
        if self.batch_norm:
            h = self.batch_norm2(h)
        return h

    def __repr__(self):
        return '{}(in_channels={}, out_channels={}, heads={}, residual={})'.format(
            self.__class__.__name__, self.in_channels, self.out_channels, self.num_heads,
            self.residual)


class SpGraphAttentionLayer(nn.Module):
    """Sparse GAT layer: e_ij = LeakyReLU(a^T [W h_i || W h_j]), softmax over neighbours."""

    def __init__(self, in_features, out_features, dropout, alpha, concat=True):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.alpha = alpha
        self.concat = concat
        self.W = nn.Parameter(torch.zeros(size=(in_features, out_features)))
        nn.init.xavier_normal_(self.W.data, gain=1.414)
        self.a = nn.Parameter(torch.zeros(size=(1, 2 * out_features)))
        nn.init.xavier_normal_(self.a.data, gain=1.414)
        self.dropout = nn.Dropout(dropout)
        self.leakyrelu = nn.LeakyReLU(self.alpha)

    def forward(self, input, edge):
        N = input.size()[0]
        h = torch.mm(input, self.W)
        edge_h = torch.cat((h[edge[0, :], :], h[edge[1, :], :]), dim=1).t()
        edge_e = self.leakyrelu(self.a.mm(edge_h).squeeze())
        attention = scatter_softmax(edge_e.unsqueeze(1), edge[0], N).squeeze(1)
        attention = self.dropout(attention)
        # h_prime[i] = sum_j attention_ij h_j: a sparse (N, N) @ (N, F) over the edge list
        h_prime = torch.zeros_like(h).index_add_(0, edge[0], attention.unsqueeze(1) * h[edge[1]])
        if self.concat:
            return F.elu(h_prime)
        else:
            return h_prime

    def __repr__(self):
        return self.__class__.__name__ + ' (' + str(self.in_features) + ' -> ' + \
            str(self.out_features) + ')'


class GraphTransformerNet(nn.Module):
    def __init__(self, in_dim, hidden_dim, n_classes, num_heads=2, L=2, pos_enc_dim=4):
        super().__init__()
        self.embedding_h = nn.Linear(in_dim, hidden_dim)
        self.embedding_lap_pos_enc = nn.Linear(pos_enc_dim, hidden_dim)
        self.gat = SpGraphAttentionLayer(hidden_dim, hidden_dim, dropout=0.1, alpha=0.2)
        self.layers = nn.ModuleList([GraphTransformerLayer(hidden_dim, hidden_dim, num_heads)
                                     for _ in range(L)])
        self.MLP_layer = nn.Sequential(nn.Linear(hidden_dim, hidden_dim // 2), nn.ReLU(),
                                       nn.Linear(hidden_dim // 2, n_classes))

    def forward(self, h, edge_index, h_lap_pos_enc):
        h = self.embedding_h(h) + self.embedding_lap_pos_enc(h_lap_pos_enc)
        h = h + self.gat(h, edge_index)
        for conv in self.layers:
            h = conv(h, edge_index)
        return self.MLP_layer(h)


def laplacian_positional_encoding(edge_index, num_nodes, pos_enc_dim):
    A = torch.zeros(num_nodes, num_nodes)
    A[edge_index[0], edge_index[1]] = 1.0
    deg = A.sum(1).clamp(min=1)
    N = torch.diag(deg.pow(-0.5))
    L = torch.eye(num_nodes) - N @ A @ N
    EigVal, EigVec = torch.linalg.eigh(L)
    return EigVal, EigVec[:, 1:pos_enc_dim + 1]


def sbm_graph(n_per_block, n_blocks, p_in, p_out, seed):
    rng = np.random.RandomState(seed)
    n = n_per_block * n_blocks
    labels = np.repeat(np.arange(n_blocks), n_per_block)
    probs = np.where(labels[:, None] == labels[None, :], p_in, p_out)
    upper = np.triu(rng.rand(n, n) < probs, 1)
    adj = upper | upper.T
    src, dst = np.nonzero(adj | np.eye(n, dtype=bool))
    feats = rng.randn(n, 6).astype(np.float32)
    feats[:, 0] += 0.5 * labels
    return (torch.from_numpy(feats), torch.from_numpy(np.stack([src, dst])).long(),
            torch.from_numpy(labels).long())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--epochs', type=int, default=30)
    parser.add_argument('--lr', type=float, default=5e-3)
    parser.add_argument('--hidden', type=int, default=16)
    parser.add_argument('--pos_enc_dim', type=int, default=4)
    args = parser.parse_args()

    torch.manual_seed(41)
    np.random.seed(41)
    features, edge_index, labels = sbm_graph(20, 3, 0.3, 0.02, seed=0)
    n = features.size(0)
    print(f'nodes {n}, edges {edge_index.size(1)}, classes {int(labels.max()) + 1}')
    eigval, lap_pe = laplacian_positional_encoding(edge_index, n, args.pos_enc_dim)
    print('smallest nonzero eigenvalues', [round(v, 4) for v in eigval[1:4].tolist()],
          'pe shape', tuple(lap_pe.shape))

    # sign flip of the eigenvectors during training (as the reference does)
    idx = torch.randperm(n)
    idx_train, idx_val, idx_test = idx[:30], idx[30:45], idx[45:]

    # scatter_softmax: every node's incoming attention sums to one
    scores = torch.randn(edge_index.size(1), 2)
    att = scatter_softmax(scores, edge_index[1], n)
    sums = torch.zeros(n, 2).index_add_(0, edge_index[1], att)
    print('softmax sums to one:', torch.allclose(sums, torch.ones(n, 2), atol=1e-5))
    degree = torch.bincount(edge_index[0], minlength=n)
    print('degree[:5]', degree[:5].tolist(), degree.dtype, 'max', degree.max().item())

    model = GraphTransformerNet(features.size(1), args.hidden, int(labels.max()) + 1,
                                pos_enc_dim=args.pos_enc_dim)
    print(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=5e-4)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode='min', factor=0.5,
                                                           patience=5)
    t_total = time.time()
    for epoch in range(args.epochs):
        model.train()
        sign_flip = torch.rand(lap_pe.size(1))
        sign_flip[sign_flip >= 0.5] = 1.0
        sign_flip[sign_flip < 0.5] = -1.0
        optimizer.zero_grad()
        output = model(features, edge_index, lap_pe * sign_flip.unsqueeze(0))
        loss_train = F.cross_entropy(output[idx_train], labels[idx_train])
        acc_train = (output[idx_train].argmax(1) == labels[idx_train]).float().mean()
        loss_train.backward()
        optimizer.step()
        model.eval()
        with torch.no_grad():
            output = model(features, edge_index, lap_pe)
            loss_val = F.cross_entropy(output[idx_val], labels[idx_val])
            acc_val = (output[idx_val].argmax(1) == labels[idx_val]).float().mean()
        scheduler.step(loss_val)
        if epoch % 5 == 0 or epoch == args.epochs - 1:
            print('Epoch: {:04d}'.format(epoch + 1),
                  'loss_train: {:.4f}'.format(loss_train.item()),
                  'acc_train: {:.4f}'.format(acc_train.item()),
                  'loss_val: {:.4f}'.format(loss_val.item()),
                  'acc_val: {:.4f}'.format(acc_val.item()),
                  'lr: {:.5f}'.format(optimizer.param_groups[0]['lr']))
    print("Optimization Finished!")
    print("Total time elapsed: {:.4f}s".format(time.time() - t_total))
    model.eval()
    with torch.no_grad():
        output = model(features, edge_index, lap_pe)
    acc_test = (output[idx_test].argmax(1) == labels[idx_test]).float().mean()
    print("Test set results:", "accuracy= {:.4f}".format(acc_test.item()))


if __name__ == '__main__':
    main()
