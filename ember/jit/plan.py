"""A recorded step as a static plan (`ember.compile`): the tape's kernel calls with
elementwise chains fused and buffers planned by liveness.

Made once per guard key, from the second recording (ember.jit.tape), in two passes:

1. **Chains.** Steps whose op the backend can fuse (`Backend.fusible_ops`), chained
   through results that nothing else reads, become one kernel the backend generates
   (`Backend.fuse_elementwise`: numba on the CPU), run where the chain's last op ran. A
   chain whose result is only copied into a tensor (`p.sub_(lr * g)` records `mul`, `sub`,
   `assign`) writes into that tensor directly. A chain is not moved across a step that
   writes in place (`assign`, `setitem`, an optimizer's update), which could change what
   it reads; a chain the backend declines runs op by op.
2. **Buffers.** Which slots share memory (views of one storage, `Backend.storage`), and
   the last step that reads each storage: a slot some tensor keeps after the call (a
   `.grad`, a returned value) lives forever, and a result the backend cannot see into (a
   fused kernel's saved state) keeps everything its step read and made alive as long as
   it lives. Then a `clone` of a buffer read for the last time is that buffer (autograd
   copies a gradient it cannot prove unshared; the plan can), and a fused kernel writes
   into a buffer whose storage is dead (the replay's own, never an argument's, a
   parameter's or one a kernel may keep: a storage two kernels hand out is taken as a
   kernel's workspace, and never reused).

Before both, one rewrite of what runs: **max pooling before ReLU.** `max_pool(relu(x))`
is `relu(max_pool(x))` (ReLU does not decrease, so it keeps each window's pick, and a
NaN stays NaN), and the backward's `relu_backward(max_pool_backward(g))` is
`max_pool_backward(relu_backward(g))` with the mask read from the pooled values (a window
whose maximum is not positive gets no gradient in either order). Where the ReLU's result
is read only by the pool and their backwards (a CNN's conv-ReLU-pool), the plan runs the
pool first, so ReLU and its backward touch a quarter of the elements (2x2 windows), and
the ReLU's full-size result is never made.

Each replay still runs every kernel; the plan changes only where results are written and,
by the rewrite above, the order of two ops whose results it proves the same.
`EMBER_COMPILE_PLAN=0` replays the tape as recorded (to compare, or to rule the plan
out).
"""

from __future__ import annotations

import math
import numbers
import os
from collections import Counter
from typing import Any, NamedTuple

from ember.core.backend import ElementwiseChain
from ember.jit.tape import INPUT, LIST, LITERAL, OWNER, SLOT, Tape

_WRITERS = frozenset({"assign", "setitem"})


class PlanStep(NamedTuple):
    """One line of the replay: `out = kernel(*args, **kw, out=into)`, or `out = alias`."""

    name: str  # the op, or a fused chain's name (`fused[add+relu]`): the profiler's
    kernel: Any
    args: tuple  # operand specs (ember.jit.tape)
    kw: dict
    out: Any  # a slot, None, or (type, parts)
    into: tuple | None = None  # the spec of the buffer a fused kernel writes into
    alias: int | None = None  # an elided clone: `out` is this slot's buffer
    fused: int = 0  # how many ops a fused kernel runs


class Plan(NamedTuple):
    steps: list[PlanStep]
    fused_ops: int  # ops run inside fused kernels
    elided: int  # clones removed
    reused: int  # results written into a dead buffer
    pooled_first: int = 0  # ReLU-pool pairs run pool first

    def summary(self) -> str:
        chains = sum(1 for s in self.steps if s.fused)
        return (f"{sum(1 for s in self.steps if s.alias is None)} kernel calls a call; "
                f"{chains} fused chains ({self.fused_ops} ops), {self.elided} copies "
                f"elided, {self.reused} results into reused buffers, {self.pooled_first} "
                f"ReLU-max-pool pairs pooled first")


def make_plan(tape: Tape, wanted: list[int]) -> Plan:
    """The plan of `tape` whose slots `wanted` are read after the replay."""
    steps = [PlanStep(op, kernel, specs, kw, out)
             for op, kernel, specs, kw, out in tape.steps]
    if os.environ.get("EMBER_COMPILE_PLAN", "1") == "0":  # the tape as recorded
        return Plan(steps, 0, 0, 0)
    steps, backends, pooled_first = _pool_before_relu(tape, steps, list(tape.backends),
                                                      set(wanted))
    steps, backends = _fuse_chains(tape, steps, backends, set(wanted))
    return _plan_buffers(tape, steps, backends, set(wanted))._replace(
        pooled_first=pooled_first)


