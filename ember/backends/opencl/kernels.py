"""The OpenCL kernels of every primitive op (semantics: each op's declaration in
ember/core/ops; the NumPy reference is ember.backends.xp).

Each function here is a kernel of the dispatch table, `kernel(*buffers, **attrs)`: it
computes the output's view on the host, fetches the compiled OpenCL kernel of its family
and dtype from the device's cache, packs the per-call metadata into one struct and
enqueues the launch on the device's in-order queue. Nothing here waits for the device
except the few ops whose result shape or validity depends on the data (nonzero, integer
division by a zero tensor, integer pow with a negative tensor exponent).
"""

from __future__ import annotations

import functools
import math
import struct
from typing import Any

from ember.backends.opencl import runtime as rt
from ember.backends.opencl import sources as S
from ember.backends.opencl.buffer import (
    CLBuffer,
    contiguous_strides,
    is_contiguous,
    reshape_strides,
)
from ember.core.backend import ALL_DTYPES, OVERLAP, IntegerDivisionByZero, ViewNotPossible

DTYPES = {d.name: d for d in ALL_DTYPES}
BOOL, INT64 = DTYPES["bool"], DTYPES["int64"]

_PACK_CACHE: dict[int, struct.Struct] = {}


def _longs(n: int) -> struct.Struct:
    s = _PACK_CACHE.get(n)
    if s is None:
        s = _PACK_CACHE[n] = struct.Struct(f"{n}q")
    return s


def _pad(values: Any, n: int, fill: int = 0) -> list[int]:
    values = list(values)
    return values + [fill] * (n - len(values))


# -- dtypes and buffers -------------------------------------------------------------------

def ctype(dev: rt.Device, dtype: Any, op: str) -> S.CType:
    """The C types of `dtype` on `dev`, or a RuntimeError naming dtype, op and device."""
    t = S.TYPES[dtype.name]
    if t.name == "float64" and not dev.fp64:
        raise RuntimeError(f"{op}: dtype float64 is not supported on {dev.label}: the device "
                           "does not report cl_khr_fp64 (use float32)")
    return t


def empty(dev: rt.Device, shape: tuple[int, ...], dtype: Any, op: str = "empty") -> CLBuffer:
    """A fresh contiguous buffer. Sizes round up to 8 bytes: the atomics on 8- and 16-bit
    elements update the aligned 32-bit word around them."""
    if dtype.name == "float64" and not dev.fp64:
        ctype(dev, dtype, op)  # raises, naming the op and the device
    shape = tuple(shape)
    strides, numel = _contiguous(shape)
    return CLBuffer(dev.alloc((numel * dtype.itemsize + 7) & ~7), shape, strides, 0, dtype, dev)


@functools.lru_cache(maxsize=4096)
def _contiguous(shape: tuple[int, ...]) -> tuple[tuple[int, ...], int]:
    return contiguous_strides(shape), math.prod(shape)


def _bcast_strides(x: CLBuffer, shape: tuple[int, ...]) -> tuple[int, ...]:
    lead = len(shape) - len(x.shape)
    return tuple(0 if d < lead or x.shape[d - lead] == 1 else x.strides[d - lead]
                 for d in range(len(shape)))


def _merge(shape: tuple[int, ...], stlist: list[tuple[int, ...]]):
    """Drop size-1 dims and merge neighbours that are contiguous in every array (the
    fewer dims, the cheaper each element's index arithmetic)."""
    dims = [d for d, s in enumerate(shape) if s != 1]
    if not dims:
        return [1], [[0] for _ in stlist]
    mshape = [shape[dims[0]]]
    msts = [[st[dims[0]]] for st in stlist]
    for d in dims[1:]:
        s = shape[d]
        if all(m[-1] == st[d] * s for m, st in zip(msts, stlist)):
            mshape[-1] *= s
            for m, st in zip(msts, stlist):
                m[-1] = st[d]
        else:
            mshape.append(s)
            for m, st in zip(msts, stlist):
                m.append(st[d])
    return mshape, msts


def _maxd(nd: int) -> int:
    if nd <= S.MAXD:
        return S.MAXD
    if nd <= S.MAXD_BIG:
        return S.MAXD_BIG
    raise RuntimeError(f"the OpenCL backend supports tensors of at most {S.MAXD_BIG} "
                       f"(non-mergeable) dimensions, got {nd}")


