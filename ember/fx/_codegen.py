"""Python source for a Graph, as torch.fx 2.13 writes it (`GraphModule.code`): one line
per node, each value freed (`;  x = None`) after its last use, operators written as
Python operators, torch functions by their `torch.` path, anything else as a global."""

from __future__ import annotations

import enum
import types
import typing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ember.fx._names import Namespace, custom_builtins, is_from_torch, qualified_name
from ember.fx.node import Node, _type_repr

if TYPE_CHECKING:
    from ember.fx.graph import Graph

_REFLECTABLE = {
    "add": "{} + {}", "sub": "{} - {}", "mul": "{} * {}", "floordiv": "{} // {}",
    "truediv": "{} / {}", "div": "{} / {}", "mod": "{} % {}", "pow": "{} ** {}",
    "lshift": "{} << {}", "rshift": "{} >> {}", "and_": "{} & {}", "or_": "{} | {}",
    "xor": "{} ^ {}", "getitem": "{}[{}]", "matmul": "{} @ {}",
}
MAGIC_METHODS = {
    "eq": "{} == {}", "ne": "{} != {}", "lt": "{} < {}", "gt": "{} > {}", "le": "{} <= {}",
    "ge": "{} >= {}", "pos": "+{}", "neg": "-{}", "invert": "~{}", **_REFLECTABLE,
}
REFLECTABLE_MAGIC_METHODS = _REFLECTABLE
INPLACE_METHODS = {
    "iadd": "{} += {}", "iand": "{} &= {}", "ifloordiv": "{} //= {}", "ilshift": "{} <<= {}",
    "imod": "{} %= {}", "imul": "{} *= {}", "imatmul": "{} @= {}", "ior": "{} |= {}",
    "ipow": "{} **= {}", "irshift": "{} >>= {}", "isub": "{} -= {}", "itruediv": "{} /= {}",
    "ixor": "{} ^= {}", "setitem": "{}[{}] = {}",
}


_ORIGIN_TYPES = {list: typing.List, dict: typing.Dict, set: typing.Set,  # noqa: UP006
                 frozenset: typing.FrozenSet, tuple: typing.Tuple}  # noqa: UP006


@dataclass
class PythonCode:
    """The source of a forward function and the globals it runs with."""

    src: str
    globals: dict[str, Any]


def format_target(base: str, target: str) -> str:
    """``self.a.b``; a path element that is no identifier as ``getattr(self.seq, "0")``."""
    r = base
    for e in target.split("."):
        r = f"{r}.{e}" if e.isidentifier() else f'getattr({r}, "{e}")'
    return r


_DTYPE_ABBREVIATIONS = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16",
                        "int64": "i64", "int32": "i32", "int16": "i16", "int8": "i8",
                        "uint8": "u8", "bool": "b8", "complex64": "c64", "complex128": "c128"}


def tensor_annotation(t: Any, shape: list | None = None) -> str:
    """A tensor's dtype and shape as torch's readable graphs print them: ``f32[2, 4]``
    (`shape`: the sizes to print instead, symbols for dynamic ones: ``f32[s0, 4]``)."""
    dtype = str(t.dtype).rsplit(".", 1)[-1]
    shape = list(t.shape) if shape is None else shape
    return f"{_DTYPE_ABBREVIATIONS.get(dtype, dtype)}[{', '.join(str(d) for d in shape)}]"


def python_code(graph: Graph, root_module: str, verbose: bool = False) -> PythonCode:
    """The source of ``forward`` for `graph` (torch's `Graph.python_code(root_module)`)."""
    namespace = Namespace()
    nodes = list(graph.nodes)
    saved = {n: n._repr_fn for n in nodes}
    for n in nodes:
        n._repr_fn = lambda node: namespace.create_name(node.name, node)
    try:
        return _gen(nodes, root_module, namespace, verbose)
    finally:
        for n, fn in saved.items():
            n._repr_fn = fn


def _stack_trace_summary(node: Node) -> str:
    trace = node.stack_trace
    if not trace:
        return "\n# No stacktrace found for following nodes\n"
    lines = [ln.strip() for ln in trace.strip().splitlines()]
    where = next((ln for ln in reversed(lines) if ln.startswith("File ")), lines[-1])
    return f"\n# {where}\n"


