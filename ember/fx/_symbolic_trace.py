"""`torch.fx.Tracer` and `symbolic_trace`: run a module's forward on Proxies and record
what it does into a Graph; `wrap` keeps a function one node.

While a trace runs, `nn.Module.__call__` (a call of a leaf module becomes one call_module
node) and `nn.Module.__getattr__` (a parameter read becomes a get_attr node) are patched,
as torch.fx patches them, and calls of torch functions on Proxies record
(ember.fx._patching); all is undone when the trace ends.
"""

from __future__ import annotations

import functools
import inspect
import math
import typing
from collections.abc import Callable
from types import FunctionType, ModuleType
from typing import Any

from ember.fx._patching import WRAPPED, Patcher
from ember.fx.graph import Graph
from ember.fx.node import Argument
from ember.fx.proxy import ParameterProxy, Proxy, TracerBase

__all__ = ["Tracer", "TracerBase", "symbolic_trace", "wrap", "PH", "is_fx_tracing"]

_is_fx_tracing_flag = False


def is_fx_tracing() -> bool:
    """Whether a symbolic trace is running (modules may branch on it)."""
    return _is_fx_tracing_flag

class _PH:
    def __repr__(self) -> str:
        return "PH"


PH = _PH()
"""A placeholder for a `concrete_args` entry that stays an input of the graph."""


def _assert_is_none(value: Any, msg: str) -> None:
    assert value is None, msg


