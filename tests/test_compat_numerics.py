"""Numerics of single ops checked against PyTorch where ember had differed: the sign of a
zero remainder, rounding to negative decimals, scatter's older `reduce`, scatters that
cast their source, erf at zero, complex Cholesky solves, and `assert_close`'s complex
tolerances."""

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _same(e, t):
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_array_equal(e.detach().numpy(), t.detach().numpy())
    mine, theirs = e.detach().numpy().real, t.detach().numpy().real
    signed = ~np.isnan(theirs)  # a NaN's sign bit is the platform's, not the op's
    np.testing.assert_array_equal(np.signbit(mine[signed]), np.signbit(theirs[signed]))


VALUES = [-3.0, -2.0, -1.0, -0.0, 0.0, 1.0, 2.0, 3.0, 5.5, -5.5, float("inf"), float("nan")]


@pytest.mark.parametrize("device", ["cpu", "opencl"])
@pytest.mark.parametrize("divisor", [2.0, -1.5, float("inf"), -float("inf")])
def test_float_remainder_keeps_fmods_zero_sign(device, divisor):
    if device not in {d.type for d in ember.devices()}:
        pytest.skip(f"no {device} device here")
    e = ember.remainder(ember.tensor(VALUES, device=device), divisor).cpu()
    _same(e, torch.remainder(torch.tensor(VALUES), divisor))
    _same(ember.tensor(VALUES, device=device).floor_divide(divisor).cpu(),
          torch.tensor(VALUES).floor_divide(divisor))


def test_integer_remainder_is_unchanged():
    _same(ember.remainder(ember.tensor([-3, 3, -4]), ember.tensor([2, -2, 3])),
          torch.remainder(torch.tensor([-3, 3, -4]), torch.tensor([2, -2, 3])))


@pytest.mark.parametrize("decimals", [-3, -2, -1, 0, 1, 3])
def test_round_to_decimals_divides_by_the_power_of_ten_for_negative_ones(decimals):
    x = [1200.1234567, 1250.0, 1350.0, -1550.0, 0.125, 2.5e-4, -0.0]
    _same(ember.round(ember.tensor(x), decimals=decimals),
          torch.round(torch.tensor(x), decimals=decimals))


def test_scatter_with_the_older_reduce_argument():
    index = [[2, 2], [3, 0]]
    for lib in (ember, torch):
        x = lib.full((2, 4), 2.0)
        mul_scalar = x.scatter(1, lib.tensor([[2], [3]]), 1.23, reduce="multiply")
        mul_src = x.scatter(1, lib.tensor(index), lib.tensor([[2.0, 3.0], [4.0, 5.0]]),
                            reduce="multiply")
        add_inplace = x.clone().scatter_(1, lib.tensor(index), 1.5, reduce="add")
        if lib is ember:
            got = (mul_scalar, mul_src, add_inplace)
        else:
            want = (mul_scalar, mul_src, add_inplace)
    for g, w in zip(got, want):
        _same(g, w)
    with pytest.raises(RuntimeError, match="reduce argument must be either add or multiply."):
        ember.full((2, 4), 2.0).scatter(1, ember.tensor([[2], [3]]), 1.0, reduce="mean")


def test_scatters_cast_their_source_to_the_input_dtype():
    for lib in (ember, torch):
        src = lib.arange(4).reshape(2, 2) + 1
        out = (lib.as_strided_scatter(lib.zeros(3, 3), src, (2, 2), (1, 2)),
               lib.diagonal_scatter(lib.zeros(2, 2), lib.ones(2, dtype=lib.int64)),
               lib.select_scatter(lib.zeros(2, 2), lib.ones(2, dtype=lib.int64), 0, 0))
        if lib is ember:
            got = out
        else:
            want = out
    for g, w in zip(got, want):
        _same(g, w)


def test_erf_of_zero_is_zero_and_of_large_arguments_one():
    x = [0.0, -0.0, 10.0, -10.0, float("inf"), -float("inf"), 0.5]
    _same(ember.special.erf(ember.tensor(x)), torch.special.erf(torch.tensor(x)))


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("dtype", ["complex128", "float64"])
def test_cholesky_solve_and_inverse_take_complex_factors_with_gradients(upper, dtype):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3, 3))
    b = rng.standard_normal((2, 3, 2))
    if dtype == "complex128":
        a, b = a + 1j * rng.standard_normal((2, 3, 3)), b + 1j * rng.standard_normal((2, 3, 2))
    spd = a @ np.conj(np.swapaxes(a, -1, -2)) + 3 * np.eye(3)
    results = []
    for lib in (ember, torch):
        L = lib.linalg.cholesky(lib.tensor(spd), upper=upper).detach().requires_grad_()
        B = lib.tensor(b, requires_grad=True)
        X = lib.cholesky_solve(B, L, upper=upper)
        inv = lib.cholesky_inverse(L, upper=upper)
        (X.abs().sum() + inv.abs().sum()).backward()
        results.append([X.detach().numpy(), inv.detach().numpy(), L.grad.numpy(), B.grad.numpy(),
                        lib.linalg.matrix_rank(lib.tensor(a)).numpy()])
    for mine, theirs in zip(*results):
        np.testing.assert_allclose(mine, theirs, rtol=1e-12, atol=1e-12)


def test_assert_close_uses_the_complex_dtypes_tolerances():
    x = ember.rand(10, 10, dtype=ember.complex64)
    ember.testing.assert_close(ember.fft.fft2(x),
                               ember.fft.fft(ember.fft.fft(x, dim=0), dim=1), check_stride=False)
    close = ember.tensor([1 + 1j], dtype=ember.complex64)
    ember.testing.assert_close(close, close + 5e-6)  # inside complex64's atol 1e-5
    with pytest.raises(AssertionError, match="Tensor-likes are not close"):
        ember.testing.assert_close(close.to(ember.complex128), close.to(ember.complex128) + 5e-6)
