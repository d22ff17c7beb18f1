"""What the programs of set Z (library tours: torch.distributions, torch.linalg, torch.fft,
RNG and reproducibility) needed of ember, checked against PyTorch: values, random streams,
layouts, errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def test_wishart_rsample_keeps_pytorchs_random_stream():
    """Wishart.rsample redraws the samples PyTorch's (inverted) singularity check flags and
    warns, so its draws and every later draw follow PyTorch's stream."""
    got = []
    for lib in (ember, torch):
        lib.manual_seed(0)
        w = lib.distributions.Wishart(lib.tensor(4.0), covariance_matrix=lib.eye(2))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            sample = w.sample((2,))
        got.append((sample.numpy(), lib.rand(3).numpy(),
                    [str(c.message) for c in caught]))
    np.testing.assert_allclose(got[0][0], got[1][0], rtol=1e-5)
    np.testing.assert_array_equal(got[0][1], got[1][1])
    assert got[0][2] == got[1][2] == ["Singular sample detected."]


def _spd(lib, batch):
    """The same well-conditioned matrices (and SPD ones) in ember and torch."""
    a = np.random.default_rng(0).standard_normal(batch + (3, 3)).astype(np.float32)
    a = a + 3 * np.eye(3, dtype=np.float32)
    return lib.tensor(a), lib.tensor(a @ np.swapaxes(a, -1, -2) + np.eye(3, dtype=np.float32))


_LAPACK_RESULTS = {
    "solve": lambda L, A, S: L.linalg.solve(A, A[..., :2]),
    "solve vector": lambda L, A, S: L.linalg.solve(A, A[..., 0]),
    "solve left=False": lambda L, A, S: L.linalg.solve(A, A[..., :2, :], left=False),
    "inv_ex": lambda L, A, S: L.linalg.inv_ex(A),
    "cholesky_ex": lambda L, A, S: L.linalg.cholesky_ex(S, upper=True),
    "cholesky_solve": lambda L, A, S: L.cholesky_solve(A[..., :2], L.linalg.cholesky(S)),
    "cholesky_inverse": lambda L, A, S: L.cholesky_inverse(L.linalg.cholesky(S)),
    "qr": lambda L, A, S: L.linalg.qr(A[..., :2]),
    "qr complete": lambda L, A, S: L.linalg.qr(A[..., :2], mode="complete"),
    "geqrf": lambda L, A, S: L.geqrf(A),
    "householder_product": lambda L, A, S: L.linalg.householder_product(*L.geqrf(A)),
    "ormqr": lambda L, A, S: L.ormqr(*L.geqrf(A), A[..., :2]),
    "svd": lambda L, A, S: L.linalg.svd(A[..., :2, :], full_matrices=False),
    "torch.svd": lambda L, A, S: L.svd(A),
    "eigh": lambda L, A, S: L.linalg.eigh(S),
    "eig": lambda L, A, S: L.linalg.eig(A),
    "lu_factor_ex": lambda L, A, S: L.linalg.lu_factor_ex(A),
    "lu_solve": lambda L, A, S: L.linalg.lu_solve(*L.linalg.lu_factor(A), A[..., :1]),
    "lu": lambda L, A, S: L.linalg.lu(A),
    "ldl_factor": lambda L, A, S: L.linalg.ldl_factor(S),
    "solve_triangular": lambda L, A, S: L.linalg.solve_triangular(A.triu(), A[..., :2],
                                                                  upper=True),
    "solve_triangular left=False": lambda L, A, S: L.linalg.solve_triangular(
        A.triu(), A[..., :2, :], upper=True, left=False),
    "slogdet": lambda L, A, S: L.linalg.slogdet(A),
    "lstsq tall": lambda L, A, S: L.linalg.lstsq(A[..., :2], A[..., :1], driver="gelsd"),
    "lstsq wide": lambda L, A, S: L.linalg.lstsq(A[..., :2, :], A[..., :2, :1]),
    "pinv": lambda L, A, S: L.linalg.pinv(A),
}


