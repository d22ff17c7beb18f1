"""ember.fft against torch.fft: values, result dtypes, `n`/`s`/`dim`/`norm`, errors, and
gradients (torch's backward on the same inputs, and gradcheck), then stft/istft."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
import ember.fft

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(0)
REAL = _rng.standard_normal((3, 4, 6)).astype(np.float32)
CPLX = (_rng.standard_normal((3, 4, 6)) + 1j * _rng.standard_normal((3, 4, 6))).astype(
    np.complex64)
ODD = _rng.standard_normal((2, 5, 7)).astype(np.float64)


def _np(t):
    t = t.detach()
    return t.resolve_conj().numpy() if hasattr(t, "resolve_conj") else t.numpy()


def close(e, t, tol=1e-4):
    assert e.dtype.name == str(t.dtype).split(".")[1], (e.dtype, t.dtype)
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(_np(e), _np(t), rtol=tol, atol=tol)


CASES = [
    ("fft", {}), ("fft", {"n": 9}), ("fft", {"n": 3, "dim": 1}), ("fft", {"norm": "ortho"}),
    ("fft", {"norm": "forward", "dim": 0}), ("ifft", {}), ("ifft", {"n": 8, "norm": "ortho"}),
    ("ifft", {"norm": "forward"}), ("fft2", {}), ("fft2", {"s": (3, 8)}),
    ("fft2", {"dim": (0, 2), "norm": "ortho"}), ("ifft2", {"s": (5, 4)}), ("fftn", {}),
    ("fftn", {"s": (2, 2)}), ("fftn", {"dim": (0, -1), "s": (-1, 5)}),
    ("ifftn", {"norm": "forward"}), ("rfft", {}), ("rfft", {"n": 7}),
    ("rfft", {"dim": 0, "norm": "ortho"}), ("irfft", {}), ("irfft", {"n": 9}),
    ("irfft", {"n": 4, "dim": 1, "norm": "forward"}), ("rfft2", {}), ("rfft2", {"s": (5, 5)}),
    ("irfft2", {}), ("irfft2", {"s": (4, 7)}), ("irfft2", {"s": (3, 6), "dim": (0, 1)}),
    ("rfftn", {}), ("rfftn", {"norm": "ortho", "dim": (1, 2)}), ("irfftn", {}),
    ("irfftn", {"s": (2, 3, 5)}), ("hfft", {}), ("hfft", {"n": 7, "norm": "ortho"}),
    ("ihfft", {}), ("ihfft", {"n": 9, "norm": "forward"}),
    ("hfft2", {}), ("hfft2", {"s": (3, 7), "norm": "ortho"}),
    ("hfftn", {"dim": (2, 0), "norm": "forward"}), ("ihfft2", {}),
    ("ihfft2", {"s": (4, 5), "norm": "ortho"}), ("ihfftn", {"dim": (2, 0)}),
]
_REAL_ONLY = {"rfft", "rfft2", "rfftn", "ihfft", "ihfft2", "ihfftn"}


def _inputs(name):
    yield REAL
    yield ODD
    if name not in _REAL_ONLY:
        yield CPLX


@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_values_and_dtypes_as_torch(name, kw):
    for x in _inputs(name):
        close(getattr(ember.fft, name)(ember.tensor(x), **kw),
              getattr(torch.fft, name)(torch.tensor(x), **kw))


@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_gradients_as_torch(name, kw):
    w = None
    for x in _inputs(name):
        e = ember.tensor(x, requires_grad=True)
        t = torch.tensor(x, requires_grad=True)
        ye, yt = getattr(ember.fft, name)(e, **kw), getattr(torch.fft, name)(t, **kw)
        if w is None or w.shape != tuple(yt.shape):
            w = _rng.standard_normal(tuple(yt.shape))
        # a real loss that weighs every output's parts differently
        if yt.is_complex():
            le = (ember.view_as_real(ye.resolve_conj()) * ember.tensor(np.stack([w, -w * 0.5], -1),
                                                         dtype=ye.real.dtype)).sum()
            lt = (torch.view_as_real(yt.resolve_conj()) * torch.tensor(np.stack([w, -w * 0.5], -1),
                                                         dtype=yt.real.dtype)).sum()
        else:
            le = (ye * ember.tensor(w, dtype=ye.dtype)).sum()
            lt = (yt * torch.tensor(w, dtype=yt.dtype)).sum()
        le.backward()
        lt.backward()
        close(e.grad, t.grad, 1e-3)


def test_integer_input_is_promoted():
    x = np.arange(8)
    close(ember.fft.fft(ember.tensor(x)), torch.fft.fft(torch.tensor(x)))
    close(ember.fft.rfft(ember.tensor(x)), torch.fft.rfft(torch.tensor(x)))


@pytest.mark.parametrize("call", [
    lambda m: m.fft.rfft(m.ones(4, dtype=m.cfloat)),
    lambda m: m.fft.fft(m.ones(4), n=0),
    lambda m: m.fft.irfft(m.ones(1, dtype=m.cfloat)),
    lambda m: m.fft.fft2(m.ones(3, 4), s=(2, 2, 2)),
    lambda m: m.fft.fftn(m.ones(3, 4), s=(2,), dim=(0, 1)),
    lambda m: m.fft.fftn(m.ones(3, 4), dim=(0, 0)),
    lambda m: m.fft.fft(m.ones(4), norm="bogus"),
    lambda m: m.fft.hfftn(m.ones(3, 4, dtype=m.cfloat), dim=()),
    lambda m: m.fft.ihfftn(m.ones(3, 4), dim=()),
    lambda m: m.fft.ihfft2(m.ones(3, 4, dtype=m.cfloat)),
    lambda m: m.fft.hfft2(m.ones(3, 4, dtype=m.cfloat), s=(0, 4)),
    lambda m: m.fft.hfft2(m.ones(3, 4, dtype=m.cfloat), s=(3,)),
])
def test_errors_as_torch(call):
    with pytest.raises((RuntimeError, ValueError)) as want:
        call(torch)
    with pytest.raises(type(want.value)) as got:
        call(ember)
    assert str(got.value) == str(want.value).split("\n")[0]


@pytest.mark.parametrize("n,d", [(1, 1.0), (8, 1.0), (7, 0.1), (10, 2.5)])
def test_frequencies(n, d):
    close(ember.fft.fftfreq(n, d), torch.fft.fftfreq(n, d), 1e-6)
    close(ember.fft.rfftfreq(n, d), torch.fft.rfftfreq(n, d), 1e-6)
    close(ember.fft.fftfreq(n, dtype=ember.float64), torch.fft.fftfreq(n, dtype=torch.float64))


@pytest.mark.parametrize("dim", [None, 0, (1, 2), -1])
def test_shifts(dim):
    x = np.arange(2 * 5 * 4).reshape(2, 5, 4)
    close(ember.fft.fftshift(ember.tensor(x), dim), torch.fft.fftshift(torch.tensor(x), dim))
    close(ember.fft.ifftshift(ember.tensor(x), dim), torch.fft.ifftshift(torch.tensor(x), dim))


def test_gradcheck_in_float64():
    from ember.autograd import gradcheck

    x = ember.tensor(ODD[0], requires_grad=True)
    assert gradcheck(lambda v: ember.fft.irfft(ember.fft.rfft(v, norm="ortho") * 2j, n=7).sum(
        ) + ember.fft.fft2(v).abs().sum(), (x,))


def test_fft_convolution_matches_direct():
    a, b = _rng.standard_normal(16), _rng.standard_normal(16)
    ea, eb = ember.tensor(a), ember.tensor(b)
    got = ember.fft.irfft(ember.fft.rfft(ea, n=32) * ember.fft.rfft(eb, n=32), n=32)[:31]
    np.testing.assert_allclose(got.numpy(), np.convolve(a, b), atol=1e-10)


@settings(max_examples=25, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3),
       norm=st.sampled_from([None, "backward", "ortho", "forward"]),
       name=st.sampled_from(["fft", "ifft", "rfft", "fftn", "rfftn", "ihfft"]))
def test_hypothesis_shapes_match_torch(shape, norm, name):
    x = _rng.standard_normal(shape).astype(np.float32)
    close(getattr(ember.fft, name)(ember.tensor(x), norm=norm),
          getattr(torch.fft, name)(torch.tensor(x), norm=norm))


def test_zero_dim_input_refused_as_torch():
    with pytest.raises(IndexError):
        ember.fft.fft(ember.tensor(1.0))


# -- stft, istft and the windows ------------------------------------------------------

STFT_CASES = [
    dict(n_fft=16, hop_length=4, window="hann"),
    dict(n_fft=16, hop_length=4, window="hann", normalized=True, onesided=False),
    dict(n_fft=12, hop_length=3, win_length=8, window="hamming"),
    dict(n_fft=8, hop_length=2, window="hamming", center=False),
    dict(n_fft=8, window=None, pad_mode="constant"),
]


def _window(lib, kw):
    kw = dict(kw)
    name = kw.pop("window")
    if name is not None:
        kw["window"] = getattr(lib, f"{name}_window")(kw.get("win_length", kw["n_fft"]))
    return kw


@pytest.mark.parametrize("kw", STFT_CASES, ids=[str(i) for i in range(len(STFT_CASES))])
def test_stft_istft_values_and_gradients_as_torch(kw):
    x = _rng.standard_normal((2, 50)).astype(np.float32)
    e, t = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    se = ember.stft(e, return_complex=True, **_window(ember, kw))
    st_ = torch.stft(t, return_complex=True, **_window(torch, kw))
    close(se, st_)
    ikw = {k: v for k, v in _window(ember, kw).items() if k != "pad_mode"}
    tkw = {k: v for k, v in _window(torch, kw).items() if k != "pad_mode"}
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ye, yt = ember.istft(se, length=50, **ikw), torch.istft(st_, length=50, **tkw)
    close(ye, yt)
    w = _rng.standard_normal(tuple(yt.shape))
    ((ye * ember.tensor(w, dtype=ember.float32)).sum() + se.abs().pow(2).mean()).backward()
    ((yt * torch.tensor(w, dtype=torch.float32)).sum() + st_.abs().pow(2).mean()).backward()
    close(e.grad, t.grad, 1e-3)


def test_audio_front_end_spectrogram():
    x = _rng.standard_normal(400).astype(np.float32)
    spec_e = ember.stft(ember.tensor(x), 64, 16, window=ember.hann_window(64),
                        return_complex=True).abs().pow(2)
    spec_t = torch.stft(torch.tensor(x), 64, 16, window=torch.hann_window(64),
                        return_complex=True).abs().pow(2)
    close(spec_e, spec_t, 1e-3)


def test_istft_errors_as_torch():
    with pytest.raises(RuntimeError, match="istft requires a complex-valued input tensor"):
        ember.istft(ember.zeros(9, 5), 16, 4)
    with pytest.raises(RuntimeError, match="window overlap add min"):
        ember.istft(ember.zeros(9, 5, dtype=ember.cfloat), 16, 4, window=ember.zeros(16))
    with pytest.raises(RuntimeError, match="Invalid window shape"):
        ember.istft(ember.zeros(9, 5, dtype=ember.cfloat), 16, 4, window=ember.ones(3))
    for lib in (torch, ember):  # a complex signal back needs the two-sided spectrum
        with pytest.raises(RuntimeError, match="^Cannot have onesided output if window or "
                                               "input is complex$"):
            lib.istft(lib.ones(9, 5, dtype=lib.cfloat), 16, 4, window=lib.hann_window(16),
                      return_complex=True)


@pytest.mark.parametrize("complex_input", [False, True])
@pytest.mark.parametrize("onesided", [None, False])
def test_stft_real_view_as_torch(complex_input, onesided):
    """The deprecated `return_complex=False`: the FFT's spectrum as (..., 2) real pairs, of
    real and complex signals alike (a complex one is always two-sided)."""
    if complex_input and onesided is None:
        onesided = False
    x = _rng.standard_normal((2, 40)).astype(np.complex64 if complex_input else np.float32)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e = ember.stft(ember.tensor(x), 8, 2, window=ember.hann_window(8), onesided=onesided,
                       return_complex=False)
        t = torch.stft(torch.tensor(x), 8, 2, window=torch.hann_window(8), onesided=onesided,
                       return_complex=False)
    assert e.shape == t.shape and e.dtype is ember.float32
    close(e, t, 1e-5)


@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window",
                                  "bartlett_window", "kaiser_window"])
@pytest.mark.parametrize("n", [0, 1, 2, 7, 16])
@pytest.mark.parametrize("periodic", [True, False])
def test_windows_as_torch(name, n, periodic):
    close(getattr(ember, name)(n, periodic), getattr(torch, name)(n, periodic), 1e-6)
    close(getattr(ember, name)(n, periodic, dtype=ember.float64),
          getattr(torch, name)(n, periodic, dtype=torch.float64), 1e-12)


def test_kaiser_window_beta_and_errors_as_torch():
    for n, periodic, beta in ((9, False, 5.0), (16, True, 0.5), (5, True, 30.0)):
        close(ember.kaiser_window(n, periodic, beta), torch.kaiser_window(n, periodic, beta),
              1e-6)
    w = ember.kaiser_window(4, requires_grad=True)
    assert w.requires_grad and w.is_leaf and w.dtype is ember.float32
    with pytest.raises(RuntimeError, match="kaiser_window requires non-negative window_length"):
        ember.kaiser_window(-1)
    with pytest.raises(RuntimeError, match="kaiser_window expects floating point dtypes"):
        ember.kaiser_window(4, dtype=ember.int64)


def test_blackman_window_is_torchs_to_the_bit():
    """The terms summed in PyTorch's order: the float32 zeros at the ends are its rounding
    (-2.98e-08), which a printed window shows."""
    for periodic in (True, False):
        np.testing.assert_array_equal(ember.blackman_window(8, periodic).numpy(),
                                      torch.blackman_window(8, periodic).numpy())


@pytest.mark.parametrize("name, kwargs", [
    ("hann", {}), ("hamming", {}), ("blackman", {}), ("bartlett", {}), ("nuttall", {}),
    ("kaiser", {"beta": 8.0}), ("gaussian", {"std": 2.0}), ("exponential", {"tau": 2.0}),
    ("cosine", {}), ("general_cosine", {"a": [0.5, 0.3, 0.2]}),
    ("general_hamming", {"alpha": 0.6})])
@pytest.mark.parametrize("M", [0, 1, 2, 7, 8])
@pytest.mark.parametrize("sym", [True, False])
def test_signal_windows_as_torch(name, kwargs, M, sym):
    """`torch.signal.windows`: SciPy's windows, computed (and rounded) as PyTorch's."""
    for dtype in ("float32", "float64"):
        e = getattr(ember.signal.windows, name)(M, sym=sym, dtype=getattr(ember, dtype),
                                                **kwargs)
        t = getattr(torch.signal.windows, name)(M, sym=sym, dtype=getattr(torch, dtype),
                                                **kwargs)
        assert e.dtype is getattr(ember, dtype) and tuple(e.shape) == tuple(t.shape)
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("call", [
    "W.hann(-1)", "W.hann(4, dtype=L.float16)", "W.kaiser(4, beta=-1.0)",
    "W.gaussian(4, std=0.0)", "W.exponential(4, tau=0.0)", "W.exponential(4, center=1.0)",
    "W.general_cosine(5, a=[])", "W.general_cosine(5, a=3)"])
def test_signal_windows_errors_as_torch(call):
    errors = []
    for lib in (torch, ember):
        with pytest.raises((ValueError, TypeError)) as err:
            eval(call, {"W": lib.signal.windows, "L": lib})
        errors.append((type(err.value), str(err.value).replace("ember.", "torch.")))
    assert errors[1] == errors[0]
