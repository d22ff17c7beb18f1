"""Sparse COO tensors against PyTorch: construction, printed forms, coalescing,
conversions, products (values and gradients), sums, softmax, arithmetic, the errors of
bad input and of dense ops given a sparse tensor, and checkpoints."""

from __future__ import annotations

import copy
import io
import pickle
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import ember  # noqa: E402

I = [[0, 1, 1, 2, 1], [2, 0, 2, 1, 0]]  # noqa: E741 - (1, 0) twice: uncoalesced
V = [3.0, 4.0, 5.0, 6.0, 0.5]


@pytest.fixture(autouse=True)
def _quiet_torch():
    with warnings.catch_warnings():  # torch's invariant-checks notice
        warnings.simplefilter("ignore", UserWarning)
        yield


def both(indices, values, size=None, **kwargs):
    """The same sparse tensor in ember and in torch."""
    sized = () if size is None else (size,)  # (torch refuses size=None positionally)
    e = ember.sparse_coo_tensor(ember.tensor(np.asarray(indices, dtype=np.int64)),
                                ember.tensor(np.asarray(values)), *sized, **kwargs)
    t = torch.sparse_coo_tensor(torch.tensor(np.asarray(indices, dtype=np.int64)),
                                torch.tensor(np.asarray(values)), *sized, **kwargs)
    return e, t


def same_repr(e, t):
    assert repr(e).replace("ember.", "torch.") == repr(t)


def close(e, t, **kw):
    e = e.to_dense() if e.is_sparse else e
    t = t.to_dense() if t.is_sparse else t
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-6,
                               **kw)


# -- the layout, attributes and printed forms -------------------------------------------


def test_layout_objects_and_attributes():
    e, t = both(I, np.float32(V), (3, 3))
    assert repr(ember.sparse_coo) == "ember.sparse_coo" and repr(ember.strided) == "ember.strided"
    assert e.layout is ember.sparse_coo and ember.ones(2).layout is ember.strided
    assert isinstance(e, ember.Tensor) and ember.is_tensor(e)
    assert e.is_sparse and not ember.ones(2).is_sparse
    assert (e.shape, e.size(), e.size(-1), e.dim(), e.ndim, e.numel(), len(e)) == \
        (ember.Size([3, 3]), ember.Size([3, 3]), 3, 2, 2, 9, 3)
    assert (e._nnz(), e.sparse_dim(), e.dense_dim(), e.is_coalesced()) == \
        (t._nnz(), t.sparse_dim(), t.dense_dim(), t.is_coalesced())
    assert e.dtype is ember.float32 and e.device == ember.device("cpu")
    assert e.type() == "ember.sparse.FloatTensor" and t.type() == "torch.sparse.FloatTensor"
    assert repr(type(e)) == "<class 'ember.Tensor'>" and repr(type(t)) == "<class 'torch.Tensor'>"


@pytest.mark.parametrize("case", [
    (I, np.float32(V), (3, 3), {}),
    (I, np.float32(V), None, {}),
    (I, np.float64(V), (3, 4), {}),
    (I, np.int64([1, 2, 3, 4, 5]), (3, 3), {}),
    (I, np.ones((5, 2), np.float32), (3, 3, 2), {}),
    (np.zeros((2, 0), np.int64), np.zeros(0, np.float32), (2, 3), {}),
    (I, np.float32(V), (3, 3), {"requires_grad": True}),
    ([[0, 1, 2, 3]], np.float32([1e-5, 1.0, 12345.0, 2.5]), (4,), {}),
    (np.random.RandomState(0).randint(0, 100, (2, 700)),
     np.random.RandomState(1).rand(700).astype(np.float32), (100, 100), {}),
], ids=["float", "size-inferred", "float64", "int64", "hybrid", "empty", "requires-grad",
        "sci-mode", "summarized"])
def test_printed_form_is_pytorchs(case):
    indices, values, size, kwargs = case
    e, t = both(indices, values, size, **kwargs)
    same_repr(e, t)
    same_repr(e.coalesce(), t.coalesce())


