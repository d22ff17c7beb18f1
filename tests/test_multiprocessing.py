"""ember.multiprocessing (torch.multiprocessing): tensors in shared memory across
processes, Hogwild training, spawn's error reporting."""

from __future__ import annotations

import multiprocessing as std_mp
import os

import numpy as np
import pytest

import ember
import ember.multiprocessing as mp


def test_share_memory_moves_the_storage_in_place_and_keeps_values():
    x = ember.arange(12.0).reshape(3, 4)
    before = x.tolist()
    assert not x.is_shared()
    assert x.share_memory_() is x and x.is_shared()
    assert x.tolist() == before
    x.add_(1)  # still an ordinary tensor: in-place ops, autograd, views
    v = x[1:, ::2]
    x[2, 2] = -5.0
    assert v.tolist() == [[5.0, 7.0], [9.0, -5.0]]
    w = ember.ones(3, requires_grad=True)
    w.share_memory_()
    (w * 2).sum().backward()
    assert w.grad.tolist() == [2.0, 2.0, 2.0]


def test_share_memory_of_a_view_moves_its_base():
    base = ember.zeros(4, 4)
    view = base[1:3].t()
    view.share_memory_()
    assert base.is_shared() and view.is_shared()
    base[1, 2] = 7.0  # the view was re-derived from the moved base: it sees the write
    assert view[2, 0].item() == 7.0


def test_module_share_memory_keeps_the_parameter_objects():
    model = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.BatchNorm1d(4))
    params = list(model.parameters())
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    assert model.share_memory() is model
    assert all(p is q and p.is_shared() for p, q in zip(model.parameters(), params))
    assert all(b.is_shared() for b in model.buffers())
    model(ember.randn(5, 3)).sum().backward()
    opt.step()  # the optimizer updates the shared memory it already held


def _hogwild_worker(rank, model, steps, barrier):
    ember.manual_seed(rank)
    opt = ember.optim.SGD(model.parameters(), lr=0.05)
    x = ember.ones(8, 2)
    for _ in range(steps):
        opt.zero_grad()
        ((model(x) - 1.0) ** 2).mean().backward()
        opt.step()
    barrier.wait()


def test_hogwild_workers_update_one_shared_model():
    """PyTorch's mnist_hogwild pattern: forked processes train the shared model."""
    ctx = mp.get_context("fork")
    model = ember.nn.Linear(2, 1)
    with ember.no_grad():
        model.weight.zero_()
        model.bias.zero_()
    model.share_memory()
    barrier = ctx.Barrier(3)
    workers = [ctx.Process(target=_hogwild_worker, args=(r, model, 20, barrier))
               for r in range(2)]
    for p in workers:
        p.start()
    barrier.wait()
    for p in workers:
        p.join(60)
        assert p.exitcode == 0
    # the parent sees the children's updates: 2 x 20 steps toward y = 1 from 0 get
    # closer than one process's 20 steps
    alone = ember.nn.Linear(2, 1)
    with ember.no_grad():
        alone.weight.zero_()
        alone.bias.zero_()
    _hogwild_worker(0, alone, 20, ctx.Barrier(1))
    ones = ember.ones(1, 2)
    assert abs(model(ones).item() - 1) < abs(alone(ones).item() - 1) < 0.9


def _add_in_child(queue, done):
    t = queue.get()
    t.add_(10)
    done.put((t.is_shared(), t.dtype == ember.float64, tuple(t.shape)))


def test_a_tensor_sent_on_a_queue_shares_memory_with_the_sender():
    ctx = mp.get_context("spawn")
    queue, done = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=_add_in_child, args=(queue, done))
    p.start()
    x = ember.tensor(np.arange(6.0).reshape(2, 3))
    queue.put(x[:, 1:])  # a view: its base moves to shared memory, the child gets the view
    assert done.get(timeout=120) == (True, True, (2, 2))
    p.join(60)
    assert p.exitcode == 0
    # the view's base (x) moved to shared memory: the child's write is seen here
    assert x.is_shared()
    assert x.tolist() == [[0.0, 11.0, 12.0], [3.0, 14.0, 15.0]]


def _step_in_child(queue, done):
    weight = queue.get()
    with ember.no_grad():
        weight.sub_(1.0)
    done.put(type(weight).__name__)


def test_a_parameter_sent_to_a_spawned_process_is_the_senders_memory():
    ctx = mp.get_context("spawn")
    queue, done = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=_step_in_child, args=(queue, done))
    p.start()
    weight = ember.nn.Parameter(ember.zeros(3))
    queue.put(weight)
    assert done.get(timeout=120) == "Parameter"
    p.join(60)
    assert weight.is_shared() and weight.tolist() == [-1.0, -1.0, -1.0]


def test_a_non_leaf_that_requires_grad_is_refused():
    x = ember.ones(2, requires_grad=True) * 2
    q = std_mp.get_context("spawn").SimpleQueue()
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf"):
        q.put(x)
    q.put(x.detach())  # detached: fine
    assert q.get().tolist() == [2.0, 2.0]


def _ok(i, path):
    with open(os.path.join(path, f"{i}.txt"), "w") as f:
        f.write(str(i))


def _fails(i):
    if i == 1:
        raise ValueError("rank 1 is broken")


def _exits(i):
    os._exit(3 if i == 0 else 0)


def test_spawn_runs_each_index_and_reports_a_childs_error(tmp_path):
    assert mp.spawn(_ok, args=(str(tmp_path),), nprocs=2) is None
    assert sorted(os.listdir(tmp_path)) == ["0.txt", "1.txt"]
    with pytest.raises(mp.ProcessRaisedException, match="rank 1 is broken") as info:
        mp.spawn(_fails, nprocs=2)
    assert info.value.error_index == 1
    assert "-- Process 1 terminated with the following error:" in str(info.value)
    with pytest.raises(mp.ProcessExitedException,
                       match="process 0 terminated with exit code 3"):
        mp.spawn(_exits, nprocs=2, start_method="fork")
    context = mp.spawn(_ok, args=(str(tmp_path),), nprocs=1, join=False)
    while not context.join():
        pass
