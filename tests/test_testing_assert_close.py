"""`ember.testing.assert_close` against `torch.testing.assert_close`: what passes, what
fails, and the failure's exception type and message word for word (ember's printed
`ember.` names read `torch.` under the torch alias, so they are compared so)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember.testing import assert_close

torch = pytest.importorskip("torch")


def _outcome(lib, make):
    """None if assert_close passes, else (exception type name, message)."""
    actual, expected, kwargs = make(lib)
    try:
        lib.testing.assert_close(actual, expected, **kwargs)
    except Exception as err:  # noqa: BLE001 - the type is part of what is compared
        # (ember's Tensor class prints as `ember.Tensor`, `torch.Tensor` under the alias)
        return type(err).__name__, str(err).replace("ember.", "torch.")
    return None


CASES = {
    "equal": lambda L: (L.tensor([1.0, 2.0]), L.tensor([1.0, 2.0]), {}),
    "within_float32": lambda L: (L.tensor([1.0, 2.0]), L.tensor([1.0, 2.0 + 1e-7]), {}),
    "one_off": lambda L: (L.tensor([1.0]), L.tensor([1.1]), {}),
    "several_off": lambda L: (L.arange(12.).reshape(3, 4),
                              L.arange(12.).reshape(3, 4) * L.tensor([1, 1.01, 1, 1.3]), {}),
    "zero_d": lambda L: (L.tensor(1.0), L.tensor(1.5), {}),
    "float64": lambda L: (L.tensor([1.0, 2.0], dtype=L.float64),
                          L.tensor([1.0, 2.0000001], dtype=L.float64), {}),
    "float16": lambda L: (L.tensor([1.0, 2.0], dtype=L.float16),
                          L.tensor([1.0, 2.001], dtype=L.float16), {}),
    "ints_exact": lambda L: (L.tensor([1, 2, 3]), L.tensor([1, 2, 4]), {}),
    "bools": lambda L: (L.tensor([True, False]), L.tensor([True, True]), {}),
    "shape": lambda L: (L.ones(2), L.ones(3), {}),
    "dtype": lambda L: (L.ones(2), L.ones(2, dtype=L.float64), {}),
    "dtype_unchecked": lambda L: (L.ones(2), L.ones(2, dtype=L.float64),
                                  {"check_dtype": False}),
    "stride": lambda L: (L.ones(2, 3).t(), L.ones(3, 2), {"check_stride": True}),
    "nan": lambda L: (L.tensor([math.nan]), L.tensor([math.nan]), {}),
    "nan_equal": lambda L: (L.tensor([math.nan, 1.0]), L.tensor([math.nan, 1.0]),
                            {"equal_nan": True}),
    "inf": lambda L: (L.tensor([math.inf]), L.tensor([math.inf]), {}),
    "inf_vs_big": lambda L: (L.tensor([math.inf]), L.tensor([3e38]), {}),
    "tolerances": lambda L: (L.tensor([1.0]), L.tensor([1.05]), {"rtol": 0.1, "atol": 0.0}),
    "only_rtol": lambda L: (L.tensor([1.0]), L.tensor([1.0]), {"rtol": 0.1}),
    "only_atol": lambda L: (L.tensor([1.0]), L.tensor([1.0]), {"atol": 0.1}),
    "exact_tol": lambda L: (L.tensor([1.0, 2.0]), L.tensor([1.0, 2.5]),
                            {"rtol": 0, "atol": 0}),
    "msg": lambda L: (L.tensor([1.0]), L.tensor([2.0]), {"msg": "custom"}),
    "msg_callable": lambda L: (L.tensor([1.0]), L.tensor([2.0]),
                               {"msg": lambda m: m.upper()[:20]}),
    "numbers": lambda L: (1.0, 1.0 + 1e-9, {}),
    "numbers_off": lambda L: (1.0, 1.1, {}),
    "number_types": lambda L: (1, 1.0, {}),
    "number_zero": lambda L: (1e-3, 0.0, {}),
    "ints": lambda L: (3, 4, {}),
    "list": lambda L: ([L.ones(2), L.zeros(2)], [L.ones(2), L.ones(2)], {}),
    "list_length": lambda L: ([L.ones(2)], [L.ones(2), L.ones(2)], {}),
    "dict": lambda L: ({"a": L.ones(2), "b": 1.0}, {"a": L.ones(2), "b": 1.5}, {}),
    "dict_keys": lambda L: ({"a": L.ones(2)}, {"b": L.ones(2)}, {}),
    "nested": lambda L: ([{"w": [L.ones(1), L.ones(1)]}], [{"w": [L.ones(1), L.zeros(1)]}], {}),
    "tensor_vs_number": lambda L: (L.tensor(1.0), 1.0, {}),
    "empty": lambda L: (L.ones(0, 3), L.ones(0, 3), {}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_assert_close_matches_torch(name) -> None:
    assert _outcome(ember, CASES[name]) == _outcome(torch, CASES[name])


def test_it_is_torch_testings_under_the_alias_and_ember_testings() -> None:
    assert ember.testing.assert_close is assert_close
    with pytest.raises(AssertionError, match="Tensor-likes are not close"):
        assert_close(ember.tensor(np.float32([1, 2])), ember.tensor(np.float32([1, 3])))


@pytest.mark.parametrize("make", [
    lambda L: L.isclose(L.tensor([True, False]), L.tensor([True, True])),
    lambda L: L.isclose(L.tensor([True, False]), L.tensor([True, True]), rtol=0, atol=0),
    lambda L: L.isclose(L.tensor([1, 2, 3]), L.tensor([1, 2, 4]), rtol=0.5, atol=0),
    lambda L: L.isclose(L.tensor([1, 2, 3]), L.tensor([1, 2, 4]), equal_nan=True),
    lambda L: L.isclose(L.tensor([1.0, math.nan]), L.tensor([1.0 + 1e-9, math.nan]),
                        rtol=0, atol=0, equal_nan=True),
    lambda L: L.isclose(L.ones(1), L.ones(1), rtol=-1),
    lambda L: L.isclose(L.ones(1), L.ones(1, dtype=L.float64)),
    lambda L: L.isclose(L.ones(1, dtype=L.int32), L.ones(1, dtype=L.int64)),
    lambda L: L.isclose(L.ones(1), L.ones(1), atol=-1e-3),
])
def test_isclose_matches_torch(make) -> None:
    """isclose, which assert_close builds on: bools compared as the default float dtype,
    zero tolerances as equality, negative tolerances refused."""
    def run(lib):
        try:
            return make(lib).tolist()
        except Exception as err:  # noqa: BLE001 - compared by type and message
            return type(err).__name__, str(err)
    assert run(ember) == run(torch)


def test_testing_assert_allclose_as_torch():
    """The deprecated form (the FX conv/bn fuser tutorial checks its fused model with it)."""
    for lib in (ember, torch):
        a = lib.tensor([1.0, 2.0])
        with pytest.warns(FutureWarning, match=r"assert_allclose\(\)` is deprecated since 1.12"):
            lib.testing.assert_allclose(a, a + 1e-5)  # within float32's rtol 1e-4
        with pytest.warns(FutureWarning), pytest.raises(AssertionError, match="not close"):
            lib.testing.assert_allclose(a, a + 1e-2)
        with pytest.warns(FutureWarning):
            lib.testing.assert_allclose(a, [1.0, 2.0])  # a list, dtype not checked