def test_printed_form_with_a_grad_fn():
    v_e = ember.tensor(V, requires_grad=True)
    v_t = torch.tensor(V, requires_grad=True)
    e = ember.sparse_coo_tensor(ember.tensor(I), v_e, (3, 3))
    t = torch.sparse_coo_tensor(torch.tensor(I), v_t, (3, 3))
    same_repr(e, t)
    assert not e.is_leaf and e.requires_grad and e.grad_fn is not None


# -- construction, its errors, coalescing ---------------------------------------------


def test_coalesce_sums_duplicates_and_sorts():
    e, t = both(I, np.float32(V), (3, 3))
    ec, tc = e.coalesce(), t.coalesce()
    assert ec.is_coalesced() and ec.coalesce() is ec
    assert ec.indices().tolist() == tc.indices().tolist()
    assert ec.values().tolist() == tc.values().tolist()
    assert e._indices().tolist() == t._indices().tolist()
    # (values() is an alias of the values: a new tensor each call, as PyTorch's)
    assert not e._values().requires_grad and ec.values().data_ptr() == ec.values().data_ptr()
    assert e._values().tolist() == t._values().tolist()
    assert ember.sparse_coo_tensor(ember.tensor(I), ember.tensor(V),
                                   is_coalesced=True).is_coalesced()


def test_indices_and_values_of_an_uncoalesced_tensor_raise_as_pytorch():
    e, _ = both(I, np.float32(V), (3, 3))
    with pytest.raises(RuntimeError, match=r"^Cannot get indices on an uncoalesced tensor, "
                                           r"please call \.coalesce\(\) first$"):
        e.indices()
    with pytest.raises(RuntimeError, match=r"^Cannot get values on an uncoalesced tensor"):
        e.values()


@pytest.mark.parametrize("make, error, message", [
    (lambda m: m.sparse_coo_tensor(m.tensor(I), m.tensor(V[:3]), (3, 3)), RuntimeError,
     "indices and values must have same nnz, but got nnz from indices: 5, nnz from values: 3"),
    (lambda m: m.sparse_coo_tensor(m.tensor(I), m.tensor(V), (3,)), RuntimeError,
     "'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = 1, sparse_dim = 2, "
     "dense_dim = 0"),
    (lambda m: m.sparse_coo_tensor(m.tensor(I), m.ones(5, 2), (3, 3, 3)), RuntimeError,
     "values has incorrect size, expected [5, 3], got [5, 2]"),
    (lambda m: m.sparse_coo_tensor(m.tensor(I[0]), m.tensor(V)), RuntimeError,
     "indices must be sparse_dim x nnz, but got: [5]"),
    (lambda m: m.sparse_coo_tensor(m.tensor(I), m.tensor(V), (2, 3),
                                   check_invariants=True), RuntimeError,
     "size is inconsistent with indices: for dim 0, size is 2 but found index 2"),
    (lambda m: m.sparse_coo_tensor(-m.tensor(I), m.tensor(V), (3, 3),
                                   check_invariants=True), RuntimeError,
     "found negative index -2 for dim 0"),
    (lambda m: m.ones(2, 2).indices(), RuntimeError,
     "indices expected sparse coordinate tensor layout but got Strided"),
    (lambda m: m.ones(2, 2).values(), RuntimeError,
     "values expected sparse tensor layout but got Strided"),
    (lambda m: m.ones(2, 2).coalesce(), RuntimeError,
     "coalesce expected sparse coordinate tensor layout but got Strided"),
    (lambda m: m.ones(2, 2).is_coalesced(), RuntimeError,
     "is_coalesced expected sparse coordinate tensor layout but got Strided"),
    (lambda m: m.ones(2, 2).to_sparse(3), RuntimeError,
     "dense_to_sparse: sparse_dim argument must be in [0,2] range, but 3 is given"),
])
def test_bad_input_raises_pytorchs_errors(make, error, message):
    with pytest.raises(error) as want:
        make(torch)
    assert str(want.value) == message  # the oracle still says this
    with pytest.raises(error) as got:
        make(ember)
    assert str(got.value) == message


