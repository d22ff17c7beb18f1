"""Behaviours a review of the op declarations found apart from PyTorch, each run in ember
and in PyTorch (the oracle) and compared: values, dtypes, gradients, node names, errors."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def both(fn):
    """`fn(lib)` in ember and in torch: (ember's, torch's) result, or the exception."""
    out = []
    for lib in (ember, torch):
        try:
            out.append(fn(lib))
        except Exception as err:  # noqa: BLE001 - the comparison is the test
            out.append(err)
    return out


def plain(x):
    """A result as Python data, comparable across the two libraries."""
    if isinstance(x, (ember.Tensor, torch.Tensor)):
        return (str(x.dtype).split(".")[-1], x.detach().tolist())
    if isinstance(x, (list, tuple)):
        return type(x)([plain(v) for v in x])
    return x


def _match(a, b, approx):
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-7) if approx else a == b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_match(x, y, approx) for x, y in zip(a, b))
    return a == b


def same(fn, *, approx=False):
    """`fn` gives the same in both: dtypes, shapes, values (NaN equal to NaN; within float32
    rounding with `approx`), names, flags."""
    e, t = both(fn)
    assert not isinstance(t, Exception), f"torch raised {t!r}"
    assert not isinstance(e, Exception), f"ember raised {e!r}; torch gave {t!r}"
    assert _match(plain(e), plain(t), approx), f"ember: {plain(e)}\ntorch: {plain(t)}"


def same_error(fn, match):
    e, t = both(fn)
    assert isinstance(t, Exception), f"torch gave {t!r}"
    kin = isinstance(e, type(t)) or (isinstance(t, RuntimeError) and isinstance(e, RuntimeError))
    assert kin, f"ember: {e!r}; torch: {t!r}"
    assert match in str(e), str(e)


def grads(fn, *tensors):
    """Run `fn(lib, *leaves)` then backward of its sum; the leaves' gradients."""
    def run(lib):
        leaves = [lib.tensor(v, requires_grad=True) for v in tensors]
        fn(lib, *leaves).sum().backward()
        return [plain(x.grad) for x in leaves]
    return run


# -- add, sub, div ------------------------------------------------------------------


def test_div_inplace_takes_rounding_mode():
    same(lambda m: m.tensor([4.0, -6.0]).div_(m.tensor([3.0, 4.0]), rounding_mode="floor"))
    same(lambda m: m.tensor([4.0, -6.0]).div_(3.0, rounding_mode="trunc"))


def test_sub_inplace_is_sub():
    same(lambda m: (m.tensor([1.0, 2.0], requires_grad=True) * 1).sub_(1).grad_fn.name())
    same(lambda m: m.tensor([1.0, 2.0]).sub_(m.tensor([0.5, 1.0]), alpha=2))
    same_error(lambda m: m.tensor([1, 2]).sub_(m.tensor([True, False])), "Subtraction")
    same_error(lambda m: m.sub(m.tensor([1, 2]), m.tensor([True, False]), alpha=2),
               "Subtraction")


@pytest.mark.parametrize("case", [
    lambda m: m.add(m.tensor([1, 2]), 1, alpha=0.5),
    lambda m: m.tensor([1, 2]).add_(1, alpha=0.5),
    lambda m: m.sub(m.tensor([1, 2]), m.tensor([3, 4]), alpha=1.0),
])
def test_float_alpha_with_integers_raises(case):
    same_error(case, "alpha must not be a floating point number")


def test_bool_alpha():
    same_error(lambda m: m.add(m.tensor([1, 2]), m.tensor([1, 2]), alpha=True),
               "Boolean alpha only supported for Boolean results")
    same(lambda m: m.tensor([True, False]).add(m.tensor([True, False]), alpha=2))


