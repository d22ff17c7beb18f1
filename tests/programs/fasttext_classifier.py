"""A fastText-style text classifier: the mean of a sentence's word and bigram embeddings
(nn.EmbeddingBag(mode='mean', sparse=True) over one flat index list with offsets), a
linear layer, and plain optim.SGD, which updates only the looked-up rows of the sparse
gradient. The sentences are synthetic: each class has its own cue words among shared
filler words.
"""

import random

import torch
import torch.nn as nn
import torch.nn.functional as F

random.seed(0)
torch.manual_seed(0)

CLASSES = ["sports", "weather", "food"]
CUES = {
    "sports": "goal match team score coach league win player".split(),
    "weather": "rain sun cloud storm wind snow cold forecast".split(),
    "food": "bread soup cheese pasta salad spice bake taste".split(),
}
FILLER = "the a today very some we it was and big".split()


def sentence(label):
    words = [random.choice(FILLER) for _ in range(random.randint(4, 9))]
    for _ in range(random.randint(1, 3)):
        words.insert(random.randrange(len(words) + 1), random.choice(CUES[label]))
    return words


def make_data(n):
    data = []
    for _ in range(n):
        label = random.randrange(len(CLASSES))
        data.append((sentence(CLASSES[label]), label))
    return data


train, test = make_data(600), make_data(150)
words = sorted({w for s, _ in train for w in s})
vocab = {w: i for i, w in enumerate(words)}
N_BUCKETS = 64  # hashed bigrams, as fastText adds them


def token_ids(text):
    ids = [vocab[w] for w in text if w in vocab]
    bigrams = [len(vocab) + hash(a + " " + b) % N_BUCKETS for a, b in zip(text, text[1:])]
    return ids + bigrams


def collate(batch):
    labels = torch.tensor([label for _, label in batch])
    ids = [torch.tensor(token_ids(text), dtype=torch.int64) for text, _ in batch]
    offsets = torch.tensor([0] + [len(t) for t in ids[:-1]]).cumsum(dim=0)
    return torch.cat(ids), offsets, labels


class FastText(nn.Module):
    def __init__(self, vocab_size, dim, n_classes):
        super().__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, dim, mode="mean", sparse=True)
        self.fc = nn.Linear(dim, n_classes)
        self.embedding.weight.data.uniform_(-0.5, 0.5)
        self.fc.weight.data.uniform_(-0.5, 0.5)
        self.fc.bias.data.zero_()

    def forward(self, text, offsets):
        return self.fc(self.embedding(text, offsets))


model = FastText(len(vocab) + N_BUCKETS, 16, len(CLASSES))
print(model)
optimizer = torch.optim.SGD(model.parameters(), lr=2.0)

BATCH = 32
for epoch in range(5):
    random.shuffle(train)
    total, batches = 0.0, 0
    for start in range(0, len(train), BATCH):
        text, offsets, labels = collate(train[start:start + BATCH])
        optimizer.zero_grad()
        loss = F.cross_entropy(model(text, offsets), labels)
        loss.backward()
        optimizer.step()
        total += loss.item()
        batches += 1
    print(f"epoch {epoch} loss {total / batches:.4f}")

print("embedding grad is sparse:", model.embedding.weight.grad.is_sparse,
      "fc grad is sparse:", model.fc.weight.grad.is_sparse)

with torch.no_grad():
    text, offsets, labels = collate(test)
    accuracy = (model(text, offsets).argmax(1) == labels).float().mean().item()
print(f"test accuracy {accuracy:.3f}")
for words_ in (["the", "storm", "was", "cold"], ["we", "bake", "some", "bread"]):
    text, offsets, _ = collate([(words_, 0)])
    print(" ".join(words_), "->", CLASSES[model(text, offsets).argmax(1).item()])
