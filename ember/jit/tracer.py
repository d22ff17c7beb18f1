"""`ember.jit.trace`: run a forward once, record it as a Graph, and replay it."""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable
from typing import Any

import ember
from ember.core import tracing
from ember.core.dispatch import run, run_creation, run_inplace
from ember.core.placement import resolve
from ember.jit.code import python_code
from ember.jit.graph import Graph, Node, Value
from ember.jit.graph import leaves as _leaves
from ember.jit.graph import map_leaves as _map


def _makes_view(op: str, attrs: dict) -> bool:
    """Whether a primitive's output shares its input's storage (see ember.core.ops)."""
    if op in ("permute", "expand", "strided_view"):
        return True
    if op == "reshape":
        return not attrs.get("copy", True)
    if op == "getitem":
        return all(entry[0] != "tensor" for entry in attrs["index"])
    return False


class TracerWarning(UserWarning):
    """The trace may not generalise (a tensor's value was read into Python)."""


class _Recorder:
    """Receives the hooks of ember.core.tracing and builds the graph."""

    def __init__(self, names: dict[int, str]) -> None:
        self.names = names  # id(parameter or buffer) -> its dotted name
        self.values: dict[int, Value] = {}
        self.alive: list[Any] = []  # keeps traced tensors alive, so ids stay unique
        self.constants: dict[str, Value] = {}
        self.root: list[Node] = []
        self.stack: list[list[Node]] = [self.root]
        self.scopes: list[str] = []
        self.counter = 0
        self.view_of: dict[int, tuple[Any, Node]] = {}  # id(view) -> (parent, its node)

    # -- values ---------------------------------------------------------------------
    def _fresh(self) -> str:
        self.counter += 1
        return str(self.counter)

    def define(self, t: Any, kind: str, name: str | None = None) -> Value:
        value = Value(name or self._fresh(), tuple(t.shape), t.dtype, kind,
                      t if kind in ("param", "const") else None)
        self.values[id(t)] = value
        self.alive.append(t)
        return value

    def ref(self, x: Any) -> Any:
        """A tensor's current Value (a new constant if the trace has not seen it)."""
        if not isinstance(x, ember.Tensor):
            return x
        value = self.values.get(id(x))
        if value is None:
            name = self.names.get(id(x))
            if name is None:
                name = f"const_{len(self.constants)}"
                kind = "const"
            else:
                kind = "param"
            value = self.define(x, kind, name)
            self.constants[name] = value
        return value

    def _node(self, kind: str, op: str, args: tuple, kwargs: dict, **extra: Any) -> Node:
        sargs = _map(args, self.ref)
        skw = _map(kwargs, self.ref)
        inputs = [v for v in _leaves((sargs, skw)) if isinstance(v, Value)]
        node = Node(kind, op, sargs, skw, inputs, scope=self.scopes[-1] if self.scopes else "",
                    **extra)
        self.stack[-1].append(node)
        return node

    def _outputs(self, node: Node, out: Any) -> None:
        def out_ref(x: Any) -> Any:
            if isinstance(x, ember.Tensor):
                value = self.values.get(id(x))
                if value is None or value.kind != "node":
                    value = self.define(x, "node")
                return value
            return x
        node.output_structure = _map(out, out_ref)
        node.outputs = [v for v in _leaves(node.output_structure) if isinstance(v, Value)]

    # -- hooks from ember.core.tracing ---------------------------------------------
    def primitive(self, op: str, args: tuple, attrs: dict, out: Any) -> None:
        node = self._node("primitive", op, tuple(args), dict(attrs))
        if op in ("assign", "setitem"):  # in place: the target gets a new value
            value = self.define(out, "node")
            node.outputs, node.output_structure = [value], value
            self._write_back(out)
        else:
            self._outputs(node, out)
            if _makes_view(op, attrs):
                self.view_of[id(out)] = (args[0], node)

    def _write_back(self, view: Any) -> None:
        """After an in-place write to a view, give its parent (and so on up to the base) a
        new value holding the write, as ops the graph can replay and export."""
        while id(view) in self.view_of:
            parent, made = self.view_of[id(view)]
            new = self.values[id(view)]
            if made.op == "getitem":
                node = Node("primitive", "setitem", (self.ref(parent), new),
                            {"index": made.kwargs["index"], "accumulate": False},
                            [self.ref(parent), new], scope=made.scope)
            elif made.op == "reshape":
                node = Node("primitive", "reshape", (new,),
                            {"shape": tuple(parent.shape), "copy": True}, [new],
                            scope=made.scope)
            elif made.op == "permute":
                dims = made.kwargs["dims"]
                inverse = tuple(sorted(range(len(dims)), key=lambda i: dims[i]))
                node = Node("primitive", "permute", (new,), {"dims": inverse}, [new],
                            scope=made.scope)
            else:
                warnings.warn(f"ember.jit.trace: an in-place write through a view made by "
                              f"{made.op!r} cannot be recorded into its base; the trace may "
                              "differ from eager execution", TracerWarning, stacklevel=6)
                return
            self.stack[-1].append(node)
            value = self.define(parent, "node")
            node.outputs, node.output_structure = [value], value
            view = parent

    def enter(self, name: str, fn: Callable, args: tuple, kwargs: dict) -> Node:
        node = self._node("composite", name, args, kwargs, fn=fn)
        self.stack.append(node.children)
        return node

    def exit(self, node: Node, out: Any) -> None:
        self.stack.pop()
        self._outputs(node, out)

    def abandon(self, node: Node) -> None:
        self.stack.pop()

    # -- module scopes (through forward hooks) --------------------------------------
    def enter_module(self, path: str, module: Any, args: tuple) -> Node:
        self.scopes.append(path)
        node = self._node("module", type(module).__name__, args, {}, module=module)
        node.scope = path
        self.stack.append(node.children)
        return node

    def exit_module(self, node: Node, out: Any) -> None:
        self.stack.pop()
        self.scopes.pop()
        self._outputs(node, out)


