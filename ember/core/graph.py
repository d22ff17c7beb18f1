"""The autograd graph: nodes, the tensors they save, and the edges between them.

Every differentiable op that sees an input requiring grad records a `Node`: the function
that maps the gradient of its output to gradients of its inputs, the tensors it saved for
that, and edges to the nodes that produced its inputs. Leaves get an `AccumulateGrad`
node that adds into `.grad` (see engine.py). This module only builds the graph; it works
on any object with Tensor's autograd fields, so it needs no import of the Tensor class.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from ember.core import anomaly_mode, dtype, tracing
from ember.core import forward_ad as fw
from ember.core.grad_mode import InferenceVersion, state
from ember.core.hooks import RemovableHandle

FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward.")
# (`register_hooks` on a released saved tensor)
FREED_SAVED_MESSAGE = (
    "Calling register_hooks on a saved tensor after it has been freed. Saved intermediate "
    "values of the graph are freed when you call .backward() or autograd.grad(). Specify "
    "retain_graph=True if you need to backward through the graph a second time or if you "
    "need to access saved variables after calling backward.")


INFERENCE_SAVED_MESSAGE = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in "
    "inference mode in computation tracked by autograd. To work around this, you can make a "
    "clone to get a normal tensor and use it in autograd, or use `torch.no_grad()` instead "
    "of `torch.inference_mode()`.")
"""PyTorch's error (its words, `torch.` included) when a recorded op would keep an
inference tensor (one made inside `inference_mode`) for its backward."""

saves_seen: list[SavedTensor] | None = None
"""While not None, every tensor saved for backward is also listed here (an in-place op
watches what its computation saved: see ember.core.inplace)."""


saved_tensors_hooks: list[tuple[Callable, Callable]] = []
"""The (pack, unpack) pairs of the `autograd.graph.saved_tensors_hooks` contexts entered,
innermost last: a tensor saved for backward is kept as `pack(tensor)` and read back as
`unpack(packed)`."""


class SavedTensor:
    """A tensor kept for backward, with the version it had when saved (or what the
    innermost saved-tensors pack hook made of it, read back through its unpack hook).

    A node's own output (`output_nr` given) is kept without its link to the node, as
    PyTorch's SavedVariable keeps one: output -> node -> saved output would be a reference
    cycle, and an output dropped without a backward (a forward under grad mode whose
    result is thrown away) would then hold its memory until Python's cycle collector ran.
    Read back in a backward that records a graph, it is linked to the node again."""

    __slots__ = ("tensor", "version", "packed", "unpack_hook", "creator", "edge",
                 "output_nr")

    def __init__(self, tensor: Any, output_nr: int | None = None) -> None:
        vc = tensor._vc
        # (an inference tensor's counter is an InferenceVersion: the mark costs no lookup
        # beyond the counter read here anyway; ops not recorded never come here)
        if type(vc) is InferenceVersion:
            raise RuntimeError(INFERENCE_SAVED_MESSAGE)
        self.version = vc[0]
        self.output_nr = output_nr
        if saved_tensors_hooks:
            pack, self.unpack_hook = saved_tensors_hooks[-1]
            # the graph position of what was saved: the unpacked tensor takes it back, so a
            # backward with create_graph differentiates through it (as PyTorch's does)
            self.edge = edge_of(tensor) if output_nr is None else None
            self.tensor, self.packed = None, pack(tensor)
            return
        self.unpack_hook = None
        if output_nr is None:
            self.tensor = tensor
            self.creator = tensor._node  # (named if an in-place write invalidates the save)
        else:
            self.tensor, self.creator = _unlinked(tensor), None
        if saves_seen is not None:
            saves_seen.append(self)

    def register_hooks(self, pack_hook: Callable[[Any], Any],
                       unpack_hook: Callable[[Any], Any]) -> None:
        """PyTorch's `grad_fn._raw_saved_<name>.register_hooks`: pack the saved tensor now,
        unpack it when backward reads it (as a `saved_tensors_hooks` pair would have)."""
        if not (callable(pack_hook) and callable(unpack_hook)):
            raise TypeError("register_hooks(): incompatible function arguments. The "
                            "following argument types are supported:\n    1. (self: "
                            f"{dtype.API_NAME}._C._autograd.SavedTensor, arg0: "
                            "collections.abc.Callable, arg1: collections.abc.Callable) -> "
                            f"None\n\nInvoked with: {self!r}, {pack_hook!r}, {unpack_hook!r}")
        if self.unpack_hook is not None:
            raise RuntimeError("Calling register_hooks on a saved tensor whose hooks have "
                               "already been set. Hint: only one pair of hooks is allowed at "
                               "a time.")
        if self.tensor is None:  # (what `freed` returns)
            raise RuntimeError(FREED_SAVED_MESSAGE)
        tensor = self.tensor
        self.edge = edge_of(tensor) if self.output_nr is None else None
        self.packed, self.unpack_hook, self.tensor = pack_hook(tensor), unpack_hook, None

    def __repr__(self) -> str:
        return f"<{dtype.API_NAME}._C._autograd.SavedTensor object at {id(self):#x}>"

    @classmethod
    def freed(cls) -> SavedTensor:
        """A saved tensor its node has released (backward ran without retain_graph)."""
        out = cls.__new__(cls)
        out.tensor = out.unpack_hook = out.output_nr = None
        return out

    def unpack(self, node: Node) -> Any:
        if self.unpack_hook is not None:
            t = self.unpack_hook(self.packed)
            if not is_tensor(t):
                raise TypeError("Output of saved tensor unpack_hook expected to be a Tensor but "
                                f"got result of type {type(t).__name__}")
            if self.output_nr is not None and state.enabled:
                return _linked(t, node, self.output_nr)
            if self.edge is None or not state.enabled:  # (no graph is being made)
                return t
            t = t.detach()
            saved_node, t._output_nr = self.edge
            if isinstance(saved_node, AccumulateGrad):  # a saved leaf: a leaf accumulating
                t._grad_acc = saved_node                 # into the original
            else:
                t._node = saved_node
            t._requires_grad = True
            return t
        t = self.tensor
        if t._vc[0] != self.version:
            # (a node's own output is saved before it is the output's node: None then)
            creator = node if self.output_nr is not None else \
                self.creator if self.creator is not None or t._node is None else node
            where = "" if creator is None else \
                f", which is output {self.output_nr or 0} of " \
                f"{re.sub(r'Backward[0-9]*$', '', creator.name())},"
            hint = ("the backtrace further above shows the operation that failed to compute "
                    "its gradient. The variable in question was changed in there or anywhere "
                    "later. Good luck!") if anomaly_mode._enabled else (
                "enable anomaly detection to find the operation that failed to compute its "
                f"gradient, with {dtype.API_NAME}.autograd.set_detect_anomaly(True, "
                "check_nan=False).")
            err = RuntimeError(
                f"one of the variables needed for gradient computation has been modified by "
                f"an inplace operation: [{t.type_name()} {list(t.shape)}]{where} is at version "
                f"{t._vc[0]}; expected version {self.version} instead. Hint: {hint}")
            err.add_note(f"needed by {node.name()}")
            raise err
        if self.output_nr is not None and state.enabled:  # a backward making a graph
            return _linked(t, node, self.output_nr)
        return t


def _unlinked(t: Any) -> Any:
    """`t.detach()` as Tensor.detach makes it (same storage and version counter; a tracer
    sees an alias), without calling a subclass's override."""
    out = t._make(t._data, t._dtype, t._device, t._backend)
    out._vc = t._vc
    if tracing.active is not None:
        tracing.primitive("alias", (t,), {}, out)
    return out


