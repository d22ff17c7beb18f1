"""ONNX converters for ember's primitive ops (every primitive of `ember.core.opdef.OPS`)
and its core composite ops (`linear`, `conv2d`, `softmax`, `layer_norm`, pools ...).

A converter is `fn(ctx, node)`; it emits nodes with `ctx.op(...)` and returns the ONNX
names of `node.outputs` (or `NotImplemented` to decline, for a composite: its children are
converted instead). Semantics of each primitive: its family's module in ember/core/ops/.
They enter the export table (`onnx_registry`) when this module is imported, as the driver
does.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ember.core import dtype as dt
from ember.core.opdef import OPS
from ember.core.ops.elementwise import UNARY_BY_RULE
from ember.core.ops.shape import strided_positions
from ember.exporters.onnx_context import ExportContext, SymDim, meta, numpy_dtype, onnx_type
from ember.exporters.onnx_registry import converter
from ember.jit.graph import Node, Value

_INT64_MAX = int(np.iinfo(np.int64).max)
_SMALL_INTS = ("int8", "int16", "uint8")


def _compute(node: Node, *operands: Any) -> Any:
    """The (output, compute) dtypes the op's rule gives for these operands."""
    m = OPS[node.op].rule(*(meta(x) for x in operands), **node.kwargs)
    return m.dtype, (m.compute or m.dtype)


def _out(node: Node) -> Value:
    return node.outputs[0]


# -- elementwise unary ----------------------------------------------------------------------

_UNARY = {"neg": "Neg", "abs": "Abs", "sign": "Sign", "floor": "Floor", "ceil": "Ceil",
          "round": "Round", "exp": "Exp", "log": "Log", "sqrt": "Sqrt", "sin": "Sin",
          "cos": "Cos", "tan": "Tan", "tanh": "Tanh", "sigmoid": "Sigmoid", "erf": "Erf",
          "asin": "Asin", "acos": "Acos", "atan": "Atan", "reciprocal": "Reciprocal",
          "relu": "Relu"}


@converter(*UNARY_BY_RULE["same"], *UNARY_BY_RULE["float"])
def _unary(ctx: ExportContext, node: Node) -> Any:
    (x,) = node.args
    out_dtype, compute = _compute(node, x)
    op = node.op
    if not compute.is_floating_point:
        if op in ("floor", "ceil", "round", "trunc") or (op == "sign" and compute is dt.bool_):
            return ctx.name(x)  # integers are already whole
        if op == "relu":
            return ctx.op("Max", ctx.value(x), ctx.scalar(0, x.dtype))
        if x.dtype.name in _SMALL_INTS:  # onnxruntime lacks small-int kernels for these
            y = ctx.op(_UNARY[op], ctx.value(x, dt.int32))
            return ctx.cast(y, dt.int32, x.dtype)
    name = ctx.value(x, compute)
    if op in _UNARY:
        return ctx.op(_UNARY[op], name)
    if op == "trunc":
        return ctx.op("Mul", ctx.op("Sign", name), ctx.op("Floor", ctx.op("Abs", name)))
    if op == "log2":
        return ctx.op("Div", ctx.op("Log", name), ctx.scalar(math.log(2.0), compute))
    if op == "log1p":
        return ctx.op("Log", ctx.op("Add", name, ctx.scalar(1, compute)))
    if op == "expm1":
        return ctx.op("Sub", ctx.op("Exp", name), ctx.scalar(1, compute))
    if op == "rsqrt":
        return ctx.op("Reciprocal", ctx.op("Sqrt", name))
    raise ctx.unsupported(node, "no ONNX form")


@converter(*UNARY_BY_RULE["predicate"])
def _unary_bool(ctx: ExportContext, node: Node) -> Any:
    (x,) = node.args
    floating = x.dtype.is_floating_point
    if node.op == "logical_not":
        return ctx.op("Not", ctx.value(x, dt.bool_))
    if not floating:  # integers are never NaN or infinite
        const = node.op == "isfinite"
        return ctx.fill(ctx.shape(ctx.name(x)), const, dt.bool_)
    name = ctx.value(x)
    if node.op == "isnan":
        return ctx.op("IsNaN", name)
    if node.op == "isinf":
        return ctx.op("IsInf", name)
    return ctx.op("Not", ctx.op("Or", ctx.op("IsNaN", name), ctx.op("IsInf", name)))


@converter("bitwise_not")
def _bitwise_not(ctx: ExportContext, node: Node) -> Any:
    (x,) = node.args
    if x.dtype is dt.bool_:
        return ctx.op("Not", ctx.name(x))
    if ctx.opset < 18:
        raise ctx.unsupported(node, "bitwise ops on integers need opset 18 or newer")
    return ctx.op("BitwiseNot", ctx.name(x))


# -- elementwise binary ---------------------------------------------------------------------

_BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "pow": "Pow",
           "maximum": "Max", "minimum": "Min", "eq": "Equal", "lt": "Less",
           "le": "LessOrEqual", "gt": "Greater", "ge": "GreaterOrEqual", "logical_and": "And",
           "logical_or": "Or", "logical_xor": "Xor", "bitwise_and": "BitwiseAnd",
           "bitwise_or": "BitwiseOr", "bitwise_xor": "BitwiseXor"}
_BOOL_ARITH = {"add": "Or", "mul": "And", "maximum": "Or", "minimum": "And",
               "bitwise_and": "And", "bitwise_or": "Or", "bitwise_xor": "Xor"}


def _operands(ctx: ExportContext, a: Any, b: Any, compute: Any) -> tuple[str, str]:
    return ctx.operand(a, compute), ctx.operand(b, compute)


