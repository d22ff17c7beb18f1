"""Tracing a model for ONNX export: the traced graph (`trace_root`), and how it changes
with the dynamic axes (`analyse`).

`analyse` traces the model again with each dynamic axis grown (by 1 and by 3), aligns the
graphs node by node, and fits every recorded integer that changed (reshape targets, slice
bounds ...) as a `SymDim`, a linear function of the axes' runtime sizes, and every value
shape likewise; the converters turn those into ONNX shape computations.
"""

from __future__ import annotations

import warnings
from typing import Any

import ember
from ember.exporters.onnx_context import DynamicAxes, SymDim
from ember.jit.graph import Graph, Node, Value
from ember.jit.tracer import TracerWarning, trace

__all__ = ["trace_root", "analyse"]


class _Root(ember.nn.Module):
    """Holds the exported model, so that the model's own call is a module node too (the
    tracer records submodules only) and a module converter can map it whole."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.m = model

    def forward(self, *args: Any) -> Any:
        return self.m(*args)


def trace_root(model: Any, inputs: tuple, check: bool = False) -> Graph:
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


def analyse(fn: Any, inputs: tuple, base: Graph, axes: dict[int, dict[int, str]]
            ) -> DynamicAxes:
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
                return trace_root(fn, new)
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
