"""TorchScript's Python API in ember (`ember.jit.script` and friends run eagerly) and the
`.code` of a traced module or function."""
from __future__ import annotations

import pytest

import ember
from ember import nn


class Branchy(nn.Module):
    """Data-dependent control flow: what scripting keeps and tracing freezes."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        y = self.fc(x)
        if y.sum() > 0:
            return y * 2
        return -y


def test_script_keeps_control_flow_and_shares_the_parameters() -> None:
    model = Branchy()
    scripted = ember.jit.script(model)
    assert type(scripted) is ember.jit.RecursiveScriptModule and scripted is not model
    assert isinstance(scripted, (ember.jit.ScriptModule, nn.Module))
    assert not isinstance(scripted, Branchy) and scripted.original_name == "Branchy"
    assert type(scripted.fc) is ember.jit.RecursiveScriptModule
    assert scripted.fc.weight is model.fc.weight
    assert ember.jit.script(scripted) is scripted
    for sign in (1.0, -1.0):
        x = ember.full((2, 3), sign * 10.0)
        assert ember.equal(scripted(x), model(x))
    with pytest.raises(OSError, match="TorchScript requires source access"):
        ember.jit.script(lambda t: t + 1)


def test_script_as_a_decorator_and_the_compiler_directives() -> None:
    @ember.jit.script
    def double(x: ember.Tensor) -> ember.Tensor:
        return x * 2

    class M(nn.Module):
        @ember.jit.ignore
        def helper(self, x):
            return x + 1

        @ember.jit.unused
        def unused(self, x):
            return x

        @ember.jit.export
        def exported(self, x):
            return x - 1

        @ember.jit.ignore(drop=True)
        def dropped(self, x):
            return x * 3

    m = M()
    x = ember.ones(2)
    assert double(x).tolist() == [2.0, 2.0]
    assert m.helper(x).tolist() == [2.0, 2.0] and m.exported(x).tolist() == [0.0, 0.0]
    assert m.dropped(x).tolist() == [3.0, 3.0]
    assert ember.jit.annotate(list[int], [1, 2]) == [1, 2]
    assert ember.jit.is_scripting() is False and ember.jit.is_tracing() is False
    future = ember.jit.fork(double, x)
    assert ember.jit.wait(future).tolist() == [2.0, 2.0]


def test_script_rejects_what_is_not_code() -> None:
    with pytest.raises(TypeError, match="<class 'int'> is a built-in class"):
        ember.jit.script(3)


def test_is_tracing_is_true_inside_a_trace() -> None:
    seen = []

    def f(x):
        seen.append(ember.jit.is_tracing())
        return x + 1

    ember.jit.trace(f, ember.ones(2), check_trace=False)
    assert seen == [True]


def test_traced_module_code_calls_submodules_in_order() -> None:
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    traced = ember.jit.trace(model, ember.randn(2, 4))
    code = traced.code
    assert code.startswith("def forward(self,\n    input: Tensor) -> Tensor:")
    calls = [line.strip() for line in code.splitlines()[2:]]
    assert calls == ['_0 = getattr(self, "0")(input)', '_1 = getattr(self, "1")(_0)',
                     '_2 = getattr(self, "2")(_1)', "return _2"]
    # the traced module shares the original's parameters and modes, as PyTorch's does
    assert [p is q for p, q in zip(traced.parameters(), model.parameters())] == [True] * 4
    assert traced.eval() is traced and not model.training and not traced.training


def test_traced_function_code_names_its_arguments_and_ops() -> None:
    def f(x, y):
        return (x * y).sum(1) + 1

    code = ember.jit.trace(f, (ember.randn(2, 3), ember.randn(2, 3))).code
    assert code.splitlines()[:2] == ["def f(x: Tensor,", "    y: Tensor) -> Tensor:"]
    assert "ember.mul(x, y)" in code and "ember.sum(_0" in code and "return _2" in code


def test_traced_code_names_parameters_through_self_and_constants() -> None:
    class M(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = nn.Parameter(ember.ones(3))

        def forward(self, x):
            return x * self.w + ember.tensor([1.0, 2.0, 3.0])

    code = ember.jit.trace(M(), ember.randn(2, 3)).code
    assert "ember.mul(x, self.w)" in code and "CONSTANTS.c0" in code


def test_jit_save_and_load_keep_a_whole_module(tmp_path) -> None:
    model = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
    path = tmp_path / "model.pt"
    ember.jit.save(ember.jit.script(model), path)
    loaded = ember.jit.load(path)
    x = ember.randn(4, 3)
    assert type(loaded) is ember.jit.RecursiveScriptModule
    assert ember.equal(loaded(x), model(x))
    traced = ember.jit.trace(model, x)
    ember.jit.save(traced, tmp_path / "traced.pt")
    assert ember.equal(ember.jit.load(tmp_path / "traced.pt")(x), model(x))
    import pickle
    with pytest.raises(pickle.UnpicklingError):  # a whole module: code, so not by default
        ember.load(path)


def test_a_scripted_or_traced_module_saves_itself(tmp_path) -> None:
    """d2l 13.2: `net = torch.jit.script(net); net.save('my_mlp')`, loaded back whole."""
    model = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
    x = ember.randn(4, 3)
    scripted = ember.jit.script(model)
    scripted.save(tmp_path / "my_mlp")
    loaded = ember.jit.load(tmp_path / "my_mlp")
    assert type(loaded) is ember.jit.RecursiveScriptModule
    assert ember.equal(loaded(x), model(x)) and loaded.original_name == "Sequential"
    assert sorted(loaded.state_dict()) == ["0.bias", "0.weight"]
    loaded.save(tmp_path / "again")  # the loaded module is still a scripted one
    assert ember.equal(ember.jit.load(tmp_path / "again")(x), model(x))
    ember.jit.trace(model, x).save(str(tmp_path / "traced"))
    assert ember.equal(ember.jit.load(tmp_path / "traced")(x), model(x))
    with pytest.raises(AttributeError, match="'Sequential' object has no attribute 'save'"):
        _ = nn.Sequential(nn.Linear(3, 2)).save  # only scripted modules have it


def _attributes(lib):
    """A module with a plain attribute, a helper method, a property and an exported one,
    built on `lib`'s nn."""
    class Attributes(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.ReLU())
            self.scale = 3
            self.register_buffer("offset", None)

        def forward(self, x):
            return self.helper(self.body(x)) * self.scale

        def helper(self, y):
            return y + 1

        @property
        def width(self):
            return self.body[0].out_features

        @lib.jit.export
        def exported(self, x):
            return x - 1

    return Attributes()