@converter(*_BINARY, "remainder", "floor_divide", "atan2", "ne", dynamic=True)
def _binary(ctx: ExportContext, node: Node) -> Any:
    (a, b), _ = ctx.args(node)
    static = tuple(x.traced if isinstance(x, SymDim) else x for x in (a, b))
    out_dtype, compute = _compute(node, *static)
    op = node.op
    if op in ("logical_and", "logical_or", "logical_xor"):
        compute = dt.bool_
    if compute is dt.bool_ and op in _BOOL_ARITH:
        return ctx.op(_BOOL_ARITH[op], *_operands(ctx, a, b, dt.bool_))
    if op.startswith("bitwise") and ctx.opset < 18:
        raise ctx.unsupported(node, "bitwise ops on integers need opset 18 or newer")
    widen = compute.name in _SMALL_INTS and not op.startswith("bitwise")
    work = dt.int32 if widen else compute
    x, y = _operands(ctx, a, b, work)
    if op in _BINARY:
        out = ctx.op(_BINARY[op], x, y)
    elif op == "ne":
        out = ctx.op("Not", ctx.op("Equal", x, y))
    elif op == "remainder":  # Python's sign rule: the divisor's sign
        if work.is_floating_point:
            out = ctx.op("Sub", x, ctx.op("Mul", ctx.op("Floor", ctx.op("Div", x, y)), y))
        else:
            out = ctx.op("Mod", x, y, fmod=0)
    elif op == "floor_divide":
        if work.is_floating_point:
            out = ctx.op("Floor", ctx.op("Div", x, y))
        else:  # exact: (x - x mod y) / y
            out = ctx.op("Div", ctx.op("Sub", x, ctx.op("Mod", x, y, fmod=0)), y)
    elif op == "atan2":
        out = _atan2(ctx, x, y, work)
    else:
        raise ctx.unsupported(node, "no ONNX form")
    if widen and out_dtype is not dt.bool_:
        out = ctx.cast(out, dt.int32, out_dtype)
    return out


def _atan2(ctx: ExportContext, y: str, x: str, dtype: Any) -> str:
    zero, pi = ctx.scalar(0, dtype), ctx.scalar(math.pi, dtype)
    base = ctx.op("Atan", ctx.op("Div", y, x))
    y_neg = ctx.op("Less", y, zero)
    shifted = ctx.op("Where", y_neg, ctx.op("Sub", base, pi), ctx.op("Add", base, pi))
    half = ctx.op("Where", y_neg, ctx.scalar(-math.pi / 2, dtype),
                  ctx.op("Where", ctx.op("Greater", y, zero), ctx.scalar(math.pi / 2, dtype),
                         zero))
    on_axis = ctx.op("Where", ctx.op("Equal", x, zero), half, shifted)
    return ctx.op("Where", ctx.op("Greater", x, zero), base, on_axis)


@converter("where", dynamic=True)
def _where(ctx: ExportContext, node: Node) -> Any:
    (cond, a, b), _ = ctx.args(node)
    static = [x.traced if isinstance(x, SymDim) else x for x in (a, b)]
    _, compute = _compute(node, cond, *static)
    return ctx.op("Where", ctx.value(cond, dt.bool_), ctx.operand(a, compute),
                  ctx.operand(b, compute))


@converter("clamp")
def _clamp(ctx: ExportContext, node: Node) -> Any:
    (x,) = node.args
    lo, hi = node.kwargs.get("min"), node.kwargs.get("max")
    _, compute = _compute(node, x)
    work = dt.int32 if compute.name in _SMALL_INTS else compute
    name = ctx.value(x, work)
    out = ctx.op("Clip", name, None if lo is None else ctx.scalar(lo, work),
                 None if hi is None else ctx.scalar(hi, work))
    return ctx.cast(out, work, compute)


@converter("cast")
def _cast(ctx: ExportContext, node: Node) -> Any:
    (x,) = node.args
    return ctx.value(x, node.kwargs["dtype"])


@converter("view_dtype")
def _view_dtype(ctx: ExportContext, node: Node) -> Any:
    # (ONNX has no operator that reinterprets an element's bits as another type; PyTorch's
    # exporter refuses Tensor.view(dtype) too)
    raise ctx.unsupported(node, "ONNX has no operator that reinterprets a tensor's bits as "
                                f"another dtype ({node.kwargs['dtype']})")


@converter("view_as_real", "conj_physical", "_fft_c2c", "_fft_r2c", "_fft_c2r")
def _complex(ctx: ExportContext, node: Node) -> Any:
    # (ONNX tensors have no complex element type that its operators compute with)
    raise ctx.unsupported(node, "ONNX has no complex tensors for it to compute on")


@converter("alias", "clone", "to_device")
def _identity(ctx: ExportContext, node: Node) -> Any:
    return ctx.name(node.args[0])


# -- reductions -------------------------------------------------------------------------------


def _axes(dims: Any, ndim: int) -> list[int] | None:
    if dims is None:
        return None
    if isinstance(dims, int):
        dims = (dims,)
    return [d % ndim if ndim else 0 for d in dims]


@converter("sum", "prod", "max", "min", "all", "any")
def _reduce(ctx: ExportContext, node: Node) -> Any:
    (x,) = node.args
    dims, keep = node.kwargs.get("dims"), bool(node.kwargs.get("keepdim", False))
    axes = _axes(dims, len(x.shape))
    if axes is not None and not axes or not x.shape:
        axes = list(range(len(x.shape)))
        if not axes:  # a 0-d tensor reduces to itself
            return ctx.value(x, _out(node).dtype)
    out_dtype = _out(node).dtype
    op = node.op
    if op in ("all", "any"):
        flag = ctx.cast(ctx.value(x, dt.bool_), dt.bool_, dt.int32)
        red = ctx.reduce("ReduceMin" if op == "all" else "ReduceMax", flag, axes, keep)
        return ctx.cast(red, dt.int32, dt.bool_)
    _, compute = _compute(node, x)
    work = compute
    if compute is dt.bool_ or compute.name in _SMALL_INTS:
        work = dt.int32
    name = ctx.value(x, work)
    red = ctx.reduce({"sum": "ReduceSum", "prod": "ReduceProd", "max": "ReduceMax",
                      "min": "ReduceMin"}[op], name, axes, keep)
    return ctx.cast(red, work, out_dtype)


@converter("argmax", "argmin")
def _argreduce(ctx: ExportContext, node: Node) -> Any:
    (x,) = node.args
    dim, keep = node.kwargs.get("dim"), bool(node.kwargs.get("keepdim", False))
    work = dt.int32 if x.dtype is dt.bool_ or x.dtype.name in _SMALL_INTS else x.dtype
    name = ctx.value(x, work)
    op = "ArgMax" if node.op == "argmax" else "ArgMin"
    if dim is None:
        flat = ctx.op("Reshape", name, ctx.ints([-1]))
        out = ctx.op(op, flat, axis=0, keepdims=0)
        if keep:
            out = ctx.op("Reshape", out, ctx.ints([1] * len(x.shape)))
        return out
    if not x.shape:
        return ctx.const(np.array(0, dtype=np.int64))
    return ctx.op(op, name, axis=dim % len(x.shape), keepdims=int(keep))


