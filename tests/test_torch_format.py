"""ember.save writes PyTorch's checkpoint format: real `torch.load` reads ember's files,
and for the same object the file is byte for byte what `torch.save` (2.13) writes."""

import collections
import io
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
          "float32", "float64", "complex64", "complex128"]


def _both(tmp_path: Path, make, name: str = "ck.pt") -> tuple[Path, Path]:
    """`make(ember)` saved by ember and `make(torch)` by torch, under the same file name
    (the archive's folder is named after it)."""
    ours, theirs = tmp_path / "ours" / name, tmp_path / "theirs" / name
    ours.parent.mkdir(exist_ok=True)
    theirs.parent.mkdir(exist_ok=True)
    ember.save(make(ember), ours)
    torch.save(make(torch), theirs)
    return ours, theirs


def _layout(path: Path) -> list[tuple]:
    return [(i.filename, i.header_offset, i.file_size, i.CRC, i.flag_bits)
            for i in zipfile.ZipFile(path).infolist()]


def _to_ember(sd: dict) -> collections.OrderedDict:
    return collections.OrderedDict(
        (k, ember.from_numpy(v.detach().numpy().copy())) for k, v in sd.items())


def test_state_dict_file_is_torch_saves_byte_for_byte(tmp_path):
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4),
                              torch.nn.Linear(4, 2))
    state = net.state_dict()
    mine = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.BatchNorm1d(4),
                               ember.nn.Linear(4, 2))
    mine.load_state_dict(_to_ember(state))
    ours, theirs = _both(tmp_path, lambda m: state if m is torch else mine.state_dict(),
                         "model.v1.pth")
    assert _layout(ours) == _layout(theirs)
    assert zipfile.ZipFile(ours).namelist()[0] == "model.v1/data.pkl"  # torch's folder rule
    archive = zipfile.ZipFile(ours)
    assert archive.read("model.v1/data.pkl") == zipfile.ZipFile(theirs).read("model.v1/data.pkl")
    assert ours.read_bytes() == theirs.read_bytes()  # serialization id and all
    back = torch.load(ours, weights_only=True)
    assert list(back) == list(state)
    for key, value in state.items():
        assert back[key].dtype == value.dtype and torch.equal(back[key], value)


@pytest.mark.parametrize("name", DTYPES)
def test_every_dtype_reads_back_in_torch(tmp_path, name):
    def make(m):
        x = m.arange(-3, 3).reshape(2, 3).to(getattr(m, name))
        return {"x": x, "dtype": getattr(m, name), "zero_d": x[1, 2], "empty": x[:0]}

    ours, theirs = _both(tmp_path, make)
    assert ours.read_bytes() == theirs.read_bytes()
    back, expected = torch.load(ours, weights_only=True), make(torch)
    assert back["dtype"] is expected["dtype"]
    for key in ("x", "zero_d", "empty"):
        assert back[key].dtype == expected[key].dtype and back[key].shape == expected[key].shape
        assert torch.equal(back[key], expected[key])


def test_views_share_one_storage_in_torch(tmp_path):
    def make(m):
        base = m.arange(24.0).reshape(4, 6)
        return {"base": base, "row": base[1], "t": base.t(), "col": base[:, 2],
                "step": base[::2, 1::3], "expanded": m.ones(3, 1).expand(3, 4),
                "dense_t": m.ones(2, 3).t(), "scalar": m.tensor(2.5), "none": m.zeros(0, 3),
                "nhwc": m.arange(18.0).reshape(1, 2, 3, 3).to(memory_format=m.channels_last)}

    ours, theirs = _both(tmp_path, make)
    assert ours.read_bytes() == theirs.read_bytes()
    back = torch.load(ours, weights_only=True)
    for key, value in make(torch).items():
        assert back[key].stride() == value.stride() and torch.equal(back[key], value), key
    back["base"][1, 2] = -1.0  # one storage, as in torch: every view sees the write
    assert back["row"][2] == -1 and back["t"][2, 1] == -1 and back["col"][1] == -1
    assert len([n for n in zipfile.ZipFile(ours).namelist() if "/data/" in n]) == 6


