"""PyTorch's printed forms and implementation switches: named result tuples, dtype,
Size and type-name strings under either namespace, finfo/iinfo, and the optimizers'
`capturable`/`differentiable`/`fused` options (signatures, reprs, state_dict groups)."""

import inspect
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ember
from ember.core import dtype as dt

torch = pytest.importorskip("torch")


@pytest.fixture
def as_torch():
    """Print under `torch`, as a program run through the alias does."""
    dt.set_api_name("torch")
    yield
    dt.set_api_name("ember")


def _pair(values):
    return ember.tensor(values), torch.tensor(values)


def test_named_results_print_as_pytorch(as_torch):
    e, t = _pair([[3.0, 1.0, 2.0], [0.5, 4.0, 4.5]])
    for name, args in (("max", (1,)), ("min", (1,)), ("sort", (1,)), ("topk", (2,)),
                       ("median", (1,)), ("mode", (1,)), ("kthvalue", (2, 1)),
                       ("cummax", (1,)), ("aminmax", ())):
        got, want = getattr(ember, name)(e, *args), getattr(torch, name)(t, *args)
        assert repr(got) == repr(want), name
        assert type(got).__name__ == type(want).__name__ and isinstance(got, tuple)
    values, indices = ember.max(e, 1)  # still a tuple to unpack, with named fields
    assert ember.equal(values, ember.max(e, 1).values)


def test_named_results_print_under_ember_by_default():
    assert repr(ember.max(ember.tensor([1.0, 2.0]), 0)).startswith("ember.return_types.max(\n")


def test_dtype_size_and_type_names(as_torch):
    e, t = _pair([[1.0, 2.0]])
    for d in ("float16", "bfloat16", "float32", "float64", "int32", "int64", "bool", "uint8"):
        assert repr(getattr(ember, d)) == repr(getattr(torch, d))
        assert repr(ember.zeros(2, dtype=getattr(ember, d))) == \
            repr(torch.zeros(2, dtype=getattr(torch, d)))
    assert repr(e.shape) == repr(t.shape) and repr(e.size()) == repr(t.size())
    assert e.type() == t.type() == "torch.FloatTensor"
    assert e.long().type() == t.long().type()
    assert repr(ember.strided) == repr(torch.strided)


@pytest.mark.parametrize("name", ["torch.DoubleTensor", "ember.LongTensor",
                                  "torch.ByteTensor"])
def test_type_accepts_pytorch_type_names(name):
    got = ember.tensor([1.5, -2.0]).type(name)
    want = torch.tensor([1.5, -2.0]).type(name.replace("ember.", "torch."))
    assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]
    assert got.tolist() == want.tolist()
    with pytest.raises(ValueError, match="invalid type: 'torch.NoSuchTensor'"):
        ember.tensor([1.0]).type("torch.NoSuchTensor")


@pytest.mark.parametrize("d", ["float16", "bfloat16", "float32", "float64"])
def test_finfo_matches_pytorch(d):
    got, want = ember.finfo(getattr(ember, d)), torch.finfo(getattr(torch, d))
    assert repr(got) == repr(want)
    for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution",
                 "dtype"):
        assert getattr(got, attr) == getattr(want, attr), attr
    assert repr(ember.finfo()) == repr(torch.finfo())


