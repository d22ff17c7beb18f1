"""ember.fx against torch.fx: printed graphs and generated code, node lists, graph
edits, Interpreter/Transformer results, ShapeProp, replace_pattern, and errors."""

from __future__ import annotations

import operator
import pickle

import numpy as np
import pytest

import ember
import ember.fx

pytest.importorskip("torch")
import torch  # noqa: E402
import torch.fx  # noqa: E402


def _model(lib):
    nn = lib.nn

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            lib.manual_seed(0)
            self.lin = nn.Linear(4, 3)
            self.param = nn.Parameter(lib.ones(3))
            self.seq = nn.Sequential(nn.Linear(3, 3), nn.ReLU())

        def forward(self, x, y=2):
            a = self.lin(x) + self.param
            b = lib.relu(a)
            c = lib.nn.functional.relu(b)
            d = lib.cat([c, a], 1)
            e = d.sum(dim=-1, keepdim=True).clamp(min=0.0)
            f = self.seq(c) * 2
            g = 1 - f
            h = lib.nn.functional.softmax(g, dim=1)
            return {"e": e, "h": h, "s": h.shape[0], "n": h[:, 0]}

    return M()


def _both():
    return ember.fx.symbolic_trace(_model(ember)), torch.fx.symbolic_trace(_model(torch))


def test_graph_code_and_module_print_as_torch():
    gm, tgm = _both()
    assert str(gm.graph) == str(tgm.graph)
    assert gm.code == tgm.code
    assert str(gm) == str(tgm)
    assert type(gm).__name__ == "M"
    assert gm.print_readable(print_output=False) == tgm.print_readable(print_output=False)


def test_nodes_targets_users_and_values():
    gm, tgm = _both()
    got = [(n.name, n.op, str(n.target) if isinstance(n.target, str) else None,
            [u.name for u in n.users], [i.name for i in n.all_input_nodes])
           for n in gm.graph.nodes]
    want = [(n.name, n.op, str(n.target) if isinstance(n.target, str) else None,
             [u.name for u in n.users], [i.name for i in n.all_input_nodes])
            for n in tgm.graph.nodes]
    assert got == want
    relu = next(n for n in gm.graph.nodes if n.name == "relu")
    assert relu.target is ember.relu and relu.prev.name == "add" and relu.next.name == "relu_1"
    assert gm.graph.find_nodes(op="call_function", target=operator.add)[0].name == "add"
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    out, want_out = gm(ember.tensor(x)), tgm(torch.tensor(x))
    np.testing.assert_allclose(out["h"].detach().numpy(), want_out["h"].detach().numpy(),
                               rtol=1e-5)
    assert out["s"] == 2


def test_parameters_state_dict_copied_and_saved(tmp_path):
    gm, tgm = _both()
    assert list(gm.state_dict()) == list(tgm.state_dict())
    assert [n for n, _ in gm.named_parameters()] == [n for n, _ in tgm.named_parameters()]
    ember.save(gm.state_dict(), tmp_path / "gm.pt")
    loaded = ember.load(tmp_path / "gm.pt")
    np.testing.assert_array_equal(loaded["lin.weight"].numpy(), gm.lin.weight.detach().numpy())


def test_graph_edits_insert_replace_erase_dce():
    def build(lib):
        fx = lib.fx

        def f(x, y):
            a = x + y
            unused = x * 3  # noqa: F841
            return lib.relu(a)
        gm = fx.symbolic_trace(f)
        for n in list(gm.graph.nodes):
            if n.target is operator.add:
                with gm.graph.inserting_after(n):
                    new = gm.graph.call_function(lib.mul, n.args, {})
                n.replace_all_uses_with(new)
                gm.graph.erase_node(n)
        removed = gm.graph.eliminate_dead_code()
        gm.recompile()
        return gm, removed
    (gm, removed), (tgm, tremoved) = build(ember), build(torch)
    assert removed == tremoved is True
    assert gm.code == tgm.code and str(gm.graph) == str(tgm.graph)
    out = gm(ember.tensor([1.0, -2.0]), ember.tensor([3.0, 4.0]))
    assert out.tolist() == [3.0, 0.0]


