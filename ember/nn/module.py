"""`Module`, the base class of every layer and model, with PyTorch's semantics.

A module keeps its parameters, buffers and child modules in three ordered dicts that
`__setattr__` fills; everything else (`parameters()`, `state_dict()`, `to()`, `train()`,
`repr`) walks those dicts. Hooks run around `forward` in PyTorch's order.
"""

from __future__ import annotations

import functools
import itertools
import warnings
from collections import OrderedDict, namedtuple
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

import ember
import ember.__future__ as _future
from ember import Tensor
from ember.autograd import Function
from ember.core.backend import api_name
from ember.core.dispatch import user_stacklevel
from ember.core.hooks import RemovableHandle
from ember.core.ops.elementwise import to_arguments
from ember.nn.parameter import Buffer, Parameter

__all__ = ["Module", "RemovableHandle", "register_module_forward_hook",
           "register_module_forward_pre_hook"]

_EXTRA_STATE_KEY_SUFFIX = "_extra_state"
_FILE_AN_ISSUE = ("Please file an issue at https://github.com/pytorch/pytorch/issues/new?"
                  "template=bug-report.yml to report this bug.")


# -- global module hooks (every module's calls: for debugging and the profiler) -------

_global_forward_pre_hooks: dict[int, Callable] = OrderedDict()
_global_forward_hooks: dict[int, Callable] = OrderedDict()
_global_forward_hooks_always_called: dict[int, bool] = OrderedDict()
_global_forward_hooks_with_kwargs: dict[int, bool] = OrderedDict()
_global_hooks = False
"""True once a global hook is registered; `Module.__call__` checks this one flag (it is
cleared when a call finds the hooks all removed)."""


def register_module_forward_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    r"""Register a forward pre-hook common to all modules.

    .. warning ::
        This adds global state to the `nn.module` module and is only intended for
        debugging and profiling (`ember.profiler` uses it for its module ranges).

    The hook is called before every module's :meth:`forward` as
    ``hook(module, args) -> None or modified args``; ``args`` are the positional
    arguments only. A single returned value that is not a tuple is wrapped into one. It
    runs before the hooks registered with ``register_forward_pre_hook``.

    Returns:
        RemovableHandle: a handle whose ``remove()`` removes the hook.
    """
    global _global_hooks
    handle = RemovableHandle(_global_forward_pre_hooks)
    _global_forward_pre_hooks[handle.id] = hook
    _global_hooks = True
    return handle


def register_module_forward_hook(hook: Callable[..., Any], *, with_kwargs: bool = False,
                                 always_call: bool = False) -> RemovableHandle:
    r"""Register a forward hook common to all modules.

    .. warning ::
        This adds global state to the `nn.module` module and is only intended for
        debugging and profiling.

    The hook is called after every module's :meth:`forward` as
    ``hook(module, args, output) -> None or modified output`` (``hook(module, args,
    kwargs, output)`` with ``with_kwargs=True``). It runs before the hooks registered with
    ``register_forward_hook``.

    Args:
        hook (Callable): the hook.
        with_kwargs (bool): pass the keyword arguments of the call too.
        always_call (bool): run it even when ``forward`` raises.

    Returns:
        RemovableHandle: a handle whose ``remove()`` removes the hook.
    """
    global _global_hooks
    handle = RemovableHandle(_global_forward_hooks, extra_dict=[
        _global_forward_hooks_always_called, _global_forward_hooks_with_kwargs])
    _global_forward_hooks[handle.id] = hook
    if with_kwargs:
        _global_forward_hooks_with_kwargs[handle.id] = True
    if always_call:
        _global_forward_hooks_always_called[handle.id] = True
    _global_hooks = True
    return handle


_global_backward_hooks: dict[int, Callable] = OrderedDict()
_global_backward_pre_hooks: dict[int, Callable] = OrderedDict()
_global_buffer_registration_hooks: dict[int, Callable] = OrderedDict()
_global_parameter_registration_hooks: dict[int, Callable] = OrderedDict()
_global_module_registration_hooks: dict[int, Callable] = OrderedDict()


def _register_global(hooks: dict, hook: Callable[..., Any], calls: bool) -> RemovableHandle:
    """Add `hook` to the global `hooks`; `calls`: `Module.__call__` must look at it."""
    global _global_hooks
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    _global_hooks = _global_hooks or calls
    return handle


def register_module_full_backward_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    r"""Register a backward pre-hook common to all modules, called as
    ``hook(module, grad_output) -> None or new grad_output`` before each module's own
    (see :meth:`Module.register_full_backward_pre_hook`). Intended for debugging."""
    return _register_global(_global_backward_pre_hooks, hook, True)


def register_module_full_backward_hook(hook: Callable[..., Any]) -> RemovableHandle:
    r"""Register a backward hook common to all modules, called as ``hook(module,
    grad_input, grad_output) -> None or new grad_input`` before each module's own (see
    :meth:`Module.register_full_backward_hook`). Intended for debugging."""
    return _register_global(_global_backward_hooks, hook, True)


def register_module_buffer_registration_hook(hook: Callable[..., Any]) -> RemovableHandle:
    r"""Register ``hook(module, name, buffer) -> None or new buffer``, called whenever a
    module registers a buffer."""
    return _register_global(_global_buffer_registration_hooks, hook, False)


def register_module_parameter_registration_hook(hook: Callable[..., Any]) -> RemovableHandle:
    r"""Register ``hook(module, name, param) -> None or new param``, called whenever a
    module registers a parameter."""
    return _register_global(_global_parameter_registration_hooks, hook, False)


def register_module_module_registration_hook(hook: Callable[..., Any]) -> RemovableHandle:
    r"""Register ``hook(module, name, submodule) -> None or new submodule``, called
    whenever a module registers a child module."""
    return _register_global(_global_module_registration_hooks, hook, False)


def _through_registration_hooks(hooks: dict, module: Module, name: str, value: Any) -> Any:
    """`value` as the global registration `hooks` leave it (each may replace it)."""
    for hook in list(hooks.values()):
        out = hook(module, name, value)
        if out is not None:
            value = out
    return value


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(s: str, num_spaces: int) -> str:
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    first = lines.pop(0)
    return first + "\n" + "\n".join(num_spaces * " " + line for line in lines)


