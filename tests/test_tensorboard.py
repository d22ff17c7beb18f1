"""`ember.utils.tensorboard.SummaryWriter`, read back with TensorBoard's own reader.

Every test writes event files under tmp_path and reads them with
`tensorboard.backend.event_processing.event_accumulator.EventAccumulator`, the class
TensorBoard's server loads runs with. Skipped without tensorboardX (the writer's
dependency) or tensorboard (the reader).
"""

from __future__ import annotations

import math
import os
import re
import socket
import struct
import subprocess
import sys
import threading
import zlib
from datetime import datetime

import numpy as np
import pytest

pytest.importorskip("tensorboardX")
ea = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")

import ember  # noqa: E402
from ember.utils.tensorboard import SummaryWriter  # noqa: E402
from ember.utils.tensorboard import writer as writer_module  # noqa: E402

KEEP_ALL = {ea.SCALARS: 0, ea.IMAGES: 0, ea.HISTOGRAMS: 0, ea.TENSORS: 0,
            ea.COMPRESSED_HISTOGRAMS: 0}


def read(path) -> ea.EventAccumulator:
    acc = ea.EventAccumulator(str(path), size_guidance=KEEP_ALL)
    acc.Reload()
    return acc


def scalars(path, tag: str) -> list[tuple[int, float]]:
    return [(e.step, e.value) for e in read(path).Scalars(tag)]


def event_files(path) -> list[str]:
    return sorted(f for f in os.listdir(path) if ".tfevents." in f)


def decode_png(data: bytes) -> np.ndarray:
    """A PNG as an HWC uint8 array (with Pillow when it is there: an independent decoder)."""
    try:
        import io

        from PIL import Image
        return np.asarray(Image.open(io.BytesIO(data)))
    except ImportError:
        pass
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    while pos < len(data):
        (n,), kind = struct.unpack(">I", data[pos:pos + 4]), data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + n]
        assert struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])[0] == zlib.crc32(kind + body)
        if kind == b"IHDR":
            width, height, _, color_type = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    channels = {2: 3, 6: 4}[color_type]
    rows = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(height, 1 + width * channels)
    assert (rows[:, 0] == 0).all()
    return rows[:, 1:].reshape(height, width, channels)


# -- import cost ------------------------------------------------------------------------------

def test_import_ember_and_the_package_load_no_tensorboard_or_protobuf():
    code = ("import sys, ember; from ember.utils.tensorboard import SummaryWriter; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & "
            "{'tensorboardX', 'tensorboard', 'google', 'torch'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_missing_tensorboardx_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboardX", None)  # `import tensorboardX` fails
    with pytest.raises(ImportError, match=re.escape("pip install 'ember[tensorboard]'")):
        SummaryWriter(tmp_path / "run")
    assert not (tmp_path / "run").exists()


# -- scalars ----------------------------------------------------------------------------------

def test_scalars_round_trip_from_numbers_arrays_and_tensors(tmp_path):
    w = ember.tensor([2.0, 3.0], requires_grad=True)
    loss = (w * w).sum()  # 0-d, requires grad: logged as PyTorch logs it
    values = [0.5, 2, np.float32(1.25), np.array([7.0]), loss, ember.tensor([[4.5]]),
              ember.tensor(3, dtype=ember.int64), ember.tensor(True)]
    with SummaryWriter(tmp_path) as writer:
        for step, value in enumerate(values):
            writer.add_scalar("train/loss", value, step * 10)
        writer.add_scalar("at", 1.0, ember.tensor(5), walltime=1234.5)
    assert scalars(tmp_path, "train/loss") == [
        (0, 0.5), (10, 2.0), (20, 1.25), (30, 7.0), (40, 13.0), (50, 4.5), (60, 3.0), (70, 1.0)]
    event = read(tmp_path).Scalars("at")[0]
    assert (event.step, event.wall_time) == (5, 1234.5)


