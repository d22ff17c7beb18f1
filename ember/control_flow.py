"""`torch.cond` and `torch.while_loop`, PyTorch's control-flow operators, run eagerly:
`cond` calls the branch its predicate picks and `while_loop` loops the body, after
PyTorch's argument checks. (PyTorch captures both branches, or the body, as graphs under
`torch.compile` and `torch.export`; ember's tracer records what runs, one branch.)"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.core.tensor import Tensor
from ember.utils import _pytree as pytree


def cond(pred: bool | int | float | Tensor, true_fn: Callable, false_fn: Callable,
         operands: tuple | list = ()) -> Any:
    r"""Conditionally applies `true_fn` or `false_fn`.

    Args:
        pred (Union[bool, torch.Tensor]): A boolean expression or a tensor with one
            element, indicating which branch function to apply.
        true_fn (Callable): A callable function (a -> b) that is within the scope that is
            being traced.
        false_fn (Callable): A callable function (a -> b) that is within the scope that is
            being traced. The true branch and false branch must have consistent input and
            outputs, meaning the inputs have to be the same, and the outputs have to be
            the same type and shape.
        operands (Tuple of possibly nested dict/list/tuple of torch.Tensor): A tuple of
            inputs to the true/false functions. It can be empty if true_fn/false_fn
            doesn't require input. Defaults to ().
    """
    if not isinstance(pred, (bool, int, float)):
        _validate_cond(pred, true_fn, false_fn, operands)
        pred = bool(pred)
    return true_fn(*operands) if pred else false_fn(*operands)


def _validate_cond(pred: Any, true_fn: Callable, false_fn: Callable, operands: Any) -> None:
    if not isinstance(pred, Tensor):
        raise RuntimeError(f"Expected pred to be bool or tensor, but got {pred}.")
    if pred.numel() != 1:
        raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got "
                           f"{pred}.")
    if not callable(true_fn) or not callable(false_fn):
        raise RuntimeError("Expect both branches to be callable.")
    if not isinstance(operands, (tuple, list)) or pytree.tree_any(
            lambda t: not isinstance(t, Tensor), operands):
        raise RuntimeError("Expect operands to be a tuple of possibly nested dict/list/tuple "
                           f"that only consists of tensor leaves, but got {operands}.")


def while_loop(cond_fn: Callable, body_fn: Callable, carried_inputs: tuple | list) -> Any:
    r"""Run `body_fn(*carried_inputs)` while `cond_fn(*carried_inputs)` returns True,
    each time carrying the body's outputs into the next iteration.

    Args:
        cond_fn (Callable): A callable function that returns a boolean Scalar tensor or a
            python boolean.
        body_fn (Callable): A callable function that takes the same inputs as `cond_fn`
            and returns a tuple of tensors or ints with the same metadata (shape, dtype)
            as the carried inputs.
        carried_inputs (Tuple of possibly nested dict/list/tuple of tensors or ints): A
            tuple of inputs to cond_fn and body_fn. It's also the initial value of states
            that are carried across iterations.
    """
    if not callable(cond_fn) or not callable(body_fn):
        raise RuntimeError("Expect cond_fn and body_fn to be callable.")
    if not pytree.tree_all(lambda t: isinstance(t, (Tensor, int)), carried_inputs):
        raise RuntimeError("Expect carried_inputs to be a tuple of possibly nested "
                           "dict/list/tuple that only"
                           f"consists of tensor or int leaves, but got {carried_inputs}.")
    carried = carried_inputs
    while bool(cond_fn(*carried)):
        out = body_fn(*carried)
        _check_same_metadata(out, carried)
        carried = out if isinstance(out, (tuple, list)) else (out,)
        result = out
    return result if carried is not carried_inputs else carried_inputs


def _check_same_metadata(out: Any, carried: Any) -> None:
    """The body's outputs must match the carried inputs in number, shape and dtype
    (PyTorch checks this when it captures the body)."""
    outs = pytree.tree_leaves(out)
    ins = pytree.tree_leaves(carried)
    if len(outs) != len(ins):
        raise RuntimeError(f"body_fn should return the same number of elements as "
                           f"carried_inputs but got: len(carried_inputs): {len(ins)}, "
                           f"len(body_fn_output): {len(outs)}.")
    for i, (o, c) in enumerate(zip(outs, ins)):
        if isinstance(o, Tensor) and isinstance(c, Tensor):
            for what, a, b in (("dtype", o.dtype, c.dtype), ("shape", o.shape, c.shape)):
                if a != b:
                    raise RuntimeError(f"Expected body_fn_output and carried_inputs to have "
                                       f"same metadata but found:\npair[{i}] differ in "
                                       f"'{what}: {a} vs {b}'")
