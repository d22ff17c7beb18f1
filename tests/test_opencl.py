"""The OpenCL backend against the CPU backend, on whatever OpenCL device is present (PoCL,
an OpenCL for CPUs from PyPI, in CI). Skipped when pyopencl or an OpenCL device is missing.

Every primitive of `ember.core.opdef.OPS` runs on both backends on the same inputs, the
OpenCL inputs given as non-contiguous views (transposed, strided, offset, broadcast)
wherever the op takes tensors; the views, the program cache, the Philox generator, the
device list and the errors are checked on their own; and the backend conformance suite
(`ember.testing`) runs against `opencl` under EMBER_STRICT=1.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("pyopencl")

import ember  # noqa: E402
from ember.core import plugins  # noqa: E402
from ember.core.backend import ViewNotPossible, numpy_dtype  # noqa: E402
from ember.core.opdef import OPS as _DECLARED  # noqa: E402
from ember.core.opdef import Kind  # noqa: E402

# the primitives whose inputs or results are complex: OpenCL holds no complex dtype, so it
# refuses them at the dtype check and needs no kernel
COMPLEX_ONLY = {"view_as_real", "conj_physical", "_fft_c2c", "_fft_r2c", "_fft_c2r"}
OPS = {n for n, op in _DECLARED.items() if op.kind is Kind.PRIMITIVE} - COMPLEX_ONLY

OCL = plugins.get_backend("opencl")
_reason = plugins.safe_unavailable_reason(OCL)
if _reason is not None:  # pragma: no cover - depends on the machine
    pytest.skip(f"no usable OpenCL device: {_reason}", allow_module_level=True)

from ember.backends.opencl import kernels as K  # noqa: E402
from ember.backends.opencl import runtime as rt  # noqa: E402
from ember.backends.opencl.buffer import CLBuffer, reshape_strides  # noqa: E402
from ember.backends.opencl.host import HOST_LINALG, HOST_OPMATH, HOST_OPS  # noqa: E402
from ember.backends.opencl.sources import BACKWARD_OPS as S_BACKWARD  # noqa: E402

CPU = plugins.get_backend("cpu")
# the CPU reference kernels warn on inf/nan inputs (sin(inf) ...); the values are checked
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")
DEV = rt.device(0)
E = ember
FLOATS = [E.float32, E.float64, E.float16, E.bfloat16]
INTS = [E.uint8, E.int8, E.int16, E.int32, E.int64]
ALL = FLOATS + INTS + [E.bool]
if not DEV.fp64:  # pragma: no cover - PoCL has fp64
    FLOATS.remove(E.float64)
    ALL.remove(E.float64)
TOL = {E.float32: 2e-5, E.float64: 1e-12, E.float16: 2e-3, E.bfloat16: 1.6e-2}

# -- helpers ----------------------------------------------------------------------------------

def npd(d: ember.dtype) -> np.dtype:
    return numpy_dtype(d)


def sample(rng: np.random.Generator, shape: tuple, d: ember.dtype, lo: float = -4,
           hi: float = 4, nonzero: bool = False) -> np.ndarray:
    if d is E.bool:
        return rng.random(shape) > 0.5
    if d.is_floating_point:
        a = rng.uniform(lo, hi, shape)
        if nonzero:
            a[np.abs(a) < 0.25] = 0.5
        return a.astype(npd(d))
    info = np.iinfo(npd(d))
    a = rng.integers(max(int(lo), info.min), min(int(hi), info.max) + 1, shape)
    if nonzero:
        a[a == 0] = 1
    return a.astype(npd(d))


def up(arr: np.ndarray, layout: str = "strided") -> CLBuffer:
    """`arr` on the OpenCL device, laid out as `layout`: "contiguous"; "transposed"
    (reversed strides); "strided" (every other element of a bigger buffer, at an
    offset); "broadcast" (a size-1 dim expanded by a zero stride, when arr allows)."""
    arr = np.asarray(arr)
    if layout == "contiguous" or arr.ndim == 0 or arr.size == 0:
        return OCL.from_numpy(arr, 0)
    if layout == "transposed":
        buf = OCL.from_numpy(np.ascontiguousarray(arr.T), 0)
        return K.permute(buf, tuple(reversed(range(arr.ndim))))
    if layout == "broadcast" and 1 not in arr.shape[:1] and (arr == arr[:1]).all():
        small = OCL.from_numpy(np.ascontiguousarray(arr[:1]), 0)
        return K.expand(small, arr.shape)
    big = np.zeros(arr.shape[:-1] + (2 * arr.shape[-1] + 1,), arr.dtype)
    big[..., 1::2] = arr
    buf = OCL.from_numpy(big, 0)
    view = K.getitem(buf, index=tuple(("slice", 0, s, 1) for s in arr.shape[:-1]) +
                     (("slice", 1, 2 * arr.shape[-1] + 1, 2),))
    assert not view.is_contiguous() or arr.shape[-1] <= 1
    return view


def down(buf: CLBuffer) -> np.ndarray:
    out = OCL.to_numpy(buf)
    assert isinstance(out, np.ndarray) and out.shape == buf.shape
    return out


def check(got: CLBuffer, want: np.ndarray, dtype: ember.dtype | None = None,
          tol: float | None = None, what: str = "") -> None:
    """got (an OpenCL buffer) equals want (the CPU kernel's result) in shape, dtype and
    values (NaN equal to NaN; floats within the dtype's tolerance)."""
    want = np.asarray(want)
    dtype = dtype or got.dtype
    assert got.dtype is dtype, f"{what}: dtype {got.dtype} != {dtype}"
    host = down(got)
    assert host.dtype == npd(dtype), what
    assert host.shape == want.shape, f"{what}: shape {host.shape} != {want.shape}"
    want = want.astype(npd(dtype))  # the CPU kernels return float32 for some bf16 ops
    if dtype.is_floating_point:
        t = TOL[dtype] if tol is None else tol
        np.testing.assert_allclose(host.astype(np.float64), want.astype(np.float64),
                                   rtol=t, atol=t, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(host, want, err_msg=what)


LAYOUTS = ["contiguous", "transposed", "strided", "broadcast"]


# -- elementwise ------------------------------------------------------------------------------

UNARY_SAME = ["neg", "abs", "sign", "floor", "ceil", "round", "trunc", "relu", "bitwise_not"]
UNARY_FLOAT = ["exp", "log", "log2", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tan",
               "tanh", "sigmoid", "erf", "asin", "acos", "atan", "reciprocal"]
PRED = ["logical_not", "isnan", "isinf", "isfinite"]


@pytest.mark.parametrize("d", ALL, ids=str)
def test_unary_ops(d: ember.dtype) -> None:
    rng = np.random.default_rng(1)
    a = sample(rng, (3, 5), d)
    if d.is_floating_point:
        a[0, :3] = np.array([np.nan, np.inf, -np.inf]).astype(a.dtype)
    ops = PRED + [op for op in UNARY_SAME
                  if not (d is E.bool and op in ("neg", "sign", "round", "floor", "ceil",
                                                 "trunc", "relu", "abs"))
                  and not (d.is_floating_point and op == "bitwise_not")]
    if d.is_floating_point:
        ops += UNARY_FLOAT
    for k, op in enumerate(ops):
        x = up(a, LAYOUTS[k % 3])
        want = CPU.kernels[op](a)
        out_d = E.bool if op in PRED else d
        check(OCL.kernels[op](x), want, out_d, what=f"{op}({d})")


BINARY_SHAPES = [((3, 1, 4), (2, 4)), ((5,), (5,)), ((2, 3), ()), ((), (4,))]
ARITH = ["add", "sub", "mul", "maximum", "minimum", "remainder", "floor_divide", "pow"]
COMPARE = ["eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"]
BITWISE = ["bitwise_and", "bitwise_or", "bitwise_xor"]


@pytest.mark.parametrize("d", ALL, ids=str)
def test_binary_ops(d: ember.dtype) -> None:
    rng = np.random.default_rng(2)
    ops = list(COMPARE)
    if d is E.bool:
        ops += ["add", "mul", "maximum", "minimum"] + BITWISE
    elif d.is_floating_point:
        ops += ARITH + ["div", "atan2"]
    else:
        ops += ARITH + BITWISE
    for k, op in enumerate(ops):
        sa, sb = BINARY_SHAPES[k % len(BINARY_SHAPES)]
        lo, hi = (0, 3) if op == "pow" and not d.is_floating_point else (-4, 4)
        a = sample(rng, sa, d, *((0.1, 3) if op == "pow" and d.is_floating_point else
                                (-4, 4)))
        b = sample(rng, sb, d, lo, hi, nonzero=op in ("remainder", "floor_divide", "div"))
        want = CPU.kernels[op](a, b)
        out_d = E.bool if op in COMPARE else d
        check(OCL.kernels[op](up(a, LAYOUTS[k % 4]), up(b, LAYOUTS[(k + 1) % 4])), want,
              out_d, what=f"{op}({d}) {sa} {sb}")
        # a Python scalar on either side, as core passes them
        s = True if d is E.bool else (2 if not d.is_floating_point else 1.5)
        ref = np.asarray(s, dtype=npd(d))
        check(OCL.kernels[op](up(a), s), CPU.kernels[op](a, ref), out_d, what=f"{op} x, s")
        if op not in ("pow", "remainder", "floor_divide") or d.is_floating_point:
            check(OCL.kernels[op](s, up(b)), CPU.kernels[op](ref, b), out_d, what=f"{op} s, x")


def test_integer_division_and_power_errors_match_cpu() -> None:
    x = up(np.array([1, 2, 3], np.int32))
    z = up(np.array([1, 0, 3], np.int32))
    for op in ("floor_divide", "remainder"):
        with pytest.raises(ZeroDivisionError, match=f"{op}: integer division by zero"):
            OCL.kernels[op](x, z)
        with pytest.raises(ZeroDivisionError):
            OCL.kernels[op](x, 0)
    with pytest.raises(RuntimeError, match="negative integer powers"):
        OCL.kernels["pow"](x, -1)
    # a tensor of negative exponents: PyTorch's 1 ** -n = 1, (-1) ** -n = +-1, else 0
    base = np.array([2, 1, -1, -1, 0, 3], np.int32)
    exponent = np.array([-1, -1, -1, -2, -1, 2], np.int32)
    got = OCL.kernels["pow"](up(base), up(exponent))
    np.testing.assert_array_equal(down(got), CPU.kernels["pow"](base, exponent))
    np.testing.assert_array_equal(down(got), [0, 1, -1, 1, 0, 9])
    # wrap-around and Python's floor semantics, exactly as NumPy
    a = np.array([-7, 7, -128, 127], np.int8)
    b = np.array([2, -2, -1, 3], np.int8)
    for op in ("floor_divide", "remainder", "add", "mul", "sub"):
        check(OCL.kernels[op](up(a), up(b)), CPU.kernels[op](a, b), E.int8, what=op)


@pytest.mark.parametrize("d", [E.float32, E.float16, E.int64, E.uint8, E.bool], ids=str)
def test_where_clamp_cast(d: ember.dtype) -> None:
    rng = np.random.default_rng(3)
    cond = rng.random((3, 4)) > 0.5
    a, b = sample(rng, (3, 4), d), sample(rng, (4,), d)
    check(OCL.kernels["where"](up(cond), up(a, "transposed"), up(b)),
          CPU.kernels["where"](cond, a, b), d)
    s = True if d is E.bool else 2
    check(OCL.kernels["where"](up(cond), s, up(b)),
          CPU.kernels["where"](cond, np.asarray(s, npd(d)), b), d)
    if d is not E.bool:
        lo, hi = (1, 3) if d is E.uint8 else (-1, 2)
        for mn, mx in ((lo, hi), (None, hi), (lo, None), (hi, lo)):
            want = CPU.kernels["clamp"](a, None if mn is None else np.asarray(mn, npd(d)),
                                        None if mx is None else np.asarray(mx, npd(d)))
            check(OCL.kernels["clamp"](up(a, "strided"), min=mn, max=mx), want, d)
    for target in ALL:
        check(OCL.kernels["cast"](up(a, "transposed"), dtype=target),
              CPU.kernels["cast"](a, dtype=target), target, what=f"{d}->{target}")


def test_float_edge_values() -> None:
    a = np.array([np.nan, -np.inf, np.inf, -0.0, 0.0, 1e30, -2.5, 2.5, 3.5], np.float32)
    b = np.array([1.0, np.nan, 2.0, -1.0, 3.0, -np.inf, 0.0, -1.5, 2.0], np.float32)
    for op in ("maximum", "minimum", "remainder", "floor_divide", "pow", "div", "atan2"):
        check(OCL.kernels[op](up(a), up(b)), CPU.kernels[op](a, b), E.float32, what=op)
    for op in ("round", "sign", "relu", "floor", "isinf", "isnan", "isfinite"):
        want = CPU.kernels[op](a)
        check(OCL.kernels[op](up(a)), want, E.bool if want.dtype == bool else E.float32,
              what=op)
    # float -> narrow integer casts wrap like NumPy on x86 (through a 64-bit integer)
    c = np.array([-1.0, 300.0, 255.9, -129.0], np.float32)
    for target in (E.uint8, E.int8):
        check(OCL.kernels["cast"](up(c), dtype=target), c.astype(np.int64).astype(
            npd(target)), target)


# -- reductions -------------------------------------------------------------------------------

@pytest.mark.parametrize("d", ALL, ids=str)
def test_reductions(d: ember.dtype) -> None:
    rng = np.random.default_rng(4)
    a = sample(rng, (3, 4, 5), d, -3, 3)
    if d.is_floating_point:
        a[1, 2, 3] = np.nan
    for k, dims in enumerate([None, (0,), (2,), (0, 2), (1,)]):
        for keepdim in (False, True):
            x = up(a, LAYOUTS[k % 3])
            for op in ("max", "min", "all", "any"):
                check(OCL.kernels[op](x, dims=dims, keepdim=keepdim),
                      CPU.kernels[op](a, dims=dims, keepdim=keepdim),
                      E.bool if op in ("all", "any") else d, what=f"{op} {dims}")
            acc = a if d.is_floating_point else a.astype(np.int64)
            for op in ("sum", "prod"):
                xs = x if d.is_floating_point else K.cast(x, E.int64)
                check(OCL.kernels[op](xs, dims=dims, keepdim=keepdim),
                      CPU.kernels[op](acc, dims=dims, keepdim=keepdim),
                      d if d.is_floating_point else E.int64, what=f"{op} {dims}",
                      tol=None if d is not E.float16 else 5e-3)
    for dim in (None, 0, 2):
        for op in ("argmax", "argmin"):
            check(OCL.kernels[op](up(a, "transposed"), dim=dim, keepdim=False),
                  CPU.kernels[op](a, dim=dim, keepdim=False), E.int64, what=f"{op} {dim}")
    if d is not E.bool:
        acc = a if d.is_floating_point else a.astype(np.int64)
        for dim in (0, 2):
            xs = up(acc, "strided")
            check(OCL.kernels["cumsum"](xs, dim=dim), CPU.kernels["cumsum"](acc, dim=dim),
                  xs.dtype, tol=3e-2 if d in (E.float16, E.bfloat16) else None)
        for k, (dim, largest) in enumerate([(0, True), (1, False), (2, True), (2, False)]):
            # ties (small integers) and NaN: both kernels order ties by index, NaN largest
            check(OCL.kernels["topk"](up(a, LAYOUTS[k % 3]), k=3, dim=dim, largest=largest),
                  CPU.kernels["topk"](a, k=3, dim=dim, largest=largest), E.int64,
                  what=f"topk {dim} {largest}")


def test_large_reductions_use_partials() -> None:
    """Few outputs over many elements go through the two-launch path."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((2, 70001)).astype(np.float32)
    a[1, 54321] = 99.0
    a[0, 777] = -99.0
    x = up(a, "strided")
    check(K.reduce_op("sum", x, None, False), a.astype(np.float64).sum(), E.float32, tol=1e-4)
    check(OCL.kernels["sum"](x, dims=(1,), keepdim=False), a.sum(1), E.float32, tol=1e-4)
    check(OCL.kernels["argmax"](x, dim=None, keepdim=False), np.argmax(a), E.int64)
    check(OCL.kernels["argmin"](x, dim=1, keepdim=True), np.argmin(a, 1)[:, None], E.int64)
    check(OCL.kernels["max"](x, dims=(1,), keepdim=False), a.max(1), E.float32)
    ones = np.ones(300000, bool)
    ones[123456] = False
    check(OCL.kernels["all"](up(ones), dims=None, keepdim=False), False, E.bool)
    c = rng.integers(0, 10, 5000)
    check(OCL.kernels["cumsum"](up(c), dim=0), np.cumsum(c), E.int64)


# -- views ------------------------------------------------------------------------------------

def test_reshape_strides_follow_numpy() -> None:
    rng = np.random.default_rng(6)
    base = np.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5)
    views = [base, base.transpose(1, 0, 3, 2), base[:, ::2], base[..., 1:4], base[:, :1],
             base[:, 1:2, :, ::2], base.transpose(0, 2, 1, 3)]
    for v in views:
        n = v.size
        targets = [(n,), (v.shape[0], -1), (-1, v.shape[-1]), (1, n, 1), v.shape[::-1],
                   (v.shape[0] * v.shape[1], -1), (v.shape[0], 1, -1, v.shape[-1])]
        for t in targets:
            shape = np.empty(v.shape).reshape(t).shape
            try:
                ref = np.reshape(v, shape, copy=False)
            except ValueError:
                ref = None
            st = reshape_strides(v.shape, tuple(s // v.itemsize for s in v.strides), shape)
            if ref is None:
                assert st is None, (v.shape, v.strides, shape)
            else:
                assert st == tuple(s // v.itemsize for s in ref.strides), (v.shape, shape)
    a = rng.standard_normal((4, 6)).astype(np.float32)
    x = up(a, "transposed")
    with pytest.raises(ViewNotPossible):
        OCL.kernels["reshape"](x, shape=(24,), copy=False)
    check(OCL.kernels["reshape"](x, shape=(24,), copy=True), a.reshape(24), E.float32)
    y = OCL.kernels["reshape"](up(a, "contiguous"), shape=(2, 12), copy=False)
    assert y.mem is not None and y.shape == (2, 12)
    p = OCL.kernels["permute"](x, dims=(1, 0))
    check(p, a.T, E.float32)
    e = OCL.kernels["expand"](up(a[:1], "contiguous"), shape=(3, -1, 6))
    assert e.shape == (3, 1, 6) and e.strides[0] == 0 and e.mem is not None
    check(e, np.broadcast_to(a[:1], (3, 1, 6)), E.float32)


def test_views_share_memory_and_writes_reach_the_base() -> None:
    x = ember.zeros(4, 6, device="opencl")
    v = x[1:3, ::2]  # a strided view with an offset
    assert v._data.mem is x._data.mem and v._data.offset == 6 and v._data.strides == (6, 2)
    v += 1
    t = x.t()
    t[5] = 7.0  # write through a transposed view
    x[0, 0] = -1.0
    ref = np.zeros((4, 6), np.float32)
    ref[1:3, ::2] += 1
    ref.T[5] = 7
    ref[0, 0] = -1
    np.testing.assert_array_equal(x.cpu().numpy(), ref)
    np.testing.assert_array_equal(v.cpu().numpy(), ref[1:3, ::2])
    c = x.clone()
    c.add_(1)
    np.testing.assert_array_equal(x.cpu().numpy(), ref)
    # writing into a broadcast (zero-stride) view is refused, as on the CPU
    e = K.expand(up(np.ones((1, 3), np.float32)), (4, 3))
    with pytest.raises(RuntimeError, match="more than one element of the written-to"):
        K.assign(e, up(np.zeros((4, 3), np.float32)))
    # overlapping source and destination: the source is read first
    y = ember.arange(10, device="opencl", dtype=ember.float32)
    y[1:] = y[:-1]
    np.testing.assert_array_equal(y.cpu().numpy(), [0, 0, 1, 2, 3, 4, 5, 6, 7, 8])


def test_to_numpy_is_a_fresh_copy_of_the_logical_view() -> None:
    a = np.arange(12, dtype=np.int16).reshape(3, 4)
    x = up(a, "transposed")
    h = OCL.to_numpy(x)
    assert h.flags.c_contiguous and h.shape == (3, 4)
    h[0, 0] = 99
    np.testing.assert_array_equal(OCL.to_numpy(x), a)
    src = np.arange(6, dtype=np.float32)
    buf = OCL.from_numpy(src, 0)
    src[0] = 42  # the device copy is private
    np.testing.assert_array_equal(OCL.to_numpy(buf), np.arange(6))
    for d in ALL:
        arr = sample(np.random.default_rng(0), (2, 3), d)
        np.testing.assert_array_equal(OCL.to_numpy(OCL.from_numpy(arr, 0)), arr)
    assert OCL.to_numpy(OCL.from_numpy(np.zeros((0, 3), np.float32), 0)).shape == (0, 3)
    moved = OCL.to_device(x, 0)
    assert moved.mem is not x.mem
    np.testing.assert_array_equal(OCL.to_numpy(moved), a)


# -- indexing ---------------------------------------------------------------------------------

def test_advanced_getitem_and_setitem_match_numpy() -> None:
    rng = np.random.default_rng(7)
    a = rng.standard_normal((5, 6, 7)).astype(np.float32)
    x = ember.tensor(a, device="opencl")
    i = np.array([[0, 4], [2, 2]])
    j = np.array([1, -1])
    mask = a[:, 0, 0] > 0
    keys = [(i,), (slice(None), j), (i, slice(1, 4), j), (slice(None, None, 2), i, None),
            (mask,), (1, j), (Ellipsis, j), (i, j)]
    for key in keys:
        ek = tuple(ember.tensor(k, device="opencl") if isinstance(k, np.ndarray) else k
                   for k in key)
        np.testing.assert_array_equal(x[ek].cpu().numpy(), a[key], err_msg=str(key))
    y = ember.zeros(5, 6, device="opencl")
    ref = np.zeros((5, 6), np.float32)
    rows = np.array([0, 2, 2, 4])
    y[ember.tensor(rows, device="opencl"), 1:3] = ember.ones(4, 2, device="opencl")
    ref[rows, 1:3] = 1
    np.testing.assert_array_equal(y.cpu().numpy(), ref)
    # accumulate: duplicates add up (index_put_ with accumulate=True)
    for d in (E.float32, E.float16, E.int8, E.int64, E.float64, E.bfloat16, E.uint8):
        z = up(np.zeros((4, 3), npd(d)), "contiguous")
        idx = up(np.array([0, 1, 1, 3, 1, 0]), "contiguous")
        val = up(np.arange(18, dtype=npd(d)).reshape(6, 3) % 5, "strided")
        K.setitem(z, val, idx, index=(("tensor", 0), ("slice", 0, 3, 1)), accumulate=True)
        want = np.zeros((4, 3), np.float64)
        np.add.at(want, np.array([0, 1, 1, 3, 1, 0]), np.arange(18).reshape(6, 3) % 5)
        check(z, want, d, what=f"accumulate {d}")


@pytest.mark.parametrize("d", [E.float32, E.int64, E.bool, E.float16, E.int8], ids=str)
def test_gather_scatter_index_select_nonzero(d: ember.dtype) -> None:
    rng = np.random.default_rng(8)
    a = sample(rng, (4, 5), d)
    for dim in (0, 1):
        # gather: any indices; scatter: distinct targets along dim (with duplicates the
        # surviving write is unspecified, as PyTorch documents); scatter_add: duplicates
        ix = rng.integers(-4 if dim == 0 else -5, 4 if dim == 0 else 5, (3, 5) if dim == 0
                          else (4, 3))
        check(OCL.kernels["gather"](up(a, "transposed"), up(ix), dim=dim),
              CPU.kernels["gather"](a, ix, dim=dim), d)
        ix = np.abs(ix) % a.shape[dim]
        uniq = np.stack([rng.permutation(4)[:3] for _ in range(5)], 1) if dim == 0 else \
            np.stack([rng.permutation(5)[:3] for _ in range(4)])
        s = sample(rng, (3, 6) if dim == 0 else (4, 4), d)
        check(OCL.kernels["scatter"](up(a), up(uniq, "transposed"), up(s, "transposed"),
                                     dim=dim), CPU.kernels["scatter"](a, uniq, s, dim=dim), d)
        if d is not E.bool:
            check(OCL.kernels["scatter_add"](up(a, "strided"), up(ix), up(s), dim=dim),
                  CPU.kernels["scatter_add"](a, ix, s, dim=dim), d)
    sel = np.array([3, 0, 3, 1])
    for dim in (0, 1):
        check(OCL.kernels["index_select"](up(a, "transposed"), up(sel, "strided"), dim=dim),
              CPU.kernels["index_select"](a, sel, dim=dim), d)
    check(OCL.kernels["nonzero"](up(a, "transposed")), CPU.kernels["nonzero"](a), E.int64)
    big = rng.random((3, 333, 7)) > 0.7
    check(OCL.kernels["nonzero"](up(big, "strided")), np.argwhere(big), E.int64)


def test_cat_flip_clone_tril_triu() -> None:
    rng = np.random.default_rng(9)
    for d in (E.float32, E.int16, E.bool, E.bfloat16):
        a, b = sample(rng, (3, 4), d), sample(rng, (3, 2), d)
        check(OCL.kernels["cat"](up(a, "transposed"), up(b, "strided"), dim=1),
              CPU.kernels["cat"](a, b, dim=1), d)
        check(OCL.kernels["cat"](up(a), up(a[:0]), up(a), dim=0),
              np.concatenate([a, a]), d)
        for dims in ((0,), (1,), (0, 1)):
            check(OCL.kernels["flip"](up(a, "strided"), dims=dims),
                  CPU.kernels["flip"](a, dims=dims), d)
        c = OCL.kernels["clone"](up(a, "transposed"))
        assert c.is_contiguous()
        check(c, a, d)
        for diag in (-1, 0, 2):
            t = sample(rng, (2, 3, 4), d)
            check(OCL.kernels["tril"](up(t, "transposed"), diagonal=diag), np.tril(t, diag), d)
            check(OCL.kernels["triu"](up(t), diagonal=diag), np.triu(t, diag), d)


# -- linear algebra ---------------------------------------------------------------------------

MATMUL_SHAPES = [((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)),
                 ((2, 1, 3, 4), (5, 4, 6)), ((130, 70), (70, 90)), ((1, 0), (0, 3)),
                 ((2, 65, 17), (17, 66))]


@pytest.mark.parametrize("d", [E.float32, E.float64, E.float16, E.int32, E.int8, E.bfloat16],
                         ids=str)
def test_matmul(d: ember.dtype) -> None:
    rng = np.random.default_rng(10)
    for k, (sa, sb) in enumerate(MATMUL_SHAPES):
        a, b = sample(rng, sa, d, -3, 3), sample(rng, sb, d, -3, 3)
        want = np.matmul(a.astype(np.float64), b.astype(np.float64)) if d.is_floating_point \
            else CPU.kernels["matmul"](a, b)
        tol = {E.float16: 2e-2, E.bfloat16: 1e-1}.get(d, 1e-4 if d is E.float32 else None)
        check(OCL.kernels["matmul"](up(a, LAYOUTS[k % 3]), up(b, LAYOUTS[(k + 1) % 3])),
              want, d, tol=tol, what=f"{sa} @ {sb}")


@pytest.mark.parametrize("d", [E.float32, E.float64, E.int32], ids=str)
def test_matmul_register_tiles_at_edges(d: ember.dtype) -> None:
    """Sizes around the packed CPU kernel's 6x16 (float64: 6x8) register tiles, big
    enough to take it rather than the small-matrix path, through every input layout,
    with broadcast batch dims and linear's bias epilogue."""
    rng = np.random.default_rng(15)
    shapes = [((17, 33), (33, 65)), ((130, 3), (3, 97)), ((1, 130), (130, 257)),
              ((65, 130), (130, 1)), ((2, 1, 13, 40), (3, 40, 17)), ((7, 50), (4, 50, 33))]
    tol = 1e-4 if d is E.float32 else None
    for sa, sb in shapes:
        a, b = sample(rng, sa, d, -3, 3), sample(rng, sb, d, -3, 3)
        want = np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)
        for la, lb in (("contiguous", "transposed"), ("transposed", "strided"),
                       ("strided", "contiguous")):
            check(OCL.kernels["matmul"](up(a, la), up(b, lb)), want, d, tol=tol,
                  what=f"{sa} @ {sb} ({la}, {lb})")
    if d.is_floating_point:
        x, w, bias = sample(rng, (33, 70), d), sample(rng, (45, 70), d), sample(rng, (45,), d)
        want = x.astype(np.float64) @ w.T.astype(np.float64) + bias
        check(OCL.kernels["linear"](up(x), up(w, "transposed"), up(bias)),
              want.astype(x.dtype), d, tol=tol)


def test_einsum() -> None:
    rng = np.random.default_rng(11)
    cases = [("ij,jk->ik", [(3, 4), (4, 5)]), ("ii->i", [(4, 4)]), ("ii", [(3, 3)]),
             ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("i,j->ij", [(3,), (4,)]),
             ("ijk,ikl,lm->jm", [(2, 3, 4), (2, 4, 5), (5, 2)]), ("ij,ij->i", [(3, 4), (1, 4)]),
             ("ba", [(3, 2)]), ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]),
             ("i...->...", [(3, 2, 2)]), ("ij->", [(3, 4)])]
    for eq, shapes in cases:
        arrs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        got = OCL.kernels["einsum"](*[up(a, "transposed") for a in arrs], equation=eq)
        check(got, np.einsum(eq, *arrs), E.float32, tol=1e-4, what=eq)


