"""DistributedDataParallel: bucketing in this process; training, no_sync, unused
parameters, buffers and state_dict on 2 and 4 real ranks (tests/dist_scripts/ddp_checks.py,
where each rank compares itself with single-process training); the DDP example under
`ember run -n 2`."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from distributed_util import needs_mpi, run_ranks

import ember
from ember import nn
from ember.nn.parallel import DDP, DistributedDataParallel
from ember.nn.parallel.reducer import FIRST_BUCKET_BYTES, assign_buckets

ROOT = Path(__file__).resolve().parent.parent
CHECKS = ["training", "gradient as bucket view", "overlap", "no_sync", "no_sync local",
          "unused parameters", "unused parameter error", "buffers and state_dict", "sampler"]


def test_buckets_take_parameters_in_reverse_order_under_the_cap():
    params = [ember.zeros(n) for n in (300, 10, 200, 50, 40)]  # float32: 4 bytes each
    assert assign_buckets(params, cap_bytes=800, first_cap_bytes=800) == [[4, 3, 2], [1, 0]]
    assert assign_buckets(params, cap_bytes=10 ** 6, first_cap_bytes=100) == \
        [[4], [3, 2, 1, 0]]
    mixed = [ember.zeros(4), ember.zeros(4, dtype=ember.float64), ember.zeros(4)]
    assert assign_buckets(mixed, 10 ** 6, 10 ** 6) == [[2], [1], [0]]  # one dtype a bucket
    assert FIRST_BUCKET_BYTES == 1024 * 1024


def test_importing_the_parallel_modules_loads_no_mpi():
    code = ("import sys, ember.nn.parallel, ember.utils.data; "
            "print([m for m in ('mpi4py', 'ember.distributed') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_needs_an_initialized_process_group():
    assert DDP is DistributedDataParallel
    assert nn.parallel.distributed.DistributedDataParallel is DistributedDataParallel
    with pytest.raises(ValueError, match="Default process group has not been initialized, "
                       "please make sure to call init_process_group."):
        DistributedDataParallel(nn.Linear(2, 2))


@needs_mpi
@pytest.mark.parametrize("ranks", [2, 4])
def test_ddp_on_real_ranks(ranks):
    code, out = run_ranks(ranks, ROOT / "tests" / "dist_scripts" / "ddp_checks.py",
                          timeout=120)
    assert code == 0, out
    passed = re.findall(r"rank (\d+): ([a-z_ ]+?) ok", out)
    expected = CHECKS + (["opencl"] if any(d.type == "opencl" for d in ember.devices()) else [])
    for check in expected:
        assert sorted(int(r) for r, c in passed if c == check) == list(range(ranks)), \
            f"{check}:\n{out}"


@needs_mpi
def test_example_trains_and_rank0_saves_a_checkpoint(tmp_path):
    pytest.importorskip("sklearn")
    ckpt = tmp_path / "ddp.pt"
    code, out = run_ranks(2, ROOT / "examples" / "ddp_train.py", timeout=180,
                          args=["--epochs", "2", "--checkpoint", str(ckpt)])
    assert code == 0, out
    assert out.count("epoch ") == 2  # printed by rank 0 only
    accuracy = float(re.search(r"ranks 2, test accuracy ([0-9.]+)", out).group(1))
    assert accuracy > 0.8, out
    state = ember.load(ckpt)
    assert list(state)[0] == "0.weight" and state["0.weight"].shape == (8, 1, 3, 3)
