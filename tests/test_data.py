"""ember.utils.data: datasets, samplers, collation, the DataLoader (with and without worker
processes) and the Digits dataset. PyTorch (when installed) is the oracle for the
deterministic parts: batching, lengths, collation, argument checks."""

from __future__ import annotations

import collections
import gc
import math
import multiprocessing as mp
import os
import random
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import ember
from ember.utils.data import (
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
    default_collate,
    default_convert,
    get_worker_info,
    random_split,
)
from ember.utils.data import datasets as ember_datasets

Point = collections.namedtuple("Point", ["x", "y"])


def gen(seed: int) -> ember.Generator:
    return ember.Generator().manual_seed(seed)


def to_py(obj):
    """Tensors (ember or torch) -> ("tensor", dtype name, nested list); containers kept."""
    if isinstance(obj, ember.Tensor) or type(obj).__module__.startswith("torch"):
        return ("tensor", str(obj.dtype).split(".")[-1], obj.tolist())
    if isinstance(obj, dict):
        return {k: to_py(v) for k, v in obj.items()}
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return (type(obj).__name__, *[to_py(v) for v in obj])
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_py(v) for v in obj)
    return obj


def batches(loader) -> list:
    return [to_py(b) for b in loader]


@pytest.fixture(autouse=True)
def no_leftover_workers():
    """Every test must leave no worker process behind."""
    yield
    assert mp.active_children() == []


def small_dataset(n: int = 10) -> TensorDataset:
    return TensorDataset(ember.arange(2 * n, dtype=ember.float32).reshape(n, 2), ember.arange(n))


# -- datasets ---------------------------------------------------------------------------------

def test_tensor_dataset_items_and_len():
    x = ember.arange(12).reshape(4, 3)
    y = ember.tensor([10, 11, 12, 13])
    ds = TensorDataset(x, y)
    assert len(ds) == 4
    a, b = ds[2]
    assert a.tolist() == [6, 7, 8] and b.item() == 12


def test_tensor_dataset_size_mismatch():
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(ember.zeros(3, 2), ember.zeros(4))


def test_subset_concat_chain_stack():
    base = small_dataset(6)
    sub = Subset(base, [5, 0, 3])
    assert len(sub) == 3 and sub[0][1].item() == 5 and sub[2][1].item() == 3
    assert [s[1].item() for s in sub.__getitems__([1, 2])] == [0, 3]

    cat = ConcatDataset([range(3), range(10, 14)])
    assert len(cat) == 7
    assert [cat[i] for i in range(7)] == [0, 1, 2, 10, 11, 12, 13]
    assert cat[-1] == 13 and cat[-7] == 0
    assert cat.cumulative_sizes == [3, 7]
    with pytest.raises(ValueError, match="absolute value of index"):
        cat[-8]
    with pytest.raises(IndexError):
        cat[7]
    summed = Subset(range(3), [0, 1, 2]) + Subset(range(5, 7), [0, 1])
    assert isinstance(summed, ConcatDataset) and list(summed) == [0, 1, 2, 5, 6]
    with pytest.raises(AssertionError, match="does not support IterableDataset"):
        ConcatDataset([range(2), Stream(0, 3)])

    chain = ChainDataset([Stream(0, 3), Stream(10, 12)])
    assert list(chain) == [0, 1, 2, 10, 11] and len(chain) == 5
    assert list(Stream(0, 2) + Stream(5, 6)) == [0, 1, 5]

    st = StackDataset(range(3), range(10, 13))
    assert st[1] == (1, 11) and len(st) == 3
    assert StackDataset(a=range(2), b=range(5, 7))[1] == {"a": 1, "b": 6}
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset(range(2), range(3))


def test_random_split_sizes_disjoint_reproducible():
    parts = random_split(range(20), [12, 5, 3], generator=gen(1))
    assert [len(p) for p in parts] == [12, 5, 3]
    items = [list(p) for p in parts]
    assert sorted(sum(items, [])) == list(range(20))
    again = [list(p) for p in random_split(range(20), [12, 5, 3], generator=gen(1))]
    assert again == items
    other = [list(p) for p in random_split(range(20), [12, 5, 3], generator=gen(2))]
    assert other != items
    ember.manual_seed(5)
    a = [list(p) for p in random_split(range(20), [10, 10])]
    ember.manual_seed(5)
    assert [list(p) for p in random_split(range(20), [10, 10])] == a


@pytest.mark.parametrize("n,fractions", [(10, [0.5, 0.5]), (11, [0.3, 0.3, 0.4]),
                                         (7, [0.1, 0.9]), (100, [0.25] * 4)])
def test_random_split_fractions_match_torch_sizes(n, fractions):
    torch = pytest.importorskip("torch")
    ours = [len(p) for p in random_split(range(n), fractions, generator=gen(0))]
    theirs = [len(p) for p in torch.utils.data.random_split(range(n), fractions)]
    assert ours == theirs
    assert sum(ours) == n


