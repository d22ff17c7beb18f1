"""GATv2, scaled down, as PyTorch Geometric's GATv2Conv and torch_geometric.utils write it,
without torch_scatter: edge_index from torch.randint, remove/add self-loops via a mask and
torch.cat of torch.arange, the GATv2 attention logits (a^T LeakyReLU(W_l x_j + W_r x_i)),
utils.softmax as a segment softmax with scatter_reduce(0, index, src, reduce='amax',
include_self=False), exp, and index_add_ sums; degree(), a GCN-normalised
torch.sparse_coo_tensor adjacency with coalesce() and torch.sparse.mm, coalescing duplicate
edges with torch.unique(return_inverse=True), trained for node classification with Adam."""
import torch
import torch.nn.functional as F
from torch import Tensor
from torch.nn import Linear, Parameter


def remove_self_loops(edge_index: Tensor, edge_attr=None):
    mask = edge_index[0] != edge_index[1]
    edge_index = edge_index[:, mask]
    if edge_attr is None:
        return edge_index, None
    return edge_index, edge_attr[mask]


def add_self_loops(edge_index: Tensor, num_nodes: int):
    loop_index = torch.arange(0, num_nodes, dtype=torch.long, device=edge_index.device)
    loop_index = loop_index.unsqueeze(0).repeat(2, 1)
    return torch.cat([edge_index, loop_index], dim=1)


