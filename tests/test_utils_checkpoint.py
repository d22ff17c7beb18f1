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


def _libs():
    torch = pytest.importorskip("torch")
    return ((torch, __import__("torch.utils.checkpoint", fromlist=["x"])),
            (ember, __import__("ember.utils.checkpoint", fromlist=["x"])))


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_checkpoint_recomputes_in_backward_as_torch(use_reentrant):
    """The function runs again when backward first needs what it saved (once more for a
    second backward through the retained graph), and only once under no_grad."""
    counts = []
    for lib, ckpt in _libs():
        calls = []

        def segment(a, b, calls=calls):
            calls.append(1)
            return (a.sin() * b).exp()

        x = lib.tensor([0.1, 0.5, 0.9], requires_grad=True)
        out = ckpt.checkpoint(segment, x, lib.tensor(2.0), use_reentrant=use_reentrant)
        forward_calls = len(calls)
        out.sum().backward(retain_graph=True)
        first = x.grad.clone()
        x.grad = None
        out.sum().backward()
        with lib.no_grad():
            ckpt.checkpoint(segment, x, lib.tensor(2.0), use_reentrant=use_reentrant)
        counts.append((forward_calls, len(calls)))
        np.testing.assert_allclose(x.grad.numpy(), first.numpy(), rtol=1e-6)
        np.testing.assert_allclose(
            first.numpy(), (np.cos([0.1, 0.5, 0.9]) * 2 * np.exp(2 * np.sin([0.1, 0.5, 0.9]))),
            rtol=1e-5)
    assert counts[1] == counts[0] == (1, 4)


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_checkpoint_frees_the_activations_as_torch(use_reentrant):
    import gc
    import weakref

    for lib, ckpt in _libs():
        refs = []

        def segment(a, refs=refs):
            h = a.sin()
            refs.append(weakref.ref(h))
            return h.cos()  # cos saves h for backward

        x = lib.ones(4, requires_grad=True)
        plain = segment(x)
        out = ckpt.checkpoint(segment, x, use_reentrant=use_reentrant)
        gc.collect()
        assert refs[0]() is not None, lib.__name__  # the plain graph keeps h
        assert refs[1]() is None, lib.__name__  # the checkpointed one does not
        (plain + out).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), -2 * np.sin(np.sin(1.0)) * np.cos(1.0),
                                   rtol=1e-6)


def test_non_reentrant_recomputation_must_save_the_same_as_torch():
    messages = []
    for lib, ckpt in _libs():
        calls = []

        def changing(a, calls=calls):
            calls.append(1)
            return a.exp().exp() if len(calls) == 1 else a.exp()

        def reshaping(a, calls=calls):
            calls.append(1)
            return a.exp() if len(calls) % 2 else a.reshape(2, 2).exp()

        x = lib.ones(4, requires_grad=True)
        out = ckpt.checkpoint(changing, x, use_reentrant=False)
        with pytest.raises(ckpt.CheckpointError) as fewer:
            out.sum().backward()
        assert isinstance(fewer.value, RuntimeError)
        calls.clear()
        out = ckpt.checkpoint(reshaping, x, use_reentrant=False)
        with pytest.raises(ckpt.CheckpointError) as other:
            out.sum().backward()
        messages.append([str(fewer.value), str(other.value)])
    assert [m.replace("ember.", "torch.") for m in messages[1]] == messages[0]
    assert "Number of tensors saved during recomputation: 1." in messages[0][0]
    assert "recomputed metadata: {'shape': torch.Size([2, 2])" in messages[0][1]


def test_non_reentrant_replays_dropout_and_autocast_of_the_forward():
    model = _model(ember, dropout=0.5)
    x = ember.tensor(np.random.RandomState(1).randn(5, 4).astype(np.float32))
    results = []
    for run in (RUNS["plain"], RUNS["non_reentrant"]):
        ember.manual_seed(3)
        model.zero_grad()
        with ember.autocast("cpu", dtype=ember.bfloat16):
            out = run(model, x)
        assert out.dtype == ember.bfloat16
        out.float().pow(2).sum().backward()  # (outside the autocast region)
        results.append([out.detach().float().numpy()]
                       + [p.grad.numpy() for p in model.parameters()])
    for want, got in zip(*results):
        np.testing.assert_array_equal(got, want)


