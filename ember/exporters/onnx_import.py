"""ONNX import's driver (public API: `ember.onnx.load`): an ONNX model becomes an
`ember.nn.Module` that runs the graph node by node with ember ops.

Loading is all-or-nothing: the file is parsed and checked, every opset is checked against
what the converters know, and every node (in subgraphs too) is matched to a converter
before anything is built, so a bad model raises one clear error and returns nothing.
Initializers become parameters (floating point, trainable) and buffers (the others),
named after the initializers; `Constant` nodes, and the nodes that only depend on them,
are evaluated once at load (constant folding of shape inputs) and kept as non-persistent
buffers, so they follow `.to(device)` and stay out of `state_dict`.
"""

from __future__ import annotations

import collections
import keyword
import os
import re
from collections.abc import Callable
from typing import IO, Any

import numpy as np

import ember
from ember import nn
from ember.exporters import (  # noqa: F401 - the converter modules enter the registry
    onnx_import_attention,
    onnx_import_cast,
    onnx_import_grid,
    onnx_import_math,
    onnx_import_ml,
    onnx_import_nn,
    onnx_import_quant,
    onnx_import_resize,
    onnx_import_rnn,
    onnx_import_sequence,
    onnx_import_shape,
    onnx_import_spectral,
    onnx_import_strings,
    onnx_import_training,
    onnx_registry,
)
from ember.exporters.onnx_import_context import (
    MAX_IMPORT_OPSET,
    ImportContext,
    OnnxLoadError,
    UnsupportedOnnxOpError,
    ember_dtype,
    from_array,
)

__all__ = ["load", "OnnxModule", "read_model"]

_FLOATS = ("float16", "bfloat16", "float32", "float64")


def _onnx() -> Any:
    try:
        import onnx
    except ImportError as err:  # pragma: no cover - the extra is installed in CI
        raise ImportError("ember.onnx.load needs the onnx package: pip install "
                          "'ember[onnx]'") from err
    return onnx


def read_model(f: Any) -> Any:
    """An `onnx.ModelProto` from a path, bytes, a binary file or a ModelProto, checked
    with `onnx.checker`; `OnnxLoadError` if it is not a valid ONNX model."""
    model, where = _parse(f)
    bad = _check(model, where)
    if bad is not None:
        raise bad
    return model


def _parse(f: Any) -> tuple[Any, str]:
    """The ModelProto (not yet checked), and how to name it in errors."""
    onnx = _onnx()
    if isinstance(f, onnx.ModelProto):
        model, where = f, "the ModelProto"
    else:
        where = os.fspath(f) if isinstance(f, (str, os.PathLike)) else "the data"
        try:
            if isinstance(f, (str, os.PathLike)):
                if not os.path.isfile(f):
                    raise FileNotFoundError(f"ember.onnx.load: no such file: {where!r}")
                model = onnx.load(os.fspath(f))  # also reads external data beside it
            else:
                data = f if isinstance(f, (bytes, bytearray)) else f.read()
                model = onnx.load_model_from_string(bytes(data))
        except FileNotFoundError:
            raise
        except Exception as err:  # protobuf's DecodeError, external data errors
            raise OnnxLoadError(f"{where} is not an ONNX model, or it is truncated: "
                                f"{type(err).__name__}: {err}") from err
    if not model.graph.node and not model.graph.output:
        raise OnnxLoadError(f"{where} is not an ONNX model (it has no graph)")
    return model, where


def _check(model: Any, where: str) -> OnnxLoadError | None:
    """onnx.checker's verdict: None, or the error to raise."""
    try:
        _onnx().checker.check_model(model)
    except Exception as err:
        msg = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        bad = OnnxLoadError(f"{where} is not a valid ONNX model (truncated or corrupt?): "
                            f"onnx.checker: {msg}")
        bad.__cause__ = err
        return bad
    return None


def _opsets(model: Any) -> dict[str, int]:
    opsets = {("" if o.domain == "ai.onnx" else o.domain): o.version
              for o in model.opset_import}
    default = opsets.get("")
    if default is not None and default > MAX_IMPORT_OPSET:
        raise OnnxLoadError(f"the model uses opset {default} of the default ONNX domain, newer "
                            f"than ember's importer knows (up to {MAX_IMPORT_OPSET}); "
                            "convert it to an older opset (onnx.version_converter)")
    return opsets


# -- the compiled graph --------------------------------------------------------------------