def test_optimizer_state_and_nested_containers_read_back_in_torch(tmp_path):
    ember.manual_seed(0)
    net = ember.nn.Linear(3, 2)
    opt = ember.optim.Adam(net.parameters(), lr=0.1)
    net(ember.ones(4, 3)).sum().backward()
    opt.step()
    obj = {"optimizer": opt.state_dict(), "model": net.state_dict(),
           "extra": [(1, 2.5, "s", None, True), {3: ember.device("cpu")}],
           "size": ember.Size([2, 3]), "ordered": collections.OrderedDict(a=ember.ones(1))}
    path = tmp_path / "opt.pt"
    ember.save(obj, path)
    back = torch.load(path, weights_only=True)
    state = back["optimizer"]["state"]
    assert sorted(state) == [0, 1] and set(state[0]) == {"step", "exp_avg", "exp_avg_sq"}
    np.testing.assert_allclose(state[0]["exp_avg"].numpy(),
                               opt.state_dict()["state"][0]["exp_avg"].numpy())
    assert back["optimizer"]["param_groups"][0]["lr"] == 0.1
    assert back["optimizer"]["param_groups"][0]["params"] == [0, 1]
    assert torch.equal(back["model"]["weight"], torch.from_numpy(net.weight.detach().numpy()))
    assert back["extra"] == [(1, 2.5, "s", None, True), {3: torch.device("cpu")}]
    assert back["size"] == torch.Size([2, 3]) and type(back["size"]) is torch.Size
    assert type(back["ordered"]) is collections.OrderedDict


def test_parameters_and_requires_grad_as_torch_pickles_them(tmp_path):
    def make(m):
        w = m.nn.Parameter(m.ones(2, 2))
        frozen = m.nn.Parameter(m.zeros(2), requires_grad=False)
        tagged, scaled = m.ones(2), m.nn.Parameter(m.ones(1))
        tagged.note, scaled.lr_scale = "kept", 0.5  # attributes travel as the tensor's state
        return {"w": w, "again": w, "frozen": frozen, "leaf": m.ones(3, requires_grad=True),
                "tagged": tagged, "scaled": scaled}

    ours, theirs = _both(tmp_path, make)
    assert ours.read_bytes() == theirs.read_bytes()
    back = torch.load(ours, weights_only=True)
    assert isinstance(back["w"], torch.nn.Parameter) and back["again"] is back["w"]
    assert not back["frozen"].requires_grad and back["leaf"].requires_grad
    assert back["tagged"].note == "kept" and back["scaled"].lr_scale == 0.5
    again = ember.load(ours)
    assert again["tagged"].note == "kept" and again["scaled"].lr_scale == 0.5
    assert isinstance(again["scaled"], ember.nn.Parameter)


def test_file_objects_archive_names_and_format_switches_match_torch(tmp_path):
    def state(m):
        return {"w": m.arange(4.0)}

    for name in ("plain", "two.dots.ckpt", "caf\u00e9.pt"):  # non-ASCII: torch says "archive"
        ours, theirs = _both(tmp_path, state, name)
        assert ours.read_bytes() == theirs.read_bytes(), name
    ours, theirs = io.BytesIO(), io.BytesIO()
    ember.save(state(ember), ours, _disable_byteorder_record=True)
    torch.save(state(torch), theirs, _disable_byteorder_record=True)
    assert ours.getvalue() == theirs.getvalue()
    assert zipfile.ZipFile(ours).namelist()[-2:] == ["archive/byteorder",
                                                     "archive/.data/serialization_id"]
    for save in (ember.save, torch.save):  # a name with no stem names no archive folder
        with pytest.raises(RuntimeError, match="invalid file name"):
            save({}, tmp_path / ".pt")
    assert not (tmp_path / ".pt").exists()


def test_sparse_and_device_tensors_read_back_in_torch(tmp_path):
    ours, theirs = _both(tmp_path, lambda m: {"s": m.sparse_coo_tensor(
        [[0, 2], [1, 0]], [1.0, 2.0], (3, 2), is_coalesced=True)})
    assert ours.read_bytes() == theirs.read_bytes()
    sparse = ember.sparse_coo_tensor([[0, 2], [1, 0]], [1.0, 2.0], (3, 2))
    path = tmp_path / "s.pt"
    ember.save({"adj": sparse, "dev": ember.arange(3.0, device="countdev"),
                "dev2": ember.ones(1, device="countdev")}, path)
    # a device's location string is made anew for each storage, as torch's "cuda:0" is:
    # written twice, where the CPU's "cpu" is written once and then referred to
    data = zipfile.ZipFile(path).read("s/data.pkl")
    assert data.count(b"countdev:0") == 2 and data.count(b"cpu") == 1
    back = torch.load(path, weights_only=True, map_location="cpu")
    assert back["adj"].layout == torch.sparse_coo
    assert back["adj"].to_dense().tolist() == sparse.to_dense().tolist()
    assert back["dev"].tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(RuntimeError, match="countdev:0"):  # torch knows no such device
        torch.load(path, weights_only=True)
    again = ember.load(path)  # ember puts it back where it was
    assert again["dev"].device == ember.device("countdev:0")
    assert again["adj"].to_dense().tolist() == sparse.to_dense().tolist()