def test_constructor_options():
    e = ember.sparse_coo_tensor(I, V, (3, 3), dtype=ember.float64)
    assert e.dtype is ember.float64 and e._indices().dtype is ember.int64
    assert ember.sparse_coo_tensor(ember.tensor(I).float(), ember.tensor(V))._indices().dtype \
        is ember.int64
    assert ember.sparse_coo_tensor(I, [1, 2, 3, 4, 5]).dtype is ember.int64
    assert tuple(ember.sparse_coo_tensor(ember.zeros(2, 0, dtype=ember.int64),
                                         ember.zeros(0)).shape) == (0, 0)
    assert ember.sparse_coo_tensor(I, V, ember.Size([3, 3])).shape == ember.Size([3, 3])
    with pytest.raises(RuntimeError, match="found negative index -1 for dim 1"):
        ember.sparse_coo_tensor([[0, 1], [1, -1]], [1.0, 2.0])  # (an ember check: see docs)


def test_legacy_constructors():
    with pytest.warns(UserWarning, match=r"sparse_coo_tensor\(indices, values, shape"):
        e = ember.sparse.FloatTensor(ember.tensor(I), ember.tensor(V), ember.Size([3, 3]))
    with pytest.warns(UserWarning):
        t = torch.sparse.FloatTensor(torch.tensor(I), torch.tensor(V), torch.Size([3, 3]))
    same_repr(e, t)
    assert isinstance(e, ember.sparse.FloatTensor) and not isinstance(e, ember.FloatTensor)
    assert not isinstance(ember.ones(2), ember.sparse.FloatTensor)
    same_repr(ember.sparse.FloatTensor(2, 3), torch.sparse.FloatTensor(2, 3))
    same_repr(ember.sparse.DoubleTensor(), torch.sparse.DoubleTensor())
    with pytest.warns(UserWarning):
        long = ember.sparse.LongTensor(ember.tensor(I), ember.tensor([1, 2, 3, 4, 5]))
    assert long.dtype is ember.int64


# -- conversions ------------------------------------------------------------------------


