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
from typing import Any

from ember.core.dispatch import run
from ember.core.grad_mode import state
from ember.core.graph import FnNode, edge_of
from ember.core.opdef import Grad, Kind, Op
from ember.core.tensor import Tensor


def apply(op: Op, *operands: Any, **attrs: Any) -> Tensor:
    """Run primitive `op` and record its declared gradient when autograd needs it."""
    out = run(op.name, *operands, **attrs)
    if state.enabled and op.grad is not None:
        record_grad(op, operands, attrs, out)
    return out


def apply_labelled(op: Op, label: str, *operands: Any, **attrs: Any) -> Tensor:
    """`apply`, naming the node `label` (PyTorch names one op's nodes by the function
    that ran it: a `reshape` run by `view` is `ViewBackward0`, by `unsqueeze`
    `UnsqueezeBackward0`)."""
    out = run(op.name, *operands, **attrs)
    if state.enabled and op.grad is not None:
        record_grad(op, operands, attrs, out, label)
    return out


def default_label(name: str) -> str:
    """PyTorch's node name for an op: `log_softmax` -> `LogSoftmaxBackward0`."""
    return "".join(p.capitalize() for p in name.split("_") if p) + "Backward0"


def grad_operands(op: Op) -> tuple[str, ...]:
    """The names of the operands `record_grad` receives, in order: the rule's operands
    for a primitive; the formulas' keys (or `Grad.operands`) for a composite."""
    if op.kind is Kind.PRIMITIVE:
        return op.operand_names
    spec = op.grad
    return spec.operands if spec.each is not None else tuple(spec.formulas)


def record_grad(op: Op, operands: Sequence[Any], attrs: dict, result: Tensor,
                label: str | None = None) -> None:
    """Attach `op`'s declared gradient to `result` if an operand requires grad.

    `operands` are in the order of `grad_operands(op)`; a trailing `*name` operand of a
    rule (cat's tensors, getitem's index tensors) collects the rest. `label` names the
    node (the declaration's label, or PyTorch's default for the op, when None).
    """
    if not (state.enabled and result._dtype.is_floating_point):
        return
    needs = tuple([isinstance(v, Tensor) and v._requires_grad for v in operands])
    if True not in needs:
        return
    plan = op.grad.plans.get(needs)
    if plan is None:
        plan = op.grad.plans[needs] = _make_plan(op, needs)
    saved: list[Tensor] = []
    values: dict[str, Any] = {}
    for name, source, where in plan.steps:
        if source == "operand":
            value = operands[where]
            if isinstance(value, Tensor):
                values[name] = ("saved", len(saved))
                saved.append(value)
            elif isinstance(where, slice):  # a `*rest` operand: a list of tensors
                values[name] = ("list", len(saved), len(value))
                saved.extend(value)
            else:  # a Python number: kept as it is
                values[name] = ("value", value)
        elif source == "result":
            values[name] = ("saved", len(saved))
            saved.append(result)
        elif source == "shape":
            v = operands[where]
            values[name] = ("value", [t._data.shape for t in v] if isinstance(where, slice)
                            else v._data.shape)
        elif source == "attr":
            value = attrs[name]
            if isinstance(value, Tensor):  # a tensor attribute is saved like an operand
                values[name] = ("saved", len(saved))
                saved.append(value)
            else:
                values[name] = ("value", value)
        else:  # "needs"
            values[name] = ("value", needs)
    edges = tuple([edge_of(v) if need else None for v, need in zip(operands, needs)])
    metas = tuple([(v._data.shape, v._dtype) if need else None
                   for v, need in zip(operands, needs)])
    node = FnNode(label or plan.label, _backward, edges, saved, plan=plan, values=values,
                  metas=metas)
    result._node = node
    result._requires_grad = True


class _Plan:
    """What a node of an op keeps, for one combination of operands needing a gradient."""

    __slots__ = ("spec", "label", "names", "steps")

    def __init__(self, spec: Grad, label: str, names: tuple[str, ...], steps: tuple) -> None:
        self.spec = spec
        self.label = label  # the node's name unless the caller gives one
        self.names = names  # the name of each operand (a `*rest` name repeats)
        self.steps = steps  # (name, source, operand index or slice) for what formulas read


def _make_plan(op: Op, needs: tuple[bool, ...]) -> _Plan:
    spec, count = op.grad, len(needs)
    declared = grad_operands(op)
    rest = _rest_name(op)
    fixed = [n for n in declared if n != rest]
    names = tuple(fixed) + (rest,) * (count - len(fixed)) if rest else tuple(declared)
    where: dict[str, Any] = {n: i for i, n in enumerate(fixed)}
    if rest:
        where[rest] = slice(len(fixed), count)
    if spec.each is not None:
        reads = set(spec.each.reads)
    else:
        reads = set()
        for name, need in zip(names, needs):
            if need and name in spec.formulas:
                reads.update(spec.formulas[name].reads)
    steps = []
    for name in sorted(reads):
        if name in where:
            steps.append((name, "operand", where[name]))
        elif name in ("result", "needs"):
            steps.append((name, name, None))
        elif name.endswith("_shape") and name[:-6] in where:
            steps.append((name, "shape", where[name[:-6]]))
        else:
            steps.append((name, "attr", None))
    return _Plan(spec, spec.label or default_label(op.name), names, tuple(steps))


def _rest_name(op: Op) -> str | None:
    sig = op.kernel_signature if op.kind is Kind.PRIMITIVE else None
    if sig is None:
        return None
    for p in sig.parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            return p.name
    return None


def _backward(node: FnNode, grad: Tensor) -> tuple:
    a = node.attrs
    plan: _Plan = a["plan"]
    spec = plan.spec
    saved = node.saved_tensors
    values = {}
    for name, entry in a["values"].items():
        if entry[0] == "saved":
            values[name] = saved[entry[1]]
        elif entry[0] == "list":
            values[name] = list(saved[entry[1]:entry[1] + entry[2]])
        else:
            values[name] = entry[1]
    if spec.each is not None:
        grads = spec.each.fn(grad, **{r: values[r] for r in spec.each.reads})
    else:
        grads = []
        for name, need in zip(plan.names, node.needs):
            formula = spec.formulas.get(name) if need else None
            if need and formula is None:
                raise RuntimeError(f"the derivative of {node.name()} with respect to its "
                                   f"operand {name!r} is not implemented")
            grads.append(None if formula is None else
                         formula.fn(grad, **{r: values[r] for r in formula.reads}))
    return tuple(_reduce_to(g, m) for g, m in zip(grads, a["metas"]))


def _reduce_to(g: Any, meta: tuple | None) -> Any:
    """A gradient summed down to its operand's shape and cast to its dtype."""
    if g is None or meta is None:
        return None
    shape, d = meta
    if tuple(g.shape) != shape:
        g = g.sum_to_size(shape)
    if g._dtype is not d:
        g = g.to(d)
    return g
