"""Quantization against PyTorch (engine x86/FBGEMM): quantized tensors (integers, rounding of
halves, dequantized values, printed forms, errors), the ops quantized models run on them,
observers' qparams, fake quantization (values and straight-through gradients), dynamic
Linear/LSTM, eager static PTQ (fuse, prepare, calibrate, convert) and QAT, and the state
dict of quantized models through ember.save/ember.load."""

from __future__ import annotations

import copy
import pickle
import re
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import torch.ao.quantization as tq  # noqa: E402

import ember  # noqa: E402
import ember.ao.quantization as eq  # noqa: E402


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():  # the quantization deprecation and reduce_range notices
        warnings.simplefilter("ignore", UserWarning)
        yield


def as_torch_text(text: str) -> str:
    return text.replace("ember.", "torch.")


def skeleton(text: str) -> str:
    """`text` with every number blanked."""
    return re.sub(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?", "#", text)


def e_(t) -> ember.Tensor:
    return ember.tensor(t.detach().clone().numpy())  # (a view would pin torch's storage)


QDTYPES = [("qint8", 0.1, 3), ("quint8", 0.0373, 17), ("qint32", 0.07, -5)]


# -- quantized tensors --------------------------------------------------------------------

@pytest.mark.parametrize("name,scale,zero_point", QDTYPES)
def test_quantize_per_tensor_integers_and_values_match(name, scale, zero_point):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2000, generator=g) * 4
    t = torch.quantize_per_tensor(x, scale, zero_point, getattr(torch, name))
    e = ember.quantize_per_tensor(e_(x), scale, zero_point, getattr(ember, name))
    assert e.dtype is getattr(ember, name) and e.is_quantized and not e_(x).is_quantized
    assert e.int_repr().dtype.name == str(t.int_repr().dtype).split(".")[1]
    np.testing.assert_array_equal(e.int_repr().numpy(), t.int_repr().numpy())
    np.testing.assert_array_equal(e.dequantize().numpy(), t.dequantize().numpy())
    assert (e.q_scale(), e.q_zero_point()) == (t.q_scale(), t.q_zero_point())


def test_halves_round_to_even_and_values_clamp():
    x = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 1000.0, -1000.0]
    t = torch.quantize_per_tensor(torch.tensor(x), 1.0, 0, torch.qint8)
    e = ember.quantize_per_tensor(ember.tensor(x), 1.0, 0, ember.qint8)
    assert e.int_repr().tolist() == t.int_repr().tolist() == [0, 2, 2, 0, -2, -2, 127, -128]


def test_printed_forms_match():
    x = torch.tensor([-1.0, 0.0, 0.25, 0.75, 100.0])
    t = torch.quantize_per_tensor(x, 0.5, 2, torch.quint8)
    e = ember.quantize_per_tensor(e_(x), 0.5, 2, ember.quint8)
    assert as_torch_text(repr(e)) == repr(t)
    assert as_torch_text(repr(e[1:3])) == repr(t[1:3])
    assert as_torch_text(repr(e.qscheme())) == repr(t.qscheme()) == "torch.per_tensor_affine"
    assert as_torch_text(repr(ember.qint32)) == repr(torch.qint32)
    w = torch.randn(3, 4, generator=torch.Generator().manual_seed(1))
    scales, zps = torch.tensor([0.1, 0.2, 0.3]), torch.tensor([0, 1, 2])
    t = torch.quantize_per_channel(w, scales, zps, 0, torch.qint8)
    e = ember.quantize_per_channel(e_(w), e_(scales), e_(zps), 0, ember.qint8)
    assert as_torch_text(repr(e)) == repr(t)
    np.testing.assert_array_equal(e.int_repr().numpy(), t.int_repr().numpy())
    np.testing.assert_array_equal(e.q_per_channel_scales().numpy(),
                                  t.q_per_channel_scales().numpy())
    assert e.q_per_channel_zero_points().tolist() == t.q_per_channel_zero_points().tolist()
    assert e.q_per_channel_axis() == t.q_per_channel_axis() == 0


