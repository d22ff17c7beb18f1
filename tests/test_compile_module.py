"""`compile(module)` returns an OptimizedModule as PyTorch's `torch.compile` does (its repr,
`_orig_mod.` state_dict keys and the load errors they cause, attribute passthrough,
train/eval/to/parameters), still replayed; `torch.compile(fn)` stays a callable;
`torch.compiler` and `torch._dynamo`'s names programs touch. Checked against torch."""
from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _torch_validation_restored():
    """Using torch.compile imports torch._dynamo, which turns PyTorch's distribution
    argument checks off process-wide (`set_default_validate_args(False)` in its
    eval_frame): later tests compare ember's checks with them."""
    before = torch.distributions.Distribution._validate_args
    yield
    torch.distributions.Distribution.set_default_validate_args(before)


def _net(lib):
    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = lib.nn.Linear(3, 4)
            self.fc2 = lib.nn.Linear(4, 2)
            self.drop = lib.nn.Dropout(0.5)

        def forward(self, x):
            return self.fc2(self.drop(self.fc1(x).relu()))
    return Net


def _compiled(lib):
    net = _net(lib)()
    return net, lib.compile(net)


def test_repr_and_state_dict_keys_match_torch():
    (m, c), (_, tc) = _compiled(ember), _compiled(torch)
    assert repr(c) == repr(tc)
    assert repr(c).startswith("OptimizedModule(\n  (_orig_mod): Net(")
    assert list(c.state_dict()) == list(tc.state_dict())
    assert all(k.startswith("_orig_mod.") for k in c.state_dict())
    assert [n for n, _ in c.named_parameters()] == [n for n, _ in tc.named_parameters()]
    assert type(c).__name__ == type(tc).__name__ == "OptimizedModule"
    assert isinstance(c, ember.nn.Module) and c._orig_mod is m


def _load_errors(lib):
    m, c = _compiled(lib)
    found = []
    for target, state in ((_net(lib)(), c.state_dict()), (c, m.state_dict())):
        try:
            target.load_state_dict(state)
        except RuntimeError as exc:
            found.append(str(exc))
    c.load_state_dict(c.state_dict())  # its own keys load back
    m2 = _net(lib)()
    m2.load_state_dict({k.removeprefix("_orig_mod."): v for k, v in c.state_dict().items()})
    return found


def test_loading_across_the_prefix_fails_as_torch():
    got, expected = _load_errors(ember), _load_errors(torch)
    assert len(expected) == 2 and got == expected


def test_attributes_and_modes_pass_through():
    m, c = _compiled(ember)
    assert c.fc1 is m.fc1 and c.drop.p == 0.5
    c.eval()
    assert not m.training and not c.training and not m.drop.training
    c.train()
    assert m.training and c.training and m.fc2.training
    m.eval()
    assert not c.training
    c.extra = 7  # set on the original, as torch
    assert m.extra == 7 and "extra" not in c.__dict__
    del c.extra
    assert not hasattr(m, "extra")
    assert "fc1" in dir(c) and "_orig_mod" in dir(c)
    assert c.to(ember.float64) is c and m.fc1.weight.dtype is ember.float64
    assert [p is q for p, q in zip(c.parameters(), m.parameters())] == [True] * 4
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'missing'"):
        getattr(c, "missing")  # noqa: B009 - the lookup is the test


def test_calls_run_the_original_with_its_hooks_and_replay():
    m, c = _compiled(ember)
    c.eval()
    seen = []
    m.register_forward_hook(lambda mod, args, out: seen.append(out.shape))
    x = ember.randn(5, 3)
    with ember.no_grad():
        outs = [c(x) for _ in range(5)]
    np.testing.assert_allclose(outs[-1].numpy(), m(x).detach().numpy(), rtol=1e-6)
    assert len(seen) >= 3  # eager calls ran the hook (a replay runs recorded kernels)
    assert "replayed" in c.forward.explain()


def test_training_step_through_the_wrapper_matches_eager():
    ember.manual_seed(0)
    m = _net(ember)()
    m.drop.p = 0.0
    twin = copy.deepcopy(m)
    c = ember.compile(m)
    x, y = ember.randn(8, 3), ember.randint(0, 2, (8,))
    opt, opt2 = (ember.optim.SGD(p.parameters(), lr=0.1) for p in (c, twin))
    for _ in range(4):
        for model, o in ((c, opt), (twin, opt2)):
            o.zero_grad()
            ember.nn.functional.cross_entropy(model(x), y).backward()
            o.step()
    for p, q in zip(m.parameters(), twin.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5)


def test_pickle_and_deepcopy_keep_a_working_wrapper():
    ember.manual_seed(1)
    c = ember.compile(ember.nn.Linear(2, 2))
    for clone in (copy.deepcopy(c), pickle.loads(pickle.dumps(c))):
        assert type(clone).__name__ == "OptimizedModule" and clone._orig_mod is not c._orig_mod
        x = ember.ones(1, 2)
        np.testing.assert_allclose(clone(x).detach().numpy(), c(x).detach().numpy())


