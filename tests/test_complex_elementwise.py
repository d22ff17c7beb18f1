"""Complex tensors, second round: the transcendental elementwise ops, complex powers,
the reductions and scans, the vector products and `nan_to_num`/`isreal`, against
PyTorch: values (complex tolerances), result dtypes, gradients (PyTorch's conjugate
convention, against torch's backward and against finite differences on complex128) and
errors, plus a Hypothesis test over complex values with infinite and NaN parts."""

from __future__ import annotations

import math

import numpy as np
import pytest
from complex_util import fd_grad
from hypothesis import given, settings
from hypothesis import strategies as st

import ember

torch = pytest.importorskip("torch")

# off the branch cuts of every op below (asin/acos/atanh: |Re| > 1 on the real axis;
# asinh/atan: |Im| > 1 on the imaginary axis; log/sqrt/acosh: the negative real axis)
_Z = np.array([[0.3 + 0.4j, -0.7 + 0.2j, 0.5 - 0.6j],
               [-0.2 - 0.9j, 1.3 + 0.5j, -1.1 - 0.4j]])
_W = np.array([[0.5 + 2j, 1j, -1 + 0.5j], [2 - 0.3j, 0.2 + 0.2j, -0.7 - 1j]])

UNARY = ["sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan", "asinh",
         "acosh", "atanh", "sigmoid", "log2", "log10", "log1p", "expm1", "rsqrt", "square",
         "sgn", "exp2", "exp", "log", "sqrt", "reciprocal"]


def _close(e, t, tol):
    assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1], (e.dtype, t.dtype)
    np.testing.assert_allclose(e.detach().numpy(), t.detach().resolve_conj().numpy(),
                               rtol=tol, atol=tol)


def _loss(m, y, w):
    """A real loss of a complex result that weighs its two parts differently."""
    return (m.view_as_real(y * w) ** 2).sum() + (y.real * 0.3 - y.imag).sum()


@pytest.mark.parametrize("dtype,tol", [("complex64", 2e-5), ("complex128", 1e-12)])
@pytest.mark.parametrize("name", UNARY)
def test_unary_values_dtypes_and_gradients(name, dtype, tol):
    z = _Z.astype(dtype)
    e = ember.tensor(z, requires_grad=True)
    t = torch.tensor(z, requires_grad=True)
    ye, yt = getattr(ember, name)(e), getattr(torch, name)(t)
    _close(ye, yt, tol)
    w = _W.astype(dtype)
    _loss(ember, ye, ember.tensor(w)).backward()
    _loss(torch, yt, torch.tensor(w)).backward()
    _close(e.grad, t.grad, tol * 10)


@pytest.mark.parametrize("name", ["sin", "tanh", "asin", "acosh", "atanh", "sigmoid",
                                  "log1p", "rsqrt", "exp2", "log10"])
def test_unary_gradients_match_finite_differences(name):
    w = ember.tensor(_W)

    def loss(zz):
        return float(_loss(ember, getattr(ember, name)(ember.tensor(zz)), w))
    z = ember.tensor(_Z, requires_grad=True)
    _loss(ember, getattr(ember, name)(z), w).backward()
    np.testing.assert_allclose(z.grad.numpy(), fd_grad(loss, _Z.copy()), rtol=1e-6,
                               atol=1e-6)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_log1p_and_expm1_near_zero_as_torch(dtype):
    # log(1 + z) would lose the real part of log1p (all of it in single precision)
    z = np.array([1e-10 + 1e-10j, 1e-5 - 2e-6j, -1e-8 + 3e-8j, 0.3 + 0.2j, -2 + 1j, 0j],
                 dtype)
    for name in ("log1p", "expm1"):
        got = getattr(ember, name)(ember.tensor(z)).numpy()
        want = getattr(torch, name)(torch.tensor(z)).numpy()
        for part in (np.real, np.imag):
            np.testing.assert_allclose(part(got), part(want), rtol=2e-6, atol=0)


def test_real_acosh_gradient_unchanged():
    for m in (ember, torch):
        x = m.tensor([-2.0, 3.0], requires_grad=True)
        m.acosh(x).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), [3 ** -0.5, 8 ** -0.5], rtol=1e-6)


def test_sign_refuses_complex_as_torch():
    for call in (lambda m: m.sign(m.tensor([1j])), lambda m: m.tensor([1j]).sign_()):
        with pytest.raises(NotImplementedError) as want:
            call(torch)
        with pytest.raises(NotImplementedError, match="torch.sgn instead") as got:
            call(ember)
        assert str(got.value) == str(want.value)