def test_bad_input_is_refused_as_torch_refuses():
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="Quantize only works on Float Tensor, got Long"):
            lib.quantize_per_tensor(lib.tensor([1, 2]), 0.1, 0, lib.qint8)
        with pytest.raises(RuntimeError, match="ScalarType Float is not supported in new_qtensor"):
            lib.quantize_per_tensor(lib.tensor([1.0]), 0.1, 0, lib.float32)
        with pytest.raises(RuntimeError, match="zero_point 300 is above upper bound"):
            lib.quantize_per_tensor(lib.tensor([1.0]), 0.1, 300, lib.qint8)
    q = ember.quantize_per_tensor(ember.tensor([1.0, 2.0]), 0.1, 0, ember.qint8)
    with pytest.raises(NotImplementedError,
                       match="Could not run 'aten::add' with arguments from the 'QuantizedCPU'"):
        q + q
    with pytest.raises(NotImplementedError, match="Could not run 'aten::tolist'"):
        q.tolist()
    with pytest.raises(RuntimeError, match="kPerChannelAffine"):
        q.q_per_channel_scales()


def test_ops_of_quantized_models_match():
    x = torch.randn(2, 3, 6, 6, generator=torch.Generator().manual_seed(2))
    t = torch.quantize_per_tensor(x, 0.05, 64, torch.quint8)
    e = ember.quantize_per_tensor(e_(x), 0.05, 64, ember.quint8)
    pairs = [(torch.relu(t), ember.relu(e)),
             (torch.nn.functional.max_pool2d(t, 2), ember.nn.functional.max_pool2d(e, 2)),
             (torch.nn.functional.adaptive_avg_pool2d(t, 1),
              ember.nn.functional.adaptive_avg_pool2d(e, 1)),
             (torch.flatten(t, 1), ember.flatten(e, 1)), (t.reshape(6, -1), e.reshape(6, -1))]
    for a, b in pairs:
        assert b.is_quantized and tuple(b.shape) == tuple(a.shape)
        assert (b.q_scale(), b.q_zero_point()) == (a.q_scale(), a.q_zero_point())
        np.testing.assert_array_equal(b.int_repr().numpy(), a.int_repr().numpy())


# -- observers and fake quantization ------------------------------------------------------

OBSERVERS = [
    ("MinMaxObserver", {}),
    ("MinMaxObserver", {"dtype": "qint8", "qscheme": "per_tensor_symmetric"}),
    ("MinMaxObserver", {"reduce_range": True}),
    ("MovingAverageMinMaxObserver", {"averaging_constant": 0.3}),
    ("PerChannelMinMaxObserver", {"dtype": "qint8", "qscheme": "per_channel_symmetric"}),
    ("PerChannelMinMaxObserver", {"ch_axis": 1}),
    ("MovingAveragePerChannelMinMaxObserver", {"averaging_constant": 0.5}),
    ("HistogramObserver", {"reduce_range": True}),
]


@pytest.mark.parametrize("name,kwargs", OBSERVERS)
def test_observers_choose_torch_qparams(name, kwargs):
    def args(lib):
        return {k: getattr(lib, v) if isinstance(v, str) else v for k, v in kwargs.items()}
    t_obs, e_obs = getattr(tq, name)(**args(torch)), getattr(eq, name)(**args(ember))
    g = torch.Generator().manual_seed(3)
    for shift in (0.0, 0.7, -0.4):
        x = torch.randn(4, 5, 6, generator=g) + shift
        t_obs(x)
        e_obs(e_(x))
    t_scale, t_zp = t_obs.calculate_qparams()
    e_scale, e_zp = e_obs.calculate_qparams()
    np.testing.assert_allclose(e_scale.numpy(), t_scale.numpy(), rtol=1e-5)
    assert e_zp.tolist() == t_zp.tolist()
    assert as_torch_text(repr(e_obs)).split("(")[0] == repr(t_obs).split("(")[0]


def test_fake_quantize_values_and_straight_through_gradient():
    x = torch.linspace(-3, 3, 41, requires_grad=True)
    xe = ember.linspace(-3, 3, 41).requires_grad_()
    t = torch.fake_quantize_per_tensor_affine(x, 0.05, 10, 0, 127)
    e = ember.fake_quantize_per_tensor_affine(xe, 0.05, 10, 0, 127)
    np.testing.assert_array_equal(e.detach().numpy(), t.detach().numpy())
    t.sum().backward()
    e.sum().backward()
    np.testing.assert_array_equal(xe.grad.numpy(), x.grad.numpy())  # 0 where clamped
    w = torch.randn(3, 8, generator=torch.Generator().manual_seed(4))
    scale, zp = torch.tensor([0.01, 0.02, 0.03]), torch.tensor([0, 1, -1], dtype=torch.int32)
    t = torch.fake_quantize_per_channel_affine(w, scale, zp, 0, -128, 127)
    e = ember.fake_quantize_per_channel_affine(e_(w), e_(scale), e_(zp), 0, -128, 127)
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6, atol=1e-7)