def test_integer_trunc_division_is_exact():
    a, b = [16777217, -7, 7, -7, 7, -6, 0, 5], [1, 2, 2, -2, -2, 3, 3, 1]
    same(lambda m: m.div(m.tensor(a), m.tensor(b), rounding_mode="trunc"))
    same(lambda m: m.div(m.tensor(a), 3, rounding_mode="trunc"))
    same(lambda m: m.div(-7, m.tensor([2]), rounding_mode="trunc"))
    same(lambda m: m.div(m.tensor([7, 200], dtype=m.uint8), 2, rounding_mode="trunc"))
    same_error(lambda m: m.div(m.tensor([True]), m.tensor([True]), rounding_mode="trunc"), "")
    e, t = both(lambda m: m.div(m.tensor([5]), 0, rounding_mode="trunc"))
    assert isinstance(t, RuntimeError) and isinstance(e, RuntimeError)
    assert isinstance(e, ZeroDivisionError)


def test_binary_rule_cache_sees_the_default_dtype():
    a = ember.tensor([1, 2])
    assert (a / a).dtype is ember.float32
    ember.set_default_dtype(ember.float64)
    try:
        assert (a / a).dtype is ember.float64
    finally:
        ember.set_default_dtype(ember.float32)


# -- NumPy scalars --------------------------------------------------------------------


@pytest.mark.parametrize("case", [
    lambda m, x: x * np.float64(2), lambda m, x: x + np.float32(1),
    lambda m, x: np.float64(2) * x, lambda m, x: np.float32(2) - x,
    lambda m, x: x.clone().mul_(np.float64(2)), lambda m, x: m.where(x > 0, x, np.float64(0)),
    lambda m, x: x.clamp(min=np.float64(0.5)), lambda m, x: m.full((2,), np.float32(1.5)),
    lambda m, x: m.full((2,), np.int64(1)), lambda m, x: x.clone().fill_(np.float32(3)),
    lambda m, x: x.masked_fill(x > 0, np.float64(1)), lambda m, x: x > np.float64(0.5),
    lambda m, x: m.tensor([1, 2]) * np.float64(2.5), lambda m, x: x / np.sqrt(4.0),
    lambda m, x: x ** np.float64(2), lambda m, x: np.float64(2) ** x,
    lambda m, x: m.tensor([1, 2]) * np.int64(3), lambda m, x: m.pow(np.float64(2), x),
    lambda m, x: m.add(x, np.float64(1), alpha=np.float64(2)),
    lambda m, x: x.half() + np.float64(1.5),
])
def test_numpy_scalars_act_as_python_numbers(case):
    same(lambda m: case(m, m.tensor([1.0, 2.0])))


# -- gradients ------------------------------------------------------------------------


def test_pow_gradients_at_a_zero_base():
    same(grads(lambda m, x, e: x ** e, [0.0, 0.0, 2.0, -1.0], [0.0, 2.0, 0.0, -1.0]))
    same(grads(lambda m, e: 0.0 ** e, [0.0, 1.0, -1.0, 2.0]))
    same(grads(lambda m, e: 2.0 ** e, [0.0, 1.0, -1.0]), approx=False)
    same(grads(lambda m, x: x ** 0, [0.0, 3.0]))
    same(grads(lambda m, x: x ** 2, [0.0, 3.0]))


def test_clamp_with_tensor_bounds_sends_ties_to_the_input():
    def fn(m, x, lo, hi):
        y = m.clamp(x, lo, hi)
        return y * m.tensor([1.0, 2.0, 3.0, 4.0])
    same(grads(fn, [0.0, 1.0, 2.0, 3.0], [1.0, 1.0, 1.0, 2.5], [2.0, 2.0, 0.5, 2.0]))
    same(grads(lambda m, x, lo: m.clamp(x, min=lo), [0.0, 1.0, 2.0], 1.0))
    same(lambda m: m.clamp(m.tensor([float("nan"), 1.0]), min=m.tensor(0.0)))
    same(lambda m: m.clamp(m.ones(2, requires_grad=True), m.zeros(2)).grad_fn.name())
    same(lambda m: m.ones(2, requires_grad=True).clamp_min(0).grad_fn.name())