def test_the_real_kernels_still_refuse_complex():
    with pytest.raises(NotImplementedError, match="\"erf_vml_cpu\" not implemented for "
                                                  "'ComplexFloat'"):  # (PyTorch's words)
        ember.tensor([1j]).erf()


POWERS = {
    "complex_exponent_tensor": lambda m, a, b: a ** b,
    "complex_number_exponent": lambda m, a, b: a.pow(0.5 + 1j),
    "real_tensor_exponent": lambda m, a, b: m.pow(a, b.real),
    "real_base_complex_exponent": lambda m, a, b: m.pow(a.real.abs() + 0.5, b),
    "number_base": lambda m, a, b: m.pow(2.0, b),
    "complex_number_base": lambda m, a, b: m.pow(1 + 1j, b.real),
}


@pytest.mark.parametrize("name", sorted(POWERS))
def test_complex_powers(name):
    fn = POWERS[name]
    ae, at = ember.tensor(_Z, requires_grad=True), torch.tensor(_Z, requires_grad=True)
    be, bt = ember.tensor(_W, requires_grad=True), torch.tensor(_W, requires_grad=True)
    ye, yt = fn(ember, ae, be), fn(torch, at, bt)
    _close(ye, yt, 1e-12)
    _loss(ember, ye, ember.tensor(_W)).backward()
    _loss(torch, yt, torch.tensor(_W)).backward()
    for e, t in ((ae, at), (be, bt)):
        assert (e.grad is None) == (t.grad is None)
        if t.grad is not None:
            _close(e.grad, t.grad, 1e-10)