def test_build_graph_by_hand_and_copy():
    def build(lib):
        g = lib.fx.Graph()
        x = g.placeholder("x")
        w = g.get_attr("w")
        mm = g.call_function(lib.matmul, (x, w))
        s = g.call_method("sum", (mm,), {"dim": 0})
        g.output(s)
        g2 = lib.fx.Graph()
        out = g2.graph_copy(g, {})
        g2.output(out)
        g2.lint()
        return g, lib.fx.GraphModule({"w": lib.ones(2, 2)}, g2, "Hand")
    (g, gm), (tg, tgm) = build(ember), build(torch)
    assert str(g) == str(tg) and gm.code == tgm.code
    assert gm(ember.tensor([[1.0, 2.0]])).tolist() == [3.0, 3.0]


def test_interpreter_and_transformer():
    gm, tgm = _both()
    x = np.ones((2, 4), np.float32)
    out = ember.fx.Interpreter(gm).run(ember.tensor(x))
    np.testing.assert_allclose(out["h"].detach().numpy(),
                               torch.fx.Interpreter(tgm).run(torch.tensor(x))["h"].detach()
                               .numpy(), rtol=1e-5)

    def transformer(lib):
        class T(lib.fx.Transformer):
            def call_function(self, target, args, kwargs):
                if target is lib.relu:
                    target = lib.sigmoid
                return super().call_function(target, args, kwargs)
        return T
    t, tt = transformer(ember)(gm).transform(), transformer(torch)(tgm).transform()
    assert t.code == tt.code


def test_interpreter_error_names_the_node():
    gm = ember.fx.symbolic_trace(lambda x: x.reshape(5))
    with pytest.raises(RuntimeError, match=r"While executing %reshape"):
        ember.fx.Interpreter(gm).run(ember.ones(2, 3))


def test_shape_prop_records_tensor_metadata():
    from ember.fx.passes.shape_prop import ShapeProp

    gm, tgm = _both()
    ShapeProp(gm).propagate(ember.ones(2, 4))
    torch.fx.passes.shape_prop.ShapeProp(tgm).propagate(torch.ones(2, 4))
    for n, tn in zip(gm.graph.nodes, tgm.graph.nodes):
        meta, tmeta = n.meta.get("tensor_meta"), tn.meta.get("tensor_meta")
        if tmeta is None or isinstance(tmeta, dict):
            continue
        assert list(meta.shape) == list(tmeta.shape)
        assert str(meta.dtype).split(".")[1] == str(tmeta.dtype).split(".")[1]
        assert meta.stride == tmeta.stride and meta.requires_grad == tmeta.requires_grad


def test_replace_pattern_matches_torch():
    def run(lib):
        def f(x, w1, w2):
            m1 = lib.cat([lib.neg(w1), w2]).sum()
            m2 = lib.cat([lib.neg(w1), w2]).sum()
            return x + m1 + m2

        def pattern(a1, a2):
            return lib.cat([lib.neg(a1), a2]).sum()

        def replacement(w1, w2):
            return lib.stack([w1, w2])
        gm = lib.fx.symbolic_trace(f)
        return gm, lib.fx.replace_pattern(gm, pattern, replacement)
    (gm, matches), (tgm, tmatches) = run(ember), run(torch)
    assert len(matches) == len(tmatches) == 2
    assert gm.code == tgm.code


def test_wrap_records_one_call():
    gm = ember.fx.symbolic_trace(_uses_wrapped)
    assert [n.op for n in gm.graph.nodes] == ["placeholder", "call_function", "output"]
    assert 'torch.fx._symbolic_trace.wrap("test_fx__wrapped_len")' in gm.code
    assert gm(ember.ones(4)) == 4


def _wrapped_len(x):
    return len(x)


ember.fx.wrap("_wrapped_len")


