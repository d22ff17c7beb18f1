"""Indexing on the device under test: ints, slices with steps, None, Ellipsis, integer
tensors, bool masks, and assignment through all of them; gather, scatter, scatter_add,
index_select, nonzero, masked_fill and masked_select, against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ember
from ember.testing import support as S


@st.composite
def basic_keys(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple:
    """A basic index for `shape`: ints (possibly negative), slices with positive steps
    and out-of-range bounds, None, and at most one Ellipsis."""
    key: list = []
    for size in shape:
        kind = draw(st.sampled_from(["int", "slice", "slice", "full"]))
        if kind == "int":
            key.append(draw(st.integers(-size, size - 1)))
        elif kind == "slice":
            bound = st.none() | st.integers(-size - 2, size + 2)
            key.append(slice(draw(bound), draw(bound), draw(st.none() | st.integers(1, 3))))
        else:
            key.append(slice(None))
        if draw(st.integers(0, 5)) == 0:
            key.append(None)
    if key and draw(st.booleans()):  # fold a run of trailing full slices into `...`
        end = len(key)
        start = end
        while start > 0 and key[start - 1] == slice(None):
            start -= 1
        cut = draw(st.integers(start, end))
        key[cut:] = [Ellipsis]
    return tuple(key)


@S.prop(max_examples=3 * S.prop().max_examples)
@given(data=st.data())
def test_basic_indexing_is_a_view(device: ember.device, data: st.DataObject) -> None:
    d = data.draw(S.dtypes(device, S.NUMERIC), label="dtype")
    arr = data.draw(S.arrays(d, data.draw(S.shapes(max_dims=4)), 0, 9), label="x")
    key = data.draw(basic_keys(arr.shape), label="key")
    x = S.on(device, arr, d)
    out = x[key]
    S.assert_matches(out, arr[key], device, dtype=d, what=f"x[{key}]")
    # basic indexing returns a view: a write through it lands in x
    out.fill_(42)
    expected = arr.copy()
    expected[key] = 42
    S.assert_matches(x, expected, device, dtype=d, what=f"x after x[{key}].fill_(42)")


@S.prop()
@given(data=st.data())
def test_basic_setitem(device: ember.device, data: st.DataObject) -> None:
    d = data.draw(S.dtypes(device, S.NUMERIC), label="dtype")
    arr = data.draw(S.arrays(d, data.draw(S.shapes(min_dims=1, max_dims=3)), 0, 9),
                    label="x")
    key = data.draw(basic_keys(arr.shape), label="key")
    target = arr[key].shape
    how = data.draw(st.sampled_from(["scalar", "full", "broadcast"]), label="value")
    x = S.on(device, arr, d)
    expected = arr.copy()
    if how == "scalar":
        x[key] = 7
        expected[key] = 7
    else:
        vshape = target if how == "full" else tuple(1 for _ in target[:1]) + target[1:]
        value = data.draw(S.arrays(d, vshape, 0, 9), label="value array")
        x[key] = S.on(device, value, d)
        expected[key] = value
    S.assert_matches(x, expected, device, dtype=d, what=f"x[{key}] = ({how})")


@st.composite
def advanced_keys(draw: st.DrawFn, shape: tuple[int, ...], device: ember.device
                  ) -> tuple[tuple, tuple]:
    """(ember key, NumPy key): integer tensors (maybe negative, 0-d excluded), lists, and
    slices, in the patterns where PyTorch and NumPy agree."""
    ndim = len(shape)
    pattern = draw(st.sampled_from(["one", "two broadcast", "with slices", "list",
                                    "split by slice"] if ndim >= 3 else
                                   ["one", "two broadcast", "with slices", "list"]
                                   if ndim == 2 else ["one", "list"]))
    ish = draw(st.sampled_from([(3,), (2, 2), (1,)]))

    def index(size: int, s: tuple) -> np.ndarray:
        return draw(S.arrays(ember.int64, s, -size, size - 1))

    if pattern == "one":
        i = index(shape[0], ish)
        return (S.on(device, i),), (i,)
    if pattern == "list":
        i = index(shape[0], (3,))
        return (i.tolist(),), (i,)
    if pattern == "two broadcast":
        i, j = index(shape[0], ish), index(shape[1], ish[-1:])
        return (S.on(device, i), S.on(device, j)), (i, j)
    if pattern == "with slices":
        j = index(shape[1], ish)
        return (slice(None, None, 2), S.on(device, j)), (slice(None, None, 2), j)
    i, k = index(shape[0], ish), index(shape[2], ish)  # advanced dims move to the front
    return (S.on(device, i), slice(1, None), S.on(device, k)), (i, slice(1, None), k)


@S.prop()
@given(data=st.data())
def test_advanced_indexing(device: ember.device, data: st.DataObject) -> None:
    d = data.draw(S.dtypes(device, S.ALL_DTYPES), label="dtype")
    arr = data.draw(S.arrays(d, data.draw(S.shapes(min_dims=1, max_dims=3, min_side=2)), 0,
                             9), label="x")
    key, np_key = data.draw(advanced_keys(arr.shape, device), label="key")
    x = S.on(device, arr, d)
    ref = arr[np_key]
    S.assert_matches(x[key], ref, device, dtype=d, what="x[advanced]")
    # assignment with unique targets (duplicates have no defined winner)
    flat = np.arange(arr.size).reshape(arr.shape)[np_key]
    if len(np.unique(flat)) == flat.size and d is not ember.bool:
        value = (np.arange(ref.size).reshape(ref.shape) + 10).astype(S.np_dtype(d))
        x[key] = S.on(device, value, d)
        expected = arr.copy()
        expected[np_key] = value
        S.assert_matches(x, expected, device, dtype=d, what="x[advanced] = value")


@S.prop()
@given(data=st.data())
def test_bool_mask_indexing(device: ember.device, data: st.DataObject) -> None:
    d = data.draw(S.dtypes(device, S.NUMERIC), label="dtype")
    arr = data.draw(S.arrays(d, data.draw(S.shapes(min_dims=1, max_dims=3)), 0, 9),
                    label="x")
    k = data.draw(st.integers(1, arr.ndim), label="mask dims")
    mask = data.draw(S.arrays(ember.bool, arr.shape[:k]), label="mask")
    x = S.on(device, arr, d)
    m = S.on(device, mask)
    S.assert_matches(x[m], arr[mask], device, dtype=d, what="x[mask]")
    if arr.ndim > k:
        S.assert_matches(x[..., 0][m], arr[..., 0][mask], device, dtype=d,
                         what="x[..., 0][mask]")
    y = x.clone()
    y[m] = 5
    expected = arr.copy()
    expected[mask] = 5
    S.assert_matches(y, expected, device, dtype=d, what="x[mask] = 5")
    S.assert_matches(ember.masked_select(x, m.reshape(m.shape + (1,) * (arr.ndim - k))),
                     arr[np.broadcast_to(mask.reshape(mask.shape + (1,) * (arr.ndim - k)),
                                         arr.shape)], device, dtype=d, what="masked_select")


def test_mixed_index_patterns(device: ember.device) -> None:
    arr = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    x = S.on(device, arr)
    idx = S.on(device, np.array([2, 0]))
    S.assert_matches(x[..., idx], arr[..., [2, 0]], device)
    S.assert_matches(x[None, 1, ..., ::3], arr[None, 1, ..., ::3], device)
    S.assert_matches(x[:, [True, False, True]], arr[:, [True, False, True]], device)
    S.assert_matches(x[x > 10], arr[arr > 10], device)
    S.assert_matches(x[1, -1, -1], arr[1, -1, -1], device)
    S.assert_matches(x[S.on(device, 1)], arr[1], device)  # a 0-d int tensor is an int
    y = x.clone()
    y[y > 10] = 0.0
    ref = arr.copy()
    ref[ref > 10] = 0.0
    S.assert_matches(y, ref, device)


def test_index_errors(device: ember.device) -> None:
    x = S.on(device, np.zeros((2, 3)))
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 1 with size "
                                         "3"):
        x[0, 3]
    with pytest.raises(IndexError, match="out of bounds"):
        x[S.on(device, np.array([0, 5]))]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
        x[0, 0, 0]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1]
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or "
                                         "bool"):
        x[S.on(device, np.array([0.0]))]
    with pytest.raises(IndexError, match="shape of the mask"):
        x[S.on(device, np.array([True, False, True]))]


# -- gather, scatter, index_select, nonzero, masked_fill ------------------------------


@S.prop()
@given(data=st.data())
def test_gather(device: ember.device, data: st.DataObject) -> None:
    d = data.draw(S.dtypes(device, S.ALL_DTYPES), label="dtype")
    arr = data.draw(S.arrays(d, data.draw(S.shapes(min_dims=1)), 0, 9), label="x")
    dim = data.draw(st.integers(-arr.ndim, arr.ndim - 1), label="dim")
    ishape = tuple(data.draw(st.integers(1, 4)) if i == dim % arr.ndim else
                   data.draw(st.integers(1, s)) for i, s in enumerate(arr.shape))
    index = data.draw(S.arrays(ember.int64, ishape, 0, arr.shape[dim] - 1), label="index")
    x = S.on(device, arr, d)
    cut = tuple(slice(None) if i == dim % arr.ndim else slice(0, s)
                for i, s in enumerate(ishape))
    ref = np.take_along_axis(arr[cut], index, axis=dim)
    S.assert_matches(ember.gather(x, dim, S.on(device, index)), ref, device, dtype=d)
    S.assert_matches(x.gather(dim, S.on(device, index)), ref, device, dtype=d)


def _scatter_ref(arr: np.ndarray, dim: int, index: np.ndarray, src: np.ndarray,
                 add: bool) -> np.ndarray:
    out = arr.copy()
    for pos in np.ndindex(*index.shape):
        target = list(pos)
        target[dim] = index[pos]
        if add:
            out[tuple(target)] += src[pos]
        else:
            out[tuple(target)] = src[pos]
    return out


@pytest.mark.parametrize("add", [False, True], ids=["scatter", "scatter_add"])
@S.prop()
@given(data=st.data())
def test_scatter(device: ember.device, add: bool, data: st.DataObject) -> None:
    d = data.draw(S.dtypes(device, S.NUMERIC), label="dtype")
    arr = data.draw(S.arrays(d, data.draw(S.shapes(min_dims=1)), 0, 9), label="x")
    ndim = arr.ndim
    dim = data.draw(st.integers(0, ndim - 1), label="dim")
    size = arr.shape[dim]
    ishape = tuple(data.draw(st.integers(1, size)) if i == dim else
                   data.draw(st.integers(1, s)) for i, s in enumerate(arr.shape))
    if add:  # repeats accumulate
        index = data.draw(S.arrays(ember.int64, ishape, 0, size - 1), label="index")
    else:  # distinct targets along `dim`, else the winner is undefined
        perm = np.stack([np.asarray(data.draw(st.permutations(range(size))))[:ishape[dim]]
                         for _ in range(int(np.prod(ishape)) // ishape[dim])])
        index = np.moveaxis(perm.reshape(tuple(s for i, s in enumerate(ishape) if i != dim)
                                         + (ishape[dim],)), -1, dim).astype(np.int64)
    sshape = tuple(s + data.draw(st.integers(0, 1)) for s in ishape)  # src may be larger
    src = data.draw(S.arrays(d, sshape, 0, 9), label="src")
    x, i, s = S.on(device, arr, d), S.on(device, index), S.on(device, src, d)
    ref = _scatter_ref(arr, dim, index, src, add)
    if d.is_floating_point:
        ref = ref.astype(S.np_dtype(d))
    out = ember.scatter_add(x, dim, i, s) if add else ember.scatter(x, dim, i, s)
    S.assert_matches(out, ref, device, dtype=d)
    S.assert_matches(x, arr, device, dtype=d, what="input unchanged (out of place)")
    y = x.clone()
    (y.scatter_add_ if add else y.scatter_)(dim, i, s)
    S.assert_matches(y, ref, device, dtype=d, what="in place")
    if add:
        S.assert_matches(x.scatter(dim, i, s, reduce="add"), ref, device, dtype=d,
                         what="scatter(reduce='add')")
    else:
        ref_v = _scatter_ref(arr, dim, index, np.full(index.shape, 3, arr.dtype), False)
        S.assert_matches(x.scatter(dim, i, value=3), ref_v, device, dtype=d,
                         what="scatter(value=3)")


@S.prop()
@given(data=st.data())
def test_index_select(device: ember.device, data: st.DataObject) -> None:
    d = data.draw(S.dtypes(device, S.ALL_DTYPES), label="dtype")
    arr = data.draw(S.arrays(d, data.draw(S.shapes(min_dims=1)), 0, 9), label="x")
    dim = data.draw(st.integers(-arr.ndim, arr.ndim - 1), label="dim")
    n = data.draw(st.integers(0, 5), label="count")
    index = data.draw(S.arrays(ember.int64, (n,), 0, arr.shape[dim] - 1), label="index")
    x = S.on(device, arr, d)
    S.assert_matches(x.index_select(dim, S.on(device, index)), np.take(arr, index, axis=dim),
                     device, dtype=d)


@S.prop()
@given(data=st.data())
def test_nonzero(device: ember.device, data: st.DataObject) -> None:
    d = data.draw(S.dtypes(device, S.ALL_DTYPES), label="dtype")
    arr = data.draw(S.arrays(d, data.draw(S.shapes(min_dims=1, max_dims=3)), 0, 2),
                    label="x")
    _check_nonzero(device, arr, d)


def _check_nonzero(device: ember.device, arr: np.ndarray, d: ember.dtype) -> None:
    x = S.on(device, arr, d)
    S.assert_matches(x.nonzero(), np.argwhere(arr), device, dtype=ember.int64)
    parts = ember.nonzero(x, as_tuple=True)
    ref = np.nonzero(np.atleast_1d(arr))  # torch treats a 0-d input as 1-D here
    assert len(parts) == len(ref)
    for p, r in zip(parts, ref):
        S.assert_matches(p, r, device, dtype=ember.int64, what="as_tuple")


@pytest.mark.parametrize("value", [0.0, 5.0])
def test_nonzero_zero_dim(device: ember.device, value: float) -> None:
    _check_nonzero(device, np.array(value), ember.float32)


@S.prop()
@given(data=st.data())
def test_masked_fill(device: ember.device, data: st.DataObject) -> None:
    d = data.draw(S.dtypes(device, S.ALL_DTYPES), label="dtype")
    arr = data.draw(S.arrays(d, data.draw(S.shapes(min_dims=1)), 0, 9), label="x")
    k = data.draw(st.integers(0, arr.ndim), label="mask broadcast dims")
    mshape = (1,) * k + arr.shape[k:]
    mask = data.draw(S.arrays(ember.bool, mshape), label="mask")
    value = data.draw(st.sampled_from([1, 0, True] if d is ember.bool else [5, 2.0]),
                      label="value")
    tensor_value = data.draw(st.booleans(), label="0-dim tensor value")
    x, m = S.on(device, arr, d), S.on(device, mask)
    v = S.on(device, np.asarray(value)) if tensor_value else value
    ref = np.where(mask, np.asarray(value).astype(arr.dtype), arr)
    S.assert_matches(x.masked_fill(m, v), ref, device, dtype=d)
    y = x.clone()
    y.masked_fill_(m, v)
    S.assert_matches(y, ref, device, dtype=d, what="masked_fill_")


def test_masked_fill_errors(device: ember.device) -> None:
    x = S.on(device, np.zeros(3))
    with pytest.raises(RuntimeError, match="masked_fill_ only supports boolean masks, but got "
                                           "mask with dtype long int"):
        x.masked_fill(S.on(device, np.array([1, 0, 1])), 1.0)


# -- select, take_along_dim, index_add, index_fill, fill_diagonal_ --------------------


def test_select(device: ember.device) -> None:
    arr = np.arange(24.0).reshape(2, 3, 4)
    x = S.on(device, arr)
    for dim, index in ((0, 1), (1, -1), (-1, 2)):
        S.assert_matches(ember.select(x, dim, index), np.take(arr, index, axis=dim), device,
                         what=f"select({dim}, {index})")
    s = x.select(2, 0)
    s.fill_(-1.0)  # a view: the write reaches x
    ref = arr.copy()
    ref[..., 0] = -1.0
    S.assert_matches(x, ref, device, what="x after select(2, 0).fill_")
    with pytest.raises(IndexError, match="index 3"):
        x.select(1, 3)


def test_take_along_dim(device: ember.device) -> None:
    arr = np.random.default_rng(6).uniform(-1, 1, (3, 4))
    x = S.on(device, arr)
    order = np.argsort(arr, axis=1)
    S.assert_matches(ember.take_along_dim(x, S.on(device, order), 1),
                     np.take_along_axis(arr, order, 1), device, what="rows sorted")
    idx = np.array([[2, 0, 1, 1], [0, 0, 2, 1]])
    S.assert_matches(x.take_along_dim(S.on(device, idx), 0), np.take_along_axis(arr, idx, 0),
                     device, what="dim 0")


def test_take_along_dim_broadcasts_and_flattens(device: ember.device) -> None:
    arr = np.arange(12.0).reshape(3, 4)
    x = S.on(device, arr)
    idx = np.array([[0], [2]])
    S.assert_matches(ember.take_along_dim(x, S.on(device, idx), 0),
                     np.take_along_axis(arr, np.broadcast_to(idx, (2, 4)), 0), device)
    S.assert_matches(ember.take_along_dim(x, S.on(device, np.array([0, 5, 11])), None),
                     [0.0, 5.0, 11.0], device)


def test_index_add_and_index_fill(device: ember.device) -> None:
    arr = np.arange(12.0).reshape(3, 4)
    src = np.random.default_rng(7).uniform(-1, 1, (3, 4))
    x, s = S.on(device, arr), S.on(device, src)
    rows = np.array([2, 0, 2])  # a repeated index accumulates
    ref = arr.copy()
    np.add.at(ref, rows, 2.0 * src)
    S.assert_matches(ember.index_add(x, 0, S.on(device, rows), s, alpha=2.0), ref, device,
                     what="index_add(dim 0, alpha 2)")
    cols = np.array([3, 1, 3, 0])
    ref_cols = arr.copy()
    np.add.at(ref_cols.T, cols, src.T)
    y = x.clone()
    assert y.index_add_(1, S.on(device, cols), s) is y
    S.assert_matches(y, ref_cols, device, what="index_add_(dim 1)")
    S.assert_matches(x, arr, device, what="input unchanged by the out-of-place forms")
    ref_fill = arr.copy()
    ref_fill[:, [0, 2]] = -1.5
    S.assert_matches(ember.index_fill(x, 1, S.on(device, np.array([0, 2])), -1.5), ref_fill,
                     device, what="index_fill")
    ints = S.on(device, np.arange(6).reshape(2, 3))
    ints.index_fill_(0, S.on(device, np.array([1])), S.on(device, np.array(7)))
    S.assert_matches(ints, [[0, 1, 2], [7, 7, 7]], device, dtype=ember.int64,
                     what="index_fill_ with a 0-dim tensor value")


def test_fill_diagonal_(device: ember.device) -> None:
    for shape, ref_rows in (((3, 3), 3), ((2, 4), 2), ((5, 3), 3)):
        x = S.on(device, np.zeros(shape))
        assert x.fill_diagonal_(2.5) is x
        ref = np.zeros(shape)
        ref[range(ref_rows), range(ref_rows)] = 2.5
        S.assert_matches(x, ref, device, what=f"fill_diagonal_ of {shape}")
    cube = S.on(device, np.zeros((2, 2, 2), np.int32)).fill_diagonal_(3)
    ref = np.zeros((2, 2, 2), np.int32)
    ref[0, 0, 0] = ref[1, 1, 1] = 3
    S.assert_matches(cube, ref, device, dtype=ember.int32, what="fill_diagonal_ of a cube")


def test_fill_diagonal_wraps(device: ember.device) -> None:
    x = S.on(device, np.zeros((7, 3))).fill_diagonal_(1.0, wrap=True)
    ref = np.zeros((7, 3))
    ref[[0, 1, 2, 4, 5, 6], [0, 1, 2, 0, 1, 2]] = 1.0
    S.assert_matches(x, ref, device)


# -- what this module checks (ember.testing.test_coverage reads it) ---------------------

COVERS = {"getitem", "setitem", "gather", "scatter", "scatter_add", "index_select", "nonzero",
          "where", "masked_fill", "masked_select", "select", "take_along_dim", "index_add",
          "index_fill", "fill_diagonal_", "fill_"}
"""The declared ops whose values this module's tests check."""


