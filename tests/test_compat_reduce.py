"""Sorting, order statistics, scans, search, histograms and index writes against PyTorch:
values and dtypes on ordinary, 0-d, zero-size, NaN/inf and integer inputs, gradients,
and errors (type and message)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
import ember.core.errors

torch = pytest.importorskip("torch")

NAN, INF = float("nan"), float("inf")
RNG = np.random.default_rng(7)
FLOATS = RNG.standard_normal((3, 5))
SPECIAL = np.array([[3.0, NAN, 1.0, 1.0, -INF, 2.0], [5.0, 4.0, 4.0, INF, 2.0, 9.0]])
INTS = np.array([[3, 1, 2, 2, 7], [0, -4, 4, 4, 1]])


def _tuple(x):
    """The tensors of a result, nested tuples (histogramdd's edges) flattened."""
    if isinstance(x, (tuple, list)):
        return tuple(t for part in x for t in _tuple(part))
    return (x,)


def same(fn, *arrays, tfn=None, indices: bool = True):
    """`fn(ember, *tensors)` and `fn(torch, *tensors)` (or `tfn`) give the same values,
    dtypes and shapes (or raise the same exception type); `indices=False` skips the
    second output of a (values, indices) pair where ties make it implementation-defined."""
    tfn = tfn or fn
    try:
        want = _tuple(tfn(torch, *[torch.tensor(a) for a in arrays]))
    except Exception as err:  # noqa: BLE001 - torch's refusal is the expectation
        with pytest.raises(type(err)):
            fn(ember, *[ember.tensor(a) for a in arrays])
        return
    got = _tuple(fn(ember, *[ember.tensor(a) for a in arrays]))
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        if k == 1 and not indices:
            continue
        assert str(g.dtype).split(".")[-1] == str(w.dtype).split(".")[-1], (g.dtype, w.dtype)
        assert tuple(g.shape) == tuple(w.shape), (g.shape, w.shape)
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6, atol=1e-9,
                                   equal_nan=True)


def same_grad(fn, *arrays):
    """The gradients of `fn` agree with torch's for a random upstream gradient."""
    e_in = [ember.tensor(a, requires_grad=True) for a in arrays]
    t_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    e_out, t_out = _tuple(fn(ember, *e_in))[0], _tuple(fn(torch, *t_in))[0]
    seed = RNG.standard_normal(tuple(t_out.shape))
    e_out.backward(ember.tensor(seed))
    t_out.backward(torch.tensor(seed))
    for e, t in zip(e_in, t_in):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-7, atol=1e-10)


def raises(exc, match, fn):
    with pytest.raises(exc, match=match):
        fn()


# -- sort ------------------------------------------------------------------------------


@pytest.mark.parametrize("arr", [FLOATS, SPECIAL, INTS, np.array(2.5), np.zeros((0, 3)),
                                 np.array([True, False, True])])
def test_sort_values_indices_and_argsort(arr):
    stable = dict(stable=True)
    same(lambda lib, x: lib.sort(x, **stable), arr)
    same(lambda lib, x: lib.sort(x, dim=0, descending=True, **stable), arr)
    same(lambda lib, x: x.sort(dim=-1, descending=True, **stable), arr)
    same(lambda lib, x: lib.argsort(x, dim=0, stable=True), arr)
    same(lambda lib, x: x.argsort(0, True), arr[..., :1] if arr.ndim else arr)
    same(lambda lib, x: lib.msort(x), arr)


@pytest.mark.parametrize("shape, high", [((40,), 3), ((17,), 2), ((3, 50), 4), ((64, 5), 2),
                                         ((300,), 10), ((2, 2, 33), 3)])
@pytest.mark.parametrize("descending", [False, True])
def test_unstable_sort_orders_ties_as_torchs_cpu_sort(shape, high, descending):
    """`sort` / `argsort` with the default stable=False: equal keys in PyTorch's CPU order
    (libstdc++'s introsort, unstable above 16 elements), NaNs included, along any dim."""
    rng = np.random.RandomState(sum(shape) + high)
    for arr in (rng.randint(0, high, shape), rng.randint(0, high, shape).astype(np.float32)):
        if arr.dtype == np.float32:
            arr[rng.rand(*shape) < 0.15] = np.nan
        for dim in range(len(shape)):
            t = torch.sort(torch.from_numpy(arr), dim=dim, descending=descending)
            e = ember.sort(ember.tensor(arr), dim=dim, descending=descending)
            np.testing.assert_array_equal(e.indices.numpy(), t.indices.numpy())
            np.testing.assert_array_equal(e.values.numpy(), t.values.numpy())
            np.testing.assert_array_equal(
                ember.argsort(ember.tensor(arr), dim, descending).numpy(),
                torch.argsort(torch.from_numpy(arr), dim, descending).numpy())
            stable = ember.sort(ember.tensor(arr), dim=dim, descending=descending, stable=True)
            np.testing.assert_array_equal(
                stable.indices.numpy(),
                torch.sort(torch.from_numpy(arr), dim=dim, descending=descending,
                           stable=True).indices.numpy())


