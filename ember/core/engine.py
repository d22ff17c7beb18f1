"""The backward engine: `backward` and `grad` run the recorded graph in reverse.

The engine walks the graph without recursion: it counts each node's consumers, then runs
nodes in dependency order, summing gradients that meet at a node. It does arithmetic only
through Tensor methods (`g + h`, `t.new_ones(...)`, `g.sum_to_size(...)`), so it needs no
op module: whatever records a gradient also provides the ops to add it up.
"""

from __future__ import annotations

import functools
import itertools
import sys
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from ember.core import anomaly_mode, interpose, tracing
from ember.core import backend as backend_contract
from ember.core.errors import type_name, with_context
from ember.core.grad_mode import no_grad, state
from ember.core.graph import (
    NODE_HOOKS,
    AccumulateGrad,
    FnNode,
    GradientEdge,
    Node,
    edge_of,
    is_tensor,
    relabel,
)
from ember.core.memory_format import contiguous_format, tensor_format
from ember.core.opdef import OPS


def _collect(roots: set[Node]) -> dict[Node, int]:
    """Count, for every node reachable from `roots`, how many edges lead into it."""
    deps: dict[Node, int] = {}
    stack = list(roots)
    while stack:
        for edge in stack.pop().next_edges:
            if edge is None:
                continue
            nxt = edge[0]
            if nxt in deps:
                deps[nxt] += 1
            else:  # first reached: walk on from it (a root is walked already)
                deps[nxt] = 1
                if nxt not in roots:
                    stack.append(nxt)
    return deps


def _leading_to(deps: dict[Node, int], roots: Sequence[Node],
                targets: set[Node]) -> set[Node]:
    """The nodes with a path (of at least one edge) to one of `targets`: the nodes an
    autograd.grad runs (PyTorch's exec_info); the others send nothing on, their graph
    left as it was (not freed, its hooks not run)."""
    parents: dict[Node, list[Node]] = {}
    for node in itertools.chain(roots, deps):
        for edge in node.next_edges:
            if edge is not None:
                parents.setdefault(edge[0], []).append(node)
    needed: set[Node] = set()
    stack = list(targets)
    while stack:
        for parent in parents.get(stack.pop(), ()):
            if parent not in needed:
                needed.add(parent)
                stack.append(parent)
    return needed


def _pass_over(node: Node, deps: dict[Node, int], ready: list[Node]) -> None:
    """Count `node`'s edges as done without running it (its inputs get nothing from it)."""
    for edge in node.next_edges:
        if edge is not None:
            nxt = edge[0]
            deps[nxt] -= 1
            if not deps[nxt]:
                ready.append(nxt)


def _edge(x: Any) -> tuple | None:
    """The graph edge of a tensor, or of a `GradientEdge` given in its place."""
    if type(x) is GradientEdge:
        return (x.node, x.output_nr)
    return edge_of(x)


def run_backward(tensors: Sequence[Any], grad_tensors: Sequence[Any], retain_graph: bool,
                 create_graph: bool, capture: Sequence[Any] | None = None,
                 accumulate: bool = True, into_captured: bool = False) -> list[Any] | None:
    """Run the graph backward from `tensors` seeded with `grad_tensors`.

    With `capture` (autograd.grad), returns the gradients reaching those tensors and
    leaves `.grad` untouched when `accumulate` is False; `into_captured` (backward's
    `inputs=`) accumulates them into those tensors' `.grad` before the final callbacks.
    """
    state = backend_contract.backward_state
    outer, state.retain_graph = state.retain_graph, retain_graph
    outer_valid, state.checkpoint_valid = state.checkpoint_valid, capture is None
    try:
        return _run_backward(tensors, grad_tensors, retain_graph, create_graph, capture,
                             accumulate, into_captured)
    finally:
        state.retain_graph, state.checkpoint_valid = outer, outer_valid


