"""`torch.autograd.graph`: hooks on the tensors autograd saves for backward
(`saved_tensors_hooks`, `save_on_cpu`, `disable_saved_tensors_hooks`,
`allow_mutation_on_saved_tensors`), the graph's `Node` class, gradient edges and
multi-tensor gradient hooks."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Literal

from ember.core import graph as _graph
from ember.core.engine import current_graph_task_id, queue_callback, will_engine_execute_node
from ember.core.grad_mode import no_grad
from ember.core.graph import GradientEdge, Node, edge_of, shown_as
from ember.core.tensor import Tensor

__all__ = ["Node", "GradientEdge", "get_gradient_edge", "increment_version",
           "saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks",
           "register_multi_grad_hook", "allow_mutation_on_saved_tensors"]


def get_gradient_edge(tensor: Tensor) -> GradientEdge:
    """Get the gradient edge for computing the gradient of the given Tensor.

    In particular, it is equivalent to call
    ``g = autograd.grad(loss, input)`` and ``g = autograd.grad(loss, get_gradient_edge(input))``.
    """
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that "
                           "does not require gradients")
    node, output_nr = edge_of(tensor)
    return GradientEdge(shown_as(node), output_nr)


def increment_version(tensor: Tensor | Iterable[Tensor]) -> None:
    """Update autograd metadata tracking whether the given Tensor was modified in place.

    Call it after changing a tensor's data in a way ember does not see (a kernel of your
    own writing through ``data_ptr``), so that backward detects the change to a tensor
    it saved. Can accept either a tensor, or a list of tensors.
    """
    for t in (tensor,) if isinstance(tensor, Tensor) else tensor:
        t._vc[0] += 1


class _MultiHandle:
    """Removes every hook that `register_multi_grad_hook` registered."""

    def __init__(self, handles: tuple) -> None:
        self.handles = handles

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


def register_multi_grad_hook(tensors: Sequence[Tensor],
                             fn: Callable[[Sequence[Tensor | None]], None]
                             | Callable[[Tensor], None], *,
                             mode: Literal["all", "any"] = "all") -> _MultiHandle:
    r"""Register a multi-grad backward hook.

    Under the ``"all"`` mode, the hook is called once the gradients of the tensors in
    :attr:`tensors` that the backward pass computes have been computed (as soon as the
    last of them is, among that tensor's hooks in the order registered), with a list of
    them (``None`` for a tensor whose gradient was not computed).

    Under the ``"any"`` mode, the hook is called with the first gradient computed
    among :attr:`tensors`, once per backward pass.

    The hook should not modify its arguments. Returns a handle with a method
    ``handle.remove()`` that removes the hook.
    """
    supported_modes = ("all", "any")
    if mode not in supported_modes:
        raise ValueError(f"Expects mode to be one of {supported_modes} but got {mode}")
    lock = threading.Lock()
    if mode == "all":
        # PyTorch's: a hook on each tensor; the call that completes the count of those the
        # backward pass runs (counted at its first call) calls `fn`
        nodes = [_node_of(t) for t in tensors]
        counts: dict[int, int] = {}
        buffers: dict[int, list] = {}
        expected: dict[int, int] = {}

        def inner(idx: int) -> Callable[[Tensor], None]:
            def hook(grad: Tensor) -> None:
                task = _task()
                with lock:
                    seen = counts.get(task, 0)
                    counts[task] = seen + 1
                    if not seen:
                        buffers[task] = [None] * len(tensors)
                        expected[task] = sum(node is not None and will_engine_execute_node(node)
                                             for node in nodes)
                buffers[task][idx] = grad
                if seen == expected[task] - 1:
                    del counts[task], expected[task]
                    fn(buffers.pop(task))
            return hook

        return _MultiHandle(tuple(t.register_hook(inner(i)) for i, t in enumerate(tensors)))
    ran: set[int] = set()

    def wrapped(grad: Tensor) -> None:
        task = _task()
        with lock:
            if task in ran:
                return
            ran.add(task)
        queue_callback(lambda: ran.discard(task))
        fn(grad)

    return _MultiHandle(tuple(t.register_hook(wrapped) for t in tensors if t.requires_grad))


def _node_of(t: Tensor) -> Node | None:
    """A tensor's grad_fn, or its AccumulateGrad node where it is a leaf (None where it
    needs no gradient)."""
    edge = edge_of(t)
    return None if edge is None else edge[0]


def _task() -> int:
    task = current_graph_task_id()
    if task == -1:
        raise AssertionError("expected this hook to be called inside a backward call")
    return task


class saved_tensors_hooks:  # noqa: N801 - PyTorch's name
    r"""Context manager: every tensor an op saves for backward inside it is kept as
    ``pack_hook(tensor)``, and given back to the backward pass as
    ``unpack_hook(packed)`` (which must return a tensor of the saved one's values).

    Args:
        pack_hook (Callable): tensor -> anything.
        unpack_hook (Callable): what ``pack_hook`` returned -> a tensor.

    Example::

        >>> with ember.autograd.graph.saved_tensors_hooks(lambda x: x * 1, lambda x: x):
        ...     y = a * b
    """

    def __init__(self, pack_hook: Callable[[Tensor], Any],
                 unpack_hook: Callable[[Any], Tensor]) -> None:
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self) -> saved_tensors_hooks:
        if _disabled is not None:
            raise RuntimeError(_disabled)
        _graph.saved_tensors_hooks.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc: object) -> None:
        _graph.saved_tensors_hooks.pop()


class save_on_cpu(saved_tensors_hooks):  # noqa: N801 - PyTorch's name
    r"""Context manager: tensors saved for backward are kept on the CPU (copied back to
    their device for the backward pass).

    Args:
        pin_memory (bool): keep the copies in page-locked memory.
        device_type (str): the accelerator whose tensors are moved (PyTorch's argument;
            every non-CPU tensor is moved here).
    """

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack(tensor: Tensor) -> tuple:
            if tensor.device.type == "cpu":
                return tensor.device, tensor
            cpu = tensor.to("cpu")
            return tensor.device, cpu.pin_memory() if pin_memory else cpu

        def unpack(packed: tuple) -> Tensor:
            device, tensor = packed
            return tensor.to(device, non_blocking=pin_memory)

        super().__init__(pack, unpack)


_disabled: str | None = None


class disable_saved_tensors_hooks:  # noqa: N801 - PyTorch's name
    """Context manager: entering a `saved_tensors_hooks` inside it raises RuntimeError
    with `error_message`."""

    def __init__(self, error_message: str) -> None:
        self.error_message = error_message

    def __enter__(self) -> None:
        global _disabled
        self.previous, _disabled = _disabled, self.error_message

    def __exit__(self, *exc: object) -> None:
        global _disabled
        _disabled = self.previous


_mutation_allowed = False
_OUTSIDE = ("Trying to backward outside of the 'allow_mutation_on_saved_tensors' context"
            "in which the graph was originally recorded.")


class _AllowMutationOnSavedContext:
    """The state of one `allow_mutation_on_saved_tensors` region: the copies of the
    tensors saved inside it, dropped when it exits."""

    def __init__(self) -> None:
        self.cloned: dict[int, Tensor] = {}

    def clear(self) -> None:
        self.cloned.clear()


@contextlib.contextmanager
def allow_mutation_on_saved_tensors() -> Iterator[_AllowMutationOnSavedContext]:
    """Context manager under which mutating tensors saved for backward is allowed.

    Under this context manager, tensors saved for backward keep the values they had when
    saved, so the original version is used during backward (ember copies each saved
    tensor when it is saved; PyTorch copies it when it is first mutated). Normally,
    mutating a tensor saved for backward will result in an error raised when it's used
    during backward. Both the forward and backward should be run under the same context
    manager.

    Example::

        >>> with ember.autograd.graph.allow_mutation_on_saved_tensors():
        ...     a = ember.ones(2, 3, requires_grad=True)
        ...     b = a.clone()
        ...     out = (b**2).sum()
        ...     b.sin_()
        ...     out.sum().backward()
    """
    global _mutation_allowed
    ctx = _AllowMutationOnSavedContext()

    def pack(tensor: Tensor) -> int:
        key = len(ctx.cloned)
        with no_grad():
            ctx.cloned[key] = tensor.detach().clone()
        return key

    def unpack(key: int) -> Tensor:
        if not _mutation_allowed or key not in ctx.cloned:
            raise AssertionError(_OUTSIDE)
        return ctx.cloned[key]

    with saved_tensors_hooks(pack, unpack):
        try:
            if _mutation_allowed:
                raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be nested")
            _mutation_allowed = True
            yield ctx
        finally:
            ctx.clear()
            _mutation_allowed = False