# -- dynamic quantization -----------------------------------------------------------------

def _copy_weights(t_model, e_model):
    e_model.load_state_dict({k: e_(v) for k, v in t_model.state_dict().items()})


def test_quantize_dynamic_linear_matches_fbgemm():
    torch.manual_seed(0)
    t_model = torch.nn.Sequential(torch.nn.Linear(20, 16), torch.nn.ReLU(),
                                  torch.nn.Linear(16, 4))
    e_model = ember.nn.Sequential(ember.nn.Linear(20, 16), ember.nn.ReLU(),
                                  ember.nn.Linear(16, 4))
    _copy_weights(t_model, e_model)
    t_q = tq.quantize_dynamic(t_model, {torch.nn.Linear}, dtype=torch.qint8)
    e_q = eq.quantize_dynamic(e_model, {ember.nn.Linear}, dtype=ember.qint8)
    assert as_torch_text(repr(e_q)) == repr(t_q)
    assert type(e_q[0]) is ember.nn.quantized.dynamic.Linear
    x = torch.randn(8, 20)
    # tolerance: FBGEMM's float32 epilogue, reproduced in order (differences of an ulp)
    np.testing.assert_allclose(e_q(e_(x)).numpy(), t_q(x).detach().numpy(), atol=2e-6)
    np.testing.assert_array_equal(e_q[2].weight().int_repr().numpy(),
                                  t_q[2].weight().int_repr().numpy())


def test_quantize_dynamic_lstm_matches():
    torch.manual_seed(0)
    t_lstm, e_lstm = torch.nn.LSTM(6, 8, num_layers=2), ember.nn.LSTM(6, 8, num_layers=2)
    _copy_weights(t_lstm, e_lstm)
    t_q = tq.quantize_dynamic(torch.nn.Sequential(t_lstm), {torch.nn.LSTM}, dtype=torch.qint8)
    e_q = eq.quantize_dynamic(ember.nn.Sequential(e_lstm), {ember.nn.LSTM},
                              dtype=ember.qint8)
    assert as_torch_text(repr(e_q)) == repr(t_q)
    x = torch.randn(5, 3, 6)
    t_out, (t_h, t_c) = t_q(x)
    e_out, (e_h, e_c) = e_q(e_(x))
    # FBGEMM's float32 epilogue, reproduced in order: differences of float rounding only
    np.testing.assert_allclose(e_out.numpy(), t_out.detach().numpy(), atol=1e-5)
    np.testing.assert_allclose(e_c.numpy(), t_c.detach().numpy(), atol=1e-5)


# -- eager static quantization and QAT ----------------------------------------------------

def _net(lib):
    nn, q = lib.nn, (tq if lib is torch else eq)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant, self.dequant = q.QuantStub(), q.DeQuantStub()
            self.conv, self.bn, self.relu = nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), \
                nn.ReLU()
            self.fc, self.relu2, self.fc2 = nn.Linear(4 * 3 * 3, 8), nn.ReLU(), nn.Linear(8, 3)

        def forward(self, x):
            x = self.relu(self.bn(self.conv(self.quant(x))))
            x = lib.flatten(lib.nn.functional.max_pool2d(x, 2), 1)
            return self.dequant(self.fc2(self.relu2(self.fc(x))))
    return Net()


def _static(lib, model, batches):
    q = tq if lib is torch else eq
    model.eval()
    q.fuse_modules(model, [["conv", "bn", "relu"], ["fc", "relu2"]], inplace=True)
    model.qconfig = q.get_default_qconfig("x86")
    q.prepare(model, inplace=True)
    prepared = repr(model)
    with lib.no_grad():
        for b in batches:
            model(b)
    q.convert(model, inplace=True)
    return prepared


