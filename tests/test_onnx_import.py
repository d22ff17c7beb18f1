"""ONNX import (ember.onnx.load): names and state, fine-tuning, shape subgraphs and constant
folding, control flow, the converter registry, bad input, other devices, and the
`ember onnx run` command. Hand-built graphs are checked against onnx's own
ReferenceEvaluator; ONNX's backend test suite is in test_onnx_backend.py, and every model
the exporter tests write is loaded back in test_onnx_export.py's round trip."""

from __future__ import annotations

import io
import subprocess
import sys

import numpy as np
import pytest

import ember
from ember import nn

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from ember.onnx import OnnxLoadError, UnsupportedOnnxOpError  # noqa: E402

F32 = TensorProto.FLOAT


def _model(nodes, inputs, outputs, initializers=(), opset=17, extra_opsets=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v)
                                                 for d, v in extra_opsets]
    return helper.make_model(graph, opset_imports=opsets, ir_version=10)


def _vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def _export(model, x, **kwargs):
    buf = io.BytesIO()
    ember.onnx.export(model, x, buf, **kwargs)
    return buf.getvalue()


def _mlp():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 3))


# -- parameters, buffers, names --------------------------------------------------------------

def test_initializers_become_parameters_named_as_the_state_dict():
    model = _mlp()
    x = ember.randn(5, 4)
    loaded = ember.onnx.load(_export(model.eval(), x))
    assert isinstance(loaded, nn.Module) and not loaded.training
    assert list(loaded.state_dict()) == list(model.state_dict())
    assert all(p.requires_grad for p in loaded.parameters())
    assert loaded.initializer_names == {k: k for k in model.state_dict()}
    np.testing.assert_allclose(loaded(x).detach().numpy(), model(x).detach().numpy(),
                               rtol=1e-6, atol=1e-6)
    # the state of the original loads into the imported model, and back
    other = _mlp()
    with ember.no_grad():
        for p in other.parameters():
            p.add_(1.0)
    loaded.load_state_dict(other.state_dict())
    np.testing.assert_allclose(loaded(x).detach().numpy(), other(x).detach().numpy(),
                               rtol=1e-6, atol=1e-6)


def test_odd_initializer_names_are_sanitised_and_mapped():
    w = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "dense/W:0")
    clash_a = numpy_helper.from_array(np.ones(3, np.float32), "layer")
    clash_b = numpy_helper.from_array(np.ones(3, np.float32), "layer.bias")
    steps = numpy_helper.from_array(np.array([3, 1], np.int64), "class")
    nodes = [helper.make_node("MatMul", ["x", "dense/W:0"], ["h"]),
             helper.make_node("Add", ["h", "layer"], ["h2"]),
             helper.make_node("Add", ["h2", "layer.bias"], ["h3"]),
             helper.make_node("Reshape", ["h3", "class"], ["y"])]
    proto = _model(nodes, [_vi("x", F32, [1, 2])], [_vi("y", F32, [3, 1])],
                   [w, clash_a, clash_b, steps])
    loaded = ember.onnx.load(proto)
    names = loaded.initializer_names
    assert names["dense/W:0"] == "dense_W_0"
    assert names["class"] == "_class"  # a Python keyword gets a leading underscore
    assert len(set(names.values())) == 4  # "layer" vs "layer.bias": no clash
    assert set(loaded.state_dict()) == set(names.values())
    assert {n for n, _ in loaded.named_parameters()} == {names["dense/W:0"], names["layer"],
                                                         names["layer.bias"]}
    assert [n for n, _ in loaded.named_buffers()] == ["_class"]  # int64: a buffer
    assert loaded._class.dtype == ember.int64 and not loaded._class.requires_grad
    x = np.array([[1.0, 2.0]], np.float32)
    want = ReferenceEvaluator(proto).run(None, {"x": x})[0]
    np.testing.assert_allclose(loaded(ember.from_numpy(x)).detach().numpy(), want)


# -- fine-tuning -----------------------------------------------------------------------------