def test_torch_file_through_ember_and_back_is_the_same_file(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    state = model.state_dict()
    state["tied"] = state["weight"]
    state["rows"] = state["weight"][1:]
    state["half"] = torch.ones(2, dtype=torch.float16)
    first, second = tmp_path / "a" / "ck.pt", tmp_path / "b" / "ck.pt"
    first.parent.mkdir()
    second.parent.mkdir()
    torch.save(state, first)
    loaded = ember.load(first)
    ember.save(loaded, second)
    assert second.read_bytes() == first.read_bytes()
    back = torch.load(second, weights_only=True)
    assert back["tied"] is back["weight"]
    back["weight"][1, 0] = 9.0
    assert back["rows"][0, 0] == 9.0  # still one storage


def test_whole_module_pickles_its_ember_classes_and_loads_with_weights_only_false(tmp_path):
    ember.manual_seed(0)
    net = ember.nn.Sequential(ember.nn.Conv2d(1, 2, 3), ember.nn.ReLU(), ember.nn.Flatten())
    path = tmp_path / "net.pt"
    ember.save(net, path)
    with pytest.raises(pickle.UnpicklingError, match=r"ember\.nn\.modules\.container\.Sequential"):
        ember.load(path)
    back = ember.load(path, weights_only=False)
    assert type(back) is ember.nn.Sequential and type(back[0]) is ember.nn.Conv2d
    x = ember.randn(1, 1, 5, 5)
    np.testing.assert_array_equal(back(x).detach().numpy(), net(x).detach().numpy())
    # tensors inside are storage records, which torch's own reader sees as such
    names = zipfile.ZipFile(path).namelist()
    assert names[:4] == ["net/data.pkl", "net/.format_version", "net/.storage_alignment",
                         "net/byteorder"]
    assert "net/data/0" in names and "net/data/1" in names


def test_records_are_64_byte_aligned_and_mmap_loads(tmp_path):
    path = tmp_path / "big.pt"
    ember.save({"a": ember.arange(1000.0), "b": ember.ones(7, dtype=ember.int8)}, path)
    raw = path.read_bytes()
    for info in zipfile.ZipFile(path).infolist():
        name_len, extra_len = int.from_bytes(raw[info.header_offset + 26:][:2], "little"), \
            int.from_bytes(raw[info.header_offset + 28:][:2], "little")
        assert (info.header_offset + 30 + name_len + extra_len) % 64 == 0, info.filename
    back = ember.load(path, mmap=True)
    assert back["a"][999].item() == 999.0 and back["b"].tolist() == [1] * 7
    theirs = torch.load(path, mmap=True, weights_only=True)  # torch maps aligned records
    assert theirs["a"][999].item() == 999.0 and theirs["b"].tolist() == [1] * 7


def test_old_safetensors_checkpoints_still_load():
    """A file the safetensors-based ember.save wrote (tests/data), with views, a
    parameter state dict, NumPy data, dtypes, devices and a pickled set."""
    path = Path(__file__).parent / "data" / "ember_safetensors_checkpoint.safetensors"
    back = ember.load(path)
    assert list(back["model"]) == ["weight", "bias"]
    assert tuple(back["model"]["weight"].shape) == (2, 3)
    assert back["rows"][0].tolist() == [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0],
                                        [8.0, 9.0, 10.0, 11.0]]
    back["rows"][0][1, 0] = -1.0
    assert back["rows"][1][0].item() == -1.0  # the view still shares its storage
    assert back["ids"].tolist() == [1, 2, 3] and back["mask"].tolist() == [True, False]
    assert back["np"].dtype == np.int16 and back["np"].tolist() == [0, 1, 2, 3]
    assert back["dtype"] is ember.float16 and back["device"] == ember.device("cpu")
    assert back["opt"] == collections.OrderedDict(a=(1, "x", None)) and back["set"] == {1, 2}
    assert (back["step"], back["lr"]) == (7, 0.5)


