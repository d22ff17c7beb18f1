"""DistributedDataParallel on real ranks, each rank checking itself against single-process
training that it runs too (every rank can build the whole global batch).

Prints `rank R: <check> ok` per check; any mismatch raises (and fails the run)."""

import sys

import numpy as np

import ember
import ember.distributed as dist
from ember import nn
from ember.nn.parallel import DDP, DistributedDataParallel

dist.init_process_group("mpi")
R, N = dist.get_rank(), dist.get_world_size()
GLOBAL_BATCH = 8 * N


def model(seed):
    ember.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(),
                         nn.Linear(32, 3))


def batch(step):
    rng = np.random.default_rng(100 + step)
    return (ember.tensor(rng.standard_normal((GLOBAL_BATCH, 6), dtype=np.float32)),
            ember.tensor(rng.integers(0, 3, GLOBAL_BATCH)))


def mine(t):
    share = GLOBAL_BATCH // N
    return t[R * share:(R + 1) * share]


def assert_close(ours, ref, what, atol=1e-5):
    for (name, p), q in zip(ours.named_parameters(), ref.parameters()):
        diff = float((p.detach() - q.detach()).abs().max())
        assert diff <= atol, f"rank {R}: {what}: {name} differs from single-process by {diff}"
    print(f"rank {R}: {what} ok", flush=True)


def train(net, params, steps, split, micro=1, set_to_none=True):
    opt = ember.optim.SGD(params, lr=0.1, momentum=0.9)
    for step in range(steps):
        opt.zero_grad(set_to_none=set_to_none)
        for k in range(micro):
            x, y = batch(10 * step + k)
            if split:
                x, y = mine(x), mine(y)
            last = k == micro - 1
            ctx = net.no_sync() if split and not last else _null()
            with ctx:
                nn.functional.cross_entropy(net(x), y).backward()
        opt.step()


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def check_training():
    ref = model(0)
    train(ref, ref.parameters(), 5, split=False)
    local = model(R)  # different initial weights: the broadcast makes them rank 0's
    # a tiny bucket cap: several buckets, launched during backward
    ddp = DistributedDataParallel(local, bucket_cap_mb=0.0005)
    assert len(ddp.reducer.bucket_indices) > 2
    assert ddp.reducer.bucket_indices[0][0] == len(list(local.parameters())) - 1
    train(ddp, ddp.parameters(), 5, split=True)
    assert_close(local, ref, "training")

    # gradients as views of the buckets, zeroed in place: the same steps
    local = model(R)
    ddp = DDP(local, bucket_cap_mb=0.0005, gradient_as_bucket_view=True)
    train(ddp, ddp.parameters(), 5, split=True, set_to_none=False)
    bucket = ddp.reducer._buckets[0]
    assert local[-1].bias.grad is bucket.views[0], "grad is not the bucket's view"
    assert_close(local, ref, "gradient as bucket view")


def check_overlap():
    # when the first layer's gradient arrives (last in backward), the buckets of the
    # later layers must already be on their way
    local = model(0)
    ddp = DDP(local, bucket_cap_mb=0.0005)
    launched = []
    first = next(local.parameters())
    first.register_post_accumulate_grad_hook(lambda p: launched.append(ddp.reducer._next))
    x, y = batch(0)
    nn.functional.cross_entropy(ddp(mine(x)), mine(y)).backward()
    assert launched and launched[0] >= 1, launched
    print(f"rank {R}: overlap ok", flush=True)


def check_no_sync():
    ref = model(0)
    train(ref, ref.parameters(), 3, split=False, micro=3)
    local = model(R)
    ddp = DDP(local)
    train(ddp, ddp.parameters(), 3, split=True, micro=3)
    assert_close(local, ref, "no_sync")
    # under no_sync the gradients stay local: they differ between ranks
    ddp.zero_grad()
    x, y = batch(99)
    with ddp.no_sync():
        nn.functional.cross_entropy(ddp(mine(x)), mine(y)).backward()
    g = next(local.parameters()).grad.clone()
    total = g.clone()
    dist.all_reduce(total)
    assert N == 1 or not ember.allclose(total, g * N), "no_sync still synchronized"
    print(f"rank {R}: no_sync local ok", flush=True)


class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Linear(4, 4)
        self.rank0_only = nn.Linear(4, 4)  # used by rank 0 only
        self.never = nn.Linear(4, 4)  # used by no rank

    def forward(self, x):
        h = self.trunk(x)
        return self.rank0_only(h) if R == 0 else h


