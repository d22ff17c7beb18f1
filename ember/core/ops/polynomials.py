"""`torch.special`'s orthogonal polynomials: Chebyshev (T, U, V, W and their shifted
forms on [0, 1]), Hermite (physicists' H, probabilists' He), Laguerre and Legendre.

Each is a composite that follows PyTorch's kernel (`aten/src/ATen/native/Math.h`)
element by element, computed with Tensor ops in the operands' common floating dtype:
the degree `n` is truncated to an integer (a non-finite one counts as negative), a
negative degree gives 0, the closed forms PyTorch takes at the interval's ends and (for
the Chebyshev kinds, from a threshold degree) inside it are taken where PyTorch takes
them, and elsewhere the three-term recurrence runs, in PyTorch's order of operations,
up to the largest degree that needs it. Values for |x| > 1 are the polynomial's, not
clipped. PyTorch declares no derivative for these functions: neither does ember.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.core import costs
from ember.core import dtype as dt
from ember.core.declare import composite
from ember.core.dispatch import kernel_refuses
from ember.core.errors import invalid_combination
from ember.core.grad_mode import no_grad
from ember.core.ops.elementwise import to_dtype, where
from ember.core.ops.elementwise_math import _float_operands
from ember.core.ops.shape import broadcast_tensors
from ember.core.tensor import Tensor

# a step of the recurrence: (m, x, P_{m-2}, P_{m-1}) -> P_m, for m >= 2
Step = Callable[[int, Tensor, Tensor, Tensor], Tensor]
# the closed forms, first match wins: (x, n, degree n as x's dtype) -> [(where, value)]
Cases = Callable[[Tensor, Tensor, Tensor], list]

_SIGNATURES = ("(Tensor x, Tensor n, *, Tensor out = None)",
               "(Number x, Tensor n, *, Tensor out = None)",
               "(Tensor x, Number n, *, Tensor out = None)")


def _operands(op: str, input: Any, n: Any) -> tuple[Tensor, Tensor, Tensor]:
    """`input` in the common floating dtype, the degree as int64 (truncated, PyTorch's
    `static_cast<int64_t>` of the degree in that dtype; NaN and the infinities become -1)
    and as that dtype, broadcast together."""
    if not isinstance(input, Tensor) and not isinstance(n, Tensor):
        raise invalid_combination(f"special_{op}",
                                  f"{type(input).__name__}, {type(n).__name__}", _SIGNATURES)
    x, degree, like = _float_operands(op, input, n)
    if x.dtype not in (dt.float32, dt.float64):
        raise kernel_refuses(f"{op}_{like.device.type}", x.dtype)
    x, degree = broadcast_tensors(x, degree)
    degree = degree.trunc()
    representable = degree.abs() < 2.0 ** 62  # (False for NaN and the infinities)
    n = to_dtype(where(representable, degree, -1.0), dt.int64)
    return x, n, to_dtype(n, x.dtype)


def _evaluate(op: str, input: Any, n: Any, first: Callable[[Tensor], Tensor], step: Step,
              cases: Cases) -> Tensor:
    """P_n(x) element-wise: 0 for n < 0, then the closed forms `cases` in order, then 1
    (n == 0), `first(x)` (n == 1) or the recurrence `step` from P_0 = 1, P_1 = first(x)."""
    with no_grad():
        x, n, nf = _operands(op, input, n)
        one = x.new_ones(())
        listed = [(n < 0, x.new_zeros(()))] + cases(x, n, nf)
        recur = n >= 2
        for where_, _ in listed:
            recur = recur & ~where_
        p1 = first(x)
        result = where(n == 1, p1, one)
        top = int(n[recur].max()) if bool(recur.any()) else 1
        p, q = one.expand(x.shape), p1
        for m in range(2, top + 1):
            p, q = q, step(m, x, p, q)
            result = where(n == m, q, result)
        for where_, value in reversed(listed):
            result = where(where_, value, result)
        return to_dtype(result, x.dtype)


def _parity(n: Tensor, even: Any, odd: Any) -> Tensor:
    return where(n % 2 == 0, even, odd)


def _declare(name: str, doc: str) -> Callable[[Callable], Callable]:
    """Declare `special_<name>(input, n)`, reached through `ember.special`."""
    def wrap(fn: Callable) -> Callable:
        fn.__name__ = fn.__qualname__ = f"special_{name}"
        fn.__doc__ = doc
        return composite(variants="out", complex=True, cost=costs.pointwise(16))(fn)
    return wrap


def _doc(what: str) -> str:
    return (f"{what}.\n\n    If n is less than 0, 0 is returned; PyTorch's closed forms and "
            f"recurrence otherwise.\n\n    Args:\n        input (Tensor): the input tensor.\n"
            f"        n (Tensor): Degree of the polynomial.\n\n    Keyword args:\n"
            f"        out (Tensor, optional): the output tensor.")


# -- Chebyshev polynomials: P_m = 2x P_{m-1} - P_{m-2}, of the first kind T from x ---------


def _chebyshev_step(m: int, x: Tensor, p: Tensor, q: Tensor) -> Tensor:
    return (x + x) * q - p


def _ends(x: Tensor, n: Tensor, at_one: Any, at_minus_one_even: Any,
          at_minus_one_odd: Any) -> tuple[Tensor, Tensor]:
    """(where, value) at |x| == 1: `at_one` at 1, by the degree's parity at -1."""
    return (x.abs() == 1.0, where(x > 0, at_one, _parity(n, at_minus_one_even,
                                                          at_minus_one_odd)))