# -- operands -----------------------------------------------------------------------------

def _specs(step: PlanStep) -> list[tuple]:
    """The operand specs a step reads (lists flattened), its `into` included."""
    found: list[tuple] = []

    def walk(spec: tuple) -> None:
        if spec[0] == LIST:
            for s in spec[1]:
                walk(s)
        elif spec[0] != LITERAL:
            found.append(spec)
    for spec in step.args:
        walk(spec)
    for spec in step.kw.values():
        walk(spec)
    if step.into is not None:
        walk(step.into)
    if step.alias is not None:
        found.append((SLOT, step.alias))
    return found


def _out_slots(out: Any) -> list[int]:
    if out is None:
        return []
    if isinstance(out, int):
        return [out]
    return [s for part in out[1] for s in _out_slots(part)]


def _buffer(tape: Tape, spec: tuple) -> Any:
    kind, value = spec
    if kind == SLOT:
        return tape.keep[value]
    if kind == INPUT:
        return tape.inputs[value]
    return value._data  # OWNER


def _dtype(tape: Tape, spec: tuple) -> Any:
    kind, value = spec
    if kind == SLOT:
        return tape.dtype_of.get(id(tape.keep[value]))
    if kind == INPUT:
        return tape.input_dtypes[value]
    return value._dtype


def _key(spec: tuple) -> tuple:
    return (spec[0], id(spec[1]) if spec[0] == OWNER else spec[1])


def _writes(step: PlanStep) -> bool:
    return step.out is None or step.name in _WRITERS


# -- the rewrite: max pooling before ReLU --------------------------------------------------

def _pool_before_relu(tape: Tape, steps: list[PlanStep], backends: list[Any],
                      wanted: set[int]) -> tuple[list[PlanStep], list[Any], int]:
    """`steps` (and their `backends`) with each `relu -> max_pool` pair (and its backward
    pair) run pool first, where that provably computes the same (see the module's
    docstring); and how many."""
    done = 0
    while (rewritten := _pool_one_relu(tape, steps, backends, wanted)) is not None:
        (steps, backends), done = rewritten, done + 1
    return steps, backends, done


def _pool_one_relu(tape: Tape, steps: list[PlanStep], backends: list[Any], wanted: set[int]
                   ) -> tuple[list[PlanStep], list[Any]] | None:
    """`steps` and `backends` with the first pair `_relu_pool_pair` finds rewritten; None
    if none."""
    readers: dict[int, list[int]] = {}  # slot -> the steps that read it
    for n, step in enumerate(steps):
        for kind, value in _specs(step):
            if kind == SLOT:
                readers.setdefault(value, []).append(n)
    for n in range(len(steps)):
        pair = _relu_pool_pair(tape, steps, n, readers, wanted)
        if pair is not None:
            break
    else:
        return None
    relu, (pool, pool_bwd, relu_bwd) = steps[n], pair
    x, activated = relu.args[0], steps[pool].out[1][0]
    # two new slots, the pool of x (before ReLU) and the gradient masked by ReLU's
    # backward at the pool's size; their buffers (shapes, dtypes, storages for the plan)
    # made by running the kernels on the recording's buffers
    kw = {k: v for k, (_, v) in steps[pool].kw.items()}
    pooled = _new_slot(tape, steps[pool].kernel(_buffer(tape, x), **kw)[0],
                       _dtype(tape, (SLOT, activated)))
    out = [[(step, backend)] for step, backend in zip(steps, backends)]
    out[n] = []
    out[pool] = [(steps[pool]._replace(args=(x,), out=(tuple, [pooled, None])), backends[pool]),
                 (relu._replace(args=((SLOT, pooled),), out=activated), backends[n])]
    if pool_bwd is not None:
        # ReLU's backward masks where the pool's result is not positive: read from the
        # pool's result before ReLU, so that the ReLU's result has no reader here (and a
        # ReLU-pool pair after it can be rewritten too)
        g, _, _, *rest = steps[pool_bwd].args
        masked = _new_slot(tape, steps[relu_bwd].kernel(tape.keep[pooled],
                                                        _buffer(tape, g)), _dtype(tape, g))
        out[pool_bwd] = [(steps[relu_bwd]._replace(args=((SLOT, pooled), g), out=masked),
                          backends[relu_bwd])]
        out[relu_bwd] = [(steps[pool_bwd]._replace(args=((SLOT, masked), x, (SLOT, pooled),
                                                         *rest), out=steps[relu_bwd].out),
                          backends[pool_bwd])]
    pairs = [pair for entry in out for pair in entry]
    return [step for step, _ in pairs], [backend for _, backend in pairs]


