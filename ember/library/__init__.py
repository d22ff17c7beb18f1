"""`torch.library`: Python custom operators, as PyTorch 2.4+ defines them.

::

    @torch.library.custom_op("mylib::numpy_sin", mutates_args=())
    def numpy_sin(x: torch.Tensor) -> torch.Tensor:
        return torch.from_numpy(np.sin(x.numpy()))

    numpy_sin.register_fake(lambda x: torch.empty_like(x))        # the meta device
    numpy_sin.register_autograd(backward, setup_context=setup)      # autograd
    torch.ops.mylib.numpy_sin(x)                                    # the same op

and the older `Library` API (``lib.define("foo(Tensor x) -> Tensor")``,
``lib.impl("foo", fn, "CPU")``). See `ember.library.operator` for how a call runs.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from ember.library.fake_impl import get_ctx
from ember.library.operator import Operator, device_key
from ember.library.registry import OPERATORS, OpOverload, lookup, ops, register
from ember.library.schema import Schema, infer, parse

__all__ = ["custom_op", "CustomOpDef", "register_fake", "register_autograd",
           "register_kernel", "impl", "impl_abstract", "define", "Library", "opcheck",
           "OpCheckError", "infer_schema", "fallthrough_kernel", "ops", "get_ctx",
           "register_vmap", "register_torch_dispatch"]


def fallthrough_kernel() -> None:
    """A dummy function to pass to ``Library.impl`` in order to register a fallthrough
    (the key is skipped: for ``"Autograd"``, the op has no autograd kernel)."""
    raise NotImplementedError("fallthrough_kernel() should never be called.")


def _device_types(device_types: str | Iterable[str] | None) -> list[str]:
    if device_types is None:
        return ["default"]
    if isinstance(device_types, str):
        return [device_key(device_types)]
    return [device_key(d) for d in device_types]


class CustomOpDef:
    """What `custom_op` returns: call it to run the op; register its kernels, fake kernel
    and autograd formula on it."""

    def __init__(self, namespace: str, name: str, schema: Schema, fn: Callable) -> None:
        self._namespace, self._name = namespace, name
        self._init_fn = fn
        self._op = Operator(schema, custom=True)
        self._schema = schema  # (no __name__, as PyTorch's: messages show its repr)
        self.__doc__ = fn.__doc__
        register(self._op)
        self._opoverload = OpOverload(self._op)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._opoverload(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<CustomOpDef({self._namespace}::{self._name})>"

    def register_kernel(self, device_types: str | Iterable[str] | None,
                        fn: Callable | None = None) -> Any:
        """Register `fn` as the kernel for `device_types` (``"cpu"``, ``"cuda"`` ...);
        a decorator without `fn`."""
        def inner(fn: Callable) -> Callable:
            for d in _device_types(device_types):
                self._op.kernels[d] = fn
            return fn
        return inner if fn is None else inner(fn)

    def register_fake(self, fn: Callable) -> Callable:
        """Register the fake kernel: it makes the outputs' metadata (shape, dtype, device)
        without computing values; it runs for ``meta`` tensors."""
        self._op.fake = fn
        code = self._init_fn.__code__  # (PyTorch's messages name where the op was made)
        self._op.fake_source = f"{code.co_filename}:{code.co_firstlineno}"
        return fn

    def register_vmap(self, func: Callable | None = None) -> Any:
        """Register the batching rule `vmap` of this op runs (see `register_vmap`)."""
        return register_vmap(self, func)

    @property
    def _vmap_rule(self) -> Callable | None:
        return self._op.vmap

    def register_autograd(self, backward: Callable, /, *,
                          setup_context: Callable | None = None) -> None:
        """Register `backward(ctx, *grads)` (one gradient per input) and
        `setup_context(ctx, inputs, output)`, which saves what backward needs."""
        self._op.backward = backward
        self._op.setup_context = setup_context


def infer_schema(prototype_function: Callable, /, *, mutates_args: Any,
                 op_name: str | None = None) -> str:
    """The schema string PyTorch infers from a function's type annotations."""
    schema = infer(prototype_function, "", "", mutates_args)
    text = schema.text(python_floats=True)
    return (op_name or "") + text[text.index("("):]