@pytest.mark.parametrize("d", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo_matches_pytorch(d):
    got, want = ember.iinfo(getattr(ember, d)), torch.iinfo(getattr(torch, d))
    assert repr(got) == repr(want)
    assert (got.bits, got.min, got.max, got.dtype) == (want.bits, want.min, want.max,
                                                       want.dtype)


def test_finfo_and_iinfo_refuse_the_other_kind(as_torch):
    for fn, tfn, d in ((ember.finfo, torch.finfo, "int32"), (ember.iinfo, torch.iinfo,
                                                             "float32"),
                       (ember.iinfo, torch.iinfo, "bool")):
        with pytest.raises(TypeError) as want:
            tfn(getattr(torch, d))
        with pytest.raises(TypeError) as got:
            fn(getattr(ember, d))
        assert str(got.value) == str(want.value)


OPTIMIZERS = ["ASGD", "Adadelta", "Adagrad", "Adam", "AdamW", "Adamax", "NAdam", "RAdam",
              "RMSprop", "Rprop", "SGD"]


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_optimizer_signature_repr_and_groups_match_pytorch(name):
    ours, theirs = getattr(ember.optim, name), getattr(torch.optim, name)
    ps, pt = inspect.signature(ours).parameters, inspect.signature(theirs).parameters
    assert [(p.name, p.kind, p.default) for p in ps.values()] == \
        [(p.name, p.kind, p.default) for p in pt.values()]
    e = ours([ember.nn.Parameter(ember.ones(2))], lr=0.5)
    t = theirs([torch.nn.Parameter(torch.ones(2))], lr=0.5)
    assert repr(e) == repr(t)
    assert e.state_dict()["param_groups"][0].keys() == t.state_dict()["param_groups"][0].keys()


def test_optimizer_switches_are_checked_as_pytorch_checks_them():
    p = [ember.nn.Parameter(ember.ones(2))]
    tp = [torch.nn.Parameter(torch.ones(2))]
    with pytest.raises(RuntimeError) as want:
        torch.optim.Adam(tp, fused=True, foreach=True)
    with pytest.raises(RuntimeError) as got:
        ember.optim.Adam(p, fused=True, foreach=True)
    assert str(got.value) == str(want.value)
    assert ember.optim.RAdam(p, lr=0.1, differentiable=True).defaults["differentiable"]
    # fused and capturable run the same update as the default
    for kwargs in ({"fused": True}, {"foreach": False}):
        e = [ember.nn.Parameter(ember.tensor([1.0, -2.0]))]
        t = [torch.nn.Parameter(torch.tensor([1.0, -2.0]))]
        eo, to = ember.optim.AdamW(e, lr=0.1, **kwargs), torch.optim.AdamW(t, lr=0.1, **kwargs)
        for _ in range(3):
            (e[0] ** 2).sum().backward()
            (t[0] ** 2).sum().backward()
            eo.step()
            to.step()
        assert e[0].detach().tolist() == pytest.approx(t[0].detach().tolist(), rel=1e-6)


def test_save_accepts_pytorchs_format_switches(tmp_path):
    path = tmp_path / "w.pt"
    ember.save({"w": ember.ones(2)}, path, _use_new_zipfile_serialization=False)
    assert ember.load(path)["w"].tolist() == [1.0, 1.0]


def test_named_results_pickle_and_are_served_by_return_types():
    import pickle

    r = ember.topk(ember.tensor([1.0, 3.0, 2.0]), 2)
    assert type(r) is ember.return_types.topk
    back = pickle.loads(pickle.dumps(r))
    assert type(back) is type(r) and back.indices.tolist() == [1, 2]
    with pytest.raises(AttributeError, match="no attribute 'nosuch'"):
        getattr(ember.return_types, "nosuch")  # noqa: B009


@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 4), (4,), (1, 1, 3, 4)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_node_names_as_pytorch(as_torch, shape, bias):
    """`print(model(x))` shows grad_fn=<AddmmBackward0> for a batch of vectors, but
    <ViewBackward0> for a sequence batch (PyTorch's linear views an addmm back)."""
    outs = []
    for lib in (torch, ember):
        layer = lib.nn.Linear(4, 2, bias=bias)
        with lib.no_grad():
            layer.weight.fill_(0.5)
            if bias:
                layer.bias.fill_(0.25)
        out = layer(lib.ones(shape))
        outs.append((out.grad_fn.name(), repr(out)))
    assert outs[1] == outs[0]