@converter("topk")
def _topk(ctx: ExportContext, node: Node) -> Any:
    """ONNX TopK gives values and indices; the op's kernel is the indices (its values are
    the `gather` that follows it)."""
    (x,) = node.args
    kw = node.kwargs
    work = dt.int32 if x.dtype.name in _SMALL_INTS else x.dtype
    k = ctx.const(np.array([kw["k"]], dtype=np.int64))
    _, indices = ctx.op("TopK", ctx.value(x, work), k, outputs=2, axis=kw["dim"],
                        largest=int(kw.get("largest", True)), sorted=1)
    return indices


@converter("cumsum")
def _cumsum(ctx: ExportContext, node: Node) -> Any:
    (x,) = node.args
    out_dtype = _out(node).dtype
    work = out_dtype
    name = ctx.value(x, work)
    if not x.shape:
        return name
    axis = ctx.const(np.array(node.kwargs["dim"] % len(x.shape), dtype=np.int64))
    return ctx.op("CumSum", name, axis)


# -- shapes and views ---------------------------------------------------------------------------


@converter("reshape", dynamic=True)
def _reshape(ctx: ExportContext, node: Node) -> Any:
    (x,), kw = ctx.args(node)
    return ctx.reshape(ctx.name(x), kw["shape"], ctx.dims(x))


@converter("permute")
def _permute(ctx: ExportContext, node: Node) -> Any:
    (x,) = node.args
    perm = list(node.kwargs["dims"])
    if perm == sorted(perm):
        return ctx.name(x)
    return ctx.op("Transpose", ctx.name(x), perm=perm)


@converter("strided_view")
def _strided_view(ctx: ExportContext, node: Node) -> Any:
    # (SHAPE family) a Gather of the flattened input at each element's position
    (x,) = node.args
    kw = node.kwargs
    pos = strided_positions(tuple(kw["shape"]), kw["steps"], kw["start"], tuple(x.shape))
    flat = ctx.op("Reshape", ctx.name(x), ctx.ints([-1]))
    return ctx.op("Gather", flat, ctx.const(pos), axis=0)


@converter("expand", dynamic=True)
def _expand(ctx: ExportContext, node: Node) -> Any:
    (x,), kw = ctx.args(node)
    shape = list(kw["shape"])
    dims = ctx.dims(x)
    lead = len(shape) - len(dims)
    target = []
    for i, s in enumerate(shape):
        j = i - lead
        if isinstance(s, int) and s == -1:
            target.append(1)  # keep the input's size (Expand broadcasts both ways)
        elif j >= 0 and dims[j] == s and (isinstance(s, SymDim) or s != 1):
            target.append(1)
        else:
            target.append(s)
    if all(t == 1 for t in target[lead:]) and not lead:
        return ctx.name(x)
    return ctx.op("Expand", ctx.name(x), ctx.shape_tensor(target))


@converter("flip")
def _flip(ctx: ExportContext, node: Node) -> Any:
    (x,) = node.args
    dims = [d % len(x.shape) for d in node.kwargs["dims"]] if x.shape else []
    if not dims:
        return ctx.name(x)
    n = len(dims)
    return ctx.op("Slice", ctx.name(x), ctx.ints([-1] * n), ctx.ints([-_INT64_MAX] * n),
                  ctx.ints(dims), ctx.ints([-1] * n))


@converter("tril", "triu")
def _trilu(ctx: ExportContext, node: Node) -> Any:
    (x,) = node.args
    k = ctx.const(np.array(node.kwargs.get("diagonal", 0), dtype=np.int64))
    work = x.dtype if x.dtype.name in ("float32", "float64", "int64", "bool") else \
        (dt.float32 if x.dtype.is_floating_point else dt.int64)
    out = ctx.op("Trilu", ctx.value(x, work), k, upper=int(node.op == "triu"))
    return ctx.cast(out, work, x.dtype)


# -- indexing ------------------------------------------------------------------------------------


def emit_getitem(ctx: ExportContext, data: str, dims: tuple, spec: tuple,
                 indices: list[Value]) -> str:
    """Index the ONNX tensor `data` (sizes `dims`) by a getitem `spec` (ember.core.ops.indexing)."""
    starts, ends, axes, steps = [], [], [], []
    squeeze: list[int] = []
    kept: list[tuple] = []  # the entries left after "int" ones: ("dim", size) | ("none",)
    #                         | ("tensor", k, size)
    d = 0
    for entry in spec:
        kind = entry[0]
        if kind == "none":
            kept.append(("none",))
            continue
        size = dims[d]
        if kind == "int":
            i = entry[1]
            starts.append(i)
            ends.append(i + 1)
            axes.append(d)
            steps.append(1)
            squeeze.append(d)
        elif kind == "slice":
            start, stop, step = entry[1], entry[2], entry[3]
            full = start == 0 and step == 1 and (stop == size or (
                isinstance(stop, int) and not isinstance(size, SymDim) and stop >= size))
            if not full:
                starts.append(start)
                ends.append(stop)
                axes.append(d)
                steps.append(step)
            kept.append(("dim",))
        elif kind == "tensor":
            kept.append(("tensor", entry[1], size))
        else:
            raise ValueError(f"unknown getitem index entry {entry!r}")
        d += 1
    out = data
    if axes:
        out = ctx.op("Slice", out, ctx.shape_tensor(starts), ctx.shape_tensor(ends),
                     ctx.ints(axes), ctx.ints(steps))
    if squeeze:
        out = ctx.squeeze(out, squeeze)
    nones = [j for j, e in enumerate(kept) if e[0] == "none"]
    if nones:
        out = ctx.unsqueeze(out, nones)
    tpos = [j for j, e in enumerate(kept) if e[0] == "tensor"]
    if not tpos:
        return out
    idx_names = []
    for j in tpos:
        _, k, size = kept[j]
        index = indices[k]
        name = ctx.value(index, dt.int64)
        known = ctx.constant(index)
        if known is None or (known < 0).any():  # negative indices count from the end
            size_t = ctx.scalar(size, dt.int64)
            name = ctx.op("Where", ctx.op("Less", name, ctx.scalar(0, dt.int64)),
                          ctx.op("Add", name, size_t), name)
        idx_names.append((name, len(index.shape)))
    if len(tpos) == 1:
        name, rank = idx_names[0]
        return ctx.op("Gather", out, name, axis=tpos[0])
    rank = max(r for _, r in idx_names)
    zero = None
    for name, _ in idx_names:  # the broadcast shape of every index, as zeros
        z = ctx.op("Mul", name, ctx.scalar(0, dt.int64))
        zero = z if zero is None else ctx.op("Add", zero, z)
    stacked = ctx.op("Concat", *[ctx.unsqueeze(ctx.op("Add", name, zero), [-1])
                                 for name, _ in idx_names], axis=-1)
    others = [j for j in range(len(kept)) if j not in tpos]
    perm = tpos + others
    moved = out if perm == sorted(perm) else ctx.op("Transpose", out, perm=perm)
    result = ctx.op("GatherND", moved, stacked)
    adjacent = tpos == list(range(tpos[0], tpos[0] + len(tpos)))
    if adjacent and tpos[0] > 0:  # PyTorch: the index dims go where the first one stood
        p = tpos[0]
        order = list(range(rank, rank + p)) + list(range(rank)) + \
            list(range(rank + p, rank + len(others)))
        result = ctx.op("Transpose", result, perm=order)
    return result


