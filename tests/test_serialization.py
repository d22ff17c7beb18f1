"""ember.save / ember.load: checkpoints in PyTorch's format (see test_torch_format.py for
what torch.load reads of them), PyTorch 2.6+ weights_only semantics, atomic writes, clear
errors for damaged or hostile files (PyTorch's and the safetensors ones ember wrote
before)."""

import collections
import io
import json
import os
import pickle
import signal
import struct
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest

import ember


def _state():
    ember.manual_seed(0)
    return {
        "model": {"fc.weight": ember.randn(3, 4, requires_grad=True),
                  "fc.bias": ember.zeros(3), "half": ember.ones(2, dtype=ember.bfloat16),
                  "steps": ember.tensor(5), "mask": ember.tensor([True, False])},
        "optimizer": {"state": {0: {"step": 3, "momentum_buffer": ember.ones(3, 4)},
                                1: {"step": 3, "momentum_buffer": None}},
                      "param_groups": [{"lr": 0.1, "betas": (0.9, 0.999), "params": [0, 1],
                                        "nesterov": False, "eps": float("inf")}]},
        "epoch": 7,
        "name": "run-1",
    }


def _assert_same(a, b):
    if isinstance(a, ember.Tensor):
        assert isinstance(b, ember.Tensor)
        assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape)
        assert a.requires_grad == b.requires_grad
        np.testing.assert_array_equal(a.detach().float().numpy(), b.detach().float().numpy())
    elif isinstance(a, dict):
        assert list(a.keys()) == list(b.keys())
        for k in a:
            _assert_same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _assert_same(x, y)
    else:
        assert a == b and type(a) is type(b)


def test_round_trip_nested_state(tmp_path):
    state = _state()
    path = tmp_path / "ck.safetensors"
    ember.save(state, path)
    _assert_same(state, ember.load(path))


def test_plain_safetensors_file_loads_as_dict(tmp_path):
    save_file = pytest.importorskip("safetensors.numpy").save_file

    path = tmp_path / "foreign.safetensors"
    save_file({"a": np.ones((2, 2), np.float32), "b": np.arange(3, dtype=np.int64)}, str(path))
    loaded = ember.load(path)
    assert sorted(loaded) == ["a", "b"]
    assert loaded["b"].dtype == ember.int64 and loaded["b"].tolist() == [0, 1, 2]


def test_devices_and_map_location(tmp_path):
    path = tmp_path / "dev.safetensors"
    ember.save({"x": ember.ones(2, device="countdev"), "y": ember.ones(2)}, path)
    back = ember.load(path)
    assert back["x"].device == ember.device("countdev:0") and back["y"].device.type == "cpu"
    assert ember.load(path, map_location="cpu")["x"].device.type == "cpu"
    mapped = ember.load(path, map_location={"countdev:0": "cpu"})
    assert mapped["x"].device.type == "cpu"
    seen = []
    ember.load(path, map_location=lambda t, saved: seen.append(saved) or t)
    assert sorted(seen) == ["countdev:0", "cpu"]


def test_unpicklable_object_fails_before_touching_the_file(tmp_path):
    path = tmp_path / "ck.safetensors"
    ember.save({"a": ember.ones(1)}, path)
    before = path.read_bytes()
    with pytest.raises((pickle.PicklingError, AttributeError), match="pickle"):
        ember.save({"fn": lambda: 0}, path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["ck.safetensors"]


class Config:
    """A plain class: saved by pickle, as torch.save does; refused by weights_only."""

    def __init__(self, lr):
        self.lr = lr


def test_pickle_needing_objects_are_saved_but_refused_unless_weights_only_false(tmp_path):
    path = tmp_path / "ck.safetensors"
    ember.save({"config": Config(0.5), "w": ember.ones(2)}, path)
    with pytest.raises(pickle.UnpicklingError) as info:
        ember.load(path)
    message = str(info.value)
    assert message.startswith("Weights only load failed.")
    assert "`weights_only` set to `False` will likely succeed" in message
    assert f"GLOBAL {__name__}.Config was not an allowed global" in message
    assert "ck.safetensors" in message
    loaded = ember.load(path, weights_only=False)
    assert type(loaded["config"]) is Config and loaded["config"].lr == 0.5
    with ember.serialization.safe_globals([Config]):
        assert ember.load(path)["config"].lr == 0.5
    assert Config not in ember.serialization.get_safe_globals()
    with pytest.raises(pickle.UnpicklingError):
        ember.load(path)


def test_whole_module_round_trips_with_weights_only_false(tmp_path):
    ember.manual_seed(0)
    net = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.ReLU(), ember.nn.Linear(4, 2))
    path = tmp_path / "net.ckpt"
    ember.save(net, path)
    with pytest.raises(pickle.UnpicklingError, match="ember.nn.modules.container.Sequential"):
        ember.load(path)
    back = ember.load(path, weights_only=False)
    assert isinstance(back[0].weight, ember.nn.Parameter) and back[0].weight.requires_grad
    x = ember.randn(5, 3)
    np.testing.assert_array_equal(back(x).detach().numpy(), net(x).detach().numpy())


