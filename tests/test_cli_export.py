"""`ember export`: the command end to end (in subprocesses, as a user runs it), and each
bad input (one-line error, non-zero exit, no file written)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ember
from ember import cli
from ember.exporters import onnx_registry

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

MODELS = Path(__file__).parent / "onnx_models"
CNN = f"{MODELS / 'small_cnn.py'}:SmallCNN"


def _command() -> list[str]:
    script = Path(sys.executable).parent / "ember"
    return [str(script)] if script.exists() else [sys.executable, "-m", "ember.cli"]


def ember_export(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, EMBER_PLUGIN_AUTOLOAD="0")
    env.pop("EMBER_TRACEBACK", None)
    return subprocess.run(_command() + ["export", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120, env=env)


def _dims(info) -> list:
    return [d.dim_param or d.dim_value for d in info.type.tensor_type.shape.dim]


def test_file_spec_with_check_and_dynamic_batch(tmp_path):
    result = ember_export(CNN, "-o", "cnn.onnx", "--input-shape", "2,1,8,8", "--check",
                          "--dynamic-batch", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "wrote cnn.onnx" in out and "opset 17, IR version 8" in out
    assert "input   input_0: float32[batch, 1, 8, 8]" in out
    assert "output  output_0: float32[batch, 10]" in out
    assert "onnx.checker (full_check) passed" in out
    assert "at batch 2" in out and "at batch 4" in out  # traced size and another one
    model = onnx.load(str(tmp_path / "cnn.onnx"))
    assert _dims(model.graph.input[0]) == ["batch", 1, 8, 8]
    assert {n.op_type for n in model.graph.node} >= {"Conv", "BatchNormalization", "Gemm"}
    assert sorted(os.listdir(tmp_path)) == ["cnn.onnx"]


def test_module_spec_with_demo_checkpoint(tmp_path):
    """`ember demo --checkpoint` writes {"model": state_dict, ...}; export loads it."""
    from ember.demo import DigitsCNN

    ember.manual_seed(3)
    trained = DigitsCNN().eval()
    ember.save({"model": trained.state_dict(), "epoch": 1}, str(tmp_path / "ckpt.ember"))
    result = ember_export("ember.demo:DigitsCNN", "-o", "digits.onnx", "--input-shape",
                          "1,1,8,8", "--checkpoint", "ckpt.ember", "--opset", "18", "--check",
                          cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "opset 18" in result.stdout and "float32[1, 10]" in result.stdout
    session = ort.InferenceSession(str(tmp_path / "digits.onnx"),
                                   providers=["CPUExecutionProvider"])
    x = ember.randn(1, 1, 8, 8)
    with ember.no_grad():
        want = trained(x).numpy()
    np.testing.assert_allclose(session.run(None, {"input_0": x.numpy()})[0], want,
                               rtol=1e-4, atol=1e-5)  # the checkpoint's weights, not fresh ones


def test_factory_spec_and_plain_state_dict_checkpoint(tmp_path):
    sys.path.insert(0, str(MODELS))
    try:
        import small_cnn
    finally:
        sys.path.remove(str(MODELS))
    model = small_cnn.make_model()
    ember.save(model.state_dict(), str(tmp_path / "w.ember"))
    code = cli.main(["export", f"{MODELS / 'small_cnn.py'}:make_model", "-o",
                     str(tmp_path / "mlp.onnx"), "--input-shape", "3,6", "--checkpoint",
                     str(tmp_path / "w.ember"), "--check"])
    assert code == 0
    proto = onnx.load(str(tmp_path / "mlp.onnx"))
    weight = next(t for t in proto.graph.initializer if t.name == "0.weight")
    np.testing.assert_array_equal(onnx.numpy_helper.to_array(weight),
                                  model[0].weight.detach().numpy())


def test_integer_input_model(capsys, tmp_path):
    out = tmp_path / "text.onnx"
    code = cli.main(["export", f"{MODELS / 'text.py'}:TextClassifier", "-o", str(out),
                     "--input-shape", "2,7", "--input-dtype", "int64", "--dynamic-batch",
                     "--check"])
    printed = capsys.readouterr().out
    assert code == 0
    assert "input   input_0: int64[batch, 7]" in printed
    assert "output  output_0: float32[batch, 3]" in printed
    assert "at batch 2" in printed and "at batch 4" in printed
    assert "LSTM" in {n.op_type for n in onnx.load(str(out)).graph.node}


def _fails(capsys, args, tmp_path, code=None, match=""):
    out_file = tmp_path / "out.onnx"
    status = cli.main(["export", *args, "-o", str(out_file)])
    err = capsys.readouterr().err
    assert status != 0
    if code is not None:
        assert status == code
    lines = err.strip().splitlines()
    assert len(lines) == 1, err  # one line, no traceback
    assert lines[0].startswith("ember export: error: ")
    assert match in lines[0], lines[0]
    assert not out_file.exists() and not [p for p in os.listdir(tmp_path) if
                                          p.startswith(".")]  # no staging leftovers
    return lines[0]


@pytest.mark.parametrize("spec, match", [
    ("no_colon_here", "must be path/to/file.py:name or package.module:name"),
    ("missing/model.py:Net", "no such file: missing/model.py"),
    (f"{MODELS / 'small_cnn.py'}:Nope", "has no attribute 'Nope'"),
    (f"{MODELS / 'small_cnn.py'}:NOT_A_MODEL", "is of type int, not an nn.Module class"),
    (f"{MODELS / 'small_cnn.py'}:make_not_a_model", "returned a str, not an ember.nn.Module"),
    ("no_such_package_xyz.models:Net", "cannot import module 'no_such_package_xyz.models'"),
    ("ember.demo:", "must be path/to/file.py:name"),
])
def test_bad_spec(spec, match, capsys, tmp_path):
    _fails(capsys, [spec, "--input-shape", "1,6"], tmp_path, code=2, match=match)


@pytest.mark.parametrize("shape, match", [
    ("", "give comma-separated positive sizes"),
    ("1,,3", "give comma-separated positive sizes"),
    ("1,a,3", "'a' is not an integer"),
    ("2.5,3", "'2.5' is not an integer"),
    ("1,-3", "sizes must be positive integers, got -3"),
    ("0,3", "sizes must be positive integers, got 0"),
])
def test_bad_shape(shape, match, capsys, tmp_path):
    _fails(capsys, [CNN, "--input-shape", shape], tmp_path, code=2, match=match)


def test_bad_dtype_and_opset(capsys, tmp_path):
    _fails(capsys, [CNN, "--input-shape", "1,1,8,8", "--input-dtype", "float99"], tmp_path,
           code=2, match="'float99' is not an ember dtype")
    _fails(capsys, [CNN, "--input-shape", "1,1,8,8", "--opset", "9"], tmp_path, code=2,
           match="--opset 9 is not supported")


def test_shape_the_model_cannot_take(capsys, tmp_path):
    _fails(capsys, [CNN, "--input-shape", "1,3,8,8"], tmp_path, code=1,
           match="running SmallCNN on an input of shape [1, 3, 8, 8] failed")


def test_mismatched_checkpoint(capsys, tmp_path):
    ember.save({"model": {"features.0.weight": ember.zeros(4, 1, 3, 3), "extra.bias":
                          ember.zeros(2)}}, str(tmp_path / "bad.ember"))
    line = _fails(capsys, [CNN, "--input-shape", "1,1,8,8", "--checkpoint",
                           str(tmp_path / "bad.ember")], tmp_path, code=1,
                  match="does not match SmallCNN: missing keys: features.0.bias, ")
    assert "unexpected keys: extra.bias" in line
    _fails(capsys, [CNN, "--input-shape", "1,1,8,8", "--checkpoint",
                    str(tmp_path / "nowhere.ember")], tmp_path, code=1,
           match="--checkpoint: no such file")


def test_unsupported_op_in_a_subprocess(tmp_path):
    result = ember_export(f"{MODELS / 'custom_op.py'}:Model", "-o", "custom.onnx",
                          "--input-shape", "2,4", cwd=tmp_path)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("ember export: error: Exporting the operator 'cli_test_cube' "
                               "to ONNX is not supported (called in blocks.0.act)")
    assert os.listdir(tmp_path) == []


def test_bad_spec_in_a_subprocess(tmp_path):
    result = ember_export("nowhere.py:Net", "-o", "x.onnx", "--input-shape", "1,2",
                          cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == "ember export: error: SPEC: no such file: nowhere.py"
    assert "Traceback" not in result.stderr and os.listdir(tmp_path) == []


def test_failed_check_writes_nothing(capsys, tmp_path, monkeypatch):
    """A converter that gets the numbers wrong is caught by --check."""
    def wrong_tanh(ctx, node):
        return ctx.op("Sigmoid", ctx.name(node.args[0]))

    monkeypatch.setitem(onnx_registry._EXPORT_USER, "Tanh", wrong_tanh)
    _fails(capsys, [f"{MODELS / 'small_cnn.py'}:make_model", "--input-shape", "4,6",
                    "--check"], tmp_path, code=1,
           match="check failed: onnxruntime's output_0 differs from ember's by up to ")


def test_failed_check_keeps_an_existing_output_and_its_data(capsys, tmp_path, monkeypatch):
    out, data = tmp_path / "model.onnx", tmp_path / "model.onnx.data"
    out.write_bytes(b"the previous export")
    data.write_bytes(b"its external weights")
    monkeypatch.setitem(onnx_registry._EXPORT_USER, "Tanh",
                        lambda ctx, node: ctx.op("Sigmoid", ctx.name(node.args[0])))
    status = cli.main(["export", f"{MODELS / 'small_cnn.py'}:make_model", "--input-shape",
                       "4,6", "--check", "-o", str(out)])
    err = capsys.readouterr().err
    assert status == 1 and "was not written (an existing file is left as it was)" in err
    assert out.read_bytes() == b"the previous export"
    assert data.read_bytes() == b"its external weights"
    assert sorted(os.listdir(tmp_path)) == ["model.onnx", "model.onnx.data"]
    # a passing export then replaces both: its weights are inside the model
    monkeypatch.delitem(onnx_registry._EXPORT_USER, "Tanh")
    assert cli.main(["export", f"{MODELS / 'small_cnn.py'}:make_model", "--input-shape",
                     "4,6", "--check", "-o", str(out)]) == 0
    assert os.listdir(tmp_path) == ["model.onnx"]
    assert onnx.load(str(out)).graph.node
    old = os.umask(0o022)
    os.umask(old)
    assert out.stat().st_mode & 0o777 == 0o666 & ~old  # created as open() would
