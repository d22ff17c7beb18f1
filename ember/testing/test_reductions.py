"""Reductions on the device under test: sum, mean, prod, max/min (with indices), amax,
amin, argmax, argmin, all, any, var, std, logsumexp, norm, cumsum, count_nonzero, with
`dim` (int, negative, tuple, None) and `keepdim`, against NumPy."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ember
from ember.testing import support as S


def _draw_input(device: ember.device, data: st.DataObject, dtypes: list, lo: float = -4.0,
                hi: float = 4.0, unique: bool = False, min_dims: int = 0) -> tuple:
    d = data.draw(S.dtypes(device, dtypes), label="dtype")
    shape = data.draw(S.shapes(min_dims=min_dims), label="shape")
    if d is ember.uint8:
        lo = max(lo, 0)
    if unique:  # distinct values: argmax/max indices are then unambiguous
        n = int(np.prod(shape))
        vals = data.draw(st.permutations(range(n)), label="order")
        arr = (np.array(vals, dtype=np.float64).reshape(shape) - n // 2)
        arr = (arr / 4 if d.is_floating_point else arr).astype(S.np_dtype(d))
    else:
        arr = data.draw(S.arrays(d, shape, lo, hi), label="x")
    return d, arr


def _reduced(arr: np.ndarray, ref, dim, keepdim: bool, **kw) -> np.ndarray:
    return np.asarray(ref(arr, axis=S.np_dims(dim, arr.ndim), keepdims=keepdim, **kw))


@S.prop()
@given(data=st.data())
def test_sum(device: ember.device, data: st.DataObject) -> None:
    d, arr = _draw_input(device, data, S.ALL_DTYPES)
    dim = data.draw(S.dims_for(arr.ndim), label="dim")
    keepdim = data.draw(st.booleans(), label="keepdim")
    x = S.on(device, arr, d)
    want = d if d.is_floating_point else ember.int64
    wide = arr.astype(np.float64 if d.is_floating_point else np.int64)
    ref = S.reference_cast(_reduced(wide, np.sum, dim, keepdim), want)
    S.assert_matches(ember.sum(x, dim, keepdim), ref, device, dtype=want)
    S.assert_matches(x.sum(dim=dim, keepdim=keepdim), ref, device, dtype=want)


@S.prop()
@given(data=st.data())
def test_mean(device: ember.device, data: st.DataObject) -> None:
    d, arr = _draw_input(device, data, S.FLOATING)
    dim = data.draw(S.dims_for(arr.ndim), label="dim")
    keepdim = data.draw(st.booleans(), label="keepdim")
    x = S.on(device, arr, d)
    ref = S.reference_cast(_reduced(arr.astype(np.float64), np.mean, dim, keepdim), d)
    S.assert_matches(x.mean(dim, keepdim), ref, device, dtype=d)


def test_mean_of_integers_raises(device: ember.device) -> None:
    with pytest.raises(RuntimeError, match="mean.*dtype"):
        S.on(device, [1, 2, 3]).mean()
    S.assert_matches(S.on(device, [1, 2]).mean(dtype=ember.float64), 1.5, device,
                     dtype=ember.float64)


@S.prop()
@given(data=st.data())
def test_prod(device: ember.device, data: st.DataObject) -> None:
    d, arr = _draw_input(device, data, S.NUMERIC, lo=-1.5, hi=1.5)
    dim = data.draw(S.dims_for(arr.ndim, allow_tuple=False), label="dim")
    keepdim = data.draw(st.booleans(), label="keepdim") if dim is not None else False
    x = S.on(device, arr, d)
    want = d if d.is_floating_point else ember.int64
    wide = arr.astype(np.float64 if d.is_floating_point else np.int64)
    ref = S.reference_cast(_reduced(wide, np.prod, dim, keepdim), want)
    S.assert_matches(ember.prod(x, dim, keepdim) if dim is not None else ember.prod(x), ref,
                     device, dtype=want)


@pytest.mark.parametrize("name", ["amax", "amin"])
@S.prop()
@given(data=st.data())
def test_amax_amin(device: ember.device, name: str, data: st.DataObject) -> None:
    d, arr = _draw_input(device, data, S.ALL_DTYPES)
    dim = data.draw(S.dims_for(arr.ndim), label="dim")
    keepdim = data.draw(st.booleans(), label="keepdim")
    x = S.on(device, arr, d)
    ref = _reduced(arr, np.max if name == "amax" else np.min, dim, keepdim)
    out = getattr(ember, name)(x, () if dim is None else dim, keepdim)
    S.assert_matches(out, ref, device, dtype=d)


@pytest.mark.parametrize("name", ["max", "min"])
@S.prop()
@given(data=st.data())
def test_max_min(device: ember.device, name: str, data: st.DataObject) -> None:
    d, arr = _draw_input(device, data, S.NUMERIC, unique=True)
    x = S.on(device, arr, d)
    npf, arg = (np.max, np.argmax) if name == "max" else (np.min, np.argmin)
    S.assert_matches(getattr(x, name)(), npf(arr), device, dtype=d, what=f"{name}()")
    if arr.ndim == 0:
        return
    dim = data.draw(st.integers(-arr.ndim, arr.ndim - 1), label="dim")
    keepdim = data.draw(st.booleans(), label="keepdim")
    result = getattr(ember, name)(x, dim, keepdim)
    values, indices = result
    assert result.values is values and result.indices is indices
    S.assert_matches(values, npf(arr, axis=dim, keepdims=keepdim), device, dtype=d,
                     what="values")
    S.assert_matches(indices, arg(arr, axis=dim, keepdims=keepdim), device,
                     dtype=ember.int64, what="indices")


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@S.prop()
@given(data=st.data())
def test_argmax_argmin(device: ember.device, name: str, data: st.DataObject) -> None:
    d, arr = _draw_input(device, data, S.NUMERIC, unique=True)
    dim = data.draw(st.none() | st.integers(-max(arr.ndim, 1), max(arr.ndim, 1) - 1)
                    if arr.ndim else st.none(), label="dim")
    keepdim = data.draw(st.booleans(), label="keepdim")
    x = S.on(device, arr, d)
    f = np.argmax if name == "argmax" else np.argmin
    ref = f(arr, axis=dim, keepdims=keepdim) if dim is not None else \
        np.asarray(f(arr)).reshape((1,) * arr.ndim if keepdim else ())
    S.assert_matches(getattr(x, name)(dim, keepdim), ref, device, dtype=ember.int64)


@S.prop()
@given(data=st.data())
def test_topk(device: ember.device, data: st.DataObject) -> None:
    d, arr = _draw_input(device, data, S.NUMERIC, unique=True, min_dims=1)
    dim = data.draw(st.integers(-arr.ndim, arr.ndim - 1), label="dim")
    k = data.draw(st.integers(0, arr.shape[dim]), label="k")
    largest = data.draw(st.booleans(), label="largest")
    x = S.on(device, arr, d)
    order = np.argsort(-arr if largest else arr, axis=dim, kind="stable")
    ref_idx = np.take(order, np.arange(k), axis=dim)
    values, indices = ember.topk(x, k, dim, largest)
    S.assert_matches(indices, ref_idx, device, dtype=ember.int64, what="indices")
    S.assert_matches(values, np.take_along_axis(arr, ref_idx, dim), device, dtype=d,
                     what="values")


def test_ties_pick_the_first(device: ember.device) -> None:
    x = S.on(device, np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]], np.float32))
    S.assert_matches(x.argmax(1), [1, 0], device)
    S.assert_matches(x.argmin(1), [0, 2], device)
    S.assert_matches(x.max(1).indices, [1, 0], device)
    S.assert_matches(x.argmax(), 1, device)


@pytest.mark.parametrize("name", ["all", "any"])
@S.prop()
@given(data=st.data())
def test_all_any(device: ember.device, name: str, data: st.DataObject) -> None:
    d, arr = _draw_input(device, data, S.ALL_DTYPES, lo=-1, hi=1)
    dim = data.draw(S.dims_for(arr.ndim), label="dim")
    keepdim = data.draw(st.booleans(), label="keepdim")
    x = S.on(device, arr, d)
    ref = _reduced(arr.astype(bool), np.all if name == "all" else np.any, dim, keepdim)
    want = ember.uint8 if d is ember.uint8 else ember.bool  # PyTorch keeps uint8
    S.assert_matches(getattr(ember, name)(x, dim, keepdim), ref, device, dtype=want)


@pytest.mark.parametrize("name", ["var", "std"])
@S.prop()
@given(data=st.data())
def test_var_std(device: ember.device, name: str, data: st.DataObject) -> None:
    d, arr = _draw_input(device, data, [ember.float32, ember.float64], min_dims=1)
    dim = data.draw(S.dims_for(arr.ndim), label="dim")
    keepdim = data.draw(st.booleans(), label="keepdim")
    form = data.draw(st.sampled_from(["default", "unbiased=False", "correction=0",
                                      "correction=2"]), label="form")
    x = S.on(device, arr, d)
    fn = getattr(ember, name)
    if form == "default":
        out, ddof = fn(x, dim, keepdim=keepdim), 1
    elif form == "unbiased=False":
        out, ddof = fn(x, dim, False, keepdim), 0
    else:
        ddof = int(form[-1])
        out = fn(x, dim, keepdim=keepdim, correction=ddof)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "Degrees of freedom <= 0"
        ref = _reduced(arr.astype(np.float64), np.var if name == "var" else np.std, dim,
                       keepdim, ddof=ddof)
    n = arr.size if dim is None else int(np.prod([arr.shape[i] for i in
                                                  S.np_dims(dim, arr.ndim)]))
    if n - ddof <= 0:  # no degrees of freedom left: NaN, as torch (numpy may give inf)
        ref = np.full(ref.shape, np.nan)
    S.assert_matches(out, S.reference_cast(ref, d), device, dtype=d, rtol=1e-4, atol=1e-5)


@S.prop()
@given(data=st.data())
def test_logsumexp(device: ember.device, data: st.DataObject) -> None:
    d, arr = _draw_input(device, data, [ember.float32, ember.float64], min_dims=1)
    offset = data.draw(st.sampled_from([0.0, 200.0, -200.0]), label="offset")
    arr = (arr.astype(np.float64) * 4 + offset).astype(arr.dtype)  # large: must be stable
    dim = data.draw(S.dims_for(arr.ndim, allow_none=False), label="dim")
    keepdim = data.draw(st.booleans(), label="keepdim")
    x = S.on(device, arr, d)
    axis = S.np_dims(dim, arr.ndim)
    a = arr.astype(np.float64)
    m = a.max(axis=axis, keepdims=True)
    ref = np.log(np.exp(a - m).sum(axis=axis, keepdims=True)) + m
    if not keepdim:
        ref = ref.reshape([s for i, s in enumerate(a.shape) if i not in axis])
    S.assert_matches(ember.logsumexp(x, dim, keepdim), S.reference_cast(ref, d), device,
                     dtype=d, rtol=1e-5 if d is ember.float32 else 1e-10)


@S.prop()
@given(data=st.data())
def test_norm(device: ember.device, data: st.DataObject) -> None:
    d, arr = _draw_input(device, data, [ember.float32, ember.float64], min_dims=1)
    p = data.draw(st.sampled_from(["fro", 1, 2, 3, float("inf"), float("-inf"), 0]),
                  label="p")
    dim = data.draw(S.dims_for(arr.ndim), label="dim")
    keepdim = data.draw(st.booleans(), label="keepdim")
    x = S.on(device, arr, d)
    a = np.abs(arr.astype(np.float64))
    axis = S.np_dims(dim, arr.ndim)
    if p in ("fro", 2):
        ref = np.sqrt((a * a).sum(axis=axis, keepdims=keepdim))
    elif p == float("inf"):
        ref = a.max(axis=axis, keepdims=keepdim)
    elif p == float("-inf"):
        ref = a.min(axis=axis, keepdims=keepdim)
    elif p == 0:
        ref = (a != 0).sum(axis=axis, keepdims=keepdim).astype(np.float64)
    else:
        ref = (a ** p).sum(axis=axis, keepdims=keepdim) ** (1.0 / p)
    S.assert_matches(ember.norm(x, p, dim, keepdim), S.reference_cast(ref, d), device,
                     dtype=d, rtol=1e-5 if d is ember.float32 else 1e-10)
    if dim is None and not keepdim and p in ("fro", 2):
        S.assert_matches(x.norm(), S.reference_cast(ref, d), device, dtype=d, rtol=1e-5)


@S.prop()
@given(data=st.data())
def test_cumsum(device: ember.device, data: st.DataObject) -> None:
    d, arr = _draw_input(device, data, S.ALL_DTYPES, min_dims=1)
    dim = data.draw(st.integers(-arr.ndim, arr.ndim - 1), label="dim")
    x = S.on(device, arr, d)
    want = d if d.is_floating_point else ember.int64
    wide = arr.astype(np.float64 if d.is_floating_point else np.int64)
    ref = S.reference_cast(np.cumsum(wide, axis=dim), want)
    # float16/bfloat16 accumulate rounding as they go: allow a few ulps
    rtol = {ember.float16: 4e-3, ember.bfloat16: 3e-2}.get(d)
    S.assert_matches(x.cumsum(dim), ref, device, dtype=want, rtol=rtol, atol=rtol)


@S.prop()
@given(data=st.data())
def test_count_nonzero(device: ember.device, data: st.DataObject) -> None:
    d, arr = _draw_input(device, data, S.ALL_DTYPES, lo=-1, hi=1)
    dim = data.draw(S.dims_for(arr.ndim), label="dim")
    x = S.on(device, arr, d)
    ref = np.count_nonzero(arr, axis=S.np_dims(dim, arr.ndim))
    S.assert_matches(x.count_nonzero(dim), np.asarray(ref), device, dtype=ember.int64)


def test_empty_reductions(device: ember.device) -> None:
    x = S.on(device, np.zeros((2, 0), np.float32))
    S.assert_matches(x.sum(1), [0.0, 0.0], device)
    S.assert_matches(x.prod(1), [1.0, 1.0], device)
    S.assert_matches(x.mean(1), [np.nan, np.nan], device)
    S.assert_matches(x.any(1), [False, False], device)
    S.assert_matches(x.all(1), [True, True], device)
    with pytest.raises((RuntimeError, IndexError), match="zero-size|non-zero size|empty"):
        x.amax(1)
    with pytest.raises(IndexError, match="argmax"):  # PyTorch's type
        x.argmax()


def test_reduction_dim_errors(device: ember.device) -> None:
    x = S.on(device, np.zeros((2, 3), np.float32))
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range "
                                         r"of \[-2, 1\], but got 2\)"):
        x.sum(2)
    with pytest.raises(RuntimeError, match="multiple times"):
        x.sum((0, -2))


def test_std_mean_var_mean(device: ember.device) -> None:
    arr = np.random.default_rng(5).uniform(-3, 3, (2, 3, 4))
    x = S.on(device, arr)
    for kwargs, dims, ddof in (({}, None, 1), ({"dim": 1}, 1, 1),
                               ({"dim": (0, 2), "keepdim": True}, (0, 2), 1),
                               ({"dim": 2, "correction": 0}, 2, 0),
                               ({"dim": 0, "unbiased": False}, 0, 0)):
        keep = kwargs.get("keepdim", False)
        mean = arr.mean(axis=dims, keepdims=keep)
        for fn, ref in ((ember.var_mean, np.var), (ember.std_mean, np.std)):
            spread, centre = fn(x, **kwargs)
            what = f"{fn.__name__}({kwargs})"
            S.assert_matches(spread, ref(arr, axis=dims, ddof=ddof, keepdims=keep), device,
                             what=what + "[0]")
            S.assert_matches(centre, mean, device, what=what + "[1]")


def test_sum_to_size(device: ember.device) -> None:
    arr = np.arange(24.0).reshape(2, 3, 4)
    x = S.on(device, arr)
    S.assert_matches(x.sum_to_size(3, 1), arr.sum(axis=(0, 2), keepdims=True)[0], device)
    S.assert_matches(x.sum_to_size((1, 3, 4)), arr.sum(axis=0, keepdims=True), device)
    S.assert_matches(x.sum_to_size(4), arr.sum(axis=(0, 1)), device)
    S.assert_matches(x.sum_to_size(2, 3, 4), arr, device)
    with pytest.raises(RuntimeError):  # (torch: "size {[2, 4]} is not expandable to ...")
        x.sum_to_size(2, 4)


def test_norm_of_integers_raises(device: ember.device) -> None:
    with pytest.raises(RuntimeError):
        ember.norm(S.on(device, np.array([3, 4])))


# -- what this module checks (ember.testing.test_coverage reads it) ---------------------

COVERS = {"sum", "mean", "prod", "amax", "amin", "max", "min", "argmax", "argmin", "all",
          "any", "var", "std", "std_mean", "var_mean", "logsumexp", "norm", "cumsum",
          "count_nonzero", "sum_to_size", "topk"}
"""The declared ops whose values this module's tests check."""


