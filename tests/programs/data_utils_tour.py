"""The torch.utils.data toolbox the way training scripts use it: map-style and iterable
datasets (sharded with get_worker_info), random_split with fractions and a seeded
Generator, Subset/ConcatDataset/TensorDataset, the samplers (SubsetRandomSampler,
WeightedRandomSampler, BatchSampler with and without drop_last), default_collate of
dicts, tuples, namedtuples and numbers, and a collate_fn that pads variable-length
sequences and packs them (enforce_sorted=False) for an LSTM classifier."""
import collections
import math
import random

import numpy as np
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence
from torch.utils.data import (BatchSampler, ConcatDataset, DataLoader, Dataset, IterableDataset,
                              RandomSampler, SequentialSampler, Subset, SubsetRandomSampler,
                              TensorDataset, WeightedRandomSampler, get_worker_info, random_split)
from torch.utils.data.dataloader import default_collate

torch.manual_seed(0)
Sample = collections.namedtuple('Sample', ['tokens', 'label'])


class RangeStream(IterableDataset):
    """Yields start..end-1, split between DataLoader workers (the docs' example)."""

    def __init__(self, start, end):
        super().__init__()
        assert end > start
        self.start, self.end = start, end

    def __iter__(self):
        worker_info = get_worker_info()
        if worker_info is None:  # single-process data loading
            iter_start, iter_end = self.start, self.end
        else:
            per_worker = int(math.ceil((self.end - self.start) / float(worker_info.num_workers)))
            iter_start = self.start + worker_info.id * per_worker
            iter_end = min(iter_start + per_worker, self.end)
        return iter(range(iter_start, iter_end))


class ToySequences(Dataset):
    """Variable-length token sequences; the label is whether token 1 occurs more than 7."""

    def __init__(self, n, seed):
        rng = np.random.RandomState(seed)
        self.items = []
        for _ in range(n):
            length = rng.randint(3, 9)
            toks = rng.randint(1, 10, size=length)
            self.items.append(Sample(torch.from_numpy(toks).long(), int((toks == 1).sum() > (toks == 7).sum())))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, idx):
        return self.items[idx]


def pad_collate(batch):
    tokens, labels = zip(*batch)
    lengths = torch.tensor([len(t) for t in tokens])
    padded = pad_sequence(tokens, batch_first=True, padding_value=0)
    return padded, lengths, torch.tensor(labels)


def seed_worker(worker_id):
    worker_seed = torch.initial_seed() % 2**32
    np.random.seed(worker_seed)
    random.seed(worker_seed)


# --- iterable datasets ---
ds = RangeStream(3, 10)
print('stream list', list(DataLoader(ds, num_workers=0)))
print('stream batched', [b.tolist() for b in DataLoader(ds, batch_size=3)])
print('stream no batch', [b for b in DataLoader(ds, batch_size=None)][:3])
print('worker info main', get_worker_info())

# --- map-style datasets and splits ---
x = torch.arange(20, dtype=torch.float32).reshape(10, 2)
y = torch.arange(10) % 3
tds = TensorDataset(x, y)
print('tensor dataset', len(tds), tds[3], [t.shape for t in tds.tensors])
g = torch.Generator().manual_seed(42)
train, val, test = random_split(tds, [0.5, 0.3, 0.2], generator=g)
print('split lengths', len(train), len(val), len(test))
print('split indices', train.indices, val.indices, test.indices)
a, b = random_split(range(7), [5, 2], generator=torch.Generator().manual_seed(1))
print('split range', list(a), list(b))
sub = Subset(tds, [9, 0, 4])
print('subset', len(sub), sub[0], sub[2][1].item())
cat = ConcatDataset([sub, tds])
print('concat', len(cat), cat.cumulative_sizes, cat[3][0].tolist(), cat[-1][0].tolist())

# --- samplers ---
print('sequential', list(SequentialSampler(range(4))))
print('random', list(RandomSampler(range(6), generator=torch.Generator().manual_seed(3))))
print('random replacement', list(RandomSampler(range(6), replacement=True, num_samples=8,
                                                generator=torch.Generator().manual_seed(3))))
srs = SubsetRandomSampler([10, 11, 12, 13, 14], generator=torch.Generator().manual_seed(5))
print('subset random', len(srs), list(srs))
weights = torch.tensor([0.1, 0.1, 5.0, 0.1, 1.0], dtype=torch.double)
wrs = WeightedRandomSampler(weights, num_samples=10, replacement=True,
                            generator=torch.Generator().manual_seed(7))
print('weighted', len(wrs), list(wrs))
wno = WeightedRandomSampler([1, 2, 3, 4], 4, replacement=False,
                            generator=torch.Generator().manual_seed(7))
print('weighted no replacement', sorted(wno))
print('weighted zero weights drawn last', list(WeightedRandomSampler(
    [3.0, 0.0, 1.0], 3, replacement=False, generator=torch.Generator().manual_seed(0)))[-1])