def _gen(nodes: list[Node], root_module: str, namespace: Namespace,
         verbose: bool = False) -> PythonCode:
    import ember

    free_vars: list[str] = []
    body: list[str] = []
    globals_: dict[str, Any] = {}
    wrapped: dict[str, None] = {}

    def add_global(name_hint: str, obj: Any) -> str:
        if is_from_torch(obj) and obj is not ember.device:
            return qualified_name(obj)
        name = namespace.create_name(name_hint, obj)
        globals_[name] = obj
        return name

    for name, obj in custom_builtins().items():
        namespace.reserve(name, obj)
        globals_[name] = obj

    def type_repr(o: Any) -> str:
        if o == ():
            return "()"
        typename = _type_repr(o)
        if isinstance(o, types.UnionType) and "|" in typename:
            return "|".join(type_repr(arg) for arg in typing.get_args(o))
        origin = getattr(o, "__origin__", None)
        if origin is not None:
            if isinstance(o, typing._GenericAlias):  # list[int] is typing.List[int] here
                origin = _ORIGIN_TYPES.get(origin, origin)
            origin_name = add_global(_type_repr(origin), origin)
            args = typing.get_args(o)
            if args:
                return f"{origin_name}[{','.join(type_repr(a) for a in args)}]"
            return origin_name
        return add_global(typename, o)

    def get_repr(arg: Any) -> str:
        if isinstance(arg, Node):
            return repr(arg)
        if isinstance(arg, tuple) and hasattr(arg, "_fields"):
            return f"{add_global(qualified_name(type(arg)), type(arg))}{tuple(arg)!r}"
        if isinstance(arg, enum.Enum):
            return f"{add_global(type(arg).__name__, type(arg))}.{arg.name}"
        if isinstance(arg, ember.Tensor):
            dtype = str(arg.dtype).split(".")[-1]
            return f"torch.Tensor(size={list(arg.size())}, dtype={dtype})"
        if isinstance(arg, tuple):
            if len(arg) == 1:
                return f"({get_repr(arg[0])},)"
            return "(" + ", ".join(get_repr(a) for a in arg) + ")"
        if isinstance(arg, list):
            return "[" + ", ".join(get_repr(a) for a in arg) + "]"
        if isinstance(arg, slice):
            return f"slice({get_repr(arg.start)}, {get_repr(arg.stop)}, {get_repr(arg.step)})"
        return repr(arg)

    def format_args(args: tuple, kwargs: dict) -> str:
        res = [get_repr(a) for a in args]
        res.extend(f"{k} = {get_repr(v)}" for k, v in kwargs.items())
        return ", ".join(res)

    # each value is freed right after the node that reads it last
    last_use: dict[Node, Node] = {}
    frees: dict[Node, list[Node]] = {}
    for node in reversed(nodes):
        for inp in node._input_nodes:
            if inp not in last_use:
                last_use[inp] = node
                frees.setdefault(node, []).append(inp)

    def free_after(user: Node) -> None:
        if user.op == "placeholder":
            return
        if user.op == "output":
            body.append("\n")
            return
        dead = list(frees.get(user, []))
        if not user.users:
            dead.append(user)
        if dead:
            body.append(";  " + " = ".join([repr(n) for n in dead] + ["None"]) + "\n")
        else:
            body.append("\n")

    return_annotation = ""

    def emit(node: Node) -> None:
        nonlocal return_annotation
        annotation = "" if node.type is None else f" : {type_repr(node.type)}"
        if verbose and isinstance(node.meta.get("val"), ember.Tensor):
            annotation = f': "{tensor_annotation(node.meta["val"], node.meta.get("shape"))}"'
        if node.op == "placeholder":
            default = "" if not node.args else f" = {get_repr(node.args[0])}"
            free_vars.append(f"{node.target}{annotation}{default}")
            raw_name = node.target.replace("*", "")
            if raw_name != repr(node):
                body.append(f"{node!r} = {raw_name}\n")
            return
        if node.op == "call_method":
            body.append(f"{node!r}{annotation} = "
                        f"{format_target(get_repr(node.args[0]), node.target)}"
                        f"({format_args(node.args[1:], node.kwargs)})")
            return
        if node.op == "call_function":
            target = node.target
            op_name = getattr(target, "__name__", "")
            if getattr(target, "__module__", "") == "_operator" and op_name in MAGIC_METHODS:
                body.append(f"{node!r}{annotation} = "
                            + MAGIC_METHODS[op_name].format(*(get_repr(a) for a in node.args)))
                return
            if getattr(target, "__module__", "") == "_operator" and op_name in INPLACE_METHODS:
                body.append(INPLACE_METHODS[op_name].format(*(get_repr(a) for a in node.args))
                            + f";  {node!r}{annotation} = {get_repr(node.args[0])}")
                return
            global_name = add_global(qualified_name(target), target)
            if (global_name == "getattr" and len(node.args) == 2
                    and isinstance(node.args[1], str) and node.args[1].isidentifier()):
                body.append(f"{node!r}{annotation} = "
                            f"{format_target(get_repr(node.args[0]), node.args[1])}")
                return
            body.append(f"{node!r}{annotation} = "
                        f"{global_name}({format_args(node.args, node.kwargs)})")
            if node.meta.get("is_wrapped", False):
                wrapped.setdefault(global_name)
            return
        if node.op == "call_module":
            body.append(f"{node!r}{annotation} = {format_target(root_module, node.target)}"
                        f"({format_args(node.args, node.kwargs)})")
            return
        if node.op == "get_attr":
            body.append(f"{node!r}{annotation} = {format_target(root_module, node.target)}")
            return
        if node.op == "output":
            if node.type is not None:
                return_annotation = f" -> {type_repr(node.type)}"
            body.append(f"return {get_repr(node.args[0])}")
            return
        raise NotImplementedError(f"node: {node.op} {node.target}")

    prev_summary = None
    for node in nodes:
        if verbose and node.op not in ("placeholder", "output"):
            summary = _stack_trace_summary(node)
            if summary != prev_summary:
                prev_summary = summary
                body.append(summary)
        emit(node)
        free_after(node)
    if not body:
        body.append("pass\n")
    if wrapped:
        from ember.fx._symbolic_trace import wrap

        wrap_name = add_global("wrap", wrap)
        wrap_stmts = "\n".join(f'{wrap_name}("{name}")' for name in wrapped)
    else:
        wrap_stmts = ""
    if not free_vars or free_vars[0] != "self":
        free_vars.insert(0, "self")
    prologue = f"def forward({', '.join(free_vars)}){return_annotation}:"
    code = "".join(body).lstrip("\n")
    code = "\n".join("    " + line for line in code.split("\n"))
    return PythonCode(f"\n{wrap_stmts}\n\n{prologue}\n{code}", globals_)
