"""`ember.overrides` (torch.overrides): the `__torch_function__` protocol's public helpers.

A Tensor subclass or a Tensor-like object (any class with a `__torch_function__`
classmethod) overrides what ember's functions, Tensor methods, operators, properties and
torch.nn.functional functions do with it; a `TorchFunctionMode` overrides every such call
within a `with` block. The machinery is ember.core.torch_function; this module is the
API PyTorch programs call.
"""

from __future__ import annotations

import functools
import types
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from ember.core import torch_function as _tf
from ember.core.torch_function import _disabled_torch_function_impl  # noqa: F401

__all__ = ["get_ignored_functions", "get_overridable_functions", "get_testing_overrides",
           "handle_torch_function", "has_torch_function", "has_torch_function_unary",
           "has_torch_function_variadic", "is_tensor_like", "is_tensor_method_or_property",
           "resolve_name", "TorchFunctionMode", "BaseTorchFunctionMode",
           "enable_reentrant_dispatch", "wrap_torch_function"]


def has_torch_function(relevant_args: Iterable[Any]) -> bool:
    r"""Check for ``__torch_function__`` implementations in the elements of an iterable,
    or whether a ``__torch_function__`` mode is enabled. Exact ``Tensor`` s and
    ``Parameter`` s are not dispatchable.

    Args:
        relevant_args (iterable): arguments to check for ``__torch_function__`` methods.
    """
    return _tf.has_torch_function(relevant_args)


def has_torch_function_unary(obj: Any) -> bool:
    r"""`has_torch_function((obj,))`."""
    return _tf.has_torch_function((obj,))


def has_torch_function_variadic(*args: Any) -> bool:
    r"""`has_torch_function(args)`."""
    return _tf.has_torch_function(args)


def handle_torch_function(public_api: Callable, relevant_args: Iterable[Any], *args: Any,
                          **kwargs: Any) -> Any:
    r"""Call the ``__torch_function__`` overrides of ``public_api(*args, **kwargs)``:
    the current mode's first, then each overloaded argument's (subclasses before their
    superclasses, otherwise left to right) until one returns something other than
    ``NotImplemented``.

    Raises:
        TypeError: if every override returns ``NotImplemented``.
    """
    return _tf.dispatch(public_api, tuple(relevant_args), args, kwargs)


def is_tensor_like(inp: Any) -> bool:
    r"""``True`` if `inp` is a Tensor or its type has a ``__torch_function__``."""
    return type(inp) is _tf.Tensor or hasattr(inp, "__torch_function__")


def wrap_torch_function(dispatcher: Callable) -> Callable:
    r"""Decorator: make a Python function overridable; `dispatcher(*args, **kwargs)`
    returns the arguments to look for ``__torch_function__`` in."""
    def inner(func: Callable) -> Callable:
        @functools.wraps(func)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            relevant_args = dispatcher(*args, **kwargs)
            if has_torch_function(relevant_args):
                return handle_torch_function(wrapped, relevant_args, *args, **kwargs)
            return func(*args, **kwargs)
        return wrapped
    return inner


# -- which functions are overridable ------------------------------------------------------

# the factories and helpers that take no tensor (or are about the protocol itself)
_IGNORED_NAMES = (
    "tensor", "as_tensor", "from_numpy", "frombuffer", "asarray", "zeros", "ones", "empty",
    "full", "arange", "range", "linspace", "logspace", "eye", "rand", "randn", "randint",
    "randperm", "normal", "manual_seed", "seed", "initial_seed", "get_rng_state",
    "set_rng_state", "is_tensor", "is_storage", "set_default_dtype", "get_default_dtype",
    "set_default_device", "get_default_device", "set_printoptions", "no_grad", "enable_grad",
    "set_grad_enabled", "inference_mode", "is_grad_enabled", "device", "dtype", "finfo",
    "iinfo", "save", "load", "compile", "use_deterministic_algorithms",
    "are_deterministic_algorithms_enabled", "set_num_threads", "get_num_threads",
    "promote_types", "result_type", "can_cast", "empty_strided", "tril_indices",
    "triu_indices", "zeros_like", "ones_like", "empty_like", "full_like", "rand_like",
    "randn_like", "randint_like")