def test_reentrant_passes_nested_outputs_and_non_tensor_arguments_as_torch():
    """An LSTM's (output, (h, c)) through the reentrant variant: only the top-level tensor
    output is differentiable (the nested tuple passes through), as in PyTorch; an output
    cut from the graph inside fails in backward with PyTorch's message."""
    results = []
    for lib, ckpt in _libs():
        lib.manual_seed(0)
        lstm = lib.nn.LSTM(3, 4, batch_first=True)
        x = lib.tensor(np.random.RandomState(2).randn(2, 5, 3).astype(np.float32),
                       requires_grad=True)
        out, (h, c) = ckpt.checkpoint(lambda inp, scale, m=lstm: m(inp * scale), x, 2.0,
                                      use_reentrant=True)
        out.sum().backward()
        results.append((out.requires_grad, h.requires_grad, x.grad.numpy(),
                        lstm.weight_hh_l0.grad.numpy()))
        cut = ckpt.checkpoint(lambda a: a.detach() * 2, x, use_reentrant=True)
        assert cut.requires_grad
        with pytest.raises(RuntimeError, match="^none of output has requires_grad=True, "
                                               "this checkpoint\\(\\) is not necessary$"):
            cut.sum().backward()
    assert results[1][:2] == results[0][:2] == (True, False)
    for got, want in zip(results[1][2:], results[0][2:]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_context_fn_and_reentrant_limits_as_torch():
    """`context_fn`'s two contexts wrap the forward run and the recomputation; the
    reentrant variant refuses `context_fn` and refuses to run inside autograd.grad."""
    import contextlib

    logs, errors = [], []
    for lib, ckpt in _libs():
        log = []

        @contextlib.contextmanager
        def tagged(tag, log=log):
            log.append(tag + " in")
            yield
            log.append(tag + " out")

        def segment(a, log=log):
            log.append("run")
            return a.sin()

        x = lib.ones(2, requires_grad=True)
        for early_stop in (True, False):  # (an early stop leaves the recomputation early)
            out = ckpt.checkpoint(segment, x, use_reentrant=False, early_stop=early_stop,
                                  context_fn=lambda t=tagged: (t("forward"), t("recompute")))
            out.sum().backward()
        with ckpt.set_checkpoint_early_stop(False):
            out = ckpt.checkpoint(segment, x, use_reentrant=False, early_stop=True)
        out.sum().backward()
        logs.append(list(log))
        with pytest.raises(ValueError) as refused:
            ckpt.checkpoint(segment, x, use_reentrant=True, context_fn=ckpt.noop_context_fn,
                            debug=True)
        out = ckpt.checkpoint(segment, x, use_reentrant=True)
        with pytest.raises(RuntimeError) as in_grad:
            lib.autograd.grad(out.sum(), x)
        errors.append((str(refused.value), str(in_grad.value)))
    assert logs[1] == logs[0] == ["forward in", "run", "forward out", "recompute in", "run",
                                  "forward in", "run", "forward out", "recompute in", "run",
                                  "recompute out", "run", "run"]
    assert errors[1] == errors[0]
    assert errors[0][1].startswith("When use_reentrant=True, torch.utils.checkpoint is "
                                   "incompatible with .grad()")


def test_non_reentrant_double_backward_as_torch():
    # a gradient penalty through a checkpointed block: the recomputed tensors take the
    # saved ones' places in the graph, so the second derivative is PyTorch's
    results = []
    for lib, ckpt in _libs():
        x = lib.tensor([0.3, 1.0, 2.0], requires_grad=True)
        out = ckpt.checkpoint(lambda a: a.sin() * a, x, use_reentrant=False)
        (g,) = lib.autograd.grad(out.sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        results.append((g.detach().numpy(), gg.numpy()))
    for got, want in zip(results[1], results[0]):
        np.testing.assert_allclose(got, want, rtol=1e-6)
