"""`torch.fx.Tracer` and `symbolic_trace`: run a module's forward on Proxies and record
what it does into a Graph.

While a trace runs, three things are patched and then restored: `nn.Module.__call__`
(a call of a leaf module becomes one call_module node) and `nn.Module.__getattr__` (a
parameter read becomes a get_attr node), as torch.fx patches them; the functions of
torch.nn.functional, those registered with `wrap`, and math's (so they record as
themselves); and an op-entry hook (ember.core.interpose) is installed, through which
every declared op (`torch.relu`, `torch.cat`, `tensor + proxy` ...) called with a Proxy
records a call_function node instead of running. Ops pay for this only while tracing.
"""

from __future__ import annotations

import builtins
import functools
import inspect
import math
import operator
from collections.abc import Callable
from types import FunctionType, ModuleType
from typing import Any

from ember.fx import _functional
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
                                 type_expr=fn.__annotations__.get(name, None))

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
        with _Patcher() as patcher:
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
            ann = inspect.get_annotations(inspect.unwrap(fn))
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


def _patch_function(fn: FunctionType, nargs: int) -> FunctionType:
    """`fn` taking its *args/**kwargs as plain positional parameters (one Proxy each)."""
    co = fn.__code__
    co_flags = co.co_flags & ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)
    new_code = co.replace(co_flags=co_flags, co_argcount=nargs, co_kwonlyargcount=0)
    return FunctionType(new_code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)


# -- wrap ------------------------------------------------------------------------------
_wrapped_fns_to_patch: dict[tuple[int, str], dict[str, Any]] = {}


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
    _wrapped_fns_to_patch[(id(frame.f_globals), fn_name)] = frame.f_globals
    return fn_or_name


def _proxies(objs: Any, found: list[Proxy]) -> list[Proxy]:
    for obj in objs:
        if isinstance(obj, Proxy):
            found.append(obj)
        elif isinstance(obj, (list, tuple)):
            _proxies(obj, found)
        elif isinstance(obj, dict):
            _proxies(obj.values(), found)
    return found


def _find_proxy(args: tuple, kwargs: dict, target: Any = None) -> Proxy | None:
    """The Proxy whose tracer records a call on `args`/`kwargs` (None: no Proxy there);
    Proxies of different tracers refuse, as torch's ``__torch_function__`` does."""
    found = _proxies((args, kwargs), [])
    if not found:
        return None
    tracers = {id(p.tracer): p.tracer for p in found}
    if len(tracers) > 1:
        raise RuntimeError(f"Found multiple different tracers {list(tracers.values())} while "
                           f"trying to trace operations {target}")
    return found[0]


