"""PyTorch programs that port unchanged (issue 16), the SHAPE family: strided views
(`diagonal`, `Tensor.unfold`, `as_strided`), NumPy-style joins and splits, rotations,
diagonals and their scatters, index grids, `repeat_interleave`, the `*_copy` views, and
the tensor attributes and predicates (`stride`, `storage`, `resize_` ...). PyTorch is the
oracle: every case runs the same spelling on both."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _same(got, want, what="result"):
    """`got` (ember) equals `want` (torch): values, shape and dtype, through tuples."""
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), what
        for g, w in zip(got, want):
            _same(g, w, what)
        return
    if isinstance(want, torch.dtype):
        assert str(got).split(".")[-1] == str(want).split(".")[-1], what
        return
    if not isinstance(want, torch.Tensor):
        assert got == want, f"{what}: {got!r} != {want!r}"
        return
    assert isinstance(got, ember.Tensor), f"{what}: {type(got).__name__}"
    assert tuple(got.shape) == tuple(want.shape), f"{what}: {got.shape} != {want.shape}"
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], \
        f"{what}: {got.dtype} != {want.dtype}"
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy(), err_msg=what)


def _inputs(lib):
    """A float (2, 3, 4), a 1-D float with NaN and inf, a 0-d, an int matrix, an empty."""
    return dict(
        x=lib.tensor(np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)),
        v=lib.tensor(np.array([1.0, np.nan, -np.inf], dtype=np.float32)),
        s=lib.tensor(np.float32(3.0)),
        i=lib.tensor(np.arange(12, dtype=np.int64).reshape(3, 4)),
        e=lib.tensor(np.zeros((0, 3), dtype=np.float32)),
    )


# Each case runs as `fn(lib, **_inputs(lib))` on ember and on torch
VALUE_CASES = {
    "atleast_1d": lambda L, s, v, **_: (L.atleast_1d(s), L.atleast_1d(s, v)),
    "atleast_2d": lambda L, s, v, e, **_: (L.atleast_2d(v), L.atleast_2d([s, e])),
    "atleast_3d": lambda L, s, v, i, **_: L.atleast_3d(s, v, i),
    "column_stack": lambda L, s, v, i, **_: (L.column_stack([v, i[:3, :1].float()]),
                                            L.column_stack((s, s))),
    "row_stack": lambda L, v, **_: L.row_stack([v, v]),
    "dstack": lambda L, v, i, **_: (L.dstack([v, v]), L.dstack((i, i))),
    "hsplit": lambda L, x, v, **_: (L.hsplit(x, [1, 2]), v.hsplit(3), x.hsplit(1)),
    "vsplit": lambda L, x, e, **_: (L.vsplit(x, 2), e.vsplit([1])),
    "dsplit": lambda L, x, **_: (L.dsplit(x, [1, 3]), x.dsplit(2)),
    "split_with_sizes": lambda L, x, e, **_: (L.split_with_sizes(x, [1, 2], 1),
                                              e.split_with_sizes([2, 1], 1)),
    "split keywords": lambda L, x, **_: (x.split(split_size=[1, 3], dim=-1), x.split(split_size=2),
                                         L.split(x, split_size_or_sections=2, dim=1)),
    "unsafe": lambda L, x, **_: (x.unsafe_chunk(3, 2), L.unsafe_split(x, 2, 2),
                                 L.unsafe_split_with_sizes(x, [3, 1], -1)),
    "fliplr_flipud": lambda L, x, i, **_: (L.fliplr(x), x.flipud(), i.fliplr()),
    "rot90": lambda L, x, i, e, **_: [L.rot90(x, k, (1, 2)) for k in range(-5, 6)] +
    [i.rot90(), L.rot90(e, 1)],
    "roll": lambda L, x, v, i, e, s, **_: (L.roll(x, 1), L.roll(x, (1, -2), (0, 2)),
                                           x.roll(-7, 1), L.roll(v, 4), i.roll(13),
                                           L.roll(e, 2, 0), L.roll(s, 3)),
    "ravel": lambda L, x, s, e, **_: (x.transpose(0, 1).ravel(), L.ravel(s), e.ravel()),
    "diag": lambda L, x, v, i, e, **_: (L.diag(v), L.diag(v, 1), L.diag(v, -2),
                                        L.diag(x[0], 1), i.diag(-1), i.diag(9), L.diag(e)),
    "diag_embed": lambda L, x, v, i, **_: (L.diag_embed(x), L.diag_embed(x, 1, 0, 2),
                                           L.diag_embed(v, -1), i.diag_embed(2, -1, 0)),
    "diagflat": lambda L, x, v, **_: (L.diagflat(x[0]), L.diagflat(v, 2), v.diagflat(-1)),
    "diagonal": lambda L, x, i, e, **_: (L.diagonal(x), x.diagonal(1, -1, -2),
                                         L.diagonal(x, -1, 2, 0), i.diagonal(5), e.diagonal()),
    "diagonal_scatter": lambda L, x, v, i, **_: (
        L.diagonal_scatter(x[0], v), x.diagonal_scatter(x[:, 0, :3], 1, 1, 2),
        L.diagonal_scatter(i, i[0, :3] * 0 - 1, 0)),
    "select_scatter": lambda L, x, i, **_: (L.select_scatter(x, x[:, 1] * 0, 1, -1),
                                            i.select_scatter(i[0] + 1, 0, 2)),
    "slice_scatter": lambda L, x, i, **_: (L.slice_scatter(x, x[:, :, ::2] * 0, 2, None,
                                                           None, 2),
                                           i.slice_scatter(i[:1] * 0, 0, 1, 2)),
    "as_strided_scatter": lambda L, x, v, **_: L.as_strided_scatter(x[0], v, (3,), (5,)),
    "as_strided": lambda L, x, **_: (L.as_strided(x, (3, 3), (1, 2)),
                                     x.as_strided((2, 2), (4, 1), 3),
                                     x[1].as_strided((2,), (1,)),
                                     x.as_strided((2, 3), (0, 1)), x.as_strided((0, 5), (1, 1))),
    "block_diag": lambda L, x, v, s, i, e, **_: (L.block_diag(x[0], v, s, i[:2, :1]),
                                                 L.block_diag(i, i), L.block_diag(e, v)),
    "cartesian_prod": lambda L, v, i, **_: (L.cartesian_prod(v, v[:2]), L.cartesian_prod(v),
                                            L.cartesian_prod(i[0], i[1, :2], i[2, :1])),
    "combinations": lambda L, v, i, **_: (L.combinations(v), L.combinations(v, 3, True),
                                          L.combinations(v, 0), L.combinations(v[:1]),
                                          L.combinations(i[0], 3)),
    "meshgrid": lambda L, v, s, i, **_: (L.meshgrid(v, v[:2], indexing="ij"),
                                         L.meshgrid(v, v[:2], s, indexing="xy"),
                                         L.meshgrid([v], indexing="xy"),
                                         L.meshgrid(i[0], i[1, :2], indexing="xy")),
    "tril_triu_indices": lambda L, **_: (L.tril_indices(3, 4), L.tril_indices(4, 3, -1),
                                         L.triu_indices(3, 3, 1), L.triu_indices(0, 3),
                                         L.tril_indices(3, 3, dtype=L.int32),
                                         L.triu_indices(2, 5, 9)),
    "unravel_index": lambda L, i, **_: (L.unravel_index(L.tensor([5, -1, 7, 0]), (2, 3)),
                                        L.unravel_index(L.tensor(4), 6),
                                        L.unravel_index(i, (4, 3)),
                                        L.unravel_index(i.int(), L.Size([2, 6]))),
    "repeat_interleave": lambda L, v, x, s, i, e, **_: (
        L.repeat_interleave(v, 2), x.repeat_interleave(2, 1),
        L.repeat_interleave(x, L.tensor([1, 0, 2]), 1), L.repeat_interleave(L.tensor([2, 1])),
        v.repeat_interleave(L.tensor([3])), L.repeat_interleave(s, 3), i.repeat_interleave(1),
        L.repeat_interleave(e, 2, 0), x.repeat_interleave(L.tensor([2, 0, 1]), dim=1,
                                                          output_size=3)),
    "unfold": lambda L, x, s, v, e, **_: (x.unfold(2, 2, 1), x.unfold(0, 1, 2),
                                          x.unfold(-1, 4, 4), s.unfold(0, 1, 1),
                                          s.unfold(0, 0, 3), v.unfold(0, 2, 5),
                                          e.unfold(1, 2, 1), e.unfold(0, 0, 1)),
    "copies": lambda L, x, v, i, **_: (
        L.alias_copy(x), L.diagonal_copy(x), L.expand_copy(v, (2, 3)), L.narrow_copy(x, 1, 1, 2),
        i.narrow_copy(0, 1, 1), L.permute_copy(x, (2, 0, 1)), L.select_copy(x, 2, 1),
        L.slice_copy(x, 1, 0, 2), L.slice_copy(x, 2, None, None, 3), L.split_copy(x, 2, 2),
        L.split_with_sizes_copy(x, [1, 2], 1), L.squeeze_copy(x[:1]), L.squeeze_copy(x, 0),
        L.t_copy(x[0]), L.transpose_copy(x, 0, 2), L.unbind_copy(x, 1),
        L.unsqueeze_copy(x, 1), L.view_copy(x, (4, 6)), L.unfold_copy(x, 2, 2, 2),
        L.detach_copy(x), L.as_strided_copy(x, (2,), (3,)), L.as_strided_copy(x, (2,), (3,), 1)),
    "predicates": lambda L, x, s, i, e, **_: (
        L.numel(x), L.numel(e), L.is_floating_point(x), L.is_floating_point(i),
        L.get_device(x), L.is_signed(x), i.is_signed(), L.is_signed(x.bool()),
        L.is_signed(x.to(L.uint8)), L.is_nonzero(s), L.is_nonzero(i[0, :1]),
        L.is_same_size(x, x), x.is_same_size(x[0]), x.is_inference(), L.is_neg(x),
        L.is_distributed(x), L.resolve_neg(x), L.adjoint(x), x.mH, x[0].H, s.H,
        x.type_as(i), i.type_as(x), x.ndimension(), s.ndimension(), x.nbytes, i.itemsize,
        x.output_nr, x.name, x.is_meta, x.is_mps, x.is_xla, x.is_maia, x.is_shared(),
        x.grad_dtype, i.grad_dtype),
}


@pytest.mark.parametrize("name", sorted(VALUE_CASES))
def test_values_match_torch(name):
    fn = VALUE_CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _same(fn(ember, **_inputs(ember)), fn(torch, **_inputs(torch)), name)


# -- views: real views, with PyTorch's strides and offsets ------------------------------

VIEWS = {
    "diagonal": lambda x: x.diagonal(),
    "diagonal(1, 2, 0)": lambda x: x.diagonal(1, 2, 0),
    "diagonal of a transpose": lambda x: x.transpose(0, 2).diagonal(-1),
    "diagonal of a slice": lambda x: x[1:, 1:].diagonal(0, 1, 2),
    "unfold": lambda x: x.unfold(2, 2, 1),
    "unfold of a slice": lambda x: x[:, 1:].unfold(1, 2, 1),
    "as_strided": lambda x: x.as_strided((3, 3), (1, 5), 2),
    "as_strided of a view": lambda x: x[1].as_strided((2, 2), (4, 1)),
    "as_strided of a transpose": lambda x: x.transpose(0, 1).as_strided((2, 2), (1, 8), 1),
    "as_strided reaching before a view": lambda x: x[1].as_strided((3,), (5,), 0),
    "as_strided of a column": lambda x: x[:, 1].as_strided((2, 2), (1, 12), 4),
    "hsplit": lambda x: x.hsplit([1])[1],
    "dsplit": lambda x: x.dsplit(2)[1],
    "split_with_sizes": lambda x: x.split_with_sizes([1, 3], 2)[1],
    "unsafe_chunk": lambda x: x.unsafe_chunk(2, 2)[0],
    "atleast_3d of a 1-D": lambda x: ember.atleast_3d(x[0, 0]) if isinstance(x, ember.Tensor)
    else torch.atleast_3d(x[0, 0]),
    "adjoint": lambda x: x.adjoint(),
    "mH": lambda x: x.mH,
    "ravel": lambda x: x.ravel(),
    "meshgrid": lambda x: (ember if isinstance(x, ember.Tensor) else torch).meshgrid(
        x[0, 0], x[1, 1, :2], indexing="ij")[0],
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_views_share_storage_as_in_torch(name):
    make = VIEWS[name]
    arr = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    x, t = ember.tensor(arr), torch.tensor(arr)
    v, w = make(x), make(t)
    _same(v, w, name)
    assert v.stride() == w.stride(), name
    assert v.storage_offset() == w.storage_offset(), name
    assert v.data_ptr() - x.data_ptr() == w.data_ptr() - t.data_ptr(), name
    if v.numel() == len(set(np.asarray(w.stride()) @ np.indices(w.shape).reshape(w.ndim, -1))):
        v.mul_(-1)  # a write through the view reaches the base (where no element repeats)
        w.mul_(-1)
        _same(x, t, f"base after a write through {name}")
    x.add_(100)  # and a write to the base is seen by the view
    t.add_(100)
    _same(v, w, f"{name} after a write to the base")


def test_writes_through_overlapping_views_as_torch():
    x, t = ember.zeros(5), torch.zeros(5)
    x.unfold(0, 2, 1).select(1, 0).add_(1.0)  # no element written twice
    t.unfold(0, 2, 1).select(1, 0).add_(1.0)
    _same(x, t)
    x.as_strided((2,), (2,), 1).fill_(7.0)
    t.as_strided((2,), (2,), 1).fill_(7.0)
    _same(x, t)


def test_as_strided_inplace_makes_the_tensor_the_view():
    x, t = ember.arange(6.0), torch.arange(6.0)
    out = x.as_strided_((2, 2), (1, 2), 1)
    t.as_strided_((2, 2), (1, 2), 1)
    assert out is x
    _same(x, t)
    assert x.stride() == t.stride() and x.storage_offset() == t.storage_offset()


# -- gradients --------------------------------------------------------------------------

GRAD_CASES = {
    "diagonal": lambda L, x: L.diagonal(x, 1, 0, 2) * 2,
    "as_strided of a transpose": lambda L, x: x.transpose(0, 2).as_strided((2, 3), (1, 4)) ** 2,
    "overlapping unfold": lambda L, x: x.unfold(2, 3, 1) ** 2,
    "overlapping as_strided": lambda L, x: L.as_strided(x, (3, 3), (1, 1), 2) ** 2,
    "diag of a vector": lambda L, x: L.diag(x[0, 0], 1) ** 2,
    "diag of a matrix": lambda L, x: L.diag(x[0], -1) ** 2,
    "diag_embed": lambda L, x: L.diag_embed(x, -1, 2, 0) ** 2,
    "diagflat": lambda L, x: L.diagflat(x[0]) ** 2,
    "diagonal_scatter": lambda L, x: L.diagonal_scatter(x[0] ** 2, x[1, :, 0] * 3),
    "select_scatter": lambda L, x: L.select_scatter(x ** 2, x[:, 0] * 3, 1, 2),
    "slice_scatter": lambda L, x: L.slice_scatter(x ** 2, x[..., 1:3] * 3, 2, 1, 4, 2),
    "roll": lambda L, x: L.roll(x, (1, 5), (0, 2)) ** 2,
    "rot90": lambda L, x: L.rot90(x, 3, (2, 1)) ** 2,
    "repeat_interleave counts": lambda L, x: L.repeat_interleave(x, L.tensor([2, 0, 1]), 1) ** 2,
    "repeat_interleave int": lambda L, x: x.repeat_interleave(3) ** 2,
    "block_diag": lambda L, x: L.block_diag(x[0], x[1, 0]) ** 2,
    "cartesian_prod": lambda L, x: L.cartesian_prod(x[0, 0], x[1, 1, :2]) ** 2,
    "combinations": lambda L, x: L.combinations(x[0, 0], 2, True) ** 2,
    "meshgrid": lambda L, x: L.meshgrid(x[0, 0], x[1, 1], indexing="xy")[1] ** 2,
    "column_stack": lambda L, x: L.column_stack([x[0, 0], x[1, 1]]) ** 2,
    "dstack": lambda L, x: L.dstack([x[0], x[1]]) ** 2,
    "copies": lambda L, x: L.diagonal_copy(x, 0, 1, 2) * L.transpose_copy(x, 1, 2)[:, :3, 0],
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradients_match_torch(name):
    fn = GRAD_CASES[name]
    arr = np.random.default_rng(3).uniform(-1, 1, (2, 3, 4))
    x = ember.tensor(arr, requires_grad=True)
    t = torch.tensor(arr, requires_grad=True)
    out, want = fn(ember, x), fn(torch, t)
    _same(out, want, name)
    weights = np.random.default_rng(4).uniform(-1, 1, tuple(want.shape))
    (out * ember.tensor(weights)).sum().backward()
    (want * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_gradient_node_names():
    x = ember.ones(3, 3, requires_grad=True)
    assert type(x.diagonal().grad_fn).__name__ == "DiagonalBackward0" or \
        x.diagonal().grad_fn.name() == "DiagonalBackward0"
    assert x.unfold(0, 2, 1).grad_fn.name() == "UnfoldBackward0"
    assert x.as_strided((2,), (4,)).grad_fn.name() == "AsStridedBackward0"


# -- errors: the type and message PyTorch raises ----------------------------------------

ERROR_CASES = {
    "hsplit of a 0-d": lambda L, s, **_: L.hsplit(s, 2),
    "hsplit not divisible": lambda L, x, **_: L.hsplit(x, 2),
    "vsplit of a 1-D": lambda L, v, **_: L.vsplit(v, 1),
    "dsplit not divisible": lambda L, x, **_: L.dsplit(x, 3),
    "fliplr of a 1-D": lambda L, v, **_: L.fliplr(v),
    "flipud of a 0-d": lambda L, s, **_: L.flipud(s),
    "rot90 one dim": lambda L, x, **_: L.rot90(x, 1, [0]),
    "rot90 of a 1-D": lambda L, v, **_: L.rot90(v),
    "rot90 same dims": lambda L, x, **_: L.rot90(x, 1, [1, 1]),
    "roll without dims": lambda L, x, **_: L.roll(x, (1, 2)),
    "roll misaligned": lambda L, x, **_: L.roll(x, (1, 2), (0,)),
    "diag of a 3-D": lambda L, x, **_: L.diag(x),
    "diag of a 0-d": lambda L, s, **_: L.diag(s),
    "diagonal same dims": lambda L, x, **_: L.diagonal(x, 0, 1, 1),
    "diagonal of a 1-D": lambda L, v, **_: L.diagonal(v),
    "diag_embed same dims": lambda L, x, **_: L.diag_embed(x, 0, 1, 1),
    "diagonal_scatter size": lambda L, x, v, **_: L.diagonal_scatter(x[0], v[:2]),
    "select_scatter size": lambda L, x, v, **_: L.select_scatter(x[0], v, 0, 0),
    "slice_scatter size": lambda L, x, v, **_: L.slice_scatter(x[0], v, 1, 0, 2),
    "unfold too big": lambda L, x, **_: x.unfold(2, 5, 1),
    "unfold step 0": lambda L, x, **_: x.unfold(2, 2, 0),
    "unfold negative size": lambda L, x, **_: x.unfold(2, -1, 1),
    "as_strided lengths": lambda L, x, **_: L.as_strided(x, (2, 2), (1,)),
    "as_strided out of bounds": lambda L, x, **_: L.as_strided(x, (5, 5), (5, 1)),
    "as_strided negative stride": lambda L, x, **_: L.as_strided(x, (2,), (-1,)),
    "as_strided negative offset": lambda L, x, **_: L.as_strided(x, (2,), (1,), -1),
    "block_diag of a 3-D": lambda L, x, v, **_: L.block_diag(x, v),
    "cartesian_prod of a 3-D": lambda L, x, v, **_: L.cartesian_prod(x, v),
    "combinations of a 3-D": lambda L, x, **_: L.combinations(x),
    "combinations negative r": lambda L, v, **_: L.combinations(v, -1),
    "meshgrid indexing": lambda L, v, **_: L.meshgrid(v, v, indexing="ab"),
    "meshgrid dtypes": lambda L, v, **_: L.meshgrid(v, v.long(), indexing="ij"),
    "meshgrid of nothing": lambda L, **_: L.meshgrid(indexing="ij"),
    "tril_indices negative row": lambda L, **_: L.tril_indices(-1, 3),
    "triu_indices negative col": lambda L, **_: L.triu_indices(2, -3),
    "tril_indices float": lambda L, **_: L.tril_indices(3, 3, dtype=L.float32),
    "unravel_index float": lambda L, v, **_: L.unravel_index(v, (3,)),
    "unravel_index negative shape": lambda L, v, **_: L.unravel_index(v.long(), (3, -1)),
    "repeat_interleave negative": lambda L, v, **_: L.repeat_interleave(v, -1),
    "repeat_interleave 2-D counts": lambda L, x, **_: L.repeat_interleave(x.long()),
    "repeat_interleave lengths": lambda L, v, **_: L.repeat_interleave(v, L.tensor([1, 2])),
    "repeat_interleave negative count": lambda L, v, **_: L.repeat_interleave(
        v, L.tensor([1, -2, 1])),
    "repeat_interleave float counts": lambda L, v, **_: L.repeat_interleave(
        v, L.tensor([1.0, 2, 1])),
    "repeat_interleave output_size": lambda L, v, **_: L.repeat_interleave(
        v, L.tensor([1, 2, 1]), output_size=3),
    "column_stack of nothing": lambda L, **_: L.column_stack([]),
    "dstack of a tensor": lambda L, v, **_: L.dstack(v),
    "adjoint of a 1-D": lambda L, v, **_: L.adjoint(v),
    "H of a 3-D": lambda L, x, **_: x.H,
    "mH of a 1-D": lambda L, v, **_: v.mH,
    "is_nonzero of an empty": lambda L, v, **_: L.is_nonzero(v[:0]),
    "is_nonzero of many": lambda L, v, **_: L.is_nonzero(v),
    "resize_ requiring grad": lambda L, v, **_: v.clone().requires_grad_().resize_(2),
    "resize to other numel": lambda L, v, **_: v.resize(2, 2),
    "split_with_sizes sum": lambda L, v, **_: L.split_with_sizes(v, [1, 1]),
    "Tensor.split keyword of torch.split": lambda L, v, **_: v.split(split_size_or_sections=1),
}


@pytest.mark.parametrize("name", sorted(ERROR_CASES))
def test_errors_match_torch(name):
    fn = ERROR_CASES[name]
    caught = []
    for lib in (torch, ember):
        with warnings.catch_warnings(), pytest.raises(Exception) as info:
            warnings.simplefilter("ignore")
            fn(lib, **_inputs(lib))
        caught.append(info.value)
    want, got = caught
    assert type(got) is type(want), f"{name}: {type(got).__name__}: {got}"
    message = str(want).split("\n")[0].replace("torch.", "").replace("Dimension out", "")
    assert message.split(" ")[0] in str(got) and \
        str(got).replace("ember.", "").replace("torch.", "").endswith(
            message.split("Dimension out")[-1][-40:]), f"{name}: {got!r} vs torch {want!r}"


# -- tensor attributes ------------------------------------------------------------------


def test_strides_and_offsets_match_torch():
    arr = np.arange(60.0, dtype=np.float32).reshape(3, 4, 5)
    x, t = ember.tensor(arr), torch.tensor(arr)
    for view in (lambda a: a, lambda a: a[1], lambda a: a[:, 1:3, ::2], lambda a: a.t()
                 if a.ndim == 2 else a.transpose(0, 2), lambda a: a.permute(1, 2, 0)[1:],
                 lambda a: a.expand(2, 3, 4, 5), lambda a: a[:, None], lambda a: a[2:, 3:],
                 lambda a: a[0, 0].expand(1, 5)):
        v, w = view(x), view(t)
        assert v.stride() == w.stride() and v.storage_offset() == w.storage_offset()
        assert [v.stride(d) for d in range(-v.ndim, v.ndim)] == \
            [w.stride(d) for d in range(-w.ndim, w.ndim)]
        assert v.data_ptr() - x.data_ptr() == w.data_ptr() - t.data_ptr()
        assert v.const_data_ptr() == v.data_ptr()
        assert v.is_set_to(view(x)) and v.is_set_to(v.detach())
    assert not x.is_set_to(x.clone()) and not x.is_set_to(x[1:])
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.stride(3)


def test_storage_objects():
    arr = np.arange(6.0, dtype=np.float32)
    x, t = ember.tensor(arr), torch.tensor(arr)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for view in (lambda a: a, lambda a: a[2:], lambda a: a.view(2, 3).t()):
            s, w = view(x).storage(), view(t).storage()
            assert s.size() == w.size() == len(s) and s.tolist() == w.tolist()
            assert str(s.dtype) == "ember.float32" and s.device == x.device
            assert s.data_ptr() == x.data_ptr() and s.nbytes() == w.nbytes()
            assert s.element_size() == 4 and s[1] == 1.0 and list(s) == w.tolist()
            u, uw = view(x).untyped_storage(), view(t).untyped_storage()
            assert u.size() == uw.size() == u.nbytes() == 24
        assert x.storage_type().__name__ == t.storage_type().__name__ == "FloatStorage"
        assert ember.arange(3).storage_type().__name__ == "LongStorage"
        assert isinstance(x.storage(), x.storage_type())
        assert x[1:].storage() == x.storage()
        assert "of size 6]" in repr(x.storage())
    assert x.layout is ember.strided and repr(ember.strided) == "ember.strided"
    assert isinstance(ember.strided, ember.layout)


def test_typed_storage_warns_its_deprecation_once_as_torch(monkeypatch):
    from ember.core import errors

    monkeypatch.setattr(errors, "_warned", set())  # (warned once a process)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ember.ones(2).storage()
        ember.ones(2).storage()
        ember.ones(2).untyped_storage()
    assert [str(w.message)[:26] for w in caught] == ["TypedStorage is deprecated"]
    assert caught[0].category is UserWarning and caught[0].filename == __file__


def test_resize_and_set_match_torch():
    for shape in ((2, 3), (2, 2), (4, 3), (0,), (6,)):
        x, t = ember.arange(6.0), torch.arange(6.0)
        assert x.resize_(*shape) is x
        t.resize_(*shape)
        kept = min(6, int(np.prod(shape)))
        assert tuple(x.shape) == tuple(t.shape)
        np.testing.assert_array_equal(x.numpy().reshape(-1)[:kept], t.numpy().reshape(-1)[:kept])
    x = ember.arange(6.0)
    v0 = x._version
    x.resize_as_(ember.zeros(3, 2))
    assert tuple(x.shape) == (3, 2) and x._version > v0
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        r = x.resize(2, 3)
    assert tuple(r.shape) == (2, 3) and r.data_ptr() == x.data_ptr()
    with pytest.warns(UserWarning, match="non-inplace resize_as is deprecated"):
        assert tuple(x.resize_as(ember.zeros(6)).shape) == (6,)
    y, src = ember.zeros(2), ember.arange(4.0)
    assert y.set_(src) is y
    assert y.data_ptr() == src.data_ptr() and tuple(y.shape) == (4,)
    src.add_(1)
    assert y.tolist() == [1.0, 2.0, 3.0, 4.0]
    y.set_(src, 1, (2,), (2,))
    assert y.tolist() == [2.0, 4.0]
    assert y.storage().tolist() == src.tolist()
    view = ember.zeros(3, 4)[1]
    view.set_(src)  # no longer a view of the zeros: writes reach src
    view.mul_(2)
    assert src.tolist() == [2.0, 4.0, 6.0, 8.0]
    assert tuple(y.set_().shape) == (0,)
    with pytest.raises(TypeError, match="expected a Tensor source"):
        y.set_(3)


def test_python_callables_elementwise():
    x, t = ember.tensor([[1.0, -2.0], [3.0, 0.5]]), torch.tensor([[1.0, -2.0], [3.0, 0.5]])
    f = lambda a: a * a + 1  # noqa: E731
    assert x.apply_(f) is x
    t.apply_(f)
    _same(x, t)
    other = [[2.0, 1.0], [0.0, 1.0]]
    x.map_(ember.tensor(other), lambda a, b: a - b)
    t.map_(torch.tensor(other), lambda a, b: a - b)
    _same(x, t)
    x.map2_(ember.tensor([1.0, 2.0]), ember.tensor(3.0), lambda a, b, c: a * b + c)
    t.map2_(torch.tensor([1.0, 2.0]), torch.tensor(3.0), lambda a, b, c: a * b + c)
    _same(x, t)
    i, ti = ember.tensor([1, 2]), torch.tensor([1, 2])
    _same(i.apply_(lambda a: a * 3), ti.apply_(lambda a: a * 3))


def test_grad_dtype_as_torch():
    for lib in (ember, torch):
        x = lib.ones(2, requires_grad=True)
        assert str(x.grad_dtype).endswith("float32")
        x.grad_dtype = lib.float64
        (x * 2).sum().backward()
        assert str(x.grad.dtype).endswith("float64") and x.grad.tolist() == [2.0, 2.0]
        x.grad_dtype = None
        assert x.grad_dtype is None
        with pytest.raises(RuntimeError, match="grad_dtype can only be accessed on leaf"):
            assert (x * 2).grad_dtype is None  # raises first
        with pytest.raises(RuntimeError, match="grad_dtype can only be set on leaf"):
            (x * 2).grad_dtype = lib.float32
        with pytest.raises(RuntimeError, match="grad_dtype must be a"):
            x.grad_dtype = 3


def test_misc_attributes():
    x = ember.ones(2, 3)
    assert not x.is_shared() and x.share_memory_() is x and x.is_shared()
    with pytest.warns(UserWarning, match="volatile was removed"):
        assert x.volatile is False
    assert ember.detach(x.requires_grad_()).requires_grad is False
    y = x * 2
    values, indices = ember.ones(4).requires_grad_().sort() if hasattr(ember, "sort") else \
        ember.ones(4).requires_grad_().topk(2)
    assert (y.output_nr, values.output_nr) == (0, 0)


def test_meshgrid_without_indexing_warns_and_is_ij():
    a, b = ember.arange(3), ember.arange(2)
    with pytest.warns(UserWarning, match="required to pass the indexing argument"):
        ga, gb = ember.meshgrid(a, b)
    assert tuple(ga.shape) == (3, 2) and gb.tolist() == [[0, 1]] * 3


# -- export and traces ------------------------------------------------------------------


def test_strided_views_export_to_onnx():
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")

    def model(x):
        return x.diagonal(1, 0, 2) * 2, x.transpose(0, 1).unfold(2, 2, 1), \
            ember.diag_embed(x[0]), ember.as_strided(x, (3, 2), (1, 5), 2)

    x = ember.tensor(np.random.default_rng(0).standard_normal((3, 4, 5)).astype(np.float32))
    buf = io.BytesIO()
    ember.onnx.export(model, (x,), buf)
    onnx.checker.check_model(onnx.load_from_string(buf.getvalue()))
    session = ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])
    got = session.run(None, {session.get_inputs()[0].name: x.numpy()})
    for g, w in zip(got, model(x)):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-6)


def test_a_trace_replays_the_scatters():
    def f(x, s):
        return ember.diagonal_scatter(x, s) + ember.select_scatter(x, s, 1, 0) + \
            ember.diag_embed(s, -1)[1:, :3]

    x, s = ember.randn(3, 3), ember.randn(3)
    traced = ember.jit.trace(f, (x, s))
    x2, s2 = ember.randn(3, 3), ember.randn(3)
    np.testing.assert_allclose(traced(x2, s2).numpy(), f(x2, s2).numpy())


def test_result_layouts_match_torch():
    """The copies come out with PyTorch's strides too (rot90 is a transposed copy)."""
    for k in range(-1, 5):
        assert ember.rot90(ember.zeros(2, 3, 4), k, (1, 2)).stride() == \
            torch.rot90(torch.zeros(2, 3, 4), k, (1, 2)).stride()
    for make in (lambda L: L.diag_embed(L.zeros(3, 4)), lambda L: L.roll(L.zeros(2, 3), 1, 1),
                 lambda L: L.repeat_interleave(L.zeros(2, 3), 2, 1),
                 lambda L: L.meshgrid(L.zeros(3), L.zeros(2), indexing="xy")[0],
                 lambda L: L.atleast_3d(L.zeros(4)), lambda L: L.cartesian_prod(L.zeros(2),
                                                                                L.zeros(3))):
        assert make(ember).stride() == make(torch).stride()