def test_einsum_gradient_with_a_broadcast_dimension():
    same(grads(lambda m, a, b: m.einsum("ij,j->", a, b), [[1.0], [1.0]], [0.0, 1.0, 2.0]))
    same(grads(lambda m, a, b: m.einsum("ij,kj->k", a, b) * m.tensor([1.0, 2.0]),
               [[1.0], [1.0]], [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]))


def test_einsum_sublist_form():
    # einsum(op, [subscripts], op, [subscripts], [output]): integers for letters, ... too
    a, b = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], [[1.0], [2.0], [3.0]]
    same(lambda m: m.einsum(m.tensor(a), [0, 1], m.tensor(b), [1, 2], [0, 2]))
    same(lambda m: m.einsum(m.tensor(a), [27, 0]))
    same(lambda m: m.einsum(m.tensor(a), [Ellipsis, 1], [Ellipsis]))
    same(grads(lambda m, x, y: m.einsum(x, [0, 1], y, [1, 2]), a, b))
    same_error(lambda m: m.einsum(m.tensor(a), [0, 52]), "not within the valid range [0, 52)")


def test_underscore_assert_checks_as_torch():
    # torch._assert(cond, msg): timm's and torchvision's input-shape checks
    same(lambda m: m._assert(m.ones(2).shape[0] == 2, "wrong size"))
    same_error(lambda m: m._assert(m.tensor(False), "Input image height (3) doesn't match"),
               "Input image height (3) doesn't match")


