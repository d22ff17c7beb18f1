"""Shape ops and views on the device under test: reshape/view/permute/transpose/expand/
squeeze/unsqueeze/flatten/narrow/split/chunk/cat/stack/flip/tril/triu/repeat against
NumPy, and views sharing storage with their base (a write through either is seen by
the other)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ember
from ember.testing import support as S


def _input(device: ember.device, data: st.DataObject, min_dims: int = 0, max_dims: int = 3,
           dtypes: list | None = None) -> tuple[ember.dtype, np.ndarray]:
    d = data.draw(S.dtypes(device, dtypes or S.ALL_DTYPES), label="dtype")
    shape = data.draw(S.shapes(min_dims=min_dims, max_dims=max_dims), label="shape")
    return d, data.draw(S.arrays(d, shape, 0, 9), label="x")


def _factorizations(n: int) -> list[tuple[int, ...]]:
    divisors = [k for k in range(1, n + 1) if n % k == 0]
    out = [(n,), (1, n), (n, 1)]
    out += [(k, n // k) for k in divisors]
    out += [(a, b, n // (a * b)) for a in divisors for b in divisors if n % (a * b) == 0]
    return out


@S.prop()
@given(data=st.data())
def test_reshape_and_view(device: ember.device, data: st.DataObject) -> None:
    d, arr = _input(device, data)
    new = data.draw(st.sampled_from(_factorizations(arr.size)), label="new shape")
    infer = data.draw(st.integers(-1, len(new) - 1), label="inferred dim")
    spec = tuple(-1 if i == infer else s for i, s in enumerate(new))
    x = S.on(device, arr, d)
    S.assert_matches(x.reshape(spec), arr.reshape(new), device, dtype=d)
    S.assert_matches(x.reshape(*spec), arr.reshape(new), device, dtype=d)
    S.assert_matches(x.view(spec), arr.reshape(new), device, dtype=d)
    S.assert_matches(ember.reshape(x, spec), arr.reshape(new), device, dtype=d)


def test_view_errors(device: ember.device) -> None:
    x = S.on(device, np.arange(12.0).reshape(3, 4))
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        x.t().view(12)
    S.assert_matches(x.t().reshape(12), np.arange(12.0).reshape(3, 4).T.reshape(12), device)
    with pytest.raises(RuntimeError, match=r"shape '\[5, -1\]' is invalid for input of size "
                                           r"12"):
        x.reshape(5, -1)
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        x.view(-1, -1)


@S.prop()
@given(data=st.data())
def test_permute_transpose(device: ember.device, data: st.DataObject) -> None:
    d, arr = _input(device, data, min_dims=1)
    order = tuple(data.draw(st.permutations(range(arr.ndim)), label="order"))
    x = S.on(device, arr, d)
    S.assert_matches(x.permute(order), arr.transpose(order), device, dtype=d)
    S.assert_matches(x.permute(*order), arr.transpose(order), device, dtype=d)
    d0 = data.draw(st.integers(-arr.ndim, arr.ndim - 1), label="dim0")
    d1 = data.draw(st.integers(-arr.ndim, arr.ndim - 1), label="dim1")
    S.assert_matches(x.transpose(d0, d1), np.swapaxes(arr, d0, d1), device, dtype=d)
    S.assert_matches(x.T, arr.transpose(tuple(reversed(range(arr.ndim)))), device, dtype=d)
    if arr.ndim <= 2:
        S.assert_matches(x.t(), arr.T, device, dtype=d)
    if arr.ndim >= 2:
        S.assert_matches(x.mT, np.swapaxes(arr, -1, -2), device, dtype=d)
    src = data.draw(st.integers(0, arr.ndim - 1), label="movedim src")
    dst = data.draw(st.integers(0, arr.ndim - 1), label="movedim dst")
    S.assert_matches(x.movedim(src, dst), np.moveaxis(arr, src, dst), device, dtype=d)


@S.prop()
@given(data=st.data())
def test_expand(device: ember.device, data: st.DataObject) -> None:
    d, arr = _input(device, data, max_dims=3)
    lead = data.draw(st.lists(st.integers(1, 3), max_size=2), label="new leading dims")
    target = []
    for s in arr.shape:
        target.append(data.draw(st.sampled_from([-1, 1, 3]) if s == 1 else
                                st.sampled_from([-1, s])))
    spec = tuple(lead) + tuple(target)
    full = tuple(lead) + tuple(s if t == -1 else t for s, t in zip(arr.shape, target))
    x = S.on(device, arr, d)
    ref = np.broadcast_to(arr, full)
    S.assert_matches(x.expand(spec), ref, device, dtype=d)
    if spec:  # (`x.expand()` without sizes is PyTorch's TypeError)
        S.assert_matches(x.expand(*spec), ref, device, dtype=d)
    S.assert_matches(ember.broadcast_to(x, full), ref, device, dtype=d)
    S.assert_matches(x.expand_as(S.on(device, np.zeros(full))), ref, device, dtype=d)


def test_expand_errors(device: ember.device) -> None:
    x = S.on(device, np.zeros((2, 3)))
    with pytest.raises(RuntimeError, match=r"expanded size of the tensor \(4\) must match "
                                           r"the existing size \(3\)"):
        x.expand(2, 4)


@S.prop()
@given(data=st.data())
def test_squeeze_unsqueeze_flatten(device: ember.device, data: st.DataObject) -> None:
    d = data.draw(S.dtypes(device, S.ALL_DTYPES), label="dtype")
    shape = tuple(data.draw(st.lists(st.integers(1, 3), max_size=4), label="shape"))
    arr = data.draw(S.arrays(d, shape, 0, 9), label="x")
    x = S.on(device, arr, d)
    S.assert_matches(x.squeeze(), arr.squeeze(), device, dtype=d)
    if arr.ndim:
        dim = data.draw(st.integers(-arr.ndim, arr.ndim - 1), label="squeeze dim")
        ref = arr.squeeze(dim) if arr.shape[dim] == 1 else arr
        S.assert_matches(x.squeeze(dim), ref, device, dtype=d)
        dims = tuple(data.draw(st.lists(st.integers(0, arr.ndim - 1), unique=True,
                                        min_size=1), label="squeeze dims"))
        ones = tuple(i for i in dims if arr.shape[i] == 1)
        S.assert_matches(x.squeeze(dims), arr.squeeze(ones) if ones else arr, device,
                         dtype=d)
    u = data.draw(st.integers(-arr.ndim - 1, arr.ndim), label="unsqueeze dim")
    S.assert_matches(x.unsqueeze(u), np.expand_dims(arr, u), device, dtype=d)
    S.assert_matches(x.flatten(), arr.reshape(-1), device, dtype=d)
    if arr.ndim:
        s = data.draw(st.integers(0, arr.ndim - 1), label="start")
        e = data.draw(st.integers(s, arr.ndim - 1), label="end")
        ref = arr.reshape(arr.shape[:s] + (math.prod(arr.shape[s:e + 1]),) +
                          arr.shape[e + 1:])
        S.assert_matches(x.flatten(s, e), ref, device, dtype=d)
        S.assert_matches(ember.flatten(x, s - arr.ndim, e), ref, device, dtype=d)
        S.assert_matches(x.flatten().unflatten(0, arr.shape), arr, device, dtype=d)


@S.prop()
@given(data=st.data())
def test_narrow_split_chunk(device: ember.device, data: st.DataObject) -> None:
    d, arr = _input(device, data, min_dims=1)
    dim = data.draw(st.integers(-arr.ndim, arr.ndim - 1), label="dim")
    size = arr.shape[dim]
    start = data.draw(st.integers(-size, size - 1), label="start")
    length = data.draw(st.integers(0, size - (start % size)), label="length")
    x = S.on(device, arr, d)
    key = (slice(None),) * (dim % arr.ndim) + (slice(start % size, start % size + length),)
    S.assert_matches(x.narrow(dim, start, length), arr[key], device, dtype=d)

    step = data.draw(st.integers(1, size + 1), label="split size")
    pieces = x.split(step, dim)
    refs = [arr[(slice(None),) * (dim % arr.ndim) + (slice(i, i + step),)]
            for i in range(0, size, step)]
    assert len(pieces) == len(refs)
    for p, r in zip(pieces, refs):
        S.assert_matches(p, r, device, dtype=d, what="split")
    cuts = sorted(data.draw(st.lists(st.integers(0, size), max_size=3), label="cuts"))
    sizes = [b - a for a, b in zip([0] + cuts, cuts + [size])]
    for p, r in zip(x.split(sizes, dim), np.split(arr, cuts, axis=dim)):
        S.assert_matches(p, r, device, dtype=d, what="split(sizes)")
    n = data.draw(st.integers(1, 4), label="chunks")
    per = -(-size // n)
    chunks = ember.chunk(x, n, dim)
    assert len(chunks) == -(-size // per)
    for i, c in enumerate(chunks):
        r = arr[(slice(None),) * (dim % arr.ndim) + (slice(i * per, (i + 1) * per),)]
        S.assert_matches(c, r, device, dtype=d, what="chunk")
    for c, r in zip(x.tensor_split(n, dim), np.array_split(arr, n, axis=dim)):
        S.assert_matches(c, r, device, dtype=d, what="tensor_split")
    for u, r in zip(x.unbind(dim), np.moveaxis(arr, dim, 0)):
        S.assert_matches(u, r, device, dtype=d, what="unbind")


def test_split_errors(device: ember.device) -> None:
    x = S.on(device, np.zeros((5, 2)))
    with pytest.raises(RuntimeError, match="split_with_sizes expects split_sizes to sum "
                                           "exactly to 5"):
        x.split([2, 2])
    with pytest.raises(RuntimeError, match="narrow"):  # PyTorch's type
        x.narrow(0, 3, 3)


@S.prop()
@given(data=st.data())
def test_cat_stack(device: ember.device, data: st.DataObject) -> None:
    shape = data.draw(S.shapes(min_dims=1), label="shape")
    dim = data.draw(st.integers(-len(shape), len(shape) - 1), label="dim")
    n = data.draw(st.integers(1, 3), label="count")
    dtypes = [data.draw(S.dtypes(device, S.ALL_DTYPES)) for _ in range(n)]
    arrays, tensors = [], []
    for d in dtypes:
        s = list(shape)
        s[dim] = data.draw(st.integers(0, 3))
        a = data.draw(S.arrays(d, tuple(s), 0, 9))
        arrays.append(a)
        tensors.append(S.on(device, a, d))
    want = dtypes[0]
    for d in dtypes[1:]:
        want = S.promote_types(want, d)
    ref = np.concatenate([a.astype(S.np_dtype(want)) for a in arrays], axis=dim)
    S.assert_matches(ember.cat(tensors, dim), ref, device, dtype=want)
    same = [S.on(device, arrays[0], dtypes[0]) for _ in range(n)]
    sdim = data.draw(st.integers(-len(shape) - 1, len(shape)), label="stack dim")
    S.assert_matches(ember.stack(same, sdim), np.stack([arrays[0]] * n, axis=sdim), device,
                     dtype=dtypes[0])


def test_cat_stack_errors(device: ember.device) -> None:
    a, b = S.on(device, np.zeros((2, 3))), S.on(device, np.zeros((2, 4)))
    with pytest.raises(RuntimeError, match="Sizes of tensors must match|sizes of tensors "
                                           "must match"):
        ember.cat([a, b], 0)
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        ember.stack([a, b])


def test_hstack_vstack(device: ember.device) -> None:
    a, b = np.arange(3.0), np.arange(3.0, 6.0)
    m, n = np.arange(6.0).reshape(2, 3), np.arange(4.0).reshape(2, 2)
    S.assert_matches(ember.hstack([S.on(device, a), S.on(device, b)]), np.hstack([a, b]),
                     device, what="hstack 1-D")
    S.assert_matches(ember.hstack((S.on(device, m), S.on(device, n))), np.hstack([m, n]),
                     device, what="hstack 2-D")
    S.assert_matches(ember.vstack([S.on(device, a), S.on(device, m)]), np.vstack([a, m]),
                     device, what="vstack 1-D and 2-D")


def test_broadcast_tensors_and_shape_of_another(device: ember.device) -> None:
    a, b, c = np.arange(3.0).reshape(3, 1), np.arange(4.0), np.array(7.0)
    outs = ember.broadcast_tensors(S.on(device, a), S.on(device, b), S.on(device, c))
    refs = np.broadcast_arrays(a, b, c)
    assert len(outs) == 3
    for o, r in zip(outs, refs):
        S.assert_matches(o, r, device, what="broadcast_tensors")
    x = S.on(device, np.arange(12).reshape(3, 4))
    like = S.on(device, np.zeros((2, 6)))
    S.assert_matches(x.reshape_as(like), np.arange(12).reshape(2, 6), device,
                     dtype=ember.int64, what="reshape_as")
    S.assert_matches(x.t().reshape_as(like), np.arange(12).reshape(3, 4).T.reshape(2, 6),
                     device, what="reshape_as of a transposed tensor (a copy)")
    v = x.view_as(like)
    S.assert_matches(v, np.arange(12).reshape(2, 6), device, what="view_as")
    v[0, 0] = 100  # a view: the write reaches x
    assert x[0, 0].item() == 100


def test_tensor_split_at_indices(device: ember.device) -> None:
    arr = np.arange(12.0).reshape(3, 4)
    parts = ember.tensor_split(S.on(device, arr), [1, 3], 1)
    for p, r in zip(parts, np.split(arr, [1, 3], axis=1)):
        S.assert_matches(p, r, device)


@S.prop()
@given(data=st.data())
def test_flip_tril_triu_repeat(device: ember.device, data: st.DataObject) -> None:
    d, arr = _input(device, data, min_dims=1)
    x = S.on(device, arr, d)
    dims = tuple(data.draw(st.lists(st.integers(-arr.ndim, arr.ndim - 1), min_size=1,
                                    max_size=arr.ndim, unique_by=lambda v: v % arr.ndim),
                           label="flip dims"))
    S.assert_matches(x.flip(dims), np.flip(arr, dims), device, dtype=d)
    S.assert_matches(x.flip(*dims), np.flip(arr, dims), device, dtype=d, what="flip(*dims)")
    reps = tuple(data.draw(st.lists(st.integers(1, 3), min_size=arr.ndim,
                                    max_size=arr.ndim + 1), label="repeats"))
    S.assert_matches(x.repeat(reps), np.tile(arr, reps), device, dtype=d)
    S.assert_matches(x.tile(reps[-1:]), np.tile(arr, reps[-1:]), device, dtype=d)
    if arr.ndim >= 2:
        k = data.draw(st.integers(-3, 3), label="diagonal")
        S.assert_matches(x.tril(k), np.tril(arr, k), device, dtype=d)
        S.assert_matches(ember.triu(x, k), np.triu(arr, k), device, dtype=d)
        S.assert_matches(x.tril(), np.tril(arr), device, dtype=d)


def test_clone_and_contiguous(device: ember.device) -> None:
    x = S.on(device, np.arange(6.0).reshape(2, 3))
    assert x.is_contiguous()
    assert x.contiguous() is x
    t = x.t()
    assert not t.is_contiguous()
    c = t.contiguous()
    assert c.is_contiguous()
    S.assert_matches(c, np.arange(6.0).reshape(2, 3).T, device)
    c.fill_(0.0)
    S.assert_matches(x, np.arange(6.0).reshape(2, 3), device, what="contiguous() copies")
    y = x.clone()
    y.add_(1.0)
    S.assert_matches(x, np.arange(6.0).reshape(2, 3), device, what="clone() copies")


# -- views: one storage ---------------------------------------------------------------

_VIEWS = {
    "slice": (lambda x: x[1:3], lambda a: a[1:3]),
    "step slice": (lambda x: x[::2, 1::2], lambda a: a[::2, 1::2]),
    "select": (lambda x: x[1], lambda a: a[1]),
    "view": (lambda x: x.view(2, 2, 4), lambda a: a.reshape(2, 2, 4)),
    "reshape": (lambda x: x.reshape(16), lambda a: a.reshape(16)),
    "t": (lambda x: x.t(), lambda a: a.T),
    "T": (lambda x: x.T, lambda a: a.T),
    "transpose": (lambda x: x.transpose(0, 1), lambda a: a.T),
    "permute": (lambda x: x.permute(1, 0), lambda a: a.T),
    "narrow": (lambda x: x.narrow(1, 1, 2), lambda a: a[:, 1:3]),
    "unsqueeze": (lambda x: x.unsqueeze(0), lambda a: a[None]),
    "squeeze": (lambda x: x[:1].squeeze(0), lambda a: a[0]),
    "split": (lambda x: x.split(2, 1)[1], lambda a: a[:, 2:4]),
    "chunk": (lambda x: x.chunk(2, 0)[1], lambda a: a[2:]),
    "unbind": (lambda x: x.unbind(1)[2], lambda a: a[:, 2]),
    "flatten": (lambda x: x.flatten(), lambda a: a.reshape(-1)),
    "ellipsis+None": (lambda x: x[..., None, 2], lambda a: a[..., None, 2]),
    "view of a view": (lambda x: x.t()[1:3].t(), lambda a: a.T[1:3].T),
}


@pytest.mark.parametrize("name", sorted(_VIEWS))
def test_write_through_view_reaches_base(device: ember.device, name: str) -> None:
    make, ref = _VIEWS[name]
    arr = np.arange(16, dtype=np.float32).reshape(4, 4)
    x = S.on(device, arr)
    v = make(x)
    S.assert_matches(v, ref(arr), device, what=f"{name} values")
    before = x._version
    v.mul_(-1.0)  # in place through the view
    expected = arr.copy()
    ref(expected)[...] *= -1
    S.assert_matches(x, expected, device, what=f"base after {name}.mul_")
    assert x._version > before, "an in-place write through a view must bump the base's version"
    # and the other way round: a write to the base is seen by the view
    x.add_(100.0)
    S.assert_matches(v, ref(expected + 100), device, what=f"{name} after base.add_")


def test_setitem_through_views(device: ember.device) -> None:
    arr = np.arange(12, dtype=np.float64).reshape(3, 4)
    x = S.on(device, arr)
    ref = arr.copy()
    x[1:3][0, ::2] = -1.0
    ref[1, ::2] = -1.0
    x.view(4, 3)[3] = S.on(device, np.array([7.0, 8.0, 9.0]))
    ref.reshape(4, 3)[3] = [7.0, 8.0, 9.0]
    x.t()[0] = 5.0
    ref.T[0] = 5.0
    x[:, 1].zero_()
    ref[:, 1] = 0.0
    x[2].copy_(S.on(device, np.array([1.0, 2.0, 3.0, 4.0])))
    ref[2] = [1.0, 2.0, 3.0, 4.0]
    x.narrow(0, 0, 1).fill_(3.0)
    ref[0] = 3.0
    S.assert_matches(x, ref, device)


def test_write_into_expanded_view_raises(device: ember.device) -> None:
    x = S.on(device, np.zeros((1, 3)))
    e = x.expand(4, 3)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor "
                                           "refers to a single memory location"):
        e.add_(1.0)


# -- what this module checks (ember.testing.test_coverage reads it) ---------------------

COVERS = {"reshape", "view", "view_as", "reshape_as", "permute", "transpose", "t", "movedim",
          "expand", "expand_as", "broadcast_to", "broadcast_tensors", "squeeze", "unsqueeze",
          "flatten", "unflatten", "narrow", "split", "chunk", "tensor_split", "unbind", "cat",
          "stack", "hstack", "vstack", "flip", "tril", "triu", "repeat", "tile", "clone",
          "contiguous", "is_contiguous", "getitem", "setitem", "assign", "fill_", "zero_",
          "copy_"}
"""The declared ops whose values this module's tests check."""