def _linked(t: Any, node: Node, output_nr: int) -> Any:
    """A saved output read back as output `output_nr` of `node` again: a backward with
    create_graph differentiates through it."""
    out = _unlinked(t)
    out._node, out._output_nr, out._requires_grad = node, output_nr, True
    return out


def is_tensor(x: Any) -> bool:
    """Whether `x` is a tensor (duck-typed: this layer sits below the Tensor class)."""
    return hasattr(x, "_requires_grad")


def default_label(name: str) -> str:
    """PyTorch's node name for an op: `log_softmax` -> `LogSoftmaxBackward0`, and a letter
    after a digit is capitalised too (`log1p` -> `Log1PBackward0`)."""
    camel = "".join(p.capitalize() for p in name.split("_") if p)
    return re.sub(r"(?<=\d)[a-z]", lambda m: m.group(0).upper(), camel) + "Backward0"


def relabel(out: Any, label: str, inputs: Sequence[Any]) -> Any:
    """`out`, its graph node named `label` when that node is new (no input's): an op written
    as a decomposition then shows PyTorch's node name (`GeluBackward0`, `MseLossBackward0`)
    rather than its last step's. Each tensor of a tuple is named (`split`'s pieces)."""
    olds = {id(getattr(item, "_node", None)) for x in inputs
            for item in (x if isinstance(x, (list, tuple)) else (x,))}
    for result in (out if isinstance(out, tuple) else (out,)):
        node = getattr(result, "_node", None)
        # (an op that returned an input, or its node, leaves that node's name alone)
        if node is not None and hasattr(node, "label") and id(node) not in olds:
            node.label = label
    return out


