"""Gradients on the device under test: every differentiable op of ember.testing.opinfo
against central finite differences in float64 (`gradcheck`), second derivatives for a
selection (`gradgradcheck`, `ember.autograd.grad(..., create_graph=True)`), and the
checker itself."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.testing import GradcheckError, gradcheck, gradgradcheck
from ember.testing import support as S
from ember.testing.opinfo import DIFF_OPS, DiffOp


def _leaves(device: ember.device, op: DiffOp) -> list[ember.Tensor]:
    if op.complex and not S.holds(device, ember.complex128):
        pytest.skip(f"{op.name} computes with complex tensors, which {device} cannot hold")
    return [S.on(device, a, ember.float64, requires_grad=True) for a in op.inputs()]


@pytest.mark.parametrize("op", DIFF_OPS, ids=lambda op: op.name)
def test_gradcheck(device: ember.device, op: DiffOp) -> None:
    inputs = _leaves(device, op)
    out = op.fn(ember, *inputs)
    for o in out if isinstance(out, tuple) else (out,):
        assert o.device == device, f"{op.name}: output on {o.device}, expected {device}"
        assert o.requires_grad, f"{op.name}: the output does not require grad"
    assert gradcheck(lambda *xs: op.fn(ember, *xs), inputs, eps=op.eps)


@pytest.mark.parametrize("op", [op for op in DIFF_OPS if op.gradgrad], ids=lambda op: op.name)
def test_gradgradcheck(device: ember.device, op: DiffOp) -> None:
    assert gradgradcheck(lambda *xs: op.fn(ember, *xs), _leaves(device, op), eps=op.eps)


def test_backward_accumulates_on_the_device(device: ember.device) -> None:
    x = S.on(device, np.array([[1.0, 2.0], [3.0, 4.0]]), requires_grad=True)
    b = S.on(device, np.array([0.5, -1.0]), requires_grad=True)
    ((x * b).sum() + (x + b).sum()).backward()
    assert x.grad.device == device and b.grad.device == device
    S.assert_matches(x.grad, np.array([[1.5, 0.0], [1.5, 0.0]]), device)
    S.assert_matches(b.grad, np.array([4.0 + 2.0, 6.0 + 2.0]), device)  # summed over rows
    (x * 2).sum().backward()  # leaves accumulate
    S.assert_matches(x.grad, np.array([[3.5, 2.0], [3.5, 2.0]]), device)


def test_second_derivatives_with_create_graph(device: ember.device) -> None:
    a = np.array([0.5, -1.0, 2.0])
    x = S.on(device, a, requires_grad=True)
    (g,) = ember.autograd.grad((x ** 3).sum(), x, create_graph=True)
    S.assert_matches(g, 3 * a ** 2, device, what="d/dx x^3")
    assert g.requires_grad
    (gg,) = ember.autograd.grad(g.sum(), x, create_graph=True)
    S.assert_matches(gg, 6 * a, device, what="d2/dx2 x^3")
    (ggg,) = ember.autograd.grad(gg.sum(), x)
    S.assert_matches(ggg, np.full(3, 6.0), device, what="d3/dx3 x^3")
    # mixed partials of sum(sin(x) * y): d2/dxdy = cos(x)
    y = S.on(device, np.array([1.0, 2.0, 3.0]), requires_grad=True)
    (gx,) = ember.autograd.grad((ember.sin(x) * y).sum(), x, create_graph=True)
    (gxy,) = ember.autograd.grad(gx.sum(), y)
    S.assert_matches(gxy, np.cos(a), device, what="d2/dxdy")
    # the gradient of a gradient norm (as in gradient-penalty losses)
    w = S.on(device, np.array([[1.0, -2.0], [0.5, 3.0]]), requires_grad=True)
    v = S.on(device, np.array([0.3, -0.7]))
    (gw,) = ember.autograd.grad(ember.tanh(w @ v).sum(), w, create_graph=True)
    (gp,) = ember.autograd.grad((gw * gw).sum(), w)
    assert gp.device == device and gp.shape == (2, 2)
    assert gradcheck(lambda w_: (ember.autograd.grad(ember.tanh(w_ @ v).sum(), w_,
                                                     create_graph=True)[0] ** 2).sum(), (w,))


# -- the checker itself ---------------------------------------------------------------


class _WrongSquare(ember.autograd.Function):
    """x -> x * x, with a backward that is off by one element."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        grad = g * 2 * x
        wrong = ember.zeros_like(grad)
        wrong[-1] = 1.0
        return grad + wrong


def test_gradcheck_reports_the_worst_element(device: ember.device) -> None:
    x = S.on(device, np.array([1.0, 2.0, 3.0]), requires_grad=True)
    with pytest.raises(GradcheckError, match=r"(?s)output 0 with respect to input 0.*worst: "
                                             r"input 0 element \(2,\) -> output 0 element "
                                             r"\(0,\): analytical 1\.0 vs numerical 0\.0"):
        gradcheck(_WrongSquare.apply, (x,))
    assert gradcheck(_WrongSquare.apply, (x,), raise_exception=False) is False
    assert gradcheck(lambda t: t * t, (x,))


def test_gradcheck_argument_errors(device: ember.device) -> None:
    x32 = S.on(device, np.array([1.0, 2.0], np.float32), requires_grad=True)
    with pytest.warns(UserWarning, match="not a double precision"):  # as PyTorch: checked
        gradcheck(lambda t: t * 2, (x32,), raise_exception=False)
    with pytest.raises(ValueError, match="requires_grad=True"):
        gradcheck(lambda t: t * 2, (S.on(device, np.array([1.0])),))


def test_gradgradcheck_catches_a_wrong_second_derivative(device: ember.device) -> None:
    class CubeWithWrongSecond(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            # right value, but built from a detached x: no second derivative
            return g * 3 * (x * x).detach()

    x = S.on(device, np.array([0.5, 1.5]), requires_grad=True)
    assert gradcheck(CubeWithWrongSecond.apply, (x,))
    with pytest.raises(GradcheckError):
        gradgradcheck(CubeWithWrongSecond.apply, (x,))
