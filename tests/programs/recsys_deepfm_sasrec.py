"""Recommender models in the style of shenweichen/DeepCTR-Torch (DeepFM's FM term), the DCN-v2
paper's cross network (tensorflow-recommenders / torchrec's CrossNet port) and
pmixer/SASRec.pytorch: multi-hot fields pooled by nn.EmbeddingBag(mode='sum',
per_sample_weights=...) with offsets, the FM second-order term 0.5 * (sum^2 - sum of squares),
the cross layer x0 * W(xl) + xl, SASRec's causal self-attention with a
torch.tril(torch.ones(..., dtype=torch.bool)) mask, nn.Embedding(padding_idx=0), BCEWithLogitsLoss
on positive/negative items, and torch.topk hit-rate / NDCG@10."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
np.random.seed(0)

# --- EmbeddingBag semantics -------------------------------------------------------------
bag = nn.EmbeddingBag(10, 3, mode="sum")
inp = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9])
offsets = torch.tensor([0, 4])
w = torch.tensor([0.5, 1.0, 1.5, 2.0, 1.0, 1.0, 0.5, 0.25])
print(bag)
print("bag sum", bag(inp, offsets, per_sample_weights=w).shape)
print("bag 2d", nn.EmbeddingBag(10, 3, mode="mean")(inp.view(2, 4)).shape)
mx = nn.EmbeddingBag(10, 3, mode="max", padding_idx=0)
print(mx, mx.padding_idx)
with torch.no_grad():
    bag.weight.copy_(torch.arange(30.).view(10, 3))
print("bag weighted", bag(inp, offsets, per_sample_weights=w))
print("F.embedding_bag", F.embedding_bag(inp, bag.weight, offsets, mode="sum",
                                         include_last_offset=False))
print("include_last_offset", F.embedding_bag(inp, bag.weight, torch.tensor([0, 3, 8]),
                                             mode="mean", include_last_offset=True))
emb = nn.Embedding(6, 2, padding_idx=0)
print(emb, emb.weight[0])


# --- DeepFM + DCN-v2 on synthetic CTR data ----------------------------------------------
class DeepFMDCN(nn.Module):
    def __init__(self, field_dims, multi_hot_dim, embed_dim=4, mlp_dims=(16, 8), cross_layers=2):
        super().__init__()
        self.embedding = nn.Embedding(sum(field_dims), embed_dim)
        self.linear = nn.Embedding(sum(field_dims), 1)
        self.bias = nn.Parameter(torch.zeros((1,)))
        self.register_buffer("offsets", torch.tensor((0, *np.cumsum(field_dims)[:-1]),
                                                     dtype=torch.long))
        self.bag = nn.EmbeddingBag(multi_hot_dim, embed_dim, mode="sum")
        num_fields = len(field_dims) + 1
        self.embed_output_dim = num_fields * embed_dim
        layers = []
        input_dim = self.embed_output_dim
        for d in mlp_dims:
            layers += [nn.Linear(input_dim, d), nn.BatchNorm1d(d), nn.ReLU(), nn.Dropout(p=0.1)]
            input_dim = d
        layers.append(nn.Linear(input_dim, 1))
        self.mlp = nn.Sequential(*layers)
        self.cross = nn.ModuleList(nn.Linear(self.embed_output_dim, self.embed_output_dim)
                                   for _ in range(cross_layers))
        self.cross_out = nn.Linear(self.embed_output_dim, 1, bias=False)
        nn.init.xavier_uniform_(self.embedding.weight.data)

    def forward(self, x, bag_idx, bag_offsets, bag_weights):
        x = x + self.offsets.unsqueeze(0)
        e = torch.cat([self.embedding(x), self.bag(bag_idx, bag_offsets,
                                                  per_sample_weights=bag_weights).unsqueeze(1)], 1)
        linear = torch.sum(self.linear(x), dim=1) + self.bias
        square_of_sum = torch.sum(e, dim=1) ** 2
        sum_of_square = torch.sum(e ** 2, dim=1)
        fm = 0.5 * torch.sum(square_of_sum - sum_of_square, dim=1, keepdim=True)
        x0 = e.view(-1, self.embed_output_dim)
        xl = x0
        for layer in self.cross:
            xl = x0 * layer(xl) + xl
        out = linear + fm + self.mlp(x0) + self.cross_out(xl)
        return out.squeeze(1)


field_dims = [5, 7, 3]
N = 256
X = torch.stack([torch.randint(0, d, (N,)) for d in field_dims], 1)
lengths = torch.randint(1, 4, (N,))
bag_offsets = torch.cat([torch.zeros(1, dtype=torch.long), torch.cumsum(lengths, 0)[:-1]])
bag_idx = torch.randint(0, 12, (int(lengths.sum()),))
bag_w = torch.rand(int(lengths.sum()))
logit = (X[:, 0] == 2).float() * 2 - (X[:, 1] > 3).float() + 0.5 * (X[:, 2] == 1).float() - 0.3
y = torch.bernoulli(torch.sigmoid(logit))
model = DeepFMDCN(field_dims, 12)
print(model)
print("offsets buffer", model.offsets)
opt = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=1e-6)
crit = nn.BCEWithLogitsLoss()
for epoch in range(8):
    model.train()
    perm = torch.randperm(N)
    total = 0.0
    for s in range(0, N, 64):
        idx = perm[s:s + 64]
        starts, lens = bag_offsets[idx], lengths[idx]
        rows = torch.cat([torch.arange(int(a), int(a + n)) for a, n in zip(starts, lens)])
        offs = torch.cat([torch.zeros(1, dtype=torch.long), torch.cumsum(lens, 0)[:-1]])
        pred = model(X[idx], bag_idx[rows], offs, bag_w[rows])
        loss = crit(pred, y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item() * len(idx)
    print(f"ctr epoch {epoch} loss {total / N:.4f}")


# --- SASRec ---------------------------------------------------------------------------
class PointWiseFeedForward(nn.Module):
    def __init__(self, hidden_units, dropout_rate):
        super().__init__()
        self.conv1 = nn.Conv1d(hidden_units, hidden_units, kernel_size=1)
        self.dropout1 = nn.Dropout(p=dropout_rate)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv1d(hidden_units, hidden_units, kernel_size=1)
        self.dropout2 = nn.Dropout(p=dropout_rate)

    def forward(self, inputs):
        outputs = self.dropout2(self.conv2(self.relu(self.dropout1(self.conv1(inputs.transpose(-1, -2))))))
        outputs = outputs.transpose(-1, -2)  # as Conv1D requires (N, C, Length)
        return outputs


class SASRec(nn.Module):
    def __init__(self, item_num, maxlen=10, hidden_units=16, num_blocks=2, num_heads=2, dropout_rate=0.1):
        super().__init__()
        self.item_emb = nn.Embedding(item_num + 1, hidden_units, padding_idx=0)
        self.pos_emb = nn.Embedding(maxlen + 1, hidden_units, padding_idx=0)
        self.emb_dropout = nn.Dropout(p=dropout_rate)
        self.attention_layernorms = nn.ModuleList()
        self.attention_layers = nn.ModuleList()
        self.forward_layernorms = nn.ModuleList()
        self.forward_layers = nn.ModuleList()
        self.last_layernorm = nn.LayerNorm(hidden_units, eps=1e-8)
        for _ in range(num_blocks):
            self.attention_layernorms.append(nn.LayerNorm(hidden_units, eps=1e-8))
            self.attention_layers.append(nn.MultiheadAttention(hidden_units, num_heads, dropout_rate))
            self.forward_layernorms.append(nn.LayerNorm(hidden_units, eps=1e-8))
            self.forward_layers.append(PointWiseFeedForward(hidden_units, dropout_rate))

    def log2feats(self, log_seqs):
        seqs = self.item_emb(log_seqs)
        seqs *= self.item_emb.embedding_dim ** 0.5
        poss = np.tile(np.arange(1, log_seqs.shape[1] + 1), [log_seqs.shape[0], 1])
        poss *= (log_seqs.numpy() != 0)
        seqs += self.pos_emb(torch.LongTensor(poss))
        seqs = self.emb_dropout(seqs)
        tl = seqs.shape[1]  # time dim len for enforce causality
        attention_mask = ~torch.tril(torch.ones((tl, tl), dtype=torch.bool))
        for i in range(len(self.attention_layers)):
            seqs = torch.transpose(seqs, 0, 1)
            Q = self.attention_layernorms[i](seqs)
            mha_outputs, _ = self.attention_layers[i](Q, seqs, seqs, attn_mask=attention_mask)
            seqs = Q + mha_outputs
            seqs = torch.transpose(seqs, 0, 1)
            seqs = self.forward_layernorms[i](seqs)
            seqs = self.forward_layers[i](seqs)
        return self.last_layernorm(seqs)

    def forward(self, log_seqs, pos_seqs, neg_seqs):
        log_feats = self.log2feats(log_seqs)
        pos_embs = self.item_emb(pos_seqs)
        neg_embs = self.item_emb(neg_seqs)
        pos_logits = (log_feats * pos_embs).sum(dim=-1)
        neg_logits = (log_feats * neg_embs).sum(dim=-1)
        return pos_logits, neg_logits

    def predict(self, log_seqs, item_indices):
        log_feats = self.log2feats(log_seqs)
        final_feat = log_feats[:, -1, :]
        item_embs = self.item_emb(item_indices)
        return item_embs.matmul(final_feat.unsqueeze(-1)).squeeze(-1)


item_num, maxlen, users = 30, 10, 24
seqs = np.zeros((users, maxlen + 1), dtype=np.int64)
for u in range(users):
    L = np.random.randint(4, maxlen + 2)
    start = np.random.randint(1, item_num)
    seqs[u, -L:] = (start + np.arange(L)) % item_num + 1   # "next item" sequences
log_seqs = torch.from_numpy(seqs[:, :-1])
pos = torch.from_numpy(seqs[:, 1:]) * (log_seqs != 0)
neg = torch.randint(1, item_num + 1, pos.shape) * (pos != 0)
sas = SASRec(item_num, maxlen)
for name, param in sas.named_parameters():
    try:
        nn.init.xavier_normal_(param.data)
    except Exception:
        pass  # just ignore those failed init layers
sas.pos_emb.weight.data[0, :] = 0
sas.item_emb.weight.data[0, :] = 0
print(sas)
bce = nn.BCEWithLogitsLoss()
adam = torch.optim.Adam(sas.parameters(), lr=5e-3, betas=(0.9, 0.98))
for epoch in range(10):
    sas.train()
    pos_logits, neg_logits = sas(log_seqs, pos, neg)
    pos_labels, neg_labels = torch.ones(pos_logits.shape), torch.zeros(neg_logits.shape)
    indices = torch.where(pos != 0)
    loss = bce(pos_logits[indices], pos_labels[indices])
    loss += bce(neg_logits[indices], neg_labels[indices])
    for param in sas.item_emb.parameters():
        loss += 1e-4 * torch.norm(param)
    adam.zero_grad()
    loss.backward()
    adam.step()
    print(f"sasrec epoch {epoch} loss {loss.item():.4f}")

sas.eval()
with torch.no_grad():
    items = torch.arange(1, item_num + 1).expand(users, -1)
    scores = sas.predict(log_seqs, items)
    target = torch.from_numpy(seqs[:, -1]) - 1
    _, top = torch.topk(scores, 10, dim=1)
    hits = (top == target[:, None])
    rank = hits.float().argmax(dim=1)
    hit = hits.any(dim=1).float()
    ndcg = (hit / torch.log2(rank.float() + 2)).mean()
    print("topk", top.shape, top.dtype, "HR@10 ndcg@10 finite", bool(torch.isfinite(ndcg)))
    print("padding row stays zero", torch.count_nonzero(sas.item_emb.weight[0]).item())