REDUCTIONS = {
    "sum": lambda m, z: z.sum(1), "mean": lambda m, z: z.mean(0),
    "prod": lambda m, z: z.prod(1), "prod_all": lambda m, z: z.prod(),
    "cumsum": lambda m, z: z.cumsum(1), "cumprod": lambda m, z: z.cumprod(1),
    "vdot": lambda m, z: m.vdot(z[0], z[1]), "dot": lambda m, z: m.dot(z[0], z[1]),
    "inner": lambda m, z: m.inner(z, z.flip(0)), "outer": lambda m, z: m.outer(z[0], z[1]),
    "kron": lambda m, z: m.kron(z, z[:, :2]), "mv": lambda m, z: m.mv(z, z[1]),
    "addmm": lambda m, z: m.addmm(z[:, :2], z, z.t(), beta=0.5j, alpha=2),
    "tensordot": lambda m, z: m.tensordot(z, z, ([1], [1])),
    "where_cat_stack": lambda m, z: m.stack([m.where(z.real > 0, z, 1j), m.cat([z[1], z[0]])
                                            .view(2, 3)]),
    "scatter_add": lambda m, z: z.scatter_add(1, m.tensor([[0, 0], [2, 1]]), z[:, :2] * 1j),
    "index_add": lambda m, z: z.index_add(1, m.tensor([2, 2]), z[:, :2], alpha=2),
    "masked_scatter": lambda m, z: z.masked_scatter(z.real > 0, z.flip(0) * 2),
    "diag_trace": lambda m, z: m.diag(z[0]) * z[:, :2].trace() + m.diag(z[:, 1:]).sum(),
    "var_std": lambda m, z: z.var(1) + z.std() * 1j + z.var(0, correction=0).sum(),
    "cross_vecdot": lambda m, z: m.linalg.cross(z[0], z[1]) * m.linalg.vecdot(z[0], z[1]),
    "matrix_power": lambda m, z: m.linalg.matrix_power(z[:, :2], 3) + m.linalg.matrix_power(
        z[:, 1:], -2),
    "multi_dot": lambda m, z: m.linalg.multi_dot([z, z.mT, z]),
    "addcmul_addcdiv": lambda m, z: m.addcmul(z, z, z.flip(1), value=0.5j) + m.addcdiv(
        z, z, z.flip(0) + 3, value=2),
    "lerp": lambda m, z: m.lerp(z, z.flip(0), 0.3) + m.lerp(z, z * 1j, 0.8),
    "dist": lambda m, z: m.dist(z[0], z[1] * 1j) + m.dist(z[0], z[1], 3),
    "scatters": lambda m, z: z.put(m.tensor([0, 0]), z[1, :2], accumulate=True) +
        m.diagonal_scatter(z, z[0, :2]),
    "block_diag_combinations": lambda m, z: m.block_diag(z, z[0]).sum(0) [:3] * m.cat(
        [m.cartesian_prod(z[0], z[1]), m.combinations(z[1])]).prod(1)[:3],
    "trapezoid": lambda m, z: m.trapezoid(z, dx=0.5) + m.cumulative_trapezoid(z, dim=0).sum(),
    # (shifted by the maximum real part, as PyTorch: exp of z * 40 overflows unshifted)
    "logsumexp": lambda m, z: m.logsumexp(z, 1) + m.logsumexp(z * 40, 0, keepdim=True).sum(),
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions_and_products(name):
    fn = REDUCTIONS[name]
    e, t = ember.tensor(_Z, requires_grad=True), torch.tensor(_Z, requires_grad=True)
    ye, yt = fn(ember, e), fn(torch, t)
    _close(ye, yt, 1e-12)
    (ember.view_as_real(ye * 1.5j) ** 2).sum().backward()
    (torch.view_as_real(yt * 1.5j) ** 2).sum().backward()
    _close(e.grad, t.grad, 1e-10)


def test_select_and_slice_scatter_refuse_complex_autograd_as_torch():
    for m in (ember, torch):
        z = m.tensor(_Z)
        assert m.select_scatter(z, z[0] * 2, 0, 1)[1].tolist() == (z[0] * 2).tolist()
        assert m.slice_scatter(z, z[:, :1] * 1j, 1, 0, 1)[:, 0].tolist() == \
            (z[:, 0] * 1j).tolist()
        zg = m.tensor(_Z, requires_grad=True)
        with pytest.raises(RuntimeError, match="^select_scatter does not support automatic "
                                               "differentiation for outputs with complex"):
            m.select_scatter(zg, zg[0], 0, 1)
        with pytest.raises(RuntimeError, match="^slice_scatter does not support automatic "
                                               "differentiation for outputs with complex"):
            m.slice_scatter(zg, zg[:, :1], 1, 0, 1)
        assert m.as_strided_scatter(z, z[0, :2] * 2, (2,), (1,))[0, 1] == z[0, 1] * 2


def _complex_reduces(m) -> tuple[list, list]:
    src = np.array([1 + 2j, 3 - 1j, -2 + 0.5j, 0.5 + 0.5j, 2j], dtype=np.complex64)
    idx, s, b = m.tensor([0, 1, 0, 2, 1]), m.tensor(src), m.tensor([1 + 1j, 2, -1j])
    values = [b.scatter_reduce(0, idx, s, red, include_self=inc).numpy()
              for red in ("sum", "prod", "mean") for inc in (True, False)]
    errors = []
    for call in (lambda: b.scatter_reduce(0, idx, s, "amax"),
                 lambda: b.scatter_reduce(0, idx, s, "amin", include_self=False),
                 lambda: b.index_reduce(0, idx, s, "prod"),
                 lambda: b.index_reduce(0, idx, s, "mean", include_self=False),
                 lambda: b.requires_grad_().scatter_reduce(0, idx, s, "prod")):
        with pytest.raises(RuntimeError) as info:  # (NotImplementedError included)
            call()
        errors.append((info.type, str(info.value)))
    return values, errors


def test_scatter_and_index_reduce_of_complex_as_torch():
    """scatter_reduce: sum, prod and mean of complex (no autograd, no amax/amin);
    index_reduce refuses complex, each with PyTorch's error."""
    (want, want_errors), (got, got_errors) = _complex_reduces(torch), _complex_reduces(ember)
    np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-6)
    assert got_errors == want_errors


def test_prod_gradient_with_zeros():
    z = _Z.copy()
    z[0, 1] = 0
    e, t = ember.tensor(z, requires_grad=True), torch.tensor(z, requires_grad=True)
    ember.view_as_real(e.prod(1)).sum().backward()
    torch.view_as_real(t.prod(1)).sum().backward()
    _close(e.grad, t.grad, 1e-12)


def test_dot_and_vdot_dtype_errors():
    a = np.array([1 + 1j, 2])
    for op in ("dot", "vdot"):
        with pytest.raises(RuntimeError) as want:
            getattr(torch, op)(torch.tensor(a), torch.tensor([1.0, 2.0], dtype=torch.float64))
        with pytest.raises(RuntimeError, match="ComplexDouble and Double") as got:
            getattr(ember, op)(ember.tensor(a), ember.tensor([1.0, 2.0], dtype=ember.float64))
        assert str(got.value).replace(" ", "") == str(want.value).replace(" ", "")


