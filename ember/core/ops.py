"""The registry of primitive ops: each op's inputs, attributes, and its shape/dtype rule.

This is the single place where an op's output shape and dtype are decided and its inputs
checked; every backend shares it. A rule receives the op's operands (tensors, or Python
scalars where the op allows them) and attributes, raises a clear error naming the op when
they are wrong, and returns an `OutMeta`: the output shape, the output dtype, and the
compute dtype that tensor operands are cast to before the kernel runs (None: no cast).

Kernel semantics, shared by every backend (`kernel(*buffers, **attrs)`):

elementwise unary   x -> y, same shape. Float ops receive floating x.
elementwise binary  (x, y) -> z, NumPy broadcasting; x and y already share a dtype (or
                    one is a Python scalar). Comparisons and logical ops return bool.
where               (cond, x, y) -> z, broadcasting.
clamp               (x, min=, max=) -> y; min/max are Python numbers or None.
cast                (x, dtype=) -> y.
reductions          (x, dims=tuple|None, keepdim=bool) -> y; `dims=None` reduces all.
                    argmax/argmin take `dim=int|None` (None: over the flattened tensor).
cumsum              (x, dim=) -> y.
reshape             (x, shape=, copy=bool) -> y; with copy=False it must return a view or
                    raise `ViewNotPossible`; with copy=True it may copy.
permute, expand     views: (x, dims=) / (x, shape=).
getitem             (x, *index_buffers, index=spec) -> y; `spec` is a tuple of
                    ("int", i) | ("slice", start, stop, step) | ("none",) | ("tensor", k)
                    entries covering every dimension (no Ellipsis left; k numbers the
                    int64 index buffers). Basic indexing (no "tensor") returns a view.
                    PyTorch's rule, not NumPy's: "int" entries select first; the tensor
                    indices then broadcast together and their dimensions go where the
                    first stood if they are adjacent among the non-int entries, else
                    in front. Negative tensor indices count from the end.
setitem             (x, value, *index_buffers, index=spec, accumulate=bool) -> None;
                    writes `value` (already broadcastable, same dtype) into x in place.
assign              (dst, src) -> None: copies src (broadcastable, same dtype) into dst.
cat                 (*xs, dim=) -> y.    flip (x, dims=) -> y (a copy).
gather              (x, index, dim=) -> y.   scatter/scatter_add (x, index, src, dim=) -> y
                    (out of place: a new buffer).   index_select (x, index, dim=) -> y.
tril/triu           (x, diagonal=) -> y.   nonzero (x) -> int64 (n, ndim).
matmul              (a, b) -> c with NumPy's matmul semantics (1-D and batch broadcasting).
einsum              (*xs, equation=) -> y.
im2col              (x, kernel_size=, dilation=, padding=, stride=) -> cols: x is
                    (N, C, *spatial) with 1 or 2 spatial dims; cols is (N, C * prod(k), L)
                    in PyTorch's F.unfold layout (channel-major, then kernel offsets), zero
                    padding, L output positions in row-major order.
col2im              (cols, output_size=, kernel_size=, dilation=, padding=, stride=) -> x:
                    the adjoint of im2col (overlapping entries are summed; F.fold).
constant_pad        (x, pad=((before, after), ...) per dim, value=) -> y.
full                (shape=, fill_value=, dtype=, device=) -> y.
arange              (start=, end=, step=, dtype=, device=) -> y.
rand/randn          (shape=, dtype=, device=) -> uniform [0, 1) / standard normal.
randint             (low=, high=, shape=, dtype=, device=).   randperm (n=, dtype=, device=).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from ember.core import dtype as dt
from ember.core.backend import ViewNotPossible  # noqa: F401 - part of the reshape spec


class OutMeta(NamedTuple):
    shape: tuple[int, ...]
    dtype: dt.dtype
    compute: dt.dtype | None  # the dtype tensor operands are cast to; None: leave them


@dataclass(frozen=True)
class OpSpec:
    name: str
    rule: Callable[..., OutMeta | list[OutMeta] | None]  # None: shape decided by the data
    view: bool = False  # the output shares storage with input 0
    inplace: bool = False  # writes into input 0, returns nothing
    creation: bool = False  # no tensor inputs; takes a `device` attribute
    uncast: tuple[int, ...] = ()  # operands never cast to the compute dtype (where's cond)
    doc: str = ""


OPS: dict[str, OpSpec] = {}


def register(name: str, rule: Callable[..., Any], **flags: Any) -> OpSpec:
    """Add a primitive op. Adding an op: a spec here, a differentiable definition in
    ember.core.functions, and a kernel in each backend that wants it natively."""
    if name in OPS:
        raise ValueError(f"op {name!r} is registered twice")
    spec = OpSpec(name, rule, **flags)
    OPS[name] = spec
    return spec


# -- helpers shared by the rules ------------------------------------------------------

def _shape(x: Any) -> tuple[int, ...]:
    return x.shape if hasattr(x, "shape") else ()


def _operand(x: Any) -> tuple[dt.dtype, int]:
    """(dtype, promotion tier) of a tensor or a Python scalar."""
    if hasattr(x, "dtype"):
        return x.dtype, (dt.DIMMED if x.shape else dt.ZERO_DIM)
    return dt.scalar_dtype(x), dt.SCALAR


def fmt_shape(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


@functools.cache
def broadcast_shapes(op: str, a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy/PyTorch broadcasting of two shapes, with PyTorch's error message."""
    if a == b:
        return a
    n = max(len(a), len(b))
    pa, pb = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    out = []
    for i in reversed(range(n)):  # PyTorch reports the last mismatching dimension
        x, y = pa[i], pb[i]
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            raise RuntimeError(
                f"{op}: shapes {fmt_shape(a)} and {fmt_shape(b)} cannot be broadcast: the size "
                f"of tensor a ({x}) must match the size of tensor b ({y}) at non-singleton "
                f"dimension {i}")
    return tuple(reversed(out))


