"""Forward-mode AD (ember.autograd.forward_ad, torch.autograd.forward_ad) against PyTorch:
the tangents of many ops (elementwise, matmul, reductions, softmax, conv, indexing, views,
in-place writes), a dual tensor that also requires grad, nn modules through
functional_call, the level rules and every error by type and message, and Hypothesis over
shapes including 0-d and zero-size tensors."""
from __future__ import annotations

import gc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
import ember.autograd.forward_ad as efw

torch = pytest.importorskip("torch")
tfw = torch.autograd.forward_ad


def _pair(shape, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape), rng.standard_normal(shape)


def _tangent_of(lib, fw, fn, arrays, tangents):
    """fn's outputs' tangents, with every input made dual, in `lib` (ember or torch)."""
    with fw.dual_level():
        duals = [fw.make_dual(lib.tensor(a), lib.tensor(t)) for a, t in zip(arrays, tangents)]
        out = fn(lib, *duals)
        outs = out if isinstance(out, tuple) else (out,)
        result = []
        for o in outs:
            primal, tangent = fw.unpack_dual(o)
            result.append((primal.detach().numpy().copy(),
                           None if tangent is None else tangent.detach().numpy().copy()))
    return result


def _check(fn, *shapes, seed=0, rtol=1e-9, atol=1e-10, positive=False):
    arrays, tangents = [], []
    for i, shape in enumerate(shapes):
        a, t = _pair(shape, seed + i)
        arrays.append(np.abs(a) + 0.5 if positive else a)
        tangents.append(t)
    got = _tangent_of(ember, efw, fn, arrays, tangents)
    expected = _tangent_of(torch, tfw, fn, arrays, tangents)
    assert len(got) == len(expected)
    for (gp, gt), (ep, et) in zip(got, expected):
        np.testing.assert_allclose(gp, ep, rtol=rtol, atol=atol)
        if et is None:
            assert gt is None
        else:
            assert gt is not None
            assert gt.shape == et.shape
            np.testing.assert_allclose(gt, et, rtol=rtol, atol=atol)


def _conv(lib, x, w):
    return lib.nn.functional.conv2d(x, w, padding=1, stride=2)


def _setitem(lib, x, v):
    y = x.clone()
    y[1:3] = v
    return y


def _view_write(lib, x, v):
    y = x * 1.0
    y[0].mul_(v)  # through a view: the base's tangent changes at the view's place
    return y


def _index_add(lib, x):
    return x[lib.tensor([0, 2, 2])] * 2


