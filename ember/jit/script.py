"""TorchScript's Python API, for programs that use it: `script`, its decorators, and
`save`/`load`.

ember has no TorchScript compiler: a scripted module or function runs as the Python it
is, eagerly, so it gives the same results, control flow included (what scripting
preserves and tracing does not). What scripting returns is PyTorch's, though: a module
becomes a `RecursiveScriptModule` (its submodules too) that shares the original's
parameters and buffers, copies its other attributes, prints as PyTorch's
(`RecursiveScriptModule(original_name=Linear)`) and runs the original class's methods
on itself; a function becomes a `ScriptFunction`. The decorators that steer PyTorch's
compiler (`ignore`, `unused`, `export`, `interface`) leave their function as it is;
`annotate` returns its value; `is_scripting()` is False, as it is in eager PyTorch.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import types
import typing
import warnings
from collections.abc import Callable, Iterator
from typing import IO, Any, Final, NamedTuple, TypeVar

import ember
from ember.core import tracing
from ember.futures import Future

T = TypeVar("T")

__all__ = ["Attribute", "Final", "RecursiveScriptModule", "ScriptFunction", "ScriptModule",
           "annotate",
           "export", "fork", "freeze", "ignore", "interface", "is_scripting", "is_tracing",
           "load", "optimize_for_inference", "save", "script", "unused", "wait",
           "script_if_tracing", "jit_isinstance", "optimized_execution", "fuser",
           "set_fusion_strategy", "enable_onednn_fusion", "onednn_fusion_enabled", "Error",
           "ScriptWarning"]


def script(obj: Any, optimize: Any = None, _frames_up: int = 0, _rcb: Any = None,
           example_inputs: Any = None) -> Any:
    """Script `obj`: an ``nn.Module`` becomes a :class:`RecursiveScriptModule`, a function a
    :class:`ScriptFunction`; a class is returned as it is.

    In PyTorch this compiles `obj` to TorchScript; ember runs the same Python eagerly, so
    the result computes exactly what `obj` computed (control flow included).
    """
    if isinstance(obj, (ScriptModule, ScriptFunction)) or isinstance(obj, type):
        return obj
    if isinstance(obj, ember.nn.Module):
        return RecursiveScriptModule._from(obj, {})
    if callable(obj):
        if getattr(obj, "__name__", "") == "<lambda>":
            raise OSError(f"Can't get source for {obj!r}. TorchScript requires source access "
                          "in order to carry out compilation, make sure original .py files "
                          "are available.")
        return ScriptFunction(obj)
    raise TypeError(f"{type(obj)} is a built-in class" if type(obj).__module__ == "builtins"
                    else f"{type(obj).__name__} object cannot be scripted: expected an "
                    "nn.Module, a function or a class")


def script_method(fn: Callable) -> Callable:
    """Mark a method of a :class:`ScriptModule` subclass as scripted (PyTorch's
    ``torch.jit.script_method``, deprecated there). ember runs it eagerly: the method
    itself is returned, after PyTorch's deprecation warning."""
    # attributed to this file, as PyTorch's is to its own: hidden by the default filters
    warnings.warn("`torch.jit.script_method` is deprecated. Please switch to `torch.compile` "
                  "or `torch.export`.", DeprecationWarning, stacklevel=1)
    return fn


class Attribute(NamedTuple):
    """A module attribute with its TorchScript type (``self.names =
    torch.jit.Attribute([], List[str])``): a :class:`ScriptModule` keeps the value, and
    :func:`script` unwraps those of the modules it scripts."""

    value: Any
    type: Any


class ScriptModule(ember.nn.Module):
    """The base of scripted modules (PyTorch's ``torch.jit.ScriptModule``)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, Attribute):
            value = value.value
        super().__setattr__(name, value)

    def save(self, f: str | os.PathLike | IO[bytes], _extra_files: Any = None) -> None:
        """Save this module whole (see :func:`save`)."""
        save(self, f, _extra_files)

    @property
    def code(self) -> str:
        """The source of the module's ``forward`` (PyTorch prints TorchScript here)."""
        return _source(type(self).forward)


# what every Module keeps in its __dict__ (not user attributes to copy)
_MODULE_STATE = frozenset(ember.nn.Module().__dict__)


