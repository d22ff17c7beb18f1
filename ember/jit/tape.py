"""A kernel tape: what the backends ran during one eager call, and its replay as one
generated Python function.

While a tape records (`ember.core.tracing.tape`), every kernel call the dispatcher makes
is written down: the kernel, where each operand came from, the attributes, and where the
output goes. Fused kernels, the autograd engine's backward formulas and the optimizer's
updates are all kernel calls, so a whole training step is on the tape. An operand is one
of:

- a buffer an earlier call on the tape made (a *slot*);
- a buffer of one of the function's tensor arguments (an *input*: new on every call);
- a buffer of a tensor that lived before the call (an *owner*: a parameter, a gradient,
  an optimizer state). The replay reads ``owner._data`` at run time, so a buffer that an
  earlier replay put there is the one used, as in eager execution;
- a plain value (a *literal*: shapes, dims, scalars), fixed at recording.

The replay is generated source, one line per kernel call (``s5 = k3(s4, o1._data, 2)``),
compiled once: no rules, no autograd, no Python dispatch. After it, every tensor that
outlived the recorded call and holds a buffer the call made (a parameter's new ``.grad``,
a buffer rebound in place) is pointed at the replay's buffer of the same slot.
"""

from __future__ import annotations

import math
import weakref
from typing import Any

from ember.core.tensor import Tensor

SLOT, INPUT, OWNER, LITERAL, LIST = range(5)


class Tape:
    """Records kernel calls (the object `ember.core.tracing.tape` points to)."""

    def __init__(self, inputs: list[Tensor]) -> None:
        self.steps: list[tuple[str, Any, tuple, dict, Any]] = []
        self.slot_of: dict[int, int] = {}  # id(buffer made on the tape) -> slot
        self.keep: list[Any] = []  # those buffers, alive while recording (ids stay unique)
        self.input_of = {id(t._data): i for i, t in enumerate(inputs)}
        self.inputs = [t._data for t in inputs]  # (read by the plan, then released)
        self.input_dtypes = [t._dtype for t in inputs]
        self.backends: list[Any] = []  # per step: the backend of its first tensor operand
        self.dtype_of: dict[int, Any] = {}  # id(buffer made on the tape) -> its dtype
        self.made: list[weakref.ref] = []  # tensors created while recording
        self.owners: dict[int, Tensor] = {}  # id -> tensor read as an owner
        self.refusal: str | None = None
        self.spent_nodes: set[int] = set()  # ids of graph nodes a backward released

    # -- the hooks of ember.core.tracing --------------------------------------------
    def refuse(self, reason: str) -> None:
        if self.refusal is None:
            self.refusal = reason

    def spent(self, node: Any) -> None:
        """A backward ran through `node` and released it (no second backward can)."""
        self.spent_nodes.add(id(node))

    def created(self, t: Tensor) -> None:
        self.made.append(weakref.ref(t))
        self.dtype_of[id(t._data)] = t._dtype

    def call(self, op: str, kernel: Any, args: tuple, attrs: dict, out: Any) -> None:
        if kernel is None:
            self.refuse(f"{op} has no kernel here")
            return
        specs = tuple(self._spec(a) for a in args)
        kw = {k: self._spec(v) for k, v in attrs.items()}
        self.steps.append((op, kernel, specs, kw, self._outputs(out)))
        self.backends.append(_backend_of(args))

    # -- recording ------------------------------------------------------------------
    def _spec(self, x: Any) -> tuple:
        if isinstance(x, Tensor):
            buf = x._data
            slot = self.slot_of.get(id(buf))
            if slot is not None:
                return (SLOT, slot)
            i = self.input_of.get(id(buf))
            if i is not None:
                return (INPUT, i)
            self.owners[id(x)] = x
            return (OWNER, x)
        if type(x) is list and any(isinstance(v, Tensor) for v in x):
            return (LIST, [self._spec(v) for v in x])
        slot = self.slot_of.get(id(x))  # an opaque output passed on (a fused kernel's
        if slot is not None:  # saved state for its backward): from its slot
            return (SLOT, slot)
        return (LITERAL, x)

    def _outputs(self, out: Any) -> Any:
        """The output's shape of slots: a slot, None, or a tuple/list of those."""
        if out is None:
            return None
        if isinstance(out, (tuple, list)):
            return (type(out), [self._outputs(o) for o in out])
        slot = len(self.keep)
        self.slot_of[id(out)] = slot
        self.keep.append(out)
        return slot

    def spec_of(self, x: Any) -> tuple:
        """Where the replay finds `x` (a tensor the call returned, or any value)."""
        if isinstance(x, Tensor):
            return self._spec(x)
        return (LITERAL, x)

    def escaped(self) -> list[tuple[weakref.ref, int]]:
        """The tensors alive now that hold a buffer the call made, with its slot."""
        seen, found = set(), []
        candidates = [r() for r in self.made] + list(self.owners.values())
        for t in candidates:
            if t is None or id(t) in seen:
                continue
            seen.add(id(t))
            slot = self.slot_of.get(id(t._data))
            if slot is not None:
                found.append((weakref.ref(t), slot))
        return found


    def grads(self) -> list[tuple[weakref.ref, Tensor]]:
        """(tensor, its `.grad`) for each tensor read here whose gradient the call made:
        the replay sets `.grad` back to that object, which eager execution may have
        replaced since (another shape's replay, `zero_grad(set_to_none=True)`)."""
        return [(weakref.ref(t), t._grad) for t in self.owners.values()
                if t._grad is not None and id(t._grad._data) in self.slot_of]