def test_scripted_modules_are_pytorchs_recursive_script_modules() -> None:
    """Types, printed forms, attributes, methods, modes and errors as torch.jit.script's."""
    torch = pytest.importorskip("torch")
    from ember.core import dtype as dt

    e, t = ember.jit.script(_attributes(ember)), torch.jit.script(_attributes(torch))
    dt.set_api_name("torch")
    try:
        assert repr(e) == repr(t)
    finally:
        dt.set_api_name("ember")
    for s in (e, t):
        assert s.scale == 3 and len(s.body) == 2
        assert type(s.body).__name__ == "RecursiveScriptModule"
        assert sorted(s.state_dict()) == ["body.0.bias", "body.0.weight"]
        assert s.eval() is s and not s.training and not s.body.training
    assert e.width == 3  # (torch's own gives the property object itself)
    e.body[0].weight.data.copy_(ember.tensor(t.body[0].weight.detach().numpy()))
    e.body[0].bias.data.copy_(ember.tensor(t.body[0].bias.detach().numpy()))
    x = [[1.0, -2.0], [0.5, 0.25]]
    assert e(ember.tensor(x)).detach().numpy() == pytest.approx(t(torch.tensor(x)).detach().numpy())
    assert e.exported(ember.ones(1)).tolist() == [0.0]
    for lib, s in ((ember, e), (torch, t)):
        with pytest.raises(AttributeError, match="no attribute 'missing'"):
            _ = s.missing
        with pytest.raises(RuntimeError, match="Freezing expects a ScriptModule as input"):
            lib.jit.freeze(nn.Linear(2, 2) if lib is ember else torch.nn.Linear(2, 2))
        with pytest.raises(RuntimeError, match="only implemented for modules in eval mode"):
            lib.jit.freeze(s.train())
        assert type(lib.jit.optimize_for_inference(s.eval())).__name__ == \
            "RecursiveScriptModule"


def test_scripted_functions_are_script_functions() -> None:
    @ember.jit.script
    def twice(x: ember.Tensor) -> ember.Tensor:
        """Doubles."""
        return x * 2

    assert type(twice) is ember.jit.ScriptFunction and twice.name == "twice"
    assert twice(ember.ones(2)).tolist() == [2.0, 2.0] and "return x * 2" in twice.code
    assert ember.jit.script(twice) is twice