def _typename(obj: Any) -> str:
    if isinstance(obj, Tensor):
        return obj.type_name()
    module = type(obj).__module__
    name = type(obj).__qualname__
    return name if module in (None, "builtins") else f"{module}.{name}"


# -- module backward hooks ------------------------------------------------------------


def _attach_non_full_backward_hooks(module: Module, args: tuple, result: Any) -> None:
    """`register_backward_hook`'s hooks, as PyTorch runs them: on the grad_fn of the
    module's first output tensor, with PyTorch's warnings where that misses gradients."""
    var = result
    while not isinstance(var, Tensor):
        var = next(v for v in var.values() if isinstance(v, Tensor)) \
            if isinstance(var, dict) else var[0]
    grad_fn = var.grad_fn
    if grad_fn is None:
        return
    for hook in module._backward_hooks.values():
        grad_fn.register_hook(functools.partial(_call_non_full_hook, hook, module))
    _warn_non_full_backward_hook(args, result, grad_fn)


def _call_non_full_hook(hook: Callable, module: Module, grad_input: tuple,
                        grad_output: tuple) -> Any:
    return hook(module, grad_input, grad_output)


def _as_tensors(value: Any) -> tuple | None:
    """`value` as a tuple of tensors (a lone tensor, or a tuple of them), else None."""
    if isinstance(value, Tensor):
        return (value,)
    if isinstance(value, tuple) and all(isinstance(v, Tensor) for v in value):
        return value
    return None


def _warn_non_full_backward_hook(inputs: Any, result: Any, grad_fn: Any) -> None:
    """PyTorch's FutureWarnings where a non-full backward hook misses gradients."""
    tail = " Please use register_full_backward_hook to get the documented behavior."
    result = _as_tensors(result)
    if result is None:
        warnings.warn("Using non-full backward hooks on a Module that does not return a "
                      "single Tensor or a tuple of Tensors is deprecated and will be "
                      "removed in future versions. This hook will be missing some of the "
                      "grad_output." + tail, FutureWarning, stacklevel=4)
        return
    inputs = _as_tensors(inputs)
    if inputs is None:
        warnings.warn("Using non-full backward hooks on a Module that does not take as "
                      "input a single Tensor or a tuple of Tensors is deprecated and will "
                      "be removed in future versions. This hook will be missing some of "
                      "the grad_input." + tail, FutureWarning, stacklevel=4)
        return
    out_grad_fn = {r.grad_fn for r in result if r.grad_fn is not None}
    if not out_grad_fn or (len(out_grad_fn) == 1 and grad_fn not in out_grad_fn):
        warnings.warn("Using a non-full backward hook when outputs are nested in python data "
                      "structure is deprecated and will be removed in future versions. This "
                      "hook will be missing some grad_output.", FutureWarning,
                          stacklevel=4)
    elif len(out_grad_fn) > 1:
        warnings.warn("Using a non-full backward hook when outputs are generated by different "
                      "autograd Nodes is deprecated and will be removed in future versions. "
                      "This hook will be missing some grad_output." + tail, FutureWarning,
                      stacklevel=4)
    elif {i.grad_fn for i in inputs if i.grad_fn is not None} != \
            {n[0] for n in grad_fn.next_functions}:
        warnings.warn("Using a non-full backward hook when the forward contains multiple "
                      "autograd Nodes is deprecated and will be removed in future versions. "
                      "This hook will be missing some grad_input." + tail, FutureWarning,
                      stacklevel=4)


class _BackwardHookFunction(Function):
    """Identity on a module's input or output tensors; its node is where a module's full
    backward hooks see the gradients (as torch's BackwardHookFunction)."""

    @staticmethod
    def forward(ctx, *tensors: Tensor) -> tuple:
        # gradients that do not arrive (unused outputs, inputs that need none) reach the
        # hooks as zeros, as torch materialises them
        ctx.mark_non_differentiable(*[t for t in tensors if not t.requires_grad])
        ctx.hook = None  # set by _BackwardHook once the node exists
        return tensors

    @staticmethod
    def backward(ctx, *grads: Any) -> tuple:
        return ctx.hook(grads)

    @staticmethod
    def jvp(ctx, *tangents: Any) -> tuple:  # the identity's (forward-mode AD)
        return tangents


