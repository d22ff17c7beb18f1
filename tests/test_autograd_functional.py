"""`ember.autograd.functional` against `torch.autograd.functional`: vjp, jvp, jacobian,
hessian, vhp and hvp, their values, result structure (Tensor for Tensor, tuples for
tuples), `create_graph`, `strict`, and errors by type and message."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
import ember.autograd.functional as EF

torch = pytest.importorskip("torch")
TF = torch.autograd.functional


def _pair(*arrays):
    """The same float64 values as (ember tensors, torch tensors)."""
    return (tuple(ember.tensor(a, dtype=ember.float64) for a in arrays),
            tuple(torch.tensor(a, dtype=torch.float64) for a in arrays))


def _same(got, expected) -> None:
    """Equal structure (nested tuples, or lists where PyTorch returns lists) and values."""
    if isinstance(expected, (tuple, list)):
        assert type(got) is type(expected) and len(got) == len(expected), (got, expected)
        for g, e in zip(got, expected):
            _same(g, e)
        return
    assert isinstance(got, ember.Tensor), got
    assert tuple(got.shape) == tuple(expected.shape)
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), rtol=1e-10,
                               atol=1e-12)


def _fns(lib):
    return {
        "exp_reducer": lambda x: x.exp().sum(dim=1),
        "exp_adder": lambda x, y: 2 * x.exp() + 3 * y,
        "two_outputs": lambda x, y: (x * y, (x ** 2).sum() + y.sin().sum()),
        "pow_reducer": lambda x: x.pow(3).sum(),
        "pow_adder": lambda x, y: (2 * x.pow(2) + 3 * y.pow(2)).sum() + (x * y).sum(),
        "matmul": lambda x, w: lib.tanh(x @ w),
    }


RNG = np.random.default_rng(0)
A, B = RNG.random((2, 3)), RNG.random((2, 3))
W = RNG.random((3, 4))


@pytest.mark.parametrize("name,arrays", [
    ("exp_reducer", (A,)), ("exp_adder", (A, B)), ("two_outputs", (A, B)),
    ("matmul", (A, W))])
@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
def test_jacobian_matches_torch(name, arrays, strategy) -> None:
    (e, t), fe, ft = _pair(*arrays), _fns(ember)[name], _fns(torch)[name]
    vectorize = strategy == "forward-mode"
    got = EF.jacobian(fe, e if len(e) > 1 else e[0], vectorize=vectorize, strategy=strategy)
    expected = TF.jacobian(ft, t if len(t) > 1 else t[0], vectorize=vectorize,
                           strategy=strategy)
    _same(got, expected)


def test_jacobian_create_graph_keeps_the_result_differentiable() -> None:
    (x,), (tx,) = _pair(A)
    x.requires_grad_(True)
    tx.requires_grad_(True)
    jac = EF.jacobian(lambda v: (v ** 3).sum(dim=1), x, create_graph=True)
    tjac = TF.jacobian(lambda v: (v ** 3).sum(dim=1), tx, create_graph=True)
    assert jac.requires_grad and tjac.requires_grad
    jac.sum().backward()
    tjac.sum().backward()
    _same(x.grad, tx.grad)
    plain = EF.jacobian(lambda v: (v ** 3).sum(dim=1), x)
    assert not plain.requires_grad


@pytest.mark.parametrize("name,arrays", [("pow_reducer", (A,)), ("pow_adder", (A, B))])
def test_hessian_matches_torch(name, arrays) -> None:
    (e, t), fe, ft = _pair(*arrays), _fns(ember)[name], _fns(torch)[name]
    _same(EF.hessian(fe, e if len(e) > 1 else e[0]), TF.hessian(ft, t if len(t) > 1 else t[0]))


@pytest.mark.parametrize("fn_name", ["vjp", "jvp", "vhp", "hvp"])
def test_products_with_a_vector_match_torch(fn_name) -> None:
    e_fn, t_fn = getattr(EF, fn_name), getattr(TF, fn_name)
    if fn_name in ("vhp", "hvp"):
        (e, t), fe, ft = _pair(A, B), _fns(ember)["pow_adder"], _fns(torch)["pow_adder"]
        (ev, tv) = _pair(RNG.random((2, 3)), RNG.random((2, 3)))
    elif fn_name == "vjp":
        (e, t), fe, ft = _pair(A, B), _fns(ember)["two_outputs"], _fns(torch)["two_outputs"]
        (ev, tv) = _pair(RNG.random((2, 3)), np.array(0.7))
    else:
        (e, t), fe, ft = _pair(A, B), _fns(ember)["two_outputs"], _fns(torch)["two_outputs"]
        (ev, tv) = _pair(RNG.random((2, 3)), RNG.random((2, 3)))
    _same(e_fn(fe, e, ev), t_fn(ft, t, tv))
    # single tensors in, single tensors out: no tuples in the result
    (x,), (tx,) = _pair(A)
    if fn_name == "vjp":
        _same(e_fn(_fns(ember)["exp_reducer"], x, ember.ones(2, dtype=ember.float64)),
              t_fn(_fns(torch)["exp_reducer"], tx, torch.ones(2, dtype=torch.float64)))
    else:
        f_e = _fns(ember)["exp_reducer"] if fn_name == "jvp" else _fns(ember)["pow_reducer"]
        f_t = _fns(torch)["exp_reducer"] if fn_name == "jvp" else _fns(torch)["pow_reducer"]
        _same(e_fn(f_e, x, ember.ones(2, 3, dtype=ember.float64)),
              t_fn(f_t, tx, torch.ones(2, 3, dtype=torch.float64)))


def _message(fn, *args, **kwargs) -> tuple[type, str]:
    """The error's type and message, with ember's printed names as torch's (`ember.Size`
    prints as `torch.Size` under the torch alias)."""
    with pytest.raises(Exception) as info:
        fn(*args, **kwargs)
    return type(info.value), str(info.value).replace("ember.", "torch.")


@pytest.mark.parametrize("call", [
    lambda F, lib: F.vjp(lambda x: x * 2, lib.ones(3)),  # v None with 3 outputs
    lambda F, lib: F.jvp(lambda x: x * 2, lib.ones(3)),
    lambda F, lib: F.vjp(lambda x: x * 2, lib.ones(3), lib.ones(4)),  # wrong size
    lambda F, lib: F.jvp(lambda x, y: x * y, (lib.ones(3), lib.ones(3)), (lib.ones(3),)),
    lambda F, lib: F.vjp(lambda x: x * 2, [lib.ones(3)]),  # a list is not a tuple
    lambda F, lib: F.jacobian(lambda x: x, 3.0),
    lambda F, lib: F.jacobian(lambda x: x, lib.ones(2), strategy="sideways"),
    lambda F, lib: F.jacobian(lambda x: x, lib.ones(2), strategy="forward-mode"),
    lambda F, lib: F.jacobian(lambda x: x, lib.ones(2), create_graph=True,
                              strategy="forward-mode", vectorize=True),
    lambda F, lib: F.hessian(lambda x: x * 2, lib.ones(2)),  # not a scalar
    lambda F, lib: F.hessian(lambda x: (x, x), lib.ones(1)),
    lambda F, lib: F.vhp(lambda x: x.sum(), lib.ones(2), lib.ones(3)),
    lambda F, lib: F.hvp(lambda x: x * 3, lib.ones(2), lib.ones(2)),
    lambda F, lib: F.vjp(lambda x, y: x * 2, (lib.ones(2), lib.ones(2)), lib.ones(2),
                         strict=True),  # y unused
    lambda F, lib: F.jacobian(lambda x, y: x * 2, (lib.ones(2), lib.ones(2)), strict=True),
    lambda F, lib: F.vjp(lambda x: lib.ones(2), lib.ones(2), lib.ones(2), strict=True),
    lambda F, lib: F.hessian(lambda x: (x * 2).sum(), lib.ones(2), strict=True),  # linear
])
def test_errors_match_torch(call) -> None:
    assert _message(call, EF, ember) == _message(call, TF, torch)


def test_without_strict_an_unused_input_gets_zeros_as_torch() -> None:
    (x, y), (tx, ty) = _pair(A, B)
    _same(EF.vjp(lambda a, b: (a * 2).sum(), (x, y)), TF.vjp(lambda a, b: (a * 2).sum(), (tx, ty)))
    _same(EF.jacobian(lambda a, b: a * 2, (x, y)), TF.jacobian(lambda a, b: a * 2, (tx, ty)))
    _same(EF.hessian(lambda a: (a * 2).sum(), x), TF.hessian(lambda a: (a * 2).sum(), tx))


def test_the_caller_tensors_keep_their_graph_state() -> None:
    """Inputs are detached copies inside: the caller's tensor gets no .grad and keeps its
    requires_grad flag."""
    x = ember.ones(3)
    EF.jacobian(lambda v: v * 2, x)
    assert not x.requires_grad and x.grad is None
    w = ember.ones(3, requires_grad=True)
    EF.vjp(lambda v: (v * 2).sum(), w)
    assert w.requires_grad and w.grad is None


@settings(max_examples=25, deadline=None)
@given(shape=st.lists(st.integers(0, 3), min_size=0, max_size=2), seed=st.integers(0, 2**16))
def test_jacobian_of_random_shapes_matches_torch(shape, seed) -> None:
    """0-d, zero-size and small shapes: jacobian and hessian of a smooth function."""
    a = np.random.default_rng(seed).standard_normal(shape)
    (x,), (tx,) = _pair(a)

    def f(v):
        return (v.sin() * v).cumsum(0) if v.dim() else v.sin() * v

    if a.size == 0:  # no output element, no row to stack: both raise
        assert _message(EF.jacobian, f, x) == _message(TF.jacobian, f, tx)
        return
    _same(EF.jacobian(f, x), TF.jacobian(f, tx))
    _same(EF.hessian(lambda v: (v ** 3).sum(), x), TF.hessian(lambda v: (v ** 3).sum(), tx))
