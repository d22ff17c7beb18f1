"""Sparse embeddings in recommender training, as TorchRec-free DLRM/fastText/word2vec code
and the PyTorch docs write them, scaled down: nn.Embedding(sparse=True) trained by
optim.SparseAdam while the dense tower uses Adam (two optimizers over parameter subsets),
nn.EmbeddingBag in "sum", "mean" and "max" modes with offsets, per_sample_weights,
include_last_offset=True and padding_idx, sparse gradients inspected (.grad.is_sparse,
coalesce(), _indices()/_values()), max_norm renormalisation, Embedding.from_pretrained with
freeze=True/False, and F.embedding_bag."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

# --- EmbeddingBag modes, offsets, per-sample weights ---
bag_sum = nn.EmbeddingBag(10, 3, mode="sum")
print(bag_sum)
inputs = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9])
offsets = torch.tensor([0, 4])
print("sum", bag_sum(inputs, offsets))
bag_mean = nn.EmbeddingBag.from_pretrained(bag_sum.weight.detach().clone(), mode="mean")
print(bag_mean)
print("mean", bag_mean(inputs, offsets))
bag_max = nn.EmbeddingBag(10, 3, mode="max", _weight=bag_sum.weight.detach().clone())
print("max", bag_max(inputs, offsets))
print("2D input", bag_sum(inputs.view(2, 4)).shape)
psw = torch.linspace(0.5, 2.0, 8)
print("per_sample_weights", bag_sum(inputs, offsets, per_sample_weights=psw))
last = nn.EmbeddingBag(10, 3, mode="sum", include_last_offset=True,
                       _weight=bag_sum.weight.detach().clone())
print(last)
print("include_last_offset", last(inputs, torch.tensor([0, 3, 8])))
padded = nn.EmbeddingBag(10, 3, mode="mean", padding_idx=0)
print(padded)
print("padding row", padded.weight[0])
print("padding mean", padded(torch.tensor([[0, 1, 2], [0, 0, 3]])).shape)
print("empty bag", bag_sum(torch.tensor([1, 2]), torch.tensor([0, 2])))
out = F.embedding_bag(inputs, bag_sum.weight, offsets, mode="sum")
print("functional equal", torch.equal(out, bag_sum(inputs, offsets)))
for bad in [lambda: bag_mean(inputs, offsets, per_sample_weights=psw),
            lambda: bag_sum(inputs.view(2, 4), offsets),
            lambda: bag_sum(inputs, torch.tensor([1, 4]))]:
    try:
        bad()
    except (ValueError, NotImplementedError, RuntimeError) as err:
        print(type(err).__name__ + ":", err)

# --- sparse gradients ---
emb = nn.Embedding(10, 4, sparse=True)
print(emb)
idx = torch.tensor([[1, 2, 4], [4, 3, 1]])
emb(idx).pow(2).sum().backward()
g = emb.weight.grad
print("is_sparse", g.is_sparse, g.layout, g.shape, g.is_coalesced())
print("nnz before coalesce", g._nnz(), g._indices())
gc = g.coalesce()
print("coalesced indices", gc.indices())
print("coalesced values", gc.values().shape)
print("dense equal", torch.allclose(gc.to_dense(), 2 * emb.weight.detach() *
                                    torch.bincount(idx.flatten(), minlength=10)[:, None]))
# gradient accumulation over micro-batches: sparse gradients concatenate, then coalesce
for micro in range(4):
    emb(torch.tensor([micro, 9 - micro, 1])).sum().backward()
    print(f"micro {micro} nnz", emb.weight.grad._nnz(), emb.weight.grad._indices().tolist(),
          emb.weight.grad.is_coalesced())
for micro in range(10):
    emb(torch.tensor([1, 2, 3])).sum().backward()
print("after many", emb.weight.grad._nnz(), emb.weight.grad._indices().tolist())
bag_sparse = nn.EmbeddingBag(10, 4, mode="sum", sparse=True)
bag_sparse(inputs, offsets).sum().backward()
print("bag grad", bag_sparse.weight.grad.is_sparse, bag_sparse.weight.grad.coalesce()._values().sum(1))

# --- max_norm renormalisation ---
capped = nn.Embedding(6, 3, max_norm=1.0)
print(capped)
before = capped.weight.norm(dim=1).clone()
capped(torch.tensor([0, 2, 2, 5]))
after = capped.weight.norm(dim=1)
print("renormed rows", [(i, round(b, 3) > 1, round(a, 3) <= 1.0001) for i, (b, a) in
                         enumerate(zip(before.tolist(), after.tolist()))])

# --- from_pretrained ---
pretrained = torch.randn(7, 3)
frozen = nn.Embedding.from_pretrained(pretrained)
tuned = nn.Embedding.from_pretrained(pretrained, freeze=False, padding_idx=0)
print(frozen, frozen.weight.requires_grad)
print(tuned, tuned.weight.requires_grad)
print("lookup", torch.equal(frozen(torch.tensor([3])), pretrained[3:4]))


# --- a two-tower / DLRM-style recommender with SparseAdam + Adam ---
class Recommender(nn.Module):
    def __init__(self, n_users, n_items, n_genres, dim=8):
        super().__init__()
        self.user = nn.Embedding(n_users, dim, sparse=True)
        self.item = nn.Embedding(n_items, dim, sparse=True)
        self.genres = nn.EmbeddingBag(n_genres, dim, mode="mean", sparse=True,
                                      padding_idx=0)
        self.mlp = nn.Sequential(nn.Linear(3 * dim + 1, 16), nn.ReLU(), nn.Linear(16, 1))
        nn.init.normal_(self.user.weight, std=0.1)
        nn.init.normal_(self.item.weight, std=0.1)

    def forward(self, users, items, genre_ids, genre_offsets):
        u, i = self.user(users), self.item(items)
        g = self.genres(genre_ids, genre_offsets)
        dot = (u * i).sum(-1, keepdim=True)
        return self.mlp(torch.cat([u, i, g, dot], dim=1)).squeeze(1)


n_users, n_items, n_genres = 20, 30, 6
model = Recommender(n_users, n_items, n_genres)
print(model)
sparse_params = [p for n, p in model.named_parameters() if n.startswith(("user", "item", "genres"))]
dense_params = [p for n, p in model.named_parameters() if n.startswith("mlp")]
opt_sparse = torch.optim.SparseAdam(sparse_params, lr=0.05)
opt_dense = torch.optim.Adam(dense_params, lr=0.01)
print(opt_sparse)
item_genres = torch.randint(0, n_genres, (n_items, 2))
true_u, true_i = torch.randn(n_users, 3), torch.randn(n_items, 3)
users = torch.randint(0, n_users, (256,))
items = torch.randint(0, n_items, (256,))
ratings = (true_u[users] * true_i[items]).sum(1)
for epoch in range(6):
    total = 0.0
    for b in range(0, 256, 64):
        u, it = users[b:b + 64], items[b:b + 64]
        gids = item_genres[it].flatten()
        goffs = torch.arange(0, gids.numel(), 2)
        pred = model(u, it, gids, goffs)
        loss = F.mse_loss(pred, ratings[b:b + 64])
        opt_sparse.zero_grad()
        opt_dense.zero_grad()
        loss.backward()
        opt_sparse.step()
        opt_dense.step()
        total += loss.item()
    print(f"epoch {epoch} loss {total / 4:.4f}")
print("user grad sparse", model.user.weight.grad.is_sparse,
      "mlp grad sparse", model.mlp[0].weight.grad.is_sparse)
state = opt_sparse.state[model.user.weight]
print("SparseAdam state", sorted(state.keys()), state["exp_avg"].shape, int(state["step"]))
try:
    torch.optim.SparseAdam(dense_params)
    dense_params[0].grad = torch.ones_like(dense_params[0])
    torch.optim.SparseAdam([dense_params[0]]).step()
except RuntimeError as err:
    print("RuntimeError:", err)
try:
    torch.optim.Adam([model.user.weight]).step()
except RuntimeError as err:
    print("RuntimeError:", err)