@pytest.mark.parametrize("batch", [(), (2,)], ids=["single", "batched"])
@pytest.mark.parametrize("name", list(_LAPACK_RESULTS))
def test_linalg_results_have_pytorchs_strides(name, batch):
    """PyTorch's LAPACK-backed results are column-major (Fortran) matrices in a dense batch
    (lstsq's solution: the top of its column-major right-hand side); ember's match, size-1
    dimensions' strides included, and the values agree."""
    got = []
    for lib in (ember, torch):
        out = _LAPACK_RESULTS[name](lib, *_spd(lib, batch))
        outs = (out,) if isinstance(out, lib.Tensor) else tuple(out)
        got.append([(tuple(t.shape), t.stride()) for t in outs])
        if name not in ("eig", "qr", "qr complete", "svd", "torch.svd", "householder_product"):
            got[-1].append([t.abs().numpy().round(3).tolist() for t in outs if t.numel()])
    assert got[0] == got[1]


def test_linalg_result_layout_keeps_the_node_name_and_gradient():
    """The column-major copy shows the op's node, and gradients flow through it."""
    got = []
    for lib in (ember, torch):
        a = lib.tensor([[4.0, 1.0], [1.0, 3.0]], requires_grad=True)
        inv = lib.linalg.inv(a)
        x = lib.linalg.solve(a, lib.ones(2, 1))
        (inv.sum() + x.sum()).backward()
        got.append((type(inv.grad_fn).__name__, type(x.grad_fn).__name__,
                    a.grad.numpy().round(5).tolist()))
    assert got[0] == got[1]


@pytest.mark.parametrize("fn", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2",
                                "rfft2", "irfft2", "fftn", "rfftn", "irfftn"])
def test_fft_results_have_pytorchs_strides(fn):
    """PyTorch's CPU FFT lays its result out with the dimensions not transformed outermost
    (by the input's strides) and the transformed ones innermost, in the order it takes
    them: a transform along dimension 0 is not contiguous. ember's match, values too."""
    a = np.random.default_rng(0).standard_normal((4, 6, 5)).astype(np.float32)
    got = []
    for lib in (ember, torch):
        x = lib.tensor(a)
        if fn in ("irfft", "hfft", "irfft2", "irfftn"):
            x = x.to(lib.complex64)
        f = getattr(lib.fft, fn)
        outs = [f(x, dim=0), f(x.transpose(0, 2), dim=-1)] if fn[-1] != "2" and fn[-1] != "n" \
            else [f(x, dim=(0, 1)), f(x, dim=(2, 0)), f(x.permute(1, 2, 0))]
        got.append([(t.stride(), t.is_contiguous(), t.abs().sum().item()) for t in outs])
    for (e_stride, e_cont, e_sum), (t_stride, t_cont, t_sum) in zip(*got):
        assert (e_stride, e_cont) == (t_stride, t_cont)
        assert e_sum == pytest.approx(t_sum, rel=1e-4)


def test_fft_layout_keeps_the_node_name_and_gradient():
    got = []
    for lib in (ember, torch):
        x = lib.tensor(np.arange(12.0, dtype=np.float32).reshape(4, 3), requires_grad=True)
        y = lib.fft.rfft(x, dim=0)
        y.abs().sum().backward()
        got.append((y.grad_fn.name(), y.stride(), x.grad.numpy().round(4).tolist()))
    assert got[0] == got[1]


def test_fork_rng_restores_the_initial_seed():
    """set_rng_state (and so fork_rng) restores the default generator's seed with its
    state: torch.initial_seed() reads the default generator."""
    got = []
    for lib in (ember, torch):
        lib.manual_seed(7)
        with lib.random.fork_rng():
            lib.manual_seed(999)
            inner = lib.initial_seed()
        after_fork = lib.initial_seed()
        lib.default_generator.manual_seed(5)
        got.append((inner, after_fork, lib.initial_seed()))
    assert got[0] == got[1] == (999, 7, 5)


def test_sparse_init_draws_its_zero_rows_from_the_global_generator():
    """nn.init.sparse_(generator=g): the values from g, the zeros' rows from randperm on
    the global generator (PyTorch's code passes no generator there)."""
    got = []
    for lib in (ember, torch):
        lib.manual_seed(0)
        g = lib.Generator().manual_seed(3)
        w = lib.nn.init.sparse_(lib.empty(4, 3), sparsity=0.5, generator=g)
        got.append((w.numpy().tolist(), lib.rand(2, generator=g).tolist(), lib.rand(2).tolist()))
    assert got[0] == got[1]


