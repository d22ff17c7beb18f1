"""torch.export against PyTorch: the graph signature and printed inputs, `.module()`
values and guards, dynamic dimensions (Dim), save/load, run_decompositions, errors."""

from __future__ import annotations

import zipfile

import numpy as np
import pytest

import ember
import ember.export

torch = pytest.importorskip("torch")
import torch.export  # noqa: E402, F811 (the submodule, loaded)


def _net(lib):
    nn, F = lib.nn, lib.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            lib.manual_seed(0)
            self.conv = nn.Conv2d(1, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)
            self.fc = nn.Linear(4 * 4 * 4, 10)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
            x = x.view(x.size(0), -1)  # the batch size read into Python
            return self.fc(x)

    return Net().eval()


def _pair():
    t = _net(torch)
    e = _net(ember)
    e.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((2, 1, 8, 8)).astype(np.float32)
    return e, t, x


def _close(a, b):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-5)


def test_signature_inputs_and_module_values_as_torch():
    e, t, x = _pair()
    ep = ember.export.export(e, (ember.tensor(x),))
    tep = torch.export.export(t, (torch.tensor(x),))
    assert str(ep.graph_signature) == str(tep.graph_signature)
    sig, tsig = ep.graph_signature, tep.graph_signature
    assert (sig.parameters, sig.buffers, sig.user_inputs) == \
        (tsig.parameters, tsig.buffers, tsig.user_inputs)
    assert list(ep.state_dict) == list(tep.state_dict)
    text, ttext = str(ep), str(tep)
    assert text.split("\n")[:3] == ttext.split("\n")[:3]  # the header and forward's inputs
    assert text.endswith("\nRange constraints: {}\n") and ttext.endswith(
        "\nRange constraints: {}\n")
    assert "torch.ops.aten.conv2d.default(x, p_conv_weight, p_conv_bias" in text
    assert "torch.ops.aten.linear.default(" in text
    mod = ep.module()
    assert isinstance(mod, ember.fx.GraphModule)
    _close(mod(ember.tensor(x)), tep.module()(torch.tensor(x)))
    _close(mod(ember.tensor(x)), e(ember.tensor(x)))
    placeholders = [n.name for n in ep.graph.nodes if n.op == "placeholder"]
    assert placeholders == [n.name for n in tep.graph.nodes if n.op == "placeholder"]


def test_a_wrong_shape_fails_its_guard_as_torch():
    e, t, x = _pair()
    mod = ember.export.export(e, (ember.tensor(x),)).module()
    tmod = torch.export.export(t, (torch.tensor(x),)).module()
    bad = np.zeros((3, 1, 8, 8), np.float32)
    with pytest.raises(AssertionError) as want:
        tmod(torch.tensor(bad))
    with pytest.raises(AssertionError, match="^Guard failed: x.size\\(\\)\\[0\\] == 2$") as got:
        mod(ember.tensor(bad))
    assert str(got.value) == str(want.value)


def test_dynamic_batch_runs_at_other_sizes_and_keeps_static_guards():
    e, t, x = _pair()
    batch = ember.export.Dim("batch")
    assert repr(batch) == repr(torch.export.Dim("batch")) == "Dim('batch', min=0)"
    ep = ember.export.export(e, (ember.tensor(x),), dynamic_shapes={"x": {0: batch}})
    tep = torch.export.export(t, (torch.tensor(x),),
                              dynamic_shapes={"x": {0: torch.export.Dim("batch")}})
    x5 = np.random.default_rng(1).standard_normal((5, 1, 8, 8)).astype(np.float32)
    _close(ep.module()(ember.tensor(x5)), tep.module()(torch.tensor(x5)))
    assert 'x: "f32[s0, 1, 8, 8]"' in str(ep)
    assert [repr(v) for v in ep.range_constraints.values()] == \
        [repr(v) for v in tep.range_constraints.values()]
    bad = np.zeros((5, 1, 9, 8), np.float32)
    with pytest.raises(AssertionError) as want:
        tep.module()(torch.tensor(bad))
    with pytest.raises(AssertionError) as got:
        ep.module()(ember.tensor(bad))
    assert str(got.value) == str(want.value)