def test_fused_softmax_and_linear_match_the_decomposition() -> None:
    rng = np.random.default_rng(12)
    a = rng.standard_normal((3, 5, 4)).astype(np.float32)
    for dim in (0, 1, 2):
        for name in ("softmax", "log_softmax"):
            got = getattr(ember, name)(ember.tensor(a, device="opencl").transpose(0, 2), dim)
            want = getattr(ember, name)(ember.tensor(a).transpose(0, 2), dim)
            np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((2, 3, 4), (5, 4), (5,)))
    got = K.linear(up(x, "transposed"), up(w, "strided"), up(b, "strided"))
    check(got, x @ w.T + b, E.float32, tol=1e-5)
    check(K.linear(up(x[0, 0]), up(w), up(b)), x[0, 0] @ w.T + b, E.float32, tol=1e-5)


@pytest.mark.parametrize("d", [E.float32, E.float64, E.float16], ids=str)
def test_fused_training_kernels_match_the_cpu_ones(d: ember.dtype) -> None:
    """The optional fused kernels core uses when a backend has them: unary backwards,
    linear_backward, cross_entropy (+ backward) and the LSTM cell (+ backward)."""
    rng = np.random.default_rng(15)
    tol = 5e-3 if d is E.float16 else None
    y, g = sample(rng, (3, 4), d, -2, 2), sample(rng, (3, 4), d)
    for op in S_BACKWARD:
        check(OCL.kernels[op](up(y, "transposed"), up(g)), CPU.kernels[op](y, g), d, tol=tol,
              what=op)
    x, w, gg = sample(rng, (2, 3, 5), d), sample(rng, (4, 5), d), sample(rng, (2, 3, 4), d)
    for needs in ((True, True, True), (False, True, False), (True, False, True)):
        got = OCL.kernels["linear_backward"](up(x, "transposed"), up(w), up(gg), needs)
        for a, b in zip(got, CPU.kernels["linear_backward"](x, w, gg, needs)):
            assert (a is None) == (b is None)
            if a is not None:
                check(a, b, d, tol=3e-2 if d is E.float16 else 1e-4)
    logits, tgt = sample(rng, (6, 5), d), np.array([0, 4, -100, 2, 2, 1])
    for red in ("none", "sum", "mean"):
        (l1, p1) = OCL.kernels["cross_entropy"](up(logits, "transposed"), up(tgt, "strided"),
                                                ignore_index=-100, reduction=red)
        (l2, p2) = CPU.kernels["cross_entropy"](logits, tgt, ignore_index=-100, reduction=red)
        check(l1, l2, d, tol=tol, what=f"cross_entropy {red}")
        check(p1, p2, d, tol=tol)
        gr = sample(rng, (6,), d) if red == "none" else np.asarray(1.5, npd(d))
        check(OCL.kernels["cross_entropy_backward"](p1, up(tgt), up(gr), ignore_index=-100,
                                                    reduction=red),
              CPU.kernels["cross_entropy_backward"](p2, tgt, gr, ignore_index=-100,
                                                    reduction=red), d, tol=tol)
    ig, hg, cx = sample(rng, (3, 8), d), sample(rng, (3, 8), d), sample(rng, (3, 2), d)
    got = OCL.kernels["lstm_cell"](up(ig, "transposed"), up(hg), up(cx, "strided"))
    ref = CPU.kernels["lstm_cell"](ig, hg, cx)
    for a, b in zip(got, ref):
        check(a, b, d, tol=tol)
    ghy, gcy = sample(rng, (3, 2), d), sample(rng, (3, 2), d)
    for gc in (None, gcy):
        got_b = OCL.kernels["lstm_cell_backward"](up(ghy), None if gc is None else up(gc),
                                                  up(cx), got[1], got[2])
        for a, b in zip(got_b, CPU.kernels["lstm_cell_backward"](ghy, gc, cx, ref[1], ref[2])):
            check(a, b, d, tol=1e-2 if d is E.float16 else None)


