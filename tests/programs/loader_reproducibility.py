"""Data loading as real training scripts use it, with the PyTorch reproducibility recipe:
DataLoader(num_workers=2, persistent_workers=True, prefetch_factor=2,
worker_init_fn=seed_worker, generator=g) seeding numpy/random from torch.initial_seed() in
each worker; an IterableDataset sharded with get_worker_info(); WeightedRandomSampler,
SubsetRandomSampler, BatchSampler(drop_last=...), DistributedSampler with set_epoch;
ConcatDataset, ChainDataset, StackDataset, Subset, random_split with fractions;
a padding collate_fn (pad_sequence, lengths, masks); default_collate of dicts, namedtuples,
dataclasses and numpy arrays; default_convert; len() of every loader. Prints the order of
sample indices per epoch, which must be torch's seeded order exactly."""
import collections
import dataclasses
import math
import random

import numpy as np
import torch
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import (
    BatchSampler,
    ChainDataset,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    StackDataset,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    get_worker_info,
    random_split,
)
from torch.utils.data._utils.collate import default_convert
from torch.utils.data.dataloader import default_collate
from torch.utils.data.distributed import DistributedSampler

torch.manual_seed(0)


def seed_worker(worker_id):
    worker_seed = torch.initial_seed() % 2**32
    np.random.seed(worker_seed)
    random.seed(worker_seed)


