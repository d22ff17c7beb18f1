"""ONNX export (ember.onnx.export): every exported file is checked with
onnx.checker.check_model(full_check=True) and run in onnxruntime against ember's own
outputs, at the traced batch size and, with dynamic axes, at another one."""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
import pytest

import ember
from ember import nn
from ember.core import tracing

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from ember.exporters import onnx as onnx_exporter  # noqa: E402 - needs onnx
from ember.exporters.cli import _flat  # noqa: E402 - flattens nested outputs, as the CLI
from ember.onnx import UnsupportedOperatorError  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5


def _grow(x: ember.Tensor, batch: int) -> ember.Tensor:
    """`x` with `batch` rows along dim 0 (its rows repeated), same values per row."""
    reps = -(-batch // x.shape[0])
    return ember.cat([x] * reps, 0)[:batch].contiguous()


def roundtrip(model, inputs, *, dynamic=False, other_batch=5, opset=None, f=None,
              expect_ops=(), forbid_ops=(), dynamic_inputs=None, **kwargs):
    """Export `model`, check the file, and compare onnxruntime with ember."""
    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    if isinstance(model, nn.Module):
        model.eval()
    with ember.no_grad():
        outputs = _flat(model(*inputs))
    if dynamic_inputs is None:
        dynamic_inputs = range(len(inputs))
    if dynamic:
        axes = {f"input_{i}": {0: "batch"} for i in dynamic_inputs}
        axes.update({f"output_{i}": {0: "batch"} for i, t in enumerate(outputs)
                     if t.ndim and t.shape[0] == inputs[0].shape[0]})
        kwargs["dynamic_axes"] = axes
    buf = io.BytesIO() if f is None else f
    proto = ember.onnx.export(model, inputs, buf, opset_version=opset, **kwargs)
    data = buf.getvalue() if f is None else Path(f).read_bytes()
    assert data == proto.SerializeToString()  # export returns what it wrote
    loaded = onnx.load_from_string(data)
    onnx.checker.check_model(loaded, full_check=True)
    assert loaded.opset_import[0].version == (opset or 17)
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    trials = [inputs]
    if dynamic:
        trials.append(tuple(_grow(x, other_batch) if i in dynamic_inputs else x
                            for i, x in enumerate(inputs)))
    for xs in trials:
        with ember.no_grad():
            want = [t.numpy() for t in _flat(model(*xs))]
        got = session.run(None, {i.name: x.numpy() for i, x in
                                 zip(session.get_inputs(), xs)})
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape
            assert g.dtype == w.dtype
            np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)
        _check_import(loaded, xs, want)
    ops = {n.op_type for n in loaded.graph.node}
    for op in expect_ops:
        assert op in ops, f"{op} not in {sorted(ops)}"
    for op in forbid_ops:
        assert op not in ops, f"{op} in {sorted(ops)}"
    return loaded


def _check_import(proto, xs, want):
    """The round trip: `ember.onnx.load` of the exported file gives ember's outputs."""
    imported = ember.onnx.load(proto)
    with ember.no_grad():
        got = _flat(imported(*xs))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert tuple(g.shape) == w.shape
        assert g.numpy().dtype == w.dtype
        np.testing.assert_allclose(g.numpy(), w, rtol=RTOL, atol=ATOL)


@pytest.fixture(autouse=True)
def _seed():
    ember.manual_seed(0)


def _bn(cls, c):
    m = cls(c)
    with ember.no_grad():  # non-trivial running statistics and affine parameters
        m.running_mean.copy_(ember.randn(c))
        m.running_var.copy_(ember.rand(c) + 0.5)
        m.weight.copy_(ember.randn(c))
        m.bias.copy_(ember.randn(c))
    return m