# The nodes whose backward PyTorch cannot differentiate again (their double backward
# "is not implemented"), by label: ember's formulas could, but a program differentiated
# twice through them fails under PyTorch, and ember raises the same error at the same
# place (when the second backward reaches the gradient, as PyTorch's DelayedError does).
# Their gradients require grad under create_graph, as PyTorch's backward ops that take
# the forward's input make them, except embedding_bag's (its weight's takes no weight).
ONCE_DIFFERENTIABLE: dict[str, tuple[type[Exception], str]] = {
    "CdistBackward0": (NotImplementedError,
                       "the derivative for '_cdist_backward' is not implemented."),
    "EmbeddingBagBackward0": (NotImplementedError, "the derivative for "
                              "'_embedding_bag_backward' is not implemented."),  # (untied)
    "PdistBackward0": (NotImplementedError,
                       "the derivative for '_pdist_backward' is not implemented."),
    "HardsigmoidBackward0": (RuntimeError,
                             "derivative for aten::hardsigmoid_backward is not implemented"),
    "MultiMarginLossBackward0": (RuntimeError, "derivative for "
                                 "aten::multi_margin_loss_backward is not implemented"),
    "MultilabelMarginLossBackward0": (RuntimeError, "derivative for "
                                      "aten::multilabel_margin_loss_backward is not "
                                      "implemented"),
    "CtcLossBackward0": (RuntimeError,
                         "derivative for aten::_ctc_loss_backward is not implemented"),
}


# The nodes whose gradient PyTorch computes with a backward op that also takes the
# forward's input: under create_graph that gradient requires grad (it has a
# "...BackwardBackward0" node) even where its value does not depend on the input. True:
# the input's second derivative is zeros (piecewise-linear pools and pads); False: it is
# unused, None (convolution, grid_sample, batch norm in eval mode).
TIED_TO_INPUT = dict.fromkeys((
    "MaxPool1DWithIndicesBackward0", "MaxPool2DWithIndicesBackward0",
    "MaxPool3DWithIndicesBackward0", "AvgPool2DBackward0", "AvgPool3DBackward0",
    "AdaptiveAvgPool2DBackward0", "AdaptiveAvgPool3DBackward0",
    "AdaptiveMaxPool2DBackward0", "AdaptiveMaxPool3DBackward0",
    "ReflectionPad1DBackward0", "ReflectionPad2DBackward0", "ReflectionPad3DBackward0",
    "ReplicationPad1DBackward0", "ReplicationPad2DBackward0",
    "ReplicationPad3DBackward0", "NllLossBackward0", "NllLoss2DBackward0"), True)
TIED_TO_INPUT.update(dict.fromkeys((
    "ConvolutionBackward0", "GridSampler2DBackward0", "GridSampler3DBackward0",
    "NativeBatchNormBackward0"), False))


# The nodes whose gradients PyTorch computes with one backward op of its own (ATen's
# sigmoid_backward, _softmax_backward_data, convolution_backward ...): under create_graph
# each gradient shows that op's node, "...BackwardBackward0", where ember's formula ends in
# some step of its own (a mul, a where). By node: the name, or one per gradient (None: the
# gradient's own node). Only nodes whose formula makes the gradients the user receives: an
# op ember decomposes (prelu, avg_pool2d, batch_norm, layer_norm) sends them through the
# nodes of its parts, which name them.
DOUBLE_BACKWARD_NAMES: dict[str, str | tuple[str | None, ...]] = {
    "SoftmaxBackward0": "SoftmaxBackwardDataBackward0",
    "LogSoftmaxBackward0": "LogSoftmaxBackwardDataBackward0",
    **{f"{name}Backward0": f"{name}BackwardBackward0" for name in (
        "Convolution", "Gelu", "Elu", "Sigmoid", "Tanh", "Softplus", "MseLoss",
        "SmoothL1Loss", "HuberLoss")},
}


def _name_double_backward(node: Node, results: Sequence[Any], grads: Sequence[Any]) -> None:
    """Give `node`'s gradients, computed under create_graph, PyTorch's node names
    (DOUBLE_BACKWARD_NAMES); a node a gradient shares with an incoming one keeps its name."""
    names = DOUBLE_BACKWARD_NAMES[node.name()]
    for i, g in enumerate(results):
        label = names if isinstance(names, str) else (names[i] if i < len(names) else None)
        if label is not None and g is not None:
            relabel(g, label, grads)