def test_fine_tune_an_exported_mlp_gradients_match_and_loss_falls():
    model = _mlp()
    ember.manual_seed(1)
    x = ember.randn(32, 4)
    target = ember.randint(0, 3, (32,))
    loaded = ember.onnx.load(_export(model.eval(), x, dynamic_axes={
        "input_0": {0: "batch"}, "output_0": {0: "batch"}}))
    loaded.train()
    loss_fn = nn.CrossEntropyLoss()
    loss_fn(model(x), target).backward()
    loss_fn(loaded(x), target).backward()
    original = dict(model.named_parameters())
    for name, p in loaded.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), original[name].grad.numpy(),
                                   rtol=1e-5, atol=1e-6, err_msg=name)
    opt = ember.optim.Adam(loaded.parameters(), lr=0.05)
    losses = []
    for _ in range(30):
        opt.zero_grad()
        loss = loss_fn(loaded(x), target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0], losses
    # the fine-tuned weights go back into the original architecture
    model.load_state_dict(loaded.state_dict())
    np.testing.assert_allclose(model(x).detach().numpy(), loaded(x).detach().numpy(),
                               rtol=1e-6, atol=1e-6)


# -- shape subgraphs and constant folding ----------------------------------------------------

def _flatten_by_shape_model():
    """y = reshape(x, [shape(x)[0], -1]) * 2, the shape computed in the graph."""
    i64 = TensorProto.INT64
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Constant", [], ["zero"], value=numpy_helper.from_array(
            np.array(0, np.int64))),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
        helper.make_node("Concat", ["n1", "minus_one"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["flat"]),
        # a constant subgraph folded at load: ConstantOfShape(Constant) * 2
        helper.make_node("Constant", [], ["cshape"], value=numpy_helper.from_array(
            np.array([1], np.int64))),
        helper.make_node("ConstantOfShape", ["cshape"], ["two"],
                         value=numpy_helper.from_array(np.array([2.0], np.float32))),
        helper.make_node("Mul", ["flat", "two"], ["y"]),
    ]
    inits = [numpy_helper.from_array(np.array([0], np.int64), "axes"),
             numpy_helper.from_array(np.array([-1], np.int64), "minus_one")]
    del i64
    return _model(nodes, [_vi("x", F32, ["batch", 3, 4])], [_vi("y", F32, ["batch", 12])],
                  inits)


def test_shape_subgraph_with_dynamic_batch_and_constant_folding():
    proto = _flatten_by_shape_model()
    loaded = ember.onnx.load(proto)
    ran = [n.proto.op_type for n in loaded._graph.nodes]
    assert "Constant" not in ran and "ConstantOfShape" not in ran  # folded at load
    assert "Shape" in ran  # depends on the input: runs on every call
    assert set(loaded.state_dict()) == {"axes", "minus_one"}  # folded values: not state
    ref = ReferenceEvaluator(proto)
    for batch in (1, 5):
        x = np.random.default_rng(batch).standard_normal((batch, 3, 4)).astype(np.float32)
        got = loaded(ember.from_numpy(x))
        assert tuple(got.shape) == (batch, 12)
        np.testing.assert_allclose(got.numpy(), ref.run(None, {"x": x})[0])


# -- control flow ----------------------------------------------------------------------------

def test_if_runs_the_branch_the_condition_picks():
    then_g = helper.make_graph([helper.make_node("Mul", ["x", "x"], ["t"])], "then", [],
                               [_vi("t", F32, [3])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                               [_vi("e", F32, [3])])
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
             helper.make_node("Greater", ["s", "zero"], ["c"]),
             helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)]
    proto = _model(nodes, [_vi("x", F32, [3])], [_vi("y", F32, [3])],
                   [numpy_helper.from_array(np.array(0.0, np.float32), "zero")])
    loaded = ember.onnx.load(proto)
    ref = ReferenceEvaluator(proto)
    for x in (np.array([1.0, 2.0, 3.0], np.float32), np.array([-1.0, 0.5, -3.0], np.float32)):
        np.testing.assert_allclose(loaded(ember.from_numpy(x)).numpy(),
                                   ref.run(None, {"x": x})[0])


