"""`ember.compile`: a function (a whole training step included) replayed as the kernels
it runs, without Python dispatch.

How a call goes, per *guard key* (the tensors' shapes, dtypes, devices and
`requires_grad`, the other arguments, grad mode, and the training flags and optimizer
hyperparameters the function can see):

1. the first call runs eagerly (a warm-up: optimizers make their state, `.grad`s appear);
2. the next two run eagerly while a kernel tape records (`ember.jit.tape`). If both tapes
   ran the same kernels on operands from the same places with the same plain values, the
   Python around the kernels does not change what runs, and the tape becomes a replay;
   otherwise they are recorded again, up to a limit, then the key stays eager;
3. later calls replay: one generated function calls the kernels of the tape's plan
   (ember.jit.plan: elementwise chains fused, dead buffers reused) in order. Tensors the
   recorded call left behind (new `.grad`s, rebound buffers) are pointed at the replay's
   buffers; the returned tensors are new tensors on them.

What is not replayed, and stays eager (always correct, never faster): a call that reads
a tensor's value into Python (`.item()`, `print`, `if loss > 0`), moves tensors between
devices, makes a shape from the data (`nonzero`), runs an op its backend lacks, or
returns a tensor that requires grad (autograd would have to go through the replay: use
`ember.compile` on a whole step, forward, backward and update, for speed).

Python side effects inside the function (appending to a list, a counter) happen on the
eager calls only, as with CUDA graphs. `compiled.explain()` says what each key does.
"""

from __future__ import annotations

import functools
import sys
import weakref
from collections.abc import Callable
from typing import Any

import ember
from ember.amp import autocast_mode
from ember.core import grad_mode, tracing
from ember.core.tensor import Tensor
from ember.jit.graph import leaves, map_leaves
from ember.jit.plan import make_plan
from ember.jit.tape import INPUT, SLOT, Replay, Tape, same_steps

MAX_RECORDINGS = 4  # tapes recorded under one key before it is given up as unstable
MAX_KEYS = 8  # guard keys kept per function (re-traces beyond this evict the oldest)


def _tensors(structure: Any) -> list[Tensor]:
    return [x for x in leaves(structure) if isinstance(x, Tensor)]


def _arguments(args: tuple, kwargs: dict) -> list[Tensor]:
    """The tensors among a call's arguments, in order (the usual call, positional
    tensors only, without walking the structure)."""
    if not kwargs:
        for a in args:
            if not isinstance(a, Tensor):
                break
        else:
            return list(args)
    return _tensors((args, kwargs))


class _Returned:
    """In the recorded return value, the place of its `index`-th tensor."""

    def __init__(self, index: int) -> None:
        self.index = index


def _context(fn: Callable) -> list[Any]:
    """The modules and optimizers the function can reach: its `self`, its closure's
    cells and the globals it names."""
    found = []
    target = getattr(fn, "__self__", None)
    if target is not None:
        found.append(target)
    inner = getattr(fn, "__func__", fn)
    code = getattr(inner, "__code__", None)
    for cell in getattr(inner, "__closure__", None) or ():
        try:
            found.append(cell.cell_contents)
        except ValueError:  # an empty cell
            continue
    if code is not None:
        scope = getattr(inner, "__globals__", {})
        found += [scope[n] for n in code.co_names if n in scope]
    return [obj for obj in found
            if isinstance(obj, (ember.nn.Module, ember.optim.Optimizer))]


class _Context:
    """What the guard key reads of the function's modules and optimizers, found once:
    every module's `training` flag and every optimizer's plain hyperparameters."""

    def __init__(self, fn: Callable) -> None:
        objects = _context(fn)
        self.modules = [m for obj in objects if isinstance(obj, ember.nn.Module)
                        for m in obj.modules()]
        self.groups = [g for obj in objects if isinstance(obj, ember.optim.Optimizer)
                       for g in obj.param_groups]

    def key(self) -> tuple:
        return (tuple([m.training for m in self.modules]),
                tuple([tuple([v for v in g.values() if type(v) in _PLAIN])
                       for g in self.groups]))


_PLAIN = (int, float, bool, str)


def _arguments_key(args: tuple) -> Any:
    """`_value_key(args)`, for positional tensors without a call per argument."""
    keys = []
    for x in args:
        if not isinstance(x, Tensor):
            return _value_key(args)
        keys.append((x._data.shape, x._dtype, x._device, x._requires_grad))
    return (tuple, tuple(keys))


