"""Known differences from PyTorch 2.13 (its CPU build is the oracle), closed: NumPy arrays
beside tensors in Python's operators ..."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _outcome(lib, expr, **names):
    """What `expr` gives with `m` as `lib`: (type name, dtype, values) or (error type,
    message)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # (NumPy on torch's __array_wrap__)
        try:
            r = eval(expr, {"m": lib, "np": np, **names})
        except Exception as err:  # noqa: BLE001 - the error is the outcome compared
            return type(err).__name__, str(err)
    if isinstance(r, (lib.Tensor, np.ndarray)):
        values = np.asarray(r.detach() if isinstance(r, lib.Tensor) else r).tolist()
        return type(r).__name__, str(r.dtype).split(".")[-1], values
    return type(r).__name__, r


def _same(expr, **names):
    got = _outcome(ember, expr, **names)
    want = _outcome(torch, expr, **names)
    assert got == want, expr


# == 1. NumPy arrays beside tensors in operators =========================================

NUMPY_OPERANDS = [
    "np.ones(3) + m.ones(3)", "np.ones(3) * m.ones(3)", "np.ones(3) - m.ones(3)",
    "np.ones(3) / m.ones(3)", "np.ones(3) // m.ones(3)", "np.ones(3) % m.ones(3)",
    "np.ones(3) ** m.ones(3)", "np.ones(3) @ m.ones(3)", "np.ones((2, 3)) @ m.ones(3, 2)",
    "np.ones(3) < m.ones(3)", "np.ones(3) >= m.ones(3)", "np.ones(3) == m.ones(3)",
    "np.ones(3) != m.ones(3)", "np.array(2.0) * m.ones(3)",
    "np.ones(3, np.int32) + m.ones(3)", "np.ones(3, bool) & m.ones(3, dtype=m.bool)",
    "m.ones(3) + np.ones(3)", "m.ones(3) * np.ones(3, np.float32)", "m.ones(3) @ np.ones(3)",
    "m.ones(3) > np.ones(3)", "m.ones(3) == np.array([1, 2, 3])", "m.ones(3) / np.ones(3)",
    "m.ones(3, dtype=m.int64) << np.ones(3, np.int64)", "m.ones(3) + [1.0, 2.0, 3.0]",
    "m.ones(3, requires_grad=True) + np.ones(3)", "np.ones(3) / m.ones(3, requires_grad=True)",
    "m.ones(3, requires_grad=True) == np.ones(3)",
    "np.float32(2) * m.ones(3)", "np.float64(2) * m.ones(3)", "np.int64(2) + m.ones(3)",
    "np.float64(2) / m.ones(3, dtype=m.int32)", "m.ones(3, dtype=m.int32) + np.int64(2)",
    "np.float32(2) * m.ones(3, requires_grad=True)", "m.ones(3) + np.bool_(True)",
    "m.ones(3).__add__(np.ones(3))", "m.ones(3).__rmul__(np.ones(3))",
    "m.ones(3).__iadd__(np.ones(3))", "m.ones(3).__iadd__(np.float64(2))",
    "m.ones(3).__lt__(np.ones(3))", "m.ones(3).__rtruediv__(np.ones(3))",
    "np.greater(m.ones(3), 0)", "np.exp(m.ones(3))", "np.exp(m.tensor(1.0))",
    "np.add(np.ones(3), m.ones(3))", "np.add.reduce(m.ones(3))",
]


@pytest.mark.parametrize("expr", NUMPY_OPERANDS)
def test_numpy_operands_as_pytorch(expr):
    _same(expr)


def test_inplace_operator_with_an_array_rebinds_as_pytorch():
    for lib in (ember, torch):
        t = lib.ones(3)
        before = t
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            t += np.ones(3)  # declined: NumPy's `t + array`, a new float64 tensor
        assert t is not before and t.dtype == lib.float64 and before.tolist() == [1.0] * 3
        u = lib.ones(3)
        keep = u
        u += np.float64(2)  # a NumPy scalar is a number: in place
        assert u is keep and u.tolist() == [3.0] * 3


# == 2. a second backward through a node that saved a Python number ======================