@pytest.mark.parametrize("shape, high", [((40,), 3), ((5, 17), 2), ((3, 300), 4),
                                         ((130, 3), 2), ((2, 2, 33), 3)])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_orders_ties_as_torchs_cpu_topk(shape, high, largest):
    """`topk` on the CPU: which of equal keys come first and which make the cut, as
    PyTorch's std::partial_sort (k * 64 <= n) or std::nth_element + std::sort leave them,
    and the unsorted order of `sorted=False`; NaN the largest key; along any dim."""
    rng = np.random.RandomState(sum(shape) + high)
    for arr in (rng.randint(0, high, shape), rng.randint(0, high, shape).astype(np.float32)):
        if arr.dtype == np.float32:
            arr[rng.rand(*shape) < 0.15] = np.nan
        for dim in range(len(shape)):
            n = shape[dim]
            for k in sorted({1, 2, n // 64, n // 3, n - 1, n} - {0}):
                for in_order in (True, False):
                    t = torch.topk(torch.from_numpy(arr), k, dim, largest, in_order)
                    e = ember.topk(ember.tensor(arr), k, dim, largest, in_order)
                    np.testing.assert_array_equal(e.indices.numpy(), t.indices.numpy())
                    np.testing.assert_array_equal(e.values.numpy(), t.values.numpy())
                    assert e.indices.is_contiguous() and t.indices.is_contiguous()


def test_sort_result_is_named_and_takes_out():
    r = ember.sort(ember.tensor([3.0, 1.0, 2.0]))
    assert type(r).__name__ == "sort" and r._fields == ("values", "indices")
    v, i = ember.empty(0), ember.empty(0, dtype=ember.int64)
    out = ember.sort(ember.tensor([3.0, 1.0, 2.0]), descending=True, out=(v, i))
    assert out.values is v and v.tolist() == [3.0, 2.0, 1.0] and i.tolist() == [0, 2, 1]


def test_sort_gradient_and_errors():
    same_grad(lambda lib, x: lib.sort(x, 0, descending=True).values, FLOATS)
    raises(IndexError, "Dimension out of range", lambda: ember.sort(ember.ones(3), 1))


# -- order statistics ------------------------------------------------------------------


@pytest.mark.parametrize("arr", [FLOATS, SPECIAL, INTS, np.array(2.5), np.zeros((2, 0))])
def test_median_nanmedian_kthvalue_mode(arr):
    same(lambda lib, x: lib.median(x), arr)
    same(lambda lib, x: lib.nanmedian(x), arr)
    same(lambda lib, x: lib.median(x, -1), arr)
    same(lambda lib, x: x.nanmedian(0, keepdim=True), arr)
    same(lambda lib, x: lib.kthvalue(x, 1, 0), arr, indices=False)
    # (mode of a row with NaN is left undefined: PyTorch's order of NaN is not a sort's)
    same(lambda lib, x: lib.mode(x, -1), np.where(np.isnan(arr), 0, arr), indices=False)


def test_median_picks_the_lower_median_and_the_first_nan():
    r = ember.median(ember.tensor([[1.0, 5.0, 2.0, 2.0], [1.0, NAN, 0.0, NAN]]), 1)
    assert type(r).__name__ == "median"
    assert r.indices.tolist() == [2, 1]
    assert ember.nanmedian(ember.tensor([NAN, NAN]), 0).indices.item() == 0
    m = ember.mode(ember.tensor([[1, 5, 2, 2, 1, 7]]), 1)
    assert (m.values.item(), m.indices.item()) == (1, 4)  # smallest, last occurrence


def test_order_statistic_gradients():
    same_grad(lambda lib, x: lib.median(x), FLOATS)
    same_grad(lambda lib, x: lib.median(x, 0).values, FLOATS)
    same_grad(lambda lib, x: lib.nanmedian(x, 1, True).values, FLOATS)
    same_grad(lambda lib, x: lib.kthvalue(x, 4, 1).values, FLOATS)
    same_grad(lambda lib, x: lib.mode(x, 1).values, FLOATS)
    tied = np.array([1.0, 2.0, 2.0, 3.0, 2.0])  # the median's gradient is shared by ties
    same_grad(lambda lib, x: lib.median(x), tied)


def test_order_statistic_errors():
    raises(RuntimeError, r"kthvalue\(\): selected number k out of range for dimension 0",
           lambda: ember.kthvalue(ember.ones(3), 4))
    raises(IndexError, r"median\(\): Expected reduction dim 0 to have non-zero size",
           lambda: ember.median(ember.ones(0, 2), 0))
    raises(IndexError, r"mode\(\): Expected reduction dim 1", lambda: ember.mode(ember.ones(2, 0)))


# -- quantiles -------------------------------------------------------------------------


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
@pytest.mark.parametrize("arr", [FLOATS, SPECIAL, np.array(2.5)])
def test_quantile_and_nanquantile(arr, interpolation):
    kw = dict(interpolation=interpolation)
    for name in ("quantile", "nanquantile"):
        same(lambda lib, x, n=name: getattr(lib, n)(x, 0.3, **kw), arr)
        same(lambda lib, x, n=name: getattr(lib, n)(x, 0.5, -1, True, **kw), arr)
        same(lambda lib, x, n=name: getattr(x, n)(
            lib.tensor([0.0, 0.25, 0.5, 1.0], dtype=x.dtype), 0, **kw), arr)
        same(lambda lib, x, n=name: getattr(lib, n)(
            x, lib.tensor(0.75, dtype=x.dtype), keepdim=True, **kw), arr)


def test_quantile_gradient_and_errors():
    same_grad(lambda lib, x: lib.quantile(x, lib.tensor([0.1, 0.6], dtype=x.dtype), 1), FLOATS)
    same_grad(lambda lib, x: lib.nanquantile(x, 0.35, interpolation="midpoint"), FLOATS)
    x = ember.tensor([1.0, 2.0, 3.0])
    raises(RuntimeError, r"quantile\(\) q must be in the range \[0, 1\] but got 1.5",
           lambda: ember.quantile(x, 1.5))
    raises(RuntimeError, r"q values must be in the range \[0, 1\]",
           lambda: ember.quantile(x, ember.tensor([0.5, -0.1])))
    raises(RuntimeError, "must be either float or double dtype",
           lambda: ember.quantile(ember.tensor([1, 2]), 0.5))
    raises(RuntimeError, "q must be a scalar or 1D tensor",
           lambda: ember.quantile(x, ember.tensor([[0.5]])))
    raises(RuntimeError, "q tensor must be same dtype as the input tensor",
           lambda: ember.quantile(x, ember.tensor([0.5], dtype=ember.float64)))
    raises(RuntimeError, "interpolation must be one of linear, lower, higher, midpoint or "
           "nearest, but got foo", lambda: ember.quantile(x, 0.5, interpolation="foo"))
    raises(RuntimeError, "input tensor must be non-empty", lambda: ember.quantile(
        ember.ones(0), 0.5))


# -- scans -----------------------------------------------------------------------------


@pytest.mark.parametrize("arr", [FLOATS, SPECIAL, INTS, np.array(2.5), np.zeros((0, 3)),
                                 np.array([[True, False], [True, True]])])
def test_scans(arr):
    for dim in (0, -1):
        same(lambda lib, x, d=dim: lib.cumprod(x, d), arr)
        same(lambda lib, x, d=dim: x.cummax(d), arr)
        same(lambda lib, x, d=dim: lib.cummin(x, d), arr)
        if arr.dtype.kind == "f":
            same(lambda lib, x, d=dim: lib.logcumsumexp(x, d), arr)
    same(lambda lib, x: lib.cumprod(x, 0, dtype=lib.float64), arr)


def test_scans_over_long_rows_and_in_place():
    long_row = RNG.uniform(0.9, 1.1, (2, 37))
    same(lambda lib, x: lib.cumprod(x, 1), long_row)
    same(lambda lib, x: lib.logcumsumexp(x, 1), long_row)
    same(lambda lib, x: lib.cummax(x, 1), np.round(long_row * 10))
    x = ember.tensor([1.0, 2.0, 3.0])
    assert x.cumprod_(0) is x and x.tolist() == [1.0, 2.0, 6.0]


def test_scan_gradients_and_errors():
    with_zeros = FLOATS.copy()
    with_zeros[0, 1] = with_zeros[1, 1] = with_zeros[1, 3] = 0.0
    same_grad(lambda lib, x: lib.cumprod(x, 1), with_zeros)
    same_grad(lambda lib, x: lib.cummax(x, 1).values, FLOATS)
    same_grad(lambda lib, x: lib.cummin(x, 0).values, FLOATS)
    same_grad(lambda lib, x: lib.logcumsumexp(x, 1), FLOATS)
    raises(RuntimeError, "not implemented for 'Long'", lambda: ember.logcumsumexp(
        ember.tensor([1, 2]), 0))
    assert type(ember.cummax(ember.ones(2), 0)).__name__ == "cummax"


# -- NaN-ignoring reductions, aminmax, trace, renorm -------------------------------------


@pytest.mark.parametrize("arr", [FLOATS, SPECIAL, INTS, np.array(2.5), np.zeros((0, 3)),
                                 np.array([[True, False], [True, True]])])
def test_nansum_nanmean_aminmax(arr):
    same(lambda lib, x: lib.nansum(x), arr)
    same(lambda lib, x: x.nansum(0, keepdim=True), arr)
    same(lambda lib, x: lib.nansum(x, dtype=lib.float64), arr)
    same(lambda lib, x: lib.nanmean(x, -1), arr)
    same(lambda lib, x: lib.aminmax(x), arr)
    same(lambda lib, x: x.aminmax(dim=0, keepdim=True), arr)
    same(lambda lib, x: lib.aminmax(x, keepdim=True), arr)


def test_trace_renorm_diff():
    for arr in (FLOATS, INTS, np.zeros((0, 3)), np.ones(3), np.array([[True, True]])):
        same(lambda lib, x: lib.trace(x), arr)
    same(lambda lib, x: lib.renorm(x, 2, 0, 1.0), FLOATS)
    same(lambda lib, x: x.renorm(1, 1, 0.5), FLOATS)
    same(lambda lib, x: lib.renorm(x, 2, 0, 1.0), INTS)
    x = ember.tensor(FLOATS.copy())
    assert x.renorm_(3, -1, 0.2) is x
    np.testing.assert_allclose(x.numpy(), torch.tensor(FLOATS).renorm(3, -1, 0.2).numpy())
    for arr in (FLOATS, INTS, np.array([True, False, False, True]), np.array(1.0),
                np.zeros((2, 0)), INTS.astype(np.uint8)):
        same(lambda lib, x: lib.diff(x), arr)
        same(lambda lib, x: x.diff(2, 0), arr)
    same(lambda lib, x: lib.diff(x, 1, 0, prepend=x[:1], append=x[:2] * 2), FLOATS)
    same(lambda lib, x: lib.diff(x, 5), np.arange(3.0))
    raises(RuntimeError, "order must be non-negative but got -1",
           lambda: ember.diff(ember.ones(3), -1))
    raises(RuntimeError, r"trace: expected a matrix, but got tensor with dim 1",
           lambda: ember.trace(ember.ones(3)))


def test_nan_reduction_gradients():
    same_grad(lambda lib, x: lib.nansum(x, 1), SPECIAL[:, :3])
    same_grad(lambda lib, x: lib.nanmean(x, 0), SPECIAL[:, :3])
    same_grad(lambda lib, x: lib.aminmax(x, dim=0).max, FLOATS)
    same_grad(lambda lib, x: lib.trace(x), FLOATS)
    same_grad(lambda lib, x: lib.renorm(x, 2, 1, 0.7), FLOATS)
    same_grad(lambda lib, x: lib.diff(x, 2), FLOATS)
    raises(RuntimeError, r"nanmean\(\): expected input to have floating point",
           lambda: ember.nanmean(ember.tensor([1, 2])))
    raises(RuntimeError, "aminmax over an empty dimension", lambda: ember.aminmax(ember.ones(0)))


# -- integrals -------------------------------------------------------------------------


def test_trapezoid_and_cumulative_trapezoid():
    coords = np.array([0.0, 0.5, 2.0])
    for name in ("trapezoid", "trapz", "cumulative_trapezoid"):
        for arr in (FLOATS[:, :3], INTS[:, :3], np.zeros((2, 0))):
            same(lambda lib, y, n=name: getattr(lib, n)(y), arr)
            same(lambda lib, y, n=name: getattr(lib, n)(y, dx=0.5, dim=0), arr)
        same(lambda lib, y, x, n=name: getattr(lib, n)(y, x), FLOATS[:, :3], coords)
        same(lambda lib, y, x, n=name: getattr(lib, n)(y, x, dim=0), FLOATS[:, :3],
             FLOATS[:, :3] ** 2)
        same(lambda lib, y, x, n=name: getattr(lib, n)(y, x), FLOATS, coords)  # mismatch
        same(lambda lib, y, n=name: getattr(lib, n)(y), np.array(2.0))
        same(lambda lib, y, n=name: getattr(lib, n)(y), np.array([True, False]))
    same_grad(lambda lib, y, x: lib.trapezoid(y, x), FLOATS[:, :3], coords)
    same_grad(lambda lib, y: lib.cumulative_trapezoid(y, dx=0.3, dim=0), FLOATS)


# -- search ----------------------------------------------------------------------------

SEQ = np.array([1.0, 2.0, 2.0, 3.0, NAN])
VALS = np.array([[0.0, 2.0, 2.5], [3.0, NAN, INF]])


def test_searchsorted_and_bucketize():
    for kw in ({}, {"right": True}, {"side": "right", "out_int32": True}, {"side": "left"}):
        same(lambda lib, s, v, k=kw: lib.searchsorted(s, v, **k), SEQ, VALS)
        same(lambda lib, s, v, k=kw: lib.searchsorted(s, v, **k), np.array([[1.0, 3.0, 5.0],
                                                                      [2.0, 4.0, 6.0]]), VALS)
        same(lambda lib, s, v, k=kw: lib.searchsorted(s, v, **k), np.zeros(0), VALS)
        same(lambda lib, s, v, k=kw: lib.searchsorted(s, v, **k), SEQ, np.array(2.0))
    same(lambda lib, s: lib.searchsorted(s, 3), np.array([1, 3, 5]))
    same(lambda lib, s, v: lib.searchsorted(s, v), np.array([1, 3, 5]), VALS)  # int vs float
    same(lambda lib, s, v: lib.searchsorted(s, v, sorter=lib.argsort(s)),
         np.array([5.0, 1.0, 3.0, 3.0]), VALS)
    for kw in ({}, {"right": True}, {"out_int32": True}):
        same(lambda lib, v, b, k=kw: lib.bucketize(v, b, **k), VALS, np.array([1.0, 2.0, 3.0]))
        same(lambda lib, v, b, k=kw: lib.bucketize(v, b, **k), INTS, np.array([-1, 2, 4]))
    same(lambda lib, b: lib.bucketize(2.5, b), np.array([1.0, 2.0, 3.0]))


def test_search_errors():
    s, v = ember.ones(2, 3), ember.ones(3, 1)
    raises(RuntimeError, r"boundaries tensor should be 1 dimension or the first N-1 "
           r"dimensions .* boundaries tensor \[2, 3\] and input value tensor \[3, 1\]",
           lambda: ember.searchsorted(s, v))
    raises(RuntimeError, "side can only be 'left' or 'right' but got foo",
           lambda: ember.searchsorted(ember.ones(3), ember.ones(2), side="foo"))
    raises(RuntimeError, "side and right can't be set to opposites",
           lambda: ember.searchsorted(ember.ones(3), ember.ones(2), side="left", right=True))
    raises(RuntimeError, "boundary and sorter must have the same size",
           lambda: ember.searchsorted(ember.ones(3), ember.ones(2),
                                      sorter=ember.tensor([0, 1])))
    raises(RuntimeError, "sorter must be a tensor of long dtype but got dtype Float",
           lambda: ember.searchsorted(ember.ones(3), ember.ones(2), sorter=ember.ones(3)))
    raises(RuntimeError, r"boundaries tensor must be 1 dimension, but got dim\(2\)",
           lambda: ember.bucketize(ember.ones(2), ember.ones(2, 2)))


def test_isin():
    for kw in ({}, {"invert": True}, {"assume_unique": True}):
        same(lambda lib, e, t, k=kw: lib.isin(e, t, **k), INTS, np.array([4, 1, 9]))
        same(lambda lib, e, t, k=kw: lib.isin(e, t, **k), SPECIAL, np.array([NAN, 3.0, INF]))
        same(lambda lib, e, t, k=kw: lib.isin(e, t, **k), INTS, np.array([2.5, 3.0]))
        same(lambda lib, e, t, k=kw: lib.isin(e, t, **k), np.zeros((0, 2)), np.zeros(0))
        same(lambda lib, e, t, k=kw: lib.isin(e, t, **k), np.array(2.0), np.array([[NAN, NAN]]))
    same(lambda lib, t: lib.isin(2, t), np.array([2, 3]))
    same(lambda lib, e: lib.isin(e, 2), np.array([2, 4]))


# -- unique and counting -------------------------------------------------------------------


@pytest.mark.parametrize("kw", [{}, {"return_inverse": True}, {"return_counts": True},
                                {"return_inverse": True, "return_counts": True}])
def test_unique_and_unique_consecutive(kw):
    runs = np.array([[3, 1, 2, 1], [1, 3, 3, 1], [3, 1, 2, 1]])
    for arr in (runs, SPECIAL, np.array(3.0), np.zeros(0), np.array([True, False, True])):
        same(lambda lib, x: lib.unique(x, **kw), arr)
        same(lambda lib, x: x.unique(sorted=True, **kw), arr)
        same(lambda lib, x: lib.unique_consecutive(x, **kw), arr)
    for dim in (0, 1, -1):
        same(lambda lib, x, d=dim: lib.unique(x, dim=d, **kw), runs)
        same(lambda lib, x, d=dim: x.unique_consecutive(dim=d, **kw), runs)


def test_bincount():
    idx = np.array([1, 1, 3, 0])
    same(lambda lib, i: lib.bincount(i), idx)
    same(lambda lib, i: i.bincount(minlength=7), idx)
    same(lambda lib, i: lib.bincount(i), np.zeros(0, dtype=np.int64))
    same(lambda lib, i: lib.bincount(i, minlength=3), np.zeros(0, dtype=np.int64))
    for w in (np.array([0.5, 1, 2, 4], np.float32), np.array([0.5, 1, 2, 4]),
              np.array([5, 1, 2, 4]), np.array([0.5, 1, 2, 4], np.float16)):
        same(lambda lib, i, w_: lib.bincount(i, w_), idx, w)
    same(lambda lib, i: lib.bincount(i), np.array([1, -1]))
    same(lambda lib, i: lib.bincount(i), np.array([[1]]))
    same(lambda lib, i: lib.bincount(i), np.array([1.0]))
    raises(RuntimeError, "minlength should be >= 0",
           lambda: ember.bincount(ember.tensor([1]), minlength=-1))
    raises(RuntimeError, "weights should be 1-d and have the same length as input",
           lambda: ember.bincount(ember.tensor([1]), ember.ones(2)))


DATA = np.array([1.0, 2.0, 1.0, 4.0, 3.5, 0.2, 2.75])


def test_histc_and_histogram():
    for arr in (DATA, DATA.reshape(7, 1).astype(np.float32), np.array([1.0, 1.0]),
                np.zeros(0), np.array(2.0)):
        same(lambda lib, x: lib.histc(x, 4), arr)
        same(lambda lib, x: x.histc(3, 0, 2), arr)
        same(lambda lib, x: lib.histogram(x, 4), arr)
        same(lambda lib, x: x.histogram(3, range=(0.0, 3.0), density=True), arr)
    same(lambda lib, x: lib.histc(x, 3, 0, 2), np.array([1.0, NAN, 3.0, -INF, 2.0]))
    same(lambda lib, x, w: lib.histogram(x, 3, weight=w), DATA, np.arange(7.0))
    same(lambda lib, x, b: lib.histogram(x, b), DATA, np.array([0.0, 1.0, 3.0]))
    same(lambda lib, x, b: lib.histogram(x, b, density=True), DATA, np.array([0.0, 1, 3, 3.5]))
    same(lambda lib, x: lib.histc(x), np.array([1, 2]))
    same(lambda lib, x: lib.histogram(x), np.array([1, 2]))
    same(lambda lib, x: lib.histc(x, bins=2), np.array([1.0, NAN, 3.0]))
    assert type(ember.histogram(ember.ones(3), 2)).__name__ == "histogram"
    assert ember.histogram(ember.ones(3), 2)._fields == ("hist", "bin_edges")
    raises(RuntimeError, "bins must be > 0, but got 0",
           lambda: ember.histc(ember.ones(2), bins=0))
    raises(RuntimeError, "max must be larger than min",
           lambda: ember.histc(ember.ones(2), min=2, max=1))


# -- index writes --------------------------------------------------------------------------

GRID = np.arange(12.0).reshape(3, 4) - 4
ROWS = np.array([[2.0, -1.0, 3.0, 0.5], [4.0, 5.0, -2.0, NAN]])


def _i(lib, values):
    return lib.tensor(values, dtype=lib.int64)


def test_take_and_put():
    same(lambda lib, x: lib.take(x, _i(lib, [[0, -1], [5, 11]])), GRID)
    same(lambda lib, x: x.take(_i(lib, [])), GRID)
    same(lambda lib, x: lib.take(x, _i(lib, 0)), np.array(7.0))
    same(lambda lib, x: lib.take(x, _i(lib, [12])), GRID)
    same(lambda lib, x: x.put(_i(lib, [0, -1]), x[0, :2] * 3), GRID)
    same(lambda lib, x: x.put(_i(lib, [[0, 0], [3, 0]]), x[1] + 1, accumulate=True), GRID)
    same(lambda lib, x: x.put(_i(lib, [0, 1]), x[0, :1]), GRID)
    same(lambda lib, x: x.put(_i(lib, [13]), x[0, :1]), GRID)
    same(lambda lib, x: x.put(_i(lib, [0]), x[0, :1].float()), GRID)
    x = ember.tensor(GRID.copy())
    assert x.put_(ember.tensor([1]), ember.tensor([9.0], dtype=ember.float64)) is x
    assert x[0, 1].item() == 9.0
    same_grad(lambda lib, x, s: x.put(_i(lib, [0, -1, 0]), s, accumulate=True), GRID, GRID[0, :3])
    same_grad(lambda lib, x: lib.take(x, _i(lib, [[1, 1], [0, 7]])), GRID)


def test_take_and_index_add_show_torchs_node_names():
    """Printed results say grad_fn=<TakeBackward0> / <IndexAddBackward0>, as PyTorch's."""
    names = []
    for lib in (torch, ember):
        x = lib.tensor(GRID, requires_grad=True)
        index = _i(lib, [0, 2])
        names.append((lib.take(x, index).grad_fn.name(),
                      x.index_add(0, index, x[:2]).grad_fn.name(),
                      lib.index_add(x, 1, index, x[:, :2], alpha=2).grad_fn.name(),
                      x.clone().index_add_(0, index, x[:2]).grad_fn.name()))
    assert names[1] == names[0]


def test_index_copy_and_index_put():
    same(lambda lib, x: lib.index_copy(x, 1, _i(lib, [2, 0]), x[:, :2] * 10), GRID)
    same(lambda lib, x: x.index_copy(0, _i(lib, [1]), x[:1] + 7), GRID)
    same(lambda lib, x: x.index_copy(1, _i(lib, [2, 0]), x[:, :3]), GRID)
    same(lambda lib, x: x.index_copy(1, _i(lib, [4]), x[:, :1]), GRID)
    same(lambda lib, x: x.index_copy(1, _i(lib, [0]), x[:2, :1]), GRID)
    same(lambda lib, x: x.index_copy(1, _i(lib, [0]), x[:, :1].float()), GRID)
    same(lambda lib, x: lib.index_put(x, (_i(lib, [0, 0]),), x[2], accumulate=True), GRID)
    same(lambda lib, x: lib.index_put(x, (_i(lib, [0, 2]), _i(lib, [1, 1])), x[0, :2]), GRID)
    same(lambda lib, x: x.index_put((x > 2,), x[0, 0]), GRID)
    same(lambda lib, x: x.index_put((_i(lib, [0, 1]),), x[0, 0] * 2, accumulate=True), INTS)
    same(lambda lib, x: x.index_put((_i(lib, [0]),), x[0].float()), GRID)
    same(lambda lib, x: x.index_put((_i(lib, [5]),), x[0]), GRID)
    y = ember.tensor(GRID.copy())
    assert y.index_put_((ember.tensor([0]),), ember.zeros(4, dtype=ember.float64)) is y
    assert y[0].tolist() == [0.0] * 4
    same_grad(lambda lib, x, v: lib.index_put(x, (_i(lib, [0, 0]), _i(lib, [1, 1])), v,
                                              accumulate=True), GRID, GRID[0, :2])
    same_grad(lambda lib, x, s: x.index_copy(1, _i(lib, [3, 0]), s), GRID, GRID[:, :2] * 2)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_and_index_reduce(reduce, include_self):
    kw = dict(include_self=include_self)
    index = [[0, 1, 0, 2], [0, 0, 0, 1]]
    same(lambda lib, x, s: lib.scatter_reduce(x, 0, _i(lib, index), s, reduce, **kw), GRID,
         ROWS)
    same(lambda lib, x, s: x.scatter_reduce(1, _i(lib, [[0, 0], [3, 3]]), s, reduce, **kw),
         INTS, INTS[:, :2] * 3)
    same(lambda lib, x, s: x.scatter_reduce(0, _i(lib, [[0, 1], [0, 1]]), s, reduce, **kw),
         np.array([[True, False], [False, True]]), np.array([[True, True], [False, False]]))
    same(lambda lib, x, s: lib.scatter_reduce(x, 0, _i(lib, [[5, 0, 0, 0]]), s, reduce),
         GRID, ROWS)
    finite = np.nan_to_num(ROWS)
    same_grad(lambda lib, x, s: lib.scatter_reduce(x, 0, _i(lib, index), s, reduce, **kw),
              GRID, finite)
    if reduce != "sum":
        same(lambda lib, x, s: lib.index_reduce(x, 0, _i(lib, [2, 2]), s, reduce, **kw), GRID,
             ROWS)
        same(lambda lib, x, s: x.index_reduce(1, _i(lib, [0, 0, 3]), s, reduce, **kw), INTS,
             INTS[:, :3] + 4)
        same_grad(lambda lib, x, s: lib.index_reduce(x, 1, _i(lib, [1, 3, 1]), s, reduce, **kw),
                  GRID, GRID[:, :3] * 0.5 + 1)
    x = ember.tensor(GRID.copy())
    assert x.scatter_reduce_(0, ember.tensor([[1, 1, 1, 1]]),
                             ember.tensor(ROWS[:1]), reduce, **kw) is x


def test_scatter_reduce_product_gradient_with_zeros():
    x = GRID + 0.5
    x[0, 0] = 0.0
    s = np.array([[0.0, 1.5, 0.0, 2.0], [0.0, 3.0, 0.5, 0.0]])
    for include_self in (True, False):
        same_grad(lambda lib, a, b, i=include_self: lib.scatter_reduce(
            a, 0, _i(lib, [[0, 1, 0, 2], [1, 1, 0, 0]]), b, "prod", include_self=i), x, s)


def test_index_reduction_errors():
    x = ember.zeros(3, 4)
    raises(RuntimeError, "reduce argument must be either sum, prod, mean, amax or amin, got foo",
           lambda: ember.scatter_reduce(x, 0, ember.tensor([[0]]), ember.ones(1, 1), "foo"))
    raises(RuntimeError, "Expected reduce to be one of prod, mean, amax or amin but got sum",
           lambda: ember.index_reduce(x, 0, ember.tensor([0]), ember.ones(1, 4), "sum"))
    raises(RuntimeError, r"Number of indices \(2\) should be equal to source.size\(dim\): "
           r"\(3\), for dim: 1", lambda: ember.index_reduce(
               x, 1, ember.tensor([0, 1]), ember.ones(3, 3), "amax"))
    raises(RuntimeError, "source tensor shape must match self tensor shape",
           lambda: ember.index_reduce(x, 1, ember.tensor([0]), ember.ones(2, 1), "amax"))
    raises(IndexError, r"index_copy_\(\): Number of indices \(2\) should be equal to "
           r"source.size\(dim\) \(3\)", lambda: x.index_copy(1, ember.tensor([2, 0]),
                                                            ember.ones(3, 3)))
    raises(RuntimeError, "Index put requires the source and destination dtypes match, got "
           "Float for the destination and Double for the source", lambda: x.index_put(
               (ember.tensor([0]),), ember.zeros(4, dtype=ember.float64)))


def test_scatter_reduce_kernel_without_ufunc_at():
    """The rounds fallback (CuPy has no multiply.at) reduces repeats like ufunc.at."""
    from ember.backends.xp.indexing import _reduce_by_rounds, along_axis

    index = np.array([[0, 1, 0, 2], [0, 0, 0, 1], [2, 0, 0, 1]])
    src = RNG.uniform(0.5, 2.0, (3, 4))
    key = along_axis(np, index, 0)
    for ufunc in (np.multiply, np.maximum, np.minimum):
        want, got = GRID.copy() + 5, GRID.copy() + 5
        ufunc.at(want, key, src)
        _reduce_by_rounds(np, ufunc, got, key, src)
        np.testing.assert_array_equal(got, want)


def test_scatter_with_reduce_as_torch():
    """`scatter(..., reduce="add" | "multiply")`, of a tensor or a number, in and out of
    place; a tensor src warns once (deprecated), another reduce is refused, as PyTorch."""
    import warnings

    seen = []
    for lib in (torch, ember):
        index = lib.tensor([[0, 0, 2]])
        src = lib.tensor([[2.0, 3.0, 4.0]])
        values = [lib.ones(1, 3).scatter(1, index, src, reduce="multiply").tolist(),
                  lib.ones(1, 3).scatter(1, index, 5.0, reduce="multiply").tolist(),
                  lib.ones(1, 3).scatter(1, index, 5.0, reduce="add").tolist(),
                  lib.ones(1, 3, dtype=lib.long).scatter(
                      1, index, lib.tensor([[2, 3, 4]]), reduce="multiply").tolist(),
                  lib.ones(1, 3).scatter_(1, index, src, reduce="add").tolist()]
        with pytest.raises(RuntimeError) as info:
            lib.ones(1, 3).scatter(1, index, src, reduce="mean")
        seen.append((values, str(info.value)))
    assert seen[1] == seen[0]
    ember.core.errors._warned.clear()  # (PyTorch warns once a process; so does ember)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ember.ones(3).scatter(0, ember.tensor([0]), ember.ones(1), reduce="add")
        ember.ones(3).scatter(0, ember.tensor([0]), ember.ones(1), reduce="add")
        ember.ones(3).scatter(0, ember.tensor([0]), 2.0, reduce="add")
    assert [str(w.message)[:45] for w in caught] == [
        "The reduce argument of ember.scatter with Ten"]


def test_masked_scatter():
    same(lambda lib, x, s: lib.masked_scatter(x, x > 2, s), GRID, np.arange(10.0, 22.0))
    same(lambda lib, x, s: x.masked_scatter(lib.tensor([True, False, False, True]), s), GRID,
         np.arange(10.0, 22.0))
    same(lambda lib, x, s: lib.masked_scatter(x, x > 2, s), GRID, np.arange(2.0))
    same(lambda lib, x, s: lib.masked_scatter(x, (x > 2).long(), s), GRID, np.arange(12.0))
    same(lambda lib, x, s: lib.masked_scatter(x, x > 2, s), INTS, np.arange(10))
    x = ember.tensor(GRID.copy())
    assert x.masked_scatter_(x > 6, ember.zeros(12, dtype=ember.float64)) is x
    assert x.max().item() == 6.0
    same_grad(lambda lib, x, s: lib.masked_scatter(x, x > 0, s), GRID, np.arange(12.0))


def test_argwhere_and_nonzero_static():
    for arr in (INTS, SPECIAL, np.array(0.0), np.array(3), np.zeros((0, 2))):
        same(lambda lib, x: lib.argwhere(x), arr)
        same(lambda lib, x: x.nonzero_static(size=3), arr)
        same(lambda lib, x: lib.nonzero_static(x, size=12, fill_value=-7), arr)
    raises(RuntimeError, "'size' must be an non-negative integer",
           lambda: ember.nonzero_static(ember.ones(2), size=-1))


def test_scatter_reduce_exports_to_onnx():
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    import io

    class Model(ember.nn.Module):
        def forward(self, x, s):
            index = ember.tensor([[0, 1, 0, 2], [0, 0, 0, 1]])
            return (x.scatter_reduce(0, index, s, "amax") +
                    x.scatter_reduce(0, index, s, "prod") + ember.sort(x, 1).values)

    x, s = ember.tensor(GRID, dtype=ember.float32), ember.tensor(np.nan_to_num(ROWS),
                                                               dtype=ember.float32)
    buf = io.BytesIO()
    ember.onnx.export(Model(), (x, s), buf, opset_version=18)
    onnx.checker.check_model(onnx.load_from_string(buf.getvalue()), full_check=True)
    session = ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])
    feeds = {i.name: a.numpy() for i, a in zip(session.get_inputs(), (x, s))}
    np.testing.assert_allclose(session.run(None, feeds)[0], Model()(x, s).numpy(), rtol=1e-6)


