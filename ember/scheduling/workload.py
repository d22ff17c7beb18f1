"""A model's step as a list of op calls with their declared costs (`Workload`).

`record_step` runs one step at the example inputs' shapes, on the model's own device, and
records every op that does work, forward and (for training) backward. It watches the op
entries (`ember.core.interpose`, the profiler's interface), not the tracer: a trace
deliberately runs the composites' decompositions (fused kernels off, so the graph can be
replayed and exported), while a plan must count what a step really runs — a fused
`linear` is one kernel, not a transpose and a matmul and an add.

- The step is a training loop's: gradients set to None, forward, the outputs' sum as
  the loss, `backward()` (the gradients the model had are put back afterwards).
- An op call that makes no nested op call is one kernel: its declared cost counts.
- A backward node whose formula ran as a fused kernel makes no op call: it is counted as
  twice its forward op's cost (the usual ratio: a matmul's backward is two matmuls), named
  "<op> backward". Every other backward op is recorded as it runs.
- Backends differ in the fused kernels they have (OpenCL runs an LSTM step by step where
  the CPU runs a whole layer in one kernel). For each other set of fused kernels among
  the devices compared, the pass is recorded again with the model's backend offering
  only those (`fused_sets`), so each device is estimated with the ops it would run.
- The optimizer's step is recorded on copies of the parameters (running it on the
  model would change its weights): SGD with momentum, as the backend runs it (one fused
  kernel, or a few list ops). A list op launches a kernel per tensor. Parameters too
  large to copy are estimated instead (`optimizer_works`).
- Each op is timed as it is recorded (the best of a few passes): on the model's own
  device, those times are the estimate of the ops' work (`Workload.seconds`).
- The pass is run once more without hooks and timed, and so is an optimizer step over
  copies of the parameters (`measured_s`): the plan takes from them how much time the
  host spends beyond the ops' launches (Python: modules, the autograd engine, the
  optimizer's bookkeeping), which is the same whichever device runs the ops.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import ember
from ember.core import dispatch, interpose
from ember.core.costmodel import OpWork, op_cost, signature
from ember.core.opdef import FUSED, Cost


def fused_set(kernels: Any) -> frozenset[str]:
    """The fused kernels among a backend's `kernels`."""
    return frozenset(k for k in FUSED if k in kernels)


@dataclass
class Workload:
    """One step of a model: its ops, the bytes it brings from the host each step, and the
    memory it needs."""

    works: list[OpWork]  # as the model's own device runs them
    input_bytes: int  # the example inputs: moved to the device every step
    param_bytes: int  # parameters and buffers: moved once
    memory_bytes: int  # parameters, gradients, optimizer state, activations
    training: bool
    source_device: str  # where the model's tensors are now
    measured_s: float | None = None  # the step (pass + optimizer), timed on the source
    own_fused: frozenset[str] = frozenset()  # the fused kernels of the model's backend
    variants: dict[frozenset[str], list[OpWork]] = field(default_factory=dict)
    """The ops recorded with only some of those fused kernels offered: fused set -> ops."""
    seconds: list[float | None] | None = None
    """Each of `works`' measured time on the source device beyond a tiny op's (its
    kernel's work: the best of a few passes, the device waited for after each op, less a
    one-element op's time); None where the formula is used instead (an op within the
    hooks' noise, `KERNEL_BOUND`; the optimizer's ops when estimated, not recorded)."""

    def works_for(self, kernels: Any) -> list[OpWork]:
        """The ops a backend with `kernels` runs: the recording made with its fused
        kernels when there is one, else the model's own device's."""
        return self.variants.get(fused_set(kernels) & self.own_fused, self.works)

    @property
    def flops(self) -> float:
        return sum(w.flops for w in self.works)

    @property
    def bytes(self) -> float:
        return sum(w.bytes for w in self.works)

    def count(self, phase: str) -> int:
        return sum(1 for w in self.works if w.phase == phase)


SPAN_S = 0.3
"""Seconds over which a step's (and its ops') best time is looked for: a burst of other
work shorter than this leaves some calls undisturbed."""


@dataclass
class _Frame:
    op: str
    nested: int = 0


