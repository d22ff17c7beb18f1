"""Complex linear algebra against PyTorch: `linalg.eig`/`eigvals` (complex results even
for real input) and complex inputs to inv, solve, det, slogdet, Cholesky, QR, SVD, eigh,
pinv, the norms, matrix_exp and householder_product: values, result dtypes, gradients
(PyTorch's conjugate convention, against torch's backward and finite differences),
printed result types and errors."""

from __future__ import annotations

import numpy as np
import pytest
from complex_util import fd_grad

import ember

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(7)
_A = _rng.standard_normal((3, 3)) + 1j * _rng.standard_normal((3, 3))
_R = _rng.standard_normal((3, 3))
_B = _rng.standard_normal((2, 3, 3)) + 1j * _rng.standard_normal((2, 3, 3))


def _pd(m, x):
    """A Hermitian positive-definite matrix made from x."""
    return x @ x.mH + 3 * m.eye(x.shape[-1], dtype=x.dtype)


def _phase_free_svd(m, x):
    """Functions of the SVD that do not depend on the singular vectors' phases."""
    U, S, Vh = m.linalg.svd(x, full_matrices=False)
    return U @ Vh, S, U.abs()


def _phase_free_eigh(m, x):
    L, V = m.linalg.eigh(x + x.mH)
    return L, V.abs(), V @ (L.unsqueeze(-1) * V.mH)


CASES = {
    "det": lambda m, x: m.linalg.det(x),
    "det_batch": lambda m, x: m.det(x.unsqueeze(0).expand(2, 3, 3) * m.tensor([1.0, 2j])
                                    .reshape(2, 1, 1)),
    "slogdet": lambda m, x: tuple(m.linalg.slogdet(x)),
    "slogdet_sign_only": lambda m, x: (m.slogdet(x)[0],),
    "logdet": lambda m, x: m.logdet(x),
    "inv": lambda m, x: m.linalg.inv(x),
    "inverse": lambda m, x: x.inverse(),
    "solve": lambda m, x: m.linalg.solve(x, x[:, :2] * 2 + 1j),
    "solve_right": lambda m, x: m.linalg.solve(x, x[:2], left=False),
    "solve_triangular": lambda m, x: m.linalg.solve_triangular(x.triu() + 2 * m.eye(3), x,
                                                               upper=True),
    "cholesky": lambda m, x: m.linalg.cholesky(_pd(m, x)),
    "cholesky_upper": lambda m, x: m.linalg.cholesky(_pd(m, x), upper=True),
    "qr": lambda m, x: tuple(m.linalg.qr(x)),
    "qr_tall": lambda m, x: tuple(m.linalg.qr(x[:, :2])),
    "qr_wide": lambda m, x: tuple(m.linalg.qr(x[:2])),
    "svdvals": lambda m, x: m.linalg.svdvals(x),
    "svd": _phase_free_svd,
    "svd_tall": lambda m, x: _phase_free_svd(m, x[:, :2]),
    "svd_wide": lambda m, x: _phase_free_svd(m, x[:2]),
    "eigh": _phase_free_eigh,
    "eigvalsh": lambda m, x: m.linalg.eigvalsh(x @ x.mH, UPLO="U"),
    "eig": lambda m, x: tuple(m.linalg.eig(x)),
    "eigvals": lambda m, x: m.linalg.eigvals(x),
    "pinv": lambda m, x: m.linalg.pinv(x[:, :2]),
    "pinv_hermitian": lambda m, x: m.linalg.pinv(x + x.mH, hermitian=True),
    "vector_norm": lambda m, x: m.linalg.vector_norm(x, 3, dim=1),
    "matrix_norm_fro": lambda m, x: m.linalg.matrix_norm(x),
    "matrix_norm_nuc": lambda m, x: m.linalg.matrix_norm(x, "nuc"),
    "matrix_norm_2": lambda m, x: m.linalg.matrix_norm(x, 2),
    "matrix_norm_inf": lambda m, x: m.linalg.matrix_norm(x, float("inf")),
    "norm": lambda m, x: m.linalg.norm(x),
    "cond": lambda m, x: m.linalg.cond(x),
    "matrix_exp": lambda m, x: m.linalg.matrix_exp(x),
    # (zung2r: H_i = I - tau_i v_i v_i^H)
    "householder_product": lambda m, x: m.linalg.householder_product(x[:, :2], x[0, :2] / 3),
}


def _as_tuple(y):
    return y if isinstance(y, tuple) else (y,)


def _loss(m, ys, weights):
    """A real loss that weighs each output's parts differently."""
    total = 0
    for y, w in zip(ys, weights):
        if y.is_complex():
            total = total + (m.view_as_real(y * m.tensor(w)) ** 2).sum()
        else:
            total = total + (y * m.tensor(w.real)).sum()
    return total


def _run(name, values, dtype, tol):
    fn = CASES[name]
    x = values.astype(dtype)
    e = ember.tensor(x, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    ye, yt = _as_tuple(fn(ember, e)), _as_tuple(fn(torch, t))
    assert len(ye) == len(yt)
    for a, b in zip(ye, yt):
        assert str(a.dtype).split(".")[1] == str(b.dtype).split(".")[1], (a.dtype, b.dtype)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().resolve_conj().numpy(),
                                   rtol=tol, atol=tol)
    rng = np.random.default_rng(1)
    weights = [rng.standard_normal(tuple(b.shape)) + 1j * rng.standard_normal(tuple(b.shape))
               for b in yt]
    _loss(ember, ye, weights).backward()
    _loss(torch, yt, weights).backward()
    assert e.grad.dtype == e.dtype
    np.testing.assert_allclose(e.grad.numpy(), t.grad.resolve_conj().numpy(), rtol=tol * 100,
                               atol=tol * 100)