# (id, module factory, input factory, ONNX op that must appear)
LAYERS = [
    ("linear-2d", lambda: nn.Linear(6, 4), lambda: ember.randn(3, 6), "Gemm"),
    ("linear-3d", lambda: nn.Linear(6, 4), lambda: ember.randn(3, 2, 6), "MatMul"),
    ("linear-nobias", lambda: nn.Linear(6, 4, bias=False), lambda: ember.randn(3, 6), "Gemm"),
    ("conv1d", lambda: nn.Conv1d(3, 4, 3, stride=2, padding=1), lambda: ember.randn(2, 3, 9),
     "Conv"),
    ("conv2d", lambda: nn.Conv2d(4, 6, 3, padding=1, dilation=2, groups=2),
     lambda: ember.randn(2, 4, 7, 7), "Conv"),
    ("conv2d-same", lambda: nn.Conv2d(2, 3, (2, 4), padding="same", bias=False),
     lambda: ember.randn(2, 2, 5, 6), "Conv"),
    ("conv2d-reflect", lambda: nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect"),
     lambda: ember.randn(2, 2, 5, 5), "Conv"),
    ("conv_transpose2d", lambda: nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1,
                                                    output_padding=1, groups=2),
     lambda: ember.randn(2, 4, 4, 5), "ConvTranspose"),
    ("batchnorm1d-2d", lambda: _bn(nn.BatchNorm1d, 5), lambda: ember.randn(4, 5),
     "BatchNormalization"),
    ("batchnorm1d-3d", lambda: _bn(nn.BatchNorm1d, 5), lambda: ember.randn(4, 5, 3),
     "BatchNormalization"),
    ("batchnorm2d", lambda: _bn(nn.BatchNorm2d, 3), lambda: ember.randn(2, 3, 4, 4),
     "BatchNormalization"),
    ("layernorm", lambda: nn.LayerNorm((4, 5)), lambda: ember.randn(2, 3, 4, 5),
     "LayerNormalization"),
    ("groupnorm", lambda: nn.GroupNorm(2, 4), lambda: ember.randn(2, 4, 3, 3),
     "InstanceNormalization"),
    ("embedding", lambda: nn.Embedding(10, 4), lambda: ember.randint(0, 10, (3, 5)), "Gather"),
    ("dropout", lambda: nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5)),
     lambda: ember.randn(3, 4), "Gemm"),
    ("relu", nn.ReLU, lambda: ember.randn(3, 4), "Relu"),
    ("leaky_relu", lambda: nn.LeakyReLU(0.2), lambda: ember.randn(3, 4), "LeakyRelu"),
    ("elu", lambda: nn.ELU(0.7), lambda: ember.randn(3, 4), "Elu"),
    ("celu", lambda: nn.CELU(0.7), lambda: ember.randn(3, 4), "Celu"),
    ("selu", nn.SELU, lambda: ember.randn(3, 4), "Selu"),
    ("gelu", nn.GELU, lambda: ember.randn(3, 4), "Erf"),
    ("gelu-tanh", lambda: nn.GELU("tanh"), lambda: ember.randn(3, 4), "Tanh"),
    ("silu", nn.SiLU, lambda: ember.randn(3, 4), "Sigmoid"),
    ("mish", nn.Mish, lambda: ember.randn(3, 4), "Softplus"),
    ("sigmoid", nn.Sigmoid, lambda: ember.randn(3, 4), "Sigmoid"),
    ("tanh", nn.Tanh, lambda: ember.randn(3, 4), "Tanh"),
    ("softplus", lambda: nn.Softplus(beta=2.0, threshold=1.0), lambda: 2 * ember.randn(3, 4),
     "Softplus"),
    ("hardtanh", lambda: nn.Hardtanh(-0.5, 0.3), lambda: ember.randn(3, 4), "Clip"),
    ("relu6", nn.ReLU6, lambda: 5 * ember.randn(3, 4), "Clip"),
    ("hardsigmoid", nn.Hardsigmoid, lambda: 4 * ember.randn(3, 4), "HardSigmoid"),
    ("hardswish", nn.Hardswish, lambda: 4 * ember.randn(3, 4), "HardSwish"),
    ("softsign", nn.Softsign, lambda: ember.randn(3, 4), "Softsign"),
    ("prelu", lambda: nn.PReLU(3, init=0.1), lambda: ember.randn(2, 3, 4), "PRelu"),
    ("softmax", lambda: nn.Softmax(dim=1), lambda: ember.randn(3, 4, 2), "Softmax"),
    ("log_softmax", lambda: nn.LogSoftmax(dim=-1), lambda: ember.randn(3, 4), "LogSoftmax"),
    ("flatten", nn.Flatten, lambda: ember.randn(2, 3, 4, 5), "Flatten"),
    ("flatten-partial", lambda: nn.Flatten(2, 3), lambda: ember.randn(2, 3, 4, 5), "Reshape"),
    ("unflatten", lambda: nn.Unflatten(1, (3, 4)), lambda: ember.randn(2, 12, 5), "Reshape"),
    ("maxpool2d", lambda: nn.MaxPool2d(3, 2, padding=1), lambda: ember.randn(2, 3, 7, 8),
     "MaxPool"),
    ("maxpool2d-ceil", lambda: nn.MaxPool2d(2, ceil_mode=True), lambda: ember.randn(2, 3, 5, 5),
     "MaxPool"),
    ("maxpool1d", lambda: nn.MaxPool1d(2), lambda: ember.randn(2, 3, 8), "MaxPool"),
    ("avgpool2d", lambda: nn.AvgPool2d(3, 2, padding=1, count_include_pad=False),
     lambda: ember.randn(2, 3, 7, 7), "AveragePool"),
    ("avgpool1d", lambda: nn.AvgPool1d(2), lambda: ember.randn(2, 3, 8), "AveragePool"),
    ("adaptive-global", lambda: nn.AdaptiveAvgPool2d(1), lambda: ember.randn(2, 3, 5, 6),
     "GlobalAveragePool"),
    ("adaptive-even", lambda: nn.AdaptiveAvgPool2d((2, 3)), lambda: ember.randn(2, 3, 4, 6),
     "AveragePool"),
    ("adaptive-uneven", lambda: nn.AdaptiveAvgPool2d(3), lambda: ember.randn(2, 3, 5, 7),
     "ReduceSum"),  # (each window summed, then divided dim by dim, as PyTorch's kernel)
    ("lstm", lambda: nn.LSTM(4, 5, num_layers=2, batch_first=True, bidirectional=True),
     lambda: ember.randn(3, 6, 4), "LSTM"),
    ("lstm-nobias-seqfirst", lambda: nn.LSTM(4, 5, bias=False), lambda: ember.randn(6, 3, 4),
     "LSTM"),
    ("gru", lambda: nn.GRU(4, 5, num_layers=2, batch_first=True, bidirectional=True),
     lambda: ember.randn(3, 6, 4), "GRU"),
    ("rnn-tanh", lambda: nn.RNN(4, 5, batch_first=True), lambda: ember.randn(3, 6, 4), "RNN"),
    ("rnn-relu", lambda: nn.RNN(4, 5, nonlinearity="relu", bidirectional=True,
                                batch_first=True), lambda: ember.randn(3, 6, 4), "RNN"),
    ("mha", lambda: nn.MultiheadAttention(8, 2, batch_first=True), lambda: ember.randn(3, 5, 8),
     "Softmax"),
]


