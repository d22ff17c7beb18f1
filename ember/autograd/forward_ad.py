"""Forward-mode automatic differentiation with dual tensors: `torch.autograd.forward_ad`.

Inside `dual_level()`, `make_dual(x, t)` gives a tensor carrying the tangent `t`; every op
on it computes its output's tangent (the Jacobian-vector product), read back with
`unpack_dual`. How tangents propagate without a forward formula per op:
ember.core.forward_ad.
"""

from __future__ import annotations

import contextlib
from typing import Any, NamedTuple

from ember.core import forward_ad as _fw
from ember.core.grad_mode import set_grad_enabled, state
from ember.core.tensor import Tensor

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual",
           "unpack_dual", "dual_level"]


def enter_dual_level() -> int:
    """Enter a new forward grad level and return it (the level `make_dual` and
    `unpack_dual` use by default). Only one level may exist at a time.

    Raises:
        RuntimeError: if a level exists already.
    """
    return _fw.enter_level()


def exit_dual_level(*, level: int | None = None) -> None:
    """Exit a forward grad level: the tangents of every tensor at that level are
    deleted. Only the last level entered may be exited."""
    _fw.exit_level(_fw.current_level if level is None else level)


def _alias(tensor: Tensor) -> Tensor:
    """A view of all of `tensor`, without its tangent (backward-differentiable)."""
    grad_on = state.enabled  # kept: suspended() turns grad mode on
    with _fw.suspended(), set_grad_enabled(grad_on):
        return tensor.view(tuple(tensor.shape))


def _check_level(level: int, where: str) -> None:
    if level != _fw.current_level:
        raise RuntimeError(f"Invalid level given to {where}")


def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """Associate a tensor value with its tangent to create a "dual tensor" for forward AD.

    The result is a new tensor aliased to `tensor` (a view sharing its storage) with
    `tangent` attached as it is when it has the same layout (strides), a copy otherwise;
    `unpack_dual` recovers it. This function is backward
    differentiable.

    Args:
        tensor: the primal, a floating point tensor.
        tangent: its tangent, a floating point tensor of the same size.
        level: the dual level (default: the current one).

    Raises:
        RuntimeError: outside a dual level, for another level, for a tangent of another
            size or device, or if `tensor` already has a tangent at this level.
        ValueError: if `tensor` or `tangent` is not floating point.
    """
    if level is None:
        level = _fw.current_level
    if level < 0:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, "
                           "make sure to enter_dual_level() first.")
    _fw.check_dual(tensor, tangent, level)
    if tangent.stride() != tensor.stride():  # kept as it is only in the primal's layout
        tangent = tangent.contiguous() if tensor.is_contiguous() else tangent.clone()
    dual = _alias(tensor)
    _fw.set_tangent(dual, tangent)
    return dual


class UnpackedDualTensor(NamedTuple):
    """Namedtuple returned by `unpack_dual` containing the primal and tangent components
    of the dual tensor."""

    primal: Tensor
    tangent: Tensor | None


def unpack_dual(tensor: Tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """Unpack a "dual tensor" to get both its Tensor value and its forward AD gradient.

    The result is a namedtuple `(primal, tangent)` where `primal` is a view of `tensor`'s
    primal and `tangent` is `tensor`'s tangent as it is (None without one). Outside a
    dual level it is `(tensor, None)`. This function is backward differentiable.
    """
    if level is None:
        level = _fw.current_level
    if level < 0:
        return UnpackedDualTensor(tensor, None)
    _check_level(level, "_fw_primal")
    primal = _alias(tensor)
    _fw.without_tangent(primal)
    return UnpackedDualTensor(primal, _fw.tangent_of(tensor))


class dual_level(contextlib.ContextDecorator):  # noqa: N801 - PyTorch's spelling
    """Context manager (and decorator) for forward AD, where all forward AD computation
    must occur within the `dual_level` context: it enters a level on entry, exits it (its
    tangents deleted) on exit. Only one level is supported at a time."""

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None:
        exit_dual_level()