def test_random_split_errors():
    torch = pytest.importorskip("torch")
    for split in (random_split, torch.utils.data.random_split):
        for lengths in ([3, 3], [0.5, 0.6]):  # fractions that do not sum to 1: as sizes
            with pytest.raises(ValueError, match="^Sum of input lengths does not equal the "
                                                 "length of the input dataset!$"):
                split(range(10), lengths)
    with pytest.raises(ValueError, match="Fraction at index 1 is not between 0 and 1"):
        random_split(range(10), [0.5, 1.5, -1.0])
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        random_split(range(2), [0.99, 0.01])


# -- samplers ---------------------------------------------------------------------------------

def test_sequential_sampler():
    assert list(SequentialSampler(range(5))) == [0, 1, 2, 3, 4]
    assert len(SequentialSampler(range(5))) == 5


def test_random_sampler_permutation_and_generator():
    s = list(RandomSampler(range(50), generator=gen(3)))
    assert sorted(s) == list(range(50)) and s != list(range(50))
    assert list(RandomSampler(range(50), generator=gen(3))) == s
    assert list(RandomSampler(range(50), generator=gen(4))) != s
    # one generator: each pass continues the stream, so epochs differ
    sampler = RandomSampler(range(50), generator=gen(3))
    assert list(sampler) == s and list(sampler) != s


def test_random_sampler_default_generator_follows_manual_seed():
    ember.manual_seed(11)
    a = list(RandomSampler(range(30)))
    ember.manual_seed(11)
    assert list(RandomSampler(range(30))) == a
    ember.manual_seed(12)
    assert list(RandomSampler(range(30))) != a


def test_random_sampler_replacement_and_num_samples():
    s = list(RandomSampler(range(4), replacement=True, num_samples=100, generator=gen(0)))
    assert len(s) == 100 and set(s) <= {0, 1, 2, 3} and len(set(s)) == 4
    # without replacement, num_samples > n: whole permutations, then a partial one
    s = list(RandomSampler(range(4), num_samples=10, generator=gen(0)))
    counts = collections.Counter(s)
    assert len(s) == 10 and sorted(counts.values()) == [2, 2, 3, 3]
    assert sorted(s[:4]) == [0, 1, 2, 3] and sorted(s[4:8]) == [0, 1, 2, 3]
    assert len(RandomSampler(range(4), num_samples=10)) == 10


def test_random_sampler_errors():
    with pytest.raises(TypeError, match="replacement should be a boolean value"):
        RandomSampler(range(3), replacement=1)
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        RandomSampler(range(3), num_samples=0)
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        RandomSampler([])


def test_subset_random_sampler():
    idx = [3, 9, 27, 81, 243]
    s = list(SubsetRandomSampler(idx, generator=gen(0)))
    assert sorted(s) == sorted(idx) and len(SubsetRandomSampler(idx)) == 5
    assert list(SubsetRandomSampler(idx, generator=gen(0))) == s


def test_weighted_sampler_with_replacement_distribution():
    weights = [1.0, 2.0, 3.0, 4.0, 0.0]
    s = np.array(list(WeightedRandomSampler(weights, 20000, generator=gen(0))))
    freq = np.bincount(s, minlength=5) / s.size
    np.testing.assert_allclose(freq, [0.1, 0.2, 0.3, 0.4, 0.0], atol=0.015)
    assert freq[4] == 0  # a zero weight is never drawn
    assert list(WeightedRandomSampler(weights, 50, generator=gen(1))) == \
        list(WeightedRandomSampler(weights, 50, generator=gen(1)))
    assert list(WeightedRandomSampler(weights, 50, generator=gen(1))) != \
        list(WeightedRandomSampler(weights, 50, generator=gen(2)))


def test_weighted_sampler_without_replacement():
    s = list(WeightedRandomSampler([5, 0, 1, 2], 3, replacement=False, generator=gen(0)))
    assert sorted(s) == [0, 2, 3]
    # the first draw is proportional to the weights: P(index 1) = 3 / 4
    g = gen(7)
    first = [next(iter(WeightedRandomSampler([1.0, 3.0], 2, replacement=False, generator=g)))
             for _ in range(4000)]
    assert abs(np.mean(first) - 0.75) < 0.03
    # as torch.multinomial: zero weights are drawn last once the others are used up
    assert list(WeightedRandomSampler([1, 0, 1], 3, replacement=False))[-1] == 1
    with pytest.raises(RuntimeError, match="without replacement"):
        list(WeightedRandomSampler([1, 1], 3, replacement=False))


def test_weighted_sampler_errors():
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        WeightedRandomSampler([1, 2], 0)
    with pytest.raises(ValueError, match="replacement should be a boolean value"):
        WeightedRandomSampler([1, 2], 2, replacement=None)
    with pytest.raises(ValueError, match=r"weights should be a 1d sequence but given weights "
                                         r"have shape \(2, 1\)"):
        WeightedRandomSampler([[1], [2]], 2)
    with pytest.raises(RuntimeError, match="invalid multinomial distribution"):
        list(WeightedRandomSampler([1, -1], 2))
    with pytest.raises(RuntimeError, match="sum of probabilities <= 0"):
        list(WeightedRandomSampler([0, 0], 2))


@pytest.mark.parametrize("n,bs,drop_last", [(10, 3, False), (10, 3, True), (9, 3, True),
                                            (2, 5, False), (2, 5, True)])
