"""Data-parallel training on MPI ranks: scaling efficiency and all-reduce overlap.

    python benchmarks/bench_ddp.py [--only mlp,cnn] [--steps 5] [--repeat 5] [--rounds 3]

For the MLP and the CNN of bench_train.py (same models, same global batches), times one
training step (zero_grad, forward, cross-entropy, backward, SGD-momentum step) in three
set-ups, every process with one BLAS thread (OPENBLAS_NUM_THREADS=OMP_NUM_THREADS=1):

- 1 rank, the full batch, no communication;
- 2 ranks (``ember run -n 2``), half the batch each, DistributedDataParallel: buckets
  all-reduced without blocking as soon as their gradients are ready (overlap);
- 2 ranks, half the batch each, one blocking all-reduce of all gradients after backward;
- 2 ranks, half the batch each, no communication at all: the ceiling the machine allows
  (two processes computing at once share caches, memory bandwidth and, on a shared
  machine, cores with other work).

Scaling efficiency = t(1 rank) / (2 * t(2 ranks)): 1.0 when two ranks halve the step.
A 2-rank step's time is the slowest rank's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

from bench_train import WORKLOADS, _models  # noqa: E402
from common import best_time, fmt_time  # noqa: E402

import ember  # noqa: E402

MODES = ("single", "local", "ddp", "allreduce")
ONE_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def _step_fn(name: str, mode: str, batch: int, rank: int, world: int,
             bucket_cap_mb: float | None = None):
    """One training step of workload `name` on this rank's share of the global batch."""
    from ember import distributed as dist

    ember.manual_seed(0)
    model, _, shape = _models(name)
    rng = np.random.default_rng(0)  # the same global batch on every rank
    x = rng.standard_normal((batch,) + tuple(shape[1:]), dtype=np.float32)
    y = rng.integers(0, 10, batch)
    share = batch // world
    x = ember.tensor(x[rank * share:(rank + 1) * share])
    y = ember.tensor(y[rank * share:(rank + 1) * share])
    net = model
    if mode == "ddp":
        net = ember.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=bucket_cap_mb)
    params = list(model.parameters())
    opt = ember.optim.SGD(params, lr=0.01, momentum=0.9)
    loss_fn = ember.nn.CrossEntropyLoss()

    # the baseline: the same flat buffer and copies as DDP's buckets, but one bucket for
    # all gradients and one blocking all-reduce once backward is over (no overlap)
    flat = ember.zeros(sum(p.numel() for p in params))
    views = [v.view(p.shape) for v, p in zip(flat.split([p.numel() for p in params]),
                                                params)]

    def all_reduce_after_backward() -> None:
        with ember.no_grad():
            for p, view in zip(params, views):
                ember.mul(p.grad, 1.0 / world, out=view)
            dist.all_reduce(flat)
            for p, view in zip(params, views):
                p.grad.copy_(view)

    def step() -> None:
        opt.zero_grad()
        loss_fn(net(x), y).backward()
        if mode == "allreduce":
            all_reduce_after_backward()
        opt.step()

    return step


def _worker(names: list[str], mode: str, steps: int, repeat: int,
            bucket_cap_mb: float | None) -> None:
    """Time the steps of `mode` on every rank; rank 0 prints {name: slowest rank's s}."""
    rank, world = 0, 1
    if mode != "single":
        from ember import distributed as dist

        dist.init_process_group("mpi")
        rank, world = dist.get_rank(), dist.get_world_size()
    times = {}
    for name in names:
        batch = _models(name)[2][0]
        step = _step_fn(name, mode, batch, rank, world, bucket_cap_mb)
        if world > 1:
            dist.barrier()
        seconds = ember.tensor([best_time(step, steps, repeat=repeat)], dtype=ember.float64)
        if world > 1:
            dist.all_reduce(seconds, op=dist.ReduceOp.MAX)
        times[name] = seconds.item()
    if rank == 0:
        print(json.dumps(times), flush=True)
    if world > 1:
        dist.destroy_process_group()


def _run(mode: str, names: list[str], steps: int, repeat: int, cap: float | None) -> dict:
    """Start the worker for `mode` (through `ember run -n 2` for the 2-rank modes) and read
    its JSON line."""
    worker = [__file__, "--worker", mode, "--only", ",".join(names), "--steps", str(steps),
              "--repeat", str(repeat)] + ([] if cap is None else ["--bucket-cap-mb", str(cap)])
    if mode == "single":
        cmd = [sys.executable] + worker
    else:
        cmd = [sys.executable, "-m", "ember.distributed.run", "-n", "2"] + worker
    env = dict(os.environ, **ONE_THREAD)
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"bench_ddp: {' '.join(cmd)} failed:\n{done.stdout}{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", default="mlp,cnn")
    parser.add_argument("--steps", type=int, default=5, help="steps per timed repeat")
    parser.add_argument("--repeat", type=int, default=5, help="repeats; the best is kept")
    parser.add_argument("--rounds", type=int, default=3,
                        help="alternating rounds of all set-ups; the best of each is kept")
    parser.add_argument("--bucket-cap-mb", type=float, default=0.25,
                        help="DDP's bucket size (PyTorch's default, 25 with a first bucket of "
                             "1 MiB, puts each model in one bucket: nothing to overlap)")
    parser.add_argument("--worker", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    names = args.only.split(",")
    if args.worker:
        _worker(names, args.worker, args.steps, args.repeat, args.bucket_cap_mb)
        return
    # rounds alternate the set-ups, so that a slow spell of a shared machine cannot land
    # on one of them only; each keeps its best round
    times: dict[str, dict[str, float]] = {mode: {} for mode in MODES}
    for _ in range(max(args.rounds, 1)):
        for mode in MODES:
            for name, seconds in _run(mode, names, args.steps, args.repeat,
                                      args.bucket_cap_mb).items():
                times[mode][name] = min(seconds, times[mode].get(name, seconds))
    print(f"ember {ember.__version__}; {os.cpu_count()} cores; 1 BLAS thread per process; "
          f"best of {max(args.rounds, 1)} rounds of {args.repeat} x {args.steps} steps; "
          f"DDP buckets of "
          f"{args.bucket_cap_mb} MiB")
    print(f"\n{'workload':42s} {'1 rank':>11s} {'2 DDP':>11s} {'2 after-bw':>11s} "
          f"{'2 no-comm':>11s} {'eff DDP':>8s} {'eff after':>9s} {'eff no-comm':>11s} "
          f"{'DDP/after':>9s}")
    for n in names:
        one, ddp, after, local = (times[m][n] for m in ("single", "ddp", "allreduce", "local"))
        print(f"{WORKLOADS[n][0]:42s} {fmt_time(one)} {fmt_time(ddp)} {fmt_time(after)} "
              f"{fmt_time(local)} {one / (2 * ddp):8.2f} {one / (2 * after):9.2f} "
              f"{one / (2 * local):11.2f} {ddp / after:9.2f}")
    print("\ngoals: scaling efficiency >= 0.9 at 2 ranks; DDP (overlap) no slower than one "
          "all-reduce after backward (DDP/after <= 1.0)")


if __name__ == "__main__":
    main()
