"""The in-place (`x.<op>_(...)`) and `out=` variants of every op that declares one, through
the public API, on the device under test.

The ops' values are checked elsewhere; here, that each variant writes what the
out-of-place op returns: an in-place op returns the tensor itself, keeps its dtype (the
result cast to it, or an error when it cannot be cast, as torch) and bumps its version (so
autograd notices the write); an `out=` call returns `out`, resized from empty as needed. The
parameters come from the declarations, so a new variant is checked without a new test (one
whose op takes arguments needs a row in `_INPLACE_ARGS` / `_OUT_ARGS`). Where torch is
installed, the same call on torch tensors gives the same values.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ember
from ember.core.opdef import OPS
from ember.core.ops.elementwise import UNARY_BY_RULE
from ember.testing import support as S

_RNG = np.random.default_rng(13)
# inputs inside every op's domain (log, sqrt, asin, acos, reciprocal ...): floats in
# (0.1, 0.9), integers in [1, 9]; `col` is a (3, 1) column for squeeze_
_INPUTS = {
    "float": (_RNG.uniform(0.1, 0.9, (3, 4)), _RNG.uniform(0.1, 0.9, (3, 4))),
    "int": (_RNG.integers(1, 10, (3, 4)), _RNG.integers(1, 10, (3, 4))),
    "col": (_RNG.uniform(0.1, 0.9, (3, 1)), _RNG.uniform(0.1, 0.9, (3, 1))),
}


def _index(lib: Any, like: Any, values: list) -> Any:
    return lib.tensor(values, dtype=lib.int64, device=like.device)


Args = Callable[[Any, Any], tuple[tuple, dict]]  # (lib, other) -> (args, kwargs)

# ops whose in-place variant takes more than the tensor: (input kind, arguments)
_INPLACE_ARGS: dict[str, tuple[str, Args]] = {
    **{name: ("float", lambda lib, y: ((y,), {})) for name in (
        "mul", "div", "pow", "atan2", "maximum", "minimum", "remainder", "floor_divide",
        "logical_and", "logical_or", "logical_xor")},
    **{name: ("int", lambda lib, y: ((y,), {})) for name in (
        "bitwise_and", "bitwise_or", "bitwise_xor")},
    "bitwise_not": ("int", lambda lib, y: ((), {})),
    "add": ("float", lambda lib, y: ((y,), {"alpha": 2})),
    "sub": ("float", lambda lib, y: ((y,), {"alpha": 0.5})),
    "clamp": ("float", lambda lib, y: ((0.3, 0.6), {})),
    "clamp_min": ("float", lambda lib, y: ((0.5,), {})),
    "clamp_max": ("float", lambda lib, y: ((y,), {})),
    "cumsum": ("float", lambda lib, y: ((1,), {})),
    "addcmul": ("float", lambda lib, y: ((y, y), {"value": 0.5})),
    "addcdiv": ("float", lambda lib, y: ((y, y * y), {"value": 2})),
    "lerp": ("float", lambda lib, y: ((y, 0.25), {})),
    "index_add": ("float", lambda lib, y: ((0, _index(lib, y, [2, 0]), y[:2]), {"alpha": 2})),
    "index_fill": ("float", lambda lib, y: ((1, _index(lib, y, [0, 2]), -1.0), {})),
    "masked_fill": ("float", lambda lib, y: ((y > 0.5, 0.0), {})),
    "scatter": ("float", lambda lib, y: ((1, _index(lib, y, [[0], [3], [1]]), y), {})),
    "scatter_add": ("float", lambda lib, y: ((0, _index(lib, y, [[2, 0, 0, 1]]), y), {})),
    "tril": ("float", lambda lib, y: ((1,), {})),
    "triu": ("float", lambda lib, y: ((-1,), {})),
    "squeeze": ("col", lambda lib, y: ((1,), {})),
    "unsqueeze": ("float", lambda lib, y: ((1,), {})),
    "transpose": ("float", lambda lib, y: ((0, 1), {})),
    # SHAPE family
    "as_strided": ("float", lambda lib, y: (((2, 3), (1, 3), 1), {})),
}
_UNARY_ARGS: tuple[str, Args] = ("float", lambda lib, y: ((), {}))

# in-place view ops: they change the tensor's shape, and bump its version like any
# in-place op (see test_inplace_view_ops_bump_the_version below)
_VIEW_OPS = {"t", "transpose", "squeeze", "unsqueeze"}

_INPLACE_OPS = sorted(name for name, op in OPS.items() if "inplace" in op.variants)


def _reference(name: str, x: Any, args: tuple, kwargs: dict) -> Any:
    """The out-of-place op: `ember.<name>(x, ...)`, or the method where there is none or
    where it takes other arguments (`polygamma(n, x)` is `x.polygamma(n)`)."""
    op = OPS[name]
    fn = getattr(ember, name) if "function" in op.variants and op.method is None else \
        getattr(type(x), name)
    return fn(x, *args, **kwargs)


@pytest.mark.parametrize("name", _INPLACE_OPS)
def test_inplace_variant(device: ember.device, name: str) -> None:
    kind, make_args = _INPLACE_ARGS.get(name, _UNARY_ARGS)
    a, b = _INPUTS[kind]
    x, y = S.on(device, a), S.on(device, b)
    args, kwargs = make_args(ember, y)
    want = _reference(name, x, args, kwargs).to(x.dtype)
    target = x.clone()
    before = target._version
    out = getattr(target, name + "_")(*args, **kwargs)
    assert out is target, f"{name}_ must return the tensor it wrote"
    S.assert_matches(target, S.host(want), device, dtype=x.dtype, what=f"{name}_")
    assert target._version > before, f"{name}_ must bump the tensor's version"
    S.assert_matches(x, a, device, what=f"{name}_ wrote into the clone only")
    if S.torch is not None and hasattr(S.torch.Tensor, name + "_"):  # (no maximum_ there)
        t = S.torch.tensor(a)
        t_args, t_kwargs = make_args(S.torch, S.torch.tensor(b))
        getattr(t, name + "_")(*t_args, **t_kwargs)
        S.assert_matches(target, t.numpy(), device, what=f"{name}_ vs torch")


def test_inplace_result_must_fit_the_tensor(device: ember.device) -> None:
    """As torch: an in-place result keeps the tensor's shape and a dtype it can hold."""
    i = S.on(device, np.array([1, 2, 3]))
    for write in (lambda: i.exp_(), lambda: i.sqrt_(), lambda: i.div_(2),
                  lambda: i.add_(1.5), lambda: i.mul_(S.on(device, np.array([0.5])))):
        with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
            write()
    S.assert_matches(i, [1, 2, 3], device, what="unchanged after the refused writes")
    row = S.on(device, np.zeros((1, 3)))
    with pytest.raises(RuntimeError, match=r"output with shape \[1, 3\] doesn't match the "
                                           r"broadcast shape \[2, 3\]"):
        row.add_(S.on(device, np.ones((2, 3))))
    f = S.on(device, np.array([0.5, 1.5]))
    f.add_(S.on(device, np.array([1, 2])))  # an int operand is fine: the result is float
    S.assert_matches(f, [1.5, 3.5], device, dtype=ember.float64)