def normalize_dim(op: str, dim: int, ndim: int) -> int:
    """A possibly negative dim -> a valid non-negative one, or PyTorch's IndexError."""
    lo, hi = (-ndim, ndim - 1) if ndim else (-1, 0)
    if not lo <= dim <= hi:
        raise IndexError(f"{op}: Dimension out of range (expected to be in range of "
                         f"[{lo}, {hi}], but got {dim})")
    return dim % ndim if ndim else 0


def normalize_dims(op: str, dims: Any, ndim: int) -> tuple[int, ...] | None:
    if dims is None:
        return None
    if isinstance(dims, int):
        dims = (dims,)
    out = tuple(normalize_dim(op, d, ndim) for d in dims)
    if len(set(out)) != len(out):
        raise RuntimeError(f"{op}: dim {dims} appears multiple times in the list of dims")
    return out


def _require(op: str, x: dt.dtype, ok: Callable[[dt.dtype], bool], what: str) -> None:
    if not ok(x):
        raise RuntimeError(f"{op}: not implemented for dtype {x} (takes {what})")


# -- elementwise ----------------------------------------------------------------------

UNARY_SAME = ("neg", "abs", "sign", "floor", "ceil", "round", "trunc", "relu")
UNARY_FLOAT = ("exp", "log", "log2", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tan",
               "tanh", "sigmoid", "erf", "asin", "acos", "atan", "reciprocal")
UNARY_BOOL = ("logical_not", "isnan", "isinf", "isfinite")
BINARY_ARITH = ("add", "sub", "mul", "pow", "maximum", "minimum", "remainder",
                "floor_divide")
BINARY_FLOAT = ("div", "atan2")
BINARY_COMPARE = ("eq", "ne", "lt", "le", "gt", "ge")
BINARY_LOGICAL = ("logical_and", "logical_or", "logical_xor")
BINARY_BITWISE = ("bitwise_and", "bitwise_or", "bitwise_xor")


def _unary_same(op: str):
    def rule(x):
        if x.dtype is dt.bool_:
            if op == "neg":
                raise RuntimeError("neg: negation, the `-` operator, on a bool tensor is not "
                                   "supported; use `~` or logical_not() instead")
            if op != "sign":
                raise RuntimeError(f"{op}: not implemented for dtype ember.bool")
        return OutMeta(x.shape, x.dtype, None)
    return rule


def _unary_float(op: str):
    def rule(x):
        out = x.dtype if x.dtype.is_floating_point else dt.get_default_dtype()
        return OutMeta(x.shape, out, out)
    return rule