def test_floor_divide_result_requires_grad():
    same(lambda m: (m.tensor([3.0, 5.0], requires_grad=True) // 2).requires_grad)


# -- in place -------------------------------------------------------------------------


def test_inplace_keeps_the_old_value_only_where_backward_reads_it():
    # mul_ by a tensor that requires grad: its gradient reads the old value
    same(grads(lambda m, a, b: (a * 1).mul_(b) * 2, [1.0, 2.0], [3.0, 4.0]))
    same(grads(lambda m, a: (a * 1).sin_(), [0.5, 1.0]), approx=True)
    same(grads(lambda m, a: (a * 1).pow_(3), [0.5, 2.0]))
    same(grads(lambda m, a, b: (a * 1).add_(b, alpha=2) * (a * 1).exp_(), [0.5, 1.0],
               [1.0, 2.0]), approx=True)

    def through_view(m, a, b):
        c = a * 1
        c[0].mul_(b)
        return c * m.tensor([[1.0, 2.0], [3.0, 4.0]])
    same(grads(through_view, [[1.0, 2.0], [3.0, 4.0]], [5.0, 6.0]))


def test_inplace_double_backward():
    def run(m):
        a = m.tensor([1.0, 2.0], requires_grad=True)
        b = m.tensor([3.0, 4.0], requires_grad=True)
        y = (a * 1).mul_(b)
        (gb,) = m.autograd.grad(y.sum() * y.sum(), (b,), create_graph=True)
        (ga,) = m.autograd.grad(gb.sum(), (a,))
        return [plain(gb), plain(ga)]
    same(run)


def test_overwritten_nonleaf_stays_in_the_graph():
    def run(m):
        b = m.tensor([3.0, 5.0], requires_grad=True)
        w = b * 1
        w.fill_(2.0)
        (w * 1).sum().backward()
        return [w.requires_grad, plain(b.grad)]
    same(run)

    def view(m):
        b = m.tensor([3.0, 5.0], requires_grad=True)
        w = b * 1
        w[:1].fill_(1.0)
        (w * m.tensor([2.0, 3.0])).sum().backward()
        return plain(b.grad)
    same(view)


def test_metadata_inplace_ops():
    same_error(lambda m: m.ones(2, 3, requires_grad=True).t_(), "leaf Variable")

    def no_grad_leaf(m):
        with m.no_grad():
            return list(m.ones(2, 3, requires_grad=True).t_().shape)
    same(no_grad_leaf)

    def on_a_view(m):
        b = m.arange(6.0).reshape(2, 3).requires_grad_()
        c = b * 1
        v = c[:, 1:]
        v.t_()
        v.mul_(m.tensor([[1.0], [10.0]]))
        c.sum().backward()
        return [plain(b.grad), plain(c)]
    same(on_a_view)


def test_sign_inplace_on_bool():
    same(lambda m: m.tensor([True, False]).sign_())


# -- out= -----------------------------------------------------------------------------


def test_out_checks_tensors_inside_lists():
    for fn in (lambda m: m.cat([m.ones(2, requires_grad=True)], out=m.empty(2)),
               lambda m: m.stack([m.ones(2, requires_grad=True)], out=m.empty(1, 2))):
        same_error(fn, "don't support automatic differentiation")


def test_out_view_is_written_through_or_refused():
    def through(m):
        base = m.zeros(4)
        m.add(m.ones(3), 1, out=base[:3])
        return base
    same(through)

    def resized(m):  # a view resized within its storage: PyTorch's resize_ of it
        base = m.zeros(4)
        with pytest.warns(UserWarning, match="was resized"):
            m.add(m.ones(3), 1, out=base[:2])
        return base
    same(resized)
    with pytest.raises(RuntimeError, match="a view's storage cannot be grown"):
        ember.add(ember.ones(3), 1, out=ember.zeros(2)[:1])


@pytest.mark.parametrize("case", [
    lambda m, a: m.mm(a, a, out=m.empty(0, dtype=m.float64)),
    lambda m, a: m.matmul(a, a, out=m.empty(0, dtype=m.float64)),
    lambda m, a: m.abs(a, out=m.empty(0, dtype=m.float64)),
    lambda m, a: m.neg(a, out=m.empty(0, dtype=m.float64)),
    lambda m, a: m.where(a > 0, a, a, out=m.empty(2, 2, dtype=m.float64)),
    lambda m, a: m.clamp(a, 0, 1, out=m.empty(0, dtype=m.float64)),
])
def test_out_dtype_must_match_where_pytorch_says(case):
    e, t = both(lambda m: case(m, m.ones(2, 2)))
    assert isinstance(t, RuntimeError) and isinstance(e, RuntimeError), (e, t)
    assert str(e) == str(t)  # (each op family in its own words)


@pytest.mark.parametrize("case", [
    lambda m, a: m.exp(a, out=m.empty(0, dtype=m.float64)),
    lambda m, a: m.add(a, a, out=m.empty(0, dtype=m.float64)),
    lambda m, a: m.cat([a, a], out=m.empty(0, dtype=m.float64)),
    lambda m, a: m.sum(a, 0, out=m.empty(0, dtype=m.float64)),
])
def test_out_dtype_may_differ_where_pytorch_casts(case):
    same(lambda m: case(m, m.ones(2, 2)), approx=True)


# -- errors ---------------------------------------------------------------------------


def test_fill_takes_only_a_0d_tensor():
    same_error(lambda m: m.zeros(2).fill_(m.tensor([1.0])), "0-dimension value tensor")


def test_cat_of_0d_tensors():
    same_error(lambda m: m.cat([m.tensor(1.0), m.tensor(2.0)]),
               "zero-dimensional tensor (at position 0) cannot be concatenated")
    same_error(lambda m: m.cat([m.ones(2), m.tensor(2.0)]),
               "zero-dimensional tensor (at position 1) cannot be concatenated")


def test_ieee_arithmetic_gives_no_warning():
    # NumPy warns on inf - inf, 0 / 0 and log(-1); PyTorch computes the NaN silently. ember
    # filters the kernels' RuntimeWarnings (a filter set later, as pytest's, comes first).
    code = ("import ember, math\n"
            "inf = ember.tensor([float('inf')])\n"
            "assert math.isnan((inf - inf).item())\n"
            "assert math.isnan((ember.zeros(1) / ember.zeros(1)).item())\n"
            "assert math.isnan(ember.log(ember.tensor([-1.0])).item())\n")
    subprocess.run([sys.executable, "-W", "error", "-c", code], check=True)


def test_integer_overflow_in_tensor_data():
    same_error(lambda m: m.tensor([300], dtype=m.uint8), "value cannot be converted to type")
    same_error(lambda m: m.tensor([200], dtype=m.int8), "value cannot be converted to type")