@pytest.mark.parametrize("name", sorted(_VIEW_OPS))
def test_inplace_view_ops_bump_the_version(device: ember.device, name: str) -> None:
    kind, make_args = _INPLACE_ARGS.get(name, _UNARY_ARGS)
    args, kwargs = make_args(ember, S.on(device, _INPUTS[kind][1]))
    w = S.on(device, np.ones(_INPUTS[kind][0].shape), requires_grad=True)
    x = S.on(device, _INPUTS[kind][0])
    y = x * w  # saves x for w's gradient
    before = x._version
    getattr(x, name + "_")(*args, **kwargs)
    assert x._version > before
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


# -- out= -----------------------------------------------------------------------------

# (input kind, arguments(lib, x, y)) of each op with an out= variant
_OUT_ARGS: dict[str, tuple[str, Callable[[Any, Any, Any], tuple[tuple, dict]]]] = {
    **{name: ("float", lambda lib, x, y: ((x, y), {})) for name in (
        "mul", "div", "pow", "atan2", "maximum", "minimum", "remainder", "floor_divide",
        "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
        "logaddexp")},
    "square": ("float", lambda lib, x, y: ((x,), {})),
    **{name: ("float", lambda lib, x, y: ((x,), {})) for name in (  # the unary math ops
        UNARY_BY_RULE["same"] + UNARY_BY_RULE["float"] + UNARY_BY_RULE["predicate"])},
    "bitwise_not": ("int", lambda lib, x, y: ((x,), {})),
    **{name: ("int", lambda lib, x, y: ((x, y), {})) for name in (
        "bitwise_and", "bitwise_or", "bitwise_xor")},
    "add": ("float", lambda lib, x, y: ((x, y), {"alpha": 2})),
    "sub": ("float", lambda lib, x, y: ((x, y), {"alpha": 0.5})),
    "clamp": ("float", lambda lib, x, y: ((x, 0.3, 0.6), {})),
    "cumsum": ("float", lambda lib, x, y: ((x, 1), {})),
    "where": ("float", lambda lib, x, y: ((x > 0.5, x, y), {})),
    "sum": ("float", lambda lib, x, y: ((x, 1), {})),
    "prod": ("float", lambda lib, x, y: ((x, 1), {})),
    "amax": ("float", lambda lib, x, y: ((x, 1), {})),
    "amin": ("float", lambda lib, x, y: ((x, 0), {"keepdim": True})),
    "mean": ("float", lambda lib, x, y: ((x, 0), {"keepdim": True})),
    "cat": ("float", lambda lib, x, y: (([x, y], 1), {})),
    "stack": ("float", lambda lib, x, y: (([x, y], 0), {})),
    "matmul": ("float", lambda lib, x, y: ((x, y.t()), {})),
    "mm": ("float", lambda lib, x, y: ((x, y.t()), {})),
    "bmm": ("float", lambda lib, x, y: ((x[None], y.t()[None]), {})),
    "mv": ("float", lambda lib, x, y: ((x, y[0]), {})),
    "dot": ("float", lambda lib, x, y: ((x[0], y[0]), {})),
    "outer": ("float", lambda lib, x, y: ((x[0], y[1]), {})),
    "addmm": ("float", lambda lib, x, y: ((x[:, :3], x, y.t()), {"beta": 0.5, "alpha": 2})),
    # SHAPE family
    "column_stack": ("float", lambda lib, x, y: (([x[:, 0], y],), {})),
    "row_stack": ("float", lambda lib, x, y: (([x, y[0]],), {})),
    "dstack": ("float", lambda lib, x, y: (([x, y],), {})),
    "diag": ("float", lambda lib, x, y: ((x, 1), {})),
    "slice_scatter": ("float", lambda lib, x, y: ((x, y[:, :2], 1, 1, None, 2), {})),
    "alias_copy": ("float", lambda lib, x, y: ((x,), {})),
    "as_strided_copy": ("float", lambda lib, x, y: ((x, (2, 2), (1, 4), 1), {})),
    "detach_copy": ("float", lambda lib, x, y: ((x,), {})),
    "diagonal_copy": ("float", lambda lib, x, y: ((x, 1), {})),
    "expand_copy": ("float", lambda lib, x, y: ((x[:1], (2, 4)), {})),
    "narrow_copy": ("float", lambda lib, x, y: ((x, 1, 1, 2), {})),
    "permute_copy": ("float", lambda lib, x, y: ((x, (1, 0)), {})),
    "select_copy": ("float", lambda lib, x, y: ((x, 1, -1), {})),
    "slice_copy": ("float", lambda lib, x, y: ((x, 1, 0, 3, 2), {})),
    "squeeze_copy": ("float", lambda lib, x, y: ((x[:1],), {})),
    "t_copy": ("float", lambda lib, x, y: ((x,), {})),
    "transpose_copy": ("float", lambda lib, x, y: ((x, 0, 1), {})),
    "unfold_copy": ("float", lambda lib, x, y: ((x, 1, 2, 1), {})),
    "unsqueeze_copy": ("float", lambda lib, x, y: ((x, 1), {})),
    "view_copy": ("float", lambda lib, x, y: ((x, (2, 6)), {})),
}

