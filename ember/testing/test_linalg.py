"""Linear algebra and normalisations on the device under test: matmul (1-D operands and
batch broadcasting), mm, bmm, mv, dot, outer, addmm, einsum, softmax and log_softmax,
against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ember
from ember.testing import support as S

_MATMUL_DTYPES = [ember.float16, ember.bfloat16, ember.float32, ember.float64, ember.int32,
                  ember.int64]


def _operand(data: st.DataObject, d: ember.dtype, shape: tuple) -> np.ndarray:
    # halves in [-2, 2]: every product and partial sum is exact even in bfloat16, so the
    # result does not depend on a backend's summation order
    arr = data.draw(S.arrays(d, shape, -2, 2, nice=True))
    return (np.round(arr.astype(np.float64) * 2) / 2).astype(arr.dtype)


@S.prop()
@given(data=st.data())
def test_matmul(device: ember.device, data: st.DataObject) -> None:
    d = data.draw(S.dtypes(device, _MATMUL_DTYPES), label="dtype")
    ba, bb = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2,
                                                         max_side=3), label="batch").input_shapes
    m, k, n = (data.draw(st.integers(1, 4)) for _ in range(3))
    a_vec, b_vec = data.draw(st.booleans(), label="a is 1-D"), data.draw(st.booleans(),
                                                                         label="b is 1-D")
    sa = (k,) if a_vec else ba + (m, k)
    sb = (k,) if b_vec else bb + (k, n)
    a, b = _operand(data, d, sa), _operand(data, d, sb)
    x, y = S.on(device, a, d), S.on(device, b, d)
    ref = np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(S.np_dtype(d))
    S.assert_matches(ember.matmul(x, y), ref, device, dtype=d, what=f"{sa} @ {sb}")
    S.assert_matches(x @ y, ref, device, dtype=d, what="operator @")
    if len(sa) == 2 and len(sb) == 2:
        S.assert_matches(x.mm(y), ref, device, dtype=d, what="mm")
    if len(sa) == 3 and len(sb) == 3 and sa[0] == sb[0]:
        S.assert_matches(ember.bmm(x, y), ref, device, dtype=d, what="bmm")
    if len(sa) == 2 and len(sb) == 1:
        S.assert_matches(x.mv(y), ref, device, dtype=d, what="mv")
    if len(sa) == 1 and len(sb) == 1:
        S.assert_matches(x.dot(y), ref, device, dtype=d, what="dot")
        S.assert_matches(ember.outer(x, y), np.outer(a, b).astype(a.dtype), device,
                         dtype=d, what="outer")


def test_matmul_strided_operands(device: ember.device) -> None:
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((5, 4)), rng.standard_normal((3, 5))
    x, y = S.on(device, a), S.on(device, b)
    S.assert_matches(x.t() @ y.t(), a.T @ b.T, device)
    S.assert_matches(x[::2] @ y[:, 1:].t()[:, ::2].t().t(), a[::2] @ b[:, 1:].T[:, ::2],
                     device)
    c = S.on(device, 2.0 * np.ones((4, 1)))
    S.assert_matches(ember.addmm(c, x.t(), y.t(), beta=0.5, alpha=2.0),
                     0.5 * 2.0 * np.ones((4, 1)) + 2.0 * (a.T @ b.T), device)


def test_matmul_errors(device: ember.device) -> None:
    a, b = S.on(device, np.zeros((2, 3))), S.on(device, np.zeros((4, 5)))
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied "
                                           r"\(2x3 and 4x5\)"):
        a @ b
    with pytest.raises(RuntimeError, match="both arguments to matmul need to be at least 1D, "
                                           "but they are 0D and 2D"):
        ember.matmul(S.on(device, 1.0), a)
    with pytest.raises(RuntimeError, match="same dtype"):
        a @ S.on(device, np.zeros((3, 2), np.float32))
    with pytest.raises(RuntimeError, match="^batch1 must be a 3D tensor\n"):
        ember.bmm(a, b)
    with pytest.raises(RuntimeError, match="^self must be a matrix\n"):
        ember.mm(S.on(device, np.zeros(3)), a)


_EINSUM = [
    "ij,jk->ik", "bij,bjk->bik", "ij->ji", "ij->", "ij->j", "i,i->", "i,j->ij",
    "bhqd,bhkd->bhqk", "ij,ij->ij", "ii->i", "ii->", "ijk->kji", "ij,jk,kl->il", "ij,jk",
    "ba", "i,i",
]


@pytest.mark.parametrize("equation", _EINSUM)
@S.prop()
@given(data=st.data())
def test_einsum(device: ember.device, equation: str, data: st.DataObject) -> None:
    d = data.draw(st.sampled_from([ember.float32, ember.float64]), label="dtype")
    lhs = equation.split("->")[0]
    sizes = {c: data.draw(st.integers(1, 4), label=f"size of {c}") for c in sorted(
        set(lhs) - {","})}
    arrays = [_operand(data, d, tuple(sizes[c] for c in term)) for term in lhs.split(",")]
    tensors = [S.on(device, a, d) for a in arrays]
    ref = np.einsum(equation, *[a.astype(np.float64) for a in arrays])
    S.assert_matches(ember.einsum(equation, *tensors), S.reference_cast(ref, d), device,
                     dtype=d, what=f"einsum({equation!r})")
    S.assert_matches(ember.einsum(equation, tensors), S.reference_cast(ref, d), device,
                     dtype=d, what="operands as a list")


def test_einsum_ellipsis(device: ember.device) -> None:
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((2, 3, 4, 5)), rng.standard_normal((3, 5, 2))
    out = ember.einsum("...ij,...jk->...ik", S.on(device, a), S.on(device, b))
    S.assert_matches(out, np.einsum("...ij,...jk->...ik", a, b), device)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@S.prop()
@given(data=st.data())
def test_softmax(device: ember.device, name: str, data: st.DataObject) -> None:
    d = data.draw(S.dtypes(device, S.FLOATING), label="dtype")
    arr = data.draw(S.arrays(d, data.draw(S.shapes(min_dims=1)), -8, 8), label="x")
    if d in (ember.float32, ember.float64):  # large logits: must not overflow
        arr = (arr.astype(np.float64) + data.draw(st.sampled_from([0.0, 500.0, -500.0]))
               ).astype(arr.dtype)
    dim = data.draw(st.integers(-arr.ndim, arr.ndim - 1), label="dim")
    x = S.on(device, arr, d)
    a = arr.astype(np.float64)
    shifted = a - a.max(axis=dim, keepdims=True)
    lse = np.log(np.exp(shifted).sum(axis=dim, keepdims=True))
    ref = np.exp(shifted - lse) if name == "softmax" else shifted - lse
    out = getattr(ember, name)(x, dim)
    S.assert_matches(out, S.reference_cast(ref, d), device, dtype=d)
    S.assert_matches(getattr(x, name)(dim), S.reference_cast(ref, d), device, dtype=d)
    if d is ember.float32:
        wide = getattr(ember, name)(x, dim, dtype=ember.float64)
        S.assert_matches(wide, ref, device, dtype=ember.float64, rtol=1e-6, atol=1e-7)


def test_softmax_errors(device: ember.device) -> None:
    with pytest.raises(RuntimeError, match="softmax"):
        ember.softmax(S.on(device, [1, 2]), 0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.softmax(S.on(device, [1.0, 2.0]), 1)


def test_addmm_beta_zero_ignores_input(device: ember.device) -> None:
    c = S.on(device, np.full((2, 2), np.nan))
    a = S.on(device, np.ones((2, 3)))
    S.assert_matches(ember.addmm(c, a, a.t(), beta=0), np.full((2, 2), 3.0), device)


# -- what this module checks (ember.testing.test_coverage reads it) ---------------------

COVERS = {"matmul", "mm", "bmm", "mv", "dot", "outer", "addmm", "einsum", "softmax",
          "log_softmax",
          # linear algebra: factorizations (family: linalg)
          "det", "_linalg_slogdet", "_linalg_inv_ex", "_linalg_solve_ex", "_linalg_cholesky_ex",
          "_linalg_qr", "_linalg_svd", "_linalg_eigh", "_linalg_lu_factor_ex", "linalg_inv_ex",
          "linalg_solve_ex", "linalg_cholesky_ex", "linalg_matrix_rank", "linalg_lu_factor",
          "linalg_lu_factor_ex", "lu", "linalg_lu", "_geqrf", "geqrf",
          "_linalg_solve_triangular",
          "svd_lowrank", "pca_lowrank", "linalg_slogdet", "vander",
          "_linalg_eig", "linalg_eig", "linalg_eigvals",
          "_linalg_ldl_factor_ex", "linalg_ldl_factor", "linalg_ldl_factor_ex",
          "_linalg_ldl_solve", "linalg_ldl_solve"}
"""The declared ops whose values this module's tests check."""