def _unary_bool(x):
    return OutMeta(x.shape, dt.bool_, None)


def _bitwise_not(x):
    _require("bitwise_not", x.dtype, lambda d: not d.is_floating_point, "integer or bool")
    return OutMeta(x.shape, x.dtype, None)


def _binary(op: str, kind: str):
    def rule(a, b):
        shape = broadcast_shapes(op, _shape(a), _shape(b))
        common = dt.result_type(_operand(a), _operand(b))
        if kind == "arith":
            if op == "sub" and dt.bool_ in (_operand(a)[0], _operand(b)[0]):
                raise RuntimeError("sub: Subtraction, the `-` operator, with a bool tensor is "
                                   "not supported. If you are trying to invert a mask, use "
                                   "the `~` or `logical_not()` operator instead.")
            if common is dt.bool_ and op in ("pow", "remainder", "floor_divide"):
                raise RuntimeError(f"{op}: not implemented for two bool operands; "
                                   "convert one to an integer dtype first")
            return OutMeta(shape, common, common)
        if kind == "float":
            out = common if common.is_floating_point else dt.get_default_dtype()
            return OutMeta(shape, out, out)
        if kind == "bitwise":
            _require(op, common, lambda d: not d.is_floating_point, "integer or bool")
            return OutMeta(shape, common, common)
        return OutMeta(shape, dt.bool_, common)  # compare / logical
    return rule


def _where(cond, x, y):
    if cond.dtype is not dt.bool_:
        raise RuntimeError(f"where: expected condition to be a bool tensor, got {cond.dtype}")
    shape = broadcast_shapes("where", broadcast_shapes("where", cond.shape, _shape(x)),
                             _shape(y))
    common = dt.result_type(_operand(x), _operand(y))
    return OutMeta(shape, common, common)


def _clamp(x, min=None, max=None):
    if min is None and max is None:
        raise RuntimeError("clamp: at least one of 'min' or 'max' must not be None")
    ops = [_operand(x)] + [_operand(v) for v in (min, max) if v is not None]
    out = dt.result_type(*ops)
    return OutMeta(x.shape, out, out)


def _cast(x, dtype):
    return OutMeta(x.shape, dtype, None)


for _n in UNARY_SAME:
    register(_n, _unary_same(_n))
for _n in UNARY_FLOAT:
    register(_n, _unary_float(_n))
for _n in UNARY_BOOL:
    register(_n, _unary_bool)
register("bitwise_not", _bitwise_not)
for _names, _kind in ((BINARY_ARITH, "arith"), (BINARY_FLOAT, "float"),
                      (BINARY_COMPARE, "compare"), (BINARY_LOGICAL, "logical"),
                      (BINARY_BITWISE, "bitwise")):
    for _n in _names:
        register(_n, _binary(_n, _kind))
register("where", _where, uncast=(0,))
register("clamp", _clamp)
register("cast", _cast)


# -- reductions -----------------------------------------------------------------------

def _reduced_shape(shape, dims, keepdim):
    if dims is None:
        return tuple(1 for _ in shape) if keepdim else ()
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def _reduction(op: str):
    def rule(x, dims=None, keepdim=False):
        if op in ("max", "min") and x.numel() == 0 and (
                dims is None or any(x.shape[d] == 0 for d in dims)):
            raise RuntimeError(f"{op}: cannot reduce over a zero-size dimension "
                               f"(input shape {fmt_shape(x.shape)})")
        shape = _reduced_shape(x.shape, dims, keepdim)
        if op in ("all", "any"):
            return OutMeta(shape, dt.bool_, None)
        if op in ("sum", "prod") and not x.dtype.is_floating_point:
            return OutMeta(shape, dt.int64, dt.int64)
        return OutMeta(shape, x.dtype, None)
    return rule


def _arg_reduction(op: str):
    def rule(x, dim=None, keepdim=False):
        if x.numel() == 0:
            raise RuntimeError(f"{op}: expected a non-empty tensor, got shape "
                               f"{fmt_shape(x.shape)}")
        dims = None if dim is None else (dim,)
        return OutMeta(_reduced_shape(x.shape, dims, keepdim), dt.int64, None)
    return rule


for _n in ("sum", "prod", "max", "min", "all", "any"):
    register(_n, _reduction(_n))