FOREACH_BINARY = ["_foreach_add_", "_foreach_sub_", "_foreach_mul_", "_foreach_div_",
                  "_foreach_maximum_", "_foreach_add", "_foreach_mul", "_foreach_div"]


def test_foreach_kernels_match_the_cpu_ones() -> None:
    """The optimizers' list ops, written in place through each tensor's view."""
    rng = np.random.default_rng(16)

    def lists():
        return [rng.standard_normal(s).astype(np.float32) for s in ((3, 4), (5,), ())]

    def same(got, want, what):
        for g, w in zip(got, want):
            np.testing.assert_allclose(down(g), w, rtol=1e-6, atol=1e-6, err_msg=what)

    for name in FOREACH_BINARY:
        for others in ("list", "scalar"):
            for alpha in ((1, 0.5) if name in ("_foreach_add_", "_foreach_sub_") else (1,)):
                xs, ys = lists(), lists()
                X = [up(x, "transposed") for x in xs]
                kw = {"alpha": alpha} if alpha != 1 else {}
                o_ocl = [up(y) for y in ys] if others == "list" else 1.5
                o_cpu = ys if others == "list" else 1.5
                got = OCL.kernels[name](X, o_ocl, **kw)
                want = CPU.kernels[name](xs, o_cpu, **kw)
                same(X if got is None else got, xs if want is None else want, name)
    xs, a, b = lists(), lists(), lists()
    for name in ("_foreach_addcmul_", "_foreach_addcdiv_"):
        X = [up(x) for x in xs]
        OCL.kernels[name](X, [up(v, "strided") for v in a], [up(v) for v in b], value=0.3)
        CPU.kernels[name](xs, a, b, value=0.3)
        same(X, xs, name)
    ends = lists()
    X = [up(x) for x in xs]
    OCL.kernels["_foreach_lerp_"](X, [up(v) for v in ends], 0.25)
    CPU.kernels["_foreach_lerp_"](xs, ends, 0.25)
    same(X, xs, "lerp")
    xs = [np.array(np.abs(x)) for x in xs]
    X = [up(x) for x in xs]
    same(OCL.kernels["_foreach_sqrt"](X), CPU.kernels["_foreach_sqrt"](xs), "sqrt")
    same(OCL.kernels["_foreach_neg"](X), CPU.kernels["_foreach_neg"](xs), "neg")
    OCL.kernels["_foreach_sqrt_"](X)
    CPU.kernels["_foreach_sqrt_"](xs)
    same(X, xs, "sqrt_")
    OCL.kernels["_foreach_zero_"](X)
    same(X, [np.zeros_like(x) for x in xs], "zero_")
    srcs = [np.arange(12).reshape(3, 4), np.arange(5), np.array(7)]
    OCL.kernels["_foreach_copy_"](X, [up(v) for v in srcs])
    same(X, [v.astype(np.float32) for v in srcs], "copy_")
    assert sorted(k for k in CPU.kernels if k.startswith("_foreach")) == \
        sorted(k for k in OCL.kernels if k.startswith("_foreach"))


