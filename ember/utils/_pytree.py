"""`ember.utils._pytree` (torch.utils._pytree): nested containers of leaves as a flat list
of leaves plus a `TreeSpec` that rebuilds the structure.

A pytree node is a registered container type: list, tuple, dict, namedtuple,
OrderedDict, defaultdict and deque are built in; `register_pytree_node` adds others.
Anything else (a tensor, a number, None) is a leaf. Dicts keep their insertion order.
"""

from __future__ import annotations

from collections import OrderedDict, defaultdict, deque, namedtuple
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

__all__ = ["PyTree", "Context", "TreeSpec", "LeafSpec", "register_pytree_node",
           "tree_flatten", "tree_unflatten", "tree_leaves", "tree_structure", "tree_iter",
           "tree_map", "tree_map_", "tree_map_only", "tree_map_only_", "tree_all",
           "tree_any", "tree_all_only", "tree_any_only", "treespec_leaf", "tree_is_leaf",
           "treespec_pprint", "tree_flatten_with_path", "tree_leaves_with_path",
           "tree_map_with_path", "keystr", "key_get", "SequenceKey", "MappingKey",
           "GetAttrKey", "KeyEntry", "KeyPath"]

PyTree = Any
Context = Any


class NodeDef(NamedTuple):
    """How a registered container type flattens (`(children, context)`), rebuilds, and
    names its children (`flatten_with_keys_fn`: `([(key, child), ...], context)`)."""

    type: type
    flatten_fn: Callable[[Any], tuple[list[Any], Context]]
    unflatten_fn: Callable[[Iterable[Any], Context], Any]
    flatten_with_keys_fn: Callable[[Any], tuple[list[tuple[Any, Any]], Context]] | None = None


# -- key paths: where a leaf sits (`tree_flatten_with_path`) ------------------------------

@dataclass(frozen=True)
class SequenceKey:
    """A child of a sequence, by position: prints as `[0]`."""

    idx: int

    def __str__(self) -> str:
        return f"[{self.idx!r}]"

    def get(self, sequence: Any) -> Any:
        return sequence[self.idx]


@dataclass(frozen=True)
class MappingKey:
    """A child of a mapping, by key: prints as `['a']`."""

    key: Any

    def __str__(self) -> str:
        return f"[{self.key!r}]"

    def get(self, mapping: Any) -> Any:
        return mapping[self.key]


@dataclass(frozen=True)
class GetAttrKey:
    """A child held in an attribute (a namedtuple's field): prints as `.name`."""

    name: str

    def __str__(self) -> str:
        return f".{self.name}"

    def get(self, obj: Any) -> Any:
        return getattr(obj, self.name)


KeyEntry = Any
KeyPath = tuple[KeyEntry, ...]


def keystr(kp: KeyPath) -> str:
    """A key path as text, as Python would index it: `['a'][0].x`."""
    return "".join(str(k) for k in kp)


def key_get(obj: Any, kp: KeyPath) -> Any:
    """The child of `obj` at key path `kp`."""
    for k in kp:
        obj = k.get(obj)
    return obj


SUPPORTED_NODES: dict[Any, NodeDef] = {}


def register_pytree_node(cls: type, flatten_fn: Callable[[Any], tuple[list[Any], Context]],
                         unflatten_fn: Callable[[Iterable[Any], Context], Any], *,
                         serialized_type_name: str | None = None,
                         flatten_with_keys_fn: Callable[[Any], tuple[list[tuple[Any, Any]],
                                                                     Context]] | None = None,
                         **_: Any) -> None:
    """Make `cls` a pytree node: `flatten_fn(obj)` returns `(children, context)` and
    `unflatten_fn(children, context)` rebuilds the object; `flatten_with_keys_fn(obj)`,
    if given, returns `([(key, child), ...], context)` for the key-path functions
    (`tree_flatten_with_path`; without it they raise ValueError for `cls`).

    Raises:
        ValueError: if `cls` is already registered.
    """
    if cls in SUPPORTED_NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn, flatten_with_keys_fn)


_register_pytree_node = register_pytree_node  # the name older programs import


