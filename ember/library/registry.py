"""The operators registered through `ember.library`, reachable as PyTorch's `torch.ops`:
``ops.mylib`` a namespace, ``ops.mylib.foo`` an overload packet, ``ops.mylib.foo.default``
an overload. ``ops.aten.<name>`` finds ember's own function of that name."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from ember.core import dtype as _dtype
from ember.library.operator import Operator

# "ns::name" -> {overload name ("" for default) -> Operator}
OPERATORS: dict[str, dict[str, Operator]] = {}


def register(op: Operator) -> None:
    OPERATORS.setdefault(op.qualname, {})[op.schema.overload] = op


def lookup(qualname: str) -> Operator:
    """The operator ``ns::name`` or ``ns::name.overload`` (its default overload)."""
    name, _, overload = qualname.partition(".")
    found = OPERATORS.get(name, {}).get(overload)
    if found is None:
        raise RuntimeError(f"Operator {qualname} does not exist; define it first "
                           "(torch.library.define or torch.library.custom_op)")
    return found


def _fx_recorded(overload: OpOverload, args: tuple, kwargs: dict) -> Any:
    """While torch.fx traces (a Proxy among the arguments): the call recorded as a
    call_function node targeting the overload, as PyTorch records it; else None."""
    patching = sys.modules.get("ember.fx._patching")  # (not loaded: nothing traces)
    proxy = patching._find_proxy(args, kwargs, overload) if patching is not None else None
    if proxy is None:
        return None
    return proxy.tracer.create_proxy("call_function", overload, args, kwargs)


class OpOverload:
    """``torch.ops.mylib.foo.default``: one overload of an operator, callable."""

    def __init__(self, op: Operator) -> None:
        self._op = op
        self._schema = op.schema
        self._overloadname = op.schema.overload or "default"
        self.namespace = op.schema.namespace
        self.__name__ = f"{op.schema.name}.{self._overloadname}"
        self.__qualname__ = self.__name__
        self.__module__ = f"ember.ops.{self.namespace}"  # (fx names it torch.ops...)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        recorded = _fx_recorded(self, args, kwargs)
        return self._op(*args, **kwargs) if recorded is None else recorded

    @property
    def _vmap_rule(self) -> Callable | None:
        """The op's batching rule (`register_vmap`): `vmap` of this overload calls it."""
        return self._op.vmap

    def name(self) -> str:
        return self._op.qualname + (f".{self._op.schema.overload}"
                                    if self._op.schema.overload else "")

    def __repr__(self) -> str:
        return (f"<OpOverload(op='{self.namespace}.{self._op.schema.name}', "
                f"overload='{self._overloadname}')>")

    def __str__(self) -> str:
        return f"{self.namespace}.{self.__name__}"

    def __hash__(self) -> int:
        return hash(self._op)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OpOverload) and other._op is self._op


class OpOverloadPacket:
    """``torch.ops.mylib.foo``: all overloads of ``mylib::foo``; calling it calls the
    default overload (or the only one)."""

    def __init__(self, namespace: str, name: str) -> None:
        self._namespace, self._name = namespace, name
        self._qualified_op_name = f"{namespace}::{name}"
        self.__name__ = name

    def _overloads(self) -> dict[str, Operator]:
        return OPERATORS.get(self._qualified_op_name, {})

    def overloads(self) -> list[str]:
        return [o or "default" for o in self._overloads()]

    def __getattr__(self, overload: str) -> OpOverload:
        if overload.startswith("__"):
            raise AttributeError(overload)
        op = self._overloads().get("" if overload == "default" else overload)
        if op is None:
            raise AttributeError(f"The underlying op of '{self}' has no overload name "
                                 f"'{overload}'")
        return OpOverload(op)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        ops = self._overloads()
        return OpOverload(ops.get("") or next(iter(ops.values())))(*args, **kwargs)

    @property
    def default(self) -> OpOverload:
        return self.__getattr__("default")

    @property
    def _vmap_rule(self) -> Callable | None:
        """The batching rule of the overload a call runs (`register_vmap`)."""
        ops = self._overloads()
        op = ops.get("") or next(iter(ops.values()), None)
        return op.vmap if op is not None else None

    def __repr__(self) -> str:
        return f"<OpOverloadPacket(op='{self._namespace}.{self._name}')>"

    def __str__(self) -> str:
        return f"{self._namespace}.{self._name}"


