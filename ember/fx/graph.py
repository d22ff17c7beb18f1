"""`torch.fx.Graph`: the nodes of a traced program, in order, and the ways to edit them.

The nodes form a doubly-linked list around a sentinel root node; iteration follows
`_next` links and skips erased nodes, so a pass may erase or insert nodes while it
iterates, as torch.fx allows. Each graph names its nodes uniquely (`add`, `add_1`).
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Iterator
from typing import Any

from ember.fx._codegen import PythonCode, python_code
from ember.fx._names import Namespace, qualified_name, snake_case, target_str
from ember.fx.node import Argument, Node, Target, map_arg

__all__ = ["Graph", "PythonCode"]


class _node_list:  # noqa: N801 (torch's name, shown by repr(graph.nodes))
    """`graph.nodes`: a live view of the graph's nodes (len, iteration, reversed)."""

    def __init__(self, graph: Graph, direction: str = "_next") -> None:
        self._graph = graph
        self._direction = direction

    def __len__(self) -> int:
        return self._graph._len

    def __iter__(self) -> Iterator[Node]:
        root = self._graph._root
        cur = getattr(root, self._direction)
        while cur is not root:
            if not cur._erased:
                yield cur
            cur = getattr(cur, self._direction)

    def __reversed__(self) -> Iterator[Node]:
        return iter(_node_list(self._graph, "_prev" if self._direction == "_next" else "_next"))


class _InsertPoint:
    def __init__(self, graph: Graph, new_insert: Callable[[Node], None]) -> None:
        self.graph = graph
        self.orig_insert, graph._insert = graph._insert, new_insert

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        self.graph._insert = self.orig_insert


