"""PyTorch's "opmath" rounding of add/sub with alpha, addcmul, addcdiv and lerp, bit for bit
against torch: float16/bfloat16/float32 computed in float32, multiply-adds fused, one
rounding at the end (ember/backends/xp/opmath.py), in place and out of place, with and
without autograd recording, and in the list ops and optimizer steps built on them."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

DTYPES = ["float16", "bfloat16", "float32"]

# name -> (op, extra operands (indices into x's companions a, b, w, or numbers), kwargs)
_OPS = {
    "add": ("add", ("a",), {"alpha": 0.37}),
    "add_int_alpha": ("add", ("a",), {"alpha": 3}),
    "add_number": ("add", (1.7,), {"alpha": 0.3}),
    "add_broadcast": ("add", ("a0",), {"alpha": -0.013}),
    "sub": ("sub", ("a",), {"alpha": 1.3}),
    "addcmul": ("addcmul", ("a", "b"), {"value": 0.3}),
    "addcdiv": ("addcdiv", ("a", "b"), {"value": -0.7}),
    "lerp_small": ("lerp", ("a", 0.3), {}),
    "lerp_large": ("lerp", ("a", 0.8), {}),
    "lerp_tensor": ("lerp", ("a", "w"), {}),
}


def _operands(mod, dtype: str, shape: tuple, grad: bool) -> dict:
    """x, a, b (away from 0: addcdiv divides by it), w (weights on both sides of 0.5) and
    a0 (a's first row, broadcast), the same numbers for torch and ember."""
    rng = np.random.default_rng(0)
    def make(values):
        t = mod.tensor(values.astype(np.float32)).to(getattr(mod, dtype))
        return t.requires_grad_() if grad else t

    x, a = rng.standard_normal(shape) * 3, rng.standard_normal(shape)
    b = rng.uniform(0.5, 2.0, shape) * rng.choice([-1, 1], shape)
    return {"x": make(np.asarray(x)), "a": make(np.asarray(a)), "b": make(np.asarray(b)),
            "w": make(rng.uniform(-0.2, 1.2, shape)), "a0": make(np.asarray(a[0] if shape else a))}


def _run(mod, case: str, dtype: str, shape: tuple, inplace: bool, grad: bool):
    op, extra, kwargs = _OPS[case]
    t = _operands(mod, dtype, shape, grad)
    args = [t[e] if isinstance(e, str) else e for e in extra]
    if inplace:
        x = t["x"].clone()  # (a leaf that requires grad cannot be written in place)
        return getattr(x, op + "_")(*args, **kwargs), t
    return getattr(mod, op)(t["x"], *args, **kwargs), t


def _bits(t) -> np.ndarray:
    return np.asarray(t.detach().float().tolist(), np.float32)


@pytest.mark.parametrize("shape", [(4, 64), (4,), ()], ids=["vector", "scalars", "0d"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", sorted(_OPS))
def test_opmath_ops_round_as_torch(case: str, dtype: str, shape: tuple) -> None:
    """Out of place and in place, with and without autograd recording: the value bit for
    bit (PyTorch's forward is the same kernel with grad as without), its dtype, and,
    recording, a gradient that flows as PyTorch's does."""
    if shape != (4, 64) and (dtype != "float32" and _OPS[case][0] in ("add", "sub")
                             or case == "add_number"):
        pytest.skip("PyTorch's scalar loop (a vector loop's leftover elements) rounds "
                    "these differently from its vector loop, which ember follows")
    for inplace in (False, True):
        for grad in (False, True):
            want, t_in = _run(torch, case, dtype, shape, inplace, grad)
            got, e_in = _run(ember, case, dtype, shape, inplace, grad)
            what = f"inplace={inplace}, requires_grad={grad}"
            assert str(got.dtype) == str(want.dtype).replace("torch", "ember"), what
            np.testing.assert_array_equal(_bits(got), _bits(want), err_msg=what)
            if grad:
                want.float().pow(2).sum().backward()
                got.float().pow(2).sum().backward()
                tol = 1e-5 if dtype == "float32" else 2e-2
                np.testing.assert_allclose(_bits(e_in["x"].grad), _bits(t_in["x"].grad),
                                           rtol=tol, atol=tol, err_msg=what)


@pytest.mark.parametrize("case", ["add", "sub", "addcmul", "lerp_small", "lerp_large",
                                  "lerp_tensor"])
def test_large_float32_operands_round_as_torch(case: str) -> None:
    """From 1024 elements the CPU computes float32's fused multiply-add in one compiled
    pass (numba; NumPy's float64 emulation where numba is missing): the same bits."""
    want, _ = _run(torch, case, "float32", (40, 103), inplace=False, grad=False)
    got, _ = _run(ember, case, "float32", (40, 103), inplace=False, grad=False)
    np.testing.assert_array_equal(_bits(got), _bits(want))


def _lists(mod, dtype: str) -> list:
    """x, a, b (away from 0) and w (weights on both sides of 0.5), lists of two tensors."""
    rng = np.random.default_rng(1)
    draws = (rng.standard_normal, rng.standard_normal,
             lambda s: rng.uniform(0.5, 2.0, s), lambda s: rng.uniform(-0.2, 1.2, s))
    return [[mod.tensor(draw(s).astype(np.float32)).to(getattr(mod, dtype))
             for s in ((3, 64), (128,))] for draw in draws]


_FOREACH = {
    "add_": lambda m, x, a, b, w: m._foreach_add_(x, a, alpha=-0.0137) or x,
    "sub_": lambda m, x, a, b, w: m._foreach_sub_(x, a, alpha=0.37) or x,
    "add": lambda m, x, a, b, w: m._foreach_add(x, a, alpha=1.3),
    "addcmul_": lambda m, x, a, b, w: m._foreach_addcmul_(x, a, b, value=0.3) or x,
    "addcdiv_": lambda m, x, a, b, w: m._foreach_addcdiv_(
        x, a, b, value=-0.7) or x,
    "lerp_": lambda m, x, a, b, w: m._foreach_lerp_(x, a, 0.7) or x,
    "lerp_tensors": lambda m, x, a, b, w: m._foreach_lerp_(x, a, w) or x,
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", sorted(_FOREACH))
def test_foreach_ops_round_as_torch(case: str, dtype: str) -> None:
    fn = _FOREACH[case]
    want, got = fn(torch, *_lists(torch, dtype)), fn(ember, *_lists(ember, dtype))
    for w, g in zip(want, got):
        np.testing.assert_array_equal(_bits(g), _bits(w))


_ADAMS = [lambda m, ps: m.optim.Adam(ps, lr=0.0137), lambda m, ps: m.optim.AdamW(ps, lr=0.0137)]


@pytest.mark.parametrize("make", [
    lambda m, ps: m.optim.SGD(ps, lr=0.0137),
    lambda m, ps: m.optim.SGD(ps, lr=0.0137, momentum=0.9, weight_decay=1e-4),
    lambda m, ps: m.optim.SGD(ps, lr=0.0137, momentum=0.9, dampening=0.1),
    lambda m, ps: m.optim.SGD(ps, lr=0.0137, momentum=0.9, nesterov=True, weight_decay=1e-3,
                              maximize=True), *_ADAMS],
    ids=["sgd", "sgd_momentum", "sgd_dampening", "sgd_nesterov", "adam", "adamw"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_optimizer_steps_match_bit_for_bit(make, dtype: str) -> None:
    """Three steps from the same parameters and gradients give PyTorch's parameters bit
    for bit (the gradients are set, so that only the steps' rounding is compared)."""
    if dtype == "float32" and make in _ADAMS:
        pytest.skip("PyTorch's float32 sqrt is not correctly rounded (1 ulp off for ~17% "
                    "of elements); NumPy's is")
    rng = np.random.default_rng(2)
    values = [rng.standard_normal(s).astype(np.float32) for s in ((16, 64), (64,))]
    grads = [[rng.standard_normal(v.shape).astype(np.float32) for v in values]
             for _ in range(3)]
    out = []
    for mod in (torch, ember):
        params = [mod.tensor(v).to(getattr(mod, dtype)).requires_grad_() for v in values]
        opt = make(mod, params)
        for step in grads:
            for p, g in zip(params, step):
                p.grad = mod.tensor(g).to(getattr(mod, dtype))
            opt.step()
        out.append([_bits(p) for p in params])
    for want, got in zip(*out):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("call", [lambda m, x: m.add(x, x, alpha=1e6),
                                  lambda m, x: x.clone().sub_(x, alpha=-1e6)],
                         ids=["add", "sub_"])
def test_an_alpha_beyond_the_dtype_raises_as_torch(call) -> None:
    messages = []
    for mod in (torch, ember):
        with pytest.raises(RuntimeError) as info:
            call(mod, mod.ones(3, dtype=mod.float16))
        messages.append(str(info.value))
    assert messages[1] == messages[0]