TWICE = ["x * 2", "2 * x", "x / 2", "x.mul(2)", "m.mul(x, 2.5)", "x.div(3)", "2 / x",
         "x + 2", "x - 2", "2 - x", "x * x", "x + x", "-x", "x.mean()", "x.sum() * 2",
         "x.lerp(m.zeros(3), 0.5)", "x.add(m.ones(3), alpha=2)", "x.view(3) * 2",
         "x.clone().mul_(2)", "x * m.tensor(2.0)"]


def _backward_twice(lib, expr):
    x = lib.ones(3, requires_grad=True)
    y = eval(expr, {"m": lib, "x": x}).sum()
    y.backward()
    try:
        y.backward()
    except RuntimeError as err:
        return str(err)
    return x.grad.tolist()


@pytest.mark.parametrize("expr", TWICE)
def test_backward_twice_as_pytorch(expr):
    assert _backward_twice(ember, expr) == _backward_twice(torch, expr)


def test_saved_number_fields_as_pytorch():
    for lib in (ember, torch):
        x = lib.ones(3, requires_grad=True)
        y, z = x * 2, x / 3.0
        other = y.grad_fn._saved_other
        assert (other.item(), str(other.dtype).split(".")[-1]) == (2, "int64")
        assert str(z.grad_fn._saved_other.dtype).split(".")[-1] == "float64"
        assert y.grad_fn._saved_self is None  # not needed: `other` needs no gradient
        y.sum().backward()
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            _ = y.grad_fn._saved_other
        w = x * 2
        w.sum().backward(retain_graph=True)
        w.sum().backward()
        assert x.grad.tolist() == [6.0] * 3


# == 4. list ops refuse an empty list and lists of other lengths ========================

FOREACH = [
    "m._foreach_add([], 1)", "m._foreach_add([], [])", "m._foreach_mul([], 2)",
    "m._foreach_add_([], 1)", "m._foreach_neg([])", "m._foreach_sqrt([])",
    "m._foreach_norm([])", "m._foreach_lerp([], [], 0.5)", "m._foreach_zero_([])",
    "m._foreach_copy_([], [])", "m._foreach_div([], [])",
    "m._foreach_add(a, [m.ones(2)])", "m._foreach_add(a, [1.0])",
    "m._foreach_add(a, [1.0, 2.0])", "m._foreach_mul(a, [m.ones(2)])",
    "m._foreach_lerp(a, [m.ones(2)], 0.5)", "m._foreach_copy_(a, [m.ones(2)])",
    "m._foreach_add(a, [m.ones(3), m.ones(2)])", "m._foreach_add(a, [m.ones(1), m.ones(1)])",
    "m._foreach_addcmul_(a, a, [m.ones(2)])", "m._foreach_addcdiv_(a, a, a, [1.0])",
]


@pytest.mark.parametrize("expr", FOREACH)
def test_foreach_list_checks_as_pytorch(expr):
    def outcome(lib):
        try:
            r = eval(expr, {"m": lib, "a": [lib.ones(2), lib.ones(3)]})
        except RuntimeError as err:
            return str(err)
        return [t.tolist() for t in r]
    assert outcome(ember) == outcome(torch), expr


# == 5. channels_last layouts: keepdim reductions, pixel_shuffle / pixel_unshuffle ======

CL_LAYOUTS = [
    "x.sum((2, 3), keepdim=True)", "x.mean((2, 3), keepdim=True)",
    "x.amax((2, 3), keepdim=True)", "x.var((2, 3), keepdim=True)", "x.sum(1, keepdim=True)",
    "x.sum(0, keepdim=True)", "x.amin(2, keepdim=True)", "x.std((2, 3), keepdim=True)",
    "m.nn.functional.pixel_shuffle(x, 2)", "m.nn.functional.pixel_unshuffle(x, 2)",
    "m.nn.functional.pixel_shuffle(x.transpose(2, 3).contiguous().transpose(2, 3), 1)",
    "m.nn.functional.pixel_shuffle(x[0], 2)",
]