# -- Tensor.view(dtype): bit views -----------------------------------------------------


def _view_dtype_cases(L):
    x = L.tensor([[1.0, -2.0, 0.5, 0.0], [3.0, float("inf"), -0.0, 6.0]])
    return [
        lambda: x.view(L.int32),
        lambda: x.view(dtype=L.int32),
        lambda: x.t().view(L.int32),  # same size: any strides
        lambda: L.tensor(1.0).view(L.int32),
        lambda: x.view(L.uint8),
        lambda: x.view(L.int16)[:, 1:3],
        lambda: x[:, 2:].view(L.float64),
        lambda: x.view(L.float16),
        lambda: x.view(L.bool).view(L.float32),
        lambda: L.tensor([1.0, 2.0], dtype=L.float16).view(L.int16),
        lambda: L.tensor([1.0, 2.0], dtype=L.bfloat16).view(L.uint8),
        lambda: L.arange(16, dtype=L.uint8).reshape(2, 8)[:, 4:].view(L.int32),
        lambda: L.tensor([1.0], dtype=L.float64).view(L.int64),
        lambda: L.zeros(3, 4)[::3].view(L.float64),
        lambda: L.zeros(2, 6)[:, :4].view(L.float64),
    ]


def test_view_dtype_reinterprets_bits_as_torch_does():
    for i, (e, t) in enumerate(zip(_view_dtype_cases(ember), _view_dtype_cases(torch))):
        got, want = e(), t()
        _same(got, want, f"case {i}")
        assert got.stride() == want.stride(), f"case {i}"
        assert got.storage_offset() == want.storage_offset(), f"case {i}"


