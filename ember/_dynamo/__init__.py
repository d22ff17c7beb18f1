"""`torch._dynamo`'s names that programs touch: `OptimizedModule` (what `compile(module)`
returns), `reset()`, `config` (`suppress_errors`, `cache_size_limit` ...), and the
decorators. ember compiles by replaying recorded kernels (ember.jit.compiled), not by
rewriting bytecode: a call that cannot be replayed runs eagerly, so there are no compile
errors to suppress and the settings are accepted for the programs that set them."""

from __future__ import annotations

from ember._dynamo import config, eval_frame, exc
from ember._dynamo.eval_frame import OptimizedModule
from ember.compiler import allow_in_graph, disable, is_compiling, reset
from ember.jit.backends import explain, list_backends, lookup_backend, register_backend

__all__ = ["OptimizedModule", "allow_in_graph", "config", "disable", "eval_frame", "exc", "explain",
           "is_compiling", "list_backends", "lookup_backend", "mark_dynamic", "mark_static",
           "register_backend", "reset"]


def mark_dynamic(t, index, *, min=None, max=None) -> None:  # noqa: A002 - PyTorch's names
    """Accepted: a replay is recorded per shape, so no dimension needs marking."""


def mark_static(t, index=None) -> None:
    """Accepted: a replay is recorded per shape already."""
