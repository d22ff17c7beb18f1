"""Custom differentiable operations: `ember.autograd.Function`, as in PyTorch.

Subclasses define `forward(ctx, *args)` and `backward(ctx, *grad_outputs)` as static
methods and are called through `MyFunction.apply(*args)`; or `forward(*args)` with
`setup_context(ctx, inputs, output)`, the style PyTorch's function transforms need.
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any

from ember.core import forward_ad as fw
from ember.core.creation import vmap_randomness
from ember.core.engine import zeros_for_missing
from ember.core.grad_mode import no_grad, state
from ember.core.graph import FREED_MESSAGE, Node, SavedTensor, edge_of, is_tensor

# PyTorch's refusal of a Function in the forward(ctx, ...) style under vmap
_TRANSFORMS_NEED_SETUP_CONTEXT = (
    "In order to use an autograd.Function with functorch transforms (vmap, grad, jvp, "
    "jacrev, ...), it must override the setup_context staticmethod. For more details, "
    "please see https://pytorch.org/docs/main/notes/extending.func.html")


func_transforms: list[str] = []
"""The torch.func transforms (grad, vjp, jvp, jacrev, jacfwd) whose function is running,
innermost last: PyTorch's functorch levels (vmap has `vmap_randomness`)."""


def _refused_by_transforms(cls: type) -> bool:
    """Whether a transform refuses `cls` as PyTorch does: a user's Function in the
    forward(ctx, ...) style (ember's own Functions are per-sample, so transform-safe)."""
    return bool(vmap_randomness or func_transforms) and \
        cls.setup_context is Function.setup_context and not cls.__module__.startswith("ember.")


class FunctionCtx:
    """The `ctx` of a custom `Function`: what forward leaves for backward."""

    def __init__(self) -> None:
        self.needs_input_grad: tuple[bool, ...] = ()
        self._to_save: tuple = ()
        self._node: Node | None = None
        self.materialize_grads = True
        self._non_differentiable: set[int] = set()
        self._dirty: tuple = ()
        self._for_forward: tuple | None = None

    def save_for_backward(self, *tensors: Any) -> None:
        for i, t in enumerate(tensors):
            if t is not None and not is_tensor(t):
                raise TypeError(f"save_for_backward can only save variables, but argument {i} "
                                f"is of type {type(t).__name__}")
        self._to_save = tensors

    def save_for_forward(self, *tensors: Any) -> None:
        """Save `tensors` for the Function's `jvp`, which reads them as `saved_tensors`."""
        for t in tensors:
            if t is not None and not is_tensor(t):
                raise AssertionError("save_for_forward expects all arguments to be tensors; "
                                     "you should save non-tensors as attributes on ctx.")
        self._for_forward = tensors

    @property
    def saved_tensors(self) -> tuple:
        if self._for_forward is not None:  # inside `jvp`, as PyTorch's
            return tuple(self._for_forward)
        if self._node is None:
            return tuple(self._to_save)
        if self._node._freed:
            raise RuntimeError(FREED_MESSAGE)
        return tuple(None if s is None else s.unpack(self._node) for s in self._node._saved)

    def mark_non_differentiable(self, *tensors: Any) -> None:
        self._non_differentiable.update(id(t) for t in tensors)

    def mark_dirty(self, *tensors: Any) -> None:
        self._dirty = tensors

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = value


