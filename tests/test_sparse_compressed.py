"""Sparse compressed tensors (CSR, CSC, BSR, BSC) against PyTorch: construction, the
parts, conversions between every layout (batch and dense dimensions too), printed forms,
products with dense matrices and their gradients, arithmetic, transposes, errors, and
files written by one library and read by the other."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ember  # noqa: E402

D = [[0.0, 2.0, 0.0, 0.0], [1.0, 0.0, 3.0, 0.0], [0.0, 0.0, 0.0, 0.0], [4.0, 0.0, 0.0, 5.0]]
# each layout and how to make a tensor of it from a dense one (code run by both libraries)
LAYOUTS = {"csr": "to_sparse_csr()", "csc": "to_sparse_csc()", "bsr": "to_sparse_bsr((2, 2))",
           "bsc": "to_sparse_bsc((2, 2))"}


@pytest.fixture(autouse=True)
def _quiet_torch():
    with warnings.catch_warnings():  # torch's "sparse CSR support is in beta" notice
        warnings.simplefilter("ignore", UserWarning)
        yield


def run(lib, code: str):
    """`code` evaluated with `lib` as `lib`, `D` a 4x4 matrix, `B` a 4x3 one, `B3`
    two 4x4 matrices of five entries each, `T` the tensor factory and `I3`, `I2` index
    tensors: its printed result (torch's names as ember's), or its error's type and
    message."""
    d = lib.tensor(D)
    scope = {"lib": lib, "D": d, "B": lib.arange(12.0).reshape(4, 3),
             "B3": lib.stack([d, d.t()]), "T": lib.tensor, "I3": lib.tensor([0, 1, 2]),
             "I2": lib.tensor([0, 1])}
    try:
        return repr(eval(code, scope)).replace("torch.", "ember.")
    except Exception as err:  # noqa: BLE001 - the error is the result compared
        return f"{type(err).__name__}: {err}"


def same(code: str) -> str:
    ours, theirs = run(ember, code), run(torch, code)
    assert ours == theirs, f"{code}\n-- ember:\n{ours}\n-- torch:\n{theirs}"
    return ours


@pytest.mark.parametrize("code", [
    # from dense: plain, blocked, batched, with dense dimensions, empty, integer, bool
    *(f"D.{make}" for make in LAYOUTS.values()),
    "D.to_sparse_bsr((1, 2))", "D.to_sparse_bsc((1, 2))", "D.to_sparse_bsr(2)",
    *(f"B3.{make}" for make in LAYOUTS.values()),
    "B3.to_sparse_csr(dense_dim=1)", "B3.to_sparse_csc(dense_dim=1)",
    "B3.to_sparse_bsr((2, 2), dense_dim=1)", "lib.zeros(0, 3).to_sparse_csc()",
    "lib.zeros(3, 3).to_sparse_bsr((1, 1))", "lib.tensor([[1, 0], [0, 2]]).to_sparse_csc()",
    "lib.tensor([[True, False], [False, True]]).to_sparse_bsr((1, 1))",
    "D.double().to_sparse_bsc((2, 2))",
    "lib.arange(24.).reshape(2, 3, 4).to_sparse_csr(dense_dim=1)",
    "D.clone().requires_grad_().to_sparse_csc()",
    # to_sparse(layout=...)
    "D.to_sparse(layout=lib.sparse_bsc, blocksize=(2, 2))", "D.to_sparse(layout=lib.strided)",
    "B3.to_sparse(layout=lib.sparse_csr, dense_dim=1)",
    "D.to_sparse(layout=lib.sparse_coo, dense_dim=1)",
    # from COO, to COO, between compressed layouts (batched too), to dense
    *(f"D.to_sparse().{make}" for make in LAYOUTS.values()), "B3.to_sparse(2).to_sparse_csr()",
    *(f"D.{make}.to_sparse()" for make in LAYOUTS.values()), "B3.to_sparse_csr().to_sparse()",
    "B3.to_sparse_csr(dense_dim=1).to_sparse()", "D.to_sparse_csc().to_sparse().is_coalesced()",
    *(f"D.{a}.{b}" for a in ("to_sparse_csr()", "to_sparse_csc()") for b in
      ("to_sparse_csr()", "to_sparse_csc()", "to_sparse_bsr((2, 2))", "to_sparse_bsc((1, 2))")),
    "D.to_sparse_bsr((2, 2)).to_sparse_bsc((2, 2))",
    "D.to_sparse_bsc((2, 1)).to_sparse_bsr((2, 1))",
    "B3.to_sparse_bsr((2, 2)).to_sparse_bsc((2, 2))", "B3.to_sparse_csc().to_sparse_csr()",
    "D.to_sparse_csr().to_sparse(layout=lib.sparse_csc)",
    *(f"B3.{make}.to_dense()" for make in LAYOUTS.values()),
    "B3.to_sparse_csr(dense_dim=1).to_dense()",
])
def test_conversions_and_printed_forms(code):
    same(code)


def test_constructors_infer_the_size_and_print_as_torch():
    for code in [
        "lib.sparse_csr_tensor(T([0, 2, 3]), T([0, 2, 1]), T([1., 2., 3.]), (2, 3))",
        "lib.sparse_csc_tensor([0, 1, 2], [0, 1], [1, 2])",
        "lib.sparse_bsr_tensor(I3, I2, lib.arange(12.).reshape(2, 2, 3))",
        "lib.sparse_bsc_tensor(I3, I2, lib.ones(2, 1, 2), (2, 4), dtype=lib.float64)",
        "lib.sparse_compressed_tensor(T([[0, 1, 2], [0, 2, 2]]), T([[0, 1], [0, 1]]), "
        "lib.ones(2, 2), layout=lib.sparse_csr)",
        "lib.sparse_csr_tensor(I3, I2, lib.ones(2, 2))",
        "lib.sparse_csr_tensor(I3.int(), I2.int(), lib.ones(2)).crow_indices().dtype",
        "lib.sparse_csr_tensor(T([0, 0, 0]), T([], dtype=lib.int64), T([]))",
        "lib.sparse_csr_tensor(I3, I2, lib.ones(2), (2, 2), requires_grad=True)",
        "lib.sparse_csr_tensor(I3, I2, lib.ones(2, requires_grad=True), (2, 2))",
        "lib.sparse_csr_tensor(I3, I2, lib.ones(2), (2, 2)).to_dense()",
        "lib.sparse_bsc_tensor(I3, I2, lib.arange(12.).reshape(2, 2, 3)).to_dense()",
    ]:
        same(code)


CSR3 = "lib.tensor([0, 2, 3]), lib.tensor([0, 2, 1]), lib.tensor([1., 2., 3.])"


@pytest.mark.parametrize("args,message", [
    (CSR3 + ", (2, 3), layout=None", "sparse_compressed_tensor expected sparse compressed "
                                     "tensor layout but got none"),
    (CSR3 + ", (2, 3), layout=lib.sparse_coo", "but got Sparse"),
    ("lib.tensor([0, 2, 4]), lib.tensor([0, 2, 1]), lib.ones(3), (2, 3), layout=lib.sparse_csr",
     r"`crow_indices\[\.\.\., -1\] == nnz` is not satisfied."),
    ("lib.tensor([0, 1, 3]), lib.tensor([0, 1, 0]), lib.ones(3), (2, 2), layout=lib.sparse_csc",
     "`row_indices\\[\\.\\.\\., ccol_indices\\[\\.\\.\\., i - 1\\]:ccol_indices\\[\\.\\.\\., "
     "i\\]\\] for all i = 1, \\.\\.\\., ncols are sorted and distinct"),
    ("lib.tensor([0, 1, 2]), lib.tensor([0, 5]), lib.ones(2), (2, 2), layout=lib.sparse_csc",
     "`0 <= row_indices < nrows` is not satisfied."),
    ("lib.tensor([0, 1, 2]), lib.tensor([0, 3]), lib.ones(2, 1, 2), (2, 4), layout=lib.sparse_bsr",
     "`0 <= col_indices < ncols` is not satisfied."),
    ("lib.tensor([0, 1, 2]), lib.tensor([0, 1]), lib.ones(2, 1, 2), (2, 5), layout=lib.sparse_bsr",
     r"tensor shape\[1\] \(=5\) must be divisible with blocksize\[1\] \(=2\) as defined by "
     "values shape"),
    ("lib.tensor([0, 1, 2]), lib.tensor([0, 1]), lib.ones(2, 1, 2), (3, 4), layout=lib.sparse_bsr",
     r"crow_indices.shape\[-1\] must be equal to the number of row blocks \+ 1 \(=4\), but got 3"),
    ("lib.tensor([0, 1, 2]), lib.tensor([0, 1]), lib.ones(2), (2, 4), layout=lib.sparse_bsr",
     r"values must have dimensionality > sum of batch and block dimensionalities \(=0 \+ 2\) "
     "but got 1"),
    ("lib.tensor([0, 1, 2]), lib.tensor([0, 1]), lib.ones(2), (2,), layout=lib.sparse_csr",
     r"tensor dimensionality must be sum of batch, base, and dense dimensionalities "
     r"\(=0 \+ 2 \+ 0\) but got 1"),
    ("lib.tensor([0., 1, 2]), lib.tensor([0, 1]), lib.ones(2), (2, 2), layout=lib.sparse_csr",
     "crow_indices and col_indices must have the same dtype, bot got Float and Long, "
     "respectively"),
    ("lib.tensor([0, 1, 2]), lib.tensor([0, 1, 1]), lib.ones(2), (2, 2), layout=lib.sparse_csr",
     r"col_indices.shape\[-1\] must be equal to nnz \(=2\) as defined by values.shape\[0\], "
     "but got 3"),
    ("lib.tensor([[0, 1, 2]]), lib.tensor([0, 1]), lib.ones(2), (2, 2), layout=lib.sparse_csr",
     "crow_indices and col_indices dimensionalities must be equal but got 2 and 1, "
     "respectively"),
    ("lib.tensor([[0, 1, 2]]), lib.tensor([[0, 1]]), lib.ones(1, 2), (2, 2, 2), "
     "layout=lib.sparse_csr", r"all batch dimensions of crow_indices \(=\[1\]\), col_indices "
     r"\(=\[1\]\), and values \(=\[1\]\) must be equal to tensor batch dimensions \(=\[2\]\)"),
])
def test_invariants_are_checked_with_torchs_messages(args, message):
    for lib in (ember, torch):
        with pytest.raises(RuntimeError, match=message):
            eval(f"lib.sparse_compressed_tensor({args}, check_invariants=True)", {"lib": lib})


@pytest.mark.parametrize("code", [
    # products with a dense matrix or vector, in both orders, and addmm
    *(f"D.{make} @ B" for make in LAYOUTS.values()),
    *(f"D @ D.{make}" for make in LAYOUTS.values()),
    "D.to_sparse_csr() @ B[:, 0]", "D.to_sparse_bsc((2, 2)) @ B[:, 0]",
    "lib.mm(D.to_sparse_csc(), B)", "lib.matmul(D.to_sparse_bsr((2, 2)), B)",
    "lib.mm(D, D.to_sparse_csr())", "lib.sparse.mm(D.to_sparse_csr(), B)",
    "lib.sparse.addmm(lib.ones(4, 3), D.to_sparse_csc(), B)",
    "lib.addmm(lib.ones(4, 3), D.to_sparse_csr(), B, beta=0.5, alpha=2)",
    "D.to_sparse_csr() @ lib.ones(3, 2)", "D.to_sparse_csr() @ lib.ones(4, 2, dtype=lib.float64)",
    "D.to_sparse_csr() @ lib.ones(2, 4, 2)", "B3.to_sparse_csr(dense_dim=1) @ lib.ones(4, 2)",
    # arithmetic, transposes, casts, copies
    "D.to_sparse_csr() * 2", "2 * D.to_sparse_bsc((2, 2))", "lib.mul(D.to_sparse_csc(), 2)",
    "D.to_sparse_csr() * lib.tensor(3.)", "D.to_sparse_csr() * D",
    "D.to_sparse_csr() / 2", "D.to_sparse_csr() - D.to_sparse_csr()",
    "D.to_sparse_csr() + D.to_sparse_csr()",
    "D.to_sparse_csr() + D.t().to_sparse_csr()",
    "lib.add(D.to_sparse_csr(), D.to_sparse_csr(), alpha=2)",
    "D.to_sparse_csr() + D.to_sparse_csc()", "D.to_sparse_csr() + lib.ones(2, 2).to_sparse_csr()",
    "D.to_sparse_csr() + D.double().to_sparse_csr()", "D.to_sparse_csr() + D",
    "D + D.to_sparse_csc()", "-D.to_sparse_csr()", "lib.neg(D.to_sparse_bsr((2, 2)))",
    *(f"D.{make}.t()" for make in LAYOUTS.values()), "D.to_sparse_bsr((1, 2)).t()",
    "D.to_sparse_csr().transpose(0, 1)", "D.to_sparse_csr().transpose(0, 0)",
    "B3.to_sparse_csr().t()", "B3.to_sparse_csr().transpose(1, 2)",
    "B3.to_sparse_csr().transpose(0, 1)", "B3.to_sparse_csr(dense_dim=1).transpose(1, 2)",
    "lib.t(D.to_sparse_csr())", "D.to_sparse_csr().to(lib.float64)",
    "D.to_sparse_bsc((2, 2)).double()", "D.to_sparse_csc().to(lib.int64)",
    "D.to_sparse_csr().clone()", "D.to_sparse_csr().requires_grad_().detach()",
    "D.to_sparse_csr().requires_grad_().clone()", "D.to_sparse_csr().requires_grad_() * 2",
    "D.to_sparse_csr().requires_grad_().to(lib.float64)", "-D.to_sparse_csr().requires_grad_()",
    "D.to_sparse_csr().requires_grad_().t()", "D.to_sparse_csr().requires_grad_()",
    # reductions
    "D.to_sparse_csr().sum()", "D.long().to_sparse_csr().sum()", "lib.sum(D.to_sparse_csc())",
    "D.to_sparse_csr().sum(0)", "D.to_sparse_csr().sum(1, keepdim=True)",
    "D.to_sparse_csc().sum(0)", "lib.sparse.sum(D.to_sparse_csr())",
])
def test_ops_match_torch(code):
    same(code)


@pytest.mark.parametrize("code", [
    # the parts, and the attributes
    "D.to_sparse_csr().ccol_indices()", "D.to_sparse_csc().crow_indices()",
    "D.to_sparse_csc().col_indices()", "D.to_sparse_bsr((2, 2)).row_indices()",
    "D.to_sparse_bsc((2, 2)).row_indices()", "D.to_sparse_bsc((2, 2)).values()",
    "D.to_sparse().crow_indices()", "D.crow_indices()", "D.ccol_indices()", "D.row_indices()",
    "D.to_sparse().col_indices()", "(D.to_sparse_csc().is_sparse, D.to_sparse_csc().is_sparse_csr, "
    "D.to_sparse_csr().is_sparse_csr, D.to_sparse_csc().layout, D.to_sparse_bsc(2)._nnz())",
    "(B3.to_sparse_bsr((2, 2), dense_dim=1).sparse_dim(), B3.to_sparse_bsr((2, 2), "
    "dense_dim=1).dense_dim(), B3.to_sparse_bsr((2, 2)).shape, len(D.to_sparse_csr()))",
    "D.to_sparse_csr().type()", "D.to_sparse_csr().is_contiguous()",
    "D.to_sparse_bsc((2, 2)).stride()", "D.to_sparse_csr().numpy()",
    "D.to_sparse_bsr((2, 2)).numpy()",
    # conversions PyTorch refuses
    "lib.stack([D, D * 0]).to_sparse_csr()", "D.to_sparse_csr(dense_dim=1)",
    "D.to_sparse_bsr((3, 2))", "D.to_sparse_bsr((2,))", "D.to_sparse(layout=lib.sparse_bsr)",
    "D.to_sparse(layout=lib.sparse_csr, blocksize=(2, 2))", "D.to_sparse(1, layout=lib.sparse_csr)",
    "B3.to_sparse().to_sparse_csr()", "D.to_sparse_csr().to_sparse(1)",
    "D.to_sparse_csr().to_sparse_csr(dense_dim=1)", "D.to_sparse_csr().to_dense(lib.float64)",
    "B3.to_sparse_csr().to_sparse_bsr((2, 2))", "D.to_sparse_bsr((2, 2)).to_sparse_csr()",
    "D.to_sparse_bsr((2, 2)).to_sparse_bsr((1, 2))",
    "D.to_sparse_bsc((2, 2)).to_sparse_bsr((1, 2))", "lib.zeros(0, 3, 3).to_sparse_csr()",
    "lib.ones(3).to_sparse_csr()", "lib.ones(3).to_sparse_csc()",
])
def test_parts_and_refusals_match_torch(code):
    same(code)


def _grad(lib, make: str, product: str):
    """The gradients of `product` (`s @ b`, `b @ s`, `sparse.mm` ...) w.r.t. the dense
    operand and the sparse one's values."""
    s = eval(f"D.{make}", {"D": lib.tensor(D)}).requires_grad_()
    b = lib.arange(12.0).reshape(4, 3).requires_grad_()
    y = eval(product, {"lib": lib, "s": s, "b": b})
    (y * y).sum().backward()
    return y.grad_fn.name(), b.grad.numpy(), s.grad.to_dense().numpy()