def test_batch_sampler_matches_torch(n, bs, drop_last):
    ours = BatchSampler(SequentialSampler(range(n)), bs, drop_last)
    expected = [list(range(i, min(i + bs, n))) for i in range(0, n, bs)]
    if drop_last:
        expected = [b for b in expected if len(b) == bs]
    assert list(ours) == expected and len(ours) == len(expected)
    torch = pytest.importorskip("torch")
    theirs = torch.utils.data.BatchSampler(torch.utils.data.SequentialSampler(range(n)), bs,
                                           drop_last)
    assert list(ours) == list(theirs) and len(ours) == len(theirs)


def test_batch_sampler_errors():
    with pytest.raises(ValueError, match="batch_size should be a positive integer value, but "
                                         "got batch_size=0"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean value"):
        BatchSampler(range(3), 2, 0)


# -- collation --------------------------------------------------------------------------------

def collate_cases():
    return [
        [0, 1, 2, 3],
        [0.5, 1.5],
        [True, False],
        ["a", "b"],
        [b"x", b"y"],
        [np.array([1.0, 2.0], dtype=np.float32), np.array([3.0, 4.0], dtype=np.float32)],
        [np.float64(1.5), np.float64(2.5)],
        [np.int32(1), np.int32(2)],
        [(1, "a", 2.0), (2, "b", 3.0)],
        [[1, 2], [3, 4]],
        [{"A": 0, "B": [1.0, 2.0]}, {"A": 100, "B": [3.0, 4.0]}],
        [Point(0, 1.0), Point(2, 3.0)],
        [{"img": np.zeros((2, 2), dtype=np.uint8), "meta": {"id": 3, "name": "u"}},
         {"img": np.ones((2, 2), dtype=np.uint8), "meta": {"id": 4, "name": "v"}}],
    ]


@pytest.mark.parametrize("case", range(len(collate_cases())))
def test_default_collate_matches_torch(case):
    torch = pytest.importorskip("torch")
    batch = collate_cases()[case]
    assert to_py(default_collate(batch)) == to_py(torch.utils.data.default_collate(batch))


def test_default_collate_tensors_and_structure():
    samples = [(ember.tensor([1.0, 2.0]), ember.tensor(3)), (ember.tensor([4.0, 5.0]),
                                                             ember.tensor(6))]
    x, y = default_collate(samples)
    assert x.shape == (2, 2) and x.dtype == ember.float32 and x.tolist() == [[1, 2], [4, 5]]
    assert y.shape == (2,) and y.dtype == ember.int64 and y.tolist() == [3, 6]
    out = default_collate([Point(1, 2.0), Point(3, 4.0)])
    assert isinstance(out, Point) and out.x.dtype == ember.int64 and out.y.dtype == ember.float64
    assert isinstance(default_collate([(1, 2), (3, 4)]), list)  # tuples become lists
    floats = default_collate([1.0, 2.0])
    assert floats.dtype == ember.float64


def test_default_collate_keeps_autograd():
    a = ember.tensor([1.0, 2.0], requires_grad=True)
    b = ember.tensor([3.0, 4.0], requires_grad=True)
    out = default_collate([a, b])
    assert out.requires_grad
    (out * ember.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    assert a.grad.tolist() == [1.0, 2.0] and b.grad.tolist() == [3.0, 4.0]


def test_tensor_dataset_batches_same_as_per_sample_collation():
    # the loader gathers TensorDataset batches at once; a wrapped collate_fn forces the
    # per-sample path: both must give the same batches, through Subsets too
    x = ember.randn(17, 3, generator=gen(0))
    y = ember.arange(17, dtype=ember.int32)
    ds = Subset(Subset(TensorDataset(x, y), list(range(16, -1, -1))), [0, 3, 5, 7, 9, 11, 2])
    fast = batches(DataLoader(ds, batch_size=3))
    slow = batches(DataLoader(ds, batch_size=3, collate_fn=lambda b: default_collate(b)))
    assert fast == slow
    assert fast[0][1] == ("tensor", "int32", [16, 13, 11])
    assert isinstance(next(iter(DataLoader(ds, batch_size=3))), list)


def test_default_collate_errors():
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal "
                                           "size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors, numpy "
                                        "arrays, numbers, dicts or lists; found <class 'object'>"):
        default_collate([object(), object()])
    with pytest.raises(TypeError, match="default_collate: batch must contain"):
        default_collate([np.array(["a"]), np.array(["b"])])
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        default_collate([ember.zeros(2), ember.zeros(3)])


def test_default_convert():
    arr = np.array([0, 1], dtype=np.int16)
    t = default_convert(arr)
    assert isinstance(t, ember.Tensor) and t.dtype == ember.int16 and t.tolist() == [0, 1]
    assert default_convert(0) == 0 and default_convert("s") == "s"
    out = default_convert(Point(np.array(0.5), 2))
    assert isinstance(out, Point) and out.x.dtype == ember.float64 and out.y == 2
    out = default_convert((np.array([1]), "a"))
    assert isinstance(out, list) and out[0].tolist() == [1] and out[1] == "a"
    out = default_convert({"a": np.float32(2.0)})
    assert out["a"].dtype == ember.float32 and out["a"].item() == 2.0
    strings = np.array(["x"])
    assert default_convert(strings) is strings


# -- DataLoader (main process) ----------------------------------------------------------------

def test_dataloader_batches_in_order():
    ds = small_dataset(10)
    out = list(DataLoader(ds, batch_size=4))
    assert [y.tolist() for _, y in out] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert out[0][0].shape == (4, 2) and out[0][0].dtype == ember.float32
    assert out[2][0].tolist() == [[16.0, 17.0], [18.0, 19.0]]
    out = list(DataLoader(ds, batch_size=4, drop_last=True))
    assert [y.tolist() for _, y in out] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    # default batch_size=1
    assert [y.tolist() for _, y in DataLoader(ds)][:2] == [[0], [1]]


def test_dataloader_matches_torch_values():
    torch = pytest.importorskip("torch")
    data = np.random.default_rng(0).standard_normal((13, 3)).astype(np.float32)
    labels = np.arange(13)
    ours = DataLoader(TensorDataset(ember.tensor(data), ember.tensor(labels)), batch_size=5)
    theirs = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(
        torch.tensor(data), torch.tensor(labels)), batch_size=5)
    assert batches(ours) == batches(theirs)