# -- matrix factorizations (family: linalg) --


def _well_conditioned(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    return rng.uniform(-1, 1, shape) + 3 * np.eye(shape[-1])


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_factorizations_reconstruct_their_input(device: ember.device, dtype) -> None:
    rng = np.random.default_rng(0)
    tol = 1e-4 if dtype is ember.float32 else 1e-10
    a = _well_conditioned(rng, (2, 3, 3))
    b = rng.uniform(-1, 1, (2, 3, 2))
    x, y = S.on(device, a, dtype), S.on(device, b, dtype)
    S.assert_matches(ember.det(x), np.linalg.det(a), device, dtype=dtype, rtol=tol, atol=tol)
    sign, logabsdet = ember.linalg.slogdet(x)
    S.assert_matches(logabsdet, np.linalg.slogdet(a)[1], device, dtype=dtype, rtol=tol,
                     atol=tol)
    S.assert_matches(ember.linalg.inv(x), np.linalg.inv(a), device, dtype=dtype, rtol=tol,
                     atol=tol)
    S.assert_matches(ember.linalg.solve(x, y), np.linalg.solve(a, b), device, dtype=dtype,
                     rtol=tol, atol=tol)
    spd = a @ a.swapaxes(-1, -2)
    S.assert_matches(ember.linalg.cholesky(S.on(device, spd, dtype)), np.linalg.cholesky(spd),
                     device, dtype=dtype, rtol=tol, atol=tol)
    q, r = ember.linalg.qr(S.on(device, a[..., :2], dtype))
    S.assert_matches(q @ r, a[..., :2], device, dtype=dtype, rtol=tol, atol=tol)
    S.assert_matches(r, np.triu(r.cpu().numpy()), device, dtype=dtype)
    u, sv, vh = ember.linalg.svd(x)
    S.assert_matches(sv, np.linalg.svd(a)[1], device, dtype=dtype, rtol=tol, atol=tol)
    S.assert_matches((u * sv.unsqueeze(-2)) @ vh, a, device, dtype=dtype, rtol=tol, atol=tol)
    w, v = ember.linalg.eigh(S.on(device, spd, dtype))
    S.assert_matches(w, np.linalg.eigvalsh(spd), device, dtype=dtype, rtol=tol, atol=tol)
    S.assert_matches((v * w.unsqueeze(-2)) @ v.mT, spd, device, dtype=dtype, rtol=tol,
                     atol=tol)
    p, lower, upper = ember.linalg.lu(x)
    S.assert_matches(p @ lower @ upper, a, device, dtype=dtype, rtol=tol, atol=tol)
    lu_, pivots = ember.linalg.lu_factor(x)
    assert pivots.dtype is ember.int32
    S.assert_matches(ember.lu(x)[0], lu_.cpu().numpy(), device, dtype=dtype)
    assert int(ember.linalg.matrix_rank(x[..., :2] @ x[..., :2, :]).max()) == 2
    h, tau = ember.geqrf(S.on(device, a[..., :2], dtype))
    S.assert_matches(h.triu()[..., :2, :], np.linalg.qr(a[..., :2], mode="r"), device,
                     dtype=dtype, rtol=tol, atol=tol)
    S.assert_matches(ember.linalg.householder_product(h, tau) @ h.triu()[..., :2, :],
                     a[..., :2], device, dtype=dtype, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_ldl_factor_is_lapacks_bunch_kaufman(device: ember.device, dtype) -> None:
    """linalg.ldl_factor: LAPACK sytrf's compact lower form and signed 1-based pivots (a
    zero diagonal takes a 2x2 pivot), and ldl_solve's solutions of indefinite systems."""
    a = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 3.0], [2.0, 3.0, 0.0]])
    LD, pivots, info = ember.linalg.ldl_factor_ex(S.on(device, a, dtype))
    S.assert_matches(LD, [[0.0, 0.0, 0.0], [2.0, 0.0, 0.0], [1.5, 0.5, -3.0]], device,
                     dtype=dtype)
    S.assert_matches(pivots, np.array([-3, -3, 3]), device, dtype=ember.int32)
    S.assert_matches(info, np.array(0), device, dtype=ember.int32)
    rng = np.random.default_rng(3)
    sym = rng.uniform(-1, 1, (2, 5, 5))
    sym = sym + sym.swapaxes(-1, -2)
    b = rng.uniform(-1, 1, (2, 5, 2))
    tol = 1e-3 if dtype is ember.float32 else 1e-9
    LD, pivots = ember.linalg.ldl_factor(S.on(device, sym, dtype))
    x = ember.linalg.ldl_solve(LD, pivots, S.on(device, b, dtype))
    S.assert_matches(x, np.linalg.solve(sym, b), device, dtype=dtype, rtol=tol, atol=tol)
    LD, pivots, info = ember.linalg.ldl_factor_ex(S.on(device, np.zeros((3, 3)), dtype))
    S.assert_matches(info, np.array(1), device, dtype=ember.int32)
    with pytest.raises(RuntimeError, match="Unknown error code: 1"):
        ember.linalg.ldl_factor(S.on(device, np.zeros((3, 3)), dtype))


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_eig_is_lapacks(device: ember.device, dtype) -> None:
    """linalg.eig/eigvals of a general matrix: LAPACK's eigenvalues, complex always (a
    rotation's are +-i), and eigenvectors with A V = V diag(w)."""
    complex_dtype = dtype.to_complex()
    if not S.holds(device, complex_dtype):
        pytest.skip(f"{device} holds no {complex_dtype}")
    a = np.random.default_rng(1).uniform(-1, 1, (2, 4, 4))
    a[1, :2, :2] = [[0.0, -1.0], [1.0, 0.0]]
    if "_linalg_eig" not in S.on(device, a, dtype)._backend.kernels:
        pytest.skip(f"{device}'s backend has no general eigensolver (CuPy's before v14)")
    tol = 1e-4 if dtype is ember.float32 else 1e-10
    w, v = ember.linalg.eig(S.on(device, a, dtype))
    assert w.dtype == v.dtype == complex_dtype
    np_w, _ = np.linalg.eig(a)
    S.assert_matches(w, np_w, device, dtype=complex_dtype, rtol=tol, atol=tol)
    S.assert_matches(ember.linalg.eigvals(S.on(device, a, dtype)), np_w, device,
                     dtype=complex_dtype, rtol=tol, atol=tol)
    vv = v.cpu().numpy()
    np.testing.assert_allclose(a @ vv, vv * w.cpu().numpy()[..., None, :], rtol=tol,
                               atol=tol)
    with pytest.raises(RuntimeError, match="input tensor should not contain infs or NaNs"):
        ember.linalg.eig(S.on(device, np.full((2, 2), np.nan), dtype))


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("unitriangular", [True, False])
def test_triangular_solve_reads_one_triangle(device: ember.device, upper: bool,
                                             unitriangular: bool) -> None:
    # 70 rows: more than one block of the substitution (the rest updated by a product)
    rng = np.random.default_rng(2)
    a = _well_conditioned(rng, (2, 70, 70)) + 20 * np.eye(70)
    b = rng.uniform(-1, 1, (2, 70, 3))
    t = np.triu(a) if upper else np.tril(a)
    if unitriangular:
        t = t - np.eye(70) * np.diagonal(t, axis1=-2, axis2=-1)[..., None, :] + np.eye(70)
    x = ember.linalg.solve_triangular(S.on(device, a), S.on(device, b), upper=upper,
                                      unitriangular=unitriangular)
    S.assert_matches(x, np.linalg.solve(t, b), device, rtol=1e-10, atol=1e-10)
    # a NaN in B takes the substitution (blocked: 70 rows) instead of LAPACK's solve; its
    # column is NaN from the NaN's row on (the rows solved after it), the others exact
    b[..., 35, 0] = np.nan
    x = ember.linalg.solve_triangular(S.on(device, a), S.on(device, b), upper=upper,
                                      unitriangular=unitriangular).cpu().numpy()
    np.testing.assert_allclose(x[..., 1:], np.linalg.solve(t, b[..., 1:]), rtol=1e-10,
                               atol=1e-10)
    reached = slice(0, 36) if upper else slice(35, 70)
    assert np.isnan(x[..., reached, 0]).all()
    # a zero on the diagonal: no error; its row is inf, and the rows substituted after it
    # NaN (0 * inf), as BLAS trsm's (PyTorch's)
    singular = S.on(device, np.diag([1.0, 0.0, 2.0]))
    x = ember.linalg.solve_triangular(singular, S.on(device, np.ones((3, 1))), upper=upper)
    expected = [np.nan, np.inf, 0.5] if upper else [1.0, np.inf, np.nan]
    S.assert_matches(x, np.array(expected)[:, None], device)


