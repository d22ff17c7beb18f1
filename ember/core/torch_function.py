"""The `__torch_function__` protocol: Tensor subclasses and Tensor-like objects that
override what ember's functions do with them, and `TorchFunctionMode`s that override
every call within a `with` block (PyTorch's torch/overrides.py semantics).

Where the check lives, and why plain tensors pay nothing for it: `dispatch` is the one
place that calls overrides. A declared op reaches it from its entry (ember.core.interpose
asks `_op_check` ahead of its hooks), but only once the check is set: until then
`interpose.active` stays None and an op pays the one global test it always paid. The
check is set (for good) the first time an override can exist at all: a Tensor subclass
whose `__torch_function__` is not disabled is defined (`Tensor.__init_subclass__`), a
mode is entered, or a Tensor-like object (not a Tensor, with a `__torch_function__`) is
met, which is seen when an op fails on it (`foreign`). Setting it also swaps the Tensor
methods and properties that are not declared ops (`.shape`, `.to`, `__repr__` ...) for
routed ones, and turns on the check of torch.nn.functional's functions (`overridable`).

State, as PyTorch's: `DisableTorchFunctionSubclass` stops subclass overrides (modes still
run); `DisableTorchFunction` stops both. A mode is popped while its own
`__torch_function__` runs, so the calls it makes go to the next mode.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

from ember.core import interpose

Tensor: Any = None  # ember.core.tensor.Tensor, set by that module (it imports this one)
ENABLED, SUBCLASSES_DISABLED, ALL_DISABLED = 0, 1, 2

level = ENABLED
"""How much of the protocol is on (PyTorch's `_TorchFunctionState`)."""

modes: list[Any] = []
"""The TorchFunctionMode stack, innermost last."""

watching = False
"""Whether an override can exist (the check is set); False: nothing is checked."""



def _disabled_torch_function_impl(func: Callable, types: Any, args: tuple = (),
                                  kwargs: dict | None = None) -> Any:
    """The `__torch_function__` of a subclass that opts out (`nn.Parameter`'s): the
    function runs as on a plain tensor, and its result is not converted."""
    with DisableTorchFunctionSubclass():
        return func(*args, **(kwargs or {}))


class _LevelContext:
    """Sets `level` to at least `_level` within a `with` block."""

    _level = ENABLED

    def __enter__(self) -> _LevelContext:
        global level
        self._old = level
        level = max(level, self._level)
        return self

    def __exit__(self, *exc: Any) -> None:
        global level
        level = self._old


class DisableTorchFunctionSubclass(_LevelContext):
    """Context manager: Tensor subclasses' `__torch_function__` are not called within
    it (modes still are)."""

    _level = SUBCLASSES_DISABLED


class DisableTorchFunction(_LevelContext):
    """Context manager: neither subclasses' `__torch_function__` nor modes are called
    within it."""

    _level = ALL_DISABLED


def is_torch_function_enabled() -> bool:
    """Whether subclass overrides are called (`torch._C._is_torch_function_enabled`)."""
    return level == ENABLED


def is_torch_function_mode_enabled() -> bool:
    """Whether a mode would be called now."""
    return bool(modes) and level != ALL_DISABLED


# -- finding the overriding arguments ---------------------------------------------------


def overrides(obj: Any) -> bool:
    """Whether `obj`'s type overrides ember functions: it has a `__torch_function__`
    that is neither plain Tensor's nor the disabled one (`nn.Parameter`)."""
    cls = type(obj)
    if cls is Tensor:
        return False
    impl = getattr(cls, "__torch_function__", None)
    return impl is not None and impl is not _disabled_torch_function_impl


def overloaded_args(relevant: Iterable[Any], python: bool = False) -> list[Any]:
    """The arguments whose `__torch_function__` is called, in PyTorch's order: one per
    type, a subclass before its superclasses, otherwise left to right. Lists and tuples
    among the arguments are looked into (a TensorList's elements count). `python`: as
    PyTorch's Python functions find them (`handle_torch_function`), where a plain
    tensor's default `__torch_function__` counts too; its C++ functions skip it."""
    found: list[Any] = []
    types: list[type] = []
    for arg in _flat(relevant):
        cls = type(arg)
        if cls in types or not (overrides(arg) or python and cls is Tensor):
            continue
        index = len(found)
        for i, old in enumerate(types):
            if issubclass(cls, old):
                index = i
                break
        found.insert(index, arg)
        types.insert(index, cls)
    return found


def _flat(values: Iterable[Any]) -> Iterable[Any]:
    for v in values:
        if _tensor_list(v):
            yield from v
        else:
            yield v


def _tensor_list(v: Any) -> bool:
    """Whether `v` is a list or tuple to look into: one of tensors or Tensor-likes (`cat`'s),
    not the numbers or nested lists of data (`torch.tensor(values)`), which can be long."""
    return isinstance(v, (list, tuple)) and len(v) > 0 and \
        not isinstance(v[0], (int, float, complex, list, tuple))


def has_torch_function(relevant: Iterable[Any]) -> bool:
    """Whether a call with `relevant` among its arguments goes to `dispatch` now: a mode
    is on, or an argument overrides and subclass overrides are on."""
    if level == ALL_DISABLED:
        return False
    if modes:
        return True
    return level == ENABLED and any(overrides(a) for a in _flat(relevant))


# -- calling the overrides --------------------------------------------------------------


def dispatch(func: Callable, relevant: Iterable[Any], args: tuple, kwargs: dict,
             native: str | None = None) -> Any:
    """Call the overrides of `func(*args, **kwargs)` (the innermost mode first, then
    each overloaded argument's `__torch_function__`) until one returns something other
    than NotImplemented; TypeError when all do, with the message of PyTorch's C++
    functions when `native` names one (`"torch.add"`), else its Python functions'."""
    overloaded = overloaded_args(relevant, native is None) if level == ENABLED else []
    types = tuple(type(a) for a in overloaded)
    mode_called = None
    if modes and level != ALL_DISABLED:
        mode_called = modes.pop()  # its own calls go to the next mode
        try:
            result = mode_called.__torch_function__(func, types, args, kwargs)
        finally:
            modes.append(mode_called)
        if result is not NotImplemented:
            return result
    for arg in overloaded:
        result = arg.__torch_function__(func, types, args, kwargs)
        if result is not NotImplemented:
            return result
    if native is NotImplemented:
        return NotImplemented
    if native is not None:
        handlers = ([f"  - mode object {mode_called!r}"] if mode_called is not None else []) \
            + [f"  - tensor subclass {type(a)}" for a in overloaded]
        raise TypeError(f"Multiple dispatch failed for '{native}'; all __torch_function__ "
                        "handlers returned NotImplemented:\n\n" + "\n".join(handlers) +
                        "\n\nFor more information, try re-running with "
                        "TORCH_LOGS=not_implemented")
    module = getattr(func, "__module__", None) or "torch"
    if module == "ember" or module.startswith("ember."):  # PyTorch's name for it
        module = "torch" + module[len("ember"):]
    name = f"{module}.{func.__name__}"
    msg = (f"no implementation found for '{name}' on types that implement "
           f"__torch_function__: {[type(a) for a in overloaded]}")
    if mode_called is not None:
        msg += f" nor in mode {mode_called}"
    raise TypeError(msg)


def _op_check(op: Any, name: str, fn: Callable, args: tuple, kwargs: dict) -> Any:
    """The op-entry check (ember.core.interpose): a declared op's call goes to the
    overrides when one applies."""
    if level == ALL_DISABLED or not modes and (level or not _any_override(args, kwargs)):
        return interpose.OVERRIDDEN_NOT
    return dispatch_op(op, name, args, kwargs, fn)


def dispatch_op(op: Any, name: str, args: tuple, kwargs: dict, fn: Callable | None = None
                ) -> Any:
    """`dispatch` for a declared op's call entered as `name`, running `fn`."""
    func = public_of(op, name, fn)
    native: Any = f"torch.{func.__name__}" if func is op.public else \
        f"torch.Tensor.{func.__name__}"
    if name in binary_operators:  # `x + y` declined by all: Python's operator error
        native = NotImplemented
    elif getattr(func, "torch_python", False):  # F.mse_loss: a Python function in torch
        native = None
    return dispatch(func, (*args, *kwargs.values()), args, kwargs, native)


binary_operators: frozenset[str] = frozenset()
"""The binary operators' names (`__add__`, `__radd__` ...), set by ember.core.declare."""


def _any_override(args: tuple, kwargs: dict) -> bool:
    for a in args:
        if type(a) is not Tensor and (overrides(a) or _tensor_list(a)
                                      and any(overrides(x) for x in a)):
            return True
    return bool(kwargs) and any(overrides(a) for a in _flat(kwargs.values()))


# the functions PyTorch passes for Python operators: `x + y` is Tensor.add, `2 - x`
# Tensor.__rsub__, `x & y` Tensor.__and__ ...
_OPERATOR_AS_METHOD = {"__add__", "__radd__", "__sub__", "__mul__", "__rmul__", "__truediv__",
                       "__matmul__", "__pow__", "__ne__", "__lt__", "__le__", "__gt__",
                       "__ge__", "__neg__", "__abs__", "__pos__", "__mod__"}


def public_of(op: Any, name: str, fn: Callable | None = None) -> Callable:
    """The function handed to `__torch_function__` for a call of op `op` entered as
    `name`, running `fn` (`"add"`: ember.add or Tensor.add, `"add_"`: Tensor.add_,
    `"__add__"`: Tensor.add)."""
    if name == op.name and "function" in op.variants and op.public is not None and \
            (fn is None or getattr(op.public, "__wrapped__", None) is fn):
        return op.public
    if name in _OPERATOR_AS_METHOD and "method" in op.variants:
        name = op.name
    return getattr(Tensor, name, None) or op.public


# -- turning the check on ---------------------------------------------------------------


_routed: list[tuple[str, Any]] = []  # (name, original) of the Tensor attributes swapped
_NO_WRAP = ("grad",)  # properties whose tensor is returned as stored, not converted
_no_wrap_properties: set[property] = set()


def watch() -> None:
    """Turn the check on (for good: the reason, a subclass or a Tensor-like type, stays)."""
    global watching
    if watching:
        return
    watching = True
    interpose.set_override_check(_op_check)
    _route_tensor_attributes()


def unwatch() -> None:
    """Turn the check off again and restore Tensor's own attributes (for tests that
    define subclasses: the rest of the process then pays nothing)."""
    global watching
    if not watching:
        return
    for name, original in reversed(_routed):
        setattr(Tensor, name, original)
    _routed.clear()
    _no_wrap_properties.clear()
    interpose.set_override_check(None)
    watching = False


# Tensor attributes that are not routed: construction, the protocol itself, identity
# and pickling, and the ones ember's machinery calls on every object
_NOT_ROUTED = frozenset({
    "__new__", "__init__", "__init_subclass__", "__torch_function__", "__hash__",
    "__reduce_ex__", "__getattribute__", "__setattr__", "__class__", "__dict__",
    "__slots__", "__weakref__", "__module__", "__doc__", "__array__", "__dlpack__",
    "__dlpack_device__", "as_subclass", "_make_subclass", "__deepcopy__", "__iter__",
    "__array_priority__", "is_sparse"})


def _route_tensor_attributes() -> None:
    """Swap each Tensor method and property that is not a declared op (those reach
    `_op_check`) for one that checks for overrides first."""
    for name, value in list(vars(Tensor).items()):
        if name in _NOT_ROUTED or name.startswith("_") and not name.startswith("__"):
            continue
        if isinstance(value, property):
            routed: Any = _routed_property(name, value)
            if name in _NO_WRAP:
                _no_wrap_properties.add(routed)
        elif callable(value) and not isinstance(value, (type, staticmethod, classmethod)) \
                and not getattr(value, "op_entry", False):
            routed = _routed_method(name, value)
        else:
            continue
        _routed.append((name, value))
        setattr(Tensor, name, routed)


# the Tensor methods PyTorch writes in Python (torch/_tensor.py): their failed dispatch
# has its Python message, not its C++ functions' one
_PYTHON_METHODS = frozenset({"__repr__", "__format__", "__len__", "__contains__",
                             "backward", "register_hook", "split", "unique", "norm",
                             "share_memory_", "is_shared", "storage", "resize", "resize_as"})


def _routed_method(name: str, method: Callable) -> Callable:
    native = None if name in _PYTHON_METHODS else f"torch.Tensor.{name}"

    @functools.wraps(method)
    def routed(self: Any, *args: Any, **kwargs: Any) -> Any:
        if has_torch_function((self, *args)):
            return dispatch(routed, (self, *args, *kwargs.values()), (self, *args), kwargs,
                            native)
        return method(self, *args, **kwargs)
    routed.__name__ = name
    routed.__qualname__ = f"Tensor.{name}"
    if name in _PYTHON_METHODS:
        routed.__module__ = "torch._tensor"
    return routed


def _routed_property(name: str, prop: property) -> property:
    native = f"torch.Tensor.{name}.__get__"

    def get(self: Any) -> Any:
        if has_torch_function((self,)):
            return dispatch(routed.__get__, (self,), (self,), {}, native)
        return prop.fget(self)
    routed = property(get, prop.fset, prop.fdel, prop.__doc__)
    return routed


def overridable(fn: Callable, native: str | None = None) -> Callable:
    """`fn` (a torch.nn.functional function) checking for overrides first while the
    check is on, as PyTorch's Python functions call `handle_torch_function`; `native`
    is torch's path of the function when torch binds it to a C++ builtin
    (`"torch._C._nn.linear"`), which dispatches as C++ functions do."""
    @functools.wraps(fn)
    def checked(*args: Any, **kwargs: Any) -> Any:
        if watching and has_torch_function((*args, *kwargs.values())):
            return dispatch(checked, (*args, *kwargs.values()), args, kwargs, native)
        try:
            return fn(*args, **kwargs)
        except (AttributeError, TypeError):
            if not foreign((*args, *kwargs.values())):
                raise
        return dispatch(checked, (*args, *kwargs.values()), args, kwargs, native)
    checked.overridable = True
    return checked


def foreign(values: Iterable[Any]) -> bool:
    """Whether a Tensor-like object that is not a Tensor (it has a `__torch_function__`)
    is among `values`; if so the check is turned on for good. Asked only after a call
    failed, so calls that succeed pay nothing."""
    if level == ALL_DISABLED:
        return False
    found = any(not isinstance(a, Tensor) and overrides(a) for a in _flat(values))
    if found:
        watch()
    return found and level == ENABLED


def subclass_defined(cls: type) -> None:
    """Called for each new Tensor subclass: one with a live `__torch_function__` turns
    the check on."""
    if getattr(cls, "__torch_function__", None) is not _disabled_torch_function_impl:
        watch()


# -- the default Tensor.__torch_function__ ----------------------------------------------


def default_torch_function(cls: type, func: Callable, types: Any, args: tuple = (),
                           kwargs: dict | None = None) -> Any:
    """`Tensor.__torch_function__`: run `func` with subclass overrides off, and give a
    tensor result (also inside a list or tuple) the class `cls`."""
    if kwargs is None:
        kwargs = {}
    if not all(issubclass(cls, t) for t in types):
        return NotImplemented
    with DisableTorchFunctionSubclass():
        ret = func(*args, **kwargs)
        if _no_wrap(func):
            return ret
        return convert(ret, cls)


def _no_wrap(func: Callable) -> bool:
    """Whether `func` reads a stored tensor (`.grad`): its result keeps its class
    (PyTorch's get_default_nowrap_functions)."""
    return getattr(func, "__self__", None) in _no_wrap_properties


def convert(ret: Any, cls: type) -> Any:
    """`ret` with each tensor in it (and in its lists and tuples, named ones included)
    made an instance of `cls` (PyTorch's `torch._tensor._convert`)."""
    if cls is Tensor:
        return ret
    if isinstance(ret, Tensor) and not isinstance(ret, cls):
        ret = ret.as_subclass(cls)
    if isinstance(ret, (tuple, list)):
        items = [convert(r, cls) for r in ret]
        ret = type(ret)(*items) if hasattr(ret, "_fields") else type(ret)(items)
    return ret


def push_mode(mode: Any) -> None:
    """Enter a TorchFunctionMode (the check is on while any is)."""
    modes.append(mode)
    watch()


def pop_mode() -> Any:
    """Leave the innermost TorchFunctionMode."""
    return modes.pop()
