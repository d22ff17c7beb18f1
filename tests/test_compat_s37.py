"""PyTorch's numerics and layouts that session 37 matched (against PyTorch itself)."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

_EDGES = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 1e20, -1e20, 3e38, 1.0, -1.0]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("exponent", [2, 3, -0.5, -1, -2, 2.0, 3.0, -1.0, 1, 0])
def test_power_by_a_number_is_pytorchs_products(dtype: str, exponent) -> None:
    """PyTorch takes x ** 2, 3, -1, -2 and -0.5 as products, a reciprocal and 1 / sqrt,
    not the C library's pow (which rounds x ** 3 otherwise in a quarter of float32
    elements): bit for bit, edges included."""
    x = np.concatenate([np.random.default_rng(0).standard_normal(4000) * 3,
                        _EDGES]).astype(dtype)
    ours = (ember.tensor(x) ** exponent).numpy()
    theirs = (torch.tensor(x) ** exponent).numpy()
    np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(np.signbit(ours), np.signbit(theirs))
    out = ember.empty(x.shape, dtype=getattr(ember, dtype))
    ember.pow(ember.tensor(x), exponent, out=out)
    np.testing.assert_array_equal(out.numpy(), theirs)


def test_power_by_products_keeps_gradients_and_other_dtypes() -> None:
    x = ember.tensor([1.5, -2.0, 3.0], requires_grad=True)
    (x ** 3).sum().backward()
    tx = torch.tensor([1.5, -2.0, 3.0], requires_grad=True)
    (tx ** 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())
    for dtype in ("int64", "bfloat16", "float16", "complex64"):
        a = ember.tensor([1, 2, 3], dtype=getattr(ember, dtype)) ** 2
        b = torch.tensor([1, 2, 3], dtype=getattr(torch, dtype)) ** 2
        assert str(a.dtype) == str(b.dtype).replace("torch", "ember")
        np.testing.assert_array_equal(a.to(ember.complex64).numpy(),
                                      b.to(torch.complex64).numpy())


@pytest.mark.parametrize("value", [0, 0.0, -0.0, False, 0j, complex(-0.0, 0),
                                   complex(0, -0.0)])
@pytest.mark.parametrize("dtype", [None, "float32", "int64", "complex64", "bool"])
def test_zero_fills_keep_the_sign_of_zero(value, dtype) -> None:
    """`zeros` and `full(0)` come zeroed from the allocator; a negative zero is filled."""
    ours = ember.full((300, 300), value, dtype=getattr(ember, dtype) if dtype else None)
    theirs = torch.full((300, 300), value, dtype=getattr(torch, dtype) if dtype else None)
    assert str(ours.dtype) == str(theirs.dtype).replace("torch", "ember")
    a, b = ours.numpy(), theirs.numpy()
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(np.signbit(np.real(a)), np.signbit(np.real(b)))
    np.testing.assert_array_equal(np.signbit(np.imag(a)), np.signbit(np.imag(b)))
