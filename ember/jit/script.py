"""TorchScript's Python API, for programs that use it: `script`, its decorators, and
`save`/`load`.

ember has no TorchScript compiler: a scripted module or function runs as the Python it
is, eagerly, so it gives the same results, control flow included (what scripting
preserves and tracing does not). The decorators that steer PyTorch's compiler
(`ignore`, `unused`, `export`, `interface`) leave their function as it is; `annotate`
returns its value; `is_scripting()` is False, as it is in eager PyTorch.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import IO, Any, Final, TypeVar

import ember
from ember.core import tracing

T = TypeVar("T")

__all__ = ["Final", "annotate", "export", "fork", "freeze", "ignore", "interface",
           "is_scripting", "is_tracing", "load", "optimize_for_inference", "save", "script",
           "unused", "wait"]


def script(obj: T, optimize: Any = None, _frames_up: int = 0, _rcb: Any = None,
           example_inputs: Any = None) -> T:
    """Return `obj` (an ``nn.Module``, a function or a class) ready to run.

    In PyTorch this compiles `obj` to TorchScript; ember runs it eagerly, so the result
    is `obj` itself and computes exactly what it computed before.
    """
    if not (isinstance(obj, ember.nn.Module) or callable(obj)):
        raise RuntimeError(f"ember.jit.script: expected an nn.Module, a function or a class, "
                           f"got {type(obj).__name__}")
    if isinstance(obj, ember.nn.Module) and "save" not in obj.__dict__:
        obj.__dict__["save"] = _SaveMethod(obj)  # a ScriptModule's own `save(f)`
    return obj


class _SaveMethod:
    """`scripted.save(f)`, as a PyTorch ScriptModule saves itself (d2l 13.2's
    `net = torch.jit.script(net); net.save('my_mlp')`): `ember.jit.save(scripted, f)`.
    An object, not a bound method, so the scripted module still pickles."""

    def __init__(self, module: Any) -> None:
        self.module = module

    def __call__(self, f: str | os.PathLike | IO[bytes], _extra_files: Any = None) -> None:
        save(self.module, f, _extra_files)


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


class Future:
    """The result of `fork`: the call already ran (ember runs it at once)."""

    def __init__(self, value: Any) -> None:
        self._value = value

    def wait(self) -> Any:
        return self._value

    def value(self) -> Any:
        return self._value

    def done(self) -> bool:
        return True


def fork(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Future:
    """Run `func(*args, **kwargs)` and return a Future holding its result."""
    return Future(func(*args, **kwargs))


def wait(future: Future) -> Any:
    """The result of a `fork`."""
    return future.wait()


def freeze(mod: T, preserved_attrs: Any = None, optimize_numerics: bool = True) -> T:
    """The module, unchanged (it already runs with its current weights)."""
    return mod


def optimize_for_inference(mod: T, other_methods: Any = None) -> T:
    """The module, unchanged."""
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
