"""`torch.export.ExportedProgram`: an exported graph with its signature and state, and
`.module()`, the callable module it unlifts to (parameters back as attributes, input
guards checked)."""

from __future__ import annotations

import copy
from typing import Any

from ember.core.tensor import Tensor
from ember.export.dynamic_shapes import Dim
from ember.export.graph_signature import ExportGraphSignature, InputKind, InputSpec, OutputSpec
from ember.fx.graph import Graph
from ember.fx.graph_module import GraphModule
from ember.utils import _pytree as pytree

__all__ = ["ExportedProgram"]


class _Symbol:
    """A dynamic size's symbol (``s0``), printed as sympy prints it."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Symbol) and other.name == self.name


class _ValueRange:
    """``VR[0, int_oo]``: the sizes a symbol may take."""

    def __init__(self, lower: int, upper: int | None) -> None:
        self.lower, self.upper = lower, upper

    def __repr__(self) -> str:
        return f"VR[{self.lower}, {'int_oo' if self.upper is None else self.upper}]"


class ExportedProgram:
    """What :func:`torch.export.export` returns.

    Attributes:
        graph_module: the GraphModule whose forward takes the parameters, buffers and
            user inputs (in ``graph_signature.input_specs``'s order) and returns a tuple.
        graph_signature: an :class:`ExportGraphSignature`.
        state_dict: the parameters and buffers by their qualified names.
        range_constraints: each dynamic size's symbol and its range.
    """

    def __init__(self, graph: Graph, input_specs: list[InputSpec],
                 output_specs: list[OutputSpec], state_dict: dict[str, Tensor],
                 constants: dict[str, Tensor], out_spec: Any,
                 user_inputs: list[tuple[str, list[int], Any]],
                 symbols: dict[tuple[str, int], str], ranges: dict[str, Dim]) -> None:
        self.graph_module = GraphModule(dict(constants), graph)
        self.graph_signature = ExportGraphSignature(input_specs, output_specs)
        self.state_dict = state_dict
        self.constants = constants
        self._out_spec = out_spec
        self._user_inputs = user_inputs
        self._symbols = symbols
        self._ranges = ranges
        self.range_constraints = {_Symbol(name): _ValueRange(d.min, d.max)
                                  for name, d in ranges.items()}
        self.example_inputs = None
        self.verifiers: list[Any] = []

    @property
    def graph(self) -> Graph:
        return self.graph_module.graph

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("Unable to call ExportedProgram directly. You should use "
                           "`exported_program.module()` instead.")

    def module(self) -> GraphModule:
        """A GraphModule taking the user's inputs only: the parameters and buffers are
        its attributes again (``conv.weight``), each input's shape is checked (an
        AssertionError ``Guard failed: x.size()[0] == 2``), and it returns what the
        exported module returned."""
        graph = Graph()
        values: dict[Any, Any] = {}
        specs = {s.arg.name: s for s in self.graph_signature.input_specs}
        root: dict[str, Any] = dict(self.constants)
        for node in self.graph.nodes:
            spec = specs.get(node.name) if node.op == "placeholder" else None
            if spec is not None and spec.kind is not InputKind.USER_INPUT:
                new = graph.get_attr(spec.target)
                root[spec.target] = self.state_dict[spec.target]
            else:
                new = graph.node_copy(node, lambda n: values[n])
            new.meta = dict(node.meta)
            values[node] = new
        module = _StatefulGraphModule(root, graph)
        module._guards = [(name, shape, dtype, self._dims(name, len(shape)))
                          for name, shape, dtype in self._user_inputs]
        module._out_spec = self._out_spec
        return module

    def _dims(self, name: str, rank: int) -> list[Dim | None]:
        return [self._ranges[self._symbols[(name, d)]] if (name, d) in self._symbols
                else None for d in range(rank)]

    def run_decompositions(self, decomp_table: Any = None, decompose_custom_triton_ops: bool
                           = False) -> ExportedProgram:
        """The program with its ops decomposed. ember's graph already holds ops that its
        backends run (their decompositions are the ops' own), so this is an equal copy."""
        new = copy.copy(self)
        new.graph_module = copy.deepcopy(self.graph_module)
        return new

    def parameters(self) -> Any:
        for name in self.graph_signature.parameters:
            yield self.state_dict[name]

    def named_parameters(self) -> Any:
        for name in self.graph_signature.parameters:
            yield name, self.state_dict[name]

    def buffers(self) -> Any:
        for name in self.graph_signature.buffers:
            yield self.state_dict[name]

    def named_buffers(self) -> Any:
        for name in self.graph_signature.buffers:
            yield name, self.state_dict[name]

    def __str__(self) -> str:
        code = self.graph_module.print_readable(print_output=False)
        code = "    " + code.replace("\n", "\n    ")
        signature = str(self.graph_signature).replace("\n", "\n    ")
        return (f"ExportedProgram:\n{code}\nGraph signature: {signature}\n"
                f"Range constraints: {self.range_constraints}\n")

    def __repr__(self) -> str:
        return str(self)


class _StatefulGraphModule(GraphModule):
    """What `ExportedProgram.module()` returns: checks its inputs against the exported
    shapes before running, and returns the exported module's output structure."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        flat = [x for x in pytree.tree_leaves((args, kwargs)) if isinstance(x, Tensor)]
        guards = self.__dict__.get("_guards", [])
        if len(flat) != len(guards):
            raise TypeError(f"Exported module expected {len(guards)} tensor inputs, got "
                            f"{len(flat)}")
        for t, (name, shape, dtype, dims) in zip(flat, guards):
            _check(t, name, shape, dtype, dims)
        out = super().__call__(*flat)
        return pytree.tree_unflatten(list(out), self.__dict__["_out_spec"])


def _check(t: Tensor, name: str, shape: list[int], dtype: Any, dims: list[Dim | None]) -> None:
    if t.dim() != len(shape):
        raise AssertionError(f"Guard failed: {name}.dim() == {len(shape)}")
    for d, (size, want, dim) in enumerate(zip(t.shape, shape, dims)):
        if dim is None:
            if size != want:
                raise AssertionError(f"Guard failed: {name}.size()[{d}] == {want}")
        elif size < dim.min:
            raise AssertionError(f"Guard failed: {name}.size()[{d}] >= {dim.min}")
        elif dim.max is not None and size > dim.max:
            raise AssertionError(f"Guard failed: {name}.size()[{d}] <= {dim.max}")
    if t.dtype != dtype:
        raise AssertionError(f"Guard failed: {name}.dtype == {dtype}")