def _is_namedtuple_instance(tree: Any) -> bool:
    return isinstance(tree, tuple) and hasattr(type(tree), "_fields")


def _node_type(tree: Any) -> Any:
    """The registry key of `tree`'s type (namedtuples share one: `namedtuple`)."""
    if _is_namedtuple_instance(tree):
        return namedtuple
    return type(tree)


_get_node_type = _node_type  # PyTorch's name, which libraries (Lightning) import


def tree_is_leaf(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> bool:
    """Whether `tree` is a leaf: not a registered container, or `is_leaf(tree)`."""
    if is_leaf is not None and is_leaf(tree):
        return True
    return _node_type(tree) not in SUPPORTED_NODES


def _dict_flatten(d: dict) -> tuple[list[Any], Context]:
    return list(d.values()), list(d.keys())


def _dict_flatten_with_keys(d: dict) -> tuple[list[tuple[MappingKey, Any]], Context]:
    values, context = _dict_flatten(d)
    return [(MappingKey(k), v) for k, v in zip(context, values)], context


def _seq_flatten_with_keys(seq: Any, context: Context = None
                           ) -> tuple[list[tuple[SequenceKey, Any]], Context]:
    return [(SequenceKey(i), v) for i, v in enumerate(seq)], context


register_pytree_node(tuple, lambda t: (list(t), None), lambda values, _: tuple(values),
                     flatten_with_keys_fn=_seq_flatten_with_keys)
register_pytree_node(list, lambda t: (list(t), None), lambda values, _: list(values),
                     flatten_with_keys_fn=_seq_flatten_with_keys)
register_pytree_node(dict, _dict_flatten, lambda values, keys: dict(zip(keys, values)),
                     flatten_with_keys_fn=_dict_flatten_with_keys)
register_pytree_node(namedtuple, lambda t: (list(t), type(t)),
                     lambda values, cls: cls(*values),
                     flatten_with_keys_fn=lambda t: (
                         [(GetAttrKey(f), v) for f, v in zip(t._fields, t)], type(t)))
register_pytree_node(OrderedDict, _dict_flatten,
                     lambda values, keys: OrderedDict(zip(keys, values)),
                     flatten_with_keys_fn=_dict_flatten_with_keys)
register_pytree_node(defaultdict, lambda d: (list(d.values()), [d.default_factory, list(d)]),
                     lambda values, ctx: defaultdict(ctx[0], zip(ctx[1], values)),
                     flatten_with_keys_fn=lambda d: (
                         [(MappingKey(k), v) for k, v in d.items()], [d.default_factory, list(d)]))
register_pytree_node(deque, lambda d: (list(d), d.maxlen),
                     lambda values, maxlen: deque(values, maxlen=maxlen),
                     flatten_with_keys_fn=lambda d: _seq_flatten_with_keys(d, d.maxlen))


class TreeSpec:
    """The structure of a pytree: its node type, the node's context (a dict's keys, a
    namedtuple's class) and the specs of its children. A leaf's spec prints as `*`."""

    def __init__(self, type: Any, context: Context, children_specs: list[TreeSpec]
                 ) -> None:
        self.type = type
        self._context = context
        self._children = list(children_specs)
        self.num_children = len(self._children)
        self.num_leaves = sum(c.num_leaves for c in self._children)
        self.num_nodes = 1 + sum(c.num_nodes for c in self._children)

    @property
    def context(self) -> Context:
        return self._context

    @property
    def children_specs(self) -> list[TreeSpec]:
        return self._children

    def children(self) -> list[TreeSpec]:
        """The children's specs."""
        return list(self._children)

    def child(self, index: int) -> TreeSpec:
        """The spec of child `index`."""
        return self._children[index]

    def is_leaf(self) -> bool:
        return self.num_nodes == 1 and self.num_leaves == 1

    def __repr__(self, indent: int = 0) -> str:
        text = f"TreeSpec({self.type.__name__}, {self._context}, ["
        if self._children:
            indent += 2
            text += self._children[0].__repr__(indent)
            text += "," if len(self._children) > 1 else ""
            text += ",".join("\n" + " " * indent + c.__repr__(indent)
                             for c in self._children[1:])
        return text + "])"

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if other.__class__ is not self.__class__:
            return NotImplemented
        return str(self.type) == str(other.type) and self._context == other._context \
            and self._children == other._children

    __hash__ = None  # type: ignore[assignment]

    def unflatten(self, leaves: Iterable[Any]) -> PyTree:
        """The pytree of this structure holding `leaves` (in flattening order)."""
        if not isinstance(leaves, (list, tuple)):
            leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} "
                             f"but the spec refers to a pytree that holds {self.num_leaves} "
                             f"items ({self}).")
        return self._build(iter(leaves))

    def _build(self, leaves: Any) -> PyTree:
        if self.is_leaf():
            return next(leaves)
        children = [c._build(leaves) for c in self._children]
        return SUPPORTED_NODES[self.type].unflatten_fn(children, self._context)