@pytest.mark.parametrize("make, make_input, op", [pytest.param(*case[1:], id=case[0])
                                                  for case in LAYERS])
def test_layer(make, make_input, op):
    model = make()
    x = make_input()
    if isinstance(model, nn.MultiheadAttention):
        attention = model

        class SelfAttention(nn.Module):
            def __init__(self):
                super().__init__()
                self.attn = attention

            def forward(self, x):
                return self.attn(x, x, x)  # (output, averaged weights)
        model = SelfAttention()
    roundtrip(model, x, dynamic=True, expect_ops=[op])


def test_recurrent_with_initial_state():
    lstm = nn.LSTM(3, 4, num_layers=2, batch_first=True).eval()
    gru = nn.GRU(3, 4, bidirectional=True).eval()

    class Both(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm, self.gru = lstm, gru

        def forward(self, x, h, c, g):
            out, (h_n, c_n) = self.lstm(x, (h, c))
            out2, g_n = self.gru(x.transpose(0, 1), g)
            return out, h_n, c_n, out2, g_n

    x = ember.randn(2, 5, 3)
    h, c, g = ember.randn(2, 2, 4), ember.randn(2, 2, 4), ember.randn(2, 2, 4)
    proto = roundtrip(Both(), (x, h, c, g), expect_ops=["LSTM", "GRU"])
    lstm_nodes = [n for n in proto.graph.node if n.op_type == "LSTM"]
    assert len(lstm_nodes) == 2  # one per layer
    assert all(n.input[5] and n.input[6] for n in lstm_nodes)  # initial h and c are wired


@pytest.mark.parametrize("opset", [14, 20])
def test_opset_specific_forms(opset):
    model = nn.Sequential(nn.LayerNorm(6), nn.GELU(), nn.Linear(6, 3))
    proto = roundtrip(model, ember.randn(4, 6), opset=opset)
    ops = {n.op_type for n in proto.graph.node}
    if opset >= 20:
        assert "Gelu" in ops
    else:  # no LayerNormalization before opset 17: the mean/rsqrt decomposition
        assert "LayerNormalization" not in ops and "Sqrt" in ops and "Erf" in ops


LOSSES = [
    ("mse", nn.MSELoss, lambda: (ember.randn(4, 3), ember.randn(4, 3))),
    ("l1-sum", lambda: nn.L1Loss(reduction="sum"), lambda: (ember.randn(4, 3),
                                                            ember.randn(4, 3))),
    ("cross_entropy", lambda: nn.CrossEntropyLoss(weight=ember.rand(5) + 0.5, ignore_index=2),
     lambda: (ember.randn(6, 5), ember.tensor([0, 2, 4, 1, 2, 3]))),
    ("cross_entropy-spatial", lambda: nn.CrossEntropyLoss(reduction="none"),
     lambda: (ember.randn(2, 5, 3), ember.randint(0, 5, (2, 3)))),
    ("nll", nn.NLLLoss, lambda: (ember.randn(6, 5).log_softmax(1), ember.randint(0, 5, (6,)))),
    ("bce_logits", lambda: nn.BCEWithLogitsLoss(pos_weight=ember.rand(3) + 0.5),
     lambda: (ember.randn(4, 3), ember.rand(4, 3))),
    ("bce", nn.BCELoss, lambda: (ember.rand(4, 3), ember.rand(4, 3))),
]


@pytest.mark.parametrize("make, make_inputs", [pytest.param(*c[1:], id=c[0]) for c in LOSSES])
def test_loss(make, make_inputs):
    proto = roundtrip(make(), make_inputs())
    # the module converters map each loss whole (no TracerWarning-prone decomposition)
    assert len(proto.graph.node) < 25


# -- primitives, through traced functions --------------------------------------------------


def _setitem(x):
    x = x.clone()
    x[0] = 1.0
    x[:, 1] += 2.0
    x[ember.tensor([1, 2]), 2] = ember.tensor([7.0, 8.0])
    x[x < -1] = 0.0
    return x


def _x():
    return ember.randn(3, 4)


def _pos():
    return ember.rand(3, 4) + 0.5


def _ints():
    return ember.randint(-5, 5, (3, 4))


# (id, function, input factories, opset); every case runs at batch 3 and batch 5
PRIMITIVES = [
    ("unary", lambda x: [-x, x.abs(), x.sign(), x.floor(), x.ceil(), x.round(), x.trunc(),
                         x.relu(), x.exp(), x.sigmoid(), x.tanh(), x.sin(), x.cos(), x.erf(),
                         x.atan()], [_x], None),
    ("unary-positive", lambda p: [p.log(), p.log2(), p.log1p(), p.expm1(), p.sqrt(), p.rsqrt(),
                                  p.reciprocal(), (p - 1).asin(), (p - 1).acos(), p.tan()],
     [_pos], None),
    ("unary-int", lambda i: [i.abs(), -i, i.sign(), i.relu(), i.floor(), i.float().exp()],
     [_ints], None),
    ("predicates", lambda x: [ember.logical_not(x > 0), ember.isnan(x), ember.isinf(x / 0),
                              ember.isfinite(x), ~(x > 0), ember.isnan(x.long())], [_x], None),
    ("binary", lambda x, y: [x + y, x - y, x * y, x / y, x ** 2, ember.maximum(x, y),
                             ember.minimum(x, y), ember.remainder(x, y),
                             ember.floor_divide(x, y), ember.atan2(x, y), x + 1, 2 - x,
                             x * 0.5, x / x.shape[0]], [_x, _x], None),
    ("binary-int", lambda a, c: [a + c, a * c, ember.remainder(a, 3), ember.floor_divide(a, 3),
                                 a / 2, a + 0.5, a == c, a > 1, a & c, a | c, a ^ c, ~a],
     [_ints, lambda: ember.randint(1, 4, (3, 4))], 18),
    ("compare-logical", lambda x, y: [x == y, x != y, x < y, x <= y, x > y, x >= y,
                                      (x > 0) & (y > 0), (x > 0) | (y > 0), (x > 0) ^ (y > 0),
                                      ember.logical_and(x, y)], [_x, _x], None),
    ("where-clamp-cast", lambda x, y: [ember.where(x > 0, x, y), ember.where(x > 0, x, 0.0),
                                       x.clamp(-0.5, 0.5), x.clamp(min=0), x.int(), x.double(),
                                       (x > 0).float(), x.to(ember.int64)], [_x, _x], None),
    ("reductions", lambda x: [x.sum(), x.sum(1), x.sum(0, keepdim=True), x.prod(1), x.max(),
                              x.max(1).values, x.min(0).indices, x.argmax(), x.argmax(1),
                              x.argmin(0, keepdim=True), (x > 0).all(), (x > 0).any(1),
                              x.mean(), x.mean(1), x.var(1), x.std(), x.logsumexp(1),
                              x.cumsum(1), (x > 0).sum(1)], [_x], None),
    ("reductions-opset14", lambda x: [x.max(1).values, x.mean(0), x.prod(1), x.min()], [_x],
     14),
    ("views", lambda x: [x.reshape(-1, 2), x.t(), x.unsqueeze(0).expand(2, -1, 4),
                         x[:, None, :].expand(-1, 5, 4), x.flip(0), x.flip((0, 1)),
                         ember.tril(x), ember.triu(x, 1), x.view(-1), ember.cat([x, x], 1),
                         ember.stack([x, x]), x.permute(1, 0).contiguous(), x.squeeze(),
                         x.clone(), x.detach()], [_x], None),
    ("getitem", lambda x: [x[0], x[:, 1], x[1:3], x[:, ::2], x[-1, -2], x[None],
                           x[:, None, 1:3], x[..., 0], x[:, -3:]], [_x], None),
    ("advanced-index", lambda x, j: [x[j], x[:, j], x[j, j], x[ember.tensor([0, 2]), 1:3],
                                     x[:, ember.tensor([-1, 0])], x[x > 0]],
     [_x, lambda: ember.tensor([0, 2, 1])], None),
    ("setitem", _setitem, [_x], None),
    ("gather-scatter", lambda x, j: [x.gather(1, j), x.index_select(1, ember.tensor([3, 0])),
                                     ember.zeros(3, 4).scatter(1, j[:3], x[:3, :2]),
                                     ember.zeros(3, 4).scatter_add(1, j[:3], x[:3, :2]),
                                     ember.nonzero(x > 0)],
     [_x, lambda: ember.tensor([[0, 1], [2, 2], [3, 0]])], None),
    ("linalg", lambda x, y: [x @ y.t(), x @ y[0], ember.einsum("ij,kj->ik", x, y),
                             ember.bmm(x[None], y.t()[None])], [_x, _x], None),
    ("creation", lambda x: [x + ember.zeros(x.shape[0], 4), ember.arange(x.shape[0]) * 2,
                            ember.full((x.shape[0], 1), 2.0) * x[:, -1:],
                            ember.rand(*x.shape) * 0 + ember.randn(x.shape[0], 4).abs() * 0,
                            ember.randint(0, 1, (x.shape[0], 3)), x + ember.ones(4),
                            ember.randperm(5).sort().values if hasattr(ember.Tensor, "sort")
                            else ember.arange(5)], [_x], None),
    ("pad", lambda x: [nn.functional.pad(x, (1, 2)), nn.functional.pad(x, (1, 1, 2, 0), value=3.0),
                       nn.functional.pad(x, (-1, 1))], [_x], None),
    ("unfold-fold", lambda z: [nn.functional.unfold(z, 2), nn.functional.unfold(
        z, (2, 3), padding=1, stride=2), nn.functional.fold(nn.functional.unfold(z, 2), (5, 6), 2)],
     [lambda: ember.randn(3, 2, 5, 6)], None),
]


@pytest.mark.parametrize("fn, makers, opset", [pytest.param(*c[1:], id=c[0])
                                               for c in PRIMITIVES])
def test_primitive_ops(fn, makers, opset):
    inputs = tuple(make() for make in makers)
    batched = tuple(i for i, x in enumerate(inputs) if x.shape[0] == 3)
    roundtrip(fn, inputs, dynamic=True, opset=opset, dynamic_inputs=batched)


def test_every_primitive_has_a_converter():
    from ember.core.opdef import OPS, Kind

    primitives = {name for name, op in OPS.items() if op.kind is Kind.PRIMITIVE}
    assert primitives - set(onnx_exporter.converters()) == set()


# -- whole models -------------------------------------------------------------------------


class LSTMClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(50, 8)
        self.lstm = nn.LSTM(8, 16, batch_first=True)
        self.head = nn.Linear(16, 4)

    def forward(self, tokens):
        out, _ = self.lstm(self.embed(tokens))
        return self.head(out[:, -1])


def _mlp():
    return nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 3))


