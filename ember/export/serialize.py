"""`torch.export.save` / `torch.export.load`: an ExportedProgram in a `.pt2` zip archive.

The archive holds `<name>/archive_format` ("pt2", as PyTorch's) and `<name>/data/
program.pt`: the graph as plain data (each node's op, name, target and arguments, ATen
targets by name) with the state dict, written by `ember.save`. ember reads back the
archives it writes; PyTorch's own (a JSON schema of its serializer) are refused with a
clear error."""

from __future__ import annotations

import io
import operator
import os
import zipfile
from typing import Any

import ember
from ember.export.dynamic_shapes import Dim
from ember.export.graph_signature import (
    InputKind,
    InputSpec,
    OutputKind,
    OutputSpec,
    TensorArgument,
)
from ember.fx.graph import Graph
from ember.fx.node import Node, map_arg
from ember.utils import _pytree as pytree

__all__ = ["save", "load"]

_PROGRAM = "data/program.pt"
_VERSION = 1


def _target(target: Any) -> Any:
    from ember.library.registry import _AtenFunction

    if isinstance(target, str):
        return ("str", target)
    if isinstance(target, _AtenFunction):
        return ("aten", target._name, target._overload)
    if getattr(target, "__module__", "") == "_operator":
        return ("operator", target.__name__)
    raise RuntimeError(f"torch.export.save: cannot serialize the node target {target!r}")


def _untarget(spec: tuple) -> Any:
    from ember.library.registry import aten_function

    kind = spec[0]
    if kind == "str":
        return spec[1]
    if kind == "aten":
        return aten_function(spec[1], spec[2])
    return getattr(operator, spec[1])


def save(ep: Any, f: Any, *, extra_files: dict[str, Any] | None = None,
         opset_version: dict | None = None, pickle_protocol: int = 2) -> None:
    """Write `ep` to `f` (a path or a binary file object) as a `.pt2` zip archive."""
    from ember.export.exported_program import ExportedProgram

    if not isinstance(ep, ExportedProgram):
        raise TypeError(f"The 'ep' parameter must be an instance of 'ExportedProgram', got "
                        f"'{type(ep).__name__}' instead.")
    nodes = []
    for node in ep.graph.nodes:
        args = map_arg(node.args, lambda n: ("__node__", n.name))
        kwargs = map_arg(node.kwargs, lambda n: ("__node__", n.name))
        nodes.append((node.op, node.name, _target(node.target), args, kwargs,
                      node.meta.get("shape")))
    sig = ep.graph_signature
    n_out = sum(1 for _ in pytree.tree_leaves(pytree.tree_unflatten(
        list(range(len(sig.output_specs))), ep._out_spec)))
    program = {
        "version": _VERSION,
        "nodes": nodes,
        "inputs": [(s.kind.name, s.arg.name, s.target, s.persistent) for s in sig.input_specs],
        "outputs": [(s.kind.name, s.arg.name, s.target) for s in sig.output_specs],
        "state_dict": dict(ep.state_dict),
        "constants": dict(ep.constants),
        "out_structure": pytree.tree_unflatten(list(range(n_out)), ep._out_spec),
        "user_inputs": [(n, shape, str(dtype).rsplit(".", 1)[-1])
                        for n, shape, dtype in ep._user_inputs],
        "symbols": [(n, d, s) for (n, d), s in ep._symbols.items()],
        "ranges": {s: (d.__name__, d.min, d.max) for s, d in ep._ranges.items()},
        "extra_files": dict(extra_files or {}),
    }
    buffer = io.BytesIO()
    ember.save(program, buffer)
    name = "ep"  # the archive's top folder (a file object has no name to take it from)
    if isinstance(f, (str, os.PathLike)):
        name = os.path.splitext(os.path.basename(os.fspath(f)))[0] or name
    with zipfile.ZipFile(f, "w") as archive:
        archive.writestr(f"{name}/archive_format", "pt2")
        archive.writestr(f"{name}/archive_version", str(_VERSION))
        archive.writestr(f"{name}/{_PROGRAM}", buffer.getvalue())


def load(f: Any, *, extra_files: dict[str, Any] | None = None,
         expected_opset_version: dict | None = None) -> Any:
    """Read an ExportedProgram that `save` wrote (a path or a binary file object)."""
    from ember.export.exported_program import ExportedProgram

    with zipfile.ZipFile(f) as archive:
        found = [n for n in archive.namelist() if n.endswith("/" + _PROGRAM)]
        if not found:
            raise RuntimeError(f"torch.export.load: {f!r} is not an exported program ember "
                               "wrote (no data/program.pt in the archive)")
        program = ember.load(io.BytesIO(archive.read(found[0])), weights_only=False)
    graph = Graph()
    by_name: dict[str, Node] = {}
    for op, name, target, args, kwargs, shape in program["nodes"]:
        def resolve(a: Any) -> Any:
            if isinstance(a, tuple) and len(a) == 2 and a[0] == "__node__":
                return by_name[a[1]]
            if isinstance(a, (list, tuple)):
                return type(a)(resolve(x) for x in a)
            if isinstance(a, dict):
                return {k: resolve(v) for k, v in a.items()}
            return a
        if op == "output":
            node = graph.output(resolve(args)[0])
        else:
            node = graph.create_node(op, _untarget(target), resolve(args), resolve(kwargs),
                                     name=name)
        if shape is not None:
            node.meta["shape"] = shape
        by_name[name] = node
    inputs = [InputSpec(InputKind[k], TensorArgument(a), t, p) for k, a, t, p in
              program["inputs"]]
    outputs = [OutputSpec(OutputKind[k], TensorArgument(a), t) for k, a, t in
               program["outputs"]]
    _, out_spec = pytree.tree_flatten(program["out_structure"])
    user_inputs = [(n, shape, getattr(ember, dtype)) for n, shape, dtype in
                   program["user_inputs"]]
    symbols = {(n, d): s for n, d, s in program["symbols"]}
    ranges = {s: Dim(name, min=lo, max=hi) for s, (name, lo, hi) in program["ranges"].items()}
    ep = ExportedProgram(graph, inputs, outputs, program["state_dict"], program["constants"],
                         out_spec, user_inputs, symbols, ranges)
    if extra_files is not None:
        for key in extra_files:
            extra_files[key] = program["extra_files"].get(key, "")
    _restore_meta(ep)
    return ep


def _restore_meta(ep: Any) -> None:
    """Put each node's example value back (for the printed shapes) by running the graph
    once on zeros of the exported shapes."""
    from ember.fx.interpreter import Interpreter

    specs = ep.graph_signature.input_specs
    inputs = []
    user = iter(ep._user_inputs)
    for spec in specs:
        if spec.kind is InputKind.USER_INPUT:
            _, shape, dtype = next(user)
            inputs.append(ember.zeros(shape, dtype=dtype))
        else:
            inputs.append(ep.state_dict[spec.target])

    class Recording(Interpreter):
        def run_node(self, n: Node) -> Any:
            out = super().run_node(n)
            n.meta["val"] = out
            return out

    try:
        with ember.no_grad():
            Recording(ep.graph_module).run(*inputs)
    except Exception:  # noqa: BLE001 - the values are for printing only
        pass
