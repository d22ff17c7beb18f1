"""torch.func's transforms in ember (ember/transforms.py, exported by ember.func): grad,
grad_and_value, vjp, jvp, jacrev, jacfwd, hessian, vmap and stack_module_state, against
torch.func: values, result structure (pytrees), composition (grad of grad, vmap of grad:
per-sample gradients, jacfwd of jacrev), and errors by type and message."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import transforms as ET

torch = pytest.importorskip("torch")
TF = torch.func


def _t(lib, a):
    return lib.tensor(np.asarray(a, dtype=np.float64))


def _same(got, expected) -> None:
    if isinstance(expected, dict):
        assert isinstance(got, dict) and got.keys() == expected.keys()
        for k in expected:
            _same(got[k], expected[k])
        return
    if isinstance(expected, (tuple, list)):
        assert type(got) is type(expected) and len(got) == len(expected), (got, expected)
        for g, e in zip(got, expected):
            _same(g, e)
        return
    if not isinstance(expected, torch.Tensor):
        assert got == expected
        return
    assert isinstance(got, ember.Tensor), got
    assert tuple(got.shape) == tuple(expected.shape)
    assert got.requires_grad == expected.requires_grad, (got, expected)
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), rtol=1e-10,
                               atol=1e-12)


RNG = np.random.default_rng(0)
X, Y, W = RNG.standard_normal(4), RNG.standard_normal(4), RNG.standard_normal((3, 4))
A53, B53 = RNG.standard_normal((5, 3)), RNG.standard_normal((5, 3))
A46, A42, A23, B23 = (RNG.standard_normal(s) for s in ((4, 6), (4, 2), (2, 3), (2, 3)))
A54 = RNG.standard_normal((5, 4))


def _both(make):
    """`make(lib, transforms)` for ember and for torch."""
    return make(ember, ET), make(torch, TF)


CASES = {
    "grad": lambda L, T: T.grad(lambda x: (x.sin() * x).sum())(_t(L, X)),
    "grad_argnums": lambda L, T: T.grad(lambda x, y: (x * y.exp()).sum(), argnums=(0, 1))(
        _t(L, X), _t(L, Y)),
    "grad_negative_argnum": lambda L, T: T.grad(lambda x, y: (x * y).sum(), argnums=-1)(
        _t(L, X), _t(L, Y)),
    "grad_pytree": lambda L, T: T.grad(lambda p, x: (p["w"] @ x + p["b"]).pow(2).sum())(
        {"w": _t(L, W), "b": _t(L, X[:3])}, _t(L, X)),
    "grad_aux": lambda L, T: T.grad(lambda x: ((x ** 2).sum(), x.mean()), has_aux=True)(
        _t(L, X)),
    "grad_and_value": lambda L, T: T.grad_and_value(lambda x: (x ** 3).sum())(_t(L, X)),
    "grad_and_value_aux": lambda L, T: T.grad_and_value(
        lambda x: ((x ** 3).sum(), {"m": x.max()}), has_aux=True)(_t(L, X)),
    "grad_of_grad": lambda L, T: T.grad(T.grad(lambda x: x.sin() * x))(_t(L, 0.7)),
    "unused_input": lambda L, T: T.grad(lambda x, y: (x * 2).sum(), argnums=(0, 1))(
        _t(L, X), _t(L, Y)),
    "vjp": lambda L, T: (lambda out: (out[0], out[1](_t(L, X))))(
        T.vjp(lambda x: x.exp() * 2, _t(L, Y))),
    "vjp_two": lambda L, T: (lambda out: (out[0], out[1]((_t(L, X[:3]), _t(L, 1.5)))))(
        T.vjp(lambda w, x: (w @ x, x.sum()), _t(L, W), _t(L, X))),
    "jvp": lambda L, T: T.jvp(lambda x: x.exp() * x, (_t(L, X),), (_t(L, Y),)),
    "jvp_two": lambda L, T: T.jvp(lambda w, x: w @ x, (_t(L, W), _t(L, X)),
                                  (_t(L, W * 0.5), _t(L, Y))),
    "jacrev": lambda L, T: T.jacrev(lambda x: x.sin() * x.sum())(_t(L, X)),
    "jacrev_two": lambda L, T: T.jacrev(lambda w, x: (w @ x).tanh(), argnums=(0, 1))(
        _t(L, W), _t(L, X)),
    "jacrev_outputs": lambda L, T: T.jacrev(lambda x: (x ** 2, x.sum()))(_t(L, X)),
    "jacfwd": lambda L, T: T.jacfwd(lambda x: x.cos() * x)(_t(L, X)),
    "jacrev_aux": lambda L, T: T.jacrev(lambda x: (x ** 2, x.sum()), has_aux=True)(_t(L, X)),
    "hessian": lambda L, T: T.hessian(lambda x: (x ** 3).sum() + (x[0] * x[1]))(_t(L, X)),
    "vmap": lambda L, T: T.vmap(L.dot)(_t(L, A53), _t(L, B53)),
    "vmap_in_dims": lambda L, T: T.vmap(lambda w, x: w @ x, in_dims=(None, 1))(
        _t(L, W), _t(L, A46)),
    "vmap_out_dims": lambda L, T: T.vmap(lambda x: (x * 2, x.sum()), out_dims=(1, 0))(
        _t(L, A53)),
    "vmap_nested": lambda L, T: T.vmap(T.vmap(L.mul))(
        _t(L, A23), _t(L, B23)),
    "vmap_dict": lambda L, T: T.vmap(lambda d: d["a"] + d["b"].sum(),
                                     in_dims=({"a": 0, "b": None},))(
        {"a": _t(L, A42), "b": _t(L, X)}),
    "vmap_grad": lambda L, T: T.vmap(T.grad(lambda w, x: (w @ x).tanh().sum()),
                                     in_dims=(None, 0))(_t(L, W), _t(L, A54)),
    "jacfwd_jacrev": lambda L, T: T.jacfwd(T.jacrev(lambda x: x.sin().prod()))(_t(L, X)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_transform_matches_torch_func(name) -> None:
    got, expected = _both(CASES[name])
    _same(got, expected)


def test_per_sample_gradients_equal_a_loop_of_backward_passes() -> None:
    """The torch.func tutorial's per-sample gradients: vmap over grad of a loss of
    parameters given as a dict (a functional forward written out)."""
    ember.manual_seed(0)
    w, b = ember.randn(3, 8), ember.randn(3)
    data, targets = ember.randn(6, 8), ember.randint(0, 3, (6,))

    def loss(params, x, y):
        logits = x.unsqueeze(0) @ params["w"].t() + params["b"]
        return ember.nn.functional.cross_entropy(logits, y.unsqueeze(0))

    grads = ET.vmap(ET.grad(loss), in_dims=(None, 0, 0))({"w": w, "b": b}, data, targets)
    assert tuple(grads["w"].shape) == (6, 3, 8) and tuple(grads["b"].shape) == (6, 3)
    for i in range(6):
        wi, bi = w.clone().requires_grad_(), b.clone().requires_grad_()
        loss({"w": wi, "b": bi}, data[i], targets[i]).backward()
        assert ember.allclose(grads["w"][i], wi.grad, atol=1e-6)
        assert ember.allclose(grads["b"][i], bi.grad, atol=1e-6)


def test_stack_module_state_stacks_parameters_as_new_leaves() -> None:
    models = [ember.nn.Linear(3, 2) for _ in range(4)]
    params, buffers = ET.stack_module_state(models)
    assert set(params) == {"weight", "bias"} and buffers == {}
    assert tuple(params["weight"].shape) == (4, 2, 3)
    assert params["weight"].requires_grad and params["weight"].is_leaf
    assert ember.equal(params["bias"][2], models[2].bias.detach())


def _error(make, lib, T):
    try:
        make(lib, T)
    except Exception as err:  # noqa: BLE001 - compared by type and message
        return type(err).__name__, str(err)
    return None


@pytest.mark.parametrize("make", [
    lambda L, T: T.vmap(L.add)(L.ones(2), L.ones(3)),
    lambda L, T: T.vmap(lambda x: 1.0)(L.ones(2)),
    lambda L, T: T.vmap(lambda x: x, in_dims=2)(L.ones(2, 3)),
    lambda L, T: T.vmap(lambda x: x, in_dims=None)(L.ones(2)),
    lambda L, T: T.vmap(lambda x, y: x, in_dims=(0,))(L.ones(2), L.ones(2)),
    lambda L, T: T.vmap(lambda x: x, randomness="sometimes")(L.ones(2)),
    lambda L, T: T.grad(lambda x: x * 2)(L.ones(3)),
    lambda L, T: T.grad(lambda x: x.sum(0, keepdim=True))(L.ones(3)),  # one element, 1-d
    lambda L, T: T.grad(lambda x: x.sum(), argnums=2)(L.ones(3)),
    lambda L, T: T.grad(lambda x: x.sum(), has_aux=True)(L.ones(3)),
    # cotangents of another pytree structure than the outputs
    lambda L, T: T.vjp(lambda x: {"a": x.sin(), "b": x}, L.ones(3))[1](L.ones(3)),
    lambda L, T: T.vjp(lambda x: (x.sin(), x), L.ones(3))[1]([L.ones(3), L.ones(3)]),
    lambda L, T: T.vjp(L.sin, L.ones(3))[1]((L.ones(3),)),
])
def test_errors_match_torch_func(make) -> None:
    assert _error(make, ember, ET) == _error(make, torch, TF)


_IMAGES = np.arange(2 * 6 * 4 * 3, dtype=np.float32).reshape(2, 6, 4, 3)


@pytest.mark.parametrize("pattern,lengths", [
    ("b h w c -> (b h) w c", {}), ("b h w c -> h (b w) c", {}), ("b h w c -> b c h w", {}),
    ("b (h1 h) (w1 w) c -> (b h1 w1) h w c", {"h1": 2, "w1": 2}),
    ("b (h h1) (w w1) c -> b h w (c h1 w1)", {"h1": 2, "w1": 2}),
    ("b ... c -> c b ...", {}), ("b ... -> (...) b", {}), ("b h w c -> b 1 h w c ()", {}),
    # errors: PyTorch's parser's and its first-class dimensions'
    ("b h w -> b", {}), ("b h w c -> b h w", {}), ("b h w c - b", {}),
    ("b h w c -> b h w c 2", {}), ("b b h c -> b", {}), ("b (h (w)) c -> b", {}),
    ("b h -> b h ...", {}), ("b (h h2) w c -> b h h2 w c", {"h2": 4}),
    ("b (h h2) w c -> b h h2 w c", {}), ("b h w c -> b h w c", {"h": 5}),
])
def test_rearrange_as_torch_func(pattern, lengths):
    def run(L):
        try:
            out = L.func.rearrange(L.tensor(_IMAGES), pattern, **lengths)
        except Exception as err:  # noqa: BLE001 - compared by type name and message
            return type(err).__name__, str(err)
        return tuple(out.shape), out.numpy().tolist()

    assert run(ember) == run(torch)


def test_rearrange_stacks_a_sequence_and_functionalize_keeps_values():
    parts = [np.full((2, 3), float(i)) for i in range(4)]
    got = ember.func.rearrange([ember.tensor(p) for p in parts], "n a b -> a (n b)")
    want = torch.func.rearrange([torch.tensor(p) for p in parts], "n a b -> a (n b)")
    assert got.tolist() == want.tolist()

    def f(a):
        b = a.view(-1)
        b.add_(1)
        return a

    x, y = ember.zeros(2), torch.zeros(2)
    assert ember.func.functionalize(f)(x).tolist() == torch.func.functionalize(f)(y).tolist()
    assert x.tolist() == y.tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match="received invalid argument for remove=views"):
        ember.func.functionalize(f, remove="views")
