"""`torch.fx.Proxy`: the stand-in value that flows through a program being traced and
records every operation it meets (operators, method calls, attribute reads) as a Node."""

from __future__ import annotations

import dis
import inspect
import operator
from bisect import bisect_left
from collections.abc import Callable, Iterator
from typing import Any

from ember.fx._codegen import MAGIC_METHODS, REFLECTABLE_MAGIC_METHODS
from ember.fx.graph import Graph
from ember.fx.node import Argument, Node, Target

__all__ = ["Proxy", "Attribute", "ParameterProxy", "TraceError", "TracerBase",
           "GraphAppendingTracer"]


class TraceError(ValueError):
    """An operation symbolic tracing cannot record (control flow on a Proxy ...)."""


_BASE_TYPES = (str, int, float, bool, complex, type(None), type(...), range)


class TracerBase:
    """What turns values into node arguments and nodes into Proxies."""

    graph: Graph
    record_stack_traces = False
    trace_asserts = False
    proxy_buffer_attributes = False
    traced_func_name = "forward"

    def create_node(self, kind: str, target: Target, args: tuple, kwargs: dict,
                    name: str | None = None, type_expr: Any = None) -> Node:
        """Insert a Node into the graph being built (override to tag nodes)."""
        return self.graph.create_node(kind, target, args, kwargs, name, type_expr)

    def proxy(self, node: Node) -> Proxy:
        """The Proxy for `node`."""
        return Proxy(node, self)

    def create_proxy(self, kind: str, target: Target, args: tuple, kwargs: dict,
                     name: str | None = None, type_expr: Any = None,
                     proxy_factory_fn: Callable[[Node], Proxy] | None = None) -> Proxy:
        """Record ``kind``/``target`` called on `args`/`kwargs` (Proxies among them) as a
        Node, and return its Proxy."""
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        return self.proxy(node) if not proxy_factory_fn else proxy_factory_fn(node)

    def create_arg(self, a: Any) -> Argument:
        """`a` as a node argument: Proxies become their Nodes, containers are mapped."""
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, tuple):
            if hasattr(a, "_fields"):
                args = tuple(self.create_arg(elem) for elem in a)
                return self.create_node("call_function", a.__class__, args, {})
            return tuple(self.create_arg(elem) for elem in a)
        if isinstance(a, list):
            return [self.create_arg(elem) for elem in a]
        if isinstance(a, dict):
            out = {}
            for k, v in a.items():
                if isinstance(k, (Proxy, Node)):
                    raise RuntimeError("Keys for dictionaries used as an argument cannot "
                                       f"contain a Node. Got key: {k}")
                out[k] = self.create_arg(v)
            return out
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop),
                         self.create_arg(a.step))
        if isinstance(a, Node) or isinstance(a, _BASE_TYPES):
            return a
        import enum

        import ember

        if isinstance(a, (ember.dtype, ember.device, enum.Enum, type(ember.contiguous_format),
                          type(ember.strided))):
            return a
        if callable(a):
            return a
        raise NotImplementedError(f"argument of type: {type(a)}")

    def to_bool(self, obj: Proxy) -> bool:
        """A Proxy used as a condition: unknown while tracing."""
        raise TraceError("symbolically traced variables cannot be used as inputs to control "
                         "flow")

    def iter(self, obj: Proxy) -> Any:
        """A Proxy iterated over: unknown length while tracing."""
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the "
                         "Proxy is used in a loop or as a *args or **kwargs function argument. "
                         "See the torch.fx docs on pytorch.org for a more detailed explanation "
                         "of what types of control flow can be traced, and check out the Proxy "
                         "docstring for help troubleshooting Proxy iteration errors")

    def keys(self, obj: Proxy) -> Proxy:
        """``**proxy``: records ``proxy.keys()``."""
        return Attribute(obj, "keys")()


class GraphAppendingTracer(TracerBase):
    """The tracer behind ``Proxy(node)``: appends what it records to `graph`. While one
    lives, torch calls on its Proxies record (see `_symbolic_trace.recording`)."""

    def __init__(self, graph: Graph) -> None:
        import weakref

        from ember.fx._patching import recording

        super().__init__()
        self.graph = graph
        recording.acquire()
        weakref.finalize(self, recording.release)


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


TENSOR_METHOD_OF_OPERATOR = {
    "add": "add", "sub": "sub", "mul": "mul", "truediv": "div", "floordiv": "floor_divide",
    "mod": "remainder", "pow": "pow", "matmul": "matmul", "and_": "bitwise_and",
    "or_": "bitwise_or", "xor": "bitwise_xor", "eq": "eq", "ne": "ne", "lt": "lt",
    "le": "le", "gt": "gt", "ge": "ge"}
"""`tensor <op> proxy`: PyTorch records the Tensor method the operator runs (`t.add(p)`).
(ember's Tensor declines a Proxy operand, so such a call reaches the Proxy's reflected
operator, or an op-entry hook.)"""


def _reflected(method: str) -> None:
    def impl(self: Proxy, rhs: Any) -> Proxy:
        import ember

        if isinstance(rhs, ember.Tensor) and method in TENSOR_METHOD_OF_OPERATOR:
            return self.tracer.create_proxy("call_method", TENSOR_METHOD_OF_OPERATOR[method],
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
