"""`ember.autograd.functional` (torch.autograd.functional): Jacobians, Hessians and their
products with vectors, for a function of tensors, built on reverse-mode autograd.

`vjp`, `jacobian` (row by row) and `vhp` are backward passes; `jvp`, `hvp` and the
"forward-mode" strategies use the double-backward trick PyTorch's own functions use: the
gradient of a vector-Jacobian product with respect to the vector is the Jacobian-vector
product. The results, their shapes and structure (a Tensor for a Tensor, tuples for
tuples), `create_graph` and `strict` and the error messages are PyTorch's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.core.creation import zeros_like
from ember.core.engine import grad as _grad
from ember.core.grad_mode import enable_grad, is_grad_enabled, set_grad_enabled
from ember.core.ops.shape import stack
from ember.core.tensor import Tensor

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]


# -- helpers (PyTorch's structure, so that every corner behaves as there) ----------------

def _as_tuple(inp: Any, arg_name: str, fn_name: str) -> tuple[bool, tuple]:
    """(whether `inp` was a tuple, `inp` as a tuple of Tensors); TypeError otherwise."""
    is_tuple = isinstance(inp, tuple)
    items = inp if is_tuple else (inp,)
    for i, el in enumerate(items):
        if not isinstance(el, Tensor):
            where = f"the value at index {i}" if is_tuple else f"the given {arg_name}"
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a "
                            f"tuple of Tensors but {where} has type {type(el)}.")
    return is_tuple, items


def _tuple_postprocess(res: Any, to_unpack: Any) -> Any:
    """Unpack the one-element tuples the caller did not pass as tuples."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs: tuple, create_graph: bool, need_graph: bool) -> tuple:
    """Inputs the function runs on: with `create_graph`, a view of an input that requires
    grad (so the result stays differentiable with respect to the caller's tensor); else a
    detached copy that requires grad as `need_graph` says."""
    return tuple(inp.view_as(inp) if create_graph and inp.requires_grad
                 else inp.detach().requires_grad_(need_graph) for inp in inputs)


def _grad_postprocess(inputs: tuple, create_graph: bool) -> tuple:
    if isinstance(inputs[0], Tensor):
        return inputs if create_graph else tuple(inp.detach() for inp in inputs)
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v: tuple, other: tuple, is_other_tuple: bool) -> None:
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got "
                               f"{len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.size() != el_other.size():
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(f"{prepend}v has invalid size: should be {el_other.size()} but "
                               f"got {el_v.size()}.")


def _check_requires_grad(inputs: tuple, input_type: str, strict: bool) -> None:
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:  # (only grad_inputs can hold None)
            raise RuntimeError(f"The output of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode.")
        if inp.requires_grad:
            continue
        if input_type == "hessian":
            raise RuntimeError(f"The hessian of the user-provided function with respect to "
                               f"input {i} is independent of the input. This is not allowed in "
                               "strict mode. You should ensure that your function is thrice "
                               "differentiable and that the hessian depends on the inputs.")
        if input_type == "jacobian":
            raise RuntimeError("While computing the hessian, found that the jacobian of the "
                               f"user-provided function with respect to input {i} is "
                               "independent of the input. This is not allowed in strict mode. "
                               "You should ensure that your function is twice differentiable "
                               "and that the jacobian depends on the inputs (this would be "
                               "violated by a linear function for example).")
        if input_type == "grad_inputs":
            raise RuntimeError(f"The gradient with respect to input {i} is independent of the "
                               "inputs of the user-provided function. This is not allowed in "
                               "strict mode.")
        raise RuntimeError(f"Output {i} of the user-provided function does not require "
                           "gradients. The outputs must be computed in a differentiable "
                           "manner from the input when running in strict mode.")


