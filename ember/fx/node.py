"""`torch.fx.Node`: one operation of a Graph, with its arguments, users and links.

Nodes of a Graph form a doubly-linked list around the graph's root sentinel; a node
knows the nodes it reads (`all_input_nodes`) and the nodes that read it (`users`), kept
in step whenever `args`/`kwargs` change. Printed forms are torch.fx's (`format_node`).
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ember.fx._names import SIDE_EFFECTFUL, qualified_name
from ember.fx.immutable_collections import immutable_dict, immutable_list

if TYPE_CHECKING:
    from ember.fx.graph import Graph

__all__ = ["Node", "map_arg", "map_aggregate", "has_side_effect", "Argument", "Target"]

Target = Any
Argument = Any

_OPS = ("placeholder", "call_method", "call_module", "call_function", "get_attr", "output",
        "root")


def map_aggregate(a: Argument, fn: Callable[[Argument], Argument]) -> Argument:
    """Apply `fn` to every leaf of `a`, rebuilding tuples, lists, dicts and slices (lists
    and dicts as the immutable kinds a Node's arguments are made of, as torch.fx)."""
    if isinstance(a, tuple):
        t = tuple(map_aggregate(elem, fn) for elem in a)
        return t if not hasattr(a, "_fields") else type(a)(*t)
    if isinstance(a, list):
        return immutable_list(map_aggregate(elem, fn) for elem in a)
    if isinstance(a, dict):
        return immutable_dict((k, map_aggregate(v, fn)) for k, v in a.items())
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn),
                     map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a: Argument, fn: Callable[[Node], Argument]) -> Argument:
    """Apply `fn` to each Node appearing in `a` (nested tuples, lists, dicts, slices)."""
    if not callable(fn):
        raise AssertionError("torch.fx.map_arg(a, fn): fn must be a callable")
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def has_side_effect(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Mark `fn` as having side effects: `eliminate_dead_code` keeps its calls."""
    SIDE_EFFECTFUL.add(fn)
    return fn


def _format_arg(arg: object) -> str:
    if isinstance(arg, list):
        return "[" + ", ".join(_format_arg(a) for a in arg) + "]"
    if isinstance(arg, tuple):
        return "(" + ", ".join(_format_arg(a) for a in arg) + ("," if len(arg) == 1 else "") + ")"
    if isinstance(arg, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in arg.items()) + "}"
    if isinstance(arg, Node):
        return "%" + str(arg)
    return str(arg)


def _type_repr(t: object) -> str:
    """A type annotation as torch.fx prints it (``int``, ``torch.Tensor``,
    ``typing.Optional[torch.Tensor]``)."""
    if isinstance(t, type):
        if t.__module__ == "builtins":
            return t.__qualname__
        module = t.__module__
        if module == "ember" or module.startswith("ember."):
            return qualified_name(t)
        return f"{module}.{t.__qualname__}"
    if t is ...:
        return "..."
    if isinstance(t, types.FunctionType):
        return t.__name__
    return repr(t)


class Node:
    """An operation in a :class:`Graph`: ``op`` is one of placeholder, get_attr,
    call_function, call_method, call_module, output; ``target`` what it calls or reads;
    ``args``/``kwargs`` its arguments (other Nodes among them)."""

    def __init__(self, graph: Graph, name: str, op: str, target: Target, args: tuple,
                 kwargs: dict, return_type: Any = None) -> None:
        if op not in _OPS:
            raise ValueError(f"Unsupported Node op {op!r}: expected one of {_OPS[:-1]}")
        if op == "call_function" and not callable(target):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has "
                             f"type {type(target).__name__} but a Callable is expected")
        if op in ("placeholder", "call_method", "call_module", "get_attr", "output") \
                and not isinstance(target, str):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has "
                             f"type {type(target).__name__} but a str is expected")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self._input_nodes: dict[Node, None] = {}
        self.users: dict[Node, None] = {}
        self.type = return_type
        self._prev = self
        self._next = self
        self._erased = False
        self._repr_fn: Callable[[Node], str] | None = None
        self.meta: dict[str, Any] = {}
        self._args: tuple = ()
        self._kwargs: dict = {}
        self._update_args_kwargs(args, kwargs)

    # -- the list ----------------------------------------------------------------------
    @property
    def next(self) -> Node:
        """The node after this one in the graph (the root sentinel after the last)."""
        return self._next

    @property
    def prev(self) -> Node:
        """The node before this one in the graph."""
        return self._prev

    def prepend(self, x: Node) -> None:
        """Move or insert `x` right before this node."""
        if self.graph is not x.graph:
            raise AssertionError("Attempting to move a Node into a different Graph")
        if self is x:
            return
        x._remove_from_list()
        p = self._prev
        p._next, x._prev = x, p
        x._next, self._prev = self, x
        self.graph._order = None

    def append(self, x: Node) -> None:
        """Move or insert `x` right after this node."""
        self._next.prepend(x)

    def _remove_from_list(self) -> None:
        p, n = self._prev, self._next
        p._next, n._prev = n, p
        self.graph._order = None

    # nodes compare by their place in the graph (`sorted(nodes)`: graph order)
    def _position(self) -> int:
        order = self.graph._order
        if order is None:
            order = self.graph._order = {n: i for i, n in enumerate(self.graph.nodes)}
        return order[self]

    def __lt__(self, other: Node) -> bool:
        return self._position() < other._position()

    def __gt__(self, other: Node) -> bool:
        return self._position() > other._position()

    def __le__(self, other: Node) -> bool:
        return self._position() <= other._position()

    def __ge__(self, other: Node) -> bool:
        return self._position() >= other._position()

    # -- arguments and uses ------------------------------------------------------------
    @property
    def args(self) -> tuple:
        """The positional arguments (Nodes where this node reads another's value)."""
        return self._args

    @args.setter
    def args(self, a: tuple) -> None:
        self._update_args_kwargs(a, self._kwargs)

    @property
    def kwargs(self) -> dict:
        """The keyword arguments."""
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k: dict) -> None:
        self._update_args_kwargs(self._args, k)

    @property
    def all_input_nodes(self) -> list[Node]:
        """The Nodes this node reads, in order of first appearance in args then kwargs."""
        return list(self._input_nodes)

    def update_arg(self, idx: int, arg: Argument) -> None:
        """Set ``args[idx] = arg``."""
        args = list(self.args)
        args[idx] = arg
        self.args = tuple(args)

    def update_kwarg(self, key: str, arg: Argument) -> None:
        """Set ``kwargs[key] = arg``."""
        self.kwargs = {**self.kwargs, key: arg}

    def _update_args_kwargs(self, new_args: tuple, new_kwargs: dict) -> None:
        self._args = map_aggregate(tuple(new_args), lambda x: x)
        self._kwargs = map_aggregate(dict(new_kwargs), lambda x: x)
        for old in self._input_nodes:
            old.users.pop(self, None)
        self._input_nodes = {}
        map_arg(self._args, self._input_nodes.setdefault)
        map_arg(self._kwargs, self._input_nodes.setdefault)
        for new in self._input_nodes:
            new.users.setdefault(self)

    def replace_all_uses_with(self, replace_with: Node,
                              delete_user_cb: Callable[[Node], bool] = lambda user: True,
                              *, propagate_meta: bool = False) -> list[Node]:
        """Make every user of this node read `replace_with` instead; returns the users
        changed (those `delete_user_cb` accepts)."""
        if propagate_meta:
            if replace_with.meta:
                raise AssertionError("Called node.replace_all_uses_with(replace_with, "
                                     "propagate_meta=True), but replace_with already has "
                                     ".meta keys")
            replace_with.meta.update(self.meta)
        to_process = [u for u in self.users if delete_user_cb(u)]
        for use_node in to_process:
            use_node.replace_input_with(self, replace_with)
        return to_process

    def replace_input_with(self, old_input: Node, new_input: Node) -> None:
        """Read `new_input` wherever this node reads `old_input`."""
        swap = lambda n: new_input if n is old_input else n  # noqa: E731
        self._update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    def is_impure(self, impure_random: bool = True) -> bool:
        """Whether removing this node could change the program: placeholders, outputs,
        asserts and functions marked `has_side_effect`, modules marked `_is_impure`
        (as torch.fx, in-place method calls are not); `eliminate_dead_code` keeps these."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_module":
            mod = self.graph.owning_module
            return mod is not None and getattr(mod.get_submodule(self.target), "_is_impure",
                                               False)
        if self.op == "call_function":
            from ember.fx._names import is_side_effectful
            return is_side_effectful(self.target, impure_random)
        return False

    @property
    def stack_trace(self) -> str | None:
        """Where the traced program created this node (when recorded)."""
        return self.meta.get("stack_trace")

    # -- printing ----------------------------------------------------------------------
    def __repr__(self) -> str:
        return self._repr_fn(self) if self._repr_fn else self.name

    @staticmethod
    def _pretty_print_target(target: object) -> str:
        if isinstance(target, str):
            return target
        module = getattr(target, "__module__", None)
        name = getattr(target, "__name__", None)
        if name is not None and module == "builtins":
            return f"builtins.{name}"
        if name is not None and module == "_operator":
            return f"operator.{name}"
        return qualified_name(target)

    def format_node(self, placeholder_names: list[str] | None = None,
                    maybe_return_typename: list[str] | None = None) -> str | None:
        """This node as `str(graph)` prints it: ``%name : [num_users=N] = op[target=t](...)``."""
        users = f"[num_users={len(self.users)}]"
        typename = f"{_type_repr(self.type)} " if self.type is not None else ""
        if self.op == "placeholder":
            arg_str = self.target
            if self.type:
                arg_str += arg_str + f": {_type_repr(self.type)}"
            if placeholder_names:
                placeholder_names.append(arg_str)
                return None
            default = "(default=" + str(self.args[0]) + ")" if self.args else ""
            return f"%{self.name} : {typename}{users} = {self.op}[target={self.target}]{default}"
        if self.op == "get_attr":
            return (f"%{self.name} : {typename}{users} = "
                    f"{self.op}[target={self._pretty_print_target(self.target)}]")
        if self.op == "output":
            if self.type and maybe_return_typename:
                maybe_return_typename[0] = f" -> {_type_repr(self.type)}"
            return f"return {self.args[0]}"
        return (f"%{self.name} : {typename}{users} = "
                f"{self.op}[target={self._pretty_print_target(self.target)}]("
                f"args = {_format_arg(self.args)}, kwargs = {_format_arg(self.kwargs)})")

    def __getstate__(self) -> dict:
        return dict(self.__dict__)

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