def _value_key(x: Any) -> Any:
    if isinstance(x, Tensor):
        return (getattr(x._data, "shape", None) or tuple(x.shape), x._dtype, x._device,
                x._requires_grad)
    if isinstance(x, (list, tuple)):
        return (type(x), tuple([_value_key(v) for v in x]))
    if isinstance(x, dict):
        return (dict, tuple([(k, _value_key(v)) for k, v in x.items()]))
    try:
        hash(x)
        return x
    except TypeError:
        return (type(x), id(x))


class _Entry:
    """What one guard key does: warm up, record, replay, or stay eager (and why)."""

    def __init__(self) -> None:
        self.calls = 0
        self.recordings = 0
        self.last: Tape | None = None
        self.replay: Replay | None = None
        self.profiled: Replay | None = None
        self.outputs: Any = None  # the returned structure, tensors as (slot index, meta)
        self.rewire: list[tuple[weakref.ref, int]] = []
        self.grads: list[tuple[weakref.ref, Tensor]] = []
        self.eager_reason: str | None = None


_ALL: weakref.WeakSet = weakref.WeakSet()  # every compiled function alive, for reset()


def reset() -> None:
    """Forget what every compiled function recorded: each key warms up and records again
    (`torch.compiler.reset()`, `torch._dynamo.reset()`)."""
    for compiled in list(_ALL):
        compiled.entries.clear()
        compiled.context = None


