"""Linear algebra against PyTorch: the addmm family and products, factorizations and
`ember.linalg` (values, result dtypes, zero-size and non-finite inputs, errors by type and
message). Gradients are checked against PyTorch in the conformance suite (DIFF_OPS)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
A = RNG.standard_normal((2, 4, 4)) + 3 * np.eye(4)
B = RNG.standard_normal((2, 4, 3))
SPD = A @ A.swapaxes(-1, -2)


def _check(fn, *arrays, atol=1e-6):
    """`fn(lib, *tensors)` in ember and torch: same shape, dtype and values."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = fn(ember, *[ember.tensor(a) for a in arrays])
        want = fn(torch, *[torch.tensor(a) for a in arrays])
    got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert tuple(g.shape) == tuple(w.shape)
        assert str(g.dtype).split(".")[-1] == str(w.dtype).split(".")[-1]
        np.testing.assert_allclose(g.numpy(), w.numpy(), atol=atol, rtol=1e-6)


VALUES = {
    "addbmm": (lambda L, c, a, b: L.addbmm(c, a, b, beta=0.5, alpha=2), B[0], A, B),
    "baddbmm_beta0_ignores_nan": (lambda L, c, a, b: L.baddbmm(c * np.nan, a, b, beta=0), B, A, B),
    "addmv": (lambda L, c, a, b: L.addmv(c, a, b, alpha=3), B[0, 0], B[0].T, A[0, 0]),
    "addr_int": (lambda L: L.addr(L.tensor([[1, 2], [3, 4]]), L.tensor([1, 2]),
                                  L.tensor([3, 4]), beta=2),),
    "inner_0d": (lambda L, a: L.inner(a, L.tensor(2.0)), A),
    "inner": (lambda L, a, b: L.inner(a, b.mT), A, B),
    "vdot": (lambda L, a: L.vdot(a[0, 0], a[0, 1]), A),
    "kron": (lambda L, a, b: L.kron(a[0], b), A, B),
    "kron_int": (lambda L: L.kron(L.tensor([[1, 2]]), L.tensor([3, 4, 5])),),
    "tensordot": (lambda L, a, b: L.tensordot(a, b, ([1], [1])), A, B),
    "tensordot_0": (lambda L, a, b: L.tensordot(a, b, 0), A[0, 0], B[0, 0]),
    "cross": (lambda L, b: L.cross(b, b.flip(-1), dim=2), B),
    "linalg_cross_broadcast": (lambda L, b: L.linalg.cross(b, b[:1, :1]), B),
    "chain_matmul": (lambda L, a, b: L.chain_matmul(a[0], a[1], b[0]), A, B),
    "multi_dot_vectors": (lambda L, a, b: L.linalg.multi_dot([a[0, 0], a[1], b[0, :, 0]]), A, B),
    "det": (lambda L, a: L.det(a), A),
    "det_zero_size": (lambda L: L.linalg.det(L.zeros(0, 3, 3)),),
    "det_0x0": (lambda L: L.det(L.zeros(2, 0, 0)),),
    "det_float32": (lambda L, a: L.det(a.float()), A),
    "slogdet_singular": (lambda L: tuple(L.linalg.slogdet(L.tensor([[1.0, 2.0], [2.0, 4.0]]))),),
    "logdet_negative_is_nan": (lambda L: L.logdet(L.tensor([[0.0, 1.0], [1.0, 0.0]])),),
    "inverse": (lambda L, a: a.inverse(), A),
    "solve_vector": (lambda L, a, b: L.linalg.solve(a, b[..., 0]), A, B),
    "solve_left_false": (lambda L, a, b: L.linalg.solve(a, b.mT, left=False), A, B),
    "solve_broadcast": (lambda L, a, b: L.linalg.solve(a[0], b), A, B),
    "solve_triangular": (lambda L, a, b: L.linalg.solve_triangular(
        a, b, upper=True, unitriangular=True), A, B),
    "triangular_solve": (lambda L, a, b: tuple(L.triangular_solve(b, a, transpose=True)), A, B),
    "cholesky_upper": (lambda L, s: L.linalg.cholesky(s, upper=True), SPD),
    "cholesky_solve": (lambda L, s, b: L.cholesky_solve(b, L.linalg.cholesky(s)), SPD, B),
    "cholesky_inverse": (lambda L, s: L.cholesky_inverse(L.linalg.cholesky(s[0])), SPD),
    "qr_r": (lambda L, b: L.linalg.qr(b, mode="r").R.abs(), B),
    "qr_complete_R": (lambda L, b: L.qr(b, some=False).R.abs(), B),
    "svd_compute_uv_false": (lambda L, b: tuple(L.svd(b, compute_uv=False)), B),
    "svdvals": (lambda L, b: L.linalg.svdvals(b), B),
    "eigvalsh_upper": (lambda L, a: L.linalg.eigvalsh(a, UPLO="U"), A),
    "pinv_hermitian": (lambda L, s: L.linalg.pinv(s, hermitian=True), SPD),
    "pinv_rank_deficient": (lambda L, b: L.linalg.pinv(b[..., :1] @ b[..., :1, :]), B),
    "pinverse": (lambda L, b: L.pinverse(b), B),
    "matrix_rank": (lambda L, b: L.linalg.matrix_rank(b[..., :2] @ b[..., :2, :]), B),
    "lstsq": (lambda L, b, a: (L.linalg.lstsq(b, a).solution, L.linalg.lstsq(b, a).rank), B, A),
    "lu_factor": (lambda L, a: tuple(L.linalg.lu_factor(a)), A),
    "lu": (lambda L, b: tuple(L.linalg.lu(b)), B),
    "lu_wide": (lambda L, b: tuple(L.linalg.lu(b.mT)), B),
    "lu_solve": (lambda L, a, b: L.lu_solve(b, *L.linalg.lu_factor(a)), A, B),
    "lu_solve_adjoint": (lambda L, a, b: L.linalg.lu_solve(*L.linalg.lu_factor(a), b,
                                                           adjoint=True), A, B),
    "lu_unpack": (lambda L, a: tuple(L.lu_unpack(*L.linalg.lu_factor(a))), A),
    "matrix_power": (lambda L, a: (L.matrix_power(a, 5), L.matrix_power(a, -2),
                                   L.matrix_power(a, 0)), A),
    "matrix_power_int": (lambda L: L.matrix_power(L.tensor([[1, 1], [1, 0]]), 10),),
    "matrix_exp": (lambda L, a: L.matrix_exp(a), A * 0.5),
    "matrix_exp_large": (lambda L, a: L.linalg.matrix_exp(a * 3), A),
    "vector_norm": (lambda L, a: (L.linalg.vector_norm(a), L.linalg.vector_norm(a, 0),
                                  L.linalg.vector_norm(a, float("inf"), dim=(0, 2)),
                                  L.linalg.vector_norm(a, 3, dim=1, keepdim=True)), A),
    "matrix_norm": (lambda L, b: tuple(L.linalg.matrix_norm(b, o) for o in
                                       ("fro", "nuc", 2, -2, 1, -1, float("inf"))), B),
    "norm": (lambda L, a: (L.linalg.norm(a), L.linalg.norm(a[0], 1), L.linalg.norm(a[0, 0], 3),
                           L.linalg.norm(a, dim=(0, 2))), A),
    "frobenius_nuclear": (lambda L, a: (L.frobenius_norm(a, (0, 1)), L.nuclear_norm(a[0]),
                                        L.nuclear_norm(a, (1, 2), True)), A),
    "cond": (lambda L, a: (L.linalg.cond(a), L.linalg.cond(a, -2), L.linalg.cond(a, "nuc")), A),
    "tensorinv": (lambda L, a: L.linalg.tensorinv(a[0].reshape(2, 2, 2, 2), ind=2), A),
    "tensorsolve": (lambda L, a, b: L.linalg.tensorsolve(a[0].reshape(2, 2, 2, 2),
                                                         b[0, :2, :2]), A, B),
    "diagonal": (lambda L, b: L.linalg.diagonal(b, offset=-1, dim1=0, dim2=1), B),
    "vander": (lambda L, b: L.linalg.vander(b[0, 0], N=5), B),
    "vecdot": (lambda L, a, b: L.linalg.vecdot(a, b[..., :1].mT), A, B),
    "cov_weights": (lambda L, a: L.cov(a[0], correction=2, fweights=L.tensor([1, 2, 3, 1]),
                                       aweights=L.tensor([0.5, 1.0, 2.0, 0.1])), A),
    "cov_1d_and_int": (lambda L: (L.cov(L.tensor([1.0, 2.0, 4.0])), L.cov(L.tensor([[1, 2, 4]]))),),
    "corrcoef": (lambda L, a: (L.corrcoef(a[0]), L.corrcoef(a[0, 0])), A),
    "dist": (lambda L, a: (L.dist(a, a[0]), L.dist(a, a[1], 0), L.dist(a, a[1], float("inf"))), A),
    "cdist": (lambda L, a, b: (L.cdist(a, b.mT), L.cdist(a, b.mT, p=1), L.cdist(a, b.mT, 0),
                               L.cdist(a, b.mT, float("inf"))), A, B),
    "cdist_zero_size": (lambda L: L.cdist(L.zeros(2, 0, 3), L.zeros(2, 4, 3)),),
    "nan_propagates": (lambda L, a: (L.linalg.inv(a * np.nan), L.det(a * np.nan)), A),
    "zero_size": (lambda L: (L.linalg.inv(L.zeros(0, 2, 2)), L.linalg.cholesky(L.zeros(0, 0)),
                             *L.linalg.lu_factor(L.zeros(0, 0)), *L.linalg.qr(L.zeros(0, 3)),
                             *L.linalg.svd(L.zeros(2, 0, 3), full_matrices=False),
                             L.linalg.eigvalsh(L.zeros(0, 0)), L.linalg.pinv(L.zeros(0, 3)),
                             L.matrix_exp(L.zeros(0, 0)), L.linalg.vector_norm(L.zeros(0)),
                             L.cov(L.zeros(2, 0)), L.linalg.matrix_norm(L.zeros(2, 0, 3), 1)),),
    "zero_d": (lambda L: (L.inner(L.tensor(2.0), L.tensor(3.0)), L.kron(L.tensor(2.0),
                          L.tensor([1.0, 2.0])), L.linalg.vector_norm(L.tensor(-3.0)),
                          L.cov(L.tensor(2.0)), L.dist(L.tensor(1.0), L.tensor(3.0))),),
    "integers": (lambda L, i: (L.inner(i, i), L.kron(i, i), L.tensordot(i, i),
                               L.linalg.cross(i[0, :3], i[1, :3]),
                               L.addmv(i[0, :2], i[:2, :2], i[0, :2], alpha=2),
                               L.matrix_power(i[:2, :2], 10), L.matrix_power(i[:2, :2], 0),
                               L.linalg.multi_dot([i, i.mT, i]), L.linalg.vander(i[0]),
                               L.cov(i), L.corrcoef(i)), np.arange(12).reshape(3, 4)),
    # (PyTorch truncates a float alpha/beta to the integer dtype, except in addr)
    "integer_scalars_truncate": (lambda L, i: (L.addmm(i, i, i, beta=0.5),
                                               L.addbmm(i, i[None], i[None], alpha=0.5)),
                                 np.array([[1, 2], [3, 4]])),
    "infinities": (lambda L: (L.linalg.vector_norm(L.tensor([1.0, float("inf")]), 0.5),
                              L.linalg.vector_norm(L.tensor([1.0, float("nan")]), 1),
                              L.cdist(L.ones(2, 3), L.zeros(2, 3), float("inf"))),),
    "cond_singular_is_inf": (lambda L: L.linalg.cond(L.zeros(2, 2), 1),),
    "lstsq_gelsd_residuals": (lambda L: tuple(L.linalg.lstsq(
        L.tensor([[1.0, 0], [0, 1], [1, 1]]), L.tensor([[1.0], [2], [4]]), driver="gelsd")),),
    "nuclear_norm_batch": (lambda L, a: L.nuclear_norm(a), A),
    "geqrf": (lambda L, b: tuple(L.geqrf(b)), B),
    "householder_product": (lambda L, b: (lambda g: (L.linalg.householder_product(*g),
                                                     L.orgqr(*g)))(L.geqrf(b)), B),
    "ormqr": (lambda L, b, a: (lambda g: tuple(L.ormqr(*g, c, left=left, transpose=t)
                                               for c, left in ((a, True), (a.mT, False))
                                               for t in (False, True)))(L.geqrf(b)), B, A),
}


