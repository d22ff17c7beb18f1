"""ember.jit.trace: the recorded graph, its printout, and replay."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn
from ember.jit import TracedModule, TracerWarning


@pytest.fixture(autouse=True)
def _seed():
    ember.manual_seed(0)


def _mlp():
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3)).eval()


def _close(a, b):
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


def test_graph_print_is_readable(capsys):
    model = ember.demo.DigitsCNN().eval()
    traced = ember.jit.trace(model, ember.randn(2, 1, 8, 8))
    traced.graph.print()
    text = capsys.readouterr().out
    assert text == str(traced.graph) + "\n"
    lines = text.splitlines()
    assert lines[0] == "graph(%input_0 : float32[2, 1, 8, 8]):"
    assert "  %features.0.weight : float32[16, 1, 3, 3] = param" in lines
    conv = next(line for line in lines if "module::Conv2d" in line)
    assert conv.endswith("# features.0")
    # ops inside a module carry that module's path (not its parents' joined)
    inner = next(line for line in lines if "composite::conv2d" in line)
    assert inner.startswith("      ") and inner.endswith("# features.0")
    assert any(line.strip().startswith("%") and " = relu(" in line and
               line.endswith("# features.1") for line in lines)
    assert any("module::Linear" in line and line.endswith("# classifier.4") for line in lines)
    assert lines[-1].startswith("  return %")


def test_parameters_are_named_constants():
    model = _mlp()
    traced = ember.jit.trace(model, ember.randn(4, 6))
    consts = traced.graph.constants
    assert set(consts) == set(model.state_dict())
    assert all(v.kind == "param" for v in consts.values())
    assert consts["0.weight"].tensor is model[0].weight
    scopes = {n.scope for top in traced.graph.nodes for n in top.walk()}
    assert scopes == {"0", "1", "2"}


class Branchy(nn.Module):
    """Python control flow: the trace records the path taken."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)

    def forward(self, x):
        h = self.a(x)
        for _ in range(2):  # unrolled
            h = h.tanh()
        if x.shape[-1] == 4:  # sizes are Python ints: no warning
            h = self.b(h)
        else:
            h = -h
        return h


@pytest.mark.parametrize("make, shape", [
    (_mlp, (4, 6)),
    (lambda: ember.demo.DigitsCNN().eval(), (3, 1, 8, 8)),
    (lambda: Branchy().eval(), (5, 4)),
])
def test_replay_matches_the_module(make, shape):
    model = make()
    x = ember.randn(*shape)
    traced = ember.jit.trace(model, x)
    assert isinstance(traced, TracedModule)
    with ember.no_grad():
        _close(traced(x), model(x))
        y = ember.randn(*shape)  # new values, same shape
        _close(traced(y), model(y))
        for batch in (1, 7):  # another batch size
            z = ember.randn(batch, *shape[1:])
            out = traced(z)
            assert tuple(out.shape) == (batch,) + tuple(model(z).shape[1:])
            _close(out, model(z))


def test_replay_does_not_run_python_code():
    calls = []

    class Counting(nn.Module):
        def forward(self, x):
            calls.append(1)
            return x * 2

    traced = ember.jit.trace(Counting(), ember.randn(3), check_trace=False)
    assert calls == [1]
    _close(traced(ember.ones(3)), ember.full((3,), 2.0))
    assert calls == [1]


def test_data_dependent_branch_is_frozen_and_warns():
    class ValueBranch(nn.Module):
        def forward(self, x):
            if x.sum() > 0:  # bool(tensor): recorded as the path taken
                return x + 1
            return x - 1

    x = ember.ones(3)
    with pytest.warns(TracerWarning, match="Converting a tensor to a Python boolean might cause "
                                           "the trace to be incorrect"):
        traced = ember.jit.trace(ValueBranch(), x)
    neg = -ember.ones(3)
    _close(traced(neg), neg + 1)  # the traced path, not the one the module would take


def test_item_warns():
    class Scale(nn.Module):
        def forward(self, x):
            return x * x.max().item()

    with pytest.warns(TracerWarning, match="Python number"):
        ember.jit.trace(Scale(), ember.randn(4))


