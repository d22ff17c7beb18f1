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
3. Dynamic axes (`onnx_trace`): the model is traced again with each dynamic axis grown
   (by 1 and by 3); the integers recorded in the ops' arguments (reshape targets, slice
   bounds ...) that change with it are fitted as `SymDim`s, linear functions of the axes'
   runtime sizes, which converters turn into shape computations (`Shape` -> `Gather` ->
   arithmetic). A graph whose ops change with an axis (Python control flow on a size) is
   refused.
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
from ember.atomic_write import atomic_write
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
from ember.exporters.onnx_trace import analyse, trace_root

try:  # onnx is an optional dependency (ember[onnx])
    import onnx
    from onnx import helper, numpy_helper
except ImportError:  # pragma: no cover - exercised only without the extra
    onnx = None  # type: ignore[assignment]

__all__ = ["export", "UnsupportedOperatorError", "ExportContext", "SymDim", "converter",
           "register_converter", "unregister_converter", "converters", "DEFAULT_OPSET",
           "MIN_OPSET", "MAX_OPSET", "LEGACY_MIN_OPSET", "EXTERNAL_DATA_THRESHOLD", "is_exporting",
           # helpers for writing converters, defined in onnx_context, importable here as ever
           "Converter", "meta", "numpy_dtype", "onnx_type"]

DEFAULT_OPSET = 17
"""The opset written when none is asked for (LayerNormalization is native from 17)."""
MIN_OPSET = 14
MAX_OPSET = 23
"""The newest opset checked against onnxruntime (1.31 runs opsets up to 23 / IR 11)."""
LEGACY_MIN_OPSET = 7
"""torch.onnx.export's lowest opset; asked for, opsets 7 to 13 are written as MIN_OPSET."""
EXTERNAL_DATA_THRESHOLD = 2_000_000_000
"""Initializers larger than this in total (bytes) are saved as external data: protobuf
cannot serialize a message of 2 GiB or more. Tests lower it to exercise that path."""


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
    if LEGACY_MIN_OPSET <= opset < MIN_OPSET:
        # PyTorch's TorchScript exporter still writes these, and programs ask for them;
        # ember's converters start at MIN_OPSET, which every current runtime reads
        warnings.warn(f"ember.onnx.export: opset_version {opset} is below the lowest opset "
                      f"ember writes; the model is exported with opset {MIN_OPSET}",
                      stacklevel=4)
        return MIN_OPSET
    if not LEGACY_MIN_OPSET <= opset <= MAX_OPSET:
        raise ValueError(f"ember.onnx.export: opset_version {opset} is not supported; ember "
                         f"writes opsets {MIN_OPSET} to {MAX_OPSET} (default {DEFAULT_OPSET})")
    return opset


_exporting = 0  # how many exports are tracing their model now (is_exporting)


def is_exporting() -> bool:
    """Whether a model is being traced for ONNX export (``torch.onnx.is_in_onnx_export``)."""
    return _exporting > 0


def to_model(model: Any, args: Any, input_names: list[str] | None = None,
             output_names: list[str] | None = None, dynamic_axes: dict | None = None,
             opset_version: int | None = None, export_params: bool = True,
             do_constant_folding: bool = True, training: str = "eval",
             keep_initializers_as_inputs: bool = False) -> Any:
    """Trace `model` on `args` and convert it to an `onnx.ModelProto` (not checked or
    written: see `export`). `training` is "eval", "train" (the modules are put in that
    mode while tracing) or "preserve"."""
    global _exporting
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
    if is_module and training != "preserve":
        model.train(training == "train")
    _exporting += 1
    try:
        graph = trace_root(model, inputs, check=True)
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
        dynamic = analyse(model, inputs, graph, input_axes) if input_axes else DynamicAxes()
    finally:
        _exporting -= 1
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
    if keep_initializers_as_inputs:  # listed as graph inputs too (their defaults)
        graph_inputs += [helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
                         for t in initializers]
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
        with atomic_write(path) as out:
            out.write(data)
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
           verbose: bool = False, training: str = "eval",
           keep_initializers_as_inputs: bool = False) -> Any:
    """Export `model` to ONNX: see `ember.onnx.export`."""
    proto = to_model(model, args, input_names, output_names, dynamic_axes, opset_version,
                     export_params, do_constant_folding, training, keep_initializers_as_inputs)
    save(proto, f)
    if verbose:
        print(helper.printable_graph(proto.graph))
    return proto
