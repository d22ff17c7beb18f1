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


def _twice(fn):
    """fn() run twice: the second call takes a cached rule answer."""
    first = fn()
    return first, fn()


def test_cached_rule_answers_follow_what_the_rule_reads():
    """A metadata rule's answer is kept per shapes, dtypes, scalar types and values,
    attributes and the default dtype (ember.core.dispatch.rule_key): each call below
    differs from the one before in one of these only, and gets PyTorch's dtype or shape."""
    ints = ember.tensor([1, 2, 3])
    tints = torch.tensor([1, 2, 3])
    for lib, x in ((ember, ints), (torch, tints)):  # (2 == 2.0: the types must differ)
        assert str(x.clamp(min=2).dtype).split(".")[1] == "int64"
        assert str(x.clamp(min=2.0).dtype).split(".")[1] == "float32"
        assert str(lib.where(x > 1, x, 0).dtype).split(".")[1] == "int64"
        assert str(lib.where(x > 1, x, 0.5).dtype).split(".")[1] == "float32"
    for default in (ember.float64, ember.float32):  # the default dtype is in the key
        before = ember.get_default_dtype()
        ember.set_default_dtype(default)
        try:
            assert ints.exp().dtype is default and ints.exp().dtype is default
        finally:
            ember.set_default_dtype(before)
    x = ember.zeros(2, 3)
    assert _twice(lambda: x.permute(1, 0).shape) == ((3, 2), (3, 2))
    assert x.sum(0, keepdim=True).shape == (1, 3) and x.sum(0).shape == (3,)
    x.resize_(4, 5)  # the same tensor, a new shape: the key reads the shape each call
    assert x.permute(1, 0).shape == (5, 4) and (x @ ember.zeros(5, 2)).shape == (4, 2)


def test_cached_rule_answers_never_skip_an_error():
    """An error a rule raises is never kept: a call that fails after (or before) one
    that succeeded raises PyTorch's error each time."""
    x, tx = ember.zeros(2, 3), torch.zeros(2, 3)
    for _ in range(2):
        assert (x @ ember.zeros(3, 4)).shape == (2, 4)
        with pytest.raises(RuntimeError) as ours:
            x @ ember.zeros(2, 4)
        with pytest.raises(RuntimeError) as theirs:
            tx @ torch.zeros(2, 4)
        assert str(ours.value) == str(theirs.value)
        with pytest.raises(RuntimeError, match="Sizes of tensors must match"):
            ember.cat([x, ember.zeros(3, 2)])


def test_rule_key_refuses_what_it_cannot_key():
    from ember.core.dispatch import rule_key

    x = ember.zeros(2)
    assert rule_key((x, 2), {"dims": (0,)}) != rule_key((x, 2.0), {"dims": (0,)})
    assert rule_key((x,), {"index": (slice(0, 1),)}) is None  # another kind of object
    assert rule_key((x, object()), {}) is None
    assert rule_key((x,), {"dims": [0, 1]}) == rule_key((x,), {"dims": (0, 1)})
