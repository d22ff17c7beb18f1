"""Forward-mode AD in core: the dual level, the tangents tensors carry, and how an op's
output gets its tangent.

No op has a forward formula of its own. An op's Jacobian-vector product is obtained from
the backward it already declares: its vector-Jacobian product `g(u) = J^T u` is linear in
the cotangent `u`, so differentiating `<g(u), t>` with respect to `u` gives `J t`. At the
place a node is recorded (ember.core.apply.record_grad, ember.core.graph.record), when
an operand carries a tangent, the op's backward is evaluated once on `u = zeros` that
requires grad, and differentiated back to `u` with the operands' tangents as cotangents.

`active` is the one flag the dispatch paths test: False (no level, or while a tangent is
being computed), it costs one attribute read per op. Tangents are kept on the tensor
(`Tensor._fw_tangent`, in its `__dict__` only when set, with the version of the storage
it belongs to); the level remembers which tensors got one, and exiting it removes them
all, as PyTorch's `exit_dual_level` does.
PyTorch supports one level at a time, so does ember.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

from ember.core.grad_mode import state as grad_state

active = False
"""Whether an op must propagate tangents: a dual level exists and no tangent is being
computed right now (the backward formulas run for a tangent do not propagate)."""

current_level = -1
"""The level that `make_dual` and `unpack_dual` use by default (-1: none)."""

_holders: list[weakref.ref] = []  # the tensors given a tangent at the current level


def enter_level() -> int:
    global active, current_level
    if current_level >= 0:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    current_level, active = 0, True
    return 0


def exit_level(level: int) -> None:
    global active, current_level
    if level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    if level != current_level:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one "
                           "that was created. This is not supported.")
    for ref in _holders:
        t = ref()
        if t is not None:
            t.__dict__.pop("_fw_tangent", None)
            t.__dict__.pop("_fw_version", None)
    _holders.clear()
    current_level, active = -1, False


def tangent_of(t: Any) -> Any:
    """`t`'s tangent at the current level, or None.

    A view's tangent is a view of its base's: when the storage was written in place since
    the view got its tangent (through the base or another view), it is taken again from
    the base's tangent, as PyTorch's view tangents follow their base's."""
    if current_level < 0:
        return None
    tangent = t._fw_tangent
    if t._base is not None and t._view_fn is not None and \
            t.__dict__.get("_fw_version", -1) != t._vc[0]:
        base_tangent = t._base._fw_tangent
        if base_tangent is not None:
            with suspended():
                tangent = t._view_fn(base_tangent)
            set_tangent(t, tangent)
    return tangent


def check_dual(tensor: Any, tangent: Any, level: int | None = None) -> None:
    """PyTorch's refusals of a (primal, tangent) pair for a dual tensor (`make_dual`, and
    `torch.func.jvp`, which makes one of each pair); `level` checked when given."""
    if not tensor.is_floating_point():
        raise ValueError(f"Expected primal to be floating point or complex, but got: "
                         f"{tensor.dtype}")
    if not tangent.is_floating_point():
        raise ValueError(f"Expected tangent to be floating point or complex, but got: "
                         f"{tangent.dtype}")
    if level is not None:
        if level != current_level:
            raise RuntimeError("Invalid level given to _make_dual")
        if tangent_of(tensor) is not None:
            raise RuntimeError(f"Making a dual Tensor based on a Tensor that already has a "
                               f"forward gradient at the same level {level} is not supported.")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError(f"Trying to set a forward gradient that has a different size than "
                           f"that of the original Tensor, this is not supported. Tensor is of "
                           f"size {list(tensor.shape)} while the given forward gradient is of "
                           f"size {list(tangent.shape)}.")
    if tangent.device != tensor.device:
        raise RuntimeError(f"Trying to set a forward gradient on a Tensor of device "
                           f"{tensor.device} with a tangent of device {tangent.device}: "
                           f"they must be on the same device.")


def set_tangent(t: Any, tangent: Any) -> None:
    """Give `t` a tangent at the current level (None removes it)."""
    d = t.__dict__
    if tangent is None:
        d.pop("_fw_tangent", None)
        return
    if "_fw_tangent" not in d:
        _holders.append(weakref.ref(t))
    d["_fw_tangent"], d["_fw_version"] = tangent, t._vc[0]


def without_tangent(t: Any) -> None:
    """`t`, a view, carries no tangent at the current level, not even its base's
    (`unpack_dual`'s primal: PyTorch's `_fw_primal` view has no forward gradient)."""
    d = t.__dict__
    d.pop("_fw_tangent", None)
    d["_fw_version"] = t._vc[0]  # (the base's tangent is not taken up again)
    _holders.append(weakref.ref(t))


class suspended:  # noqa: N801 - a context manager, named as grad modes are
    """Ops run inside propagate no tangent (a tangent's own computation, `unpack_dual`'s
    primal); grad mode is on, as the backward being differentiated needs it."""

    def __enter__(self) -> None:
        global active
        self.prev = active, grad_state.enabled
        active, grad_state.enabled = False, True

    def __exit__(self, *exc: Any) -> None:
        global active
        active, grad_state.enabled = self.prev


def tangents_of(operands: Sequence[Any]) -> list | None:
    """The tangents of `operands` (None for a non-tensor or a tensor without one), or
    None when no operand has one."""
    found = None
    for i, v in enumerate(operands):
        tangent = tangent_of(v) if hasattr(v, "_fw_tangent") else None
        if tangent is not None:
            if found is None:
                found = [None] * len(operands)
            found[i] = tangent
    return found


def jvp(backward: Callable[[Any], Sequence[Any]], result: Any, operands: Sequence[Any],
        tangents: Sequence[Any]) -> Any:
    """The tangent of `result`, an op's output, from the op's `backward(u)` (its
    gradients with respect to `operands`, given the output's gradient `u`) and the
    operands' `tangents`.

    The tangent is itself differentiable (backward AD through forward AD) when grad mode
    is on and an operand or a tangent requires grad.
    """
    from ember.core.engine import grad  # the engine needs ops: imported on first use

    create = grad_state.enabled and any(
        getattr(v, "_requires_grad", False) for v in (*operands, *tangents))
    with suspended():
        u = result.new_zeros(result.shape).requires_grad_()
        grads = backward(u)
        outs, cots = [], []
        for g, t in zip(grads, tangents):
            if g is not None and t is not None and g._requires_grad:
                outs.append(g)
                cots.append(t if t._dtype is g._dtype else t.to(g._dtype))
        found = grad(outs, [u], cots, create_graph=create, allow_unused=True)[0] \
            if outs else None
        if found is None:
            found = result.new_zeros(result.shape)
    return found