def custom_op(name: str, fn: Callable | None = None, /, *, mutates_args: Any,
              device_types: str | Iterable[str] | None = None, schema: str | None = None,
              tags: Any = None) -> Any:
    """Wrap `fn` into a custom operator ``namespace::name`` (a decorator without `fn`).

    Args:
        name (str): ``"namespace::name"``.
        mutates_args (Iterable[str] or "unknown"): the arguments `fn` writes in place.
        device_types (str or Sequence[str], optional): the device types `fn` serves
            (default: all).
        schema (str, optional): the schema (``"(Tensor x) -> Tensor"``); inferred from
            `fn`'s type annotations by default.
    """
    if isinstance(mutates_args, str) and mutates_args != "unknown":
        raise ValueError("mutates_args must be either a sequence of the names of the "
                         "arguments that are mutated or the string 'unknown'. ")

    def inner(fn: Callable) -> CustomOpDef:
        inferred = None if schema else infer(fn, "", "", mutates_args)
        namespace, opname = name.split("::")  # (PyTorch's unpacking error for other forms)
        if inferred is None:
            parsed = parse(f"{opname}{schema}", namespace)
        else:
            parsed = inferred
            parsed.namespace, parsed.name = namespace, opname
        result = CustomOpDef(namespace, opname, parsed, fn)
        result.register_kernel(device_types, fn)
        return result

    return inner if fn is None else inner(fn)


def _operator(op: Any) -> Operator:
    if isinstance(op, CustomOpDef):
        return op._op
    if isinstance(op, OpOverload):
        return op._op
    if isinstance(op, str):
        return lookup(op)
    if hasattr(op, "_qualified_op_name"):  # an overload packet
        return lookup(op._qualified_op_name)
    raise ValueError(f"register: expected a custom op, an OpOverload or a qualname, "
                     f"got {op!r}")


def register_fake(op: Any, fn: Callable | None = None, /, *, lib: Any = None,
                  _stacklevel: int = 1) -> Any:
    """Register the fake kernel of `op` (``"ns::name"``, a custom op or an overload)."""
    source = _caller(_stacklevel)

    def inner(fn: Callable) -> Callable:
        target = _operator(op)
        target.fake, target.fake_source = fn, source
        return fn
    return inner if fn is None else inner(fn)


def _caller(stacklevel: int) -> str:
    """``file:line`` of the code `stacklevel` frames above the caller (PyTorch's
    `get_source`: messages about a kernel name where it was registered)."""
    frame = sys._getframe(stacklevel + 1)
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


def register_vmap(op: Any, func: Callable | None = None, /, *, lib: Any = None) -> Any:
    """Register `func` as `op`'s batching rule, which ``ember.func.vmap(op)`` runs once on
    the whole batch instead of calling the op once per sample (a decorator without it).

    ``func(info, in_dims, *args, **kwargs) -> (output, out_dims)``: `info` has
    ``batch_size`` and ``randomness``; `in_dims` holds, per positional argument, the
    dimension it is batched along (None: not batched, as a non-tensor argument);
    `out_dims` says the same of the output (an int, None, or one per output)."""
    def inner(func: Callable) -> Callable:
        _operator(op).vmap = func
        return func
    return inner if func is None else inner(func)


def register_torch_dispatch(op: Any, torch_dispatch_class: Any, func: Callable | None = None,
                            /, *, lib: Any = None) -> Any:
    """PyTorch's rule for `op` under a ``__torch_dispatch__`` subclass or mode: ember has
    no dispatch below autograd for Python to enter (no ``__torch_dispatch__``), so this
    raises. ``__torch_function__`` (see `ember.overrides`) sees every call above it."""
    target = getattr(torch_dispatch_class, "__name__", torch_dispatch_class)
    raise NotImplementedError(
        f"register_torch_dispatch({op!r}, {target}): ember has no __torch_dispatch__ (no "
        "Python dispatch subclasses or modes below autograd); override __torch_function__ "
        "instead, or register a kernel with register_kernel")


def impl_abstract(qualname: Any, func: Callable | None = None, *, lib: Any = None,
                  _stacklevel: int = 1) -> Any:
    """The former name of `register_fake` (deprecated, as PyTorch's)."""
    warnings.warn("`torch.library.impl_abstract` was renamed to `torch.library.register_fake`. "
                  "Please use that instead; we will remove `torch.library.impl_abstract` in a "
                  "future version of PyTorch.", FutureWarning, stacklevel=2)
    return register_fake(qualname, func)


def register_autograd(op: Any, backward: Callable, /, *,
                      setup_context: Callable | None = None, lib: Any = None) -> None:
    """Register the autograd formula of `op` (see `CustomOpDef.register_autograd`)."""
    target = _operator(op)
    target.backward, target.setup_context = backward, setup_context


def register_kernel(op: Any, device_types: str | Iterable[str] | None,
                    func: Callable | None = None, /, *, lib: Any = None) -> Any:
    """Register `func` as `op`'s kernel for `device_types` (a decorator without it)."""
    def inner(func: Callable) -> Callable:
        target = _operator(op)
        for d in _device_types(device_types):
            target.kernels[d] = func
        return func
    return inner if func is None else inner(func)