def test_save_load_round_trip(tmp_path):
    e, _, x = _pair()
    ep = ember.export.export(e, (ember.tensor(x),))
    path = tmp_path / "net.pt2"
    ember.export.save(ep, str(path))
    assert zipfile.is_zipfile(path)
    loaded = ember.export.load(str(path))
    assert str(loaded.graph_signature) == str(ep.graph_signature)
    assert str(loaded) == str(ep)
    _close(loaded.module()(ember.tensor(x)), e(ember.tensor(x)))
    _close(ep.run_decompositions().module()(ember.tensor(x)), e(ember.tensor(x)))
    import io

    buffer = io.BytesIO()  # a file object works as a path does
    ember.export.save(ep, buffer)
    buffer.seek(0)
    _close(ember.export.load(buffer).module()(ember.tensor(x)), e(ember.tensor(x)))


def test_outputs_keep_their_structure_and_kwargs_inputs():
    class Two(ember.nn.Module):
        def forward(self, a, b=None):
            return {"sum": a + b, "prod": (a * b, a - 1)}

    a, b = ember.ones(2, 3), ember.full((2, 3), 2.0)
    ep = ember.export.export(Two(), (a,), {"b": b})
    out = ep.module()(a, b=b)
    assert sorted(out) == ["prod", "sum"]
    np.testing.assert_allclose(out["prod"][0].numpy(), 2.0)
    np.testing.assert_allclose(out["prod"][1].numpy(), 0.0)
    assert ep.graph_signature.user_inputs == ("a", "b")


def test_errors_as_torch():
    with pytest.raises(ValueError) as want:
        torch.export.export(lambda x: x, (torch.ones(1),))
    with pytest.raises(ValueError) as got:
        ember.export.export(lambda x: x, (ember.ones(1),))
    assert str(got.value).replace("ember", "torch") == str(want.value)
    lin, tlin = ember.nn.Linear(2, 2), torch.nn.Linear(2, 2)
    with pytest.raises(RuntimeError) as want:
        torch.export.export(tlin, torch.ones(1, 2))
    with pytest.raises(RuntimeError) as got:
        ember.export.export(lin, ember.ones(1, 2))
    assert type(got.value).__name__ == type(want.value).__name__ == "UserError"
    assert str(got.value).replace("ember", "torch") == str(want.value).split("\n")[0]
    ep, tep = ember.export.export(lin, (ember.ones(1, 2),)), \
        torch.export.export(tlin, (torch.ones(1, 2),))
    with pytest.raises(RuntimeError) as want:
        tep(torch.ones(1, 2))
    with pytest.raises(RuntimeError) as got:
        ep(ember.ones(1, 2))
    assert str(got.value) == str(want.value)

    class DataDependent(ember.nn.Module):
        def forward(self, x):
            return x * 2 if x.sum() > 0 else x

    with pytest.raises(AssertionError) as want:
        torch.export.Dim("b", min=5, max=2)
    with pytest.raises(AssertionError) as got:
        ember.export.Dim("b", min=5, max=2)
    assert str(got.value) == str(want.value)
    with pytest.raises(RuntimeError) as want:
        torch.export.export(tlin, (torch.ones(1, 2),),
                            dynamic_shapes={"y": {0: torch.export.Dim("b")}})
    with pytest.raises(RuntimeError) as got:
        ember.export.export(lin, (ember.ones(1, 2),),
                            dynamic_shapes={"y": {0: ember.export.Dim("b")}})
    assert str(want.value).startswith(str(got.value))
    with pytest.raises(RuntimeError, match="reads a tensor's value into Python"):
        ember.export.export(DataDependent(), (ember.ones(2),))


def test_is_exporting_during_the_capture_only():
    class M(ember.nn.Module):
        def forward(self, x):
            return x * 2 if ember.compiler.is_exporting() else x

    ep = ember.export.export(M(), (ember.ones(2),))
    np.testing.assert_allclose(ep.module()(ember.ones(2)).numpy(), 2.0)
    assert not ember.compiler.is_exporting()


def test_method_forms_and_dynamic_sizes_print_as_torch():
    def make(lib):
        class M(lib.nn.Module):
            def forward(self, x):
                y = x.reshape(x.size(0), 3, 2).permute(0, 2, 1)
                return y.softmax(-1), lib.reshape(x, (-1,))
        return M()

    ep = ember.export.export(make(ember), (ember.randn(4, 6),),
                             dynamic_shapes=({0: ember.export.Dim("b")},))
    tep = torch.export.export(make(torch), (torch.randn(4, 6),),
                              dynamic_shapes=({0: torch.export.Dim("b")},))
    assert ep.graph_module.code == tep.graph_module.code.replace("sym_size_int_1",
                                                                 "sym_size_int")
    x = np.random.default_rng(2).standard_normal((7, 6)).astype(np.float32)
    for a, b in zip(ep.module()(ember.tensor(x)), tep.module()(torch.tensor(x))):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)
