"""Graph pooling as PyTorch Geometric's scatter helpers and torch_scatter users write it
with plain torch: global add/mean/max/min/prod pooling by Tensor.scatter_reduce (both
include_self settings), index_reduce_, index_add_, torch.bincount for node counts, segment
sums by cumsum + index_select over ptr (CSR offsets), a kNN graph by torch.cdist +
topk(largest=False), a message-passing layer (gather by edge_index, scatter to targets,
degree normalisation), and a tiny graph classifier trained on seeded random graphs."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def scatter(src, index, dim=0, dim_size=None, reduce="sum"):
    """torch_geometric.utils.scatter's torch path."""
    if dim_size is None:
        dim_size = int(index.max()) + 1 if index.numel() > 0 else 0
    size = list(src.size())
    size[dim] = dim_size
    index = index.view([-1] + [1] * (src.dim() - 1)).expand_as(src) if src.dim() > 1 else index
    if reduce in ("sum", "add"):
        return src.new_zeros(size).scatter_add_(dim, index, src)
    if reduce == "mean":
        count = src.new_zeros(dim_size)
        count.scatter_add_(0, index[:, 0] if src.dim() > 1 else index,
                           src.new_ones(src.size(dim)))
        count = count.clamp(min=1)
        out = src.new_zeros(size).scatter_add_(dim, index, src)
        return out / count.view([-1] + [1] * (src.dim() - 1))
    return src.new_zeros(size).scatter_reduce_(dim, index, src, reduce=reduce,
                                                include_self=False)


def segment_sum_csr(x, ptr):
    """Segment sums by a running sum and its values at the CSR offsets."""
    cs = torch.cat([x.new_zeros(1, x.size(1)), x.cumsum(0)], dim=0)
    return cs.index_select(0, ptr[1:]) - cs.index_select(0, ptr[:-1])


def knn_graph(pos, k, batch):
    dist = torch.cdist(pos, pos)
    same = batch[:, None] == batch[None, :]
    dist = dist.masked_fill(~same, float("inf"))
    dist.fill_diagonal_(float("inf"))
    _, nbr = dist.topk(k, dim=1, largest=False)
    row = torch.arange(pos.size(0)).repeat_interleave(k)
    return torch.stack([nbr.reshape(-1), row], dim=0)   # (source, target)


def degree(index, num_nodes, dtype=torch.float):
    out = torch.zeros((num_nodes,), dtype=dtype)
    one = torch.ones((index.size(0),), dtype=out.dtype)
    return out.scatter_add_(0, index, one)


class GraphConv(nn.Module):
    def __init__(self, in_channels, out_channels, aggr="mean"):
        super().__init__()
        self.lin_rel = nn.Linear(in_channels, out_channels)
        self.lin_root = nn.Linear(in_channels, out_channels, bias=False)
        self.aggr = aggr

    def forward(self, x, edge_index):
        src, dst = edge_index
        msg = x.index_select(0, src)
        agg = scatter(msg, dst, dim=0, dim_size=x.size(0), reduce=self.aggr)
        return self.lin_rel(agg) + self.lin_root(x)

    def extra_repr(self):
        return f"aggr={self.aggr}"


class GraphClassifier(nn.Module):
    def __init__(self, hidden=32, num_classes=2):
        super().__init__()
        self.conv1 = GraphConv(3, hidden, aggr="mean")
        self.conv2 = GraphConv(hidden, hidden, aggr="amax")
        self.head = nn.Sequential(nn.Linear(2 * hidden, hidden), nn.ReLU(),
                                  nn.Linear(hidden, num_classes))

    def forward(self, pos, edge_index, batch, num_graphs):
        h = F.relu(self.conv1(pos, edge_index))
        h = F.relu(self.conv2(h, edge_index))
        mean = scatter(h, batch, dim=0, dim_size=num_graphs, reduce="mean")
        mx = scatter(h, batch, dim=0, dim_size=num_graphs, reduce="amax")
        return self.head(torch.cat([mean, mx], dim=1))


def make_graphs(n_graphs, gen):
    pos, batch, ys = [], [], []
    for g in range(n_graphs):
        n = int(torch.randint(5, 9, (1,), generator=gen))
        y = g % 2
        p = torch.randn(n, 3, generator=gen)
        if y == 1:
            p[:, 2] = p[:, 2] * 0.1   # flat point clouds
        pos.append(p)
        batch.append(torch.full((n,), g, dtype=torch.long))
        ys.append(y)
    return torch.cat(pos), torch.cat(batch), torch.tensor(ys)