@_declare("chebyshev_polynomial_t", _doc("Chebyshev polynomial of the first kind T_n(input)"))
def _chebyshev_t(input: Any, n: Any) -> Tensor:
    def cases(x: Tensor, n: Tensor, nf: Tensor) -> list:
        inside = (n > 6) & (x.abs() < 1.0)
        return [_ends(x, n, 1.0, 1.0, -1.0), (inside, (nf * x.acos()).cos())]
    return _evaluate("chebyshev_polynomial_t", input, n, lambda x: x, _chebyshev_step, cases)


@_declare("chebyshev_polynomial_u", _doc("Chebyshev polynomial of the second kind "
                                         "U_n(input)"))
def _chebyshev_u(input: Any, n: Any) -> Tensor:
    def cases(x: Tensor, n: Tensor, nf: Tensor) -> list:
        inside = (n > 8) & (x.abs() < 1.0)
        theta = x.acos()
        sin_theta = theta.sin()
        interior = where(sin_theta != 0.0, ((nf + 1.0) * theta).sin() / sin_theta,
                         (nf + 1.0) * ((nf + 1.0) * theta).cos() / x)
        return [_ends(x, n, nf + 1.0, nf + 1.0, -(nf + 1.0)), (inside, interior)]
    return _evaluate("chebyshev_polynomial_u", input, n, lambda x: x + x, _chebyshev_step,
                     cases)


@_declare("chebyshev_polynomial_v", _doc("Chebyshev polynomial of the third kind "
                                         "V_n(input)"))
def _chebyshev_v(input: Any, n: Any) -> Tensor:
    def cases(x: Tensor, n: Tensor, nf: Tensor) -> list:
        inside = (n > 8) & (x.abs() < 1.0)
        theta = x.acos()
        odd_value = _parity(n, nf + nf + 1.0, -(nf + nf + 1.0))
        interior = where((theta / 2.0).sin() != 1.0,
                         ((nf + 0.5) * theta).cos() / (theta / 2.0).cos(), odd_value)
        return [_ends(x, n, 1.0, nf + nf + 1.0, -(nf + nf + 1.0)), (inside, interior)]
    return _evaluate("chebyshev_polynomial_v", input, n, lambda x: x + x - 1.0,
                     _chebyshev_step, cases)