def test_builtin_containers_load_with_weights_only(tmp_path):
    """Sets, complex, bytes and tuple-keyed dicts need pickle but only allowed globals,
    as in torch.load(weights_only=True); an OrderedDict stays one."""
    obj = {"s": {1, 2}, "c": 1 + 2j, "b": b"\x00\xff", "tk": {(1, 2): ember.ones(2)},
           "od": collections.OrderedDict([("z", ember.zeros(1)), ("a", 1)]),
           "dtype": ember.float16, "dev": ember.device("cpu")}
    path = tmp_path / "ck"
    ember.save(obj, path)
    back = ember.load(path)
    assert back["s"] == {1, 2} and back["c"] == 1 + 2j and back["b"] == b"\x00\xff"
    assert back["tk"][(1, 2)].tolist() == [1.0, 1.0]
    assert type(back["od"]) is collections.OrderedDict and list(back["od"]) == ["z", "a"]
    assert back["dtype"] is ember.float16 and back["dev"] == ember.device("cpu")


def test_hostile_pickle_record_is_refused_and_runs_nothing(tmp_path):
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    path = tmp_path / "evil.ckpt"
    ember.save({"w": ember.ones(1), "x": Evil()}, path)
    with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL posix\.system whose module "
                                                     r"posix is blocked"):
        ember.load(path)
    assert not marker.exists()


def test_shared_storage_is_saved_once_and_loads_as_one_tensor(tmp_path):
    w = ember.nn.Parameter(ember.randn(4, 4))
    path = tmp_path / "tied.ckpt"
    ember.save({"enc": w, "dec": w, "alias": w.detach()}, path)
    assert _records(path) == ["tied/data/0"]
    back = ember.load(path)
    assert back["enc"] is back["dec"] and isinstance(back["enc"], ember.nn.Parameter)
    back["alias"][0, 0] = 42.0
    assert back["enc"][0, 0].item() == 42.0


def test_views_of_one_storage_share_memory_after_loading(tmp_path):
    """As torch.save does: the storage is stored once, each view as offset and strides."""
    base = ember.arange(24.0)
    views = {"base": base, "slice": base[2:8], "t": base.view(4, 6).t(),
             "alone": ember.ones(2, 3).t()}  # a view alone: stored contiguous, as it reads
    path = tmp_path / "views.ckpt"
    ember.save(views, path)
    back = ember.load(path)
    for key, value in views.items():
        np.testing.assert_array_equal(back[key].numpy(), value.numpy())
    back["base"][3] = -1.0
    assert back["slice"][1].item() == -1.0 and back["t"][3, 0].item() == -1.0
    assert _records(path) == ["views/data/0", "views/data/1"]  # base's storage, alone's
    assert back["alone"].stride() == (1, 3)


def _records(path):
    return [n for n in zipfile.ZipFile(path).namelist() if "/data/" in n]


def test_file_objects(tmp_path):
    buffer = io.BytesIO()
    ember.save({"w": ember.arange(3)}, buffer)
    buffer.seek(0)
    assert ember.load(buffer)["w"].tolist() == [0, 1, 2]


def test_mmap_load(tmp_path):
    path = tmp_path / "ck"
    ember.save({"w": ember.arange(1000.0)}, path)
    back = ember.load(path, mmap=True)
    back["w"][0] = 5.0  # copy-on-write: the file keeps its bytes
    assert back["w"][:3].tolist() == [5.0, 1.0, 2.0]
    assert ember.load(path)["w"][0].item() == 0.0