class _BackwardHook:
    """Connects the gradients of a module's outputs with those of its inputs and calls
    the user's full backward (pre-)hooks with them."""

    def __init__(self, module: Module, user_hooks: list, user_pre_hooks: list) -> None:
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.grad_outputs: tuple | None = None
        self.n_inputs = -1
        self.n_outputs = -1
        self.input_tensors_index: list[int] | None = None
        self.output_tensors_index: list[int] | None = None

    @staticmethod
    def _pack_with_none(indices: list, values: tuple, size: int) -> tuple:
        res: list = [None] * size
        for idx, val in zip(indices, values):
            res[idx] = val
        return tuple(res)

    def _apply_on_tensors(self, hook: Callable, args: tuple) -> tuple[tuple, list | None]:
        idx = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        tensors = [args[i] for i in idx]
        if not (ember.is_grad_enabled() and any(t.requires_grad for t in tensors)):
            return args, None
        new = _BackwardHookFunction.apply(*tensors)
        node = next(t.grad_fn for t in new if t.requires_grad)
        node.ctx.hook = hook
        out = list(args)
        for i, t in zip(idx, new):
            out[i] = t
        return tuple(out), idx

    def setup_input_hook(self, args: tuple) -> tuple:
        def hook(grads: tuple) -> tuple:
            if self.grad_outputs is None:
                # the outputs' node did not run (no output used): nothing to report
                return grads
            res = self._pack_with_none(self.input_tensors_index, grads, self.n_inputs)
            for user_hook in self.user_hooks:
                out = user_hook(self.module, res, self.grad_outputs)
                if out is None:
                    continue
                if len(out) != len(res):
                    raise RuntimeError(f"Backward hook returned an invalid number of "
                                       f"grad_input, got {len(out)}, but expected {len(res)}")
                res = tuple(out)
            self.grad_outputs = None
            return _same_sizes(grads, tuple(res[i] for i in self.input_tensors_index))

        res, idx = self._apply_on_tensors(hook, args)
        self.n_inputs = len(args)
        self.input_tensors_index = idx
        return res

    def setup_output_hook(self, result: Any) -> Any:
        def hook(grads: tuple) -> tuple:
            self.grad_outputs = self._pack_with_none(self.output_tensors_index, grads,
                                                     self.n_outputs)
            expected = len(self.grad_outputs)
            for pre_hook in self.user_pre_hooks:
                out = pre_hook(self.module, self.grad_outputs)
                if out is None:
                    continue
                if len(out) != expected:
                    raise RuntimeError(f"Backward pre hook returned an invalid number of "
                                       f"grad_output, got {len(out)}, but expected {expected}")
                self.grad_outputs = tuple(out)
            local = self.grad_outputs
            if self.input_tensors_index is None:
                # no input requires grad: the hooks fire now, with grad_input all None
                warnings.warn("Full backward hook is firing when gradients are computed with "
                              "respect to module outputs since no inputs require gradients. "
                              "See https://docs.pytorch.org/docs/main/generated/torch.nn.Module"
                              ".html#torch.nn.Module.register_full_backward_hook for more "
                              "details.", stacklevel=user_stacklevel())  # (at backward())
                grad_inputs = self._pack_with_none([], (), self.n_inputs)
                for user_hook in self.user_hooks:
                    res = user_hook(self.module, grad_inputs, self.grad_outputs)
                    if res is not None and not (isinstance(res, tuple) and
                                                all(r is None for r in res)):
                        raise RuntimeError("Backward hook for Modules where no input requires "
                                           "gradient should always return None or None for "
                                           "all gradients.")
                self.grad_outputs = None
            return _same_sizes(grads, tuple(local[i] for i in self.output_tensors_index))

        is_tuple = isinstance(result, tuple)
        args = result if is_tuple else (result,)
        res, idx = self._apply_on_tensors(hook, args)
        self.n_outputs = len(args)
        self.output_tensors_index = idx
        return res if is_tuple else res[0]


def _same_sizes(before: tuple, after: tuple) -> tuple:
    """The gradients module backward hooks returned, refused where one changed size (PyTorch's
    check on its BackwardHookFunction's hook, named `hook`)."""
    for b, a in zip(before, after):
        if b is not None and a is not None and tuple(a.shape) != tuple(b.shape):
            raise RuntimeError("hook 'hook' has changed the size of value")
    return after


def _forward_unimplemented(self: Module, *input: Any) -> None:
    raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                              f'"forward" function')


def _no_device(err: Exception) -> Any:
    raise err