# -- sorting, search and counting (the REDUCE family) -------------------------------------


def test_sort_and_order_statistics_of_integers(device: ember.device) -> None:
    arr = np.array([[3, 1, 2, 2, 7], [0, -4, 4, 4, 1]])
    x = S.on(device, arr)
    values, indices = ember.sort(x, 1, descending=True)
    S.assert_matches(values, -np.sort(-arr, axis=1), device)
    S.assert_matches(indices, np.argsort(-arr, axis=1, kind="stable"), device)
    S.assert_matches(ember.argsort(x, 0), np.argsort(arr, axis=0, kind="stable"), device)
    S.assert_matches(ember.median(x, 1).values, [2, 1], device)
    S.assert_matches(ember.mode(x, 1).values, [2, 4], device)
    S.assert_matches(ember.cumprod(x, 1), np.cumprod(arr, axis=1), device)
    S.assert_matches(ember.cummax(x, 1).values, np.maximum.accumulate(arr, axis=1), device)


def test_searchsorted_bucketize_isin(device: ember.device) -> None:
    seq = np.array([1.0, 2.0, 2.0, 3.0, 5.0])
    vals = np.array([[0.0, 2.0, 2.5], [3.0, 5.0, 9.0]])
    s, v = S.on(device, seq), S.on(device, vals)
    for side in ("left", "right"):
        S.assert_matches(ember.searchsorted(s, v, side=side),
                         np.searchsorted(seq, vals, side=side), device)
    S.assert_matches(ember.bucketize(v, s, right=True), np.searchsorted(seq, vals, "right"),
                     device)
    rows = np.array([[1.0, 3.0, 5.0], [0.0, 2.0, 4.0]])
    S.assert_matches(ember.searchsorted(S.on(device, rows), v),
                     [np.searchsorted(r, q) for r, q in zip(rows, vals)], device)
    elements, pool = np.array([[1, 2], [3, 4]]), np.array([4, 1, 9])
    S.assert_matches(ember.isin(S.on(device, elements), S.on(device, pool)),
                     np.isin(elements, pool), device)