@pytest.mark.parametrize("make", [
    lambda lib: lib.zeros(1, 1, 16, requires_grad=True),
    lambda lib: lib.zeros(15, requires_grad=True), lambda lib: lib.zeros(14, requires_grad=True),
    lambda lib: lib.zeros(14, dtype=lib.float64, requires_grad=True),
    lambda lib: lib.zeros(14, dtype=lib.float64) * lib.ones(1, requires_grad=True),
    lambda lib: lib.ones(2, 10, dtype=lib.bfloat16, requires_grad=True),
    lambda lib: lib.arange(12.0).reshape(3, 4) * lib.ones(1, requires_grad=True),
    lambda lib: lib.tensor([], dtype=lib.int64), lambda lib: lib.tensor([], dtype=lib.bool),
    lambda lib: lib.zeros(0, 3, dtype=lib.int32), lambda lib: lib.tensor([]),
])
def test_suffixes_wrap_at_the_line_width_as_pytorch(as_torch, make):
    """`requires_grad=True`, `dtype=` and `grad_fn=` go to a line of their own where
    the last line would pass 80 characters (a cls token nn.Parameter's print)."""
    assert repr(make(ember)) == repr(make(torch))


def test_type_names_print_as_pytorch(as_torch):
    t, tt = _pair([1.0, 2.0])
    assert repr(type(t)) == repr(type(tt)) == "<class 'torch.Tensor'>"
    assert str(type(t)) == str(type(tt))
    p, tp = ember.nn.Parameter(t), torch.nn.Parameter(tt)
    assert repr(type(p)) == repr(type(tp)) == "<class 'torch.nn.parameter.Parameter'>"
    assert repr(ember.nn.Buffer) == repr(torch.nn.Buffer)
    assert repr(ember.FloatTensor) == repr(torch.FloatTensor) == "<class 'torch.FloatTensor'>"
    for d in ("float32", "float64", "int64", "uint8", "bool"):
        e, r = ember.ones(1, dtype=getattr(ember, d)), torch.ones(1, dtype=getattr(torch, d))
        assert e.type() == r.type(), d
    assert isinstance(p, ember.Tensor) and type(t).__name__ == "Tensor"


def test_type_names_without_the_alias():
    t = ember.ones(1)
    assert repr(type(t)) == "<class 'ember.Tensor'>"
    assert repr(type(ember.nn.Parameter(t))) == "<class 'ember.nn.parameter.Parameter'>"
    assert t.type() == "ember.FloatTensor"


def test_pickles_do_not_depend_on_printed_names(as_torch):
    import io
    import pickle

    t = ember.tensor([1.0, 2.0])
    p = ember.nn.Parameter(t.clone())
    back = pickle.loads(pickle.dumps((t, p)))
    assert type(back[0]) is ember.Tensor and type(back[1]) is ember.nn.Parameter
    assert back[1].requires_grad and back[0].tolist() == [1.0, 2.0]
    buf = io.BytesIO()
    ember.save({"p": p, "t": t}, buf)
    buf.seek(0)
    loaded = ember.load(buf)
    assert type(loaded["p"]) is ember.nn.Parameter and loaded["t"].tolist() == [1.0, 2.0]


def test_torch_version_compares_as_pytorch_s():
    from torch.torch_version import TorchVersion as TV

    from ember.torch_version import TorchVersion

    versions = ["2.13.0+cpu", "2.13.0", "2.13", "1.10", "1.9.1", "2.0.0a0",
                "2.0.0.dev20230101", "2.0.0rc1", "2.0.0.post1", "2.1.0+cu121", "parrot"]
    others = versions + [(2, 0), (1, 13, 1), "2.13.0+ember"]
    for a in versions:
        for b in others:
            for op in ("__lt__", "__le__", "__eq__", "__ge__", "__gt__"):
                assert getattr(TorchVersion(a), op)(b) == getattr(TV(a), op)(b), (a, op, b)
    v = TorchVersion("2.13.0+ember")
    assert isinstance(v, str) and v.split("+")[0] == "2.13.0" and len(v.split(".")) == 3
    assert hash(v) == hash("2.13.0+ember") and {v: 1}["2.13.0+ember"] == 1


