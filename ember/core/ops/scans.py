"""Scans beyond `cumsum` (`cumprod`, `cummax`, `cummin`, `logcumsumexp`) and finite
differences and integrals (`diff`, `gradient`, `trapezoid`, `cumulative_trapezoid`).

Every op here is a composite: a scan is Hillis and Steele's, ceil(log2(n)) steps of
elementwise work on shifted slices, so it runs on every backend and exports to ONNX
through its parts. cummax/cummin find their indices that way (without recording) and
take their values with `gather`, whose gradient is PyTorch's for them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.core import costs
from ember.core import dtype as dt
from ember.core.creation import arange, full
from ember.core.declare import composite
from ember.core.dispatch import kernel_refuses, refuse_unsigned
from ember.core.errors import as_overload_check, invalid_combination
from ember.core.grad_mode import no_grad
from ember.core.host import dtype_arg
from ember.core.ops.elementwise import logaddexp, to_dtype, where
from ember.core.ops.indexing import gather_in_bounds, narrow
from ember.core.ops.reduction import _got, in_float32
from ember.core.ops.reduction import sum as sum_
from ember.core.ops.shape import cat, reshape
from ember.core.return_types import return_type
from ember.core.shapes import normalize_dim
from ember.core.tensor import Tensor


def _scan(state: tuple, d: int, combine: Callable[[tuple, tuple], tuple]) -> tuple:
    """The inclusive scan of `state` (tensors of one shape) along `d`: each position
    combined with all before it, `combine(earlier, later)` associative."""
    n = state[0].shape[d]
    step = 1
    while step < n:
        earlier = tuple(narrow(t, d, 0, n - step) for t in state)
        later = tuple(narrow(t, d, step, n - step) for t in state)
        merged = combine(earlier, later)
        state = tuple(cat([narrow(t, d, 0, step), m], d) for t, m in zip(state, merged))
        step *= 2
    return state


def _scan_dim(op: str, input: Tensor, dim: int) -> int:
    return normalize_dim(op, dim, input.ndim)


# -- cumprod, logcumsumexp ----------------------------------------------------------


@composite(complex=True, node_label="CumprodBackward0",
           variants="function method inplace out", cost=costs.reduction(2))
def cumprod(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """The cumulative product along `dim` (integer and bool inputs give int64, as
    `cumsum`; `dtype` casts first)."""
    if dtype is not None:
        input = to_dtype(input, dtype_arg(dtype, "cumprod"))
    elif not input.dtype._differentiable:
        input = to_dtype(input, dt.int64)
    d = _scan_dim("cumprod", input, dim)
    if input.ndim == 0:
        return input.clone()
    if input._dtype in dt.HALF_DTYPES:  # PyTorch's: in float32, each output rounded
        return in_float32(cumprod, input, d)
    (out,) = _scan((input,), d, lambda a, b: (a[0] * b[0],))
    return out


@composite(variants="function method out", cost=costs.reduction(6),
           node_label="LogcumsumexpBackward0")
def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """`log(cumsum(exp(input), dim))`, computed without overflow."""
    if not input.dtype.is_floating_point:
        raise kernel_refuses("logcumsumexp_out_cpu", input.dtype)
    d = _scan_dim("logcumsumexp", input, dim)
    if input.ndim == 0:
        return input.clone()
    if input._dtype in dt.HALF_DTYPES:  # (as cumprod)
        return in_float32(logcumsumexp, input, d)
    (out,) = _scan((input,), d, lambda a, b: (logaddexp(a[0], b[0]),))
    return out




# -- cummax, cummin -----------------------------------------------------------------

CummaxResult = return_type("cummax", ["values", "indices"])
CumminResult = return_type("cummin", ["values", "indices"])


def _cum_extreme(op: str, input: Tensor, dim: int) -> tuple[Tensor, Tensor]:
    """Values and indices of the running max (min): the latest position that holds it
    wins ties, and a NaN, once seen, holds (PyTorch's rule)."""
    d = _scan_dim(op, input, dim)
    if input.ndim == 0:
        return input.clone(), full((), 0, dtype=dt.int64, device=input.device)
    with no_grad():
        key = to_dtype(input, dt.uint8) if input.dtype is dt.bool_ else input
        shape = [1] * input.ndim
        shape[d] = input.shape[d]
        idx = reshape(arange(input.shape[d], device=input.device), tuple(shape))
        idx = idx.expand(tuple(input.shape))
        better = (lambda new, old: new >= old) if op == "cummax" else \
            (lambda new, old: new <= old)

        def combine(earlier: tuple, later: tuple) -> tuple:
            (ev, ei), (lv, li) = earlier, later
            take = lv.isnan().logical_or(ev.isnan().logical_not().logical_and(better(lv, ev)))
            return where(take, lv, ev), where(take, li, ei)
        _, indices = _scan((key, idx), d, combine)
    return gather_in_bounds(input, d, indices), indices


@composite(variants="function method out", cost=costs.reduction(4),
           node_label="CummaxBackward0")
def cummax(input: Tensor, dim: int) -> Any:
    """The running maximum along `dim` and where it was found, as a named (values,
    indices) pair."""
    refuse_unsigned("cummax_cpu", input)
    return CummaxResult(*_cum_extreme("cummax", input, dim))


@composite(variants="function method out", cost=costs.reduction(4),
           node_label="CumminBackward0")
def cummin(input: Tensor, dim: int) -> Any:
    """The running minimum along `dim` and where it was found, as a named (values,
    indices) pair."""
    return CumminResult(*_cum_extreme("cummin", input, dim))


# -- finite differences and integrals --------------------------------------------------


@composite(complex=True, variants="function method", cost=costs.pointwise(1))
def diff(input: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None,
         append: Tensor | None = None) -> Tensor:
    """The `n`-th forward difference along `dim` (`out[i] = input[i + 1] - input[i]`,
    `n` times), after joining `prepend` and `append` to `input` there. Booleans give
    whether neighbours differ."""
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = normalize_dim("diff", dim, input.ndim)
    for t in (prepend, append):
        if t is not None:
            _check_diff_join(input, t, d)
    parts = [t for t in (prepend, input, append) if t is not None]
    out = cat(parts, d) if len(parts) > 1 else input
    for _ in range(n):
        length = out.shape[d]
        if length == 0:
            break
        later, earlier = narrow(out, d, 1, length - 1), narrow(out, d, 0, length - 1)
        out = later.logical_xor(earlier) if out.dtype is dt.bool_ else later - earlier
    return out


def _check_diff_join(input: Tensor, t: Tensor, d: int) -> None:
    """PyTorch's refusal of a prepend/append that cannot be joined to `input` along `d`."""
    if t.ndim != input.ndim:
        raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    for i, (want, got) in enumerate(zip(input.shape, t.shape)):
        if i != d and want != got:
            raise RuntimeError(f"diff expects the shape of tensor to prepend or append to "
                               f"match that of input except along the differencing "
                               f"dimension; input.size({i}) = {want}, but got tensor.size({i}) "
                               f"= {got}")


def _spacing(op: str, y: Tensor, x: Tensor | None, dx: Any, d: int) -> Any:
    """The sample spacing along `d`: a number, or differences of `x` shaped to broadcast
    against `y`'s neighbour sums."""
    if x is None:
        return 1 if dx is None else dx
    if x.ndim == 1:
        if x.shape[0] != y.shape[d]:
            raise RuntimeError(f"{op}: There must be one `x` value for each sample point")
        shape = [1] * y.ndim
        shape[d] = max(y.shape[d] - 1, 0)
        return reshape(diff(x), tuple(shape))
    return diff(x, dim=d - y.ndim)


def _neighbour_sums(op: str, y: Tensor, dim: int) -> tuple[Tensor, int]:
    if y.dtype is dt.bool_:
        raise RuntimeError(f"{op}: received a bool input for `y`, but bool is not supported")
    if y.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = normalize_dim(op, dim, y.ndim)
    length = y.shape[d]
    if length == 0:
        return y, d
    return narrow(y, d, 1, length - 1) + narrow(y, d, 0, length - 1), d


def _trapezoid_label(y: Tensor, x: Tensor | None = None, **kwargs: Any) -> str:
    """PyTorch's last step of trapezoid: the division by 2 of the spacings' sum with `x`,
    else the product with `dx`."""
    return "DivBackward1" if x is not None else "MulBackward1"


# PyTorch's overloads of trapezoid and cumulative_trapezoid: points `x` or a spacing `dx`,
# never both (trapz lists them the other way round, with a float dx)
_SPACING_SIGNATURES = ("(Tensor y, Tensor x, *, int dim = -1)",
                       "(Tensor y, *, Number dx = 1, int dim = -1)")


def _spacing_overloads(op: str, signatures: tuple[str, ...] = _SPACING_SIGNATURES
                       ) -> Callable[[Callable], Callable]:
    """`fn` behind PyTorch's overload match of `op`: `x` a tensor, or a `dx` that is
    not None, not both (its parser lists the keywords it was given last first)."""
    def wrap(fn: Callable) -> Callable:
        def checked(y: Any, *args: Any, **kwargs: Any) -> Any:
            has_x = bool(args) or "x" in kwargs
            x = args[0] if args else kwargs.get("x")
            if len(args) > 1 or (has_x and (not isinstance(x, Tensor) or "dx" in kwargs)) \
                    or ("dx" in kwargs and kwargs["dx"] is None):
                raise invalid_combination(op, _got((y, *args), dict(reversed(kwargs.items()))),
                                          signatures)
            return fn(y, *args, **kwargs)
        return as_overload_check(checked, fn)
    return wrap


def _trapezoid(y: Tensor, x: Tensor | None = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """The integral of `y` along `dim` by the trapezoidal rule, at points `x` (or evenly
    spaced `dx` apart, 1 by default)."""
    pairs, d = _neighbour_sums("trapezoid", y, dim)
    if y.shape[d] == 0:
        return sum_(to_dtype(pairs, dt.get_default_dtype()) if not pairs.dtype.is_floating_point
                    else pairs, d)
    return sum_(pairs * _spacing("trapezoid", y, x, dx, d), d) / 2.0


_trapezoid.__name__ = _trapezoid.__qualname__ = "trapezoid"
trapezoid = composite(complex=True, variants="function", cost=costs.reduction(3),
                      node_label=_trapezoid_label)(_spacing_overloads("trapezoid")(_trapezoid))


def _trapz(y: Tensor, x: Tensor | None = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """`trapezoid` (its older name)."""
    return _trapezoid(y, x, dx=dx, dim=dim)


_trapz.__name__ = _trapz.__qualname__ = "trapz"
trapz = composite(complex=True, variants="function", cost=costs.reduction(3),
                  node_label=_trapezoid_label)(_spacing_overloads(
                      "trapz", ("(Tensor y, *, float dx = 1, int dim = -1)",
                                "(Tensor y, Tensor x, *, int dim = -1)"))(_trapz))


@composite(complex=True, variants="function", cost=costs.reduction(3),
           node_label=lambda y, x=None, **kwargs:
           "DivBackward1" if x is not None else "CumsumBackward0")
@_spacing_overloads("cumulative_trapezoid")
def cumulative_trapezoid(y: Tensor, x: Tensor | None = None, *, dx: Any = None,
                         dim: int = -1) -> Tensor:
    """The running integral of `y` along `dim` by the trapezoidal rule (one element
    fewer than `y` there)."""
    pairs, d = _neighbour_sums("cumulative_trapezoid", y, dim)
    if y.shape[d] == 0:
        return to_dtype(pairs, dt.get_default_dtype()) if not pairs.dtype.is_floating_point \
            else pairs
    return (pairs * _spacing("cumulative_trapezoid", y, x, dx, d)).cumsum(d) / 2.0


def _gradient_along(f: Tensor, d: int, h: Any, edge_order: int) -> Tensor:
    """numpy.gradient along `d` for one spacing: a number, or the coordinates (1-d)."""
    n = f.shape[d]

    def part(start: int, length: int) -> Tensor:
        return narrow(f, d, start, length)

    if isinstance(h, Tensor):
        shape = [1] * f.ndim
        shape[d] = n - 2
        dx = diff(h)
        dx1, dx2 = (reshape(narrow(dx, 0, 0, n - 2), tuple(shape)),
                    reshape(narrow(dx, 0, 1, n - 2), tuple(shape)))
        a = -dx2 / (dx1 * (dx1 + dx2))
        b = (dx2 - dx1) / (dx1 * dx2)
        c = dx1 / (dx2 * (dx1 + dx2))
        center = a * part(0, n - 2) + b * part(1, n - 2) + c * part(2, n - 2)
        first_h, last_h = dx[0], dx[-1]
        if edge_order == 2:
            d1, d2 = dx[0], dx[1]
            first = (-(2 * d1 + d2) / (d1 * (d1 + d2)) * part(0, 1) +
                     (d1 + d2) / (d1 * d2) * part(1, 1) - d1 / (d2 * (d1 + d2)) * part(2, 1))
            d1, d2 = dx[-2], dx[-1]
            last = (d2 / (d1 * (d1 + d2)) * part(n - 3, 1) - (d2 + d1) / (d1 * d2) *
                    part(n - 2, 1) + (2 * d2 + d1) / (d2 * (d1 + d2)) * part(n - 1, 1))
            return cat([first, center, last], d)
    else:
        center = (part(2, n - 2) - part(0, n - 2)) / (2 * h)
        first_h = last_h = h
        if edge_order == 2:
            first = (part(0, 1) * -1.5 + part(1, 1) * 2 - part(2, 1) * 0.5) / h
            last = (part(n - 3, 1) * 0.5 - part(n - 2, 1) * 2 + part(n - 1, 1) * 1.5) / h
            return cat([first, center, last], d)
    first = (part(1, 1) - part(0, 1)) / first_h
    last = (part(n - 1, 1) - part(n - 2, 1)) / last_h
    return cat([first, center, last], d)


@composite(variants="function", cost=costs.pointwise(4))
def gradient(input: Tensor, *, spacing: Any = 1, dim: Any = None,
             edge_order: int = 1) -> tuple:
    """The derivative of `input` along each dim of `dim` (every dim when None) by central
    differences inside and one-sided ones (of order `edge_order`, 1 or 2) at the ends.
    `spacing` is the distance between samples: one number, one per dim, or the samples'
    coordinates (1-d tensors, one per dim)."""
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    dims = list(range(input.ndim)) if dim is None else \
        [normalize_dim("gradient", d, input.ndim) for d in
         ((dim,) if isinstance(dim, int) else dim)]
    spacings = list(spacing) if isinstance(spacing, (tuple, list)) else [spacing] * len(dims)
    if len(spacings) == 1 and len(dims) > 1 and not isinstance(spacings[0], Tensor):
        spacings = spacings * len(dims)
    if len(spacings) != len(dims):
        what = "since dim argument was not given" if dim is None else \
            f"the length of dim ({len(dims)})"
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar, or a "
                           f"list of length equal to 'self.dim() = {input.ndim}', {what}, but "
                           f"got a list of length {len(spacings)}")
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least "
                               "edge_order+1")
    f = input if input.dtype.is_floating_point else to_dtype(input, dt.get_default_dtype())
    out = []
    for d, h in zip(dims, spacings):
        if isinstance(h, Tensor):
            if h.ndim != 1 or h.shape[0] != input.shape[d]:
                raise RuntimeError(f"torch.gradient expected the coordinates of dimension {d} "
                                   f"to be a 1-d tensor of its size {input.shape[d]}, got "
                                   f"shape {list(h.shape)}")
            h = h if h.dtype.is_floating_point else to_dtype(h, f.dtype)
        out.append(_gradient_along(f, d, h, edge_order))
    return tuple(out)