def test_static_quantization_matches_torch():
    torch.manual_seed(0)
    t_model, e_model = _net(torch), _net(ember)
    with torch.no_grad():  # running statistics that the fused convolution folds in
        t_model.bn.running_mean.uniform_(-0.2, 0.2)
        t_model.bn.running_var.uniform_(0.5, 1.5)
    _copy_weights(t_model, e_model)
    batches = [torch.randn(4, 2, 6, 6) for _ in range(3)]
    t_prepared = _static(torch, t_model, batches)
    e_prepared = _static(ember, e_model, [e_(b) for b in batches])
    assert as_torch_text(e_prepared) == t_prepared
    assert type(e_model.conv).__name__ == "ConvReLU2d"
    assert e_model.conv._get_name() == "QuantizedConvReLU2d"
    assert as_torch_text(repr(e_model)).count("Quantized") == repr(t_model).count("Quantized")
    for name in ("conv", "fc", "fc2"):
        t_mod, e_mod = getattr(t_model, name), getattr(e_model, name)
        np.testing.assert_allclose(e_mod.scale, t_mod.scale, rtol=1e-5)  # histogram search
        assert e_mod.zero_point == t_mod.zero_point
        np.testing.assert_array_equal(e_mod.weight().int_repr().numpy(),
                                      t_mod.weight().int_repr().numpy())
    x = torch.randn(4, 2, 6, 6)
    # same scales up to float rounding: outputs within one quantization step
    step = t_model.fc2.scale
    np.testing.assert_allclose(e_model(e_(x)).numpy(), t_model(x).numpy(), atol=1.01 * step)


def test_quantized_state_dict_saves_and_loads(tmp_path):
    torch.manual_seed(0)
    t_model, e_model = _net(torch), _net(ember)
    _copy_weights(t_model, e_model)
    batches = [torch.randn(4, 2, 6, 6) for _ in range(2)]
    _static(torch, t_model, batches)
    _static(ember, e_model, [e_(b) for b in batches])
    assert list(e_model.state_dict()) == list(t_model.state_dict())
    ember.save(e_model.state_dict(), tmp_path / "q.pt")
    fresh = _net(ember)
    _static(ember, fresh, [ember.randn(4, 2, 6, 6)])
    fresh.load_state_dict(ember.load(tmp_path / "q.pt"))
    x = ember.randn(2, 2, 6, 6)
    np.testing.assert_array_equal(fresh(x).numpy(), e_model(x).numpy())
    assert fresh.fc.scale == e_model.fc.scale
    copied = copy.deepcopy(e_model)
    np.testing.assert_array_equal(copied(x).numpy(), e_model(x).numpy())


def test_prepare_qat_modules_and_fake_quantized_forward():
    torch.manual_seed(0)
    results = {}
    for lib in (torch, ember):
        q = tq if lib is torch else eq
        model = lib.nn.Sequential(q.QuantStub(), lib.nn.Linear(6, 5), lib.nn.ReLU(),
                                  lib.nn.Linear(5, 2), q.DeQuantStub())
        if lib is torch:
            float_model = copy.deepcopy(model)
        else:
            _copy_weights(float_model, model)
        model.eval()
        q.fuse_modules(model, [["1", "2"]], inplace=True)
        model.qconfig = q.get_default_qat_qconfig("x86")
        model.train()
        q.prepare_qat(model, inplace=True)
        results[lib.__name__] = (model, repr(model))
    (t_model, t_repr), (e_model, e_repr) = results["torch"], results["ember"]
    assert as_torch_text(e_repr) == t_repr
    x = torch.randn(16, 6)
    t_out, e_out = t_model(x), e_model(e_(x))
    np.testing.assert_allclose(e_out.detach().numpy(), t_out.detach().numpy(), atol=1e-5)
    t_out.sum().backward()
    e_out.sum().backward()
    np.testing.assert_allclose(e_model[1].weight.grad.numpy(), t_model[1].weight.grad.numpy(),
                               atol=1e-5)
    t_model.apply(tq.disable_observer)
    e_model.apply(eq.disable_observer)
    assert e_model[1].weight_fake_quant.observer_enabled.tolist() == [0]
    t_model.eval()
    e_model.eval()
    t_q, e_q = tq.convert(t_model), eq.convert(e_model)
    # the fused observer's moving average may differ in a float32 ulp (C++ contracts it)
    assert skeleton(as_torch_text(repr(e_q))) == skeleton(repr(t_q))
    np.testing.assert_allclose(e_q[3].scale, t_q[3].scale, rtol=1e-6)
    assert e_q[3].zero_point == t_q[3].zero_point