for _n in ("argmax", "argmin"):
    register(_n, _arg_reduction(_n))
register("cumsum", lambda x, dim: OutMeta(
    x.shape, x.dtype if x.dtype.is_floating_point else dt.int64,
    None if x.dtype.is_floating_point else dt.int64))


# -- shapes and views -----------------------------------------------------------------

def infer_reshape(op: str, shape: tuple[int, ...], numel: int, new: tuple[int, ...]):
    """Resolve one -1 in `new` and check the element count, with PyTorch's messages."""
    if new.count(-1) > 1:
        raise RuntimeError(f"{op}: only one dimension can be inferred")
    if any(s < -1 for s in new):
        raise RuntimeError(f"{op}: invalid shape dimension {min(new)}")
    if -1 in new:
        known = math.prod(s for s in new if s != -1)
        if known == 0 or numel % known:
            raise RuntimeError(f"{op}: shape '{fmt_shape(new)}' is invalid for input of "
                               f"size {numel}")
        new = tuple(numel // known if s == -1 else s for s in new)
    if math.prod(new) != numel:
        raise RuntimeError(f"{op}: shape '{fmt_shape(new)}' is invalid for input of size "
                           f"{numel}")
    return new


def _reshape(x, shape, copy=True):
    return OutMeta(shape, x.dtype, None)


def _permute(x, dims):
    if sorted(dims) != list(range(x.ndim)):
        raise RuntimeError(f"permute: dims {list(dims)} are not a permutation of the "
                           f"{x.ndim} dimensions of a tensor of shape {fmt_shape(x.shape)}")
    return OutMeta(tuple(x.shape[d] for d in dims), x.dtype, None)


def _expand(x, shape):
    if len(shape) < x.ndim:
        raise RuntimeError(f"expand: the number of sizes provided ({len(shape)}) must be "
                           f"greater or equal to the number of dimensions in the tensor "
                           f"({x.ndim})")
    lead = len(shape) - x.ndim
    out = list(shape[:lead])
    for i, (s, n) in enumerate(zip(x.shape, shape[lead:])):
        if n == -1:
            n = s
        if s != n and s != 1:
            raise RuntimeError(
                f"expand: the expanded size of the tensor ({n}) must match the existing size "
                f"({s}) at non-singleton dimension {i + lead}.  Target sizes: "
                f"{fmt_shape(shape)}.  Tensor sizes: {fmt_shape(x.shape)}")
        out.append(n)
    if any(s < 0 for s in out):
        raise RuntimeError(f"expand: -1 is not allowed in a leading, non-existing dimension "
                           f"(target sizes {fmt_shape(shape)})")
    return OutMeta(tuple(out), x.dtype, None)


def _flip(x, dims):
    return OutMeta(x.shape, x.dtype, None)


def _same(x, *_, **__):
    return OutMeta(x.shape, x.dtype, None)


register("reshape", _reshape, view=True)  # a view when copy=False; dispatch checks
register("permute", _permute, view=True)
register("expand", _expand, view=True)
register("flip", _flip)
register("clone", _same)
register("tril", _same)
register("triu", _same)


# -- indexing and data movement -------------------------------------------------------

def _getitem(x, *index_buffers, index, shape):
    # the index was parsed and checked in ember.core.indexing, which computed `shape`
    return OutMeta(shape, x.dtype, None)


def _setitem(x, value, *index_buffers, index, accumulate=False):
    return None


def _assign(dst, src):
    return None


def _cat(*xs, dim):
    shapes = [tuple(x.shape) for x in xs]
    ref = shapes[0]
    for i, shape in enumerate(shapes):
        if len(shape) != len(ref):
            raise RuntimeError(f"cat: tensors must have the same number of dimensions: got "
                               f"{len(ref)} and {len(shape)} (tensor {i})")
        if shape != ref and any(s != r for d, (s, r) in enumerate(zip(shape, ref)) if d != dim):
            d = next(d for d, (s, r) in enumerate(zip(shape, ref)) if d != dim and s != r)
            raise RuntimeError(
                f"cat: sizes of tensors must match except in dimension {dim}. Expected "
                f"size {ref[d]} but got size {shape[d]} for tensor number {i} "
                f"in the list (shapes {fmt_shape(ref)} and {fmt_shape(shape)})")
    common = xs[0].dtype
    for x in xs[1:]:
        if x.dtype is not common:
            common = dt.promote_types(common, x.dtype)
    out = list(ref)
    out[dim] = sum(s[dim] for s in shapes)
    return OutMeta(tuple(out), common, common)


def _check_index_tensor(op: str, index) -> None:
    if index.dtype is not dt.int64:
        raise RuntimeError(f"{op}: expected an int64 index tensor, got {index.dtype}")


def _gather(x, index, dim):
    _check_index_tensor("gather", index)
    if index.ndim != x.ndim:
        raise RuntimeError(f"gather: index tensor must have the same number of dimensions "
                           f"as input tensor (input {fmt_shape(x.shape)}, index "
                           f"{fmt_shape(index.shape)})")
    for d in range(x.ndim):
        if d != dim and index.shape[d] > x.shape[d]:
            raise RuntimeError(f"gather: size of index {fmt_shape(index.shape)} does not fit "
                               f"input {fmt_shape(x.shape)} at dimension {d}")
    return OutMeta(index.shape, x.dtype, None)


def _scatter(op: str):
    def rule(x, index, src, dim):
        _check_index_tensor(op, index)
        if not (index.ndim == x.ndim == src.ndim):
            raise RuntimeError(f"{op}: index, input and src must have the same number of "
                               f"dimensions (input {fmt_shape(x.shape)}, index "
                               f"{fmt_shape(index.shape)}, src {fmt_shape(src.shape)})")
        for d in range(x.ndim):
            if index.shape[d] > src.shape[d] or (d != dim and index.shape[d] > x.shape[d]):
                raise RuntimeError(f"{op}: index {fmt_shape(index.shape)} is larger than "
                                   f"src {fmt_shape(src.shape)} or input "
                                   f"{fmt_shape(x.shape)} at dimension {d}")
        if src.dtype is not x.dtype:
            raise RuntimeError(f"{op}: expected src ({src.dtype}) to have the same dtype as "
                               f"self ({x.dtype})")
        return OutMeta(x.shape, x.dtype, None)
    return rule


def _index_select(x, index, dim):
    _check_index_tensor("index_select", index)
    if index.ndim > 1:
        raise IndexError(f"index_select: index must be 0-D or 1-D, got {index.ndim}-D")
    shape = list(x.shape)
    shape[dim] = index.numel()
    return OutMeta(tuple(shape), x.dtype, None)


register("getitem", _getitem, view=True)  # a view for basic indexing only
register("setitem", _setitem, inplace=True)
register("assign", _assign, inplace=True)
register("cat", _cat)
register("gather", _gather)
register("scatter", _scatter("scatter"))
register("scatter_add", _scatter("scatter_add"))
register("index_select", _index_select)
register("nonzero", lambda x: None)  # data-dependent shape


# -- linear algebra -------------------------------------------------------------------

def _matmul(a, b):
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"matmul: both arguments need at least 1 dimension, got "
                           f"{a.ndim}D and {b.ndim}D tensors")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"matmul: expected both operands to have the same dtype, but got "
                           f"{a.dtype} and {b.dtype}")
    if a.dtype is dt.bool_:
        raise RuntimeError("matmul: not implemented for dtype ember.bool")
    sa = (1,) + a.shape if a.ndim == 1 else a.shape
    sb = b.shape + (1,) if b.ndim == 1 else b.shape
    if sa[-1] != sb[-2]:
        raise RuntimeError(f"matmul: mat1 and mat2 shapes cannot be multiplied "
                           f"({sa[-2]}x{sa[-1]} and {sb[-2]}x{sb[-1]}); full shapes "
                           f"{fmt_shape(a.shape)} and {fmt_shape(b.shape)}")
    batch = broadcast_shapes("matmul", sa[:-2], sb[:-2])
    shape = batch + (sa[-2], sb[-1])
    if a.ndim == 1:
        shape = shape[:-2] + shape[-1:]
    if b.ndim == 1:
        shape = shape[:-1]
    return OutMeta(shape, a.dtype, None)


