"""Operator schemas as PyTorch writes them (``mylib::foo(Tensor x, int n=1) -> Tensor``):
parsed from a `Library.define` string, or inferred from a `custom_op` function's type
annotations, and the binding of a call's arguments to them, with PyTorch's errors."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ember.core.device import device as Device
from ember.core.dtype import dtype as DType
from ember.core.tensor import Tensor

NO_DEFAULT = inspect.Parameter.empty


@dataclass
class Argument:
    """One argument: its name, schema type (``Tensor?``, ``SymInt[]`` ...), default,
    whether it is keyword-only, and its alias annotation (``a!`` for a mutated tensor)."""
    name: str
    type: str
    default: Any = NO_DEFAULT
    kwarg_only: bool = False
    alias: str | None = None

    @property
    def is_mutable(self) -> bool:
        return bool(self.alias and self.alias.endswith("!"))

    def __str__(self) -> str:
        return self.text()

    def text(self, python_floats: bool = False) -> str:
        """``Tensor(a!) x``, ``float s=2.`` (``s=2.0`` with `python_floats`, as
        `infer_schema` writes defaults)."""
        typ = self.type
        if self.alias:  # Tensor(a!), Tensor(a!)? and Tensor(a!)[]
            base, _, rest = typ.partition("Tensor")
            typ = f"{base}Tensor({self.alias}){rest}"
        out = f"{typ} {self.name}"
        if self.default is not NO_DEFAULT:
            out += "=" + (repr(self.default) if python_floats and
                          isinstance(self.default, float) else _format_default(self.default))
        return out


@dataclass
class Schema:
    """A whole schema: ``namespace::name.overload(arguments) -> returns``."""
    namespace: str
    name: str
    overload: str
    arguments: list[Argument] = field(default_factory=list)
    returns: list[str] = field(default_factory=list)

    @property
    def qualname(self) -> str:
        return f"{self.namespace}::{self.name}"

    def __str__(self) -> str:
        return self.text()

    def text(self, python_floats: bool = False) -> str:
        args, star = [], False
        for a in self.arguments:
            if a.kwarg_only and not star:
                args.append("*")
                star = True
            args.append(a.text(python_floats))
        name = self.qualname + (f".{self.overload}" if self.overload else "")
        if len(self.returns) == 1:
            rets = self.returns[0]
        else:
            rets = "(" + ", ".join(self.returns) + ")"
        return f"{name}({', '.join(args)}) -> {rets}"


def _format_default(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        text = repr(value)
        return text[:-1] if text.endswith(".0") else text  # PyTorch writes 2. for 2.0
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_format_default(v) for v in value) + "]"
    return str(value)


# -- parsing a schema string ---------------------------------------------------------------

def _split_top(text: str, sep: str = ",") -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def _parse_default(text: str) -> Any:
    text = text.strip()
    if text in ("True", "False"):
        return text == "True"
    if text == "None":
        return None
    if text.startswith("[") and text.endswith("]"):
        return [_parse_default(t) for t in _split_top(text[1:-1])]
    if text[:1] in "\"'":
        return text[1:-1]
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text  # a named constant (contiguous_format, Mean ...)


def _parse_type(text: str) -> tuple[str, str | None]:
    """``Tensor(a!)?`` -> ("Tensor?", "a!")."""
    if "(" in text:
        head, _, rest = text.partition("(")
        alias, _, tail = rest.partition(")")
        return head + tail, alias
    return text, None


def parse(schema: str, namespace: str) -> Schema:
    """Parse ``name.overload(Type arg=default, *, ...) -> Ret`` in `namespace`."""
    head, arrow, rets = schema.partition("->")
    head = head.strip()
    if not arrow or "(" not in head or not head.endswith(")"):
        raise RuntimeError(f"Expected '->' in schema, or the schema is malformed: {schema}")
    qual, _, args = head.partition("(")
    args = args[:-1]
    if "::" in qual:
        namespace, _, qual = qual.partition("::")
    name, _, overload = qual.strip().partition(".")
    arguments, kwarg_only = [], False
    for part in _split_top(args):
        if part == "*":
            kwarg_only = True
            continue
        decl, eq, default = part.partition("=")
        typ, _, argname = decl.strip().rpartition(" ")
        typ, alias = _parse_type(typ.strip())
        arguments.append(Argument(argname, typ, _parse_default(default) if eq else NO_DEFAULT,
                                  kwarg_only, alias))
    rets = rets.strip()
    if rets.startswith("(") and rets.endswith(")"):
        returns = _split_top(rets[1:-1])
    else:
        returns = [rets]
    returns = [r.rpartition(" ")[0] if " " in r and not r.endswith(")") else r for r in returns]
    return Schema(namespace, name, overload, arguments, returns)


# -- inferring a schema from annotations -----------------------------------------------------

def _annotation_type(ann: Any) -> str | None:
    """The schema type of a Python annotation (PyTorch's infer_schema table)."""
    if ann is Tensor:
        return "Tensor"
    simple = {int: "SymInt", float: "float", bool: "bool", str: "str", DType: "ScalarType",
              Device: "Device"}
    if ann in simple:
        return simple[ann]
    origin, args = typing.get_origin(ann), typing.get_args(ann)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1 and len(args) == 2:
            inner = _annotation_type(rest[0])
            if inner is None or inner.endswith("?") or inner.startswith("Tensor") and \
                    inner.endswith("[]"):  # (PyTorch has no optional list of tensors)
                return None
            return inner + "?"
        if set(rest) <= {int, float, bool}:
            return "Scalar" + ("?" if len(rest) < len(args) else "")
        return None
    if origin in (list, Sequence, typing.Sequence) and len(args) == 1:
        inner = _annotation_type(args[0])
        return None if inner is None or inner.endswith("[]") else inner + "[]"
    return None


def _return_types(ann: Any) -> list[str] | None:
    if ann is None or ann is type(None):
        return []
    if typing.get_origin(ann) is tuple:
        out = [_annotation_type(a) for a in typing.get_args(ann)]
        return None if None in out else out
    one = _annotation_type(ann)
    return None if one is None else [one]


def infer(fn: Any, namespace: str, name: str, mutates_args: Any) -> Schema:
    """PyTorch's `infer_schema`: the schema of `fn` from its type annotations."""
    sig = inspect.signature(fn)

    def error(what: str) -> None:
        raise ValueError(f"infer_schema(func): {what} Got func with signature {sig})")

    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # (an unresolvable string annotation: reported per parameter below)
        hints = {}
    unknown = mutates_args == "unknown"
    mutated = set() if unknown else set(mutates_args)
    arguments = []
    for param in sig.parameters.values():
        if param.kind not in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
            error("We do not support positional-only args, varargs, or varkwargs.")
        if param.annotation is inspect.Parameter.empty:
            error(f"Parameter {param.name} must have a type annotation.")
        ann = hints.get(param.name, param.annotation)
        typ = _annotation_type(ann)
        if typ is None:
            error(f"Parameter {param.name} has unsupported type {ann}.")
        if param.default is not inspect.Parameter.empty and not (
                param.default is None or isinstance(param.default, (int, float, bool, str,
                                                                    DType, Device))):
            error(f"Parameter {param.name} has an unsupported default value type "
                  f"{type(param.default)}. Please file an issue on GitHub so we can "
                  "prioritize this.")
        alias = None
        if param.name in mutated or (unknown and typ.startswith("Tensor")):
            if not typ.startswith("Tensor"):
                error(f"Parameter {param.name} is in mutable_args but only Tensors or "
                      "collections of Tensors can be mutated")
            alias = f"a{len(arguments)}!"  # (PyTorch numbers them by position)
        arguments.append(Argument(param.name, typ, param.default,
                                  param.kind == param.KEYWORD_ONLY, alias))
    missing = mutated - {a.name for a in arguments}
    if missing:
        error(f"{missing} in mutates_args were not found in the custom op's signature. "
              "mutates_args should contain the names of all args that the custom op "
              "mutates, or just the string 'unknown' if you don't know.")
    if sig.return_annotation is inspect.Signature.empty:
        error("No return type annotation was provided. Please add one.")
    returns = _return_types(hints.get("return", sig.return_annotation))
    if returns is None:
        error(f"Return has unsupported type {sig.return_annotation}.")
    return Schema(namespace, name, "", arguments, returns)


# -- binding a call ---------------------------------------------------------------------------

def _type_ok(typ: str, value: Any) -> bool:
    if typ.endswith("?"):
        return value is None or _type_ok(typ[:-1], value)
    if typ.endswith("]"):
        inner = typ[:typ.index("[")]
        return isinstance(value, (list, tuple)) and all(_type_ok(inner, v) for v in value)
    if typ == "Tensor":
        return isinstance(value, Tensor)
    if typ in ("int", "SymInt"):
        return isinstance(value, int) and not isinstance(value, bool) or (
            isinstance(value, Tensor) and value.ndim == 0 and not value.is_floating_point())
    if typ == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if typ == "bool":
        return isinstance(value, bool)
    if typ == "str":
        return isinstance(value, str)
    if typ == "Scalar":
        return isinstance(value, (int, float, complex, bool))
    return True  # ScalarType, Device, Layout, MemoryFormat, Any: passed on as given


def _type_name(value: Any) -> str:
    return "Tensor" if isinstance(value, Tensor) else type(value).__name__


def bind(schema: Schema, args: tuple, kwargs: dict) -> tuple[list, dict]:
    """The call's values per schema argument, as (positional, keyword-only) for the
    kernel, with PyTorch's errors for a wrong count, a missing or mistyped argument."""
    n_pos = sum(not a.kwarg_only for a in schema.arguments)
    declaration = f"Declaration: {schema}"
    if len(args) > n_pos:
        if n_pos < len(schema.arguments):
            raise RuntimeError(f"{schema.qualname}() takes {n_pos} positional argument(s) but "
                               f"{len(args)} was/were given.  {declaration}")
        raise RuntimeError(f"{schema.qualname}() expected at most {len(schema.arguments)} "
                           f"argument(s) but received {len(args) + len(kwargs)} argument(s). "
                           f"{declaration}")
    names = {a.name for a in schema.arguments}
    if any(k not in names for k in kwargs):
        bad = next(k for k in kwargs if k not in names)
        if len(args) + len(kwargs) > len(schema.arguments):
            raise RuntimeError(f"{schema.qualname}() expected at most {len(schema.arguments)} "
                               f"argument(s) but received {len(args) + len(kwargs)} "
                               f"argument(s). {declaration}")
        raise RuntimeError(f"Unknown keyword argument '{bad}' for operator "
                           f"'{schema.qualname}'. {declaration}")
    positional, keywords = [], {}
    for i, a in enumerate(schema.arguments):
        if i < len(args):
            value = args[i]
        elif a.name in kwargs:
            value = kwargs[a.name]
        elif a.default is not NO_DEFAULT:
            value = a.default
        else:
            raise RuntimeError(f"{schema.qualname}() is missing value for argument "
                               f"'{a.name}'. {declaration}")
        if not _type_ok(a.type, value):
            raise RuntimeError(
                f"{schema.qualname}() Expected a value of type '{a.type}' for argument "
                f"'{a.name}' but instead found type '{_type_name(value)}'.\nPosition: {i}\n"
                f"Value: {value!r}\n{declaration}\nCast error details: Unable to cast "
                f"{value!r} to {a.type}")
        if a.kwarg_only:
            keywords[a.name] = value
        else:
            positional.append(value)
    return positional, keywords