def _tied(node: Node, results: tuple) -> tuple:
    """`node`'s gradients (computed under create_graph), the ones that do not require grad
    behind one node with edges to `node`'s inputs, as PyTorch's double-backward node: it
    sends zeros (or nothing) to each input (see TIED_TO_INPUT)."""
    if all(g is None or g._requires_grad for g in results):
        return tuple(results)
    # (empty templates keep each gradient's dtype and device, not its memory)
    metas = [None if g is None else (tuple(g.shape), g.new_empty((0,))) for g in results]
    zeros = TIED_TO_INPUT[node.runs_as()]

    def back(tied: Node, grads: Any) -> tuple:
        if not zeros:
            return (None,) * len(metas)
        return tuple(None if m is None else m[1].new_zeros(m[0]) for m in metas)

    loose = [g is not None and not g._requires_grad for g in results]
    # (a node shown as a small graph of PyTorch's, max_pool1d's unsqueeze, 2-D pool and
    # squeeze: its gradient leaves through the unsqueeze's backward, a squeeze, the name
    # the node shows)
    label = node.name() if node.runs_as() != node.name() else node.name()[:-1] + "Backward0"
    tied = FnNode(label, back, tuple(node.next_edges), n_outputs=len(results))
    tied.attrs["_out_meta"] = [None if m is None else (m[0], m[1].dtype, m[1].device)
                               for m in metas]
    out = []
    for i, g in enumerate(results):
        if loose[i]:
            g = g.detach()  # (an alias: the result may be a tensor the caller holds)
            g._node, g._output_nr, g._requires_grad = tied, i, True
        out.append(g)
    return tuple(out)


def _delayed_errors(node: Node, results: Sequence[Any]) -> tuple:
    """`node`'s gradients (a once-differentiable node's, computed under create_graph)
    behind one node with edges to `node`'s inputs that raises PyTorch's error when
    differentiated; they require grad, as PyTorch's do, even where ember's formula made
    them constants."""
    error, message = ONCE_DIFFERENTIABLE[node.name()]

    def fail(failing: Node, grads: Any) -> Any:
        raise error(message)

    failing = FnNode(node.name()[:-1] + "Backward0", fail, tuple(node.next_edges),
                     n_outputs=len(results))  # "CdistBackwardBackward0"
    failing.attrs["_out_meta"] = [None if g is None else (tuple(g.shape), g.dtype, g.device)
                                  for g in results]
    tied = node.name() != "EmbeddingBagBackward0"
    out = []
    for i, g in enumerate(results):
        if g is not None and (tied or g._requires_grad):
            g = g.detach()  # (an alias: the result may be a tensor the caller holds)
            g._node, g._output_nr, g._requires_grad = failing, i, True
        out.append(g)
    return tuple(out)


