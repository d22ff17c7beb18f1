"""PyTorch behaviours the set-O programs (KAN, RWKV, Decision Transformer, TD3/DDPG,
DETR-lite, xLSTM, AlphaZero-lite, a Trainer loop) needed, checked against torch itself."""

from __future__ import annotations

import decimal
import fractions
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _outcome(mod, dtype: str, key, value) -> tuple[str, object]:
    """What `t[key] = value` does to a zero tensor of `dtype`: its values, or its error."""
    t = mod.zeros(3, 2, dtype=getattr(mod, dtype))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t[key] = value
    except Exception as err:  # noqa: BLE001 (the error is the outcome compared)
        return type(err).__name__, str(err).replace("ember.", "torch.")
    return "ok", t.tolist()


class _Plain:  # a class written in Python: PyTorch names it without its module
    pass


@pytest.mark.parametrize("value", [
    np.float32(1.5), np.float16(2.0), np.bool_(True), np.longdouble(1.0), np.complex64(1),
    np.array(1.5), np.array([1.5, 2.0]), fractions.Fraction(1, 2), decimal.Decimal(1),
    _Plain(), None, [1.0, 2.0], "a",
    np.float64(2.5), np.int64(3), np.int32(-4), np.uint8(7), True, 2, 2.5, 1 + 2j,
    np.complex128(1 + 1j)], ids=lambda v: type(v).__name__)
@pytest.mark.parametrize("key", [(0, 1), 0, slice(None)], ids=["int-int", "int", "slice"])
def test_setitem_takes_python_numbers_and_numpy_ints_only(key, value) -> None:
    """`t[key] = value` takes a Python bool/int/float/complex (np.float64 is a float) or a
    NumPy integer; a NumPy float or bool scalar, an array, a Fraction... raise PyTorch's
    TypeError naming the type as CPython's tp_name does. A complex number written into a
    real tensor loses its imaginary part without a word."""
    assert _outcome(ember, "float32", key, value) == _outcome(torch, "float32", key, value)


@pytest.mark.parametrize("dtype", ["int64", "float64", "bool", "float16"])
def test_setitem_numpy_float_names_the_legacy_type(dtype: str) -> None:
    assert _outcome(ember, dtype, 0, np.float32(1)) == _outcome(torch, dtype, 0, np.float32(1))
    assert _outcome(ember, dtype, 0, np.int64(1)) == _outcome(torch, dtype, 0, np.int64(1))


def _fill_outcome(mod, make) -> tuple[str, object]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # (NumPy's ComplexWarning must not leak out)
            return "ok", make(mod).tolist()
    except Exception as err:  # noqa: BLE001 (the error is the outcome compared)
        return type(err).__name__, str(err)


@pytest.mark.parametrize("make", [
    lambda m: m.zeros(3).fill_(1 + 2j), lambda m: m.zeros(3).fill_(1 + 0j),
    lambda m: m.full((2,), 1 + 2j, dtype=m.float32),
    lambda m: m.full((2,), 1 + 0j, dtype=m.float32),
    lambda m: m.zeros(3, dtype=m.int64).fill_(2 + 0j),
    lambda m: m.zeros(3, dtype=m.bool).fill_(2 + 1j),
    lambda m: m.zeros(3).masked_fill(m.tensor([True, False, True]), 1 + 2j),
    lambda m: m.zeros(2, dtype=m.uint8).fill_(-1 + 0j),
], ids=["fill-imag", "fill-real", "full-imag", "full-real", "int64", "bool", "masked_fill",
        "uint8"])
def test_complex_number_into_real_tensor(make) -> None:
    """A complex number written into a real tensor: its real part when the imaginary part
    is zero, else PyTorch's overflow error (a bool tensor takes any number)."""
    assert _fill_outcome(ember, make) == _fill_outcome(torch, make)