@pytest.mark.parametrize("layout", ["csr", "csc", "bsr", "bsc"])
def test_gradients_reach_the_dense_operand_and_the_values(layout):
    """Against PyTorch where its CPU backward has a kernel (CSR everywhere, the dense
    operand of CSC); against the dense product elsewhere."""
    make = LAYOUTS[layout]
    products = ["lib.sparse.mm(s, b)", "s @ b", "(b.t() @ s).t()"]
    for product in products:
        if (layout == "bsc") != ("@ s" in product) and layout in ("bsr", "bsc"):
            continue  # (PyTorch has neither product on the CPU; both refuse it, above)
        name, g_dense, g_values = _grad(ember, make, product)
        # the dense product's gradients, masked to the specified entries (blocks)
        dense = torch.tensor(D, requires_grad=True)
        b = torch.arange(12.0).reshape(4, 3).requires_grad_()
        y = eval(product.replace("lib.sparse.mm", "torch.mm"), {"torch": torch, "s": dense, "b": b})
        (y * y).sum().backward()
        mask = eval(f"D.{make}", {"D": torch.tensor(D)}).to_dense() != 0
        if layout in ("bsr", "bsc"):  # every element of a specified block
            mask = torch.ones(4, 4, dtype=torch.bool)
        np.testing.assert_allclose(g_dense, b.grad.numpy(), rtol=1e-6)
        np.testing.assert_allclose(g_values, (dense.grad * mask).numpy(), rtol=1e-6)
        if layout == "csr" or (layout == "csc" and "sparse.mm" not in product):
            t_name, t_dense, _ = _grad_torch_dense_only(make, product)
            assert name == t_name
            np.testing.assert_allclose(g_dense, t_dense, rtol=1e-6)


