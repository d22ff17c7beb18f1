"""List ("foreach") ops on the device under test: `ember._foreach_*` and `_fused_sgd_`, the
optimizers' one-call updates of whole lists of tensors, against the same op applied tensor by
tensor in NumPy, and against `torch._foreach_*` where torch is installed.

The lists mix shapes (a matrix, a vector, a 0-dim tensor) and dtypes (float64, float32), as
an optimizer's parameters may. Whether a backend's fused list kernels agree with these ops'
per-tensor decomposition is test_fused's business.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ember
from ember.testing import support as S

_SHAPES = [(2, 3), (4,), ()]
_DTYPES = ["float64", "float32", "float64"]


def _arrays(seed: int, lo: float, hi: float) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(lo, hi, s).astype(d) for s, d in zip(_SHAPES, _DTYPES)]


# three lists: xs any sign, ys any sign, zs positive (divisors, square roots)
_XS, _YS, _ZS = _arrays(0, -2, 2), _arrays(1, -2, 2), _arrays(2, 0.5, 2)

# name -> (call(lib, xs, ys, zs), reference(xs, ys, zs) -> the new xs or the result list);
# an in-place op returns None and is checked through `xs` (or `zs` for sqrt_). The first
# word of a name is the op; test_fused runs the same calls with and without its kernel.
LIST_OPS: dict[str, tuple[Callable[..., Any], Callable[..., list]]] = {
    "_foreach_add": (lambda lib, xs, ys, zs: lib._foreach_add(xs, ys, alpha=2),
                     lambda xs, ys, zs: [x + 2 * y for x, y in zip(xs, ys)]),
    "_foreach_add scalar": (lambda lib, xs, ys, zs: lib._foreach_add(xs, 1.5),
                            lambda xs, ys, zs: [x + 1.5 for x in xs]),
    "_foreach_add_": (lambda lib, xs, ys, zs: lib._foreach_add_(xs, ys, alpha=-0.5),
                      lambda xs, ys, zs: [x - 0.5 * y for x, y in zip(xs, ys)]),
    "_foreach_add_ scalars": (lambda lib, xs, ys, zs: lib._foreach_add_(xs, [1.0, 2.0, 3.0]),
                              lambda xs, ys, zs: [x + s for x, s in zip(xs, [1, 2, 3])]),
    "_foreach_sub_": (lambda lib, xs, ys, zs: lib._foreach_sub_(xs, ys, alpha=3),
                      lambda xs, ys, zs: [x - 3 * y for x, y in zip(xs, ys)]),
    "_foreach_mul": (lambda lib, xs, ys, zs: lib._foreach_mul(xs, [2.0, -1.0, 0.5]),
                     lambda xs, ys, zs: [x * s for x, s in zip(xs, [2, -1, 0.5])]),
    "_foreach_mul_": (lambda lib, xs, ys, zs: lib._foreach_mul_(xs, ys),
                      lambda xs, ys, zs: [x * y for x, y in zip(xs, ys)]),
    "_foreach_div": (lambda lib, xs, ys, zs: lib._foreach_div(xs, zs),
                     lambda xs, ys, zs: [x / z for x, z in zip(xs, zs)]),
    "_foreach_div_": (lambda lib, xs, ys, zs: lib._foreach_div_(xs, 4.0),
                      lambda xs, ys, zs: [x / 4 for x in xs]),
    "_foreach_maximum_": (lambda lib, xs, ys, zs: lib._foreach_maximum_(xs, ys),
                          lambda xs, ys, zs: [np.maximum(x, y) for x, y in zip(xs, ys)]),
    "_foreach_addcmul_": (lambda lib, xs, ys, zs: lib._foreach_addcmul_(xs, ys, zs, value=0.5),
                          lambda xs, ys, zs: [x + 0.5 * y * z for x, y, z in zip(xs, ys, zs)]),
    "_foreach_addcdiv_": (lambda lib, xs, ys, zs: lib._foreach_addcdiv_(xs, ys, zs, value=-2),
                          lambda xs, ys, zs: [x - 2 * y / z for x, y, z in zip(xs, ys, zs)]),
    "_foreach_lerp_": (lambda lib, xs, ys, zs: lib._foreach_lerp_(xs, ys, 0.25),
                       lambda xs, ys, zs: [x + 0.25 * (y - x) for x, y in zip(xs, ys)]),
    "_foreach_lerp": (lambda lib, xs, ys, zs: lib._foreach_lerp(xs, ys, 0.25),
                      lambda xs, ys, zs: [x + 0.25 * (y - x) for x, y in zip(xs, ys)]),
    "_foreach_sub": (lambda lib, xs, ys, zs: lib._foreach_sub(xs, ys, alpha=3),
                     lambda xs, ys, zs: [x - 3 * y for x, y in zip(xs, ys)]),
    "_foreach_sqrt": (lambda lib, xs, ys, zs: lib._foreach_sqrt(zs),
                      lambda xs, ys, zs: [np.sqrt(z) for z in zs]),
    "_foreach_sqrt_": (lambda lib, xs, ys, zs: lib._foreach_sqrt_(zs),
                       lambda xs, ys, zs: [np.sqrt(z) for z in zs]),
    "_foreach_neg": (lambda lib, xs, ys, zs: lib._foreach_neg(xs),
                     lambda xs, ys, zs: [-x for x in xs]),
    "_foreach_neg_": (lambda lib, xs, ys, zs: lib._foreach_neg_(xs),
                      lambda xs, ys, zs: [-x for x in xs]),
    "_foreach_zero_": (lambda lib, xs, ys, zs: lib._foreach_zero_(xs),
                       lambda xs, ys, zs: [np.zeros_like(x) for x in xs]),
    "_foreach_copy_": (lambda lib, xs, ys, zs: lib._foreach_copy_(xs, ys),
                       lambda xs, ys, zs: [y.copy() for y in ys]),
    "_foreach_norm": (lambda lib, xs, ys, zs: lib._foreach_norm(xs),
                      lambda xs, ys, zs: [np.sqrt((x.astype(np.float64) ** 2).sum())
                                          for x in xs]),
    "_foreach_norm ord=1": (lambda lib, xs, ys, zs: lib._foreach_norm(xs, 1),
                            lambda xs, ys, zs: [np.abs(x.astype(np.float64)).sum()
                                                for x in xs]),
}

# the looped list ops (no fused kernel): unary math on the positive list `zs` (in range of
# acos/asin after scaling), the bounds and pow against `ys` or a number
_UNARY_NP = {
    "abs": np.abs, "acos": lambda z: np.arccos(z / 2), "asin": lambda z: np.arcsin(z / 2),
    "atan": np.arctan, "ceil": np.ceil, "cos": np.cos, "cosh": np.cosh, "exp": np.exp,
    "expm1": np.expm1, "floor": np.floor, "frac": lambda z: z - np.trunc(z), "log": np.log,
    "log10": np.log10, "log1p": np.log1p, "log2": np.log2, "reciprocal": lambda z: 1 / z,
    "round": np.round, "rsqrt": lambda z: 1 / np.sqrt(z),
    "sigmoid": lambda z: 1 / (1 + np.exp(-z)), "sign": np.sign, "sin": np.sin,
    "sinh": np.sinh, "tan": np.tan, "tanh": np.tanh, "trunc": np.trunc,
    "erf": lambda z: np.vectorize(math.erf)(z), "erfc": lambda z: np.vectorize(math.erfc)(z),
    "lgamma": lambda z: np.vectorize(math.lgamma)(z),
}
_HALVED = ("acos", "asin")  # called on zs / 2


def _unary_case(name: str, inplace: bool) -> tuple[Callable[..., Any], Callable[..., list]]:
    op = f"_foreach_{name}{'_' if inplace else ''}"

    def call(lib: Any, xs: list, ys: list, zs: list) -> Any:
        if name in _HALVED:
            for z in zs:
                z.mul_(0.5)
        out = getattr(lib, op)(zs)
        return None if inplace else out
    return call, lambda xs, ys, zs: [_UNARY_NP[name](z) for z in zs]


for _name in _UNARY_NP:
    LIST_OPS[f"_foreach_{_name}"] = _unary_case(_name, False)
    LIST_OPS[f"_foreach_{_name}_"] = _unary_case(_name, True)
LIST_OPS.update({
    "_foreach_maximum": (lambda lib, xs, ys, zs: lib._foreach_maximum(xs, ys),
                         lambda xs, ys, zs: [np.maximum(x, y) for x, y in zip(xs, ys)]),
    "_foreach_minimum": (lambda lib, xs, ys, zs: lib._foreach_minimum(xs, 0.5),
                         lambda xs, ys, zs: [np.minimum(x, 0.5) for x in xs]),
    "_foreach_minimum_": (lambda lib, xs, ys, zs: lib._foreach_minimum_(xs, ys),
                          lambda xs, ys, zs: [np.minimum(x, y) for x, y in zip(xs, ys)]),
    "_foreach_clamp_min": (lambda lib, xs, ys, zs: lib._foreach_clamp_min(xs, [0.0, 0.5, 1.0]),
                           lambda xs, ys, zs: [np.maximum(x, s)
                                               for x, s in zip(xs, [0.0, 0.5, 1.0])]),
    "_foreach_clamp_min_": (lambda lib, xs, ys, zs: lib._foreach_clamp_min_(xs, -0.5),
                            lambda xs, ys, zs: [np.maximum(x, -0.5) for x in xs]),
    "_foreach_clamp_max": (lambda lib, xs, ys, zs: lib._foreach_clamp_max(xs, ys),
                           lambda xs, ys, zs: [np.minimum(x, y) for x, y in zip(xs, ys)]),
    "_foreach_clamp_max_": (lambda lib, xs, ys, zs: lib._foreach_clamp_max_(xs, 0.25),
                            lambda xs, ys, zs: [np.minimum(x, 0.25) for x in xs]),
    "_foreach_pow": (lambda lib, xs, ys, zs: lib._foreach_pow(zs, ys),
                     lambda xs, ys, zs: [z ** y for z, y in zip(zs, ys)]),
    "_foreach_pow scalar base": (lambda lib, xs, ys, zs: lib._foreach_pow(2.0, xs),
                                 lambda xs, ys, zs: [2.0 ** x for x in xs]),
    "_foreach_pow_": (lambda lib, xs, ys, zs: lib._foreach_pow_(xs, 2),
                      lambda xs, ys, zs: [x ** 2 for x in xs]),
    "_foreach_addcmul": (lambda lib, xs, ys, zs: lib._foreach_addcmul(xs, ys, zs, value=3),
                         lambda xs, ys, zs: [x + 3 * y * z for x, y, z in zip(xs, ys, zs)]),
    "_foreach_addcdiv": (lambda lib, xs, ys, zs: lib._foreach_addcdiv(xs, ys, zs),
                         lambda xs, ys, zs: [x + y / z for x, y, z in zip(xs, ys, zs)]),
    "_foreach_clone": (lambda lib, xs, ys, zs: lib._foreach_clone(xs),
                       lambda xs, ys, zs: [x.copy() for x in xs]),
    "_foreach_max": (lambda lib, xs, ys, zs: lib._foreach_max(xs),
                     lambda xs, ys, zs: [x.max() for x in xs]),
})


def run_list_op(lib: Any, name: str, make: Callable[[np.ndarray], Any]) -> list:
    """Run list op `name` on fresh lists; returns what it returned, or the list it wrote."""
    xs, ys, zs = ([make(a) for a in arrays] for arrays in (_XS, _YS, _ZS))
    out = LIST_OPS[name][0](lib, xs, ys, zs)
    if out is not None:
        return list(out)
    op = name.split()[0]
    return zs if op == "_foreach_sqrt_" or op.removesuffix("_")[9:] in _UNARY_NP else xs


@pytest.mark.parametrize("name", sorted(LIST_OPS))
def test_list_op(device: ember.device, name: str) -> None:
    got = run_list_op(ember, name, lambda a: S.on(device, a))
    refs = LIST_OPS[name][1](_XS, _YS, _ZS)
    assert len(got) == len(refs) == 3
    for i, (g, r) in enumerate(zip(got, refs)):
        # each result keeps its own tensor's dtype (the 0-d norms too)
        S.assert_matches(g, np.asarray(r).astype(_DTYPES[i]), device,
                         dtype=getattr(ember, _DTYPES[i]), what=f"{name}: tensor {i}")
    if S.torch is not None:
        want = run_list_op(S.torch, name, lambda a: S.torch.tensor(a))
        for i, (g, t) in enumerate(zip(got, want)):
            S.assert_matches(g, t.numpy(), device, what=f"{name}: tensor {i} vs torch")


def _sgd_reference(params: list, grads: list, bufs: list, *, lr: float, momentum: float,
                   dampening: float, weight_decay: float, nesterov: bool,
                   maximize: bool) -> None:
    """PyTorch's SGD step (torch.optim.SGD's documented algorithm), in place, in NumPy."""
    for i, (p, g) in enumerate(zip(params, grads)):
        g = -g if maximize else g
        g = g + weight_decay * p
        if momentum:
            bufs[i] = g.copy() if bufs[i] is None else momentum * bufs[i] + (1 - dampening) * g
            g = g + momentum * bufs[i] if nesterov else bufs[i]
        p -= lr * g


@pytest.mark.parametrize("config", [
    dict(momentum=0.9, dampening=0.1, weight_decay=0.01, nesterov=False, maximize=False),
    dict(momentum=0.5, dampening=0.0, weight_decay=0.0, nesterov=True, maximize=True),
    dict(momentum=0.0, dampening=0.0, weight_decay=0.1, nesterov=False, maximize=False),
], ids=["momentum-dampening-decay", "nesterov-maximize", "plain"])
def test_fused_sgd(device: ember.device, config: dict) -> None:
    params = [S.on(device, a) for a in _XS]
    bufs: list = [None, None, None]
    ref_params, ref_bufs = [a.copy() for a in _XS], [None, None, None]
    for step in range(3):  # the first step creates the momentum buffers
        grads = [S.on(device, a * (step + 1)) for a in _YS]
        ember._fused_sgd_(params, grads, bufs, lr=0.1, **config)
        _sgd_reference(ref_params, [a * (step + 1) for a in _YS], ref_bufs, lr=0.1, **config)
        for i, (p, r) in enumerate(zip(params, ref_params)):
            S.assert_matches(p, r, device, what=f"step {step}: parameter {i}")
        for i, (b, r) in enumerate(zip(bufs, ref_bufs)):
            if r is None:
                assert b is None, f"step {step}: buffer {i} without momentum"
            else:
                S.assert_matches(b, r.astype(_DTYPES[i]), device,
                                 what=f"step {step}: momentum buffer {i}")


# -- what this module checks (ember.testing.test_coverage reads it) ---------------------

COVERS = {name.split()[0] for name in LIST_OPS} | {"_fused_sgd_"}
"""The declared ops whose values this module's tests check."""