@pytest.mark.parametrize("call", [
    lambda lib: lib.bernoulli(lib.tensor([0.2, 1.5])),
    lambda lib: lib.bernoulli(lib.tensor([float("nan")])),
    lambda lib: lib.empty(3).bernoulli_(lib.tensor([-0.5, 0.0, 1.0])),
    lambda lib: lib.empty(3, dtype=lib.uint8).random_(-1, 5),
    lambda lib: lib.empty(3, dtype=lib.int8).random_(300),
    lambda lib: lib.empty(3, dtype=lib.int32).random_(0, 2 ** 40),
    lambda lib: lib.empty(3, dtype=lib.bool).random_(0, 3),
    lambda lib: lib.empty(3, dtype=lib.float16).random_(0, 2 ** 20),
    lambda lib: lib.empty(2).normal_(0.0, -1.0),
    lambda lib: lib.normal(lib.zeros(2), -1e-7),
])
def test_sampler_argument_errors_match(call):
    """Out-of-range probabilities, random_ bounds beyond the dtype, a negative std: the
    same RuntimeError, word for word (a C++ double printed as C++ prints it)."""
    messages = []
    for lib in (ember, torch):
        with pytest.raises(RuntimeError) as info:
            call(lib)
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_random_within_the_dtype_bounds_still_draws():
    got = []
    for lib in (ember, torch):
        lib.manual_seed(0)
        got.append((lib.empty(4, dtype=lib.uint8).random_(0, 256).tolist(),
                    lib.empty(3, dtype=lib.int64).random_(-1, 2 ** 40).tolist()))
    assert got[0] == got[1]


_NODE_NAMES = {
    "householder_product": lambda L, x, t: L.linalg.householder_product(x, t),
    "orgqr": lambda L, x, t: L.orgqr(x, t),
    "ormqr": lambda L, x, t: L.ormqr(x, t, L.ones(3, 2)),
    "solve_triangular left=False": lambda L, x, t: L.linalg.solve_triangular(
        x[:2], L.ones(1, 2), upper=True, left=False),
    "triangular_solve": lambda L, x, t: L.triangular_solve(L.ones(2, 1), x[:2]).solution,
    "ifft of real": lambda L, x, t: L.fft.ifft(x, dim=0),
    "conj": lambda L, x, t: L.complex(x, x).conj(),
}


@pytest.mark.parametrize("name", list(_NODE_NAMES))
def test_decomposed_linalg_and_conj_results_show_pytorchs_node(name):
    got = []
    for lib in (ember, torch):
        x = lib.tensor([[4.0, 1.0], [1.0, 3.0], [0.5, 0.2]], requires_grad=True)
        t = lib.tensor([1.2, 0.8], requires_grad=True)
        got.append(_NODE_NAMES[name](lib, x, t).grad_fn.name())
    assert got[0] == got[1]


@pytest.mark.parametrize("kwargs", [
    {"win_length": 20}, {"hop_length": 0}, {"n_fft": 18}, {"onesided": False},
    {"window": "short"}, {"hop_length": 16, "window": "hann", "center": False},
])
def test_istft_errors_name_the_call_as_pytorch(kwargs):
    """istft's argument errors start with the call as PyTorch's C++ prints it (the complex
    input's type and shape, every argument), word for word."""
    signal = np.sin(np.arange(64, dtype=np.float32))
    messages = []
    for lib in (ember, torch):
        spec = lib.stft(lib.tensor(signal), 16, window=lib.hann_window(16), return_complex=True)
        args = dict(kwargs)
        n_fft = args.pop("n_fft", 16)
        if args.get("window") == "short":
            args["window"] = lib.ones(3)
        elif args.get("window") == "hann":
            args["window"] = lib.hann_window(16)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(RuntimeError) as info:
                lib.istft(spec, n_fft, **args)
        messages.append(str(info.value))
    # (ember's legacy type names say `ember.` where the torch alias is not in use)
    assert messages[0].replace("ember.FloatTensor", "torch.FloatTensor") == messages[1]