class Graph:
    """The intermediate representation of torch.fx: a list of :class:`Node` s, each an
    input (placeholder), an attribute read (get_attr), a call (call_function,
    call_method, call_module) or the return value (output)."""

    def __init__(self, owning_module: Any = None, tracer_cls: type | None = None,
                 tracer_extras: dict | None = None) -> None:
        self._order: dict[Node, int] | None = None  # node -> place, rebuilt after edits
        self._root = Node(self, "", "root", "", (), {})
        self._used_names: dict[str, int] = {}
        self._insert = self._root.prepend
        self._len = 0
        self._graph_namespace = Namespace()
        self._owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras
        self._co_fields: dict[str, Any] = {}

    @property
    def owning_module(self) -> Any:
        """The GraphModule this graph belongs to, if any."""
        return self._owning_module

    @owning_module.setter
    def owning_module(self, mod: Any) -> None:
        self._owning_module = mod

    @property
    def nodes(self) -> _node_list:
        """The nodes, in order: a live view (erasing or inserting while iterating is fine)."""
        return _node_list(self)

    def find_nodes(self, *, op: str, target: Target | None = None, sort: bool = True
                   ) -> list[Node]:
        """The nodes of kind `op` (and `target`, when given), in graph order."""
        return [n for n in self.nodes
                if n.op == op and (target is None or n.target == target)]

    # -- making nodes ------------------------------------------------------------------
    def create_node(self, op: str, target: Target, args: tuple | None = None,
                    kwargs: dict | None = None, name: str | None = None,
                    type_expr: Any = None) -> Node:
        """Create a Node of kind `op` and insert it at the current insertion point."""
        args = () if not args else args
        kwargs = {} if not kwargs else kwargs
        if not isinstance(args, tuple):
            raise AssertionError(f"args must be a tuple, got {type(args)}")
        if not isinstance(kwargs, dict):
            raise AssertionError(f"kwargs must be a dict, got {type(kwargs)}")
        candidate = name if name is not None else self._target_to_str(target)
        name = self._graph_namespace.create_name(candidate, None)
        n = Node(self, name, op, target, args, kwargs, type_expr)
        self._graph_namespace.associate_name_with_obj(name, n)
        self._insert(n)
        self._len += 1
        return n

    def placeholder(self, name: str, type_expr: Any = None,
                    default_value: Any = inspect.Signature.empty) -> Node:
        """An input of the graph named `name` (with a default value when given)."""
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args=args, type_expr=type_expr)

    def get_attr(self, qualified_name: str, type_expr: Any = None) -> Node:
        """A read of the owning module's attribute `qualified_name` (``"sub.weight"``)."""
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name: str, args: tuple | None = None,
                    kwargs: dict | None = None, type_expr: Any = None) -> Node:
        """A call of the owning module's submodule `module_name`."""
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name: str, args: tuple | None = None,
                    kwargs: dict | None = None, type_expr: Any = None) -> Node:
        """A call of method `method_name` of ``args[0]``."""
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function: Callable[..., Any], args: tuple | None = None,
                      kwargs: dict | None = None, type_expr: Any = None,
                      name: str | None = None) -> Node:
        """A call of the free function `the_function`."""
        return self.create_node("call_function", the_function, args, kwargs, name=name,
                                type_expr=type_expr)

    def output(self, result: Argument, type_expr: Any = None) -> Node:
        """The graph's return value."""
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def node_copy(self, node: Node, arg_transform: Callable[[Node], Argument] = lambda x: x
                  ) -> Node:
        """Copy `node` (of another graph) into this one, mapping its inputs through
        `arg_transform`."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        result = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        result.meta = copy.copy(node.meta)
        return result

    def graph_copy(self, g: Graph, val_map: dict[Node, Node], return_output_node: bool = False
                   ) -> Any:
        """Copy the nodes of `g` into this graph (`val_map` maps g's nodes to the copies,
        and may be seeded); returns the value of g's output node."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                rv = map_arg(node.args[0], lambda n: val_map[n])
                return rv if not return_output_node else (rv, node)
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def __deepcopy__(self, memo: dict | None = None) -> Graph:
        memo = memo if memo is not None else {}
        g = Graph(tracer_cls=self._tracer_cls)
        output_vals = g.graph_copy(self, val_map=memo, return_output_node=True)
        if output_vals is not None:
            vals, orig_output = output_vals
            g.output(vals, type_expr=getattr(orig_output, "type", None))
        return g

    def _target_to_str(self, target: Target) -> str:
        if callable(target):
            op = target.__name__
            torch_path = qualified_name(target)
            if torch_path.startswith("torch._C."):  # a builtin's own name (log_sigmoid)
                op = torch_path.rsplit(".", 1)[1]
        else:
            op = target
            if op.startswith("__") and op.endswith("__"):
                op = op[2:-2]
        return snake_case(op)

    # -- editing -----------------------------------------------------------------------
    def erase_node(self, to_erase: Node) -> None:
        """Remove `to_erase`, which no node may read any more."""
        if len(to_erase.users) > 0:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had "
                               f"{len(to_erase.users)} users in the graph: {to_erase.users}!")
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            return
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1
        to_erase._update_args_kwargs((), {})

    def inserting_before(self, n: Node | None = None) -> _InsertPoint:
        """Context manager: new nodes go right before `n` (default: the graph's start)."""
        if n is None:
            return self.inserting_after(self._root)
        if n.graph is not self:
            raise AssertionError("Node to insert before is not in graph.")
        return _InsertPoint(self, n.prepend)

    def inserting_after(self, n: Node | None = None) -> _InsertPoint:
        """Context manager: new nodes go right after `n` (default: the graph's end)."""
        if n is None:
            return self.inserting_before(self._root)
        if n.graph is not self:
            raise AssertionError("Node to insert after is not in graph.")
        return _InsertPoint(self, n.append)

    def eliminate_dead_code(self, is_impure_node: Callable[[Node], bool] | None = None
                            ) -> bool:
        """Erase the nodes nothing reads and that have no side effects; returns whether
        the graph changed."""
        self.lint()
        impure = is_impure_node or (lambda n: n.is_impure())
        changed = False
        for node in reversed(self.nodes):
            if not impure(node) and len(node.users) == 0:
                self.erase_node(node)
                changed = True
        return changed

    def lint(self) -> None:
        """Check the graph is well formed: every node owned by it, inputs defined before
        use, targets of the owning module present."""
        seen: set[Node] = set()
        for node in self.nodes:
            if node.graph is not self:
                raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
            for arg in node._input_nodes:
                if arg.graph is not self:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' does not belong "
                                       "to this Graph, but was used as an argument! If you "
                                       "are copying nodes from another graph, make sure to "
                                       "use ``arg_transform`` on node_copy() to remap values"
                                       f"\n{self}")
                if arg not in seen:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' was used before "
                                       "it has been defined! Please check that Nodes in the "
                                       f"graph are topologically ordered\n{self}")
            seen.add(node)
        mod = self.owning_module
        if mod is None:
            return
        for node in self.nodes:
            if node.op in ("get_attr", "call_module"):
                obj = mod
                for i, atom in enumerate(node.target.split(".")):
                    if not hasattr(obj, atom):
                        seen_qual = ".".join(node.target.split(".")[:i])
                        raise RuntimeError(f"Node {node} target {node.target} references "
                                           f"nonexistent attribute {atom} of {seen_qual}")
                    obj = getattr(obj, atom)

    # -- printing and code -------------------------------------------------------------
    def python_code(self, root_module: str, *, verbose: bool = False) -> PythonCode:
        """The Python source of this graph's forward, and the globals it needs
        (`verbose`: with each node's stack-trace summary, as print_readable shows)."""
        return python_code(self, root_module, verbose)

    def __str__(self) -> str:
        lines = ["graph():"]
        for node in self.nodes:
            s = node.format_node()
            if s:
                lines.append("    " + s)
        return "\n".join(lines)

    def print_tabular(self) -> None:
        """Print the nodes as a table (needs the `tabulate` package)."""
        try:
            from tabulate import tabulate
        except ImportError:
            print("`print_tabular` relies on the library `tabulate`, which could not be "
                  "found on this machine. Run `pip install tabulate` to install the library.")
            raise
        specs = [[n.op, n.name, target_str(n.target), n.args, n.kwargs] for n in self.nodes]
        print(tabulate(specs, headers=["opcode", "name", "target", "args", "kwargs"]))