@functools.cache
def get_ignored_functions() -> set[Callable]:
    r"""Public functions that cannot be overridden by ``__torch_function__`` (they take no
    tensor, or are about construction and global state)."""
    import ember

    found = set()
    for name in _IGNORED_NAMES:
        fn = getattr(ember, name, None)
        if callable(fn):
            found.add(fn)
    return found


@functools.cache
def _overridable() -> tuple[dict[Any, list[Callable]], dict[Callable, str]]:
    import ember
    import ember.nn.functional as functional

    ignored = get_ignored_functions()
    by_namespace: dict[Any, list[Callable]] = defaultdict(list)
    names: dict[Callable, str] = {}
    spaces = ((ember, "torch", sorted(n for n in dir(ember) if not n.startswith("_"))),
              (functional, "torch.nn.functional", functional.__all__))
    for space, prefix, members in spaces:
        for name in members:
            fn = getattr(space, name, None)
            if isinstance(fn, types.FunctionType) and fn not in ignored and \
                    (getattr(fn, "op_entry", False) or space is functional):
                by_namespace[space].append(fn)
                names.setdefault(fn, f"{prefix}.{name}")
    for name, value in sorted(vars(_tf.Tensor).items()):
        if name.startswith("_") and not name.startswith("__") or name in _tf._NOT_ROUTED:
            continue
        if isinstance(value, property):
            by_namespace[_tf.Tensor].append(value.__get__)
            names.setdefault(value.__get__, f"torch.Tensor.{name}.__get__")
        elif isinstance(value, types.FunctionType):
            by_namespace[_tf.Tensor].append(value)
            names.setdefault(value, f"torch.Tensor.{name}")
    return by_namespace, names


def get_overridable_functions() -> dict[Any, list[Callable]]:
    r"""The functions overridable via ``__torch_function__``, by namespace (the ember
    module, torch.nn.functional, and Tensor for its methods and property getters)."""
    return _overridable()[0]


def get_testing_overrides() -> dict[Callable, Callable]:
    r"""A dummy override (returning -1) for each overridable function of the ember
    and torch.nn.functional namespaces, taking any arguments."""
    return {fn: (lambda *args, **kwargs: -1) for space, fns in _overridable()[0].items()
            if space is not _tf.Tensor for fn in fns}


def resolve_name(f: Callable) -> str | None:
    r"""The dotted name of an overridable function (``"torch.add"``), or None."""
    return _overridable()[1].get(f)


def is_tensor_method_or_property(func: Callable) -> bool:
    r"""Whether `func`, as passed to ``__torch_function__``, is a Tensor method or a
    property's ``__get__``."""
    return func in _overridable()[0][_tf.Tensor] or func.__name__ == "__get__"


# -- modes --------------------------------------------------------------------------------


class TorchFunctionMode:
    r"""Overrides every ``__torch_function__``-overridable call within a ``with`` block:
    ``__torch_function__(self, func, types, args, kwargs)`` is called instead of
    ``func``. Modes nest; while one's ``__torch_function__`` runs it is popped, so the
    calls it makes go to the next mode (or run)."""

    def __init__(self) -> None:
        pass

    def __torch_function__(self, func: Callable, types: Any, args: tuple = (),
                           kwargs: dict | None = None) -> Any:
        raise NotImplementedError

    def __enter__(self) -> TorchFunctionMode:
        _tf.push_mode(self)
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> None:
        _tf.pop_mode()

    @classmethod
    def push(cls, *args: Any, **kwargs: Any) -> TorchFunctionMode:
        import warnings

        warnings.warn("`Mode.push()` is no longer necessary and can be replaced with just "
                      "`with Mode()`", stacklevel=2)
        return cls(*args, **kwargs)


class BaseTorchFunctionMode(TorchFunctionMode):
    r"""A mode that runs each function as called (subclass it to watch calls)."""

    def __torch_function__(self, func: Callable, types: Any, args: tuple = (),
                           kwargs: dict | None = None) -> Any:
        return func(*args, **(kwargs or {}))


def _get_current_function_mode() -> TorchFunctionMode | None:
    return _tf.modes[-1] if _tf.modes else None


def _get_current_function_mode_stack() -> list[TorchFunctionMode]:
    return list(_tf.modes)


class enable_reentrant_dispatch:  # noqa: N801 - PyTorch's name
    r"""Context manager kept for PyTorch compatibility (ember has no dispatcher-level
    modes to restore): a no-op."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None