def _impl(target: Operator, fn: Callable, dispatch_key: str) -> None:
    if fn is fallthrough_kernel:  # the key is skipped: nothing registered for it
        return
    if dispatch_key in ("", "CompositeImplicitAutograd"):
        target.implicit = fn
    elif dispatch_key.startswith("Autograd"):
        target.autograd_kernel = fn
    else:
        target.kernels[device_key(dispatch_key)] = fn


def impl(qualname: Any, types: Any, func: Callable | None = None, *, lib: Any = None) -> Any:
    """Register `func` for `types` (device types or dispatch keys) of the operator
    `qualname`; or, PyTorch's older form, ``impl(lib, name, dispatch_key)``: a decorator."""
    if isinstance(qualname, Library):
        library, name, key = qualname, types, func if isinstance(func, str) else ""
        return lambda fn: (library.impl(name, fn, key), fn)[1]

    def inner(func: Callable) -> Callable:
        target = _operator(qualname)
        for key in ([types] if isinstance(types, str) else list(types)):
            _impl(target, func, key if key[:1].isupper() else device_key(key))
        return func
    return inner if func is None else inner(func)


def define(qualname: str, schema: str, *, lib: Any = None, tags: Any = ()) -> None:
    """Define the operator ``namespace::name`` with `schema` (``"(Tensor x) -> Tensor"``)."""
    namespace, name = qualname.split("::")
    Library(namespace, "FRAGMENT").define(name + schema)


class Library:
    """PyTorch's older registration API: ``Library("mylib", "DEF")`` defines operators of
    a namespace (``"IMPL"`` adds kernels to existing ones, ``"FRAGMENT"`` both)."""

    _defined_namespaces: set[str] = set()

    def __init__(self, ns: str, kind: str, dispatch_key: str = "") -> None:
        if kind not in ("IMPL", "DEF", "FRAGMENT"):
            raise ValueError(f"Unsupported kind: {kind}")
        if kind == "DEF" and ns in Library._defined_namespaces:
            raise RuntimeError(f"Only a single TORCH_LIBRARY can be used to register the "
                               f"namespace {ns}; please put all of your definitions in a "
                               "single TORCH_LIBRARY block.  If you were trying to specify "
                               "implementations, consider using TORCH_LIBRARY_IMPL (which can "
                               "be duplicated).  If you really intended to define operators "
                               "for a single namespace in a distributed way, you can use "
                               "TORCH_LIBRARY_FRAGMENT to explicitly indicate this.")
        if kind == "DEF":
            Library._defined_namespaces.add(ns)
        self.ns, self.kind, self.dispatch_key = ns, kind, dispatch_key
        self._defined: list[str] = []

    def __repr__(self) -> str:
        return f"Library(kind={self.kind}, ns={self.ns}, dispatch_key={self.dispatch_key})>"

    def define(self, schema: str, alias_analysis: str = "", *, tags: Any = ()) -> str:
        """Define an operator of this namespace from its schema
        (``"foo(Tensor x, int n=1) -> Tensor"``); returns its name."""
        parsed = parse(schema, self.ns)
        if parsed.overload in OPERATORS.get(parsed.qualname, {}):
            raise RuntimeError(f"Tried to register an operator ({parsed}) with the same name "
                               "and overload name multiple times. Each overload's schema "
                               "should only be registered with a single call to def().")
        register(Operator(parsed))
        self._defined.append(parsed.qualname)
        return parsed.name + (f".{parsed.overload}" if parsed.overload else "")

    def impl(self, op_name: Any, fn: Callable, dispatch_key: str = "", *,
             with_keyset: bool = False) -> None:
        """Register `fn` as the kernel of `op_name` for `dispatch_key` (``"CPU"``,
        ``"CUDA"``, ``"Meta"``, ``"Autograd"``; ``""`` is CompositeImplicitAutograd)."""
        if isinstance(op_name, str):
            qualname = op_name if "::" in op_name else f"{self.ns}::{op_name}"
            target = lookup(qualname)
        else:
            target = _operator(op_name)
        _impl(target, fn, dispatch_key or self.dispatch_key)

    def _register_fake(self, op_name: str, fn: Callable, _stacklevel: int = 1) -> None:
        target = lookup(op_name if "::" in op_name else f"{self.ns}::{op_name}")
        target.fake, target.fake_source = fn, _caller(_stacklevel)

    def _destroy(self) -> None:
        for qualname in self._defined:
            OPERATORS.pop(qualname, None)
        self._defined.clear()
        Library._defined_namespaces.discard(self.ns)


from ember.library.opcheck import OpCheckError, opcheck  # noqa: E402