@pytest.mark.parametrize("n,bs,drop_last", [(10, 1, False), (10, 3, False), (10, 3, True),
                                            (9, 3, True), (1, 4, False), (1, 4, True)])
def test_dataloader_len(n, bs, drop_last):
    loader = DataLoader(range(n), batch_size=bs, drop_last=drop_last)
    assert len(loader) == len(list(loader))
    torch = pytest.importorskip("torch")
    assert len(loader) == len(torch.utils.data.DataLoader(range(n), batch_size=bs,
                                                          drop_last=drop_last))


def test_dataloader_batch_size_none_converts_items():
    items = [np.array([1, 2]), np.array([3, 4])]
    out = list(DataLoader(items, batch_size=None))
    assert len(out) == 2 and isinstance(out[0], ember.Tensor) and out[1].tolist() == [3, 4]
    assert len(DataLoader(items, batch_size=None)) == 2
    assert list(DataLoader([1, 2, 3], batch_size=None)) == [1, 2, 3]


def test_dataloader_custom_collate_sampler_batch_sampler():
    loader = DataLoader(range(6), batch_size=2, collate_fn=lambda b: sum(b))
    assert list(loader) == [1, 5, 9]
    loader = DataLoader(range(6), batch_size=3, sampler=[5, 4, 3, 2, 1, 0])
    assert [b.tolist() for b in loader] == [[5, 4, 3], [2, 1, 0]]
    loader = DataLoader(range(6), batch_sampler=[[0, 5], [1], [2, 3, 4]])
    assert [b.tolist() for b in loader] == [[0, 5], [1], [2, 3, 4]]
    assert len(loader) == 3 and loader.batch_size is None


def test_dataloader_shuffle_reproducible():
    ds = small_dataset(20)
    a = batches(DataLoader(ds, batch_size=4, shuffle=True, generator=gen(0)))
    b = batches(DataLoader(ds, batch_size=4, shuffle=True, generator=gen(0)))
    c = batches(DataLoader(ds, batch_size=4, shuffle=True, generator=gen(1)))
    assert a == b and a != c
    labels = sorted(sum((y[2] for _, y in a), []))
    assert labels == list(range(20))
    # without a generator: ember.manual_seed decides; each epoch reshuffles
    ember.manual_seed(3)
    loader = DataLoader(ds, batch_size=4, shuffle=True)
    e1, e2 = batches(loader), batches(loader)
    ember.manual_seed(3)
    assert batches(DataLoader(ds, batch_size=4, shuffle=True)) == e1
    assert e1 != e2


def test_dataloader_argument_checks():
    ds = small_dataset(4)
    cases = [
        (dict(num_workers=-1), "num_workers option should be non-negative"),
        (dict(timeout=-1), "timeout option should be non-negative"),
        (dict(prefetch_factor=2), "prefetch_factor option could only be specified in "
                                  "multiprocessing"),
        (dict(persistent_workers=True), "persistent_workers option needs num_workers > 0"),
        (dict(sampler=[0, 1], shuffle=True), "sampler option is mutually exclusive with "
                                             "shuffle"),
        (dict(batch_sampler=[[0]], batch_size=2), "batch_sampler option is mutually exclusive "
                                                  "with batch_size, shuffle, sampler, and "
                                                  "drop_last"),
        (dict(batch_sampler=[[0]], shuffle=True), "batch_sampler option is mutually exclusive"),
        (dict(batch_sampler=[[0]], sampler=[0]), "batch_sampler option is mutually exclusive"),
        (dict(batch_sampler=[[0]], drop_last=True), "batch_sampler option is mutually exclusive"),
        (dict(batch_size=None, drop_last=True), "batch_size=None option disables auto-batching "
                                                "and is mutually exclusive with drop_last"),
        (dict(batch_size=0), "batch_size should be a positive integer value"),
        (dict(multiprocessing_context="spawn"), "multiprocessing_context can only be used with "
                                                "multi-process loading"),
        (dict(num_workers=1, multiprocessing_context="nope"), "multiprocessing_context option "
                                                              "should specify a valid start"),
        (dict(num_workers=1, prefetch_factor=0), "prefetch_factor option should be a positive"),
    ]
    for kwargs, msg in cases:
        with pytest.raises(ValueError, match=msg):
            DataLoader(ds, **kwargs)
    with pytest.raises(TypeError, match="multiprocessing_context option should be a valid "
                                        "context"):
        DataLoader(ds, num_workers=1, multiprocessing_context=42)