def _grad_torch_dense_only(make: str, product: str):
    s = eval(f"D.{make}", {"D": torch.tensor(D)})
    b = torch.arange(12.0).reshape(4, 3).requires_grad_()
    y = eval(product, {"lib": torch, "s": s, "b": b})
    (y * y).sum().backward()
    return y.grad_fn.name(), b.grad.numpy(), None


def test_sums_of_two_tensors_of_one_layout():
    """PyTorch's CPU adds two CSR tensors (their union); ember adds two of any one
    compressed layout the same way, where PyTorch's CSC, BSR, BSC kernels fail."""
    other = [[1.0, 0, 0, 0], [0, 0, 7.0, 0], [0, 0, 0, 0], [0, 6.0, 0, -5.0]]
    same(f"D.to_sparse_csr() + lib.tensor({other!r}).to_sparse_csr()")
    for make in LAYOUTS.values():
        a = eval(f"D.{make}", {"D": ember.tensor(D)}).requires_grad_()
        b = eval(f"D.{make}", {"D": ember.tensor(other)})
        total = ember.add(a, b, alpha=2)
        assert total.layout is a.layout and total.grad_fn is not None
        np.testing.assert_array_equal(total.to_dense().detach().numpy(),
                                      np.array(D) + 2 * np.array(other))
        total.to_dense().sum().backward()
        np.testing.assert_array_equal(a.grad.values().numpy(), np.ones(a.values().shape))