@pytest.mark.parametrize("make", [
    lambda L: L.tensor(1.0).view(L.int16),
    lambda L: L.arange(6.0).reshape(2, 3).t().view(L.int16),
    lambda L: L.arange(6.0).reshape(2, 3).view(L.float64),
    lambda L: L.zeros(2, 4)[:, 1:3].view(L.float64),
    lambda L: L.zeros(3, 4)[:, ::2].view(L.float64),
    lambda L: L.zeros(3, 5)[:, 1:].view(L.float64),
])
def test_view_dtype_errors_match_torch(make):
    with pytest.raises(Exception) as want:
        make(torch)
    with pytest.raises(type(want.value)) as got:
        make(ember)
    assert str(got.value) == str(want.value).replace("torch.", "ember.")


def test_view_dtype_shares_memory_and_is_not_differentiable():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    bits = x.view(ember.int32)
    assert not bits.requires_grad and bits.grad_fn is None
    y = ember.tensor([1.0, 2.0])
    v = y.view(ember.int32)
    v[0] = 0
    assert y.tolist() == [0.0, 2.0] and y._version == v._version == 1
    y.view(ember.uint8)[4:8] = ember.tensor([0, 0, 128, 63], dtype=ember.uint8)  # 1.0
    assert y.tolist() == [0.0, 1.0]