def _transformer():
    layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.1, batch_first=True)
    return nn.TransformerEncoder(layer, 2)


MODELS = [
    ("mlp", _mlp, lambda: ember.randn(4, 10), ["Gemm"]),
    ("digits_cnn", lambda: ember.demo.DigitsCNN(), lambda: ember.randn(2, 1, 8, 8),
     ["Conv", "MaxPool", "Gemm"]),
    ("lstm_classifier", LSTMClassifier, lambda: ember.randint(0, 50, (3, 7)),
     ["Gather", "LSTM"]),
    ("transformer_encoder", _transformer, lambda: ember.randn(2, 6, 16),
     ["LayerNormalization", "Softmax", "MatMul"]),
]


@pytest.mark.parametrize("make, make_input, ops", [pytest.param(*c[1:], id=c[0])
                                                   for c in MODELS])
def test_model(make, make_input, ops, tmp_path):
    model = make()
    roundtrip(model, make_input(), dynamic=True, f=str(tmp_path / "model.onnx"),
              expect_ops=ops)
    assert sorted(os.listdir(tmp_path)) == ["model.onnx"]  # no temporary files left


def test_module_called_with_a_keyword_tensor_is_exported_op_by_op():
    """Module nodes record positional arguments only: an LSTM given `hx=` by keyword must
    not be mapped to an ONNX LSTM that would ignore the initial state."""
    class KeywordState(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(3, 4, batch_first=True)

        def forward(self, x, h, c):
            return self.lstm(x, hx=(h, c))[0]

    proto = roundtrip(KeywordState(), (ember.randn(2, 5, 3), ember.randn(1, 2, 4),
                                       ember.randn(1, 2, 4)))
    assert "LSTM" not in {n.op_type for n in proto.graph.node}


def test_dynamic_sequence_axis():
    model = LSTMClassifier().eval()
    tokens = ember.randint(0, 50, (2, 5))
    buf = io.BytesIO()
    ember.onnx.export(model, tokens, buf, dynamic_axes={"input_0": {0: "batch", 1: "seq"},
                                                        "output_0": {0: "batch"}})
    session = ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])
    assert session.get_inputs()[0].shape == ["batch", "seq"]
    assert session.get_outputs()[0].shape == ["batch", 4]
    for batch, seq in ((2, 5), (4, 9), (1, 3)):
        x = ember.randint(0, 50, (batch, seq))
        with ember.no_grad():
            want = model(x).numpy()
        (got,) = session.run(None, {"input_0": x.numpy()})
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def test_function_with_several_inputs_and_outputs():
    def fn(a, b):
        s = a + b
        return {"sum": s, "pair": (s.relu(), a @ b.t())}
    a, b = ember.randn(3, 4), ember.randn(3, 4)
    proto = roundtrip(fn, (a, b), dynamic=True)
    assert [i.name for i in proto.graph.input] == ["input_0", "input_1"]
    assert [o.name for o in proto.graph.output] == ["output_0", "output_1", "output_2"]