# -- gradient ---------------------------------------------------------------------------

SAMPLES = np.array([[1, 2, 4, 8, 3], [3, 1, 0, 5, 2]])


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient(edge_order):
    kw = dict(edge_order=edge_order)
    coords = np.array([0.0, 1.0, 3.0, 4.0, 7.0])
    same(lambda lib, x: lib.gradient(x, **kw), SAMPLES)
    same(lambda lib, x: lib.gradient(x, spacing=2.0, dim=1, **kw), SAMPLES.astype(np.float32))
    same(lambda lib, x: lib.gradient(x, spacing=[2.0, 3.0], **kw), GRID[:3, :3])
    same(lambda lib, x, c: lib.gradient(x, spacing=(c,), dim=-1, **kw), SAMPLES * 1.0, coords)
    same(lambda lib, x, c: lib.gradient(x, spacing=(c[:3], c), **kw), FLOATS[:, :5] * 1.0,
         coords)
    same(lambda lib, x: lib.gradient(x, **kw), np.ones((1, 3)))
    same(lambda lib, x: lib.gradient(x, spacing=[1.0, 2.0, 3.0], **kw), SAMPLES)
    same_grad(lambda lib, x, c: lib.gradient(x, spacing=(c,), dim=1, **kw)[0], FLOATS, coords)
    assert ember.gradient(ember.tensor(2.0)) == ()
    raises(RuntimeError, "only supports edge_order=1 and edge_order=2",
           lambda: ember.gradient(ember.ones(4), edge_order=3))