def test_training_steps_match_the_cpu() -> None:
    """An MLP and an LSTM trained a few SGD-momentum steps on each backend end equal."""
    def train(device: str):
        ember.manual_seed(0)
        mlp = ember.nn.Sequential(ember.nn.Linear(20, 32), ember.nn.Tanh(),
                                  ember.nn.Linear(32, 5)).to(device)
        lstm = ember.nn.LSTM(20, 8, batch_first=True).to(device)
        params = list(mlp.parameters()) + list(lstm.parameters())
        opt = ember.optim.SGD(params, lr=0.1, momentum=0.9)
        rng = np.random.default_rng(1)
        x = ember.tensor(rng.standard_normal((16, 20)).astype(np.float32), device=device)
        seq = ember.tensor(rng.standard_normal((4, 3, 20)).astype(np.float32), device=device)
        y = ember.tensor(rng.integers(0, 5, 16), device=device)
        for _ in range(4):
            opt.zero_grad()
            out, _ = lstm(seq)
            loss = ember.nn.functional.cross_entropy(mlp(x), y) + out.pow(2).mean()
            loss.backward()
            opt.step()
        return loss.item(), [p.detach().cpu().numpy() for p in params]

    (l1, p1), (l2, p2) = train("cpu"), train("opencl")
    assert abs(l1 - l2) < 1e-5
    for a, b in zip(p1, p2):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)


def test_convolution_helpers() -> None:
    rng = np.random.default_rng(13)
    for d in (E.float32, E.float16, E.int32):
        x = sample(rng, (2, 3, 7, 6), d)
        for ks, dil, pad, st in [((3, 3), (1, 1), (1, 1), (1, 1)),
                                 ((2, 3), (2, 1), (0, 2), (2, 1))]:
            attrs = dict(kernel_size=ks, dilation=dil, padding=pad, stride=st)
            cols = CPU.kernels["im2col"](x, **attrs)
            check(OCL.kernels["im2col"](up(x, "transposed"), **attrs), cols, d)
            check(OCL.kernels["col2im"](up(cols, "strided"), output_size=(7, 6), **attrs),
                  CPU.kernels["col2im"](cols, output_size=(7, 6), **attrs), d,
                  tol=1e-2 if d is E.float16 else None)  # the CPU sums in float16
        x1 = sample(rng, (2, 2, 9), d)
        attrs = dict(kernel_size=(4,), dilation=(2,), padding=(1,), stride=(2,))
        check(OCL.kernels["im2col"](up(x1), **attrs), CPU.kernels["im2col"](x1, **attrs), d)
        pad = ((0, 0), (1, 0), (2, 3), (0, 1))
        check(OCL.kernels["constant_pad"](up(x, "strided"), pad=pad, value=2),
              CPU.kernels["constant_pad"](x, pad=pad, value=2), d)