@pytest.mark.parametrize("name", sorted(CASES))
def test_complex128_values_and_gradients(name):
    _run(name, _A, np.complex128, 1e-9)


@pytest.mark.parametrize("name", ["det", "inv", "solve", "cholesky", "qr", "svdvals", "eig",
                                  "eigh", "matrix_norm_nuc"])
def test_complex64_values_and_gradients(name):
    _run(name, _A, np.complex64, 2e-5)


def _fix_phase(V):
    """Unit columns scaled so that each one's largest entry is real and positive."""
    top = V[np.argmax(np.abs(V), axis=0), np.arange(V.shape[1])]
    return V * (np.abs(top) / top)


@pytest.mark.parametrize("dtype,want", [(np.float32, "complex64"), (np.float64, "complex128")])
def test_eig_of_a_real_matrix_is_complex_and_its_gradient_real(dtype, want):
    x = _R.astype(dtype)
    e = ember.tensor(x, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    (Le, Ve), (Lt, Vt) = ember.linalg.eig(e), torch.linalg.eig(t)
    assert str(Le.dtype) == f"ember.{want}" and str(Ve.dtype) == f"ember.{want}"
    tol = 1e-5 if dtype is np.float32 else 1e-10
    np.testing.assert_allclose(Le.detach().numpy(), Lt.detach().numpy(), rtol=tol, atol=tol)
    # eigenvectors are unique up to a phase: LAPACK builds (OpenBLAS's, PyTorch's MKL)
    # may pick another sign in single precision
    np.testing.assert_allclose(_fix_phase(Ve.detach().numpy()), _fix_phase(Vt.detach().numpy()),
                               rtol=tol, atol=tol)
    for m, L, V in ((ember, Le, Ve), (torch, Lt, Vt)):
        (L.real * m.arange(3.0)).sum().add((V.abs() ** 2 * m.arange(9.0).reshape(3, 3)).sum()
                                           ).backward()
    assert e.grad.dtype == e.dtype  # a real input's gradient is real (the real part)
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=tol * 100,
                               atol=tol * 100)
    assert ember.linalg.eigvals(ember.tensor(x)).dtype is getattr(ember, want)


def test_eig_batched_and_printed_as_torch():
    e, t = ember.linalg.eig(ember.tensor(_B)), torch.linalg.eig(torch.tensor(_B))
    np.testing.assert_allclose(e.eigenvalues.numpy(), t.eigenvalues.numpy(), rtol=1e-10)
    np.testing.assert_allclose(e[1].numpy(), t[1].numpy(), rtol=1e-9, atol=1e-12)
    x = np.array([[2.0, 1.0], [0.0, 3.0]])
    assert repr(ember.linalg.eig(ember.tensor(x))).replace("ember.", "torch.") == \
        repr(torch.linalg.eig(torch.tensor(x)))
    assert type(ember.linalg.eig(ember.tensor(x))).__name__ == "linalg_eig"


@pytest.mark.parametrize("name", ["eig", "slogdet", "svd", "cholesky", "qr_wide", "eigh"])
def test_gradients_match_finite_differences(name):
    rng = np.random.default_rng(3)
    y0 = _as_tuple(CASES[name](ember, ember.tensor(_A)))
    weights = [rng.standard_normal(tuple(y.shape)) + 1j * rng.standard_normal(tuple(y.shape))
               for y in y0]

    def loss(z):
        return float(_loss(ember, _as_tuple(CASES[name](ember, ember.tensor(z))), weights))
    e = ember.tensor(_A, requires_grad=True)
    _loss(ember, _as_tuple(CASES[name](ember, e)), weights).backward()
    np.testing.assert_allclose(e.grad.numpy(), fd_grad(loss, _A.copy()), rtol=1e-5,
                               atol=1e-5)


def test_a_phase_dependent_loss_is_refused_as_torch():
    calls = {
        "linalg_eig_backward": lambda m, x: m.linalg.eig(x)[1][0, 0].imag,
        "svd_backward": lambda m, x: m.linalg.svd(x)[0][0, 0].imag,
    }
    for what, call in calls.items():
        with pytest.raises(RuntimeError, match="specified up to multiplication by") as want:
            call(torch, torch.tensor(_A, requires_grad=True)).backward()
        with pytest.raises(RuntimeError, match=what) as got:
            call(ember, ember.tensor(_A, requires_grad=True)).backward()
        assert str(got.value) == str(want.value)


@pytest.mark.parametrize("call", [
    lambda m: m.linalg.eig(m.randn(2, 3, dtype=m.cfloat)),
    lambda m: m.linalg.eigvals(m.ones(3)),
    lambda m: m.linalg.eig(m.ones(2, 3)),
    lambda m: m.linalg.solve(m.ones(2, 2, dtype=m.cdouble), m.ones(2, dtype=m.cfloat)),
])
def test_errors_as_torch(call):
    with pytest.raises(RuntimeError) as want:
        call(torch)
    with pytest.raises(RuntimeError) as got:
        call(ember)
    assert str(got.value) == str(want.value)


def test_singular_complex_matrix():
    x = np.array([[1 + 1j, 2 - 1j], [0, 0]])
    with pytest.raises(ember.linalg.LinAlgError, match="singular"):
        ember.linalg.inv(ember.tensor(x))
    e, t = ember.linalg.slogdet(ember.tensor(x)), torch.linalg.slogdet(torch.tensor(x))
    assert e.logabsdet.item() == t.logabsdet.item() == -np.inf
    assert ember.linalg.inv_ex(ember.tensor(x)).info.item() == 2
    assert ember.linalg.inv_ex(ember.tensor(x)).info.dtype is ember.int32
