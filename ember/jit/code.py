"""A traced graph as Python source, the `.code` of a traced module or function.

PyTorch prints a traced module's `code` as the TorchScript of its forward: one statement
per call at the top level, submodules called through `self`. This writes the same shape
from ember's graph, in Python that names ember's ops:

    def forward(self,
        input: Tensor) -> Tensor:
      _0 = getattr(self, "0")(input)
      _1 = getattr(self, "1")(_0)
      return getattr(self, "2")(_1)
"""

from __future__ import annotations

from typing import Any

from ember.jit.graph import Graph, Node, Value


def _attribute(path: str) -> str:
    """`self.<path>` in Python, with getattr for parts that are not identifiers ("0")."""
    expr = "self"
    for part in path.split("."):
        expr = f"{expr}.{part}" if part.isidentifier() else f'getattr({expr}, "{part}")'
    return expr


class _Writer:
    def __init__(self, graph: Graph, arg_names: list[str]) -> None:
        self.names: dict[int, str] = {}
        for value, name in zip(graph.inputs, arg_names):
            self.names[id(value)] = name
        for i, value in enumerate(v for v in graph.constants.values() if v.kind == "const"):
            self.names[id(value)] = f"CONSTANTS.c{i}"
        for value in graph.constants.values():
            if value.kind == "param":
                self.names[id(value)] = _attribute(value.name)
        self.lines: list[str] = []
        self.count = 0

    def expr(self, x: Any) -> str:
        if isinstance(x, Value):
            return self.names.get(id(x), f"_{x.name}")
        if isinstance(x, list):
            return "[" + ", ".join(self.expr(v) for v in x) + "]"
        if isinstance(x, tuple):
            inner = ", ".join(self.expr(v) for v in x)
            return f"({inner},)" if len(x) == 1 else f"({inner})"
        if isinstance(x, dict):
            return "{" + ", ".join(f"{k!r}: {self.expr(v)}" for k, v in x.items()) + "}"
        return repr(x)

    def call(self, node: Node) -> str:
        if node.kind == "module":
            target = _attribute(node.scope)
        else:
            target = f"ember.{node.op}"
        args = [self.expr(a) for a in node.args]
        args += [f"{k}={self.expr(v)}" for k, v in node.kwargs.items()]
        return f"{target}({', '.join(args)})"

    def statement(self, node: Node) -> None:
        if not node.outputs:
            self.lines.append(f"  {self.call(node)}")
            return
        outs = []
        for value in node.outputs:
            self.names[id(value)] = name = f"_{self.count}"
            self.count += 1
            outs.append(name)
        self.lines.append(f"  {', '.join(outs)} = {self.call(node)}")


def python_code(graph: Graph, arg_names: list[str], *, name: str, method: bool) -> str:
    """The source of a function `name` (a method taking `self` when `method`) that runs
    the graph's top-level calls in order."""
    writer = _Writer(graph, arg_names)
    for node in graph.nodes:
        writer.statement(node)
    params = [f"{n}: Tensor" for n in arg_names[:len(graph.inputs)]]
    if method:
        params.insert(0, "self")
    head = f"def {name}(" + ",\n    ".join(params) + ") -> Tensor:"
    body = writer.lines + [f"  return {writer.expr(graph.outputs)}"]
    return "\n".join([head, *body]) + "\n"