composing = 0
"""How many decomposed ops (`labelled`) are running: their inner ops' nodes are their
PyTorch node's insides (a number their `mul` reads is no saved tensor of PyTorch's)."""


def labelled(label: str | Callable[..., str | None], fn: Callable) -> Callable:
    """`fn`, its result's new graph node named `label` (or `label(*args, **kwargs)`; None
    leaves it) while grad mode is on: how a decomposed op shows PyTorch's node name."""
    @functools.wraps(fn)
    def named(*args: Any, **kwargs: Any) -> Any:
        global composing
        composing += 1
        try:
            out = fn(*args, **kwargs)
        finally:
            composing -= 1
        if state.enabled:
            name = label if isinstance(label, str) else label(*args, **kwargs)
            if name is not None:
                relabel(out, name, (*args, *kwargs.values()))
        return out
    return named


NODE_HOOKS = -1  # the key of `Node.pre_hooks` whose hooks see all of the node's gradients


# the nodes PyTorch writes by hand in C++ (not generated from derivatives.yaml): their
# name() is the C++ path (`torch::autograd::CopySlices`), their class name the bare one
_CPP_NODES = frozenset({"CopySlices"})


def node_name(label: str) -> str:
    """What `grad_fn.name()` gives for a node labelled `label`."""
    return f"{dtype.API_NAME}::autograd::{label}" if label in _CPP_NODES else label