def _einsum(*xs, equation):
    common = functools.reduce(dt.promote_types, (x.dtype for x in xs))
    lhs, _, rhs = equation.replace(" ", "").partition("->")
    terms = lhs.split(",")
    if len(terms) != len(xs):
        raise RuntimeError(f"einsum(): equation {equation!r} names {len(terms)} operands "
                           f"but {len(xs)} were given")
    sizes: dict[str, int] = {}
    for term, x in zip(terms, xs):
        if "." in term:
            raise RuntimeError("einsum(): ellipsis ('...') is not supported yet")
        if len(term) != x.ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in {term!r} does not "
                               f"match the dimensions of operand shape {fmt_shape(x.shape)}")
        for c, s in zip(term, x.shape):
            if sizes.setdefault(c, s) != s and s != 1 and sizes[c] != 1:
                raise RuntimeError(f"einsum(): subscript {c} has size {s} for operand shape "
                                   f"{fmt_shape(x.shape)} which does not broadcast with "
                                   f"previously seen size {sizes[c]}")
            sizes[c] = max(sizes[c], s)
    if not _:
        rhs = "".join(sorted(c for c in set(lhs) - {","} if lhs.count(c) == 1))
    return OutMeta(tuple(sizes[c] for c in rhs), common, common)


register("matmul", _matmul)
register("einsum", _einsum)