def _relu_pool_pair(tape: Tape, steps: list[PlanStep], n: int,
                    readers: dict[int, list[int]], wanted: set[int]
                    ) -> tuple[int, int | None, int | None] | None:
    """If step `n` is a ReLU whose result only a max pool (without indices) reads, and
    that pool's and the ReLU's backwards (`max_pool_backward` recovering the picks from
    the ReLU's result, then `relu_backward` of its gradient) or nothing else: the steps
    of (pool, pool backward, ReLU backward), the backwards None if absent. Else None.
    The ReLU's input must be read by the ReLU alone, and nothing between the ReLU and its
    backward may write into a buffer the step made (which could be the input's)."""
    relu = steps[n]
    if relu.name != "relu" or relu.kw or len(relu.args) != 1 or relu.args[0][0] != SLOT or \
            not isinstance(relu.out, int) or relu.out in wanted:
        return None
    x, y = relu.args[0][1], relu.out
    if readers.get(x) != [n] or x in wanted:
        return None
    users = readers.get(y, [])
    pool = users[0] if users else None
    if pool is None or steps[pool].name != "max_pool" or steps[pool].args != ((SLOT, y),) or \
            steps[pool].kw.get("need_indices") != (LITERAL, False):
        return None
    pooled = steps[pool].out
    if not (isinstance(pooled, tuple) and len(pooled[1]) == 2 and pooled[1][1] is None and
            isinstance(pooled[1][0], int)):
        return None
    if len(users) == 1:
        return pool, None, None
    if len(users) != 3:
        return None
    pool_bwd, relu_bwd = users[1], users[2]
    backward = steps[pool_bwd]
    if backward.name != "max_pool_backward" or len(backward.args) != 5 or \
            backward.args[1] != (SLOT, y) or backward.args[3] != (LITERAL, None) or \
            not isinstance(backward.out, int):
        return None
    # the pool's result, maybe under a later slot: a kernel that returns its input (conv,
    # as its saved input) names the buffer anew
    values = backward.args[2]
    if values[0] != SLOT or tape.keep[values[1]] is not tape.keep[pooled[1][0]]:
        return None
    grad = backward.out
    if steps[relu_bwd].name != "relu_backward" or steps[relu_bwd].kw or \
            steps[relu_bwd].args != ((SLOT, y), (SLOT, grad)) or \
            readers.get(grad) != [relu_bwd] or grad in wanted:
        return None
    if any(_writes(steps[k]) and any(kind == SLOT for kind, _ in _specs(steps[k]))
           for k in range(n + 1, relu_bwd)):
        return None
    return pool, pool_bwd, relu_bwd


def _new_slot(tape: Tape, buffer: Any, dtype: Any) -> int:
    """A slot for a buffer the plan makes (read for its shape, dtype and storage)."""
    tape.keep.append(buffer)
    tape.dtype_of[id(buffer)] = dtype
    return len(tape.keep) - 1


# -- pass 1: chains -------------------------------------------------------------------------

def _fusible(step: PlanStep, backend: Any) -> bool:
    if backend is None or step.name not in backend.fusible_ops or step.kw or \
            not isinstance(step.out, int) or backend.kernels.get(step.name) is not step.kernel:
        return False
    tensors = 0
    for kind, value in step.args:
        if kind == LITERAL:
            if not isinstance(value, numbers.Real) or isinstance(value, bool):
                return False
        elif kind == OWNER:
            if value._backend is not backend:
                return False
            tensors += 1
        elif kind in (SLOT, INPUT):
            tensors += 1
        else:
            return False
    return tensors > 0


def _fuse_chains(tape: Tape, steps: list[PlanStep], backends: list[Any],
                 wanted: set[int]) -> tuple[list[PlanStep], list[Any]]:
    uses: Counter = Counter()
    consumer: dict[int, int] = {}
    for n, step in enumerate(steps):
        for kind, value in _specs(step):
            if kind == SLOT:
                uses[value] += 1
                consumer[value] = n
    writers = [n for n, step in enumerate(steps) if _writes(step)]

    def writer_between(first: int, last: int) -> bool:
        return any(first < w < last for w in writers)

    group_of: dict[int, list[int]] = {}  # a chain's result slot -> its steps
    absorbed: set[int] = set()  # result slots read inside a longer chain
    for n, step in enumerate(steps):
        if not _fusible(step, backends[n]):
            continue
        members = {n}
        for kind, value in step.args:
            group = group_of.get(value) if kind == SLOT else None
            if group is not None and uses[value] == 1 and value not in wanted and \
                    backends[group[0]] is backends[n] and not writer_between(group[0], n):
                members.update(group)
                absorbed.add(value)
        group_of[step.out] = sorted(members)

    replaced: dict[int, PlanStep | None] = {}  # step index -> its replacement (None: gone)
    for out, group in group_of.items():
        if out in absorbed:
            continue
        fused = _fused_step(tape, group, steps, backends[group[-1]], wanted, uses, consumer,
                            writer_between)
        if fused is None:
            continue
        step, at = fused
        for n in group:
            replaced[n] = None
        replaced[at] = step
    if not replaced:
        return steps, backends
    kept_steps, kept_backends = [], []
    for n, step in enumerate(steps):
        if n in replaced:
            step = replaced[n]
            if step is None:
                continue
        kept_steps.append(step)
        kept_backends.append(backends[n])
    return kept_steps, kept_backends


