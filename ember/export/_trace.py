"""`torch.export.export`: one call of a module captured as an ATen-level fx graph.

The call runs once on the example inputs (ember.fx._capture); each declared op it runs
is a node named as PyTorch's pre-dispatch ATen op (`torch.ops.aten.conv2d.default`), and
the graph's inputs are the module's parameters (`p_fc_weight`), buffers (`b_bn_running_
mean`), then the user's tensors, as torch.export lays them out.

Dynamic dimensions (`dynamic_shapes` with `Dim`s): the call is captured a second time
with those dimensions grown; every integer of the graph that changed with them (a
`view`'s size, say) is recomputed from the input's size in the graph (`aten.sym_size.int`
and integer arithmetic), so the program runs at any size the Dim allows. A graph whose
ops change with the size is refused, as torch refuses a dimension it must specialize.
"""

from __future__ import annotations

import inspect
import operator
from typing import Any

import ember
from ember.core.tensor import Tensor
from ember.export.dynamic_shapes import Dim
from ember.export.graph_signature import (
    InputKind,
    InputSpec,
    OutputKind,
    OutputSpec,
    TensorArgument,
)
from ember.fx._capture import Capture
from ember.fx.graph import Graph
from ember.fx.node import Node
from ember.utils import _pytree as pytree

__all__ = ["export", "aten_target"]

exporting = False
"""True while an export captures a call (`torch.compiler.is_exporting()`)."""

# ATen's overload of each op that torch.export's graphs name (the rest: `.default`)
_OVERLOADS = {"flatten": "using_ints", "softmax": "int", "log_softmax": "int",
              "transpose": "int", "select": "int", "split": "Tensor", "unbind": "int",
              "squeeze": "dim", "unflatten": "int", "var": "correction", "std": "correction",
              "pow": "Tensor_Scalar", "max": "dim", "min": "dim", "where": "self",
              "repeat_interleave": "self_int", "sub": "Tensor", "mul": "Tensor",
              "add": "Tensor", "div": "Tensor", "rsub": "Scalar", "remainder": "Scalar"}
_COMPARISONS = {"eq", "ne", "lt", "le", "gt", "ge"}
_REDUCTIONS = {"mean": "dim", "sum": "dim_IntList", "amax": "default", "amin": "default"}


def aten_target(op: Any, name: str, args: tuple, kwargs: dict, method: bool = False
                ) -> tuple[str, Any, str]:
    """How torch.export names a call of declared op `op` entered as `name`:
    ``aten.conv2d.default``, ``aten.add.Tensor``, ``aten.add_.Tensor``."""
    from ember.library.registry import aten_function

    if name in ("__getitem__", "__setitem__"):
        fn = operator.getitem if name == "__getitem__" else operator.setitem
        return "call_function", fn, name.strip("_")
    base = op.name
    if name.startswith("__i") or (name.endswith("_") and not name.startswith("__")):
        base += "_"
    if op.name in _COMPARISONS:
        other = args[1] if len(args) > 1 else kwargs.get("other")
        overload = "Tensor" if isinstance(other, Tensor) else "Scalar"
    elif op.name in _REDUCTIONS:
        overload = _REDUCTIONS[op.name] if len(args) > 1 or "dim" in kwargs else "default"
    elif op.name == "pow" and len(args) > 1 and isinstance(args[1], Tensor):
        overload = "Tensor_Tensor"
    else:
        overload = _OVERLOADS.get(op.name, "default")
    return "call_function", aten_function(base, overload), base


def _user_inputs(mod: Any, args: tuple, kwargs: dict) -> list[tuple[str, Any]]:
    """(name, value) of each argument of `mod.forward`, as the signature names them."""
    try:
        bound = inspect.signature(mod.forward).bind(*args, **kwargs)
    except (TypeError, ValueError) as err:
        raise TypeError(f"torch.export.export: the example inputs do not match "
                        f"{type(mod).__name__}.forward's signature: {err}") from None
    named = []
    for name, value in bound.arguments.items():
        kind = bound.signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            named += [(f"{name}_{i}", v) for i, v in enumerate(value)]
        elif kind is inspect.Parameter.VAR_KEYWORD:
            named += list(value.items())
        else:
            named.append((name, value))
    return named


def _persistent(mod: Any, path: str) -> bool:
    owner, _, leaf = path.rpartition(".")
    sub = mod.get_submodule(owner) if owner else mod
    return leaf not in getattr(sub, "_non_persistent_buffers_set", set())


