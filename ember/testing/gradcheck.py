"""Finite-difference checks of ember's gradients: `gradcheck` and `gradgradcheck`.

They work on any device: the function runs where its inputs live, and only the values
are brought to the host to be compared.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import ember
from ember.core.errors import with_context
from ember.core.tensor import Tensor
from ember.testing.creation import make_tensor


class GradcheckError(RuntimeError):
    """A gradient computed by autograd differs from its finite-difference estimate (a
    `RuntimeError`, as PyTorch's `torch.autograd.gradcheck.GradcheckError`)."""


def _as_tuple(x: Any) -> tuple:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _host(t: Tensor) -> np.ndarray:
    """The values of `t` on the host, as float64 (or bool/int for such tensors)."""
    return np.asarray(t.detach().to("cpu").numpy())


def _fmt_index(flat: int, shape: tuple[int, ...]) -> str:
    if not shape:
        return "()"
    return str(tuple(int(i) for i in np.unravel_index(flat, shape)))


def _differentiable_outputs(out: Any) -> list[Tensor]:
    """The outputs gradcheck checks: those that require grad (PyTorch's; a detached or
    integer output has no gradient to check)."""
    return [o for o in _as_tuple(out) if isinstance(o, Tensor) and o.requires_grad]


def _tensor_outputs(out: Any) -> list[Tensor]:
    return [o for o in _as_tuple(out) if isinstance(o, Tensor)]


def _evaluate(fn: Callable[..., Any], inputs: Sequence[Any],
              select: Callable[[Any], list[Tensor]] = _differentiable_outputs,
              ) -> list[np.ndarray]:
    # grad mode stays on: `fn` may itself differentiate (gradgradcheck's vjp does)
    return [_host(o).astype(np.float64) for o in select(fn(*inputs))]


def _numerical_jacobians(fn: Callable[..., Any], inputs: tuple, which: list[int], eps: float,
                         select: Callable[[Any], list[Tensor]] = _differentiable_outputs,
                         ) -> dict[int, list[np.ndarray]]:
    """For each input in `which`: one (n_out, n_in) matrix per output, by central
    differences. Each evaluation gets fresh input tensors, so the caller's tensors are
    never written to (and no version counter moves)."""
    result: dict[int, list[np.ndarray]] = {}
    for i in which:
        x = inputs[i]
        base = _host(x)
        columns: list[list[np.ndarray]] = []
        for j in range(base.size):
            plus, minus = base.copy(), base.copy()
            plus.flat[j] += eps
            minus.flat[j] -= eps
            outs = []
            for arr in (plus, minus):
                moved = ember.tensor(arr, dtype=x.dtype, device=x.device,
                                     requires_grad=True)
                args = list(inputs)
                args[i] = moved
                outs.append(_evaluate(fn, args, select))
            columns.append([(p - m).reshape(-1) / (2 * eps) for p, m in zip(*outs)])
        n_outputs = len(columns[0]) if columns else len(_evaluate(fn, inputs, select))
        result[i] = [
            np.stack([col[k] for col in columns], axis=1) if columns else
            np.zeros((0, 0)) for k in range(n_outputs)]
    return result


def _forward_jacobians(fn: Callable[..., Any], inputs: tuple, which: list[int],
                       outputs: list[Tensor]) -> dict[int, list[np.ndarray]]:
    """For each input in `which`: one (n_out, n_in) matrix per output, column by column
    with forward-mode AD (a unit tangent on one input element at a time)."""
    from ember.autograd import forward_ad as fwad

    result: dict[int, list[np.ndarray]] = {
        i: [np.zeros((o.numel(), inputs[i].numel())) for o in outputs] for i in which}
    # the outputs checked: those that require grad in a call with the inputs as given (a
    # dual input requires none)
    keep = [k for k, o in enumerate(_tensor_outputs(fn(*inputs))) if o.requires_grad]
    for i in which:
        x = inputs[i]
        for col in range(x.numel()):
            unit = np.zeros(tuple(x.shape), dtype=np.float64)
            unit.flat[col] = 1.0
            with fwad.dual_level():
                args = list(inputs)
                args[i] = fwad.make_dual(x.detach(), ember.tensor(unit, dtype=x.dtype,
                                                                  device=x.device))
                every = _tensor_outputs(fn(*args))
                for k, out in enumerate(every[k] for k in keep):
                    tangent = fwad.unpack_dual(out).tangent
                    if tangent is not None:
                        result[i][k][:, col] = _host(tangent).astype(np.float64).reshape(-1)
    return result


def _analytical_jacobians(outputs: list[Tensor], inputs: tuple, which: list[int],
                          ) -> dict[int, list[np.ndarray]]:
    """For each input in `which`: one (n_out, n_in) matrix per output, row by row with
    `ember.autograd.grad`. Checks each gradient's shape, dtype and device on the way."""
    diff_inputs = [inputs[i] for i in which]
    result: dict[int, list[np.ndarray]] = {
        i: [np.zeros((o.numel(), inputs[i].numel())) for o in outputs] for i in which}
    for k, out in enumerate(outputs):
        if not out.requires_grad:
            continue  # no input reaches this output: its Jacobian is zero
        for row in range(out.numel()):
            seed = np.zeros(tuple(out.shape), dtype=np.float64)
            seed.flat[row] = 1.0
            grad_out = ember.tensor(seed, dtype=out.dtype, device=out.device)
            grads = ember.autograd.grad(out, diff_inputs, grad_out, retain_graph=True,
                                        allow_unused=True)
            for i, g in zip(which, grads):
                if g is None:
                    continue
                x = inputs[i]
                if tuple(g.shape) != tuple(x.shape):
                    raise GradcheckError(
                        f"gradcheck: the gradient of input {i} has shape {list(g.shape)}, "
                        f"but the input has shape {list(x.shape)}")
                if g.dtype is not x.dtype:
                    raise GradcheckError(
                        f"gradcheck: the gradient of input {i} has dtype {g.dtype}, but the "
                        f"input has dtype {x.dtype}")
                if g.device != x.device:
                    raise GradcheckError(
                        f"gradcheck: the gradient of input {i} is on {g.device}, but the "
                        f"input is on {x.device}")
                result[i][k][row] = _host(g).astype(np.float64).reshape(-1)
    return result


def gradcheck(fn: Callable[..., Any], inputs: Any, *, eps: float = 1e-6, atol: float = 1e-5,
              rtol: float = 1e-3, raise_exception: bool = True, nondet_tol: float = 0.0,
              check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
              check_batched_grad: bool = False, check_batched_forward_grad: bool = False,
              check_forward_ad: bool = False, check_backward_ad: bool = True,
              fast_mode: bool = False, masked: bool | None = None) -> bool:
    r"""Check the gradients autograd computes for `fn` against central finite differences.

    Like `torch.autograd.gradcheck`: every input that requires grad is perturbed element
    by element (:math:`(f(x + \epsilon) - f(x - \epsilon)) / 2\epsilon`), and the
    resulting Jacobian of every floating-point output is compared with the one autograd
    gives, row by row. Use float64 inputs: float32 has too few digits for these
    differences. The gradients' shape, dtype and device must match their input's.

    Args:
        fn: a function of `inputs` returning a tensor or a tuple of tensors.
        inputs: a tensor or a tuple of arguments; those that are tensors requiring grad
            are checked, the rest are passed through unchanged.
        eps: the perturbation of the finite differences.
        atol: absolute tolerance.
        rtol: relative tolerance (relative to the numerical value).
        raise_exception: raise `GradcheckError` on a mismatch (otherwise return False).
        check_forward_ad: also check the Jacobian forward-mode AD gives (one
            `ember.autograd.forward_ad` JVP per input element).
        check_backward_ad: check the Jacobian backward-mode AD gives (the default).
        nondet_tol, check_undefined_grad, check_grad_dtypes, check_batched_grad,
            check_batched_forward_grad, masked: PyTorch's options, accepted for its
            signature; ember always checks dtypes.
        fast_mode: PyTorch's fast mode: instead of whole Jacobians, compare
            :math:`v^T J u` for random unit vectors `u` (per input) and `v` (per output),
            J u by one central difference per input, :math:`v^T J` by one backward pass
            per output (J u by forward mode with `check_forward_ad`). The vectors come
            from a fresh `ember.Generator()`, as PyTorch's; a mismatch recomputes the
            Jacobians element by element for the message.

    Returns:
        True when every gradient matches.

    Raises:
        GradcheckError: naming the output, the input and the worst element, with both
            values, when a gradient does not match (and `raise_exception` is true).

    Example::

        >>> x = ember.randn(3, dtype=ember.float64, requires_grad=True)
        >>> gradcheck(lambda t: (t * t).sin(), (x,))
        True
    """
    inputs = _as_tuple(inputs)
    which = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not which:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, "
                         "but none of them have requires_grad=True.")
    for i in which:
        if inputs[i].dtype.is_complex:
            raise ValueError(f"gradcheck: input {i} is {inputs[i].dtype}; ember checks real "
                             "float64 inputs")
        if inputs[i].dtype is not ember.float64:  # PyTorch's warning: it checks anyway
            warnings.warn(f"Input #{i} requires gradient and is not a double precision "
                          "floating point or complex. This check will likely fail if all the "
                          "inputs are not of double precision floating point or complex. ",
                          stacklevel=2)
    outputs = _differentiable_outputs(fn(*inputs))
    try:
        if not outputs:  # then the numerical gradients must be zero (PyTorch's check)
            _check_no_differentiable_outputs(fn, inputs, which, eps)
        elif fast_mode:
            _fast_check(fn, inputs, which, outputs, eps, atol, rtol, check_backward_ad,
                        check_forward_ad)
        else:
            _slow_check(fn, inputs, which, outputs, eps, atol, rtol, check_backward_ad,
                        check_forward_ad)
        if check_undefined_grad and check_backward_ad:
            _check_zero_grads(fn, inputs, which)
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