@converter("getitem", dynamic=True)
def _getitem(ctx: ExportContext, node: Node) -> Any:
    (x, *indices), kw = ctx.args(node)
    return emit_getitem(ctx, ctx.name(x), ctx.dims(x), kw["index"], list(indices))


@converter("setitem", dynamic=True)
def _setitem(ctx: ExportContext, node: Node) -> Any:
    (x, value, *indices), kw = ctx.args(node)
    accumulate = bool(kw.get("accumulate", False))
    if accumulate and ctx.opset < 16:
        raise ctx.unsupported(node, "index_put with accumulate=True needs opset 16 or newer")
    data = ctx.name(x)
    shape = ctx.shape(data)
    # the flat position of every element, indexed like the target: where the values go
    numel = ctx.op("ReduceProd", shape, keepdims=0)
    positions = ctx.op("Reshape", ctx.op("Range", ctx.scalar(0, dt.int64), numel,
                                         ctx.scalar(1, dt.int64)), shape)
    chosen = emit_getitem(ctx, positions, ctx.dims(x), kw["index"], list(indices))
    src = ctx.op("Expand", ctx.value(value, x.dtype), ctx.shape(chosen))
    flat = ctx.op("Reshape", data, ctx.ints([-1]))
    flat_pos = ctx.op("Reshape", chosen, ctx.ints([-1]))
    flat_src = ctx.op("Reshape", src, ctx.ints([-1]))
    out = ctx.op("ScatterElements", flat, flat_pos, flat_src, axis=0,
                 reduction="add" if accumulate else None)
    return ctx.op("Reshape", out, shape)


@converter("assign")
def _assign(ctx: ExportContext, node: Node) -> Any:
    dst, src = node.args
    name = ctx.value(src, dst.dtype)
    if tuple(src.shape) == tuple(dst.shape) and ctx.dims(src) == ctx.dims(dst):
        return name
    return ctx.op("Expand", name, ctx.shape(ctx.name(dst)))


@converter("cat")
def _cat(ctx: ExportContext, node: Node) -> Any:
    xs = node.args
    out_dtype = _out(node).dtype
    names = [ctx.value(x, out_dtype) for x in xs]
    if len(names) == 1:
        return names[0]
    return ctx.op("Concat", *names, axis=node.kwargs["dim"])


@converter("gather")
def _gather(ctx: ExportContext, node: Node) -> Any:
    x, index = node.args
    return ctx.op("GatherElements", ctx.name(x), ctx.name(index), axis=node.kwargs["dim"])


@converter("scatter", "scatter_add")
def _scatter(ctx: ExportContext, node: Node) -> Any:
    x, index, src = node.args
    add = node.op == "scatter_add"
    if add and ctx.opset < 16:
        raise ctx.unsupported(node, "scatter_add needs opset 16 or newer (ScatterElements "
                              "with reduction='add')")
    if tuple(index.shape) != tuple(src.shape):  # ONNX wants them equal: crop src
        n = len(index.shape)
        src_name = ctx.op("Slice", ctx.name(src), ctx.ints([0] * n), ctx.shape(ctx.name(index)),
                          ctx.ints(range(n)))
    else:
        src_name = ctx.name(src)
    return ctx.op("ScatterElements", ctx.name(x), ctx.name(index), src_name,
                  axis=node.kwargs["dim"], reduction="add" if add else None)


@converter("scatter_reduce")
def _scatter_reduce(ctx: ExportContext, node: Node) -> Any:
    """ScatterElements with reduction "mul" (opset 16), "max" or "min" (opset 18)."""
    x, index, src = node.args
    reduce = node.kwargs["reduce"]
    if ctx.opset < (16 if reduce == "prod" else 18):
        raise ctx.unsupported(node, f"scatter_reduce {reduce!r} needs opset "
                                    f"{16 if reduce == 'prod' else 18} or newer")
    src_name = ctx.name(src)
    if tuple(index.shape) != tuple(src.shape):  # ONNX wants them equal: crop src
        n = len(index.shape)
        src_name = ctx.op("Slice", src_name, ctx.ints([0] * n), ctx.shape(ctx.name(index)),
                          ctx.ints(range(n)))
    return ctx.op("ScatterElements", ctx.name(x), ctx.name(index), src_name,
                  axis=node.kwargs["dim"],
                  reduction={"prod": "mul", "amax": "max", "amin": "min"}[reduce])


@converter("index_select")
def _index_select(ctx: ExportContext, node: Node) -> Any:
    x, index = node.args
    name = ctx.name(index)
    if not index.shape:
        name = ctx.unsqueeze(name, [0])
    return ctx.op("Gather", ctx.name(x), name, axis=node.kwargs["dim"])


@converter("nonzero")
def _nonzero(ctx: ExportContext, node: Node) -> Any:
    (x,) = node.args
    work = dt.int32 if x.dtype.name in _SMALL_INTS else x.dtype
    return ctx.op("Transpose", ctx.op("NonZero", ctx.value(x, work)), perm=[1, 0])


# -- linear algebra --------------------------------------------------------------------------------


@converter("matmul")
def _matmul(ctx: ExportContext, node: Node) -> Any:
    a, b = node.args
    work = a.dtype
    if work.name in _SMALL_INTS:
        work = dt.int32
    out = ctx.op("MatMul", ctx.value(a, work), ctx.value(b, work))
    return ctx.cast(out, work, a.dtype)