CONV_GEOMETRIES = [  # (spatial size, kernel, stride, padding, dilation)
    ((7, 6), (3, 3), (1, 1), (0, 0), (1, 1)),
    ((7, 6), (3, 2), (2, 1), (1, 2), (1, 2)),
    ((5, 8), (1, 1), (2, 3), (0, 0), (1, 1)),
    ((6, 6), (2, 2), (2, 2), (1, 1), (2, 1)),
    ((9,), (4,), (2,), (1,), (2,)),
    ((8,), (3,), (1,), (2,), (1,)),
]


@pytest.mark.parametrize("d", [E.float32, E.float64, E.float16, E.int32], ids=str)
def test_fused_convolution_matches_the_cpu_kernels(d: ember.dtype) -> None:
    """`conv` (im2col into (C*K, N*L) columns + one batched GEMM, bias in the epilogue) and
    `conv_backward` (each gradient one GEMM, gx folded): equal to the CPU kernels, inputs
    read through non-contiguous views, for 1-D and 2-D geometries with stride, padding
    and dilation."""
    rng = np.random.default_rng(21)
    tol = 2e-2 if d is E.float16 else 1e-4 if d is E.float32 else None
    for size, ks, st, pad, dil in CONV_GEOMETRIES:
        x = sample(rng, (3, 4) + size, d, -2, 2)
        w = sample(rng, (5, 4) + ks, d, -2, 2)
        for b in (sample(rng, (5,), d), None):
            ref, ref_cols = CPU.kernels["conv"](x, w, b, st, pad, dil)
            out, cols = OCL.kernels["conv"](up(x, "transposed"), up(w, "strided"),
                                            None if b is None else up(b, "strided"),
                                            st, pad, dil)
            what = f"conv {size} {ks} {st} {pad} {dil}"
            check(out, ref, d, tol=tol, what=what)
            # the workspace is each backend's own (the CPU's layout depends on the shapes):
            # OpenCL's is im2col as one GEMM operand, (C*K, N*L)
            unfolded = CPU.kernels["im2col"](x, kernel_size=ks, dilation=dil, padding=pad,
                                             stride=st)
            check(cols, unfolded.transpose(1, 0, 2).reshape(cols.shape), d,
                  what=what + " columns")
        g = sample(rng, ref.shape, d, -2, 2)
        for needs in ((True, True, True), (False, True, False), (True, False, True)):
            got = OCL.kernels["conv_backward"](up(g, "transposed"), x.shape, up(w), cols, st,
                                               pad, dil, needs)
            want = CPU.kernels["conv_backward"](g, x.shape, w, ref_cols, st, pad, dil, needs)
            for name, a, e in zip(("gx", "gw", "gb"), got, want):
                assert (a is None) == (e is None), name
                if a is not None:
                    check(a, e, d, tol=None if tol is None else 10 * tol,
                          what=f"{what} {name}")
    # big enough for the packed GEMM's register tiles (the bias added by rows at the edges)
    x, w, b = sample(rng, (3, 8, 11, 12), d, -1, 1), sample(rng, (13, 8, 3, 3), d, -1, 1), \
        sample(rng, (13,), d)
    ref, ref_cols = CPU.kernels["conv"](x, w, b, (1, 1), (1, 1), (1, 1))
    out, cols = OCL.kernels["conv"](up(x), up(w), up(b), (1, 1), (1, 1), (1, 1))
    check(out, ref, d, tol=None if tol is None else 5 * tol, what="conv packed")
    g = sample(rng, ref.shape, d, -1, 1)
    got = OCL.kernels["conv_backward"](up(g), x.shape, up(w), cols, (1, 1), (1, 1), (1, 1))
    want = CPU.kernels["conv_backward"](g, x.shape, w, ref_cols, (1, 1), (1, 1), (1, 1))
    for name, a, e in zip(("gx", "gw", "gb"), got, want):
        check(a, e, d, tol=None if tol is None else 20 * tol, what=f"conv packed {name}")


POOL_GEOMETRIES = [  # (spatial size, kernel, stride, padding, dilation, extra)
    ((6, 7), (2, 2), (2, 2), (0, 0), (1, 1), (0, 0)),  # tiles (the last column left out)
    # the unrolled window kernels (sources.POOL_WINDOWS): gaps between windows, 3x3
    # tiles, overlapping windows (their backward gathers)
    ((7, 9), (2, 2), (3, 2), (0, 0), (1, 1), (0, 0)),
    ((9, 8), (3, 3), (3, 3), (0, 0), (1, 1), (0, 0)),
    ((7, 7), (3, 3), (2, 2), (0, 0), (1, 1), (0, 0)),
    ((7, 7), (3, 3), (2, 2), (1, 1), (1, 1), (0, 0)),  # overlapping: the gather backward
    ((7, 6), (3, 2), (2, 1), (1, 1), (2, 1), (1, 0)),  # dilation, ceil_mode's extra
    ((5, 5), (2, 2), (2, 2), (1, 1), (1, 1), (1, 1)),  # padding, ceil_mode
    ((9,), (3,), (2,), (1,), (1,), (0,)),
    ((8,), (2,), (3,), (0,), (3,), (1,)),
]


@pytest.mark.parametrize("d", [E.float32, E.float16, E.float64], ids=str)
def test_fused_max_pool_matches_the_cpu_kernels(d: ember.dtype) -> None:
    """`max_pool` (values and window-local argmax: the first maximum, NaN wins, padding
    skipped) and `max_pool_backward` from those indices, or from the input when core
    saved no indices: equal to the CPU kernels on strided inputs with ties and NaNs."""
    rng = np.random.default_rng(22)
    for size, ks, st, pad, dil, extra in POOL_GEOMETRIES:
        # few distinct values: ties inside windows pick the first maximum
        x = sample(rng, (2, 3) + size, d, -3, 3).round()
        if d.is_floating_point:
            x.reshape(-1)[::7] = np.nan
            if not any(pad):  # -inf in padded windows: see the test below
                x.reshape(-1)[3::11] = -np.inf
        x = x.astype(npd(d))
        attrs = dict(kernel_size=ks, stride=st, padding=pad, dilation=dil, extra=extra)
        what = f"max_pool {size} {ks} {st} {pad} {dil} {extra}"
        values, idx = OCL.kernels["max_pool"](up(x, "strided"), need_indices=False, **attrs)
        ref_v, ref_i = CPU.kernels["max_pool"](x, need_indices=True, **attrs)
        check(values, ref_v, d, what=what)
        check(idx, ref_i, E.int64, what=what + " indices")
        g = sample(rng, ref_v.shape, d, -2, 2)
        want = CPU.kernels["max_pool_backward"](g, None, None, ref_i, x.shape, **attrs)
        check(OCL.kernels["max_pool_backward"](up(g, "transposed"), None, None, idx, x.shape,
                                               **attrs), want, d, what=what + " backward")
        check(OCL.kernels["max_pool_backward"](up(g), up(x), values, None, x.shape, **attrs),
              want, d, what=what + " backward from the input")


def test_max_pool_skips_the_padding_as_pytorch_does() -> None:
    """A padded window whose real elements are all -inf picks its first real element (as
    PyTorch does; the padding is never chosen), so that element gets the gradient."""
    x = np.array([[[[-np.inf, 1.0], [2.0, 3.0]]]], np.float32)
    attrs = dict(kernel_size=(2, 2), stride=(2, 2), padding=(1, 1), dilation=(1, 1),
                 extra=(0, 0))
    values, idx = OCL.kernels["max_pool"](up(x), need_indices=True, **attrs)
    np.testing.assert_array_equal(down(values), x)
    np.testing.assert_array_equal(down(idx), [[[[3, 2], [1, 0]]]])
    g = OCL.kernels["max_pool_backward"](up(np.ones_like(x)), None, None, idx, x.shape,
                                         **attrs)
    np.testing.assert_array_equal(down(g), np.ones_like(x))


def test_cnn_training_steps_match_the_cpu() -> None:
    """A small CNN (conv, relu, max_pool, linear) trained a few steps on each backend
    through the fused kernels ends with equal weights."""
    def train(device: str):
        ember.manual_seed(0)
        nn = ember.nn
        model = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(4, 6, 3, stride=2), nn.ReLU(), nn.Flatten(),
                              nn.Linear(6, 3)).to(device)
        opt = ember.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        rng = np.random.default_rng(3)
        x = ember.tensor(rng.standard_normal((5, 2, 8, 8)).astype(np.float32), device=device)
        y = ember.tensor(rng.integers(0, 3, 5), device=device)
        for _ in range(3):
            opt.zero_grad()
            loss = ember.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
        return loss.item(), [p.detach().cpu().numpy() for p in model.parameters()]

    (l1, p1), (l2, p2) = train("cpu"), train("opencl")
    assert abs(l1 - l2) < 1e-5
    for a, b in zip(p1, p2):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)


# -- creation and random numbers ----------------------------------------------------------------

def test_full_and_arange() -> None:
    for d in ALL:
        v = True if d is E.bool else (3 if not d.is_floating_point else 2.7)
        check(OCL.kernels["full"](shape=(2, 3), fill_value=v, dtype=d, device=0),
              CPU.kernels["full"]((2, 3), v, d), d)
    for start, end, step, d in [(0, 10, 1, E.int64), (2, -7, -3, E.int32), (0.5, 3, 0.25,
                                E.float32), (0, 1, 0.1, E.float64), (1, 9, 2, E.float16),
                                (0.5, 5, 1, E.int64), (0, 300, 7, E.uint8)]:
        check(OCL.kernels["arange"](start=start, end=end, step=step, dtype=d, device=0),
              CPU.kernels["arange"](start, end, step, d), d)


