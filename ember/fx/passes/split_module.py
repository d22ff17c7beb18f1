"""`torch.fx.passes.split_module.split_module`: a GraphModule cut into submodules
(`submod_<partition>`), one per value `split_callback(node)` returns, called in an order
that respects their data dependencies."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from ember.fx.graph import Graph
from ember.fx.graph_module import GraphModule
from ember.fx.node import Node, map_arg
from ember.nn import Module

__all__ = ["Partition", "split_module"]


class Partition:
    """The nodes of one partition and what crosses its border."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.submod_name = f"submod_{name}"
        self.node_names: list[str] = []
        self.inputs: dict[str, None] = {}
        self.outputs: dict[str, None] = {}
        self.dependencies: dict[str, None] = {}
        self.dependents: dict[str, None] = {}
        self.graph = Graph()
        self.environment: dict[Node, Node] = {}
        self.targets: dict[str, Any] = {}

    def __repr__(self) -> str:
        return (f"name: {self.name},\n nodes: {self.node_names},\n inputs: {self.inputs},\n"
                f" outputs: {self.outputs},\n partitions depended on: {self.dependencies},\n"
                f" partition dependents: {self.dependents}")


def split_module(m: GraphModule, root_m: Module, split_callback: Callable[[Node], int],
                 qualname_map: dict[str, str] | None = None,
                 keep_original_order: bool = False,
                 keep_original_node_name: bool = False,
                 partition_affix: str | None = None) -> GraphModule:
    """Split `m` (a GraphModule traced from `root_m`) into one submodule per partition:
    each call_* node goes to partition ``split_callback(node)``; placeholders stay in the
    outer graph, get_attr nodes are copied into each partition that reads them.

    Returns a GraphModule whose forward calls ``submod_<partition>`` in dependency order
    and gives the same results as `m`. A cycle between partitions raises RuntimeError."""
    partitions: dict[str, Partition] = {}
    orig_nodes: dict[str, Node] = {}
    owner: dict[str, str] = {}  # node name -> its partition

    def record_use(def_node: Node, use_node: Node | None) -> None:
        defined = owner.get(def_node.name)
        used = owner.get(use_node.name) if use_node is not None else None
        if defined != used:
            if defined is not None:
                partitions[defined].outputs.setdefault(def_node.name)
                if used is not None:
                    partitions[defined].dependents.setdefault(used)
            if used is not None:
                partitions[used].inputs.setdefault(def_node.name)
                if defined is not None:
                    partitions[used].dependencies.setdefault(defined)

    for node in m.graph.nodes:
        orig_nodes[node.name] = node
        if node.op in ("placeholder", "get_attr", "output"):
            continue
        name = str(split_callback(node))
        partition = partitions.get(name)
        if partition is None:
            partition = partitions[name] = Partition(name)
        partition.node_names.append(node.name)
        owner[node.name] = name
    for node in m.graph.nodes:
        if node.op == "output":
            map_arg(node.args[0], lambda n: record_use(n, None))
        elif node.op not in ("placeholder", "get_attr"):
            map_arg(node.args, lambda n, node=node: record_use(n, node) if n.op != "get_attr"
                    else None)
            map_arg(node.kwargs, lambda n, node=node: record_use(n, node)
                    if n.op != "get_attr" else None)

    order = _sorted(partitions)
    for name in order:  # each partition's inputs become its placeholders
        partition = partitions[name]
        for inp in partition.inputs:
            placeholder = partition.graph.placeholder(inp)
            placeholder.meta = dict(orig_nodes[inp].meta)
            partition.environment[orig_nodes[inp]] = placeholder
    for node in m.graph.nodes:
        if node.name not in owner:
            continue
        partition = partitions[owner[node.name]]
        env = partition.environment

        def value(n: Node, partition: Partition = partition) -> Node:
            if n in partition.environment:
                return partition.environment[n]
            if n.op == "get_attr":  # copied into each partition that reads it
                partition.targets[n.target] = _fetch(root_m, n.target)
                copied = partition.graph.get_attr(n.target)
                partition.environment[n] = copied
                return copied
            raise RuntimeError(f"split_module: node {n.name} is used by partition "
                               f"{partition.name} before it is defined")
        args = map_arg(node.args, value)
        kwargs = map_arg(node.kwargs, value)
        if node.op in ("call_module", "get_attr"):
            partition.targets[node.target] = _fetch(root_m, node.target)
        new = partition.graph.create_node(node.op, node.target, args, kwargs,
                                          name=node.name if keep_original_node_name else None)
        new.meta = dict(node.meta)
        env[node] = new

    base = Graph()
    base_env: dict[Node, Any] = {}
    for node in m.graph.nodes:
        if node.op == "placeholder":
            default = node.args[0] if node.args else None
            new = base.placeholder(node.target, node.type) if not node.args else \
                base.placeholder(node.target, node.type, default)
            new.meta = dict(node.meta)
            base_env[node] = new
        elif node.op == "get_attr":
            base_env[node] = base.get_attr(node.target)
    submodules: dict[str, Any] = {}
    for name in order:
        partition = partitions[name]
        outputs = [partition.environment[orig_nodes[o]] for o in partition.outputs]
        partition.graph.output(outputs[0] if len(outputs) == 1 else tuple(outputs))
        submodules[partition.submod_name] = GraphModule(partition.targets, partition.graph)
        call = base.call_module(partition.submod_name,
                                tuple(base_env[orig_nodes[i]] for i in partition.inputs))
        if len(partition.outputs) == 1:
            base_env[orig_nodes[next(iter(partition.outputs))]] = call
        else:
            for i, o in enumerate(partition.outputs):
                base_env[orig_nodes[o]] = base.call_function(operator.getitem, (call, i))
    for node in m.graph.nodes:
        if node.op == "output":
            base.output(map_arg(node.args[0], lambda n: base_env[n]))
    for node in m.graph.nodes:  # the outer graph's own get_attr targets
        if node.op == "get_attr":
            submodules[node.target] = _fetch(root_m, node.target)
    return GraphModule(submodules, base)


def _fetch(root: Any, target: str) -> Any:
    obj = root
    for atom in target.split("."):
        obj = getattr(obj, atom)
    return obj


def _sorted(partitions: dict[str, Partition]) -> list[str]:
    """The partitions in an order where each comes after those it depends on."""
    pending = {name: len(p.dependencies) for name, p in partitions.items()}
    ready = [name for name, count in pending.items() if count == 0]
    order = []
    while ready:
        name = ready.pop(0)
        order.append(name)
        for dependent in partitions[name].dependents:
            pending[dependent] -= 1
            if pending[dependent] == 0:
                ready.append(dependent)
    if len(order) != len(partitions):
        raise RuntimeError("cycle exists between partitions!")
    return order