# -- the file -----------------------------------------------------------------------------


def _dims(value_info):
    return [d.dim_param or d.dim_value for d in value_info.type.tensor_type.shape.dim]


def test_names_initializers_and_dynamic_axes_forms():
    model = ember.demo.DigitsCNN().eval()
    x = ember.randn(2, 1, 8, 8)
    buf = io.BytesIO()
    proto = ember.onnx.export(model, x, buf, input_names=["image"], output_names=["logits"],
                              dynamic_axes={"image": [0], "logits": {0: "n"}})
    assert [i.name for i in proto.graph.input] == ["image"]
    assert [o.name for o in proto.graph.output] == ["logits"]
    assert _dims(proto.graph.input[0]) == ["image_dynamic_axes_1", 1, 8, 8]
    assert _dims(proto.graph.output[0]) == ["n", 10]
    names = {t.name for t in proto.graph.initializer}
    assert set(model.state_dict()) <= names
    weight = next(t for t in proto.graph.initializer if t.name == "features.0.weight")
    np.testing.assert_array_equal(onnx.numpy_helper.to_array(weight),
                                  model.features[0].weight.detach().numpy())
    assert proto.producer_name == "ember"
    assert proto.graph.value_info  # intermediate dtypes and shapes are recorded
    relu = next(v for v in proto.graph.value_info if "Relu" in v.name)
    assert relu.type.tensor_type.elem_type == onnx.TensorProto.FLOAT


