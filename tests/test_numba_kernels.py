"""The CPU backend's numba-compiled kernels (ember/backends/cpu/numba_kernels.py, routed by
compiled.py): accuracy in ulps against float64 NumPy over a wide range, NaN/inf/zero/denormal
results equal to NumPy's, the routing (which calls compile, which keep NumPy), the lazy
import, and the compiled LSTM and GRU layers against PyTorch. The kernels load from numba's
disk cache after the first run, so these tests stay fast."""

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

# for the tests of the compiled kernels themselves (the NumPy fallback is tested in
# subprocesses with EMBER_NUMBA=0, whatever this process has)
compiled_on = pytest.mark.skipif(os.environ.get("EMBER_NUMBA") == "0",
                                 reason="EMBER_NUMBA=0 turns the compiled kernels off")

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


@compiled_on
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
    inherited = {k: v for k, v in os.environ.items() if k != "EMBER_NUMBA"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={**inherited, "PYTHONPATH": ROOT, **env}, timeout=120)
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


def _compare_rnn(mode, *, batch_first=False, num_layers=1, bidirectional=False,
                 give_state=True, dtype="float32", dropout=0.0, bias=True, calls=None):
    """nn.LSTM/nn.GRU against torch's on one input: outputs, and the gradients of the
    input, the initial states and every parameter. `calls` counts the compiled kernels."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    kwargs = dict(num_layers=num_layers, bias=bias, batch_first=batch_first, dropout=dropout,
                  bidirectional=bidirectional)
    tm = getattr(torch.nn, mode)(5, 16, **kwargs).to(getattr(torch, dtype))
    em = getattr(ember.nn, mode)(5, 16, **kwargs).to(getattr(ember, dtype))
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in
                        tm.state_dict().items()})
    if dropout:
        tm.eval(), em.eval()
    d = num_layers * (2 if bidirectional else 1)
    x = torch.randn((6, 9, 5) if batch_first else (9, 6, 5), dtype=tm.weight_ih_l0.dtype)
    states = [torch.randn(d, 6, 16, dtype=x.dtype) for _ in range(2 if mode == "LSTM" else 1)]
    t_in = [t.clone().requires_grad_() for t in [x, *(states if give_state else [])]]
    e_in = [ember.tensor(t.detach().numpy(), requires_grad=True) for t in t_in]

    def run(module, inputs):
        if not give_state:
            return module(inputs[0])
        return module(inputs[0], tuple(inputs[1:]) if mode == "LSTM" else inputs[1])
    t_res, e_res = run(tm, t_in), run(em, e_in)
    flat = (lambda r: [r[0], *r[1]]) if mode == "LSTM" else (lambda r: list(r))
    t_outs, e_outs = flat(t_res), flat(e_res)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)
    for e, t in zip(e_outs, t_outs):
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), **tol)
    seeds = [torch.randn(t.shape, dtype=t.dtype) for t in t_outs]
    torch.autograd.backward(t_outs, seeds)
    ember.autograd.backward(e_outs, [ember.tensor(g.numpy()) for g in seeds])
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else dict(rtol=1e-9, atol=1e-11)
    for e, t in zip(e_in, t_in):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), **tol)
    for (name, tp), (_, ep) in zip(tm.named_parameters(), em.named_parameters()):
        np.testing.assert_allclose(ep.grad.numpy(), tp.grad.numpy(), err_msg=name, **tol)


def _counting(monkeypatch, names):
    """Count the calls of numba_kernels' `names` (lstm.py/gru.py call them through the
    module, so the wrappers see every call)."""
    calls = {name: 0 for name in names}
    for name in names:
        kernel = getattr(numba_kernels, name)

        def counted(*args, _kernel=kernel, _name=name):
            calls[_name] += 1
            return _kernel(*args)
        monkeypatch.setattr(numba_kernels, name, counted)
    return calls


RNN_CASES = [dict(), dict(batch_first=True, num_layers=2, bidirectional=True),
             dict(num_layers=2, bidirectional=True, give_state=False),
             dict(num_layers=2, dropout=0.5, batch_first=True), dict(bias=False)]


@compiled_on
@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
@pytest.mark.parametrize("case", RNN_CASES, ids=lambda c: ",".join(c) or "plain")
def test_compiled_recurrent_layers_match_torch(mode, case, monkeypatch):
    assert compiled.recurrent_layers(np.dtype(np.float32)) is not None
    kind = mode.lower()
    calls = _counting(monkeypatch, [f"{kind}_layer_forward", f"{kind}_layer_backward"])
    _compare_rnn(mode, **case)
    layers = case.get("num_layers", 1) * (2 if case.get("bidirectional") else 1)
    assert calls == {f"{kind}_layer_forward": layers, f"{kind}_layer_backward": layers}


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_float64_recurrent_layers_run_numpy_and_match_torch(mode, monkeypatch):
    kind = mode.lower()
    calls = _counting(monkeypatch, [f"{kind}_layer_forward", f"{kind}_layer_backward"])
    _compare_rnn(mode, dtype="float64", bidirectional=True)
    assert not any(calls.values())  # float64 keeps NumPy (libm's scalar tanh is slow)


@compiled_on
@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_compiled_layer_state_serves_one_backward(kind):
    # the backward pass writes the gate gradients over the saved gates: a second pass on
    # the same state must raise, not return wrong gradients
    from ember.backends.cpu import gru, lstm
    rng = np.random.default_rng(0)
    gates = 4 if kind == "lstm" else 3
    x, w_ih, w_hh, h0 = (rng.standard_normal(s).astype(np.float32)
                         for s in ((6, 3), (gates * 4, 3), (gates * 4, 4), (2, 4)))
    if kind == "lstm":
        saved = lstm.lstm_layer(x, w_ih, w_hh, None, h0, h0.copy())[3]
        backward = lstm.lstm_layer_backward
        args = (None, None)
    else:
        saved = gru.gru_layer(x, w_ih, w_hh, None, None, h0)[2]
        backward = gru.gru_layer_backward
        args = (None,)
    grads = backward(saved, np.ones((6, 4), np.float32), *args)
    assert all(np.isfinite(g).all() for g in grads if g is not None)
    with pytest.raises(RuntimeError, match=f"{kind}_layer_backward: this layer's saved "
                                           "activations were freed by an earlier backward"):
        backward(saved, np.ones((6, 4), np.float32), *args)


def test_recurrent_layers_without_numba_match_torch():
    pytest.importorskip("torch")
    code = (f"import sys; sys.path.insert(0, {os.path.join(ROOT, 'tests')!r})\n"
            "import numpy as np\n"
            "from ember.backends.cpu import compiled\n"
            "import test_numba_kernels as t\n"
            "for mode in ('LSTM', 'GRU'):\n"
            "    t._compare_rnn(mode, batch_first=True, num_layers=2, bidirectional=True)\n"
            "print(compiled.recurrent_layers(np.dtype(np.float32)), compiled.unavailable)")
    assert _python(code, EMBER_NUMBA="0") == "None turned off by EMBER_NUMBA=0"


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
