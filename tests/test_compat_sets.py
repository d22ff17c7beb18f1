"""PyTorch behaviours the set-S30 programs (Conformer, Performer, Reformer, RetNet, a masked
autoregressive flow, a Gumbel-softmax VAE, Rainbow-lite, Lion/Muon/LAMB) needed, checked
against torch itself."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

_NUMBER_OPS = {
    "mul": lambda m, a: a * 2.0315, "rmul": lambda m, a: -4.775 * a,
    "div": lambda m, a: a / 3.3, "rdiv": lambda m, a: 3.3 / a,
    "add": lambda m, a: a + 0.29021, "rsub": lambda m, a: 0.29021 - a,
    "pow": lambda m, a: a.abs() ** 2.37, "rpow": lambda m, a: 1.37 ** a,
    "fmod": lambda m, a: m.fmod(a, 0.3333), "remainder": lambda m, a: a % 0.3333,
    "floor_divide": lambda m, a: a // 0.3333, "imul": lambda m, a: a.clone().mul_(2.0315),
    "idiv": lambda m, a: a.clone().div_(3.3),
}


def _values(mod, dtype_name: str):
    g = np.random.default_rng(0).standard_normal(2000).astype(np.float32) * 3
    return mod.tensor(g).to(getattr(mod, dtype_name))


def _bits(t) -> np.ndarray:
    return np.asarray(t.float().tolist(), np.float32)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("op", sorted(_NUMBER_OPS))
def test_half_precision_tensor_and_number(op: str, dtype: str) -> None:
    """mul and div of a half-precision tensor by a number run in float32 with the number
    unrounded (Muon's `b * A` in bfloat16); add, sub, pow, fmod and remainder round the
    number to the tensor's dtype; every result stays in the tensor's dtype."""
    fn = _NUMBER_OPS[op]
    want, got = fn(torch, _values(torch, dtype)), fn(ember, _values(ember, dtype))
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1] == dtype
    np.testing.assert_array_equal(_bits(got), _bits(want))


def test_add_alpha_scales_in_the_result_dtype() -> None:
    """`p.add_(u, alpha=-lr)` with a float32 p and a bfloat16 u (Muon's update) scales u
    in float32, not rounded to bfloat16 first."""
    out = []
    for mod in (torch, ember):
        p = mod.zeros(5)
        u = mod.tensor([1.1, 2.3, 0.7, 3.3, 1.7]).bfloat16()
        out.append((p.clone().add_(u, alpha=-0.02).tolist(),
                    mod.add(p, u, alpha=-0.0213).tolist(), mod.sub(p, u, alpha=0.37).tolist()))
    assert out[1] == out[0]


def test_lerp_with_a_weight_tensor_is_fused() -> None:
    """float32 lerp with a weight tensor rounds as PyTorch's fma kernel (both branches of
    |w| < 0.5), and its gradients agree (to float32 rounding: they flow through the
    float64 multiply-add)."""
    g = np.random.default_rng(1)
    a, b = g.standard_normal(3000).astype(np.float32), g.standard_normal(3000).astype(np.float32)
    w = g.uniform(-0.2, 1.2, 3000).astype(np.float32)
    res = []
    for mod in (torch, ember):
        ta, tb, tw = (mod.tensor(v, requires_grad=True) for v in (a, b, w))
        y = mod.lerp(ta, tb, tw)
        (y * mod.arange(3000.0)).sum().backward()
        res.append([_bits(t) for t in (y.detach(), ta.grad, tb.grad, tw.grad)])
    np.testing.assert_array_equal(res[1][0], res[0][0])
    for want, got in zip(res[0][1:], res[1][1:]):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_normal_and_bernoulli_are_exponential_families() -> None:
    """Normal and Bernoulli are ExponentialFamily members as in PyTorch: the Bregman KL and
    entropy work through their natural parameters, and a KL across families names the
    exponential-family rule (the Gumbel-softmax VAE's KL probes)."""
    out = []
    for mod in (torch, ember):
        D = mod.distributions
        n1 = D.Normal(mod.tensor([0.3, 0.0]), mod.tensor([1.2, 1.0]))
        n2 = D.Normal(mod.tensor([1.0, 1.0]), mod.tensor([0.7, 2.0]))
        b1, b2 = D.Bernoulli(mod.tensor([0.3, 0.6])), D.Bernoulli(mod.tensor([0.5, 0.1]))
        with pytest.raises(NotImplementedError) as err:
            D.kl_divergence(D.Normal(0.0, 1.0), D.Bernoulli(0.3))
        out.append((isinstance(n1, D.ExponentialFamily), isinstance(b1, D.ExponentialFamily),
                    D.kl._kl_expfamily_expfamily(n1, n2).tolist(),
                    D.kl._kl_expfamily_expfamily(b1, b2).tolist(),
                    D.ExponentialFamily.entropy(n1).tolist(),
                    D.ExponentialFamily.entropy(b1).tolist(), str(err.value)))
    assert out[1][:2] == out[0][:2] == (True, True)
    assert out[1][-1] == out[0][-1]
    for want, got in zip(out[0][2:6], out[1][2:6]):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_conv_same_padding_with_an_even_kernel_warns_once() -> None:
    """PyTorch's TORCH_WARN_ONCE for an asymmetric 'same' padding (the Conformer's
    depthwise convolution with an even kernel), and no warning for an odd kernel."""
    import warnings

    from ember.core import errors

    message = ("Using padding='same' with even kernel lengths and odd dilation may require a "
               "zero-padded copy of the input be created")
    errors._warned.discard(message)
    x = ember.randn(1, 4, 9)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ember.nn.Conv1d(4, 4, 3, padding="same", groups=4)(x)
        y = ember.nn.Conv1d(4, 4, 4, padding="same", groups=4)(x)
        ember.nn.Conv1d(4, 4, 4, padding="same", groups=4)(x)
    assert [str(w.message) for w in caught] == [message]
    assert caught[0].category is UserWarning and tuple(y.shape) == (1, 4, 9)


def _triple(mod, dtype_name: str):
    # (a multiple of 64 elements: PyTorch's half kernels round a vector loop's leftover
    # elements in their scalar loop, alpha * other first)
    g = np.random.default_rng(2).standard_normal((3, 3008)).astype(np.float32)
    return [mod.tensor(row).to(getattr(mod, dtype_name)) for row in g]


_AXPY_LIKE = {
    "add": lambda m, a, b, c: m.add(a, b, alpha=0.0137),
    "sub": lambda m, a, b, c: m.sub(a, b, alpha=0.0137),
    "add_": lambda m, a, b, c: a.clone().add_(b, alpha=-0.0137),
    "sub_": lambda m, a, b, c: a.clone().sub_(b, alpha=0.0137),
    "addcmul": lambda m, a, b, c: m.addcmul(a, b, c, value=0.3),
    "addcmul_": lambda m, a, b, c: a.clone().addcmul_(b, c, value=-0.0137),
    "addcdiv": lambda m, a, b, c: m.addcdiv(a, b, c.abs() + 1, value=0.0137),
    "addcdiv_": lambda m, a, b, c: a.clone().addcdiv_(b, c.abs() + 1, value=-0.0137),
    "foreach_add_": lambda m, a, b, c: m._foreach_add_([a], [b], alpha=-0.0137)[0],
    "foreach_addcmul_": lambda m, a, b, c: m._foreach_addcmul_([a], [b], [c], value=0.3)[0],
    "foreach_addcdiv_": lambda m, a, b, c: m._foreach_addcdiv_([a], [b], [c.abs() + 1],
                                                               value=-0.3)[0],
    "foreach_lerp_": lambda m, a, b, c: m._foreach_lerp_([a], [b], 0.1)[0],
}


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("op", sorted(_AXPY_LIKE))
def test_half_precision_scaled_updates_round_once(op: str, dtype: str) -> None:
    """add/sub with alpha (alpha rounded to the dtype), addcmul and addcdiv (value not
    rounded) of half-precision tensors compute in float32 and round once, as PyTorch's
    kernels (and so its optimizers' steps on bfloat16 parameters)."""
    fn = _AXPY_LIKE[op]
    want, got = fn(torch, *_triple(torch, dtype)), fn(ember, *_triple(ember, dtype))
    np.testing.assert_array_equal(_bits(got), _bits(want))


@pytest.mark.parametrize("op", ["addcdiv", "addcdiv_", "foreach_addcdiv_"])
def test_float32_addcdiv_multiplies_by_value_first(op: str) -> None:
    """PyTorch's addcdiv kernel is `input + value * tensor1 / tensor2`: (value * t1) / t2."""
    fn = _AXPY_LIKE[op]
    want, got = fn(torch, *_triple(torch, "float32")), fn(ember, *_triple(ember, "float32"))
    np.testing.assert_array_equal(_bits(got), _bits(want))


@pytest.mark.parametrize("make", [
    lambda m, ps: m.optim.SGD(ps, lr=0.0137, momentum=0.9, weight_decay=1e-4),
    lambda m, ps: m.optim.SGD(ps, lr=0.0137, momentum=0.9, dampening=0.1, nesterov=False),
    lambda m, ps: m.optim.SGD(ps, lr=0.0137, momentum=0.9, nesterov=True, weight_decay=1e-3),
    lambda m, ps: m.optim.Adam(ps, lr=0.0137), lambda m, ps: m.optim.AdamW(ps, lr=0.0137)],
    ids=["sgd", "sgd_dampening", "sgd_nesterov", "adam", "adamw"])
def test_bfloat16_optimizer_steps_match(make) -> None:
    """Three optimizer steps on a bfloat16 model give PyTorch's parameters bit for bit."""
    out = []
    for mod in (torch, ember):
        mod.manual_seed(0)
        m = mod.nn.Linear(16, 64).bfloat16()  # (64 biases: see _triple)
        opt = make(mod, m.parameters())
        x = mod.randn(4, 16).bfloat16()
        for _ in range(3):
            opt.zero_grad()
            m(x).float().pow(2).mean().backward()
            opt.step()
        out.append([_bits(p.detach()) for p in m.parameters()])
    for want, got in zip(*out):
        np.testing.assert_array_equal(got, want)


def test_inplace_foreach_ops_return_their_list() -> None:
    """PyTorch's in-place list ops return the very list they were given."""
    for mod in (torch, ember):
        xs = [mod.ones(2), mod.ones(3)]
        assert mod._foreach_add_(xs, 1.0) is xs
        assert mod._foreach_mul_(xs, [mod.ones(2), mod.ones(3)]) is xs
        assert mod._foreach_lerp_(xs, xs, 0.5) is xs and mod._foreach_zero_(xs) is xs
