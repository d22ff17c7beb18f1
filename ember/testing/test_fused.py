"""Fused kernels (ember.core.opdef.FUSED) on the device under test: each is optional, and
where the backend has one it must give what the composite's decomposition gives without it.

Every case runs the op the kernel replaces twice on the device: once with the backend's
kernels as they are (checking that the kernel did run), once with the kernel taken out of
the backend's table (so core runs the decomposition, or the gradient formula in ember
ops), and compares values, gradients and, for list ops, the tensors they update. A case
is skipped where the backend has no such kernel. The decompositions themselves are
checked against NumPy and PyTorch by the other modules.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import ember
from ember.core import plugins
from ember.core.opdef import OPS
from ember.testing import support as S
from ember.testing.opinfo import nnf
from ember.testing.test_foreach import LIST_OPS, run_list_op

# float32 (every backend holds it); the two paths round differently
RTOL, ATOL = 1e-4, 1e-5

Results = dict[str, Any]  # what a case compares: name -> tensor (or None)


@dataclass(frozen=True)
class FusedCase:
    """How to exercise one fused kernel.

    Attributes:
        run: `run(device)` -> named results; it runs the op (and its backward) through the
            public API, from inputs that do not depend on the kernels.
        hide: other kernels taken out with this one: for a backward kernel that reads
            only what the backend's own forward kernel saved (the LSTM layer's), that
            forward kernel.
        declines: a forward kernel that may decline a call (it returns Nones and the op
            runs its decomposition): where it declined, the backward kernel `hide`s it
            for cannot run, and the case is skipped.
    """

    run: Callable[[ember.device], Results]
    hide: tuple[str, ...] = ()
    declines: str | None = None


def _rand(seed: int, *shape: int, lo: float = -2.0, hi: float = 2.0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(lo, hi, shape).astype(np.float32)


def _leaf(device: ember.device, array: np.ndarray) -> ember.Tensor:
    return S.on(device, array, requires_grad=True)


def _backward(out: ember.Tensor, seed: int) -> None:
    """Backward from a fixed random output gradient (not all ones: that hides mistakes)."""
    out.backward(S.on(out.device, _rand(seed, *out.shape)))


def _unary(fn: Callable[[ember.Tensor], ember.Tensor], lo: float = -2.0) -> FusedCase:
    def run(device: ember.device) -> Results:
        x = _leaf(device, _rand(1, 4, 5, lo=lo))
        y = fn(x)
        _backward(y, 2)
        return {"out": y, "grad": x.grad}
    return FusedCase(run)


def _linear(device: ember.device) -> Results:
    x, w, b = _leaf(device, _rand(1, 2, 3, 4)), _leaf(device, _rand(2, 5, 4)), \
        _leaf(device, _rand(3, 5))
    out = nnf(ember).linear(x, w, b)
    _backward(out, 4)
    return {"out": out, "grad x": x.grad, "grad w": w.grad, "grad b": b.grad}


def _conv(device: ember.device) -> Results:
    F = nnf(ember)
    x, w, b = _leaf(device, _rand(1, 2, 3, 6, 5)), _leaf(device, _rand(2, 4, 3, 3, 2)), \
        _leaf(device, _rand(3, 4))
    out = F.conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2))
    _backward(out, 4)
    x1, w1 = _leaf(device, _rand(5, 2, 3, 7)), _leaf(device, _rand(6, 2, 3, 3))
    out1 = F.conv1d(x1, w1, stride=2)  # no bias
    _backward(out1, 7)
    return {"conv2d": out, "grad x": x.grad, "grad w": w.grad, "grad b": b.grad,
            "conv1d": out1, "conv1d grad x": x1.grad, "conv1d grad w": w1.grad}


def _max_pool(device: ember.device) -> Results:
    # distinct values: every window has one maximum, whichever path picks it
    values = np.random.default_rng(1).permutation(2 * 3 * 7 * 6).reshape(2, 3, 7, 6)
    x = _leaf(device, (values / 10).astype(np.float32))
    F = nnf(ember)
    plain = F.max_pool2d(x, 3, 2, 1)  # its backward recovers the positions
    _backward(plain, 2)
    grad_plain = x.grad
    x.grad = None
    pooled, indices = F.max_pool2d(x, 2, 1, return_indices=True)  # backward reads indices
    _backward(pooled, 3)
    x1 = _leaf(device, (values[0] / 10).astype(np.float32))
    pooled1 = F.max_pool1d(x1, 3, 2, ceil_mode=True)
    _backward(pooled1, 4)
    return {"max_pool2d": plain, "grad": grad_plain, "with indices": pooled,
            "indices": indices, "grad with indices": x.grad, "max_pool1d": pooled1,
            "max_pool1d grad": x1.grad}


def _softmax(name: str) -> FusedCase:
    def run(device: ember.device) -> Results:
        x = _leaf(device, _rand(1, 3, 4, 5, lo=-6, hi=6))
        outs = {}
        for dim in (0, 2):
            y = getattr(ember, name)(x, dim)
            _backward(y, 2 + dim)
            outs[f"dim {dim}"] = y
        return {**outs, "grad": x.grad}
    return FusedCase(run)


def _max_min_dim(device: ember.device) -> Results:
    a = _rand(1, 4, 5, 3)
    a[0, 1, 0] = a[0, 3, 0] = 5.0  # a tie: the first index
    a[1, 2, 1] = a[1, 4, 1] = np.nan  # NaN: the first one
    x = _leaf(device, a)
    outs: Results = {}
    for op, dim, keepdim in (("max", 1, False), ("min", 0, True), ("max", -1, True)):
        values, indices = getattr(ember, op)(x, dim, keepdim)
        _backward(values, 5 + dim)
        outs.update({f"{op} {dim} values": values, f"{op} {dim} indices": indices})
    return {**outs, "grad": x.grad}


def _searchsorted(device: ember.device) -> Results:
    rng = np.random.default_rng(1)
    seq = np.sort(rng.integers(-4, 5, 12)).astype(np.float32)  # ties
    values = np.concatenate([rng.uniform(-6, 6, 9), seq[:4], [np.nan, np.inf, -np.inf]])
    s, v = S.on(device, seq), S.on(device, values.astype(np.float32))
    rows = S.on(device, np.sort(_rand(2, 3, 6), 1))
    shuffled = S.on(device, seq[::-1].copy())
    sorter = S.on(device, np.argsort(seq[::-1], kind="stable"))
    return {"left": ember.searchsorted(s, v), "right": ember.searchsorted(s, v, right=True),
            "rows": ember.searchsorted(rows, S.on(device, _rand(3, 3, 4)), side="right"),
            "sorter": ember.searchsorted(shuffled, v, sorter=sorter),
            "bucketize": ember.bucketize(v, s, out_int32=True)}


def _bincount(device: ember.device) -> Results:
    rng = np.random.default_rng(1)
    x = S.on(device, rng.integers(0, 7, 40))
    w = rng.uniform(-2, 2, 40)
    w[3], w[9] = np.nan, np.inf
    return {"counts": ember.bincount(x), "minlength": ember.bincount(x[:5], minlength=9),
            "empty": ember.bincount(x[:0], minlength=2),
            "float32": ember.bincount(x, S.on(device, w.astype(np.float32))),
            "float64": ember.bincount(x, S.on(device, w)),
            "int32 weights": ember.bincount(x.int(), S.on(device, np.arange(40, dtype=np.int32)))}


def _unique(device: ember.device) -> Results:
    x = np.random.default_rng(2).integers(-3, 4, (5, 8)).astype(np.float32)
    x[1, 2], x[3, 3], x[0, 1], x[4, 4] = np.nan, np.nan, -0.0, np.inf
    values, inverse, counts = ember.unique(S.on(device, x), return_inverse=True,
                                           return_counts=True)
    ints = ember.unique(S.on(device, x[:2].astype(np.int64)), return_counts=True)
    return {"values": values, "inverse": inverse, "counts": counts,
            "int values": ints[0], "int counts": ints[1],
            "empty": ember.unique(S.on(device, x[:0]))}


def _nll_loss(device: ember.device) -> Results:
    rng = np.random.default_rng(3)
    logp = _rand(4, 12, 5)
    logp[2, 1] = np.nan
    target = rng.integers(0, 5, 12)
    target[[3, 7]] = -100
    weight = S.on(device, _rand(5, 5, lo=0.1, hi=2.0))
    outs: Results = {}
    for reduction in ("mean", "sum", "none"):
        for name, w in (("", None), (" weighted", weight)):
            x = _leaf(device, logp)
            loss = nnf(ember).nll_loss(x, S.on(device, target), w, reduction=reduction)
            _backward(loss, 6)
            outs.update({f"{reduction}{name}": loss, f"{reduction}{name} grad": x.grad})
    return outs


def _mode_index(device: ember.device) -> Results:
    # enough elements (2048) for a kernel that waits for a size; many ties where the
    # decomposition emulates PyTorch's CPU order of them (on the CPU), else distinct keys
    # (elsewhere it keeps a stable order, which a kernel need not)
    rng = np.random.default_rng(1)
    keys = rng.integers(0, 4, (32, 64)) if device.type == "cpu" else \
        np.argsort(rng.random((32, 64)), 1)
    x = _leaf(device, keys.astype(np.float32))
    values, indices = ember.mode(x, 1)
    _backward(values, 2)
    rows = ember.mode(S.on(device, keys.T.copy()), 0, keepdim=True)
    return {"values": values, "indices": indices, "grad": x.grad,
            "int64 values": rows.values, "int64 indices": rows.indices}


def _random_draws(device: ember.device) -> Results:
    # PyTorch's CPU streams from one seed, large enough (64k values) for a kernel that
    # waits for a size: the kernel and the decomposition must draw the same numbers.
    # Core asks the CPU backend's table for these (host draws), whatever the device
    if device.type != "cpu":
        pytest.skip("the random transforms are the CPU backend's (host draws)")
    ember.manual_seed(0)
    return {"randn": ember.randn(1 << 16 | 53, device=device),
            "normal_": ember.empty(1 << 16, dtype=ember.float64, device=device).normal_(1, 3),
            "randperm": ember.randperm(1 << 16 | 7, device=device)}


def _cross_entropy(device: ember.device) -> Results:
    target = S.on(device, np.array([1, -100, 4, 0, 4]))  # one ignored row
    out: Results = {}
    for k, reduction in enumerate(("mean", "sum", "none")):
        logits = _leaf(device, _rand(1, 5, 6))
        loss = nnf(ember).cross_entropy(logits, target, reduction=reduction)
        _backward(loss, 2 + k)
        out[reduction] = loss
        out[f"{reduction} grad"] = logits.grad
    return out


def _lstm_cell(device: ember.device) -> Results:
    hy, cy, workspace = OPS["_fused_lstm_cell"].public(
        S.on(device, _rand(1, 3, 8)), S.on(device, _rand(2, 3, 8)), S.on(device, _rand(3, 3, 2)))
    return {"hy": hy, "cy": cy, "workspace": workspace}


def _lstm_cell_backward(device: ember.device) -> Results:
    # the saved state of a step, computed here (in NumPy) rather than by a kernel
    i, f, g, o = np.split(_rand(1, 3, 8).astype(np.float64), 4, axis=1)
    i, f, o = (1 / (1 + np.exp(-v)) for v in (i, f, o))
    g = np.tanh(g)
    cx = _rand(2, 3, 2).astype(np.float64)
    cy = f * cx + i * g
    workspace = np.concatenate([i, f, g, o], 1)
    on = lambda a: S.on(device, np.asarray(a, np.float32))  # noqa: E731
    backward = OPS["_fused_lstm_cell_backward"].public
    out: Results = {}
    for label, grad_cy in (("grad_cy", on(_rand(3, 3, 2))), ("no grad_cy", None)):
        d_gates, d_cx = backward(on(_rand(4, 3, 2)), grad_cy, on(cx), on(cy), on(workspace))
        out[f"gates, {label}"], out[f"cx, {label}"] = d_gates, d_cx
    return out


def _lstm(device: ember.device) -> Results:
    ember.manual_seed(0)  # the same weights in both runs
    lstm = ember.nn.LSTM(3, 4, bidirectional=True).to(device)
    x = _leaf(device, _rand(1, 5, 2, 3))
    h0, c0 = _leaf(device, _rand(2, 2, 2, 4)), _leaf(device, _rand(3, 2, 2, 4))
    out, (h_n, c_n) = lstm(x, (h0, c0))
    seeds = [S.on(device, _rand(4 + k, *t.shape)) for k, t in enumerate((out, h_n, c_n))]
    ember.autograd.backward([out, h_n, c_n], seeds)
    results = {"out": out, "h_n": h_n, "c_n": c_n, "grad x": x.grad, "grad h0": h0.grad,
               "grad c0": c0.grad}
    results.update({f"grad {name}": p.grad for name, p in lstm.named_parameters()})
    return results


def _gru(device: ember.device) -> Results:
    ember.manual_seed(0)  # the same weights in both runs
    gru = ember.nn.GRU(3, 4, num_layers=2, bidirectional=True).to(device)
    x = _leaf(device, _rand(1, 5, 2, 3))
    h0 = _leaf(device, _rand(2, 4, 2, 4))
    out, h_n = gru(x, h0)
    seeds = [S.on(device, _rand(4 + k, *t.shape)) for k, t in enumerate((out, h_n))]
    ember.autograd.backward([out, h_n], seeds)
    results = {"out": out, "h_n": h_n, "grad x": x.grad, "grad h0": h0.grad}
    results.update({f"grad {name}": p.grad for name, p in gru.named_parameters()})
    return results


def _list_op(kernel: str) -> FusedCase:
    """Every call of test_foreach's table that runs list op `kernel`."""
    names = [n for n in LIST_OPS if n.split()[0] == kernel]
    assert names, f"test_foreach.LIST_OPS has no call of {kernel}"

    def run(device: ember.device) -> Results:
        out: Results = {}
        for name in names:
            for i, t in enumerate(run_list_op(ember, name, lambda a: S.on(device, a))):
                out[f"{name}: tensor {i}"] = t
        return out
    return FusedCase(run)


