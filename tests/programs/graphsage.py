"""GraphSAGE in plain PyTorch (in the style of the PyG-free GraphSAGE / message-passing
tutorials): edge_index as a LongTensor, degrees by torch.bincount, mean and max neighbour
aggregation with Tensor.scatter_reduce(include_self=False), sum aggregation by index_add_,
mini-batch neighbour sampling with torch.randint / torch.randperm, torch.unique with
return_inverse to relabel sampled nodes, and a 2-layer SAGE classifier trained with Adam."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def make_graph(num_nodes=60, num_classes=3, feat_dim=8):
    """A stochastic block model: nodes of one class link mostly among themselves."""
    y = torch.arange(num_nodes) % num_classes
    probs = torch.where(y[:, None] == y[None, :], torch.tensor(0.25), torch.tensor(0.02))
    adj = torch.bernoulli(probs)
    adj = torch.triu(adj, diagonal=1)
    adj = adj + adj.t()
    edge_index = adj.nonzero().t().contiguous()
    centers = torch.randn(num_classes, feat_dim)
    x = centers[y] + 0.8 * torch.randn(num_nodes, feat_dim)
    return x, y, edge_index


def aggregate(x, edge_index, num_nodes, reduce):
    src, dst = edge_index
    msg = x[src]
    if reduce == "sum":
        out = torch.zeros(num_nodes, x.size(1), dtype=x.dtype)
        return out.index_add_(0, dst, msg)
    index = dst.unsqueeze(-1).expand_as(msg)
    out = torch.zeros(num_nodes, x.size(1), dtype=x.dtype)
    return out.scatter_reduce(0, index, msg, reduce=reduce, include_self=False)


class SAGEConv(nn.Module):
    def __init__(self, in_channels, out_channels, aggr="mean", normalize=False):
        super().__init__()
        self.aggr = aggr
        self.normalize = normalize
        self.lin_l = nn.Linear(in_channels, out_channels, bias=True)
        self.lin_r = nn.Linear(in_channels, out_channels, bias=False)

    def forward(self, x, edge_index, num_dst=None):
        num_dst = x.size(0) if num_dst is None else num_dst
        out = aggregate(x, edge_index, num_dst, self.aggr)
        out = self.lin_l(out) + self.lin_r(x[:num_dst])
        if self.normalize:
            out = F.normalize(out, p=2.0, dim=-1)
        return out

    def extra_repr(self):
        return f"aggr={self.aggr!r}"


class GraphSAGE(nn.Module):
    def __init__(self, in_channels, hidden_channels, out_channels, aggr="mean"):
        super().__init__()
        self.convs = nn.ModuleList([SAGEConv(in_channels, hidden_channels, aggr),
                                    SAGEConv(hidden_channels, out_channels, aggr)])
        self.dropout = nn.Dropout(0.2)

    def forward(self, x, adjs):
        for i, (edge_index, size) in enumerate(adjs):
            x = self.convs[i](x, edge_index, size)
            if i != len(self.convs) - 1:
                x = F.relu(x)
                x = self.dropout(x)
        return x


def sample_neighbors(batch, edge_index, num_nodes, fanout):
    """Pick up to `fanout` in-neighbours of each node of `batch` (with replacement, as the
    uniform samplers do), relabel the union of nodes, keep the batch first."""
    src, dst = edge_index
    deg = torch.bincount(dst, minlength=num_nodes)
    order = torch.argsort(dst, stable=True)
    ptr = torch.zeros(num_nodes + 1, dtype=torch.long)
    ptr[1:] = torch.cumsum(deg, 0)
    picked_src, picked_dst = [], []
    for node in batch.tolist():
        d = deg[node].item()
        if d == 0:
            continue
        choice = torch.randint(0, d, (fanout,))
        picked_src.append(src[order[ptr[node] + choice]])
        picked_dst.append(torch.full((fanout,), node, dtype=torch.long))
    picked_src, picked_dst = torch.cat(picked_src), torch.cat(picked_dst)
    # batch nodes first, then the newly reached ones, relabelled 0..n-1
    others = picked_src[~torch.isin(picked_src, batch)]
    extra = torch.unique(others)
    n_id = torch.cat([batch, extra])
    mapping = torch.full((num_nodes,), -1, dtype=torch.long)
    mapping[n_id] = torch.arange(n_id.numel())
    sub_edge_index = torch.stack([mapping[picked_src], mapping[picked_dst]], 0)
    return n_id, sub_edge_index


def main():
    torch.manual_seed(12345)
    x, y, edge_index = make_graph()
    num_nodes = x.size(0)
    print("edge_index", edge_index.dtype, tuple(edge_index.shape))
    deg = torch.bincount(edge_index[1], minlength=num_nodes)
    print("degree", deg[:10], "max", deg.max().item(), "isolated", (deg == 0).sum().item())
    uniq, inverse, counts = torch.unique(edge_index[0], return_inverse=True, return_counts=True)
    print("unique sources", uniq.numel(), inverse[:6], counts[:6])
    print("counts agree", torch.equal(counts, deg[uniq]))

    # the three aggregations on a tiny graph, against hand-computed values
    tiny = torch.tensor([[0, 1, 2, 2], [1, 2, 1, 0]])
    feats = torch.tensor([[1.0, -1.0], [2.0, 0.5], [-3.0, 4.0]])
    for reduce in ("sum", "mean", "amax", "amin"):
        print(reduce, aggregate(feats, tiny, 3, reduce).tolist())
    idx = torch.tensor([0, 0, 2])
    base = torch.tensor([10.0, 20.0, 30.0])
    print("include_self", base.scatter_reduce(0, idx, torch.tensor([1.0, 5.0, 2.0]), "mean"),
          base.scatter_reduce(0, idx, torch.tensor([1.0, 5.0, 2.0]), "prod", include_self=False))

    perm = torch.randperm(num_nodes)
    train_idx, test_idx = perm[:40], perm[40:]
    print("train/test", train_idx.numel(), test_idx.numel())

    for aggr in ("mean", "max"):
        torch.manual_seed(0)
        model = GraphSAGE(x.size(1), 16, 3, aggr="amax" if aggr == "max" else aggr)
        if aggr == "mean":
            print(model)
        optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
        for epoch in range(1, 16):
            model.train()
            total = 0.0
            for batch in train_idx[torch.randperm(train_idx.numel())].split(20):
                n_id1, e1 = sample_neighbors(batch, edge_index, num_nodes, fanout=5)
                n_id0, e0 = sample_neighbors(n_id1, edge_index, num_nodes, fanout=5)
                # layer 1 maps n_id0 -> n_id1 (n_id1 is a prefix of n_id0), layer 2 n_id1 -> batch
                adjs = [(e0, n_id1.numel()), (e1, batch.numel())]
                optimizer.zero_grad()
                out = model(x[n_id0], adjs)
                loss = F.cross_entropy(out, y[batch])
                loss.backward()
                optimizer.step()
                total += loss.item() * batch.numel()
            if epoch % 5 == 0:
                print(f"{aggr} epoch {epoch:02d} loss {total / train_idx.numel():.4f}")

        model.eval()
        with torch.no_grad():
            full = [(edge_index, num_nodes), (edge_index, num_nodes)]
            pred = model(x, full).argmax(dim=-1)
            acc = (pred[test_idx] == y[test_idx]).float().mean()
        print(f"{aggr} test accuracy {acc.item():.2f}")


if __name__ == "__main__":
    main()
