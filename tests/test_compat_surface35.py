"""PyTorch names and arguments that real programs use, against PyTorch: the layers at
`torch.nn.modules`, `consume_prefix_in_state_dict_if_present`, and `torch.onnx.export`'s
TorchScript-exporter arguments (`dynamo=False`, `training=`, `keep_initializers_as_inputs`,
old opsets, `is_in_onnx_export`)."""

from __future__ import annotations

import re
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


# -- TorchScript's smaller names (ember runs scripted code eagerly) -----------------------

def test_jit_isinstance_matches_torch():
    import typing

    cases = [([1, 2], list[int]), ([1, "a"], list[int]), ([], list[str]),
             ({"a": 1}, dict[str, int]), ({"a": "b"}, dict[str, int]),
             ((1, "a"), tuple[int, str]), ((1, 2, 3), tuple[int, int]),
             (None, typing.Optional[int]), (3, typing.Optional[int]),  # noqa: UP045
             ("x", typing.Union[int, str]), (1.5, typing.Union[int, str]),  # noqa: UP007
             (None, int | None), ([[1], [2]], list[list[int]]), ([1], typing.List[int])]  # noqa: UP006
    for obj, kind in cases:
        assert ember.jit.isinstance(obj, kind) == torch.jit.isinstance(obj, kind), (obj, kind)
    assert ember.jit.isinstance([ember.ones(1)], list[ember.Tensor])
    assert not ember.jit.isinstance([1], list[ember.Tensor])
    for bare in (list, typing.List, dict, typing.Dict, tuple,  # noqa: UP006
                 typing.Optional, typing.Any):
        with pytest.raises(Exception) as theirs:
            torch.jit.isinstance([1], bare)
        with pytest.raises(type(theirs.value), match=re.escape(str(theirs.value))):
            ember.jit.isinstance([1], bare)


def test_jit_attribute_is_unwrapped_by_script_modules():
    assert tuple(ember.jit.Attribute(3, int)) == tuple(torch.jit.Attribute(3, int))

    class Scripted(ember.jit.ScriptModule):
        def __init__(self):
            super().__init__()
            self.words = ember.jit.Attribute([], list[str])

    assert Scripted().words == []

    class Plain(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.counts = ember.jit.Attribute({}, dict[str, int])

        def forward(self, x):
            self.counts["calls"] = self.counts.get("calls", 0) + 1
            return x

    scripted = ember.jit.script(Plain())
    scripted(ember.ones(1))
    assert scripted.counts == {"calls": 1}


def test_jit_execution_switches_are_accepted():
    with ember.jit.optimized_execution(False), ember.jit.fuser("fuser1"):
        pass
    assert ember.jit.set_fusion_strategy([("STATIC", 2)]) == \
        torch.jit.set_fusion_strategy([("STATIC", 2)])
    torch.jit.set_fusion_strategy([("STATIC", 2), ("DYNAMIC", 10)])  # torch's default back
    assert ember.jit.onednn_fusion_enabled() is torch.jit.onednn_fusion_enabled() is False
    double = ember.jit.script_if_tracing(lambda x: x * 2)
    assert double(ember.ones(2)).tolist() == [2.0, 2.0]
    assert issubclass(ember.jit.ScriptWarning, Warning)
    assert issubclass(ember.jit.Error, Exception)