def test_isreal_isclose_allclose():
    z = np.array([1 + 0j, 2 - 1e-9j, 3 + 1j, complex(math.nan, 0)])
    for m in (ember, torch):
        assert m.isreal(m.tensor(z)).tolist() == [True, False, False, True]
    assert ember.isreal(ember.tensor([1.0, math.nan])).tolist() == [True, True]
    a, b = z, z + 1e-7j
    got = ember.isclose(ember.tensor(a), ember.tensor(b), equal_nan=True).tolist()
    assert got == torch.isclose(torch.tensor(a), torch.tensor(b), equal_nan=True).tolist()
    assert ember.allclose(ember.tensor(a[:3]), ember.tensor(b[:3])) is True
    assert ember.allclose(ember.tensor(a[:3]), ember.tensor(a[:3] + 1e-3)) is False


def test_nan_to_num_on_complex():
    inf, nan = math.inf, math.nan
    z = np.array([complex(nan, inf), complex(-inf, 1), complex(2, nan), 1 - 1j], np.complex64)
    for kwargs in ({}, {"nan": 1.5, "posinf": 9.0, "neginf": -9.0}):
        _close(ember.nan_to_num(ember.tensor(z), **kwargs),
               torch.nan_to_num(torch.tensor(z), **kwargs), 0)
    e = ember.tensor(z, requires_grad=True)
    with pytest.raises(RuntimeError, match="nan_to_num does not support automatic "
                                           "differentiation for outputs with complex dtype"):
        ember.nan_to_num(e)
    with ember.no_grad():
        assert ember.nan_to_num(e).dtype is ember.complex64


# -- Hypothesis: complex values with infinite and NaN parts -----------------------------

# Genuine library differences, triaged: PyTorch's CPU kernels are its own (vectorized
# exp/log/sin..., c10::complex's) and NumPy's are the C library's, so where a part is
# infinite or NaN the two disagree on the sign of an infinity, or one gives NaN where the
# other gives inf or 0, in C99 Annex G's corner cases. The comparison therefore checks
# finite inputs exactly (to tolerance) and, for non-finite inputs, only where both
# libraries' results are finite (where either is not, it is a corner case of that kind).
# (no subnormal parts: PyTorch itself answers them two ways, sgn(5e-324 + 0j) 0 or 1j by
# the tensor's length, its vectorised and scalar loops disagreeing)
_finite = st.floats(-3, 3, width=64, allow_subnormal=False)
_parts = _finite | st.sampled_from([math.nan, math.inf, -math.inf, 0.0, -0.0])

# near these ops' singular points (the poles of tan and atanh, 0 for log-like ops) the
# two libraries' roundings differ by more than a relative tolerance can allow
_SINGULAR = {"tan": "cos", "atanh": "one_minus_sq", "log2": "zero", "log10": "zero",
             "rsqrt": "zero", "log": "zero", "reciprocal": "zero", "log1p": "minus_one",
             "asinh": "i", "atan": "i", "acosh": "one", "asin": "one", "acos": "one"}


def _far_from_singularities(name, z):
    kind = _SINGULAR.get(name)
    if kind is None:
        return np.ones(z.shape, bool)
    with np.errstate(all="ignore"):
        d = {"cos": np.abs(np.cos(z)), "one_minus_sq": np.abs(1 - z * z), "zero": np.abs(z),
             "minus_one": np.abs(z + 1), "i": np.minimum(np.abs(z - 1j), np.abs(z + 1j)),
             "one": np.minimum(np.abs(z - 1), np.abs(z + 1))}[kind]
    return d > 1e-3


@settings(max_examples=40, deadline=None)
@given(name=st.sampled_from(UNARY), data=st.data())
def test_hypothesis_unary_matches_torch(name, data):
    n = data.draw(st.integers(1, 6))
    re = np.array(data.draw(st.lists(_parts, min_size=n, max_size=n)))
    im = np.array(data.draw(st.lists(_parts, min_size=n, max_size=n)))
    z = np.empty(n, np.complex128)  # (re + 1j * im would make inf * 0j a NaN real part)
    z.real, z.imag = re, im
    got = getattr(ember, name)(ember.tensor(z)).numpy()
    want = getattr(torch, name)(torch.tensor(z)).numpy()
    assert got.dtype == want.dtype
    finite_in = np.isfinite(z) & _far_from_singularities(name, z)
    both_finite = np.isfinite(got) & np.isfinite(want)
    # a finite input far from the op's singular points: the same finiteness and value
    assert (np.isfinite(got) == np.isfinite(want))[finite_in & (np.abs(want) < 1e200)].all()
    check = both_finite & (finite_in | ~np.isfinite(z))
    np.testing.assert_allclose(got[check], want[check], rtol=1e-9, atol=1e-300)