def _groups(n: int, ls: int) -> int:
    return -(-n // ls) * ls


# -- scalars ----------------------------------------------------------------------------

def _f32(v: float) -> float:
    try:
        return struct.unpack("f", struct.pack("f", v))[0]
    except OverflowError:
        return math.copysign(math.inf, v)


def _bf16(v: float) -> float:
    u = struct.unpack("I", struct.pack("f", _f32(v)))[0]
    if (u & 0x7FFFFFFF) > 0x7F800000:
        return v
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return struct.unpack("f", struct.pack("I", u & 0xFFFFFFFF))[0]


def _f16(v: float) -> float:
    try:
        return struct.unpack("e", struct.pack("e", v))[0]
    except OverflowError:
        return math.copysign(math.inf, v)


_scalars: dict[Any, bytes] = {}


def scalar_bytes(t: S.CType, v: Any) -> bytes:
    """A Python scalar as `t`'s compute type (rounded to the dtype first, as NumPy casts
    a scalar to the array's dtype); memoized, since programs reuse a few constants."""
    key = (t.name, type(v), v)
    b = _scalars.get(key)
    if b is None:
        b = _scalar_bytes(t, v)
        if len(_scalars) > 1024:
            _scalars.clear()
        _scalars[key] = b
    return b


def _scalar_bytes(t: S.CType, v: Any) -> bytes:
    if t.kind == "b":
        return b"\x01" if v else b"\x00"
    if t.kind in "ui":
        iv = int(v)
        bits = 8 * t.size
        iv &= (1 << bits) - 1
        if t.kind == "i" and iv >= 1 << (bits - 1):
            iv -= 1 << bits
        return struct.pack(t.pack, iv)
    v = float(v)
    if t.name == "float16":
        v = _f16(v)
    elif t.name == "bfloat16":
        v = _bf16(v)
    if t.pack == "f":
        return struct.pack("f", _f32(v))
    return struct.pack("d", v)


# -- the elementwise launcher -------------------------------------------------------------

_layouts: dict[Any, Any] = {}


def _layout(shape: tuple[int, ...], sts: tuple) -> tuple:
    key = (shape, sts)
    lay = _layouts.get(key)
    if lay is None:
        mshape, msts = _merge(shape, list(sts))
        nd = len(mshape)
        maxd = _maxd(nd)
        body = _longs(maxd * (1 + len(sts))).pack(
            *_pad(mshape, maxd, 1), *[v for m in msts for v in _pad(m, maxd)])
        # fast: the output runs contiguously in one merged dim; `unit`: the operands
        # (bit k for array k, output included) that do so too
        fast = nd == 1 and msts[0][0] == 1
        unit = sum(1 << k for k, m in enumerate(msts) if nd == 1 and m[0] == 1)
        lay = (math.prod(shape), nd, maxd, body, fast, unit)
        if len(_layouts) > 8192:
            _layouts.clear()
        _layouts[key] = lay
    return lay


_ew_ready: set[int] = set()


def _ew(family: str, t: S.CType, out: CLBuffer, operands: list, op: int,
        scalars: tuple = (None, None, None), flags: int = 0, aux: tuple = (0, 0, 0),
        in_types: list | None = None) -> CLBuffer:
    """Launch elementwise kernel `family` of dtype `t` (op `op`) writing `out` through
    its strides; operands are CLBuffers (broadcast to out.shape by zero strides) or
    Python scalars (passed by value). This is every small op's hot path: it sets only
    the arguments a launch uses (OpenCL keeps a kernel's arguments between launches)."""
    n = out.size
    if n == 0:
        return out
    dev = out.dev
    shape = out.shape
    sts = [out.strides]
    offs = [out.offset]
    mems = []
    svals = scalars
    for k, x in enumerate(operands):
        if type(x) is CLBuffer:
            sts.append(x.strides if x.shape == shape else _bcast_strides(x, shape))
            offs.append(x.offset)
            mems.append(x.mem)
        else:
            sts.append((0,) * len(shape))
            offs.append(0)
            mems.append(out.mem)
            flags |= 1 << k
            if svals is scalars:
                svals = list(scalars)
            svals[k] = x
    _, nd, maxd, body, fast, unit = _layout(shape, tuple(sts))
    if fast:
        flags |= 256
        # scalars (flag bit k for operand k, bit k + 1 of `unit`) need no unit stride
        if (unit | (flags << 1)) & ((2 << len(operands)) - 1) == (2 << len(operands)) - 1:
            flags |= 512
    kernel = _family_kernel(dev, family, t, maxd)
    narr = len(mems) + 1
    types = None
    if id(kernel) not in _ew_ready:  # every argument must be set once before a launch
        types = _scalar_types(t, in_types, len(operands))
        for k in range(3):
            kernel._set_arg_buf(narr + 1 + k, scalar_bytes(types[k], 0))
        _ew_ready.add(id(kernel))
    kernel.set_arg(0, out.mem)
    for k, m in enumerate(mems):
        kernel.set_arg(k + 1, m)
    cs = dev.chunk(n)
    kernel._set_arg_buf(narr, _longs(8 + narr).pack(n, nd, op, flags, cs, *aux, *offs)
                        + body)
    for k, v in enumerate(svals):
        if v is not None:
            if types is None:
                types = _scalar_types(t, in_types, len(operands))
            kernel._set_arg_buf(narr + 1 + k, scalar_bytes(types[k], v))
    items = (n + cs - 1) // cs
    dev.enqueue(dev.queue, kernel, ((items + dev.ls - 1) // dev.ls * dev.ls,), dev.ls_tuple,
                None, None, False, False)
    return out


def _scalar_types(t: S.CType, in_types: list | None, n: int) -> list:
    types = in_types or [t] * n
    return types + [types[0]] * (3 - len(types))


# the kernels that update elements with atomics (64-bit ones need the device's extension)
_ATOMIC = frozenset({"put_add", "scatter_add", "scatter_prod", "scatter_amax", "scatter_amin"})


@functools.cache
def _dtype_source(t: S.CType, fp64: bool, atomics64: bool, maxd: int, ls: int,
                  cpu: bool) -> str:
    return S.dtype_program(t, fp64, atomics64, maxd, ls, cpu)


def dtype_kernel(dev: rt.Device, t: S.CType, maxd: int, name: str) -> Any:
    """Kernel `name` of dtype `t`'s program (one program per dtype and device holds
    every dtype-specific kernel: a device compiles a handful of programs, not hundreds)."""
    key = (t.name, maxd, name)
    k = dev.kernels.get(key)
    if k is None:
        if name in _ATOMIC and t.size == 8 and not dev.int64_atomics:
            raise RuntimeError(f"{name}: accumulating {t.name} values needs 64-bit atomics "
                               f"(cl_khr_int64_base_atomics), which {dev.label} lacks")
        k = dev.kernel(key, lambda: _dtype_source(t, dev.fp64, dev.int64_atomics, maxd,
                                                  dev.red_ls, dev.cpu_like), name)
    return k


@functools.cache
def _item_source(size: int, maxd: int) -> str:
    return S.item_program(size, maxd)


def item_kernel(dev: rt.Device, size: int, maxd: int, name: str) -> Any:
    """Kernel `name` (copy, take, put, gather, scatter) for `size`-byte elements."""
    key = (size, maxd, name)
    k = dev.kernels.get(key)
    if k is None:
        k = dev.kernel(key, lambda: _item_source(size, maxd), name)
    return k


@functools.cache
def _misc_source(fp64: bool, maxd: int, ls: int) -> str:
    return S.misc_program(fp64, maxd, ls)


def misc_kernel(dev: rt.Device, name: str, maxd: int = S.MAXD) -> Any:
    """Kernel `name` of the program of nonzero, random numbers and arange."""
    key = ("misc", maxd, name)
    k = dev.kernels.get(key)
    if k is None:
        k = dev.kernel(key, lambda: _misc_source(dev.fp64, maxd, dev.red_ls), name)
    return k


def _family_kernel(dev: rt.Device, family: str, t: S.CType, maxd: int) -> Any:
    if family == "copy":
        return item_kernel(dev, t.size, maxd, "copy")
    return dtype_kernel(dev, t, maxd, family)


def _copy_into(dst: CLBuffer, src: CLBuffer | Any) -> None:
    """dst[...] = src (broadcast), same dtype, through both views' strides."""
    if type(src) is CLBuffer:
        _ew("copy", _item_type(dst.dtype), dst, [src], 0)
    else:
        t = ctype(dst.dev, dst.dtype, "fill")
        _ew("unary", t, dst, [src], UNARY["copy"], in_types=[t])


_ITEM = {1: S.CType("uchar", "uchar", "uchar", "u", "B", 1, 0),
         2: S.CType("ushort", "ushort", "ushort", "u", "H", 2, 0),
         4: S.CType("uint", "uint", "uint", "u", "I", 4, 0),
         8: S.CType("ulong", "ulong", "ulong", "u", "Q", 8, 0)}


def _item_type(dtype: Any) -> S.CType:
    return _ITEM[dtype.itemsize]


def contiguous(x: CLBuffer) -> CLBuffer:
    """x itself when C-contiguous, else a contiguous copy."""
    if is_contiguous(x.shape, x.strides):
        return x
    return clone(x)


def clone(x: CLBuffer) -> CLBuffer:
    out = empty(x.dev, x.shape, x.dtype, "clone")
    _copy_into(out, x)
    return out


# -- elementwise kernels --------------------------------------------------------------------

UNARY = {op: i for i, op in enumerate(S.UNARY_OPS)}
PRED = {op: i for i, op in enumerate(S.PRED_OPS)}
BINARY = {op: i for i, op in enumerate(S.BINARY_OPS)}
COMPARE = {op: i for i, op in enumerate(S.COMPARE_OPS)}


def _unary_kernel(op: str):
    code = UNARY[op]

    def kernel(x: CLBuffer) -> CLBuffer:
        out = empty(x.dev, x.shape, x.dtype, op)
        return _ew("unary", ctype(x.dev, x.dtype, op), out, [x], code)
    kernel.__name__ = op
    return kernel


def _pred_kernel(op: str):
    code = PRED[op]

    def kernel(x: CLBuffer) -> CLBuffer:
        out = empty(x.dev, x.shape, BOOL, op)
        return _ew("pred", ctype(x.dev, x.dtype, op), out, [x], code)
    kernel.__name__ = op
    return kernel


def _broadcast_shape(a: tuple, b: tuple) -> tuple:
    if a == b:
        return a
    n = max(len(a), len(b))
    pa, pb = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    return tuple(x if y == 1 else y for x, y in zip(pa, pb))


def _shape_of(x: Any) -> tuple:
    return x.shape if type(x) is CLBuffer else ()


def _binary_kernel(op: str):
    family = "compare" if op in COMPARE else "binary"
    code = COMPARE[op] if op in COMPARE else BINARY[op]
    checked = op in ("pow", "remainder", "floor_divide", "fmod")

    def kernel(a: Any, b: Any) -> CLBuffer:
        ref = a if type(a) is CLBuffer else b
        dev = ref.dev
        t = ctype(dev, ref.dtype, op)
        shape = _broadcast_shape(_shape_of(a), _shape_of(b))
        if checked and t.kind in "ui":
            _check_integer_operand(op, b, math.prod(shape))
        out = empty(dev, shape, BOOL if family == "compare" else ref.dtype, op)
        return _ew(family, t, out, [a, b], code)
    kernel.__name__ = op
    return kernel


def _check_integer_operand(op: str, b: Any, count: int) -> None:
    """The CPU backend's errors for integer pow with a negative exponent and integer
    division by zero (a tensor operand costs a reduction and a read back), given the
    result's element `count`: PyTorch's division kernel checks only the divisors it reads,
    none for an empty result."""
    if op == "pow":  # (a tensor of negative exponents is fine: ipow gives PyTorch's values)
        if type(b) is not CLBuffer and b < 0:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
    elif count:
        bad = (b == 0) if type(b) is not CLBuffer else _any_true(
            _binary_kernel("eq")(b, 0))
        if bad:
            raise IntegerDivisionByZero(op)


def _any_true(mask: CLBuffer) -> bool:
    return bool(to_numpy(reduce_op("any", mask, None, False)))


def where(cond: CLBuffer, x: Any, y: Any) -> CLBuffer:
    if cond.dtype is not BOOL:  # core may hand over a condition cast to the compute dtype
        cond = _binary_kernel("ne")(cond, 0)
    ref = x if type(x) is CLBuffer else (y if type(y) is CLBuffer else None)
    dtype = ref.dtype if ref is not None else _scalar_dtype(x, y)
    dev = cond.dev
    t = ctype(dev, dtype, "where")
    shape = _broadcast_shape(_broadcast_shape(cond.shape, _shape_of(x)), _shape_of(y))
    out = empty(dev, shape, dtype, "where")
    return _ew("where", t, out, [cond, x, y], 0, in_types=[S.TYPES["bool"], t, t])


def _scalar_dtype(*values: Any) -> Any:
    if any(isinstance(v, float) for v in values):
        return DTYPES["float32"]
    if all(isinstance(v, bool) for v in values):
        return BOOL
    return INT64


def clamp(x: CLBuffer, min: Any = None, max: Any = None) -> CLBuffer:  # noqa: A002
    out = empty(x.dev, x.shape, x.dtype, "clamp")
    t = ctype(x.dev, x.dtype, "clamp")
    flags = (2 if min is not None else 0) | (4 if max is not None else 0)
    return _ew("unary", t, out, [x], UNARY["clamp"], scalars=(None, min, max), flags=flags)


def cast(x: CLBuffer, dtype: Any) -> CLBuffer:
    dev = x.dev
    dst = ctype(dev, dtype, "cast")
    out = empty(dev, x.shape, dtype, "cast")
    return _ew("cast", ctype(dev, x.dtype, "cast"), out, [x], dst.code)


def tril(x: CLBuffer, diagonal: int = 0) -> CLBuffer:
    return _triangle("tril", x, diagonal)


def triu(x: CLBuffer, diagonal: int = 0) -> CLBuffer:
    return _triangle("triu", x, diagonal)


def _triangle(op: str, x: CLBuffer, diagonal: int) -> CLBuffer:
    if x.ndim < 2:
        raise RuntimeError(f"{op}: input tensor must have at least 2 dimensions")
    out = empty(x.dev, x.shape, x.dtype, op)
    rows, cols = x.shape[-2], x.shape[-1]
    if cols == 0 or rows == 0:
        return out
    return _ew("unary", ctype(x.dev, x.dtype, op), out, [x], UNARY[op],
               aux=(int(diagonal), cols, rows))


# -- reductions ---------------------------------------------------------------------------

REDUCE = {op: i for i, op in enumerate(S.REDUCE_OPS)}


def _reduce_kernel(dev: rt.Device, t: S.CType, maxd: int) -> Any:
    return dtype_kernel(dev, t, maxd, "reduce")


_reduce_plans: dict[Any, Any] = {}
# The most elements one work-item adds up in sequence. A float32 running sum stalls at
# 2^24 when adding ones and loses precision long before, so long reductions split into
# more chunks (partials a second launch combines): a 2^31-element sum on a 2-core PoCL
# device, 16 work-items a group, once ran 2^24 adds per work-item and came out wrong.
_REDUCE_RUN = 4096
_OUT_DTYPE = {"all": BOOL, "any": BOOL, "argmax": INT64, "argmin": INT64}


def reduce_op(op: str, x: CLBuffer, dims: Any, keepdim: bool,
              out_dtype: Any = None) -> CLBuffer:
    """Reduce `x` over `dims` (None: all) with a work-group tree reduction; when few
    outputs each reduce many elements, a first launch reduces G chunks per output into
    partials that a second launch combines. The launch plan is cached per layout."""
    dev = x.dev
    key = (op, x.shape, x.strides, dims, keepdim, x.dtype, out_dtype, dev.index)
    plan = _reduce_plans.get(key)
    if plan is None:
        plan = _reduce_plan(op, x, dims, keepdim, out_dtype)
        if len(_reduce_plans) > 4096:
            _reduce_plans.clear()
        _reduce_plans[key] = plan
    shape, out_dtype, M, K, G, maxd, tail, code, out_code, acc = plan
    out = empty(dev, shape, out_dtype, op)
    if M == 0:
        return out
    if G == 1 and dev.cpu_like and M >= 64 and K <= _REDUCE_RUN:
        k = dtype_kernel(dev, ctype(dev, x.dtype, op), maxd, "reduce_rows")
        _launch_reduce(dev, k, out.mem, out.mem, x.mem, x.mem,
                       (M, K, 1, K, code, out_code, 0, x.offset), tail, M, rows=True)
        return out
    kernel = _reduce_kernel(dev, ctype(dev, x.dtype, op), maxd)
    if G == 1:
        _launch_reduce(dev, kernel, out.mem, out.mem, x.mem, x.mem,
                       (M, K, 1, K, code, out_code, 0, x.offset), tail, M)
        return out
    part = empty(dev, (M * G,), acc, op)
    part_idx = empty(dev, (M * G,), INT64, op)
    _launch_reduce(dev, kernel, part.mem, part_idx.mem, x.mem, x.mem,
                   (M, K, G, -(-K // G), code, -1, 0, x.offset), tail, M * G)
    k2 = _reduce_kernel(dev, S.TYPES[acc.name], S.MAXD)
    tail2 = _reduce_tail([M], [G], [G], [1], S.MAXD)
    _launch_reduce(dev, k2, out.mem, out.mem, part.mem, part_idx.mem,
                   (M, G, 1, G, code, out_code, 1, 0), tail2, M)
    return out


def _reduce_plan(op: str, x: CLBuffer, dims: Any, keepdim: bool, out_dtype: Any) -> tuple:
    dev = x.dev
    t = ctype(dev, x.dtype, op)
    nd = x.ndim
    if dims is None:
        dims = tuple(range(nd))
    elif isinstance(dims, int):
        dims = (dims,)
    dims = tuple(sorted(d % nd for d in dims)) if nd else ()
    if keepdim:
        shape = tuple(1 if d in dims else s for d, s in enumerate(x.shape))
    else:
        shape = tuple(s for d, s in enumerate(x.shape) if d not in dims)
    if out_dtype is None:
        out_dtype = _OUT_DTYPE.get(op, x.dtype)
    kept = [d for d in range(nd) if d not in dims]
    M = math.prod(x.shape[d] for d in kept)
    K = math.prod(x.shape[d] for d in dims)
    ksh, (kst,) = _merge(tuple(x.shape[d] for d in kept), [tuple(x.strides[d] for d in kept)])
    rsh, (rst,) = _merge(tuple(x.shape[d] for d in dims), [tuple(x.strides[d] for d in dims)])
    if not kept:
        ksh, kst = [], []
    maxd = _maxd(max(len(ksh), len(rsh)))
    ls = dev.red_ls
    target = dev.compute_units * (4 if dev.cpu_like else 8)
    G = 1
    if 0 < M < target and K > 4 * ls:
        G = max(1, min(-(-target // M), -(-K // (4 * ls)), 1024))
    if M:  # no work-item adds more than _REDUCE_RUN elements in a row (see there)
        G = max(G, -(-K // (ls * _REDUCE_RUN)))
    acc = DTYPES[S.ACC_DTYPE[S.ACC_OF[t.name]]]
    return (shape, out_dtype, M, K, G, maxd, _reduce_tail(ksh, kst, rsh, rst, maxd),
            REDUCE[op], S.TYPES[out_dtype.name].code, acc)


def _reduce_tail(ksh, kst, rsh, rst, maxd) -> bytes:
    return _longs(2 + 4 * maxd).pack(len(ksh), len(rsh), *_pad(ksh, maxd, 1),
                                     *_pad(kst, maxd), *_pad(rsh, maxd, 1), *_pad(rst, maxd))


def _launch_reduce(dev, kernel, out_mem, out_idx_mem, in_mem, in_idx_mem, head, tail,
                   groups, rows: bool = False) -> None:
    kernel.set_arg(0, out_mem)
    kernel.set_arg(1, out_idx_mem)
    kernel.set_arg(2, in_mem)
    kernel.set_arg(3, in_idx_mem)
    kernel._set_arg_buf(4, _longs(8).pack(*head) + tail)
    if rows:  # reduce_rows: a work-item per output
        dev.launch(kernel, (groups,), None)
    else:
        dev.launch(kernel, (groups * dev.red_ls,), (dev.red_ls,))


def _reduction(op: str):
    def kernel(x: CLBuffer, dims: Any = None, keepdim: bool = False) -> CLBuffer:
        return reduce_op(op, x, dims, keepdim)
    kernel.__name__ = op
    return kernel


def _arg_reduction(op: str):
    def kernel(x: CLBuffer, dim: int | None = None, keepdim: bool = False) -> CLBuffer:
        if dim is None:
            out = reduce_op(op, x, None, False)
            if keepdim:
                out = out.view((1,) * x.ndim, (0,) * x.ndim, 0)
            return out
        return reduce_op(op, x, (dim,), keepdim)
    kernel.__name__ = op
    return kernel


def _launch_along_dim(dev: Any, t: Any, name: str, out: CLBuffer, x: CLBuffer, dim: int,
                      *extra: int) -> None:
    """Run kernel `name` (cumsum, softmax, topk) with one work-group per row of x along `dim`.
    Its params: rows, row length, the elements after `dim`, the number of other dims, x's
    offset, x's stride along `dim`, `extra`, then the other dims' shapes and strides."""
    others = [d for d in range(x.ndim) if d != dim]
    length = x.shape[dim]
    rows = x.size // length
    maxd = _maxd(len(others))
    kernel = dtype_kernel(dev, t, maxd, name)
    kernel.set_arg(0, out.mem)
    kernel.set_arg(1, x.mem)
    kernel._set_arg_buf(2, _longs(6 + len(extra) + 2 * maxd).pack(
        rows, length, math.prod(x.shape[dim + 1:]), len(others), x.offset, x.strides[dim],
        *extra, *_pad([x.shape[d] for d in others], maxd, 1),
        *_pad([x.strides[d] for d in others], maxd)))
    ls = dev.red_ls
    dev.launch(kernel, (rows * ls,), (ls,))


def cumsum(x: CLBuffer, dim: int) -> CLBuffer:
    dev = x.dev
    t = ctype(dev, x.dtype, "cumsum")
    out = empty(dev, x.shape, x.dtype, "cumsum")
    if out.size == 0:
        return out
    nd = x.ndim
    if nd == 0:
        _copy_into(out, x)
        return out
    _launch_along_dim(dev, t, "cumsum", out, x, dim % nd)
    return out


# the device's topk ranks each element by counting (about row length * k comparisons a
# row); past this much work a whole order (sort, quantile, unique of a long row) is far
# quicker as a stable sort on the host, two copies and O(n log n)
_HOST_ORDER_WORK = 1 << 22


@functools.cache
def _host_topk() -> Any:
    import numpy as np

    from ember.backends.xp import reductions
    from ember.backends.xp.lib import ArrayLib, Hooks
    return reductions.kernels(ArrayLib(np, Hooks()))["topk"]


def topk(x: CLBuffer, k: int, dim: int, largest: bool = True) -> CLBuffer:
    """int64 indices of the k largest (smallest) elements along `dim`, in order."""
    dev = x.dev
    t = ctype(dev, x.dtype, "topk")
    if x.ndim and x.shape[dim] * k > _HOST_ORDER_WORK:
        return from_numpy(_host_topk()(to_numpy(x), k, dim, largest), dev)
    out = empty(dev, x.shape[:dim] + (k,) + x.shape[dim + 1:], INT64, "topk")
    if out.size:
        _launch_along_dim(dev, t, "topk", out, x, dim, k, 1 if largest else 0)
    return out


# -- views ----------------------------------------------------------------------------------

def reshape(x: CLBuffer, shape: tuple, copy: bool = True) -> CLBuffer:
    shape = tuple(shape)
    if copy:
        src = contiguous(x)
        if src is x:
            src = clone(x)
        return src.view(shape, contiguous_strides(shape), 0)
    strides = reshape_strides(x.shape, x.strides, shape)
    if strides is None:
        raise ViewNotPossible("reshape: a view is not possible for these strides")
    return x.view(shape, strides, x.offset)


def permute(x: CLBuffer, dims: tuple) -> CLBuffer:
    return x.view(tuple(x.shape[d] for d in dims), tuple(x.strides[d] for d in dims),
                  x.offset)


def expand(x: CLBuffer, shape: tuple) -> CLBuffer:
    lead = len(shape) - x.ndim
    new_shape, new_strides = [], []
    for d, n in enumerate(shape):
        if d < lead:
            new_shape.append(n)
            new_strides.append(0)
            continue
        s, st = x.shape[d - lead], x.strides[d - lead]
        if n == -1 or n == s:
            new_shape.append(s)
            new_strides.append(st)
        else:  # s == 1: broadcast
            new_shape.append(n)
            new_strides.append(0)
    return x.view(tuple(new_shape), tuple(new_strides), x.offset)


def strided_view(x: CLBuffer, shape: tuple, steps: tuple, start: tuple) -> CLBuffer:
    strides = tuple(sum(a * st for a, st in zip(row, x.strides)) for row in steps)
    offset = x.offset + sum(b * st for b, st in zip(start, x.strides))
    return x.view(tuple(shape), strides, offset if math.prod(shape) else x.offset)


def view_dtype(x: CLBuffer, dtype: Any) -> CLBuffer:
    """The same device memory read as `dtype`: shape, strides and offset rescaled by the
    ratio of the element sizes (core has checked they divide, PyTorch's rules)."""
    ctype(x.dev, dtype, "view_dtype")  # float64 on a device without it: a clear error
    old, new = x.dtype.itemsize, dtype.itemsize
    shape, strides, offset = x.shape, x.strides, x.offset
    if new < old:
        r = old // new
        shape = shape[:-1] + (shape[-1] * r,)
        strides = tuple(st * r for st in strides[:-1]) + (1,)
        offset *= r
    elif new > old:
        r = new // old
        shape = shape[:-1] + (shape[-1] // r,)
        strides = tuple(st // r for st in strides[:-1]) + (1,)
        offset //= r
    return CLBuffer(x.mem, shape, strides, offset, dtype, x.dev)


def _index_layout(x: CLBuffer, index: tuple, tensors: tuple = ()):
    """Walk an index spec over x: the shape, strides and offset its basic entries give
    (ints select and drop their dimension first, PyTorch's rule), the result positions of
    the tensor entries, and those index tensors."""
    shape, strides, adv_pos, idx = [], [], [], []
    offset = x.offset
    d = 0
    for entry in index:
        kind = entry[0]
        if kind == "int":
            offset += entry[1] * x.strides[d]
            d += 1
        elif kind == "slice":
            start, stop, step = entry[1], entry[2], entry[3]
            n = len(range(start, stop, step))
            if n:
                offset += start * x.strides[d]
            shape.append(n)
            strides.append(x.strides[d] * step)
            d += 1
        elif kind == "none":
            shape.append(1)
            strides.append(0)
        else:
            adv_pos.append(len(shape))
            idx.append(tensors[entry[1]])
            shape.append(x.shape[d])
            strides.append(x.strides[d])
            d += 1
    shape.extend(x.shape[d:])
    strides.extend(x.strides[d:])
    return shape, strides, offset, adv_pos, idx


def _basic_view(x: CLBuffer, index: tuple) -> CLBuffer:
    shape, strides, offset, adv_pos, _ = _index_layout(x, index)
    if adv_pos:
        raise RuntimeError("getitem: a tensor index in a basic view")
    return x.view(tuple(shape), tuple(strides), offset)


def _check_writable(x: CLBuffer) -> None:
    if any(st == 0 and s > 1 for s, st in zip(x.shape, x.strides)):
        raise RuntimeError(OVERLAP)


# -- indexing -------------------------------------------------------------------------------

def _advanced(x: CLBuffer, index: tuple, tensors: tuple):
    """The layout of x[index] with tensor indices: the view of x with the basic entries
    applied, the result shape, the block of result dims the broadcast index tensors fill
    (where the first stood if they are adjacent, else in front), and per result dim the
    stride in x (0 inside the block)."""
    shape, strides, offset, adv_pos, idx = _index_layout(x, index, tensors)
    adv_shape: tuple = ()
    for t in idx:
        adv_shape = _broadcast_shape(adv_shape, t.shape)
    adjacent = adv_pos == list(range(adv_pos[0], adv_pos[-1] + 1))
    rest = [q for q in range(len(shape)) if q not in adv_pos]
    before = [q for q in rest if q < adv_pos[0]] if adjacent else []
    after = [q for q in rest if q not in before]
    rshape = tuple([shape[q] for q in before] + list(adv_shape) + [shape[q] for q in after])
    xst = [strides[q] for q in before] + [0] * len(adv_shape) + [strides[q] for q in after]
    adv0 = len(before)
    adv1 = adv0 + len(adv_shape)
    ast = [strides[q] for q in adv_pos]
    asz = [shape[q] for q in adv_pos]
    return offset, rshape, xst, adv0, adv1, idx, adv_shape, ast, asz


def _index_matrix(dev: rt.Device, idx: list, adv_shape: tuple):
    """The index tensors broadcast to adv_shape, as one contiguous (k, P) int64 buffer
    (or the one index tensor itself when it is already contiguous): (buffer, offset)."""
    if len(idx) == 1 and idx[0].shape == adv_shape and idx[0].is_contiguous():
        return idx[0], idx[0].offset
    P = math.prod(adv_shape)
    out = empty(dev, (len(idx), P), INT64, "index")
    for j, t in enumerate(idx):
        row = out.view(adv_shape, contiguous_strides(adv_shape), j * P)
        _copy_into(row, expand(t, adv_shape) if t.shape != adv_shape else t)
    return out, 0


def _take_body(n, rshape, xoff, voff, ioff, xst, vst, adv0, adv1, k, P, ast, asz):
    maxd = _maxd(max(len(rshape), k))
    return maxd, _longs(9 + 5 * maxd).pack(
        n, len(rshape), adv0, adv1, k, P, xoff, voff, ioff, *_pad(rshape, maxd, 1),
        *_pad(xst, maxd), *_pad(vst, maxd), *_pad(ast, maxd), *_pad(asz, maxd, 1))


def _index_kernel(dev: rt.Device, name: str, dtype: Any, maxd: int) -> Any:
    if name in _ATOMIC:
        return dtype_kernel(dev, ctype(dev, dtype, name), maxd, name)
    return item_kernel(dev, dtype.itemsize, maxd, name)


def getitem(x: CLBuffer, *tensors: CLBuffer, index: tuple, shape: Any = None) -> CLBuffer:
    if not tensors:
        return _basic_view(x, index)
    dev = x.dev
    xoff, rshape, xst, adv0, adv1, idx, adv_shape, ast, asz = _advanced(x, index, tensors)
    out = empty(dev, rshape, x.dtype, "getitem")
    n = out.size
    if n:
        imat, ioff = _index_matrix(dev, idx, adv_shape)
        maxd, body = _take_body(n, rshape, xoff, 0, ioff, xst, [0] * len(rshape), adv0,
                                adv1, len(idx), math.prod(adv_shape), ast, asz)
        kernel = _index_kernel(dev, "take", x.dtype, maxd)
        kernel.set_arg(0, out.mem)
        kernel.set_arg(1, x.mem)
        kernel.set_arg(2, imat.mem)
        kernel._set_arg_buf(3, body)
        kernel.set_arg(4, dev.errflag)
        dev.launch(kernel, (_groups(n, dev.ls),), (dev.ls,))
    if shape is not None and tuple(shape) != rshape:
        out = out.view(tuple(shape), contiguous_strides(tuple(shape)), 0)
    return out


def setitem(x: CLBuffer, value: Any, *tensors: CLBuffer, index: tuple,
            accumulate: bool = False) -> None:
    if type(value) is CLBuffer and value.mem is x.mem:
        value = clone(value)  # the source overlaps the destination: read a copy
    if not tensors:
        view = _basic_view(x, index)
        _check_writable(view)
        if accumulate:
            _ew("binary", ctype(x.dev, x.dtype, "setitem"), view, [view, value],
                BINARY["add"])
        else:
            _copy_into(view, value)
        return
    _check_writable(x)
    dev = x.dev
    xoff, rshape, xst, adv0, adv1, idx, adv_shape, ast, asz = _advanced(x, index, tensors)
    n = math.prod(rshape)
    if n == 0:
        return
    if type(value) is not CLBuffer:
        value = full((), value, x.dtype, x.dev.index)
    vst = _bcast_strides(value, rshape)
    imat, ioff = _index_matrix(dev, idx, adv_shape)
    maxd, body = _take_body(n, rshape, xoff, value.offset, ioff, xst, vst, adv0, adv1,
                            len(idx), math.prod(adv_shape), ast, asz)
    kernel = _index_kernel(dev, "put_add" if accumulate else "put", x.dtype, maxd)
    kernel.set_arg(0, x.mem)
    kernel.set_arg(1, value.mem)
    kernel.set_arg(2, imat.mem)
    kernel._set_arg_buf(3, body)
    kernel.set_arg(4, dev.errflag)
    dev.launch(kernel, (_groups(n, dev.ls),), (dev.ls,))


def assign(dst: CLBuffer, src: Any) -> None:
    _check_writable(dst)
    if type(src) is CLBuffer and src.mem is dst.mem:
        src = clone(src)
    _copy_into(dst, src)


def cat(*xs: CLBuffer, dim: int) -> CLBuffer:
    ref = xs[0]
    nd = ref.ndim
    dim %= nd
    shape = list(ref.shape)
    shape[dim] = sum(x.shape[dim] for x in xs)
    out = empty(ref.dev, tuple(shape), ref.dtype, "cat")
    pos = 0
    for x in xs:
        n = x.shape[dim]
        if n and x.size:
            view = out.view(x.shape, out.strides, pos * out.strides[dim])
            _copy_into(view, x)
        pos += n
    return out


def flip(x: CLBuffer, dims: tuple) -> CLBuffer:
    strides = list(x.strides)
    offset = x.offset
    for d in dims:
        d %= x.ndim
        if x.shape[d] > 1:
            offset += (x.shape[d] - 1) * strides[d]
            strides[d] = -strides[d]
    return clone(x.view(x.shape, tuple(strides), offset))


def _gather_body(n, shape, dim, xoff, ioff, soff, dimsize, xst, ist, sst):
    maxd = _maxd(len(shape))
    return maxd, _longs(8 + 4 * maxd).pack(
        n, len(shape), dim, xoff, ioff, soff, dimsize, 0, *_pad(shape, maxd, 1),
        *_pad(xst, maxd), *_pad(ist, maxd), *_pad(sst, maxd))


def _nd1(x: CLBuffer) -> CLBuffer:
    return x if x.ndim else x.view((1,), (0,), x.offset)


def gather(x: CLBuffer, index: CLBuffer, dim: int) -> CLBuffer:
    dev = x.dev
    out = empty(dev, index.shape, x.dtype, "gather")
    n = out.size
    if n == 0:
        return out
    x1, i1 = _nd1(x), _nd1(index)
    dim = dim % x1.ndim
    maxd, body = _gather_body(n, i1.shape, dim, x1.offset, i1.offset, 0, x1.shape[dim],
                              x1.strides, i1.strides, [0] * i1.ndim)
    kernel = _index_kernel(dev, "gather", x.dtype, maxd)
    kernel.set_arg(0, out.mem)
    kernel.set_arg(1, x.mem)
    kernel.set_arg(2, index.mem)
    kernel._set_arg_buf(3, body)
    kernel.set_arg(4, dev.errflag)
    dev.launch(kernel, (_groups(n, dev.ls),), (dev.ls,))
    return out


def _scatter(name: str, x: CLBuffer, index: CLBuffer, src: CLBuffer, dim: int) -> CLBuffer:
    dev = x.dev
    out = clone(x)
    n = index.size
    if n == 0:
        return out
    o1, i1, s1 = _nd1(out), _nd1(index), _nd1(src)
    dim = dim % o1.ndim
    maxd, body = _gather_body(n, i1.shape, dim, 0, i1.offset, s1.offset, o1.shape[dim],
                              o1.strides, i1.strides, s1.strides)
    kernel = _index_kernel(dev, name, x.dtype, maxd)
    kernel.set_arg(0, out.mem)
    kernel.set_arg(1, src.mem)
    kernel.set_arg(2, index.mem)
    kernel._set_arg_buf(3, body)
    kernel.set_arg(4, dev.errflag)
    dev.launch(kernel, (_groups(n, dev.ls),), (dev.ls,))
    return out


def scatter(x: CLBuffer, index: CLBuffer, src: CLBuffer, dim: int) -> CLBuffer:
    return _scatter("scatter", x, index, src, dim)


def scatter_add(x: CLBuffer, index: CLBuffer, src: CLBuffer, dim: int) -> CLBuffer:
    return _scatter("scatter_add", x, index, src, dim)


def scatter_reduce(x: CLBuffer, index: CLBuffer, src: CLBuffer, dim: int,
                   reduce: str) -> CLBuffer:
    """x with each src value multiplied into ("prod") or compared with ("amax", "amin")
    the element its index names, by atomic compare-and-swap updates."""
    return _scatter(f"scatter_{reduce}", x, index, src, dim)


def index_select(x: CLBuffer, index: CLBuffer, dim: int) -> CLBuffer:
    dim %= max(x.ndim, 1)
    P = index.size
    if x.ndim == 0:
        raise IndexError("index_select(): the input must have at least one dimension")
    idx = contiguous(index)
    flat = idx.view((P,), (1,), idx.offset)
    entries = tuple(("slice", 0, s, 1) for s in x.shape[:dim]) + (("tensor", 0),)
    return getitem(x, flat, index=entries)


def nonzero(x: CLBuffer) -> CLBuffer:
    dev = x.dev
    if x.dtype is not BOOL:
        x = _binary_kernel("ne")(x, 0)
    nd = x.ndim
    n = x.size
    if nd == 0:
        count = 1 if n and bool(to_numpy(x)) else 0
        return empty(dev, (count, 0), INT64, "nonzero")
    if n == 0:
        return empty(dev, (0, nd), INT64, "nonzero")
    ls = dev.red_ls
    groups = max(1, min(-(-n // ls), dev.compute_units * (4 if dev.cpu_like else 16)))
    chunk = -(-n // groups)
    maxd = _maxd(nd)
    k_count = misc_kernel(dev, "nz_count", maxd)
    k_write = misc_kernel(dev, "nz_write", maxd)
    body = _longs(4 + 2 * maxd).pack(n, nd, x.offset, chunk, *_pad(x.shape, maxd, 1),
                                     *_pad(x.strides, maxd))
    counts = empty(dev, (groups,), INT64, "nonzero")
    k_count.set_arg(0, counts.mem)
    k_count.set_arg(1, x.mem)
    k_count._set_arg_buf(2, body)
    dev.launch(k_count, (groups * ls,), (ls,))
    import numpy as np

    host = to_numpy(counts)
    starts = np.zeros(groups, dtype=np.int64)
    np.cumsum(host[:-1], out=starts[1:])
    total = int(host.sum())
    out = empty(dev, (total, nd), INT64, "nonzero")
    if total:
        st = from_numpy(starts, dev)
        k_write.set_arg(0, out.mem)
        k_write.set_arg(1, x.mem)
        k_write.set_arg(2, st.mem)
        k_write._set_arg_buf(3, body)
        dev.launch(k_write, (groups * ls,), (ls,))
    return out


# -- matmul ---------------------------------------------------------------------------------

_matmul_plans: dict[Any, Any] = {}


def matmul(a: CLBuffer, b: CLBuffer, bias: CLBuffer | None = None,
           bias_rows: bool = False) -> CLBuffer:
    """NumPy's matmul (1-D operands, broadcast batch dims), with an optional bias added in
    the epilogue: bias[j] to column j (linear's), or with `bias_rows` bias[i] to row i
    (a convolution's, whose rows are output channels). Inputs are read through their
    strides."""
    dev = a.dev
    key = (a.shape, a.strides, b.shape, b.strides, a.dtype, dev.index,
           None if bias is None else bias.strides, bias_rows)
    plan = _matmul_plans.get(key)
    if plan is None:
        plan = _matmul_plan(a, b, bias, bias_rows)
        if len(_matmul_plans) > 4096:
            _matmul_plans.clear()
        _matmul_plans[key] = plan
    full_shape, shape, M, N, nb, maxd, (head, mid, rest), once = plan
    out = empty(dev, full_shape, a.dtype, "matmul")
    if out.size:
        t = ctype(dev, a.dtype, "matmul")
        meta = (head + _longs(2).pack(a.offset, b.offset) + mid
                + _longs(1).pack(bias.offset if bias is not None else 0) + rest)
        bias_mem = (bias if bias is not None else out).mem
        mode = dev.matmul
        if mode == "packed" and M * N * a.shape[-1] * nb <= 32768:
            mode = "rows"  # small: one launch beats three (packing pays off on big ones)
        if mode == "packed":
            _matmul_packed(dev, t, maxd, out, a, b, bias_mem, meta, M, N, nb, once)
        else:
            kernel = dtype_kernel(dev, t, maxd, "matmul" if mode == "tiled" else "matmul_rows")
            kernel.set_arg(0, out.mem)
            kernel.set_arg(1, a.mem)
            kernel.set_arg(2, b.mem)
            kernel.set_arg(3, bias_mem)
            kernel._set_arg_buf(4, meta)
            if mode == "tiled":
                dev.launch(kernel, (-(-N // 64) * 16, -(-M // 64) * 16, nb), (16, 16, 1))
            else:
                dev.launch(kernel, (-(-N // 4), M, nb), None)
    if shape != full_shape:
        out = out.view(shape, contiguous_strides(shape), 0)
    return out


def _matmul_plan(a: CLBuffer, b: CLBuffer, bias: CLBuffer | None, bias_rows: bool) -> tuple:
    a1, b1 = a.ndim == 1, b.ndim == 1
    A = a.view((1,) + a.shape, (0,) + a.strides, 0) if a1 else a.view(a.shape, a.strides, 0)
    B = b.view(b.shape + (1,), b.strides + (0,), 0) if b1 else b.view(b.shape, b.strides, 0)
    M, K = A.shape[-2], A.shape[-1]
    N = B.shape[-1]
    batch = _broadcast_shape(A.shape[:-2], B.shape[:-2])
    ab = _bcast_strides(A.view(A.shape[:-2], A.strides[:-2], 0), batch)
    bb = _bcast_strides(B.view(B.shape[:-2], B.strides[:-2], 0), batch)
    bsh, (ast, bst) = _merge(batch, [ab, bb]) if batch else ([1], [[0], [0]])
    maxd = _maxd(len(bsh))
    # MP: M, N, K, nb, aoff, boff, ars, acs, brs, bcs, hasbias, biasoff, biasst, arrays
    head = _longs(4).pack(M, N, K, len(bsh))
    mid = _longs(5).pack(A.strides[-2], A.strides[-1], B.strides[-2], B.strides[-1],
                         0 if bias is None else 2 if bias_rows else 1)
    rest = _longs(1 + 3 * maxd).pack(
        bias.strides[-1] if bias is not None and bias.ndim else 0,
        *_pad(bsh, maxd, 1), *_pad(ast, maxd), *_pad(bst, maxd))
    shape = batch + (() if a1 else (M,)) + (() if b1 else (N,))
    full_shape = batch + (M, N)
    # the struct is head, (aoff, boff), mid, biasoff, rest: the offsets vary per call;
    # `once`: whether A, B are the same matrix for every batch entry (packed once)
    once = (not any(ast), not any(bst))
    return (full_shape, shape, M, N, math.prod(batch), maxd, (head, mid, rest), once)


def _matmul_packed(dev: rt.Device, t: S.CType, maxd: int, out: CLBuffer, a: CLBuffer,
                   b: CLBuffer, bias_mem: Any, meta: bytes, M: int, N: int, nb: int,
                   once: tuple[bool, bool]) -> None:
    """The CPU matmul (sources.matmul_packed_source): pack A's row panels and B's column
    panels into scratch buffers, then one register tile of C per work-item."""
    mr, nr, _ = S.matmul_tile(t)
    K = a.shape[-1]
    mt, nt = -(-M // mr), -(-N // nr)
    nba, nbb = (1 if once[0] else nb), (1 if once[1] else nb)
    acc = 8 if S.matmul_acc(t) in ("double", "ulong") else 4
    # scratch from the pool: released when this returns, but the in-order queue runs
    # anything that reuses the memory after these kernels
    ap = dev.alloc(nba * mt * mr * K * acc)
    bp = dev.alloc(nbb * nt * nr * K * acc)
    q = _longs(4).pack(mt, nt, 0 if once[0] else mt, 0 if once[1] else nt)
    for name, dst, src, grid in (("mm_pack_a", ap, a.mem, (mt, nba)),
                                 ("mm_pack_b", bp, b.mem, (nt, nbb))):
        k = dtype_kernel(dev, t, maxd, name)
        k.set_arg(0, dst)
        k.set_arg(1, src)
        k._set_arg_buf(2, meta)
        k._set_arg_buf(3, q)
        dev.launch(k, grid, None)
    k = dtype_kernel(dev, t, maxd, "mm_micro")
    k.set_arg(0, out.mem)
    k.set_arg(1, ap)
    k.set_arg(2, bp)
    k.set_arg(3, bias_mem)
    k._set_arg_buf(4, meta)
    k._set_arg_buf(5, q)
    dev.launch(k, (nt, mt, nb), None)


def linear(x: CLBuffer, weight: CLBuffer, bias: CLBuffer | None = None) -> CLBuffer:
    """x @ weight.T + bias in one launch (the bias is added in matmul's epilogue)."""
    wt = weight.view((weight.shape[1], weight.shape[0]), (weight.strides[1],
                                                          weight.strides[0]), weight.offset)
    if x.ndim == 1 and bias is not None:
        out = matmul(x.view((1,) + x.shape, (0,) + x.strides, x.offset), wt, bias)
        return out.view(out.shape[1:], out.strides[1:], 0)
    return matmul(x, wt, bias)


# -- creation -------------------------------------------------------------------------------

def full(shape: tuple, fill_value: Any, dtype: Any, device: int = 0) -> CLBuffer:
    dev = rt.device(device)
    out = empty(dev, tuple(shape), dtype, "full")
    _copy_into(out, fill_value)
    return out


def arange(start: Any, end: Any, step: Any, dtype: Any, device: int = 0) -> CLBuffer:
    dev = rt.device(device)
    ctype(dev, dtype, "arange")
    n = max(0, math.ceil((end - start) / step))
    out = empty(dev, (n,), dtype, "arange")
    if n == 0:
        return out
    integral = all(isinstance(v, int) for v in (start, step)) or dtype.is_floating_point \
        is False and all(float(v).is_integer() for v in (start, step))
    kernel = misc_kernel(dev, "arange_l" if integral else "arange_f")
    kernel.set_arg(0, out.mem)
    head = struct.pack("2q", n, S.TYPES[dtype.name].code)
    if integral:
        vals = struct.pack("2q", int(start), int(step))
    elif dev.fp64:
        vals = struct.pack("2d", float(start), float(step))
    else:
        vals = struct.pack("2f", float(start), float(step))
    kernel._set_arg_buf(1, head + vals)
    dev.launch(kernel, (_groups(n, dev.ls),), (dev.ls,))
    return out


# -- random numbers -------------------------------------------------------------------------

_seed = [0]


def manual_seed(seed: int) -> None:
    _seed[0] = int(seed) & 0xFFFFFFFFFFFFFFFF
    for dev in rt.known_devices():
        dev.rng_offset = 0


def _rng(dev: rt.Device, out: CLBuffer, mode: int, lo: int = 0, rng: int = 1) -> CLBuffer:
    n = out.size
    if n == 0:
        return out
    per = S.RNG_PER_CTR[mode]
    blocks = -(-n // per)
    kernel = misc_kernel(dev, "rng")
    kernel.set_arg(0, out.mem)
    kernel._set_arg_buf(1, struct.pack("2Q4qQ", _seed[0], dev.rng_offset, n, mode,
                                       S.TYPES[out.dtype.name].code, lo, rng))
    dev.rng_offset += blocks
    dev.launch(kernel, (_groups(blocks, dev.ls),), (dev.ls,))
    return out


def rand(shape: tuple, dtype: Any, device: int = 0) -> CLBuffer:
    dev = rt.device(device)
    out = empty(dev, tuple(shape), dtype, "rand")
    mode = {"float16": 1, "bfloat16": 2, "float64": 3}.get(dtype.name, 0)
    return _rng(dev, out, mode)


def randn(shape: tuple, dtype: Any, device: int = 0) -> CLBuffer:
    dev = rt.device(device)
    out = empty(dev, tuple(shape), dtype, "randn")
    return _rng(dev, out, 5 if dtype.name == "float64" else 4)


def randint(shape: tuple, dtype: Any, low: int, high: int, device: int = 0) -> CLBuffer:
    dev = rt.device(device)
    out = empty(dev, tuple(shape), dtype, "randint")
    return _rng(dev, out, 6, int(low), (int(high) - int(low)) & 0xFFFFFFFFFFFFFFFF)


def randperm(n: int, dtype: Any, device: int = 0) -> CLBuffer:
    """A uniform random permutation: sort n random 64-bit keys (ties broken by index)
    with a bitonic sorting network on the device; the positions are the permutation."""
    dev = rt.device(device)
    n = int(n)
    if n <= 1:
        return arange(0, n, 1, dtype, device)
    N = 1 << (n - 1).bit_length()
    keys = empty(dev, (N,), DTYPES["int64"], "randperm")
    idx = empty(dev, (N,), INT64, "randperm")
    k_keys = misc_kernel(dev, "perm_keys")
    k_sort = misc_kernel(dev, "bitonic")
    k_keys.set_arg(0, keys.mem)
    k_keys.set_arg(1, idx.mem)
    k_keys._set_arg_buf(2, struct.pack("2Q4qQ", _seed[0], dev.rng_offset, n, 0, 0, 0, 1))
    dev.rng_offset += N
    ls = min(dev.ls, N)
    dev.launch(k_keys, (N,), (ls,))
    k_sort.set_arg(0, keys.mem)
    k_sort.set_arg(1, idx.mem)
    k = 2
    while k <= N:
        j = k // 2
        while j > 0:
            k_sort._set_arg_buf(2, struct.pack("q", j))
            k_sort._set_arg_buf(3, struct.pack("q", k))
            dev.launch(k_sort, (N,), (ls,))
            j //= 2
        k *= 2
    perm = idx.view((n,), (1,), 0)
    return perm if dtype is INT64 else cast(perm, dtype)


# -- fused composites -----------------------------------------------------------------------

def _softmax(x: CLBuffer, dim: int, log: bool) -> CLBuffer:
    dev = x.dev
    t = ctype(dev, x.dtype, "softmax")
    out = empty(dev, x.shape, x.dtype, "softmax")
    if out.size == 0:
        return out
    if x.ndim == 0:
        return full((), 0.0 if log else 1.0, x.dtype, dev.index)
    _launch_along_dim(dev, t, "softmax", out, x, dim % x.ndim, 1 if log else 0)
    return out


def softmax(x: CLBuffer, dim: int) -> CLBuffer:
    return _softmax(x, dim, False)


def log_softmax(x: CLBuffer, dim: int) -> CLBuffer:
    return _softmax(x, dim, True)


def linear_backward(x: CLBuffer, w: CLBuffer, g: CLBuffer,
                    needs: tuple = (True, True, True)) -> tuple:
    """Gradients of linear: (g @ w, g2.T @ x2, g2.sum(0)), leading dims flattened."""
    gx = matmul(g, w) if needs[0] else None
    gw = gb = None
    if len(needs) > 1 and (needs[1] or (len(needs) > 2 and needs[2])):
        g2 = _flat2(g)
        if needs[1]:
            gw = matmul(permute(g2, (1, 0)), _flat2(x))
        if len(needs) > 2 and needs[2]:
            gb = reduce_op("sum", g2, (0,), False)
    return gx, gw, gb


def _flat2(x: CLBuffer) -> CLBuffer:
    """x as (-1, last dim): a view where the strides allow, else a copy."""
    shape = (x.size // x.shape[-1] if x.shape[-1] else 0, x.shape[-1]) if x.ndim else (1, 1)
    try:
        return reshape(x, shape, copy=False)
    except ViewNotPossible:
        return reshape(x, shape, copy=True)


def _ce_body(N, C, x, target, ignore, g=None, mode=0):
    return _longs(11).pack(N, C, x.offset, x.strides[0], x.strides[1], target.offset,
                           target.strides[0] if target.ndim else 0, int(ignore),
                           g.offset if g is not None else 0,
                           g.strides[0] if g is not None and g.ndim else 0, mode)


def cross_entropy(logits: CLBuffer, target: CLBuffer, ignore_index: int = -100,
                  reduction: str = "mean") -> tuple[CLBuffer, CLBuffer]:
    """Loss of (N, C) logits against class indices, and the softmax kept for backward:
    one launch for the rows, then the sum (and the count of valid rows for the mean)."""
    dev = logits.dev
    t = ctype(dev, logits.dtype, "cross_entropy")
    N, C = logits.shape
    probs = empty(dev, (N, C), logits.dtype, "cross_entropy")
    losses = empty(dev, (N,), logits.dtype, "cross_entropy")
    validf = empty(dev, (N,), logits.dtype, "cross_entropy")
    if N:
        kernel = dtype_kernel(dev, t, S.MAXD, "ce_rows")
        for k, buf in enumerate((probs, losses, validf, logits)):
            kernel.set_arg(k, buf.mem)
        kernel.set_arg(4, target.mem)
        kernel._set_arg_buf(5, _ce_body(N, C, logits, target, ignore_index))
        kernel.set_arg(6, dev.errflag)
        dev.launch(kernel, (N * dev.red_ls,), (dev.red_ls,))
    if reduction == "none":
        return losses, probs
    total = reduce_op("sum", losses, None, False)
    if reduction == "mean":
        total = TABLE["div"](total, reduce_op("sum", validf, None, False))
    return total, probs


def cross_entropy_backward(probs: CLBuffer, target: CLBuffer, g: CLBuffer,
                           ignore_index: int = -100, reduction: str = "mean") -> CLBuffer:
    dev = probs.dev
    t = ctype(dev, probs.dtype, "cross_entropy_backward")
    N, C = probs.shape
    grad = empty(dev, (N, C), probs.dtype, "cross_entropy_backward")
    if grad.size == 0:
        return grad
    mode = {"none": 0, "sum": 1, "mean": 2}[reduction]
    count = target
    if mode == 2:
        count = reduce_op("sum", TABLE["ne"](target, int(ignore_index)), None, False,
                          out_dtype=INT64)
    kernel = dtype_kernel(dev, t, S.MAXD, "ce_backward")
    for k, buf in enumerate((grad, probs, target, g, count)):
        kernel.set_arg(k, buf.mem)
    kernel._set_arg_buf(5, _ce_body(N, C, probs, target, ignore_index, g, mode))
    dev.launch(kernel, (_groups(N * C, dev.ls),), (dev.ls,))
    return grad


def _lstm_body(N, H, arrays, has_gcy):
    arrays = list(arrays) + [None] * (5 - len(arrays))
    offs = [a.offset if a is not None else 0 for a in arrays]
    s0 = [a.strides[0] if a is not None else 0 for a in arrays]
    s1 = [a.strides[1] if a is not None else 0 for a in arrays]
    return _longs(18).pack(N, H, 1 if has_gcy else 0, *offs, *s0, *s1)


def lstm_cell(input_gates: CLBuffer, hidden_gates: CLBuffer, cx: CLBuffer) -> tuple:
    """One LSTM step (gates i, f, g, o): hy, cy and the activated gates, in one launch."""
    dev = cx.dev
    t = ctype(dev, cx.dtype, "lstm_cell")
    N, H = cx.shape
    hy, cy = empty(dev, (N, H), cx.dtype), empty(dev, (N, H), cx.dtype)
    gates = empty(dev, (N, 4 * H), cx.dtype)
    if N * H:
        kernel = dtype_kernel(dev, t, S.MAXD, "lstm_cell")
        for k, buf in enumerate((hy, cy, gates, input_gates, hidden_gates, cx)):
            kernel.set_arg(k, buf.mem)
        kernel._set_arg_buf(6, _lstm_body(N, H, (input_gates, hidden_gates, cx), False))
        dev.launch(kernel, (_groups(N * H, dev.ls),), (dev.ls,))
    return hy, cy, gates


def lstm_cell_backward(grad_hy: CLBuffer, grad_cy: CLBuffer | None, cx: CLBuffer,
                       cy: CLBuffer, gates: CLBuffer) -> tuple:
    dev = cx.dev
    t = ctype(dev, cx.dtype, "lstm_cell_backward")
    N, H = cx.shape
    grad = empty(dev, (N, 4 * H), cx.dtype)
    gcx = empty(dev, (N, H), cx.dtype)
    if N * H:
        kernel = dtype_kernel(dev, t, S.MAXD, "lstm_cell_backward")
        gcy = grad_cy if grad_cy is not None else grad_hy
        for k, buf in enumerate((grad, gcx, grad_hy, gcy, cx, cy, gates)):
            kernel.set_arg(k, buf.mem)
        kernel._set_arg_buf(7, _lstm_body(N, H, (grad_hy, gcy, cx, cy, gates),
                                          grad_cy is not None))
        dev.launch(kernel, (_groups(N * H, dev.ls),), (dev.ls,))
    return grad, gcx


# -- foreach: optimizer updates over lists of tensors, written in place --------------------

TERNARY = {op: i for i, op in enumerate(S.TERNARY_OPS)}


def _each(values: Any, n: int) -> list:
    """A per-tensor list, or one value (a scalar) for every tensor."""
    return list(values) if isinstance(values, (list, tuple)) else [values] * n


def _into(x: CLBuffer, family: str, operands: list, op: int, **kw: Any) -> CLBuffer:
    """Run elementwise `op` writing into x itself (through its strides); an operand
    that overlaps x without being x itself is read from a copy first."""
    _check_writable(x)
    operands = [clone(o) if type(o) is CLBuffer and o.mem is x.mem and
                (o.shape, o.strides, o.offset) != (x.shape, x.strides, x.offset) else o
                for o in operands]
    return _ew(family, ctype(x.dev, x.dtype, family), x, operands, op, **kw)


def _foreach_binary(op: str, inplace: bool):
    code = BINARY[op]

    def kernel(xs: list, others: Any, alpha: Any = 1) -> list | None:
        outs = []
        for x, y in zip(xs, _each(others, len(xs))):
            out = x if inplace else empty(x.dev, x.shape, x.dtype, op)
            if alpha != 1 and op in ("add", "sub"):
                a = -alpha if op == "sub" else alpha
                if type(y) is CLBuffer:
                    _into(out, "binary", [x, y], BINARY["axpy"], scalars=(None, None, a))
                else:
                    _into(out, "binary", [x, y * a], BINARY["add"])
            else:
                _into(out, "binary", [x, y], code)
            outs.append(out)
        return None if inplace else outs
    kernel.__name__ = f"_foreach_{op}{'_' if inplace else ''}"
    return kernel


def _foreach_addc(op: str):
    def kernel(xs: list, t1s: list, t2s: list, value: Any = 1) -> None:
        for x, a, b, v in zip(xs, t1s, t2s, _each(value, len(xs))):
            _into(x, "ternary", [x, a, b], TERNARY[op], scalars=(v, None, None))
    kernel.__name__ = f"_foreach_{op}_"
    return kernel


def _foreach_lerp_(xs: list, ends: list, weight: Any) -> None:
    for x, end, w in zip(xs, ends, _each(weight, len(xs))):
        _into(x, "ternary", [x, end, w], TERNARY["lerp"])


def _foreach_unary(op: str, inplace: bool):
    code = UNARY[op]

    def kernel(xs: list) -> list | None:
        outs = []
        for x in xs:
            out = x if inplace else empty(x.dev, x.shape, x.dtype, op)
            _into(out, "unary", [x], code)
            outs.append(out)
        return None if inplace else outs
    kernel.__name__ = f"_foreach_{op}{'_' if inplace else ''}"
    return kernel


def _foreach_zero_(xs: list) -> None:
    for x in xs:
        _check_writable(x)
        _copy_into(x, 0)


def _foreach_copy_(xs: list, srcs: list) -> None:
    """x[...] = src, converting the dtype as a C cast does (NumPy's casting="unsafe")."""
    for x, src in zip(xs, srcs):
        _check_writable(x)
        if type(src) is CLBuffer and src.mem is x.mem:
            src = clone(src)
        if type(src) is CLBuffer and src.dtype is not x.dtype:
            _ew("cast", ctype(x.dev, src.dtype, "copy_"), x, [src],
                S.TYPES[x.dtype.name].code)
        else:
            _copy_into(x, src)


def _fused_sgd_(params: list, grads: list, bufs: list | None, lr: float, momentum: float,
                dampening: float, weight_decay: float, nesterov: bool,
                maximize: bool) -> None:
    """SGD's update in place: one `sgd_step` launch per parameter (reading p, its gradient
    and its momentum buffer once, writing p and the buffer), where the three share a
    floating dtype and are contiguous; else the update's elementwise ops."""
    flags = (1 if maximize else 0) | (2 if weight_decay != 0 else 0) | \
        (4 if momentum != 0 else 0) | (8 if nesterov else 0)
    for i, (p, g) in enumerate(zip(params, grads)):
        _check_writable(p)
        b = bufs[i] if momentum != 0 else None
        t = ctype(p.dev, p.dtype, "_fused_sgd_")
        same = all(x.dtype is p.dtype and x.shape == p.shape and x.is_contiguous()
                   for x in (p, g, b) if x is not None)
        if not same or t.kind not in "fh" or p.mem is g.mem or (b is not None and
                                                               b.mem in (p.mem, g.mem)):
            _sgd_ops(p, g, b, lr, momentum, dampening, weight_decay, nesterov, maximize)
            continue
        n = p.size
        if n == 0:
            continue
        dev = p.dev
        kernel = dtype_kernel(dev, t, S.MAXD, "sgd_step")
        kernel.set_arg(0, p.mem)
        kernel.set_arg(1, g.mem)
        kernel.set_arg(2, (b if b is not None else p).mem)
        cs = dev.chunk(n)
        kernel._set_arg_buf(3, _longs(6).pack(n, cs, p.offset, g.offset,
                                              b.offset if b is not None else 0, flags))
        for k, v in enumerate((-lr, momentum, 1 - dampening, weight_decay)):
            kernel._set_arg_buf(4 + k, scalar_bytes(t, v))
        items = (n + cs - 1) // cs
        dev.launch(kernel, (_groups(items, dev.ls),), dev.ls_tuple)


def _sgd_ops(p: CLBuffer, g: CLBuffer, b: CLBuffer | None, lr: float, momentum: float,
             dampening: float, weight_decay: float, nesterov: bool, maximize: bool) -> None:
    """One parameter's SGD update as elementwise ops (mixed dtypes or strided tensors)."""
    axpy = BINARY["axpy"]

    def plus(x: CLBuffer, y: CLBuffer, alpha: Any) -> CLBuffer:  # x + y * alpha, fresh
        out = empty(x.dev, x.shape, x.dtype, "_fused_sgd_")
        return _ew("binary", ctype(x.dev, x.dtype, "_fused_sgd_"), out, [x, y], axpy,
                   scalars=(None, None, alpha))
    if maximize:
        g = TABLE["neg"](g)
    if weight_decay != 0:
        g = plus(g, p, weight_decay)
    if b is not None:
        _into(b, "binary", [b, momentum], BINARY["mul"])
        _into(b, "binary", [b, g], axpy, scalars=(None, None, 1 - dampening))
        g = plus(g, b, momentum) if nesterov else b
    _into(p, "binary", [p, g], axpy, scalars=(None, None, -lr))


FOREACH = {
    "_foreach_add_": _foreach_binary("add", True), "_foreach_add": _foreach_binary("add", False),
    "_foreach_sub_": _foreach_binary("sub", True),
    "_foreach_mul_": _foreach_binary("mul", True), "_foreach_mul": _foreach_binary("mul", False),
    "_foreach_div_": _foreach_binary("div", True), "_foreach_div": _foreach_binary("div", False),
    "_foreach_maximum_": _foreach_binary("maximum", True),
    "_foreach_addcmul_": _foreach_addc("addcmul"), "_foreach_addcdiv_": _foreach_addc("addcdiv"),
    "_foreach_lerp_": _foreach_lerp_, "_foreach_sqrt": _foreach_unary("sqrt", False),
    "_foreach_sqrt_": _foreach_unary("sqrt", True), "_foreach_neg": _foreach_unary("neg", False),
    "_foreach_neg_": _foreach_unary("neg", True),
    "_foreach_zero_": _foreach_zero_, "_foreach_copy_": _foreach_copy_,
    "_fused_sgd_": _fused_sgd_,
}


# -- host transfers -------------------------------------------------------------------------

def to_numpy(x: CLBuffer) -> Any:
    """A fresh NumPy array of x's logical shape (waits for the queue)."""
    import numpy as np

    from ember.core.backend import numpy_dtype

    host = np.empty(x.shape, numpy_dtype(x.dtype))
    if host.size == 0:
        return host
    src = contiguous(x)
    flat = host.reshape(-1)
    dev = x.dev
    dev.read_errors()
    rt.cl().enqueue_copy(dev.queue, flat, src.mem, src_offset=src.offset * x.dtype.itemsize,
                         is_blocking=True)
    dev.raise_errors()
    return host


_SMALL = 1 << 20


def from_numpy(array: Any, dev: rt.Device) -> CLBuffer:
    import numpy as np

    from ember.core.backend import from_numpy_dtype

    arr = np.asarray(array)
    dtype = from_numpy_dtype(arr.dtype)
    out = empty(dev, arr.shape, dtype, "from_numpy")
    if arr.size == 0:
        return out
    if arr.nbytes <= _SMALL:
        # a private copy, written without waiting; the event keeps it alive until done
        host = np.array(arr, copy=True, order="C").reshape(-1)
        evt = rt.cl().enqueue_copy(dev.queue, out.mem, host, is_blocking=False)
        dev.keep(evt)
    else:
        host = np.ascontiguousarray(arr).reshape(-1)
        rt.cl().enqueue_copy(dev.queue, out.mem, host, is_blocking=True)
    return out


def to_device(x: CLBuffer, dev: rt.Device) -> CLBuffer:
    """x's values on another OpenCL device: a device-to-device copy when both share a
    context (one platform), else through host memory."""
    if dev is x.dev:
        return clone(x)
    src = contiguous(x)
    if dev.ensure().context is not src.dev.context:
        return from_numpy(to_numpy(src), dev)
    out = empty(dev, x.shape, x.dtype, "to")
    if out.size:
        cl = rt.cl()
        marker = cl.enqueue_marker(src.dev.queue)
        done = cl.enqueue_copy(dev.queue, out.mem, src.mem,
                               byte_count=out.size * x.dtype.itemsize,
                               src_offset=src.offset * x.dtype.itemsize, dst_offset=0,
                               wait_for=[marker])
        # src's queue may reuse src's memory only after the copy has read it
        cl.enqueue_barrier(src.dev.queue, wait_for=[done])
    return out


# -- the dispatch table -------------------------------------------------------------------

TABLE: dict[str, Any] = {}
for _op in S.UNARY_OPS:
    if _op not in ("copy", "clamp", "tril", "triu"):
        TABLE[_op] = _unary_kernel(_op)
for _op in S.PRED_OPS:
    TABLE[_op] = _pred_kernel(_op)
for _op in S.BINARY_OPS + S.COMPARE_OPS:  # BINARY_OPS holds the fused unary backwards
    if _op != "axpy":  # a step of the list ops (FOREACH), not a kernel core knows
        TABLE[_op] = _binary_kernel(_op)
for _op in ("sum", "prod", "max", "min", "all", "any"):
    TABLE[_op] = _reduction(_op)
for _op in ("argmax", "argmin"):
    TABLE[_op] = _arg_reduction(_op)
TABLE.update({
    "where": where, "clamp": clamp, "cast": cast, "cumsum": cumsum, "topk": topk,
    "reshape": reshape, "view_dtype": view_dtype, "permute": permute, "expand": expand,
    "flip": flip, "clone": clone,
    "strided_view": strided_view,
    "tril": tril, "triu": triu, "getitem": getitem, "setitem": setitem, "assign": assign,
    "cat": cat, "gather": gather, "scatter": scatter, "scatter_add": scatter_add,
    "scatter_reduce": scatter_reduce,
    "index_select": index_select, "nonzero": nonzero, "matmul": matmul,
    "full": full, "arange": arange, "rand": rand, "randn": randn, "randint": randint,
    "randperm": randperm,
    # fused composites and backwards (core uses them when present)
    "softmax": softmax, "log_softmax": log_softmax, "linear": linear,
    "linear_backward": linear_backward, "cross_entropy": cross_entropy,
    "cross_entropy_backward": cross_entropy_backward, "lstm_cell": lstm_cell,
    "lstm_cell_backward": lstm_cell_backward,
})
TABLE.update(FOREACH)


# -- einsum: views, sums and batched matmuls ------------------------------------------------

def einsum(*xs: CLBuffer, equation: str) -> CLBuffer:
    """einsum by composition: repeated letters in one operand become a diagonal view
    (summed strides), letters nobody else needs are summed out, and operands are
    contracted pairwise, left to right, by one batched matmul each (batch letters,
    the left operand's own letters, the contracted letters, the right operand's own
    letters). Size-1 dims broadcast against the same letter's size elsewhere."""
    terms, rhs = _einsum_parse(equation, xs)
    sizes: dict[str, int] = {}
    ops = []
    for term, x in zip(terms, xs):
        x, term = _einsum_diagonal(x, term)
        for c, s in zip(term, x.shape):
            sizes[c] = max(sizes.get(c, 1), s) if s != 0 else 0
        ops.append((x, term))
    # sum out letters only one operand has and the output does not need
    for i, (x, term) in enumerate(ops):
        others = set(rhs).union(*(set(t) for j, (_, t) in enumerate(ops) if j != i))
        drop = [d for d, c in enumerate(term) if c not in others]
        if drop:
            x = reduce_op("sum", x, tuple(drop), False)
            term = "".join(c for c in term if c not in drop and c in others)
            term = "".join(c for d, c in enumerate(ops[i][1]) if d not in drop)
        ops[i] = (x, term)
    x, term = ops[0]
    for k in range(1, len(ops)):
        y, yterm = ops[k]
        later = set(rhs).union(*(set(t) for _, t in ops[k + 1:]))
        x, term = _einsum_pair(x, term, y, yterm, later, sizes)
    # the output: sum what is left, order as rhs, broadcast size-1 letters
    drop = tuple(d for d, c in enumerate(term) if c not in rhs)
    if drop:
        x = reduce_op("sum", x, drop, False)
        term = "".join(c for c in term if c in rhs)
    x = permute(x, tuple(term.index(c) for c in rhs))
    target = tuple(sizes[c] for c in rhs)
    out = empty(x.dev, target, x.dtype, "einsum")
    _copy_into(out, x)
    return out


def _einsum_parse(equation: str, xs: tuple) -> tuple[list[str], str]:
    """The operands' subscripts and the output's, with '...' replaced by letters of
    their own (right-aligned, so they broadcast as NumPy's ellipsis does) and the
    implicit output (ellipsis dims first, then the letters used once, sorted)."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    used = set(eq) - set(",->.")
    free = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in used]
    ell_n = max((x.ndim - (len(t) - 3) for t, x in zip(terms, xs) if "..." in t), default=0)
    ell = "".join(free[:ell_n])
    out_terms = []
    for t, x in zip(terms, xs):
        if "..." in t:
            n = x.ndim - (len(t) - 3)
            t = t.replace("...", ell[ell_n - n:] if n else "")
        out_terms.append(t)
    if arrow:
        rhs = rhs.replace("...", ell)
    else:
        joined = "".join(out_terms)
        rhs = ell + "".join(sorted(c for c in set(joined) - set(ell)
                                   if joined.count(c) == 1))
    return out_terms, rhs


def _einsum_diagonal(x: CLBuffer, term: str) -> tuple[CLBuffer, str]:
    """A letter repeated in one operand ("ii"): the diagonal, as a view whose stride is
    the sum of the repeated dims' strides."""
    if len(set(term)) == len(term):
        return x, term
    shape, strides, letters = [], [], ""
    for d, c in enumerate(term):
        if c in letters:
            j = letters.index(c)
            strides[j] += x.strides[d]
            shape[j] = min(shape[j], x.shape[d])
        else:
            letters += c
            shape.append(x.shape[d])
            strides.append(x.strides[d])
    return x.view(tuple(shape), tuple(strides), x.offset), letters


def _einsum_pair(x: CLBuffer, xt: str, y: CLBuffer, yt: str, later: set, sizes: dict):
    both = [c for c in xt if c in yt]
    batch = [c for c in both if c in later]
    contract = [c for c in both if c not in later]
    left = [c for c in xt if c not in yt]
    right = [c for c in yt if c not in xt]

    def arrange(buf, term, groups):
        """buf permuted to the letters of `groups` in order, each group merged into one
        dim (batch letters stay separate); contracted letters broadcast to full size."""
        order = [term.index(c) for g in groups for c in g]
        v = permute(buf, tuple(order))
        letters = [c for g in groups for c in g]
        full = tuple(sizes[c] if c in contract else v.shape[i] for i, c in enumerate(letters))
        if full != v.shape:
            v = expand(v, full)
        nb = len(groups[0])
        merged = v.shape[:nb] + tuple(math.prod(v.shape[nb + sum(len(g) for g in
                                                                 groups[1:i]):
                                                         nb + sum(len(g) for g in
                                                                  groups[1:i + 1])])
                                      for i in range(1, len(groups)))
        try:
            return reshape(v, merged, copy=False)
        except ViewNotPossible:
            return reshape(v, merged, copy=True)

    a = arrange(x, xt, [batch, left, contract])
    b = arrange(y, yt, [batch, contract, right])
    out = matmul(a, b)
    shape = out.shape[:len(batch)] + tuple(x.shape[xt.index(c)] for c in left) + \
        tuple(y.shape[yt.index(c)] for c in right)
    out = out.view(shape, contiguous_strides(shape), 0)
    return out, "".join(batch + left + right)


TABLE["einsum"] = einsum


# -- convolution helpers --------------------------------------------------------------------

def _conv_outs(size, ks, dil, pad, stride):
    return [(s + 2 * p - d * (k - 1) - 1) // st + 1
            for s, k, d, p, st in zip(size, ks, dil, pad, stride)]


def _im_body(n, nsp, C, K, L, xoff, xs, size, ks, outs, stride, pad, dil, xst):
    maxd = _maxd(nsp)
    return maxd, _longs(9 + 7 * maxd).pack(
        n, nsp, C, K, L, xoff, *xs, *_pad(size, maxd, 1), *_pad(ks, maxd, 1),
        *_pad(outs, maxd, 1), *_pad(stride, maxd, 1), *_pad(pad, maxd), *_pad(dil, maxd, 1),
        *_pad(xst, maxd))


def im2col(x: CLBuffer, kernel_size: tuple, dilation: tuple, padding: tuple,
           stride: tuple) -> CLBuffer:
    dev = x.dev
    nsp = len(kernel_size)
    N, C = x.shape[0], x.shape[1]
    size = x.shape[2:]
    outs = _conv_outs(size, kernel_size, dilation, padding, stride)
    K, L = math.prod(kernel_size), math.prod(outs)
    out = empty(dev, (N, C * K, L), x.dtype, "im2col")
    n = out.size
    if n:
        maxd, body = _im_body(n, nsp, C, K, L, x.offset, (x.strides[0], x.strides[1], 0),
                              size, kernel_size, outs, stride, padding, dilation,
                              x.strides[2:])
        rows = dev.cpu_like and nsp <= 8  # im2col_rows: a work-item per output row
        kernel = item_kernel(dev, x.dtype.itemsize, maxd, "im2col_rows" if rows else "im2col")
        kernel.set_arg(0, out.mem)
        kernel.set_arg(1, x.mem)
        kernel._set_arg_buf(2, body)
        if rows:
            dev.launch(kernel, (N * C * K,), None)
        else:
            dev.launch(kernel, (_groups(n, dev.ls),), (dev.ls,))
    return out


def col2im(x: CLBuffer, output_size: tuple, kernel_size: tuple, dilation: tuple,
           padding: tuple, stride: tuple) -> CLBuffer:
    dev = x.dev
    nsp = len(kernel_size)
    N = x.shape[0]
    K = math.prod(kernel_size)
    C = x.shape[1] // K
    outs = _conv_outs(output_size, kernel_size, dilation, padding, stride)
    out = empty(dev, (N, C) + tuple(output_size), x.dtype, "col2im")
    n = out.size
    if n:
        maxd, body = _im_body(n, nsp, C, K, math.prod(outs), x.offset, x.strides,
                              output_size, kernel_size, outs, stride, padding, dilation, ())
        t = ctype(dev, x.dtype, "col2im")
        # col2im_rows (a work-item per plane) accumulates in the output's storage type
        rows = dev.cpu_like and nsp <= 8 and t.kind not in "hb"
        kernel = dtype_kernel(dev, t, maxd, "col2im_rows" if rows else "col2im")
        kernel.set_arg(0, out.mem)
        kernel.set_arg(1, x.mem)
        kernel._set_arg_buf(2, body)
        if rows:
            dev.launch(kernel, (N * C,), None)
        else:
            dev.launch(kernel, (_groups(n, dev.ls),), (dev.ls,))
    return out


def constant_pad(x: CLBuffer, pad: tuple, value: Any = 0) -> CLBuffer:
    """A new tensor filled with `value`, x copied into its interior."""
    shape = tuple(s + a + b for s, (a, b) in zip(x.shape, pad))
    out = full(shape, value, x.dtype, x.dev.index)
    if x.size:
        offset = sum(a * st for (a, _), st in zip(pad, out.strides))
        _copy_into(out.view(x.shape, out.strides, offset), x)
    return out


TABLE.update({"im2col": im2col, "col2im": col2im, "constant_pad": constant_pad})


# -- fused convolution and max pooling (core uses them when present) ---------------------------

def _conv_columns(x: CLBuffer, kernel_size: tuple, dilation: tuple, padding: tuple,
                  stride: tuple) -> tuple[CLBuffer, list]:
    """im2col of x in the layout (C * K, N * L), so that one GEMM computes the whole
    batch; x is read through its strides (no contiguous copy)."""
    dev = x.dev
    nsp = len(kernel_size)
    N, C = x.shape[0], x.shape[1]
    outs = _conv_outs(x.shape[2:], kernel_size, dilation, padding, stride)
    K, L = math.prod(kernel_size), math.prod(outs)
    cols = empty(dev, (C * K, N * L), x.dtype, "conv")
    n = cols.size
    if n:
        # a work-item per (row, sample) block of L columns on a CPU (im2col_cn_rows), per
        # element on a GPU
        rows = dev.cpu_like and nsp <= 8
        maxd, body = _im_body(n, nsp, C, K, L, x.offset, (x.strides[0], x.strides[1], 1),
                              x.shape[2:], kernel_size, outs, stride, padding, dilation,
                              x.strides[2:])
        kernel = item_kernel(dev, x.dtype.itemsize, maxd,
                             "im2col_cn_rows" if rows else "im2col_cn")
        kernel.set_arg(0, cols.mem)
        kernel.set_arg(1, x.mem)
        kernel._set_arg_buf(2, body)
        if rows:
            dev.launch(kernel, (n // L,), None)
        else:
            dev.launch(kernel, (_groups(n, dev.ls),), (dev.ls,))
    return cols, outs


def _batched_cols(cols: CLBuffer, N: int) -> CLBuffer:
    """The (C * K, N * L) columns as an (N, C * K, L) view (sample n's block of columns)."""
    CK, NL = cols.shape
    L = NL // N if N else 0
    return cols.view((N, CK, L), (L, NL, 1), cols.offset)


def conv(x: CLBuffer, w: CLBuffer, b: CLBuffer | None, stride: tuple, padding: tuple,
         dilation: tuple) -> tuple[CLBuffer, CLBuffer]:
    """N-d convolution (groups=1): im2col into (C * K, N * L) columns, then one batched
    GEMM W (O, C * K) @ columns of each sample -> (N, O, L), written in the output's
    layout (W packed once for the whole batch), the bias added in its epilogue. Returns
    (output, columns): core keeps the columns for `conv_backward`."""
    N, O = x.shape[0], w.shape[0]
    cols, outs = _conv_columns(x, tuple(w.shape[2:]), dilation, padding, stride)
    CK = cols.shape[0]
    out = matmul(_as(w, (O, CK)), _batched_cols(cols, N), b, bias_rows=True)  # (N, O, L)
    shape = (N, O) + tuple(outs)
    return out.view(shape, contiguous_strides(shape), out.offset), cols


def _as(x: CLBuffer, shape: tuple) -> CLBuffer:
    """x reshaped to `shape`: a view where the strides allow, else a contiguous copy."""
    try:
        return reshape(x, shape, copy=False)
    except ViewNotPossible:
        return reshape(x, shape, copy=True)


def conv_backward(g: CLBuffer, x_shape: tuple, w: CLBuffer, cols: CLBuffer, stride: tuple,
                  padding: tuple, dilation: tuple, needs: tuple = (True, True, True)) -> tuple:
    """Gradients of `conv` (None where not needed), each from one GEMM: with g as
    g_mat (O, N * L), gw = g_mat @ columns^T, gb = g_mat's row sums and gx = the fold
    (col2im, overlaps summed, padding cropped) of W^T @ g_mat."""
    N, O = g.shape[0], g.shape[1]
    CK = cols.shape[0]
    L = math.prod(g.shape[2:])
    g3 = _as(g, (N, O, L))
    gx = gw = gb = None
    g_mat = None
    if needs[1] or needs[2]:
        # (O, N * L): the GEMM's A operand needs one stride per dim; a 1-wide im2col of
        # g is that copy, a row at a time
        g_mat, _ = _conv_columns(g3, (1,), (1,), (0,), (1,))
    if needs[1]:
        cols_t = cols.view((cols.shape[1], CK), (1, cols.shape[1]), cols.offset)
        gw = matmul(g_mat, cols_t)
        gw = gw.view(w.shape, contiguous_strides(w.shape), gw.offset)
    if needs[2]:
        gb = reduce_op("sum", g_mat, (1,), False)
    if needs[0]:
        w2 = _as(w, (O, CK))
        wt = w2.view((CK, O), (w2.strides[1], w2.strides[0]), w2.offset)
        gcols = matmul(wt, g3)  # (N, CK, L)
        gx = col2im(gcols, tuple(x_shape[2:]), tuple(w.shape[2:]), dilation, padding, stride)
    return gx, gw, gb


def _dense(x: CLBuffer) -> CLBuffer:
    """x when contiguous from the start of its memory (kernels index it from 0), else a
    copy that is."""
    return x if x.offset == 0 and is_contiguous(x.shape, x.strides) else clone(x)


def _pool_body(n: int, x: CLBuffer | None, C: int, size: tuple, kernel_size: tuple,
               outs: tuple, stride: tuple, padding: tuple, dilation: tuple, cs: int) -> tuple:
    nsp = len(kernel_size)
    maxd = _maxd(nsp)
    if not 1 <= nsp <= 3:
        raise RuntimeError(f"max_pool: the OpenCL backend pools over 1 to 3 spatial dims, "
                           f"got {nsp}")
    xoff, xs0, xs1 = (x.offset, x.strides[0], x.strides[1]) if x is not None else (0, 0, 0)
    xst = x.strides[2:] if x is not None else ()
    body = _longs(10 + 7 * maxd).pack(
        n, nsp, C, math.prod(kernel_size), math.prod(outs), cs, xoff, xs0, xs1,
        math.prod(size), *_pad(size, maxd, 1), *_pad(kernel_size, maxd, 1),
        *_pad(outs, maxd, 1), *_pad(stride, maxd, 1), *_pad(padding, maxd),
        *_pad(dilation, maxd, 1), *_pad(xst, maxd))
    return maxd, body


def _pool_outs(size: tuple, kernel_size: tuple, stride: tuple, padding: tuple,
               dilation: tuple, extra: tuple) -> tuple:
    return tuple((s + 2 * p + e - d * (k - 1) - 1) // st + 1 for s, k, st, p, d, e in
                 zip(size, kernel_size, stride, padding, dilation, extra))


def _launch_runs(dev: rt.Device, kernel: Any, n: int, cs: int) -> None:
    items = -(-n // cs)
    if dev.cpu_like:
        dev.launch(kernel, (items,), None)
    else:
        dev.launch(kernel, (_groups(items, dev.ls),), (dev.ls,))


def max_pool(x: CLBuffer, kernel_size: tuple, stride: tuple, padding: tuple, dilation: tuple,
             extra: tuple, need_indices: bool = True) -> tuple[CLBuffer, CLBuffer]:
    """Max pooling over 1 to 8 spatial dims: (values, window-local argmax indices), one
    launch. The indices are always returned (need_indices is ignored): the backward then
    reads them instead of searching the windows again."""
    dev = x.dev
    t = ctype(dev, x.dtype, "max_pool")
    N, C = x.shape[0], x.shape[1]
    outs = _pool_outs(x.shape[2:], kernel_size, stride, padding, dilation, extra)
    values = empty(dev, (N, C) + outs, x.dtype, "max_pool")
    idx = empty(dev, (N, C) + outs, INT64, "max_pool")
    n = values.size
    if n:
        # a window of its own kernel, wholly inside the input: a work-item per output row
        window = (tuple(kernel_size) in S.POOL_WINDOWS and not any(padding) and
                  all(d == 1 for d in dilation) and not any(extra))
        cs = dev.chunk(n)
        maxd, body = _pool_body(n, x, C, x.shape[2:], kernel_size, outs, stride, padding,
                                dilation, cs)
        name = (f"max_pool2d_{kernel_size[0]}x{kernel_size[1]}" if window else
                f"max_pool_fw_{len(kernel_size)}")
        kernel = dtype_kernel(dev, t, maxd, name)
        kernel.set_arg(0, values.mem)
        kernel.set_arg(1, idx.mem)
        kernel.set_arg(2, x.mem)
        kernel._set_arg_buf(3, body)
        if window:
            dev.launch(kernel, (n // outs[1],), None)
        else:
            _launch_runs(dev, kernel, n, cs)
    return values, idx


def max_pool_backward(g: CLBuffer, x: CLBuffer | None, values: CLBuffer | None,
                      idx: CLBuffer | None, input_shape: tuple, kernel_size: tuple,
                      stride: tuple, padding: tuple, dilation: tuple,
                      extra: tuple) -> CLBuffer:
    """The input gradient of max pooling: each output's gradient goes to the input element
    its window chose (`idx`, or found again from x when idx is None). Windows that never
    overlap scatter into a zeroed gradient (no two outputs share an element); overlapping
    ones gather, a work-item per input element summing the outputs that chose it."""
    if idx is None:
        _, idx = max_pool(x, kernel_size, stride, padding, dilation, extra)
    dev = g.dev
    t = ctype(dev, g.dtype, "max_pool_backward")
    input_shape = tuple(input_shape)
    C = input_shape[1]
    size = input_shape[2:]
    outs = tuple(g.shape[2:])
    g, idx = _dense(g), _dense(idx)
    grad = empty(dev, input_shape, g.dtype, "max_pool_backward")
    if grad.size == 0:
        return grad
    disjoint = all(s >= d * (k - 1) + 1 for s, d, k in zip(stride, dilation, kernel_size))
    window = False
    if disjoint:
        _copy_into(grad, 0)
        n = g.size
        if n == 0:
            return grad
        name = f"max_pool_bw_scatter_{len(kernel_size)}"
        window = (tuple(kernel_size) in S.POOL_WINDOWS and not any(padding) and
                  all(d == 1 for d in dilation) and not any(extra))
        if window:  # as in max_pool: windows wholly inside, a work-item per output row
            name = f"max_pool2d_bw_{kernel_size[0]}x{kernel_size[1]}"
    else:
        n = grad.size
        name = f"max_pool_bw_gather_{len(kernel_size)}"
    cs = dev.chunk(n)
    maxd, body = _pool_body(n, None, C, size, kernel_size, outs, stride, padding, dilation, cs)
    kernel = dtype_kernel(dev, t, maxd, name)
    kernel.set_arg(0, grad.mem)
    kernel.set_arg(1, g.mem)
    kernel.set_arg(2, idx.mem)
    kernel._set_arg_buf(3, body)
    if window:
        dev.launch(kernel, (n // outs[1],), None)
    else:
        _launch_runs(dev, kernel, n, cs)
    return grad


TABLE.update({"conv": conv, "conv_backward": conv_backward, "max_pool": max_pool,
              "max_pool_backward": max_pool_backward})