class _Node:
    """One node, resolved: its converter and its parsed attributes."""

    __slots__ = ("proto", "fn", "attrs", "opset", "inputs", "outputs", "input_types")

    def __init__(self, proto: Any, fn: Callable, attrs: dict, opset: int,
                 types: dict[str, int]) -> None:
        self.proto = proto
        self.fn = fn
        self.attrs = attrs
        self.opset = opset
        self.inputs = list(proto.input)
        self.outputs = list(proto.output)
        self.input_types = [types.get(i) for i in proto.input]  # declared, where known


class _Graph:
    """A graph (the main one, or a subgraph of If/Loop/Scan) with resolved nodes."""

    def __init__(self, proto: Any, nodes: list[_Node]) -> None:
        self.proto = proto
        self.nodes = nodes
        self.inputs = [i.name for i in proto.input]
        self.outputs = [o.name for o in proto.output]
        self.constants: dict[str, str] = {}  # a subgraph's initializer -> buffer key

    def subgraphs(self) -> list[_Graph]:
        """The graphs in its nodes' attributes, recursively."""
        out = []
        for node in self.nodes:
            for v in node.attrs.values():
                for g in (v if isinstance(v, list) else [v]):
                    if isinstance(g, _Graph):
                        out += [g] + g.subgraphs()
        return out


def _attributes(node: Any, compile_graph: Callable[[Any], _Graph]) -> dict[str, Any]:
    from onnx import AttributeProto, helper, numpy_helper

    out: dict[str, Any] = {}
    for a in node.attribute:
        if a.ref_attr_name:
            raise OnnxLoadError(f"ONNX {node.op_type} node {node.name!r}: attribute "
                                f"{a.name!r} refers to a function's attribute, which only "
                                "functions may do")
        if a.type == AttributeProto.TENSOR:
            out[a.name] = numpy_helper.to_array(a.t)
        elif a.type == AttributeProto.GRAPH:
            out[a.name] = compile_graph(a.g)
        elif a.type == AttributeProto.GRAPHS:
            out[a.name] = [compile_graph(g) for g in a.graphs]
        elif a.type == AttributeProto.TENSORS:
            out[a.name] = [numpy_helper.to_array(t) for t in a.tensors]
        else:
            v = helper.get_attribute_value(a)
            if isinstance(v, bytes):
                v = v.decode("utf-8")
            elif isinstance(v, list) and v and isinstance(v[0], bytes):
                v = [s.decode("utf-8") for s in v]
            out[a.name] = v
    return out


def _describe_missing(table: dict, node: Any, domain: str, opset: int) -> str:
    have = onnx_registry.versions_of(table, domain, node.op_type)
    dom = domain or "ai.onnx"
    if have:
        what = (f"the registry has it from opset {have[0]} on (versions {have}), none at or "
                f"below {opset}")
    else:
        what = (f"the registry has no converter for {node.op_type!r} in domain {dom!r} at "
                "any opset")
    return (f"node {node.name or '(unnamed)'!r}: op type {node.op_type!r}, domain {dom!r}, "
            f"opset {opset}: {what}")


def _compile(model: Any) -> _Graph:
    """Resolve every node's converter (subgraphs included); all missing ones in one error."""
    opsets = _opsets(model)
    table = onnx_registry.importers()
    missing: list[str] = []

    def compile_graph(g: Any) -> _Graph:
        types = {t.name: t.data_type for t in g.initializer}
        for vi in list(g.input) + list(g.value_info) + list(g.output):
            if vi.type.HasField("tensor_type"):
                types.setdefault(vi.name, vi.type.tensor_type.elem_type)
        nodes = []
        for proto in g.node:
            domain = "" if proto.domain == "ai.onnx" else proto.domain
            opset = opsets.get(domain)
            if opset is None:
                missing.append(f"node {proto.name or '(unnamed)'!r}: op type "
                               f"{proto.op_type!r}: the model imports no opset of its domain "
                               f"{domain!r}")
                continue
            found = onnx_registry.find_importer(table, domain, proto.op_type, opset)
            attrs = _attributes(proto, compile_graph)
            if found is None:
                missing.append(_describe_missing(table, proto, domain, opset))
                continue
            nodes.append(_Node(proto, found[1], attrs, opset, types))
        return _Graph(g, nodes)

    graph = compile_graph(model.graph)
    if missing:
        shown = "\n  ".join(missing[:20]) + (f"\n  ... and {len(missing) - 20} more"
                                             if len(missing) > 20 else "")
        raise UnsupportedOnnxOpError(
            f"ember.onnx.load: {len(missing)} node(s) of the model have no import converter:"
            f"\n  {shown}\nAdd one with ember.onnx.register_importer(op_type, fn, "
            "since_version=..., domain=...) or a plugin's ember_onnx_converters hook.")
    return graph