class _Captured:
    """One capture of `mod(*args, **kwargs)`: the graph, its specs and its inputs."""

    def __init__(self, mod: Any, args: tuple, kwargs: dict) -> None:
        capture = Capture(aten_target, int_lists=True)
        specs: list[InputSpec] = []
        self.user_leaves: list[tuple[str, Tensor]] = []
        for path, p in mod.named_parameters():
            node = capture.placeholder(p, "p_" + path.replace(".", "_"))
            specs.append(InputSpec(InputKind.PARAMETER, TensorArgument(node.name), path))
        for path, b in mod.named_buffers():
            node = capture.placeholder(b, "b_" + path.replace(".", "_"))
            specs.append(InputSpec(InputKind.BUFFER, TensorArgument(node.name), path,
                                   _persistent(mod, path)))
        for name, value in _user_inputs(mod, args, kwargs):
            leaves = pytree.tree_leaves(value)
            for j, leaf in enumerate(leaves):
                if isinstance(leaf, Tensor):
                    label = name if leaf is value else f"{name}_{j}"
                    node = capture.placeholder(leaf, label)
                    specs.append(InputSpec(InputKind.USER_INPUT, TensorArgument(node.name),
                                           None))
                    self.user_leaves.append((node.name, leaf))
        global exporting
        exporting = True
        try:
            out = capture.run(mod, *args, **kwargs)
        finally:
            exporting = False
        if capture.broken is not None:
            raise RuntimeError(f"torch.export.export({type(mod).__name__}): {capture.broken}; "
                               "data-dependent Python control flow cannot be exported "
                               "(torch.cond expresses it in PyTorch)")
        leaves, self.out_spec = pytree.tree_flatten(out)
        tensors = [t for t in leaves if isinstance(t, Tensor)]
        if len(tensors) != len(leaves):
            raise RuntimeError(f"torch.export.export({type(mod).__name__}): the forward "
                               "returns non-tensor values "
                               f"{[type(x).__name__ for x in leaves if not isinstance(x, Tensor)]}")
        output = capture.output(tensors)
        self.output_specs = [OutputSpec(OutputKind.USER_OUTPUT, TensorArgument(n.name), None)
                             for n in output.args[0]]
        self.input_specs = specs
        self.graph: Graph = capture.graph
        self.constants = capture.constants


def _dynamic_dims(named: list[tuple[str, Any]], dynamic_shapes: Any
                  ) -> list[tuple[str, int, Dim]]:
    """(input name, dimension, Dim) for each dynamic dimension `dynamic_shapes` marks."""
    if dynamic_shapes is None:
        return []
    if isinstance(dynamic_shapes, dict):
        names = [n for n, _ in named]
        if set(dynamic_shapes) - set(names):
            from ember._dynamo.exc import UserError

            raise UserError(f"When `dynamic_shapes` is specified as a dict, its top-level keys "
                            f"must be the arg names {names} of `inputs`, but here they are "
                            f"{list(dynamic_shapes)}. Alternatively, you could also ignore arg "
                            "names entirely and specify `dynamic_shapes` as a list/tuple "
                            "matching `inputs`.")
        per_input = [dynamic_shapes.get(n) for n, _ in named]
    else:
        per_input = list(dynamic_shapes)
    found = []
    for (name, value), spec in zip(named, per_input):
        if spec is None:
            continue
        if not isinstance(value, Tensor):
            raise ValueError(f"torch.export.export: dynamic_shapes for {name!r}, which is "
                             f"not a tensor")
        dims = spec.items() if isinstance(spec, dict) else enumerate(spec)
        for d, dim in dims:
            if dim is None or dim is Dim.STATIC:
                continue
            if not isinstance(dim, Dim):
                raise ValueError(f"torch.export.export: dynamic_shapes[{name!r}][{d}] must be "
                                 f"a Dim, got {dim!r}")
            if not dim.allows(value.shape[d]):
                raise ValueError(f"torch.export.export: {name}.size()[{d}] = "
                                 f"{value.shape[d]} is outside {dim!r}")
            found.append((name, d % value.dim(), dim))
    return found


def _grown(value: Tensor, dim: int, by: int) -> Tensor:
    """`value` with `by` more entries along `dim` (copies of its first: valid indices)."""
    extra = value.narrow(dim, 0, 1).expand(
        *[by if i == dim else s for i, s in enumerate(value.shape)])
    return ember.cat([value, extra], dim)


def export(mod: Any, args: tuple, kwargs: dict | None = None, *,
           dynamic_shapes: Any = None, strict: bool = False,
           preserve_module_call_signature: tuple = ()) -> Any:
    """Capture ``mod(*args, **kwargs)`` as an :class:`ExportedProgram` (PyTorch's
    ``torch.export.export``): a graph of ATen ops whose inputs are the module's parameters
    and buffers and the user's tensors.

    Args:
        mod: the ``nn.Module`` to export.
        args: the example positional inputs (a tuple).
        kwargs: the example keyword inputs.
        dynamic_shapes: per input (a dict by argument name, or a tuple in order), a dict
            from dimension to :class:`Dim` for the dimensions that may vary; the others
            are fixed at the example's sizes (a call with another size fails its guard).
        strict: accepted (ember captures by running the module, as non-strict export).
    """
    from ember.export.exported_program import ExportedProgram

    if not isinstance(mod, ember.nn.Module):
        raise ValueError(f"Expected `mod` to be an instance of `torch.nn.Module`, got "
                         f"{type(mod)}.")
    if not isinstance(args, tuple):
        from ember._dynamo.exc import UserError

        raise UserError(f"Expecting `args` to be a tuple of example positional inputs, got "
                        f"{type(args)}")
    kwargs = {} if kwargs is None else kwargs
    named = _user_inputs(mod, args, kwargs)
    dims = _dynamic_dims(named, dynamic_shapes)
    captured = _Captured(mod, args, kwargs)
    symbols: dict[tuple[str, int], str] = {}
    ranges: dict[str, Dim] = {}
    if dims:
        _symbolize(mod, args, kwargs, named, dims, captured, symbols, ranges)
    return ExportedProgram(captured.graph, captured.input_specs, captured.output_specs,
                           {**dict(mod.named_parameters()), **dict(mod.named_buffers())},
                           captured.constants, captured.out_spec,
                           [(n, list(t.shape), t.dtype) for n, t in captured.user_leaves],
                           symbols, ranges)