@_declare("chebyshev_polynomial_w", _doc("Chebyshev polynomial of the fourth kind "
                                         "W_n(input)"))
def _chebyshev_w(input: Any, n: Any) -> Tensor:
    def cases(x: Tensor, n: Tensor, nf: Tensor) -> list:
        inside = (n > 8) & (x.abs() < 1.0)
        theta = x.acos()
        at_end = where(x > 0, nf + nf + 1.0, _parity(n, 1.0, -1.0))
        interior = where((theta / 2.0).cos() != 1.0,
                         ((nf + 0.5) * theta).sin() / (theta / 2.0).sin(), at_end)
        return [_ends(x, n, nf + nf + 1.0, 1.0, -1.0), (inside, interior)]
    return _evaluate("chebyshev_polynomial_w", input, n, lambda x: x + x + 1.0,
                     _chebyshev_step, cases)


# -- shifted Chebyshev polynomials: the same in y = 2x - 1, ends at x = 1 and x = 0 --------


def _shifted(x: Tensor) -> Tensor:
    return x + x - 1.0


def _shifted_step(m: int, x: Tensor, p: Tensor, q: Tensor) -> Tensor:
    return (_shifted(x) + _shifted(x)) * q - p


def _shifted_ends(x: Tensor, n: Tensor, at_one: Any, at_zero_even: Any,
                  at_zero_odd: Any) -> list:
    return [(x == 1.0, at_one), (x == 0.0, _parity(n, at_zero_even, at_zero_odd))]


@_declare("shifted_chebyshev_polynomial_t", _doc("Shifted Chebyshev polynomial of the first "
                                                 "kind T*_n(input)"))
def _shifted_chebyshev_t(input: Any, n: Any) -> Tensor:
    def cases(x: Tensor, n: Tensor, nf: Tensor) -> list:
        inside = (n > 6) & (_shifted(x).abs() < 1.0)
        return _shifted_ends(x, n, 1.0, 1.0, -1.0) + \
            [(inside, (nf * _shifted(x).acos()).cos())]
    return _evaluate("shifted_chebyshev_polynomial_t", input, n, _shifted, _shifted_step,
                     cases)


@_declare("shifted_chebyshev_polynomial_u", _doc("Shifted Chebyshev polynomial of the second "
                                                 "kind U*_n(input)"))
def _shifted_chebyshev_u(input: Any, n: Any) -> Tensor:
    def cases(x: Tensor, n: Tensor, nf: Tensor) -> list:
        y = _shifted(x)
        inside = (n > 6) & (y.abs() < 1.0)
        theta = y.acos()
        sin_theta = theta.sin()
        interior = where(sin_theta != 0.0, ((nf + 1.0) * theta).sin() / sin_theta,
                         (nf + 1.0) * ((nf + 1.0) * theta).cos() / y)
        return _shifted_ends(x, n, nf + 1.0, nf + 1.0, -(nf + 1.0)) + [(inside, interior)]
    return _evaluate("shifted_chebyshev_polynomial_u", input, n,
                     lambda x: _shifted(x) + _shifted(x), _shifted_step, cases)


@_declare("shifted_chebyshev_polynomial_v", _doc("Shifted Chebyshev polynomial of the third "
                                                 "kind V*_n(input)"))
def _shifted_chebyshev_v(input: Any, n: Any) -> Tensor:
    def cases(x: Tensor, n: Tensor, nf: Tensor) -> list:
        theta = _shifted(x).acos()
        inside = (n > 6) & (_shifted(x).abs() < 1.0)
        odd_value = _parity(n, nf + nf + 1.0, -(nf + nf + 1.0))
        interior = where((theta / 2.0).sin() != 1.0,
                         ((nf + 0.5) * theta).cos() / (theta / 2.0).cos(), odd_value)
        return _shifted_ends(x, n, 1.0, nf + nf + 1.0, -(nf + nf + 1.0)) + \
            [(inside, interior)]
    return _evaluate("shifted_chebyshev_polynomial_v", input, n,
                     lambda x: _shifted(x) + _shifted(x) - 1.0, _shifted_step, cases)