class Node:
    """A recorded operation: maps output gradients to input gradients."""

    __slots__ = ("next_edges", "_saved", "_freed", "pre_hooks", "retain", "post_hooks",
                 "attrs", "needs", "_metadata", "__weakref__")
    n_outputs = 1  # how many outputs the op had (nodes of several outputs say so)

    def __init__(self, next_edges: tuple, saved: Sequence[Any] = (), **attrs: Any) -> None:
        self.next_edges = next_edges  # per input: (Node, output_nr) or None
        self.needs = tuple([e is not None for e in next_edges])
        self._saved = tuple([SavedTensor(t) for t in saved]) if saved else ()
        self._freed = False
        # output_nr -> its tensor's hooks; NODE_HOOKS -> the node's own (register_prehook)
        self.pre_hooks: dict[int, list[Callable]] | None = None
        self.retain: dict[int, Any] | None = None  # output_nr -> weakref: tensor keeping .grad
        self.post_hooks: list[Callable] | None = None  # hook(grad_inputs, grad_outputs)
        self.attrs = attrs
        if anomaly_mode._enabled:  # (PyTorch keeps the forward's stack for its errors)
            self._metadata = {"traceback_": anomaly_mode.forward_stack()}

    def name(self) -> str:
        return type(self).__name__

    def runs_as(self) -> str:
        """The name of the PyTorch node whose backward this one runs: its own, but for a
        node shown as a small graph of PyTorch's (max_pool1d's squeeze of a 2-D pool)."""
        return self.name()

    @property
    def saved_tensors(self) -> tuple:
        if self._freed:
            raise RuntimeError(FREED_MESSAGE)
        return tuple([s.unpack(self) for s in self._saved])

    @property
    def metadata(self) -> dict:
        """A dict of the user's own data about this node, kept with it (PyTorch's
        `grad_fn.metadata`), made on first use."""
        try:
            return self._metadata
        except AttributeError:
            self._metadata = {}
            return self._metadata

    @property
    def next_functions(self) -> tuple:
        return tuple((shown_as(e[0]), e[1]) if e is not None else (None, 0)
                     for e in self.next_edges)

    def apply(self, grads: list) -> Sequence[Any]:
        raise NotImplementedError

    def release(self) -> None:
        if self._saved:
            self._saved = ()
            self._freed = True

    def register_hook(self, hook: Callable) -> RemovableHandle:
        """Call ``hook(grad_inputs, grad_outputs)`` after this node runs; it may return
        new grad_inputs to send on instead."""
        if self.post_hooks is None:
            self.post_hooks = []
        self.post_hooks.append(hook)
        return RemovableHandle.of_list_entry(self.post_hooks, hook)

    def register_prehook(self, hook: Callable) -> RemovableHandle:
        """Call ``hook(grad_outputs)`` before this node runs (after its tensors' hooks);
        it may return new grad_outputs to use instead."""
        if self.pre_hooks is None:
            self.pre_hooks = {}
        hooks = self.pre_hooks.setdefault(NODE_HOOKS, [])
        hooks.append(hook)
        return RemovableHandle.of_list_entry(hooks, hook)

    def __repr__(self) -> str:
        return f"<{self.name().rsplit('::', 1)[-1]} object at {id(self):#x}>"


class ShownNode(Node):
    """A node of PyTorch's graph that ember's computes inside another (the `TBackward0` of
    linear's weight, the views around its addmm): shown in `next_functions`, so a walk or
    a print of the graph sees PyTorch's; never run (its owner's backward does the work)."""

    __slots__ = ("label",)

    def __init__(self, label: str, next_edges: tuple) -> None:
        super().__init__(next_edges)
        self.label = label

    def name(self) -> str:
        return node_name(self.label)

    def apply(self, grads: list) -> Sequence[Any]:
        raise RuntimeError(f"{self.label} is shown in the graph, not run")


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
        return node_name(self.label)

    def apply(self, grads):
        # a node that saved tensors raises through `saved_tensors` once freed
        g = grads[0] if self.n_outputs == 1 else grads
        out = self.fn(self, g)
        return out if isinstance(out, tuple) else (out,)


