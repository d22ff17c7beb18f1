"""How calls of torch functions on Proxies are recorded, and the patches that do it.

PyTorch hands a call with a Proxy argument to `Proxy.__torch_function__`; ember has no
such protocol, so fx intercepts calls where they enter:

- declared ops (`torch.relu`, `torch.cat`, `tensor + proxy` ...): an op-entry hook
  (ember.core.interpose) records a call_function node whose target is the op's public
  function when a Proxy is among the arguments, and runs the op otherwise;
- torch.nn.functional's functions: replaced by recording wrappers that rebuild the
  argument form torch records (`_functional`), also where a module imported them by name;
- functions registered with `wrap` and the autowrap modules' (math): recording wrappers.

A `Patcher` holds such patches and undoes them (last first); a trace holds one for its
duration, and `recording` holds one while any graph-appending tracer lives (a Proxy made
outside a trace, as graph-rewriting passes do). Outside both, nothing is patched and ops
pay nothing.
"""

from __future__ import annotations

import builtins
import functools
import operator
from collections.abc import Callable
from typing import Any

from ember.fx import _functional
from ember.fx.proxy import TENSOR_METHOD_OF_OPERATOR, Proxy

__all__ = ["WRAPPED", "Patcher", "recording"]

WRAPPED: dict[tuple[int, str], dict[str, Any]] = {}
"""The functions `torch.fx.wrap` registered: (id(module globals), name) -> those globals."""


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


def _recording(orig_fn: Callable[..., Any], functional: str | None = None
               ) -> Callable[..., Any]:
    """`orig_fn` recording itself when given a Proxy: as a call_function node (a wrapped
    function), or, for torch.nn.functional.<functional>, as PyTorch records that one."""
    orig_fn = getattr(orig_fn, "__fx_orig__", orig_fn)

    @functools.wraps(orig_fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        proxy = _find_proxy(args, kwargs, orig_fn)
        if proxy is None:
            return orig_fn(*args, **kwargs)
        if functional is None:
            out = proxy.tracer.create_proxy("call_function", orig_fn, args, kwargs)
            out.node.meta["is_wrapped"] = True  # the code re-registers it: `wrap("math_sqrt")`
            return out
        if functional in _functional.AS_METHOD:
            return proxy.tracer.create_proxy("call_method", functional, args, kwargs)
        args, kwargs = _functional.recorded_call(functional, orig_fn, args, kwargs)
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


# `tensor <op> proxy` entering an op as its operator: the Tensor method PyTorch records
_TENSOR_OPERATOR_METHODS = {f"__{op.rstrip('_')}__": method
                            for op, method in TENSOR_METHOD_OF_OPERATOR.items()}


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


class Patcher:
    """Patches made for one trace, undone (last first) when it ends."""

    def __init__(self) -> None:
        self._undo: list[Callable[[], None]] = []
        self._visited: set[tuple[int, str]] = set()

    def __enter__(self) -> Patcher:
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
        for (_, name), frame_dict in WRAPPED.items():
            if name not in frame_dict and hasattr(builtins, name):
                orig = getattr(builtins, name)
            else:
                orig = frame_dict[name]
            self.patch_dict(frame_dict, name, _recording(orig))

    def wrap_functional(self) -> None:
        import ember.nn.functional as F

        d = vars(F)
        for name in (*_functional.NORMALIZED, *_functional.BUILTIN, *_functional.AS_METHOD):
            if callable(d.get(name)):
                self.patch_dict(d, name, _recording(d[name], name))

    def autowrap(self, frame_dict: dict[str, Any], function_ids: set[int]) -> None:
        """Record the autowrap functions `frame_dict` names as themselves; a
        torch.nn.functional function imported by name records as torch's does."""
        import ember.nn.functional as F

        for name, value in list(frame_dict.items()):
            if name.startswith("_") or not callable(value):
                continue
            if id(value) in function_ids:
                self.patch_dict(frame_dict, name, _recording(value))
            elif frame_dict is not vars(F) and getattr(F, name, None) is value and (
                    name in _functional.NORMALIZED or name in _functional.BUILTIN):
                self.patch_dict(frame_dict, name, _recording(value, name))

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
        self._patcher: Patcher | None = None

    def acquire(self) -> None:
        self._count += 1
        if self._count == 1:
            self._patcher = Patcher()
            self._patcher.wrap_functional()
            self._patcher.interpose()

    def release(self) -> None:
        self._count -= 1
        if self._count == 0 and self._patcher is not None:
            self._patcher.__exit__()
            self._patcher = None


recording = _Recording()