@_declare("shifted_chebyshev_polynomial_w", _doc("Shifted Chebyshev polynomial of the fourth "
                                                 "kind W*_n(input)"))
def _shifted_chebyshev_w(input: Any, n: Any) -> Tensor:
    def cases(x: Tensor, n: Tensor, nf: Tensor) -> list:
        theta = _shifted(x).acos()
        inside = (n > 4) & (_shifted(x).abs() < 1.0)
        interior = where((theta / 2.0).cos() != 1.0,
                         ((nf + 0.5) * theta).sin() / (theta / 2.0).sin(),
                         _parity(n, 1.0, -1.0))
        return _shifted_ends(x, n, nf + nf + 1.0, 1.0, -1.0) + [(inside, interior)]
    return _evaluate("shifted_chebyshev_polynomial_w", input, n,
                     lambda x: _shifted(x) + _shifted(x) + 1.0, _shifted_step, cases)


# -- Hermite, Laguerre and Legendre polynomials: recurrences only -------------------------


def _none(x: Tensor, n: Tensor, nf: Tensor) -> list:
    return []


@_declare("hermite_polynomial_h", _doc("Physicist's Hermite polynomial H_n(input)"))
def _hermite_h(input: Any, n: Any) -> Tensor:
    # PyTorch's loop counts k = 2, 4, ..., 2n - 2: P_m takes k = 2 (m - 1)
    return _evaluate("hermite_polynomial_h", input, n, lambda x: x + x,
                     lambda m, x, p, q: (x + x) * q - p * float(2 * (m - 1)), _none)


@_declare("hermite_polynomial_he", _doc("Probabilist's Hermite polynomial He_n(input)"))
def _hermite_he(input: Any, n: Any) -> Tensor:
    return _evaluate("hermite_polynomial_he", input, n, lambda x: x,
                     lambda m, x, p, q: x * q - p * float(m - 1), _none)


@_declare("laguerre_polynomial_l", _doc("Laguerre polynomial L_n(input)"))
def _laguerre_l(input: Any, n: Any) -> Tensor:
    def step(m: int, x: Tensor, p: Tensor, q: Tensor) -> Tensor:
        k = m - 1
        return (((1.0 - x) + float(k + k)) * q - p * float(k)) / float(k + 1)

    def cases(x: Tensor, n: Tensor, nf: Tensor) -> list:
        return [(x == 0.0, 1.0)]
    return _evaluate("laguerre_polynomial_l", input, n, lambda x: 1.0 - x, step, cases)


@_declare("legendre_polynomial_p", _doc("Legendre polynomial P_n(input)"))
def _legendre_p(input: Any, n: Any) -> Tensor:
    def step(m: int, x: Tensor, p: Tensor, q: Tensor) -> Tensor:
        k = m - 1
        return (x * float(k + k + 1) * q - p * float(k)) / float(k + 1)

    def cases(x: Tensor, n: Tensor, nf: Tensor) -> list:
        return [_ends(x, n, 1.0, 1.0, -1.0)]
    return _evaluate("legendre_polynomial_p", input, n, lambda x: x, step, cases)


special_chebyshev_polynomial_t = _chebyshev_t
special_chebyshev_polynomial_u = _chebyshev_u
special_chebyshev_polynomial_v = _chebyshev_v
special_chebyshev_polynomial_w = _chebyshev_w
special_shifted_chebyshev_polynomial_t = _shifted_chebyshev_t
special_shifted_chebyshev_polynomial_u = _shifted_chebyshev_u
special_shifted_chebyshev_polynomial_v = _shifted_chebyshev_v
special_shifted_chebyshev_polynomial_w = _shifted_chebyshev_w
special_hermite_polynomial_h = _hermite_h
special_hermite_polynomial_he = _hermite_he
special_laguerre_polynomial_l = _laguerre_l
special_legendre_polynomial_p = _legendre_p