def _backend_of(args: tuple) -> Any:
    for a in args:
        if isinstance(a, Tensor):
            return a._backend
        if type(a) is list:
            for t in a:
                if isinstance(t, Tensor):
                    return t._backend
    return None


def _same_value(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same_value(a[k], b[k]) for k in a)
    try:
        return bool(a == b)
    except Exception:  # arrays and the like: only the same object is the same
        return False


def _same_spec(a: tuple, b: tuple) -> bool:
    if a[0] != b[0]:
        return False
    if a[0] == OWNER:
        return a[1] is b[1]
    if a[0] == LIST:
        return len(a[1]) == len(b[1]) and all(_same_spec(x, y) for x, y in zip(a[1], b[1]))
    return _same_value(a[1], b[1])


def same_steps(a: Tape, b: Tape) -> bool:
    """Whether two recordings ran the same kernels on operands from the same places with
    the same plain values: then the Python around them did not change what runs."""
    if len(a.steps) != len(b.steps):
        return False
    for (op1, k1, s1, kw1, o1), (op2, k2, s2, kw2, o2) in zip(a.steps, b.steps):
        if op1 != op2 or k1 is not k2 or o1 != o2 or kw1.keys() != kw2.keys():
            return False
        if not all(_same_spec(x, y) for x, y in zip(s1, s2)) or len(s1) != len(s2):
            return False
        if not all(_same_spec(kw1[k], kw2[k]) for k in kw1):
            return False
    return True


class Replay:
    """A plan (ember.jit.plan) as one generated function: `run(inputs)` -> the buffers of
    the `wanted` slots."""

    def __init__(self, steps: list[Any], wanted: list[int], profiled: bool = False) -> None:
        self.kernels: list[Any] = []
        self.owners: list[Tensor] = []
        self.literals: list[Any] = []
        self.names = [step.name for step in steps]
        lines = ["def replay(I, K, O, L, P):"]
        for n, step in enumerate(steps):
            self.kernels.append(step.kernel)
            out = step.out
            if step.alias is not None:  # an elided copy: the buffer itself
                lines.append(f"    s{out} = s{step.alias}")
                continue
            call = ", ".join([self._expr(s) for s in step.args]
                             + [f"{k}={self._expr(v)}" for k, v in step.kw.items()]
                             + ([f"out={self._expr(step.into)}"] if step.into else []))
            if profiled:
                lines.append(f"    r = P.enter_range({('compiled::' + step.name)!r})")
            if out is None:
                lines.append(f"    K[{n}]({call})")
            else:
                target = f"s{out}" if isinstance(out, int) else f"t{n}"
                lines.append(f"    {target} = K[{n}]({call})")
            if profiled:
                lines.append("    P.exit_range(r)")
            if out is not None and not isinstance(out, int):
                lines += self._unpack(f"t{n}", out)
        lines.append("    return (" + "".join(f"s{w}, " for w in wanted) + ")")
        self.source = "\n".join(lines) + "\n"
        namespace: dict[str, Any] = {}
        exec(compile(self.source, "<ember.compile replay>", "exec"), namespace)  # noqa: S102
        self._fn = namespace["replay"]
    def _expr(self, spec: tuple) -> str:
        kind, value = spec
        if kind == SLOT:
            return f"s{value}"
        if kind == INPUT:
            return f"I[{value}]"
        if kind == OWNER:
            self.owners.append(value)
            return f"O[{len(self.owners) - 1}]._data"
        if kind == LIST:
            return "[" + ", ".join(self._expr(s) for s in value) + "]"
        if value is None or type(value) in (bool, int, str) or (
                type(value) is float and math.isfinite(value)):
            return repr(value)
        self.literals.append(value)
        return f"L[{len(self.literals) - 1}]"

    def _unpack(self, name: str, out: Any) -> list[str]:
        kind, parts = out
        lines = []
        for i, part in enumerate(parts):
            if part is None:
                continue
            if isinstance(part, int):
                lines.append(f"    s{part} = {name}[{i}]")
            else:
                lines.append(f"    {name}_{i} = {name}[{i}]")
                lines += self._unpack(f"{name}_{i}", part)
        return lines

    def run(self, input_buffers: list[Any], profiler: Any = None) -> tuple:
        return self._fn(input_buffers, self.kernels, self.owners, self.literals, profiler)
