"""ember.load reads PyTorch checkpoints (torch.save, zip and legacy layouts) with
weights_only=True semantics: written here by the installed PyTorch, read by ember,
compared value by value. Hostile files are refused and run nothing."""

import io
import os
import pickle
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

LAYOUTS = ["zip", "legacy"]


def _save(obj, path, layout):
    torch.save(obj, path, _use_new_zipfile_serialization=layout == "zip")
    return path


def _assert_matches(theirs, ours):
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, ember.Tensor)
        assert str(ours.dtype).replace("ember.", "") == str(theirs.dtype).replace("torch.", "")
        assert tuple(ours.shape) == tuple(theirs.shape)
        assert ours.requires_grad == theirs.requires_grad
        assert isinstance(ours, ember.nn.Parameter) == isinstance(theirs, torch.nn.Parameter)
        np.testing.assert_array_equal(ours.detach().float().numpy(),
                                      theirs.detach().float().numpy())
    elif isinstance(theirs, dict):
        assert type(ours) is type(theirs) and list(ours) == list(theirs)
        for k in theirs:
            _assert_matches(theirs[k], ours[k])
    elif isinstance(theirs, (list, tuple)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs)
        for a, b in zip(theirs, ours):
            _assert_matches(a, b)
    else:
        assert ours == theirs


class _Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.bn = torch.nn.BatchNorm2d(4)
        self.lstm = torch.nn.LSTM(4, 5, batch_first=True)
        self.attn = torch.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
        self.head = torch.nn.Linear(5, 2)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_state_dicts_of_real_models_and_optimizers(tmp_path, layout):
    torch.manual_seed(0)
    net = _Net()
    opt = torch.optim.AdamW(net.parameters(), lr=3e-4)
    for p in net.parameters():
        p.grad = torch.randn_like(p)
    opt.step()
    sgd = torch.optim.SGD(net.head.parameters(), lr=0.1, momentum=0.9)
    net.head.weight.grad = torch.ones_like(net.head.weight)
    sgd.step()
    checkpoint = {"model": net.state_dict(), "adamw": opt.state_dict(),
                  "sgd": sgd.state_dict(), "epoch": 3, "loss": 0.25, "tag": "best"}
    loaded = ember.load(_save(checkpoint, tmp_path / "ck.pt", layout))
    _assert_matches(checkpoint, loaded)
    # the loaded state dict drives an ember model with the same layout
    model = ember.nn.Linear(5, 2)
    model.load_state_dict({k[len("head."):]: v for k, v in loaded["model"].items()
                           if k.startswith("head.")})
    x = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    np.testing.assert_allclose(model(ember.tensor(x)).detach().numpy(),
                               net.head(torch.tensor(x)).detach().numpy(), rtol=1e-6)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16", "int64",
                                   "int32", "int16", "int8", "uint8", "bool"])
def test_every_dtype(tmp_path, layout, dtype):
    t = (torch.arange(-3, 9).reshape(3, 4) * 1.5).to(getattr(torch, dtype))
    scalar = torch.tensor(7).to(getattr(torch, dtype))
    loaded = ember.load(_save({"t": t, "s": scalar, "e": t[:0]}, tmp_path / "d.pt", layout))
    _assert_matches({"t": t, "s": scalar, "e": t[:0]}, loaded)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("protocol", [4, 5])
def test_newer_pickle_protocols(tmp_path, layout, protocol):
    path = tmp_path / "p.pt"
    torch.save({"w": torch.arange(4)}, path, pickle_protocol=protocol,
               _use_new_zipfile_serialization=layout == "zip")
    assert ember.load(path)["w"].tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_views_share_memory_and_strides_survive(tmp_path, layout):
    base = torch.arange(24.0)
    views = {"base": base, "slice": base[2:8], "t": base.view(4, 6).t(),
             "step": base[1::3], "expand": base[:4].view(4, 1).expand(4, 3),
             "param": torch.nn.Parameter(torch.ones(3)), "frozen": torch.ones(2).requires_grad_()}
    loaded = ember.load(_save(views, tmp_path / "v.pt", layout))
    _assert_matches(views, loaded)
    arrays = {k: v.detach().numpy() for k, v in loaded.items()}
    for key in ("slice", "t", "step", "expand"):
        assert np.shares_memory(arrays[key], arrays["base"]), key
    loaded["base"][3] = -1.0  # a write through one is seen by the others
    assert loaded["slice"][1].item() == -1.0 and loaded["t"][3, 0].item() == -1.0


