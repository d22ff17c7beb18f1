"""A data pipeline in depth, the way training scripts build one: a map-style Dataset
with an imbalanced label set, random_split with a seeded Generator, Subset and
ConcatDataset, a WeightedRandomSampler that rebalances the classes, a custom Sampler and
BatchSampler (bucketing by length), a collate_fn padding variable-length sequences with
pad_sequence, default_collate of dicts and namedtuples, an IterableDataset sharded
across workers with get_worker_info(), and DataLoader(num_workers=2, worker_init_fn=...,
persistent_workers=True, prefetch_factor=..., pin_memory=True)."""
import argparse
import collections
import math

import numpy as np
import torch
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import (BatchSampler, ConcatDataset, DataLoader, Dataset, IterableDataset,
                              Sampler, Subset, WeightedRandomSampler, get_worker_info,
                              random_split)
from torch.utils.data.dataloader import default_collate

parser = argparse.ArgumentParser()
parser.add_argument('--epochs', type=int, default=2)
parser.add_argument('--num-workers', type=int, default=2)
args = parser.parse_args()

torch.manual_seed(0)

Point = collections.namedtuple('Point', ['x', 'y'])


class ImbalancedDataset(Dataset):
    """Features drawn around one centre per class; class 0 is nine times as common."""

    def __init__(self, n=200, num_classes=3, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.labels = torch.cat([torch.zeros(int(n * 0.8), dtype=torch.long),
                                 torch.randint(1, num_classes, (n - int(n * 0.8),), generator=g)])
        centres = torch.arange(num_classes, dtype=torch.float32).unsqueeze(1) * 2.0
        self.features = centres[self.labels] + 0.1 * torch.randn(n, 4, generator=g)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        return self.features[idx], self.labels[idx]


class SequenceDataset(Dataset):
    """Token sequences of lengths 2..9 with their lengths and a label: a dict per item."""

    def __init__(self, n=40):
        rng = np.random.RandomState(0)
        self.items = []
        for i in range(n):
            length = int(rng.randint(2, 10))
            tokens = torch.from_numpy(rng.randint(1, 50, size=length)).long()
            self.items.append({'tokens': tokens, 'label': i % 2})

    def __len__(self):
        return len(self.items)

    def __getitem__(self, idx):
        return self.items[idx]


def pad_collate(batch):
    tokens = [item['tokens'] for item in batch]
    lengths = torch.tensor([len(t) for t in tokens])
    padded = pad_sequence(tokens, batch_first=True, padding_value=0)
    labels = torch.tensor([item['label'] for item in batch])
    return padded, lengths, labels


class BucketSampler(Sampler):
    """Yields indices sorted by length inside fixed-size chunks, so batches pad little."""

    def __init__(self, lengths, chunk):
        self.lengths = lengths
        self.chunk = chunk

    def __iter__(self):
        order = list(range(len(self.lengths)))
        for start in range(0, len(order), self.chunk):
            part = order[start:start + self.chunk]
            yield from sorted(part, key=lambda i: self.lengths[i])

    def __len__(self):
        return len(self.lengths)


class ShardedRange(IterableDataset):
    """An IterableDataset over [start, end) that splits itself between DataLoader workers."""

    def __init__(self, start, end):
        super().__init__()
        assert end > start
        self.start, self.end = start, end

    def __iter__(self):
        worker_info = get_worker_info()
        if worker_info is None:  # single-process data loading
            iter_start, iter_end = self.start, self.end
        else:  # split the workload
            per_worker = int(math.ceil((self.end - self.start) / float(worker_info.num_workers)))
            worker_id = worker_info.id
            iter_start = self.start + worker_id * per_worker
            iter_end = min(iter_start + per_worker, self.end)
        return iter(torch.arange(iter_start, iter_end).tolist())


def seed_worker(worker_id):
    worker_seed = torch.initial_seed() % 2 ** 32
    np.random.seed(worker_seed)
    info = get_worker_info()
    assert info.id == worker_id and info.num_workers == args.num_workers


def class_counts(labels, num_classes=3):
    return torch.bincount(labels, minlength=num_classes).tolist()


# --- map-style data, splits, subsets -------------------------------------------------
dataset = ImbalancedDataset()
print(f"dataset: {len(dataset)} items, class counts {class_counts(dataset.labels)}")
x0, y0 = dataset[0]
print("first item:", x0.shape, x0.dtype, y0.item())

generator = torch.Generator().manual_seed(42)
train_set, val_set = random_split(dataset, [160, 40], generator=generator)
print(f"random_split: train {len(train_set)} val {len(val_set)} "
      f"(disjoint: {set(train_set.indices).isdisjoint(val_set.indices)})")
fractions = random_split(range(10), [0.5, 0.3, 0.2], generator=torch.Generator().manual_seed(1))
print("fractional split sizes:", [len(s) for s in fractions])

head = Subset(dataset, range(10))
both = ConcatDataset([head, Subset(dataset, [199, 198])])
print(f"ConcatDataset: {len(both)} items, cumulative sizes {both.cumulative_sizes}, "
      f"last label {both[-1][1].item()}")

# --- rebalancing with WeightedRandomSampler -------------------------------------------
train_labels = dataset.labels[train_set.indices]
counts = torch.bincount(train_labels, minlength=3).float()
class_weights = 1.0 / counts
sample_weights = class_weights[train_labels]
print("train class counts:", counts.long().tolist())
print("class weights:", [f"{w:.4f}" for w in class_weights.tolist()])
sampler = WeightedRandomSampler(sample_weights, num_samples=len(sample_weights), replacement=True,
                                generator=torch.Generator().manual_seed(0))
loader = DataLoader(train_set, batch_size=32, sampler=sampler, num_workers=args.num_workers,
                    worker_init_fn=seed_worker, persistent_workers=args.num_workers > 0,
                    prefetch_factor=2 if args.num_workers > 0 else None, pin_memory=True)
print("batches per epoch:", len(loader), "pin_memory:", loader.pin_memory)

model = torch.nn.Linear(4, 3)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(args.epochs):
    seen = torch.zeros(3, dtype=torch.long)
    total, n = 0.0, 0
    for xb, yb in loader:
        assert xb.shape[1] == 4 and xb.dtype == torch.float32 and yb.dtype == torch.int64
        seen += torch.bincount(yb, minlength=3)
        loss = torch.nn.functional.cross_entropy(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item() * len(yb)
        n += len(yb)
    balanced = bool((seen.float() / seen.sum() - 1 / 3).abs().max() < 0.15)
    print(f"epoch {epoch} loss {total / n:.4f} samples {int(seen.sum())} balanced {balanced}")
    print(f"epoch {epoch} class counts {seen.tolist()}")

with torch.no_grad():
    val_x = torch.stack([val_set[i][0] for i in range(len(val_set))])
    val_y = torch.stack([val_set[i][1] for i in range(len(val_set))])
    acc = (model(val_x).argmax(1) == val_y).float().mean().item()
print(f"val accuracy {acc:.2f}")

# --- sequential loading keeps the order; drop_last --------------------------------------
plain = DataLoader(head, batch_size=4, shuffle=False, drop_last=True)
print("drop_last batches:", len(plain), [yb.tolist() for _, yb in plain])
shuffled = DataLoader(head, batch_size=5, shuffle=True, generator=torch.Generator().manual_seed(3))
print("shuffled covers all:", sorted(torch.cat([yb for _, yb in shuffled]).tolist()) ==
      sorted(dataset.labels[:10].tolist()))

# --- the other samplers and datasets ------------------------------------------------------
from torch.utils.data import (ChainDataset, RandomSampler, SequentialSampler, StackDataset,
                              SubsetRandomSampler, TensorDataset)

tensors = TensorDataset(torch.arange(6).float().unsqueeze(1), torch.arange(6) % 2)
print("TensorDataset:", len(tensors), tensors[5], tensors.tensors[0].shape)
print("SequentialSampler:", list(SequentialSampler(tensors)))
rs = RandomSampler(tensors, replacement=True, num_samples=8, generator=torch.Generator().manual_seed(5))
print("RandomSampler with replacement:", len(rs), list(rs))
srs = SubsetRandomSampler([0, 2, 4], generator=torch.Generator().manual_seed(5))
print("SubsetRandomSampler:", len(srs), sorted(srs))
stacked = StackDataset(tensors, tensors)
print("StackDataset:", len(stacked), stacked[1])
keyed = StackDataset(inp=tensors, tgt=range(6))
print("StackDataset(**kw):", keyed[2])
print("ChainDataset:", list(ChainDataset([ShardedRange(0, 3), ShardedRange(10, 12)])))
print("BatchSampler drop_last:", list(BatchSampler(SequentialSampler(range(7)), 3, True)))

# --- variable-length sequences: bucketing sampler, BatchSampler, padding collate ------
seqs = SequenceDataset()
lengths = [len(item['tokens']) for item in seqs.items]
batch_sampler = BatchSampler(BucketSampler(lengths, chunk=8), batch_size=4, drop_last=False)
print("batch sampler:", len(batch_sampler), "batches; first", list(batch_sampler)[0])
seq_loader = DataLoader(seqs, batch_sampler=batch_sampler, collate_fn=pad_collate)
pad_total = 0
for i, (padded, lens, labels) in enumerate(seq_loader):
    pad_total += int((padded == 0).sum())
    if i < 2:
        print(f"batch {i}: padded {tuple(padded.shape)} lengths {lens.tolist()} labels {labels.tolist()}")
        print(padded)
print("padding tokens with bucketing:", pad_total)
naive = sum(int((p == 0).sum()) for p, _, _ in DataLoader(seqs, batch_size=4, collate_fn=pad_collate))
print("padding tokens without:", naive)

# --- default_collate of dicts and namedtuples ------------------------------------------
batch = default_collate([{'x': torch.tensor([1.0, 2.0]), 'id': 3, 'name': 'a'},
                         {'x': torch.tensor([3.0, 4.0]), 'id': 4, 'name': 'b'}])
print(batch)
points = default_collate([Point(1.5, np.array([1, 2])), Point(2.5, np.array([3, 4]))])
print(points)
print(type(points).__name__, points.x.dtype, points.y.dtype)
nested = default_collate([(torch.zeros(2), {'m': [1, 2]}), (torch.ones(2), {'m': [3, 4]})])
print(nested)

# --- an IterableDataset sharded across workers --------------------------------------------
ds = ShardedRange(3, 13)
print("single process:", list(DataLoader(ds, batch_size=None)))
for workers in (1, args.num_workers):
    got = [int(v) for v in DataLoader(ds, batch_size=None, num_workers=workers)]
    print(f"num_workers={workers}:", sorted(got), "order", got)
batched = [b.tolist() for b in DataLoader(ds, batch_size=3, num_workers=args.num_workers)]
print("batched shards:", batched)