# -- names -----------------------------------------------------------------------------------

def _sanitize(part: str) -> str:
    s = re.sub(r"\W", "_", part)
    if not s or keyword.iskeyword(s):
        s = f"_{s}"
    return s


class Initializers(nn.Module):
    """A plain holder of an imported model's parameters and buffers, so that `state_dict`
    keys follow the initializers' dotted names (``"0.weight"``)."""

    def forward(self, *args: Any) -> Any:  # pragma: no cover - never called
        raise RuntimeError("a container of an imported ONNX model's weights is not callable")


def _place(root: nn.Module, name: str, value: Any, used: set[str], persistent: bool = True
           ) -> str:
    """Register `value` under a key derived from the ONNX name; returns the key."""
    parts = [_sanitize(p) for p in name.split(".")]
    key = ".".join(parts)
    prefixes = {".".join(parts[:i]) for i in range(1, len(parts))}
    if (key in used or any(p in used for p in prefixes)
            or any(u.startswith(key + ".") for u in used)):  # a clash: fall back to flat
        parts = [_sanitize(name.replace(".", "_"))]
        key = parts[0]
        while key in used:
            key += "_"
        parts = [key]
    used.add(key)
    owner = root
    for p in parts[:-1]:
        child = owner._modules.get(p)
        if child is None:
            child = Initializers()
            owner.add_module(p, child)
        owner = child
    if isinstance(value, nn.Parameter):
        owner.register_parameter(parts[-1], value)
    else:
        owner.register_buffer(parts[-1], value, persistent=persistent)
    return key


# -- the module ------------------------------------------------------------------------------

def _initializer(proto: Any, device: Any) -> Any:
    """An initializer as a tensor on `device`, or strings as a host value (a NumPy array:
    see `onnx_import_strings`)."""
    from onnx import numpy_helper

    arr = numpy_helper.to_array(proto)
    if proto.data_type == onnx_import_strings.STRING:
        return onnx_import_strings.host_strings(arr, f"initializer {proto.name!r}")
    t = from_array(arr)
    t = t.to(ember_dtype(proto.data_type, f"initializer {proto.name!r}"))
    return t.to(device) if device is not None else t