class IndexDataset(Dataset):
    """Returns its index (so the loader order is visible) and a worker-seeded draw."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        info = get_worker_info()
        wid = -1 if info is None else info.id
        return {"idx": i, "worker": wid, "np": float(np.random.rand()),
                "rand": random.random(), "torch": torch.rand(1).item()}


# ---------------------------------------------------------------- the reproducibility recipe
g = torch.Generator()
g.manual_seed(0)
ds = IndexDataset(12)
loader = DataLoader(ds, batch_size=3, shuffle=True, num_workers=2, persistent_workers=True,
                    prefetch_factor=2, worker_init_fn=seed_worker, generator=g)
print("len(loader)", len(loader), "prefetch", loader.prefetch_factor,
      "persistent", loader.persistent_workers)
for epoch in range(2):
    for batch in loader:
        print(f"epoch {epoch} idx {batch['idx'].tolist()} worker {batch['worker'].tolist()}"
              f" np {[round(v, 6) for v in batch['np'].tolist()]}"
              f" rand {[round(v, 6) for v in batch['rand'].tolist()]}"
              f" torch {[round(v, 6) for v in batch['torch'].tolist()]}")
print("batch dtypes", {k: v.dtype for k, v in batch.items()})

# the same generator seed gives the same order again (a fresh loader)
g2 = torch.Generator().manual_seed(0)
again = DataLoader(ds, batch_size=3, shuffle=True, num_workers=0, generator=g2)
print("same order in-process", [b["idx"].tolist() for b in again])
print("in-process worker", next(iter(again))["worker"].tolist())


# ---------------------------------------------------------------- sharded IterableDataset
class RangeStream(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            lo, hi = self.start, self.end
        else:
            per = int(math.ceil((self.end - self.start) / float(info.num_workers)))
            lo = self.start + info.id * per
            hi = min(lo + per, self.end)
        return iter(range(lo, hi))


stream = RangeStream(3, 10)
print("stream 0 workers", [b.tolist() for b in DataLoader(stream, batch_size=2)])
print("stream 2 workers", [b.tolist() for b in DataLoader(stream, batch_size=2, num_workers=2)])
print("stream no batch", list(DataLoader(stream, batch_size=None)))
try:
    len(DataLoader(stream, batch_size=2))
except TypeError as e:
    print("len(iterable loader)", type(e).__name__, e)


class SizedStream(RangeStream):
    def __len__(self):
        return self.end - self.start


print("len(sized stream loader)", len(DataLoader(SizedStream(0, 7), batch_size=3)),
      len(DataLoader(SizedStream(0, 7), batch_size=3, drop_last=True)))
chain = ChainDataset([RangeStream(0, 3), RangeStream(10, 12)])
print("chain", list(chain))
print("chain loader", [b.tolist() for b in DataLoader(chain, batch_size=2)])

# ---------------------------------------------------------------- samplers
torch.manual_seed(1)
weights = torch.tensor([0.1, 0.1, 0.4, 0.4, 1.0, 2.0])
wrs = WeightedRandomSampler(weights, num_samples=10, replacement=True)
print("weighted", list(wrs), len(wrs))
wrs_nr = WeightedRandomSampler([1.0, 2.0, 3.0, 4.0], 3, replacement=False,
                               generator=torch.Generator().manual_seed(2))
print("weighted no replacement", list(wrs_nr))
srs = SubsetRandomSampler([10, 20, 30, 40, 50], generator=torch.Generator().manual_seed(3))
print("subset random", list(srs), list(srs), len(srs))
bs = BatchSampler(SequentialSampler(range(10)), batch_size=4, drop_last=False)
print("batch sampler", list(bs), len(bs))
bs_drop = BatchSampler(RandomSampler(range(10), generator=torch.Generator().manual_seed(4)),
                       batch_size=4, drop_last=True)
print("batch sampler drop_last", list(bs_drop), len(bs_drop))
rs = RandomSampler(range(5), replacement=True, num_samples=8,
                   generator=torch.Generator().manual_seed(5))
print("random with replacement", list(rs), len(rs))
print("random num_samples", list(RandomSampler(range(4), num_samples=10,
                                               generator=torch.Generator().manual_seed(6))))
loader_bs = DataLoader(TensorDataset(torch.arange(10.0)), batch_sampler=bs_drop)
print("loader batch_sampler", [b[0].tolist() for b in loader_bs], len(loader_bs))
loader_w = DataLoader(TensorDataset(torch.arange(6)), batch_size=4, sampler=wrs)
print("loader weighted", [b[0].tolist() for b in loader_w], len(loader_w))

# ---------------------------------------------------------------- DistributedSampler
data = TensorDataset(torch.arange(11))
for rank in range(2):
    ds_r = DistributedSampler(data, num_replicas=2, rank=rank, shuffle=True, seed=42)
    for epoch in range(2):
        ds_r.set_epoch(epoch)
        print(f"dist rank {rank} epoch {epoch}", list(ds_r), len(ds_r))
    nodrop = DistributedSampler(data, num_replicas=2, rank=rank, shuffle=False, drop_last=True)
    print(f"dist rank {rank} drop_last", list(nodrop), len(nodrop), nodrop.total_size)
dl_dist = DataLoader(data, batch_size=2, sampler=DistributedSampler(data, 3, 1, seed=7))
print("dist loader", [b[0].tolist() for b in dl_dist], len(dl_dist))
try:
    DistributedSampler(data, num_replicas=2, rank=2)
except ValueError as e:
    print("bad rank", e)

# ---------------------------------------------------------------- dataset combinators
a = TensorDataset(torch.arange(5), torch.arange(5) * 10)
b = TensorDataset(torch.arange(100, 103), torch.arange(3) * -1)
cat = ConcatDataset([a, b])
print("concat", len(cat), cat.cumulative_sizes, cat[4], cat[5], cat[-1])
stack = StackDataset(x=torch.arange(4), y=torch.arange(4) ** 2)
print("stack dict", len(stack), stack[2])
stack_t = StackDataset(torch.arange(3), [10, 11, 12])
print("stack tuple", stack_t[1], stack_t.__getitems__([0, 2]))
print("stack loader", list(DataLoader(stack, batch_size=3)))
sub = Subset(cat, [0, 6, 7])
print("subset", len(sub), sub[1], sub.indices)
parts = random_split(range(10), [0.5, 0.3, 0.2], generator=torch.Generator().manual_seed(42))
print("random_split fractions", [list(p) for p in parts], [len(p) for p in parts])
parts2 = random_split(range(7), [0.5, 0.5], generator=torch.Generator().manual_seed(1))
print("random_split remainder", [list(p) for p in parts2])
parts3 = random_split(TensorDataset(torch.arange(9)), [4, 5],
                      generator=torch.Generator().manual_seed(0))
print("random_split counts", [p.indices for p in parts3], type(parts3[0]).__name__)
try:
    random_split(range(5), [3, 3])
except ValueError as e:
    print("random_split error", e)

# ---------------------------------------------------------------- collate functions
sequences = [torch.arange(n) + 1 for n in (3, 1, 4, 2)]


def pad_collate(batch):
    seqs, labels = zip(*batch)
    lengths = torch.tensor([len(s) for s in seqs])
    padded = pad_sequence(seqs, batch_first=True, padding_value=0)
    mask = torch.arange(padded.size(1))[None, :] < lengths[:, None]
    return padded, lengths, mask, torch.tensor(labels)


pairs = list(zip(sequences, [0, 1, 0, 1]))
for padded, lengths, mask, labels in DataLoader(pairs, batch_size=2, collate_fn=pad_collate):
    print("padded", padded.tolist(), "lengths", lengths.tolist(), "mask", mask.tolist(),
          labels.tolist(), padded.dtype, mask.dtype)
print("pad_sequence time-major", pad_sequence(sequences).shape,
      pad_sequence(sequences, padding_side="left", batch_first=True).tolist())

Point = collections.namedtuple("Point", ["x", "y"])


@dataclasses.dataclass
class Sample:
    image: np.ndarray
    label: int


print("collate dicts", default_collate([{"a": 1, "b": 2.5}, {"a": 3, "b": 4.5}]))
print("collate namedtuple", default_collate([Point(1, 2.0), Point(3, 4.0)]))
arrays = [np.arange(3, dtype=np.float64), np.arange(3, 6, dtype=np.float64)]
col = default_collate(arrays)
print("collate numpy", col, col.dtype)
print("collate numpy scalars", default_collate([np.float32(1.5), np.float32(2.5)]),
      default_collate([np.int64(1), np.int64(2)]))
print("collate strings", default_collate(["a", "b"]), default_collate([(1, "x"), (2, "y")]))
print("collate nested", default_collate([[1, (2, 3)], [4, (5, 6)]]))
try:
    default_collate([Sample(np.zeros(2), 0), Sample(np.ones(2), 1)])
except TypeError as e:
    print("collate dataclass", type(e).__name__, e)
print("convert", default_convert(np.arange(3)), default_convert([np.arange(2), 1, "s"]))
print("convert dict", default_convert({"k": np.array([1.0])}),
      default_convert(Point(np.zeros(1), 2)))
print("convert str array", default_convert(np.array(["a", "b"])))
print("loader dataclass collate_fn", [
    (b[0].shape, b[1].tolist()) for b in DataLoader(
        [Sample(np.full(2, i, np.float32), i) for i in range(4)], batch_size=2,
        collate_fn=lambda s: (torch.from_numpy(np.stack([x.image for x in s])),
                              torch.tensor([x.label for x in s])))])
print("loader batch_size=None", list(DataLoader([np.arange(2), np.arange(2, 4)], batch_size=None)))
print("loader no collate arrays", next(iter(DataLoader(arrays, batch_size=2))).dtype)