# elementwise math (issue 16)
_MATH_BINARY = ("fmod", "hypot", "nextafter", "igamma", "igammac", "copysign", "xlogy",
                "heaviside")
_MATH_INTEGER = ("gcd", "lcm", "bitwise_left_shift", "bitwise_right_shift")
_INPLACE_ARGS.update({
    **{name: ("float", lambda lib, y: ((y,), {})) for name in (
        "eq", "ne", "lt", "le", "gt", "ge") + _MATH_BINARY},
    **{name: ("int", lambda lib, y: ((y,), {})) for name in _MATH_INTEGER},
    "float_power": ("float", lambda lib, y: ((y,), {})),
    "ldexp": ("float", lambda lib, y: ((_index(lib, y, [1, 2, 0, 3]),), {})),
    "mvlgamma": ("float", lambda lib, y: ((2,), {})),
    "polygamma": ("float", lambda lib, y: ((2,), {})),
})
_OUT_ARGS.update({
    **{name: ("float", lambda lib, x, y: ((x, y), {})) for name in (
        _MATH_BINARY + ("logaddexp2", "fmax", "fmin", "float_power"))},
    **{name: ("int", lambda lib, x, y: ((x, y), {})) for name in _MATH_INTEGER},
    **{name: ("float", lambda lib, x, y: ((x,), {})) for name in (
        "deg2rad", "rad2deg", "frac", "sinc", "sgn", "logit", "nan_to_num", "isposinf",
        "isneginf", "signbit")},
    "ldexp": ("float", lambda lib, x, y: ((x, _index(lib, x, [1, 2, 0, 3])), {})),
    "mvlgamma": ("float", lambda lib, x, y: ((x, 2), {})),
    "polygamma": ("float", lambda lib, x, y: ((2, x), {})),
})