def test_histogramdd():
    points = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 0.0], [2.0, 2.0], [0.5, 7.0]])
    same(lambda lib, x, w: lib.histogramdd(x, bins=[3, 2], weight=w), points, np.arange(5.0))
    same(lambda lib, x: lib.histogramdd(x, bins=2, range=[0.0, 1.0, 0.0, 1.0], density=True),
         points)
    same(lambda lib, x, a, b: lib.histogramdd(x, bins=[a, b]), points, np.array([0.0, 1, 2]),
         np.array([0.0, 2.0]))
    same(lambda lib, x: lib.histogramdd(x, bins=[2, 3, 1]), RNG.uniform(0, 1, (4, 2, 3)))
    same(lambda lib, x: lib.histogramdd(x, bins=2), np.zeros((0, 2)))
    same(lambda lib, x: lib.histogramdd(x, bins=2), np.array([1.0, 2.0]))
    same(lambda lib, x: lib.histogramdd(x, bins=[2, 2, 2]), points)
    r = ember.histogramdd(ember.tensor(points), bins=2)
    assert type(r).__name__ == "histogramdd" and isinstance(r.bin_edges, tuple)


# -- reductions over dim 0 of a 0-d tensor (all of it, as in PyTorch) ----------------------


@pytest.mark.parametrize("name, args", [
    ("sum", (0,)), ("mean", (0, True)), ("prod", (-1,)), ("amax", (0,)), ("amin", (0, True)),
    ("logsumexp", (0,)), ("all", (0,)), ("any", (-1,)), ("cumsum", (0,)), ("max", (0,)),
    ("min", (0, True)), ("argmax", (0,)), ("norm", (2, 0))])
