"""A word-level sequence tagger over variable-length sentences, as in the PyTorch NLP
tutorials and many BiGRU taggers: nn.Embedding(padding_idx=0), pad_sequence, a DataLoader
with a collate_fn, pack_padded_sequence(enforce_sorted=False), a bidirectional nn.GRU,
pad_packed_sequence, CrossEntropyLoss(ignore_index=-100), state_dict save/load."""
import argparse
import os
import random

import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence
from torch.utils.data import DataLoader, Dataset

parser = argparse.ArgumentParser(description='BiGRU tagger')
parser.add_argument('--epochs', type=int, default=4)
parser.add_argument('--batch-size', type=int, default=16)
parser.add_argument('--emb', type=int, default=16)
parser.add_argument('--hidden', type=int, default=24)
parser.add_argument('--save', type=str, default='tagger.pt')
args = parser.parse_args()
print(args)

random.seed(0)
torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

NOUNS = "cat dog bird fish tree car house river".split()
VERBS = "runs sees eats likes finds jumps".split()
DETS = "the a this that".split()
ADJS = "big small red old green".split()
TAGS = ["<pad>", "DET", "ADJ", "NOUN", "VERB"]


def make_sentence():
    words, tags = [], []
    for _ in range(random.randint(1, 2)):
        words.append(random.choice(DETS)); tags.append("DET")
        if random.random() < 0.5:
            words.append(random.choice(ADJS)); tags.append("ADJ")
        words.append(random.choice(NOUNS)); tags.append("NOUN")
        words.append(random.choice(VERBS)); tags.append("VERB")
    return words, tags


sentences = [make_sentence() for _ in range(300)]
word_to_ix = {"<pad>": 0, "<unk>": 1}
for words, _ in sentences:
    for w in words:
        word_to_ix.setdefault(w, len(word_to_ix))
tag_to_ix = {t: i for i, t in enumerate(TAGS)}
print(f"vocab size {len(word_to_ix)}, tags {len(tag_to_ix)}")


class TaggingDataset(Dataset):
    def __init__(self, data):
        self.data = data

    def __len__(self):
        return len(self.data)

    def __getitem__(self, idx):
        words, tags = self.data[idx]
        return (torch.tensor([word_to_ix.get(w, 1) for w in words], dtype=torch.long),
                torch.tensor([tag_to_ix[t] for t in tags], dtype=torch.long))


def collate_fn(batch):
    seqs, tags = zip(*batch)
    lengths = torch.tensor([len(s) for s in seqs])
    seqs = pad_sequence(seqs, batch_first=True, padding_value=0)
    tags = pad_sequence(tags, batch_first=True, padding_value=-100)
    return seqs, tags, lengths


class BiGRUTagger(nn.Module):
    def __init__(self, vocab_size, tagset_size, embedding_dim, hidden_dim):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=0)
        self.gru = nn.GRU(embedding_dim, hidden_dim, num_layers=1, batch_first=True,
                          bidirectional=True)
        self.dropout = nn.Dropout(0.1)
        self.hidden2tag = nn.Linear(2 * hidden_dim, tagset_size)

    def forward(self, x, lengths):
        embedded = self.embedding(x)
        packed = pack_padded_sequence(embedded, lengths.cpu(), batch_first=True,
                                      enforce_sorted=False)
        packed_out, hidden = self.gru(packed)
        out, out_lengths = pad_packed_sequence(packed_out, batch_first=True,
                                               total_length=x.size(1))
        return self.hidden2tag(self.dropout(out)), hidden


train_set = TaggingDataset(sentences[:240])
test_set = TaggingDataset(sentences[240:])
train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, collate_fn=collate_fn)
test_loader = DataLoader(test_set, batch_size=64, shuffle=False, collate_fn=collate_fn)

model = BiGRUTagger(len(word_to_ix), len(tag_to_ix), args.emb, args.hidden).to(device)
print(model)
print("padding row is zero:", bool((model.embedding.weight[0] == 0).all()))
criterion = nn.CrossEntropyLoss(ignore_index=-100)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.9)

seqs, tags, lengths = next(iter(test_loader))
packed = pack_padded_sequence(seqs, lengths, batch_first=True, enforce_sorted=False)
print("packed", packed.data.shape, packed.batch_sizes[:4], packed.sorted_indices is not None)


def evaluate(loader):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for seqs, tags, lengths in loader:
            logits, _ = model(seqs.to(device), lengths)
            mask = tags != -100
            correct += (logits.argmax(-1)[mask] == tags[mask]).sum().item()
            total += mask.sum().item()
    return correct / total


for epoch in range(1, args.epochs + 1):
    model.train()
    total_loss = 0.0
    for seqs, tags, lengths in train_loader:
        seqs, tags = seqs.to(device), tags.to(device)
        optimizer.zero_grad()
        logits, hidden = model(seqs, lengths)
        loss = criterion(logits.view(-1, logits.size(-1)), tags.view(-1))
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
        total_loss += loss.item() * seqs.size(0)
    scheduler.step()
    print(f"epoch {epoch} | loss {total_loss / len(train_set):.4f} | "
          f"hidden {tuple(hidden.shape)} | lr {scheduler.get_last_lr()[0]:.4f}")

acc = evaluate(test_loader)
print(f"test accuracy {acc:.3f}")
torch.save(model.state_dict(), args.save)
reloaded = BiGRUTagger(len(word_to_ix), len(tag_to_ix), args.emb, args.hidden)
reloaded.load_state_dict(torch.load(args.save, weights_only=True))
reloaded.eval()
model.eval()
s, t, l = next(iter(test_loader))
with torch.no_grad():
    print("reloaded model agrees:", torch.allclose(reloaded(s, l)[0], model(s, l)[0]))
os.remove(args.save)
sent = "the big dog sees a cat".split()
ids = torch.tensor([[word_to_ix.get(w, 1) for w in sent]])
with torch.no_grad():
    pred = model(ids, torch.tensor([len(sent)]))[0].argmax(-1)[0]
print(" ".join(f"{w}/{TAGS[p]}" for w, p in zip(sent, pred.tolist())))