def test_new_style_scalars_are_tensors_of_the_scalars_plugin(tmp_path):
    from tensorboard.util import tensor_util

    with SummaryWriter(tmp_path) as writer:
        writer.add_scalar("f32", 1 / 3, 1, new_style=True)
        writer.add_scalar("f64", 1 / 3, 1, new_style=True, double_precision=True)
    acc = read(tmp_path)
    f32 = tensor_util.make_ndarray(acc.Tensors("f32")[0].tensor_proto)
    f64 = tensor_util.make_ndarray(acc.Tensors("f64")[0].tensor_proto)
    assert f32.dtype == np.float32 and f32 == np.float32(1 / 3)
    assert f64.dtype == np.float64 and f64 == 1 / 3
    assert acc.SummaryMetadata("f32").plugin_data.plugin_name == "scalars"


def test_add_scalars_writes_a_sub_run_per_tag(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        for step in range(3):
            writer.add_scalars("loss/all", {"train": step, "test": ember.tensor(2.0 * step)},
                               step)
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == \
        ["loss_all_test", "loss_all_train"]
    assert scalars(tmp_path / "loss_all_train", "loss/all") == [(0, 0), (1, 1), (2, 2)]
    assert scalars(tmp_path / "loss_all_test", "loss/all") == [(0, 0), (1, 2), (2, 4)]
    assert read(tmp_path).Tags()["scalars"] == []  # nothing in the main run


# -- histograms -------------------------------------------------------------------------------

@pytest.mark.parametrize("bins", ["tensorflow", "auto", 7])
def test_histogram_counts_every_value(tmp_path, bins):
    values = ember.randn(1000, generator=ember.Generator().manual_seed(0))
    with SummaryWriter(tmp_path) as writer:
        writer.add_histogram("w", values, 3, bins=bins)
    h = read(tmp_path).Histograms("w")[0]
    assert h.step == 3
    proto = h.histogram_value
    data = values.numpy().astype(np.float64)
    assert proto.num == 1000 and sum(proto.bucket) == 1000
    assert proto.min == pytest.approx(data.min()) and proto.max == pytest.approx(data.max())
    assert proto.sum == pytest.approx(data.sum()) and \
        proto.sum_squares == pytest.approx((data * data).sum())
    assert list(proto.bucket_limit) == sorted(proto.bucket_limit)


def test_histogram_from_numpy_lists_and_max_bins(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        writer.add_histogram("np", np.arange(10, dtype=np.int32), 0)
        writer.add_histogram("list", [[1.0, 2.0], [2.0, 9.0]], 0)
        writer.add_histogram("few", np.linspace(0, 1, 500), 0, bins=100, max_bins=10)
    acc = read(tmp_path)
    assert sum(acc.Histograms("np")[0].histogram_value.bucket) == 10
    assert acc.Histograms("list")[0].histogram_value.max == 9.0
    few = acc.Histograms("few")[0].histogram_value
    assert sum(few.bucket) == 500 and len(few.bucket) <= 11  # 10, and an empty one on the left


def _opencl() -> bool:
    try:
        return any(d.type == "opencl" for d in ember.devices())
    except Exception:  # a broken plugin: treated as absent
        return False


def test_histogram_and_scalar_from_an_opencl_tensor(tmp_path):
    pytest.importorskip("pyopencl")
    if not _opencl():
        pytest.skip("no usable OpenCL device")
    values = ember.arange(100, dtype=ember.float32, device="opencl") / 10
    loss = values.mean()
    with SummaryWriter(tmp_path) as writer:
        writer.add_histogram("cl", values, 0)
        writer.add_scalar("cl_loss", loss, 0)
    proto = read(tmp_path).Histograms("cl")[0].histogram_value
    assert proto.num == 100 and sum(proto.bucket) == 100 and proto.max == pytest.approx(9.9)
    assert scalars(tmp_path, "cl_loss") == [(0, pytest.approx(4.95))]


# -- images and text --------------------------------------------------------------------------

def test_images_from_chw_hwc_hw_nchw_float_and_uint8(tmp_path):
    rng = np.random.default_rng(0)
    chw = rng.random((3, 5, 7), dtype=np.float32)
    hwc8 = rng.integers(0, 256, (5, 7, 4), dtype=np.uint8)
    batch = rng.random((10, 1, 4, 6), dtype=np.float32)
    with SummaryWriter(tmp_path) as writer:
        writer.add_image("chw", ember.tensor(chw), 1)
        writer.add_image("hwc8", ember.from_numpy(hwc8), 2, dataformats="HWC")
        writer.add_image("hw", np.full((5, 7), 2.0), 3, dataformats="HW")  # clipped to 255
        writer.add_images("nchw", ember.tensor(batch), 4)
        writer.add_images("nhwc", ember.tensor(batch.transpose(0, 2, 3, 1)), 4,
                          dataformats="NHWC")
    acc = read(tmp_path)
    chw_event = acc.Images("chw")[0]
    assert (chw_event.step, chw_event.width, chw_event.height) == (1, 7, 5)
    expected = (chw.transpose(1, 2, 0) * 255).clip(0, 255).astype(np.uint8)
    np.testing.assert_array_equal(decode_png(chw_event.encoded_image_string), expected)
    np.testing.assert_array_equal(decode_png(acc.Images("hwc8")[0].encoded_image_string), hwc8)
    assert (decode_png(acc.Images("hw")[0].encoded_image_string) == 255).all()
    # 10 images of 4x6, 8 to a row: a 2x8 grid, grey shown as RGB; the last six cells empty
    grid = decode_png(acc.Images("nchw")[0].encoded_image_string)
    assert grid.shape == (8, 48, 3)
    cell = (batch[9, 0] * 255).astype(np.uint8)
    np.testing.assert_array_equal(grid[4:8, 6:12, 1], cell)
    assert (grid[4:8, 12:] == 0).all()
    np.testing.assert_array_equal(decode_png(acc.Images("nhwc")[0].encoded_image_string), grid)


def test_text_round_trips(tmp_path):
    from tensorboard.util import tensor_util

    with SummaryWriter(tmp_path) as writer:
        writer.add_text("notes", "ember **logs** — ünïcode", 7)
    acc = read(tmp_path)
    event = acc.Tensors("notes/text_summary")[0]
    assert event.step == 7
    assert tensor_util.make_ndarray(event.tensor_proto)[0].decode() == "ember **logs** — ünïcode"
    assert acc.SummaryMetadata("notes/text_summary").plugin_data.plugin_name == "text"


# -- hparams ----------------------------------------------------------------------------------

def test_hparams_go_to_a_sub_run_with_the_plugin_data_and_metrics(tmp_path):
    from tensorboard.plugins.hparams import plugin_data_pb2

    with SummaryWriter(tmp_path) as writer:
        writer.add_hparams({"lr": 0.1, "bsize": 32, "opt": "adam", "nesterov": True,
                            "skipped": None, "wd": ember.tensor(0.5)},
                           {"hparam/accuracy": 0.9, "hparam/loss": ember.tensor(0.25)},
                           hparam_domain_discrete={"opt": ["adam", "sgd"]},
                           run_name="trial1", global_step=3)
    run = tmp_path / "trial1"
    content = read(run).PluginTagToContent("hparams")
    assert set(content) == {"_hparams_/experiment", "_hparams_/session_start_info",
                            "_hparams_/session_end_info"}
    start = plugin_data_pb2.HParamsPluginData.FromString(
        content["_hparams_/session_start_info"]).session_start_info
    assert start.hparams["lr"].number_value == 0.1
    assert start.hparams["bsize"].number_value == 32
    assert start.hparams["opt"].string_value == "adam"
    assert start.hparams["nesterov"].bool_value is True
    assert start.hparams["wd"].number_value == 0.5
    assert "skipped" not in start.hparams
    experiment = plugin_data_pb2.HParamsPluginData.FromString(
        content["_hparams_/experiment"]).experiment
    infos = {h.name: h for h in experiment.hparam_infos}
    assert [v.string_value for v in infos["opt"].domain_discrete.values] == ["adam", "sgd"]
    assert {m.name.tag for m in experiment.metric_infos} == {"hparam/accuracy", "hparam/loss"}
    assert scalars(run, "hparam/accuracy") == [(3, pytest.approx(0.9))]
    assert scalars(run, "hparam/loss") == [(3, 0.25)]


@pytest.mark.parametrize("args, error", [
    (([("lr", 0.1)], {}), TypeError),
    (({"lr": 0.1}, {}, {"lr": [0.1, "x"]}), TypeError),
    (({"lr": 0.1}, {}, {"missing": [1]}), TypeError),
    (({"f": object()}, {}), ValueError),
    (({"lr": 0.1}, {"m": ember.ones(2)}), ValueError),
])
def test_bad_hparams_raise_and_create_no_sub_run(tmp_path, args, error):
    with SummaryWriter(tmp_path) as writer:
        with pytest.raises(error):
            writer.add_hparams(*args, run_name="trial")
    assert not (tmp_path / "trial").exists()


# -- graph ------------------------------------------------------------------------------------

def test_graph_has_the_models_ops_grouped_by_module(tmp_path):
    pytest.importorskip("onnx")
    from ember.demo import DigitsCNN

    model = DigitsCNN()
    with SummaryWriter(tmp_path) as writer:
        writer.add_graph(model, ember.randn(2, 1, 8, 8))
    assert model.training  # traced in eval mode, then restored, as in PyTorch
    nodes = {n.name: n for n in read(tmp_path).Graph().node}
    ops = [n.op for n in nodes.values()]
    assert ops.count("Conv") == 2 and ops.count("Gemm") == 2 and ops.count("Relu") == 3
    assert {"MaxPool", "Flatten", "IO Node", "Parameter"} <= set(ops)
    for node in nodes.values():  # every edge starts at a node of the graph
        assert all(i.split(":")[0] in nodes for i in node.input), node
    # nested by module path, like PyTorch's graphs: features.0 -> features/0
    conv = nodes["features/0/Conv_1"]
    assert conv.input == ["input/input_0", "features/0/weight", "features/0/bias"]
    assert [d.size for d in conv.attr["_output_shapes"].list.shape[0].dim] == [2, 16, 8, 8]
    assert nodes["output/output_0"].input == ["classifier/4/Gemm_9"]


def test_add_graph_needs_an_input_and_add_onnx_graph_reads_a_file(tmp_path):
    pytest.importorskip("onnx")
    model = ember.nn.Sequential(ember.nn.Linear(4, 3), ember.nn.Tanh())
    path = tmp_path / "m.onnx"
    ember.onnx.export(model, ember.randn(1, 4), str(path))
    with SummaryWriter(tmp_path / "run") as writer:
        with pytest.raises(ValueError, match="input_to_model"):
            writer.add_graph(model)
        writer.add_onnx_graph(path)
    ops = [n.op for n in read(tmp_path / "run").Graph().node]
    assert "Gemm" in ops and "Tanh" in ops and ops.count("Parameter") == 2


# -- the writer's life ------------------------------------------------------------------------

def test_default_log_dir_is_pytorchs(tmp_path, monkeypatch):
    class FrozenClock(datetime):
        @classmethod
        def now(cls, tz=None):
            return datetime(2024, 5, 4, 22, 14, 54)

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(writer_module, "datetime", FrozenClock)
    writer = SummaryWriter(comment="LR_0.1_BATCH_16")
    writer.close()
    expected = os.path.join("runs", f"May04_22-14-54_{socket.gethostname()}LR_0.1_BATCH_16")
    assert writer.get_logdir() == expected
    assert len(event_files(tmp_path / expected)) == 1


def test_flush_writes_everything_added_and_close_stops_the_thread(tmp_path):
    writer = SummaryWriter(tmp_path, flush_secs=10_000)
    for step in range(25):  # more than max_queue
        writer.add_scalar("x", step, step)
    writer.flush()
    assert len(scalars(tmp_path, "x")) == 25
    threads = {t for t in threading.enumerate() if t.name.startswith("ember-tensorboard")}
    assert threads
    writer.close()
    assert writer.all_writers is None and not any(t.is_alive() for t in threads)
    writer.close()  # twice is fine


def test_context_manager_closes_and_a_later_add_opens_a_new_file(tmp_path):
    with SummaryWriter(tmp_path, filename_suffix=".ember") as writer:
        writer.add_scalar("x", 1.0, 0)
    assert writer.file_writer is None
    assert len(event_files(tmp_path)) == 1 and event_files(tmp_path)[0].endswith(".ember")
    writer.add_scalar("x", 2.0, 1)  # as in PyTorch: reopens, in a new file
    writer.close()
    assert len(event_files(tmp_path)) == 2
    assert scalars(tmp_path, "x") == [(0, 1.0), (1, 2.0)]


def test_purge_step_hides_the_steps_a_crashed_run_logged_after_it(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        for step in range(10):
            writer.add_scalar("x", 1.0, step)
    with SummaryWriter(tmp_path, purge_step=5) as writer:
        for step in range(5, 8):
            writer.add_scalar("x", 2.0, step)
    assert scalars(tmp_path, "x") == [(s, 1.0) for s in range(5)] + \
        [(s, 2.0) for s in range(5, 8)]


# -- bad input: a clear error, and nothing written --------------------------------------------

def test_log_dir_under_a_file_raises_naming_it_and_creates_nothing(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(NotADirectoryError, match=re.escape(str(blocker / "a" / "b"))):
        SummaryWriter(blocker / "a" / "b")
    with pytest.raises(NotADirectoryError, match="is a file"):
        SummaryWriter(blocker)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_read_only_log_dir_raises_naming_it(tmp_path):
    read_only = tmp_path / "ro"
    read_only.mkdir()
    read_only.chmod(0o555)
    try:
        if os.access(read_only, os.W_OK):
            pytest.skip("permission bits do not bind this user (root)")
        target = read_only / "run"
        with pytest.raises(PermissionError, match=re.escape(str(target))):
            SummaryWriter(target)
        assert not target.exists()
    finally:
        read_only.chmod(0o755)


@pytest.mark.parametrize("value, error, message", [
    (ember.ones(3), ValueError, "only one element tensors can be converted to Python scalars"),
    (np.zeros((2, 2)), ValueError, "only one element tensors"),
    ("1.5", TypeError, "got str"),
    (np.array(["1.5"]), TypeError, "must hold numbers"),
    ({"a": 1}, TypeError, "got dict"),
])
def test_add_scalar_rejects_what_is_not_a_scalar(tmp_path, value, error, message):
    with SummaryWriter(tmp_path) as writer:
        writer.add_scalar("ok", 1.0, 0)
        with pytest.raises(error, match=message):
            writer.add_scalar("bad", value, 1)
        with pytest.raises(ValueError):
            writer.add_scalar("ok", 1.0, "not a step")
    acc = read(tmp_path)
    assert acc.Tags()["scalars"] == ["ok"] and len(acc.Scalars("ok")) == 1


@pytest.mark.parametrize("shape, dataformats, message", [
    ((3, 4, 4), "XYZ", "unknown dataformats"),
    ((3, 4, 4), "CHWN", "4 dimensions but the image has shape"),
    ((3, 4, 4), "CCH", "unknown dataformats"),
    ((2, 4, 4), "CHW", "1 \\(grey\\), 3 \\(RGB\\) or 4"),
    ((0, 4, 4), "HWC", "empty"),
])
def test_bad_dataformats_raise_and_write_nothing(tmp_path, shape, dataformats, message):
    with SummaryWriter(tmp_path) as writer:
        with pytest.raises(ValueError, match=message):
            writer.add_image("img", ember.zeros(*shape), 0, dataformats=dataformats)
    assert read(tmp_path).Tags()["images"] == []


def test_empty_histogram_raises(tmp_path):
    with SummaryWriter(tmp_path) as writer, pytest.raises(ValueError, match="empty"):
        writer.add_histogram("h", ember.zeros(0), 0)


# -- ember demo --tensorboard -----------------------------------------------------------------

def test_demo_logs_loss_accuracy_and_learning_rate(tmp_path):
    from ember import cli, demo

    args = cli.build_parser().parse_args(["demo", "--tensorboard", str(tmp_path / "tb")])
    assert args.tensorboard == str(tmp_path / "tb")
    result = demo.run(device="cpu", epochs=2, batch_size=256, progress=False,
                      checkpoint=str(tmp_path / "ck.pt"), tensorboard=args.tensorboard)
    acc = read(tmp_path / "tb")
    steps = math.ceil(result["train_samples"] / 256)
    loss = acc.Scalars("train/loss")
    assert [e.step for e in loss] == list(range(2 * steps))
    assert all(math.isfinite(e.value) and e.value > 0 for e in loss)
    assert all(0 <= e.value <= 1 for e in acc.Scalars("train/accuracy"))
    lrs = [e.value for e in acc.Scalars("train/lr")]  # cosine over 2 epochs: 2e-3, then 1e-3
    assert lrs == pytest.approx([2e-3] * steps + [1e-3] * steps)
    test_accuracy = acc.Scalars("test/accuracy")
    assert [e.step for e in test_accuracy] == [steps, 2 * steps]
    assert test_accuracy[-1].value == pytest.approx(result["accuracy"])


def test_embedding_files_are_pytorchs(tmp_path):
    # the TensorBoard tutorial's add_embedding: the projector's files, byte for byte as
    # PyTorch's writer makes them (tensors, labels, sprite and config)
    torch = pytest.importorskip("torch")
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    rng = np.random.default_rng(0)
    images = rng.random((10, 1, 6, 6)).astype(np.float32)
    labels = [f"class {i % 3}" for i in range(10)]
    for lib, cls in ((torch, TorchWriter), (ember, SummaryWriter)):
        with cls(str(tmp_path / lib.__name__)) as w:
            x = lib.tensor(images)
            w.add_embedding(x.view(-1, 36), metadata=labels, label_img=x)
            w.add_embedding(x[:4, 0, 0], metadata=[[1, "a"], [2, "b"], [3, "c"], [4, "d"]],
                            metadata_header=["n", "letter"], global_step=3, tag="a/b")
            with pytest.raises(AssertionError, match="#labels should equal with #data"):
                w.add_embedding(x.view(-1, 36), metadata=labels[:3])
    for sub in ("projector_config.pbtxt", "00000/default/tensors.tsv",
                "00000/default/metadata.tsv", "00000/default/sprite.png",
                "00003/a%2fb/tensors.tsv", "00003/a%2fb/metadata.tsv"):
        want = (tmp_path / "torch" / sub).read_bytes()
        got = (tmp_path / "ember" / sub).read_bytes()
        if sub.endswith(".png"):  # the same pixels (PIL filters its rows: other bytes)
            image = pytest.importorskip("PIL.Image")
            pixels = [np.asarray(image.open(tmp_path / who / sub)) for who in ("torch", "ember")]
            assert pixels[0].shape == pixels[1].shape == (24, 24, 3)
            assert (pixels[0] == pixels[1]).all()
        else:
            assert got == want, sub


def test_pr_curve_is_the_pr_curves_plugins_tensor(tmp_path):
    torch = pytest.importorskip("torch")
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    rng = np.random.default_rng(1)
    labels, probs = rng.random(50) > 0.5, rng.random(50).astype(np.float32)
    curves = []
    for lib, cls in ((torch, TorchWriter), (ember, SummaryWriter)):
        with cls(str(tmp_path / lib.__name__)) as w:
            w.add_pr_curve("Coat", lib.tensor(labels), lib.tensor(probs), global_step=2)
        acc = read(tmp_path / lib.__name__)
        (event,) = acc.Tensors("Coat")
        meta = acc.SummaryMetadata("Coat")
        curves.append((event.step, meta.plugin_data.plugin_name, meta.plugin_data.content,
                       tuple(d.size for d in event.tensor_proto.tensor_shape.dim),
                       list(event.tensor_proto.float_val)))
    assert curves[0] == curves[1]
    assert curves[1][1] == "pr_curves" and curves[1][3] == (6, 127)
