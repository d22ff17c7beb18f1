"""The divergences from PyTorch that fuzzing found (issue 16, "Bad and extreme input"),
each checked against the installed PyTorch on every device the fuzz tests run on: the
same values and dtypes, or the same exception type and message."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from torch_oracle import DEVICES, assert_same  # noqa: E402

import ember  # noqa: E402

NAN, INF = math.nan, math.inf

pytestmark = pytest.mark.parametrize("device", DEVICES)


# -- wrong numbers ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sigmoid_keeps_relative_precision_for_very_negative_inputs(device, dtype):
    # the tanh form 0.5 * tanh(x / 2) + 0.5 rounds to 0 below about -17 (float32)
    def case(lib, T):
        return T([-100.0, -80.0, -30.0, -17.0, 0.0, 5.0, 30.0, NAN, INF, -INF],
                 dtype=getattr(lib, dtype)).sigmoid()
    # torch's float32 exp(100) overflows to 0 where the exact answer is 3.7e-44: only
    # the relative error of normal numbers is asserted
    assert_same(case, device, rtol=1e-6, atol=1e-43)
    out = ember.tensor([-30.0], device=device).sigmoid().item()
    assert out == pytest.approx(9.357622968839299e-14, rel=1e-6)


def test_binary_cross_entropy_on_confident_predictions(device):
    def case(lib, T):
        p = T([-30.0, -60.0, 25.0]).sigmoid()
        return lib.nn.functional.binary_cross_entropy(p, T([1.0, 1.0, 1.0]), reduction="none")
    assert_same(case, device, rtol=1e-5)


@pytest.mark.parametrize("write", [
    lambda lib, T: T([1, 2], dtype=lib.int32).fill_(NAN),
    lambda lib, T: T([1, 2], dtype=lib.int64).fill_(INF),
    lambda lib, T: T([1, 2], dtype=lib.int8).fill_(1000),
    lambda lib, T: T([1, 2], dtype=lib.int8).fill_(127.5),
    lambda lib, T: T([1, 2], dtype=lib.uint8).fill_(256),
    lambda lib, T: T([1, 2], dtype=lib.uint8).fill_(-1),  # wraps, as in PyTorch
    lambda lib, T: T([1.0, 2.0]).fill_(1e300),
    lambda lib, T: T([1.0, 2.0], dtype=lib.float16).fill_(1e10),
    lambda lib, T: T([1.0, 2.0], dtype=lib.float16).fill_(-INF),
    lambda lib, T: lib.full((2,), NAN, dtype=lib.int32),
    lambda lib, T: lib.full((2,), -1, dtype=lib.uint8),
    lambda lib, T: T([1, 2], dtype=lib.int16).new_full((2,), 1e6),
    lambda lib, T: lib.full_like(T([1, 2], dtype=lib.int8), -129),
    lambda lib, T: T([1, 2], dtype=lib.int32).masked_fill(T([True, False]), NAN),
    lambda lib, T: T([1, 2], dtype=lib.int8).masked_fill(T([True, False]), 1000),
    lambda lib, T: T([1, 2], dtype=lib.uint8).masked_fill(T([True, False]), -1),
    lambda lib, T: T([1.0, 2.0], dtype=lib.float16).masked_fill(T([True, False]), 1e10),
    lambda lib, T: T([1, 2], dtype=lib.int8).index_fill(0, T([0]), 1000),
    lambda lib, T: T([1, 2], dtype=lib.int8).scatter(0, T([0]), 1000),
    lambda lib, T: T([1, 2], dtype=lib.int8).clamp(max=1000),
    lambda lib, T: T([1, 2], dtype=lib.int8).clamp_min(-1000),
    lambda lib, T: T([1, 2], dtype=lib.uint8).clamp(-1),
    lambda lib, T: T([1.0, 2.0], dtype=lib.float16).clamp(max=1e10),
    lambda lib, T: lib.where(T([True, False]), T([1, 2], dtype=lib.int8), 1000),
    lambda lib, T: lib.where(T([True, False]), T([1, 2], dtype=lib.uint8), -1),
    lambda lib, T: lib.where(T([True, False]), T([1.0, 2.0], dtype=lib.float16), 1e10),
    lambda lib, T: T([1, 2], dtype=lib.int8).pow(1000),
])
def test_numbers_written_into_a_tensor_are_checked_against_its_dtype(device, write):
    assert_same(write, device)


@pytest.mark.parametrize("key", [0, slice(None), (Ellipsis,)])
@pytest.mark.parametrize("value", [NAN, INF, 1e20, -1e19])
def test_setitem_refuses_numbers_an_integer_tensor_cannot_hold(device, key, value):
    def case(lib, T):
        x = T([1, 2], dtype=lib.int64)
        x[key] = value
        return x
    assert_same(case, device)
    x = ember.tensor([1, 2], device=device)
    with pytest.raises(RuntimeError):
        x[0] = NAN
    assert x.tolist() == [1, 2]  # nothing half-written


@pytest.mark.parametrize("case", [
    lambda lib, T: T([1.0, 2.0, 3.0]).gather(0, T([-1])),
    lambda lib, T: T([1.0, 2.0, 3.0]).gather(0, T([3])),
    lambda lib, T: T([[1.0, 2.0], [3.0, 4.0]]).gather(1, T([[0, -2]])),
    lambda lib, T: lib.take_along_dim(T([1.0, 2.0, 3.0]), T([-1])),
    lambda lib, T: T([1.0, 2.0, 3.0]).scatter(0, T([-1]), T([9.0])),
    lambda lib, T: T([1.0, 2.0, 3.0]).scatter(0, T([3]), 9.0),
    lambda lib, T: T([1.0, 2.0, 3.0]).scatter_add(0, T([-1]), T([9.0])),
    lambda lib, T: T([1.0, 2.0, 3.0]).index_select(0, T([-1])),
    lambda lib, T: T([1.0, 2.0, 3.0]).index_select(0, T([3])),
    lambda lib, T: T([1.0, 2.0, 3.0]).index_add(0, T([-1]), T([9.0])),
    # where PyTorch does count negative indices from the end
    lambda lib, T: T([1.0, 2.0, 3.0]).index_fill(0, T([-1]), 9.0),
    lambda lib, T: T([1.0, 2.0, 3.0])[T([-1])],
    lambda lib, T: T([1.0, 2.0, 3.0])[T([-4])],
])
def test_negative_indices_raise_where_pytorch_raises(device, case):
    assert_same(case, device)


def test_sign_of_nan_is_zero(device):
    assert_same(lambda lib, T: T([NAN, -0.0, 0.0, 2.5, -3.0, INF, -INF]).sign(), device)
    assert_same(lambda lib, T: T([NAN, -2.0], dtype=lib.float64).sign(), device)


def test_relu_backward_passes_the_gradient_at_nan(device):
    def case(lib, T):
        x = T([NAN, 1.0, -1.0, 0.0, INF], requires_grad=True)
        x.relu().backward(T([1.0, 2.0, 3.0, 4.0, 5.0]))
        return x.grad
    assert_same(case, device)