@pytest.mark.parametrize("opset, ir", [(None, 8), (14, 7), (18, 8), (21, 10), (23, 11)])
def test_opset_and_ir_version(opset, ir):
    proto = roundtrip(_mlp(), ember.randn(2, 10), opset=opset)
    assert proto.ir_version == ir
    assert [(o.domain, o.version) for o in proto.opset_import] == [("", opset or 17)]


@pytest.mark.parametrize("opset", [6, 24])
def test_unsupported_opset(opset, tmp_path):
    with pytest.raises(ValueError, match=f"opset_version {opset} is not supported"):
        ember.onnx.export(_mlp(), ember.randn(2, 10), str(tmp_path / "m.onnx"),
                          opset_version=opset)
    assert not os.listdir(tmp_path)


def test_export_params_false_makes_parameters_inputs():
    model = _mlp().eval()
    x = ember.randn(2, 10)
    buf = io.BytesIO()
    proto = ember.onnx.export(model, x, buf, export_params=False)
    assert not proto.graph.initializer
    names = [i.name for i in proto.graph.input]
    assert names[0] == "input_0" and set(names[1:]) == set(model.state_dict())
    session = ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])
    feeds = {"input_0": x.numpy()}
    feeds.update({k: v.numpy() for k, v in model.state_dict().items()})
    with ember.no_grad():
        np.testing.assert_allclose(session.run(None, feeds)[0], model(x).numpy(), rtol=RTOL,
                                   atol=ATOL)