def test_dataloader_argument_messages_match_torch():
    torch = pytest.importorskip("torch")
    tds = torch.utils.data.TensorDataset(torch.zeros(4))
    eds = TensorDataset(ember.zeros(4))
    for kwargs in [dict(num_workers=-1), dict(timeout=-1), dict(persistent_workers=True),
                   dict(sampler=[0], shuffle=True), dict(batch_sampler=[[0]], batch_size=3),
                   dict(batch_size=None, drop_last=True), dict(batch_size=-2)]:
        with pytest.raises(ValueError) as theirs:
            torch.utils.data.DataLoader(tds, **kwargs)
        with pytest.raises(ValueError) as ours:
            DataLoader(eds, **kwargs)
        assert str(ours.value) == str(theirs.value)


def test_dataloader_attributes_frozen():
    loader = DataLoader(range(4), batch_size=2)
    with pytest.raises(ValueError, match="batch_size attribute should not be set after "
                                         "DataLoader is initialized"):
        loader.batch_size = 3
    loader.num_workers = 0  # not guarded, as in PyTorch


def test_dataloader_timeout_needs_workers():
    with pytest.raises(AssertionError, match="timeout option needs num_workers > 0"):
        iter(DataLoader(range(4), timeout=1))


def test_dataloader_pin_memory_warns_and_still_loads():
    loader = DataLoader(range(4), batch_size=2, pin_memory=True)
    with pytest.warns(UserWarning, match="pin_memory"):
        out = [b.tolist() for b in loader]
    assert out == [[0, 1], [2, 3]]


def test_dataloader_warns_on_too_many_workers():
    n = (os.cpu_count() or 1) + 1
    if hasattr(os, "sched_getaffinity"):
        n = len(os.sched_getaffinity(0)) + 1
    with pytest.warns(UserWarning, match=f"This DataLoader will create {n} worker processes"):
        DataLoader(range(4), num_workers=n)


# -- IterableDataset in the main process ---------------------------------------------------------

class Stream(IterableDataset):
    """range(start, end); sharded across workers when `shard`."""

    def __init__(self, start: int, end: int, shard: bool = False) -> None:
        self.start, self.end, self.shard = start, end, shard

    def __iter__(self):
        info = get_worker_info()
        if info is None or not self.shard:
            return iter(range(self.start, self.end))
        return iter(range(self.start + info.id, self.end, info.num_workers))

    def __len__(self) -> int:
        return self.end - self.start


class UnevenStream(IterableDataset):
    """Worker 0 yields 0..6, worker 1 yields 7..8 (or all 0..8 in the main process)."""

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(9))
        return iter(range(0, 7) if info.id == 0 else range(7, 9))


def test_iterable_dataset_single_process():
    assert [b.tolist() for b in DataLoader(Stream(0, 7), batch_size=3)] == \
        [[0, 1, 2], [3, 4, 5], [6]]
    assert [b.tolist() for b in DataLoader(Stream(0, 7), batch_size=3, drop_last=True)] == \
        [[0, 1, 2], [3, 4, 5]]
    assert list(DataLoader(Stream(0, 3), batch_size=None)) == [0, 1, 2]
    assert len(DataLoader(Stream(0, 7), batch_size=3)) == 3
    assert len(DataLoader(Stream(0, 7), batch_size=3, drop_last=True)) == 2


def test_iterable_dataset_rejects_samplers():
    with pytest.raises(ValueError, match="expected unspecified shuffle option, but got "
                                         "shuffle=True"):
        DataLoader(Stream(0, 3), shuffle=True)
    with pytest.raises(ValueError, match="expected unspecified sampler option"):
        DataLoader(Stream(0, 3), sampler=[0])
    with pytest.raises(ValueError, match="expected unspecified batch_sampler option"):
        DataLoader(Stream(0, 3), batch_sampler=[[0]])


def test_iterable_dataset_len_warning():
    loader = DataLoader(Stream(0, 3), batch_size=None)
    assert len(loader) == 3
    loader.dataset.end = 5  # now yields more than len() said
    with pytest.warns(UserWarning, match="was reported to be 3"):
        list(loader)


# -- worker processes ---------------------------------------------------------------------------

