"""`torch.fx.Proxy`: the stand-in value that flows through a program being traced and
records every operation it meets (operators, method calls, attribute reads) as a Node."""

from __future__ import annotations

import dis
import inspect
import operator
from bisect import bisect_left
from collections.abc import Iterator
from typing import Any

from ember.fx._codegen import MAGIC_METHODS, REFLECTABLE_MAGIC_METHODS
from ember.fx.graph import Graph
from ember.fx.node import Node

__all__ = ["Proxy", "Attribute", "ParameterProxy", "TraceError", "GraphAppendingTracer"]


class TraceError(ValueError):
    """An operation symbolic tracing cannot record (control flow on a Proxy ...)."""


class GraphAppendingTracer:
    """The minimal tracer behind ``Proxy(node)``: appends what it records to node's graph."""

    def __init__(self, graph: Graph) -> None:
        import weakref

        from ember.fx._symbolic_trace import TracerBase, recording

        self._base = TracerBase()
        self._base.graph = graph
        self.graph = graph
        recording.acquire()
        weakref.finalize(self, recording.release)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._base, name)


def _calling_instruction() -> dis.Instruction:
    frame = inspect.currentframe().f_back.f_back
    insts = list(dis.get_instructions(frame.f_code))
    return insts[bisect_left(insts, frame.f_lasti, key=lambda x: x.offset)]


class Proxy:
    """Wraps a :class:`Node` while tracing: operations on it add Nodes to its graph.

    A Proxy cannot be iterated, used in control flow, or measured with ``len``: the
    value is unknown while tracing (see :class:`TraceError`)."""

    def __init__(self, node: Node, tracer: Any = None) -> None:
        if tracer is None:
            tracer = GraphAppendingTracer(node.graph)
        self.tracer = tracer
        self.node = node

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    def __getattr__(self, k: str) -> Attribute:
        if k.startswith("__") and k.endswith("__"):
            raise AttributeError(k)  # copy/pickle protocols probe these
        return Attribute(self, k)

    def __getstate__(self) -> dict:
        return self.__dict__

    def __setstate__(self, d: dict) -> None:
        self.__dict__ = d

    def __deepcopy__(self, memo: dict) -> Proxy:
        import copy

        return Proxy(copy.deepcopy(self.node, memo), self.tracer)

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __iter__(self) -> Iterator[Proxy]:
        inst = _calling_instruction()
        if inst.opname == "UNPACK_SEQUENCE":
            return (self[i] for i in range(inst.argval))
        return self.tracer.iter(self)

    def __abs__(self) -> Proxy:
        return self.tracer.create_proxy("call_function", operator.abs, (self,), {})

    def __bool__(self) -> bool:
        return self.tracer.to_bool(self)

    def keys(self) -> Proxy:
        return self.tracer.keys(self)

    def __len__(self) -> int:
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you "
                           "want this call to be recorded, please call torch.fx.wrap('len') "
                           "at module scope")


class Attribute(Proxy):
    """``proxy.attr``: a method call when called, else a ``getattr`` node (made lazily)."""

    def __init__(self, root: Proxy, attr: str) -> None:
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node: Node | None = None

    @property
    def node(self) -> Node:
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr,
                                                  (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


class ParameterProxy(Proxy):
    """A parameter's Proxy whose shape, size and dim read the real parameter."""

    def __init__(self, tracer: Any, node: Node, name: str, param: Any) -> None:
        super().__init__(node, tracer)
        self.param = param
        self.name = name

    def __repr__(self) -> str:
        return f"ParameterProxy({self.name})"

    @property
    def shape(self) -> Any:
        return self.param.shape

    def size(self, *dim: int) -> Any:
        return self.param.size(*dim)

    def dim(self) -> int:
        return self.param.dim()

    @property
    def ndim(self) -> int:
        return self.param.ndim

    def numel(self) -> int:
        return self.param.numel()

    def nelement(self) -> int:
        return self.param.nelement()


def _magic(method: str) -> None:
    def impl(*args: Any, **kwargs: Any) -> Proxy:
        return args[0].tracer.create_proxy("call_function", getattr(operator, method), args,
                                           kwargs)
    impl.__name__ = method
    setattr(Proxy, f"__{method.strip('_')}__", impl)


# `tensor <op> proxy` reaches the Proxy's reflected operator (the Tensor declines a
# Proxy): PyTorch records the Tensor method the operator runs, `t.add(proxy)`
_TENSOR_METHODS = {"add": "add", "sub": "sub", "mul": "mul", "truediv": "div",
                   "floordiv": "floor_divide", "mod": "remainder", "pow": "pow",
                   "matmul": "matmul", "and_": "bitwise_and", "or_": "bitwise_or",
                   "xor": "bitwise_xor"}


def _reflected(method: str) -> None:
    def impl(self: Proxy, rhs: Any) -> Proxy:
        import ember

        if isinstance(rhs, ember.Tensor) and method in _TENSOR_METHODS:
            return self.tracer.create_proxy("call_method", _TENSOR_METHODS[method],
                                            (rhs, self), {})
        return self.tracer.create_proxy("call_function", getattr(operator, method),
                                        (rhs, self), {})
    name = f"__r{method.strip('_')}__"
    impl.__name__ = impl.__qualname__ = name
    setattr(Proxy, name, impl)


for _m in MAGIC_METHODS:
    _magic(_m)
for _m in REFLECTABLE_MAGIC_METHODS:
    _reflected(_m)