def check_unused():
    ember.manual_seed(0)
    local = Branchy()
    # one bucket per parameter: the buckets of `never` start at forward time; a forward
    # whose backward never runs must leave the next iteration intact
    ddp = DDP(local, find_unused_parameters=True, bucket_cap_mb=1e-6)
    assert len(ddp.reducer.bucket_indices) == 6
    x = ember.ones(2, 4) * (R + 1)
    ddp(x * 100)
    ddp(x).sum().backward()
    # what single-process would give for the same inputs: every rank's gradient, averaged
    expected = {name: ember.zeros_like(p) for name, p in local.named_parameters()}
    for r in range(N):
        ember.manual_seed(0)
        solo = Branchy()
        h = solo.trunk(ember.ones(2, 4) * (r + 1))
        (solo.rank0_only(h) if r == 0 else h).sum().backward()
        for name, p in solo.named_parameters():
            if p.grad is not None:
                expected[name] += p.grad / N
    for name, p in local.named_parameters():
        if name.startswith("never"):
            assert p.grad is None, f"rank {R}: {name} got a gradient"
        else:
            assert p.grad is not None and ember.allclose(p.grad, expected[name], atol=1e-6), \
                f"rank {R}: {name}: {p.grad} != {expected[name]}"
    print(f"rank {R}: unused parameters ok", flush=True)

    # without find_unused_parameters, an unused parameter is an error naming it
    ddp = DDP(Branchy())
    try:
        ddp(x).sum().backward()
    except RuntimeError as err:
        assert "never.weight" in str(err) and "find_unused_parameters=True" in str(err), err
    else:
        raise AssertionError("an unused parameter went unnoticed")
    print(f"rank {R}: unused parameter error ok", flush=True)


def check_buffers_and_state_dict():
    ember.manual_seed(R)
    local = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    local[1].running_mean.fill_(float(R))
    ddp = DDP(local)
    assert float(local[1].running_mean.sum()) == 0.0  # rank 0's buffers at construction
    local[1].running_mean.fill_(float(R + 5))
    ddp.eval()
    ddp(ember.ones(2, 3))  # each forward broadcasts rank 0's buffers first
    assert float(local[1].running_mean[0]) == 5.0
    weights = [p.clone() for p in local.parameters()]
    gathered = [ember.zeros_like(weights[0]) for _ in range(N)]
    dist.all_gather(gathered, weights[0])
    assert all(ember.equal(g, weights[0]) for g in gathered)  # same parameters everywhere
    keys = list(ddp.state_dict())
    assert keys[0] == "module.0.weight" and all(k.startswith("module.") for k in keys), keys
    assert ddp.module is local
    for bad in (["cpu", "cpu"], ["opencl:0"]):
        try:
            DDP(local, device_ids=bad)
        except ValueError as err:
            assert "device_ids" in str(err), err
        else:
            raise AssertionError(f"device_ids={bad} accepted for a CPU module")
    DDP(local, device_ids=["cpu"])  # the module's own device is fine
    print(f"rank {R}: buffers and state_dict ok", flush=True)


def check_sampler_defaults():
    # without num_replicas and rank, DistributedSampler reads them from the process group
    from ember.utils.data import DistributedSampler

    sampler = DistributedSampler(range(10), shuffle=False)
    assert (sampler.num_replicas, sampler.rank) == (N, R)
    padded = (list(range(10)) * 2)[:sampler.total_size]  # padded by repeating the start
    assert list(sampler) == padded[R::N]
    print(f"rank {R}: sampler ok", flush=True)


def check_opencl():
    # the same training with the model and data on an OpenCL device (staged through host
    # memory by ember.distributed)
    if not any(d.type == "opencl" for d in ember.devices()):
        print(f"rank {R}: opencl skipped", flush=True)
        return
    ref = model(0)
    train(ref, ref.parameters(), 2, split=False)
    local = model(R).to("opencl:0")
    ddp = DDP(local, bucket_cap_mb=0.0005)
    opt = ember.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    for step in range(2):
        opt.zero_grad()
        x, y = batch(10 * step)
        nn.functional.cross_entropy(ddp(mine(x).to("opencl:0")), mine(y).to("opencl:0")
                                    ).backward()
        opt.step()
    assert next(local.parameters()).device == ember.device("opencl:0")
    assert_close(local.cpu(), ref, "opencl")


CHECKS = {"training": check_training, "overlap": check_overlap, "no_sync": check_no_sync,
          "unused": check_unused, "buffers": check_buffers_and_state_dict,
          "sampler": check_sampler_defaults, "opencl": check_opencl}
for name in sys.argv[1:] or CHECKS:
    CHECKS[name]()
dist.destroy_process_group()