def _autograd_grad(outputs: tuple, inputs: tuple, grad_outputs: tuple | None = None,
                   create_graph: bool = False, retain_graph: bool | None = None) -> tuple:
    """autograd.grad that skips outputs which are None or do not require grad (None for
    every input when none is left)."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(out, g) for out, g in zip(outputs, grad_outputs)
             if out is not None and out.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return tuple(_grad([o for o, _ in pairs], list(inputs), [g for _, g in pairs],
                       retain_graph=retain_graph, create_graph=create_graph,
                       allow_unused=True))


_ZERO_MESSAGES = {
    "back": "The output of the user-provided function is independent of input {i}. This is "
            "not allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the "
                  "grad_outputs when using the double backward trick to compute forward mode "
                  "gradients. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. "
                   "This is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry "
                         "{i} in the grad_jacobian. This is not allowed in strict mode as it "
                         "prevents from using the double backward trick to replace forward "
                         "mode AD.",
}


def _fill_in_zeros(grads: tuple, refs: tuple, strict: bool, create_graph: bool,
                   stage: str) -> tuple:
    """Zeros where a gradient is None (an input the result does not depend on)."""
    res = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_ZERO_MESSAGES[stage].format(i=i))
            g = zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            raise RuntimeError(_ZERO_MESSAGES[stage].format(i=i))
        res.append(g)
    return tuple(res)


def _single_element_v(v: Any, against: tuple, fn_name: str, what: str, create_graph: bool,
                      is_tuple: bool) -> tuple | None:
    """`v` as a validated tuple; None is allowed only against one single-element tensor."""
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
        _validate_v(v, against, is_tuple)
        return v
    if len(against) != 1 or against[0].nelement() != 1:
        raise RuntimeError(f"The vector v can only be None if {what} a single Tensor with a "
                           "single element.")
    return None


# -- the functions ---------------------------------------------------------------------------

def vjp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    r"""Compute the dot product between a vector ``v`` and the Jacobian of ``func`` at
    ``inputs``. Returns ``(func_output, vjp)``."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                              "vjp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        v = _single_element_v(v, outputs, "vjp", "the user-provided function returns",
                              create_graph, is_outputs_tuple)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "back")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(result, is_inputs_tuple))


def jvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    r"""Compute the dot product between the Jacobian of ``func`` at ``inputs`` and a vector
    ``v`` (through the double-backward trick). Returns ``(func_output, jvp)``."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _single_element_v(v, inputs, "jvp", "the input to the user-provided function is",
                              create_graph, is_inputs_tuple)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                              "jvp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        # the backward pass is linear in grad_outputs: their value never reaches the result
        grad_outputs = tuple(zeros_like(out, requires_grad=True) for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict=strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(grad_inputs, grad_outputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, outputs, strict, create_graph, "back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(result, is_outputs_tuple))


def _jacobian_rows(outputs: tuple, inputs: tuple, create_graph: bool, strict: bool) -> tuple:
    """The Jacobian by reverse mode, one backward pass per output element."""
    jacobian = []
    for out in outputs:
        rows: tuple[list, ...] = tuple([] for _ in inputs)
        flat = out.reshape(-1)
        i = len(jacobian)  # (PyTorch's messages name the output index twice)
        for j in range(out.nelement()):
            vj = _autograd_grad((flat[j],), inputs, retain_graph=True, create_graph=create_graph)
            for k, (row, vj_el, inp) in enumerate(zip(rows, vj, inputs)):
                if vj_el is None:
                    if strict:
                        raise RuntimeError(f"Output {i} of the user-provided function is "
                                           f"independent of input {k}. This is not allowed "
                                           "in strict mode.")
                    vj_el = zeros_like(inp)
                elif strict and create_graph and not vj_el.requires_grad:
                    raise RuntimeError("The jacobian of the user-provided function is "
                                       f"independent of input {i}. This is not allowed in "
                                       "strict mode when create_graph=True.")
                row.append(vj_el)
        # (an output without elements has no rows: stack raises, as PyTorch's does)
        jacobian.append(tuple(stack(row, dim=0).view(tuple(out.size()) + tuple(inp.size()))
                              for row, inp in zip(rows, inputs)))
    return tuple(jacobian)


def _jacobian_columns(func: Callable, inputs: tuple, strict: bool) -> list:
    """The Jacobian by forward mode (one Jacobian-vector product per input element)."""
    outputs = None
    columns: list[list[tuple]] = []  # per input: one jvp (a tuple over outputs) per element
    for k, inp in enumerate(inputs):
        cols = []
        for j in range(inp.nelement()):
            basis = tuple(zeros_like(x) for x in inputs)
            basis[k].view(-1)[j] = 1
            outputs, col = jvp(func, inputs, basis, strict=strict)
            cols.append(col if isinstance(col, tuple) else (col,))
        columns.append(cols)
    if outputs is None:
        outputs = func(*inputs)
    outs = outputs if isinstance(outputs, tuple) else (outputs,)
    # lists, not tuples: PyTorch's forward-mode jacobian returns them so
    return [[(stack([c[i] for c in columns[k]], dim=-1) if columns[k]
              else zeros_like(out).reshape(*out.shape, 0))
             .view(tuple(out.size()) + tuple(inputs[k].size())) for k in range(len(inputs))]
            for i, out in enumerate(outs)]


def jacobian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode") -> Any:
    r"""Compute the Jacobian of ``func`` at ``inputs``: for one output and one input, a
    Tensor of shape ``output.shape + input.shape``; tuples (over outputs, then inputs)
    where either is a tuple. ``vectorize`` computes the same values (ember runs the rows
    one after another)."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or '
                             '"reverse-mode". Hint: If your function has more outputs than '
                             'inputs, "forward-mode" tends to be more performant. Otherwise, '
                             'prefer to use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError("torch.autograd.functional.jacobian: `create_graph=True` "
                                      "and `strategy=\"forward-mode\"` are not supported "
                                      "together (yet). Please either set `create_graph=False` "
                                      "or `strategy=\"reverse-mode\"`.")
        if strict:
            raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and "
                               "`strategy=\"forward-mode\"` are not supported together "
                               "(yet). Please either set `strict=False` or "
                               "`strategy=\"reverse-mode\"`.")
        if not vectorize:
            raise NotImplementedError("Computing Jacobian using forward-AD or "
                                      "forward-over-reverse Hessian is"  # (PyTorch's words)
                                      "only implemented for `vectorize=True`.")
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        if strategy == "forward-mode":
            is_outputs_tuple = isinstance(func(*inputs), tuple)
            return _tuple_postprocess(_jacobian_columns(func, inputs, strict),
                                      (is_outputs_tuple, is_inputs_tuple))
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                              "jacobian")
        _check_requires_grad(outputs, "outputs", strict=strict)
        if vectorize and strict:
            raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and "
                               "`vectorized=True` are not supported together. Please either "
                               "set `strict=False` or `vectorize=False`.")
        result = _grad_postprocess(_jacobian_rows(outputs, inputs, create_graph, strict),
                                   create_graph)
        return _tuple_postprocess(result, (is_outputs_tuple, is_inputs_tuple))