def _fused_step(tape: Tape, indices: list[int], steps: list[PlanStep], backend: Any,
                wanted: set[int], uses: Counter, consumer: dict[int, int],
                writer_between: Any) -> tuple[PlanStep, int] | None:
    """The fused step of the chain of steps `indices` and the index it runs at, or None
    (run op by op)."""
    group = [steps[n] for n in indices]
    first, at = indices[0], indices[-1]
    made = {step.out: j for j, step in enumerate(group)}
    inputs: list[tuple] = []
    index: dict[tuple, int] = {}
    ops = []
    for step in group:
        operands = []
        for spec in step.args:
            kind, value = spec
            if kind == LITERAL:
                operands.append(("scalar", value))
            elif kind == SLOT and value in made:
                operands.append(("op", made[value]))
            else:
                key = _key(spec)
                if key not in index:
                    index[key] = len(inputs)
                    inputs.append(spec)
                operands.append(("input", index[key]))
        dtype = _dtype(tape, (SLOT, step.out))
        if dtype is None:
            return None
        ops.append((step.name, tuple(operands), dtype))
    metas = []
    for spec in inputs:
        dtype = _dtype(tape, spec)
        if dtype is None:
            return None
        metas.append((tuple(_buffer(tape, spec).shape), dtype))
    result = group[-1].out
    shape = tuple(tape.keep[result].shape)
    chain = ElementwiseChain(tuple(ops), tuple(metas), shape, ops[-1][2])
    kernel = backend.fuse_elementwise(chain)
    if kernel is None:
        return None
    # a result only copied into a tensor (an in-place op's `assign`): written there directly
    sink = consumer.get(result)
    if uses[result] == 1 and result not in wanted and sink is not None:
        copy = steps[sink]
        if copy.name == "assign" and not copy.kw and len(copy.args) == 2 and \
                copy.args[1] == (SLOT, result) and copy.args[0][0] in (SLOT, OWNER) and \
                not writer_between(first, sink):
            target = copy.args[0]
            buffer = _buffer(tape, target)
            if tuple(buffer.shape) == shape and _dtype(tape, target) is chain.dtype:
                return PlanStep(chain.name, kernel, tuple(inputs), {}, None, into=target,
                                fused=len(ops)), sink
    return PlanStep(chain.name, kernel, tuple(inputs), {}, result, fused=len(ops)), at


# -- pass 2: buffers ------------------------------------------------------------------------

def _covers(backend: Any, buf: Any, root: Any) -> bool:
    """Whether `buf` is all of its storage `root`, dense from its start (a GEMM's result
    reshaped, say): writing into it then writes the whole storage, nothing else."""
    if not backend.owns(root) or not backend.is_contiguous(buf):
        return False
    if buf is root:
        return True
    return backend.storage_offset(buf) == 0 and math.prod(buf.shape) == math.prod(root.shape)