for drop_last in (False, True):
    bs = BatchSampler(SequentialSampler(range(10)), batch_size=3, drop_last=drop_last)
    print('batch sampler drop_last', drop_last, len(bs), list(bs))
bs = BatchSampler(range(5), 2, False)
print('batch sampler over range', list(bs))

# --- default_collate ---
print('collate numbers', default_collate([1, 2, 3]), default_collate([1.5, 2.5]))
print('collate bools', default_collate([True, False]))
print('collate strings', default_collate(['a', 'b']))
print('collate tuples', default_collate([(1, 2.0), (3, 4.0)]))
print('collate dicts', default_collate([{'a': torch.ones(2), 'b': 1}, {'a': torch.zeros(2), 'b': 2}]))
nt = default_collate([Sample(torch.tensor([1, 2]), 0), Sample(torch.tensor([3, 4]), 1)])
print('collate namedtuple', type(nt).__name__, nt)
print('collate numpy', default_collate([np.array([1.0, 2.0]), np.array([3.0, 4.0])]))
print('collate numpy scalars', default_collate([np.float64(1.5), np.float64(2.5)]))
print('collate nested', default_collate([[torch.tensor(1), {'k': (2, 3)}],
                                         [torch.tensor(4), {'k': (5, 6)}]]))

# --- DataLoader over a seeded generator ---
g = torch.Generator()
g.manual_seed(0)
loader = DataLoader(tds, batch_size=4, shuffle=True, num_workers=0,
                    worker_init_fn=seed_worker, generator=g)
print('loader len', len(loader), len(DataLoader(tds, batch_size=4, drop_last=True)))
for i, (xb, yb) in enumerate(loader):
    print('loader batch', i, xb[:, 0].tolist(), yb.tolist())
loader = DataLoader(tds, batch_sampler=BatchSampler(SubsetRandomSampler(range(6)), 4, True))
print('batch_sampler loader', len(loader), [xb.shape for xb, _ in loader])
wloader = DataLoader(tds, batch_size=5, sampler=WeightedRandomSampler(
    torch.ones(10), 10, generator=torch.Generator().manual_seed(2)))
print('weighted loader', [yb.shape for _, yb in wloader])

# --- padding and packing ---
seqs = [torch.tensor([1, 2, 3]), torch.tensor([4, 5]), torch.tensor([6, 7, 8, 9])]
padded = pad_sequence(seqs, batch_first=True, padding_value=-1)
print('padded', padded)
print('padded time-major', pad_sequence(seqs).shape)
lengths = torch.tensor([3, 2, 4])
emb = nn.Embedding(10, 2)
with torch.no_grad():
    emb.weight.copy_(torch.arange(20, dtype=torch.float32).reshape(10, 2) / 10)
packed = pack_padded_sequence(emb(padded.clamp(min=0)), lengths, batch_first=True,
                              enforce_sorted=False)
print('packed batch_sizes', packed.batch_sizes, 'sorted', packed.sorted_indices,
      'unsorted', packed.unsorted_indices)
print('packed data', packed.data.shape, packed.data[:, 0])
unpacked, out_lens = pad_packed_sequence(packed, batch_first=True, padding_value=0.0)
print('unpacked', unpacked.shape, out_lens, unpacked[1, :, 0])


class LSTMClassifier(nn.Module):
    def __init__(self, vocab=10, emb_dim=8, hidden=16):
        super().__init__()
        self.embedding = nn.Embedding(vocab, emb_dim, padding_idx=0)
        self.lstm = nn.LSTM(emb_dim, hidden, batch_first=True)
        self.fc = nn.Linear(hidden, 2)

    def forward(self, tokens, lengths):
        packed = pack_padded_sequence(self.embedding(tokens), lengths.cpu(), batch_first=True,
                                      enforce_sorted=False)
        _, (h_n, _) = self.lstm(packed)
        return self.fc(h_n[-1])


data = ToySequences(96, seed=0)
print('toy sample', data[0])
train_ds, val_ds = random_split(data, [0.75, 0.25], generator=torch.Generator().manual_seed(0))
train_loader = DataLoader(train_ds, batch_size=12, shuffle=True, collate_fn=pad_collate,
                          generator=torch.Generator().manual_seed(0), drop_last=True)
print('collated', [t.shape for t in next(iter(train_loader))])
model = LSTMClassifier()
print(model)
opt = torch.optim.Adam(model.parameters(), lr=0.02)
crit = nn.CrossEntropyLoss()
for epoch in range(6):
    total = 0.0
    for tokens, lens, labels in train_loader:
        opt.zero_grad()
        loss = crit(model(tokens, lens), labels)
        loss.backward()
        opt.step()
        total += loss.item() * labels.size(0)
    print(f'epoch {epoch} loss {total / (len(train_loader) * 12):.4f}')
model.eval()
with torch.no_grad():
    tokens, lens, labels = pad_collate([val_ds[i] for i in range(len(val_ds))])
    acc = (model(tokens, lens).argmax(1) == labels).float().mean().item()
print('val size', len(val_ds), 'accuracy', round(acc, 2) >= 0.0)