def test_zero_dim_reductions_over_dim_zero(name, args):
    same(lambda lib, x: getattr(lib, name)(x, *args), np.array(2.5))
    if name not in ("all", "any", "argmax"):
        same_grad(lambda lib, x: _tuple(getattr(lib, name)(x, *args))[0], np.array(2.5))


def test_long_rows_sort_quickly_on_opencl():
    """OpenCL's topk ranks by counting; a whole order of a long row is sorted on the host
    instead (the same stable order, NaN first descending)."""
    pytest.importorskip("pyopencl")
    try:
        ember.zeros(1, device="opencl")
    except Exception as err:  # noqa: BLE001 - any reason the device is missing
        pytest.skip(f"no OpenCL device: {err}")
    a = np.round(RNG.standard_normal((2, 5000)), 1)
    a[:, ::97] = NAN
    x = ember.tensor(a, device="opencl")
    values, indices = ember.sort(x, 1, descending=True)
    want = torch.sort(torch.tensor(a), dim=1, descending=True, stable=True)
    np.testing.assert_array_equal(indices.cpu().numpy(), want.indices.numpy())
    np.testing.assert_array_equal(values.cpu().numpy(), want.values.numpy())
    np.testing.assert_array_equal(ember.topk(x, 3, 1, largest=False).values.cpu().numpy(),
                                  torch.topk(torch.tensor(a), 3, 1, largest=False).values)