def _run_backward(tensors: Sequence[Any], grad_tensors: Sequence[Any], retain_graph: bool,
                  create_graph: bool, capture: Sequence[Any] | None,
                  accumulate: bool, into_captured: bool) -> list[Any] | None:
    buffers: dict[Node, list] = {}
    roots = []
    for i, (t, g) in enumerate(zip(tensors, grad_tensors)):
        edge = _edge(t)
        if edge is None:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have "
                               "a grad_fn")
        node, nr = edge
        _add_grad(buffers, node, nr, g)
        roots.append(node)

    captured: dict[tuple[Node, int], Any] = {}
    wanted: dict[tuple[Node, int], int] = {}
    if capture is not None:
        for i, t in enumerate(capture):
            edge = _edge(t)
            if edge is None:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            wanted[edge] = i

    deps = _collect(set(roots))
    ready = [n for n in dict.fromkeys(roots) if n not in deps]
    wanted_nodes = {key[0] for key in wanted}
    needed = _leading_to(deps, ready, wanted_nodes) if wanted else None
    prev = state.enabled
    state.enabled = create_graph
    outer_callbacks, outer_task, outer_graph = _callbacks.queue, _callbacks.task, \
        _callbacks.graph
    _callbacks.queue, _callbacks.task = [], next(_task_ids)
    _callbacks.graph = (deps, set(roots), accumulate, wanted_nodes, needed)
    pop = buffers.pop
    try:
        while ready:
            node = ready.pop()
            grads = pop(node, None) or []
            hook = interpose.backward_active  # the profiler's ranges, when one records
            if needed is not None and node not in needed:
                # it leads to no captured tensor: PyTorch does not run it
                if node in wanted_nodes:
                    if node.pre_hooks or node.retain:
                        _run_pre_hooks(node, grads, captured_only=True)
                    for key in [k for k in wanted if k[0] is node]:
                        captured[key] = grads[key[1]] if key[1] < len(grads) else None
                _pass_over(node, deps, ready)
                grads = None
                continue
            if node.pre_hooks or node.retain:
                _run_pre_hooks(node, grads)
            if wanted:
                for key in [k for k in wanted if k[0] is node]:
                    captured[key] = grads[key[1]] if key[1] < len(grads) else None
            if type(node) is AccumulateGrad:
                if accumulate and grads and grads[0] is not None:
                    if hook is None:
                        _accumulate(node.variable, grads[0], create_graph)
                    else:
                        hook(node, functools.partial(_accumulate_first, node.variable, grads,
                                                     create_graph))
                    if node.post_hooks:  # hook((), grad_outputs): it has no inputs
                        _run_post_hooks(node, (), tuple(grads))
                continue
            if grads and (grads[0] is not None or any(g is not None for g in grads)):
                if node.n_outputs != 1 or len(grads) != 1:
                    grads = _fill_missing(node, grads)
                if anomaly_mode._enabled:
                    results = _apply_checked(node, grads, hook)
                elif hook is None:
                    results = node.apply(grads)
                else:
                    results = hook(node, functools.partial(node.apply, grads))
                if create_graph:
                    if node.name() in ONCE_DIFFERENTIABLE:
                        results = _delayed_errors(node, results)
                    elif node.runs_as() in TIED_TO_INPUT:
                        results = _tied(node, results)
                    if node.name() in DOUBLE_BACKWARD_NAMES:
                        _name_double_backward(node, results, grads)
            else:  # nothing reached this node: it sends nothing on
                results = (None,) * len(node.next_edges)
            if node.post_hooks:  # hook(grad_inputs, grad_outputs); a result replaces them
                results = _run_post_hooks(node, tuple(results), tuple(grads))
            if not retain_graph:
                node.release()
                if tracing.tape is not None:  # ember.compile: this graph is spent
                    tracing.tape.spent(node)
            for edge, g in zip(node.next_edges, results):
                if edge is None:
                    continue
                nxt = edge[0]
                if g is not None:  # summed into the gradients waiting at `nxt`
                    nr = edge[1]
                    slots = buffers.get(nxt)
                    if slots is None:
                        if nr == 0 and nxt.n_outputs == 1:
                            buffers[nxt] = [g]
                        else:
                            slots = buffers[nxt] = [None] * max(nxt.n_outputs, nr + 1)
                            slots[nr] = g
                    else:
                        if nr >= len(slots):
                            slots.extend([None] * (nr + 1 - len(slots)))
                        old = slots[nr]
                        if old is None:
                            slots[nr] = g
                        else:
                            try:
                                slots[nr] = old + g
                            except RuntimeError:  # sparse + dense: summed the other way
                                if not old.is_sparse:
                                    raise
                                slots[nr] = g + old
                count = deps[nxt] - 1
                deps[nxt] = count
                if not count:
                    ready.append(nxt)
            results = g = grads = None  # only the buffers may hold gradients (_accumulate)
        if into_captured:
            for t in capture:
                g = captured.get(edge_of(t))
                if g is not None:
                    _accumulate(t, g, create_graph)
            g = None
        _run_callbacks()
    finally:
        state.enabled = prev
        _callbacks.queue, _callbacks.task = outer_callbacks, outer_task
        _callbacks.graph = outer_graph
    if capture is None:
        return None
    return [captured.get(_edge(t)) for t in capture]


def call_node(node: Node, *grads: Any) -> Any:
    """`grad_fn(grad)`: run a node's backward on the gradients of its outputs, as PyTorch
    calls its C++ nodes from Python: under the current grad mode (which records the
    gradients' own graph where it is on), returning the gradient of its one input, or a
    tuple of them (None for an input that needs none)."""
    grads = list(grads)
    if grads and (node.n_outputs != 1 or len(grads) != 1):
        grads = _fill_missing(node, grads)
    results = tuple(node.apply(grads))
    if state.enabled and node.name() in DOUBLE_BACKWARD_NAMES:
        _name_double_backward(node, results, grads)
    results = tuple(None if edge is None or i >= len(results) else results[i]
                    for i, edge in enumerate(node.next_edges))
    return results[0] if len(results) == 1 else results


Node.__call__ = call_node  # (the graph module builds nodes; running them is the engine's)


