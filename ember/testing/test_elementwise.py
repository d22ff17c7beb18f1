"""Elementwise ops on the device under test: unary, binary (broadcasting, scalars, type
promotion), comparisons, logical and bitwise ops, where, clamp and cast, against NumPy."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ember
from ember.testing import support as S

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, np.zeros((), x.dtype))


@dataclass(frozen=True)
class Unary:
    name: str
    ref: Callable[[np.ndarray], np.ndarray]
    lo: float = -4.0
    hi: float = 4.0
    kind: str = "float"  # float: result is floating; same: keeps dtype; bool: bool
    avoid_zero: bool = False
    dtypes: tuple = ()


_SAME_DTYPES = tuple(S.INTEGER + S.FLOATING)
_FLOAT_IN = (ember.int32, ember.int64, ember.uint8) + tuple(S.FLOATING)

UNARY = [
    Unary("neg", np.negative, kind="same", dtypes=_SAME_DTYPES),
    Unary("abs", np.abs, kind="same", dtypes=_SAME_DTYPES),
    Unary("sign", np.sign, kind="same", dtypes=_SAME_DTYPES),
    Unary("floor", np.floor, kind="same", dtypes=_SAME_DTYPES),
    Unary("ceil", np.ceil, kind="same", dtypes=_SAME_DTYPES),
    Unary("round", np.round, kind="same", dtypes=_SAME_DTYPES),  # half to even
    Unary("trunc", np.trunc, kind="same", dtypes=_SAME_DTYPES),
    Unary("relu", _relu, kind="same", dtypes=_SAME_DTYPES),
    Unary("exp", np.exp),
    Unary("log", np.log, lo=0.05, hi=8.0),
    Unary("log2", np.log2, lo=0.05, hi=8.0),
    Unary("log1p", np.log1p, lo=-0.9, hi=4.0),
    Unary("expm1", np.expm1),
    Unary("sqrt", np.sqrt, lo=0.0, hi=8.0),
    Unary("rsqrt", lambda x: 1.0 / np.sqrt(x), lo=0.05, hi=8.0),
    Unary("sin", np.sin),
    Unary("cos", np.cos),
    Unary("tan", np.tan, lo=-1.2, hi=1.2),
    Unary("tanh", np.tanh),
    Unary("sigmoid", lambda x: 1.0 / (1.0 + np.exp(-x)), lo=-8.0, hi=8.0),
    Unary("erf", _erf, lo=-3.0, hi=3.0),
    Unary("asin", np.arcsin, lo=-0.99, hi=0.99),
    Unary("acos", np.arccos, lo=-0.99, hi=0.99),
    Unary("atan", np.arctan),
    Unary("reciprocal", np.reciprocal, avoid_zero=True),
    Unary("logical_not", np.logical_not, kind="bool", dtypes=tuple(S.ALL_DTYPES)),
    Unary("isnan", np.isnan, kind="bool", dtypes=tuple(S.ALL_DTYPES)),
    Unary("isinf", np.isinf, kind="bool", dtypes=tuple(S.ALL_DTYPES)),
    Unary("isfinite", np.isfinite, kind="bool", dtypes=tuple(S.ALL_DTYPES)),
    Unary("bitwise_not", np.invert, kind="same", dtypes=tuple(S.BOOL + S.INTEGER)),
]


def _layouts(draw: st.DrawFn, device: ember.device, arr: np.ndarray,
             d: ember.dtype) -> ember.Tensor:
    """A tensor on `device` equal to `arr`, laid out contiguously, transposed, or as a
    strided slice of a larger tensor: kernels must honour every layout."""
    layout = draw(st.sampled_from(["contiguous", "transposed", "strided"])) \
        if arr.ndim else "contiguous"
    if layout == "transposed" and arr.ndim >= 2:
        order = tuple(reversed(range(arr.ndim)))
        t = S.on(device, np.ascontiguousarray(arr.transpose(order)), d).permute(order)
        assert not t.is_contiguous() or 1 in arr.shape
        return t
    if layout == "strided":
        big = np.repeat(arr, 2, axis=-1)
        return S.on(device, big, d)[..., ::2]
    return S.on(device, arr, d)


def _with_specials(arr: np.ndarray, d: ember.dtype, draw: st.DrawFn) -> np.ndarray:
    """Sprinkle NaN and +-inf into a floating array (for isnan and friends)."""
    if not d.is_floating_point or arr.size == 0:
        return arr
    out = arr.astype(np.float64)
    picks = draw(st.lists(st.sampled_from([np.nan, np.inf, -np.inf]), max_size=3))
    for i, v in enumerate(picks[: out.size]):
        out.flat[i] = v
    return out.astype(S.np_dtype(d))


@pytest.mark.parametrize("spec", UNARY, ids=lambda s: s.name)
@S.prop()
@given(data=st.data())
def test_unary(device: ember.device, spec: Unary, data: st.DataObject) -> None:
    d = data.draw(S.dtypes(device, spec.dtypes or _FLOAT_IN), label="dtype")
    shape = data.draw(S.shapes(), label="shape")
    lo = max(spec.lo, 0.0) if d is ember.uint8 else spec.lo
    arr = data.draw(S.arrays(d, shape, lo, spec.hi), label="x")
    if spec.avoid_zero:
        arr = np.where(np.abs(arr.astype(np.float64)) < 0.25, 0.5, arr).astype(arr.dtype)
    if spec.name in ("isnan", "isinf", "isfinite"):
        arr = _with_specials(arr, d, data.draw)
    x = _layouts(data.draw, device, arr, d)
    out = getattr(ember, spec.name)(x)
    method = getattr(x, spec.name)()
    if spec.kind == "bool":
        want_dtype = ember.bool
    elif spec.kind == "same":
        want_dtype = d
    else:
        want_dtype = d if d.is_floating_point else ember.get_default_dtype()
    if spec.kind == "same" and not d.is_floating_point:
        ref = spec.ref(arr)  # integer arithmetic (wrapping) in the input's dtype
    else:
        with np.errstate(all="ignore"):
            ref = spec.ref(arr.astype(np.float64) if spec.kind != "bool" else arr)
    S.assert_matches(out, S.reference_cast(ref, want_dtype), device, dtype=want_dtype,
                     what=f"{spec.name}({d})")
    S.assert_matches(method, S.host(out), device, dtype=want_dtype, what="method form")


def test_unary_specials(device: ember.device) -> None:
    """NaN and infinities propagate as in IEEE arithmetic (and PyTorch), silently."""
    x = S.on(device, np.array([np.nan, np.inf, -np.inf, 0.0, -1.0], np.float32))
    with np.errstate(all="ignore"):
        for name, ref in (("exp", np.exp), ("log", np.log), ("sqrt", np.sqrt),
                          ("reciprocal", np.reciprocal), ("tanh", np.tanh),
                          ("sigmoid", lambda v: 1 / (1 + np.exp(-v)))):
            S.assert_matches(getattr(ember, name)(x), ref(S.host(x)), device, what=name)
    S.assert_matches(ember.isnan(x), [True, False, False, False, False], device)
    S.assert_matches(ember.isinf(x), [False, True, True, False, False], device)
    S.assert_matches(ember.isfinite(x), [False, False, False, True, True], device)


def test_relu_gradient_at_nan_zero_and_infinities(device: ember.device) -> None:
    """PyTorch's threshold_backward: the gradient is 0 where the output is <= 0 (either
    zero), else the incoming gradient, NaN outputs included; a NaN gradient stays where
    it is kept and becomes 0 where it is not."""
    for d in S.held(device, [ember.float32, ember.float64, ember.bfloat16]):
        x = S.on(device, np.array([np.nan, -1.0, 0.0, -0.0, 2.0, np.inf, -np.inf]), d,
                 requires_grad=True)
        g = S.on(device, np.array([1.0, 1.0, 1.0, 1.0, 1.0, np.nan, np.nan]), d)
        ember.relu(x).backward(g)
        S.assert_matches(x.grad, np.array([1.0, 0, 0, 0, 1.0, np.nan, 0]), device, dtype=d,
                         what=f"relu's gradient ({d})")


def test_unary_errors(device: ember.device) -> None:
    b = S.on(device, [True, False])
    with pytest.raises(RuntimeError, match="Negation.*bool"):
        _ = -b
    with pytest.raises(RuntimeError, match="bitwise_not"):
        ember.bitwise_not(S.on(device, [1.5]))
    assert (~b).tolist() == [False, True]
    assert (~S.on(device, [0, 5], ember.int16)).tolist() == [-1, -6]


def test_round_decimals(device: ember.device) -> None:
    x = S.on(device, np.array([1.2345, -2.5551, 0.5, 1.5, 2.5], np.float64))
    S.assert_matches(ember.round(x, decimals=2), np.round(S.host(x), 2), device)
    S.assert_matches(ember.round(x), [1.0, -3.0, 0.0, 2.0, 2.0], device)


# -- binary ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Binary:
    name: str
    ref: Callable[[np.ndarray, np.ndarray], np.ndarray]
    kind: str  # arith | float | compare | logical | bitwise
    lo: float = -6.0
    hi: float = 6.0
    nonzero_rhs: bool = False
    small_rhs: bool = False  # pow: exponents in [0, 3] for integers, [-2, 2] for floats


BINARY = [
    Binary("add", np.add, "arith"),
    Binary("sub", np.subtract, "arith"),
    Binary("mul", np.multiply, "arith"),
    Binary("pow", np.power, "arith", lo=-4.0, hi=4.0, small_rhs=True),
    Binary("maximum", np.maximum, "arith"),
    Binary("minimum", np.minimum, "arith"),
    Binary("remainder", np.remainder, "arith", nonzero_rhs=True),
    Binary("floor_divide", np.floor_divide, "arith", nonzero_rhs=True),
    Binary("div", np.true_divide, "float", nonzero_rhs=True),
    Binary("atan2", np.arctan2, "float"),
    Binary("eq", np.equal, "compare", lo=-2, hi=2),
    Binary("ne", np.not_equal, "compare", lo=-2, hi=2),
    Binary("lt", np.less, "compare", lo=-2, hi=2),
    Binary("le", np.less_equal, "compare", lo=-2, hi=2),
    Binary("gt", np.greater, "compare", lo=-2, hi=2),
    Binary("ge", np.greater_equal, "compare", lo=-2, hi=2),
    Binary("logical_and", np.logical_and, "logical", lo=-1, hi=1),
    Binary("logical_or", np.logical_or, "logical", lo=-1, hi=1),
    Binary("logical_xor", np.logical_xor, "logical", lo=-1, hi=1),
    Binary("bitwise_and", np.bitwise_and, "bitwise"),
    Binary("bitwise_or", np.bitwise_or, "bitwise"),
    Binary("bitwise_xor", np.bitwise_xor, "bitwise"),
]
_NO_BOOL_PAIR = {"sub", "pow", "remainder", "floor_divide"}


def _dtype_pair(device: ember.device, spec: Binary) -> st.SearchStrategy:
    pool = S.BOOL + S.INTEGER if spec.kind == "bitwise" else S.ALL_DTYPES
    if spec.name == "sub":  # PyTorch refuses `-` on any bool tensor
        pool = S.NUMERIC
    pairs = st.tuples(S.dtypes(device, pool), S.dtypes(device, pool))
    if spec.name in _NO_BOOL_PAIR:
        pairs = pairs.filter(lambda p: not (p[0] is ember.bool and p[1] is ember.bool))
    return pairs


def _expected_dtype(spec: Binary, common: ember.dtype) -> ember.dtype:
    if spec.kind in ("compare", "logical"):
        return ember.bool
    if spec.kind == "float" and not common.is_floating_point:
        return ember.get_default_dtype()
    return common


def _operand_values(spec: Binary, d: ember.dtype, shape: tuple, rhs: bool,
                    draw: st.DrawFn) -> np.ndarray:
    lo, hi = spec.lo, spec.hi
    if rhs and spec.small_rhs:
        lo, hi = (0, 3) if not d.is_floating_point else (-2, 2)
    if d is ember.uint8:
        lo = max(lo, 0)
    arr = draw(S.arrays(d, shape, lo, hi, nice=True))
    if rhs and spec.nonzero_rhs and d is not ember.bool:
        arr = np.where(arr == 0, np.ones((), arr.dtype) * 2, arr).astype(arr.dtype)
    if rhs and spec.nonzero_rhs and d is ember.bool:
        arr = np.ones_like(arr)
    return arr


def _reference(spec: Binary, a: np.ndarray, b: np.ndarray, common: ember.dtype,
               want: ember.dtype) -> np.ndarray:
    with np.errstate(all="ignore"):
        if spec.kind == "logical":
            return spec.ref(a.astype(bool), b.astype(bool))
        if common.is_floating_point or spec.kind == "float":
            # compute on the exact values in float64, then round once to the result dtype
            return S.reference_cast(spec.ref(a.astype(np.float64), b.astype(np.float64)),
                                    want)
        c = S.np_dtype(common)
        return np.asarray(spec.ref(a.astype(c), b.astype(c)))  # integer (wrapping) math


@pytest.mark.parametrize("spec", BINARY, ids=lambda s: s.name)
@S.prop()
@given(data=st.data())
def test_binary(device: ember.device, spec: Binary, data: st.DataObject) -> None:
    da, db = data.draw(_dtype_pair(device, spec), label="dtypes")
    sa, sb = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3,
                                                         max_side=4), label="shapes").input_shapes
    a = _operand_values(spec, da, sa, False, data.draw)
    b = _operand_values(spec, db, sb, True, data.draw)
    x, y = _layouts(data.draw, device, a, da), _layouts(data.draw, device, b, db)
    common = S.result_type(x, y)
    want = _expected_dtype(spec, common)
    out = getattr(ember, spec.name)(x, y)
    ref = _reference(spec, a, b, common, want)
    S.assert_matches(out, ref, device, dtype=want, what=f"{spec.name}({da}, {db})")


_OPERATORS = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv,
    "pow": operator.pow, "floor_divide": operator.floordiv, "remainder": operator.mod,
    "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
    "gt": operator.gt, "ge": operator.ge, "bitwise_and": operator.and_,
    "bitwise_or": operator.or_, "bitwise_xor": operator.xor,
}


@pytest.mark.parametrize("name", sorted(_OPERATORS))
@S.prop()
@given(data=st.data())
def test_binary_scalar_operands(device: ember.device, name: str, data: st.DataObject) -> None:
    """`tensor op scalar` and `scalar op tensor`: a Python scalar only lifts the result's
    category (int8 + 1000 stays int8, int + 1.5 becomes the default float dtype)."""
    spec = next(s for s in BINARY if s.name == name)
    pool = S.BOOL + S.INTEGER if spec.kind == "bitwise" else S.NUMERIC
    d = data.draw(S.dtypes(device, pool), label="dtype")
    scalar_kinds = ["bool", "int"] if spec.kind == "bitwise" else ["int", "float"]
    kind = data.draw(st.sampled_from(scalar_kinds), label="scalar kind")
    reflected = data.draw(st.booleans(), label="scalar on the left")
    if spec.small_rhs and not reflected:
        value = data.draw(st.integers(0, 3)) if kind == "int" else data.draw(
            st.sampled_from([0.5, 2.0, -1.0]))
    elif kind == "bool":
        value = data.draw(st.booleans())
    elif kind == "int":
        value = data.draw(st.integers(1, 5) if spec.nonzero_rhs or reflected and
                          spec.small_rhs else st.integers(-5, 5))
    else:
        value = data.draw(st.sampled_from([1.5, -2.25, 0.5, 3.0]))
    shape = data.draw(S.shapes(min_dims=1), label="shape")
    lo = 0 if d is ember.uint8 else -4
    arr = data.draw(S.arrays(d, shape, lo, 4, nice=True), label="x")
    if reflected and spec.nonzero_rhs:
        arr = np.where(arr == 0, np.ones((), arr.dtype) * 3, arr).astype(arr.dtype)
    if reflected and spec.small_rhs:
        arr = np.abs(arr) % 3 if not d.is_floating_point else arr
    x = S.on(device, arr, d)
    common = S.result_type(x, value)
    want = _expected_dtype(spec, common)
    fn = _OPERATORS[name]
    out = fn(value, x) if reflected else fn(x, value)
    sv = np.asarray(value)
    ref = _reference(spec, sv, arr, common, want) if reflected else \
        _reference(spec, arr, sv, common, want)
    if not common.is_floating_point and spec.kind == "arith":
        # the scalar is held in the tensor's integer dtype, wrapping as a C cast does
        c = S.np_dtype(common)
        wrapped = np.asarray(value).astype(np.int64).astype(c)
        with np.errstate(all="ignore"):
            ref = spec.ref(wrapped, arr.astype(c)) if reflected else \
                spec.ref(arr.astype(c), wrapped)
    S.assert_matches(out, ref, device, dtype=want,
                     what=f"{'scalar ' if reflected else ''}{name} "
                          f"{'' if reflected else 'scalar '}({d}, {value!r})")


def test_integer_scalar_keeps_width(device: ember.device) -> None:
    x = S.on(device, [100, -100], ember.int8)
    S.assert_matches(x + 1000, np.array([100, -100], np.int8) + np.int8(1000 - 1024),
                     device, dtype=ember.int8)
    S.assert_matches(x * 1.5, [150.0, -150.0], device, dtype=ember.float32)
    h = S.on(device, [1.0, 2.0], ember.float16)
    assert (h + 2.5).dtype is ember.float16
    assert (h + S.on(device, 2.5, ember.float64)).dtype is ember.float16  # 0-dim: same category
    assert (S.on(device, [1, 2], ember.int32) + S.on(device, 2.5, ember.float64)).dtype \
        is ember.float64


def test_binary_errors(device: ember.device) -> None:
    a, b = S.on(device, np.zeros((2, 3))), S.on(device, np.zeros((4,)))
    with pytest.raises(RuntimeError, match=r"add.*\[2, 3\].*\[4\]"):
        a + b
    t = S.on(device, [True])
    with pytest.raises(RuntimeError, match="Subtraction.*two bool tensors"):
        _ = t - t
    with pytest.raises(RuntimeError, match="Subtraction.*a bool tensor"):
        _ = t - S.on(device, [1.0])
    with pytest.raises(RuntimeError, match="bitwise_and"):
        S.on(device, [1.0]) & S.on(device, [1.0])


def test_division_semantics(device: ember.device) -> None:
    a = S.on(device, [7, -7, 7, -7])
    b = S.on(device, [2, 2, -2, -2])
    S.assert_matches(a / b, [3.5, -3.5, -3.5, 3.5], device, dtype=ember.float32)
    S.assert_matches(a // b, [3, -4, -4, 3], device, dtype=ember.int64)
    S.assert_matches(a % b, [1, 1, -1, -1], device, dtype=ember.int64)
    S.assert_matches(ember.div(a, b, rounding_mode="trunc"), [3, -3, -3, 3], device,
                     dtype=ember.int64)
    S.assert_matches(ember.div(a, b, rounding_mode="floor"), [3, -4, -4, 3], device,
                     dtype=ember.int64)
    f = S.on(device, [1.0, -1.0, 0.0])
    S.assert_matches(f / 0.0, [np.inf, -np.inf, np.nan], device)


# -- where, clamp, cast ---------------------------------------------------------------


@S.prop()
@given(data=st.data())
def test_where(device: ember.device, data: st.DataObject) -> None:
    sc, sx, sy = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3,
                                                             max_side=4)).input_shapes
    dx, dy = data.draw(S.dtypes(device, S.ALL_DTYPES)), data.draw(S.dtypes(device, S.ALL_DTYPES))
    cond = data.draw(S.arrays(ember.bool, sc))
    a = data.draw(S.arrays(dx, sx, 0, 9, nice=True))
    b = data.draw(S.arrays(dy, sy, 0, 9, nice=True))
    scalar = data.draw(st.sampled_from([None, "x", "y"]))
    x = S.on(device, a, dx) if scalar != "x" else 2.5
    y = S.on(device, b, dy) if scalar != "y" else 7
    common = S.result_type(x, y)
    c = _layouts(data.draw, device, cond, ember.bool)
    out = ember.where(c, x, y)
    ref = np.where(cond, np.asarray(x if scalar == "x" else a).astype(np.float64),
                   np.asarray(y if scalar == "y" else b).astype(np.float64))
    S.assert_matches(out, S.reference_cast(ref, common), device, dtype=common)
    if scalar is None:
        S.assert_matches(x.where(c, y), S.host(out), device, dtype=common)


def test_where_condition_only(device: ember.device) -> None:
    c = S.on(device, np.array([[True, False], [False, True]]))
    rows, cols = ember.where(c)
    S.assert_matches(rows, [0, 1], device, dtype=ember.int64)
    S.assert_matches(cols, [0, 1], device, dtype=ember.int64)
    with pytest.raises(RuntimeError, match="where.*bool"):
        ember.where(S.on(device, [1, 0]), S.on(device, [1.0, 2.0]), 0.0)


@S.prop()
@given(data=st.data())
def test_clamp(device: ember.device, data: st.DataObject) -> None:
    d = data.draw(S.dtypes(device, S.NUMERIC), label="dtype")
    shape = data.draw(S.shapes(), label="shape")
    lo0 = 0 if d is ember.uint8 else -8
    arr = data.draw(S.arrays(d, shape, lo0, 8, nice=True), label="x")
    bound = st.one_of(st.none(), st.integers(lo0 // 2, 6), st.sampled_from([-2.5, 0.5, 3.25]))
    lo, hi = data.draw(bound, label="min"), data.draw(bound, label="max")
    if lo is None and hi is None:
        lo = 1
    x = _layouts(data.draw, device, arr, d)
    want = S.result_type(x, *[v for v in (lo, hi) if v is not None])
    out = ember.clamp(x, min=lo, max=hi)
    ref = np.clip(arr.astype(np.float64), lo, hi)  # min > max: every value becomes max
    S.assert_matches(out, S.reference_cast(ref, want), device, dtype=want,
                     what=f"clamp({d}, min={lo}, max={hi})")
    S.assert_matches(x.clip(lo, hi), S.host(out), device, dtype=want, what="clip")


def test_clamp_tensor_bounds_and_errors(device: ember.device) -> None:
    x = S.on(device, np.arange(6, dtype=np.float32).reshape(2, 3))
    lo = S.on(device, np.array([1.0, 0.0, 4.0], np.float32))
    hi = S.on(device, np.array([[2.0], [4.5]], np.float32))
    S.assert_matches(ember.clamp(x, lo, hi), np.minimum(np.maximum(S.host(x), S.host(lo)),
                                                        S.host(hi)), device)
    S.assert_matches(x.clamp_min(2.0), np.maximum(S.host(x), 2.0), device)
    S.assert_matches(x.clamp_max(2.0), np.minimum(S.host(x), 2.0), device)
    S.assert_matches(x.clamp(3.0, 1.0), np.full((2, 3), 1.0), device)  # max wins, as torch
    with pytest.raises(RuntimeError, match="clamp: At least one of 'min' or 'max' must not "
                                           "be None"):
        ember.clamp(x)


@S.prop()
@given(data=st.data())
def test_cast(device: ember.device, data: st.DataObject) -> None:
    src, dst = data.draw(S.dtypes(device, S.ALL_DTYPES)), data.draw(S.dtypes(device, S.ALL_DTYPES))
    shape = data.draw(S.shapes(), label="shape")
    # floats are cast to integers only where the result is defined (in range)
    lo = 0 if (dst is ember.uint8 or src is ember.uint8) else -100
    hi = 100 if src.is_floating_point and not dst.is_floating_point else 300
    if src in (ember.int8,):
        hi = 127
    arr = data.draw(S.arrays(src, shape, lo, hi), label="x")
    if src.is_floating_point and dst.is_floating_point:
        arr = data.draw(S.arrays(src, shape, -1e3, 1e3), label="x")
    x = _layouts(data.draw, device, arr, src)
    out = x.to(dst)
    S.assert_matches(out, arr.astype(S.np_dtype(dst)), device, dtype=dst,
                     what=f"cast {src} -> {dst}")
    assert x.to(src) is x  # no-op casts return the tensor itself, as torch does


def test_cast_methods(device: ember.device) -> None:
    x = S.on(device, np.array([1.7, -2.2, 0.0, 200.5], np.float64))
    for method, d in (("float", ember.float32), ("double", ember.float64),
                      ("half", ember.float16), ("bfloat16", ember.bfloat16),
                      ("long", ember.int64), ("int", ember.int32), ("short", ember.int16),
                      ("bool", ember.bool), ("cfloat", ember.complex64),
                      ("cdouble", ember.complex128)):
        if not S.holds(device, d):
            continue
        out = getattr(x, method)()
        S.assert_matches(out, S.host(x).astype(S.np_dtype(d)), device, dtype=d, what=method)
    # int8 and uint8 only where the value is in range (else the C cast is undefined)
    small = S.on(device, np.array([1.7, -2.2, 0.0, 100.5], np.float64))
    S.assert_matches(small.char(), [1, -2, 0, 100], device, dtype=ember.int8, what="char")
    S.assert_matches(x.abs().byte(), [1, 2, 0, 200], device, dtype=ember.uint8, what="byte")
    S.assert_matches(x.type(ember.int16), [1, -2, 0, 200], device, dtype=ember.int16,
                     what="type(dtype)")
    assert x.type(ember.float64) is x  # no-op, like to()
    if not S.holds(device, ember.complex32):  # chalf: a dtype the device does not hold
        with pytest.raises(RuntimeError, match="cannot hold"):
            x.chalf()


def test_type_names_follow_torch(device: ember.device) -> None:
    for d, name in ((ember.float32, "FloatTensor"), (ember.float64, "DoubleTensor"),
                    (ember.int64, "LongTensor"), (ember.bool, "BoolTensor")):
        # PyTorch's names: "torch.FloatTensor" on the CPU, "torch.cuda.FloatTensor" ...
        kind = "" if device.type == "cpu" else f"{device.type}."
        assert ember.zeros(2, dtype=d, device=device).type() == f"ember.{kind}{name}"
    x = ember.zeros(2, device=device)
    assert x.type("ember.DoubleTensor").dtype is ember.float64


# -- comparisons of whole tensors, and small conveniences -----------------------------


def test_isclose_allclose_equal(device: ember.device) -> None:
    a = np.array([1.0, 1.0, 1.0, np.nan, np.inf, -np.inf, 0.0, 1e-9, 2.0])
    b = np.array([1.0, 1.0 + 1e-6, 1.1, np.nan, np.inf, -np.inf, 1e-9, 0.0, np.nan])
    x, y = S.on(device, a), S.on(device, b)
    # |a - b| <= atol + rtol * |b| (NumPy's rule too); NaN close to NaN only if asked
    with np.errstate(invalid="ignore"):
        for kw in ({}, {"rtol": 0.2}, {"atol": 1e-8, "rtol": 0.0}, {"equal_nan": True}):
            S.assert_matches(ember.isclose(x, y, **kw), np.isclose(a, b, **kw), device,
                             dtype=ember.bool, what=f"isclose {kw}")
    S.assert_matches(x.isclose(x), np.isclose(a, a), device, what="isclose method")
    assert ember.allclose(x[:2], y[:2]) is True and ember.allclose(x, y) is False
    assert x[:3].allclose(y[:3], rtol=0.2) is True
    assert ember.allclose(x, x, equal_nan=True) and not ember.allclose(x, x)
    i = S.on(device, np.array([[1, 2], [3, 4]]))
    assert ember.equal(i, i.clone()) is True and i.equal(i.t().contiguous().t())
    assert not ember.equal(i, i + 1) and not ember.equal(i, i[:1])  # values; shapes
    assert ember.equal(i, i.double())  # torch compares values across dtypes


def test_positive_and_rsub(device: ember.device) -> None:
    a = np.array([[1.5, -2.0, 0.0]])
    b = np.array([[4.0], [-1.0]])
    x, y = S.on(device, a), S.on(device, b)
    S.assert_matches(ember.positive(x), a, device, what="positive")
    S.assert_matches(x.positive(), a, device, what="positive method")
    S.assert_matches(ember.rsub(x, y), b - a, device, what="rsub")  # other - input
    S.assert_matches(ember.rsub(x, y, alpha=3), b - 3 * a, device, what="rsub alpha")
    S.assert_matches(ember.rsub(x, 2.0), 2.0 - a, device, what="rsub scalar")
    n = S.on(device, np.array([1, 5, -3], np.int32))
    S.assert_matches(ember.rsub(n, 10), [9, 5, 13], device, dtype=ember.int32,
                     what="rsub keeps the integer dtype")


def test_isclose_infinities_follow_torch(device: ember.device) -> None:
    a = np.array([1.0, -np.inf, np.inf, 0.0])
    b = np.array([np.inf, np.inf, -np.inf, -np.inf])
    x, y = S.on(device, a), S.on(device, b)
    S.assert_matches(ember.isclose(x, y), [False, False, False, False], device)
    assert not ember.allclose(x, y)


_TORCH_REFUSES = {
    "positive(bool)": lambda x, i: ember.positive(x),
    "addcdiv(int64)": lambda x, i: ember.addcdiv(i, i, i),  # torch: no integer division here
}


@pytest.mark.parametrize("case", sorted(_TORCH_REFUSES))
def test_refuses_what_torch_refuses(device: ember.device, case: str) -> None:
    b, i = S.on(device, np.array([True, False])), S.on(device, np.array([1, 2, 3]))
    with pytest.raises(RuntimeError):
        _TORCH_REFUSES[case](b, i)


def test_square_of_bool_is_int64(device: ember.device) -> None:
    out = ember.square(S.on(device, np.array([True, False])))
    S.assert_matches(out, [1, 0], device, dtype=ember.int64)


def test_result_type_matches_the_promotion_oracle(device: ember.device) -> None:
    tensors = [S.on(device, np.zeros(2, S.np_dtype(d)), d) for d in S.held(device)]
    zero_dim = [S.on(device, np.zeros((), S.np_dtype(d)), d) for d in S.held(device)]
    for a in tensors:
        for b in tensors + zero_dim + [True, 3, 2.5]:
            assert ember.result_type(a, b) is S.result_type(a, b), (a.dtype, b)
    assert ember.result_type(3, 2.5) is ember.get_default_dtype()
    assert ember.result_type(True, 3) is ember.int64


def test_lerp_addcmul_addcdiv_square(device: ember.device) -> None:
    rng = np.random.default_rng(4)
    a, b, c = rng.uniform(-2, 2, (3, 4)), rng.uniform(-2, 2, (4,)), rng.uniform(0.5, 2, (3, 1))
    x, y, z = S.on(device, a), S.on(device, b), S.on(device, c)
    S.assert_matches(ember.lerp(x, y, 0.25), a + 0.25 * (b - a), device, what="lerp")
    S.assert_matches(x.lerp(y, z), a + c * (b - a), device, what="lerp, tensor weight")
    S.assert_matches(ember.addcmul(x, y, z, value=-0.5), a - 0.5 * b * c, device,
                     what="addcmul")
    S.assert_matches(x.addcdiv(y, z, value=2), a + 2 * b / c, device, what="addcdiv")
    S.assert_matches(ember.square(x), a * a, device, what="square")
    i = S.on(device, np.array([[1, -2], [3, 4]], np.int32))
    S.assert_matches(ember.addcmul(i, i, i, value=2), [[3, 6], [21, 36]], device,
                     dtype=ember.int32, what="addcmul of integers")
    S.assert_matches(i.square(), [[1, 4], [9, 16]], device, dtype=ember.int32,
                     what="square of integers")


# -- what this module checks (ember.testing.test_coverage reads it) ---------------------

COVERS = (
    {u.name for u in UNARY} | {b.name for b in BINARY} |
    {"where", "clamp", "clamp_min", "clamp_max", "cast", "to", "type", "float", "double",
     "half", "bfloat16", "long", "int", "short", "char", "byte", "bool", "cfloat",
     "cdouble", "chalf", "isclose",
     "allclose", "equal", "positive", "rsub", "result_type", "lerp", "addcmul", "addcdiv",
     "square", "logaddexp"}
)
"""The declared ops whose values this module's tests check."""