@pytest.mark.parametrize("name", list(VALUES))
def test_values_match_torch(name):
    fn, *arrays = VALUES[name]
    _check(fn, *arrays)


def test_in_place_variants():
    for name, args in (("addmm_", (A[0], A[1])), ("addmv_", (A[0], A[1, 0])),
                       ("addr_", (A[0, 0], A[1, 0])), ("baddbmm_", (A, A)),
                       ("addbmm_", (A, A))):
        base = A[0, 0] if name == "addmv_" else A if name == "baddbmm_" else A[0]
        x, tx = ember.tensor(base), torch.tensor(base)
        getattr(x, name)(*map(ember.tensor, args), beta=0.5, alpha=2)
        getattr(tx, name)(*map(torch.tensor, args), beta=0.5, alpha=2)
        np.testing.assert_allclose(x.numpy(), tx.numpy(), atol=1e-12, err_msg=name)


def test_namespace_is_made_of_the_declared_ops():
    from ember.core.opdef import OPS
    assert ember.linalg.inv is OPS["linalg_inv"].public
    assert ember.linalg.det is ember.det and ember.linalg.matrix_exp is ember.matrix_exp
    assert issubclass(ember.linalg.LinAlgError, RuntimeError)
    assert ember.linalg.LinAlgError.__name__ == torch.linalg.LinAlgError.__name__
    missing = [n for n in dir(torch.linalg) if not n.startswith("_") and
               not hasattr(ember.linalg, n)]
    assert missing == ["common_notes"], missing  # (a dict of docstring fragments)