def test_torch_quantization_aliases_are_the_same_modules():
    import ember.nn.quantized
    import ember.quantization

    assert ember.quantization.QuantStub is eq.QuantStub
    assert ember.nn.quantized.dynamic.Linear is ember.ao.nn.quantized.dynamic.Linear
    assert ember.nn.quantized.Linear is ember.ao.nn.quantized.Linear


def test_quantized_engine_is_selectable_as_in_torch():
    engines = ember.backends.quantized
    assert engines.engine == torch.backends.quantized.engine == "x86"
    assert engines.supported_engines == torch.backends.quantized.supported_engines
    try:
        engines.engine = "qnnpack"
        assert engines.engine == "qnnpack"
    finally:
        engines.engine = "x86"
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="foo is not a valid value for quantized engine"):
            lib.backends.quantized.engine = "foo"


def test_qat_conv_bn_folding_matches_torch():
    def build(lib):
        q = tq if lib is torch else eq
        model = lib.nn.Sequential(q.QuantStub(), lib.nn.Conv2d(2, 4, 3, bias=False),
                                  lib.nn.BatchNorm2d(4), lib.nn.ReLU(), q.DeQuantStub())
        model.train()
        q.fuse_modules_qat(model, [["1", "2", "3"]], inplace=True)
        model.qconfig = q.get_default_qat_qconfig("x86")
        return q.prepare_qat(model)
    torch.manual_seed(0)
    t_model, e_model = build(torch), build(ember)
    e_model.load_state_dict({k: e_(v) for k, v in t_model.state_dict().items()})
    assert skeleton(as_torch_text(repr(e_model))) == skeleton(repr(t_model))
    assert type(e_model[1]).__name__ == "ConvBnReLU2d" and hasattr(e_model[1], "bn")
    for _ in range(2):
        x = torch.randn(4, 2, 6, 6)
        np.testing.assert_allclose(e_model(e_(x)).detach().numpy(),
                                   t_model(x).detach().numpy(), atol=1e-5)
    np.testing.assert_allclose(e_model[1].bn.running_mean.numpy(),
                               t_model[1].bn.running_mean.numpy(), atol=1e-6)
    t_model.apply(torch.ao.nn.intrinsic.qat.freeze_bn_stats)
    e_model.apply(ember.ao.nn.intrinsic.qat.freeze_bn_stats)
    assert not e_model[1].bn.training and e_model.train()[1].bn.training is False
    t_q, e_q = tq.convert(t_model.eval()), eq.convert(e_model.eval())
    assert skeleton(as_torch_text(repr(e_q))) == skeleton(repr(t_q))
    x = torch.randn(2, 2, 6, 6)
    np.testing.assert_allclose(e_q(e_(x)).numpy(), t_q(x).numpy(), atol=1.01 * t_q[1].scale)


def test_dynamic_state_dict_round_trips(tmp_path):
    ember.manual_seed(0)
    model = ember.nn.Sequential(ember.nn.LSTM(3, 4, num_layers=2))
    head = ember.nn.Linear(4, 2)
    q = eq.quantize_dynamic(ember.nn.ModuleDict({"rnn": model, "head": head}),
                            {ember.nn.LSTM, ember.nn.Linear})
    assert list(q.state_dict()) == ["rnn.0._all_weight_values.0.param",
                                    "rnn.0._all_weight_values.1.param", "head.scale",
                                    "head.zero_point", "head._packed_params.dtype",
                                    "head._packed_params._packed_params"]
    ember.save(q.state_dict(), tmp_path / "dyn.pt")
    ember.manual_seed(1)
    fresh = eq.quantize_dynamic(ember.nn.ModuleDict({
        "rnn": ember.nn.Sequential(ember.nn.LSTM(3, 4, num_layers=2)),
        "head": ember.nn.Linear(4, 2)}), {ember.nn.LSTM, ember.nn.Linear})
    # the LSTM's weights are TorchScript objects (torch.ScriptObject): like torch.load,
    # ember.load reads them only with weights_only=False
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL torch.ScriptObject was not an "
                                                     "allowed global"):
        ember.load(tmp_path / "dyn.pt")
    fresh.load_state_dict(ember.load(tmp_path / "dyn.pt", weights_only=False))
    x = ember.randn(5, 2, 3)
    out, fresh_out = q["rnn"](x)[0], fresh["rnn"](x)[0]
    np.testing.assert_array_equal(fresh_out.numpy(), out.numpy())
    np.testing.assert_array_equal(fresh["head"](out).numpy(), q["head"](out).numpy())