def test_compile_of_a_function_stays_a_function():
    def f(x):
        return x * 2
    for lib in (ember, torch):
        g = lib.compile(f)
        assert callable(g) and not isinstance(g, lib.nn.Module) and g.__name__ == "f"
        assert g(lib.ones(2)).tolist() == [2.0, 2.0]
    assert ember.compile(ember.nn.Linear(1, 1), disable=True).__class__ is ember.nn.Linear


def test_compiler_and_dynamo_names():
    import ember._dynamo
    import ember.compiler

    assert ember._dynamo.eval_frame.OptimizedModule is type(ember.compile(ember.nn.ReLU()))
    for name in ("suppress_errors", "cache_size_limit", "verbose"):
        assert getattr(ember._dynamo.config, name) == getattr(torch._dynamo.config, name)
    ember._dynamo.config.suppress_errors = True  # programs set it
    ember._dynamo.config.suppress_errors = False
    assert ember.compiler.is_compiling() is torch.compiler.is_compiling() is False

    @ember.compiler.disable
    def f(x):
        return x + 1

    @ember.compiler.disable(recursive=False)
    def g(x):
        return x - 1
    assert f(1) == 2 and g(1) == 0

    def step(x):
        return x * 3
    compiled = ember.compile(step)
    with ember.no_grad():
        for _ in range(4):
            compiled(ember.ones(3))
    assert "replayed" in compiled.explain()
    ember.compiler.reset()
    assert compiled.explain() == "not called yet"
    ember._dynamo.reset()