def test_unique_and_counting(device: ember.device) -> None:
    arr = np.array([[3, 1, 2], [1, 3, 3]])
    x = S.on(device, arr)
    values, inverse, counts = ember.unique(x, return_inverse=True, return_counts=True)
    ref = np.unique(arr, return_inverse=True, return_counts=True)
    S.assert_matches(values, ref[0], device)
    S.assert_matches(inverse, ref[1].reshape(arr.shape), device)
    S.assert_matches(counts, ref[2], device)
    S.assert_matches(ember.unique(x, dim=1), np.unique(arr, axis=1), device)
    runs = S.on(device, np.array([1, 1, 2, 2, 3, 1, 1]))
    values, counts = ember.unique_consecutive(runs, return_counts=True)
    S.assert_matches(values, [1, 2, 3, 1], device)
    S.assert_matches(counts, [2, 2, 1, 2], device)
    S.assert_matches(ember.bincount(S.on(device, np.array([1, 1, 3]))), [0, 2, 0, 1], device)
    data = np.array([1.0, 2.0, 1.0, 4.0, 3.5, 0.2])
    S.assert_matches(ember.histc(S.on(device, data), 3, 0, 3),
                     np.histogram(data[data <= 3], 3, (0, 3))[0], device)
    hist, edges = ember.histogram(S.on(device, data), 4)
    ref_hist, ref_edges = np.histogram(data, 4)
    S.assert_matches(hist, ref_hist, device, dtype=ember.float64)
    S.assert_matches(edges, ref_edges, device)