def _plan_buffers(tape: Tape, steps: list[PlanStep], backends: list[Any],
                  wanted: set[int]) -> Plan:
    forever = len(steps) + 1
    last: dict[int, int] = {}  # slot -> the last step that reads it
    for n, step in enumerate(steps):
        for kind, value in _specs(step):
            if kind == SLOT:
                last[value] = n
    for s in wanted:
        last[s] = forever
    made_by: dict[int, int] = {}
    for n, step in enumerate(steps):
        for s in _out_slots(step.out):
            made_by[s] = n

    def storage(slot: int) -> Any:
        backend = backends[made_by[slot]]
        return None if backend is None else backend.storage(tape.keep[slot])

    # a result the backend cannot see into holds what its step read and made
    for n in range(len(steps) - 1, -1, -1):
        outs = _out_slots(steps[n].out)
        opaque = [o for o in outs if storage(o) is None]
        if not opaque:
            continue
        life = max(last.get(o, n) for o in opaque)
        for s in [v for k, v in _specs(steps[n]) if k == SLOT] + outs:
            last[s] = max(last.get(s, n), life)

    foreign: set[int] = set()  # storages the replay must never write into
    root_of: dict[int, int] = {}  # slot -> id of its storage
    first_made: dict[int, int] = {}
    whole: dict[int, int] = {}  # storage id -> a slot holding the whole of it
    for n, step in enumerate(steps):
        backend = backends[n]
        read = set()
        for spec in _specs(step):
            if spec[0] == SLOT:
                read.add(root_of.get(spec[1]))
            elif backend is not None:
                root = backend.storage(_buffer(tape, spec))
                if root is not None:
                    foreign.add(id(root))
        for s in _out_slots(step.out):
            root = storage(s)
            if root is None:
                continue
            rid = root_of[s] = id(root)
            if rid in first_made and first_made[rid] != n and rid not in read:
                foreign.add(rid)  # handed out twice: memory the kernel keeps
            first_made.setdefault(rid, n)
            if _covers(backend, tape.keep[s], root):
                whole.setdefault(rid, s)
    root_last: dict[int, int] = {}
    for s, rid in root_of.items():
        root_last[rid] = max(root_last.get(rid, made_by[s]), last.get(s, made_by[s]))

    members: dict[int, list[int]] = {}
    for s, rid in root_of.items():
        members.setdefault(rid, []).append(s)

    def move(slot: int, rid: int) -> None:
        """`slot`'s buffer is now storage `rid`'s (an elided copy, a reused buffer): so are
        its views, which keep `rid` alive as long as they live; its own storage is gone."""
        old = root_of.get(slot)
        if old == rid:
            return
        if old is None:
            root_of[slot] = rid
            members.setdefault(rid, []).append(slot)
            root_last[rid] = max(root_last[rid], last.get(slot, 0))
            dies_at.setdefault(root_last[rid], []).append(rid)
            return
        for s in members.pop(old, ()):
            root_of[s] = rid
            members.setdefault(rid, []).append(s)
        root_last[rid] = max(root_last[rid], root_last.pop(old, 0))
        whole.pop(old, None)
        foreign.add(old)  # (its entries in dies_at are stale)
        dies_at.setdefault(root_last[rid], []).append(rid)

    def reusable(rid: int | None) -> bool:
        return rid is not None and rid not in foreign and root_last.get(rid, forever) < forever

    def meta(slot: int) -> tuple:
        buf = tape.keep[slot]
        return (tuple(buf.shape), tape.dtype_of.get(id(buf)))

    def dead_before(rid: int, n: int) -> bool:
        return reusable(rid) and rid in whole and root_last[rid] < n

    dies_at: dict[int, list[int]] = {}
    for rid, n in root_last.items():
        dies_at.setdefault(n, []).append(rid)
    free: dict[tuple, list[int]] = {}  # (shape, dtype) -> dead storages
    planned: list[PlanStep] = []
    elided = reused = 0
    for n, step in enumerate(steps):
        if step.name == "clone" and len(step.args) == 1 and step.args[0][0] == SLOT and \
                not step.kw and isinstance(step.out, int):
            source = step.args[0][1]
            rid = root_of.get(source)
            if reusable(rid) and root_last[rid] == n and whole.get(rid) == source:
                planned.append(step._replace(alias=source))
                move(step.out, rid)
                elided += 1
                continue
        if step.fused and step.into is None and meta(step.out)[1] is not None:
            key = meta(step.out)
            dying = [r for r in dies_at.get(n, ()) if reusable(r) and root_last[r] == n
                     and r in whole and meta(whole[r]) == key]
            pool = free.get(key, [])
            while not dying and pool and not dead_before(pool[-1], n):
                pool.pop()  # taken since, and alive again
            rid = dying[0] if dying else (pool.pop() if pool else None)
            if rid is not None:
                if dying:
                    dies_at[n].remove(rid)
                step = step._replace(into=(SLOT, whole[rid]))
                root_last[rid] = n
                move(step.out, rid)
                whole[rid] = step.out
                reused += 1
        planned.append(step)
        for rid in dies_at.pop(n, ()):
            if reusable(rid) and root_last[rid] == n and rid in whole:
                pool = free.setdefault(meta(whole[rid]), [])
                if rid not in pool:
                    pool.append(rid)
    fused_ops = sum(s.fused for s in planned)
    return Plan(planned, fused_ops, elided, reused)
