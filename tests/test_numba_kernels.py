"""The CPU backend's numba-compiled kernels (ember/backends/cpu/numba_kernels.py, routed by
compiled.py): accuracy in ulps against float64 NumPy over a wide range, NaN/inf/zero/denormal
results equal to NumPy's, the routing (which calls compile, which keep NumPy), the lazy
import, and the fused LSTM steps against PyTorch. The kernels load from numba's disk cache
after the first run, so these tests stay fast."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import ember

numba_kernels = pytest.importorskip("ember.backends.cpu.numba_kernels",
                                    reason="numba is not installed")
from ember.backends.cpu import compiled  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# a wide float32 range: the common one densely, then up to the extremes of each function
WIDE = np.concatenate([
    np.linspace(-20, 20, 40_001), np.linspace(-1e-3, 1e-3, 2_001),
    np.linspace(-110, 100, 20_001), np.geomspace(1e-45, 3e38, 20_001),
    -np.geomspace(1e-45, 3e38, 2_001)]).astype(np.float32)
SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 1e-40, -1e-40,
                    1.17549435e-38, 88.72, 88.73, 89.0, -87.0, -100.0, -103.9, -104.0,
                    -200.0, 7.9, 8.5, 9.5, -9.5, 3e38, -3e38], np.float32)


def _sigmoid64(x):
    x = x.astype(np.float64)
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0, e) / (1.0 + e)


REFERENCE = {"exp": np.exp, "tanh": np.tanh, "log": np.log, "sigmoid": _sigmoid64}
MAX_ULP = {"exp": 1, "tanh": 5, "log": 1, "sigmoid": 3}  # float32, as documented


def _run(op, x, parallel=False):
    out = np.empty_like(x)
    numba_kernels.UNARY[op][parallel](x, out)
    return out


def _ulps(got, want64):
    """|got - want| in units of the float32 spacing at want."""
    spacing = np.spacing(np.abs(want64.astype(np.float32))).astype(np.float64)
    return np.abs(got.astype(np.float64) - want64) / spacing


@pytest.mark.parametrize("op", sorted(REFERENCE))
def test_float32_accuracy_in_ulps(op):
    with np.errstate(all="ignore"):
        want = REFERENCE[op](WIDE.astype(np.float64))
        got = _run(op, WIDE)
        # finite, normal results (a denormal's spacing is fixed: compared below instead)
        normal = np.isfinite(want) & (np.abs(want) >= np.finfo(np.float32).tiny) & \
            (np.abs(want) <= np.finfo(np.float32).max)
        ulps = _ulps(got[normal], want[normal])
    assert ulps.max() <= MAX_ULP[op], (op, WIDE[normal][ulps.argmax()], ulps.max())
    np.testing.assert_allclose(got[~normal], want[~normal].astype(np.float32), rtol=1e-6,
                               atol=2e-45)  # denormal results: within a denormal step


@pytest.mark.parametrize("op", sorted(REFERENCE))
def test_nan_inf_zero_and_extremes_as_numpy(op):
    with np.errstate(all="ignore"):
        want = REFERENCE[op](SPECIAL.astype(np.float64)).astype(np.float32)
        got = _run(op, SPECIAL)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isposinf(got), np.isposinf(want))
    np.testing.assert_array_equal(np.isneginf(got), np.isneginf(want))
    number = ~np.isnan(want)  # (a NaN's sign bit is arbitrary in NumPy too)
    np.testing.assert_array_equal(np.signbit(got[number]), np.signbit(want[number]))
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=5e-7, atol=2e-45)


@pytest.mark.parametrize("op", sorted(REFERENCE))
def test_float64_and_parallel_loops_match_numpy(op):
    x64 = np.linspace(-30, 30, 4001)
    x64 = np.abs(x64) + 1e-3 if op == "log" else x64
    np.testing.assert_allclose(_run(op, x64), REFERENCE[op](x64), rtol=1e-15, atol=0)
    np.testing.assert_array_equal(_run(op, WIDE, parallel=True), _run(op, WIDE))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_backward_formulas_match_numpy(dtype):
    rng = np.random.default_rng(0)
    y = rng.uniform(-1, 1, 3000).astype(dtype)
    g = rng.standard_normal(3000).astype(dtype)
    y[:3], g[3:6] = [np.nan, 1.0, -1.0], [np.inf, np.nan, -np.inf]
    wide = np.longdouble if dtype == np.float64 else np.float64
    yw, gw = y.astype(wide), g.astype(wide)
    # within 3 roundings of |g| (1 - y^2 cancels near |y| = 1; the kernels' fused
    # multiply-adds round once where NumPy rounds twice)
    bound = 3 * np.finfo(dtype).eps * np.abs(g)
    for name, exact in [("tanh_backward", gw * (1 - yw * yw)),
                        ("sigmoid_backward", gw * (yw * (1 - yw)))]:
        out = np.empty_like(y)
        getattr(numba_kernels, name)(y, g, out)
        np.testing.assert_array_equal(np.isnan(out), np.isnan(exact), err_msg=name)
        finite = np.isfinite(exact)
        np.testing.assert_array_equal(out[~finite], exact[~finite].astype(dtype))
        assert (np.abs(out[finite] - exact[finite]) <= bound[finite]).all(), name


def test_routing_compiles_large_contiguous_float32_only():
    calls = []

    def numpy_kernel(x, out=None):
        calls.append(x.shape)
        return np.tanh(x, out=out)

    tanh = compiled.unary("tanh", numpy_kernel)
    big = np.linspace(-5, 5, 1 << 15, dtype=np.float32)
    np.testing.assert_allclose(tanh(big), np.tanh(big), rtol=2e-6)
    out = np.empty_like(big)
    assert tanh(big, out=out) is out and tanh(big, out=big) is big  # in place too
    assert calls == []
    small, wide = big[:100], big.reshape(128, 256)
    for x, out in [(small, None), (big.astype(np.float64), None), (wide.T, None),
                   (big, np.empty(big.shape, np.float64)), (big, big[::-1].copy()[::-1])]:
        want = np.tanh(x)
        np.testing.assert_allclose(tanh(x, out=out), want, rtol=2e-6)
    assert len(calls) == 5  # each of those (small, float64, strided, other dtype) NumPy's


def test_tensor_ops_match_torch_float32_and_float64():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    for dtype in (np.float32, np.float64):
        a = rng.standard_normal((96, 256)).astype(dtype) * 4
        a[0, :4] = [np.nan, np.inf, -np.inf, -200]
        for name in ("tanh", "sigmoid", "exp"):
            for view in (lambda t: t, lambda t: t.T):  # contiguous and strided
                x, tx = ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
                y, ty = getattr(view(x), name)(), getattr(view(tx), name)()
                np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(),
                                           rtol=2e-6 if dtype == np.float32 else 1e-12)
                g = rng.standard_normal(ty.shape).astype(dtype)
                y.backward(ember.tensor(g))
                ty.backward(torch.tensor(g))
                # (the op tolerances: 1 - tanh^2 cancels near |tanh| = 1)
                np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(),
                                           rtol=2e-5 if dtype == np.float32 else 1e-10,
                                           atol=1e-5 if dtype == np.float32 else 1e-12)
        inplace = ember.tensor(a)
        inplace.tanh_()
        np.testing.assert_allclose(inplace.numpy(), np.tanh(a), rtol=2e-6)


def _python(code, **env):
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": ROOT, **env}, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_numba_loads_on_first_large_call_only_and_can_be_turned_off():
    code = ("import sys, ember; import numpy as np; from ember.backends.cpu import compiled\n"
            "x = ember.ones(8)\nx.tanh().sigmoid().exp()\n"
            "print('numba' in sys.modules, end=' ')\n"
            "ember.ones(1 << 15).sigmoid()\n"
            "print('numba' in sys.modules, compiled.unavailable)")
    assert _python(code) == "False True None"
    assert _python(code, EMBER_NUMBA="0") == "False False turned off by EMBER_NUMBA=0"


@pytest.mark.parametrize("batch_first,num_layers,bidirectional",
                         [(False, 1, False), (True, 2, True), (False, 2, True)])
def test_compiled_lstm_layer_matches_torch(batch_first, num_layers, bidirectional):
    torch = pytest.importorskip("torch")
    assert compiled.recurrent_layers(np.dtype(np.float32)) is not None  # the compiled path runs
    torch.manual_seed(0)
    tm = torch.nn.LSTM(5, 16, num_layers=num_layers, bidirectional=bidirectional,
                       batch_first=batch_first)
    em = ember.nn.LSTM(5, 16, num_layers=num_layers, bidirectional=bidirectional,
                       batch_first=batch_first)
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in
                        tm.state_dict().items()})
    d = num_layers * (2 if bidirectional else 1)
    x = torch.randn((6, 9, 5) if batch_first else (9, 6, 5))
    h0, c0 = torch.randn(d, 6, 16), torch.randn(d, 6, 16)
    t_in = [t.clone().requires_grad_() for t in (x, h0, c0)]
    e_in = [ember.tensor(t.numpy(), requires_grad=True) for t in (x, h0, c0)]
    t_out, (t_h, t_c) = tm(t_in[0], (t_in[1], t_in[2]))
    e_out, (e_h, e_c) = em(e_in[0], (e_in[1], e_in[2]))
    for e, t in [(e_out, t_out), (e_h, t_h), (e_c, t_c)]:
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
    gens = [torch.randn(t.shape) for t in (t_out, t_h, t_c)]
    torch.autograd.backward([t_out, t_h, t_c], gens)
    ember.autograd.backward([e_out, e_h, e_c], [ember.tensor(g.numpy()) for g in gens])
    for e, t in zip(e_in, t_in):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-5)
    for (name, tp), (_, ep) in zip(tm.named_parameters(), em.named_parameters()):
        np.testing.assert_allclose(ep.grad.numpy(), tp.grad.numpy(), rtol=1e-4, atol=1e-5,
                                   err_msg=name)


def test_kernels_compile_uncached_where_numba_cannot_cache():
    # a function without a source file: numba has no cache folder for it and refuses
    # cache=True at decoration; _jit then compiles it in memory
    namespace: dict = {}
    exec("def double(x, out):\n    for i in range(x.size):\n        out[i] = 2 * x[i]\n",
         namespace)
    import numba
    with pytest.raises(RuntimeError, match="cannot cache"):
        numba.njit(cache=True)(namespace["double"])
    kernel = numba_kernels._jit()(namespace["double"])
    x = np.arange(5, dtype=np.float32)
    out = np.empty_like(x)
    kernel(x, out)
    np.testing.assert_array_equal(out, 2 * x)