def _slow_check(fn: Callable[..., Any], inputs: tuple, which: list[int], outputs: list[Tensor],
                eps: float, atol: float, rtol: float, backward: bool, forward: bool) -> None:
    """gradcheck's whole Jacobians, element by element (see `gradcheck`)."""
    numerical = _numerical_jacobians(fn, inputs, which, eps)
    found = []
    if backward:
        found.append(_analytical_jacobians(outputs, inputs, which))
    if forward:
        found.append(_forward_jacobians(fn, inputs, which, outputs))
    for mode, analytical in zip(("" if backward else "computed with forward mode ",
                                 "computed with forward mode "), found):
        for i in which:
            for k, (a, n) in enumerate(zip(analytical[i], numerical[i])):
                _compare(a, n, i, k, inputs[i], tuple(outputs[k].shape), atol, rtol, mode)


def _check_no_differentiable_outputs(fn: Callable[..., Any], inputs: tuple, which: list[int],
                                     eps: float) -> None:
    numerical = _numerical_jacobians(fn, inputs, which, eps, select=_tensor_outputs)
    if any(np.any(j != 0) for i in which for j in numerical[i]):
        raise GradcheckError("Numerical gradient for function expected to be zero")


def _check_zero_grads(fn: Callable[..., Any], inputs: tuple, which: list[int]) -> None:
    """PyTorch's undefined-gradient check: with zero gradients for the outputs (all at
    once, then one output at a time where there are several, each time from a new call of
    `fn`), the inputs' gradients must be zero or None."""
    diff_inputs = [inputs[i] for i in which]

    def check(outs: list[Tensor]) -> None:
        zeros = [ember.zeros_like(o) for o in outs]
        try:
            grads = ember.autograd.grad(outs, diff_inputs, zeros, allow_unused=True)
        except RuntimeError as err:
            raise GradcheckError(
                "Expected backward function to handle undefined output grads. Please look "
                'at "Notes about undefined output gradients" in '
                '"tools/autograd/derivatives.yaml"') from err
        if any(g is not None and not bool((g == 0).all()) for g in grads):
            raise GradcheckError(
                "Expected all input grads to be undefined or zero when all output grads are "
                'undefined or zero. Please look at "Notes about undefined output gradients" '
                'in "tools/autograd/derivatives.yaml"')

    def requiring_grad() -> list[Tensor]:
        return [o for o in _differentiable_outputs(fn(*inputs)) if o.requires_grad]

    first = requiring_grad()
    runs = [first] + ([requiring_grad() for _ in first] if len(first) > 1 else [])
    for outs in runs:
        if outs:
            check(outs)