def test_broadcast_shapes_matches_torch():
    for shapes in [((2, 1), (3,)), (), (5, (2, 1)), ((1, 4), (3, 1), (4,))]:
        assert tuple(ember.broadcast_shapes(*shapes)) == tuple(torch.broadcast_shapes(*shapes))
    for shapes in [((2, 3), (4,)), ((2, -1),)]:
        with pytest.raises(Exception) as want:
            torch.broadcast_shapes(*shapes)
        with pytest.raises(type(want.value)) as got:
            ember.broadcast_shapes(*shapes)
        assert str(got.value) == str(want.value)


def test_memory_formats_as_torch():
    """`channels_last` and friends: accepted by to/contiguous/Module.to without changing a
    value; is_contiguous(memory_format=...) answers as PyTorch's for a row-major tensor."""
    import pickle

    names = ["contiguous_format", "channels_last", "channels_last_3d", "preserve_format"]
    for name in names:
        fmt = getattr(ember, name)
        assert isinstance(fmt, ember.memory_format) and repr(fmt) == f"ember.{name}"
        assert pickle.loads(pickle.dumps(fmt)) is fmt
    shapes = [(2, 3, 4, 5), (2, 1, 4, 5), (2, 3, 1, 1), (1, 3, 1, 4), (3, 4), (2, 3, 4, 5, 6),
              (2, 1, 1, 1, 1), (2, 3, 1, 1, 1)]
    for shape in shapes:
        for name in names[:3]:
            assert ember.ones(shape).is_contiguous(memory_format=getattr(ember, name)) == \
                torch.ones(shape).is_contiguous(memory_format=getattr(torch, name)), (shape, name)
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float32)
    y = ember.tensor(x).to(memory_format=ember.channels_last)
    np.testing.assert_array_equal(y.contiguous(memory_format=ember.channels_last).numpy(), x)
    conv = ember.nn.Conv2d(3, 2, 1).to(memory_format=ember.channels_last)
    assert tuple(conv(y).shape) == (2, 2, 4, 5)
    with pytest.raises(TypeError, match="argument 'memory_format' must be torch.memory_format, "
                                        "not str"):
        ember.ones(2).is_contiguous(memory_format="channels_last")