class LeafSpec(TreeSpec):
    """The spec of a leaf."""

    def __init__(self) -> None:
        super().__init__(None, None, [])
        self.num_nodes = 1
        self.num_leaves = 1

    def __repr__(self, indent: int = 0) -> str:
        return "*"


_LEAF_SPEC = LeafSpec()


def treespec_leaf() -> LeafSpec:
    """The spec of a leaf."""
    return _LEAF_SPEC


def tree_flatten(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None
                 ) -> tuple[list[Any], TreeSpec]:
    """The leaves of `tree`, left to right, and its structure.

    Args:
        tree (pytree): nested containers.
        is_leaf (callable, optional): a node for which it returns True is a leaf.
    """
    leaves: list[Any] = []
    return leaves, _flatten(tree, is_leaf, leaves)


def _flatten(tree: PyTree, is_leaf: Callable | None, leaves: list[Any]) -> TreeSpec:
    if tree_is_leaf(tree, is_leaf):
        leaves.append(tree)
        return _LEAF_SPEC
    node = SUPPORTED_NODES[_node_type(tree)]
    children, context = node.flatten_fn(tree)
    return TreeSpec(node.type, context, [_flatten(c, is_leaf, leaves) for c in children])


def tree_unflatten(leaves: Iterable[Any], treespec: TreeSpec) -> PyTree:
    """The pytree of structure `treespec` holding `leaves`."""
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"tree_unflatten(leaves, treespec): Expected `treespec` to be "
                        f"instance of TreeSpec but got item of type {type(treespec)}.")
    return treespec.unflatten(leaves)


def tree_flatten_with_path(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None
                           ) -> tuple[list[tuple[KeyPath, Any]], TreeSpec]:
    """The leaves of `tree` with their key paths, and its structure.

    Raises:
        ValueError: for a node type registered without `flatten_with_keys_fn`.
    """
    leaves, spec = tree_flatten(tree, is_leaf)
    return list(zip(_paths(tree, is_leaf, ()), leaves)), spec


def _paths(tree: PyTree, is_leaf: Callable | None, prefix: KeyPath) -> Iterable[KeyPath]:
    if tree_is_leaf(tree, is_leaf):
        yield prefix
        return
    node = SUPPORTED_NODES[_node_type(tree)]
    if node.flatten_with_keys_fn is None:
        raise ValueError(f"Did not find a flatten_with_keys_fn for type: {node.type}. Please "
                         "pass a flatten_with_keys_fn argument to register_pytree_node.")
    for key, child in node.flatten_with_keys_fn(tree)[0]:
        yield from _paths(child, is_leaf, (*prefix, key))


def tree_leaves_with_path(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None
                          ) -> list[tuple[KeyPath, Any]]:
    """The leaves of `tree` with their key paths."""
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_map_with_path(func: Callable[..., Any], tree: PyTree, *rests: PyTree,
                       is_leaf: Callable[[PyTree], bool] | None = None) -> PyTree:
    """`tree` with each leaf replaced by `func(key_path, leaf, *matching leaves of
    rests)`."""
    with_path, spec = tree_flatten_with_path(tree, is_leaf)
    others = [_leaves_like(r, spec, is_leaf) for r in rests]
    return spec.unflatten(func(path, leaf, *(o[i] for o in others))
                          for i, (path, leaf) in enumerate(with_path))