def test_loop_carries_state_and_stacks_scan_outputs():
    body = helper.make_graph(
        [helper.make_node("Add", ["acc_in", "x"], ["acc_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Mul", ["acc_out", "acc_out"], ["sq"])],
        "body",
        [_vi("i", TensorProto.INT64, []), _vi("cond_in", TensorProto.BOOL, []),
         _vi("acc_in", F32, [2])],
        [_vi("cond_out", TensorProto.BOOL, []), _vi("acc_out", F32, [2]),
         _vi("sq", F32, [2])])
    nodes = [helper.make_node("Loop", ["n", "go", "init"], ["final", "squares"], body=body)]
    proto = _model(nodes, [_vi("x", F32, [2]), _vi("init", F32, [2]),
                           _vi("n", TensorProto.INT64, []), _vi("go", TensorProto.BOOL, [])],
                   [_vi("final", F32, [2]), _vi("squares", F32, [None, 2])])
    feeds = {"x": np.array([1.0, -2.0], np.float32), "init": np.zeros(2, np.float32),
             "n": np.array(4, np.int64), "go": np.array(True)}
    want = ReferenceEvaluator(proto).run(None, feeds)
    loaded = ember.onnx.load(proto)
    got = loaded(**{k: ember.from_numpy(v) for k, v in feeds.items()})
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w)
    assert tuple(got[1].shape) == (4, 2)


# -- the registry ----------------------------------------------------------------------------

def _custom_op_model(opset):
    node = helper.make_node("Twice", ["x"], ["y"], domain="test.ember", name="twice_node")
    return _model([node], [_vi("x", F32, [2])], [_vi("y", F32, [2])],
                  extra_opsets=[("test.ember", opset)])


def test_register_importer_newest_version_at_or_below_the_opset_is_used():
    ember.onnx.register_importer("Twice", lambda ctx, x: x * 2, since_version=1,
                                 domain="test.ember")
    ember.onnx.register_importer("Twice", lambda ctx, x: x * 3, since_version=5,
                                 domain="test.ember")
    try:
        x = ember.tensor([1.0, 2.0])
        assert ember.onnx.load(_custom_op_model(4))(x).tolist() == [2.0, 4.0]
        assert ember.onnx.load(_custom_op_model(5))(x).tolist() == [3.0, 6.0]
        assert ember.onnx.load(_custom_op_model(9))(x).tolist() == [3.0, 6.0]
    finally:
        ember.onnx.unregister_importer("Twice", since_version=1, domain="test.ember")
        ember.onnx.unregister_importer("Twice", since_version=5, domain="test.ember")
    with pytest.raises(UnsupportedOnnxOpError, match="'Twice'"):
        ember.onnx.load(_custom_op_model(4))


class _ConverterPlugin:
    def __init__(self, table):
        self.table = table

    @ember.core.backend.hookimpl
    def ember_onnx_converters(self):
        return self.table


def test_a_plugin_adds_import_and_export_converters_through_one_hook():
    from ember.core.plugins import registry
    from ember.exporters import onnx_registry

    registry.ensure_loaded()
    export_fn = object()
    plugin = _ConverterPlugin({("test.ember", "Twice", 1): lambda ctx, x: x + x,
                               "test_only_export_op": export_fn})
    registry.pm.register(plugin, name="test-onnx-import-plugin")
    try:
        got = ember.onnx.load(_custom_op_model(1))(ember.tensor([2.0, -1.0]))
        assert got.tolist() == [4.0, -2.0]
        assert onnx_registry.converters()["test_only_export_op"] is export_fn
        assert ("test.ember", "Twice", 1) not in onnx_registry.converters()
    finally:
        registry.pm.unregister(plugin)


# -- bad input -------------------------------------------------------------------------------

def test_a_file_that_is_not_onnx(tmp_path):
    path = tmp_path / "notes.onnx"
    path.write_text("these are not the weights you are looking for\n" * 20)
    with pytest.raises(OnnxLoadError, match=r"notes\.onnx is not .*ONNX model"):
        ember.onnx.load(path)
    with pytest.raises(FileNotFoundError, match="no such file"):
        ember.onnx.load(tmp_path / "missing.onnx")


