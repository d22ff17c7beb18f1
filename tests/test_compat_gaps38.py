"""PyTorch-compatibility gaps, round 38: each case checked against torch itself."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _pair(array: np.ndarray) -> tuple:
    return torch.from_numpy(array.copy()), ember.tensor(array.copy())


def _same_bits(expected, got) -> None:
    """Equal in value, dtype and shape, bit for bit (NaN as NaN)."""
    if isinstance(expected, tuple):
        assert len(expected) == len(got)
        for e, g in zip(expected, got):
            _same_bits(e, g)
        return
    assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    assert tuple(got.shape) == tuple(expected.shape)
    e, g = expected.detach().float().numpy(), got.detach().float().numpy()
    np.testing.assert_array_equal(g, e)


# -- 1. var/std/var_mean/std_mean reduce in float64 (PyTorch's CPU kernels) ------------

_SHAPES = [((37, 5), 0), ((37, 5), 1), ((4, 6, 9), (0, 2)), ((300,), None),
           ((2, 3, 4), None), ((64, 1), 0), ((5, 700), 1)]


@pytest.mark.parametrize("shape, dim", _SHAPES)
@pytest.mark.parametrize("correction", [0, 1])
def test_float32_variance_matches_bit_for_bit(shape, dim, correction) -> None:
    array = (np.random.default_rng(len(shape) + correction).standard_normal(shape) * 7 + 100
             ).astype(np.float32)
    t, e = _pair(array)
    for name in ("var", "std"):
        _same_bits(getattr(torch, name)(t, dim, correction=correction),
                   getattr(ember, name)(e, dim, correction=correction))
    for name in ("var_mean", "std_mean"):
        _same_bits(getattr(torch, name)(t, dim, correction=correction, keepdim=True),
                   getattr(ember, name)(e, dim, correction=correction, keepdim=True))


def test_variance_all_reduce_centres_on_the_float32_mean() -> None:
    # var() over everything (one result) takes its deviations from the float32 mean;
    # var_mean's Welford reduction from the float64 one: two different float32 results
    array = (np.float32(1e4) + np.arange(1000, dtype=np.float32) * np.float32(1e-3))
    t, e = _pair(array)
    _same_bits(t.var(), e.var())
    _same_bits(t.var(0), e.var(0))
    _same_bits(torch.var_mean(t), ember.var_mean(e))
    assert e.var().item() != ember.var_mean(e)[0].item()


def test_float32_variance_does_not_overflow() -> None:
    array = np.zeros((4, 3), np.float32)
    array[0, 0] = 1e38
    t, e = _pair(array)
    for fn in (lambda m, x: x.std(0), lambda m, x: x.var(0), lambda m, x: x.std(),
               lambda m, x: m.std_mean(x, 0)):
        _same_bits(fn(torch, t), fn(ember, e))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_variance_rounds_the_float64_result_once(dtype) -> None:
    array = np.random.default_rng(3).standard_normal((100, 5)).astype(np.float32) * 10
    t, e = _pair(array)
    t, e = t.to(getattr(torch, dtype)), e.to(getattr(ember, dtype))
    _same_bits(t.var(0), e.var(0))
    _same_bits(t.var(), e.var())
    _same_bits(t.std(1), e.std(1))
    _same_bits(torch.var_mean(t, 0), ember.var_mean(e, 0))


def test_complex_var_mean_and_std_mean() -> None:
    array = (np.random.default_rng(4).standard_normal((5, 3)) +
             1j * np.random.default_rng(5).standard_normal((5, 3))).astype(np.complex64)
    t, e = _pair(array)
    for name in ("var_mean", "std_mean"):
        expected, got = getattr(torch, name)(t, 0), getattr(ember, name)(e, 0)
        assert str(got[0].dtype).split(".")[-1] == str(expected[0].dtype).split(".")[-1]
        assert str(got[1].dtype).split(".")[-1] == str(expected[1].dtype).split(".")[-1]
        np.testing.assert_allclose(got[0].numpy(), expected[0].numpy(), rtol=1e-6)
        np.testing.assert_allclose(got[1].numpy(), expected[1].numpy(), rtol=1e-6)
    np.testing.assert_allclose(e.var(0).numpy(), t.var(0).numpy(), rtol=1e-6)


def test_float32_variance_gradient() -> None:
    array = np.random.default_rng(6).standard_normal((6, 4)).astype(np.float32) * 3
    t, e = _pair(array)
    t.requires_grad_()
    e.requires_grad_()
    outs = []
    for m, x in ((torch, t), (ember, e)):
        v, s, vm = x.var(0), x.std(), m.var_mean(x, 1)
        assert (type(v.grad_fn).__name__, type(s.grad_fn).__name__) == \
            ("VarBackward0", "StdBackward0")
        (v.sum() + s + vm[0].sum() + vm[1].sum()).backward()
        outs.append((v, s, vm[0], vm[1], x.grad))
    for expected, got in zip(*outs):
        np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(),
                                   rtol=1e-5, atol=1e-6)


# -- 3. in-place view ops' node names --------------------------------------------------

_VIEW_INPLACE = {
    "t_": lambda x: x.t_(),
    "unsqueeze_": lambda x: x.unsqueeze_(0),
    "squeeze_": lambda x: x.unsqueeze(1).squeeze_(),
    "squeeze_ dim": lambda x: x.unsqueeze(1).squeeze_(1),
    "squeeze_ dims": lambda x: x.unsqueeze(1).squeeze_((1,)),
    "transpose_": lambda x: x.transpose_(0, 1),
    "swapdims_": lambda x: x.swapdims_(0, 1),
    "as_strided_": lambda x: x.as_strided_((2, 2), (1, 2)),
}


@pytest.mark.parametrize("name", sorted(_VIEW_INPLACE))
def test_inplace_view_node_names(name) -> None:
    array = np.arange(12, dtype=np.float32).reshape(3, 4)
    results = []
    for lib in (torch, ember):
        leaf = lib.tensor(array, requires_grad=True)
        out = _VIEW_INPLACE[name](leaf * 1)
        out.sum().backward()
        results.append((type(out.grad_fn).__name__, tuple(out.shape), leaf.grad.numpy()))
    assert results[1][:2] == results[0][:2]
    np.testing.assert_array_equal(results[1][2], results[0][2])


# -- 4. a sparse COO leaf through torch.sparse.mm --------------------------------------


@pytest.mark.parametrize("duplicate", [False, True])
def test_sparse_mm_leaf_gradients(duplicate) -> None:
    indices = np.array([[0, 1, 2, 2] + [0] * duplicate, [1, 0, 2, 0] + [1] * duplicate])
    values = np.array([1.0, 2.0, 3.0, 4.0] + [5.0] * duplicate, np.float32)
    weight = np.array([[1.0, -1.0]], np.float32)
    results = []
    for lib in (torch, ember):
        s = lib.sparse_coo_tensor(lib.tensor(indices), lib.tensor(values), (3, 3))
        s.requires_grad_()
        d = lib.arange(6.0).reshape(3, 2).requires_grad_()
        out = lib.sparse.mm(s, d)
        (out * lib.tensor(weight)).sum().backward()
        g = s.grad
        results.append((type(out.grad_fn).__name__, str(g.layout).split(".")[-1],
                        g._indices().tolist(), g._values().tolist(),
                        str(d.grad.layout).split(".")[-1], d.grad.tolist()))
    assert results[1] == results[0]


# -- 5. multinomial on a large vocabulary: PyTorch's draws, vectorised ---------------


@pytest.mark.parametrize("replacement", [False, True])
def test_multinomial_large_vocabulary_matches_torch(replacement) -> None:
    probs = np.random.default_rng(7).random((2, 50000)).astype(np.float32)
    draws = []
    for lib in (torch, ember):
        lib.manual_seed(1)
        p = lib.tensor(probs)
        draws.append((lib.multinomial(p, 20, replacement=replacement).tolist(),
                      lib.multinomial(p.double(), 3, replacement=replacement).tolist(),
                      lib.multinomial(p[0], 1).tolist()))
    assert draws[1] == draws[0]


def test_exponential_and_normal_double_draws_match_torch() -> None:
    results = []
    for lib in (torch, ember):
        lib.manual_seed(3)
        results.append((lib.empty(5000, dtype=lib.float64).exponential_().numpy(),
                        lib.randn(3000, dtype=lib.float64).numpy(),
                        lib.empty(100, dtype=lib.float64).cauchy_().numpy(),
                        lib.empty(100, dtype=lib.float64).log_normal_().numpy()))
    for expected, got in zip(*results):
        np.testing.assert_array_equal(got, expected)


def test_copy_into_a_non_leaf_is_a_copy_backwards_node() -> None:
    a_data = np.arange(12, dtype=np.float32).reshape(3, 4)
    b_data = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    results = []
    for lib in (torch, ember):
        a = lib.tensor(a_data, requires_grad=True)
        b = lib.tensor(b_data, requires_grad=True)
        y = a * 1
        y.copy_(b * 2)
        z = lib.zeros(3, 4)
        z.copy_(b[0])  # broadcast, into a tensor outside the graph
        relu = lib.nn.functional.relu(a * 1, inplace=True)
        (y.sum() + (z * 3).sum()).backward()
        results.append((type(y.grad_fn).__name__, type(z.grad_fn).__name__,
                        type(relu.grad_fn).__name__, a.grad.tolist(), b.grad.tolist()))
    assert results[1] == results[0]


_INPLACE_ACTIVATIONS = {
    "leaky_relu": lambda F, x: F.leaky_relu(x, 0.1, inplace=True),
    "leaky_relu_": lambda F, x: F.leaky_relu_(x),
    "elu": lambda F, x: F.elu(x, inplace=True),
    "selu": lambda F, x: F.selu(x, inplace=True),
    "celu": lambda F, x: F.celu(x, inplace=True),
    "hardsigmoid": lambda F, x: F.hardsigmoid(x, inplace=True),
    "mish": lambda F, x: F.mish(x, inplace=True),
    "rrelu": lambda F, x: F.rrelu(x, inplace=True),
    "rrelu out of place": lambda F, x: F.rrelu(x),
    "rrelu training": lambda F, x: F.rrelu(x, training=True, inplace=True),
}


@pytest.mark.parametrize("name", sorted(_INPLACE_ACTIVATIONS))
def test_inplace_activation_node_names(name) -> None:
    array = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    results = []
    for lib in (torch, ember):
        lib.manual_seed(0)
        leaf = lib.tensor(array, requires_grad=True)
        out = _INPLACE_ACTIVATIONS[name](lib.nn.functional, leaf * 1)
        out.sum().backward()
        results.append((type(out.grad_fn).__name__, leaf.grad.numpy()))
    assert results[1][0] == results[0][0]
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-6)