def test_version_under_the_alias_and_without(tmp_path):
    script = tmp_path / "v.py"
    script.write_text(
        "import torch\n"
        "from packaging import version\n"
        "print(torch.__version__, type(torch.__version__).__name__,\n"
        "      torch.__version__ >= '1.10', torch.__version__ >= (2, 0),\n"
        "      version.parse(torch.__version__) >= version.parse('2.0'),\n"
        "      torch.version.__version__ == torch.__version__)\n"
        "print(repr(type(torch.ones(1))))\n"
        "from ember import torch_alias\n"
        "torch_alias.uninstall()\n"
        "import ember\n"
        "print(ember.__version__, type(ember.__version__).__name__, repr(type(ember.ones(1))))\n")
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-m", "ember.run", str(script)], cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(root)},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "2.13.0+ember TorchVersion True True True True"
    assert lines[1] == "<class 'torch.Tensor'>"
    assert lines[2] == f"{ember.__version__} str <class 'ember.Tensor'>"
    assert type(ember.__version__) is str


def test_ember_run_gives_the_script_pythons_main_module(tmp_path):
    """`python -m ember.run script.py` as `python script.py`: `__file__` absolute,
    `sys.argv[0]` as typed, the script is `sys.modules["__main__"]` (its classes pickle),
    tracebacks name its lines, and its exit status is the process's."""
    script = tmp_path / "prog.py"
    script.write_text(
        "import pickle, sys, torch\n"
        "class Point:\n"
        "    pass\n"
        "print(__file__, sys.argv[0], __name__, sys.modules['__main__'].Point is Point)\n"
        "print(type(pickle.loads(pickle.dumps(Point()))).__qualname__)\n"
        "def scaled(x: float = 2.0) -> int: ...\n"
        "print(scaled.__annotations__)  # (not strings: ember.run's __future__s stay its own)\n"
        "raise SystemExit(3)\n")
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    runs = [subprocess.run([sys.executable, *launcher, "prog.py"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=120)
            for launcher in ([], ["-m", "ember.run"])]
    assert [r.returncode for r in runs] == [3, 3], runs[1].stderr
    assert runs[1].stdout == runs[0].stdout
    assert runs[1].stdout.startswith(f"{script} prog.py __main__ True\nPoint")
    script.write_text("import torch\n\ndef f():\n    raise ValueError('bad')\n\nf()\n")
    failed = subprocess.run([sys.executable, "-m", "ember.run", "prog.py"], cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=120)
    assert f'File "{script}", line 4, in f' in failed.stderr
    assert "raise ValueError('bad')" in failed.stderr and failed.returncode == 1


# ops written as decompositions name their result's node as PyTorch's kernels do
NODE_NAME_CASES = {
    "mse_loss": lambda L, F, x, t, y: F.mse_loss(x, t, reduction="none"),
    "bce": lambda L, F, x, t, y: F.binary_cross_entropy(L.sigmoid(x), t),
    "bce_with_logits": lambda L, F, x, t, y: F.binary_cross_entropy_with_logits(x, t),
    "smooth_l1": lambda L, F, x, t, y: F.smooth_l1_loss(x, t),
    "huber": lambda L, F, x, t, y: F.huber_loss(x, t, reduction="sum"),
    "nll_loss": lambda L, F, x, t, y: F.nll_loss(x, y),
    "nll_loss_2d": lambda L, F, x, t, y: F.nll_loss(x.view(1, 4, 3), y[None, :3] % 4),
    "gelu": lambda L, F, x, t, y: F.gelu(x, approximate="tanh"),
    "silu": lambda L, F, x, t, y: F.silu(x),
    "mish": lambda L, F, x, t, y: F.mish(x),
    "elu": lambda L, F, x, t, y: F.elu(x),
    "selu": lambda L, F, x, t, y: F.selu(x),
    "leaky_relu": lambda L, F, x, t, y: F.leaky_relu(x, 0.2),
    "relu6": lambda L, F, x, t, y: F.relu6(x),
    "hardswish": lambda L, F, x, t, y: F.hardswish(x),
    "hardsigmoid": lambda L, F, x, t, y: F.hardsigmoid(x),
    "logsigmoid": lambda L, F, x, t, y: F.logsigmoid(x),
    "softplus": lambda L, F, x, t, y: F.softplus(x),
    "glu": lambda L, F, x, t, y: F.glu(x.repeat(1, 2)),
    "layer_norm": lambda L, F, x, t, y: F.layer_norm(x, (3,)),
    "batch_norm": lambda L, F, x, t, y: F.batch_norm(x, None, None, training=True),
    "group_norm": lambda L, F, x, t, y: F.group_norm(x.view(2, 2, 3), 1),
    "embedding": lambda L, F, x, t, y: F.embedding(y % 3, x[:3]),
    "bilinear": lambda L, F, x, t, y: F.interpolate(x.view(1, 1, 4, 3), scale_factor=2,
                                                    mode="bilinear"),
    "nearest_1d": lambda L, F, x, t, y: F.interpolate(x.view(1, 4, 3), scale_factor=2),
    "avg_pool2d": lambda L, F, x, t, y: F.avg_pool2d(x.view(1, 1, 4, 3), 2),
    "conv_transpose2d": lambda L, F, x, t, y: F.conv_transpose2d(x.view(1, 1, 4, 3),
                                                                 L.ones(1, 2, 2, 2)),
    "stack": lambda L, F, x, t, y: L.stack([x, x], 1),
    "repeat": lambda L, F, x, t, y: x.repeat(2, 1),
    "roll": lambda L, F, x, t, y: x.roll(1, 0),
    "squeeze": lambda L, F, x, t, y: x[None].squeeze(),
    "squeeze_dim": lambda L, F, x, t, y: x[None].squeeze(0),
    "squeeze_dims": lambda L, F, x, t, y: x[None].squeeze((0, 1)),
    "masked_fill": lambda L, F, x, t, y: x.masked_fill(x > 0, 0.0),
    "masked_fill_tensor": lambda L, F, x, t, y: x.masked_fill(x > 0, L.tensor(1.0)),
    "std": lambda L, F, x, t, y: x.std(1),
    "var": lambda L, F, x, t, y: x.var(),
    "logsumexp": lambda L, F, x, t, y: x.logsumexp(1),
    "addmm": lambda L, F, x, t, y: L.addmm(t, x, L.eye(3)),
    "addcmul": lambda L, F, x, t, y: L.addcmul(x, x, t),
    "lerp": lambda L, F, x, t, y: L.lerp(x, t, 0.5),
    "lerp_tensor": lambda L, F, x, t, y: L.lerp(x, t, t),
    "cumprod": lambda L, F, x, t, y: x.cumprod(1),
    "nan_to_num": lambda L, F, x, t, y: x.nan_to_num(),
    "sort": lambda L, F, x, t, y: x.sort(1)[0],
    "sort_stable": lambda L, F, x, t, y: x.sort(stable=True)[0],
    "kthvalue": lambda L, F, x, t, y: x.kthvalue(1)[0],
    "log1p": lambda L, F, x, t, y: x.abs().log1p(),
    "max_dim": lambda L, F, x, t, y: x.max(1)[0],
    "min_dim": lambda L, F, x, t, y: L.min(x, dim=0).values,
    "maximum": lambda L, F, x, t, y: L.max(x, t),
    "topk": lambda L, F, x, t, y: x.topk(2)[0],
    "split": lambda L, F, x, t, y: x.split(1, 1)[2],
    "split_sizes": lambda L, F, x, t, y: x.split([1, 2], 1)[1],
    "chunk": lambda L, F, x, t, y: x.chunk(2)[1],
    "unbind": lambda L, F, x, t, y: x.unbind(1)[0],
    "var_mean": lambda L, F, x, t, y: L.var_mean(x, 1)[1],
    "trace": lambda L, F, x, t, y: x[:3].trace(),
    "square": lambda L, F, x, t, y: x.square(),
    "frac": lambda L, F, x, t, y: x.frac(),
    "masked_select": lambda L, F, x, t, y: x.masked_select(x > 0),
    "norm": lambda L, F, x, t, y: x.norm(dim=1),
    "norm_p1": lambda L, F, x, t, y: x.norm(p=1),
    "dist": lambda L, F, x, t, y: L.dist(x, t),
    "cdist": lambda L, F, x, t, y: L.cdist(x, t),
    "adaptive_avg_pool2d_1": lambda L, F, x, t, y: F.adaptive_avg_pool2d(x.view(1, 1, 4, 3), 1),
    "adaptive_avg_pool2d": lambda L, F, x, t, y: F.adaptive_avg_pool2d(x.view(1, 1, 4, 3),
                                                                       (2, 1)),
    "adaptive_max_pool2d": lambda L, F, x, t, y: F.adaptive_max_pool2d(x.view(1, 1, 4, 3), 2),
    "avg_pool1d": lambda L, F, x, t, y: F.avg_pool1d(x.view(1, 4, 3), 2),
    "pixel_shuffle": lambda L, F, x, t, y: F.pixel_shuffle(x.view(1, 4, 3, 1), 2),
    "pixel_unshuffle": lambda L, F, x, t, y: F.pixel_unshuffle(x.view(1, 1, 4, 2 + 1)[..., :2],
                                                               2),
    "rsub": lambda L, F, x, t, y: 1 - x,
    "rdiv": lambda L, F, x, t, y: 1 / x,
    "rpow": lambda L, F, x, t, y: 2 ** x,
    "rmul": lambda L, F, x, t, y: 2 * x,
    "tensor_minus": lambda L, F, x, t, y: t - x,
}


@pytest.mark.parametrize("case", sorted(NODE_NAME_CASES))
def test_decomposed_ops_name_their_nodes_as_pytorch(case):
    names = []
    for lib in (torch, ember):
        lib.manual_seed(0)
        x = lib.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75], [-2.0, 1.0, 0.3],
                        [0.1, -0.2, 0.9]], requires_grad=True)
        t = lib.tensor([[0.2, 0.9, 0.4], [0.7, 0.1, 0.5], [0.3, 0.3, 0.6], [0.8, 0.2, 0.1]])
        y = lib.tensor([0, 2, 1, 0])
        out = NODE_NAME_CASES[case](lib, lib.nn.functional, x, t, y)
        names.append(out.grad_fn.name())
    assert names[1] == names[0]