OPS = {
    "sin": (lambda lib, x: x.sin(), [(3, 4)]),
    "exp_tanh": (lambda lib, x: x.exp() + x.tanh(), [(5,)]),
    "sigmoid_relu": (lambda lib, x: lib.sigmoid(x) * lib.relu(x), [(6,)]),
    "log_sqrt": (lambda lib, x: x.log() + x.sqrt(), [(4,)]),
    "pow": (lambda lib, x, y: x ** y, [(3,), (3,)]),
    "scalar_arith": (lambda lib, x: 3.0 / (x * 2 - 1) + x ** 3, [(2, 3)]),
    "div_broadcast": (lambda lib, x, y: x / (y * y + 1), [(2, 3), (3,)]),
    "where_max": (lambda lib, x, y: lib.where(x > y, x, y * 2) + lib.maximum(x, y),
                  [(4,), (4,)]),
    "matmul": (lambda lib, a, b: a @ b, [(3, 4), (4, 2)]),
    "bmm": (lambda lib, a, b: lib.bmm(a, b), [(2, 3, 4), (2, 4, 5)]),
    "linear": (lambda lib, x, w, b: lib.nn.functional.linear(x, w, b), [(5, 3), (4, 3), (4,)]),
    "sum_mean": (lambda lib, x: (x.sum(0), x.mean(), x.sum(dim=1, keepdim=True)), [(3, 4)]),
    "amax_prod": (lambda lib, x: (x.amax(1), x.prod(0)), [(3, 4)]),
    "var_norm": (lambda lib, x: (x.var(0), x.norm(), x.std()), [(4, 3)]),
    "softmax": (lambda lib, x: (lib.softmax(x, 1), lib.log_softmax(x, 0)), [(3, 5)]),
    "layer_norm": (lambda lib, x, w: lib.nn.functional.layer_norm(x, (4,), w), [(3, 4), (4,)]),
    "cross_entropy": (lambda lib, x: lib.nn.functional.cross_entropy(
        x, lib.tensor([1, 0, 3])), [(3, 4)]),
    "conv2d": (_conv, [(2, 3, 6, 6), (4, 3, 3, 3)]),
    "max_pool": (lambda lib, x: lib.nn.functional.max_pool2d(x, 2), [(1, 2, 4, 4)]),
    "getitem": (lambda lib, x: (x[1], x[:, 1:3], x[..., -1], x[None, 0]), [(3, 4)]),
    "advanced_index": (_index_add, [(3, 2)]),
    "views": (lambda lib, x: (x.reshape(6, 2), x.transpose(0, 1), x.permute(2, 0, 1),
                              x.unsqueeze(0).expand(2, 3, 2, 2), x.narrow(0, 1, 2),
                              x.view(-1), x.flatten(1)), [(3, 2, 2)]),
    "cat_stack": (lambda lib, x, y: (lib.cat([x, y]), lib.stack([x, y], 1)), [(2, 3), (2, 3)]),
    "cumsum_flip": (lambda lib, x: x.cumsum(0).flip(0), [(5,)]),
    "setitem": (_setitem, [(4, 3), (2, 3)]),
    "inplace_view": (_view_write, [(3, 4), (4,)]),
    "inplace_chain": (lambda lib, x: x.clone().mul_(2).add_(x).sin_(), [(3,)]),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_tangents_match_torch(name):
    fn, shapes = OPS[name]
    _check(fn, *shapes, positive=name in ("log_sqrt", "pow"))


def test_integer_and_bool_results_have_no_tangent():
    _check(lambda lib, x: (x.argmax(), x > 0, x.sum()), (4,))


def test_make_dual_aliases_and_unpack_returns_the_tangent_itself():
    x, t = ember.randn(3), ember.randn(3)
    with efw.dual_level() as level:
        assert level == 0
        d = efw.make_dual(x, t)
        assert d is not x
        assert efw.unpack_dual(d).tangent is t
        d.add_(1.0)  # the dual shares x's storage
        np.testing.assert_allclose(x.numpy(), d.numpy())
        unpacked = efw.unpack_dual(d)
        assert isinstance(unpacked, efw.UnpackedDualTensor) and isinstance(unpacked, tuple)
        assert unpacked._fields == ("primal", "tangent")
        np.testing.assert_allclose(unpacked.tangent.numpy(), t.numpy())
        assert efw.unpack_dual(unpacked.primal).tangent is None  # the primal is plain
        assert efw.unpack_dual(x).tangent is None
        assert efw.unpack_dual(x).primal is not x  # a view, as torch's _fw_primal
        out = d * 2
    # leaving the level deletes the tangents
    assert efw.unpack_dual(out) == (out, None)
    assert efw.unpack_dual(d).tangent is None


def test_tangent_is_printed_as_torch():
    with efw.dual_level(), tfw.dual_level():
        d = efw.make_dual(ember.tensor([1.0, 2.0]), ember.tensor([0.5, -1.0]))
        td = tfw.make_dual(torch.tensor([1.0, 2.0]), torch.tensor([0.5, -1.0]))
        assert repr(d) == repr(td)
        assert repr(d * 2) == repr(td * 2)
        p = ember.tensor([1.0], requires_grad=True)
        tp = torch.tensor([1.0], requires_grad=True)
        assert repr(efw.make_dual(p, ember.ones(1))) == repr(tfw.make_dual(tp, torch.ones(1)))


def _errors(lib, fw):
    """Each misuse's (error type, message) in `lib`."""
    found = []

    def trying(f):
        try:
            f()
        except Exception as exc:  # noqa: BLE001 - the error is the result
            found.append((type(exc).__name__, str(exc)))
        else:
            found.append(None)
    x, t = lib.randn(3), lib.randn(3)
    trying(lambda: fw.make_dual(x, t))  # no level
    trying(lambda: fw.exit_dual_level())
    trying(lambda: fw.exit_dual_level(level=0))
    with fw.dual_level():
        trying(lambda: fw.make_dual(x, lib.randn(2)))
        trying(lambda: fw.make_dual(lib.arange(3), lib.arange(3)))
        trying(lambda: fw.make_dual(x, lib.arange(3)))
        trying(lambda: fw.make_dual(x, t, level=5))
        trying(lambda: fw.enter_dual_level())  # nested
        trying(lambda: fw.dual_level().__enter__())
        d = fw.make_dual(x, t)
        trying(lambda: fw.make_dual(d, t))
        trying(lambda: fw.unpack_dual(d, level=3))
        trying(lambda: fw.exit_dual_level(level=3))
    return found


def test_errors_match_torch():
    got, expected = _errors(ember, efw), _errors(torch, tfw)
    assert [g and (g[0], g[1].replace("ember.", "torch.")) for g in got] == expected
    assert all(e is not None for e in expected)


def test_enter_and_exit_by_hand_and_level_reuse():
    assert efw.enter_dual_level() == 0
    d = efw.make_dual(ember.ones(2), ember.ones(2), level=0)
    efw.exit_dual_level(level=0)
    assert efw.unpack_dual(d).tangent is None
    assert efw.enter_dual_level() == 0  # the same level number again, as torch
    efw.exit_dual_level()


def test_dual_level_is_a_decorator():
    @efw.dual_level()
    def f():
        d = efw.make_dual(ember.tensor([2.0]), ember.tensor([1.0]))
        return efw.unpack_dual(d * d).tangent
    assert f().tolist() == [4.0]
    with pytest.raises(RuntimeError, match="no level exists"):
        efw.make_dual(ember.ones(1), ember.ones(1))


def test_no_grad_does_not_stop_tangents():
    _check(lambda lib, x: _under_no_grad(lib, lambda: (x * 3).exp()), (3,))


def _under_no_grad(lib, f):
    with lib.no_grad():
        return f()


def test_dual_tensor_that_requires_grad():
    """Backward AD through forward AD: the tangent is differentiable in the primal."""
    results = []
    for lib, fw in ((ember, efw), (torch, tfw)):
        p = lib.tensor([0.3, -1.2, 2.0], dtype=lib.float64, requires_grad=True)
        with fw.dual_level():
            d = fw.make_dual(p, lib.ones(3, dtype=lib.float64))
            out = (d.sin() * d).sum()
            primal, jv = fw.unpack_dual(out)
            assert jv.requires_grad and primal.requires_grad
            (g,) = lib.autograd.grad(jv, p, retain_graph=True)
            out.backward()
        results.append((jv.item(), g.numpy(), p.grad.numpy()))
    (ej, eg, epg), (tj, tg, tpg) = results
    np.testing.assert_allclose(ej, tj)
    np.testing.assert_allclose(eg, tg)
    np.testing.assert_allclose(epg, tpg)


def _module_jvp(lib, fw):
    """The tutorial's use: a module's output tangent along a direction in its
    parameters, through functional_call."""
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(4, 5), lib.nn.Tanh(), lib.nn.Linear(5, 2))
    model.double()
    params = {k: v.detach() for k, v in model.named_parameters()}
    x = lib.tensor(np.linspace(-1, 1, 12).reshape(3, 4))
    with fw.dual_level():
        duals = {k: fw.make_dual(v, lib.ones_like(v)) for k, v in params.items()}
        out = lib.func.functional_call(model, duals, (x,))
        return fw.unpack_dual(out).tangent.detach().numpy(), \
            {k: v.detach().numpy() for k, v in params.items()}