def coalesce(edge_index: Tensor, num_nodes: int):
    """Sort edges by (row, col) and drop duplicates, as torch_geometric.utils.coalesce."""
    idx = edge_index[0] * num_nodes + edge_index[1]
    unique, inverse = torch.unique(idx, sorted=True, return_inverse=True)
    out = torch.stack([unique // num_nodes, unique % num_nodes], dim=0)
    return out, inverse


def degree(index: Tensor, num_nodes: int, dtype=None) -> Tensor:
    out = torch.zeros((num_nodes, ), dtype=dtype, device=index.device)
    one = torch.ones((index.size(0), ), dtype=out.dtype, device=out.device)
    return out.scatter_add_(0, index, one)


def softmax(src: Tensor, index: Tensor, num_nodes: int) -> Tensor:
    """Segment softmax over the edges that share a target node."""
    size = [num_nodes] + list(src.shape[1:])
    src_max = src.new_zeros(size).scatter_reduce(
        0, index.view(-1, 1).expand_as(src), src.detach(), reduce='amax', include_self=False)
    out = (src - src_max.index_select(0, index)).exp()
    out_sum = src.new_zeros(size).index_add_(0, index, out) + 1e-16
    return out / out_sum.index_select(0, index)


class GATv2Conv(torch.nn.Module):
    def __init__(self, in_channels, out_channels, heads=1, concat=True,
                 negative_slope=0.2, dropout=0.0, share_weights=False):
        super().__init__()
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.heads = heads
        self.concat = concat
        self.negative_slope = negative_slope
        self.dropout = dropout
        self.lin_l = Linear(in_channels, heads * out_channels, bias=True)
        self.lin_r = self.lin_l if share_weights else Linear(in_channels, heads * out_channels)
        self.att = Parameter(torch.empty(1, heads, out_channels))
        self.bias = Parameter(torch.empty(heads * out_channels if concat else out_channels))
        self.reset_parameters()

    def reset_parameters(self):
        torch.nn.init.xavier_uniform_(self.lin_l.weight)
        torch.nn.init.xavier_uniform_(self.lin_r.weight)
        torch.nn.init.zeros_(self.lin_l.bias)
        torch.nn.init.zeros_(self.lin_r.bias)
        torch.nn.init.xavier_uniform_(self.att)
        torch.nn.init.zeros_(self.bias)

    def forward(self, x, edge_index, return_attention_weights=False):
        H, C = self.heads, self.out_channels
        N = x.size(0)
        x_l = self.lin_l(x).view(-1, H, C)
        x_r = self.lin_r(x).view(-1, H, C)
        edge_index, _ = remove_self_loops(edge_index)
        edge_index = add_self_loops(edge_index, num_nodes=N)
        j, i = edge_index  # source_to_target flow
        x = x_l[j] + x_r[i]
        x = F.leaky_relu(x, self.negative_slope)
        alpha = (x * self.att).sum(dim=-1)
        alpha = softmax(alpha, i, N)
        alpha = F.dropout(alpha, p=self.dropout, training=self.training)
        msg = x_l[j] * alpha.unsqueeze(-1)
        out = torch.zeros(N, H, C, dtype=msg.dtype).index_add_(0, i, msg)
        if self.concat:
            out = out.view(-1, H * C)
        else:
            out = out.mean(dim=1)
        out = out + self.bias
        if return_attention_weights:
            return out, (edge_index, alpha)
        return out

    def __repr__(self) -> str:
        return (f'{self.__class__.__name__}({self.in_channels}, '
                f'{self.out_channels}, heads={self.heads})')


class GAT(torch.nn.Module):
    def __init__(self, in_channels, hidden_channels, out_channels, heads):
        super().__init__()
        self.conv1 = GATv2Conv(in_channels, hidden_channels, heads, dropout=0.1)
        self.conv2 = GATv2Conv(hidden_channels * heads, out_channels, heads=1,
                               concat=False, dropout=0.1)

    def forward(self, x, edge_index):
        x = F.dropout(x, p=0.2, training=self.training)
        x = F.elu(self.conv1(x, edge_index))
        x = F.dropout(x, p=0.2, training=self.training)
        return self.conv2(x, edge_index)


def gcn_norm_adj(edge_index, num_nodes):
    edge_index = add_self_loops(remove_self_loops(edge_index)[0], num_nodes)
    row, col = edge_index
    deg = degree(col, num_nodes, dtype=torch.float32)
    deg_inv_sqrt = deg.pow(-0.5)
    deg_inv_sqrt.masked_fill_(deg_inv_sqrt == float('inf'), 0)
    value = deg_inv_sqrt[row] * deg_inv_sqrt[col]
    return torch.sparse_coo_tensor(edge_index, value, (num_nodes, num_nodes)).coalesce()


def main():
    torch.manual_seed(12345)
    num_nodes, num_classes, feat = 40, 3, 8
    y = torch.arange(num_nodes) % num_classes
    x = F.one_hot(y, num_classes).float() @ torch.randn(num_classes, feat) \
        + 0.8 * torch.randn(num_nodes, feat)
    # homophilous random edges: half inside the class, half random, with duplicates
    src = torch.randint(0, num_nodes, (120,))
    dst = torch.where(torch.rand(120) < 0.7,
                      (src + num_classes * torch.randint(1, 5, (120,))) % num_nodes,
                      torch.randint(0, num_nodes, (120,)))
    edge_index = torch.stack([torch.cat([src, dst]), torch.cat([dst, src])], dim=0)
    print("edge_index", edge_index.shape, edge_index.dtype, edge_index[:, :6].tolist())
    edge_index, inverse = coalesce(edge_index, num_nodes)
    print("coalesced", edge_index.shape, "inverse", inverse.shape, inverse.dtype)
    print("self loops", (edge_index[0] == edge_index[1]).sum().item())
    deg = degree(edge_index[1], num_nodes)
    print("degree", deg.dtype, deg[:8])

    t = torch.tensor([[0.5, 1.0], [2.0, -1.0], [3.0, 0.0], [-2.0, 4.0]])
    index = torch.tensor([0, 1, 0, 1])
    print("scatter amax", torch.zeros(2, 2).scatter_reduce(
        0, index.view(-1, 1).expand(4, 2), t, reduce='amax', include_self=False))
    print("scatter mean", torch.zeros(3, 2).scatter_reduce(
        0, index.view(-1, 1).expand(4, 2), t, reduce='mean', include_self=True))
    print("segment softmax", softmax(t, index, 2))
    u, inv, counts = torch.unique(torch.tensor([3, 1, 3, 2, 1]), return_inverse=True,
                                  return_counts=True)
    print("unique", u, inv, counts)

    adj = gcn_norm_adj(edge_index, num_nodes)
    print("adj", adj.layout, adj.shape, adj.is_coalesced(), adj._nnz())
    small = torch.sparse_coo_tensor(torch.tensor([[0, 1, 1], [2, 0, 0]]),
                                    torch.tensor([1.0, 2.0, 3.0]), (2, 3))
    print("small", small)
    print("small coalesced", small.coalesce())
    print("small dense", small.to_dense())
    h = torch.sparse.mm(adj, x)
    print("sparse.mm", h.shape, torch.allclose(h, adj.to_dense() @ x, atol=1e-6))

    model = GAT(feat, 8, num_classes, heads=4)
    print(model)
    perm = torch.randperm(num_nodes)
    train_mask = torch.zeros(num_nodes, dtype=torch.bool)
    train_mask[perm[:24]] = True
    test_mask = ~train_mask
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    for epoch in range(1, 41):
        model.train()
        optimizer.zero_grad()
        out = model(x, edge_index)
        loss = F.cross_entropy(out[train_mask], y[train_mask])
        loss.backward()
        optimizer.step()
        if epoch % 5 == 0:
            print(f'Epoch: {epoch:03d}, Loss: {loss:.4f}')

    model.eval()
    with torch.no_grad():
        out, (ei, alpha) = model.conv1(x, edge_index, return_attention_weights=True)
        pred = model(x, edge_index).argmax(dim=-1)
    print("attention", ei.shape, alpha.shape, "sums to one",
          torch.allclose(torch.zeros(num_nodes, 4).index_add_(0, ei[1], alpha),
                         torch.ones(num_nodes, 4), atol=1e-5))
    acc = int((pred[test_mask] == y[test_mask]).sum()) / int(test_mask.sum())
    print(f'Test accuracy above chance: {acc > 0.4}')


if __name__ == '__main__':
    main()
