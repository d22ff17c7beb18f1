"""Autograd from the declarations: run a declared op and record the gradient it declares.

`apply(op, *operands, **attrs)` runs a primitive through the dispatch table and, when
autograd records and an operand requires grad, attaches one graph node whose backward
evaluates the op's `Grad` formulas (ember.core.opdef.Grad). Composites with their own
gradient call `record_grad` after running their decomposition without recording.

What a node keeps is decided by what the formulas of the operands that need a gradient
read: `y * 2` saves no tensor (y's gradient reads only the 2), and `a * b` with only `a`
requiring grad saves `b` alone. Saving less matters: a saved tensor changed in place
later makes backward raise, and saved tensors hold memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType
from typing import Any

from ember.core import anomaly_mode, graph
from ember.core import forward_ad as fw
from ember.core.dispatch import run
from ember.core.grad_mode import state
from ember.core.graph import Node, SavedTensor, default_label, edge_of, node_name
from ember.core.opdef import Kind, Op
from ember.core.tensor import Tensor


def apply(op: Op, *operands: Any, **attrs: Any) -> Tensor:
    """Run primitive `op` and record its declared gradient when autograd needs it."""
    out = run(op.name, *operands, **attrs)
    if op.grad is not None and (state.enabled or fw.active):
        record_grad(op, operands, attrs, out)
    return out


def apply_labelled(op: Op, label: str, *operands: Any, **attrs: Any) -> Tensor:
    """`apply`, naming the node `label` (PyTorch names one op's nodes by the function
    that ran it: a `reshape` run by `view` is `ViewBackward0`, by `unsqueeze`
    `UnsqueezeBackward0`)."""
    out = run(op.name, *operands, **attrs)
    if op.grad is not None and (state.enabled or fw.active):
        record_grad(op, operands, attrs, out, label)
    return out


def grad_operands(op: Op) -> tuple[str, ...]:
    """The names of the operands `record_grad` receives, in order: the rule's operands
    for a primitive; the formulas' keys (or `Grad.operands`) for a composite."""
    if op.kind is Kind.PRIMITIVE:
        return op.operand_names
    spec = op.grad
    if spec.each is not None:  # (a composite's trailing "*name" collects the rest)
        return tuple(n.lstrip("*") for n in spec.operands)
    return tuple(spec.formulas)


# where a value a formula reads comes from
_OPERAND, _REST, _RESULT, _SHAPE, _REST_SHAPES, _ATTR, _NEEDS, _WRAPPED = range(8)


def record_grad(op: Op, operands: Sequence[Any], attrs: dict, result: Tensor,
                label: str | None = None, needs: tuple[bool, ...] | None = None) -> None:
    """Attach `op`'s declared gradient to `result` if an operand requires grad.

    `operands` are in the order of `grad_operands(op)`; a trailing `*name` operand of a
    rule (cat's tensors, getitem's index tensors) collects the rest. `label` names the
    node (the declaration's label, or PyTorch's default for the op, when None). `needs`,
    which operands require grad, when the caller knows it already (and has found grad
    mode on). Under a dual level, `result` also gets its tangent here (ember.core.forward_ad).
    """
    if not result._dtype._differentiable:
        return
    if fw.active:
        _propagate_tangent(op, operands, attrs, result, label)
    if needs is None:
        if not state.enabled:
            return
        needs = tuple([isinstance(v, Tensor) and v._requires_grad for v in operands])
        if True not in needs:
            return
    result._node = _declared_node(op, operands, attrs, result, label, needs, True)
    result._requires_grad = True


