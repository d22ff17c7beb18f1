"""Set AH (session 37): what the sparse-tensor and optimizer programs needed, against
PyTorch."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import ember  # noqa: E402

IDX = [[0, 1, 1, 2, 0], [2, 0, 2, 1, 2]]
VALS = [3.0, 4.0, 5.0, 6.0, 1.0]


def _pair(size=(3, 3)):
    t = torch.sparse_coo_tensor(torch.tensor(IDX), torch.tensor(VALS), size)
    e = ember.sparse_coo_tensor(ember.tensor(IDX), ember.tensor(VALS), size)
    return t, e


def _raised(fn, *args):
    with pytest.raises(Exception) as info:
        fn(*args)
    return type(info.value), str(info.value)


def test_sparse_coo_tensor_of_size_keyword() -> None:
    t, e = torch.sparse_coo_tensor(size=(2, 4)), ember.sparse_coo_tensor(size=(2, 4))
    assert tuple(e.shape) == tuple(t.shape) == (2, 4) and e._nnz() == t._nnz() == 0
    assert tuple(e.indices().shape) == tuple(t.indices().shape) == (2, 0)
    assert str(e.dtype)[6:] == str(t.dtype)[6:]


def test_dense_op_on_sparse_raises_pytorchs_words() -> None:
    t, e = _pair()
    t_type, t_msg = _raised(lambda: t.view(9))
    e_type, e_msg = _raised(lambda: e.view(9))
    assert e_type is t_type is NotImplementedError
    # PyTorch ends with its build's list of backends that have the op; ember's hint is a note
    assert t_msg.startswith(e_msg) and e_msg.endswith("for possible resolutions.")
    with pytest.raises(NotImplementedError) as info:
        e.view(9)
    assert any("call .to_dense()" in note for note in info.value.__notes__)


def test_sparse_tensor_storage_answers() -> None:
    t, e = _pair()
    hybrid_t = torch.sparse_coo_tensor(torch.tensor([[0, 2]]), torch.ones(2, 2), (3, 2))
    hybrid_e = ember.sparse_coo_tensor(ember.tensor([[0, 2]]), ember.ones(2, 2), (3, 2))
    assert e.stride() == t.stride() == (0, 0) and hybrid_e.stride() == hybrid_t.stride()
    assert e.stride(-1) == t.stride(1) == 0
    assert _raised(e.stride, 2) == _raised(t.stride, 2)
    assert e.storage_offset() == t.storage_offset() == 0
    csr_t, csr_e = t.coalesce().to_sparse_csr(), e.coalesce().to_sparse_csr()
    for a, b in ((t, e), (csr_t, csr_e)):
        for name in ("data_ptr", "untyped_storage", "storage_type"):
            assert _raised(getattr(b, name)) == _raised(getattr(a, name)), name
    assert _raised(lambda: e.nbytes) == _raised(lambda: t.nbytes)
    assert csr_e.nbytes == csr_t.nbytes


def _same_sparse(e, t) -> None:
    assert e._indices().tolist() == t._indices().tolist()
    assert e._values().tolist() == t._values().tolist()
    assert tuple(e.shape) == tuple(t.shape) and e.is_coalesced() == t.is_coalesced()
    assert str(e.dtype)[6:] == str(t.dtype)[6:]


def test_cat_of_sparse_tensors() -> None:
    t, e = _pair()
    tc, ec = t.coalesce(), e.coalesce()
    for dim in (0, 1, -1):
        _same_sparse(ember.cat([ec, e], dim), torch.cat([tc, t], dim))
    _same_sparse(ember.cat([ec, ec.double()]), torch.cat([tc, tc.double()]))
    _same_sparse(ember.cat([ec]), torch.cat([tc]))
    ht = torch.sparse_coo_tensor(torch.tensor([[0, 2]]), torch.tensor([[1.0, 2.0], [3.0, 4.0]]),
                                 (3, 2))
    he = ember.sparse_coo_tensor(ember.tensor([[0, 2]]), ember.tensor([[1.0, 2.0], [3.0, 4.0]]),
                                 (3, 2))
    _same_sparse(ember.cat((he, he), 1), torch.cat((ht, ht), 1))  # along the dense dim
    _same_sparse(ember.concat([he, he], 0), torch.concat([ht, ht], 0))
    for args_t, args_e in [(([tc, torch.ones(3, 3)],), ([ec, ember.ones(3, 3)],)),
                           (([tc, tc.narrow_copy(1, 0, 2)], 0), ([ec, ec.narrow_copy(1, 0, 2)], 0)),
                           (([tc, ht], 0), ([ec, he], 0)), (([tc, tc], 2), ([ec, ec], 2))]:
        assert _raised(ember.cat, *args_e) == _raised(torch.cat, *args_t)


def test_cat_of_sparse_tensors_carries_gradients() -> None:
    v = ember.tensor(VALS, requires_grad=True)
    s = ember.sparse_coo_tensor(ember.tensor(IDX), v, (3, 3))
    out = ember.cat([s, s * 2.0], 1)
    assert out.grad_fn.name() == "CatBackward0"
    ember.sparse.sum(out).backward()
    assert v.grad.tolist() == [3.0] * 5