def test_torch_alias_reaches_them(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    code = ("import torch\nm = torch.compile(torch.nn.Linear(2, 2))\n"
            "print(isinstance(m, torch._dynamo.eval_frame.OptimizedModule), "
            "torch.compiler.is_compiling(), torch._dynamo.config.suppress_errors)\n"
            "torch.compiler.reset()\n")
    root = Path(__file__).resolve().parents[1]
    script = tmp_path / "prog.py"
    script.write_text(code)
    done = subprocess.run([sys.executable, "-m", "ember.run", str(script)], capture_output=True,
                          text=True, timeout=120,
                          env={**__import__("os").environ, "PYTHONPATH": str(root)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "False", "False"]


def test_module_compile_compiles_in_place_keeping_class_and_state_dict_keys():
    torch = pytest.importorskip("torch")
    for lib in (ember, torch):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(4, 3), lib.nn.ReLU())
        keys = list(model.state_dict())
        assert model.compile() is None
        assert type(model) is lib.nn.Sequential and list(model.state_dict()) == keys
    x = ember.randn(5, 4)
    eager = ember.nn.Sequential(ember.nn.Linear(4, 3), ember.nn.ReLU())
    compiled = ember.nn.Sequential(ember.nn.Linear(4, 3), ember.nn.ReLU())
    compiled.load_state_dict(eager.state_dict())
    compiled.compile()
    for _ in range(3):  # recorded, then replayed
        assert ember.equal(compiled(x), eager(x))


def _buffered(lib):
    class M(lib.nn.Module):
        def __init__(self):
            super().__init__()
            lib.manual_seed(0)
            self.fc = lib.nn.Linear(4, 3)
            self.register_buffer("b", lib.ones(3))

        def forward(self, x):
            return lib.relu(self.fc(x)) + self.b
    return M()


def _recording_backend(seen):
    def my_backend(gm, example_inputs):
        seen.append((gm, list(example_inputs)))
        return gm.forward
    return my_backend


def test_a_custom_backend_gets_dynamos_graph_once_per_shape():
    got, want = [], []
    m, tm = _buffered(ember), _buffered(torch)
    c = ember.compile(m, backend=_recording_backend(got), dynamic=False)
    tc = torch.compile(tm, backend=_recording_backend(want), dynamic=False)
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    for _ in range(2):
        np.testing.assert_allclose(c(ember.tensor(x)).detach().numpy(),
                                   tc(torch.tensor(x)).detach().numpy(), rtol=1e-6)
    assert len(got) == len(want) == 1
    gm, inputs = got[0]
    tgm, tinputs = want[0]
    assert isinstance(gm, ember.fx.GraphModule)
    assert gm.code == tgm.code
    assert str(gm.graph) == str(tgm.graph)
    assert [type(t).__name__ for t in inputs] == [type(t).__name__ for t in tinputs]
    assert inputs[0] is m.fc.weight and inputs[2].shape == (2, 4)
    x5 = np.ones((5, 4), np.float32)
    np.testing.assert_allclose(c(ember.tensor(x5)).detach().numpy(),
                               tc(torch.tensor(x5)).detach().numpy(), rtol=1e-6)
    assert len(got) == len(want) == 2  # a new shape compiles again (dynamic=False)
    c(ember.tensor(x5)).sum().backward()  # autograd goes through the backend's callable
    assert m.fc.weight.grad is not None
    ember._dynamo.reset()
    c(ember.tensor(x5))
    assert len(got) == 3


def test_custom_backend_of_a_function_and_its_graph_breaks():
    seen = []

    def f(a, b):
        return a / (ember.abs(a) + 1) * b

    cf = ember.compile(f, backend=_recording_backend(seen))
    a, b = ember.randn(10), ember.randn(10)
    np.testing.assert_allclose(cf(a, b).numpy(), f(a, b).numpy())
    np.testing.assert_allclose(cf(a, b).numpy(), f(a, b).numpy())
    assert len(seen) == 1
    assert [n.op for n in seen[0][0].graph.nodes] == \
        ["placeholder", "placeholder", "call_function", "call_function", "call_function",
         "call_function", "output"]

    def g(a, b):  # dynamo breaks the graph here: the calls run eagerly, recorded
        x = a / (ember.abs(a) + 1)
        if b.sum() < 0:
            b = b * -1
        return x * b

    cg = ember.compile(g, backend=_recording_backend(seen))
    np.testing.assert_allclose(cg(a, b).numpy(), g(a, b).numpy())
    np.testing.assert_allclose(cg(a, -b).numpy(), g(a, -b).numpy())
    np.testing.assert_allclose(cg(a, b).numpy(), g(a, b).numpy())
    assert len(seen) == 4  # before the break, then each side of it once
    with pytest.raises(RuntimeError, match="reads a tensor's value into Python"):
        ember.compile(g, backend=_recording_backend(seen), fullgraph=True)(a, b)


def test_backend_names_and_unknown_backend_as_torch():
    with pytest.raises(Exception) as want:
        torch.compile(lambda x: x, backend="no_such_backend")
    with pytest.raises(ember._dynamo.exc.InvalidBackend) as got:
        ember.compile(lambda x: x, backend="no_such_backend")
    assert str(got.value) == str(want.value)
    assert ember._dynamo.list_backends() == torch._dynamo.list_backends()
    for name in ("inductor", "eager", "aot_eager", "cudagraphs"):
        f = ember.compile(lambda x: x * 2, backend=name)
        np.testing.assert_allclose(f(ember.ones(2)).numpy(), 2.0)


def test_explain_counts_graphs_and_ops_as_torch():
    import re

    def f(lib):
        return lambda x: lib.sin(x) + 1

    got = ember._dynamo.explain(f(ember))(ember.randn(3))
    want = torch._dynamo.explain(f(torch))(torch.randn(3))
    assert (got.graph_count, got.graph_break_count, got.op_count) == \
        (want.graph_count, want.graph_break_count, want.op_count) == (1, 0, 2)

    def text(e):
        return re.sub(r"0x[0-9a-f]+", "ADDR", str(e).split("Out Guards")[0])
    assert text(got) == text(want)


def test_custom_backend_records_rnns_embeddings_and_method_forms():
    class Tagger(ember.nn.Module):
        def __init__(self):
            super().__init__()
            ember.manual_seed(0)
            self.emb = ember.nn.Embedding(10, 4)
            self.lstm = ember.nn.LSTM(4, 5, batch_first=True)

        def forward(self, idx):
            out, (h, c) = self.lstm(self.emb(idx))
            return out.reshape(idx.shape[0], -1), h

    seen = []
    m = Tagger()
    c = ember.compile(m, backend=_recording_backend(seen), dynamic=False)
    idx = ember.tensor([[1, 2, 3], [4, 5, 9]])
    for _ in range(2):
        got, want = c(idx), m(idx)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6)
    assert len(seen) == 1
    gm = seen[0][0]
    methods = [n.target for n in gm.graph.nodes if n.op == "call_method"]
    assert "reshape" in methods  # `out.reshape(2, -1)`: torch.reshape takes no varargs
    # the embedding's bounds check runs paused: its comparisons are not in the graph
    assert not any(n.name in ("lt", "ge", "any") for n in gm.graph.nodes)


def test_graph_breaks_give_the_backend_dynamos_graphs():
    def make(lib):
        def toy_example(a, b):
            x = a / (lib.abs(a) + 1)
            if b.sum() < 0:
                b = b * -1
            return x * b
        return toy_example

    got, want = [], []
    opt = ember.compile(make(ember), backend=_recording_backend(got))
    topt = torch.compile(make(torch), backend=_recording_backend(want))
    rng = np.random.default_rng(0)
    for sign in (1, 1, -1, -1):
        a = rng.standard_normal(10).astype(np.float32)
        b = (np.abs(rng.standard_normal(10)) * sign).astype(np.float32)
        np.testing.assert_allclose(opt(ember.tensor(a), ember.tensor(b)).numpy(),
                                   topt(torch.tensor(a), torch.tensor(b)).numpy(), rtol=1e-6)
    assert [gm.code for gm, _ in got] == [gm.code for gm, _ in want]  # 3 graphs, same text
    assert len(got) == 3