def hessian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode") -> Any:
    r"""Compute the Hessian of a scalar function ``func`` at ``inputs``: a Tensor of shape
    ``input.shape + input.shape`` for one input, a tuple of tuples for several."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or '
                             '"reverse-mode".')

    def ensure_single_output_function(*inp: Tensor) -> Tensor:
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict=strict)
        if is_out_tuple or not isinstance(out, Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.nelement() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should "
                               "contain a single element")
        return out.squeeze()

    def jac_func(*inp: Tensor) -> Any:
        if outer_jacobian_strategy == "forward-mode":
            inp = tuple(t.requires_grad_(True) for t in inp)
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict,
                   vectorize=vectorize, strategy=outer_jacobian_strategy)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def _scalar_function_check(outputs: tuple, is_outputs_tuple: bool, fn_name: str) -> None:
    if is_outputs_tuple or not isinstance(outputs[0], Tensor):
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].nelement() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should "
                           "contain a single element")


def vhp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    r"""Compute the dot product between vector ``v`` and the Hessian of a scalar function
    ``func`` at ``inputs``. Returns ``(func_output, vhp)``."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vhp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _single_element_v(v, inputs, "vhp", "the input to the user-provided function is",
                              create_graph, is_inputs_tuple)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                              "vhp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        _scalar_function_check(outputs, is_outputs_tuple, "vhp")
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(result, is_inputs_tuple))


def hvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    r"""Compute the dot product between the Hessian of a scalar function ``func`` at
    ``inputs`` and vector ``v`` (the double-backward trick). Returns ``(func_output,
    hvp)``."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _single_element_v(v, inputs, "hvp", "the input to the user-provided function is",
                              create_graph, is_inputs_tuple)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                              "hvp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        _scalar_function_check(outputs, is_outputs_tuple, "hvp")
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        grad_jac = tuple(zeros_like(inp, requires_grad=True) for inp in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict=strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(double_back, grad_jac, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(result, is_inputs_tuple))