def test_constant_folding():
    w = ember.randn(4, 6)

    def fn(x):
        return x @ w.t().reshape(6, 4) + ember.arange(4).float()
    x = ember.randn(3, 6)
    folded = roundtrip(fn, x)
    plain = roundtrip(fn, x, do_constant_folding=False)
    assert {n.op_type for n in folded.graph.node} == {"MatMul", "Add"}
    assert "Transpose" in {n.op_type for n in plain.graph.node}


def test_external_data(tmp_path, monkeypatch):
    monkeypatch.setattr(onnx_exporter, "EXTERNAL_DATA_THRESHOLD", 1000)
    model = ember.demo.DigitsCNN().eval()
    x = ember.randn(2, 1, 8, 8)
    path = tmp_path / "cnn.onnx"
    ember.onnx.export(model, x, str(path))
    assert sorted(os.listdir(tmp_path)) == ["cnn.onnx", "cnn.onnx.data"]
    assert path.stat().st_size < 20_000 < (tmp_path / "cnn.onnx.data").stat().st_size
    onnx.checker.check_model(str(path), full_check=True)
    loaded = onnx.load(str(path), load_external_data=False)
    assert any(t.data_location == onnx.TensorProto.EXTERNAL for t in loaded.graph.initializer)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    with ember.no_grad():
        np.testing.assert_allclose(session.run(None, {"input_0": x.numpy()})[0],
                                   model(x).numpy(), rtol=RTOL, atol=ATOL)
    with pytest.raises(ValueError, match="external-data format: pass a file path"):
        ember.onnx.export(model, x, io.BytesIO())


# -- unsupported ops, plugin converters ------------------------------------------------------


@pytest.fixture
def cube_op():
    """A third-party primitive `test_cube` (x ** 3) with a CPU kernel and no converter."""
    from ember.core import dispatch, plugins
    from ember.core.declare import primitive
    from ember.core.opdef import OPS, OutMeta

    @primitive(variants="", rule=lambda input: OutMeta(tuple(input.shape), input.dtype, None))
    def test_cube(input):
        """x ** 3 (a third party's primitive)."""
        return dispatch.run("test_cube", input)
    cpu = plugins.get_backend("cpu")
    cpu.kernels["test_cube"] = lambda a: a * a * a
    yield test_cube
    del OPS["test_cube"]
    del cpu.kernels["test_cube"]


def _nested(op):
    class Attn(nn.Module):
        def forward(self, x):
            return op(x) + 1

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = Attn()

        def forward(self, x):
            return self.attn(x)

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([Layer() for _ in range(3)])

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = Encoder()

        def forward(self, x):
            return self.encoder(x)
    return Model()