@converter("einsum")
def _einsum(ctx: ExportContext, node: Node) -> Any:
    out_dtype = _out(node).dtype
    names = [ctx.value(x, out_dtype) for x in node.args]
    return ctx.op("Einsum", *names, equation=node.kwargs["equation"].replace(" ", ""))


# -- matrix factorizations (family: linalg) --


@converter("det")
def _det(ctx: ExportContext, node: Node) -> Any:
    (a,) = node.args
    return ctx.op("Det", ctx.value(a, a.dtype))


@converter("_linalg_slogdet", "_linalg_inv_ex", "_linalg_solve_ex", "_linalg_cholesky_ex",
           "_linalg_qr", "_geqrf", "_linalg_svd", "_linalg_eigh", "_linalg_eig",
           "_linalg_lu_factor_ex", "_linalg_ldl_factor_ex", "_linalg_ldl_solve",
           "_linalg_solve_triangular")
def _factorization(ctx: ExportContext, node: Node) -> Any:
    raise ctx.unsupported(node, "ONNX has no operator for this matrix factorization")

# -- end linalg --


# -- im2col / col2im as a one-hot (grouped) convolution -------------------------------------


def _one_hot_kernel(channels: int, kernel: tuple, dtype: Any) -> np.ndarray:
    k = math.prod(kernel)
    eye = np.eye(k, dtype=numpy_dtype(dtype)).reshape((k, 1) + tuple(kernel))
    return np.tile(eye, (channels, 1) + (1,) * len(kernel))


@converter("im2col")
def _im2col(ctx: ExportContext, node: Node) -> Any:
    if node.kind != "primitive":
        return NotImplemented  # the primitive inside has the normalized arguments
    (x,) = node.args
    if not x.dtype.is_floating_point:
        raise ctx.unsupported(node, "unfold (im2col) is exported as a convolution, which "
                              "ONNX defines for floating-point tensors only")
    kw = node.kwargs
    kernel = tuple(kw["kernel_size"])
    n = len(kernel)
    channels = x.shape[1]
    weight = ctx.const(_one_hot_kernel(channels, kernel, x.dtype))
    pads = list(kw["padding"]) * 2
    y = ctx.op("Conv", ctx.name(x), weight, kernel_shape=list(kernel),
               strides=list(kw["stride"]), pads=pads, dilations=list(kw["dilation"]),
               group=channels)
    return ctx.op("Reshape", y, ctx.ints([0, channels * math.prod(kernel), -1])
                  if n else ctx.ints([0, 0, -1]))


@converter("col2im")
def _col2im(ctx: ExportContext, node: Node) -> Any:
    if node.kind != "primitive":
        return NotImplemented
    (x,) = node.args
    if not x.dtype.is_floating_point:
        raise ctx.unsupported(node, "fold (col2im) is exported as a transposed convolution, "
                              "which ONNX defines for floating-point tensors only")
    kw = node.kwargs
    kernel, size = tuple(kw["kernel_size"]), tuple(kw["output_size"])
    dil, pad, stride = tuple(kw["dilation"]), tuple(kw["padding"]), tuple(kw["stride"])
    k = math.prod(kernel)
    channels = x.shape[1] // k
    blocks = [(s + 2 * p - d * (kk - 1) - 1) // st + 1
              for s, kk, d, p, st in zip(size, kernel, dil, pad, stride)]
    cols = ctx.op("Reshape", ctx.name(x), ctx.ints([0, channels * k] + blocks))
    weight = ctx.const(_one_hot_kernel(channels, kernel, x.dtype))
    # the transposed convolution covers the padded size; what the stride leaves over is
    # added as output padding, then the padding is cropped by `pads`
    covered = [(b - 1) * st + d * (kk - 1) + 1 for b, st, d, kk in zip(blocks, stride, dil,
                                                                       kernel)]
    extra = [s + 2 * p - c for s, p, c in zip(size, pad, covered)]
    if any(e < 0 or (e >= st and e >= d) for e, st, d in zip(extra, stride, dil)):
        raise ctx.unsupported(node, "this fold geometry has no ConvTranspose equivalent")
    return ctx.op("ConvTranspose", cols, weight, kernel_shape=list(kernel),
                  strides=list(stride), pads=list(pad) * 2, dilations=list(dil),
                  output_padding=extra, group=channels)


@converter("constant_pad")
def _constant_pad(ctx: ExportContext, node: Node) -> Any:
    (x,) = node.args
    pairs = node.kwargs["pad"]
    pads = [a for a, _ in pairs] + [b for _, b in pairs]
    value = node.kwargs.get("value", 0)
    return ctx.op("Pad", ctx.name(x), ctx.ints(pads), ctx.scalar(value, x.dtype),
                  mode="constant")


# -- creation ------------------------------------------------------------------------------------


@converter("full", dynamic=True)
def _full(ctx: ExportContext, node: Node) -> Any:
    _, kw = ctx.args(node)
    dtype = kw["dtype"]
    shape = list(kw["shape"])
    if not shape:
        return ctx.const(np.array(kw["fill_value"], dtype=numpy_dtype(dtype)))
    return ctx.fill(ctx.shape_tensor(shape), kw["fill_value"], dtype)


@converter("arange", dynamic=True)
def _arange(ctx: ExportContext, node: Node) -> Any:
    _, kw = ctx.args(node)
    dtype = kw["dtype"]
    start, end, step = kw["start"], kw["end"], kw["step"]
    if not any(isinstance(v, SymDim) for v in (start, end, step)):
        return ctx.const(np.arange(start, end, step, dtype=numpy_dtype(dtype)))
    work = dtype if dtype.name in ("float32", "float64", "int32", "int64") else dt.float64
    out = ctx.op("Range", ctx.scalar(start, work), ctx.scalar(end, work),
                 ctx.scalar(step, work))
    return ctx.cast(out, work, dtype)


def _random(ctx: ExportContext, op_type: str, shape: list, dtype: Any, **attrs: Any) -> str:
    work = dtype if dtype.name in ("float16", "float32", "float64") else dt.float32
    if any(isinstance(s, SymDim) for s in shape):
        like = ctx.fill(ctx.shape_tensor(shape), 0, work)
        out = ctx.op(op_type + "Like", like, dtype=onnx_type(work), **attrs)
    else:
        out = ctx.op(op_type, dtype=onnx_type(work), shape=[int(s) for s in shape], **attrs)
    return ctx.cast(out, work, dtype)


