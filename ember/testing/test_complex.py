"""Complex tensors on the device under test, against NumPy: the complex primitives
(`view_as_real`, `conj_physical`, the three FFT transforms) and the ops built on them,
the promotion of arithmetic, the transcendental functions, reductions and products, the
factorizations (`eig` among them), and the refusal of an op not declared complex. Skipped on a
backend that holds no complex dtype; such a backend must refuse to make one, naming the
device and the dtype."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.fft
from ember.testing import support as S

COVERS = {"view_as_real", "conj_physical", "_fft_c2c", "_fft_r2c", "_fft_c2r",
          "view_as_complex", "real", "imag", "conj", "resolve_conj", "is_conj", "is_complex",
          "angle", "polar", "complex",
          "fft_fft", "fft_ifft", "fft_fft2", "fft_ifft2", "fft_fftn", "fft_ifftn", "fft_rfft",
          "fft_irfft", "fft_rfft2", "fft_irfft2", "fft_rfftn", "fft_irfftn", "fft_hfft",
          "fft_ihfft", "fft_hfft2", "fft_ihfft2", "fft_hfftn", "fft_ihfftn", "fft_fftfreq",
          "fft_rfftfreq", "fft_fftshift", "fft_ifftshift",
          # the windows spectral analysis multiplies frames by (real, on every device)
          "hann_window", "hamming_window", "blackman_window", "bartlett_window",
          "kaiser_window",
          "isreal", "_linalg_eig", "linalg_eig", "linalg_eigvals", "cfloat", "cdouble"}

_RNG = np.random.default_rng(7)
_Z = (_RNG.standard_normal((3, 4)) + 1j * _RNG.standard_normal((3, 4))).astype(np.complex64)
_X = _RNG.standard_normal((3, 6)).astype(np.float32)
_TOL = {"rtol": 1e-4, "atol": 1e-5}


@pytest.fixture
def cdevice(device: ember.device) -> ember.device:
    if not S.holds(device, ember.complex64):
        pytest.skip(f"{device} holds no complex dtype")
    return device


def test_a_backend_without_complex_refuses_to_make_one(device: ember.device) -> None:
    if S.holds(device, ember.complex64):
        pytest.skip(f"{device} holds complex dtypes")
    with pytest.raises(RuntimeError, match=f"device {device}.*complex64"):
        ember.zeros(2, dtype=ember.complex64, device=device)
    with pytest.raises(RuntimeError, match="complex64"):
        ember.tensor([1j]).to(device)


def test_parts_and_conjugate(cdevice: ember.device) -> None:
    z = S.on(cdevice, _Z)
    S.assert_matches(ember.view_as_real(z), np.stack([_Z.real, _Z.imag], -1), cdevice,
                     dtype=ember.float32)
    S.assert_matches(z.real, _Z.real, cdevice, dtype=ember.float32)
    S.assert_matches(z.imag, _Z.imag, cdevice, dtype=ember.float32)
    S.assert_matches(ember.conj_physical(z), np.conj(_Z), cdevice, dtype=ember.complex64)
    S.assert_matches(z.conj().resolve_conj(), np.conj(_Z), cdevice, dtype=ember.complex64)
    assert ember.is_complex(z) and ember.is_conj(z.conj())
    S.assert_matches(z.abs(), np.abs(_Z), cdevice, dtype=ember.float32, **_TOL)
    S.assert_matches(z.angle(), np.angle(_Z), cdevice, dtype=ember.float32, **_TOL)
    S.assert_matches(ember.view_as_real(z.t()), np.stack([_Z.T.real, _Z.T.imag], -1), cdevice)
    z.imag.mul_(2)  # a view: the write reaches z
    S.assert_matches(z, _Z.real + 2j * _Z.imag, cdevice, **_TOL)


def test_made_from_reals(cdevice: ember.device) -> None:
    a, b = S.on(cdevice, _X), S.on(cdevice, _X[::-1].copy())
    want = _X + 1j * _X[::-1]
    S.assert_matches(ember.complex(a, b), want, cdevice, dtype=ember.complex64)
    S.assert_matches(ember.view_as_complex(ember.stack([a, b], -1)), want, cdevice)
    S.assert_matches(ember.polar(a.abs(), b), np.abs(_X) * np.exp(1j * _X[::-1]), cdevice,
                     **_TOL)
    S.assert_matches(a.cfloat(), _X.astype(np.complex64), cdevice, dtype=ember.complex64)
    if S.holds(cdevice, ember.complex128):
        S.assert_matches(a.cdouble(), _X.astype(np.complex128), cdevice,
                         dtype=ember.complex128)


def test_arithmetic_and_promotion(cdevice: ember.device) -> None:
    z, x = S.on(cdevice, _Z), S.on(cdevice, _X[:, :4].astype(np.float64))
    out = z * x + 1j
    S.assert_matches(out, _Z * _X[:, :4].astype(np.float64) + 1j, cdevice,
                     dtype=ember.complex128, **_TOL)
    S.assert_matches(z @ z.t(), _Z @ _Z.T, cdevice, dtype=ember.complex64, **_TOL)
    S.assert_matches(z.sum(1), _Z.sum(1), cdevice, **_TOL)
    with pytest.raises(NotImplementedError, match=f'"clamp_{cdevice.type}" not implemented '
                                                  "for 'ComplexFloat'"):
        z.clamp(0, 1)


_TRANSFORMS = [
    ("fft", np.fft.fft, {"n": 5}), ("ifft", np.fft.ifft, {"norm": "ortho"}),
    ("fft2", np.fft.fft2, {}), ("ifft2", np.fft.ifft2, {"norm": "forward"}),
    ("fftn", np.fft.fftn, {"s": (2, 8)}), ("ifftn", np.fft.ifftn, {}),
    ("rfft", np.fft.rfft, {}), ("rfft2", np.fft.rfft2, {"norm": "ortho"}),
    ("rfftn", np.fft.rfftn, {}), ("ihfft", np.fft.ihfft, {"n": 7}),
]


@pytest.mark.parametrize("name,ref,kw", _TRANSFORMS, ids=[t[0] for t in _TRANSFORMS])
def test_transforms_match_numpy(cdevice: ember.device, name: str, ref, kw: dict) -> None:
    out = getattr(ember.fft, name)(S.on(cdevice, _X), **kw)
    want = ref(_X.astype(np.float64), **kw)
    S.assert_matches(out, want, cdevice, dtype=ember.complex64, **_TOL)


@pytest.mark.parametrize("name,ref,kw", [("irfft", np.fft.irfft, {"n": 9}),
                                         ("irfft2", np.fft.irfft2, {}),
                                         ("irfftn", np.fft.irfftn, {"s": (3, 5)}),
                                         ("hfft", np.fft.hfft, {"norm": "ortho"})],
                         ids=["irfft", "irfft2", "irfftn", "hfft"])
def test_inverse_real_transforms_match_numpy(cdevice: ember.device, name: str, ref,
                                             kw: dict) -> None:
    out = getattr(ember.fft, name)(S.on(cdevice, _Z), **kw)
    S.assert_matches(out, ref(_Z.astype(np.complex128), **kw), cdevice, dtype=ember.float32,
                     **_TOL)


def test_hermitian_transforms_match_numpy(cdevice: ember.device) -> None:
    """hfft2/hfftn are irfftn of the conjugate, unnormalized; ihfft2/ihfftn the
    conjugate of rfftn, normalized by the points transformed."""
    x, z = _X.astype(np.float64), _Z.astype(np.complex128)
    S.assert_matches(ember.fft.ihfft2(S.on(cdevice, _X)), np.conj(np.fft.rfft2(x)) / x.size,
                     cdevice, dtype=ember.complex64, **_TOL)
    S.assert_matches(ember.fft.ihfftn(S.on(cdevice, _X), dim=0),
                     np.conj(np.fft.rfft(x, axis=0)) / x.shape[0], cdevice, **_TOL)
    out = np.fft.irfft2(np.conj(z), s=(z.shape[0], 5))
    S.assert_matches(ember.fft.hfft2(S.on(cdevice, _Z), s=(z.shape[0], 5)), out * out.size,
                     cdevice, dtype=ember.float32, **_TOL)
    S.assert_matches(ember.fft.hfftn(S.on(cdevice, _Z), norm="forward"),
                     np.fft.irfftn(np.conj(z)), cdevice, dtype=ember.float32, **_TOL)


def test_frequencies_and_shifts(device: ember.device) -> None:
    S.assert_matches(ember.fft.fftfreq(7, 0.5, device=device), np.fft.fftfreq(7, 0.5), device)
    S.assert_matches(ember.fft.rfftfreq(8, device=device), np.fft.rfftfreq(8), device)
    x = np.arange(12.0).reshape(3, 4)
    S.assert_matches(ember.fft.fftshift(S.on(device, x)), np.fft.fftshift(x), device)
    S.assert_matches(ember.fft.ifftshift(S.on(device, x), 1), np.fft.ifftshift(x, 1), device)


@pytest.mark.parametrize("n", [1, 2, 9])
def test_windows_match_numpy(device: ember.device, n: int) -> None:
    for name, ref in (("hann_window", np.hanning), ("hamming_window", np.hamming),
                      ("blackman_window", np.blackman), ("bartlett_window", np.bartlett)):
        fn = getattr(ember, name)
        S.assert_matches(fn(n, periodic=False, device=device), ref(n), device,
                         dtype=ember.float32, **_TOL)
        S.assert_matches(fn(n, device=device), ref(n + 1)[:-1] if n > 1 else np.ones(n),
                         device, dtype=ember.float32, **_TOL)
    for beta in (0.0, 5.0, 12.0):
        S.assert_matches(ember.kaiser_window(n, periodic=False, beta=beta, device=device),
                         np.kaiser(n, beta), device, dtype=ember.float32, **_TOL)


def test_stft_and_istft_round_trip(cdevice: ember.device) -> None:
    x = S.on(cdevice, _RNG.standard_normal((2, 64)).astype(np.float32))
    w = ember.hann_window(16, device=cdevice)
    spec = ember.stft(x, 16, 4, window=w, return_complex=True)
    frames = np.lib.stride_tricks.sliding_window_view(
        np.pad(S.host(x), ((0, 0), (8, 8)), mode="reflect"), 16, axis=1)[:, ::4]
    want = np.fft.rfft(frames * S.host(w), axis=-1).transpose(0, 2, 1)
    S.assert_matches(spec, want, cdevice, dtype=ember.complex64, **_TOL)
    back = ember.istft(spec, 16, 4, window=w, length=64)
    S.assert_matches(back, S.host(x), cdevice, dtype=ember.float32, rtol=1e-4, atol=1e-4)


# off every branch cut of these functions (the principal values agree there)
_W = np.array([[0.3 + 0.4j, -0.7 + 0.2j, 0.5 - 0.6j], [-0.2 - 0.9j, 1.3 + 0.5j, -1.1 - 0.4j]],
              np.complex64)
_NUMPY = {"sin": np.sin, "cos": np.cos, "tan": np.tan, "sinh": np.sinh, "cosh": np.cosh,
          "tanh": np.tanh, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
          "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
          "sigmoid": lambda z: 1 / (1 + np.exp(-z)), "log2": np.log2, "log10": np.log10,
          "log1p": np.log1p, "expm1": np.expm1, "rsqrt": lambda z: 1 / np.sqrt(z),
          "exp2": np.exp2, "square": np.square}


@pytest.mark.parametrize("name", sorted(_NUMPY))
def test_transcendental_functions_match_numpy(cdevice: ember.device, name: str) -> None:
    out = getattr(ember, name)(S.on(cdevice, _W))
    S.assert_matches(out, _NUMPY[name](_W.astype(np.complex128)), cdevice,
                     dtype=ember.complex64, **_TOL)


def test_reductions_products_and_predicates(cdevice: ember.device) -> None:
    z, w = S.on(cdevice, _W), _W.astype(np.complex128)
    S.assert_matches(z.prod(1), w.prod(1), cdevice, dtype=ember.complex64, **_TOL)
    S.assert_matches(z.cumsum(1), w.cumsum(1), cdevice, dtype=ember.complex64, **_TOL)
    S.assert_matches(z.cumprod(1), w.cumprod(1), cdevice, **_TOL)
    S.assert_matches(ember.vdot(z[0], z[1]), np.vdot(w[0], w[1]), cdevice, **_TOL)
    S.assert_matches(ember.dot(z[0], z[1]), np.dot(w[0], w[1]), cdevice, **_TOL)
    S.assert_matches(ember.outer(z[0], z[1]), np.outer(w[0], w[1]), cdevice, **_TOL)
    S.assert_matches(ember.kron(z, z[:1]), np.kron(w, w[:1]), cdevice, **_TOL)
    S.assert_matches(ember.isreal(z.real * (1 + 0j) + z), np.isreal(w.real + w), cdevice,
                     dtype=ember.bool)
    with pytest.raises(NotImplementedError, match="torch.sgn instead"):
        z.sign()


def test_factorizations_match_numpy(cdevice: ember.device) -> None:
    a = (_RNG.standard_normal((3, 3)) + 1j * _RNG.standard_normal((3, 3))).astype(np.complex64)
    A, a64 = S.on(cdevice, a), a.astype(np.complex128)
    tol = {"rtol": 1e-3, "atol": 1e-4}
    S.assert_matches(ember.linalg.inv(A), np.linalg.inv(a64), cdevice, dtype=ember.complex64,
                     **tol)
    S.assert_matches(ember.linalg.det(A), np.linalg.det(a64), cdevice, **tol)
    S.assert_matches(ember.linalg.svdvals(A), np.linalg.svd(a64, compute_uv=False), cdevice,
                     dtype=ember.float32, **tol)
    h = a64 @ a64.conj().T + 3 * np.eye(3)
    H = S.on(cdevice, h.astype(np.complex64))
    S.assert_matches(ember.linalg.eigvalsh(H), np.linalg.eigvalsh(h), cdevice,
                     dtype=ember.float32, **tol)
    L = ember.linalg.cholesky(H)
    S.assert_matches(L @ L.mH, h, cdevice, **tol)
    values, vectors = ember.linalg.eig(A)
    assert values.dtype is ember.complex64 and vectors.dtype is ember.complex64
    S.assert_matches(A @ vectors, vectors * values.unsqueeze(0), cdevice, **tol)
    S.assert_matches(ember.linalg.eigvals(S.on(cdevice, np.diag([3.0, 1.0]).astype(np.float32))),
                     np.array([3.0, 1.0]), cdevice, dtype=ember.complex64)
