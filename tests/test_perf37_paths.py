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
