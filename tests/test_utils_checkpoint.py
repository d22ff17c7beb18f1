"""ember.utils.checkpoint (torch.utils.checkpoint): the same outputs and gradients as the
plain forward, across both variants, dropout included, and PyTorch's warnings and errors."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.utils.checkpoint import checkpoint, checkpoint_sequential


def _model(lib, dropout: float = 0.0):
    rng = np.random.RandomState(0)
    model = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.Tanh(), lib.nn.Dropout(dropout),
                              lib.nn.Linear(8, 8), lib.nn.ReLU(), lib.nn.Linear(8, 2))
    with lib.no_grad():
        for p in model.parameters():
            p.copy_(lib.tensor(rng.randn(*p.shape).astype(np.float32) * 0.5))
    return model


def _grads(model, x, run):
    model.zero_grad()
    x = x.detach().requires_grad_(True)
    out = run(model, x)
    (out * out).sum().backward()
    return [out.detach().numpy(), x.grad.numpy()] + [p.grad.numpy() for p in model.parameters()]


RUNS = {
    "plain": lambda m, x: m(x),
    "reentrant": lambda m, x: checkpoint(m, x, use_reentrant=True),
    "non_reentrant": lambda m, x: checkpoint(m, x, use_reentrant=False),
    "sequential": lambda m, x: checkpoint_sequential(m, 2, x, use_reentrant=True),
}


@pytest.mark.parametrize("variant", ["reentrant", "non_reentrant", "sequential"])
def test_checkpoint_gives_the_plain_gradients_with_dropout(variant):
    model = _model(ember, dropout=0.5)
    x = ember.tensor(np.random.RandomState(1).randn(5, 4).astype(np.float32))
    ember.manual_seed(3)
    want = _grads(model, x, RUNS["plain"])
    ember.manual_seed(3)
    got = _grads(model, x, RUNS[variant])
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7)


def test_checkpoint_matches_torch():
    torch = pytest.importorskip("torch")
    data = np.random.RandomState(1).randn(5, 4).astype(np.float32)
    got = _grads(_model(ember), ember.tensor(data), RUNS["reentrant"])
    from torch.utils.checkpoint import checkpoint as torch_checkpoint
    want = _grads(_model(torch), torch.tensor(data),
                  lambda m, x: torch_checkpoint(m, x, use_reentrant=True))
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_checkpoint_warnings_and_errors_as_torch():
    torch = pytest.importorskip("torch")
    from torch.utils.checkpoint import checkpoint as torch_checkpoint
    for lib, fn in ((torch, torch_checkpoint), (ember, checkpoint)):
        x = lib.ones(2, requires_grad=True)
        with pytest.warns(UserWarning, match="use_reentrant parameter should be passed"):
            fn(lambda t: t * 2, x)
        with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
            fn(lambda t: t * 2, lib.ones(2), use_reentrant=True)
        with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
            fn(lambda t, scale: t * scale, x, use_reentrant=True, scale=2)
        assert fn(lambda t, scale: t * scale, x, use_reentrant=False, scale=2).tolist() == [2, 2]


def test_reentrant_without_grad_inputs_gives_no_gradients_as_torch():
    """PyTorch's reentrant checkpoint is a Function run under no_grad: inputs that do not
    require grad give an output that does not, and parameters inside get no gradient (in
    checkpoint_sequential, only the last, unchecked segment's do)."""
    torch = pytest.importorskip("torch")
    import warnings

    data = np.random.RandomState(1).randn(5, 4).astype(np.float32)
    results = []
    for lib in (torch, ember):
        ckpt = __import__(f"{lib.__name__}.utils.checkpoint", fromlist=["x"])
        model = _model(lib)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = ckpt.checkpoint(model, lib.tensor(data), use_reentrant=True)
            seq = ckpt.checkpoint_sequential(model, 2, lib.tensor(data), use_reentrant=True)
        seq.sum().backward()
        results.append((out.requires_grad, out.grad_fn is None, seq.requires_grad,
                        [p.grad is None for p in model.parameters()]))
        np.testing.assert_allclose(out.numpy(), model(lib.tensor(data)).detach().numpy(),
                                   rtol=1e-6)
    assert results[1] == results[0]
    assert results[0][:2] == (False, True)