def _declared_node(op: Op, operands: Sequence[Any], attrs: dict, result: Tensor,
                   label: str | None, needs: tuple[bool, ...], edges: bool) -> DeclaredNode:
    """The node of `op`'s declared gradient for the operands marked in `needs` (with
    graph edges to them when `edges`; a node made for a tangent needs none)."""
    plan = op.grad.plans.get(needs)
    if plan is None:
        plan = op.grad.plans[needs] = _make_plan(op, needs)
    saved: list[SavedTensor] = []
    values: list[Any] = []  # per plan step: the value, or a marker of where it was saved
    stored = False  # whether `values` holds a marker
    wraps = False  # whether it keeps a number PyTorch saves as a tensor (Grad.wrapped)
    for source, where in plan.steps:
        if source is _OPERAND:
            value = operands[where]
        elif source is _WRAPPED:
            value = operands[where]
            if not isinstance(value, Tensor) and not graph.composing:
                wraps = stored = True  # kept as it is, freed as a saved tensor
        elif source is _RESULT:
            if edges:  # kept unlinked from the node it belongs to (graph.SavedTensor)
                stored = True
                values.append(_Stored(len(saved), None))
                saved.append(SavedTensor(result, 0))
                continue
            value = result
        elif source is _ATTR:
            value = attrs[where]
        elif source is _SHAPE:
            value = operands[where]._data.shape
        elif source is _REST:
            stored = True
            values.append(_Stored(len(saved), len(operands) - where))
            saved.extend([SavedTensor(t) for t in operands[where:]])
            continue
        elif source is _REST_SHAPES:
            value = [t._data.shape for t in operands[where:]]
        else:
            value = needs
        if isinstance(value, Tensor):  # saved: a later in-place change makes backward raise
            stored = True
            values.append(_Stored(len(saved), None))
            saved.append(SavedTensor(value))
        else:  # a Python number, a shape, an attribute: kept as it is
            values.append(value)
    links = []
    metas = []
    for v, need in zip(operands, needs):
        if need and not edges:
            links.append(None)
            metas.append((v._data.shape, v._dtype))
        elif need:
            node = v._node
            if node is not None and v._view_fn is None:  # edge_of's common case, inline
                links.append((node, v._output_nr))
            else:  # a leaf, or a view whose base may have been written since
                links.append(edge_of(v))
            metas.append((v._data.shape, v._dtype))
        else:
            links.append(None)
            metas.append(None)
    return DeclaredNode(label or plan.label, plan, tuple(links), needs, saved, values, metas,
                        stored, wraps)


def _propagate_tangent(op: Op, operands: Sequence[Any], attrs: dict, result: Tensor,
                       label: str | None) -> None:
    """Give `result` its tangent when an operand carries one: the JVP of the op's
    declared backward (ember.core.forward_ad.jvp)."""
    tangents = fw.tangents_of(operands)
    if tangents is None:
        return
    needs = tuple([t is not None for t in tangents])
    with fw.suspended():
        node = _declared_node(op, operands, attrs, result, label, needs, False)
    fw.set_tangent(result, fw.jvp(lambda u: node.apply([u]), result, operands, tangents))


class _Stored:
    """Where a value a formula reads was saved: its index among the node's saved tensors
    (`count` of them for a `*rest` operand, else one)."""

    __slots__ = ("index", "count")

    def __init__(self, index: int, count: int | None) -> None:
        self.index, self.count = index, count


_NO_ATTRS = MappingProxyType({})  # a declared node keeps no attributes: one shared, read-only


