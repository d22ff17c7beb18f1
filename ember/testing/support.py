"""Helpers shared by the conformance test modules: dtypes, tolerances, Hypothesis
strategies, and the checks that compare a tensor on the device under test with a NumPy
reference. (Needs pytest and hypothesis; `ember.testing.gradcheck` does not.)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ember
from ember.core.backend import numpy_dtype
from ember.core.host import host_array
from ember.testing import plugin

BOOL = [ember.bool]
UNSIGNED = [ember.uint8]
SIGNED = [ember.int8, ember.int16, ember.int32, ember.int64]
INTEGER = UNSIGNED + SIGNED
FLOATING = [ember.float16, ember.bfloat16, ember.float32, ember.float64]
ALL_DTYPES = BOOL + INTEGER + FLOATING
NUMERIC = INTEGER + FLOATING

# (rtol, atol) per dtype for values computed by a backend vs a float64 NumPy reference
_TOL = {
    ember.float16: (2e-3, 2e-3),
    ember.bfloat16: (1.6e-2, 1.6e-2),
    ember.float32: (2e-5, 2e-6),
    ember.float64: (1e-10, 1e-12),
    ember.complex64: (2e-5, 2e-6),
    ember.complex128: (1e-10, 1e-12),
}

try:  # the oracle, where installed; ember itself never imports torch
    import torch  # noqa: F401
except ImportError:  # pragma: no cover - depends on the environment
    torch = None


def prop(**overrides: Any) -> settings:
    """Hypothesis settings for a conformance property test: few, deterministic examples
    (`--ember-examples` sets how many), no deadline (a device may be slow to start)."""
    kwargs: dict[str, Any] = dict(
        max_examples=plugin.max_examples(), deadline=None, derandomize=True, database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                               HealthCheck.filter_too_much])
    kwargs.update(overrides)
    return settings(**kwargs)


def np_dtype(d: ember.dtype) -> np.dtype:
    return numpy_dtype(d)


def tolerance(d: ember.dtype) -> tuple[float, float]:
    """(rtol, atol) for results of dtype `d`; 0 for exact (integer and bool) dtypes."""
    return _TOL.get(d, (0.0, 0.0))


def holds(device: Any, d: ember.dtype) -> bool:
    """Whether `device`'s backend holds tensors of dtype `d` (a backend may leave some
    out: its conformance run then skips or never draws them)."""
    from ember.core import plugins

    return d in plugins.get_backend(ember.device(device).type).dtypes


def held(device: Any, pool: list[ember.dtype] | None = None) -> list[ember.dtype]:
    """The dtypes of `pool` (default: all) that `device` holds."""
    return [d for d in (ALL_DTYPES if pool is None else pool) if holds(device, d)]


def dtypes(device: Any, pool: list[ember.dtype]) -> st.SearchStrategy[ember.dtype]:
    """A dtype of `pool` that `device` holds."""
    return st.sampled_from(held(device, pool))


def on(device: Any, array: Any, dtype: ember.dtype | None = None,
       requires_grad: bool = False) -> ember.Tensor:
    """A tensor on `device` holding `array` (a NumPy array or nested lists)."""
    if dtype is not None and isinstance(array, np.ndarray):
        array = array.astype(np_dtype(dtype))
    return ember.tensor(array, dtype=dtype, device=device, requires_grad=requires_grad)


def host(t: ember.Tensor) -> np.ndarray:
    """The values of `t` as a NumPy array (copied to the host)."""
    # (host_array, not numpy(): NumPy-less dtypes such as bfloat16 come as ml_dtypes'
    # types, and a conj() result's values as they are)
    return host_array(t.detach().to("cpu"))


def flushes_float32_subnormals(device: Any) -> bool:
    """Whether `device`'s float32 arithmetic flushes subnormal values to zero, as many
    accelerators run (CuPy compiles every CUDA kernel with `-ftz=true`): tests leave
    float32 subnormal inputs out there."""
    return bool(host(on(device, np.array([1e-40], np.float32)) * 1.0)[0] == 0)


def assert_matches(out: Any, expected: Any, device: Any, *, dtype: ember.dtype | None = None,
                   rtol: float | None = None, atol: float | None = None,
                   what: str = "result") -> None:
    """Check that tensor `out` lies on `device`, has `expected`'s shape and `dtype`, and
    holds `expected`'s values (NaN equal to NaN) within the dtype's tolerance."""
    assert isinstance(out, ember.Tensor), f"{what}: expected a Tensor, got {type(out)}"
    assert out.device == ember.device(device), \
        f"{what}: expected on {device}, but it is on {out.device}"
    expected = np.asarray(expected)
    if dtype is not None:
        assert out.dtype is dtype, f"{what}: expected dtype {dtype}, got {out.dtype}"
    assert tuple(out.shape) == expected.shape, \
        f"{what}: expected shape {list(expected.shape)}, got {list(out.shape)}"
    got = host(out)
    assert got.dtype == np_dtype(out.dtype), \
        f"{what}: the host copy of a {out.dtype} tensor has NumPy dtype {got.dtype}"
    r, a = tolerance(out.dtype)
    r, a = (r if rtol is None else rtol), (a if atol is None else atol)
    if out.dtype.is_complex or expected.dtype.kind == "c":  # each part within tolerance
        np.testing.assert_allclose(got.astype(np.complex128), expected.astype(np.complex128),
                                   rtol=r, atol=a, equal_nan=True, err_msg=what)
    elif out.dtype.is_floating_point or np.asarray(expected).dtype.kind == "f":
        np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64),
                                   rtol=r, atol=a, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(got, expected.astype(got.dtype), err_msg=what)


def reference_cast(values: np.ndarray, d: ember.dtype) -> np.ndarray:
    """A float64/int reference result rounded to what dtype `d` can hold."""
    return np.asarray(values).astype(np_dtype(d))


# -- Hypothesis strategies ------------------------------------------------------------


def shapes(min_dims: int = 0, max_dims: int = 3, min_side: int = 1,
           max_side: int = 4) -> st.SearchStrategy[tuple[int, ...]]:
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side)


def arrays(d: ember.dtype, shape: tuple[int, ...], lo: float = -4.0, hi: float = 4.0,
           nice: bool = False) -> st.SearchStrategy[np.ndarray]:
    """NumPy arrays of ember dtype `d` and `shape` with values in [lo, hi] (integer
    dtypes: the integers in it, within the dtype's range; `nice`: multiples of 1/4,
    exact in every float dtype, so results of +, -, *, // and % are exact too).

    Hypothesis draws one seed per array and NumPy fills it: drawing the elements one by
    one through Hypothesis costs ~100x more, and the suite must stay fast. About one
    element in ten is an edge value (lo, hi or 0) rather than a uniform draw.
    """
    npd = np_dtype(d)
    size = math.prod(shape)

    def build(seed: int) -> np.ndarray:
        rng = np.random.default_rng(seed)
        if d is ember.bool:
            return (rng.random(size) < 0.5).reshape(shape)
        if not d.is_floating_point:
            info = np.iinfo(npd)
            a, b = max(math.ceil(lo), int(info.min)), min(math.floor(hi), int(info.max))
            vals = rng.integers(a, b + 1, size).astype(np.float64)
            edges = [a, b] + ([0] if a <= 0 <= b else [])
        elif nice:
            a, b = math.ceil(lo * 4), math.floor(hi * 4)
            vals = rng.integers(a, b + 1, size) / 4
            edges = [a / 4, b / 4] + ([0.0] if a <= 0 <= b else [])
        else:
            vals = rng.uniform(lo, hi, size)
            edges = [lo, hi] + ([0.0] if lo <= 0 <= hi else [])
        pick = rng.random(size) < 0.1
        vals[pick] = rng.choice(edges, int(pick.sum()))
        out = vals.reshape(shape)
        return out.astype(np.int64).astype(npd) if not d.is_floating_point else out.astype(npd)

    return st.integers(0, 2**32 - 1).map(build)


def dims_for(ndim: int, allow_none: bool = True, allow_tuple: bool = True
             ) -> st.SearchStrategy[Any]:
    """A reduction `dim` argument for a tensor of `ndim` dims: None, an int (maybe
    negative), or a tuple of distinct dims."""
    options: list[st.SearchStrategy[Any]] = []
    if allow_none:
        options.append(st.none())
    if ndim:
        options.append(st.integers(-ndim, ndim - 1))
        if allow_tuple:
            options.append(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim,
                                    unique=True).map(tuple))
    return st.one_of(options)


def np_dims(dim: Any, ndim: int) -> tuple[int, ...] | None:
    if dim is None:
        return None
    if isinstance(dim, int):
        return (dim % ndim,) if ndim else ()
    return tuple(d % ndim for d in dim)


# -- the promotion oracle -------------------------------------------------------------

_CATEGORY = {d: (0 if d is ember.bool else 2 if d.is_floating_point else 1)
             for d in ALL_DTYPES}


def promote_types(a: ember.dtype, b: ember.dtype) -> ember.dtype:
    """PyTorch's `torch.promote_types`, written out independently of ember's own rule
    (so that the suite checks it rather than restating it)."""
    return _PROMOTE[(a.name, b.name)]


_PROMOTION_NAMES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16",
                    "bfloat16", "float32", "float64")
_PROMOTION_CODE = {"b": "bool", "u": "uint8", "c": "int8", "s": "int16", "i": "int32",
                   "l": "int64", "h": "float16", "B": "bfloat16", "f": "float32",
                   "d": "float64"}
# torch.promote_types(row, column), one letter per result, columns in the same order
_PROMOTION_ROWS = (
    "bucsilhBfd",  # bool
    "uussilhBfd",  # uint8
    "cscsilhBfd",  # int8
    "ssssilhBfd",  # int16
    "iiiiilhBfd",  # int32
    "llllllhBfd",  # int64
    "hhhhhhhffd",  # float16
    "BBBBBBfBfd",  # bfloat16
    "fffffffffd",  # float32
    "dddddddddd",  # float64
)


def _dtype_named(name: str) -> ember.dtype:
    return ember.bool if name == "bool" else getattr(ember, name)


_PROMOTE = {(a, b): _dtype_named(_PROMOTION_CODE[row[j]])
            for a, row in zip(_PROMOTION_NAMES, _PROMOTION_ROWS)
            for j, b in enumerate(_PROMOTION_NAMES)}


def result_type(*operands: Any) -> ember.dtype:
    """PyTorch's `torch.result_type` for tensors with dims, 0-dim tensors and Python
    scalars: each later tier only lifts the result when it is of a higher category
    (bool < integer < floating); a Python float lifts to the default dtype."""
    tiers: list[list[ember.dtype]] = [[], [], []]
    for x in operands:
        if isinstance(x, ember.Tensor):
            tiers[0 if x.ndim else 1].append(x.dtype)
        elif isinstance(x, bool):
            tiers[2].append(ember.bool)
        elif isinstance(x, int):
            tiers[2].append(ember.int64)
        else:
            tiers[2].append(ember.get_default_dtype())
    result: ember.dtype | None = None
    for tier in tiers:
        if not tier:
            continue
        d = tier[0]
        for other in tier[1:]:
            d = promote_types(d, other)
        if result is None or _CATEGORY[d] > _CATEGORY[result]:
            result = d
    assert result is not None
    return result
