"""`torch._dynamo`'s names that programs touch: `OptimizedModule` (what `compile(module)`
returns), `reset()`, `config` (`suppress_errors`, `cache_size_limit` ...), and the
decorators. ember compiles by replaying recorded kernels (ember.jit.compiled), not by
rewriting bytecode: a call that cannot be replayed runs eagerly, so there are no compile
errors to suppress and the settings are accepted for the programs that set them."""

from __future__ import annotations

from ember._dynamo import config, eval_frame, exc
from ember._dynamo.eval_frame import OptimizedModule
from ember.compiler import allow_in_graph, disable, is_compiling, reset
from ember.core.tensor import Tensor
from ember.jit.backends import explain, list_backends, lookup_backend, register_backend

__all__ = ["OptimizedModule", "allow_in_graph", "assume_constant_result", "config", "disable",
           "eval_frame", "exc", "explain", "forbid_in_graph", "graph_break", "is_compiling",
           "list_backends", "lookup_backend", "mark_dynamic", "mark_static",
           "mark_static_address", "maybe_mark_dynamic", "register_backend", "reset"]


def mark_dynamic(t, index, *, min=None, max=None) -> None:  # noqa: A002 - PyTorch's names
    """Accepted: a replay is recorded per shape, so no dimension needs marking."""


def maybe_mark_dynamic(t, index) -> None:
    """Accepted, as :func:`mark_dynamic`."""


def assume_constant_result(fn):
    """Marks `fn`'s result as a constant while tracing (PyTorch's attribute on it); in
    eager code and in ember's replays, `fn` runs as it is."""
    fn._dynamo_marked_constant = True
    return fn


def forbid_in_graph(fn):
    """Marks `fn` as not to be traced (PyTorch's attribute on it); `fn` runs as it is."""
    fn._dynamo_forbidden = True
    return fn


def graph_break() -> None:
    """Ends the traced region here under PyTorch's compiler; nothing to do eagerly."""


def mark_static(t, index=None) -> None:
    """Accepted: a replay is recorded per shape already."""


def mark_static_address(t, guard: bool = False) -> None:
    """Marks `t`'s address as constant across calls (for CUDA graphs), as PyTorch does: by
    an attribute on the tensor. A replay reads its inputs where they are, so nothing else
    is needed.
    """
    if not isinstance(t, Tensor):
        raise TypeError(f"mark_static_address expects a tensor but received {type(t)}")
    t._dynamo_static_input_type = "guarded" if guard else "unguarded"
