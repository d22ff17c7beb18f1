"""`torch.fx.subgraph_rewriter.replace_pattern`: find every copy of a pattern in a
GraphModule's graph and put a replacement in its place.

The pattern and the replacement are traced (functions or modules); a match maps each
pattern node onto a graph node of the same op and target, matching arguments
recursively back from the pattern's outputs (placeholders match any value). Matches
do not overlap, and a matched inner value may not be read outside its match.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from ember.fx._symbolic_trace import symbolic_trace
from ember.fx.graph import Graph
from ember.fx.graph_module import GraphModule
from ember.fx.node import Node

__all__ = ["Match", "replace_pattern"]


class Match(NamedTuple):
    """One match: the graph node matching the pattern's output, and pattern -> graph."""

    anchor: Node
    nodes_map: dict[Node, Node]


def _graph_of(obj: Callable[..., Any] | Graph | GraphModule) -> Graph:
    if isinstance(obj, Graph):
        return obj
    if isinstance(obj, GraphModule):
        return obj.graph
    return symbolic_trace(obj).graph


class _Matcher:
    def __init__(self, pattern: Graph) -> None:
        self.pattern = pattern
        outputs = [n for n in pattern.nodes if n.op == "output"]
        out_args = outputs[0].args[0]
        self.anchors = [n for n in (out_args if isinstance(out_args, (tuple, list))
                                    else [out_args]) if isinstance(n, Node)]

    def match_nodes(self, pn: Node, gn: Node, m: dict[Node, Node]) -> bool:
        if pn in m:
            return m[pn] is gn
        if any(v is gn for v in m.values()):
            return False
        if pn.op == "placeholder":
            m[pn] = gn
            return True
        if pn.op != gn.op or not _same_target(pn, gn):
            return False
        if len(pn.args) != len(gn.args) or set(pn.kwargs) != set(gn.kwargs):
            return False
        m[pn] = gn
        saved = dict(m)
        ok = self.match_args(pn.args, gn.args, m) and all(
            self.match_args(pn.kwargs[k], gn.kwargs[k], m) for k in pn.kwargs)
        if not ok:
            m.clear()
            m.update(saved)
            del m[pn]
        return ok

    def match_args(self, pa: Any, ga: Any, m: dict[Node, Node]) -> bool:
        if isinstance(pa, Node):
            if isinstance(ga, Node):
                return self.match_nodes(pa, ga, m)
            return pa.op == "placeholder" and not any(v is ga for v in m.values()) and \
                m.setdefault(pa, ga) is ga
        if isinstance(pa, (list, tuple)):
            return isinstance(ga, (list, tuple)) and len(pa) == len(ga) and all(
                self.match_args(p, g, m) for p, g in zip(pa, ga))
        if isinstance(pa, dict):
            return isinstance(ga, dict) and pa.keys() == ga.keys() and all(
                self.match_args(pa[k], ga[k], m) for k in pa)
        return not isinstance(ga, Node) and type(pa) is type(ga) and pa == ga

    def contained(self, m: dict[Node, Node]) -> bool:
        """No inner matched value is read outside the match."""
        matched = {id(g) for g in m.values()}
        anchors = {id(m[a]) for a in self.anchors}
        for pn, gn in m.items():
            if pn.op == "placeholder" or id(gn) in anchors or not isinstance(gn, Node):
                continue
            if any(id(u) not in matched for u in gn.users):
                return False
        return True

    def find(self, graph: Graph) -> list[Match]:
        matches: list[Match] = []
        taken: set[int] = set()
        first = self.anchors[0]
        for gn in graph.nodes:
            m: dict[Node, Node] = {}
            if not self.match_nodes(first, gn, m):
                continue
            if not self._rest(1, graph, m):
                continue
            if not self.contained(m):
                continue
            inner = [g for p, g in m.items() if p.op != "placeholder"]
            if any(id(g) in taken for g in inner):
                continue
            taken.update(id(g) for g in inner)
            matches.append(Match(anchor=gn, nodes_map=m))
        return matches

    def _rest(self, i: int, graph: Graph, m: dict[Node, Node]) -> bool:
        if i == len(self.anchors):
            return True
        for gn in graph.nodes:
            saved = dict(m)
            if self.match_nodes(self.anchors[i], gn, m) and self._rest(i + 1, graph, m):
                return True
            m.clear()
            m.update(saved)
        return False


def _same_target(pn: Node, gn: Node) -> bool:
    if pn.op in ("call_function", "call_method"):
        return pn.target == gn.target
    return True  # call_module/get_attr: any submodule/attribute in the same place


def replace_pattern(gm: GraphModule, pattern: Callable[..., Any] | Graph | GraphModule,
                    replacement: Callable[..., Any] | Graph | GraphModule) -> list[Match]:
    """Replace every non-overlapping match of `pattern` in ``gm.graph`` with
    `replacement` (functions, modules or graphs with the same inputs); recompiles `gm`
    and returns the matches."""
    original_graph = gm.graph
    pattern_graph = _graph_of(pattern)
    replacement_graph = _graph_of(replacement)
    matcher = _Matcher(pattern_graph)
    matches = matcher.find(original_graph)
    pattern_placeholders = [n for n in pattern_graph.nodes if n.op == "placeholder"]
    replacement_placeholders = [n for n in replacement_graph.nodes if n.op == "placeholder"]
    if len(pattern_placeholders) != len(replacement_placeholders):
        raise AssertionError("the pattern and the replacement must take the same inputs")
    for match in matches:
        val_map: dict[Node, Any] = {}
        for rn, pn in zip(replacement_placeholders, pattern_placeholders):
            val_map[rn] = match.nodes_map[pn]
        returning = [match.nodes_map[a] for a in matcher.anchors]
        users: set[Node] = set()
        for n in returning:
            users.update(n.users)
        first_user = next((n for n in original_graph.nodes if n in users), None)
        if first_user is None:
            first_user = next(n for n in reversed(original_graph.nodes) if n in returning).next
        with original_graph.inserting_before(first_user):
            copied = original_graph.graph_copy(replacement_graph, val_map)
        if isinstance(copied, Node) or not isinstance(copied, (list, tuple)):
            copied = [copied]
        for old, new in zip(returning, copied):
            old.replace_all_uses_with(new)
        for pn in reversed(list(pattern_graph.nodes)):
            if pn.op in ("placeholder", "output") or pn not in match.nodes_map:
                continue
            gn = match.nodes_map[pn]
            if not gn.users:
                original_graph.erase_node(gn)
    for rn in replacement_graph.nodes:  # attributes the replacement reads
        if rn.op in ("get_attr", "call_module") and isinstance(replacement, GraphModule):
            from ember.fx.graph_module import _copy_attr

            _copy_attr(replacement, gm, rn.target)
    gm.recompile()
    return matches