def test_unsupported_op_names_op_and_module_path(cube_op, tmp_path):
    path = tmp_path / "model.onnx"
    path.write_bytes(b"an older export")
    with pytest.raises(UnsupportedOperatorError,
                       match=r"^Exporting the operator 'test_cube' to ONNX is not supported "
                             r"\(called in encoder\.layers\.0\.attn\); ") as info:
        ember.onnx.export(_nested(cube_op), ember.randn(2, 3), str(path))
    assert isinstance(info.value, RuntimeError)
    assert info.value.op == "test_cube" and info.value.scope == "encoder.layers.0.attn"
    assert path.read_bytes() == b"an older export"  # untouched: nothing half-written
    assert os.listdir(tmp_path) == ["model.onnx"]


class _ConverterPlugin:
    """A plugin (as an installed one would register) with ONNX converters."""

    def __init__(self, table):
        self.table = table

    @ember.core.backend.hookimpl
    def ember_onnx_converters(self):
        return self.table


@pytest.fixture
def plugin_converters():
    from ember.core.plugins import registry

    registry.ensure_loaded()
    added = []

    def add(table):
        plugin = _ConverterPlugin(table)
        registry.pm.register(plugin, name=f"test-onnx-{len(added)}")
        added.append(plugin)
    yield add
    for plugin in added:
        registry.pm.unregister(plugin)


def test_plugin_converter_for_its_own_op(cube_op, plugin_converters):
    def cube(ctx, node):
        (x,) = node.args
        name = ctx.name(x)
        return ctx.op("Mul", ctx.op("Mul", name, name), name)

    plugin_converters({"test_cube": cube})
    roundtrip(_nested(cube_op), ember.randn(2, 3), dynamic=True)


@tracing.composite("test_softplus")
def _soft_plus(x):
    return (x.exp() + 1).log()


def test_plugin_converter_maps_a_composite_and_overrides_builtins(plugin_converters):
    def fn(x):
        return _soft_plus(x).relu()
    x = ember.randn(3, 4)
    plain = roundtrip(fn, x)  # no converter: the composite's ops one by one
    assert {n.op_type for n in plain.graph.node} == {"Exp", "Add", "Log", "Relu"}

    plugin_converters({"test_softplus": lambda ctx, node: ctx.op("Softplus",
                                                                 ctx.name(node.args[0])),
                       "relu": lambda ctx, node: ctx.op("Max", ctx.name(node.args[0]),
                                                        ctx.scalar(0.0, ember.float32))})
    mapped = roundtrip(fn, x)
    assert [n.op_type for n in mapped.graph.node] == ["Softplus", "Max"]


def test_register_converter_and_decline(cube_op):
    calls = []

    def declining(ctx, node):
        calls.append(node.op)
        return NotImplemented

    ember.onnx.register_converter("test_cube", declining)
    try:
        with pytest.raises(UnsupportedOperatorError, match="its converter declined"):
            ember.onnx.export(_nested(cube_op), ember.randn(2, 3), io.BytesIO())
    finally:
        ember.onnx.unregister_converter("test_cube")
    assert calls == ["test_cube"]


def test_dynamic_axis_that_changes_the_graph_is_refused():
    def fn(x):
        if x.shape[0] > 2:  # Python control flow on the batch size
            return x * 2
        return x.relu()
    with pytest.raises(RuntimeError, match="changes size .*Python control flow"):
        ember.onnx.export(fn, ember.randn(2, 3), io.BytesIO(),
                          dynamic_axes={"input_0": {0: "batch"}})


def test_bad_arguments():
    model = _mlp()
    with pytest.raises(ValueError, match="'nope' is neither an input nor an output"):
        ember.onnx.export(model, ember.randn(2, 10), io.BytesIO(), dynamic_axes={"nope": [0]})
    with pytest.raises(TypeError, match="args must be tensors"):
        ember.onnx.export(model, ([1.0] * 10,), io.BytesIO())
    with pytest.raises(ValueError, match="2 input_names given for 1 inputs"):
        ember.onnx.export(model, ember.randn(2, 10), io.BytesIO(), input_names=["a", "b"])


def test_export_restores_training_mode():
    model = _mlp().train()
    ember.onnx.export(model, ember.randn(2, 10), io.BytesIO())
    assert model.training and all(m.training for m in model.modules())