def test_low_rank_svd_and_pca_are_exact_on_low_rank_matrices(device: ember.device) -> None:
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 7, 2)) @ rng.standard_normal((2, 2, 5))  # rank 2
    x = S.on(device, a)
    u, sv, v = ember.svd_lowrank(x, q=3)
    S.assert_matches(sv[..., :2], np.linalg.svd(a)[1][..., :2], device, rtol=1e-8, atol=1e-8)
    S.assert_matches((u * sv.unsqueeze(-2)) @ v.mT, a, device, rtol=1e-8, atol=1e-8)
    centered = a - a.mean(-2, keepdims=True)
    u, sv, v = ember.pca_lowrank(x.mT.mT, q=3)
    S.assert_matches((u * sv.unsqueeze(-2)) @ v.mT, centered, device, rtol=1e-8, atol=1e-8)


def test_singular_and_indefinite_matrices_report_lapack_info(device: ember.device) -> None:
    singular = np.array([[[1.0, 2.0], [2.0, 4.0]], [[2.0, 0.0], [0.0, 1.0]]])
    x = S.on(device, singular)
    inverse, info = ember.linalg.inv_ex(x)
    # (a singular matrix's inverse is what getrs leaves, inf or NaN, as PyTorch's)
    assert info.tolist() == [2, 0] and not bool(inverse[0].isfinite().any())
    S.assert_matches(inverse[1], np.linalg.inv(singular[1]), device)
    with pytest.raises(ember.linalg.LinAlgError, match=r"linalg.inv: \(Batch element 0\): "
                       "The diagonal element 2 is zero"):
        ember.linalg.inv(x)
    assert ember.linalg.solve_ex(x, x).info.tolist() == [2, 0]
    assert ember.linalg.lu_factor_ex(x).info.tolist() == [2, 0]
    indefinite = S.on(device, np.array([[1.0, 2.0], [2.0, 1.0]]))
    assert int(ember.linalg.cholesky_ex(indefinite).info) == 2
    with pytest.raises(RuntimeError, match="leading minor of order 2"):
        ember.linalg.cholesky(indefinite)


