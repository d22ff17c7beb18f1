"""ember.save / ember.load: safetensors checkpoints, atomic writes, clear errors."""

import json
import os
import struct

import numpy as np
import pytest

import ember

pytest.importorskip("safetensors")


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


def test_file_is_standard_safetensors(tmp_path):
    """Other tools read the tensors: safetensors' own loader opens the file."""
    from safetensors.numpy import load_file

    path = tmp_path / "ck.safetensors"
    state = {"w": ember.arange(6.0).reshape(2, 3), "i": ember.tensor([1, 2], dtype=ember.int32)}
    ember.save(state, path)
    arrays = load_file(str(path))
    np.testing.assert_array_equal(arrays["w"], np.arange(6.0, dtype=np.float32).reshape(2, 3))
    assert arrays["i"].dtype == np.int32
    header_len = struct.unpack("<Q", path.read_bytes()[:8])[0]
    header = json.loads(path.read_bytes()[8:8 + header_len])
    assert header["__metadata__"]["format"] == "ember.checkpoint/1"


def test_plain_safetensors_file_loads_as_dict(tmp_path):
    from safetensors.numpy import save_file

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


def test_unsupported_object_fails_before_touching_the_file(tmp_path):
    path = tmp_path / "ck.safetensors"
    ember.save({"a": ember.ones(1)}, path)
    before = path.read_bytes()
    with pytest.raises(TypeError, match=r"cannot store a function at 'fn'.*no pickle"):
        ember.save({"fn": lambda: 0}, path)
    with pytest.raises(TypeError, match="dict keys must be str or int"):
        ember.save({(1, 2): 0}, path)
    assert path.read_bytes() == before


def test_crash_mid_save_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "ck.safetensors"
    ember.save({"a": ember.ones(3)}, path)
    before = path.read_bytes()

    def crash(*args, **kwargs):
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(os, "fsync", crash)
    with pytest.raises(OSError, match="simulated"):
        ember.save({"a": ember.zeros(1000)}, path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["ck.safetensors"]  # no temp file left


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty", "flipped_header"])
def test_corrupted_files_give_a_clear_error(tmp_path, damage):
    path = tmp_path / "ck.safetensors"
    ember.save(_state(), path)
    data = path.read_bytes()
    if damage == "truncated":
        data = data[: len(data) - 7]
    elif damage == "garbage":
        data = b"this is not a checkpoint at all"
    elif damage == "empty":
        data = b""
    else:
        data = data[:8] + b"X" + data[9:]
    path.write_bytes(data)
    with pytest.raises(RuntimeError, match=r"ember\.load: .*ck\.safetensors.* not a valid"):
        ember.load(path)


def test_missing_file_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        ember.load(tmp_path / "nope.safetensors")