class CompiledFunction:
    """The callable `ember.compile(fn)` returns."""

    def __init__(self, fn: Callable, fullgraph: bool = False) -> None:
        self.fn = fn
        self.fullgraph = fullgraph
        self.entries: dict[Any, _Entry] = {}
        self.context: _Context | None = None  # found on the first call
        functools.update_wrapper(self, fn, updated=())
        _ALL.add(self)

    def _key(self, args: tuple, kwargs: dict) -> tuple:
        if self.context is None:
            self.context = _Context(self.fn)
        return (_arguments_key(args), _value_key(kwargs) if kwargs else (),
                grad_mode.state.enabled, autocast_mode.state_key(), self.context.key())

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if tracing.tape is not None or tracing.active is not None or \
                tracing.value_read is not None:
            return self.fn(*args, **kwargs)  # inside a recording, a trace or a capture
        key = self._key(args, kwargs)
        entry = self.entries.get(key)
        if entry is None:
            if len(self.entries) >= MAX_KEYS:
                self.entries.pop(next(iter(self.entries)))
            entry = self.entries[key] = _Entry()
        if entry.replay is not None:
            return self._replay(entry, _arguments(args, kwargs))
        if key[3]:  # autocast is on around the call: its cache of cast weights lives on
            entry.eager_reason = ("it is called inside an autocast region (weights cast "
                                  "once per region would be stale); put autocast inside")
        if entry.eager_reason is not None:
            return self.fn(*args, **kwargs)
        entry.calls += 1
        if entry.calls == 1:  # the warm-up
            return self.fn(*args, **kwargs)
        return self._record(entry, args, kwargs)

    def _record(self, entry: _Entry, args: tuple, kwargs: dict) -> Any:
        inputs = _tensors((args, kwargs))
        tape = Tape(inputs)
        tracing.tape = tape
        try:
            out = self.fn(*args, **kwargs)
        finally:
            tracing.tape = None
        entry.recordings += 1
        returned = _tensors(out)
        reason = tape.refusal
        if reason is None and any(_graph_alive(t, tape) for t in returned):
            reason = ("it returns a tensor that requires grad (autograd would go through "
                      "the replay); compile the whole step, backward included")
        if reason is None and entry.last is not None and not same_steps(entry.last, tape):
            reason = None if entry.recordings < MAX_RECORDINGS else (
                "the kernels it runs change from call to call")
            if reason is None:
                entry.last = tape
                return out
        if reason is not None:
            entry.eager_reason = reason
            entry.last = None
            if self.fullgraph:
                raise RuntimeError(f"ember.compile(fullgraph=True): "
                                   f"{getattr(self.fn, '__name__', 'the function')} cannot "
                                   f"be replayed: {reason}")
            return out
        if entry.last is None:
            entry.last = tape  # the first recording: the second must agree with it
            return out
        self._finish(entry, tape, out)
        return out

    def _finish(self, entry: _Entry, tape: Tape, out: Any) -> None:
        specs = []
        def place(x: Any) -> Any:
            if not isinstance(x, Tensor):
                return x
            specs.append((tape.spec_of(x), x._dtype, x._device, x._backend))
            return _Returned(len(specs) - 1)
        entry.outputs = map_leaves(out, place)
        # The returned tensors are the caller's (kept in a list of losses, say): each
        # replay returns new ones, and these keep the values they have.
        returned = {id(t) for t in _tensors(out)}
        entry.rewire = [(ref, slot) for ref, slot in tape.escaped()
                        if id(ref()) not in returned]
        entry.grads = tape.grads()
        slots = sorted({s for _, s in entry.rewire}
                       | {spec[1] for spec, *_ in specs if spec[0] == SLOT})
        entry.slots = slots
        entry.specs = specs
        # the plan reads the recorded buffers once; the tape (and so they) is not kept
        entry.plan = make_plan(tape, slots)
        entry.replay = Replay(entry.plan.steps, slots)
        entry.last = None

    def _replay(self, entry: _Entry, inputs: list[Tensor]) -> Any:
        buffers = [t._data for t in inputs]
        profiler = _profiler()
        if profiler is None:
            values = entry.replay.run(buffers)
        else:
            if entry.profiled is None:
                entry.profiled = Replay(entry.plan.steps, entry.slots, profiled=True)
            r = profiler.enter_range(f"ember.compile: {getattr(self.fn, '__name__', 'fn')}")
            values = entry.profiled.run(buffers, profiler)
            profiler.exit_range(r)
        by_slot = dict(zip(entry.slots, values))
        for ref, grad in entry.grads:
            t = ref()
            if t is not None:
                t._grad = grad
        for ref, slot in entry.rewire:
            t = ref()
            if t is not None:
                t._data = by_slot[slot]
                t._vc[0] += 1
        made = []
        for spec, dtype, device, backend in entry.specs:
            kind, value = spec
            if kind == SLOT:  # a buffer the replay made: a new tensor on it
                made.append(Tensor._make(by_slot[value], dtype, device, backend))
            elif kind == INPUT:  # an argument, returned as it is
                made.append(inputs[value])
            else:  # OWNER: a tensor that lived before the call, itself
                made.append(value)
        if type(entry.outputs) is _Returned:  # one tensor returned (a forward)
            return made[0]
        return map_leaves(entry.outputs,
                          lambda x: made[x.index] if isinstance(x, _Returned) else x)

    def explain(self) -> str:
        """What each guard key does: replayed (how many kernels), eager and why, or
        still warming up."""
        lines = []
        for i, entry in enumerate(self.entries.values()):
            if entry.replay is not None:
                what = f"replayed: {entry.plan.summary()}"
            elif entry.eager_reason is not None:
                what = f"eager: {entry.eager_reason}"
            else:
                what = f"warming up ({entry.calls} calls so far)"
            lines.append(f"key {i}: {what}")
        return "\n".join(lines) or "not called yet"