def _philox_ref(key: int, ctr: int) -> list[int]:
    """Philox4x32-10 in Python (Salmon et al., SC'11), counter (ctr lo, ctr hi, 0, 0)."""
    m = 0xFFFFFFFF
    c = [ctr & m, ctr >> 32, 0, 0] if isinstance(ctr, int) else list(ctr)
    k0, k1 = (key & m, key >> 32) if isinstance(key, int) else key
    for r in range(10):
        if r:
            k0, k1 = (k0 + 0x9E3779B9) & m, (k1 + 0xBB67AE85) & m
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [((p1 >> 32) ^ c[1] ^ k0) & m, p1 & m, ((p0 >> 32) ^ c[3] ^ k1) & m, p0 & m]
    return c


def test_philox_known_answers_and_device_stream() -> None:
    # Random123's known-answer vectors for philox4x32-10
    assert _philox_ref((0, 0), [0, 0, 0, 0]) == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C,
                                                  0x9B00DBD8]
    assert _philox_ref((0xA4093822, 0x299F31D0),
                       [0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344]) == \
        [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]
    # the device's stream: randint over all 64-bit values returns the raw words
    K.manual_seed(1234)
    start = DEV.rng_offset
    got = down(K.randint((6,), E.int64, -(2 ** 63), 2 ** 63, 0)).view(np.uint64)
    want = []
    for i in range(3):
        w = _philox_ref(1234, start + i)
        want += [w[0] | (w[1] << 32), w[2] | (w[3] << 32)]
    np.testing.assert_array_equal(got - np.uint64(2 ** 63), np.array(want, np.uint64))


def test_random_numbers_are_reproducible_and_well_distributed() -> None:
    for d in FLOATS:
        ember.manual_seed(7)
        a = ember.rand(40000, device="opencl", dtype=d)
        b = ember.randn(40000, device="opencl", dtype=d)
        ember.manual_seed(7)
        a2 = ember.rand(40000, device="opencl", dtype=d)
        b2 = ember.randn(40000, device="opencl", dtype=d)
        ha, hb = a.cpu().double().numpy(), b.cpu().double().numpy()
        np.testing.assert_array_equal(ha, a2.cpu().double().numpy())
        np.testing.assert_array_equal(hb, b2.cpu().double().numpy())
        assert ha.min() >= 0 and ha.max() < 1 and abs(ha.mean() - 0.5) < 0.01
        assert abs(hb.mean()) < 0.03 and abs(hb.std() - 1) < 0.03
        assert abs(np.mean(np.abs(hb) < 1) - 0.6827) < 0.01  # the normal's shape
    c = ember.rand(40000, device="opencl")
    assert not np.array_equal(c.cpu().numpy(), ha.astype(np.float32))  # the stream moves on
    r = ember.randint(-3, 5, (20000,), device="opencl").cpu().numpy()
    assert r.dtype == np.int64 and set(np.unique(r)) == set(range(-3, 5))
    assert abs(np.bincount(r + 3).std() / 2500) < 0.05
    for n in (1, 2, 17, 1000):
        p = ember.randperm(n, device="opencl").cpu().numpy()
        assert p.dtype == np.int64 and sorted(p) == list(range(n))
    ember.manual_seed(3)
    p1 = ember.randperm(50, device="opencl", dtype=ember.int32).cpu().numpy()
    ember.manual_seed(3)
    p2 = ember.randperm(50, device="opencl", dtype=ember.int32).cpu().numpy()
    assert p1.dtype == np.int32 and np.array_equal(p1, p2)
    assert not np.array_equal(p1, np.arange(50))


# -- devices, caches, errors --------------------------------------------------------------------

def test_device_listing_and_info() -> None:
    n = OCL.device_count()
    assert n >= 1 and n == len(rt.devices())
    info = OCL.device_info(0)
    assert info.name == DEV.name and info.memory_bytes > 0 and info.compute_units >= 1
    assert info.details["platform"] == DEV.platform_name
    t = ember.ones(2, device="opencl")
    assert t.device == ember.device("opencl:0")
    assert E.float32 in OCL.dtypes and E.bfloat16 in OCL.dtypes
    assert (E.float64 in OCL.dtypes) == all(dv.fp64 for dv in rt.devices())


def test_ember_opencl_device_picks_the_default(monkeypatch) -> None:
    monkeypatch.setenv("EMBER_OPENCL_DEVICE", str(len(rt.devices()) - 1))
    order = rt._discover()
    assert order[0].cl_device == rt.devices()[-1].cl_device
    assert sorted(d.name for d in order) == sorted(d.name for d in rt.devices())
    monkeypatch.setenv("EMBER_OPENCL_DEVICE", "99")
    with pytest.raises(RuntimeError, match="EMBER_OPENCL_DEVICE='99' is not the index"):
        rt._discover()


def test_broadcast_views_as_inputs() -> None:
    """Zero-stride (expanded) views feed every kind of kernel without a copy."""
    rng = np.random.default_rng(14)
    a = rng.standard_normal((1, 4)).astype(np.float32)
    x = K.expand(up(a, "contiguous"), (3, 4))
    full = np.broadcast_to(a, (3, 4))
    assert x.strides == (0, 1)
    check(OCL.kernels["exp"](x), np.exp(full), E.float32)
    check(OCL.kernels["mul"](x, up(full.copy())), full * full, E.float32)
    check(OCL.kernels["sum"](x, dims=(0,), keepdim=False), full.sum(0), E.float32)
    check(OCL.kernels["matmul"](x, K.permute(x, (1, 0))), full @ full.T, E.float32, tol=1e-5)
    check(OCL.kernels["cumsum"](x, dim=0), np.cumsum(full, 0), E.float32)
    check(OCL.kernels["index_select"](x, up(np.array([2, 0])), dim=0), full[[2, 0]],
          E.float32)


POCL = "Portable Computing Language" in DEV.platform_name


@pytest.mark.skipif(not POCL, reason="needs PoCL (POCL_DEVICES makes two devices)")
@pytest.mark.parametrize("shared_context", [True, False])
def test_copies_between_two_devices(shared_context: bool) -> None:
    """Two PoCL devices: a direct device-to-device copy when they share a context, a
    copy through the host when they do not; and EMBER_OPENCL_DEVICE=1 makes the second
    device opencl:0."""
    code = textwrap.dedent(f"""
        import ember
        from ember.backends.opencl import runtime as rt
        devs = rt.devices()
        assert len(devs) == 2, devs
        if not {shared_context}:
            rt._contexts[devs[0].platform.int_ptr] = False  # one context per device
        x = ember.arange(12, device="opencl:0", dtype=ember.float32).reshape(3, 4).t()
        y = x.to("opencl:1")
        assert y.device == ember.device("opencl:1")
        assert (devs[0].context is devs[1].context) == {shared_context}
        z = (y * 2).to("opencl:0")
        print(z.cpu().numpy().ravel().tolist())
        import os
        os.environ["EMBER_OPENCL_DEVICE"] = "1"
        order = rt._discover()
        assert [d.cl_device for d in order] == [devs[1].cl_device, devs[0].cl_device]
    """)
    env = dict(os.environ, POCL_DEVICES="pthread pthread", EMBER_OPENCL_DEVICE="")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    want = (np.arange(12, dtype=np.float32).reshape(3, 4).T * 2).ravel().tolist()
    assert out.stdout.split("\n")[0] == str(want)


def test_gpu_launch_shapes_on_this_device() -> None:
    """The launch shapes ember uses on GPUs (work-groups of 256, one element per
    work-item, 256-wide reduction trees, local-memory matmul tiles), forced on this device
    by EMBER_OPENCL_TUNING=gpu, give the same results as the CPU reference."""
    if os.environ.get("EMBER_OPENCL_TUNING"):
        pytest.skip("already running under EMBER_OPENCL_TUNING")
    select = ("(float32 and (reductions or matmul or binary_ops or unary_ops or gather)) or "
              "large_reductions or fused or convolution or advanced or broadcast_views or "
              "random or cat_flip")
    env = dict(os.environ, EMBER_OPENCL_TUNING="gpu")
    out = subprocess.run([sys.executable, "-m", "pytest", __file__, "-q", "-p",
                          "no:cacheprovider", "-k", select], capture_output=True, text=True,
                         env=env, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:]
    assert out.stdout.count(".") >= 12, out.stdout  # the selected tests ran and passed