class OnnxModule(nn.Module):
    r"""An ONNX model imported by :func:`ember.onnx.load`: calling it runs the graph with
    ember ops on the device of its parameters.

    Attributes:
        input_names: the graph's inputs (initializers excluded), in order.
        input_specs: their ``onnx.ValueInfoProto`` (declared type and shape).
        output_names: the graph's outputs, in order.
        output_types: their declared ONNX element types (None for a sequence ...).
        initializer_names: ONNX initializer name -> its key in ``state_dict()``.
        opsets: the model's opset per domain (``""`` is ONNX's own).
    """

    def __init__(self, model: Any, graph: _Graph, device: Any = None) -> None:
        super().__init__()
        self._graph = graph
        self.opsets = _opsets(model)
        self.initializer_names: dict[str, str] = {}
        self._keys: dict[str, str] = {}  # ONNX name -> parameter/buffer key (folded too)
        # host values: strings, and folded sequences and optionals (not tensors)
        self._host_values: dict[str, Any] = {}
        used: set[str] = set()
        inits = {t.name: t for t in model.graph.initializer}
        for name, proto in inits.items():
            t = _initializer(proto, device)
            if not isinstance(t, ember.Tensor):
                self._host_values[name] = t
                continue
            value = nn.Parameter(t) if t.dtype.name in _FLOATS else t
            self.initializer_names[name] = _place(self, name, value, used)
        self._keys.update(self.initializer_names)
        self.input_specs = [i for i in model.graph.input if i.name not in inits]
        self.input_names = [i.name for i in self.input_specs]
        self.output_names = list(graph.outputs)
        self.output_types = [o.type.tensor_type.elem_type if o.type.HasField("tensor_type")
                             else None for o in model.graph.output]
        for k, sub in enumerate(graph.subgraphs()):  # their weights: buffers, too
            for proto in sub.proto.initializer:
                value = _initializer(proto, device)
                if not isinstance(value, ember.Tensor):
                    raise OnnxLoadError(f"initializer {proto.name!r} of a subgraph holds "
                                        "strings: only the main graph's may")
                sub.constants[proto.name] = _place(self, f"_subgraph{k}.{proto.name}",
                                                   value, used, persistent=False)
        self._fold(used, device)

    # Constant nodes, and nodes fed only by them, run once here. Their results are
    # non-persistent buffers (they follow .to(), and stay out of state_dict).
    def _fold(self, used: set[str], device: Any) -> None:
        known: dict[str, Any] = {}
        rest = []
        for node in self._graph.nodes:
            if (node.proto.op_type not in _NEVER_FOLD and not _has_subgraph(node)
                    and all(i == "" or i in known for i in node.inputs)):
                outs = self._run_node(node, known, device or "cpu")
                for name, value in zip(node.outputs, outs):
                    if name:
                        known[name] = value
                continue
            rest.append(node)
        needed = {i for n in rest for i in n.inputs} | set(self.output_names) | _subgraph_reads(
            rest)
        for name, value in known.items():
            if name not in needed:
                continue
            if isinstance(value, ember.Tensor):
                self._keys[name] = _place(self, f"_folded.{name}", value, used,
                                          persistent=False)
            else:
                self._host_values[name] = value
        self._graph = _Graph(self._graph.proto, rest)

    def extra_repr(self) -> str:
        ops = sorted({n.proto.op_type for n in self._graph.nodes})
        return (f"inputs={self.input_names}, outputs={self.output_names}, "
                f"nodes={len(self._graph.nodes)} ({', '.join(ops)})")

    def _value(self, name: str) -> Any:
        return self._value_at(self._keys[name])

    def _value_at(self, key: str) -> Any:
        obj: Any = self
        for part in key.split("."):
            obj = getattr(obj, part)
        return obj

    def _device(self) -> Any:
        for t in self.parameters():
            return t.device
        for t in self.buffers():
            return t.device
        return None

    def _check_dtype(self, spec: Any, x: Any) -> Any:
        if not isinstance(x, ember.Tensor):
            if isinstance(x, np.ndarray):
                x = from_array(x)
            else:
                raise TypeError(f"input {spec.name!r} of the ONNX model must be a tensor, got "
                                f"{type(x).__name__}")
        want = ember_dtype(spec.type.tensor_type.elem_type, f"input {spec.name!r}")
        if x.dtype != want:
            raise TypeError(f"input {spec.name!r} of the ONNX model must have dtype "
                            f"{want}, got {x.dtype}")
        return x

    def _check_input(self, spec: Any, x: Any) -> Any:
        if not spec.type.HasField("tensor_type"):  # a sequence or optional: as given
            return x
        tt = spec.type.tensor_type
        if tt.elem_type == onnx_import_strings.STRING:  # a host value, not a tensor
            x = onnx_import_strings.host_strings(x, f"input {spec.name!r} of the ONNX model")
        else:
            x = self._check_dtype(spec, x)
        if tt.HasField("shape"):
            dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
                    for d in tt.shape.dim]
            shown = "[" + ", ".join(str(d) if d is not None else "?" for d in dims) + "]"
            ok = len(dims) == x.ndim and all(not isinstance(d, int) or d == s
                                             for d, s in zip(dims, x.shape))
            if not ok:
                raise ValueError(f"input {spec.name!r} of the ONNX model must have shape "
                                 f"{shown}, got {list(x.shape)}")
        return x

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Run the graph on the inputs (positional in ``input_names`` order, or by name).
        Returns one tensor, or a tuple when the graph has several outputs."""
        if len(args) > len(self.input_specs):
            raise TypeError(f"the ONNX model takes {len(self.input_specs)} input(s) "
                            f"({', '.join(self.input_names)}), got {len(args)}")
        given = dict(zip(self.input_names, args))
        for k, v in kwargs.items():
            if k not in self.input_names:
                raise TypeError(f"the ONNX model has no input {k!r} (its inputs: "
                                f"{', '.join(self.input_names)})")
            if k in given:
                raise TypeError(f"input {k!r} of the ONNX model given twice")
            given[k] = v
        env: dict[str, Any] = {}
        for spec in self.input_specs:
            if spec.name not in given:
                raise TypeError(f"input {spec.name!r} of the ONNX model is missing (its "
                                f"inputs: {', '.join(self.input_names)})")
            env[spec.name] = self._check_input(spec, given[spec.name])
        for name in self._keys:
            env[name] = self._value(name)
        env.update(self._host_values)
        device = self._device()
        if device is None:
            device = next((t.device for t in env.values() if isinstance(t, ember.Tensor)),
                          "cpu")
        outs = self._run_graph(self._graph, env, device)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _run_graph(self, graph: _Graph, env: Any, device: Any) -> list:
        for k, node in enumerate(graph.nodes):
            outs = self._run_node(node, env, device, graph.nodes[:k])
            for name, value in zip(node.outputs, outs):
                if name:
                    env[name] = value
        missing = [o for o in graph.outputs if o not in env]
        if missing:
            raise OnnxLoadError(f"the graph's output(s) {missing} are computed by no node")
        return [env[o] for o in graph.outputs]

    def _run_node(self, node: _Node, env: Any, device: Any, before: list | None = None
                  ) -> list:
        def run_sub(sub: _Graph, inputs: list) -> list:
            local = {n: self._value_at(key) for n, key in sub.constants.items()}
            local.update(zip(sub.inputs, inputs))
            scope = collections.ChainMap(local, env)
            return self._run_graph(sub, scope, device)

        def recompute(target: str, replaced: dict[str, Any]) -> Any:
            # the earlier nodes that lead to `target`, run again with `replaced` values
            needed, chain = {target}, []
            for earlier in reversed(before or []):
                if any(o in needed for o in earlier.outputs):
                    chain.append(earlier)
                    needed |= {i for i in earlier.inputs if i and i not in replaced}
            scope = collections.ChainMap(dict(replaced), env)
            for earlier in reversed(chain):
                for name, value in zip(earlier.outputs,
                                       self._run_node(earlier, scope, device)):
                    if name:
                        scope[name] = value
            return scope[target]

        try:
            args = [env[i] if i else None for i in node.inputs]
        except KeyError as err:
            raise RuntimeError(f"ONNX {node.proto.op_type} node {node.proto.name!r}: its input "
                               f"{err.args[0]!r} is computed by no earlier node") from None
        args = _same_device(args)
        ctx = ImportContext(node.proto, node.attrs, node.opset, device, run_sub,
                            node.input_types, recompute)
        out = node.fn(ctx, *args)
        # a tuple holds the node's outputs; a list is one value (an ONNX sequence)
        outs = list(out) if isinstance(out, tuple) else [out]
        return outs


def _same_device(args: list) -> list:
    """Shape tensors live on the CPU (see `ImportContext.host`): when a node mixes them
    with tensors of an accelerator, they move there."""
    tensors = [a for a in args if isinstance(a, ember.Tensor)]
    devices = {str(a.device) for a in tensors}
    if len(devices) < 2 or "cpu" not in devices:
        return args
    other = next(a.device for a in tensors if str(a.device) != "cpu")
    return [a.to(other) if isinstance(a, ember.Tensor) and str(a.device) == "cpu" else a
            for a in args]


def _has_subgraph(node: _Node) -> bool:
    return any(isinstance(g, _Graph) for v in node.attrs.values()
               for g in (v if isinstance(v, list) else [v]))


def _subgraph_reads(nodes: list[_Node]) -> set[str]:
    """Names that subgraphs of `nodes` read from their enclosing scope."""
    out: set[str] = set()
    for node in nodes:
        for v in node.attrs.values():
            for g in (v if isinstance(v, list) else [v]):
                if isinstance(g, _Graph):
                    out |= {i for n in g.nodes for i in n.inputs} | set(g.outputs)
                    out |= _subgraph_reads(g.nodes)
    return out


# Random ops must draw anew on every call, never once at load.
_NEVER_FOLD = frozenset({"RandomUniform", "RandomNormal", "RandomUniformLike",
                         "RandomNormalLike", "Multinomial", "Bernoulli", "Dropout",
                         "Gradient"})  # (Gradient reruns the nodes before it)


def load(f: str | os.PathLike | IO[bytes] | bytes | Any, device: Any = None) -> OnnxModule:
    r"""Load an ONNX model as an ``ember.nn.Module`` that runs it with ember ops.

    Args:
        f: a path to a ``.onnx`` file (external data beside it is read too), a binary file
            object, the file's bytes, or an ``onnx.ModelProto``.
        device: where to put the parameters (default: the CPU); ``.to(device)`` moves the
            model later, as any module.

    Returns:
        an :class:`OnnxModule` in eval mode. Its floating-point initializers are trainable
        parameters, its other initializers buffers, keyed in ``state_dict()`` by the
        initializers' names (``model.initializer_names`` maps one to the other).

    Raises:
        OnnxLoadError: the file is not ONNX, is truncated or invalid, or uses an opset newer
            than ember knows.
        UnsupportedOnnxOpError: some node has no converter; the message lists each one (op
            type, node, domain, opset) and what the registry has for it.
    """
    model, where = _parse(f)
    _opsets(model)  # too new: say so before the checker (which may not know it either)
    bad = _check(model, where)
    try:
        graph = _compile(model)  # a missing converter is the more useful error
    except UnsupportedOnnxOpError:
        raise
    except Exception as err:
        if bad is not None:
            raise bad from err
        raise
    if bad is not None:
        raise bad
    module = OnnxModule(model, graph, device)
    return module.eval()