class Tracer(TracerBase):
    """Records a module's (or function's) forward as a :class:`Graph`: ``trace(root)``.

    Override `is_leaf_module` to choose which submodules stay calls (by default those
    of torch.nn but Sequential), `call_module`, `create_node`, `create_proxy`,
    `create_arg` or `getattr` to change what is recorded."""

    def __init__(self, autowrap_modules: tuple[ModuleType, ...] = (math,),
                 autowrap_functions: tuple[Callable[..., Any], ...] = (),
                 param_shapes_constant: bool = False) -> None:
        super().__init__()
        self._autowrap_function_ids = {
            id(value) for m in autowrap_modules for name, value in m.__dict__.items()
            if not name.startswith("_") and callable(value)}
        self._autowrap_function_ids.update(id(f) for f in autowrap_functions)
        self._autowrap_search = list(autowrap_modules)
        self.param_shapes_constant = param_shapes_constant
        self.submodule_paths: dict | None = None
        self.root_module_name = ""
        self.scope = None
        self.module_stack: dict = {}
        self.num_calls: dict[str, int] = {}

    # -- arguments ---------------------------------------------------------------------
    def create_arg(self, a: Any) -> Argument:
        """Parameters and buffers of the root become get_attr nodes; other tensors are
        stored on the root as ``_tensor_constant<N>`` and read with get_attr."""
        import ember
        from ember.nn import Module, Parameter

        if isinstance(a, Parameter):
            for n, p in self.root.named_parameters():
                if a is p:
                    return self.create_node("get_attr", n, (), {})
            raise NameError("parameter is not a member of this module")
        if isinstance(a, ember.Tensor):
            for n, p in self.root.named_buffers():
                if a is p:
                    return self.create_node("get_attr", n, (), {})
            qualname = self.tensor_attrs.get(id(a))
            if not qualname:
                qualname = self.get_fresh_qualname("_tensor_constant")
                self.tensor_attrs[id(a)] = qualname
                setattr(self.root, qualname, a)
            return self.create_node("get_attr", qualname, (), {})
        if isinstance(a, Module):
            for n, p in self.root.named_modules():
                if a is p:
                    return self.create_node("get_attr", n, (), {})
        return super().create_arg(a)

    def get_fresh_qualname(self, prefix: str) -> str:
        """A new attribute name of the root starting with `prefix` (`_tensor_constant0`)."""
        i = 0
        while hasattr(self.root, f"{prefix}{i}"):
            i += 1
        return f"{prefix}{i}"

    # -- modules -----------------------------------------------------------------------
    def is_leaf_module(self, m: Any, module_qualified_name: str) -> bool:
        """Whether `m` stays one call_module node: torch.nn's modules but Sequential."""
        from ember.nn import Sequential

        module = type(m).__module__
        return (module.startswith("ember.nn") or module.startswith("torch.nn")) \
            and not isinstance(m, Sequential)

    def path_of_module(self, mod: Any) -> str:
        """The qualified name of `mod` in the root (``"layer1.0.conv"``)."""
        if self.submodule_paths:
            path = self.submodule_paths.get(id(mod))
            if path is None:
                raise NameError("module is not installed as a submodule")
            return path
        for n, p in self.root.named_modules():
            if mod is p:
                return n
        raise NameError("module is not installed as a submodule")

    def call_module(self, m: Any, forward: Callable[..., Any], args: tuple, kwargs: dict
                    ) -> Any:
        """A call of submodule `m`: a call_module node for a leaf, else traced through."""
        module_qualified_name = self.path_of_module(m)
        self.num_calls[module_qualified_name] = self.num_calls.get(module_qualified_name, 0) + 1
        if not self.is_leaf_module(m, module_qualified_name):
            return forward(*args, **kwargs)
        return self.create_proxy("call_module", module_qualified_name, args, kwargs)

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict[str, Proxy]
                ) -> Any:
        """A module attribute read while tracing: a Proxy (get_attr) for a parameter of
        the root (and a buffer when `proxy_buffer_attributes`), else the value."""
        import ember
        from ember.nn import Parameter

        def proxy_for(collection: Any) -> Proxy | None:
            for n, p in collection:
                if attr_val is p:
                    if n not in parameter_proxy_cache:
                        factory = None if not self.param_shapes_constant else (
                            lambda node, n=n: ParameterProxy(self, node, n, attr_val))
                        kwargs = {"proxy_factory_fn": factory} if "proxy_factory_fn" in \
                            inspect.signature(self.create_proxy).parameters else {}
                        parameter_proxy_cache[n] = self.create_proxy("get_attr", n, (), {},
                                                                     **kwargs)
                    return parameter_proxy_cache[n]
            return None

        if isinstance(attr_val, Parameter):
            found = proxy_for(self.root.named_parameters())
            if found is not None:
                return found
        if self.proxy_buffer_attributes and isinstance(attr_val, ember.Tensor):
            found = proxy_for(self.root.named_buffers())
            if found is not None:
                return found
        return attr_val

    # -- tracing -----------------------------------------------------------------------
    def create_args_for_root(self, root_fn: Callable[..., Any], is_module: bool,
                             concrete_args: dict[str, Any] | tuple | None = None
                             ) -> tuple[Callable[..., Any], list[Any]]:
        """The placeholders for `root_fn`'s parameters (``self`` excepted)."""
        fn = inspect.unwrap(root_fn)
        co = fn.__code__
        total_args = co.co_argcount + co.co_kwonlyargcount
        names = iter(co.co_varnames)
        args: list[Any] = []
        skip = 0
        if is_module:
            if total_args == 0:
                raise RuntimeError("``self`` argument cannot be part of *args expansion!")
            skip = 1
            next(names)
            args.append(self.root)
        sig = inspect.signature(fn)
        arg_names = [next(names) for _ in range(skip, total_args)]
        if isinstance(concrete_args, tuple):
            if len(arg_names) != len(concrete_args):
                raise RuntimeError(f"Tracing expected {len(arg_names)} arguments but got "
                                   f"{len(concrete_args)} concrete arguments")
            concrete_args = dict(zip(arg_names, concrete_args))
        args.extend(self._placeholder(n, concrete_args, sig, fn) for n in arg_names)
        if co.co_kwonlyargcount > 0 or co.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
            if co.co_flags & inspect.CO_VARARGS:
                args.append(self._placeholder("*" + next(names), None, sig, fn))
            if co.co_flags & inspect.CO_VARKEYWORDS:
                args.append(self._placeholder("**" + next(names), None, sig, fn))
            root_fn = _patch_function(root_fn, len(args))
        return root_fn, args

    def _placeholder(self, name: str, concrete_args: dict | None, sig: inspect.Signature,
                     fn: Callable[..., Any]) -> Any:
        if concrete_args is not None and name in concrete_args:
            value = concrete_args[name]
            param = sig.parameters[name]
            default = () if param.default is inspect.Parameter.empty else (param.default,)
            if value is PH:
                return self.create_proxy("placeholder", f"{name}_1", default, {})
            out = self.create_proxy("placeholder", f"{name}_1", default, {})
            import ember

            if value is None:
                self.create_proxy("call_function", _assert_is_none, (
                    out, f"{name} has been specialized to have value None but got another "
                    "value"), {})
            elif type(value) in (bool, int, float, str):
                self.create_proxy("call_function", ember._assert, (
                    out == value, f"{name} has been specialized to have value {value} but got "
                    "another value"), {})
            return value
        if name[0] == "*":
            default: tuple = ()
        else:
            param = sig.parameters[name]
            default = () if param.default is inspect.Parameter.empty else (param.default,)
        return self.create_proxy("placeholder", name, default, {},
                                 type_expr=_annotations(fn).get(name, None))

    def trace(self, root: Any, concrete_args: dict[str, Any] | None = None) -> Graph:
        """Trace `root` (a Module, or a function) and return its :class:`Graph`."""
        global _is_fx_tracing_flag
        was_tracing, _is_fx_tracing_flag = _is_fx_tracing_flag, True
        try:
            return self._trace(root, concrete_args)
        finally:
            _is_fx_tracing_flag = was_tracing

    def _trace(self, root: Any, concrete_args: dict[str, Any] | None) -> Graph:
        from ember.nn import Module

        if isinstance(root, Module):
            self.root = root
            fn = getattr(type(root), self.traced_func_name)
            self.root_module_name = root._get_name()
            self.submodule_paths = {id(mod): name for name, mod in root.named_modules()}
        else:
            self.root = Module()
            fn = root
        self.graph = Graph(tracer_cls=getattr(self, "__class__", None))
        self.tensor_attrs: dict[int, str] = {}
        self._collect_tensor_attrs(self.root, [])
        if not isinstance(fn, FunctionType):
            raise AssertionError(f"Expected FunctionType, got {type(fn)}")
        fn_globals = fn.__globals__
        fn, args = self.create_args_for_root(fn, isinstance(root, Module), concrete_args)
        parameter_proxy_cache: dict[str, Proxy] = {}
        with Patcher() as patcher:
            orig_getattr, orig_call = Module.__getattr__, Module.__call__

            @functools.wraps(orig_getattr)
            def module_getattr_wrapper(mod: Module, attr: str) -> Any:
                return self.getattr(attr, orig_getattr(mod, attr), parameter_proxy_cache)

            @functools.wraps(orig_call)
            def module_call_wrapper(mod: Module, *args: Any, **kwargs: Any) -> Any:
                def forward(*args: Any, **kwargs: Any) -> Any:
                    return orig_call(mod, *args, **kwargs)
                f = getattr(type(mod), "forward", None)
                patcher.autowrap(getattr(f, "__globals__", {}), self._autowrap_function_ids)
                return self.call_module(mod, forward, args, kwargs)

            patcher.patch(Module, "__getattr__", module_getattr_wrapper)
            patcher.patch(Module, "__call__", module_call_wrapper)
            patcher.wrap_registered()
            patcher.wrap_functional()
            patcher.autowrap(fn_globals, self._autowrap_function_ids)
            for module in self._autowrap_search:
                patcher.autowrap(module.__dict__, self._autowrap_function_ids)
            patcher.interpose()
            result = fn(*args)
            ann = _annotations(inspect.unwrap(fn))
            self.create_node("output", "output", (self.create_arg(result),), {},
                             type_expr=ann.get("return", None))
        self.submodule_paths = None
        return self.graph

    def _collect_tensor_attrs(self, m: Any, prefix: list[str]) -> None:
        import ember

        for k, v in m.__dict__.items():
            if isinstance(v, ember.Tensor):
                self.tensor_attrs[id(v)] = ".".join(prefix + [k])
        for k, v in m.named_children():
            self._collect_tensor_attrs(v, prefix + [k])