class BackwardCFunction(Node):
    """The node of a custom Function (PyTorch's name for the class of its nodes). As in
    PyTorch, where the node is the `ctx` the forward saw, the ctx's attributes read
    through it: `grad_fn.needs_input_grad`, a value the forward kept (`grad_fn.alpha`)."""

    __slots__ = ("fn_cls", "ctx", "n_outputs", "out_meta", "in_meta")

    def __getattr__(self, attr: str) -> Any:
        try:
            ctx = object.__getattribute__(self, "ctx")
        except AttributeError:
            ctx = None
        if ctx is None or attr.startswith("__"):
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{attr}'")
        try:
            return getattr(ctx, attr)
        except AttributeError:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute "
                                 f"'{attr}'") from None

    def name(self) -> str:
        return f"{self.fn_cls.__name__}Backward"

    def __call__(self, *grads: Any) -> Any:  # (PyTorch's Python nodes are not callable)
        raise TypeError(f"'{type(self).__name__}' object is not callable")

    def apply(self, grads):
        if self._freed:
            raise RuntimeError(FREED_MESSAGE)
        if self.ctx.materialize_grads and any(g is None for g in grads):
            grads = zeros_for_missing(grads, self.out_meta)
        out = self.fn_cls._backward_fn()(self.ctx, *grads)
        out = out if isinstance(out, tuple) else (out,)
        n = len(self.next_edges)
        if len(out) > n and all(g is None for g in out[n:]):
            out = out[:n]  # (PyTorch drops extra trailing Nones)
        if len(out) != n:
            raise RuntimeError(f"function {self.fn_cls.__name__}Backward returned an incorrect "
                               f"number of gradients (expected {n}, got {len(out)})")
        return tuple(self._validate(i, g) for i, g in enumerate(out))

    def release(self) -> None:
        """After a backward that does not retain the graph: the saved tensors go, and so
        do the ctx attributes the Function listed in `ctx._release_with_graph` (state that
        is not tensors, which backward needs again only while the graph is retained)."""
        super().release()
        for name in getattr(self.ctx, "_release_with_graph", ()):
            setattr(self.ctx, name, None)

    def _validate(self, i: int, g: Any) -> Any:
        """PyTorch's check of a returned gradient: summed to its input's shape where it
        broadcast, cast to its input's dtype (a float32 gradient of a bfloat16 input)."""
        if g is not None and not is_tensor(g):
            raise RuntimeError(f"expected Variable or None (got {type(g).__name__})")
        meta = self.in_meta[i]
        if g is None or meta is None:
            return g
        shape, dtype = meta
        if tuple(g.shape) != shape:
            try:
                g = g.sum_to_size(shape)
            except RuntimeError:
                raise RuntimeError(f"Function {self.name()} returned an invalid gradient at "
                                   f"index {i} - got {list(g.shape)} but expected shape "
                                   f"compatible with {list(shape)}") from None
        return g if g.dtype is dtype else g.to(dtype)


_NO_BACKWARD = ("You must implement either the backward or vjp method for your custom "
                "autograd.Function to use it with backward mode AD.")