# -- index writes (the REDUCE family) -----------------------------------------------------


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_scatter_reduce(device: ember.device, reduce: str) -> None:
    base = np.arange(12.0).reshape(3, 4) - 4
    src = np.array([[2.0, -1.0, 3.0, 0.5], [4.0, 5.0, -2.0, 1.0]])
    index = np.array([[0, 1, 0, 2], [0, 0, 0, 1]])
    ufunc = {"sum": np.add, "prod": np.multiply, "mean": np.add, "amax": np.maximum,
             "amin": np.minimum}[reduce]
    for include_self in (True, False):
        want = base.copy()
        cols = np.broadcast_to(np.arange(4), index.shape)
        if not include_self:
            want[index, cols] = {"sum": 0, "mean": 0, "prod": 1, "amax": -np.inf,
                                 "amin": np.inf}[reduce]
        ufunc.at(want, (index, cols), src)
        if reduce == "mean":
            count = np.full(base.shape, 1.0 if include_self else 0.0)
            np.add.at(count, (index, cols), 1.0)
            want = want / np.maximum(count, 1.0)
        got = ember.scatter_reduce(S.on(device, base), 0, S.on(device, index),
                                   S.on(device, src), reduce, include_self=include_self)
        S.assert_matches(got, want, device, what=f"{reduce}, include_self={include_self}")
    ints = ember.scatter_reduce(S.on(device, np.array([1, 2, 3])), 0,
                                S.on(device, np.array([0, 0])), S.on(device, np.array([4, 6])),
                                reduce)
    expected = {"sum": [11, 2, 3], "prod": [24, 2, 3], "mean": [3, 2, 3], "amax": [6, 2, 3],
                "amin": [1, 2, 3]}[reduce]
    S.assert_matches(ints, expected, device)


def test_argwhere_and_nonzero_static(device: ember.device) -> None:
    arr = np.array([[0, 1], [2, 0]])
    x = S.on(device, arr)
    S.assert_matches(ember.argwhere(x), np.argwhere(arr), device)
    S.assert_matches(ember.nonzero_static(x, size=1), np.argwhere(arr)[:1], device)
    S.assert_matches(ember.nonzero_static(x, size=4, fill_value=-5),
                     np.concatenate([np.argwhere(arr), np.full((2, 2), -5)]), device)


COVERS |= {"scatter_reduce", "argwhere", "nonzero_static"}
# -- end of the REDUCE family's tests --