def _uses_wrapped(x):
    return _wrapped_len(x)


def test_custom_tracer_leaf_and_tagging():
    class NotLeaf(ember.fx.Tracer):
        def is_leaf_module(self, m, qualname):
            return not isinstance(m, ember.nn.ReLU) and super().is_leaf_module(m, qualname)

    class M(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.relu = ember.nn.ReLU()

        def forward(self, x):
            return self.relu(x)
    g = NotLeaf().trace(M())
    assert [(n.op, n.name) for n in g.nodes] == [
        ("placeholder", "x"), ("call_function", "relu"), ("output", "output")]
    assert "torch.nn.functional.relu](args = (%x,), kwargs = {inplace: False})" in str(g)


def test_trace_errors_as_torch():
    # (each function touches only its argument, a Proxy: the same code traces in both)
    def control(x):
        if x.sum() > 0:
            return x
        return -x

    def iterate(x):
        return [i for i in x]

    def length(x):
        return len(x)
    for fn, err in ((control, ember.fx.proxy.TraceError), (iterate, ember.fx.proxy.TraceError),
                    (length, RuntimeError)):
        with pytest.raises(err) as got:
            ember.fx.symbolic_trace(fn)
        with pytest.raises(Exception) as want:
            torch.fx.symbolic_trace(fn)
        assert str(got.value) == str(want.value)
        assert type(got.value).__name__ == type(want.value).__name__
    g = ember.fx.symbolic_trace(lambda x: x).graph
    with pytest.raises(RuntimeError, match="still had 1 users in the graph"):
        g.erase_node(next(iter(g.nodes)))


def test_unpacking_and_tensor_constants():
    def f(lib):
        def k(x):
            a, b = x
            return a + b, x.size(0), lib.ones(2) + x
        return k
    assert ember.fx.symbolic_trace(f(ember)).code == torch.fx.symbolic_trace(f(torch)).code


def test_deepcopy_and_pickle_keep_code_and_values():
    import copy

    gm, _ = _both()
    x = ember.ones(2, 4)
    for clone in (copy.deepcopy(gm), pickle.loads(pickle.dumps(gm))):
        assert clone.code == gm.code
        np.testing.assert_allclose(clone(x)["h"].detach().numpy(),
                                   gm(x)["h"].detach().numpy())


def test_submodule_management():
    gm, _ = _both()
    assert gm.add_submodule("extra.inner", ember.nn.ReLU())
    assert isinstance(gm.extra.inner, ember.nn.ReLU)
    assert gm.delete_submodule("extra.inner") and not gm.delete_submodule("nope")
    gm.delete_all_unused_submodules()
    assert not hasattr(gm, "extra")
    assert hasattr(gm, "lin") and hasattr(gm.seq, "0")


def test_op_fast_path_untouched_after_tracing():
    from ember.core import interpose

    ember.fx.symbolic_trace(_model(ember))
    assert interpose.active is None
    assert ember.nn.Module.__call__.__name__ == "__call__"
    assert ember.nn.functional.relu.__module__ == "ember.nn.functional"
    assert not hasattr(ember.nn.functional.relu, "__fx_orig__")


def test_print_tabular_as_torch(capsys):
    import re

    pytest.importorskip("tabulate")

    def f(lib):
        def k(x, y=3):
            return lib.nn.functional.relu(x) * y, lib.cat([x, x]), lib.nn.functional.linear(x, x)
        return k
    ember.fx.symbolic_trace(f(ember)).graph.print_tabular()
    got = capsys.readouterr().out
    torch.fx.symbolic_trace(f(torch)).graph.print_tabular()
    want = capsys.readouterr().out
    assert "<built-in method cat of type object at 0x" in got
    assert "<built-in function linear>" in got
    address = re.compile(r"0x[0-9a-f]+")
    assert address.sub("0x?", got) == address.sub("0x?", want)


def test_print_tabular_needs_tabulate(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "tabulate", None)  # as if not installed
    g = ember.fx.symbolic_trace(lambda x: x + 1).graph
    with pytest.raises(ImportError):
        g.print_tabular()



def _annotated(lib):
    from typing import Optional

    class M(lib.nn.Module):
        def forward(self, x, n=3, y=None, sizes=[1]):  # noqa: B006
            return x.relu() * n, x.size(0)
    # (this file's `from __future__ import annotations` would make them strings)
    M.forward.__annotations__ = {"x": lib.Tensor, "n": int, "y": Optional[lib.Tensor],  # noqa: UP045
                                 "sizes": list[int], "return": tuple[lib.Tensor, int]}
    return M()


def test_type_annotations_print_as_torch():
    gm = ember.fx.symbolic_trace(_annotated(ember))
    tgm = torch.fx.symbolic_trace(_annotated(torch))
    assert gm.code == tgm.code
    assert "def forward(self, x : torch.Tensor, n : int = 3, y : typing_Union[torch.Tensor," \
           "NoneType] = None, sizes : list[int] = [1]) -> tuple[torch.Tensor,int]:" in gm.code
    # (typing's repr names the class's module: ember's, unless run as torch)
    assert str(gm.graph).replace("ember.", "torch.") == str(tgm.graph)
    assert gm(ember.ones(2))[1] == 2


def test_proxy_outside_a_trace_records_while_its_tracer_lives():
    import gc

    from ember.core import interpose

    def build(lib):
        graph = lib.fx.Graph()
        tracer = lib.fx.proxy.GraphAppendingTracer(graph)
        x = lib.fx.Proxy(graph.placeholder("x"), tracer)
        y = lib.nn.functional.relu(lib.tanh(x)) * 2
        graph.output(y.node)
        return graph
    graph = build(ember)
    assert str(graph) == str(build(torch))
    gc.collect()
    assert interpose.active is None  # the tracer is gone: ops pay nothing again
    gm = ember.fx.GraphModule(ember.nn.Module(), graph)
    assert gm(ember.tensor([-1.0, 1.0])).tolist() == pytest.approx([0.0, 2 * np.tanh(1.0)])


def test_proxies_of_two_tracers_refuse():
    graph = ember.fx.Graph()
    a = ember.fx.Proxy(graph.placeholder("a"))
    b = ember.fx.Proxy(graph.placeholder("b"))
    with pytest.raises(RuntimeError, match="Found multiple different tracers"):
        ember.cat([a, b])


def test_alias_functions_name_their_nodes():
    def build(lib):
        g = lib.fx.Graph()
        x = g.placeholder("x")
        g.output(g.call_function(lib.arctan, (g.call_function(lib.negative, (x,)),)))
        return lib.fx.GraphModule(lib.nn.Module(), g)
    assert build(ember).code == build(torch).code
    assert ember.arctan is not ember.atan and ember.arctan.__name__ == "arctan"


def test_concrete_args_and_varargs_as_torch():
    def f(x, flag, opt=None):
        return x + 1 if flag else x - 1

    def varargs(*args, **kwargs):
        return args[0] + args[1]
    concrete = {"flag": True, "opt": None}
    gm = ember.fx.symbolic_trace(f, concrete_args=concrete)
    assert gm.code == torch.fx.symbolic_trace(f, concrete_args=concrete).code
    assert gm(ember.ones(2), True).tolist() == [2.0, 2.0]
    assert ember.fx.symbolic_trace(varargs).code == torch.fx.symbolic_trace(varargs).code



def test_interpreter_error_message_as_torch():
    def f(x):
        return x.reshape(5)
    msgs = []
    for lib in (ember, torch):
        with pytest.raises(RuntimeError) as err:
            lib.fx.Interpreter(lib.fx.symbolic_trace(f)).run(lib.ones(2, 3))
        msgs.append(str(err.value).split("\n\n", 1)[1])
    assert msgs[0] == msgs[1]


def test_dead_code_elimination_keeps_what_torch_keeps():
    def build(lib):
        g = lib.fx.Graph()
        x = g.placeholder("x")
        g.call_function(lib.randn, (3,))  # random: advances the generator, kept
        g.call_function(lib.nn.functional.dropout, (x,))
        g.call_method("add_", (x, 1))  # in-place methods are not kept (as torch.fx)
        g.call_function(lib.add, (x, 1))
        g.call_function(lib.bernoulli, (x,))
        g.call_function(lib._assert, (True, "m"))
        g.output(x)
        return g.eliminate_dead_code(), str(g)
    assert build(ember) == build(torch)


@pytest.mark.parametrize("make", [
    lambda nn: nn.Sequential(nn.Linear(3, 2), nn.ReLU()), lambda nn: nn.Linear(3, 2),
    lambda nn: nn.Conv2d(1, 1, 1), lambda nn: nn.LayerNorm(3), lambda nn: nn.Embedding(3, 2)])
def test_torch_nn_modules_traced_as_torch(make):
    """A torch.nn module as the root, and traced through (a tracer with no leaves)."""
    def codes(lib):
        class NoLeaves(lib.fx.Tracer):
            def is_leaf_module(self, m, qualname):
                return False
        m = make(lib.nn)
        through = lib.fx.GraphModule(m, NoLeaves().trace(m)).code
        return lib.fx.symbolic_trace(m).code, through
    assert codes(ember) == codes(torch)


def test_transformer_override_calling_torch_functions():
    """torch.fx's documentation example: a Transformer swapping sigmoid and neg."""
    def run(lib):
        class NegSigmSwap(lib.fx.Transformer):
            def call_function(self, target, args, kwargs):
                if target == lib.sigmoid:
                    return lib.neg(*args, **kwargs)
                return super().call_function(target, args, kwargs)

            def call_method(self, target, args, kwargs):
                if target == "neg":
                    call_self, *args_tail = args
                    return call_self.sigmoid(*args_tail, **kwargs)
                return super().call_method(target, args, kwargs)

        def fn(x):
            return lib.sigmoid(x).neg()
        return NegSigmSwap(lib.fx.symbolic_trace(fn)).transform()
    gm = run(ember)
    assert gm.code == run(torch).code
    x = ember.tensor([0.5, -1.0])
    np.testing.assert_allclose(gm(x).numpy(), ember.sigmoid(ember.neg(x)).numpy())


def test_generated_code_runs_with_ember_names_and_unpickles():
    gm = ember.fx.symbolic_trace(lambda x: x.to(ember.float64).contiguous(
        memory_format=ember.channels_last) + ember.tensor(1.0, dtype=ember.float64))
    assert "x.to(ember.float64)" in gm.code  # (as `torch.float64` when run as torch)
    x = ember.ones(1, 1, 1, 2)  # (channels_last needs rank 4)
    assert gm(x).dtype is ember.float64
    assert pickle.loads(pickle.dumps(gm))(x).tolist() == [[[[2.0, 2.0]]]]


def test_nodes_order_as_the_graph():
    def order(lib):
        gm = lib.fx.symbolic_trace(lambda x: (x + 1).relu() * 2)
        nodes = list(gm.graph.nodes)
        with gm.graph.inserting_before(nodes[1]):
            early = gm.graph.call_function(lib.neg, (nodes[0],))
        return [n.name for n in sorted(gm.graph.nodes, reverse=True)], early < nodes[1], \
            nodes[2] >= nodes[1]
    assert order(ember) == order(torch)


def test_node_arguments_refuse_mutation_as_torch():
    def build(lib):
        g = lib.fx.Graph()
        x = g.placeholder("x")
        n = g.call_function(lib.cat, ([x, x],), {"dim": 0})
        with pytest.raises(TypeError) as err:
            n.args[0].append(x)
        with pytest.raises(TypeError):
            n.kwargs["dim"] = 1
        n.args = ([x],)  # the way to change them
        return str(err.value), type(n.args[0]).__name__, type(n.kwargs).__name__, len(x.users)
    assert build(ember) == build(torch)


def test_linalg_and_fft_functions_named_as_torch():
    def f(lib):
        def k(x):
            return lib.linalg.norm(x) + lib.fft.fft(x).real.sum()
        return k
    gm = ember.fx.symbolic_trace(f(ember))
    assert gm.code == torch.fx.symbolic_trace(f(torch)).code  # torch._C._linalg.linalg_norm
    assert gm(ember.tensor([3.0, 4.0])).item() == pytest.approx(5.0 + 7.0 - 1.0)


def _two_layers(lib):
    class M(lib.nn.Module):
        def __init__(self):
            super().__init__()
            lib.manual_seed(0)
            self.l1 = lib.nn.Linear(4, 4)
            self.l2 = lib.nn.Linear(4, 2)

        def forward(self, x, y):
            a = self.l1(x) + y
            b = lib.relu(a)
            return self.l2(b), a

    return M()


def test_split_module_as_torch():
    from torch.fx.passes.split_module import split_module as torch_split

    from ember.fx.passes.split_module import split_module

    m, tm = _two_layers(ember), _two_layers(torch)
    gm, tgm = ember.fx.symbolic_trace(m), torch.fx.symbolic_trace(tm)

    def cb(node):
        return 0 if node.name in ("l1", "add") else 1

    sm, tsm = split_module(gm, m, cb), torch_split(tgm, tm, cb)
    assert str(sm.graph) == str(tsm.graph)
    assert str(sm) == str(tsm)
    assert sm.submod_0.code == tsm.submod_0.code and sm.submod_1.code == tsm.submod_1.code
    x, y = np.ones((2, 4), np.float32), np.full((2, 4), -0.5, np.float32)
    for a, b in zip(sm(ember.tensor(x), ember.tensor(y)), tsm(torch.tensor(x), torch.tensor(y))):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="cycle"):  # 0 -> 1 -> 0
        split_module(gm, m, lambda n: 1 if n.name == "relu" else 0)


