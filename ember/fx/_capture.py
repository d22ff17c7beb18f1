"""Graph capture by running: one eager call of a function on real tensors, each declared
op it runs (outermost only: a composite's inner ops are its own business) recorded as a
node of an fx Graph. What `torch.compile`'s custom backends receive (ember.jit.backends)
and what `torch.export` builds (ember.export) — PyTorch gets both from dynamo's bytecode
tracing; ember sees the ops where they enter (ember.core.interpose).

Shapes, Python control flow and everything read from a shape are fixed at the values of
this call (dynamo's `dynamic=False`): the graph is valid for inputs of the same shapes,
dtypes and devices. A read of a tensor's value into Python (`.item()`, `if t > 0`), or a
backward pass run inside the call, is what dynamo would break the graph at: the capture
notes it in `broken` (the caller runs such a function eagerly).
"""

from __future__ import annotations

import operator
import os
import sys
from collections.abc import Callable
from typing import Any

from ember.core import interpose, tracing
from ember.core.tensor import Tensor
from ember.fx.graph import Graph
from ember.fx.node import Node

__all__ = ["Capture", "TargetOf"]

TargetOf = Callable[[Any, str, tuple, dict, bool], tuple[str, Any, str | None]]
"""`target_of(op, entered_name, args, kwargs, method) -> (node op, target, node name)`:
how a call of a declared op is recorded (dynamo's `torch.relu` / `operator.add`, or
export's `aten.relu.default`); `method`: it was called as a Tensor method with a form of
its own (`x.reshape(2, 3)`, which `torch.reshape` does not take)."""


def pytree_tensors(tree: Any) -> list[Tensor]:
    """The tensors in `tree` (lists, tuples, dicts walked), in order."""
    if isinstance(tree, Tensor):
        return [tree]
    if isinstance(tree, (list, tuple)):
        return [t for x in tree for t in pytree_tensors(x)]
    if isinstance(tree, dict):
        return [t for x in tree.values() for t in pytree_tensors(x)]
    return []


_NOT_USER_CODE = (os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep,
                  os.path.dirname(os.__file__) + os.sep)  # ember's files, the stdlib's


def _method_call(op: Any, name: str) -> bool:
    """Whether the op call being recorded entered through a Tensor method of its own
    (the function the op-entry composition runs is not the public function's)."""
    if name != op.name:
        return False
    frame = sys._getframe(2)
    for _ in range(4):  # (the hook, interpose's step and run: `run` holds the function)
        if frame is None:
            return False
        if frame.f_code.co_name == "run" and "fn" in frame.f_locals:
            return frame.f_locals["fn"] is not getattr(op.public, "__wrapped__", op.public)
        frame = frame.f_back
    return False


def _all_tensors(out: Any) -> bool:
    """Whether a tuple result holds only tensors (in nested tuples too; None allowed)."""
    return all(t is None or isinstance(t, Tensor) or (
        isinstance(t, (tuple, list)) and t and _all_tensors(t)) for t in out)


class Segment:
    """One graph of a call that broke (dynamo's graph before a break, or after it): its
    graph, the tensors its placeholders stand for, the tensor whose value Python read
    where it ended (None for the last), and the tensors later segments read from it."""

    def __init__(self, graph: Graph, placeholders: list[tuple[Node, Tensor]],
                 broke_on: Tensor | None, reason: str | None = None) -> None:
        self.graph = graph
        self.placeholders = placeholders
        self.broke_on = broke_on
        self.reason = reason  # why it ended (None: the call returned)
        self.exports: list[Tensor] = []


