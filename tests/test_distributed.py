"""ember.distributed: errors before init and the API's PyTorch forms in this process; every
collective on 2 and 4 real ranks (started with the mpich wheel's mpiexec through
`ember run`), checked against NumPy inside the ranks (dist_scripts/collectives.py)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from distributed_util import ember_run_command, needs_mpi, rank_env, run_ranks

import ember
import ember.distributed as dist

SCRIPTS = Path(__file__).parent / "dist_scripts"
NOT_INIT = ("Default process group has not been initialized, please make sure to call "
            "init_process_group.")


@pytest.mark.parametrize("call", [
    lambda: dist.get_rank(), lambda: dist.get_world_size(), lambda: dist.get_backend(),
    lambda: dist.barrier(), lambda: dist.all_reduce(ember.ones(2)),
    lambda: dist.broadcast(ember.ones(2), src=0), lambda: dist.new_group([0]),
    lambda: dist.send(ember.ones(1), dst=1), lambda: dist.all_gather_object([None], 1),
])
def test_calls_before_init_raise_torchs_error(call):
    assert not dist.is_initialized()
    with pytest.raises(ValueError) as err:
        call()
    assert str(err.value) == NOT_INIT


def test_errors_before_init_match_torch():
    torch = pytest.importorskip("torch")
    import torch.distributed as tdist

    for ours, theirs in ((dist.get_rank, tdist.get_rank),
                         (lambda: dist.all_reduce(ember.ones(1)),
                          lambda: tdist.all_reduce(torch.ones(1)))):
        with pytest.raises(ValueError) as a:
            ours()
        with pytest.raises(ValueError) as b:
            theirs()
        assert str(a.value) == str(b.value)
    with pytest.raises(AssertionError, match="Process group cannot be None"):
        dist.destroy_process_group()


def test_reduce_op_and_errors_look_like_torchs():
    torch = pytest.importorskip("torch")
    import torch.distributed as tdist

    for name in ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"):
        ours, theirs = getattr(dist.ReduceOp, name), getattr(tdist.ReduceOp, name)
        assert repr(ours) == repr(theirs) and str(ours) == str(theirs)
    assert issubclass(dist.DistBackendError, dist.DistError)
    assert issubclass(dist.DistError, RuntimeError)
    assert dist.Backend("MPI") == "mpi" == dist.Backend.MPI
    del torch


def test_backend_choice_errors():
    with pytest.raises(ValueError, match="Invalid backend: 'nope'"):
        dist.init_process_group("nope")
    # no GPU here: NCCL is refused clearly, as torch does without CUDA
    with pytest.raises(RuntimeError, match="backend='nccl'.*use backend='mpi'|"
                       "backend='nccl'.*Use backend='mpi'"):
        dist.init_process_group("nccl")
    assert not dist.is_initialized()


def test_import_ember_does_not_load_mpi():
    code = ("import sys, ember, ember.distributed, ember.cli; ember.cli.build_parser(); "
            "print('mpi4py' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=rank_env(), check=True).stdout
    assert out.strip() == "False"


def test_without_mpi4py_init_says_what_to_install(tmp_path):
    blocker = tmp_path / "mpi4py"
    blocker.mkdir()
    (blocker / "__init__.py").write_text("raise ImportError('mpi4py blocked for the test')")
    code = ("import ember.distributed as d\n"
            "print(d.is_available())\n"
            "try:\n    d.init_process_group()\nexcept RuntimeError as e:\n    print(e)\n")
    env = rank_env({"PYTHONPATH": f"{tmp_path}:{rank_env()['PYTHONPATH']}"})
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True).stdout
    assert "pip install 'ember[mpi]'" in out and "mpi4py blocked" in out


def test_ember_run_command_line(tmp_path):
    from ember.distributed import run

    cmd = run.command(3, "train.py", ["--lr", "0.1"], hosts="10.0.0.1,10.0.0.2")
    assert cmd[0].endswith("mpiexec") and "-disable-auto-cleanup" in cmd
    assert cmd[cmd.index("-n") + 1] == "3" and cmd[cmd.index("-hosts") + 1] == \
        "10.0.0.1,10.0.0.2"
    assert cmd[cmd.index("MASTER_ADDR") + 1] == "10.0.0.1"
    assert cmd[-4].endswith("_rank.py") and cmd[-3:] == ["train.py", "--lr", "0.1"]
    with pytest.raises(ValueError, match="-n must be at least 1"):
        run.command(0, "train.py", [])
    hostfile = tmp_path / "hosts"
    hostfile.write_text("# the cluster\nnode7:2\nnode8:2\n")
    cmd = run.command(4, "train.py", [], hostfile=str(hostfile))
    assert cmd[cmd.index("-f") + 1] == str(hostfile)
    assert cmd[cmd.index("MASTER_ADDR") + 1] == "node7"
    with pytest.raises(FileNotFoundError, match="no hostfile"):
        run.command(2, "train.py", [], hostfile=str(tmp_path / "missing"))
    args = ember.cli.build_parser().parse_args(["run", "-n", "2", "s.py", "--x", "1"])
    assert args.nproc == 2 and args.script == "s.py" and args.args == ["--x", "1"]


SPAWNED_RANKS = """
import os, socket, sys
from datetime import timedelta
import ember, ember.distributed as dist, ember.multiprocessing as mp

def worker(rank, world_size, init_method):
    dist.init_process_group("gloo", init_method=init_method, rank=rank,
                            world_size=world_size, timeout=timedelta(seconds=60))
    t = ember.tensor([float(rank + 1)])
    dist.all_reduce(t)
    b = ember.tensor([float(rank)])
    dist.broadcast(b, src=world_size - 1)
    print(f"rank {dist.get_rank()}/{dist.get_world_size()} sum {t.item()} "
          f"bcast {b.item()}", flush=True)
    dist.destroy_process_group()

