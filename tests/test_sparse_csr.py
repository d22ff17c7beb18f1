"""Sparse CSR matrices against PyTorch: construction, the parts, conversions, the printed
form, products with a dense matrix (values and the dense operand's gradient), and the
errors of bad input."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ember  # noqa: E402

D = [[0.0, 2.0, 0.0], [1.0, 0.0, 3.0], [0.0, 0.0, 0.0], [4.0, 0.0, 0.0]]
CROW, COL, VALS = [0, 2, 3], [0, 2, 1], [1.0, 2.0, 3.0]


@pytest.fixture(autouse=True)
def _quiet_torch():
    with warnings.catch_warnings():  # torch's invariant-checks notice
        warnings.simplefilter("ignore", UserWarning)
        yield


def same_repr(e, t):
    assert repr(e) == repr(t).replace("torch.", "ember.")


def both(*args, dtype=None, **kwargs):
    """The same CSR matrix in ember and in torch (`dtype` a name: "float64")."""
    return tuple(lib.sparse_csr_tensor(*(lib.tensor(a) for a in args), **kwargs,
                                       **({} if dtype is None else
                                          {"dtype": getattr(lib, dtype)}))
                 for lib in (ember, torch))


def test_to_sparse_csr_parts_and_printed_form():
    e, t = ember.tensor(D).to_sparse_csr(), torch.tensor(D).to_sparse_csr()
    same_repr(e, t)
    assert e.layout is ember.sparse_csr and e.is_sparse_csr and not e.is_sparse
    assert (tuple(e.shape), e.dtype, e._nnz(), e.dim()) == ((4, 3), ember.float32, 4, 2)
    for part in ("crow_indices", "col_indices", "values"):
        assert getattr(e, part)().tolist() == getattr(t, part)().tolist()
    np.testing.assert_array_equal(e.to_dense().numpy(), np.array(D, dtype=np.float32))
    same_repr(ember.tensor(D).to_sparse(layout=ember.sparse_csr), t)
    same_repr(ember.zeros(2, 2).to_sparse_csr(), torch.zeros(2, 2).to_sparse_csr())
    same_repr(ember.tensor([[1, 0], [0, 2]]).to_sparse_csr(),
              torch.tensor([[1, 0], [0, 2]]).to_sparse_csr())


def test_sparse_csr_tensor_constructor_and_conversions():
    e, t = both(CROW, COL, VALS, size=(2, 3))
    same_repr(e, t)
    same_repr(*both(CROW, COL, VALS, size=(2, 3), dtype="float64"))
    same_repr(*both([0, 1, 1], [2], [5.0]))  # size inferred
    same_repr(e.to_sparse(), t.to_sparse())
    same_repr(e.to_sparse_coo(), t.to_sparse_coo())
    same_repr(e.to_sparse().to_sparse_csr(), t.to_sparse().to_sparse_csr())
    same_repr(e * 2, t * 2)
    assert e.sum().item() == t.sum().item() == 6.0
    with pytest.raises(TypeError, match="can't convert SparseCsr layout tensor to numpy"):
        e.numpy()


def test_product_with_a_dense_matrix_and_its_gradient():
    x = np.random.default_rng(0).standard_normal((3, 2)).astype(np.float32)
    res = []
    for lib, s in zip((ember, torch), both(CROW, COL, VALS, size=(2, 3))):
        xt = lib.tensor(x, requires_grad=True)
        y = s @ xt
        assert y.grad_fn.name() == "MmBackward0"
        (y * lib.tensor([[1.0, -2.0], [0.5, 3.0]])).sum().backward()
        res.append((y.detach().numpy(), xt.grad.numpy(), lib.mm(s, xt).detach().numpy(),
                    s.matmul(xt[:, 0]).detach().numpy()))
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-6)


@pytest.mark.parametrize("crow,col,message", [
    ([0, 2, 4], COL, r"`crow_indices\[\.\.\., -1\] == nnz` is not satisfied."),
    ([1, 2, 3], COL, r"`crow_indices\[\.\.\., 0\] == 0` is not satisfied."),
    (CROW, [0, 5, 1], "`0 <= col_indices < ncols` is not satisfied."),
    (CROW, [0, -1, 1], "`0 <= col_indices < ncols` is not satisfied."),
    ([0, 2], COL, r"crow_indices.shape\[-1\] must be equal to the number of rows \+ 1 "
                  r"\(=3\), but got 2"),
    (CROW, [0, 2], r"col_indices.shape\[-1\] must be equal to nnz \(=3\) as defined by "
                   r"values.shape\[0\], but got 2"),
])
def test_invariants_are_checked_with_torchs_messages(crow, col, message):
    for lib in (ember, torch):
        with pytest.raises(RuntimeError, match=message):
            lib.sparse_csr_tensor(lib.tensor(crow), lib.tensor(col), lib.tensor(VALS), (2, 3),
                                  check_invariants=True)


def test_errors_of_unsupported_uses():
    e = ember.tensor(D).to_sparse_csr()
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied "
                                           r"\(4x3 and 4x2\)"):
        e @ ember.ones(4, 2)
    with pytest.raises(RuntimeError, match="^unsupported tensor layout: SparseCsr$"):
        ember.exp(e)  # (as PyTorch: exp(0) != 0, not a value-wise op of a sparse tensor)
    for lib in (ember, torch):  # a batch's matrices must have one number of entries
        with pytest.raises(RuntimeError, match="Expect the same number of specified elements "
                                               "per batch."):
            lib.stack([lib.eye(2), lib.ones(2, 2)]).to_sparse_csr()
