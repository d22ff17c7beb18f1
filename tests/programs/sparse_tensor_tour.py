"""Sparse tensors as GNN and recommender code uses them (PyG-free GCN layers, the PyTorch
sparse docs, torch_sparse-style helpers), scaled down: torch.sparse_coo_tensor with and
without an explicit size, duplicate indices summed by coalesce(), indices()/values(),
is_coalesced, to_sparse()/to_dense(), to_sparse_csr() with crow_indices/col_indices,
torch.sparse.mm / torch.mm / sparse @ dense with gradients to the dense side and to the
values, torch.sparse.mm(csr, x, reduce=) for mean/max aggregation, torch.sparse.addmm,
torch.sparse.sum(dim=, keepdim), torch.sparse.softmax, value-wise ops (abs, pow, sqrt, relu,
tanh), row/column scaling by broadcast dense tensors, cat/stack/unsqueeze/bmm of sparse
tensors, sparse * sparse, message passing by index_add_/scatter_reduce_ checked against the
sparse-matrix formulation, a two-layer GCN trained on a random graph, sparse embedding
gradients with SGD and SparseAdam, repr of sparse tensors, layouts, and the errors PyTorch
raises for operations sparse tensors do not support."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

# --- construction, duplicates, coalesce ---
i = torch.tensor([[0, 1, 1, 2, 0], [2, 0, 2, 1, 2]])
v = torch.tensor([3.0, 4.0, 5.0, 6.0, 1.0])
s = torch.sparse_coo_tensor(i, v, (3, 3))
print(s)
print("layout", s.layout, s.is_sparse, s.is_coalesced(), s._nnz(), s.dtype, s.shape)
print("sparse_dim", s.sparse_dim(), "dense_dim", s.dense_dim())
c = s.coalesce()
print(c)
print("coalesced", c.is_coalesced(), c._nnz())
print("indices", c.indices())
print("values", c.values())
print("dense", c.to_dense())
inferred = torch.sparse_coo_tensor(i, v)
print("inferred size", inferred.size(), inferred.shape)
empty = torch.sparse_coo_tensor(size=(2, 4))
print(empty)
print("empty nnz", empty._nnz(), empty.to_dense().sum())
hybrid = torch.sparse_coo_tensor(torch.tensor([[0, 2]]), torch.tensor([[1.0, 2.0], [3.0, 4.0]]),
                                 (3, 2))
print(hybrid)
print("hybrid dims", hybrid.sparse_dim(), hybrid.dense_dim(), hybrid.to_dense())
ints = torch.sparse_coo_tensor(i, torch.tensor([1, 2, 3, 4, 5]), (3, 3))
print("int values", ints.dtype, ints.coalesce().values())

# --- to_sparse / CSR ---
d = torch.tensor([[0.0, 2.0, 0.0, 0.0], [1.0, 0.0, 0.0, 3.0], [0.0, 0.0, 0.0, 0.0]])
sp = d.to_sparse()
print(sp)
print("strided", d.layout, d.layout == torch.strided, sp.layout == torch.sparse_coo)
print("round trip", torch.equal(sp.to_dense(), d))
csr = d.to_sparse_csr()
print(csr)
print("csr layout", csr.layout, csr.layout == torch.sparse_csr)
print("crow", csr.crow_indices(), "col", csr.col_indices(), "values", csr.values())
print("csr dense", torch.equal(csr.to_dense(), d))
print("csr matvec", csr @ torch.ones(4))
print("coo to csr", sp.to_sparse_csr().crow_indices())
print("csr to coo", csr.to_sparse().indices())
feat = torch.arange(8.0).view(4, 2)
for reduce in ("sum", "mean", "amax", "amin"):
    print("csr mm", reduce, torch.sparse.mm(csr, feat, reduce).tolist())

# --- sparse x dense products and gradients ---
a = torch.sparse_coo_tensor(i, v, (3, 3)).coalesce()
x = torch.randn(3, 4, requires_grad=True)
y = torch.sparse.mm(a, x)
print("sparse.mm", y.shape, torch.allclose(y, a.to_dense() @ x))
y.sum().backward()
print("dense grad", x.grad)
x.grad = None
(a @ x).pow(2).sum().backward()
print("matmul grad", x.grad)
print("torch.mm equal", torch.allclose(torch.mm(a, x), a.to_dense() @ x))
vals = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
w = torch.sparse_coo_tensor(torch.tensor([[0, 0, 1, 2], [0, 2, 1, 0]]), vals, (3, 3))
out = torch.sparse.mm(w, torch.arange(12.0).view(3, 4))
out.sum().backward()
print("values grad", vals.grad)
print("addmm", torch.sparse.addmm(torch.ones(3, 4), a, x.detach(), beta=0.5, alpha=2.0))

# --- reductions and softmax ---
print("sparse.sum", torch.sparse.sum(a))
print("sparse.sum dim 1", torch.sparse.sum(a, dim=1))
print("sparse.sum dim 0 dense", torch.sparse.sum(a, dim=0).to_dense())
sm = torch.sparse.softmax(a, dim=1)
print("sparse.softmax", sm.to_dense())
print("log_softmax", torch.sparse.log_softmax(a, dim=1).coalesce().values())

# --- elementwise ops that keep sparsity ---
print("scale", (a * 2).coalesce().values())
print("add", (a + a).to_dense())
print("transpose", a.t().coalesce().indices())
print("neg", (-a).coalesce().values())

# --- message passing: index_add_ / scatter_reduce_ vs the sparse matrix ---
num_nodes = 6
edge_index = torch.randint(0, num_nodes, (2, 14))
h = torch.randn(num_nodes, 5)
src, dst = edge_index
agg = torch.zeros(num_nodes, 5).index_add_(0, dst, h[src])
adj = torch.sparse_coo_tensor(torch.stack([dst, src]), torch.ones(src.numel()),
                              (num_nodes, num_nodes))
print("index_add vs spmm", torch.allclose(agg, torch.sparse.mm(adj, h), atol=1e-6))
deg = torch.zeros(num_nodes).scatter_reduce_(0, dst, torch.ones(src.numel()), "sum")
mean = torch.zeros(num_nodes, 5).scatter_reduce_(0, dst[:, None].expand(-1, 5), h[src],
                                                 "mean", include_self=False)
print("degree", deg)
print("mean agg", torch.allclose(mean[deg > 0], (agg / deg.clamp(min=1)[:, None])[deg > 0],
                                 atol=1e-6))
mx = torch.full((num_nodes, 5), float("-inf")).scatter_reduce_(
    0, dst[:, None].expand(-1, 5), h[src], "amax")
print("max agg rows", (mx > float("-inf")).all(1))


# --- a GCN on a random graph with a symmetric-normalised sparse adjacency ---
def normalized_adjacency(edge_index, n):
    loops = torch.arange(n)
    ei = torch.cat([edge_index, edge_index.flip(0), torch.stack([loops, loops])], 1)
    a = torch.sparse_coo_tensor(ei, torch.ones(ei.size(1)), (n, n)).coalesce()
    a = torch.sparse_coo_tensor(a.indices(), torch.ones(a._nnz()), (n, n), is_coalesced=True)
    deg = torch.sparse.sum(a, dim=1).to_dense()
    dinv = deg.pow(-0.5)
    r, c = a.indices()
    return torch.sparse_coo_tensor(a.indices(), dinv[r] * dinv[c], (n, n)).coalesce()


class GCN(nn.Module):
    def __init__(self, fin, hidden, classes):
        super().__init__()
        self.l1 = nn.Linear(fin, hidden)
        self.l2 = nn.Linear(hidden, classes)

    def forward(self, x, adj):
        x = F.relu(torch.sparse.mm(adj, self.l1(x)))
        return torch.sparse.mm(adj, self.l2(x))


n = 40
labels = torch.arange(n) % 3
feats = F.one_hot(labels, 3).float() + 0.8 * torch.randn(n, 3)
same = labels[:, None] == labels[None, :]
cand = torch.nonzero(same & (torch.rand(n, n) < 0.15)).t()
adj = normalized_adjacency(cand, n)
print("adj", adj.shape, adj.is_coalesced(), torch.allclose(torch.sparse.sum(adj), adj.values().sum()))
model = GCN(3, 16, 3)
opt = torch.optim.Adam(model.parameters(), lr=0.05)
for step in range(30):
    opt.zero_grad()
    loss = F.cross_entropy(model(feats, adj), labels)
    loss.backward()
    opt.step()
    if step % 5 == 0:
        print(f"step {step:3d} loss {loss.item():.4f}")
acc = (model(feats, adj).argmax(1) == labels).float().mean()
print("train accuracy", acc.item() > 0.6)

# --- sparse leaves with gradients, more ops ---
leaf = torch.sparse_coo_tensor(i, v, (3, 3), requires_grad=True)
print("leaf", leaf.requires_grad, leaf.is_leaf, leaf.grad_fn)
dense_rhs = torch.arange(6.0).view(3, 2)
torch.sparse.mm(leaf, dense_rhs).sum().backward()
print("sparse leaf grad", leaf.grad.is_sparse, leaf.grad.layout)
print("sparse leaf grad dense", leaf.grad.to_dense())
lv = torch.tensor([1.0, -2.0, 0.5, 3.0], requires_grad=True)
ls = torch.sparse_coo_tensor(torch.tensor([[0, 0, 1, 2], [0, 2, 1, 0]]), lv, (3, 3))
torch.sparse.mm(torch.sparse.softmax(ls, dim=1), torch.arange(3.0)[:, None]).sum().backward()
print("softmax values grad", lv.grad)
lv.grad = None
ls = torch.sparse_coo_tensor(torch.tensor([[0, 0, 1, 2], [0, 2, 1, 0]]), lv, (3, 3))
ls.to_dense().pow(2).sum().backward()
print("to_dense grad", lv.grad)
print("sparse * sparse", (a * a).to_dense())
print("sparse * dense", (a * torch.full((3, 3), 2.0)).to_dense())
print("sum()", a.sum(), a.sum().dtype)
print("index_select", a.index_select(0, torch.tensor([2, 0])).to_dense())
print("cat", torch.cat([a, a], 0))
print("cat dense dim", torch.cat([hybrid, hybrid], 1).to_dense())
print("narrow_copy", a.narrow_copy(1, 1, 2).to_dense())
print("hspmm", torch.hspmm(a, torch.ones(3, 2)))
print("smm", torch.smm(a, torch.ones(3, 2)))
print("abs/pow/sqrt", a.abs().pow(2).sqrt().to_dense())
print("relu", F.relu(-a).coalesce().values(), torch.relu(a).is_coalesced())
print("value-wise of uncoalesced", s.sin().is_coalesced(), s.sin()._nnz(), s.tanh().values())
print("row normalised", (a * a.to_dense().sum(1).reciprocal().view(-1, 1)).to_dense())
print("column scaled", (s * torch.tensor([1.0, 10.0, 100.0])).coalesce().values())
print("unsqueeze", a.unsqueeze(0).shape, a.unsqueeze(0).sparse_dim())
print("stack", torch.stack([a, a]).shape, torch.stack([a, a], 2)._indices())
print("zeros_like", torch.zeros_like(a))
batch = torch.stack([a, a.t()])
print("bmm", torch.bmm(batch, torch.ones(2, 3, 2)).tolist())
print("sum keepdim", a.sum(1, keepdim=True))
u = torch.sparse_coo_tensor(torch.tensor([[0, 2, 1], [2, 2, 0]]), torch.tensor([2.0, 3.0, 4.0]),
                            (3, 3)).coalesce()
print("sparse * sparse", a * u)
for name, bad in [("pow 0", lambda: a.pow(0)), ("div dense", lambda: a / torch.ones(3)),
                  ("in-place uncoalesced", lambda: s.clone().sqrt_()),
                  ("mean", lambda: a.mean()), ("exp_", lambda: a.clone().exp_()), ("softmax method", lambda: a.softmax(1))]:
    try:
        bad()
        print(name, "no error")
    except Exception as err:
        print(name, type(err).__name__ + ":", str(err).split(". This could")[0])
print("float64", a.double().dtype, a.to(torch.float64).values().dtype)
print("type", a.type(), a.is_cuda, a.device)

# --- sparse embedding gradients with SGD (momentum) and SparseAdam ---
emb = nn.Embedding(8, 3, sparse=True)
opt_sgd = torch.optim.SGD(emb.parameters(), lr=0.1)
emb(torch.tensor([1, 3, 3])).sum().backward()
print("emb grad", emb.weight.grad)
opt_sgd.step()
print("rows updated", (emb.weight.detach() != emb.weight.detach()[0]).any(1))
emb2 = nn.Embedding(8, 3, sparse=True)
sadam = torch.optim.SparseAdam(list(emb2.parameters()), lr=0.1)
for _ in range(3):
    sadam.zero_grad()
    emb2(torch.tensor([0, 5])).pow(2).sum().backward()
    sadam.step()
print("sparse adam state", sorted(sadam.state[emb2.weight].keys()),
      sadam.state[emb2.weight]["exp_avg"].is_sparse)
print("sparse adam rows", emb2.weight[[0, 5]].detach().abs().sum(1) < emb2.weight[1].abs().sum()
      + 10)
for name, bad in [("adam on sparse", lambda: torch.optim.Adam(emb.parameters()).step()),
                  ("sparseadam dense", lambda: torch.optim.SparseAdam(nn.Linear(2, 2).parameters())),
                  ("sgd momentum sparse", lambda: torch.optim.SGD(emb.parameters(), lr=0.1,
                                                                  momentum=0.9).step())]:
    try:
        bad()
        print(name, "no error")
    except Exception as err:
        print(name, type(err).__name__ + ":", str(err).splitlines()[0])

# --- unsupported operations ---
for name, bad in [("view", lambda: a.view(9)),
                  ("stride", lambda: a.stride()),
                  ("data_ptr", lambda: a.data_ptr()),
                  ("indices uncoalesced", lambda: s.indices()),
                  ("mismatched size", lambda: torch.sparse_coo_tensor(i, v, (2, 2), check_invariants=True)),
                  ("mm shapes", lambda: torch.sparse.mm(a, torch.ones(4, 2)))]:
    try:
        bad()
        print(name, "no error")
    except Exception as err:
        print(name, type(err).__name__ + ":", str(err).split(". This could")[0])