def _symbolize(mod: Any, args: tuple, kwargs: dict, named: list[tuple[str, Any]],
               dims: list[tuple[str, int, Dim]], captured: _Captured,
               symbols: dict[tuple[str, int], str], ranges: dict[str, Dim]) -> None:
    """Make the integers of `captured`'s graph that follow the dynamic dimensions
    computed from the inputs' sizes (a second capture, those dimensions grown, shows
    which do)."""
    grow = {}
    sizes = {}
    by_name = dict(named)
    for i, (name, d, dim) in enumerate(dims):
        symbol = symbols.setdefault((name, d), f"s{len(ranges)}")
        ranges.setdefault(symbol, dim)
        grow[(name, d)] = i + 1
        sizes[(name, d)] = by_name[name].shape[d]
    new_named = []
    for name, value in named:
        for (n, d), by in grow.items():
            if n == name:
                value = _grown(value, d, by)
        new_named.append((name, value))
    bound = inspect.signature(mod.forward).bind(*args, **kwargs)
    for name, value in new_named:
        if name in bound.arguments:
            bound.arguments[name] = value
    other = _Captured(mod, bound.args, bound.kwargs)
    nodes_a = list(captured.graph.nodes)
    nodes_b = list(other.graph.nodes)

    def refuse(why: str) -> RuntimeError:
        return RuntimeError(f"torch.export.export({type(mod).__name__}): Constraints "
                            f"violated ({', '.join(d.__name__ for _, _, d in dims)})! {why}; "
                            "the dimension must be static (drop its Dim)")

    if [(n.op, n.target) for n in nodes_a] != [(n.op, n.target) for n in nodes_b]:
        raise refuse("the ops the module runs change with the size")
    placeholders = {n.name: n for n in nodes_a if n.op == "placeholder"}
    size_nodes: dict[tuple[str, int], Node] = {}
    last_placeholder = [n for n in nodes_a if n.op == "placeholder"][-1]
    graph = captured.graph

    def size_node(key: tuple[str, int]) -> Node:
        if key not in size_nodes:
            from ember.library.registry import aten_function

            with graph.inserting_after(last_placeholder):
                size_nodes[key] = graph.create_node(
                    "call_function", aten_function("sym_size", "int"),
                    (placeholders[key[0]], key[1]), name="sym_size_int")
        return size_nodes[key]

    def explain(a: int, b: int, before: Node) -> Any:
        """A node computing the integer that is `a` at the example's sizes, `b` grown."""
        for key, by in grow.items():
            delta = b - a
            if delta % by:
                continue
            k = delta // by
            offset = a - k * sizes[key]
            with graph.inserting_before(before):
                value: Any = size_node(key)
                if k != 1:
                    value = graph.call_function(operator.mul, (value, k))
                if offset:
                    value = graph.call_function(operator.add, (value, offset))
            return value
        raise refuse(f"the integer {a} changes to {b}")

    def merge(x: Any, y: Any, before: Node) -> Any:
        if isinstance(x, bool) or isinstance(x, Node) or x == y:
            return x
        if isinstance(x, int) and isinstance(y, int):
            return explain(x, y, before)
        if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)) and len(x) == len(y):
            return type(x)(merge(a, b, before) for a, b in zip(x, y))
        if isinstance(x, dict) and isinstance(y, dict) and x.keys() == y.keys():
            return {k: merge(x[k], y[k], before) for k in x}
        raise refuse(f"the argument {x!r} changes to {y!r}")

    for a, b in zip(nodes_a, nodes_b):
        if a.op == "call_function":
            a.args = merge(a.args, b.args, a)
            a.kwargs = merge(a.kwargs, b.kwargs, a)
        val_a, val_b = a.meta.get("val"), b.meta.get("val")
        if isinstance(val_a, Tensor) and isinstance(val_b, Tensor):
            a.meta["shape"] = [_symbol_of(s, t, sizes, grow, symbols)
                               for s, t in zip(val_a.shape, val_b.shape)]
    graph.lint()


def _symbol_of(a: int, b: int, sizes: dict, grow: dict, symbols: dict) -> Any:
    """How a printed size reads: `a` itself, or the expression of a symbol it follows."""
    if a == b:
        return a
    for key, by in grow.items():
        if (b - a) % by == 0:
            k = (b - a) // by
            offset = a - k * sizes[key]
            text = symbols[key] if k == 1 else f"{k}*{symbols[key]}"
            return text if not offset else f"{text} + {offset}"
    return a