def _unit_vectors(tensors: Sequence[Tensor], generator: Any) -> list[np.ndarray]:
    """PyTorch's fast-mode vectors: `rand(numel)` (float32) in the tensor's dtype, divided
    by its norm, flat, as float64."""
    out = []
    for t in tensors:
        vec = ember.rand(t.numel(), generator=generator).to(t.dtype)
        out.append(_host(vec / vec.norm()).astype(np.float64))
    return out


def _fast_check(fn: Callable[..., Any], inputs: tuple, which: list[int], outputs: list[Tensor],
                eps: float, atol: float, rtol: float, backward: bool, forward: bool) -> None:
    """gradcheck's fast mode (see `gradcheck`; PyTorch's `_fast_gradcheck`)."""
    generator = ember.Generator()  # (a fresh one: the caller's random state is kept)
    all_u = _unit_vectors([inputs[i] for i in which], generator)
    all_v = _unit_vectors(outputs, generator)
    numerical = {}  # per input: J u per output, by one central difference
    for i, u in zip(which, all_u):
        x = inputs[i]
        base = _host(x)
        delta = u.reshape(base.shape) * eps
        outs = []
        for arr in (base - delta, base + delta):
            args = list(inputs)
            args[i] = ember.tensor(arr, dtype=x.dtype, device=x.device, requires_grad=True)
            outs.append(_evaluate(fn, args))
        numerical[i] = [(b - a).reshape(-1) / (2 * eps) for a, b in zip(*outs)]
    if backward:
        analytical = _vjp_times_u(outputs, inputs, which, all_v, all_u)
        for index, (i, u) in enumerate(zip(which, all_u)):
            for k, v in enumerate(all_v):
                # (atol scaled by v^T M u for M all ones: PyTorch's _adjusted_atol)
                _fast_compare(fn, inputs, outputs, (index, i), k, analytical[k][index],
                              float(v @ numerical[i][k]), atol * u.sum() * v.sum(), rtol,
                              eps)
    if forward:
        jacobians = _forward_jacobians(fn, inputs, which, outputs)
        for index, (i, u) in enumerate(zip(which, all_u)):
            for k in range(len(outputs)):
                ju, n = jacobians[i][k] @ u, numerical[i][k]
                if not np.all(np.abs(ju - n) <= atol * u.sum() + rtol * np.abs(n)):
                    raise GradcheckError(
                        f"Jacobian computed with forward mode mismatch for output {k} with "
                        f"respect to input {index},\nnumerical:{ember.tensor(n)}\n"
                        f"analytical:{ember.tensor(ju)}\n")


