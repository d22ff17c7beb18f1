"""The CPU's fused elementwise kernels (ember/backends/cpu/fusion.py), which ember.compile
asks for chains of elementwise ops: values against NumPy's op-by-op kernels,
broadcasting, NaN, writing into a given buffer."""
from __future__ import annotations

import numpy as np
import pytest

from ember.backends.cpu import compiled, fusion, kernels
from ember.core.backend import ElementwiseChain, float32, float64, merged_dims

K = kernels.KERNELS


@pytest.fixture(autouse=True)
def _numba() -> None:
    pytest.importorskip("numba")
    if compiled.kernels() is None:
        pytest.skip(f"the CPU's compiled kernels are off: {compiled.unavailable}")


def _chain(ops, inputs, shape, dtype=float32) -> ElementwiseChain:
    return ElementwiseChain(tuple((op, tuple(args), dtype) for op, args in ops),
                            tuple((s, dtype) for s in inputs), shape, dtype)


def test_merged_dims_keep_each_inputs_broadcast() -> None:
    assert merged_dims((64, 32, 26, 26), [(64, 32, 26, 26)]) == \
        ((64 * 32 * 26 * 26,), [(True,)])
    # a bias over rows; a conv bias (C, 1, 1) over (N, C, H, W); a scalar tensor
    assert merged_dims((128, 512), [(128, 512), (512,), ()]) == \
        ((128, 512), [(True, True), (False, True), (False, False)])
    assert merged_dims((8, 16, 5, 5), [(8, 16, 5, 5), (16, 1, 1)]) == \
        ((8, 16, 25), [(True, True, True), (False, True, False)])
    assert merged_dims((4, 3), [(5,)]) is None


@pytest.mark.parametrize("dtype", [float32, float64])
def test_a_bias_relu_chain_equals_numpy(dtype) -> None:
    np_dtype = np.float32 if dtype is float32 else np.float64
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 48)).astype(np_dtype)
    b = rng.standard_normal(48).astype(np_dtype)
    x[0, :3] = [np.nan, -0.0, np.inf]
    kernel = fusion.fuse(_chain([("add", [("input", 0), ("input", 1)]),
                                 ("mul", [("op", 0), ("scalar", 2.5)]),
                                 ("relu", [("op", 1)])], [(64, 48), (48,)], (64, 48), dtype))
    expected = K["relu"](K["mul"](K["add"](x, b), np_dtype(2.5)))
    got = kernel(x, b)
    assert got.dtype == np_dtype and got.shape == (64, 48)
    np.testing.assert_array_equal(got, expected)  # +, *, max: rounded as NumPy rounds


def test_conv_bias_and_transcendentals_within_tolerance() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 16, 5, 5)).astype(np.float32) * 4
    b = rng.standard_normal((16, 1, 1)).astype(np.float32)
    kernel = fusion.fuse(_chain([("add", [("input", 0), ("input", 1)]),
                                 ("tanh", [("op", 0)]),
                                 ("sigmoid", [("input", 0)]),
                                 ("exp", [("op", 2)]),
                                 ("mul", [("op", 1), ("op", 3)])],
                                [(8, 16, 5, 5), (16, 1, 1)], (8, 16, 5, 5)))
    expected = np.tanh(x + b) * np.exp(1 / (1 + np.exp(-x.astype(np.float64))))
    np.testing.assert_allclose(kernel(x, b), expected, rtol=3e-6, atol=1e-7)


def test_backward_formulas_keep_numpys_nan_and_zero_rules() -> None:
    rng = np.random.default_rng(2)
    y = rng.standard_normal(4096).astype(np.float32)
    g = rng.standard_normal(4096).astype(np.float32)
    y[:4] = [np.nan, 0.0, -0.0, 1.0]
    g[3] = np.nan
    for op in ("relu_backward", "tanh_backward", "sigmoid_backward"):
        kernel = fusion.fuse(_chain([(op, [("input", 0), ("input", 1)])],
                                    [(4096,), (4096,)], (4096,)))
        # (the eager tanh/sigmoid_backward kernels contract 1 - y*y into one FMA)
        np.testing.assert_allclose(kernel(y, g), K[op](y, g), rtol=1e-6, atol=1e-7, err_msg=op)
    for op, f in (("maximum", np.maximum), ("minimum", np.minimum)):
        kernel = fusion.fuse(_chain([(op, [("input", 0), ("input", 1)])],
                                    [(4096,), (4096,)], (4096,)))
        np.testing.assert_array_equal(kernel(y, g), f(y, g), err_msg=op)


def test_out_is_written_in_place_and_an_overlapping_out_still_gives_the_values() -> None:
    rng = np.random.default_rng(3)
    kernel = fusion.fuse(_chain([("sub", [("input", 0), ("input", 1)]),
                                 ("mul", [("op", 0), ("scalar", 0.5)])],
                                [(2048,), (2048,)], (2048,)))
    a = rng.standard_normal(2048).astype(np.float32)
    b = rng.standard_normal(2048).astype(np.float32)
    expected = (a - b) * np.float32(0.5)
    out = a.copy()
    assert kernel(out, b, out=out) is out  # the input itself: in place
    np.testing.assert_array_equal(out, expected)
    # an out that overlaps an input shifted by one: computed aside, then copied in
    storage = np.concatenate([a, [0]]).astype(np.float32)
    shifted = storage[1:]
    assert kernel(storage[:-1], b, out=shifted) is shifted
    np.testing.assert_array_equal(shifted, expected)


def test_what_it_declines() -> None:
    small = _chain([("relu", [("input", 0)])], [(8, 8)], (8, 8))
    assert fusion.fuse(small) is None  # below MIN_ELEMENTS: NumPy's call is cheaper
    unknown = _chain([("atan2", [("input", 0), ("input", 1)])], [(64, 64)] * 2, (64, 64))
    assert fusion.fuse(unknown) is None
    mixed = ElementwiseChain((("add", (("input", 0), ("input", 1)), float32),),
                             (((64, 64), float32), ((64, 64), float64)), (64, 64), float32)
    assert fusion.fuse(mixed) is None
    assert set(fusion.FORMULAS) == fusion.FUSIBLE


def test_a_chain_numba_refuses_runs_op_by_op_with_a_warning(monkeypatch) -> None:
    def broken(source):
        raise RuntimeError("numba says no")

    monkeypatch.setattr(fusion, "_load", broken)
    monkeypatch.setattr(fusion, "_failed", set())
    chain = _chain([("neg", [("input", 0)]), ("exp", [("op", 0)])], [(64, 64)], (64, 64))
    with pytest.warns(RuntimeWarning, match=r"fused\[neg\+exp\].*numba says no"):
        assert fusion.fuse(chain) is None
    assert fusion.fuse(chain) is None  # not tried again
    assert compiled.kernels() is not None  # the eager compiled kernels stay on