class Module:
    r"""Base class for all neural network modules.

    Models subclass it, create their layers in ``__init__`` (assigning them as
    attributes registers them) and define the computation in :meth:`forward`::

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = nn.Linear(4, 8)
                self.fc2 = nn.Linear(8, 2)

            def forward(self, x):
                return self.fc2(F.relu(self.fc1(x)))

    Call the module (``model(x)``), not ``forward``, so that hooks run.
    """

    dump_patches: bool = False
    # the type state_dict returns (a class attribute of PyTorch's: `dir(module)` lists it)
    T_destination = TypeVar("T_destination", bound=dict)
    # bumped by subclasses whose state_dict layout changes (see BatchNorm)
    _version: int = 1
    training: bool
    call_super_init: bool = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if self.call_super_init is False and kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword "
                            f"argument '{next(iter(kwargs))}'")
        if self.call_super_init is False and args:
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument "
                            f"but {len(args) + 1} were given")
        # object.__setattr__ skips our own __setattr__ (which needs these dicts)
        setattr_ = super().__setattr__
        setattr_("training", True)
        setattr_("_parameters", {})
        setattr_("_buffers", {})
        setattr_("_non_persistent_buffers_set", set())
        setattr_("_backward_pre_hooks", OrderedDict())
        setattr_("_backward_hooks", OrderedDict())
        setattr_("_is_full_backward_hook", None)  # which kind _backward_hooks holds
        setattr_("_forward_hooks", OrderedDict())
        setattr_("_forward_hooks_with_kwargs", OrderedDict())
        setattr_("_forward_hooks_always_called", OrderedDict())
        setattr_("_forward_pre_hooks", OrderedDict())
        setattr_("_forward_pre_hooks_with_kwargs", OrderedDict())
        setattr_("_state_dict_hooks", OrderedDict())
        setattr_("_state_dict_pre_hooks", OrderedDict())
        setattr_("_load_state_dict_pre_hooks", OrderedDict())
        setattr_("_load_state_dict_post_hooks", OrderedDict())
        setattr_("_modules", {})
        if self.call_super_init:
            super().__init__(*args, **kwargs)

    forward: Callable[..., Any] = _forward_unimplemented

    # -- registration -----------------------------------------------------------------
    def register_buffer(self, name: str, tensor: Tensor | None,
                        persistent: bool = True) -> None:
        r"""Add a buffer to the module: state that is not a parameter (e.g. BatchNorm's
        ``running_mean``). Persistent buffers are part of :meth:`state_dict`.

        Args:
            name (str): name of the buffer, accessible as an attribute.
            tensor (Tensor or None): buffer to be registered. ``None`` buffers are skipped
                by :meth:`to` and :meth:`state_dict`.
            persistent (bool): whether the buffer is part of this module's state_dict.
        """
        self._check_new_name("buffer", name, "_buffers")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            f"({api_name()} Tensor or None required)")
        self._buffers[name] = _through_registration_hooks(_global_buffer_registration_hooks,
                                                          self, name, tensor)
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def _check_new_name(self, kind: str, name: Any, table: str) -> None:
        """PyTorch's errors for registering a `kind` ("buffer", "parameter") under `name`
        in the dict attribute `table`."""
        if table not in self.__dict__:
            raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if hasattr(self, name) and name not in self.__dict__[table]:
            raise KeyError(f"attribute '{name}' already exists")

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        r"""Add a parameter to the module, accessible as an attribute.

        Args:
            name (str): name of the parameter.
            param (Parameter or None): parameter to be added. ``None`` parameters are
                skipped by :meth:`to` and :meth:`state_dict`.
        """
        self._check_new_name("parameter", name, "_parameters")
        if param is None:
            self._parameters[name] = None
        elif not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter "
                            f"'{name}' ({api_name()}.nn.Parameter or None required)")
        elif param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model "
                             f"parameters must be created explicitly. To express '{name}' as "
                             "a function of another Tensor, compute the value in the "
                             "forward() method.")
        else:
            self._parameters[name] = _through_registration_hooks(
                _global_parameter_registration_hooks, self, name, param)

    def add_module(self, name: str, module: Module | None) -> None:
        r"""Add a child module, accessible as an attribute with the given name."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = _through_registration_hooks(_global_module_registration_hooks,
                                                          self, name, module)

    def register_module(self, name: str, module: Module | None) -> None:
        r"""Alias for :meth:`add_module`."""
        self.add_module(name, module)

    def get_submodule(self, target: str) -> Module:
        """The submodule at dotted path ``target`` (``""`` is this module)."""
        if target == "":
            return self
        mod: Module = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
        """Set the submodule at dotted path ``target`` to ``module``.

        Args:
            target: the fully-qualified name of the submodule (``"net_b.net_c.conv"``).
            module: the module to put there.
            strict: if ``False`` (default), replace an existing submodule or add a new one
                to an existing parent; if ``True``, only replace an existing submodule.

        Raises:
            ValueError: if ``target`` is empty or ``module`` is not an ``nn.Module``.
            AttributeError: if a (sub)path names no attribute or something not a module.
        """
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent_path, _, name = target.rpartition(".")
        parent = self.get_submodule(parent_path)
        if strict and not hasattr(parent, name):
            raise AttributeError(parent._get_name() + " has no attribute `" + name + "`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError("`" + name + "` is not an nn.Module")
        setattr(parent, name, module)

    def _owner_of(self, target: str) -> tuple[Module, str]:
        """(the submodule holding dotted path ``target``'s last name, that name)."""
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        return mod, name

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at dotted path ``target``."""
        mod, param_name = self._owner_of(target)
        param = getattr(mod, param_name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + param_name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at dotted path ``target``."""
        mod, buffer_name = self._owner_of(target)
        if buffer_name not in mod._buffers:
            raise AttributeError("`" + buffer_name + "` is not a buffer")
        return getattr(mod, buffer_name)

    def get_extra_state(self) -> Any:
        """State beyond parameters and buffers to put in :meth:`state_dict` (override it
        together with :meth:`set_extra_state`)."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never "
                           "be called. " + _FILE_AN_ISSUE)

    def set_extra_state(self, state: Any) -> None:
        """Restore the state returned by :meth:`get_extra_state`."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never "
                           "be called. " + _FILE_AN_ISSUE)

    # -- attribute protocol -----------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        # only reached when normal lookup fails: parameters, buffers, child modules
        d = self.__dict__
        if "_parameters" in d:
            params = d["_parameters"]
            if name in params:
                return params[name]
        if "_buffers" in d:
            buffers = d["_buffers"]
            if name in buffers:
                return buffers[name]
        if "_modules" in d:
            modules = d["_modules"]
            if name in modules:
                return modules[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value: Any) -> None:
        def remove_from(*dicts_or_sets: Any) -> None:
            for d in dicts_or_sets:
                if name in d:
                    if isinstance(d, dict):
                        del d[name]
                    else:
                        d.discard(name)

        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(self.__dict__, self._buffers, self._modules,
                        self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                f"({api_name()}.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        else:
            modules = self.__dict__.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                remove_from(self.__dict__, self._parameters, self._buffers,
                            self._non_persistent_buffers_set)
                modules[name] = _through_registration_hooks(_global_module_registration_hooks,
                                                            self, name, value)
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(f"cannot assign '{_typename(value)}' as child module "
                                    f"'{name}' ({api_name()}.nn.Module or None expected)")
                modules[name] = _through_registration_hooks(_global_module_registration_hooks,
                                                            self, name, value)
            else:
                buffers = self.__dict__.get("_buffers")
                if isinstance(value, Buffer) or (buffers is not None and name in buffers):
                    if value is not None and not isinstance(value, Tensor):
                        raise TypeError(f"cannot assign '{_typename(value)}' as buffer "
                                        f"'{name}' ({api_name()}.nn.Buffer, {api_name()}.Tensor "
                                        "or None expected)")
                    if isinstance(value, Buffer):
                        persistent = value.persistent
                    else:
                        persistent = name not in self._non_persistent_buffers_set
                    if isinstance(value, Buffer):
                        remove_from(self.__dict__, self._parameters, self._modules)
                    self.register_buffer(name, value, persistent)
                else:
                    super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            super().__delattr__(name)

    def __dir__(self) -> list[str]:
        keys = (dir(self.__class__) + list(self.__dict__) + list(self._parameters) +
                list(self._modules) + list(self._buffers))
        # names that are not valid Python identifiers (Sequential's "0", "1") are dropped
        return sorted(k for k in keys if not k[0].isdigit())

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

    # -- iteration --------------------------------------------------------------------
    def _named_members(self, get_members_fn: Callable, prefix: str = "", recurse: bool = True,
                       remove_duplicate: bool = True) -> Iterator[tuple[str, Any]]:
        memo: set = set()
        modules = (self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
                   if recurse else [(prefix, self)])
        for module_prefix, module in modules:
            for k, v in get_members_fn(module):
                if v is None or v in memo:
                    continue
                if remove_duplicate:
                    memo.add(v)
                yield module_prefix + ("." if module_prefix else "") + k, v

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        r"""An iterator over module parameters (each shared parameter once).

        Args:
            recurse (bool): if True, include the parameters of all submodules.
        """
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        r"""An iterator over ``(name, parameter)`` pairs, names dotted from this module.

        Args:
            prefix (str): prefix to prepend to all parameter names.
            recurse (bool): if True, include the parameters of all submodules.
            remove_duplicate (bool): whether to yield a shared parameter only once.
        """
        yield from self._named_members(lambda m: m._parameters.items(), prefix=prefix,
                                       recurse=recurse, remove_duplicate=remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        r"""An iterator over module buffers."""
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        r"""An iterator over ``(name, buffer)`` pairs."""
        yield from self._named_members(lambda m: m._buffers.items(), prefix=prefix,
                                       recurse=recurse, remove_duplicate=remove_duplicate)

    def children(self) -> Iterator[Module]:
        r"""An iterator over immediate child modules."""
        for _, module in self.named_children():
            yield module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        r"""An iterator over ``(name, module)`` pairs of immediate children."""
        memo: set = set()
        for name, module in self._modules.items():
            if module is not None and module not in memo:
                memo.add(module)
                yield name, module

    def modules(self, remove_duplicate: bool = True) -> Iterator[Module]:
        r"""An iterator over all modules in the network, this one first."""
        for _, module in self.named_modules(remove_duplicate=remove_duplicate):
            yield module

    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        r"""An iterator over ``(name, module)`` pairs of all modules, depth first."""
        if memo is None:
            memo = set()
        if self not in memo:
            if remove_duplicate:
                memo.add(self)
            yield prefix, self
            for name, module in self._modules.items():
                if module is None:
                    continue
                sub_prefix = prefix + ("." if prefix else "") + name
                yield from module.named_modules(memo, sub_prefix, remove_duplicate)

    # -- modes ------------------------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        r"""Set this module and its descendants in training mode (``mode=False``: eval)."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> Module:
        r"""Set the module in evaluation mode; same as ``self.train(False)``."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        r"""Set ``requires_grad`` of every parameter, in place."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        r"""Reset the gradients of all parameters: to ``None`` (the default), or to zero."""
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    if p.grad.grad_fn is not None:
                        p.grad.detach_()
                    else:
                        p.grad.requires_grad_(False)
                    p.grad.zero_()

    # -- moving and casting -----------------------------------------------------------
    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> Module:
        if recurse:
            for module in self.children():
                module._apply(fn)
        overwrite = _future.get_overwrite_module_params_on_conversion()
        for key, param in self._parameters.items():
            if param is None:
                continue
            with ember.no_grad():
                applied = fn(param)
            grad = param.grad
            if overwrite:  # ember.__future__'s switch: new Parameter objects, as torch's
                new = Parameter(applied, param.requires_grad)
                self._parameters[key] = new
                if grad is not None:
                    with ember.no_grad():
                        new.grad = fn(grad).requires_grad_(grad.requires_grad)
                continue
            # in place through `.data`, as torch does: the Parameter object (which an
            # optimizer may already hold) stays the same
            param.data = applied
            if grad is not None:
                with ember.no_grad():
                    grad_applied = fn(grad)
                grad.data = grad_applied
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def compile(self, *args: Any, **kwargs: Any) -> None:
        r"""Compile this module's forward in place with :func:`ember.compile` (the
        arguments are its own). Unlike ``ember.compile(module)``, the module stays
        itself: same class, same ``state_dict`` keys."""
        self.forward = ember.compile(type(self).forward.__get__(self), *args, **kwargs)

    def share_memory(self) -> Module:
        r"""Move the parameters and buffers (and their gradients) to shared memory, in
        place (:meth:`Tensor.share_memory_`): processes that train the model afterwards,
        forked or sent it through :mod:`ember.multiprocessing`, update the same weights.

        Returns:
            Module: self
        """
        return self._apply(lambda t: t.share_memory_())

    def apply(self, fn: Callable[[Module], None]) -> Module:
        r"""Call ``fn`` on every submodule (children first) and then on this module; the
        usual way to initialise a model's weights."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def to(self, *args: Any, **kwargs: Any) -> Module:
        r"""Move and/or cast the parameters and buffers, in place.

        Called as ``to(device=None, dtype=None, non_blocking=False)``, ``to(dtype)``,
        ``to(tensor)``, ``to(device)`` or ``to(memory_format=ember.channels_last)`` (the
        4-d and 5-d parameters and buffers are laid out in that format). Only
        floating-point parameters and buffers are cast to ``dtype``; integral ones are only
        moved.

        Returns:
            Module: self
        """
        memory_format = kwargs.get("memory_format")
        device, dtype, _, _ = to_arguments(args, kwargs)  # Tensor.to's parsing and errors
        if dtype is not None:
            if not (dtype.is_floating_point or dtype.is_complex):
                raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, "
                                f"but got desired dtype={dtype}")
            if dtype.is_complex:
                warnings.warn(
                    "Complex modules are a new feature under active development whose design "
                    "may change, and some modules might not work as expected when using "
                    "complex tensors as parameters or buffers. Please file an issue at "
                    "https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml if "
                    "a complex module does not work as expected.", stacklevel=2)

        def cast(t: Tensor) -> Any:  # floating and complex tensors take `dtype`
            return dtype if t.is_floating_point() or t.is_complex() else None

        def convert(t: Tensor) -> Tensor:
            if memory_format is not None and t.dim() in (4, 5):  # conv weights
                return t.to(device, cast(t), memory_format=memory_format)
            return t.to(device, cast(t))

        if isinstance(device, (str, ember.device)) and ember.device(device).type == "auto":
            from ember.scheduling import place_module  # the scheduler picks (and records)

            def move(chosen: ember.device) -> Module:
                return self._apply(lambda t: t.to(chosen, cast(t)))
            return place_module(self, move)
        try:
            return self._apply(convert)
        except NotImplementedError as err:
            if str(err) != "Cannot copy out of meta tensor; no data!":
                raise
            from ember.core.dtype import API_NAME as api  # "torch" under the torch alias

            raise NotImplementedError(
                f"{err} Please use {api}.nn.Module.to_empty() instead of {api}.nn.Module.to() "
                "when moving module from meta to a different device.") from None

    def to_empty(self, *, device: Any, recurse: bool = True) -> Module:
        r"""Move the parameters and buffers to the specified device without copying
        storage: each becomes an uninitialised tensor of its shape and dtype there (the
        way to bring a model built on the ``meta`` device to a real one, before
        initialising it).

        Args:
            device (:class:`ember.device`): The desired device of the parameters
                and buffers in this module.
            recurse (bool): Whether parameters and buffers of submodules should
                be recursively moved to the specified device.

        Returns:
            Module: self
        """
        return self._apply(lambda t: ember.empty_like(t, device=device), recurse=recurse)

    def cuda(self, device: Any = None) -> Module:
        r"""Move all parameters and buffers to a CUDA device (in place)."""
        return self._apply(lambda t: t.cuda(device))

    def xpu(self, device: Any = None) -> Module:
        r"""Move all parameters and buffers to an XPU device (in place)."""
        where = "xpu" if device is None else f"xpu:{device}" if isinstance(device, int) else device
        return self._apply(lambda t: t.to(where))

    def ipu(self, device: Any = None) -> Module:
        r"""Move all parameters and buffers to an IPU (ember has none: PyTorch's refusal)."""
        return self._apply(lambda t: _no_device(RuntimeError(
            "PyTorch is not linked with support for ipu devices")))

    def mtia(self, device: Any = None) -> Module:
        r"""Move all parameters and buffers to an MTIA device (ember has none: PyTorch's
        refusal)."""
        return self._apply(lambda t: _no_device(AssertionError(
            "Torch not compiled with MTIA enabled. Ensure you have `import mtia.host_runtime."
            "torch_mtia.dynamic_library` in your python src file and include `//mtia/"
            "host_runtime/torch_mtia:torch_mtia` as your target dependency!")))

    def cpu(self) -> Module:
        r"""Move all parameters and buffers to the CPU (in place)."""
        return self._apply(lambda t: t.cpu())

    def type(self, dst_type: Any) -> Module:
        r"""Cast all parameters and buffers to ``dst_type``."""
        return self._apply(lambda t: t.type(dst_type))

    def float(self) -> Module:
        r"""Cast floating-point parameters and buffers to ``float32``."""
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self) -> Module:
        r"""Cast floating-point parameters and buffers to ``float64``."""
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self) -> Module:
        r"""Cast floating-point parameters and buffers to ``float16``."""
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self) -> Module:
        r"""Cast floating-point parameters and buffers to ``bfloat16``."""
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)

    # -- hooks ------------------------------------------------------------------------
    def register_forward_pre_hook(self, hook: Callable, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        r"""Register a hook called before :meth:`forward`.

        Its signature is ``hook(module, args) -> None or modified args`` or, with
        ``with_kwargs=True``, ``hook(module, args, kwargs) -> None or (args, kwargs)``.
        A single returned value that is not a tuple is wrapped into one.

        Args:
            hook (Callable): the hook.
            prepend (bool): run it before the hooks already registered.
            with_kwargs (bool): pass the keyword arguments of the call too.

        Returns:
            RemovableHandle: a handle whose ``remove()`` removes the hook.
        """
        handle = RemovableHandle(self._forward_pre_hooks,
                                 extra_dict=self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook: Callable, *, prepend: bool = False,
                              with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        r"""Register a hook called after :meth:`forward` has computed an output.

        Its signature is ``hook(module, args, output) -> None or modified output`` or,
        with ``with_kwargs=True``, ``hook(module, args, kwargs, output)``.

        Args:
            hook (Callable): the hook.
            prepend (bool): run it before the hooks already registered.
            with_kwargs (bool): pass the keyword arguments of the call too.
            always_call (bool): run it even if ``forward`` raises.

        Returns:
            RemovableHandle: a handle whose ``remove()`` removes the hook.
        """
        handle = RemovableHandle(self._forward_hooks, extra_dict=[
            self._forward_hooks_with_kwargs, self._forward_hooks_always_called])
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_pre_hook(self, hook: Callable,
                                        prepend: bool = False) -> RemovableHandle:
        r"""Register a hook called when the gradients of the module's outputs are known,
        before its inputs' are computed: ``hook(module, grad_output) -> tuple or None``.
        A returned tuple replaces ``grad_output``."""
        handle = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[handle.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_hook(self, hook: Callable,
                                    prepend: bool = False) -> RemovableHandle:
        r"""Register a hook called when the gradients with respect to the module's inputs
        are computed: ``hook(module, grad_input, grad_output) -> tuple or None``.

        ``grad_input`` and ``grad_output`` are tuples with one entry per positional
        input / output (``None`` for non-tensors and for tensors that need no gradient).
        A returned tuple replaces ``grad_input`` for the rest of the backward pass. When
        no input requires grad, the hook fires with the outputs' gradients and
        ``grad_input`` all ``None``.
        """
        self._one_kind_of_backward_hooks(full=True)
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_backward_hook(self, hook: Callable) -> RemovableHandle:
        r"""Register a backward hook on the module (deprecated in favor of
        :meth:`register_full_backward_hook`, as in PyTorch).

        ``hook(module, grad_input, grad_output)`` runs as a hook of the autograd node that
        made the module's (first) output: ``grad_input`` are that node's input gradients,
        which are the module's own only when its forward is a single operation.

        Returns:
            a handle that removes the hook with ``handle.remove()``
        """
        self._one_kind_of_backward_hooks(full=False)
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        return handle

    def _one_kind_of_backward_hooks(self, full: bool) -> None:
        if getattr(self, "_is_full_backward_hook", None) is (not full):
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks "
                               "on a single Module. Please use only one of them.")
        object.__setattr__(self, "_is_full_backward_hook", full)

    def register_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        r"""Register ``hook(module, prefix, keep_vars)``, called before :meth:`state_dict`
        collects this module's entries."""
        handle = RemovableHandle(self._state_dict_pre_hooks)
        self._state_dict_pre_hooks[handle.id] = hook
        return handle

    def _register_state_dict_hook(self, hook: Callable) -> RemovableHandle:
        r"""PyTorch's private form of :meth:`register_state_dict_post_hook`, used by
        libraries: ``hook(module, state_dict, prefix, local_metadata)`` may also return a
        new ``state_dict``, respected when this module is the one ``state_dict`` is
        called on."""
        if getattr(hook, "_from_public_api", False):
            raise RuntimeError("Cannot register the same function as the state dict post hook "
                               "that was previously registered via "
                               "register_state_dict_post_hook")
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    def register_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        r"""Register ``hook(module, state_dict, prefix, local_metadata)``, called after
        :meth:`state_dict`; it may modify ``state_dict`` in place and must return None."""
        hook._from_public_api = True
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    def register_load_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        r"""Register ``hook(module, state_dict, prefix, local_metadata, strict,
        missing_keys, unexpected_keys, error_msgs)``, called before this module loads."""
        handle = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[handle.id] = functools.partial(hook, self)
        return handle

    def _register_load_state_dict_pre_hook(self, hook: Callable,
                                           with_module: bool = False) -> RemovableHandle:
        r"""PyTorch's private form of :meth:`register_load_state_dict_pre_hook`, used by
        libraries: ``hook(state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)``, given the module first only ``with_module``."""
        if with_module:
            return self.register_load_state_dict_pre_hook(hook)
        handle = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[handle.id] = hook
        return handle

    def register_load_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        r"""Register ``hook(module, incompatible_keys)``, called after
        :meth:`load_state_dict`; it may edit the key lists in place."""
        handle = RemovableHandle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[handle.id] = hook
        return handle

    # -- calling ----------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # the common case, no hooks: straight to forward
        if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks
                or self._backward_pre_hooks or _global_hooks):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    _call_impl = __call__

    def _call_with_hooks(self, args: tuple, kwargs: dict) -> Any:
        global _global_hooks
        if _global_hooks and not (_global_forward_pre_hooks or _global_forward_hooks or
                                  _global_backward_hooks or _global_backward_pre_hooks):
            _global_hooks = False  # all removed: calls take the fast path again
        forward_hooks = None
        result = None
        called_always: set = set()
        try:
            for hook_id, hook in [*_global_forward_pre_hooks.items(),
                                  *self._forward_pre_hooks.items()]:
                if hook_id in self._forward_pre_hooks_with_kwargs:
                    out = hook(self, args, kwargs)
                    if out is not None:
                        if isinstance(out, tuple) and len(out) == 2:
                            args, kwargs = out
                        else:
                            raise RuntimeError("forward pre-hook must return None or a tuple "
                                               f"of (new_args, new_kwargs), but got {out}.")
                else:
                    out = hook(self, args)
                    if out is not None:
                        args = out if isinstance(out, tuple) else (out,)

            bw_hook = None
            full = getattr(self, "_is_full_backward_hook", None) is not False
            # the global hooks first, as in PyTorch
            full_hooks = [*_global_backward_hooks.values(),
                          *self._backward_hooks.values()] if full else []
            pre_hooks = [*_global_backward_pre_hooks.values(), *self._backward_pre_hooks.values()]
            if full_hooks or pre_hooks:
                bw_hook = _BackwardHook(self, full_hooks, pre_hooks)
                args = bw_hook.setup_input_hook(args)

            result = self.forward(*args, **kwargs)
            # global hooks first, as in PyTorch
            forward_hooks = [*_global_forward_hooks.items(), *self._forward_hooks.items()]
            for hook_id, hook in forward_hooks:
                if hook_id in self._forward_hooks_always_called or \
                        hook_id in _global_forward_hooks_always_called:
                    called_always.add(hook_id)
                if hook_id in self._forward_hooks_with_kwargs or \
                        hook_id in _global_forward_hooks_with_kwargs:
                    out = hook(self, args, kwargs, result)
                else:
                    out = hook(self, args, result)
                if out is not None:
                    result = out

            if bw_hook is not None:
                if not isinstance(result, (Tensor, tuple)):
                    warnings.warn("For backward hooks to be called, module output should be a "
                                  f"Tensor or a tuple of Tensors but received {type(result)}",
                                  stacklevel=2)
                else:
                    result = bw_hook.setup_output_hook(result)
            if not full and self._backward_hooks:
                _attach_non_full_backward_hooks(self, args, result)
            return result
        except Exception:
            if forward_hooks is None:
                forward_hooks = [*_global_forward_hooks.items(), *self._forward_hooks.items()]
            for hook_id, hook in forward_hooks:
                if (hook_id in self._forward_hooks_always_called or
                        hook_id in _global_forward_hooks_always_called) and \
                        hook_id not in called_always:
                    try:
                        if hook_id in self._forward_hooks_with_kwargs or \
                                hook_id in _global_forward_hooks_with_kwargs:
                            out = hook(self, args, kwargs, result)
                        else:
                            out = hook(self, args, result)
                        if out is not None:
                            result = out
                    except Exception as e:
                        warnings.warn("module forward hook with ``always_call=True`` raised an "
                                      "exception that was silenced as another error was raised "
                                      f"in forward: {e}", stacklevel=2)
            raise

    # -- state dict -------------------------------------------------------------------
    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def state_dict(self, *args: Any, destination: dict | None = None, prefix: str = "",
                   keep_vars: bool = False) -> dict[str, Any]:
        r"""A dictionary with the whole state of the module: parameters and persistent
        buffers, keyed by their dotted names.

        The values are detached from autograd and share storage with the module's
        tensors (``keep_vars=True`` returns the Parameters themselves).

        Args:
            destination (dict, optional): a dict to fill and return instead of a new
                ``OrderedDict``.
            prefix (str, optional): a prefix added to every key.
            keep_vars (bool, optional): do not detach the values.
        """
        if args:  # torch's deprecated positional form: (destination, prefix, keep_vars)
            warnings.warn("Positional args are being deprecated, use kwargs instead. Refer to "
                          "https://pytorch.org/docs/main/generated/torch.nn.Module.html"
                          "#torch.nn.Module.state_dict for details.", FutureWarning, stacklevel=2)
            if destination is None:
                destination = args[0]
            if len(args) > 1 and prefix == "":
                prefix = args[1]
            if len(args) > 2 and keep_vars is False:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = dict(version=self._version)
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".",
                                  keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            result = hook(self, destination, prefix, local_metadata)
            if getattr(hook, "_from_public_api", False):
                if result is not None:
                    raise RuntimeError("state_dict post-hook must return None")
            elif result is not None:
                destination = result
        return destination

    def _load_from_state_dict(self, state_dict: dict, prefix: str, local_metadata: dict,
                              strict: bool, missing_keys: list, unexpected_keys: list,
                              error_msgs: list) -> None:
        r"""Copy this module's own parameters and buffers (not its children's) from
        ``state_dict``; subclasses override it for backward-compatible loading."""
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                 error_msgs)
        persistent_buffers = {k: v for k, v in self._buffers.items()
                              if k not in self._non_persistent_buffers_set}
        local_state = {k: v for k, v in itertools.chain(self._parameters.items(),
                                                        persistent_buffers.items())
                       if v is not None}
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            input_param = state_dict[key]
            if not isinstance(input_param, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected '
                                  f"{api_name()}.Tensor or Tensor-like object from checkpoint but "
                                  f"received {type(input_param)}")
                continue
            # old checkpoints stored scalars as 1-element vectors
            if param.ndim == 0 and input_param.ndim == 1 and input_param.shape[0] == 1:
                input_param = input_param[0]
            if input_param.shape != param.shape:
                error_msgs.append(f"size mismatch for {key}: copying a param with shape "
                                  f"{input_param.shape} from checkpoint, the shape in current "
                                  f"model is {param.shape}.")
                continue
            if param.is_meta and not input_param.is_meta and not assign:
                warnings.warn(f"for {key}: copying from a non-meta parameter in the checkpoint "
                              "to a meta parameter in the current model, which is a no-op. "
                              "(Did you mean to pass `assign=True` to assign items in the "
                              "state dictionary to their corresponding key in the module "
                              "instead of copying them in place?)", stacklevel=2)
            try:
                with ember.no_grad():
                    if assign:
                        if isinstance(param, Parameter):
                            if not isinstance(input_param, Parameter):
                                input_param = Parameter(input_param,
                                                        requires_grad=param.requires_grad)
                            else:
                                input_param.requires_grad_(param.requires_grad)
                        setattr(self, name, input_param)
                    else:
                        param.copy_(input_param)
            except Exception as ex:
                error_msgs.append(f'While copying the parameter named "{key}", whose '
                                  f"dimensions in the model are {param.shape} and whose "
                                  f"dimensions in the checkpoint are {input_param.shape}, an "
                                  f"exception occurred : {ex.args}.")
        extra_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if type(self).set_extra_state is not Module.set_extra_state:
            if extra_key in state_dict:
                self.set_extra_state(state_dict[extra_key])
            elif strict:
                missing_keys.append(extra_key)
        elif strict and extra_key in state_dict:
            unexpected_keys.append(extra_key)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra_key:
                    input_name = key[len(prefix):].split(".", 1)
                    if len(input_name) > 1:
                        if input_name[0] not in self._modules:
                            unexpected_keys.append(key)
                    elif input_name[0] not in local_state:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True,
                        assign: bool = False) -> _IncompatibleKeys:
        r"""Copy parameters and buffers from ``state_dict`` into this module and its
        descendants, in place (under ``no_grad``).

        Args:
            state_dict (dict): parameters and persistent buffers, as :meth:`state_dict`
                returns them.
            strict (bool, optional): require the keys to match this module's
                :meth:`state_dict` keys exactly. Default: ``True``
            assign (bool, optional): assign the state dict's tensors instead of copying
                into the existing ones (Parameters keep the module's ``requires_grad``).

        Returns:
            ``NamedTuple`` with ``missing_keys`` and ``unexpected_keys`` lists.

        Raises:
            RuntimeError: with every problem found ("Error(s) in loading state_dict for
                ..."): missing or unexpected keys when ``strict``, and size mismatches.
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys: list[str] = []
        unexpected_keys: list[str] = []
        error_msgs: list[str] = []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata

        def load(module: Module, local_state_dict: dict, prefix: str = "") -> None:
            local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            module._load_from_state_dict(local_state_dict, prefix, local_metadata, True,
                                         missing_keys, unexpected_keys, error_msgs)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    child_state = {k: v for k, v in local_state_dict.items()
                                   if k.startswith(child_prefix)}
                    load(child, child_state, child_prefix)
            incompatible = _IncompatibleKeys(missing_keys, unexpected_keys)
            for hook in module._load_state_dict_post_hooks.values():
                if hook(module, incompatible) is not None:
                    raise AssertionError("Hooks registered with "
                                         "``register_load_state_dict_post_hook`` are not "
                                         "expected to return new values, if incompatible_keys "
                                         "need to be modified, it should be done inplace.")

        load(self, state_dict)
        if strict:
            if unexpected_keys:
                error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected_keys)))
            if missing_keys:
                error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing_keys)))
        if error_msgs:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                self.__class__.__name__, "\n\t".join(error_msgs)))
        return _IncompatibleKeys(missing_keys, unexpected_keys)

    # -- printing ---------------------------------------------------------------------
    def _get_name(self) -> str:
        return self.__class__.__name__

    def extra_repr(self) -> str:
        r"""The module's own description inside its repr (override in layers)."""
        return ""

    def __repr__(self) -> str:
        extra_lines = []
        extra_repr = self.extra_repr()
        if extra_repr:
            extra_lines = extra_repr.split("\n")
        child_lines = []
        for key, module in self._modules.items():
            mod_str = _addindent(repr(module), 2)
            child_lines.append("(" + key + "): " + mod_str)
        lines = extra_lines + child_lines
        main_str = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main_str += extra_lines[0]
            else:
                main_str += "\n  " + "\n  ".join(lines) + "\n"
        return main_str + ")"