def _apply_checked(node: Node, grads: list, hook: Any) -> Sequence[Any]:
    """`node`'s backward under anomaly mode: its gradients checked for NaN, and a failure
    preceded by PyTorch's warning naming the forward call that recorded the node."""
    try:
        results = node.apply(grads) if hook is None else \
            hook(node, functools.partial(node.apply, grads))
        anomaly_mode.check_gradients(node, results)
    except Exception:
        anomaly_mode.warn_failed(node)
        raise
    return results


class _Callbacks(threading.local):  # per thread, as each thread runs its own backward
    queue: list | None = None  # the running backward's final callbacks; None outside one
    task: int = -1  # the running backward's id; -1 outside one
    # the running backward's graph: (the dependency counts of the nodes it reaches, its
    # roots, whether leaves accumulate, the captured nodes, the nodes that lead to them or
    # None), for will_engine_execute_node
    graph: tuple | None = None


_callbacks = _Callbacks()
_task_ids = itertools.count()


def current_graph_task_id() -> int:
    """The id of the backward pass running in this thread (PyTorch's
    `torch._C._current_graph_task_id`), -1 outside one: hooks that must act once per
    backward pass key their state by it."""
    return _callbacks.task


def will_engine_execute_node(node: Any) -> bool:
    """Whether the backward pass running in this thread runs `node` (a tensor's grad_fn,
    or a leaf's AccumulateGrad, which runs where leaves accumulate or their gradient is
    captured): PyTorch's `torch._C._will_engine_execute_node`."""
    if _callbacks.graph is None:
        raise RuntimeError("_will_engine_execute_node should only be called during the "
                           "backward pass")
    deps, roots, accumulate, captured, needed = _callbacks.graph
    if node not in deps and node not in roots:
        return False
    if needed is not None and node not in needed and node not in captured:
        return False
    return accumulate or type(node) is not AccumulateGrad or node in captured


def queue_callback(callback: Callable[[], None]) -> None:
    """Run `callback()` once the backward pass now running has finished (PyTorch's
    `Variable._execution_engine.queue_callback`); callbacks run in the order queued, and
    one may queue another. DistributedDataParallel waits for its all-reduces this way."""
    if _callbacks.queue is None:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    _callbacks.queue.append(callback)


def _run_callbacks() -> None:
    queue = _callbacks.queue
    while queue:
        queue.pop(0)()


def _accumulate_first(t: Any, grads: list, create_graph: bool) -> None:
    # reads the gradient from the engine's list, holding no extra reference to it
    # (_accumulate keeps a gradient nothing else refers to without copying it)
    _accumulate(t, grads[0], create_graph)


def _add_grad(buffers: dict, node: Node, nr: int, g: Any) -> None:
    slots = buffers.get(node)
    if slots is None:
        slots = buffers[node] = [None] * max(node.n_outputs, nr + 1)
    if nr >= len(slots):
        slots.extend([None] * (nr + 1 - len(slots)))
    old = slots[nr]
    slots[nr] = g if old is None else (g + old if old.is_sparse else old + g)


def zeros_for_missing(grads: Sequence[Any], metas: Sequence[Any]) -> list:
    """Zero gradients for the outputs that got none, from their (shape, dtype, device):
    made by a gradient that did arrive (a node runs only when one did). An output with no
    meta (not a tensor: a custom Function may return other values) keeps None."""
    present = next(g for g in grads if g is not None)
    return [present.new_zeros(m[0], dtype=m[1], device=m[2]) if g is None and m is not None
            else g for g, m in zip(grads, metas)]


def _fill_missing(node: Node, grads: list) -> list:
    n = node.n_outputs
    if n == 1 and len(grads) == 1:  # the common case: one output, its gradient arrived
        return grads
    if len(grads) < n:
        grads = list(grads) + [None] * (n - len(grads))
    if any(g is None for g in grads):
        metas = node.attrs.get("_out_meta")
        if metas is not None:  # multi-output nodes: unused outputs get zero gradients
            grads = zeros_for_missing(grads, metas)
    return grads