def test_index_reduce_warns_once_that_it_is_beta_as_torch():
    """PyTorch's TORCH_WARN_ONCE: the first call of the process warns, later ones not."""
    from ember.core.ops import indexing

    indexing._INDEX_REDUCE_WARNED.clear()  # (as in a fresh process)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            ember.ones(3).index_reduce(0, ember.tensor([0, 1]), ember.ones(2), "prod")
    assert [(w.category, str(w.message)) for w in caught] == [
        (UserWarning, "index_reduce() is in beta and the API may change at any time.")]


SEGMENT_DATA = np.array([[1.0, 3.0, 3.0], [0.0, 2.0, 0.0], [NAN, 0.0, 2.0], [4.0, -1.0, 5.0]])


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "prod", "amax"])
@pytest.mark.parametrize("initial", [None, 3.0])
def test_segment_reduce_values_and_gradients_as_torch(reduce, initial):
    """segment_reduce by lengths (batched along a later axis, an empty segment) and by
    offsets: values (NaN, zeros, ties) and PyTorch's gradients."""
    calls = [
        lambda L, x: L.segment_reduce(x, reduce, lengths=L.tensor([[2, 1], [3, 0], [1, 2],
                                                                   [0, 3]]),
                                      axis=1, initial=initial),
        lambda L, x: L.segment_reduce(x, reduce, offsets=L.tensor([0, 1, 1, 3]),
                                      initial=initial),
        lambda L, x: L.segment_reduce(x, reduce, lengths=L.tensor([1, 2]), axis=-2,
                                      unsafe=True, initial=initial),
    ]
    w = np.arange(1.0, 13.0)
    for call in calls:
        grads = []
        for L in (torch, ember):
            x = L.tensor(SEGMENT_DATA, requires_grad=True)
            y = call(L, x)
            grads.append((y.detach().numpy(), str(y.grad_fn).split()[0]))
            (y * L.tensor(w[:y.numel()].reshape(tuple(y.shape)))).sum().backward()
            grads[-1] += (x.grad.numpy(),)
        (want, want_fn, want_grad), (got, got_fn, got_grad) = grads
        np.testing.assert_allclose(got, want)
        assert got_fn == want_fn == "<SegmentReduceBackward0"
        np.testing.assert_allclose(got_grad, want_grad)