class OptimizedModule(ember.nn.Module):
    """What `compile(module)` returns, as PyTorch's `torch._dynamo.eval_frame.
    OptimizedModule`: a module holding the original as `_orig_mod` (so its state_dict keys
    start with `_orig_mod.`), whose calls run the original's `__call__` (hooks included)
    compiled. Attributes are the original's: `compiled.fc1`, `compiled.training`, and
    setting one sets it there.
    """

    _opt_mod_attributes = frozenset({"_orig_mod", "dynamo_ctx", "forward", "_forward",
                                     "__dict__", "_super_module_initialized"})

    def __init__(self, mod: ember.nn.Module, dynamo_ctx: Any = False) -> None:
        # first: attribute reads and writes on `self` go to `_orig_mod`
        object.__setattr__(self, "_orig_mod", mod)
        self._super_module_initialized = False
        super().__init__()
        self._super_module_initialized = True
        self._orig_mod = mod  # registered as the child module `_orig_mod`
        self.dynamo_ctx = dynamo_ctx  # ember's: the compile options (`fullgraph`)
        self._initialize()

    def _initialize(self) -> None:
        self.forward = _compiled(self._orig_mod.__call__, self.dynamo_ctx)

    def __reduce__(self) -> tuple:
        return (self.__class__, (self._orig_mod, self.dynamo_ctx))

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("forward", None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__ = state
        self._initialize()

    @property
    def training(self) -> bool:  # type: ignore[override]
        return self._orig_mod.training

    @training.setter
    def training(self, value: bool) -> None:
        # Module.__init__ sets its default: the original's flag is the one mirrored
        if self.__dict__.get("_super_module_initialized"):
            self._orig_mod.training = value

    def __getattr__(self, name: str) -> Any:
        if name == "_orig_mod":
            return self._modules["_orig_mod"]
        return getattr(self._orig_mod, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if hasattr(type(self), name) or name in OptimizedModule._opt_mod_attributes:
            return super().__setattr__(name, value)
        return setattr(self._orig_mod, name, value)

    def __delattr__(self, name: str) -> None:
        if hasattr(type(self), name) or name in OptimizedModule._opt_mod_attributes:
            return super().__delattr__(name)
        return delattr(self._orig_mod, name)

    def __dir__(self) -> list[str]:
        mine = self._orig_mod.__dir__()
        return mine + [a for a in super().__dir__() if a not in mine]


OptimizedModule.__module__ = "ember._dynamo.eval_frame"  # where PyTorch has it


def _graph_alive(t: Tensor, tape: Tape) -> bool:
    """Whether autograd could still go back through `t` (no backward in the call released
    its graph): then the caller may need the graph a replay cannot give."""
    node = t._node
    return node is not None and id(node) not in tape.spent_nodes


def _profiler() -> Any:
    module = sys.modules.get("ember.profiler.recorder")
    rec = getattr(module, "current", None) if module is not None else None
    return rec if rec is not None and getattr(rec, "recording", False) else None


def compile(model: Callable | None = None, *, fullgraph: bool = False, dynamic: Any = None,  # noqa: A001
            backend: Any = "inductor", mode: str | None = None, options: Any = None,
            disable: bool = False) -> Any:
    """Compile a function or a module (PyTorch's `torch.compile` signature).

    Calls replay the kernels the function ran, without Python dispatch, once two
    recorded calls agree; see the module's documentation for what stays eager.

    Args:
        model: a function of tensors (a whole training step: forward, loss, backward and
            optimizer step, for the largest gain), returned as a compiled function; or an
            ``nn.Module``, returned wrapped in an `OptimizedModule` (its calls compiled,
            the module itself unchanged), as PyTorch's. Without it, a decorator.
        fullgraph: raise instead of running eagerly when a call cannot be replayed.
        backend: a name (``"inductor"``, the default, ``"eager"``, ``"aot_eager"``,
            ``"cudagraphs"``: all run ember's replay) or a custom backend,
            ``backend(gm, example_inputs) -> callable``, given the fx GraphModule of each
            (re)compiled call (ember.jit.backends); an unknown name raises InvalidBackend.
        dynamic, mode, options: accepted for PyTorch's signature (shapes are static: a
            new shape compiles again, as with ``dynamic=False``).
        disable: return `model` unchanged.
    """
    if model is None:
        return lambda m: compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                                 mode=mode, options=options, disable=disable)
    from ember.jit.backends import lookup_backend

    backend = lookup_backend(backend)
    if disable:
        return model
    options = CompileOptions(fullgraph, None if isinstance(backend, str) else backend)
    if isinstance(model, ember.nn.Module):
        return OptimizedModule(model, options)
    if not callable(model):
        raise RuntimeError(f"ember.compile: expected a function or an nn.Module, got "
                           f"{type(model).__name__}")
    return _compiled(model, options)


class CompileOptions:
    """`OptimizedModule.dynamo_ctx`: what `compile` was asked for (a custom backend, or
    None for ember's replay)."""

    def __init__(self, fullgraph: bool = False, backend: Callable | None = None) -> None:
        self.fullgraph = fullgraph
        self.backend = backend

    def __bool__(self) -> bool:  # (older pickles hold the bare `fullgraph` flag)
        return self.fullgraph


def _compiled(fn: Callable, options: Any) -> Any:
    """The compiled callable for `fn`: a custom backend's, or ember's replay."""
    backend = getattr(options, "backend", None)
    if backend is not None:
        from ember.jit.backends import BackendCompiledFunction

        return BackendCompiledFunction(fn, backend, bool(options))
    return CompiledFunction(fn, bool(options))