def _run_pre_hooks(node: Node, grads: list, captured_only: bool = False) -> None:
    """The hooks on `node`'s output tensors, their retained `.grad`s, then the node's
    own pre-hooks (not for a node only captured, which PyTorch does not run)."""
    if node.pre_hooks:
        for nr, hooks in node.pre_hooks.items():
            if nr == NODE_HOOKS:
                continue
            for hook in hooks:
                if nr < len(grads) and grads[nr] is not None:
                    new = hook(grads[nr])
                    if new is not None:
                        check_hook_result(grads[nr], new, hook)
                        grads[nr] = new
    if node.retain:
        for nr, ref in node.retain.items():
            t = ref()  # (None once the retaining tensor is gone)
            if t is not None and nr < len(grads) and grads[nr] is not None:
                g = grads[nr] if state.enabled else grads[nr].detach()
                t.grad = g if t.grad is None else t.grad + g
    own = node.pre_hooks.get(NODE_HOOKS) if node.pre_hooks and not captured_only else None
    for hook in own or ():
        new = hook(tuple(grads))
        if new is not None:
            _check_hook_results(grads, new, hook)
            grads[:] = list(new)


def _run_post_hooks(node: Node, results: tuple, grads: tuple) -> tuple:
    """`node`'s post-hooks, `hook(grad_inputs, grad_outputs)`, in the order registered: a
    hook's tuple result (checked as PyTorch checks it) replaces the grad_inputs."""
    for post in list(node.post_hooks):
        new = post(results, grads)
        if new is not None:
            _check_hook_results(results, new, post)
            results = new
    return results


def hook_name(hook: Any) -> str:
    """How PyTorch's hook errors name a hook: its `__name__`, else `<unknown>`."""
    name = getattr(hook, "__name__", None)
    return name if isinstance(name, str) else "<unknown>"


def _check_hook_results(prev: Sequence[Any], new: Any, hook: Any) -> None:
    """PyTorch's checks of a node hook's result: a tuple of as many values as it was given,
    each as `check_hook_result` checks it."""
    if not isinstance(new, tuple):
        raise TypeError(f"expected tuple, but hook returned '{type_name(new)}'")
    if len(new) != len(prev):
        raise RuntimeError(f"hook '{hook_name(hook)}' has returned an incorrect number of "
                           f"values (got {len(new)}, but expected {len(prev)})")
    for old, value in zip(prev, new):
        check_hook_result(old, value, hook)


def check_hook_result(old: Any, new: Any, hook: Any) -> None:
    """PyTorch's checks of a gradient a hook returned in place of `old`: None, or a tensor
    of `old`'s type (dtype and device kind) and size."""
    if new is None:
        return
    if old is None:
        raise RuntimeError("can't replace a None gradient with a non-None value")
    if not is_tensor(new):
        raise TypeError(f"expected Variable, but hook returned '{type_name(new)}'")
    if new.dtype != old.dtype or new.device.type != old.device.type:
        if old.device.type == new.device.type or "cuda" not in (old.device.type,
                                                                new.device.type):
            raise RuntimeError(f"hook '{hook_name(hook)}' has changed the type of value (was "
                               f"{old.type()} got {new.type()})")
        kind = ("CUDA tensor got CPU tensor" if old.device.type == "cuda"
                else "CPU tensor got CUDA tensor")
        raise RuntimeError(f"hook '{hook_name(hook)}' has changed the type of value "
                           f"(was {kind})")
    if tuple(new.shape) != tuple(old.shape):
        raise RuntimeError(f"hook '{hook_name(hook)}' has changed the size of value")


# references to a gradient tensor inside _accumulate when nothing else holds it: the
# engine's list of the node's gradients, the argument, and getrefcount's own argument
_STEAL_REFS = 3
# references to its buffer when only that tensor holds it: its slot and getrefcount's
# argument (a backward that returns one buffer for two inputs wraps it twice)
_STEAL_BUFFER_REFS = 2


