"""What an ONNX converter works with: `ExportContext`, the graph being built and the helpers
that emit nodes into it, and the types they speak (`SymDim` sizes, dtype mappings,
`UnsupportedOperatorError`).

This module sits below the converters (`onnx_converters`, `onnx_modules`, plugins') and
the registry (`onnx_registry`), which import it, and below the driver (`onnx`), which
builds one context per export and walks the traced graph through it. It imports none of
them: the converter table reaches it as an argument.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

import ember
from ember.core import dtype as dt
from ember.core.host import host_array
from ember.jit.graph import Graph, Node, Value
from ember.jit.tracer import _leaves, _map, _run_primitive

try:  # onnx is an optional dependency (ember[onnx]); the driver says so on export
    from onnx import TensorProto, helper, numpy_helper
except ImportError:  # pragma: no cover - exercised only without the extra
    TensorProto = helper = numpy_helper = None  # type: ignore[assignment]

__all__ = ["ExportContext", "SymDim", "DynamicAxes", "UnsupportedOperatorError", "Converter",
           "mark_dynamic", "handles_dynamic", "onnx_type", "numpy_dtype", "has_onnx_type",
           "meta", "FOLD_LIMIT"]

FOLD_LIMIT = 1 << 16
"""Constant folding never makes a tensor larger than this many elements unless its
inputs already were (it would bloat the file: `expand`, `full` ...)."""

_RANDOM_OPS = frozenset({"rand", "randn", "randint", "randperm"})


class UnsupportedOperatorError(RuntimeError):
    """An op of the traced graph has no ONNX converter (or its converter refused it)."""

    def __init__(self, op: str, scope: str, reason: str | None = None) -> None:
        self.op = op
        self.scope = scope
        where = scope if scope else "the top-level forward"
        detail = reason or ("ember.onnx has no converter for it; register one with "
                            f"ember.onnx.register_converter({op!r}, fn) or through a "
                            "plugin's ember_onnx_converters hook")
        super().__init__(f"Exporting the operator {op!r} to ONNX is not supported (called in "
                         f"{where}); {detail}")


# -- dtypes ---------------------------------------------------------------------------

_DTYPE_NAMES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
                "float32", "float64")


def onnx_type(dtype: Any) -> int:
    """The ONNX `TensorProto` element type of an ember dtype."""
    return {
        "bool": TensorProto.BOOL, "uint8": TensorProto.UINT8, "int8": TensorProto.INT8,
        "int16": TensorProto.INT16, "int32": TensorProto.INT32, "int64": TensorProto.INT64,
        "float16": TensorProto.FLOAT16, "bfloat16": TensorProto.BFLOAT16,
        "float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE,
    }[dtype.name]


def numpy_dtype(dtype: Any) -> np.dtype:
    """The NumPy dtype that holds an ember dtype's values on the host."""
    if dtype.name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(dtype.name)


def has_onnx_type(dtype: Any) -> bool:
    """Whether an ember dtype has an ONNX element type (`onnx_type`)."""
    return dtype.name in _DTYPE_NAMES


# -- symbolic dimensions ----------------------------------------------------------------


class SymDim:
    """A size that depends on dynamic axes: ``const + sum(coef * size(axis))``.

    `traced` is its value in the exported trace. `terms` is None when the size did not
    vary linearly with the axes (such a size can only be used where a converter does not
    need its value).
    """

    __slots__ = ("terms", "const", "traced")

    def __init__(self, terms: tuple[tuple[str, int], ...] | None, const: int,
                 traced: int) -> None:
        self.terms = terms
        self.const = const
        self.traced = traced

    @property
    def linear(self) -> bool:
        return self.terms is not None

    def _shift(self, k: int) -> SymDim:
        return SymDim(self.terms, self.const + k, self.traced + k)

    def __add__(self, k: int) -> SymDim:
        if not isinstance(k, int):
            return NotImplemented
        return self._shift(k)

    __radd__ = __add__

    def __sub__(self, k: int) -> SymDim:
        if not isinstance(k, int):
            return NotImplemented
        return self._shift(-k)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, SymDim) and self.terms is not None
                and self.terms == other.terms and self.const == other.const)

    def __hash__(self) -> int:
        return hash((self.terms, self.const))

    def symbol(self) -> str | None:
        """The axis name when this size is exactly one dynamic axis."""
        if self.terms is not None and len(self.terms) == 1 and self.terms[0][1] == 1 \
                and self.const == 0:
            return self.terms[0][0]
        return None

    def __repr__(self) -> str:
        if self.terms is None:
            return f"SymDim(?={self.traced})"
        parts = [(s if c == 1 else f"{c}*{s}") for s, c in self.terms]
        if self.const or not parts:
            parts.append(str(self.const))
        return "SymDim(" + " + ".join(parts) + ")"


