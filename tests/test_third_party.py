"""Libraries built on PyTorch, unchanged, on ember (`python -m ember.run`): PyTorch
Lightning (Trainer, callbacks, loggers, checkpoints, the model summary's FLOPs),
torchmetrics and einops. Each script in tests/third_party runs under the real torch and
under ember, and prints the same text.

And the PyTorch internals those libraries reach for, each against torch:
`torch.utils.flop_counter.FlopCounterMode`, `torch.PyTorchFileReader/Writer`,
`torch._C._nn._parse_to`, a `map_location` callable that returns None.
"""

from __future__ import annotations

import importlib.util
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import ember  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "tests" / "third_party"


def _start(script: str, alias: bool, workdir: Path) -> subprocess.Popen:
    workdir.mkdir()
    cmd = [sys.executable, "-W", "ignore", *(["-m", "ember.run"] if alias else []),
           str(SCRIPTS / script), str(workdir)]
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    return subprocess.Popen(cmd, cwd=workdir, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen, who: str) -> str:
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, f"under {who}:\n{err[-4000:]}"
    return out


@pytest.mark.parametrize("script, library", [
    ("lightning_fit.py", "pytorch_lightning"),
    ("lightning_callbacks.py", "pytorch_lightning"),
    ("torchmetrics_usage.py", "torchmetrics"),
    ("einops_usage.py", "einops"),
])
def test_library_script_prints_what_torch_prints(script: str, library: str,
                                                 tmp_path: Path) -> None:
    if importlib.util.find_spec(library) is None:
        pytest.skip(f"{library} is not installed")
    # both at once: the machine has two cores
    procs = {who: _start(script, who == "ember", tmp_path / who) for who in ("torch", "ember")}
    theirs, ours = (_finish(procs[who], who) for who in ("torch", "ember"))
    assert ours == theirs


# -- FlopCounterMode --------------------------------------------------------------------

def _flop_model(nn):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 16)
            self.conv = nn.Conv2d(3, 4, 3, padding=1, stride=2)
            self.fc2 = nn.Linear(16, 4, bias=False)
            self.tc = nn.ConvTranspose2d(4, 2, 3, stride=2)
            self.c1 = nn.Conv1d(2, 3, 2)

        def forward(self, m, x, img, a, b, s):
            y = self.conv(img)
            return (self.fc2(m.relu(self.fc(x))).sum() + y.sum() + self.tc(y).sum()
                    + (x @ x.T).sum() + m.bmm(x[None], x.T[None]).sum() + m.mm(x, x.T).sum()
                    + m.addmm(x[:, :5], x, x.T).sum()
                    + m.baddbmm(x[None, :, :5], x[None], x.T[None]).sum()
                    + (x @ x[0]).sum() + (x[0] @ x.T).sum() + (a @ x.T).sum()
                    + (x.T @ b).sum() + self.c1(s).sum() + self.c1(s[0]).sum()
                    + m.einsum("ij,kj->ik", x, x).sum()
                    + m.einsum("bij,bjk,bkl->bil", a, a.transpose(1, 2), a).sum())
    return M()


def _counts(counter) -> dict:
    return {mod: {str(op): n for op, n in ops.items()}
            for mod, ops in counter.get_flop_counts().items()}


def _flop_run(m):
    from importlib import import_module

    flop_counter = import_module(f"{m.__name__}.utils.flop_counter")
    m.manual_seed(0)
    model = _flop_model(m.nn)
    gen = [m.randn(*s) for s in ((5, 8), (2, 3, 6, 6), (3, 5, 8), (2, 5, 3), (2, 2, 7))]
    x, img, a, b, s = gen
    x.requires_grad_()
    img.requires_grad_()
    with flop_counter.FlopCounterMode(display=False) as forward:
        model(m, x, img, a, b, s)
    with flop_counter.FlopCounterMode(display=False) as backward:
        model(m, x, img, a, b, s).backward()
    y = (x @ x.T) @ x
    with flop_counter.FlopCounterMode(display=False) as later:  # a graph made before
        y.sum().backward()
    q = m.randn(2, 2, 5, 4)
    with flop_counter.FlopCounterMode(display=False) as attention:
        m.nn.functional.scaled_dot_product_attention(q, q, q)  # CPU flash: uncounted
        m.nn.functional.scaled_dot_product_attention(q[0], q[0], q[0])  # 3-d: the math path
    mha = m.nn.MultiheadAttention(8, 2, batch_first=True)
    with flop_counter.FlopCounterMode(display=False) as layer:
        mha(x[None], x[None], x[None])[0].sum().backward()
    with flop_counter.FlopCounterMode(display=True, depth=1) as shown:
        model.fc(x)
    # backward products count toward the modules whose forward made them (PyTorch's
    # tracker follows backward hooks, and files some under the wrong module): compare
    # the totals per operator there
    return [(c.get_total_flops(), _counts(c) if c is not backward else _counts(c)["Global"])
            for c in (forward, backward, later, attention, layer, shown)]