def test_linalg_error_is_named_as_torchs():
    """torch.linalg.LinAlgError is torch._C._LinAlgError, a RuntimeError: programs print
    and compare its name."""
    import pickle

    for L in (torch, ember):
        with pytest.raises(L.linalg.LinAlgError) as raised:
            L.linalg.inv(L.zeros(2, 2))
        kind = type(raised.value)
        assert (kind.__name__, kind.__qualname__) == ("_LinAlgError", "_LinAlgError")
        assert isinstance(raised.value, RuntimeError) and kind is L._C._LinAlgError
        assert kind.__module__ == f"{L.__name__}._C"
        assert type(pickle.loads(pickle.dumps(raised.value))) is kind


def test_named_results_and_grad_fn():
    r = ember.linalg.svd(ember.tensor(B[0]), full_matrices=False)
    assert r._fields == ("U", "S", "Vh")
    assert ember.linalg.eigh(ember.tensor(SPD[0]))._fields == ("eigenvalues", "eigenvectors")
    assert ember.slogdet(ember.tensor(A[0]))._fields == ("sign", "logabsdet")
    for name in ("slogdet", "linalg.slogdet", "linalg.eigh"):  # the printed type names
        got, want = (eval(f"L.{name}(L.eye(2))", {"L": lib}) for lib in (ember, torch))
        assert type(got).__name__ == type(want).__name__
        assert repr(got).replace("ember.", "torch.") == repr(want)
    x = ember.tensor(A[0], requires_grad=True)
    assert type(ember.det(x).grad_fn).__name__ == "LinalgDetBackward0" or \
        ember.det(x).grad_fn.name() == "LinalgDetBackward0"