def _fused_sgd(device: ember.device) -> Results:
    out: Results = {}
    for k, config in enumerate((
            dict(momentum=0.9, dampening=0.1, weight_decay=0.01, nesterov=False),
            dict(momentum=0.5, nesterov=True, maximize=True),
            dict(weight_decay=0.1))):
        # the kernel runs only once every momentum buffer exists (not on the first step)
        params = [S.on(device, _rand(10 * k + i, *s)) for i, s in enumerate([(2, 3), (4,)])]
        grads = [S.on(device, _rand(10 * k + 5 + i, *p.shape)) for i, p in enumerate(params)]
        bufs = [S.on(device, _rand(10 * k + 8 + i, *p.shape)) for i, p in enumerate(params)]
        ember._fused_sgd_(params, grads, bufs, lr=0.1, **config)
        for i, (p, b) in enumerate(zip(params, bufs)):
            out[f"config {k}: parameter {i}"] = p
            out[f"config {k}: momentum buffer {i}"] = b
    return out


def _opmath(fn: functools.partial, n_operands: int) -> FusedCase:
    """An opmath kernel's op (add(alpha=), addcmul, addcdiv, lerp) with autograd recording
    (the kernel gives the value, the decomposition the graph), out of place and in place."""
    def run(device: ember.device) -> Results:
        args = [_leaf(device, _rand(i + 1, 4, 5, lo=0.5 if i == 2 else -2.0))
                for i in range(n_operands)]
        out = fn(*args)
        _backward(out, 9)
        with ember.no_grad():
            x = args[0].detach().clone()
            inplace = getattr(x, fn.func.__name__ + "_")(*args[1:], **fn.keywords)
        return {"out": out, "in place": inplace,
                **{f"grad {i}": a.grad for i, a in enumerate(args)}}
    return FusedCase(run)