# -- linear algebra (family: linalg): a vector and a batch of matrices as inputs, and the
# arguments of the addmm family and the products --
_INPUTS["vec"] = (_RNG.uniform(0.1, 0.9, (4,)), _RNG.uniform(0.1, 0.9, (4,)))
_INPUTS["batch"] = (_RNG.uniform(0.1, 0.9, (2, 3, 4)), _RNG.uniform(0.1, 0.9, (2, 3, 4)))


def _batches(lib: Any, y: Any) -> tuple:
    """(2, 3, 3) and (2, 3, 4) batches made of a (3, 4) matrix."""
    return lib.stack([y[:, :3], y[:, 1:]]), lib.stack([y[:3], y[:3]])


_INPLACE_ARGS.update({
    "addmm": ("float", lambda lib, y: ((y[:, :3], y[:3]), {"beta": 0.5, "alpha": 2})),
    "addmv": ("vec", lambda lib, y: ((y.unsqueeze(1) * y, y), {"beta": 0.5, "alpha": 2})),
    "addr": ("float", lambda lib, y: ((y[:, 0], y[0]), {"alpha": 0.5})),
    "baddbmm": ("batch", lambda lib, y: ((y[..., :3], y), {"beta": 2})),
    "addbmm": ("float", lambda lib, y: (_batches(lib, y), {"alpha": 0.5})),
})
_OUT_ARGS.update({
    "addmv": ("vec", lambda lib, x, y: ((x, y.unsqueeze(1) * y, x), {"beta": 0.5})),
    "addr": ("float", lambda lib, x, y: ((x, y[:, 0], y[0]), {})),
    "baddbmm": ("batch", lambda lib, x, y: ((x, y[..., :3], y), {"alpha": 2})),
    "addbmm": ("float", lambda lib, x, y: ((x, *_batches(lib, y)), {})),
    "inner": ("float", lambda lib, x, y: ((x, y), {})),
    "vdot": ("float", lambda lib, x, y: ((x[0], y[0]), {})),
    "kron": ("float", lambda lib, x, y: ((x, y), {})),
    "cross": ("float", lambda lib, x, y: ((x[:, :3], y[:, :3]), {"dim": 1})),
})
# -- end linalg --