@dataclass
class _Recorder:
    sync: Callable[[], None] = lambda: None  # waits for the model's device
    phase: str = "forward"
    works: list[OpWork] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)  # each work's measured time
    stack: list[_Frame] = field(default_factory=list)
    by_node: dict[int, OpWork] = field(default_factory=dict)  # id(grad_fn) -> forward op
    nodes: list[Any] = field(default_factory=list)  # keeps grad_fns alive: ids stay unique
    backward_of: list[OpWork | None] = field(default_factory=list)  # the nodes running
    activation_bytes: int = 0

    def op_hook(self, op: Any, name: str, call: Callable[[tuple, dict], Any], args: tuple,
                kwargs: dict) -> Any:
        if self.stack:
            self.stack[-1].nested += 1
        frame = _Frame(op.name)
        self.stack.append(frame)
        start = time.perf_counter()
        try:
            out = call(args, kwargs)
            if frame.nested == 0:  # a kernel: its time is the device's, waited for
                self.sync()
        finally:
            self.stack.pop()
        elapsed = time.perf_counter() - start
        if frame.nested == 0 and not _declined(op.name, args):  # it ran as one kernel
            cost = op_cost(op.name, args, kwargs)
            if not cost.flops and not cost.bytes and op.name.endswith("_backward"):
                # a fused backward kernel that declares no cost: twice its forward's, as
                # below (the forward: the node's op, else the last op of the name)
                forward = self.backward_of[-1] if self.backward_of else None
                if forward is None or f"{forward.op}_backward" != op.name:
                    forward = next((w for w in reversed(self.works)
                                    if f"{w.op}_backward" == op.name), None)
                if forward is not None:
                    cost = Cost(2 * forward.flops, 2 * forward.bytes)
            first = out[0] if isinstance(out, (tuple, list)) and out else out
            node = first.grad_fn if isinstance(first, ember.Tensor) else None
            work = OpWork(op.name, signature((*args, *kwargs.values())), cost.flops,
                          cost.bytes, self.phase,
                          records_grad=node is not None,
                          launches=_list_length(args))
            self.works.append(work)
            self.seconds.append(elapsed)
            if self.phase == "forward" and isinstance(first, ember.Tensor):
                self.activation_bytes += first.numel() * first.element_size()
            if node is not None:
                self.by_node[id(node)] = work
                self.nodes.append(node)
        return out

    def node_hook(self, node: Any, run: Callable[[], Any]) -> Any:
        before = len(self.works)
        forward = self.by_node.get(id(node))
        self.stack.append(_Frame(node.name()))
        self.backward_of.append(forward)
        start = time.perf_counter()
        try:
            result = run()
            self.sync()
        finally:
            frame = self.stack.pop()
            self.backward_of.pop()
        if frame.nested == 0 and len(self.works) == before and forward is not None:
            self.works.append(OpWork(f"{forward.op} backward", forward.signature,
                                     2 * forward.flops, 2 * forward.bytes, "backward"))
            self.seconds.append(time.perf_counter() - start)
        return result

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        # one bound method each: `remove` finds a hook by identity
        op_hook, node_hook = self.op_hook, self.node_hook
        interpose.install(op_hook, -10)  # outside the profiler and autocast
        interpose.install_backward(node_hook)
        try:
            yield
        finally:
            interpose.remove(op_hook)
            interpose.remove_backward(node_hook)


def _list_length(args: tuple) -> int:
    """The kernels an op call launches: one per tensor of a list op (the backends loop
    over the list), else one."""
    first = args[0] if args else None
    return max(1, len(first)) if isinstance(first, (list, tuple)) else 1


def fused_forward(op: str) -> tuple[str, ...]:
    """The fused kernels that do op `op`'s work in one call."""
    return tuple(k for k, f in FUSED.items() if f.replaces == op)


def _declined(op: str, args: tuple) -> bool:
    """Whether a call of a fused-kernel op found no kernel and returned without work
    (its caller then runs the decomposition, recorded op by op)."""
    kernels = fused_forward(op)
    if not kernels:
        return False
    tensors = _tensors(args)
    withheld = dispatch._withheld.get(threading.get_ident(), frozenset())
    return bool(tensors) and not any(k in tensors[0]._backend.kernels and k not in withheld
                                     for k in kernels)


def _offering_only(backend: Any, keep: frozenset[str]) -> contextlib.AbstractContextManager:
    """While a pass is recorded in this thread, `backend`'s fused kernels outside `keep`
    are declined (its table is not changed, so other threads run as usual)."""
    return dispatch.withholding_fused(frozenset(k for k in backend.kernels
                                                if k in FUSED and k not in keep))


def _tensors(x: Any) -> list:
    if isinstance(x, ember.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _tensors(v)]
    if isinstance(x, dict):
        return [t for v in x.values() for t in _tensors(v)]
    return []


def _nbytes(t: Any) -> int:
    return t.numel() * t.element_size()