@pytest.mark.parametrize("expr", CL_LAYOUTS)
def test_channels_last_layouts_as_pytorch(expr):
    def layout(lib):
        x = lib.arange(2 * 8 * 4 * 6.0).reshape(2, 8, 4, 6)
        x = x.contiguous(memory_format=lib.channels_last).requires_grad_()
        out = eval(expr, {"m": lib, "x": x})
        out.backward(lib.ones_like(out))
        return tuple(out.shape), out.stride(), x.grad.stride(), out.detach().flatten().tolist()
    assert layout(ember) == layout(torch), expr


# == 6. cholesky_ex of a matrix that is not positive-definite: LAPACK's partial factor ==

CHOLESKY = [
    "[[4., 2., 1.], [2., 1., 3.], [1., 3., 2.]]",
    "[[4., 2., 1., 0.], [2., 5., 3., 1.], [1., 3., -20., 2.], [0., 1., 2., 3.]]",
    "[[-1.]]", "[[float('nan'), 0.], [0., 1.]]", "[[1., 2.], [2., 1.]]",
    "[[[4., 2.], [2., 5.]], [[1., 2.], [2., 1.]], [[-2., 0.], [0., 1.]]]",
]


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("matrix", CHOLESKY)
def test_cholesky_ex_partial_factor_as_pytorch(matrix, upper):
    def factor(lib):
        a = lib.tensor(eval(matrix), dtype=lib.float64)
        out = lib.linalg.cholesky_ex(a, upper=upper)
        return np.asarray(out.L).tobytes(), out.info.tolist(), str(out.info.dtype)[-5:]
    assert factor(ember) == factor(torch)


# == 7. unsafe_split / unsafe_chunk: memory shared, no autograd views ====================

@pytest.mark.parametrize("call", ["m.unsafe_split(y, 2)", "m.unsafe_chunk(y, 3)",
                                  "y.unsafe_split_with_sizes([2, 4])", "y.unsafe_split(4)"])
def test_unsafe_split_pieces_as_pytorch(call):
    def run(lib):
        x = lib.arange(6.0)
        parts = eval(call, {"m": lib, "y": x})
        shared = [(p._base is None, p.data_ptr() - x.data_ptr()) for p in parts]
        parts[0].mul_(10)  # writes into x
        leaf = lib.arange(6.0, requires_grad=True)
        y = leaf * 1
        pieces = eval(call, {"m": lib, "y": y})
        names = {p.grad_fn.name() for p in pieces}
        pieces[-1].add_(1)  # allowed: no view of y to autograd; y's node stays
        (pieces[0].sum() * 2 + pieces[-1].sum()).backward()
        return shared, x.tolist(), names, y.grad_fn.name(), y.tolist(), leaf.grad.tolist()
    assert run(ember) == run(torch)


# == 8. max_pool1d's graph as PyTorch's (a 2-D pool between a squeeze and an unsqueeze) ==

def _graph_names(fn, depth=0):
    if fn is None or depth > 4:
        return []
    return [(depth, fn.name().rpartition("::")[2])] + [
        n for f, _ in fn.next_functions for n in _graph_names(f, depth + 1)]


@pytest.mark.parametrize("expr", [
    "F.max_pool1d(x, 2)", "F.max_pool1d(x, 2, return_indices=True)[0]", "F.max_pool1d(x[0], 2)",
    "m.nn.MaxPool1d(3, 2, 1)(x)", "F.max_pool1d(x, 2, dilation=2)"])
def test_max_pool1d_graph_as_pytorch(expr):
    def run(lib):
        x = lib.tensor(np.random.default_rng(0).permutation(48).reshape(2, 3, 8) * 1.0,
                       requires_grad=True)
        y = eval(expr, {"m": lib, "F": lib.nn.functional, "x": x})
        y.backward(lib.ones_like(y))
        return _graph_names(y.grad_fn), y.detach().tolist(), x.grad.tolist()
    assert run(ember) == run(torch)


# == 3. std / var overloads: a bool alone is `unbiased`, an int `unbiased` matches none ==

