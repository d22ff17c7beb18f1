"""The graph IR recorded by the tracer: values, nodes, and a graph that prints readably."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass(eq=False)
class Value:
    """One tensor in the graph: a graph input, a named constant (parameter, buffer, or a
    tensor made outside the trace), or the output of a node."""

    name: str
    shape: tuple[int, ...]
    dtype: Any  # ember.dtype
    kind: str  # "input" | "param" | "const" | "node"
    tensor: Any = None  # the value itself, for params and constants

    def __repr__(self) -> str:
        return f"%{self.name}"


@dataclass(eq=False)
class Node:
    """One recorded call. `args`/`kwargs` keep the call's structure with tensors replaced by
    their `Value`s; `inputs` lists those values in order (for graph walks)."""

    kind: str  # "primitive" | "composite" | "module"
    op: str  # primitive name, composite name, or module class name
    args: tuple
    kwargs: dict
    inputs: list[Value]
    outputs: list[Value] = field(default_factory=list)
    output_structure: Any = None  # the call's return value with tensors as Values
    scope: str = ""  # module path where the call happened
    children: list[Node] = field(default_factory=list)
    fn: Callable[..., Any] | None = None  # composite: the function to replay
    module: Any = None  # module node: the module object

    def walk(self) -> Iterator[Node]:
        yield self
        for child in self.children:
            yield from child.walk()


def map_leaves(structure: Any, fn: Callable[[Any], Any]) -> Any:
    """Apply `fn` to every leaf of nested tuples/lists/dicts (namedtuples and other tuple
    types kept)."""
    if isinstance(structure, tuple):
        items = [map_leaves(v, fn) for v in structure]
        return type(structure)(*items) if hasattr(structure, "_fields") else \
            type(structure)(items)
    if isinstance(structure, list):
        return [map_leaves(v, fn) for v in structure]
    if isinstance(structure, dict):
        return {k: map_leaves(v, fn) for k, v in structure.items()}
    return fn(structure)


def leaves(structure: Any) -> list:
    """The leaves of nested tuples/lists/dicts, in order."""
    out: list = []
    map_leaves(structure, out.append)
    return out


def _fmt_arg(value: Any) -> str:
    if isinstance(value, Value):
        return repr(value)
    if isinstance(value, (list, tuple)):
        inner = ", ".join(_fmt_arg(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    return repr(value)


@dataclass(eq=False)
class Graph:
    inputs: list[Value]
    nodes: list[Node]
    outputs: Any  # the traced function's return value with tensors as Values
    constants: dict[str, Value]  # name -> param/const value

    def output_values(self) -> list[Value]:
        out: list[Value] = []

        def collect(x: Any) -> None:
            if isinstance(x, Value):
                out.append(x)
            elif isinstance(x, (list, tuple)):
                for v in x:
                    collect(v)
            elif isinstance(x, dict):
                for v in x.values():
                    collect(v)
        collect(self.outputs)
        return out

    def __str__(self) -> str:
        def typ(v: Value) -> str:
            return f"{v.dtype.name}[{', '.join(str(s) for s in v.shape)}]"

        lines = ["graph(" + ", ".join(f"%{v.name} : {typ(v)}" for v in self.inputs) + "):"]
        for name, v in self.constants.items():
            lines.append(f"  %{name} : {typ(v)} = {v.kind}")

        def emit(node: Node, depth: int) -> None:
            pad = "  " * depth
            outs = ", ".join(f"%{v.name}" for v in node.outputs) or "()"
            args = [_fmt_arg(a) for a in node.args]
            args += [f"{k}={_fmt_arg(v)}" for k, v in node.kwargs.items()]
            where = f"  # {node.scope}" if node.scope else ""
            label = node.op if node.kind == "primitive" else f"{node.kind}::{node.op}"
            lines.append(f"{pad}{outs} = {label}({', '.join(args)}){where}")
            for child in node.children:
                emit(child, depth + 1)

        for node in self.nodes:
            emit(node, 1)
        lines.append(f"  return {_fmt_arg(self.outputs)}")
        return "\n".join(lines)

    def print(self) -> None:  # noqa: A003 - PyTorch's graph.print()
        print(str(self))