class DynamicAxes:
    """What varies with the dynamic axes, found by the driver tracing at other sizes."""

    def __init__(self) -> None:
        self.symbols: dict[str, list[tuple[int, int]]] = {}  # axis name -> (input, dim)s
        self.base: dict[str, int] = {}  # axis name -> traced size
        self.leaves: dict[int, dict[tuple, SymDim]] = {}  # id(node) -> path -> dim
        self.shapes: dict[int, tuple] = {}  # id(value) -> dims with SymDims
        self.unaligned: set[int] = set()  # ids of nodes whose children vary with an axis


# -- converters -----------------------------------------------------------------------------

Converter = Callable[["ExportContext", Node], Any]
"""An export converter: `fn(ctx, node)` emits ONNX nodes for `node` and returns the ONNX
names of `node.outputs` (or `NotImplemented` to decline)."""


def mark_dynamic(fn: Converter) -> Converter:
    """Say that `fn` handles `SymDim`s in its node's arguments (sizes that follow a dynamic
    axis); the context refuses such nodes to other converters with a clear error."""
    fn.ember_onnx_dynamic = True  # type: ignore[attr-defined]
    return fn


def handles_dynamic(fn: Converter) -> bool:
    """Whether `fn` was marked with `mark_dynamic`."""
    return getattr(fn, "ember_onnx_dynamic", False)


# -- the export context -------------------------------------------------------------------


class _Meta:
    """A Value seen by an op's shape/dtype rule (which reads shape, dtype, ndim, numel)."""

    def __init__(self, value: Value) -> None:
        self.shape = tuple(value.shape)
        self.dtype = value.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def numel(self) -> int:
        return math.prod(self.shape)


def meta(x: Any) -> Any:
    """`x` as an op rule sees it (Values become shape/dtype records; scalars stay)."""
    return _Meta(x) if isinstance(x, Value) else x