def test_solve_and_cholesky_show_torchs_node_names():
    """A Kalman filter's or a GP's printed factors and solutions say
    grad_fn=<LinalgCholeskyExBackward0> / <LinalgSolveExBackward0>, whatever the form."""
    names = []
    for lib in (torch, ember):
        a = lib.tensor(SPD[0], requires_grad=True)
        b = lib.tensor(B[0], requires_grad=True)
        names.append((lib.linalg.cholesky(a).grad_fn.name(),
                      lib.linalg.cholesky(a, upper=True).grad_fn.name(),
                      lib.linalg.solve(a, b).grad_fn.name(),
                      lib.linalg.solve(a, b[:, 0]).grad_fn.name(),
                      lib.linalg.solve(a, b.mT, left=False).grad_fn.name()))
    assert names[1] == names[0]


@pytest.mark.parametrize("values, kwargs", [
    ([1, 2, 3], {}), ([1.5, -2.0], {"N": 4, "increasing": True}), ([True, False], {}),
    ([], {}), ([2], {"N": 0}), ([3.0, 0.5, -1.25], {"N": 5}),
])
def test_vander_matches_torch(values, kwargs):
    """`torch.vander` (1-D, decreasing powers by default, int64-promoted), unlike
    `linalg.vander`."""
    dtype = {bool: "bool", int: "int64", float: "float32"}[type(values[0])] if values \
        else "int64"
    t = torch.vander(torch.tensor(values, dtype=getattr(torch, dtype)), **kwargs)
    e = ember.vander(ember.tensor(values, dtype=getattr(ember, dtype)), **kwargs)
    assert str(e.dtype)[6:] == str(t.dtype)[6:] and tuple(e.shape) == tuple(t.shape)
    np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_vander_errors_match_torch():
    for call in (lambda L: L.vander(L.ones(2, 2)), lambda L: L.vander(L.ones(2), N=-1)):
        with pytest.raises(RuntimeError) as theirs:
            call(torch)
        with pytest.raises(RuntimeError) as ours:
            call(ember)
        assert str(ours.value) == str(theirs.value)


def test_slogdet_result_types_are_torchs():
    """`torch.linalg.slogdet` and `torch.slogdet` return differently named pairs (their
    reprs print the name)."""
    a = np.array([[2.0, 1.0], [0.5, 3.0]])
    for name, ours, theirs in (("linalg_slogdet", ember.linalg.slogdet, torch.linalg.slogdet),
                               ("slogdet", ember.slogdet, torch.slogdet)):
        e, t = ours(ember.tensor(a)), theirs(torch.tensor(a))
        assert type(e).__name__ == type(t).__name__ == name
        assert repr(e).split("(")[0].split(".")[-1] == repr(t).split("(")[0].split(".")[-1]
        assert (e.sign.item(), e.logabsdet.item()) == pytest.approx(
            (t.sign.item(), t.logabsdet.item()))
        np.testing.assert_allclose([v.item() for v in e], [v.item() for v in t])


