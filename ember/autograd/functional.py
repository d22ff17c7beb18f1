"""`ember.autograd.functional` (PyTorch's torch.autograd.functional): Jacobians, Hessians
and vector products of a function, by reverse-mode autograd (a Jacobian row per output
element; Jacobian-vector products by differentiating a vector-Jacobian product again)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ember
from ember.core.tensor import Tensor

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]


def _as_tuple(x: Any, arg: str, fn: str) -> tuple[bool, tuple[Tensor, ...]]:
    is_tuple = isinstance(x, (tuple, list))
    items = tuple(x) if is_tuple else (x,)
    for i, t in enumerate(items):
        if not isinstance(t, Tensor):
            if is_tuple:
                raise TypeError(f"The {arg} given to {fn} must be either a Tensor or a tuple of "
                                f"Tensors but the value at index {i} has type {type(t)}.")
            raise TypeError(f"The {arg} given to {fn} must be either a Tensor or a tuple of "
                            f"Tensors but the given {arg} has type {type(t)}.")
    return is_tuple, items


def _grad_preprocess(inputs: tuple[Tensor, ...], create_graph: bool) -> tuple[Tensor, ...]:
    # fresh leaves; with create_graph a view keeps them connected to an outer graph
    return tuple(x.view_as(x) if create_graph and x.requires_grad
                 else x.detach().requires_grad_(True) for x in inputs)


def _grads(outputs: tuple[Tensor, ...], inputs: tuple[Tensor, ...], grad_outputs: Any,
           create_graph: bool) -> tuple[Tensor, ...]:
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if not pairs:
        return tuple(ember.zeros_like(x) for x in inputs)
    got = ember.autograd.grad([o for o, _ in pairs], inputs, [g for _, g in pairs],
                              create_graph=create_graph, allow_unused=True)
    return tuple(ember.zeros_like(x) if g is None else g for x, g in zip(inputs, got))


def _fix(x: Any, create_graph: bool) -> Any:
    if isinstance(x, tuple):
        return tuple(_fix(t, create_graph) for t in x)
    return x if create_graph else x.detach()


def vjp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    r"""Compute the dot product between a vector ``v`` and the Jacobian of the given
    function at the point given by the inputs.

    Returns:
        (func_output, vjp): the function's output and the product, shaped as the inputs.
    """
    with ember.enable_grad():
        in_tuple, inputs_t = _as_tuple(inputs, "inputs", "vjp")
        inputs_t = _grad_preprocess(inputs_t, create_graph)
        out = func(*inputs_t)
        out_tuple, outputs = _as_tuple(out, "outputs of the user-provided function", "vjp")
        if v is None:
            if len(outputs) != 1 or outputs[0].numel() != 1:
                raise RuntimeError("The vector v can only be None if the user-provided function "
                                   "returns a single Tensor with a single element.")
            vs = (ember.ones_like(outputs[0]),)
        else:
            vs = _as_tuple(v, "v", "vjp")[1]
        result = _grads(outputs, inputs_t, vs, create_graph)
    outs = _fix(outputs if out_tuple else outputs[0], create_graph)
    return outs, _fix(result if in_tuple else result[0], create_graph)


def jvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    r"""Compute the dot product between the Jacobian of the given function at the point
    given by the inputs and a vector ``v`` (the double-backward trick).

    Returns:
        (func_output, jvp): the function's output and the product, shaped as the output.
    """
    with ember.enable_grad():
        in_tuple, inputs_t = _as_tuple(inputs, "inputs", "jvp")
        inputs_t = _grad_preprocess(inputs_t, create_graph)
        if v is None:
            if len(inputs_t) != 1 or inputs_t[0].numel() != 1:
                raise RuntimeError("The vector v can only be None if the input to the "
                                   "user-provided function is a single Tensor with a single "
                                   "element.")
            vs = (ember.ones_like(inputs_t[0]),)
        else:
            vs = _as_tuple(v, "v", "jvp")[1]
        out = func(*inputs_t)
        out_tuple, outputs = _as_tuple(out, "outputs of the user-provided function", "jvp")
        dummies = tuple(ember.zeros_like(o).requires_grad_(True) for o in outputs)
        g = _grads(outputs, inputs_t, dummies, True)  # linear in the dummies
        result = _grads(g, dummies, vs, create_graph)
    outs = _fix(outputs if out_tuple else outputs[0], create_graph)
    return outs, _fix(result if out_tuple else result[0], create_graph)


def jacobian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode") -> Any:
    r"""Compute the Jacobian of a given function.

    Returns:
        The Jacobian (a Tensor of shape ``output.shape + input.shape`` for one input and
        one output; else ``result[i][j]`` for output ``i`` and input ``j``).
    """
    if strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: '
                         'If your function has more outputs than inputs, "forward-mode" tends '
                         'to be more performant. Otherwise, prefer to use "reverse-mode".')
    with ember.enable_grad():
        in_tuple, inputs_t = _as_tuple(inputs, "inputs", "jacobian")
        inputs_t = _grad_preprocess(inputs_t, create_graph)
        out = func(*inputs_t)
        out_tuple, outputs = _as_tuple(out, "outputs of the user-provided function", "jacobian")
        jac: list[tuple[Tensor, ...]] = []
        for o in outputs:
            flat = o.reshape(-1)
            rows: list[list[Tensor]] = [[] for _ in inputs_t]
            for k in range(flat.numel()):
                onehot = ember.zeros_like(flat)
                onehot[k] = 1.0
                g = _grads((flat,), inputs_t, (onehot,), create_graph or True) \
                    if flat.requires_grad else tuple(ember.zeros_like(x) for x in inputs_t)
                for j, gj in enumerate(g):
                    rows[j].append(gj)
            jac.append(tuple(
                (ember.stack(r) if r else ember.zeros((0,) + tuple(x.shape), dtype=x.dtype))
                .reshape(tuple(o.shape) + tuple(x.shape)) for r, x in zip(rows, inputs_t)))
    result = _fix(tuple(jac), create_graph)
    if not out_tuple:
        result = result[0]
        return result if in_tuple else result[0]
    return result if in_tuple else tuple(r[0] for r in result)


def hessian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode") -> Any:
    r"""Compute the Hessian of a given scalar function.

    Returns:
        The Hessian (shape ``input.shape + input.shape`` for one input; else
        ``result[i][j]``).
    """
    in_tuple, inputs_t = _as_tuple(inputs, "inputs", "hessian")

    def jac_func(*inp: Tensor) -> Any:
        out = func(*inp)
        if not isinstance(out, Tensor) or out.numel() != 1:
            raise RuntimeError("The function given to hessian should return a single Tensor "
                               "with a single element.")
        return jacobian(func, inp, create_graph=True)

    result = jacobian(jac_func, inputs_t, create_graph=create_graph)
    return result if in_tuple else result[0][0]


def vhp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    r"""Compute the dot product between vector ``v`` and the Hessian of a given scalar
    function at a specified point. Returns ``(func_output, vhp)``."""
    with ember.enable_grad():
        in_tuple, inputs_t = _as_tuple(inputs, "inputs", "vhp")
        inputs_t = _grad_preprocess(inputs_t, create_graph)
        out = func(*inputs_t)
        if not isinstance(out, Tensor) or out.numel() != 1:
            raise RuntimeError("The function given to vhp should return a single Tensor with "
                               "a single element.")
        vs = _as_tuple(v, "v", "vhp")[1] if v is not None else (ember.ones_like(inputs_t[0]),)
        g = _grads((out,), inputs_t, (ember.ones_like(out),), True)
        result = _grads(g, inputs_t, vs, create_graph)
    return _fix(out, create_graph), _fix(result if in_tuple else result[0], create_graph)


def hvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    r"""Compute the dot product between the Hessian of a given scalar function and a vector
    ``v`` at a specified point (the Hessian is symmetric: the same as `vhp`). Returns
    ``(func_output, hvp)``."""
    return vhp(func, inputs, v, create_graph, strict)
