"""ONNX export: convert a graph recorded by `ember.jit.trace` into an ONNX model.

    ember.onnx.export(model, example_input, "model.onnx",
                      dynamic_axes={"input_0": {0: "batch"}, "output_0": {0: "batch"}})

How it works:

1. The model is traced (`ember.jit.trace`) in eval mode. The graph has primitive nodes
   (the dispatch table's ops), composite nodes (`conv2d`, `linear`, `softmax` ...) and
   module nodes (`Conv2d`, `LSTM` ...), the latter two with the ops they ran as children.
2. A registry maps op names to converters, functions `converter(ctx, node)` that emit ONNX
   nodes through an `ExportContext` and return the ONNX names of the node's outputs.
   Conversion walks the graph: a module or composite node whose converter accepts it is
   emitted whole and its children are skipped; otherwise (no converter, or the converter
   returns `NotImplemented`) its children are converted. Every primitive needs a converter,
   or the export fails with `UnsupportedOperatorError`, naming the op and the module path
   where it was called. Plugins add converters through the `ember_onnx_converters` hook;
   `register_converter` adds one in-process. Either overrides a built-in one.
3. Dynamic axes: the model is traced again with each dynamic axis grown (by 1 and by 3);
   the integers recorded in the ops' arguments (reshape targets, slice bounds ...) that
   change with it are fitted as `SymDim`s, linear functions of the axes' runtime sizes,
   which converters turn into shape computations (`Shape` -> `Gather` -> arithmetic). A
   graph whose ops change with an axis (Python control flow on a size) is refused.
4. With `do_constant_folding`, every primitive whose inputs are all constants (parameters,
   buffers, captured tensors, or earlier folded values) is evaluated with ember at export
   time and stored as an initializer.
5. The model is checked with `onnx.checker.check_model(full_check=True)` and written
   atomically (a temporary file, then `os.replace`); initializers above
   `EXTERNAL_DATA_THRESHOLD` bytes go to ONNX's external-data format (`<file>.data`).
"""

from __future__ import annotations

import inspect
import math
import os
import shutil
import tempfile
import warnings
from collections.abc import Callable, Iterable
from typing import IO, Any

import numpy as np

import ember
from ember.core import dtype as dt
from ember.jit.graph import Graph, Node, Value
from ember.jit.tracer import TracerWarning, _leaves, _map, _run_primitive, trace

try:  # onnx is an optional dependency (ember[onnx])
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError:  # pragma: no cover - exercised only without the extra
    onnx = None  # type: ignore[assignment]

__all__ = ["export", "UnsupportedOperatorError", "ExportContext", "SymDim", "converter",
           "register_converter", "unregister_converter", "converters", "DEFAULT_OPSET",
           "MIN_OPSET", "MAX_OPSET", "EXTERNAL_DATA_THRESHOLD"]

DEFAULT_OPSET = 17
"""The opset written when none is asked for (LayerNormalization is native from 17)."""
MIN_OPSET = 14
MAX_OPSET = 23
"""The newest opset checked against onnxruntime (1.31 runs opsets up to 23 / IR 11)."""
EXTERNAL_DATA_THRESHOLD = 2_000_000_000
"""Initializers larger than this in total (bytes) are saved as external data: protobuf
cannot serialize a message of 2 GiB or more. Tests lower it to exercise that path."""
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


class _Dynamic:
    """What varies with the dynamic axes, found by tracing at other sizes."""

    def __init__(self) -> None:
        self.symbols: dict[str, list[tuple[int, int]]] = {}  # axis name -> (input, dim)s
        self.base: dict[str, int] = {}  # axis name -> traced size
        self.leaves: dict[int, dict[tuple, SymDim]] = {}  # id(node) -> path -> dim
        self.shapes: dict[int, tuple] = {}  # id(value) -> dims with SymDims
        self.unaligned: set[int] = set()  # ids of nodes whose children vary with an axis


# -- the converter registry -------------------------------------------------------------