def test_lobpcg_finds_the_extreme_eigenpairs(device: ember.device) -> None:
    rng = np.random.default_rng(3)
    m = rng.standard_normal((9, 9))
    a = m @ m.T + np.eye(9)
    b = np.diag(rng.uniform(1.0, 2.0, 9))
    values, vectors = ember.lobpcg(S.on(device, a, ember.float64), k=2)
    S.assert_matches(values, np.linalg.eigvalsh(a)[::-1][:2], device)
    S.assert_matches(S.on(device, a, ember.float64) @ vectors, S.host(vectors) * S.host(
        values), device)
    values, vectors = ember.lobpcg(S.on(device, a, ember.float64), k=3, largest=False,
                                   B=S.on(device, b, ember.float64))
    ref = np.linalg.eigvals(np.linalg.solve(b, a)).real
    S.assert_matches(values, np.sort(ref)[:3], device)
    S.assert_matches(vectors.T @ S.on(device, b, ember.float64) @ vectors, np.eye(3), device)
    with pytest.raises(ValueError, match="smaller than 3 x the number of requested"):
        ember.lobpcg(S.on(device, a, ember.float64), k=4)


COVERS |= {"lobpcg"}


@pytest.mark.parametrize("increasing", [False, True])
def test_vander_is_numpys(device: ember.device, increasing: bool) -> None:
    x = np.array([1.5, -2.0, 0.5])
    for n in (None, 1, 4):
        S.assert_matches(ember.vander(S.on(device, x, ember.float64), N=n,
                                      increasing=increasing),
                         np.vander(x, N=n, increasing=increasing), device,
                         dtype=ember.float64)

