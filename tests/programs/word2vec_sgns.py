"""Skip-gram with negative sampling (word2vec), the classic PyTorch way: two
nn.Embedding(sparse=True) tables (centre words u, context words v), scores by torch.bmm,
F.logsigmoid losses, optim.SparseAdam; then the nearest words by cosine similarity.

The corpus is synthetic: sentences drawn from a few topics, each with its own words, so
words of one topic share contexts and should end up close together.
"""

import random

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

random.seed(0)
np.random.seed(0)
torch.manual_seed(0)

TOPICS = {
    "animals": "cat dog horse cow sheep goat pig duck".split(),
    "fruit": "apple pear plum grape lemon mango peach melon".split(),
    "tools": "hammer saw drill wrench chisel pliers file axe".split(),
    "colours": "red blue green yellow purple orange pink brown".split(),
}
FILLER = "the a and of with on".split()


def make_corpus(n_sentences=400, length=8):
    names = sorted(TOPICS)
    sentences = []
    for _ in range(n_sentences):
        words = TOPICS[names[random.randrange(len(names))]]
        sentence = [random.choice(words) if random.random() < 0.75 else random.choice(FILLER)
                    for _ in range(length)]
        sentences.append(sentence)
    return sentences


corpus = make_corpus()
vocab = sorted({w for s in corpus for w in s})
word2idx = {w: i for i, w in enumerate(vocab)}
counts = np.zeros(len(vocab))
for s in corpus:
    for w in s:
        counts[word2idx[w]] += 1
print(f"vocabulary {len(vocab)} words, corpus {sum(len(s) for s in corpus)} tokens")

# the unigram distribution to the 3/4 power, word2vec's noise distribution
noise = torch.tensor(counts ** 0.75 / (counts ** 0.75).sum(), dtype=torch.float)

WINDOW = 2
pairs = []
for s in corpus:
    ids = [word2idx[w] for w in s]
    for i, c in enumerate(ids):
        for j in range(max(0, i - WINDOW), min(len(ids), i + WINDOW + 1)):
            if j != i:
                pairs.append((c, ids[j]))
pairs = torch.tensor(pairs)
print(f"{len(pairs)} (centre, context) pairs")


class SkipGramNeg(nn.Module):
    def __init__(self, vocab_size, dim):
        super().__init__()
        self.u_embeddings = nn.Embedding(vocab_size, dim, sparse=True)
        self.v_embeddings = nn.Embedding(vocab_size, dim, sparse=True)
        init_range = 0.5 / dim
        self.u_embeddings.weight.data.uniform_(-init_range, init_range)
        self.v_embeddings.weight.data.uniform_(-0, 0)

    def forward(self, pos_u, pos_v, neg_v):
        emb_u = self.u_embeddings(pos_u)                        # (B, D)
        emb_v = self.v_embeddings(pos_v)                        # (B, D)
        score = torch.mul(emb_u, emb_v).sum(dim=1)
        score = F.logsigmoid(score)
        neg_emb_v = self.v_embeddings(neg_v)                    # (B, K, D)
        neg_score = torch.bmm(neg_emb_v, emb_u.unsqueeze(2)).squeeze(2)
        neg_score = F.logsigmoid(-neg_score).sum(dim=1)
        return -(score + neg_score).mean()


model = SkipGramNeg(len(vocab), 16)
print(model)
optimizer = torch.optim.SparseAdam(list(model.parameters()), lr=0.02)

BATCH, NEG = 128, 5
for epoch in range(4):
    perm = torch.randperm(len(pairs))
    total, batches = 0.0, 0
    for start in range(0, len(pairs), BATCH):
        batch = pairs[perm[start:start + BATCH]]
        neg = torch.multinomial(noise, batch.shape[0] * NEG, replacement=True)
        optimizer.zero_grad()
        loss = model(batch[:, 0], batch[:, 1], neg.view(batch.shape[0], NEG))
        loss.backward()
        optimizer.step()
        total += loss.item()
        batches += 1
    print(f"epoch {epoch} loss {total / batches:.4f}")

grad = model.u_embeddings.weight.grad
print("grad is sparse:", grad.is_sparse, "layout:", grad.layout)

with torch.no_grad():
    emb = F.normalize(model.u_embeddings.weight, dim=1)
    sims = emb @ emb.t()


def topic_of(word):
    return next((t for t, ws in TOPICS.items() if word in ws), "filler")


same_topic = 0
for word in ["cat", "apple", "hammer", "red"]:
    i = word2idx[word]
    nearest = [vocab[j] for j in sims[i].argsort(descending=True)[1:4].tolist()]
    same_topic += sum(topic_of(w) == topic_of(word) for w in nearest)
    print(f"nearest to {word}: {', '.join(nearest)}")
print(f"neighbours in the same topic: {same_topic}/12")