def test_an_op_returning_its_input_keeps_the_inputs_node_name():
    from ember.core.graph import relabel

    x = ember.ones(2, 3, requires_grad=True) * 2
    relabel(x, "SqueezeBackward0", (x,))  # (an op that returned its input unchanged)
    assert x.grad_fn.name() == "MulBackward0"
    assert x.squeeze().grad_fn.name() == "SqueezeBackward0"
    assert x.grad_fn.name() == "MulBackward0"


@pytest.mark.parametrize("x_shape, bias, grad_x", [((4, 3), True, True), ((4, 3), False, True),
                                                   ((4, 3), True, False), ((2, 4, 3), True, True),
                                                   ((2, 4, 3), False, True), ((3,), True, True),
                                                   ((3,), False, True)])
def test_linear_nodes_walk_as_pytorch(x_shape, bias, grad_x):
    """linear's graph as PyTorch shows it: addmm(bias, input, weight.t()) inside views."""
    torch = pytest.importorskip("torch")

    def walk(fn, depth=0):
        if fn is None or depth > 4:
            return [(depth, None)]
        name = fn.name().replace("ember::", "torch::")
        return [(depth, name)] + [w for f, _ in fn.next_functions for w in walk(f, depth + 1)]

    walks = []
    for lib in (ember, torch):
        lib.manual_seed(0)
        layer = lib.nn.Linear(3, 2, bias=bias)
        x = lib.randn(*x_shape, requires_grad=grad_x)
        out = layer(x.relu() if grad_x else x).sum()
        walks.append(walk(out.grad_fn))
        out.backward()  # (the shown nodes do not run: one backward, the same gradients)
        walks.append(np.round(layer.weight.grad.numpy(), 5).tolist())
    assert walks[0] == walks[2] and walks[1] == walks[3]