def main():
    torch.manual_seed(0)
    # scatter_reduce on fixed values, both include_self settings
    src = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    index = torch.tensor([0, 1, 0, 1, 2, 1])
    base = torch.tensor([10.0, 20.0, 30.0, 40.0])
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        for include_self in (True, False):
            out = base.scatter_reduce(0, index, src, reduce=reduce, include_self=include_self)
            print(f"scatter_reduce {reduce} include_self={include_self}", out)
    x2 = torch.arange(12, dtype=torch.float).view(6, 2)
    print("scatter_reduce 2d", torch.zeros(3, 2).scatter_reduce(
        0, index.view(-1, 1).expand(-1, 2), x2, "amax", include_self=False))
    ints = torch.tensor([3, 1, 4, 1, 5, 9])
    print("scatter_reduce int mean", torch.zeros(3, dtype=torch.long).scatter_reduce(
        0, index, ints, "mean", include_self=False))
    for reduce in ("prod", "mean", "amax", "amin"):
        for include_self in (True, False):
            t = torch.ones(4, 2)
            t.index_reduce_(0, torch.tensor([0, 2, 0]), torch.tensor(
                [[2.0, 3.0], [4.0, 5.0], [6.0, 7.0]]), reduce, include_self=include_self)
            print(f"index_reduce_ {reduce} include_self={include_self}", t.tolist())
    print("index_add_", torch.zeros(3, 2).index_add_(0, torch.tensor([0, 2, 0]),
                                                     torch.ones(3, 2), alpha=2))
    print("bincount", torch.bincount(index), torch.bincount(index, minlength=5),
          torch.bincount(index, weights=src))
    print("bincount dtypes", torch.bincount(index).dtype,
          torch.bincount(index, weights=src).dtype,
          torch.bincount(index, weights=src.double()).dtype)
    try:
        torch.bincount(torch.tensor([-1, 2]))
    except RuntimeError as err:
        print("RuntimeError:", err)
    try:
        base.scatter_reduce(0, index, src, reduce="max")
    except RuntimeError as err:
        print("RuntimeError:", err)
    ptr = torch.tensor([0, 2, 5, 6])
    print("segment_sum_csr", segment_sum_csr(x2, ptr))
    counts = ptr[1:] - ptr[:-1]
    print("ptr -> batch", torch.repeat_interleave(torch.arange(3), counts))
    print("unique_consecutive", torch.unique_consecutive(torch.tensor([0, 0, 1, 1, 1, 2]),
                                                         return_counts=True))
    pos = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0], [5.0, 5.0], [5.0, 6.0], [7.0, 5.0]])
    b = torch.tensor([0, 0, 0, 1, 1, 1])
    print("cdist", torch.cdist(pos[:3], pos[:3]))
    ei = knn_graph(pos, 2, b)
    print("knn edge_index", ei.tolist())
    print("degree", degree(ei[1], 6), degree(ei[0], 6))

    gen = torch.Generator().manual_seed(0)
    pos, batch, y = make_graphs(16, gen)
    num_graphs = int(batch.max()) + 1
    edge_index = knn_graph(pos, 3, batch)
    print("nodes", pos.size(0), "edges", edge_index.size(1),
          "nodes per graph", torch.bincount(batch).tolist())
    model = GraphClassifier()
    print(model)
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    for step in range(50):
        logits = model(pos, edge_index, batch, num_graphs)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0 or step == 49:
            acc = (logits.argmax(1) == y).float().mean().item()
            print(f"step {step:3d} loss {loss.item():.4f} acc {acc:.3f}")
    # gradients through scatter_reduce amax / mean (ties split as PyTorch)
    v = torch.tensor([1.0, 3.0, 3.0, 2.0], requires_grad=True)
    out = torch.zeros(2).scatter_reduce(0, torch.tensor([0, 0, 0, 1]), v, "amax",
                                        include_self=False)
    out.sum().backward()
    print("amax grad", v.grad)
    v.grad = None
    out = torch.ones(2).scatter_reduce(0, torch.tensor([0, 0, 0, 1]), v, "prod")
    out.sum().backward()
    print("prod grad", v.grad)
    v.grad = None
    out = torch.zeros(2).scatter_reduce(0, torch.tensor([0, 0, 0, 1]), v, "mean")
    out.sum().backward()
    print("mean grad", v.grad)


if __name__ == "__main__":
    main()