class _Asterisk(str):
    """A leaf that prints as `*` (treespec_pprint's)."""

    def __repr__(self) -> str:
        return "*"


def treespec_pprint(treespec: TreeSpec) -> str:
    """A pytree structure as PyTorch prints it in messages: `{'a': *, 'b': (*, *)}`."""
    return repr(tree_unflatten([_Asterisk("*")] * treespec.num_leaves, treespec))


def tree_iter(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None
              ) -> Iterable[Any]:
    """The leaves of `tree`, one by one."""
    return iter(tree_leaves(tree, is_leaf))


def tree_leaves(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> list[Any]:
    """The leaves of `tree`, left to right."""
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None
                   ) -> TreeSpec:
    """The structure of `tree`."""
    return tree_flatten(tree, is_leaf)[1]


def tree_map(func: Callable[..., Any], tree: PyTree, *rests: PyTree,
             is_leaf: Callable[[PyTree], bool] | None = None) -> PyTree:
    """A pytree of `tree`'s structure holding `func(leaf, *corresponding leaves of rests)`.

    Raises:
        ValueError: if a tree of `rests` does not have `tree`'s structure.
    """
    leaves, spec = tree_flatten(tree, is_leaf)
    columns = [leaves] + [_leaves_like(r, spec, is_leaf) for r in rests]
    return spec.unflatten(func(*xs) for xs in zip(*columns))


def _leaves_like(tree: PyTree, spec: TreeSpec, is_leaf: Callable | None) -> list[Any]:
    leaves, other = tree_flatten(tree, is_leaf)
    if other != spec:
        raise ValueError(f"Tree structures do not match: expected {spec}, got {other}.")
    return leaves


def tree_map_(func: Callable[..., Any], tree: PyTree, *rests: PyTree,
              is_leaf: Callable[[PyTree], bool] | None = None) -> PyTree:
    """Call `func` on each leaf (for its side effects); returns `tree`."""
    leaves, spec = tree_flatten(tree, is_leaf)
    columns = [leaves] + [_leaves_like(r, spec, is_leaf) for r in rests]
    for xs in zip(*columns):
        func(*xs)
    return tree


def _only(type_or_types: type | tuple[type, ...], func: Callable[[Any], Any]
          ) -> Callable[[Any], Any]:
    if isinstance(type_or_types, list):
        type_or_types = tuple(type_or_types)

    def maybe(x: Any) -> Any:
        return func(x) if isinstance(x, type_or_types) else x
    return maybe


def tree_map_only(type_or_types: type | tuple[type, ...], func: Callable[[Any], Any],
                  tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> PyTree:
    """`tree_map` applying `func` only to the leaves of the given type(s); the other
    leaves are kept as they are."""
    return tree_map(_only(type_or_types, func), tree, is_leaf=is_leaf)


def tree_map_only_(type_or_types: type | tuple[type, ...], func: Callable[[Any], Any],
                   tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> PyTree:
    """`tree_map_` calling `func` only on the leaves of the given type(s)."""
    return tree_map_(_only(type_or_types, func), tree, is_leaf=is_leaf)


def tree_all(pred: Callable[[Any], bool], tree: PyTree,
             is_leaf: Callable[[PyTree], bool] | None = None) -> bool:
    """Whether `pred` holds for every leaf."""
    return all(map(pred, tree_leaves(tree, is_leaf)))


def tree_any(pred: Callable[[Any], bool], tree: PyTree,
             is_leaf: Callable[[PyTree], bool] | None = None) -> bool:
    """Whether `pred` holds for some leaf."""
    return any(map(pred, tree_leaves(tree, is_leaf)))


def tree_all_only(type_or_types: type | tuple[type, ...], pred: Callable[[Any], bool],
                  tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> bool:
    """Whether `pred` holds for every leaf of the given type(s)."""
    return all(pred(x) for x in tree_leaves(tree, is_leaf) if isinstance(x, type_or_types))


def tree_any_only(type_or_types: type | tuple[type, ...], pred: Callable[[Any], bool],
                  tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> bool:
    """Whether `pred` holds for some leaf of the given type(s)."""
    return any(pred(x) for x in tree_leaves(tree, is_leaf) if isinstance(x, type_or_types))