ERRORS = [
    (lambda L: L.det(L.ones(2, 3)), RuntimeError, "must be batches of square matrices"),
    (lambda L: L.linalg.inv(L.ones(3)), RuntimeError, "at least 2 dimensions"),
    (lambda L: L.linalg.inv(L.ones(2, 2, dtype=L.int64)), RuntimeError,
     "Expected a floating point"),
    (lambda L: L.linalg.inv(L.ones(2, 2, dtype=L.float16)), RuntimeError,
     "Low precision dtypes not supported"),
    (lambda L: L.linalg.solve(L.eye(3), L.ones(4, 2)), RuntimeError, "Incompatible shapes"),
    (lambda L: L.linalg.solve(L.zeros(2, 2), L.ones(2)), "LinAlgError",
     "singular"),
    (lambda L: L.linalg.cholesky(-L.eye(2)), "LinAlgError",
     "leading minor of order 1 is not positive-definite"),
    (lambda L: L.linalg.qr(L.ones(2, 2), mode="x"), RuntimeError, "unrecognized mode"),
    (lambda L: L.linalg.eigh(L.eye(2), UPLO="X"), RuntimeError, "UPLO"),
    (lambda L: L.linalg.vector_norm(L.ones(2, dtype=L.int64)), RuntimeError,
     "Expected a floating point"),
    (lambda L: L.linalg.matrix_norm(L.ones(3)), RuntimeError, "at least 2 dimensions"),
    (lambda L: L.linalg.matrix_norm(L.ones(2, 2), 3), RuntimeError, "not supported"),
    (lambda L: L.cdist(L.ones(2, 3), L.ones(2, 4)), RuntimeError, "same number of columns"),
    (lambda L: L.cdist(L.ones(2, 3, dtype=L.int64), L.ones(2, 3)), RuntimeError,
     "floating-point"),
    (lambda L: L.cdist(L.ones(2, 3), L.ones(2, 3), -1.0), RuntimeError, "non-negative"),
    (lambda L: L.addbmm(L.ones(2, 2), L.ones(2, 2), L.ones(2, 2, 2)), RuntimeError, "batch1"),
    (lambda L: L.baddbmm(L.ones(2, 2, 2), L.ones(2, 2, 2), L.ones(2, 2)), RuntimeError,
     "batch2"),
    (lambda L: L.addmv(L.ones(2), L.ones(2, 3), L.ones(4)), RuntimeError, "size mismatch"),
    (lambda L: L.inner(L.ones(2, 3), L.ones(2, 4)), RuntimeError,
     "last dimension must match"),
    (lambda L: L.vdot(L.ones(2, 2), L.ones(2)), RuntimeError, "1D tensors expected"),
    (lambda L: L.tensordot(L.ones(2, 3), L.ones(4, 2), 1), RuntimeError,
     "contracted dimensions need to match"),
    (lambda L: L.linalg.cross(L.ones(2, 2), L.ones(2, 2)), RuntimeError,
     "must have length 3"),
    (lambda L: L.linalg.multi_dot([L.ones(2, 2)]), RuntimeError, "at least 2 tensors"),
    (lambda L: L.matrix_power(L.ones(2, 3), 2), RuntimeError,
     "must be batches of square matrices"),
    (lambda L: L.cov(L.ones(2, 2, 2)), RuntimeError, "two or fewer dimensions"),
    (lambda L: L.linalg.tensorinv(L.ones(2, 3), ind=1), RuntimeError, "prod"),
    (lambda L: L.linalg.lu_factor(L.zeros(2, 2)), RuntimeError, "U\\[1,1\\] is zero"),
    (lambda L: L.linalg.cholesky(L.full((2, 2), float("nan"))), "LinAlgError",
     "leading minor of order 1"),
    (lambda L: L.linalg.svd(L.full((2, 2), float("nan"))), "LinAlgError",
     "failed to converge because the input matrix contained non-finite values"),
    (lambda L: L.addr(L.ones(2, 2, dtype=L.int64), L.ones(2, dtype=L.int64),
                      L.ones(2, dtype=L.int64), beta=0.5), RuntimeError,
     "argument beta must not be a floating point number"),
    (lambda L: L.linalg.cross(L.ones(3, dtype=L.int64), L.ones(3)), RuntimeError,
     "expected scalar type Long but found Float"),
    (lambda L: L.cdist(L.ones(2, 3), L.ones(2, 3, dtype=L.float64)), RuntimeError,
     "expected scalar type Float but found Double"),
    (lambda L: L.linalg.vecdot(L.ones(2, dtype=L.int64), L.ones(2, dtype=L.int64)),
     RuntimeError, "Expected a floating point"),
    (lambda L: L.linalg.vander(L.ones(1)), RuntimeError, "N must be greater than 1"),
    (lambda L: L.addmm(L.ones(2, 2), L.ones(2), L.ones(2, 2)), RuntimeError,
     "^mat1 must be a matrix, got 1-D tensor$"),
    (lambda L: L.addr(L.ones(2, 2), L.ones(2, 2), L.ones(2)), RuntimeError,
     "^addr: Expected 1-D argument vec1, but got 2-D$"),
    (lambda L: L.addbmm(L.ones(2, 2), L.ones(2, 2, 3), L.ones(3, 2, 2)), RuntimeError,
     "^batch1 and batch2 must have same number of batches, got 2 and 3$"),
    (lambda L: L.baddbmm(L.ones(2, 2, 2), L.ones(2, 2, 3), L.ones(2, 2, 2)), RuntimeError,
     "^Expected size for first two dimensions of batch2 tensor to be: \\[2, 3\\] but got: "
     "\\[2, 2\\].$"),
    (lambda L: L.linalg.householder_product(L.ones(4, 3), L.ones(4)), RuntimeError,
     "input.shape\\[-1\\] must be greater than or equal to tau.shape\\[-1\\]"),
    (lambda L: L.linalg.solve(L.ones(2, 2), L.ones(2, dtype=L.float64)), RuntimeError,
     "^linalg.solve: Expected A and B to have the same dtype, but found A of type Float and B "
     "of type Double instead$"),
    (lambda L: L.linalg.solve(L.zeros(2, 2), L.ones(2)), "LinAlgError",
     "^torch.linalg.solve: The solver failed because the input matrix is singular.$"),
    (lambda L: L.linalg.inv(L.zeros(2, 2)), "LinAlgError",
     "^linalg.inv: The diagonal element 1 is zero, the inversion could not be completed "
     "because the input matrix is singular.$"),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors_match_torch(case):
    fn, kind, message = ERRORS[case]
    with pytest.raises(Exception) as expected:
        fn(torch)
    with pytest.raises(RuntimeError if kind is RuntimeError else ember.linalg.LinAlgError,
                       match=message):
        fn(ember)
    if kind is not RuntimeError:
        assert isinstance(expected.value, torch.linalg.LinAlgError)


def test_deprecated_functions_warn_once_as_torch_does():
    from ember.core.ops import factorizations
    factorizations._WARNED.discard("qr")
    x = ember.eye(2)
    with pytest.warns(UserWarning, match="torch.qr is deprecated in favor of torch.linalg.qr"):
        ember.qr(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x.qr()  # once per process


def test_lu_pivots_and_permutation_match_lapack():
    a = RNG.standard_normal((3, 5, 5))
    got, want = ember.linalg.lu_factor(ember.tensor(a)), torch.linalg.lu_factor(torch.tensor(a))
    assert got.pivots.tolist() == want.pivots.tolist()
    p, lower, upper = ember.linalg.lu(ember.tensor(a))
    np.testing.assert_allclose((p @ lower @ upper).numpy(), a, atol=1e-12)


def test_low_rank_svd_matches_torch_where_the_answer_is_unique():
    a = RNG.standard_normal((7, 2)) @ RNG.standard_normal((2, 5))
    m = RNG.standard_normal((7, 5))
    for args in ((), (3, 1)):
        u, s, v = ember.svd_lowrank(ember.tensor(a).mT, *args)
        tu, ts, tv = torch.svd_lowrank(torch.tensor(a).mT, *args)
        np.testing.assert_allclose(s.numpy()[:2], ts.numpy()[:2], rtol=1e-10)
        assert tuple(u.shape) == tuple(tu.shape) and tuple(v.shape) == tuple(tv.shape)
    s = ember.svd_lowrank(ember.tensor(a + m), q=5, M=ember.tensor(m))[1]
    np.testing.assert_allclose(s.numpy()[:2], np.linalg.svd(a)[1][:2], rtol=1e-8)
    s, ts = ember.pca_lowrank(ember.tensor(a))[1], torch.pca_lowrank(torch.tensor(a))[1]
    np.testing.assert_allclose(s.numpy()[:2], ts.numpy()[:2], rtol=1e-8)
    with pytest.raises(ValueError, match="must be non-negative integer"):
        ember.pca_lowrank(ember.tensor(a), q=9)


def _autocast_cases(L, d):
    r = L.randn
    sq = (r(3, 3) + 3 * L.eye(3)).to(d)
    return {
        "addbmm": lambda: L.addbmm(r(3, 5, dtype=d), r(2, 3, 4, dtype=d), r(2, 4, 5, dtype=d)),
        "linalg.vecdot": lambda: L.linalg.vecdot(r(3, dtype=d), r(3, dtype=d)),
        "det": lambda: L.det(sq), "linalg.inv": lambda: L.linalg.inv(sq),
        "linalg.solve": lambda: L.linalg.solve(sq, r(3, dtype=d)),
        "linalg.cholesky": lambda: L.linalg.cholesky(sq @ sq.mT),
        "linalg.qr": lambda: L.linalg.qr(sq)[0], "linalg.svd": lambda: L.linalg.svd(sq)[1],
        "linalg.eigh": lambda: L.linalg.eigh(sq)[0],
        "linalg.lu_factor": lambda: L.linalg.lu_factor(sq)[0],
        "pinverse": lambda: L.pinverse(sq), "cdist": lambda: L.cdist(sq, sq),
        "matrix_power": lambda: L.matrix_power(sq, 2), "cov": lambda: L.cov(sq),
        "linalg.lstsq": lambda: L.linalg.lstsq(sq, sq)[0], "geqrf": lambda: L.geqrf(sq)[0],
        "inner": lambda: L.inner(sq, sq), "tensordot": lambda: L.tensordot(sq, sq, 1),
        "multi_dot": lambda: L.linalg.multi_dot([sq, sq, sq]),
        "corrcoef": lambda: L.corrcoef(sq), "addmv": lambda: L.addmv(sq[0], sq, sq[1]),
        "addr": lambda: L.addr(sq, sq[0], sq[1]), "kron": lambda: L.kron(sq, sq),
        "vector_norm": lambda: L.linalg.vector_norm(sq), "cond": lambda: L.linalg.cond(sq),
        "matrix_exp": lambda: L.matrix_exp(sq), "lu_solve": lambda: L.linalg.lu_solve(
            *L.linalg.lu_factor(sq), sq), "svd_lowrank": lambda: L.svd_lowrank(sq, q=2)[1],
    }


def test_cpu_autocast_casts_as_pytorchs_lists():
    """Under CPU autocast (bfloat16), each op's result dtype from float32 and bfloat16
    inputs is PyTorch's (an error where PyTorch's kernel has no bfloat16). (Not `pinv`:
    PyTorch's casts only its last product, so float32 in gives bfloat16 out; ember's runs
    in float32 throughout, as an op ember declares is cast as a whole.)"""
    def dtypes(L, d):
        out = {}
        for name, call in _autocast_cases(L, getattr(L, d)).items():
            with L.autocast("cpu", dtype=L.bfloat16):
                try:
                    out[name] = str(call().dtype).split(".")[-1]
                except (RuntimeError, NotImplementedError):
                    out[name] = "error"
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for d in ("float32", "bfloat16"):
            assert dtypes(ember, d) == dtypes(torch, d), d


def test_out_arguments_of_the_linalg_namespace():
    a, o = ember.tensor(A), ember.empty(0, dtype=ember.float64)
    assert ember.linalg.inv(a, out=o) is o
    np.testing.assert_allclose(o.numpy(), np.linalg.inv(A), atol=1e-12)
    with pytest.warns(UserWarning, match="was resized"):  # as torch, for a non-empty out
        assert ember.linalg.vector_norm(a, 1, dim=-1, out=o) is o
    np.testing.assert_allclose(o.numpy(), np.abs(A).sum(-1), atol=1e-12)
    o = ember.empty(0, dtype=ember.float64)
    assert ember.linalg.solve(a, ember.tensor(B), out=o) is o and tuple(o.shape) == B.shape
    o = ember.empty(0, dtype=ember.float64)
    assert ember.inverse(a[0], out=o) is o and tuple(o.shape) == (4, 4)


def test_householder_product_gradient_through_zero_reflector_entries():
    """Reflectors with zero entries (LAPACK trims them) still pass the gradient PyTorch's
    analytic formula gives (orthogonal's Householder map starts from A = 0, tau = 2)."""
    torch = pytest.importorskip("torch")
    w = np.cos(np.arange(15.0)).reshape(5, 3)
    grads = []
    for L in (ember, torch):
        A = L.zeros(5, 3, dtype=L.float64, requires_grad=True)
        tau = L.tensor([2.0, 2.0, 0.0], dtype=L.float64, requires_grad=True)
        q = L.linalg.householder_product(A, tau)
        (q * L.tensor(w)).sum().backward()
        grads.append((A.grad.numpy(), tau.grad.numpy(), q.detach().numpy()))
    for got, want in zip(*grads):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_eig_and_eigvals_match_torch(dtype):
    """d2l's appendix `torch.linalg.eig(torch.tensor([[2, 1], [2, 3]], dtype=torch.float64))`:
    complex results (real and conjugate-pair eigenvalues, batched) in LAPACK's order and
    normalization, PyTorch's printed form, and its errors."""
    rs = np.random.RandomState(3)
    for a in (np.array([[2.0, 1.0], [2.0, 3.0]]), np.array([[0.0, -1.0], [1.0, 0.0]]),
              rs.randn(2, 4, 4)):
        a = a.astype(dtype)
        (tw, tv), (ew, ev) = torch.linalg.eig(torch.tensor(a)), ember.linalg.eig(ember.tensor(a))
        for t, e in ((tw, ew), (tv, ev), (torch.linalg.eigvals(torch.tensor(a)),
                                          ember.linalg.eigvals(ember.tensor(a)))):
            assert str(e.dtype) == str(t.dtype).replace("torch", "ember")
        np.testing.assert_allclose(ew.numpy(), tw.numpy(), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(ember.linalg.eigvals(ember.tensor(a)).numpy(), tw.numpy(),
                                   rtol=1e-4, atol=1e-5)
        # an eigenvector is PyTorch's up to a phase (LAPACK builds may differ in sign)
        phase = np.einsum("...ij,...ij->...j", ev.numpy().conj(), tv.numpy())
        np.testing.assert_allclose(np.abs(phase), 1.0, rtol=1e-4)
        np.testing.assert_allclose(a.astype(ev.numpy().dtype) @ ev.numpy(),
                                   ev.numpy() * ew.numpy()[..., None, :], atol=1e-4)
    two = [[2, 1], [2, 3]]
    assert repr(ember.linalg.eig(ember.tensor(two, dtype=ember.float64))).replace(
        "ember", "torch") == repr(torch.linalg.eig(torch.tensor(two, dtype=torch.float64)))
    for bad in ("lib.ones(2, 3)", "lib.ones(3)", "lib.ones(2, 2, dtype=lib.int64)",
                "lib.full((2, 2), float('nan'))", "lib.ones(2, 2, dtype=lib.float16)"):
        errors = []
        for lib in (torch, ember):
            with pytest.raises((RuntimeError, NotImplementedError)) as err:
                lib.linalg.eig(eval(bad, {"lib": lib}))
            errors.append((type(err.value), str(err.value)))
        assert errors[1] == errors[0], bad
    x = ember.tensor([[2.0, 1.0], [0.5, 3.0]], requires_grad=True)  # PyTorch's gradient
    xt = torch.tensor([[2.0, 1.0], [0.5, 3.0]], requires_grad=True)
    ember.linalg.eigvals(x).real.sum().backward()
    torch.linalg.eigvals(xt).real.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-6)


def _ldl_matrices():
    rng = np.random.default_rng(7)
    real = rng.standard_normal((3, 6, 6))
    real = real + real.swapaxes(-1, -2)
    real[1][np.abs(real[1]) < 1] = 0  # sparse: zero pivots, 2x2 blocks, interchanges
    np.fill_diagonal(real[2], 0)
    cplx = rng.standard_normal((2, 5, 5)) + 1j * rng.standard_normal((2, 5, 5))
    return [(real, False), (real, True), (cplx + cplx.conj().swapaxes(-1, -2), True),
            (cplx + cplx.swapaxes(-1, -2), False), (cplx, True),
            (np.zeros((2, 3, 3)), False), (np.zeros((2, 0, 0)), False)]


@pytest.mark.parametrize("case", range(7))
def test_ldl_factor_and_solve_match_torch(case):
    """linalg.ldl_factor_ex/ldl_solve: LAPACK's Bunch-Kaufman LD, pivots and info (real,
    Hermitian and complex symmetric; singular and empty) and the solutions."""
    a, hermitian = _ldl_matrices()[case]
    b = np.random.default_rng(8).standard_normal(a.shape[:-1] + (2,)).astype(a.dtype)
    got = ember.linalg.ldl_factor_ex(ember.tensor(a), hermitian=hermitian)
    want = torch.linalg.ldl_factor_ex(torch.tensor(a), hermitian=hermitian)
    assert type(got).__name__ == type(want).__name__ == "linalg_ldl_factor_ex"
    np.testing.assert_allclose(got.LD.numpy(), want.LD.numpy(), atol=1e-10)
    for g, w in ((got.pivots, want.pivots), (got.info, want.info)):
        assert g.dtype is ember.int32 and g.tolist() == w.tolist()
    with np.errstate(all="ignore"):
        x = ember.linalg.ldl_solve(got.LD, got.pivots, ember.tensor(b), hermitian=hermitian)
    y = torch.linalg.ldl_solve(want.LD, want.pivots, torch.tensor(b), hermitian=hermitian)
    np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-8, atol=1e-8)


def test_ldl_errors_match_torch():
    LD, pivots = ember.linalg.ldl_factor(ember.tensor([[2.0, 1.0], [1.0, -3.0]]))
    cases = [
        (lambda L: L.linalg.ldl_factor(L.ones(2, 3)), RuntimeError),
        (lambda L: L.linalg.ldl_factor(L.ones(3)), RuntimeError),
        (lambda L: L.linalg.ldl_factor(L.ones(2, 2, dtype=L.int32)), RuntimeError),
        (lambda L: L.linalg.ldl_factor(L.ones(2, 2, dtype=L.float16)), NotImplementedError),
        (lambda L: L.linalg.ldl_factor(L.zeros(2, 2)), RuntimeError),
        (lambda L: L.linalg.ldl_solve(L.ones(2, 2), L.ones(2), L.ones(2, 1)), RuntimeError),
        (lambda L: L.linalg.ldl_solve(L.ones(2, 2), L.ones(1, dtype=L.int32),
                                      L.ones(2, 1)), RuntimeError),
        (lambda L: L.linalg.ldl_solve(L.ones(2, 2), L.ones(2, dtype=L.int32),
                                      L.ones(3, 1)), RuntimeError),
        (lambda L: L.linalg.ldl_solve(L.ones(2, 2), L.ones(2, dtype=L.int32),
                                      L.ones(2, 1, dtype=L.float64)), RuntimeError),
        (lambda L: L.linalg.ldl_solve(L.ones(2), L.ones(2, dtype=L.int32),
                                      L.ones(2, 1)), RuntimeError),
    ]
    for fn, kind in cases:
        with pytest.raises(kind) as want:
            fn(torch)
        with pytest.raises(kind) as got:
            fn(ember)
        message = str(want.value)
        if "INTERNAL ASSERT" in message:  # (PyTorch's message names its source file)
            message = message.split("PyTorch. ")[-1]
        assert str(got.value) == message
    # batches broadcast; pivots of any integer dtype
    x = ember.linalg.ldl_solve(LD, pivots.long(), ember.ones(3, 2, 1))
    assert tuple(x.shape) == (3, 2, 1)