# -- reductions, sorting, scans, search and index writes (the REDUCE family) ----------
_INPLACE_ARGS.update({
    "cumprod": ("float", lambda lib, y: ((1,), {})),
    "renorm": ("float", lambda lib, y: ((2, 0, 0.5), {})),
    "put": ("float", lambda lib, y: ((_index(lib, y, [0, -1]), y[0, :2]), {})),
    "index_copy": ("float", lambda lib, y: ((1, _index(lib, y, [2, 0]), y[:, :2]), {})),
    "index_put": ("float", lambda lib, y: (((_index(lib, y, [0, 0]),), y[1]),
                                           {"accumulate": True})),
    "index_reduce": ("float", lambda lib, y: ((0, _index(lib, y, [2, 2]), y[:2], "amax"),
                                              {})),
    "scatter_reduce": ("float", lambda lib, y: ((0, _index(lib, y, [[2, 0, 0, 1]]), y,
                                                 "prod"), {"include_self": False})),
    "masked_scatter": ("float", lambda lib, y: ((y > 0.5, y), {})),
})
_OUT_ARGS.update({
    "cumprod": ("float", lambda lib, x, y: ((x, 0), {})),
    "logcumsumexp": ("float", lambda lib, x, y: ((x, 1), {})),
    "nansum": ("float", lambda lib, x, y: ((x, 1), {})),
    "nanmean": ("float", lambda lib, x, y: ((x,), {})),
    "renorm": ("float", lambda lib, x, y: ((x, 1, 1, 0.7), {})),
    # (boundaries sorted along the last dim: each row's values looked up in its own row)
    "searchsorted": ("float", lambda lib, x, y: ((x.sort(-1).values, y), {})),
    "bucketize": ("float", lambda lib, x, y: ((y, x[0].sort().values), {"right": True})),
})
# -- end of the REDUCE family's rows --
_OUT_ARGS.update({  # complex numbers: `complex` and `polar` make complex results
    "angle": ("float", lambda lib, x, y: ((x,), {})),
    "complex": ("float", lambda lib, x, y: ((x, y), {})),
    "polar": ("float", lambda lib, x, y: ((x.abs(), y), {})),
})
_COMPLEX_RESULTS = {"complex", "polar", "linalg_eig", "linalg_eigvals"}


def _spd(lib: Any, x: Any) -> Any:
    """A symmetric positive definite 3x3 matrix made of `x`, (3, 4)."""
    return x @ x.t() + 3 * lib.eye(3, dtype=x.dtype, device=x.device)


# ops with a named result (values, indices ...): out= takes a tuple of tensors, one each
_OUT_ARGS.update({
    **{name: ("float", lambda lib, x, y: ((x, 1), {})) for name in (
        "max", "min", "median", "nanmedian", "mode", "cummax", "cummin")},
    "aminmax": ("float", lambda lib, x, y: ((x,), {"dim": 0, "keepdim": True})),
    "frexp": ("float", lambda lib, x, y: ((x * 10,), {})),
    **{name: ("float", lambda lib, x, y: ((_spd(lib, x),), {})) for name in (
        "linalg_qr", "linalg_eigh", "linalg_eigvalsh", "linalg_eig", "linalg_eigvals",
        "linalg_lu_factor", "linalg_lu_factor_ex", "lu", "linalg_lu", "linalg_slogdet",
        "slogdet")},
})
_OUT_ARGS.update({  # torch.special's orthogonal polynomials: (x, degree n)
    f"special_{kind}_polynomial_{letter}": ("float", lambda lib, x, y: ((x, 3), {}))
    for kind, letters in (("chebyshev", "tuvw"), ("shifted_chebyshev", "tuvw"),
                          ("hermite", ("h", "he")), ("laguerre", "l"), ("legendre", "p"))
    for letter in letters})


def _function(lib: Any, name: str) -> Callable[..., Any]:
    """`lib`'s public function of op `name` (`special_*` ops live in `lib.special`)."""
    for space in ("special", "linalg"):
        if name.startswith(space + "_") and not hasattr(lib, name):
            return getattr(getattr(lib, space), name[len(space) + 1:])
    return getattr(lib, name)

_OUT_OPS = sorted(name for name, op in OPS.items() if "out" in op.variants)