def test_float_functional_becomes_quantized_add():
    def build(lib):
        q = tq if lib is torch else eq

        class Block(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.quant, self.dequant = q.QuantStub(), q.DeQuantStub()
                self.conv = lib.nn.Conv2d(3, 3, 1)
                self.skip_add = lib.nn.quantized.FloatFunctional()

            def forward(self, x):
                x = self.quant(x)
                return self.dequant(self.skip_add.add(x, self.conv(x)))
        return Block().eval()
    torch.manual_seed(0)
    t_model, e_model = build(torch), build(ember)
    _copy_weights(t_model, e_model)
    x = torch.randn(2, 3, 4, 4)
    for lib, model, data in ((torch, t_model, x), (ember, e_model, e_(x))):
        q = tq if lib is torch else eq
        model.qconfig = q.get_default_qconfig("x86")
        q.prepare(model, inplace=True)
        model(data)
        q.convert(model, inplace=True)
    assert skeleton(as_torch_text(repr(e_model))) == skeleton(repr(t_model))
    assert e_model.skip_add.zero_point == t_model.skip_add.zero_point
    np.testing.assert_allclose(e_model(e_(x)).numpy(), t_model(x).numpy(),
                               atol=1.01 * t_model.skip_add.scale)


# -- quantized state dicts in PyTorch's checkpoint format, both ways ----------------------

def _same_files(tmp_path, theirs, state):
    """`state` saved by ember under `theirs`' name is `theirs`, byte for byte."""
    ours = tmp_path / "ours" / theirs.name
    ours.parent.mkdir(exist_ok=True)
    ember.save(state, ours)
    return ours.read_bytes() == theirs.read_bytes()


def test_static_quantized_state_dict_between_torch_and_ember(tmp_path):
    torch.manual_seed(0)
    t_model, e_model = _net(torch), _net(ember)
    _static(torch, t_model, [torch.randn(4, 2, 6, 6) for _ in range(2)])
    _static(ember, e_model, [ember.randn(4, 2, 6, 6)])
    x = torch.randn(3, 2, 6, 6)
    # torch's file -> ember.load -> ember's model: torch's outputs; saved again: the file
    torch.save(t_model.state_dict(), tmp_path / "static.pt")
    e_model.load_state_dict(ember.load(tmp_path / "static.pt"))
    np.testing.assert_array_equal(e_model(e_(x)).numpy(), t_model(x).numpy())
    assert _same_files(tmp_path, tmp_path / "static.pt", e_model.state_dict())
    # ember's file -> torch.load (weights only) -> a torch model: ember's outputs
    e_other = _net(ember)
    _static(ember, e_other, [ember.randn(4, 2, 6, 6) * 2])
    ember.save(e_other.state_dict(), tmp_path / "ours.pt")
    t_model.load_state_dict(torch.load(tmp_path / "ours.pt", weights_only=True))
    assert t_model.conv.weight().qscheme() == torch.per_channel_affine
    np.testing.assert_array_equal(t_model.fc.weight().int_repr().numpy(),
                                  e_other.fc.weight().int_repr().numpy())
    np.testing.assert_array_equal(t_model(x).numpy(), e_other(e_(x)).numpy())


def _dynamic(lib, seed):
    lib.manual_seed(seed)
    q = tq if lib is torch else eq
    model = lib.nn.ModuleDict({"rnn": lib.nn.LSTM(3, 4, num_layers=2),
                               "head": lib.nn.Linear(4, 2)})
    return q.quantize_dynamic(model, {lib.nn.LSTM, lib.nn.Linear}, dtype=lib.qint8)


def _run(model, x):
    out = model["rnn"](x)[0]
    return model["head"](out)


def test_dynamic_quantized_state_dict_between_torch_and_ember(tmp_path):
    t_model, e_model = _dynamic(torch, 0), _dynamic(ember, 1)
    x = torch.randn(5, 2, 3)
    # the LSTM's cell parameters are TorchScript objects: weights_only=False both ways
    torch.save(t_model.state_dict(), tmp_path / "dynamic.pt")
    e_model.load_state_dict(ember.load(tmp_path / "dynamic.pt", weights_only=False))
    # FBGEMM's float32 epilogue, reproduced in order (differences of an ulp)
    np.testing.assert_allclose(_run(e_model, e_(x)).numpy(), _run(t_model, x).detach().numpy(),
                               atol=2e-6)
    assert _same_files(tmp_path, tmp_path / "dynamic.pt", e_model.state_dict())
    e_other = _dynamic(ember, 2)
    ember.save(e_other.state_dict(), tmp_path / "ours.pt")
    t_model.load_state_dict(torch.load(tmp_path / "ours.pt", weights_only=False))
    np.testing.assert_allclose(_run(t_model, x).detach().numpy(), _run(e_other, e_(x)).numpy(),
                               atol=2e-6)
    assert as_torch_text(repr(e_other)) == repr(t_model)


def _quantized(t):
    return (str(t.dtype).split(".")[1], t.q_scale(), t.q_zero_point(), t.int_repr().tolist())


@pytest.mark.parametrize("values", [[-1.0, 0.0, 1.0, 2.0], [0.5, 3.0], [-2.0, -0.5],
                                    [0.0, 0.0], [1e-7, 2e-7], [-1e-6, 3e-6], [100.0, -50.0]])
@pytest.mark.parametrize("name", ["quint8", "qint8"])
@pytest.mark.parametrize("reduce_range", [False, True])
def test_quantize_per_tensor_dynamic_chooses_pytorchs_parameters(values, name, reduce_range):
    """FBGEMM's ChooseQuantizationParams: the range widened to 0, tiny scales raised to
    6.1e-5, the zero point of the smaller error; reduce_range halves the integer range."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = ember.quantize_per_tensor_dynamic(ember.tensor(values), getattr(ember, name),
                                                reduce_range)
        want = torch.quantize_per_tensor_dynamic(torch.tensor(values), getattr(torch, name),
                                                 reduce_range)
    assert _quantized(got) == _quantized(want)


def test_quantize_per_tensor_dynamic_half_and_errors():
    half = ember.quantize_per_tensor_dynamic(ember.tensor([1.0, 2.5]), ember.float16, False)
    assert half.dtype is ember.float16 and half.tolist() == [1.0, 2.5]
    with pytest.raises(RuntimeError, match="^dtype Intnot supported$"):  # (sic: PyTorch's)
        ember.quantize_per_tensor_dynamic(ember.tensor([1.0]), ember.int32, False)


@pytest.mark.parametrize("shape", [(2, 3, 2, 2), (4, 3), (2, 3, 2, 2, 2)])
@pytest.mark.parametrize("name,scale,zero_point,out_scale,out_zero_point", [
    ("quint8", 1.5, 3, 0.2, 2), ("quint8", 0.05, 100, 0.01, 128), ("qint8", 0.1, 0, 0.05, -3)])
def test_quantized_batch_norm_matches(shape, name, scale, zero_point, out_scale,
                                      out_zero_point):
    """quantized_batch_norm: PyTorch's per-channel alpha and beta in float32 on the
    integer values, requantized and clamped."""
    rng = np.random.default_rng(4)
    x = (rng.random(shape) * 10 - (5 if name == "qint8" else 0)).astype(np.float32)
    stats = [rng.random(3).astype(np.float32) for _ in range(4)]

    def run(L):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            q = L.quantize_per_tensor(L.tensor(x), scale, zero_point, getattr(L, name))
        w, b, m, v = (L.tensor(s) for s in stats)
        return _quantized(L.quantized_batch_norm(q, w, b, m, v, 1e-3, out_scale,
                                                 out_zero_point))

    assert run(ember) == run(torch)
    with pytest.raises(RuntimeError, match="Expect weight size to match C"):
        ember.quantized_batch_norm(
            ember.quantize_per_tensor(ember.tensor(x), scale, zero_point, getattr(ember, name)),
            ember.ones(2), None, ember.zeros(3), ember.ones(3), 1e-5, 0.1, 0)