def test_legacy_layout_when_asked_for_reads_back_in_torch(tmp_path):
    def make(m):
        base = m.arange(6.0)
        return {"base": base, "tail": base[2:], "ids": m.tensor([1, 2]), "empty": m.ones(0)}

    ours, theirs = _both(tmp_path, make)  # zip files, to compare the legacy ones with
    ember.save(make(ember), ours, _use_new_zipfile_serialization=False)
    torch.save(make(torch), theirs, _use_new_zipfile_serialization=False)
    assert not zipfile.is_zipfile(ours)
    # magic number, protocol version, system info and the pickle up to the first storage
    # key, which torch takes from a memory address (so the files differ from there)
    def head(path):
        return path.read_bytes().split(b"ctorch\nFloatStorage\n")[0]

    assert head(ours) == head(theirs) and len(head(ours)) > 200
    back = torch.load(ours, weights_only=True)
    for key, value in make(torch).items():
        assert torch.equal(back[key], value), key
    back["base"][3] = -1.0
    assert back["tail"][1] == -1.0  # one storage
    again = ember.load(ours)
    assert again["tail"].tolist() == [2.0, 3.0, 4.0, 5.0] and again["ids"].dtype == ember.int64


def _quantized(m):
    """Per-tensor and per-channel quantized tensors (and a quantized dtype) built from
    the same integers in `m` (ember or torch)."""
    ints = np.arange(-6, 6, dtype=np.int8).reshape(3, 4)
    scales = m.tensor([0.5, 0.25, 0.125, 2.0], dtype=m.float64)
    zero_points = m.tensor([0, 1, -1, 3])
    return {"pt": m._make_per_tensor_quantized_tensor(m.from_numpy(ints), 0.1, 2),
            "pt_u8": m._make_per_tensor_quantized_tensor(
                m.from_numpy(ints.astype(np.uint8) + 6), 0.3, 128),
            "pt_i32": m._make_per_tensor_quantized_tensor(
                m.from_numpy(ints.astype(np.int32) * 1000), 1e-4, 0),
            "pc": m._make_per_channel_quantized_tensor(m.from_numpy(ints), scales,
                                                       zero_points, 1),
            "dtype": m.quint8}


def test_quantized_tensors_pickle_as_torch_saves_them(tmp_path):
    import warnings

    with warnings.catch_warnings():  # torch's deprecation notice for quantized tensors
        warnings.simplefilter("ignore", UserWarning)
        ours, theirs = _both(tmp_path, _quantized)
        assert (zipfile.ZipFile(ours).read("ck/data.pkl")
                == zipfile.ZipFile(theirs).read("ck/data.pkl"))
        assert ours.read_bytes() == theirs.read_bytes()
        expected = _quantized(torch)
        back = torch.load(ours, weights_only=True)
        for key in ("pt", "pt_u8", "pt_i32", "pc"):
            assert back[key].dtype == expected[key].dtype and torch.equal(back[key],
                                                                          expected[key])
        assert back["pc"].q_per_channel_axis() == 1 and back["dtype"] is torch.quint8
        # torch's file read by ember is the same quantized tensors, and saved again by
        # ember, the same file
        loaded = ember.load(theirs)
        mine = _quantized(ember)
        for key in ("pt", "pt_u8", "pt_i32", "pc"):
            assert loaded[key].dtype == mine[key].dtype
            assert loaded[key].qscheme() is mine[key].qscheme()
            np.testing.assert_array_equal(loaded[key].int_repr().numpy(),
                                          mine[key].int_repr().numpy())
            np.testing.assert_array_equal(loaded[key].dequantize().numpy(),
                                          expected[key].dequantize().numpy())
        assert loaded["pt"].q_scale() == 0.1 and loaded["pt_u8"].q_zero_point() == 128
        assert loaded["pc"].q_per_channel_scales().dtype == ember.float64
        assert loaded["pc"].q_per_channel_zero_points().tolist() == [0, 1, -1, 3]
        again = tmp_path / "again" / "ck.pt"
        again.parent.mkdir()
        ember.save(loaded, again)
        assert again.read_bytes() == theirs.read_bytes()


def test_damaged_quantizer_in_a_torch_file_is_a_clear_error(tmp_path):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        qt = torch.quantize_per_channel(torch.ones(2, 3), torch.tensor([0.1, 0.2]),
                                        torch.tensor([0, 0]), 0, torch.qint8)
        torch.save({"w": qt}, tmp_path / "q.pt")
    data = zipfile.ZipFile(tmp_path / "q.pt").read("q/data.pkl")
    # axis 0 -> axis 5: torch's own loader refuses it as out of range, and so does ember
    damaged = data.replace(b"K\x00t", b"K\x05t")
    assert damaged != data
    archive = tmp_path / "bad.pt"
    with zipfile.ZipFile(tmp_path / "q.pt") as src, zipfile.ZipFile(archive, "w") as dst:
        for info in src.infolist():
            dst.writestr(info.filename.replace("q/", "bad/"),
                         damaged if info.filename == "q/data.pkl" else src.read(info))
    with pytest.raises(RuntimeError, match=r"per_channel axis 5 out of range for size \(2, 3\)"):
        ember.load(archive)