class RecursiveScriptModule(ScriptModule):
    """A scripted ``nn.Module``: the original's parameters and buffers (the same tensors),
    its submodules scripted, its other attributes copied, and its class's methods run
    on this module. Prints as PyTorch's: ``RecursiveScriptModule(original_name=Linear)``.
    """

    @classmethod
    def _from(cls, module: Any, memo: dict[int, RecursiveScriptModule]) -> RecursiveScriptModule:
        if id(module) in memo:  # a submodule used twice stays one module
            return memo[id(module)]
        if isinstance(module, ScriptModule):
            return module
        scripted = memo[id(module)] = cls()
        state = scripted.__dict__
        state["_original_class"] = type(module)
        state["original_name"] = type(module).__name__
        state["training"] = module.training
        state["_parameters"].update(module._parameters)
        state["_buffers"].update(module._buffers)
        state["_non_persistent_buffers_set"].update(module._non_persistent_buffers_set)
        for name, child in module._modules.items():
            state["_modules"][name] = None if child is None else cls._from(child, memo)
        for name, value in module.__dict__.items():
            if name not in _MODULE_STATE:
                state[name] = value.value if isinstance(value, Attribute) else value
        return scripted

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self._original_class.forward(self, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            pass
        cls = self.__dict__.get("_original_class")
        try:
            attr = inspect.getattr_static(cls, name) if cls is not None else None
        except AttributeError:
            attr = None
        if attr is None or name.startswith("__"):
            raise AttributeError(f"'RecursiveScriptModule' object has no attribute '{name}'")
        if isinstance(attr, staticmethod):
            return attr.__func__
        if isinstance(attr, classmethod):
            return types.MethodType(attr.__func__, cls)
        if isinstance(attr, property):
            return attr.fget(self)
        if isinstance(attr, types.FunctionType):
            return types.MethodType(attr, self)
        return attr

    # containers' protocols (looked up on the type, so not through __getattr__)
    def __getitem__(self, index: Any) -> Any:
        return self._original_class.__getitem__(self, index)

    def __len__(self) -> int:
        return self._original_class.__len__(self)

    def __iter__(self) -> Any:
        return self._original_class.__iter__(self)

    def __contains__(self, key: Any) -> bool:
        return self._original_class.__contains__(self, key)

    def extra_repr(self) -> str:
        return f"original_name={self.original_name}"

    @property
    def code(self) -> str:
        return _source(self._original_class.forward)


class ScriptFunction:
    """A scripted function (PyTorch's ``torch.jit.ScriptFunction``): calls run the
    function as it is."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self._fn = fn
        self.name = self.__name__ = getattr(fn, "__name__", "function")
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._fn(*args, **kwargs)

    @property
    def code(self) -> str:
        """The function's source (PyTorch prints TorchScript here)."""
        return _source(self._fn)

    def save(self, f: str | os.PathLike | IO[bytes], _extra_files: Any = None) -> None:
        save(self, f, _extra_files)


def _source(fn: Any) -> str:
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        return ""


def is_scripting() -> bool:
    """False: ember never runs code as TorchScript (PyTorch's eager answer too)."""
    return False


def is_tracing() -> bool:
    """True while `ember.jit.trace` records."""
    return tracing.active is not None


def _marker(fn: Any = None, **_: Any) -> Any:
    """A compiler directive: the function stays as it is (also as `@marker(drop=True)`)."""
    if fn is None or not callable(fn):
        return lambda f: f
    return fn


ignore = unused = export = interface = _marker


def annotate(the_type: Any, the_value: T) -> T:
    """The value, unchanged (a type hint for PyTorch's compiler)."""
    return the_value


def script_if_tracing(fn: Callable) -> Callable:
    """`fn` itself: PyTorch scripts it when it is called while tracing, and ember's trace
    records the path taken, as for any function."""
    return fn


# containers without element types, which PyTorch's jit.isinstance refuses
_BARE_CONTAINERS = {  # (typing's names are the point here)
    list: ("list", "list[int]"), typing.List: ("List", "List[int]"),  # noqa: UP006
    dict: ("dict", "dict[int, int]"), typing.Dict: ("Dict", "Dict[int, int]"),  # noqa: UP006
    tuple: ("tuple", "tuple[int]"), typing.Tuple: ("Tuple", "Tuple[int]"),  # noqa: UP006
    typing.Optional: ("Optional", "Optional[int]")}


def jit_isinstance(obj: Any, target_type: Any) -> bool:
    """Whether `obj` is of `target_type`, a class or a typing form with its element types
    (``List[int]``, ``Dict[str, Tensor]``, ``Tuple[int, str]``, ``Optional[T]``):
    ``torch.jit.isinstance``."""
    origin = typing.get_origin(target_type)
    args = typing.get_args(target_type)
    bare = _BARE_CONTAINERS.get(target_type)
    if bare is not None:
        name, example = bare
        what = "contained types. Please add contained type" if "Dict" in example.title() \
            else "a contained type. Please add a contained type"
        raise RuntimeError(f"Attempted to use {name} without {what}, e.g. {example}")
    if target_type is None or target_type is type(None):
        return obj is None
    if origin is None:
        return isinstance(obj, target_type)
    if origin in (typing.Union, types.UnionType):
        return any(jit_isinstance(obj, arg) for arg in args)
    if not isinstance(obj, origin):
        return False
    if origin is list:
        return all(jit_isinstance(x, args[0]) for x in obj) if args else True
    if origin is dict:
        return all(jit_isinstance(k, args[0]) and jit_isinstance(v, args[1])
                   for k, v in obj.items()) if args else True
    if origin is tuple:
        return not args or (len(args) == len(obj)
                            and all(jit_isinstance(x, a) for x, a in zip(obj, args)))
    return True


@contextlib.contextmanager
def optimized_execution(should_optimize: bool) -> Iterator[None]:
    """Switch TorchScript's graph optimizations (nothing to switch in ember)."""
    yield


@contextlib.contextmanager
def fuser(name: str) -> Iterator[None]:
    """Choose TorchScript's fusion backend (``"fuser0"``...; nothing to choose in ember)."""
    yield


def set_fusion_strategy(strategy: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """Set TorchScript's specialisation strategy; returns the previous one (PyTorch's
    default, ``[("STATIC", 2), ("DYNAMIC", 10)]``, as ember has no TorchScript fuser)."""
    return [("STATIC", 2), ("DYNAMIC", 10)]


_onednn_fusion = False


def enable_onednn_fusion(enabled: bool) -> None:
    """Record whether TorchScript's oneDNN fusion is asked for (no effect in ember)."""
    global _onednn_fusion
    _onednn_fusion = bool(enabled)


def onednn_fusion_enabled() -> bool:
    """Whether :func:`enable_onednn_fusion` was last called with True."""
    return _onednn_fusion


class Error(Exception):
    """TorchScript's runtime error (raised by scripted code in PyTorch)."""


class ScriptWarning(Warning):
    """A warning from TorchScript."""


def fork(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Future:
    """Run `func(*args, **kwargs)` and return a Future holding its result (ember runs it at
    once)."""
    future = Future()
    future.set_result(func(*args, **kwargs))
    return future


def wait(future: Future) -> Any:
    """The result of a `fork`."""
    return future.wait()


def _check_scripted(mod: Any, what: str) -> None:
    from ember.jit.tracer import TracedModule

    if not isinstance(mod, (ScriptModule, TracedModule)):
        raise RuntimeError(f"{what} expects a ScriptModule as input. Please use "
                           f"{ember.core.dtype.API_NAME}.jit.script or "
                           f"{ember.core.dtype.API_NAME}.jit.trace to script your 'nn.Module'.")


def freeze(mod: T, preserved_attrs: Any = None, optimize_numerics: bool = True) -> T:
    """The scripted module, unchanged (it already runs with its current weights); PyTorch's
    errors for a module not scripted or in training mode."""
    _check_scripted(mod, "Freezing")
    if mod.training:
        raise RuntimeError("Freezing is currently only implemented for modules in eval mode. "
                           "Please call .eval() on your module before freezing.")
    return mod


def optimize_for_inference(mod: T, other_methods: Any = None) -> T:
    """The scripted module, frozen if it was not (PyTorch's)."""
    _check_scripted(mod, "optimize_for_inference")
    return mod


def save(m: Any, f: str | os.PathLike | IO[bytes], _extra_files: Any = None) -> None:
    """Save a scripted or traced module whole (its class must be importable to load it).

    PyTorch writes TorchScript; ember writes the module with `ember.save`, so
    `ember.jit.load` (or `ember.load(f, weights_only=False)`) gives it back.
    """
    original = getattr(m, "original", None)  # a TracedModule: its module is what to keep
    ember.save(original if original is not None else m, f)


def load(f: str | os.PathLike | IO[bytes], map_location: Any = None,
         _extra_files: Any = None) -> Any:
    """Load what `ember.jit.save` wrote. Only load files you trust: like PyTorch's, it
    runs the saved module's code."""
    return ember.load(f, map_location=map_location, weights_only=False)
