"""`torch.compile(fn, backend=...)`: the named backends and custom backend functions.

A string backend (`"inductor"`, `"eager"`, `"aot_eager"`, `"cudagraphs"`, or one added with
`register_backend`) runs ember's kernel replay (ember.jit.compiled); an unknown name is
refused as PyTorch refuses it. A callable backend is PyTorch's *custom backend*:
`backend(gm, example_inputs) -> callable`, called once per guard key (new shapes, dtypes,
grad mode, training flags: dynamo's recompilation with `dynamic=False`) with the fx
GraphModule of the call, as dynamo hands it over:

- its placeholders are the call's tensors: the parameters and buffers it reads, lifted
  (`L_self_modules_fc_parameters_weight_`), and the user's inputs (`L_x_`), in the order
  the ops first read them; `example_inputs` are those tensors;
- its nodes are the torch functions, methods and operators the call ran
  (`torch._C._nn.linear`, `torch.relu`, `operator.add`, `view`); it returns a tuple.

Later calls with the same key run the returned callable on the same kind of inputs. The
graph is recorded by running the call once (ember.fx._capture), so a call that reads a
tensor's value into Python or runs backward (where dynamo breaks the graph) is not
handed to the backend: that key runs eagerly (`fullgraph=True`: an error).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import ember
from ember.core import tracing
from ember.core.tensor import Tensor
from ember.utils import _pytree as pytree

__all__ = ["BackendCompiledFunction", "ExplainOutput", "InvalidBackend", "explain",
           "list_backends", "lookup_backend", "register_backend"]

_REPLAY_BACKENDS = {"inductor", "eager", "aot_eager", "cudagraphs", "aot_eager_decomp_partition",
                    "aot_ts", "openxla", "tvm", "onnxrt"}
_LISTED = ["cudagraphs", "inductor", "openxla", "tvm"]  # what torch 2.13 lists on a CPU build
_REGISTERED: dict[str, Callable[..., Any]] = {}


class InvalidBackend(RuntimeError):
    """`torch._dynamo.exc.InvalidBackend`: `torch.compile` was given an unknown name."""

    def __init__(self, name: str) -> None:
        super().__init__(f"Invalid backend: {name!r}, see `torch._dynamo.list_backends()` "
                         "for available backends.")


InvalidBackend.__module__ = "ember._dynamo.exc"


def list_backends(exclude_tags: Any = ("debug", "experimental")) -> list[str]:
    """The backend names `torch.compile` accepts (PyTorch's list, plus registered ones)."""
    return sorted(set(_LISTED) | set(_REGISTERED))


def register_backend(compiler_fn: Callable[..., Any] | None = None, name: str | None = None,
                     tags: Any = ()) -> Any:
    """Register a custom backend under `name` (default: the function's name), so
    `torch.compile(m, backend="name")` finds it; usable as a decorator."""
    if compiler_fn is None:
        return lambda fn: register_backend(fn, name=name, tags=tags)
    _REGISTERED[name or compiler_fn.__name__] = compiler_fn
    return compiler_fn


def lookup_backend(backend: Any) -> Any:
    """A registered backend function for `backend`'s name, `backend` itself if it is a
    callable, or the name of a built-in one (ember replays those); else InvalidBackend."""
    if callable(backend):
        return backend
    if backend in _REGISTERED:
        return _REGISTERED[backend]
    if isinstance(backend, str) and backend in _REPLAY_BACKENDS:
        return backend
    raise InvalidBackend(backend)


# -- what dynamo's graph holds ------------------------------------------------------------
def dynamo_target(op: Any, name: str, args: tuple = (), kwargs: dict | None = None,
                  method: bool = False) -> tuple[str, Any, str | None]:
    """How dynamo records a call of declared op `op` entered as `name`: a torch function
    (`torch.relu`, `torch._C._nn.linear`), an operator (`operator.add`), or a Tensor
    method (`view`) when torch has no function of that name."""
    import ember.nn.functional as F
    from ember.fx._names import _c_submodule_path, qualified_name
    from ember.fx._patching import _op_target

    target = _op_target(op, name)
    if getattr(target, "__module__", "") == "_operator":
        return "call_function", target, None
    called = name.lstrip("_") if name.startswith("__") else name
    if method:
        return "call_method", called, None
    if getattr(ember, called, None) is target or _c_submodule_path(target) is not None:
        return "call_function", target, None
    functional = getattr(F, op.name, None)
    functional = getattr(functional, "__fx_orig__", functional)
    if functional is not None and qualified_name(functional).startswith("torch._C._nn."):
        return "call_function", functional, None
    if hasattr(Tensor, called):
        return "call_method", called, None
    return "call_function", target, None  # an op of ember's own (its module's path)


def _source_name(prefix: str, path: str, kind: str) -> str:
    """Dynamo's placeholder for a module's tensor: ``L_self_modules_fc_parameters_weight_``."""
    *mods, leaf = path.split(".")
    parts = [prefix] + [f"modules_{m}" for m in mods] + [f"{kind}_{leaf}"]
    return "_".join(parts) + "_"


def _argument_names(fn: Callable[..., Any], args: tuple, kwargs: dict) -> list[tuple[str, Any]]:
    """(name, value) of each argument as the function's signature names it."""
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return [(f"args_{i}", a) for i, a in enumerate(args)] + list(kwargs.items())
    named = []
    for name, value in bound.arguments.items():
        param = bound.signature.parameters[name]
        if param.kind is inspect.Parameter.VAR_POSITIONAL:
            named += [(f"{name}_{i}", v) for i, v in enumerate(value)]
        elif param.kind is inspect.Parameter.VAR_KEYWORD:
            named += list(value.items())
        else:
            named.append((name, value))
    return named


class _Graph:
    """One guard key's compiled graph: the backend's callable and where its inputs come
    from (an index into the call's flattened arguments, or a module's tensor)."""

    def __init__(self, compiled: Callable[..., Any], sources: list[Any], out_spec: Any,
                 out_leaves: list[Any]) -> None:
        self.compiled = compiled
        self.sources = sources
        self.out_spec = out_spec
        self.out_leaves = out_leaves  # the returned structure's leaves (None: a tensor)


class _Segmented:
    """A guard key whose calls break into several graphs (dynamo's graph breaks): the
    graphs the backend was given, by their code and input shapes."""

    def __init__(self) -> None:
        self.seen: set[Any] = set()
        self.reasons: list[str] = []  # why the first call's graphs broke


class BackendCompiledFunction:
    """What `torch.compile(fn, backend=my_backend)` returns for a callable backend."""

    def __init__(self, fn: Callable[..., Any], backend: Callable[..., Any],
                 fullgraph: bool = False) -> None:
        import functools

        from ember.jit.compiled import _ALL, _Context

        self.fn = fn
        self.backend = backend
        self.fullgraph = fullgraph
        self.entries: dict[Any, Any] = {}  # guard key -> _Graph, _Segmented, or why eager
        self.context: Any = None
        self._context_type = _Context
        functools.update_wrapper(self, fn, updated=())
        _ALL.add(self)

    def _key(self, args: tuple, kwargs: dict) -> tuple:
        from ember.amp import autocast_mode
        from ember.core import grad_mode
        from ember.jit.compiled import _value_key

        if self.context is None:
            self.context = self._context_type(self.fn)
        return (_value_key(args), _value_key(kwargs), grad_mode.state.enabled,
                autocast_mode.state_key(), self.context.key())

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if tracing.value_read is not None or tracing.active is not None:
            return self.fn(*args, **kwargs)  # inside a capture or a trace: inlined
        from ember.jit.compiled import MAX_KEYS

        key = self._key(args, kwargs)
        entry = self.entries.get(key)
        if entry is None:
            if len(self.entries) >= MAX_KEYS:
                self.entries.pop(next(iter(self.entries)))
            return self._compile(key, args, kwargs)
        if isinstance(entry, str):
            return self.fn(*args, **kwargs)
        if isinstance(entry, _Segmented):
            return self._segmented(entry, args, kwargs)
        flat = pytree.tree_leaves((args, kwargs))
        inputs = [flat[s] if isinstance(s, int) else s for s in entry.sources]
        result = entry.compiled(*inputs)
        results = iter(result)
        leaves = [next(results) if leaf is None else leaf for leaf in entry.out_leaves]
        return pytree.tree_unflatten(leaves, entry.out_spec)

    def _capture(self, args: tuple, kwargs: dict) -> tuple[Any, Any]:
        """Run the call once, recording it (graph breaks allowed): (capture, result)."""
        from ember.fx._capture import Capture

        capture = Capture(dynamo_target, breaks=not self.fullgraph, variable_names=True)
        owner = getattr(self.fn, "__self__", None)
        signed = owner.forward if isinstance(owner, ember.nn.Module) else self.fn
        for name, value in _argument_names(signed, args, kwargs):
            leaves = pytree.tree_leaves(value)
            for j, leaf in enumerate(leaves):
                if isinstance(leaf, Tensor):
                    suffix = "" if len(leaves) == 1 and leaf is value else f"_{j}"
                    capture.lift(leaf, f"L_{name}{suffix}_", type(leaf))
        for prefix, module in self._modules():
            for path, p in module.named_parameters(remove_duplicate=False):
                capture.lift(p, _source_name(prefix, path, "parameters"), type(p), early=True)
            for path, b in module.named_buffers(remove_duplicate=False):
                capture.lift(b, _source_name(prefix, path, "buffers"), type(b), early=True)
        return capture, capture.run(self.fn, *args, **kwargs)

    def _compile(self, key: Any, args: tuple, kwargs: dict) -> Any:
        from ember.fx.graph_module import GraphModule

        capture, out = self._capture(args, kwargs)
        if capture.broken is not None:
            if self.fullgraph:
                raise RuntimeError(f"torch.compile(fullgraph=True): "
                                   f"{getattr(self.fn, '__name__', 'the function')} "
                                   f"cannot be one graph: {capture.broken}")
            self.entries[key] = capture.broken
            return out
        out_leaves, out_spec = pytree.tree_flatten(out)
        tensors = [t for t in out_leaves if isinstance(t, Tensor)]
        segments = capture.finish(tensors)
        if len(segments) > 1:  # graph breaks: each call runs eagerly, as recorded
            self.entries[key] = _Segmented()
            self.entries[key].reasons = [s.reason for s in segments if s.reason]
            self._hand_over(self.entries[key], capture, segments)
            return out
        gm = GraphModule(dict(capture.constants), capture.graph)
        flat = pytree.tree_leaves((args, kwargs))
        index = {id(x): i for i, x in enumerate(flat) if isinstance(x, Tensor)}
        sources = [index.get(id(t), t) for _, t in capture.placeholders]
        compiled = self._backend(gm, [t for _, t in capture.placeholders])
        self.entries[key] = _Graph(compiled, sources, out_spec,
                                   [None if isinstance(x, Tensor) else x for x in out_leaves])
        return out

    def _backend(self, gm: Any, example_inputs: list[Tensor]) -> Callable[..., Any]:
        compiled = self.backend(gm, example_inputs)
        if not callable(compiled):
            raise RuntimeError(f"backend={getattr(self.backend, '__name__', self.backend)!r} "
                               f"returned {type(compiled).__name__}, not a callable")
        return compiled

    def _segmented(self, entry: _Segmented, args: tuple, kwargs: dict) -> Any:
        """A call of a key whose calls break into several graphs: run it eagerly while
        recording, and hand the backend each graph it has not seen (a branch not taken
        before, as dynamo compiles the resumed code of each branch)."""
        capture, out = self._capture(args, kwargs)
        if capture.broken is None:
            tensors = [t for t in pytree.tree_leaves(out) if isinstance(t, Tensor)]
            self._hand_over(entry, capture, capture.finish(tensors))
        return out

    def _hand_over(self, entry: _Segmented, capture: Any, segments: list[Any]) -> None:
        from ember.fx.graph_module import GraphModule

        for segment in segments:
            if not any(n.op.startswith("call_") for n in segment.graph.nodes):
                continue  # (dynamo compiles no empty graph)
            gm = GraphModule(dict(capture.constants), segment.graph)
            inputs = [t for _, t in segment.placeholders]
            seen = (gm.code, tuple((tuple(t.shape), t.dtype) for t in inputs))
            if seen not in entry.seen:
                entry.seen.add(seen)
                self._backend(gm, inputs)

    def _modules(self) -> list[tuple[str, Any]]:
        """The modules the function reads, with dynamo's source prefix: `L_self` for a
        module's own forward, `L_<name>` for a closure's, `G_<name>` for a global's."""
        found = []
        owner = getattr(self.fn, "__self__", None)
        if isinstance(owner, ember.nn.Module):
            found.append(("L_self", owner))
        inner = getattr(self.fn, "__func__", self.fn)
        code = getattr(inner, "__code__", None)
        if code is None:
            return found
        for name, cell in zip(code.co_freevars, getattr(inner, "__closure__", None) or ()):
            try:
                value = cell.cell_contents
            except ValueError:
                continue
            if isinstance(value, ember.nn.Module):
                found.append((f"L_{name}", value))
        scope = getattr(inner, "__globals__", {})
        found += [(f"G_{n}", scope[n]) for n in code.co_names
                  if isinstance(scope.get(n), ember.nn.Module)]
        return found

    def explain(self) -> str:
        """What each guard key does: a graph handed to the backend, or eager and why."""
        lines = [f"key {i}: " + (f"eager: {e}" if isinstance(e, str) else
                                 f"eager, {len(e.seen)} graphs (graph breaks) given to the "
                                 "backend" if isinstance(e, _Segmented) else
                                 "compiled by the backend")
                 for i, e in enumerate(self.entries.values())]
        return "\n".join(lines) or "not called yet"


class ExplainOutput:
    """What `torch._dynamo.explain(fn)(*args)` returns: the graphs a call makes, their
    ops, and why the call could not be one graph (ember runs such a call eagerly)."""

    def __init__(self, graphs: list[Any], break_reasons: list[str]) -> None:
        from ember.fx._names import target_str

        self.graphs = graphs
        self.graph_count = len(graphs)
        self.graph_break_count = len(break_reasons)
        self.break_reasons = break_reasons
        self.ops_per_graph = [[n.target for n in gm.graph.nodes
                               if n.op in ("call_function", "call_method", "call_module")]
                              for gm in graphs]
        self.op_count = sum(len(ops) for ops in self.ops_per_graph)
        self.out_guards: list[Any] = []
        self.compile_times = ""
        self._target_str = target_str

    def __str__(self) -> str:
        lines = [f"Graph Count: {self.graph_count}",
                 f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}", "Break Reasons:"]
        lines += [f"  Break Reason {i + 1}:\n    Reason: {r}"
                  for i, r in enumerate(self.break_reasons)]
        lines.append("Ops per Graph:")
        for i, ops in enumerate(self.ops_per_graph):
            lines.append(f"  Ops {i + 1}:")
            lines += [f"    {self._target_str(op)}" for op in ops]
        return "\n".join(lines) + "\n"


def explain(f: Callable[..., Any], *extra_args: Any, **extra_kwargs: Any) -> Any:
    """`torch._dynamo.explain(f)(*args, **kwargs)`: capture one call of `f` and describe
    it as an :class:`ExplainOutput` (the call runs once, eagerly)."""
    def inner(*args: Any, **kwargs: Any) -> ExplainOutput:
        graphs: list[Any] = []

        def keep(gm: Any, example_inputs: list[Any]) -> Any:
            graphs.append(gm)
            return gm.forward
        compiled = BackendCompiledFunction(f, keep)
        compiled(*extra_args, *args, **extra_kwargs, **kwargs)
        reasons = [r for e in compiled.entries.values()
                   for r in ([e] if isinstance(e, str) else getattr(e, "reasons", []))]
        return ExplainOutput(graphs, reasons)
    return inner