def test_unavailable_reason_without_pyopencl() -> None:
    code = ("import sys; sys.modules['pyopencl'] = None\n"
            "from ember.backends.opencl import OpenCLBackend\n"
            "b = OpenCLBackend(); print(b.is_available(), b.device_count()); "
            "print(b.unavailable_reason())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    first, reason = out.stdout.splitlines()[:2]
    assert first == "False 0"
    assert "pyopencl is not installed or failed to import" in reason
    assert "pip install" in reason


def test_importing_the_plugin_does_not_import_pyopencl() -> None:
    code = ("import sys, ember.backends.opencl as m; b = m.OpenCLBackend(); "
            "assert 'pyopencl' not in sys.modules, 'imported'; print(len(b.kernels))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) >= len(OPS)


# -- SHAPE family: strided views ------------------------------------------------------


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided"])
def test_strided_view_is_a_view_and_matches_the_cpu(layout: str) -> None:
    a = np.random.default_rng(5).standard_normal((3, 4, 5)).astype(np.float32)
    x = up(a, layout)
    cases = [((3, 4), ((1, 0, 1), (0, 1, 0)), (0, 0, 0)),  # a diagonal of dims 0 and 2
             ((3, 3, 2), ((1, 0, 0), (0, 0, 1), (0, 0, 1)), (0, 1, 1)),  # unfold windows
             ((0, 2), ((1, 0, 0), (0, 1, 0)), (0, 0, 0))]  # empty
    for shape, steps, start in cases:
        got = OCL.kernels["strided_view"](x, shape=shape, steps=steps, start=start)
        want = CPU.kernels["strided_view"](a, shape=shape, steps=steps, start=start)
        check(got, want, E.float32, what=f"{layout} {shape}")
        if got.size:
            assert got.mem is x.mem  # a view: the same memory


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided"])
def test_view_dtype_is_a_view_and_matches_the_cpu(layout: str) -> None:
    a = np.random.default_rng(6).standard_normal((3, 4)).astype(np.float32)
    x = up(a, layout)
    # a different element size needs a dense last dimension (core checks, as PyTorch)
    targets = [E.int32, E.float16, E.uint8, E.int16] if layout == "contiguous" else [E.int32]
    for d in targets:
        got = OCL.kernels["view_dtype"](x, dtype=d)
        want = CPU.kernels["view_dtype"](a if layout != "strided" else down(x), dtype=d)
        assert got.mem is x.mem  # the same memory, read as another dtype
        check(got, want, d, what=f"{layout} {d}")
    pairs = OCL.kernels["view_dtype"](up(a[:, 2:], layout="contiguous"), dtype=E.int64)
    check(pairs, CPU.kernels["view_dtype"](np.ascontiguousarray(a[:, 2:]), dtype=E.int64))
    if layout == "contiguous":
        back = OCL.kernels["view_dtype"](OCL.kernels["view_dtype"](x, dtype=E.uint8),
                                         dtype=E.float32)
        check(back, a, E.float32)
    t = ember.tensor([[1.0, -2.0, 0.5, 0.0]], device="opencl")
    assert t[:, 2:].view(ember.int64).stride() == (2, 1)  # as torch
    assert t.view(ember.int32).cpu().tolist() == [[1065353216, -1073741824, 1056964608, 0]]


# the primitives the tests above compare with the CPU backend, besides the op lists
TESTED = set(UNARY_SAME + UNARY_FLOAT + PRED + ARITH + COMPARE + BITWISE) | {
    "div", "atan2", "where", "clamp", "cast", "sum", "prod", "max", "min", "all", "any",
    "argmax", "argmin", "cumsum", "topk", "reshape", "permute", "expand", "getitem", "setitem",
    "assign", "clone", "gather", "scatter", "scatter_add", "index_select", "nonzero", "cat",
    "flip", "tril", "triu", "matmul", "einsum", "im2col", "col2im", "constant_pad", "full",
    "arange", "rand", "randn", "randint", "randperm", "strided_view", "view_dtype"}

# elementwise math (issue 16): OpenCL C's own functions run on the device; the special
# functions OpenCL C lacks (digamma, erfinv, the Bessel functions ...) and the rare integer
# ops are computed on the host (ember/backends/opencl/host.py)
MATH_UNARY = ["sinh", "cosh", "asinh", "acosh", "atanh", "exp2", "log10", "erfc", "lgamma"]
MATH_DOMAIN = {"acosh": (1.0, 5.0), "atanh": (-0.95, 0.95), "log10": (0.05, 8.0),
               "lgamma": (0.05, 6.0)}
TESTED |= set(MATH_UNARY) | {"signbit", "fmod", "hypot"} | set(HOST_OPS)


@pytest.mark.parametrize("op", HOST_OPS)
def test_host_computed_kernels(op: str) -> None:
    rng = np.random.default_rng(18)
    integer = op in ("bitwise_left_shift", "bitwise_right_shift", "gcd", "lcm")
    d = E.int32 if integer else E.float32
    a = sample(rng, (3, 4), d, 0.2 if not integer else -9, 5 if not integer else 9)
    b = sample(rng, (4,), d, 0.5 if not integer else 0, 3 if not integer else 5)
    binary = integer or op in ("nextafter", "igamma", "igammac", "special_zeta")
    args = (a, b) if binary else (a,)
    attrs = {"n": 2} if op == "polygamma" else {}
    got = OCL.kernels[op](*[up(x) for x in args], **attrs)
    check(got, CPU.kernels[op](*args, **attrs), d, what=op)
    if binary:  # a Python scalar operand
        got = OCL.kernels[op](up(a), 2, **attrs)
        check(got, CPU.kernels[op](a, 2, **attrs), d, what=f"{op} scalar")


@pytest.mark.parametrize("op", HOST_OPMATH)
@pytest.mark.parametrize("d", [E.float32, E.bfloat16])
def test_opmath_kernels_round_as_the_cpus(op: str, d: ember.dtype) -> None:
    """add(alpha=), addcmul, addcdiv and lerp with PyTorch's rounding (on the host)."""
    rng = np.random.default_rng(20)
    a, b, c = (sample(rng, (3, 4), d, 0.5, 2) for _ in range(3))
    args = {"opmath_axpy": (a, b, 0.3), "opmath_lerp": (a, b, 0.7)}.get(op, (a, b, c, 0.3))
    got = OCL.kernels[op](*[up(x) if isinstance(x, np.ndarray) else x for x in args])
    np.testing.assert_array_equal(down(got), CPU.kernels[op](*args))


TESTED |= set(HOST_LINALG)


def test_factorizations_run_on_the_host_and_match_the_cpu() -> None:
    """det, inv, solve, Cholesky, QR, SVD, eigh, LU and LDL of OpenCL tensors: LAPACK on the
    host (ember/backends/opencl/host.py), the same numbers as the CPU backend's."""
    rng = np.random.default_rng(19)
    a = rng.uniform(-1, 1, (2, 3, 3)).astype(np.float32) + 3 * np.eye(3, dtype=np.float32)
    spd = a @ a.transpose(0, 2, 1)
    b = rng.uniform(-1, 1, (2, 3, 2)).astype(np.float32)
    la = ember.linalg
    cases = {
        "det": lambda t, s, r: ember.det(t), "slogdet": lambda t, s, r: la.slogdet(t)[1],
        "inv": lambda t, s, r: la.inv(t), "solve": lambda t, s, r: la.solve(t, r),
        "cholesky": lambda t, s, r: la.cholesky(s), "qr": lambda t, s, r: la.qr(t)[1].abs(),
        "svd": lambda t, s, r: la.svdvals(t), "eigh": lambda t, s, r: la.eigvalsh(s),
        "lu": lambda t, s, r: la.lu_factor(t)[0], "geqrf": lambda t, s, r: ember.geqrf(t)[0],
        # an indefinite symmetric matrix: Bunch-Kaufman's LDL and its solve
        "ldl": lambda t, s, r: la.ldl_solve(*la.ldl_factor(t + t.mT - 6 * ember.eye(
            3, device=t.device)), r)}
    for name, fn in cases.items():
        want = fn(ember.tensor(a), ember.tensor(spd), ember.tensor(b))
        got = fn(*(ember.tensor(x, device="opencl") for x in (a, spd, b)))
        np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-4, atol=1e-5,
                                   err_msg=name)


@pytest.mark.parametrize("d", FLOATS, ids=str)
def test_elementwise_math_kernels(d: ember.dtype) -> None:
    rng = np.random.default_rng(16)
    for k, op in enumerate(MATH_UNARY):
        a = sample(rng, (3, 5), d, *MATH_DOMAIN.get(op, (-3.0, 3.0)))
        a[0, :3] = np.array([np.nan, np.inf, -np.inf]).astype(a.dtype)
        check(OCL.kernels[op](up(a, LAYOUTS[k % 3])), CPU.kernels[op](a), d,
              tol=max(TOL[d], 1e-5 if d is E.float32 else 0.0), what=f"{op}({d})")
    a = np.array([0.0, -0.0, -1.5, 2.0, np.nan, -np.inf], npd(d))
    check(OCL.kernels["signbit"](up(a)), CPU.kernels["signbit"](a), E.bool, what="signbit")
    a, b = sample(rng, (3, 4), d), sample(rng, (4,), d, nonzero=True)
    for op in ("fmod", "hypot"):
        check(OCL.kernels[op](up(a), up(b)), CPU.kernels[op](a, b), d, what=f"{op}({d})")
        check(OCL.kernels[op](up(a), 1.5), CPU.kernels[op](a, 1.5), d, what=f"{op} scalar")


@pytest.mark.parametrize("d", INTS, ids=str)
def test_integer_fmod(d: ember.dtype) -> None:
    rng = np.random.default_rng(17)
    a, b = sample(rng, (3, 4), d, -9, 9), sample(rng, (4,), d, -4, 4, nonzero=True)
    check(OCL.kernels["fmod"](up(a), up(b)), CPU.kernels["fmod"](a, b), d, what=f"fmod({d})")
    with pytest.raises(ZeroDivisionError, match="fmod"):
        OCL.kernels["fmod"](up(a), up(np.zeros(4, npd(d))))


# -- scatter_reduce (the REDUCE family) ------------------------------------------------------
TESTED |= {"scatter_reduce"}


@pytest.mark.parametrize("d", [E.float32, E.float64, E.int64, E.int32, E.int16, E.int8,
                               E.uint8, E.float16, E.bfloat16, E.bool], ids=str)
def test_scatter_reduce(d: ember.dtype) -> None:
    """prod, amax and amin through atomic compare-and-swap loops, repeats included, for
    every element size (8- and 16-bit ones update their 32-bit word)."""
    rng = np.random.default_rng(9)
    a = sample(rng, (4, 5), d, -2, 2)
    if d.is_floating_point:
        a[1, 2] = np.nan  # propagates through max and min, as in PyTorch
    for dim in (0, 1):
        ix = rng.integers(0, a.shape[dim], (6, 5) if dim == 0 else (4, 7))
        s = sample(rng, ix.shape, d, -2, 2)
        for reduce in ("prod", "amax", "amin"):
            check(OCL.kernels["scatter_reduce"](up(a, "strided"), up(ix, "transposed"), up(s),
                                                dim=dim, reduce=reduce),
                  CPU.kernels["scatter_reduce"](a, ix, s, dim=dim, reduce=reduce), d,
                  tol=0.05 if d in (E.float16, E.bfloat16) else None, what=f"{reduce} {dim}")
# -- end of the REDUCE family's tests --


def test_every_primitive_has_a_kernel_and_a_test() -> None:
    """A primitive new in core must get an OpenCL kernel, and a comparison here."""
    assert sorted(set(OPS) - set(OCL.kernels)) == []
    assert sorted(set(OPS) - TESTED) == []


def test_programs_are_built_once_per_process() -> None:
    a = up(np.ones(5, np.float32))
    OCL.kernels["exp"](a)
    before = dict(rt.stats)
    kernel = K.dtype_kernel(DEV, K.S.TYPES["float32"], K.S.MAXD, "unary")
    for _ in range(3):
        OCL.kernels["exp"](a)
        OCL.kernels["log"](a)  # the same program: one build serves every unary op
    assert rt.stats["programs"] == before["programs"]
    assert K.dtype_kernel(DEV, K.S.TYPES["float32"], K.S.MAXD, "unary") is kernel


def test_program_binaries_are_cached_on_disk(tmp_path) -> None:
    """With the binary cache on, a second process loads every program it needs from
    disk and compiles none."""
    code = textwrap.dedent("""
        import ember
        from ember.backends.opencl import runtime as rt
        x = ember.tensor([[1, 2], [3, 4]], device="opencl").t().contiguous()  # a copy kernel
        assert x.cpu().tolist() == [[1, 3], [2, 4]]
        print(rt.stats["compiled"], rt.stats["cache_hits"])
    """)
    env = dict(os.environ, EMBER_OPENCL_CACHE="1", EMBER_OPENCL_CACHE_DIR=str(tmp_path))
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=env, timeout=300) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    (c1, h1), (c2, h2) = (map(int, r.stdout.split()) for r in runs)
    assert c1 >= 1 and h1 == 0
    assert c2 == 0 and h2 == c1
    assert len(list(tmp_path.glob("*.bin"))) == c1