# -- convolution helpers --------------------------------------------------------------

def conv_out_size(op: str, size: int, k: int, d: int, p: int, s: int,
                  ceil_mode: bool = False) -> int:
    """Output length of a sliding window (PyTorch's formula, with its ceil_mode rule)."""
    span = size + 2 * p - d * (k - 1) - 1
    if span < 0:
        raise RuntimeError(f"{op}: the kernel (size {k}, dilation {d}) is larger than the "
                           f"padded input (size {size} + 2 * {p})")
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= size + p:  # the last window must start inside
        out -= 1
    return out


def _im2col(x, kernel_size, dilation, padding, stride):
    n = len(kernel_size)
    if x.ndim != n + 2:
        raise RuntimeError(f"im2col: expected a {n + 2}-D input (batch, channels, "
                           f"{n} spatial dims), got shape {fmt_shape(x.shape)}")
    outs = [conv_out_size("im2col", x.shape[2 + i], kernel_size[i], dilation[i], padding[i],
                          stride[i]) for i in range(n)]
    if any(o <= 0 for o in outs):
        raise RuntimeError(f"im2col: the computed output size {outs} is too small for input "
                           f"{fmt_shape(x.shape)} and kernel {list(kernel_size)}")
    return OutMeta((x.shape[0], x.shape[1] * math.prod(kernel_size), math.prod(outs)),
                   x.dtype, None)


def _col2im(x, output_size, kernel_size, dilation, padding, stride):
    n = len(kernel_size)
    k = math.prod(kernel_size)
    blocks = math.prod(conv_out_size("col2im", output_size[i], kernel_size[i], dilation[i],
                                     padding[i], stride[i]) for i in range(n))
    if x.ndim != 3 or x.shape[1] % k or x.shape[2] != blocks:
        raise RuntimeError(f"col2im: expected input of shape (N, C * {k}, {blocks}) for "
                           f"output size {list(output_size)}, got {fmt_shape(x.shape)}")
    return OutMeta((x.shape[0], x.shape[1] // k) + tuple(output_size), x.dtype, None)


def _constant_pad(x, pad, value=0):
    # `pad`: a (before, after) pair per dimension, all non-negative (core crops first)
    return OutMeta(tuple(s + a + b for s, (a, b) in zip(x.shape, pad)), x.dtype, None)


register("im2col", _im2col)
register("col2im", _col2im)
register("constant_pad", _constant_pad)


# -- creation -------------------------------------------------------------------------

def _creation(x=None, *, shape=(), dtype, device, **_):
    return OutMeta(tuple(shape), dtype, None)


def _arange(*, start, end, step, dtype, device):
    if step == 0:
        raise RuntimeError("arange: step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError(f"arange: upper bound and larger bound inconsistent with step "
                           f"sign (start={start}, end={end}, step={step})")
    return OutMeta((max(0, math.ceil((end - start) / step)),), dtype, None)


for _n in ("full", "rand", "randn", "randint"):
    register(_n, _creation, creation=True)
register("arange", _arange, creation=True)
register("randperm", lambda *, n, dtype, device: OutMeta((n,), dtype, None), creation=True)