class _AtenFunction:
    """``torch.ops.aten.add`` (and any overload of it, ``aten.add.Tensor``): ember's
    function. An overload prints as PyTorch's (``aten.add.Tensor``) and has the path
    generated code names it by (``torch.ops.aten.add.Tensor``): torch.export's graphs
    hold these."""

    __module__ = "torch.ops.aten"

    def __init__(self, name: str, fn: Callable, overload: str | None = None) -> None:
        self._name, self._fn, self._overload = name, fn, overload
        self.__name__ = name if overload is None else f"{name}.{overload}"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._fn(*args, **kwargs)

    def __getattr__(self, overload: str) -> Any:
        if overload.startswith("__") or self._overload is not None:
            raise AttributeError(overload)
        return _AtenFunction(self._name, self._fn, overload)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, _AtenFunction) and other._fn is self._fn
                and other.__name__ == self.__name__)

    def __hash__(self) -> int:
        return hash((id(self._fn), self.__name__))

    def __reduce__(self) -> tuple:
        return (aten_function, (self._name, self._overload))

    def __repr__(self) -> str:
        return f"aten.{self.__name__}"


def _sym_size(t: Any, dim: int) -> int:
    return t.size(dim)


# ATen ops with no ember function of their name (exported graphs' dynamic sizes use them)
_ATEN_EXTRA: dict[str, Callable] = {"sym_size": _sym_size}


def aten_function(name: str, overload: str | None = None) -> _AtenFunction:
    """``torch.ops.aten.<name>[.<overload>]``: ember's declared op of that name (its
    in-place variant for ``add_``), else ember's or torch.nn.functional's function."""
    import ember
    import ember.nn.functional as F
    from ember.core.opdef import OPS

    op = OPS.get(name[:-1] if name.endswith("_") else name)
    fn = None
    if op is not None:
        fn = op.public_inplace if name.endswith("_") else op.public
    if fn is None:
        fn = _ATEN_EXTRA.get(name) or getattr(ember, name, None) or getattr(F, name, None)
    if not callable(fn):
        raise AttributeError(f"'_OpNamespace' 'aten' object has no attribute '{name}'")
    packet = _AtenFunction(name, fn)
    return packet if overload is None else getattr(packet, overload)


class OpNamespace:
    """``torch.ops.mylib``: attribute lookup finds the namespace's operators."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __getattr__(self, op_name: str) -> Any:
        if op_name.startswith("__"):
            raise AttributeError(op_name)
        if f"{self.name}::{op_name}" in OPERATORS:
            return OpOverloadPacket(self.name, op_name)
        if self.name == "aten":
            return aten_function(op_name)
        raise AttributeError(f"'_OpNamespace' '{self.name}' object has no attribute "
                             f"'{op_name}'")

    def __repr__(self) -> str:
        api = _dtype.API_NAME
        return f"<module '{api}.ops.{self.name}' from '{api}.ops'>"


class Ops:
    """``torch.ops``: namespaces made on first access (PyTorch's `_Ops`)."""

    def __init__(self) -> None:
        self._namespaces: dict[str, OpNamespace] = {}

    def __getattr__(self, name: str) -> OpNamespace:
        if name.startswith("__"):
            raise AttributeError(name)
        if name not in self._namespaces:
            self._namespaces[name] = OpNamespace(name)
        return self._namespaces[name]

    def load_library(self, path: str) -> None:
        """PyTorch loads a C++ operator library here; ember has no C++ dispatcher."""
        raise RuntimeError(f"torch.ops.load_library({path!r}): ember cannot load C++ operator "
                           "libraries; define the operators in Python with "
                           "torch.library.custom_op")

    def __repr__(self) -> str:
        return f"<module '{_dtype.API_NAME}.ops' from '_ops.py'>"


ops = Ops()