def test_map_location(tmp_path):
    path = _save({"w": torch.ones(2)}, tmp_path / "m.pt", "zip")
    seen = []
    ember.load(path, map_location=lambda t, saved: seen.append(saved) or t)
    assert seen == ["cpu"]
    assert ember.load(path, map_location="cpu")["w"].device.type == "cpu"
    # the same file as if saved on a GPU ember cannot use here
    gpu = tmp_path / "gpu.pt"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(gpu, "w") as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename.endswith("data.pkl"):
                data = data.replace(b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:7")
            dst.writestr(info, data)
    with pytest.raises(RuntimeError, match=r"(?s)saved on 'cuda:7'.*map_location='cpu'"):
        ember.load(gpu)
    assert ember.load(gpu, map_location="cpu")["w"].tolist() == [1.0, 1.0]
    assert ember.load(gpu, map_location={"cuda:7": "cpu"})["w"].device.type == "cpu"


def test_mmap_and_file_objects(tmp_path):
    path = _save({"w": torch.arange(10.0)}, tmp_path / "m.pt", "zip")
    assert ember.load(path, mmap=True)["w"].tolist() == list(map(float, range(10)))
    buffer = io.BytesIO()
    torch.save({"w": torch.arange(3)}, buffer)
    buffer.seek(0)
    assert ember.load(buffer)["w"].tolist() == [0, 1, 2]


class _Hostile:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


class _Subprocess:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (subprocess.call, (["touch", str(self.marker)],))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("payload, named", [(_Hostile, "GLOBAL posix.system whose module "
                                                       "posix is blocked"),
                                            (_Subprocess, "GLOBAL subprocess.call was not "
                                                          "an allowed global")])
def test_hostile_pickles_are_refused_and_nothing_runs(tmp_path, layout, payload, named):
    marker = tmp_path / "pwned"
    path = _save({"w": torch.ones(1), "x": payload(marker)}, tmp_path / "evil.pt", layout)
    with pytest.raises(pickle.UnpicklingError) as info:
        ember.load(path)
    assert named in str(info.value) and "evil.pt" in str(info.value)
    assert not marker.exists()


def test_whole_torch_module_is_refused_like_torch_does(tmp_path):
    path = _save(torch.nn.Linear(2, 2), tmp_path / "net.pt", "zip")
    with pytest.raises(pickle.UnpicklingError) as ours:
        ember.load(path)
    with pytest.raises(pickle.UnpicklingError) as theirs:
        torch.load(path)
    assert type(ours.value) is type(theirs.value)
    for text in ("Weights only load failed", "`weights_only` set to `False` will likely "
                 "succeed", "GLOBAL torch.nn.modules.linear.Linear was not an allowed global"):
        assert text in str(ours.value) and text in str(theirs.value)


def test_unsupported_dtype_is_named(tmp_path):
    path = _save({"c": torch.ones(2, dtype=torch.uint16)}, tmp_path / "c.pt", "zip")
    with pytest.raises(RuntimeError, match=r"c\.pt.*torch\.uint16.*no dtype"):
        ember.load(path)


@pytest.mark.parametrize("fmt", ["zip", "legacy"])
def test_complex_tensors_load(tmp_path, fmt):
    w = torch.randn(2, 3, dtype=torch.complex128)
    path = _save({"w": w, "c": torch.ones(2, dtype=torch.cfloat)}, tmp_path / "c.pt", fmt)
    back = ember.load(path)
    assert back["w"].dtype is ember.complex128 and back["c"].dtype is ember.complex64
    np.testing.assert_array_equal(back["w"].numpy(), w.numpy())


def _damage(path, how):
    data = path.read_bytes()
    if how == "truncated":
        return data[: len(data) // 2]
    if how == "flipped_storage":  # a byte of tensor data: the zip CRC catches it
        at = data.index(b"\x00\x00\x80?")
        return data[:at] + b"\x01" + data[at + 1:]
    return data[:-3]  # legacy: the last storage is short


@pytest.mark.parametrize("layout, how", [("zip", "truncated"), ("zip", "flipped_storage"),
                                         ("legacy", "truncated"), ("legacy", "short")])
def test_damaged_torch_files_give_a_clear_error(tmp_path, layout, how):
    path = _save({"w": torch.ones(64), "b": torch.zeros(3)}, tmp_path / "ck.pt", layout)
    path.write_bytes(_damage(path, how))
    with pytest.raises(RuntimeError, match=r"ember\.load: .*ck\.pt.*(corrupted|truncated)"):
        ember.load(path)


def test_torchscript_archive_is_named(tmp_path):
    path = tmp_path / "scripted.pt"
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), str(path))
    with pytest.raises(RuntimeError, match=r"scripted\.pt.*TorchScript archive"):
        ember.load(path)


_PEAK = textwrap.dedent("""
    import sys
    import ember
    import ember.nn  # what loading imports is not what it allocates
    def status(field):  # kB
        for line in open("/proc/self/status"):
            if line.startswith(field):
                return int(line.split()[1])
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets the peak (VmHWM) to the current RSS
    before = status("VmRSS:")
    loaded = ember.load(sys.argv[1])
    print((status("VmHWM:") - before) * 1024)
""")


def _peak_bytes(path):
    if not os.access("/proc/self/clear_refs", os.W_OK):
        pytest.skip("needs Linux's /proc/self/clear_refs to measure peak memory")
    out = subprocess.run([sys.executable, "-c", _PEAK, str(path)], capture_output=True,
                         text=True, check=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    return int(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("fmt", ["torch", "ember"])
def test_loading_peaks_near_the_file_size(tmp_path, fmt):
    """Tensors sharing one 40 MB storage load as views of one buffer: the load peaks near
    40 MB, not a copy per tensor (a 400 MB checkpoint once peaked at 1.5 GB)."""
    size = 40 << 20
    if fmt == "torch":
        base = torch.zeros(size // 4)
        path = tmp_path / "big.pt"
        torch.save({"base": base, "head": base[: size // 8], "tail": base[size // 8:],
                    "matrix": base.view(1024, -1)}, path)
    else:
        path = tmp_path / "big.ckpt"
        ember.save({"a": ember.zeros(size // 8), "b": ember.ones(size // 8)}, path)
    assert _peak_bytes(path) < 1.5 * size