class AccumulateGrad(Node):
    """The node of a leaf tensor: the engine adds the incoming gradient into `.grad`."""

    __slots__ = ("variable",)
    __module__ = "builtins"  # printed as PyTorch's C++ class: <class 'AccumulateGrad'>

    def __init__(self, variable: Any) -> None:
        super().__init__(())
        self.variable = variable

    def name(self) -> str:
        # PyTorch's C++ name, which its profiler shows too: torch::autograd::AccumulateGrad
        return f"{dtype.API_NAME}::autograd::AccumulateGrad"

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {id(self):#x}>"

    def apply(self, grads):
        return ()


class GradientEdge(NamedTuple):
    """Object representing a given gradient edge within the autograd graph.

    To get the gradient edge where a given Tensor gradient will be computed,
    you can do ``edge = autograd.graph.get_gradient_edge(tensor)``.
    """

    node: Node
    output_nr: int
    # (PyTorch's token keeps a C++ graph alive; ember's nodes are kept by `node` itself)
    ownership_token: Node | None = None


_SHOWN_CLASSES: dict[tuple[type, str], type] = {}


def shown_as(node: Node | None) -> Node | None:
    """`node` as PyTorch's users see it: an instance of a class named after its PyTorch
    node (`type(y.grad_fn).__name__ == "MulBackward0"`, printed `<class 'MulBackward0'>`).
    One subclass per (class, name), without slots of its own so the object can take it on
    first sight (a tensor's `grad_fn`, a node's `next_functions`): recording pays nothing."""
    if node is None:
        return None
    cls = type(node)
    name = node.name().rpartition("::")[2]  # (AccumulateGrad's C++ name)
    if cls.__name__ == name:  # shown already, or named so (a custom Function's node)
        return node
    shown = _SHOWN_CLASSES.get((cls, name))
    if shown is None:
        shown = _SHOWN_CLASSES[cls, name] = type(name, (cls,), {
            "__slots__": (), "__module__": "builtins", "__qualname__": name})
    node.__class__ = shown
    return node


def edge_of(t: Any) -> tuple | None:
    """The graph edge a tensor contributes as an op input, or None if it needs no grad."""
    if not t._requires_grad:
        return None
    if t._view_fn is not None and t._view_vc != t._vc[0]:
        refresh_view(t)
    node = t._node
    if node is not None:
        return (node, t._output_nr)
    acc = t._grad_acc
    if acc is None:
        acc = t._grad_acc = AccumulateGrad(t)
    return (acc, 0)


def refresh_view(t: Any) -> None:
    """A view whose storage was written in place (through its base or another view of it)
    since its node was taken: its node is taken again from its base, whose graph holds
    the write (PyTorch regenerates a view's grad_fn the same way, on its version)."""
    prev, state.enabled = state.enabled, True
    try:
        fresh = t._view_fn(t._base)
    finally:
        state.enabled = prev
    if fresh._requires_grad:
        t._node, t._output_nr = replayed_view_node(fresh, t._base), fresh._output_nr
    t._view_vc = t._vc[0]


def replayed_view_node(fresh: Any, base: Any) -> Any:
    """The node of a view taken again from its base after an in-place write: PyTorch
    replays a strided view as one `as_strided` of the base (AsStridedBackward0), whatever
    op made it; a view of another dtype (view_as_real) keeps its own op's node."""
    node = fresh._node
    if fresh._dtype is base._dtype and hasattr(node, "label") and node.label != "CopySlices":
        node.label = "AsStridedBackward0"
    return node


def record(label: str, fn: Callable, inputs: Sequence[Any], outputs: Any,
           saved: Sequence[Any] = (), **attrs: Any) -> Node | None:
    """Attach a backward node to `outputs` (a tensor or a sequence) if any input needs it.

    `inputs` are the op's differentiable operands (non-tensors are skipped). Only floating
    outputs join the graph.
    """
    if fw.active and not isinstance(outputs, (tuple, list)) and \
            outputs._dtype.is_floating_point:
        _propagate_tangent(label, fn, inputs, outputs, saved, attrs)
    if not state.enabled:
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
            if o is not None and o._dtype._differentiable:
                o._node, o._output_nr, o._requires_grad = node, i, True
        return node
    node = FnNode(label, fn, edges, saved, **attrs)
    if outputs._dtype._differentiable:
        outputs._node = node
        outputs._requires_grad = True
    return node


def _propagate_tangent(label: str, fn: Callable, inputs: Sequence[Any], output: Any,
                       saved: Sequence[Any], attrs: dict) -> None:
    """Give `output` its tangent when an input carries one: the JVP of `fn`, the op's
    backward (ember.core.forward_ad.jvp)."""
    tangents = fw.tangents_of(inputs)
    if tangents is None:
        return
    with fw.suspended():  # an edge-less node whose `needs` marks the inputs with tangents
        node = FnNode(label, fn, tuple((None, 0) if t is not None else None
                                       for t in tangents), saved, **attrs)
    fw.set_tangent(output, fw.jvp(lambda u: node.apply([u]), output, inputs, tangents))