def test_broadcast_shapes_and_logspace_as_torch():
    for shapes in [((2, 1), (1, 3), 3, (1, 1)), (), ((5,),), ((0, 1), (3,)), (4, (2, 1))]:
        got = ember.broadcast_shapes(*shapes)
        assert isinstance(got, ember.Size) and got == torch.broadcast_shapes(*shapes)
    for bad, err in ((((2, 3), (4, 3)), RuntimeError), (((2, -1),), ValueError)):
        with pytest.raises(err) as t_err:
            torch.broadcast_shapes(*bad)
        with pytest.raises(err) as e_err:
            ember.broadcast_shapes(*bad)
        assert str(e_err.value) == str(t_err.value)
    for args, kwargs in [((0, 2, 3), {}), ((0, 1, 4), {"base": 2}), ((-1, 3, 9), {}),
                         ((0, 2, 3), {"dtype": "int64"}), ((1, 0, 5), {"dtype": "float64"}),
                         ((2, 2, 1), {}), ((0, 1, 0), {})]:
        t = torch.logspace(*args, **{k: getattr(torch, v) if k == "dtype" else v
                                     for k, v in kwargs.items()})
        e = ember.logspace(*args, **{k: getattr(ember, v) if k == "dtype" else v
                                     for k, v in kwargs.items()})
        assert str(e.dtype)[6:] == str(t.dtype)[6:]
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-15, atol=0)  # (pow's ulp)