def test_dtype_and_memory_errors_name_the_device() -> None:
    class NoFp64:
        fp64 = False
        label = "opencl:0 (a device without doubles)"

    with pytest.raises(RuntimeError, match=r"add: dtype float64 is not supported on "
                                           r"opencl:0 \(a device without doubles\)"):
        K.ctype(NoFp64(), E.float64, "add")
    n = DEV.max_alloc // 4 + 1
    label = DEV.label.replace("(", r"\(").replace(")", r"\)")
    with pytest.raises(RuntimeError, match=rf"OpenCL out of memory on {label}: tried to "
                                           rf"allocate .* \({(4 * n + 7) & ~7} bytes\)"):
        K.empty(DEV, (n,), E.float32)


def test_out_of_range_indices_are_reported_at_the_next_sync() -> None:
    """Kernels never read or write out of bounds: a bad index is skipped and flagged, and
    the next synchronization raises an IndexError naming the op family and the device."""
    x = up(np.ones((3, 4), np.float32))
    g = OCL.kernels["gather"](x, up(np.array([[0, 5, 1, 2]])), dim=0)
    with pytest.raises(IndexError, match="gather, scatter or scatter_add was out of range"):
        down(g)
    np.testing.assert_array_equal(down(x), np.ones((3, 4)))  # reported once, then cleared
    K.setitem(x, 2.0, up(np.array([0, -4])), index=(("tensor", 0), ("slice", 0, 4, 1)))
    with pytest.raises(IndexError, match="an index tensor of an indexing op"):
        OCL.synchronize()
    loss, _ = OCL.kernels["cross_entropy"](x, up(np.array([0, 7, 1])), ignore_index=-100,
                                           reduction="none")
    with pytest.raises(IndexError, match="target class of cross_entropy"):
        down(loss)


# -- the conformance suite ----------------------------------------------------------------------

def _conformance_report(tmp_path, name: str, device: str, *select: str) -> tuple[dict, str]:
    """Run ember.testing on `device` (EMBER_STRICT=1: every op native, no CPU fallback);
    {test name with DEVICE for the device: passed, failed or None if skipped}, and the
    run's output tail."""
    import xml.etree.ElementTree as ET

    report = tmp_path / f"{name}.xml"
    env = dict(os.environ, EMBER_STRICT="1")
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--pyargs", "ember.testing", "--ember-device",
         device, "--ember-examples", "3", "-q", "-p", "no:cacheprovider",
         f"--junitxml={report}", *select],
        capture_output=True, text=True, env=env, timeout=600)
    tail = out.stdout[-3000:] + out.stderr[-3000:]
    assert report.exists(), tail
    results = {}
    for case in ET.parse(report).iter("testcase"):
        name_ = (case.get("classname", "") + "." + case.get("name", "")).replace(
            f"[{device}", "[DEVICE")
        bad = case.find("failure") is not None or case.find("error") is not None
        results[name_] = None if case.find("skipped") is not None else not bad
    return results, tail


def test_conformance_suite_passes_on_opencl_strictly(tmp_path) -> None:
    """ember.testing against `opencl`, every op native (EMBER_STRICT=1: no CPU fallback):
    every test the CPU reference backend passes, the OpenCL backend passes too (a test
    failing on both is a core issue, reported to core, not a backend one). The CPU runs
    only the tests that failed on OpenCL (the whole suite passes on it in
    test_conformance.py)."""
    opencl, tail = _conformance_report(tmp_path, "opencl", "opencl")
    assert sum(1 for ok in opencl.values() if ok) > 100, tail
    failed = {name for name, ok in opencl.items() if ok is False}
    if not failed:
        return
    tests = sorted({name.split("[")[0].rsplit(".", 1)[1] for name in failed})
    cpu, _ = _conformance_report(tmp_path, "cpu", "cpu", "-k", " or ".join(tests))
    assert {name for name in failed if cpu.get(name) is not False} == set()


# -- speed paths (issue 17): each equal to the path it shortcuts -----------------------------

@pytest.mark.parametrize("d", [E.float32, E.float16, E.int32], ids=str)
def test_contiguous_elementwise_loop_equals_the_strided_one(d: ember.dtype) -> None:
    """Operands all of unit stride take one loop per op (flag bit 9); the same values
    through strided views take the generic loop: the results are identical, scalars and
    in-place updates included."""
    rng = np.random.default_rng(17)
    a, b = sample(rng, (5, 33), d, 1, 4), sample(rng, (5, 33), d, 1, 4)
    for op in ("add", "mul", "maximum"):
        fast = K.TABLE[op](up(a, "contiguous"), up(b, "contiguous"))
        slow = K.TABLE[op](up(a, "strided"), up(b, "transposed"))
        np.testing.assert_array_equal(down(fast), down(slow), err_msg=op)
        check(fast, CPU.kernels[op](a, b), d, what=op)
    x, y = up(a, "contiguous"), up(b, "contiguous")
    K.FOREACH["_foreach_add_"]([x], [y], alpha=3)  # axpy in place, a scalar operand
    check(x, CPU.kernels["add"](a, CPU.kernels["mul"](b, 3)), d, what="add_ alpha")
    padded = np.concatenate([b.reshape(-1)[:3], a.reshape(-1)])
    shifted = K.getitem(up(padded, "contiguous"),
                        index=(("slice", 3, 3 + a.size, 1),))  # unit stride at an offset
    assert shifted.offset == 3 and shifted.strides == (1,)
    np.testing.assert_array_equal(down(K.TABLE["neg"](shifted)),
                                  down(K.TABLE["neg"](up(a.reshape(-1), "strided"))))


def test_fused_sgd_kernel_and_its_strided_fallback_match_the_cpu() -> None:
    """`_fused_sgd_`: one sgd_step launch per contiguous parameter, elementwise ops for a
    strided one; both equal the CPU's update (momentum, dampening, weight decay,
    nesterov, maximize), buffers included."""
    rng = np.random.default_rng(5)
    for config in (dict(momentum=0.9, dampening=0.0, weight_decay=0.0, nesterov=False,
                        maximize=False),
                   dict(momentum=0.8, dampening=0.1, weight_decay=0.01, nesterov=True,
                        maximize=True)):
        p, g, buf = (sample(rng, (7, 9), E.float32) for _ in range(3))
        ref_p, ref_b = p.copy(), buf.copy()
        CPU.kernels["_fused_sgd_"]([ref_p], [g], [ref_b], 0.05, **config)
        for layout in ("contiguous", "transposed"):
            cp, cb = up(p, layout), up(buf, layout)
            OCL.kernels["_fused_sgd_"]([cp], [up(g, layout)], [cb], 0.05, **config)
            check(cp, ref_p, E.float32, what=f"{layout} parameter {config}")
            check(cb, ref_b, E.float32, what=f"{layout} momentum buffer {config}")


def test_owns_keeps_a_fresh_gradient_without_a_copy() -> None:
    """A buffer whose memory no other buffer views is owned (autograd keeps it as .grad);
    a view, or a buffer with a view alive, is not."""
    a = OCL.from_numpy(np.ones((3, 4), np.float32), 0)
    assert OCL.owns(a)
    view = K.permute(a, (1, 0))
    assert not OCL.owns(a) and not OCL.owns(view)
    del view
    assert OCL.owns(a)
    w = ember.randn(3, 4, device="opencl", requires_grad=True)
    out = ember.randn(2, 4, device="opencl") @ w.T
    out.sum().backward()
    assert OCL.owns(w.grad._data)


def test_cpu_work_groups_cut_the_grid_into_several_per_core() -> None:
    """Launches that leave the work-group shape to a CPU device get divisors of each dim
    and about 8 groups per core, the last (batch) dim cut first; a prime size goes to
    groups of one."""
    for size in [(16, 22, 1), (43, 6, 64), (128,), (18432,), (43,), (7,), (1, 1, 1)]:
        local = rt._cpu_local_size(size, 2)
        assert all(g % loc == 0 for g, loc in zip(size, local)), (size, local)
        groups = np.prod([g // loc for g, loc in zip(size, local)])
        assert groups >= min(16, np.prod(size)), (size, local)
    assert rt._cpu_local_size((43, 6, 64), 2) == (43, 6, 4)
    assert rt._cpu_local_size((16, 22, 1), 2) == (16, 1, 1)