def test_to_folder_writes_an_importable_module(tmp_path):
    import importlib
    import sys

    m = _two_layers(ember)
    gm = ember.fx.symbolic_trace(m)
    folder = tmp_path / "saved_fx"
    gm.to_folder(folder, "MyMod")
    assert sorted(p.name for p in folder.iterdir()) == ["__init__.py", "module.py",
                                                         "state_dict.pt"]
    source = (folder / "module.py").read_text()
    assert "class MyMod(torch.nn.Module):" in source
    assert "setattr(self, 'l1', Linear(in_features=4, out_features=4, bias=True))" in source
    sys.path.insert(0, str(tmp_path))
    try:
        mod = importlib.import_module("saved_fx").MyMod()
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("saved_fx", None)
        sys.modules.pop("saved_fx.module", None)
    x = ember.ones(2, 4)
    for a, b in zip(mod(x, x), m(x, x)):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy())


def test_make_fx_traces_a_function_into_a_graph_module():
    """torch.fx.experimental.proxy_tensor.make_fx: a GraphModule of the function traced
    on example inputs, computing what the function does (and what PyTorch's computes)."""
    torch = pytest.importorskip("torch")
    from torch.fx.experimental.proxy_tensor import make_fx as torch_make_fx

    from ember.fx.experimental.proxy_tensor import make_fx

    def f(a):
        b = a + 1
        c = b.view(-1)
        c.add_(1)
        return b * a

    gm = make_fx(f)(ember.ones(2, 2))
    assert isinstance(gm, ember.fx.GraphModule)
    assert "view" in gm.code and "add_" in gm.code
    x = np.arange(4.0).reshape(2, 2)
    want = torch_make_fx(f)(torch.ones(2, 2))(torch.tensor(x))
    assert gm(ember.tensor(x)).tolist() == want.tolist()
    with pytest.raises(AssertionError, match="tracing_mode must be real/fake/symbolic, got other"):
        make_fx(f, tracing_mode="other")
