"""PyTorch-compatibility gaps, round 37 (found by fuzzing): checked against PyTorch itself."""

import pytest

import ember

torch = pytest.importorskip("torch")
from torch_oracle import DEVICES  # noqa: E402


def _outcome(call, lib):
    """`call(lib)`'s result as a list, or its exception's type and first line."""
    try:
        return call(lib).tolist()
    except Exception as err:  # noqa: BLE001 (any error is compared with PyTorch's)
        return type(err).__name__, str(err).splitlines()[0]


@pytest.mark.parametrize("call", [
    lambda lib: lib.zeros(0, dtype=lib.uint8) // 0,
    lambda lib: lib.zeros(0, dtype=lib.int64) % 0,
    lambda lib: lib.floor_divide(lib.zeros(0, dtype=lib.int32), lib.tensor(0, dtype=lib.int32)),
    lambda lib: lib.remainder(lib.zeros(0, 3, dtype=lib.int64), lib.zeros(3, dtype=lib.int64)),
    lambda lib: lib.div(lib.zeros(0, dtype=lib.int64), 0, rounding_mode="floor"),
    lambda lib: lib.div(lib.zeros(0, dtype=lib.int64), 0, rounding_mode="trunc"),
    lambda lib: lib.fmod(lib.zeros(0, dtype=lib.int64), 0),
    lambda lib: lib.zeros(0, dtype=lib.int64).remainder_(0),
    lambda lib: lib.ones(2, dtype=lib.int64) // 0,
    lambda lib: lib.ones(2, dtype=lib.int64).fmod(lib.zeros(1, dtype=lib.int64)),
    lambda lib: lib.zeros(0, dtype=lib.int64).pow(-1),
], ids=range(11))
@pytest.mark.parametrize("device", DEVICES)
def test_integer_division_by_zero_only_where_a_divisor_is_read(call, device):
    """PyTorch's integer division kernels check the divisors they read: an empty result
    reads none, so `empty // 0` is empty (not "ZeroDivisionError")."""
    with ember.device(device):
        ours = _outcome(call, ember)
    assert ours == _outcome(call, torch)
