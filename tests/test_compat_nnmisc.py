"""The rest of nn, the torch.* nn functions, and the optimizers and LR schedulers of
issue 16's `nnmisc` family, checked against PyTorch: values, gradients, errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import nn, optim
from ember.optim import lr_scheduler as sched

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _t(a, requires_grad=False):
    """The same values as an ember tensor and a torch tensor."""
    a = np.asarray(a)
    return (ember.tensor(a, requires_grad=requires_grad),
            torch.tensor(a, requires_grad=requires_grad))


def _close(e, t, atol=1e-5, rtol=1e-4):
    t = t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
    e = e.detach().numpy() if isinstance(e, ember.Tensor) else np.asarray(e)
    assert e.shape == t.shape, (e.shape, t.shape)
    np.testing.assert_allclose(e, t, atol=atol, rtol=rtol)


# -- LR schedulers ---------------------------------------------------------------------


def _two_groups(opt_name="SGD", **kw):
    kw = {"lr": 0.1, **({"momentum": 0.9} if opt_name == "SGD" else {}), **kw}
    ep = [ember.ones(2, requires_grad=True), ember.ones(3, requires_grad=True)]
    tp = [torch.ones(2, requires_grad=True), torch.ones(3, requires_grad=True)]
    eo = getattr(optim, opt_name)([{"params": [ep[0]]}, {"params": [ep[1]], "lr": 0.04}], **kw)
    to = getattr(torch.optim, opt_name)([{"params": [tp[0]]}, {"params": [tp[1]], "lr": 0.04}],
                                        **kw)
    return eo, to


class _Scale:
    def __init__(self):
        self.k = 0.5

    def __call__(self, x):
        return self.k ** x


@pytest.mark.parametrize("opt_name,make", [
    ("SGD", lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4)),
    ("SGD", lambda m, o: m.CyclicLR(o, base_lr=[0.01, 0.02], max_lr=[0.1, 0.3], step_size_up=3,
                                    step_size_down=5, mode="triangular2")),
    ("Adam", lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4,
                                     mode="exp_range", gamma=0.97)),
    ("SGD", lambda m, o: m.CyclicLR(o, 0.01, 0.1, 3, scale_fn=lambda x: 0.9 ** x,
                                    scale_mode="iterations", cycle_momentum=False)),
    ("SGD", lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=5)),
    ("SGD", lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.001)),
])
def test_scheduler_curves_match_torch(opt_name, make):
    eo, to = _two_groups(opt_name)
    es, ts = make(sched, eo), make(torch.optim.lr_scheduler, to)
    key = "betas" if opt_name == "Adam" else "momentum"
    for _ in range(30):
        eo.step()
        to.step()
        es.step()
        ts.step()
        np.testing.assert_allclose(es.get_last_lr(), ts.get_last_lr(), rtol=1e-12)
        for eg, tg in zip(eo.param_groups, to.param_groups):
            np.testing.assert_allclose(np.ravel(eg[key]), np.ravel(tg[key]), rtol=1e-12)


def test_warm_restarts_fractional_epochs_and_jumps():
    eo, to = _two_groups()
    es = sched.CosineAnnealingWarmRestarts(eo, T_0=4, T_mult=2)
    ts = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(to, T_0=4, T_mult=2)
    for epoch in [0.25, 0.5, 3.9, 4.0, 7.5, 13, 27.3]:
        es.step(epoch)
        ts.step(epoch)
        np.testing.assert_allclose(es.get_last_lr(), ts.get_last_lr(), rtol=1e-12)
        assert es.T_i == ts.T_i and es.last_epoch == ts.last_epoch
    es.step()
    ts.step()
    np.testing.assert_allclose(es.get_last_lr(), ts.get_last_lr(), rtol=1e-12)
    with pytest.raises(ValueError, match="non-negative epoch"):
        es.step(-1)


def test_scheduler_argument_errors():
    eo, _ = _two_groups()
    with pytest.raises(ValueError, match="positive integer T_0"):
        sched.CosineAnnealingWarmRestarts(eo, T_0=0)
    with pytest.raises(ValueError, match="T_mult >= 1"):
        sched.CosineAnnealingWarmRestarts(eo, T_0=2, T_mult=0)
    with pytest.raises(ValueError, match="mode is invalid"):
        sched.CyclicLR(eo, 0.1, 1.0, mode="square")
    ao = optim.Adagrad([ember.ones(2, requires_grad=True)])
    with pytest.raises(ValueError, match="momentum or beta1"):
        sched.CyclicLR(ao, 0.1, 1.0)
    with pytest.raises(TypeError, match="not an Optimizer"):
        sched.CyclicLR(object(), 0.1, 1.0)


def test_cyclic_state_dict_keeps_a_callable_objects_state():
    eo, _ = _two_groups()
    fn = _Scale()
    es = sched.CyclicLR(eo, 0.01, 0.1, 3, scale_fn=fn)
    fn.k = 0.25
    state = es.state_dict()
    assert state["_scale_fn_custom"] == {"k": 0.25}
    fn2 = _Scale()
    es2 = sched.CyclicLR(_two_groups()[0], 0.01, 0.1, 3, scale_fn=fn2)
    es2.load_state_dict(state)
    assert fn2.k == 0.25
    lam = sched.CyclicLR(_two_groups()[0], 0.01, 0.1, 3, scale_fn=lambda x: 1.0)
    assert lam.state_dict()["_scale_fn_custom"] is None