class Capture:
    """Records one call into `graph`. Tensors get their nodes from `placeholder` (now),
    `lift` (a placeholder made at first use, as dynamo lifts the parameters it reads), or
    the op that made them; any other tensor an op reads is a constant, a get_attr of
    `_tensor_constant<N>` (kept in `constants`).

    With `breaks`, a read of a tensor's value into Python ends the graph there and starts
    another, as dynamo's graph breaks do: `finish` then returns every segment (the
    earlier ones return the tensor read and what later segments use of theirs)."""

    def __init__(self, target_of: TargetOf, int_lists: bool = False,
                 breaks: bool = False, variable_names: bool = False) -> None:
        self.graph = Graph()
        self.target_of = target_of
        self.int_lists = int_lists  # record tuples of ints as lists (ATen's int[] form)
        self.breaks = breaks
        self.variable_names = variable_names  # name nodes after the user's variables
        self._named: set[int] = set()  # ids of the nodes already named after a variable
        self.constants: dict[str, Tensor] = {}
        self.broken: str | None = None  # why the call cannot be one graph (None: it can)
        self.placeholders: list[tuple[Node, Tensor]] = []  # in the graph's order
        self.segments: list[Segment] = []  # the graphs that ended at a break
        self._nodes: dict[int, tuple[Node, Tensor]] = {}  # id(tensor) -> (its node, it)
        self._earlier: dict[int, tuple[Segment, Node, Tensor]] = {}  # earlier segments'
        self._lifted: dict[int, tuple] = {}  # placeholders made at first use
        self._elements: dict[int, tuple[Tensor, Node, tuple]] = {}  # outputs of tuple ops
        self._getitems: dict[tuple[Node, tuple], Node] = {}
        self._depth = 0

    # -- where tensors come from ---------------------------------------------------------
    def placeholder(self, tensor: Tensor, target: str, name: str | None = None,
                    type_expr: Any = None) -> Node:
        """A graph input for `tensor` (in the order of the calls): the forward's argument
        `target`, its node `name` (default: `target`)."""
        last = self.placeholders[-1][0] if self.placeholders else None
        with (self.graph.inserting_after(last) if last is not None
              else self.graph.inserting_before(None)):
            node = self.graph.create_node("placeholder", target, name=name,
                                          type_expr=type_expr)
        node.meta["val"] = tensor
        self.placeholders.append((node, tensor))
        self._nodes[id(tensor)] = (node, tensor)
        return node

    def lift(self, tensor: Tensor, target: str, type_expr: Any = None,
             early: bool = False) -> None:
        """Make `tensor`'s placeholder (argument `target`) when an op first reads it;
        `early`: before the other tensors that op reads (dynamo lifts a module's
        parameters when the module is read, before its forward uses the input)."""
        self._lifted.setdefault(id(tensor), (target, tensor, type_expr, early))

    def node_of(self, x: Tensor) -> Node:
        """The node whose value `x` is (a constant's get_attr for a tensor from outside)."""
        found = self._nodes.get(id(x))
        if found is not None and found[1] is x:
            return found[0]
        key = id(x)
        element = self._elements.get(key)
        if element is not None and element[0] is x:
            node = self._getitem(element)
            if node.graph is not self.graph:  # a tuple result of an earlier segment
                self._earlier[key] = (self._segment_of(node.graph), node, x)
            else:
                node.meta["val"] = x
                self._nodes[key] = (node, x)
                return node
        earlier = self._earlier.get(key)
        if earlier is not None and earlier[2] is x:  # made before the break: an input here
            segment, node, _ = earlier
            if not any(t is x for t in segment.exports):
                segment.exports.append(x)
            return self.placeholder(x, f"L_{node.name}_", f"l_{node.name}_", type(x))
        if key in self._lifted and self._lifted[key][1] is x:
            target, _, type_expr, _ = self._lifted[key]
            return self.placeholder(x, target, target.lower(), type_expr)
        name = f"_tensor_constant{len(self.constants)}"
        self.constants[name] = x
        node = self.graph.get_attr(name)
        node.meta["val"] = x
        self._nodes[key] = (node, x)
        return node

    def _getitem(self, element: tuple[Tensor, Node, tuple]) -> Node:
        """The getitem chain reaching a tuple result's element (in the tuple's graph)."""
        node = element[1]
        for depth in range(1, len(element[2]) + 1):  # shared prefixes made once
            step = self._getitems.get((element[1], element[2][:depth]))
            if step is None:
                step = node.graph.call_function(operator.getitem,
                                                (node, element[2][depth - 1]))
                self._getitems[(element[1], element[2][:depth])] = step
            node = step
        return node

    def _segment_of(self, graph: Graph) -> Segment:
        return next(s for s in self.segments if s.graph is graph)

    def argument(self, a: Any) -> Any:
        """`a` with each tensor replaced by its node (lists, tuples and dicts walked)."""
        if isinstance(a, Tensor):
            return self.node_of(a)
        if isinstance(a, (list, tuple)) and not hasattr(a, "_fields"):
            if self.int_lists and type(a) is tuple and a and all(type(x) is int for x in a):
                return list(a)
            return type(a)(self.argument(x) for x in a)
        if isinstance(a, dict):
            return {k: self.argument(v) for k, v in a.items()}
        return a

    # -- the call ------------------------------------------------------------------------
    def _hook(self, op: Any, name: str, call: Callable[[tuple, dict], Any], args: tuple,
              kwargs: dict) -> Any:
        if self._depth or tracing.value_read is None:  # inside an op, or a paused check
            return call(args, kwargs)
        self._depth += 1
        try:
            out = call(args, kwargs)
        finally:
            self._depth -= 1
        method = _method_call(op, name)
        kind, target, node_name = self.target_of(op, name, args, kwargs, method)
        if method and kind == "call_function" and len(args) > 2 and all(
                type(a) is int for a in args[1:]):
            args = (args[0], list(args[1:]))  # `x.view(2, 3)` as aten.view(x, [2, 3])
        if self._lifted:
            for t in pytree_tensors((args, kwargs)):
                if self._lifted.get(id(t), (None, None, None, False))[3]:
                    self.node_of(t)
        if isinstance(out, Tensor):
            node = self.graph.create_node(kind, target, self.argument(args),
                                          self.argument(kwargs), name=node_name)
            node.meta["val"] = out
            self._nodes[id(out)] = (node, out)
        elif isinstance(out, (tuple, list)) and out and _all_tensors(out):
            node = self.graph.create_node(kind, target, self.argument(args),
                                          self.argument(kwargs), name=node_name)
            node.meta["val"] = list(out)
            self._index(out, node, ())
        elif out is None:  # (an op that declines returns None: nothing to record)
            if name == "__setitem__":
                self.graph.create_node(kind, target, self.argument(args),
                                       self.argument(kwargs), name=node_name)
        elif self.broken is None:
            self.broken = f"{name} returned a Python value ({type(out).__name__})"
        return out

    def _index(self, out: Any, node: Node, path: tuple[int, ...]) -> None:
        """Note where each tensor of a (nested) tuple result is: a getitem chain on
        `node`, made on first use, as dynamo's."""
        for i, t in enumerate(out):
            if isinstance(t, Tensor):
                self._elements[id(t)] = (t, node, (*path, i))
            elif t is not None:
                self._index(t, node, (*path, i))

    def _value_read(self, x: Any, how: str) -> None:
        if self._depth or self.broken is not None:
            return
        if not self.breaks:
            self.broken = f"the call reads a tensor's value into Python ({how})"
            return
        self.node_of(x)  # (in this graph: it is what the graph returns first)
        segment = Segment(self.graph, self.placeholders, x,
                          f"the call reads a tensor's value into Python ({how})")
        self.segments.append(segment)
        for node, t in self._nodes.values():
            if node.op not in ("placeholder", "get_attr"):
                self._earlier[id(t)] = (segment, node, t)
        self.graph, self.placeholders, self._nodes = Graph(), [], {}

    def _backward(self, node: Any, run: Callable[[], Any]) -> Any:
        if self.broken is None:
            self.broken = "the call runs a backward pass"
        return run()

    def run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Call `fn` eagerly, recording it; returns what it returns."""
        if tracing.value_read is not None:
            raise RuntimeError("a graph capture is already running (torch.compile or "
                               "torch.export called inside a compiled or exported call)")
        hook, backward = self._hook, self._backward  # (one bound method each: removable)
        interpose.install(hook, -200)  # outermost: autocast's casts are recorded inside
        interpose.install_backward(backward)
        tracing.value_read = self._value_read
        tracer = sys.gettrace()
        if self.variable_names:
            sys.settrace(self._trace_call)
        try:
            return fn(*args, **kwargs)
        finally:
            if self.variable_names:
                sys.settrace(tracer)
            tracing.value_read = None
            interpose.remove_backward(backward)
            interpose.remove(hook)

    # -- naming nodes after variables, as dynamo does ---------------------------------------
    def _trace_call(self, frame: Any, event: str, arg: Any) -> Any:
        """sys.settrace's hook: follow the lines of the user's own functions (not ember's,
        not the standard library's)."""
        filename = frame.f_code.co_filename
        if filename.startswith(_NOT_USER_CODE) or filename.startswith("<"):
            return None
        return self._trace_line

    def _trace_line(self, frame: Any, event: str, arg: Any) -> Any:
        """Before each line and at return: a tensor a variable now holds, made by a node
        not yet named after a variable, names that node (``x = a / b`` -> node ``x``)."""
        if event in ("line", "return"):
            for name, value in frame.f_locals.items():
                if isinstance(value, Tensor) and not name.startswith("_"):
                    found = self._nodes.get(id(value))
                    if found is not None and found[1] is value:
                        self._name_after(found[0], name)
        return self._trace_line

    def _name_after(self, node: Node, variable: str) -> None:
        if id(node) in self._named or not node.op.startswith("call_"):
            return
        self._named.add(id(node))
        node.name = self.graph._graph_namespace.create_name(variable, None)

    def output(self, tensors: list[Tensor]) -> Node:
        """End the graph: it returns `tensors` as a tuple (dynamo's and export's form)."""
        node = self.graph.output(tuple(self.node_of(t) for t in tensors))
        return node

    def finish(self, tensors: list[Tensor]) -> list[Segment]:
        """End the call returning `tensors`: every segment, in order, each graph ending
        in its output (an earlier one returns the tensor read, then those read later)."""
        self.output(tensors)
        last = Segment(self.graph, self.placeholders, None)
        for segment in self.segments:
            segment.graph.output(tuple(
                self._nodes_in(segment)[id(t)] for t in [segment.broke_on, *segment.exports]))
        return [*self.segments, last]

    def _nodes_in(self, segment: Segment) -> dict[int, Node]:
        found = {id(t): n for s, n, t in self._earlier.values() if s is segment}
        found.update({id(t): n for n, t in segment.placeholders})
        for n in segment.graph.nodes:
            val = n.meta.get("val")
            if isinstance(val, Tensor):
                found.setdefault(id(val), n)
        return found