def test_a_truncated_file(tmp_path):
    data = _export(_mlp().eval(), ember.randn(2, 4))
    for cut in (len(data) // 2, len(data) - 7):
        path = tmp_path / "cut.onnx"
        path.write_bytes(data[:cut])
        with pytest.raises(OnnxLoadError, match="truncated"):
            ember.onnx.load(path)


def test_an_op_without_converter_names_op_node_domain_opset_and_the_registry():
    nodes = [helper.make_node("Relu", ["x"], ["h"], name="ok"),
             helper.make_node("Frobnicate", ["h"], ["y"], domain="acme.ops", name="frob_1"),
             helper.make_node("Gelu", ["x"], ["z"], name="gelu_at_17")]
    proto = _model(nodes, [_vi("x", F32, [2])], [_vi("y", F32, [2]), _vi("z", F32, [2])],
                   extra_opsets=[("acme.ops", 3)])
    with pytest.raises(UnsupportedOnnxOpError) as info:
        ember.onnx.load(proto)
    msg = str(info.value)
    assert "2 node(s)" in msg
    assert ("node 'frob_1': op type 'Frobnicate', domain 'acme.ops', opset 3: the registry "
            "has no converter for 'Frobnicate' in domain 'acme.ops' at any opset") in msg
    assert ("node 'gelu_at_17': op type 'Gelu', domain 'ai.onnx', opset 17: the registry has "
            "it from opset 20 on (versions [20]), none at or below 17") in msg
    assert "register_importer" in msg


def test_an_input_with_the_wrong_shape_or_dtype():
    loaded = ember.onnx.load(_export(_mlp().eval(), ember.randn(2, 4),
                                     input_names=["features"]))
    with pytest.raises(ValueError, match=r"input 'features' of the ONNX model must have "
                       r"shape \[2, 4\], got \[2, 5\]"):
        loaded(ember.randn(2, 5))
    with pytest.raises(TypeError, match="input 'features' of the ONNX model must have dtype "
                       "ember.float32, got ember.float64"):
        loaded(ember.randn(2, 4, dtype=ember.float64))
    with pytest.raises(TypeError, match="takes 1 input"):
        loaded(ember.randn(2, 4), ember.randn(2, 4))
    with pytest.raises(TypeError, match="input 'features' of the ONNX model is missing"):
        loaded()
    with pytest.raises(TypeError, match="has no input 'x'"):
        loaded(x=ember.randn(2, 4))


def test_an_opset_newer_than_the_converters_know():
    proto = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", F32, [2])],
                   [_vi("y", F32, [2])], opset=ember.onnx.MAX_IMPORT_OPSET + 1)
    with pytest.raises(OnnxLoadError, match=f"opset {ember.onnx.MAX_IMPORT_OPSET + 1} of the "
                       f"default ONNX domain, newer than ember's importer knows \\(up to "
                       f"{ember.onnx.MAX_IMPORT_OPSET}\\)"):
        ember.onnx.load(proto)


# -- devices ---------------------------------------------------------------------------------

def _opencl_or_skip():
    pytest.importorskip("pyopencl")
    from ember.core import plugins

    reason = plugins.safe_unavailable_reason(plugins.get_backend("opencl"))
    if reason is not None:
        pytest.skip(f"no usable OpenCL device: {reason}")


def test_runs_and_trains_on_opencl():
    _opencl_or_skip()
    ember.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(4 * 4 * 4, 3)).eval()
    x = ember.randn(2, 1, 8, 8)
    data = _export(model, x, dynamic_axes={"input_0": {0: "b"}, "output_0": {0: "b"}})
    want = model(x).detach().numpy()
    on_load = ember.onnx.load(data, device="opencl")
    moved = ember.onnx.load(data).to("opencl")
    for loaded in (on_load, moved):
        assert {str(p.device) for p in loaded.parameters()} == {"opencl:0"}
        y = loaded(x.to("opencl"))
        assert str(y.device) == "opencl:0"
        np.testing.assert_allclose(y.cpu().detach().numpy(), want, rtol=1e-4, atol=1e-5)
    # gradients flow on the device too
    moved.train()
    loss = moved(x.to("opencl")).square().mean()
    loss.backward()
    assert all(str(p.grad.device) == "opencl:0" for p in moved.parameters())


# -- the command -----------------------------------------------------------------------------