class Function:
    """Base class of user-defined differentiable operations, as in PyTorch.

    Subclasses define `forward(ctx, *args)` and `backward(ctx, *grad_outputs)` (or `vjp`)
    as static methods and are called through `MyFunction.apply(*args)`. A subclass that
    also defines `setup_context(ctx, inputs, output)` writes `forward(*args)` without the
    ctx: `setup_context` then saves what backward needs.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        warnings.warn(f"{self.__class__} should not be instantiated. Methods on autograd "
                      "functions are all static, so you should invoke them on the class "
                      "itself. Instantiating an autograd function will raise an error in a "
                      "future version of PyTorch.", DeprecationWarning, stacklevel=2)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("Legacy autograd function with non-static forward method is "
                           "deprecated. Please use new-style autograd function with static "
                           "forward method. (Example: https://pytorch.org/docs/stable/"
                           "autograd.html#torch.autograd.Function)")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # each Function has its own node class, `<Name>Backward`, as PyTorch's metaclass
        # makes it (programs print `type(y.grad_fn).__name__` and check `_backward_cls`)
        super().__init_subclass__(**kwargs)
        cls._backward_cls = type(f"{cls.__name__}Backward", (BackwardCFunction,),
                                 {"__slots__": (), "_forward_cls": cls,
                                  "__module__": BackwardCFunction.__module__})

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def setup_context(ctx: FunctionCtx, inputs: tuple, output: Any) -> None:
        """Save what backward needs, given the inputs and output of a ctx-less forward."""
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx: FunctionCtx, *grad_outputs: Any) -> Any:
        raise NotImplementedError(_NO_BACKWARD)

    @staticmethod
    def vjp(ctx: FunctionCtx, *grad_outputs: Any) -> Any:
        """Another name of `backward` (a subclass defines one of the two)."""
        raise NotImplementedError(_NO_BACKWARD)

    @classmethod
    def _backward_fn(cls) -> Any:
        """The subclass's `backward`, or its `vjp` (never both, as PyTorch requires)."""
        own_vjp = cls.vjp is not Function.vjp
        if own_vjp and cls.backward is not Function.backward:
            raise RuntimeError("Implementing both 'backward' and 'vjp' for a custom Function "
                               "is not allowed. You should only implement one of them.")
        return cls.vjp if own_vjp else cls.backward

    @classmethod
    def _forward(cls, ctx: FunctionCtx, args: tuple, kwargs: dict) -> Any:
        """`forward` of the inputs: given `ctx`, or without it followed by
        `setup_context(ctx, inputs, output)`."""
        if cls.setup_context is Function.setup_context:
            return cls.forward(ctx, *args, **kwargs)
        out = cls.forward(*args, **kwargs)
        cls.setup_context(ctx, args, out)
        return out

    @staticmethod
    def jvp(ctx: FunctionCtx, *grad_inputs: Any) -> Any:
        """The tangents of the outputs given those of the inputs (forward-mode AD)."""
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        if _refused_by_transforms(cls):
            raise RuntimeError(_TRANSFORMS_NEED_SETUP_CONTEXT)
        if cls.setup_context is not Function.setup_context:
            # setup_context sees every input, the defaults of those not given included
            bound = inspect.signature(cls.forward).bind(*args, **kwargs)
            bound.apply_defaults()
            args, kwargs = bound.args, bound.kwargs
        ctx = FunctionCtx()
        tensor_args = [a if is_tensor(a) else None for a in args]
        ctx.needs_input_grad = tuple(a is not None and a._requires_grad for a in tensor_args)
        tangents = fw.tangents_of(args) if fw.active else None
        if tangents is not None:  # the forward sees plain tensors; `jvp` gives the tangents
            with fw.suspended(), no_grad():
                out = cls._forward(ctx, args, kwargs)
                _set_output_tangents(out, cls.jvp(ctx, *tangents))
            ctx._for_forward = None  # (backward reads what save_for_backward saved)
        else:
            with no_grad():
                out = cls._forward(ctx, args, kwargs)
        outs = out if isinstance(out, tuple) else (out,)
        if not (state.enabled and any(ctx.needs_input_grad)):
            return out
        for t in ctx._dirty:  # (an input the forward modified in place)
            if is_tensor(t) and t._requires_grad and t._node is None:
                raise RuntimeError("a leaf Variable that requires grad has been used in an "
                                   "in-place operation.")
        edges = tuple(None if a is None else edge_of(a) for a in tensor_args)
        node = cls._backward_cls(edges)
        node.fn_cls, node.ctx = cls, ctx
        node.n_outputs = len(outs)
        node.out_meta = [(o.shape, o.dtype, o.device) if is_tensor(o) else None for o in outs]
        node.in_meta = [None if a is None else (tuple(a.shape), a.dtype) for a in tensor_args]
        ctx._node = node
        results = []
        linked = {}  # id of each output linked to the node: its output number
        for i, o in enumerate(outs):
            if is_tensor(o) and id(o) not in ctx._non_differentiable \
                    and o.dtype._differentiable:
                if any(o is a for a in args):
                    if any(o is d for d in ctx._dirty) and o._base is None:
                        # an input modified in place: it is the output, its history now
                        # this node (PyTorch's rebase_history)
                        linked[id(o)] = i
                    else:  # returned as it was: a view of it, a fresh identity
                        o = o.view_as(o)
                else:
                    linked[id(o)] = i
                o._node, o._output_nr, o._requires_grad = node, i, True
            results.append(o)
        # a saved output is kept unlinked from the node (no reference cycle: SavedTensor)
        node._saved = tuple(None if t is None else SavedTensor(t, linked.get(id(t)))
                            for t in ctx._to_save)
        ctx._to_save = ()  # (read through the node from now on)
        return tuple(results) if isinstance(out, tuple) else results[0]


def _set_output_tangents(out: Any, tangents: Any) -> None:
    outs = out if isinstance(out, tuple) else (out,)
    tangents = tangents if isinstance(tangents, tuple) else (tangents,)
    if len(tangents) != len(outs):
        raise RuntimeError(f"Function's jvp returned an invalid number of forward gradients "
                           f"(expected {len(outs)} but got {len(tangents)})")
    for o, t in zip(outs, tangents):
        if is_tensor(o) and t is not None:
            fw.set_tangent(o, t)


def as_kernel(name: str, n_inputs: int) -> Any:
    """A class decorator: the Function records the node of the PyTorch kernel it
    implements, named `name` (`type(grad_fn).__name__` and `grad_fn.name()`), with edges
    to its first `n_inputs` arguments only (the rest are settings, not graph inputs)."""

    def decorate(cls: type[Function]) -> type[Function]:
        base = cls._backward_cls

        def __init__(self: Node, next_edges: tuple) -> None:
            base.__init__(self, next_edges[:n_inputs])

        cls._backward_cls = type(name, (base,), {
            "__slots__": (), "__init__": __init__, "name": lambda self: name,
            "__module__": base.__module__})
        return cls
    return decorate