def test_histogramdd(device: ember.device) -> None:
    points = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 0.0], [2.0, 2.0], [0.5, 1.5]])
    hist, edges = ember.histogramdd(S.on(device, points), bins=[3, 2])
    ref_hist, ref_edges = np.histogramdd(points, bins=[3, 2])
    S.assert_matches(hist, ref_hist, device, dtype=ember.float64)
    for e, ref in zip(edges, ref_edges):
        S.assert_matches(e, ref, device)


COVERS |= {"histogramdd", "sort", "argsort", "median", "mode", "cumprod", "cummax", "searchsorted",
           "bucketize", "isin", "unique", "unique_consecutive", "bincount", "histc",
           "histogram", "segment_reduce", "hash_tensor"}


def test_hash_tensor_xors_the_64_bit_patterns(device: ember.device) -> None:
    """hash_tensor: float elements as float64 bits, integers as int64 (sign-extended),
    XORed over all elements or along dims; a uint64 result (on the devices that hold
    uint64, one of PyTorch's shell dtypes)."""
    if not S.holds(device, ember.uint64):
        pytest.skip(f"{device} holds no uint64 tensors")
    x = np.array([[1.5, -2.0, 0.25], [3.0, 0.0, -0.5], [7.0, 1.0, 2.0]])
    bits = x.view(np.uint64)
    out = ember.hash_tensor(S.on(device, x))
    assert out.dtype is ember.uint64 and out.shape == ()
    assert int(out.item()) == int(np.bitwise_xor.reduce(bits.reshape(-1)))
    rows = ember.hash_tensor(S.on(device, x, ember.float32), 1, keepdim=True)
    assert rows.shape == (3, 1)
    assert rows.reshape(-1).tolist() == np.bitwise_xor.reduce(bits, axis=1).tolist()
    ints = np.array([-1, 5, 9], dtype=np.int8)
    got = ember.hash_tensor(S.on(device, ints), 0)
    assert int(got.item()) == int(np.bitwise_xor.reduce(ints.astype(np.int64).view(np.uint64)))


