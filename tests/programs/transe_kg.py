"""TransE knowledge-graph embeddings (in the style of OpenKE / the "TransE in PyTorch"
repos): entity and relation nn.Embedding tables with max_norm=1 and uniform init in
+-6/sqrt(d), relation vectors F.normalize'd once, scores as torch.norm(h + r - t, p=1),
negative sampling by corrupting heads or tails with torch.randint, nn.MarginRankingLoss,
SGD; evaluation by filtered ranks with argsort / topk and Hits@k, mean rank and MRR."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class TransE(nn.Module):
    def __init__(self, entity_count, relation_count, dim=16, norm=1, margin=1.0):
        super().__init__()
        self.entity_count = entity_count
        self.relation_count = relation_count
        self.norm = norm
        self.dim = dim
        self.entities_emb = self._init_enitity_emb()
        self.relations_emb = self._init_relation_emb()
        self.criterion = nn.MarginRankingLoss(margin=margin, reduction="none")

    def _init_enitity_emb(self):
        entities_emb = nn.Embedding(num_embeddings=self.entity_count + 1, embedding_dim=self.dim,
                                    padding_idx=self.entity_count, max_norm=1.0)
        uniform_range = 6 / np.sqrt(self.dim)
        entities_emb.weight.data.uniform_(-uniform_range, uniform_range)
        return entities_emb

    def _init_relation_emb(self):
        relations_emb = nn.Embedding(num_embeddings=self.relation_count + 1, embedding_dim=self.dim,
                                     padding_idx=self.relation_count)
        uniform_range = 6 / np.sqrt(self.dim)
        relations_emb.weight.data.uniform_(-uniform_range, uniform_range)
        # -1 to avoid nan for OOV vector
        relations_emb.weight.data[:-1, :].div_(relations_emb.weight.data[:-1, :].norm(p=1, dim=1, keepdim=True))
        return relations_emb

    def forward(self, positive_triplets, negative_triplets):
        # -1 to avoid nan for OOV vector
        self.entities_emb.weight.data[:-1, :].div_(
            self.entities_emb.weight.data[:-1, :].norm(p=2, dim=1, keepdim=True))
        assert positive_triplets.size()[1] == 3
        positive_distances = self._distance(positive_triplets)
        assert negative_triplets.size()[1] == 3
        negative_distances = self._distance(negative_triplets)
        return self.loss(positive_distances, negative_distances), positive_distances, negative_distances

    def predict(self, triplets):
        return self._distance(triplets)

    def loss(self, positive_distances, negative_distances):
        target = torch.tensor([-1], dtype=torch.long)
        return self.criterion(positive_distances, negative_distances, target)

    def _distance(self, triplets):
        assert triplets.size()[1] == 3
        heads = triplets[:, 0]
        relations = triplets[:, 1]
        tails = triplets[:, 2]
        return (self.entities_emb(heads) + self.relations_emb(relations) - self.entities_emb(tails)).norm(
            p=self.norm, dim=1)


def make_kg(n_entities=30, n_relations=3):
    """Relations are fixed shifts on a ring of entities: (e, r, (e + r + 1) % n)."""
    heads = torch.arange(n_entities).repeat(n_relations)
    rels = torch.arange(n_relations).repeat_interleave(n_entities)
    tails = (heads + rels + 1) % n_entities
    return torch.stack([heads, rels, tails], dim=1)


def corrupt(triplets, entity_count):
    head_or_tail = torch.randint(high=2, size=(triplets.size(0),))
    random_entities = torch.randint(high=entity_count, size=(triplets.size(0),))
    broken_heads = torch.where(head_or_tail == 1, random_entities, triplets[:, 0])
    broken_tails = torch.where(head_or_tail == 0, random_entities, triplets[:, 2])
    return torch.stack((broken_heads, triplets[:, 1], broken_tails), dim=1)


def hit_at_k(predictions, ground_truth_idx, k=10):
    assert predictions.size(0) == ground_truth_idx.size(0)
    zero_tensor = torch.tensor([0])
    one_tensor = torch.tensor([1])
    _, indices = predictions.topk(k=k, largest=False)
    return torch.where(indices == ground_truth_idx, one_tensor, zero_tensor).sum().item()


def mrr(predictions, ground_truth_idx):
    indices = predictions.argsort()
    return (1.0 / (indices == ground_truth_idx).nonzero()[:, 1].float().add(1.0)).sum().item()


def evaluate(model, triplets, entity_count):
    hits_at_1 = hits_at_3 = hits_at_10 = score = 0.0
    with torch.no_grad():
        heads, relations, tails = triplets[:, 0], triplets[:, 1], triplets[:, 2]
        n = heads.size(0)
        entity_ids = torch.arange(end=entity_count).unsqueeze(0)
        all_entities = entity_ids.repeat(n, 1)
        heads_r = heads.reshape(-1, 1).repeat(1, all_entities.size()[1])
        relations_r = relations.reshape(-1, 1).repeat(1, all_entities.size()[1])
        tails_r = tails.reshape(-1, 1).repeat(1, all_entities.size()[1])
        # tail prediction
        triplets_t = torch.stack((heads_r, relations_r, all_entities), dim=2).reshape(-1, 3)
        tails_predictions = model.predict(triplets_t).reshape(n, -1)
        # head prediction
        triplets_h = torch.stack((all_entities, relations_r, tails_r), dim=2).reshape(-1, 3)
        heads_predictions = model.predict(triplets_h).reshape(n, -1)
        predictions = torch.cat((tails_predictions, heads_predictions), dim=0)
        ground_truth_entity_id = torch.cat((tails.reshape(-1, 1), heads.reshape(-1, 1)))
        hits_at_1 += hit_at_k(predictions, ground_truth_entity_id, k=1)
        hits_at_3 += hit_at_k(predictions, ground_truth_entity_id, k=3)
        hits_at_10 += hit_at_k(predictions, ground_truth_entity_id, k=10)
        score += mrr(predictions, ground_truth_entity_id)
        ranks = (predictions.argsort(dim=1) == ground_truth_entity_id).nonzero()[:, 1] + 1
    examples = 2 * n
    return (hits_at_1 / examples * 100, hits_at_3 / examples * 100, hits_at_10 / examples * 100,
            score / examples * 100, ranks.float().mean().item())


def main():
    torch.manual_seed(1234)
    n_entities, n_relations = 30, 3
    kg = make_kg(n_entities, n_relations)
    print("triplets", kg.shape, kg.dtype, kg[:3].tolist())
    model = TransE(n_entities, n_relations, dim=16, norm=1, margin=1.0)
    print(model)
    print("entity emb", model.entities_emb)
    print("relation norms", model.relations_emb.weight[:3].norm(p=1, dim=1))
    print("padding row", model.entities_emb.weight[-1].abs().sum().item())

    # max_norm renormalises the looked-up rows in place
    emb = nn.Embedding(5, 4, max_norm=1.0)
    with torch.no_grad():
        emb.weight.mul_(10)
    before = emb.weight.norm(dim=1).clone()
    out = emb(torch.tensor([0, 2, 2]))
    print("looked-up norms", out.norm(dim=1))
    print("renormalised rows", (emb.weight.norm(dim=1) <= 1.0 + 1e-5).tolist(),
          "others kept", torch.equal(emb.weight.norm(dim=1)[[1, 3, 4]], before[[1, 3, 4]]))
    w = torch.ones(4, 2) * 3
    print("embedding_renorm_", torch.embedding_renorm_(w, torch.tensor([1, 3, 3]), 1.0, 2.0).norm(dim=1))
    print("F.normalize", F.normalize(torch.tensor([[3.0, 4.0], [0.0, 0.0]]), p=2, dim=1))
    print("torch.norm p=1", torch.norm(torch.tensor([[1.0, -2.0], [3.0, -4.0]]), p=1, dim=1))
    margin = nn.MarginRankingLoss(margin=0.5)
    print("margin loss", margin(torch.tensor([1.0, 2.0]), torch.tensor([1.2, 0.5]),
                                torch.tensor([1.0, -1.0])))

    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    print("before training", ["%.2f" % v for v in evaluate(model, kg, n_entities)])
    for epoch in range(1, 41):
        model.train()
        perm = torch.randperm(kg.size(0))
        loss_sum = 0.0
        for batch in kg[perm].split(30):
            negative = corrupt(batch, n_entities)
            optimizer.zero_grad()
            loss, pd, nd = model(batch, negative)
            loss.mean().backward()
            optimizer.step()
            loss_sum += loss.sum().item()
        if epoch % 10 == 0:
            print(f"epoch {epoch:3d} loss {loss_sum / kg.size(0):.4f}")
    model.eval()
    h1, h3, h10, mrr_score, mean_rank = evaluate(model, kg, n_entities)
    print(f"hits@1 {h1:.2f} hits@3 {h3:.2f} hits@10 {h10:.2f} mrr {mrr_score:.2f} mr {mean_rank:.2f}")
    print("entity norms <= 1", bool((model.entities_emb.weight[:-1].norm(dim=1) <= 1 + 1e-5).all()))


if __name__ == "__main__":
    main()