def _accumulate(t: Any, g: Any, create_graph: bool) -> None:
    for hook in t._hooks or ():
        new = hook(g)
        if new is not None:
            check_hook_result(g, new, hook)
            g = new
    if g.is_sparse or (t._grad is not None and t._grad.is_sparse):
        from ember.core.sparse_grad import accumulate  # (only sparse gradients import it)

        accumulate(t, g, create_graph)
        for hook in t._post_accumulate_hooks or ():  # (as below: no call on the dense path)
            hook(t)
        return
    if g._data.shape != t._data.shape:
        g = g.sum_to_size(t.shape)
    if t._grad_dtype != "same" and t._grad_dtype is not None and g._dtype is not t._grad_dtype:
        g = g.to(t._grad_dtype)  # the leaf's `grad_dtype`, set by the user
    # .grad must own its buffer: a later in-place `+=` must touch nothing else. A fresh
    # gradient that no other tensor object holds (e.g. add's backward passes one gradient
    # to both inputs), whose buffer no other tensor wraps, and that owns its memory is kept
    # as is (as PyTorch's AccumulateGrad does); a shared one, or a view, is copied.
    # (Counted before detach, which makes another tensor on the same buffer.)
    unshared = sys.getrefcount(g) <= _STEAL_REFS and \
        sys.getrefcount(g._data) <= _STEAL_BUFFER_REFS and g._backend.owns(g._data)
    if not create_graph:
        g = g.detach()
    if t._grad is None:
        # PyTorch's gradient layout contract: `.grad` is laid out as its leaf (a kept
        # gradient too: a transposed matmul result is copied for a row-major weight);
        # under enforce_grad_layout_policy(False) a gradient that can be kept is kept
        if unshared and not create_graph and not state.layout_enforced:
            pass
        elif t._backend.is_contiguous(t._data):
            if not (create_graph or (unshared and g._backend.is_contiguous(g._data))):
                g = g.clone(memory_format=contiguous_format)
        else:
            g, unshared = _leaf_layout(t, g, unshared)
            if not (create_graph or unshared):
                g = g.clone()
        if g._device is t._device and g._data.shape == t._data.shape:
            t._grad = g  # what the `grad` setter checks holds
        else:
            t.grad = g
    elif create_graph:
        t.grad = t.grad + g
    elif state.enabled:  # backward(inputs=...) with grad mode on
        with no_grad():
            t._grad.add_(g)
    else:  # inside the engine, which turned grad mode off
        t._grad.add_(g)
    for hook in t._post_accumulate_hooks or ():
        hook(t)