def _recording(orig_fn: Callable[..., Any], mark_wrapped: bool) -> Callable[..., Any]:
    """`orig_fn` that records itself as a call_function node when given a Proxy."""
    orig_fn = getattr(orig_fn, "__fx_orig__", orig_fn)

    @functools.wraps(orig_fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        proxy = _find_proxy(args, kwargs, orig_fn)
        if proxy is None:
            return orig_fn(*args, **kwargs)
        out = proxy.tracer.create_proxy("call_function", orig_fn, args, kwargs)
        if mark_wrapped:
            out.node.meta["is_wrapped"] = True
        return out
    wrapped.__fx_orig__ = orig_fn
    return wrapped


def _recording_functional(name: str, orig_fn: Callable[..., Any]) -> Callable[..., Any]:
    """torch.nn.functional.<name>, recording as PyTorch does when given a Proxy."""
    orig_fn = getattr(orig_fn, "__fx_orig__", orig_fn)

    @functools.wraps(orig_fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        proxy = _find_proxy(args, kwargs, orig_fn)
        if proxy is None:
            return orig_fn(*args, **kwargs)
        if name in _functional.AS_METHOD:
            return proxy.tracer.create_proxy("call_method", name, args, kwargs)
        args, kwargs = _functional.recorded_call(name, orig_fn, args, kwargs)
        return proxy.tracer.create_proxy("call_function", orig_fn, args, kwargs)
    wrapped.__fx_orig__ = orig_fn
    return wrapped


_DUNDER_TARGETS = {f"__{n}__": n for n in (
    "add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor",
    "lshift", "rshift", "eq", "ne", "lt", "le", "gt", "ge", "neg", "pos", "invert", "abs",
    "getitem", "iadd", "isub", "imul", "itruediv")}


def _op_target(op: Any, name: str) -> Callable[..., Any]:
    """The function a traced call of op `op` (entered as `name`) records."""
    if name.startswith("__r") and name.endswith("__") and f"__{name[3:]}" in _DUNDER_TARGETS:
        return getattr(operator, _operator_name(name[3:-2]))
    if name in _DUNDER_TARGETS:
        return getattr(operator, _operator_name(_DUNDER_TARGETS[name]))
    if name.endswith("_") and op.public_inplace is not None:
        return op.public_inplace
    return op.public


def _operator_name(n: str) -> str:
    return n + "_" if n in ("and", "or") else n


# `tensor <op> proxy`: PyTorch records the Tensor method the operator runs
_TENSOR_OPERATOR_METHODS = {
    "__add__": "add", "__sub__": "sub", "__mul__": "mul", "__truediv__": "div",
    "__floordiv__": "floor_divide", "__mod__": "remainder", "__pow__": "pow",
    "__matmul__": "matmul", "__and__": "bitwise_and", "__or__": "bitwise_or",
    "__xor__": "bitwise_xor", "__eq__": "eq", "__ne__": "ne", "__lt__": "lt", "__le__": "le",
    "__gt__": "gt", "__ge__": "ge"}


def _interpose_hook(op: Any, name: str, call: Callable[[tuple, dict], Any], args: tuple,
                    kwargs: dict) -> Any:
    proxy = _find_proxy(args, kwargs, op.public)
    if proxy is None:
        return call(args, kwargs)
    if name in _TENSOR_OPERATOR_METHODS and args and not isinstance(args[0], Proxy):
        return proxy.tracer.create_proxy("call_method", _TENSOR_OPERATOR_METHODS[name],
                                         args, kwargs)
    target = _op_target(op, name)
    return proxy.tracer.create_proxy("call_function", target, args, kwargs)


class _Patcher:
    """Patches made for one trace, undone (last first) when it ends."""

    def __init__(self) -> None:
        self._undo: list[Callable[[], None]] = []
        self._visited: set[tuple[int, str]] = set()

    def __enter__(self) -> _Patcher:
        return self

    def __exit__(self, *exc: Any) -> None:
        while self._undo:
            self._undo.pop()()

    def patch(self, owner: Any, name: str, new: Any) -> None:
        orig = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
        setattr(owner, name, new)
        self._undo.append(lambda: setattr(owner, name, orig))

    def patch_dict(self, d: dict[str, Any], name: str, new: Any) -> None:
        key = (id(d), name)
        if key in self._visited:
            return
        self._visited.add(key)
        had, orig = name in d, d.get(name)
        d[name] = new

        def undo() -> None:
            if had:
                d[name] = orig
            else:
                del d[name]
        self._undo.append(undo)

    def wrap_registered(self) -> None:
        for (_, name), frame_dict in _wrapped_fns_to_patch.items():
            if name not in frame_dict and hasattr(builtins, name):
                orig = getattr(builtins, name)
            else:
                orig = frame_dict[name]
            self.patch_dict(frame_dict, name, _recording(orig, mark_wrapped=True))

    def wrap_functional(self) -> None:
        import ember.nn.functional as F

        d = vars(F)
        for name in (*_functional.NORMALIZED, *_functional.BUILTIN, *_functional.AS_METHOD):
            if callable(d.get(name)):
                self.patch_dict(d, name, _recording_functional(name, d[name]))

    def autowrap(self, frame_dict: dict[str, Any], function_ids: set[int]) -> None:
        """Record the autowrap functions `frame_dict` names as themselves; a
        torch.nn.functional function imported by name records as torch's does."""
        import ember.nn.functional as F

        for name, value in list(frame_dict.items()):
            if name.startswith("_") or not callable(value):
                continue
            if id(value) in function_ids:
                self.patch_dict(frame_dict, name, _recording(value, mark_wrapped=False))
            elif frame_dict is not vars(F) and getattr(F, name, None) is value and (
                    name in _functional.NORMALIZED or name in _functional.BUILTIN):
                self.patch_dict(frame_dict, name, _recording_functional(name, value))

    def interpose(self) -> None:
        from ember.core import interpose

        interpose.install(_interpose_hook, -100)
        self._undo.append(lambda: interpose.remove(_interpose_hook))


class _Recording:
    """Keeps Proxy recording on (the op-entry hook, torch.nn.functional's recording
    wrappers) while any graph-appending tracer lives: a Proxy made outside a trace
    (``Proxy(node)``, as graph-rewriting passes do) records torch calls too."""

    def __init__(self) -> None:
        self._count = 0
        self._patcher: _Patcher | None = None

    def acquire(self) -> None:
        self._count += 1
        if self._count == 1:
            self._patcher = _Patcher()
            self._patcher.wrap_functional()
            self._patcher.interpose()

    def release(self) -> None:
        self._count -= 1
        if self._count == 0 and self._patcher is not None:
            self._patcher.__exit__()
            self._patcher = None


recording = _Recording()


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