@converter("rand", "randn", dynamic=True)
def _rand(ctx: ExportContext, node: Node) -> Any:
    _, kw = ctx.args(node)
    dtype = kw["dtype"]
    op_type = "RandomUniform" if node.op == "rand" else "RandomNormal"
    return _random(ctx, op_type, list(kw["shape"]), dtype)


@converter("randint", dynamic=True)
def _randint(ctx: ExportContext, node: Node) -> Any:
    _, kw = ctx.args(node)
    low, high = kw["low"], kw["high"]
    u = _random(ctx, "RandomUniform", list(kw["shape"]), dt.float64, low=float(low),
                high=float(high))
    whole = ctx.op("Clip", ctx.op("Floor", u), ctx.scalar(low, dt.float64),
                   ctx.scalar(high - 1, dt.float64))
    return ctx.cast(whole, dt.float64, kw["dtype"])


@converter("randperm")
def _randperm(ctx: ExportContext, node: Node) -> Any:
    n = node.kwargs["n"]
    if n == 0:
        return ctx.const(np.zeros(0, dtype=numpy_dtype(node.kwargs["dtype"])))
    keys = ctx.op("RandomUniform", dtype=onnx_type(dt.float32), shape=[n])
    _, order = ctx.op("TopK", keys, ctx.ints([n]), outputs=2)
    return ctx.cast(order, dt.int64, node.kwargs["dtype"])


# -- composite ops ----------------------------------------------------------------------


def _weight_t(ctx: ExportContext, weight: Value) -> str:
    """`weight.T` for a MatMul: a transposed initializer when the weight is constant."""
    array = ctx.constant(weight)
    if array is not None:
        return ctx.const(np.ascontiguousarray(array.T), name=f"{weight.name}.T")
    return ctx.op("Transpose", ctx.name(weight), perm=[1, 0])


def emit_linear(ctx: ExportContext, x: Value, weight: Value, bias: Value | None) -> str:
    """`x @ weight.T + bias`: one Gemm for a 2-D input, else MatMul (+ Add)."""
    if len(x.shape) == 2:
        return ctx.op("Gemm", ctx.name(x), ctx.name(weight),
                      None if bias is None else ctx.name(bias), transB=1)
    out = ctx.op("MatMul", ctx.name(x), _weight_t(ctx, weight))
    return out if bias is None else ctx.op("Add", out, ctx.name(bias))


@converter("linear")
def _linear(ctx: ExportContext, node: Node) -> Any:
    a = ctx.call_args(node)
    x, weight, bias = a["input"], a["weight"], a["bias"]
    if len(weight.shape) != 2 or not len(x.shape) or x.dtype is not weight.dtype or \
            not x.dtype.is_floating_point:
        return NotImplemented
    return emit_linear(ctx, x, weight, bias)


def _ntuple(v: Any, n: int) -> list[int]:
    if isinstance(v, int):
        return [v] * n
    v = [int(i) for i in v]
    return v * n if len(v) == 1 else v


