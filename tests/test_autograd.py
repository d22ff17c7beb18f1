"""Autograd semantics: accumulation, graph retention, grad modes, higher-order gradients,
custom Functions, hooks, in-place ops and views, and version counters.

Gradients are compared with PyTorch (an oracle only) or with finite differences.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.autograd import Function


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def numeric_grad(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central finite differences of a scalar function of a float64 array."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        g[i] = (f(xp) - f(xm)) / (2 * eps)
    return g


def leaf(values, dtype=ember.float64):
    return ember.tensor(values, dtype=dtype, requires_grad=True)


# -- leaves and .grad ----------------------------------------------------------------------


class TestLeavesAndGrad:
    def test_grad_accumulates_across_backward_calls(self):
        x = leaf([1.0, 2.0])
        (x * x).sum().backward()
        assert x.grad.tolist() == [2.0, 4.0]
        (x * 3).sum().backward()
        assert x.grad.tolist() == [5.0, 7.0]
        x.grad = None
        (x * 3).sum().backward()
        assert x.grad.tolist() == [3.0, 3.0]

    def test_grad_zero_in_place(self):
        x = leaf([1.0, 2.0])
        (x * 2).sum().backward()
        g = x.grad
        x.grad.zero_()
        (x * 2).sum().backward()
        assert x.grad is g  # accumulated into the same tensor
        assert x.grad.tolist() == [2.0, 2.0]

    def test_grad_is_not_an_alias_of_the_incoming_gradient(self):
        x = leaf([1.0, 2.0])
        seed = ember.tensor([1.0, 1.0], dtype=ember.float64)
        (x * 1).backward(seed)
        x.grad.add_(1)  # must not write into `seed` (or anything else in the graph)
        assert seed.tolist() == [1.0, 1.0]
        y = leaf([1.0])
        y.sum().backward()
        y.sum().backward()
        assert y.grad.tolist() == [2.0]

    def test_grad_setter_checks(self):
        x = leaf([1.0, 2.0])
        with pytest.raises(RuntimeError, match="attempting to assign a gradient of size"):
            x.grad = ember.zeros(3, dtype=ember.float64)
        with pytest.raises(TypeError):
            x.grad = [1.0, 2.0]
        x.grad = ember.ones(2, dtype=ember.float64)
        assert x.grad.tolist() == [1.0, 1.0]

    def test_grad_has_leaf_dtype_and_shape(self):
        x = ember.ones(2, 3, dtype=ember.float16, requires_grad=True)
        (x.float() * 2).sum().backward()
        assert x.grad.dtype is ember.float16 and x.grad.shape == (2, 3)
        assert x.grad.tolist() == [[2.0] * 3] * 2

    def test_non_leaf_grad_is_none_without_retain_grad(self):
        x = leaf([1.0, 2.0])
        y = x * 2
        y.sum().backward()
        assert y.grad is None and not y.retains_grad

    def test_retain_grad(self):
        x = leaf([1.0, 2.0])
        y = x * 2
        y.retain_grad()
        assert y.retains_grad
        z = (y * y).sum()
        z.backward()
        assert y.grad.tolist() == [4.0, 8.0]
        assert x.grad.tolist() == [8.0, 16.0]
        x.retain_grad()  # a no-op on a leaf
        assert x.grad.tolist() == [8.0, 16.0]

    def test_retain_grad_accumulates(self):
        x = leaf([1.0])
        y = x * 2
        y.retain_grad()
        z = (y * 3).sum()
        z.backward(retain_graph=True)
        z.backward()
        assert y.grad.tolist() == [6.0]


class TestBackwardArguments:
    def test_backward_with_gradient(self, torch):
        x = leaf([[1.0, 2.0], [3.0, 4.0]])
        y = x * x
        y.backward(gradient=ember.tensor([[1.0, 0.5], [0.0, 2.0]], dtype=ember.float64))
        tx = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64, requires_grad=True)
        (tx * tx).backward(torch.tensor([[1.0, 0.5], [0.0, 2.0]], dtype=torch.float64))
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())

    def test_backward_non_scalar_without_gradient(self):
        x = leaf([1.0, 2.0])
        with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar "
                                               "outputs"):
            (x * 2).backward()

    def test_backward_one_element_non_scalar(self):
        x = leaf([3.0])
        (x * 2).backward()  # one element: the implicit gradient is allowed, as in torch
        assert x.grad.tolist() == [2.0]

    def test_backward_gradient_shape_mismatch(self):
        x = leaf([1.0, 2.0])
        with pytest.raises(RuntimeError, match="Mismatch in shape"):
            (x * 2).backward(ember.ones(3, dtype=ember.float64))

    def test_backward_without_grad(self):
        x = ember.tensor([1.0, 2.0])
        with pytest.raises(RuntimeError, match="does not require grad and does not have a "
                                               "grad_fn"):
            x.sum().backward()

    def test_retain_graph(self):
        x = leaf([1.0, 2.0])
        y = (x.exp() * x).sum()
        y.backward(retain_graph=True)
        first = x.grad.clone()
        y.backward()
        np.testing.assert_allclose(x.grad.numpy(), 2 * first.numpy())
        with pytest.raises(RuntimeError, match="Trying to backward through the graph a second "
                                               "time"):
            y.backward()

    def test_second_backward_without_retain_graph(self):
        x = leaf([1.0, 2.0])
        y = (x * x).sum()
        y.backward()
        with pytest.raises(RuntimeError, match=r"Trying to backward through the graph a second "
                                               r"time .*Specify retain_graph=True"):
            y.backward()

    def test_second_backward_without_saved_tensors_works(self, torch):
        """A graph that saved nothing can be walked again, as in PyTorch."""
        x = leaf([1.0, 2.0])
        y = (x + 1).sum()
        y.backward()
        y.backward()
        assert x.grad.tolist() == [2.0, 2.0]
        tx = torch.tensor([1.0, 2.0], requires_grad=True)
        ty = (tx + 1).sum()
        ty.backward()
        ty.backward()
        assert tx.grad.tolist() == [2.0, 2.0]

    def test_backward_inputs(self):
        x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
        (x * w).sum().backward(inputs=[w])
        assert x.grad is None and w.grad.tolist() == [1.0, 2.0]

    def test_autograd_backward_function(self):
        x = leaf([1.0, 2.0])
        a, b = x * 2, x * x
        ember.autograd.backward([a.sum(), b.sum()])
        assert x.grad.tolist() == [4.0, 6.0]


# -- grad modes ----------------------------------------------------------------------------------


class TestGradModes:
    def test_no_grad_context(self):
        x = leaf([1.0])
        with ember.no_grad():
            assert not ember.is_grad_enabled()
            y = x * 2
        assert ember.is_grad_enabled()
        assert not y.requires_grad and y.grad_fn is None and y.is_leaf

    def test_no_grad_decorator(self):
        @ember.no_grad()
        def f(t):
            return t * 2

        y = f(leaf([1.0]))
        assert not y.requires_grad
        assert ember.is_grad_enabled()

    def test_enable_grad_inside_no_grad(self):
        x = leaf([1.0])
        with ember.no_grad():
            with ember.enable_grad():
                y = x * 2
            z = x * 2

            @ember.enable_grad()
            def f(t):
                return t * 2
            w = f(x)
        assert y.requires_grad and not z.requires_grad and w.requires_grad

    def test_set_grad_enabled(self):
        x = leaf([1.0])
        with ember.set_grad_enabled(False):
            assert not (x * 2).requires_grad
        assert (x * 2).requires_grad
        with ember.set_grad_enabled(True):
            assert (x * 2).requires_grad

        @ember.set_grad_enabled(False)
        def f(t):
            return t * 2
        assert not f(x).requires_grad
        assert ember.is_grad_enabled()
        try:
            ember.set_grad_enabled(False)  # a plain call changes the mode
            assert not ember.is_grad_enabled()
            assert not (x * 2).requires_grad
        finally:
            ember.set_grad_enabled(True)
        assert ember.is_grad_enabled() and (x * 2).requires_grad

    def test_inference_mode(self):
        x = leaf([1.0])
        with ember.inference_mode():
            assert ember.is_inference_mode_enabled() and not ember.is_grad_enabled()
            y = x * 2
        assert not ember.is_inference_mode_enabled() and ember.is_grad_enabled()
        assert not y.requires_grad
        with ember.inference_mode(False):
            assert (x * 2).requires_grad

        @ember.inference_mode()
        def f(t):
            return t * 2
        assert not f(x).requires_grad

    def test_inference_mode_false_inside_records_gradients_as_torch(self):
        # PyTorch's guard sets grad mode to `not mode`: inside no_grad or inference_mode,
        # `inference_mode(False)` records gradients again
        torch = pytest.importorskip("torch")
        seen = []
        for lib in (torch, ember):
            x = lib.ones(1, requires_grad=True)
            with lib.inference_mode():
                with lib.inference_mode(False):
                    inner = (lib.is_grad_enabled(), lib.is_inference_mode_enabled(),
                             (x * 2).requires_grad)
                after = (lib.is_grad_enabled(), lib.is_inference_mode_enabled())
            with lib.no_grad(), lib.inference_mode(False):
                under_no_grad = lib.is_grad_enabled()
            seen.append((inner, after, under_no_grad, lib.is_grad_enabled()))
        assert seen[1] == seen[0] == ((True, False, True), (False, True), True, True)

    def test_inference_tensors_as_torch(self):
        # made inside inference_mode: inference tensors, and so are their views; a view of a
        # normal tensor stays normal; outside, ops on them make normal tensors, and writing
        # into them (or asking for their grad or version) is refused with PyTorch's errors
        torch = pytest.importorskip("torch")
        seen = []
        for lib in (torch, ember):
            normal = lib.ones(3)
            param = lib.ones(3, requires_grad=True)
            with lib.inference_mode():
                made = lib.ones(3) * 2
                row = lib.arange(4.0)[1:]
                kinds = [made.is_inference(), row.is_inference(), normal.view(3).is_inference(),
                         param.detach().is_inference(), normal.clone().is_inference()]
                normal.add_(1)  # a normal tensor is written as usual, and stays normal
                made.add_(1)  # as is an inference tensor, inside
                with lib.inference_mode(False):
                    kinds.append(lib.ones(1).is_inference())
            kinds += [normal.is_inference(), (made + 1).is_inference(), made[1:].is_inference(),
                      made.detach().is_inference(), lib.is_inference(made),
                      (param + made).requires_grad]
            errors = []
            for write in (lambda t, n: t.add_(1), lambda t, n: t.mul_(t),
                          lambda t, n: t.__setitem__(0, 5.0), lambda t, n: t[1:].zero_(),
                          lambda t, n: t.copy_(n), lambda t, n: t.exp_(),
                          lambda t, n: t.requires_grad_(), lambda t, n: t._version):
                with pytest.raises(RuntimeError) as info:
                    write(made, normal)
                errors.append(str(info.value))
            made.requires_grad_(False)
            seen.append((kinds, errors))
        assert seen[1] == seen[0]
        # (PyTorch's copy_ and exp_ write before they refuse; ember's refuse first)
        assert made.tolist() == [3.0, 3.0, 3.0]
        assert seen[1][0] == [True, True, False, False, True, False, False, False, True, True,
                              True, True]

    def test_inference_tensors_cannot_be_saved_for_backward_as_torch(self):
        # a recorded op that keeps an inference tensor for its backward is refused (mul,
        # matmul, linear, pow, a Function's save_for_backward, through a view too), before
        # an in-place op writes; an op that saves none of them records as usual
        torch = pytest.importorskip("torch")
        seen = [_inference_save_outcomes(lib) for lib in (torch, ember)]
        assert seen[1] == seen[0]
        assert [o[0] for o in seen[1][0][:-1]] == ["refused"] * 8 + ["ok"] * 4
        assert seen[1][0][0][1].startswith("Inference tensors cannot be saved for backward.")

    def test_modes_bind_none_in_with_as_torch(self):
        torch = pytest.importorskip("torch")
        for lib in (torch, ember):
            for mode in (lib.no_grad(), lib.enable_grad(), lib.set_grad_enabled(True),
                         lib.inference_mode(), lib.inference_mode(False)):
                with mode as bound:
                    assert bound is None, (lib.__name__, type(mode).__name__)

    def test_modes_decorate_without_parentheses(self):
        x = leaf([1.0])

        @ember.no_grad
        def f(t):
            return t * 2

        @ember.inference_mode
        def g(t):
            return t * 2

        @ember.enable_grad
        def h(t):
            return t * 2
        assert not f(x).requires_grad and not g(x).requires_grad
        assert f.__name__ == "f"
        with ember.no_grad():
            assert h(x).requires_grad
        assert ember.is_grad_enabled()

    def test_modes_restore_after_exception(self):
        with pytest.raises(ValueError):
            with ember.no_grad():
                raise ValueError
        assert ember.is_grad_enabled()

    def test_no_grad_allows_in_place_on_leaf(self):
        x = leaf([1.0, 2.0])
        with ember.no_grad():
            x.add_(1)
            x[0] = 5.0
        assert x.tolist() == [5.0, 3.0] and x.requires_grad and x.is_leaf
        (x * 2).sum().backward()
        assert x.grad.tolist() == [2.0, 2.0]


# -- graph structure -----------------------------------------------------------------------------


class TestGraphStructure:
    def test_requires_grad_propagation(self):
        a = leaf([1.0])
        b = ember.tensor([2.0], dtype=ember.float64)
        assert (a + b).requires_grad and (b * a).requires_grad
        assert not (b + b).requires_grad
        assert (a > 0).requires_grad is False  # bool outputs never require grad
        assert not a.argmax().requires_grad
        assert (a.detach() * 2).requires_grad is False

    def test_is_leaf(self):
        a = leaf([1.0])
        b = ember.tensor([1.0])
        assert a.is_leaf and b.is_leaf
        c = a * 2
        assert not c.is_leaf
        assert (b * 2).is_leaf  # no grad needed: a leaf
        assert c.detach().is_leaf
        with ember.no_grad():
            assert (a * 2).is_leaf

    def test_grad_fn_names_and_next_functions(self, torch):
        x = leaf([1.0, 2.0])
        y = x.exp()
        z = (y * x).sum()
        assert type(y.grad_fn).__name__ != "NoneType"
        assert y.grad_fn.name() == "ExpBackward0"
        assert z.grad_fn.name() == "SumBackward0"
        mul_node = z.grad_fn.next_functions[0][0]
        assert mul_node.name() == "MulBackward0"
        nexts = [fn for fn, _ in mul_node.next_functions]
        assert nexts[0] is y.grad_fn
        assert type(nexts[1]).__name__ == "AccumulateGrad" and nexts[1].variable is x
        # torch names the same nodes the same way
        tx = torch.tensor([1.0, 2.0], requires_grad=True)
        ty = tx.exp()
        tz = (ty * tx).sum()
        assert ty.grad_fn.name() == y.grad_fn.name()
        assert tz.grad_fn.name() == z.grad_fn.name()
        assert tz.grad_fn.next_functions[0][0].name() == mul_node.name()

    @pytest.mark.parametrize("expr", ["x + 1", "x - x", "x * 2", "x / 3", "x ** 2", "x.sum()",
                                      "x.mean()", "-x", "x.exp()", "x.log()", "x.tanh()",
                                      "x @ x", "x.reshape(2, 1)", "x[0]", "x.sqrt()",
                                      "x.t()"])
    def test_grad_fn_name_matches_torch(self, torch, expr):
        x = leaf([1.0, 2.0])
        tx = torch.tensor([1.0, 2.0], requires_grad=True)
        got = eval(expr, {"x": x}).grad_fn.name()
        want = eval(expr, {"x": tx}).grad_fn.name()
        assert got == want, (expr, got, want)

    @pytest.mark.parametrize("expr", ["m.t()", "m.transpose(0, 1)", "m @ m", "m @ m[0]",
                                      "m.mean(0)", "m.view(4)", "m.t().reshape(4)", "m.sum(1)",
                                      "m.permute(1, 0)", "m[:, 1]",
                                      "m.unsqueeze(0)",
                                      "m[[0, 1]]", "m.expand(3, 2, 2)", "m.clone()",
                                      "m.softmax(0)", "m.relu()", "m.float()",
                                      "m.pow(2)", "m.abs()", "m.amax(0)",
                                      "m.max()"])
    def test_grad_fn_name_matches_torch_2d(self, torch, expr):
        m = ember.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=ember.float64, requires_grad=True)
        tm = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64, requires_grad=True)
        got = eval(expr, {"m": m}).grad_fn.name()
        want = eval(expr, {"m": tm}).grad_fn.name()
        assert got == want, (expr, got, want)

    def test_requires_grad_on_integer_tensor_raises(self):
        with pytest.raises(RuntimeError, match="^Only Tensors of floating point and complex "
                                               "dtype can require gradients"):
            ember.tensor([1, 2], requires_grad=True)
        with pytest.raises(RuntimeError, match="floating point"):
            ember.tensor([1, 2]).requires_grad_()
        with pytest.raises(RuntimeError, match="floating point"):
            ember.zeros(2, dtype=ember.bool, requires_grad=True)

    def test_requires_grad_flag_on_non_leaf(self):
        y = leaf([1.0]) * 2
        with pytest.raises(RuntimeError, match="you can only change requires_grad flags of "
                                               "leaf variables"):
            y.requires_grad_(False)
        y.requires_grad_(True)  # a no-op, allowed

    def test_requires_grad_setter_and_method(self):
        x = ember.zeros(2)
        assert x.requires_grad_() is x and x.requires_grad
        x.requires_grad = False
        assert not x.requires_grad

    def test_detach(self):
        x = leaf([1.0, 2.0])
        y = x * 2
        d = y.detach()
        assert not d.requires_grad and d.grad_fn is None
        z = (d * x).sum()
        z.backward()
        assert x.grad.tolist() == [2.0, 4.0]  # no gradient flowed through d

    def test_detach_in_place(self):
        x = leaf([1.0])
        y = x * 2
        y.detach_()
        assert not y.requires_grad and y.is_leaf

    def test_integer_outputs_do_not_break_backward(self):
        x = leaf([3.0, 1.0, 2.0])
        idx = x.argsort() if hasattr(x, "argsort") else x.argmax()
        assert not idx.requires_grad
        (x * 2).sum().backward()
        assert x.grad.tolist() == [2.0, 2.0, 2.0]

    def test_python_control_flow(self):
        def f(t):
            out = t
            for i in range(4):
                out = out * t if float(out.sum()) < 50 else out + i
            return out.sum()

        x0 = np.array([1.5, 2.0])
        x = leaf(x0)
        f(x).backward()
        expected = numeric_grad(lambda a: f(ember.tensor(a)).item(), x0)
        np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-5)


# -- broadcasting gradients -------------------------------------------------------------------


BROADCAST_CASES = [((3, 1), (1, 4)), ((4,), (2, 3, 4)), ((), (2, 3)), ((2, 3), (2, 1)),
                   ((1,), (5,)), ((2, 1, 3), (4, 1))]


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "pow", "maximum", "atan2",
                                "where"])
@pytest.mark.parametrize("shapes", BROADCAST_CASES)
def test_broadcast_gradients_reduce_to_input_shape(torch, op, shapes):
    rng = np.random.default_rng(0)
    sa, sb = shapes
    a0 = rng.uniform(0.5, 2.0, sa)
    b0 = rng.uniform(0.5, 2.0, sb)
    out0 = rng.uniform(-1, 1, np.broadcast_shapes(sa, sb))

    def run(lib, a, b, g):
        if op == "where":
            return lib.where(a > 1.0, a, b) * g
        return getattr(lib, op)(a, b) * g

    a, b = leaf(a0), leaf(b0)
    run(ember, a, b, ember.tensor(out0)).sum().backward()
    ta = torch.tensor(a0, requires_grad=True)
    tb = torch.tensor(b0, requires_grad=True)
    run(torch, ta, tb, torch.tensor(out0)).sum().backward()
    assert a.grad.shape == sa and b.grad.shape == sb
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_broadcast_with_scalar_and_expand():
    x = leaf([[1.0], [2.0]])
    y = (x.expand(2, 3) * ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64) + 1.5).sum()
    y.backward()
    assert x.grad.tolist() == [[6.0], [6.0]]


def test_matmul_gradients_with_batch_broadcast(torch):
    rng = np.random.default_rng(1)
    a0, b0 = rng.normal(size=(2, 1, 3, 4)), rng.normal(size=(5, 4, 2))
    a, b = leaf(a0), leaf(b0)
    (a @ b).sum().backward()
    ta, tb = torch.tensor(a0, requires_grad=True), torch.tensor(b0, requires_grad=True)
    (ta @ tb).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-10)


# -- large graphs -----------------------------------------------------------------------------


class TestLargeGraphs:
    def test_deep_chain(self):
        """10,000 nodes in a row: the engine must not recurse."""
        x = ember.tensor([1.0], requires_grad=True)
        y = x
        for _ in range(10_000):
            y = y * 1.0001
        y.sum().backward()
        np.testing.assert_allclose(x.grad.item(), 1.0001 ** 10_000, rtol=1e-3)

    def test_deep_chain_second_order(self):
        x = ember.tensor([1.0], dtype=ember.float64, requires_grad=True)
        y = x
        for _ in range(2000):
            y = y + x * 0.001
        (g,) = ember.autograd.grad(y.sum(), x, create_graph=True)
        assert g.item() == pytest.approx(3.0)

    def test_wide_graph_with_shared_subexpressions(self, torch):
        def build(lib, x):
            s = x * x  # shared by every branch
            parts = [s * (i + 1) + x for i in range(200)]
            t = parts[0]
            for p in parts[1:]:
                t = t + p * s
            return t.sum()

        x0 = np.array([0.3, -0.2, 0.1])
        x = leaf(x0)
        build(ember, x).backward()
        tx = torch.tensor(x0, requires_grad=True)
        build(torch, tx).backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10)

    def test_diamond(self):
        x = leaf([2.0])
        a = x * 3
        b, c = a * a, a.exp()
        d = b + c
        d.sum().backward()
        np.testing.assert_allclose(x.grad.item(), 3 * (2 * 6.0 + np.exp(6.0)))


# -- ember.autograd.grad and higher order ---------------------------------------------------


class TestAutogradGrad:
    def test_grad_does_not_touch_dot_grad(self):
        x = leaf([1.0, 2.0])
        (g,) = ember.autograd.grad((x * x).sum(), x)
        assert g.tolist() == [2.0, 4.0] and x.grad is None

    def test_grad_returns_tuple(self):
        x, y = leaf([1.0]), leaf([2.0])
        gx, gy = ember.autograd.grad((x * y).sum(), [x, y])
        assert gx.tolist() == [2.0] and gy.tolist() == [1.0]

    def test_grad_of_no_inputs_is_torchs_error(self, torch):
        for lib in (torch, ember):
            x = lib.ones(2, requires_grad=True)
            with pytest.raises(RuntimeError, match=r"^`inputs` argument to `grad\(\)` cannot "
                                                   r"be empty\.$"):
                lib.autograd.grad((x * 2).sum(), [])

    def test_grad_with_grad_outputs(self):
        x = leaf([1.0, 2.0])
        (g,) = ember.autograd.grad(x * x, x, grad_outputs=ember.tensor([1.0, 10.0],
                                                                     dtype=ember.float64))
        assert g.tolist() == [2.0, 40.0]

    def test_grad_of_non_leaf(self):
        x = leaf([1.0, 2.0])
        y = x * 3
        (g,) = ember.autograd.grad((y * y).sum(), y)
        assert g.tolist() == [6.0, 12.0]

    def test_second_derivative_of_cube(self):
        x = leaf([1.0, 2.0, -3.0])
        (g,) = ember.autograd.grad((x ** 3).sum(), x, create_graph=True)
        assert g.requires_grad
        np.testing.assert_allclose(g.detach().numpy(), 3 * np.array([1.0, 4.0, 9.0]))
        (h,) = ember.autograd.grad(g.sum(), x)
        np.testing.assert_allclose(h.numpy(), [6.0, 12.0, -18.0])

    def test_third_derivative_of_sin(self):
        x0 = np.array([0.3, 1.2])
        x = leaf(x0)
        (g1,) = ember.autograd.grad(x.sin().sum(), x, create_graph=True)
        (g2,) = ember.autograd.grad(g1.sum(), x, create_graph=True)
        (g3,) = ember.autograd.grad(g2.sum(), x)
        np.testing.assert_allclose(g1.detach().numpy(), np.cos(x0))
        np.testing.assert_allclose(g2.detach().numpy(), -np.sin(x0))
        np.testing.assert_allclose(g3.numpy(), -np.cos(x0))

    def test_second_derivative_through_backward(self):
        x = leaf([2.0])
        y = (x ** 3).sum()
        y.backward(create_graph=True)
        g = x.grad
        assert g.requires_grad and g.item() == 12.0
        x.grad = None
        g.sum().backward()
        assert x.grad.item() == 12.0  # d/dx 3x^2 = 6x

    def test_hessian_vector_product(self, torch):
        def f(lib, x):
            return (x[0] ** 2 * x[1] + (x[1] * x[2]).sin() + x.exp().sum() * x[2]).sum()

        x0 = np.array([0.5, -1.0, 0.7])
        v0 = np.array([1.0, 0.5, -2.0])
        x = leaf(x0)
        (g,) = ember.autograd.grad(f(ember, x), x, create_graph=True)
        (hv,) = ember.autograd.grad((g * ember.tensor(v0)).sum(), x)
        tx = torch.tensor(x0, requires_grad=True)
        (tg,) = torch.autograd.grad(f(torch, tx), tx, create_graph=True)
        (thv,) = torch.autograd.grad((tg * torch.tensor(v0)).sum(), tx)
        np.testing.assert_allclose(hv.numpy(), thv.numpy(), rtol=1e-10)

    @pytest.mark.parametrize("fn", ["tanh", "sigmoid", "exp", "log", "sqrt", "reciprocal",
                                    "softmax", "matmul", "div", "pow", "mean_var", "index"])
    def test_second_derivatives_match_torch(self, torch, fn):
        def f(lib, x):
            if fn == "softmax":
                return (lib.softmax(x, dim=0) * lib.arange(3, dtype=x.dtype)).sum()
            if fn == "matmul":
                m = x.reshape(3, 1) @ x.reshape(1, 3)
                return (m @ x).sum()
            if fn == "div":
                return (x / (x.sum() + 1.0)).prod()
            if fn == "pow":
                return (x ** x).sum()
            if fn == "mean_var":
                return x.var() * x.mean()
            if fn == "index":
                return (x[lib.tensor([0, 2, 2])] ** 3).sum()
            return getattr(x, fn)().sum() ** 2

        x0 = np.array([0.4, 0.9, 1.7])
        x = leaf(x0)
        (g,) = ember.autograd.grad(f(ember, x), x, create_graph=True)
        (h,) = ember.autograd.grad(g[1], x)
        tx = torch.tensor(x0, requires_grad=True)
        (tg,) = torch.autograd.grad(f(torch, tx), tx, create_graph=True)
        (th,) = torch.autograd.grad(tg[1], tx)
        np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy(), rtol=1e-9)
        np.testing.assert_allclose(h.numpy(), th.numpy(), rtol=1e-9, atol=1e-12)

    def test_allow_unused(self):
        x, y = leaf([1.0]), leaf([2.0])
        with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
            ember.autograd.grad((x * 2).sum(), [x, y])
        gx, gy = ember.autograd.grad((x * 2).sum(), [x, y], allow_unused=True)
        assert gx.tolist() == [2.0] and gy is None
        gx, gy = ember.autograd.grad((x * 2).sum(), [x, y], materialize_grads=True)
        assert gy.tolist() == [0.0]

    def test_grad_input_not_requiring_grad(self):
        x = leaf([1.0])
        c = ember.tensor([1.0], dtype=ember.float64)
        with pytest.raises(RuntimeError, match="does not require grad"):
            ember.autograd.grad((x * c).sum(), c)

    def test_grad_frees_graph_unless_retained(self):
        x = leaf([1.0])
        y = (x * x).sum()
        ember.autograd.grad(y, x, retain_graph=True)
        ember.autograd.grad(y, x)
        with pytest.raises(RuntimeError, match="second time"):
            ember.autograd.grad(y, x)


# -- custom Function ----------------------------------------------------------------------------


class TestCustomFunction:
    def test_save_for_backward_and_needs_input_grad(self):
        seen = {}

        class MulAdd(Function):
            @staticmethod
            def forward(ctx, a, b, scale):
                ctx.save_for_backward(a, b)
                ctx.scale = scale
                return a * b * scale + b

            @staticmethod
            def backward(ctx, g):
                a, b = ctx.saved_tensors
                seen["needs"] = ctx.needs_input_grad
                ga = g * b * ctx.scale if ctx.needs_input_grad[0] else None
                gb = g * (a * ctx.scale + 1) if ctx.needs_input_grad[1] else None
                return ga, gb, None

        a = leaf([1.0, 2.0])
        b = ember.tensor([3.0, 4.0], dtype=ember.float64)
        out = MulAdd.apply(a, b, 2.0)
        assert out.tolist() == [9.0, 20.0]
        assert out.grad_fn.name() == "MulAddBackward" and out.requires_grad
        out.sum().backward()
        assert seen["needs"] == (True, False, False)
        assert a.grad.tolist() == [6.0, 8.0]

        b.requires_grad_()
        MulAdd.apply(a, b, 2.0).sum().backward()
        assert seen["needs"] == (True, True, False)
        assert b.grad.tolist() == [3.0, 5.0]

    def test_forward_runs_without_grad(self):
        modes = []

        class Probe(Function):
            @staticmethod
            def forward(ctx, x):
                modes.append(ember.is_grad_enabled())
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2

        x = leaf([1.0])
        y = Probe.apply(x)
        assert modes == [False]  # forward's own ops are not recorded
        assert y.grad_fn.name() == "ProbeBackward"
        assert y.grad_fn.next_functions[0][0].variable is x
        y.sum().backward()
        assert x.grad.tolist() == [2.0]

    def test_multiple_outputs(self):
        class SinCos(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x.sin(), x.cos()

            @staticmethod
            def backward(ctx, gs, gc):
                (x,) = ctx.saved_tensors
                return gs * x.cos() - gc * x.sin()

        x0 = np.array([0.1, 0.7])
        x = leaf(x0)
        s, c = SinCos.apply(x)
        (s * 2 + c * 3).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), 2 * np.cos(x0) - 3 * np.sin(x0))
        # one output unused: its gradient arrives as zeros
        x.grad = None
        s, c = SinCos.apply(x)
        s.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), np.cos(x0))

    def test_non_tensor_outputs_pass_through(self):
        # PyTorch lets forward return other values beside tensors (a count, a tuple of
        # tensors); they come back unchanged, and backward gets None for them
        seen = []

        class WithCount(Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2, 3, (x.sum(),)

            @staticmethod
            def backward(ctx, g, g_count, g_pair):
                seen.append((g_count, g_pair))
                return g * 2

        x = leaf(np.array([1.0, 2.0]))
        y, count, pair = WithCount.apply(x)
        assert count == 3 and isinstance(pair, tuple) and not pair[0].requires_grad
        assert y.requires_grad
        y.sum().backward()
        assert x.grad.tolist() == [2.0, 2.0] and seen == [(None, None)]

    def test_custom_function_in_a_larger_graph_and_double_use(self):
        class Square(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return 2 * x * g

        x = leaf([3.0])
        y = Square.apply(x.exp()) + Square.apply(x)
        y.sum().backward()
        np.testing.assert_allclose(x.grad.item(), 2 * np.exp(6.0) + 6.0)

    def test_wrong_number_of_gradients(self):
        class Bad(Function):
            @staticmethod
            def forward(ctx, a, b):
                return a + b

            @staticmethod
            def backward(ctx, g):
                return (g,)

        with pytest.raises(RuntimeError, match="incorrect number of gradients"):
            Bad.apply(leaf([1.0]), leaf([2.0])).sum().backward()

    def test_saved_tensors_freed_after_backward(self):
        class Keep(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * 1

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * x

        y = Keep.apply(leaf([2.0])).sum()
        y.backward()
        with pytest.raises(RuntimeError, match="second time"):
            y.backward()

    def test_no_grad_inputs_give_plain_output(self):
        class Twice(Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2

        y = Twice.apply(ember.tensor([1.0]))
        assert not y.requires_grad and y.grad_fn is None

    def test_mark_non_differentiable(self):
        class SortLike(Function):
            @staticmethod
            def forward(ctx, x):
                idx = x.argmax().reshape(1).double()
                ctx.mark_non_differentiable(idx)
                return x * 1, idx

            @staticmethod
            def backward(ctx, g, gi):
                return g

        v, i = SortLike.apply(leaf([1.0, 3.0]))
        assert v.requires_grad and not i.requires_grad


# -- hooks --------------------------------------------------------------------------------------


class TestHooks:
    def test_leaf_hook_sees_and_replaces_grad(self):
        x = leaf([1.0, 2.0])
        seen = []

        def hook(g):
            seen.append(g.tolist())
            return g * 10

        x.register_hook(hook)
        (x * 3).sum().backward()
        assert seen == [[3.0, 3.0]]
        assert x.grad.tolist() == [30.0, 30.0]

    def test_non_leaf_hook_changes_upstream_grad(self, torch):
        def run(lib):
            x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
            y = x * x
            seen = []
            y.register_hook(lambda g: seen.append(g.tolist()))  # observe only
            y.register_hook(lambda g: g * 2)  # then double
            (y * 3).sum().backward()
            return seen, x.grad.tolist()

        assert run(ember) == run(torch)

    def test_hook_returning_none_keeps_grad(self):
        x = leaf([1.0])
        x.register_hook(lambda g: None)
        (x * 4).sum().backward()
        assert x.grad.tolist() == [4.0]

    def test_hook_remove(self):
        x = leaf([1.0])
        handle = x.register_hook(lambda g: g * 100)
        handle.remove()
        (x * 2).sum().backward()
        assert x.grad.tolist() == [2.0]
        y = x * 1
        h2 = y.register_hook(lambda g: g * 100)
        h2.remove()
        x.grad = None
        (y * 2).sum().backward()
        assert x.grad.tolist() == [2.0]

    def test_hook_runs_once_per_backward_with_total_grad(self):
        x = leaf([1.0])
        y = x * 2
        seen = []
        y.register_hook(lambda g: seen.append(g.item()))
        (y * 3 + y * 4).sum().backward()
        assert seen == [7.0]

    def test_leaf_hook_runs_once_with_the_summed_grad(self):
        x = leaf([1.0])
        seen = []
        x.register_hook(lambda g: seen.append(g.item()))
        (x * 2 + x * 5 + x.exp()).sum().backward()
        assert seen == [pytest.approx(7.0 + np.e)]
        assert x.grad.item() == pytest.approx(7.0 + np.e)

    def test_hook_on_tensor_without_grad(self):
        with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that "
                                               "doesn't require gradient"):
            ember.tensor([1.0]).register_hook(lambda g: g)

    def test_hooks_with_autograd_grad(self):
        x = leaf([1.0])
        y = x * 2
        y.register_hook(lambda g: g * 5)
        (g,) = ember.autograd.grad((y * 3).sum(), x)
        assert g.tolist() == [30.0]


# -- in-place ops and views -------------------------------------------------------------------


class TestInPlace:
    def test_in_place_on_leaf_requiring_grad_raises(self, torch):
        x = leaf([1.0, 2.0])
        for op in (lambda t: t.add_(1), lambda t: t.mul_(2), lambda t: t.zero_(),
                   lambda t: t.copy_(ember.ones(2, dtype=ember.float64))):
            with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being "
                                                   "used in an in-place operation"):
                op(x)
        assert x.tolist() == [1.0, 2.0] and x._version == 0
        tx = torch.tensor([1.0], requires_grad=True)
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being "
                                               "used in an in-place operation"):
            tx.add_(1)

    def test_setitem_on_leaf_requiring_grad_raises(self):
        x = leaf([1.0, 2.0])
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad is being "
                                               "used in an in-place operation"):
            x[0] = 3.0
        with pytest.raises(RuntimeError, match="view of a leaf Variable that requires grad"):
            x[0:1].add_(1)
        assert x.tolist() == [1.0, 2.0]

    def test_in_place_on_non_leaf(self, torch):
        def run(lib):
            x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
            y = x * 2
            y.add_(x)
            y.mul_(x)
            y.sum().backward()
            return y.tolist(), x.grad.tolist()

        assert run(ember) == run(torch)

    def test_in_place_changes_grad_fn_and_version(self):
        x = leaf([1.0])
        y = x * 2
        v = y._version
        y.add_(1)
        assert y._version == v + 1
        assert y.grad_fn.name() == "AddBackward0"

    @pytest.mark.parametrize("case", ["slice_mul", "set_from_other", "flat_view_write",
                                      "view_of_view", "transpose_write", "masked",
                                      "index_tensor", "narrow_copy", "unsqueeze_fill"])
    def test_in_place_through_view_of_non_leaf(self, torch, case):
        def run(lib):
            x = lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=lib.float64,
                           requires_grad=True)
            z = lib.tensor(5.0, dtype=lib.float64, requires_grad=True)
            y = x * 2
            if case == "slice_mul":
                y[:, 1:3] *= 3
            elif case == "set_from_other":
                y[0, 1] = z
            elif case == "flat_view_write":
                y.view(-1)[2] = 0
            elif case == "view_of_view":
                v = y[1]
                v[1:].mul_(z)
            elif case == "transpose_write":
                y.t()[0].add_(z)
            elif case == "masked":
                y[y > 6] = z * 2
            elif case == "index_tensor":
                y[lib.tensor([0, 1]), lib.tensor([2, 0])] = z
            elif case == "narrow_copy":
                y.narrow(1, 0, 2).copy_(z.expand(2, 2) * x[:, 1:])
            elif case == "unsqueeze_fill":
                y[1].unsqueeze(0).fill_(3.0)
            out = (y * y * lib.arange(1, 7, dtype=lib.float64).reshape(2, 3)).sum()
            out.backward()
            zg = None if z.grad is None else z.grad.tolist()
            return y.tolist(), x.grad.tolist(), zg

        got, want = run(ember), run(torch)
        assert got[0] == want[0], "values"
        np.testing.assert_allclose(got[1], want[1], err_msg="x.grad")
        if want[2] is None:
            assert got[2] in (None, 0.0)
        else:
            np.testing.assert_allclose(got[2], want[2], err_msg="z.grad")

    def test_base_sees_write_through_view_in_graph(self):
        x = leaf([1.0, 2.0, 3.0])
        y = x * 1
        v = y[1:]
        v.mul_(10)
        assert y.tolist() == [1.0, 20.0, 30.0]
        assert y.grad_fn is not None and y.grad_fn.name() == "ember::autograd::CopySlices"
        assert type(y.grad_fn).__name__ == "CopySlices"

    def test_version_counter_saved_input(self):
        x = leaf([1.0, 2.0])
        w = leaf([3.0, 4.0]) * 1  # a non-leaf
        y = x * w  # saves w
        w.add_(1)
        with pytest.raises(RuntimeError, match="one of the variables needed for gradient "
                                               "computation has been modified by an inplace "
                                               "operation"):
            y.sum().backward()

    def test_version_counter_saved_output(self):
        x = leaf([1.0, 2.0])
        y = x.exp()  # saves its output
        y.add_(1)
        with pytest.raises(RuntimeError, match=r"modified by an inplace operation.*is at "
                                               r"version 1; expected version 0"):
            y.sum().backward()

    def test_version_counter_through_a_view(self):
        x = leaf([1.0, 2.0])
        y = x * 1
        z = y.sigmoid()  # saves its output z
        z[0] = 0.0  # a write through a view of z bumps z's version
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            z.sum().backward()

    @pytest.mark.parametrize("factor", ["scalar", "constant_tensor"])
    def test_version_counter_not_triggered_when_not_saved(self, factor):
        """Only what a gradient needs is saved: `y * c` with c not requiring grad needs
        just c, so changing y afterwards is harmless (as in torch)."""
        x = leaf([1.0, 2.0])
        y = x + 1  # add saves nothing
        c = 2.0 if factor == "scalar" else ember.tensor([2.0, 2.0], dtype=ember.float64)
        z = y * c
        y.add_(1)
        z.sum().backward()
        assert x.grad.tolist() == [2.0, 2.0]

    def test_version_counter_shared_by_views_and_detach(self):
        x = ember.zeros(4)
        v, d = x[1:], x.detach()
        x.add_(1)
        assert x._version == v._version == d._version == 1
        v.mul_(2)
        assert x._version == 2 and d._version == 2

    def test_setitem_bumps_version(self):
        x = ember.zeros(3)
        x[0] = 1.0
        x[ember.tensor([1])] = 2.0
        assert x._version == 2

    def test_leaf_modified_under_no_grad_after_use(self):
        x = leaf([1.0, 2.0])
        y = (x * x).sum()  # saves x
        with ember.no_grad():
            x.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.backward()


def test_gradients_of_common_ops_against_finite_differences():
    """A cross-check independent of torch: a composite function in float64."""
    rng = np.random.default_rng(3)
    a0 = rng.uniform(0.5, 1.5, (3, 4))
    w0 = rng.normal(size=(4, 2))

    def f(a_np, lib_tensor=None):
        a = ember.tensor(a_np) if lib_tensor is None else lib_tensor
        w = ember.tensor(w0)
        h = (a @ w).tanh()
        return ((h ** 2).sum(dim=1).sqrt() + a.log().mean(dim=1)).softmax(dim=0)[0] * 3

    a = leaf(a0)
    f(None, a).backward()
    expected = numeric_grad(lambda v: f(v).item(), a0)
    np.testing.assert_allclose(a.grad.numpy(), expected, rtol=1e-5, atol=1e-8)


def test_leaf_grads_never_share_a_buffer():
    # add's backward hands one gradient to both inputs; a custom Function may return one
    # tensor for two inputs. Each .grad must own its memory: writing one leaves the other.
    a = ember.ones(3, requires_grad=True)
    b = ember.ones(3, requires_grad=True)
    (a + b).backward(ember.ones(3))

    class Twice(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x + y

        @staticmethod
        def backward(ctx, g):
            shared = g * 2
            return shared, shared

    c = ember.ones(3, requires_grad=True)
    d = ember.ones(3, requires_grad=True)
    Twice.apply(c, d).backward(ember.ones(3))
    with ember.no_grad():
        a.grad.add_(1)
        c.grad.add_(1)
    np.testing.assert_array_equal(b.grad.numpy(), [1, 1, 1])
    np.testing.assert_array_equal(d.grad.numpy(), [2, 2, 2])
    np.testing.assert_array_equal(c.grad.numpy(), [3, 3, 3])


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_relu_backward_keeps_exact_zeros(torch, dtype):
    # where the input is <= 0 the gradient is exactly 0, even for an inf or NaN incoming
    # gradient; huge finite values (whose squares overflow) pass through unchanged
    x = np.array([[-1.0, 0.5, 2.0, 0.0, -3.0, 4.0]] * 3, dtype=dtype)
    g = np.array([[np.inf, np.nan, 1e30, np.nan, -np.inf, 2.0]] * 3, dtype=dtype)
    xe = ember.tensor(x, requires_grad=True)
    ember.relu(xe).backward(ember.tensor(g))
    xt = torch.tensor(x, requires_grad=True)
    torch.relu(xt).backward(torch.tensor(g))
    np.testing.assert_array_equal(xe.grad.numpy(), xt.grad.numpy())


@pytest.mark.filterwarnings("ignore:Error detected in")  # torch's forward traceback
def test_detect_anomaly_names_the_node_that_made_nan_as_torch():
    torch = pytest.importorskip("torch")
    messages = []
    for lib in (torch, ember):
        x = lib.tensor([0.0, 1.0], requires_grad=True)
        with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
            mode = lib.autograd.detect_anomaly()
        with mode:
            assert lib.is_anomaly_enabled() and lib.is_anomaly_check_nan_enabled()
            with pytest.raises(RuntimeError) as info:
                (x / x).sum().backward()
            messages.append(str(info.value).splitlines()[0])
        assert not lib.is_anomaly_enabled()
        with lib.autograd.set_detect_anomaly(True, check_nan=False):
            assert lib.is_anomaly_enabled() and not lib.is_anomaly_check_nan_enabled()
            (x / x).sum().backward()  # NaN allowed: check_nan is off
        assert not lib.is_anomaly_enabled() and lib.is_anomaly_check_nan_enabled()
        lib.autograd.set_detect_anomaly(True)  # as a plain call it stays on
        assert lib.is_anomaly_enabled()
        lib.autograd.set_detect_anomaly(False)
    assert messages[1] == messages[0]
    assert messages[0] == "Function 'DivBackward0' returned nan values in its 1th output."


def test_autograd_gradcheck_checks_a_custom_function():
    """`torch.autograd.gradcheck` (as PyTorch programs spell it) passes a right backward
    and catches a wrong one."""

    class Cube(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x, wrong):
            ctx.save_for_backward(x)
            ctx.wrong = wrong
            return x ** 3

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * (2 if ctx.wrong else 3) * x ** 2, None

    x = ember.tensor([0.5, -1.0, 2.0], dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(Cube.apply, (x, False), eps=1e-6, atol=1e-4)
    assert not ember.autograd.gradcheck(Cube.apply, (x, True), raise_exception=False)
    with pytest.raises(Exception, match="Jacobian mismatch"):
        ember.autograd.gradcheck(Cube.apply, (x, True))
    assert callable(ember.autograd.gradgradcheck)


def test_gradcheck_takes_torchs_keywords():
    # the "Fusing Convolution and Batch Norm" tutorial calls gradcheck(..., fast_mode=False)
    x = ember.tensor([0.5, -1.0, 2.0], dtype=ember.float64, requires_grad=True)
    cube = lambda t: t ** 3  # noqa: E731
    for fast in (False, True):
        assert ember.autograd.gradcheck(cube, (x,), fast_mode=fast, nondet_tol=0.0,
                                        check_undefined_grad=True, check_grad_dtypes=True)
        assert ember.autograd.gradgradcheck(cube, (x,), fast_mode=fast,
                                            gen_non_contig_grad_outputs=False)
    wrong = lambda t: t.detach() ** 3 + t  # noqa: E731 - a gradient of 1, not 3t^2
    assert not ember.autograd.gradcheck(wrong, (x,), fast_mode=True, raise_exception=False)
    # nothing to check: passes, as torch's
    assert ember.autograd.gradcheck(wrong, (x,), check_backward_ad=False)
    assert ember.autograd.gradgradcheck(wrong, (x,), check_rev_over_rev=False)


# -- torch.func: grad, grad_and_value, vmap -------------------------------------------------


def test_func_errors_match_torch():
    torch = pytest.importorskip("torch")
    import torch.func as tfunc

    import ember.func as efunc

    for L, func in ((ember, efunc), (torch, tfunc)):
        with pytest.raises(RuntimeError, match=r"Expected f\(\*args\) to return a scalar Tensor, "
                                               r"got tensor with 1 dims"):
            func.grad(lambda x: x * 2)(L.ones(2))
        with pytest.raises(ValueError, match=r"Expected all tensors to have the same size in the "
                                             r"mapped dimension, got sizes \[2, 4\]"):
            func.vmap(lambda x, y: x + y)(L.ones(2, 3), L.ones(4, 3))
        with pytest.raises(ValueError, match=r"Got in_dim=1 for some input, but that input is a "
                                             r"Tensor of dimensionality 1"):
            func.vmap(lambda x: x, in_dims=1)(L.ones(2))
        with pytest.raises(ValueError, match="We cannot vmap over non-Tensor arguments"):
            func.vmap(lambda x: x)(5.0)
        with pytest.raises(RuntimeError, match="Expected tensors, got unsupported type"):
            func.grad(lambda x: (x.sum(), "aux"), has_aux=True)(L.ones(2))


def test_top_level_vmap_is_func_vmap():
    # torch.vmap(f) is torch.func.vmap: per-sample code calls either
    assert ember.vmap is ember.func.vmap
    out = ember.vmap(lambda row: (row * row).sum())(ember.tensor([[1.0, 2.0], [3.0, 4.0]]))
    assert out.tolist() == [5.0, 25.0]


def test_autograd_function_module_and_grad_errors_match_torch():
    """`torch.autograd.function.once_differentiable` without importing the submodule, and
    autograd.grad's messages for inputs that do not require grad or were not used."""
    torch = pytest.importorskip("torch")
    for L in (ember, torch):
        class Square(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            @L.autograd.function.once_differentiable
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                return 2 * x * grad

        x = L.tensor([1.5, -2.0], requires_grad=True)
        Square.apply(x).sum().backward()
        assert x.grad.tolist() == [3.0, -4.0]
        with pytest.raises(RuntimeError, match=r"^One of the differentiated Tensors does not "
                                               r"require grad$"):
            L.autograd.grad((x * 2).sum(), [x, L.ones(2)])
        with pytest.raises(RuntimeError, match=r"^The differentiated Tensor at index 1 appears to "
                                               r"not have been used in the graph"):
            L.autograd.grad((x * 2).sum(), [x, x * 3])


def test_custom_function_node_class_is_named_as_torchs():
    """Each Function gets its own node class `<Name>Backward` (a subclass's too), with
    `_forward_cls` pointing back: torchdiffeq-style programs print
    `type(y.grad_fn).__name__`."""
    torch = pytest.importorskip("torch")
    seen = []
    for L in (torch, ember):
        class Double(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return grad * 2

        class Triple(Double):
            @staticmethod
            def forward(ctx, x):
                return x * 3

        x = L.ones(2, requires_grad=True)
        y, z = Double.apply(x), Triple.apply(x)
        assert type(y.grad_fn) is Double._backward_cls and Double._backward_cls._forward_cls \
            is Double and type(z.grad_fn) is Triple._backward_cls
        (y + z).sum().backward()
        seen.append((type(y.grad_fn).__name__, type(z.grad_fn).__name__, y.grad_fn.name(),
                     x.grad.tolist(), str(y).replace("ember.", "torch.")))
    assert seen[1] == seen[0]


def test_saved_tensors_hooks_as_torch():
    # "Hooks for autograd saved tensors": every tensor saved for backward goes through the
    # innermost pack hook, and backward reads it back through the unpack hook
    torch = pytest.importorskip("torch")
    results = []
    for lib in (torch, ember):
        log = []
        a = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        b = lib.tensor([4.0, 5.0, 6.0], requires_grad=True) * 2
        storage = []

        def pack(x, log=log, storage=storage):
            log.append(("pack", tuple(x.shape)))
            storage.append(x.detach().clone())
            return len(storage) - 1

        def unpack(i, log=log, storage=storage):
            log.append(("unpack", i))
            return storage[i]

        with lib.autograd.graph.saved_tensors_hooks(pack, unpack):
            y = (a * b).sum()
        with lib.autograd.graph.saved_tensors_hooks(lambda x: x * 0, lambda x: x):
            z = a.sin()  # backward reads the zeros the pack hook made: cos(0) = 1
        y.backward()
        z.sum().backward()
        with lib.autograd.graph.save_on_cpu():
            w = (a * a).sum()
        w.backward()
        with lib.autograd.graph.disable_saved_tensors_hooks("no hooks here"):
            with pytest.raises(RuntimeError, match="no hooks here"):
                with lib.autograd.graph.saved_tensors_hooks(pack, unpack):
                    pass
        results.append((sorted(log), a.grad.tolist()))
    assert results[0] == results[1]
    assert results[1][1] == [8.0 + 1.0 + 2.0, 10.0 + 1.0 + 4.0, 12.0 + 1.0 + 6.0]


def test_saved_tensors_hooks_with_create_graph_as_torch():
    # an unpacked tensor takes back the saved one's place in the graph: a double backward
    # differentiates through it (a leaf's and an intermediate's), as PyTorch's does
    torch = pytest.importorskip("torch")
    results = []
    for lib in (torch, ember):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        w = lib.tensor([3.0, 4.0], requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t.detach() * 1, lambda t: t):
            y = (x * w).sin() * x
        (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
        second = lib.autograd.grad(g.sum(), (x, w))
        with lib.autograd.graph.save_on_cpu():
            z = (x.exp() * w).sum()
        (gz,) = lib.autograd.grad(z, w, create_graph=True)
        gz.sum().backward()
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            saved = x.pow(2).grad_fn._saved_self  # a leaf again, accumulating into x
        assert (saved.is_leaf, saved.requires_grad, saved.grad_fn) == (True, True, None)
        results.append([g.detach().numpy(), *[t.numpy() for t in second], x.grad.numpy()])
    for got, want in zip(results[1], results[0]):
        np.testing.assert_allclose(got, want, rtol=1e-5)


def test_grad_fn_saved_values_as_torch():
    # the saved-tensors tutorial prints `d.grad_fn._saved_self is a` (True) and
    # `y is y.grad_fn._saved_result` (False: an output is unpacked as a new object)
    torch = pytest.importorskip("torch")
    got = []
    for lib in (torch, ember):
        a = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
        b = lib.ones(3, requires_grad=True)
        d = a * b
        y = a.exp()
        r = y.grad_fn._saved_result
        s = a.sin()
        s.sum().backward()
        with pytest.raises(RuntimeError, match="Trying to backward through the graph a "
                                               "second time"):
            getattr(s.grad_fn, "_saved_self")  # noqa: B009 - the attribute read is the test
        with pytest.raises(AttributeError, match="'SinBackward0' object has no attribute "
                                                 "'_saved_foo'"):
            getattr(s.grad_fn, "_saved_foo")  # noqa: B009
        got.append((d.grad_fn._saved_self is a, d.grad_fn._saved_other is b, y.equal(r),
                    y is r, r.requires_grad, r.grad_fn is y.grad_fn))
    assert got[0] == got[1] == (True, True, True, False, True, True)


def test_reflected_commutative_operators_put_the_tensor_first_as_torch():
    # `2 * b` is torch's b.mul(2): MulBackward0's edges are (b's node, None); and a leaf's
    # node is named torch::autograd::AccumulateGrad (the alias's API name here)
    torch = pytest.importorskip("torch")

    def edges(lib):
        b = lib.ones(3, requires_grad=True).sin()
        out = []
        for r in (2 * b, b * 2, 1 + b, b + 1, True + b, 2.5 * b.double()):
            out.append([None if n is None else n.name() for n, _ in r.grad_fn.next_functions])
        return out, lib.ones(1, requires_grad=True).mul(2).grad_fn.next_functions[0][0]

    (want, t_acc), (got, e_acc) = edges(torch), edges(ember)
    assert got == want
    assert e_acc.name() == "ember::autograd::AccumulateGrad" == t_acc.name().replace(
        "torch::", "ember::")
    assert repr(e_acc).startswith("<AccumulateGrad object at 0x")
    assert (2 * ember.tensor([1, 2])).tolist() == [2, 4]


def test_nodes_of_stack_squeeze_and_max_along_a_dim_are_torchs():
    # printed forms show these names (`torch.stack(losses)`, `model(x).squeeze()`,
    # `out.max(1)[0]`): one node each, with PyTorch's edges, gradients and double backward
    torch = pytest.importorskip("torch")

    def run(lib):
        x = lib.tensor(np.random.default_rng(0).standard_normal((3, 1, 4)), requires_grad=True)
        y = x * 2
        outs = [lib.stack([x, y], 1), lib.stack([y, x.detach()], -1), y.squeeze(), y.squeeze(1),
                y.squeeze((0, 1)), y.squeeze(0), y.max(2)[0], y.min(0, keepdim=True)[0]]
        names = [(o.grad_fn.name(), [None if n is None else n.name().replace("torch::", "")
                                     .replace("ember::", "") for n, _ in o.grad_fn.next_functions])
                 for o in outs]
        total = sum((o * o).sum() for o in outs)
        (g,) = lib.autograd.grad(total, x, create_graph=True)
        (gg,) = lib.autograd.grad((g * g).sum(), x)
        return names, g.tolist(), gg.tolist()

    assert run(ember) == run(torch)


def test_node_names_with_digits_are_torchs():
    # PyTorch capitalises after the digit in these (Log1PBackward0, Im2ColBackward0)
    torch = pytest.importorskip("torch")

    def names(lib):
        x = (lib.ones(3) + 0.5).requires_grad_()
        F = lib.nn.functional
        return [x.log1p().grad_fn.name(), x.expm1().grad_fn.name(), x.log2().grad_fn.name(),
                F.unfold(x.view(1, 1, 3, 1), (2, 1)).grad_fn.name(),
                F.fold(x.view(1, 3, 1), (3, 1), (3, 1)).grad_fn.name()]

    assert names(ember) == names(torch)


def _inference_save_outcomes(lib):
    """What each of a few ops does with an inference tensor outside inference mode."""
    with lib.inference_mode():
        made = lib.full((3,), 2.0)
    w = lib.ones(3, requires_grad=True)

    class Keep(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(b)
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g, None

    linear = lib.nn.Linear(3, 2)
    recorded = lib.ones(3, requires_grad=True).clone()
    outcomes = []
    for op in (lambda: w * made, lambda: made * w, lambda: w[:2] * made[1:],
               lambda: w @ made, lambda: w ** made, lambda: linear(made),
               lambda: Keep.apply(w, made), lambda: recorded.mul_(made),
               lambda: w + made, lambda: lib.where(made > 0, w, made),
               lambda: made * made, lambda: made.exp()):
        try:
            outcomes.append(("ok", op().requires_grad))
        except RuntimeError as error:
            outcomes.append(("refused", str(error)))
    with lib.no_grad():
        outcomes.append((w * made).requires_grad)
    return outcomes, recorded.tolist(), recorded._version


def test_grad_layout_contract_and_its_policy_as_torch(torch):
    """A permuted leaf's `.grad` gets the leaf's strides; under
    enforce_grad_layout_policy(False) a gradient autograd can keep keeps its own; the
    policy is set when the object is made and restored on leaving (or after a call)."""

    def layouts(L):
        p = L.zeros(2, 3, 4).permute(2, 0, 1).requires_grad_()
        (p * 2).sum().backward()
        strides = [p.grad.stride()]
        p.grad = None
        with L.autograd.enforce_grad_layout_policy(False):
            (p * 2).sum().backward()
        strides.append(p.grad.stride())
        p.grad = None
        p.backward(L.ones(4, 2, 3))  # a gradient the caller holds: copied, in p's layout
        strides.append(p.grad.stride())
        policy = L.autograd.enforce_grad_layout_policy(False)
        states = [L._C._is_grad_layout_enforcement_enabled()]
        with policy:
            pass
        states.append(L._C._is_grad_layout_enforcement_enabled())
        decorated = L.autograd.enforce_grad_layout_policy(False)(
            L._C._is_grad_layout_enforcement_enabled)
        states += [decorated(), L._C._is_grad_layout_enforcement_enabled()]
        return strides, states, p.grad.tolist() == L.full((4, 2, 3), 1.0).tolist()

    assert layouts(ember) == layouts(torch) == (
        [(1, 12, 4), (6, 3, 1), (1, 12, 4)], [False, True, False, True], True)


# -- a saved output holds no reference cycle ----------------------------------------------
# PyTorch's SavedVariable keeps a node's own output without the output's link back to the
# node; keeping the output itself would make output -> node -> output a cycle, and a
# forward whose result is dropped (an evaluation under grad mode) would hold its memory
# until Python's cycle collector ran.


class _ExpSavingOutput(Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


def _retaining(t):
    t.retain_grad()
    return t


@pytest.mark.parametrize("make", [
    lambda x: x.exp(), lambda x: x.sigmoid(), lambda x: x.tanh(), lambda x: x.relu(),
    lambda x: x.sqrt(), _ExpSavingOutput.apply, lambda x: _retaining(x * 2)],
    ids=["exp", "sigmoid", "tanh", "relu", "sqrt", "function", "retain_grad"])
def test_dropped_output_freed_without_the_cycle_collector(make):
    """(a tensor that called retain_grad() is not kept alive by its node either)"""
    import gc
    import weakref

    x = ember.rand(64, requires_grad=True)
    enabled = gc.isenabled()
    gc.disable()
    try:
        y = make(x)
        assert y.grad_fn is not None
        alive = weakref.ref(y)
        del y
        assert alive() is None
    finally:
        if enabled:
            gc.enable()


def test_saved_output_double_backward_matches_torch():
    torch = pytest.importorskip("torch")
    data = np.array([-1.5, -0.2, 0.3, 2.0], np.float32)
    for fn in ("exp", "sigmoid", "tanh"):
        got = []
        for lib in (ember, torch):
            x = lib.tensor(data, requires_grad=True)
            y = getattr(x, fn)()
            (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
            (gg,) = lib.autograd.grad(g.sum(), x)
            got.append(gg.detach().numpy())
        np.testing.assert_allclose(got[0], got[1], rtol=1e-5, atol=1e-6, err_msg=fn)
    # a custom Function's saved output, differentiated twice
    x = ember.tensor(data, requires_grad=True)
    (g,) = ember.autograd.grad(_ExpSavingOutput.apply(x).sum(), x, create_graph=True)
    (gg,) = ember.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), np.exp(data), rtol=1e-6)


def test_saved_output_read_back_and_checked_as_torch():
    torch = pytest.importorskip("torch")
    x = ember.tensor([0.5, 1.0], requires_grad=True)
    y = x.exp()
    saved = y.grad_fn._saved_result
    assert saved is not y and saved.grad_fn is y.grad_fn and saved.requires_grad
    np.testing.assert_array_equal(saved.detach().numpy(), y.detach().numpy())
    messages = []
    for lib in (ember, torch):
        y = lib.tensor([0.5, 1.0], requires_grad=True).exp()
        y.add_(1)
        with pytest.raises(RuntimeError) as info:
            y.sum().backward()
        messages.append(str(info.value).replace("torch.", "ember.").split("\n")[0])
    assert messages[0] == messages[1]
    assert "which is output 0 of Exp," in messages[0]