def test_inplace_ops_in_forward():
    class InPlace(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x, y):
            h = self.fc(x)
            h += y
            h.relu_()
            h *= 2
            return h

    model = InPlace().eval()
    x, y = ember.randn(3, 4), ember.randn(3, 4)
    traced = ember.jit.trace(model, (x, y))
    ops = [n.op for top in traced.graph.nodes for n in top.walk()]
    assert ops.count("assign") == 3  # each in-place update gives the tensor a new value
    with ember.no_grad():
        for _ in range(2):
            a, b = ember.randn(3, 4), ember.randn(3, 4)
            _close(traced(a, b), model(a, b))
    # replay does not modify its inputs
    a = ember.randn(3, 4)
    before = a.clone()
    traced(a, ember.randn(3, 4))
    _close(a, before)


def test_traced_function_with_tuple_and_dict_outputs():
    def fn(a, b, c):
        s = a + b
        return s.relu(), {"prod": a * c, "mm": a @ b.t()}

    a, b, c = ember.randn(2, 3), ember.randn(2, 3), ember.randn(2, 3)
    traced = ember.jit.trace(fn, (a, b, c))
    assert [v.name for v in traced.graph.inputs] == ["input_0", "input_1", "input_2"]
    assert len(traced.graph.output_values()) == 3
    p, q, r = ember.randn(2, 3), ember.randn(2, 3), ember.randn(2, 3)
    got = traced(p, q, r)
    want = fn(p, q, r)
    assert isinstance(got, tuple) and isinstance(got[1], dict)
    assert set(got[1]) == {"prod", "mm"}
    _close(got[0], want[0])
    _close(got[1]["prod"], want[1]["prod"])
    _close(got[1]["mm"], want[1]["mm"])


def test_replay_argument_errors():
    traced = ember.jit.trace(_mlp(), ember.randn(4, 6))
    with pytest.raises(TypeError, match="expects 1 inputs, got 2"):
        traced(ember.randn(4, 6), ember.randn(4, 6))
    with pytest.raises(RuntimeError, match=r"traced with shape \[4, 6\]; got \[4, 5\]"):
        traced(ember.randn(4, 5))
    with pytest.raises(TypeError, match="example inputs must be tensors"):
        ember.jit.trace(_mlp(), ([1.0] * 6,))


def test_traces_do_not_nest():
    def inner(x):
        return ember.jit.trace(lambda y: y + 1, x)

    with pytest.raises(RuntimeError, match="a trace is already recording"):
        ember.jit.trace(inner, ember.randn(2))


def test_nondeterministic_forward_fails_check_trace():
    class Noisy(nn.Module):
        def forward(self, x):
            return x + ember.rand(*x.shape)

    with pytest.warns(TracerWarning, match="replaying the graph on the example inputs gives "
                                           "different outputs"):
        ember.jit.trace(Noisy(), ember.randn(5))


def test_inplace_write_through_a_view_reaches_the_base():
    def zero_first_row(x):
        y = x.clone()
        y[0].mul_(0)  # through the view y[0]
        return y * 1

    x = ember.ones(2, 3)
    traced = ember.jit.trace(zero_first_row, x, check_trace=False)
    _close(traced(x), zero_first_row(x))


def test_traced_module_prints_as_torchs():
    """The TorchScript tutorial's `print(traced_cell)`: the module tree with each module's
    `original_name`, as PyTorch prints a traced module."""
    torch = pytest.importorskip("torch")
    import warnings

    def build(lib):
        class Gate(lib.nn.Module):
            def forward(self, x):
                return x if x.sum() > 0 else -x

        class MyCell(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.dg = Gate()
                self.linear = lib.nn.Linear(4, 4)
                self.seq = lib.nn.Sequential(lib.nn.ReLU(), lib.nn.Identity())

            def forward(self, x, h):
                new_h = lib.tanh(self.dg(self.seq(self.linear(x))) + h)
                return new_h, new_h
        return MyCell()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = torch.jit.trace(build(torch), (torch.rand(3, 4), torch.rand(3, 4)))
        e = ember.jit.trace(build(ember), (ember.rand(3, 4), ember.rand(3, 4)))
        assert repr(e) == repr(t)
        assert repr(ember.jit.trace(ember.nn.Linear(2, 2), ember.ones(1, 2))) == \
            repr(torch.jit.trace(torch.nn.Linear(2, 2), torch.ones(1, 2))) == \
            "Linear(original_name=Linear)"
