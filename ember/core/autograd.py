"""Reverse-mode automatic differentiation.

Every differentiable op that sees an input requiring grad records a `Node`: the function
that maps the gradient of its output to gradients of its inputs, the tensors it saved for
that, and edges to the nodes that produced its inputs. Leaves get an `AccumulateGrad`
node that adds into `.grad`. Backward formulas are written with ember ops, so gradients
run on the forward's device and `create_graph=True` records them too (higher orders).

The engine walks the graph without recursion: it counts each node's consumers, then runs
nodes in dependency order, summing gradients that meet at a node.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

# -- grad modes -----------------------------------------------------------------------


class _GradState(threading.local):
    enabled = True
    inference = False


_state = _GradState()


def is_grad_enabled() -> bool:
    return _state.enabled


def is_inference_mode_enabled() -> bool:
    return _state.inference


class _GradMode(contextlib.ContextDecorator):
    _target: bool = True

    def __enter__(self):
        self._prev = (_state.enabled, _state.inference)
        _state.enabled = self._target
        return self

    def __exit__(self, *exc):
        _state.enabled, _state.inference = self._prev
        return False


class no_grad(_GradMode):  # noqa: N801 - PyTorch's spelling
    """Context manager and decorator that disables gradient recording."""

    _target = False


class enable_grad(_GradMode):  # noqa: N801
    """Context manager and decorator that enables gradient recording."""

    _target = True


class set_grad_enabled(_GradMode):  # noqa: N801
    """Enable or disable gradient recording, as a function, context manager or decorator."""

    def __init__(self, mode: bool) -> None:
        self._target = bool(mode)
        self._prev = (_state.enabled, _state.inference)
        _state.enabled = self._target  # works as a plain function call too

    def __enter__(self):
        return self


class inference_mode(_GradMode):  # noqa: N801
    """Like `no_grad`, and tensors made inside are marked as inference tensors."""

    def __init__(self, mode: bool = True) -> None:
        self._mode = bool(mode)

    def __enter__(self):
        self._prev = (_state.enabled, _state.inference)
        if self._mode:
            _state.enabled, _state.inference = False, True
        return self


# -- graph nodes ----------------------------------------------------------------------

FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward.")


class SavedTensor:
    """A tensor kept for backward, with the version it had when saved."""

    __slots__ = ("tensor", "version", "output_of")

    def __init__(self, tensor: Any, output_of: Node | None = None) -> None:
        self.tensor = tensor
        self.version = tensor._vc[0]
        self.output_of = output_of

    def unpack(self, node: Node) -> Any:
        t = self.tensor
        if t._vc[0] != self.version:
            where = (f", which is output 0 of {t._node.name()}," if t._node is not None
                     else "")
            raise RuntimeError(
                f"one of the variables needed for gradient computation has been modified by "
                f"an inplace operation: [{t.type_name()} {list(t.shape)}]{where} is at version "
                f"{t._vc[0]}; expected version {self.version} instead (needed by "
                f"{node.name()}).")
        return t


class Node:
    """A recorded operation: maps output gradients to input gradients."""

    __slots__ = ("next_edges", "_saved", "_freed", "pre_hooks", "retain", "attrs",
                 "needs", "__weakref__")

    def __init__(self, next_edges: tuple, saved: Sequence[Any] = (), **attrs: Any) -> None:
        self.next_edges = next_edges  # per input: (Node, output_nr) or None
        self.needs = tuple(e is not None for e in next_edges)
        self._saved = tuple(SavedTensor(t) for t in saved) if saved else ()
        self._freed = False
        self.pre_hooks: dict[int, list[Callable]] | None = None  # output_nr -> tensor hooks
        self.retain: dict[int, Any] | None = None  # output_nr -> tensor retaining .grad
        self.attrs = attrs

    def name(self) -> str:
        return type(self).__name__

    @property
    def saved_tensors(self) -> tuple:
        if self._freed:
            raise RuntimeError(FREED_MESSAGE)
        return tuple(s.unpack(self) for s in self._saved)

    @property
    def next_functions(self) -> tuple:
        return tuple((e[0], e[1]) if e is not None else (None, 0) for e in self.next_edges)

    def apply(self, grads: list) -> Sequence[Any]:
        raise NotImplementedError

    def release(self) -> None:
        if self._saved:
            self._saved = ()
            self._freed = True

    def register_hook(self, hook: Callable) -> None:
        """Called as hook(grad_inputs, grad_outputs) after this node runs (module hooks)."""
        self.attrs.setdefault("_post_hooks", []).append(hook)

    def __repr__(self) -> str:
        return f"<{self.name()} object at {id(self):#x}>"


class FnNode(Node):
    """A node whose backward is a plain function `fn(node, grad) -> tuple of grads`."""

    __slots__ = ("fn", "label", "n_outputs")

    def __init__(self, label: str, fn: Callable, next_edges: tuple, saved=(), n_outputs=1,
                 **attrs: Any) -> None:
        super().__init__(next_edges, saved, **attrs)
        self.fn = fn
        self.label = label
        self.n_outputs = n_outputs

    def name(self) -> str:
        return self.label

    def apply(self, grads):
        # a node that saved tensors raises through `saved_tensors` once freed
        g = grads[0] if self.n_outputs == 1 else grads
        out = self.fn(self, g)
        return out if isinstance(out, tuple) else (out,)


class AccumulateGrad(Node):
    """The node of a leaf tensor: adds the incoming gradient into `.grad`."""

    __slots__ = ("variable",)

    def __init__(self, variable: Any) -> None:
        super().__init__(())
        self.variable = variable

    def apply(self, grads):
        return ()


def edge_of(t: Any) -> tuple | None:
    """The graph edge a tensor contributes as an op input, or None if it needs no grad."""
    if not t._requires_grad:
        return None
    node = t._node
    if node is not None:
        return (node, t._output_nr)
    acc = t._grad_acc
    if acc is None:
        acc = t._grad_acc = AccumulateGrad(t)
    return (acc, 0)


def record(label: str, fn: Callable, inputs: Sequence[Any], outputs: Any,
           saved: Sequence[Any] = (), **attrs: Any) -> None:
    """Attach a backward node to `outputs` (a tensor or a sequence) if any input needs it.

    `inputs` are the op's differentiable operands (non-tensors are skipped).
    """
    if not _state.enabled:
        return None
    edges = tuple(edge_of(t) if getattr(t, "_requires_grad", False) else None
                  for t in inputs)
    if not any(edges):
        return None
    if isinstance(outputs, (tuple, list)):
        node = FnNode(label, fn, edges, saved, n_outputs=len(outputs), **attrs)
        node.attrs["_out_meta"] = [None if o is None else (tuple(o.shape), o.dtype, o.device)
                                   for o in outputs]
        for i, o in enumerate(outputs):
            if o is not None and o._dtype.is_floating_point:
                o._node, o._output_nr, o._requires_grad = node, i, True
        return node
    node = FnNode(label, fn, edges, saved, **attrs)
    if outputs._dtype.is_floating_point:
        outputs._node = node
        outputs._requires_grad = True
    return node


# -- the engine -----------------------------------------------------------------------


def _collect(roots: Iterable[Node]) -> dict[Node, int]:
    """Count, for every node reachable from `roots`, how many edges lead into it."""
    deps: dict[Node, int] = {}
    stack = [r for r in roots]
    seen = set(stack)
    while stack:
        node = stack.pop()
        for edge in node.next_edges:
            if edge is None:
                continue
            nxt = edge[0]
            deps[nxt] = deps.get(nxt, 0) + 1
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return deps


def run_backward(tensors: Sequence[Any], grad_tensors: Sequence[Any], retain_graph: bool,
                 create_graph: bool, capture: Sequence[Any] | None = None,
                 accumulate: bool = True) -> list[Any] | None:
    """Run the graph backward from `tensors` seeded with `grad_tensors`.

    With `capture` (autograd.grad), returns the gradients reaching those tensors and
    leaves `.grad` untouched when `accumulate` is False.
    """
    from ember.core import functions as F  # the engine adds gradients with ember ops

    buffers: dict[Node, list] = {}
    roots = []
    for t, g in zip(tensors, grad_tensors):
        edge = edge_of(t)
        if edge is None:
            raise RuntimeError("element 0 of tensors does not require grad and does not have "
                               "a grad_fn")
        node, nr = edge
        _add_grad(buffers, node, nr, g, F)
        roots.append(node)

    captured: dict[tuple[Node, int], Any] = {}
    wanted: dict[tuple[Node, int], int] = {}
    if capture is not None:
        for i, t in enumerate(capture):
            edge = edge_of(t)
            if edge is None:
                raise RuntimeError(f"One of the differentiated Tensors (input {i}) does not "
                                   "require grad")
            wanted[edge] = i

    deps = _collect(set(roots))
    ready = [n for n in dict.fromkeys(roots) if deps.get(n, 0) == 0]
    prev = _state.enabled
    _state.enabled = create_graph
    try:
        while ready:
            node = ready.pop()
            grads = buffers.pop(node, None) or []
            _run_pre_hooks(node, grads)
            for key in [k for k in wanted if k[0] is node]:
                captured[key] = grads[key[1]] if key[1] < len(grads) else None
            if isinstance(node, AccumulateGrad):
                if accumulate and grads and grads[0] is not None:
                    _accumulate(node.variable, grads[0], create_graph, F)
                continue
            results = node.apply(_fill_missing(node, grads, F))
            post = node.attrs.get("_post_hooks")
            if post:
                for hook in post:
                    hook(tuple(results), tuple(grads))
            if not retain_graph:
                node.release()
            for edge, g in zip(node.next_edges, results):
                if edge is None:
                    continue
                nxt, nr = edge
                if g is not None:
                    _add_grad(buffers, nxt, nr, g, F)
            results = g = None  # only the buffers may hold gradients (see _accumulate)
            for edge in node.next_edges:
                if edge is None:
                    continue
                nxt = edge[0]
                deps[nxt] -= 1
                if deps[nxt] == 0:
                    ready.append(nxt)
    finally:
        _state.enabled = prev
    if capture is None:
        return None
    return [captured.get(edge_of(t)) for t in capture]


def _add_grad(buffers: dict, node: Node, nr: int, g: Any, F) -> None:
    slots = buffers.get(node)
    if slots is None:
        n = getattr(node, "n_outputs", 1)
        slots = buffers[node] = [None] * max(n, nr + 1)
    if nr >= len(slots):
        slots.extend([None] * (nr + 1 - len(slots)))
    slots[nr] = g if slots[nr] is None else F.add(slots[nr], g)


def _fill_missing(node: Node, grads: list, F) -> list:
    n = getattr(node, "n_outputs", 1)
    if len(grads) < n:
        grads = list(grads) + [None] * (n - len(grads))
    if any(g is None for g in grads):
        shapes = node.attrs.get("_out_meta")
        if shapes is not None:  # multi-output nodes: unused outputs get zero gradients
            grads = [F.zeros_meta(m) if g is None else g for g, m in zip(grads, shapes)]
    return grads


def _run_pre_hooks(node: Node, grads: list) -> None:
    if node.pre_hooks:
        for nr, hooks in node.pre_hooks.items():
            for hook in hooks:
                if nr < len(grads) and grads[nr] is not None:
                    new = hook(grads[nr])
                    if new is not None:
                        grads[nr] = new
    if node.retain:
        for nr, t in node.retain.items():
            if nr < len(grads) and grads[nr] is not None:
                g = grads[nr] if _state.enabled else grads[nr].detach()
                t.grad = g if t.grad is None else t.grad + g


# references to a gradient tensor inside _accumulate when nothing else holds it: the
# engine's list of the node's gradients, the argument, and getrefcount's own argument
_STEAL_REFS = 3
# references to its buffer when only that tensor holds it: its slot and getrefcount's
# argument (a backward that returns one buffer for two inputs wraps it twice)
_STEAL_BUFFER_REFS = 2


def _accumulate(t: Any, g: Any, create_graph: bool, F) -> None:
    for hook in t._hooks or ():
        new = hook(g)
        if new is not None:
            g = new
    if g.shape != t.shape:
        g = F.sum_to_shape(g, t.shape)
    # .grad must own its buffer: a later in-place `+=` must touch nothing else. A fresh
    # gradient that no other tensor object holds (e.g. add's backward passes one gradient
    # to both inputs), whose buffer no other tensor wraps, and that owns its memory is kept
    # as is (as PyTorch's AccumulateGrad does); a shared one, or a view, is copied.
    # (Counted before detach, which makes another tensor on the same buffer.)
    unshared = sys.getrefcount(g) <= _STEAL_REFS and \
        sys.getrefcount(g._data) <= _STEAL_BUFFER_REFS and g._backend.owns(g._data)
    if not create_graph:
        g = g.detach()
    if t.grad is None:
        if create_graph or unshared:
            t.grad = g
        else:
            t.grad = g.clone()
    elif create_graph:
        t.grad = t.grad + g
    else:
        with no_grad():
            t.grad.add_(g)


def backward(tensors: Any, grad_tensors: Any = None, retain_graph: bool | None = None,
             create_graph: bool = False, inputs: Sequence[Any] | None = None) -> None:
    """Compute gradients of `tensors` with respect to graph leaves (into their `.grad`)."""
    from ember.core import functions as F

    tensors = [tensors] if hasattr(tensors, "_requires_grad") else list(tensors)
    if grad_tensors is None:
        grad_tensors = [None] * len(tensors)
    elif hasattr(grad_tensors, "_requires_grad"):
        grad_tensors = [grad_tensors]
    seeds = [_seed(t, g, F) for t, g in zip(tensors, grad_tensors)]
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is not None:
        inputs = [inputs] if hasattr(inputs, "_requires_grad") else list(inputs)
        grads = run_backward(tensors, seeds, retain_graph, create_graph, capture=inputs,
                             accumulate=False)
        for t, g in zip(inputs, grads):
            if g is not None:
                _accumulate(t, g, create_graph, F)
        return
    run_backward(tensors, seeds, retain_graph, create_graph)


def _seed(t: Any, g: Any, F) -> Any:
    if g is None:
        if t.numel() != 1:
            raise RuntimeError(f"grad can be implicitly created only for scalar outputs "
                               f"(got a tensor of shape {list(t.shape)}); pass `gradient=` to "
                               f"backward()")
        return F.ones_like(t)
    if not hasattr(g, "_requires_grad"):
        g = F.tensor(g, dtype=t.dtype, device=t.device)
    if g.shape != t.shape:
        raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of {list(g.shape)} "
                           f"and output[0] has a shape of {list(t.shape)}.")
    return g


def grad(outputs: Any, inputs: Any, grad_outputs: Any = None,
         retain_graph: bool | None = None, create_graph: bool = False,
         allow_unused: bool | None = None, materialize_grads: bool = False) -> tuple:
    """Compute and return the gradients of `outputs` with respect to `inputs`.

    Unlike `backward`, leaves' `.grad` is not changed. With `create_graph=True` the
    returned gradients are themselves differentiable (second derivatives).
    """
    from ember.core import functions as F

    outputs = [outputs] if hasattr(outputs, "_requires_grad") else list(outputs)
    single = hasattr(inputs, "_requires_grad")
    inputs = [inputs] if single else list(inputs)
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    elif hasattr(grad_outputs, "_requires_grad"):
        grad_outputs = [grad_outputs]
    seeds = [_seed(t, g, F) for t, g in zip(outputs, grad_outputs)]
    if retain_graph is None:
        retain_graph = create_graph
    grads = run_backward(outputs, seeds, retain_graph, create_graph, capture=inputs,
                         accumulate=False)
    result = []
    for i, (t, g) in enumerate(zip(inputs, grads)):
        if g is None:
            if materialize_grads:
                g = F.zeros_like(t)
            elif not allow_unused:
                raise RuntimeError(f"One of the differentiated Tensors (input {i}) appears to "
                                   "not have been used in the graph. Set allow_unused=True if "
                                   "this is the desired behavior.")
        elif g.shape != t.shape:
            g = F.sum_to_shape(g, t.shape)
        result.append(g)
    return tuple(result)


# -- custom functions -----------------------------------------------------------------


class FunctionCtx:
    """The `ctx` of a custom `Function`: what forward leaves for backward."""

    def __init__(self) -> None:
        self.needs_input_grad: tuple[bool, ...] = ()
        self._to_save: tuple = ()
        self._node: Node | None = None
        self.materialize_grads = True
        self._non_differentiable: set[int] = set()
        self._dirty: tuple = ()

    def save_for_backward(self, *tensors: Any) -> None:
        self._to_save = tensors

    @property
    def saved_tensors(self) -> tuple:
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


class _CustomNode(Node):
    __slots__ = ("fn_cls", "ctx", "n_outputs", "out_meta")

    def name(self) -> str:
        return f"{self.fn_cls.__name__}Backward"

    def apply(self, grads):
        if self._freed:
            raise RuntimeError(FREED_MESSAGE)
        from ember.core import functions as F

        if self.ctx.materialize_grads:
            grads = [F.zeros_meta(m) if g is None else g for g, m in zip(grads, self.out_meta)]
        out = self.fn_cls.backward(self.ctx, *grads)
        out = out if isinstance(out, tuple) else (out,)
        n = len(self.next_edges)
        if len(out) < n:
            raise RuntimeError(f"function {self.fn_cls.__name__}Backward returned an incorrect "
                               f"number of gradients (expected {n}, got {len(out)})")
        return out[:n]


class Function:
    """Base class of user-defined differentiable operations, as in PyTorch.

    Subclasses define `forward(ctx, *args)` and `backward(ctx, *grad_outputs)` as static
    methods and are called through `MyFunction.apply(*args)`.
    """

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    @staticmethod
    def backward(ctx: FunctionCtx, *grad_outputs: Any) -> Any:
        raise NotImplementedError

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        ctx = FunctionCtx()
        tensor_args = [a if hasattr(a, "_requires_grad") else None for a in args]
        ctx.needs_input_grad = tuple(a is not None and a._requires_grad for a in tensor_args)
        with no_grad():
            out = cls.forward(ctx, *args, **kwargs)
        outs = out if isinstance(out, tuple) else (out,)
        if not (_state.enabled and any(ctx.needs_input_grad)):
            return out
        edges = tuple(None if a is None else edge_of(a) for a in tensor_args)
        node = _CustomNode(edges)
        node.fn_cls, node.ctx = cls, ctx
        node.n_outputs = len(outs)
        node.out_meta = [(o.shape, o.dtype, o.device) for o in outs]
        node._saved = tuple(None if t is None else SavedTensor(t) for t in ctx._to_save)
        ctx._node = node
        results = []
        for i, o in enumerate(outs):
            if hasattr(o, "_requires_grad") and id(o) not in ctx._non_differentiable \
                    and o.dtype.is_floating_point:
                if any(o is a for a in args):  # returned an input: give it a fresh identity
                    o = o.view_as(o)
                o._node, o._output_nr, o._requires_grad = node, i, True
            results.append(o)
        return tuple(results) if isinstance(out, tuple) else results[0]
