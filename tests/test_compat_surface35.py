"""PyTorch names and arguments that real programs use, against PyTorch: the layers at
`torch.nn.modules`, `consume_prefix_in_state_dict_if_present`, and `torch.onnx.export`'s
TorchScript-exporter arguments (`dynamo=False`, `training=`, `keep_initializers_as_inputs`,
old opsets, `is_in_onnx_export`)."""

from __future__ import annotations

import warnings
from collections import OrderedDict

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def test_layers_at_nn_modules_path():
    import torch.nn.modules as theirs

    import ember.nn.modules as ours

    names = ["LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell", "RNNBase", "RNNCellBase",
             "MultiheadAttention", "Transformer", "TransformerEncoder", "TransformerDecoder",
             "TransformerEncoderLayer", "TransformerDecoderLayer", "ChannelShuffle",
             "AdaptiveLogSoftmaxWithLoss", "Container"]
    for name in names:
        assert hasattr(theirs, name)
        assert getattr(ours, name) is getattr(ember.nn, name), name
    assert not (set(n for n in dir(theirs) if n[0].isupper()) - set(dir(ours)))


def _wrapped_state_dict(nn):
    inner = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))

    class Wrapper(nn.Module):  # what DistributedDataParallel's state_dict looks like
        def __init__(self):
            super().__init__()
            self.module = inner
    return inner, Wrapper().state_dict()


def test_consume_prefix_in_state_dict_if_present():
    results = []
    for nn, utils in ((torch.nn, torch.nn.modules.utils), (ember.nn, ember.nn.modules.utils)):
        inner, state = _wrapped_state_dict(nn)
        state["other.x"] = state["module.0.bias"]  # no prefix: kept as it is
        utils.consume_prefix_in_state_dict_if_present(state, "module.")
        results.append((list(state.keys()), dict(state._metadata)))
        del state["other.x"]
        inner.load_state_dict(state)
    assert results[0] == results[1]
    plain = OrderedDict(a=1, b=2)  # no _metadata, no prefix: unchanged
    ember.nn.modules.utils.consume_prefix_in_state_dict_if_present(plain, "module.")
    assert list(plain) == ["a", "b"]


onnx = pytest.importorskip("onnx")


class _ExportAware(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = ember.nn.Linear(4, 3)
        self.seen = []

    def forward(self, x):
        self.seen.append(ember.onnx.is_in_onnx_export())
        return self.linear(x) * 2 if ember.onnx.is_in_onnx_export() else self.linear(x)


def test_is_in_onnx_export_only_while_tracing(tmp_path):
    model = _ExportAware()
    assert not ember.onnx.is_in_onnx_export()
    proto = ember.onnx.export(model, (ember.randn(2, 4),), str(tmp_path / "m.onnx"),
                              dynamo=False)
    assert model.seen and all(model.seen)
    assert not ember.onnx.is_in_onnx_export()
    assert "Mul" in [n.op_type for n in proto.graph.node]


def test_torchscript_exporter_arguments(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    model = ember.nn.Sequential(ember.nn.Linear(4, 3), ember.nn.Dropout(0.5))
    path = str(tmp_path / "m.onnx")
    proto = ember.onnx.export(
        model, (ember.randn(2, 4),), path, input_names=["x"], output_names=["y"],
        dynamic_axes={"x": {0: "batch"}}, dynamo=False, opset_version=17,
        training=ember.onnx.TrainingMode.EVAL, keep_initializers_as_inputs=True,
        operator_export_type=ember.onnx.OperatorExportTypes.ONNX, do_constant_folding=True,
        export_params=True, verbose=False, custom_opsets={})
    assert sorted(i.name for i in proto.graph.input) == ["0.bias", "0.weight", "x"]
    assert model.training  # restored
    x = np.random.default_rng(0).standard_normal((5, 4), dtype=np.float32)
    got = ort.InferenceSession(path).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, model.eval()(ember.tensor(x)).detach().numpy(), atol=1e-6)


def test_training_mode_traces_in_that_mode(tmp_path):
    model = ember.nn.Sequential(ember.nn.Linear(4, 3), ember.nn.Dropout(0.5)).eval()
    modes = []
    model.register_forward_pre_hook(lambda m, args: modes.append(m.training))
    ember.onnx.export(model, ember.randn(2, 4), str(tmp_path / "a.onnx"),
                      training=ember.onnx.TrainingMode.PRESERVE)
    model.train()
    ember.onnx.export(model, ember.randn(2, 4), str(tmp_path / "b.onnx"),
                      training=ember.onnx.TrainingMode.PRESERVE)
    assert modes == [False, True]
    assert model.training
    assert str(ember.onnx.TrainingMode.EVAL) == str(torch.onnx.TrainingMode.EVAL)


@pytest.mark.parametrize("opset", [11, 13])
def test_old_opsets_are_written_as_the_lowest_ember_writes(opset, tmp_path):
    with pytest.warns(UserWarning, match=f"opset_version {opset} is below"):
        proto = ember.onnx.export(ember.nn.Linear(4, 3), ember.randn(2, 4),
                                  str(tmp_path / "m.onnx"), opset_version=opset)
    assert proto.opset_import[0].version == ember.onnx.MIN_OPSET


@pytest.mark.parametrize("argument", [{"kwargs": {"x": 1}}, {"dynamic_shapes": {"x": {0: 1}}},
                                      {"operator_export_type":
                                       ember.onnx.OperatorExportTypes.ONNX_ATEN}])
def test_unsupported_export_arguments_are_refused(argument, tmp_path):
    with pytest.raises(NotImplementedError, match=f"{next(iter(argument))}= is not supported"):
        ember.onnx.export(ember.nn.Linear(4, 3), ember.randn(2, 4), str(tmp_path / "m.onnx"),
                          **argument)
    assert not list(tmp_path.iterdir())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not ember.onnx.is_in_onnx_export()