Converter = Callable[["ExportContext", Node], Any]
_BUILTIN: dict[str, Converter] = {}
_USER: dict[str, Converter] = {}
_loaded = False


def converter(*names: str, dynamic: bool = False) -> Callable[[Converter], Converter]:
    """Register a built-in converter for the ops `names` (decorator).

    `dynamic=True` says the converter handles `SymDim`s in its node's arguments (sizes
    that follow a dynamic axis); other converters refuse such nodes with a clear error.
    """
    def wrap(fn: Converter) -> Converter:
        if dynamic:
            fn.ember_onnx_dynamic = True  # type: ignore[attr-defined]
        for name in names:
            _BUILTIN[name] = fn
        return fn
    return wrap


def register_converter(op: str, fn: Converter, *, dynamic: bool = False) -> None:
    """Add (or override) the ONNX converter of `op` (a primitive, composite or module
    class name) for this process. `fn(ctx, node)` emits ONNX nodes with `ctx.op(...)` and
    returns the ONNX names of the node's outputs (or `NotImplemented` to decline)."""
    if dynamic:
        fn.ember_onnx_dynamic = True  # type: ignore[attr-defined]
    _USER[op] = fn


def unregister_converter(op: str) -> None:
    """Remove a converter added with `register_converter`."""
    _USER.pop(op, None)


