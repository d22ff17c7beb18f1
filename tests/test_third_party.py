"""Libraries built on PyTorch, unchanged, on ember (`python -m ember.run`): PyTorch
Lightning (Trainer, callbacks, loggers, checkpoints, the model summary's FLOPs),
torchmetrics, einops, Hugging Face transformers (GPT-2, BERT, Llama from configs,
generation, save_pretrained/from_pretrained through safetensors) and
torch.distributed.checkpoint. Each script in tests/third_party runs under the real torch
and under ember, and prints the same text.

And the PyTorch internals those libraries reach for, each against torch:
`torch.utils.flop_counter.FlopCounterMode`, `torch.PyTorchFileReader/Writer`,
`torch._C._nn._parse_to`, a `map_location` callable that returns None, pytree key paths,
DTensor placements, functional collectives (real MPI ranks), `UntypedStorage.from_file`
with `torch.asarray`, writes into an expand that repeats nothing.
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
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1")
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
    ("lightning_fabric_loop.py", "lightning"),
    ("transformers_models.py", "transformers"),
    ("dcp_usage.py", "torch"),
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
    for version in (2, 4, 6, 7):  # the version record: its value and (from 6) its name
        written = []
        for m in (torch, ember):
            path = tmp_path / f"{m.__name__}{version}" / "v.pt"  # (the name is the archive's)
            path.parent.mkdir()
            w = m.PyTorchFileWriter(str(path))
            w.set_min_version(version)
            w.write_record("data.pkl", b"x", 1)
            w.write_end_of_file()
            written.append(path.read_bytes())
        assert written[1] == written[0], version


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


# -- pytree key paths, placements, storages, small semantics -------------------------------

def test_pytree_key_paths_match_torch() -> None:
    from collections import namedtuple

    import torch.utils._pytree as theirs

    import ember.utils._pytree as ours

    point = namedtuple("point", "x y")
    tree = {"a": [1, (2, 3)], "b": point(4, [5]), "c": {}}
    for m in (theirs, ours):
        m_point = point
        flat, _ = m.tree_flatten_with_path({**tree, "b": m_point(4, [5])})
        m.keystr_paths = [m.keystr(p) for p, _ in flat]
    assert ours.keystr_paths == theirs.keystr_paths
    assert [repr(p) for p, _ in ours.tree_flatten_with_path(tree)[0]] == \
        [repr(p) for p, _ in theirs.tree_flatten_with_path(tree)[0]]
    mapped = ours.tree_map_with_path(lambda p, v: (ours.keystr(p), v), [1, {"k": 2}])
    assert mapped == theirs.tree_map_with_path(lambda p, v: (theirs.keystr(p), v), [1, {"k": 2}])
    assert ours.key_get(tree, (ours.MappingKey("a"), ours.SequenceKey(1),
                               ours.SequenceKey(0))) == 2


def test_dtensor_placements_match_torch() -> None:
    from torch.distributed.tensor import Partial, Replicate, Shard
    from torch.distributed.tensor.placement_types import _StridedShard

    from ember.distributed.tensor import DTensor, distribute_tensor
    from ember.distributed.tensor import Partial as EPartial
    from ember.distributed.tensor import Replicate as EReplicate
    from ember.distributed.tensor import Shard as EShard
    from ember.distributed.tensor.placement_types import _StridedShard as EStrided

    for a, b in ((Shard(1), EShard(1)), (Replicate(), EReplicate()), (Partial(), EPartial()),
                 (_StridedShard(0, split_factor=2), EStrided(0, split_factor=2))):
        assert (repr(a), str(a)) == (repr(b), str(b))
    for size, chunks in ((10, 3), (2, 3), (0, 2), (7, 7)):
        for rank in range(chunks):
            assert EShard.local_shard_size_and_offset(size, chunks, rank) == \
                Shard.local_shard_size_and_offset(size, chunks, rank)
    assert EShard(0).is_shard() and not EShard(0).is_shard(1) and EPartial().is_partial()
    assert not isinstance(ember.zeros(2), DTensor)
    with pytest.raises(NotImplementedError, match="ember has no DTensor"):
        distribute_tensor(ember.zeros(2))


def test_functional_collectives_on_real_ranks() -> None:
    from distributed_util import mpi_missing, run_ranks

    if mpi_missing():
        pytest.skip(str(mpi_missing()))
    code, out = run_ranks(2, """
        import ember, ember.distributed as dist
        import ember.distributed._functional_collectives as fc
        dist.init_process_group()
        r = dist.get_rank()
        x = ember.tensor([1.0, 2.0]) * (r + 1)
        assert fc.all_reduce(x, "sum", None).tolist() == [3.0, 6.0]
        assert x.tolist() == [1.0 * (r + 1), 2.0 * (r + 1)]  # a new tensor, x unchanged
        assert fc.wait_tensor(fc.broadcast(x, 1, None)).tolist() == [2.0, 4.0]
        g = fc.all_gather_tensor(x.reshape(1, 2), 1, None)
        assert g.tolist() == [[1.0, 2.0, 2.0, 4.0]], g
        rs = fc.reduce_scatter_tensor(ember.arange(4.0).reshape(2, 2) * (r + 1), "sum", 1, None)
        assert rs.tolist() == ([[0.0], [6.0]] if r == 0 else [[3.0], [9.0]]), rs
        src = ember.tensor([10.0 * r, 10.0 * r + 1, 10.0 * r + 2], requires_grad=True)
        out = fc.all_to_all_single_autograd(src, [1, 2] if r == 0 else [2, 1],
                                            [1, 2] if r == 0 else [2, 1], None)
        want = [0.0, 10.0, 11.0] if r == 0 else [1.0, 2.0, 12.0]
        assert out.tolist() == want, out
        (out * ember.arange(1.0, 4.0)).sum().backward()
        # each element's gradient is the weight of the place it was sent to
        assert src.grad.tolist() == ([1.0, 1.0, 2.0] if r == 0 else [2.0, 3.0, 3.0]), src.grad
        dist.destroy_process_group()
    """, timeout=120)
    assert code == 0, out


def test_untyped_storage_from_file_and_asarray(tmp_path: Path) -> None:
    path = tmp_path / "bytes.bin"
    data = bytes(range(16))
    path.write_bytes(data)
    for m in (torch, ember):
        storage = m.UntypedStorage.from_file(str(path), shared=False, nbytes=16).untyped()
        assert storage.nbytes() == 16
        piece = m.asarray(storage[4:12], dtype=m.uint8)
        assert piece.tolist() == list(range(4, 12))
        assert m.asarray(storage[0:8], dtype=m.uint8).view(dtype=m.int32).tolist() == \
            [int.from_bytes(data[0:4], "little"), int.from_bytes(data[4:8], "little")]
    assert path.read_bytes() == data  # copy-on-write: the file is untouched


def test_write_into_an_expand_that_repeats_nothing() -> None:
    for m in (torch, ember):
        b = m.arange(5).expand(1, -1)
        b.copy_(m.arange(5).expand(1, -1) * 2)
        assert b.tolist() == [[0, 2, 4, 6, 8]] and b.stride() == (5, 1)
        with pytest.raises(RuntimeError, match="more than one element of the written-to"):
            m.arange(5).expand(3, 5).copy_(m.zeros(3, 5, dtype=m.int64))


def test_module_annotations_resolve() -> None:
    import typing

    hints = typing.get_type_hints(ember.nn.Module)
    assert hints["training"] is bool and hints["dump_patches"] is bool
    for name in ("Linear", "Conv2d", "LSTM", "TransformerEncoderLayer", "MultiheadAttention"):
        typing.get_type_hints(getattr(ember.nn, name))  # no NameError


def test_cuda_graphs_and_dynamo_markers_behave_as_torch_cpu() -> None:
    for m in (torch, ember):
        with pytest.raises(RuntimeError, match="Tried to instantiate dummy base class CUDAGraph"):
            m.cuda.CUDAGraph()
        with pytest.raises(RuntimeError, match="dummy base class _cuda_isCurrentStream"):
            m.cuda.is_current_stream_capturing()  # (a build without CUDA)

        def fn():
            return 1
        assert m._dynamo.assume_constant_result(fn) is fn and fn._dynamo_marked_constant
        assert m._dynamo.forbid_in_graph(fn)._dynamo_forbidden
        assert m._dynamo.graph_break() is None


def test_dcp_partial_load_leaves_absent_keys(tmp_path: Path) -> None:
    import importlib
    import warnings

    for m in (torch, ember):
        dcp = importlib.import_module(f"{m.__name__}.distributed.checkpoint")
        folder = str(tmp_path / m.__name__)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (the single-process warning)
            dcp.save({"a": m.ones(2), "n": 3}, checkpoint_id=folder)
            target = {"a": m.zeros(2), "b": m.full((2,), 5.0), "n": 0}
            dcp.load(target, checkpoint_id=folder,
                     planner=dcp.DefaultLoadPlanner(allow_partial_load=True))
        assert target["a"].tolist() == [1.0, 1.0] and target["b"].tolist() == [5.0, 5.0]
        assert target["n"] == 3