class Probe(Dataset):
    """Item i -> what the process that loaded it knows."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        info = get_worker_info()
        return {
            "i": i,
            "pid": os.getpid(),
            "worker": -1 if info is None else info.id,
            "num_workers": 0 if info is None else info.num_workers,
            "seed": -1 if info is None else info.seed,
            "same_dataset": info is not None and info.dataset is self,
            "init": -1 if _init_marker is None else _init_marker,
            "ember_rand": ember.rand(1, device="cpu").item(),
            "py_rand": random.random(),
            "np_rand": float(np.random.random()),
        }


_init_marker = None


def mark_worker(worker_id: int) -> None:
    global _init_marker
    _init_marker = 1000 + worker_id


def test_workers_same_batches_as_main_process():
    ds = small_dataset(23)
    for kwargs in [dict(), dict(shuffle=True), dict(drop_last=True, shuffle=True)]:
        main = batches(DataLoader(ds, batch_size=4, generator=gen(5), **kwargs))
        workers = batches(DataLoader(ds, batch_size=4, generator=gen(5), num_workers=2,
                                     **kwargs))
        assert workers == main


def test_workers_keep_dtypes_and_structure():
    class Mixed(Dataset):
        def __len__(self):
            return 6

        def __getitem__(self, i):
            return {"f64": ember.tensor([i, i + 0.5], dtype=ember.float64),
                    "i32": ember.tensor(i, dtype=ember.int32),
                    "b": ember.tensor(i % 2 == 0),
                    "bf16": ember.tensor([1.5 * i], dtype=ember.bfloat16),
                    "p": Point(i, float(i)), "s": f"s{i}", "np": np.full(2, i, np.uint8)}

    main = batches(DataLoader(Mixed(), batch_size=4))
    assert batches(DataLoader(Mixed(), batch_size=4, num_workers=2)) == main
    first = next(iter(DataLoader(Mixed(), batch_size=4, num_workers=1)))
    assert first["bf16"].dtype == ember.bfloat16 and first["i32"].dtype == ember.int32
    assert first["np"].dtype == ember.uint8 and isinstance(first["p"], Point)
    # batches come back as ordinary, writable CPU tensors
    first["f64"].add_(1)
    assert first["f64"].device == ember.device("cpu")


def test_worker_info_seeds_and_init_fn():
    loader = DataLoader(Probe(8), batch_size=None, num_workers=2, generator=gen(9),
                        worker_init_fn=mark_worker)
    items = list(loader)
    assert [it["i"] for it in items] == list(range(8))
    # round-robin: task k goes to worker k % 2
    assert [it["worker"] for it in items] == [0, 1] * 4
    assert all(it["num_workers"] == 2 and it["same_dataset"] for it in items)
    assert all(it["init"] == 1000 + it["worker"] for it in items)
    assert all(it["pid"] != os.getpid() for it in items)
    seeds = {it["worker"]: it["seed"] for it in items}
    assert seeds[1] == seeds[0] + 1
    # the main process is untouched
    assert get_worker_info() is None and _init_marker is None
    # same generator seed: the same worker seeds, so the same random draws in workers
    again = list(DataLoader(Probe(8), batch_size=None, num_workers=2, generator=gen(9)))
    for key in ("seed", "ember_rand", "py_rand", "np_rand"):
        assert [it[key] for it in again] == [it[key] for it in items]
    # the two workers draw different numbers
    assert items[0]["ember_rand"] != items[1]["ember_rand"]
    other = list(DataLoader(Probe(8), batch_size=None, num_workers=2, generator=gen(10)))
    assert other[0]["seed"] != items[0]["seed"]
    assert other[0]["ember_rand"] != items[0]["ember_rand"]


def test_persistent_workers_across_epochs():
    loader = DataLoader(Probe(6), batch_size=2, num_workers=2, persistent_workers=True)
    epoch1 = list(loader)
    assert len(mp.active_children()) == 2  # still alive between epochs
    epoch2 = list(loader)
    pids1 = {int(p) for b in epoch1 for p in b["pid"].tolist()}
    pids2 = {int(p) for b in epoch2 for p in b["pid"].tolist()}
    assert len(pids1) == 2 and pids1 == pids2
    assert [b["i"].tolist() for b in epoch2] == [[0, 1], [2, 3], [4, 5]]
    # an epoch abandoned half-way: the next one still starts from the beginning
    it = iter(loader)
    next(it)
    assert [b["i"].tolist() for b in loader] == [[0, 1], [2, 3], [4, 5]]
    del loader, it
    gc.collect()
    # (the autouse fixture checks that the workers are gone)


def test_non_persistent_workers_restart_each_epoch():
    loader = DataLoader(Probe(4), batch_size=2, num_workers=2)
    pids1 = {int(p) for b in loader for p in b["pid"].tolist()}
    assert mp.active_children() == []
    pids2 = {int(p) for b in loader for p in b["pid"].tolist()}
    assert pids1.isdisjoint(pids2)


class FailsAt(Dataset):
    def __init__(self, bad: int, how: str = "raise") -> None:
        self.bad, self.how = bad, how

    def __len__(self) -> int:
        return 12

    def __getitem__(self, i):
        if i == self.bad:
            if self.how == "raise":
                raise ValueError(f"cannot load item {i}")
            if self.how == "exit":
                os._exit(3)
            if self.how == "sleep":
                time.sleep(60)
        return i


def test_worker_exception_surfaces_with_traceback():
    loader = DataLoader(FailsAt(5), batch_size=1, num_workers=2)
    seen = []
    with pytest.raises(ValueError) as err:
        for b in loader:
            seen.append(b.item())
    msg = str(err.value)
    # item 5 is task 5: worker 1
    assert msg.startswith("Caught ValueError in DataLoader worker process 1.\n"
                          "Original Traceback (most recent call last):")
    assert "cannot load item 5" in msg and "in __getitem__" in msg and "test_data.py" in msg
    assert seen == [0, 1, 2, 3, 4]
    assert mp.active_children() == []
    # the loader still works afterwards, with fresh workers
    assert [b.item() for b in DataLoader(FailsAt(-1), batch_size=1, num_workers=2)] == \
        list(range(12))


def test_worker_exception_persistent_then_recovers():
    ds = FailsAt(3)
    loader = DataLoader(ds, batch_size=2, num_workers=1, persistent_workers=True)
    with pytest.raises(ValueError, match="Caught ValueError in DataLoader worker process 0"):
        list(loader)
    assert mp.active_children() == []
    ds.bad = -1  # the next epoch starts new workers (fork: they see the fixed dataset)
    assert [b.tolist() for b in loader][:2] == [[0, 1], [2, 3]]
    del loader
    gc.collect()


def test_worker_init_fn_exception():
    def boom(worker_id):
        raise KeyError(f"no config for worker {worker_id}")

    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process 0"):
        list(DataLoader(range(4), num_workers=1, worker_init_fn=boom))


def test_worker_dying_is_reported():
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+\) exited "
                                           r"unexpectedly \(exit code\(s\) 3\)"):
        list(DataLoader(FailsAt(2, "exit"), batch_size=1, num_workers=1))


def test_timeout():
    loader = DataLoader(FailsAt(1, "sleep"), batch_size=1, num_workers=1, timeout=0.5)
    with pytest.raises(RuntimeError, match=r"DataLoader timed out after 0.5 seconds"):
        list(loader)


def test_unpicklable_batch_is_an_error_not_a_hang():
    loader = DataLoader(range(2), batch_size=1, num_workers=1,
                        collate_fn=lambda b: (lambda: b))  # a lambda cannot be pickled
    with pytest.raises(Exception, match="Caught .* in DataLoader worker process 0"):
        list(loader)


def test_iterator_deleted_or_collected_mid_epoch():
    loader = DataLoader(range(40), batch_size=2, num_workers=2)
    it = iter(loader)
    assert next(it).tolist() == [0, 1]
    assert len(mp.active_children()) == 2
    del it
    assert mp.active_children() == []
    it = iter(loader)
    next(it)
    it.cycle = it  # only the garbage collector can free it now
    del it
    gc.collect()
    assert mp.active_children() == []


def test_in_order_false_returns_everything():
    out = [b.item() for b in DataLoader(range(10), num_workers=2, in_order=False)]
    assert sorted(out) == list(range(10))


def test_iterable_dataset_with_workers():
    # every worker iterates a full copy (as in PyTorch): each sample once per worker
    out = [b.tolist() for b in DataLoader(Stream(0, 6), batch_size=2, num_workers=2)]
    assert sorted(sum(out, [])) == sorted(list(range(6)) * 2)
    # sharded with get_worker_info: each sample once; batches alternate between workers
    out = [b.tolist() for b in DataLoader(Stream(0, 8, shard=True), batch_size=2,
                                          num_workers=2)]
    assert out == [[0, 2], [1, 3], [4, 6], [5, 7]]
    # workers that run out at different times
    out = [b.tolist() for b in DataLoader(UnevenStream(), batch_size=2, num_workers=2)]
    assert out == [[0, 1], [7, 8], [2, 3], [4, 5], [6]]
    out = [b.tolist() for b in DataLoader(UnevenStream(), batch_size=2, num_workers=2,
                                          drop_last=True)]
    assert out == [[0, 1], [7, 8], [2, 3], [4, 5]]


def test_iterable_dataset_persistent_workers():
    loader = DataLoader(Stream(0, 8, shard=True), batch_size=3, num_workers=2,
                        persistent_workers=True)
    first = [b.tolist() for b in loader]
    assert sorted(sum(first, [])) == list(range(8))
    assert [b.tolist() for b in loader] == first
    del loader
    gc.collect()


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_spawn_context(method):
    # a forkserver worker's parent is the fork server: it watches that process, as
    # PyTorch's workers do (it took the loader's pid and stopped at once)
    ds = small_dataset(7)
    expected = batches(DataLoader(ds, batch_size=3))
    loader = DataLoader(ds, batch_size=3, num_workers=2, multiprocessing_context=method)
    assert batches(loader) == expected


def test_no_workers_left_at_interpreter_exit(tmp_path):
    script = textwrap.dedent("""
        import ember
        from ember.utils.data import DataLoader
        loader = DataLoader(range(100), batch_size=2, num_workers=2, persistent_workers=True)
        it = iter(loader)
        next(it)
        print(" ".join(str(w.pid) for w in it._workers), flush=True)
        # exit with the workers alive and busy
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    pids = [int(p) for p in proc.stdout.split()]
    assert len(pids) == 2
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def _running(pid: int) -> bool:
    """Alive and not a zombie (an exited child its new parent has not reaped yet)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return not any(line.startswith("State:") and "Z" in line.split()[1] for line in f)
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs /proc")
def test_workers_exit_when_main_process_dies():
    script = textwrap.dedent("""
        import os
        from ember.utils.data import DataLoader
        it = iter(DataLoader(range(100), batch_size=2, num_workers=2))
        next(it)
        print(" ".join(str(w.pid) for w in it._workers), flush=True)
        os._exit(0)  # no cleanup at all: the workers must notice by themselves
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    pids = [int(p) for p in proc.stdout.split()]
    assert len(pids) == 2
    deadline = time.monotonic() + 30  # they check on their parent every second
    while any(_running(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_running(p) for p in pids)


# -- Digits ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def digits():
    pytest.importorskip("sklearn")
    return ember_datasets.Digits(train=True), ember_datasets.Digits(train=False)


def test_digits_shapes_dtypes_ranges(digits):
    train, test = digits
    assert len(train) + len(test) == 1797
    image, label = train[0]
    assert image.shape == (1, 8, 8) and image.dtype == ember.float32
    assert label.shape == () and label.dtype == ember.int64
    data, targets = train.data, train.targets
    assert data.shape == (len(train), 1, 8, 8) and targets.shape == (len(train),)
    assert float(data.min()) == 0.0 and float(data.max()) == 1.0
    assert sorted(set(targets.tolist())) == list(range(10))
    raw = ember_datasets.Digits(train=False, normalize=False)
    values = raw.data.numpy()
    assert values.max() == 16.0 and np.all(values == np.round(values))


def test_digits_partition_and_stratification(digits):
    from sklearn.datasets import load_digits

    train, test = digits
    assert set(train.indices).isdisjoint(test.indices)
    assert sorted(np.concatenate([train.indices, test.indices]).tolist()) == list(range(1797))
    ref = load_digits()
    np.testing.assert_array_equal(train.data.numpy()[:, 0] * 16, ref.images[train.indices])
    np.testing.assert_array_equal(test.targets.numpy(), ref.target[test.indices])
    for c in range(10):
        n_c = int(np.sum(ref.target == c))
        assert abs(int(np.sum(train.targets.numpy() == c)) - 0.8 * n_c) <= 0.5


def test_digits_split_deterministic(digits):
    train, _ = digits
    np.testing.assert_array_equal(ember_datasets.Digits(seed=0).indices, train.indices)
    assert not np.array_equal(ember_datasets.Digits(seed=1).indices, train.indices)
    half = ember_datasets.Digits(split=0.5)
    assert abs(len(half) - 1797 / 2) <= 10
    with pytest.raises(ValueError, match=r"split must be in \(0, 1\)"):
        ember_datasets.Digits(split=1.5)


def test_digits_transforms_and_loader(digits):
    ds = ember_datasets.Digits(train=False, transform=lambda x: x.flatten(),
                               target_transform=lambda y: y + 100)
    image, label = ds[3]
    assert image.shape == (64,) and 100 <= label.item() < 110
    x, y = next(iter(DataLoader(digits[1], batch_size=16, shuffle=True, generator=gen(0))))
    assert x.shape == (16, 1, 8, 8) and x.dtype == ember.float32
    assert y.shape == (16,) and y.dtype == ember.int64
    text = repr(digits[1])
    assert f"Number of datapoints: {len(digits[1])}" in text and "Split: Test" in text


def test_digits_without_sklearn(monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn", None)
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    ember_datasets._load_digits.cache_clear()
    try:
        with pytest.raises(ImportError, match=r"pip install 'ember\[data\]'"):
            ember_datasets.Digits()
    finally:
        ember_datasets._load_digits.cache_clear()


def test_random_split_fraction_remainder_round_robin():
    # floor(10 / 3) = 3 each, and the one left over goes to the first split
    sizes = [len(p) for p in random_split(range(10), [1 / 3, 1 / 3, 1 / 3], generator=gen(0))]
    assert sizes == [math.floor(10 / 3) + 1, math.floor(10 / 3), math.floor(10 / 3)]


def test_utils_collate_and_worker_modules_at_torchs_paths():
    # programs import the collate helpers from PyTorch's private module path
    torch = pytest.importorskip("torch")
    from torch.utils.data._utils import collate as torch_collate

    from ember.utils.data._utils import collate as ember_collate
    from ember.utils.data._utils import worker as ember_worker

    wanted = {"collate", "default_collate", "default_convert", "default_collate_fn_map",
              "collate_tensor_fn", "np_str_obj_array_pattern", "default_collate_err_msg_format"}
    assert wanted <= set(dir(torch_collate)) and wanted <= set(dir(ember_collate))
    assert ember_collate.default_collate is default_collate
    assert ember_worker.get_worker_info() is None
    assert ember_collate.np_str_obj_array_pattern.pattern == \
        torch_collate.np_str_obj_array_pattern.pattern
    assert ember_collate.default_collate_err_msg_format == \
        torch_collate.default_collate_err_msg_format

    def lengths_of(lib, module):
        def collate_str_to_len(batch, *, collate_fn_map=None):
            return lib.tensor([len(s) for s in batch])
        custom = {**module.default_collate_fn_map, str: collate_str_to_len}
        out = module.collate([("ab", 1.5), ("c", 2.5)], collate_fn_map=custom)
        return [o.tolist() for o in out], [str(o.dtype).split(".")[1] for o in out]

    assert lengths_of(ember, ember_collate) == lengths_of(torch, torch_collate)