# -- SHAPE family: strided views, NumPy-style joins and splits, index grids, predicates --

COVERS |= {"strided_view", "diagonal", "unfold", "as_strided", "fliplr", "flipud", "rot90",
           "roll", "ravel", "diag", "diag_embed", "diagflat", "tril_indices", "triu_indices",
           "unravel_index", "meshgrid", "combinations", "cartesian_prod", "block_diag",
           "detach", "numel", "is_floating_point", "get_device", "is_signed", "is_nonzero",
           "is_same_size", "is_inference", "is_neg", "is_distributed", "resolve_neg",
           "adjoint", "type_as", "detach_copy", "dim_order"}


def test_dim_order(device: ember.device) -> None:
    x = ember.empty(2, 3, 4, 5, device=device)
    assert x.dim_order() == (0, 1, 2, 3)
    assert x.permute(0, 2, 3, 1).dim_order() == (0, 3, 1, 2)
    assert x.to(memory_format=ember.channels_last).dim_order() == (0, 2, 3, 1)
    assert ember.empty(4, 5, device=device).t().dim_order() == (1, 0)
    with pytest.raises(RuntimeError, match="unique dim order"):
        ember.empty(2, 1, 3, device=device).dim_order(ambiguity_check=True)

def _np_strided(a: np.ndarray, offset: int, shape: tuple, strides: tuple) -> np.ndarray:
    return np.lib.stride_tricks.as_strided(a.reshape(-1)[offset:], shape,
                                           tuple(s * a.itemsize for s in strides))