class DeclaredNode(Node):
    """The graph node of an op with a declared gradient: its backward evaluates the
    declaration's formulas on what the node kept."""

    __slots__ = ("label", "plan", "values", "metas", "stored", "wraps")

    def __init__(self, label: str, plan: _Plan, edges: tuple, needs: tuple,
                 saved: list[SavedTensor], values: list, metas: list, stored: bool = True,
                 wraps: bool = False) -> None:
        # Node's fields, set here directly: a node is made for every recorded op
        self.next_edges, self.needs, self.attrs = edges, needs, _NO_ATTRS
        self._saved = tuple(saved)
        self._freed, self.pre_hooks, self.retain, self.post_hooks = False, None, None, None
        self.label, self.plan, self.values, self.metas = label, plan, values, metas
        self.stored = stored  # whether `values` marks saved tensors (else plain values)
        self.wraps = wraps  # whether it kept a number as PyTorch's saved tensor
        if anomaly_mode._enabled:  # (PyTorch keeps the forward's stack for its errors)
            self._metadata = {"traceback_": anomaly_mode.forward_stack()}

    def name(self) -> str:
        return node_name(self.label)

    def release(self) -> None:
        if self._saved or self.wraps:
            self._saved = ()
            self._freed = True

    def __getattr__(self, attr: str) -> Any:
        """PyTorch's `grad_fn._saved_<name>`: a value the node kept for backward, by the
        name its formula reads (`self` is the first operand, `input` here). A saved
        output comes back as a new tensor object on the same data, as PyTorch unpacks it."""
        raw = attr.startswith("_raw_saved_")
        if not raw and not attr.startswith("_saved_"):  # (before reading a field: copy and
            raise AttributeError(attr)     # pickle ask for theirs on objects made without init)
        name = attr[len("_raw_saved_" if raw else "_saved_"):]
        if name == "self":
            name = "input"
        if raw:
            return self._raw_saved(name, attr)
        if name not in self.plan.reads:
            if name in self.plan.known:  # a field of PyTorch's node this node did not need
                return None
            raise AttributeError(f"'{self.label}' object has no attribute '{attr}'")
        i = self.plan.reads.index(name)
        value = self.values[i]
        if self.plan.steps[i][0] is _WRAPPED and type(value) is not _Stored:  # a number
            from ember.core import dtype as dt
            from ember.core.creation import tensor

            self.saved_tensors  # noqa: B018 - raises once freed, as PyTorch
            # PyTorch's wrapped number: bool, int64, float64 or complex128
            wide = dt.float64 if isinstance(value, float) else \
                dt.complex128 if isinstance(value, complex) else None
            return tensor(value, dtype=wide)
        if type(value) is _Stored:
            saved = self.saved_tensors  # raises once freed, as PyTorch
            value = saved[value.index] if value.count is None else \
                list(saved[value.index:value.index + value.count])
        if name == "result" and isinstance(value, Tensor):
            alias = value.detach()
            alias._node, alias._output_nr = value._node, value._output_nr
            alias._requires_grad = value._requires_grad
            return alias
        return value

    def _raw_saved(self, name: str, attr: str) -> SavedTensor:
        """PyTorch's `grad_fn._raw_saved_<name>`: the SavedTensor object itself (one
        tensor; a number, list or unsaved field has none)."""
        value = self.values[self.plan.reads.index(name)] if name in self.plan.reads else None
        if type(value) is not _Stored or value.count is not None:
            raise AttributeError(f"'{self.label}' object has no attribute '{attr}'")
        return SavedTensor.freed() if self._freed else self._saved[value.index]

    def apply(self, grads: list) -> tuple:
        grad = grads[0]
        plan = self.plan
        if self.stored:
            saved = self.saved_tensors  # raises if freed, or if a saved tensor changed since
            values = [v if type(v) is not _Stored else
                      (saved[v.index] if v.count is None else
                       list(saved[v.index:v.index + v.count]))
                      for v in self.values]
        else:  # nothing saved (add, sub ...): the values are plain as they were kept
            values = self.values
        if plan.each is not None:
            fn, positions = plan.each
            grads = fn(grad, *[values[i] for i in positions])
        elif len(plan.formulas) == 1:  # one operand (unary ops): no list to build
            fn, positions = plan.formulas[0]
            grads = (fn(grad, *[values[i] for i in positions]),)
        else:
            grads = [None if formula is None else
                     formula[0](grad, *[values[i] for i in formula[1]])
                     for formula in plan.formulas]
        # each gradient summed down to its operand's shape and cast to its dtype
        out = []
        for g, meta in zip(grads, self.metas):
            if g is None or meta is None:
                out.append(None)
                continue
            if g._data.shape != meta[0]:
                g = g.sum_to_size(meta[0])
            if g._dtype is not meta[1]:
                if g._dtype.is_complex and not meta[1].is_complex:
                    g = g.real  # a real operand of a complex result: PyTorch's handle_r_to_c
                g = g.to(meta[1])
            out.append(g)
        return tuple(out)