def _annotations(fn: Callable[..., Any]) -> dict[str, Any]:
    """`fn`'s annotations as torch.fx prints them. ember's own modules postpone theirs
    (strings): resolved here, and `Any` dropped, as torch.nn's forwards leave such
    parameters unannotated (`Sequential.forward(self, input)`)."""
    ann = inspect.get_annotations(fn)
    if not (getattr(fn, "__module__", None) or "").startswith("ember."):
        return ann
    try:
        ann = typing.get_type_hints(fn)
    except Exception:  # an annotation naming what the module does not import
        return {}
    return {k: v for k, v in ann.items() if v is not Any}


def _patch_function(fn: FunctionType, nargs: int) -> FunctionType:
    """`fn` taking its *args/**kwargs as plain positional parameters (one Proxy each)."""
    co = fn.__code__
    co_flags = co.co_flags & ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)
    new_code = co.replace(co_flags=co_flags, co_argcount=nargs, co_kwonlyargcount=0)
    return FunctionType(new_code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)


def wrap(fn_or_name: str | Callable[..., Any]) -> Any:
    """Record calls of a module-level function as one call_function node instead of
    tracing through it: ``torch.fx.wrap("len")`` or ``@torch.fx.wrap`` at module scope."""
    if not callable(fn_or_name) and not isinstance(fn_or_name, str):
        raise RuntimeError("Unsupported type for global function! Must be either a callable "
                           "or string name")
    if callable(fn_or_name):
        if isinstance(fn_or_name, str):
            raise AssertionError("Unexpected string type for fn_or_name")
        fn_name = fn_or_name.__name__
    else:
        fn_name = fn_or_name
    frame = inspect.currentframe().f_back
    if frame.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    WRAPPED[(id(frame.f_globals), fn_name)] = frame.f_globals
    return fn_or_name


def symbolic_trace(root: Any, concrete_args: dict[str, Any] | None = None) -> Any:
    """Trace `root` (a Module or a function) into a :class:`GraphModule`.

    Example::

        >>> gm = torch.fx.symbolic_trace(model)
        >>> print(gm.code)
    """
    from ember.fx.graph_module import GraphModule

    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = root.__class__.__name__ if isinstance(root, _module_type()) else root.__name__
    return GraphModule(tracer.root, graph, name)


def _module_type() -> type:
    from ember.nn import Module

    return Module