@pytest.mark.parametrize("name,make", [
    ("cosine_similarity", lambda L, a, b: L.cosine_similarity(a, b, dim=0, eps=1e-6)),
    ("pairwise_distance", lambda L, a, b: L.pairwise_distance(a, b, 1.0, 1e-6, True)),
    ("pdist", lambda L, a, b: L.pdist(a, 3.0)),
    ("pixel_shuffle", lambda L, a, b: L.pixel_shuffle(a.reshape(1, 4, 2, 3), 2)),
    ("pixel_unshuffle", lambda L, a, b: L.pixel_unshuffle(a.reshape(1, 1, 4, 6), 2)),
    ("channel_shuffle", lambda L, a, b: L.channel_shuffle(a.reshape(1, 4, 6), 2)),
    ("bilinear", lambda L, a, b: L.bilinear(a, b, L.ones(2, 6, 6), L.ones(2))),
])
def test_torch_level_forms_of_functional_ops(name, make):
    """`torch.cosine_similarity` & co, as `torch.nn.functional`'s (positional order too)."""
    rng = np.random.default_rng(7)
    a, b = (rng.standard_normal((4, 6)).astype(np.float32) for _ in range(2))
    t = make(torch, torch.tensor(a), torch.tensor(b))
    e = make(ember, ember.tensor(a), ember.tensor(b))
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5, atol=1e-5)


def test_tile_method_takes_separate_ints_as_torch():
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    e, t = ember.tensor(x), torch.tensor(x)
    for call in ("x.tile(1, 2)", "x.tile((1, 2))", "x.tile(2)", "x.tile(dims=(2, 1, 1))",
                 "lib.tile(x, (2,))"):
        got = eval(call, {"x": e, "lib": ember})
        want = eval(call, {"x": t, "lib": torch})
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    with pytest.raises(TypeError):
        ember.tile(e, 1, 2)  # (the function takes one dims argument, as PyTorch's)