class _Plan:
    """What a node of an op keeps, for one combination of operands needing a gradient,
    and how its formulas read it back."""

    __slots__ = ("label", "steps", "formulas", "each", "reads", "known")

    def __init__(self, label: str, steps: tuple, formulas: tuple, each: tuple | None,
                 reads: tuple[str, ...] = (), known: frozenset[str] = frozenset()):
        self.label = label  # the node's name unless the caller gives one
        self.steps = steps  # (source, where) of each value a formula reads
        self.reads = reads  # the name of each (a formula's parameter name)
        self.formulas = formulas  # per operand: (fn, positions in steps) or None
        self.each = each  # or (fn, positions) for a formula of all operands
        self.known = known  # what any formula of the op reads, needed here or not


def _save_order(name: str) -> tuple[bool, str]:
    """PyTorch's order of a node's saved values (what saved-tensor hooks see packed and
    unpacked): its inputs sorted by PyTorch's names (ember's `input` is its `self`), then
    the result, saved once computed."""
    return name == "result", "self" if name == "input" else name


def _make_plan(op: Op, needs: tuple[bool, ...]) -> _Plan:
    spec, count = op.grad, len(needs)
    declared = grad_operands(op)
    rest = _rest_name(op)
    fixed = [n for n in declared if n != rest]
    names = tuple(fixed) + (rest,) * (count - len(fixed)) if rest else tuple(declared)
    index = {n: i for i, n in enumerate(fixed)}
    needed = [] if spec.each is not None else \
        [spec.formulas.get(name) if need else None for name, need in zip(names, needs)]
    reads = sorted(set(spec.each.reads) if spec.each is not None else
                   {r for f in needed if f is not None for r in f.reads}, key=_save_order)
    steps = []
    for name in reads:
        if name in index:
            steps.append((_WRAPPED if name in spec.wrapped else _OPERAND, index[name]))
        elif name == rest:
            steps.append((_REST, len(fixed)))
        elif name == "result":
            steps.append((_RESULT, None))
        elif name == "needs":
            steps.append((_NEEDS, None))
        elif name.endswith("_shape") and name[:-6] in index:
            steps.append((_SHAPE, index[name[:-6]]))
        elif name.endswith("_shape") and name[:-6] == rest:
            steps.append((_REST_SHAPES, len(fixed)))
        else:
            steps.append((_ATTR, name))
    position = {name: i for i, name in enumerate(reads)}

    def compiled(formula: Any, name: str = "", need: bool = False) -> tuple | None:
        if formula is None:
            return (_not_implemented(op.name, name), ()) if need else None
        return formula.fn, tuple(position[r] for r in formula.reads)
    return _Plan(spec.label or default_label(op.name), tuple(steps),
                 tuple(compiled(f, n, need) for f, n, need in zip(needed, names, needs)),
                 compiled(spec.each), tuple(reads),
                 frozenset(r for f in spec.formulas.values() for r in f.reads))


def _not_implemented(op: str, operand: str) -> Any:
    def formula(grad: Any) -> Any:
        raise RuntimeError(f"the derivative of {op} with respect to its operand "
                           f"{operand!r} is not implemented")
    return formula


def _rest_name(op: Op) -> str | None:
    if op.kind is not Kind.PRIMITIVE:  # a composite names it in Grad.operands: "*tensors"
        names = op.grad.operands if op.grad is not None else ()
        return names[-1][1:] if names and names[-1].startswith("*") else None
    sig = op.kernel_signature
    if sig is None:
        return None
    for p in sig.parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            return p.name
    return None