def test_messages_that_name_the_package_name_torch_under_the_alias(as_torch):
    """PyTorch's messages that name torch (missing module attributes, a tensor assigned to
    a parameter, a non-tensor in a state dict) say `torch` under the alias."""
    pairs = []
    for mod in (torch, ember):
        got = []
        for namespace in (mod, mod.nn, mod.autograd, mod.cuda, mod.cpu):
            with pytest.raises(AttributeError) as info:
                namespace.no_such_name  # noqa: B018
            got.append(str(info.value))
        linear = mod.nn.Linear(2, 2)
        with pytest.raises(TypeError) as info:
            linear.weight = mod.ones(2, 2)
        got.append(str(info.value))
        with pytest.raises(RuntimeError) as info:
            linear.load_state_dict({"weight": [[1.0, 2.0]] * 2, "bias": mod.zeros(2)})
        got.append(str(info.value))
        with pytest.raises(RuntimeError) as info:
            mod.ones(2).float_power_(2)
        got.append(str(info.value))
        pairs.append(got)
    assert pairs[1] == pairs[0]


_CLASS_NAMES = (
    "import copy, pickle, torch, torch.nn as nn\n"
    "m = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2), nn.LazyLinear(3), nn.ReLU())\n"
    "opt = torch.optim.SGD(m.parameters(), lr=0.1)\n"
    "sched = torch.optim.lr_scheduler.StepLR(opt, 1)\n"
    "for obj in (m, m[1], m[2], opt, sched, torch.ones(1), torch.float32, torch.device('cpu'),\n"
    "            torch.finfo(), torch.utils.data.DataLoader([1]), nn.Module,\n"
    "            nn.MultiheadAttention(4, 2), torch.autograd.Function,\n"
    "            torch.distributions.Normal(0.0, 1.0), nn.Conv2d(1, 1, 1)):\n"
    "    print(obj if isinstance(obj, type) else type(obj))\n"
    "print(type(pickle.loads(pickle.dumps(m))[1]), type(copy.deepcopy(opt)))\n"
    "torch.save(m, 'whole.pt')\n"
    "print(type(torch.load('whole.pt', weights_only=False)))\n")


def test_classes_print_and_pickle_as_pytorch_s_under_the_alias(tmp_path):
    """Under the alias each class prints its PyTorch module (`<class 'torch.nn.modules.
    container.Sequential'>`), and pickles there; ember itself loads such a pickle."""
    script = tmp_path / "names.py"
    script.write_text(_CLASS_NAMES)
    runs = [subprocess.run([sys.executable, *how, str(script)], cwd=tmp_path, text=True,
                           capture_output=True, timeout=120) for how in ([], ["-m", "ember.run"])]
    for run in runs:
        assert run.returncode == 0, run.stderr
    assert runs[1].stdout == runs[0].stdout
    whole = ember.load(tmp_path / "whole.pt", weights_only=False)  # (as ember, not torch)
    assert type(whole) is ember.nn.Sequential and type(whole[1]) is ember.nn.BatchNorm1d
    assert "'ember.nn.modules.container.Sequential'" in repr(type(whole))
