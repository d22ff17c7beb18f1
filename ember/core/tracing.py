"""The tracer's hook in core: where ops report themselves while a trace is recording.

Core does not know the tracer (it lives above, in ember.jit); it only offers this
interface. While `active` is None — always, outside `ember.jit.trace` — each hook costs a
single global check.

- Every primitive reports through `dispatch` (`primitive`), with its operands, attributes
  and output tensor.
- Composite ops (`conv2d`, `linear`, `softmax` ...) are wrapped with `@composite`: they
  open a scope around the primitives they run, so an exporter can map the composite to one
  node (ONNX Conv, Gemm ...) or fall back to its primitives.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any

active: Any = None
"""The recording tracer (an object with `primitive`, `enter`, `exit` methods), or None."""


def replaying() -> bool:
    """Whether the recording tracer wants what it records replayable (`ember.jit.trace`:
    the decompositions of fused kernels, random draws as primitives) rather than the eager
    run's own computation (vmap's watch of per-sample values, whose `replays` is False)."""
    return active is not None and getattr(active, "replays", True)

tape: Any = None
"""The kernel tape recording for `ember.compile` (an object with `call`, `created` and
`refuse` methods), or None. Unlike a trace it records what the backends run, fused
kernels and the backward pass included, and the run it records is a normal eager run."""


def refuse_tape(reason: str) -> None:
    """Say that the step being taped does something a replay of its kernels cannot redo
    (read a value into Python, move between devices, fall back to the CPU ...)."""
    if tape is not None:
        tape.refuse(reason)


python_value_hooks: list[Callable[[Any, str], None]] = []
"""Called as `hook(tensor, how)` when a traced tensor's value is read into Python
(`item`, `tolist`, `bool`): the tracer warns there, since the trace cannot replay it."""


value_read: Callable[[Any, str], None] | None = None
"""Called as `value_read(tensor, how)` at every read of a tensor's value into Python
while an fx graph capture runs (ember.fx._capture: `torch.compile`'s custom backends,
`torch.export`), which cannot put a Python value into a graph."""


def note_python_value(x: Any, how: str) -> None:
    """Report that `x`'s value is being read into Python (`how`: "item", "tolist" ...)."""
    if value_read is not None:
        value_read(x, how)
    if python_value_hooks and active is not None:  # not while a check pauses the tracer
        python_value_hooks[-1](x, how)
    if tape is not None:
        tape.refuse(f"it reads a tensor's value into Python ({how})")


def primitive(op: str, args: tuple, attrs: dict, out: Any) -> None:
    if active is not None:
        active.primitive(op, args, attrs, out)


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """Stop recording for a moment: for ember's own checks (index bounds ...), which are
    not part of the computation a trace should replay or export. A kernel tape pauses
    too: `ember.compile`'s replays skip these checks, as they skip all Python."""
    global active, tape, value_read
    saved, active = active, None
    saved_tape, tape = tape, None
    saved_read, value_read = value_read, None  # (a graph capture records nothing meanwhile)
    try:
        yield
    finally:
        active, tape, value_read = saved, saved_tape, saved_read


def composite(name: str) -> Callable[[Callable], Callable]:
    """Mark a public composite op so traces record it as a scope named `name`."""
    def wrap(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def traced(*args: Any, **kwargs: Any) -> Any:
            tracer = active
            if tracer is None:
                return fn(*args, **kwargs)
            scope = tracer.enter(name, fn, args, kwargs)
            try:
                out = fn(*args, **kwargs)
            except BaseException:
                tracer.abandon(scope)
                raise
            tracer.exit(scope, out)
            return out
        traced.__ember_composite__ = name
        return traced
    return wrap