def emit_conv(ctx: ExportContext, x: str, rank: int, weight: str, bias: str | None,
              kernel: tuple, stride: Any, padding: Any, dilation: Any, groups: int,
              unbatched: bool = False) -> str:
    """A Conv node with PyTorch's padding (ints, 'valid' or 'same')."""
    n = len(kernel)
    stride, dilation = _ntuple(stride, n), _ntuple(dilation, n)
    if isinstance(padding, str):
        if padding == "valid":
            pads = [0] * (2 * n)
        else:  # 'same': the odd element on the right, as PyTorch
            total = [d * (k - 1) for k, d in zip(kernel, dilation)]
            pads = [t // 2 for t in total] + [t - t // 2 for t in total]
    else:
        pads = _ntuple(padding, n) * 2
    if unbatched:
        x = ctx.unsqueeze(x, [0])
    out = ctx.op("Conv", x, weight, bias, kernel_shape=list(kernel), strides=stride,
                 pads=pads, dilations=dilation, group=int(groups))
    return ctx.squeeze(out, [0]) if unbatched else out


@converter("conv1d", "conv2d", "conv3d")
def _conv(ctx: ExportContext, node: Node) -> Any:
    a = ctx.call_args(node)
    x, weight, bias = a["input"], a["weight"], a["bias"]
    n = len(weight.shape) - 2
    if not x.dtype.is_floating_point:
        return NotImplemented
    return emit_conv(ctx, ctx.name(x), n, ctx.name(weight),
                     None if bias is None else ctx.name(bias), tuple(weight.shape[2:]),
                     a["stride"], a["padding"], a["dilation"], a["groups"],
                     unbatched=len(x.shape) == n + 1)


def emit_conv_transpose(ctx: ExportContext, x: str, weight: str, bias: str | None,
                        kernel: tuple, stride: Any, padding: Any, output_padding: Any,
                        groups: int, dilation: Any, unbatched: bool = False) -> str:
    n = len(kernel)
    if unbatched:
        x = ctx.unsqueeze(x, [0])
    out = ctx.op("ConvTranspose", x, weight, bias, kernel_shape=list(kernel),
                 strides=_ntuple(stride, n), pads=_ntuple(padding, n) * 2,
                 output_padding=_ntuple(output_padding, n), dilations=_ntuple(dilation, n),
                 group=int(groups))
    return ctx.squeeze(out, [0]) if unbatched else out


@converter("conv_transpose1d", "conv_transpose2d", "conv_transpose3d")
def _conv_transpose(ctx: ExportContext, node: Node) -> Any:
    a = ctx.call_args(node)
    x, weight, bias = a["input"], a["weight"], a["bias"]
    if not x.dtype.is_floating_point:
        return NotImplemented
    return emit_conv_transpose(ctx, ctx.name(x), ctx.name(weight),
                               None if bias is None else ctx.name(bias),
                               tuple(weight.shape[2:]), a["stride"], a["padding"],
                               a["output_padding"], a["groups"], a["dilation"],
                               unbatched=len(x.shape) == len(weight.shape) - 1)


@converter("convolution")
def _convolution(ctx: ExportContext, node: Node) -> Any:
    a = ctx.call_args(node)
    x, weight, bias = a["input"], a["weight"], a["bias"]
    if not x.dtype.is_floating_point:
        return NotImplemented
    n = len(weight.shape) - 2
    bias_name = None if bias is None else ctx.name(bias)
    unbatched = len(x.shape) == n + 1
    if a["transposed"]:
        return emit_conv_transpose(ctx, ctx.name(x), ctx.name(weight), bias_name,
                                   tuple(weight.shape[2:]), a["stride"], a["padding"],
                                   a["output_padding"], a["groups"], a["dilation"], unbatched)
    return emit_conv(ctx, ctx.name(x), n, ctx.name(weight), bias_name, tuple(weight.shape[2:]),
                     a["stride"], a["padding"], a["dilation"], a["groups"], unbatched)


def _pool_common(a: dict, n: int) -> tuple[list, list, list]:
    kernel = _ntuple(a["kernel_size"], n)
    stride = a.get("stride")
    stride = kernel if stride is None or stride == [] or stride == () else _ntuple(stride, n)
    return kernel, stride, _ntuple(a.get("padding", 0), n)


@converter("max_pool1d", "max_pool2d", "max_pool3d")
def _max_pool(ctx: ExportContext, node: Node) -> Any:
    a = ctx.call_args(node)
    x = a["input"]
    n = int(node.op[-2])  # the spatial rank: max_pool3d -> 3
    if a["return_indices"] or not x.dtype.is_floating_point:
        return NotImplemented
    kernel, stride, pad = _pool_common(a, n)
    unbatched = len(x.shape) == n + 1
    name = ctx.unsqueeze(ctx.name(x), [0]) if unbatched else ctx.name(x)
    out = ctx.op("MaxPool", name, kernel_shape=kernel, strides=stride, pads=pad * 2,
                 dilations=_ntuple(a["dilation"], n), ceil_mode=int(bool(a["ceil_mode"])))
    return ctx.squeeze(out, [0]) if unbatched else out


@converter("avg_pool1d", "avg_pool2d", "avg_pool3d")
def _avg_pool(ctx: ExportContext, node: Node) -> Any:
    a = ctx.call_args(node)
    x = a["input"]
    n = int(node.op[-2])  # the spatial rank: max_pool3d -> 3
    if a.get("divisor_override") or not x.dtype.is_floating_point:
        return NotImplemented
    kernel, stride, pad = _pool_common(a, n)
    if a["ceil_mode"] and any(pad):
        return NotImplemented  # the windows that hang over differ between conventions
    unbatched = len(x.shape) == n + 1
    name = ctx.unsqueeze(ctx.name(x), [0]) if unbatched else ctx.name(x)
    out = ctx.op("AveragePool", name, kernel_shape=kernel, strides=stride, pads=pad * 2,
                 ceil_mode=int(bool(a["ceil_mode"])),
                 count_include_pad=int(bool(a["count_include_pad"])))
    return ctx.squeeze(out, [0]) if unbatched else out


@converter("adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d")
def _adaptive_avg_pool(ctx: ExportContext, node: Node) -> Any:
    a = ctx.call_args(node)
    x = a["input"]
    n = int(node.op[-2])  # the spatial rank: max_pool3d -> 3
    if not x.dtype.is_floating_point:
        return NotImplemented
    unbatched = len(x.shape) == n + 1
    dims = ctx.dims(x)[-n:]
    size = a["output_size"]
    sizes = [size] * n if isinstance(size, int) else list(size)
    if len(sizes) == 1:
        sizes = sizes * n
    sizes = [d if s is None else s for s, d in zip(sizes, dims)]
    name = ctx.unsqueeze(ctx.name(x), [0]) if unbatched else ctx.name(x)
    if all(s == 1 for s in sizes):
        out = ctx.op("GlobalAveragePool", name)
    elif all(isinstance(d, int) and d % s == 0 for d, s in zip(dims, sizes)):
        k = [d // s for d, s in zip(dims, sizes)]
        out = ctx.op("AveragePool", name, kernel_shape=k, strides=k)
    else:
        return NotImplemented  # uneven windows: the children (slices and means) export
    return ctx.squeeze(out, [0]) if unbatched else out


@converter("grid_sampler", "grid_sampler_2d", "grid_sampler_3d")
def _grid_sampler(ctx: ExportContext, node: Node) -> Any:
    """One GridSample node: 2-d from opset 16, N-d (and the new mode names) from 20;
    older opsets, or a 3-d grid before 20, export the decomposition."""
    a = ctx.call_args(node)
    x, grid = a["input"], a["grid"]
    n = len(x.shape) - 2
    if ctx.opset < 16 or (n != 2 and ctx.opset < 20) or not x.dtype.is_floating_point:
        return NotImplemented
    modes = ("linear", "nearest", "cubic") if ctx.opset >= 20 else \
        ("bilinear", "nearest", "bicubic")
    return ctx.op("GridSample", ctx.name(x), ctx.name(grid),
                  mode=modes[a["interpolation_mode"]],
                  padding_mode=("zeros", "border", "reflection")[a["padding_mode"]],
                  align_corners=int(bool(a["align_corners"])))


@converter("softmax", "log_softmax")
def _softmax(ctx: ExportContext, node: Node) -> Any:
    a = ctx.call_args(node)
    x = a["input"]
    dtype = a.get("dtype") or x.dtype
    name = ctx.value(x, dtype)
    if not x.shape:
        return NotImplemented
    axis = a["dim"] % len(x.shape)
    return ctx.op("Softmax" if node.op == "softmax" else "LogSoftmax", name, axis=axis)


@converter("logsumexp")
def _logsumexp(ctx: ExportContext, node: Node) -> Any:
    a = ctx.call_args(node)
    x = a["input"]
    if not x.shape or not x.dtype.is_floating_point:
        return NotImplemented
    axes = _axes(a["dim"], len(x.shape))
    if axes is not None and not axes:
        axes = list(range(len(x.shape)))
    name = ctx.name(x)
    peak = ctx.reduce("ReduceMax", name, axes, True)
    peak = ctx.op("Where", ctx.op("IsInf", peak), ctx.scalar(0, x.dtype), peak)  # all -inf
    total = ctx.reduce("ReduceSum", ctx.op("Exp", ctx.op("Sub", name, peak)), axes, True)
    out = ctx.op("Add", ctx.op("Log", total), peak)
    if not a["keepdim"]:
        out = ctx.squeeze(out, axes if axes is not None else list(range(len(x.shape))))
    return out


@converter("mean")
def _mean(ctx: ExportContext, node: Node) -> Any:
    a = ctx.call_args(node)
    x = a["input"]
    dtype = a.get("dtype") or x.dtype
    if not dtype.is_floating_point:
        return NotImplemented
    axes = _axes(a["dim"], len(x.shape))
    if not x.shape:
        return ctx.value(x, dtype)
    if axes is not None and not axes:
        axes = list(range(len(x.shape)))
    return ctx.reduce("ReduceMean", ctx.value(x, dtype), axes, bool(a["keepdim"]))


@converter("var")
def _var(ctx: ExportContext, node: Node) -> Any:
    a = ctx.call_args(node)
    x = a["input"]
    if not x.shape or not x.dtype.is_floating_point:
        return NotImplemented
    correction = a.get("correction")
    if correction is None:
        correction = 0 if a.get("unbiased") is False else 1
    axes = _axes(a["dim"], len(x.shape))
    if axes is None or not axes:
        axes = list(range(len(x.shape)))
    dims = ctx.dims(x)
    if any(isinstance(dims[i], SymDim) for i in axes):
        return NotImplemented
    count = math.prod(dims[i] for i in axes)
    name = ctx.name(x)
    centered = ctx.op("Sub", name, ctx.reduce("ReduceMean", name, axes, True))
    total = ctx.reduce("ReduceSum", ctx.op("Mul", centered, centered), axes,
                       bool(a["keepdim"]))
    denom = max(count - correction, 0)
    return ctx.op("Div", total, ctx.scalar(float(denom), x.dtype))


@converter("layer_norm")
def _layer_norm(ctx: ExportContext, node: Node) -> Any:
    a = ctx.call_args(node)
    x, weight, bias = a["input"], a["weight"], a["bias"]
    shape = a["normalized_shape"]
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if ctx.opset < 17 or not x.dtype.is_floating_point:
        return NotImplemented  # the children (means, rsqrt ...) export on older opsets
    scale = ctx.name(weight) if weight is not None else \
        ctx.const(np.ones(shape, dtype=numpy_dtype(x.dtype)))
    return emit_layer_norm(ctx, ctx.name(x), len(shape), scale,
                           None if bias is None else ctx.name(bias), float(a["eps"]))


def emit_layer_norm(ctx: ExportContext, x: str, n: int, scale: str, bias: str | None,
                    eps: float) -> str:
    return ctx.op("LayerNormalization", x, scale, bias, axis=-n, epsilon=eps)


@converter("constant_pad_nd")
def _constant_pad_nd(ctx: ExportContext, node: Node) -> Any:
    a = ctx.call_args(node)
    x = a["input"]
    pad = [int(p) for p in a["pad"]]
    if any(p < 0 for p in pad):
        return NotImplemented  # cropping: the children slice then pad
    if not any(pad):
        return ctx.name(x)
    ndim = len(x.shape)
    pairs = [(0, 0)] * ndim
    for i in range(len(pad) // 2):
        pairs[ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    pads = [p for p, _ in pairs] + [q for _, q in pairs]
    value = a["value"]
    if value is None:
        value = 0
    return ctx.op("Pad", ctx.name(x), ctx.ints(pads), ctx.scalar(value, x.dtype),
                  mode="constant")


# -- elementwise math (issue 16) ------------------------------------------------------------

_UNARY.update({"sinh": "Sinh", "cosh": "Cosh", "asinh": "Asinh", "acosh": "Acosh",
               "atanh": "Atanh"})
_MATH_UNARY = ("sinh", "cosh", "asinh", "acosh", "atanh", "exp2", "log10", "erfc", "erfinv",
               "lgamma", "digamma", "i0", "special_i0e", "special_i1", "special_i1e",
               "special_erfcx", "special_bessel_j0", "special_bessel_j1", "special_ndtri",
               "special_bessel_y0", "special_bessel_y1", "special_modified_bessel_i0",
               "special_modified_bessel_i1", "special_modified_bessel_k0",
               "special_modified_bessel_k1", "special_scaled_modified_bessel_k0",
               "special_scaled_modified_bessel_k1")


@converter(*_MATH_UNARY)
def _math_unary(ctx: ExportContext, node: Node) -> Any:
    """The hyperbolic functions, exp2, log10 and erfc in ONNX's operators; the special
    functions have no ONNX form."""
    (x,) = node.args
    _, compute = _compute(node, x)
    name = ctx.value(x, compute)
    op = node.op
    if op in _UNARY:
        return ctx.op(_UNARY[op], name)
    if op == "exp2":
        return ctx.op("Pow", ctx.scalar(2, compute), name)
    if op == "log10":
        return ctx.op("Div", ctx.op("Log", name), ctx.scalar(math.log(10.0), compute))
    if op == "erfc":  # (loses the far tail, where erf rounds to 1)
        return ctx.op("Sub", ctx.scalar(1, compute), ctx.op("Erf", name))
    raise ctx.unsupported(node, "no ONNX form (a special function ONNX does not define)")


@converter("signbit")
def _signbit(ctx: ExportContext, node: Node) -> Any:
    (x,) = node.args
    name = ctx.value(x)
    zero = ctx.scalar(0, x.dtype)
    # x < 0, or -0.0 (whose reciprocal is -inf); a NaN's sign bit is not visible in ONNX
    return ctx.op("Or", ctx.op("Less", name, zero),
                  ctx.op("Less", ctx.op("Div", ctx.scalar(1, x.dtype), name), zero))


@converter("fmod", "hypot", "nextafter", "igamma", "igammac", "gcd", "lcm",
           "bitwise_left_shift", "bitwise_right_shift", "polygamma", "special_zeta")
def _math_binary(ctx: ExportContext, node: Node) -> Any:
    if node.op in ("polygamma", "special_zeta"):
        raise ctx.unsupported(node, "no ONNX form (a special function ONNX does not define)")
    a, b = node.args
    out_dtype, compute = _compute(node, a, b)
    x, y = _operands(ctx, a, b, compute)
    if node.op == "fmod":  # C's remainder, the sign of the dividend
        return ctx.op("Mod", x, y, fmod=1)
    if node.op == "hypot":
        return ctx.op("Sqrt", ctx.op("Add", ctx.op("Mul", x, x), ctx.op("Mul", y, y)))
    if node.op.startswith("bitwise") and compute.name == "uint8" and ctx.opset >= 11:
        direction = "LEFT" if node.op == "bitwise_left_shift" else "RIGHT"
        return ctx.op("BitShift", x, y, direction=direction)
    raise ctx.unsupported(node, "no ONNX form")

__all__ = ["emit_getitem", "emit_linear", "emit_conv", "emit_conv_transpose",
           "emit_layer_norm"]