def _ember(*args, cwd):
    return subprocess.run([sys.executable, "-m", "ember.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_cli_onnx_run_with_check(tmp_path):
    model = _mlp().eval()
    ember.onnx.export(model, ember.randn(2, 4), str(tmp_path / "mlp.onnx"),
                      input_names=["x"], output_names=["y"])
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    res = _ember("onnx", "run", "mlp.onnx", "--input", "x=x.npy", "--check", "--save", "out",
                 cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "y: float32[2, 3]" in res.stdout
    assert "largest difference" in res.stdout and "(ok:" in res.stdout
    saved = np.load(tmp_path / "out" / "y.npy")
    np.testing.assert_allclose(saved, model(ember.from_numpy(x)).detach().numpy(),
                               rtol=1e-6, atol=1e-6)


def test_cli_onnx_run_errors(tmp_path, monkeypatch, capsys):
    from ember.cli import main

    ember.onnx.export(_mlp().eval(), ember.randn(2, 4), str(tmp_path / "mlp.onnx"),
                      input_names=["x"])
    np.save(tmp_path / "wide.npy", np.zeros((2, 5), np.float32))
    (tmp_path / "junk.onnx").write_bytes(b"\x00\x01 not a model")
    cases = [
        (["mlp.onnx"], "missing --input for x (float[2, 4])"),
        (["mlp.onnx", "--input", "x=wide.npy"], "must have shape [2, 4], got [2, 5]"),
        (["mlp.onnx", "--input", "x=nothere.npy"], "cannot read 'nothere.npy'"),
        (["mlp.onnx", "--input", "z=wide.npy"], "the model has no input 'z'"),
        (["mlp.onnx", "--input", "x"], "expected NAME=FILE.npy"),
        (["junk.onnx"], "junk.onnx is not an ONNX model"),
    ]
    monkeypatch.chdir(tmp_path)
    for args, message in cases:  # in-process: the same entry point, without a start-up
        assert main(["onnx", "run", *args]) == 1, args
        err = capsys.readouterr().err
        assert message in err, (args, err)


# -- a model PyTorch exported --------------------------------------------------------------

def test_a_pytorch_exported_model_matches_pytorch_outputs_and_gradients():
    """Conv, BatchNorm, MaxPool, a bidirectional LSTM, Gemm and LogSoftmax, with the batch
    dynamic (shape subgraphs: Shape, Gather, Concat, Reshape), as torch.onnx exports them;
    values and gradients against PyTorch's own."""
    torch = pytest.importorskip("torch")
    import warnings

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(1, 4, 3, padding=1)
            self.bn = torch.nn.BatchNorm2d(4)
            self.lstm = torch.nn.LSTM(8, 6, batch_first=True, bidirectional=True)
            self.fc = torch.nn.Linear(16 * 12, 3)

        def forward(self, x):
            h = torch.nn.functional.max_pool2d(torch.relu(self.bn(self.conv(x))), 2)
            out, _ = self.lstm(h.reshape(h.size(0), 16, 8))
            return torch.log_softmax(self.fc(out.reshape(out.size(0), -1)), dim=1)

    torch.manual_seed(0)
    net = Net().eval()
    with torch.no_grad():  # running statistics that are not the identity
        net.bn.running_mean.uniform_(-0.5, 0.5)
        net.bn.running_var.uniform_(0.5, 2.0)
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, (torch.randn(2, 1, 8, 16),), buf, dynamo=False,
                          input_names=["x"], output_names=["y"], opset_version=17,
                          dynamic_axes={"x": {0: "b"}, "y": {0: "b"}},
                          do_constant_folding=False)
    loaded = ember.onnx.load(buf.getvalue())
    ops = {n.proto.op_type for n in loaded._graph.nodes}
    assert {"LSTM", "Shape", "Gather", "Concat", "Reshape"} <= ops
    for batch in (2, 5):
        x = torch.randn(batch, 1, 8, 16)
        net.zero_grad()
        want = net(x)
        (want ** 2).sum().backward()
        got = loaded(ember.from_numpy(x.numpy()))
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(),
                                   rtol=1e-5, atol=1e-5)
        loaded.zero_grad()
        (got ** 2).sum().backward()
        ours = dict(loaded.named_parameters())  # (ONNX has no buffers: BatchNorm's
        for name, p in net.named_parameters():  # running stats are parameters here)
            np.testing.assert_allclose(ours[name].grad.numpy(), p.grad.numpy(),
                                       rtol=1e-4, atol=1e-5, err_msg=name)


# -- types ember holds in wider ones ---------------------------------------------------------

def _float_grid(ml_dtype):
    """Every finite value of a narrow float format, sorted."""
    bits = np.arange(256, dtype=np.uint8)
    if np.dtype(ml_dtype).itemsize == 1 and "float4" not in np.dtype(ml_dtype).name:
        values = bits.view(ml_dtype).astype(np.float32)
    else:  # float4: 16 codes, from its own conversion
        values = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6], np.float32)
        values = np.concatenate([values, -values])
    return np.unique(values[np.isfinite(values)])