def test_nn_module_through_functional_call():
    tangent, params = _module_jvp(ember, efw)
    # the same parameters in torch (the seeds' streams differ): copy them over
    model = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2))
    model.double()
    ours = {k: torch.tensor(v) for k, v in params.items()}
    x = torch.tensor(np.linspace(-1, 1, 12).reshape(3, 4))
    with tfw.dual_level():
        duals = {k: tfw.make_dual(v, torch.ones_like(v)) for k, v in ours.items()}
        out = torch.func.functional_call(model, duals, (x,))
        expected = tfw.unpack_dual(out).tangent.detach().numpy()
    np.testing.assert_allclose(tangent, expected, rtol=1e-10)


def test_custom_function_needs_jvp():
    class Double(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class WithJvp(Double):
        @staticmethod
        def jvp(ctx, t):
            return t * 2

    with efw.dual_level():
        d = efw.make_dual(ember.ones(2), ember.tensor([1.0, 3.0]))
        with pytest.raises(NotImplementedError, match="You must implement the jvp function"):
            Double.apply(d)
        assert efw.unpack_dual(WithJvp.apply(d)).tangent.tolist() == [2.0, 6.0]


def test_level_exit_drops_tangents_and_tensors():
    with efw.dual_level():
        d = efw.make_dual(ember.ones(2), ember.ones(2))
        y = d + 1
        del d
        gc.collect()
    assert efw.unpack_dual(y).tangent is None


def test_no_level_costs_no_tangent_attribute():
    x = ember.ones(2)
    y = x + x
    assert "_fw_tangent" not in y.__dict__


@settings(max_examples=25, deadline=None)
@given(shape=st.lists(st.integers(0, 3), min_size=0, max_size=3),
       op=st.sampled_from(["exp", "mul_self", "sum", "softmax", "transpose", "mean_keep"]))
def test_hypothesis_shapes(shape, op):
    fns = {
        "exp": lambda lib, x: x.exp() * 2,
        "mul_self": lambda lib, x: x * x - x,
        "sum": lambda lib, x: x.sum(),
        "softmax": lambda lib, x: lib.softmax(x, -1) if x.dim() else x.exp(),
        "transpose": lambda lib, x: x.t() if x.dim() <= 2 else x.transpose(0, -1),
        "mean_keep": lambda lib, x: x.sum(-1, keepdim=True) if x.dim() else x,
    }
    _check(fns[op], tuple(shape))


def test_tangent_of_another_layout_is_copied():
    primal, tangent = ember.randn(3, 3), ember.randn(3, 3)
    with efw.dual_level():
        kept = efw.unpack_dual(efw.make_dual(primal, tangent)).tangent
        copied = efw.unpack_dual(efw.make_dual(primal, tangent.T)).tangent
    assert kept is tangent
    assert copied is not tangent and copied.is_contiguous()
    np.testing.assert_array_equal(copied.numpy(), tangent.T.numpy())


def test_gradcheck_checks_forward_ad():
    class Exp(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.result = x.exp()
            return ctx.result

        @staticmethod
        def jvp(ctx, t):
            return t * ctx.result

    class WrongJvp(Exp):
        @staticmethod
        def jvp(ctx, t):
            return t * 2 * ctx.result

    x = ember.randn(2, 3, dtype=ember.float64, requires_grad=True)
    options = dict(check_forward_ad=True, check_backward_ad=False,
                   check_undefined_grad=False, check_batched_grad=False)
    assert ember.autograd.gradcheck(Exp.apply, (x,), **options)
    assert not ember.autograd.gradcheck(WrongJvp.apply, (x,), raise_exception=False, **options)
    assert ember.autograd.gradcheck(lambda t: (t * t).softmax(1), (x,), check_forward_ad=True)


def test_reachable_as_torch_autograd_attribute():
    assert ember.autograd.forward_ad is efw


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_recurrent_layers(kind):
    """nn.LSTM / nn.GRU (a fused custom Function when recording backward) give the
    tangents PyTorch's do, with PyTorch's weights."""
    theirs = getattr(torch.nn, kind)(3, 4, batch_first=True).double()
    ours = getattr(ember.nn, kind)(3, 4, batch_first=True).double()
    ours.load_state_dict({k: ember.tensor(v.detach().numpy())
                          for k, v in theirs.state_dict().items()})
    x, t = _pair((2, 5, 3), 7)
    found = []
    for lib, fw, layer in ((ember, efw, ours), (torch, tfw, theirs)):
        with fw.dual_level():
            out, _ = layer(fw.make_dual(lib.tensor(x), lib.tensor(t)))
            found.append(fw.unpack_dual(out).tangent.detach().numpy())
    np.testing.assert_allclose(found[0], found[1], rtol=1e-9, atol=1e-12)


def test_module_with_full_backward_hook_passes_tangents():
    lin = ember.nn.Linear(2, 2).double()
    lin.register_full_backward_hook(lambda m, gi, go: None)
    with efw.dual_level():
        x = efw.make_dual(ember.ones(1, 2, dtype=ember.float64),
                          ember.tensor([[1.0, 0.0]], dtype=ember.float64))
        tangent = efw.unpack_dual(lin(x)).tangent
    np.testing.assert_allclose(tangent.detach().numpy(), lin.weight.detach().numpy()[:, :1].T)


def _views_follow_their_base(lib, fw):
    with fw.dual_level():
        d = fw.make_dual(lib.tensor([1.0, 2.0, 3.0, 4.0]), lib.ones(4)) * 1.0
        v, w = d[1:3], d.view(2, 2)
        d.mul_(lib.tensor([2.0, 3.0, 4.0, 5.0]))  # the base written: its views' tangents
        first = (fw.unpack_dual(v).tangent.tolist(), fw.unpack_dual(w).tangent.tolist())
        v.add_(fw.make_dual(lib.zeros(2), lib.tensor([10.0, 20.0])))  # a view written
        return first, [fw.unpack_dual(t).tangent.tolist() for t in (d, w, v)]


def test_views_follow_in_place_writes_as_torch():
    assert _views_follow_their_base(ember, efw) == _views_follow_their_base(torch, tfw)
