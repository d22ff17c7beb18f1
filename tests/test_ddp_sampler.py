"""DistributedSampler against PyTorch's: the same indices for every rank, epoch, seed,
padding and drop_last."""

import itertools

import pytest

from ember.utils.data import DataLoader, DistributedSampler, TensorDataset
from ember.utils.data._torch_randperm import torch_randperm

torch = pytest.importorskip("torch")
from torch.utils.data.distributed import DistributedSampler as TorchSampler  # noqa: E402


@pytest.mark.parametrize("n", [0, 1, 2, 7, 100, 4099])
@pytest.mark.parametrize("seed", [0, 3, 2 ** 32 + 11])
def test_randperm_stream_is_torchs(n, seed):
    g = torch.Generator().manual_seed(seed)
    assert torch_randperm(n, seed) == torch.randperm(n, generator=g).tolist()


def test_randperm_refuses_the_sizes_torch_draws_otherwise():
    with pytest.raises(ValueError, match="n=214748364"):
        torch_randperm(214748364, 0)


@pytest.mark.parametrize("n,replicas", [(1, 1), (10, 3), (11, 4), (16, 4), (3, 5), (50, 2)])
@pytest.mark.parametrize("shuffle,drop_last", list(itertools.product([True, False], repeat=2)))
def test_indices_equal_torchs(n, replicas, shuffle, drop_last):
    data = list(range(n))
    for rank, epoch, seed in itertools.product(range(replicas), (0, 1, 5), (0, 7)):
        ours = DistributedSampler(data, replicas, rank, shuffle=shuffle, seed=seed,
                                  drop_last=drop_last)
        theirs = TorchSampler(data, replicas, rank, shuffle=shuffle, seed=seed,
                              drop_last=drop_last)
        ours.set_epoch(epoch)
        theirs.set_epoch(epoch)
        assert list(ours) == list(theirs), (rank, epoch, seed)
        assert len(ours) == len(theirs)
        assert (ours.num_samples, ours.total_size) == (theirs.num_samples, theirs.total_size)


def test_ranks_cover_the_dataset_and_epochs_differ():
    shares = [list(DistributedSampler(range(20), 4, r, seed=1)) for r in range(4)]
    assert sorted(sum(shares, [])) == list(range(20))
    s = DistributedSampler(range(20), 4, 0, seed=1)
    first = list(s)
    s.set_epoch(1)
    assert list(s) != first


@pytest.mark.parametrize("rank", [-1, 2])
def test_bad_rank_is_refused_as_torch_does(rank):
    msg = rf"Invalid rank {rank}, rank should be in the interval \[0, 1\]"
    with pytest.raises(ValueError, match=msg):
        DistributedSampler(range(4), 2, rank)
    with pytest.raises(ValueError, match=msg):
        TorchSampler(range(4), 2, rank)


def test_drives_a_dataloader():
    import ember

    ds = TensorDataset(ember.arange(10))
    loader = DataLoader(ds, batch_size=2, sampler=DistributedSampler(ds, 2, 1, shuffle=False))
    assert [b[0].tolist() for b in loader] == [[1, 3], [5, 7], [9]]


def test_without_a_process_group_the_defaults_fail_as_torchs():
    with pytest.raises(ValueError) as ours:
        DistributedSampler(range(4))
    with pytest.raises(ValueError) as theirs:
        TorchSampler(range(4))
    assert str(ours.value) == str(theirs.value)
    assert "init_process_group" in str(ours.value)