def _vjp_times_u(outputs: list[Tensor], inputs: tuple, which: list[int], all_v: list,
                 all_u: list) -> list[list[float]]:
    """Per output k, per input: (v_k^T J) u, with one backward pass per output."""
    diff_inputs = [inputs[i] for i in which]
    result = []
    for out, v in zip(outputs, all_v):
        if not out.requires_grad:
            result.append([0.0] * len(which))
            continue
        seed = ember.tensor(v.reshape(tuple(out.shape)), dtype=out.dtype, device=out.device)
        grads = ember.autograd.grad(out, diff_inputs, seed, retain_graph=True,
                                    allow_unused=True)
        result.append([0.0 if g is None else float(_host(g).reshape(-1) @ u)
                       for g, u in zip(grads, all_u)])
    return result


def _fast_compare(fn: Callable[..., Any], inputs: tuple, outputs: list[Tensor],
                  which: tuple[int, int], k: int, a: float, n: float, atol: float,
                  rtol: float, eps: float) -> None:
    """Compare v^T J u of output k and input `which` (its index among the inputs that
    require grad, which PyTorch's message names, and its position) both ways."""
    if abs(a - n) <= atol + rtol * abs(n):
        return
    index, i = which
    # PyTorch's message: the two scalars, then both Jacobians recomputed in slow mode
    slow_n = _numerical_jacobians(fn, inputs, [i], eps)[i][k]
    slow_a = _analytical_jacobians(outputs, inputs, [i])[i][k]
    diff = float(np.abs(slow_n - slow_a).max()) if slow_n.size else 0.0
    msg = (f"Jacobian mismatch for output {k} with respect to input {index},\n"
           f"numerical:{n!r}\nanalytical:{a!r}\n"
           "\nThe above quantities relating the numerical and analytical jacobians are "
           "computed \nin fast mode. See: https://github.com/pytorch/pytorch/issues/53876 "
           "for more background \nabout fast mode. Below, we recompute numerical and "
           "analytical jacobians in slow mode:\n\n"
           f"Numerical:\n {ember.tensor(slow_n.T, dtype=inputs[i].dtype)}\n"
           f"Analytical:\n{ember.tensor(slow_a.T, dtype=inputs[i].dtype)}\n\n"
           f"The max per-element difference (slow mode) is: {diff!r}.\n")
    if np.all(np.abs(slow_a - slow_n) <= atol + rtol * np.abs(slow_n)):
        msg += _FAST_FAIL_SLOW_OK
    raise GradcheckError(msg)