def optimizer_works(params: list) -> list[OpWork]:
    """SGD with momentum's update as three list ops (`buf *= m`, `buf += g`,
    `p -= lr*buf`), each reading and writing the lists it touches (the gradients are set
    to None, not zeroed, as `zero_grad()` does by default)."""
    if not params:
        return []
    numel = sum(p.numel() for p in params)
    nbytes = sum(_nbytes(p) for p in params)
    sig = f"{len(params)} tensors, {numel} elements"
    n = len(params)
    return [OpWork("_foreach_mul_", sig, 1.0 * numel, 2.0 * nbytes, "optimizer", launches=n),
            OpWork("_foreach_add_", sig, 2.0 * numel, 3.0 * nbytes, "optimizer", launches=n),
            OpWork("_foreach_add_", sig, 2.0 * numel, 3.0 * nbytes, "optimizer", launches=n)]


def record_step(model: Callable[..., Any], example_inputs: Any, training: bool = True,
                fused_sets: list[frozenset[str]] | None = None) -> Workload:
    """Run one step of `model` at `example_inputs` and record what it does (see the
    module's doc). `fused_sets`: the fused kernels of other backends to record the step
    for as well. The model's weights and gradients are left as they were."""
    inputs = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    tensors_in = _tensors(inputs)
    params = list(model.parameters()) if hasattr(model, "parameters") else []
    trainable = [p for p in params if p.requires_grad]
    buffers = list(model.buffers()) if hasattr(model, "buffers") else []
    state = [t.detach().clone() for t in buffers]  # batch norm's running stats move
    anchor = (params or tensors_in or [None])[0]
    backend = anchor._backend if anchor is not None else None

    def one_pass(rec: _Recorder | None) -> list:
        """A step as a training loop runs it (gradients set to None, forward, the
        outputs' sum as the loss, backward into `.grad`); the optimizer is apart."""
        for p in trainable:
            p.grad = None
        with ember.enable_grad() if training else ember.no_grad():
            out = model(*inputs)
            outs = [t for t in _tensors(out) if t.is_floating_point()]
            if training and trainable and outs:
                loss = outs[0].sum()
                for t in outs[1:]:
                    loss = loss + t.sum()
                if rec is not None:
                    rec.phase = "backward"
                loss.backward()
        return outs

    opt_step = _optimizer_on_copies(trainable) if training else None

    def recorded() -> tuple[_Recorder, list]:
        rec = _Recorder(_sync(anchor))
        with rec.watching():
            outs = one_pass(rec)
            if opt_step is not None:
                rec.phase = "optimizer"
                opt_step()
        return rec, outs

    # parameters too large to copy: the optimizer's step is estimated, not recorded
    optimizer = optimizer_works(trainable) if training and opt_step is None else []
    own = fused_set(backend.kernels) if backend is not None else frozenset()
    variants: dict[frozenset[str], list[OpWork]] = {}
    grads = [p.grad for p in trainable]
    try:
        rec, outs = recorded()
        works = rec.works + optimizer
        floor = {False: _hooked_tiny_op(anchor, False), True: _hooked_tiny_op(anchor, True)}
        # the same step without the hooks (what the host really spends), timed in turn
        # with the recorded passes: a burst of other work then spoils some of each
        plain = [lambda: one_pass(None)] + ([opt_step] if opt_step is not None else [])
        op_times, measured = _best_times(rec, lambda: recorded()[0], plain, _sync(anchor))
        seconds = [s - floor[w.records_grad] if s > max(KERNEL_BOUND * floor[w.records_grad],
                                                        floor[w.records_grad] + KERNEL_MIN_S)
                   else None  # within the hooks' noise: the formula's
                   for w, s in zip(rec.works, op_times)]
        for offered in {s & own for s in fused_sets or []} - {own}:
            with _offering_only(backend, offered):
                variants[offered] = recorded()[0].works + optimizer
    finally:  # the model as it was: its gradients, and its buffers' values
        for p, g in zip(trainable, grads):
            p.grad = g
        with ember.no_grad():
            for t, saved in zip(buffers, state):
                t.copy_(saved)
    param_bytes = sum(_nbytes(p) for p in params) + sum(_nbytes(b) for b in buffers)
    grad_state = 2 * sum(_nbytes(p) for p in trainable) if training else 0  # grads, momentum
    # training keeps every activation for the backward; inference about two at a time
    acts = rec.activation_bytes if training else 2 * max([_nbytes(t) for t in outs] + [0])
    memory = param_bytes + grad_state + acts + sum(_nbytes(t) for t in tensors_in)
    source = str(anchor.device) if anchor is not None else "cpu"
    return Workload(works, sum(_nbytes(t) for t in tensors_in), param_bytes, int(memory),
                    training, source, measured, own, variants,
                    seconds + [None] * len(optimizer))