class ExportContext:
    """What a converter works with: the graph being built and helpers to emit nodes.

    The essentials for a converter `fn(ctx, node)`:

    - `ctx.name(value)`: the ONNX name of a tensor argument (a `Value` in `node.args`);
    - `ctx.op(op_type, *inputs, outputs=1, domain="", **attributes)`: emit a node, get its
      output name(s); NumPy arrays among the inputs become constants;
    - `ctx.const(array)`, `ctx.ints([...])`, `ctx.scalar(value, dtype)`: constants;
    - `ctx.fill(shape, value, dtype)`: a tensor of a computed shape filled with a value;
    - `ctx.cast(name, src_dtype, dst_dtype)`, `ctx.reduce(...)`, `ctx.reshape(...)`;
    - `ctx.args(node)` / `ctx.call_args(node)`: the node's arguments, with `SymDim`s for
      sizes that follow a dynamic axis; `ctx.dims(value)`: a value's sizes likewise;
    - `ctx.constant(value)`: a constant value's NumPy array (None if computed at run time);
    - `ctx.unsupported(node, reason)`: the error to raise for what cannot be exported.

    Attributes:
        opset: the ONNX opset being written.
        scope: the module path of the node being converted.
    """

    def __init__(self, graph: Graph, opset: int, registry: dict[str, Converter], *,
                 export_params: bool, fold: bool, dynamic: DynamicAxes,
                 input_names: list[str]) -> None:
        self.graph = graph
        self.opset = opset
        self.registry = registry
        self.export_params = export_params
        self.fold = fold
        self.dynamic = dynamic
        self.scope = ""
        self.nodes: list[Any] = []
        self.initializers: dict[str, np.ndarray] = {}
        self.param_inputs: list[tuple[str, Value]] = []
        self.domains: dict[str, int] = {}
        self._names: dict[int, str] = {}
        self._values: dict[str, Value] = {}  # ONNX name -> the Value it holds
        self._folded: dict[int, tuple[Any, str]] = {}  # id(value) -> (tensor, name hint)
        self._arrays: dict[int, np.ndarray] = {}
        self._used: set[str] = set()
        self._small: dict[tuple, str] = {}
        self._cache: dict[tuple, Any] = {}
        self._counter = 0
        self.current: Node | None = None  # the node being converted
        for value, name in zip(graph.inputs, input_names):
            self._names[id(value)] = name
            self._values[name] = value
            self._used.add(name)
        self._params = {id(v.tensor): v for v in graph.constants.values()}

    # -- names and constants ------------------------------------------------------------
    def fresh(self, hint: str) -> str:
        """A new unique ONNX name built from `hint`."""
        self._counter += 1
        base = f"{self.scope}/{hint}" if self.scope else f"/{hint}"
        name = f"{base}_{self._counter}"
        self._used.add(name)
        return name

    def _unique(self, name: str) -> str:
        if name not in self._used:
            self._used.add(name)
            return name
        k = 1
        while f"{name}.{k}" in self._used:
            k += 1
        self._used.add(f"{name}.{k}")
        return f"{name}.{k}"

    def name(self, value: Value) -> str:
        """The ONNX name holding `value` (a constant is written as an initializer the first
        time it is used)."""
        found = self._names.get(id(value))
        if found is not None:
            return found
        array = self.constant(value)
        if array is not None:
            hint = value.name if value.kind in ("param", "const") else \
                self._folded[id(value)][1]
            name = self._unique(hint)
            self.initializers[name] = array
        elif value.kind == "param":  # export_params=False: parameters are graph inputs
            name = self._unique(value.name)
            self.param_inputs.append((name, value))
        else:
            raise RuntimeError(f"ONNX export: internal error: %{value.name} is used before "
                               "the node that computes it was converted")
        self._names[id(value)] = name
        self._values[name] = value
        return name

    def bind(self, value: Value, name: str) -> None:
        """Say that the ONNX tensor `name` holds `value`."""
        self._names[id(value)] = name
        self._values.setdefault(name, value)

    def is_bound(self, value: Value) -> bool:
        return id(value) in self._names or self.constant(value) is not None

    def tensor_of(self, value: Value) -> Any:
        """The ember tensor of a constant value (parameter, captured tensor, folded), or
        None when the value is computed at run time."""
        if value.kind == "param" and self.export_params or value.kind == "const":
            return value.tensor
        folded = self._folded.get(id(value))
        return None if folded is None else folded[0]

    def constant(self, value: Value) -> np.ndarray | None:
        """The NumPy value of a constant `value`, or None when it is computed at run time."""
        array = self._arrays.get(id(value))
        if array is not None:
            return array
        t = self.tensor_of(value)
        if t is None:
            return None
        array = np.array(host_array(t.detach()), dtype=numpy_dtype(value.dtype),
                         copy=True)
        self._arrays[id(value)] = array
        return array

    def param(self, tensor: Any, name: str) -> str:
        """The ONNX name of a module's parameter or buffer `tensor` (by its Value when the
        trace saw it; else a new initializer called `name`)."""
        value = self._params.get(id(tensor))
        if value is not None:
            return self.name(value)
        key = ("param", id(tensor))
        if key not in self._cache:
            self._cache[key] = self.const(np.array(host_array(tensor.detach())),
                                          name=name)
        return self._cache[key]

    def param_value(self, tensor: Any) -> Value | None:
        """The graph Value of a module's parameter or buffer, if the trace saw it."""
        return self._params.get(id(tensor))

    def param_array(self, tensor: Any) -> np.ndarray | None:
        """A module parameter's values when it is exported as a constant, else None."""
        value = self._params.get(id(tensor))
        if value is not None:
            return self.constant(value)
        return np.array(host_array(tensor.detach())) if self.export_params else None

    def const(self, array: Any, name: str | None = None, dtype: Any = None) -> str:
        """An initializer holding `array` (small arrays are shared)."""
        arr = np.asarray(array, dtype=None if dtype is None else numpy_dtype(dtype))
        if arr.dtype == np.float64 and dtype is None and not isinstance(array, np.ndarray):
            arr = arr.astype(np.float32)  # a bare Python float: float32, as ember's default
        key = None
        if arr.size <= 16 and name is None:
            key = (arr.dtype.str, arr.shape, arr.tobytes())
            found = self._small.get(key)
            if found is not None:
                return found
        out = self._unique(name) if name else self.fresh("Constant")
        self.initializers[out] = arr
        if key is not None:
            self._small[key] = out
        return out

    def ints(self, values: Iterable[int]) -> str:
        """A 1-D int64 constant."""
        return self.const(np.array(list(values), dtype=np.int64))

    def scalar(self, value: Any, dtype: Any) -> str:
        """A 0-D constant of ember dtype `dtype` (a `SymDim` becomes a computed scalar)."""
        if isinstance(value, SymDim):
            flat = self.op("Reshape", self.dim_tensor(value), self.ints([]))
            return self.cast(flat, dt.int64, dtype)
        return self.const(np.array(value, dtype=numpy_dtype(dtype)))

    # -- emitting nodes -------------------------------------------------------------------
    def op(self, op_type: str, *inputs: Any, outputs: int = 1, domain: str = "",
           **attrs: Any) -> Any:
        """Emit one ONNX node; returns its output name (a list when `outputs` > 1).

        Inputs are ONNX names, Values, NumPy arrays (become constants) or None (an
        omitted optional input). Attributes are passed to `onnx.helper.make_node`.
        """
        names = []
        for x in inputs:
            if x is None:
                names.append("")
            elif isinstance(x, Value):
                names.append(self.name(x))
            elif isinstance(x, np.ndarray):
                names.append(self.const(x))
            else:
                names.append(x)
        outs = [self.fresh(op_type) for _ in range(outputs)]
        if domain:
            self.domains.setdefault(domain, 1)
        attrs = {k: v for k, v in attrs.items() if v is not None}
        self.nodes.append(helper.make_node(op_type, names, outs, name=outs[0], domain=domain
                                           or None, **attrs))
        return outs[0] if outputs == 1 else outs

    def cast(self, name: str, src: Any, to: Any) -> str:
        """`name` (of ember dtype `src`) as ember dtype `to` (no node when they agree)."""
        if src is to or src == to:
            return name
        return self.op("Cast", name, to=onnx_type(to))

    def fill(self, shape: str, value: Any, dtype: Any) -> str:
        """A tensor of ember dtype `dtype` filled with `value`, of the shape held by the
        1-D int64 tensor `shape` (`ConstantOfShape`)."""
        return self.op("ConstantOfShape", shape,
                       value=numpy_helper.from_array(np.array([value], dtype=numpy_dtype(dtype))))

    def value(self, x: Value, dtype: Any = None) -> str:
        """The ONNX name of `x`, cast to `dtype` when given."""
        name = self.name(x)
        return name if dtype is None else self.cast(name, x.dtype, dtype)

    def operand(self, x: Any, dtype: Any) -> str:
        """A tensor, Python scalar or `SymDim` operand as an ONNX name of ember dtype
        `dtype`."""
        if isinstance(x, Value):
            return self.value(x, dtype)
        return self.scalar(x, dtype)

    def unsupported(self, node: Node, reason: str) -> UnsupportedOperatorError:
        """The error to raise when `node` cannot be exported, with `reason`."""
        return UnsupportedOperatorError(node.op, node.scope, reason)

    # -- node arguments ----------------------------------------------------------------------
    def args(self, node: Node) -> tuple[tuple, dict]:
        """`node.args` and `node.kwargs`, with `SymDim`s where an integer follows a dynamic
        axis."""
        leaves = self.dynamic.leaves.get(id(node))
        if not leaves:
            return node.args, node.kwargs

        def sub(x: Any, path: tuple) -> Any:
            if path in leaves:
                return leaves[path]
            if isinstance(x, tuple):
                return tuple(sub(v, path + (i,)) for i, v in enumerate(x))
            if isinstance(x, list):
                return [sub(v, path + (i,)) for i, v in enumerate(x)]
            if isinstance(x, dict):
                return {k: sub(v, path + (k,)) for k, v in x.items()}
            return x
        return sub(node.args, ("args",)), sub(node.kwargs, ("kwargs",))

    def call_args(self, node: Node, fn: Callable | None = None) -> dict[str, Any]:
        """The arguments of a composite's (or a module's forward) call by parameter name,
        defaults included."""
        args, kwargs = self.args(node)
        target = fn if fn is not None else (node.fn if node.fn is not None
                                            else node.module.forward)
        bound = inspect.signature(target).bind(*args, **kwargs)
        bound.apply_defaults()
        return dict(bound.arguments)

    # -- shapes ----------------------------------------------------------------------------
    def dims(self, value: Value) -> tuple:
        """The sizes of `value`: ints, and `SymDim`s for sizes that follow dynamic axes."""
        return self.dynamic.shapes.get(id(value), tuple(value.shape))

    def is_static(self, value: Value) -> bool:
        return not any(isinstance(d, SymDim) for d in self.dims(value))

    def shape(self, name: str) -> str:
        """`Shape(name)` (shared between uses)."""
        key = ("shape", name)
        if key not in self._cache:
            self._cache[key] = self.op("Shape", name)
        return self._cache[key]

    def _symbol_size(self, symbol: str) -> str:
        key = ("symbol", symbol)
        if key not in self._cache:
            i, axis = self.dynamic.symbols[symbol][0]
            saved, self.scope = self.scope, ""
            shape = self.shape(self.name(self.graph.inputs[i]))
            self._cache[key] = self.op("Gather", shape, self.ints([axis]), axis=0)
            self.scope = saved
        return self._cache[key]

    def dim_tensor(self, d: Any) -> str:
        """A 1-D int64 tensor [d] (computed from the inputs' shapes for a `SymDim`)."""
        if not isinstance(d, SymDim):
            return self.ints([d])
        if not d.linear:
            raise UnsupportedOperatorError(
                self.current.op if self.current is not None else "dynamic_axes", self.scope,
                f"a size traced as {d.traced} changes with the "
                "dynamic axes in a way the exporter cannot express (not linear in the axis "
                "sizes); export with static shapes or trace the model at another size")
        key = ("dim", d.terms, d.const)
        if key not in self._cache:
            out = None
            for symbol, coef in d.terms or ():
                term = self._symbol_size(symbol)
                if coef != 1:
                    term = self.op("Mul", term, self.ints([coef]))
                out = term if out is None else self.op("Add", out, term)
            if d.const or out is None:
                out = self.ints([d.const]) if out is None else \
                    self.op("Add", out, self.ints([d.const]))
            self._cache[key] = out
        return self._cache[key]

    def shape_tensor(self, entries: Iterable[Any]) -> str:
        """A 1-D int64 tensor of `entries` (ints and `SymDim`s)."""
        entries = list(entries)
        if not any(isinstance(e, SymDim) for e in entries):
            return self.ints(entries)
        parts: list[str] = []
        run: list[int] = []
        for e in entries:
            if isinstance(e, SymDim):
                if run:
                    parts.append(self.ints(run))
                    run = []
                parts.append(self.dim_tensor(e))
            else:
                run.append(int(e))
        if run:
            parts.append(self.ints(run))
        return parts[0] if len(parts) == 1 else self.op("Concat", *parts, axis=0)

    def reshape(self, name: str, target: Iterable[Any], in_dims: tuple = ()) -> str:
        """`Reshape(name)` to `target` (ints and `SymDim`s), copying a size from the input
        (0) or inferring one (-1) where that avoids computing it."""
        target = list(target)
        dyn = [i for i, s in enumerate(target) if isinstance(s, SymDim)]
        if not dyn:
            if 0 in target:  # an empty tensor: 0 means 0, not "copy"
                return self.op("Reshape", name, self.ints(target), allowzero=1)
            return self.op("Reshape", name, self.ints(target))
        if 0 not in target:
            for i in dyn:
                if i < len(in_dims) and in_dims[i] == target[i]:
                    target[i] = 0
            left = [i for i, s in enumerate(target) if isinstance(s, SymDim)]
            if len(left) == 1:
                target[left[0]] = -1
        return self.op("Reshape", name, self.shape_tensor(target))

    def reduce(self, op_type: str, name: str, axes: list[int] | None, keepdims: bool) -> str:
        """A Reduce* node over `axes` (None: all), with the axes as an input or attribute as
        the opset wants."""
        as_input = op_type == "ReduceSum" or self.opset >= 18
        if axes is None:
            return self.op(op_type, name, keepdims=int(keepdims))
        if as_input:
            return self.op(op_type, name, self.ints(axes), keepdims=int(keepdims))
        return self.op(op_type, name, axes=list(axes), keepdims=int(keepdims))

    def unsqueeze(self, name: str, axes: list[int]) -> str:
        return self.op("Unsqueeze", name, self.ints(axes))

    def squeeze(self, name: str, axes: list[int]) -> str:
        return self.op("Squeeze", name, self.ints(axes))

    # -- the walk ---------------------------------------------------------------------------
    def convert(self, node: Node) -> None:
        """Convert one node: whole if its converter accepts it, else its children."""
        conv = self.registry.get(node.op)
        if node.kind == "primitive":
            if self._fold(node):
                return
            if conv is None:
                raise UnsupportedOperatorError(node.op, node.scope)
            if not self._apply(conv, node):
                raise UnsupportedOperatorError(node.op, node.scope, "its converter declined "
                                               "these arguments")
            return
        if conv is not None and (node.kind != "module" or self._closed(node)):
            if self._apply(conv, node):
                return
        if id(node) in self.dynamic.unaligned:
            raise UnsupportedOperatorError(
                node.op, node.scope, "the ops it runs change with the size of a dynamic axis "
                "(Python control flow on a size) and no converter maps it whole")
        for child in node.children:
            self.convert(child)

    def _apply(self, conv: Converter, node: Node) -> bool:
        saved, saved_node = self.scope, self.current
        self.scope, self.current = node.scope, node
        try:
            if self.dynamic.leaves.get(id(node)) and not handles_dynamic(conv):
                if node.kind != "primitive":
                    return False  # let the children show what is dynamic
                raise UnsupportedOperatorError(
                    node.op, node.scope, "its arguments change with the size of a dynamic "
                    "axis and its converter handles static sizes only")
            try:
                result = conv(self, node)
            except UnsupportedOperatorError:
                raise
            except Exception as err:
                raise RuntimeError(f"ONNX export: converting {node.kind} {node.op!r} (called in "
                                   f"{node.scope or 'the top-level forward'}) failed: "
                                   f"{type(err).__name__}: {err}") from err
            if result is NotImplemented:
                return False
            if result is not None:
                names = [result] if isinstance(result, str) else list(result)
                if len(names) != len(node.outputs):
                    raise RuntimeError(f"ONNX export: the converter of {node.op!r} returned "
                                       f"{len(names)} outputs; the node has "
                                       f"{len(node.outputs)}")
                for value, name in zip(node.outputs, names):
                    self.bind(value, name)
            for value in node.outputs:
                if not self.is_bound(value):
                    raise RuntimeError(f"ONNX export: the converter of {node.op!r} did not "
                                       f"produce output %{value.name}")
            return True
        finally:
            self.scope, self.current = saved, saved_node

    def _closed(self, node: Node) -> bool:
        """Whether a module call's ops use only its positional tensor arguments (keyword
        arguments of a module call are not recorded; a converter would miss them)."""
        produced: set[int] = set()
        consumed: list[Value] = []
        for n in node.walk():
            if n is not node:
                consumed.extend(n.inputs)
                produced.update(id(v) for v in n.outputs)
        given = {id(v) for v in node.inputs}
        return all(id(v) in produced or id(v) in given or v.kind in ("param", "const")
                   for v in consumed)

    def _fold(self, node: Node) -> bool:
        """Evaluate a primitive on constant inputs now (constant folding)."""
        if not self.fold or node.op in _RANDOM_OPS or self.dynamic.leaves.get(id(node)) \
                or not node.outputs:
            return False
        tensors = {}
        size_in = 0
        for v in node.inputs:
            t = self.tensor_of(v)
            if t is None:
                return False
            tensors[id(v)] = t
            size_in += math.prod(v.shape)
        size_out = sum(math.prod(v.shape) for v in node.outputs)
        if size_out > max(FOLD_LIMIT, size_in) or any(
                not has_onnx_type(v.dtype) for v in node.outputs):
            return False

        def get(x: Any) -> Any:
            return tensors[id(x)] if isinstance(x, Value) else x

        with ember.no_grad():
            out = _run_primitive(node, _map(node.args, get), _map(node.kwargs, get), None)
        results = [out] if isinstance(out, ember.Tensor) else _leaves(out)
        first = next((v for v in node.inputs if v.kind in ("param", "const")), None)
        hint = f"{first.name}.{node.op}" if first is not None else \
            f"{node.scope}/{node.op}_folded"
        for value, t in zip(node.outputs, results):
            self._folded[id(value)] = (t, hint)
        return True

