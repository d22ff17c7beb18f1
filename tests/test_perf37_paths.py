"""The fast paths of single ops added for speed (compiled kernels, NumPy kernels in place
of decompositions), on inputs large enough to take them, against PyTorch and against the
path they replace: edge values (NaN, infinities, signed zeros, ties, empty inputs)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember.backends.xp.elementwise import _erf_polynomial

torch = pytest.importorskip("torch")


def _edges(dtype: type) -> np.ndarray:
    return np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 6.0, -6.0, 1e-30,
                     -1e-45, 3.9, -3.9, 0.5], dtype=dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_erf_compiled_matches_numpy_formula_and_torch(dtype: type) -> None:
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(4096).astype(dtype) * 3, _edges(dtype)])
    got = ember.tensor(x).erf().numpy()
    if dtype is np.float32:  # the NumPy kernel's formula, bit for bit
        expected = _erf_polynomial(np, x)
    else:  # libm's erf, as math.erf gives it
        expected = np.array([math.erf(v) for v in x.tolist()], dtype=np.float64)
    np.testing.assert_array_equal(got.view(np.uint8), expected.view(np.uint8))
    np.testing.assert_allclose(got, torch.tensor(x).erf().numpy(), rtol=2e-7, atol=1e-7)


def test_gelu_exact_large_against_torch() -> None:
    x = np.concatenate([np.random.default_rng(1).standard_normal(4096).astype(np.float32),
                        _edges(np.float32)])
    a, b = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ya, yb = ember.nn.functional.gelu(a), torch.nn.functional.gelu(b)
    np.testing.assert_allclose(ya.detach().numpy(), yb.detach().numpy(), rtol=1e-6,
                               atol=1e-6)  # (1 + erf(x) cancels for negative x)
    ya.sum().backward()
    yb.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["int64", "float32", "float64", "uint8"])
def test_mode_compiled_sort_matches_torch(dtype: str) -> None:
    rng = np.random.default_rng(2)
    cases = [(rng.integers(0, 5, (64, 48)), 1), (rng.integers(0, 3, (40, 70)), 0),
             (rng.integers(0, 900, (2, 1100)), 1), (rng.integers(0, 2, (3, 20, 30)), 1)]
    for keys, dim in cases:
        a = keys.astype(dtype)
        got = ember.mode(ember.tensor(a), dim)
        expected = torch.mode(torch.tensor(a), dim)
        assert got.values.tolist() == expected.values.tolist()
        assert got.indices.tolist() == expected.indices.tolist()


def test_mode_signed_zeros_nan_and_empty_rows() -> None:
    keys = np.random.default_rng(3).integers(0, 3, (64, 32)).astype(np.float32)
    keys[::3, 5], keys[1::3, 7] = -0.0, 0.0
    for a in (keys, np.where(np.arange(32) == 4, np.nan, keys).astype(np.float32)):
        got, expected = ember.mode(ember.tensor(a), 1), torch.mode(torch.tensor(a), 1)
        np.testing.assert_array_equal(got.values.numpy(), expected.values.numpy())
        assert got.indices.tolist() == expected.indices.tolist()
    empty = np.zeros((1100, 0), np.float32)
    got, expected = ember.mode(ember.tensor(empty), 0), torch.mode(torch.tensor(empty), 0)
    assert tuple(got.values.shape) == tuple(expected.values.shape)


def test_searchsorted_numpy_path_matches_torch() -> None:
    rng = np.random.default_rng(4)
    seq = np.sort(rng.integers(-20, 20, 300)).astype(np.float32)  # ties
    values = np.concatenate([rng.uniform(-25, 25, 500), seq[:30],
                             [np.nan, np.inf, -np.inf, 0.0, -0.0]]).astype(np.float32)
    with_nan = seq.copy()
    with_nan[-3:] = np.nan  # (the binary search in ember ops then)
    rows = np.sort(rng.standard_normal((4, 50)), 1)
    many_rows = np.sort(rng.standard_normal((100, 5)), 1)
    for right in (False, True):
        for s, v in ((seq, values), (with_nan, values), (rows, rng.standard_normal((4, 30))),
                     (many_rows, rng.standard_normal((100, 3))),
                     (seq.astype(np.int64), values[:500].astype(np.int64)),
                     (seq[:0], values)):
            got = ember.searchsorted(ember.tensor(s), ember.tensor(v), right=right)
            expected = torch.searchsorted(torch.tensor(s), torch.tensor(v), right=right)
            assert got.tolist() == expected.tolist()
        shuffled = rng.permutation(seq)
        sorter = np.argsort(shuffled, kind="stable")
        got = ember.searchsorted(ember.tensor(shuffled), ember.tensor(values), right=right,
                                 sorter=ember.tensor(sorter))
        expected = torch.searchsorted(torch.tensor(shuffled), torch.tensor(values),
                                      right=right, sorter=torch.tensor(sorter))
        assert got.tolist() == expected.tolist()
    finite = values[np.isfinite(values)]
    assert ember.histc(ember.tensor(finite), 17).tolist() == \
        torch.histc(torch.tensor(finite), 17).tolist()


def test_scatter_add_flat_index_matches_multi_index_add_at_and_torch() -> None:
    rng = np.random.default_rng(5)
    x = rng.standard_normal((6, 7, 5)).astype(np.float32)
    index = rng.integers(0, 7, (4, 30, 3))  # repeats: accumulated in order
    src = (rng.standard_normal((4, 30, 3)) * 1e3).astype(np.float32)
    src[0, 0, 0], src[1, 1, 1] = np.inf, np.nan
    got = ember.tensor(x).scatter_add(1, ember.tensor(index), ember.tensor(src)).numpy()
    expected = x.copy()
    i, _, k = np.ogrid[:4, :30, :3]
    np.add.at(expected, (i, index, k), src)  # NumPy's own multi-index add.at
    np.testing.assert_array_equal(got.view(np.uint8), expected.view(np.uint8))
    np.testing.assert_allclose(got, torch.tensor(x).scatter_add(
        1, torch.tensor(index), torch.tensor(src)).numpy(), rtol=1e-5, atol=1e-3)
    weight = rng.standard_normal((50, 16)).astype(np.float32)
    lookups = rng.integers(0, 50, (20, 30))
    a, b = ember.tensor(weight, requires_grad=True), torch.tensor(weight, requires_grad=True)
    ember.nn.functional.embedding(ember.tensor(lookups), a, padding_idx=3).pow(2).sum().backward()
    torch.nn.functional.embedding(torch.tensor(lookups), b, padding_idx=3).pow(2).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_index_put_accumulate_flat_index_matches_torch() -> None:
    rng = np.random.default_rng(6)
    x = rng.standard_normal((20, 30, 8)).astype(np.float32)
    rows, cols = rng.integers(0, 20, 60), rng.integers(-30, 30, 60)  # repeats, negatives
    values = (rng.standard_normal((60, 8)) * 1e3).astype(np.float32)
    values[3, 2], values[5, 1] = np.nan, -np.inf
    got = ember.tensor(x).index_put_((ember.tensor(rows), ember.tensor(cols)),
                                     ember.tensor(values), accumulate=True).numpy()
    t = torch.tensor(x).index_put_((torch.tensor(rows), torch.tensor(cols)),
                                   torch.tensor(values), accumulate=True)
    np.testing.assert_allclose(got, t.numpy(), rtol=1e-5, atol=1e-3)
    for mode in ("reflect", "replicate", "circular"):  # their backwards accumulate so
        a = ember.tensor(x[None], requires_grad=True)  # (1024 elements or more)
        b = torch.tensor(x[None], requires_grad=True)
        ember.nn.functional.pad(a, (2, 3, 1, 4), mode=mode).pow(2).sum().backward()
        torch.nn.functional.pad(b, (2, 3, 1, 4), mode=mode).pow(2).sum().backward()
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "int16"])
def test_where_bit_select_matches_torch(dtype: str) -> None:
    rng = np.random.default_rng(7)
    a = (rng.standard_normal((70, 90)) * 50).astype(dtype)
    b = (rng.standard_normal((70, 90)) * 50).astype(dtype)
    if a.dtype.kind == "f":  # NaN, infinities and signed zeros keep their bits
        a[0, :5] = [np.nan, -0.0, np.inf, -np.inf, 0.0]
        b[0, :5] = [-0.0, np.nan, 0.0, np.nan, -0.0]
    cond = rng.random((70, 90)) > 0.5
    got = ember.where(ember.tensor(cond), ember.tensor(a), ember.tensor(b)).numpy()
    expected = torch.where(torch.tensor(cond), torch.tensor(a), torch.tensor(b)).numpy()
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got.view(np.uint8), expected.view(np.uint8))