if __name__ == "__main__":
    with socket.socket() as s:
        s.bind(("localhost", 0))
        port = s.getsockname()[1]
    os.environ.update(MASTER_ADDR="localhost", MASTER_PORT=str(port))
    mp.spawn(worker, args=(3, None), nprocs=3)  # env://
    mp.spawn(worker, args=(2, f"tcp://localhost:{port}"), nprocs=2)  # the port again
"""


@needs_mpi
def test_spawned_ranks_meet_at_master_addr(tmp_path):
    """The DDP tutorial's `mp.spawn` + `init_process_group("gloo", rank=r, world_size=n)`
    with MASTER_ADDR/MASTER_PORT (or tcp://): no launcher, one MPI world; the next world
    can have the same port."""
    script = tmp_path / "spawned.py"
    script.write_text(SPAWNED_RANKS)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=rank_env(), timeout=180)
    assert proc.returncode == 0, proc.stderr
    lines = sorted(re.findall(r"rank \d/\d sum [\d.]+ bcast [\d.]+", proc.stdout))
    assert lines == ["rank 0/2 sum 3.0 bcast 1.0", "rank 0/3 sum 6.0 bcast 2.0",
                     "rank 1/2 sum 3.0 bcast 1.0", "rank 1/3 sum 6.0 bcast 2.0",
                     "rank 2/3 sum 6.0 bcast 2.0"], proc.stdout


RENDEZVOUS_ERRORS = [
    ({"RANK": None, "MASTER_ADDR": None}, {"rank": 0, "world_size": 2}),
    ({"MASTER_ADDR": "localhost", "MASTER_PORT": None}, {"rank": 0, "world_size": 2}),
    ({"RANK": None, "MASTER_ADDR": "localhost", "MASTER_PORT": "1"}, {"world_size": 2}),
    ({}, {"init_method": "tcp://localhost:1", "world_size": 2}),
]


def test_rendezvous_errors_match_torch(monkeypatch):
    """Missing MASTER_ADDR / MASTER_PORT / RANK / rank: PyTorch's ValueError, before any
    process waits (checked in a fresh process, where MPI is not initialised yet)."""
    pytest.importorskip("torch")
    import torch.distributed as tdist

    for env, kwargs in RENDEZVOUS_ERRORS:
        for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
            monkeypatch.delenv(name, raising=False)
        for name, value in env.items():
            if value is not None:
                monkeypatch.setenv(name, value)
        with pytest.raises(ValueError) as theirs:
            tdist.init_process_group("gloo", **kwargs)
        code = (f"import ember.distributed as d\ntry:\n    d.init_process_group('gloo', "
                f"**{kwargs!r})\nexcept ValueError as e:\n    print(e)\n")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=rank_env(), timeout=60).stdout
        assert out.strip() == str(theirs.value), (env, kwargs)


@needs_mpi
@pytest.mark.parametrize("n", [2, 4])
def test_every_collective_against_numpy(n):
    code, out = run_ranks(n, SCRIPTS / "collectives.py", timeout=120)
    assert code == 0, out
    passed = dict(re.findall(r"rank (\d+): (\d+) checks passed", out))
    assert sorted(passed) == [str(r) for r in range(n)], out
    assert min(int(c) for c in passed.values()) > 150, out


@needs_mpi
def test_ember_run_missing_script_and_exit_status(tmp_path):
    code, out = run_ranks(2, str(tmp_path / "missing.py"), timeout=30)
    assert code == 2 and "no script" in out
    code, out = run_ranks(2, "import sys, os\nsys.exit(int(os.environ['RANK']) * 4)\n",
                          timeout=30)
    assert code == 4, out  # the failing rank's status


def test_staging_shares_dense_cpu_memory_and_writes_views_back():
    import numpy as np

    from ember.distributed.staging import stage

    t = ember.ones(4)
    buf = stage(t, reduce=True)
    assert buf.shared  # MPI works on the tensor's own memory
    buf.values[:] = 3
    assert t.tolist() == [3.0] * 4
    base = ember.zeros(3, 4)
    col = base[:, 1]
    buf = stage(col, reduce=True)
    assert not buf.shared and buf.values.flags.c_contiguous
    buf.values[:] = [1, 2, 3]
    buf.write_back()  # through the view, into its base
    np.testing.assert_array_equal(base.numpy()[:, 1], [1, 2, 3])
    half = ember.tensor([1.5, 2.5], dtype=ember.bfloat16)
    buf = stage(half, reduce=True)
    assert buf.values.dtype == np.float32  # MPI does not reduce bfloat16: widened
    buf.values *= 2
    buf.write_back()
    assert half.dtype is ember.bfloat16 and half.float().tolist() == [3.0, 5.0]
    flags = stage(ember.tensor([True, False]), reduce=True)
    assert flags.values.dtype == np.uint8
    assert stage(ember.ones(2, dtype=ember.bfloat16)).raw.nbytes == 4  # bytes as they are


@needs_mpi
def test_ember_run_module(tmp_path):
    pkg = tmp_path / "trainpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "main.py").write_text(
        "import os, sys\nimport ember.distributed as dist\ndist.init_process_group()\n"
        "os.write(1, f'rank {dist.get_rank()} {__name__} {sys.argv[1:]}\\n'.encode())\n")
    proc = subprocess.run(ember_run_command(2, "trainpkg.main", ["--lr", "3"], ["-m"]),
                          cwd=tmp_path, env=rank_env(), capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for r in range(2):
        assert f"rank {r} __main__ ['--lr', '3']" in proc.stdout, proc.stdout
