"""ONNX export's driver: convert a graph recorded by `ember.jit.trace` into an ONNX model.

    ember.onnx.export(model, example_input, "model.onnx",
                      dynamic_axes={"input_0": {0: "batch"}, "output_0": {0: "batch"}})

How it works:

1. The model is traced (`ember.jit.trace`) in eval mode. The graph has primitive nodes
   (the dispatch table's ops), composite nodes (`conv2d`, `linear`, `softmax` ...) and
   module nodes (`Conv2d`, `LSTM` ...), the latter two with the ops they ran as children.
2. A registry (`onnx_registry`) maps op names to converters, functions
   `converter(ctx, node)` that emit ONNX nodes through an `ExportContext` (`onnx_context`)
   and return the ONNX names of the node's outputs; the built-in ones are in
   `onnx_converters` (ops) and `onnx_modules` (`ember.nn` modules), which this module
   imports so that the table is full before an export reads it.
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

import os
import shutil
import tempfile
import warnings
from collections.abc import Iterable
from typing import IO, Any

import ember
from ember.exporters import onnx_converters, onnx_modules  # noqa: F401 - fill the table
from ember.exporters.onnx_context import (
    Converter,
    DynamicAxes,
    ExportContext,
    SymDim,
    UnsupportedOperatorError,
    has_onnx_type,
    meta,
    numpy_dtype,
    onnx_type,
)
from ember.exporters.onnx_registry import (
    converter,
    converters,
    register_converter,
    unregister_converter,
)
from ember.jit.graph import Graph, Node, Value
from ember.jit.tracer import TracerWarning, trace

try:  # onnx is an optional dependency (ember[onnx])
    import onnx
    from onnx import helper, numpy_helper
except ImportError:  # pragma: no cover - exercised only without the extra
    onnx = None  # type: ignore[assignment]

__all__ = ["export", "UnsupportedOperatorError", "ExportContext", "SymDim", "converter",
           "register_converter", "unregister_converter", "converters", "DEFAULT_OPSET",
           "MIN_OPSET", "MAX_OPSET", "EXTERNAL_DATA_THRESHOLD",
           # helpers for writing converters, defined in onnx_context, importable here as ever
           "Converter", "meta", "numpy_dtype", "onnx_type"]

DEFAULT_OPSET = 17
"""The opset written when none is asked for (LayerNormalization is native from 17)."""
MIN_OPSET = 14
MAX_OPSET = 23
"""The newest opset checked against onnxruntime (1.31 runs opsets up to 23 / IR 11)."""
EXTERNAL_DATA_THRESHOLD = 2_000_000_000
"""Initializers larger than this in total (bytes) are saved as external data: protobuf
cannot serialize a message of 2 GiB or more. Tests lower it to exercise that path."""


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


def _analyse(fn: Any, inputs: tuple, base: Graph, axes: dict[int, dict[int, str]]) -> DynamicAxes:
    """Trace again with each dynamic axis grown, and fit what changed."""
    info = DynamicAxes()
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
        dynamic = _analyse(model, inputs, graph, input_axes) if input_axes else DynamicAxes()
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
        if name in outputs_of_nodes and name not in out_names and has_onnx_type(value.dtype) \
                and ctx._names.get(id(value)) == name:
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