@pytest.mark.parametrize("name", _OUT_OPS)
def test_out_variant(device: ember.device, name: str) -> None:
    assert name in _OUT_ARGS, f"{name} declares an out= variant: give it a row in _OUT_ARGS"
    kind, make_args = _OUT_ARGS[name]
    if name in _COMPLEX_RESULTS and not S.holds(device, ember.complex64):
        pytest.skip(f"{device} holds no complex dtype")
    a, b = _INPUTS[kind]
    args, kwargs = make_args(ember, S.on(device, a), S.on(device, b))
    fn = _function(ember, name)
    want = fn(*args, **kwargs)
    if isinstance(want, tuple):
        _check_tuple_out(device, name, fn, args, kwargs, want, make_args)
        return
    out = ember.empty(0, dtype=want.dtype, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # resizing an empty out= tensor is silent, as torch
        got = fn(*args, **kwargs, out=out)
    assert got is out, f"{name}(out=) must return `out`"
    S.assert_matches(out, S.host(want), device, dtype=want.dtype, what=f"{name}(out=)")
    again = fn(*args, **kwargs, out=out)  # the right shape now: written in place
    assert again is out
    S.assert_matches(out, S.host(want), device, dtype=want.dtype, what=f"{name}(out=) again")
    if S.torch is not None:
        t_args, t_kwargs = make_args(S.torch, S.torch.tensor(a), S.torch.tensor(b))
        t_out = S.torch.empty(0, dtype=getattr(S.torch, want.dtype.name))
        _function(S.torch, name)(*t_args, **t_kwargs, out=t_out)
        S.assert_matches(out, t_out.numpy(), device, what=f"{name}(out=) vs torch")


def _check_tuple_out(device: ember.device, name: str, fn: Callable[..., Any], args: tuple,
                     kwargs: dict, want: tuple, make_args: Callable[..., Any]) -> None:
    """out= of an op with a named result: a tuple of tensors, each written and returned in
    PyTorch's `<result>_out` named tuple (its first tensor compared with torch's: the
    others may differ by a sign, eigenvectors' and the like)."""
    outs = tuple(ember.empty(0, dtype=w.dtype, device=device) for w in want)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = fn(*args, **kwargs, out=outs)
    assert all(g is o for g, o in zip(got, outs)), f"{name}(out=) must return the outs"
    if hasattr(want, "_fields"):
        assert type(got).__name__ == type(want).__name__ + "_out"
        assert got._fields == want._fields
    for o, w in zip(outs, want):
        S.assert_matches(o, S.host(w), device, dtype=w.dtype, what=f"{name}(out=)")
    if S.torch is not None:
        a, b = _INPUTS["float"]
        t_args, t_kwargs = make_args(S.torch, S.torch.tensor(a), S.torch.tensor(b))
        t_outs = tuple(S.torch.empty(0, dtype=getattr(S.torch, w.dtype.name)) for w in want)
        t_got = _function(S.torch, name)(*t_args, **t_kwargs, out=t_outs)
        assert type(t_got).__name__ == type(got).__name__
        S.assert_matches(outs[0], t_outs[0].numpy(), device, what=f"{name}(out=) vs torch")


def test_out_rules(device: ember.device) -> None:
    """torch's rules for out=: resizing a non-empty tensor warns; the result is cast to
    `out`'s dtype when it can be; out= does not record autograd."""
    x = S.on(device, np.array([[1.0, 2.0], [3.0, 4.0]]))
    small = ember.zeros(3, dtype=ember.float64, device=device)
    with pytest.warns(UserWarning, match="was resized"):
        ember.add(x, 1.0, out=small)
    S.assert_matches(small, [[2.0, 3.0], [4.0, 5.0]], device, what="resized out")
    narrow = ember.empty(0, dtype=ember.float32, device=device)
    ember.mul(x, 0.5, out=narrow)  # float64 result into float32: same category, allowed
    S.assert_matches(narrow, [[0.5, 1.0], [1.5, 2.0]], device, dtype=ember.float32)
    flags = ember.empty(0, dtype=ember.int64, device=device)
    ember.gt(x, 2.5, out=flags)  # bool result into int64
    S.assert_matches(flags, [[0, 0], [1, 1]], device, dtype=ember.int64)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        ember.div(x, 2, out=ember.empty(0, dtype=ember.int64, device=device))
    w = S.on(device, np.ones(2), requires_grad=True)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        ember.mul(x, w, out=ember.empty(0, dtype=ember.float64, device=device))
    if device.type != "cpu":
        with pytest.raises(RuntimeError, match="Expected out tensor to be on device"):
            ember.add(x, 1.0, out=ember.empty(0, dtype=ember.float64))
