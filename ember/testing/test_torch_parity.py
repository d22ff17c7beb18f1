"""ember on the device under test against PyTorch (skipped where torch is not
installed): forward values and gradients of every op in ember.testing.opinfo in float32
and float64, broadcasting gradients included; and result dtypes (or the refusal to run)
of every elementwise op over every pair of dtypes."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.testing import support as S
from ember.testing.opinfo import DIFF_OPS, DiffOp

torch = S.torch
pytestmark = pytest.mark.skipif(torch is None, reason="PyTorch (the oracle) is not installed")

_PARITY_TOL = {"float32": (1e-4, 1e-5), "float64": (1e-9, 1e-10)}


def _outputs(out: object) -> list:
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _torch_values(t: object) -> np.ndarray:
    return t.detach().cpu().numpy()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", [op for op in DIFF_OPS if op.torch], ids=lambda op: op.name)
def test_forward_and_backward_match_torch(device: ember.device, op: DiffOp,
                                          dtype: str) -> None:
    if op.complex and not S.holds(device, ember.complex128):
        pytest.skip(f"{op.name} computes with complex tensors, which {device} cannot hold")
    arrays = [a.astype(dtype) for a in op.inputs(seed=1)]
    e_in = [S.on(device, a, requires_grad=True) for a in arrays]
    t_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    e_out, t_out = _outputs(op.fn(ember, *e_in)), _outputs(op.fn(torch, *t_in))
    assert len(e_out) == len(t_out), f"{op.name}: {len(e_out)} outputs, torch gives " \
                                     f"{len(t_out)}"
    rtol, atol = _PARITY_TOL[dtype]
    for k, (e, t) in enumerate(zip(e_out, t_out)):
        assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], \
            f"{op.name} output {k}: dtype {e.dtype}, torch {t.dtype}"
        S.assert_matches(e, _torch_values(t), device, rtol=rtol, atol=atol,
                         what=f"{op.name} output {k}")
    # backward with a random upstream gradient for every output
    rng = np.random.default_rng(2)
    seeds = [rng.standard_normal(tuple(t.shape)).astype(dtype) for t in t_out]
    ember.autograd.backward(e_out, [S.on(device, s) for s in seeds])
    try:
        torch.autograd.backward(t_out, [torch.tensor(s) for s in seeds])
    except RuntimeError as err:  # an older torch lacks some derivatives (aminmax < 2.13)
        if "not implemented" not in str(err):
            raise
        pytest.skip(f"torch {torch.__version__} cannot differentiate {op.name}: {err}")
    for i, (e, t) in enumerate(zip(e_in, t_in)):
        if t.grad is None:
            assert e.grad is None or not np.any(S.host(e.grad)), \
                f"{op.name}: input {i} got a gradient, torch gives none"
            continue
        assert e.grad is not None, f"{op.name}: input {i} got no gradient"
        S.assert_matches(e.grad, _torch_values(t.grad), device, rtol=rtol, atol=atol,
                         what=f"{op.name}: gradient of input {i} {list(e.shape)}")


# -- dtypes: every op over every dtype (pair), as torch decides -------------------------

_DTYPE_NAMES = [d.name for d in S.ALL_DTYPES]


def _held(device: ember.device) -> list[str]:
    """The names of the dtypes that `device` holds tensors of."""
    return [d.name for d in S.held(device)]
_UNARY_NAMES = ["neg", "abs", "sign", "floor", "ceil", "round", "trunc", "relu", "exp",
                "log", "sqrt", "sin", "tanh", "sigmoid", "erf", "reciprocal", "logical_not",
                "isnan", "isfinite", "bitwise_not"]
_BINARY_NAMES = ["add", "sub", "mul", "div", "floor_divide", "remainder", "pow", "maximum",
                 "minimum", "atan2", "eq", "lt", "ge", "logical_and", "logical_xor",
                 "bitwise_and", "bitwise_or"]


def _sample(name: str, shape: tuple = (2, 3), divisor: bool = False) -> np.ndarray:
    """Small positive values every dtype holds exactly; a bool `divisor` is all True
    (integer division by zero is undefined on accelerators, so it is not tested)."""
    base = np.arange(1, 1 + int(np.prod(shape)), dtype=np.float64).reshape(shape) % 3 + 1
    if name == "bool":
        return base > (0.5 if divisor else 1.5)
    return base.astype(S.np_dtype(getattr(ember, name)))


def _run_both(fn_e, fn_t, e_args, t_args) -> tuple:
    """Run one op in ember and torch; return ((ember result | error), (torch ... ))."""
    results = []
    for fn, args in ((fn_e, e_args), (fn_t, t_args)):
        try:
            results.append(fn(*args))
        except (RuntimeError, TypeError, NotImplementedError) as err:
            results.append(err)
    return tuple(results)


def _torch_tensor(arr: np.ndarray, name: str) -> object:
    if name == "bfloat16":
        return torch.tensor(arr.astype(np.float32)).to(torch.bfloat16)
    return torch.tensor(arr)


def _check_pair(what: str, e: object, t: object, device: ember.device) -> None:
    if isinstance(t, Exception):
        assert isinstance(e, Exception), \
            f"{what}: torch refuses ({type(t).__name__}: {str(t).splitlines()[0]}), but " \
            f"ember returns a {e.dtype} result"
        return
    assert not isinstance(e, Exception), f"{what}: torch gives {t.dtype}, ember raises " \
                                         f"{type(e).__name__}: {e}"
    want = str(t.dtype).split(".")[-1]
    assert e.dtype.name == want, f"{what}: ember gives {e.dtype}, torch {t.dtype}"
    S.assert_matches(e, _torch_values(t.float() if want == "bfloat16" else t)
                     .astype(S.np_dtype(e.dtype)), device, what=what)


@pytest.mark.parametrize("name", _UNARY_NAMES)
def test_unary_dtypes_match_torch(device: ember.device, name: str) -> None:
    for dname in _held(device):
        arr = _sample(dname)
        e, t = _run_both(getattr(ember, name), getattr(torch, name),
                         [S.on(device, arr, getattr(ember, dname))],
                         [_torch_tensor(arr, dname)])
        _check_pair(f"{name}({dname})", e, t, device)


@pytest.mark.parametrize("name", _BINARY_NAMES)
def test_binary_dtypes_match_torch(device: ember.device, name: str) -> None:
    for a_name in _held(device):
        for b_name in _held(device):
            a, b = _sample(a_name), _sample(b_name, (3,), divisor=True)
            e, t = _run_both(getattr(ember, name), getattr(torch, name),
                             [S.on(device, a, getattr(ember, a_name)),
                              S.on(device, b, getattr(ember, b_name))],
                             [_torch_tensor(a, a_name), _torch_tensor(b, b_name)])
            _check_pair(f"{name}({a_name}[2, 3], {b_name}[3])", e, t, device)


@pytest.mark.parametrize("name", ["add", "mul", "sub", "div", "pow", "remainder",
                                  "floor_divide", "eq", "maximum"])
def test_scalar_and_zero_dim_promotion_matches_torch(device: ember.device, name: str) -> None:
    for a_name in _held(device):
        a = _sample(a_name)
        operands = [(2, 2), (2.5, 2.5), (True, True)] + [
            (S.on(device, _sample(n, (), True), getattr(ember, n)),
             _torch_tensor(_sample(n, (), True), n))
            for n in ("int8", "int64", "float16", "float64", "bool")]
        for e_other, t_other in operands:
            if name in ("maximum",) and not hasattr(e_other, "dtype"):
                continue  # torch.maximum takes tensors only
            if name == "pow" and e_other is True:
                continue  # torch's bool ** True is bool while bool ** tensor(True) raises
            e, t = _run_both(getattr(ember, name), getattr(torch, name),
                             [S.on(device, a, getattr(ember, a_name)), e_other],
                             [_torch_tensor(a, a_name), t_other])
            _check_pair(f"{name}({a_name}[2, 3], {e_other!r})", e, t, device)


def test_promotion_oracle_matches_torch() -> None:
    """The suite's own promotion table (used where torch is absent) is torch's."""
    for a in S.ALL_DTYPES:
        for b in S.ALL_DTYPES:
            want = torch.promote_types(getattr(torch, a.name), getattr(torch, b.name))
            assert S.promote_types(a, b).name == str(want).split(".")[-1], (a, b)
            assert ember.promote_types(a, b) is S.promote_types(a, b), (a, b)
    # and its tiers: a 0-dim tensor or a Python scalar only lifts the category
    for a in S.ALL_DTYPES:
        t_a = torch.zeros(2, dtype=getattr(torch, a.name))
        e_a = ember.zeros(2, dtype=a)
        for b in S.ALL_DTYPES:
            want = torch.result_type(t_a, torch.zeros((), dtype=getattr(torch, b.name)))
            got = S.result_type(e_a, ember.zeros((), dtype=b))
            assert got.name == str(want).split(".")[-1], (a, b, "0-dim")
        for scalar in (True, 3, 2.5):
            want = torch.result_type(t_a, scalar)
            assert S.result_type(e_a, scalar).name == str(want).split(".")[-1], (a, scalar)


@pytest.mark.parametrize("name", ["where", "clamp", "cast"])
def test_other_dtype_rules_match_torch(device: ember.device, name: str) -> None:
    cond = np.array([[True, False, True], [False, True, False]])
    for a_name in _held(device):
        a = _sample(a_name)
        if name == "where":
            for b_name in _held(device):
                b = _sample(b_name, (3,))
                e, t = _run_both(ember.where, torch.where,
                                 [S.on(device, cond), S.on(device, a, getattr(ember, a_name)),
                                  S.on(device, b, getattr(ember, b_name))],
                                 [torch.tensor(cond), _torch_tensor(a, a_name),
                                  _torch_tensor(b, b_name)])
                _check_pair(f"where(cond, {a_name}, {b_name})", e, t, device)
        elif name == "clamp":
            if a_name == "bool":
                continue  # torch has no clamp for bool
            for lo, hi in ((1, 2), (1.5, None), (None, 2.5), (0, 2.5)):
                e, t = _run_both(ember.clamp, torch.clamp,
                                 [S.on(device, a, getattr(ember, a_name)), lo, hi],
                                 [_torch_tensor(a, a_name), lo, hi])
                _check_pair(f"clamp({a_name}, {lo}, {hi})", e, t, device)
        else:
            for b_name in _held(device):
                e = S.on(device, a, getattr(ember, a_name)).to(getattr(ember, b_name))
                t = _torch_tensor(a, a_name).to(getattr(torch, b_name))
                _check_pair(f"{a_name}.to({b_name})", e, t, device)