@pytest.mark.parametrize("call", [
    lambda lib: lib.tensor(2 ** 63),
    lambda lib: lib.tensor([[1], [-2 ** 63 - 1]]),
    lambda lib: lib.tensor([2 ** 63], dtype=lib.int32),
    lambda lib: lib.tensor([2 ** 64], dtype=lib.uint64),
    lambda lib: lib.tensor([300], dtype=lib.uint8),
])
def test_tensor_of_too_large_python_ints_fails_as_pytorch(call):
    """A Python int beyond int64 fails as PyTorch unpacks it (ValueError; OverflowError
    for uint64), before the dtype's own range check (RuntimeError) -- e.g. a DataLoader
    collating torch.initial_seed() of an unseeded process."""
    errors = []
    for lib in (ember, torch):
        with pytest.raises(Exception) as info:
            call(lib)
        errors.append((type(info.value), str(info.value)))
    assert errors[0] == errors[1]


_CONJ_BIT = {
    "conj": lambda z: z.conj(),
    "clone": lambda z: z.conj().clone(),
    "index": lambda z: z.conj()[0],
    "view": lambda z: z.conj().view(2),
    "product": lambda z: z.conj() * 1,
    "conj of conj": lambda z: z.conj().conj(),
    "resolve_conj": lambda z: z.conj().resolve_conj(),
    "contiguous": lambda z: z.conj().contiguous(),
    "detach": lambda z: z.conj().detach(),
    "mH": lambda z: z.unsqueeze(0).mH,
    "conj_physical": lambda z: z.conj_physical(),
    "real": lambda z: z.conj().real,
    "real tensor": lambda z: z.real.conj(),
}


@pytest.mark.parametrize("name", list(_CONJ_BIT))
def test_is_conj_follows_pytorchs_conjugate_bit(name):
    """conj() results and their views report the conjugate bit; new results, clones,
    resolve_conj and conj_physical do not. Values are the conjugates either way."""
    got = []
    for lib in (ember, torch):
        out = _CONJ_BIT[name](lib.tensor([1 + 2j, 3 - 1j]))
        got.append((out.is_conj(), lib.is_conj(out), out.resolve_conj().tolist()))
    assert got[0] == got[1]


@pytest.mark.parametrize("fresh", [True, False], ids=["empty out", "fitting out"])
def test_linalg_out_takes_the_result_layout_when_resized(fresh):
    """An empty `out=` is resized with the result's (column-major) strides; an `out` of
    the right shape keeps its own, as in PyTorch."""
    a = np.array([[4.0, 1.0], [1.0, 3.0]], dtype=np.float32)
    got = []
    for lib in (ember, torch):
        out = lib.empty(0) if fresh else lib.empty(2, 2)
        result = lib.linalg.inv(lib.tensor(a), out=out)
        got.append((out.stride(), result.stride(), out.numpy().round(5).tolist()))
    assert got[0] == got[1]


def test_standard_gamma_shows_atens_node_and_gradient():
    got = []
    for lib in (ember, torch):
        lib.manual_seed(0)
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = lib._standard_gamma(x)
        y.sum().backward()
        got.append((type(y.grad_fn).__name__, y.grad_fn.name(), y.tolist(),
                    x.grad.numpy().round(4).tolist()))
    assert got[0] == got[1]


@pytest.mark.parametrize("call", [
    lambda lib: lib.manual_seed(2 ** 64),
    lambda lib: lib.Generator().manual_seed(-2 ** 63 - 1),
    lambda lib: lib.set_rng_state(lib.zeros(3, dtype=lib.uint8)),
    lambda lib: lib.set_rng_state(lib.zeros(5056)),
    lambda lib: lib.Generator().set_state([1]),
])
def test_seed_and_state_errors_match(call):
    """Seeds beyond 64 bits (ValueError, as the int is unpacked) and bad RNG states: the
    same error type and words as PyTorch 2.13's."""
    errors = []
    for lib in (ember, torch):
        with pytest.raises(Exception) as info:
            call(lib)
        errors.append((type(info.value), str(info.value)))
    lib.manual_seed(0)
    assert errors[0] == errors[1]