def test_flop_counter_counts_what_torch_counts(capsys: pytest.CaptureFixture) -> None:
    theirs = _flop_run(torch)
    their_table = capsys.readouterr().out
    ours = _flop_run(ember)
    assert ours == theirs
    assert capsys.readouterr().out == their_table


def test_flop_counter_hooks_come_off_on_exit() -> None:
    from ember.core import interpose
    from ember.utils.flop_counter import FlopCounterMode

    before = interpose.active, interpose.backward_active
    for _ in range(2):
        with FlopCounterMode(display=False) as counter:
            ember.randn(4, 4) @ ember.randn(4, 4)
        assert counter.get_total_flops() == 128
    assert (interpose.active, interpose.backward_active) == before
    with pytest.warns(UserWarning, match="mods argument is not needed anymore"):
        FlopCounterMode(ember.nn.Linear(2, 2), display=False)


# -- the zip container's record reader and writer ----------------------------------------

def test_file_reader_reads_torch_save_records() -> None:
    buf = io.BytesIO()
    torch.save({"w": torch.arange(6.0)}, buf)
    theirs = torch.PyTorchFileReader(io.BytesIO(buf.getvalue()))
    ours = ember.PyTorchFileReader(io.BytesIO(buf.getvalue()))
    assert ours.get_all_records() == theirs.get_all_records()
    for name in theirs.get_all_records():
        assert ours.get_record(name) == theirs.get_record(name)
        assert ours.get_record_offset(name) == theirs.get_record_offset(name)
    assert ours.has_record("data.pkl") and not ours.has_record("nope")
    assert ours.serialization_id() == theirs.serialization_id()
    assert ours.get_storage_from_record("data/0", 6, ember.float32).tolist() == \
        [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    with pytest.raises(RuntimeError, match="PytorchStreamReader failed locating file nope"):
        ours.get_record("nope")


def test_file_writer_writes_what_torch_writes(tmp_path: Path) -> None:
    files = {}
    for who, m in (("torch", torch), ("ember", ember)):
        path = tmp_path / who / "arch.pt"
        path.parent.mkdir()
        w = m.PyTorchFileWriter(str(path))
        w.write_record("data.pkl", b"abc", 3)
        w.write_record("extra/blob", b"0123456789", 10)
        assert w.archive_name() == "arch"
        assert w.get_all_written_records() >= {"data.pkl", "extra/blob"}
        w.write_end_of_file()
        files[who] = path.read_bytes()
    assert files["ember"] == files["torch"]
    reader = torch.PyTorchFileReader(str(tmp_path / "ember" / "arch.pt"))
    assert reader.get_record("extra/blob") == b"0123456789"


# -- small internals ---------------------------------------------------------------------

@pytest.mark.parametrize("args, kwargs", [
    (("cpu",), {}), (("float16",), {}), ((), {"device": "cpu", "dtype": "int32",
                                             "non_blocking": True}),
    (("tensor64",), {}), (("cpu", "float64", True), {}),
])
def test_parse_to_matches_torch(args: tuple, kwargs: dict) -> None:
    def resolve(m, v):
        if v == "tensor64":
            return m.zeros(1, dtype=m.float64)
        return getattr(m, v) if v in ("float16", "int32", "float64") else v

    results = []
    for m in (torch, ember):
        a = tuple(resolve(m, v) for v in args)
        k = {key: resolve(m, v) for key, v in kwargs.items()}
        device, dtype, non_blocking, fmt = m._C._nn._parse_to(*a, **k)
        results.append((str(device), str(dtype).split(".")[-1], non_blocking, fmt))
    assert results[0] == results[1]


def test_map_location_callable_returning_none_keeps_the_saved_device(tmp_path: Path) -> None:
    path = tmp_path / "t.pt"
    ember.save({"a": ember.arange(3.0)}, path)
    seen = []
    loaded = ember.load(path, map_location=lambda storage, loc: seen.append(loc))
    assert seen == ["cpu"] and loaded["a"].tolist() == [0.0, 1.0, 2.0]
    theirs = torch.load(path, map_location=lambda storage, loc: None)
    assert theirs["a"].tolist() == [0.0, 1.0, 2.0]


def test_names_libraries_import() -> None:
    from ember.distributed.constants import default_pg_nccl_timeout, default_pg_timeout
    from ember.nn.modules.module import _IncompatibleKeys
    from ember.utils._pytree import _get_node_type

    assert default_pg_timeout == torch.distributed.constants.default_pg_timeout
    assert default_pg_nccl_timeout == torch.distributed.constants.default_pg_nccl_timeout
    assert _IncompatibleKeys([], []) == ([], [])
    assert _get_node_type([1]) is list
    assert ember.profiler.kineto_available() is torch.profiler.kineto_available()
    assert type(ember.Tensor) is ember._C._TensorMeta
    assert ember.ScriptFunction is ember.jit.ScriptFunction
    assert not isinstance(ember.jit.script(ember.nn.Linear(2, 2)), ember.ScriptModule)
    ember._C._log_api_usage_once("ember.test")  # a no-op, as in PyTorch