@pytest.mark.parametrize("call", [
    lambda L: L.segment_reduce(L.ones(3, 4), "sum", lengths=L.tensor([1, 3]), axis=1),
    lambda L: L.segment_reduce(L.ones(3, 4), "sum", lengths=L.tensor([1, 1])),
    lambda L: L.segment_reduce(L.ones(3, 4), "foo", lengths=L.tensor([1, 2])),
    lambda L: L.segment_reduce(L.ones(3, 4), "sum"),
    lambda L: L.segment_reduce(L.ones(3, 4, dtype=L.int64), "sum", lengths=L.tensor([3])),
    lambda L: L.segment_reduce(L.ones(3, 4), "sum", lengths=L.tensor([-1, 3, 1])),
    lambda L: L.segment_reduce(L.ones(3, 4), "sum", lengths=L.tensor([1.0, 2.0])),
    lambda L: L.segment_reduce(L.ones(3, 4), "sum", offsets=L.tensor([0, 2, 1, 3])),
    lambda L: L.segment_reduce(L.ones(3, 4), "sum", indices=L.tensor([0, 2])),
    lambda L: L.segment_reduce(L.ones(3, 4), "sum", lengths=L.tensor([3]), axis=2),
])
def test_segment_reduce_errors_as_torch(call):
    with pytest.raises(Exception) as want:
        call(torch)
    with pytest.raises(type(want.value)) as got:
        call(ember)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("call", [
    lambda L: L.hash_tensor(L.tensor([[1.1918, -1.1813, 0.3373]])),
    lambda L: L.hash_tensor(L.tensor([1, -2, 3], dtype=L.int8)),
    lambda L: L.hash_tensor(L.tensor([255, 7], dtype=L.uint8)),
    lambda L: L.hash_tensor(L.tensor([True, False, True])),
    lambda L: L.hash_tensor(L.tensor([1.5, -0.25], dtype=L.float16)),
    lambda L: L.hash_tensor(L.tensor([1.5, -0.25], dtype=L.bfloat16)),
    lambda L: L.hash_tensor(L.arange(24.0).reshape(2, 3, 4), 1),
    lambda L: L.hash_tensor(L.arange(35.0).reshape(5, 7), (0, 1), keepdim=True),
    lambda L: L.arange(35.0).reshape(5, 7).hash_tensor(-1),
    lambda L: L.hash_tensor(L.zeros(0, 3), 1),
    lambda L: L.hash_tensor(L.tensor([-0.0, NAN, INF])),
    lambda L: L.hash_tensor(L.tensor(3.0, requires_grad=True)),
    # errors
    lambda L: L.hash_tensor(L.tensor([1.0]), mode=1),
    lambda L: L.hash_tensor(L.tensor([1 + 2j])),
    lambda L: L.hash_tensor(L.tensor([])),
    lambda L: L.hash_tensor(L.zeros(2, 0), 1),
    lambda L: L.hash_tensor(L.tensor([5], dtype=L.uint64)),
])
def test_hash_tensor_as_torch(call):
    def run(L):
        try:
            r = call(L)
        except Exception as err:  # noqa: BLE001 - compared by type name and message
            return type(err).__name__, str(err)
        return str(r.dtype).split(".")[1], tuple(r.shape), r.tolist(), r.requires_grad

    assert run(ember) == run(torch)
