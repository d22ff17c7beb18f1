"""One registered operator (`torch.ops.ns.name.default`): its schema, its kernels per
dispatch key, its fake kernel and autograd formula, and how a call runs through them.

A call goes as PyTorch's dispatcher sends it: a CompositeImplicitAutograd kernel runs as
is (autograd sees the ember ops inside it); otherwise, when a tensor argument requires
grad, an `autograd.Function` named as PyTorch's (``GeneratedBackwardFor_mylib_foo_default``)
wraps the call, with the op's `setup_context`/`backward`; below it the kernel is chosen by
the arguments' device type (``meta`` runs the fake kernel).

Recording: a custom op's kernel is opaque Python (NumPy, PIL ...), so `ember.jit.trace`
records the call as one node that calls the op again at replay (the kernel runs with the
tracer paused), and an `ember.compile` tape records it as one kernel call over the
argument buffers (replayed by running the kernel again), so results stay right in both.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from ember.core import grad_mode, tracing
from ember.core.function import Function
from ember.core.tensor import Tensor
from ember.library.fake_impl import ctx_getter, fake_kernel_ctx
from ember.library.schema import Schema, bind

# dispatch keys -> the device type whose calls they serve ("default": any device)
_KEYS = {"CPU": "cpu", "CUDA": "cuda", "Meta": "meta", "XPU": "xpu", "MPS": "mps",
         "PrivateUse1": "privateuseone", "CompositeExplicitAutograd": "default",
         "CompositeExplicitAutogradNonFunctional": "default"}
_KEY_OF = {"cpu": "CPU", "cuda": "CUDA", "meta": "Meta"}


def device_key(dispatch_key: str) -> str:
    """The device type a dispatch key (``"CPU"``) or device type (``"cpu"``) names."""
    return _KEYS.get(dispatch_key, dispatch_key.lower())


def _tensors(values: Any) -> list[Tensor]:
    out = []
    for v in values:
        if isinstance(v, Tensor):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            out.extend(t for t in v if isinstance(t, Tensor))
    return out


def _frozen(value: Any) -> Any:
    """A hashable form of a plain argument (lists and dicts become tuples)."""
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return tuple((k, _frozen(v)) for k, v in value.items())
    hash(value)
    return value


def _same_memory(a: Tensor, b: Tensor) -> bool:
    if a is b:
        return True
    if a.device.type == "meta" or a.device != b.device:
        return False
    return a._storage_owner() is b._storage_owner() or (
        a.data_ptr() - a.storage_offset() * a.element_size()
        == b.data_ptr() - b.storage_offset() * b.element_size())


class Operator:
    """A registered operator: ``schema`` and the functions serving it."""

    def __init__(self, schema: Schema, custom: bool = False) -> None:
        self.schema = schema
        self.custom = custom  # made by custom_op: its outputs may not alias its inputs
        self.kernels: dict[str, Callable] = {}  # device type or "default" -> kernel
        self.implicit: Callable | None = None  # a CompositeImplicitAutograd kernel
        self.autograd_kernel: Callable | None = None  # a kernel for the Autograd key
        self.fake: Callable | None = None
        self.fake_source = ""  # where the fake kernel was registered (file:line)
        self.vmap: Callable | None = None  # a batching rule (register_vmap)
        self.backward: Callable | None = None
        self.setup_context: Callable | None = None
        self._function: type | None = None
        self._tape_kernels: dict[tuple, Callable] = {}
        self._in_autograd_kernel = False

    # -- names ----------------------------------------------------------------------------
    @property
    def qualname(self) -> str:
        return self.schema.qualname

    @property
    def dotted(self) -> str:
        """``mylib.foo.default``, as PyTorch names the overload in messages."""
        return f"{self.schema.namespace}.{self.schema.name}.{self.schema.overload or 'default'}"

    # -- a call ---------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        positional, keywords = bind(self.schema, args, kwargs)
        if self.implicit is not None:
            return self.implicit(*positional, **keywords)
        if self.autograd_kernel is not None and not self._in_autograd_kernel:
            # (a call of the op inside its Autograd kernel goes below autograd, as PyTorch's
            # redispatch: the kernel's Function.forward calls the op again)
            self._in_autograd_kernel = True
            try:
                return self.autograd_kernel(*positional, **keywords)
            finally:
                self._in_autograd_kernel = False
        if self._in_autograd_kernel:
            return self.redispatch(positional, keywords)
        values = positional + list(keywords.values())
        if grad_mode.state.enabled and any(t.requires_grad for t in _tensors(values)):
            return self._autograd_function().apply(*values)
        return self.redispatch(positional, keywords)

    def _split(self, values: tuple) -> tuple[list, dict]:
        n = len(values) - sum(a.kwarg_only for a in self.schema.arguments)
        names = [a.name for a in self.schema.arguments[n:]]
        return list(values[:n]), dict(zip(names, values[n:]))

    def _autograd_function(self) -> type:
        if self._function is not None:
            return self._function
        op = self

        def forward(ctx: Any, *values: Any) -> Any:
            # below autograd the kernel sees plain tensors (it may call .numpy() on them)
            plain = tuple(v.detach() if isinstance(v, Tensor) else v for v in values)
            out = op.redispatch(*op._split(plain))
            if op.setup_context is not None:
                op.setup_context(ctx, values, out)
            return out

        def backward(ctx: Any, *grads: Any) -> Any:
            if op.backward is not None:
                return op.backward(ctx, *grads)
            if op.custom:
                raise RuntimeError(f"Trying to backward through {op.dotted} but no autograd "
                                   "formula was registered. Please use register_autograd to "
                                   "add one.")
            warnings.warn(f"{op.qualname}: an autograd kernel was not registered to the "
                          "Autograd key(s) but we are trying to backprop through it. This may "
                          "lead to silently incorrect behavior.", UserWarning, stacklevel=2)
            return (None,) * len(op.schema.arguments)

        name = f"GeneratedBackwardFor_{self.dotted.replace('.', '_')}"
        self._function = type(name, (Function,), {"forward": staticmethod(forward),
                                                  "backward": staticmethod(backward)})
        return self._function

    def redispatch(self, positional: list, keywords: dict) -> Any:
        """The call below autograd: recorded as one opaque call while tracing or taping."""
        tracer = tracing.active
        if tracer is not None:
            scope = tracer.enter(self.qualname, self, tuple(positional), keywords)
            try:
                with tracing.paused():
                    out = self.run_kernel(positional, keywords)
            except BaseException:
                tracer.abandon(scope)
                raise
            tracer.exit(scope, out)
            return out
        if tracing.tape is not None:
            return self._taped(positional, keywords)
        return self.run_kernel(positional, keywords)

    def _taped(self, positional: list, keywords: dict) -> Any:
        """Run the kernel and record it on the `ember.compile` tape as one kernel call over
        the tensor arguments' buffers, replayed by running the kernel again. The kernel
        recorded is the same object for the same plain arguments (`_tape_kernel`), so two
        recordings of a step agree and the step replays."""
        tape = tracing.tape
        with tracing.paused():
            out = self.run_kernel(positional, keywords)
        outs = out if isinstance(out, tuple) else (out,)
        slots = [(i, v) for i, v in enumerate(positional) if isinstance(v, Tensor)]
        kernel = None
        if not _tensors(v for v in positional + list(keywords.values())
                        if isinstance(v, (list, tuple))) \
                and not any(isinstance(v, Tensor) for v in keywords.values()) \
                and (out is None or all(isinstance(o, Tensor) for o in outs)):
            kernel = self._tape_kernel(positional, keywords, slots)
        if kernel is None:
            tape.refuse(f"it calls the custom op {self.qualname} with tensor lists, keyword "
                        "tensors, unhashable arguments or non-tensor results")
            return out
        result_buffers = None if out is None else (
            tuple(o._data for o in outs) if isinstance(out, tuple) else out._data)
        tape.call(self.qualname, kernel, tuple(v for _, v in slots), {}, result_buffers)
        for o in outs if out is not None else ():
            tape.created(o)
        return out

    def _tape_kernel(self, positional: list, keywords: dict,
                     slots: list[tuple[int, Tensor]]) -> Callable | None:
        """The kernel over buffers for these plain arguments and tensor metadata (one per
        distinct set, kept), or None when the arguments cannot be a key."""
        metas = tuple((i, v._dtype, v._device, v._backend) for i, v in slots)
        plain = [None if isinstance(v, Tensor) else v for v in positional]
        try:
            key = (metas, _frozen(plain), _frozen(keywords))
            kernel = self._tape_kernels.get(key)
        except TypeError:  # an unhashable argument
            return None
        if kernel is not None:
            return kernel

        def kernel(*buffers: Any) -> Any:
            args = list(plain)
            for (i, *meta), buf in zip(metas, buffers):
                args[i] = Tensor._make(buf, *meta)
            with tracing.paused():
                result = self.run_kernel(args, dict(keywords))
            if result is None:
                return None
            return tuple(r._data for r in result) if isinstance(result, tuple) \
                else result._data

        if len(self._tape_kernels) < 64:
            self._tape_kernels[key] = kernel
        return kernel

    def run_kernel(self, positional: list, keywords: dict) -> Any:
        """Run the kernel of the arguments' device type (the fake kernel on ``meta``)."""
        tensors = _tensors(positional + list(keywords.values()))
        device_type = tensors[0].device.type if tensors else "cpu"
        if device_type == "meta":
            kernel = self.fake or self.kernels.get("meta")
            if kernel is None and not self.schema.returns:
                return None  # (an op returning nothing needs no fake kernel, as PyTorch's)
            if kernel is None and self.custom:
                raise RuntimeError(
                    f"There was no fake impl registered for <CustomOpDef({self.qualname})>. "
                    "This is necessary for torch.compile/export/fx tracing to work. Please use "
                    f"`{self.schema.name}.register_fake` to add an fake impl.")
        else:
            kernel = self.kernels.get(device_type) or self.kernels.get("default")
        if kernel is None:
            key = _KEY_OF.get(device_type, device_type)
            raise NotImplementedError(
                f"Could not run '{self.qualname}' with arguments from the '{key}' backend. "
                "This could be because the operator doesn't exist for this backend, or was "
                "omitted during the selective/custom build process (if using custom build). "
                f"'{self.qualname}' is only available for these backends: "
                f"[{', '.join(_KEY_OF.get(k, k) for k in self.kernels)}].")
        if device_type == "meta" and kernel is self.fake:
            with ctx_getter(fake_kernel_ctx(self.qualname, self.dotted, self.fake_source)):
                return kernel(*positional, **keywords)
        out = kernel(*positional, **keywords)
        if self.custom and device_type != "meta":
            self._check_aliasing(tensors, out, kernel)
        return out

    def _check_aliasing(self, inputs: list[Tensor], out: Any, kernel: Callable) -> None:
        outs = [o for o in (out if isinstance(out, (tuple, list)) else (out,))
                if isinstance(o, Tensor)]
        for i, o in enumerate(outs):
            if any(_same_memory(o, t) for t in inputs + outs[:i]):
                raise RuntimeError(
                    f"{self.schema.name} (with implementation in {kernel.__module__!r}): The "
                    "output of this custom operator (1) must not also be an input to this "
                    "custom operator and (2) may not alias any inputs to this custom operator "
                    "or other returns. The most common way to trigger this error is if we "
                    "have y = custom_op(x) and y and x are the same Tensor. Please instead "
                    "return a clone of the offending output tensor(s) (e.g. return x.clone()) "
                    "or refactor the custom operator to not return y.")