_FAST_FAIL_SLOW_OK = """
Fast gradcheck failed but element-wise differences are small. This means that the
test might've passed in slow_mode!

If you are adding a new operator, please file an issue and then use one of the
workarounds. The workaround depends on how your test invokes gradcheck/gradgradcheck:

If the test
- manually invokes gradcheck/gradgradcheck, then call gradcheck/gradgradcheck
  with `fast_mode=False` as a keyword argument.
- is OpInfo-based (e.g., in test_ops_gradients.py), then modify the OpInfo for the test
  to have `gradcheck_fast_mode=False`
- is a Module test (e.g., in common_nn.py), then modify the corresponding
  module_test entry to have `gradcheck_fast_mode=False`
""".strip()


def _compare(a: np.ndarray, n: np.ndarray, i: int, k: int, x: Tensor, out_shape: tuple,
             atol: float, rtol: float, mode: str = "") -> None:
    in_shape = tuple(x.shape)
    if a.shape != n.shape:
        raise GradcheckError(f"gradcheck: Jacobian of output {k} with respect to input {i} has "
                             f"shape {a.shape} analytically but {n.shape} numerically")
    err = np.abs(a - n) - (atol + rtol * np.abs(n))
    bad = ~(err <= 0)  # also catches NaN
    if not bad.any():
        return
    worst = int(np.nanargmax(np.where(np.isnan(err), np.inf, err)))
    row, col = divmod(worst, a.shape[1])
    # PyTorch's message: the two Jacobians, one row per input element; ember's finding
    # (how many entries differ, the worst one) in a note
    msg = (f"Jacobian {mode}mismatch for output {k} with respect to input {i},\n"
           f"numerical:{ember.tensor(n.T, dtype=x.dtype)}\n"
           f"analytical:{ember.tensor(a.T, dtype=x.dtype)}\n")  # (in the input's dtype)
    raise with_context(GradcheckError(msg), (
        f"{int(bad.sum())} of {a.size} entries differ; worst: input {i} element "
        f"{_fmt_index(col, in_shape)} -> output {k} element {_fmt_index(row, out_shape)}: "
        f"analytical {float(a[row, col])!r} vs numerical {float(n[row, col])!r} (tolerance "
        f"atol={atol} + rtol={rtol} * |numerical|)"))


def gradgradcheck(fn: Callable[..., Any], inputs: Any, grad_outputs: Any = None, *,
                  eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
                  gen_non_contig_grad_outputs: bool = False, raise_exception: bool = True,
                  nondet_tol: float = 0.0, check_undefined_grad: bool = True,
                  check_grad_dtypes: bool = False, check_batched_grad: bool = False,
                  check_fwd_over_rev: bool = False, check_rev_over_rev: bool = True,
                  fast_mode: bool = False, masked: bool = False) -> bool:
    """Check second derivatives: `gradcheck` of the vector-Jacobian product of `fn`.

    The gradients of `fn(*inputs)` are taken with `ember.autograd.grad(...,
    create_graph=True)` against `grad_outputs` (random float64 tensors when None, which
    are then checked too), and that function is checked with `gradcheck`:
    `check_rev_over_rev` by reverse mode, `check_fwd_over_rev` by forward mode. The other
    keyword arguments are PyTorch's, accepted as `gradcheck` accepts them.

    Returns:
        True when every second derivative matches.

    Raises:
        GradcheckError: as `gradcheck`.
    """
    inputs = _as_tuple(inputs)
    which = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    outputs = _differentiable_outputs(fn(*inputs))
    if grad_outputs is None:
        # PyTorch's draw: make_tensor in [-1, 1) from the global generator, so the random
        # stream after a gradgradcheck is PyTorch's
        grad_outputs = tuple(
            make_tensor(o.shape, dtype=o.dtype if o.dtype.is_floating_point or o.dtype.is_complex
                        else ember.float64, device=o.device, low=-1, high=1,
                        requires_grad=True, noncontiguous=gen_non_contig_grad_outputs)
            for o in outputs)
    grad_outputs = _as_tuple(grad_outputs)
    n = len(inputs)

    def vjp(*args: Any) -> tuple:
        xs, gs = args[:n], args[n:]
        outs = _differentiable_outputs(fn(*xs))
        pairs = [(o, g) for o, g in zip(outs, gs) if o.requires_grad]
        grads = ember.autograd.grad([o for o, _ in pairs], [xs[i] for i in which],
                                    [g for _, g in pairs], create_graph=True,
                                    allow_unused=True)
        # an input the first derivative does not depend on gives no output here
        return tuple(g for g in grads if g is not None)

    return gradcheck(vjp, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, check_forward_ad=check_fwd_over_rev,
                     check_backward_ad=check_rev_over_rev, fast_mode=fast_mode)