def test_to_dense_and_to_sparse():
    e, t = both(I, np.float32(V), (3, 3))
    close(e.to_dense(), t.to_dense())
    dense = [[0.0, 1.0, 0.0], [2.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    es, ts = ember.tensor(dense).to_sparse(), torch.tensor(dense).to_sparse()
    same_repr(es, ts)
    assert es.is_coalesced() and es.to_sparse() is es
    same_repr(ember.tensor(dense).to_sparse(1), torch.tensor(dense).to_sparse(1))
    x = ember.ones(2, 2)
    assert x.to_dense() is x and x.sparse_dim() == 0 and x.dense_dim() == 2
    with pytest.raises(NotImplementedError, match="aten::_nnz"):
        x._nnz()
    with pytest.raises(RuntimeError, match="dtype argument is not supported by sparse_to_dense"):
        e.to_dense(ember.float64)


def test_sparse_mask_and_the_other_layouts():
    e, t = both(I, np.float32(V), (3, 3))
    d = np.arange(9, dtype=np.float32).reshape(3, 3)
    for mask_e, mask_t in ((e, t), (e.coalesce(), t.coalesce())):
        same_repr(ember.tensor(d).sparse_mask(mask_e), torch.tensor(d).sparse_mask(mask_t))
    assert repr(ember.sparse_csr) == "ember.sparse_csr" and not ember.ones(2).is_sparse_csr
    assert e.layout is not ember.sparse_csr
    for lib in (ember, torch):  # (the compressed layouts: tests/test_sparse_compressed.py)
        with pytest.raises(TypeError, match=r"to_sparse\(\) takes 0 positional arguments "
                                            "but 1 was given"):
            lib.ones(2, 2).to_sparse(2, layout=lib.sparse_csc)


def test_to_sparse_is_differentiable():
    x_e = ember.tensor([[0.0, 1.0], [2.0, 0.0]], requires_grad=True)
    x_t = torch.tensor([[0.0, 1.0], [2.0, 0.0]], requires_grad=True)
    w = [[1.0, 2.0], [3.0, 4.0]]
    (x_e.to_sparse().to_dense() * ember.tensor(w)).sum().backward()
    (x_t.to_sparse().to_dense() * torch.tensor(w)).sum().backward()
    close(x_e.grad, x_t.grad)


def test_moves_casts_and_copies():
    e, t = both(I, np.float32(V), (3, 3))
    for f in (lambda s: s.to(torch.float64 if isinstance(s, torch.Tensor) else ember.float64),
              lambda s: s.double(), lambda s: s.clone(), lambda s: s.detach(),
              lambda s: s.coalesce().clone(), lambda s: s.coalesce().double(),
              lambda s: s.cpu()):
        ge, gt = f(e), f(t)
        same_repr(ge, gt)
        assert ge.is_coalesced() == gt.is_coalesced()
    assert e.to("cpu") is e and e.to(ember.float32) is e
    assert e.requires_grad_() is e and e.requires_grad and e.is_leaf


def test_transpose():
    e, t = both(I, np.float32(V), (3, 4))
    for f in (lambda s: s.t(), lambda s: s.transpose(0, 1), lambda s: s.T,
              lambda s: s.coalesce().t()):
        ge, gt = f(e), f(t)
        same_repr(ge, gt)
        assert ge.is_coalesced() == gt.is_coalesced()


# -- products -------------------------------------------------------------------------


@pytest.mark.parametrize("product", [
    lambda m, s, d: m.sparse.mm(s, d),
    lambda m, s, d: m.spmm(s, d),
    lambda m, s, d: m.mm(s, d),
    lambda m, s, d: m.matmul(s, d),
    lambda m, s, d: s @ d,
    lambda m, s, d: s.mm(d),
    lambda m, s, d: s.matmul(d),
    lambda m, s, d: m.addmm(m.ones(3, 2), s, d, beta=0.5, alpha=2.0),
    lambda m, s, d: m.sparse.addmm(m.ones(3, 2), s, d),
    lambda m, s, d: s @ d[:, 0],
    lambda m, s, d: d.t() @ s.t(),
], ids=["sparse.mm", "spmm", "mm", "matmul", "@", "Tensor.mm", "Tensor.matmul", "addmm",
        "sparse.addmm", "matrix-vector", "dense@sparse"])
def test_sparse_dense_products_and_their_gradients(product):
    d = np.random.RandomState(0).randn(4, 2).astype(np.float32)
    v_e, v_t = ember.tensor(V, requires_grad=True), torch.tensor(V, requires_grad=True)
    d_e, d_t = ember.tensor(d, requires_grad=True), torch.tensor(d, requires_grad=True)
    s_e = ember.sparse_coo_tensor(ember.tensor(I), v_e, (3, 4))
    s_t = torch.sparse_coo_tensor(torch.tensor(I), v_t, (3, 4))
    out_e, out_t = product(ember, s_e, d_e), product(torch, s_t, d_t)
    close(out_e, out_t)
    if out_t.grad_fn.name() != "AddmmBackward0":  # (ember's dense addmm: AddBackward0)
        assert out_e.grad_fn.name() == out_t.grad_fn.name()
    (out_e * out_e).sum().backward()
    (out_t * out_t).sum().backward()
    close(d_e.grad, d_t.grad)
    close(v_e.grad, v_t.grad)


def test_the_gradient_of_a_sparse_leaf_is_sparse_as_sparse_mm_makes_it():
    d = np.random.RandomState(1).randn(3, 2).astype(np.float32)
    e, t = both(I, np.float32(V), (3, 3), requires_grad=True)
    ember.sparse.mm(e, ember.tensor(d)).pow(2).sum().backward()
    torch.sparse.mm(t, torch.tensor(d)).pow(2).sum().backward()
    assert e.grad.is_sparse and e.grad.layout is ember.sparse_coo
    close(e.grad, t.grad)
    e.grad = None
    assert e.grad is None


def test_sparse_times_sparse_and_the_product_errors():
    e, t = both(I, np.float32(V), (3, 3))
    close(ember.sparse.mm(e, e), torch.sparse.mm(t, t))
    with pytest.raises(RuntimeError, match=r"^addmm: Argument #3 \(dense\): Expected dim 0 "
                                           r"size 3, got 4$"):
        ember.sparse.mm(e, ember.ones(4, 2))
    with pytest.raises(RuntimeError, match="^expected scalar type Float but found Double$"):
        ember.mm(e, ember.ones(3, 2, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="^mat2 must be a matrix\n"):
        ember.mm(e, ember.ones(3))
    close(ember.sparse.mm(ember.ones(2, 3), ember.ones(3, 2)),
          torch.sparse.mm(torch.ones(2, 3), torch.ones(3, 2)))


# -- reductions, softmax, arithmetic --------------------------------------------------


@pytest.mark.parametrize("dim", [None, 0, 1, -1, (0, 1)])
def test_sparse_sum(dim):
    e, t = both(I, np.float32(V), (3, 4))
    args = () if dim is None else (dim,)
    ge, gt = ember.sparse.sum(e, *args), torch.sparse.sum(t, *args)
    assert ge.is_sparse == gt.is_sparse
    if gt.is_sparse:
        same_repr(ge, gt.detach())
    close(ge, gt)
    close(e.sum(*args), t.sum(*args))


def test_sparse_sum_of_hybrid_and_integer_tensors():
    e, t = both(I, np.arange(10, dtype=np.float32).reshape(5, 2), (3, 3, 2))
    for dim in (2, (0, 1), (0, 2), (1, 2)):
        ge, gt = ember.sparse.sum(e, dim), torch.sparse.sum(t, dim)
        assert ge.is_sparse == gt.is_sparse and tuple(ge.shape) == tuple(gt.shape)
        close(ge, gt)
    ei, ti = both(I, np.int64([1, 2, 3, 4, 5]), (3, 3))
    assert ember.sparse.sum(ei).dtype is ember.int64 and \
        ember.sparse.sum(ei).item() == torch.sparse.sum(ti).item()
    assert ember.sparse.sum(e, dtype=ember.float64).dtype is ember.float64
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.sparse.sum(e, 3)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_sparse_softmax_over_the_specified_entries(fn, dim):
    v = np.float32([0.5, -1.0, 2.0, 0.25, 3.0])
    v_e, v_t = ember.tensor(v, requires_grad=True), torch.tensor(v, requires_grad=True)
    s_e = ember.sparse_coo_tensor(ember.tensor(I), v_e, (3, 3)).coalesce()
    s_t = torch.sparse_coo_tensor(torch.tensor(I), v_t, (3, 3)).coalesce()
    # (torch's backward for a negative dim is wrong: its gradients of one group do not sum
    # to zero; its dim 1 is the oracle of dim -1)
    out_e, out_t = getattr(ember.sparse, fn)(s_e, dim), getattr(torch.sparse, fn)(s_t, dim % 2)
    close(out_e.values(), out_t.values())
    assert out_e.indices().tolist() == out_t.indices().tolist()
    same_repr(out_e, out_t)
    w = np.float32([1, 2, 3, 4])
    (out_e.values() * ember.tensor(w)).sum().backward()
    (out_t.values() * torch.tensor(w)).sum().backward()
    close(v_e.grad, v_t.grad)


@pytest.mark.parametrize("op", [
    lambda a, b, m: a * 2, lambda a, b, m: 2.5 * a, lambda a, b, m: a / 4,
    lambda a, b, m: a * m.tensor(3.0), lambda a, b, m: -a, lambda a, b, m: a + b,
    lambda a, b, m: a - b, lambda a, b, m: a.add(b, alpha=2),
    lambda a, b, m: a.coalesce() + b.coalesce(),
    lambda a, b, m: a * m.arange(9.0).reshape(3, 3),
], ids=["mul-int", "rmul", "div", "mul-0d", "neg", "add", "sub", "add-alpha",
        "add-coalesced", "mul-dense"])
def test_arithmetic(op):
    a_e, a_t = both(I, np.float32(V), (3, 3))
    b_e, b_t = both([[0, 0, 2], [1, 2, 1]], np.float32([1, 2, 7]), (3, 3))
    ge, gt = op(a_e, b_e, ember), op(a_t, b_t, torch)
    assert ge.is_sparse and ge.is_coalesced() == gt.is_coalesced()
    close(ge, gt)
    if gt.is_coalesced():
        same_repr(ge, gt)


@pytest.mark.parametrize("op", [lambda d, s: d + s, lambda d, s: d - s, lambda d, s: d * s],
                         ids=["dense+sparse", "dense-sparse", "dense*sparse"])
def test_dense_operand_first(op):
    a_e, a_t = both(I, np.float32(V), (3, 3))
    d = np.arange(9, dtype=np.float32).reshape(3, 3)
    d_e, d_t = ember.tensor(d, requires_grad=True), torch.tensor(d, requires_grad=True)
    ge, gt = op(d_e, a_e), op(d_t, a_t)
    assert ge.is_sparse == gt.is_sparse
    close(ge, gt)
    (ge.to_dense() if ge.is_sparse else ge).pow(2).sum().backward()
    (gt.to_dense() if gt.is_sparse else gt).pow(2).sum().backward()
    close(d_e.grad, d_t.grad)


def test_sparse_plus_dense_and_mismatched_sizes_raise_as_pytorch():
    a_e, _ = both(I, np.float32(V), (3, 3))
    with pytest.raises(RuntimeError, match=r"^add\(sparse, dense\) is not supported. Use "
                                           r"add\(dense, sparse\) instead.$"):
        a_e + ember.ones(3, 3)
    b_e, _ = both(I, np.float32(V), (3, 4))
    with pytest.raises(RuntimeError, match=r"expected sizes of 'self' and 'other' to match, "
                                           r"but \[3, 3\] != \[3, 4\]"):
        a_e + b_e
    with pytest.raises(RuntimeError, match=r"dense-sparse addition does not currently support "
                                           r"broadcasting"):
        ember.ones(3) + a_e
    with pytest.raises(RuntimeError, match=r"^add\(sparse, dense\) is not supported"):
        1 + a_e


@pytest.mark.parametrize("call", [
    lambda m, s: m.t(s), lambda m, s: m.transpose(s, 0, 1), lambda m, s: m.swapaxes(s, 0, 1),
    lambda m, s: m.sum(s), lambda m, s: m.sum(s, 1), lambda m, s: m.clone(s),
    lambda m, s: m.neg(s), lambda m, s: m.mul(s, 2), lambda m, s: m.add(s, s, alpha=2),
    lambda m, s: m.sub(s, s), lambda m, s: m.div(s, 4), lambda m, s: m.detach(s),
    lambda m, s: m.add(m.ones(3, 3), s, alpha=2), lambda m, s: m.sub(m.ones(3, 3), s),
    lambda m, s: m.mul(m.ones(3, 3) * 2, s),
], ids=["t", "transpose", "swapaxes", "sum", "sum-dim", "clone", "neg", "mul", "add", "sub",
        "div", "detach", "add-dense-first", "sub-dense-first", "mul-dense-first"])
def test_function_forms_take_a_sparse_first_operand(call):
    e, t = both(I, np.float32(V), (3, 3))
    ge, gt = call(ember, e), call(torch, t)
    assert ge.is_sparse == gt.is_sparse
    if gt.is_sparse:
        same_repr(ge, gt)
    close(ge, gt)


# -- dense ops refuse a sparse tensor cleanly ---------------------------------------------


@pytest.mark.parametrize("call, name", [
    (lambda s: s.exp(), "exp"), (lambda s: ember.cos(s), "cos"),
    (lambda s: ember.maximum(ember.ones(3, 3), s), "maximum"), (lambda s: s.max(), "max"),
    (lambda s: s.view(9), None), (lambda s: s[0:1], None), (lambda s: s.log(), "log"),
    (lambda s: ember.cumsum(s, 0), None), (lambda s: s.sigmoid(), "sigmoid"),
    (lambda s: ember.nn.functional.silu(s), None),
])
def test_a_dense_op_on_a_sparse_tensor_is_a_clear_not_implemented_error(call, name):
    e, _ = both(I, np.float32(V), (3, 3))
    with pytest.raises(NotImplementedError) as err:
        call(e)
    text = str(err.value)  # PyTorch's words; ember's hint in a note
    assert text.startswith("Could not run 'aten::") and \
        "with arguments from the 'SparseCPU' backend" in text
    assert "to_dense()" in err.value.__notes__[-1]
    if name is not None:
        assert f"'aten::{name}'" in text


def test_numpy_of_a_sparse_tensor_raises_pytorchs_type_error():
    e, t = both(I, np.float32(V), (3, 3))
    with pytest.raises(TypeError) as want:
        t.numpy()
    with pytest.raises(TypeError) as got:
        e.numpy()
    assert str(got.value) == str(want.value)


# -- checkpoints and copies -------------------------------------------------------------


def test_save_load_pickle_and_deepcopy_round_trip(tmp_path):
    e, _ = both(I, np.float32(V), (3, 3))
    c = e.coalesce()
    path = tmp_path / "adj.pt"
    ember.save({"adj": e, "c": c}, path)
    back = ember.load(path)
    for got, want in ((back["adj"], e), (back["c"], c)):
        assert got.is_sparse and got.is_coalesced() == want.is_coalesced()
        assert repr(got) == repr(want)
    buf = io.BytesIO()
    ember.save([c], buf)
    buf.seek(0)
    assert repr(ember.load(buf)[0]) == repr(c)
    for got in (pickle.loads(pickle.dumps(c)), copy.deepcopy(c)):
        assert repr(got) == repr(c) and got.is_coalesced()


# -- Hypothesis: random sizes, zero nnz, duplicate indices --------------------------------


@st.composite
def _sparse_case(draw):
    rows, cols = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    nnz = draw(st.integers(0, 8))
    r = draw(st.lists(st.integers(0, rows - 1), min_size=nnz, max_size=nnz))
    c = draw(st.lists(st.integers(0, cols - 1), min_size=nnz, max_size=nnz))
    v = draw(st.lists(st.floats(-4, 4, width=32), min_size=nnz, max_size=nnz))
    k = draw(st.integers(1, 3))
    return (np.array([r, c], dtype=np.int64).reshape(2, nnz), np.float32(v), (rows, cols), k)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(_sparse_case())
def test_random_sparse_tensors_agree_with_pytorch(case):
    indices, values, size, k = case
    e, t = both(indices, values, size)
    same_repr(e, t)
    ec, tc = e.coalesce(), t.coalesce()
    assert ec.indices().tolist() == tc.indices().tolist()
    np.testing.assert_allclose(ec.values().numpy(), tc.values().numpy(), rtol=1e-6, atol=1e-6)
    close(e.to_dense(), t.to_dense())
    d = np.arange(size[1] * k, dtype=np.float32).reshape(size[1], k) / 7
    d_e, d_t = ember.tensor(d, requires_grad=True), torch.tensor(d, requires_grad=True)
    out_e, out_t = ember.sparse.mm(e, d_e), torch.sparse.mm(t, d_t)
    close(out_e, out_t)
    out_e.sum().backward()
    out_t.sum().backward()
    close(d_e.grad, d_t.grad)
    close(ember.sparse.sum(e, 1), torch.sparse.sum(t, 1))
    same_repr(e.to_dense().to_sparse(), t.to_dense().to_sparse())


def test_empty_by_size_and_a_sparse_buffer_in_a_module():
    same_repr(ember.sparse_coo_tensor((2, 3)), torch.sparse_coo_tensor((2, 3)))

    def module(m, adj):
        net = m.nn.Linear(3, 2)
        net.register_buffer("adj", adj)
        return net

    e, t = both(I, np.float32(V), (3, 3))
    net_e, net_t = module(ember, e).double(), module(torch, t).double()
    same_repr(net_e.adj, net_t.adj)
    target_e, target_t = module(ember, e * 0), module(torch, t * 0)
    target_e.load_state_dict(net_e.state_dict())
    target_t.load_state_dict(net_t.state_dict())
    same_repr(target_e.adj, target_t.adj)
    with pytest.raises(NotImplementedError, match="aten::copy_"):
        e.copy_(ember.ones(3, 3))


def _special_spmm(m):
    """pyGAT's SpecialSpmmFunction (SpGAT): a custom autograd Function that builds a sparse
    tensor in forward, saves it for backward, and reads its `_indices()` there."""
    class SpecialSpmmFunction(m.autograd.Function):
        @staticmethod
        def forward(ctx, indices, values, shape, b):
            assert not indices.requires_grad
            a = m.sparse_coo_tensor(indices, values, shape)
            ctx.save_for_backward(a, b)
            ctx.N = shape[0]
            return m.matmul(a, b)

        @staticmethod
        def backward(ctx, grad_output):
            a, b = ctx.saved_tensors
            grad_values = grad_b = None
            if ctx.needs_input_grad[1]:
                grad_a_dense = grad_output.matmul(b.t())
                edge_idx = a._indices()[0, :] * ctx.N + a._indices()[1, :]
                grad_values = grad_a_dense.view(-1)[edge_idx]
            if ctx.needs_input_grad[3]:
                grad_b = a.t().matmul(grad_output)
            return None, grad_values, None, grad_b
    return SpecialSpmmFunction.apply


def test_a_custom_function_that_saves_a_sparse_tensor():
    adj = np.float32(np.random.RandomState(2).rand(6, 6) < 0.4)
    h = np.random.RandomState(3).randn(6, 3).astype(np.float32)
    grads = []
    for m in (ember, torch):
        edge = m.tensor(adj).nonzero().t()
        e = m.tensor(np.arange(edge.shape[1], dtype=np.float32) / 10, requires_grad=True)
        x = m.tensor(h, requires_grad=True)
        out = _special_spmm(m)(edge, e.exp(), m.Size([6, 6]), x)
        rowsum = _special_spmm(m)(edge, e.exp(), m.Size([6, 6]), m.ones(6, 1))
        (out / rowsum).pow(2).sum().backward()
        grads.append((out, e.grad, x.grad))
    for got, want in zip(*grads):
        close(got, want)


@pytest.mark.parametrize("dim,start,length", [(0, 0, 1), (1, 1, 1), (2, 0, 1), (3, 1, 1),
                                              (0, 0, 2)])
def test_narrow_copy_of_a_sparse_tensor_as_torch(dim, start, length):
    """narrow_copy of a COO tensor (two sparse, two dense dimensions): the entries inside
    the range of a sparse dimension, shifted; the values narrowed along a dense one."""
    results = []
    for L in (torch, ember):
        s = L.arange(16).reshape(2, 2, 2, 2).to_sparse(2)
        r = L.narrow_copy(s, dim, start, length) if dim % 2 else s.narrow_copy(dim, start,
                                                                                 length)
        results.append((tuple(r.shape), r._indices().tolist(), r._values().tolist(),
                        r.is_coalesced(), str(r.layout).split(".")[1]))
    assert results[0] == results[1]