def _best_times(first: _Recorder, again: Callable[[], _Recorder],
                plain: list[Callable[[], Any]], sync: Callable[[], None],
                span_s: float = SPAN_S) -> tuple[list[float], float]:
    """(each op's best time over `first` and more recorded passes, the summed best times
    of the `plain` calls), the recorded passes and the plain calls in turn, at least
    `OP_TIMING_PASSES` rounds, more (up to 30) until `span_s` has passed: on a shared
    machine the best is the least disturbed, and a burst of other work spoils rounds of
    both. A pass that runs other ops (it should not) is not compared."""
    best, spent = list(first.seconds), 0.0
    plain_best = [math.inf] * len(plain)
    for i in range(30):
        if i >= OP_TIMING_PASSES and spent > span_s:
            break
        start = time.perf_counter()
        for k, fn in enumerate(plain):
            t0 = time.perf_counter()
            fn()
            sync()
            plain_best[k] = min(plain_best[k], time.perf_counter() - t0)
        if i:
            rec = again()
            if [w.op for w in rec.works] == [w.op for w in first.works]:
                best = [min(a, b) for a, b in zip(best, rec.seconds)]
        spent += time.perf_counter() - start
    return best, sum(plain_best)


def _hooked_tiny_op(anchor: Any, grad: bool, calls: int = 30) -> float:
    """Seconds a one-element add takes as a recorded op (the hooks' path and the wait for
    the device included; with `grad`, its autograd node too): what a recorded op's time
    holds beyond its kernel's work."""
    if anchor is None:
        return 0.0
    a = ember.ones(1, device=anchor.device)
    b = ember.ones(1, device=anchor.device).requires_grad_(grad)
    rec = _Recorder(_sync(anchor))
    with ember.enable_grad() if grad else ember.no_grad(), rec.watching():
        for _ in range(calls):
            a + b
    return min(rec.seconds)


KERNEL_BOUND, KERNEL_MIN_S = 4.0, 50e-6
"""A recorded op's time counts as its kernel's measured work only above `KERNEL_BOUND`
times a tiny op's and `KERNEL_MIN_S` beyond it: below, what the hooks and the op's own
host work cost (tens of µs that vary from op to op) would pass for work, and the
formula's estimate is the better one."""
OP_TIMING_PASSES = 3
"""Recorded passes whose op times are compared at least (the first included)."""

OPTIMIZER_COPY_LIMIT = 256 << 20
"""Parameters above this many bytes are not copied to record an optimizer step (it is
estimated from `optimizer_works` instead)."""


def _optimizer_on_copies(params: list) -> Callable[[], Any] | None:
    """One SGD-with-momentum step over copies of `params` (the model's own weights are
    not touched; the learning rate is 0), as a function; None when there are no
    parameters or they are too large to copy."""
    if not params or sum(_nbytes(p) for p in params) > OPTIMIZER_COPY_LIMIT:
        return None
    copies = [p.detach().clone().requires_grad_(True) for p in params]
    for c in copies:
        c.grad = ember.zeros_like(c)
    opt = ember.optim.SGD(copies, lr=0.0, momentum=0.9)
    opt.step()  # the first step makes the momentum buffers
    return opt.step


def _sync(anchor: Any) -> Callable[[], None]:
    if anchor is None:
        return lambda: None
    return lambda: anchor._backend.synchronize(anchor.device.index)


def from_parameters(model: Any, batch: int = 32) -> Workload:
    """A rough step of `model` without example inputs (`model.to("auto")` with no plan):
    2 FLOPs per parameter per sample forward, twice that backward, over `batch` samples;
    each parameter tensor read by one op forward and two backward."""
    params = list(model.parameters())
    numel = sum(p.numel() for p in params)
    nbytes = sum(_nbytes(p) for p in params)
    works = []
    for p in params:
        n, b = p.numel(), _nbytes(p)
        sig = f"parameter {list(p.shape)}"
        works.append(OpWork("matmul", sig, 2.0 * n * batch, 2.0 * b, "forward"))
        works.append(OpWork("matmul", sig, 4.0 * n * batch, 4.0 * b, "backward"))
    works += optimizer_works(params)
    activations = int(math.sqrt(max(numel, 1)) * batch * 4 * max(len(params), 1))
    return Workload(works, 0, nbytes, 3 * nbytes + activations, True,
                    str(params[0].device) if params else "cpu")