def _variance(device: ember.device) -> Results:
    a = _rand(11, 6, 5, 4) * 3 + 100  # (a large mean: the float64 reduction shows)
    x = S.on(device, a)
    outs: Results = {"var": x.var(), "std 1": x.std(1, keepdim=True),
                     "var 0 2": x.var((0, 2), correction=0)}
    for name, fn in (("var_mean", ember.var_mean), ("std_mean", ember.std_mean)):
        spread, centre = fn(x, (1, 2))
        outs.update({f"{name} spread": spread, f"{name} mean": centre})
    return outs


CASES: dict[str, FusedCase] = {
    "relu_backward": _unary(ember.relu),
    "exp_backward": _unary(ember.exp),
    "log_backward": _unary(ember.log, lo=0.1),
    "tanh_backward": _unary(ember.tanh),
    "sigmoid_backward": _unary(ember.sigmoid),
    "linear": FusedCase(_linear),
    "linear_backward": FusedCase(_linear),
    "conv": FusedCase(_conv),
    "conv_backward": FusedCase(_conv),
    "max_pool": FusedCase(_max_pool),
    "max_pool_backward": FusedCase(_max_pool),
    "max_min_dim": FusedCase(_max_min_dim),
    "variance": FusedCase(_variance),
    "searchsorted": FusedCase(_searchsorted),
    "mode_index": FusedCase(_mode_index),
    "bincount": FusedCase(_bincount),
    "bincount_weighted": FusedCase(_bincount),
    "unique": FusedCase(_unique),
    "nll_loss": FusedCase(_nll_loss),
    "pytorch_normal_fill16": FusedCase(_random_draws),
    "pytorch_randperm_shuffle": FusedCase(_random_draws),
    "softmax": _softmax("softmax"),
    "log_softmax": _softmax("log_softmax"),
    "cross_entropy": FusedCase(_cross_entropy),
    "cross_entropy_backward": FusedCase(_cross_entropy),
    "lstm_cell": FusedCase(_lstm_cell),
    "lstm_cell_backward": FusedCase(_lstm_cell_backward),
    # hidden, the layer runs step by step (the cell ops): forward and backward
    "lstm_layer": FusedCase(_lstm),
    # only the layer's forward kernel can feed its backward (its saved state is opaque):
    # hidden together, the step-by-step path's gradients are the reference
    "lstm_layer_backward": FusedCase(_lstm, hide=("lstm_layer",)),
    "gru_layer": FusedCase(_gru),  # the same for the GRU layer
    "gru_layer_backward": FusedCase(_gru, hide=("gru_layer",), declines="gru_layer"),
    **{name: _list_op(name) for name in (
        "_foreach_add_", "_foreach_add", "_foreach_sub_", "_foreach_sub", "_foreach_mul_",
        "_foreach_mul", "_foreach_div_", "_foreach_div", "_foreach_maximum_",
        "_foreach_addcmul_", "_foreach_addcdiv_", "_foreach_lerp_", "_foreach_lerp",
        "_foreach_sqrt", "_foreach_sqrt_",
        "_foreach_neg", "_foreach_neg_", "_foreach_zero_", "_foreach_copy_")},
    "_fused_sgd_": FusedCase(_fused_sgd),
    "opmath_axpy": _opmath(functools.partial(ember.sub, alpha=0.3), 2),
    "opmath_addcmul": _opmath(functools.partial(ember.addcmul, value=-0.7), 3),
    "opmath_addcdiv": _opmath(functools.partial(ember.addcdiv, value=0.7), 3),
    "opmath_lerp": _opmath(functools.partial(ember.lerp), 3),  # a weight tensor
}
"""One case per fused kernel (ember.testing.test_coverage checks that none is missing)."""