class TracedModule:
    """A recorded forward: call it to replay the graph on new inputs.

    Attributes it does not have itself (`parameters()`, `state_dict()`, `eval()`,
    submodules) are the traced module's, as a PyTorch traced module shares them."""

    def __init__(self, graph: Graph, original: Any) -> None:
        from ember.jit.compiled import CompiledFunction

        self.graph = graph
        self.original = original
        self.training = False
        # The graph's replay is itself replayed as its kernels once two calls agree
        # (ember.compile): the ops' Python dispatch runs only while it records.
        self._replay = CompiledFunction(lambda *inputs: replay(graph, inputs))

    def __call__(self, *inputs: Any) -> Any:
        return self._replay(*inputs)

    forward = __call__

    def train(self, mode: bool = True) -> TracedModule:
        if isinstance(self.original, ember.nn.Module):
            self.original.train(mode)
        self.training = mode
        return self

    def eval(self) -> TracedModule:
        return self.train(False)

    def save(self, f: Any, _extra_files: Any = None) -> None:
        """`ember.jit.save(self, f)`, as PyTorch's traced module saves itself."""
        from ember.jit.script import save

        save(self, f, _extra_files)

    def __getattr__(self, name: str) -> Any:
        if name == "original":  # not set yet (while unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.original, name)

    @property
    def code(self) -> str:
        """The recorded forward as Python source (PyTorch's `traced.code`)."""
        is_module = isinstance(self.original, ember.nn.Module)
        fn = self.original.forward if is_module else self.original
        try:
            params = [p.name for p in inspect.signature(fn).parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        except (TypeError, ValueError):
            params = []
        names = params + [f"input_{i}" for i in range(len(params), len(self.graph.inputs))]
        name = "forward" if is_module else getattr(fn, "__name__", "forward")
        return python_code(self.graph, names, name=name, method=is_module)

    def __repr__(self) -> str:
        if isinstance(self.original, ember.nn.Module):
            return _script_repr(self.original)
        return f"<ember.jit.TracedFunction {getattr(self.original, '__name__', '?')}>"


def _script_repr(module: Any) -> str:
    """A traced module as PyTorch prints one: the module tree with each module's own
    arguments replaced by `original_name=<its class>`."""
    from ember.nn.module import _addindent

    name = type(module).__name__
    children = [(n, m) for n, m in module._modules.items() if m is not None]
    if not children:
        return f"{name}(original_name={name})"
    lines = [f"original_name={name}"] + [f"({n}): {_addindent(_script_repr(m), 2)}"
                                         for n, m in children]
    return name + "(\n  " + "\n  ".join(lines) + "\n)"


def trace(module_or_fn: Any, example_inputs: Any, *, check_trace: bool = True,
          strict: bool = True) -> TracedModule:
    """Run `module_or_fn(*example_inputs)` once and record its ops.

    Args:
        module_or_fn: an `ember.nn.Module` or a function of tensors.
        example_inputs: a tensor or a tuple of tensors (the positional arguments).
        check_trace: replay the graph on the example inputs and check it reproduces the
            outputs.
    """
    if tracing.active is not None:
        raise RuntimeError("ember.jit.trace: a trace is already recording (traces do not "
                           "nest)")
    inputs = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    names: dict[int, str] = {}
    modules: list[tuple[str, Any]] = []
    if isinstance(module_or_fn, ember.nn.Module):
        for name, p in module_or_fn.named_parameters(remove_duplicate=False):
            names.setdefault(id(p), name)
        for name, b in module_or_fn.named_buffers(remove_duplicate=False):
            names.setdefault(id(b), name)
        modules = [(n, m) for n, m in module_or_fn.named_modules() if n]
    recorder = _Recorder(names)
    graph_inputs = []
    for i, x in enumerate(inputs):
        if not isinstance(x, ember.Tensor):
            raise TypeError(f"ember.jit.trace: example inputs must be tensors; input {i} is a "
                            f"{type(x).__name__}")
        graph_inputs.append(recorder.define(x, "input", f"input_{i}"))

    handles = []
    open_nodes: dict[int, list[Node]] = {}
    for path, mod in modules:
        def pre(m, args, path=path):
            open_nodes.setdefault(id(m), []).append(recorder.enter_module(path, m, args))

        def post(m, args, out):
            recorder.exit_module(open_nodes[id(m)].pop(), out)
        handles.append(mod.register_forward_pre_hook(pre))
        handles.append(mod.register_forward_hook(post))

    def on_python_value(t: Any, how: str) -> None:
        what = {"item": "number", "tolist": "list", "bool": "boolean"}.get(how, how)
        warnings.warn(f"Converting a tensor to a Python {what} might cause the trace to be "
                      "incorrect. We can't record the data flow of Python values, so this "
                      "value will be treated as a constant in the future. This means that the "
                      "trace might not generalize to other inputs!", TracerWarning, stacklevel=4)

    tracing.python_value_hooks.append(on_python_value)
    tracing.active = recorder
    try:
        with ember.no_grad():
            out = module_or_fn(*inputs)
    finally:
        tracing.active = None
        tracing.python_value_hooks.remove(on_python_value)
        for h in handles:
            h.remove()
    outputs = _map(out, lambda x: recorder.ref(x) if isinstance(x, ember.Tensor) else x)
    graph = Graph(graph_inputs, recorder.root, outputs, recorder.constants)
    traced = TracedModule(graph, module_or_fn)
    if check_trace:
        again = traced(*inputs)
        for a, b in zip(_leaves(out), _leaves(again)):
            if isinstance(a, ember.Tensor) and not ember.allclose(a.float(), b.float(),
                                                                 rtol=1e-4, atol=1e-5):
                warnings.warn("ember.jit.trace: replaying the graph on the example inputs "
                              "gives different outputs (a non-deterministic op, or data-"
                              "dependent control flow?)", TracerWarning, stacklevel=2)
                break
    return traced


# -- replay ---------------------------------------------------------------------------


def replay(graph: Graph, inputs: tuple) -> Any:
    """Execute a recorded graph on new inputs (same ranks; the batch size may differ)."""
    if len(inputs) != len(graph.inputs):
        raise TypeError(f"traced function expects {len(graph.inputs)} inputs, got "
                        f"{len(inputs)}")
    env: dict[int, Any] = {}
    batch: tuple[int, int] | None = None
    for value, x in zip(graph.inputs, inputs):
        if tuple(x.shape)[1:] != value.shape[1:] or x.ndim != len(value.shape):
            raise RuntimeError(f"traced function: input %{value.name} was traced with shape "
                               f"{list(value.shape)}; got {list(x.shape)} (only the first, "
                               "batch dimension may change)")
        if value.shape and x.shape[0] != value.shape[0]:
            batch = (value.shape[0], x.shape[0])
        env[id(value)] = x
    for value in graph.constants.values():
        env[id(value)] = value.tensor
    with ember.no_grad():
        for node in graph.nodes:
            _run_node(node, env, batch)
    return _map(graph.outputs, lambda v: env[id(v)] if isinstance(v, Value) else v)


def _resize(shape: Any, batch: tuple[int, int] | None) -> Any:
    """Shapes were recorded at the traced batch size: swap in the new one (leading dim)."""
    if batch is None or not isinstance(shape, tuple) or not shape or shape[0] != batch[0]:
        return shape
    return (batch[1],) + tuple(shape[1:])


def _run_node(node: Node, env: dict, batch: tuple[int, int] | None) -> None:
    def get(x: Any) -> Any:
        return env[id(x)] if isinstance(x, Value) else x

    args = _map(node.args, get)
    kwargs = _map(node.kwargs, get)
    if node.kind == "composite" and node.fn is not None:
        out = node.fn(*args, **kwargs)
    elif node.kind == "module" or node.kind == "composite":
        for child in node.children:
            _run_node(child, env, batch)
        return
    else:
        out = _run_primitive(node, args, kwargs, batch)
    for value, result in zip(node.outputs, _leaves(out) if not isinstance(out, ember.Tensor)
                             else [out]):
        env[id(value)] = result


def _run_primitive(node: Node, args: tuple, attrs: dict, batch: tuple[int, int] | None):
    op = node.op
    if batch is not None:
        for key in ("shape",):
            if key in attrs:
                attrs = dict(attrs, **{key: _resize(attrs[key], batch)})
        if op == "getitem" and args and args[0].shape and args[0].shape[0] == batch[1]:
            spec = list(attrs["index"])
            if spec and spec[0] == ("slice", 0, batch[0], 1):
                spec[0] = ("slice", 0, batch[1], 1)
            attrs = dict(attrs, index=tuple(spec))
    if op == "reshape":  # replay is functional: a copy where a view is impossible is fine
        attrs = dict(attrs, copy=True)
    if op == "alias":  # detach()
        return args[0]
    if op == "to_device":
        return args[0].to(attrs["device"])
    if op in ("assign", "setitem"):
        target = args[0].clone()
        run_inplace(op, target, *args[1:], **attrs)
        return target
    if not args:  # creation
        device, backend = resolve(attrs.pop("device"))
        return run_creation(op, device, backend, **attrs)
    return run(op, *args, **attrs)
