"""The per-op fast paths (binary operators, in-place accumulation, the backward engine's
loop, the traced replay's call) give what the general paths give: values and dtypes as
PyTorch's, kernels a backend swaps in, version counters, hooks."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.core import plugins

torch = pytest.importorskip("torch")

DTYPES = ["float32", "float64", "int8", "int64", "bool"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "eq", "lt", "truediv"])
def test_same_shape_binary_matches_torch(op, dtype):
    """Twice (the first call finds the result dtype, the second takes the fast path):
    values and dtype as PyTorch's, errors as PyTorch raises them."""
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((3, 4)) * 5).astype(dtype)
    y = (rng.standard_normal((3, 4)) * 5).astype(dtype)
    if dtype != "bool":
        y[y == 0] = 1
    fn = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
          "eq": lambda a, b: a == b, "lt": lambda a, b: a < b,
          "truediv": lambda a, b: a / b}[op]
    try:
        want = fn(torch.tensor(x), torch.tensor(y))
    except RuntimeError:  # (bool - bool) the rule refuses it every time, fast path or not
        for _ in range(2):
            with pytest.raises(RuntimeError, match="bool"):
                fn(ember.tensor(x), ember.tensor(y))
        return
    for _ in range(2):
        got = fn(ember.tensor(x), ember.tensor(y))
        assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]
        np.testing.assert_allclose(got.numpy().astype(np.float64),
                                   want.numpy().astype(np.float64), rtol=1e-6)


def test_bfloat16_operands_keep_bfloat16():
    a = ember.ones(4, dtype=ember.bfloat16)
    for _ in range(2):
        out = a + a
        assert out.dtype is ember.bfloat16
        assert out.tolist() == [2.0] * 4


def test_a_kernel_the_backend_swaps_in_is_the_one_that_runs():
    """The fast path remembers a result dtype, never a kernel: replace the CPU's `mul`
    and the next `a * b` calls the replacement."""
    kernels = plugins.get_backend("cpu").kernels
    a, b = ember.ones(3), ember.full((3,), 2.0)
    assert (a * b).tolist() == [2.0] * 3  # the fast path is warm
    original = kernels["mul"]
    calls = []

    def counting(x, y, out=None):
        calls.append(x.shape)
        return original(x, y, out=out)
    kernels["mul"] = counting
    try:
        assert (a * b).tolist() == [2.0] * 3
        a.mul_(b)
    finally:
        kernels["mul"] = original
    assert calls == [(3,), (3,)]
    assert a.tolist() == [2.0] * 3


def test_in_place_add_bumps_the_version_a_saved_tensor_checks():
    w = ember.ones(3, requires_grad=True)
    x = ember.ones(3)
    y = w * x  # mul saves x for w's gradient
    before = x._version
    x.add_(ember.ones(3))
    assert x._version == before + 1
    assert x.tolist() == [2.0] * 3
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_a_broadcast_view_refuses_in_place_writes():
    x = ember.zeros(3).expand(2, 3)
    with pytest.raises(RuntimeError, match="more than one element"):
        x.add_(ember.ones(2, 3))


def test_operators_record_for_autograd_and_accumulate_like_torch():
    xs = np.arange(4, dtype=np.float32)
    a, ta = ember.tensor(xs, requires_grad=True), torch.tensor(xs, requires_grad=True)
    b, tb = ember.tensor(xs + 1), torch.tensor(xs + 1)
    for _ in range(3):  # the second and third accumulate into .grad in place
        ((a + b) * (a - b) / b).sum().backward()
        ((ta + tb) * (ta - tb) / tb).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-6)
    assert (a + b).grad_fn.name() == "AddBackward0"
    assert (a + b).requires_grad and not (b + b).requires_grad


def test_node_post_hooks_see_the_gradients():
    """A node's hook (what module backward hooks install) runs after it, with its inputs'
    and outputs' gradients."""
    a = ember.ones(2, requires_grad=True)
    out = a * 3
    seen = []
    out.grad_fn.register_hook(lambda grad_in, grad_out: seen.append(
        (grad_in[0].tolist(), grad_out[0].tolist())))
    out.backward(ember.full((2,), 2.0))
    assert seen == [([6.0, 6.0], [2.0, 2.0])]


def test_traced_replay_returns_new_tensors_equal_to_eager():
    model = ember.nn.Sequential(ember.nn.Linear(8, 8), ember.nn.Tanh(), ember.nn.Linear(8, 3))
    x = ember.randn(4, 8)
    with ember.no_grad():
        traced = ember.jit.trace(model, x)
        outs = [traced(x) for _ in range(4)]  # warm-up, two recordings, replays
        want = model(x)
    for out in outs:
        np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-6)
    assert outs[-1] is not outs[-2]
    assert outs[-1]._data is not outs[-2]._data