def converters() -> dict[str, Converter]:
    """Every converter in force: built-in, then plugins' (`ember_onnx_converters`), then
    those added with `register_converter`; a later source overrides an earlier one."""
    global _loaded
    if not _loaded:
        from ember.exporters import onnx_converters, onnx_modules  # noqa: F401 - registers

        _loaded = True
    table = dict(_BUILTIN)
    from ember.core.plugins import registry

    table.update(registry.onnx_converters())
    table.update(_USER)
    return table


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
                 export_params: bool, fold: bool, dynamic: _Dynamic,
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
        array = np.array(t.detach().numpy(force=True), dtype=numpy_dtype(value.dtype),
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
            self._cache[key] = self.const(np.array(tensor.detach().numpy(force=True)),
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
        return np.array(tensor.detach().numpy(force=True)) if self.export_params else None

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
            if self.dynamic.leaves.get(id(node)) and not getattr(conv, "ember_onnx_dynamic",
                                                                 False):
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
                v.dtype.name not in _DTYPE_NAMES for v in node.outputs):
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


# -- dynamic axes -----------------------------------------------------------------------------


def _grow(inputs: tuple, where: list[tuple[int, int]], delta: int) -> tuple:
    """The example inputs with each (input, axis) in `where` longer by `delta` (the first
    slice repeated), so the values stay valid (token ids, masks ...)."""
    out = list(inputs)
    for i, axis in where:
        x = out[i]
        if x.shape[axis] == 0:
            raise ValueError(f"dynamic_axes: input {i} has size 0 along axis {axis}; trace "
                             "with a non-empty example")
        out[i] = ember.cat([x] + [x.narrow(axis, 0, 1)] * delta, axis)
    return tuple(out)


def _flat_leaves(x: Any, path: tuple, out: dict) -> None:
    if isinstance(x, (tuple, list)):
        out[path + ("#len",)] = len(x)
        for i, v in enumerate(x):
            _flat_leaves(v, path + (i,), out)
    elif isinstance(x, dict):
        out[path + ("#keys",)] = tuple(x)
        for k, v in x.items():
            _flat_leaves(v, path + (k,), out)
    elif isinstance(x, Value):
        pass
    else:
        out[path] = x


def _node_leaves(node: Node) -> dict:
    out: dict = {}
    _flat_leaves(node.args, ("args",), out)
    _flat_leaves(node.kwargs, ("kwargs",), out)
    return out


def _align(a: list[Node], b: list[Node], pairs: list, unaligned: set[int]) -> bool:
    if len(a) != len(b) or any(x.kind != y.kind or x.op != y.op or
                               len(x.outputs) != len(y.outputs) for x, y in zip(a, b)):
        return False
    for x, y in zip(a, b):
        pairs.append((x, y))
        if not _align(x.children, y.children, [], set()):
            unaligned.add(id(x))
        else:
            _align(x.children, y.children, pairs, unaligned)
    return True


def _analyse(fn: Any, inputs: tuple, base: Graph, axes: dict[int, dict[int, str]]) -> _Dynamic:
    """Trace again with each dynamic axis grown, and fit what changed."""
    info = _Dynamic()
    for i, spec in axes.items():
        for axis, symbol in spec.items():
            info.symbols.setdefault(symbol, []).append((i, axis))
            size = inputs[i].shape[axis]
            if info.base.setdefault(symbol, size) != size:
                raise ValueError(f"dynamic_axes: the axes named {symbol!r} have different sizes "
                                 f"in the example inputs ({info.base[symbol]} and {size})")
    samples: dict[tuple, Graph] = {}

    def sample(grown: dict[str, int]) -> Graph:
        new = inputs
        for symbol, delta in grown.items():
            new = _grow(new, info.symbols[symbol], delta)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", TracerWarning)
                return _trace_root(fn, new)
        except Exception as err:
            sizes = ", ".join(f"{s!r} = {info.base[s] + d}" for s, d in grown.items())
            raise RuntimeError(f"dynamic_axes: the model failed when traced with {sizes}: "
                               f"{type(err).__name__}: {err}. Mark the axis dynamic on every "
                               "input whose size must follow it.") from err

    names = sorted(info.symbols)
    for symbol in names:
        for delta in (1, 3):
            samples[((symbol, delta),)] = sample({symbol: delta})
    if len(names) > 1:
        samples[tuple((s, 1) for s in names)] = sample({s: 1 for s in names})

    # per sample: base node id -> its twin, and base value id -> twin value
    node_maps: dict[tuple, dict[int, Node]] = {}
    value_maps: dict[tuple, dict[int, Value]] = {}
    for key, graph in samples.items():
        pairs: list = []
        if not _align(base.nodes, graph.nodes, pairs, info.unaligned):
            grown = ", ".join(f"{s!r}" for s, _ in key)
            raise RuntimeError(f"dynamic_axes: the traced graph changes when the axis {grown} "
                               "changes size (Python control flow depends on it), so it cannot "
                               "be exported with that axis dynamic")
        node_maps[key] = {id(x): y for x, y in pairs}
        values = {id(x): y for x, y in zip(base.inputs, graph.inputs)}
        for x, y in pairs:
            for vx, vy in zip(x.outputs, y.outputs):
                values.setdefault(id(vx), vy)
        value_maps[key] = values

    def fit(v0: Any, others: dict[tuple, Any]) -> SymDim | None:
        if all(v == v0 for v in others.values()):
            return None
        if not isinstance(v0, int) or isinstance(v0, bool) or any(
                not isinstance(v, int) or isinstance(v, bool) for v in others.values()):
            return SymDim(None, 0, v0 if isinstance(v0, int) else 0)
        coef = {}
        for symbol in names:
            v1, v3 = others.get(((symbol, 1),)), others.get(((symbol, 3),))
            if v1 is None or v3 is None or v3 - v0 != 3 * (v1 - v0):
                return SymDim(None, 0, v0)
            coef[symbol] = v1 - v0
        if len(names) > 1:
            joint = others.get(tuple((s, 1) for s in names))
            if joint is None or joint - v0 != sum(coef.values()):
                return SymDim(None, 0, v0)
        terms = tuple((s, c) for s, c in sorted(coef.items()) if c)
        return SymDim(terms, v0 - sum(c * info.base[s] for s, c in terms), v0)

    for node in (n for top in base.nodes for n in top.walk()):
        twins = {key: m[id(node)] for key, m in node_maps.items() if id(node) in m}
        if len(twins) != len(samples):
            continue  # inside an unaligned node
        base_leaves = _node_leaves(node)
        twin_leaves = {key: _node_leaves(t) for key, t in twins.items()}
        found = {}
        for path, v0 in base_leaves.items():
            dim = fit(v0, {k: tl.get(path) for k, tl in twin_leaves.items()})
            if dim is not None:
                if path[-1] in ("#len", "#keys"):
                    found[path[:-1]] = SymDim(None, 0, 0)
                else:
                    found[path] = dim
        if any(set(tl) != set(base_leaves) for tl in twin_leaves.values()):
            found[("args",)] = SymDim(None, 0, 0)
        if found:
            info.leaves[id(node)] = found

    all_values = list(base.inputs) + [v for top in base.nodes for n in top.walk()
                                      for v in n.outputs]
    for value in all_values:
        twins = {key: m[id(value)] for key, m in value_maps.items() if id(value) in m}
        if len(twins) != len(samples):
            continue
        if any(len(t.shape) != len(value.shape) for t in twins.values()):
            info.shapes[id(value)] = tuple(SymDim(None, 0, s) for s in value.shape)
            continue
        dims = []
        changed = False
        for axis, s in enumerate(value.shape):
            dim = fit(s, {k: t.shape[axis] for k, t in twins.items()})
            changed |= dim is not None
            dims.append(s if dim is None else dim)
        if changed:
            info.shapes[id(value)] = tuple(dims)
    return info


# -- building the model ---------------------------------------------------------------------


def _value_info(name: str, dtype: Any, dims: Iterable[Any], names: dict[int, str] | None = None
                ) -> Any:
    shape: list[Any] = []
    for axis, d in enumerate(dims):
        if names and axis in names:
            shape.append(names[axis])
        elif isinstance(d, SymDim):
            shape.append(d.symbol())  # None: an unknown size
        else:
            shape.append(int(d))
    return helper.make_tensor_value_info(name, onnx_type(dtype), shape)


def _dead_code(nodes: list, outputs: set[str]) -> list:
    """Drop nodes whose outputs nobody uses."""
    live = set(outputs)
    kept = []
    for node in reversed(nodes):
        if any(o in live for o in node.output):
            kept.append(node)
            live.update(i for i in node.input if i)
    return kept[::-1]


class _Root(ember.nn.Module):
    """Holds the exported model, so that the model's own call is a module node too (the
    tracer records submodules only) and a module converter can map it whole."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.m = model

    def forward(self, *args: Any) -> Any:
        return self.m(*args)


def _trace_root(model: Any, inputs: tuple, check: bool = False) -> Graph:
    """Trace `model` (a module through `_Root`), with `_Root`'s prefix removed from
    parameter names and module paths. `check`: replay the trace and warn if it does not
    reproduce the outputs (see `ember.jit.trace`)."""
    if not isinstance(model, ember.nn.Module):
        return trace(model, inputs, check_trace=check).graph
    graph = trace(_Root(model), inputs, check_trace=check).graph

    def strip(name: str) -> str:
        return "" if name == "m" else (name[2:] if name.startswith("m.") else name)

    for value in graph.constants.values():
        if value.kind == "param":
            value.name = strip(value.name)
    graph.constants = {v.name: v for v in graph.constants.values()}
    for top in graph.nodes:
        for node in top.walk():
            node.scope = strip(node.scope)
    return graph


def _normalize_axes(dynamic_axes: dict | None, inputs: list[str], outputs: list[str]
                    ) -> dict[str, dict[int, str]]:
    if not dynamic_axes:
        return {}
    out: dict[str, dict[int, str]] = {}
    for name, axes in dynamic_axes.items():
        if name not in inputs and name not in outputs:
            raise ValueError(f"dynamic_axes: {name!r} is neither an input nor an output name "
                             f"(inputs {inputs}, outputs {outputs})")
        if isinstance(axes, dict):
            out[name] = {int(a): str(s) for a, s in axes.items()}
        elif isinstance(axes, (list, tuple)):
            out[name] = {int(a): f"{name}_dynamic_axes_{k + 1}" for k, a in enumerate(axes)}
        else:
            raise TypeError(f"dynamic_axes[{name!r}] must be a dict {{axis: name}} or a list "
                            f"of axes, got {type(axes).__name__}")
    return out


def _check_opset(opset: int | None) -> int:
    opset = DEFAULT_OPSET if opset is None else int(opset)
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise ValueError(f"ember.onnx.export: opset_version {opset} is not supported; ember "
                         f"writes opsets {MIN_OPSET} to {MAX_OPSET} (default {DEFAULT_OPSET})")
    return opset


def to_model(model: Any, args: Any, input_names: list[str] | None = None,
             output_names: list[str] | None = None, dynamic_axes: dict | None = None,
             opset_version: int | None = None, export_params: bool = True,
             do_constant_folding: bool = True) -> Any:
    """Trace `model` on `args` and convert it to an `onnx.ModelProto` (not checked or
    written: see `export`)."""
    if onnx is None:
        raise ImportError("ember.onnx needs the onnx package: pip install 'ember[onnx]'")
    opset = _check_opset(opset_version)
    inputs = args if isinstance(args, tuple) else \
        (tuple(args) if isinstance(args, list) else (args,))
    for i, x in enumerate(inputs):
        if not isinstance(x, ember.Tensor):
            raise TypeError(f"ember.onnx.export: args must be tensors; argument {i} is a "
                            f"{type(x).__name__}")
    is_module = isinstance(model, ember.nn.Module)
    modes = [(m, m.training) for m in model.modules()] if is_module else []
    if is_module:
        model.eval()
    try:
        graph = _trace_root(model, inputs, check=True)
        n_out = len(graph.output_values())
        in_names = list(input_names or [])
        if len(in_names) > len(inputs):
            raise ValueError(f"ember.onnx.export: {len(in_names)} input_names given for "
                             f"{len(inputs)} inputs")
        in_names += [f"input_{i}" for i in range(len(in_names), len(inputs))]
        out_names = list(output_names or [])
        if len(out_names) > n_out:
            raise ValueError(f"ember.onnx.export: {len(out_names)} output_names given for "
                             f"{n_out} outputs")
        out_names += [f"output_{i}" for i in range(len(out_names), n_out)]
        if len(set(in_names + out_names)) != len(in_names) + len(out_names):
            raise ValueError(f"ember.onnx.export: input and output names must be unique, got "
                             f"{in_names} and {out_names}")
        axes = _normalize_axes(dynamic_axes, in_names, out_names)
        for name, spec in axes.items():
            rank = len(inputs[in_names.index(name)].shape) if name in in_names else \
                len(graph.output_values()[out_names.index(name)].shape)
            for a in spec:
                if not -rank <= a < rank:
                    raise ValueError(f"dynamic_axes: axis {a} of {name!r} is out of range for "
                                     f"a tensor of rank {rank}")
            axes[name] = {a % rank: s for a, s in spec.items()}
        input_axes = {in_names.index(n): spec for n, spec in axes.items() if n in in_names}
        dynamic = _analyse(model, inputs, graph, input_axes) if input_axes else _Dynamic()
    finally:
        for m, mode in modes:
            m.training = mode
    ctx = ExportContext(graph, opset, converters(), export_params=export_params,
                        fold=do_constant_folding, dynamic=dynamic, input_names=in_names)
    for node in graph.nodes:
        ctx.convert(node)

    # outputs: rename the producing node's output where possible, else Identity
    out_values = graph.output_values()
    sources = [ctx.name(v) for v in out_values]
    produced = {o: node for node in ctx.nodes for o in node.output}
    renames: dict[str, str] = {}
    taken: set[str] = set()
    for src, dst in zip(sources, out_names):
        if src in produced and src not in taken and src not in in_names:
            renames[src] = dst
            taken.add(src)
        else:
            ctx.nodes.append(helper.make_node("Identity", [src], [dst], name=f"/{dst}"))
    for node in ctx.nodes:
        for i, name in enumerate(node.input):
            if name in renames:
                node.input[i] = renames[name]
        for i, name in enumerate(node.output):
            if name in renames:
                node.output[i] = renames[name]
    nodes = _dead_code(ctx.nodes, set(out_names))
    used = {i for node in nodes for i in node.input} | set(out_names)

    graph_inputs = []
    for value, name in zip(graph.inputs, in_names):
        graph_inputs.append(_value_info(name, value.dtype, ctx.dims(value), axes.get(name)))
    for name, value in ctx.param_inputs:
        if name in used:
            graph_inputs.append(_value_info(name, value.dtype, value.shape))
    graph_outputs = [_value_info(name, v.dtype, ctx.dims(v), axes.get(name))
                     for v, name in zip(out_values, out_names)]
    initializers = [numpy_helper.from_array(arr, name) for name, arr in ctx.initializers.items()
                    if name in used]
    value_info = []
    outputs_of_nodes = {o for node in nodes for o in node.output}
    for name, value in ctx._values.items():
        if name in outputs_of_nodes and name not in out_names and value.dtype.name in \
                _DTYPE_NAMES and ctx._names.get(id(value)) == name:
            value_info.append(_value_info(name, value.dtype, ctx.dims(value)))
    title = type(model).__name__ if is_module else getattr(model, "__name__", "graph")
    onnx_graph = helper.make_graph(nodes, title, graph_inputs, graph_outputs,
                                   initializer=initializers, value_info=value_info)
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v)
                                                 for d, v in ctx.domains.items()]
    return helper.make_model(onnx_graph, opset_imports=opsets,
                             ir_version=helper.find_min_ir_version_for(opsets),
                             producer_name="ember", producer_version=ember.__version__)


def _initializer_bytes(model: Any) -> int:
    return sum(len(t.raw_data) or (numpy_helper.to_array(t).nbytes)
               for t in model.graph.initializer)


def save(model: Any, f: str | os.PathLike | IO[bytes]) -> None:
    """Check `model` (`onnx.checker.check_model(full_check=True)`) and write it to `f`
    atomically; external data (`<f>.data`) when its initializers exceed
    `EXTERNAL_DATA_THRESHOLD` bytes. Nothing is written when the check fails."""
    external = _initializer_bytes(model) > EXTERNAL_DATA_THRESHOLD
    if not isinstance(f, (str, os.PathLike)):
        if external:
            raise ValueError("ember.onnx.export: this model's initializers exceed "
                             f"{EXTERNAL_DATA_THRESHOLD} bytes and need ONNX's external-data "
                             "format: pass a file path, not a file object")
        onnx.checker.check_model(model, full_check=True)
        f.write(model.SerializeToString())
        return
    path = os.path.abspath(os.fspath(f))
    folder = os.path.dirname(path)
    if not external:
        onnx.checker.check_model(model, full_check=True)
        data = model.SerializeToString()
        fd, tmp = tempfile.mkstemp(prefix=".ember-onnx-", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        return
    # external data: write both files into a private folder next to the target, check the
    # result there (the checker reads the data file), then move the data and the model
    location = os.path.basename(path) + ".data"
    work = tempfile.mkdtemp(prefix=".ember-onnx-", dir=folder)
    try:
        staged = os.path.join(work, os.path.basename(path))
        onnx.save_model(model, staged, save_as_external_data=True, all_tensors_to_one_file=True,
                        location=location, size_threshold=1024)
        onnx.checker.check_model(staged, full_check=True)
        os.replace(os.path.join(work, location), os.path.join(folder, location))
        os.replace(staged, path)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def export(model: Any, args: Any, f: str | os.PathLike | IO[bytes],
           input_names: list[str] | None = None, output_names: list[str] | None = None,
           dynamic_axes: dict | None = None, opset_version: int | None = None,
           export_params: bool = True, do_constant_folding: bool = True,
           verbose: bool = False) -> Any:
    """Export `model` to ONNX: see `ember.onnx.export`."""
    proto = to_model(model, args, input_names, output_names, dynamic_axes, opset_version,
                     export_params, do_constant_folding)
    save(proto, f)
    if verbose:
        print(helper.printable_graph(proto.graph))
    return proto