@pytest.mark.parametrize("reduce,want", [
    ("sum", [[6.0, 8.0], [0.0, 0.0], [7.0, 9.0]]),
    ("mean", [[3.0, 4.0], [np.nan, np.nan], [7.0, 9.0]]),
    ("max", [[5.0, 6.0], [-np.inf, -np.inf], [7.0, 9.0]]),
    ("min", [[1.0, 2.0], [np.inf, np.inf], [7.0, 9.0]]),
    ("prod", [[5.0, 12.0], [1.0, 1.0], [7.0, 9.0]])])
def test_segment_reduce(device: ember.device, reduce: str, want: list) -> None:
    """Segments by lengths (an empty one: the identity, NaN for mean) or offsets (the
    rows after the last segment left out); `initial` joins every segment."""
    data = S.on(device, np.array([[1.0, 2.0], [5.0, 6.0], [7.0, 9.0], [0.0, 0.0]]))
    lengths = S.on(device, np.array([2, 0, 1]))
    out = ember.segment_reduce(data, reduce, lengths=lengths, unsafe=True)
    S.assert_matches(out, np.array(want), device, dtype=ember.float64)
    offsets = S.on(device, np.array([0, 2, 2, 3]))
    S.assert_matches(ember.segment_reduce(data, reduce, offsets=offsets), np.array(want),
                     device)
    with_initial = ember.segment_reduce(data, reduce, offsets=offsets, initial=2.0)
    expected = {"sum": [[8.0, 10.0], [2.0, 2.0], [9.0, 11.0]],
                "mean": [[4.0, 5.0], [2.0, 2.0], [9.0, 11.0]],
                "max": [[5.0, 6.0], [2.0, 2.0], [7.0, 9.0]],
                "min": [[1.0, 2.0], [2.0, 2.0], [2.0, 2.0]],
                "prod": [[10.0, 24.0], [2.0, 2.0], [14.0, 18.0]]}[reduce]
    S.assert_matches(with_initial, np.array(expected), device)
    with pytest.raises(RuntimeError, match="sum to data.size"):
        ember.segment_reduce(data, reduce, lengths=lengths)
# -- end of the REDUCE family's tests --