def _counting(kernels: dict, name: str, calls: list) -> dict:
    """`kernels` with `name` wrapped to record each call."""
    inner = kernels[name]

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(name)
        return inner(*args, **kwargs)
    return {**kernels, name: counted}


@pytest.mark.parametrize("name", sorted(CASES))
def test_fused_kernel_matches_the_decomposition(device: ember.device, name: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    case = CASES[name]
    backend = plugins.get_backend(device.type)
    missing = [k for k in (name, *case.hide) if k not in backend.kernels]
    if missing:
        pytest.skip(f"backend {backend.name!r} has no {', '.join(missing)} kernel")
    kernels = dict(backend.kernels)
    calls: list = []
    monkeypatch.setattr(backend, "kernels", _counting(kernels, name, calls))
    fused = case.run(device)
    if not calls and case.declines is not None:
        pytest.skip(f"backend {backend.name!r}'s {case.declines} kernel declined the case "
                    f"(so {name} had nothing to read)")
    assert calls, f"the case never ran the {name} kernel"
    hidden = {name, *case.hide}
    monkeypatch.setattr(backend, "kernels",
                        {k: v for k, v in kernels.items() if k not in hidden})
    plain = case.run(device)
    assert fused.keys() == plain.keys()
    for key, p in plain.items():
        f = fused[key]
        if p is None or f is None:
            assert f is p, f"{key}: None {'with' if f is None else 'without'} the {name} " \
                           "kernel only"
            continue
        S.assert_matches(f, S.host(p), device, dtype=p.dtype, rtol=RTOL, atol=ATOL,
                         what=f"{key}: with the {name} kernel vs without")


# -- what this module checks (ember.testing.test_coverage reads it) ---------------------

# the LSTM and GRU layer ops exist for the lstm_layer/gru_layer kernels: they are exercised
# where a backend has them, against nn.LSTM's and nn.GRU's step-by-step paths
COVERS = {"_fused_lstm_layer", "_fused_lstm_layer_backward", "_fused_gru_layer",
          "_fused_gru_layer_backward"}
"""The declared ops whose values this module's tests check."""