def _dense(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether a layout covers its storage without gaps or overlaps (a permutation of a
    row-major one)."""
    expected = 1
    for size, stride in sorted((p for p in zip(shape, strides) if p[0] != 1),
                               key=lambda p: p[1]):
        if stride != expected:
            return False
        expected *= size
    return True


def _leaf_layout(t: Any, g: Any, unshared: bool) -> tuple[Any, bool]:
    """PyTorch's gradient layout contract (clone_obey_contract): a leaf whose layout is
    dense (channels-last, a permuted tensor) gets a `.grad` with its strides; any other
    non-contiguous leaf a row-major one."""
    fmt = tensor_format(t)
    if fmt is not contiguous_format:
        if g.is_contiguous(memory_format=fmt):
            return g, unshared
        return g.contiguous(memory_format=fmt), True  # (a fresh copy)
    shape, strides = tuple(t.shape), t.stride()
    if not _dense(shape, strides):
        return (g, unshared) if g.is_contiguous() else (g.contiguous(), True)
    if all(a == b for size, a, b in zip(shape, strides, g.stride()) if size != 1):
        return g, unshared
    with no_grad():
        out = g.new_empty_strided(shape, strides)
        out.copy_(g)
    return out, True


def backward(tensors: Any, grad_tensors: Any = None, retain_graph: bool | None = None,
             create_graph: bool = False, inputs: Sequence[Any] | None = None) -> None:
    """Compute gradients of `tensors` with respect to graph leaves (into their `.grad`)."""
    tensors = [tensors] if is_tensor(tensors) else list(tensors)
    if grad_tensors is None:
        grad_tensors = [None] * len(tensors)
    elif is_tensor(grad_tensors):
        grad_tensors = [grad_tensors]
    seeds = [_seed(t, g, i) for i, (t, g) in enumerate(zip(tensors, grad_tensors))]
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is not None:
        inputs = [inputs] if is_tensor(inputs) else list(inputs)
        if not inputs:  # PyTorch refuses before running anything
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
        for t in inputs:  # (PyTorch's engine calls retain_grad() on each, which refuses)
            if type(t) is not GradientEdge and not t.requires_grad:
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        run_backward(tensors, seeds, retain_graph, create_graph, capture=inputs,
                     accumulate=False, into_captured=True)
        return
    run_backward(tensors, seeds, retain_graph, create_graph)


def _seed(t: Any, g: Any, i: int = 0) -> Any:
    if type(t) is GradientEdge:  # (no shape to check or to make ones of)
        if g is None:
            raise RuntimeError("grad can be implicitly created only for scalar outputs")
        return g
    if g is None:
        if t.requires_grad:  # (else the engine refuses it: PyTorch's order of checks)
            if t.numel() != 1:
                raise with_context(RuntimeError("grad can be implicitly created only for scalar "
                                                "outputs"),
                                   f"backward: the output has shape {list(t.shape)}; pass "
                                   f"`gradient=` to backward()")
            if t._dtype.is_complex:
                raise RuntimeError(f"grad can be implicitly created only for real scalar "
                                   f"outputs but got {t.dtype}")
        return t.new_ones(t.shape)
    if not is_tensor(g):
        g = t.new_tensor(g)
    if g.shape != t.shape:
        raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} "
                           f"and output[{i}] has a shape of {t.shape}.")
    return g


def grad(outputs: Any, inputs: Any, grad_outputs: Any = None,
         retain_graph: bool | None = None, create_graph: bool = False,
         only_inputs: bool = True, allow_unused: bool | None = None,
         is_grads_batched: bool = False, materialize_grads: bool = False) -> tuple:
    """Compute and return the gradients of `outputs` with respect to `inputs`.

    Unlike `backward`, leaves' `.grad` is not changed. With `create_graph=True` the
    returned gradients are themselves differentiable (second derivatives).
    `only_inputs` is PyTorch's deprecated flag, accepted and ignored as there (WGAN-GP
    programs pass it). With `is_grads_batched=True` the first dimension of each of
    `grad_outputs` is a batch: one vector-Jacobian product per entry, stacked (PyTorch
    vmaps; here each runs in turn over the retained graph).
    """
    if not only_inputs:
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to "
                      "True). To accumulate gradient for other parts of the graph, please "
                      "use torch.autograd.backward.", FutureWarning, stacklevel=2)
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when "
                         "materialize_grads=True, but got: allow_unused=False.")
    if is_grads_batched:
        return _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph,
                             allow_unused, materialize_grads)
    outputs = [outputs] if _single(outputs) else list(outputs)
    inputs = [inputs] if _single(inputs) else list(inputs)
    if not inputs:  # PyTorch refuses before running anything
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    elif is_tensor(grad_outputs):
        grad_outputs = [grad_outputs]
    seeds = [_seed(t, g, i) for i, (t, g) in enumerate(zip(outputs, grad_outputs))]
    if retain_graph is None:
        retain_graph = create_graph
    grads = run_backward(outputs, seeds, retain_graph, create_graph, capture=inputs,
                         accumulate=False)
    result = []
    for i, (t, g) in enumerate(zip(inputs, grads)):
        if g is None:
            if materialize_grads:
                g = t.new_zeros(t.shape)
            elif not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have "
                                   "been used in the graph. Set allow_unused=True if this is "
                                   "the desired behavior.")
        elif type(t) is not GradientEdge and g.shape != t.shape:
            g = g.sum_to_size(t.shape)
        result.append(g)
    return tuple(result)


def _batched_grad(outputs: Any, inputs: Any, grad_outputs: Any, retain_graph: bool | None,
                  create_graph: bool, allow_unused: bool | None,
                  materialize_grads: bool) -> tuple:
    """`grad(..., is_grads_batched=True)`: a `grad` per batch entry of `grad_outputs`,
    the graph kept for all but the last, each input's gradients stacked."""
    batched = [grad_outputs] if is_tensor(grad_outputs) else list(grad_outputs)
    sizes = [g.shape[0] for g in batched if g is not None]
    if len(set(sizes)) != 1:  # (PyTorch's vmap words it)
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {sizes} for the mapped dimension")
    n = sizes[0]
    keep = create_graph if retain_graph is None else retain_graph
    per_entry = [grad(outputs, inputs, [None if g is None else g[b] for g in batched],
                      retain_graph=True if b < n - 1 else keep, create_graph=create_graph,
                      allow_unused=allow_unused, materialize_grads=materialize_grads)
                 for b in range(n)]
    stack = OPS["stack"].fn  # (by name: the ops import the engine)
    return tuple(None if entries[0] is None else stack(list(entries))
                 for entries in zip(*per_entry))


def _single(x: Any) -> bool:
    """A tensor or a `GradientEdge` given alone (not in a sequence)."""
    return is_tensor(x) or type(x) is GradientEdge