def test_csr_gradients_of_values_match_torch():
    w = np.arange(16.0, dtype=np.float32).reshape(4, 4)
    res = []
    for lib in (ember, torch):
        s = lib.tensor(D).to_sparse_csr().requires_grad_()
        (lib.sparse.mm(s, lib.ones(4, 3)).sum() + (s.to_dense() * lib.tensor(w)).sum()).backward()
        x = lib.tensor(D, requires_grad=True)
        (x.to_sparse_csc().to_dense() * lib.tensor(w)).sum().backward()
        res.append((repr(s.grad).replace("torch.", "ember."), x.grad.numpy()))
    assert res[0][0] == res[1][0]
    np.testing.assert_array_equal(res[0][1], res[1][1])


@pytest.mark.parametrize("writer", ["ember", "torch"])
def test_files_of_every_layout_load_in_the_other_library(writer):
    def tensors(lib):
        d = lib.tensor(D)
        return {"csr": d.to_sparse_csr(), "csc": d.to_sparse_csc(), "bsr": d.to_sparse_bsr((2, 2)),
                "bsc": lib.stack([d, d.t()]).to_sparse_bsc((2, 1)), "csr_hybrid":
                lib.stack([d, d.t()]).to_sparse_csr(dense_dim=1),
                "int32": lib.sparse_csr_tensor(lib.tensor([0, 1, 2], dtype=lib.int32),
                                               lib.tensor([0, 1], dtype=lib.int32), lib.ones(2))}
    save, load = (ember.save, torch.load) if writer == "ember" else (torch.save, ember.load)
    source, reader = (ember, torch) if writer == "ember" else (torch, ember)
    buf = io.BytesIO()
    save(tensors(source), buf)
    back = load(io.BytesIO(buf.getvalue()))
    for key, expected in tensors(reader).items():
        assert back[key].layout == expected.layout
        assert repr(back[key]) == repr(expected), key
        assert back[key].crow_indices().dtype == expected.crow_indices().dtype \
            if key == "int32" else True
