"""nn on complex tensors where PyTorch allows it, against PyTorch: `nn.Linear(dtype=cfloat)`
(its initialization on PyTorch's random stream, forward and conjugated gradients), the
losses (`l1_loss` takes complex input; `mse_loss` and the other regression losses refuse
it), the activations, and Adam on complex parameters."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(5)
_X = (_rng.standard_normal((4, 3)) + 1j * _rng.standard_normal((4, 3))).astype(np.complex64)
_Y = (_rng.standard_normal((4, 2)) + 1j * _rng.standard_normal((4, 2))).astype(np.complex64)


def _pair(m, seed=0):
    m.manual_seed(seed)
    return m.nn.Linear(3, 2, dtype=m.cfloat)


def test_linear_init_forward_and_backward_match_torch():
    le, lt = _pair(ember), _pair(torch)
    for pe, pt in zip(le.parameters(), lt.parameters()):
        assert pe.dtype is ember.complex64
        np.testing.assert_array_equal(pe.detach().numpy(), pt.detach().numpy())
    xe, xt = ember.tensor(_X, requires_grad=True), torch.tensor(_X, requires_grad=True)
    ye, yt = le(xe), lt(xt)
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert ye.grad_fn.name() == yt.grad_fn.name()
    for m, y in ((ember, ye), (torch, yt)):
        (m.view_as_real(y - m.tensor(_Y)) ** 2).sum().backward()
    for e, t in ((xe, xt), (le.weight, lt.weight), (le.bias, lt.bias)):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_complex_uniform_fills_both_parts_from_torch_stream():
    for m in (ember, torch):
        m.manual_seed(3)
    e = ember.empty(5, dtype=ember.cdouble).uniform_(-1, 2)
    t = torch.empty(5, dtype=torch.cdouble).uniform_(-1, 2)
    np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_l1_loss_takes_complex_and_mse_refuses():
    xe, xt = ember.tensor(_X, requires_grad=True), torch.tensor(_X, requires_grad=True)
    for m, x in ((ember, xe), (torch, xt)):
        loss = m.nn.functional.l1_loss(x, m.tensor(_X[::-1].copy()))
        assert loss.dtype == m.float32
        loss.backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-6)
    for name, kernel in (("mse_loss", "mse"), ("huber_loss", "huber"),
                         ("smooth_l1_loss", "smooth_l1")):
        # (the error names PyTorch's kernel, "mse_cpu", not the op)
        for m in (torch, ember):
            with pytest.raises(NotImplementedError, match=f'^"{kernel}_cpu" not implemented '
                                                          "for 'ComplexFloat'$"):
                getattr(m.nn.functional, name)(m.tensor(_X), m.tensor(_X.real.copy()))


def test_activations_on_complex():
    for name in ("tanh", "sigmoid", "silu"):
        e = getattr(ember.nn.functional, name)(ember.tensor(_X))
        t = getattr(torch.nn.functional, name)(torch.tensor(_X))
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5, atol=1e-6)
    for m in (ember, torch):
        with pytest.raises(RuntimeError, match="silu does not support automatic "
                                               "differentiation for outputs with complex"):
            m.nn.functional.silu(m.tensor(_X, requires_grad=True))
    for name in ("relu", "gelu", "softmax"):
        args = (1,) if name == "softmax" else ()
        with pytest.raises(NotImplementedError):
            getattr(torch.nn.functional, name)(torch.tensor(_X), *args)
        with pytest.raises(NotImplementedError, match="not implemented for 'ComplexFloat'"):
            getattr(ember.nn.functional, name)(ember.tensor(_X), *args)


def test_cosine_similarity_refuses_complex_as_torch():
    for dtype in ("cfloat", "cdouble"):
        with pytest.raises(RuntimeError) as want:
            torch.nn.functional.cosine_similarity(torch.ones(2, 3, dtype=getattr(torch, dtype)),
                                                  torch.ones(2, 3))
        with pytest.raises(RuntimeError) as got:
            ember.nn.functional.cosine_similarity(ember.ones(2, 3, dtype=getattr(ember, dtype)),
                                                  ember.ones(2, 3))
        assert str(got.value) == str(want.value)


def test_adam_steps_complex_linear_as_torch():
    le, lt = _pair(ember, 1), _pair(torch, 1)
    oe, ot = ember.optim.Adam(le.parameters(), lr=0.01), torch.optim.Adam(lt.parameters(), lr=0.01)
    for _ in range(3):
        for m, layer, opt in ((ember, le, oe), (torch, lt, ot)):
            opt.zero_grad()
            crelu = m.view_as_complex(m.relu(m.view_as_real(layer(m.tensor(_X)))))
            ((crelu - m.tensor(_Y)).abs() ** 2).mean().backward()
            opt.step()
    np.testing.assert_allclose(le.weight.detach().numpy(), lt.weight.detach().numpy(),
                               rtol=1e-5, atol=1e-6)