_STRIDED_VIEWS = {
    # (NumPy's diagonal is read-only: the references are its strided form)
    "diagonal": (lambda x: x.diagonal(), lambda a: _np_strided(a, 0, (4,), (5,))),
    "diagonal offset": (lambda x: ember.diagonal(x, -1, 1, 0),
                        lambda a: _np_strided(a, 1, (3,), (5,))),
    "diagonal of a transpose": (lambda x: x.t()[1:].diagonal(1),
                                lambda a: _np_strided(a, 5, (3,), (5,))),
    "unfold": (lambda x: x.unfold(1, 2, 2), lambda a: a.reshape(4, 2, 2)),
    "as_strided": (lambda x: x.as_strided((2, 2), (5, 1), 2),
                   lambda a: _np_strided(a, 2, (2, 2), (5, 1))),
}


@pytest.mark.parametrize("name", sorted(_STRIDED_VIEWS))
def test_strided_views_share_storage(device: ember.device, name: str) -> None:
    make, ref = _STRIDED_VIEWS[name]
    arr = np.arange(16, dtype=np.float32).reshape(4, 4)
    x = S.on(device, arr)
    v = make(x)
    S.assert_matches(v, ref(arr), device, what=f"{name} values")
    v.mul_(-1.0)  # a write through the view reaches the base ...
    expected = arr.copy()
    ref(expected)[...] *= -1
    S.assert_matches(x, expected, device, what=f"base after {name}.mul_")
    x.add_(100.0)  # ... and one to the base is seen by the view
    S.assert_matches(v, ref(expected + 100), device, what=f"{name} after base.add_")