@pytest.mark.parametrize("name", ["FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2",
                                  "FLOAT8E5M2FNUZ", "FLOAT4E2M1"])
def test_casts_to_narrow_floats_round_as_onnx_reference(name):
    """Ties, subnormals, overflow, inf, NaN and -0, against ml_dtypes (what onnx's reference
    casts with), saturating as onnx.numpy_helper.saturate_cast and not."""
    ml = pytest.importorskip("ml_dtypes")
    from ember.exporters.onnx_import_cast import round_to_float

    elem = getattr(TensorProto, name)
    dtype = helper.tensor_dtype_to_np_dtype(elem)
    grid = _float_grid(dtype)
    largest = float(ml.finfo(dtype).max)
    rng = np.random.default_rng(0)
    x = np.concatenate([
        grid, (grid[:-1] + grid[1:]) / 2,  # every value and every tie between two
        (rng.standard_normal(2000) * np.exp2(rng.integers(-12, 12, 2000))),
        [largest * 1.02, largest * 1.2, -largest * 3, np.inf, -np.inf, np.nan, -0.0, 1e-30],
    ]).astype(np.float32)
    t = ember.from_numpy(x)
    with np.errstate(invalid="ignore", over="ignore"):
        saturated = np.clip(x, -largest, largest).astype(dtype).astype(np.float32)
        plain = x.astype(dtype).astype(np.float32)
    for saturate, want in ((True, saturated), (False, plain)):
        got = round_to_float(t, elem, saturate).numpy()
        np.testing.assert_array_equal(got, want, err_msg=f"{name} saturate={saturate}")
        assert (np.signbit(got) == np.signbit(want))[~np.isnan(want)].all()


@pytest.mark.parametrize("name", ["INT4", "UINT4", "INT2", "UINT2"])
def test_casts_to_narrow_ints_truncate_and_wrap_as_onnx_reference(name):
    from ember.exporters.onnx_import_cast import wrap_to_int
    from ember.exporters.onnx_import_context import ember_dtype

    elem = getattr(TensorProto, name)
    dtype = helper.tensor_dtype_to_np_dtype(elem)
    floats = np.random.default_rng(1).uniform(-40, 40, 500).astype(np.float32)
    ints = np.arange(-70, 70, dtype=np.int32)
    for x in (floats, ints):
        want = x.astype(dtype).astype(np.int32)
        got = wrap_to_int(ember.from_numpy(x), elem, ember_dtype(elem)).numpy()
        np.testing.assert_array_equal(got.astype(np.int32), want)


@pytest.mark.parametrize("mode", ["up", "down", "nearest"])
def test_casts_to_e8m0_round_as_onnx_reference(mode):
    from onnx.numpy_helper import to_float8e8m0

    from ember.exporters.onnx_import_cast import round_to_e8m0

    rng = np.random.default_rng(2)
    powers = np.exp2(np.arange(-149, 128, dtype=np.float64)).astype(np.float32)
    x = np.concatenate([
        powers, powers * 1.5, powers * 1.25, powers * 1.75, -powers * 1.3,  # ties and signs
        rng.standard_normal(1000).astype(np.float32) * np.exp2(rng.integers(-140, 127, 1000)),
        [0.0, -0.0, np.inf, -np.inf, np.nan, 3.4e38, 1.7e38],
    ]).astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        for saturate in (True, False):
            want = to_float8e8m0(x, saturate, mode).astype(np.float32)
            got = round_to_e8m0(ember.from_numpy(x), saturate, mode).numpy()
            np.testing.assert_array_equal(got, want, err_msg=f"{mode} saturate={saturate}")