def test_files_are_created_with_the_umask_and_keep_an_existing_mode(tmp_path):
    old = os.umask(0o027)
    try:
        ember.save({"a": ember.ones(1)}, tmp_path / "new.ckpt")
    finally:
        os.umask(old)
    assert (tmp_path / "new.ckpt").stat().st_mode & 0o777 == 0o640
    kept = tmp_path / "kept.ckpt"
    kept.write_bytes(b"old")
    kept.chmod(0o604)
    ember.save({"a": ember.ones(1)}, kept)
    assert kept.stat().st_mode & 0o777 == 0o604


_KILLED_SAVE = textwrap.dedent("""
    import os, sys, time
    import ember
    def stall(fd):  # the bytes are written; die before the rename
        print("writing", flush=True)
        time.sleep(60)
    os.fsync = stall
    ember.save({"w": ember.ones(1000)}, sys.argv[1])
""")


def test_killed_save_leaves_the_old_file_and_the_next_save_removes_its_temp(tmp_path):
    path = tmp_path / "ck.ckpt"
    ember.save({"w": ember.zeros(2)}, path)
    child = subprocess.Popen([sys.executable, "-c", _KILLED_SAVE, str(path)],
                             stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        assert child.stdout.readline().strip() == "writing"
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(30)
    orphans = [p.name for p in tmp_path.iterdir() if p.name != "ck.ckpt"]
    assert len(orphans) == 1 and orphans[0].endswith(".ember-tmp")  # SIGKILL: cannot clean
    assert ember.load(path)["w"].tolist() == [0.0, 0.0]  # the old file, intact
    ember.save({"w": ember.ones(2)}, path)
    assert [p.name for p in tmp_path.iterdir()] == ["ck.ckpt"]
    assert ember.load(path)["w"].tolist() == [1.0, 1.0]


def _with_structure(structure_json: str) -> bytes:
    header = json.dumps({"__metadata__": {"format": "ember.checkpoint/1",
                                          "structure": structure_json}}).encode()
    return struct.pack("<Q", len(header)) + header


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty", "flipped_byte",
                                    "huge_header", "bad_offsets", "deep_structure",
                                    "deep_pickle", "bad_pickle", "bare_pickle",
                                    "view_past_storage"])
def test_corrupted_or_hostile_files_give_a_clear_error_naming_the_file(tmp_path, damage):
    path = tmp_path / "ck.safetensors"
    ember.save(_state(), path)
    data = path.read_bytes()
    if damage == "truncated":
        data = data[: len(data) - 7]
    elif damage == "garbage":
        data = b"this is not a checkpoint at all"
    elif damage == "empty":
        data = b""
    elif damage == "flipped_byte":  # inside data.pkl: its CRC no longer matches
        data = data[:80] + bytes([data[80] ^ 0xFF]) + data[81:]
    elif damage == "huge_header":
        data = struct.pack("<Q", 1 << 60) + data[8:]
    elif damage == "bad_offsets":
        header = json.dumps({"w": {"dtype": "F32", "shape": [1 << 40],
                                   "data_offsets": [0, 4 << 40]}}).encode()
        data = struct.pack("<Q", len(header)) + header
    elif damage == "deep_structure":
        data = _with_structure('{"__list__": [' * 100_000 + "]}" * 100_000)
    elif damage == "deep_pickle":  # 200k nested lists, then garbage instead of STOP
        data = _with_structure(json.dumps({"__pickle__": __import__("base64").b64encode(
            b"\x80\x02" + b"]" * 200_000 + b"a" * 199_999 + b"\xff").decode()}))
    elif damage == "view_past_storage":  # would read memory beyond the tensor's bytes
        header = json.dumps({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                             "__metadata__": {"format": "ember.checkpoint/1", "structure":
                                              json.dumps({"__tensor__": "w",
                                                          "view": [0, [100], [1]]})}})
        data = struct.pack("<Q", len(header)) + header.encode() + bytes(8)
    elif damage == "bad_pickle":
        data = _with_structure(json.dumps({"__pickle__": "bm90IGEgcGlja2xl"}))
    else:
        data = pickle.dumps({"a": 1}, protocol=2)
    path.write_bytes(data)
    with pytest.raises(RuntimeError, match=r"ember\.load: .*ck\.safetensors"):
        ember.load(path)


def test_missing_folder_on_save_is_named(tmp_path):
    with pytest.raises(RuntimeError, match=r"Parent directory .*nowhere does not exist"):
        ember.save({"a": 1}, tmp_path / "nowhere" / "ck")


def test_missing_file_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        ember.load(tmp_path / "nope.safetensors")