VARIANCE_CALLS = [
    "x.std(True)", "x.var(False)", "m.var(x, True)", "m.std_mean(x, True)[0]",
    "x.std(0, True)", "x.std(0, True, True)", "x.var([0, 1], False, True)",
    "x.var(dim=0, unbiased=False)", "m.std(x, (0,), keepdim=True)", "x.std(0, correction=0)",
    "m.var_mean(x, 0, correction=0)[0]", "x.std(None, True)",
    "x.std(0, 1)", "x.var(0, 0)", "m.std(x, 0, 1)", "m.var_mean(x, 0, 1)", "m.std_mean(x, 0, 1)",
    "x.std(0, keepdim=1)", "x.var(0, unbiased=0)", "x.std(True, keepdim=True)", "x.std(dim=True)",
]


@pytest.mark.parametrize("expr", VARIANCE_CALLS)
def test_variance_overloads_as_pytorch(expr):
    def run(lib):
        x = lib.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
        try:
            return eval(expr, {"m": lib, "x": x}).tolist()
        except TypeError as err:
            return str(err).replace("torch.", "ember.")
    assert run(ember) == run(torch)


WINDOW_CALLS = [
    "m.hann_window(5)", "m.hann_window(5, False)", "m.hamming_window(5, True, 0.5, 0.4)",
    "m.kaiser_window(5, True, 8.0)", "m.bartlett_window(5, dtype=m.float64)",
    "m.hann_window(5, alpha=0.5)", "m.hann_window(5, True, 1)",
    "m.blackman_window(5, alpha=0.4)", "m.kaiser_window(5, beta=8.0)",
    "m.hamming_window(5, True, 0.5, 0.4, 0.1)", "m.bartlett_window(5, False, foo=1)",
]


@pytest.mark.parametrize("expr", WINDOW_CALLS)
def test_window_overloads_as_pytorch(expr):
    def run(lib):
        try:
            return np.asarray(eval(expr, {"m": lib})).round(6).tolist()
        except TypeError as err:
            return str(err).replace("torch.", "ember.")
    assert run(ember) == run(torch)


SORT_CALLS = ["x.sort(0, 1)", "m.sort(x, 0, 1)", "x.sort(-1, 2)", "x.sort(0, None)",
              "x.sort(0, 1.5)", "x.argsort(1, 0)", "m.argsort(x, 0, 1)",
              "x.sort(0, True).values", "m.sort(x, 1, False).indices", "x.argsort(0, True)",
              "m.argsort(x, 1, False)", "x.sort(True)"]


@pytest.mark.parametrize("expr", SORT_CALLS)
def test_sort_positional_overloads_as_pytorch(expr):
    def run(lib):
        x = lib.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
        try:
            return eval(expr, {"m": lib, "x": x}).tolist()
        except TypeError as err:
            return str(err)
    assert run(ember) == run(torch)


# == 9. instance_norm's graph as PyTorch's (a view of a batch norm of a view) ============

@pytest.mark.parametrize("expr", [
    "F.instance_norm(x)", "F.instance_norm(x, weight=w, bias=b)",
    "F.instance_norm(x, m.zeros(3), m.ones(3), use_input_stats=True)",
    "m.nn.InstanceNorm1d(3)(x)", "F.instance_norm(x.detach(), weight=w)",
    "m.std(x)", "m.var(x, 1)", "m.std_mean(x)[0]", "m.var_mean(x, 1)[1]"])
def test_instance_norm_and_variance_node_names_as_pytorch(expr):
    def run(lib):
        x = lib.tensor(np.random.default_rng(0).permutation(48).reshape(2, 3, 8) * 1.0,
                       dtype=lib.float32, requires_grad=True)
        w = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        b = lib.tensor([0.5, 0.0, -0.5], requires_grad=True)
        y = eval(expr, {"m": lib, "F": lib.nn.functional, "x": x, "w": w, "b": b})
        names = _graph_names(y.grad_fn)
        if "instance_norm" not in expr and "InstanceNorm" not in expr:
            names = names[:1]  # (the statistics: their own node's name)
        y.sum().backward()
        return names, [None if t.grad is None else np.round(t.grad.numpy(), 4).tolist()
                       for t in (x, w, b)]
    assert run(ember) == run(torch)