def test_strided_view_layout(device: ember.device) -> None:
    x = S.on(device, np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    assert x.stride() == (12, 4, 1) and x.stride(-2) == 4 and x.storage_offset() == 0
    v = x[1, 1:].t()
    assert v.stride() == (1, 4) and v.storage_offset() == 16
    assert v.data_ptr() - x.data_ptr() == 16 * 4
    d = x.diagonal(0, 1, 2)
    assert d.stride() == (12, 5) and d.storage_offset() == 0
    assert x.unfold(2, 2, 1).stride() == (12, 4, 1, 1)
    e = S.on(device, np.zeros((2, 0)))
    assert tuple(e.diagonal().shape) == (0,) and tuple(e.unfold(1, 0, 1).shape) == (2, 1, 0)


def test_rearranging_ops_match_numpy(device: ember.device) -> None:
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = S.on(device, a)
    m = S.on(device, a[0])
    v = S.on(device, np.array([1.0, 2.0, 3.0], dtype=np.float32))
    S.assert_matches(ember.fliplr(x), a[:, ::-1], device)
    S.assert_matches(x.flipud(), a[::-1], device)
    S.assert_matches(ember.rot90(x, 1, (1, 2)), np.rot90(a, 1, (1, 2)), device)
    S.assert_matches(x.rot90(-3, (2, 0)), np.rot90(a, -3, (2, 0)), device)
    S.assert_matches(ember.roll(x, (1, -5), (0, 2)), np.roll(a, (1, -5), (0, 2)), device)
    S.assert_matches(x.roll(7), np.roll(a, 7), device)
    S.assert_matches(x.transpose(0, 2).ravel(), a.transpose(2, 1, 0).ravel(), device)
    S.assert_matches(ember.diag(v, -1), np.diag(a[0, 0, :0].tolist() + [1.0, 2, 3], -1),
                     device)
    S.assert_matches(m.diag(2), np.diag(a[0], 2), device)
    S.assert_matches(ember.diag_embed(m, 1)[1], np.diag(a[0, 1], 1), device)
    S.assert_matches(ember.diagflat(m[:2, :2]), np.diagflat(a[0, :2, :2]), device)
    S.assert_matches(ember.block_diag(m[:1, :2], v), [[0, 1, 0, 0, 0], [0, 0, 1, 2, 3]],
                     device, dtype=ember.float32)
    S.assert_matches(ember.combinations(v, 2), [[1, 2], [1, 3], [2, 3]], device,
                     dtype=ember.float32)
    S.assert_matches(ember.cartesian_prod(v[:2], v[1:]), [[1, 2], [1, 3], [2, 2], [2, 3]],
                     device, dtype=ember.float32)
    gx, gy = ember.meshgrid(v, v[:2], indexing="xy")
    nx, ny = np.meshgrid([1.0, 2, 3], [1.0, 2])
    S.assert_matches(gx, nx, device, dtype=ember.float32)
    S.assert_matches(gy, ny, device, dtype=ember.float32)
    S.assert_matches(ember.tril_indices(3, 4, 1, device=device), np.tril_indices(3, 1, 4),
                     device, dtype=ember.int64)
    S.assert_matches(ember.triu_indices(4, 3, -1, device=device), np.triu_indices(4, -1, 3),
                     device, dtype=ember.int64)
    flat = S.on(device, np.array([0, 5, 11, -1]), ember.int64)
    for got, want in zip(ember.unravel_index(flat, (3, 4)),
                         np.unravel_index(np.array([0, 5, 11, 11]), (3, 4))):
        S.assert_matches(got, want, device, dtype=ember.int64)


def test_tensor_predicates(device: ember.device) -> None:
    x = S.on(device, np.ones((2, 3), dtype=np.float32))
    i = S.on(device, np.array([0, 1], dtype=np.uint8), ember.uint8)
    assert ember.numel(x) == 6 and ember.is_floating_point(x) and not ember.is_floating_point(i)
    assert ember.get_device(x) == x.get_device()
    assert ember.is_signed(x) and not i.is_signed()
    assert ember.is_nonzero(x[0, :1]) and not ember.is_nonzero(i[:1])
    with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
        ember.is_nonzero(x)
    assert ember.is_same_size(x, x.t().t()) and not x.is_same_size(x.t())
    assert not (ember.is_inference(x) or ember.is_neg(x) or ember.is_distributed(x))
    assert ember.resolve_neg(x) is x
    assert ember.detach(x).data_ptr() == x.data_ptr()
    assert ember.detach_copy(x).data_ptr() != x.data_ptr()
    S.assert_matches(ember.adjoint(x), np.ones((3, 2)), device, dtype=ember.float32)
    S.assert_matches(x.type_as(i), np.ones((2, 3)), device, dtype=ember.uint8)


def test_slice_inverse_views_the_slice_with_the_sources_geometry(device: ember.device) -> None:
    base = S.on(device, np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    part = base[:, 1:]
    whole = ember.slice_inverse(part, base, 1, 1)
    assert tuple(whole.shape) == (2, 3, 4) and whole.stride() == base.stride()
    S.assert_matches(whole, np.arange(24, dtype=np.float32).reshape(2, 3, 4), device)
    S.assert_matches(part.slice_inverse(base[:, :, 1:], 2, 1), np.arange(
        24, dtype=np.float32).reshape(2, 3, 4)[:, :, 1:], device)


def test_module_load_copies_or_assigns(device: ember.device) -> None:
    own = S.on(device, np.zeros(3, dtype=np.float32))
    loaded = S.on(device, np.arange(3, dtype=np.float64))
    out = own.module_load(loaded)
    assert out is not own and out.dtype is ember.float32 and not out.requires_grad
    S.assert_matches(own, [0.0, 1.0, 2.0], device)  # copied into, cast to its dtype
    assigned = own.module_load(loaded, assign=True)
    assert assigned is not loaded and assigned.dtype is ember.float64


COVERS |= {"slice_inverse", "module_load"}



def test_view_dtype_reads_the_same_bits(device: ember.device) -> None:
    """`Tensor.view(dtype)`: the bits of each element as another dtype of the same size,
    and, for another size, the last dimension rescaled, as NumPy's `view` reads them;
    writes through the view reach the base."""
    values = np.array([[1.0, -2.0, 0.5, 0.0], [3.0, np.inf, -0.0, 6.0]], np.float32)
    x = S.on(device, values)
    S.assert_matches(x.view(ember.int32), values.view(np.int32), device, dtype=ember.int32)
    S.assert_matches(x.view(ember.int16), values.view(np.int16), device, dtype=ember.int16)
    S.assert_matches(x.view(ember.uint8), values.view(np.uint8), device, dtype=ember.uint8)
    if S.holds(device, ember.float64):
        S.assert_matches(x.view(ember.float64), values.view(np.float64), device,
                         dtype=ember.float64)
    transposed = x.t()  # same-size views keep any strides
    S.assert_matches(transposed.view(ember.int32), values.view(np.int32).T, device,
                     dtype=ember.int32)
    bits = x.view(ember.int32)
    bits[0, 0] = 0
    assert x[0, 0].item() == 0.0
    with pytest.raises(RuntimeError, match="stride"):
        transposed.view(ember.int16)


COVERS |= {"view_dtype"}
